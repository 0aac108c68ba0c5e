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
}

impl Policy {
    /// Parses `lru`, `fifo` or `random`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "lru" => Some(Self::Lru),
            "fifo" => Some(Self::Fifo),
            "random" => Some(Self::Random),
            _ => None,
        }
    }

    /// The argument spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lru => "lru",
            Self::Fifo => "fifo",
            Self::Random => "random",
        }
    }
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

/// Tag value of an empty way.
const INVALID: u64 = u64::MAX;
/// Dirty bit of a way's state.
const DIRTY: u32 = 1 << 31;
/// Stamp bits of a way's state.
const STAMP: u32 = DIRTY - 1;

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
/// Tags and states are separate arrays, one set contiguous in each: a lookup reads only the
/// tags (16 ways = two host cache lines), a victim search only the 32-bit states. A state is
/// the dirty bit (bit 31) and a 31-bit replacement stamp; stamp 0 marks an invalid way, so the
/// first minimum of a set's stamps is its lowest invalid way, else its least recent (LRU) or
/// oldest (FIFO) line.
#[derive(Clone, Debug)]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    tags: Box<[u64]>,
    /// Dirty bit | stamp (LRU: clock of the last use; FIFO: clock of the fill; 0 when invalid).
    stamps: Box<[u32]>,
    clock: u32,
    policy: Policy,
    rng: u64,
}

impl Cache {
    /// An empty cache of `sets × ways` lines of `1 << line_shift` bytes.
    pub fn new(line_shift: u32, sets: u32, ways: u32, policy: Policy, seed: u64) -> Self {
        let n = sets as usize * ways as usize;
        Self {
            line_shift,
            set_mask: u64::from(sets) - 1,
            ways: ways as usize,
            tags: vec![INVALID; n].into_boxed_slice(),
            stamps: vec![0; n].into_boxed_slice(),
            clock: 0,
            policy,
            rng: seed,
        }
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
    fn base(&self, line: u64) -> usize {
        (line & self.set_mask) as usize * self.ways
    }

    /// The next stamp. When the 32-bit clock is exhausted, every set's stamps are replaced by
    /// their ranks (same order, so the same future victims) and the clock restarts above them.
    #[inline]
    fn tick(&mut self) -> u32 {
        if self.clock == STAMP {
            self.renumber();
        }
        self.clock += 1;
        self.clock
    }

    fn renumber(&mut self) {
        for set in self.stamps.chunks_mut(self.ways) {
            let mut order: Vec<usize> = (0..set.len()).filter(|&w| set[w] & STAMP != 0).collect();
            order.sort_by_key(|&w| set[w] & STAMP);
            for (rank, w) in order.into_iter().enumerate() {
                set[w] = (set[w] & DIRTY) | (rank as u32 + 1);
            }
        }
        self.clock = self.ways as u32;
    }

    /// The slot holding `line`, without touching replacement state.
    #[inline]
    pub fn probe(&self, line: u64) -> Option<usize> {
        let base = self.base(line);
        self.tags[base..base + self.ways].iter().position(|&t| t == line).map(|w| base + w)
    }

    /// Looks `line` up as a demand access: on a hit, LRU makes it the most recent.
    #[inline]
    pub fn lookup(&mut self, line: u64) -> Option<usize> {
        let slot = self.probe(line)?;
        if self.policy == Policy::Lru {
            self.touch(slot);
        }
        Some(slot)
    }

    /// Allocates `line` (which must not be present) and returns its slot and the victim it
    /// replaced, if the victim way was valid.
    #[inline]
    pub fn insert(&mut self, line: u64, dirty: bool) -> (usize, Option<Evicted>) {
        debug_assert!(self.probe(line).is_none());
        let base = self.base(line);
        let pick = self.victim(base);
        self.fill(base + pick, line, dirty)
    }

    /// The way to fill in the set at `base`: the lowest invalid way, else the policy's choice.
    #[inline]
    fn victim(&mut self, base: usize) -> usize {
        let set = &self.stamps[base..base + self.ways];
        if self.policy == Policy::Random {
            return match set.iter().position(|&s| s & STAMP == 0) {
                Some(w) => w,
                None => (xorshift64star(&mut self.rng) % self.ways as u64) as usize,
            };
        }
        // First minimum of the stamps, written as selects (no unpredictable branches).
        let (mut best, mut pick) = (u32::MAX, 0);
        for (w, &state) in set.iter().enumerate() {
            let stamp = state & STAMP;
            let better = stamp < best;
            best = if better { stamp } else { best };
            pick = if better { w } else { pick };
        }
        pick
    }

    /// A demand access in one pass: a hit makes the line most recent (LRU), sets its dirty bit
    /// if asked, and returns `Ok(slot)`; a miss allocates the line exactly as [`Cache::insert`]
    /// and returns `Err((slot, victim))`.
    #[inline]
    pub fn access(&mut self, line: u64, dirty: bool) -> Result<usize, (usize, Option<Evicted>)> {
        let base = self.base(line);
        if let Some(w) = self.tags[base..base + self.ways].iter().position(|&t| t == line) {
            let slot = base + w;
            if self.policy == Policy::Lru {
                self.touch(slot);
            }
            if dirty {
                self.stamps[slot] |= DIRTY;
            }
            return Ok(slot);
        }
        let pick = self.victim(base);
        let r = self.fill(base + pick, line, dirty);
        self.prefetch_set(line + 1);
        Err(r)
    }

    /// Streams miss set after set: start loading the next set's tags and stamps into the host
    /// cache while the guest runs on.
    #[inline]
    fn prefetch_set(&self, line: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let base = self.base(line);
            // SAFETY: prefetches are hints without architectural effect; both pointers are
            // inside their arrays (base < len).
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(self.tags.as_ptr().add(base).cast());
                _mm_prefetch::<_MM_HINT_T0>(self.tags.as_ptr().add(base + self.ways - 1).cast());
                _mm_prefetch::<_MM_HINT_T0>(self.stamps.as_ptr().add(base).cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = line;
    }

    #[inline]
    fn touch(&mut self, slot: usize) {
        let stamp = self.tick();
        self.stamps[slot] = (self.stamps[slot] & DIRTY) | stamp;
    }

    #[inline]
    fn fill(&mut self, slot: usize, line: u64, dirty: bool) -> (usize, Option<Evicted>) {
        let old = self.stamps[slot];
        let victim = (old & STAMP != 0).then(|| Evicted { line: self.tags[slot], dirty: old & DIRTY != 0 });
        let stamp = self.tick();
        self.tags[slot] = line;
        self.stamps[slot] = if dirty { DIRTY | stamp } else { stamp };
        (slot, victim)
    }

    /// Marks a slot dirty.
    #[inline]
    pub fn set_dirty(&mut self, slot: usize) {
        self.stamps[slot] |= DIRTY;
    }

    /// The line in a slot and its dirty bit, if valid.
    pub fn slot(&self, slot: usize) -> Option<Evicted> {
        let s = self.stamps[slot];
        (s & STAMP != 0).then(|| Evicted { line: self.tags[slot], dirty: s & DIRTY != 0 })
    }

    /// Clears a slot's dirty bit; returns whether it was dirty.
    pub fn clean_slot(&mut self, slot: usize) -> bool {
        let was = self.stamps[slot] & DIRTY != 0;
        self.stamps[slot] &= STAMP;
        was
    }

    /// Empties a slot; returns what it held.
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted> {
        let held = self.slot(slot);
        self.tags[slot] = INVALID;
        self.stamps[slot] = 0;
        held
    }

    /// Empties every slot (dirty data is discarded).
    pub fn invalidate_all(&mut self) {
        self.tags.fill(INVALID);
        self.stamps.fill(0);
    }

    /// Slot of (set, way).
    pub fn slot_of(&self, set: usize, way: usize) -> usize {
        set * self.ways + way
    }

    /// Number of valid lines (tests and diagnostics).
    pub fn occupancy(&self) -> usize {
        self.stamps.iter().filter(|&&s| s & STAMP != 0).count()
    }

    /// Sets the replacement clock (tests of the renumbering).
    #[cfg(test)]
    fn set_clock(&mut self, c: u32) {
        self.clock = c;
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

    #[test]
    fn clock_wrap_keeps_the_order() {
        let mut c = Cache::new(6, 1, 4, Policy::Lru, 1);
        for l in 0..4 {
            c.insert(l, false);
        }
        c.lookup(0);
        c.set_clock(STAMP - 1);
        c.set_dirty(c.probe(1).unwrap());
        c.lookup(2); // stamp STAMP
        c.lookup(1); // renumbers, then stamps above the ranks
                     // Recency now (oldest first): 3, 0, 2, 1.
        assert_eq!(c.insert(10, false).1.map(|e| e.line), Some(3));
        assert_eq!(c.insert(11, false).1.map(|e| e.line), Some(0));
        assert_eq!(c.insert(12, false).1.map(|e| e.line), Some(2));
        assert_eq!(c.insert(13, false).1, Some(Evicted { line: 1, dirty: true }), "dirty bit kept");
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
