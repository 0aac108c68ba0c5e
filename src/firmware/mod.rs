//! What firmware hands over, decoded without touching hardware (pure, host-tested): the
//! flattened device tree, the legacy ATAG list, the command line and the PSCI function numbers
//! and return codes.

pub mod atags;
pub mod cmdline;
pub mod fdt;
pub mod psci;
