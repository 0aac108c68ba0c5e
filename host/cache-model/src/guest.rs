//! What the plugin knows about the guest: SCTLR_EL1, the attribute windows the kernel declared,
//! and virtual-to-physical translations learned from the guest's own accesses.
//!
//! # Attributes
//! Data accesses: SCTLR.M = 0 → Device; M = 1, C = 0 → Non-cacheable (Device stays Device);
//! M = 1, C = 1 → the attribute of the most recently declared window containing the VA, else
//! Normal write-back. Instruction fetches: SCTLR.I = 0 → Non-cacheable; I = 1 with M = 0 →
//! cacheable (write-through, as the architecture makes them); I = 1 with M = 1 → the window's
//! attribute, else write-back. The plugin starts with SCTLR = 0 (everything bypasses) until the
//! kernel reports SCTLR (marker) or writes it (`MSR SCTLR_EL1` is decoded too).
//!
//! # Translating a VA operand (DC … VAC/VAU, DC ZVA, IC IVAU)
//! Plugin API v4 cannot translate a VA, so the plugin learns translations: every memory access
//! reports both its VA and its PA. In order:
//! 1. **learned page**: a direct-mapped table of 4 KiB pages filled by accesses (like a TLB; any
//!    TLBI empties it);
//! 2. **window**: the VA lies in a declared window whose VA→PA offset is known: declared with the
//!    window (protocol v2: the window marker's PA), else learned from the first access anywhere
//!    in that window (the kernel's windows each map one contiguous physical range);
//! 3. **identity**: PA = VA (the kernel runs identity-mapped outside its windows). Counted
//!    separately in the `model-run` record so a wrong guess cannot hide.

use crate::hierarchy::Attr;

const SCTLR_M: u64 = 1 << 0;
const SCTLR_C: u64 = 1 << 2;
const SCTLR_I: u64 = 1 << 12;
const PAGE_SHIFT: u32 = 12;
const RTLB_ENTRIES: usize = 1 << 12;

/// A declared window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First VA.
    pub va: u64,
    /// Length in bytes (> 0).
    pub len: u64,
    /// Attribute of the window.
    pub attr: Attr,
    /// PA − VA: declared with the window, or learned from the first access inside it.
    pub offset: Option<u64>,
}

impl Window {
    fn contains(&self, va: u64) -> bool {
        va.wrapping_sub(self.va) < self.len
    }
}

/// How a VA was translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translation {
    /// From a learned page.
    Learned,
    /// From a window's learned offset.
    Window,
    /// Guessed PA = VA.
    Identity,
}

/// Guest state the attribute and translation decisions need.
#[derive(Clone, Debug)]
pub struct Guest {
    /// SCTLR_EL1 per core (index = the model's vCPU): each core turns its MMU and caches on
    /// by itself (a secondary starts with them off while the others run with them on).
    sctlr: Vec<u64>,
    /// In declaration order; the last containing window wins.
    windows: Vec<Window>,
    /// (VA page + 1, PA page); 0 = empty.
    rtlb: Vec<(u64, u64)>,
}

impl Default for Guest {
    fn default() -> Self {
        Self::new()
    }
}

impl Guest {
    /// MMU and caches off, no windows, nothing learned.
    pub fn new() -> Self {
        Self { sctlr: Vec::new(), windows: Vec::new(), rtlb: vec![(0, 0); RTLB_ENTRIES] }
    }

    /// Records a new SCTLR_EL1 value of core `cpu`.
    pub fn set_sctlr(&mut self, cpu: usize, v: u64) {
        if self.sctlr.len() <= cpu {
            self.sctlr.resize(cpu + 1, 0);
        }
        self.sctlr[cpu] = v;
    }

    /// The last SCTLR_EL1 value seen on core `cpu` (0, MMU and caches off, before any).
    pub fn sctlr(&self, cpu: usize) -> u64 {
        self.sctlr.get(cpu).copied().unwrap_or(0)
    }

    /// Declares, replaces (same start) or removes (`len` 0) a window; `pa` is the physical
    /// address of its first byte when the kernel told it (protocol v2), else it is learned.
    pub fn window(&mut self, va: u64, len: u64, attr: Attr, pa: Option<u64>) {
        self.windows.retain(|w| w.va != va);
        if len > 0 {
            self.windows.push(Window { va, len, attr, offset: pa.map(|pa| pa.wrapping_sub(va)) });
        }
    }

    /// The declared windows.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    fn window_at(&self, va: u64) -> Option<&Window> {
        self.windows.iter().rev().find(|w| w.contains(va))
    }

    /// Attribute of a data access at `va` by core `cpu`.
    pub fn data_attr(&self, cpu: usize, va: u64) -> Attr {
        let sctlr = self.sctlr(cpu);
        if sctlr & SCTLR_M == 0 {
            return Attr::Device;
        }
        let mapped = self.window_at(va).map_or(Attr::NormalWriteBack, |w| w.attr);
        if sctlr & SCTLR_C == 0 && mapped != Attr::Device {
            return Attr::NormalNonCacheable;
        }
        mapped
    }

    /// Attribute of an instruction fetch at `va` by core `cpu`.
    pub fn fetch_attr(&self, cpu: usize, va: u64) -> Attr {
        let sctlr = self.sctlr(cpu);
        if sctlr & SCTLR_I == 0 {
            return Attr::NormalNonCacheable;
        }
        if sctlr & SCTLR_M == 0 {
            return Attr::NormalWriteThrough;
        }
        self.window_at(va).map_or(Attr::NormalWriteBack, |w| w.attr)
    }

    /// Whether every byte of the 4 KiB page holding `va` has the same attribute (no window
    /// starts or ends inside it), so the plugin may cache the attribute per page.
    pub fn page_uniform(&self, va: u64) -> bool {
        let start = va & !((1 << PAGE_SHIFT) - 1);
        let end = start + (1 << PAGE_SHIFT);
        self.windows.iter().all(|w| {
            let w_end = w.va.wrapping_add(w.len);
            let inside = |x: u64| x > start && x < end;
            !inside(w.va) && !inside(w_end)
        })
    }

    /// Learns a translation from an access that went to `pa` through `va`; returns whether that
    /// changed what [`Guest::translate`] answers for any address.
    pub fn learn(&mut self, va: u64, pa: u64) -> bool {
        let vpn = va >> PAGE_SHIFT;
        let entry = &mut self.rtlb[(vpn as usize) & (RTLB_ENTRIES - 1)];
        let mut changed = *entry != (vpn + 1, pa >> PAGE_SHIFT);
        *entry = (vpn + 1, pa >> PAGE_SHIFT);
        if let Some(w) = self.windows.iter_mut().rev().find(|w| w.contains(va)) {
            if w.offset.is_none() {
                w.offset = Some(pa.wrapping_sub(va));
                changed = true;
            }
        }
        changed
    }

    /// Forgets learned pages (TLBI). Window offsets stay: a window is re-declared when remapped.
    pub fn forget_pages(&mut self) {
        self.rtlb.fill((0, 0));
    }

    /// Translates an operand VA (see the module documentation for the order).
    pub fn translate(&self, va: u64) -> (u64, Translation) {
        let vpn = va >> PAGE_SHIFT;
        let (tag, ppn) = self.rtlb[(vpn as usize) & (RTLB_ENTRIES - 1)];
        if tag == vpn + 1 {
            return (ppn << PAGE_SHIFT | (va & ((1 << PAGE_SHIFT) - 1)), Translation::Learned);
        }
        if let Some(off) = self.window_at(va).and_then(|w| w.offset) {
            return (va.wrapping_add(off), Translation::Window);
        }
        (va, Translation::Identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: u64 = SCTLR_M | SCTLR_C | SCTLR_I;

    #[test]
    fn attributes_follow_sctlr_and_windows() {
        let mut g = Guest::new();
        assert_eq!(g.data_attr(0, 0x4000_0000), Attr::Device, "MMU off");
        assert_eq!(g.fetch_attr(0, 0x4000_0000), Attr::NormalNonCacheable, "I off");
        g.set_sctlr(0, SCTLR_I);
        assert_eq!(g.fetch_attr(0, 0x4000_0000), Attr::NormalWriteThrough);
        g.set_sctlr(0, SCTLR_M);
        assert_eq!(g.data_attr(0, 0x4000_0000), Attr::NormalNonCacheable, "C off");
        g.set_sctlr(0, ON);
        assert_eq!(g.data_attr(0, 0x4000_0000), Attr::NormalWriteBack);
        g.window(0x1_0000_0000, 0x10_0000, Attr::NormalNonCacheable, None);
        g.window(0x1_0008_0000, 0x1000, Attr::NormalWriteThrough, None);
        assert_eq!(g.data_attr(0, 0x1_0000_0040), Attr::NormalNonCacheable);
        assert_eq!(g.data_attr(0, 0x1_0008_0040), Attr::NormalWriteThrough, "later window wins");
        assert_eq!(g.data_attr(0, 0x1_0010_0000), Attr::NormalWriteBack, "past the end");
        g.window(0x1_0000_0000, 0, Attr::NormalWriteBack, None);
        assert_eq!(g.data_attr(0, 0x1_0000_0040), Attr::NormalWriteBack, "removed");
        g.set_sctlr(0, SCTLR_M);
        g.window(0x900_0000, 0x1000, Attr::Device, None);
        assert_eq!(g.data_attr(0, 0x900_0000), Attr::Device);
    }

    #[test]
    fn page_uniformity() {
        let mut g = Guest::new();
        g.window(0x1_0000_0000, 0x2000, Attr::NormalNonCacheable, None);
        assert!(g.page_uniform(0x1_0000_0000));
        assert!(g.page_uniform(0x1_0000_1fff));
        g.window(0x1_0000_0800, 0x100, Attr::NormalWriteThrough, None);
        assert!(!g.page_uniform(0x1_0000_0000));
        assert!(g.page_uniform(0x1_0000_1000));
    }

    #[test]
    fn translation_order() {
        let mut g = Guest::new();
        assert_eq!(g.translate(0x4000_1234), (0x4000_1234, Translation::Identity));
        g.window(0x2_0000_0000, 0x10_0000, Attr::NormalNonCacheable, None);
        assert!(g.learn(0x2_0000_0040, 0x5000_0040), "a new page and the window's offset");
        assert!(!g.learn(0x2_0000_0100, 0x5000_0100), "nothing new");
        assert_eq!(g.translate(0x2_0000_0080), (0x5000_0080, Translation::Learned));
        assert_eq!(g.translate(0x2_0005_0080), (0x5005_0080, Translation::Window));
        g.forget_pages();
        assert_eq!(g.translate(0x2_0000_0080), (0x5000_0080, Translation::Window));
        g.window(0x2_0000_0000, 0x10_0000, Attr::NormalNonCacheable, None);
        assert_eq!(g.translate(0x2_0000_0080), (0x2_0000_0080, Translation::Identity), "re-declared: offset unknown");
    }

    #[test]
    fn declared_pa_translates_before_any_access() {
        let mut g = Guest::new();
        g.window(0x2_0000_0000, 0x10_0000, Attr::NormalNonCacheable, Some(0x5000_0000));
        assert_eq!(g.translate(0x2_0005_0080), (0x5005_0080, Translation::Window));
        assert_eq!(g.translate(0x2_0010_0000), (0x2_0010_0000, Translation::Identity), "past the end");
        // A learned page still comes first, and an access does not overwrite the declared offset.
        assert!(g.learn(0x2_0000_0040, 0x6000_0040));
        assert_eq!(g.translate(0x2_0000_0080), (0x6000_0080, Translation::Learned));
        assert_eq!(g.translate(0x2_0001_0000), (0x5001_0000, Translation::Window));
        // A PA above the VA (the first window's is below it), and a window re-declared without a PA.
        g.window(0x1000, 0x1000, Attr::Device, Some(0x9000_0000));
        assert_eq!(g.translate(0x1010), (0x9000_0010, Translation::Window));
        g.window(0x2_0000_0000, 0x10_0000, Attr::NormalNonCacheable, None);
        assert_eq!(g.translate(0x2_0001_0000), (0x2_0001_0000, Translation::Identity), "re-declared without a PA");
    }
}
