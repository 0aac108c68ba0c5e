//! `kv-quant`: KV quantization, where one layer's scan falls out of each cache level, per dtype.

use alloc::vec::Vec;

use super::case::{self, Benchmark, CacheFacts};
use super::kv_paged::{paged_shape, PAGED};
use super::paged::{scattered_table, token_ladder, Dtype, Layout, Paged, PagedShape};
use super::{measure, Env, Metric, MetricId, Notes, Region, Unit};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::record::{self, Emit};
use cachescope_arch::bench::{Bench, Param, Variant};

/// The `kv-layout` record of a shape: the formula's inputs and results.
pub fn emit_layout(bench: &str, s: &PagedShape) {
    record::KvLayout::new()
        .bench(bench)
        .dtype(s.dtype.name())
        .dtype_bytes(s.dtype.bytes() as u64)
        .block(s.block as u64)
        .layers(s.layers as u64)
        .kv_heads(s.kv_heads as u64)
        .head_dim(s.head_dim as u64)
        .bytes_per_token(s.bytes_per_token() as u64)
        .scale_bytes(s.scale_bytes() as u64)
        .bytes_per_block(s.bytes_per_block() as u64)
        .scan_bytes_per_block(s.scan_bytes_per_block() as u64)
        .emit();
}

/// `kv-quant`: per dtype, one layer's scan at token counts on a ladder (×1.5 steps) up to
/// `max_bytes` of K and V, through a scattered block table of `shape.block`-token blocks.
pub fn kv_quant(env: &Env, region: &Region, shape: PagedShape, dtypes: &[Dtype], max_bytes: usize, seed: u64) {
    for &dtype in dtypes {
        let full = PagedShape { dtype, ..shape };
        emit_layout(Bench::KvQuant.name(), &full);
        let ladder = token_ladder(&full, full.block, max_bytes);
        let Some(&top) = ladder.last() else { continue };
        // Only the scanned layer is laid out and filled: the other layers change nothing a
        // one-layer scan reads.
        let s = PagedShape { layers: 1, capacity: top, ..full };
        let n = s.blocks_for(top);
        let layout = Layout::new(s, 1, n);
        if layout.footprint > region.len {
            crate::diag!("kv-quant {}: needs {} B, the window has {} B: skipped", dtype.name(), layout.footprint, region.len);
            continue;
        }
        let kv = Paged { base: region.va, layout };
        kv.set_table(0, &scattered_table(n, n, Some(seed)));
        for t in 0..top {
            kv.append(0, t, 1);
        }
        let Some(variant) = dtype.scan_variant().map(Variant::name) else { continue };
        for &cached in &ladder {
            let params = [(Param::Tokens.name(), cached as u64), (Param::Block.name(), s.block as u64)];
            let id =
                MetricId { bench: Bench::KvQuant.name(), variant, attr: region.attr, bytes: s.scan_bytes(cached) as u64, params: &params };
            let summary = measure(env, id, || kv.scan(0, 0, cached));
            let notes: Notes = &|m| m.dtype_bytes(dtype.bytes() as u64).scan_bytes_per_block(s.scan_bytes_per_block() as u64);
            Metric { id, summary, work: s.scan_bytes(cached) as u64, unit: Unit::Rate, notes }.emit(env);
        }
    }
}

typed_args! {
    /// The quantization sweep's arguments.
    pub struct QuantArgs = QUANT, QUANT_ARGS {
        kv_dtypes: SubsetOf(&Dtype::NAMES), Literal("fp32,fp16,int8"), "dtypes kv-quant sweeps (scans up to max_size bytes of K and V; bf16 and fp8 lay out as fp16 and int8)";
    }
}

/// The `kv-quant` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::KvQuant, args: QUANT_ARGS, validate: None, run };

/// Where one layer's scan falls out of each cache level, per dtype.
fn run(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    let caches = CacheFacts::read();
    let max = super::latency::max_size(ctx, &caches) as usize;
    let shape = paged_shape(ctx);
    let dtypes: Vec<Dtype> = ctx.args.get(QUANT.kv_dtypes).iter().filter_map(|d| Dtype::parse(d)).collect();
    for d in &dtypes {
        let s = PagedShape { dtype: *d, ..shape };
        let knees: Vec<alloc::string::String> =
            caches.capacities.iter().map(|&(level, size)| alloc::format!("L{level} {} tokens", s.tokens_in(size as usize))).collect();
        diag!(
            "kv-quant {:<4}: {} B/token = 2 x {} layers x {} heads x {} dims x {} B{}; a layer's scan leaves the caches at (formula): {}",
            d.name(),
            s.bytes_per_block() as f64 / s.block as f64,
            s.layers,
            s.kv_heads,
            s.head_dim,
            d.bytes(),
            if d.scaled() {
                alloc::format!(" + {} B of scales per {}-token block and layer", s.scale_bytes(), s.block)
            } else {
                alloc::string::String::new()
            },
            knees.join(", ")
        );
    }
    diag!("kv-quant: dequantization is out of scope: the scans read the quantized bytes and the scales, no more");
    kv_quant(&env, &wb, shape, &dtypes, max, ctx.args.get(PAGED.seed));
    ctx.check(!dtypes.is_empty(), "at least one dtype swept");
}
