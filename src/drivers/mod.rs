//! Device drivers: everything that touches an MMIO device.

pub mod pl011;
