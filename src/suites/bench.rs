//! Deep-learning-shaped microbenchmarks over every memory attribute: latency vs working set,
//! streaming with prefetch (data loader), pinned DMA-like hand-off, and ring-buffer KV append.
//!
//! Under QEMU these figures count the emulator's work (with `-icount` they are deterministic
//! instruction-driven counts), never cache behaviour: every record carries `"emulated": true`.

use alloc::vec::Vec;

use crate::bench::{self, kv::KvShape, timer::Timer, Env, Region};
use crate::cache::topology::Kind;
use crate::diag;
use crate::harness::{ArgKind, ArgSpec, Case, Ctx, Suite};
use crate::mem::attr::MemAttr;

/// The benchmark suite.
pub const SUITE: Suite = Suite {
    name: "bench",
    report: Some(report),
    cases: &[
        Case { name: "latency", run: latency },
        Case { name: "stream", run: stream },
        Case { name: "handoff", run: handoff },
        Case { name: "kv", run: kv },
    ],
    on_request: false,
};

/// Kernel arguments of the benchmarks.
pub const ARGS: &[ArgSpec] = &[
    ArgSpec { key: "reps", kind: ArgKind::Number { min: 1, max: 1000 }, help: "measured repetitions per point (default 5)" },
    ArgSpec { key: "warmup", kind: ArgKind::Number { min: 0, max: 100 }, help: "warm-up runs per point (default 1)" },
    ArgSpec { key: "timer", kind: ArgKind::OneOf(&["cntvct", "pmccntr"]), help: "timer for measured windows (default cntvct)" },
    ArgSpec { key: "attrs", kind: ArgKind::SubsetOf(ATTR_NAMES), help: "attributes to run over (default: all)" },
    ArgSpec {
        key: "sizes",
        kind: ArgKind::NumberList { min: 1024, max: 1 << 30 },
        help: "latency working sets in bytes (default: ladder 1 KiB..4x largest cache)",
    },
    ArgSpec {
        key: "max_size",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        help: "largest latency working set (default 4x largest cache)",
    },
    ArgSpec {
        key: "stream_bytes",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        help: "streaming buffer size (default 2x largest cache)",
    },
    ArgSpec { key: "prefetch", kind: ArgKind::Number { min: 0, max: 65536 }, help: "PRFM distance in bytes (default 512)" },
    ArgSpec {
        key: "handoff_bytes",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        help: "DMA-like hand-off buffer size (default 256 KiB)",
    },
    ArgSpec { key: "kv_layers", kind: ArgKind::Number { min: 1, max: 128 }, help: "KV layers (default 4)" },
    ArgSpec { key: "kv_heads", kind: ArgKind::Number { min: 1, max: 64 }, help: "KV heads (default 2)" },
    ArgSpec { key: "kv_head_dim", kind: ArgKind::Number { min: 4, max: 1024 }, help: "head dimension (default 64; multiple of 4)" },
    ArgSpec { key: "kv_dtype", kind: ArgKind::OneOf(&["1", "2", "4"]), help: "bytes per element (default 2)" },
    ArgSpec { key: "kv_capacity", kind: ArgKind::Number { min: 2, max: 65536 }, help: "ring capacity in tokens (default 256)" },
];

fn env<'a>(ctx: &Ctx<'a>) -> Result<Env<'a>, &'static str> {
    let timer = match ctx.args.get("timer") {
        Some("pmccntr") => Timer::cycles()?,
        _ => Timer::generic(),
    };
    Ok(Env {
        timer,
        reps: ctx.args.number("reps", 5) as usize,
        warmup: ctx.args.number("warmup", 1) as usize,
        emulated: ctx.boot.emulated,
        args: ctx.args,
    })
}

/// Attribute names `attrs=` accepts: the MMU's alias windows plus `caches-off`.
pub const ATTR_NAMES: &[&str] = &["normal-wb", "normal-wt", "normal-nc", "device-ngnrne", "device-ngnre", "device-gre", "caches-off"];

/// The regions benchmarks run over (every alias window of the test arena, and the write-back
/// window with the data cache off), filtered by `attrs=`. Turns the MMU on if it is not.
fn regions(ctx: &Ctx) -> Result<Vec<Region>, alloc::string::String> {
    let windows = crate::mem::mmu::enable_with_aliases(ctx.boot).map_err(|e| alloc::format!("cannot map the alias windows: {e}"))?;
    let mut all: Vec<Region> = windows
        .iter()
        .map(|w| Region { attr: w.name, va: w.va, pa: w.pa, len: w.len, device: w.attr.is_device(), caches_off: false })
        .collect();
    if let Some(wb) = windows.iter().find(|w| w.attr == MemAttr::NormalWriteBack) {
        all.push(Region { attr: "caches-off", va: wb.va, pa: wb.pa, len: wb.len, device: false, caches_off: true });
    }
    let want = ctx.args.list("attrs");
    Ok(all.into_iter().filter(|r| want.is_empty() || want.contains(&r.attr)).collect())
}

/// Runs `f` over every region, with the data cache switched off around `caches-off`.
fn for_each_region(ctx: &mut Ctx, mut f: impl FnMut(&mut Ctx, &Region)) {
    let regions = match regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    for region in &regions {
        if region.caches_off {
            if let Err(e) = crate::mem::mmu::set_dcache(false) {
                ctx.fail(alloc::format!("cannot turn the data cache off: {e}"));
                continue;
            }
        }
        f(ctx, region);
        if region.caches_off {
            if let Err(e) = crate::mem::mmu::set_dcache(true) {
                ctx.fail(alloc::format!("cannot turn the data cache back on: {e}"));
            }
        }
    }
}

/// What the benchmarks take from the cache ID registers, read once per case.
struct CacheFacts {
    /// The smallest data-cache line (CTR_EL0.DminLine): the node size of the pointer chase.
    line: usize,
    /// Largest data/unified cache in bytes (1 MiB when CLIDR reports none).
    largest: u64,
    /// (level, bytes) of every data/unified cache, printed beside inferred knees.
    capacities: Vec<(u8, u64)>,
}

impl CacheFacts {
    fn read() -> Self {
        let topo = crate::cache::topology::this_cpu();
        let capacities: Vec<(u8, u64)> =
            topo.caches.iter().filter(|c| c.kind != Kind::Instruction).map(|c| (c.level, c.ccsidr.size())).collect();
        let largest = capacities.iter().map(|&(_, size)| size).max().unwrap_or(1 << 20);
        Self { line: topo.ctr.dmin_line().max(8) as usize, largest, capacities }
    }
}

fn report(ctx: &mut Ctx) {
    diag!("== benchmarks ==");
    if ctx.boot.emulated {
        diag!("These run under an emulator: QEMU models no caches and memory attributes change no");
        diag!("timing, so the figures below measure the emulator (with -icount they count instructions).");
        diag!("Every record says \"emulated\":true. Real cache behaviour needs silicon or the cache model.");
    }
    let t = Timer::generic();
    diag!(
        "timer: CNTVCT_EL0 at {} Hz (CNTFRQ_EL0), resolution {} count(s) = {:.1} ns",
        t.freq,
        t.resolution(),
        t.to_ns(t.resolution() as f64).unwrap_or(0.0)
    );
    match Timer::cycles() {
        Ok(_) => {
            diag!("PMU: cycle counter usable at EL1, {} event counters", crate::arch::pmu::event_counters());
            for (ev, name) in [
                (0x11u16, "CPU_CYCLES"),
                (0x08, "INST_RETIRED"),
                (0x04, "L1D_CACHE"),
                (0x03, "L1D_CACHE_REFILL"),
                (0x16, "L2D_CACHE"),
                (0x17, "L2D_CACHE_REFILL"),
            ] {
                if crate::arch::pmu::event_implemented(ev) {
                    diag!("  event {ev:#04x} {name}: advertised by PMCEID");
                } else {
                    diag!("  event {ev:#04x} {name}: not advertised by PMCEID0/1 - skipped");
                }
            }
        }
        Err(why) => diag!("PMU: skipped ({why})"),
    }
}

fn latency(ctx: &mut Ctx) {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let caches = CacheFacts::read();
    let line = caches.line;
    let max = ctx.args.number("max_size", 4 * caches.largest);
    let sizes: Vec<u64> = match ctx.args.get("sizes") {
        Some(_) => ctx.args.list("sizes").iter().filter_map(|s| crate::harness::args::parse_number(s)).collect(),
        None => bench::plan::size_ladder(1024, max, line as u64),
    };
    for_each_region(ctx, |ctx, region| {
        // The chain must be a single cycle through every line: follow it and count.
        let probe = 64 * 1024usize.min(region.len / line);
        let start = bench::latency::build_chain(region, probe, line, 1);
        let mut p = start;
        let mut steps = 0;
        loop {
            p = bench::latency::chase(p, 1);
            steps += 1;
            if p == start || steps > probe / line {
                break;
            }
        }
        ctx.check_eq(steps, probe / line, "pointer chain is one cycle through every line");
        let curve = bench::latency::sweep(&env, region, &sizes, line);
        ctx.check(curve.len() == sizes.len(), "every working-set size measured");
        ctx.check(curve.iter().all(|&(_, v)| v.is_finite() && v > 0.0), "every latency is positive");
        let knees = bench::knee::find_knees(&curve, 1.3);
        for &(level, size) in &caches.capacities {
            diag!("latency {}: CCSIDR says L{level} holds {} KiB", region.attr, size / 1024);
        }
        if knees.is_empty() {
            diag!("latency {}: no knee found{}", region.attr, if env.emulated { " (expected: the emulator has no caches)" } else { "" });
        }
        for k in &knees {
            if env.emulated {
                diag!(
                    "latency {}: step after {} KiB ({:.2} -> {:.2} ns) in emulator timing: the HOST's caches seen through QEMU, not a guest cache capacity",
                    region.attr, k.capacity / 1024, k.below, k.above
                );
            } else {
                diag!(
                    "latency {}: knee after {} KiB ({:.2} -> {:.2} ns): an inferred cache capacity",
                    region.attr,
                    k.capacity / 1024,
                    k.below,
                    k.above
                );
            }
            crate::harness::Record::new("knee")
                .str("attr", region.attr)
                .u64("capacity", k.capacity)
                .f64("below", k.below, 3)
                .f64("above", k.above, 3)
                .str("source", env.timer.source.name())
                .bool("emulated", env.emulated)
                .emit();
        }
    });
}

fn stream(ctx: &mut Ctx) {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let bytes = ctx.args.number("stream_bytes", 2 * CacheFacts::read().largest) as usize;
    let distance = ctx.args.number("prefetch", 512) as usize;
    for_each_region(ctx, |ctx, region| {
        bench::stream::sweep(&env, region, bytes, distance);
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
        ctx.check(same, alloc::format!("copy-ldp-stp copied {half} bytes correctly in {}", region.attr));
    });
}

fn handoff(ctx: &mut Ctx) {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let all = match regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    let find = |name: &str| all.iter().find(|r| r.attr == name).copied();
    let Some(nc) = find("normal-nc") else {
        return ctx.skip("needs the MMU's normal-nc alias window (the device's view of the buffer)");
    };
    let bytes = ctx.args.number("handoff_bytes", 256 << 10) as usize;
    for method in bench::handoff::Method::ALL {
        let cpu_attr = match method {
            bench::handoff::Method::NonCacheable => "normal-nc",
            bench::handoff::Method::VaMaintenance | bench::handoff::Method::SetWay => "normal-wb",
            bench::handoff::Method::Device => "device-ngnre",
        };
        let Some(cpu) = find(cpu_attr) else {
            diag!("handoff {}: no {cpu_attr} window selected, skipped", method.name());
            continue;
        };
        let out = bench::handoff::run(&env, method, &cpu, &nc, bytes);
        ctx.check(
            out.bad_words == 0,
            alloc::format!("handoff {} via {}: {} wrong words over {} hand-offs", method.name(), cpu.attr, out.bad_words, out.handoffs),
        );
    }
}

fn kv(ctx: &mut Ctx) {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let shape = KvShape {
        layers: ctx.args.number("kv_layers", 4) as usize,
        kv_heads: ctx.args.number("kv_heads", 2) as usize,
        head_dim: ctx.args.number("kv_head_dim", 64) as usize,
        dtype_bytes: ctx.args.number("kv_dtype", 2) as usize,
        capacity: ctx.args.number("kv_capacity", 256) as usize,
    };
    if !shape.record_bytes().is_multiple_of(8) {
        ctx.fail(alloc::format!("K/V record of {} B is not a multiple of 8 (kv_heads x kv_head_dim x kv_dtype)", shape.record_bytes()));
        return;
    }
    diag!(
        "kv: layers {} kv_heads {} head_dim {} dtype {} B capacity {} tokens -> {} KV bytes per token (2 x layers x kv_heads x head_dim x dtype)",
        shape.layers, shape.kv_heads, shape.head_dim, shape.dtype_bytes, shape.capacity, shape.bytes_per_token()
    );
    crate::harness::Record::new("kv-shape")
        .u64("layers", shape.layers as u64)
        .u64("kv_heads", shape.kv_heads as u64)
        .u64("head_dim", shape.head_dim as u64)
        .u64("dtype_bytes", shape.dtype_bytes as u64)
        .u64("capacity", shape.capacity as u64)
        .u64("bytes_per_token", shape.bytes_per_token() as u64)
        .emit();
    ctx.check_eq(shape.bytes_per_token(), 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.dtype_bytes, "KV bytes per token");
    let line = CacheFacts::read().line;
    for_each_region(ctx, |_, region| bench::kv::run(&env, region, shape, line));
}
