//! `kv-paged`: a paged KV cache (vLLM's PagedAttention) against the contiguous layout at equal
//! bytes. The layouts are [`super::paged`]; the deep-learning benchmarks after it read its
//! paged shape ([`paged_shape`]) and its `seed`.

use alloc::vec::Vec;

use super::case::{self, Benchmark, CacheFacts, Machine};
use super::kv::{kv_dtype, kv_shape};
use super::paged::{scattered_table, tag, Layout, Paged, PagedShape};
use super::{measure, Env, Metric, MetricId, Notes, Region, Unit};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use cachescope_arch::bench::{Bench, Param, Variant};

/// Powers of two up to `capacity`, and `capacity`.
fn powers(capacity: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..usize::BITS).map(|k| 1usize << k).take_while(|&t| t < capacity).collect();
    v.push(capacity);
    v
}

/// `kv-paged`: for the contiguous layout (one block of `shape.capacity` tokens) and each block
/// size in `blocks`, appends and scans at powers-of-two token counts. Returns the tokens whose
/// first word read back wrong through the block table.
pub fn kv_paged(env: &Env, region: &Region, shape: PagedShape, blocks: &[usize], line: usize, seed: u64) -> usize {
    let mut bad = 0;
    let layouts = core::iter::once(shape.capacity).chain(blocks.iter().copied());
    for (i, block) in layouts.enumerate() {
        let contiguous = i == 0;
        let s = PagedShape { block, ..shape };
        let n = s.blocks_for(s.capacity);
        let layout = Layout::new(s, 1, n);
        if layout.footprint > region.len {
            crate::diag!("kv-paged block {block}: needs {} B, the window has {} B: skipped", layout.footprint, region.len);
            continue;
        }
        let table = scattered_table(n, n, (!contiguous).then_some(seed));
        let kv = Paged { base: region.va, layout };
        kv.set_table(0, &table);
        let (append_name, scan_name) = if contiguous {
            (Variant::AppendContiguous.name(), Variant::ScanContiguous.name())
        } else {
            (Variant::AppendPaged.name(), Variant::ScanPaged.name())
        };
        let mut t = 0;
        for cp in powers(s.capacity) {
            while t + 1 < cp {
                kv.append(0, t, s.layers);
                t += 1;
            }
            let tok = t;
            let cached = tok + 1;
            let params = [(Param::Tokens.name(), cached as u64), (Param::Block.name(), block as u64)];
            let id = |variant| MetricId {
                bench: Bench::KvPaged.name(),
                variant,
                attr: region.attr,
                bytes: s.scan_bytes(cached) as u64,
                params: &params,
            };
            let append = measure(env, id(append_name), || kv.append(0, tok, s.layers));
            t += 1;
            let layer = tok % s.layers;
            let scan = measure(env, id(scan_name), || kv.scan(0, layer, cached));
            let (lines, pages) = layout.touched(&table, 0, layer, cached, line);
            let notes: Notes = &|m| m.table_reads(s.blocks_for(cached) as u64).lines(lines as u64).pages(pages as u64);
            Metric { id: id(append_name), summary: append, work: 1, unit: Unit::TimePerOp, notes }.emit(env);
            Metric { id: id(scan_name), summary: scan, work: s.scan_bytes(cached) as u64, unit: Unit::Rate, notes }.emit(env);
        }
        bad += (0..s.capacity).filter(|&t| kv.first_word(0, 0, t) != tag(t, 0, 0)).count();
    }
    bad
}

typed_args! {
    /// The paged KV layouts' arguments (kv-paged, kv-quant, kv-prefix; `seed` also alloc-reuse's).
    pub struct PagedArgs = PAGED, PAGED_ARGS {
        kv_block: Number { min: 1, max: 4096 }, Literal("16"), "tokens per KV block (kv-quant, kv-prefix)";
        kv_blocks: NumberList { min: 1, max: 4096 }, Literal("8,16,32,64"), "block sizes kv-paged compares with the contiguous layout";
        seed: Number { min: 1, max: u32::MAX as u64 }, Literal("42"), "seed of the scattered KV block pools and the allocation trace";
    }
}

/// The `kv-paged` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::KvPaged, args: PAGED_ARGS, validate: Some(validate), run };

/// The paged shape of `kv_*=` with `kv_block`-token blocks.
pub fn paged_shape(ctx: &Ctx) -> PagedShape {
    let r = kv_shape(ctx);
    PagedShape {
        layers: r.layers,
        kv_heads: r.kv_heads,
        head_dim: r.head_dim,
        dtype: kv_dtype(ctx),
        block: ctx.args.get(PAGED.kv_block) as usize,
        capacity: r.capacity,
    }
}

/// A layout (each block size, and the contiguous one) that does not fit the window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let paged = paged_shape(ctx);
    let blocks = ctx.args.get(PAGED.kv_blocks).unwrap_or(&[]);
    for &b in blocks.iter().chain([paged.capacity as u64].iter()) {
        let s = PagedShape { block: b as usize, ..paged };
        let f = Layout::new(s, 1, s.blocks_for(s.capacity)).footprint as u64;
        if f > m.room.window {
            return Err(alloc::format!(
                "the kv-paged layout with kv_block {b} ({f} B) exceeds the {} test window",
                case::mib(m.room.window)
            ));
        }
    }
    Ok(())
}

/// Paged KV against the contiguous layout at equal bytes.
fn run(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    let shape = paged_shape(ctx);
    let blocks: Vec<usize> = ctx.args.get(PAGED.kv_blocks).unwrap_or(&[]).iter().map(|&b| b as usize).collect();
    diag!(
        "kv-paged: {} tokens of {} B per layer ({}), contiguous vs blocks of {:?} tokens from a scattered pool (seed {})",
        shape.capacity,
        shape.token_bytes(),
        shape.dtype.name(),
        blocks,
        ctx.args.get(PAGED.seed)
    );
    let bad = kv_paged(&env, &wb, shape, &blocks, CacheFacts::read().line, ctx.args.get(PAGED.seed));
    ctx.check_eq(bad, 0, "every token reads back through its block table");
}
