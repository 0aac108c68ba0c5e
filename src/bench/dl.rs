//! The second wave of deep-learning buffer patterns, on the one framework ([`measure`],
//! [`Metric`], [`MetricId`]): a paged KV cache against the contiguous layout at equal bytes
//! (`kv-paged`), KV quantization's scan knee per dtype (`kv-quant`), prefix sharing
//! (`kv-prefix`), a caching allocator's reuse against fresh memory (`alloc-reuse`) and a
//! double-buffered loader on two cores (`stream-double`). The layouts are [`super::paged`] and
//! [`super::caching`]; the loops are the stream benchmark's.

use alloc::{sync::Arc, vec::Vec};

use super::caching::{class_of, play, transformer_trace, CachingAlloc};
use super::paged::{prefix_tables, scattered_table, tag, token_ladder, Layout, Paged, PagedShape};
use super::stream::{run as stream_run, Kernel};
use super::{measure, Env, Metric, MetricId, Notes, Region, Unit};
use crate::harness::smp::{self, Barrier, Deadline, Sense};
use crate::harness::{record, Emit};

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
        let (append_name, scan_name) = if contiguous { ("append-contiguous", "scan-contiguous") } else { ("append-paged", "scan-paged") };
        let mut t = 0;
        for cp in powers(s.capacity) {
            while t + 1 < cp {
                kv.append(0, t, s.layers);
                t += 1;
            }
            let tok = t;
            let cached = tok + 1;
            let params = [("tokens", cached as u64), ("block", block as u64)];
            let id =
                |variant| MetricId { bench: "kv-paged", variant, attr: region.attr, bytes: s.scan_bytes(cached) as u64, params: &params };
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

/// `kv-quant`: per dtype, one layer's scan at token counts on a ladder (×1.5 steps) up to
/// `max_bytes` of K and V, through a scattered block table of `shape.block`-token blocks.
pub fn kv_quant(env: &Env, region: &Region, shape: PagedShape, dtypes: &[super::paged::Dtype], max_bytes: usize, seed: u64) {
    for &dtype in dtypes {
        let full = PagedShape { dtype, ..shape };
        emit_layout("kv-quant", &full);
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
        let variant = alloc::format!("scan-{}", dtype.name());
        for &cached in &ladder {
            let params = [("tokens", cached as u64), ("block", s.block as u64)];
            let id =
                MetricId { bench: "kv-quant", variant: &variant, attr: region.attr, bytes: s.scan_bytes(cached) as u64, params: &params };
            let summary = measure(env, id, || kv.scan(0, 0, cached));
            let notes: Notes = &|m| m.dtype_bytes(dtype.bytes() as u64).scan_bytes_per_block(s.scan_bytes_per_block() as u64);
            Metric { id, summary, work: s.scan_bytes(cached) as u64, unit: Unit::Rate, notes }.emit(env);
        }
    }
}

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
        let variant = if shared { "shared" } else { "private" };
        let params = [("sequences", sequences as u64), ("prefix", prefix as u64), ("suffix", suffix as u64), ("block", s.block as u64)];
        let bytes = (sequences * s.scan_bytes(tokens)) as u64;
        let id = MetricId { bench: "kv-prefix", variant, attr: region.attr, bytes, params: &params };
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

/// `alloc-reuse`: per size, a tensor of that size is requested, written in full (STP) and
/// freed, window after window: from the caching allocator (the block just freed, warm) or as
/// fresh memory (a bump pointer wrapping after `cold_span` bytes, so the block comes back cold).
pub fn alloc_reuse(env: &Env, region: &Region, sizes: &[usize], cold_span: usize) {
    for &size in sizes {
        let size = size.div_ceil(64) * 64;
        for (variant, caching) in [("reuse", true), ("fresh", false)] {
            let limit = (cold_span + 2 * class_of(size)).min(region.len);
            let mut a = CachingAlloc::new(limit, caching);
            let id = MetricId { bench: "alloc-reuse", variant, attr: region.attr, bytes: size as u64, params: &[] };
            let summary = measure(env, id, || {
                if let Some(off) = a.alloc(size) {
                    // SAFETY: the allocator's blocks lie inside `limit` ≤ the region's length;
                    // page-aligned classes of at least 512 bytes, size a multiple of 64.
                    unsafe { stream_run(Kernel::WriteStp, region.va + off, size, 0) };
                    a.free(off);
                }
            });
            let notes: Notes = &|m| m.cache_hits(a.stats.cache_hits).reserved(a.stats.reserved);
            Metric { id, summary, work: size as u64, unit: Unit::Rate, notes }.emit(env);
        }
    }
}

/// The fragmentation a seeded transformer-step trace leaves in the caching allocator
/// (`alloc-trace` record). Returns its counters.
pub fn alloc_trace(layers: usize, hidden: usize, steps: usize, seed: u64, limit: usize) -> Option<super::caching::Stats> {
    let trace = transformer_trace(layers, hidden, steps, seed);
    let mut a = CachingAlloc::new(limit, true);
    if !play(&mut a, &trace) {
        return None;
    }
    let s = a.stats;
    record::AllocTrace::new()
        .seed(seed)
        .layers(layers as u64)
        .hidden(hidden as u64)
        .steps(steps as u64)
        .allocs(s.allocs)
        .cache_hits(s.cache_hits)
        .peak_requested(s.peak_requested)
        .peak_allocated(s.peak_allocated)
        .allocated(s.allocated)
        .reserved(s.reserved)
        .emit();
    Some(s)
}

/// The shape of a `stream-double` run.
#[derive(Clone, Copy, Debug)]
pub struct DoubleShape {
    /// Bytes per batch (rounded down to 64); two buffers of it.
    pub batch: usize,
    /// Batches per measured window.
    pub batches: usize,
    /// PRFM distance of the `prfm` variant, bytes.
    pub distance: usize,
    /// The core that fills (None: one core).
    pub producer: Option<usize>,
    /// How long one barrier episode or the final join may take before the producer counts as
    /// stuck, ms (a timeout per episode: a long run is not a stuck one).
    pub timeout_ms: u64,
    /// Self-test: the producer stops answering (spins, never reaching the barrier) after this
    /// many barrier episodes.
    pub stall_after: Option<usize>,
}

/// `stream-double`: `batches` batches of `batch` bytes, each filled (STP: the loader) then
/// consumed (LDP: the trainer): fill-then-consume on the boot core without prefetch and with
/// PRFM PLDL1STRM `distance` ahead, and double-buffered with `producer` filling buffer B while
/// the boot core consumes buffer A (None: one core, so it degrades to fill-then-consume and says
/// so). Returns an error text when the producer stopped answering: a barrier episode or the
/// join took longer than `timeout_ms`; the barrier is then broken, the rest of the measurement
/// returns at once, no `double` metric is emitted, and a producer that never finishes is lost
/// to the harness (it gets no more work).
pub fn stream_double(env: &Env, region: &Region, shape: DoubleShape) -> Result<(), alloc::string::String> {
    let DoubleShape { batch, batches, distance, producer, timeout_ms, stall_after } = shape;
    let batch = batch & !63;
    let bufs = [region.va, region.va + batch];
    let params = [("batch", batch as u64), ("batches", batches as u64)];
    let bytes = (batch * batches) as u64;
    let fill = move |b: usize| {
        // SAFETY: both buffers lie in the region (2 × batch ≤ its length, checked by validate).
        unsafe { stream_run(Kernel::WriteStp, bufs[b], batch, 0) }
    };
    for (variant, kernel) in [("none", Kernel::ReadLdp), ("prfm", Kernel::ReadLdpPldl1strm)] {
        let id = MetricId { bench: "stream-double", variant, attr: region.attr, bytes, params: &params };
        let summary = measure(env, id, || {
            for i in 0..batches {
                fill(i % 2);
                // SAFETY: as in `fill`.
                unsafe { stream_run(kernel, bufs[i % 2], batch, distance) };
            }
        });
        Metric { id, summary, work: bytes, unit: Unit::Rate, notes: &|m| m.cores(1) }.emit(env);
    }
    let Some(core) = producer else {
        crate::diag!("stream-double: no producer core: double buffering degrades to fill-then-consume (the `none` figure)");
        return Ok(());
    };
    // One barrier episode, given up after `timeout_ms` without the other party.
    let episode = move |b: &Barrier, sense: &mut Sense| {
        let deadline = Deadline::after_ms(timeout_ms);
        b.wait(sense, || deadline.expired())
    };
    let barrier = Arc::new(Barrier::new(2));
    let b2 = barrier.clone();
    let windows = env.warmup + env.reps;
    let job = smp::launch(&[core], move |_| {
        let mut sense = Sense::new();
        let mut episodes = 0usize;
        let mut wait = |sense: &mut Sense| {
            if stall_after.is_some_and(|n| episodes >= n) {
                loop {
                    smp::relax();
                }
            }
            episodes += 1;
            episode(&b2, sense)
        };
        for _ in 0..windows {
            // Each window starts empty: the first fill waits for the consumer's window to
            // begin (inside its phase and its timing), as `none` fills its first batch inside.
            wait(&mut sense)?;
            fill(0);
            wait(&mut sense)?;
            for i in 0..batches {
                if i + 1 < batches {
                    fill((i + 1) % 2);
                }
                wait(&mut sense)?;
            }
        }
        Ok::<(), smp::Broken>(())
    });
    let mut sense = Sense::new();
    let mut broken = false;
    let id = MetricId { bench: "stream-double", variant: "double", attr: region.attr, bytes, params: &params };
    let summary = measure(env, id, || {
        // The window starts, then the first batch is ready.
        if broken || episode(&barrier, &mut sense).is_err() || episode(&barrier, &mut sense).is_err() {
            broken = true;
            return;
        }
        for i in 0..batches {
            // SAFETY: as in `fill`; the producer writes the other buffer until the barrier.
            unsafe { stream_run(Kernel::ReadLdp, bufs[i % 2], batch, 0) };
            if episode(&barrier, &mut sense).is_err() {
                broken = true;
                return;
            }
        }
    });
    let joined = job.join(timeout_ms);
    let why: alloc::vec::Vec<alloc::string::String> = joined
        .iter()
        .filter_map(|(c, r)| match r {
            Ok(Ok(())) => None,
            Ok(Err(smp::Broken)) => Some(alloc::format!("core {c}: the barrier broke")),
            Err(e) => Some(alloc::format!("core {c}: {e}")),
        })
        .collect();
    if broken || !why.is_empty() {
        let why = if why.is_empty() { alloc::string::String::from("the barrier broke") } else { why.join("; ") };
        let ms = smp::wait_ms(timeout_ms);
        return Err(alloc::format!("stream-double: the producer on core {core} stopped answering within {ms} ms ({why})"));
    }
    Metric { id, summary, work: bytes, unit: Unit::Rate, notes: &|m| m.cores(2) }.emit(env);
    Ok(())
}
