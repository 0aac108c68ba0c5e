//! Deep-learning-shaped microbenchmarks over every memory attribute: latency vs working set,
//! streaming with prefetch (data loader), pinned DMA-like hand-off, and ring-buffer KV append.
//!
//! Under QEMU these figures count the emulator's work (with `-icount` they are deterministic
//! instruction-driven counts), never cache behaviour: every record carries `"emulated": true`.

use alloc::vec::Vec;

use crate::bench::paged::{Dtype, Layout, PagedShape};
use crate::bench::{self, kv::KvShape, timer::Timer, Env, Region};
use crate::cache::topology::Kind;
use crate::diag;
use crate::harness::{
    record,
    ArgDefault::{Computed, Literal},
    ArgKind, ArgSpec, Case, Ctx, Emit, Suite,
};
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
        Case { name: "kv-paged", run: kv_paged },
        Case { name: "kv-quant", run: kv_quant },
        Case { name: "kv-prefix", run: kv_prefix },
        Case { name: "alloc-reuse", run: alloc_reuse },
        Case { name: "stream-double", run: stream_double },
        Case { name: "infer", run: infer },
    ],
    args: ARGS,
    validate: Some(validate),
    on_request: false,
};

/// Kernel arguments of the benchmarks: each declared once, with its type, default and help.
pub const ARGS: &[ArgSpec] = &[
    ArgSpec { key: "reps", kind: ArgKind::Number { min: 1, max: 1000 }, default: Literal("5"), help: "measured repetitions per point" },
    ArgSpec { key: "warmup", kind: ArgKind::Number { min: 0, max: 100 }, default: Literal("1"), help: "warm-up runs per point" },
    ArgSpec { key: "timer", kind: ArgKind::OneOf(&["cntvct", "pmccntr"]), default: Literal("cntvct"), help: "timer for measured windows" },
    ArgSpec { key: "attrs", kind: ArgKind::SubsetOf(ATTR_NAMES), default: Computed("all"), help: "attributes to run over" },
    ArgSpec {
        key: "sizes",
        kind: ArgKind::NumberList { min: 1024, max: 1 << 30 },
        default: Computed("a ladder from 1 KiB to max_size"),
        help: "latency working sets in bytes",
    },
    ArgSpec {
        key: "max_size",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        default: Computed("4x the largest cache, within the test window and the heap"),
        help: "largest latency working set",
    },
    ArgSpec {
        key: "stream_bytes",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        default: Computed("2x the largest cache, within the test window"),
        help: "streaming buffer size",
    },
    ArgSpec { key: "prefetch", kind: ArgKind::Number { min: 0, max: 65536 }, default: Literal("512"), help: "PRFM distance in bytes" },
    ArgSpec {
        key: "handoff_bytes",
        kind: ArgKind::Number { min: 4096, max: 1 << 30 },
        default: Literal("256K"),
        help: "DMA-like hand-off buffer size",
    },
    ArgSpec { key: "kv_layers", kind: ArgKind::Number { min: 1, max: 128 }, default: Literal("4"), help: "KV layers" },
    ArgSpec { key: "kv_heads", kind: ArgKind::Number { min: 1, max: 64 }, default: Literal("2"), help: "KV heads" },
    ArgSpec {
        key: "kv_head_dim",
        kind: ArgKind::Number { min: 4, max: 1024 },
        default: Literal("64"),
        help: "head dimension (kv_heads x kv_head_dim x kv_dtype must be a multiple of 8 bytes)",
    },
    ArgSpec {
        key: "kv_dtype",
        kind: ArgKind::OneOf(&["fp32", "fp16", "bf16", "fp8", "int8", "1", "2", "4"]),
        default: Literal("fp16"),
        help: "KV element type (int8/fp8 add a per-block fp32 scale per head; 1/2/4: legacy bytes per element, no scale)",
    },
    ArgSpec {
        key: "kv_capacity",
        kind: ArgKind::Number { min: 2, max: 65536 },
        default: Literal("256"),
        help: "ring (and kv-paged sequence) capacity in tokens",
    },
    ArgSpec {
        key: "kv_block",
        kind: ArgKind::Number { min: 1, max: 4096 },
        default: Literal("16"),
        help: "tokens per KV block (kv-quant, kv-prefix)",
    },
    ArgSpec {
        key: "kv_blocks",
        kind: ArgKind::NumberList { min: 1, max: 4096 },
        default: Literal("8,16,32,64"),
        help: "block sizes kv-paged compares with the contiguous layout",
    },
    ArgSpec {
        key: "kv_dtypes",
        kind: ArgKind::SubsetOf(&bench::paged::Dtype::NAMES),
        default: Literal("fp32,fp16,int8"),
        help: "dtypes kv-quant sweeps (scans up to max_size bytes of K and V; bf16 and fp8 lay out as fp16 and int8)",
    },
    ArgSpec {
        key: "kv_seqs",
        kind: ArgKind::Number { min: 1, max: 64 },
        default: Literal("4"),
        help: "kv-prefix: sequences sharing the prefix",
    },
    ArgSpec { key: "kv_prefix", kind: ArgKind::Number { min: 0, max: 65535 }, default: Literal("512"), help: "kv-prefix: prefix tokens" },
    ArgSpec {
        key: "kv_seq_tokens",
        kind: ArgKind::Number { min: 1, max: 65536 },
        default: Literal("576"),
        help: "kv-prefix: tokens each sequence holds (the prefix and its own suffix)",
    },
    ArgSpec {
        key: "alloc_sizes",
        kind: ArgKind::NumberList { min: 512, max: 1 << 30 },
        default: Computed("1/2, 1 and 3/2 of each data cache, up to max_size"),
        help: "alloc-reuse tensor sizes in bytes",
    },
    ArgSpec {
        key: "seed",
        kind: ArgKind::Number { min: 1, max: u32::MAX as u64 },
        default: Literal("42"),
        help: "seed of the scattered KV block pools and the allocation trace",
    },
    ArgSpec {
        key: "double_batch",
        kind: ArgKind::Number { min: 4096, max: 1 << 28 },
        default: Literal("64K"),
        help: "stream-double: bytes per batch (two buffers)",
    },
    ArgSpec {
        key: "double_batches",
        kind: ArgKind::Number { min: 1, max: 4096 },
        default: Literal("8"),
        help: "stream-double: batches per window",
    },
    ArgSpec {
        key: "double_timeout_ms",
        kind: ArgKind::Number { min: 10, max: 600_000 },
        default: Literal("5000"),
        help: "stream-double: longest barrier episode before the producer core counts as stuck, ms",
    },
    ArgSpec {
        key: "double_stall",
        kind: ArgKind::Number { min: 0, max: 1 << 20 },
        default: Literal("0"),
        help: "stream-double self-test: the producer stops answering after this many barrier episodes (0: never)",
    },
];

/// What this machine leaves the benchmarks: the alias windows' length (every window maps the
/// same span of the test arena) and the heap (the pointer chase's visiting order lives there).
struct Room {
    window: u64,
    heap: u64,
}

impl Room {
    fn of(ctx: &Ctx) -> Self {
        Room { window: crate::mem::alias::default_span(ctx.boot.arena).1 as u64, heap: ctx.boot.heap.1 as u64 }
    }

    /// Largest pointer-chase working set: inside the window, with its group order in at most
    /// half the heap. The chain is built from a streamed visiting order (8 heap bytes per 4 KiB
    /// group, not 4 per line), so the window is the limit up to terabytes of RAM: the largest
    /// chase grows with RAM as the window does.
    fn chase_max(&self, line: u64) -> u64 {
        let mut max = self.window / line * line;
        while max > line && bench::latency::chase_table_bytes(max, line) > self.heap / 2 {
            max /= 2;
        }
        max
    }
}

fn mib(b: u64) -> alloc::string::String {
    if b >= 1 << 20 {
        alloc::format!("{} MiB", b >> 20)
    } else {
        alloc::format!("{} KiB", b >> 10)
    }
}

/// The latency sweep's largest working set: `max_size=`, else 4x the largest cache within room.
fn max_size(ctx: &Ctx, caches: &CacheFacts) -> u64 {
    ctx.args.number_or("max_size", (4 * caches.largest).min(Room::of(ctx).chase_max(caches.line as u64)))
}

fn kv_dtype(ctx: &Ctx) -> Dtype {
    ctx.args.word("kv_dtype").and_then(Dtype::parse).unwrap_or(Dtype::Fp16)
}

fn kv_shape(ctx: &Ctx) -> KvShape {
    KvShape {
        layers: ctx.args.number("kv_layers") as usize,
        kv_heads: ctx.args.number("kv_heads") as usize,
        head_dim: ctx.args.number("kv_head_dim") as usize,
        // The ring has no blocks: element bytes only, no scales.
        dtype_bytes: kv_dtype(ctx).bytes(),
        capacity: ctx.args.number("kv_capacity") as usize,
    }
}

/// The paged shape of `kv_*=` with `kv_block`-token blocks.
fn paged_shape(ctx: &Ctx) -> PagedShape {
    let r = kv_shape(ctx);
    PagedShape {
        layers: r.layers,
        kv_heads: r.kv_heads,
        head_dim: r.head_dim,
        dtype: kv_dtype(ctx),
        block: ctx.args.number("kv_block") as usize,
        capacity: r.capacity,
    }
}

/// kv-prefix's (sequences, prefix, suffix).
fn prefix_args(ctx: &Ctx) -> (usize, usize, usize) {
    let (p, t) = (ctx.args.number("kv_prefix") as usize, ctx.args.number("kv_seq_tokens") as usize);
    (ctx.args.number("kv_seqs") as usize, p, t.saturating_sub(p))
}

/// Refuses, before anything runs, argument values this machine cannot run: working sets or
/// buffers larger than the test window, a chase whose table does not fit the heap, a KV shape
/// whose records are not whole 8-byte words or whose ring does not fit.
fn validate(ctx: &Ctx) -> Result<(), alloc::string::String> {
    let room = Room::of(ctx);
    let caches = CacheFacts::read();
    let line = caches.line as u64;
    let chase_max = room.chase_max(line);
    let too_big = |key: &str, v: u64, max: u64, why: &str| {
        Err(alloc::format!("{key}={v} ({}) exceeds the {} this machine allows ({why}; RAM {})", mib(v), mib(max), mib(ctx.boot.ram.1)))
    };
    let chase_why = "the test window, and the pointer chase's group order in half the heap";
    if let Some(sizes) = ctx.args.numbers("sizes") {
        if let Some(&s) = sizes.iter().find(|&&s| s > chase_max) {
            return too_big("sizes", s, chase_max, chase_why);
        }
    }
    if ctx.args.given("max_size") && ctx.args.number("max_size") > chase_max {
        return too_big("max_size", ctx.args.number("max_size"), chase_max, chase_why);
    }
    for key in ["stream_bytes", "handoff_bytes"] {
        if ctx.args.given(key) && ctx.args.number(key) > room.window {
            return too_big(key, ctx.args.number(key), room.window, "the test window");
        }
    }
    let shape = kv_shape(ctx);
    if !shape.record_bytes().is_multiple_of(8) {
        return Err(alloc::format!(
            "a K/V record of kv_heads x kv_head_dim x kv_dtype = {} x {} x {} = {} B is not a multiple of 8 bytes",
            shape.kv_heads,
            shape.head_dim,
            shape.dtype_bytes,
            shape.record_bytes()
        ));
    }
    let ring = shape.footprint(caches.line, true).max(shape.footprint(caches.line, false)) as u64;
    if ring > room.window {
        return Err(alloc::format!(
            "the KV ring (kv_layers x kv_capacity x slot = {} B) exceeds the {} test window",
            ring,
            mib(room.window)
        ));
    }
    // The deep-learning patterns: each layout must fit the window.
    let paged = paged_shape(ctx);
    let blocks = ctx.args.numbers("kv_blocks").unwrap_or(&[]);
    for &b in blocks.iter().chain([paged.capacity as u64].iter()) {
        let s = PagedShape { block: b as usize, ..paged };
        let f = Layout::new(s, 1, s.blocks_for(s.capacity)).footprint as u64;
        if f > room.window {
            return Err(alloc::format!("the kv-paged layout with kv_block {b} ({f} B) exceeds the {} test window", mib(room.window)));
        }
    }
    let (seqs, prefix, _) = prefix_args(ctx);
    let seq_tokens = ctx.args.number("kv_seq_tokens") as usize;
    if prefix >= seq_tokens {
        return Err(alloc::format!(
            "kv_prefix={prefix} does not fit a sequence of kv_seq_tokens={seq_tokens}: each of the kv_seqs={seqs} sequences needs its own tokens after the prefix"
        ));
    }
    let s = PagedShape { layers: 1, capacity: seq_tokens, ..paged };
    let f = Layout::new(s, seqs, seqs * s.blocks_for(seq_tokens)).footprint as u64;
    if f > room.window {
        return Err(alloc::format!("the kv-prefix layout ({f} B) exceeds the {} test window", mib(room.window)));
    }
    if let Some(sizes) = ctx.args.numbers("alloc_sizes") {
        if let Some(&s) = sizes.iter().find(|&&s| s > room.window / 4) {
            return too_big("alloc_sizes", s, room.window / 4, "a quarter of the test window: fresh blocks rotate past the caches");
        }
    }
    if 2 * ctx.args.number("double_batch") > room.window {
        return too_big("double_batch", ctx.args.number("double_batch"), room.window / 2, "two buffers in the test window");
    }
    Ok(())
}

fn env(ctx: &Ctx) -> Result<Env, &'static str> {
    let timer = match ctx.args.word("timer") {
        Some("pmccntr") => Timer::cycles()?,
        _ => Timer::generic(),
    };
    Ok(Env { timer, reps: ctx.args.number("reps") as usize, warmup: ctx.args.number("warmup") as usize, emulated: ctx.boot.emulated })
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
        settle_aliases();
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

/// The alias windows map one span of memory with different attributes. Before another alias
/// touches it, every line is cleaned and invalidated to the Point of Coherency (set/way to LoC,
/// this core's caches being all there is on one core), so no dirty line of one alias is
/// written back over what another alias wrote, and no stale clean line is read: the maintenance
/// mismatched attributes require (Arm ARM DDI 0487, "Mismatched memory attributes").
fn settle_aliases() {
    crate::cache::dcsw(crate::cache::setway::SetWayOp::CleanInvalidate, crate::cache::setway::Scope::ToLoC);
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
        let topo = crate::cache::this_cpu();
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
    let sizes: Vec<u64> = match ctx.args.numbers("sizes") {
        Some(given) => given.to_vec(),
        None => bench::plan::size_ladder(1024, max_size(ctx, &caches), line as u64),
    };
    let room = Room::of(ctx);
    diag!(
        "latency: sweep up to {} (max_size=; the largest this machine allows is {}: the test window of {}, RAM {})",
        mib(sizes.iter().copied().max().unwrap_or(0)),
        mib(room.chase_max(line as u64)),
        mib(room.window),
        mib(ctx.boot.ram.1)
    );
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
        for &(level, size) in &caches.capacities {
            diag!("latency {}: CCSIDR says L{level} holds {} KiB", region.attr, size / 1024);
        }
        if env.emulated {
            // The emulator's timing shows the host's caches, never the guest's: no knee is
            // inferred from it. Under the cache model the host finds them in its miss rates.
            diag!(
                "latency {}: no knees from emulator timing; {}",
                region.attr,
                if ctx.boot.model.is_some() {
                    "the digest finds them in the cache model's miss rates"
                } else {
                    "run under the cache model to see them"
                }
            );
            return;
        }
        let knees = bench::knee::find_knees(&curve, 1.3);
        if knees.is_empty() {
            diag!("latency {}: no knee found", region.attr);
        }
        for k in &knees {
            diag!(
                "latency {}: knee after {} KiB ({:.2} -> {:.2} ns): an inferred cache capacity",
                region.attr,
                k.capacity / 1024,
                k.below,
                k.above
            );
            record::Knee::new()
                .attr(region.attr)
                .capacity(k.capacity)
                .below(k.below, 3)
                .above(k.above, 3)
                .source(env.timer.source.name())
                .emulated(env.emulated)
                .emit();
        }
    });
}

fn stream(ctx: &mut Ctx) {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let bytes = ctx.args.number_or("stream_bytes", (2 * CacheFacts::read().largest).min(Room::of(ctx).window)) as usize;
    let distance = ctx.args.number("prefetch") as usize;
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
    let bytes = ctx.args.number("handoff_bytes") as usize;
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
        settle_aliases();
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
    // validate() refused shapes whose records are not whole words or whose ring does not fit.
    let shape = kv_shape(ctx);
    diag!(
        "kv: layers {} kv_heads {} head_dim {} dtype {} B capacity {} tokens -> {} KV bytes per token (2 x layers x kv_heads x head_dim x dtype)",
        shape.layers, shape.kv_heads, shape.head_dim, shape.dtype_bytes, shape.capacity, shape.bytes_per_token()
    );
    record::KvShape::new()
        .layers(shape.layers as u64)
        .kv_heads(shape.kv_heads as u64)
        .head_dim(shape.head_dim as u64)
        .dtype_bytes(shape.dtype_bytes as u64)
        .capacity(shape.capacity as u64)
        .bytes_per_token(shape.bytes_per_token() as u64)
        .emit();
    ctx.check_eq(shape.bytes_per_token(), 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.dtype_bytes, "KV bytes per token");
    let line = CacheFacts::read().line;
    for_each_region(ctx, |_, region| bench::kv::run(&env, region, shape, line));
}

/// The write-back window the deep-learning patterns run in (their signatures are cache
/// signatures: the other attributes only bypass), with the aliases settled; None (skipped) when
/// `attrs=` leaves it out.
fn wb_window(ctx: &mut Ctx) -> Option<Region> {
    let regions = match regions(ctx) {
        Ok(r) => r,
        Err(e) => {
            ctx.fail(e);
            return None;
        }
    };
    match regions.into_iter().find(|r| r.attr == "normal-wb") {
        Some(r) => {
            settle_aliases();
            Some(r)
        }
        None => {
            ctx.skip("needs the normal-wb window (attrs= leaves it out)");
            None
        }
    }
}

fn env_and_wb(ctx: &mut Ctx) -> Option<(Env, Region)> {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => {
            ctx.skip(why);
            return None;
        }
    };
    wb_window(ctx).map(|r| (env, r))
}

/// Paged KV (vLLM's PagedAttention) against the contiguous layout at equal bytes.
fn kv_paged(ctx: &mut Ctx) {
    let Some((env, wb)) = env_and_wb(ctx) else { return };
    let shape = paged_shape(ctx);
    let blocks: Vec<usize> = ctx.args.numbers("kv_blocks").unwrap_or(&[]).iter().map(|&b| b as usize).collect();
    diag!(
        "kv-paged: {} tokens of {} B per layer ({}), contiguous vs blocks of {:?} tokens from a scattered pool (seed {})",
        shape.capacity,
        shape.token_bytes(),
        shape.dtype.name(),
        blocks,
        ctx.args.number("seed")
    );
    let bad = bench::dl::kv_paged(&env, &wb, shape, &blocks, CacheFacts::read().line, ctx.args.number("seed"));
    ctx.check_eq(bad, 0, "every token reads back through its block table");
}

/// KV quantization: where one layer's scan falls out of each cache level, per dtype.
fn kv_quant(ctx: &mut Ctx) {
    let Some((env, wb)) = env_and_wb(ctx) else { return };
    let caches = CacheFacts::read();
    let max = max_size(ctx, &caches) as usize;
    let shape = paged_shape(ctx);
    let dtypes: Vec<Dtype> = ctx.args.list("kv_dtypes").iter().filter_map(|d| Dtype::parse(d)).collect();
    for d in &dtypes {
        let s = PagedShape { dtype: *d, ..shape };
        let knees: Vec<alloc::string::String> =
            caches.capacities.iter().map(|&(level, size)| alloc::format!("L{level} {} tokens", s.tokens_in(size as usize))).collect();
        diag!(
            "kv-quant {:<4}: {} B/token = 2 x {} layers x {} heads x {} dims x {} B{}; a layer's scan leaves the caches at (formula): {}",
            d.name(),
            s.bytes_per_block() as f64 / s.block as f64,
            s.layers,
            s.kv_heads,
            s.head_dim,
            d.bytes(),
            if d.scaled() {
                alloc::format!(" + {} B of scales per {}-token block and layer", s.scale_bytes(), s.block)
            } else {
                alloc::string::String::new()
            },
            knees.join(", ")
        );
    }
    diag!("kv-quant: dequantization is out of scope: the scans read the quantized bytes and the scales, no more");
    bench::dl::kv_quant(&env, &wb, shape, &dtypes, max, ctx.args.number("seed"));
    ctx.check(!dtypes.is_empty(), "at least one dtype swept");
}

/// Prefix sharing: S sequences with one shared copy of the prefix, or private copies.
fn kv_prefix(ctx: &mut Ctx) {
    let Some((env, wb)) = env_and_wb(ctx) else { return };
    let shape = paged_shape(ctx);
    let (seqs, prefix, suffix) = prefix_args(ctx);
    let full = prefix / shape.block;
    diag!(
        "kv-prefix: {seqs} sequences of {prefix} shared + {suffix} own tokens, {}-token blocks: {full} full prefix blocks shared, saving {} B over {} layers",
        shape.block,
        (seqs - 1) * full * shape.layers * shape.scan_bytes_per_block(),
        shape.layers
    );
    let bad = bench::dl::kv_prefix(&env, &wb, shape, seqs, prefix, suffix, ctx.args.number("seed"));
    ctx.check_eq(bad, 0, "every sequence reads its tokens back through its block table");
}

/// The caching allocator: reuse of the just-freed block against fresh memory, and the
/// fragmentation after a transformer-step trace.
fn alloc_reuse(ctx: &mut Ctx) {
    let Some((env, wb)) = env_and_wb(ctx) else { return };
    let caches = CacheFacts::read();
    let max = max_size(ctx, &caches);
    let sizes: Vec<usize> = match ctx.args.numbers("alloc_sizes") {
        Some(given) => given.iter().map(|&s| s as usize).collect(),
        None => {
            let mut v: Vec<usize> = caches
                .capacities
                .iter()
                .flat_map(|&(_, c)| [c / 2, c, c + c / 2])
                .filter(|&s| s <= max && s >= 512)
                .map(|s| s as usize)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    let cold_span = (2 * caches.largest as usize).min(wb.len / 2);
    bench::dl::alloc_reuse(&env, &wb, &sizes, cold_span);
    let seed = ctx.args.number("seed");
    match bench::dl::alloc_trace(4, 4096, 3, seed, wb.len) {
        Some(s) => {
            diag!(
                "alloc-reuse trace (seed {seed}, 4 layers, 3 steps): {} requests, {} from the cache; peak in use {} of {} requested; at the end {} in use, {} reserved ({:.0}% cached, not in use)",
                s.allocs,
                s.cache_hits,
                s.peak_allocated,
                s.peak_requested,
                s.allocated,
                s.reserved,
                100.0 * (s.reserved - s.allocated) as f64 / s.reserved.max(1) as f64
            );
            ctx.check(s.allocated <= s.reserved && s.peak_allocated <= s.reserved, "in use never exceeds reserved");
        }
        None => ctx.fail("the allocation trace ran out of the window"),
    }
}

/// A DataLoader with prefetch_factor=2: double buffering across two cores.
fn stream_double(ctx: &mut Ctx) {
    let Some((env, wb)) = env_and_wb(ctx) else { return };
    // The same probe as every case that needs a secondary: no core to start (one core, no PSCI
    // firmware, every secondary lost) means one core, and no wait for a core that cannot start.
    let producer = match crate::harness::smp::secondaries() {
        Ok(cores) => cores.first().copied(),
        Err(why) => {
            diag!("stream-double: {why}");
            None
        }
    };
    let shape = bench::dl::DoubleShape {
        batch: ctx.args.number("double_batch") as usize,
        batches: ctx.args.number("double_batches") as usize,
        distance: ctx.args.number("prefetch") as usize,
        producer,
        timeout_ms: ctx.args.number("double_timeout_ms"),
        stall_after: Some(ctx.args.number("double_stall") as usize).filter(|&n| n > 0),
    };
    if let Some(core) = producer {
        diag!("stream-double: double buffering on 2 cores: core {core} fills, core 0 consumes (prefetch_factor=2)");
    }
    let r = bench::dl::stream_double(&env, &wb, shape);
    if let Err(e) = r {
        ctx.fail(e);
    }
}

/// Geometry inference: the line size from a stride sweep and each data level's associativity
/// from a conflict sweep, in the write-back window. On silicon the timer's curves are read here;
/// under the cache model the host reads the model's counts of the same phases
/// (`scripts/report infer`); emulator timing infers nothing.
fn infer(ctx: &mut Ctx) {
    use cachescope_arch::cache::{infer, silicon};
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let regions = match regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    let Some(wb) = regions.iter().find(|r| r.attr == "normal-wb") else {
        return ctx.skip("needs the normal-wb window (attrs= leaves it out)");
    };
    let topo = crate::cache::this_cpu();
    let midr = cachescope_arch::cpuid::Midr { raw: ctx.boot.midr };
    let data: Vec<_> = topo.caches.iter().filter(|c| c.kind != Kind::Instruction).collect();
    let Some(l1d) = data.first() else {
        return ctx.skip("CLIDR_EL1 reports no data cache");
    };
    let mut line_curve = bench::infer::line_sweep(&env, wb, 2 * l1d.ccsidr.size() as usize);
    ctx.check_eq(line_curve.len(), bench::infer::STRIDES.len(), "every stride measured");
    let published_line = silicon::lookup(midr, l1d.level, l1d.kind).map(|p| p.line as u64);
    let timed = !env.emulated && infer::normalise(&mut line_curve, 0.3);
    report_inferred(
        "line",
        l1d.level,
        timed.then(|| infer::line_size(&line_curve)).flatten(),
        l1d.ccsidr.line() as u64,
        published_line,
        &env,
        ctx,
    );
    for c in &data {
        let published = silicon::lookup(midr, c.level, c.kind);
        // A spacing every candidate way size divides: the larger capacity, to a power of two.
        let size = published.map_or(0, |p| p.sizes_kib.iter().map(|&k| k as u64 * 1024).max().unwrap_or(0)).max(c.ccsidr.size());
        let spacing = size.next_power_of_two() as usize;
        let max_n = 2 * c.ccsidr.ways.max(published.map_or(0, |p| p.ways)) as usize + 2;
        let mut curve = bench::infer::ways_sweep(&env, wb, c.level, spacing, max_n);
        if curve.is_empty() {
            diag!("infer L{}: the window cannot hold two addresses {} apart: skipped", c.level, mib(spacing as u64));
            continue;
        }
        let timed = !env.emulated && infer::normalise(&mut curve, 0.3);
        report_inferred(
            "ways",
            c.level,
            timed.then(|| infer::ways(&curve)).flatten(),
            c.ccsidr.ways as u64,
            published.map(|p| p.ways as u64),
            &env,
            ctx,
        );
    }
}

/// One inferred property beside CCSIDR and the published silicon, with its source.
fn report_inferred(property: &str, level: u8, value: Option<u64>, ccsidr: u64, published: Option<u64>, env: &Env, ctx: &Ctx) {
    let published_text = published.map_or(alloc::string::String::from("unknown"), |p| alloc::format!("{p}"));
    let inferred = match (value, env.emulated) {
        (Some(v), _) => alloc::format!("{v} (timer)"),
        (None, true) if ctx.boot.model.is_some() => alloc::string::String::from("from the cache model's counts: see the digest"),
        (None, true) => alloc::string::String::from("not inferred: emulator timing has no caches in it"),
        (None, false) => alloc::string::String::from("not found on the timer (flat or noisy curve)"),
    };
    diag!("infer L{level} {property:<5} inferred {inferred} | CCSIDR {ccsidr} | published silicon {published_text}");
    record::Inferred::new()
        .property(property)
        .level(level as u64)
        .ccsidr(ccsidr)
        .source(env.timer.source.name())
        .value(value)
        .published(published)
        .emulated(env.emulated)
        .emit();
}
