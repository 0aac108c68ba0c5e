//! `alloc-reuse`: the caching allocator, reuse of the just-freed block against fresh memory,
//! and the fragmentation after a transformer-step trace. The allocator is [`super::caching`].

use alloc::vec::Vec;

use super::caching::{class_of, play, transformer_trace, CachingAlloc, Stats};
use super::case::{self, Benchmark, CacheFacts, Machine};
use super::kv_paged::PAGED;
use super::stream::{run as stream_run, Kernel};
use super::{measure, Env, Metric, MetricId, Notes, Region, Unit};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::record::{self, Emit};
use cachescope_arch::bench::{Bench, Variant};

/// `alloc-reuse`: per size, a tensor of that size is requested, written in full (STP) and
/// freed, window after window: from the caching allocator (the block just freed, warm) or as
/// fresh memory (a bump pointer wrapping after `cold_span` bytes, so the block comes back cold).
pub fn alloc_reuse(env: &Env, region: &Region, sizes: &[usize], cold_span: usize) {
    for &size in sizes {
        let size = size.div_ceil(64) * 64;
        for (variant, caching) in [(Variant::Reuse.name(), true), (Variant::Fresh.name(), false)] {
            let limit = (cold_span + 2 * class_of(size)).min(region.len);
            let mut a = CachingAlloc::new(limit, caching);
            let id = MetricId { bench: Bench::AllocReuse.name(), variant, attr: region.attr, bytes: size as u64, params: &[] };
            let summary = measure(env, id, || {
                if let Some(off) = a.alloc(size) {
                    // SAFETY: the allocator's blocks lie inside `limit` ≤ the region's length;
                    // page-aligned classes of at least 512 bytes, size a multiple of 64.
                    unsafe { stream_run(Kernel::WriteStp, region.va + off, size, 0) };
                    a.free(off);
                }
            });
            let notes: Notes = &|m| m.cache_hits(a.stats.cache_hits).reserved(a.stats.reserved);
            Metric { id, summary, work: size as u64, unit: Unit::Rate, notes }.emit(env);
        }
    }
}

/// The fragmentation a seeded transformer-step trace leaves in the caching allocator
/// (`alloc-trace` record). Returns its counters.
pub fn alloc_trace(layers: usize, hidden: usize, steps: usize, seed: u64, limit: usize) -> Option<Stats> {
    let trace = transformer_trace(layers, hidden, steps, seed);
    let mut a = CachingAlloc::new(limit, true);
    if !play(&mut a, &trace) {
        return None;
    }
    let s = a.stats;
    record::AllocTrace::new()
        .seed(seed)
        .layers(layers as u64)
        .hidden(hidden as u64)
        .steps(steps as u64)
        .allocs(s.allocs)
        .cache_hits(s.cache_hits)
        .peak_requested(s.peak_requested)
        .peak_allocated(s.peak_allocated)
        .allocated(s.allocated)
        .reserved(s.reserved)
        .emit();
    Some(s)
}

typed_args! {
    /// The caching allocator benchmark's arguments.
    pub struct AllocArgs = ALLOC, ALLOC_ARGS {
        alloc_sizes: NumberList { min: 512, max: 1 << 30 }, Computed("1/2, 1 and 3/2 of each data cache, up to max_size"), "alloc-reuse tensor sizes in bytes";
    }
}

/// The `alloc-reuse` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::AllocReuse, args: ALLOC_ARGS, validate: Some(validate), run };

/// A tensor larger than a quarter of the window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    if let Some(sizes) = ctx.args.get(ALLOC.alloc_sizes) {
        if let Some(&s) = sizes.iter().find(|&&s| s > m.room.window / 4) {
            let why = "a quarter of the test window: fresh blocks rotate past the caches";
            return case::too_big(ctx, ALLOC.alloc_sizes.name(), s, m.room.window / 4, why);
        }
    }
    Ok(())
}

/// The caching allocator: reuse of the just-freed block against fresh memory, and the
/// fragmentation after a transformer-step trace.
fn run(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    let caches = CacheFacts::read();
    let max = super::latency::max_size(ctx, &caches);
    let sizes: Vec<usize> = match ctx.args.get(ALLOC.alloc_sizes) {
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
    alloc_reuse(&env, &wb, &sizes, cold_span);
    let seed = ctx.args.get(PAGED.seed);
    match alloc_trace(4, 4096, 3, seed, wb.len) {
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
