//! The report tool's view of each benchmark: one file per benchmark of the kernel's `bench`
//! suite, each a [`BenchView`] keyed by the same identity the kernel names its records with
//! ([`Bench`], [`Variant`] from `cachescope-arch`). The digest ([`crate::summary`]) asks the
//! views for their lines instead of knowing benchmarks by name. Adding a benchmark's host side
//! is one file here and one line in [`VIEWS`] (and, if it has model lines, in [`DIGEST`]).

use crate::metrics::Metric;
use crate::model::{Inferred, ModelData};
use crate::records::Record;
use cachescope_arch::bench::{Bench, Variant};

pub mod alloc_reuse;
pub mod handoff;
pub mod infer;
pub mod kv;
pub mod kv_paged;
pub mod kv_prefix;
pub mod kv_quant;
pub mod latency;
pub mod stream;
pub mod stream_double;

/// What the digest's model lines read: the run's records, the model's data and the geometry
/// inferred from both (computed once).
pub struct Digest<'a> {
    /// The kernel's records.
    pub run: &'a [Record],
    /// The cache model's records, parsed.
    pub d: &'a ModelData,
    /// The geometry inferred from the model's counts and the chase knees.
    pub inf: &'a Inferred,
}

/// How the report tool reads one benchmark.
pub trait BenchView: Sync {
    /// The benchmark.
    fn bench(&self) -> Bench;

    /// The digest's headline of its timed metrics (the kernel's timer), or None for the generic
    /// one (one figure per variant at the largest size).
    fn headline(&self, _ms: &[&Metric], _icount: bool) -> Option<String> {
        None
    }

    /// False when its timed metrics make no headline (they are read otherwise).
    fn timed(&self) -> bool {
        true
    }

    /// The digest's lines under the cache model: (label, text).
    fn model_lines(&self, _cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// How the report draws its timed metrics.
    fn figures(&self) -> Figures {
        Figures::Plain
    }

    /// False when its timings on an emulator are not drawn (they hold no cache; the model
    /// section plots the same sweeps).
    fn emulated_figures(&self) -> bool {
        true
    }
}

/// How the report draws a benchmark's timed metrics. The first three have a section of their
/// own even when the run has none (it says so); the others, a section when measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figures {
    /// Time per load against the working set, with the cache sizes and the knees marked.
    Latency,
    /// Bars per attribute under this heading and title.
    Bars {
        /// The section's heading.
        heading: &'static str,
        /// The figure's title.
        title: &'static str,
    },
    /// A sweep against tokens under this heading, titled `what`.
    Sweep {
        /// The section's heading.
        heading: &'static str,
        /// What the figure shows.
        what: &'static str,
    },
    /// A section headed `Bench NAME`: a line plot per sweep, else bars per attribute.
    Plain,
    /// As [`Figures::Plain`] under this heading (the bench name is added) and title.
    Titled {
        /// The section's heading.
        heading: &'static str,
        /// The figure's title.
        title: &'static str,
    },
}

impl Figures {
    /// True when the section is drawn even without metrics.
    pub fn always(self) -> bool {
        matches!(self, Figures::Latency | Figures::Bars { .. } | Figures::Sweep { .. })
    }
}

/// Every benchmark's view, in the order of [`Bench::ALL`] (a test checks it).
pub const VIEWS: &[&dyn BenchView] = &[
    &latency::View,
    &stream::View,
    &handoff::View,
    &kv::View,
    &kv_paged::View,
    &kv_quant::View,
    &kv_prefix::View,
    &alloc_reuse::View,
    &stream_double::View,
    &infer::View,
];

/// The view of a benchmark.
pub fn view_of(bench: Bench) -> &'static dyn BenchView {
    VIEWS[bench as usize]
}

/// The view of the benchmark a record names, if the kernel declares it (the multicore suite's
/// benchmarks have none).
pub fn view(bench: &str) -> Option<&'static dyn BenchView> {
    Bench::from_name(bench).map(view_of)
}

/// A part of the digest's model lines.
#[derive(Clone, Copy, Debug)]
pub enum Section {
    /// A benchmark's [`BenchView::model_lines`].
    Bench(Bench),
    /// The run-wide line of the phases that bypass the caches.
    Bypass,
}

/// The digest's model lines, in order.
pub const DIGEST: &[Section] = &[
    Section::Bench(Bench::Latency),
    Section::Bench(Bench::Handoff),
    Section::Bypass,
    Section::Bench(Bench::Kv),
    Section::Bench(Bench::KvPaged),
    Section::Bench(Bench::KvQuant),
    Section::Bench(Bench::KvPrefix),
    Section::Bench(Bench::AllocReuse),
    Section::Bench(Bench::StreamDouble),
    Section::Bench(Bench::Stream),
    Section::Bench(Bench::Infer),
];

/// The first `metric` record of `variant` in `recs`.
pub fn metric_of(recs: &[Record], variant: Variant) -> Option<&Record> {
    recs.iter().find(|r| {
        r.kind() == "metric"
            && r.obj.get("bench").and_then(serde_json::Value::as_str) == Some(variant.bench().name())
            && r.obj.get("variant").and_then(serde_json::Value::as_str) == Some(variant.name())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_has_its_view_and_a_digest_place() {
        assert_eq!(VIEWS.len(), Bench::ALL.len());
        for (i, &b) in Bench::ALL.iter().enumerate() {
            assert_eq!(VIEWS[i].bench(), b);
            assert_eq!(view(b.name()).map(|v| v.bench()), Some(b));
            assert_eq!(DIGEST.iter().filter(|s| matches!(s, Section::Bench(x) if *x == b)).count(), 1, "{b}");
        }
        assert!(view("pingpong").is_none());
    }
}
