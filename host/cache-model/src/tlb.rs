//! The TLB model: per vCPU an L1 instruction TLB, an L1 data TLB and a unified L2 TLB, with the
//! entries, associativity and page sizes of the profile's core (Cortex-A72 for `rpi4`, Cortex-A76
//! for `rpi5` and `dsu2x4`), and the cost of a miss in the latency table.
//!
//! Rules (docs/cache-model.md, "TLBs"):
//! - **T1** every translated access looks its page up: a data access once per L1D line it
//!   touches (the unit of the `model` counts), an instruction fetch once per L1I line the model
//!   counts (so the lookups never depend on where QEMU ends a block). Nothing is looked up
//!   while the regime's MMU is off (no translation).
//! - **T2** an entry holds the largest page size that TLB stores that fits in the mapping
//!   the guest's tables give (a 2 MiB block is one 1 MiB entry in an A72 L1 TLB, one 2 MiB
//!   entry in its L2 TLB): the TRMs' "the TLB stores all page sizes and is responsible for
//!   breaking these down in to smaller pages when required for the data or instruction L1 TLB".
//! - **T3** an L1 miss looks the L2 TLB up; an L2 miss is a table walk of as many descriptor
//!   reads as the walk took (4 for a 4 KiB page with a 48-bit VA, 3 for a 2 MiB block), and
//!   fills the L2 TLB; every L1 miss fills the L1 TLB. Replacement: LRU in every TLB (the
//!   TRMs name no policy: an assumption).
//! - **T4** cost (data side only, like the latency table: fetches cost nothing): an L1 data TLB
//!   hit costs nothing beyond the L1D latency (the A76 TRM: "a single CLK cycle access",
//!   overlapped with the cache lookup); an L2 TLB hit costs `l2_hit_cycles`; a walk costs
//!   `walk_level_cycles` per descriptor read (each read priced as an L2 cache hit: an
//!   estimate; the walk's own accesses are not sent through the modelled caches).
//! - **T5** invalidation: a TLBI by VA (any level form, any regime) drops every entry of every
//!   regime whose page holds the VA; by ASID or all (VMALLE1, ALLE2, …) drops every entry
//!   (ASIDs and VMIDs are not modelled: a superset). A local form reaches the issuing vCPU's
//!   TLBs, a broadcast form (Inner or Outer Shareable) every vCPU's. A write to TTBR or TCR
//!   invalidates nothing: the architecture keeps TLB entries until a TLBI (Arm ARM D8.13,
//!   "TLB maintenance"; an ASID or TTBR change needs none on silicon either when ASIDs differ,
//!   and TCR changes require a TLBI by software).
//!
//! The reference for T1–T5 is an independent small TLB in the tests (`tests_tlb.rs`).

use std::ops::{Add, Sub};

/// One TLB's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbShape {
    /// Entries.
    pub entries: u32,
    /// Ways (= entries: fully associative).
    pub ways: u32,
    /// log2 of the page sizes it stores with the 4 KiB granule, ascending (12 first).
    pub sizes: &'static [u32],
}

impl TlbShape {
    /// The entry size (log2) that holds a piece of a mapping of 2^`mapping` bytes (rule T2).
    pub fn entry_shift(&self, mapping: u32) -> u32 {
        self.sizes.iter().copied().filter(|&s| s <= mapping).max().unwrap_or(12)
    }

    /// Sets.
    pub fn sets(&self) -> u32 {
        self.entries / self.ways.max(1)
    }

    /// `48` or `1024:4`-style text for records.
    pub fn describe(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|&s| size_name(s)).collect();
        let assoc = if self.ways == self.entries { "fully associative".to_string() } else { format!("{}-way", self.ways) };
        format!("{} entries {assoc} ({})", self.entries, sizes.join("/"))
    }
}

fn size_name(shift: u32) -> String {
    match shift {
        s if s >= 30 => format!("{}G", 1u64 << (s - 30)),
        s if s >= 20 => format!("{}M", 1u64 << (s - 20)),
        s => format!("{}K", 1u64 << (s - 10)),
    }
}

/// A profile's TLBs and the latency-table rows of a miss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlbGeometry {
    /// L1 instruction TLB.
    pub l1i: TlbShape,
    /// L1 data TLB.
    pub l1d: TlbShape,
    /// Unified L2 TLB.
    pub l2: TlbShape,
    /// Cycles of a data access whose translation missed the L1 data TLB and hit the L2 TLB.
    pub l2_hit_cycles: u32,
    /// Cycles per descriptor read of a table walk.
    pub walk_level_cycles: u32,
    /// Where the figures come from.
    pub reference: &'static str,
}

/// Sources of the `rpi4` TLBs.
pub const RPI4_TLB_REF: &str = "Arm Cortex-A72 MPCore TRM (ARM 100095_0002_04), 5.2 TLB organization: L1 instruction TLB \
     48 entries fully associative, L1 data TLB 32 entries fully associative, both 4KB/64KB/1MB pages; 5.2.3 L2 TLB 1024 \
     entries 4-way, 4KB/64KB/1MB/16MB and 2MB/1GB (4KB granule) pages, \"a variable number of cycles\": L2 TLB hit 4 \
     cycles is an estimate; walk 21 cycles per descriptor read (the profile's L2 hit: an estimate); LRU assumed (the TRM \
     names no TLB replacement policy)";
/// Sources of the `rpi5` (and `dsu2x4`) TLBs.
pub const RPI5_TLB_REF: &str = "Arm Cortex-A76 Core TRM (ARM 100798), A5.2 TLB organization: A5.2.1 instruction L1 TLB \
     48 entries fully associative (4KB/16KB/64KB/2MB/32MB), A5.2.2 data L1 TLB 48 entries fully associative \
     (4KB/16KB/64KB/2MB/512MB), A5.2.3 L2 TLB 1280 entries 5-way (4KB..1GB), \"access to the L2 TLB usually takes three \
     cycles\"; walk 12 cycles per descriptor read (the profile's L2 hit: an estimate; the A76's walk caches are not \
     modelled); LRU assumed (the TRM names no TLB replacement policy)";

impl TlbGeometry {
    /// The TLBs of a built-in profile; `None` for a profile without TLBs (`guest`).
    pub fn profile(name: &str) -> Option<Self> {
        // With the 4 KiB granule: 4 KiB pages, and the block sizes each TLB holds (64 KiB,
        // 16 KiB, 32 MiB and 512 MiB are contiguous-hint or other-granule sizes: not used).
        const A72_L1: &[u32] = &[12, 20];
        const A72_L2: &[u32] = &[12, 20, 21, 30];
        const A76_L1: &[u32] = &[12, 21];
        const A76_L2: &[u32] = &[12, 21, 30];
        match name {
            "rpi4" => Some(Self {
                l1i: TlbShape { entries: 48, ways: 48, sizes: A72_L1 },
                l1d: TlbShape { entries: 32, ways: 32, sizes: A72_L1 },
                l2: TlbShape { entries: 1024, ways: 4, sizes: A72_L2 },
                l2_hit_cycles: 4,
                walk_level_cycles: 21,
                reference: RPI4_TLB_REF,
            }),
            "rpi5" | "dsu2x4" => Some(Self {
                l1i: TlbShape { entries: 48, ways: 48, sizes: A76_L1 },
                l1d: TlbShape { entries: 48, ways: 48, sizes: A76_L1 },
                l2: TlbShape { entries: 1280, ways: 5, sizes: A76_L2 },
                l2_hit_cycles: 3,
                walk_level_cycles: 12,
                reference: RPI5_TLB_REF,
            }),
            _ => None,
        }
    }

    /// Modelled cycles the data-side translations in `c` add (rule T4).
    pub fn cycles(&self, c: &TlbCounts) -> u64 {
        c.data_l2_hits
            .wrapping_mul(u64::from(self.l2_hit_cycles))
            .wrapping_add(c.data_walk_levels.wrapping_mul(u64::from(self.walk_level_cycles)))
    }
}

/// TLB counters (the `tlb` record's fields; `+`/`-` wrap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbCounts {
    /// L1 instruction TLB hits.
    pub l1i_hits: u64,
    /// L1 instruction TLB misses.
    pub l1i_misses: u64,
    /// L1 data TLB hits.
    pub l1d_hits: u64,
    /// L1 data TLB misses.
    pub l1d_misses: u64,
    /// L2 TLB hits (both sides).
    pub l2_hits: u64,
    /// L2 TLB misses = table walks (both sides).
    pub l2_misses: u64,
    /// Of the L2 hits, those of data accesses (priced).
    pub data_l2_hits: u64,
    /// Of the walks, those of data accesses (priced).
    pub data_walks: u64,
    /// Descriptor reads of the data accesses' walks.
    pub data_walk_levels: u64,
}

macro_rules! each_count {
    ($a:expr, $b:expr, $op:ident) => {
        TlbCounts {
            l1i_hits: $a.l1i_hits.$op($b.l1i_hits),
            l1i_misses: $a.l1i_misses.$op($b.l1i_misses),
            l1d_hits: $a.l1d_hits.$op($b.l1d_hits),
            l1d_misses: $a.l1d_misses.$op($b.l1d_misses),
            l2_hits: $a.l2_hits.$op($b.l2_hits),
            l2_misses: $a.l2_misses.$op($b.l2_misses),
            data_l2_hits: $a.data_l2_hits.$op($b.data_l2_hits),
            data_walks: $a.data_walks.$op($b.data_walks),
            data_walk_levels: $a.data_walk_levels.$op($b.data_walk_levels),
        }
    };
}

impl Add for TlbCounts {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        each_count!(self, o, wrapping_add)
    }
}

impl Sub for TlbCounts {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        each_count!(self, o, wrapping_sub)
    }
}

impl TlbCounts {
    /// Whether nothing was looked up.
    pub fn is_empty(&self) -> bool {
        self.l1i_hits + self.l1i_misses + self.l1d_hits + self.l1d_misses == 0
    }
}

/// Which L1 TLB a lookup goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Instruction fetch.
    Instruction,
    /// Load or store (and DC ZVA).
    Data,
}

/// What a TLBI reaches (rule T5), decoded by `decode::tlbi_scope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbiScope {
    /// Entries holding this VA, of every regime.
    Va(u64),
    /// Every entry (by ASID, by VMID, all, by range, by IPA).
    All,
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// (VA >> shift) + 1; 0 = invalid.
    tag: u64,
    shift: u8,
    regime: u8,
    stamp: u64,
}

/// One set-associative (or fully associative) LRU TLB.
#[derive(Clone, Debug)]
struct Tlb {
    sets: usize,
    ways: usize,
    entries: Vec<Entry>,
    clock: u64,
    /// Index of the most recently hit or filled entry (a cheap first probe).
    mru: usize,
}

impl Tlb {
    fn new(shape: &TlbShape) -> Self {
        let ways = shape.ways.max(1) as usize;
        let sets = shape.sets().max(1) as usize;
        Self { sets, ways, entries: vec![Entry::default(); sets * ways], clock: 0, mru: 0 }
    }

    #[inline]
    fn set_of(&self, va: u64, shift: u32) -> usize {
        ((va >> shift) as usize % self.sets) * self.ways
    }

    /// Looks `va` up as an entry of 2^`shift` bytes of `regime`; a hit becomes most recent.
    #[inline]
    fn lookup(&mut self, va: u64, shift: u32, regime: u8) -> bool {
        let tag = (va >> shift) + 1;
        let is = |e: &Entry| e.tag == tag && u32::from(e.shift) == shift && e.regime == regime;
        self.clock += 1;
        if is(&self.entries[self.mru]) {
            self.entries[self.mru].stamp = self.clock;
            return true;
        }
        let base = self.set_of(va, shift);
        for i in base..base + self.ways {
            if is(&self.entries[i]) {
                self.entries[i].stamp = self.clock;
                self.mru = i;
                return true;
            }
        }
        false
    }

    /// Fills `va`'s entry: the lowest invalid way, else the least recent.
    fn fill(&mut self, va: u64, shift: u32, regime: u8) {
        let base = self.set_of(va, shift);
        let set = &self.entries[base..base + self.ways];
        let victim = set
            .iter()
            .position(|e| e.tag == 0)
            .unwrap_or_else(|| set.iter().enumerate().min_by_key(|(_, e)| e.stamp).map(|(i, _)| i).expect("at least one way"));
        self.clock += 1;
        self.entries[base + victim] = Entry { tag: (va >> shift) + 1, shift: shift as u8, regime, stamp: self.clock };
        self.mru = base + victim;
    }

    fn invalidate(&mut self, scope: TlbiScope) {
        for e in self.entries.iter_mut().filter(|e| e.tag != 0) {
            let hit = match scope {
                TlbiScope::All => true,
                TlbiScope::Va(va) => (va & VA_MASK) >> e.shift == (e.tag - 1) & (VA_MASK >> e.shift),
            };
            if hit {
                *e = Entry::default();
            }
        }
    }
}

/// The VA bits a TLBI by VA names (`VA[55:0]`).
const VA_MASK: u64 = (1 << 56) - 1;

#[derive(Clone, Debug)]
struct CoreTlbs {
    l1i: Tlb,
    l1d: Tlb,
    l2: Tlb,
}

/// Every vCPU's TLBs and their counts.
#[derive(Clone, Debug)]
pub struct Tlbs {
    geometry: TlbGeometry,
    cpus: Vec<CoreTlbs>,
    counts: TlbCounts,
}

impl Tlbs {
    /// Empty TLBs of `geometry` for `vcpus` vCPUs.
    pub fn new(geometry: TlbGeometry, vcpus: usize) -> Self {
        let core = CoreTlbs { l1i: Tlb::new(&geometry.l1i), l1d: Tlb::new(&geometry.l1d), l2: Tlb::new(&geometry.l2) };
        Self { cpus: vec![core; vcpus.max(1)], geometry, counts: TlbCounts::default() }
    }

    /// The geometry.
    pub fn geometry(&self) -> &TlbGeometry {
        &self.geometry
    }

    /// The counts so far.
    pub fn counts(&self) -> TlbCounts {
        self.counts
    }

    /// One lookup (rules T1–T3) by `cpu` of `va` in `regime` (0..3), mapped by a block or page
    /// of 2^`mapping` bytes whose walk reads `levels` descriptors.
    #[inline]
    pub fn lookup(&mut self, cpu: usize, side: Side, va: u64, regime: u8, mapping: u32, levels: u8) {
        let g = &self.geometry;
        let (s1, s2) = match side {
            Side::Instruction => (g.l1i.entry_shift(mapping), g.l2.entry_shift(mapping)),
            Side::Data => (g.l1d.entry_shift(mapping), g.l2.entry_shift(mapping)),
        };
        let cpu = cpu.min(self.cpus.len() - 1);
        let t = &mut self.cpus[cpu];
        let c = &mut self.counts;
        let l1 = match side {
            Side::Instruction => &mut t.l1i,
            Side::Data => &mut t.l1d,
        };
        if l1.lookup(va, s1, regime) {
            match side {
                Side::Instruction => c.l1i_hits += 1,
                Side::Data => c.l1d_hits += 1,
            }
            return;
        }
        match side {
            Side::Instruction => c.l1i_misses += 1,
            Side::Data => c.l1d_misses += 1,
        }
        let data = side == Side::Data;
        if t.l2.lookup(va, s2, regime) {
            c.l2_hits += 1;
            c.data_l2_hits += u64::from(data);
        } else {
            c.l2_misses += 1;
            if data {
                c.data_walks += 1;
                c.data_walk_levels += u64::from(levels);
            }
            t.l2.fill(va, s2, regime);
        }
        let l1 = match side {
            Side::Instruction => &mut t.l1i,
            Side::Data => &mut t.l1d,
        };
        l1.fill(va, s1, regime);
    }

    /// `n` L1 hits counted without a lookup (the plugin's shortcut: the access's page is the
    /// L1 TLB's most recent entry, whose hit changes nothing).
    pub fn credit_hits(&mut self, side: Side, n: u64) {
        match side {
            Side::Instruction => self.counts.l1i_hits += n,
            Side::Data => self.counts.l1d_hits += n,
        }
    }

    /// A TLBI (rule T5) by `cpu`: every vCPU's TLBs when `broadcast`, else `cpu`'s.
    pub fn invalidate(&mut self, cpu: usize, scope: TlbiScope, broadcast: bool) {
        let n = self.cpus.len();
        for (k, t) in self.cpus.iter_mut().enumerate() {
            if broadcast || k == cpu.min(n - 1) {
                t.l1i.invalidate(scope);
                t.l1d.invalidate(scope);
                t.l2.invalidate(scope);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_sizes_follow_the_trms() {
        let a72 = TlbGeometry::profile("rpi4").unwrap();
        assert_eq!(a72.l1d.entry_shift(21), 20, "a 2 MiB block is a 1 MiB entry in the A72's L1 TLB");
        assert_eq!(a72.l2.entry_shift(21), 21);
        assert_eq!(a72.l2.entry_shift(30), 30);
        assert_eq!(a72.l1d.entry_shift(12), 12);
        let a76 = TlbGeometry::profile("rpi5").unwrap();
        assert_eq!(a76.l1d.entry_shift(30), 21, "a 1 GiB block is a 2 MiB entry in the A76's L1 TLB");
        assert_eq!((a76.l2.sets(), a76.l2.ways), (256, 5));
        assert_eq!(a72.l2.sets(), 256);
        assert!(TlbGeometry::profile("guest").is_none());
        assert_eq!(a76.l1d.describe(), "48 entries fully associative (4K/2M)");
    }

    #[test]
    fn walk_cost_is_levels_times_cost() {
        let g = TlbGeometry::profile("rpi5").unwrap();
        let mut t = Tlbs::new(g.clone(), 1);
        t.lookup(0, Side::Data, 0x1000, 1, 12, 4);
        t.lookup(0, Side::Data, 0x1008, 1, 12, 4);
        let c = t.counts();
        assert_eq!((c.l1d_hits, c.l1d_misses, c.l2_misses, c.data_walk_levels), (1, 1, 1, 4));
        assert_eq!(g.cycles(&c), 4 * 12);
    }

    #[test]
    fn counts_add_and_subtract() {
        let a = TlbCounts { l1d_hits: 5, l2_misses: 2, ..TlbCounts::default() };
        let b = TlbCounts { l1d_hits: 3, l2_misses: 1, ..TlbCounts::default() };
        assert_eq!((a - b).l1d_hits, 2);
        assert_eq!((a + b).l2_misses, 3);
        assert!(TlbCounts::default().is_empty());
    }
}
