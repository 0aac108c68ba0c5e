//! `kv-prefix`: prefix sharing, S sequences with one shared copy of the prefix or private copies.

use super::case::{self, Benchmark, Machine};
use super::kv_paged::{paged_shape, PAGED};
use super::paged::{prefix_tables, tag, Layout, Paged, PagedShape};
use super::{measure, Env, Metric, MetricId, Region, Unit};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use cachescope_arch::bench::{Bench, Param, Variant};

/// `kv-prefix`: `sequences` sequences of `prefix + suffix` tokens scanned one after the other
/// (one layer), the prefix's full blocks shared by every block table or copied per sequence.
/// Returns the tokens that read back wrong.
pub fn kv_prefix(env: &Env, region: &Region, shape: PagedShape, sequences: usize, prefix: usize, suffix: usize, seed: u64) -> usize {
    let mut bad = 0;
    let tokens = prefix + suffix;
    for shared in [true, false] {
        let (tables, used) = prefix_tables(sequences, prefix, suffix, shape.block, shared, seed);
        let s = PagedShape { layers: 1, capacity: tokens, ..shape };
        let layout = Layout::new(s, sequences, used);
        if layout.footprint > region.len {
            crate::diag!("kv-prefix: needs {} B, the window has {} B: skipped", layout.footprint, region.len);
            continue;
        }
        let kv = Paged { base: region.va, layout };
        for (seq, t) in tables.iter().enumerate() {
            kv.set_table(seq, t);
            for tok in 0..tokens {
                kv.append(seq, tok, 1);
            }
        }
        let variant = if shared { Variant::Shared } else { Variant::Private }.name();
        let params = [
            (Param::Sequences.name(), sequences as u64),
            (Param::Prefix.name(), prefix as u64),
            (Param::Suffix.name(), suffix as u64),
            (Param::Block.name(), s.block as u64),
        ];
        let bytes = (sequences * s.scan_bytes(tokens)) as u64;
        let id = MetricId { bench: Bench::KvPrefix.name(), variant, attr: region.attr, bytes, params: &params };
        let summary = measure(env, id, || {
            for seq in 0..sequences {
                kv.scan(seq, 0, tokens);
            }
        });
        // KV bytes of every layer the layout holds: what sharing saves is the difference.
        let pool_bytes = (used * shape.layers * shape.scan_bytes_per_block()) as u64;
        Metric { id, summary, work: bytes, unit: Unit::Rate, notes: &|m| m.pool_blocks(used as u64).pool_bytes(pool_bytes) }.emit(env);
        bad += (0..sequences).map(|seq| (0..tokens).filter(|&t| kv.first_word(seq, 0, t) != tag(t, 0, 0)).count()).sum::<usize>();
    }
    bad
}

typed_args! {
    /// The prefix-sharing benchmark's arguments.
    pub struct PrefixArgs = PREFIX, PREFIX_ARGS {
        kv_seqs: Number { min: 1, max: 64 }, Literal("4"), "kv-prefix: sequences sharing the prefix";
        kv_prefix: Number { min: 0, max: 65535 }, Literal("512"), "kv-prefix: prefix tokens";
        kv_seq_tokens: Number { min: 1, max: 65536 }, Literal("576"), "kv-prefix: tokens each sequence holds (the prefix and its own suffix)";
    }
}

/// The `kv-prefix` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::KvPrefix, args: PREFIX_ARGS, validate: Some(validate), run };

/// (sequences, prefix, suffix).
fn prefix_args(ctx: &Ctx) -> (usize, usize, usize) {
    let (p, t) = (ctx.args.get(PREFIX.kv_prefix) as usize, ctx.args.get(PREFIX.kv_seq_tokens) as usize);
    (ctx.args.get(PREFIX.kv_seqs) as usize, p, t.saturating_sub(p))
}

/// A prefix that leaves no token of a sequence its own, or a layout larger than the window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let paged = paged_shape(ctx);
    let (seqs, prefix, _) = prefix_args(ctx);
    let seq_tokens = ctx.args.get(PREFIX.kv_seq_tokens) as usize;
    if prefix >= seq_tokens {
        return Err(alloc::format!(
            "kv_prefix={prefix} does not fit a sequence of kv_seq_tokens={seq_tokens}: each of the kv_seqs={seqs} sequences needs its own tokens after the prefix"
        ));
    }
    let s = PagedShape { layers: 1, capacity: seq_tokens, ..paged };
    let f = Layout::new(s, seqs, seqs * s.blocks_for(seq_tokens)).footprint as u64;
    if f > m.room.window {
        return Err(alloc::format!("the kv-prefix layout ({f} B) exceeds the {} test window", case::mib(m.room.window)));
    }
    Ok(())
}

/// Prefix sharing: S sequences with one shared copy of the prefix, or private copies.
fn run(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    let shape = paged_shape(ctx);
    let (seqs, prefix, suffix) = prefix_args(ctx);
    let full = prefix / shape.block;
    diag!(
        "kv-prefix: {seqs} sequences of {prefix} shared + {suffix} own tokens, {}-token blocks: {full} full prefix blocks shared, saving {} B over {} layers",
        shape.block,
        (seqs - 1) * full * shape.layers * shape.scan_bytes_per_block(),
        shape.layers
    );
    let bad = kv_prefix(&env, &wb, shape, seqs, prefix, suffix, ctx.args.get(PAGED.seed));
    ctx.check_eq(bad, 0, "every sequence reads its tokens back through its block table");
}
