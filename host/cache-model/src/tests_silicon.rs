//! The profiles' TRM replacement policies and silicon mode (rule 20, `impl=silicon`): each rule
//! on the model and on the reference simulator (its own implementation), the sanitizer's
//! `masked_by` notes, and random-trace agreement with every rule on.

use super::{check_agreement, lines, random_op, run_both as run, small, Op, BASE, WB};
use crate::cache::Policy;
use crate::geometry::{Deviations, Hierarchy, HwPrefetch, Replacement, RPI5_WRITE_STREAMING_LINES};
use crate::hierarchy::{Attr, Level, LineOp, Model, Point, Totals, SERVED_MEMORY};
use crate::reference::RefModel;
use crate::sanitize::{HazardKind, SiliconRule};

const WT: Attr = Attr::NormalWriteThrough;
const NC: Attr = Attr::NormalNonCacheable;

/// The `rpi5` profile without its prefetcher, in silicon mode or not.
fn rpi5(silicon: bool) -> Hierarchy {
    let mut h = Hierarchy { hwpf: HwPrefetch::off("test"), ..Hierarchy::profile("rpi5").unwrap() };
    if silicon {
        h.silicon = Deviations::of_profile("rpi5").unwrap();
    }
    h
}

/// Every 8-byte word of `count` lines from `start`, written (a memset).
fn memset(start: u64, count: u64) -> impl Iterator<Item = (u64, bool, Attr)> {
    (0..count * 8).map(move |i| (start + 8 * i, true, WB))
}

#[test]
fn profiles_use_their_trms_policies() {
    let rpi5 = Hierarchy::profile("rpi5").unwrap();
    assert_eq!(rpi5.policy, Replacement::uniform(Policy::Plru), "A76 TRM A6.1: L1I/L1D pseudo-LRU (L2, L3: estimates)");
    assert!(rpi5.policy_ref.contains("100798") && rpi5.policy_ref.contains("estimate"));
    assert_eq!(Hierarchy::profile("dsu2x4").unwrap().policy, rpi5.policy, "the same cores");
    let rpi4 = Hierarchy::profile("rpi4").unwrap();
    assert_eq!(rpi4.policy.spelling(), "lru/lru/plru+incl/plru", "A72 TRM 7.1: L2 pseudo-LRU, inclusive of L1D");
    assert!(rpi4.policy_ref.contains("100095") && rpi4.policy_ref.contains("Inclusion property with L1 data caches"));
    for p in Hierarchy::PROFILES {
        assert_eq!(Hierarchy::profile(p).unwrap().silicon, Deviations::NONE, "{p}: arch unless impl=silicon");
    }
}

/// The A72 L2's inclusion (rule 18) under the profile's own policy: a hot line read between
/// 64 reads of lines of its L1D set and its L2 set stays in the 2-way L1D (LRU keeps it), but
/// its L2 copy is never used there, so the 16-way L2 evicts it, and the inclusive L2
/// back-invalidates the L1D copy (the next read misses), as the silicon's does; a
/// non-inclusive L2 of the same policy leaves it.
#[test]
fn rpi4_inclusive_l2_back_invalidates_the_l1d() {
    let incl = Hierarchy { hwpf: HwPrefetch::off("test"), ..Hierarchy::profile("rpi4").unwrap() };
    let not = Hierarchy { policy: Replacement { inclusive: [false; 2], ..incl.policy }, ..incl.clone() };
    for (h, back_invalidated) in [(&incl, true), (&not, false)] {
        let (mut m, mut r) = (Model::new(h, 1), RefModel::new(h, 1));
        run([(BASE, false, WB)], &mut m, &mut r);
        let t0 = m.totals();
        // 64 KiB apart: the same L1D set (256 sets) and the same L2 set (1024 sets).
        let t1 = run((1..=64u64).flat_map(|j| [(BASE + j * (64 << 10), false, WB), (BASE, false, WB)]), &mut m, &mut r);
        let hot_misses = t1.get(Level::L1D).misses - t0.get(Level::L1D).misses - 64;
        assert_eq!(hot_misses > 0, back_invalidated, "{}: {hot_misses} hot-line L1D misses", h.policy.spelling());
    }
}

/// Done means: `rpi5` in silicon mode turns a write-through window into Non-cacheable
/// behaviour (A76 TRM A7.3): reads and writes bypass, exactly as through an NC window; in arch
/// mode the WT window's reads hit.
#[test]
fn rpi5_silicon_turns_write_through_into_non_cacheable() {
    let scan = |h: &Hierarchy, attr: Attr| {
        let (mut m, mut r) = (Model::new(h, 1), RefModel::new(h, 1));
        let mut t = Totals::default();
        for _ in 0..3 {
            t = run(lines(BASE, 64, false, attr).chain(lines(BASE, 64, true, attr)), &mut m, &mut r);
        }
        // A prefetch and a DC ZVA through the window too.
        m.prefetch(0, BASE + (1 << 20), 1, false, attr);
        r.prefetch(0, BASE + (1 << 20), 1, false, attr);
        m.dc_zva(0, BASE + (2 << 20), attr);
        r.dc_zva(0, BASE + (2 << 20), attr, 64);
        m.fetch(0, BASE + (3 << 20), attr);
        r.fetch(0, BASE + (3 << 20), attr);
        assert_eq!(m.totals(), r.totals);
        (t, m.totals())
    };
    let silicon = rpi5(true);
    for wt in [WT, Attr::NormalWriteThroughTransient] {
        let (t, all) = scan(&silicon, wt);
        assert_eq!(all, scan(&silicon, NC).1, "{wt:?} on silicon: the same counts as Non-cacheable");
        assert_eq!((t.get(Level::L1D).bypass, t.get(Level::L1D).hits), (3 * 128, 0));
        assert_eq!(all.get(Level::L1I).bypass, 1, "the fetch bypasses too");
    }
    let (t, _) = scan(&rpi5(false), WT);
    assert_eq!((t.get(Level::L1D).bypass, t.get(Level::L1D).hits), (0, 2 * 64 + 3 * 64), "arch: WT reads hit, writes look up");
}

/// Done means: the lost-write mistake (DC IVAC of a dirty line) loses no data in silicon mode
/// (the dirty line is written back: DC CIVAC, A76 TRM A6.2.4), and the sanitizer still reports
/// it, with `masked_by` = `ivac-as-civac`; arch mode discards it, no note. DC ISW likewise.
#[test]
fn lost_write_is_masked_on_silicon_and_still_reported() {
    for silicon in [false, true] {
        let h = rpi5(silicon);
        let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
        m.enable_sanitizer(false, false);
        run([(BASE, true, WB)], &mut m, &mut r);
        let before = m.totals();
        m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE);
        r.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE);
        assert_eq!(m.totals(), r.totals);
        let wb = (m.totals() - before).get(Level::L1D).writebacks;
        let ev = m.take_events();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].kind, HazardKind::LostWrite, "reported in both modes");
        assert_eq!(ev[0].masked_by, silicon.then_some(SiliconRule::IvacAsCivac));
        assert_eq!(wb, u64::from(silicon), "silicon: written back (no data loss); arch: discarded");
        // The line is gone in both: an invalidate still invalidates.
        let t = run([(BASE, false, WB)], &mut m, &mut r);
        assert_eq!(t.get(Level::L1D).misses - before.get(Level::L1D).misses, 1);

        // DC ISW over the dirty line's L1D slot.
        let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
        m.enable_sanitizer(false, false);
        run([(BASE, true, WB)], &mut m, &mut r);
        let geo = h.l1d;
        let set = ((BASE >> 6) % u64::from(geo.sets)) as usize;
        let before = m.totals();
        for way in 0..geo.ways as usize {
            m.dc_set_way(0, LineOp::Invalidate, 1, set, way);
            r.dc_set_way(0, LineOp::Invalidate, 1, set, way);
        }
        assert_eq!(m.totals(), r.totals);
        let ev = m.take_events();
        assert_eq!((ev.len(), ev[0].kind, ev[0].masked_by), (1, HazardKind::LostWrite, silicon.then_some(SiliconRule::IswCleans)));
        assert_eq!((m.totals() - before).get(Level::L1D).writebacks, u64::from(silicon), "DC ISW cleans on silicon");
    }
}

/// Write streaming (A76 TRM A6.2.6): a memset of 256 KiB after a 16 KiB hot set is read leaves
/// the hot set in the 64 KiB L1D in silicon mode (after the threshold's lines the stores write
/// into L2, no linefill), and evicts it in arch mode. A strided write that leaves every line
/// partly written never streams.
#[test]
fn write_streaming_spares_the_l1d_from_a_memset() {
    let hot = (16 << 10) / 64;
    let stream = (256 << 10) / 64;
    for silicon in [false, true] {
        let h = rpi5(silicon);
        let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
        run(lines(BASE, hot, false, WB), &mut m, &mut r);
        let t0 = run(memset(BASE + (8 << 20), stream), &mut m, &mut r);
        let t1 = run(lines(BASE, hot, false, WB), &mut m, &mut r);
        let hot_misses = t1.get(Level::L1D).misses - t0.get(Level::L1D).misses;
        if silicon {
            assert_eq!(hot_misses, 0, "the hot set survives the memset");
            // The threshold's lines fill L1D; every line after it goes to L2 (8 stores a line,
            // each an L1D miss written into L2).
            let n = u64::from(RPI5_WRITE_STREAMING_LINES);
            assert_eq!(t0.served[1], (stream - n) * 8);
            assert_eq!(t0.get(Level::L2).accesses - hot, n, "no L2 demand lookups for streamed stores");
        } else {
            assert_eq!(hot_misses, hot, "arch: the memset evicts the hot set");
        }
    }
    // Every other line, 8 of its 64 bytes: never a full line, never streaming.
    let h = rpi5(true);
    let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
    let t = run((0..4096u64).map(|i| (BASE + 128 * i, true, WB)), &mut m, &mut r);
    assert_eq!((t.get(Level::L1D).misses, t.served[1]), (4096, 0), "every write filled L1D");
    // A partial line ends a run: memset 2 lines, one partial, 2 more, one partial: never N = 3.
    let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
    for k in 0..64u64 {
        let base = BASE + k * 6 * 64;
        run(memset(base, 2).chain([(base + 128, true, WB)]).chain(memset(base + 192, 2)).chain([(base + 320, true, WB)]), &mut m, &mut r);
    }
    assert_eq!(m.totals().served[1], 0, "no run of three full lines");
}

/// The plugin's shortcut defers repeated stores to a held line and hands their bytes over in
/// one `mark_l1d_dirty`: the detector counts the line as written in full just as when every
/// store reaches the model (the fast=off equality the model check relies on).
#[test]
fn deferred_stores_feed_the_write_streaming_detector() {
    let h = rpi5(true);
    let mut each = Model::new(&h, 1);
    let mut deferred = Model::new(&h, 1);
    for k in 0..16u64 {
        let line = BASE + 64 * k;
        for i in 0..8 {
            each.data(0, line + 8 * i, 8, true, WB);
        }
        match deferred.data(0, line, 8, true, WB) {
            Some(slot) => deferred.mark_l1d_dirty(0, slot, line >> 6, 0, !0xff),
            // Streaming: the write went to L2; the shortcut holds no line, every store is modelled.
            None => {
                for i in 1..8 {
                    let _ = deferred.data(0, line + 8 * i, 8, true, WB);
                }
            }
        }
    }
    // The deferred stores are L1D hits the plugin counts itself: compare what went below L1D.
    let (a, b) = (each.totals(), deferred.totals());
    assert_eq!((a.get(Level::L1D).misses, &a.levels[2..], &a.served[1..]), (b.get(Level::L1D).misses, &b.levels[2..], &b.served[1..]));
    assert!(each.totals().served[1] > 0, "streaming was reached");
}

/// Random traces with every silicon rule on (write streaming at a low threshold so runs happen
/// in small spans), every policy, one to three vCPUs: model and reference agree.
#[test]
fn agrees_with_reference_in_silicon_mode() {
    let dev = Deviations { write_streaming: Some(2), ..Deviations::of_profile("rpi5").unwrap() };
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random, Policy::Plru] {
        for (sharing, l3, vcpus) in [
            (crate::geometry::Sharing::Shared, false, 1),
            (crate::geometry::Sharing::Shared, true, 2),
            (crate::geometry::Sharing::Private, true, 3),
        ] {
            let h = Hierarchy { silicon: dev.clone(), ..small(policy, sharing, l3) };
            let mut rng = 0x5111c0 ^ vcpus as u64;
            check_agreement(&h, vcpus, (0..30_000).map(|_| random_op(&mut rng, vcpus, 8 << 10, true)));
            // Memset-like runs by every vCPU, interleaved with reads and maintenance.
            let mut ops = Vec::new();
            for k in 0..600u64 {
                let cpu = (k % vcpus as u64) as usize;
                let base = BASE + (k * 64 * 3) % (16 << 10);
                for i in 0..8 {
                    ops.push(Op::Data { cpu, pa: base + 8 * i, size: 8, write: true, attr: WB, pc: 0, nt: false });
                }
                if k % 7 == 0 {
                    ops.push(Op::DcPa { cpu, op: LineOp::Invalidate, point: Point::Coherency, pa: base });
                }
                if k % 11 == 0 {
                    ops.push(Op::Data { cpu, pa: base + 64, size: 16, write: true, attr: WB, pc: 0, nt: false });
                }
            }
            check_agreement(&h, vcpus, ops.into_iter());
        }
    }
    // And the profile itself (PLRU, rpi5's levels) with its own threshold.
    let h = rpi5(true);
    let mut rng = 99;
    check_agreement(&h, 2, (0..30_000).map(|_| random_op(&mut rng, 2, 64 << 10, true)));
    assert_eq!(SERVED_MEMORY, 3);
}
