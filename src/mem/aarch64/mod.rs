//! The AArch64 (VMSAv8-64) twin of `mem`: descriptor format, translation tables and the MMU
//! control registers as values. Pure: builds and is unit-tested on the host too.

pub use cachescope_arch::descriptor;
pub mod regs;
pub mod table;
