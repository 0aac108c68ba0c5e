//! Maintenance by virtual address: clean / clean+invalidate / invalidate to PoC, clean to PoU,
//! instruction coherence for new code, and zeroing with DC ZVA.
//!
//! The loops are pure and generic over a [`VaBackend`] (real instructions on the target, a
//! recorder in host tests). The stride always comes from CTR_EL0 (DminLine for data, IminLine
//! for instructions), never from a constant. Barriers: DSB before the loop (with the MMU off all
//! memory is Device, where DC by VA is not ordered against earlier stores without one) and after
//! it (SY for PoC, ISH for PoU).
//!
//! Every function returns the number of maintenance instructions issued, or [`RangeError`] when
//! `start + len` (rounded out to whole lines) does not fit in the address space; then nothing
//! is issued. `len == 0` issues nothing.

use core::fmt;

use super::id::Ctr;

/// One maintenance instruction by VA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaOp {
    /// DC CVAC: clean to PoC.
    CleanPoc,
    /// DC CIVAC: clean and invalidate to PoC.
    CleanInvalidatePoc,
    /// DC IVAC: invalidate to PoC.
    InvalidatePoc,
    /// DC CVAU: clean to PoU.
    CleanPou,
    /// IC IVAU: invalidate instruction cache to PoU.
    InvalidateIcachePou,
}

/// The barriers a sequence uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// DSB SY.
    DsbSy,
    /// DSB ISH.
    DsbIsh,
    /// ISB.
    Isb,
}

/// What a maintenance sequence needs from a CPU.
pub trait VaBackend {
    /// Issues one maintenance instruction on the line holding `va`.
    fn op(&mut self, op: VaOp, va: usize);
    /// Issues a barrier.
    fn barrier(&mut self, b: Barrier);
}

/// The range wraps around the end of the address space (after rounding out to whole lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeError {
    /// Start of the refused range.
    pub start: usize,
    /// Its length.
    pub len: usize,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "range {:#x} + {:#x} wraps around the address space", self.start, self.len)
    }
}

/// The line-aligned span `[first, end)` covering `[start, start + len)` for lines of `line` bytes
/// (a power of two), or an error if it does not fit.
pub fn line_span(start: usize, len: usize, line: usize) -> Result<(usize, usize), RangeError> {
    let err = RangeError { start, len };
    let end = start.checked_add(len).ok_or(err)?;
    let mask = line - 1;
    let aligned_end = end.checked_add(mask).ok_or(err)? & !mask;
    Ok((start & !mask, aligned_end))
}

fn each_line<B: VaBackend>(b: &mut B, start: usize, len: usize, line: usize, mut f: impl FnMut(&mut B, usize)) -> Result<u64, RangeError> {
    let (first, end) = line_span(start, len, line)?;
    let mut n = 0u64;
    let mut a = first;
    while len != 0 && a < end {
        f(b, a);
        n += 1;
        a += line; // cannot overflow: end is a line-aligned address that fits
    }
    Ok(n)
}

/// `op` on every data line of `[start, start + len)`, stride CTR_EL0.DminLine, bracketed by
/// barriers (DSB SY for PoC operations, DSB ISH for PoU).
///
/// ```
/// use cachescope_arch::cache::maintenance::{range_op, Barrier, VaBackend, VaOp};
/// use cachescope_arch::cache::Ctr;
/// struct Count(usize, Vec<usize>);
/// impl VaBackend for Count {
///     fn op(&mut self, _: VaOp, va: usize) { self.0 += 1; self.1.push(va) }
///     fn barrier(&mut self, _: Barrier) {}
/// }
/// let ctr = Ctr { raw: 0x8444_c004 }; // DminLine = 64 bytes
/// let mut b = Count(0, Vec::new());
/// // 100 bytes from 0x1030 touch three 64-byte lines: 0x1000, 0x1040, 0x1080.
/// assert_eq!(range_op(&mut b, ctr, VaOp::CleanPoc, 0x1030, 100), Ok(3));
/// assert_eq!(b.1, [0x1000, 0x1040, 0x1080]);
/// ```
pub fn range_op<B: VaBackend>(b: &mut B, ctr: Ctr, op: VaOp, start: usize, len: usize) -> Result<u64, RangeError> {
    let line = ctr.dmin_line() as usize;
    line_span(start, len, line)?;
    if len == 0 {
        return Ok(0);
    }
    let dsb = if op == VaOp::CleanPou { Barrier::DsbIsh } else { Barrier::DsbSy };
    b.barrier(dsb);
    let n = each_line(b, start, len, line, |b, a| b.op(op, a))?;
    b.barrier(dsb);
    Ok(n)
}

/// Invalidate to PoC without losing neighbours: lines wholly inside the range get DC IVAC; a
/// line the range only partly covers (its first or last) gets DC CIVAC, so bytes outside the
/// range that share it are written back, not discarded.
pub fn invalidate_range<B: VaBackend>(b: &mut B, ctr: Ctr, start: usize, len: usize) -> Result<u64, RangeError> {
    let line = ctr.dmin_line() as usize;
    line_span(start, len, line)?;
    if len == 0 {
        return Ok(0);
    }
    let end = start + len;
    b.barrier(Barrier::DsbSy);
    let n = each_line(b, start, len, line, |b, a| {
        let whole = a >= start && a.checked_add(line).is_some_and(|e| e <= end);
        b.op(if whole { VaOp::InvalidatePoc } else { VaOp::CleanInvalidatePoc }, a);
    })?;
    b.barrier(Barrier::DsbSy);
    Ok(n)
}

/// Makes instructions written as data in `[start, start + len)` executable, as CTR_EL0 says:
/// IDC = 0 → DC CVAU per data line, DSB ISH (else a DSB ISH alone orders the stores);
/// DIC = 0 → IC IVAU per instruction line, DSB ISH; then ISB.
pub fn sync_range<B: VaBackend>(b: &mut B, ctr: Ctr, start: usize, len: usize) -> Result<u64, RangeError> {
    line_span(start, len, ctr.dmin_line() as usize)?;
    line_span(start, len, ctr.imin_line() as usize)?;
    let mut n = 0;
    if !ctr.idc() {
        b.barrier(Barrier::DsbIsh);
        n += each_line(b, start, len, ctr.dmin_line() as usize, |b, a| b.op(VaOp::CleanPou, a))?;
    }
    b.barrier(Barrier::DsbIsh);
    if !ctr.dic() {
        n += each_line(b, start, len, ctr.imin_line() as usize, |b, a| b.op(VaOp::InvalidateIcachePou, a))?;
        b.barrier(Barrier::DsbIsh);
    }
    b.barrier(Barrier::Isb);
    Ok(n)
}

/// How a zeroing of `[start, start + len)` splits: bytes stored before the first whole DC ZVA
/// block, the whole blocks, bytes stored after them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroPlan {
    /// Bytes zeroed with stores at the start.
    pub head: usize,
    /// Address of the first block (meaningful when `blocks > 0`).
    pub first_block: usize,
    /// Whole blocks zeroed with DC ZVA.
    pub blocks: usize,
    /// Bytes zeroed with stores at the end.
    pub tail: usize,
}

/// Splits a zeroing; `block = None` (DZP = 1 or reserved BS) means stores only.
pub fn zero_plan(start: usize, len: usize, block: Option<u32>) -> ZeroPlan {
    let stores = ZeroPlan { head: len, first_block: start, blocks: 0, tail: 0 };
    let Some(block) = block.map(|b| b as usize).filter(|b| b.is_power_of_two()) else { return stores };
    let Some(end) = start.checked_add(len) else { return stores };
    let Some(first) = start.checked_add(block - 1).map(|a| a & !(block - 1)) else { return stores };
    let last = end & !(block - 1);
    if first >= last {
        return stores;
    }
    ZeroPlan { head: first - start, first_block: first, blocks: (last - first) / block, tail: end - last }
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::*;
    use crate::cache::id::Dczid;
    use crate::hw;
    use crate::sysreg::{CTR_EL0, DCZID_EL0, SCTLR_EL1};
    use tock_registers::interfaces::Readable;

    /// The real CPU. `allow_invalidate` gates DC IVAC (only [`invalidate_to_poc`] sets it).
    struct Hardware {
        allow_invalidate: bool,
    }

    impl VaBackend for Hardware {
        fn op(&mut self, op: VaOp, va: usize) {
            match op {
                VaOp::CleanPoc => hw::dc_cvac(va),
                VaOp::CleanInvalidatePoc => hw::dc_civac(va),
                // SAFETY: only invalidate_to_poc enables this, and its caller promised that the
                // range's bytes may revert to memory; partial lines never get IVAC.
                VaOp::InvalidatePoc if self.allow_invalidate => unsafe { hw::dc_ivac(va) },
                VaOp::InvalidatePoc => hw::dc_civac(va),
                VaOp::CleanPou => hw::dc_cvau(va),
                VaOp::InvalidateIcachePou => hw::ic_ivau(va),
            }
        }
        fn barrier(&mut self, b: Barrier) {
            match b {
                Barrier::DsbSy => hw::dsb_sy(),
                Barrier::DsbIsh => hw::dsb_ish(),
                Barrier::Isb => hw::isb(),
            }
        }
    }

    fn ctr() -> Ctr {
        Ctr { raw: CTR_EL0.get() }
    }

    /// DC CVAC over the range, then DSB SY: its data reaches the Point of Coherency (visible to
    /// non-coherent observers such as DMA and accesses with caches off). Returns DC count.
    pub fn clean_to_poc(start: usize, len: usize) -> Result<u64, RangeError> {
        range_op(&mut Hardware { allow_invalidate: false }, ctr(), VaOp::CleanPoc, start, len)
    }

    /// DC CIVAC over the range, then DSB SY.
    pub fn clean_invalidate_to_poc(start: usize, len: usize) -> Result<u64, RangeError> {
        range_op(&mut Hardware { allow_invalidate: false }, ctr(), VaOp::CleanInvalidatePoc, start, len)
    }

    /// Invalidates the range to PoC so the next reads fetch memory (e.g. after a DMA write).
    /// Lines only partly inside the range are cleaned and invalidated, so neighbouring bytes
    /// survive.
    ///
    /// # Safety
    /// Writes to bytes inside the range that are still only in a cache are discarded: the caller
    /// must own the range and must not rely on such writes (the bytes may revert to memory).
    pub unsafe fn invalidate_to_poc(start: usize, len: usize) -> Result<u64, RangeError> {
        invalidate_range(&mut Hardware { allow_invalidate: true }, ctr(), start, len)
    }

    /// DC CVAU over the range, then DSB ISH: data reaches the Point of Unification (where the
    /// instruction fetch and table walks of this PE see it).
    pub fn clean_to_pou(start: usize, len: usize) -> Result<u64, RangeError> {
        range_op(&mut Hardware { allow_invalidate: false }, ctr(), VaOp::CleanPou, start, len)
    }

    /// Makes code written into `[start, start + len)` executable on this PE: the IDC/DIC-aware
    /// sequence of [`sync_range`]. Returns the number of DC CVAU + IC IVAU issued.
    pub fn sync_instructions(start: usize, len: usize) -> Result<u64, RangeError> {
        sync_range(&mut Hardware { allow_invalidate: false }, ctr(), start, len)
    }

    /// IC IALLU; DSB ISH; ISB: discards every instruction-cache line of this PE.
    pub fn invalidate_icache_all() {
        hw::ic_iallu();
        hw::dsb_ish();
        hw::isb();
    }

    /// How [`zero`] zeroed a buffer.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Zeroed {
        /// DC ZVA instructions issued (each zeroes one DCZID block).
        pub zva_blocks: usize,
        /// Bytes zeroed with ordinary stores.
        pub stored: usize,
        /// Why DC ZVA was not used, when it was not.
        pub fallback: Option<&'static str>,
    }

    /// Zeroes `buf`, using DC ZVA for whole DCZID blocks when allowed: DZP = 0, BS valid, and the
    /// MMU on (with the MMU off memory is Device, where DC ZVA raises an alignment fault on
    /// hardware). Anything else, and the partial blocks at the edges, uses stores. With the MMU on,
    /// `buf` must be mapped Normal (DC ZVA to Device memory raises an alignment fault).
    pub fn zero(buf: &mut [u8]) -> Zeroed {
        let dczid = Dczid { raw: DCZID_EL0.get() };
        let fallback = if dczid.prohibited() {
            Some("DCZID_EL0.DZP=1: DC ZVA prohibited")
        } else if dczid.block().is_none() {
            Some("DCZID_EL0.BS reserved")
        } else if !SCTLR_EL1.is_set(SCTLR_EL1::M) {
            Some("MMU off: memory is Device, DC ZVA would fault")
        } else {
            None
        };
        let block = if fallback.is_none() { dczid.block() } else { None };
        let start = buf.as_ptr() as usize;
        let plan = zero_plan(start, buf.len(), block);
        let bs = block.unwrap_or(0) as usize;
        let (head, rest) = buf.split_at_mut(plan.head);
        head.fill(0);
        let (blocks, tail) = rest.split_at_mut(plan.blocks * bs);
        for k in 0..plan.blocks {
            // SAFETY: each block lies inside `blocks`, a sub-slice we hold mutably; DZP = 0 and
            // the MMU is on (checked above).
            unsafe { hw::dc_zva(blocks.as_mut_ptr() as usize + k * bs) };
        }
        tail.fill(0);
        Zeroed { zva_blocks: plan.blocks, stored: plan.head + tail.len(), fallback }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[derive(Default)]
    struct Rec(Vec<(Option<VaOp>, Option<Barrier>, usize)>);
    impl VaBackend for Rec {
        fn op(&mut self, op: VaOp, va: usize) {
            self.0.push((Some(op), None, va));
        }
        fn barrier(&mut self, b: Barrier) {
            self.0.push((None, Some(b), 0));
        }
    }
    impl Rec {
        fn ops(&self) -> Vec<(VaOp, usize)> {
            self.0.iter().filter_map(|e| e.0.map(|o| (o, e.2))).collect()
        }
    }

    /// CTR with DminLine = IminLine = 64 B, IDC = DIC = 0 (the QEMU Cortex models' shape).
    const CTR64: Ctr = Ctr { raw: 0x8444_c004 };

    #[test]
    fn stride_from_ctr() {
        let mut r = Rec::default();
        assert_eq!(range_op(&mut r, CTR64, VaOp::CleanPoc, 0x1000, 0x100), Ok(4));
        assert_eq!(r.ops(), [(VaOp::CleanPoc, 0x1000), (VaOp::CleanPoc, 0x1040), (VaOp::CleanPoc, 0x1080), (VaOp::CleanPoc, 0x10c0)]);
        assert_eq!(r.0.first().unwrap().1, Some(Barrier::DsbSy));
        assert_eq!(r.0.last().unwrap().1, Some(Barrier::DsbSy));
        // DminLine = 32 B: twice the operations.
        let ctr32 = Ctr { raw: 0x8443_c004 };
        assert_eq!(range_op(&mut Rec::default(), ctr32, VaOp::CleanPoc, 0x1000, 0x100), Ok(8));
        // Misaligned range touching 3 lines.
        assert_eq!(range_op(&mut Rec::default(), CTR64, VaOp::CleanPou, 0x103f, 0x42), Ok(3));
        assert_eq!(range_op(&mut Rec::default(), CTR64, VaOp::CleanPou, 0x1000, 0), Ok(0));
    }

    #[test]
    fn invalidate_keeps_neighbours() {
        let mut r = Rec::default();
        invalidate_range(&mut r, CTR64, 0x1010, 0xa0).unwrap(); // 0x1010..0x10b0: lines 0x1000, 0x1040, 0x1080
        assert_eq!(r.ops(), [(VaOp::CleanInvalidatePoc, 0x1000), (VaOp::InvalidatePoc, 0x1040), (VaOp::CleanInvalidatePoc, 0x1080)]);
        // Inside one line: clean+invalidate only.
        let mut r = Rec::default();
        invalidate_range(&mut r, CTR64, 0x1004, 8).unwrap();
        assert_eq!(r.ops(), [(VaOp::CleanInvalidatePoc, 0x1000)]);
        // Aligned: invalidate only.
        let mut r = Rec::default();
        invalidate_range(&mut r, CTR64, 0x1000, 0x80).unwrap();
        assert_eq!(r.ops(), [(VaOp::InvalidatePoc, 0x1000), (VaOp::InvalidatePoc, 0x1040)]);
    }

    #[test]
    fn wrapping_ranges_are_refused() {
        let mut r = Rec::default();
        assert!(range_op(&mut r, CTR64, VaOp::CleanPoc, usize::MAX - 4, 10).is_err());
        assert!(invalidate_range(&mut r, CTR64, usize::MAX - 0x3f, 0x3f).is_err(), "rounding up to a line wraps");
        assert!(sync_range(&mut r, CTR64, usize::MAX, 2).is_err());
        assert!(r.0.is_empty(), "nothing issued for a refused range");
        // The last line of the address space rounds to 2^64: refused, never a hang.
        assert!(line_span(usize::MAX - 0x3f, 0x40, 64).is_err());
        assert_eq!(line_span(usize::MAX - 0x7f, 0x40, 64), Ok((usize::MAX - 0x7f, usize::MAX - 0x3f)));
    }

    #[test]
    fn sync_follows_idc_dic() {
        let mut r = Rec::default();
        assert_eq!(sync_range(&mut r, CTR64, 0x2000, 0x80), Ok(4));
        let kinds: Vec<_> = r.0.iter().map(|e| (e.0, e.1)).collect();
        use Barrier::*;
        use VaOp::*;
        assert_eq!(
            kinds,
            [
                (None, Some(DsbIsh)),
                (Some(CleanPou), None),
                (Some(CleanPou), None),
                (None, Some(DsbIsh)),
                (Some(InvalidateIcachePou), None),
                (Some(InvalidateIcachePou), None),
                (None, Some(DsbIsh)),
                (None, Some(Isb))
            ]
        );
        // IDC = DIC = 1 (QEMU max): barriers only.
        let mut r = Rec::default();
        assert_eq!(sync_range(&mut r, Ctr { raw: 0xb444_c004 }, 0x2000, 0x80), Ok(0));
        assert_eq!(r.0.iter().map(|e| e.1).collect::<Vec<_>>(), [Some(DsbIsh), Some(Isb)]);
    }

    #[test]
    fn zero_plans() {
        assert_eq!(zero_plan(0x1000, 0x100, Some(64)), ZeroPlan { head: 0, first_block: 0x1000, blocks: 4, tail: 0 });
        assert_eq!(zero_plan(0x1001, 0x100, Some(64)), ZeroPlan { head: 63, first_block: 0x1040, blocks: 3, tail: 1 });
        assert_eq!(zero_plan(0x1001, 0x40, Some(64)).blocks, 0);
        assert_eq!(zero_plan(0x1000, 0x100, None), ZeroPlan { head: 0x100, first_block: 0x1000, blocks: 0, tail: 0 });
        assert_eq!(zero_plan(usize::MAX - 10, 5, Some(64)).blocks, 0);
        for (s, l) in [(0usize, 0usize), (3, 200), (64, 64), (65, 190)] {
            let p = zero_plan(s, l, Some(64));
            assert_eq!(p.head + p.blocks * 64 + p.tail, l);
        }
    }
}
