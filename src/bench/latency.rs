//! Latency vs working set: a randomised pointer chase (lmbench lat_mem_rd / multichase shape).
//! Each line of the working set holds the address of the next line in a random order, random
//! within 4 KiB pages and with the pages permuted; the window is `steps` dependent loads.

use alloc::vec::Vec;

use super::plan::{ChaseOrder, Rng};
use super::NO_NOTES;
use super::{measure, Env, Metric, MetricId, Region, Unit};

/// Page size used for grouping (one TLB entry at the 4 KiB granule).
pub const GROUP_BYTES: usize = 4096;

/// Heap bytes [`build_chain`] needs for a `bytes` working set: the group order (8 bytes a
/// 4 KiB group) and one group's lines. The visiting order itself is never stored (see
/// [`ChaseOrder`]), so the largest chase grows with the test window, not with the heap.
pub fn chase_table_bytes(bytes: u64, line: u64) -> u64 {
    let line = line.max(1);
    let lines = bytes / line;
    let per_group = (GROUP_BYTES as u64 / line).max(1);
    lines.div_ceil(per_group) * 8 + per_group * 4
}

/// Writes the chain into `region` for a working set of `bytes` with `line`-byte nodes, walking
/// the visiting order once: each node gets the address of the next, the last the first's.
/// Returns the address of the first node.
pub fn build_chain(region: &Region, bytes: usize, line: usize, seed: u64) -> usize {
    let lines = (bytes / line).max(1);
    let mut rng = Rng::new(seed);
    let mut order = ChaseOrder::new(lines, GROUP_BYTES / line, &mut rng);
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

/// Follows the chain `steps` times from `start`; returns where it stopped (kept live).
#[inline(never)]
pub fn chase(start: usize, steps: usize) -> usize {
    let mut p = start;
    for _ in 0..steps {
        // SAFETY: every node was written by `build_chain` with the address of another node of
        // the same region; aligned loads from mapped test memory.
        p = unsafe { core::ptr::read_volatile(p as *const usize) };
    }
    p
}

/// Runs the sweep over `sizes` in `region`; returns (bytes, median ns per load) for knee
/// detection, emitting one metric per size.
pub fn sweep(env: &Env, region: &Region, sizes: &[u64], line: usize) -> Vec<(u64, f64)> {
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
        let start = build_chain(region, size, line, 0x5eed ^ size as u64);
        let lines = (size / line).max(1);
        let steps = (2 * lines).max(4096);
        let id = MetricId { bench: "latency", variant: "chase", attr: region.attr, bytes: size as u64, params: &[("line", line as u64)] };
        let summary = measure(env, id, || {
            core::hint::black_box(chase(start, steps));
        });
        let m = Metric { id, summary, work: steps as u64, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((size as u64, m.values(&env.timer).1));
    }
    curve
}
