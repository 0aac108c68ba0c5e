//! AArch64: boot assembly, exception vectors, trap recovery, system registers, semihosting.

pub mod cache;
pub mod cpu;
pub mod exception;
pub mod handover;
pub mod mmu;
pub mod pmu;
pub mod psci;
pub mod semihosting;
pub mod smp;
pub mod trap;

core::arch::global_asm!(include_str!("boot.s"));
core::arch::global_asm!(include_str!("exception.s"));
