//! cachescope: a bare-metal AArch64 kernel library that discovers, exercises and reports cache
//! and memory-attribute behaviour, with a KTAP test harness and machine-readable records.
//!
//! Layers: `arch` (AArch64 instructions and registers, private: generic code names it through
//! the facade `cpu`), `bsp` (one board), `drivers` (MMIO devices), `smp` (the multicore
//! runtime), and generic logic (`harness`, `exception`, `cpuid`, …); the rule is below
//! (`layering`). Pure modules build for the host too: `cargo host-test` runs their unit tests.

#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

extern crate alloc;

pub mod bench;
pub mod boot_info;
pub mod cache;
pub use cachescope_arch::{cpuid, exception};
pub mod firmware;
pub mod harness;
pub mod mem;
pub mod model_markers;
pub mod record;
pub mod smp;

#[cfg(target_os = "none")]
mod arch;
#[cfg(target_os = "none")]
pub mod bsp;
#[cfg(target_os = "none")]
pub mod cpu;
/// The console (a driver: `drivers::console`), by its short name: the macros use `$crate::console`.
pub use drivers::console;
pub mod drivers;
#[cfg(target_os = "none")]
mod panic;
#[cfg(target_os = "none")]
pub mod suites;

/// Defines a kernel binary's entry: `kernel_entry` (called by boot.s) initialises the board and
/// runs the given `harness::KernelSpec`.
#[macro_export]
macro_rules! kernel_main {
    ($spec:expr) => {
        #[no_mangle]
        extern "C" fn kernel_entry(x0: usize, entry_el: u64) -> ! {
            let boot = $crate::boot_info::init(x0, entry_el);
            $crate::harness::run_kernel(&boot, &$spec)
        }
    };
}

/// The layering rule, checked on the sources: a module names only layers below its own (every
/// path into the crate outside test items: `crate::`, `$crate::`, grouped `use crate::{…}`,
/// `super::`, exported macros). Layers, bottom up: drivers, firmware, console, the library's
/// re-exports (exception, cpuid) → arch and its facade cpu, record (printing a record on the
/// console) → model_markers → bsp → boot_info, panic →
/// smp (the multicore runtime) → harness → cache → mem → bench → suites. Above boot_info the
/// processor is named only through `cpu`, never `arch`.
#[cfg(test)]
mod layering;

#[cfg(test)]
mod test_rng;
