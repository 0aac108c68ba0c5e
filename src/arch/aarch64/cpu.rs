//! Small CPU primitives: the generic timer, identification registers. (Barriers are the
//! library's, `cachescope_arch::hw`: one set.)

use aarch64_cpu::registers::{CurrentEL, CNTFRQ_EL0, CNTVCT_EL0, MIDR_EL1, MPIDR_EL1};
use cachescope_arch::hw::isb;
use tock_registers::interfaces::Readable;

/// The current exception level (1, 2 or 3).
pub fn current_el() -> u8 {
    CurrentEL.read(CurrentEL::EL) as u8
}

/// CNTFRQ_EL0: the generic timer's frequency in Hz as firmware/QEMU programmed it.
pub fn timer_frequency() -> u64 {
    CNTFRQ_EL0.get()
}

/// CNTVCT_EL0, read after an ISB so earlier instructions cannot be reordered past it.
#[inline(always)]
pub fn counter() -> u64 {
    isb();
    CNTVCT_EL0.get()
}

/// MIDR_EL1.
pub fn midr() -> u64 {
    MIDR_EL1.get()
}

/// MPIDR_EL1.
pub fn mpidr() -> u64 {
    MPIDR_EL1.get()
}

/// Sleeps forever (wait-for-event loop).
pub fn park() -> ! {
    loop {
        aarch64_cpu::asm::wfe();
    }
}

/// One 32-bit load with whatever alignment `addr` has, as the hardware does it (no Rust
/// alignment precondition): the probe used by alignment-fault tests.
///
/// # Safety
/// `addr` must be readable or the resulting fault must be expected by an active trap catcher.
pub unsafe fn load_u32_raw(addr: usize) -> u32 {
    let v: u32;
    // SAFETY: caller's contract.
    unsafe { core::arch::asm!("ldr {v:w}, [{a}]", v = out(reg) v, a = in(reg) addr, options(nostack, readonly)) };
    v
}

/// One 32-bit store, as the hardware does it (see [`load_u32_raw`]).
///
/// # Safety
/// `addr` must be writable memory the caller owns, or the fault must be expected.
pub unsafe fn store_u32_raw(addr: usize, v: u32) {
    // SAFETY: caller's contract.
    unsafe { core::arch::asm!("str {v:w}, [{a}]", v = in(reg) v, a = in(reg) addr, options(nostack)) };
}

/// Executes `udf #0` (permanently UNDEFINED): the probe for undefined-instruction handling.
pub fn undefined_instruction() {
    // SAFETY: raises an UNDEFINED exception and nothing else; callers run it under a catcher.
    unsafe { core::arch::asm!("udf #0", options(nostack)) };
}
