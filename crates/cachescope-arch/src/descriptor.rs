//! VMSAv8-64 stage-1 translation table descriptors for the 4 KiB granule (Arm ARM DDI 0487K.a
//! D8.3, "Translation table descriptor formats"), declared with tock-registers, and the MAIR_EL1
//! attribute bytes that [`MemAttr`] selects.
//!
//! MAIR bytes are written as raw values: aarch64-cpu 11's `MAIR_EL1` write-through field values
//! are hex literals where binary was meant (`WriteThrough_Transient_ReadAlloc = 0x0010`).

use tock_registers::{fields::FieldValue, LocalRegisterCopy};

use crate::attr::{Access, Attributes, MemAttr, Shareability};

/// Descriptor layouts (the macro generates items without docs; every field is documented).
#[allow(missing_docs)]
pub mod fields {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
        /// Table descriptor (lookup levels 0 to 2).
        pub TABLE [
            /// Next-level table address, bits \[47:12\].
            NEXT_TABLE OFFSET(12) NUMBITS(36) [],
            /// 1 = table (at levels 0–2; 0 would be a block).
            TYPE OFFSET(1) NUMBITS(1) [
                Block = 0,
                Table = 1
            ],
            /// Valid.
            VALID OFFSET(0) NUMBITS(1) []
        ],
        /// Block (levels 1 and 2) and page (level 3) descriptor.
        pub LEAF [
            /// Unprivileged (EL0) execute-never.
            UXN OFFSET(54) NUMBITS(1) [],
            /// Privileged (EL1) execute-never.
            PXN OFFSET(53) NUMBITS(1) [],
            /// Contiguous hint.
            CONTIGUOUS OFFSET(52) NUMBITS(1) [],
            /// Output address bits \[47:12\] (a block's low bits are zero).
            OUTPUT_ADDR OFFSET(12) NUMBITS(36) [],
            /// Not global (ASID-tagged).
            NG OFFSET(11) NUMBITS(1) [],
            /// Access flag (set: no access-flag faults).
            AF OFFSET(10) NUMBITS(1) [],
            /// Shareability.
            SH OFFSET(8) NUMBITS(2) [
                Non = 0b00,
                Outer = 0b10,
                Inner = 0b11
            ],
            /// Data access permissions AP\[2:1\].
            AP OFFSET(6) NUMBITS(2) [
                RW_EL1 = 0b00,
                RW_EL1_EL0 = 0b01,
                RO_EL1 = 0b10,
                RO_EL1_EL0 = 0b11
            ],
            /// Non-secure output address.
            NS OFFSET(5) NUMBITS(1) [],
            /// Index into MAIR_EL1.
            ATTR_INDX OFFSET(2) NUMBITS(3) [],
            /// 0 = block (levels 1–2), 1 = page (level 3).
            TYPE OFFSET(1) NUMBITS(1) [
                Block = 0,
                Page = 1
            ],
            /// Valid.
            VALID OFFSET(0) NUMBITS(1) []
        ]
    }
}
pub use fields::{LEAF, TABLE};

/// Normal, inner and outer write-back non-transient, read- and write-allocate.
pub const MAIR_NORMAL_WB: u8 = 0xff;
/// Normal, inner and outer write-through non-transient, read-allocate, no write-allocate.
/// (0xaa rather than Linux's 0xbb: a write-through write miss then does not fill a line, the
/// classic write-through policy that contrasts with write-back read/write-allocate.)
pub const MAIR_NORMAL_WT: u8 = 0xaa;
/// Normal, inner and outer non-cacheable.
pub const MAIR_NORMAL_NC: u8 = 0x44;
/// Device-nGnRnE.
pub const MAIR_DEVICE_NGNRNE: u8 = 0x00;
/// Device-nGnRE.
pub const MAIR_DEVICE_NGNRE: u8 = 0x04;
/// Device-GRE.
pub const MAIR_DEVICE_GRE: u8 = 0x0c;
/// Normal, inner and outer write-back non-transient, read-allocate, no write-allocate.
pub const MAIR_NORMAL_WB_NWA: u8 = 0xee;
/// Normal, inner and outer write-back transient, read- and write-allocate (0b0111).
pub const MAIR_NORMAL_WB_TRANSIENT: u8 = 0x77;
/// Normal, inner and outer write-through transient, read-allocate, no write-allocate (0b0010):
/// the transient twin of [`MAIR_NORMAL_WT`].
pub const MAIR_NORMAL_WT_TRANSIENT: u8 = 0x22;

/// The MAIR_EL1 slot every allocation-hint type ([`MemAttr::HINTS`]) is mapped with. Slots 0–5
/// hold the six fixed types; three hint types do not fit the two slots left, so one slot is
/// reprogrammed for the hint in use ([`Mair`]) and slot 6 stays unused (0x00, Device-nGnRnE).
pub const HINT_INDEX: u8 = 7;

/// The MAIR_EL1 index (AttrIndx) of each memory type.
pub const fn mair_index(m: MemAttr) -> u8 {
    match m {
        MemAttr::NormalWriteBack => 0,
        MemAttr::NormalWriteThrough => 1,
        MemAttr::NormalNonCacheable => 2,
        MemAttr::DeviceNGnRnE => 3,
        MemAttr::DeviceNGnRE => 4,
        MemAttr::DeviceGRE => 5,
        MemAttr::NormalWriteBackNoWriteAllocate | MemAttr::NormalWriteBackTransient | MemAttr::NormalWriteThroughTransient => HINT_INDEX,
    }
}

/// The MAIR attribute byte of each memory type.
pub const fn mair_byte(m: MemAttr) -> u8 {
    match m {
        MemAttr::NormalWriteBack => MAIR_NORMAL_WB,
        MemAttr::NormalWriteThrough => MAIR_NORMAL_WT,
        MemAttr::NormalNonCacheable => MAIR_NORMAL_NC,
        MemAttr::DeviceNGnRnE => MAIR_DEVICE_NGNRNE,
        MemAttr::DeviceNGnRE => MAIR_DEVICE_NGNRE,
        MemAttr::DeviceGRE => MAIR_DEVICE_GRE,
        MemAttr::NormalWriteBackNoWriteAllocate => MAIR_NORMAL_WB_NWA,
        MemAttr::NormalWriteBackTransient => MAIR_NORMAL_WB_TRANSIENT,
        MemAttr::NormalWriteThroughTransient => MAIR_NORMAL_WT_TRANSIENT,
    }
}

/// The memory type at a fixed MAIR index (0–5), if the index is one we program; the hint slot
/// ([`HINT_INDEX`]) depends on MAIR's contents: [`Mair::mem_at`].
pub const fn mem_at_index(index: u8) -> Option<MemAttr> {
    let mut i = 0;
    while i < MemAttr::ALL.len() {
        if mair_index(MemAttr::ALL[i]) == index {
            return Some(MemAttr::ALL[i]);
        }
        i += 1;
    }
    None
}

/// MAIR_EL1's contents as a value: the six fixed types at their slots and the allocation-hint
/// type the hint slot ([`HINT_INDEX`]) holds now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mair {
    hint: MemAttr,
}

/// Why a [`Mair`] cannot hold a type in its hint slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAHint(pub MemAttr);

impl core::fmt::Display for NotAHint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} is not an allocation-hint type (the hint slot holds normal-wb-nwa, normal-wb-transient or normal-wt-transient)",
            self.0
        )
    }
}

impl Mair {
    /// What MAIR_EL1 holds at boot: the hint slot with write-back no-write-allocate.
    pub const DEFAULT: Mair = Mair { hint: MemAttr::NormalWriteBackNoWriteAllocate };

    /// MAIR with `hint` in the hint slot; refused for a type that is not one of
    /// [`MemAttr::HINTS`].
    pub const fn with_hint(hint: MemAttr) -> Result<Mair, NotAHint> {
        if hint.is_hint() {
            Ok(Mair { hint })
        } else {
            Err(NotAHint(hint))
        }
    }

    /// The type the hint slot holds.
    pub const fn hint(self) -> MemAttr {
        self.hint
    }

    /// The register value: every fixed type's byte at its index, the hint's at
    /// [`HINT_INDEX`], unused slot 6 0x00.
    pub const fn value(self) -> u64 {
        let mut v = 0u64;
        let mut i = 0;
        while i < MemAttr::ALL.len() {
            let m = MemAttr::ALL[i];
            v |= (mair_byte(m) as u64) << (8 * mair_index(m) as u64);
            i += 1;
        }
        v | (mair_byte(self.hint) as u64) << (8 * HINT_INDEX as u64)
    }

    /// The memory type at `index` with these contents.
    pub const fn mem_at(self, index: u8) -> Option<MemAttr> {
        if index == HINT_INDEX {
            Some(self.hint)
        } else {
            mem_at_index(index)
        }
    }
}

/// MAIR_EL1 as programmed at boot ([`Mair::DEFAULT`]).
pub const MAIR_EL1_VALUE: u64 = Mair::DEFAULT.value();

/// Attribute and permission bits of a leaf descriptor (everything but VALID, TYPE and the
/// output address).
impl From<Attributes> for FieldValue<u64, LEAF::Register> {
    fn from(a: Attributes) -> Self {
        let sh = match a.share {
            Shareability::Non => LEAF::SH::Non,
            Shareability::Inner => LEAF::SH::Inner,
            Shareability::Outer => LEAF::SH::Outer,
        };
        let ap = match a.access {
            Access::ReadOnly => LEAF::AP::RO_EL1,
            Access::ReadWrite => LEAF::AP::RW_EL1,
        };
        let pxn = if a.executable { LEAF::PXN::CLEAR } else { LEAF::PXN::SET };
        LEAF::AF::SET + LEAF::ATTR_INDX.val(mair_index(a.mem) as u64) + sh + ap + pxn + LEAF::UXN::SET
    }
}

/// Attributes of a leaf descriptor (valid or not) under MAIR's contents `mair`, or the unknown
/// MAIR index it holds.
pub fn leaf_attributes(raw: u64, mair: Mair) -> Result<Attributes, u8> {
    let d = LocalRegisterCopy::<u64, LEAF::Register>::new(raw);
    let index = d.read(LEAF::ATTR_INDX) as u8;
    let mem = mair.mem_at(index).ok_or(index)?;
    let share = match d.read_as_enum(LEAF::SH) {
        Some(LEAF::SH::Value::Inner) => Shareability::Inner,
        Some(LEAF::SH::Value::Outer) => Shareability::Outer,
        _ => Shareability::Non,
    };
    let access = if d.read(LEAF::AP) & 0b10 != 0 { Access::ReadOnly } else { Access::ReadWrite };
    Ok(Attributes { mem, access, executable: !d.is_set(LEAF::PXN), share })
}

/// A leaf descriptor: block at level 1 or 2, page at level 3. `pa` must be aligned to the
/// level's size (the table builder guarantees it).
pub fn leaf(pa: u64, level: u8, attrs: Attributes) -> u64 {
    let kind = if level == 3 { LEAF::TYPE::Page } else { LEAF::TYPE::Block };
    let fields = LEAF::VALID::SET + kind + LEAF::OUTPUT_ADDR.val(pa >> 12) + FieldValue::from(attrs);
    fields.value
}

/// A table descriptor pointing at the next-level table at `next` (4 KiB aligned).
pub fn table(next: u64) -> u64 {
    (TABLE::VALID::SET + TABLE::TYPE::Table + TABLE::NEXT_TABLE.val(next >> 12)).value
}

/// What a descriptor is at a given lookup level, as the hardware walk sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Faults (VALID clear, or a block encoding where none is allowed).
    Invalid,
    /// Points at the next-level table at this address.
    Table(u64),
    /// Maps the block or page at this output address.
    Leaf(u64),
}

/// Classifies `raw` found at lookup `level` (0–3) of a 4 KiB-granule walk.
pub fn classify(raw: u64, level: u8) -> Entry {
    let d = LocalRegisterCopy::<u64, TABLE::Register>::new(raw);
    if !d.is_set(TABLE::VALID) {
        return Entry::Invalid;
    }
    let typ = d.is_set(TABLE::TYPE);
    let addr = d.read(TABLE::NEXT_TABLE) << 12;
    match (level, typ) {
        (0..=2, true) => Entry::Table(addr),
        (1 | 2, false) | (3, true) => Entry::Leaf(addr),
        // Level 0 blocks need FEAT_LPA2 and a level 3 TYPE=0 is reserved: both fault.
        _ => Entry::Invalid,
    }
}

/// The descriptor with VALID cleared: the hardware ignores every other bit, so the output
/// address and attributes stay for a later "make" of break-before-make.
pub const fn broken(raw: u64) -> u64 {
    raw & !1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mair_value_holds_raw_bytes() {
        assert_eq!(MAIR_EL1_VALUE, 0xee00_0c04_0044_aaff);
        for m in MemAttr::ALL {
            assert_eq!((MAIR_EL1_VALUE >> (8 * mair_index(m))) as u8, mair_byte(m), "{m}");
            assert_eq!(mem_at_index(mair_index(m)), Some(m));
        }
        assert_eq!(mem_at_index(6), None);
        assert_eq!(mem_at_index(HINT_INDEX), None);
    }

    #[test]
    fn the_hint_slot_holds_one_hint_at_a_time() {
        for h in MemAttr::HINTS {
            let m = Mair::with_hint(h).unwrap();
            assert_eq!(mair_index(h), HINT_INDEX);
            assert_eq!((m.value() >> 56) as u8, mair_byte(h), "{h}");
            assert_eq!(m.value() & 0x00ff_ffff_ffff_ffff, 0x0000_0c04_0044_aaff, "fixed slots unchanged");
            assert_eq!(m.mem_at(HINT_INDEX), Some(h));
            assert_eq!(m.mem_at(6), None);
            for f in MemAttr::ALL {
                assert_eq!(m.mem_at(mair_index(f)), Some(f));
            }
        }
        assert_eq!(Mair::with_hint(MemAttr::NormalWriteBack), Err(NotAHint(MemAttr::NormalWriteBack)));
        assert_eq!([MAIR_NORMAL_WB_NWA, MAIR_NORMAL_WB_TRANSIENT, MAIR_NORMAL_WT_TRANSIENT], [0xee, 0x77, 0x22]);
        // The descriptor holds the slot, MAIR the type: one leaf reads as whichever hint is in.
        let d = leaf(0x1000, 3, Attributes::data(MemAttr::NormalWriteBackTransient));
        for h in MemAttr::HINTS {
            assert_eq!(leaf_attributes(d, Mair::with_hint(h).unwrap()).map(|a| a.mem), Ok(h));
        }
    }

    #[test]
    fn leaf_bits_match_the_architecture() {
        // Normal WB RW XN inner-shareable page at 0x4020_1000: the value Linux-style kernels
        // use (AF | SH=11 | AttrIndx 0 | PXN | UXN | page | valid).
        let d = leaf(0x4020_1000, 3, Attributes::RW_DATA);
        assert_eq!(d, 0x0060_0000_4020_1703);
        // Kernel code: RO (AP=10), executable (PXN clear), UXN set.
        let c = leaf(0x4020_0000, 3, Attributes::CODE);
        assert_eq!(c, 0x0040_0000_4020_0783);
        // A 2 MiB Device-nGnRE block: TYPE=0, AttrIndx 4.
        let b = leaf(0x0800_0000, 2, Attributes::MMIO);
        assert_eq!(b & 0b11, 0b01);
        assert_eq!((b >> 2) & 7, 4);
        assert_eq!(classify(b, 2), Entry::Leaf(0x0800_0000));
        assert_eq!(classify(d, 3), Entry::Leaf(0x4020_1000));
    }

    #[test]
    fn attributes_round_trip() {
        for m in MemAttr::ALL.into_iter().chain(MemAttr::HINTS) {
            let mair = Mair::with_hint(m).unwrap_or(Mair::DEFAULT);
            for a in [Attributes::data(m), Attributes { access: Access::ReadOnly, ..Attributes::data(m) }] {
                for share in [Shareability::Non, Shareability::Inner, Shareability::Outer] {
                    let a = Attributes { share, ..a };
                    assert_eq!(leaf_attributes(leaf(0x1000, 3, a), mair), Ok(a));
                    assert_eq!(leaf_attributes(broken(leaf(0x1000, 3, a)), mair), Ok(a));
                }
            }
        }
        assert_eq!(leaf_attributes(leaf(0, 3, Attributes::CODE), Mair::DEFAULT), Ok(Attributes::CODE));
        assert_eq!(leaf_attributes(6 << 2, Mair::DEFAULT), Err(6));
    }

    #[test]
    fn classification() {
        let t = table(0x4100_0000);
        assert_eq!(t, 0x4100_0003);
        assert_eq!(classify(t, 0), Entry::Table(0x4100_0000));
        assert_eq!(classify(t, 3), Entry::Leaf(0x4100_0000)); // same bits are a page at level 3
        assert_eq!(classify(0, 1), Entry::Invalid);
        assert_eq!(classify(broken(t), 1), Entry::Invalid);
        assert_eq!(classify(0x4000_0001, 0), Entry::Invalid); // no level-0 blocks
        assert_eq!(classify(0x4000_0001, 3), Entry::Invalid); // reserved at level 3
    }
}
