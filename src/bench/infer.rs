//! Geometry inference sweeps (what the silicon really is): a stride sweep for the line size and a
//! conflict sweep per level for the associativity. Each point is one measurement (a `metric`
//! record and a cache-model phase), so the same sweep is read on the timer (silicon) and on the
//! model's counts (the host's `scripts/report infer`). The rules that read them live in
//! `cachescope_arch::cache::infer`.

use alloc::vec::Vec;

use super::case::{self, mib, Benchmark};
use super::{measure, Env, Metric, MetricId, Region, Unit, NO_NOTES};
use crate::cache::topology::Kind;
use crate::diag;
use crate::harness::Ctx;
use crate::record::{self, Emit};
use cachescope_arch::bench::{Bench, Param, Variant};

/// Strides of the line-size sweep, bytes: from one 8-byte word to 512 B.
pub const STRIDES: [u64; 7] = [8, 16, 32, 64, 128, 256, 512];

/// Rounds the conflict sweep cycles its addresses (the first brings them in).
pub const ROUNDS: usize = 128;

/// Loads one word every `stride` bytes from `base` up to `end`. The loads are the only memory
/// accesses of the loop (their sum is kept live once, at the end), so a model's counts per load
/// are the sweep's and not the harness's.
#[inline(never)]
fn strided_pass(base: usize, end: usize, stride: usize) {
    let mut p = base;
    let mut sum = 0u64;
    while p < end {
        // SAFETY: [base, end) lies inside a mapped test window; 8-byte aligned loads (base
        // and stride are multiples of 8).
        sum ^= unsafe { core::ptr::read_volatile(p as *const u64) };
        p += stride;
    }
    core::hint::black_box(sum);
}

/// Cycles `rounds` times through `n` addresses `spacing` bytes apart from `base`.
#[inline(never)]
fn conflict_rounds(base: usize, spacing: usize, n: usize, rounds: usize) {
    let mut sum = 0u64;
    for _ in 0..rounds {
        let mut p = base;
        for _ in 0..n {
            // SAFETY: base + (n - 1) * spacing lies inside the window (checked by the caller);
            // aligned loads from test memory.
            sum ^= unsafe { core::ptr::read_volatile(p as *const u64) };
            p += spacing;
        }
    }
    core::hint::black_box(sum);
}

/// Loads per pass at least, so that the harness's own few accesses in a phase stay noise.
pub const MIN_LOADS: usize = 2048;

/// The line-size sweep over a buffer of at least `bytes` (twice the L1D, so that each pass finds
/// every line evicted) and at least [`MIN_LOADS`] loads: one point per stride, (stride, time per
/// load).
pub fn line_sweep(env: &Env, region: &Region, bytes: usize) -> Vec<(u64, f64)> {
    let mut curve = Vec::new();
    for stride in STRIDES {
        let bytes = bytes.max(MIN_LOADS * stride as usize).min(region.len) & !511;
        let params = [(Param::Stride.name(), stride)];
        let id =
            MetricId { bench: Bench::Infer.name(), variant: Variant::Line.name(), attr: region.attr, bytes: bytes as u64, params: &params };
        let summary = measure(env, id, || strided_pass(region.va, region.va + bytes, stride as usize));
        let m = Metric { id, summary, work: bytes as u64 / stride, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((stride, m.values(&env.timer).1));
    }
    curve
}

/// The conflict sweep of cache level `level`: `n` = 1..=`max_n` addresses `spacing` bytes
/// apart (every one in the same set of any cache whose way size divides `spacing`), each
/// cycled [`ROUNDS`] times; (n, time per load). Stops where the window ends.
pub fn ways_sweep(env: &Env, region: &Region, level: u8, spacing: usize, max_n: usize) -> Vec<(u64, f64)> {
    let mut curve = Vec::new();
    for n in 1..=max_n {
        if (n - 1) * spacing + 8 > region.len {
            crate::diag!("infer {}: {n} addresses {spacing} B apart exceed the {} B window, stopping", region.attr, region.len);
            break;
        }
        let params = [(Param::Level.name(), level as u64), (Param::N.name(), n as u64)];
        let id = MetricId {
            bench: Bench::Infer.name(),
            variant: Variant::Ways.name(),
            attr: region.attr,
            bytes: spacing as u64,
            params: &params,
        };
        let summary = measure(env, id, || conflict_rounds(region.va, spacing, n, ROUNDS));
        let m = Metric { id, summary, work: (n * ROUNDS) as u64, unit: Unit::TimePerOp, notes: NO_NOTES };
        m.emit(env);
        curve.push((n as u64, m.values(&env.timer).1));
    }
    curve
}

/// The `infer` benchmark (it reads only the common arguments).
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Infer, args: &[], validate: None, run };

/// Geometry inference: the line size from a stride sweep and each data level's associativity
/// from a conflict sweep, in the write-back window. On silicon the timer's curves are read here;
/// under the cache model the host reads the model's counts of the same phases
/// (`scripts/report infer`); emulator timing infers nothing.
fn run(ctx: &mut Ctx) {
    use cachescope_arch::cache::{infer, silicon};
    let env = match case::env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let regions = match case::regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    let Some(wb) = regions.iter().find(|r| r.attr == "normal-wb") else {
        return ctx.skip("needs the normal-wb window (attrs= leaves it out)");
    };
    let topo = crate::cache::this_cpu();
    let midr = cachescope_arch::cpuid::Midr { raw: ctx.boot.midr };
    let data: Vec<_> = topo.caches.iter().filter(|c| c.kind != Kind::Instruction).collect();
    let Some(l1d) = data.first() else {
        return ctx.skip("CLIDR_EL1 reports no data cache");
    };
    let mut line_curve = line_sweep(&env, wb, 2 * l1d.ccsidr.size() as usize);
    ctx.check_eq(line_curve.len(), STRIDES.len(), "every stride measured");
    let published_line = silicon::lookup(midr, l1d.level, l1d.kind).map(|p| p.line as u64);
    let timed = !env.emulated && infer::normalise(&mut line_curve, 0.3);
    report_inferred(
        "line",
        l1d.level,
        timed.then(|| infer::line_size(&line_curve)).flatten(),
        l1d.ccsidr.line() as u64,
        published_line,
        &env,
        ctx,
    );
    for c in &data {
        let published = silicon::lookup(midr, c.level, c.kind);
        // A spacing every candidate way size divides: the larger capacity, to a power of two.
        let size = published.map_or(0, |p| p.sizes_kib.iter().map(|&k| k as u64 * 1024).max().unwrap_or(0)).max(c.ccsidr.size());
        let spacing = size.next_power_of_two() as usize;
        let max_n = 2 * c.ccsidr.ways.max(published.map_or(0, |p| p.ways)) as usize + 2;
        let mut curve = ways_sweep(&env, wb, c.level, spacing, max_n);
        if curve.is_empty() {
            diag!("infer L{}: the window cannot hold two addresses {} apart: skipped", c.level, mib(spacing as u64));
            continue;
        }
        let timed = !env.emulated && infer::normalise(&mut curve, 0.3);
        report_inferred(
            "ways",
            c.level,
            timed.then(|| infer::ways(&curve)).flatten(),
            c.ccsidr.ways as u64,
            published.map(|p| p.ways as u64),
            &env,
            ctx,
        );
    }
}

/// One inferred property beside CCSIDR and the published silicon, with its source.
fn report_inferred(property: &str, level: u8, value: Option<u64>, ccsidr: u64, published: Option<u64>, env: &Env, ctx: &Ctx) {
    let published_text = published.map_or(alloc::string::String::from("unknown"), |p| alloc::format!("{p}"));
    let inferred = match (value, env.emulated) {
        (Some(v), _) => alloc::format!("{v} (timer)"),
        (None, true) if ctx.boot.model.is_some() => alloc::string::String::from("from the cache model's counts: see the digest"),
        (None, true) => alloc::string::String::from("not inferred: emulator timing has no caches in it"),
        (None, false) => alloc::string::String::from("not found on the timer (flat or noisy curve)"),
    };
    diag!("infer L{level} {property:<5} inferred {inferred} | CCSIDR {ccsidr} | published silicon {published_text}");
    record::Inferred::new()
        .property(property)
        .level(level as u64)
        .ccsidr(ccsidr)
        .source(env.timer.source.name())
        .value(value)
        .published(published)
        .emulated(env.emulated)
        .emit();
}
