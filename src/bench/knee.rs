//! Knee detection on a latency-vs-working-set curve: where the latency steps up, a cache level
//! has been outgrown. Pure.

use alloc::vec::Vec;

/// An inferred capacity: the largest working set before a latency step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knee {
    /// Largest working set (bytes) still on the lower plateau.
    pub capacity: u64,
    /// Latency on the plateau below the knee.
    pub below: f64,
    /// Latency at the first point above it.
    pub above: f64,
}

/// Finds knees in `(bytes, latency)` points sorted by size: a point whose latency exceeds the
/// running plateau (the median of the points since the previous knee) by more than `ratio`
/// (e.g. 1.3 = +30 %) and stays above it at the next point (one-point spikes are noise).
pub fn find_knees(points: &[(u64, f64)], ratio: f64) -> Vec<Knee> {
    let mut knees = Vec::new();
    let mut plateau: Vec<f64> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let (_, lat) = points[i];
        if !lat.is_finite() || lat <= 0.0 {
            i += 1;
            continue;
        }
        if let Some(base) = median(&plateau) {
            let next_high = points.get(i + 1).is_none_or(|&(_, l)| l > base * ratio);
            if lat > base * ratio && next_high {
                knees.push(Knee { capacity: points[i - 1].0, below: base, above: lat });
                plateau.clear();
            }
        }
        plateau.push(lat);
        i += 1;
    }
    knees
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    Some(s[(s.len() - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_levels() {
        // 32 KiB L1 at ~1.7 ns, 1 MiB L2 at ~5 ns, DRAM ~100 ns (Pi 5-like shape).
        let pts: Vec<(u64, f64)> = [
            (4096, 1.6),
            (16384, 1.7),
            (32768, 1.7),
            (49152, 5.1),
            (65536, 5.0),
            (262144, 5.2),
            (1 << 20, 5.3),
            (3 << 19, 90.0),
            (2 << 20, 100.0),
            (4 << 20, 110.0),
        ]
        .into_iter()
        .collect();
        let k = find_knees(&pts, 1.5);
        assert_eq!(k.len(), 2, "{k:?}");
        assert_eq!(k[0].capacity, 32768);
        assert_eq!(k[1].capacity, 1 << 20);
    }

    #[test]
    fn flat_curve_has_no_knee() {
        // What the emulator shows: no cache, a flat curve with jitter.
        let pts: Vec<(u64, f64)> = (10..24).map(|p| (1u64 << p, 10.0 + (p % 3) as f64 * 0.5)).collect();
        assert!(find_knees(&pts, 1.3).is_empty());
    }

    #[test]
    fn single_spike_ignored_and_garbage_tolerated() {
        let pts = [(1024, 2.0), (2048, 9.0), (4096, 2.1), (8192, f64::NAN), (16384, 2.0)];
        assert!(find_knees(&pts, 1.5).is_empty());
        assert!(find_knees(&[], 1.5).is_empty());
    }
}
