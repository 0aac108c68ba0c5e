//! Device drivers: everything that touches an MMIO device.

pub mod bcm2711_gpio;
pub mod pl011;
