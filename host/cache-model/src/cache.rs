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

/// A line pushed out by an allocation or removed by maintenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// Its line number (in this cache's line size).
    pub line: u64,
    /// Whether it held data newer than the level below.
    pub dirty: bool,
}

/// The tag array of one cache.
#[derive(Clone, Debug)]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    tags: Box<[u64]>,
    dirty: Box<[bool]>,
    /// LRU: clock of the last use; FIFO: clock of the fill.
    stamp: Box<[u64]>,
    clock: u64,
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
            dirty: vec![false; n].into_boxed_slice(),
            stamp: vec![0; n].into_boxed_slice(),
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
            self.clock += 1;
            self.stamp[slot] = self.clock;
        }
        Some(slot)
    }

    /// Allocates `line` (which must not be present) and returns the victim it replaced, if the
    /// victim way was valid.
    pub fn insert(&mut self, line: u64, dirty: bool) -> (usize, Option<Evicted>) {
        debug_assert!(self.probe(line).is_none());
        let base = self.base(line);
        let way = match self.tags[base..base + self.ways].iter().position(|&t| t == INVALID) {
            Some(w) => w,
            None => match self.policy {
                Policy::Lru | Policy::Fifo => {
                    let stamps = &self.stamp[base..base + self.ways];
                    (0..self.ways).min_by_key(|&w| stamps[w]).unwrap_or(0)
                }
                Policy::Random => (xorshift64star(&mut self.rng) % self.ways as u64) as usize,
            },
        };
        let slot = base + way;
        let victim = (self.tags[slot] != INVALID).then(|| Evicted { line: self.tags[slot], dirty: self.dirty[slot] });
        self.tags[slot] = line;
        self.dirty[slot] = dirty;
        self.clock += 1;
        self.stamp[slot] = self.clock;
        (slot, victim)
    }

    /// Marks a slot dirty.
    #[inline]
    pub fn set_dirty(&mut self, slot: usize) {
        self.dirty[slot] = true;
    }

    /// The line in a slot and its dirty bit, if valid.
    pub fn slot(&self, slot: usize) -> Option<Evicted> {
        (self.tags[slot] != INVALID).then(|| Evicted { line: self.tags[slot], dirty: self.dirty[slot] })
    }

    /// Clears a slot's dirty bit; returns whether it was dirty.
    pub fn clean_slot(&mut self, slot: usize) -> bool {
        std::mem::replace(&mut self.dirty[slot], false)
    }

    /// Empties a slot; returns what it held.
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted> {
        let held = self.slot(slot);
        self.tags[slot] = INVALID;
        self.dirty[slot] = false;
        self.stamp[slot] = 0;
        held
    }

    /// Empties every slot (dirty data is discarded).
    pub fn invalidate_all(&mut self) {
        self.tags.fill(INVALID);
        self.dirty.fill(false);
        self.stamp.fill(0);
    }

    /// Slot of (set, way).
    pub fn slot_of(&self, set: usize, way: usize) -> usize {
        set * self.ways + way
    }

    /// Number of valid lines (tests and diagnostics).
    pub fn occupancy(&self) -> usize {
        self.tags.iter().filter(|&&t| t != INVALID).count()
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
