//! One set-associative tag array (no data): lookups, allocation with a replacement policy,
//! dirty bits, and slot access for set/way maintenance.
//!
//! Lines are identified by their line number (`address >> log2(line)`), which is also the tag:
//! the set is `line & (sets - 1)`. A slot is `set * ways + way`.

/// Replacement policy. Every policy fills an invalid way first (the lowest-numbered one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Least recently used: hits and fills make a line the most recent.
    Lru,
    /// First in, first out: only fills count; hits change nothing.
    Fifo,
    /// Uniformly random way from a seeded xorshift64* stream (deterministic for a seed).
    Random,
    /// Tree pseudo-LRU: a binary tree of `ways - 1` bits over the ways (rounded up to a power
    /// of two; a subtree without a way is never chosen). Each node points to the half holding
    /// the next victim; a hit or a fill makes every node on its way's path point away from it.
    /// The victim is found by following the pointers from the root.
    Plru,
}

impl Policy {
    /// Every policy, in argument order.
    pub const ALL: [Policy; 4] = [Policy::Lru, Policy::Fifo, Policy::Random, Policy::Plru];

    /// Parses `lru`, `fifo`, `random` or `plru`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == text)
    }

    /// The argument spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lru => "lru",
            Self::Fifo => "fifo",
            Self::Random => "random",
            Self::Plru => "plru",
        }
    }
}

/// Tree-PLRU node count rounded up: the power of two of leaves over `ways` ways.
#[inline]
fn plru_leaves(ways: usize) -> usize {
    ways.next_power_of_two()
}

/// xorshift64* step: the random policy's generator (also used by the reference simulator's tests
/// to replay the same victim choices).
pub fn xorshift64star(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Seed of one cache's random stream: never zero (xorshift's fixed point).
pub fn cache_seed(seed: u64, cache_id: u64) -> u64 {
    let s = seed ^ cache_id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    if s == 0 {
        0x9e37_79b9_7f4a_7c15
    } else {
        s
    }
}

/// The sets whose state (tags, flags, replacement order) changed since the last
/// [`Cache::take_changes`]: up to [`SetChanges::CAPACITY`] of them by number, else "many". The
/// plugin's shortcut remembers the most recent line of several L1D sets and drops those whose
/// set changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetChanges {
    sets: [u32; SetChanges::CAPACITY],
    /// How many of `sets` hold a set; `CAPACITY + 1`: more sets changed than it holds.
    len: u8,
}

impl SetChanges {
    /// Sets held by number before the changes count as many.
    pub const CAPACITY: usize = 4;

    /// Notes a change of `set`.
    #[inline(always)]
    fn note(&mut self, set: usize) {
        let n = usize::from(self.len);
        let set = set as u32;
        if n > Self::CAPACITY || self.sets[..n].contains(&set) {
            return;
        }
        if n == Self::CAPACITY {
            self.len += 1;
        } else {
            self.sets[n] = set;
            self.len += 1;
        }
    }

    /// Notes a change of every set.
    fn note_all(&mut self) {
        self.len = Self::CAPACITY as u8 + 1;
    }

    /// The changed sets, or `None` when more changed than are held (every set may have).
    #[inline]
    pub fn sets(&self) -> Option<&[u32]> {
        let n = usize::from(self.len);
        (n <= Self::CAPACITY).then(|| &self.sets[..n])
    }
}

/// Tag value of an empty way.
const INVALID: u64 = u64::MAX;
/// Associativities up to this keep their replacement order in one `u64` (4 bits per way).
const PACKED_WAYS: usize = 16;

/// Per-way flag: the line holds data newer than the level below.
const DIRTY: u8 = 1;
/// Per-way flag: a prefetch brought the line in and no demand access has touched it yet.
const PREFETCHED: u8 = 2;
/// Per-way flag (the sanitizer): memory was written behind this copy (a non-cacheable or Device
/// write, or a D-side write for an L1I copy), so the copy holds older data than memory.
const STALE: u8 = 4;
/// Per-way flag (coherence, more than one vCPU): another vCPU may hold the line too (MESI's S);
/// a clean line without it is E, a dirty one M.
const SHARED: u8 = 8;

/// How a fill places its line in the replacement order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Allocate dirty (a write-back write).
    pub dirty: bool,
    /// A prefetch fill: the line carries the prefetched flag until its first demand access.
    pub prefetch: bool,
    /// Non-temporal: insert at the position evicted first (LRU/FIFO end) instead of the front.
    pub nt: bool,
}

impl Fill {
    /// A demand fill (clean or dirty), at the most-recent position.
    pub const fn demand(dirty: bool) -> Self {
        Self { dirty, prefetch: false, nt: false }
    }
}

/// A demand hit: its slot and whether it was the first demand access to a prefetched line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The slot.
    pub slot: usize,
    /// The line was brought in by a prefetch and this is its first demand access.
    pub prefetched: bool,
    /// The copy is stale (the sanitizer's mark).
    pub stale: bool,
    /// The line was dirty before this access.
    pub was_dirty: bool,
    /// The line was marked shared before this access (coherence; a write hit clears the mark).
    pub shared: bool,
}

/// A line pushed out by an allocation or removed by maintenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// Its line number (in this cache's line size).
    pub line: u64,
    /// Whether it held data newer than the level below.
    pub dirty: bool,
}

/// The tag array of one cache.
///
/// Per way: its tag (`INVALID` when empty) and its flags (dirty, prefetched). Per set: the number of valid
/// ways and the **replacement order**, a list of the set's way numbers, most recent first (LRU:
/// every hit and fill moves its way to the front; FIFO: only fills do; random: unused). The
/// victim of a full set is the last way of the list, so a miss neither searches nor compares
/// stamps. Up to 16 ways the list is packed in one `u64` as 4-bit way numbers (way at position
/// `p` in bits `4p..4p+4`), so moving a way to the front is a few shifts and masks; wider sets
/// (up to 256 ways) keep one byte per way. A set with an invalid way fills its lowest invalid
/// way first, whatever the policy; its position in the list is then irrelevant, since the list
/// decides only among valid ways. A non-temporal fill puts its way at the end of the list
/// instead of the front (the next victim). Under tree PLRU the same words hold the tree's bits
/// instead (node `k` of the heap-ordered tree in bit `k`, up to 64 leaves; one byte per node
/// beyond), and a non-temporal fill points the tree at its way.
#[derive(Clone, Debug)]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    tags: Box<[u64]>,
    /// `DIRTY | PREFETCHED | STALE | SHARED` per way.
    flags: Box<[u8]>,
    /// Valid ways per set (a set with fewer than `ways` fills an invalid way).
    valid: Box<[u16]>,
    /// Valid ways in all: a lookup in an empty cache (a core that has not run yet) touches no
    /// tag.
    occupied: usize,
    /// Replacement order per set, ≤ 16 ways: 4-bit way numbers, most recent in bits 3:0.
    packed: Box<[u64]>,
    /// Replacement order per set, > 16 ways: `ways` bytes of way numbers, most recent first.
    wide: Box<[u8]>,
    policy: Policy,
    rng: u64,
    /// VIPT indexing ([`Cache::with_va_index`]): the line-number bits of the set index that come
    /// from the virtual address (those above the page offset); 0 = physically indexed.
    va_bits: u64,
    /// Tree PLRU with up to 64 leaves: per way, the tree bits on its path (mask) and their
    /// values after a use of the way (each pointing away from it).
    plru_path: Box<[(u64, u64)]>,
    /// The sets changed since the last [`Cache::take_changes`].
    changes: SetChanges,
}

impl Cache {
    /// An empty cache of `sets × ways` lines of `1 << line_shift` bytes (at most 256 ways).
    pub fn new(line_shift: u32, sets: u32, ways: u32, policy: Policy, seed: u64) -> Self {
        assert!((1..=256).contains(&ways), "associativity {ways} is not in 1..=256");
        let (sets, ways) = (sets as usize, ways as usize);
        let n = sets * ways;
        let (packed, wide) = if policy == Policy::Plru {
            // Tree bits, node k (1-based, heap order) in bit k; wider trees one byte per node.
            if plru_leaves(ways) <= 64 {
                (vec![0; sets].into_boxed_slice(), Box::default())
            } else {
                (Box::default(), vec![0; sets * plru_leaves(ways)].into_boxed_slice())
            }
        } else if ways <= PACKED_WAYS {
            let identity = (0..ways as u64).fold(0, |o, w| o | w << (4 * w));
            (vec![identity; sets].into_boxed_slice(), Box::default())
        } else {
            let identity: Vec<u8> = (0..sets).flat_map(|_| (0..ways).map(|w| w as u8)).collect();
            (Box::default(), identity.into_boxed_slice())
        };
        Self {
            line_shift,
            set_mask: sets as u64 - 1,
            ways,
            tags: vec![INVALID; n].into_boxed_slice(),
            flags: vec![0; n].into_boxed_slice(),
            valid: vec![0; sets].into_boxed_slice(),
            occupied: 0,
            packed,
            wide,
            policy,
            rng: seed,
            va_bits: 0,
            plru_path: if policy == Policy::Plru && plru_leaves(ways) <= 64 {
                (0..ways)
                    .map(|w| {
                        let (mut node, mut mask, mut away) = (plru_leaves(ways) + w, 0u64, 0u64);
                        while node > 1 {
                            let right = (node & 1) as u64;
                            node >>= 1;
                            mask |= 1 << node;
                            away |= (right ^ 1) << node;
                        }
                        (mask, away)
                    })
                    .collect()
            } else {
                Box::default()
            },
            changes: SetChanges::default(),
        }
    }

    /// The sets whose state changed since the last call ([`SetChanges`]), and starts a new record.
    #[inline]
    pub fn take_changes(&mut self) -> SetChanges {
        std::mem::take(&mut self.changes)
    }

    /// The same cache **virtually indexed, physically tagged** for pages of `1 << page_shift`
    /// bytes: the set-index bits above the page offset come from the access's VA (the `_at`
    /// methods' `va_line`), the tag is the whole physical line number. A cache whose way fits in
    /// a page (`sets × line ≤ page`) needs no VA bit and stays physically indexed.
    pub fn with_va_index(mut self, page_shift: u32) -> Self {
        let in_page = page_shift.saturating_sub(self.line_shift).min(63);
        self.va_bits = self.set_mask & !((1u64 << in_page) - 1);
        self
    }

    /// The set-index bits (of a line number) taken from the VA: 0 when physically indexed.
    #[inline]
    pub fn va_index_bits(&self) -> u64 {
        self.va_bits
    }

    /// The line number whose set is the one `line` occupies when reached through the VA line
    /// `va_line` (`line` itself when physically indexed).
    #[inline]
    fn index_line(&self, va_line: u64, line: u64) -> u64 {
        (line & !self.va_bits) | (va_line & self.va_bits)
    }

    /// Every slot holding a copy of `line`, at any index its VAs may give it (one set when
    /// physically indexed; `2^k` candidate sets for k VA index bits).
    pub fn copies(&self, line: u64) -> impl Iterator<Item = usize> + '_ {
        let (lo, n) = if self.va_bits == 0 { (0, 1) } else { (self.va_bits.trailing_zeros(), 1u64 << self.va_bits.count_ones()) };
        (0..n).filter_map(move |k| {
            let set = self.set_of(self.index_line(k << lo, line));
            self.find(set, line).map(|w| set * self.ways + w)
        })
    }

    /// log2 of the line size.
    #[inline]
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// Line number of a byte address.
    #[inline]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    /// Associativity.
    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// The way of `set` holding `line`.
    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        if self.occupied == 0 {
            return None;
        }
        let base = set * self.ways;
        self.tags[base..base + self.ways].iter().position(|&t| t == line)
    }

    /// The set of `line` reached through the VA line `va_line` when a demand hit on it would
    /// change nothing: the line is present, the most recent of its set under the policy (any
    /// line under FIFO and random, whose hits change no order), neither prefetched (its first
    /// demand hit counts) nor stale (every hit reports).
    pub fn quiet_hit_set(&self, va_line: u64, line: u64) -> Option<usize> {
        let set = self.set_of(self.index_line(va_line, line));
        let w = self.find(set, line)?;
        if !self.plain(set * self.ways + w, false) {
            return None;
        }
        let recent = match self.policy {
            Policy::Lru if self.ways <= PACKED_WAYS => (self.packed[set] & 0xf) as usize == w,
            Policy::Lru => usize::from(self.wide[set * self.ways]) == w,
            Policy::Plru => self.plru_path.get(w).is_some_and(|&(mask, away)| self.packed[set] & mask == away),
            Policy::Fifo | Policy::Random => true,
        };
        recent.then_some(set)
    }

    /// A demand hit on `line` reached through the VA line `va_line` when its copy is neither
    /// prefetched nor stale (a hit that only updates the replacement order): made, and its
    /// set returned; `None` (nothing changed) otherwise.
    pub fn plain_hit_at(&mut self, va_line: u64, line: u64) -> Option<usize> {
        let set = self.set_of(self.index_line(va_line, line));
        let w = self.find(set, line)?;
        self.slot_plain_hit(set * self.ways + w, line, false)
    }

    /// Whether a demand hit on the copy in `slot` (a `store`, or a load) would only update the
    /// replacement order: neither prefetched (its first demand hit counts) nor stale (every hit
    /// reports), and for a store already dirty and not shared (no dirty bit to set, no upgrade).
    #[inline]
    fn plain(&self, slot: usize, store: bool) -> bool {
        let f = self.flags[slot];
        f & (PREFETCHED | STALE) == 0 && !(store && (f & DIRTY == 0 || f & SHARED != 0))
    }

    /// A demand hit on `line` in slot `slot` when the slot still holds it, neither prefetched
    /// nor stale (and, for a `store`, dirty and not shared: a hit that only updates the
    /// replacement order): made, and the slot's set returned; `None` (nothing changed)
    /// otherwise.
    pub fn slot_plain_hit(&mut self, slot: usize, line: u64, store: bool) -> Option<usize> {
        if self.tags.get(slot) != Some(&line) || !self.plain(slot, store) {
            return None;
        }
        let (set, w) = (slot / self.ways, slot % self.ways);
        self.used(set, w);
        Some(set)
    }

    /// The slot holding `line`, without touching replacement state.
    #[inline]
    pub fn probe(&self, line: u64) -> Option<usize> {
        let set = self.set_of(line);
        self.find(set, line).map(|w| set * self.ways + w)
    }

    /// [`Cache::probe`] of `line` reached through the VA line `va_line` (VIPT: the set its VA
    /// indexes; physically indexed: the same as `probe`).
    #[inline]
    pub fn probe_at(&self, va_line: u64, line: u64) -> Option<usize> {
        let set = self.set_of(self.index_line(va_line, line));
        self.find(set, line).map(|w| set * self.ways + w)
    }

    /// Looks `line` up as a demand access: on a hit, LRU makes it the most recent.
    #[inline]
    pub fn lookup(&mut self, line: u64) -> Option<usize> {
        let set = self.set_of(line);
        let w = self.find(set, line)?;
        self.used(set, w);
        Some(set * self.ways + w)
    }

    /// Allocates `line` (which must not be present) and returns its slot and the victim it
    /// replaced, if the victim way was valid.
    #[inline]
    pub fn insert(&mut self, line: u64, dirty: bool) -> (usize, Option<Evicted>) {
        self.insert_with(line, Fill::demand(dirty))
    }

    /// [`Cache::insert`] with the fill's placement and flags.
    #[inline]
    pub fn insert_with(&mut self, line: u64, fill: Fill) -> (usize, Option<Evicted>) {
        debug_assert!(self.probe(line).is_none());
        self.allocate(self.set_of(line), line, fill)
    }

    /// A demand access in one pass: a hit makes the line most recent (LRU), sets its dirty bit
    /// if asked, clears its prefetched flag, and returns `Ok(hit)`; a miss allocates the line
    /// exactly as [`Cache::insert_with`] and returns `Err((slot, victim))`.
    #[inline]
    pub fn access(&mut self, line: u64, fill: Fill) -> Result<Hit, (usize, Option<Evicted>)> {
        self.access_at(line, line, fill)
    }

    /// [`Cache::access`] of `line` reached through the VA line `va_line`: the set is the one
    /// the VA indexes when the cache is VIPT ([`Cache::with_va_index`]), else `line`'s.
    #[inline]
    pub fn access_at(&mut self, va_line: u64, line: u64, fill: Fill) -> Result<Hit, (usize, Option<Evicted>)> {
        let set = self.set_of(self.index_line(va_line, line));
        if let Some(w) = self.find(set, line) {
            self.used(set, w);
            let slot = set * self.ways + w;
            let f = self.flags[slot];
            let new = if fill.dirty { (f & !(PREFETCHED | SHARED)) | DIRTY } else { f & !PREFETCHED };
            if new != f {
                self.flags[slot] = new;
            }
            return Ok(Hit {
                slot,
                prefetched: f & PREFETCHED != 0,
                stale: f & STALE != 0,
                was_dirty: f & DIRTY != 0,
                shared: f & SHARED != 0,
            });
        }
        let r = self.allocate(set, line, fill);
        self.prefetch_set(line + 1);
        Err(r)
    }

    /// A demand lookup that allocates nothing (write-through writes): like [`Cache::lookup`],
    /// and also clears the prefetched flag; returns the hit.
    #[inline]
    pub fn touch(&mut self, line: u64) -> Option<Hit> {
        let set = self.set_of(line);
        let w = self.find(set, line)?;
        self.used(set, w);
        let slot = set * self.ways + w;
        let f = self.flags[slot];
        self.flags[slot] = f & !PREFETCHED;
        Some(Hit { slot, prefetched: f & PREFETCHED != 0, stale: f & STALE != 0, was_dirty: f & DIRTY != 0, shared: f & SHARED != 0 })
    }

    /// Puts `line` into `set`: in its lowest invalid way, else in the policy's victim (LRU and
    /// FIFO: the last way of the replacement order, which then rotates by one to become the
    /// first, with no search). The filled way is the most recent, or for a non-temporal fill
    /// the least recent (the victim stays last: no rotation).
    #[inline(always)]
    fn allocate(&mut self, set: usize, line: u64, fill: Fill) -> (usize, Option<Evicted>) {
        self.changes.note(set);
        let w = if usize::from(self.valid[set]) < self.ways {
            let base = set * self.ways;
            // A set with fewer valid ways than ways has an invalid one.
            let w = self.tags[base..base + self.ways].iter().position(|&t| t == INVALID).unwrap_or(0);
            self.valid[set] += 1;
            self.occupied += 1;
            if self.policy == Policy::Plru {
                self.plru_mark(set, w, !fill.nt);
            } else if self.policy != Policy::Random {
                if fill.nt {
                    self.demote(set, w);
                } else {
                    self.promote(set, w);
                }
            }
            w
        } else {
            match self.policy {
                Policy::Random => (xorshift64star(&mut self.rng) % self.ways as u64) as usize,
                Policy::Plru => {
                    let w = self.plru_victim(set);
                    if !fill.nt {
                        // A non-temporal fill leaves the pointers on it: the next victim.
                        self.plru_mark(set, w, true);
                    }
                    w
                }
                _ if fill.nt => self.last_way(set),
                _ if self.ways <= PACKED_WAYS => {
                    let order = self.packed[set];
                    let last = 4 * (self.ways as u32 - 1);
                    let w = order >> last & 0xf;
                    // Drop the last field, shift the others back, w in front.
                    self.packed[set] = (order & !(0xf << last)) << 4 | w;
                    w as usize
                }
                _ => {
                    let list = &mut self.wide[set * self.ways..(set + 1) * self.ways];
                    let w = list[self.ways - 1];
                    list.copy_within(0..self.ways - 1, 1);
                    list[0] = w;
                    usize::from(w)
                }
            }
        };
        let slot = set * self.ways + w;
        let old = std::mem::replace(&mut self.tags[slot], line);
        let flags = if fill.dirty { DIRTY } else { 0 } | if fill.prefetch { PREFETCHED } else { 0 };
        let was = std::mem::replace(&mut self.flags[slot], flags);
        (slot, (old != INVALID).then_some(Evicted { line: old, dirty: was & DIRTY != 0 }))
    }

    /// A demand access used way `w` of `set`: LRU makes it the most recent, PLRU points the
    /// tree away from it; FIFO and random change nothing.
    #[inline(always)]
    fn used(&mut self, set: usize, w: usize) {
        self.changes.note(set);
        match self.policy {
            Policy::Lru => self.promote(set, w),
            Policy::Plru => self.plru_mark(set, w, true),
            Policy::Fifo | Policy::Random => {}
        }
    }

    /// Points every tree node on way `w`'s path away from it (`away`: a use) or towards it (a
    /// non-temporal fill: `w` is the next victim). Up to 64 leaves one masked store of the way's
    /// precomputed path; wider trees node by node.
    #[inline]
    fn plru_mark(&mut self, set: usize, w: usize, away: bool) {
        let leaves = plru_leaves(self.ways);
        // Leaf of w is node leaves + w; walk up, setting each parent's bit to the side
        // (0 = left, 1 = right) the victim should go: the other side of w when `away`, else w's.
        let mut node = leaves + w;
        let away = u64::from(away);
        if leaves <= 64 {
            // The path's bits at once: away = its use values, towards = their complement.
            let (mask, used) = self.plru_path[w];
            let value = if away == 1 { used } else { mask & !used };
            self.packed[set] = (self.packed[set] & !mask) | value;
        } else {
            let tree = &mut self.wide[set * leaves..(set + 1) * leaves];
            while node > 1 {
                let right = (node & 1) as u64;
                node >>= 1;
                tree[node] = (right ^ away) as u8;
            }
        }
    }

    /// The way the tree points to; a right subtree without ways is never entered (branch-free
    /// per node, as [`Cache::plru_mark`]).
    #[inline]
    fn plru_victim(&self, set: usize) -> usize {
        let leaves = plru_leaves(self.ways);
        if leaves == self.ways && leaves <= 64 {
            // Every subtree has ways: follow the pointers, node = 2 node + bit.
            let bits = self.packed[set];
            let mut node = 1usize;
            while node < leaves {
                node = 2 * node + ((bits >> node) as usize & 1);
            }
            return node - leaves;
        }
        let (mut node, mut first, mut span) = (1usize, 0usize, leaves);
        let bits = if leaves <= 64 { self.packed[set] } else { 0 };
        while span > 1 {
            span /= 2;
            let bit = if leaves <= 64 { (bits >> node) as usize & 1 } else { usize::from(self.wide[set * leaves + node]) };
            let go = bit & usize::from(first + span < self.ways);
            node = 2 * node + go;
            first += span * go;
        }
        first
    }

    /// The last way of `set`'s replacement order (the next LRU/FIFO victim).
    #[inline]
    fn last_way(&self, set: usize) -> usize {
        if self.ways <= PACKED_WAYS {
            (self.packed[set] >> (4 * (self.ways as u32 - 1)) & 0xf) as usize
        } else {
            usize::from(self.wide[(set + 1) * self.ways - 1])
        }
    }

    /// Moves way `w` of `set` to the end of the replacement order (a non-temporal fill into an
    /// invalid way; rare, so done plainly).
    fn demote(&mut self, set: usize, w: usize) {
        if self.policy == Policy::Plru {
            return self.plru_mark(set, w, false);
        }
        let mut list: Vec<usize> = if self.ways <= PACKED_WAYS {
            (0..self.ways).map(|p| (self.packed[set] >> (4 * p) & 0xf) as usize).collect()
        } else {
            self.wide[set * self.ways..(set + 1) * self.ways].iter().map(|&x| usize::from(x)).collect()
        };
        if let Some(p) = list.iter().position(|&x| x == w) {
            list.remove(p);
            list.push(w);
        }
        if self.ways <= PACKED_WAYS {
            self.packed[set] = list.iter().enumerate().fold(0, |o, (p, &x)| o | (x as u64) << (4 * p));
        } else {
            for (p, x) in list.into_iter().enumerate() {
                self.wide[set * self.ways + p] = x as u8;
            }
        }
    }

    /// Moves way `w` of `set` to the front of the replacement order.
    #[inline(always)]
    fn promote(&mut self, set: usize, w: usize) {
        if self.ways <= PACKED_WAYS {
            let order = self.packed[set];
            if order & 0xf == w as u64 {
                return; // already the most recent (every hit of a line streamed over again)
            }
            // Position of w: the lowest 4-bit field equal to w. `x` has a zero field exactly
            // there; the borrow trick marks the lowest zero field exactly (higher marks may be
            // spurious, but only the lowest is used). Fields beyond `ways` are zero, so way 0
            // may also match there, always above its real position.
            let x = order ^ (w as u64 * 0x1111_1111_1111_1111);
            let zero = x.wrapping_sub(0x1111_1111_1111_1111) & !x & 0x8888_8888_8888_8888;
            let p = zero.trailing_zeros() / 4;
            let below = (1u64 << (4 * p)) - 1; // the fields in front of w (p ≤ 15)
            let upto = below << 4 | 0xf; // those and w's own
            self.packed[set] = (order & !upto) | (order & below) << 4 | w as u64;
        } else {
            let list = &mut self.wide[set * self.ways..(set + 1) * self.ways];
            let p = list.iter().position(|&x| usize::from(x) == w).unwrap_or(self.ways - 1);
            list.copy_within(0..p, 1);
            list[0] = w as u8;
        }
    }

    /// Streams miss set after set: start loading the next set's tags into the host cache while
    /// the guest runs on.
    #[inline]
    fn prefetch_set(&self, line: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let base = self.set_of(line) * self.ways;
            // SAFETY: prefetches are hints without architectural effect; both pointers are
            // inside the tag array (base + ways ≤ len).
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(self.tags.as_ptr().add(base).cast());
                _mm_prefetch::<_MM_HINT_T0>(self.tags.as_ptr().add(base + self.ways - 1).cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = line;
    }

    /// Marks a slot dirty; returns whether it was dirty before.
    #[inline]
    pub fn set_dirty(&mut self, slot: usize) -> bool {
        self.changes.note(slot / self.ways);
        let f = self.flags[slot];
        self.flags[slot] = f | DIRTY;
        f & DIRTY != 0
    }

    /// Marks the copy of `line` stale (the sanitizer); returns whether it already was, if the
    /// line is present.
    pub fn mark_stale(&mut self, line: u64) -> Option<bool> {
        if self.va_bits != 0 {
            // Every copy, whichever VA index it sits at; "already" only if all of them were.
            let slots: Vec<usize> = self.copies(line).collect();
            let mut already = None;
            for slot in slots {
                self.changes.note(slot / self.ways);
                let was = self.flags[slot] & STALE != 0;
                self.flags[slot] |= STALE;
                already = Some(already.unwrap_or(true) && was);
            }
            return already;
        }
        let slot = self.probe(line)?;
        self.changes.note(slot / self.ways);
        let f = self.flags[slot];
        self.flags[slot] = f | STALE;
        Some(f & STALE != 0)
    }

    /// Sets or clears the shared mark of a slot (coherence).
    #[inline]
    pub fn set_shared(&mut self, slot: usize, shared: bool) {
        self.changes.note(slot / self.ways);
        let f = self.flags[slot];
        self.flags[slot] = if shared { f | SHARED } else { f & !SHARED };
    }

    /// Whether a slot's line is marked shared.
    #[inline]
    pub fn is_shared(&self, slot: usize) -> bool {
        self.flags[slot] & SHARED != 0
    }

    /// Whether a slot's line is dirty.
    #[inline]
    pub fn is_dirty(&self, slot: usize) -> bool {
        self.flags[slot] & DIRTY != 0
    }

    /// Whether the copy of `line` is present and dirty.
    pub fn holds_dirty(&self, line: u64) -> bool {
        self.probe(line).is_some_and(|slot| self.flags[slot] & DIRTY != 0)
    }

    /// The line in a slot and its dirty bit, if valid.
    pub fn slot(&self, slot: usize) -> Option<Evicted> {
        let line = self.tags[slot];
        (line != INVALID).then(|| Evicted { line, dirty: self.flags[slot] & DIRTY != 0 })
    }

    /// Whether the copy in `slot` is marked stale (the sanitizer).
    pub fn slot_stale(&self, slot: usize) -> bool {
        self.flags[slot] & STALE != 0
    }

    /// Clears a slot's dirty bit; returns whether it was dirty.
    pub fn clean_slot(&mut self, slot: usize) -> bool {
        self.changes.note(slot / self.ways);
        let f = self.flags[slot];
        self.flags[slot] = f & !DIRTY;
        f & DIRTY != 0
    }

    /// Empties a slot; returns what it held. Its place in the replacement order is kept: an
    /// invalid way is filled before any other, whatever the order says.
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted> {
        self.changes.note(slot / self.ways);
        let held = self.slot(slot);
        if held.is_some() {
            self.valid[slot / self.ways] -= 1;
            self.occupied -= 1;
        }
        self.tags[slot] = INVALID;
        self.flags[slot] = 0;
        held
    }

    /// Empties every slot (dirty data is discarded).
    pub fn invalidate_all(&mut self) {
        self.changes.note_all();
        self.tags.fill(INVALID);
        self.flags.fill(0);
        self.valid.fill(0);
        self.occupied = 0;
    }

    /// Slot of (set, way).
    pub fn slot_of(&self, set: usize, way: usize) -> usize {
        set * self.ways + way
    }

    /// Whether no line is valid (a core that has not run, or flushed): every probe misses.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// Number of valid lines (tests and diagnostics).
    pub fn occupancy(&self) -> usize {
        debug_assert_eq!(self.occupied, self.tags.iter().filter(|&&t| t != INVALID).count());
        self.occupied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_invalid_ways_then_evicts_lru() {
        let mut c = Cache::new(6, 4, 2, Policy::Lru, 1);
        // Lines 0, 4, 8 all map to set 0.
        assert_eq!(c.insert(0, false).1, None);
        assert_eq!(c.insert(4, true).1, None);
        assert!(c.lookup(0).is_some()); // 0 is now most recent
        let (_, v) = c.insert(8, false);
        assert_eq!(v, Some(Evicted { line: 4, dirty: true }));
        assert!(c.probe(4).is_none());
        assert!(c.probe(0).is_some() && c.probe(8).is_some());
    }

    #[test]
    fn fifo_ignores_hits() {
        let mut c = Cache::new(6, 4, 2, Policy::Fifo, 1);
        c.insert(0, false);
        c.insert(4, false);
        c.lookup(0);
        assert_eq!(c.insert(8, false).1.map(|e| e.line), Some(0));
    }

    #[test]
    fn random_is_deterministic_per_seed() {
        let run = |seed| {
            let mut c = Cache::new(6, 1, 4, Policy::Random, seed);
            (0..100u64).filter_map(|l| c.insert(l, false).1.map(|e| e.line)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    /// LRU order (oldest first) of a one-set cache after a fixed history, read back by evicting.
    fn lru_order(ways: u64, policy: Policy) -> Vec<u64> {
        let mut c = Cache::new(6, 1, ways as u32, policy, 1);
        for l in 0..ways {
            c.insert(l, l % 3 == 0);
        }
        // Hits on every third line in reverse, then an invalidation and a refill.
        for l in (0..ways).rev().step_by(3) {
            assert!(c.lookup(l).is_some());
        }
        let mid = c.probe(ways / 2).unwrap();
        assert_eq!(c.invalidate_slot(mid).map(|e| e.line), Some(ways / 2));
        let (slot, v) = c.insert(1000, false);
        assert_eq!((slot, v), (mid, None), "the invalid way is filled first");
        (0..ways).map(|k| c.insert(2000 + k, false).1.unwrap().line).collect()
    }

    /// The same order from explicit timestamps.
    fn lru_order_by_stamps(ways: u64, policy: Policy) -> Vec<u64> {
        let mut used: Vec<(u64, u64)> = (0..ways).map(|l| (l, l)).collect(); // (line, stamp)
        let mut now = ways;
        if policy == Policy::Lru {
            for l in (0..ways).rev().step_by(3) {
                used.iter_mut().find(|e| e.0 == l).unwrap().1 = now;
                now += 1;
            }
        }
        used.iter_mut().find(|e| e.0 == ways / 2).unwrap().0 = 1000;
        used.iter_mut().find(|e| e.0 == 1000).unwrap().1 = now;
        used.sort_by_key(|e| e.1);
        used.into_iter().map(|e| e.0).collect()
    }

    #[test]
    fn replacement_order_packed_and_wide() {
        // 1..=16 ways use the packed order, 17 and more the byte list; 256 is the maximum.
        for ways in [1u64, 2, 3, 4, 7, 8, 15, 16, 17, 24, 32, 255, 256] {
            for policy in [Policy::Lru, Policy::Fifo] {
                assert_eq!(lru_order(ways, policy), lru_order_by_stamps(ways, policy), "{ways} ways, {policy:?}");
            }
        }
    }

    #[test]
    fn slots_and_invalidation() {
        let mut c = Cache::new(6, 4, 2, Policy::Lru, 1);
        let (slot, _) = c.insert(5, true);
        assert_eq!(slot, c.slot_of(1, 0));
        assert!(c.clean_slot(slot));
        assert!(!c.clean_slot(slot));
        assert_eq!(c.invalidate_slot(slot), Some(Evicted { line: 5, dirty: false }));
        assert_eq!(c.occupancy(), 0);
    }
}
