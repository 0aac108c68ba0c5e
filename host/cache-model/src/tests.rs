//! Behaviour tests of the simulator core, and agreement with the reference simulator.

use crate::cache::{xorshift64star, Policy};
use crate::decode::{decode_set_way, encode_set_way};
use crate::geometry::{Geometry, Hierarchy, LowerLevel, Sharing};
use crate::model::{Attr, Level, MaintOp, Model, Point, Totals};
use crate::reference::RefModel;

const WB: Attr = Attr::NormalWriteBack;
const BASE: u64 = 0x4000_0000;

fn g(s: &str) -> Geometry {
    Geometry::parse(s).unwrap()
}

/// L1 32 KiB 2-way, L2 1 MiB 16-way (the Pi 4).
fn rpi4() -> Hierarchy {
    Hierarchy::profile("rpi4").unwrap()
}

fn small(policy: Policy, sharing: Sharing, l3: bool) -> Hierarchy {
    let mut lower = vec![LowerLevel { geometry: g("2K:4:64"), sharing }];
    if l3 {
        lower.push(LowerLevel { geometry: g("8K:8:128"), sharing: Sharing::Shared });
    }
    Hierarchy { l1i: g("512:2:32"), l1d: g("1K:2:64"), lower, policy, seed: 42, zva_bytes: 128 }
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
        h.policy = policy;
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
        m.dc_by_pa(0, MaintOp::CleanInvalidate, Point::Coherency, a);
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
        m.dc_by_pa(0, MaintOp::Invalidate, Point::Coherency, a);
    }
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 0);
    // Clean to PoU writes L1D lines back into L2 and keeps them.
    scan(&mut m, BASE, 4 << 10, 64, true, WB);
    let before = m.totals();
    for a in (BASE..BASE + (4 << 10)).step_by(64) {
        m.dc_by_pa(0, MaintOp::Clean, Point::Unification, a);
    }
    let t = m.totals() - before;
    assert_eq!((t.get(Level::L1D).writebacks, t.get(Level::L2).maint), (64, 0));
    assert_eq!(scan(&mut m, BASE, 4 << 10, 64, false, WB).get(Level::L1D).hits, 64);
}

/// Every set/way of every level, as a kernel's walker does it, through the operand encoding.
fn set_way_walk(m: &mut Model, op: MaintOp) -> u64 {
    let mut n = 0;
    for level in 1..=(1 + m.lower_levels() as u32) {
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
    let ops = set_way_walk(&mut m, MaintOp::CleanInvalidate);
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
    set_way_walk(&mut m, MaintOp::Clean);
    assert_eq!((m.totals() - before).get(Level::L1D).writebacks, 256);
    assert_eq!(scan(&mut m, BASE, 16 << 10, 64, false, WB).get(Level::L1D).hits, 256);
    // Out-of-range set/way or level: counted, no effect.
    m.dc_set_way(0, MaintOp::Invalidate, 1, 9999, 0);
    m.dc_set_way(0, MaintOp::Invalidate, 5, 0, 0);
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
    set_way_walk(&mut m, MaintOp::Clean);
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
    m.ic_invalidate_pa(BASE + 8);
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

// ---- agreement with the reference simulator ---------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Op {
    Data { cpu: usize, pa: u64, size: u32, write: bool, attr: Attr },
    Fetch { cpu: usize, pa: u64 },
    DcPa { op: MaintOp, point: Point, pa: u64 },
    SetWay { cpu: usize, op: MaintOp, level: u32, set: usize, way: usize },
    Zva { cpu: usize, pa: u64, attr: Attr },
    IcAll { cpu: usize, all: bool },
    IcPa { pa: u64 },
}

fn apply(m: &mut Model, r: &mut RefModel, op: Op, zva: u64) {
    match op {
        Op::Data { cpu, pa, size, write, attr } => {
            m.data(cpu, pa, size, write, attr);
            r.data(cpu, pa, size, write, attr);
        }
        Op::Fetch { cpu, pa } => {
            m.fetch(cpu, pa, WB);
            r.fetch(cpu, pa, WB);
        }
        Op::DcPa { op, point, pa } => {
            m.dc_by_pa(0, op, point, pa);
            r.dc_by_pa(op, point, pa);
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
        Op::IcPa { pa } => {
            m.ic_invalidate_pa(pa);
            r.ic_invalidate_pa(pa);
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
        _ => WB,
    };
    let pick = r() % 100;
    let ops = [MaintOp::Clean, MaintOp::Invalidate, MaintOp::CleanInvalidate];
    match pick {
        0..=69 => Op::Data { cpu, pa, size: [1, 4, 8, 16, 32][(r() % 5) as usize], write: r() % 3 == 0, attr },
        70..=84 => Op::Fetch { cpu, pa },
        _ if !mixed => Op::Data { cpu, pa, size: 8, write: false, attr: WB },
        85..=89 => Op::DcPa { op: ops[(r() % 3) as usize], point: if r() % 4 == 0 { Point::Unification } else { Point::Coherency }, pa },
        90..=93 => {
            Op::SetWay { cpu, op: ops[(r() % 3) as usize], level: 1 + (r() % 3) as u32, set: (r() % 40) as usize, way: (r() % 9) as usize }
        }
        94..=96 => Op::Zva { cpu, pa, attr },
        97 => Op::IcAll { cpu, all: r() % 2 == 0 },
        _ => Op::IcPa { pa },
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
        }
    }
    assert_eq!(m.totals(), r.totals, "diverged at the end with {h:?}");
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

/// Associativities on both sides of the packed replacement order's 16-way limit: direct-mapped
/// L1I, 3-way L1D, 32-way L2 (byte list), 16-way L3 (packed), every policy.
#[test]
fn agrees_with_reference_with_odd_and_wide_ways() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        let lower = vec![
            LowerLevel { geometry: g("8K:32:64"), sharing: Sharing::Private },
            LowerLevel { geometry: g("32K:16:64"), sharing: Sharing::Shared },
        ];
        let h = Hierarchy { l1i: g("1K:1:64"), l1d: g("1536:3:64"), lower, policy, seed: 5, zva_bytes: 64 };
        for (seed, span) in [(11u64, 16u64 << 10), (12, 96 << 10)] {
            let mut rng = seed;
            check_agreement(&h, 2, (0..40_000).map(|_| random_op(&mut rng, 2, span, true)));
        }
    }
}

#[test]
fn agrees_with_reference_on_structured_traces() {
    for policy in [Policy::Lru, Policy::Fifo, Policy::Random] {
        let h = Hierarchy { policy, ..rpi4() };
        // Strided scans at the capacity knees, read then write, then set/way and by-address maintenance.
        let mut ops = Vec::new();
        for &(bytes, stride) in
            &[(16u64 << 10, 64u64), (32 << 10, 64), (48 << 10, 64), (1 << 20, 64), (1536 << 10, 64), (64 << 10, 4096 + 64)]
        {
            for pass in 0..3 {
                for a in (0..bytes).step_by(stride as usize) {
                    ops.push(Op::Data { cpu: 0, pa: BASE + a % (8 << 20), size: 8, write: pass == 1, attr: WB });
                }
            }
        }
        for way in 0..2 {
            for set in 0..256 {
                ops.push(Op::SetWay { cpu: 0, op: MaintOp::CleanInvalidate, level: 1, set, way });
            }
        }
        for a in (0..(64 << 10)).step_by(64) {
            ops.push(Op::DcPa { op: MaintOp::CleanInvalidate, point: Point::Coherency, pa: BASE + a });
            ops.push(Op::Fetch { cpu: 0, pa: BASE + (a * 7) % (1 << 20) });
        }
        // A pointer chase over 4 MiB in a fixed pseudo-random order.
        let mut rng = 99;
        for _ in 0..50_000 {
            ops.push(Op::Data { cpu: 0, pa: BASE + (xorshift64star(&mut rng) % (4 << 20)) / 64 * 64, size: 8, write: false, attr: WB });
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
        ("L1+L2 miss, FIFO (8 MiB stream)", Hierarchy { policy: Policy::Fifo, ..rpi4() }, 8 << 20, Level::L2 as u64),
        ("L1+L2 miss, random (8 MiB stream)", Hierarchy { policy: Policy::Random, ..rpi4() }, 8 << 20, Level::L2 as u64),
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
            } else if h.policy != Policy::Random {
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
    let counters = |ws: &[&str]| -> Totals {
        let v: Vec<u64> = ws.iter().map(|w| num(w)).collect();
        assert_eq!(v.len(), 24, "24 counters");
        let mut t = Totals::default();
        for (i, c) in t.levels.iter_mut().enumerate() {
            let x = &v[i * 6..i * 6 + 6];
            *c = crate::model::Counts { accesses: x[0], hits: x[1], misses: x[2], writebacks: x[3], maint: x[4], bypass: x[5] };
        }
        t
    };
    let attr = |w: &str| Attr::try_from(num(w)).expect("attribute code");
    let op = |w: &str| [MaintOp::Clean, MaintOp::Invalidate, MaintOp::CleanInvalidate][num(w) as usize];
    let mut r: Option<(RefModel, u64)> = None;
    let mut ops = 0u64;
    let mut ended = false;
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        if w[0] == "H" {
            // H vcpus l1i l1d [geometry sharing]… policy seed zva
            let n = w.len();
            let lower = w[4..n - 3]
                .chunks(2)
                .map(|p| LowerLevel { geometry: g(p[0]), sharing: if p[1] == "shared" { Sharing::Shared } else { Sharing::Private } })
                .collect();
            let h = Hierarchy {
                l1i: g(w[2]),
                l1d: g(w[3]),
                lower,
                policy: Policy::parse(w[n - 3]).unwrap(),
                seed: num(w[n - 2]),
                zva_bytes: num(w[n - 1]) as u32,
            };
            r = Some((RefModel::new(&h, num(w[1]) as usize), u64::from(h.zva_bytes)));
            continue;
        }
        let (m, zva) = r.as_mut().expect("H line first");
        match w[0] {
            "C" => m.totals = counters(&w[1..]),
            "D" => m.data(num(w[1]) as usize, num(w[2]), num(w[3]) as u32, w[4] == "1", attr(w[5])),
            "F" => m.fetch(num(w[1]) as usize, num(w[2]), attr(w[3])),
            "P" => m.dc_by_pa(op(w[1]), if w[2] == "0" { Point::Coherency } else { Point::Unification }, num(w[3])),
            "S" => m.dc_set_way_slots(num(w[1]) as usize, op(w[2]), num(w[3]) as u32, num(w[4]), num(w[5])),
            "Z" => m.dc_zva(num(w[1]) as usize, num(w[2]), attr(w[3]), *zva),
            "I" => m.ic_invalidate_all(num(w[1]) as usize, w[2] == "1"),
            "V" => m.ic_invalidate_pa(num(w[1])),
            "T" => {
                assert_eq!(m.totals, counters(&w[1..]), "reference and model disagree at the end of {path}");
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
