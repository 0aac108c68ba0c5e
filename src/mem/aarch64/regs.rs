//! The MMU's control registers as values: what we program into TCR_EL1 and MAIR_EL1, and pure
//! decoders of SCTLR_EL1, TCR_EL1, MAIR_EL1 and PAR_EL1 for the report and the AT checks
//! (Arm ARM DDI 0487K.a: SCTLR_EL1 D24.2.162, TCR_EL1 D24.2.182, MAIR_EL1 D24.2.109,
//! PAR_EL1 D24.2.124). Reading and writing the registers is `cpu::mmu`.

use core::fmt;

use aarch64_cpu::registers::{ID_AA64MMFR0_EL1, SCTLR_EL1, TCR_EL1};
use tock_registers::LocalRegisterCopy;

use super::table::VA_BITS;
use crate::exception::FaultStatus;
use crate::mem::attr::{Attributes, Shareability};

pub use cachescope_arch::sysreg::PAR;

/// The output address limit for ID_AA64MMFR0_EL1.PARange, capped at 48 bits (the 4 KiB
/// descriptor format without FEAT_LPA2 holds 48-bit addresses).
pub const fn pa_limit(pa_range: u8) -> u64 {
    1 << pa_bits(pa_range)
}

const fn pa_bits(pa_range: u8) -> u32 {
    match pa_range {
        0 => 32,
        1 => 36,
        2 => 40,
        3 => 42,
        4 => 44,
        _ => 48,
    }
}

/// What the CPU's ID_AA64MMFR0_EL1 says about translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmuFeatures {
    /// PARange field (0 = 32 bits … 5 = 48 bits, 6 = 52 bits).
    pub pa_range: u8,
    /// The 4 KiB granule is implemented (TGran4 != 0b1111).
    pub granule_4k: bool,
}

impl MmuFeatures {
    /// Decodes ID_AA64MMFR0_EL1.
    pub fn decode(raw: u64) -> Self {
        let r = LocalRegisterCopy::<u64, ID_AA64MMFR0_EL1::Register>::new(raw);
        Self { pa_range: r.read(ID_AA64MMFR0_EL1::PARange) as u8, granule_4k: r.read(ID_AA64MMFR0_EL1::TGran4) != 0b1111 }
    }
}

/// TCR_EL1 for our regime: TTBR0 only (EPD1), 48-bit VA, 4 KiB granule, table walks Normal WB
/// read/write-allocate inner shareable (like the RAM they read), IPS from PARange (capped at 48
/// bits), no top-byte ignore, 8-bit ASIDs (ASID 0 only).
pub fn tcr_value(pa_range: u8) -> u64 {
    let ips = pa_range.min(0b101) as u64;
    let t = TCR_EL1::T0SZ.val(64 - VA_BITS as u64)
        + TCR_EL1::TG0::KiB_4
        + TCR_EL1::IRGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
        + TCR_EL1::ORGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
        + TCR_EL1::SH0::Inner
        + TCR_EL1::EPD0::EnableTTBR0Walks
        + TCR_EL1::EPD1::DisableTTBR1Walks
        + TCR_EL1::IPS.val(ips)
        + TCR_EL1::TBI0::Used
        + TCR_EL1::A1::TTBR0
        + TCR_EL1::AS::ASID8Bits;
    t.value
}

/// PAR_EL1.SH as the architecture reports it for a mapping: Device and Normal non-cacheable
/// memory always read back as Outer Shareable (pseudocode `PAREncodeShareability()`); cacheable
/// Normal memory reports the descriptor's shareability.
pub const fn par_shareability(a: &Attributes) -> Shareability {
    if a.mem.is_cacheable() {
        a.share
    } else {
        Shareability::Outer
    }
}

/// A decoded PAR_EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    /// The translation succeeded.
    Translated {
        /// Physical address (page-aligned; add the page offset of the input address).
        pa: u64,
        /// Attributes in MAIR byte format.
        attr: u8,
        /// Shareability.
        sh: Shareability,
    },
    /// The translation aborted.
    Fault {
        /// The fault, as for a data abort.
        status: FaultStatus,
        /// Raw FST.
        fst: u8,
    },
}

impl Par {
    /// Decodes a raw PAR_EL1 value.
    pub fn decode(raw: u64) -> Self {
        let r = LocalRegisterCopy::<u64, PAR::Register>::new(raw);
        if r.is_set(PAR::F) {
            let fst = r.read(PAR::FST) as u8;
            return Par::Fault { status: FaultStatus::decode(fst), fst };
        }
        let sh = match r.read(PAR::SH) {
            0b10 => Shareability::Outer,
            0b11 => Shareability::Inner,
            _ => Shareability::Non,
        };
        Par::Translated { pa: r.read(PAR::PA) << 12, attr: r.read(PAR::ATTR) as u8, sh }
    }
}

impl fmt::Display for Par {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Par::Translated { pa, attr, sh } => write!(f, "PA {pa:#x}, ATTR {attr:#04x} ({}), SH {}", MairByte(attr), sh.name()),
            Par::Fault { status, fst } => write!(f, "fault: {status} (FST {fst:#04x})"),
        }
    }
}

/// One nibble of a Normal-memory MAIR byte: the cache policy for one level (inner or outer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachePolicy(pub u8);

impl fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0 & 0xf;
        let (kind, transient) = match n >> 2 {
            0b00 => ("WT", true),
            0b01 if n == 0b0100 => return f.write_str("NC"),
            0b01 => ("WB", true),
            0b10 => ("WT", false),
            _ => ("WB", false),
        };
        write!(f, "{kind}{}", if transient { " transient" } else { "" })?;
        if n & 0b10 != 0 {
            f.write_str(" RA")?;
        }
        if n & 0b01 != 0 {
            f.write_str(" WA")?;
        }
        Ok(())
    }
}

/// One MAIR attribute byte, displayed decoded ("Normal inner WB RA WA, outer WB RA WA",
/// "Device-nGnRE").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MairByte(pub u8);

impl MairByte {
    /// True for the Device encodings 0b0000_dd00.
    pub const fn is_device(self) -> bool {
        self.0 & 0xf3 == 0
    }
}

impl fmt::Display for MairByte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (outer, inner) = (self.0 >> 4, self.0 & 0xf);
        if outer == 0 {
            return match inner {
                0b0000 => f.write_str("Device-nGnRnE"),
                0b0100 => f.write_str("Device-nGnRE"),
                0b1000 => f.write_str("Device-nGRE"),
                0b1100 => f.write_str("Device-GRE"),
                _ => write!(f, "reserved Device encoding {:#04x}", self.0),
            };
        }
        if inner == 0 {
            return write!(f, "reserved Normal encoding {:#04x}", self.0);
        }
        if inner == outer {
            write!(f, "Normal {}", CachePolicy(inner))
        } else {
            write!(f, "Normal inner {}, outer {}", CachePolicy(inner), CachePolicy(outer))
        }
    }
}

/// SCTLR_EL1 displayed with the bits the MMU and caches depend on.
pub struct SctlrView(pub u64);

impl fmt::Display for SctlrView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = LocalRegisterCopy::<u64, SCTLR_EL1::Register>::new(self.0);
        let on = |b: bool| if b { "on" } else { "off" };
        write!(
            f,
            "SCTLR_EL1 = {:#010x}: M={} (MMU {}), C={} (D-cache {}), I={} (I-cache {}), A={} (alignment check {}), SA={}, WXN={}, EE={} ({}-endian)",
            self.0,
            r.read(SCTLR_EL1::M),
            on(r.is_set(SCTLR_EL1::M)),
            r.read(SCTLR_EL1::C),
            on(r.is_set(SCTLR_EL1::C)),
            r.read(SCTLR_EL1::I),
            on(r.is_set(SCTLR_EL1::I)),
            r.read(SCTLR_EL1::A),
            on(r.is_set(SCTLR_EL1::A)),
            r.read(SCTLR_EL1::SA),
            r.read(SCTLR_EL1::WXN),
            r.read(SCTLR_EL1::EE),
            if r.is_set(SCTLR_EL1::EE) { "big" } else { "little" }
        )
    }
}

/// TCR_EL1 displayed field by field (TTBR0 half, IPS, TBI0, AS).
pub struct TcrView(pub u64);

fn walk_cacheability(v: u64) -> &'static str {
    match v {
        0b00 => "NC",
        0b01 => "WB RA WA",
        0b10 => "WT RA",
        _ => "WB RA",
    }
}

impl fmt::Display for TcrView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = LocalRegisterCopy::<u64, TCR_EL1::Register>::new(self.0);
        let t0sz = r.read(TCR_EL1::T0SZ);
        let tg0 = match r.read(TCR_EL1::TG0) {
            0b00 => "4KiB",
            0b01 => "64KiB",
            0b10 => "16KiB",
            _ => "reserved",
        };
        let sh0 = match r.read(TCR_EL1::SH0) {
            0b00 => "non",
            0b10 => "outer",
            0b11 => "inner",
            _ => "reserved",
        };
        let ips = r.read(TCR_EL1::IPS) as u8;
        write!(
            f,
            "TCR_EL1 = {:#x}: T0SZ={t0sz} ({}-bit VA), TG0={tg0}, IRGN0={}, ORGN0={}, SH0={sh0}, EPD0={}, EPD1={}{}, IPS={ips} ({}-bit PA), TBI0={}, AS={} ({}-bit ASID)",
            self.0,
            64 - t0sz,
            walk_cacheability(r.read(TCR_EL1::IRGN0)),
            walk_cacheability(r.read(TCR_EL1::ORGN0)),
            r.read(TCR_EL1::EPD0),
            r.read(TCR_EL1::EPD1),
            if r.is_set(TCR_EL1::EPD1) { " (TTBR1 walks off)" } else { "" },
            pa_bits(ips),
            r.read(TCR_EL1::TBI0),
            r.read(TCR_EL1::AS),
            if r.is_set(TCR_EL1::AS) { 16 } else { 8 }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::aarch64::descriptor::MAIR_EL1_VALUE;
    use crate::mem::attr::MemAttr;
    use alloc::format;

    #[test]
    fn tcr_for_a72_and_max() {
        // Cortex-A72 under QEMU: PARange 4 (44 bits).
        let t = tcr_value(4);
        assert_eq!(t, 0x0000_0004_0080_3510);
        let s = format!("{}", TcrView(t));
        assert!(s.contains("T0SZ=16 (48-bit VA)") && s.contains("TG0=4KiB") && s.contains("IRGN0=WB RA WA"), "{s}");
        assert!(s.contains("SH0=inner") && s.contains("EPD1=1 (TTBR1 walks off)") && s.contains("IPS=4 (44-bit PA)"), "{s}");
        // 52-bit PARange is capped at 48 bits.
        assert_eq!(tcr_value(6) >> 32 & 7, 0b101);
        assert_eq!(pa_limit(6), 1 << 48);
        assert_eq!(pa_limit(0), 1 << 32);
    }

    #[test]
    fn features() {
        // QEMU cortex-a72 ID_AA64MMFR0_EL1 = 0x1124: PARange 4, 4K granule (TGran4 = 0).
        assert_eq!(MmuFeatures::decode(0x1124), MmuFeatures { pa_range: 4, granule_4k: true });
        assert!(!MmuFeatures::decode(0xf000_0005).granule_4k);
    }

    #[test]
    fn mair_bytes_decode() {
        let d = |b| format!("{}", MairByte(b));
        assert_eq!(d(0xff), "Normal WB RA WA");
        assert_eq!(d(0xaa), "Normal WT RA");
        assert_eq!(d(0xbb), "Normal WT RA WA");
        assert_eq!(d(0x44), "Normal NC");
        assert_eq!(d(0x4f), "Normal inner WB RA WA, outer NC");
        assert_eq!(d(0x77), "Normal WB transient RA WA");
        assert_eq!(d(0x00), "Device-nGnRnE");
        assert_eq!(d(0x04), "Device-nGnRE");
        assert_eq!(d(0x08), "Device-nGRE");
        assert_eq!(d(0x0c), "Device-GRE");
        assert_eq!(d(0x01), "reserved Device encoding 0x01");
        assert_eq!(d(0x40), "reserved Normal encoding 0x40");
        assert!(MairByte(0x0c).is_device() && !MairByte(0x44).is_device());
        assert_eq!(format!("{}", MairByte((MAIR_EL1_VALUE >> 8) as u8)), "Normal WT RA");
    }

    #[test]
    fn par_decodes() {
        // Measured under QEMU: Normal WB inner shareable at 0x4140_0000.
        assert_eq!(Par::decode(0xff00_0000_4140_0180), Par::Translated { pa: 0x4140_0000, attr: 0xff, sh: Shareability::Inner });
        assert_eq!(Par::decode(0x0400_0000_0900_0100), Par::Translated { pa: 0x0900_0000, attr: 0x04, sh: Shareability::Outer });
        // F=1, FST = translation fault level 2 (0b000110).
        assert_eq!(Par::decode(0b000110 << 1 | 1), Par::Fault { status: FaultStatus::Translation(2), fst: 0b000110 });
        assert!(format!("{}", Par::decode(0x4400_0000_4000_0100)).contains("ATTR 0x44 (Normal NC), SH outer"));
    }

    #[test]
    fn par_shareability_rule() {
        assert_eq!(par_shareability(&Attributes::RW_DATA), Shareability::Inner);
        for m in [MemAttr::NormalNonCacheable, MemAttr::DeviceNGnRnE, MemAttr::DeviceNGnRE, MemAttr::DeviceGRE] {
            assert_eq!(par_shareability(&Attributes::data(m)), Shareability::Outer, "{m}");
        }
    }

    #[test]
    fn sctlr_view() {
        let s = format!("{}", SctlrView(0x30d0_199d));
        assert!(
            s.contains("M=1 (MMU on)") && s.contains("C=1 (D-cache on)") && s.contains("I=1 (I-cache on)") && s.contains("little-endian"),
            "{s}"
        );
        let s = format!("{}", SctlrView(0x30d0_0800));
        assert!(s.contains("M=0 (MMU off)") && s.contains("C=0 (D-cache off)"), "{s}");
    }
}
