//! Marker protocol, the plugin's side: the protocol itself (commands, codes, decoding, version)
//! is `cachescope_arch::marker`, one implementation shared with the kernel and any other
//! firmware that speaks it; this module only names what the plugin uses.

pub use cachescope_arch::cache::Kind;
pub use cachescope_arch::marker::{Marker, MarkerError, OLDEST_VERSION as OLDEST, PROTOCOL_VERSION as VERSION};

/// Decodes a marker from x9..x13. `version` is the protocol version the kernel's hello
/// announced (0 before any hello): x13 is read only from version 2 on.
pub fn parse(version: u64, x: [u64; 5]) -> Result<Marker, MarkerError> {
    Marker::decode(version, x)
}
