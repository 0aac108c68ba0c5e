//! Pure decoders of the cache identification registers: CLIDR_EL1, CTR_EL0, CCSIDR_EL1 (both
//! formats), CCSIDR2_EL1, CSSELR_EL1 values and DCZID_EL0. MIDR_EL1 is in `crate::cpuid`.
//!
//! Every decoder is total: any 64-bit value decodes without panicking or overflowing, and
//! anything reserved or inconsistent is reported as a [`Problem`] instead of being trusted.
//! Field layouts follow the Arm ARM (DDI 0487K.a): CLIDR_EL1 D24.2.29, CTR_EL0 D24.2.33,
//! CCSIDR_EL1 D24.2.26, CCSIDR2_EL1 D24.2.27, CSSELR_EL1 D24.2.32, DCZID_EL0 D24.2.36.

use crate::list::List;
use core::fmt;

use aarch64_cpu::registers::{CCSIDR_EL1, CLIDR_EL1};
use tock_registers::LocalRegisterCopy;

pub use crate::sysreg::{CCSIDR2_EL1, CTR_EL0, DCZID_EL0};

/// The problems one register shows (at most 24: CLIDR_EL1 can show 18).
pub type Problems = List<Problem, 24>;

/// Something reserved, out of range or inconsistent in an identification register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// CLIDR `Ctype<level>` holds a reserved encoding (0b101..0b111).
    ReservedCtype {
        /// Cache level (1..=7).
        level: u8,
        /// The raw 3-bit value.
        value: u8,
    },
    /// A cache is described at a level after a level with no cache (the architecture says no
    /// caches exist beyond the first empty level).
    CacheAfterGap {
        /// The level that has a cache despite the gap.
        level: u8,
    },
    /// A CLIDR level field (LoUIS, LoC, LoUU, ICB) names a level beyond the last cache.
    LevelBeyondCaches {
        /// Field name.
        field: &'static str,
        /// Its value.
        value: u8,
    },
    /// CTR_EL0 bit 31 is 0: not the AArch64 register format.
    CtrNotAarch64Format,
    /// CTR_EL0.L1Ip holds an encoding reserved in Armv8/Armv9 (AIVIVT) or deprecated (VPIPT).
    CtrL1IpReserved {
        /// The raw 2-bit value.
        value: u8,
    },
    /// A granule field (ERG, CWG) is above 0b1001 (2 KiB), which is reserved.
    GranuleReserved {
        /// Field name.
        field: &'static str,
        /// The raw 4-bit value.
        value: u8,
    },
    /// TminLine is too large to be a size in bytes (4 << TminLine overflows).
    TminLineTooLarge {
        /// The raw 6-bit value.
        value: u8,
    },
    /// DCZID_EL0.BS is above 9 (2 KiB), which is reserved.
    ZvaBlockReserved {
        /// The raw 4-bit value.
        value: u8,
    },
    /// Bits that are RES0 in this register format are set.
    Res0Set {
        /// Register name.
        register: &'static str,
        /// The offending bits.
        bits: u64,
    },
    /// The geometry cannot be expressed in a 32-bit set/way operand: log2(line) + ⌈log2(sets)⌉
    /// exceeds 32 − ⌈log2(ways)⌉ (the set and way fields would overlap).
    SetWayDoesNotFit {
        /// log2(line bytes).
        log2_line: u8,
        /// ⌈log2(sets)⌉.
        set_bits: u8,
        /// ⌈log2(ways)⌉.
        way_bits: u8,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Problem::ReservedCtype { level, value } => write!(f, "CLIDR Ctype{level} = {value:#05b} is reserved"),
            Problem::CacheAfterGap { level } => write!(f, "CLIDR describes a cache at L{level} after a level with no cache"),
            Problem::LevelBeyondCaches { field, value } => write!(f, "CLIDR {field} = {value} is beyond the last cache level"),
            Problem::CtrNotAarch64Format => write!(f, "CTR_EL0 bit 31 is 0: not the AArch64 format"),
            Problem::CtrL1IpReserved { value } => write!(f, "CTR_EL0.L1Ip = {value:#04b} is reserved/deprecated in Armv8/Armv9"),
            Problem::GranuleReserved { field, value } => write!(f, "CTR_EL0.{field} = {value} is reserved (above 2 KiB)"),
            Problem::TminLineTooLarge { value } => write!(f, "CTR_EL0.TminLine = {value} is not a representable size"),
            Problem::ZvaBlockReserved { value } => write!(f, "DCZID_EL0.BS = {value} is reserved (above 2 KiB)"),
            Problem::Res0Set { register, bits } => write!(f, "{register}: RES0 bits {bits:#x} are set"),
            Problem::SetWayDoesNotFit { log2_line, set_bits, way_bits } => {
                write!(f, "set/way operand does not fit: line shift {log2_line} + {set_bits} set bits > 32 - {way_bits} way bits")
            }
        }
    }
}

/// ⌈log2(n)⌉ for n ≥ 1 (0 for n ≤ 1).
pub const fn ceil_log2(n: u64) -> u8 {
    if n <= 1 {
        0
    } else {
        (64 - (n - 1).leading_zeros()) as u8
    }
}

// ---- CLIDR_EL1 -------------------------------------------------------------------------------

/// What CLIDR_EL1 says one cache level holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    /// No cache at this level.
    None,
    /// Instruction cache only.
    Instruction,
    /// Data cache only.
    Data,
    /// Separate instruction and data caches.
    Separate,
    /// Unified cache.
    Unified,
    /// A reserved encoding (0b101..0b111): not trusted, treated as no cache.
    Reserved(u8),
}

impl CacheType {
    /// Decodes a 3-bit Ctype field.
    pub const fn from_bits(v: u8) -> Self {
        match v & 7 {
            0 => CacheType::None,
            1 => CacheType::Instruction,
            2 => CacheType::Data,
            3 => CacheType::Separate,
            4 => CacheType::Unified,
            r => CacheType::Reserved(r),
        }
    }

    /// True when set/way maintenance applies (a data or unified cache exists).
    pub const fn has_data(self) -> bool {
        matches!(self, CacheType::Data | CacheType::Separate | CacheType::Unified)
    }

    /// True when an instruction cache (separate or instruction-only) exists.
    pub const fn has_instruction(self) -> bool {
        matches!(self, CacheType::Instruction | CacheType::Separate)
    }

    /// True when something that CLIDR defines is present.
    pub const fn present(self) -> bool {
        !matches!(self, CacheType::None | CacheType::Reserved(_))
    }

    /// A short name (`none`, `I`, `D`, `I+D`, `unified`, `reserved`).
    pub const fn name(self) -> &'static str {
        match self {
            CacheType::None => "none",
            CacheType::Instruction => "I",
            CacheType::Data => "D",
            CacheType::Separate => "I+D",
            CacheType::Unified => "unified",
            CacheType::Reserved(_) => "reserved",
        }
    }
}

/// A decoded CLIDR_EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clidr {
    /// Raw value.
    pub raw: u64,
    /// Ctype1..Ctype7 (index 0 = L1).
    pub ctype: [CacheType; 7],
    /// Level of Unification Inner Shareable: levels 1..=LoUIS must be maintained for PoU (IS).
    pub louis: u8,
    /// Level of Coherence: levels 1..=LoC must be maintained to reach PoC.
    pub loc: u8,
    /// Level of Unification Uniprocessor.
    pub louu: u8,
    /// Inner cache boundary (0 = not disclosed).
    pub icb: u8,
}

impl Clidr {
    /// Decodes a raw CLIDR_EL1 value.
    pub fn decode(raw: u64) -> Self {
        let r = LocalRegisterCopy::<u64, CLIDR_EL1::Register>::new(raw);
        let mut ctype = [CacheType::None; 7];
        for (i, t) in ctype.iter_mut().enumerate() {
            *t = CacheType::from_bits(((raw >> (3 * i)) & 7) as u8);
        }
        Self {
            raw,
            ctype,
            louis: r.read(CLIDR_EL1::LoUIS) as u8,
            loc: r.read(CLIDR_EL1::LoC) as u8,
            louu: r.read(CLIDR_EL1::LoUU) as u8,
            icb: r.read(CLIDR_EL1::ICB) as u8,
        }
    }

    /// The cache type at `level` (1..=7; anything else is `None`).
    pub fn level(&self, level: u8) -> CacheType {
        match level {
            1..=7 => self.ctype[level as usize - 1],
            _ => CacheType::None,
        }
    }

    /// Whether CLIDR leaves the data-cache clean to the Point of Unification required for
    /// instruction-to-data coherence (when CTR_EL0.IDC = 0): the Arm ARM's CTR_EL0.IDC = 0 reads
    /// "required … unless CLIDR_EL1.LoC == 0b000 or (CLIDR_EL1.LoUIS == 0b000 &&
    /// CLIDR_EL1.LoUU == 0b000)".
    pub fn clean_to_pou_required(&self) -> bool {
        !(self.loc == 0 || (self.louis == 0 && self.louu == 0))
    }

    /// Whether any cache level must be cleaned or invalidated to reach the Point of Coherency:
    /// LoC ≠ 0. With LoC = 0 "no levels of cache need to be cleaned or invalidated when cleaning
    /// or invalidating to the Point of Coherency" (Arm ARM D7.5.8.1, LoC): every cache is
    /// transparent to a non-cacheable observer, so a missing clean or invalidate to PoC loses
    /// nothing on this CPU (QEMU's a64fx reports LoC = 0).
    pub fn poc_maintenance_required(&self) -> bool {
        self.loc != 0
    }

    /// Number of cache levels: the levels before the first empty (or reserved) Ctype field.
    pub fn levels(&self) -> u8 {
        self.ctype.iter().take_while(|t| t.present()).count() as u8
    }

    /// Reserved or inconsistent contents.
    pub fn problems(&self) -> Problems {
        let mut p = Problems::new();
        for (i, t) in self.ctype.iter().enumerate() {
            if let CacheType::Reserved(value) = *t {
                let _ = p.push(Problem::ReservedCtype { level: i as u8 + 1, value });
            }
        }
        let n = self.levels();
        for l in n + 2..=7 {
            if self.level(l).present() {
                let _ = p.push(Problem::CacheAfterGap { level: l });
            }
        }
        for (field, value) in [("LoUIS", self.louis), ("LoC", self.loc), ("LoUU", self.louu), ("ICB", self.icb)] {
            if value > n {
                let _ = p.push(Problem::LevelBeyondCaches { field, value });
            }
        }
        let res0 = self.raw & !((1u64 << 47) - 1);
        if res0 != 0 {
            let _ = p.push(Problem::Res0Set { register: "CLIDR_EL1", bits: res0 });
        }
        p
    }
}

// ---- CSSELR_EL1 --------------------------------------------------------------------------------

/// The CSSELR_EL1 value selecting the data/unified (`instruction == false`) or instruction cache
/// at `level` (1..=7). Level is stored as level − 1 in bits \[3:1\]; InD is bit 0.
pub const fn csselr(level: u8, instruction: bool) -> u64 {
    (((level.saturating_sub(1) & 7) as u64) << 1) | instruction as u64
}

// ---- CCSIDR_EL1 / CCSIDR2_EL1 ------------------------------------------------------------------

/// Which CCSIDR_EL1 layout applies (ID_AA64MMFR2_EL1.CCIDX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcsidrFormat {
    /// Without FEAT_CCIDX: NumSets \[27:13\], Associativity \[12:3\], LineSize \[2:0\].
    Short,
    /// With FEAT_CCIDX: NumSets \[55:32\], Associativity \[23:3\], LineSize \[2:0\].
    Ccidx,
}

impl CcsidrFormat {
    /// The format selected by a raw ID_AA64MMFR2_EL1 value (CCIDX, bits \[23:20\], non-zero).
    pub const fn from_mmfr2(mmfr2: u64) -> Self {
        if (mmfr2 >> 20) & 0xf != 0 {
            CcsidrFormat::Ccidx
        } else {
            CcsidrFormat::Short
        }
    }

    /// "32-bit" or "64-bit (FEAT_CCIDX)".
    pub const fn name(self) -> &'static str {
        match self {
            CcsidrFormat::Short => "32-bit",
            CcsidrFormat::Ccidx => "64-bit (FEAT_CCIDX)",
        }
    }
}

/// One cache's geometry as CCSIDR_EL1 reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ccsidr {
    /// Raw value.
    pub raw: u64,
    /// The layout used to decode it.
    pub format: CcsidrFormat,
    /// log2 of the line size in bytes (4..=11).
    pub log2_line: u8,
    /// Associativity (≥ 1).
    pub ways: u32,
    /// Number of sets (≥ 1).
    pub sets: u32,
}

impl Ccsidr {
    /// Decodes a raw CCSIDR_EL1 value in the given format.
    pub fn decode(raw: u64, format: CcsidrFormat) -> Self {
        let r = LocalRegisterCopy::<u64, CCSIDR_EL1::Register>::new(raw);
        let (ways, sets) = match format {
            CcsidrFormat::Short => (r.read(CCSIDR_EL1::AssociativityWithoutCCIDX), r.read(CCSIDR_EL1::NumSetsWithoutCCIDX)),
            CcsidrFormat::Ccidx => (r.read(CCSIDR_EL1::AssociativityWithCCIDX), r.read(CCSIDR_EL1::NumSetsWithCCIDX)),
        };
        Self { raw, format, log2_line: r.read(CCSIDR_EL1::LineSize) as u8 + 4, ways: ways as u32 + 1, sets: sets as u32 + 1 }
    }

    /// Line size in bytes (16..=2048).
    pub const fn line(&self) -> u32 {
        1 << self.log2_line
    }

    /// Total size in bytes. Cannot overflow: at most 2^11 · 2^21 · 2^24 = 2^56.
    pub const fn size(&self) -> u64 {
        self.line() as u64 * self.ways as u64 * self.sets as u64
    }

    /// Number of set/way operations a walk of this cache issues (sets × ways).
    pub const fn lines(&self) -> u64 {
        self.ways as u64 * self.sets as u64
    }

    /// The way field's shift in a set/way operand: 32 − ⌈log2(ways)⌉ (32 when ways = 1: there is
    /// no way field, and a shift of 32 applied to way 0 yields 0).
    pub const fn way_shift(&self) -> u32 {
        32 - ceil_log2(self.ways as u64) as u32
    }

    /// True when level, set and way fields fit the 32-bit operand without overlapping.
    pub const fn setway_fits(&self) -> bool {
        self.log2_line as u32 + ceil_log2(self.sets as u64) as u32 <= self.way_shift()
    }

    /// Reserved or inconsistent contents.
    pub fn problems(&self) -> Problems {
        let mut p = Problems::new();
        // Short format: [31:28] were the Armv8.0 WT/WB/RA/WA flags (now UNKNOWN), so only
        // [63:32] is RES0. CCIDX format: [31:24] and [63:56] are RES0.
        let res0 = match self.format {
            CcsidrFormat::Short => self.raw & 0xffff_ffff_0000_0000,
            CcsidrFormat::Ccidx => self.raw & 0xff00_0000_ff00_0000,
        };
        if res0 != 0 {
            let _ = p.push(Problem::Res0Set { register: "CCSIDR_EL1", bits: res0 });
        }
        if !self.setway_fits() {
            let _ = p.push(Problem::SetWayDoesNotFit {
                log2_line: self.log2_line,
                set_bits: ceil_log2(self.sets as u64),
                way_bits: ceil_log2(self.ways as u64),
            });
        }
        p
    }
}

/// A decoded CCSIDR2_EL1 (FEAT_CCIDX): the number of sets of the selected cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ccsidr2 {
    /// Raw value.
    pub raw: u64,
    /// Number of sets (≥ 1).
    pub sets: u32,
}

impl Ccsidr2 {
    /// Decodes a raw CCSIDR2_EL1 value.
    pub fn decode(raw: u64) -> Self {
        let r = LocalRegisterCopy::<u64, CCSIDR2_EL1::Register>::new(raw);
        Self { raw, sets: r.read(CCSIDR2_EL1::NumSets) as u32 + 1 }
    }

    /// Reserved contents.
    pub fn problems(&self) -> Problems {
        let res0 = self.raw & !0xff_ffff;
        let mut p = Problems::new();
        if res0 != 0 {
            let _ = p.push(Problem::Res0Set { register: "CCSIDR2_EL1", bits: res0 });
        }
        p
    }
}

// ---- CTR_EL0 -----------------------------------------------------------------------------------

/// Level 1 instruction cache indexing/tagging policy (CTR_EL0.L1Ip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L1Ip {
    /// VMID-aware PIPT (Armv8; deprecated, reserved from Armv8.8/Armv9.3).
    Vpipt,
    /// ASID-tagged VIVT (Armv7 only: reserved in Armv8).
    Aivivt,
    /// Virtually indexed, physically tagged.
    Vipt,
    /// Physically indexed, physically tagged.
    Pipt,
}

impl L1Ip {
    /// The acronym.
    pub const fn name(self) -> &'static str {
        match self {
            L1Ip::Vpipt => "VPIPT",
            L1Ip::Aivivt => "AIVIVT",
            L1Ip::Vipt => "VIPT",
            L1Ip::Pipt => "PIPT",
        }
    }
}

/// A decoded CTR_EL0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctr {
    /// Raw value.
    pub raw: u64,
}

impl Ctr {
    fn reg(&self) -> LocalRegisterCopy<u64, CTR_EL0::Register> {
        LocalRegisterCopy::new(self.raw)
    }

    /// Smallest instruction-cache line in bytes (4 << IminLine; ≤ 128 KiB).
    pub fn imin_line(&self) -> u32 {
        4 << self.reg().read(CTR_EL0::IminLine)
    }

    /// Smallest data/unified line in bytes that maintenance by VA affects (4 << DminLine): the
    /// stride of every maintenance loop.
    pub fn dmin_line(&self) -> u32 {
        4 << self.reg().read(CTR_EL0::DminLine)
    }

    /// L1 instruction cache policy.
    pub fn l1ip(&self) -> L1Ip {
        match self.reg().read(CTR_EL0::L1Ip) {
            0 => L1Ip::Vpipt,
            1 => L1Ip::Aivivt,
            2 => L1Ip::Vipt,
            _ => L1Ip::Pipt,
        }
    }

    /// Exclusives reservation granule in bytes; `None` when not provided (assume 2 KiB).
    pub fn erg(&self) -> Option<u32> {
        granule(self.reg().read(CTR_EL0::ERG) as u8)
    }

    /// Cache writeback granule in bytes; `None` when not provided (assume 2 KiB).
    pub fn cwg(&self) -> Option<u32> {
        granule(self.reg().read(CTR_EL0::CWG) as u8)
    }

    /// IDC: D-cache clean to PoU is not required for instruction coherence.
    pub fn idc(&self) -> bool {
        self.reg().is_set(CTR_EL0::IDC)
    }

    /// DIC: I-cache invalidation to PoU is not required for instruction coherence.
    pub fn dic(&self) -> bool {
        self.reg().is_set(CTR_EL0::DIC)
    }

    /// Smallest allocation-tag line in bytes (4 << TminLine, FEAT_MTE2); `None` when the field
    /// is 0 (not reported: RES0 without MTE) or too large to be a size in 64 bits.
    pub fn tmin_line(&self) -> Option<u64> {
        let t = self.reg().read(CTR_EL0::TminLine) as u32;
        if t == 0 {
            return None;
        }
        4u64.checked_shl(t).filter(|v| v >> t == 4)
    }

    /// Reserved or inconsistent contents.
    pub fn problems(&self) -> Problems {
        let r = self.reg();
        let mut p = Problems::new();
        if !r.is_set(CTR_EL0::Res1) {
            let _ = p.push(Problem::CtrNotAarch64Format);
        }
        let l1ip = r.read(CTR_EL0::L1Ip) as u8;
        if l1ip < 2 {
            let _ = p.push(Problem::CtrL1IpReserved { value: l1ip });
        }
        for (field, v) in [("ERG", r.read(CTR_EL0::ERG)), ("CWG", r.read(CTR_EL0::CWG))] {
            if v > 9 {
                let _ = p.push(Problem::GranuleReserved { field, value: v as u8 });
            }
        }
        if r.read(CTR_EL0::TminLine) != 0 && self.tmin_line().is_none() {
            let _ = p.push(Problem::TminLineTooLarge { value: r.read(CTR_EL0::TminLine) as u8 });
        }
        // RES0: [63:38], [30], [13:4].
        let res0 = self.raw & (!((1u64 << 38) - 1) | 1 << 30 | 0x3ff0);
        if res0 != 0 {
            let _ = p.push(Problem::Res0Set { register: "CTR_EL0", bits: res0 });
        }
        p
    }
}

/// A 4-bit log2-words granule field in bytes; 0 = not provided.
fn granule(v: u8) -> Option<u32> {
    if v == 0 {
        None
    } else {
        Some(4 << (v & 0xf))
    }
}

// ---- DCZID_EL0 ---------------------------------------------------------------------------------

/// A decoded DCZID_EL0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dczid {
    /// Raw value.
    pub raw: u64,
}

impl Dczid {
    fn reg(&self) -> LocalRegisterCopy<u64, DCZID_EL0::Register> {
        LocalRegisterCopy::new(self.raw)
    }

    /// DC ZVA is prohibited (DZP = 1): zero memory with ordinary stores instead.
    pub fn prohibited(&self) -> bool {
        self.reg().is_set(DCZID_EL0::DZP)
    }

    /// Raw BS field (log2 of the block size in words).
    pub fn bs(&self) -> u8 {
        self.reg().read(DCZID_EL0::BS) as u8
    }

    /// Bytes zeroed by one DC ZVA (4 << BS); `None` when BS is reserved (> 9, i.e. > 2 KiB).
    pub fn block(&self) -> Option<u32> {
        let bs = self.bs();
        (bs <= 9).then(|| 4 << bs)
    }

    /// The usable DC ZVA block: `None` when prohibited or reserved (fall back to stores).
    pub fn usable_block(&self) -> Option<u32> {
        if self.prohibited() {
            None
        } else {
            self.block()
        }
    }

    /// Reserved contents.
    pub fn problems(&self) -> Problems {
        let mut p = Problems::new();
        if self.block().is_none() {
            let _ = p.push(Problem::ZvaBlockReserved { value: self.bs() });
        }
        let res0 = self.raw & !0x1f;
        if res0 != 0 {
            let _ = p.push(Problem::Res0Set { register: "DCZID_EL0", bits: res0 });
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// xorshift64 (Marsaglia): a deterministic PRNG so a failing seed can be replayed.
    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        /// Random values, half of them with only a few low fields populated (closer to real
        /// registers, where most high bits are 0).
        fn value(&mut self) -> u64 {
            let v = self.next();
            if v & 1 == 0 {
                v
            } else {
                v & (self.next() >> (self.next() % 64))
            }
        }
    }

    const N: usize = 200_000;

    // ---- golden values ----------------------------------------------------------------------
    // "measured": read by this kernel on QEMU 10.0.2's CPU models (`cargo run` with QEMU_CPU).
    // "TRM": encoded from the geometry in the core's Technical Reference Manual (the values a
    // silicon part reports; e.g. the Pi 4's Cortex-A72 L1D is 32 KiB 2-way).

    fn geom(raw: u64, format: CcsidrFormat) -> (u32, u32, u32, u64) {
        let c = Ccsidr::decode(raw, format);
        assert!(c.problems().is_empty(), "{raw:#x}: {:?}", c.problems());
        (c.line(), c.ways, c.sets, c.size())
    }

    #[test]
    fn ccsidr_golden() {
        use CcsidrFormat::*;
        // Cortex-A53 (TRM DDI 0500J and measured on QEMU cortex-a53/a35/a55/a72 L1D).
        assert_eq!(geom(0x700f_e01a, Short), (64, 4, 128, 32 << 10));
        assert_eq!(geom(0x201f_e00a, Short), (64, 2, 256, 32 << 10)); // A53 L1I, TRM
        assert_eq!(geom(0x703f_e07a, Short), (64, 16, 512, 512 << 10)); // A53/A35/A55 L2 512 KiB
        assert_eq!(geom(0x203f_e002, Short), (64, 1, 512, 32 << 10)); // QEMU cortex-a53 L1I: direct-mapped
                                                                      // Cortex-A72: silicon L1D (TRM 100095, Pi 4) vs QEMU's; L1I 48 KiB 3-way; L2 1 MiB.
        assert_eq!(geom(0x701f_e00a, Short), (64, 2, 256, 32 << 10));
        assert_eq!(geom(0x201f_e012, Short), (64, 3, 256, 48 << 10));
        assert_eq!(geom(0x707f_e07a, Short), (64, 16, 1024, 1 << 20));
        assert_eq!(geom(0x70ff_e07a, Short), (64, 16, 2048, 2 << 20)); // QEMU cortex-a57 / max L2
                                                                       // Cortex-A76 / Neoverse N1 (TRM 100798 / 100616; measured on QEMU).
        assert_eq!(geom(0x701f_e01a, Short), (64, 4, 256, 64 << 10));
        assert_eq!(geom(0x201f_e01a, Short), (64, 4, 256, 64 << 10));
        assert_eq!(geom(0x707f_e03a, Short), (64, 8, 1024, 512 << 10));
        assert_eq!(geom(0x70ff_e03a, Short), (64, 8, 2048, 1 << 20));
        // A64FX (measured on QEMU a64fx): 256-byte lines.
        assert_eq!(geom(0x7007_e01c, Short), (256, 4, 64, 64 << 10));
        assert_eq!(geom(0x70ff_e07c, Short), (256, 16, 2048, 8 << 20));
        // FEAT_CCIDX layout (measured on QEMU cortex-a710 / neoverse-n2 / neoverse-v1).
        assert_eq!(geom(0x0000_00ff_0000_001a, Ccidx), (64, 4, 256, 64 << 10));
        assert_eq!(geom(0x0000_03ff_0000_003a, Ccidx), (64, 8, 1024, 512 << 10));
        assert_eq!(geom(0x0000_07ff_0000_003a, Ccidx), (64, 8, 2048, 1 << 20));
        // The same CCIDX value read in the 32-bit layout is nonsense: RES0 bits are reported.
        let wrong = Ccsidr::decode(0x0000_00ff_0000_001a, Short);
        assert!(wrong.problems().iter().any(|p| matches!(p, Problem::Res0Set { .. })));
    }

    #[test]
    fn clidr_golden() {
        // Cortex-A53/A57/A72 (TRM; measured on QEMU): L1 I+D, L2 unified, LoUU 1, LoC 2, LoUIS 1.
        let c = Clidr::decode(0x0a20_0023);
        assert_eq!((c.levels(), c.louu, c.louis, c.loc, c.icb), (2, 1, 1, 2, 0));
        assert!(c.clean_to_pou_required());
        assert_eq!(c.ctype[..3], [CacheType::Separate, CacheType::Unified, CacheType::None]);
        assert!(c.problems().is_empty());
        // Cortex-A76 / Neoverse N1 (measured): LoUU = LoUIS = 0, ICB = L2.
        let c = Clidr::decode(0x8200_0023);
        assert_eq!((c.levels(), c.louu, c.louis, c.loc, c.icb), (2, 0, 0, 2, 2));
        assert!(c.problems().is_empty());
        assert!(!c.clean_to_pou_required(), "LoUIS = LoUU = 0");
        // A64FX (measured): LoC = 0.
        let c = Clidr::decode(0x8000_0023);
        assert_eq!((c.loc, c.icb), (0, 2));
        assert!(!c.clean_to_pou_required(), "LoC = 0");
        // Cortex-A710 / Neoverse N2 (measured): Ttype fields set (MTE), still no problem.
        let c = Clidr::decode(0x14_8200_0023);
        assert_eq!((c.levels(), c.loc, c.icb), (2, 2, 2));
        assert!(c.problems().is_empty(), "{:?}", c.problems());
        // Three levels (a Pi 5-like A76 + DSU L3): Ctype3 unified, LoC 3.
        let c = Clidr::decode(0x8300_0123);
        assert_eq!((c.levels(), c.loc), (3, 3));
        assert_eq!(c.level(3), CacheType::Unified);
        // Reserved Ctype, a cache after a gap and LoC beyond the last cache are reported.
        let c = Clidr::decode(0x0500_0000 | 5 << 3 | 3);
        let p = c.problems();
        assert!(p.contains(&Problem::ReservedCtype { level: 2, value: 5 }), "{p:?}");
        assert!(p.contains(&Problem::LevelBeyondCaches { field: "LoC", value: 5 }), "{p:?}");
        let c = Clidr::decode(3 | 4 << 6 | 0x0300_0000);
        assert_eq!(c.levels(), 1);
        assert!(c.problems().contains(&Problem::CacheAfterGap { level: 3 }));
    }

    #[test]
    fn ctr_golden() {
        // Cortex-A53/A55/A35 (measured): VIPT, 64 B lines, ERG/CWG 64 B, IDC = DIC = 0.
        let c = Ctr { raw: 0x8444_8004 };
        assert_eq!(
            (c.imin_line(), c.dmin_line(), c.l1ip(), c.erg(), c.cwg(), c.idc(), c.dic()),
            (64, 64, L1Ip::Vipt, Some(64), Some(64), false, false)
        );
        assert_eq!(c.tmin_line(), None);
        assert!(c.problems().is_empty());
        // Cortex-A72/A76/N1 (measured): PIPT.
        assert_eq!(Ctr { raw: 0x8444_c004 }.l1ip(), L1Ip::Pipt);
        // QEMU max / Neoverse V1 (measured): IDC = DIC = 1.
        let c = Ctr { raw: 0xb444_c004 };
        assert!(c.idc() && c.dic() && c.problems().is_empty());
        // Cortex-A710 (measured): IDC = 1, DIC = 0, TminLine = 4 (4 << 4 = 64 B).
        let c = Ctr { raw: 0x4_9444_c004 };
        assert_eq!((c.idc(), c.dic(), c.tmin_line()), (true, false, Some(64)));
        assert!(c.problems().is_empty());
        // A64FX (measured): 256 B lines and granules.
        let c = Ctr { raw: 0x8666_8006 };
        assert_eq!((c.imin_line(), c.dmin_line(), c.erg(), c.cwg()), (256, 256, Some(256), Some(256)));
        // Armv7-format, reserved L1Ip, granule > 2 KiB, TminLine too large.
        let c = Ctr { raw: 0x3f_0fa0_4004 };
        let p = c.problems();
        assert!(p.contains(&Problem::CtrNotAarch64Format), "{p:?}");
        assert!(p.contains(&Problem::CtrL1IpReserved { value: 1 }), "{p:?}");
        assert!(p.contains(&Problem::GranuleReserved { field: "ERG", value: 10 }), "{p:?}");
        assert!(p.contains(&Problem::GranuleReserved { field: "CWG", value: 15 }), "{p:?}");
        assert!(p.contains(&Problem::TminLineTooLarge { value: 63 }), "{p:?}");
        assert_eq!(c.tmin_line(), None);
        // ERG/CWG = 0: not provided.
        assert_eq!(Ctr { raw: 0x8000_c004 }.cwg(), None);
    }

    #[test]
    fn dczid_and_ccsidr2_golden() {
        let d = Dczid { raw: 0x4 }; // every QEMU Cortex model (measured)
        assert_eq!((d.block(), d.prohibited(), d.usable_block()), (Some(64), false, Some(64)));
        let d = Dczid { raw: 0x6 }; // A64FX (measured)
        assert_eq!(d.block(), Some(256));
        let d = Dczid { raw: 0x14 }; // DZP = 1
        assert_eq!((d.block(), d.prohibited(), d.usable_block()), (Some(64), true, None));
        let d = Dczid { raw: 0xa };
        assert_eq!(d.block(), None);
        assert_eq!(d.problems(), [Problem::ZvaBlockReserved { value: 10 }]);
        assert_eq!(Dczid { raw: 0x104 }.problems(), [Problem::Res0Set { register: "DCZID_EL0", bits: 0x100 }]);
        assert_eq!(Ccsidr2::decode(0xff).sets, 256);
        assert!(Ccsidr2::decode(0x1_0000_00ff).problems().len() == 1);
    }

    #[test]
    fn format_and_csselr() {
        assert_eq!(CcsidrFormat::from_mmfr2(0x0000_0000_0010_0000), CcsidrFormat::Ccidx);
        assert_eq!(CcsidrFormat::from_mmfr2(0x0000_0000_000f_ffff), CcsidrFormat::Short);
        assert_eq!(csselr(1, false), 0);
        assert_eq!(csselr(1, true), 1);
        assert_eq!(csselr(2, false), 2);
        assert_eq!(csselr(7, true), 13);
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(3), 2);
        assert_eq!(ceil_log2(4), 2);
        assert_eq!(ceil_log2(u64::MAX), 64);
    }

    // ---- property tests over random 64-bit values ---------------------------------------------

    #[test]
    fn ccsidr_any_value() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..N {
            let raw = rng.value();
            for format in [CcsidrFormat::Short, CcsidrFormat::Ccidx] {
                let c = Ccsidr::decode(raw, format);
                assert!((4..=11).contains(&c.log2_line));
                assert!(c.ways >= 1 && c.sets >= 1);
                let (max_ways, max_sets) = if format == CcsidrFormat::Short { (1 << 10, 1 << 15) } else { (1 << 21, 1 << 24) };
                assert!(c.ways <= max_ways && c.sets <= max_sets, "{raw:#x}");
                // size() is exact: compare against 128-bit arithmetic.
                assert_eq!(c.size() as u128, c.line() as u128 * c.ways as u128 * c.sets as u128);
                assert_eq!(c.lines() as u128, c.ways as u128 * c.sets as u128);
                let p = c.problems();
                assert_eq!(c.setway_fits(), !p.iter().any(|p| matches!(p, Problem::SetWayDoesNotFit { .. })), "{raw:#x}");
                if c.setway_fits() {
                    // The highest operand keeps level, set and way fields disjoint within 32 bits.
                    let set_field = ((c.sets as u64 - 1).next_power_of_two().max(1) - 1) << c.log2_line;
                    let way_field = if c.ways == 1 { 0 } else { ((c.ways as u64).next_power_of_two() - 1) << c.way_shift() };
                    assert_eq!(set_field & way_field, 0, "{raw:#x}");
                    assert_eq!(set_field & 0xf, 0);
                    assert!(set_field | way_field <= u32::MAX as u64);
                }
                for q in &p {
                    assert!(!format!("{q}").is_empty());
                }
            }
            let c2 = Ccsidr2::decode(raw);
            assert!(c2.sets >= 1 && c2.sets <= 1 << 24);
            assert_eq!(c2.problems().is_empty(), raw >> 24 == 0);
        }
    }

    #[test]
    fn clidr_any_value() {
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        for _ in 0..N {
            let raw = rng.value();
            let c = Clidr::decode(raw);
            assert!(c.levels() <= 7);
            assert!(c.louis <= 7 && c.loc <= 7 && c.louu <= 7 && c.icb <= 7);
            for l in 0..=u8::MAX {
                let _ = c.level(l);
            }
            let p = c.problems();
            let reserved = (0..7).filter(|i| (raw >> (3 * i)) & 7 >= 5).count();
            assert_eq!(p.iter().filter(|p| matches!(p, Problem::ReservedCtype { .. })).count(), reserved, "{raw:#x}");
            assert_eq!(p.iter().any(|p| matches!(p, Problem::Res0Set { .. })), raw >> 47 != 0);
            // Every level counted in levels() is something CLIDR defines.
            assert!((1..=c.levels()).all(|l| c.level(l).present()));
            for q in &p {
                assert!(!format!("{q}").is_empty());
            }
        }
    }

    #[test]
    fn ctr_and_dczid_any_value() {
        let mut rng = XorShift(0xdead_beef_cafe_f00d);
        for _ in 0..N {
            let raw = rng.value();
            let c = Ctr { raw };
            for l in [c.imin_line(), c.dmin_line()] {
                assert!(l.is_power_of_two() && (4..=1 << 17).contains(&l));
            }
            let p = c.problems();
            for (g, field) in [(c.erg(), (raw >> 20) & 0xf), (c.cwg(), (raw >> 24) & 0xf)] {
                assert_eq!(g.is_none(), field == 0);
                if field > 9 {
                    assert!(p.iter().any(|q| matches!(q, Problem::GranuleReserved { value, .. } if *value as u64 == field)), "{raw:#x}");
                }
            }
            assert_eq!(p.contains(&Problem::CtrNotAarch64Format), raw & (1 << 31) == 0);
            assert_eq!(p.iter().any(|q| matches!(q, Problem::CtrL1IpReserved { .. })), (raw >> 14) & 3 < 2);
            if let Some(t) = c.tmin_line() {
                assert!(t.is_power_of_two() && t >= 8);
            }
            let d = Dczid { raw };
            assert_eq!(d.block().is_none(), raw & 0xf > 9);
            if let Some(b) = d.block() {
                assert!(b.is_power_of_two() && (4..=2048).contains(&b));
            }
            assert_eq!(d.usable_block().is_some(), raw & 0x10 == 0 && raw & 0xf <= 9);
            assert_eq!(d.problems().is_empty(), raw & !0x1f == 0 && raw & 0xf <= 9);
            let _ = csselr((raw & 0xff) as u8, raw & 0x100 != 0);
            assert!(csselr((raw & 0xff) as u8, raw & 0x100 != 0) <= 0xf);
        }
    }
}
