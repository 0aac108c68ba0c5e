//! Arch-neutral memory attributes: an ordered memory type ([`MemAttr`]) plus orthogonal flags
//! (access, execute, shareability), with named composites for code and data. The AArch64
//! descriptor bits and MAIR bytes are derived from these in `mem::aarch64`.

use core::fmt;

use crate::marker::ModelAttr;

/// Memory type, ordered from the strictest (Device-nGnRnE) to the most relaxed (Normal
/// write-back): `a < b` means `a` allows fewer optimisations than `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemAttr {
    /// Device, non-Gathering, non-Reordering, no Early write acknowledgement (strongly ordered).
    DeviceNGnRnE,
    /// Device, non-Gathering, non-Reordering, Early write acknowledgement (typical MMIO).
    DeviceNGnRE,
    /// Device, Gathering, Reordering, Early write acknowledgement (e.g. frame buffers).
    DeviceGRE,
    /// Normal memory, inner and outer non-cacheable.
    NormalNonCacheable,
    /// Normal memory, inner and outer write-through, read-allocate.
    NormalWriteThrough,
    /// Normal memory, inner and outer write-through **transient**, read-allocate (MAIR 0x22):
    /// lines it fills are expected not to be reused. A [hint type](Self::HINTS).
    NormalWriteThroughTransient,
    /// Normal memory, inner and outer write-back, read-allocate, **no write-allocate** (MAIR
    /// 0xee): a write that misses does not fill a line. A [hint type](Self::HINTS).
    NormalWriteBackNoWriteAllocate,
    /// Normal memory, inner and outer write-back **transient**, read- and write-allocate (MAIR
    /// 0x77). A [hint type](Self::HINTS).
    NormalWriteBackTransient,
    /// Normal memory, inner and outer write-back, read- and write-allocate.
    NormalWriteBack,
}

impl MemAttr {
    /// Every memory type, in the order of the alias windows (cacheable first, then Device).
    pub const ALL: [MemAttr; 6] = [
        MemAttr::NormalWriteBack,
        MemAttr::NormalWriteThrough,
        MemAttr::NormalNonCacheable,
        MemAttr::DeviceNGnRnE,
        MemAttr::DeviceNGnRE,
        MemAttr::DeviceGRE,
    ];

    /// The allocation-hint types (MAIR's transient and no-write-allocate encodings). The kernel
    /// maps them through one alias window whose MAIR slot is reprogrammed for the type in use
    /// (`mem::mmu::select_hint`): eight MAIR slots hold the six [`ALL`](Self::ALL) types and
    /// not three more.
    pub const HINTS: [MemAttr; 3] =
        [MemAttr::NormalWriteBackNoWriteAllocate, MemAttr::NormalWriteBackTransient, MemAttr::NormalWriteThroughTransient];

    /// True for the three [`HINTS`](Self::HINTS) types.
    pub const fn is_hint(self) -> bool {
        matches!(self, MemAttr::NormalWriteBackNoWriteAllocate | MemAttr::NormalWriteBackTransient | MemAttr::NormalWriteThroughTransient)
    }

    /// Stable name as it appears in records and tables (`normal-wb`, …, `device-gre`,
    /// `normal-wb-nwa`, `normal-wb-transient`, `normal-wt-transient`).
    pub const fn name(self) -> &'static str {
        match self {
            MemAttr::NormalWriteBack => "normal-wb",
            MemAttr::NormalWriteThrough => "normal-wt",
            MemAttr::NormalNonCacheable => "normal-nc",
            MemAttr::DeviceNGnRnE => "device-ngnrne",
            MemAttr::DeviceNGnRE => "device-ngnre",
            MemAttr::DeviceGRE => "device-gre",
            MemAttr::NormalWriteBackNoWriteAllocate => "normal-wb-nwa",
            MemAttr::NormalWriteBackTransient => "normal-wb-transient",
            MemAttr::NormalWriteThroughTransient => "normal-wt-transient",
        }
    }

    /// The memory type with this [`name`](Self::name) (the six window types and the hints).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().chain(Self::HINTS).find(|a| a.name() == name)
    }

    /// True for the three Device types.
    pub const fn is_device(self) -> bool {
        matches!(self, MemAttr::DeviceNGnRnE | MemAttr::DeviceNGnRE | MemAttr::DeviceGRE)
    }

    /// True when data accesses may allocate in the caches (write-back or write-through, with
    /// or without allocation hints).
    pub const fn is_cacheable(self) -> bool {
        matches!(self, MemAttr::NormalWriteBack | MemAttr::NormalWriteThrough) || self.is_hint()
    }

    /// Human description of the cache policy.
    pub const fn cacheability(self) -> &'static str {
        match self {
            MemAttr::NormalWriteBack => "write-back, read+write-allocate",
            MemAttr::NormalWriteThrough => "write-through, read-allocate",
            MemAttr::NormalWriteThroughTransient => "write-through transient, read-allocate",
            MemAttr::NormalWriteBackNoWriteAllocate => "write-back, read-allocate, no write-allocate",
            MemAttr::NormalWriteBackTransient => "write-back transient, read+write-allocate",
            MemAttr::NormalNonCacheable => "non-cacheable",
            MemAttr::DeviceNGnRnE | MemAttr::DeviceNGnRE | MemAttr::DeviceGRE => "device (never cached)",
        }
    }

    /// The attribute code of the cache-model `window` marker.
    pub const fn model_attr(self) -> ModelAttr {
        match self {
            MemAttr::NormalWriteBack => ModelAttr::NormalWriteBack,
            MemAttr::NormalWriteThrough => ModelAttr::NormalWriteThrough,
            MemAttr::NormalWriteThroughTransient => ModelAttr::NormalWriteThroughTransient,
            MemAttr::NormalWriteBackNoWriteAllocate => ModelAttr::NormalWriteBackNoWriteAllocate,
            MemAttr::NormalWriteBackTransient => ModelAttr::NormalWriteBackTransient,
            MemAttr::NormalNonCacheable => ModelAttr::NormalNonCacheable,
            MemAttr::DeviceNGnRnE | MemAttr::DeviceNGnRE | MemAttr::DeviceGRE => ModelAttr::Device,
        }
    }
}

impl fmt::Display for MemAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Shareability domain of a mapping (ignored by the hardware for Device memory, which is
/// always treated as Outer Shareable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shareability {
    /// Non-shareable.
    Non,
    /// Inner Shareable (all cores of the system in practice).
    Inner,
    /// Outer Shareable.
    Outer,
}

impl Shareability {
    /// Name as used in records: `non`, `inner`, `outer`.
    pub const fn name(self) -> &'static str {
        match self {
            Shareability::Non => "non",
            Shareability::Inner => "inner",
            Shareability::Outer => "outer",
        }
    }

    /// The encoding of a stage 1 descriptor's SH field, bits `[9:8]` (0b00 Non-shareable,
    /// 0b10 Outer Shareable, 0b11 Inner Shareable, 0b01 reserved), which is also the marker
    /// protocol's window shareability code (version 6, [`crate::marker`]).
    pub const fn sh_field(self) -> u64 {
        match self {
            Shareability::Non => 0b00,
            Shareability::Outer => 0b10,
            Shareability::Inner => 0b11,
        }
    }

    /// The shareability an SH field encodes; `None` for the reserved 0b01 (and values past 2 bits).
    pub const fn from_sh_field(sh: u64) -> Option<Self> {
        match sh {
            0b00 => Some(Shareability::Non),
            0b10 => Some(Shareability::Outer),
            0b11 => Some(Shareability::Inner),
            _ => None,
        }
    }
}

/// Data access permission at EL1 (EL0 never has access to the kernel's mappings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read-only.
    ReadOnly,
    /// Read and write.
    ReadWrite,
}

/// The full attributes of a mapping: memory type plus orthogonal flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// Memory type.
    pub mem: MemAttr,
    /// Data access permission.
    pub access: Access,
    /// Instruction fetches allowed (at EL1; EL0 is always execute-never).
    pub executable: bool,
    /// Shareability.
    pub share: Shareability,
}

impl Attributes {
    /// Kernel code: Normal WB, read-only, executable, inner shareable.
    pub const CODE: Self = Self { mem: MemAttr::NormalWriteBack, access: Access::ReadOnly, executable: true, share: Shareability::Inner };
    /// Read-only data: Normal WB, read-only, execute-never.
    pub const RO_DATA: Self =
        Self { mem: MemAttr::NormalWriteBack, access: Access::ReadOnly, executable: false, share: Shareability::Inner };
    /// Read-write data: Normal WB, read-write, execute-never.
    pub const RW_DATA: Self =
        Self { mem: MemAttr::NormalWriteBack, access: Access::ReadWrite, executable: false, share: Shareability::Inner };
    /// MMIO: Device-nGnRE, read-write, execute-never.
    pub const MMIO: Self = Self::data(MemAttr::DeviceNGnRE);

    /// Read-write, execute-never, inner-shareable data of the given memory type (the attributes
    /// of every alias window).
    pub const fn data(mem: MemAttr) -> Self {
        Self { mem, access: Access::ReadWrite, executable: false, share: Shareability::Inner }
    }

    /// The same attributes with another memory type.
    pub const fn with_mem(self, mem: MemAttr) -> Self {
        Self { mem, ..self }
    }

    /// Refuses combinations no mapping may have: writable and executable at once, and
    /// executable Device memory (speculative instruction fetches would touch devices).
    pub const fn validate(&self) -> Result<(), Refused> {
        if self.executable && matches!(self.access, Access::ReadWrite) {
            return Err(Refused::WriteExecute);
        }
        if self.executable && self.mem.is_device() {
            return Err(Refused::ExecutableDevice);
        }
        Ok(())
    }
}

/// Attribute combinations no mapping may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Writable and executable at once.
    WriteExecute,
    /// Executable Device memory.
    ExecutableDevice,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refused::WriteExecute => "writable and executable at once",
            Refused::ExecutableDevice => "executable Device memory (speculative fetches would touch devices)",
        })
    }
}

impl fmt::Display for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let access = match self.access {
            Access::ReadOnly => "RO",
            Access::ReadWrite => "RW",
        };
        let x = if self.executable { "X" } else { "XN" };
        write!(f, "{} {access} {x} {}-shareable", self.mem, self.share.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for a in MemAttr::ALL {
            assert_eq!(MemAttr::from_name(a.name()), Some(a));
        }
        assert_eq!(MemAttr::from_name("normal"), None);
        let mut names: std::vec::Vec<_> = MemAttr::ALL.iter().chain(&MemAttr::HINTS).map(|a| a.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 9);
        for h in MemAttr::HINTS {
            assert_eq!(MemAttr::from_name(h.name()), Some(h));
            assert!(h.is_hint() && h.is_cacheable() && !h.is_device());
            assert!(!MemAttr::ALL.contains(&h));
        }
    }

    #[test]
    fn ordering_is_strict_to_relaxed() {
        assert!(MemAttr::DeviceNGnRnE < MemAttr::DeviceNGnRE);
        assert!(MemAttr::DeviceGRE < MemAttr::NormalNonCacheable);
        assert!(MemAttr::NormalNonCacheable < MemAttr::NormalWriteBack);
        assert_eq!(MemAttr::ALL.iter().filter(|a| a.is_device()).count(), 3);
        assert_eq!(MemAttr::ALL.iter().filter(|a| a.is_cacheable()).count(), 2);
        assert!(MemAttr::NormalWriteThrough < MemAttr::NormalWriteThroughTransient);
        assert!(MemAttr::NormalWriteBackTransient < MemAttr::NormalWriteBack);
    }

    #[test]
    fn hints_reach_the_model_with_their_hints() {
        let m = |a: MemAttr| a.model_attr();
        assert!(!m(MemAttr::NormalWriteBackNoWriteAllocate).write_allocate());
        assert!(m(MemAttr::NormalWriteBackNoWriteAllocate).read_allocate());
        assert!(m(MemAttr::NormalWriteBackTransient).transient());
        assert_eq!(m(MemAttr::NormalWriteBackTransient).base(), ModelAttr::NormalWriteBack);
        assert!(m(MemAttr::NormalWriteThroughTransient).transient());
        assert_eq!(m(MemAttr::NormalWriteThroughTransient).base(), ModelAttr::NormalWriteThrough);
    }

    #[test]
    fn unsafe_combinations_refused() {
        let wx = Attributes { executable: true, ..Attributes::RW_DATA };
        assert_eq!(wx.validate(), Err(Refused::WriteExecute));
        let xdev = Attributes { executable: true, access: Access::ReadOnly, ..Attributes::MMIO };
        assert_eq!(xdev.validate(), Err(Refused::ExecutableDevice));
        for ok in [Attributes::CODE, Attributes::RO_DATA, Attributes::RW_DATA, Attributes::MMIO] {
            assert_eq!(ok.validate(), Ok(()), "{ok}");
        }
        for a in MemAttr::ALL.into_iter().chain(MemAttr::HINTS) {
            assert_eq!(Attributes::data(a).validate(), Ok(()));
        }
    }

    #[test]
    fn display() {
        assert_eq!(std::format!("{}", Attributes::CODE), "normal-wb RO X inner-shareable");
        assert_eq!(std::format!("{}", Attributes::MMIO), "device-ngnre RW XN inner-shareable");
    }
}
