//! The report tool's view of each benchmark: one file per benchmark of the kernel's `bench`
//! suite, each a [`BenchView`] keyed by the same identity the kernel names its records with
//! ([`Bench`], [`Variant`] from `cachescope-arch`). The digest ([`crate::summary`]) asks the
//! views for their lines instead of knowing benchmarks by name. Adding a benchmark's host side
//! is one file here and one line in [`VIEWS`] (and, if it has model lines, in [`DIGEST`]).

use crate::metrics::Metric;
use crate::model_data::{Inferred, ModelData};
use crate::records::Record;
use crate::svg::{BarChart, Labels, LinePlot, Marker, Point, Series};
use cachescope_arch::bench::{Bench, Variant};

pub mod alloc_reuse;
pub mod checkpoint;
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

    /// Its figures (and tables) in the report's cache-model section, drawn into `cx`.
    fn model_figures(&self, _cx: &mut Draw<'_>) {}

    /// The checks its counts under the model must pass (issue 14's deep-learning patterns,
    /// for `xtask model-observe`): (passed, what).
    fn model_checks(&self, _run: &[Record], _d: &ModelData) -> Vec<(bool, String)> {
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
    &checkpoint::View,
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
    Section::Bench(Bench::Checkpoint),
    Section::Bench(Bench::StreamDouble),
    Section::Bench(Bench::Stream),
    Section::Bench(Bench::Infer),
];

/// The report's cache-model figures, in order: each benchmark's [`BenchView::model_figures`].
pub const MODEL_FIGURES: &[Bench] = &[
    Bench::Latency,
    Bench::Stream,
    Bench::Handoff,
    Bench::Kv,
    Bench::KvPaged,
    Bench::KvQuant,
    Bench::AllocReuse,
    Bench::KvPrefix,
    Bench::StreamDouble,
    Bench::Checkpoint,
    Bench::Infer,
];

/// The order of the model checks ([`BenchView::model_checks`], [`model_checks`]).
pub const MODEL_CHECKS: &[Bench] =
    &[Bench::KvPaged, Bench::KvPrefix, Bench::KvQuant, Bench::AllocReuse, Bench::StreamDouble, Bench::Checkpoint];

/// The checks issue 14 asks of a run under the model, benchmark by benchmark: (passed, what).
/// Empty when the run has none of these benchmarks.
pub fn model_checks(run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
    MODEL_CHECKS.iter().flat_map(|&b| view_of(b).model_checks(run, d)).collect()
}

/// Where a model figure says its numbers come from.
pub const MODEL_SOURCE: &str = "source: model (cache-model TCG plugin: simulated caches, deterministic counts)";

/// A figure of the cache-model section.
pub enum ModelFigure {
    /// A line plot.
    Line(LinePlot),
    /// A bar chart.
    Bars(BarChart),
}

impl From<LinePlot> for ModelFigure {
    fn from(p: LinePlot) -> Self {
        ModelFigure::Line(p)
    }
}

impl From<BarChart> for ModelFigure {
    fn from(c: BarChart) -> Self {
        ModelFigure::Bars(c)
    }
}

/// A block of the report's cache-model section, as a view draws it.
pub enum ModelBlock {
    /// A numbered figure: its file stem, caption and figure.
    Figure(String, String, ModelFigure),
    /// A paragraph.
    Para(String),
    /// A heading of this level.
    Heading(u8, String),
    /// A table: header and rows.
    Table(Vec<String>, Vec<Vec<String>>),
}

/// What a view's model figures read (the run's records, the model's data, its data levels and
/// the capacity markers every capacity axis shares) and the blocks they draw.
pub struct Draw<'a> {
    /// The kernel's records.
    pub run: &'a [Record],
    /// The cache model's records, parsed.
    pub d: &'a ModelData,
    /// The model's data and unified levels, by name.
    pub levels: &'a [String],
    /// Dashed markers at the CCSIDR and published silicon capacities.
    pub caps: &'a [Marker],
    run_name: &'a str,
    blocks: Vec<ModelBlock>,
}

impl<'a> Draw<'a> {
    /// A context for the run named `run_name`.
    pub fn new(run: &'a [Record], d: &'a ModelData, levels: &'a [String], caps: &'a [Marker], run_name: &'a str) -> Self {
        Draw { run, d, levels, caps, run_name, blocks: Vec::new() }
    }

    /// A model figure's labels: its source, the run and the SIMULATED warning.
    pub fn labels(&self, title: &str, x: &str, y: &str) -> Labels {
        Labels {
            title: title.into(),
            subtitle: format!("{MODEL_SOURCE} · {}", self.run_name),
            warning: Some("SIMULATED by the cache model under QEMU: modelled cache behaviour, not a hardware measurement".into()),
            x: x.into(),
            y: y.into(),
        }
    }

    /// Adds a figure (file stem, caption).
    pub fn figure(&mut self, stem: String, caption: String, fig: impl Into<ModelFigure>) {
        self.blocks.push(ModelBlock::Figure(stem, caption, fig.into()));
    }

    /// Adds a paragraph.
    pub fn para(&mut self, text: String) {
        self.blocks.push(ModelBlock::Para(text));
    }

    /// Adds a heading.
    pub fn heading(&mut self, level: u8, text: String) {
        self.blocks.push(ModelBlock::Heading(level, text));
    }

    /// Adds a table.
    pub fn table(&mut self, header: Vec<String>, rows: Vec<Vec<String>>) {
        self.blocks.push(ModelBlock::Table(header, rows));
    }

    /// The blocks drawn, in order.
    pub fn into_blocks(self) -> Vec<ModelBlock> {
        self.blocks
    }
}

/// One series per curve of its misses per token at `level` (the KV sweeps drawn per level).
pub fn per_level(curves: &[crate::dl::ScanCurve], level: &str) -> Vec<Series> {
    curves
        .iter()
        .map(|c| Series {
            name: c.name.clone(),
            points: c
                .points
                .iter()
                .filter_map(|(t, ls)| ls.iter().find(|(l, _)| l == level).map(|&(_, y)| Point { x: *t as f64, y, lo: None, hi: None }))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

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
            assert_eq!(MODEL_FIGURES.iter().filter(|&&x| x == b).count(), 1, "{b}");
        }
        assert!(view("pingpong").is_none());
    }
}
