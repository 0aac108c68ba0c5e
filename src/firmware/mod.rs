//! What firmware hands over, decoded without touching hardware (pure, host-tested): the
//! flattened device tree, the legacy ATAG list and the PSCI function numbers and return codes.

pub mod atags;
pub mod fdt;
pub mod psci;
