//! The instructions (target only, `target_os = "none"` at EL1): cache maintenance and the cache
//! identification registers, one thin wrapper each, and [`Cpu`], the real CPU behind the
//! [`IdRegs`] seam.
//!
//! Nothing here loops or decides: the set/way walker and the VA-range loops live in
//! [`crate::cache`]. Wrappers that can lose data (invalidate) or write memory (DC ZVA) are `unsafe`.
//! Arm ARM references: DC/IC C5.3, CTR_EL0 D24.2.33, CLIDR_EL1 D24.2.29, CCSIDR_EL1 D24.2.26,
//! CCSIDR2_EL1 D24.2.27, CSSELR_EL1 D24.2.32, DCZID_EL0 D24.2.36.

use core::arch::asm;

use crate::cache::id::CcsidrFormat;
use crate::cache::topology::{IdRegs, Topology};

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
    /// ISB: context synchronisation (after CSSELR writes and after I-cache invalidation).
    isb, "isb";
}

// ---- identification registers ------------------------------------------------------------------

macro_rules! read_sysreg {
    ($(#[$m:meta])* $name:ident, $reg:literal) => {
        $(#[$m])*
        #[inline(always)]
        pub fn $name() -> u64 {
            let v: u64;
            // SAFETY: reading an identification register has no side effect.
            unsafe { asm!(concat!("mrs {0}, ", $reg), out(reg) v, options(nostack, nomem, preserves_flags)) };
            v
        }
    };
}

read_sysreg!(
    /// CTR_EL0: minimum line sizes, L1 I-cache policy, ERG/CWG, IDC/DIC.
    ctr_el0,
    "ctr_el0"
);
read_sysreg!(
    /// CLIDR_EL1: cache types per level and the LoUIS/LoC/LoUU levels.
    clidr_el1,
    "clidr_el1"
);
read_sysreg!(
    /// DCZID_EL0: DC ZVA block size and whether DC ZVA is prohibited.
    dczid_el0,
    "dczid_el0"
);
read_sysreg!(
    /// ID_AA64MMFR2_EL1 (its CCIDX field selects the CCSIDR format).
    id_aa64mmfr2_el1,
    "id_aa64mmfr2_el1"
);
read_sysreg!(
    /// CSSELR_EL1: the cache selected for CCSIDR_EL1.
    csselr_el1,
    "csselr_el1"
);
read_sysreg!(
    /// SCTLR_EL1 (C, bit 2: data caches enabled at EL1/EL0).
    sctlr_el1,
    "sctlr_el1"
);

/// CCSIDR_EL1 of the cache currently selected by CSSELR_EL1 (use [`select_cache`] first).
#[inline(always)]
pub fn ccsidr_el1() -> u64 {
    let v: u64;
    // SAFETY: reading an identification register has no side effect. Not `nomem`: the value
    // depends on the preceding CSSELR write, which must not be reordered across it.
    unsafe { asm!("mrs {0}, ccsidr_el1", out(reg) v, options(nostack, preserves_flags)) };
    v
}

/// CCSIDR2_EL1 (FEAT_CCIDX) of the selected cache. UNDEFINED without FEAT_CCIDX and may trap
/// (FEAT_IDST) otherwise: call it only when FEAT_CCIDX is present, or under a trap catcher.
#[inline(always)]
pub fn ccsidr2_el1() -> u64 {
    let v: u64;
    // SAFETY: a read of an ID register; if unimplemented it raises an exception that the
    // caller's trap catcher turns into an error (documented precondition).
    unsafe { asm!("mrs {0}, s3_1_c0_c0_2", out(reg) v, options(nostack, preserves_flags)) };
    v
}

/// Writes CSSELR_EL1 and synchronises (ISB), so a following CCSIDR read sees the new selection.
#[inline(always)]
pub fn select_cache(csselr: u64) {
    // SAFETY: CSSELR only selects which cache CCSIDR describes; an ISB makes it effective.
    unsafe { asm!("msr csselr_el1, {0}", "isb", in(reg) csselr, options(nostack, preserves_flags)) };
}

// ---- the real CPU behind the identification-register seam -----------------------------------

/// This CPU's cache identification registers. CCSIDR2_EL1 is read only when ID_AA64MMFR2_EL1
/// reports FEAT_CCIDX (without it the register is UNDEFINED, and this crate catches no
/// exceptions); firmware with its own exception handling may read it regardless.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu;

impl IdRegs for Cpu {
    fn clidr(&mut self) -> u64 {
        clidr_el1()
    }
    fn mmfr2(&mut self) -> u64 {
        id_aa64mmfr2_el1()
    }
    fn csselr(&mut self) -> u64 {
        csselr_el1()
    }
    fn select(&mut self, v: u64) {
        select_cache(v);
    }
    fn ccsidr(&mut self) -> u64 {
        ccsidr_el1()
    }
    fn ccsidr2(&mut self) -> Option<u64> {
        (CcsidrFormat::from_mmfr2(id_aa64mmfr2_el1()) == CcsidrFormat::Ccidx).then(ccsidr2_el1)
    }
}

/// This CPU's cache topology, read through [`Cpu`].
pub fn topology() -> Topology {
    Topology::read(&mut Cpu, ctr_el0(), dczid_el0())
}
