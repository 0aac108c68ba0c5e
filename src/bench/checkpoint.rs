//! `checkpoint`: checkpoint pollution, the seed's pitfall 5.5 without a page cache. A training
//! job's hot working set (weights, optimizer state) sized to the L2 (3/4 of it by default) is
//! scanned between large
//! streaming writes (a checkpoint being written out). Plain stores fill the caches with lines
//! nobody reads again and evict the hot set; the variants write the same bytes without (or with
//! less) allocation: STNP, a write-back transient window (MAIR 0x77), a no-write-allocate
//! window (0xee) and DC CIVAC of each written chunk ("drop the write cache", what
//! `posix_fadvise(POSIX_FADV_DONTNEED)` does for a file). Each scan of the hot set (one load
//! per line) is a cache-model phase of its own, so the model's counts per phase are the hot
//! set's misses per scan; the write before it is outside every phase.

use alloc::vec::Vec;

use super::case::{self, Benchmark, CacheFacts, Machine};
use super::stream::{run as stream_run, Kernel};
use super::{Env, Metric, MetricId, Region, Unit, NO_NOTES};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::mem::{mmu, MemAttr};
use cachescope_arch::bench::{Bench, Param, Variant};
use cachescope_arch::cache::maintenance;

typed_args! {
    /// The checkpoint-pollution benchmark's arguments.
    pub struct CheckpointArgs = CKPT, CKPT_ARGS {
        ckpt_hot: Number { min: 4096, max: 1 << 30 }, Computed("3/4 of the L2 (CCSIDR; else of the largest data cache)"), "checkpoint: bytes of the hot working set scanned between writes";
        ckpt_write: Number { min: 4096, max: 1 << 30 }, Computed("3/2 of the largest data cache"), "checkpoint: bytes of the streaming write between two scans";
        ckpt_chunk: Number { min: 4096, max: 1 << 30 }, Literal("65536"), "checkpoint dc-civac: bytes written between two DC CIVAC passes over what was written (= ckpt_write: one pass after the whole write)";
        ckpt_scans: Number { min: 1, max: 100 }, Literal("2"), "checkpoint: measured scans (each after one write) per variant";
    }
}

/// The `checkpoint` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Checkpoint, args: CKPT_ARGS, validate: Some(validate), run };

/// What one run writes and scans.
#[derive(Clone, Copy, Debug)]
struct Shape {
    hot: usize,
    write: usize,
    chunk: usize,
    scans: usize,
    line: usize,
}

fn shape(ctx: &Ctx, caches: &CacheFacts) -> Shape {
    let l2 = caches.capacities.iter().find(|&&(level, _)| level == 2).map_or(caches.largest, |&(_, size)| size);
    let line = caches.line.max(16);
    // Computed defaults are rounded to 64 bytes; given values must be multiples (validate).
    let round = |b: u64| (b as usize).div_ceil(64) * 64;
    // Larger than the largest cache, so plain stores pass every line of it.
    let write = round(ctx.args.get(CKPT.ckpt_write).unwrap_or(caches.largest / 2 * 3));
    Shape {
        // Three quarters: the hot set fits the L2 beside the code, stack and tables the scan
        // also touches (a hot set of exactly the L2's size thrashes the sets they share).
        hot: round(ctx.args.get(CKPT.ckpt_hot).unwrap_or(l2 / 4 * 3)),
        write,
        chunk: (ctx.args.get(CKPT.ckpt_chunk) as usize).min(write),
        scans: ctx.args.get(CKPT.ckpt_scans) as usize,
        line,
    }
}

/// A byte count that is not a multiple of 64 (the loops move 64 bytes a step), a chunk larger
/// than the write, or the hot set and the write together larger than the test window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let given = [
        (CKPT.ckpt_hot.name(), ctx.args.get(CKPT.ckpt_hot)),
        (CKPT.ckpt_write.name(), ctx.args.get(CKPT.ckpt_write)),
        (CKPT.ckpt_chunk.name(), Some(ctx.args.get(CKPT.ckpt_chunk))),
    ];
    if let Some((key, v)) = given.iter().find_map(|&(k, v)| v.filter(|v| v % 64 != 0).map(|v| (k, v))) {
        return Err(alloc::format!("{key}={v} is not a multiple of 64 bytes (the write and scan loops move 64 bytes a step)"));
    }
    let s = shape(ctx, &m.caches);
    if ctx.args.get(CKPT.ckpt_chunk) as usize > s.write {
        return Err(alloc::format!(
            "ckpt_chunk={} exceeds the write of {} bytes (ckpt_write): DC CIVAC runs after each chunk written",
            ctx.args.get(CKPT.ckpt_chunk),
            s.write
        ));
    }
    let need = (s.hot + s.write) as u64;
    if need > m.room.window {
        return Err(alloc::format!(
            "ckpt_hot ({} B) + ckpt_write ({} B) = {} exceeds the {} test window (the hot set and the write lie side by side in it; RAM {})",
            s.hot,
            s.write,
            case::mib(need),
            case::mib(m.room.window),
            case::mib(ctx.boot.ram.1)
        ));
    }
    Ok(())
}

/// One load per line over `[base, base + bytes)`.
///
/// # Safety
/// The range must be mapped readable memory, `line` a power of two ≥ 8 dividing `bytes`.
#[inline(never)]
unsafe fn scan(base: usize, bytes: usize, line: usize) {
    // SAFETY: the loop loads one aligned word per `line` bytes of the caller's range.
    unsafe {
        core::arch::asm!(
            "2: ldr x3, [x0]", "add x0, x0, x2", "cmp x0, x1", "b.lo 2b",
            inout("x0") base => _, in("x1") base + bytes, in("x2") line, out("x3") _,
            options(nostack, readonly))
    };
}

/// How a variant writes `bytes` at `va` (the hint window's for the window variants).
fn write(variant: Variant, va: usize, s: &Shape) {
    match variant {
        Variant::NoWrite => {}
        Variant::Stnp => {
            // SAFETY: [va, va + write) is inside the test window (validated), 64-byte aligned.
            unsafe { stream_run(Kernel::WriteStnp, va, s.write, 0) }
        }
        Variant::DcCivac => {
            let mut off = 0;
            while off < s.write {
                let n = s.chunk.min(s.write - off);
                // SAFETY: as above, a part of the same range.
                unsafe { stream_run(Kernel::WriteStp, va + off, n, 0) };
                let _ = maintenance::clean_invalidate_to_poc(va + off, n);
                off += n;
            }
        }
        _ => {
            // SAFETY: as above.
            unsafe { stream_run(Kernel::WriteStp, va, s.write, 0) }
        }
    }
}

/// The window a variant writes through: the write-back one, or the hint window as the
/// variant's allocation hint (MAIR's hint slot reprogrammed: `mmu::select_hint`).
fn target(variant: Variant, wb: &Region) -> Result<usize, alloc::string::String> {
    let hint = match variant {
        Variant::TransientWindow => MemAttr::NormalWriteBackTransient,
        Variant::NwaWindow => MemAttr::NormalWriteBackNoWriteAllocate,
        _ => return Ok(wb.va),
    };
    let w = mmu::select_hint(hint).map_err(|e| alloc::format!("the {} window: {e}", hint.name()))?;
    Ok(w.va + (wb.pa - w.pa))
}

/// The word a variant's write leaves (stream's STP and STNP patterns), None without a write.
fn written_word(variant: Variant) -> Option<u64> {
    match variant {
        Variant::NoWrite => None,
        Variant::Stnp => Some(0xa5a5_a5a5_a5a5_a5a5),
        _ => Some(0x5a5a_5a5a_5a5a_5a5a),
    }
}

/// Runs every variant: the hot set at the window's start, the write right after it. Each
/// variant starts from settled caches, warms the hot set with two scans, then `scans` times
/// writes and scans; every scan is a phase (`checkpoint/VARIANT/normal-wb/HOT/write=W`) and a
/// timer window. Returns what went wrong (a window refused, a word that read back wrong).
fn checkpoint(env: &Env, wb: &Region, s: &Shape) -> Vec<alloc::string::String> {
    let mut bad = Vec::new();
    let write_off = s.hot;
    for &variant in Bench::Checkpoint.variants() {
        let va = match target(variant, wb) {
            Ok(va) => va + write_off,
            Err(e) => {
                bad.push(alloc::format!("{variant}: {e}"));
                continue;
            }
        };
        case::settle_aliases();
        // SAFETY: the hot set is the window's first `hot` bytes (validated to fit).
        let hot_scan = || unsafe { scan(wb.va, s.hot, s.line) };
        hot_scan();
        hot_scan();
        let chunk = [(Param::Write.name(), s.write as u64), (Param::Chunk.name(), s.chunk as u64)];
        let params = if variant == Variant::DcCivac { &chunk[..] } else { &chunk[..1] };
        let params = if variant == Variant::NoWrite { &[][..] } else { params };
        let id = MetricId { bench: Bench::Checkpoint.name(), variant: variant.name(), attr: wb.attr, bytes: s.hot as u64, params };
        let mut samples: Vec<u64> = (0..s.scans)
            .map(|_| {
                write(variant, va, s);
                super::phase(id, || env.timer.window(&mut || hot_scan()))
            })
            .collect();
        if let Some(want) = written_word(variant) {
            case::settle_aliases();
            for off in [0, s.write - 8] {
                // SAFETY: inside the written range of the write-back window, aligned.
                let got = unsafe { ((wb.va + write_off + off) as *const u64).read_volatile() };
                if got != want {
                    bad.push(alloc::format!("{variant}: written word at +{off:#x} reads {got:#018x}, expected {want:#018x}"));
                }
            }
        }
        let summary = super::stats::summarize(&mut samples).expect("scans >= 1");
        Metric { id, summary, work: (s.hot / s.line) as u64, unit: Unit::TimePerOp, notes: NO_NOTES }.emit(env);
    }
    if let Err(e) = mmu::select_hint(crate::mem::aarch64::descriptor::Mair::DEFAULT.hint()) {
        bad.push(alloc::format!("the hint slot back to its default: {e}"));
    }
    case::settle_aliases();
    bad
}

/// Checkpoint pollution: the hot set's misses per scan after each way of writing.
fn run(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    let s = shape(ctx, &CacheFacts::read());
    diag!(
        "checkpoint: a {} hot set scanned (one load per {}-byte line) after each {} streaming write, {} scans per variant; dc-civac cleans every {} written",
        case::mib(s.hot as u64),
        s.line,
        case::mib(s.write as u64),
        s.scans,
        case::mib(s.chunk as u64)
    );
    let bad = checkpoint(&env, &wb, &s);
    ctx.check(bad.is_empty(), alloc::format!("every variant ran and its write reached memory (first and last word read back): {bad:?}"));
}
