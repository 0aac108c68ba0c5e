//! The instructions (target only, `target_os = "none"` at EL1): cache and TLB maintenance and
//! barriers, one thin wrapper each, and [`Cpu`], the real CPU behind the [`IdRegs`] seam.
//! Registers are read and written through [`crate::sysreg`].
//!
//! Nothing here loops or decides: the set/way walker and the VA-range loops live in
//! [`crate::cache`]. Wrappers that can lose data (invalidate) or write memory (DC ZVA) are `unsafe`.
//!
//! Every DC, IC and TLBI wrapper counts what it issues, per [`MaintOp`], just before issuing it
//! (an instruction that faults is counted, as it was executed): [`maint_counts`] reads the
//! counts (the kernel's `maint-total` record). Code that must issue maintenance in one assembly
//! sequence (no calls in between) reports it with [`count_executed`]. The counters are plain
//! loads and stores (no exclusives: they work with the MMU off, where memory is Device), one row
//! per core ([`this_core`]), written only by that core, so cores that count at once lose
//! nothing; [`maint_counts`] adds the rows. While data is cached a core's row may be dirty in a
//! cache: after data caching stops on a core, [`counters_to_poc`] must run on it before it counts
//! anything else.
//!
//! Arm ARM references: DC/IC C5.3, TLBI C5.5, CTR_EL0 D24.2.33, CLIDR_EL1 D24.2.29, CCSIDR_EL1
//! D24.2.26, CCSIDR2_EL1 D24.2.27, CSSELR_EL1 D24.2.32, DCZID_EL0 D24.2.36.

use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use tock_registers::interfaces::{Readable, Writeable};

use crate::cache::id::{CcsidrFormat, Ctr};
use crate::cache::ops::MaintOp;
use crate::cache::topology::{IdRegs, Topology};
use crate::cpuid::{core_of_mpidr, MAX_CORES};
use crate::sysreg::{CCSIDR2_EL1, CCSIDR_EL1, CLIDR_EL1, CSSELR_EL1, CTR_EL0, DCZID_EL0, ID_AA64MMFR2_EL1, MPIDR_EL1};

/// The calling core's number: MPIDR Aff0 | Aff1 ([`core_of_mpidr`]; the boot core is 0). A
/// number beyond [`MAX_CORES`] (no such core is ever started) reads as `MAX_CORES - 1`, so
/// per-core tables indexed by it stay in bounds.
#[inline(always)]
pub fn this_core() -> usize {
    core_of_mpidr(MPIDR_EL1.get()).min(MAX_CORES - 1)
}

/// One core's executed-operation counters, one per [`MaintOp`], on lines no other core writes
/// (128 bytes: the largest CTR_EL0.CWG granule of the cores this suite meets).
#[repr(align(128))]
struct Counters([AtomicU64; MaintOp::COUNT]);

/// The counter rows, indexed by [`this_core`].
static EXECUTED: [Counters; MAX_CORES] = [const { Counters([const { AtomicU64::new(0) }; MaintOp::COUNT]) }; MAX_CORES];

/// Adds `n` executions of `op` to its counter: for an assembly sequence that issues maintenance
/// without calling the wrappers (count before the sequence or right after it, whichever keeps
/// the counters out of the sequence's contract). The wrappers call it themselves.
#[inline(always)]
pub fn count_executed(op: MaintOp, n: u64) {
    let c = &EXECUTED[this_core()].0[op.index()];
    // A plain load and store, not an atomic add: exclusives need not work with the MMU off. Only
    // this core writes its row.
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

/// The operations executed so far on every core, indexed by [`MaintOp::index`]. Exact once
/// the other cores' counts are visible to the caller: their rows are read coherently while
/// data caching is on (cachescope's cores share one Inner Shareable domain), and a core that
/// stops caching cleans its row first ([`counters_to_poc`]).
pub fn maint_counts() -> [u64; MaintOp::COUNT] {
    core::array::from_fn(|i| EXECUTED.iter().map(|row| row.0[i].load(Relaxed)).fold(0, u64::wrapping_add))
}

/// Cleans and invalidates the calling core's counter row to PoC (DC CIVAC each line, DSB SY;
/// counted after). Call it right after data caching stops on this core (SCTLR_EL1.C or M
/// cleared) and before anything is counted: the counts written while cached may be dirty in a
/// cache, and an uncached increment would read memory's older value and later be overwritten by
/// that dirty line.
pub fn counters_to_poc() {
    let line = Ctr { raw: CTR_EL0.get() }.dmin_line() as usize;
    let row = &EXECUTED[this_core()];
    let start = row.0.as_ptr() as usize & !(line - 1);
    let end = row.0.as_ptr() as usize + core::mem::size_of::<Counters>();
    let mut n = 0;
    let mut a = start;
    dsb_sy();
    while a < end {
        // SAFETY: DC CIVAC writes dirty data back before invalidating; the counters are mapped.
        unsafe { asm!("dc civac, {0}", in(reg) a, options(nostack, preserves_flags)) };
        a += line;
        n += 1;
    }
    dsb_sy();
    count_executed(MaintOp::DcCivac, n);
}

/// One wrapper per maintenance instruction that takes a register operand, counted as `$op`.
/// The `unsafe` form is for instructions that can discard data or write memory (the caller
/// carries the contract).
macro_rules! operand_op {
    ($(#[$m:meta])* $name:ident, $op:ident, $insn:literal, $arg:ident: $ty:ty, safe: $why:literal) => {
        $(#[$m])*
        #[doc = concat!("\n\nSafe to call: ", $why, ".")]
        #[inline(always)]
        pub fn $name($arg: $ty) {
            count_executed(MaintOp::$op, 1);
            // SAFETY: no data is lost and no memory is written (the `safe:` reason in the doc);
            // a fault on an unmapped address is an ordinary, catchable exception.
            unsafe { asm!(concat!($insn, ", {0}"), in(reg) $arg, options(nostack, preserves_flags)) };
        }
    };
    ($(#[$m:meta])* unsafe $name:ident, $op:ident, $insn:literal, $arg:ident: $ty:ty) => {
        $(#[$m])*
        #[inline(always)]
        pub unsafe fn $name($arg: $ty) {
            count_executed(MaintOp::$op, 1);
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
    unsafe dc_isw, DcIsw, "dc isw", setway: u64
);
operand_op!(
    /// DC CSW: clean one line by set/way (writes dirty data back; no data is lost).
    dc_csw, DcCsw, "dc csw", setway: u64, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC CISW: clean and invalidate one line by set/way (no data is lost).
    dc_cisw, DcCisw, "dc cisw", setway: u64, safe: "dirty data is written back before invalidation"
);

// ---- by virtual address (an unmapped `va` raises a data abort: catch it with `arch::trap`) ----

operand_op!(
    /// DC CIVAC: clean and invalidate the line holding `va` to the Point of Coherency.
    dc_civac, DcCivac, "dc civac", va: usize, safe: "dirty data is written back before invalidation"
);
operand_op!(
    /// DC CVAC: clean the line holding `va` to the Point of Coherency.
    dc_cvac, DcCvac, "dc cvac", va: usize, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC CVAU: clean the line holding `va` to the Point of Unification.
    dc_cvau, DcCvau, "dc cvau", va: usize, safe: "cleaning only writes back the newest data"
);
operand_op!(
    /// DC IVAC: invalidate the line holding `va` to the Point of Coherency.
    ///
    /// # Safety
    /// Dirty data in the whole line (not only at `va`) is discarded: the caller must own every
    /// byte of the line and accept that it reverts to the content of memory.
    unsafe dc_ivac, DcIvac, "dc ivac", va: usize
);
operand_op!(
    /// DC ZVA: zero the DCZID_EL0 block containing `va` (the address is rounded down to the block).
    ///
    /// # Safety
    /// The whole block must be writable memory the caller owns; DCZID_EL0.DZP must be 0
    /// (otherwise the instruction is UNDEFINED or traps).
    unsafe dc_zva, DcZva, "dc zva", va: usize
);
operand_op!(
    /// IC IVAU: invalidate the instruction-cache line holding `va` to the Point of Unification.
    ic_ivau, IcIvau, "ic ivau", va: usize, safe: "instruction caches hold no dirty data"
);

operand_op!(
    /// TLBI VAAE1IS: invalidate the EL1&0 translations of one page, any ASID, Inner Shareable.
    /// `operand` is VA\[55:12\] in bits \[43:0\] (see [`tlbi_vaae1is_operand`]). Bracket a batch with
    /// [`dsb_ishst`] before and [`dsb_ish`] + [`isb`] after.
    tlbi_vaae1is, TlbiVaae1is, "tlbi vaae1is", operand: u64, safe: "TLB invalidation only drops cached translations"
);

operand_op!(
    /// TLBI VAE1IS: invalidate the EL1&0 translations of one page for one ASID, Inner Shareable
    /// (broadcast to every core of the domain). `operand`: ASID in \[63:48\], VA\[55:12\] in
    /// \[43:0\]. Counted as `tlbi_other`.
    tlbi_vae1is, TlbiOther, "tlbi vae1is", operand: u64, safe: "TLB invalidation only drops cached translations"
);
operand_op!(
    /// TLBI VAE1: as [`tlbi_vae1is`] but this core's TLBs only (no broadcast). Counted as
    /// `tlbi_other`.
    tlbi_vae1, TlbiOther, "tlbi vae1", operand: u64, safe: "TLB invalidation only drops cached translations"
);

/// The TLBI VAAE1IS operand of `va`: VA\[55:12\] in bits \[43:0\].
pub const fn tlbi_vaae1is_operand(va: u64) -> u64 {
    (va >> 12) & ((1 << 44) - 1)
}

/// One wrapper per operand-less maintenance instruction (counted as `$op`) or barrier.
macro_rules! plain_op {
    ($($(#[$m:meta])* $name:ident, $($op:ident,)? $insn:literal;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        pub fn $name() {
            $(count_executed(MaintOp::$op, 1);)?
            // SAFETY: instruction caches hold no dirty data, TLB invalidation only drops cached
            // translations and barriers only order: none loses data or writes memory.
            unsafe { asm!($insn, options(nostack, preserves_flags)) };
        }
    )*};
}

plain_op! {
    /// IC IALLU: invalidate all instruction caches of this PE to the Point of Unification.
    ic_iallu, IcIallu, "ic iallu";
    /// IC IALLUIS: invalidate all instruction caches in the Inner Shareable domain to PoU.
    ic_ialluis, IcIalluis, "ic ialluis";
    /// TLBI VMALLE1IS: invalidate every EL1&0 translation of the current VMID, Inner Shareable.
    /// Bracket it with [`dsb_ishst`] before and [`dsb_ish`] + [`isb`] after.
    tlbi_vmalle1is, TlbiVmalle1is, "tlbi vmalle1is";
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
