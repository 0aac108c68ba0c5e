//! An independent, deliberately naive reference simulator of the rules in `hierarchy.rs`, used only
//! by the tests: lines are `Option<RefLine>` with explicit timestamps, levels are walked with
//! plain loops over a path list, and write-backs travel down through a work list. It shares no
//! cache code with the model; only the random policy's generator (a specified input) is reused.
//! Non-temporal fills get a negative timestamp (`-now`), so they are older than every normal
//! line and the most recent of them is the oldest: the next LRU/FIFO victim.

use std::collections::VecDeque;

use crate::cache::{cache_seed, xorshift64star, Policy};
use crate::geometry::{Deviations, Geometry, Hierarchy, HwPfKind, HwPrefetch, Sharing};
use crate::hierarchy::{Attr, Coherence, LineOp, Point, Totals};

#[derive(Clone, Copy, Debug)]
struct RefLine {
    addr: u64, // first byte address of the line
    dirty: bool,
    pf: bool,     // brought in by a prefetch, not yet touched by a demand access
    shared: bool, // coherence: MESI's S (clean) when set
    used: i64,
    filled: i64,
}

#[derive(Clone, Debug)]
struct RefCache {
    geo: Geometry,
    sets: Vec<Vec<Option<RefLine>>>,
    policy: Policy,
    rng: u64,
    /// Tree PLRU: per set, the decision of every inner node of a binary tree over the ways,
    /// keyed by the node's range of ways `(first, len)` (len a power of two ≥ 2): `true` = the
    /// victim lies in the upper half.
    tree: Vec<std::collections::HashMap<(usize, usize), bool>>,
    /// Rule 21: a VIPT cache takes its set from `va`, the VA of the access being modelled (the
    /// whole VA's line number modulo the sets: below the page offset it equals the PA's).
    vipt: bool,
    va: u64,
}

impl RefCache {
    fn new(geo: Geometry, policy: Policy, seed: u64) -> Self {
        let tree = vec![std::collections::HashMap::new(); geo.sets as usize];
        Self { geo, sets: vec![vec![None; geo.ways as usize]; geo.sets as usize], policy, rng: seed, tree, vipt: false, va: 0 }
    }
    /// Tree PLRU: way `w` of set `si` was used (`toward` false) or is to be the next victim
    /// (`toward` true): every range containing `w` decides for the half without it, or with it.
    fn plru_set(&mut self, si: usize, w: usize, toward: bool) {
        let ways = self.sets[si].len();
        let mut len = 1;
        while len < ways {
            len *= 2;
        }
        let mut first = 0;
        while len >= 2 {
            let half = len / 2;
            let upper = w >= first + half;
            self.tree[si].insert((first, len), upper == toward);
            if upper {
                first += half;
            }
            len = half;
        }
    }
    /// Tree PLRU: the way the decisions lead to; an upper half with no ways is never taken.
    fn plru_victim(&self, si: usize) -> usize {
        let ways = self.sets[si].len();
        let mut len = 1;
        while len < ways {
            len *= 2;
        }
        let mut first = 0;
        while len >= 2 {
            let half = len / 2;
            let upper = self.tree[si].get(&(first, len)).copied().unwrap_or(false);
            if upper && first + half < ways {
                first += half;
            }
            len = half;
        }
        first
    }
    /// A demand use of way `w` of set `si` at time `now`: LRU stamps it, PLRU points away.
    fn used(&mut self, si: usize, w: usize, now: u64) {
        match self.policy {
            Policy::Lru => self.sets[si][w].as_mut().unwrap().used = now as i64,
            Policy::Plru => self.plru_set(si, w, false),
            Policy::Fifo | Policy::Random => {}
        }
    }
    fn base(&self, addr: u64) -> u64 {
        addr / u64::from(self.geo.line) * u64::from(self.geo.line)
    }
    fn set_index(&self, addr: u64) -> usize {
        let by = if self.vipt { self.va } else { addr };
        ((by / u64::from(self.geo.line)) % u64::from(self.geo.sets)) as usize
    }
    fn find(&self, addr: u64) -> Option<usize> {
        let b = self.base(addr);
        let s = &self.sets[self.set_index(addr)];
        (0..s.len()).find(|&w| matches!(s[w], Some(l) if l.addr == b))
    }
    /// Returns the evicted line if it was valid.
    fn put(&mut self, addr: u64, dirty: bool, pf: bool, nt: bool, now: u64) -> Option<RefLine> {
        let b = self.base(addr);
        let si = self.set_index(addr);
        let ways = self.sets[si].len();
        let mut victim = None;
        for w in 0..ways {
            if self.sets[si][w].is_none() {
                victim = Some(w);
                break;
            }
        }
        let w = match victim {
            Some(w) => w,
            None => match self.policy {
                Policy::Lru => (0..ways).min_by_key(|&w| self.sets[si][w].unwrap().used).unwrap(),
                Policy::Fifo => (0..ways).min_by_key(|&w| self.sets[si][w].unwrap().filled).unwrap(),
                Policy::Random => (xorshift64star(&mut self.rng) % ways as u64) as usize,
                Policy::Plru => self.plru_victim(si),
            },
        };
        let old = self.sets[si][w];
        let t = if nt { -(now as i64) } else { now as i64 };
        self.sets[si][w] = Some(RefLine { addr: b, dirty, pf, shared: false, used: t, filled: t });
        if self.policy == Policy::Plru {
            self.plru_set(si, w, nt);
        }
        old
    }
}

/// The reference hierarchy.
pub struct RefModel {
    l1i: Vec<RefCache>,
    l1d: Vec<RefCache>,
    lower: Vec<(Sharing, Vec<RefCache>)>,
    now: u64,
    hwpf: HwPrefetch,
    /// Per vCPU, 16 entries indexed by pc / 4: (pc, last line, stride, equal strides).
    stride: Vec<Vec<(u64, u64, i64, u32)>>,
    /// Same layout as the model's counters.
    pub totals: Totals,
    /// More than one vCPU: the coherence rules apply.
    coherent: bool,
    /// Private lower levels (they come first).
    private: usize,
    /// Coherence counters per vCPU.
    pub coh: Vec<Coherence>,
    /// Per lower level: inclusive of the L1Ds it serves (rule 18).
    inclusive: Vec<bool>,
    /// Rule 19: vCPUs per cluster.
    per_cluster: usize,
    /// Rule 19: the vCPU whose dirty copy the last snoop took.
    supplier: Option<usize>,
    /// Rule 20: the silicon deviations.
    dev: Deviations,
    /// Rule 20d, per vCPU: the line address the last write-back write went to, which of its
    /// bytes were written since, and how many lines in a row were written whole.
    streams: Vec<(Option<u64>, Vec<bool>, u32)>,
}

const I: usize = 0;
const D: usize = 1;

impl RefModel {
    /// Builds the same hierarchy as `Model::new(h, vcpus)` (same random seeds per cache).
    pub fn new(h: &Hierarchy, vcpus: usize) -> Self {
        let mut id = 0;
        let mut next = || {
            id += 1;
            cache_seed(h.seed, id)
        };
        let vipt = h.l1i_index == crate::geometry::Indexing::Vipt;
        let l1i = (0..vcpus).map(|_| RefCache { vipt, ..RefCache::new(h.l1i, h.policy.l1i, next()) }).collect();
        let l1d = (0..vcpus).map(|_| RefCache::new(h.l1d, h.policy.l1d, next())).collect();
        let mut lower = Vec::new();
        for (i, l) in h.lower.iter().enumerate() {
            let n = if l.sharing == Sharing::Shared { 1 } else { vcpus };
            let v = (0..n).map(|_| RefCache::new(l.geometry, h.policy.lower[i], next())).collect();
            lower.push((l.sharing, v));
        }
        let stride = vec![vec![(u64::MAX, 0, 0, 0); 16]; vcpus];
        let mut private = 0;
        while private < h.lower.len() && h.lower[private].sharing == Sharing::Private {
            private += 1;
        }
        Self {
            l1i,
            l1d,
            lower,
            now: 0,
            hwpf: h.hwpf.clone(),
            stride,
            totals: Totals::default(),
            coherent: vcpus > 1,
            private,
            coh: vec![Coherence::default(); vcpus],
            inclusive: (0..h.lower.len()).map(|i| h.policy.inclusive[i]).collect(),
            per_cluster: h.topology.cores_per_cluster.max(1) as usize,
            supplier: None,
            dev: h.silicon.clone(),
            streams: vec![(None, vec![false; h.l1d.line as usize], 0); vcpus],
        }
    }

    /// Rule 20c: write-through (plain or transient) is Non-cacheable on the modelled core.
    fn on_core(&self, attr: Attr) -> Attr {
        match attr {
            Attr::NormalWriteThrough | Attr::NormalWriteThroughTransient if self.dev.wt_as_nc => Attr::NormalNonCacheable,
            a => a,
        }
    }

    /// Rule 20d: bytes `lo..hi` of the line at `line_addr` were written by a write-back write of
    /// `cpu`; whether the vCPU now streams.
    fn stream_write(&mut self, cpu: usize, line_addr: u64, lo: usize, hi: usize) -> bool {
        let Some(threshold) = self.dev.write_streaming else { return false };
        let (at, bytes, run) = &mut self.streams[cpu];
        if *at != Some(line_addr) {
            if !bytes.iter().all(|&b| b) {
                *run = 0;
            }
            *at = Some(line_addr);
            bytes.iter_mut().for_each(|b| *b = false);
        }
        let before = bytes.iter().all(|&b| b);
        for b in &mut bytes[lo..hi] {
            *b = true;
        }
        if !before && bytes.iter().all(|&b| b) {
            *run += 1;
        }
        *run >= threshold
    }

    /// Rule 18: lower position `p` (≥ 1) lost `old`; drop every L1D line inside its bytes in the
    /// vCPUs that cache serves. Whether any of them held dirty data.
    fn back_invalidate(&mut self, cpu: usize, p: usize, old: &RefLine) -> bool {
        let (sharing, caches) = &self.lower[p - 1];
        let bytes = u64::from(caches[0].geo.line);
        let cpus: Vec<usize> = if *sharing == Sharing::Shared { (0..self.l1d.len()).collect() } else { vec![cpu] };
        let mut dirty = false;
        for k in cpus {
            for set in self.l1d[k].sets.iter_mut() {
                for way in set.iter_mut() {
                    if let Some(l) = *way {
                        if l.addr >= old.addr && l.addr < old.addr + bytes {
                            if l.dirty {
                                dirty = true;
                                self.totals.levels[D].writebacks += 1;
                            }
                            *way = None;
                        }
                    }
                }
            }
        }
        dirty
    }

    // ---- coherence -------------------------------------------------------------------------

    /// The data-side private cache of `cpu` at path position p (0 = L1D, 1.. = private lower).
    fn own(&mut self, cpu: usize, p: usize) -> &mut RefCache {
        if p == 0 {
            &mut self.l1d[cpu]
        } else {
            &mut self.lower[p - 1].1[cpu]
        }
    }

    /// The copy of `addr` in `cpu`'s private cache at position p.
    fn own_line(&mut self, cpu: usize, p: usize, addr: u64) -> Option<&mut RefLine> {
        let c = self.own(cpu, p);
        let w = c.find(addr)?;
        let si = c.set_index(addr);
        c.sets[si][w].as_mut()
    }

    /// Asks every other vCPU for the line: dirty copies go to the first shared level (or memory),
    /// then they are dropped (write) or marked shared (read). Whether anyone had it.
    fn snoop(&mut self, cpu: usize, addr: u64, write: bool) -> bool {
        let mut anyone = false;
        for k in 0..self.l1d.len() {
            if k == cpu {
                continue;
            }
            let mut had = false;
            let mut had_dirty = false;
            for p in 0..=self.private {
                let Some(l) = self.own_line(k, p, addr) else { continue };
                had = true;
                let was_dirty = l.dirty;
                let line_addr = l.addr;
                l.dirty = false;
                if was_dirty {
                    had_dirty = true;
                    self.totals.levels[p + 1].writebacks += 1;
                    let poc = 1 + self.private;
                    self.place(k, D, poc, line_addr, true, false);
                }
                let c = self.own(k, p);
                // The write-back's allocation may have back-invalidated this very copy (rule 18).
                let Some(w) = c.find(addr) else { continue };
                let si = c.set_index(addr);
                if write {
                    c.sets[si][w] = None;
                } else {
                    c.sets[si][w].as_mut().unwrap().shared = true;
                }
            }
            let far = self.far(k, cpu);
            if had {
                anyone = true;
                self.coh[k].snoop_hits += 1;
                if write {
                    self.coh[k].invalidations += 1;
                    if far {
                        self.coh[k].cross_invalidations += 1;
                    }
                }
            } else {
                self.coh[k].snoop_misses += 1;
            }
            if had_dirty {
                self.coh[cpu].interventions += 1;
                if far {
                    self.coh[cpu].cross_interventions += 1;
                }
                self.supplier = Some(k);
            }
        }
        anyone
    }

    /// Rule 19: whether vCPUs `a` and `b` are in different clusters.
    fn far(&self, a: usize, b: usize) -> bool {
        a / self.per_cluster != b / self.per_cluster
    }

    /// Rule 19: the snoop of a demand data access took a dirty copy: a hand-over.
    fn handed_over(&mut self, cpu: usize, side: usize) {
        if let Some(k) = self.supplier.take() {
            if side == D {
                if self.far(k, cpu) {
                    self.coh[cpu].cross_handovers += 1;
                } else {
                    self.coh[cpu].cluster_handovers += 1;
                }
            }
        }
    }

    /// Rule 17d, split by rule 19.
    fn remote_maint(&mut self, k: usize, cpu: usize) {
        self.coh[k].remote_maint += 1;
        if self.far(k, cpu) {
            self.coh[k].cross_remote_maint += 1;
        }
    }

    /// Sets the shared mark of every copy `cpu` holds (the L1D's only if `with_l1d`).
    fn mark_own(&mut self, cpu: usize, addr: u64, shared: bool, with_l1d: bool) {
        let first = if with_l1d { 0 } else { 1 };
        for p in first..=self.private {
            if let Some(l) = self.own_line(cpu, p, addr) {
                l.shared = shared;
            }
        }
    }

    /// Does `cpu` hold the line privately at position `from` or below (within its private
    /// levels)? Then: is it marked shared.
    fn own_shared(&mut self, cpu: usize, addr: u64, from: usize) -> Option<bool> {
        for p in from..=self.private {
            if let Some(l) = self.own_line(cpu, p, addr) {
                return Some(l.shared);
            }
        }
        None
    }

    fn tick(&mut self) -> u64 {
        self.now += 1;
        self.now
    }

    /// (counter index, cache) of path position `p` (0 = L1) for `cpu` on side `side`.
    fn at(&mut self, cpu: usize, side: usize, p: usize) -> (usize, &mut RefCache) {
        if p == 0 {
            if side == I {
                (0, &mut self.l1i[cpu])
            } else {
                (1, &mut self.l1d[cpu])
            }
        } else {
            let (sh, v) = &mut self.lower[p - 1];
            let k = if *sh == Sharing::Shared { 0 } else { cpu };
            (p + 1, &mut v[k])
        }
    }

    fn depth(&self) -> usize {
        1 + self.lower.len()
    }

    /// Puts a line at path position p and pushes dirty victims down until they settle.
    /// `fresh` = a fill (always allocates); otherwise a write-back arriving from above.
    fn place(&mut self, cpu: usize, side: usize, p: usize, addr: u64, dirty: bool, fresh: bool) {
        self.place_fill(cpu, side, p, addr, dirty, fresh, false, false);
    }

    /// `place` with the fill's prefetched flag and non-temporal position.
    #[allow(clippy::too_many_arguments)]
    fn place_fill(&mut self, cpu: usize, side: usize, p: usize, addr: u64, dirty: bool, fresh: bool, pf: bool, nt: bool) {
        let mut work = VecDeque::new();
        work.push_back((p, addr, dirty, fresh, pf, nt));
        while let Some((p, addr, dirty, fresh, pf, nt)) = work.pop_front() {
            if p >= self.depth() {
                continue; // memory
            }
            let now = self.tick();
            let (ci, c) = self.at(cpu, side, p);
            if !fresh {
                // a write-back arriving: mark dirty if present
                if let Some(w) = c.find(addr) {
                    let si = c.set_index(addr);
                    c.sets[si][w].as_mut().unwrap().dirty = true;
                    continue;
                }
            }
            if let Some(mut old) = c.put(addr, dirty, pf, nt, now) {
                if p >= 1 && self.inclusive[p - 1] && self.back_invalidate(cpu, p, &old) {
                    old.dirty = true;
                }
                if old.dirty {
                    self.totals.levels[ci].writebacks += 1;
                    work.push_back((p + 1, old.addr, true, false, false, false));
                }
            }
        }
    }

    /// A demand lookup: (hit, the line was prefetched and untouched until now).
    fn lookup(&mut self, cpu: usize, side: usize, p: usize, addr: u64) -> (bool, bool) {
        let now = self.tick();
        let (ci, c) = self.at(cpu, side, p);
        let (hit, pf) = match c.find(addr) {
            Some(w) => {
                let si = c.set_index(addr);
                c.used(si, w, now);
                let l = c.sets[si][w].as_mut().unwrap();
                let pf = l.pf;
                l.pf = false;
                (true, pf)
            }
            None => (false, false),
        };
        self.totals.levels[ci].accesses += 1;
        if hit {
            self.totals.levels[ci].hits += 1;
            if pf {
                self.totals.levels[ci].prefetch_hits += 1;
            }
        } else {
            self.totals.levels[ci].misses += 1;
        }
        (hit, pf)
    }

    /// Returns (depth that served the line, hardware-prefetch trigger).
    /// `nt`: the L1 fill is the set's next victim (LDNP/STNP, or a transient line); `transient`:
    /// the lower levels' fills too (rule 1c: a transient line is its set's next victim in every
    /// level it fills, where a non-temporal hint marks the first level only).
    #[allow(clippy::too_many_arguments)]
    fn demand(&mut self, cpu: usize, side: usize, addr: u64, dirty: bool, nt: bool, transient: bool) -> (usize, bool) {
        let depth = self.depth();
        let mut hit_at = depth;
        let mut trigger = true;
        let coh = self.coherent && (side == D || self.private > 0);
        let mut shared = false;
        let mut asked = false;
        for p in 0..depth {
            if coh && p == 1 + self.private {
                self.supplier = None;
                shared = self.snoop(cpu, addr, dirty);
                asked = true;
                self.handed_over(cpu, side);
            }
            if coh && p >= 1 && p <= self.private {
                // a private level below L1: its copy's mark, if it has one
                if let Some(l) = self.own_line(cpu, p, addr) {
                    shared = l.shared;
                }
            }
            let (hit, pf) = self.lookup(cpu, side, p, addr);
            if hit {
                hit_at = p;
                if p == 0 {
                    trigger = pf;
                }
                break;
            }
        }
        if hit_at == 0 {
            if dirty {
                let (_, c) = self.at(cpu, side, 0);
                let w = c.find(addr).unwrap();
                let si = c.set_index(addr);
                let l = c.sets[si][w].as_mut().unwrap();
                l.dirty = true;
                let was_shared = l.shared;
                l.shared = false;
                if was_shared && self.coherent {
                    self.coh[cpu].upgrades += 1;
                    self.snoop(cpu, addr, true);
                    self.mark_own(cpu, addr, false, true);
                }
            }
            return (0, trigger);
        }
        if coh && !asked && hit_at == depth {
            self.supplier = None;
            shared = self.snoop(cpu, addr, dirty);
            asked = true;
            self.handed_over(cpu, side);
        }
        for p in (1..hit_at).rev() {
            self.place_fill(cpu, side, p, addr, false, true, false, transient);
        }
        if coh && dirty && shared && !asked {
            self.coh[cpu].upgrades += 1;
            self.snoop(cpu, addr, true);
        }
        if coh {
            self.mark_own(cpu, addr, shared && !dirty, false);
        }
        self.place_fill(cpu, side, 0, addr, dirty, true, false, nt);
        if coh && side == D {
            self.mark_own(cpu, addr, shared && !dirty, true);
        }
        (hit_at, trigger)
    }

    /// Data access (every byte range split at L1D line boundaries).
    #[allow(dead_code)]
    pub fn data(&mut self, cpu: usize, pa: u64, size: u32, write: bool, attr: Attr) {
        self.data_hint(cpu, pa, size, write, attr, 0, false);
    }

    /// Data access with the PC and the non-temporal hint.
    #[allow(clippy::too_many_arguments)]
    pub fn data_hint(&mut self, cpu: usize, pa: u64, size: u32, write: bool, attr: Attr, pc: u64, nt: bool) {
        let line = u64::from(self.l1d[cpu].geo.line);
        let attr = self.on_core(attr);
        let end = pa + u64::from(size.max(1));
        let mut a = pa / line * line;
        while a < end {
            let allocates = if write { attr.write_allocate() } else { attr.read_allocate() };
            let (lo, hi) = ((pa.max(a) - a) as usize, (end.min(a + line) - a) as usize);
            let streams = write && attr.base() == Attr::NormalWriteBack && self.stream_write(cpu, a, lo, hi);
            match attr.base() {
                _ if streams && attr.write_allocate() && self.l1d[cpu].find(a).is_none() => {
                    // Write streaming: no linefill, the write goes into L2 (or memory).
                    self.totals.levels[D].accesses += 1;
                    self.totals.levels[D].misses += 1;
                    if self.coherent {
                        self.snoop(cpu, a, true);
                        self.mark_own(cpu, a, false, true);
                    }
                    if self.depth() > 1 {
                        self.place(cpu, D, 1, a, true, false);
                        self.totals.served[1] += 1;
                    } else {
                        self.totals.served[3] += 1;
                    }
                }
                _ if attr.cacheable() && !allocates && self.at(cpu, D, 0).1.find(a).is_none() => {
                    // No allocation on this miss: the first level holding the line serves it.
                    if self.coherent {
                        self.snoop(cpu, a, write);
                    }
                    let mut served = 3;
                    for p in 0..self.depth() {
                        if self.lookup(cpu, D, p, a).0 && p > 0 {
                            if write {
                                let c = self.at(cpu, D, p).1;
                                let (si, w) = (c.set_index(a), c.find(a).unwrap());
                                c.sets[si][w].as_mut().unwrap().dirty = true;
                            }
                            served = p;
                            break;
                        }
                    }
                    self.totals.served[served] += 1;
                }
                Attr::NormalNonCacheable | Attr::Device => {
                    self.totals.levels[D].bypass += 1;
                    self.totals.served[3] += 1;
                }
                Attr::NormalWriteThrough if write => {
                    if self.coherent {
                        self.snoop(cpu, a, true);
                        self.mark_own(cpu, a, false, true);
                    }
                    for p in 0..self.depth() {
                        self.lookup(cpu, D, p, a);
                    }
                    self.totals.served[3] += 1;
                }
                _ => {
                    let (at, trigger) = self.demand(cpu, D, a, write, nt || attr.transient(), attr.transient());
                    let idx = if at >= self.depth() { 3 } else { at };
                    self.totals.served[idx] += 1;
                    if trigger {
                        self.hardware_prefetch(cpu, a, pc);
                    }
                }
            }
            a += line;
        }
    }

    fn hardware_prefetch(&mut self, cpu: usize, addr: u64, pc: u64) {
        let line_bytes = u64::from(self.l1d[cpu].geo.line);
        let line = addr / line_bytes;
        let stride: i64 = match self.hwpf.kind {
            HwPfKind::Off => return,
            HwPfKind::NextLine => 1,
            HwPfKind::Stride => {
                let e = &mut self.stride[cpu][((pc / 4) % 16) as usize];
                if e.0 != pc {
                    *e = (pc, line, 0, 0);
                    return;
                }
                let s = line as i64 - e.1 as i64;
                e.1 = line;
                if s == 0 {
                    return;
                }
                if s == e.2 {
                    e.3 += 1;
                } else {
                    e.2 = s;
                    e.3 = 1;
                }
                if e.3 < 2 {
                    return;
                }
                s
            }
        };
        for k in 0..i64::from(self.hwpf.degree) {
            let t = line as i64 + stride * (i64::from(self.hwpf.distance) + k);
            if t < 0 || (t as u64 * line_bytes) / 4096 != addr / 4096 {
                break;
            }
            self.prefetch_fill(cpu, t as u64 * line_bytes, 0, false);
        }
    }

    /// Software prefetch into `level` (1-based; deeper than modelled = the deepest level).
    pub fn prefetch(&mut self, cpu: usize, pa: u64, level: u32, nt: bool, attr: Attr) {
        if !self.on_core(attr).cacheable() || level == 0 {
            return;
        }
        let target = (level as usize - 1).min(self.depth() - 1);
        self.prefetch_fill(cpu, pa, target, nt);
    }

    fn prefetch_fill(&mut self, cpu: usize, addr: u64, target: usize, nt: bool) {
        let depth = self.depth();
        let coh = self.coherent && target <= self.private;
        let mut shared = false;
        if coh {
            if self.own_line(cpu, target, addr).is_some() {
                return;
            }
            shared = match self.own_shared(cpu, addr, target) {
                Some(s) => s,
                None => self.snoop(cpu, addr, false),
            };
        }
        let mut src = depth;
        for p in target..depth {
            if self.at(cpu, D, p).1.find(addr).is_some() {
                src = p;
                break;
            }
        }
        for p in (target..src).rev() {
            self.totals.levels[p + 1].prefetches += 1;
            self.place_fill(cpu, D, p, addr, false, true, true, nt && p == target);
        }
        if coh {
            self.mark_own(cpu, addr, shared, true);
        }
    }

    /// Instruction fetch of one line (VA = PA).
    pub fn fetch(&mut self, cpu: usize, pa: u64, attr: Attr) {
        self.fetch_at(cpu, pa, pa, attr);
    }

    /// Instruction fetch of one line through VA `va` (rule 21).
    pub fn fetch_at(&mut self, cpu: usize, va: u64, pa: u64, attr: Attr) {
        self.l1i[cpu].va = va;
        if self.on_core(attr).cacheable() {
            self.demand(cpu, I, pa, false, false, false);
        } else {
            self.totals.levels[I].bypass += 1;
        }
    }

    /// DC by PA, issued by `cpu`.
    pub fn dc_by_pa(&mut self, cpu: usize, op: LineOp, point: Point, pa: u64) {
        // Rule 20a: DC IVAC is DC CIVAC on the modelled core.
        let op = if self.dev.ivac_as_civac && point == Point::Coherency && op == LineOp::Invalidate { LineOp::CleanInvalidate } else { op };
        if self.coherent {
            for k in 0..self.l1d.len() {
                if k != cpu && self.own_shared(k, pa, 0).is_some() {
                    self.remote_maint(k, cpu);
                }
            }
        }
        let levels = if point == Point::Coherency { self.depth() } else { 1 };
        for p in 0..levels {
            let ci = p + 1; // L1D = 1, L2 = 2, L3 = 3
            self.totals.levels[ci].maint += 1;
            let n = if p == 0 { self.l1d.len() } else { self.lower[p - 1].1.len() };
            for k in 0..n {
                let c = if p == 0 { &mut self.l1d[k] } else { &mut self.lower[p - 1].1[k] };
                let Some(w) = c.find(pa) else { continue };
                let si = c.set_index(pa);
                let was_dirty = c.sets[si][w].unwrap().dirty;
                if op != LineOp::Invalidate && was_dirty {
                    c.sets[si][w].as_mut().unwrap().dirty = false;
                    self.totals.levels[ci].writebacks += 1;
                    if point == Point::Unification {
                        self.place(k, D, 1, pa, true, false);
                    }
                }
                let c = if p == 0 { &mut self.l1d[k] } else { &mut self.lower[p - 1].1[k] };
                if op != LineOp::Clean {
                    c.sets[si][w] = None;
                }
            }
        }
    }

    /// DC by set/way at `level` (1-based).
    pub fn dc_set_way(&mut self, cpu: usize, op: LineOp, level: u32, set: usize, way: usize) {
        let op = if self.dev.isw_cleans && op == LineOp::Invalidate { LineOp::CleanInvalidate } else { op };
        let p = level as usize - 1;
        if p >= self.depth() {
            return;
        }
        self.totals.levels[p + 1].maint += 1;
        let (_, c) = self.at(cpu, D, p);
        if set >= c.sets.len() || way >= c.sets[set].len() {
            return;
        }
        self.set_way_slot(cpu, op, p, set, way);
    }

    /// Applies `op` to one (set, way) slot of data-side level index `p`: drop the line unless
    /// cleaning, clear its dirty bit when cleaning, write a dirty line back one level down unless
    /// invalidating. No maintenance count (the callers count per guest instruction).
    fn set_way_slot(&mut self, cpu: usize, op: LineOp, p: usize, set: usize, way: usize) {
        let (ci, c) = self.at(cpu, D, p);
        let Some(l) = c.sets[set][way] else { return };
        if op != LineOp::Clean {
            c.sets[set][way] = None;
        } else if let Some(x) = c.sets[set][way].as_mut() {
            x.dirty = false;
        }
        if op != LineOp::Invalidate && l.dirty {
            self.totals.levels[ci].writebacks += 1;
            self.place(cpu, D, p + 1, l.addr, true, false);
        }
    }

    /// One guest set/way operation covering model slots `first..end` (`way * sets + set`): one
    /// maintenance count, then each slot as a plain set/way operation would treat it.
    pub fn dc_set_way_slots(&mut self, cpu: usize, op: LineOp, level: u32, first: u64, end: u64) {
        // Rule 20b: DC ISW also cleans on the modelled core.
        let op = if self.dev.isw_cleans && op == LineOp::Invalidate { LineOp::CleanInvalidate } else { op };
        if level == 0 || level as usize > self.depth() {
            return;
        }
        let p = level as usize - 1;
        let (ci, c) = self.at(cpu, D, p);
        let sets = c.sets.len() as u64;
        let total = sets * c.sets[0].len() as u64;
        self.totals.levels[ci].maint += 1;
        for idx in first..end {
            if idx >= total {
                break;
            }
            self.set_way_slot(cpu, op, p, (idx % sets) as usize, (idx / sets) as usize);
        }
    }

    /// DC ZVA.
    pub fn dc_zva(&mut self, cpu: usize, pa: u64, attr: Attr, block: u64) {
        let attr = self.on_core(attr);
        self.totals.levels[D].maint += 1;
        let start = pa / block * block;
        let line = u64::from(self.l1d[cpu].geo.line);
        match attr.base() {
            Attr::NormalNonCacheable | Attr::Device => self.totals.levels[D].bypass += 1,
            Attr::NormalWriteThrough => {
                for a in (start..start + block).step_by(line as usize) {
                    for p in 0..self.depth() {
                        self.lookup(cpu, D, p, a);
                    }
                }
            }
            _ => {
                for a in (start..start + block).step_by(line as usize) {
                    if self.coherent {
                        self.snoop(cpu, a, true);
                        self.mark_own(cpu, a, false, true);
                    }
                    let now = self.tick();
                    let c = &mut self.l1d[cpu];
                    match c.find(a) {
                        Some(w) => {
                            let si = c.set_index(a);
                            c.sets[si][w].as_mut().unwrap().dirty = true;
                            c.used(si, w, now);
                        }
                        None => self.place(cpu, D, 0, a, true, true),
                    }
                }
            }
        }
    }

    /// IC IALLU / IALLUIS.
    pub fn ic_invalidate_all(&mut self, cpu: usize, all: bool) {
        self.totals.levels[I].maint += 1;
        for k in 0..self.l1i.len() {
            if all || k == cpu {
                for s in &mut self.l1i[k].sets {
                    s.fill(None);
                }
            }
            if all && k != cpu && self.coherent {
                self.remote_maint(k, cpu);
            }
        }
    }

    /// IC IVAU, issued by `cpu` (VA = PA).
    pub fn ic_invalidate_pa(&mut self, cpu: usize, pa: u64) {
        self.ic_invalidate_va(cpu, pa, pa);
    }

    /// IC IVAU of VA `va` (PA `pa`), issued by `cpu`: a VIPT L1I loses only the copy in the set
    /// `va` indexes (rule 21).
    pub fn ic_invalidate_va(&mut self, cpu: usize, va: u64, pa: u64) {
        self.totals.levels[I].maint += 1;
        for k in 0..self.l1i.len() {
            let c = &mut self.l1i[k];
            c.va = va;
            if let Some(w) = c.find(pa) {
                let si = c.set_index(pa);
                c.sets[si][w] = None;
                if k != cpu && self.coherent {
                    self.remote_maint(k, cpu);
                }
            }
        }
    }
}

impl RefModel {
    /// Rule 21: copies of the line holding `pa` in `cpu`'s L1I, counted by looking at every set.
    pub fn l1i_copies(&self, cpu: usize, pa: u64) -> usize {
        let c = &self.l1i[cpu];
        let b = c.base(pa);
        c.sets.iter().flatten().filter(|l| matches!(l, Some(l) if l.addr == b)).count()
    }
}
