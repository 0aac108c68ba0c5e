//! Published cache geometries of common Arm cores, to set beside what CCSIDR reports.
//!
//! Architecturally CCSIDR_EL1 is only guaranteed to be good for set/way maintenance; it need not
//! describe the physical cache (and emulators report fixed values: QEMU's cortex-a72 model
//! reports a 4-way 128-set L1D where the silicon is 2-way 256-set). The report prints both when
//! they disagree. Sizes that are configurable at integration are listed; ways and line are not.
//!
//! Sources (Arm Technical Reference Manuals):
//! - Cortex-A53 MPCore TRM r0p4, DDI 0500J: §6.1 L1 (I 2-way, D 4-way, 8–64 KB, 64 B lines),
//!   §7.1 L2 (16-way, 128 KB–2 MB, 64 B lines).
//! - Cortex-A55 Core TRM r2p0, 100442: L1 I and D 4-way 16–64 KB 64 B; L2 4-way 64–256 KB.
//! - Cortex-A72 MPCore TRM r0p3, 100095: L1 I 48 KB 3-way, L1 D 32 KB 2-way, L2 512 KB–4 MB
//!   16-way, all 64 B lines.
//! - Cortex-A76 Core TRM r4p1, 100798: L1 I and D 64 KB 4-way 64 B; L2 128/256/512 KB 8-way.
//! - Neoverse N1 Core TRM r4p1, 100616: L1 I and D 64 KB 4-way 64 B; L2 512 KB or 1 MB 8-way.

use super::id::Ccsidr;
use super::Kind;
use crate::cpuid::Midr;

/// One published cache geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// MIDR part number (implementer Arm, 0x41).
    pub part: u16,
    /// Core name.
    pub core: &'static str,
    /// Cache level.
    pub level: u8,
    /// Cache kind.
    pub kind: Kind,
    /// Associativity.
    pub ways: u32,
    /// Line size in bytes.
    pub line: u32,
    /// Sizes the core can be built with, in KiB.
    pub sizes_kib: &'static [u32],
    /// Where the figures come from.
    pub source: &'static str,
}

const A53: &str = "Cortex-A53 TRM DDI 0500J";
const A55: &str = "Cortex-A55 TRM 100442";
const A72: &str = "Cortex-A72 TRM 100095";
const A76: &str = "Cortex-A76 TRM 100798";
const N1: &str = "Neoverse N1 TRM 100616";

const fn p(part: u16, core: &'static str, level: u8, kind: Kind, ways: u32, sizes_kib: &'static [u32], source: &'static str) -> Published {
    Published { part, core, level, kind, ways, line: 64, sizes_kib, source }
}

/// The table.
pub const TABLE: &[Published] = &[
    p(0xd03, "Cortex-A53", 1, Kind::Instruction, 2, &[8, 16, 32, 64], A53),
    p(0xd03, "Cortex-A53", 1, Kind::Data, 4, &[8, 16, 32, 64], A53),
    p(0xd03, "Cortex-A53", 2, Kind::Unified, 16, &[128, 256, 512, 1024, 2048], A53),
    p(0xd05, "Cortex-A55", 1, Kind::Instruction, 4, &[16, 32, 64], A55),
    p(0xd05, "Cortex-A55", 1, Kind::Data, 4, &[16, 32, 64], A55),
    p(0xd05, "Cortex-A55", 2, Kind::Unified, 4, &[64, 128, 256], A55),
    p(0xd08, "Cortex-A72", 1, Kind::Instruction, 3, &[48], A72),
    p(0xd08, "Cortex-A72", 1, Kind::Data, 2, &[32], A72),
    p(0xd08, "Cortex-A72", 2, Kind::Unified, 16, &[512, 1024, 2048, 4096], A72),
    p(0xd0b, "Cortex-A76", 1, Kind::Instruction, 4, &[64], A76),
    p(0xd0b, "Cortex-A76", 1, Kind::Data, 4, &[64], A76),
    p(0xd0b, "Cortex-A76", 2, Kind::Unified, 8, &[128, 256, 512], A76),
    p(0xd0c, "Neoverse N1", 1, Kind::Instruction, 4, &[64], N1),
    p(0xd0c, "Neoverse N1", 1, Kind::Data, 4, &[64], N1),
    p(0xd0c, "Neoverse N1", 2, Kind::Unified, 8, &[512, 1024], N1),
];

/// The published geometry of the cache of `kind` at `level` of the core `midr` names, if known.
pub fn lookup(midr: Midr, level: u8, kind: Kind) -> Option<&'static Published> {
    if midr.implementer() != 0x41 {
        return None;
    }
    TABLE.iter().find(|e| e.part == midr.part() && e.level == level && e.kind == kind)
}

impl Published {
    /// True when `c` has the published ways and line and one of the published sizes.
    pub fn agrees(&self, c: &Ccsidr) -> bool {
        c.ways == self.ways && c.line() == self.line && self.sizes_kib.iter().any(|&k| k as u64 * 1024 == c.size())
    }

    /// Sets of the silicon cache with the size closest to what CCSIDR reports (same size if the
    /// size is one of the published ones, else the largest published size).
    pub fn sets_for(&self, c: &Ccsidr) -> u32 {
        let kib = self.sizes_kib.iter().copied().find(|&k| k as u64 * 1024 == c.size()).unwrap_or(*self.sizes_kib.last().unwrap_or(&0));
        (kib * 1024).checked_div(self.ways * self.line).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::id::CcsidrFormat;

    #[test]
    fn a72_l1d_silicon_vs_qemu() {
        let a72 = Midr { raw: 0x410f_d083 };
        let e = lookup(a72, 1, Kind::Data).unwrap();
        // Silicon-shaped 32 KiB 2-way 256-set (Pi 4) agrees; QEMU's 4-way 128-set does not.
        let silicon = Ccsidr::decode(0x701f_e00a, CcsidrFormat::Short);
        assert_eq!((silicon.ways, silicon.sets, silicon.size()), (2, 256, 32768));
        assert!(e.agrees(&silicon));
        let qemu = Ccsidr::decode(0x700f_e01a, CcsidrFormat::Short);
        assert_eq!((qemu.ways, qemu.sets, qemu.size()), (4, 128, 32768));
        assert!(!e.agrees(&qemu));
        assert_eq!(e.sets_for(&qemu), 256);
        assert!(lookup(Midr { raw: 0x000f_0510 }, 1, Kind::Data).is_none(), "QEMU max has no silicon");
        assert!(lookup(a72, 3, Kind::Unified).is_none());
    }

    #[test]
    fn table_is_consistent() {
        for e in TABLE {
            for &k in e.sizes_kib {
                assert_eq!((k * 1024) % (e.ways * e.line), 0, "{} L{} {k} KiB", e.core, e.level);
            }
            assert_eq!(TABLE.iter().filter(|x| x.part == e.part && x.level == e.level && x.kind == e.kind).count(), 1);
        }
    }
}
