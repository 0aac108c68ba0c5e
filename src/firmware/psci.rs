//! PSCI (Arm DEN 0022) function numbers, return codes and conduits. The calls themselves are in
//! `arch::psci`; this part is pure.

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering};

/// PSCI_VERSION (SMC32).
pub const VERSION: u32 = 0x8400_0000;
/// SYSTEM_OFF (SMC32).
pub const SYSTEM_OFF: u32 = 0x8400_0008;
/// CPU_ON (SMC64): target MPIDR, entry point, context id (arrives in the new core's x0).
pub const CPU_ON_64: u32 = 0xc400_0003;
/// CPU_OFF (SMC32): powers the calling core down; returns only on failure (DENIED).
pub const CPU_OFF: u32 = 0x8400_0002;

/// How PSCI calls reach firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    /// `smc #0` (firmware at EL3, e.g. the Pi 5's BL31).
    Smc,
    /// `hvc #0` (a hypervisor, or QEMU's built-in PSCI when the guest starts at EL1).
    Hvc,
}

impl Conduit {
    /// The conduit named by a device tree `/psci` node's `method` property.
    pub fn from_method(method: &str) -> Option<Self> {
        match method {
            "smc" => Some(Self::Smc),
            "hvc" => Some(Self::Hvc),
            _ => None,
        }
    }

    /// The method's name as in the device tree.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smc => "smc",
            Self::Hvc => "hvc",
        }
    }
}

/// A place to keep the conduit a board learned at boot (`None` = no PSCI).
pub struct ConduitCell(AtomicU8);

impl ConduitCell {
    /// No PSCI until [`set`](Self::set).
    pub const fn new() -> Self {
        Self(AtomicU8::new(0))
    }

    /// Records the conduit (or its absence).
    pub fn set(&self, c: Option<Conduit>) {
        self.0.store(
            match c {
                None => 0,
                Some(Conduit::Smc) => 1,
                Some(Conduit::Hvc) => 2,
            },
            Ordering::Relaxed,
        );
    }

    /// The recorded conduit.
    pub fn get(&self) -> Option<Conduit> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(Conduit::Smc),
            2 => Some(Conduit::Hvc),
            _ => None,
        }
    }
}

impl Default for ConduitCell {
    fn default() -> Self {
        Self::new()
    }
}

/// A PSCI error return (DEN 0022 table 5.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// -1 NOT_SUPPORTED.
    NotSupported,
    /// -2 INVALID_PARAMETERS.
    InvalidParameters,
    /// -3 DENIED.
    Denied,
    /// -4 ALREADY_ON.
    AlreadyOn,
    /// -5 ON_PENDING.
    OnPending,
    /// -6 INTERNAL_FAILURE.
    InternalFailure,
    /// -7 NOT_PRESENT.
    NotPresent,
    /// -8 DISABLED.
    Disabled,
    /// -9 INVALID_ADDRESS.
    InvalidAddress,
    /// Any other negative value.
    Other(i32),
}

/// Decodes a PSCI return value: non-negative is success (the value), negative an error.
pub fn decode(ret: u64) -> Result<u32, Error> {
    let r = ret as i32;
    if r >= 0 {
        return Ok(r as u32);
    }
    Err(match r {
        -1 => Error::NotSupported,
        -2 => Error::InvalidParameters,
        -3 => Error::Denied,
        -4 => Error::AlreadyOn,
        -5 => Error::OnPending,
        -6 => Error::InternalFailure,
        -7 => Error::NotPresent,
        -8 => Error::Disabled,
        -9 => Error::InvalidAddress,
        other => Error::Other(other),
    })
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSupported => f.write_str("PSCI NOT_SUPPORTED"),
            Self::InvalidParameters => f.write_str("PSCI INVALID_PARAMETERS"),
            Self::Denied => f.write_str("PSCI DENIED"),
            Self::AlreadyOn => f.write_str("PSCI ALREADY_ON"),
            Self::OnPending => f.write_str("PSCI ON_PENDING"),
            Self::InternalFailure => f.write_str("PSCI INTERNAL_FAILURE"),
            Self::NotPresent => f.write_str("PSCI NOT_PRESENT"),
            Self::Disabled => f.write_str("PSCI DISABLED"),
            Self::InvalidAddress => f.write_str("PSCI INVALID_ADDRESS"),
            Self::Other(v) => write!(f, "PSCI error {v}"),
        }
    }
}

/// The conduit named by the device tree's `/psci` node (`method = "smc"` or `"hvc"`), if any.
pub fn conduit_from_dtb(fdt: &super::fdt::Fdt<'_>) -> Option<Conduit> {
    fdt.find("/psci")?.prop_str("method").and_then(Conduit::from_method)
}

/// Major and minor version from a PSCI_VERSION return.
pub const fn version(v: u32) -> (u16, u16) {
    ((v >> 16) as u16, v as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns() {
        assert_eq!(decode(0), Ok(0));
        assert_eq!(decode(0x0001_0001), Ok(0x0001_0001));
        assert_eq!(decode(u64::MAX), Err(Error::NotSupported)); // -1 sign-extended in x0
        assert_eq!(decode((-4i64) as u64), Err(Error::AlreadyOn));
        assert_eq!(decode(0xffff_fff7), Err(Error::InvalidAddress)); // -9 as a 32-bit value
        assert_eq!(decode((-42i64) as u64), Err(Error::Other(-42)));
        assert_eq!(version(0x0001_0001), (1, 1));
    }

    #[test]
    fn conduit_cell() {
        let c = ConduitCell::new();
        assert_eq!(c.get(), None);
        c.set(Some(Conduit::Hvc));
        assert_eq!(c.get(), Some(Conduit::Hvc));
        c.set(Some(Conduit::Smc));
        assert_eq!(c.get(), Some(Conduit::Smc));
        c.set(None);
        assert_eq!(c.get(), None);
    }

    #[test]
    fn conduits() {
        assert_eq!(Conduit::from_method("smc"), Some(Conduit::Smc));
        assert_eq!(Conduit::from_method("hvc").map(Conduit::name), Some("hvc"));
        assert_eq!(Conduit::from_method("spin-table"), None);
    }
}
