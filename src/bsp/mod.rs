//! Board support: exactly one board is compiled in, chosen by cargo feature
//! (`qemu-virt` by default, `rpi4`, `rpi5`). Generic code only calls what this module exports.

#[cfg(feature = "rpi4")]
#[path = "rpi4.rs"]
mod board;

#[cfg(all(feature = "rpi5", not(feature = "rpi4")))]
#[path = "rpi5.rs"]
mod board;

#[cfg(not(any(feature = "rpi4", feature = "rpi5")))]
#[path = "qemu_virt.rs"]
mod board;

pub use board::*;
