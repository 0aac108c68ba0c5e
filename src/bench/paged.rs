//! Paged KV cache (vLLM's PagedAttention), prefix sharing and KV quantization: the KV of a
//! sequence lives in fixed-size blocks of `block` tokens drawn from a pool in a seeded,
//! scattered order, reached through a block table; an append writes the tail block, a scan walks
//! the table. A contiguous ring is the same layout with one block as large as the capacity, so
//! one scan kernel serves the paged, contiguous, shared-prefix and quantized variants.
//!
//! Layout in the region (offsets page aligned): the block tables (`u32` physical block numbers,
//! one table per sequence), the per-block scales (int8/fp8 only: one fp32 per head for K and for
//! V, per layer), then the pool: `layers × pool_blocks` blocks of `block × 2 × record` bytes,
//! layer-major (each layer has its own pool, as vLLM allocates one KV tensor per layer).
//! Dequantization is out of scope: a quantized scan reads the bytes and the scales, no more.

use alloc::vec::Vec;

use super::plan::Rng;

/// Bytes of one per-block scale (fp32).
pub const SCALE_BYTES: usize = 4;

/// Bytes the layout sections are aligned to (a 4 KiB page).
pub const PAGE: usize = 4096;

/// A KV element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE single, 4 bytes.
    Fp32,
    /// IEEE half, 2 bytes.
    Fp16,
    /// bfloat16, 2 bytes.
    Bf16,
    /// FP8 (E4M3), 1 byte, with a per-block scale.
    Fp8,
    /// INT8, 1 byte, with a per-block scale.
    Int8,
    /// The legacy numeric `kv_dtype=1|2|4`: that many bytes per element, no scale.
    Bytes(u8),
}

impl Dtype {
    /// The names `kv_dtype=` and `kv_dtypes=` accept (and the legacy byte counts `kv_dtype=`
    /// still takes).
    pub const NAMES: [&'static str; 5] = ["fp32", "fp16", "bf16", "fp8", "int8"];

    /// A name or a legacy byte count (`1`, `2`, `4`).
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "fp32" => Self::Fp32,
            "fp16" => Self::Fp16,
            "bf16" => Self::Bf16,
            "fp8" => Self::Fp8,
            "int8" => Self::Int8,
            "1" => Self::Bytes(1),
            "2" => Self::Bytes(2),
            "4" => Self::Bytes(4),
            _ => return None,
        })
    }

    /// The `kv-quant` variant of this dtype's scan (`scan-NAME`); the legacy byte counts, which
    /// `kv_dtypes=` does not take, have none.
    pub const fn scan_variant(self) -> Option<cachescope_arch::bench::Variant> {
        use cachescope_arch::bench::Variant;
        match self {
            Self::Fp32 => Some(Variant::ScanFp32),
            Self::Fp16 => Some(Variant::ScanFp16),
            Self::Bf16 => Some(Variant::ScanBf16),
            Self::Fp8 => Some(Variant::ScanFp8),
            Self::Int8 => Some(Variant::ScanInt8),
            Self::Bytes(_) => None,
        }
    }

    /// Name in records (`b1`, `b2`, `b4` for the legacy byte counts).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Fp16 => "fp16",
            Self::Bf16 => "bf16",
            Self::Fp8 => "fp8",
            Self::Int8 => "int8",
            Self::Bytes(1) => "b1",
            Self::Bytes(2) => "b2",
            Self::Bytes(_) => "b4",
        }
    }

    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            Self::Fp32 => 4,
            Self::Fp16 | Self::Bf16 => 2,
            Self::Fp8 | Self::Int8 => 1,
            Self::Bytes(n) => n as usize,
        }
    }

    /// Carries a per-block scale (int8, fp8).
    pub const fn scaled(self) -> bool {
        matches!(self, Self::Fp8 | Self::Int8)
    }
}

/// Shape of a paged KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagedShape {
    /// Transformer layers.
    pub layers: usize,
    /// KV heads per layer.
    pub kv_heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Element type.
    pub dtype: Dtype,
    /// Tokens per block (the whole capacity: a contiguous ring).
    pub block: usize,
    /// Tokens one sequence holds.
    pub capacity: usize,
}

impl PagedShape {
    /// Bytes of one K (or V) record: one token, one layer.
    pub const fn record_bytes(&self) -> usize {
        self.kv_heads * self.head_dim * self.dtype.bytes()
    }

    /// Bytes of one token in one layer (K and V).
    pub const fn token_bytes(&self) -> usize {
        2 * self.record_bytes()
    }

    /// KV bytes per token: 2 × layers × kv_heads × head_dim × dtype_bytes (scales apart).
    pub const fn bytes_per_token(&self) -> usize {
        self.layers * self.token_bytes()
    }

    /// Scale bytes of one block in one layer: one fp32 per head for K and for V (0 unscaled).
    pub const fn scale_bytes(&self) -> usize {
        if self.dtype.scaled() {
            2 * self.kv_heads * SCALE_BYTES
        } else {
            0
        }
    }

    /// Bytes of one block in one layer (data only).
    pub const fn block_bytes(&self) -> usize {
        self.block * self.token_bytes()
    }

    /// What a scan reads per block: one layer's block and its scales.
    pub const fn scan_bytes_per_block(&self) -> usize {
        self.block_bytes() + self.scale_bytes()
    }

    /// Bytes per block over every layer, scales included (÷ `block`: bytes per token with the
    /// scales amortised).
    pub const fn bytes_per_block(&self) -> usize {
        self.layers * self.scan_bytes_per_block()
    }

    /// Blocks holding `tokens` tokens.
    pub const fn blocks_for(&self, tokens: usize) -> usize {
        tokens.div_ceil(self.block)
    }

    /// Bytes a scan of `cached` tokens of one layer reads (data + the scales of its blocks;
    /// the block-table entries apart).
    pub const fn scan_bytes(&self, cached: usize) -> usize {
        cached * self.token_bytes() + self.blocks_for(cached) * self.scale_bytes()
    }

    /// Tokens of one layer a cache of `cache_bytes` holds: the token count at which scans are
    /// predicted to fall out of it (the formula's knee).
    pub const fn tokens_in(&self, cache_bytes: usize) -> usize {
        cache_bytes * self.block / self.scan_bytes_per_block()
    }
}

/// Where the parts of a paged KV cache sit, as offsets from the region's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The shape.
    pub shape: PagedShape,
    /// Block tables (sequences), each `tables_stride` bytes apart.
    pub tables: usize,
    /// Bytes from one table to the next (line aligned).
    pub table_stride: usize,
    /// Per-block scales: `[layer][physical block]`, `scale_bytes` each.
    pub scales: usize,
    /// The pool: `[layer][physical block]`, `block_bytes` each.
    pub pool: usize,
    /// Physical blocks per layer.
    pub pool_blocks: usize,
    /// Bytes the whole layout spans.
    pub footprint: usize,
}

impl Layout {
    /// A layout for `sequences` block tables of `shape.capacity` tokens each over a pool of
    /// `pool_blocks` blocks per layer.
    pub const fn new(shape: PagedShape, sequences: usize, pool_blocks: usize) -> Layout {
        let table_stride = (shape.capacity.div_ceil(shape.block) * 4).div_ceil(64) * 64;
        let tables = 0;
        let scales = (tables + sequences * table_stride).div_ceil(PAGE) * PAGE;
        let pool = (scales + shape.layers * pool_blocks * shape.scale_bytes()).div_ceil(PAGE) * PAGE;
        let footprint = pool + shape.layers * pool_blocks * shape.block_bytes();
        Layout { shape, tables, table_stride, scales, pool, pool_blocks, footprint }
    }

    /// Offset of physical block `phys` of `layer`.
    pub const fn block(&self, layer: usize, phys: usize) -> usize {
        self.pool + (layer * self.pool_blocks + phys) * self.shape.block_bytes()
    }

    /// Offset of the scales of physical block `phys` of `layer`.
    pub const fn scale(&self, layer: usize, phys: usize) -> usize {
        self.scales + (layer * self.pool_blocks + phys) * self.shape.scale_bytes()
    }

    /// Offset of entry `i` of table `seq`.
    pub const fn entry(&self, seq: usize, i: usize) -> usize {
        self.tables + seq * self.table_stride + 4 * i
    }

    /// Distinct `line`-byte lines and 4 KiB pages a scan of `cached` tokens of `layer` through
    /// `table` touches: table entries, scales, data.
    pub fn touched(&self, table: &[u32], seq: usize, layer: usize, cached: usize, line: usize) -> (usize, usize) {
        let line = line.max(1);
        // One bit per line and per page of the layout: two allocations, however many spans.
        let mut lines = alloc::vec![0u64; self.footprint.div_ceil(line).div_ceil(64)];
        let mut pages = alloc::vec![0u64; self.footprint.div_ceil(PAGE).div_ceil(64)];
        let mark = |bits: &mut [u64], first: usize, last: usize| {
            for i in first..=last {
                bits[i / 64] |= 1 << (i % 64);
            }
        };
        let s = self.shape;
        for (b, &phys) in table.iter().enumerate().take(s.blocks_for(cached)) {
            let phys = phys as usize;
            let tokens = (cached - b * s.block).min(s.block);
            for (start, len) in
                [(self.entry(seq, b), 4), (self.scale(layer, phys), s.scale_bytes()), (self.block(layer, phys), tokens * s.token_bytes())]
            {
                if len > 0 {
                    mark(&mut lines, start / line, (start + len - 1) / line);
                    mark(&mut pages, start / PAGE, (start + len - 1) / PAGE);
                }
            }
        }
        let count = |bits: &[u64]| bits.iter().map(|w| w.count_ones() as usize).sum();
        (count(&lines), count(&pages))
    }
}

/// A block table of `blocks` physical blocks drawn from a pool of `pool_blocks` in a seeded
/// scattered order (vLLM's free-block queue after some churn); `None` seed: in order
/// (contiguous).
pub fn scattered_table(blocks: usize, pool_blocks: usize, seed: Option<u64>) -> Vec<u32> {
    let mut all: Vec<u32> = (0..pool_blocks as u32).collect();
    if let Some(seed) = seed {
        Rng::new(seed).shuffle(&mut all);
    }
    all.truncate(blocks);
    all
}

/// Block tables of `sequences` sequences of `prefix + suffix` tokens, sharing (`shared`) the
/// prefix's full blocks or each holding a private copy. A prefix block that is not full is
/// private in both cases (vLLM shares only full blocks and copies on write). Physical blocks
/// are taken from a seeded shuffle of the pool. Returns the tables and the blocks used.
pub fn prefix_tables(sequences: usize, prefix: usize, suffix: usize, block: usize, shared: bool, seed: u64) -> (Vec<Vec<u32>>, usize) {
    let per_seq = (prefix + suffix).div_ceil(block);
    let full = prefix / block;
    let pool = sequences * per_seq;
    let order = scattered_table(pool, pool, Some(seed));
    let mut next = 0;
    let mut take = || {
        let p = order[next];
        next += 1;
        p
    };
    let common: Vec<u32> = if shared { (0..full).map(|_| take()).collect() } else { Vec::new() };
    let tables = (0..sequences).map(|_| (0..per_seq).map(|b| if shared && b < full { common[b] } else { take() }).collect()).collect();
    (tables, next)
}

/// Token counts for a quantization sweep: powers of two and 1.5× between, from `first` while a
/// one-layer scan reads at most `max_bytes` of K and V (the scales apart, so that every dtype
/// reaches the same byte count).
pub fn token_ladder(shape: &PagedShape, first: usize, max_bytes: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut p = first.max(1).next_power_of_two();
    let fits = |t: usize| t * shape.token_bytes() <= max_bytes;
    while fits(p) {
        v.push(p);
        if p >= 2 && fits(p + p / 2) {
            v.push(p + p / 2);
        }
        p *= 2;
    }
    v
}

/// The value the kernel stores in word `w` of layer `layer`'s record of token `t` (so a scan
/// can be verified).
pub const fn tag(t: usize, layer: usize, w: usize) -> u64 {
    ((t as u64) << 24) | ((layer as u64) << 16) | w as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dtype: Dtype, block: usize, capacity: usize) -> PagedShape {
        PagedShape { layers: 4, kv_heads: 2, head_dim: 64, dtype, block, capacity }
    }

    #[test]
    fn every_sweepable_dtype_has_its_scan_variant() {
        for name in Dtype::NAMES {
            let v = Dtype::parse(name).and_then(Dtype::scan_variant).unwrap();
            assert_eq!(v.name(), alloc::format!("scan-{name}"));
            assert_eq!(v.bench(), cachescope_arch::bench::Bench::KvQuant);
        }
        assert_eq!(Dtype::Bytes(2).scan_variant(), None);
    }

    #[test]
    fn dtypes_and_the_formula() {
        for (name, bytes, scaled) in [("fp32", 4, false), ("fp16", 2, false), ("bf16", 2, false), ("fp8", 1, true), ("int8", 1, true)] {
            let d = Dtype::parse(name).unwrap();
            assert_eq!((d.name(), d.bytes(), d.scaled()), (name, bytes, scaled));
        }
        assert_eq!(Dtype::parse("2"), Some(Dtype::Bytes(2)));
        assert_eq!(Dtype::parse("int4"), None);
        let fp16 = shape(Dtype::Fp16, 16, 256);
        assert_eq!(fp16.bytes_per_token(), 2 * 4 * 2 * 64 * 2);
        assert_eq!(fp16.scale_bytes(), 0);
        let int8 = shape(Dtype::Int8, 16, 256);
        assert_eq!(int8.bytes_per_token(), 1024);
        assert_eq!(int8.scale_bytes(), 16);
        assert_eq!(int8.bytes_per_block(), 4 * (16 * 256 + 16));
        // The knee the formula predicts: int8 holds about twice the tokens of fp16.
        assert_eq!(fp16.tokens_in(1 << 20), 2048);
        assert_eq!(int8.tokens_in(1 << 20), 4080);
        assert_eq!(int8.scan_bytes(17), 17 * 256 + 2 * 16);
    }

    #[test]
    fn layout_and_touched() {
        let s = shape(Dtype::Int8, 8, 64);
        let l = Layout::new(s, 1, 8);
        assert_eq!(l.tables, 0);
        assert!(l.scales.is_multiple_of(PAGE) && l.pool.is_multiple_of(PAGE));
        assert_eq!(l.block(1, 0), l.pool + 8 * s.block_bytes());
        let t = scattered_table(8, 8, Some(3));
        let mut sorted = t.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<u32>>());
        assert_ne!(t, sorted, "scattered");
        assert_eq!(scattered_table(4, 8, None), [0, 1, 2, 3]);
        // 64 tokens of 256 B: 16 KiB = 256 lines, 4 pages of data (8 blocks of 2 KiB), one table
        // line and page, one scales line (8 × 16 B) and page.
        let (lines, pages) = l.touched(&t, 0, 0, 64, 64);
        assert_eq!(lines, 256 + 1 + 2);
        assert_eq!(pages, 4 + 1 + 1);
        // A contiguous layout: one block.
        let c = Layout::new(PagedShape { dtype: Dtype::Fp16, block: 64, ..s }, 1, 1);
        assert_eq!(c.touched(&[0], 0, 0, 64, 64), (512 + 1, 8 + 1));
    }

    #[test]
    fn prefix_sharing_saves_the_full_prefix_blocks() {
        let (shared, used_shared) = prefix_tables(4, 40, 8, 16, true, 5);
        let (private, used_private) = prefix_tables(4, 40, 8, 16, false, 5);
        // 48 tokens = 3 blocks per sequence; 2 full prefix blocks shared.
        assert_eq!(used_private, 12);
        assert_eq!(used_shared, 2 + 4);
        assert!(shared.iter().all(|t| t[..2] == shared[0][..2] && t.len() == 3));
        let mut all: Vec<u32> = private.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 12, "private blocks are distinct");
    }

    #[test]
    fn ladder_stops_at_the_byte_cap() {
        let fp16 = shape(Dtype::Fp16, 16, 0);
        let l = token_ladder(&fp16, 16, 1536 << 10);
        assert_eq!(l.first(), Some(&16));
        assert_eq!(l.last(), Some(&3072));
        assert!(l.contains(&2048) && l.contains(&24));
        let int8 = token_ladder(&shape(Dtype::Int8, 16, 0), 16, 1536 << 10);
        assert_eq!(int8.last(), Some(&6144));
        assert!(l.windows(2).all(|w| w[0] < w[1]));
    }
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::{tag, Layout};
    use core::ptr::{read_volatile, write_volatile};

    /// A paged KV cache laid out at `base` (mapped test memory of `layout.footprint` bytes).
    #[derive(Clone, Copy, Debug)]
    pub struct Paged {
        /// Virtual address of the layout.
        pub base: usize,
        /// Where its parts are.
        pub layout: Layout,
    }

    impl Paged {
        /// Writes block table `seq`.
        pub fn set_table(&self, seq: usize, table: &[u32]) {
            for (i, &p) in table.iter().enumerate() {
                // SAFETY: inside the layout's table area (the caller maps footprint bytes);
                // 4-byte aligned store to test memory.
                unsafe { write_volatile((self.base + self.layout.entry(seq, i)) as *mut u32, p) };
            }
        }

        /// Appends token `t` of sequence `seq` in `layers` layers: its K and V records into the
        /// tail block (through the table), and the block's scales when the token opens it.
        pub fn append(&self, seq: usize, t: usize, layers: usize) {
            let s = self.layout.shape;
            let b = t / s.block;
            // SAFETY: a table entry inside the layout; aligned load.
            let phys = unsafe { read_volatile((self.base + self.layout.entry(seq, b)) as *const u32) } as usize;
            let words = s.token_bytes() / 8;
            for layer in 0..layers {
                let at = self.base + self.layout.block(layer, phys) + (t % s.block) * s.token_bytes();
                for w in 0..words {
                    // SAFETY: the token's slot inside its block, inside the layout; 8-byte aligned.
                    unsafe { write_volatile((at + 8 * w) as *mut u64, tag(t, layer, w)) };
                }
                if t.is_multiple_of(s.block) {
                    let sc = self.base + self.layout.scale(layer, phys);
                    for w in 0..s.scale_bytes() / 8 {
                        // SAFETY: the block's scales inside the layout; 8-byte aligned.
                        unsafe { write_volatile((sc + 8 * w) as *mut u64, 0x3f80_0000_3f80_0000) };
                    }
                }
            }
        }

        /// Attention read of `cached` tokens of `layer` of sequence `seq`: per block, its table
        /// entry, its scales, then its tokens (LDP, 16 bytes a load).
        pub fn scan(&self, seq: usize, layer: usize, cached: usize) {
            let s = self.layout.shape;
            for b in 0..s.blocks_for(cached) {
                // SAFETY: a table entry inside the layout; aligned load.
                let phys = unsafe { read_volatile((self.base + self.layout.entry(seq, b)) as *const u32) } as usize;
                let sc = self.base + self.layout.scale(layer, phys);
                for w in 0..s.scale_bytes() / 8 {
                    // SAFETY: the block's scales inside the layout; aligned load.
                    core::hint::black_box(unsafe { read_volatile((sc + 8 * w) as *const u64) });
                }
                let tokens = (cached - b * s.block).min(s.block);
                read_span(self.base + self.layout.block(layer, phys), tokens * s.token_bytes());
            }
        }

        /// Token `t`'s first word in `layer` of sequence `seq` as stored, through the table.
        pub fn first_word(&self, seq: usize, layer: usize, t: usize) -> u64 {
            let s = self.layout.shape;
            // SAFETY: as in `scan`.
            let phys = unsafe { read_volatile((self.base + self.layout.entry(seq, t / s.block)) as *const u32) } as usize;
            // SAFETY: the token's slot inside the layout; aligned load.
            unsafe { read_volatile((self.base + self.layout.block(layer, phys) + (t % s.block) * s.token_bytes()) as *const u64) }
        }
    }

    /// Reads `bytes` (a multiple of 16) at `base` (16-byte aligned): the stream benchmark's LDP
    /// loop over the whole 64-byte part, LDP for the rest.
    pub fn read_span(base: usize, bytes: usize) {
        let body = bytes & !63;
        if body > 0 {
            // SAFETY: [base, base + body) is mapped test memory (the caller's layout), 16-byte
            // aligned, a non-zero multiple of 64.
            unsafe { crate::bench::stream::run(crate::bench::stream::Kernel::ReadLdp, base, body, 0) };
        }
        let mut at = base + body;
        while at + 16 <= base + bytes {
            // SAFETY: inside the span; 16-byte aligned pair load from test memory.
            unsafe { core::arch::asm!("ldp {a}, {b}, [{p}]", p = in(reg) at, a = out(reg) _, b = out(reg) _, options(nostack, readonly)) };
            at += 16;
        }
    }
}
