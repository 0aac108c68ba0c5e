//! Ring-buffer KV append (an LLM KV cache): each step appends one token's K and V records for
//! every layer into a per-layer ring of `capacity` slots, then attention scans all cached tokens
//! of one layer. Reported as append cost per token and scan bandwidth as the cache grows past
//! each cache level, for line-aligned and misaligned slot strides, and across wrap-around.

use alloc::vec::Vec;

use super::case::{self, for_each_region, mib, Benchmark, CacheFacts, Machine};
use super::paged::Dtype;
use super::{measure, Env, Metric, MetricId, Region, Unit, NO_NOTES};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::record::{self, Emit};
use cachescope_arch::bench::{Bench, Param, Variant};

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
        let (append_name, scan_name) = if aligned {
            (Variant::AppendAligned.name(), Variant::ScanAligned.name())
        } else {
            (Variant::AppendMisaligned.name(), Variant::ScanMisaligned.name())
        };
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
                (Param::Tokens.name(), tok as u64 + 1),
                (Param::Cached.name(), cached as u64),
                (Param::Stride.name(), stride as u64),
                (Param::Wrapped.name(), (tok + 1 > shape.capacity) as u64),
            ];
            let id = |variant| MetricId { bench: Bench::Kv.name(), variant, attr: region.attr, bytes: scanned, params: &params };
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

typed_args! {
    /// The KV shape: the ring's, and every deep-learning benchmark's.
    pub struct KvArgs = KV, KV_ARGS {
        kv_layers: Number { min: 1, max: 128 }, Literal("4"), "KV layers";
        kv_heads: Number { min: 1, max: 64 }, Literal("2"), "KV heads";
        kv_head_dim: Number { min: 4, max: 1024 }, Literal("64"), "head dimension (kv_heads x kv_head_dim x kv_dtype must be a multiple of 8 bytes)";
        kv_dtype: OneOf(&["fp32", "fp16", "bf16", "fp8", "int8", "1", "2", "4"]), Literal("fp16"), "KV element type (int8/fp8 add a per-block fp32 scale per head; 1/2/4: legacy bytes per element, no scale)";
        kv_capacity: Number { min: 2, max: 65536 }, Literal("256"), "ring (and kv-paged sequence) capacity in tokens";
    }
}

/// The `kv` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Kv, args: KV_ARGS, validate: Some(validate), run: run_case };

/// The element type of `kv_dtype=`.
pub fn kv_dtype(ctx: &Ctx) -> Dtype {
    Dtype::parse(ctx.args.get(KV.kv_dtype)).unwrap_or(Dtype::Fp16)
}

/// The ring's shape from `kv_*=`.
pub fn kv_shape(ctx: &Ctx) -> KvShape {
    KvShape {
        layers: ctx.args.get(KV.kv_layers) as usize,
        kv_heads: ctx.args.get(KV.kv_heads) as usize,
        head_dim: ctx.args.get(KV.kv_head_dim) as usize,
        // The ring has no blocks: element bytes only, no scales.
        dtype_bytes: kv_dtype(ctx).bytes(),
        capacity: ctx.args.get(KV.kv_capacity) as usize,
    }
}

/// A shape whose records are not whole 8-byte words, or whose ring does not fit the window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let shape = kv_shape(ctx);
    if !shape.record_bytes().is_multiple_of(8) {
        return Err(alloc::format!(
            "a K/V record of kv_heads x kv_head_dim x kv_dtype = {} x {} x {} = {} B is not a multiple of 8 bytes",
            shape.kv_heads,
            shape.head_dim,
            shape.dtype_bytes,
            shape.record_bytes()
        ));
    }
    let ring = shape.footprint(m.caches.line, true).max(shape.footprint(m.caches.line, false)) as u64;
    if ring > m.room.window {
        return Err(alloc::format!(
            "the KV ring (kv_layers x kv_capacity x slot = {} B) exceeds the {} test window",
            ring,
            mib(m.room.window)
        ));
    }
    Ok(())
}

fn run_case(ctx: &mut Ctx) {
    let env = match case::env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    // validate() refused shapes whose records are not whole words or whose ring does not fit.
    let shape = kv_shape(ctx);
    diag!(
        "kv: layers {} kv_heads {} head_dim {} dtype {} B capacity {} tokens -> {} KV bytes per token (2 x layers x kv_heads x head_dim x dtype)",
        shape.layers, shape.kv_heads, shape.head_dim, shape.dtype_bytes, shape.capacity, shape.bytes_per_token()
    );
    record::KvShape::new()
        .layers(shape.layers as u64)
        .kv_heads(shape.kv_heads as u64)
        .head_dim(shape.head_dim as u64)
        .dtype_bytes(shape.dtype_bytes as u64)
        .capacity(shape.capacity as u64)
        .bytes_per_token(shape.bytes_per_token() as u64)
        .emit();
    ctx.check_eq(shape.bytes_per_token(), 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.dtype_bytes, "KV bytes per token");
    let line = CacheFacts::read().line;
    for_each_region(ctx, |_, region| run(&env, region, shape, line));
}
