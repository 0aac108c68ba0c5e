//! Cache maintenance instructions and cache identification registers, one thin wrapper each.
//!
//! Nothing here loops or decides: the set/way walker and the VA-range loops live in
//! `crate::cache`. Wrappers that can lose data (invalidate) or write memory (DC ZVA) are `unsafe`.
//! Arm ARM references: DC/IC C5.3, CTR_EL0 D24.2.33, CLIDR_EL1 D24.2.29, CCSIDR_EL1 D24.2.26,
//! CCSIDR2_EL1 D24.2.27, CSSELR_EL1 D24.2.32, DCZID_EL0 D24.2.36.

use core::arch::asm;

// ---- set/way ---------------------------------------------------------------------------------

/// DC ISW: invalidate one line by set/way (operand: level << 1 | set | way, see `cache::setway`).
///
/// # Safety
/// Discards the line whatever it holds: dirty data in it is lost. Only for cache
/// initialisation while the data cache is off, or for a line known to be clean.
#[inline(always)]
pub unsafe fn dc_isw(setway: u64) {
    // SAFETY: caller's contract; the instruction touches no memory addressed by `setway`.
    unsafe { asm!("dc isw, {0}", in(reg) setway, options(nostack, preserves_flags)) };
}

/// DC CSW: clean one line by set/way (writes dirty data back; no data is lost).
#[inline(always)]
pub fn dc_csw(setway: u64) {
    // SAFETY: cleaning only writes back data that is already the newest copy.
    unsafe { asm!("dc csw, {0}", in(reg) setway, options(nostack, preserves_flags)) };
}

/// DC CISW: clean and invalidate one line by set/way (no data is lost).
#[inline(always)]
pub fn dc_cisw(setway: u64) {
    // SAFETY: dirty data is written back before the line is invalidated.
    unsafe { asm!("dc cisw, {0}", in(reg) setway, options(nostack, preserves_flags)) };
}

// ---- by virtual address ----------------------------------------------------------------------

/// DC CIVAC: clean and invalidate the line holding `va` to the Point of Coherency.
/// An unmapped `va` raises a data abort (catch it with `arch::trap::try_run`).
#[inline(always)]
pub fn dc_civac(va: usize) {
    // SAFETY: no data is lost; a translation fault on `va` is an ordinary, catchable exception.
    unsafe { asm!("dc civac, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

/// DC CVAC: clean the line holding `va` to the Point of Coherency.
#[inline(always)]
pub fn dc_cvac(va: usize) {
    // SAFETY: as dc_civac: cleaning writes back the newest data only.
    unsafe { asm!("dc cvac, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

/// DC CVAU: clean the line holding `va` to the Point of Unification.
#[inline(always)]
pub fn dc_cvau(va: usize) {
    // SAFETY: as dc_cvac.
    unsafe { asm!("dc cvau, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

/// DC IVAC: invalidate the line holding `va` to the Point of Coherency.
///
/// # Safety
/// Dirty data in the whole line (not only at `va`) is discarded: the caller must own every byte
/// of the line and accept that it reverts to the content of memory.
#[inline(always)]
pub unsafe fn dc_ivac(va: usize) {
    // SAFETY: caller's contract.
    unsafe { asm!("dc ivac, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

/// DC ZVA: zero the DCZID_EL0 block containing `va` (the address is rounded down to the block).
///
/// # Safety
/// The whole block must be writable memory the caller owns; DCZID_EL0.DZP must be 0 (otherwise
/// the instruction is UNDEFINED or traps).
#[inline(always)]
pub unsafe fn dc_zva(va: usize) {
    // SAFETY: caller's contract.
    unsafe { asm!("dc zva, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

/// IC IALLU: invalidate all instruction caches of this PE to the Point of Unification.
#[inline(always)]
pub fn ic_iallu() {
    // SAFETY: instruction caches hold no dirty data; invalidation only forces refetch.
    unsafe { asm!("ic iallu", options(nostack, preserves_flags)) };
}

/// IC IALLUIS: invalidate all instruction caches in the Inner Shareable domain to PoU.
#[inline(always)]
pub fn ic_ialluis() {
    // SAFETY: as ic_iallu.
    unsafe { asm!("ic ialluis", options(nostack, preserves_flags)) };
}

/// IC IVAU: invalidate the instruction-cache line holding `va` to the Point of Unification.
#[inline(always)]
pub fn ic_ivau(va: usize) {
    // SAFETY: as ic_iallu; an unmapped `va` is a catchable data abort.
    unsafe { asm!("ic ivau, {0}", in(reg) va, options(nostack, preserves_flags)) };
}

// ---- barriers used by maintenance sequences ----------------------------------------------------

/// DSB SY: completes all earlier maintenance and memory accesses, full system.
#[inline(always)]
pub fn dsb_sy() {
    // SAFETY: a barrier has no memory effect beyond ordering.
    unsafe { asm!("dsb sy", options(nostack, preserves_flags)) };
}

/// DSB ISH: completes earlier maintenance in the Inner Shareable domain (PoU operations).
#[inline(always)]
pub fn dsb_ish() {
    // SAFETY: as dsb_sy.
    unsafe { asm!("dsb ish", options(nostack, preserves_flags)) };
}

/// ISB: context synchronisation (after CSSELR writes and after I-cache invalidation).
#[inline(always)]
pub fn isb() {
    // SAFETY: as dsb_sy.
    unsafe { asm!("isb", options(nostack, preserves_flags)) };
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
/// (FEAT_IDST) otherwise: call it only inside `arch::trap::try_run`.
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

// ---- a tiny function whose instructions tests copy and patch (self-modifying code) ----------

core::arch::global_asm!(
    ".section .text.cs_smc_template, \"ax\"",
    ".balign 4",
    ".global cs_smc_template",
    "cs_smc_template:",
    "    movz w0, #0x1234",
    "    ret",
    ".global cs_smc_template_end",
    "cs_smc_template_end:",
);

extern "C" {
    static cs_smc_template: u32;
    static cs_smc_template_end: u32;
}

/// The instruction words of `cs_smc_template` (`movz w0, #0x1234; ret`): code to copy into a
/// buffer, patch and run after `cache::maintenance::sync_instructions`.
pub fn smc_template() -> &'static [u32] {
    // SAFETY: both symbols delimit the two instruction words above in .text, which is mapped and
    // never written; the range is 4-byte aligned and non-empty.
    unsafe {
        let start = &raw const cs_smc_template;
        let end = &raw const cs_smc_template_end;
        core::slice::from_raw_parts(start, (end as usize - start as usize) / 4)
    }
}
