//! A size-class caching allocator over the test arena, shaped like PyTorch's CUDA caching
//! allocator: a freed block goes to its size class's free list and the next request of that
//! class gets it back (its lines may still be cached), instead of fresh arena memory. Memory is
//! never returned to the arena (no `empty_cache`), so a trace of changing sizes leaves bytes
//! *reserved* that are not *in use*: the fragmentation `torch.cuda.memory_stats()` reports.
//!
//! Offsets only: the allocator hands out offsets from its base, the benchmark adds the region's
//! address. Pure, so the host tests it.

use alloc::vec::Vec;

use super::plan::Rng;

/// Smallest size class (PyTorch rounds requests up to 512 bytes).
pub const MIN_CLASS: usize = 512;

/// The size class of a request: a power of two, at least [`MIN_CLASS`].
pub const fn class_of(bytes: usize) -> usize {
    let b = if bytes < MIN_CLASS { MIN_CLASS } else { bytes };
    b.next_power_of_two()
}

/// Counters in the shape of `torch.cuda.memory_stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests served.
    pub allocs: u64,
    /// Of which from a cached (freed) block.
    pub cache_hits: u64,
    /// Frees.
    pub frees: u64,
    /// Bytes requested and live now.
    pub requested: u64,
    /// Bytes of live blocks (size classes) now: "allocated".
    pub allocated: u64,
    /// Bytes carved from the arena (live + cached): "reserved".
    pub reserved: u64,
    /// Highest `requested`.
    pub peak_requested: u64,
    /// Highest `allocated`.
    pub peak_allocated: u64,
}

/// The allocator. With `caching` off every request is fresh memory: a bump pointer that wraps
/// to the start after `limit` bytes (so that, with a limit past the caches, a block comes back
/// cold).
#[derive(Clone, Debug)]
pub struct CachingAlloc {
    limit: usize,
    bump: usize,
    caching: bool,
    /// Free blocks per class (index: log2 of the class).
    free: Vec<Vec<usize>>,
    /// Live blocks: (offset, class, requested).
    live: Vec<(usize, usize, usize)>,
    /// The counters.
    pub stats: Stats,
}

impl CachingAlloc {
    /// An allocator over `limit` bytes; `caching` keeps freed blocks for reuse.
    pub fn new(limit: usize, caching: bool) -> Self {
        Self { limit, bump: 0, caching, free: (0..usize::BITS).map(|_| Vec::new()).collect(), live: Vec::new(), stats: Stats::default() }
    }

    /// Serves a request of `bytes`: a cached block of its class, else fresh memory. None when
    /// the arena is exhausted (caching on).
    pub fn alloc(&mut self, bytes: usize) -> Option<usize> {
        let class = class_of(bytes);
        let cached = if self.caching { self.free[class.trailing_zeros() as usize].pop() } else { None };
        let off = match cached {
            Some(off) => {
                self.stats.cache_hits += 1;
                off
            }
            None => {
                if self.bump + class > self.limit {
                    if self.caching || class > self.limit {
                        return None;
                    }
                    self.bump = 0; // fresh memory wraps: the oldest block is the coldest
                }
                let off = self.bump;
                self.bump += class;
                self.stats.reserved = self.stats.reserved.max(self.bump as u64);
                off
            }
        };
        let s = &mut self.stats;
        s.allocs += 1;
        s.requested += bytes as u64;
        s.allocated += class as u64;
        s.peak_requested = s.peak_requested.max(s.requested);
        s.peak_allocated = s.peak_allocated.max(s.allocated);
        self.live.push((off, class, bytes));
        Some(off)
    }

    /// Frees the live block at `off` (to its class's cache when caching).
    pub fn free(&mut self, off: usize) {
        if let Some(i) = self.live.iter().position(|&(o, ..)| o == off) {
            let (_, class, bytes) = self.live.swap_remove(i);
            self.stats.frees += 1;
            self.stats.requested -= bytes as u64;
            self.stats.allocated -= class as u64;
            if self.caching {
                self.free[class.trailing_zeros() as usize].push(off);
            }
        }
    }
}

/// One event of an allocation trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Tensor `id` of `bytes` is allocated.
    Alloc {
        /// Tensor number.
        id: usize,
        /// Bytes requested.
        bytes: usize,
    },
    /// Tensor `id` is freed.
    Free {
        /// Tensor number.
        id: usize,
    },
}

/// A seeded allocation trace shaped like `steps` training steps of a `layers`-layer transformer
/// with hidden activations of `hidden` bytes per token row: the weights first (kept), then per
/// step a sequence length drawn from the seed (so the activation sizes change from step to
/// step), a forward pass that keeps each layer's activations (hidden, QKV = 3 × hidden, MLP =
/// 4 × hidden) and frees its temporaries (attention scores), and a backward pass that frees the
/// kept activations in reverse while allocating and freeing gradient temporaries.
pub fn transformer_trace(layers: usize, hidden: usize, steps: usize, seed: u64) -> Vec<Event> {
    let mut rng = Rng::new(seed);
    let mut ev = Vec::new();
    let mut id = 0;
    let mut alloc = |ev: &mut Vec<Event>, bytes: usize| {
        id += 1;
        ev.push(Event::Alloc { id, bytes });
        id
    };
    for _ in 0..layers {
        alloc(&mut ev, 12 * hidden * 64); // weights: 12 × hidden² with hidden as 64 rows
    }
    for _ in 0..steps {
        let seq = 32 + rng.below(96); // rows (tokens) in this step's batch
        let mut kept = Vec::new();
        for _ in 0..layers {
            let x = alloc(&mut ev, seq * hidden);
            let qkv = alloc(&mut ev, 3 * seq * hidden);
            let scores = alloc(&mut ev, seq * seq * 4);
            ev.push(Event::Free { id: scores });
            let mlp = alloc(&mut ev, 4 * seq * hidden);
            kept.extend([x, qkv, mlp]);
        }
        while let Some(t) = kept.pop() {
            let grad = alloc(&mut ev, seq * hidden * (1 + rng.below(4)));
            ev.push(Event::Free { id: grad });
            ev.push(Event::Free { id: t });
        }
    }
    ev
}

/// Plays `trace` on `a`; returns false when the arena ran out.
pub fn play(a: &mut CachingAlloc, trace: &[Event]) -> bool {
    let mut at: Vec<(usize, usize)> = Vec::new();
    for e in trace {
        match *e {
            Event::Alloc { id, bytes } => match a.alloc(bytes) {
                Some(off) => at.push((id, off)),
                None => return false,
            },
            Event::Free { id } => {
                if let Some(i) = at.iter().position(|&(t, _)| t == id) {
                    a.free(at.swap_remove(i).1);
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(1), 512);
        assert_eq!(class_of(512), 512);
        assert_eq!(class_of(513), 1024);
        assert_eq!(class_of(48 << 10), 64 << 10);
    }

    #[test]
    fn reuse_returns_the_just_freed_block() {
        let mut a = CachingAlloc::new(1 << 20, true);
        let x = a.alloc(30_000).unwrap();
        a.free(x);
        assert_eq!(a.alloc(20_000), Some(x), "same class: the cached block");
        assert_eq!(a.stats.cache_hits, 1);
        assert_eq!(a.stats.reserved, 32768);
        let y = a.alloc(40_000).unwrap();
        assert_ne!(y, x);
        assert_eq!(a.stats.reserved, 32768 + 65536);
        assert_eq!((a.stats.requested, a.stats.allocated), (60_000, 98_304));
    }

    #[test]
    fn fresh_memory_moves_on_and_wraps() {
        let mut a = CachingAlloc::new(4 * 4096, false);
        let offs: Vec<usize> = (0..5)
            .map(|_| {
                let o = a.alloc(4096).unwrap();
                a.free(o);
                o
            })
            .collect();
        assert_eq!(offs, [0, 4096, 8192, 12288, 0]);
        assert_eq!(a.stats.cache_hits, 0);
        assert_eq!(CachingAlloc::new(4096, true).alloc(8192), None);
    }

    #[test]
    fn a_transformer_trace_fragments_the_cache() {
        let t = transformer_trace(4, 1024, 3, 7);
        assert_eq!(t, transformer_trace(4, 1024, 3, 7), "seeded");
        let allocs = t.iter().filter(|e| matches!(e, Event::Alloc { .. })).count();
        let frees = t.iter().filter(|e| matches!(e, Event::Free { .. })).count();
        assert_eq!(allocs - frees, 4, "only the weights stay");
        let mut a = CachingAlloc::new(1 << 30, true);
        assert!(play(&mut a, &t));
        let s = a.stats;
        assert_eq!(s.allocated, 4 * class_of(12 * 1024 * 64) as u64);
        assert!(s.cache_hits > 0);
        assert!(s.reserved > s.peak_allocated, "cached blocks of other sizes: {s:?}");
        assert!(s.peak_allocated >= s.peak_requested);
        // Without caching nothing is reused.
        let mut b = CachingAlloc::new(1 << 30, false);
        assert!(play(&mut b, &t));
        assert_eq!(b.stats.cache_hits, 0);
    }
}
