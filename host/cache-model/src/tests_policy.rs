//! Tree pseudo-LRU, per-level policies and inclusion: hand-computed victim sequences, and
//! agreement with the reference simulator (which implements them with its own code).

use super::{check_agreement, g, random_op, small, with_hwpf};
use crate::cache::{Cache, Policy};
use crate::geometry::{Hierarchy, HwPfKind, HwPrefetch, Latency, LowerLevel, Replacement, Sharing};

/// The victims of a one-set cache of `ways` ways for a sequence of line numbers (a hit is a
/// demand access, a miss fills).
fn victims(ways: u32, policy: Policy, seq: &[u64]) -> Vec<u64> {
    let mut c = Cache::new(6, 1, ways, policy, 1);
    let mut out = Vec::new();
    for &l in seq {
        if c.lookup(l).is_none() {
            if let (_, Some(v)) = c.insert(l, false) {
                out.push(v.line);
            }
        }
    }
    out
}

/// 4 ways, tree nodes r (ways 0-1 | 2-3), n0 (0 | 1), n1 (2 | 3); a node points to the half of
/// the next victim, a use points every node on the way's path away from it.
/// Fills 0, 1, 2, 3 go to ways 0..3 (r = 0, n0 = 0, n1 = 0 after way 3), hit 0 (r → 2-3,
/// n0 → 1). Miss 4: r → n1 → way 2 (line 2); r → 0-1, n1 → 3. Miss 5: n0 → way 1 (line 1);
/// r → 2-3, n0 → 0. Miss 6: n1 → way 3 (line 3). Miss 7: r → 0-1, n0 → way 0 (line 0).
/// True LRU would evict 1, 2, 3, 0.
#[test]
fn plru_victims_four_ways_by_hand() {
    let seq = [0, 1, 2, 3, 0, 4, 5, 6, 7];
    assert_eq!(victims(4, Policy::Plru, &seq), [2, 1, 3, 0]);
    assert_eq!(victims(4, Policy::Lru, &seq), [1, 2, 3, 0], "the sequence tells PLRU from LRU");
}

/// 8 ways, nodes 1 (0-3 | 4-7), 2 (0-1 | 2-3), 3 (4-5 | 6-7), 4..7 (pairs). After fills 0..7
/// and hits 0, 5, 3 the pointers are 1 → 4-7, 2 → 0-1, 3 → 6-7, 4 → 1, 5 → 2, 6 → 4, 7 → 6.
/// Miss 8 evicts way 6, miss 9 way 1, miss 10 way 4, miss 11 way 2, miss 12 way 7 (each use
/// flipping its path). True LRU would evict 1, 2, 4, 6, 7.
#[test]
fn plru_victims_eight_ways_by_hand() {
    let seq = [0, 1, 2, 3, 4, 5, 6, 7, 0, 5, 3, 8, 9, 10, 11, 12];
    assert_eq!(victims(8, Policy::Plru, &seq), [6, 1, 4, 2, 7]);
    assert_eq!(victims(8, Policy::Lru, &seq), [1, 2, 4, 6, 7]);
}

/// 3 ways (the Cortex-A72 L1I's): a 4-leaf tree whose fourth leaf has no way and is never
/// chosen. Fills 0, 1, 2 (root → 0-1 after way 2, n0 → 1), hit 0 (root → 2-3): miss 3 takes
/// way 2 (line 2; root → 0-1), miss 4 way 1 (line 1; root → 2-3, n0 → 0), miss 5 way 2 again
/// (line 3: the right half holds only way 2).
#[test]
fn plru_three_ways_never_picks_the_missing_way() {
    assert_eq!(victims(3, Policy::Plru, &[0, 1, 2, 0, 3, 4, 5]), [2, 1, 3]);
    // However long the trace, the cache keeps three valid lines and never reports a phantom.
    let mut c = Cache::new(6, 1, 3, Policy::Plru, 1);
    for l in 0..1000u64 {
        let l = l * 7 % 11;
        if c.lookup(l).is_none() {
            c.insert(l, false);
        }
    }
    assert_eq!(c.occupancy(), 3);
}

/// With a power-of-two associativity, a full set of `n` lines followed by `n` new lines evicts
/// every old line exactly once (each fill turns its whole path): packed trees (up to 64 leaves)
/// and wide ones (one byte per node: 128, 256). Other associativities have no such property.
#[test]
fn plru_packed_and_wide_trees_evict_each_old_line_once() {
    for ways in [2u32, 4, 8, 16, 32, 64, 128, 256] {
        let n = u64::from(ways);
        let seq: Vec<u64> = (0..2 * n).collect();
        let mut v = victims(ways, Policy::Plru, &seq);
        v.sort_unstable();
        assert_eq!(v, (0..n).collect::<Vec<_>>(), "{ways} ways");
    }
}

/// A non-temporal fill under PLRU leaves the tree pointing at it: the next miss evicts it.
#[test]
fn plru_non_temporal_fill_is_the_next_victim() {
    let mut c = Cache::new(6, 1, 4, Policy::Plru, 1);
    for l in 0..4 {
        c.insert(l, false);
    }
    let fill = crate::cache::Fill { dirty: false, prefetch: false, nt: true };
    let (_, v) = c.insert_with(10, fill);
    assert_eq!(v.map(|e| e.line), Some(0), "the tree's victim");
    assert_eq!(c.insert(11, false).1.map(|e| e.line), Some(10), "the non-temporal line goes first");
}

#[test]
fn replacement_spelling_round_trips() {
    let mixed = Replacement { l1i: Policy::Lru, l1d: Policy::Plru, lower: [Policy::Random, Policy::Fifo], inclusive: [true, false] };
    assert_eq!(mixed.spelling(), "lru/plru/random+incl/fifo");
    for r in [mixed, Replacement::uniform(Policy::Plru), Replacement { inclusive: [false, true], ..Replacement::uniform(Policy::Lru) }] {
        assert_eq!(Replacement::parse(&r.spelling()), Some(r), "{}", r.spelling());
        assert_eq!(r.name(), r.spelling());
    }
    assert_eq!(Replacement::uniform(Policy::Fifo).name(), "fifo");
    assert_eq!(Replacement::parse("lru/plru/random"), None, "L3's part is always written");
}

/// Random traces (every operation kind, several vCPUs and sharing mixes) under PLRU, and with
/// a different policy per level, against the reference simulator.
#[test]
fn plru_and_mixed_policies_agree_with_reference() {
    let mixed = Replacement { l1i: Policy::Plru, l1d: Policy::Lru, lower: [Policy::Random, Policy::Plru], inclusive: [false; 2] };
    let mut total = 0;
    for rep in [Replacement::uniform(Policy::Plru), mixed] {
        for (sharing, l3, vcpus) in [(Sharing::Shared, false, 1), (Sharing::Shared, true, 2), (Sharing::Private, true, 3)] {
            for hwpf in [HwPfKind::Off, HwPfKind::Stride] {
                let h = Hierarchy { policy: rep, ..with_hwpf(small(Policy::Lru, sharing, l3), hwpf, 1, 2) };
                for (seed, span, mixed_attrs) in [(1u64, 16 << 10, true), (2, 4 << 10, true), (3, 64 << 10, false)] {
                    let mut rng = seed ^ 0x5eed;
                    total += check_agreement(&h, vcpus, (0..20_000).map(|_| random_op(&mut rng, vcpus, span, mixed_attrs)));
                }
            }
        }
    }
    assert_eq!(total, 2 * 3 * 2 * 3 * 20_000);
}

/// PLRU over odd and wide associativities: 3-way L1D and L1I, a 32-way L2 and a 128-way L3
/// (one byte per tree node).
#[test]
fn plru_agrees_with_reference_with_odd_and_wide_ways() {
    let h = Hierarchy {
        l1i: g("768:3:64"),
        l1i_index: crate::geometry::Indexing::Pipt,
        l1i_index_ref: "test",
        l1d: g("1536:3:64"),
        lower: vec![
            LowerLevel { geometry: g("8K:32:64"), sharing: Sharing::Private },
            LowerLevel { geometry: g("32K:128:64"), sharing: Sharing::Shared },
        ],
        policy: Policy::Plru.into(),
        seed: 5,
        zva_bytes: 64,
        hwpf: HwPrefetch::off("test"),
        latency: Latency::generic(),
        topology: crate::topology::Topology::generic(),
        policy_ref: "test",
        silicon: crate::geometry::Deviations::NONE,
    };
    for (seed, span) in [(11u64, 16u64 << 10), (12, 96 << 10)] {
        let mut rng = seed;
        check_agreement(&h, 2, (0..40_000).map(|_| random_op(&mut rng, 2, span, true)));
    }
}

/// `small` with the L2 (and the L3, if any) inclusive of L1D.
fn inclusive(policy: Policy, sharing: Sharing, l3: bool) -> Hierarchy {
    let h = small(policy, sharing, l3);
    Hierarchy { policy: Replacement { inclusive: [true, l3], ..h.policy }, ..h }
}

/// Rule 18 by hand: L1D 2-way and L2 4-way, both 8 sets of 64-byte lines, so lines 512 bytes
/// apart share a set in both. A written line that keeps hitting in L1D is never touched in L2,
/// so the fifth line of the set evicts it there: an inclusive L2 takes the L1D copy with it
/// (its dirty data leaves with the L2 victim: one L1D and one L2 write-back), and the next read
/// misses; a non-inclusive L2 leaves L1D alone.
#[test]
fn inclusive_l2_back_invalidates_a_dirty_l1d_line() {
    use crate::hierarchy::{Attr, Level, Model};
    const BASE: u64 = 0x4000_0000;
    let run = |h: &Hierarchy| {
        let mut m = Model::new(h, 1);
        let a = BASE;
        m.data(0, a, 8, true, Attr::NormalWriteBack);
        for k in 1..=4u64 {
            m.data(0, BASE + 512 * k, 8, false, Attr::NormalWriteBack);
            m.data(0, a, 8, false, Attr::NormalWriteBack);
        }
        m.totals()
    };
    let plain = run(&small(Policy::Lru, Sharing::Shared, false));
    let incl = run(&inclusive(Policy::Lru, Sharing::Shared, false));
    let (l1, l2) = (|t: &crate::hierarchy::Totals| *t.get(Level::L1D), |t: &crate::hierarchy::Totals| *t.get(Level::L2));
    // Non-inclusive: A misses once, then hits 4 times; B..E miss once each.
    assert_eq!((l1(&plain).misses, l1(&plain).hits, l1(&plain).writebacks), (5, 4, 0));
    assert_eq!((l2(&plain).misses, l2(&plain).writebacks), (5, 0));
    // Inclusive: E's L2 fill evicts A from L2 and L1D (dirty: written back), A's last read misses.
    assert_eq!((l1(&incl).misses, l1(&incl).hits, l1(&incl).writebacks), (6, 3, 1));
    assert_eq!((l2(&incl).misses, l2(&incl).writebacks), (6, 1));
    // Against the reference too.
    let mut rng = 3u64;
    let ops = (0..2000).map(|_| random_op(&mut rng, 1, 4 << 10, false));
    check_agreement(&inclusive(Policy::Lru, Sharing::Shared, false), 1, ops);
}

/// Rule 18 against the reference on random traces: inclusive L2 (shared and private) and an
/// inclusive L3 with twice the L1D's line (two L1D lines per victim), every policy, one to
/// three vCPUs (back-invalidation reaching other vCPUs' L1Ds), with and without a prefetcher.
#[test]
fn inclusion_agrees_with_reference_on_random_traces() {
    let mut total = 0;
    for policy in Policy::ALL {
        for (sharing, l3, vcpus) in
            [(Sharing::Shared, false, 1), (Sharing::Shared, true, 2), (Sharing::Private, true, 3), (Sharing::Shared, false, 4)]
        {
            for hwpf in [HwPfKind::Off, HwPfKind::NextLine] {
                let h = with_hwpf(inclusive(policy, sharing, l3), hwpf, 1, 2);
                for (seed, span, mixed) in [(7u64, 8 << 10, true), (8, 2 << 10, true), (9, 32 << 10, false)] {
                    let mut rng = seed ^ policy as u64;
                    total += check_agreement(&h, vcpus, (0..15_000).map(|_| random_op(&mut rng, vcpus, span, mixed)));
                }
            }
        }
    }
    assert_eq!(total, 4 * 4 * 2 * 3 * 15_000);
}

/// The core's cost per line access, LRU against tree PLRU (`--ignored --nocapture`, release):
/// an L1 hit loop, an L2 hit loop and an 8 MiB stream and random chase that miss both, under
/// the guest-like shape (L1D 32 KiB 4-way, L2 1 MiB 16-way). Best of 9. A measurement, no
/// assertion on times.
#[test]
#[ignore]
fn policy_core_speed() {
    use crate::cache::xorshift64star;
    use crate::hierarchy::{Attr, Model};
    const BASE: u64 = 0x4000_0000;
    let base = Hierarchy { l1d: g("32K:4:64"), hwpf: HwPrefetch::off("test"), ..Hierarchy::profile("rpi4").unwrap() };
    for (name, bytes, random) in [
        ("L1 hit (16 KiB)", 16u64 << 10, false),
        ("L2 hit (512 KiB)", 512 << 10, false),
        ("miss (8 MiB stream)", 8 << 20, false),
        ("miss (8 MiB chase)", 8 << 20, true),
    ] {
        let mut row = format!("{name:22}");
        for policy in [Policy::Lru, Policy::Plru] {
            let h = Hierarchy { policy: policy.into(), ..base.clone() };
            let mut m = Model::new(&h, 1);
            let lines = 16u64 << 20 >> 6;
            let mut best = f64::MAX;
            let mut rng = 9u64;
            for _ in 0..9 {
                let t = std::time::Instant::now();
                let mut a = 0;
                for _ in 0..lines {
                    let pa = if random { xorshift64star(&mut rng) % bytes / 64 * 64 } else { a };
                    m.data(0, BASE + pa, 8, false, Attr::NormalWriteBack);
                    a = (a + 64) % bytes;
                }
                best = best.min(t.elapsed().as_nanos() as f64 / lines as f64);
            }
            row += &format!("  {}: {best:5.1} ns", policy.name());
        }
        eprintln!("{row}");
    }
}
