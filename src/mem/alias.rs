//! Alias windows: one physical range of the test arena mapped at one virtual window per memory
//! type, so the same bytes can be reached as Normal WB, WT, NC and as the three Device types.
//!
//! Window `i` (in [`MemAttr::ALL`] order) maps physical address `pa` at
//! `WINDOW_BASE + i * WINDOW_STRIDE + pa`: the window's top hex digits name its type
//! (`0x1000_…` normal-wb, `0x1100_…` normal-wt, `0x1200_…` normal-nc, `0x1300_…` device-ngnrne,
//! `0x1400_…` device-ngnre, `0x1500_…` device-gre) and a virtual address has the same alignment
//! as its physical address, so windows use the largest blocks the arena allows. Everything
//! between windows is unmapped (translation faults).
//!
//! All windows are read-write and execute-never; the Normal ones inner shareable.

use alloc::vec::Vec;

use super::{
    attr::{Attributes, MemAttr},
    table::{page_aligned, PAGE_SIZE},
    Error,
};

#[cfg(target_os = "none")]
pub use super::mmu::{window, windows};

/// Virtual address of the first window's physical address 0.
pub const WINDOW_BASE: u64 = 0x1000_0000_0000;
/// Distance between windows (1 TiB): physical addresses must lie below it.
pub const WINDOW_STRIDE: u64 = 1 << 40;

/// Virtual address of the hint window's physical address 0 (window slot 6, `0x1600_…`): the
/// one alias of the test arena mapped through MAIR's hint slot, whose type is the allocation
/// hint selected now ([`MemAttr::HINTS`]; `mem::mmu::select_hint`).
pub const HINT_BASE: u64 = WINDOW_BASE + 6 * WINDOW_STRIDE;

/// Base of a virtual range (window slot 15) kept free for tests' temporary mappings
/// (`SCRATCH_BASE + pa`, like a window).
pub const SCRATCH_BASE: u64 = WINDOW_BASE + 15 * WINDOW_STRIDE;

/// One alias of the test arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AliasWindow {
    /// Memory type of every access through this window.
    pub attr: MemAttr,
    /// `normal-wb`, `normal-wt`, `normal-nc`, `device-ngnrne`, `device-ngnre`, `device-gre`.
    pub name: &'static str,
    /// Virtual start.
    pub va: usize,
    /// Physical start (the same for every window).
    pub pa: usize,
    /// Length in bytes.
    pub len: usize,
}

impl AliasWindow {
    /// The mapping's attributes.
    pub const fn attributes(&self) -> Attributes {
        Attributes::data(self.attr)
    }

    /// Virtual address of `offset` bytes into the window, if inside it.
    pub fn at(&self, offset: usize) -> Option<usize> {
        (offset < self.len).then_some(self.va + offset)
    }

    /// A raw pointer `offset` bytes into the window (inside it, else `None`).
    pub fn ptr<T>(&self, offset: usize) -> Option<*mut T> {
        let end = offset.checked_add(core::mem::size_of::<T>())?;
        (end <= self.len).then_some((self.va + offset) as *mut T)
    }

    /// True when `va` is inside the window.
    pub fn contains(&self, va: usize) -> bool {
        va >= self.va && va - self.va < self.len
    }
}

/// The virtual address of physical `pa` in the window for `attr`.
pub const fn window_va(attr: MemAttr, pa: u64) -> u64 {
    let mut i = 0;
    while i < MemAttr::ALL.len() && MemAttr::ALL[i] as u8 != attr as u8 {
        i += 1;
    }
    WINDOW_BASE + i as u64 * WINDOW_STRIDE + pa
}

/// The hint window over the same physical `span` as the windows of [`plan`] (which checks it),
/// holding `hint` (one of [`MemAttr::HINTS`]).
pub fn hint_window(span: (usize, usize), hint: MemAttr) -> AliasWindow {
    AliasWindow { attr: hint, name: hint.name(), va: (HINT_BASE + span.0 as u64) as usize, pa: span.0, len: span.1 }
}

/// The whole arena trimmed inward to pages: the default span of the windows.
pub fn default_span(arena: (usize, usize)) -> (usize, usize) {
    let start = arena.0.next_multiple_of(PAGE_SIZE as usize);
    let end = (arena.0.saturating_add(arena.1)) / PAGE_SIZE as usize * PAGE_SIZE as usize;
    (start, end.saturating_sub(start))
}

/// Plans one window per memory type over the physical `span` (start, length), which must lie
/// inside `arena` (start, length) and be page-aligned.
pub fn plan(arena: (usize, usize), span: (usize, usize)) -> Result<Vec<AliasWindow>, Error> {
    let (pa, len) = (span.0 as u64, span.1 as u64);
    if len == 0 {
        return Err(Error::Empty { va: window_va(MemAttr::NormalWriteBack, pa) });
    }
    let inside = span.0 >= arena.0 && span.0.checked_add(span.1).is_some_and(|e| arena.0.checked_add(arena.1).is_some_and(|a| e <= a));
    if !inside {
        return Err(Error::OutsideArena { pa, len, arena_start: arena.0 as u64, arena_len: arena.1 as u64 });
    }
    page_aligned(&[("physical address", pa), ("length", len)])?;
    if pa + len > WINDOW_STRIDE {
        return Err(Error::PaOutOfRange { pa, len, limit: WINDOW_STRIDE });
    }
    Ok(MemAttr::ALL
        .into_iter()
        .map(|attr| AliasWindow { attr, name: attr.name(), va: window_va(attr, pa) as usize, pa: span.0, len: span.1 })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARENA: (usize, usize) = (0x4140_0000, 0x1ec0_0000);

    #[test]
    fn six_windows_over_the_arena() {
        let w = plan(ARENA, default_span(ARENA)).unwrap();
        assert_eq!(w.len(), 6);
        assert_eq!(w[0].name, "normal-wb");
        assert_eq!(w[0].va, 0x1000_4140_0000);
        assert_eq!(w[1].va, 0x1100_4140_0000);
        assert_eq!(w[5].name, "device-gre");
        assert_eq!(w[5].va, 0x1500_4140_0000);
        assert!(w.iter().all(|w| w.pa == ARENA.0 && w.len == ARENA.1));
        assert!(w.iter().all(|w| w.attributes().validate().is_ok() && !w.attributes().executable));
        assert_eq!(w[2].at(16), Some(0x1200_4140_0010));
        let h = hint_window(default_span(ARENA), MemAttr::NormalWriteBackTransient);
        assert_eq!((h.va, h.pa, h.len, h.name), (0x1600_4140_0000, w[0].pa, w[0].len, "normal-wb-transient"));
        assert!(w.iter().all(|w| !w.contains(h.va)));
        assert_eq!(w[2].at(ARENA.1), None);
        assert_eq!(w[2].ptr::<u64>(ARENA.1 - 8), Some((0x1200_6000_0000usize - 8) as *mut u64));
        assert_eq!(w[2].ptr::<u64>(ARENA.1 - 4), None);
        assert!(w[3].contains(0x1300_4140_0000) && !w[3].contains(0x1300_6000_0000));
    }

    #[test]
    fn windows_outside_the_arena_are_refused() {
        let below = (ARENA.0 - 0x1000, 0x2000);
        assert!(matches!(plan(ARENA, below), Err(Error::OutsideArena { pa: 0x413f_f000, len: 0x2000, .. })));
        let past = (ARENA.0 + ARENA.1 - 0x1000, 0x2000);
        assert!(matches!(plan(ARENA, past), Err(Error::OutsideArena { .. })));
        assert!(matches!(plan(ARENA, (usize::MAX - 0xfff, 0x2000)), Err(Error::OutsideArena { .. })));
        assert_eq!(plan(ARENA, (ARENA.0 + 8, 0x1000)), Err(Error::Unaligned { what: "physical address", value: 0x4140_0008 }));
        assert!(matches!(plan(ARENA, (ARENA.0, 0)), Err(Error::Empty { .. })));
        assert!(plan(ARENA, (ARENA.0 + 0x10_0000, 0x10_0000)).is_ok());
    }

    #[test]
    fn span_trims_to_pages_and_limits_pa() {
        assert_eq!(default_span((0x4140_0010, 0x3000)), (0x4140_1000, 0x2000));
        assert_eq!(default_span((0x10, 0x100)), (0x1000, 0));
        let far = ((1usize << 40) - 0x1000, 0x2000);
        assert!(matches!(plan(far, far), Err(Error::PaOutOfRange { .. })));
    }
}
