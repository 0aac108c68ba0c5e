//! The instructions (target only, `target_os = "none"` at EL1): cache maintenance and barriers,
//! one thin wrapper each, and [`Cpu`], the real CPU behind the [`IdRegs`] seam. Registers are
//! read and written through [`crate::sysreg`].
//!
//! Nothing here loops or decides: the set/way walker and the VA-range loops live in
//! [`crate::cache`]. Wrappers that can lose data (invalidate) or write memory (DC ZVA) are `unsafe`.
//! Arm ARM references: DC/IC C5.3, CTR_EL0 D24.2.33, CLIDR_EL1 D24.2.29, CCSIDR_EL1 D24.2.26,
//! CCSIDR2_EL1 D24.2.27, CSSELR_EL1 D24.2.32, DCZID_EL0 D24.2.36.

use core::arch::asm;

use tock_registers::interfaces::{Readable, Writeable};

use crate::cache::id::CcsidrFormat;
use crate::cache::topology::{IdRegs, Topology};
use crate::sysreg::{CCSIDR2_EL1, CCSIDR_EL1, CLIDR_EL1, CSSELR_EL1, CTR_EL0, DCZID_EL0, ID_AA64MMFR2_EL1};

/// One wrapper per maintenance instruction that takes a register operand. The `unsafe` form is
/// for instructions that can discard data or write memory (the caller carries the contract).
macro_rules! operand_op {
    ($(#[$m:meta])* $name:ident, $insn:literal, $arg:ident: $ty:ty, safe: $why:literal) => {
        $(#[$m])*
        #[doc = concat!("\n\nSafe to call: ", $why, ".")]
        #[inline(always)]
        pub fn $name($arg: $ty) {
            // SAFETY: no data is lost and no memory is written (the `safe:` reason in the doc);
            // a fault on an unmapped address is an ordinary, catchable exception.
            unsafe { asm!(concat!($insn, ", {0}"), in(reg) $arg, options(nostack, preserves_flags)) };
        }
    };
    ($(#[$m:meta])* unsafe $name:ident, $insn:literal, $arg:ident: $ty:ty) => {
        $(#[$m])*
        #[inline(always)]
        pub unsafe fn $name($arg: $ty) {
            // SAFETY: the caller's contract, documented on the function.
            unsafe { asm!(concat!($insn, ", {0}"), in(reg) $arg, options(nostack, preserves_flags)) };
        }
    };
}

// ---- set/way (operand: (level − 1) << 1 | set | way, see `cache::setway`) -------------------

operand_op!(
    /// DC ISW: invalidate one line by set/way.
    ///
    /// # Safety
    /// Discards the line whatever it holds: dirty data in it is lost. Only for cache
    /// initialisation while the data cache is off, or for a line known to be clean.
    unsafe dc_isw, "dc isw", setway: u64
);
operand_op!(
    /// DC CSW: clean one line by set/way (writes dirty data back; no data is lost).
    dc_csw, "dc csw", setway: u64, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC CISW: clean and invalidate one line by set/way (no data is lost).
    dc_cisw, "dc cisw", setway: u64, safe: "dirty data is written back before invalidation"
);

// ---- by virtual address (an unmapped `va` raises a data abort: catch it with `arch::trap`) ----

operand_op!(
    /// DC CIVAC: clean and invalidate the line holding `va` to the Point of Coherency.
    dc_civac, "dc civac", va: usize, safe: "dirty data is written back before invalidation"
);
operand_op!(
    /// DC CVAC: clean the line holding `va` to the Point of Coherency.
    dc_cvac, "dc cvac", va: usize, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC CVAU: clean the line holding `va` to the Point of Unification.
    dc_cvau, "dc cvau", va: usize, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC IVAC: invalidate the line holding `va` to the Point of Coherency.
    ///
    /// # Safety
    /// Dirty data in the whole line (not only at `va`) is discarded: the caller must own every
    /// byte of the line and accept that it reverts to the content of memory.
    unsafe dc_ivac, "dc ivac", va: usize
);
operand_op!(
    /// DC ZVA: zero the DCZID_EL0 block containing `va` (the address is rounded down to the block).
    ///
    /// # Safety
    /// The whole block must be writable memory the caller owns; DCZID_EL0.DZP must be 0
    /// (otherwise the instruction is UNDEFINED or traps).
    unsafe dc_zva, "dc zva", va: usize
);
operand_op!(
    /// IC IVAU: invalidate the instruction-cache line holding `va` to the Point of Unification.
    ic_ivau, "ic ivau", va: usize, safe: "instruction caches hold no dirty data"
);

/// One wrapper per operand-less instruction that only invalidates instruction caches or orders.
macro_rules! plain_op {
    ($($(#[$m:meta])* $name:ident, $insn:literal;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        pub fn $name() {
            // SAFETY: instruction caches hold no dirty data and barriers only order: neither
            // loses data nor writes memory.
            unsafe { asm!($insn, options(nostack, preserves_flags)) };
        }
    )*};
}

plain_op! {
    /// IC IALLU: invalidate all instruction caches of this PE to the Point of Unification.
    ic_iallu, "ic iallu";
    /// IC IALLUIS: invalidate all instruction caches in the Inner Shareable domain to PoU.
    ic_ialluis, "ic ialluis";
    /// DSB SY: completes all earlier maintenance and memory accesses, full system.
    dsb_sy, "dsb sy";
    /// DSB ISH: completes earlier maintenance in the Inner Shareable domain (PoU operations).
    dsb_ish, "dsb ish";
    /// DSB ISHST: earlier stores (e.g. descriptor writes) complete in the Inner Shareable domain
    /// before what follows (a TLBI).
    dsb_ishst, "dsb ishst";
    /// ISB: context synchronisation (after CSSELR writes and after I-cache invalidation).
    isb, "isb";
}

// ---- cache selection (a register write whose effect needs an ISB) --------------------------

/// Writes CSSELR_EL1 and synchronises (ISB), so a following CCSIDR read sees the new selection.
#[inline(always)]
pub fn select_cache(csselr: u64) {
    CSSELR_EL1.set(csselr);
    isb();
}

// ---- the real CPU behind the identification-register seam -----------------------------------

/// This CPU's cache identification registers. CCSIDR2_EL1 is read only when ID_AA64MMFR2_EL1
/// reports FEAT_CCIDX (without it the register is UNDEFINED, and this crate catches no
/// exceptions); firmware with its own exception handling may read it regardless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu;

impl IdRegs for Cpu {
    fn clidr(&mut self) -> u64 {
        CLIDR_EL1.get()
    }
    fn mmfr2(&mut self) -> u64 {
        ID_AA64MMFR2_EL1.get()
    }
    fn csselr(&mut self) -> u64 {
        CSSELR_EL1.get()
    }
    fn select(&mut self, v: u64) {
        select_cache(v);
    }
    fn ccsidr(&mut self) -> u64 {
        CCSIDR_EL1.get()
    }
    fn ccsidr2(&mut self) -> Option<u64> {
        (CcsidrFormat::from_mmfr2(ID_AA64MMFR2_EL1.get()) == CcsidrFormat::Ccidx).then(|| CCSIDR2_EL1.get())
    }
}

/// This CPU's cache topology, read through [`Cpu`].
pub fn topology() -> Topology {
    Topology::read(&mut Cpu, CTR_EL0.get(), DCZID_EL0.get())
}
