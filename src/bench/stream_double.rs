//! `stream-double`: a DataLoader with prefetch_factor=2, double buffering across two cores; the
//! loops are the stream benchmark's.

use alloc::sync::Arc;

use super::case::{self, Benchmark, Machine};
use super::stream::{run as stream_run, Kernel, STREAM};
use super::{measure, Env, Metric, MetricId, Region, Unit};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use crate::smp::{self, Barrier, Deadline, Sense};
use cachescope_arch::bench::{Bench, Param, Variant};

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
    let params = [(Param::Batch.name(), batch as u64), (Param::Batches.name(), batches as u64)];
    let bytes = (batch * batches) as u64;
    let fill = move |b: usize| {
        // SAFETY: both buffers lie in the region (2 × batch ≤ its length, checked by validate).
        unsafe { stream_run(Kernel::WriteStp, bufs[b], batch, 0) }
    };
    for (variant, kernel) in [(Variant::None.name(), Kernel::ReadLdp), (Variant::Prfm.name(), Kernel::ReadLdpPldl1strm)] {
        let id = MetricId { bench: Bench::StreamDouble.name(), variant, attr: region.attr, bytes, params: &params };
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
    let id = MetricId { bench: Bench::StreamDouble.name(), variant: Variant::Double.name(), attr: region.attr, bytes, params: &params };
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

typed_args! {
    /// The double-buffered loader's arguments.
    pub struct DoubleArgs = DOUBLE, DOUBLE_ARGS {
        double_batch: Number { min: 4096, max: 1 << 28 }, Literal("64K"), "stream-double: bytes per batch (two buffers)";
        double_batches: Number { min: 1, max: 4096 }, Literal("8"), "stream-double: batches per window";
        double_timeout_ms: Number { min: 10, max: 600_000 }, Literal("5000"), "stream-double: longest barrier episode before the producer core counts as stuck, ms";
        double_stall: Number { min: 0, max: 1 << 20 }, Literal("0"), "stream-double self-test: the producer stops answering after this many barrier episodes (0: never)";
    }
}

/// The `stream-double` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::StreamDouble, args: DOUBLE_ARGS, validate: Some(validate), run: run_case };

/// Two buffers that do not fit the window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let batch = ctx.args.get(DOUBLE.double_batch);
    if 2 * batch > m.room.window {
        return case::too_big(ctx, DOUBLE.double_batch.name(), batch, m.room.window / 2, "two buffers in the test window");
    }
    Ok(())
}

/// A DataLoader with prefetch_factor=2: double buffering across two cores.
fn run_case(ctx: &mut Ctx) {
    let Some((env, wb)) = case::env_and_wb(ctx) else { return };
    // The same probe as every case that needs a secondary: no core to start (one core, no PSCI
    // firmware, every secondary lost) means one core, and no wait for a core that cannot start.
    let producer = match smp::secondaries() {
        Ok(cores) => cores.first().copied(),
        Err(why) => {
            diag!("stream-double: {why}");
            None
        }
    };
    let shape = DoubleShape {
        batch: ctx.args.get(DOUBLE.double_batch) as usize,
        batches: ctx.args.get(DOUBLE.double_batches) as usize,
        distance: ctx.args.get(STREAM.prefetch) as usize,
        producer,
        timeout_ms: ctx.args.get(DOUBLE.double_timeout_ms),
        stall_after: Some(ctx.args.get(DOUBLE.double_stall) as usize).filter(|&n| n > 0),
    };
    if let Some(core) = producer {
        diag!("stream-double: double buffering on 2 cores: core {core} fills, core 0 consumes (prefetch_factor=2)");
    }
    let r = stream_double(&env, &wb, shape);
    if let Err(e) = r {
        ctx.fail(e);
    }
}
