//! Device drivers: everything that touches an MMIO device, and the console (the kernel's one
//! UART, behind a lock, with the KTAP indentation).

pub mod bcm2711_gpio;
pub mod console;
pub mod pl011;
