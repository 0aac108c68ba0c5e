//! Geometry inference: what a cache really is, from sweeps that observe it — the line size from a
//! stride sweep, the associativity from a conflict sweep. Pure; one home for the rules, used by
//! the kernel on its timer and by the host on the cache model's counts.
//!
//! Both rules read a curve of `(x, y)` points sorted by `x`, where `y` is how much of the sweep
//! had to come from further away: under the cache model a rate (fills or misses per access,
//! 0..=1); on a timer the cost per access, which [`normalise`] maps onto 0..=1 between the
//! cheapest and the dearest point.
//!
//! # Sweeps
//!
//! - **Line size.** One load every `stride` bytes over a buffer twice the L1D capacity, walked
//!   sequentially so that every pass finds every line evicted: each load of a new line brings
//!   the line in (by demand or by a prefetcher), so lines brought in per load are
//!   `min(1, stride / line)`. The line is the smallest stride at which that reaches 1 (≥ 0.9).
//!   A prefetcher hides misses but not fills: under the model count `misses + prefetch_hits`.
//! - **Associativity.** `n` addresses one spacing apart (a multiple of every candidate way
//!   size: the level's capacity), cycled many rounds: all land in one set, so they stay cached
//!   while `n` ≤ ways and (LRU, FIFO) miss on every access once `n` > ways. The ways are the
//!   largest `n` whose miss rate at that level stays below 0.5 with every smaller `n` below it
//!   too.

/// Where the figures of an inference come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The cache model's counts (exact, simulated).
    Model,
    /// A hardware timer on silicon.
    Timer,
}

impl Source {
    /// The record / report name.
    pub const fn name(self) -> &'static str {
        match self {
            Source::Model => "model",
            Source::Timer => "timer",
        }
    }
}

/// The rate at which lines brought in per load count as "every load brings a line".
pub const FULL_FILL: f64 = 0.9;

/// The miss rate above which `n` addresses no longer fit one set.
pub const NO_LONGER_FITS: f64 = 0.5;

/// The line size from a stride sweep of `(stride, lines brought in per load)`: the smallest
/// stride whose rate reaches [`FULL_FILL`], provided a smaller stride stayed below it (else the
/// sweep started too coarse to tell).
pub fn line_size(points: &[(u64, f64)]) -> Option<u64> {
    let first = points.iter().position(|&(_, r)| r.is_finite() && r >= FULL_FILL)?;
    (first > 0).then(|| points[first].0)
}

/// The associativity from a conflict sweep of `(n, miss rate)` sorted by `n` from 1: the
/// largest `n` before the first rate at or above [`NO_LONGER_FITS`], provided that point exists
/// (else the sweep did not go far enough).
pub fn ways(points: &[(u64, f64)]) -> Option<u64> {
    let first = points.iter().position(|&(_, r)| !r.is_finite() || r >= NO_LONGER_FITS)?;
    (first > 0).then(|| points[first - 1].0)
}

/// Maps timer costs per access onto 0..=1 between the cheapest and the dearest point, in place,
/// so that [`line_size`] and [`ways`] read them like rates. False (and `points` unchanged) when
/// the curve is flat: every point within `min_step` (relative) of the cheapest — an emulator
/// without caches, or noise.
pub fn normalise(points: &mut [(u64, f64)], min_step: f64) -> bool {
    let finite = || points.iter().map(|&(_, v)| v).filter(|v| v.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    if !(lo > 0.0 && hi > lo * (1.0 + min_step)) {
        return false;
    }
    for p in points.iter_mut() {
        p.1 = (p.1 - lo) / (hi - lo);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_from_fills() {
        // 64-byte lines: strides 8..512 bring in stride/64 lines per load, capped at 1.
        let pts: alloc::vec::Vec<(u64, f64)> = [8u64, 16, 32, 64, 128, 256].iter().map(|&s| (s, (s as f64 / 64.0).min(1.0))).collect();
        assert_eq!(line_size(&pts), Some(64));
        // A sweep that starts at the line size cannot tell a larger line from a smaller one.
        assert_eq!(line_size(&pts[3..]), None);
        assert_eq!(line_size(&[(8, 0.1), (16, 0.2)]), None);
    }

    #[test]
    fn ways_from_miss_rates() {
        // Two ways (Cortex-A72's L1D silicon), then four (its CCSIDR in QEMU).
        assert_eq!(ways(&[(1, 0.01), (2, 0.01), (3, 1.0), (4, 1.0)]), Some(2));
        assert_eq!(ways(&[(1, 0.0), (2, 0.0), (3, 0.0), (4, 0.02), (5, 0.97), (6, 1.0)]), Some(4));
        // Never stops fitting, or never fits: no answer.
        assert_eq!(ways(&[(1, 0.0), (2, 0.0)]), None);
        assert_eq!(ways(&[(1, 0.9), (2, 1.0)]), None);
    }

    #[test]
    fn timer_costs_normalise() {
        let mut t = [(1, 4.0), (2, 4.1), (3, 20.0)];
        assert!(normalise(&mut t, 0.3));
        assert_eq!(ways(&t), Some(2));
        let mut flat = [(1, 4.0), (2, 4.1), (3, 4.2)];
        assert!(!normalise(&mut flat, 0.3));
        assert_eq!(flat[2].1, 4.2);
    }
}
