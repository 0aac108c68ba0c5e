//! Microbenchmarks shaped like deep-learning buffers, and what they share: timing, statistics,
//! the regions they run over and the one metric emitter.
//!
//! A benchmark is data + a kernel: parameters, a measured window, and [`Metric`] records. Under
//! an emulator every figure is `"emulated": true`: it counts the emulator's work, not caches.

pub mod caching;
pub mod coherence;
pub mod knee;
pub mod paged;
pub mod plan;
pub mod stats;

#[cfg(target_os = "none")]
pub mod case;
#[cfg(target_os = "none")]
pub mod pmu;
#[cfg(target_os = "none")]
pub mod timer;

// One file per benchmark, each declaring its `BENCHMARK` (see [`case::Benchmark`]).
#[cfg(target_os = "none")]
pub mod alloc_reuse;
#[cfg(target_os = "none")]
pub mod checkpoint;
#[cfg(target_os = "none")]
pub mod handoff;
#[cfg(target_os = "none")]
pub mod infer;
#[cfg(target_os = "none")]
pub mod kv;
#[cfg(target_os = "none")]
pub mod kv_paged;
#[cfg(target_os = "none")]
pub mod kv_prefix;
#[cfg(target_os = "none")]
pub mod kv_quant;
#[cfg(target_os = "none")]
pub mod latency;
#[cfg(target_os = "none")]
pub mod stream;
#[cfg(target_os = "none")]
pub mod stream_double;

/// The catalogue: the `bench` suite's benchmarks in the order they run, one line each (the
/// order of [`cachescope_arch::bench::Bench::ALL`], checked at compile time).
#[cfg(target_os = "none")]
pub const BENCHMARKS: &[&case::Benchmark] = &[
    &latency::BENCHMARK,
    &stream::BENCHMARK,
    &handoff::BENCHMARK,
    &kv::BENCHMARK,
    &kv_paged::BENCHMARK,
    &kv_quant::BENCHMARK,
    &kv_prefix::BENCHMARK,
    &alloc_reuse::BENCHMARK,
    &stream_double::BENCHMARK,
    &infer::BENCHMARK,
    &checkpoint::BENCHMARK,
];

// Every declared benchmark has exactly one descriptor, in the declared order.
#[cfg(target_os = "none")]
const _: () = {
    use cachescope_arch::bench::Bench;
    assert!(BENCHMARKS.len() == Bench::ALL.len(), "a benchmark of cachescope_arch::bench::Bench has no descriptor in BENCHMARKS");
    let mut i = 0;
    while i < BENCHMARKS.len() {
        assert!(BENCHMARKS[i].id as usize == Bench::ALL[i] as usize, "BENCHMARKS is not in the order of Bench::ALL");
        i += 1;
    }
};

#[cfg(target_os = "none")]
pub use target::*;

/// How a figure is expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Time per operation (ns, or cycles with the cycle counter).
    TimePerOp,
    /// Bytes per second (MB/s = 10^6 B/s; cycles: bytes per cycle).
    Rate,
    /// Time per MiB (2^20 bytes) moved: ns/MiB (cycles/MiB with the cycle counter).
    TimePerMiB,
}

/// Decimal places that show a figure whose smallest step is `resolution` (of its own unit):
/// none for a step ≥ 1, one more per decade below, at most 3.
pub fn decimals_for(resolution: f64) -> usize {
    let mut step = resolution;
    let mut decimals = 0;
    // NaN, ≤ 0: the step is unknown; show the most.
    if step.is_nan() || step <= 0.0 {
        return 3;
    }
    while step < 1.0 && decimals < 3 {
        step *= 10.0;
        decimals += 1;
    }
    decimals
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimals_follow_the_step() {
        use super::decimals_for;
        assert_eq!(decimals_for(16.0), 0); // a 16 ns tick over one operation
        assert_eq!(decimals_for(1.0), 0);
        assert_eq!(decimals_for(0.5), 1);
        assert_eq!(decimals_for(0.016), 2); // 16 ns over 1,000 loads
        assert_eq!(decimals_for(0.000_01), 3);
        assert_eq!(decimals_for(0.0), 3);
        assert_eq!(decimals_for(f64::NAN), 3);
    }
}

#[cfg(target_os = "none")]
mod target {
    use super::{decimals_for, stats::Summary, timer::Timer, Unit};
    use crate::record::{self, Emit};
    use cachescope_arch::marker::PHASE_NAME_MAX;
    use core::fmt::Write;

    /// One memory region a benchmark runs over: an alias window of the test arena (or the arena
    /// itself with the MMU off).
    #[derive(Clone, Copy, Debug)]
    pub struct Region {
        /// Attribute name as in `attr` records (`normal-wb`, …, `mmu-off`).
        pub attr: &'static str,
        /// Virtual address.
        pub va: usize,
        /// Physical address.
        pub pa: usize,
        /// Length in bytes.
        pub len: usize,
        /// Device memory (or MMU off): unaligned accesses fault, DC ZVA faults on hardware.
        pub device: bool,
        /// Run with the data cache off (SCTLR_EL1.C = 0): every Normal access is non-cacheable.
        pub caches_off: bool,
    }

    /// The common parameters of a benchmark run.
    pub struct Env {
        /// Timer used for every window.
        pub timer: Timer,
        /// Measured repetitions per point.
        pub reps: usize,
        /// Warm-up runs before the measured ones.
        pub warmup: usize,
        /// Running under an emulator.
        pub emulated: bool,
        /// PMU event counters a measured phase uses at most ([`super::pmu`]; 0: no counting).
        /// A byte: it fits the struct's padding, so the benchmarks' stack frames keep their
        /// layout (the cache model sees their lines).
        pub pmu_counters: u8,
    }

    /// A measurement's further facts, as the `metric` record's typed setters (`&|m|
    /// m.bytes_per_load(16)`; [`NO_NOTES`]: none), applied by [`Metric::emit`] after the fields
    /// they follow in the declaration.
    pub type Notes<'a> = &'a dyn Fn(record::Metric) -> record::Metric;

    /// No further facts.
    pub const NO_NOTES: Notes<'static> = &|m| m;

    /// One measurement, ready to be printed as a table row and emitted as a `metric` record.
    pub struct Metric<'a> {
        /// What it is of: benchmark, variant, attribute, bytes and the other parameters.
        pub id: MetricId<'a>,
        /// Raw window statistics (timer counts).
        pub summary: Summary,
        /// Work per window: operations (TimePerOp) or bytes (Rate).
        pub work: u64,
        /// How the figure is expressed.
        pub unit: Unit,
        /// Further facts about the measurement that are not part of its identity (e.g.
        /// `bytes_per_load`): they set the record's fields ([`Notes`]).
        pub notes: Notes<'a>,
    }

    impl Metric<'_> {
        /// Converts counts to the metric's unit: (min, median, max, mad, unit name). For rates
        /// min/max swap (the slowest window gives the smallest rate).
        pub fn values(&self, timer: &Timer) -> (f64, f64, f64, f64, &'static str) {
            let s = &self.summary;
            let work = self.work.max(1) as f64;
            match (self.unit, timer.freq) {
                (Unit::TimePerOp, 0) => (s.min as f64 / work, s.median as f64 / work, s.max as f64 / work, s.mad as f64 / work, "cycles"),
                (Unit::TimePerOp, f) => {
                    let k = 1e9 / f as f64 / work;
                    (s.min as f64 * k, s.median as f64 * k, s.max as f64 * k, s.mad as f64 * k, "ns")
                }
                (Unit::TimePerMiB, f) => {
                    let per_mib = (1u64 << 20) as f64 / work;
                    let (k, unit) = if f == 0 { (per_mib, "cycles/MiB") } else { (per_mib * 1e9 / f as f64, "ns/MiB") };
                    (s.min as f64 * k, s.median as f64 * k, s.max as f64 * k, s.mad as f64 * k, unit)
                }
                (Unit::Rate, f) => {
                    // Bytes per second (MB/s) or bytes per cycle.
                    let (scale, unit) = if f == 0 { (1.0, "B/cycle") } else { (f as f64 / 1e6, "MB/s") };
                    let rate = |c: u64| if c == 0 { f64::INFINITY } else { work * scale / c as f64 };
                    let med = rate(s.median);
                    let mad = if s.median == 0 { 0.0 } else { med * s.mad as f64 / s.median as f64 };
                    (rate(s.max), med, rate(s.min), mad, unit)
                }
            }
        }

        /// Decimal places the timer supports for this figure: one tick changes the median by
        /// `resolution`, so digits below it are noise (a 16 ns tick is `5376 ns`, not
        /// `5376.000 ns`). At most 3.
        pub fn decimals(&self, timer: &Timer) -> usize {
            let (_, median, _, _, _) = self.values(timer);
            let s = &self.summary;
            let resolution = match self.unit {
                // One count more or less in the median window.
                Unit::Rate => median / s.median.max(1) as f64,
                _ if s.median == 0 => return 3,
                _ => median / s.median as f64,
            };
            decimals_for(resolution)
        }

        /// Prints the table row and emits the `metric` record: the one emitter every benchmark uses.
        /// The row shows the parameters that tell rows of one variant apart (e.g. a KV row's
        /// `tokens` and `wrapped`), and every figure at the precision its timer supports. It is
        /// marked `# point:` (the per-point rows a human console leaves in the saved log).
        pub fn emit(&self, env: &Env) {
            let (min, median, max, mad, unit) = self.values(&env.timer);
            let d = self.decimals(&env.timer);
            let mut params = alloc::string::String::new();
            for (k, v) in self.id.params {
                let _ = write!(params, " {k}={v}");
            }
            crate::diag!(
                "point: {:<8} {:<22} {:<14} {:>10} B  median {:>12.d$} {:<7} min {:>12.d$}  max {:>12.d$}  mad {:>9.d$}{params}",
                self.id.bench,
                self.id.variant,
                self.id.attr,
                self.id.bytes,
                median,
                unit,
                min,
                max,
                mad
            );
            let id = &self.id;
            let r = record::Metric::new()
                .bench(id.bench)
                .variant(id.variant)
                .attr(id.attr)
                .bytes(id.bytes)
                .params(id.params)
                .phase(&alloc::format!("{id}"))
                .reps(self.summary.n as u64)
                .min(min, d)
                .median(median, d)
                .max(max, d)
                .mad(mad, d)
                .unit(unit)
                .source(env.timer.source.name())
                .emulated(env.emulated);
            (self.notes)(r).emit();
        }
    }

    /// What a measurement is of (the record contract's one identity): the `metric` record's
    /// bench, variant, attr, bytes and params, and the name of the cache-model phase of its
    /// measured windows (its `Display`, the record's `phase`).
    pub use cachescope_arch::record::MetricId;

    static PHASE_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

    /// Measures `f` `env.reps` times after `env.warmup` runs and summarises the windows. The
    /// measured windows (not the warm-up runs) are one cache-model phase named after `id`
    /// (ids count up from 1), so the model's counts pair with the metric. With `env.pmu_counters`, the
    /// windows count the PMU events and the phase's `pmu` record is emitted after it.
    pub fn measure(env: &Env, id: MetricId, mut f: impl FnMut()) -> Summary {
        // The warm-up runs through the very same frames as the measured windows (only the
        // markers are off), so the measured windows find the stack lines they use warm too.
        // Set/way walks in it are recorded once for the phase (`cache::per_phase`).
        let mut samples = crate::cache::per_phase(&id, || {
            let _ = in_phase(id, false, || env.timer.measure(env.warmup, &mut f));
            match (env.pmu_counters > 0).then(|| super::pmu::plan(env.pmu_counters.into())).flatten() {
                None => in_phase(id, true, || env.timer.measure(env.reps, &mut f)),
                Some(plan) => {
                    let plan = &plan;
                    // Counted windows; the counters are read after the phase's end marker.
                    let mut counts = super::pmu::PhaseCounts::new(plan);
                    let samples = match counts.program_single(env.reps) {
                        Some(mask) => in_phase(id, true, || env.timer.measure_counted(env.reps, mask, &mut f)),
                        None => in_phase(id, true, || counts.measure(&env.timer, env.reps, &mut f)),
                    };
                    counts.finish();
                    counts.emit(&alloc::format!("{id}"), env.emulated);
                    samples
                }
            }
        });
        super::stats::summarize(&mut samples).expect("reps >= 1")
    }

    /// Runs `f` as the cache-model phase named after `id` (see [`measure`]; cut at
    /// `PHASE_NAME_MAX` bytes).
    pub fn phase<R>(id: MetricId, f: impl FnOnce() -> R) -> R {
        crate::cache::per_phase(&id, || in_phase(id, true, f))
    }

    /// Runs `f` as the cache-model phase `name` (any text; cut at `PHASE_NAME_MAX` bytes) with
    /// the run's next phase id: for phases that are not a metric's (e.g. `mistakes/…`).
    pub fn named_phase<R>(name: &str, f: impl FnOnce() -> R) -> R {
        in_phase(name, true, f)
    }

    /// [`phase`], or the same frames without the markers (`marked` false: a warm-up).
    #[inline(never)]
    fn in_phase<R>(id: impl core::fmt::Display, marked: bool, f: impl FnOnce() -> R) -> R {
        let mut name = PhaseName { buf: [0; PHASE_NAME_MAX + 1], len: 0 };
        let _ = write!(name, "{id}");
        let name = core::ffi::CStr::from_bytes_until_nul(&name.buf).unwrap_or(c"bench");
        if !marked {
            return core::hint::black_box(f)();
        }
        let id = PHASE_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        crate::model_markers::phase(name, id, f)
    }

    /// A NUL-terminated phase name of at most `PHASE_NAME_MAX` bytes (longer text is cut).
    /// Its name bytes come first, in a 128-byte aligned block, so they never straddle a page:
    /// the cache model reads a name within its first page only, and a name cut there came out
    /// as `phase-ID`.
    #[repr(C, align(128))]
    struct PhaseName {
        buf: [u8; PHASE_NAME_MAX + 1],
        len: usize,
    }

    const _: () = assert!(PHASE_NAME_MAX < 128, "a phase name must fit its aligned block");

    impl core::fmt::Write for PhaseName {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            for &b in s.as_bytes() {
                if self.len < self.buf.len() - 1 {
                    self.buf[self.len] = b;
                    self.len += 1;
                }
            }
            Ok(())
        }
    }
}
