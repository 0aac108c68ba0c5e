//! The guest CPU's cache geometry from what a plugin can read, before the first instruction.
//!
//! A TCG plugin on QEMU 10.0 reads CLIDR, CSSELR, CTR_EL0 and the ID registers, but not MIDR,
//! MPIDR or CCSIDR (docs/cache-model.md). Of the three ways to get CCSIDR per level, this one is
//! a table of QEMU's CPU models keyed by constant registers the plugin can read at vCPU init
//! ([`KEY_REGS`]), because it is the only one that
//! - knows the geometry **before the first access** (reading CCSIDR when the guest walks with
//!   CSSELR set learns it only at the walk, after the caches were in use: rebuilding the model
//!   then would empty them, and a guest that never walks would never tell);
//! - needs no plugin API v5 (`qemu_plugin_write_register`, QEMU ≥ 10.1, would let the plugin
//!   set CSSELR and execute nothing: it still cannot read CCSIDR);
//! - is exact where it answers: the key is every constant ID value that differs between QEMU's
//!   models (measured: the twelve 64-bit models of QEMU 10.0.2 have twelve distinct keys; the
//!   Cortex-A57 and A72 differ only in ID_MMFR0), and a CPU it does not know gets no answer
//!   (the `fallback` geometry, with a `model-warning` naming its key), never a neighbour's.
//!
//! The geometries are those the kernel's cache suite decodes from CCSIDR on each model under
//! QEMU 10.0.2 (`cargo run -- only=cache -- -cpu NAME`, the `cache` records); the kernel's
//! geometry markers, when sent, override the table, and the plugin warns when they disagree
//! with it, so every kernel run on a listed CPU re-checks its entry: the catalogue's matrix rows
//! (one per model, `profile=guest`) expect `model-run.warnings` 0.

use cachescope_arch::cache::Kind;

use crate::config::GuestGeometry;

/// The registers of the key, in the key's order, by the names QEMU's gdbstub gives them
/// (CLIDR_EL1 is `CLIDR`, ID_MMFR0_EL1 `ID_MMFR0`). All are constant: QEMU's reset does not
/// change them and the guest cannot write them.
pub const KEY_REGS: [&str; 7] =
    ["CTR_EL0", "CLIDR", "ID_AA64ISAR0_EL1", "ID_AA64MMFR0_EL1", "ID_AA64MMFR1_EL1", "ID_AA64DFR0_EL1", "ID_MMFR0"];

/// The key's values ([`KEY_REGS`] order); `None` where the CPU does not expose the register.
pub type Key = [Option<u64>; 7];

/// One cache of a CPU model: level, kind, line bytes, sets, ways.
pub type Cache = (u32, Kind, u32, u64, u64);

/// One CPU model of the table.
#[derive(Debug)]
pub struct CpuModel {
    /// QEMU's `-cpu` name.
    pub name: &'static str,
    /// Its [`KEY_REGS`] values.
    pub key: [u64; 7],
    /// Its caches, as CCSIDR describes them.
    pub caches: &'static [Cache],
}

/// The QEMU version the table was measured on.
pub const QEMU_VERSION: &str = "10.0.2";

use Kind::{Data as D, Instruction as I, Unified as U};

/// QEMU 10.0.2's 64-bit CPU models (`-cpu max` with its default options).
pub const TABLE: &[CpuModel] = &[
    CpuModel {
        name: "cortex-a35",
        key: [0x8444_8004, 0x0a20_0023, 0x11120, 0x10_1122, 0, 0x1030_5106, 0x1020_1105],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 128, 4), (2, U, 64, 512, 16)],
    },
    CpuModel {
        name: "cortex-a53",
        key: [0x8444_8004, 0x0a20_0023, 0x11120, 0x1122, 0, 0x1030_5106, 0x1010_1105],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 512, 1), (2, U, 64, 1024, 16)],
    },
    CpuModel {
        name: "cortex-a55",
        key: [0x8444_8004, 0x8200_0023, 0x1000_1021_1120, 0x10_1122, 0x1021_2122, 0x1030_5408, 0x1020_1105],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 128, 4), (2, U, 64, 512, 16)],
    },
    CpuModel {
        name: "cortex-a57",
        key: [0x8444_c004, 0x0a20_0023, 0x11120, 0x1124, 0, 0x1030_5106, 0x1010_1105],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 256, 3), (2, U, 64, 2048, 16)],
    },
    CpuModel {
        name: "cortex-a72",
        key: [0x8444_c004, 0x0a20_0023, 0x11120, 0x1124, 0, 0x1030_5106, 0x1020_1105],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 256, 3), (2, U, 64, 1024, 16)],
    },
    CpuModel {
        name: "cortex-a76",
        key: [0x8444_c004, 0x8200_0023, 0x1000_1021_1120, 0x10_1122, 0x1021_2122, 0x1030_5408, 0x1020_1105],
        caches: &[(1, D, 64, 256, 4), (1, I, 64, 256, 4), (2, U, 64, 1024, 8)],
    },
    CpuModel {
        name: "neoverse-n1",
        key: [0x8444_c004, 0x8200_0023, 0x1000_1021_1120, 0x10_1125, 0x1021_2122, 0x1030_5408, 0x1020_1105],
        caches: &[(1, D, 64, 256, 4), (1, I, 64, 256, 4), (2, U, 64, 2048, 8)],
    },
    CpuModel {
        name: "neoverse-n2",
        key: [0x4_b444_c004, 0x14_8200_0023, 0x1221_1111_1021_2120, 0x222_0010_1125, 0x1021_2122, 0xf0_1030_5609, 0x1020_1105],
        caches: &[(1, D, 64, 256, 4), (1, I, 64, 256, 4), (2, U, 64, 1024, 8)],
    },
    CpuModel {
        name: "neoverse-v1",
        key: [0xb444_c004, 0x8200_0023, 0x1011_1111_1021_2120, 0x10_1125, 0x1021_2122, 0xf0_1030_5509, 0x1020_1105],
        caches: &[(1, D, 64, 256, 4), (1, I, 64, 256, 4), (2, U, 64, 2048, 8)],
    },
    CpuModel {
        name: "cortex-a710",
        key: [0x4_9444_c004, 0x14_8200_0023, 0x221_1111_1021_2120, 0x222_0010_1122, 0x1021_2122, 0xf0_1030_5609, 0x1020_1105],
        caches: &[(1, D, 64, 256, 4), (1, I, 64, 256, 4), (2, U, 64, 1024, 8)],
    },
    CpuModel {
        name: "a64fx",
        key: [0x8666_8006, 0x8000_0023, 0x1021_1120, 0x1122, 0x1121_2100, 0x1030_5408, 0],
        caches: &[(1, D, 256, 64, 4), (1, I, 256, 64, 4), (2, U, 256, 2048, 16)],
    },
    CpuModel {
        name: "max",
        key: [
            0xb444_c004,
            0x0200_0023,
            0x1221_1111_1021_2120,
            0x2100_0323_1020_1126,
            0x0110_1120_1031_2122,
            0x1000_0000_1030_560a,
            0x1010_1105,
        ],
        caches: &[(1, D, 64, 128, 4), (1, I, 64, 256, 3), (2, U, 64, 2048, 16)],
    },
];

/// The table's model with exactly this key (every register present and equal).
pub fn identify(key: &Key) -> Option<&'static CpuModel> {
    TABLE.iter().find(|m| key.iter().zip(m.key).all(|(v, k)| *v == Some(k)))
}

/// The key as text for a message: `CTR_EL0=0x… CLIDR=0x… …` (`-` where not exposed).
pub fn key_text(key: &Key) -> String {
    KEY_REGS
        .iter()
        .zip(key)
        .map(|(n, v)| match v {
            Some(v) => format!("{n}={v:#x}"),
            None => format!("{n}=-"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl CpuModel {
    /// Its caches as a guest report (what geometry markers would have said).
    pub fn geometry(&self) -> GuestGeometry {
        let mut g = GuestGeometry::default();
        for &(level, kind, line, sets, ways) in self.caches {
            g.report(level, kind, line, sets, ways);
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_distinct_and_every_geometry_usable() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                assert_ne!(a.key, b.key, "{} and {} share a key", a.name, b.name);
            }
            assert!(a.geometry().hierarchy().is_some(), "{}'s caches do not make a hierarchy", a.name);
        }
    }

    #[test]
    fn identifies_exactly() {
        let a72 = TABLE.iter().find(|m| m.name == "cortex-a72").unwrap();
        let key: Key = a72.key.map(Some);
        assert_eq!(identify(&key).map(|m| m.name), Some("cortex-a72"));
        let h = identify(&key).unwrap().geometry().hierarchy().unwrap();
        assert_eq!((h.l1d.sets, h.l1d.ways, h.l1i.sets, h.l1i.ways), (128, 4, 256, 3));
        // The A57 differs from the A72 only in ID_MMFR0.
        let mut a57 = key;
        a57[6] = Some(0x1010_1105);
        assert_eq!(identify(&a57).map(|m| m.name), Some("cortex-a57"));
        // One register missing or different: no answer, never a neighbour's.
        let mut missing = key;
        missing[2] = None;
        assert!(identify(&missing).is_none());
        let mut other = key;
        other[0] = Some(0xb444_c004);
        assert!(identify(&other).is_none());
        assert!(key_text(&missing).contains("ID_AA64ISAR0_EL1=- "), "{}", key_text(&missing));
    }
}
