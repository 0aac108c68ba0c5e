//! MMU registers and instructions at EL1: SCTLR_EL1 writes (reads: `sysreg::SCTLR_EL1.get()`),
//! TCR_EL1/MAIR_EL1/TTBR0_EL1 access, TLB
//! invalidation, address translation (`AT S1E1R` → PAR_EL1), the SCTLR write that stops data
//! caching, and the probes the expected-fault tests execute. Decoding is in `mem::aarch64::regs`.

use aarch64_cpu::registers::{ID_AA64MMFR0_EL1, MAIR_EL1, SCTLR_EL1, TCR_EL1, TTBR0_EL1};
use cachescope_arch::hw::{dsb_ish, isb};
use core::arch::asm;
use tock_registers::interfaces::{Readable, Writeable};

/// SCTLR_EL1.M: stage 1 translation enabled.
pub const SCTLR_M: u64 = 1 << 0;
/// SCTLR_EL1.C: data accesses cacheable.
pub const SCTLR_C: u64 = 1 << 2;
/// SCTLR_EL1.I: instruction accesses cacheable.
pub const SCTLR_I: u64 = 1 << 12;

/// TCR_EL1.
pub fn tcr() -> u64 {
    TCR_EL1.get()
}

/// MAIR_EL1.
pub fn mair() -> u64 {
    MAIR_EL1.get()
}

/// TTBR0_EL1.
pub fn ttbr0() -> u64 {
    TTBR0_EL1.get()
}

/// ID_AA64MMFR0_EL1 (PARange, supported granules).
pub fn id_aa64mmfr0() -> u64 {
    ID_AA64MMFR0_EL1.get()
}

/// Programs the translation regime (MAIR_EL1, TCR_EL1, TTBR0_EL1 with ASID 0), then ISB.
/// Refused (nothing written) while the MMU is on: a regime change under a live MMU needs
/// break-before-make on the tables, not a register swap. With the MMU off the registers take
/// effect only when SCTLR_EL1.M is set, which is [`write_sctlr`]'s contract.
pub fn set_translation(mair: u64, tcr: u64, ttbr0: u64) -> Result<(), MmuIsOn> {
    if SCTLR_EL1.is_set(SCTLR_EL1::M) {
        return Err(MmuIsOn);
    }
    MAIR_EL1.set(mair);
    TCR_EL1.set(tcr);
    TTBR0_EL1.set(ttbr0);
    isb();
    Ok(())
}

/// Rewrites MAIR_EL1 under a live MMU, then `ISB` and [`tlbi_all`]: a TLB entry may hold the
/// attributes MAIR gave it (Arm ARM DDI 0487, "TLB maintenance requirements": changes to
/// MAIR_ELx need TLB invalidation), so the new attributes are used only once every EL1&0 entry
/// is gone. The caller has cleaned and invalidated, through the old attributes, every line
/// the changed slot's mappings may hold, and accesses none of them until this returns.
pub fn write_mair(mair: u64) {
    MAIR_EL1.set(mair);
    isb();
    tlbi_all();
}

/// [`set_translation`] was called with the MMU on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmuIsOn;

/// DSB ISHST: descriptor writes are visible to table walks before what follows (a TLBI).
pub use cachescope_arch::hw::dsb_ishst;

/// DSB ISHST; TLBI VMALLE1IS; DSB ISH; ISB: every EL1&0 TLB entry of the Inner Shareable domain
/// is gone.
pub fn tlbi_all() {
    dsb_ishst();
    cachescope_arch::hw::tlbi_vmalle1is();
    dsb_ish();
    isb();
}

/// TLBI VAAE1IS for the page holding `va` (any ASID, any level, Inner Shareable). The caller
/// brackets a batch with [`dsb_ishst`] before and [`tlbi_sync`] after.
#[inline(always)]
pub fn tlbi_va(va: u64) {
    cachescope_arch::hw::tlbi_vaae1is(cachescope_arch::hw::tlbi_vaae1is_operand(va));
}

/// DSB ISH; ISB: completes earlier TLB invalidations and resynchronises the instruction stream.
#[inline(always)]
pub fn tlbi_sync() {
    dsb_ish();
    isb();
}

/// `AT S1E1R` for `va`, then ISB and PAR_EL1: the stage 1 EL1 read translation of `va` as the
/// hardware performs it (the raw PAR_EL1; decode with `mem::aarch64::regs::Par`).
pub fn at_s1e1r(va: u64) -> u64 {
    let par: u64;
    // SAFETY: AT only writes PAR_EL1 (read right after); it never faults, a failed walk is
    // reported in PAR_EL1.F.
    unsafe { asm!("at s1e1r, {va}", "isb", "mrs {par}, par_el1", va = in(reg) va, par = out(reg) par, options(nostack, preserves_flags)) };
    par
}

/// Writes SCTLR_EL1 (DSB SY before, ISB after). For changes that keep data caching as it is or
/// turn it on; turning it off is [`write_sctlr_uncached`].
///
/// # Safety
/// The translation regime and the caches must be ready for the new value (tables live, TLBs
/// and caches maintained as `mem::mmu` does).
pub unsafe fn write_sctlr(value: u64) {
    // SAFETY: the caller's contract.
    unsafe { asm!("dsb sy", "msr sctlr_el1, {0}", "isb", in(reg) value, options(nostack, preserves_flags)) };
}

/// Writes an SCTLR_EL1 value that stops data caching (M or C clear), then cleans and
/// invalidates `[start, end)` (the stack) to PoC by VA, all in one sequence that makes no
/// memory access: stack lines dirtied after the caller's set/way clean are written back before
/// any uncached access can read around them, and no uncached write can be overwritten by a
/// later write-back of such a line. (This is why it cannot call `cache::maintenance`: a call
/// would push a frame between the SCTLR write and the clean.)
///
/// Then the maintenance counters are cleaned to PoC (`hw::counters_to_poc`: they may be dirty
/// in a cache from before the switch) and only then are the sequence's DC CIVACs counted.
///
/// # Safety
/// All other dirty data must already be cleaned to PoC (set/way clean+invalidate to LoC), and
/// `[start, end)` must be mapped (identity) both before and after the change.
pub unsafe fn write_sctlr_uncached(value: u64, start: usize, end: usize) {
    // The loop below runs at least once, from the line holding `start` while below `end`.
    let line = cachescope_arch::cache::Ctr { raw: cachescope_arch::sysreg::CTR_EL0.get() }.dmin_line() as usize;
    let lines = (end.saturating_sub(start & !(line - 1))).div_ceil(line).max(1) as u64;
    // SAFETY: the caller's contract; DC CIVAC needs no permission beyond a valid translation.
    unsafe {
        asm!(
            "mrs {line}, ctr_el0",
            "ubfx {line}, {line}, #16, #4", // DminLine: log2(words)
            "mov {mask}, #4",
            "lsl {line}, {mask}, {line}",   // smallest D-cache line in bytes
            "sub {mask}, {line}, #1",
            "bic {start}, {start}, {mask}",
            "dsb sy",
            "msr sctlr_el1, {value}",
            "isb",
            "2:",
            "dc civac, {start}",
            "add {start}, {start}, {line}",
            "cmp {start}, {end}",
            "b.lo 2b",
            "dsb sy",
            "isb",
            value = in(reg) value,
            start = inout(reg) start => _,
            end = in(reg) end,
            line = out(reg) _,
            mask = out(reg) _,
            options(nostack)
        )
    };
    cachescope_arch::hw::counters_to_poc();
    cachescope_arch::hw::count_executed(cachescope_arch::cache::ops::MaintOp::DcCivac, lines);
}

/// Branches with link to `addr`: the instruction-fetch probe of the execute-never tests.
///
/// # Safety
/// `addr` must hold a function that returns (`ret`) or the fetch must fault under an active
/// trap catcher.
pub unsafe fn call(addr: usize) {
    // SAFETY: the caller's contract; every caller-saved register is declared clobbered.
    unsafe { asm!("blr {0}", in(reg) addr, clobber_abi("C")) };
}
