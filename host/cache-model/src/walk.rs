//! A stage-1 translation table walker for the AArch64 Virtual Memory System Architecture, over
//! guest physical memory behind a seam ([`PhysMem`]): no QEMU type, unit-tested on synthetic
//! tables in a byte buffer.
//!
//! References are to the Arm Architecture Reference Manual for A-profile (DDI 0487), chapter D8
//! "The AArch64 Virtual Memory System Architecture":
//! - D8.1.x, "Translation regimes": EL1&0 (TTBR0_EL1 for the lower VA range, TTBR1_EL1 for the
//!   upper, selected by VA bit 55), EL2 (non-VHE: TTBR0_EL2 only), EL3 (TTBR0_EL3 only).
//! - D8.2, "Translation process": the input address size is 64 − TxSZ; the start level follows
//!   from it and the granule (4 KiB: 9 index bits per level, 16 KiB: 11, 64 KiB: 13); a VA
//!   whose bits above the input size are not all 0 (lower range) or all 1 (upper range), top
//!   byte excepted when TBI is set, gives a level-0 Translation fault; EPDx = 1 disables a range
//!   (Translation fault, no walk).
//! - D8.3, "Translation table descriptor formats": bits `[1:0]` 0b11 = table (levels 0..2) or page
//!   (level 3), 0b01 = block (4 KiB granule: levels 1 and 2; 16 and 64 KiB: level 2, without
//!   FEAT_LPA/LPA2), anything else invalid. Output and next-table addresses are bits `[47:G]`.
//!   An output or table address above the PA size that TCR.IPS/PS gives is an Address size
//!   fault.
//! - D8.5, "Memory region attributes": AttrIndx (descriptor bits `[4:2]`) selects a byte of
//!   MAIR_ELx; SH (bits `[9:8]`) the shareability. The MAIR byte's encoding is decoded into
//!   [`MemType`] (Device nGnRnE/nGnRE/nGRE/GRE; Normal inner and outer: Non-cacheable,
//!   Write-Through or Write-Back with their transient and read/write-allocate hints).
//!
//! TCR fields (D19.2, TCR_EL1 / TCR_EL2 / TCR_EL3): T0SZ `[5:0]`, EPD0 `[7]`, TG0 `[15:14]` (0b00 4K,
//! 0b01 64K, 0b10 16K), T1SZ `[21:16]`, EPD1 `[23]`, TG1 `[31:30]` (**other encodings**: 0b01 16K,
//! 0b10 4K, 0b11 64K), IPS `[34:32]`, TBI0 `[37]`, TBI1 `[38]` (TCR_EL1); TCR_EL2 (E2H = 0) and TCR_EL3
//! have T0SZ, TG0, PS `[18:16]` and TBI `[20]`.
//!
//! Not followed (each gives a fault with its own cause, never a guess): 52-bit addresses
//! (TxSZ < 16, TCR.DS = 1, FEAT_LPA/LPA2 blocks at level 0/1), VHE's two-range EL2 (HCR_EL2.E2H = 1),
//! stage 2 (the caller warns about HCR_EL2.VM), reserved MAIR encodings. The walk reads the
//! tables from memory, not through the caches (the model does not count walk accesses).

use crate::hierarchy::Attr;

/// Guest physical memory, as the walk reads it: one little-endian 64-bit descriptor at `pa`
/// (8-byte aligned), `None` when that address cannot be read.
pub trait PhysMem {
    /// The descriptor at `pa`.
    fn read_u64(&self, pa: u64) -> Option<u64>;
}

/// A translation regime (D8.1): the tables and controls of one Exception level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Regime {
    /// EL1&0: TTBR0_EL1 and TTBR1_EL1, TCR_EL1, MAIR_EL1, SCTLR_EL1.
    El1,
    /// EL2 (non-VHE): TTBR0_EL2, TCR_EL2, MAIR_EL2, SCTLR_EL2.
    El2,
    /// EL3: TTBR0_EL3, TCR_EL3, MAIR_EL3, SCTLR_EL3.
    El3,
}

impl Regime {
    /// Every regime, in [`Regime::index`] order.
    pub const ALL: [Self; 3] = [Self::El1, Self::El2, Self::El3];

    /// The regime of code at Exception level `el` (EL0 runs in EL1&0's).
    pub fn of_el(el: u8) -> Self {
        match el {
            0 | 1 => Self::El1,
            2 => Self::El2,
            _ => Self::El3,
        }
    }

    /// Its index in per-regime arrays (0 = EL1, 1 = EL2, 2 = EL3).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The registers one regime's walk reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegimeRegs {
    /// TTBR0_ELx.
    pub ttbr0: u64,
    /// TTBR1_EL1 (EL1 only; unused at EL2/EL3).
    pub ttbr1: u64,
    /// TCR_ELx.
    pub tcr: u64,
    /// MAIR_ELx.
    pub mair: u64,
}

/// Cacheability of one domain (inner or outer) of Normal memory, with the MAIR hints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cacheability {
    /// Non-cacheable, Write-Through or Write-Back.
    pub policy: Policy,
    /// Transient hint (MAIR 0b00RW / 0b01RW).
    pub transient: bool,
    /// Read-allocate hint.
    pub read_allocate: bool,
    /// Write-allocate hint.
    pub write_allocate: bool,
}

/// A cache policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Non-cacheable.
    NonCacheable,
    /// Write-Through.
    WriteThrough,
    /// Write-Back.
    WriteBack,
}

/// A memory type from a MAIR byte (D8.5.4 "MAIR_ELx encodings").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemType {
    /// Device memory; the byte's low nibble: 0b0000 nGnRnE, 0b0100 nGnRE, 0b1000 nGRE, 0b1100 GRE.
    Device(u8),
    /// Normal memory.
    Normal {
        /// Inner cacheability (the caches the model has).
        inner: Cacheability,
        /// Outer cacheability.
        outer: Cacheability,
        /// MAIR 0xf0 (FEAT_MTE Tagged Normal, inner and outer Write-Back).
        tagged: bool,
    },
}

impl MemType {
    /// Decodes a MAIR attribute byte; `None` for a reserved encoding.
    pub fn from_mair(byte: u8) -> Option<Self> {
        let (hi, lo) = (byte >> 4, byte & 0xf);
        if hi == 0 {
            return (lo & 0b0011 == 0).then_some(Self::Device(lo));
        }
        if byte == 0xf0 {
            let wb = Cacheability { policy: Policy::WriteBack, transient: false, read_allocate: true, write_allocate: true };
            return Some(Self::Normal { inner: wb, outer: wb, tagged: true });
        }
        let domain = |n: u8| -> Option<Cacheability> {
            let (r, w) = (n & 0b10 != 0, n & 0b01 != 0);
            let c = |policy, transient| Cacheability { policy, transient, read_allocate: r, write_allocate: w };
            match n >> 2 {
                _ if n == 0b0100 => {
                    Some(Cacheability { policy: Policy::NonCacheable, transient: false, read_allocate: false, write_allocate: false })
                }
                0b00 if n != 0 => Some(c(Policy::WriteThrough, true)),
                0b01 => Some(c(Policy::WriteBack, true)),
                0b10 => Some(c(Policy::WriteThrough, false)),
                0b11 => Some(c(Policy::WriteBack, false)),
                _ => None,
            }
        };
        Some(Self::Normal { inner: domain(lo)?, outer: domain(hi)?, tagged: false })
    }

    /// The model's attribute: Device, or the inner domain's policy with its allocation hints
    /// (the model's caches are the inner ones: L1 and L2 of the cores it models).
    pub fn attr(self) -> Attr {
        match self {
            Self::Device(_) => Attr::Device,
            Self::Normal { inner, .. } => match inner.policy {
                Policy::NonCacheable => Attr::NormalNonCacheable,
                p => Attr::with_hints(p == Policy::WriteBack, inner.read_allocate, inner.write_allocate, inner.transient),
            },
        }
    }
}

/// A successful walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walked {
    /// The output address of the VA.
    pub pa: u64,
    /// log2 of the block or page size (the VA and PA agree below it).
    pub size_shift: u32,
    /// The memory type from MAIR.
    pub mem: MemType,
    /// The raw MAIR byte.
    pub mair_byte: u8,
    /// Shareability (descriptor SH: 0b00 Non-shareable, 0b10 Outer, 0b11 Inner).
    pub sh: u8,
    /// The level of the last descriptor.
    pub level: u8,
    /// Descriptors read (the start level to the last: 4 for a 4 KiB page of a 48-bit VA).
    pub levels: u8,
}

/// Why a walk gave no translation (each is a `model-warning` cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The VA lies in no range of the regime (its top bits are neither all 0 nor all 1).
    OutOfRange,
    /// TCR.EPD0/EPD1 disables the range.
    RangeDisabled,
    /// TxSZ < 16 (52-bit VAs), TCR.DS = 1 (FEAT_LPA2's descriptors) or a reserved TG encoding.
    UnsupportedTcr,
    /// An invalid descriptor (Translation fault) at this level.
    Translation(u8),
    /// An output or table address above the PA size (Address size fault) at this level.
    AddressSize(u8),
    /// A block descriptor at a level this walk does not take blocks at (52-bit formats).
    UnsupportedBlock(u8),
    /// The MAIR byte the descriptor selects is a reserved encoding.
    ReservedMair,
    /// The descriptor at this level could not be read from guest memory.
    Unreadable(u8),
    /// VHE (HCR_EL2.E2H = 1): EL2's two-range regime is not followed.
    Vhe,
}

impl Fault {
    /// The VA has no valid mapping in the guest's tables (what the MMU would fault on), as
    /// opposed to a walk the model cannot do or read.
    pub fn unmapped(self) -> bool {
        matches!(self, Self::OutOfRange | Self::RangeDisabled | Self::Translation(_) | Self::AddressSize(_))
    }

    /// A short name for the warning (stable: tests and expectation files may name it).
    pub fn cause(self) -> String {
        match self {
            Self::OutOfRange => "va-out-of-range".into(),
            Self::RangeDisabled => "range-disabled-epd".into(),
            Self::UnsupportedTcr => "tcr-not-followed".into(),
            Self::Translation(l) => format!("translation-fault-level{l}"),
            Self::AddressSize(l) => format!("address-size-fault-level{l}"),
            Self::UnsupportedBlock(l) => format!("block-not-followed-level{l}"),
            Self::ReservedMair => "reserved-mair".into(),
            Self::Unreadable(l) => format!("table-unreadable-level{l}"),
            Self::Vhe => "vhe-el2-not-followed".into(),
        }
    }
}

/// Granule size as log2 bytes.
fn granule(tg: u64, upper: bool) -> Option<u32> {
    match (upper, tg) {
        (false, 0b00) | (true, 0b10) => Some(12),
        (false, 0b01) | (true, 0b11) => Some(16),
        (false, 0b10) | (true, 0b01) => Some(14),
        _ => None,
    }
}

/// PA size in bits from TCR.IPS / PS (52 is capped at 48: 52-bit output is not followed).
fn pa_bits(ps: u64) -> u32 {
    match ps {
        0b000 => 32,
        0b001 => 36,
        0b010 => 40,
        0b011 => 42,
        0b100 => 44,
        _ => 48,
    }
}

/// The walk's parameters for one VA: table base, granule, input size, PA size.
struct Params {
    base: u64,
    g: u32,
    ia: u32,
    pa_bits: u32,
}

fn params(regime: Regime, regs: &RegimeRegs, va: u64) -> Result<Params, Fault> {
    let tcr = regs.tcr;
    let (txsz, tg, tbi, epd, ttbr, ps, upper) = match regime {
        Regime::El1 => {
            let upper = va >> 55 & 1 == 1;
            if upper {
                (tcr >> 16 & 63, tcr >> 30 & 3, tcr >> 38 & 1 == 1, tcr >> 23 & 1 == 1, regs.ttbr1, tcr >> 32 & 7, true)
            } else {
                (tcr & 63, tcr >> 14 & 3, tcr >> 37 & 1 == 1, tcr >> 7 & 1 == 1, regs.ttbr0, tcr >> 32 & 7, false)
            }
        }
        Regime::El2 | Regime::El3 => (tcr & 63, tcr >> 14 & 3, tcr >> 20 & 1 == 1, false, regs.ttbr0, tcr >> 16 & 7, false),
    };
    let g = granule(tg, upper).ok_or(Fault::UnsupportedTcr)?;
    // TCR.DS (FEAT_LPA2's 52-bit descriptor format): bit 59 of TCR_EL1, 32 of TCR_EL2/EL3.
    let ds = if regime == Regime::El1 { tcr >> 59 & 1 } else { tcr >> 32 & 1 };
    if txsz < 16 || ds == 1 {
        return Err(Fault::UnsupportedTcr);
    }
    let ia = 64 - txsz as u32;
    // The bits above the input address (below bit 56 when the top byte is ignored).
    let top = if tbi { 56 } else { 64 };
    let field = if top > ia { (va & (u64::MAX >> (64 - top))) >> ia } else { 0 };
    let ones = if top > ia { (1u64 << (top - ia)) - 1 } else { 0 };
    if field != if upper { ones } else { 0 } {
        return Err(Fault::OutOfRange);
    }
    if epd {
        return Err(Fault::RangeDisabled);
    }
    let pa_bits = pa_bits(ps);
    Ok(Params { base: ttbr & 0x0000_ffff_ffff_fffe, g, ia, pa_bits })
}

/// log2 of the translation granule `regime`'s registers give `va`'s range, if supported.
pub fn granule_shift(regime: Regime, regs: &RegimeRegs, va: u64) -> Option<u32> {
    params(regime, regs, va).ok().map(|p| p.g)
}

/// Walks `va` through `regime`'s tables (stage 1 only). HCR_EL2.E2H is the caller's: with
/// `e2h` set, the EL2 regime is VHE's and not followed ([`Fault::Vhe`]).
pub fn walk(mem: &dyn PhysMem, regime: Regime, regs: &RegimeRegs, e2h: bool, va: u64) -> Result<Walked, Fault> {
    if regime == Regime::El2 && e2h {
        return Err(Fault::Vhe);
    }
    let Params { base, g, ia, pa_bits } = params(regime, regs, va)?;
    let stride = g - 3;
    let levels = (ia - g).div_ceil(stride);
    if levels > 4 {
        return Err(Fault::UnsupportedTcr);
    }
    let start = (4 - levels) as u8;
    let oa_mask = |shift: u32| (0x0000_ffff_ffff_ffffu64 >> shift) << shift;
    let too_big = |a: u64| pa_bits < 48 && a >> pa_bits != 0;
    let mut table = base & !7;
    if too_big(table) {
        return Err(Fault::AddressSize(start));
    }
    for level in start..=3 {
        let shift = g + stride * u32::from(3 - level);
        let bits = if level == start { ia - shift } else { stride };
        let index = (va >> shift) & ((1u64 << bits) - 1);
        let desc = mem.read_u64(table + index * 8).ok_or(Fault::Unreadable(level))?;
        let block = match desc & 3 {
            0b11 if level < 3 => false,
            0b11 => true, // a page
            0b01 if level == 3 => return Err(Fault::Translation(level)),
            0b01 => {
                let allowed = if g == 12 { level >= 1 } else { level >= 2 };
                if !allowed {
                    return Err(Fault::UnsupportedBlock(level));
                }
                true
            }
            _ => return Err(Fault::Translation(level)),
        };
        if !block {
            table = desc & oa_mask(g);
            if too_big(table) {
                return Err(Fault::AddressSize(level));
            }
            continue;
        }
        let out = desc & oa_mask(shift);
        if too_big(out) {
            return Err(Fault::AddressSize(level));
        }
        let idx = (desc >> 2 & 7) as u32;
        let mair_byte = (regs.mair >> (8 * idx)) as u8;
        let mem_type = MemType::from_mair(mair_byte).ok_or(Fault::ReservedMair)?;
        return Ok(Walked {
            pa: out | (va & ((1u64 << shift) - 1)),
            size_shift: shift,
            mem: mem_type,
            mair_byte,
            sh: (desc >> 8 & 3) as u8,
            level,
            levels: level - start + 1,
        });
    }
    unreachable!("level 3 ends every walk")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest memory: a byte buffer at PA `base`.
    struct Buf {
        base: u64,
        bytes: Vec<u8>,
    }

    impl Buf {
        fn new(base: u64, len: usize) -> Self {
            Self { base, bytes: vec![0; len] }
        }
        fn put(&mut self, pa: u64, v: u64) {
            let o = (pa - self.base) as usize;
            self.bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }
    }

    impl PhysMem for Buf {
        fn read_u64(&self, pa: u64) -> Option<u64> {
            let o = usize::try_from(pa.checked_sub(self.base)?).ok()?;
            Some(u64::from_le_bytes(self.bytes.get(o..o + 8)?.try_into().ok()?))
        }
    }

    /// MAIR: index 0 Device-nGnRnE, 1 Normal WB RW-allocate, 2 Normal NC, 3 Normal WT
    /// (non-transient, read-allocate), 4 Device-nGnRE, 5 Normal WB transient, 6 reserved.
    const MAIR: u64 = 0x00_08_54_04_aa_44_ff_00;
    const TABLE: u64 = 0b11;
    const BLOCK: u64 = 0b01;
    const PAGE: u64 = 0b11;
    const AF: u64 = 1 << 10;

    fn attr(idx: u64, sh: u64) -> u64 {
        idx << 2 | sh << 8 | AF
    }

    /// TCR_EL1 with 4K granules both halves (TG1 = 0b10), T0SZ = T1SZ = 16 (48-bit), IPS 40 bits.
    const TCR_4K_48: u64 = 16 | 16 << 16 | 0b10 << 30 | 0b010 << 32;

    #[test]
    fn mair_bytes_decode_with_their_hints() {
        assert_eq!(MemType::from_mair(0x00), Some(MemType::Device(0)));
        assert_eq!(MemType::from_mair(0x04).map(MemType::attr), Some(Attr::Device));
        assert_eq!(MemType::from_mair(0x01), None, "Device with low bits set is reserved");
        assert_eq!(MemType::from_mair(0x44).map(MemType::attr), Some(Attr::NormalNonCacheable));
        assert_eq!(MemType::from_mair(0xff).map(MemType::attr), Some(Attr::NormalWriteBack));
        assert_eq!(MemType::from_mair(0xbb).map(MemType::attr), Some(Attr::NormalWriteThrough));
        // MAIR's allocation hints reach the model (protocol 6's attribute codes).
        for (byte, attr) in [
            (0xee, Attr::NormalWriteBackNoWriteAllocate),
            (0xdd, Attr::NormalWriteBackNoReadAllocate),
            (0xcc, Attr::NormalWriteBackNoAllocate),
            (0x77, Attr::NormalWriteBackTransient),
            (0x22, Attr::NormalWriteThroughTransient),
            (0xaa, Attr::NormalWriteThrough),
        ] {
            assert_eq!(MemType::from_mair(byte).map(MemType::attr), Some(attr), "MAIR {byte:#x}");
        }
        let Some(MemType::Normal { inner, outer, tagged }) = MemType::from_mair(0x4a) else { panic!() };
        assert_eq!(inner, Cacheability { policy: Policy::WriteThrough, transient: false, read_allocate: true, write_allocate: false });
        assert_eq!(outer.policy, Policy::NonCacheable);
        assert!(!tagged);
        let Some(MemType::Normal { inner, .. }) = MemType::from_mair(0x55) else { panic!() };
        assert_eq!((inner.policy, inner.transient, inner.read_allocate, inner.write_allocate), (Policy::WriteBack, true, false, true));
        assert_eq!(MemType::from_mair(0x40), None, "inner 0b0000 with a Normal outer is reserved");
        assert!(matches!(MemType::from_mair(0xf0), Some(MemType::Normal { tagged: true, .. })));
        // Inner NC, outer WB: the model follows the inner domain.
        assert_eq!(MemType::from_mair(0xf4).map(MemType::attr), Some(Attr::NormalNonCacheable));
    }

    /// EL1, 4K, 48-bit: L0 → L1 → L2 block (2 MiB) and L2 → L3 page; TTBR1 for the upper range.
    #[test]
    fn el1_4k_blocks_pages_and_both_ranges() {
        let mut m = Buf::new(0x4000_0000, 0x10_0000);
        let (l0, l1, l2, l3) = (0x4000_0000, 0x4000_1000, 0x4000_2000, 0x4000_3000);
        m.put(l0, l1 | TABLE);
        m.put(l1 + 8, l2 | TABLE); // VA 0x4000_0000..: L1 index 1
        m.put(l2, 0x4020_0000 | attr(1, 3) | BLOCK); // 2 MiB block at VA 0x4000_0000
        m.put(l2 + 8, l3 | TABLE); // VA 0x4020_0000: L3 table
        m.put(l3 + 5 * 8, 0x9000_0000 | attr(2, 2) | PAGE); // VA 0x4020_5000 → NC page
        m.put(l3 + 6 * 8, 0x9000_1000 | attr(0, 0) | PAGE); // VA 0x4020_6000 → Device
        m.put(l1 + 2 * 8, 0x8000_0000 | attr(3, 3) | BLOCK); // 1 GiB block at VA 0x8000_0000
        let upper_l0 = 0x4000_8000;
        m.put(upper_l0 + 511 * 8, l1 | TABLE); // VA 0xffff_ff80_0000_0000 + … shares L1
        let regs = RegimeRegs { ttbr0: l0, ttbr1: upper_l0, tcr: TCR_4K_48, mair: MAIR };
        let w = walk(&m, Regime::El1, &regs, false, 0x4012_3456).unwrap();
        assert_eq!((w.pa, w.size_shift, w.level, w.sh, w.mem.attr()), (0x4032_3456, 21, 2, 3, Attr::NormalWriteBack));
        let w = walk(&m, Regime::El1, &regs, false, 0x4020_5010).unwrap();
        assert_eq!((w.pa, w.size_shift, w.level, w.mem.attr(), w.mair_byte), (0x9000_0010, 12, 3, Attr::NormalNonCacheable, 0x44));
        assert_eq!(walk(&m, Regime::El1, &regs, false, 0x4020_6000).unwrap().mem, MemType::Device(0));
        let w = walk(&m, Regime::El1, &regs, false, 0x8765_4321).unwrap();
        assert_eq!((w.pa, w.level, w.mem.attr()), (0x8765_4321, 1, Attr::NormalWriteThrough));
        assert_eq!(walk(&m, Regime::El1, &regs, false, 0x4020_7000), Err(Fault::Translation(3)));
        assert_eq!(walk(&m, Regime::El1, &regs, false, 0xc000_0000), Err(Fault::Translation(1)));
        // Upper range: 0xffff_ff80_4012_3456 walks TTBR1's L0 index 511, then the same L1.
        let w = walk(&m, Regime::El1, &regs, false, 0xffff_ff80_4012_3456).unwrap();
        assert_eq!(w.pa, 0x4032_3456);
        // Neither range; EPD1 disables the upper one; TBI0 lets a tagged lower VA through.
        assert_eq!(walk(&m, Regime::El1, &regs, false, 0x0100_0000_4012_3456), Err(Fault::OutOfRange));
        let epd1 = RegimeRegs { tcr: TCR_4K_48 | 1 << 23, ..regs };
        assert_eq!(walk(&m, Regime::El1, &epd1, false, 0xffff_ff80_4012_3456), Err(Fault::RangeDisabled));
        assert_eq!(walk(&m, Regime::El1, &regs, false, 0x5a00_0000_4012_3456), Err(Fault::OutOfRange));
        let tbi0 = RegimeRegs { tcr: TCR_4K_48 | 1 << 37, ..regs };
        assert_eq!(walk(&m, Regime::El1, &tbi0, false, 0x5a00_0000_4012_3456).unwrap().pa, 0x4032_3456);
    }

    #[test]
    fn start_level_follows_txsz() {
        // T0SZ = 25 (39-bit): starts at level 1 with 4K; T0SZ = 33 (31-bit): level 1 too
        // (ceil(19 / 9) = 3 levels); T0SZ = 34 (30-bit): level 2.
        let mut m = Buf::new(0x4000_0000, 0x10_0000);
        let (l1, l2) = (0x4000_0000, 0x4000_1000);
        m.put(l1 + 8, 0x4000_0000 | attr(1, 3) | BLOCK);
        m.put(l2 + 8 * 3, 0x4060_0000 | attr(2, 3) | BLOCK);
        let r = |t0sz: u64, ttbr0| RegimeRegs { ttbr0, ttbr1: 0, tcr: t0sz | 0b10 << 30 | 0b010 << 32, mair: MAIR };
        let w = walk(&m, Regime::El1, &r(25, l1), false, 0x4000_1234).unwrap();
        assert_eq!((w.level, w.pa), (1, 0x4000_1234));
        assert_eq!(walk(&m, Regime::El1, &r(33, l1), false, 0x4000_1234).unwrap().level, 1);
        assert_eq!(walk(&m, Regime::El1, &r(33, l1), false, 0x8000_0000), Err(Fault::OutOfRange), "31-bit range");
        let w = walk(&m, Regime::El1, &r(34, l2), false, 0x0060_0040).unwrap();
        assert_eq!((w.level, w.pa, w.mem.attr()), (2, 0x4060_0040, Attr::NormalNonCacheable));
        assert_eq!(walk(&m, Regime::El1, &r(15, l1), false, 0), Err(Fault::UnsupportedTcr));
        let ds = RegimeRegs { tcr: r(25, l1).tcr | 1 << 59, ..r(25, l1) };
        assert_eq!(walk(&m, Regime::El1, &ds, false, 0x4000_1234), Err(Fault::UnsupportedTcr), "TCR_EL1.DS");
    }

    /// 16K and 64K granules; TG0 and TG1 encode them differently.
    #[test]
    fn granules_16k_and_64k_with_their_tg_encodings() {
        let mut m = Buf::new(0x4000_0000, 0x40_0000);
        // 16K, T0SZ = 28 (36-bit): stride 11, levels ceil(22/11) = 2 → start level 2.
        // Level 2 entries map 32 MiB blocks; level 3 pages of 16 KiB.
        let (l2, l3) = (0x4000_0000, 0x4000_4000);
        m.put(l2, 0x4200_0000 | attr(1, 3) | BLOCK);
        m.put(l2 + 8, l3 | TABLE);
        m.put(l3 + 2 * 8, 0x5000_8000 | attr(2, 3) | PAGE);
        let tcr16 = 28 | 0b10 << 14 | 0b010 << 32;
        let regs = RegimeRegs { ttbr0: l2, ttbr1: 0, tcr: tcr16, mair: MAIR };
        let w = walk(&m, Regime::El1, &regs, false, 0x0123_4567).unwrap();
        assert_eq!((w.level, w.size_shift, w.pa), (2, 25, 0x4323_4567));
        let w = walk(&m, Regime::El1, &regs, false, 0x0200_8123).unwrap();
        assert_eq!((w.level, w.size_shift, w.pa, w.mem.attr()), (3, 14, 0x5000_8123, Attr::NormalNonCacheable));
        // The same tables through TTBR1 need TG1 = 0b01 for 16K (TG1 = 0b10 would be 4K).
        let upper = RegimeRegs { ttbr0: 0, ttbr1: l2, tcr: 28 << 16 | 0b01 << 30 | 0b010 << 32, mair: MAIR };
        assert_eq!(walk(&m, Regime::El1, &upper, false, 0xffff_fff0_0123_4567).unwrap().pa, 0x4323_4567);
        // 64K at EL2 (TCR_EL2: PS at [18:16]), T0SZ = 22 (42-bit): stride 13, levels
        // ceil(26/13) = 2 → start level 2; level 2 blocks are 512 MiB, pages 64 KiB.
        let (e2l2, e2l3) = (0x4001_0000, 0x4002_0000);
        m.put(e2l2, e2l3 | TABLE);
        m.put(e2l2 + 8, 0x6000_0000 | attr(3, 2) | BLOCK);
        m.put(e2l3 + 3 * 8, 0x7003_0000 | attr(4, 0) | PAGE);
        let el2 = RegimeRegs { ttbr0: e2l2, ttbr1: 0, tcr: 22 | 0b01 << 14 | 0b010 << 16, mair: MAIR };
        let w = walk(&m, Regime::El2, &el2, false, 0x3_4567).unwrap();
        assert_eq!((w.level, w.size_shift, w.pa, w.mem), (3, 16, 0x7003_4567, MemType::Device(4)));
        let w = walk(&m, Regime::El2, &el2, false, 0x2123_4567).unwrap();
        assert_eq!((w.level, w.pa, w.sh, w.mem.attr()), (2, 0x6123_4567, 2, Attr::NormalWriteThrough));
        assert_eq!(walk(&m, Regime::El2, &el2, true, 0x3_4567), Err(Fault::Vhe));
        // A 16K level-1 block would need FEAT_LPA2: not followed.
        let l1 = 0x4003_0000;
        m.put(l1, 0x8000_0000 | attr(1, 3) | BLOCK);
        let r = RegimeRegs { ttbr0: l1, ttbr1: 0, tcr: 17 | 0b10 << 14 | 0b101 << 32, mair: MAIR };
        assert_eq!(walk(&m, Regime::El1, &r, false, 0x1234), Err(Fault::UnsupportedBlock(1)));
        // Reserved TG0 encoding 0b11.
        let r = RegimeRegs { tcr: 25 | 0b11 << 14, ..r };
        assert_eq!(walk(&m, Regime::El1, &r, false, 0x1234), Err(Fault::UnsupportedTcr));
    }

    #[test]
    fn el3_faults_and_unreadable_tables() {
        let mut m = Buf::new(0x4000_0000, 0x10_0000);
        // TCR_EL3: T0SZ = 32 (32-bit), 4K, PS = 32 bits: start level 1.
        let l1 = 0x4000_0000;
        m.put(l1, 0x1_0000_0000 | attr(1, 3) | BLOCK); // above the 32-bit PA size
        m.put(l1 + 8, 0x4000_0000 | attr(6, 3) | BLOCK); // AttrIndx 6 = reserved MAIR byte
        m.put(l1 + 16, 0x7f00_0000 | TABLE); // a table outside readable memory
        m.put(l1 + 24, 0xc000_0000 | attr(1, 3) | BLOCK);
        let mair = MAIR | 0x01 << 48;
        let regs = RegimeRegs { ttbr0: l1, ttbr1: 0, tcr: 32, mair };
        assert_eq!(walk(&m, Regime::El3, &regs, false, 0x1000), Err(Fault::AddressSize(1)));
        assert_eq!(walk(&m, Regime::El3, &regs, false, 0x4000_1000), Err(Fault::ReservedMair));
        assert_eq!(walk(&m, Regime::El3, &regs, false, 0x8000_1000), Err(Fault::Unreadable(2)));
        assert_eq!(walk(&m, Regime::El3, &regs, false, 0xc000_1000).unwrap().pa, 0xc000_1000);
        // TCR_EL3 has no TTBR1: an upper VA is out of range, not walked through TTBR1.
        assert_eq!(walk(&m, Regime::El3, &regs, false, 0xffff_ffff_c000_0000), Err(Fault::OutOfRange));
        // A level-3 entry with bits [1:0] = 0b01 is invalid, not a block.
        let (a, b, c) = (0x4000_1000u64, 0x4000_2000u64, 0x4000_3000u64);
        m.put(a, b | TABLE);
        m.put(b, c | TABLE);
        m.put(c, 0x4008_0000 | attr(1, 3) | BLOCK);
        let r = RegimeRegs { ttbr0: a, ttbr1: 0, tcr: 25 | 0b010 << 16, mair: MAIR };
        assert_eq!(walk(&m, Regime::El3, &r, false, 0x10), Err(Fault::Translation(3)));
        assert_eq!(Fault::Translation(3).cause(), "translation-fault-level3");
    }
}
