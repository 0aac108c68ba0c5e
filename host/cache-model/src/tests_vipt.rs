//! Rule 21, a VIPT L1I: hand-computed alias cases and agreement with the reference simulator
//! (which indexes its L1I sets by the whole VA's line number, with its own code).

use super::{apply, g, random_op, small, Op, BASE, WB};
use crate::cache::{xorshift64star, Policy};
use crate::geometry::{Hierarchy, Indexing, Sharing};
use crate::hierarchy::{Level, Model};
use crate::reference::RefModel;

/// `small`'s hierarchy with an L1I of `l1i` indexed as `index`.
fn with_l1i(l1i: &str, index: Indexing, policy: Policy, sharing: Sharing, l3: bool) -> Hierarchy {
    Hierarchy { l1i: g(l1i), l1i_index: index, l1i_index_ref: "test", ..small(policy, sharing, l3) }
}

/// QEMU's cortex-a53 L1I (CCSIDR: 512 sets × 1 way × 64 B = 32 KiB, one way per 32 KiB: VA bits
/// 12..14 index it) over `small`'s lower levels.
fn a53(index: Indexing) -> Hierarchy {
    with_l1i("32K:1:64", index, Policy::Lru, Sharing::Shared, false)
}

const CODE: u64 = BASE + 0x10_0000;
/// Two VAs of `CODE`'s page whose bit 12 differs (two sets of a53's L1I), and one whose index
/// bits equal `CODE`'s (bit 15 is above the index).
const VA1: u64 = 0x8000_0000 + (CODE & 0xfff);
const VA2: u64 = VA1 + 0x1000;
const VA_SAME_SET: u64 = VA1 + 0x8000;

#[test]
fn vipt_l1i_holds_two_copies_and_ivau_leaves_the_other() {
    let mut m = Model::new(&a53(Indexing::Vipt), 1);
    assert_eq!(m.l1i_va_index_bits(), 0b111 << 6, "line-number bits 6..8 = VA bits 12..14");
    m.fetch_at(0, VA1, CODE, WB);
    m.fetch_at(0, VA2, CODE, WB);
    let t = m.totals();
    assert_eq!((t.get(Level::L1I).misses, t.get(Level::L2).misses), (2, 1), "two L1I fills, one from memory, one from L2");
    assert_eq!(m.l1i_copies(0, CODE), 2);
    m.fetch_at(0, VA_SAME_SET, CODE, WB);
    assert_eq!((m.totals().get(Level::L1I).hits, m.l1i_copies(0, CODE)), (1, 2), "same index bits: the same copy");
    m.ic_invalidate_va(0, VA1, CODE);
    assert_eq!(m.l1i_copies(0, CODE), 1, "IC IVAU by VA1 leaves VA2's copy");
    let notes = m.take_ic_aliases();
    assert_eq!(notes.len(), 1);
    let n = notes[0];
    assert_eq!((n.va, n.pa, n.before, n.left), (VA1 & !63, CODE & !63, 2, 1));
    assert_eq!(n.set, ((VA1 >> 6) & 511) as usize);
    assert!(m.l1i_holds_at(0, VA2, CODE) && !m.l1i_holds_at(0, VA1, CODE));
    let before = m.totals();
    m.fetch_at(0, VA2, CODE, WB);
    m.fetch_at(0, VA1, CODE, WB);
    let d = m.totals() - before;
    assert_eq!((d.get(Level::L1I).hits, d.get(Level::L1I).misses), (1, 1), "VA2 still hits, VA1 misses");
    m.ic_invalidate_all(0, false);
    assert_eq!(m.l1i_copies(0, CODE), 0, "IC IALLU empties every index");
    m.fetch_at(0, VA1, CODE, WB);
    m.ic_invalidate_va(0, VA1, CODE);
    assert!(m.take_ic_aliases().is_empty(), "no copy left: nothing to note");
}

#[test]
fn pipt_l1i_holds_one_copy() {
    let mut m = Model::new(&a53(Indexing::Pipt), 1);
    assert_eq!(m.l1i_va_index_bits(), 0);
    m.fetch_at(0, VA1, CODE, WB);
    m.fetch_at(0, VA2, CODE, WB);
    let t = m.totals();
    assert_eq!((t.get(Level::L1I).hits, t.get(Level::L1I).misses), (1, 1));
    assert_eq!(m.l1i_copies(0, CODE), 1);
    m.ic_invalidate_va(0, VA2, CODE);
    assert_eq!(m.l1i_copies(0, CODE), 0, "IC IVAU by any alias invalidates the one copy");
    assert!(m.take_ic_aliases().is_empty());
}

#[test]
fn vipt_l1i_whose_way_fits_a_page_is_pipt() {
    // 4 KiB per way: every index bit is in the page offset.
    let mut m = Model::new(&with_l1i("16K:4:64", Indexing::Vipt, Policy::Lru, Sharing::Shared, false), 1);
    assert_eq!(m.l1i_va_index_bits(), 0);
    m.fetch_at(0, VA1, CODE, WB);
    m.fetch_at(0, VA2, CODE, WB);
    assert_eq!((m.totals().get(Level::L1I).hits, m.l1i_copies(0, CODE)), (1, 1));
}

#[test]
fn vipt_broadcast_ivau_reaches_each_vcpus_indexed_copy() {
    let mut m = Model::new(&a53(Indexing::Vipt), 2);
    m.fetch_at(0, VA1, CODE, WB);
    m.fetch_at(1, VA2, CODE, WB);
    m.fetch_at(1, VA1, CODE, WB);
    m.ic_invalidate_va(0, VA1, CODE);
    assert_eq!((m.l1i_copies(0, CODE), m.l1i_copies(1, CODE)), (0, 1), "vCPU 1's VA2 copy stays");
    let n = m.take_ic_aliases();
    assert_eq!((n[0].before, n[0].left), (3, 1));
}

/// A random trace with instruction fetches and IC IVAUs through aliases: VAs whose page number
/// differs from the PA's in the bits that index the L1I (and above).
fn alias_op(rng: &mut u64, vcpus: usize, span: u64) -> Op {
    let pick = xorshift64star(rng) % 100;
    let pa = BASE + xorshift64star(rng) % span;
    let cpu = (xorshift64star(rng) % vcpus as u64) as usize;
    let va = (pa & 0xfff) | ((xorshift64star(rng) % 16) << 12) | 0x7000_0000;
    match pick {
        0..=17 => Op::FetchVa { cpu, va, pa },
        18..=20 => Op::IcVa { cpu, va, pa },
        _ => random_op(rng, vcpus, span, true),
    }
}

#[test]
fn vipt_agrees_with_reference_on_random_traces() {
    let mut total = 0;
    for (l1i, policy, sharing, l3, vcpus) in [
        ("32K:1:64", Policy::Lru, Sharing::Shared, false, 1),
        ("16K:2:64", Policy::Fifo, Sharing::Shared, true, 2),
        ("24K:3:64", Policy::Plru, Sharing::Private, true, 3),
        ("32K:2:32", Policy::Random, Sharing::Shared, false, 2),
    ] {
        for index in Indexing::ALL {
            let h = with_l1i(l1i, index, policy, sharing, l3);
            let mut m = Model::new(&h, vcpus);
            let mut r = RefModel::new(&h, vcpus);
            let mut rng = 0x5eed ^ u64::from(h.l1i.sets);
            for n in 1..=30_000u64 {
                let op = alias_op(&mut rng, vcpus, 32 << 10);
                apply(&mut m, &mut r, op, u64::from(h.zva_bytes));
                if n % 499 == 0 {
                    assert_eq!(m.totals(), r.totals, "diverged after {n} operations (last {op:?}) with {index:?} {l1i}");
                    if let Op::FetchVa { cpu, pa, .. } | Op::IcVa { cpu, pa, .. } = op {
                        assert_eq!(m.l1i_copies(cpu, pa), r.l1i_copies(cpu, pa), "copies of {pa:#x} after {n} operations");
                    }
                }
                total += 1;
            }
            assert_eq!(m.totals(), r.totals, "diverged at the end with {index:?} {l1i}");
        }
    }
    assert_eq!(total, 8 * 30_000);
}

/// Rule 21 with the sanitizer: code rewritten after it was fetched through two aliases, cleaned
/// to PoU and invalidated by one VA only. Fetching through the other VA hits the old copy (a
/// stale-instruction, cause `write-ivau-other-alias`); through the invalidated VA it is fresh.
/// PIPT: the one IVAU reaches the one copy, nothing is reported.
#[test]
fn vipt_ivau_by_one_alias_leaves_stale_code_at_the_other() {
    use crate::hierarchy::{Hint, LineOp, Point};
    use crate::sanitize::HazardKind::StaleInstruction;
    for index in Indexing::ALL {
        let mut m = Model::new(&a53(index), 1);
        m.enable_sanitizer(false, false);
        m.fetch_at(0, VA1, CODE, WB);
        m.fetch_at(0, VA2, CODE, WB);
        m.data_hint(0, CODE, 4, true, WB, Hint { pc: 0x40, nt: false });
        m.dc_by_pa(0, LineOp::Clean, Point::Unification, CODE);
        m.ic_invalidate_va(0, VA1, CODE);
        m.fetch_at(0, VA1, CODE, WB);
        assert!(m.take_events().is_empty(), "{index:?}: the invalidated alias fetches the new code");
        m.fetch_at(0, VA2, CODE, WB);
        let e = m.take_events();
        if index == Indexing::Vipt {
            assert_eq!(e.len(), 1, "{e:?}");
            assert_eq!(
                (e[0].kind, e[0].pa, e[0].cause, e[0].cause_pc),
                (StaleInstruction, CODE & !63, crate::sanitize::HazardCause::WriteIvauOtherAlias, 0x40)
            );
            // IC IVAU by the second VA too (or IC IALLU) is the fix.
            m.ic_invalidate_va(0, VA2, CODE);
            m.fetch_at(0, VA2, CODE, WB);
            assert!(m.take_events().is_empty());
        } else {
            assert!(e.is_empty(), "PIPT: {e:?}");
        }
    }
}
