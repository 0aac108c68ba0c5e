//! What the model touched while it did not know which core ran (more than one vCPU under
//! round-robin TCG, no register naming the core: see "Which core runs" in the `plugin` docs),
//! so that no hazard that may follow from a misattribution is reported.
//!
//! Such a callback is attributed to the vCPU that translated its TB, which need not be the one
//! running it. The access then changes the wrong core's caches and the coherence state of its
//! lines, and a hazard can follow from that later, also in code whose core is known (a line
//! left in the wrong core's L1I, then executed there after a local IC IALLU elsewhere). So the
//! plugin reports no hazard
//! - raised while the core is not known (the engine's `attributed`);
//! - on a 4 KiB page that an unattributed data access, fetch, prefetch or by-VA maintenance
//!   touched ([`Taint::page`]);
//! - at all, once an unattributed set/way operation or IC IALLU ran (they reach lines of every
//!   page: [`Taint::everything`]), or once more than [`PAGE_LIMIT`] pages are tainted.
//!
//! Each is counted in the `model-warning` at exit. What this does not cover: a misattributed
//! fill also changes the replacement order of its set, which decides when other lines of that
//! set are evicted; a line evicted later than on the real machine could in principle show a
//! stale copy. Firmware whose cores are known from the start (TPIDR_EL1 tag, VMPIDR_EL2, one
//! vCPU, MTTCG) touches nothing here.

use std::collections::HashSet;

/// log2 of the granule tainted: a page (a by-VA operation's line and an access's line lie in
/// it; coarser than a line, so an access whose size the model splits stays covered).
pub const TAINT_SHIFT: u32 = 12;

/// Past this many tainted pages (1 GiB of 4 KiB pages) everything counts as tainted (the set
/// stays small: firmware that is never identified reports no hazard anyway).
pub const PAGE_LIMIT: usize = 1 << 18;

/// The pages (and whether everything) that unattributed model calls touched.
#[derive(Debug, Default)]
pub struct Taint {
    pages: HashSet<u64>,
    all: bool,
}

impl Taint {
    /// An unattributed call touched the bytes `[pa, pa + len)` (`len` ≥ 1).
    pub fn page(&mut self, pa: u64, len: u64) {
        if self.all {
            return;
        }
        let (first, last) = (pa >> TAINT_SHIFT, pa.saturating_add(len.max(1) - 1) >> TAINT_SHIFT);
        for p in first..=last {
            self.pages.insert(p);
        }
        if self.pages.len() > PAGE_LIMIT {
            self.everything();
        }
    }

    /// An unattributed call reached lines of any page (set/way, IC IALLU).
    pub fn everything(&mut self) {
        self.all = true;
        self.pages = HashSet::new();
    }

    /// Whether a hazard on the line at `pa` may follow from an unattributed call.
    pub fn covers(&self, pa: u64) -> bool {
        self.all || self.pages.contains(&(pa >> TAINT_SHIFT))
    }

    /// Whether anything is tainted.
    pub fn any(&self) -> bool {
        self.all || !self.pages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_everything() {
        let mut t = Taint::default();
        assert!(!t.any() && !t.covers(0x4000_0000));
        t.page(0x4000_0ff8, 16);
        assert!(t.covers(0x4000_0000) && t.covers(0x4000_1fc0), "both pages of a straddling access");
        assert!(!t.covers(0x4000_2000) && !t.covers(0x3fff_ffc0));
        t.page(u64::MAX - 3, 8);
        assert!(t.covers(!63), "no overflow at the top of the address space");
        t.everything();
        assert!(t.covers(0x1234_5678) && t.any());
    }

    #[test]
    fn too_many_pages_taint_everything() {
        let mut t = Taint::default();
        for p in 0..=PAGE_LIMIT as u64 {
            t.page(p << TAINT_SHIFT, 1);
        }
        assert!(t.covers(0xdead_0000_0000), "past the limit");
        assert!(t.pages.is_empty());
    }
}
