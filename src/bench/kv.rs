//! Ring-buffer KV append (an LLM KV cache): each step appends one token's K and V records for
//! every layer into a per-layer ring of `capacity` slots, then attention scans all cached tokens
//! of one layer. Reported as append cost per token and scan bandwidth as the cache grows past
//! each cache level, for line-aligned and misaligned slot strides, and across wrap-around.

use alloc::vec::Vec;

use super::NO_NOTES;
use super::{measure, Env, Metric, MetricId, Region, Unit};

/// Shape of the KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvShape {
    /// Transformer layers.
    pub layers: usize,
    /// KV heads per layer.
    pub kv_heads: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Bytes per element (2 = fp16/bf16).
    pub dtype_bytes: usize,
    /// Ring capacity in tokens.
    pub capacity: usize,
}

impl KvShape {
    /// Bytes of one K (or V) record: one token, one layer.
    pub const fn record_bytes(&self) -> usize {
        self.kv_heads * self.head_dim * self.dtype_bytes
    }

    /// KV bytes per token: 2 × layers × kv_heads × head_dim × dtype_bytes.
    pub const fn bytes_per_token(&self) -> usize {
        2 * self.layers * self.record_bytes()
    }

    /// Slot stride: K+V rounded up to `line` (aligned), or K+V+8 (not a multiple of the line,
    /// so records straddle lines; still 8-byte aligned so Device memory does not fault).
    pub const fn stride(&self, line: usize, aligned: bool) -> usize {
        let kv = 2 * self.record_bytes();
        if aligned {
            kv.div_ceil(line) * line
        } else {
            kv + 8
        }
    }

    /// Bytes the ring occupies.
    pub const fn footprint(&self, line: usize, aligned: bool) -> usize {
        self.layers * self.capacity * self.stride(line, aligned)
    }
}

/// Token counts at which a measurement is taken: powers of two up to the capacity, then past
/// the wrap-around (×1.25, ×1.5, ×2).
pub fn checkpoints(capacity: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut t = 1;
    while t < capacity {
        v.push(t);
        t *= 2;
    }
    v.extend([capacity, capacity + capacity / 4, capacity + capacity / 2, 2 * capacity]);
    v.dedup();
    v
}

struct Ring<'a> {
    region: &'a Region,
    shape: KvShape,
    stride: usize,
}

impl Ring<'_> {
    fn slot(&self, layer: usize, token: usize) -> usize {
        self.region.va + (layer * self.shape.capacity + token % self.shape.capacity) * self.stride
    }

    /// Appends token `t`: K and V records of every layer, 8-byte stores.
    fn append(&self, t: usize) {
        let words = 2 * self.shape.record_bytes() / 8;
        for layer in 0..self.shape.layers {
            let base = self.slot(layer, t);
            for w in 0..words {
                // SAFETY: slot + record lies inside the ring, which fits the region (checked by
                // the caller); 8-byte aligned store to test memory.
                unsafe { core::ptr::write_volatile((base + 8 * w) as *mut u64, (t as u64) << 16 | w as u64) };
            }
        }
    }

    /// Attention read: all cached tokens of `layer`. Returns a checksum (kept live).
    fn scan(&self, layer: usize, cached: usize) -> u64 {
        let words = 2 * self.shape.record_bytes() / 8;
        let mut sum = 0u64;
        for tok in 0..cached {
            let base = self.region.va + (layer * self.shape.capacity + tok) * self.stride;
            for w in 0..words {
                // SAFETY: as in `append`; aligned load from test memory.
                sum = sum.wrapping_add(unsafe { core::ptr::read_volatile((base + 8 * w) as *const u64) });
            }
        }
        sum
    }
}

/// Runs the KV benchmark in `region` for both stride kinds.
pub fn run(env: &Env, region: &Region, shape: KvShape, line: usize) {
    for aligned in [true, false] {
        let stride = shape.stride(line, aligned);
        let footprint = shape.footprint(line, aligned);
        let kind = if aligned { "aligned" } else { "misaligned" };
        if footprint > region.len {
            crate::diag!("kv {} {kind}: ring needs {footprint} B, window has {} B: skipped", region.attr, region.len);
            continue;
        }
        let ring = Ring { region, shape, stride };
        let (append_name, scan_name) = if aligned { ("append-aligned", "scan-aligned") } else { ("append-misaligned", "scan-misaligned") };
        let mut t = 0;
        for cp in checkpoints(shape.capacity) {
            while t + 1 < cp {
                ring.append(t);
                t += 1;
            }
            // Measure appending token t (re-appending the same slot for each repeat).
            let tok = t;
            let cached = (t + 1).min(shape.capacity);
            let scanned = (cached * 2 * shape.record_bytes()) as u64;
            // The identity of both measurements: the token count after this append, and so on.
            let params = [
                ("tokens", tok as u64 + 1),
                ("cached", cached as u64),
                ("stride", stride as u64),
                ("wrapped", (tok + 1 > shape.capacity) as u64),
            ];
            let id = |variant| MetricId { bench: "kv", variant, attr: region.attr, bytes: scanned, params: &params };
            let append = measure(env, id(append_name), || ring.append(tok));
            t += 1;
            let layer = tok % shape.layers;
            let scan = measure(env, id(scan_name), || {
                core::hint::black_box(ring.scan(layer, cached));
            });
            Metric { id: id(append_name), summary: append, work: 1, unit: Unit::TimePerOp, notes: NO_NOTES }.emit(env);
            Metric { id: id(scan_name), summary: scan, work: scanned, unit: Unit::Rate, notes: NO_NOTES }.emit(env);
        }
    }
}
