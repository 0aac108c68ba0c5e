//! The cache hierarchy: per-vCPU L1I and L1D, then L2 and an optional L3 (each shared or per
//! vCPU), with the access, write-back and maintenance rules below. Tags only, no data.
//!
//! # Rules (the reference simulator in `reference.rs` implements the same rules independently)
//!
//! 1. **Demand access** (a read, an instruction fetch, or a write to Normal write-back memory)
//!    looks the line up in L1 (I for fetches, D otherwise); a hit makes it most recent (LRU).
//!    A miss looks it up in L2, then L3, then memory; on the way back every level that missed
//!    allocates the line clean, the deepest first, and L1 last (dirty for a write-back write).
//!    Levels hold lines independently, except for rule 18's inclusion; nothing is exclusive.
//! 2. **Allocation** fills the lowest invalid way, else the policy's victim. A dirty victim is
//!    written back into the next level (rule 3), or to memory from the last level; either way
//!    it counts one `writebacks` at the evicting level.
//! 3. **Write-back into a level**: if the line is there it becomes dirty (recency unchanged);
//!    otherwise it is allocated dirty (rule 2). It is not a demand access of that level.
//! 4. **Write to Normal write-through memory**: every level in turn counts an access and a hit
//!    or a miss (a hit makes the line most recent); nothing is allocated and nothing becomes
//!    dirty (a line that is already dirty stays dirty).
//! 5. **Non-cacheable and Device** accesses touch no cache: they count `bypass` at their L1.
//! 6. **By address to the Point of Coherency** (DC CIVAC/CVAC/IVAC): every data or unified
//!    cache of every vCPU at every level holding the line is cleaned (a dirty line counts one
//!    `writebacks` there and goes to memory), invalidated (dirty data discarded), or both.
//!    Each level counts one `maint`.
//! 7. **By address to the Point of Unification** (DC CVAU): every vCPU's L1D is cleaned; the
//!    data is written back into L2 (rule 3). L1D counts one `maint`.
//! 8. **By set/way** (DC ISW/CSW/CISW): one slot of the issuing vCPU's cache at that level
//!    (L1D at level 1). Cleaning writes a dirty line back into the next level (rule 3) or memory.
//!    The level counts one `maint`.
//! 9. **DC ZVA** on write-back memory: every L1D line of the block becomes dirty and most recent,
//!    allocated without any lower-level lookup if absent. On write-through memory each line is a
//!    rule-4 write; on Non-cacheable/Device memory it counts one `bypass`. L1D counts one `maint`.
//! 10. **IC IALLU** empties the issuing vCPU's L1I, **IC IALLUIS** every vCPU's, **IC IVAU** the
//!     line in every vCPU's L1I. L1I counts one `maint`.
//!
//! 11. **Software prefetch** (PRFM PLD/PST to L1/L2/L3, KEEP or STRM) of a line on cacheable
//!     memory names a target level (L1 = L1D; a level the model does not have = its deepest
//!     level). If the target holds the line, nothing happens and nothing is counted. Otherwise the
//!     levels below the target are searched for it (no demand count, no recency change); every
//!     level from the one above the first holder (or memory) up to the target allocates the line
//!     clean, deepest first, each counting one `prefetches` and marking the line *prefetched*
//!     (rule 2 for victims). PST is modelled as PLD (no coherence states). PLI is ignored.
//!     NC/Device memory or caches off: nothing.
//! 12. **Prefetch hits**: a demand lookup (rule 1 or 4) that hits a line still marked prefetched
//!     counts one `prefetch_hits` at that level and clears the mark (once per fill).
//! 13. **Non-temporal fills** (LDNP/STNP, PRFM …STRM): the first level the access fills (L1D for
//!     LDNP/STNP, the named level for a prefetch) inserts the line at the end of its replacement
//!     order (the next LRU/FIFO victim) instead of the front; the levels below fill normally (as
//!     Arm cores allocate non-temporal loads in L2). The random policy ignores it.
//! 14. **Hardware prefetcher** (optional, `HwPrefetch`): an L1D demand miss or the first demand
//!     hit on a prefetched L1D line of a cacheable data access (read or write-back write) is a
//!     trigger. Next-line prefetches lines `l + distance + k`, stride (per PC, 16 entries indexed
//!     by `pc / 4`) prefetches `l + s·(distance + k)` once the last two line strides `s` of that
//!     PC's triggers were equal, k < degree; each as rule 11 into L1D (KEEP), never outside the
//!     trigger's 4 KiB page.
//! 15. **Served**: each demand data line access counts in `served` by the level that provided the
//!     data (L1D hit, L2, L3, memory); write-through writes, non-cacheable and Device accesses count
//!     as served by memory. The latency table turns these into cycles.
//!
//! 16. **Sanitizer** (optional, `sanitize.rs`): rules that only observe — they never change a
//!     count or a replacement decision, so counts are equal with and without it.
//!     - a. **Point of Coherency**: only the data-side levels 1..=LoC (the guest's
//!       CLIDR_EL1.LoC, [`Model::set_level_of_coherence`]; all levels until it is known) lie
//!       before the PoC. A modelled level beyond it — a profile's L3 on a guest whose CLIDR ends
//!       at L2, or every level when LoC = 0 — is a system cache beyond the PoC (Arm ARM DDI 0487
//!       D7.5.12, class 3: "invisible to the software for the purpose of managing coherency"):
//!       its dirty lines are not stale for a device, a write behind the caches does not make its
//!       copies stale, and discarding its dirty lines by VA loses nothing an agent could see.
//!     - b. **Shareability** (more than one vCPU; `non-shareable-shared`): at rule 17's snoop for
//!       a data access of vCPU c ([`Model::data_in_domain`] gives its mapping's shareability),
//!       if another vCPU k holds the line in its private caches and c's access is
//!       Non-shareable, or k's copy was filled by a Non-shareable access, the line is reported.
//!       Every vCPU is in one Inner (and Outer) Shareable domain; a Non-shareable access's
//!       domain is its own core. Nothing changes a count or a state (docs/cache-model.md,
//!       "Shareability").
//!
//! 17. **Coherence** (more than one vCPU; `Coherence` counts it per vCPU): MESI over each vCPU's
//!     *private domain* — its L1D and the private levels directly below it (rpi5: its L2). The
//!     first shared level, or memory when every level is private, is the point of coherence (PoC
//!     below). A copy in a private cache is M (dirty), E (clean) or S (clean and marked shared);
//!     a vCPU's copies of one line carry the same mark. The L1I takes no part (instruction
//!     fetches are not coherent with data on Arm without maintenance), except that an
//!     instruction fetch that fills a private unified level is a coherent read (17a).
//!     - a. **Coherent read**: a demand access (read or write), or a prefetch into the private
//!       domain, that must bring the line from outside the issuing vCPU c's private domain
//!       first *snoops* every other vCPU k, in vCPU order, before the PoC is looked up: a
//!       `snoop_hits` for k if any of k's private caches holds the line, else a
//!       `snoop_misses`. On a hit each dirty copy of k is written back into the PoC (rule 3;
//!       one `writebacks` at its level), which counts one `interventions` for c, and every
//!       copy of k becomes shared (read) or is invalidated (write: one `invalidations` for k).
//!       c's new copies are shared when some k hit and c reads; otherwise not shared.
//!     - b. **Upgrade**: a write-back write that finds its line shared in c's private domain
//!       (an L1D hit, or an L1D miss that hits a private level below) counts one `upgrades`
//!       for c and snoops as a write (after the fills and write-backs of rule 1), and c's
//!       copies are no longer shared. A write to an unshared copy (E or M) is silent.
//!     - c. **Write-through writes** and **DC ZVA** on write-back memory snoop as a write
//!       before rule 4 / rule 9, whatever c holds, and c's copies are no longer shared.
//!     - d. **Broadcast maintenance** (rules 6, 7 and 10's IVAU/IALLUIS) counts one
//!       `remote_maint` for every other vCPU whose private caches (its L1I for IC) held the
//!       line (IC IALLUIS: every other vCPU). Set/way operations and IC IALLU are local.
//!     - Non-cacheable and Device accesses are not snooped (rule 5); TLBs are not modelled.
//!       A private level below a shared one (`l2share=shared,l3share=private`) lies beyond the
//!       PoC and is never snooped.
//!
//! 18. **Inclusion** (a lower level marked inclusive, [`crate::geometry::Replacement::inclusive`]; the `rpi4`
//!     profile's L2, as the Cortex-A72 TRM's "inclusion property with L1 data caches"): when
//!     an allocation in that level replaces a valid line (rule 2: a demand fill, a prefetch
//!     fill or a write-back's allocation), every L1D copy of the victim's bytes in the vCPUs
//!     the level serves (all of them when shared, the issuing one when private) is invalidated
//!     first (back-invalidation). A dirty L1D copy is written into the victim (one L1D
//!     `writebacks` per copy), so the victim leaves dirty (rule 2: one `writebacks` at the
//!     level, into the next level or memory): no data is lost. On an L1D miss under inclusion
//!     the lower levels are filled first and L1D allocates last (the linefill's order), so a
//!     back-invalidated way of the same set is the L1D's free way. Only replacement
//!     back-invalidates: set/way maintenance of the inclusive level (rule 8) removes only its
//!     own copy, DC ZVA (rule 9) allocates in L1D without a lower-level line, and the L1I is
//!     not covered (the TRM names the L1 data caches).
//!
//! 19. **Topology** (`topology.rs`; the profile's clusters, vCPU i in cluster
//!     i / cores_per_cluster): rule 17's events between two vCPUs of different clusters also
//!     count apart — `cross_invalidations` (for the invalidated vCPU), `cross_interventions` (for
//!     the requester), `cross_remote_maint` (for the vCPU the broadcast reached). A demand
//!     *data* access whose rule-17a snoop took a dirty copy from another vCPU is a *hand-over*:
//!     one `cluster_handovers` or `cross_handovers` for the requester (instruction fetches and
//!     prefetches are not hand-overs). The caches and their states are unchanged by the
//!     topology: a cache shared by one cluster only is not modelled on its own. The latency table
//!     prices each hand-over at the topology's in-cluster or cross-cluster figure instead of the
//!     hit of the level that served it (`model_records::phase_cycles`).
//!
//! 20. **Silicon mode** (`impl=silicon`, [`crate::geometry::Deviations`]: the profile's core's
//!     documented deviations from the architecture; none in arch mode, the default):
//!     - a. **DC IVAC as DC CIVAC** (Cortex-A76 TRM A6.2.4): an invalidate by address to the PoC
//!       is rule 6's clean and invalidate. The sanitizer still reports the `lost-write` the
//!       architecture makes of it, with `masked_by` = `ivac-as-civac` (no data is lost here).
//!     - b. **DC ISW cleans** (A6.2.4): an invalidate by set/way is rule 8's clean and
//!       invalidate; `lost-write` reported with `masked_by` = `isw-cleans`.
//!     - c. **Inner Write-Through is Non-cacheable** (A7.3): every access, prefetch, fetch and DC
//!       ZVA through a write-through attribute (with or without the transient hint) is one
//!       through Normal Non-cacheable (rule 5: bypass; the sanitizer's bypass rules).
//!     - d. **Write streaming** (A6.2.6; threshold `N` lines, an estimate): per vCPU, a detector
//!       follows write-back writes line by line: a write to another L1D line than the previous
//!       write's ends a *run* of fully written lines unless that previous line was written in
//!       full; the write that completes a line (every byte written since the detector moved to
//!       it) adds one to the run. Once the run is at least `N`, a write-allocate write that
//!       misses L1D does not fill it: it counts an L1D access and miss, snoops as a write
//!       (rule 17c, more than one vCPU) and is written into L2 (rule 3: dirty there, allocated
//!       if absent; memory without an L2), served by L2. Loads, hits and no-write-allocate
//!       writes (rule 1a) are unchanged; DC ZVA (which the TRM also names as a trigger) is not
//!       followed by the detector, and the TRM's further thresholds (stream to L3, system cache,
//!       DRAM) are not modelled.
//! 21. **VIPT L1I** ([`crate::geometry::Indexing::Vipt`]: the guest's CTR_EL0.L1Ip = 0b10, a
//!     profile or `l1i_index=vipt`): an instruction fetch of PA `p` through VA `v` looks its line
//!     up in the set whose index takes the bits below the 4 KiB page offset from `p` (they equal
//!     `v`'s) and the bits above it from `v`; the tag is `p`'s whole line number. One PA fetched
//!     through two VAs whose index bits above the page offset differ therefore has two copies, in
//!     two sets (each a rule-1 miss the first time). An L1I whose way fits in a page
//!     (`sets × line ≤ 4 KiB`) has no such bit and behaves as PIPT. **IC IVAU** of VA `v`
//!     invalidates the copy in the set `v` indexes, in every vCPU's L1I; copies of the same PA at
//!     other indexes stay valid (Arm ARM DDI 0487, D7.5.9 A64 cache maintenance instructions,
//!     the IC table's note b: "For a VIPT instruction cache, the cache maintenance applies to
//!     entries whose virtual index and physical tag corresponds to the specified address"), and
//!     each such IVAU is noted as an [`IcAlias`] (`model-ic-alias`). IC IALLU/IALLUIS empty the
//!     whole L1I as before; the sanitizer's marks of a write behind the I-side reach every copy.

use std::io::Write;
use std::ops::{Add, Sub};

/// Coherence counters of one vCPU (rule 17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coherence {
    /// This vCPU's private copies invalidated by another vCPU's write (one per snoop that hit).
    pub invalidations: u64,
    /// This vCPU's requests whose snoop found a dirty copy in another vCPU, which supplied it.
    pub interventions: u64,
    /// This vCPU's writes to a line it held shared (S → M without data).
    pub upgrades: u64,
    /// Snoops from other vCPUs that found the line in this vCPU's private caches.
    pub snoop_hits: u64,
    /// Snoops from other vCPUs that did not (a snoop filter would have spared them).
    pub snoop_misses: u64,
    /// Other vCPUs' broadcast maintenance operations that found the line in this vCPU's caches.
    pub remote_maint: u64,
    /// Of `invalidations`, those of lines inside the buffers ([`Model::set_buffers`]).
    pub buf_invalidations: u64,
    /// Of `interventions`, those of lines inside the buffers.
    pub buf_interventions: u64,
    /// Of `upgrades`, those of lines inside the buffers.
    pub buf_upgrades: u64,
    /// Of `invalidations`, those by a vCPU in another cluster (rule 19).
    pub cross_invalidations: u64,
    /// Of `interventions`, those supplied by a vCPU in another cluster (rule 19).
    pub cross_interventions: u64,
    /// Of `remote_maint`, those issued by a vCPU in another cluster (rule 19).
    pub cross_remote_maint: u64,
    /// This vCPU's demand data accesses served by a dirty copy of a vCPU in its own cluster
    /// (rule 19's hand-overs; the latency table's in-cluster hand-over cost).
    pub cluster_handovers: u64,
    /// The same, served from another cluster (the cross-cluster hand-over cost).
    pub cross_handovers: u64,
    /// Of `cluster_handovers`, those of lines inside the buffers.
    pub buf_cluster_handovers: u64,
    /// Of `cross_handovers`, those of lines inside the buffers.
    pub buf_cross_handovers: u64,
}

impl Coherence {
    /// The six protocol counters in record order (the trace's; the `buf_` split is a label the
    /// plugin adds, not part of the protocol).
    pub fn values(&self) -> [u64; 6] {
        [self.invalidations, self.interventions, self.upgrades, self.snoop_hits, self.snoop_misses, self.remote_maint]
    }

    /// From [`Coherence::values`]'s order (no `buf_` split).
    pub fn from_values(v: [u64; 6]) -> Self {
        Self {
            invalidations: v[0],
            interventions: v[1],
            upgrades: v[2],
            snoop_hits: v[3],
            snoop_misses: v[4],
            remote_maint: v[5],
            ..Self::default()
        }
    }

    fn all(&self) -> [u64; 16] {
        let v = self.values();
        [
            v[0],
            v[1],
            v[2],
            v[3],
            v[4],
            v[5],
            self.buf_invalidations,
            self.buf_interventions,
            self.buf_upgrades,
            self.cross_invalidations,
            self.cross_interventions,
            self.cross_remote_maint,
            self.cluster_handovers,
            self.cross_handovers,
            self.buf_cluster_handovers,
            self.buf_cross_handovers,
        ]
    }

    fn from_all(v: [u64; 16]) -> Self {
        Self {
            buf_invalidations: v[6],
            buf_interventions: v[7],
            buf_upgrades: v[8],
            cross_invalidations: v[9],
            cross_interventions: v[10],
            cross_remote_maint: v[11],
            cluster_handovers: v[12],
            cross_handovers: v[13],
            buf_cluster_handovers: v[14],
            buf_cross_handovers: v[15],
            ..Self::from_values([v[0], v[1], v[2], v[3], v[4], v[5]])
        }
    }
}

impl Add for Coherence {
    type Output = Coherence;
    fn add(self, o: Coherence) -> Coherence {
        let (a, b) = (self.all(), o.all());
        Coherence::from_all(std::array::from_fn(|i| a[i].wrapping_add(b[i])))
    }
}

impl Sub for Coherence {
    type Output = Coherence;
    fn sub(self, o: Coherence) -> Coherence {
        let (a, b) = (self.all(), o.all());
        Coherence::from_all(std::array::from_fn(|i| a[i].wrapping_sub(b[i])))
    }
}

use crate::cache::{cache_seed, Cache, Evicted, Fill, SetChanges};
use crate::geometry::{Hierarchy, HwPfKind, HwPrefetch, Indexing, Sharing, VIPT_PAGE_SHIFT};
use crate::sanitize::{byte_mask, full_mask, ByteMask, Event, HazardAccess, HazardCause, HazardKind, Sanitizer, SiliconRule};

/// One trace line, formatted only when tracing is on.
macro_rules! tr {
    ($m:expr, $($fmt:tt)*) => {
        if $m.trace.is_some() {
            $m.tr(format_args!($($fmt)*));
        }
    };
}

/// The modelled levels, in counter order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Level-1 instruction cache.
    L1I = 0,
    /// Level-1 data cache.
    L1D = 1,
    /// Level 2 (unified).
    L2 = 2,
    /// Level 3 (unified).
    L3 = 3,
}

impl Level {
    /// All levels in counter order.
    pub const ALL: [Level; 4] = [Level::L1I, Level::L1D, Level::L2, Level::L3];

    /// `"L1I"`, `"L1D"`, `"L2"`, `"L3"`.
    pub fn name(self) -> &'static str {
        ["L1I", "L1D", "L2", "L3"][self as usize]
    }

    fn lower(i: usize) -> Level {
        [Level::L2, Level::L3][i]
    }
}

/// Counters of one level: the record contract's per-level counts (the `model` and
/// `model-total` records carry them field by field; `+`/`-` wrap).
pub use cachescope_arch::record::LevelCounts as Counts;

/// Index of `Totals::served` for memory (L1D = 0, L2 = 1, L3 = 2).
pub const SERVED_MEMORY: usize = 3;

/// Counters of every level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Indexed by `Level as usize`.
    pub levels: [Counts; 4],
    /// Demand data line accesses by the level that served them: L1D, L2, L3, memory (rule 15).
    pub served: [u64; 4],
    /// TLB lookups (`tlb.rs`; kept by the plugin beside the model, zero in the model's own).
    pub tlb: crate::tlb::TlbCounts,
}

impl Totals {
    /// One level's counters.
    pub fn get(&self, level: Level) -> &Counts {
        &self.levels[level as usize]
    }

    fn at(&mut self, level: Level) -> &mut Counts {
        &mut self.levels[level as usize]
    }
}

impl Add for Totals {
    type Output = Totals;
    fn add(self, o: Totals) -> Totals {
        Totals {
            levels: std::array::from_fn(|i| self.levels[i] + o.levels[i]),
            served: std::array::from_fn(|i| self.served[i].wrapping_add(o.served[i])),
            tlb: self.tlb + o.tlb,
        }
    }
}

impl Sub for Totals {
    type Output = Totals;
    fn sub(self, o: Totals) -> Totals {
        Totals {
            levels: std::array::from_fn(|i| self.levels[i] - o.levels[i]),
            served: std::array::from_fn(|i| self.served[i].wrapping_sub(o.served[i])),
            tlb: self.tlb - o.tlb,
        }
    }
}

/// Memory attribute of an access, as the guest's mapping (or the MMU/cache state) makes it: the
/// marker protocol's attribute, one type shared with the kernel (`cachescope_arch::marker`).
pub use cachescope_arch::marker::ModelAttr as Attr;

/// Shareability of a mapping (the sanitizer's `non-shareable-shared` rule, 16b).
pub use cachescope_arch::attr::Shareability;

/// What a maintenance operation does to a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineOp {
    /// Write back if dirty; keep the line.
    Clean,
    /// Drop the line (dirty data is lost).
    Invalidate,
    /// Write back if dirty, then drop.
    CleanInvalidate,
}

/// How far a by-address operation reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// Point of Coherency: every level.
    Coherency,
    /// Point of Unification: the L1 data caches (the first unified level is the PoU).
    Unification,
}

/// What the plugin knows about a data access beyond its address: the instruction's PC (the
/// stride prefetcher's key) and whether it is non-temporal (LDNP/STNP).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hint {
    /// PC of the load/store.
    pub pc: u64,
    /// LDNP/STNP.
    pub nt: bool,
}

/// One entry of the stride prefetcher's table.
#[derive(Clone, Copy, Debug)]
struct StrideEntry {
    pc: u64,
    last: u64,
    stride: i64,
    equal: u32,
}

/// Rule 20d's write-streaming detector of one vCPU.
#[derive(Clone, Copy, Debug)]
struct Stream {
    /// The L1D line number the last write-back write went to (`u64::MAX`: none yet).
    line: u64,
    /// The bytes of it written since the detector moved to it.
    bytes: ByteMask,
    /// Consecutive lines written in full.
    run: u32,
}

const NO_STREAM: Stream = Stream { line: u64::MAX, bytes: 0, run: 0 };

const STRIDE_ENTRIES: usize = 16;
const EMPTY_STRIDE: StrideEntry = StrideEntry { pc: u64::MAX, last: 0, stride: 0, equal: 0 };

/// Rule 21: an IC IVAU on a VIPT L1I that left copies of its line valid at other indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcAlias {
    /// The issuing vCPU.
    pub cpu: usize,
    /// The operand's VA (its line).
    pub va: u64,
    /// The line's PA.
    pub pa: u64,
    /// The L1I set the VA indexes (the one invalidated).
    pub set: usize,
    /// Copies of the line in every vCPU's L1I before the IVAU.
    pub before: u64,
    /// Copies still valid after it (at other indexes).
    pub left: u64,
}

/// At most this many [`IcAlias`] notes are kept between two [`Model::take_ic_aliases`]; the
/// rest are only counted ([`Model::ic_aliases_dropped`]).
pub const IC_ALIAS_LIMIT: usize = 256;

/// The modelled hierarchy and its counters.
pub struct Model {
    config: Hierarchy,
    vcpus: usize,
    l1i: Vec<Cache>,
    l1d: Vec<Cache>,
    /// Per lower level: one cache (shared) or one per vCPU (private).
    lower: Vec<Vec<Cache>>,
    sharing: Vec<Sharing>,
    totals: Totals,
    hwpf: HwPrefetch,
    /// Per vCPU: the stride prefetcher's table.
    stride: Vec<[StrideEntry; STRIDE_ENTRIES]>,
    /// The sanitizer's state, when it runs.
    san: Option<Box<Sanitizer>>,
    /// Rule 17 applies (more than one vCPU).
    coherent: bool,
    /// Number of private levels directly below L1 (the rest of the private domain).
    private: usize,
    /// Per vCPU: rule 17's counters.
    coh: Vec<Coherence>,
    /// Physical ranges `[start, end)` whose coherence events are also counted apart (`buf_`).
    buffers: Vec<(u64, u64)>,
    /// Rule 16a: how many data-side levels (L1D = 1, L2 = 2, L3 = 3) lie before the Point of
    /// Coherency for the sanitizer (the guest's CLIDR_EL1.LoC); `usize::MAX` = all of them.
    poc: usize,
    /// Operation trace (see [`Model::trace_to`]).
    trace: Option<Box<dyn Write + Send>>,
    /// Rule 18: per lower level, whether it is inclusive of the L1Ds it serves.
    inclusive: [bool; 2],
    /// Rule 19: the cluster of each vCPU.
    cluster: Vec<usize>,
    /// Rule 19: set by [`Model::snoop`] when a dirty copy supplied the line: whether from
    /// another cluster.
    supplier_cross: Option<bool>,
    /// vCPUs (bit k = vCPU k, bit 63 also any above) whose private caches or their copies'
    /// marks an operation changed from outside their own L1D access since
    /// [`Model::take_disturbed`] (another vCPU's snoop, a back-invalidation, a write behind
    /// their copies): the plugin drops their shortcuts.
    disturbed: u64,
    /// The cores whose private caches may hold a line (bit per core; cores beyond 63 always):
    /// set by their first access that can fill (data, fetch, prefetch, DC ZVA). The probes of
    /// every core's caches skip the others (secondaries powered off until the smp suite).
    active: u64,
    /// Rule 16b: the shareability and PC of the data access being modelled
    /// ([`Model::data_in_domain`]; `None` otherwise).
    access_share: Option<(Shareability, u64)>,
    /// Rule 20a.
    ivac_as_civac: bool,
    /// Rule 20b.
    isw_cleans: bool,
    /// Rule 20c.
    wt_as_nc: bool,
    /// Rule 20d: the threshold in lines (0: off).
    ws_lines: u32,
    /// Rule 20d: per vCPU, the detector.
    stream: Vec<Stream>,
    /// Rule 21: IC IVAU notes not yet taken, and how many did not fit.
    ic_aliases: Vec<IcAlias>,
    ic_aliases_dropped: u64,
}

impl Model {
    /// An empty (cold) hierarchy for `vcpus` vCPUs. The configuration must be valid
    /// ([`Hierarchy::validate`]).
    pub fn new(config: &Hierarchy, vcpus: usize) -> Self {
        let vcpus = vcpus.max(1);
        let mut id = 0u64;
        let mut mk = |g: &crate::geometry::Geometry, k: usize| {
            id += 1;
            Cache::new(g.line_shift(), g.sets, g.ways, config.policy.level(k), cache_seed(config.seed, id))
        };
        let vipt = config.l1i_index == Indexing::Vipt;
        let l1i = (0..vcpus).map(|_| mk(&config.l1i, 0)).map(|c| if vipt { c.with_va_index(VIPT_PAGE_SHIFT) } else { c }).collect();
        let l1d = (0..vcpus).map(|_| mk(&config.l1d, 1)).collect();
        let lower = config
            .lower
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let n = if l.sharing == Sharing::Shared { 1 } else { vcpus };
                (0..n).map(|_| mk(&l.geometry, 2 + i)).collect()
            })
            .collect();
        Self {
            config: config.clone(),
            vcpus,
            l1i,
            l1d,
            lower,
            sharing: config.lower.iter().map(|l| l.sharing).collect(),
            totals: Totals::default(),
            hwpf: config.hwpf.clone(),
            stride: vec![[EMPTY_STRIDE; STRIDE_ENTRIES]; vcpus],
            san: None,
            coherent: vcpus > 1,
            private: config.lower.iter().take_while(|l| l.sharing == Sharing::Private).count(),
            coh: vec![Coherence::default(); vcpus],
            buffers: Vec::new(),
            poc: usize::MAX,
            trace: None,
            inclusive: std::array::from_fn(|i| i < config.lower.len() && config.policy.inclusive[i]),
            cluster: (0..vcpus).map(|k| config.topology.cluster_of(k)).collect(),
            supplier_cross: None,
            disturbed: 0,
            active: 0,
            access_share: None,
            ivac_as_civac: config.silicon.ivac_as_civac,
            isw_cleans: config.silicon.isw_cleans,
            wt_as_nc: config.silicon.wt_as_nc,
            ws_lines: config.silicon.write_streaming.unwrap_or(0),
            stream: vec![NO_STREAM; vcpus],
            ic_aliases: Vec::new(),
            ic_aliases_dropped: 0,
        }
    }

    /// Rule 21: the L1I's set-index bits (of a line number) that come from the fetch's VA; 0
    /// when it is physically indexed or its way fits in a page.
    pub fn l1i_va_index_bits(&self) -> u64 {
        self.l1i[0].va_index_bits()
    }

    /// Rule 21: the IC IVAU notes since the last call (at most [`IC_ALIAS_LIMIT`]).
    pub fn take_ic_aliases(&mut self) -> Vec<IcAlias> {
        std::mem::take(&mut self.ic_aliases)
    }

    /// Rule 21: IC IVAU notes that did not fit under [`IC_ALIAS_LIMIT`], over the whole run.
    pub fn ic_aliases_dropped(&self) -> u64 {
        self.ic_aliases_dropped
    }

    /// Rule 21: how many copies of the line holding `pa` `cpu`'s L1I holds, at any index.
    pub fn l1i_copies(&self, cpu: usize, pa: u64) -> usize {
        let c = &self.l1i[cpu];
        c.copies(c.line_of(pa)).count()
    }

    /// Rule 20c: the attribute an access through `attr` has on the modelled core (the plugin
    /// asks before it chooses its bypass or cached path; every model entry applies it too).
    #[inline]
    pub fn effective(&self, attr: Attr) -> Attr {
        if self.wt_as_nc && attr.base() == Attr::NormalWriteThrough {
            Attr::NormalNonCacheable
        } else {
            attr
        }
    }

    /// Rule 20d: a write-back write of `bytes` of L1D line `line` by `cpu`; whether the vCPU
    /// is in write-streaming mode after it.
    #[inline]
    fn stream_write(&mut self, cpu: usize, line: u64, bytes: ByteMask) -> bool {
        let full = full_mask(self.l1d[cpu].line_shift());
        let s = &mut self.stream[cpu];
        if s.line != line {
            if s.bytes != full {
                s.run = 0;
            }
            (s.line, s.bytes) = (line, 0);
        }
        let was = s.bytes;
        s.bytes |= bytes;
        if s.bytes == full && was != full {
            s.run = s.run.saturating_add(1);
        }
        s.run >= self.ws_lines
    }

    /// Rule 20d: a write-allocate write in write-streaming mode that missed L1D: written into
    /// L2 (or memory), no linefill.
    #[cold]
    fn streaming_write_miss(&mut self, cpu: usize, addr: u64, pc: u64, bytes: ByteMask) {
        let t = self.totals.at(Level::L1D);
        t.accesses += 1;
        t.misses += 1;
        if self.coherent {
            self.snoop(cpu, addr, true);
            self.set_own_shared(cpu, addr, false, true);
        }
        if self.lower.is_empty() {
            self.totals.served[SERVED_MEMORY] += 1;
            if self.san.is_some() {
                self.san_code_written(addr, pc, bytes);
            }
            return;
        }
        let c = self.lower_mut(0, cpu);
        let dirtied = !c.holds_dirty(c.line_of(addr));
        self.writeback_into(cpu, 0, addr);
        self.totals.served[1] += 1;
        self.san_write(cpu, addr, bytes, pc, dirtied);
    }

    /// The vCPUs whose private caches another vCPU's operation changed since the last call
    /// (bit k = vCPU k; bit 63 also stands for every vCPU above 63), and clears the set.
    pub fn take_disturbed(&mut self) -> u64 {
        std::mem::take(&mut self.disturbed)
    }

    /// The sets of `cpu`'s L1D whose state changed since the last call (the plugin's shortcut
    /// drops the lines it remembers there).
    #[inline]
    pub fn take_l1d_changes(&mut self, cpu: usize) -> SetChanges {
        self.l1d[cpu].take_changes()
    }

    /// The sets of `cpu`'s L1I whose state changed since the last call.
    #[inline]
    pub fn take_l1i_changes(&mut self, cpu: usize) -> SetChanges {
        self.l1i[cpu].take_changes()
    }

    /// The L1I set of the line at `pa` fetched through `va` (rule 21) when a fetch of it by
    /// `cpu` would be a hit that changes nothing ([`Cache::quiet_hit_set`]).
    pub fn l1i_quiet_set(&self, cpu: usize, va: u64, pa: u64) -> Option<usize> {
        let c = &self.l1i[cpu];
        c.quiet_hit_set(c.line_of(va), c.line_of(pa))
    }

    /// A fetch by `cpu` of the L1I line at `pa` through `va` that hits a copy neither
    /// prefetched nor stale, where the sanitizer is known to have nothing to say (the plugin's
    /// fetch memo: no write reached the line since it last judged it): one access and hit, the
    /// line made the most recent of its set; the set. `None` (nothing done) otherwise.
    pub fn l1i_plain_hit(&mut self, cpu: usize, va: u64, pa: u64) -> Option<usize> {
        let c = &mut self.l1i[cpu];
        let set = c.plain_hit_at(c.line_of(va), c.line_of(pa))?;
        let t = self.totals.at(Level::L1I);
        t.accesses += 1;
        t.hits += 1;
        Some(set)
    }

    /// A data access by `cpu` of the line `line` in its L1D slot `slot` that is a plain hit
    /// (the plugin's line table knows the translation, the attribute and, for a store, that
    /// the sanitizer already holds the bytes written: [`Model::l1d_rewrite_quiet`]): one access
    /// and hit served by the L1D, the line made the most recent of its set; the set. `None`
    /// (nothing done) when the slot no longer holds the line plainly ([`Cache::slot_plain_hit`]).
    pub fn l1d_plain_hit(&mut self, cpu: usize, slot: usize, line: u64, store: bool) -> Option<usize> {
        let set = self.l1d[cpu].slot_plain_hit(slot, line, store)?;
        let t = self.totals.at(Level::L1D);
        t.accesses += 1;
        t.hits += 1;
        self.totals.served[0] += 1;
        Some(set)
    }

    /// Whether `cpu`'s L1I holds the line at `pa` (through `va`) and its copy is not stale.
    pub fn l1i_holds_fresh(&self, cpu: usize, va: u64, pa: u64) -> bool {
        let c = &self.l1i[cpu];
        c.probe_at(c.line_of(va), c.line_of(pa)).is_some_and(|slot| !c.slot_stale(slot))
    }

    /// The bytes of the line `line` in `cpu`'s L1D slot `slot` that further write-back writes
    /// by `cpu` change nothing for ([`Model::mark_l1d_dirty`] would be a no-op): the copy is
    /// dirty, no write-streaming detector watches (rule 20d), and the sanitizer already holds
    /// those bytes written ([`Sanitizer::rewrite_quiet_bytes`]).
    pub fn l1d_rewrite_quiet(&self, cpu: usize, slot: usize, line: u64) -> ByteMask {
        let c = &self.l1d[cpu];
        if self.ws_lines != 0 || !c.is_dirty(slot) || c.slot(slot).map(|e| e.line) != Some(line) {
            return 0;
        }
        match &self.san {
            Some(san) => san.rewrite_quiet_bytes(line),
            None => full_mask(c.line_shift()),
        }
    }

    /// The L1D set of `cpu`'s slot `slot`.
    #[inline]
    pub fn l1d_set_of_slot(&self, cpu: usize, slot: usize) -> usize {
        slot / self.l1d[cpu].ways()
    }

    /// Whether write streaming is modelled (rule 20d): its detector sees every write-back
    /// write, in order.
    #[inline]
    pub fn streams_writes(&self) -> bool {
        self.ws_lines != 0
    }

    /// Notes that an operation changed vCPU `k`'s private caches (see [`Model::take_disturbed`]).
    #[inline]
    fn disturb(&mut self, k: usize) {
        self.disturbed |= 1 << k.min(63);
    }

    /// Notes that core `cpu`'s private caches may now hold lines (see `active`).
    #[inline]
    fn activate(&mut self, cpu: usize) {
        self.active |= 1 << cpu.min(63);
    }

    /// Whether core `k`'s private caches may hold a line (see `active`); the others are empty.
    #[inline]
    fn is_active(&self, k: usize) -> bool {
        let active = k >= 63 || self.active >> k & 1 == 1;
        debug_assert!(active || self.l1d[k].is_empty() && self.l1i[k].is_empty(), "core {k} inactive with lines cached");
        active
    }

    /// Rule 17's counters per vCPU (all zero with one vCPU).
    pub fn coherence(&self) -> &[Coherence] {
        &self.coh
    }

    /// Replaces the coherence counters (carried over a rebuild, like [`Model::set_totals`]).
    pub fn set_coherence(&mut self, c: &[Coherence]) {
        for (k, v) in c.iter().enumerate().take(self.coh.len()) {
            self.coh[k] = *v;
        }
    }

    /// Physical ranges `[start, end)` (the plugin: the kernel's declared attribute windows, its
    /// benchmark buffers) whose invalidations, interventions and upgrades are also counted in
    /// the `buf_` counters, apart from the rest (stacks, heap, barriers). A label only.
    pub fn set_buffers(&mut self, ranges: Vec<(u64, u64)>) {
        self.buffers = ranges;
    }

    fn in_buffers(&self, addr: u64) -> bool {
        self.buffers.iter().any(|&(s, e)| (s..e).contains(&addr))
    }

    /// Whether rule 17 applies (more than one vCPU, unless turned off).
    pub fn is_coherent(&self) -> bool {
        self.coherent
    }

    /// Turns rule 17 off: every vCPU's private caches are kept apart and never snooped (the
    /// plugin's `coherence=off`, to measure what coherence costs).
    pub fn disable_coherence(&mut self) {
        self.coherent = false;
    }

    /// Turns the sanitizer on, assuming CTR_EL0.IDC = `idc` and DIC = `dic`.
    pub fn enable_sanitizer(&mut self, idc: bool, dic: bool) {
        self.san = Some(Box::new(Sanitizer::new(idc, dic)));
    }

    /// Updates the sanitizer's CTR_EL0.IDC/DIC (read from the guest after the model was built).
    pub fn set_ctr(&mut self, idc: bool, dic: bool) {
        if let Some(s) = self.san.as_mut() {
            s.idc = idc;
            s.dic = dic;
        }
    }

    /// Rule 16a: the guest's Level of Coherence (CLIDR_EL1.LoC). Data-side levels 1..=`loc` lie
    /// before the Point of Coherency; the sanitizer treats every modelled level beyond it (a
    /// profile's level the guest's CLIDR does not describe, or every level when LoC = 0) as a
    /// system cache beyond the PoC, transparent to every agent (Arm ARM D7.5.12, class 3). Counts
    /// do not change.
    pub fn set_level_of_coherence(&mut self, loc: u32) {
        self.poc = loc as usize;
    }

    /// The data-side levels before the Point of Coherency (rule 16a), at most the modelled ones.
    pub fn levels_before_poc(&self) -> usize {
        self.poc.min(1 + self.lower.len())
    }

    /// Whether hazards were found since the last [`Model::take_events`].
    #[inline]
    pub fn has_events(&self) -> bool {
        self.san.as_ref().is_some_and(|s| !s.events.is_empty())
    }

    /// Whether the data access being made is a single aligned store of a concurrently
    /// modifiable instruction ([`Model::data_in_domain`]).
    fn set_store_cmodx(&mut self, on: bool) {
        if let Some(s) = self.san.as_mut() {
            s.store_cmodx = on;
        }
    }

    /// The hazards found since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.san.as_mut().map(|s| std::mem::take(&mut s.events)).unwrap_or_default()
    }

    /// The configuration.
    pub fn config(&self) -> &Hierarchy {
        &self.config
    }

    /// Number of vCPUs.
    pub fn vcpus(&self) -> usize {
        self.vcpus
    }

    /// Counters since creation (or since the counters were carried over by [`Model::set_totals`]).
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// The counters the per-PC table follows ([`crate::pc_table`]): L1D misses, L2 misses, L1D
    /// write-backs (read before and after a model call; three loads, no copy of [`Totals`]).
    #[inline]
    pub fn pc_counts(&self) -> crate::pc_table::PcCounts {
        let (l1d, l2) = (&self.totals.levels[Level::L1D as usize], &self.totals.levels[Level::L2 as usize]);
        [l1d.misses, l2.misses, l1d.writebacks]
    }

    /// Replaces the counters (used when the hierarchy is rebuilt with a new geometry).
    pub fn set_totals(&mut self, t: Totals) {
        self.totals = t;
    }

    /// Records every operation from now on as one text line on `w`, after a header line with the
    /// hierarchy and the counters so far, so the reference simulator can replay the run (tests).
    /// Lines: `H vcpus l1i l1d [l2 sharing [l3 sharing]] policy seed zva hwpf distance degree
    /// silicon=RULES` (rule 20's [`crate::geometry::Deviations::spelling`], `none` in arch mode),
    /// `X l1i_index` (only when the L1I is not PIPT, rule 21), `C <counters>`, `D cpu pa size write
    /// attr pc nt`, `R cpu pa level nt attr` (software prefetch), `F cpu pa attr va`, `P op point pa
    /// cpu`, `S cpu op level first end`, `Z cpu pa attr`, `I cpu all`, `V pa cpu va`, and `T <counters>` from [`Model::end_trace`] (attr, op and point
    /// are the enums' numbers; counters: eight per level in `Level` order, then `served`, then
    /// with more than one vCPU six coherence counters per vCPU in [`Coherence::values`] order).
    pub fn trace_to(&mut self, mut w: Box<dyn Write + Send>) {
        let h = &self.config;
        let mut head = format!("H {} {} {}", self.vcpus, h.l1i, h.l1d);
        for l in &h.lower {
            head += &format!(" {} {}", l.geometry, l.sharing.name());
        }
        let pf = &h.hwpf;
        let silicon = h.silicon.spelling();
        let _ = writeln!(
            w,
            "{head} {} {} {} {} {} {} silicon={}",
            h.policy.name(),
            h.seed,
            h.zva_bytes,
            pf.kind.name(),
            pf.distance,
            pf.degree,
            if silicon.is_empty() { "none" } else { &silicon }
        );
        if h.l1i_index != Indexing::Pipt {
            let _ = writeln!(w, "X {}", h.l1i_index.name());
        }
        let _ = writeln!(w, "C {}", self.trace_counters());
        self.trace = Some(w);
    }

    /// Hands the trace writer over (to the next model after a geometry change).
    pub fn take_trace(&mut self) -> Option<Box<dyn Write + Send>> {
        self.trace.take()
    }

    /// Writes the `T` line with the current counters and flushes the trace.
    pub fn end_trace(&mut self) {
        let t = self.trace_counters();
        if let Some(w) = self.trace.as_mut() {
            let _ = writeln!(w, "T {t}");
            let _ = w.flush();
        }
    }

    /// The counters of a `C`/`T` trace line.
    fn trace_counters(&self) -> String {
        let mut t = counters_text(&self.totals);
        if self.coherent {
            for c in &self.coh {
                for v in c.values() {
                    t += &format!(" {v}");
                }
            }
        }
        t
    }

    /// Writes one trace line (callers check `self.trace.is_some()` first, through `tr!`, so
    /// the untraced hot path does not even build the format arguments).
    #[cold]
    fn tr(&mut self, line: std::fmt::Arguments) {
        if let Some(w) = self.trace.as_mut() {
            let _ = w.write_fmt(line);
        }
    }

    /// Number of modelled levels below L1.
    pub fn lower_levels(&self) -> usize {
        self.lower.len()
    }

    /// The L1 data cache of a vCPU (read-only view for tests and diagnostics).
    pub fn l1d(&self, cpu: usize) -> &Cache {
        &self.l1d[cpu]
    }

    /// The cache a vCPU sees at lower level `i` (0 = L2).
    pub fn lower_cache(&self, i: usize, cpu: usize) -> &Cache {
        let k = if self.sharing[i] == Sharing::Shared { 0 } else { cpu };
        &self.lower[i][k]
    }

    fn lower_mut(&mut self, i: usize, cpu: usize) -> &mut Cache {
        let k = if self.sharing[i] == Sharing::Shared { 0 } else { cpu };
        &mut self.lower[i][k]
    }

    /// A data access of `size` bytes at physical address `pa` (split into L1D lines). Returns the
    /// L1D slot of the line when the access touched exactly one line and left it resident.
    #[inline]
    pub fn data(&mut self, cpu: usize, pa: u64, size: u32, write: bool, attr: Attr) -> Option<usize> {
        self.data_hint(cpu, pa, size, write, attr, Hint::default())
    }

    /// [`Model::data`] with the access's PC and non-temporal hint.
    #[inline]
    pub fn data_hint(&mut self, cpu: usize, pa: u64, size: u32, write: bool, attr: Attr, hint: Hint) -> Option<usize> {
        tr!(self, "D {cpu} {pa} {size} {} {} {} {}\n", u8::from(write), attr as u8, hint.pc, u8::from(hint.nt));
        self.activate(cpu);
        let attr = self.effective(attr);
        let shift = self.l1d[cpu].line_shift();
        let first = pa >> shift;
        let last = pa.wrapping_add(u64::from(size.max(1)) - 1) >> shift;
        let mut slot = None;
        let end = pa.wrapping_add(u64::from(size.max(1)));
        for line in first..=last {
            let base = line << shift;
            // The bytes of this line the access touches (the sanitizer's byte masks).
            let lo = pa.max(base) - base;
            let hi = if line == last { end.wrapping_sub(base) } else { 1 << shift };
            slot = self.data_line(cpu, base, write, attr, hint, byte_mask(lo, hi - lo, shift));
        }
        if first == last {
            slot
        } else {
            None
        }
    }

    /// [`Model::data_hint`] through a mapping of shareability `share` (rule 16b: the sanitizer
    /// judges which cores may cache the line together), `cmodx` when the access is a single
    /// aligned store of a concurrently modifiable instruction (rule 16: see
    /// [`crate::sanitize::LineBytes::cmodx`]). Counts and states are those of
    /// [`Model::data_hint`], which takes every access as Inner Shareable and an ordinary one.
    #[allow(clippy::too_many_arguments)]
    pub fn data_in_domain(
        &mut self,
        cpu: usize,
        pa: u64,
        size: u32,
        write: bool,
        attr: Attr,
        hint: Hint,
        share: Shareability,
        cmodx: bool,
    ) -> Option<usize> {
        self.access_share = Some((share, hint.pc));
        self.set_store_cmodx(cmodx);
        let slot = self.data_hint(cpu, pa, size, write, attr, hint);
        self.set_store_cmodx(false);
        self.access_share = None;
        slot
    }

    /// An instruction fetch of the whole line holding `pa` (every byte of it, for the sanitizer),
    /// through VA = PA.
    pub fn fetch(&mut self, cpu: usize, pa: u64, attr: Attr) {
        self.fetch_at(cpu, pa, pa, attr);
    }

    /// [`Model::fetch`] through VA `va` (rule 21: a VIPT L1I indexes by it).
    pub fn fetch_at(&mut self, cpu: usize, va: u64, pa: u64, attr: Attr) {
        let shift = self.l1i[cpu].line_shift();
        self.fetch_range_at(cpu, va >> shift << shift, pa >> shift << shift, 1 << shift, attr);
    }

    /// An instruction fetch of the line holding `pa` that executes the `len` bytes from `pa`
    /// (within that L1I line: the instructions of a translation block there), through VA = PA.
    /// Counts as one L1I access; the sanitizer judges only those bytes (see [`Model::fetch`]).
    pub fn fetch_range(&mut self, cpu: usize, pa: u64, len: u64, attr: Attr) {
        self.fetch_range_at(cpu, pa, pa, len, attr);
    }

    /// [`Model::fetch_range`] through VA `va` (the VA of `pa`; rule 21).
    pub fn fetch_range_at(&mut self, cpu: usize, va: u64, pa: u64, len: u64, attr: Attr) {
        tr!(self, "F {cpu} {pa} {} {va}\n", attr as u8);
        self.activate(cpu);
        let attr = self.effective(attr);
        if !attr.cacheable() {
            self.totals.at(Level::L1I).bypass += 1;
            return;
        }
        if self.san.as_ref().is_some_and(|s| !(s.idc && s.dic)) {
            self.san_fetch(pa, len);
        }
        let mask = self.fetch_mask(pa, len);
        self.demand_l1(cpu, true, va, pa, Fill::demand(false), false, 0, mask);
    }

    /// The sanitizer's judgement of a fetch of the `len` bytes from `pa` that the plugin does not
    /// count (its line is the one the previous fetch ended in, still in the L1I: see the engine's
    /// `fetch`): the rules of [`Model::fetch_range`] without an access. Nothing without the
    /// sanitizer, and nothing on a line the L1I no longer holds.
    pub fn check_fetch(&mut self, cpu: usize, pa: u64, len: u64) {
        self.check_fetch_at(cpu, pa, pa, len);
    }

    /// [`Model::check_fetch`] through VA `va` (rule 21).
    pub fn check_fetch_at(&mut self, cpu: usize, va: u64, pa: u64, len: u64) {
        let Some(san) = self.san.as_mut() else { return };
        san.uncounted = true;
        if !(san.idc && san.dic) {
            self.san_fetch(pa, len);
        }
        let c = &self.l1i[cpu];
        if c.probe_at(c.line_of(va), c.line_of(pa)).is_some_and(|slot| c.slot_stale(slot)) {
            let mask = self.fetch_mask(pa, len);
            self.san_stale_hit(pa, true, mask);
        }
        if let Some(san) = self.san.as_mut() {
            san.uncounted = false;
        }
    }

    /// The L1D-line byte mask of a fetch of `len` bytes from `pa` (every byte of the L1D line of
    /// `pa` when the range leaves it: an L1I line longer than the L1D line).
    fn fetch_mask(&self, pa: u64, len: u64) -> ByteMask {
        let shift = self.l1d[0].line_shift();
        let off = pa & ((1 << shift) - 1);
        if off + len > 1 << shift {
            full_mask(shift)
        } else {
            byte_mask(off, len, shift)
        }
    }

    // ---- the sanitizer's rules (sanitize.rs) ---------------------------------------------

    fn l1d_line(&self, addr: u64) -> u64 {
        addr >> self.l1d[0].line_shift()
    }

    /// Every data-side cache before the Point of Coherency (rule 16a): each vCPU's L1D and the
    /// lower caches, down to the guest's LoC.
    fn poc_caches(&self) -> impl Iterator<Item = &Cache> {
        let n = self.levels_before_poc();
        self.l1d.iter().take(if n >= 1 { self.vcpus } else { 0 }).chain(self.lower.iter().take(n.saturating_sub(1)).flatten())
    }

    /// A non-cacheable/Device access of `bytes` of the line at `addr`: a read of bytes that are
    /// dirty in a cache before the PoC is a stale-read-by-device (a read of other bytes of a dirty
    /// line a shared-line); a write makes every cached copy stale.
    #[cold]
    fn san_bypass(&mut self, addr: u64, write: bool, attr: Attr, pc: u64, bytes: ByteMask) {
        let line = self.l1d_line(addr);
        let nc = attr == Attr::NormalNonCacheable;
        if !write {
            if self.poc_caches().any(|c| c.holds_dirty(c.line_of(addr))) {
                let san = self.san.as_mut().expect("checked");
                let (cause, cause_pc) = san.dirty_cause(line);
                let kind = if san.dirty_mask(line) & bytes != 0 { HazardKind::StaleReadByDevice } else { HazardKind::SharedLine };
                san.report(kind, addr, if nc { HazardAccess::NcRead } else { HazardAccess::DeviceRead }, cause, cause_pc);
            }
            return;
        }
        let (mut fresh, mut already) = (false, false);
        let span = 1u64 << self.l1d[0].line_shift();
        // Copies beyond the PoC (rule 16a) are transparent: the write reaches them as it reaches
        // memory, so they are never stale.
        let n = self.levels_before_poc();
        let vcpus = self.vcpus;
        let before = self.l1d.iter_mut().take(if n >= 1 { vcpus } else { 0 });
        let mut note = |was: Option<bool>| {
            fresh |= was == Some(false);
            already |= was == Some(true);
        };
        for c in before.chain(self.lower.iter_mut().take(n.saturating_sub(1)).flatten()) {
            note(c.mark_stale(c.line_of(addr)));
        }
        for c in &mut self.l1i {
            let step = 1u64 << c.line_shift();
            for a in (addr..addr + span).step_by(step.min(span) as usize) {
                note(c.mark_stale(c.line_of(a)));
            }
        }
        if fresh || already {
            // Copies of any vCPU may have turned stale.
            self.disturbed = u64::MAX;
            let kind = if nc { HazardCause::NcWrite } else { HazardCause::DeviceWrite };
            let san = self.san.as_mut().expect("checked");
            let b = san.behind.entry(line).or_insert(crate::sanitize::Behind { pc, kind, bytes: 0 });
            if fresh {
                (b.pc, b.kind) = (pc, kind);
            }
            // Bytes written behind a copy that was already stale add up; a first stale copy
            // starts them afresh.
            b.bytes = if already { b.bytes | bytes } else { bytes };
        }
        if let Some(san) = self.san.as_mut() {
            san.wrote(line, bytes, pc, None, false);
        }
    }

    /// A write-through write of `bytes` of the line at `addr` (no cache becomes dirty): until an
    /// IC invalidate of it, executing those bytes is a stale-instruction (the I-side may hold,
    /// or speculatively fetch, the old code), unless CTR_EL0.DIC = 1.
    #[cold]
    fn san_code_written(&mut self, addr: u64, pc: u64, bytes: ByteMask) {
        let line = self.l1d_line(addr);
        if let Some(san) = self.san.as_mut() {
            san.wrote(line, bytes, pc, None, false);
        }
    }

    /// A write-back write of `bytes` of the line at `addr` by `cpu` at `pc`, now dirty in its
    /// L1D; `dirtied` = the write turned that copy from clean to dirty.
    #[inline]
    fn san_write(&mut self, cpu: usize, addr: u64, bytes: ByteMask, pc: u64, dirtied: bool) {
        if self.san.is_none() {
            return;
        }
        let line = addr >> self.l1d[0].line_shift();
        // A copy that was clean everywhere before the PoC starts its dirty bytes afresh.
        let fresh = dirtied && !self.dirty_elsewhere(cpu, addr);
        if let Some(san) = self.san.as_mut() {
            san.wrote(line, bytes, pc, Some(fresh), dirtied);
        }
    }

    /// Whether a cache before the PoC other than `cpu`'s L1D holds the line at `addr` dirty.
    fn dirty_elsewhere(&self, cpu: usize, addr: u64) -> bool {
        let n = self.levels_before_poc();
        if n == 0 {
            return false;
        }
        let l1 = self.l1d.iter().enumerate().filter(|&(k, _)| k != cpu).map(|(_, c)| c);
        l1.chain(self.lower.iter().take(n - 1).flatten()).any(|c| c.holds_dirty(c.line_of(addr)))
    }

    /// An instruction fetch of the `len` bytes from `pa`, L1D line by L1D line: bytes written
    /// through the D-side since the line's last IC invalidate (unless DIC), or dirty in an L1D
    /// (no clean to PoU, unless IDC), are a stale-instruction; a line written or dirty in other
    /// bytes only is a shared-line.
    fn san_fetch(&mut self, pa: u64, len: u64) {
        let shift = self.l1d[0].line_shift();
        let step = 1u64 << shift;
        let end = pa + len.max(1);
        let mut a = pa >> shift << shift;
        while a < end {
            let line = a >> shift;
            let bytes = byte_mask(pa.max(a) - a, end.min(a + step) - pa.max(a), shift);
            let dirty = (0..self.l1d.len()).any(|k| self.is_active(k) && self.l1d[k].holds_dirty(self.l1d[k].line_of(a)));
            let san = self.san.as_mut().expect("checked by the caller");
            let dirty = dirty && !san.idc;
            let written = san.written_memo(line);
            // Bytes whose last write stored a concurrently modifiable instruction (B, BL, BRK,
            // HVC, ISB, NOP, SMC, SVC: Arm ARM DDI 0487 B2.2.5): the fetch may see the old or the
            // new one, so only the other written bytes make it stale (the rest: shared-line).
            let cmodx = if written.is_some() || dirty { san.cmodx_mask(line) } else { 0 };
            let bytes_stale = bytes & !cmodx;
            if dirty && san.l1_dirty_mask(line) & bytes_stale != 0 {
                let (cause, cause_pc) = san.dirty_cause(line);
                san.report(HazardKind::StaleInstruction, a, HazardAccess::Fetch, cause, cause_pc);
            } else if let Some((pc, _)) = written.filter(|&(_, w)| w & bytes_stale != 0) {
                san.report(HazardKind::StaleInstruction, a, HazardAccess::Fetch, HazardCause::WriteWithoutIcInvalidate, pc);
            } else if dirty {
                let (cause, cause_pc) = san.dirty_cause(line);
                san.report(HazardKind::SharedLine, a, HazardAccess::Fetch, cause, cause_pc);
            } else if let Some((pc, _)) = written {
                san.report(HazardKind::SharedLine, a, HazardAccess::Fetch, HazardCause::WriteWithoutIcInvalidate, pc);
            }
            a += step;
        }
    }

    /// A demand hit of `bytes` on a stale copy of the line at `addr`: a stale read (or fetch)
    /// when a write behind the cache wrote those bytes, a shared-line when it wrote others only.
    #[cold]
    fn san_stale_hit(&mut self, addr: u64, instr: bool, bytes: ByteMask) {
        let line = self.l1d_line(addr);
        let base = line << self.l1d[0].line_shift();
        if let Some(san) = self.san.as_mut() {
            let (cause, cause_pc) = san.behind_cause(line);
            let (kind, access) =
                if instr { (HazardKind::StaleInstruction, HazardAccess::Fetch) } else { (HazardKind::StaleReadByCpu, HazardAccess::Read) };
            let kind = if san.behind_mask(line) & bytes != 0 { kind } else { HazardKind::SharedLine };
            san.report(kind, base, access, cause, cause_pc);
        }
    }

    /// An invalidate without clean that discarded a dirty line (or would have, on the
    /// architecture: `masked` names the silicon rule that cleaned it instead, rule 20).
    #[cold]
    fn san_lost(&mut self, addr: u64, access: HazardAccess, masked: Option<SiliconRule>) {
        let line = self.l1d_line(addr);
        let base = line << self.l1d[0].line_shift();
        if let Some(san) = self.san.as_mut() {
            let (cause, cause_pc) = san.dirty_cause(line);
            san.report_masked(HazardKind::LostWrite, base, access, cause, cause_pc, masked);
        }
    }

    #[inline]
    fn data_line(&mut self, cpu: usize, addr: u64, write: bool, attr: Attr, hint: Hint, bytes: ByteMask) -> Option<usize> {
        match attr.base() {
            Attr::NormalNonCacheable | Attr::Device => {
                self.totals.at(Level::L1D).bypass += 1;
                self.totals.served[SERVED_MEMORY] += 1;
                if self.san.is_some() {
                    self.san_bypass(addr, write, attr, hint.pc, bytes);
                }
                None
            }
            Attr::NormalWriteThrough if write => {
                if self.coherent {
                    self.snoop(cpu, addr, true);
                    self.set_own_shared(cpu, addr, false, true);
                }
                self.write_through(cpu, addr);
                self.totals.served[SERVED_MEMORY] += 1;
                if self.san.is_some() {
                    self.san_code_written(addr, hint.pc, bytes);
                }
                None
            }
            _ => {
                if self.ws_lines != 0 && write {
                    let streaming = self.stream_write(cpu, addr >> self.l1d[cpu].line_shift(), bytes);
                    if streaming && attr.write_allocate() && self.l1d[cpu].probe(self.l1d[cpu].line_of(addr)).is_none() {
                        self.streaming_write_miss(cpu, addr, hint.pc, bytes);
                        return None;
                    }
                }
                let allocates = if write { attr.write_allocate() } else { attr.read_allocate() };
                if !allocates && self.l1d[cpu].probe(self.l1d[cpu].line_of(addr)).is_none() {
                    self.no_allocate_miss(cpu, addr, write, hint.pc, bytes);
                    return None;
                }
                // Rule 1c: a transient line is filled as its set's next victim, as an LDNP fill.
                let fill = Fill { dirty: write, prefetch: false, nt: hint.nt || attr.transient() };
                let (slot, depth, trigger) = self.demand_l1(cpu, false, addr, addr, fill, attr.transient(), hint.pc, bytes);
                self.totals.served[if depth > self.lower.len() { SERVED_MEMORY } else { depth }] += 1;
                let prefetched = trigger && self.hwpf.kind != HwPfKind::Off;
                if prefetched {
                    self.hw_prefetch(cpu, addr, hint.pc);
                }
                // The prefetches, or a back-invalidation by a lower level's victim (rule 18),
                // may have removed the line itself (a small, busy set).
                if prefetched || self.inclusive != [false; 2] {
                    let c = &self.l1d[cpu];
                    if c.slot(slot).map(|e| e.line) != Some(c.line_of(addr)) {
                        return None;
                    }
                }
                Some(slot)
            }
        }
    }

    /// Rules 1a and 1b: a write-back write without write-allocate, or a read without
    /// read-allocate, that misses L1D allocates nowhere (Arm ARM DDI 0487 chapter B2,
    /// "Cacheability, Shareability, Early Write Acknowledgement, and Cacheability hints": the
    /// allocation hints say whether a miss should allocate). It goes to the next level: the first level that
    /// holds the line serves it (a write dirties that copy), else memory.
    #[cold]
    fn no_allocate_miss(&mut self, cpu: usize, addr: u64, write: bool, pc: u64, bytes: ByteMask) {
        let t = self.totals.at(Level::L1D);
        t.accesses += 1;
        t.misses += 1;
        if self.coherent {
            self.snoop(cpu, addr, write);
        }
        let mut depth = SERVED_MEMORY;
        for i in 0..self.lower.len() {
            let c = self.lower_mut(i, cpu);
            let line = c.line_of(addr);
            let slot = c.probe(line);
            let hit = c.touch(line);
            let dirtied = match (write, slot) {
                (true, Some(slot)) => Some(!c.set_dirty(slot)),
                _ => None,
            };
            count_lookup(self.totals.at(Level::lower(i)), hit);
            if hit.is_some() {
                depth = i + 1;
                if let Some(dirtied) = dirtied {
                    self.san_write(cpu, addr, bytes, pc, dirtied);
                }
                break;
            }
        }
        if depth == SERVED_MEMORY && write && self.san.is_some() {
            self.san_code_written(addr, pc, bytes);
        }
        self.totals.served[depth.min(SERVED_MEMORY)] += 1;
    }

    /// Rule 1 at L1; returns the slot now holding the line, the depth that served it (0 = L1,
    /// 1 = L2, …, `lower_levels() + 1` = memory; see rule 15) and whether it is a hardware
    /// prefetcher trigger (a miss or a prefetch hit). A miss allocates in one pass with the
    /// lookup ([`Cache::access`]): the lower levels are other caches, so filling L1 before or
    /// after them picks the same victim.
    #[inline]
    /// `transient`: rule 1c, the lower levels fill the line as their set's next victim too
    /// (`fill.nt` alone, an LDNP/STNP, marks the L1 fill only).
    #[allow(clippy::too_many_arguments)]
    fn demand_l1(
        &mut self,
        cpu: usize,
        instr: bool,
        va: u64,
        addr: u64,
        fill: Fill,
        transient: bool,
        pc: u64,
        bytes: ByteMask,
    ) -> (usize, usize, bool) {
        let level = if instr { Level::L1I } else { Level::L1D };
        let c = if instr { &mut self.l1i[cpu] } else { &mut self.l1d[cpu] };
        let line = c.line_of(addr);
        let shift = c.line_shift();
        // Rule 18: under inclusion an L1D miss allocates after the lower levels' fills.
        let defer = !instr && self.inclusive != [false; 2] && c.probe(line).is_none();
        // Rule 21: `va` picks the set of a VIPT L1I (the data side is physically indexed).
        let r = if defer { Err((usize::MAX, None)) } else { c.access_at(c.line_of(va), line, fill) };
        let t = self.totals.at(level);
        t.accesses += 1;
        match r {
            Ok(hit) => {
                t.hits += 1;
                if hit.prefetched {
                    t.prefetch_hits += 1;
                }
                if self.san.is_some() {
                    if hit.stale && !fill.dirty {
                        self.san_stale_hit(addr, instr, bytes);
                    }
                    if fill.dirty {
                        self.san_write(cpu, addr, bytes, pc, !hit.was_dirty);
                    }
                }
                if hit.shared && fill.dirty && self.coherent {
                    self.upgrade(cpu, addr);
                }
                (hit.slot, 0, hit.prefetched)
            }
            Err((slot, victim)) => {
                t.misses += 1;
                if fill.dirty && self.san.is_some() {
                    self.san_write(cpu, addr, bytes, pc, true);
                }
                // The lower levels are looked up (and filled) first, then the L1 victim is
                // written back: the order of rules 1 and 2.
                let (depth, stale, mark) = self.demand_lower(cpu, addr, instr, fill.dirty, transient);
                if stale && !fill.dirty {
                    self.san_stale_hit(addr, instr, bytes);
                }
                let (slot, victim) = if defer {
                    let (slot, victim) = self.l1d[cpu].insert_with(line, fill);
                    // The shared mark rule 17 gave the private copies (the L1D had none yet).
                    if mark {
                        self.l1d[cpu].set_shared(slot, true);
                    }
                    (slot, victim)
                } else {
                    (slot, victim)
                };
                if let Some(v) = victim.filter(|v| v.dirty) {
                    self.totals.at(level).writebacks += 1;
                    self.writeback_into(cpu, 0, v.line << shift);
                }
                (slot, depth, true)
            }
        }
    }

    /// Rule 1 below L1, without recursion: each level is looked up (and filled on a miss) in
    /// turn down to the first hit; then the dirty victims are written back, the deepest level's
    /// first (the order of rules 1 and 2: a level's victim goes down after the levels below it
    /// were filled). Returns the depth that served the line (1 = L2, …, memory = levels + 1).
    /// Kept out of line so the L1 hit path stays small.
    /// With coherence (rule 17) the snoop comes before the PoC's lookup, and the upgrade and the
    /// shared marks of the new copies after the write-backs.
    /// The third value is the shared mark the new copies got (rule 17).
    #[inline(never)]
    fn demand_lower(&mut self, cpu: usize, addr: u64, instr: bool, write: bool, transient: bool) -> (usize, bool, bool) {
        // At most L2 and L3: the victims' addresses, by level.
        let mut victims = [None; 2];
        let mut depth = 0;
        let mut served = self.lower.len() + 1;
        let mut stale = false;
        // Rule 17: the L1I's own misses take part only through a private unified level.
        let coh = self.coherent && (!instr || self.private > 0);
        let (mut shared, mut snooped) = (false, false);
        while depth < self.lower.len() {
            let i = depth;
            if coh && i == self.private {
                shared = self.snoop(cpu, addr, write);
                snooped = true;
                self.count_handover(cpu, addr, instr);
            }
            depth += 1;
            let c = self.lower_mut(i, cpu);
            let shift = c.line_shift();
            // Rule 1c: a transient line is its set's next victim in every level it fills.
            let r = c.access(c.line_of(addr), Fill { nt: transient, ..Fill::demand(false) });
            let t = self.totals.at(Level::lower(i));
            t.accesses += 1;
            match r {
                Ok(hit) => {
                    t.hits += 1;
                    if hit.prefetched {
                        t.prefetch_hits += 1;
                    }
                    served = i + 1;
                    stale = hit.stale;
                    if i < self.private {
                        shared = hit.shared;
                    }
                    break;
                }
                Err((_, victim)) => {
                    t.misses += 1;
                    victims[i] = victim.filter(|v| v.dirty || self.inclusive[i]).map(|v| Evicted { line: v.line << shift, ..v });
                }
            }
        }
        if coh && !snooped && served > self.lower.len() {
            // Every level is private: the PoC is memory.
            shared = self.snoop(cpu, addr, write);
            snooped = true;
            self.count_handover(cpu, addr, instr);
        }
        for i in (0..depth).rev() {
            if let Some(v) = victims[i] {
                // `v.line` holds the victim's address here.
                self.evicted_lower(cpu, i, v.line, v.dirty);
            }
        }
        if coh {
            if write && shared && !snooped {
                // A shared copy below L1D: S → M.
                self.count_upgrade(cpu, addr);
                self.snoop(cpu, addr, true);
            }
            self.set_own_shared(cpu, addr, shared && !write, !instr);
        }
        (served, stale, coh && shared && !write)
    }

    /// Rule 17a: snoops every vCPU but `cpu` for the line holding `addr`, for a read (copies
    /// become shared) or a write (copies are invalidated); dirty copies are written back into the
    /// PoC first. Returns whether any other vCPU held the line.
    fn snoop(&mut self, cpu: usize, addr: u64, write: bool) -> bool {
        let mut any = false;
        // Rule 16b: the vCPUs (bit per vCPU) whose private caches held the line.
        let mut holders = 0u64;
        let buf = u64::from(self.in_buffers(addr));
        self.supplier_cross = None;
        for k in 0..self.vcpus {
            if k == cpu {
                continue;
            }
            if !self.is_active(k) {
                // Nothing cached there: a miss, without a probe.
                self.coh[k].snoop_misses += 1;
                continue;
            }
            let cross = self.cluster[k] != self.cluster[cpu];
            let (mut held, mut dirty) = (false, false);
            for p in 0..=self.private {
                let c = if p == 0 { &mut self.l1d[k] } else { &mut self.lower[p - 1][k] };
                let line = c.line_of(addr);
                let Some(slot) = c.probe(line) else { continue };
                held = true;
                let shift = c.line_shift();
                if c.clean_slot(slot) {
                    dirty = true;
                    self.totals.at(if p == 0 { Level::L1D } else { Level::lower(p - 1) }).writebacks += 1;
                    self.writeback_into(k, self.private, line << shift);
                }
                let c = if p == 0 { &mut self.l1d[k] } else { &mut self.lower[p - 1][k] };
                if write {
                    c.invalidate_slot(slot);
                } else {
                    c.set_shared(slot, true);
                }
            }
            if held {
                self.disturb(k);
            }
            let ck = &mut self.coh[k];
            if held {
                holders |= 1u64.checked_shl(k as u32).unwrap_or(0);
                ck.snoop_hits += 1;
                if write {
                    ck.invalidations += 1;
                    ck.buf_invalidations += buf;
                    ck.cross_invalidations += u64::from(cross);
                }
                any = true;
            } else {
                ck.snoop_misses += 1;
            }
            if dirty {
                self.coh[cpu].interventions += 1;
                self.coh[cpu].buf_interventions += buf;
                self.coh[cpu].cross_interventions += u64::from(cross);
                self.supplier_cross = Some(cross);
            }
        }
        self.san_shareability(cpu, addr, holders, write);
        any
    }

    /// Rule 16b after a snoop that found the line in the private caches of `holders` (bit per
    /// vCPU): only with the sanitizer, and only once a Non-shareable access was modelled.
    #[inline]
    fn san_shareability(&mut self, cpu: usize, addr: u64, holders: u64, write: bool) {
        let access = self.access_share;
        let shift = self.l1d[0].line_shift();
        let Some(san) = self.san.as_mut() else { return };
        if access.is_some_and(|(s, _)| s == Shareability::Non) || !san.non_shareable.is_empty() {
            let line = addr >> shift;
            san.shareability(cpu, line, line << shift, holders, access, write);
        }
    }

    /// Rule 19: after a demand access's snoop, a dirty copy that supplied a data access counts
    /// one hand-over for `cpu`, in its cluster or across.
    fn count_handover(&mut self, cpu: usize, addr: u64, instr: bool) {
        let Some(cross) = self.supplier_cross.take().filter(|_| !instr) else { return };
        let buf = u64::from(self.in_buffers(addr));
        let c = &mut self.coh[cpu];
        if cross {
            c.cross_handovers += 1;
            c.buf_cross_handovers += buf;
        } else {
            c.cluster_handovers += 1;
            c.buf_cluster_handovers += buf;
        }
    }

    /// Rule 17d with rule 19's split: `cpu`'s broadcast maintenance reached vCPU `k`.
    fn count_remote_maint(&mut self, k: usize, cpu: usize) {
        self.coh[k].remote_maint += 1;
        self.coh[k].cross_remote_maint += u64::from(self.cluster[k] != self.cluster[cpu]);
    }

    /// Rule 17b: a write hit on a shared L1D copy (already unmarked by the hit).
    #[cold]
    fn upgrade(&mut self, cpu: usize, addr: u64) {
        self.count_upgrade(cpu, addr);
        self.snoop(cpu, addr, true);
        self.set_own_shared(cpu, addr, false, true);
    }

    fn count_upgrade(&mut self, cpu: usize, addr: u64) {
        self.coh[cpu].upgrades += 1;
        self.coh[cpu].buf_upgrades += u64::from(self.in_buffers(addr));
    }

    /// Marks (or unmarks) every copy of the line in `cpu`'s private domain shared; the L1D's
    /// only when `l1d`.
    fn set_own_shared(&mut self, cpu: usize, addr: u64, shared: bool, l1d: bool) {
        for p in usize::from(!l1d)..=self.private {
            let c = if p == 0 { &mut self.l1d[cpu] } else { &mut self.lower[p - 1][cpu] };
            if let Some(slot) = c.probe(c.line_of(addr)) {
                c.set_shared(slot, shared);
            }
        }
    }

    /// Whether `cpu`'s private domain holds the line, from path position `from` (0 = L1D) on,
    /// and if so whether its copies are shared.
    fn own_copy(&self, cpu: usize, addr: u64, from: usize) -> Option<bool> {
        (from..=self.private).find_map(|p| {
            let c = if p == 0 { &self.l1d[cpu] } else { &self.lower[p - 1][cpu] };
            c.probe(c.line_of(addr)).map(|slot| c.is_shared(slot))
        })
    }

    /// Rule 11: a software prefetch (PRFM PLD/PST) of the line holding `pa` into `level`
    /// (1 = L1D, 2 = L2, 3 = L3), non-temporal for …STRM.
    pub fn prefetch(&mut self, cpu: usize, pa: u64, level: u32, nt: bool, attr: Attr) {
        tr!(self, "R {cpu} {pa} {level} {} {}\n", u8::from(nt), attr as u8);
        self.activate(cpu);
        if !self.effective(attr).cacheable() || level == 0 {
            return;
        }
        let target = (level as usize - 1).min(self.lower.len());
        self.fill_prefetch(cpu, pa, target, nt);
    }

    /// Whether the data-side cache at path position `p` (0 = L1D, 1 = L2, 2 = L3) holds `addr`.
    fn holds(&self, cpu: usize, p: usize, addr: u64) -> bool {
        let c = if p == 0 { &self.l1d[cpu] } else { self.lower_cache(p - 1, cpu) };
        c.probe(c.line_of(addr)).is_some()
    }

    /// Rule 11's fill into path position `target` (0 = L1D) and the positions below it that
    /// lack the line.
    fn fill_prefetch(&mut self, cpu: usize, addr: u64, target: usize, nt: bool) {
        let depth = 1 + self.lower.len();
        // Rule 17a: a fill into the private domain from outside it is a coherent read.
        let coh = self.coherent && target <= self.private;
        let mut shared = false;
        if coh {
            match self.own_copy(cpu, addr, target) {
                Some(_) if self.holds(cpu, target, addr) => return,
                Some(s) => shared = s,
                None => shared = self.snoop(cpu, addr, false),
            }
        }
        let src = (target..depth).find(|&p| self.holds(cpu, p, addr)).unwrap_or(depth);
        for p in (target..src).rev() {
            let fill = Fill { dirty: false, prefetch: true, nt: nt && p == target };
            if p == 0 {
                self.totals.at(Level::L1D).prefetches += 1;
                let c = &mut self.l1d[cpu];
                let shift = c.line_shift();
                let (_, victim) = c.insert_with(c.line_of(addr), fill);
                if let Some(v) = victim.filter(|v| v.dirty) {
                    self.totals.at(Level::L1D).writebacks += 1;
                    self.writeback_into(cpu, 0, v.line << shift);
                }
            } else {
                self.totals.at(Level::lower(p - 1)).prefetches += 1;
                let c = self.lower_mut(p - 1, cpu);
                let line = c.line_of(addr);
                self.allocate_lower(cpu, p - 1, line, fill);
            }
        }
        if coh {
            self.set_own_shared(cpu, addr, shared, true);
        }
    }

    /// Rule 14: the hardware prefetcher, on a trigger at `addr` by the access at `pc`.
    fn hw_prefetch(&mut self, cpu: usize, addr: u64, pc: u64) {
        let shift = self.l1d[cpu].line_shift();
        let line = addr >> shift;
        let page = addr >> 12;
        let (distance, degree) = (u64::from(self.hwpf.distance), u64::from(self.hwpf.degree));
        let stride = match self.hwpf.kind {
            HwPfKind::Off => return,
            HwPfKind::NextLine => 1i64,
            HwPfKind::Stride => {
                let e = &mut self.stride[cpu][(pc >> 2) as usize % STRIDE_ENTRIES];
                if e.pc != pc {
                    *e = StrideEntry { pc, last: line, stride: 0, equal: 0 };
                    return;
                }
                let s = line.wrapping_sub(e.last) as i64;
                e.last = line;
                if s == 0 {
                    return;
                }
                if s == e.stride {
                    e.equal = e.equal.saturating_add(1);
                } else {
                    e.stride = s;
                    e.equal = 1;
                }
                if e.equal < 2 {
                    return;
                }
                s
            }
        };
        for k in 0..degree {
            let t = line.wrapping_add((stride.wrapping_mul((distance + k) as i64)) as u64);
            let a = t << shift;
            if a >> 12 != page || t >> (64 - shift) != 0 {
                break;
            }
            self.fill_prefetch(cpu, a, 0, false);
        }
    }

    /// Rule 2 below L1.
    fn allocate_lower(&mut self, cpu: usize, i: usize, line: u64, fill: Fill) {
        let c = self.lower_mut(i, cpu);
        let shift = c.line_shift();
        let (_, victim) = c.insert_with(line, fill);
        if let Some(v) = victim {
            self.evicted_lower(cpu, i, v.line << shift, v.dirty);
        }
    }

    /// Rules 2 and 18: lower level `i` (reached by `cpu`) replaced the line at `addr`; an
    /// inclusive level first back-invalidates the L1D copies, whose dirty data joins the victim;
    /// a dirty victim is written back into the next level.
    fn evicted_lower(&mut self, cpu: usize, i: usize, addr: u64, mut dirty: bool) {
        if self.inclusive[i] {
            dirty |= self.back_invalidate(cpu, i, addr);
        }
        if dirty {
            self.totals.at(Level::lower(i)).writebacks += 1;
            self.writeback_into(cpu, i + 1, addr);
        }
    }

    /// Rule 18: invalidates every L1D copy of the bytes of lower level `i`'s line at `addr` in
    /// the vCPUs that level serves; returns whether any was dirty (each dirty one counts an L1D
    /// write-back).
    #[cold]
    fn back_invalidate(&mut self, cpu: usize, i: usize, addr: u64) -> bool {
        let bytes = 1u64 << self.lower_mut(i, cpu).line_shift();
        let start = addr & !(bytes - 1);
        let served = if self.sharing[i] == Sharing::Shared { 0..self.vcpus } else { cpu..cpu + 1 };
        let mut dirty = false;
        for k in served {
            let c = &mut self.l1d[k];
            let step = 1u64 << c.line_shift();
            let mut a = start;
            let mut any = false;
            while a < start + bytes {
                if let Some(slot) = c.probe(c.line_of(a)) {
                    any = true;
                    if c.invalidate_slot(slot).is_some_and(|e| e.dirty) {
                        dirty = true;
                        self.totals.at(Level::L1D).writebacks += 1;
                    }
                }
                a += step;
            }
            if any {
                // The issuing vCPU's own copies too: its fetch or prefetch may remove the line
                // its shortcut remembers.
                self.disturb(k);
            }
        }
        dirty
    }

    /// Rule 3: a dirty line arrives at lower level `i` (or memory).
    fn writeback_into(&mut self, cpu: usize, i: usize, addr: u64) {
        if i >= self.lower.len() {
            return;
        }
        let c = self.lower_mut(i, cpu);
        let line = c.line_of(addr);
        match c.probe(line) {
            Some(slot) => {
                c.set_dirty(slot);
            }
            None => self.allocate_lower(cpu, i, line, Fill::demand(true)),
        }
    }

    /// Rule 4 (and rule 12: a write-through hit on a prefetched line is its first demand use).
    fn write_through(&mut self, cpu: usize, addr: u64) {
        let c = &mut self.l1d[cpu];
        let hit = c.touch(c.line_of(addr));
        count_lookup(self.totals.at(Level::L1D), hit);
        for i in 0..self.lower.len() {
            let c = self.lower_mut(i, cpu);
            let hit = c.touch(c.line_of(addr));
            count_lookup(self.totals.at(Level::lower(i)), hit);
        }
    }

    /// Marks an L1D slot dirty if it still holds `line` (the plugin's fast path defers the dirty
    /// bit of repeated write hits to here); `pc` is the first deferred write's, `bytes` what the
    /// deferred writes wrote (the sanitizer's byte mask).
    pub fn mark_l1d_dirty(&mut self, cpu: usize, slot: usize, line: u64, pc: u64, bytes: ByteMask) {
        debug_assert!(self.trace.is_none(), "the plugin's shortcut is off while tracing");
        if self.ws_lines != 0 {
            // The deferred stores were write-back writes of this line (rule 20d), hits all.
            self.stream_write(cpu, line, bytes);
        }
        let c = &mut self.l1d[cpu];
        if c.slot(slot).is_some_and(|e| e.line == line) {
            let was_dirty = c.set_dirty(slot);
            let shift = c.line_shift();
            self.san_write(cpu, line << shift, bytes, pc, !was_dirty);
        }
    }

    /// Writes that bypassed the caches to `bytes` of the L1D line `line` (no cache holds it; the
    /// plugin's fast path defers the sanitizer's note of repeated ones to here): executing those
    /// bytes before an IC invalidate is a stale-instruction (unless CTR_EL0.DIC = 1).
    pub fn note_uncached_writes(&mut self, line: u64, pc: u64, bytes: ByteMask) {
        if let Some(san) = self.san.as_mut() {
            san.wrote(line, bytes, pc, None, false);
        }
    }

    /// Rules 6 and 7: a data-cache operation by physical address, issued by `cpu`.
    pub fn dc_by_pa(&mut self, cpu: usize, op: LineOp, point: Point, pa: u64) {
        tr!(self, "P {} {} {pa} {cpu}\n", op as u8, point as u8);
        // By-address operations are broadcast: every vCPU's caches are affected (rule 17d).
        if self.coherent {
            for k in (0..self.vcpus).filter(|&k| k != cpu) {
                if self.own_copy(k, pa, 0).is_some() {
                    self.count_remote_maint(k, cpu);
                }
            }
        }
        self.totals.at(Level::L1D).maint += 1;
        // Rule 20a: DC IVAC executes as DC CIVAC; the sanitizer judges the instruction.
        let masked = (self.ivac_as_civac && op == LineOp::Invalidate && point == Point::Coherency).then_some(SiliconRule::IvacAsCivac);
        if op == LineOp::Invalidate && self.san.is_some() && self.poc_caches().any(|c| c.holds_dirty(c.line_of(pa))) {
            self.san_lost(pa, HazardAccess::DcIvac, masked);
        }
        let op = if masked.is_some() { LineOp::CleanInvalidate } else { op };
        for k in 0..self.vcpus {
            let c = &mut self.l1d[k];
            let line = c.line_of(pa);
            let Some(slot) = c.probe(line) else { continue };
            if op != LineOp::Invalidate && c.clean_slot(slot) {
                self.totals.at(Level::L1D).writebacks += 1;
                if point == Point::Unification {
                    self.writeback_into(k, 0, pa);
                }
            }
            if op != LineOp::Clean {
                self.l1d[k].invalidate_slot(slot);
            }
        }
        if point == Point::Unification {
            return;
        }
        for i in 0..self.lower.len() {
            let level = Level::lower(i);
            self.totals.at(level).maint += 1;
            for c in &mut self.lower[i] {
                let Some(slot) = c.probe(c.line_of(pa)) else { continue };
                if op != LineOp::Invalidate && c.clean_slot(slot) {
                    self.totals.levels[level as usize].writebacks += 1;
                }
                if op != LineOp::Clean {
                    c.invalidate_slot(slot);
                }
            }
        }
    }

    /// Rules 6 and 7 for a guest whose smallest data-cache line (CTR_EL0.DminLine, `granule`
    /// bytes) is longer than the model's L1D line: one operation covers every model line of the
    /// aligned granule, as it covers the whole (longer) line on the guest's caches, and counts one
    /// `maint` per model line. A granule of at most one model line is [`Model::dc_by_pa`].
    pub fn dc_by_pa_granule(&mut self, cpu: usize, op: LineOp, point: Point, pa: u64, granule: u64) {
        let line = 1u64 << self.l1d[cpu].line_shift();
        if granule <= line || !granule.is_power_of_two() {
            return self.dc_by_pa(cpu, op, point, pa);
        }
        let start = pa & !(granule - 1);
        for a in (start..start + granule).step_by(line as usize) {
            self.dc_by_pa(cpu, op, point, a);
        }
    }

    /// Rule 10's IC IVAU for a guest whose smallest instruction-cache line (CTR_EL0.IminLine,
    /// `granule` bytes) is longer than the model's L1I line: every model line of the aligned
    /// granule, one `maint` each (see [`Model::dc_by_pa_granule`]).
    pub fn ic_invalidate_granule(&mut self, cpu: usize, pa: u64, granule: u64) {
        self.ic_invalidate_granule_va(cpu, pa, pa, granule);
    }

    /// [`Model::ic_invalidate_granule`] of VA `va` (whose PA is `pa`; rule 21).
    pub fn ic_invalidate_granule_va(&mut self, cpu: usize, va: u64, pa: u64, granule: u64) {
        let line = 1u64 << self.l1i[cpu].line_shift();
        if granule <= line || !granule.is_power_of_two() {
            return self.ic_invalidate_va(cpu, va, pa);
        }
        let start = pa & !(granule - 1);
        let vstart = va & !(granule - 1);
        for off in (0..granule).step_by(line as usize) {
            self.ic_invalidate_va(cpu, vstart + off, start + off);
        }
    }

    /// Rule 8: a set/way operation on the cache `cpu` sees at `level` (1-based), slot (set, way).
    /// A level, set or way the model does not have counts the operation and does nothing.
    pub fn dc_set_way(&mut self, cpu: usize, op: LineOp, level: u32, set: usize, way: usize) {
        let Some(sets) = self.data_level_geometry(level).map(|g| g.sets as usize) else { return };
        let index = if set < sets { (way as u64) * sets as u64 + set as u64 } else { u64::MAX };
        self.dc_set_way_slots(cpu, op, level, index..index.saturating_add(1));
    }

    /// Rule 8 for one guest set/way operation that covers several model slots (as
    /// `way * sets + set` indices; see `decode::guest_to_model_slots`): one `maint`, every slot.
    pub fn dc_set_way_slots(&mut self, cpu: usize, op: LineOp, level: u32, slots: std::ops::Range<u64>) {
        tr!(self, "S {cpu} {} {level} {} {}\n", op as u8, slots.start, slots.end);
        let (lvl, i) = match level {
            1 => (Level::L1D, None),
            n if (n as usize) >= 2 && (n as usize) - 2 < self.lower.len() => (Level::lower(n as usize - 2), Some(n as usize - 2)),
            _ => return,
        };
        self.totals.at(lvl).maint += 1;
        // Rule 20b: DC ISW also cleans; the sanitizer judges the instruction.
        let masked = (self.isw_cleans && op == LineOp::Invalidate).then_some(SiliconRule::IswCleans);
        for index in slots {
            let c = match i {
                None => &mut self.l1d[cpu],
                Some(i) => self.lower_mut(i, cpu),
            };
            let (sets, ways) = (c.sets() as u64, c.ways() as u64);
            if index >= sets * ways {
                return;
            }
            let slot = c.slot_of((index % sets) as usize, (index / sets) as usize);
            let shift = c.line_shift();
            let Some(held) = c.slot(slot) else { continue };
            if op == LineOp::Invalidate && held.dirty && self.san.is_some() {
                self.san_lost(held.line << shift, HazardAccess::DcIsw, masked);
            }
            let op = if masked.is_some() { LineOp::CleanInvalidate } else { op };
            let c = match i {
                None => &mut self.l1d[cpu],
                Some(i) => self.lower_mut(i, cpu),
            };
            let dirty = op != LineOp::Invalidate && c.clean_slot(slot);
            if op != LineOp::Clean {
                c.invalidate_slot(slot);
            }
            if dirty {
                self.totals.at(lvl).writebacks += 1;
                self.writeback_into(cpu, i.map_or(0, |i| i + 1), held.line << shift);
            }
        }
    }

    /// Geometry (line, sets, ways) of the data or unified cache at `level` (1-based), if modelled.
    pub fn data_level_geometry(&self, level: u32) -> Option<crate::geometry::Geometry> {
        match level {
            1 => Some(self.config.l1d),
            n => self.config.lower.get((n as usize).checked_sub(2)?).map(|l| l.geometry),
        }
    }

    /// Rule 9: DC ZVA of the block holding `pa`.
    pub fn dc_zva(&mut self, cpu: usize, pa: u64, attr: Attr) {
        tr!(self, "Z {cpu} {pa} {}\n", attr as u8);
        self.activate(cpu);
        let attr = self.effective(attr);
        self.totals.at(Level::L1D).maint += 1;
        let block = u64::from(self.config.zva_bytes);
        let start = pa & !(block - 1);
        match attr.base() {
            Attr::NormalNonCacheable | Attr::Device => self.totals.at(Level::L1D).bypass += 1,
            Attr::NormalWriteThrough => {
                let step = 1u64 << self.l1d[cpu].line_shift();
                for a in (start..start + block).step_by(step as usize) {
                    self.write_through(cpu, a);
                }
            }
            _ => {
                let shift = self.l1d[cpu].line_shift();
                let step = 1u64 << shift;
                for a in (start..start + block).step_by(step as usize) {
                    if self.coherent {
                        self.snoop(cpu, a, true);
                        self.set_own_shared(cpu, a, false, true);
                    }
                    let c = &mut self.l1d[cpu];
                    let line = c.line_of(a);
                    let all = full_mask(shift);
                    if let Some(slot) = c.lookup(line) {
                        let was_dirty = c.set_dirty(slot);
                        self.san_write(cpu, a, all, 0, !was_dirty);
                        continue;
                    }
                    let (_, victim) = c.insert(line, true);
                    self.san_write(cpu, a, all, 0, true);
                    if let Some(v) = victim.filter(|v| v.dirty) {
                        self.totals.at(Level::L1D).writebacks += 1;
                        self.writeback_into(cpu, 0, v.line << shift);
                    }
                }
            }
        }
    }

    /// Rule 10: IC IALLU (`all_vcpus` false) or IC IALLUIS (true).
    pub fn ic_invalidate_all(&mut self, cpu: usize, all_vcpus: bool) {
        tr!(self, "I {cpu} {}\n", u8::from(all_vcpus));
        self.totals.at(Level::L1I).maint += 1;
        if let Some(san) = self.san.as_mut() {
            san.ic_invalidated_all();
        }
        for (k, c) in self.l1i.iter_mut().enumerate() {
            if all_vcpus || k == cpu {
                c.invalidate_all();
            }
            if all_vcpus && k != cpu && self.coherent {
                self.coh[k].remote_maint += 1;
                self.coh[k].cross_remote_maint += u64::from(self.cluster[k] != self.cluster[cpu]);
            }
        }
    }

    /// Rule 10: IC IVAU of the line holding `pa`, issued by `cpu`, through VA = PA.
    pub fn ic_invalidate_pa(&mut self, cpu: usize, pa: u64) {
        self.ic_invalidate_va(cpu, pa, pa);
    }

    /// Rules 10 and 20: IC IVAU of VA `va`, whose PA is `pa`, issued by `cpu`: the copy in the
    /// set `va` indexes (a VIPT L1I), or the line's one copy (PIPT), in every vCPU's L1I.
    pub fn ic_invalidate_va(&mut self, cpu: usize, va: u64, pa: u64) {
        tr!(self, "V {pa} {cpu} {va}\n");
        self.totals.at(Level::L1I).maint += 1;
        // Rule 21 with the sanitizer: code written since the line's last IC invalidate, whose
        // copies at other VIPT indexes this IVAU does not reach (marked stale below).
        let mut unreached: Vec<(u64, u64, ByteMask)> = Vec::new();
        let vipt = self.l1i[0].va_index_bits() != 0;
        if let Some(san) = self.san.as_mut() {
            let shift = self.l1d[0].line_shift();
            let span = 1u64 << self.l1i[0].line_shift().max(shift);
            let start = pa & !(span - 1);
            for a in (start..start + span).step_by(1 << shift) {
                if let Some((pc, bytes)) = san.written(a >> shift).filter(|_| vipt) {
                    unreached.push((a >> shift, pc, bytes));
                }
                san.ic_invalidated(a >> shift);
            }
        }
        let before: u64 = if vipt { self.l1i.iter().map(|c| c.copies(c.line_of(pa)).count() as u64).sum() } else { 0 };
        for (k, c) in self.l1i.iter_mut().enumerate() {
            if let Some(slot) = c.probe_at(c.line_of(va), c.line_of(pa)) {
                c.invalidate_slot(slot);
                if k != cpu && self.coherent {
                    self.coh[k].remote_maint += 1;
                    self.coh[k].cross_remote_maint += u64::from(self.cluster[k] != self.cluster[cpu]);
                }
            }
        }
        if vipt {
            let left: u64 = self.l1i.iter().map(|c| c.copies(c.line_of(pa)).count() as u64).sum();
            if left > 0 && !unreached.is_empty() {
                // The copies left hold the code from before the writes: fetching through their
                // VAs executes it (a stale-instruction at the hit, `san_stale_hit`).
                let shift = self.l1d[0].line_shift();
                for &(line, pc, bytes) in &unreached {
                    for c in &mut self.l1i {
                        let _ = c.mark_stale(c.line_of(line << shift));
                    }
                    if let Some(san) = self.san.as_mut() {
                        let b = san.behind.entry(line).or_insert(crate::sanitize::Behind {
                            pc,
                            kind: HazardCause::WriteIvauOtherAlias,
                            bytes: 0,
                        });
                        (b.pc, b.kind) = (pc, HazardCause::WriteIvauOtherAlias);
                        b.bytes |= bytes;
                    }
                }
                self.disturbed = u64::MAX;
            }
            if left > 0 {
                let c = &self.l1i[cpu];
                let shift = c.line_shift();
                let index = (c.line_of(pa) & !c.va_index_bits()) | (c.line_of(va) & c.va_index_bits());
                let set = (index & (c.sets() as u64 - 1)) as usize;
                let note = IcAlias { cpu, va: va >> shift << shift, pa: pa >> shift << shift, set, before, left };
                if self.ic_aliases.len() < IC_ALIAS_LIMIT {
                    self.ic_aliases.push(note);
                } else {
                    self.ic_aliases_dropped += 1;
                }
            }
        }
    }

    /// Whether the line holding `pa` is in `cpu`'s L1I (the plugin's fetch fast path checks
    /// this), reached through VA = PA.
    pub fn l1i_holds(&self, cpu: usize, pa: u64) -> bool {
        self.l1i_holds_at(cpu, pa, pa)
    }

    /// [`Model::l1i_holds`] through VA `va` (rule 21: the set a VIPT L1I indexes by it).
    pub fn l1i_holds_at(&self, cpu: usize, va: u64, pa: u64) -> bool {
        let c = &self.l1i[cpu];
        c.probe_at(c.line_of(va), c.line_of(pa)).is_some()
    }

    /// Whether `cpu`'s L1D copy in `slot` is marked stale: every demand hit on it reports a
    /// hazard, so the plugin's shortcut never takes it for a plain hit.
    pub fn l1d_stale(&self, cpu: usize, slot: usize) -> bool {
        self.l1d[cpu].slot_stale(slot)
    }

    /// Whether `cpu`'s L1D copy in `slot` is marked shared (rule 17: a write to it upgrades, a
    /// coherence action, so the plugin's shortcut takes only loads on it).
    pub fn l1d_shared(&self, cpu: usize, slot: usize) -> bool {
        self.l1d[cpu].is_shared(slot)
    }

    /// Whether `cpu`'s L1I holds any line of the L1D line holding `pa`.
    fn l1i_overlaps(&self, cpu: usize, pa: u64) -> bool {
        let shift = self.l1d[0].line_shift();
        let base = pa >> shift << shift;
        let c = &self.l1i[cpu];
        let step = (1u64 << c.line_shift()).min(1 << shift);
        (base..base + (1 << shift)).step_by(step as usize).any(|a| c.copies(c.line_of(a)).next().is_some())
    }

    /// Whether any cache holds a copy of the L1D line holding `pa` (every vCPU's L1D and L1I,
    /// every lower level). With none, a non-cacheable or Device access of the line changes no
    /// sanitizer state and reports nothing (rule 5 and `san_bypass`), so the plugin's shortcut
    /// may count further such accesses without the model.
    pub fn cached_anywhere(&self, pa: u64) -> bool {
        let shift = self.l1d[0].line_shift();
        let base = pa >> shift << shift;
        let held = |c: &Cache| c.probe(c.line_of(base)).is_some();
        // Private caches (L1 and the first `private` lower levels, one per core) only of the
        // active cores; shared ones always.
        let data = (0..self.vcpus).any(|k| self.is_active(k) && held(&self.l1d[k]))
            || self.lower.iter().enumerate().any(|(p, level)| match p < self.private {
                true => (0..self.vcpus).any(|k| self.is_active(k) && held(&level[k])),
                false => level.iter().any(held),
            });
        data || (0..self.l1i.len()).any(|cpu| self.is_active(cpu) && self.l1i_overlaps(cpu, base))
    }
}

/// The 36 counters (four levels × eight, then `served`) as space-separated numbers.
pub fn counters_text(t: &Totals) -> String {
    let mut out = Vec::with_capacity(36);
    for c in &t.levels {
        out.extend([c.accesses, c.hits, c.misses, c.writebacks, c.maint, c.bypass, c.prefetches, c.prefetch_hits].map(|v| v.to_string()));
    }
    out.extend(t.served.map(|v| v.to_string()));
    out.join(" ")
}

fn count_lookup(c: &mut Counts, hit: Option<crate::cache::Hit>) {
    c.accesses += 1;
    match hit {
        Some(h) => {
            c.hits += 1;
            if h.prefetched {
                c.prefetch_hits += 1;
            }
        }
        None => c.misses += 1,
    }
}
