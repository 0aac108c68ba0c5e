//! The cache-model marker protocol: how firmware tells an emulator's cache model (cachescope's
//! QEMU TCG plugin, host/cache-model) what it is doing — cache geometry, memory-attribute
//! windows, MMU state and named phases. A stable interface: any bare-metal firmware can speak it.
//!
//! Every marker is one `hint #0x7f` ([`MARKER_ENCODING`]) with x9 = command and x10..x13 =
//! arguments. HINT #0x7f is an unallocated hint, which the architecture executes as a NOP (Arm
//! ARM C6.2.122), so markers cost nothing on hardware and on QEMU without the plugin.
//!
//! Protocol version 6 (x9 = command; x10..x13 = arguments):
//!
//! | x9 | command        | x10                                  | x11              | x12          | x13                  |
//! |----|----------------|--------------------------------------|------------------|--------------|----------------------|
//! | 1  | hello          | protocol version ([`PROTOCOL_VERSION`]) | –                | –            | –                    |
//! | 2  | geometry       | level \| kind << 8 \| line << 16     | sets             | ways         | –                    |
//! | 3  | window         | VA start                             | length (bytes)   | attribute \| SH << 8 | PA start or all ones |
//! | 4  | sctlr          | SCTLR_EL1 (M bit 0, C bit 2, I bit 12)| –               | –            | –                    |
//! | 5  | phase begin    | VA of a NUL-terminated name (≤ [`PHASE_NAME_MAX`] B) | phase id | –     | –                    |
//! | 6  | phase end      | –                                    | phase id         | –            | –                    |
//! | 7  | maint begin    | VA start                             | length (bytes)   | –            | –                    |
//! | 8  | maint end      | VA start (as in its begin)           | –                | –            | –                    |
//! | 9  | sanitizer quiet| 1 = quiet from here, 0 = report again| –                | –            | –                    |
//!
//! Maintenance range (version 4): the firmware declares that it is about to maintain
//! `[VA, VA + length)` by VA (a DC CIVAC/CVAC/IVAC/CVAU/ZVA loop); at the end marker the model's
//! sanitizer reports every data-cache line of the range that received no by-VA operation in
//! between (`maintenance-gap`, e.g. a loop stepping 2 × DminLine). Ranges may nest or overlap;
//! an end names its begin by the VA. Sanitizer quiet (version 4): hazards between `quiet 1` and
//! `quiet 0` are not reported — for code that deliberately observes unmaintained data (a
//! diagnostic that peeks before its clean). Firmware speaking version 3 or older never sends them.
//!
//! Geometry kind: [`Kind`] codes (1 = instruction, 2 = data, 3 = unified). Attribute:
//! [`ModelAttr`] codes (0 = Normal write-back, 1 = Normal write-through, 2 = Normal
//! non-cacheable, 3 = Device; from version 6 MAIR's allocation hints: 4 = write-back no
//! write-allocate, 5 = write-back no read-allocate, 6 = write-back no allocate, 7 = write-back
//! transient, 8 = write-through transient; firmware of version 5 or older sending 4..8 gets
//! `UnknownAttribute`, its codes 0..3 mean what they always meant). A window re-declared over the same start replaces the earlier one;
//! length 0 removes it. Accesses outside every window are Normal write-back while SCTLR.M=1 and
//! C=1, and bypass the caches otherwise (MMU off = Device).
//!
//! Window shareability (x12 bits `[9:8]`, version 6): the mapping's [`Shareability`] in the
//! descriptor's SH encoding ([`Shareability::sh_field`]: 0b00 Non-shareable, 0b10 Outer, 0b11
//! Inner; 0b01 is refused), so the sanitizer can report `non-shareable-shared`. Before version 6
//! x12 is the attribute alone and a window is Inner Shareable (what every window meant then);
//! other x12 bits are refused.
//!
//! Window PA (x13, version 2): the physical address of the window's first byte, the window being
//! physically contiguous, so the model translates by-VA maintenance inside it before any access
//! has shown the translation; [`PA_UNKNOWN`] when not known, and for a removal. Version 1
//! firmware left x13 undefined: a decoder reads x13 only after a hello announcing version 2 or
//! later. Unused argument registers are 0.
//!
//! ```
//! use cachescope_arch::attr::Shareability;
//! use cachescope_arch::marker::{Marker, ModelAttr, PROTOCOL_VERSION};
//! let m = Marker::Window {
//!     va: 0x4000_0000,
//!     len: 4096,
//!     attr: ModelAttr::NormalNonCacheable,
//!     pa: Some(0x4000_0000),
//!     share: Shareability::Inner,
//! };
//! let regs = m.encode();
//! assert_eq!(regs, [3, 0x4000_0000, 4096, 2 | 0b11 << 8, 0x4000_0000]);
//! assert_eq!(Marker::decode(PROTOCOL_VERSION, regs), Ok(m));
//! ```

use core::fmt;

use crate::attr::Shareability;
use crate::cache::Kind;

/// Encoding of `hint #0x7f` (HINT is 0xd503201f | imm << 5): what `emit` issues and what a model
/// looks for (the one definition of the marker instruction).
pub const MARKER_ENCODING: u32 = 0xd503_2fff;
const _: () = assert!(MARKER_ENCODING == 0xd503_201f | 0x7f << 5, "the marker is HINT #0x7f");

/// Protocol version sent with [`Command::Hello`]. Version 2 added the window's PA in x13;
/// version 3 phase names up to [`PHASE_NAME_MAX`] bytes (63 before); version 4 the maintenance
/// range markers ([`Command::MaintBegin`], [`Command::MaintEnd`]); version 5 the core identity
/// register ([`core_id_value`]); version 6 the allocation-hint window attributes (codes 4..8 of
/// [`ModelAttr`]: MAIR's read-allocate, write-allocate and transient hints) and the window's
/// shareability (x12 bits `[9:8]`).
pub const PROTOCOL_VERSION: u64 = 6;

/// First version whose window marker may carry the allocation-hint attributes (codes 4..8).
pub const ALLOC_HINTS_SINCE: u64 = 6;

/// Tag in bits 63:32 of TPIDR_EL1 that marks bits 31:0 as the core's number (protocol 5).
pub const CORE_ID_TAG: u64 = 0x6373_6964 << 32;

/// The TPIDR_EL1 value a core sets, before anything a model should attribute to it, so that a
/// model with several vCPUs knows which core runs (protocol 5): [`CORE_ID_TAG`] | `core`, the
/// core numbered 0.. like the model's vCPUs (cachescope: MPIDR Aff0 | Aff1). Optional with one
/// core; firmware that uses TPIDR_EL1 otherwise leaves the tag out and gets QEMU's vCPU index.
pub const fn core_id_value(core: u32) -> u64 {
    CORE_ID_TAG | core as u64
}

/// The core number in a TPIDR_EL1 value, if it carries [`CORE_ID_TAG`].
pub const fn core_of_id_value(v: u64) -> Option<u32> {
    if v & 0xffff_ffff_0000_0000 == CORE_ID_TAG {
        Some(v as u32)
    } else {
        None
    }
}

/// Longest phase name, bytes (without the NUL), from protocol version 3.
pub const PHASE_NAME_MAX: usize = 127;

/// Oldest protocol version a decoder understands (v1: windows without a PA).
pub const OLDEST_VERSION: u64 = 1;

/// First version whose window marker carries the PA in x13.
pub const WINDOW_PA_SINCE: u64 = 2;

/// First version whose window marker carries the shareability in x12 bits `[9:8]`.
pub const WINDOW_SHARE_SINCE: u64 = 6;

/// Bit position of the shareability in x12 of [`Command::Window`] (version 6).
pub const WINDOW_SHARE_SHIFT: u32 = 8;

/// Window PA meaning "not known" (x13 of [`Command::Window`]).
pub const PA_UNKNOWN: u64 = u64::MAX;

/// Marker commands (x9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Command {
    /// Announces the protocol version.
    Hello = 1,
    /// Reports one cache's geometry.
    Geometry = 2,
    /// Declares a memory-attribute window (and, from version 2, its physical address).
    Window = 3,
    /// Reports SCTLR_EL1 after a change.
    Sctlr = 4,
    /// Starts a named phase.
    PhaseBegin = 5,
    /// Ends a phase.
    PhaseEnd = 6,
    /// Declares a range about to be maintained by VA (version 4).
    MaintBegin = 7,
    /// Ends a declared maintenance range (version 4).
    MaintEnd = 8,
    /// Suspends (x10 = 1) or resumes (x10 = 0) the sanitizer's reports (version 4).
    Quiet = 9,
}

impl TryFrom<u64> for Command {
    type Error = MarkerError;

    fn try_from(x9: u64) -> Result<Self, MarkerError> {
        Ok(match x9 {
            1 => Self::Hello,
            2 => Self::Geometry,
            3 => Self::Window,
            4 => Self::Sctlr,
            5 => Self::PhaseBegin,
            6 => Self::PhaseEnd,
            7 => Self::MaintBegin,
            8 => Self::MaintEnd,
            9 => Self::Quiet,
            c => return Err(MarkerError::UnknownCommand(c)),
        })
    }
}

/// Attribute codes of the window command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum ModelAttr {
    /// Normal write-back, read/write-allocate.
    NormalWriteBack = 0,
    /// Normal write-through.
    NormalWriteThrough = 1,
    /// Normal non-cacheable.
    NormalNonCacheable = 2,
    /// Any Device type.
    Device = 3,
    /// Normal write-back, read-allocate, no write-allocate (MAIR 0xee; protocol 6).
    NormalWriteBackNoWriteAllocate = 4,
    /// Normal write-back, write-allocate, no read-allocate (MAIR 0xdd; protocol 6).
    NormalWriteBackNoReadAllocate = 5,
    /// Normal write-back, neither read- nor write-allocate (MAIR 0xcc; protocol 6).
    NormalWriteBackNoAllocate = 6,
    /// Normal write-back transient, read/write-allocate (MAIR 0x77; protocol 6).
    NormalWriteBackTransient = 7,
    /// Normal write-through transient, read-allocate (MAIR 0x22/0x33; protocol 6).
    NormalWriteThroughTransient = 8,
}

impl ModelAttr {
    /// Whether accesses through such a window go through the caches.
    pub const fn cacheable(self) -> bool {
        !matches!(self, Self::NormalNonCacheable | Self::Device)
    }

    /// The write policy without the allocation hints: one of the four version-1 codes.
    pub const fn base(self) -> Self {
        match self {
            Self::NormalWriteBackNoWriteAllocate
            | Self::NormalWriteBackNoReadAllocate
            | Self::NormalWriteBackNoAllocate
            | Self::NormalWriteBackTransient => Self::NormalWriteBack,
            Self::NormalWriteThroughTransient => Self::NormalWriteThrough,
            a => a,
        }
    }

    /// Whether a cacheable read that misses allocates (MAIR's R hint; write-through is always
    /// read-allocate in the model).
    pub const fn read_allocate(self) -> bool {
        !matches!(self, Self::NormalWriteBackNoReadAllocate | Self::NormalWriteBackNoAllocate)
    }

    /// Whether a write-back write that misses allocates (MAIR's W hint; write-through never
    /// write-allocates in the model, MAIR 0xaa).
    pub const fn write_allocate(self) -> bool {
        !matches!(self, Self::NormalWriteBackNoWriteAllocate | Self::NormalWriteBackNoAllocate)
    }

    /// Whether lines are transient (MAIR 0b00RW / 0b01RW): filled as the set's next victim, as
    /// LDNP/STNP fills are.
    pub const fn transient(self) -> bool {
        matches!(self, Self::NormalWriteBackTransient | Self::NormalWriteThroughTransient)
    }

    /// The attribute of a write-back or write-through domain with MAIR's hints. Approximations
    /// (documented in docs/cache-model.md): a transient write-back domain is read/write-allocate
    /// whatever its R/W bits; write-through ignores R and W (read-allocate, no write-allocate).
    pub const fn with_hints(write_back: bool, read_allocate: bool, write_allocate: bool, transient: bool) -> Self {
        match (write_back, transient, read_allocate, write_allocate) {
            (false, false, _, _) => Self::NormalWriteThrough,
            (false, true, _, _) => Self::NormalWriteThroughTransient,
            (true, true, _, _) => Self::NormalWriteBackTransient,
            (true, false, true, true) => Self::NormalWriteBack,
            (true, false, true, false) => Self::NormalWriteBackNoWriteAllocate,
            (true, false, false, true) => Self::NormalWriteBackNoReadAllocate,
            (true, false, false, false) => Self::NormalWriteBackNoAllocate,
        }
    }

    /// `"wb"`, `"wt"`, `"nc"`, `"device"`, `"wb-nwa"`, `"wb-nra"`, `"wb-na"`, `"wb-tr"`, `"wt-tr"`.
    pub const fn short_name(self) -> &'static str {
        match self {
            Self::NormalWriteBack => "wb",
            Self::NormalWriteThrough => "wt",
            Self::NormalNonCacheable => "nc",
            Self::Device => "device",
            Self::NormalWriteBackNoWriteAllocate => "wb-nwa",
            Self::NormalWriteBackNoReadAllocate => "wb-nra",
            Self::NormalWriteBackNoAllocate => "wb-na",
            Self::NormalWriteBackTransient => "wb-tr",
            Self::NormalWriteThroughTransient => "wt-tr",
        }
    }
}

impl TryFrom<u64> for ModelAttr {
    type Error = MarkerError;

    fn try_from(code: u64) -> Result<Self, MarkerError> {
        Ok(match code {
            0 => Self::NormalWriteBack,
            1 => Self::NormalWriteThrough,
            2 => Self::NormalNonCacheable,
            3 => Self::Device,
            4 => Self::NormalWriteBackNoWriteAllocate,
            5 => Self::NormalWriteBackNoReadAllocate,
            6 => Self::NormalWriteBackNoAllocate,
            7 => Self::NormalWriteBackTransient,
            8 => Self::NormalWriteThroughTransient,
            a => return Err(MarkerError::UnknownAttribute(a)),
        })
    }
}

/// One marker, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Protocol version announcement.
    Hello {
        /// The firmware's protocol version.
        version: u64,
    },
    /// One cache's geometry as the firmware reads it (CCSIDR).
    Geometry {
        /// Level, 1-based.
        level: u8,
        /// I, D or unified.
        kind: Kind,
        /// Line size in bytes.
        line: u32,
        /// Number of sets.
        sets: u64,
        /// Associativity.
        ways: u64,
    },
    /// A memory-attribute window over a VA range (length 0 removes the window at `va`).
    Window {
        /// First VA.
        va: u64,
        /// Length in bytes.
        len: u64,
        /// Attribute.
        attr: ModelAttr,
        /// PA of the first byte (the window is physically contiguous), when known.
        pa: Option<u64>,
        /// The mapping's shareability (version 6; Inner for older firmware).
        share: Shareability,
    },
    /// SCTLR_EL1 after a change.
    Sctlr(u64),
    /// Start of a named phase (the name is a NUL-terminated string at `name_va`).
    PhaseBegin {
        /// VA of the name.
        name_va: u64,
        /// Phase id.
        id: u64,
    },
    /// End of a phase.
    PhaseEnd {
        /// Phase id.
        id: u64,
    },
    /// Start of by-VA maintenance of `[va, va + len)` (version 4).
    MaintBegin {
        /// First VA.
        va: u64,
        /// Length in bytes.
        len: u64,
    },
    /// End of the maintenance range that began at `va` (version 4).
    MaintEnd {
        /// First VA, as in the begin marker.
        va: u64,
    },
    /// Sanitizer reports off (`true`) or on again (`false`) (version 4).
    Quiet(bool),
}

/// Why x9..x13 are not a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerError {
    /// x9 names no command.
    UnknownCommand(u64),
    /// A geometry kind code that is not 1, 2 or 3.
    UnknownKind(u64),
    /// A window attribute code that is not 0..=3.
    UnknownAttribute(u64),
    /// A window shareability code that is the reserved 0b01 (version 6), or x12 bits set
    /// outside the attribute and the shareability.
    UnknownShareability(u64),
    /// A geometry that describes no cache.
    NotACache {
        /// Level.
        level: u64,
        /// Line size.
        line: u64,
        /// Sets.
        sets: u64,
        /// Ways.
        ways: u64,
    },
    /// A window whose PA range wraps past the end of the address space.
    PaWraps {
        /// PA start.
        pa: u64,
        /// Length.
        len: u64,
    },
}

impl fmt::Display for MarkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnknownCommand(c) => write!(f, "unknown command {c}"),
            Self::UnknownKind(k) => write!(f, "geometry: unknown cache kind {k}"),
            Self::UnknownAttribute(a) => write!(f, "window: unknown attribute {a}"),
            Self::UnknownShareability(x12) => {
                write!(f, "window: x12 {x12:#x} is not an attribute (bits 7:0) and a shareability (bits 9:8, not 0b01)")
            }
            Self::NotACache { level, line, sets, ways } => {
                write!(f, "geometry: level {level}, line {line}, sets {sets}, ways {ways} is not a cache")
            }
            Self::PaWraps { pa, len } => write!(f, "window: PA {pa:#x} + length {len:#x} is past the end of the address space"),
        }
    }
}

/// The marker protocol's geometry kind code (here, not in `cache`: the protocol knows the caches,
/// the caches do not know the protocol).
impl TryFrom<u64> for Kind {
    type Error = MarkerError;

    /// From the marker protocol's geometry kind code.
    fn try_from(code: u64) -> Result<Self, MarkerError> {
        Ok(match code {
            1 => Kind::Instruction,
            2 => Kind::Data,
            3 => Kind::Unified,
            k => return Err(MarkerError::UnknownKind(k)),
        })
    }
}

impl Marker {
    /// Decodes x9..x13 (`regs[0]` = x9). `version` is the protocol version the firmware's hello
    /// announced (0 before any hello): x13 is read only from version 2 on.
    pub fn decode(version: u64, regs: [u64; 5]) -> Result<Self, MarkerError> {
        let [x9, x10, x11, x12, x13] = regs;
        Ok(match Command::try_from(x9)? {
            Command::Hello => Marker::Hello { version: x10 },
            Command::Geometry => {
                let level = x10 & 0xff;
                let kind = Kind::try_from((x10 >> 8) & 0xff)?;
                let line = (x10 >> 16) & 0xffff_ffff;
                if !(1..=7).contains(&level) || !line.is_power_of_two() || x11 == 0 || x12 == 0 {
                    return Err(MarkerError::NotACache { level, line, sets: x11, ways: x12 });
                }
                Marker::Geometry { level: level as u8, kind, line: line as u32, sets: x11, ways: x12 }
            }
            Command::Window => {
                let (attr, share) = if version >= WINDOW_SHARE_SINCE {
                    if x12 >> (WINDOW_SHARE_SHIFT + 2) != 0 {
                        return Err(MarkerError::UnknownShareability(x12));
                    }
                    let share = Shareability::from_sh_field(x12 >> WINDOW_SHARE_SHIFT).ok_or(MarkerError::UnknownShareability(x12))?;
                    (ModelAttr::try_from(x12 & 0xff)?, share)
                } else {
                    (ModelAttr::try_from(x12)?, Shareability::Inner)
                };
                if version < ALLOC_HINTS_SINCE && attr.base() as u64 != x12 {
                    return Err(MarkerError::UnknownAttribute(x12));
                }
                let pa = (version >= WINDOW_PA_SINCE && x13 != PA_UNKNOWN && x11 > 0).then_some(x13);
                if let Some(pa) = pa {
                    if pa.checked_add(x11 - 1).is_none() {
                        return Err(MarkerError::PaWraps { pa, len: x11 });
                    }
                }
                Marker::Window { va: x10, len: x11, attr, pa, share }
            }
            Command::Sctlr => Marker::Sctlr(x10),
            Command::PhaseBegin => Marker::PhaseBegin { name_va: x10, id: x11 },
            Command::PhaseEnd => Marker::PhaseEnd { id: x11 },
            Command::MaintBegin => Marker::MaintBegin { va: x10, len: x11 },
            Command::MaintEnd => Marker::MaintEnd { va: x10 },
            Command::Quiet => Marker::Quiet(x10 != 0),
        })
    }

    /// The x9..x13 values that carry this marker (unused arguments 0). Always inlined, so that
    /// a marker around a measured window costs register moves only (no stack traffic).
    #[inline(always)]
    pub fn encode(&self) -> [u64; 5] {
        match *self {
            Marker::Hello { version } => [Command::Hello as u64, version, 0, 0, 0],
            Marker::Geometry { level, kind, line, sets, ways } => {
                [Command::Geometry as u64, level as u64 | (kind as u64) << 8 | (line as u64) << 16, sets, ways, 0]
            }
            Marker::Window { va, len, attr, pa, share } => {
                [Command::Window as u64, va, len, attr as u64 | share.sh_field() << WINDOW_SHARE_SHIFT, pa.unwrap_or(PA_UNKNOWN)]
            }
            Marker::Sctlr(v) => [Command::Sctlr as u64, v, 0, 0, 0],
            Marker::PhaseBegin { name_va, id } => [Command::PhaseBegin as u64, name_va, id, 0, 0],
            Marker::PhaseEnd { id } => [Command::PhaseEnd as u64, 0, id, 0, 0],
            Marker::MaintBegin { va, len } => [Command::MaintBegin as u64, va, len, 0, 0],
            Marker::MaintEnd { va } => [Command::MaintEnd as u64, va, 0, 0, 0],
            Marker::Quiet(on) => [Command::Quiet as u64, on as u64, 0, 0, 0],
        }
    }
}

/// Issues one marker on the CPU this runs on (a NOP without a cache model).
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
#[inline(always)]
pub fn emit(m: Marker) {
    let [x9, x10, x11, x12, x13] = m.encode();
    // SAFETY: an unallocated HINT is architecturally a NOP; the registers are only read.
    unsafe {
        core::arch::asm!(
            ".inst {marker}",
            marker = const MARKER_ENCODING,
            in("x9") x9, in("x10") x10, in("x11") x11, in("x12") x12, in("x13") x13,
            options(nostack, nomem, preserves_flags)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(version: u64, x9: u64, x10: u64, x11: u64, x12: u64, x13: u64) -> Result<Marker, MarkerError> {
        Marker::decode(version, [x9, x10, x11, x12, x13])
    }

    #[test]
    fn core_id_round_trips_and_needs_its_tag() {
        for core in [0, 1, 3, 7, u32::MAX] {
            assert_eq!(core_of_id_value(core_id_value(core)), Some(core));
        }
        assert_eq!(core_of_id_value(0), None);
        assert_eq!(core_of_id_value(0xffff_0000_4000_0000), None);
        assert_eq!(core_id_value(2), 0x6373_6964_0000_0002);
    }

    #[test]
    fn allocation_hint_attributes_from_version_6_only() {
        for code in 4..=8u64 {
            let a = ModelAttr::try_from(code).unwrap();
            // Version 6: the attribute in bits [7:0], the shareability in [9:8] (0b11 Inner).
            let inner = code | Shareability::Inner.sh_field() << WINDOW_SHARE_SHIFT;
            assert_eq!(
                parse(6, 3, 0x1000, 64, inner, PA_UNKNOWN),
                Ok(Marker::Window { va: 0x1000, len: 64, attr: a, pa: None, share: Shareability::Inner })
            );
            assert_eq!(parse(5, 3, 0x1000, 64, code, PA_UNKNOWN), Err(MarkerError::UnknownAttribute(code)), "version 5");
            assert!(a.cacheable());
            assert_eq!(
                ModelAttr::with_hints(a.base() == ModelAttr::NormalWriteBack, a.read_allocate(), a.write_allocate(), a.transient()),
                a
            );
        }
        assert_eq!(
            parse(5, 3, 0x1000, 64, 1, PA_UNKNOWN).map(|m| matches!(m, Marker::Window { attr: ModelAttr::NormalWriteThrough, .. })),
            Ok(true)
        );
        assert_eq!(parse(6, 3, 0x1000, 64, 9 | 0x300, PA_UNKNOWN), Err(MarkerError::UnknownAttribute(9)));
        let wb = ModelAttr::NormalWriteBack;
        assert!((wb.read_allocate(), wb.write_allocate(), wb.transient()) == (true, true, false));
        assert!(!ModelAttr::NormalWriteThrough.write_allocate() || ModelAttr::NormalWriteThrough.base() == ModelAttr::NormalWriteThrough);
    }

    #[test]
    fn parses_every_command() {
        assert_eq!(parse(0, 1, 2, 0, 0, 0), Ok(Marker::Hello { version: 2 }));
        assert_eq!(
            parse(2, 2, 1 | 2 << 8 | 64 << 16, 256, 2, 0),
            Ok(Marker::Geometry { level: 1, kind: Kind::Data, line: 64, sets: 256, ways: 2 })
        );
        assert_eq!(
            parse(2, 3, 0x4000_0000, 4096, 2, 0x4000_0000),
            Ok(Marker::Window {
                va: 0x4000_0000,
                len: 4096,
                attr: ModelAttr::NormalNonCacheable,
                pa: Some(0x4000_0000),
                share: Shareability::Inner
            })
        );
        assert_eq!(parse(2, 4, 0x1005, 0, 0, 0), Ok(Marker::Sctlr(0x1005)));
        assert_eq!(parse(2, 5, 0x1234, 7, 0, 0), Ok(Marker::PhaseBegin { name_va: 0x1234, id: 7 }));
        assert_eq!(parse(2, 6, 0, 7, 0, 0), Ok(Marker::PhaseEnd { id: 7 }));
    }

    #[test]
    fn encode_decode_round_trip() {
        let all = [
            Marker::Hello { version: PROTOCOL_VERSION },
            Marker::Geometry { level: 2, kind: Kind::Unified, line: 64, sets: 1024, ways: 16 },
            Marker::Window { va: 0x1000, len: 0x2000, attr: ModelAttr::Device, pa: None, share: Shareability::Outer },
            Marker::Window { va: 0x1000, len: 0x2000, attr: ModelAttr::NormalWriteThrough, pa: Some(0x8000), share: Shareability::Inner },
            Marker::Window { va: 0x1000, len: 0x2000, attr: ModelAttr::NormalWriteBack, pa: Some(0x8000), share: Shareability::Non },
            Marker::Sctlr(0x30d0_1805),
            Marker::PhaseBegin { name_va: 0xdead, id: 3 },
            Marker::PhaseEnd { id: 3 },
            Marker::MaintBegin { va: 0x4000_1000, len: 4096 },
            Marker::MaintEnd { va: 0x4000_1000 },
            Marker::Quiet(true),
            Marker::Quiet(false),
        ];
        for m in all {
            assert_eq!(Marker::decode(PROTOCOL_VERSION, m.encode()), Ok(m));
        }
    }

    #[test]
    fn window_pa_needs_version_2() {
        let window = |version, len, x13| parse(version, 3, 0x1000_4140_0000, len, 0, x13);
        let pa = |m: Result<Marker, MarkerError>| match m {
            Ok(Marker::Window { pa, .. }) => pa,
            other => panic!("not a window: {other:?}"),
        };
        assert_eq!(pa(window(2, 0x10_0000, 0x4140_0000)), Some(0x4140_0000));
        assert_eq!(pa(window(3, 0x10_0000, 0x4140_0000)), Some(0x4140_0000), "a newer firmware keeps x13");
        assert_eq!(pa(window(2, 0x10_0000, PA_UNKNOWN)), None, "all ones = unknown");
        assert_eq!(pa(window(2, 0, 0x4140_0000)), None, "a removal has no PA");
        assert_eq!(pa(window(1, 0x10_0000, 0x4140_0000)), None, "v1: x13 is garbage");
        assert_eq!(pa(window(0, 0x10_0000, 0x4140_0000)), None, "no hello yet");
        assert_eq!(pa(window(2, 0x1000, 0)), Some(0), "PA 0 is a PA");
    }

    #[test]
    fn window_shareability_needs_version_6_and_old_windows_are_inner() {
        let share = |version, x12| match parse(version, 3, 0x1000, 0x1000, x12, 0x1000) {
            Ok(Marker::Window { attr, share, .. }) => Ok((attr, share)),
            Ok(other) => panic!("not a window: {other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(share(6, 0), Ok((ModelAttr::NormalWriteBack, Shareability::Non)), "SH 0b00 = non-shareable");
        assert_eq!(share(6, 2 | 0b10 << 8), Ok((ModelAttr::NormalNonCacheable, Shareability::Outer)));
        assert_eq!(share(6, 0b11 << 8), Ok((ModelAttr::NormalWriteBack, Shareability::Inner)));
        assert_eq!(share(6, 0b01 << 8), Err(MarkerError::UnknownShareability(0x100)), "SH 0b01 is reserved");
        assert_eq!(share(6, 1 << 10), Err(MarkerError::UnknownShareability(0x400)), "bits past the SH field");
        assert_eq!(share(6, 4 | 0b11 << 8), Ok((ModelAttr::NormalWriteBackNoWriteAllocate, Shareability::Inner)), "hints and SH together");
        assert_eq!(share(6, 9 | 0b11 << 8), Err(MarkerError::UnknownAttribute(9)));
        for v in 0..6 {
            assert_eq!(share(v, 0), Ok((ModelAttr::NormalWriteBack, Shareability::Inner)), "v{v}: today's meaning");
            assert_eq!(share(v, 0b11 << 8), Err(MarkerError::UnknownAttribute(0x300)), "v{v}: x12 is the attribute alone");
        }
        assert!(std::format!("{}", MarkerError::UnknownShareability(0x100)).contains("0x100"));
    }

    #[test]
    fn refuses_nonsense() {
        assert_eq!(parse(2, 0, 0, 0, 0, 0), Err(MarkerError::UnknownCommand(0)));
        assert!(parse(2, 10, 0, 0, 0, 0).is_err());
        assert_eq!(parse(2, 2, 1 | 4 << 8 | 64 << 16, 256, 2, 0), Err(MarkerError::UnknownKind(4)));
        assert!(parse(2, 2, 1 | 2 << 8 | 48 << 16, 256, 2, 0).is_err());
        assert!(parse(2, 2, 1 | 2 << 8 | 64 << 16, 0, 2, 0).is_err());
        assert_eq!(parse(2, 3, 0, 10, 4, 0), Err(MarkerError::UnknownAttribute(4)));
        assert!(parse(2, 3, 0, 0x2000, 0, u64::MAX - 0x1000).is_err(), "PA range wraps");
        assert!(parse(2, 3, 0, 0x1000, 0, u64::MAX - 0xfff).is_ok(), "PA range ends at the top");
        assert!(std::format!("{}", MarkerError::UnknownCommand(9)).contains("unknown command 9"));
    }
}
