//! Rule 19 (clusters): the in-cluster / cross-cluster split of the coherence counts, the
//! hand-overs and their modelled cycles, checked by hand and against the reference simulator.

use super::*;
use crate::model_records::phase_cycles;
use crate::topology::{ClusterCache, HandOver, Interconnect};

/// The `dsu2x4` profile without its hardware prefetcher.
fn dsu2x4() -> Hierarchy {
    Hierarchy { hwpf: HwPrefetch::off("test"), ..Hierarchy::profile("dsu2x4").unwrap() }
}

/// Two clusters of two: vCPUs 0, 1 | 2, 3.
fn two_by_two() -> Topology {
    Topology {
        clusters: 2,
        cores_per_cluster: 2,
        cluster_cache: ClusterCache::DsuL3SnoopFilter,
        interconnect: Interconnect::CmnSlc,
        handover: HandOver { in_cluster_cycles: Some(30), cross_cluster_cycles: Some(90), reference: "test" },
    }
}

/// `a` and `b` hand the line back and forth `n` times (read it, then write it, as the
/// kernel's core-to-core benchmark does); returns the coherence deltas and the modelled cycles.
fn ping_pong(h: &Hierarchy, vcpus: usize, a: usize, b: usize, n: u64) -> (Vec<Coherence>, u64) {
    let mut m = Model::new(h, vcpus);
    m.data(a, BASE, 8, true, WB);
    let (t0, c0) = (m.totals(), m.coherence().to_vec());
    for k in 0..n {
        let cpu = if k % 2 == 0 { b } else { a };
        m.data(cpu, BASE, 8, false, WB);
        m.data(cpu, BASE, 8, true, WB);
    }
    let d: Vec<Coherence> = m.coherence().iter().zip(&c0).map(|(x, y)| *x - *y).collect();
    let cycles = phase_cycles(&(m.totals() - t0), &d, h).1;
    (d, cycles)
}

fn sum(d: &[Coherence], f: fn(&Coherence) -> u64) -> u64 {
    d.iter().map(f).sum()
}

#[test]
fn hand_overs_split_by_cluster_and_cost_the_topologys_latency() {
    let h = dsu2x4();
    let n = 100;
    let (inside, in_cycles) = ping_pong(&h, 8, 0, 3, n);
    let (across, cross_cycles) = ping_pong(&h, 8, 0, 4, n);
    for d in [&inside, &across] {
        assert_eq!(sum(d, |c| c.interventions), n, "one intervention per hand-over");
        assert_eq!(sum(d, |c| c.invalidations), n, "one invalidation per hand-over");
        assert_eq!(sum(d, |c| c.cluster_handovers + c.cross_handovers), n, "every read is a hand-over");
    }
    assert_eq!(sum(&inside, |c| c.cross_handovers + c.cross_interventions + c.cross_invalidations), 0);
    assert_eq!(sum(&across, |c| c.cluster_handovers), 0);
    assert_eq!(sum(&across, |c| c.cross_interventions), n);
    assert_eq!(sum(&across, |c| c.cross_invalidations), n);
    // Everything else is the same access pattern: the difference is the hand-overs' price.
    let ho = &h.topology.handover;
    let extra = u64::from(ho.cross_cluster_cycles.unwrap() - ho.in_cluster_cycles.unwrap());
    assert_eq!(cross_cycles - in_cycles, n * extra);
    // An in-cluster hand-over is priced at the topology's figure, not at the L3 hit it was
    // served from (equal in this profile: 41), so the whole phase is: per hand-over one L3
    // read (41) and one L1D write hit (4).
    assert_eq!(in_cycles, n * (41 + 4));
    assert_eq!(cross_cycles, n * (103 + 4));
}

#[test]
fn one_cluster_profiles_keep_the_serving_levels_price() {
    // rpi4's and rpi5's hand-over figures are the first shared level's hit: one cluster, no
    // change to modelled time; a custom hierarchy has none at all.
    for name in ["rpi4", "rpi5"] {
        let h = Hierarchy { hwpf: HwPrefetch::off("test"), ..Hierarchy::profile(name).unwrap() };
        let (d, cycles) = ping_pong(&h, 4, 0, 3, 10);
        assert_eq!(sum(&d, |c| c.cluster_handovers), 10, "{name}");
        assert_eq!(sum(&d, |c| c.cross_handovers + c.cross_interventions + c.cross_invalidations), 0, "{name}");
        let shared = if name == "rpi4" { 21 } else { 41 };
        assert_eq!(cycles, 10 * (shared + 4), "{name}");
    }
    let h = Hierarchy { topology: Topology::generic(), ..dsu2x4() };
    let (_, cycles) = ping_pong(&h, 8, 0, 7, 10);
    assert_eq!(cycles, 10 * (41 + 4), "no topology of its own: the serving level's price");
}

#[test]
fn broadcast_maintenance_reaches_the_other_cluster() {
    let h = dsu2x4();
    let mut m = Model::new(&h, 8);
    m.data(5, BASE, 8, true, WB); // vCPU 5 (cluster 1) holds the line dirty
    m.data(1, BASE + 64, 8, false, WB); // vCPU 1 (cluster 0) holds the next line
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE);
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE + 64);
    let c = m.coherence();
    assert_eq!((c[5].remote_maint, c[5].cross_remote_maint), (1, 1), "the snoop reached cluster 1");
    assert_eq!((c[1].remote_maint, c[1].cross_remote_maint), (1, 0), "in cluster 0");
    assert!(!m.l1d(5).holds_dirty(BASE >> 6) && m.l1d(5).probe(BASE >> 6).is_none());
    assert!(m.lower_cache(0, 5).probe(BASE >> 6).is_none(), "and its private L2");
}

#[test]
fn agrees_with_reference_with_two_clusters() {
    let mut total = 0;
    for policy in [Policy::Lru, Policy::Random] {
        for (sharing, l3) in [(Sharing::Private, true), (Sharing::Shared, false), (Sharing::Private, false)] {
            let h = Hierarchy { topology: two_by_two(), ..small(policy, sharing, l3) };
            for (seed, span) in [(7u64, 4u64 << 10), (8, 16 << 10)] {
                let mut rng = seed ^ 0x5eed;
                total += check_agreement(&h, 4, (0..30_000).map(|_| random_op(&mut rng, 4, span, true)));
            }
            let m = {
                let mut m = Model::new(&h, 4);
                let mut rng = 9u64;
                for _ in 0..20_000 {
                    if let Op::Data { cpu, pa, size, write, attr, pc, nt } = random_op(&mut rng, 4, 2 << 10, false) {
                        m.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
                    }
                }
                m
            };
            let c = m.coherence();
            assert!(sum(c, |c| c.cross_handovers) > 0 && sum(c, |c| c.cluster_handovers) > 0, "both kinds occur: {c:?}");
        }
    }
    assert_eq!(total, 2 * 3 * 2 * 30_000);
}
