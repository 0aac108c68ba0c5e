//! Geometry inference sweeps (what the silicon really is): a stride sweep for the line size and a
//! conflict sweep per level for the associativity. Each point is one measurement (a `metric`
//! record and a cache-model phase), so the same sweep is read on the timer (silicon) and on the
//! model's counts (the host's `scripts/report infer`). The rules that read them live in
//! `cachescope_arch::cache::infer`.

use alloc::vec::Vec;

use super::NO_NOTES;
use super::{measure, Env, Metric, MetricId, Region, Unit};

/// Strides of the line-size sweep, bytes: from one 8-byte word to 512 B.
pub const STRIDES: [u64; 7] = [8, 16, 32, 64, 128, 256, 512];

/// Rounds the conflict sweep cycles its addresses (the first brings them in).
pub const ROUNDS: usize = 128;

/// Loads one word every `stride` bytes from `base` up to `end`. The loads are the only memory
/// accesses of the loop (their sum is kept live once, at the end), so a model's counts per load
/// are the sweep's and not the harness's.
#[inline(never)]
fn strided_pass(base: usize, end: usize, stride: usize) {
    let mut p = base;
    let mut sum = 0u64;
    while p < end {
        // SAFETY: [base, end) lies inside a mapped test window; 8-byte aligned loads (base
        // and stride are multiples of 8).
        sum ^= unsafe { core::ptr::read_volatile(p as *const u64) };
        p += stride;
    }
    core::hint::black_box(sum);
}

/// Cycles `rounds` times through `n` addresses `spacing` bytes apart from `base`.
#[inline(never)]
fn conflict_rounds(base: usize, spacing: usize, n: usize, rounds: usize) {
    let mut sum = 0u64;
    for _ in 0..rounds {
        let mut p = base;
        for _ in 0..n {
            // SAFETY: base + (n - 1) * spacing lies inside the window (checked by the caller);
            // aligned loads from test memory.
            sum ^= unsafe { core::ptr::read_volatile(p as *const u64) };
            p += spacing;
        }
    }
    core::hint::black_box(sum);
}

/// Loads per pass at least, so that the harness's own few accesses in a phase stay noise.
pub const MIN_LOADS: usize = 2048;

/// The line-size sweep over a buffer of at least `bytes` (twice the L1D, so that each pass finds
/// every line evicted) and at least [`MIN_LOADS`] loads: one point per stride, (stride, time per
/// load).
pub fn line_sweep(env: &Env, region: &Region, bytes: usize) -> Vec<(u64, f64)> {
    let mut curve = Vec::new();
    for stride in STRIDES {
        let bytes = bytes.max(MIN_LOADS * stride as usize).min(region.len) & !511;
        let params = [("stride", stride)];
        let id = MetricId { bench: "infer", variant: "line", attr: region.attr, bytes: bytes as u64, params: &params };
        let summary = measure(env, id, || strided_pass(region.va, region.va + bytes, stride as usize));
        let m = Metric { id, summary, work: bytes as u64 / stride, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((stride, m.values(&env.timer).1));
    }
    curve
}

/// The conflict sweep of cache level `level`: `n` = 1..=`max_n` addresses `spacing` bytes
/// apart (every one in the same set of any cache whose way size divides `spacing`), each
/// cycled [`ROUNDS`] times; (n, time per load). Stops where the window ends.
pub fn ways_sweep(env: &Env, region: &Region, level: u8, spacing: usize, max_n: usize) -> Vec<(u64, f64)> {
    let mut curve = Vec::new();
    for n in 1..=max_n {
        if (n - 1) * spacing + 8 > region.len {
            crate::diag!("infer {}: {n} addresses {spacing} B apart exceed the {} B window, stopping", region.attr, region.len);
            break;
        }
        let params = [("level", level as u64), ("n", n as u64)];
        let id = MetricId { bench: "infer", variant: "ways", attr: region.attr, bytes: spacing as u64, params: &params };
        let summary = measure(env, id, || conflict_rounds(region.va, spacing, n, ROUNDS));
        let m = Metric { id, summary, work: (n * ROUNDS) as u64, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((n as u64, m.values(&env.timer).1));
    }
    curve
}
