//! MIDR_EL1 decoding (Arm ARM D24.2.111): implementer, variant, architecture, part, revision,
//! and a name for the cores this suite meets; the core number in MPIDR_EL1 (D24.2.112). Pure.

/// Cores cachescope keeps per-core state for (launch slots, trap catchers, maintenance counter
/// rows): a core numbered beyond it is never started.
pub const MAX_CORES: usize = 8;

/// The core number in an MPIDR_EL1 value: Aff0 | Aff1 (cores are Aff0 on the Pi 4 and QEMU virt,
/// Aff1 on the Pi 5, whose Cortex-A76 sets MPIDR.MT; the other field is 0 on every board).
pub const fn core_of_mpidr(mpidr: u64) -> usize {
    ((mpidr & 0xff) | ((mpidr >> 8) & 0xff)) as usize
}

/// A decoded MIDR_EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Midr {
    /// Raw value.
    pub raw: u64,
}

impl Midr {
    /// Implementer code, MIDR\[31:24\] (0x41 = Arm Ltd, 0x00 = reserved for software use).
    pub const fn implementer(self) -> u8 {
        (self.raw >> 24) as u8
    }
    /// Variant (major revision), MIDR\[23:20\].
    pub const fn variant(self) -> u8 {
        ((self.raw >> 20) & 0xf) as u8
    }
    /// Architecture, MIDR\[19:16\] (0xf = see the ID registers).
    pub const fn architecture(self) -> u8 {
        ((self.raw >> 16) & 0xf) as u8
    }
    /// Primary part number, MIDR\[15:4\].
    pub const fn part(self) -> u16 {
        ((self.raw >> 4) & 0xfff) as u16
    }
    /// Revision (minor), MIDR\[3:0\].
    pub const fn revision(self) -> u8 {
        (self.raw & 0xf) as u8
    }

    /// The implementer's name.
    pub const fn implementer_name(self) -> &'static str {
        match self.implementer() {
            0x00 => "software (reserved)",
            0x41 => "Arm",
            0x42 => "Broadcom",
            0x43 => "Cavium",
            0x46 => "Fujitsu",
            0x48 => "HiSilicon",
            0x4e => "NVIDIA",
            0x51 => "Qualcomm",
            0x61 => "Apple",
            0xc0 => "Ampere",
            _ => "unknown implementer",
        }
    }

    /// The core's name, if known.
    pub const fn core_name(self) -> Option<&'static str> {
        Some(match (self.implementer(), self.part()) {
            (0x41, 0xd03) => "Cortex-A53",
            (0x41, 0xd04) => "Cortex-A35",
            (0x41, 0xd05) => "Cortex-A55",
            (0x41, 0xd07) => "Cortex-A57",
            (0x41, 0xd08) => "Cortex-A72",
            (0x41, 0xd09) => "Cortex-A73",
            (0x41, 0xd0a) => "Cortex-A75",
            (0x41, 0xd0b) => "Cortex-A76",
            (0x41, 0xd0c) => "Neoverse N1",
            (0x41, 0xd0d) => "Cortex-A77",
            (0x41, 0xd40) => "Neoverse V1",
            (0x41, 0xd41) => "Cortex-A78",
            (0x41, 0xd44) => "Cortex-X1",
            (0x41, 0xd46) => "Cortex-A510",
            (0x41, 0xd47) => "Cortex-A710",
            (0x41, 0xd48) => "Cortex-X2",
            (0x41, 0xd49) => "Neoverse N2",
            (0x41, 0xd4f) => "Neoverse V2",
            (0x41, 0xd80) => "Cortex-A520",
            (0x41, 0xd81) => "Cortex-A720",
            // QEMU's `max` CPU: implementer 0, part 'Q' (target/arm/tcg/cpu64.c).
            (0x00, 0x051) => "QEMU max",
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn core_number_from_mpidr() {
        use super::core_of_mpidr;
        assert_eq!(core_of_mpidr(0x8000_0000), 0); // QEMU virt core 0 (U=0, MT=0)
        assert_eq!(core_of_mpidr(0x8000_0003), 3); // QEMU virt / Pi 4 core 3 (Aff0)
        assert_eq!(core_of_mpidr(0x8100_0200), 2); // Pi 5 core 2: MT=1, Aff1=2
        assert_eq!(core_of_mpidr(0x0001_0000), 0); // Aff2 (a cluster) is not part of the number
    }

    use super::Midr;

    #[test]
    fn golden_values() {
        // QEMU cortex-a72 and the Pi 4's BCM2711: r0p3.
        let a72 = Midr { raw: 0x410f_d083 };
        assert_eq!(a72.core_name(), Some("Cortex-A72"));
        assert_eq!((a72.variant(), a72.revision()), (0, 3));
        assert_eq!(Midr { raw: 0x410f_d034 }.core_name(), Some("Cortex-A53"));
        assert_eq!(Midr { raw: 0x414f_d0b1 }.core_name(), Some("Cortex-A76"));
        assert_eq!(Midr { raw: 0x414f_d0c1 }.core_name(), Some("Neoverse N1"));
        assert_eq!(Midr { raw: 0x412f_d470 }.core_name(), Some("Cortex-A710"));
        assert_eq!(Midr { raw: 0x000f_0510 }.core_name(), Some("QEMU max"));
        let unknown = Midr { raw: 0x610f_0220 };
        assert_eq!(unknown.core_name(), None);
        assert_eq!(unknown.implementer_name(), "Apple");
        assert_eq!(unknown.part(), 0x022);
    }
}
