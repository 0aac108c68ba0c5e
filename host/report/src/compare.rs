//! `compare`: metrics of a run against a baseline file, with per-metric tolerances.
//!
//! Baseline format (JSON, written by `--write-baseline`, editable by hand):
//! ```json
//! {
//!   "format": "cachescope-baseline",
//!   "version": 1,
//!   "default_tolerance_pct": 5,
//!   "run": {"args": "only=bench timer=pmccntr", "cpu": "Cortex-A72", "machine": "qemu-virt", "entry_el": 1,
//!           "emulated": true, "qemu": "10.0.2", "timer": "pmccntr"},
//!   "metrics": {
//!     "latency/chase/wb/4096 [cntvct ns]": { "median": 12.5, "better": "lower", "emulated": true },
//!     "l1d-miss/chase/wb/65536 [model misses]": { "median": 1024, "better": "lower", "tolerance_pct": 0, "emulated": true }
//!   }
//! }
//! ```
//! Keys are metric keys ([`crate::metrics`]). Per entry: `median` (required), `better`
//! (`lower` or `higher`, default `lower`), `tolerance_pct` and `tolerance_abs` (optional),
//! `emulated` (optional). The allowed deviation is max(|baseline| × pct / 100, abs), where pct
//! is the entry's `tolerance_pct`, else `--tolerance`, else the file's
//! `default_tolerance_pct`, else 5 %. A tolerance of 0 (and no `tolerance_abs`) is exact: any
//! change in either direction fails (deterministic figures under `-icount` or the cache
//! model). Otherwise only a change in the worse direction beyond the tolerance fails; a
//! better one is reported as an improvement.
//!
//! Failures: regression (or any change under an exact tolerance), a baseline metric missing from
//! the run, a `null` measured value, and an `emulated` flag that differs from the baseline.
//! Metrics of the run that the baseline lacks are listed as new and do not fail.
//!
//! `run` (optional; baselines written before it existed have none) records the parameters the
//! baseline's log was made with ([`RunInfo`]). When a log's parameters differ from them in a
//! field that decides what is measured (arguments, timer, CPU, machine, emulation) and the
//! comparison fails, [`RunCheck`] explains that in two lines instead of the per-metric list
//! (hundreds of MISSING and new lines say nothing more). A different QEMU version alone is
//! noted before the per-metric list.

use crate::input::{Error, Result};
use crate::metrics::{sig, Metric};
use crate::runinfo::RunInfo;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// The baseline file's `format` value.
pub const FORMAT: &str = "cachescope-baseline";
/// Default relative tolerance in percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 5.0;

/// Which direction is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Smaller is better (time, cycles, misses).
    Lower,
    /// Larger is better (bandwidth, hits).
    Higher,
}

impl Better {
    /// Guesses from a unit: throughputs (`…/s`, `…per_s`), bytes per load and hit counts are
    /// higher-is-better; everything else lower-is-better.
    pub fn from_unit(unit: &str) -> Better {
        let u = unit.to_ascii_lowercase();
        if u.contains("/s") || u.contains("per_s") || u.contains("/load") || u.contains("per_load") || u.starts_with("hit") {
            Better::Higher
        } else {
            Better::Lower
        }
    }

    fn name(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

/// One baseline entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The baseline median.
    pub median: f64,
    /// Better direction.
    pub better: Better,
    /// Per-metric relative tolerance (percent).
    pub tolerance_pct: Option<f64>,
    /// Per-metric absolute tolerance (in the metric's unit).
    pub tolerance_abs: Option<f64>,
    /// Emulated flag of the baseline run.
    pub emulated: Option<bool>,
}

/// A parsed baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// The file's default tolerance (percent).
    pub default_tolerance_pct: Option<f64>,
    /// What the baseline's log was made with (absent in older baselines).
    pub run: Option<RunInfo>,
    /// Entries by metric key, sorted.
    pub metrics: BTreeMap<String, Entry>,
}

fn num_field(o: &Map<String, Value>, k: &str, ctx: &str) -> Result<Option<f64>> {
    let negative_ok = k == "median";
    match o.get(k) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && (negative_ok || x >= 0.0) => Ok(Some(x)),
            _ => Err(Error(format!("{ctx}: \"{k}\" must be a {}number, found {v}", if negative_ok { "" } else { "non-negative " }))),
        },
    }
}

impl Baseline {
    /// Parses baseline JSON text; `name` is used in messages.
    pub fn parse(name: &str, text: &str) -> Result<Baseline> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error(format!("{name}: not valid JSON: {e}")))?;
        let Value::Object(top) = v else {
            return Err(Error(format!("{name}: a baseline is a JSON object")));
        };
        match top.get("format") {
            Some(Value::String(f)) if f == FORMAT => {}
            other => {
                return Err(Error(format!(
                    "{name}: \"format\" must be \"{FORMAT}\", found {}",
                    other.map_or("nothing".to_string(), |v| v.to_string())
                )))
            }
        }
        match top.get("version").and_then(Value::as_u64) {
            Some(1) => {}
            _ => return Err(Error(format!("{name}: \"version\" must be 1"))),
        }
        let default_tolerance_pct = num_field(&top, "default_tolerance_pct", name)?;
        let run = top.get("run").map(|v| RunInfo::from_json(v, name)).transpose()?;
        let Some(Value::Object(ms)) = top.get("metrics") else {
            return Err(Error(format!("{name}: no \"metrics\" object")));
        };
        let mut metrics = BTreeMap::new();
        for (key, e) in ms {
            let ctx = format!("{name}: metric '{key}'");
            let Value::Object(e) = e else {
                return Err(Error(format!("{ctx}: entry must be an object")));
            };
            let median = num_field(e, "median", &ctx)?.ok_or_else(|| Error(format!("{ctx}: no \"median\"")))?;
            let better = match e.get("better") {
                None => Better::Lower,
                Some(Value::String(s)) if s == "lower" => Better::Lower,
                Some(Value::String(s)) if s == "higher" => Better::Higher,
                Some(v) => return Err(Error(format!("{ctx}: \"better\" must be \"lower\" or \"higher\", found {v}"))),
            };
            let emulated = match e.get("emulated") {
                None => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(v) => return Err(Error(format!("{ctx}: \"emulated\" must be true or false, found {v}"))),
            };
            let entry = Entry {
                median,
                better,
                tolerance_pct: num_field(e, "tolerance_pct", &ctx)?,
                tolerance_abs: num_field(e, "tolerance_abs", &ctx)?,
                emulated,
            };
            metrics.insert(key.clone(), entry);
        }
        Ok(Baseline { default_tolerance_pct, run, metrics })
    }

    /// Reads and parses a baseline file.
    pub fn load(path: &str) -> Result<Baseline> {
        let text = std::fs::read_to_string(path).map_err(|e| Error(format!("{path}: cannot read baseline: {e}")))?;
        Baseline::parse(path, &text)
    }

    /// A baseline from a run's metrics. Model figures (`source` model) get `tolerance_pct` 0;
    /// the others use `default_pct`. Metrics without a value are left out (returned as notes).
    pub fn from_metrics(metrics: &[Metric], default_pct: f64) -> (Baseline, Vec<String>) {
        let mut out = BTreeMap::new();
        let mut notes = Vec::new();
        for m in metrics {
            let Some(median) = m.median else {
                notes.push(format!("{}: '{}' has no value; left out of the baseline", m.line, m.key));
                continue;
            };
            let tolerance_pct = if m.key.source == "model" { Some(0.0) } else { None };
            out.insert(
                m.key.to_string(),
                Entry { median, better: Better::from_unit(&m.key.unit), tolerance_pct, tolerance_abs: None, emulated: m.emulated },
            );
        }
        (Baseline { default_tolerance_pct: Some(default_pct), run: None, metrics: out }, notes)
    }

    /// The baseline as JSON text (one metric per line, keys sorted).
    pub fn to_json(&self) -> String {
        let mut s = String::from("{\n");
        let _ = writeln!(s, "  \"format\": \"{FORMAT}\",\n  \"version\": 1,");
        if let Some(d) = self.default_tolerance_pct {
            let _ = writeln!(s, "  \"default_tolerance_pct\": {},", json!(d));
        }
        if let Some(r) = self.run.as_ref().filter(|r| !r.is_empty()) {
            let _ = writeln!(s, "  \"run\": {},", r.to_json());
        }
        s.push_str("  \"metrics\": {");
        for (i, (k, e)) in self.metrics.iter().enumerate() {
            let mut o = Map::new();
            o.insert("median".into(), json!(e.median));
            o.insert("better".into(), json!(e.better.name()));
            if let Some(t) = e.tolerance_pct {
                o.insert("tolerance_pct".into(), json!(t));
            }
            if let Some(t) = e.tolerance_abs {
                o.insert("tolerance_abs".into(), json!(t));
            }
            if let Some(b) = e.emulated {
                o.insert("emulated".into(), json!(b));
            }
            let _ = write!(s, "{}\n    {}: {}", if i == 0 { "" } else { "," }, json!(k), Value::Object(o));
        }
        s.push_str(if self.metrics.is_empty() { "}\n}\n" } else { "\n  }\n}\n" });
        s
    }
}

/// Parses `--tolerance`: `5%`, `5` (both percent) or `0` (exact).
pub fn parse_tolerance(s: &str) -> Result<f64> {
    let n = s.trim().strip_suffix('%').unwrap_or(s.trim());
    match n.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(Error(format!("--tolerance '{s}': expected a percentage such as 5% (0 = exact)"))),
    }
}

/// What the comparison found for one key.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// Worse than the baseline beyond the tolerance (or changed under an exact tolerance).
    Regression {
        /// Baseline value.
        base: f64,
        /// Measured value.
        measured: f64,
        /// Allowed deviation description.
        tolerance: String,
        /// Better direction.
        better: Better,
        /// True when the tolerance is exact and the value moved in the better direction.
        exact_change: bool,
    },
    /// In the baseline, not in the run.
    Missing {
        /// Baseline value.
        base: f64,
    },
    /// Measured as `null`.
    NoValue {
        /// Baseline value.
        base: f64,
    },
    /// The emulated flag differs.
    EmulationMismatch {
        /// Baseline flag.
        base: bool,
        /// Run flag (None = absent).
        run: Option<bool>,
    },
    /// Better than the baseline beyond the tolerance (does not fail).
    Improved {
        /// Baseline value.
        base: f64,
        /// Measured value.
        measured: f64,
        /// Allowed deviation description.
        tolerance: String,
    },
    /// In the run, not in the baseline (does not fail).
    New {
        /// Measured value.
        measured: Option<f64>,
    },
}

impl Finding {
    /// Whether this finding fails the comparison.
    pub fn fails(&self) -> bool {
        !matches!(self, Finding::Improved { .. } | Finding::New { .. })
    }
}

/// The result of a comparison.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Findings by key, in key order.
    pub findings: Vec<(String, Finding)>,
    /// Baseline metrics within tolerance.
    pub within: usize,
}

impl Comparison {
    /// Whether anything failed.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|(_, f)| f.fails())
    }

    /// The report, one line per finding plus a summary line.
    pub fn render(&self) -> String {
        self.render_findings(|_| true) + &self.summary("")
    }

    /// One line per finding for which `keep` holds.
    pub fn render_findings(&self, keep: impl Fn(&Finding) -> bool) -> String {
        let mut s = String::new();
        for (key, f) in self.findings.iter().filter(|(_, f)| keep(f)) {
            let line = match f {
                Finding::Regression { base, measured, tolerance, better, exact_change } => {
                    let what = if *exact_change { "CHANGED   " } else { "REGRESSION" };
                    format!(
                        "{what} {key}: baseline {}, measured {} ({}), tolerance {tolerance} ({} is better)",
                        sig(*base, 6),
                        sig(*measured, 6),
                        rel(*base, *measured),
                        better.name()
                    )
                }
                Finding::Missing { base } => format!("MISSING    {key}: baseline {}, not measured in this run", sig(*base, 6)),
                Finding::NoValue { base } => format!("NO VALUE   {key}: baseline {}, measured null", sig(*base, 6)),
                Finding::EmulationMismatch { base, run } => format!(
                    "EMULATION  {key}: baseline emulated={base}, run emulated={}",
                    run.map_or("(absent)".to_string(), |b| b.to_string())
                ),
                Finding::Improved { base, measured, tolerance } => {
                    format!("improved   {key}: baseline {}, measured {} ({}), tolerance {tolerance} (not a failure; refresh with --write-baseline)", sig(*base, 6), sig(*measured, 6), rel(*base, *measured))
                }
                Finding::New { measured } => format!(
                    "new        {key}: measured {} (not in the baseline; not a failure)",
                    measured.map_or("null".to_string(), |m| sig(m, 6))
                ),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    /// The summary line (`compare: N within tolerance, …: ok|FAIL`), `why` appended to it.
    pub fn summary(&self, why: &str) -> String {
        let mut s = String::new();
        let count = |p: fn(&Finding) -> bool| self.findings.iter().filter(|(_, f)| p(f)).count();
        let regressions = count(|f| matches!(f, Finding::Regression { .. }));
        let missing = count(|f| matches!(f, Finding::Missing { .. }));
        let other = count(|f| matches!(f, Finding::NoValue { .. } | Finding::EmulationMismatch { .. }));
        let _ = writeln!(
            s,
            "compare: {} within tolerance, {regressions} regressed/changed, {missing} missing, {other} other failures, {} improved, {} new: {}{why}",
            self.within,
            count(|f| matches!(f, Finding::Improved { .. })),
            count(|f| matches!(f, Finding::New { .. })),
            if self.failed() { "FAIL" } else { "ok" }
        );
        s
    }
}

/// How a log's run parameters relate to its baseline's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCheck {
    /// Lines to print before the findings (empty when nothing differs).
    pub lines: Vec<String>,
    /// Whether a field that decides what is measured differs (arguments, timer, CPU, machine,
    /// emulation): then the per-metric findings of a failed comparison are left out.
    pub decisive: bool,
}

/// Compares the baseline's run parameters (`None` for an older baseline: nothing to say)
/// with the log's.
pub fn check_run(base: Option<&RunInfo>, log: &RunInfo) -> RunCheck {
    let Some(base) = base else {
        return RunCheck::default();
    };
    let diffs = base.differences(log);
    if diffs.is_empty() {
        return RunCheck::default();
    }
    let names: Vec<&str> = diffs.iter().map(|d| d.field).collect();
    let decisive = diffs.iter().any(|d| d.decisive);
    let lead = if decisive { "compare: this log was made differently from the baseline" } else { "compare: note" };
    RunCheck {
        lines: vec![
            format!(
                "{lead} ({} differ{}): baseline made with {}",
                names.join(", "),
                if names.len() == 1 { "s" } else { "" },
                base.describe(log)
            ),
            format!("compare: this log: {}", log.describe(base)),
        ],
        decisive,
    }
}

fn rel(base: f64, measured: f64) -> String {
    if base == 0.0 {
        return format!("{:+}", sig(measured - base, 4));
    }
    format!("{:+.2}%", (measured - base) / base.abs() * 100.0)
}

/// Compares `metrics` against `baseline`. `cli_pct` is `--tolerance` when given. Duplicate
/// keys in the run are an error (the comparison would be ambiguous).
pub fn compare(metrics: &[Metric], baseline: &Baseline, cli_pct: Option<f64>) -> Result<Comparison> {
    let mut run: HashMap<String, &Metric> = HashMap::new();
    for m in metrics {
        if let Some(prev) = run.insert(m.key.to_string(), m) {
            return Err(Error(format!(
                "line {}: metric key '{}' also at line {}: the run has two measurements with one key",
                m.line, m.key, prev.line
            )));
        }
    }
    let default_pct = cli_pct.or(baseline.default_tolerance_pct).unwrap_or(DEFAULT_TOLERANCE_PCT);
    let mut out = Comparison::default();
    for (key, e) in &baseline.metrics {
        let Some(m) = run.get(key) else {
            out.findings.push((key.clone(), Finding::Missing { base: e.median }));
            continue;
        };
        if let Some(b) = e.emulated {
            if m.emulated != Some(b) {
                out.findings.push((key.clone(), Finding::EmulationMismatch { base: b, run: m.emulated }));
                continue;
            }
        }
        let Some(measured) = m.median else {
            out.findings.push((key.clone(), Finding::NoValue { base: e.median }));
            continue;
        };
        let pct = e.tolerance_pct.unwrap_or(default_pct);
        let abs = e.tolerance_abs.unwrap_or(0.0);
        let allowed = (e.median.abs() * pct / 100.0).max(abs);
        let tolerance = if allowed == 0.0 {
            "exact".to_string()
        } else if abs == 0.0 {
            format!("{}%", sig(pct, 4))
        } else {
            format!("max({}%, {})", sig(pct, 4), sig(abs, 4))
        };
        let delta = measured - e.median;
        let worse = if e.better == Better::Lower { delta } else { -delta };
        let exact = allowed == 0.0;
        if (exact && measured != e.median) || (!exact && worse > allowed) {
            out.findings.push((
                key.clone(),
                Finding::Regression { base: e.median, measured, tolerance, better: e.better, exact_change: exact && worse < 0.0 },
            ));
        } else if !exact && -worse > allowed {
            out.findings.push((key.clone(), Finding::Improved { base: e.median, measured, tolerance }));
        } else {
            out.within += 1;
        }
    }
    let mut new: Vec<_> = run
        .iter()
        .filter(|(k, _)| !baseline.metrics.contains_key(*k))
        .map(|(k, m)| (k.clone(), Finding::New { measured: m.median }))
        .collect();
    new.sort_by(|a, b| a.0.cmp(&b.0));
    out.findings.extend(new);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Log;
    use crate::records::extract;

    fn metrics(lines: &[&str]) -> Vec<Metric> {
        let text: String = lines.iter().map(|l| format!("# cs: {l}\n")).collect();
        Metric::collect(&extract(&Log::from_bytes("t", text.as_bytes())).0).0
    }

    fn m(bench: &str, bytes: u64, median: f64, unit: &str, source: &str) -> String {
        format!(
            r#"{{"record":"metric","bench":"{bench}","variant":"v","attr":"wb","bytes":{bytes},"reps":3,"min":{median},"median":{median},"max":{median},"mad":0,"unit":"{unit}","source":"{source}","emulated":true}}"#
        )
    }

    fn run() -> Vec<Metric> {
        metrics(&[
            &m("latency", 4096, 10.0, "ns", "cntvct"),
            &m("stream", 65536, 1000.0, "MB/s", "cntvct"),
            &m("latency", 4096, 64.0, "misses", "model"),
        ])
    }

    /// What scripts/bench-regress used to prove at run time, as a unit test: with tolerance 0
    /// (an exact baseline, as the icount benchmark baseline is) every single metric moved by
    /// 1 % in either direction — and by the smallest step its 3 decimals can show — fails the
    /// comparison naming exactly that metric (an exact baseline fails on any change, better or
    /// worse); the unperturbed baseline passes.
    #[test]
    fn exact_baseline_rejects_any_single_perturbed_metric() {
        let run = run();
        let (exact, _) = Baseline::from_metrics(&run, 0.0);
        assert!(!compare(&run, &exact, Some(0.0)).unwrap().failed());
        for key in exact.metrics.keys() {
            for factor in [1.01, 0.99] {
                for step in [None, Some(0.001)] {
                    let mut b = exact.clone();
                    let e = b.metrics.get_mut(key).unwrap();
                    e.median = step.map_or(e.median * factor, |s| e.median + s * (factor - 1.0).signum());
                    let c = compare(&run, &b, Some(0.0)).unwrap();
                    let named: Vec<&(String, Finding)> = c.findings.iter().collect();
                    assert_eq!(named.len(), 1, "{key} moved by {factor}/{step:?}: exactly one finding, got {named:?}");
                    let (k, f) = named[0];
                    assert_eq!(k, key);
                    assert!(c.failed() && f.fails(), "{key} moved by {factor}/{step:?} passed: {f:?}");
                }
            }
        }
    }

    #[test]
    fn identical_run_passes_and_roundtrips() {
        let (b, notes) = Baseline::from_metrics(&run(), 5.0);
        assert!(notes.is_empty());
        let text = b.to_json();
        let parsed = Baseline::parse("b.json", &text).unwrap();
        assert_eq!(parsed, b);
        assert_eq!(parsed.metrics["latency/v/wb/4096 [model misses]"].tolerance_pct, Some(0.0));
        assert_eq!(parsed.metrics["stream/v/wb/65536 [cntvct MB/s]"].better, Better::Higher);
        let c = compare(&run(), &parsed, None).unwrap();
        assert!(!c.failed(), "{}", c.render());
        assert_eq!(c.within, 3);
        assert!(
            c.render().ends_with("compare: 3 within tolerance, 0 regressed/changed, 0 missing, 0 other failures, 0 improved, 0 new: ok\n"),
            "{}",
            c.render()
        );
    }

    #[test]
    fn perturbed_baseline_fails_with_a_clear_message() {
        let (mut b, _) = Baseline::from_metrics(&run(), 5.0);
        b.metrics.get_mut("latency/v/wb/4096 [cntvct ns]").unwrap().median = 9.0; // run is 11% slower
        b.metrics.get_mut("stream/v/wb/65536 [cntvct MB/s]").unwrap().median = 1100.0; // run is 9% slower
        b.metrics.get_mut("latency/v/wb/4096 [model misses]").unwrap().median = 65.0; // exact: any change fails
        let c = compare(&run(), &b, None).unwrap();
        assert!(c.failed());
        let r = c.render();
        assert!(
            r.contains("REGRESSION latency/v/wb/4096 [cntvct ns]: baseline 9, measured 10 (+11.11%), tolerance 5% (lower is better)"),
            "{r}"
        );
        assert!(
            r.contains(
                "REGRESSION stream/v/wb/65536 [cntvct MB/s]: baseline 1100, measured 1000 (-9.09%), tolerance 5% (higher is better)"
            ),
            "{r}"
        );
        assert!(
            r.contains("CHANGED    latency/v/wb/4096 [model misses]: baseline 65, measured 64 (-1.54%), tolerance exact (lower is better)"),
            "{r}"
        );
        assert!(r.contains("3 regressed/changed"), "{r}");
    }

    #[test]
    fn within_tolerance_and_improvement() {
        let (mut b, _) = Baseline::from_metrics(&run(), 5.0);
        b.metrics.get_mut("latency/v/wb/4096 [cntvct ns]").unwrap().median = 10.4; // 3.8% better: within
        b.metrics.get_mut("stream/v/wb/65536 [cntvct MB/s]").unwrap().median = 900.0; // 11% better
        let c = compare(&run(), &b, None).unwrap();
        assert!(!c.failed(), "{}", c.render());
        assert!(c.render().contains("improved   stream/v/wb/65536 [cntvct MB/s]"));
        // --tolerance overrides the file default but not a per-metric tolerance.
        let c = compare(&run(), &b, Some(0.0)).unwrap();
        assert!(c.failed());
        assert!(c.render().contains("CHANGED    latency/v/wb/4096 [cntvct ns]"), "{}", c.render());
    }

    #[test]
    fn missing_and_new_metrics() {
        let (b, _) = Baseline::from_metrics(&run(), 5.0);
        let fewer = metrics(&[
            &m("latency", 4096, 10.0, "ns", "cntvct"),
            &m("stream", 65536, 1000.0, "MB/s", "cntvct"),
            &m("kv", 1, 5.0, "ns", "cntvct"),
        ]);
        let c = compare(&fewer, &b, None).unwrap();
        assert!(c.failed());
        let r = c.render();
        assert!(r.contains("MISSING    latency/v/wb/4096 [model misses]: baseline 64, not measured in this run"), "{r}");
        assert!(r.contains("new        kv/v/wb/1 [cntvct ns]: measured 5"), "{r}");
    }

    #[test]
    fn null_value_emulation_mismatch_and_duplicates() {
        let (b, _) = Baseline::from_metrics(&run(), 5.0);
        let null = m("latency", 4096, 10.0, "ns", "cntvct").replace("\"median\":10", "\"median\":null");
        let hw = m("stream", 65536, 1000.0, "MB/s", "cntvct").replace("\"emulated\":true", "\"emulated\":false");
        let c = compare(&metrics(&[&null, &hw, &m("latency", 4096, 64.0, "misses", "model")]), &b, None).unwrap();
        let r = c.render();
        assert!(r.contains("NO VALUE   latency/v/wb/4096 [cntvct ns]: baseline 10, measured null"), "{r}");
        assert!(r.contains("EMULATION  stream/v/wb/65536 [cntvct MB/s]: baseline emulated=true, run emulated=false"), "{r}");
        let dup = m("latency", 4096, 10.0, "ns", "cntvct");
        let e = compare(&metrics(&[&dup, &dup]), &b, None).unwrap_err();
        assert!(e.0.contains("two measurements with one key"), "{e}");
    }

    #[test]
    fn bad_baselines() {
        for (text, needle) in [
            ("not json", "not valid JSON"),
            ("[]", "a baseline is a JSON object"),
            (r#"{"format":"x","version":1,"metrics":{}}"#, "\"format\" must be"),
            (r#"{"format":"cachescope-baseline","version":2,"metrics":{}}"#, "\"version\" must be 1"),
            (r#"{"format":"cachescope-baseline","version":1}"#, "no \"metrics\" object"),
            (r#"{"format":"cachescope-baseline","version":1,"metrics":{"k":{"better":"lower"}}}"#, "metric 'k': no \"median\""),
            (r#"{"format":"cachescope-baseline","version":1,"metrics":{"k":{"median":1,"better":"up"}}}"#, "\"better\" must be"),
            (
                r#"{"format":"cachescope-baseline","version":1,"metrics":{"k":{"median":1,"tolerance_pct":-1}}}"#,
                "\"tolerance_pct\" must be a non-negative number",
            ),
        ] {
            let e = Baseline::parse("b.json", text).unwrap_err();
            assert!(e.0.starts_with("b.json") && e.0.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn tolerance_parsing_and_abs() {
        assert_eq!(parse_tolerance("5%").unwrap(), 5.0);
        assert_eq!(parse_tolerance("0").unwrap(), 0.0);
        assert!(parse_tolerance("-1%").is_err());
        assert!(parse_tolerance("five").is_err());
        let (mut b, _) = Baseline::from_metrics(&run(), 0.0);
        let e = b.metrics.get_mut("latency/v/wb/4096 [cntvct ns]").unwrap();
        e.median = 9.5;
        e.tolerance_abs = Some(1.0);
        let c = compare(&run(), &b, None).unwrap();
        assert!(!c.failed(), "{}", c.render());
    }

    #[test]
    fn better_from_unit() {
        for (u, b) in [
            ("ns", Better::Lower),
            ("ticks", Better::Lower),
            ("MB/s", Better::Higher),
            ("bytes_per_s", Better::Higher),
            ("B/load", Better::Higher),
            ("misses", Better::Lower),
            ("hits", Better::Higher),
        ] {
            assert_eq!(Better::from_unit(u), b, "{u}");
        }
    }
}
