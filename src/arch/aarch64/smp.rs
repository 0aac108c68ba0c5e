//! Starting secondary cores: the per-core launch slots that `cs_secondary_entry` (boot.s)
//! reads. How a core is woken (spin table, PSCI CPU_ON) is the board's business; this part is
//! the same on every board.
//!
//! A started core enters `cs_secondary_entry` at EL3/EL2/EL1, drops to EL1h like the boot
//! core (FP on, MMU and caches off), takes its stack and entry from its slot and calls
//! `entry(arg)`. The slot index is MPIDR Aff0 | Aff1 (cores are Aff0 on the Pi 4 and QEMU virt,
//! Aff1 on the Pi 5; the other field is 0).

use core::sync::atomic::{AtomicU64, Ordering};

/// Cores with a launch slot; the calling core's number (the slot index `cs_secondary_entry`
/// uses, boot core 0) and the number in an MPIDR value: one definition each, the library's.
pub use cachescope_arch::cpuid::{core_of_mpidr, MAX_CORES};
pub use cachescope_arch::hw::this_core;

/// A secondary core's Rust entry: called once with the slot's `arg`, never returns.
pub type SecondaryEntry = extern "C" fn(arg: u64) -> !;

/// One core's launch parameters (layout shared with boot.s: 32 bytes).
#[repr(C, align(32))]
pub struct Slot {
    stack_top: AtomicU64,
    entry: AtomicU64,
    arg: AtomicU64,
    _reserved: AtomicU64,
}

/// The launch slots, indexed by core number (read by `cs_secondary_entry`).
#[no_mangle]
#[allow(non_upper_case_globals)]
static cs_secondary_slots: [Slot; MAX_CORES] =
    [const { Slot { stack_top: AtomicU64::new(0), entry: AtomicU64::new(0), arg: AtomicU64::new(0), _reserved: AtomicU64::new(0) } };
        MAX_CORES];

extern "C" {
    fn cs_secondary_entry();
}

/// Why a core was not started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// Core 0 is the boot core, or the number is beyond [`MAX_CORES`] / the board's cores.
    BadCore(usize),
    /// The stack top is zero or not 16-byte aligned.
    BadStack,
    /// The PSCI conduit instruction trapped: no firmware behind it.
    NoFirmware,
    /// Firmware refused CPU_ON.
    Psci(crate::firmware::psci::Error),
}

impl core::fmt::Display for StartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BadCore(c) => write!(f, "core {c} cannot be started (boot core or out of range)"),
            Self::BadStack => f.write_str("secondary stack top must be non-zero and 16-byte aligned"),
            Self::NoFirmware => f.write_str("the PSCI conduit instruction trapped: no firmware behind it"),
            Self::Psci(e) => write!(f, "CPU_ON refused: {e}"),
        }
    }
}

/// How a board starts its secondary cores (`bsp::start_method()`): a fact the board learned at
/// boot, known before any core is asked to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartMethod {
    /// PSCI CPU_ON through this conduit (the DTB's `/psci` method, or the board's firmware).
    Psci(crate::firmware::psci::Conduit),
    /// A spin table the firmware's stub waits on (the Pi 4's armstub): nothing to ask first.
    SpinTable,
    /// The board knows no way to start its secondaries.
    None,
}

/// Checks a start request before any board mechanism is touched: `core` is a secondary with a
/// slot, the stack top is non-zero and 16-byte aligned.
pub fn validate(core: usize, stack_top: usize) -> Result<(), StartError> {
    if core == 0 || core >= MAX_CORES {
        return Err(StartError::BadCore(core));
    }
    if stack_top == 0 || !stack_top.is_multiple_of(16) {
        return Err(StartError::BadStack);
    }
    Ok(())
}

/// Fills `core`'s slot and returns the physical address the core must be started at.
/// The slot is cleaned to the point of coherency: the new core runs with caches off.
pub fn prepare(core: usize, entry: SecondaryEntry, stack_top: usize, arg: u64) -> Result<u64, StartError> {
    validate(core, stack_top)?;
    let slot = &cs_secondary_slots[core];
    slot.stack_top.store(stack_top as u64, Ordering::Relaxed);
    slot.entry.store(entry as usize as u64, Ordering::Relaxed);
    slot.arg.store(arg, Ordering::Release);
    clean_to_poc(slot as *const Slot as usize);
    Ok(cs_secondary_entry as *const () as u64)
}

/// Cleans the data cache line holding `addr` to the point of coherency (a no-op in effect
/// while caches are off), then DSB: so a core that starts with caches off sees the data.
pub fn clean_to_poc(addr: usize) {
    cachescope_arch::hw::dc_cvac(addr);
    cachescope_arch::hw::dsb_sy();
}

/// Starts `core` through PSCI CPU_ON (the Pi 5's BL31, QEMU virt's built-in PSCI): fills the
/// slot and asks firmware to start `target_mpidr` at `cs_secondary_entry`.
pub fn start_with_psci(
    conduit: crate::firmware::psci::Conduit,
    core: usize,
    target_mpidr: u64,
    entry: SecondaryEntry,
    stack_top: usize,
    arg: u64,
) -> Result<(), StartError> {
    let pc = prepare(core, entry, stack_top, arg)?;
    super::psci::cpu_on(conduit, target_mpidr, pc, core as u64).map_err(|e| e.map_or(StartError::NoFirmware, StartError::Psci))
}

// boot.s writes TPIDR_EL1 = CORE_ID_TAG | core with this tag spelled as two immediates
// (movz #0x6373, lsl #48; movk #0x6964, lsl #32): keep them in step.
const _: () = assert!(cachescope_arch::marker::CORE_ID_TAG == 0x6373_6964_0000_0000);
// boot.s refuses a core number >= 8 before indexing the slots with it (`cmp x2, #8`).
const _: () = assert!(MAX_CORES == 8);
