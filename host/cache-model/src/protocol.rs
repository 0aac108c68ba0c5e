//! Marker protocol v2, the plugin's side (the kernel's side and the table are in the kernel's
//! `src/model.rs`): x9 = command, x10..x13 = arguments of `hint #0x7f`.
//!
//! Version 2 added x13 = the window's PA. A version 1 kernel leaves x13 undefined, so x13 is read
//! only once the kernel's hello announced version 2 or later; before that (or with version 1)
//! every window's PA is unknown and the plugin learns it from accesses, as with version 1.

use cachescope::model::{Command, ModelAttr, PA_UNKNOWN, PROTOCOL_VERSION};

use crate::model::Attr;

/// Protocol version this plugin speaks (the kernel's `model::PROTOCOL_VERSION`).
pub const VERSION: u64 = PROTOCOL_VERSION;

/// Oldest kernel protocol version the plugin understands (v1: windows without a PA).
pub const OLDEST: u64 = 1;

/// First version whose window marker carries the PA in x13.
const WINDOW_PA_SINCE: u64 = 2;

const HELLO: u64 = Command::Hello as u64;
const GEOMETRY: u64 = Command::Geometry as u64;
const WINDOW: u64 = Command::Window as u64;
const SCTLR: u64 = Command::Sctlr as u64;
const PHASE_BEGIN: u64 = Command::PhaseBegin as u64;
const PHASE_END: u64 = Command::PhaseEnd as u64;

/// The model's attribute for a window marker's attribute code.
fn attr(code: u64) -> Option<Attr> {
    const WB: u64 = ModelAttr::NormalWriteBack as u64;
    const WT: u64 = ModelAttr::NormalWriteThrough as u64;
    const NC: u64 = ModelAttr::NormalNonCacheable as u64;
    const DEV: u64 = ModelAttr::Device as u64;
    match code {
        WB => Some(Attr::WriteBack),
        WT => Some(Attr::WriteThrough),
        NC => Some(Attr::NonCacheable),
        DEV => Some(Attr::Device),
        _ => None,
    }
}

/// Cache kind of a geometry marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Instruction cache.
    Instruction,
    /// Data cache.
    Data,
    /// Unified cache.
    Unified,
}

/// One decoded marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Protocol version announcement.
    Hello {
        /// The kernel's protocol version.
        version: u64,
    },
    /// One cache's geometry as the guest reads it (CCSIDR).
    Geometry {
        /// Level, 1-based.
        level: u32,
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
        attr: Attr,
        /// PA of the first byte (the window is physically contiguous), when the kernel told it.
        pa: Option<u64>,
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
}

/// Why a marker was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadMarker(pub String);

/// Decodes a marker from x9..x13. `version` is the protocol version the kernel's hello
/// announced (0 before any hello): x13 is read only from version 2 on.
pub fn parse(version: u64, x9: u64, x10: u64, x11: u64, x12: u64, x13: u64) -> Result<Marker, BadMarker> {
    match x9 {
        HELLO => Ok(Marker::Hello { version: x10 }),
        GEOMETRY => {
            let level = (x10 & 0xff) as u32;
            let kind = match (x10 >> 8) & 0xff {
                1 => Kind::Instruction,
                2 => Kind::Data,
                3 => Kind::Unified,
                k => return Err(BadMarker(format!("geometry: unknown cache kind {k}"))),
            };
            let line = (x10 >> 16) as u32;
            if !(1..=7).contains(&level) || !line.is_power_of_two() || x11 == 0 || x12 == 0 {
                return Err(BadMarker(format!("geometry: level {level}, line {line}, sets {x11}, ways {x12} is not a cache")));
            }
            Ok(Marker::Geometry { level, kind, line, sets: x11, ways: x12 })
        }
        WINDOW => {
            let attr = attr(x12).ok_or_else(|| BadMarker(format!("window: unknown attribute {x12}")))?;
            let pa = (version >= WINDOW_PA_SINCE && x13 != PA_UNKNOWN && x11 > 0).then_some(x13);
            if let Some(pa) = pa {
                if pa.checked_add(x11 - 1).is_none() {
                    return Err(BadMarker(format!("window: PA {pa:#x} + length {x11:#x} is past the end of the address space")));
                }
            }
            Ok(Marker::Window { va: x10, len: x11, attr, pa })
        }
        SCTLR => Ok(Marker::Sctlr(x10)),
        PHASE_BEGIN => Ok(Marker::PhaseBegin { name_va: x10, id: x11 }),
        PHASE_END => Ok(Marker::PhaseEnd { id: x11 }),
        c => Err(BadMarker(format!("unknown command {c}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_command() {
        assert_eq!(parse(0, 1, 2, 0, 0, 0), Ok(Marker::Hello { version: 2 }));
        assert_eq!(
            parse(2, 2, 1 | 2 << 8 | 64 << 16, 256, 2, 0),
            Ok(Marker::Geometry { level: 1, kind: Kind::Data, line: 64, sets: 256, ways: 2 })
        );
        assert_eq!(
            parse(2, 3, 0x4000_0000, 4096, 2, 0x4000_0000),
            Ok(Marker::Window { va: 0x4000_0000, len: 4096, attr: Attr::NonCacheable, pa: Some(0x4000_0000) })
        );
        assert_eq!(parse(2, 4, 0x1005, 0, 0, 0), Ok(Marker::Sctlr(0x1005)));
        assert_eq!(parse(2, 5, 0x1234, 7, 0, 0), Ok(Marker::PhaseBegin { name_va: 0x1234, id: 7 }));
        assert_eq!(parse(2, 6, 0, 7, 0, 0), Ok(Marker::PhaseEnd { id: 7 }));
    }

    #[test]
    fn window_pa_needs_version_2() {
        let window = |version, len, x13| parse(version, 3, 0x1000_4140_0000, len, 0, x13);
        let pa = |m: Result<Marker, BadMarker>| match m {
            Ok(Marker::Window { pa, .. }) => pa,
            other => panic!("not a window: {other:?}"),
        };
        assert_eq!(pa(window(2, 0x10_0000, 0x4140_0000)), Some(0x4140_0000));
        assert_eq!(pa(window(3, 0x10_0000, 0x4140_0000)), Some(0x4140_0000), "a newer kernel keeps x13");
        assert_eq!(pa(window(2, 0x10_0000, PA_UNKNOWN)), None, "all ones = unknown");
        assert_eq!(pa(window(2, 0, 0x4140_0000)), None, "a removal has no PA");
        assert_eq!(pa(window(1, 0x10_0000, 0x4140_0000)), None, "v1: x13 is garbage");
        assert_eq!(pa(window(0, 0x10_0000, 0x4140_0000)), None, "no hello yet");
        assert_eq!(pa(window(2, 0x1000, 0)), Some(0), "PA 0 is a PA");
    }

    #[test]
    fn refuses_nonsense() {
        assert!(parse(2, 0, 0, 0, 0, 0).is_err());
        assert!(parse(2, 9, 0, 0, 0, 0).is_err());
        assert!(parse(2, 2, 1 | 4 << 8 | 64 << 16, 256, 2, 0).is_err());
        assert!(parse(2, 2, 1 | 2 << 8 | 48 << 16, 256, 2, 0).is_err());
        assert!(parse(2, 2, 1 | 2 << 8 | 64 << 16, 0, 2, 0).is_err());
        assert!(parse(2, 3, 0, 10, 4, 0).is_err());
        assert!(parse(2, 3, 0, 0x2000, 0, u64::MAX - 0x1000).is_err(), "PA range wraps");
        assert!(parse(2, 3, 0, 0x1000, 0, u64::MAX - 0xfff).is_ok(), "PA range ends at the top");
    }
}
