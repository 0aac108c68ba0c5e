//! Marker protocol v1, the plugin's side (the kernel's side and the table are in the kernel's
//! `src/model.rs`): x9 = command, x10..x12 = arguments of `hint #0x7f`.

use cachescope::model::{Command, ModelAttr, PROTOCOL_VERSION};

use crate::model::Attr;

/// Protocol version this plugin speaks (the kernel's `model::PROTOCOL_VERSION`).
pub const VERSION: u64 = PROTOCOL_VERSION;

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

/// Decodes a marker from x9..x12.
pub fn parse(x9: u64, x10: u64, x11: u64, x12: u64) -> Result<Marker, BadMarker> {
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
            Ok(Marker::Window { va: x10, len: x11, attr })
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
        assert_eq!(parse(1, 1, 0, 0), Ok(Marker::Hello { version: 1 }));
        assert_eq!(
            parse(2, 1 | 2 << 8 | 64 << 16, 256, 2),
            Ok(Marker::Geometry { level: 1, kind: Kind::Data, line: 64, sets: 256, ways: 2 })
        );
        assert_eq!(parse(3, 0x4000_0000, 4096, 2), Ok(Marker::Window { va: 0x4000_0000, len: 4096, attr: Attr::NonCacheable }));
        assert_eq!(parse(4, 0x1005, 0, 0), Ok(Marker::Sctlr(0x1005)));
        assert_eq!(parse(5, 0x1234, 7, 0), Ok(Marker::PhaseBegin { name_va: 0x1234, id: 7 }));
        assert_eq!(parse(6, 0, 7, 0), Ok(Marker::PhaseEnd { id: 7 }));
    }

    #[test]
    fn refuses_nonsense() {
        assert!(parse(0, 0, 0, 0).is_err());
        assert!(parse(9, 0, 0, 0).is_err());
        assert!(parse(2, 1 | 4 << 8 | 64 << 16, 256, 2).is_err());
        assert!(parse(2, 1 | 2 << 8 | 48 << 16, 256, 2).is_err());
        assert!(parse(2, 1 | 2 << 8 | 64 << 16, 0, 2).is_err());
        assert!(parse(3, 0, 10, 4).is_err());
    }
}
