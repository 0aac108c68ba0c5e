//! Robust statistics of repeated measurements: min, median, max and the median absolute
//! deviation (MAD). Pure; integer samples (timer ticks) in, integers out, so that results under a
//! deterministic emulator are bit-identical across runs.

use alloc::vec::Vec;

/// Summary of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: u64,
    /// Median (the lower middle for an even count, so it is always a sample).
    pub median: u64,
    /// Largest sample.
    pub max: u64,
    /// Median absolute deviation from the median.
    pub mad: u64,
}

/// Summarises `samples` (reordered in place). `None` for an empty slice.
pub fn summarize(samples: &mut [u64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let n = samples.len();
    let median = samples[(n - 1) / 2];
    let mut dev: Vec<u64> = samples.iter().map(|&s| s.abs_diff(median)).collect();
    dev.sort_unstable();
    Some(Summary { n, min: samples[0], median, max: samples[n - 1], mad: dev[(n - 1) / 2] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even() {
        let mut s = [5, 1, 9, 3, 7];
        assert_eq!(summarize(&mut s), Some(Summary { n: 5, min: 1, median: 5, max: 9, mad: 2 }));
        let mut e = [4, 1, 3, 2];
        let r = summarize(&mut e).unwrap();
        assert_eq!((r.min, r.median, r.max), (1, 2, 4));
        assert_eq!(summarize(&mut []), None);
    }

    #[test]
    fn outlier_does_not_move_median_or_mad() {
        let mut s = [100, 101, 99, 100, 1_000_000];
        let r = summarize(&mut s).unwrap();
        assert_eq!((r.median, r.mad, r.max), (100, 1, 1_000_000));
    }

    #[test]
    fn identical_samples() {
        let mut s = [7u64; 9];
        assert_eq!(summarize(&mut s).unwrap().mad, 0);
    }
}
