//! The one error type of `mem`: every refused request says what and where, never panics.

use core::fmt;

/// Why a mapping request or an MMU operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A mapping of zero bytes.
    Empty {
        /// Its virtual address.
        va: u64,
    },
    /// An address or length that is not a multiple of the 4 KiB page.
    Unaligned {
        /// `virtual address`, `physical address` or `length`.
        what: &'static str,
        /// The offending value.
        value: u64,
    },
    /// The virtual range does not fit the translation regime's input address space.
    VaOutOfRange {
        /// Start.
        va: u64,
        /// Length.
        len: u64,
        /// First address beyond the space.
        limit: u64,
    },
    /// The physical range does not fit the output address size.
    PaOutOfRange {
        /// Start.
        pa: u64,
        /// Length.
        len: u64,
        /// First address beyond the space.
        limit: u64,
    },
    /// The virtual range overlaps an existing mapping (changing a live mapping needs
    /// break-before-make, never a second map).
    Overlap {
        /// Start of the refused range.
        va: u64,
        /// Length of the refused range.
        len: u64,
        /// Name of the mapping it overlaps.
        existing: &'static str,
    },
    /// Writable and executable at once.
    WriteExecute,
    /// Executable Device memory.
    ExecutableDevice,
    /// An alias window that is not inside the test arena.
    OutsideArena {
        /// Requested physical start.
        pa: u64,
        /// Requested length.
        len: u64,
        /// Arena start.
        arena_start: u64,
        /// Arena length.
        arena_len: u64,
    },
    /// A break-before-make range that covers only part of a block mapping.
    SplitsBlock {
        /// Address of the block entry.
        va: u64,
        /// Its lookup level.
        level: u8,
    },
    /// No entry (valid or broken) maps this address.
    NotMapped {
        /// The address.
        va: u64,
    },
    /// An entry was to be made but is still valid: making it without breaking it first would
    /// violate break-before-make.
    LiveEntry {
        /// The address.
        va: u64,
    },
    /// An entry was to be broken but is already invalid.
    AlreadyBroken {
        /// The address.
        va: u64,
    },
    /// An unmap request that is not exactly one existing mapping.
    NoSuchMapping {
        /// Start.
        va: u64,
        /// Length.
        len: u64,
    },
    /// More translation tables would be needed than the builder allows.
    TooManyTables {
        /// The limit.
        limit: usize,
    },
    /// The kernel image is not inside RAM.
    ImageOutsideRam,
    /// The CPU does not implement the 4 KiB translation granule.
    GranuleUnsupported,
    /// The MMU was asked to turn on before translation tables were built.
    NotBuilt,
    /// Cache maintenance the change needs was refused by the cache API.
    CacheMaintenance {
        /// Which maintenance.
        what: &'static str,
    },
    /// The translation registers cannot be reprogrammed while the MMU is on.
    MmuOn,
    /// The hint window was asked to hold a type that is not an allocation hint.
    NotAHint {
        /// The type asked for.
        attr: cachescope_arch::attr::MemAttr,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Empty { va } => write!(f, "empty mapping at {va:#x}"),
            Error::Unaligned { what, value } => write!(f, "{what} {value:#x} is not 4 KiB aligned"),
            Error::VaOutOfRange { va, len, limit } => {
                write!(f, "virtual range {va:#x}+{len:#x} exceeds the input address space (limit {limit:#x})")
            }
            Error::PaOutOfRange { pa, len, limit } => {
                write!(f, "physical range {pa:#x}+{len:#x} exceeds the output address size (limit {limit:#x})")
            }
            Error::Overlap { va, len, existing } => write!(f, "virtual range {va:#x}+{len:#x} overlaps the existing mapping '{existing}'"),
            Error::WriteExecute => write!(f, "writable+executable mapping refused"),
            Error::ExecutableDevice => write!(f, "executable Device mapping refused"),
            Error::OutsideArena { pa, len, arena_start, arena_len } => {
                write!(f, "alias window {pa:#x}+{len:#x} is outside the test arena {arena_start:#x}+{arena_len:#x}")
            }
            Error::SplitsBlock { va, level } => write!(f, "range splits the level {level} block mapping at {va:#x}"),
            Error::NotMapped { va } => write!(f, "{va:#x} is not mapped"),
            Error::LiveEntry { va } => write!(f, "entry for {va:#x} is live: break it before making a new one"),
            Error::AlreadyBroken { va } => write!(f, "entry for {va:#x} is already invalid"),
            Error::NoSuchMapping { va, len } => write!(f, "{va:#x}+{len:#x} is not exactly one existing mapping"),
            Error::TooManyTables { limit } => write!(f, "more than {limit} translation tables needed"),
            Error::ImageOutsideRam => write!(f, "the kernel image is not inside RAM"),
            Error::GranuleUnsupported => write!(f, "the CPU does not implement the 4 KiB granule"),
            Error::NotBuilt => write!(f, "translation tables not built: call mem::mmu::enable_with_aliases first"),
            Error::MmuOn => {
                write!(f, "translation registers cannot be reprogrammed while the MMU is on (break-before-make the tables instead)")
            }
            Error::CacheMaintenance { what } => write!(f, "cache maintenance refused: {what}"),
            Error::NotAHint { attr } => write!(f, "{}", cachescope_arch::descriptor::NotAHint(attr)),
        }
    }
}

impl From<cachescope_arch::attr::Refused> for Error {
    fn from(r: cachescope_arch::attr::Refused) -> Self {
        match r {
            cachescope_arch::attr::Refused::WriteExecute => Error::WriteExecute,
            cachescope_arch::attr::Refused::ExecutableDevice => Error::ExecutableDevice,
        }
    }
}
