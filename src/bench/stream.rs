//! Streaming bandwidth (the data loader): sequential read, write and copy with LDP and LDNP,
//! with PRFM PLDL1STRM / PLDL2KEEP at a configurable distance against no prefetch.
//! Each kernel is a hand-written loop, 64 bytes (four pair instructions) per iteration, so the
//! instruction mix is known exactly: 16 bytes per load instruction.

use super::case::{self, for_each_region, Benchmark, CacheFacts, Machine, Room};
use super::{measure, Env, Metric, MetricId, Region, Unit};
use crate::harness::{args::typed_args, Ctx};
use cachescope_arch::bench::{Bench, Param, Variant};

/// One streaming kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// LDP X, X.
    ReadLdp,
    /// LDNP X, X (non-temporal hint).
    ReadLdnp,
    /// LDP with PRFM PLDL1STRM `distance` bytes ahead.
    ReadLdpPldl1strm,
    /// LDP with PRFM PLDL2KEEP `distance` bytes ahead.
    ReadLdpPldl2keep,
    /// STP X, X.
    WriteStp,
    /// STNP X, X.
    WriteStnp,
    /// LDP + STP from one half of the buffer to the other.
    CopyLdpStp,
}

impl Kernel {
    /// All kernels, in report order.
    pub const ALL: [Kernel; 7] =
        [Self::ReadLdp, Self::ReadLdnp, Self::ReadLdpPldl1strm, Self::ReadLdpPldl2keep, Self::WriteStp, Self::WriteStnp, Self::CopyLdpStp];

    /// The stream benchmark's variant of this kernel.
    pub const fn variant(self) -> Variant {
        match self {
            Self::ReadLdp => Variant::ReadLdp,
            Self::ReadLdnp => Variant::ReadLdnp,
            Self::ReadLdpPldl1strm => Variant::ReadLdpPldl1strm,
            Self::ReadLdpPldl2keep => Variant::ReadLdpPldl2keep,
            Self::WriteStp => Variant::WriteStp,
            Self::WriteStnp => Variant::WriteStnp,
            Self::CopyLdpStp => Variant::CopyLdpStp,
        }
    }

    /// Variant name in records.
    pub const fn name(self) -> &'static str {
        self.variant().name()
    }

    /// Bytes moved per load instruction (0 for write-only kernels).
    pub const fn bytes_per_load(self) -> u64 {
        match self {
            Self::WriteStp | Self::WriteStnp => 0,
            _ => 16,
        }
    }
}

/// A read loop: an optional prefetch, four pair loads of `$ld` (64 bytes), advance, loop.
macro_rules! read_loop {
    ($prefetch:literal, $ld:literal, $base:expr, $end:expr, $distance:expr) => {
        core::arch::asm!(
            concat!("2: ", $prefetch),
            concat!($ld, " x2, x3, [x0]"), concat!($ld, " x4, x5, [x0, #16]"),
            concat!($ld, " x6, x7, [x0, #32]"), concat!($ld, " x8, x9, [x0, #48]"),
            "add x0, x0, #64", "cmp x0, x1", "b.lo 2b",
            inout("x0") $base => _, in("x1") $end, in("x10") $distance,
            out("x2") _, out("x3") _, out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            options(nostack, readonly))
    };
}

/// A write loop: four pair stores of `$st` (64 bytes) of one pattern, advance, loop.
macro_rules! write_loop {
    ($st:literal, $base:expr, $end:expr, $pattern:expr) => {
        core::arch::asm!(
            concat!("2: ", $st, " x2, x2, [x0]"), concat!($st, " x2, x2, [x0, #16]"),
            concat!($st, " x2, x2, [x0, #32]"), concat!($st, " x2, x2, [x0, #48]"),
            "add x0, x0, #64", "cmp x0, x1", "b.lo 2b",
            inout("x0") $base => _, in("x1") $end, in("x2") $pattern,
            options(nostack))
    };
}

/// Runs `kernel` once over `bytes` (a multiple of 64) at `base`; copy reads the first half and
/// writes the second.
///
/// # Safety
/// `[base, base + bytes)` must be mapped, writable test memory, 16-byte aligned.
pub unsafe fn run(kernel: Kernel, base: usize, bytes: usize, distance: usize) {
    let end = base + bytes;
    // SAFETY: (all arms) the loops touch exactly [base, end) with aligned pair accesses, as the
    // caller guarantees; PRFM never faults.
    unsafe {
        match kernel {
            Kernel::ReadLdp => read_loop!("", "ldp", base, end, distance),
            Kernel::ReadLdnp => read_loop!("", "ldnp", base, end, distance),
            Kernel::ReadLdpPldl1strm => read_loop!("prfm pldl1strm, [x0, x10]", "ldp", base, end, distance),
            Kernel::ReadLdpPldl2keep => read_loop!("prfm pldl2keep, [x0, x10]", "ldp", base, end, distance),
            Kernel::WriteStp => write_loop!("stp", base, end, 0x5a5a_5a5a_5a5a_5a5au64),
            Kernel::WriteStnp => write_loop!("stnp", base, end, 0xa5a5_a5a5_a5a5_a5a5u64),
            Kernel::CopyLdpStp => {
                let half = bytes / 2;
                core::arch::asm!(
                    "2: ldp x4, x5, [x0]", "ldp x6, x7, [x0, #16]", "stp x4, x5, [x2]", "stp x6, x7, [x2, #16]",
                    "ldp x4, x5, [x0, #32]", "ldp x6, x7, [x0, #48]", "stp x4, x5, [x2, #32]", "stp x6, x7, [x2, #48]",
                    "add x0, x0, #64", "add x2, x2, #64", "cmp x0, x1", "b.lo 2b",
                    inout("x0") base => _, in("x1") base + half, inout("x2") base + half => _,
                    out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                    options(nostack))
            }
        }
    }
}

/// Measures every kernel over `bytes` of `region` and emits one metric each (bytes/s).
pub fn sweep(env: &Env, region: &Region, bytes: usize, distance: usize) {
    let bytes = bytes.min(region.len) & !127;
    if bytes == 0 {
        return;
    }
    for k in Kernel::ALL {
        let moved = if k == Kernel::CopyLdpStp { bytes as u64 / 2 } else { bytes as u64 };
        let dist = if matches!(k, Kernel::ReadLdpPldl1strm | Kernel::ReadLdpPldl2keep) { distance as u64 } else { 0 };
        let id = MetricId {
            bench: Bench::Stream.name(),
            variant: k.name(),
            attr: region.attr,
            bytes: bytes as u64,
            params: &[(Param::PrefetchDistance.name(), dist)],
        };
        // SAFETY: the region is mapped test memory of at least `bytes` (clipped above), page aligned.
        let summary = measure(env, id, || unsafe { run(k, region.va, bytes, distance) });
        Metric { id, summary, work: moved, unit: Unit::Rate, notes: &|m| m.bytes_per_load(k.bytes_per_load()) }.emit(env);
    }
}

typed_args! {
    /// The streaming benchmarks' arguments.
    pub struct StreamArgs = STREAM, STREAM_ARGS {
        stream_bytes: Number { min: 4096, max: 1 << 30 }, Computed("2x the largest cache, within the test window"), "streaming buffer size";
        prefetch: Number { min: 0, max: 65536 }, Literal("512"), "PRFM distance in bytes";
    }
}

/// The `stream` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Stream, args: STREAM_ARGS, validate: Some(validate), run: run_case };

/// A buffer larger than the test window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    match ctx.args.get(STREAM.stream_bytes) {
        Some(v) if v > m.room.window => case::too_big(ctx, STREAM.stream_bytes.name(), v, m.room.window, "the test window"),
        _ => Ok(()),
    }
}

fn run_case(ctx: &mut Ctx) {
    let env = match case::env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let bytes = ctx.args.get(STREAM.stream_bytes).unwrap_or((2 * CacheFacts::read().largest).min(Room::of(ctx).window)) as usize;
    let distance = ctx.args.get(STREAM.prefetch) as usize;
    for_each_region(ctx, |ctx, region| {
        sweep(&env, region, bytes, distance);
        // The copy kernel ran last: the second half must equal the first.
        let n = bytes.min(region.len) & !127;
        let half = n / 2;
        let mut same = true;
        for off in (0..half).step_by(8) {
            // SAFETY: inside the region; aligned loads from test memory.
            let (a, b) = unsafe {
                (
                    core::ptr::read_volatile((region.va + off) as *const u64),
                    core::ptr::read_volatile((region.va + half + off) as *const u64),
                )
            };
            same &= a == b;
        }
        ctx.check(same, alloc::format!("{} copied {half} bytes correctly in {}", Variant::CopyLdpStp, region.attr));
    });
}
