//! `report`: a Markdown or HTML document with inline SVG figures and tables.
//!
//! Contents: the run (boot facts, suite results, validation status), a plain statement when
//! figures are emulated, the caches (`cache` records), then the figures — latency vs working
//! set (bench `latency`, log2 x axis, CCSIDR capacities of data/unified caches as dashed
//! lines), bandwidth per attribute (bench `stream`, grouped bars), KV append cost vs tokens
//! (bench `kv`, x = `tokens`), and a bar chart for any other bench — one figure per
//! (bench, source, unit), each labelled with its source and, when emulated, a red line saying
//! the figure measures the emulator. Then one metric table per bench, model records, and every
//! other record kind as a table.
//!
//! **Model records** (`"source":"model"`, from the run log or `--model LOG`) that are not
//! `metric` records are merged into the metric tables' "model" column: a model record matches
//! a timing metric when its `phase` equals the metric's `phase` field or the metric's point
//! (`bench/variant/attr/bytes[ extras]`), or when its own bench/variant/attr/bytes equal the
//! metric's. Model `metric` records are ordinary metrics with source `model`: they get their
//! own figures and sit next to the timing rows of the same point in the tables.

use crate::bench::{self, BenchView, Figures, ModelBlock, ModelFigure};
use crate::contract;
use crate::input::{Error, Log, Result};
use crate::ktap;
use crate::metrics::{human_bytes, sig, Metric};
use crate::model_data::{self, ModelData};
use crate::records::{self, Record};
use crate::svg::{esc, BarChart, Labels, LinePlot, Marker, Point, Series, XScale};
use cachescope_arch::record;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown with inline SVG (raw HTML blocks).
    Markdown,
    /// A self-contained HTML page.
    Html,
}

impl Format {
    /// The format implied by an output path's extension.
    pub fn from_path(path: &str) -> Result<Format> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".md") || lower.ends_with(".markdown") {
            Ok(Format::Markdown)
        } else if lower.ends_with(".html") || lower.ends_with(".htm") {
            Ok(Format::Html)
        } else {
            Err(Error(format!("--out {path}: the name must end in .md or .html (it selects the format)")))
        }
    }
}

/// A document block.
#[derive(Debug, Clone)]
enum Block {
    Heading(u8, String),
    Para(String),
    Warn(String),
    Table(Vec<String>, Vec<Vec<String>>),
    Figure {
        n: usize,
        caption: String,
        svg: String,
    },
    List(Vec<String>),
    /// A collapsible block (HTML `<details>`; also understood by GitHub Markdown).
    Details(String, Vec<Block>),
    /// The table of contents: a link to every level-2 heading.
    Toc,
}

/// A built report: blocks plus the figures' SVG texts (for `--svg-dir`).
pub struct Report {
    blocks: Vec<Block>,
    /// (file stem, SVG) of each figure in order.
    pub figures: Vec<(String, String)>,
}

fn str_field<'a>(r: &'a Record, k: &str) -> Option<&'a str> {
    r.obj.get(k).and_then(Value::as_str)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_u64() || n.is_i64()) => sig(f, 5),
            _ => n.to_string(),
        },
        v => v.to_string(),
    }
}

fn source_text(source: &str, cntfrq: Option<u64>) -> String {
    match source {
        "cntvct" => match cntfrq {
            Some(f) if f > 0 => format!(
                "source: cntvct (CNTVCT_EL0 generic timer, {} MHz, one tick = {} ns)",
                sig(f as f64 / 1e6, 4),
                sig(1e9 / f as f64, 4)
            ),
            _ => "source: cntvct (CNTVCT_EL0 generic timer)".to_string(),
        },
        "pmccntr" => "source: pmccntr (PMCCNTR_EL0 cycle counter)".to_string(),
        "model" => "source: model (cache-model TCG plugin: simulated caches, deterministic counts)".to_string(),
        s => format!("source: {s}"),
    }
}

/// Whether a unit is a time (or cycle) count, so that the y axis can be called a latency/cost.
fn is_time_unit(unit: &str) -> bool {
    let u = unit.to_ascii_lowercase();
    let head = u.split('/').next().unwrap_or("");
    ["ns", "us", "µs", "ms", "s", "ps", "cycles", "ticks"].contains(&head)
}

/// log10 y when every median is positive and they span more than 20×.
fn wants_log_y(ms: &[&Metric]) -> bool {
    let v: Vec<f64> = ms.iter().filter_map(|m| m.median).filter(|v| v.is_finite()).collect();
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    !v.is_empty() && lo > 0.0 && hi / lo > 20.0
}

fn title_for(what: &str, source: &str, unit: &str) -> String {
    if source == "model" {
        format!("{what}: {unit} [model]")
    } else {
        format!("{what} [{source}]")
    }
}

/// What a figure's red line says, from the emulated flags and sources of its metrics.
fn warning_for(ms: &[&Metric]) -> Option<String> {
    let emulated = ms.iter().filter(|m| m.emulated == Some(true)).count();
    let model = ms.iter().any(|m| m.key.source == "model");
    if model {
        Some("SIMULATED by the cache model under QEMU: modelled cache behaviour, not a hardware measurement".into())
    } else if emulated == ms.len() && emulated > 0 {
        Some("EMULATED (QEMU): these figures measure the emulator, not caches".into())
    } else if emulated > 0 {
        Some(format!("{emulated} of {} points EMULATED (QEMU): those measure the emulator, not caches", ms.len()))
    } else {
        None
    }
}

/// Groups metrics by (source, unit), keeping first-seen order.
fn by_source_unit<'a>(ms: &[&'a Metric]) -> Vec<((String, String), Vec<&'a Metric>)> {
    let mut out: Vec<((String, String), Vec<&Metric>)> = Vec::new();
    for m in ms {
        let k = (m.key.source.clone(), m.key.unit.clone());
        match out.iter_mut().find(|(kk, _)| *kk == k) {
            Some((_, v)) => v.push(m),
            None => out.push((k, vec![m])),
        }
    }
    out
}

fn cache_markers(records: &[Record]) -> Vec<Marker> {
    let mut by_size: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for r in records.iter().filter_map(|r| r.view::<record::CacheView<_>>()) {
        let Some(size) = r.size() else {
            continue;
        };
        let ty = r.r#type().unwrap_or("").to_ascii_lowercase();
        if ty.starts_with('i') {
            continue; // instruction caches do not bound a data working set
        }
        let letter = match ty.chars().next() {
            Some('d') => "D",
            Some('u') => "",
            _ => "",
        };
        let level = r.level().map_or_else(|| "?".into(), |l| l.to_string());
        let label = format!("L{level}{letter}");
        let e = by_size.entry(size).or_default();
        if !e.contains(&label) {
            e.push(label);
        }
    }
    by_size
        .into_iter()
        .map(|(size, labels)| Marker {
            x: size as f64,
            label: format!("{} {} (CCSIDR)", labels.join("/"), human_bytes(size as f64)),
            knee: false,
        })
        .collect()
}

/// Inferred capacities (`knee` records with a `capacity`) measured with `source`; knees of
/// several attributes at one capacity share a marker.
fn knee_markers(records: &[Record], source: &str) -> Vec<Marker> {
    let mut by_cap: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for r in records.iter().filter_map(|r| r.view::<record::KneeView<_>>()).filter(|r| r.source().is_none_or(|s| s == source)) {
        if let Some(cap) = r.capacity() {
            let attrs = by_cap.entry(cap).or_default();
            let a = r.attr().unwrap_or("-");
            if !attrs.contains(&a) {
                attrs.push(a);
            }
        }
    }
    by_cap
        .into_iter()
        .map(|(cap, attrs)| Marker {
            x: cap as f64,
            label: match attrs.as_slice() {
                [a] => format!("knee {} ({a})", human_bytes(cap as f64)),
                [a, more @ ..] => format!("knee {} ({a} +{})", human_bytes(cap as f64), more.len()),
                [] => format!("knee {}", human_bytes(cap as f64)),
            },
            knee: true,
        })
        .collect()
}

/// A figure the report can draw.
trait Figure {
    /// The SVG text.
    fn render(&self) -> String;
    /// Draws identical series once; says which, for the caption.
    fn merge_identical(&mut self) -> Option<String> {
        None
    }
}

impl Figure for BarChart {
    fn render(&self) -> String {
        BarChart::render(self)
    }
}

impl Figure for LinePlot {
    fn render(&self) -> String {
        LinePlot::render(self)
    }

    fn merge_identical(&mut self) -> Option<String> {
        let groups = crate::svg::merge_identical(&mut self.series);
        if groups.is_empty() {
            return None;
        }
        let said: Vec<String> = groups.iter().map(|g| g.join(", ")).collect();
        Some(format!("Identical series are drawn once (their points are equal, one line would hide the other): {}.", said.join("; ")))
    }
}

struct Ctx<'a> {
    run_name: &'a str,
    cntfrq: Option<u64>,
    /// The run used -icount: timer figures are instruction counts.
    icount: bool,
    blocks: Vec<Block>,
    figures: Vec<(String, String)>,
}

impl Ctx<'_> {
    /// Adds figure `n` (file `figNN-STEM.svg`); series a line plot would draw over each other
    /// are drawn once, and the caption says so.
    fn figure(&mut self, stem: String, caption: String, mut fig: impl Figure) {
        let n = self.figures.len() + 1;
        let caption = match fig.merge_identical() {
            Some(note) => format!("{caption} {note}"),
            None => caption,
        };
        let svg = fig.render();
        let used = |k: usize| {
            self.figures.iter().any(|(f, _)| {
                f.split_once('-').is_some_and(|(_, s)| s == format!("{stem}{}", if k > 1 { format!("-{k}") } else { String::new() }))
            })
        };
        let k = (1..).find(|k| !used(*k)).unwrap_or(1);
        let stem = if k > 1 { format!("{stem}-{k}") } else { stem };
        self.figures.push((format!("fig{n:02}-{stem}"), svg.clone()));
        self.blocks.push(Block::Figure { n, caption, svg });
    }

    fn labels(&self, title: String, source: &str, ms: &[&Metric], x: &str, unit: &str, what: &str) -> Labels {
        let icount = self.icount && source != "model";
        Labels {
            title,
            subtitle: format!("{} · {}", source_text(source, self.cntfrq), self.run_name),
            warning: if icount {
                Some("EMULATED (QEMU -icount): instruction counts (1 ns = 1 instruction), not time and not caches".into())
            } else {
                warning_for(ms)
            },
            x: x.into(),
            y: match (icount, is_time_unit(unit)) {
                (true, true) => format!("{what} (instructions; {unit} of -icount virtual time)"),
                (true, false) => format!("{unit} of -icount virtual time (10^9 instructions = 1 s)"),
                (false, true) => format!("{what} ({unit})"),
                (false, false) => unit.to_string(),
            },
        }
    }

    fn caption(&self, what: &str, source: &str, unit: &str, ms: &[&Metric]) -> String {
        self.caption_of(what, "median of each point, whiskers median ± MAD (min and max are in the tables)", source, unit, ms)
    }

    /// A caption whose `shows` says what the marks are (line plots: whiskers; bars: none).
    fn caption_of(&self, what: &str, shows: &str, source: &str, unit: &str, ms: &[&Metric]) -> String {
        let mut c = format!("{what}; {shows}; unit {unit}; {}.", source_text(source, self.cntfrq));
        if self.icount && source != "model" {
            c.push_str(" Under -icount these figures are instruction counts (one ns of virtual time per instruction), not time.");
        }
        if let Some(w) = warning_for(ms) {
            c.push(' ');
            c.push_str(&w);
            c.push('.');
        }
        c
    }

    fn latency(&mut self, bench: &str, ms: &[&Metric], records: &[Record], level: u8) {
        let markers = cache_markers(records);
        self.blocks.push(Block::Heading(level, "Latency vs working set".into()));
        if ms.is_empty() {
            self.blocks.push(Block::Para(format!("No `{bench}` metrics in this log.")));
            return;
        }
        for ((source, unit), group) in by_source_unit(ms) {
            let variants = group.iter().filter_map(|m| m.key.variant.as_deref()).collect::<std::collections::BTreeSet<_>>().len() > 1;
            let series = make_series(&group, variants, "bytes", |m| m.key.bytes.map(|b| b as f64));
            // Knees inferred from emulator timing are the host's caches: never drawn.
            let emulated = group.iter().any(|m| m.emulated == Some(true)) && source != "model";
            let knees = if emulated { Vec::new() } else { knee_markers(records, &source) };
            let x_label = if emulated {
                "working set (bytes, log2 scale; K = KiB, M = MiB); dashed: CCSIDR capacities (no knees: emulator timing)"
            } else {
                "working set (bytes, log2 scale; K = KiB, M = MiB); dashed: CCSIDR capacities, dotted: inferred knees"
            };
            let plot = LinePlot {
                labels: self.labels(title_for("Latency vs working set", &source, &unit), &source, &group, x_label, &unit, bench),
                x_scale: XScale::Log2Bytes,
                y_log: wants_log_y(&group),
                series,
                markers: markers.iter().cloned().chain(knees).collect(),
            };
            let cap = self.caption(&format!("Latency vs working set (bench {bench}), one line per attribute, dashed lines at the data/unified cache capacities from CCSIDR"), &source, &unit, &group);
            self.figure(format!("latency-{source}"), cap, plot);
        }
    }

    fn bars(&mut self, bench: &str, title: &str, ms: &[&Metric]) {
        for ((source, unit), group) in by_source_unit(ms) {
            let multi_bytes = {
                let mut seen: BTreeMap<String, std::collections::BTreeSet<Option<u64>>> = BTreeMap::new();
                for m in &group {
                    seen.entry(m.key.variant.clone().unwrap_or_default()).or_default().insert(m.key.bytes);
                }
                seen.values().any(|s| s.len() > 1)
            };
            let shown = distinguishing_extras(&group, |m| Some(format!("{:?}/{:?}/{:?}", m.key.variant, m.key.attr, m.key.bytes)), "");
            let cat_of = |m: &Metric| {
                let mut c = m.key.variant.clone().unwrap_or_else(|| "-".into());
                if multi_bytes {
                    if let Some(b) = m.key.bytes {
                        c = format!("{c} {}", human_bytes(b as f64));
                    }
                }
                for (k, v) in m.key.extras.iter().filter(|(k, _)| shown.contains(k)) {
                    // Strings read well alone ("to-device"); numbers need their name.
                    if v.parse::<i64>().is_ok() {
                        c.push_str(&format!(" {k}={v}"));
                    } else {
                        c.push_str(&format!(" {v}"));
                    }
                }
                c
            };
            let mut cats: Vec<String> = Vec::new();
            let mut attrs: Vec<String> = Vec::new();
            for m in &group {
                let c = cat_of(m);
                if !cats.contains(&c) {
                    cats.push(c);
                }
                let a = m.key.attr.clone().unwrap_or_else(|| "-".into());
                if !attrs.contains(&a) {
                    attrs.push(a);
                }
            }
            let series = attrs
                .iter()
                .map(|a| {
                    let vals = cats
                        .iter()
                        .map(|c| group.iter().find(|m| m.key.attr.as_deref().unwrap_or("-") == a && &cat_of(m) == c).and_then(|m| m.median))
                        .collect();
                    (a.clone(), vals)
                })
                .collect();
            let chart = BarChart {
                labels: self.labels(format!("{title} [{source}]"), &source, &group, "variant", &unit, "median"),
                categories: cats,
                series,
            };
            let cap = self.caption_of(
                &format!("{title} (bench {bench}), one bar per attribute"),
                "bar height the median of each measurement, no whiskers (min, max and MAD are in the tables)",
                &source,
                &unit,
                &group,
            );
            self.figure(format!("{bench}-{source}"), cap, chart);
        }
    }

    /// A section of sweeps: `heading`, then the sweep of `bench` (or a line saying it has none).
    fn sweep_section(&mut self, bench: &str, heading: &str, what: &str, ms: &[&Metric], level: u8) {
        self.blocks.push(Block::Heading(level, heading.into()));
        if ms.is_empty() {
            self.blocks.push(Block::Para(format!("No `{bench}` metrics in this log.")));
            return;
        }
        self.sweep(bench, what, ms);
    }

    /// Another benchmark: a line plot per sweep when its measurements sweep a size or a token
    /// count (a bar per point would be unreadable), else bars per variant.
    fn other_bench(&mut self, bench: &str, title: &str, ms: &[&Metric]) {
        let mut xs: HashMap<String, std::collections::BTreeSet<u64>> = HashMap::new();
        for m in ms {
            let x = m.num("tokens").map(|t| t as u64).or(m.key.bytes).unwrap_or(0);
            xs.entry(m.key.variant.clone().unwrap_or_default()).or_default().insert(x);
        }
        if xs.values().any(|s| s.len() >= 4) {
            self.sweep(bench, bench, ms);
        } else {
            self.bars(bench, title, ms);
        }
    }

    /// Line plots of a sweep (x = tokens when every point has them, else bytes; log2): one
    /// figure per variant when one figure would hold too many lines to read.
    fn sweep(&mut self, bench: &str, what: &str, ms: &[&Metric]) {
        for ((source, unit), all) in by_source_unit(ms) {
            let mut variants = FirstSeen::default();
            for m in &all {
                variants.id(m.key.variant.as_deref().unwrap_or("-"));
            }
            let lines = make_series(&all, true, "tokens", |m| m.num("tokens").or(m.key.bytes.map(|b| b as f64))).len();
            let split = variants.names.len() > 1 && lines > 8;
            let parts: Vec<(Option<&str>, Vec<&Metric>)> = if split {
                variants
                    .names
                    .iter()
                    .map(|v| (Some(v.as_str()), all.iter().copied().filter(|m| m.key.variant.as_deref().unwrap_or("-") == v).collect()))
                    .collect()
            } else {
                vec![(None, all.clone())]
            };
            for (variant, group) in parts {
                self.sweep_figure(bench, what, &source, &unit, variant, &group);
            }
        }
    }

    fn sweep_figure(&mut self, bench: &str, what: &str, source: &str, unit: &str, variant: Option<&str>, group: &[&Metric]) {
        let with_tokens = group.iter().all(|m| m.num("tokens").is_some());
        let (xname, skip) = if with_tokens { ("tokens (log2 scale)", "tokens") } else { ("bytes (log2 scale; K = KiB, M = MiB)", "bytes") };
        let series =
            make_series(group, variant.is_none(), skip, |m| if with_tokens { m.num("tokens") } else { m.key.bytes.map(|b| b as f64) });
        let along = if with_tokens { "tokens" } else { "size" };
        let title = match variant {
            Some(v) => format!("{what} {v} vs {along}"),
            None => format!("{what} vs {along}"),
        };
        let plot = LinePlot {
            labels: self.labels(title_for(&title, source, unit), source, group, xname, unit, "cost"),
            x_scale: if with_tokens { XScale::Log2 } else { XScale::Log2Bytes },
            y_log: wants_log_y(group),
            series,
            markers: vec![],
        };
        let lines =
            if variant.is_some() { "one line per attribute and parameter" } else { "one line per variant, attribute and parameter" };
        let cap = self.caption(&format!("{title} (bench {bench}), {lines}"), source, unit, group);
        let unit_stem: String = unit.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        self.figure(format!("{bench}-{}-{source}-{unit_stem}", variant.unwrap_or("all")), cap, plot);
    }
}

/// Capacity markers for the model figures: CCSIDR (`cache` records, else the model's guest
/// geometry) and the published silicon, one marker per size with the labels merged.
fn capacity_markers(recs: &[Record], d: &ModelData, levels: &[String]) -> Vec<Marker> {
    let inf = model_data::infer(recs, d);
    let mut by_size: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in inf.levels.iter().filter(|l| levels.contains(&l.level)) {
        if let Some(c) = l.ccsidr {
            by_size.entry(c.0).or_default().push(format!("{} CCSIDR", l.level));
        }
        if let Some((sizes, ..)) = &l.silicon {
            // The published size closest to CCSIDR's (cores are built with one of them).
            let want = l.ccsidr.map_or(0, |c| c.0);
            if let Some(s) = sizes.iter().min_by_key(|s| s.abs_diff(want)) {
                by_size.entry(*s).or_default().push(format!("{} silicon", l.level));
            }
        }
    }
    by_size
        .into_iter()
        .map(|(size, labels)| Marker { x: size as f64, label: format!("{} {}", labels.join(", "), human_bytes(size as f64)), knee: false })
        .collect()
}

impl Ctx<'_> {
    /// The cache model's figures: miss rate and modelled latency vs working set, stream
    /// prefetch effect, hand-off per MiB, KV misses per token, inferred geometry.
    fn model_section(&mut self, d: &ModelData, recs: &[Record]) {
        if d.is_empty() {
            return;
        }
        self.blocks.push(Block::Heading(2, "Cache model".into()));
        self.blocks.push(Block::Para(format!(
            "Counts of the cache-model plugin (profile {}): every figure here is simulated, deterministic, and labelled `source: model`. Miss rates are *global*: misses at a level ÷ the phase's data accesses. A knee is the largest working set whose rate stays below {} before a larger one reaches {} (docs/report.md).",
            d.profile_name().unwrap_or_else(|| "?".into()),
            model_data::KNEE_LOW,
            model_data::KNEE_HIGH
        )));
        let levels = d.data_level_names();
        let caps = capacity_markers(recs, d, &levels);
        let mut cx = bench::Draw::new(recs, d, &levels, &caps, self.run_name);
        for &b in bench::MODEL_FIGURES {
            bench::view_of(b).model_figures(&mut cx);
        }
        for b in cx.into_blocks() {
            match b {
                ModelBlock::Figure(stem, caption, ModelFigure::Line(p)) => self.figure(stem, caption, p),
                ModelBlock::Figure(stem, caption, ModelFigure::Bars(c)) => self.figure(stem, caption, c),
                ModelBlock::Para(t) => self.blocks.push(Block::Para(t)),
                ModelBlock::Heading(n, t) => self.blocks.push(Block::Heading(n, t)),
                ModelBlock::Table(h, rows) => self.blocks.push(Block::Table(h, rows)),
            }
        }
    }
}

/// The extra fields (other than `except`) that differ between metrics of the same `slot`: the
/// ones a figure must show to tell its points apart. Metrics without a slot are ignored.
fn distinguishing_extras(ms: &[&Metric], slot: impl Fn(&Metric) -> Option<String>, except: &str) -> Vec<String> {
    let mut at: HashMap<String, Vec<&Metric>> = HashMap::new();
    for m in ms {
        if let Some(k) = slot(m) {
            at.entry(k).or_default().push(m);
        }
    }
    let value = |m: &Metric, k: &str| m.key.extras.iter().find(|(km, _)| km == k).map(|(_, v)| v.clone());
    let mut out: Vec<String> = Vec::new();
    for same in at.values().filter(|v| v.len() > 1) {
        for m in same {
            for (k, v) in &m.key.extras {
                if k != except && !out.contains(k) && same.iter().any(|o| value(o, k).as_ref() != Some(v)) {
                    out.push(k.clone());
                }
            }
        }
    }
    out
}

/// Line-plot series: one per [variant +] attribute, split further only by the extra fields that
/// take several values at one x (so fields that move with x, such as `cached` or `wrapped` of
/// the KV ring, do not explode the series).
fn make_series(ms: &[&Metric], with_variant: bool, x_field: &str, x: impl Fn(&Metric) -> Option<f64>) -> Vec<Series> {
    let base = |m: &Metric| {
        let mut parts = Vec::new();
        if with_variant {
            parts.extend(m.key.variant.clone());
        }
        parts.push(m.key.attr.clone().unwrap_or_else(|| "-".into()));
        parts.join(" ")
    };
    // Metrics that share a series base and an x: the extras that differ among them split series.
    let split = distinguishing_extras(ms, |m| x(m).map(|xv| format!("{}@{}", base(m), xv.to_bits())), x_field);
    let mut out: Vec<Series> = Vec::new();
    for m in ms {
        let (Some(x), Some(y)) = (x(m), m.median) else {
            continue;
        };
        let mut n = base(m);
        for (k, v) in m.key.extras.iter().filter(|(k, _)| split.contains(k)) {
            n.push_str(&format!(" {k}={v}"));
        }
        let p = Point { x, y, lo: m.mad.map(|d| y - d), hi: m.mad.map(|d| y + d) };
        match out.iter_mut().find(|s| s.name == n) {
            Some(s) => s.points.push(p),
            None => out.push(Series { name: n, points: vec![p] }),
        }
    }
    out
}

fn table_of(records: &[&Record], limit: usize) -> (Vec<String>, Vec<Vec<String>>) {
    // The record's place in the log, under a name no record field uses (`line` is a cache line).
    let mut cols: Vec<String> = vec![crate::extract::LOG_LINE.into()];
    for r in records {
        for k in r.obj.keys() {
            if k != "record" && !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let rows = records
        .iter()
        .take(limit)
        .map(|r| {
            cols.iter()
                .enumerate()
                .map(|(i, c)| if i == 0 { r.line.to_string() } else { r.obj.get(c).map(value_text).unwrap_or_default() })
                .collect()
        })
        .collect();
    (cols, rows)
}

fn model_text(r: &Record) -> String {
    const SKIP: [&str; 8] = ["record", "phase", "source", "bench", "variant", "attr", "bytes", "emulated"];
    let mut parts = Vec::new();
    if let Some(l) = r.obj.get("level") {
        // The plugin names levels ("L1D", "L2"); a bare number is a level number.
        match l.as_str() {
            Some(name) => parts.push(name.to_string()),
            None => parts.push(format!("L{}", value_text(l))),
        }
    }
    for (k, v) in r.obj.iter() {
        if !SKIP.contains(&k.as_str()) && k != "level" {
            parts.push(format!("{k}={}", value_text(v)));
        }
    }
    parts.join(" ")
}

/// The phase a metric was measured in: its `phase` field, else its point.
fn metric_phase(m: &Metric) -> String {
    m.obj.get("phase").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| m.key.point())
}

/// Old model records named their point with bench/variant/attr/bytes fields instead of a phase.
fn legacy_matches(model: &Record, m: &Metric) -> bool {
    let Some(b) = str_field(model, "bench") else { return false };
    let base = format!(
        "{}/{}/{}/{}",
        m.key.bench,
        m.key.variant.as_deref().unwrap_or("-"),
        m.key.attr.as_deref().unwrap_or("-"),
        m.key.bytes.map_or("-".into(), |b| b.to_string())
    );
    let mb = format!(
        "{b}/{}/{}/{}",
        str_field(model, "variant").unwrap_or("-"),
        str_field(model, "attr").unwrap_or("-"),
        model.obj.get("bytes").and_then(Value::as_u64).map_or("-".into(), |b| b.to_string())
    );
    mb == base
}

/// The model records of each metric (by index), and a note for each metric whose match is
/// not one-to-one. A model phase is identified by (name, phase_id). Metrics of one point seen
/// by several sources share their phase. When several points share a phase name (older
/// kernels named KV phases past the ring wrap alike), they are paired with the phases of that
/// name in order only when the counts agree, and the row says so; otherwise nothing is
/// attached and the row says why. One model phase is never attached to two points.
fn attach_model<'r>(ms: &[&Metric], model_recs: &[&'r Record]) -> (Vec<Vec<&'r Record>>, Vec<Option<String>>) {
    let mut phases: HashMap<String, Vec<u64>> = HashMap::new();
    let mut by_phase: HashMap<(String, u64), Vec<&Record>> = HashMap::new();
    for r in model_recs {
        let Some(name) = str_field(r, "phase") else { continue };
        let id = r.obj.get("phase_id").and_then(Value::as_u64).unwrap_or(0);
        let ids = phases.entry(name.to_string()).or_default();
        if !ids.contains(&id) {
            ids.push(id);
        }
        by_phase.entry((name.to_string(), id)).or_default().push(r);
    }
    for ids in phases.values_mut() {
        ids.sort_unstable();
    }
    // A metric's phase: its `phase` field, else a model phase named by its point, else by its
    // bench/variant/attr/bytes (schema-1 logs).
    let phase_of = |m: &Metric| -> String {
        if let Some(p) = m.obj.get("phase").and_then(Value::as_str) {
            return p.to_string();
        }
        let base = format!(
            "{}/{}/{}/{}",
            m.key.bench,
            m.key.variant.as_deref().unwrap_or("-"),
            m.key.attr.as_deref().unwrap_or("-"),
            m.key.bytes.map_or("-".into(), |b| b.to_string())
        );
        if !phases.contains_key(&m.key.point()) && phases.contains_key(&base) {
            base
        } else {
            metric_phase(m)
        }
    };
    // The model's own metric records are counts of the phase, not other measurements.
    let mut points: HashMap<String, Vec<String>> = HashMap::new();
    for m in ms.iter().filter(|m| m.key.source != "model") {
        let v = points.entry(phase_of(m)).or_default();
        let p = m.key.point();
        if !v.contains(&p) {
            v.push(p);
        }
    }
    let mut recs = Vec::with_capacity(ms.len());
    let mut notes = Vec::with_capacity(ms.len());
    for m in ms {
        let name = phase_of(m);
        let pts = points.get(&name).cloned().unwrap_or_default();
        let ids = phases.get(&name).cloned().unwrap_or_default();
        let (chosen, note): (Vec<u64>, Option<String>) = match (pts.len(), ids.len()) {
            (_, 0) => (vec![], None),
            _ if m.key.source == "model" => (if ids.len() == 1 { ids } else { vec![] }, None),
            (0, 1) => (ids, None),
            (1, 1) => (ids, None),
            (1, n) => (ids, Some(format!("{n} model phases share this name: all shown"))),
            (p, n) if p == n => {
                let i = pts.iter().position(|x| *x == m.key.point()).unwrap_or(0);
                (vec![ids[i]], Some(format!("{p} measurements share this phase name: matched by order")))
            }
            (p, n) => (vec![], Some(format!("ambiguous: {p} measurements and {n} model phases named {name}: not attached"))),
        };
        let mut rs: Vec<&Record> = chosen.iter().flat_map(|id| by_phase.get(&(name.clone(), *id)).cloned().unwrap_or_default()).collect();
        if rs.is_empty() && note.is_none() {
            rs = model_recs.iter().copied().filter(|r| str_field(r, "phase").is_none() && legacy_matches(r, m)).collect();
        }
        recs.push(rs);
        notes.push(note);
    }
    (recs, notes)
}

/// Names in first-seen order, each with its index (hashed: tables can have 10^5 rows).
#[derive(Default)]
struct FirstSeen {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl FirstSeen {
    /// The index of `v`, appending it when new.
    fn id(&mut self, v: &str) -> usize {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        self.names.push(v.to_string());
        self.index.insert(v.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// Extra key fields of `ms`, in first-seen order.
fn extra_names(ms: &[&Metric]) -> Vec<String> {
    let mut names = FirstSeen::default();
    for m in ms {
        for (k, _) in &m.key.extras {
            names.id(k);
        }
    }
    names.names
}

/// A point's row label without its attribute: variant, bytes, then the value of each extra.
fn row_label(m: &Metric, extras: &[String]) -> Vec<String> {
    let mut r = vec![m.key.variant.clone().unwrap_or_default(), m.key.bytes.map(|b| human_bytes(b as f64)).unwrap_or_default()];
    r.extend(extras.iter().map(|e| m.key.extras.iter().find(|(k, _)| k == e).map(|(_, v)| v.clone()).unwrap_or_default()));
    r
}

/// Median table: one row per (variant, bytes, extras), one column per attribute, in
/// first-seen order.
fn pivot(ms: &[&Metric]) -> (Vec<String>, Vec<Vec<String>>) {
    let extras = extra_names(ms);
    let mut attrs = FirstSeen::default();
    for m in ms {
        attrs.id(m.key.attr.as_deref().unwrap_or("-"));
    }
    let mut labels = FirstSeen::default();
    let mut rows: Vec<(Vec<String>, Vec<Option<f64>>)> = Vec::new();
    for m in ms {
        let a = attrs.id(m.key.attr.as_deref().unwrap_or("-"));
        let label = row_label(m, &extras);
        let i = labels.id(&label.join("\u{1f}"));
        if i == rows.len() {
            rows.push((label, vec![None; attrs.names.len()]));
        }
        rows[i].1[a] = m.median;
    }
    let mut head = vec!["variant".to_string(), "bytes".to_string()];
    head.extend(extras.iter().cloned());
    head.extend(attrs.names.iter().cloned());
    let body = rows
        .into_iter()
        .map(|(mut l, v)| {
            l.extend(v.into_iter().map(|x| x.map(|x| sig(x, 4)).unwrap_or_else(|| "–".into())));
            l
        })
        .collect();
    (head, body)
}

/// Every measurement with its statistics, and the matching cache-model records when any.
fn detail_table(ms: &[&Metric], model_recs: &[&Record]) -> (Vec<String>, Vec<Vec<String>>) {
    let extras = extra_names(ms);
    let mut order = FirstSeen::default();
    let mut attrs = FirstSeen::default();
    let mut sorted: Vec<(usize, usize, &Metric)> = ms
        .iter()
        .map(|m| {
            let p = order.id(&row_label(m, &extras).join("\u{1f}"));
            (p, attrs.id(m.key.attr.as_deref().unwrap_or("-")), *m)
        })
        .collect();
    sorted.sort_by_key(|&(p, a, _)| (p, a));
    let sorted_ms: Vec<&Metric> = sorted.iter().map(|(_, _, m)| *m).collect();
    let (attached, notes) = attach_model(&sorted_ms, model_recs);
    let with_model = attached.iter().any(|v| !v.is_empty()) || notes.iter().any(Option::is_some);
    let mut head: Vec<String> = ["variant", "attr", "bytes"].iter().map(|s| s.to_string()).collect();
    head.extend(extras.iter().cloned());
    head.extend(["reps", "min", "median", "max", "mad", "unit", "source", "emulated"].iter().map(|s| s.to_string()));
    if with_model {
        head.push("model".into());
    }
    let num = |v: Option<f64>| v.map(|x| sig(x, 4)).unwrap_or_default();
    let rows = sorted
        .iter()
        .enumerate()
        .map(|(i, (_, _, m))| {
            let mut row = row_label(m, &extras);
            row.insert(1, m.key.attr.clone().unwrap_or_default());
            row.extend([
                m.reps.map(|r| r.to_string()).unwrap_or_default(),
                num(m.min),
                num(m.median),
                num(m.max),
                num(m.mad),
                m.key.unit.clone(),
                m.key.source.clone(),
                m.emulated.map(|e| e.to_string()).unwrap_or_default(),
            ]);
            if with_model {
                let mut t: Vec<String> = attached[i].iter().map(|r| model_text(r)).collect();
                t.extend(notes[i].clone());
                row.push(t.join("; "));
            }
            row
        })
        .collect();
    (head, rows)
}

/// How a report is built.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Whether the run used `-icount` (timer figures are then instruction counts): `Some` as
    /// given (`--icount` / `--no-icount`), `None` as the log shows it
    /// ([`records::run_used_icount`], the digest's way too).
    pub icount: Option<bool>,
}

/// Builds the report of `run` (plus the records of `model`, if given).
pub fn build(run: &Log, model: Option<&Log>) -> Report {
    build_with(run, model, Options::default())
}

/// The digest ([`crate::summary::digest`]) as (label, finding) rows: the header and the render
/// command are left out (this is the report).
fn findings_rows(run: &Log, model: Option<&Log>, icount: bool) -> (String, Vec<Vec<String>>) {
    let lines = crate::summary::digest(run, model, &crate::summary::Options { icount, model_path: None });
    let mut head = String::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for l in lines {
        if l.starts_with("== ") {
            head = l.trim_matches(|c| c == '=' || c == ' ').to_string();
            continue;
        }
        let (label, text) = l.split_once(' ').map_or((l.as_str(), ""), |(a, b)| (a, b.trim_start()));
        if label == "report" {
            continue;
        }
        if label == "…" {
            rows.push(vec![String::new(), l.clone()]);
        } else {
            rows.push(vec![label.to_string(), text.to_string()]);
        }
    }
    (head, rows)
}

/// Builds the report with options. Its order: the findings (the digest), the cache model's
/// figures, the sanitizer, the attribute matrix, coherence, the run's facts, measured figures (an
/// appendix, collapsed, when they time an emulator), metric tables, other records.
pub fn build_with(run: &Log, model: Option<&Log>, opts: Options) -> Report {
    let k = ktap::validate(run, ktap::Options::default());
    let mut problems: Vec<String> =
        k.problems.iter().chain(contract::check_contract(run, &k).iter()).map(|p| format!("{}:{}", run.name, p)).collect();
    problems.sort();
    problems.dedup();
    let (mut recs, _) = records::extract(run);
    let run_records = recs.len();
    let mcheck = model.map(contract::check_model_log);
    let model_flag = model.zip(mcheck.as_ref()).and_then(|(m, c)| c.flag(&m.name));
    let mut model_problems: Vec<String> = Vec::new();
    if let (Some(m), Some(c)) = (model, &mcheck) {
        model_problems.extend(c.problems.iter().map(|p| format!("{}:{}", m.name, p)));
        recs.extend(c.usable_records());
    }
    let model_records = recs.len() - run_records;
    let (metrics, skipped) = Metric::collect(&recs);
    problems.extend(skipped.iter().map(|s| format!("(records): {s}")));
    let boot = recs.iter().find_map(|r| r.view::<record::BootView<_>>());
    let end = recs[..run_records].iter().rev().find_map(|r| r.view::<record::EndView<_>>());
    let cntfrq = boot.and_then(|b| b.cntfrq());
    let icount = opts.icount.unwrap_or_else(|| records::run_used_icount(&recs));
    // Figures name the run by its file name (a long path would run off the canvas).
    let short_name = std::path::Path::new(&run.name).file_name().map_or(run.name.clone(), |f| f.to_string_lossy().into_owned());
    let mut c = Ctx { run_name: &short_name, cntfrq, icount, blocks: Vec::new(), figures: Vec::new() };

    c.blocks.push(Block::Heading(1, format!("cachescope report: {}", run.name)));
    c.blocks.push(Block::Toc);

    // Findings first: the digest, as a table.
    let (head, rows) = findings_rows(run, model, icount);
    c.blocks.push(Block::Heading(2, "Findings".into()));
    if let Some(f) = &model_flag {
        c.blocks.push(Block::Warn(format!(
            "{}: {f}. Its figures below are drawn as read; the sanitizer section draws no conclusion.",
            model.map_or("", |m| m.name.as_str())
        )));
    }
    if !head.is_empty() {
        c.blocks.push(Block::Para(format!("The run's digest ({}):", head.trim_start_matches("cachescope digest: "))));
    }
    c.blocks.push(Block::Table(vec!["".into(), "finding".into()], rows));

    let emulated = boot.and_then(|b| b.emulated()) == Some(true) || metrics.iter().any(|m| m.emulated == Some(true));
    let md = ModelData::from_records(&recs);
    if emulated {
        let observed = if md.is_empty() {
            "No cache-model records were given, so this report has no cache figures: run with the cache model (the default on QEMU virt) and keep its log beside the run's."
        } else {
            "The cache model's figures come first."
        };
        c.blocks.push(Block::Warn(format!(
            "This run is emulated (`\"emulated\": true`). QEMU models no caches: timing figures measured under it (sources cntvct and pmccntr) measure the emulator{} — not cache behaviour; they are in the appendix. Only figures with source `model` (the cache-model plugin) simulate caches, and they are a model, not hardware. {observed}",
            if icount { " — under `-icount` they count instructions" } else { "" }
        )));
    }

    // The run: its facts follow the findings' sections (built here, placed after Coherence).
    let run_at = c.blocks.len();
    c.blocks.push(Block::Heading(2, "Run".into()));
    let mut facts = Vec::new();
    if let Some(b) = boot {
        let text = |v: Option<&str>| v.map(str::to_string);
        let num = |v: Option<u64>| v.map(|n| n.to_string());
        let rows = [
            ("board", text(b.board())),
            ("cpu", text(b.cpu())),
            ("midr", b.midr().map(|m| format!("{m:#x}"))),
            ("el", num(b.el())),
            ("cntfrq", num(b.cntfrq())),
            ("ram_size", num(b.ram_size())),
            ("emulated", b.emulated().map(|e| e.to_string())),
            ("args", text(b.args())),
            ("model", text(b.model())),
        ];
        facts.extend(rows.into_iter().filter_map(|(k, v)| Some(vec![k.to_string(), v?])));
    } else {
        facts.push(vec!["boot".into(), "no boot record".into()]);
    }
    facts.push(vec![
        "-icount".into(),
        match opts.icount {
            Some(true) => "yes (--icount): timer figures are instruction counts".into(),
            Some(false) => "no (--no-icount)".into(),
            None if icount => "yes (the runner adds it with the cache model): timer figures are instruction counts".into(),
            None => "no (the log shows no cache model; --icount if QEMU_EXTRA had it)".into(),
        },
    ]);
    if let Some(e) = end {
        facts.push(vec![
            "results".into(),
            format!(
                "{} passed, {} failed, {} skipped (end record)",
                e.passed().map(|n| n.to_string()).unwrap_or_default(),
                e.failed().map(|n| n.to_string()).unwrap_or_default(),
                e.skipped().map(|n| n.to_string()).unwrap_or_default()
            ),
        ]);
    } else {
        facts.push(vec!["results".into(), "no end record (truncated run?)".into()]);
    }
    facts.push(vec![
        "validation".into(),
        if problems.is_empty() {
            "KTAP v1 and records contract: valid".into()
        } else {
            format!("{} problems in the run log (listed at the end)", problems.len())
        },
    ]);
    facts.push(vec![
        "records".into(),
        format!(
            "{} in the run log{}; {} metrics",
            run_records,
            model.map(|m| format!(", {model_records} in {}", m.name)).unwrap_or_default(),
            metrics.len()
        ),
    ]);
    if let (Some(m), Some(mc)) = (model, &mcheck) {
        facts.push(vec![
            "model log".into(),
            if mc.valid() {
                format!("{}: valid (closing records present, counts consistent)", m.name)
            } else {
                format!("{}: INVALID, {} problems (listed at the end): no hazard conclusion is drawn from it", m.name, mc.problems.len())
            },
        ]);
    }
    c.blocks.push(Block::Table(vec!["fact".into(), "value".into()], facts));

    // Suites (top-level KTAP results).
    if let Some(start) = k.start {
        let rows: Vec<Vec<String>> = run.lines[start + 1..]
            .iter()
            .filter(|l| l.defect.is_none() && !l.text.starts_with(' '))
            .filter_map(|l| {
                ktap::parse_result(&l.text).and_then(|r| r.ok()).map(|r| {
                    vec![
                        r.number.to_string(),
                        r.description.to_string(),
                        if r.directive == Some(ktap::Directive::Skip) {
                            format!("skip: {}", r.reason)
                        } else if r.ok {
                            "ok".into()
                        } else {
                            "not ok".into()
                        },
                    ]
                })
            })
            .collect();
        if !rows.is_empty() {
            c.blocks.push(Block::Heading(3, "Suites".into()));
            c.blocks.push(Block::Table(vec!["#".into(), "suite".into(), "result".into()], rows));
        }
    }
    let caches: Vec<&Record> = recs.iter().filter(|r| r.kind() == "cache").collect();
    c.blocks.push(Block::Heading(3, "Caches (CCSIDR)".into()));
    if caches.is_empty() {
        c.blocks.push(Block::Para("No `cache` records in this log.".into()));
    } else {
        let (h, rows) = table_of(&caches, usize::MAX);
        c.blocks.push(Block::Table(h, rows));
    }

    let run_blocks: Vec<Block> = c.blocks.drain(run_at..).collect();
    // The cache model's own figures.
    c.model_section(&md, &recs);
    // On silicon the measured figures are findings: they go here (no section in between draws a
    // figure, so the numbering stays in document order).
    let sections_at = c.blocks.len();
    let run_only: Vec<Record> = recs[..run_records].to_vec();
    let model_only: Vec<Record> = recs[run_records..].to_vec();
    c.sanitizer_section(run, &run_only, &model_only, model.is_some(), model_flag.as_deref());
    c.attribute_section(run, &recs, &md);
    c.coherence_section(&md, &model_only);
    c.core_to_core_section(&metrics, &md);
    c.blocks.extend(run_blocks);

    // Measured figures: the findings when measured on silicon; an appendix when they time an
    // emulator (under -icount: instruction counts).
    let at = c.blocks.len();
    let of = |b: &str| metrics.iter().filter(|m| m.key.bench == b).collect::<Vec<_>>();
    let level = if emulated { 3 } else { 2 };
    // The benchmarks whose section is always there, in catalogue order; then the others measured.
    let always: Vec<&dyn BenchView> = bench::VIEWS.iter().copied().filter(|v| v.figures().always()).collect();
    for v in &always {
        let name = v.bench().name();
        match v.figures() {
            Figures::Latency => c.latency(name, &of(name), &recs, level),
            Figures::Bars { heading, title } => {
                c.blocks.push(Block::Heading(level, heading.into()));
                let ms = of(name);
                if ms.is_empty() {
                    c.blocks.push(Block::Para(format!("No `{name}` metrics in this log.")));
                } else {
                    c.bars(name, title, &ms);
                }
            }
            Figures::Sweep { heading, what } => c.sweep_section(name, heading, what, &of(name), level),
            Figures::Plain | Figures::Titled { .. } => {}
        }
    }
    let mut others: Vec<&str> = Vec::new();
    for m in &metrics {
        let b = m.key.bench.as_str();
        let view = bench::view(b);
        // Timings a view leaves out on an emulator (they hold no cache).
        let hidden = m.emulated == Some(true) && view.is_some_and(|v| !v.emulated_figures());
        if view.is_none_or(|v| !v.figures().always()) && !others.contains(&b) && !hidden && m.key.source != "model" {
            others.push(b);
        }
    }
    for b in &others {
        let (heading, title) = match bench::view(b).map(|v| v.figures()) {
            Some(Figures::Titled { heading, title }) => (format!("{heading} (bench {b})"), title.to_string()),
            _ => (format!("Bench {b}"), format!("{b} per attribute")),
        };
        c.blocks.push(Block::Heading(level, heading));
        c.other_bench(b, &title, &of(b));
    }
    if !emulated {
        let measured: Vec<Block> = c.blocks.drain(at..).collect();
        c.blocks.splice(sections_at..sections_at, measured);
    } else {
        let inner: Vec<Block> = c.blocks.drain(at..).collect();
        let n = inner.iter().filter(|b| matches!(b, Block::Figure { .. })).count();
        let what = if icount {
            "instruction counts (-icount), not time and not caches"
        } else {
            "emulator timing (QEMU's speed on this host), not caches"
        };
        let short = if icount { "instruction counts under -icount" } else { "the emulator's speed" };
        c.blocks.push(Block::Heading(2, format!("Appendix: emulator timing figures ({short})")));
        c.blocks.push(Block::Para(format!(
            "The kernel's own timer figures of this run. Under QEMU they measure the emulator{}; they are kept for regressions of the code itself (`compare`), not read as cache behaviour.",
            if icount { ": under `-icount` one ns of virtual time is one instruction, so every figure is an instruction count" } else { "" }
        )));
        c.blocks.push(Block::Details(format!("{n} figure{}: {what} — click to open", if n == 1 { "" } else { "s" }), inner));
    }

    // Metric tables with merged model records.
    let model_recs: Vec<&Record> = recs.iter().filter(|r| r.kind() != "metric" && str_field(r, "source") == Some("model")).collect();
    if !metrics.is_empty() {
        c.blocks.push(Block::Heading(2, "Metric tables".into()));
        let mut benches: Vec<&str> = Vec::new();
        for m in &metrics {
            if !benches.contains(&m.key.bench.as_str()) {
                benches.push(&m.key.bench);
            }
        }
        for b in benches {
            let ms: Vec<&Metric> = metrics.iter().filter(|m| m.key.bench == b).collect();
            c.blocks.push(Block::Heading(3, format!("{b} ({} measurements)", ms.len())));
            for ((source, unit), group) in by_source_unit(&ms) {
                let unit = if icount && source != "model" { format!("{unit} (instruction counts under -icount)") } else { unit };
                c.blocks.push(Block::Para(format!(
                    "Median in {unit}, {}{}:",
                    source_text(&source, cntfrq),
                    if group.iter().all(|m| m.emulated == Some(true)) { ", emulated" } else { "" }
                )));
                let (h, rows) = pivot(&group);
                c.blocks.push(Block::Table(h, rows));
            }
            let (h, rows) = detail_table(&ms, &model_recs);
            let with_model = h.last().is_some_and(|x| x == "model");
            c.blocks.push(Block::Details(
                format!(
                    "All {} {b} measurements: reps, min, median, max, MAD{}",
                    ms.len(),
                    if with_model { ", cache-model counts of the same phase" } else { "" }
                ),
                vec![Block::Table(h, rows)],
            ));
        }
    }

    // Every other record kind (the sanitizer's and the attribute windows have their sections).
    const SHOWN: [&str; 9] =
        ["boot", "end", "metric", "cache", "hazard", "expect-hazard", "attr", "sanitizer-finding", "sanitizer-verdict"];
    let mut kinds: Vec<&str> = Vec::new();
    for r in &recs {
        if !SHOWN.contains(&r.kind()) && !kinds.contains(&r.kind()) {
            kinds.push(r.kind());
        }
    }
    if !kinds.is_empty() {
        c.blocks.push(Block::Heading(2, "Other records".into()));
        for kind in kinds {
            let rs: Vec<&Record> = recs.iter().filter(|r| r.kind() == kind).collect();
            let (h, rows) = table_of(&rs, 500);
            let origin = if rs.iter().any(|r| str_field(r, "source") == Some("model")) { ", from the cache model" } else { "" };
            let mut inner = vec![Block::Table(h, rows)];
            if rs.len() > 500 {
                inner.push(Block::Para(format!("… {} more (see `extract`).", rs.len() - 500)));
            }
            c.blocks.push(Block::Details(format!("{kind} ({} records{origin})", rs.len()), inner));
        }
    }

    problems.extend(model_problems);
    if !problems.is_empty() {
        c.blocks.push(Block::Heading(2, "Validation problems".into()));
        let n = problems.len();
        let mut list: Vec<String> = problems.into_iter().take(50).collect();
        if n > 50 {
            list.push(format!("… and {} more (run `check`)", n - 50));
        }
        c.blocks.push(Block::List(list));
    }
    Report { blocks: c.blocks, figures: c.figures }
}

impl Ctx<'_> {
    /// The sanitizer: the verdict (the runner's record, else judged here from a valid model
    /// log), declared against found per kind, and each phase with the PCs of its accesses.
    fn sanitizer_section(&mut self, run: &Log, recs: &[Record], mrecs: &[Record], have_model: bool, flag: Option<&str>) {
        self.blocks.push(Block::Heading(2, "Sanitizer".into()));
        let expects: Vec<record::ExpectHazardView<_>> = recs.iter().filter_map(|r| r.view()).collect();
        let hazards: Vec<&Record> = mrecs.iter().filter(|r| r.kind() == "hazard").collect();
        let found: Vec<record::HazardView<_>> = hazards.iter().filter_map(|r| r.view()).collect();
        let recorded = crate::verdict::recorded(recs.iter().map(|r| &r.obj));
        if let Some(f) = flag {
            self.blocks.push(Block::Warn(format!("Not judged here: {f}.")));
        } else if !have_model {
            self.blocks.push(Block::Para(
                "No cache-model log: the sanitizer did not observe this run (or its log was not given: `--model`).".into(),
            ));
        }
        let judged = if flag.is_none() && have_model {
            crate::verdict::judge(recs.iter().map(|r| &r.obj), mrecs.iter().map(|r| &r.obj)).ok()
        } else {
            None
        };
        let word = |w: crate::verdict::Word| match w {
            crate::verdict::Word::AsDeclared => "as declared (every deliberate mistake reported exactly, none elsewhere)",
            crate::verdict::Word::Failed => "FAILED",
            crate::verdict::Word::Off => "off (sanitize=off): nothing judged",
            crate::verdict::Word::Missing => "MISSING: the model log has no hazard-total, nothing could be judged",
        };
        match (&recorded, &judged) {
            (Some(r), _) => {
                let first = if r.first.is_empty() { String::new() } else { format!("; first failure: {}", r.first) };
                self.blocks.push(Block::Para(format!(
                    "Verdict: **{}** — the runner's `sanitizer-verdict` record (judged when the run ended), {} failed phase(s){first}.",
                    word(r.word),
                    r.failed_phases
                )));
                if let Some(j) = judged.as_ref().filter(|j| j.word != r.word) {
                    self.blocks.push(Block::Warn(format!(
                        "The model log given here judges differently: {} (another model log than the runner's?).",
                        word(j.word)
                    )));
                }
            }
            (None, Some(j)) => self.blocks.push(Block::Para(format!(
                "Verdict: **{}** — judged here (`cachescope-report verdict`; the log has no runner's verdict), {} failed phase(s).",
                word(j.word),
                j.failed().count()
            ))),
            (None, None) if have_model && flag.is_none() => {
                self.blocks.push(Block::Para(format!("Verdict: **{}**.", word(crate::verdict::Word::Missing))))
            }
            _ => {}
        }
        if expects.is_empty() && hazards.is_empty() {
            self.blocks.push(Block::Para("No deliberate mistakes declared (`expect-hazard`) and no hazard recorded.".into()));
            return;
        }
        if flag.is_some() {
            // What the kernel declared, and nothing the damaged log says it found.
            let rows = expects
                .iter()
                .map(|r| {
                    vec![
                        r.phase().unwrap_or("").to_string(),
                        r.kind().unwrap_or("").to_string(),
                        r.lines().map(|n| n.to_string()).unwrap_or_default(),
                        r.pa().map(|pa| format!("{pa:#x}")).unwrap_or_default(),
                    ]
                })
                .collect();
            self.blocks.push(Block::Para("Declared by the kernel (`expect-hazard`):".into()));
            self.blocks.push(Block::Table(vec!["phase".into(), "kind".into(), "lines".into(), "from".into()], rows));
            return;
        }
        let declared_phases: std::collections::BTreeSet<&str> = expects.iter().filter_map(|r| r.phase()).collect();
        // Per kind: declared lines against found lines (in declared phases and elsewhere).
        let mut rows = Vec::new();
        for kind in cachescope_arch::hazard::HazardKind::ALL {
            let name = kind.name();
            let declared: u64 = expects.iter().filter(|r| r.kind() == Some(name)).map(|r| r.lines().unwrap_or(0)).sum();
            let of_kind: Vec<_> = found.iter().filter(|r| r.kind() == Some(name)).collect();
            let in_declared = of_kind.iter().filter(|r| declared_phases.contains(r.phase().unwrap_or(""))).count();
            let occurrences: u64 = of_kind.iter().map(|r| r.count().unwrap_or(0)).sum();
            if declared == 0 && of_kind.is_empty() {
                continue;
            }
            let verdict = if in_declared as u64 == declared && of_kind.len() == in_declared { "as declared" } else { "DIFFERS" };
            rows.push(vec![
                name.to_string(),
                declared.to_string(),
                in_declared.to_string(),
                (of_kind.len() - in_declared).to_string(),
                occurrences.to_string(),
                verdict.to_string(),
            ]);
        }
        self.blocks.push(Block::Heading(3, "Declared against found, per kind".into()));
        self.blocks.push(Block::Table(
            ["kind", "declared lines", "found in declared phases", "found elsewhere", "occurrences", ""]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows,
        ));
        // Per phase, with the PCs of the exposing accesses and of their causes.
        let cases = crate::junit::build(run, &crate::runinfo::RunInfo::default(), None);
        let case_of = |phase: &str| crate::verdict::declaring_case(&cases, phase);
        let mut phases: Vec<&str> = declared_phases.iter().copied().collect();
        for h in &found {
            let p = h.phase().unwrap_or("");
            if !phases.contains(&p) {
                phases.push(p);
            }
        }
        let judged_of = |p: &str| {
            judged.as_ref().and_then(|j| j.findings.iter().find(|f| f.phase == p)).map(|f| if f.passed { "ok" } else { "NOT OK" })
        };
        let pcs = |p: &str, pc: fn(&record::HazardView<'_, crate::records::Object>) -> Option<u64>| {
            let mut v: Vec<u64> = found.iter().filter(|h| h.phase() == Some(p)).filter_map(pc).collect();
            v.sort_unstable();
            v.dedup();
            let mut t = v.iter().take(4).map(|x| format!("{x:#x}")).collect::<Vec<_>>().join(" ");
            if v.len() > 4 {
                t += &format!(" (+{})", v.len() - 4);
            }
            t
        };
        let rows: Vec<Vec<String>> = phases
            .iter()
            .map(|p| {
                let declared: Vec<String> = expects
                    .iter()
                    .filter(|r| r.phase() == Some(p))
                    .map(|r| {
                        let pa = r.pa().map_or("?".into(), |pa| format!("{pa:#x}"));
                        format!("{} ×{} from {pa}", r.kind().unwrap_or("?"), r.lines().unwrap_or(0))
                    })
                    .collect();
                let in_phase: Vec<_> = found.iter().filter(|h| h.phase() == Some(p)).collect();
                let mut kinds: Vec<String> = Vec::new();
                for k in cachescope_arch::hazard::HazardKind::ALL {
                    let n = in_phase.iter().filter(|h| h.kind() == Some(k.name())).count();
                    if n > 0 {
                        kinds.push(format!("{} ×{n}", k.name()));
                    }
                }
                vec![
                    crate::verdict::phase_name(p).to_string(),
                    case_of(p),
                    if declared.is_empty() { "none".into() } else { declared.join("; ") },
                    if kinds.is_empty() { "none".into() } else { kinds.join("; ") },
                    pcs(p, |h| h.pc()),
                    pcs(p, |h| h.cause_pc()),
                    judged_of(p).unwrap_or("–").to_string(),
                ]
            })
            .collect();
        self.blocks.push(Block::Heading(3, "Per phase, with the PCs".into()));
        self.blocks.push(Block::Para("PCs are those of the exposing access (`pc`) and of the earlier access that made the line hazardous (`cause_pc`); symbolise them with `llvm-addr2line -e` the kernel's ELF.".into()));
        self.blocks.push(Block::Table(
            ["phase", "declared by", "declared", "found", "access PCs", "cause PCs", "verdict"].iter().map(|s| s.to_string()).collect(),
            rows,
        ));
        if !hazards.is_empty() {
            let (h, rows) = table_of(&hazards, 500);
            let mut inner = vec![Block::Table(h, rows)];
            if hazards.len() > 500 {
                inner.push(Block::Para(format!("… {} more (see `extract`).", hazards.len() - 500)));
            }
            self.blocks.push(Block::Details(format!("All {} hazard records", hazards.len()), inner));
        }
    }

    /// The attribute matrix: each alias window's MAIR byte against what the MMU walk gave
    /// (PAR_EL1 after AT), and the mmu suite's cases.
    fn attribute_section(&mut self, run: &Log, recs: &[Record], d: &ModelData) {
        self.blocks.push(Block::Heading(2, "Attribute matrix".into()));
        let attrs: Vec<&Record> = recs.iter().filter(|r| r.kind() == "attr").collect();
        if attrs.is_empty() {
            self.blocks.push(Block::Para("No `attr` records (the mmu suite did not run).".into()));
        } else {
            // What the cache model saw of each attribute: the share of its phases' data accesses
            // that bypassed the caches.
            let observed = |name: &str| -> String {
                let (mut bypass, mut all) = (0u64, 0u64);
                for p in d.phases.iter().filter(|p| p.parsed.attr == name) {
                    bypass += p.bypass();
                    all += p.data_accesses();
                }
                if all == 0 {
                    "–".into()
                } else {
                    format!("{:.1}% of {} data accesses bypass", bypass as f64 * 100.0 / all as f64, crate::svg::si(all as f64))
                }
            };
            let rows = attrs
                .iter()
                .map(|a| {
                    let (mair, par) = (str_field(a, "mair"), str_field(a, "par_attr"));
                    let name = str_field(a, "name").unwrap_or("?");
                    let mut row = vec![
                        name.to_string(),
                        str_field(a, "va").unwrap_or("").to_string(),
                        str_field(a, "pa").unwrap_or("").to_string(),
                        mair.unwrap_or("").to_string(),
                        par.unwrap_or("walk failed").to_string(),
                        str_field(a, "sh").unwrap_or("–").to_string(),
                        if par.is_some() && par == mair { "ok".into() } else { "MISMATCH".into() },
                    ];
                    if !d.is_empty() {
                        row.push(observed(name));
                    }
                    row
                })
                .collect();
            self.blocks.push(Block::Para("Every alias window maps the same physical buffer with one memory attribute; AT S1E1R then reads back what the walk gives (PAR_EL1.ATTR must equal the MAIR byte).".into()));
            let mut head: Vec<String> =
                ["attribute", "VA", "PA", "MAIR byte", "PAR_EL1.ATTR", "shareability", "AT"].iter().map(|s| s.to_string()).collect();
            if !d.is_empty() {
                head.push("cache model (its phases)".into());
            }
            self.blocks.push(Block::Table(head, rows));
        }
        let suites = crate::junit::build(run, &crate::runinfo::RunInfo::default(), None);
        if let Some(mmu) = suites.suites.iter().find(|s| s.name == "mmu") {
            let rows = mmu
                .cases
                .iter()
                .map(|c| {
                    let (r, why) = match &c.outcome {
                        crate::junit::Outcome::Passed => ("ok", String::new()),
                        crate::junit::Outcome::Failed { message, .. } => ("NOT OK", message.clone()),
                        crate::junit::Outcome::Skipped(why) => ("skip", why.clone()),
                        crate::junit::Outcome::Missing(why) => ("missing", why.clone()),
                    };
                    vec![c.name.clone(), r.to_string(), why]
                })
                .collect();
            self.blocks.push(Block::Heading(3, "The mmu suite".into()));
            self.blocks.push(Block::Table(vec!["case".into(), "result".into(), "why".into()], rows));
        }
    }

    /// Coherence between the vCPUs' private caches (MESI in the model): per vCPU over the run,
    /// and per phase of the multicore benchmarks.
    fn coherence_section(&mut self, d: &ModelData, mrecs: &[Record]) {
        self.blocks.push(Block::Heading(2, "Coherence".into()));
        let totals: Vec<&Record> = mrecs.iter().filter(|r| r.kind() == "model-coherence-total").collect();
        if totals.is_empty() {
            self.blocks.push(Block::Para(if d.is_empty() {
                "No cache-model records: coherence is observed through the cache model only.".into()
            } else {
                "One vCPU: the model has no coherence traffic to count (`model-coherence` records come with more than one vCPU).".into()
            }));
            return;
        }
        let rows = totals
            .iter()
            .filter_map(|r| r.view::<record::ModelCoherenceTotalView<_>>())
            .map(|c| {
                let counts = [
                    c.cpu(),
                    c.invalidations(),
                    c.interventions(),
                    c.upgrades(),
                    c.snoop_hits(),
                    c.snoop_misses(),
                    c.remote_maint(),
                    c.buf_interventions(),
                    c.cross_interventions(),
                    c.cross_invalidations(),
                    c.cross_remote_maint(),
                    c.cluster_handovers(),
                    c.cross_handovers(),
                ];
                counts.iter().map(|n| n.map(|n| n.to_string()).unwrap_or_default()).collect()
            })
            .collect();
        let head = [
            "vCPU",
            "invalidations",
            "interventions",
            "upgrades",
            "snoop_hits",
            "snoop_misses",
            "remote_maint",
            "buf_interventions",
            "cross_interventions",
            "cross_invalidations",
            "cross_remote_maint",
            "cluster_handovers",
            "cross_handovers",
        ]
        .map(String::from)
        .to_vec();
        self.blocks.push(Block::Para("Counts of the model's MESI protocol over the whole run, per vCPU (docs/cache-model.md): copies invalidated by another core's write, requests another core's dirty copy supplied, S→M upgrades, snoops that found or missed the line, broadcast maintenance received; `buf_` counts only lines of the declared benchmark buffers; `cross_` the events between cores of different clusters (the profile's topology), and the hand-overs are demand data accesses another core's dirty copy served, in the core's cluster or from another.".into()));
        self.blocks.push(Block::Table(head, rows));
        let mut per: Vec<Vec<String>> = Vec::new();
        for p in d.phases.iter().filter(|p| p.coherence.is_some_and(|c| c.transfers + c.invalidations > 0)) {
            let c = p.coherence.unwrap_or_default();
            per.push(vec![p.name.clone(), c.transfers.to_string(), c.invalidations.to_string()]);
        }
        if !per.is_empty() {
            self.blocks.push(Block::Heading(3, "Per phase (buffer lines)".into()));
            self.blocks.push(Block::Table(vec!["phase".into(), "line transfers (interventions)".into(), "invalidations".into()], per));
        }
    }
}

/// The core-to-core heat map (`core_to_core.rs`) as a figure.
struct HeatMap(crate::core_to_core::Matrix);

impl Figure for HeatMap {
    fn render(&self) -> String {
        self.0.heat_map()
    }
}

impl Ctx<'_> {
    /// The smp suite's core-to-core matrix: its digest line and its heat map.
    fn core_to_core_section(&mut self, metrics: &[Metric], d: &ModelData) {
        let Some(m) = crate::core_to_core::Matrix::collect(metrics, d) else { return };
        self.blocks.push(Block::Heading(3, "Core-to-core latency".into()));
        self.blocks.push(Block::Para(format!(
            "Every ordered pair of cores hands one line back and forth (the smp suite's `c2c` benchmark, row: the core that writes first): {}.",
            m.digest()
        )));
        let caption = if m.pairs.iter().any(|p| p.model.is_some_and(|x| x.cycles.is_some())) {
            "Core-to-core hand-over cost from the cache model: modelled cycles (the profile's in-cluster and cross-cluster hand-over costs, counted by the coherence protocol), not silicon."
        } else if m.emulated {
            "Core-to-core hand-over time measured by the timer under an emulator: not silicon."
        } else {
            "Core-to-core hand-over time measured by the timer (median of the windows)."
        };
        self.figure("core-to-core".into(), caption.into(), HeatMap(m));
    }
}

fn md_esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if matches!(ch, '\\' | '|' | '*' | '_' | '<' | '>' | '[' | ']') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Inline `code` spans in our own prose are kept; data-derived text goes through the escapers.
fn md_inline(s: &str) -> String {
    s.to_string()
}

fn html_inline(s: &str) -> String {
    // Our prose marks code with backticks and emphasis with `**`; turn pairs into tags.
    let pairs = |text: &str, mark: &str, tag: &str| {
        let mut out = String::new();
        for (i, part) in text.split(mark).enumerate() {
            if i % 2 == 1 {
                out.push_str(&format!("<{tag}>{part}</{tag}>"));
            } else {
                out.push_str(part);
            }
        }
        out
    };
    pairs(&pairs(&esc(s), "`", "code"), "**", "strong")
}

/// Heading anchors: a slug of the text (lowercase letters, digits and `-`), made unique by
/// `-2`, `-3`… in document order, the same for the table of contents and the headings.
#[derive(Default)]
struct Anchors(HashMap<String, usize>);

impl Anchors {
    fn next(&mut self, text: &str) -> String {
        let mut slug = String::new();
        for c in text.chars().flat_map(char::to_lowercase) {
            if c.is_alphanumeric() {
                slug.push(c);
            } else if !slug.ends_with('-') && !slug.is_empty() {
                slug.push('-');
            }
        }
        let slug = slug.trim_end_matches('-').to_string();
        let slug = if slug.is_empty() { "section".to_string() } else { slug };
        let n = self.0.entry(slug.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            slug
        } else {
            format!("{slug}-{n}")
        }
    }
}

/// Every heading in document order (those inside collapsible blocks too): (level, text, anchor).
fn headings(blocks: &[Block]) -> Vec<(u8, String, String)> {
    fn walk(blocks: &[Block], a: &mut Anchors, out: &mut Vec<(u8, String, String)>) {
        for b in blocks {
            match b {
                Block::Heading(n, t) => out.push((*n, t.clone(), a.next(t))),
                Block::Details(_, inner) => walk(inner, a, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(blocks, &mut Anchors::default(), &mut out);
    out
}

/// How a figure is written in Markdown: inline, or linked to its file in a folder.
#[derive(Clone, Copy)]
enum MdFigures<'a> {
    Inline,
    Linked(&'a str),
}

/// Rendering state: the anchors of the headings (in order) and the figure files.
struct Render<'a> {
    anchors: std::vec::IntoIter<(u8, String, String)>,
    toc: Vec<(u8, String, String)>,
    figures: &'a [(String, String)],
    md: MdFigures<'a>,
}

impl Render<'_> {
    fn anchor(&mut self) -> String {
        self.anchors.next().map(|h| h.2).unwrap_or_default()
    }

    /// The level-2 headings, each a link.
    fn toc_items(&self) -> Vec<(String, String)> {
        self.toc.iter().filter(|h| h.0 == 2).map(|h| (h.1.clone(), h.2.clone())).collect()
    }
}

impl Report {
    /// Renders the report; Markdown with every figure inline (see [`Report::markdown_linked`]).
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Markdown => self.markdown(MdFigures::Inline),
            Format::Html => self.html(),
        }
    }

    /// Markdown whose figures are image links `DIR/STEM.svg` to the files of [`Report::figures`]
    /// (GitHub and GitLab strip inline SVG from Markdown; the caller writes the files there).
    pub fn markdown_linked(&self, dir: &str) -> String {
        self.markdown(MdFigures::Linked(dir))
    }

    fn renderer<'a>(&'a self, md: MdFigures<'a>) -> Render<'a> {
        let toc = headings(&self.blocks);
        Render { anchors: toc.clone().into_iter(), toc, figures: &self.figures, md }
    }

    fn markdown(&self, md: MdFigures<'_>) -> String {
        let mut r = self.renderer(md);
        let mut s = String::new();
        for b in &self.blocks {
            md_block(&mut s, b, &mut r);
        }
        s
    }

    fn html(&self) -> String {
        let title = self
            .blocks
            .iter()
            .find_map(|b| if let Block::Heading(1, t) = b { Some(t.clone()) } else { None })
            .unwrap_or_else(|| "cachescope report".into());
        let mut s = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>{CSS}</style></head><body>\n",
            esc(&title)
        );
        let mut r = self.renderer(MdFigures::Inline);
        for b in &self.blocks {
            html_block(&mut s, b, &mut r);
        }
        s.push_str("</body></html>\n");
        s
    }
}

const CSS: &str = "body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.2em;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\
th{background:#f2f2f2}.warn{border-left:4px solid #b00020;background:#fff3f3;padding:0.5em 1em}figure{margin:1em 0}\
figcaption{font-size:13px;color:#444;max-width:900px}code{background:#f4f4f4;padding:0 3px}summary{cursor:pointer;margin:0.3em 0 0.8em}\
nav.toc{background:#f8f8f8;border:1px solid #ddd;padding:0.3em 1em;font-size:14px}a.anchor{color:#bbb;text-decoration:none;margin-left:0.3em}";

fn md_block(s: &mut String, b: &Block, r: &mut Render<'_>) {
    match b {
        Block::Heading(n, t) => {
            let a = r.anchor();
            s.push_str(&format!("<a id=\"{a}\"></a>\n\n{} {}\n\n", "#".repeat(*n as usize), md_esc(t)))
        }
        Block::Toc => {
            s.push_str("**Contents:**\n\n");
            for (t, a) in r.toc_items() {
                s.push_str(&format!("- [{}](#{a})\n", md_esc(&t)));
            }
            s.push('\n');
        }
        Block::Para(t) => s.push_str(&format!("{}\n\n", md_inline(t))),
        Block::Warn(t) => s.push_str(&format!("> **Note:** {}\n\n", md_inline(t))),
        Block::Table(h, rows) => {
            let line = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| md_esc(c)).collect::<Vec<_>>().join(" | "));
            s.push_str(&line(h));
            s.push_str(&format!("|{}\n", "---|".repeat(h.len())));
            for row in rows {
                s.push_str(&line(row));
            }
            s.push('\n');
        }
        Block::Figure { n, caption, svg } => match r.md {
            // The caption once, under the figure; the image's alt text names the figure only.
            MdFigures::Linked(dir) => {
                let stem = r.figures.get(n.saturating_sub(1)).map_or("figure", |(stem, _)| stem.as_str());
                s.push_str(&format!("![Figure {n}]({dir}/{stem}.svg)\n\n*Figure {n}: {}*\n\n", md_esc(caption)));
            }
            MdFigures::Inline => s.push_str(&format!("<div>\n{svg}\n</div>\n\n*Figure {n}: {}*\n\n", md_esc(caption))),
        },
        Block::List(items) => {
            for i in items {
                s.push_str(&format!("- {}\n", md_esc(i)));
            }
            s.push('\n');
        }
        Block::Details(summary, inner) => {
            s.push_str(&format!("<details><summary>{}</summary>\n\n", esc(summary)));
            for b in inner {
                md_block(s, b, r);
            }
            s.push_str("</details>\n\n");
        }
    }
}

fn html_block(s: &mut String, b: &Block, r: &mut Render<'_>) {
    match b {
        Block::Heading(n, t) => {
            let a = r.anchor();
            s.push_str(&format!("<h{n} id=\"{a}\">{}<a class=\"anchor\" href=\"#{a}\">#</a></h{n}>\n", esc(t)))
        }
        Block::Toc => {
            s.push_str("<nav class=\"toc\"><strong>Contents</strong><ul>\n");
            for (t, a) in r.toc_items() {
                s.push_str(&format!("<li><a href=\"#{a}\">{}</a></li>\n", esc(&t)));
            }
            s.push_str("</ul></nav>\n");
        }
        Block::Para(t) => s.push_str(&format!("<p>{}</p>\n", html_inline(t))),
        Block::Warn(t) => s.push_str(&format!("<p class=\"warn\"><strong>Note:</strong> {}</p>\n", html_inline(t))),
        Block::Table(h, rows) => {
            s.push_str("<table><thead><tr>");
            for c in h {
                s.push_str(&format!("<th>{}</th>", esc(c)));
            }
            s.push_str("</tr></thead><tbody>\n");
            for row in rows {
                s.push_str("<tr>");
                for c in row {
                    s.push_str(&format!("<td>{}</td>", esc(c)));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</tbody></table>\n");
        }
        Block::Figure { n, caption, svg } => {
            s.push_str(&format!("<figure id=\"figure-{n}\">{svg}<figcaption>Figure {n}: {}</figcaption></figure>\n", esc(caption)))
        }
        Block::List(items) => {
            s.push_str("<ul>\n");
            for i in items {
                s.push_str(&format!("<li>{}</li>\n", esc(i)));
            }
            s.push_str("</ul>\n");
        }
        Block::Details(summary, inner) => {
            s.push_str(&format!("<details><summary>{}</summary>\n", esc(summary)));
            for b in inner {
                html_block(s, b, r);
            }
            s.push_str("</details>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = concat!(
        "KTAP version 1\n1..1\n",
        "# cs: {\"record\":\"boot\",\"schema\":2,\"el\":1,\"current_el\":1,\"board\":\"qemu-virt\",\"midr\":\"0x410fd083\",\"cpu\":\"Cortex-A72\",\"cntfrq\":62500000,\"dtb\":true,\"ram_base\":\"0x40000000\",\"ram_size\":536870912,\"uart\":\"0x9000000\",\"emulated\":true,\"args\":\"\"}\n",
        "  KTAP version 1\n  # Subtest: bench\n  1..1\n",
        "  # cs: {\"record\":\"cache\",\"level\":1,\"type\":\"data\",\"line\":64,\"ways\":2,\"sets\":256,\"size\":32768,\"source\":\"ccsidr\"}\n",
        "  # cs: {\"record\":\"cache\",\"level\":1,\"type\":\"instruction\",\"line\":64,\"ways\":3,\"sets\":256,\"size\":49152,\"source\":\"ccsidr\"}\n",
        "  # cs: {\"record\":\"metric\",\"bench\":\"latency\",\"variant\":\"chase\",\"attr\":\"wb\",\"bytes\":4096,\"params\":{},\"phase\":\"lat-wb-4k\",\"reps\":5,\"min\":1,\"median\":2,\"max\":3,\"mad\":0.5,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}\n",
        "  # cs: {\"record\":\"metric\",\"bench\":\"latency\",\"variant\":\"chase\",\"attr\":\"wb\",\"bytes\":65536,\"params\":{},\"phase\":\"latency/chase/wb/65536\",\"reps\":5,\"min\":4,\"median\":5,\"max\":6,\"mad\":0.5,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}\n",
        "  # cs: {\"record\":\"metric\",\"bench\":\"handoff\",\"variant\":\"nc\",\"attr\":\"nc\",\"bytes\":65536,\"params\":{},\"phase\":\"handoff/nc/nc/65536\",\"reps\":1,\"min\":7,\"median\":7,\"max\":7,\"mad\":0,\"unit\":\"ns/MiB\",\"source\":\"cntvct\",\"emulated\":true}\n",
        "  ok 1 lat\nok 1 bench\n",
        "# cs: {\"record\":\"end\",\"passed\":1,\"failed\":0,\"skipped\":0}\n",
    );
    const MODEL: &str = "# cs: {\"record\":\"model\",\"phase\":\"lat-wb-4k\",\"phase_id\":1,\"level\":\"L1D\",\"accesses\":4096,\"hits\":4032,\"misses\":64,\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}\n";

    #[test]
    fn report_has_figures_labels_tables_and_model_merge() {
        let run = Log::from_bytes("run.log", RUN.as_bytes());
        let model = Log::from_bytes("model.log", MODEL.as_bytes());
        let r = build(&run, Some(&model));
        assert_eq!(r.figures.len(), 2, "latency + handoff");
        let md = r.render(Format::Markdown);
        for needle in [
            "# cachescope report: run.log",
            "KTAP v1 and records contract: valid",
            "This run is emulated",
            "L1D 32 KiB (CCSIDR)",
            "EMULATED (QEMU): these figures measure the emulator, not caches",
            "source: cntvct (CNTVCT\\_EL0 generic timer, 62.5 MHz, one tick = 16 ns)",
            "No `stream` metrics in this log.",
            "No `kv` metrics in this log.",
            "| chase | wb | 4 KiB | 5 | 1 | 2 | 3 | 0.5 | ns | cntvct | true | L1D phase\\_id=1 accesses=4096 hits=4032 misses=64 writebacks=0 maint=0 bypass=0 |",
            "<summary>model (1 records, from the cache model)</summary>",
        ] {
            assert!(md.contains(needle), "missing {needle:?} in\n{md}");
        }
        assert!(r.figures.iter().all(|(_, svg)| !svg.contains("L1I")), "instruction caches are not marked");
        assert!(md.contains("one bar per attribute; bar height the median of each measurement, no whiskers"), "{md}");
        let html = r.render(Format::Html);
        assert!(
            html.starts_with("<!DOCTYPE html>") && html.contains("<figure id=\"figure-1\"><svg") && html.contains("<code>stream</code>")
        );
    }

    /// A complete model log of one phase: the run's latency point at 4 KiB, closing records.
    fn model_log(hazard_phase: &str) -> String {
        let mut m = String::new();
        m += "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"hit_cycles\":4,\"hit_ns\":2.0,\"source\":\"model\"}\n";
        for (i, b) in [4096u64, 65536].iter().enumerate() {
            let misses = if *b > 32768 { 4000 } else { 0 };
            m += &format!("# cs: {{\"record\":\"model\",\"phase\":\"latency/chase/wb/{b}\",\"phase_id\":{},\"level\":\"L1D\",\"accesses\":4096,\"hits\":{},\"misses\":{misses},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"prefetches\":0,\"prefetch_hits\":0,\"source\":\"model\"}}\n", i + 1, 4096 - misses);
        }
        m += &format!("# cs: {{\"record\":\"hazard\",\"kind\":\"lost-write\",\"pa\":\"0x1000\",\"va\":\"0x1000\",\"pc\":\"0x40001234\",\"phase\":\"{hazard_phase}\",\"phase_id\":2,\"count\":1,\"access\":\"dc-ivac\",\"cause\":\"write\",\"cause_pc\":\"0x40001200\",\"source\":\"model\"}}\n");
        m += &format!("# model: hazard lost-write pa=0x1000 va=0x1000 pc=0x40001234 phase={hazard_phase} count=1 access=dc-ivac cause=write cause_pc=0x40001200\n");
        m += "# cs: {\"record\":\"hazard-total\",\"sanitize\":true,\"hazards\":1,\"count\":1,\"stale_read_by_device\":0,\"lost_write\":1,\"stale_read_by_cpu\":0,\"stale_instruction\":0,\"maintenance_gap\":0,\"shared_line\":0,\"truncated\":false,\"dropped\":0,\"source\":\"model\"}\n";
        m += "# cs: {\"record\":\"model-run\",\"protocol\":5,\"markers\":4,\"phases\":2,\"va_learned\":0,\"va_window\":0,\"va_identity\":0,\"setway_ops\":0,\"warnings\":0,\"fast\":true,\"source\":\"model\"}\n";
        m
    }

    #[test]
    fn report_leads_with_findings_then_model_then_sections_and_an_appendix() {
        let run = Log::from_bytes("run.log", RUN.replace("\"args\":\"\"", "\"args\":\"\",\"model\":\"guest\"").as_bytes());
        let m = model_log("latency/chase/wb/65536");
        let model = Log::from_bytes("run.log.model", m.as_bytes());
        assert!(contract::check_model_log(&model).valid(), "{:?}", contract::check_model_log(&model).problems);
        let r = build(&run, Some(&model));
        let md = r.render(Format::Markdown);
        let at = |needle: &str| md.find(needle).unwrap_or_else(|| panic!("no {needle:?} in\n{md}"));
        // The order: contents, findings (the digest), run, model figures, sections, appendix.
        let order = [
            "**Contents:**",
            "## Findings",
            "| core | Cortex-A72",
            "## Cache model",
            "## Sanitizer",
            "## Attribute matrix",
            "## Coherence",
            "## Run",
            "## Appendix: emulator timing figures",
            "## Metric tables",
        ];
        for w in order.windows(2) {
            assert!(at(w[0]) < at(w[1]), "{} before {}", w[0], w[1]);
        }
        // Headings have anchors and the contents link them.
        assert!(md.contains("- [Sanitizer](#sanitizer)") && md.contains("<a id=\"sanitizer\"></a>"), "{md}");
        let html = r.render(Format::Html);
        assert!(html.contains("<h2 id=\"sanitizer\">") && html.contains("<li><a href=\"#sanitizer\">Sanitizer</a></li>"), "{html}");
        // The boot record names a model profile: -icount by itself; the emulator figures sit in a
        // collapsed appendix labelled as instruction counts.
        assert!(md.contains("| -icount | yes (the runner adds it with the cache model)"), "{md}");
        let appendix = &html[html.find("Appendix: emulator timing figures").unwrap()..];
        assert!(appendix.contains("<details><summary>2 figures: instruction counts (-icount)"), "{appendix}");
        assert!(appendix.find("<details>").unwrap() < appendix.find("Latency vs working set [cntvct]").unwrap());
        // Model figures first, numbered from fig01.
        assert!(r.figures[0].0.starts_with("fig01-model-"), "{:?}", r.figures.iter().map(|f| &f.0).collect::<Vec<_>>());
        assert!(r.figures.iter().all(|(s, _)| s.as_bytes()[3].is_ascii_digit() && s.as_bytes()[4].is_ascii_digit()));
        // The sanitizer: the hazard in an undeclared phase, with its PCs.
        let san = &md[at("## Sanitizer")..at("## Attribute matrix")];
        assert!(san.contains("Verdict: **FAILED**"), "{san}");
        assert!(san.contains("| lost-write | 0 | 0 | 1 | 1 | DIFFERS |"), "{san}");
        assert!(san.contains("| latency/chase/wb/65536 |  | none | lost-write ×1 | 0x40001234 | 0x40001200 | NOT OK |"), "{san}");
        // -icount and the model log can be overridden.
        let plain = build_with(&run, Some(&model), Options { icount: Some(false) }).render(Format::Markdown);
        assert!(
            plain.contains("| -icount | no (--no-icount) |")
                && plain.contains("## Appendix: emulator timing figures (the emulator's speed)"),
            "{plain}"
        );
    }

    #[test]
    fn a_sweep_of_another_bench_is_a_line_plot_not_forty_bars() {
        let mut run = RUN.to_string();
        for block in [8u64, 16] {
            for t in [1u64, 2, 4, 8, 16, 32, 64, 128, 256, 512] {
                run += &format!("  # cs: {{\"record\":\"metric\",\"bench\":\"kv-paged\",\"variant\":\"append-paged\",\"attr\":\"normal-wb\",\"bytes\":{},\"params\":{{\"tokens\":{t},\"block\":{block}}},\"phase\":\"kv-paged/append-paged/normal-wb/{}/tokens={t}/block={block}\",\"reps\":1,\"min\":6,\"median\":6,\"max\":6,\"mad\":0,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}}\n", t * 2048, t * 2048);
            }
        }
        let r = build(&Log::from_bytes("run.log", run.as_bytes()), None);
        let (_, svg) = r.figures.iter().find(|(s, _)| s.contains("kv-paged")).expect("a kv-paged figure");
        assert!(svg.contains("<polyline") && !svg.contains(" / normal-wb: "), "a line plot, no bars");
        assert!(svg.contains(">512<") && svg.contains("tokens (log2 scale)"), "x = tokens");
        // The two block sizes have identical values: one line, and the caption says so.
        assert!(svg.contains("append-paged normal-wb block=8 = append-paged normal-wb block=16") || svg.contains("block=8 ="), "{svg}");
        let md = r.render(Format::Markdown);
        assert!(md.contains("Identical series are drawn once"), "{md}");
    }

    #[test]
    fn attribute_matrix_sets_the_walk_beside_what_the_model_saw() {
        let run = RUN.replace(
            "  ok 1 lat\n",
            "  # cs: {\"record\":\"attr\",\"name\":\"normal-nc\",\"va\":\"0x120041400000\",\"pa\":\"0x41400000\",\"mair\":\"0x44\",\"par_attr\":\"0x44\",\"sh\":\"outer\"}\n  # cs: {\"record\":\"attr\",\"name\":\"normal-wt\",\"va\":\"0x110041400000\",\"pa\":\"0x41400000\",\"mair\":\"0xaa\",\"par_attr\":null,\"sh\":null}\n  ok 1 lat\n",
        );
        let m = "# cs: {\"record\":\"model\",\"phase\":\"latency/chase/normal-nc/4096\",\"phase_id\":1,\"level\":\"L1D\",\"accesses\":0,\"hits\":0,\"misses\":0,\"writebacks\":0,\"maint\":0,\"bypass\":4096,\"source\":\"model\"}\n";
        let md = build(&Log::from_bytes("run.log", run.as_bytes()), Some(&Log::from_bytes("m", m.as_bytes()))).render(Format::Markdown);
        assert!(
            md.contains("| normal-nc | 0x120041400000 | 0x41400000 | 0x44 | 0x44 | outer | ok | 100.0% of 4096 data accesses bypass |"),
            "{md}"
        );
        assert!(md.contains("| normal-wt | 0x110041400000 | 0x41400000 | 0xaa | walk failed | – | MISMATCH | – |"), "{md}");
    }

    #[test]
    fn on_silicon_the_measured_figures_follow_the_findings() {
        let run = RUN.replace("\"emulated\":true", "\"emulated\":false");
        let md = build(&Log::from_bytes("run.log", run.as_bytes()), None).render(Format::Markdown);
        let at = |n: &str| md.find(n).unwrap_or_else(|| panic!("no {n:?} in\n{md}"));
        assert!(at("## Findings") < at("## Latency vs working set") && at("## Latency vs working set") < at("## Sanitizer"));
        assert!(at("## Coherence") < at("## Run") && !md.contains("## Appendix"), "{md}");
        assert!(at("Figure 1: Latency") < at("Figure 2: DMA-like"), "numbered in document order");
    }

    #[test]
    fn markdown_writes_each_caption_once() {
        let r = build(&Log::from_bytes("run.log", RUN.as_bytes()), None);
        let md = r.markdown_linked("r.figures");
        for (i, (stem, _)) in r.figures.iter().enumerate() {
            let n = i + 1;
            assert!(md.contains(&format!("![Figure {n}](r.figures/{stem}.svg)")), "{md}");
            assert_eq!(md.matches(&format!("Figure {n}: ")).count(), 1, "caption {n} once:\n{md}");
        }
    }

    #[test]
    fn a_damaged_model_log_is_flagged_and_judges_nothing() {
        let run = Log::from_bytes("run.log", RUN.as_bytes());
        // One flipped letter in the hazard's phase: well-formed JSON, but its readable twin
        // line and the model records disagree with it.
        let m = model_log("latency/chase/wb/65536").replacen(
            "\"phase\":\"latency/chase/wb/65536\",\"phase_id\":2,\"count\"",
            "\"phase\":\"latency/chase/wB/65536\",\"phase_id\":2,\"count\"",
            1,
        );
        let model = Log::from_bytes("run.log.model", m.as_bytes());
        let md = build(&run, Some(&model)).render(Format::Markdown);
        assert!(md.contains("the model log fails validation, no hazard conclusions drawn from it"), "{md}");
        let san = &md[md.find("## Sanitizer").unwrap()..md.find("## Attribute matrix").unwrap()];
        assert!(
            !san.contains("Verdict:") && !san.contains("NOT OK") && !san.contains("DIFFERS") && !san.contains("found elsewhere"),
            "{san}"
        );
        assert!(md.contains("| model log | run.log.model: INVALID"), "{md}");
    }

    #[test]
    fn tables_keep_a_records_line_field_apart_from_its_log_line() {
        let log = Log::from_bytes("t", b"x\n# cs: {\"record\":\"cache\",\"level\":1,\"line\":64}\n");
        let recs = crate::records::extract(&log).0;
        let (cols, rows) = table_of(&recs.iter().collect::<Vec<_>>(), 10);
        assert_eq!(cols, ["log_line", "level", "line"]);
        assert_eq!(rows, [["2", "1", "64"]]);
    }

    #[test]
    fn one_model_phase_is_never_attached_to_two_rows() {
        // Four KV rows that share one phase name (older kernels) and four model phases of that
        // name: paired in order and said so; with a count mismatch nothing is attached.
        let metric = |tokens: u32| {
            format!("# cs: {{\"record\":\"metric\",\"bench\":\"kv\",\"variant\":\"scan-aligned\",\"attr\":\"normal-wb\",\"bytes\":131072,\"params\":{{\"tokens\":{tokens}}},\"phase\":\"kv/scan-aligned/normal-wb/131072\",\"reps\":1,\"min\":1,\"median\":1,\"max\":1,\"mad\":0,\"unit\":\"MB/s\",\"source\":\"cntvct\",\"emulated\":true}}\n")
        };
        let model = |id: u32, misses: u32| {
            format!("# cs: {{\"record\":\"model\",\"phase\":\"kv/scan-aligned/normal-wb/131072\",\"phase_id\":{id},\"level\":\"L1D\",\"accesses\":100,\"hits\":{},\"misses\":{misses},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}}\n", 100 - misses)
        };
        let run: String = [256, 320, 384, 512].iter().map(|t| metric(*t)).collect();
        let log = Log::from_bytes("r", run.as_bytes());
        let recs = crate::records::extract(&log).0;
        let (ms, _) = Metric::collect(&recs);
        let refs: Vec<&Metric> = ms.iter().collect();
        let mlog: String = (0..4).map(|i| model(10 + i, i)).collect();
        let mrecs = crate::records::extract(&Log::from_bytes("m", mlog.as_bytes())).0;
        let mrefs: Vec<&Record> = mrecs.iter().collect();
        let (att, notes) = attach_model(&refs, &mrefs);
        for (i, a) in att.iter().enumerate() {
            assert_eq!(a.len(), 1, "row {i}");
            assert_eq!(a[0].obj["misses"], i as u64);
            assert!(notes[i].as_deref().unwrap().contains("matched by order"));
        }
        let (att, notes) = attach_model(&refs, &mrefs[..3]);
        assert!(att.iter().all(Vec::is_empty));
        assert!(notes.iter().all(|n| n.as_deref().unwrap().starts_with("ambiguous: 4 measurements and 3 model phases")));
    }

    #[test]
    fn model_section_has_its_figures() {
        let mut m = String::new();
        m += "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n";
        for (i, (b, l1)) in [(16384u64, 0u64), (32768, 100), (40960, 3800), (65536, 4000)].iter().enumerate() {
            m += &format!("# cs: {{\"record\":\"model\",\"phase\":\"latency/chase/normal-wb/{b}/line=64\",\"phase_id\":{i},\"level\":\"L1D\",\"accesses\":4096,\"hits\":{},\"misses\":{l1},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}}\n", 4096 - l1);
            m += &format!("# cs: {{\"record\":\"model-time\",\"phase\":\"latency/chase/normal-wb/{b}/line=64\",\"phase_id\":{i},\"data_accesses\":4096,\"cycles\":{},\"ns\":{},\"source\":\"model\"}}\n", 4096 * (4 + l1 / 40), 2048 * (4 + l1 / 40));
        }
        m += "# cs: {\"record\":\"model\",\"phase\":\"handoff/to-device-va-maint/normal-wb/262144\",\"phase_id\":9,\"level\":\"L1D\",\"accesses\":100,\"hits\":90,\"misses\":10,\"writebacks\":5,\"maint\":4096,\"bypass\":0,\"source\":\"model\"}\n";
        let r = build(&Log::from_bytes("run.log", RUN.as_bytes()), Some(&Log::from_bytes("m", m.as_bytes())));
        let stems: Vec<&str> = r.figures.iter().map(|(s, _)| s.as_str()).collect();
        assert!(stems.iter().any(|s| s.ends_with("model-missrate-normal-wb")), "{stems:?}");
        assert!(stems.iter().any(|s| s.ends_with("model-latency")), "{stems:?}");
        assert!(stems.iter().any(|s| s.ends_with("model-handoff")), "{stems:?}");
        let miss = &r.figures.iter().find(|(s, _)| s.ends_with("model-missrate-normal-wb")).unwrap().1;
        for needle in ["L1D knee: fits 32 KiB", "L1D CCSIDR, L1D silicon 32 KiB", "SIMULATED by the cache model"] {
            assert!(miss.contains(needle), "{needle}");
        }
        let md = r.render(Format::Markdown);
        assert!(md.contains("Geometry: inferred / CCSIDR / published silicon"), "{md}");
        assert!(md.contains("| L1D size | 32 KiB | 32 KiB | 32 KiB |"), "{md}");
    }

    #[test]
    fn model_section_draws_the_dl_patterns() {
        let mut m = String::new();
        m += "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n";
        m += "# cs: {\"record\":\"model-geometry\",\"level\":\"L2\",\"size\":1048576,\"line\":64,\"sets\":1024,\"ways\":16,\"sharing\":\"shared\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":2,\"source\":\"model\"}\n";
        let mut id = 0;
        let mut phase = |m: &mut String, name: &str, counts: &[(&str, u64, u64)]| {
            id += 1;
            for (level, hits, misses) in counts {
                *m += &format!("# cs: {{\"record\":\"model\",\"phase\":\"{name}\",\"phase_id\":{id},\"level\":\"{level}\",\"accesses\":{},\"hits\":{hits},\"misses\":{misses},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"prefetches\":0,\"prefetch_hits\":{},\"source\":\"model\"}}\n", hits + misses, if name.contains("/prfm/") { 900 } else { 0 });
            }
            id
        };
        // kv-paged: 512 B per token; the L1D holds 64 tokens. Block 8 misses earlier.
        for (variant, block, extra) in [("scan-contiguous", 256, 0), ("scan-paged", 8, 100), ("scan-paged", 64, 0)] {
            for t in [32u64, 64, 128] {
                let l1 = if t > 64 { 8 * t } else { extra };
                phase(
                    &mut m,
                    &format!("kv-paged/{variant}/normal-wb/{}/tokens={t}/block={block}", t * 512),
                    &[("L1D", 8 * t, l1), ("L2", l1, 0)],
                );
            }
        }
        // kv-quant: fp16 and int8 with their layouts.
        let mut run = RUN.to_string();
        for (dt, bytes, per_block) in [("fp16", 2, 8192), ("int8", 1, 4112)] {
            run += &format!("# cs: {{\"record\":\"kv-layout\",\"bench\":\"kv-quant\",\"dtype\":\"{dt}\",\"dtype_bytes\":{bytes},\"block\":16,\"layers\":4,\"kv_heads\":2,\"head_dim\":64,\"bytes_per_token\":{},\"scale_bytes\":0,\"bytes_per_block\":{},\"scan_bytes_per_block\":{per_block}}}\n", 2048 / bytes, 4 * per_block);
            for t in [1024u64, 2048, 4096, 8192] {
                let fits = t * per_block / 16 <= 1 << 20;
                phase(
                    &mut m,
                    &format!("kv-quant/scan-{dt}/normal-wb/{}/tokens={t}/block=16", t * per_block / 16),
                    &[("L1D", 100, 8 * t), ("L2", 8 * t, if fits { 0 } else { 8 * t })],
                );
            }
        }
        // alloc-reuse below and above the L1D; its metric says reps=2.
        for (size, reuse) in [(16384u64, 0u64), (65536, 2048)] {
            let name = format!("alloc-reuse/reuse/normal-wb/{size}");
            run += &format!("# cs: {{\"record\":\"metric\",\"bench\":\"alloc-reuse\",\"variant\":\"reuse\",\"attr\":\"normal-wb\",\"bytes\":{size},\"params\":{{}},\"phase\":\"{name}\",\"reps\":2,\"min\":1,\"median\":1,\"max\":1,\"mad\":0,\"unit\":\"MB/s\",\"source\":\"cntvct\",\"emulated\":true}}\n");
            phase(&mut m, &name, &[("L1D", 100, reuse), ("L2", reuse, 0)]);
            phase(&mut m, &format!("alloc-reuse/fresh/normal-wb/{size}"), &[("L1D", 100, size / 64), ("L2", 0, size / 64)]);
        }
        phase(
            &mut m,
            "kv-prefix/shared/normal-wb/1179648/sequences=4/prefix=512/suffix=64/block=16",
            &[("L1D", 58771, 18463), ("L2", 18463, 0)],
        );
        phase(
            &mut m,
            "kv-prefix/private/normal-wb/1179648/sequences=4/prefix=512/suffix=64/block=16",
            &[("L1D", 58771, 18463), ("L2", 12, 18451)],
        );
        for v in ["none", "prfm", "double"] {
            let p = phase(
                &mut m,
                &format!("stream-double/{v}/normal-wb/524288/batch=65536/batches=8"),
                &[("L1D", 49000, if v == "prfm" { 8000 } else { 16000 }), ("L2", 16000, 1)],
            );
            if v == "double" {
                m += &format!("# cs: {{\"record\":\"model-coherence\",\"phase\":\"x\",\"phase_id\":{p},\"cpu\":0,\"invalidations\":1,\"interventions\":2550,\"source\":\"model\"}}\n");
                run += "# cs: {\"record\":\"metric\",\"bench\":\"stream-double\",\"variant\":\"double\",\"attr\":\"normal-wb\",\"bytes\":524288,\"params\":{\"batch\":65536,\"batches\":8},\"phase\":\"stream-double/double/normal-wb/524288/batch=65536/batches=8\",\"reps\":1,\"min\":1,\"median\":1,\"max\":1,\"mad\":0,\"unit\":\"MB/s\",\"source\":\"cntvct\",\"emulated\":true,\"cores\":2}\n";
            }
        }
        let r = build(&Log::from_bytes("run.log", run.as_bytes()), Some(&Log::from_bytes("m", m.as_bytes())));
        let fig = |stem: &str| {
            r.figures
                .iter()
                .find(|(s, _)| s.ends_with(stem))
                .map(|(_, svg)| svg.as_str())
                .unwrap_or_else(|| panic!("no {stem} in {:?}", r.figures.iter().map(|f| &f.0).collect::<Vec<_>>()))
        };
        let paged = fig("model-kv-paged-l1d");
        for needle in [
            "kv-paged: L1D misses per token vs cached tokens, per block size [model]",
            "contiguous",
            "block 8",
            "block 64",
            "L1D holds 64 tokens",
            "L2 holds 2048 tokens",
        ] {
            assert!(paged.contains(needle), "kv-paged: {needle}");
        }
        assert!(r.figures.iter().all(|(s, _)| !s.ends_with("model-kv-paged-l2")), "the L2 holds the sweep: no L2 figure");
        let md = r.render(Format::Markdown);
        assert!(md.contains("the sweep's largest scan (128 tokens) fits the L2 (2048 tokens): 0 L2 misses"), "{md}");
        let quant = fig("model-kv-quant-l2");
        for needle in ["per dtype [model]", "fp16 holds 2048 tokens (knee 4096)", "int8 holds 4080 tokens (knee 4096)"] {
            assert!(quant.contains(needle), "kv-quant: {needle}");
        }
        let reuse = fig("model-alloc-reuse");
        for needle in ["reuse vs fresh memory [model]", "reuse L1D", "fresh L2", "L1D CCSIDR", "L2 CCSIDR"] {
            assert!(reuse.contains(needle), "alloc-reuse: {needle}");
        }
        // 2048 misses over 1024 lines and 2 windows: one miss per line.
        let rows = crate::bench::alloc_reuse::reuse_per_line(
            &crate::records::extract(&Log::from_bytes("r", (run.clone() + &m).as_bytes())).0,
            &ModelData::from_records(&crate::records::extract(&Log::from_bytes("m", m.as_bytes())).0),
        );
        assert!(rows.iter().any(|p| p.bytes == 65536 && p.level == "L1D" && p.reuse == 1.0 && p.fresh == 1.0), "{rows:?}");
        assert!(rows.iter().any(|p| p.bytes == 16384 && p.level == "L2" && p.reuse == 0.0 && p.fresh == 1.0), "{rows:?}");
        let prefix = fig("model-kv-prefix");
        for needle in ["shared vs private prefix [model]", "shared prefix", "private prefix", "L2 hits", "L2 misses"] {
            assert!(prefix.contains(needle), "kv-prefix: {needle}");
        }
        let double = fig("model-stream-double");
        for needle in [
            "none / PRFM / double [model]",
            "none (1 core)",
            "double (2 cores)",
            "L1D prefetch hits",
            "lines from the other core",
            "double (2 cores) / lines from the other core: 2550",
        ] {
            assert!(double.contains(needle), "stream-double: {needle}");
        }
    }

    #[test]
    fn problems_are_listed() {
        let run = Log::from_bytes("bad.log", b"KTAP version 1\n1..2\nok 1 a\n");
        let md = build(&run, None).render(Format::Markdown);
        assert!(md.contains("## Validation problems"), "{md}");
        assert!(md.contains("bad.log:3: the top-level plan is 1..2"), "{md}");
    }

    #[test]
    fn format_from_path() {
        assert_eq!(Format::from_path("r.md").unwrap(), Format::Markdown);
        assert_eq!(Format::from_path("R.HTML").unwrap(), Format::Html);
        assert!(Format::from_path("r.pdf").unwrap_err().0.contains("must end in .md or .html"));
    }
}
