//! TEMPORARY stand-in for `crate::cache` (the cache helper's API, not yet in main): the same
//! names, backed by one private VA-range DC loop. Deleted when `git rebase main` brings the real
//! API; `mem::mmu` then imports `crate::cache` instead.

use core::arch::asm;
use core::sync::atomic::{AtomicUsize, Ordering};

static RAM: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Records the RAM range the stand-in "set/way" flush covers by VA.
pub fn set_ram(start: usize, len: usize) {
    RAM[0].store(start, Ordering::Relaxed);
    RAM[1].store(len, Ordering::Relaxed);
}

fn dc_loop(op: u8, start: usize, len: usize) -> Result<u64, ()> {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effect.
    unsafe { asm!("mrs {0}, ctr_el0", out(reg) ctr, options(nostack, nomem)) };
    let line = 4usize << ((ctr >> 16) & 0xf);
    let mut a = start & !(line - 1);
    let end = start.checked_add(len).ok_or(())?;
    let mut n = 0;
    while a < end {
        // SAFETY: maintenance by VA of a mapped range the caller owns.
        unsafe {
            match op {
                0 => asm!("dc cvac, {0}", in(reg) a, options(nostack)),
                1 => asm!("dc civac, {0}", in(reg) a, options(nostack)),
                _ => asm!("dc ivac, {0}", in(reg) a, options(nostack)),
            }
        }
        a += line;
        n += 1;
    }
    // SAFETY: barrier only.
    unsafe { asm!("dsb sy", options(nostack)) };
    Ok(n)
}

/// VA maintenance.
pub mod maintenance {
    /// DC CVAC loop.
    pub fn clean_to_poc(start: usize, len: usize) -> Result<u64, ()> {
        super::dc_loop(0, start, len)
    }
    /// DC CIVAC loop.
    pub fn clean_invalidate_to_poc(start: usize, len: usize) -> Result<u64, ()> {
        super::dc_loop(1, start, len)
    }
    /// DC IVAC loop.
    ///
    /// # Safety
    /// Discards dirty data in the range.
    pub unsafe fn invalidate_to_poc(start: usize, len: usize) -> Result<u64, ()> {
        super::dc_loop(2, start, len)
    }
    /// IC IALLU.
    pub fn invalidate_icache_all() {
        // SAFETY: discards instruction cache lines only.
        unsafe { core::arch::asm!("ic iallu", "dsb ish", "isb", options(nostack)) };
    }
}

/// Set/way stand-in: clean+invalidate of all RAM by VA.
pub mod setway {
    /// Operation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SetWayOp {
        /// Clean and invalidate.
        CleanInvalidate,
    }
    /// Scope.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Scope {
        /// To LoC.
        ToLoC,
    }
    /// Clean+invalidate all RAM by VA (identity).
    pub fn dcsw_silent(_op: SetWayOp, _scope: Scope) -> Result<u64, ()> {
        use core::sync::atomic::Ordering;
        super::dc_loop(1, super::RAM[0].load(Ordering::Relaxed), super::RAM[1].load(Ordering::Relaxed))
    }
}

/// DC ZVA of the block at `va`.
///
/// # Safety
/// `va` must be memory the caller owns (or the fault must be expected).
pub unsafe fn dc_zva(va: usize) {
    // SAFETY: the caller's contract.
    unsafe { asm!("dc zva, {0}", in(reg) va, options(nostack)) };
}

/// DCZID_EL0.
pub fn dczid_el0() -> u64 {
    let v: u64;
    // SAFETY: an identification register.
    unsafe { asm!("mrs {0}, dczid_el0", out(reg) v, options(nostack, nomem)) };
    v
}

/// IC IVAU loop after DC CVAU (no IDC/DIC shortcut).
pub fn sync_instructions(start: usize, len: usize) {
    let _ = dc_loop(1, start, len);
    // SAFETY: instruction cache invalidation only.
    unsafe { asm!("ic iallu", "dsb ish", "isb", options(nostack)) };
}
