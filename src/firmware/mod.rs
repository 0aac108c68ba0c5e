//! What firmware hands over besides the device tree, decoded without touching hardware (pure,
//! host-tested): the legacy ATAG list and the PSCI function numbers and return codes.

pub mod atags;
pub mod psci;
