//! Pure planning for the benchmarks: the size ladder, the randomised pointer-chase order and a
//! deterministic PRNG (the same seed gives the same chain on every run and every machine).

use alloc::vec::Vec;

/// xorshift64* — small, deterministic, good enough to defeat stride prefetchers.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed (0 is mapped to a fixed constant).
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// Next 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform value in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Visiting order of `lines` cache lines for a pointer chase: lines are grouped by
/// `lines_per_group` (one TLB page each), the groups are visited in random order and the lines
/// within each group in random order, so neither a stride prefetcher nor TLB misses dominate.
/// Returns a permutation of `0..lines` ([`ChaseOrder`] collected).
pub fn chase_order(lines: usize, lines_per_group: usize, rng: &mut Rng) -> Vec<u32> {
    ChaseOrder::new(lines, lines_per_group, rng).collect()
}

/// The visiting order of [`chase_order`], one line at a time: it holds only the group order
/// (8 bytes a group) and one group's lines, never the whole permutation (4 bytes a line), so a
/// chain over any working set is built with a few MiB of heap at most. The random draws are
/// the same, in the same order: the same seed gives the same chain.
pub struct ChaseOrder<'r> {
    lines: usize,
    lpg: usize,
    groups: alloc::vec::IntoIter<usize>,
    within: Vec<u32>,
    next: usize,
    rng: &'r mut Rng,
}

impl<'r> ChaseOrder<'r> {
    /// The order of `lines` lines in groups of `lines_per_group` (0 is taken as 1): the group
    /// order is drawn now, each group's order when the walk reaches it.
    pub fn new(lines: usize, lines_per_group: usize, rng: &'r mut Rng) -> Self {
        let lpg = lines_per_group.max(1);
        let mut group_order: Vec<usize> = (0..lines.div_ceil(lpg)).collect();
        rng.shuffle(&mut group_order);
        Self { lines, lpg, groups: group_order.into_iter(), within: Vec::with_capacity(lpg), next: 0, rng }
    }
}

impl Iterator for ChaseOrder<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while self.next == self.within.len() {
            let g = self.groups.next()?;
            let first = g * self.lpg;
            self.within.clear();
            self.within.extend((first..(first + self.lpg).min(self.lines)).map(|l| l as u32));
            self.rng.shuffle(&mut self.within);
            self.next = 0;
        }
        self.next += 1;
        Some(self.within[self.next - 1])
    }
}

/// Working-set sizes from `min` to `max` bytes: every power of two plus points near it
/// (×0.875, ×1.25, ×1.5), rounded to `line`, sorted and unique.
pub fn size_ladder(min: u64, max: u64, line: u64) -> Vec<u64> {
    let line = line.max(1);
    let mut v = Vec::new();
    let mut p = 1u64;
    while p <= max.saturating_mul(2) && p != 0 {
        for s in [p - p / 8, p, p + p / 4, p + p / 2] {
            let s = s.div_ceil(line) * line;
            if s >= min && s <= max {
                v.push(s);
            }
        }
        p = match p.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chase_is_a_permutation_grouped_by_page() {
        let mut rng = Rng::new(42);
        for (lines, lpg) in [(1, 64), (63, 64), (64, 64), (1000, 64), (4096, 64), (17, 1)] {
            let o = chase_order(lines, lpg, &mut rng);
            let mut seen = alloc::vec![false; lines];
            for &l in &o {
                assert!(!seen[l as usize], "line {l} twice");
                seen[l as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "lines {lines}");
            // Lines of one group are contiguous in the order: the group changes exactly
            // (groups - 1) times.
            let changes = o.windows(2).filter(|w| w[0] as usize / lpg != w[1] as usize / lpg).count();
            assert_eq!(changes, lines.div_ceil(lpg) - 1, "lines {lines} lpg {lpg}");
        }
    }

    /// The order as it was built before [`ChaseOrder`]: the whole permutation at once.
    fn materialised(lines: usize, lpg: usize, rng: &mut Rng) -> Vec<u32> {
        let mut group_order: Vec<usize> = (0..lines.div_ceil(lpg)).collect();
        rng.shuffle(&mut group_order);
        let mut order = Vec::new();
        for g in group_order {
            let mut within: Vec<u32> = (g * lpg..(g * lpg + lpg).min(lines)).map(|l| l as u32).collect();
            rng.shuffle(&mut within);
            order.extend_from_slice(&within);
        }
        order
    }

    #[test]
    fn streamed_order_is_the_materialised_one() {
        for (lines, lpg, seed) in [(0, 64, 1), (1, 64, 2), (63, 64, 3), (4096, 64, 4), (1000, 16, 5), (17, 1, 6), (100_000, 64, 0x5eed)] {
            let got = chase_order(lines, lpg, &mut Rng::new(seed));
            assert_eq!(got, materialised(lines, lpg, &mut Rng::new(seed)), "lines {lines} lpg {lpg}");
            assert_eq!(got.len(), lines);
        }
    }

    #[test]
    fn chase_is_deterministic_and_not_sequential() {
        let a = chase_order(4096, 64, &mut Rng::new(7));
        let b = chase_order(4096, 64, &mut Rng::new(7));
        assert_eq!(a, b);
        let sequential = a.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(sequential < 200, "{sequential} sequential steps");
    }

    #[test]
    fn ladder_points() {
        let l = size_ladder(1024, 65536, 64);
        assert_eq!(l.first(), Some(&1024));
        assert_eq!(l.last(), Some(&65536));
        for p in [1024u64, 2048, 4096, 32768, 65536] {
            assert!(l.contains(&p), "{p}");
        }
        assert!(l.contains(&28672) && l.contains(&40960) && l.contains(&49152));
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        assert!(l.iter().all(|s| s % 64 == 0));
        assert!(size_ladder(5000, 4000, 64).is_empty());
        assert!(!size_ladder(1, u64::MAX, 64).is_empty());
    }
}
