//! Architecture code. Only AArch64 exists; everything here touches the CPU directly.

#[cfg(target_arch = "aarch64")]
#[path = "aarch64/mod.rs"]
mod aarch64;
#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
