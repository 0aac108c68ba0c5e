//! Latency vs working set: a randomised pointer chase (lmbench lat_mem_rd / multichase shape).
//! Each line of the working set holds the address of the next line in a random order, random
//! within groups of `chase_group` bytes (default 4 KiB pages) and with the groups permuted; the
//! window is `steps` dependent loads. With 4 KiB groups a page's 64 lines are visited together
//! (one TLB entry per 64 loads, as multichase's default); with one line per group the order is
//! random over the whole working set (past the TLBs' reach nearly every load needs a new
//! translation, as lat_mem_rd with a page stride shows on a Pi).

use alloc::vec::Vec;

use super::case::{self, for_each_region, mib, Benchmark, CacheFacts, Machine, Room};
use super::plan::{ChaseOrder, Rng};
use super::{measure, Env, Metric, MetricId, Region, Unit, NO_NOTES};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::record::{self, Emit};
use cachescope_arch::bench::{Bench, Param, Variant};

/// The default group of the chase order: a 4 KiB page (one TLB entry at the 4 KiB granule).
pub const GROUP_BYTES: usize = 4096;

/// Heap bytes [`build_chain`] needs for a `bytes` working set in groups of `group` bytes: the
/// group order (8 bytes a group) and one group's lines. The visiting order itself is never
/// stored (see [`ChaseOrder`]), so the largest chase grows with the test window, not with the
/// heap (with 4 KiB groups).
pub fn chase_table_bytes(bytes: u64, line: u64, group: u64) -> u64 {
    let line = line.max(1);
    let lines = bytes / line;
    let per_group = (group / line).max(1);
    lines.div_ceil(per_group) * 8 + per_group * 4
}

/// Writes the chain into `region` for a working set of `bytes` with `line`-byte nodes in groups
/// of `group` bytes, walking the visiting order once: each node gets the address of the next,
/// the last the first's. Returns the address of the first node.
pub fn build_chain(region: &Region, bytes: usize, line: usize, group: usize, seed: u64) -> usize {
    let lines = (bytes / line).max(1);
    let mut rng = Rng::new(seed);
    let mut order = ChaseOrder::new(lines, group / line, &mut rng);
    let first = order.next().unwrap_or(0) as usize;
    let link = |from: usize, to: usize| {
        let (here, next) = (region.va + from * line, region.va + to * line);
        // SAFETY: `here` lies inside the region (from < lines and lines * line <= bytes <= len)
        // and is 8-byte aligned (line is a multiple of 8): an aligned store into test memory.
        unsafe { core::ptr::write_volatile(here as *mut usize, next) };
    };
    let mut here = first;
    for next in order {
        link(here, next as usize);
        here = next as usize;
    }
    link(here, first);
    region.va + first * line
}

/// Dependent loads per iteration of [`chase`]'s main loop (lmbench's `lat_mem_rd` unrolls too).
pub const CHASE_UNROLL: usize = 8;

/// Follows the chain `steps` times from `start`; returns where it stopped (kept live).
///
/// The loop is assembly, as lmbench's is unrolled C: [`CHASE_UNROLL`] dependent loads and one
/// count-down per iteration, 64-byte aligned so its ten instructions lie in one cache line and
/// one emulator translation block. A Rust loop puts a range step and, in debug builds, an
/// alignment check between the loads: their instructions are timed with every load on a
/// board, and under the cache model each iteration was two instruction-fetch blocks, the
/// second across a line boundary.
#[inline(never)]
pub fn chase(start: usize, steps: usize) -> usize {
    let mut p = start;
    let (blocks, rest) = (steps / CHASE_UNROLL, steps % CHASE_UNROLL);
    if blocks != 0 {
        // SAFETY: every node was written by `build_chain` with the address of another node of
        // the same region: aligned loads from mapped test memory, `blocks * CHASE_UNROLL` of
        // them (x1 counts down from `blocks`, non-zero).
        unsafe {
            core::arch::asm!(
                ".p2align 6",
                "2: ldr x0, [x0]", "ldr x0, [x0]", "ldr x0, [x0]", "ldr x0, [x0]",
                "ldr x0, [x0]", "ldr x0, [x0]", "ldr x0, [x0]", "ldr x0, [x0]",
                "subs x1, x1, #1", "b.ne 2b",
                inout("x0") p, inout("x1") blocks => _,
                options(nostack, readonly))
        };
    }
    for _ in 0..rest {
        // SAFETY: as above, one aligned load of a node.
        p = unsafe { core::ptr::read_volatile(p as *const usize) };
    }
    p
}

/// Runs the sweep over `sizes` in `region`; returns (bytes, median ns per load) for knee
/// detection, emitting one metric per size.
pub fn sweep(env: &Env, region: &Region, sizes: &[u64], line: usize, group: usize) -> Vec<(u64, f64)> {
    let mut curve = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let size = size as usize;
        if size > region.len {
            crate::diag!("latency {}: {} B exceeds the {} B window, stopping the sweep", region.attr, size, region.len);
            break;
        }
        if i % 8 == 0 {
            crate::diag!("progress: latency {} {}/{} sizes", region.attr, i, sizes.len());
        }
        let start = build_chain(region, size, line, group, 0x5eed ^ size as u64);
        let lines = (size / line).max(1);
        let steps = (2 * lines).max(4096);
        // The group is a parameter of the measurement only when it is not the default.
        let params = [(Param::Line.name(), line as u64), (Param::ChaseGroup.name(), group as u64)];
        let id = MetricId {
            bench: Bench::Latency.name(),
            variant: Variant::Chase.name(),
            attr: region.attr,
            bytes: size as u64,
            params: if group == GROUP_BYTES { &params[..1] } else { &params },
        };
        let summary = measure(env, id, || {
            core::hint::black_box(chase(start, steps));
        });
        let m = Metric { id, summary, work: steps as u64, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((size as u64, m.values(&env.timer).1));
    }
    curve
}

typed_args! {
    /// The latency sweep's arguments.
    pub struct LatencyArgs = LATENCY, LATENCY_ARGS {
        sizes: NumberList { min: 1024, max: 1 << 30 }, Computed("a ladder from 1 KiB to max_size"), "latency working sets in bytes";
        max_size: Number { min: 4096, max: 1 << 30 }, Computed("4x the largest cache, within the test window and the heap"), "largest latency working set";
        chase_group: Number { min: 8, max: 4096 }, Literal("4096"), "bytes per group of the chase's random order: 4096 = random within 4 KiB pages (a TLB entry per 64 loads), the line size = random over the whole working set (past TLB reach, a translation per load); a power of two, at least the cache line";
    }
}

/// The `latency` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Latency, args: LATENCY_ARGS, validate: Some(validate), run };

/// The latency sweep's largest working set: `max_size=`, else 4x the largest cache within room.
pub fn max_size(ctx: &Ctx, caches: &CacheFacts) -> u64 {
    let room = Room::of(ctx).chase_max_grouped(caches.line as u64, ctx.args.get(LATENCY.chase_group));
    ctx.args.get(LATENCY.max_size).unwrap_or((4 * caches.largest).min(room))
}

/// Working sets larger than the test window, or whose chase table does not fit half the heap.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let line = m.caches.line as u64;
    let group = ctx.args.get(LATENCY.chase_group);
    if !group.is_power_of_two() || group < line {
        return Err(alloc::format!(
            "{}={group}: not a power of two of at least the cache line ({line} bytes, CTR_EL0.DminLine)",
            LATENCY.chase_group.name()
        ));
    }
    let chase_max = m.room.chase_max_grouped(line, group);
    let chase_why = "the test window, and the pointer chase's group order in half the heap";
    if let Some(sizes) = ctx.args.get(LATENCY.sizes) {
        if let Some(&s) = sizes.iter().find(|&&s| s > chase_max) {
            return case::too_big(ctx, LATENCY.sizes.name(), s, chase_max, chase_why);
        }
    }
    if let Some(max) = ctx.args.get(LATENCY.max_size).filter(|&max| max > chase_max) {
        return case::too_big(ctx, LATENCY.max_size.name(), max, chase_max, chase_why);
    }
    Ok(())
}

fn run(ctx: &mut Ctx) {
    let env = match case::env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let caches = CacheFacts::read();
    let line = caches.line;
    let group = ctx.args.get(LATENCY.chase_group) as usize;
    let sizes: Vec<u64> = match ctx.args.get(LATENCY.sizes) {
        Some(given) => given.to_vec(),
        None => super::plan::size_ladder(1024, max_size(ctx, &caches), line as u64),
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
        let start = build_chain(region, probe, line, group, 1);
        let mut p = start;
        let mut steps = 0;
        loop {
            p = chase(p, 1);
            steps += 1;
            if p == start || steps > probe / line {
                break;
            }
        }
        ctx.check_eq(steps, probe / line, "pointer chain is one cycle through every line");
        let curve = sweep(&env, region, &sizes, line, group);
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
        let knees = super::knee::find_knees(&curve, 1.3);
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
