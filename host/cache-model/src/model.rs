//! The cache hierarchy: per-vCPU L1I and L1D, then L2 and an optional L3 (each shared or per
//! vCPU), with the access, write-back and maintenance rules below. Tags only, no data.
//!
//! # Rules (the reference simulator in `reference.rs` implements the same rules independently)
//!
//! 1. **Demand access** (a read, an instruction fetch, or a write to Normal write-back memory)
//!    looks the line up in L1 (I for fetches, D otherwise); a hit makes it most recent (LRU).
//!    A miss looks it up in L2, then L3, then memory; on the way back every level that missed
//!    allocates the line clean, the deepest first, and L1 last (dirty for a write-back write).
//!    Levels hold lines independently: nothing is inclusive or exclusive.
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
//! Private caches are not kept coherent with each other (no snooping protocol is modelled).

use std::io::Write;
use std::ops::{Add, Sub};

use crate::cache::{cache_seed, Cache};
use crate::geometry::{Hierarchy, Sharing};

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

/// Counters of one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Demand lookups (reads, fetches, writes; not write-backs received from above).
    pub accesses: u64,
    /// Lookups that found the line.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Dirty lines written back to the next level or memory (evictions and maintenance).
    pub writebacks: u64,
    /// Maintenance operations that addressed this level.
    pub maint: u64,
    /// Non-cacheable or Device accesses that skipped the caches (counted at L1 only).
    pub bypass: u64,
}

macro_rules! counts_op {
    ($tr:ident, $f:ident, $op:ident) => {
        impl $tr for Counts {
            type Output = Counts;
            fn $f(self, o: Counts) -> Counts {
                Counts {
                    accesses: self.accesses.$op(o.accesses),
                    hits: self.hits.$op(o.hits),
                    misses: self.misses.$op(o.misses),
                    writebacks: self.writebacks.$op(o.writebacks),
                    maint: self.maint.$op(o.maint),
                    bypass: self.bypass.$op(o.bypass),
                }
            }
        }
    };
}
counts_op!(Add, add, wrapping_add);
counts_op!(Sub, sub, wrapping_sub);

/// Counters of every level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Indexed by `Level as usize`.
    pub levels: [Counts; 4],
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
        Totals { levels: std::array::from_fn(|i| self.levels[i] + o.levels[i]) }
    }
}

impl Sub for Totals {
    type Output = Totals;
    fn sub(self, o: Totals) -> Totals {
        Totals { levels: std::array::from_fn(|i| self.levels[i] - o.levels[i]) }
    }
}

/// Memory attribute of an access, as the guest's mapping (or the MMU/cache state) makes it: the
/// marker protocol's attribute, one type shared with the kernel (`cachescope_arch::marker`).
pub use cachescope_arch::marker::ModelAttr as Attr;

/// What a maintenance operation does to a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintOp {
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
    /// Operation trace (see [`Model::trace_to`]).
    trace: Option<Box<dyn Write + Send>>,
}

impl Model {
    /// An empty (cold) hierarchy for `vcpus` vCPUs. The configuration must be valid
    /// ([`Hierarchy::validate`]).
    pub fn new(config: &Hierarchy, vcpus: usize) -> Self {
        let vcpus = vcpus.max(1);
        let mut id = 0u64;
        let mut mk = |g: &crate::geometry::Geometry| {
            id += 1;
            Cache::new(g.line_shift(), g.sets, g.ways, config.policy, cache_seed(config.seed, id))
        };
        let l1i = (0..vcpus).map(|_| mk(&config.l1i)).collect();
        let l1d = (0..vcpus).map(|_| mk(&config.l1d)).collect();
        let lower = config
            .lower
            .iter()
            .map(|l| {
                let n = if l.sharing == Sharing::Shared { 1 } else { vcpus };
                (0..n).map(|_| mk(&l.geometry)).collect()
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
            trace: None,
        }
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

    /// Replaces the counters (used when the hierarchy is rebuilt with a new geometry).
    pub fn set_totals(&mut self, t: Totals) {
        self.totals = t;
    }

    /// Records every operation from now on as one text line on `w`, after a header line with the
    /// hierarchy and the counters so far, so the reference simulator can replay the run (tests).
    /// Lines: `H vcpus l1i l1d [l2 sharing [l3 sharing]] policy seed zva`, `C <24 counters>`,
    /// `D cpu pa size write attr`, `F cpu pa attr`, `P op point pa`, `S cpu op level first end`,
    /// `Z cpu pa attr`, `I cpu all`, `V pa`, and `T <24 counters>` from [`Model::end_trace`]
    /// (attr, op and point are the enums' numbers; counters in `Level` order, six each).
    pub fn trace_to(&mut self, mut w: Box<dyn Write + Send>) {
        let h = &self.config;
        let mut head = format!("H {} {} {}", self.vcpus, h.l1i, h.l1d);
        for l in &h.lower {
            head += &format!(" {} {}", l.geometry, l.sharing.name());
        }
        let _ = writeln!(w, "{head} {} {} {}", h.policy.name(), h.seed, h.zva_bytes);
        let _ = writeln!(w, "C {}", counters_text(&self.totals));
        self.trace = Some(w);
    }

    /// Hands the trace writer over (to the next model after a geometry change).
    pub fn take_trace(&mut self) -> Option<Box<dyn Write + Send>> {
        self.trace.take()
    }

    /// Writes the `T` line with the current counters and flushes the trace.
    pub fn end_trace(&mut self) {
        let t = counters_text(&self.totals);
        if let Some(w) = self.trace.as_mut() {
            let _ = writeln!(w, "T {t}");
            let _ = w.flush();
        }
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
        tr!(self, "D {cpu} {pa} {size} {} {}\n", u8::from(write), attr as u8);
        let shift = self.l1d[cpu].line_shift();
        let first = pa >> shift;
        let last = pa.wrapping_add(u64::from(size.max(1)) - 1) >> shift;
        let mut slot = None;
        for line in first..=last {
            slot = self.data_line(cpu, line << shift, write, attr);
        }
        if first == last {
            slot
        } else {
            None
        }
    }

    /// An instruction fetch of the line holding `pa`.
    pub fn fetch(&mut self, cpu: usize, pa: u64, attr: Attr) {
        tr!(self, "F {cpu} {pa} {}\n", attr as u8);
        if !attr.cacheable() {
            self.totals.at(Level::L1I).bypass += 1;
            return;
        }
        self.demand_l1(cpu, true, pa, false);
    }

    #[inline]
    fn data_line(&mut self, cpu: usize, addr: u64, write: bool, attr: Attr) -> Option<usize> {
        match attr {
            Attr::NormalNonCacheable | Attr::Device => {
                self.totals.at(Level::L1D).bypass += 1;
                None
            }
            Attr::NormalWriteThrough if write => {
                self.write_through(cpu, addr);
                None
            }
            Attr::NormalWriteBack | Attr::NormalWriteThrough => Some(self.demand_l1(cpu, false, addr, write)),
        }
    }

    /// Rule 1 at L1; returns the slot now holding the line. A miss allocates in one pass with
    /// the lookup ([`Cache::access`]): the lower levels are other caches, so filling L1 before
    /// or after them picks the same victim.
    #[inline]
    fn demand_l1(&mut self, cpu: usize, instr: bool, addr: u64, dirty: bool) -> usize {
        let level = if instr { Level::L1I } else { Level::L1D };
        let c = if instr { &mut self.l1i[cpu] } else { &mut self.l1d[cpu] };
        let line = c.line_of(addr);
        let shift = c.line_shift();
        let r = c.access(line, dirty);
        let t = self.totals.at(level);
        t.accesses += 1;
        match r {
            Ok(slot) => {
                t.hits += 1;
                slot
            }
            Err((slot, victim)) => {
                t.misses += 1;
                // The lower levels are looked up (and filled) first, then the L1 victim is
                // written back: the order of rules 1 and 2.
                self.demand_lower(cpu, addr);
                if let Some(v) = victim.filter(|v| v.dirty) {
                    self.totals.at(level).writebacks += 1;
                    self.writeback_into(cpu, 0, v.line << shift);
                }
                slot
            }
        }
    }

    /// Rule 1 below L1, without recursion: each level is looked up (and filled on a miss) in
    /// turn down to the first hit; then the dirty victims are written back, the deepest level's
    /// first (the order of rules 1 and 2: a level's victim goes down after the levels below it
    /// were filled). Kept out of line so the L1 hit path stays small.
    #[inline(never)]
    fn demand_lower(&mut self, cpu: usize, addr: u64) {
        // At most L2 and L3: the victims' addresses, by level.
        let mut victims = [None; 2];
        let mut depth = 0;
        while depth < self.lower.len() {
            let i = depth;
            depth += 1;
            let c = self.lower_mut(i, cpu);
            let shift = c.line_shift();
            let r = c.access(c.line_of(addr), false);
            let t = self.totals.at(Level::lower(i));
            t.accesses += 1;
            match r {
                Ok(_) => {
                    t.hits += 1;
                    break;
                }
                Err((_, victim)) => {
                    t.misses += 1;
                    victims[i] = victim.filter(|v| v.dirty).map(|v| v.line << shift);
                }
            }
        }
        for i in (0..depth).rev() {
            if let Some(a) = victims[i] {
                self.totals.at(Level::lower(i)).writebacks += 1;
                self.writeback_into(cpu, i + 1, a);
            }
        }
    }

    /// Rule 2 below L1.
    fn allocate_lower(&mut self, cpu: usize, i: usize, line: u64, dirty: bool) {
        let c = self.lower_mut(i, cpu);
        let shift = c.line_shift();
        let (_, victim) = c.insert(line, dirty);
        if let Some(v) = victim.filter(|v| v.dirty) {
            self.totals.at(Level::lower(i)).writebacks += 1;
            self.writeback_into(cpu, i + 1, v.line << shift);
        }
    }

    /// Rule 3: a dirty line arrives at lower level `i` (or memory).
    fn writeback_into(&mut self, cpu: usize, i: usize, addr: u64) {
        if i >= self.lower.len() {
            return;
        }
        let c = self.lower_mut(i, cpu);
        let line = c.line_of(addr);
        match c.probe(line) {
            Some(slot) => c.set_dirty(slot),
            None => self.allocate_lower(cpu, i, line, true),
        }
    }

    /// Rule 4.
    fn write_through(&mut self, cpu: usize, addr: u64) {
        let c = &mut self.l1d[cpu];
        let hit = c.lookup(c.line_of(addr)).is_some();
        count_lookup(self.totals.at(Level::L1D), hit);
        for i in 0..self.lower.len() {
            let c = self.lower_mut(i, cpu);
            let hit = c.lookup(c.line_of(addr)).is_some();
            count_lookup(self.totals.at(Level::lower(i)), hit);
        }
    }

    /// Marks an L1D slot dirty if it still holds `line` (the plugin's fast path defers the dirty
    /// bit of repeated write hits to here).
    pub fn mark_l1d_dirty(&mut self, cpu: usize, slot: usize, line: u64) {
        debug_assert!(self.trace.is_none(), "the plugin's shortcut is off while tracing");
        let c = &mut self.l1d[cpu];
        if c.slot(slot).is_some_and(|e| e.line == line) {
            c.set_dirty(slot);
        }
    }

    /// Rules 6 and 7: a data-cache operation by physical address, issued by `cpu`.
    pub fn dc_by_pa(&mut self, cpu: usize, op: MaintOp, point: Point, pa: u64) {
        tr!(self, "P {} {} {pa}\n", op as u8, point as u8);
        let _ = cpu; // by-address operations are broadcast: every vCPU's caches are affected
        self.totals.at(Level::L1D).maint += 1;
        for k in 0..self.vcpus {
            let c = &mut self.l1d[k];
            let line = c.line_of(pa);
            let Some(slot) = c.probe(line) else { continue };
            if op != MaintOp::Invalidate && c.clean_slot(slot) {
                self.totals.at(Level::L1D).writebacks += 1;
                if point == Point::Unification {
                    self.writeback_into(k, 0, pa);
                }
            }
            if op != MaintOp::Clean {
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
                if op != MaintOp::Invalidate && c.clean_slot(slot) {
                    self.totals.levels[level as usize].writebacks += 1;
                }
                if op != MaintOp::Clean {
                    c.invalidate_slot(slot);
                }
            }
        }
    }

    /// Rule 8: a set/way operation on the cache `cpu` sees at `level` (1-based), slot (set, way).
    /// A level, set or way the model does not have counts the operation and does nothing.
    pub fn dc_set_way(&mut self, cpu: usize, op: MaintOp, level: u32, set: usize, way: usize) {
        let Some(sets) = self.data_level_geometry(level).map(|g| g.sets as usize) else { return };
        let index = if set < sets { (way as u64) * sets as u64 + set as u64 } else { u64::MAX };
        self.dc_set_way_slots(cpu, op, level, index..index.saturating_add(1));
    }

    /// Rule 8 for one guest set/way operation that covers several model slots (as
    /// `way * sets + set` indices; see `decode::guest_to_model_slots`): one `maint`, every slot.
    pub fn dc_set_way_slots(&mut self, cpu: usize, op: MaintOp, level: u32, slots: std::ops::Range<u64>) {
        tr!(self, "S {cpu} {} {level} {} {}\n", op as u8, slots.start, slots.end);
        let (lvl, i) = match level {
            1 => (Level::L1D, None),
            n if (n as usize) >= 2 && (n as usize) - 2 < self.lower.len() => (Level::lower(n as usize - 2), Some(n as usize - 2)),
            _ => return,
        };
        self.totals.at(lvl).maint += 1;
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
            let dirty = op != MaintOp::Invalidate && c.clean_slot(slot);
            if op != MaintOp::Clean {
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
        self.totals.at(Level::L1D).maint += 1;
        let block = u64::from(self.config.zva_bytes);
        let start = pa & !(block - 1);
        match attr {
            Attr::NormalNonCacheable | Attr::Device => self.totals.at(Level::L1D).bypass += 1,
            Attr::NormalWriteThrough => {
                let step = 1u64 << self.l1d[cpu].line_shift();
                for a in (start..start + block).step_by(step as usize) {
                    self.write_through(cpu, a);
                }
            }
            Attr::NormalWriteBack => {
                let shift = self.l1d[cpu].line_shift();
                let step = 1u64 << shift;
                for a in (start..start + block).step_by(step as usize) {
                    let c = &mut self.l1d[cpu];
                    let line = c.line_of(a);
                    if let Some(slot) = c.lookup(line) {
                        c.set_dirty(slot);
                        continue;
                    }
                    let (_, victim) = c.insert(line, true);
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
        for (k, c) in self.l1i.iter_mut().enumerate() {
            if all_vcpus || k == cpu {
                c.invalidate_all();
            }
        }
    }

    /// Rule 10: IC IVAU of the line holding `pa`.
    pub fn ic_invalidate_pa(&mut self, pa: u64) {
        tr!(self, "V {pa}\n");
        self.totals.at(Level::L1I).maint += 1;
        for c in &mut self.l1i {
            if let Some(slot) = c.probe(c.line_of(pa)) {
                c.invalidate_slot(slot);
            }
        }
    }

    /// Whether the line holding `pa` is in `cpu`'s L1I (the plugin's fetch fast path checks this).
    pub fn l1i_holds(&self, cpu: usize, pa: u64) -> bool {
        let c = &self.l1i[cpu];
        c.probe(c.line_of(pa)).is_some()
    }
}

/// The 24 counters (four levels × six) as space-separated numbers.
pub fn counters_text(t: &Totals) -> String {
    let mut out = Vec::with_capacity(24);
    for c in &t.levels {
        out.extend([c.accesses, c.hits, c.misses, c.writebacks, c.maint, c.bypass].map(|v| v.to_string()));
    }
    out.join(" ")
}

fn count_lookup(c: &mut Counts, hit: bool) {
    c.accesses += 1;
    if hit {
        c.hits += 1;
    } else {
        c.misses += 1;
    }
}
