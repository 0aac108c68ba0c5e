//! The one set/way walker, in the shape of TF-A's `do_dcsw_op` (lib/aarch64/cache_helpers.S).
//!
//! [`walk`] is generic over a [`Backend`]: on the target `Hardware` issues real DC ISW/CSW/CISW
//! instructions and counts them; on the host (and in target self-checks) `Recorder` (feature `recorder`) plays a
//! CPU from raw register values and logs every event, so tests prove that every (level, set, way)
//! of every data/unified level in scope is visited exactly once and in the right barriers.
//!
//! Sequence: read CLIDR_EL1 and ID_AA64MMFR2_EL1 (CCSIDR format: the FEAT_CCIDX choice lives
//! here, never at call sites); save CSSELR_EL1; for each level in scope with a data or unified
//! cache select it (CSSELR write + ISB) and decode CCSIDR_EL1, refusing the whole walk before any
//! operation if a geometry cannot be encoded; then per level: DSB, then one DC per (set, way);
//! finally restore CSSELR_EL1 (+ ISB) and DSB + ISB.
//!
//! Operand (Arm ARM C5.3.x, DC CISW): `(level − 1) << 1 | set << log2(line) | way << (32 −
//! ⌈log2(ways)⌉)`; with one way there is no way field.
//!
//! Entry point on the target: `dcsw(op, scope)` (walks, returns the count or the refusal; prints
//! nothing — the caller records).

use core::fmt;

use super::id::{ceil_log2, csselr, Ccsidr, CcsidrFormat, Clidr, Problem};
use super::topology::IdRegs;

/// A set/way data-cache operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetWayOp {
    /// DC ISW: invalidate (dirty data is lost).
    Invalidate,
    /// DC CSW: clean.
    Clean,
    /// DC CISW: clean and invalidate.
    CleanInvalidate,
}

impl SetWayOp {
    /// The record name: `isw`, `csw` or `cisw`.
    pub const fn name(self) -> &'static str {
        match self {
            SetWayOp::Invalidate => "isw",
            SetWayOp::Clean => "csw",
            SetWayOp::CleanInvalidate => "cisw",
        }
    }
}

/// Which cache levels a walk covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Levels 1..=LoC (everything needed to reach the Point of Coherency).
    ToLoC,
    /// Levels 1..=LoUIS (to the Point of Unification, Inner Shareable).
    ToLoUIS,
    /// One level, numbered from 1 (L1) to 7.
    Level(u8),
}

impl Scope {
    /// The record name: `loc`, `louis`, `level1` … `level7` (`level?` for an invalid level).
    pub const fn name(self) -> &'static str {
        match self {
            Scope::ToLoC => "loc",
            Scope::ToLoUIS => "louis",
            Scope::Level(1) => "level1",
            Scope::Level(2) => "level2",
            Scope::Level(3) => "level3",
            Scope::Level(4) => "level4",
            Scope::Level(5) => "level5",
            Scope::Level(6) => "level6",
            Scope::Level(7) => "level7",
            Scope::Level(_) => "level?",
        }
    }

    /// The inclusive level range this scope covers under `clidr` (empty when the bound is 0).
    pub fn levels(self, clidr: &Clidr) -> Result<core::ops::RangeInclusive<u8>, WalkError> {
        match self {
            Scope::ToLoC => Ok(1..=clidr.loc),
            Scope::ToLoUIS => Ok(1..=clidr.louis),
            Scope::Level(n @ 1..=7) => Ok(n..=n),
            Scope::Level(n) => Err(WalkError::BadLevel(n)),
        }
    }
}

/// Why a walk was refused. A refused walk executes no DC instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// `Scope::Level(n)` with n outside 1..=7.
    BadLevel(u8),
    /// A level's CCSIDR geometry cannot be encoded as a set/way operand.
    Geometry {
        /// Cache level (1..=7).
        level: u8,
        /// What is wrong.
        problem: Problem,
    },
    /// DC ISW was asked for while SCTLR_EL1.C = 1: it would discard live dirty data.
    InvalidateWithCachesOn,
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkError::BadLevel(n) => write!(f, "cache level {n} does not exist (levels are 1..=7)"),
            WalkError::Geometry { level, problem } => write!(f, "L{level}: {problem}"),
            WalkError::InvalidateWithCachesOn => {
                write!(
                    f,
                    "invalidate by set/way refused: data caches are on (SCTLR_EL1.C=1) and dirty data would be lost; use clean+invalidate"
                )
            }
        }
    }
}

/// What a walker needs from a CPU: its identification registers, barriers and DC set/way.
pub trait Backend {
    /// The identification registers.
    type Ids: IdRegs;
    /// Access to them.
    fn ids(&mut self) -> &mut Self::Ids;
    /// DSB SY.
    fn dsb(&mut self);
    /// ISB.
    fn isb(&mut self);
    /// One DC ISW/CSW/CISW with the given operand.
    fn dc(&mut self, op: SetWayOp, operand: u64);
}

/// One level a walk covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelWalk {
    /// Cache level (1..=7).
    pub level: u8,
    /// Its geometry as used for the walk.
    pub geometry: Ccsidr,
}

/// The outcome of a walk. Fixed-size: the walker never allocates (it runs while caches are being
/// flushed, and may run before a heap exists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    levels: [Option<LevelWalk>; 7],
    count: usize,
    /// DC operations issued: Σ sets × ways over `levels`.
    pub ops: u64,
}

impl Walk {
    /// The levels walked, in order (levels without a data/unified cache are absent).
    pub fn levels(&self) -> impl Iterator<Item = &LevelWalk> {
        self.levels[..self.count].iter().flatten()
    }
}

/// The set/way operand for (level 1..=7, set, way) of a cache with geometry `g`.
pub const fn operand(level: u8, set: u32, way: u32, g: &Ccsidr) -> u64 {
    let way_field = if g.ways == 1 { 0 } else { (way as u64) << g.way_shift() };
    ((level as u64 - 1) & 7) << 1 | (set as u64) << g.log2_line | way_field
}

/// The walker. Refuses (no DC issued, CSSELR restored) if a geometry in scope cannot be encoded.
///
/// ```
/// use cachescope_arch::cache::setway::{walk, Backend, Scope, SetWayOp};
/// use cachescope_arch::cache::topology::IdRegs;
/// // A CPU with one 4 KiB 2-way L1D (32 sets, 64-byte lines): CLIDR says data cache, LoC = 1.
/// struct Tiny { csselr: u64, dc: u64 }
/// impl IdRegs for Tiny {
///     fn clidr(&mut self) -> u64 { 0b010 | 1 << 24 }
///     fn mmfr2(&mut self) -> u64 { 0 }
///     fn csselr(&mut self) -> u64 { self.csselr }
///     fn select(&mut self, v: u64) { self.csselr = v }
///     fn ccsidr(&mut self) -> u64 { 31 << 13 | 1 << 3 | 2 }
///     fn ccsidr2(&mut self) -> Option<u64> { None }
/// }
/// impl Backend for Tiny {
///     type Ids = Self;
///     fn ids(&mut self) -> &mut Self { self }
///     fn dsb(&mut self) {}
///     fn isb(&mut self) {}
///     fn dc(&mut self, _: SetWayOp, _: u64) { self.dc += 1 }
/// }
/// let mut cpu = Tiny { csselr: 0, dc: 0 };
/// let w = walk(&mut cpu, SetWayOp::Clean, Scope::ToLoC).unwrap();
/// assert_eq!((w.ops, cpu.dc), (64, 64)); // 32 sets × 2 ways
/// ```
pub fn walk<B: Backend>(b: &mut B, op: SetWayOp, scope: Scope) -> Result<Walk, WalkError> {
    let ids = b.ids();
    let clidr = Clidr::decode(ids.clidr());
    let range = scope.levels(&clidr)?;
    let format = CcsidrFormat::from_mmfr2(ids.mmfr2());
    let saved = ids.csselr();

    let mut levels = [None; 7];
    let mut count = 0;
    for level in range {
        if !clidr.level(level).has_data() {
            continue;
        }
        ids.select(csselr(level, false));
        let geometry = Ccsidr::decode(ids.ccsidr(), format);
        if !geometry.setway_fits() {
            ids.select(saved);
            let problem = Problem::SetWayDoesNotFit {
                log2_line: geometry.log2_line,
                set_bits: ceil_log2(geometry.sets as u64),
                way_bits: ceil_log2(geometry.ways as u64),
            };
            return Err(WalkError::Geometry { level, problem });
        }
        levels[count] = Some(LevelWalk { level, geometry });
        count += 1;
    }

    let mut ops = 0u64;
    for lw in levels[..count].iter().flatten() {
        b.dsb();
        let g = &lw.geometry;
        for way in 0..g.ways {
            for set in 0..g.sets {
                b.dc(op, operand(lw.level, set, way, g));
            }
        }
        ops += g.lines();
    }
    b.ids().select(saved);
    b.dsb();
    b.isb();
    Ok(Walk { levels, count, ops })
}

/// One event seen by a `Recorder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// CSSELR_EL1 write (+ ISB).
    Select(u64),
    /// DSB.
    Dsb,
    /// ISB.
    Isb,
    /// A DC set/way operation.
    Dc(SetWayOp, u64),
}

/// A CPU played from raw register values that logs everything the walker does (feature
/// `recorder`: its log needs `alloc`).
#[cfg(any(test, feature = "recorder"))]
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// CLIDR_EL1.
    pub clidr: u64,
    /// ID_AA64MMFR2_EL1.
    pub mmfr2: u64,
    /// CCSIDR_EL1 per CSSELR value (index = CSSELR\[3:0\]: (level − 1) << 1 | InD).
    pub ccsidr: [u64; 16],
    /// CCSIDR2_EL1 per CSSELR value; `None` plays an UNDEFINED register.
    pub ccsidr2: [Option<u64>; 16],
    /// Current CSSELR_EL1.
    pub csselr: u64,
    /// Everything the walker did, in order.
    pub log: alloc::vec::Vec<Event>,
}

#[cfg(any(test, feature = "recorder"))]
impl IdRegs for Recorder {
    fn clidr(&mut self) -> u64 {
        self.clidr
    }
    fn mmfr2(&mut self) -> u64 {
        self.mmfr2
    }
    fn csselr(&mut self) -> u64 {
        self.csselr
    }
    fn select(&mut self, v: u64) {
        self.csselr = v;
        self.log.push(Event::Select(v));
    }
    fn ccsidr(&mut self) -> u64 {
        self.ccsidr[(self.csselr & 0xf) as usize]
    }
    fn ccsidr2(&mut self) -> Option<u64> {
        self.ccsidr2[(self.csselr & 0xf) as usize]
    }
}

#[cfg(any(test, feature = "recorder"))]
impl Backend for Recorder {
    type Ids = Self;
    fn ids(&mut self) -> &mut Self {
        self
    }
    fn dsb(&mut self) {
        self.log.push(Event::Dsb);
    }
    fn isb(&mut self) {
        self.log.push(Event::Isb);
    }
    fn dc(&mut self, op: SetWayOp, operand: u64) {
        self.log.push(Event::Dc(op, operand));
    }
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::*;
    use crate::hw;
    use crate::sysreg::SCTLR_EL1;
    use tock_registers::interfaces::Readable;

    /// The real CPU: issues DC instructions and counts them.
    pub struct Hardware {
        /// DC set/way instructions executed so far.
        pub executed: u64,
        invalidate_allowed: bool,
        cpu: hw::Cpu,
    }

    impl Hardware {
        /// A backend that has executed nothing yet. DC ISW is only issued when SCTLR_EL1.C = 0
        /// at creation: otherwise Invalidate operations are dropped and not counted ([`dcsw`]
        /// refuses such a walk before it starts).
        pub fn new() -> Self {
            let caches_on = SCTLR_EL1.is_set(SCTLR_EL1::C);
            Self { executed: 0, invalidate_allowed: !caches_on, cpu: hw::Cpu }
        }
    }

    impl Default for Hardware {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Backend for Hardware {
        type Ids = hw::Cpu;
        fn ids(&mut self) -> &mut hw::Cpu {
            &mut self.cpu
        }
        fn dsb(&mut self) {
            hw::dsb_sy();
        }
        fn isb(&mut self) {
            hw::isb();
        }
        fn dc(&mut self, op: SetWayOp, operand: u64) {
            match op {
                // SAFETY: `invalidate_allowed` means data caches were off when the walk began
                // (SCTLR_EL1.C = 0): nothing written through them is held dirty in a cache.
                SetWayOp::Invalidate if self.invalidate_allowed => unsafe { hw::dc_isw(operand) },
                SetWayOp::Invalidate => return,
                SetWayOp::Clean => hw::dc_csw(operand),
                SetWayOp::CleanInvalidate => hw::dc_cisw(operand),
            }
            self.executed += 1;
        }
    }

    /// Walks `scope` with `op` on this CPU. Returns the number of DC instructions executed
    /// (Σ sets × ways over the data/unified levels in scope), or why the walk was refused (then
    /// nothing was executed). `Invalidate` is refused while SCTLR_EL1.C=1. Prints nothing and
    /// allocates nothing: the caller records.
    pub fn dcsw(op: SetWayOp, scope: Scope) -> Result<u64, WalkError> {
        let mut b = Hardware::new();
        if op == SetWayOp::Invalidate && !b.invalidate_allowed {
            return Err(WalkError::InvalidateWithCachesOn);
        }
        walk(&mut b, op, scope)?;
        Ok(b.executed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    /// A two-level CPU (CLIDR: L1 I+D, L2 unified, LoUIS 1, LoC 2); the tests derive every
    /// expectation from the decoded CCSIDR values, never from constants.
    fn a72() -> Recorder {
        let mut r = Recorder { clidr: 0x0a20_0023, ..Default::default() };
        r.ccsidr[0] = 0x701f_e01a; // L1D
        r.ccsidr[1] = 0x201f_e012; // L1I
        r.ccsidr[2] = 0x707f_e07a; // L2
        r.csselr = 0x3; // something non-zero to prove it is restored
        r
    }

    fn check_complete(r: &Recorder, op: SetWayOp, levels: &[u8], format: CcsidrFormat) -> u64 {
        let mut expected = BTreeSet::new();
        for &l in levels {
            let g = Ccsidr::decode(r.ccsidr[((l - 1) << 1) as usize], format);
            for s in 0..g.sets {
                for w in 0..g.ways {
                    assert!(expected.insert(operand(l, s, w, &g)), "operand collision L{l} set {s} way {w}");
                }
            }
        }
        let seen: Vec<u64> = r
            .log
            .iter()
            .filter_map(|e| {
                if let Event::Dc(o, v) = e {
                    assert_eq!(*o, op);
                    Some(*v)
                } else {
                    None
                }
            })
            .collect();
        let seen_set: BTreeSet<u64> = seen.iter().copied().collect();
        assert_eq!(seen.len(), seen_set.len(), "an operand was issued twice");
        assert_eq!(seen_set, expected, "visited set differs from every (level,set,way) in scope");
        seen.len() as u64
    }

    #[test]
    fn loc_walk_is_complete_and_barriered() {
        let mut r = a72();
        let w = walk(&mut r, SetWayOp::CleanInvalidate, Scope::ToLoC).unwrap();
        let n = check_complete(&r, SetWayOp::CleanInvalidate, &[1, 2], CcsidrFormat::Short);
        assert_eq!(w.ops, n);
        assert_eq!(w.levels().map(|l| l.level).collect::<Vec<_>>(), [1, 2]);
        // DSB before each level's first DC; CSSELR restored; DSB + ISB at the end.
        let log = &r.log;
        let first_dc = log.iter().position(|e| matches!(e, Event::Dc(..))).unwrap();
        assert_eq!(log[first_dc - 1], Event::Dsb);
        let l2_first = log.iter().position(|e| matches!(e, Event::Dc(_, v) if v & 0xe == 2)).unwrap();
        assert_eq!(log[l2_first - 1], Event::Dsb);
        assert_eq!(&log[log.len() - 3..], &[Event::Select(0x3), Event::Dsb, Event::Isb]);
        assert_eq!(r.csselr, 0x3);
    }

    #[test]
    fn louis_and_single_level() {
        let mut r = a72();
        let w = walk(&mut r, SetWayOp::Clean, Scope::ToLoUIS).unwrap();
        assert_eq!(w.ops, check_complete(&r, SetWayOp::Clean, &[1], CcsidrFormat::Short));
        let mut r = a72();
        let w = walk(&mut r, SetWayOp::Invalidate, Scope::Level(2)).unwrap();
        assert_eq!(w.ops, check_complete(&r, SetWayOp::Invalidate, &[2], CcsidrFormat::Short));
        let mut r = a72();
        let w = walk(&mut r, SetWayOp::Clean, Scope::Level(3)).unwrap();
        assert_eq!(w.ops, 0, "no cache at L3: skipped");
        assert_eq!(walk(&mut a72(), SetWayOp::Clean, Scope::Level(0)), Err(WalkError::BadLevel(0)));
        assert_eq!(walk(&mut a72(), SetWayOp::Clean, Scope::Level(8)), Err(WalkError::BadLevel(8)));
    }

    #[test]
    fn instruction_only_levels_are_skipped() {
        let mut r = a72();
        r.clidr = 0x0300_0000 | 1 | 4 << 3 | 2 << 6; // L1 I only, L2 unified, L3 D only; LoC 3
        r.ccsidr[4] = 0x0003_e00a; // L3
        walk(&mut r, SetWayOp::Clean, Scope::ToLoC).unwrap();
        check_complete(&r, SetWayOp::Clean, &[2, 3], CcsidrFormat::Short);
    }

    #[test]
    fn one_way_and_ccidx() {
        // A direct-mapped L1D (ways = 1) in the CCIDX layout: 64 sets of 64 B.
        let mut r = Recorder { clidr: 0x0100_0002, mmfr2: 1 << 20, ..Default::default() };
        r.ccsidr[0] = (63u64 << 32) | 2;
        let w = walk(&mut r, SetWayOp::Clean, Scope::ToLoC).unwrap();
        assert_eq!(w.ops, 64);
        check_complete(&r, SetWayOp::Clean, &[1], CcsidrFormat::Ccidx);
        // The same raw value read as the short format is a different cache: the choice matters.
        let short = Ccsidr::decode(r.ccsidr[0], CcsidrFormat::Short);
        assert_eq!((short.sets, short.ways), (1, 1));
    }

    #[test]
    fn unencodable_geometry_is_refused_before_any_op() {
        let mut r = a72();
        // L2 with 2^15 sets of 2 KiB lines and 1024 ways: 11 + 15 > 32 - 10.
        r.ccsidr[2] = (0x7fffu64 << 13) | (1023 << 3) | 7;
        let e = walk(&mut r, SetWayOp::Clean, Scope::ToLoC).unwrap_err();
        assert!(matches!(e, WalkError::Geometry { level: 2, .. }), "{e:?}");
        assert!(!r.log.iter().any(|e| matches!(e, Event::Dc(..))));
        assert_eq!(r.csselr, 0x3, "CSSELR restored on refusal");
    }

    #[test]
    fn operand_encoding_matches_tf_a() {
        // 4-way, 256 sets, 64 B line at L2: way in [31:30], set in [13:6], level in [3:1].
        let g = Ccsidr { raw: 0, format: CcsidrFormat::Short, log2_line: 6, ways: 4, sets: 256 };
        assert_eq!(operand(2, 255, 3, &g), 3 << 30 | 255 << 6 | 1 << 1);
        // 3 ways: ⌈log2 3⌉ = 2 → shift 30.
        let g3 = Ccsidr { ways: 3, ..g };
        assert_eq!(operand(1, 1, 2, &g3), 2 << 30 | 1 << 6);
        // 16 ways → shift 28.
        let g16 = Ccsidr { ways: 16, ..g };
        assert_eq!(operand(1, 0, 15, &g16), 15 << 28);
    }

    /// Random CPUs (random CLIDR, small random geometries in either format, sometimes an
    /// unencodable one) and random scopes: the walk is complete and exact, or refused with no DC.
    #[test]
    fn random_cpus_walk_exactly_their_scope() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            let ccidx = next() & 1 == 1;
            let format = if ccidx { CcsidrFormat::Ccidx } else { CcsidrFormat::Short };
            let mut r = Recorder {
                clidr: next() & ((1 << 30) - 1),
                mmfr2: if ccidx { 1 << 20 } else { 0 },
                csselr: next() & 0x1f,
                ..Default::default()
            };
            let saved = r.csselr;
            for i in 0..16 {
                let (line, ways, sets) = if next() % 20 == 0 { (7, 1023, 0x7fff) } else { (next() % 8, next() % 16, next() % 64) };
                r.ccsidr[i] = match format {
                    CcsidrFormat::Short => sets << 13 | ways << 3 | line,
                    CcsidrFormat::Ccidx => sets << 32 | ways << 3 | line,
                };
            }
            let scope = match next() % 3 {
                0 => Scope::ToLoC,
                1 => Scope::ToLoUIS,
                _ => Scope::Level((next() % 9) as u8),
            };
            let clidr = Clidr::decode(r.clidr);
            let result = walk(&mut r, SetWayOp::CleanInvalidate, scope);
            assert_eq!(r.csselr, saved, "CSSELR restored");
            match (result, scope.levels(&clidr)) {
                (Ok(w), Ok(range)) => {
                    let levels: Vec<u8> = range.filter(|&l| clidr.level(l).has_data()).collect();
                    assert_eq!(w.ops, check_complete(&r, SetWayOp::CleanInvalidate, &levels, format));
                }
                (Err(WalkError::BadLevel(n)), Err(_)) => assert!(n == 0 || n > 7),
                (Err(WalkError::Geometry { level, .. }), Ok(range)) => {
                    assert!(range.contains(&level) && clidr.level(level).has_data());
                    assert!(!r.log.iter().any(|e| matches!(e, Event::Dc(..))), "refused walk issued DC");
                }
                (res, lv) => panic!("unexpected {res:?} for {lv:?}"),
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(Scope::Level(3).name(), "level3");
        assert_eq!(Scope::ToLoUIS.name(), "louis");
        assert_eq!(SetWayOp::CleanInvalidate.name(), "cisw");
    }
}
