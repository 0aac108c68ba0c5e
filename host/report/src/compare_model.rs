//! `compare-model`: a board's PMU counts per phase (`pmu` records) beside the cache model's
//! prediction for the same phases (a model log made under the board's profile), with the error,
//! as a table and a figure; and `synth-board-log`, which makes a board log from an emulator log
//! and its model log (the tool's test input, never presented as silicon).
//!
//! Each PMU event of `cachescope_arch::pmu` pairs with the model count that predicts it
//! ([`prediction`]); events the model does not predict (INST_RETIRED, L1D_TLB_REFILL) are listed
//! without an error. Counts are compared per measured window: a `pmu` record counts an event over
//! `windows` of the phase's `reps` windows, the model's phase covers all `reps`, so the model's
//! count is scaled by `windows / reps`. Error = (model − PMU) ÷ PMU, in %, as gem5's validation
//! papers quote it.

use crate::input::Log;
use crate::model_data::{ModelData, Phase};
use crate::records::{self, Object, Record};
use crate::svg::{BarChart, Labels};
use cachescope_arch::pmu::PmuEvent;
use cachescope_arch::record::{self as contract, Builder};
use std::fmt::Write;

/// What the model predicts for one PMU event, and how well the pairing holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predictor {
    /// A level's accesses (`model` record `accesses`).
    Accesses(&'static str),
    /// A level's misses (its refills).
    Misses(&'static str),
    /// A level's write-backs.
    Writebacks(&'static str),
    /// Demand data accesses of the phase, bypassing ones included (`model-time`'s
    /// `data_accesses`: one per L1D line an access touches, not per instruction).
    DataAccesses,
    /// Accesses past the last modelled level: its misses and write-backs, and the bypassing
    /// accesses.
    Bus,
    /// The phase's modelled data-access time, cycles (`model-time`: no overlap, an upper bound
    /// for streaming code; instruction execution is not modelled).
    Cycles,
}

impl Predictor {
    /// What the prediction is, for the table's key.
    pub fn describe(self) -> String {
        match self {
            Predictor::Accesses(l) => format!("{l} accesses"),
            Predictor::Misses(l) => format!("{l} misses"),
            Predictor::Writebacks(l) => format!("{l} write-backs"),
            Predictor::DataAccesses => "data accesses per line touched (model-time)".into(),
            Predictor::Bus => "last level's misses + write-backs + bypassing accesses".into(),
            Predictor::Cycles => "modelled data-access cycles (model-time; no overlap, no instruction time)".into(),
        }
    }

    /// The model's count for the whole phase, when the phase has it.
    pub fn count(self, p: &Phase) -> Option<f64> {
        match self {
            Predictor::Accesses(l) => p.level(l).map(|c| c.accesses as f64),
            Predictor::Misses(l) => p.level(l).map(|c| c.misses as f64),
            Predictor::Writebacks(l) => p.level(l).map(|c| c.writebacks as f64),
            Predictor::DataAccesses => p.time.map(|t| t.data_accesses as f64),
            Predictor::Bus => {
                let last = p.data_levels().last()?;
                Some((last.misses + last.writebacks + p.bypass()) as f64)
            }
            Predictor::Cycles => p.time.map(|t| t.cycles).filter(|c| c.is_finite()),
        }
    }
}

/// The model count that predicts `e`, if the model has one.
pub const fn prediction(e: PmuEvent) -> Option<Predictor> {
    Some(match e {
        PmuEvent::CpuCycles => Predictor::Cycles,
        PmuEvent::InstRetired | PmuEvent::L1dTlbRefill => return None,
        PmuEvent::L1dCache => Predictor::Accesses("L1D"),
        PmuEvent::L1dCacheRefill => Predictor::Misses("L1D"),
        PmuEvent::L1dCacheWb => Predictor::Writebacks("L1D"),
        PmuEvent::L2dCache => Predictor::Accesses("L2"),
        PmuEvent::L2dCacheRefill => Predictor::Misses("L2"),
        PmuEvent::L2dCacheWb => Predictor::Writebacks("L2"),
        PmuEvent::L3dCacheRefill => Predictor::Misses("L3"),
        PmuEvent::MemAccess => Predictor::DataAccesses,
        PmuEvent::BusAccess => Predictor::Bus,
    })
}

/// One event of one phase, per measured window.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The phase.
    pub phase: String,
    /// The event.
    pub event: PmuEvent,
    /// The PMU's count per window it was counted in.
    pub pmu: f64,
    /// The model's count per window (`None`: no prediction, or the model log lacks the phase
    /// or the level).
    pub model: Option<f64>,
}

impl Row {
    /// (model − PMU) ÷ PMU, %; `None` without a prediction or with a PMU count of 0.
    pub fn error_pct(&self) -> Option<f64> {
        let m = self.model?;
        (self.pmu > 0.0).then(|| (m - self.pmu) / self.pmu * 100.0)
    }
}

/// The comparison of a board log with a model log.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The board log's board (`boot` record).
    pub board: String,
    /// Its core (`boot` record).
    pub cpu: String,
    /// The counts' source (`pmu`, or `synthetic`).
    pub source: String,
    /// The counts were made under an emulator.
    pub emulated: bool,
    /// The model log's profile.
    pub profile: String,
    /// Rows, phase by phase in the board log's order, events in catalogue order.
    pub rows: Vec<Row>,
    /// Phases of the board log the model log lacks.
    pub unmatched: Vec<String>,
}

/// Compares the `pmu` records of `board` with the model's phases of the same name. Refuses a
/// board log without `pmu` records, and a model log made under another Pi profile than the
/// board's (its prediction would be of another core).
pub fn compare(board: &[Record], model: &ModelData) -> Result<Comparison, String> {
    let boot = board.iter().find_map(|r| r.view::<contract::BootView<_>>());
    let board_name = boot.as_ref().and_then(|b| b.board()).unwrap_or("unknown").to_string();
    let cpu = boot.as_ref().and_then(|b| b.cpu()).unwrap_or("unknown").to_string();
    let profile = model.profile_name().ok_or("the model log has no model-profile or model-geometry record: not a cache-model log")?;
    let pmus: Vec<&Record> = board.iter().filter(|r| r.kind() == contract::PMU.name).collect();
    if pmus.is_empty() {
        return Err(
            "the board log has no pmu records: its run had no PMU usable at EL1 (boot.pmu-events says why), or predates them".into()
        );
    }
    let pi = |n: &str| n == "rpi4" || n == "rpi5";
    if pi(&board_name) && profile != board_name {
        return Err(format!(
            "the model log was made under profile `{profile}`, the board is `{board_name}`: make it with QEMU_CACHE_MODEL={board_name} (docs/raspberry-pi.md)"
        ));
    }
    let mut c =
        Comparison { board: board_name, cpu, source: String::new(), emulated: false, profile, rows: Vec::new(), unmatched: Vec::new() };
    for r in pmus {
        let v = r.view::<contract::PmuView<_>>().ok_or_else(|| format!("line {}: not a pmu record", r.line))?;
        let line = r.line;
        let phase = v.phase().ok_or(format!("line {line}: pmu record without phase"))?.to_string();
        let reps = v.reps().filter(|&n| n > 0).ok_or(format!("line {line}: pmu record without reps"))?;
        let list = |k: &str| -> Result<Vec<u64>, String> {
            r.obj
                .get(k)
                .and_then(|v| v.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
                .ok_or(format!("line {line}: pmu record without `{k}`"))
        };
        let (events, counts, windows) = (list("events")?, list("counts")?, list("windows")?);
        if events.len() != counts.len() || events.len() != windows.len() {
            return Err(format!("line {line}: pmu record's events, counts and windows differ in length"));
        }
        if c.source.is_empty() {
            c.source = v.source().unwrap_or("").to_string();
            c.emulated = v.emulated().unwrap_or(false);
        }
        let mp = model.phases.iter().find(|p| p.name == phase);
        if mp.is_none() {
            c.unmatched.push(phase.clone());
        }
        for ((ev, n), w) in events.iter().zip(&counts).zip(&windows) {
            let Some(event) = PmuEvent::from_number(*ev) else { continue };
            if *w == 0 {
                continue;
            }
            let scale = *w as f64 / reps as f64;
            let model_count = mp.and_then(|p| prediction(event)?.count(p)).map(|m| m * scale / *w as f64);
            c.rows.push(Row { phase: phase.clone(), event, pmu: *n as f64 / *w as f64, model: model_count });
        }
    }
    Ok(c)
}

impl Comparison {
    /// Mean absolute error per event over the phases that have one, in catalogue order.
    pub fn mean_abs_error(&self) -> Vec<(PmuEvent, f64, usize)> {
        PmuEvent::ALL
            .into_iter()
            .filter_map(|e| {
                let errs: Vec<f64> = self.rows.iter().filter(|r| r.event == e).filter_map(Row::error_pct).collect();
                (!errs.is_empty()).then(|| (e, errs.iter().map(|x| x.abs()).sum::<f64>() / errs.len() as f64, errs.len()))
            })
            .collect()
    }

    /// Where the counts come from, for titles.
    fn counts_source(&self) -> String {
        let mut s = format!("{} ({}), `pmu` records of source `{}`", self.board, self.cpu, self.source);
        if self.source == contract::PMU_SOURCE_SYNTHETIC {
            s.push_str(": SYNTHETIC, made from a model log; a test of the tool, not silicon");
        } else if self.emulated {
            s.push_str(": counted under an emulator, not silicon");
        }
        s
    }

    /// The table as text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "compare-model: PMU counts of {}", self.counts_source());
        let _ = writeln!(s, "  vs the cache model's prediction under profile `{}`", self.profile);
        let _ = writeln!(s, "  per measured window; error = (model - PMU) / PMU");
        let w = self.rows.iter().map(|r| r.phase.len()).max().unwrap_or(5).max(5);
        let _ = writeln!(s, "{:<w$}  {:<17} {:>14} {:>14} {:>9}", "phase", "event", "PMU", "model", "error");
        for r in &self.rows {
            let model = r.model.map_or("-".to_string(), |m| format!("{m:.1}"));
            let err = r.error_pct().map_or("-".to_string(), |e| format!("{e:+.1}%"));
            let _ = writeln!(s, "{:<w$}  {:<17} {:>14.1} {:>14} {:>9}", r.phase, r.event.name(), r.pmu, model, err);
        }
        let mae = self.mean_abs_error();
        if !mae.is_empty() {
            let _ = writeln!(s, "mean absolute error:");
            for (e, m, n) in mae {
                let how = prediction(e).map(Predictor::describe).unwrap_or_default();
                let _ = writeln!(s, "  {:<17} {m:6.1}% over {n} phase(s)  (model: {how})", e.name());
            }
        }
        let none: Vec<&str> = PmuEvent::ALL
            .iter()
            .filter(|e| prediction(**e).is_none() && self.rows.iter().any(|r| r.event == **e))
            .map(|e| e.name())
            .collect();
        if !none.is_empty() {
            let _ = writeln!(s, "not predicted by the model: {}", none.join(", "));
        }
        if !self.unmatched.is_empty() {
            let _ = writeln!(
                s,
                "{} phase(s) of the board log not in the model log (other kernel arguments?): {}",
                self.unmatched.len(),
                self.unmatched.join(", ")
            );
        }
        s
    }

    /// The figure: error % per phase, one bar per predicted event.
    pub fn figure(&self) -> String {
        let mut phases: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !phases.contains(&r.phase.as_str()) {
                phases.push(&r.phase);
            }
        }
        let series = PmuEvent::ALL
            .into_iter()
            .filter(|e| self.rows.iter().any(|r| r.event == *e && r.error_pct().is_some()))
            .map(|e| {
                let vals =
                    phases.iter().map(|p| self.rows.iter().find(|r| r.event == e && r.phase == *p).and_then(Row::error_pct)).collect();
                (e.name().to_string(), vals)
            })
            .collect();
        let chart = BarChart {
            labels: Labels {
                title: format!("Cache model (profile {}) vs PMU, per phase", self.profile),
                subtitle: self.counts_source(),
                warning: (self.emulated || self.source == contract::PMU_SOURCE_SYNTHETIC)
                    .then(|| "not silicon: the PMU counts are synthetic or emulated".to_string()),
                x: "phase".into(),
                y: "error (model - PMU) / PMU, %".into(),
            },
            categories: phases.iter().map(|p| p.to_string()).collect(),
            series,
        };
        chart.render()
    }
}

/// A synthetic board log: `emulator`'s lines unchanged (its own `pmu` records left out), with a
/// `pmu` record of source `synthetic` before each `metric` record whose phase the model log has:
/// every predicted event, its count the model's prediction over the metric's `reps` windows times
/// its factor in `factors` (1 for the others), so that `compare-model` must find an error of
/// exactly `1/factor − 1` for it. `counters` is the number of events (one group).
pub fn synthesize(emulator: &Log, model: &ModelData, factors: &[(PmuEvent, f64)]) -> Result<String, String> {
    let mut out = String::new();
    let mut made = 0;
    for l in &emulator.lines {
        let rec = records::parse_line(&l.text);
        if let Some(Ok(obj)) = &rec {
            if obj.kind() == contract::PMU.name {
                continue;
            }
            if let Some(m) = contract::MetricView::of(obj) {
                if let Some(line) = pmu_line(&l.text, obj, m, model, factors) {
                    out.push_str(&line);
                    out.push('\n');
                    made += 1;
                }
            }
        }
        out.push_str(&l.text);
        out.push('\n');
    }
    if made == 0 {
        return Err("no metric of the emulator log has a phase in the model log: were they made by the same run?".into());
    }
    Ok(out)
}

/// The synthetic `pmu` record line for metric `m` (printed in `text`), indented as it is.
fn pmu_line(
    text: &str,
    _obj: &Object,
    m: contract::MetricView<'_, Object>,
    model: &ModelData,
    factors: &[(PmuEvent, f64)],
) -> Option<String> {
    let phase = m.phase()?;
    let reps = m.reps().filter(|&r| r > 0)?;
    let p = model.phases.iter().find(|p| p.name == phase)?;
    let mut events = Vec::new();
    let mut counts = Vec::new();
    for e in PmuEvent::ALL {
        let Some(n) = prediction(e).and_then(|pr| pr.count(p)) else { continue };
        let f = factors.iter().find(|(x, _)| *x == e).map_or(1.0, |(_, f)| *f);
        events.push(u64::from(e.number()));
        counts.push((n * f).round() as u64);
    }
    let windows = vec![reps; events.len()];
    let rec = contract::Pmu::new()
        .phase(phase)
        .reps(reps)
        .counters(events.len() as u64)
        .events(&events)
        .counts(&counts)
        .windows(&windows)
        .source(contract::PMU_SOURCE_SYNTHETIC)
        .emulated(true)
        .finish();
    let indent = &text[..text.find(contract::PREFIX)?];
    Some(format!("{indent}{}{rec}", contract::PREFIX))
}

/// Parses `EVENT=FACTOR` (an event's Arm name, a positive factor).
pub fn parse_factor(s: &str) -> Result<(PmuEvent, f64), String> {
    let (name, f) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected EVENT=FACTOR, e.g. L1D_CACHE_REFILL=1.1"))?;
    let e = PmuEvent::ALL
        .into_iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| format!("`{name}`: not an event of the catalogue ({})", PmuEvent::ALL.map(|e| e.name()).join(", ")))?;
    let f: f64 =
        f.parse().ok().filter(|f: &f64| f.is_finite() && *f > 0.0).ok_or_else(|| format!("`{f}`: the factor must be a positive number"))?;
    Ok((e, f))
}
