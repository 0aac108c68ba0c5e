//! Behaviour tests of the simulator core, and agreement with the reference simulator.

use crate::cache::{xorshift64star, Policy};
use crate::decode::{decode_set_way, encode_set_way};
use crate::geometry::{Deviations, Geometry, Hierarchy, HwPfKind, HwPrefetch, Latency, LowerLevel, Replacement, Sharing};
use crate::hierarchy::{Attr, Coherence, Hint, Level, LineOp, Model, Point, Totals};
use crate::reference::RefModel;
use crate::topology::Topology;
use cachescope_arch::hazard::HazardAccess;

const WB: Attr = Attr::NormalWriteBack;
const BASE: u64 = 0x4000_0000;

fn g(s: &str) -> Geometry {
    Geometry::parse(s).unwrap()
}

/// L1 32 KiB 2-way, L2 1 MiB 16-way (the Pi 4), without its hardware prefetcher.
fn rpi4() -> Hierarchy {
    // The rules' tests use LRU with nothing inclusive (the profile's own TRM policies are
    // tested in tests_silicon.rs).
    Hierarchy { hwpf: HwPrefetch::off("test"), policy: Policy::Lru.into(), ..Hierarchy::profile("rpi4").unwrap() }
}

fn small(policy: Policy, sharing: Sharing, l3: bool) -> Hierarchy {
    let mut lower = vec![LowerLevel { geometry: g("2K:4:64"), sharing }];
    if l3 {
        lower.push(LowerLevel { geometry: g("8K:8:128"), sharing: Sharing::Shared });
    }
    Hierarchy {
        l1i: g("512:2:32"),
        l1i_index: crate::geometry::Indexing::Pipt,
        l1i_index_ref: "test",
        l1d: g("1K:2:64"),
        lower,
        policy: policy.into(),
        seed: 42,
        zva_bytes: 128,
        hwpf: HwPrefetch::off("test"),
        latency: Latency::generic(),
        topology: Topology::generic(),
        policy_ref: "test",
        silicon: crate::geometry::Deviations::NONE,
    }
}

fn with_hwpf(mut h: Hierarchy, kind: HwPfKind, distance: u32, degree: u32) -> Hierarchy {
    h.hwpf = HwPrefetch { kind, distance, degree, reference: "test".into() };
    h
}

/// Runs `(pa, write, attr)` accesses of 8 bytes on the model and on the reference simulator;
/// returns the totals after checking that both agree.
fn run_both(accesses: impl IntoIterator<Item = (u64, bool, Attr)>, m: &mut Model, r: &mut RefModel) -> Totals {
    for (pa, write, attr) in accesses {
        m.data(0, pa, 8, write, attr);
        r.data(0, pa, 8, write, attr);
    }
    assert_eq!(m.totals(), r.totals, "model and reference disagree");
    m.totals()
}

/// One access of each of `count` consecutive 64-byte lines from `start`.
fn lines(start: u64, count: u64, write: bool, attr: Attr) -> impl Iterator<Item = (u64, bool, Attr)> {
    (0..count).map(move |i| (start + 64 * i, write, attr))
}

/// The guest profile's shape: the QEMU cortex-a72's CCSIDR (L1D 32 KiB 4-way), no prefetcher.
fn guest() -> Hierarchy {
    let mut h = rpi4();
    h.l1d = g("32K:4:64");
    h.hwpf = HwPrefetch::off("test");
    h
}

fn scan(m: &mut Model, base: u64, bytes: u64, step: u64, write: bool, attr: Attr) -> Totals {
    let before = m.totals();
    for a in (base..base + bytes).step_by(step as usize) {
        m.data(0, a, 8, write, attr);
    }
    m.totals() - before
}

#[test]
fn cold_sequential_scan_misses_once_per_line() {
    for &bytes in &[64u64, 4096, 32 << 10, 256 << 10] {
        let mut m = Model::new(&rpi4(), 1);
        let t = scan(&mut m, BASE, bytes, 8, false, WB);
        let l1 = t.get(Level::L1D);
        assert_eq!(l1.accesses, bytes / 8);
        assert_eq!(l1.misses, bytes / 64, "{bytes} B");
        assert_eq!(l1.hits, bytes / 8 - bytes / 64);
        assert_eq!(t.get(Level::L2).accesses, bytes / 64);
        assert_eq!(t.get(Level::L2).misses, bytes / 64);
    }
}

#[test]
fn second_pass_hits_when_the_buffer_fits() {
    let mut m = Model::new(&rpi4(), 1);
    scan(&mut m, BASE, 32 << 10, 64, false, WB);
    let t = scan(&mut m, BASE, 32 << 10, 64, false, WB);
    assert_eq!(t.get(Level::L1D).hits, 512);
    assert_eq!(t.get(Level::L1D).misses, 0);
    assert_eq!(t.get(Level::L2).accesses, 0);
}

#[test]
fn lru_set_conflict() {
    // 2-way L1D with 256 sets: addresses 16 KiB apart share a set.
    let way_stride = 16 << 10;
    let (a, b, c) = (BASE, BASE + way_stride, BASE + 2 * way_stride);
    for (policy, survivor, victim) in [(Policy::Lru, a, b), (Policy::Fifo, b, a)] {
        let mut h = rpi4();
        h.policy = policy.into();
        let mut m = Model::new(&h, 1);
        for x in [a, b, a, c] {
            m.data(0, x, 8, false, WB);
        }
        let before = m.totals();
        m.data(0, survivor, 8, false, WB);
        assert_eq!((m.totals() - before).get(Level::L1D).hits, 1, "{policy:?}: survivor hits");
        let before = m.totals();
        m.data(0, victim, 8, false, WB);
        assert_eq!((m.totals() - before).get(Level::L1D).misses, 1, "{policy:?}: victim was evicted");
        assert_eq!((m.totals() - before).get(Level::L2).hits, 1, "{policy:?}: … but is still in L2");
    }
}

#[test]
fn working_set_larger_than_capacity_thrashes() {
    let mut m = Model::new(&rpi4(), 1);
    // 48 KiB > 32 KiB L1D: cyclic access under LRU misses every line on every pass.
    scan(&mut m, BASE, 48 << 10, 64, false, WB);
    let t = scan(&mut m, BASE, 48 << 10, 64, false, WB);
    assert_eq!(t.get(Level::L1D).misses, 768);
    assert_eq!(t.get(Level::L1D).hits, 0);
    assert_eq!(t.get(Level::L2).hits, 768, "fits in L2");
    // 2 MiB > 1 MiB L2 thrashes L2 too.
    scan(&mut m, BASE, 2 << 20, 64, false, WB);
    let t = scan(&mut m, BASE, 2 << 20, 64, false, WB);
    assert_eq!(t.get(Level::L2).hits, 0);
    assert_eq!(t.get(Level::L2).misses, 32768);
}

#[test]
fn invalidate_by_address_empties_every_level() {
    let mut m = Model::new(&rpi4(), 1);
    scan(&mut m, BASE, 8 << 10, 64, true, WB);
    let before = m.totals();
    for a in (BASE..BASE + (8 << 10)).step_by(64) {
        m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, a);
    }
    let t = m.totals() - before;
    assert_eq!(t.get(Level::L1D).writebacks, 128, "every written line was dirty in L1D");
    assert_eq!(t.get(Level::L2).writebacks, 0, "L2 held them clean");
    assert_eq!(t.get(Level::L1D).maint, 128);
    assert_eq!(t.get(Level::L2).maint, 128);
    let t = scan(&mut m, BASE, 8 << 10, 64, false, WB);
    assert_eq!(t.get(Level::L1D).misses, 128);
    assert_eq!(t.get(Level::L2).misses, 128);
    // Invalidate discards dirty data: no write-backs.
    scan(&mut m, BASE, 4 << 10, 64, true, WB);
    let before = m.totals();
    for a in (BASE..BASE + (4 << 10)).step_by(64) {
        m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, a);
    }
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 0);
    // Clean to PoU writes L1D lines back into L2 and keeps them.
    scan(&mut m, BASE, 4 << 10, 64, true, WB);
    let before = m.totals();
    for a in (BASE..BASE + (4 << 10)).step_by(64) {
        m.dc_by_pa(0, LineOp::Clean, Point::Unification, a);
    }
    let t = m.totals() - before;
    assert_eq!((t.get(Level::L1D).writebacks, t.get(Level::L2).maint), (64, 0));
    assert_eq!(scan(&mut m, BASE, 4 << 10, 64, false, WB).get(Level::L1D).hits, 64);
}

/// Every set/way of every level, as a kernel's walker does it, through the operand encoding.
fn set_way_walk(m: &mut Model, op: LineOp) -> u64 {
    set_way_walk_to(m, op, 1 + m.lower_levels() as u32)
}

/// A set/way walk over levels 1..=`loc` (the guest's walk to its LoC; 0 = nothing).
fn set_way_walk_to(m: &mut Model, op: LineOp, loc: u32) -> u64 {
    let mut n = 0;
    for level in 1..=loc {
        let geo = m.data_level_geometry(level).unwrap();
        for way in 0..geo.ways {
            for set in 0..geo.sets {
                let sw = decode_set_way(encode_set_way(level, set, way, geo.line, geo.ways), geo.line, geo.sets, geo.ways);
                m.dc_set_way(0, op, sw.level, sw.set as usize, sw.way as usize);
                n += 1;
            }
        }
    }
    n
}

#[test]
fn invalidate_by_set_way_empties_every_level() {
    let mut m = Model::new(&rpi4(), 1);
    scan(&mut m, BASE, 16 << 10, 64, true, WB);
    assert_eq!(scan(&mut m, BASE, 16 << 10, 64, false, WB).get(Level::L1D).misses, 0);
    let before = m.totals();
    let ops = set_way_walk(&mut m, LineOp::CleanInvalidate);
    let t = m.totals() - before;
    assert_eq!(ops, 512 + 16384);
    assert_eq!(t.get(Level::L1D).maint, 512);
    assert_eq!(t.get(Level::L1D).writebacks, 256, "the dirty L1D lines went to L2 …");
    assert_eq!(t.get(Level::L2).writebacks, 256, "… and from L2 to memory");
    let t = scan(&mut m, BASE, 16 << 10, 64, false, WB);
    assert_eq!((t.get(Level::L1D).misses, t.get(Level::L2).misses), (256, 256), "next pass misses on every line");
    // Clean only: lines stay, write-backs happen once.
    scan(&mut m, BASE, 16 << 10, 64, true, WB);
    let before = m.totals();
    set_way_walk(&mut m, LineOp::Clean);
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 256);
    assert_eq!(scan(&mut m, BASE, 16 << 10, 64, false, WB).get(Level::L1D).hits, 256);
    // Out-of-range set/way or level: counted, no effect.
    m.dc_set_way(0, LineOp::Invalidate, 1, 9999, 0);
    m.dc_set_way(0, LineOp::Invalidate, 5, 0, 0);
    assert_eq!(scan(&mut m, BASE, 16 << 10, 64, false, WB).get(Level::L1D).hits, 256);
}

#[test]
fn write_through_never_writes_back() {
    for (attr, want_wb) in [(Attr::NormalWriteBack, 512u64), (Attr::NormalWriteThrough, 0)] {
        let mut m = Model::new(&rpi4(), 1);
        scan(&mut m, BASE, 32 << 10, 64, false, attr); // bring the lines in (reads allocate)
        let w = scan(&mut m, BASE, 32 << 10, 64, true, attr);
        assert_eq!(w.get(Level::L1D).hits, 512, "{attr:?}");
        let wt_l2 = if attr == Attr::NormalWriteThrough { 512 } else { 0 };
        assert_eq!(w.get(Level::L2).accesses, wt_l2, "{attr:?}: write-through writes reach L2");
        // Evict everything by reading another 2 MiB.
        let t = scan(&mut m, BASE + (64 << 20), 2 << 20, 64, false, Attr::NormalWriteBack);
        assert_eq!(t.get(Level::L1D).writebacks, want_wb, "{attr:?}");
        assert_eq!(t.get(Level::L2).writebacks, want_wb, "{attr:?}");
    }
    // A write-through write miss allocates nothing.
    let mut m = Model::new(&rpi4(), 1);
    let t = scan(&mut m, BASE, 4096, 64, true, Attr::NormalWriteThrough);
    assert_eq!((t.get(Level::L1D).misses, t.get(Level::L2).misses), (64, 64));
    assert_eq!(m.l1d(0).occupancy(), 0);
}

#[test]
fn non_cacheable_and_device_bypass() {
    let mut m = Model::new(&rpi4(), 1);
    for attr in [Attr::NormalNonCacheable, Attr::Device] {
        let t = scan(&mut m, BASE, 4096, 8, false, attr);
        assert_eq!(t.get(Level::L1D).bypass, 512);
        assert_eq!(t.get(Level::L1D).accesses + t.get(Level::L2).accesses, 0);
    }
    m.fetch(0, BASE, Attr::NormalNonCacheable);
    assert_eq!(m.totals().get(Level::L1I).bypass, 1);
}

#[test]
fn zva_allocates_dirty_without_reading() {
    let mut m = Model::new(&rpi4(), 1);
    let before = m.totals();
    for a in (BASE..BASE + 4096).step_by(64) {
        m.dc_zva(0, a, WB);
    }
    let t = m.totals() - before;
    assert_eq!((t.get(Level::L1D).maint, t.get(Level::L1D).accesses, t.get(Level::L2).accesses), (64, 0, 0));
    assert_eq!(scan(&mut m, BASE, 4096, 64, false, WB).get(Level::L1D).hits, 64);
    let before = m.totals();
    set_way_walk(&mut m, LineOp::Clean);
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 64, "zeroed lines are dirty");
    m.dc_zva(0, BASE, Attr::Device);
    assert_eq!(m.totals().get(Level::L1D).bypass, 1);
}

#[test]
fn instruction_cache_invalidation() {
    let mut m = Model::new(&rpi4(), 2);
    for cpu in 0..2 {
        m.fetch(cpu, BASE, WB);
    }
    assert!(m.l1i_holds(0, BASE) && m.l1i_holds(1, BASE));
    m.ic_invalidate_all(0, false);
    assert!(!m.l1i_holds(0, BASE) && m.l1i_holds(1, BASE), "IALLU: this vCPU only");
    m.fetch(0, BASE, WB);
    m.ic_invalidate_pa(0, BASE + 8);
    assert!(!m.l1i_holds(0, BASE) && !m.l1i_holds(1, BASE), "IVAU: every vCPU");
    m.fetch(1, BASE, WB);
    m.ic_invalidate_all(0, true);
    assert!(!m.l1i_holds(1, BASE), "IALLUIS: every vCPU");
    assert_eq!(m.totals().get(Level::L1I).maint, 3);
}

#[test]
fn unaligned_access_touches_two_lines() {
    let mut m = Model::new(&rpi4(), 1);
    assert_eq!(m.data(0, BASE + 60, 8, false, WB), None);
    assert_eq!(m.totals().get(Level::L1D).accesses, 2);
    assert!(m.data(0, BASE + 8, 8, false, WB).is_some());
}

// ---- prefetch, non-temporal fills, latency -------------------------------------------------------

#[test]
fn software_prefetch_fills_the_named_level_and_below() {
    let mut m = Model::new(&rpi4(), 1);
    m.prefetch(0, BASE, 1, false, WB);
    let t = m.totals();
    assert_eq!((t.get(Level::L1D).prefetches, t.get(Level::L2).prefetches), (1, 1));
    assert_eq!((t.get(Level::L1D).accesses, t.get(Level::L2).accesses), (0, 0), "not a demand access");
    m.prefetch(0, BASE + 8, 1, false, WB);
    assert_eq!(m.totals().get(Level::L1D).prefetches, 1, "already present: not counted");
    let d = scan(&mut m, BASE, 64, 8, false, WB);
    assert_eq!((d.get(Level::L1D).hits, d.get(Level::L1D).prefetch_hits), (8, 1), "one prefetch hit per fill");
    // PLDL2KEEP: L2 only; the demand access misses L1D and hits the prefetched L2 line.
    m.prefetch(0, BASE + 4096, 2, false, WB);
    let d = scan(&mut m, BASE + 4096, 64, 64, false, WB);
    assert_eq!((d.get(Level::L1D).misses, d.get(Level::L2).hits, d.get(Level::L2).prefetch_hits), (1, 1, 1));
    // L3 on a hierarchy without one: the deepest level (L2).
    m.prefetch(0, BASE + 8192, 3, false, WB);
    assert_eq!(m.totals().get(Level::L2).prefetches, 3);
    // Found in L2: only L1D fills.
    m.prefetch(0, BASE + 8192, 1, false, WB);
    assert_eq!((m.totals().get(Level::L1D).prefetches, m.totals().get(Level::L2).prefetches), (2, 3));
    // Non-cacheable memory: nothing.
    let before = m.totals();
    m.prefetch(0, BASE + 12288, 1, false, Attr::NormalNonCacheable);
    m.prefetch(0, BASE + 12288, 1, false, Attr::Device);
    assert_eq!(m.totals(), before);
}

#[test]
fn non_temporal_fill_is_the_next_victim() {
    // 2-way L1D, 256 sets: lines 16 KiB apart share a set.
    let way = 16 << 10;
    for (nt, survivor) in [(false, BASE + way), (true, BASE)] {
        let mut m = Model::new(&rpi4(), 1);
        m.data(0, BASE, 8, false, WB);
        m.data_hint(0, BASE + way, 8, false, WB, Hint { pc: 0, nt });
        // LRU would now evict BASE (older); a non-temporal BASE + way goes first instead.
        m.data(0, BASE + 2 * way, 8, false, WB);
        let before = m.totals();
        m.data(0, survivor, 8, false, WB);
        assert_eq!((m.totals() - before).get(Level::L1D).hits, 1, "nt={nt}");
    }
    // PRFM …STRM likewise.
    let mut m = Model::new(&rpi4(), 1);
    m.data(0, BASE, 8, false, WB);
    m.prefetch(0, BASE + way, 1, true, WB);
    m.data(0, BASE + 2 * way, 8, false, WB);
    assert!(m.l1d(0).probe(BASE >> 6).is_some() && m.l1d(0).probe((BASE + way) >> 6).is_none());
}

#[test]
fn hardware_prefetchers_cut_stream_misses_within_pages() {
    let run = |kind, stride: u64| {
        let mut m = Model::new(&with_hwpf(rpi4(), kind, 2, 2), 1);
        let before = m.totals();
        for i in 0..4096u64 {
            m.data_hint(0, BASE + i * stride, 8, false, WB, Hint { pc: 0x100, nt: false });
        }
        m.totals() - before
    };
    let off = run(HwPfKind::Off, 64);
    assert_eq!(off.get(Level::L1D).misses, 4096);
    for kind in [HwPfKind::NextLine, HwPfKind::Stride] {
        let t = run(kind, 64);
        let l1 = t.get(Level::L1D);
        // A few misses per 4 KiB page (64 lines) while the prefetcher catches up again.
        assert!(l1.misses <= 64 * 4 && l1.misses > 0, "{kind:?}: {l1:?}");
        assert_eq!(l1.prefetch_hits + l1.misses, 4096, "{kind:?}: every line is a miss or a prefetch hit");
        // Strides of a page or more: every access still misses (conflict sweeps stay exact); the
        // stride prefetcher does not even prefetch (its target is in another page).
        let t = run(kind, 4096);
        assert_eq!(t.get(Level::L1D).misses, 4096, "{kind:?}");
        if kind == HwPfKind::Stride {
            assert_eq!(t.get(Level::L1D).prefetches, 0);
        }
    }
}

#[test]
fn stream_prefetch_variants_miss_less_than_plain_loads() {
    // The stream benchmark's loops over 1 MiB in the guest geometry (no hardware prefetcher):
    // PLDL1STRM 256 bytes ahead removes nearly every L1D demand miss, PLDL2KEEP the L2 ones.
    let run = |prefetch: Option<(u32, bool)>| {
        let mut m = Model::new(&guest(), 1);
        for a in (BASE..BASE + (1 << 20)).step_by(64) {
            if let Some((level, strm)) = prefetch {
                m.prefetch(0, a + 256, level, strm, WB);
            }
            for k in 0..4 {
                m.data(0, a + 16 * k, 16, false, WB);
            }
        }
        m.totals()
    };
    let plain = run(None);
    let l1strm = run(Some((1, true)));
    let l2keep = run(Some((2, false)));
    assert_eq!(plain.get(Level::L1D).misses, 16384);
    assert_eq!(l1strm.get(Level::L1D).misses, 4, "only the first 256 bytes");
    assert_eq!(l1strm.get(Level::L1D).prefetch_hits, 16380);
    assert_eq!(l2keep.get(Level::L1D).misses, 16384, "PLDL2 does not fill L1D");
    assert_eq!((l2keep.get(Level::L2).misses, l2keep.get(Level::L2).prefetch_hits), (4, 16380));
    let lat = Latency::generic();
    let cyc = |t: &Totals| crate::model_records::modelled_cycles(t, &lat).1;
    assert!(cyc(&l1strm) < cyc(&l2keep) && cyc(&l2keep) < cyc(&plain));
}

#[test]
fn served_counts_price_each_access_by_its_level() {
    let mut m = Model::new(&rpi4(), 1);
    m.data(0, BASE, 8, false, WB); // memory
    m.data(0, BASE, 8, false, WB); // L1D
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE);
    m.data(0, BASE + 64, 16, false, Attr::NormalNonCacheable); // bypass: memory
    m.data(0, BASE + 60, 8, false, WB); // two lines: L1D (BASE) and memory (BASE + 64)
    m.data(0, BASE + 128, 8, true, Attr::NormalWriteThrough); // write-through: memory
    let t = m.totals();
    assert_eq!(t.served, [2, 0, 0, 4]);
    // Evict BASE from L1D only (2 ways): it is then served by L2.
    let way = 16 << 10;
    m.data(0, BASE + way, 8, false, WB);
    m.data(0, BASE + 2 * way, 8, false, WB);
    let before = m.totals();
    m.data(0, BASE, 8, false, WB);
    assert_eq!((m.totals() - before).served, [0, 1, 0, 0]);
}

// ---- agreement with the reference simulator ---------------------------------------------------

/// One operation of a trace for both simulators (`FetchVa`/`IcVa`: through a VA other than the
/// PA, rule 21).
#[derive(Clone, Copy, Debug)]
enum Op {
    Data { cpu: usize, pa: u64, size: u32, write: bool, attr: Attr, pc: u64, nt: bool },
    Prefetch { cpu: usize, pa: u64, level: u32, nt: bool, attr: Attr },
    Fetch { cpu: usize, pa: u64 },
    DcPa { cpu: usize, op: LineOp, point: Point, pa: u64 },
    SetWay { cpu: usize, op: LineOp, level: u32, set: usize, way: usize },
    Zva { cpu: usize, pa: u64, attr: Attr },
    IcAll { cpu: usize, all: bool },
    IcPa { cpu: usize, pa: u64 },
    FetchVa { cpu: usize, va: u64, pa: u64 },
    IcVa { cpu: usize, va: u64, pa: u64 },
}

fn apply(m: &mut Model, r: &mut RefModel, op: Op, zva: u64) {
    match op {
        Op::Data { cpu, pa, size, write, attr, pc, nt } => {
            m.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
            r.data_hint(cpu, pa, size, write, attr, pc, nt);
        }
        Op::Prefetch { cpu, pa, level, nt, attr } => {
            m.prefetch(cpu, pa, level, nt, attr);
            r.prefetch(cpu, pa, level, nt, attr);
        }
        Op::Fetch { cpu, pa } => {
            m.fetch(cpu, pa, WB);
            r.fetch(cpu, pa, WB);
        }
        Op::DcPa { cpu, op, point, pa } => {
            m.dc_by_pa(cpu, op, point, pa);
            r.dc_by_pa(cpu, op, point, pa);
        }
        Op::SetWay { cpu, op, level, set, way } => {
            m.dc_set_way(cpu, op, level, set, way);
            r.dc_set_way(cpu, op, level, set, way);
        }
        Op::Zva { cpu, pa, attr } => {
            m.dc_zva(cpu, pa, attr);
            r.dc_zva(cpu, pa, attr, zva);
        }
        Op::IcAll { cpu, all } => {
            m.ic_invalidate_all(cpu, all);
            r.ic_invalidate_all(cpu, all);
        }
        Op::IcPa { cpu, pa } => {
            m.ic_invalidate_pa(cpu, pa);
            r.ic_invalidate_pa(cpu, pa);
        }
        Op::FetchVa { cpu, va, pa } => {
            m.fetch_at(cpu, va, pa, WB);
            r.fetch_at(cpu, va, pa, WB);
        }
        Op::IcVa { cpu, va, pa } => {
            m.ic_invalidate_va(cpu, va, pa);
            r.ic_invalidate_va(cpu, va, pa);
        }
    }
}

fn random_op(rng: &mut u64, vcpus: usize, span: u64, mixed: bool) -> Op {
    let mut r = || xorshift64star(rng);
    let cpu = (r() % vcpus as u64) as usize;
    let pa = BASE + r() % span;
    let attr = match r() % 10 {
        0 if mixed => Attr::NormalWriteThrough,
        1 if mixed => Attr::NormalNonCacheable,
        2..=6 if mixed => [
            Attr::NormalWriteBackNoWriteAllocate,
            Attr::NormalWriteBackNoReadAllocate,
            Attr::NormalWriteBackNoAllocate,
            Attr::NormalWriteBackTransient,
            Attr::NormalWriteThroughTransient,
        ][(r() % 5) as usize],
        _ => WB,
    };
    let pick = r() % 100;
    let ops = [LineOp::Clean, LineOp::Invalidate, LineOp::CleanInvalidate];
    // A few load PCs, so the stride prefetcher's table sees both repeats and conflicts.
    let pc = 0x8000 + 4 * (r() % 24);
    match pick {
        0..=64 => Op::Data { cpu, pa, size: [1, 4, 8, 16, 32][(r() % 5) as usize], write: r() % 3 == 0, attr, pc, nt: r() % 6 == 0 },
        65..=69 => Op::Prefetch { cpu, pa, level: 1 + (r() % 4) as u32, nt: r() % 2 == 0, attr },
        70..=84 => Op::Fetch { cpu, pa },
        _ if !mixed => Op::Data { cpu, pa, size: 8, write: false, attr: WB, pc, nt: false },
        85..=89 => {
            Op::DcPa { cpu, op: ops[(r() % 3) as usize], point: if r() % 4 == 0 { Point::Unification } else { Point::Coherency }, pa }
        }
        90..=93 => {
            Op::SetWay { cpu, op: ops[(r() % 3) as usize], level: 1 + (r() % 3) as u32, set: (r() % 40) as usize, way: (r() % 9) as usize }
        }
        94..=96 => Op::Zva { cpu, pa, attr },
        97 => Op::IcAll { cpu, all: r() % 2 == 0 },
        _ => Op::IcPa { cpu, pa },
    }
}

fn check_agreement(h: &Hierarchy, vcpus: usize, ops: impl Iterator<Item = Op>) -> u64 {
    let mut m = Model::new(h, vcpus);
    let mut r = RefModel::new(h, vcpus);
    let mut n = 0;
    for op in ops {
        apply(&mut m, &mut r, op, u64::from(h.zva_bytes));
        n += 1;
        if n % 997 == 0 {
            assert_eq!(m.totals(), r.totals, "diverged after {n} operations (last {op:?}) with {h:?}");
            assert_eq!(m.coherence(), &r.coh[..], "coherence diverged after {n} operations (last {op:?}) with {h:?}");
        }
    }
    assert_eq!(m.totals(), r.totals, "diverged at the end with {h:?}");
    assert_eq!(m.coherence(), &r.coh[..], "coherence diverged at the end with {h:?}");
    n
}

#[test]
fn agrees_with_reference_on_random_traces() {
    let mut total = 0;
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        for (sharing, l3, vcpus) in [(Sharing::Shared, false, 1), (Sharing::Shared, true, 2), (Sharing::Private, true, 3)] {
            let h = small(policy, sharing, l3);
            for (seed, span, mixed) in [(1u64, 16 << 10, true), (2, 4 << 10, true), (3, 64 << 10, false)] {
                let mut rng = seed ^ 0xabcdef;
                total += check_agreement(&h, vcpus, (0..40_000).map(|_| random_op(&mut rng, vcpus, span, mixed)));
            }
        }
    }
    assert_eq!(total, 3 * 3 * 3 * 40_000);
}

/// The same random traces with each hardware prefetcher, and strided streams by several PCs
/// (the stride prefetcher's trigger and page rules).
#[test]
fn agrees_with_reference_with_hardware_prefetchers() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        for (kind, distance, degree) in
            [(HwPfKind::NextLine, 1, 1), (HwPfKind::NextLine, 3, 2), (HwPfKind::Stride, 1, 1), (HwPfKind::Stride, 2, 3)]
        {
            let h = with_hwpf(small(policy, Sharing::Private, true), kind, distance, degree);
            let mut rng = 77;
            check_agreement(&h, 2, (0..30_000).map(|_| random_op(&mut rng, 2, 32 << 10, true)));
            let mut ops = Vec::new();
            for pass in 0..2u64 {
                for i in 0..2000u64 {
                    for (k, stride) in [64u64, 8, 192, 4096 + 64].into_iter().enumerate() {
                        let pa = BASE + (k as u64) * (1 << 20) + (i * stride) % (256 << 10);
                        ops.push(Op::Data {
                            cpu: 0,
                            pa,
                            size: 8,
                            write: pass == 1 && k == 1,
                            attr: WB,
                            pc: 0x1000 + 4 * k as u64,
                            nt: k == 2,
                        });
                    }
                }
            }
            check_agreement(&h, 1, ops.into_iter());
        }
    }
}

/// Associativities on both sides of the packed replacement order's 16-way limit: direct-mapped
/// L1I, 3-way L1D, 32-way L2 (byte list), 16-way L3 (packed), every policy.
#[test]
fn agrees_with_reference_with_odd_and_wide_ways() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        let lower = vec![
            LowerLevel { geometry: g("8K:32:64"), sharing: Sharing::Private },
            LowerLevel { geometry: g("32K:16:64"), sharing: Sharing::Shared },
        ];
        let h = Hierarchy {
            l1i: g("1K:1:64"),
            l1i_index: crate::geometry::Indexing::Pipt,
            l1i_index_ref: "test",
            l1d: g("1536:3:64"),
            lower,
            policy: policy.into(),
            seed: 5,
            zva_bytes: 64,
            hwpf: HwPrefetch::off("test"),
            latency: Latency::generic(),
            topology: Topology::generic(),
            policy_ref: "test",
            silicon: crate::geometry::Deviations::NONE,
        };
        for (seed, span) in [(11u64, 16u64 << 10), (12, 96 << 10)] {
            let mut rng = seed;
            check_agreement(&h, 2, (0..40_000).map(|_| random_op(&mut rng, 2, span, true)));
        }
    }
}

#[test]
fn agrees_with_reference_on_structured_traces() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        let h = Hierarchy { policy: policy.into(), ..rpi4() };
        // Strided scans at the capacity knees, read then write, then set/way and by-address maintenance.
        let mut ops = Vec::new();
        for &(bytes, stride) in
            &[(16u64 << 10, 64u64), (32 << 10, 64), (48 << 10, 64), (1 << 20, 64), (1536 << 10, 64), (64 << 10, 4096 + 64)]
        {
            for pass in 0..3 {
                for a in (0..bytes).step_by(stride as usize) {
                    ops.push(Op::Data { cpu: 0, pa: BASE + a % (8 << 20), size: 8, write: pass == 1, attr: WB, pc: 0, nt: false });
                }
            }
        }
        for way in 0..2 {
            for set in 0..256 {
                ops.push(Op::SetWay { cpu: 0, op: LineOp::CleanInvalidate, level: 1, set, way });
            }
        }
        for a in (0..(64 << 10)).step_by(64) {
            ops.push(Op::DcPa { cpu: 0, op: LineOp::CleanInvalidate, point: Point::Coherency, pa: BASE + a });
            ops.push(Op::Fetch { cpu: 0, pa: BASE + (a * 7) % (1 << 20) });
        }
        // A pointer chase over 4 MiB in a fixed pseudo-random order.
        let mut rng = 99;
        for _ in 0..50_000 {
            ops.push(Op::Data {
                cpu: 0,
                pa: BASE + (xorshift64star(&mut rng) % (4 << 20)) / 64 * 64,
                size: 8,
                write: false,
                attr: WB,
                pc: 0,
                nt: false,
            });
        }
        check_agreement(&h, 1, ops.into_iter());
    }
}

/// Speed of the core alone, per path (not a test: `cargo test --release --manifest-path
/// host/Cargo.toml --target host-tuple -p cachescope-cache-model core_speed -- --ignored
/// --nocapture`). Pi 4 geometry (L1D 32 KiB 2-way, L2 1 MiB 16-way), one 8-byte load per line:
/// L1 hits (16 KiB loop), L1 misses that hit L2 (512 KiB loop), misses in both (8 MiB stream,
/// also under FIFO and random), and an L2 with 32 ways (the wide replacement order). Best of 15.
#[test]
#[ignore]
fn core_speed() {
    // The guest's own 8 MiB stream passes through the host caches too (QEMU reads guest RAM).
    let guest = vec![1u64; 1 << 20];
    let cases: [(&str, Hierarchy, u64, u64); 6] = [
        ("L1 hit (16 KiB loop)", rpi4(), 16 << 10, Level::L1D as u64),
        ("L1 miss, L2 hit (512 KiB loop)", rpi4(), 512 << 10, Level::L2 as u64),
        ("L1+L2 miss, LRU (8 MiB stream)", rpi4(), 8 << 20, Level::L2 as u64),
        ("L1+L2 miss, FIFO (8 MiB stream)", Hierarchy { policy: Policy::Fifo.into(), ..rpi4() }, 8 << 20, Level::L2 as u64),
        ("L1+L2 miss, random (8 MiB stream)", Hierarchy { policy: Policy::Random.into(), ..rpi4() }, 8 << 20, Level::L2 as u64),
        (
            "L1+L2 miss, 32-way L2 (8 MiB stream)",
            Hierarchy { lower: vec![LowerLevel { geometry: g("1M:32:64"), sharing: Sharing::Shared }], ..rpi4() },
            8 << 20,
            Level::L2 as u64,
        ),
    ];
    for (name, h, bytes, level) in cases {
        let mut m = Model::new(&h, 1);
        let mut sum = 0u64;
        scan(&mut m, BASE, bytes, 64, false, WB); // warm up (cold misses fill the caches)
        let lines = (32u64 << 20) / 64; // the same number of line accesses per case
        let mut best = f64::MAX;
        for _ in 0..15 {
            let before = m.totals();
            let t = std::time::Instant::now();
            let mut a = 0;
            for _ in 0..lines {
                sum = sum.wrapping_add(guest[(a / 8) as usize]);
                m.data(0, BASE + a, 8, false, WB);
                a = (a + 64) % bytes;
            }
            best = best.min(t.elapsed().as_nanos() as f64 / lines as f64);
            let d = m.totals() - before;
            let c = d.levels[level as usize];
            assert_eq!(d.levels[Level::L1D as usize].accesses, lines);
            if level == Level::L1D as u64 {
                assert_eq!(c.hits, lines, "{name}: every line hits L1");
            } else if bytes == 512 << 10 {
                assert_eq!((c.accesses, c.hits), (lines, lines), "{name}: every line misses L1 and hits L2");
            } else if h.policy.lower[0] != Policy::Random {
                assert_eq!((c.accesses, c.misses), (lines, lines), "{name}: every line misses L1 and L2");
            }
        }
        assert!(sum > 0);
        eprintln!("{name:38} {best:6.1} ns per line");
    }
}

/// Replays a trace written by the plugin (`trace=FILE`) through the reference simulator and
/// compares the totals with the model's at the end of the run. Not a unit test: run by
/// scripts/model-check with CS_MODEL_TRACE=FILE (`cargo test … replay_plugin_trace -- --ignored`).
#[test]
#[ignore]
fn replay_plugin_trace() {
    let path = std::env::var("CS_MODEL_TRACE").expect("CS_MODEL_TRACE names the trace file");
    let text = std::fs::read_to_string(&path).expect("trace readable");
    let num = |w: &str| -> u64 { w.parse().unwrap_or_else(|_| panic!("bad number '{w}' in {path}")) };
    // 36 counters, then (more than one vCPU) six coherence counters per vCPU.
    let coherence = |ws: &[&str]| -> Vec<Coherence> {
        let v: Vec<u64> = ws.iter().skip(36).map(|w| num(w)).collect();
        assert_eq!(v.len() % 6, 0, "six coherence counters per vCPU");
        v.chunks(6).map(|c| Coherence::from_values([c[0], c[1], c[2], c[3], c[4], c[5]])).collect()
    };
    let counters = |ws: &[&str]| -> Totals {
        let v: Vec<u64> = ws.iter().take(36).map(|w| num(w)).collect();
        assert_eq!(v.len(), 36, "36 counters");
        let mut t = Totals::default();
        for (i, c) in t.levels.iter_mut().enumerate() {
            let x = &v[i * 8..i * 8 + 8];
            *c = crate::hierarchy::Counts {
                accesses: x[0],
                hits: x[1],
                misses: x[2],
                writebacks: x[3],
                maint: x[4],
                bypass: x[5],
                prefetches: x[6],
                prefetch_hits: x[7],
            };
        }
        t.served.copy_from_slice(&v[32..36]);
        t
    };
    let attr = |w: &str| Attr::try_from(num(w)).expect("attribute code");
    let op = |w: &str| [LineOp::Clean, LineOp::Invalidate, LineOp::CleanInvalidate][num(w) as usize];
    let mut r: Option<(RefModel, u64)> = None;
    let mut header: Option<(Hierarchy, usize)> = None;
    let mut ops = 0u64;
    let mut ended = false;
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        if w[0] == "H" {
            // H vcpus l1i l1d [geometry sharing]… policy seed zva hwpf distance degree [silicon=RULES]
            let mut w = w.clone();
            let silicon = match w.last().and_then(|x| x.strip_prefix("silicon=")) {
                Some(rules) => {
                    let d = if rules == "none" { Deviations::NONE } else { Deviations::parse(rules).expect("silicon rules") };
                    w.pop();
                    d
                }
                None => Deviations::NONE,
            };
            let n = w.len();
            let lower = w[4..n - 6]
                .chunks(2)
                .map(|p| LowerLevel { geometry: g(p[0]), sharing: if p[1] == "shared" { Sharing::Shared } else { Sharing::Private } })
                .collect();
            let h = Hierarchy {
                l1i: g(w[2]),
                l1i_index: crate::geometry::Indexing::Pipt,
                l1i_index_ref: "test",
                l1d: g(w[3]),
                lower,
                policy: Replacement::parse(w[n - 6]).unwrap(),
                seed: num(w[n - 5]),
                zva_bytes: num(w[n - 4]) as u32,
                hwpf: HwPrefetch {
                    kind: HwPfKind::parse(w[n - 3]).expect("hwpf kind"),
                    distance: num(w[n - 2]) as u32,
                    degree: num(w[n - 1]) as u32,
                    reference: String::new(),
                },
                latency: Latency::generic(),
                topology: Topology::generic(),
                policy_ref: "trace",
                silicon,
            };
            r = Some((RefModel::new(&h, num(w[1]) as usize), u64::from(h.zva_bytes)));
            header = Some((h, num(w[1]) as usize));
            continue;
        }
        if w[0] == "X" {
            // Rule 21: the L1I's indexing, right after H.
            let (h, vcpus) = header.as_mut().expect("H line first");
            h.l1i_index = crate::geometry::Indexing::parse(w[1]).expect("l1i indexing");
            r = Some((RefModel::new(h, *vcpus), u64::from(h.zva_bytes)));
            continue;
        }
        let (m, zva) = r.as_mut().expect("H line first");
        match w[0] {
            "C" => {
                m.totals = counters(&w[1..]);
                let c = coherence(&w[1..]);
                if !c.is_empty() {
                    m.coh = c;
                }
            }
            "D" => m.data_hint(num(w[1]) as usize, num(w[2]), num(w[3]) as u32, w[4] == "1", attr(w[5]), num(w[6]), w[7] == "1"),
            "R" => m.prefetch(num(w[1]) as usize, num(w[2]), num(w[3]) as u32, w[4] == "1", attr(w[5])),
            // The VA was added with rule 21 (older traces: VA = PA).
            "F" => m.fetch_at(num(w[1]) as usize, w.get(4).map_or(num(w[2]), |v| num(v)), num(w[2]), attr(w[3])),
            // The issuing vCPU was added later (older traces: vCPU 0).
            "P" => m.dc_by_pa(
                w.get(4).map_or(0, |c| num(c) as usize),
                op(w[1]),
                if w[2] == "0" { Point::Coherency } else { Point::Unification },
                num(w[3]),
            ),
            "S" => m.dc_set_way_slots(num(w[1]) as usize, op(w[2]), num(w[3]) as u32, num(w[4]), num(w[5])),
            "Z" => m.dc_zva(num(w[1]) as usize, num(w[2]), attr(w[3]), *zva),
            "I" => m.ic_invalidate_all(num(w[1]) as usize, w[2] == "1"),
            "V" => m.ic_invalidate_va(w.get(2).map_or(0, |c| num(c) as usize), w.get(3).map_or(num(w[1]), |v| num(v)), num(w[1])),
            "T" => {
                assert_eq!(m.totals, counters(&w[1..]), "reference and model disagree at the end of {path}");
                let c = coherence(&w[1..]);
                if !c.is_empty() {
                    // The trace carries the protocol's six counters; the cluster split is a label.
                    let six = |v: &[Coherence]| v.iter().map(Coherence::values).collect::<Vec<_>>();
                    assert_eq!(six(&m.coh), six(&c), "reference and model disagree on coherence at the end of {path}");
                }
                ended = true;
                continue;
            }
            other => panic!("unknown trace line kind '{other}' in {path}"),
        }
        ops += 1;
    }
    assert!(ended, "{path} has no T line (run cut short?)");
    assert!(ops > 1000, "{path}: only {ops} operations");
    eprintln!("replay: {ops} operations from {path}: reference totals equal the model's");
}

// ---- the sanitizer ----------------------------------------------------------------------------

const NC: Attr = Attr::NormalNonCacheable;

fn sanitized() -> Model {
    let mut m = Model::new(&rpi4(), 1);
    m.enable_sanitizer(false, false);
    m
}

fn kinds(m: &mut Model) -> Vec<(crate::sanitize::HazardKind, u64)> {
    m.take_events().into_iter().map(|e| (e.kind, e.pa)).collect()
}

fn write_at(m: &mut Model, pa: u64, pc: u64) {
    m.data_hint(0, pa, 8, true, WB, Hint { pc, nt: false });
}

#[test]
fn sanitizer_stale_read_by_device() {
    use crate::sanitize::HazardKind::{SharedLine, StaleReadByDevice};
    let mut m = sanitized();
    write_at(&mut m, BASE + 8, 0x1234);
    m.data(0, BASE + 12, 8, false, NC);
    let e = m.take_events();
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].kind, e[0].pa, e[0].access, e[0].cause, e[0].cause_pc),
        (StaleReadByDevice, BASE, HazardAccess::NcRead, crate::sanitize::HazardCause::Write, 0x1234)
    );
    // The same line, other bytes: nothing stale is read, the line is shared.
    m.data(0, BASE, 8, false, NC);
    m.data(0, BASE + 16, 4, false, NC);
    assert_eq!(kinds(&mut m), [(SharedLine, BASE), (SharedLine, BASE)]);
    // Device reads too; and a dirty line evicted to L2 is still dirty there.
    m.data(0, BASE + 8, 1, false, Attr::Device);
    assert_eq!(kinds(&mut m), [(StaleReadByDevice, BASE)]);
    // The correct hand-off: clean to PoC first.
    m.dc_by_pa(0, LineOp::Clean, Point::Coherency, BASE);
    m.data(0, BASE, 8, false, NC);
    assert!(kinds(&mut m).is_empty());
}

#[test]
fn sanitizer_lost_write_by_va_and_set_way() {
    use crate::sanitize::HazardKind::LostWrite;
    let mut m = sanitized();
    write_at(&mut m, BASE, 1);
    m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE);
    assert_eq!(kinds(&mut m), [(LostWrite, BASE)]);
    // The partial edge line: the buffer starts at BASE + 32, its neighbour dirtied BASE.
    write_at(&mut m, BASE, 2);
    m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE + 32);
    assert_eq!(kinds(&mut m), [(LostWrite, BASE)]);
    // Correct: clean+invalidate; and invalidating a clean line.
    write_at(&mut m, BASE, 3);
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE);
    m.data(0, BASE, 8, false, WB);
    m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE);
    assert!(kinds(&mut m).is_empty());
    // DC ISW over a dirty line; DC CISW is the correct one.
    write_at(&mut m, BASE, 4);
    set_way_walk(&mut m, LineOp::Invalidate);
    assert_eq!(kinds(&mut m), [(LostWrite, BASE)]);
    write_at(&mut m, BASE, 5);
    set_way_walk(&mut m, LineOp::CleanInvalidate);
    set_way_walk(&mut m, LineOp::Invalidate);
    assert!(kinds(&mut m).is_empty(), "a full clean+invalidate walk, then an invalidate walk of clean caches");
}

#[test]
fn sanitizer_stale_read_by_cpu() {
    use crate::sanitize::HazardKind::StaleReadByCpu;
    let mut m = sanitized();
    m.data(0, BASE, 8, false, WB); // cached clean
    m.data_hint(0, BASE + 16, 8, true, NC, Hint { pc: 0x99, nt: false }); // the device writes behind it
    m.data(0, BASE + 20, 8, false, WB);
    let e = m.take_events();
    assert_eq!((e[0].kind, e[0].pa, e[0].cause, e[0].cause_pc), (StaleReadByCpu, BASE, crate::sanitize::HazardCause::NcWrite, 0x99));
    // Bytes the device did not write: a shared line, not a stale read; a second write behind
    // the stale copy adds its bytes.
    m.data(0, BASE, 16, false, WB);
    assert_eq!(kinds(&mut m), [(crate::sanitize::HazardKind::SharedLine, BASE)]);
    m.data(0, BASE + 40, 4, true, NC);
    m.data(0, BASE + 40, 1, false, WB);
    m.data(0, BASE + 16, 1, false, WB);
    assert_eq!(kinds(&mut m), [(StaleReadByCpu, BASE), (StaleReadByCpu, BASE)]);
    // Only in L2: the L1D miss hits a stale L2 copy.
    let mut m = sanitized();
    m.data(0, BASE, 8, false, WB);
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE); // (no effect on a clean line)
    let way = 16 << 10;
    m.data(0, BASE + way, 8, false, WB);
    m.data(0, BASE + 2 * way, 8, false, WB); // BASE leaves L1D, stays in L2
    m.data(0, BASE, 8, true, Attr::Device);
    m.data(0, BASE + 4, 8, false, WB);
    assert_eq!(kinds(&mut m), [(StaleReadByCpu, BASE)]);
    // Correct: invalidate after the device wrote (and a line not cached at all is never stale).
    let mut m = sanitized();
    m.data(0, BASE, 8, false, WB);
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE);
    m.data(0, BASE, 8, true, NC);
    m.data(0, BASE + 4096, 8, false, WB); // speculation may refill any clean line …
    m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE);
    m.data(0, BASE, 8, false, WB);
    m.data(0, BASE + 64, 8, true, NC);
    m.data(0, BASE + 64, 8, false, WB);
    assert!(kinds(&mut m).is_empty());
}

#[test]
fn sanitizer_stale_instruction() {
    use crate::sanitize::HazardKind::StaleInstruction;
    // Code written through the D-side, executed with no maintenance: dirty in L1D.
    let mut m = sanitized();
    write_at(&mut m, BASE, 0x40);
    m.fetch(0, BASE, WB);
    let e = m.take_events();
    assert_eq!((e[0].kind, e[0].pa, e[0].cause_pc), (StaleInstruction, BASE, 0x40));
    // Cleaned to PoU but the old code is still in L1I (no IC IVAU).
    let mut m = sanitized();
    m.fetch(0, BASE, WB);
    write_at(&mut m, BASE, 0x44);
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE);
    m.fetch(0, BASE, WB);
    assert_eq!(kinds(&mut m), [(StaleInstruction, BASE)]);
    // Cleaned to PoU, never executed before, no IC IVAU: the I-side may still fetch old code.
    let mut m = sanitized();
    write_at(&mut m, BASE + 4096, 0x50);
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE + 4096);
    m.fetch(0, BASE + 4096, WB);
    assert_eq!(kinds(&mut m), [(StaleInstruction, BASE + 4096)]);
    // Correct: DC CVAU + IC IVAU (or IC IALLU).
    for all in [false, true] {
        let mut m = sanitized();
        m.fetch(0, BASE, WB);
        write_at(&mut m, BASE, 0x48);
        m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE);
        if all {
            m.ic_invalidate_all(0, false);
        } else {
            m.ic_invalidate_pa(0, BASE);
        }
        m.fetch(0, BASE, WB);
        assert!(kinds(&mut m).is_empty());
    }
    // CTR_EL0.IDC = DIC = 1: no maintenance needed.
    let mut m = sanitized();
    m.set_ctr(true, true);
    m.fetch(0, BASE, WB);
    write_at(&mut m, BASE, 0x4c);
    m.fetch(0, BASE, WB);
    assert!(kinds(&mut m).is_empty());
}

#[test]
fn byte_masks_follow_the_bytes_written_since_the_last_clean() {
    use crate::sanitize::HazardKind::{SharedLine, StaleReadByDevice};
    let nc_read = |m: &mut Model, pa: u64, size: u32| {
        m.data(0, pa, size, false, NC);
        kinds(m).into_iter().map(|(k, _)| k).collect::<Vec<_>>()
    };
    // Cleaned to PoC, then written elsewhere: only the new bytes differ from memory.
    let mut m = sanitized();
    write_at(&mut m, BASE, 1);
    m.dc_by_pa(0, LineOp::Clean, Point::Coherency, BASE);
    write_at(&mut m, BASE + 32, 2);
    assert_eq!(nc_read(&mut m, BASE, 8), [SharedLine], "the first write reached memory");
    assert_eq!(nc_read(&mut m, BASE + 32, 8), [StaleReadByDevice]);
    // Cleaned to PoU only: the first bytes are still dirty in L2, the new ones in L1D.
    let mut m = sanitized();
    write_at(&mut m, BASE, 1);
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE);
    write_at(&mut m, BASE + 32, 2);
    assert_eq!(nc_read(&mut m, BASE, 8), [StaleReadByDevice], "dirty in L2");
    assert_eq!(nc_read(&mut m, BASE + 32, 8), [StaleReadByDevice]);
    assert_eq!(nc_read(&mut m, BASE + 16, 8), [SharedLine]);
    // Repeated writes to a dirty line add up; an access crossing two lines is split.
    let mut m = sanitized();
    write_at(&mut m, BASE, 1);
    write_at(&mut m, BASE + 8, 2);
    m.data(0, BASE + 60, 8, true, WB);
    assert_eq!(nc_read(&mut m, BASE + 12, 1), [StaleReadByDevice]);
    assert_eq!(nc_read(&mut m, BASE + 64, 4), [StaleReadByDevice], "the crossing write's second line");
    assert_eq!(nc_read(&mut m, BASE + 68, 4), [SharedLine]);
    assert_eq!(nc_read(&mut m, BASE + 56, 4), [SharedLine]);
    assert_eq!(nc_read(&mut m, BASE + 56, 8), [StaleReadByDevice], "a read crossing into the written bytes");
    // DC ZVA writes the whole block.
    let mut m = sanitized();
    m.dc_zva(0, BASE, WB);
    assert_eq!(nc_read(&mut m, BASE + 48, 1), [StaleReadByDevice]);
}

#[test]
fn code_cleaned_to_pou_is_not_stale_while_the_line_is_dirty_again_elsewhere() {
    use crate::sanitize::HazardKind::{SharedLine, StaleInstruction};
    // Linux 6.12's ftrace_init on copy_from_kernel_nofault_allowed (0x598: literal 0x590,
    // entry 0x598..0x5a8) and copy_from_kernel_nofault (literal 0x5a8, entry 0x5b0), one line
    // (Debian 6.12.95, model trace): the first entry is patched and maintained (DC CVAU, IC
    // IVAU), then the second literal is written, then the first function runs. The L1D copy
    // is dirty again, L2 still holds the first patch dirty (a clean to PoU, not PoC), but the
    // fetched bytes were cleaned to the PoU: the fetch sees them.
    let line = BASE + 0x580;
    let mut m = sanitized();
    m.data_hint(0, line + 0x10, 8, true, WB, Hint { pc: 0x6fc, nt: false }); // literal
    m.data_hint(0, line + 0x18, 4, true, WB, Hint { pc: 0x720, nt: false }); // the entry's patch
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, line);
    m.ic_invalidate_pa(0, line);
    m.data_hint(0, line + 0x28, 8, true, WB, Hint { pc: 0x6fc, nt: false }); // the next literal
    m.fetch_range(0, line + 0x18, 0x10, WB);
    let e = m.take_events();
    assert_eq!(e.iter().map(|e| (e.kind, e.cause_pc)).collect::<Vec<_>>(), [(SharedLine, 0x6fc)], "{e:?}");
    // The bytes cleaned to the PoU are still dirty before the PoC: a non-cacheable read of them
    // is stale (the PoC rule keeps its own mask).
    m.data(0, line + 0x18, 4, false, NC);
    assert_eq!(kinds(&mut m), [(crate::sanitize::HazardKind::StaleReadByDevice, line)]);
    // The patched entry run before its maintenance is stale (Linux's __set_fixmap, run by
    // patch_unmap right after its own entry was written).
    let mut m = sanitized();
    m.data_hint(0, line + 0x10, 8, true, WB, Hint { pc: 0x6fc, nt: false });
    m.data_hint(0, line + 0x18, 4, true, WB, Hint { pc: 0x720, nt: false });
    m.fetch_range(0, line + 0x18, 0x10, WB);
    assert_eq!(kinds(&mut m), [(StaleInstruction, line)]);
}

#[test]
fn a_literal_written_next_to_code_is_a_shared_line() {
    use crate::sanitize::HazardKind::{SharedLine, StaleInstruction};
    // Linux's KASLR relocation of idmap_cpu_replace_ttbr1's literal: the function's code
    // (0x38 bytes) shares its line with the 8-byte literal the relocation writes. The code is
    // cleaned to PoU but never IC-invalidated, then run: its bytes were not written.
    let (code, literal) = (BASE + 0x1000, BASE + 0x1038);
    for clean in [true, false] {
        let mut m = sanitized();
        m.fetch_range(0, code, 0x38, WB);
        m.data_hint(0, literal, 8, true, WB, Hint { pc: 0x4242, nt: false });
        if clean {
            m.dc_by_pa(0, LineOp::Clean, Point::Unification, literal);
        }
        m.fetch_range(0, code, 0x38, WB);
        let e = m.take_events();
        assert_eq!(e.len(), 1, "clean {clean}: {e:?}");
        assert_eq!((e[0].kind, e[0].pa, e[0].cause_pc), (SharedLine, code, 0x4242), "clean {clean}");
        // Code that does run the written bytes is stale.
        m.fetch_range(0, code + 0x30, 0x10, WB);
        assert_eq!(kinds(&mut m), [(StaleInstruction, code)], "clean {clean}");
        // A whole-line fetch (the model's conservative default) covers the literal too.
        m.fetch(0, code, WB);
        assert_eq!(kinds(&mut m), [(StaleInstruction, code)], "clean {clean}");
        // IC IVAU: nothing left to report.
        if clean {
            m.ic_invalidate_pa(0, code);
            m.fetch(0, code, WB);
            assert!(kinds(&mut m).is_empty());
        }
    }
    // Written behind the caches (MMU off for the writer) next to code the L1I holds.
    let mut m = sanitized();
    m.fetch_range(0, code, 0x38, WB);
    m.data(0, literal, 8, true, NC);
    m.fetch_range(0, code, 0x38, WB);
    assert_eq!(kinds(&mut m), [(SharedLine, code), (SharedLine, code)], "the stale L1I copy and the written line, other bytes");
    m.fetch_range(0, literal - 4, 8, WB);
    assert_eq!(kinds(&mut m), [(StaleInstruction, code), (StaleInstruction, code)]);
}

#[test]
fn an_uncounted_fetch_is_still_judged() {
    use crate::sanitize::HazardKind::StaleInstruction;
    let mut m = sanitized();
    m.fetch_range(0, BASE, 16, WB);
    write_at(&mut m, BASE + 32, 0x77);
    m.dc_by_pa(0, LineOp::Clean, Point::Unification, BASE);
    let before = m.totals();
    m.check_fetch(0, BASE + 16, 16);
    assert_eq!(kinds(&mut m), [(crate::sanitize::HazardKind::SharedLine, BASE)], "bytes 16..32 were not written");
    m.check_fetch(0, BASE + 28, 8);
    let e = m.take_events();
    assert_eq!((e.len(), e[0].kind, e[0].uncounted), (1, StaleInstruction, true), "{e:?}");
    assert_eq!(m.totals(), before, "judged, not counted");
    m.fetch_range(0, BASE + 28, 8, WB);
    assert!(!m.take_events()[0].uncounted, "a counted fetch's events count");
    // A stale L1I copy the uncounted fetch runs from.
    m.ic_invalidate_pa(0, BASE);
    m.fetch_range(0, BASE, 16, WB);
    m.data(0, BASE + 4, 4, true, NC);
    m.check_fetch(0, BASE + 4, 4);
    assert_eq!(kinds(&mut m), [(StaleInstruction, BASE), (StaleInstruction, BASE)]);
    let mut plain = Model::new(&rpi4(), 1);
    plain.check_fetch(0, BASE, 4);
    assert!(!plain.has_events(), "no sanitizer, nothing judged");
}

/// The Pi 5 shape (private L2, shared L3) with the sanitizer, on a guest whose CLIDR says `loc`.
fn sanitized_rpi5(loc: Option<u32>) -> Model {
    let h = Hierarchy { hwpf: HwPrefetch::off("test"), ..Hierarchy::profile("rpi5").unwrap() };
    let mut m = Model::new(&h, 1);
    m.enable_sanitizer(false, false);
    if let Some(loc) = loc {
        m.set_level_of_coherence(loc);
    }
    m
}

#[test]
fn sanitizer_levels_beyond_the_poc_are_transparent() {
    use crate::sanitize::HazardKind::{LostWrite, StaleReadByCpu, StaleReadByDevice};
    let lines = (BASE..BASE + 8192).step_by(64);
    // The guest's walk to its LoC (2) leaves the profile's L3 dirty: with LoC unknown (every level
    // before the PoC) that is a stale read for the device, line by line …
    for (loc, want) in [(None, 128), (Some(2), 0)] {
        let mut m = sanitized_rpi5(loc);
        for a in lines.clone() {
            write_at(&mut m, a, 0x60);
        }
        set_way_walk_to(&mut m, LineOp::CleanInvalidate, 2);
        assert!(m.lower_cache(1, 0).holds_dirty(BASE >> 6), "cleaned into the L3, dirty there");
        for a in lines.clone() {
            m.data(0, a, 8, false, NC);
        }
        let k = kinds(&mut m);
        assert_eq!(k.len(), want, "LoC {loc:?}");
        assert!(k.iter().all(|&(kind, _)| kind == StaleReadByDevice));
        // … and the device's write behind a line the L3 holds: a stale copy only before the PoC.
        m.data(0, BASE, 8, false, WB); // L1D and L2 miss, the L3 hits: cached again
        set_way_walk_to(&mut m, LineOp::CleanInvalidate, 2);
        m.data(0, BASE, 8, true, NC);
        m.data(0, BASE, 8, false, WB);
        assert_eq!(kinds(&mut m), if loc.is_none() { vec![(StaleReadByCpu, BASE)] } else { vec![] }, "LoC {loc:?}");
    }
    // Still reported before the PoC: a missing clean of the L1D or L2.
    let mut m = sanitized_rpi5(Some(2));
    write_at(&mut m, BASE, 0x64);
    set_way_walk_to(&mut m, LineOp::CleanInvalidate, 1);
    m.data(0, BASE, 8, false, NC);
    assert_eq!(kinds(&mut m), [(StaleReadByDevice, BASE)], "dirty in the L2 (before the PoC)");
    // LoC = 0 (A64FX): no level is before the PoC, a walk to LoC does nothing and is correct; DC
    // IVAC (to the PoC) loses nothing; DC ISW, which names a level, still discards dirty data.
    let mut m = sanitized_rpi5(Some(0));
    for a in lines.clone() {
        write_at(&mut m, a, 0x68);
    }
    assert_eq!(set_way_walk_to(&mut m, LineOp::Clean, 0), 0);
    for a in lines.clone() {
        m.data(0, a, 8, false, NC);
        m.data(0, a + 16, 8, true, NC);
        m.data(0, a, 8, false, WB);
    }
    m.dc_by_pa(0, LineOp::Invalidate, Point::Coherency, BASE + 64);
    assert!(kinds(&mut m).is_empty());
    write_at(&mut m, BASE, 0x6c);
    set_way_walk_to(&mut m, LineOp::Invalidate, 1);
    let k = kinds(&mut m);
    assert_eq!(k.len(), 127, "every line written above but the one DC IVAC dropped is still dirty in the L1D");
    assert!(k.contains(&(LostWrite, BASE)));
    assert_eq!(m.levels_before_poc(), 0);
    assert_eq!(sanitized_rpi5(Some(7)).levels_before_poc(), 3, "a LoC past the modelled levels: all of them");
}

#[test]
fn by_va_maintenance_covers_the_guests_longer_line() {
    use crate::sanitize::HazardKind::{StaleInstruction, StaleReadByDevice};
    // A64FX's CTR_EL0 says 256-byte lines; the rpi4 profile has 64-byte ones. One DC CVAC per
    // 256 bytes (the loop CTR_EL0.DminLine asks for) cleans all four model lines of the granule.
    for (granule, stale) in [(256, 0), (64, 3)] {
        let mut m = sanitized();
        for a in (BASE..BASE + 256).step_by(64) {
            write_at(&mut m, a, 0x70);
        }
        let before = m.totals().get(Level::L1D).maint;
        m.dc_by_pa_granule(0, LineOp::Clean, Point::Coherency, BASE + 0x80, granule);
        assert_eq!(m.totals().get(Level::L1D).maint - before, granule / 64, "one maint per model line");
        for a in (BASE..BASE + 256).step_by(64) {
            m.data(0, a, 8, false, NC);
        }
        let k = kinds(&mut m);
        assert_eq!(k.len(), stale, "granule {granule}");
        assert!(k.iter().all(|&(kind, _)| kind == StaleReadByDevice));
    }
    // IC IVAU likewise covers the guest's IminLine (with DC CVAU per DminLine).
    let mut m = sanitized();
    for a in (BASE..BASE + 256).step_by(64) {
        m.fetch(0, a, WB);
        write_at(&mut m, a, 0x74);
    }
    m.dc_by_pa_granule(0, LineOp::Clean, Point::Unification, BASE, 256);
    m.ic_invalidate_granule(0, BASE + 4, 256);
    for a in (BASE..BASE + 256).step_by(64) {
        m.fetch(0, a, WB);
    }
    assert!(kinds(&mut m).is_empty());
    m.fetch(0, BASE + 256, WB);
    write_at(&mut m, BASE + 256 + 64, 0x78);
    m.dc_by_pa_granule(0, LineOp::Clean, Point::Unification, BASE + 256, 256);
    m.ic_invalidate_granule(0, BASE + 256, 64);
    m.fetch(0, BASE + 256 + 64, WB);
    assert_eq!(kinds(&mut m), [(StaleInstruction, BASE + 256 + 64)], "a 64-byte IC IVAU misses the neighbour line");
}

#[test]
fn sanitizer_is_quiet_on_write_through_nc_and_set_way_clean() {
    let mut m = sanitized();
    // WT: never dirty, so a device may read it at any time.
    m.data(0, BASE, 8, false, Attr::NormalWriteThrough);
    m.data(0, BASE, 8, true, Attr::NormalWriteThrough);
    m.data(0, BASE, 8, false, NC);
    // NC only.
    m.data(0, BASE + 4096, 8, true, NC);
    m.data(0, BASE + 4096, 8, false, NC);
    // A full set/way clean, then the device reads everything the CPU wrote.
    for a in (BASE + 8192..BASE + 16384).step_by(64) {
        write_at(&mut m, a, 0x50);
    }
    set_way_walk(&mut m, LineOp::Clean);
    for a in (BASE + 8192..BASE + 16384).step_by(64) {
        m.data(0, a, 8, false, NC);
    }
    assert!(kinds(&mut m).is_empty());
}

#[test]
fn sanitizer_never_changes_the_counts() {
    let h = with_hwpf(small(Policy::Lru, Sharing::Private, true), HwPfKind::Stride, 1, 2);
    let mut a = Model::new(&h, 2);
    let mut b = Model::new(&h, 2);
    b.enable_sanitizer(false, false);
    let mut rng = 5;
    for _ in 0..40_000 {
        match random_op(&mut rng, 2, 16 << 10, true) {
            Op::Data { cpu, pa, size, write, attr, pc, nt } => {
                a.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
                b.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
            }
            Op::Fetch { cpu, pa } => {
                a.fetch(cpu, pa, WB);
                b.fetch(cpu, pa, WB);
            }
            Op::DcPa { cpu, op, point, pa } => {
                a.dc_by_pa(cpu, op, point, pa);
                b.dc_by_pa(cpu, op, point, pa);
            }
            Op::SetWay { cpu, op, level, set, way } => {
                a.dc_set_way(cpu, op, level, set, way);
                b.dc_set_way(cpu, op, level, set, way);
            }
            _ => {}
        }
        b.take_events();
    }
    assert_eq!(a.totals(), b.totals());
}

// ---- coherence (rule 17) ---------------------------------------------------------------------

/// Sum of one counter over vCPUs.
fn coh_sum(m: &Model, f: impl Fn(&Coherence) -> u64) -> u64 {
    m.coherence().iter().map(f).sum()
}

#[test]
fn coherence_ping_pong_costs_one_transfer_per_hand_over() {
    // Two vCPUs take turns: read the line (spin), then write it (hand it over).
    for h in [rpi4(), Hierarchy::profile("rpi5").map(|h| Hierarchy { hwpf: HwPrefetch::off("test"), ..h }).unwrap()] {
        let mut m = Model::new(&h, 4);
        m.data(0, BASE, 8, true, WB); // vCPU 0 owns the line (M)
        let before: Vec<Coherence> = m.coherence().to_vec();
        let handovers = 100u64;
        for k in 0..handovers {
            let cpu = (1 + k % 2) as usize % 2; // 1, 0, 1, 0 …
            m.data(cpu, BASE, 8, false, WB); // spin read: a miss the peer's dirty copy supplies
            m.data(cpu, BASE, 8, false, WB); // spinning on: hits
            m.data(cpu, BASE, 8, true, WB); // the write: S → M, the peer's copy invalidated
        }
        let d: Vec<Coherence> = m.coherence().iter().zip(&before).map(|(a, b)| *a - *b).collect();
        let sum = |f: fn(&Coherence) -> u64| d.iter().map(f).sum::<u64>();
        assert_eq!(sum(|c| c.interventions), handovers, "one intervention per hand-over");
        assert_eq!(sum(|c| c.upgrades), handovers, "one upgrade per hand-over");
        assert_eq!(sum(|c| c.invalidations), handovers, "one invalidation per hand-over");
        assert_eq!(sum(|c| c.snoop_hits), 2 * handovers, "the read's snoop and the upgrade's");
        assert_eq!(sum(|c| c.snoop_misses), 2 * handovers * 2, "vCPUs 2 and 3 are snooped in vain");
        assert_eq!(d[2].snoop_hits + d[3].snoop_hits, 0);
        // The line ends dirty in one L1D only.
        assert_eq!((0..4).filter(|&k| m.l1d(k).holds_dirty(BASE >> 6)).count(), 1);
    }
}

#[test]
fn coherence_false_sharing_vanishes_when_padded() {
    let run = |stride: u64| {
        let mut m = Model::new(&rpi4(), 4);
        // Each vCPU increments its counter 10 times per turn, 20 turns round-robin.
        for _ in 0..20 {
            for cpu in 0..4 {
                for _ in 0..10 {
                    let a = BASE + cpu as u64 * stride;
                    m.data(cpu, a, 8, false, WB);
                    m.data(cpu, a, 8, true, WB);
                }
            }
        }
        (coh_sum(&m, |c| c.invalidations), coh_sum(&m, |c| c.interventions))
    };
    let (inv, int) = run(8);
    // Every turn after the first takes the line from the previous vCPU: 79 transfers.
    assert_eq!((inv, int), (79, 79), "shared line");
    assert_eq!(run(64), (0, 0), "padded to a line: nothing moves");
}

#[test]
fn coherence_off_keeps_private_copies_apart() {
    let mut m = Model::new(&rpi4(), 2);
    m.disable_coherence();
    assert!(!m.is_coherent());
    m.data(0, BASE, 8, true, WB);
    m.data(1, BASE, 8, true, WB);
    // Both L1Ds hold the line dirty: nothing snooped, nothing counted.
    assert!(m.l1d(0).holds_dirty(BASE >> 6) && m.l1d(1).holds_dirty(BASE >> 6));
    assert_eq!(m.coherence(), &[Coherence::default(); 2][..]);
}

#[test]
fn coherence_reads_share_and_writes_invalidate() {
    let mut m = Model::new(&rpi4(), 3);
    for cpu in 0..3 {
        m.data(cpu, BASE, 8, false, WB);
    }
    // 1 and 2 read clean copies: snoops hit, no intervention.
    assert_eq!((coh_sum(&m, |c| c.snoop_hits), coh_sum(&m, |c| c.interventions)), (3, 0));
    m.data(2, BASE, 8, true, WB);
    assert_eq!((m.coherence()[2].upgrades, m.coherence()[0].invalidations, m.coherence()[1].invalidations), (1, 1, 1));
    assert!(m.l1d(0).probe(BASE >> 6).is_none() && m.l1d(1).probe(BASE >> 6).is_none());
    // The owner writes again: silent (M).
    let before = m.coherence().to_vec();
    m.data(2, BASE, 8, true, WB);
    assert_eq!(m.coherence(), &before[..]);
    // A write-through write and DC ZVA invalidate the other copies too.
    m.data(0, BASE + 4096, 8, false, WB);
    m.data(1, BASE + 4096, 8, true, Attr::NormalWriteThrough);
    assert!(m.l1d(0).probe((BASE + 4096) >> 6).is_none());
    m.data(0, BASE + 8192, 8, false, WB);
    m.dc_zva(1, BASE + 8192, WB);
    assert!(m.l1d(0).probe((BASE + 8192) >> 6).is_none());
    // Non-cacheable accesses are not snooped.
    let before = m.coherence().to_vec();
    m.data(0, BASE, 8, true, NC);
    assert_eq!(m.coherence(), &before[..]);
}

#[test]
fn coherence_broadcast_maintenance_reaches_other_vcpus() {
    let mut m = Model::new(&rpi4(), 2);
    for l in 0..64u64 {
        m.data(1, BASE + 64 * l, 8, true, WB);
    }
    let before = m.totals();
    for l in 0..64u64 {
        m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE + 64 * l);
    }
    assert_eq!(m.coherence()[1].remote_maint, 64, "every line was in vCPU 1's L1D");
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 64);
    m.fetch(1, BASE, WB);
    m.ic_invalidate_pa(0, BASE);
    m.ic_invalidate_all(0, true);
    m.ic_invalidate_all(0, false);
    assert_eq!(m.coherence()[1].remote_maint, 66, "IC IVAU found the line, IALLUIS counts, IALLU is local");
    assert_eq!(m.coherence()[0].remote_maint, 0);
}

#[test]
fn coherence_is_off_with_one_vcpu() {
    let mut m = Model::new(&rpi4(), 1);
    let mut rng = 3;
    for _ in 0..20_000 {
        if let Op::Data { cpu, pa, size, write, attr, pc, nt } = random_op(&mut rng, 1, 4 << 10, true) {
            m.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
        }
    }
    assert_eq!(m.coherence(), &[Coherence::default()]);
}

/// Random multi-vCPU traces over a few lines (heavy sharing), every policy and sharing mix:
/// shared L2; private L2 + shared L3 (the Pi 5's shape); private L2 only (the PoC is memory);
/// with and without a hardware prefetcher. The reference implements rule 17 independently.
#[test]
fn coherence_agrees_with_reference_on_random_traces() {
    let mut events = Coherence::default();
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        for (sharing, l3) in [(Sharing::Shared, false), (Sharing::Private, true), (Sharing::Private, false), (Sharing::Shared, true)] {
            for (vcpus, span, seed) in [(4usize, 1u64 << 10, 21u64), (4, 8 << 10, 22), (2, 512, 23)] {
                for hwpf in [HwPfKind::Off, HwPfKind::NextLine] {
                    let h = with_hwpf(small(policy, sharing, l3), hwpf, 1, 2);
                    let mut rng = seed ^ policy as u64;
                    let mut m = Model::new(&h, vcpus);
                    let mut r = RefModel::new(&h, vcpus);
                    for n in 0..25_000u32 {
                        let op = random_op(&mut rng, vcpus, span, true);
                        apply(&mut m, &mut r, op, u64::from(h.zva_bytes));
                        if n % 499 == 0 {
                            assert_eq!(m.coherence(), &r.coh[..], "coherence diverged after {n} ({op:?}) with {h:?}");
                            assert_eq!(m.totals(), r.totals, "diverged after {n} ({op:?}) with {h:?}");
                        }
                    }
                    assert_eq!(m.coherence(), &r.coh[..], "{h:?}");
                    assert_eq!(m.totals(), r.totals, "{h:?}");
                    events = m.coherence().iter().fold(events, |a, c| a + *c);
                }
            }
        }
    }
    // Every counter is exercised.
    assert!(events.values().iter().all(|&v| v > 1000), "{events:?}");
}

#[path = "tests_policy.rs"]
mod policy;

#[path = "tests_alloc.rs"]
mod alloc;

#[path = "tests_silicon.rs"]
mod silicon;

/// Speed of the core with the sanitizer on, writes included (not a test: `cargo test --release
/// --manifest-path host/Cargo.toml --target host-tuple -p cachescope-cache-model sanitizer_speed
/// -- --ignored --nocapture`). Pi 4 geometry; every access goes to the model (no shortcut): 8-byte
/// loads and stores over a 16 KiB loop (L1 hits, each line's eight words in turn), stores over an
/// 8 MiB stream (L1 and L2 misses, dirty victims), and fetches of code the loop writes. Best of 9.
#[test]
#[ignore]
fn sanitizer_speed() {
    type Step = fn(&mut Model, u64);
    let cases: [(&str, u64, Step); 4] = [
        ("load, L1 hit (16 KiB)", 16 << 10, |m, a| {
            m.data(0, BASE + a, 8, false, WB);
        }),
        ("store, L1 hit (16 KiB)", 16 << 10, |m, a| {
            m.data(0, BASE + a, 8, true, WB);
        }),
        ("store, L1+L2 miss (8 MiB stream)", 8 << 20, |m, a| {
            m.data(0, BASE + a * 8, 8, true, WB);
        }),
        ("store + fetch of the line (16 KiB)", 16 << 10, |m, a| {
            m.data(0, BASE + a, 8, true, WB);
            m.fetch(0, BASE + (a ^ 0x20), WB);
        }),
    ];
    for (name, bytes, step) in cases {
        let mut m = Model::new(&rpi4(), 1);
        m.enable_sanitizer(false, false);
        let n = 4u64 << 20;
        let mut best = f64::MAX;
        for _ in 0..9 {
            let t = std::time::Instant::now();
            let mut a = 0;
            for _ in 0..n {
                step(&mut m, a);
                a = (a + 8) % bytes;
            }
            best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
            m.take_events();
        }
        eprintln!("{name:38} {best:6.1} ns per step");
    }
}

// ---- topology (rule 19) ----------------------------------------------------------------------

#[path = "tests_topology.rs"]
mod topology;

#[path = "tests_shareability.rs"]
mod shareability;

#[path = "tests_vipt.rs"]
mod vipt;

#[test]
fn a_concurrently_modifiable_instruction_store_is_not_stale_code() {
    use crate::sanitize::HazardKind::{SharedLine, StaleInstruction};
    // Linux's jump labels: one core stores a B or a NOP over a NOP or a B (a single aligned
    // 4-byte store) while another may run it; the Arm ARM (B2.2.5) lets the fetch see either.
    let code = BASE + 0x2000;
    for (cmodx, kind) in [(true, SharedLine), (false, StaleInstruction)] {
        let mut m = sanitized();
        m.fetch_range(0, code, 0x20, WB);
        m.data_in_domain(0, code + 8, 4, true, WB, Hint { pc: 0x4242, nt: false }, crate::hierarchy::Shareability::Inner, cmodx);
        m.fetch_range(0, code + 8, 4, WB);
        assert_eq!(kinds(&mut m), [(kind, code)], "cmodx {cmodx}");
        // Another store to the same bytes that is not such an instruction makes them stale.
        if cmodx {
            m.data_hint(0, code + 8, 4, true, WB, Hint { pc: 0x4343, nt: false });
            m.fetch_range(0, code + 8, 4, WB);
            assert_eq!(kinds(&mut m), [(StaleInstruction, code)]);
        }
    }
}
