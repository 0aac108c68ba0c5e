//! The cache topology of this CPU as its identification registers describe it: every cache
//! (level, kind, CCSIDR geometry, CCSIDR2 when readable) plus CLIDR/CTR/DCZID and the CCSIDR
//! format. Read through the [`IdRegs`] seam, so host tests feed raw values.

use core::fmt;

use crate::list::List;

use super::id::{csselr, CacheType, Ccsidr, Ccsidr2, CcsidrFormat, Clidr, Ctr, Dczid, Problem};

/// Access to the cache identification registers.
pub trait IdRegs {
    /// CLIDR_EL1.
    fn clidr(&mut self) -> u64;
    /// ID_AA64MMFR2_EL1 (for the CCIDX field).
    fn mmfr2(&mut self) -> u64;
    /// CSSELR_EL1.
    fn csselr(&mut self) -> u64;
    /// Writes CSSELR_EL1 followed by an ISB.
    fn select(&mut self, csselr: u64);
    /// CCSIDR_EL1 of the selected cache.
    fn ccsidr(&mut self) -> u64;
    /// CCSIDR2_EL1 of the selected cache, `None` when reading it raised an exception (UNDEFINED
    /// without FEAT_CCIDX, or trapped).
    fn ccsidr2(&mut self) -> Option<u64>;
}

pub use super::Kind;

/// One cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cache {
    /// Level (1..=7).
    pub level: u8,
    /// Kind.
    pub kind: Kind,
    /// Geometry from CCSIDR_EL1.
    pub ccsidr: Ccsidr,
    /// CCSIDR2_EL1, when it could be read.
    pub ccsidr2: Option<Ccsidr2>,
}

impl Cache {
    /// `L1d`, `L1i`, `L2`, … (lscpu's names).
    pub fn name(&self) -> CacheName {
        CacheName { level: self.level, kind: self.kind }
    }
}

/// A cache's name as lscpu writes it (`L1d`, `L1i`, `L2`); compares equal to that text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheName {
    /// Level.
    pub level: u8,
    /// Kind.
    pub kind: Kind,
}

impl fmt::Display for CacheName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}{}", self.level, self.kind.suffix())
    }
}

/// Where a [`Problem`] was found: a register or one cache's CCSIDR/CCSIDR2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A register by name (`CLIDR_EL1`, `CTR_EL0`, `DCZID_EL0`).
    Register(&'static str),
    /// A cache's CCSIDR_EL1 / CCSIDR2_EL1.
    Cache(CacheName),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Register(r) => f.write_str(r),
            Origin::Cache(c) => c.fmt(f),
        }
    }
}

/// Every cache of a CPU: at most 7 levels, each with up to two caches.
pub type Caches = List<Cache, 14>;

/// Everything the identification registers say about the caches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// CLIDR_EL1.
    pub clidr: Clidr,
    /// CTR_EL0.
    pub ctr: Ctr,
    /// DCZID_EL0.
    pub dczid: Dczid,
    /// ID_AA64MMFR2_EL1 raw value.
    pub mmfr2: u64,
    /// The CCSIDR format in use.
    pub format: CcsidrFormat,
    /// Every cache, outermost last; per level data/unified first, then instruction.
    pub caches: Caches,
}

impl Topology {
    /// Reads every cache of the levels CLIDR describes (up to the first empty level). CSSELR_EL1
    /// is restored afterwards.
    pub fn read<R: IdRegs>(r: &mut R, ctr: u64, dczid: u64) -> Self {
        let clidr = Clidr::decode(r.clidr());
        let mmfr2 = r.mmfr2();
        let format = CcsidrFormat::from_mmfr2(mmfr2);
        let saved = r.csselr();
        let mut caches = Caches::new();
        for level in 1..=clidr.levels() {
            let t = clidr.level(level);
            let kinds: &[Kind] = match t {
                CacheType::Unified => &[Kind::Unified],
                CacheType::Data => &[Kind::Data],
                CacheType::Instruction => &[Kind::Instruction],
                CacheType::Separate => &[Kind::Data, Kind::Instruction],
                CacheType::None | CacheType::Reserved(_) => &[],
            };
            for &kind in kinds {
                r.select(csselr(level, kind == Kind::Instruction));
                let ccsidr = Ccsidr::decode(r.ccsidr(), format);
                let ccsidr2 = r.ccsidr2().map(Ccsidr2::decode);
                // 7 levels × 2 caches fit the list by construction.
                let _ = caches.push(Cache { level, kind, ccsidr, ccsidr2 });
            }
        }
        r.select(saved);
        Self { clidr, ctr: Ctr { raw: ctr }, dczid: Dczid { raw: dczid }, mmfr2, format, caches }
    }

    /// The cache of `kind` at `level`, if any.
    pub fn cache(&self, level: u8, kind: Kind) -> Option<&Cache> {
        self.caches.iter().find(|c| c.level == level && c.kind == kind)
    }

    /// Σ sets × ways over the data/unified caches in levels `first..=last`: the operation count
    /// of a complete set/way walk of that range.
    pub fn setway_ops(&self, first: u8, last: u8) -> u64 {
        self.caches.iter().filter(|c| c.kind != Kind::Instruction && (first..=last).contains(&c.level)).map(|c| c.ccsidr.lines()).sum()
    }

    /// Every reserved or inconsistent value, labelled with the register or cache it was found
    /// in (at most 64; more are dropped).
    pub fn problems(&self) -> List<(Origin, Problem), 64> {
        let mut out = List::new();
        let registers = [("CLIDR_EL1", self.clidr.problems()), ("CTR_EL0", self.ctr.problems()), ("DCZID_EL0", self.dczid.problems())];
        for (name, problems) in registers {
            for p in problems {
                let _ = out.push((Origin::Register(name), p));
            }
        }
        for c in &self.caches {
            let ccsidr2 = c.ccsidr2.map(|c2| c2.problems()).unwrap_or_default();
            for p in c.ccsidr.problems().into_iter().chain(ccsidr2) {
                let _ = out.push((Origin::Cache(c.name()), p));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::setway::Recorder;
    use std::string::ToString;
    use std::vec::Vec;

    /// QEMU cortex-a710 (measured): FEAT_CCIDX, CCSIDR2 readable.
    fn a710() -> Recorder {
        let mut r = Recorder { clidr: 0x14_8200_0023, mmfr2: 0x1011_1012_1011 | 1 << 20, csselr: 2, ..Default::default() };
        r.ccsidr[0] = 0xff_0000_001a;
        r.ccsidr[1] = 0xff_0000_001a;
        r.ccsidr[2] = 0x3ff_0000_003a;
        r.ccsidr2[0] = Some(0xff);
        r.ccsidr2[1] = Some(0xff);
        r.ccsidr2[2] = Some(0x3ff);
        r
    }

    #[test]
    fn reads_every_cache_in_lscpu_order() {
        let mut r = a710();
        let t = Topology::read(&mut r, 0x4_9444_c004, 0x4);
        assert_eq!(t.format, CcsidrFormat::Ccidx);
        let names: Vec<_> = t.caches.iter().map(|c| (c.name().to_string(), c.ccsidr.size(), c.ccsidr.ways, c.ccsidr.sets)).collect();
        assert_eq!(names, [("L1d".into(), 65536, 4, 256), ("L1i".into(), 65536, 4, 256), ("L2".into(), 524288, 8, 1024)]);
        assert_eq!(t.cache(2, Kind::Unified).unwrap().ccsidr2.unwrap().sets, 1024);
        assert_eq!(t.setway_ops(1, 2), 4 * 256 + 8 * 1024, "instruction caches are not walked");
        assert_eq!(t.setway_ops(1, 0), 0);
        assert!(t.problems().is_empty(), "{:?}", t.problems());
        assert_eq!(r.csselr, 2, "CSSELR restored");
    }

    #[test]
    fn undefined_ccsidr2_and_problems_are_reported() {
        let mut r = a710();
        r.ccsidr2 = [None; 16];
        r.mmfr2 = 0;
        // Read as the 32-bit layout, the CCIDX values set RES0 bits: reported, not trusted.
        let t = Topology::read(&mut r, 0x8444_c004, 0x4);
        assert!(t.caches.iter().all(|c| c.ccsidr2.is_none()));
        let p = t.problems();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p.iter().all(|(_, q)| matches!(q, Problem::Res0Set { register: "CCSIDR_EL1", .. })));
    }
}
