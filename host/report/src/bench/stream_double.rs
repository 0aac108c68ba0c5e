//! `stream-double` under the model: L1D/L2 misses without prefetch, with PRFM and double-buffered.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::dl::{hits, misses, windows_of};
use crate::model_data::ModelData;
use crate::records::Record;
use crate::svg::BarChart;
use cachescope_arch::bench::{Bench, Variant};
use serde_json::Value;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::StreamDouble
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let dbl = double(d);
        if !dbl.is_empty() {
            let parts: Vec<String> = dbl.iter().map(|(v, l1, l2, _)| format!("{v} {l1}/{l2}")).collect();
            out.push((Bench::StreamDouble.name(), format!("(model, L1D/L2 misses) {}", parts.join(", "))));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // Misses per window: none, PRFM, double-buffered.
        let (d, recs) = (cx.d, cx.run);
        // stream-double: demand misses per variant.
        let dbl = double_rows(recs, d);
        if !dbl.is_empty() {
            let cats: Vec<String> =
                dbl.iter().map(|r| format!("{} ({} core{})", r.variant, r.cores, if r.cores == 1 { "" } else { "s" })).collect();
            let mut series = vec![
                ("L1D demand misses".to_string(), dbl.iter().map(|r| Some(r.l1d_misses)).collect::<Vec<_>>()),
                ("L2 misses".into(), dbl.iter().map(|r| Some(r.l2_misses)).collect()),
                ("L1D prefetch hits".into(), dbl.iter().map(|r| Some(r.prefetch_hits)).collect()),
            ];
            if dbl.iter().any(|r| r.interventions > 0.0) {
                series.push(("lines from the other core".into(), dbl.iter().map(|r| Some(r.interventions)).collect()));
            }
            let chart = BarChart {
                labels: cx.labels(
                    "stream-double: misses per window: none / PRFM / double [model]",
                    "variant (cores)",
                    "count per window (every core)",
                ),
                categories: cats,
                series,
            };
            let single = if dbl.iter().any(|r| r.variant == Variant::Double.name()) {
                ""
            } else {
                " One core: the double-buffered variant did not run (it degrades to fill-then-consume, the `none` bars)."
            };
            cx.figure(
                "model-stream-double".into(),
                format!("Double-buffered loader (bench stream-double) under the cache model: each batch filled (STP) then consumed (LDP), with no prefetch, with PRFM PLDL1STRM ahead of the loads, and double-buffered (a second core fills buffer B while the boot core consumes A); counts per measured window over every core (bar = exact count ÷ windows). Lines from the other core are the model's coherence interventions.{single} {MODEL_SOURCE}."),
                chart,
            );
        }
    }

    fn model_checks(&self, run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let mut f = Vec::new();
        let dbl = double_rows(run, d);
        if let (Some(none), Some(prfm)) =
            (dbl.iter().find(|r| r.variant == Variant::None.name()), dbl.iter().find(|r| r.variant == Variant::Prfm.name()))
        {
            let double = dbl.iter().find(|r| r.variant == Variant::Double.name()).map_or(String::new(), |r| {
                format!("; double buffering {:.0} over {} cores ({:.0} lines from the other core)", r.l1d_misses, r.cores, r.interventions)
            });
            f.push((
                prfm.l1d_misses < none.l1d_misses && prfm.prefetch_hits > 0.0,
                format!(
                    "stream-double: L1D misses per window: none {:.0}, prfm {:.0} ({:.0} prefetch hits){double}: PRFM turns read misses into prefetch hits",
                    none.l1d_misses, prfm.l1d_misses, prfm.prefetch_hits
                ),
            ));
        }
        f
    }
}

/// The stream-double variants: (variant, L1D misses, L2 misses, L1D hits).
pub fn double(d: &ModelData) -> Vec<(String, u64, u64, u64)> {
    Bench::StreamDouble
        .variants()
        .iter()
        .filter_map(|&v| d.phases_of(v).next().map(|p| (v.name().to_string(), misses(p, "L1D"), misses(p, "L2"), hits(p, "L1D"))))
        .collect()
}

/// One stream-double variant under the model, per window.
#[derive(Debug, Clone, PartialEq)]
pub struct DoubleRow {
    /// `none`, `prfm` or `double`.
    pub variant: String,
    /// Cores that ran it (the metric's `cores` note; 1 without one).
    pub cores: u64,
    /// L1D demand misses (every core's).
    pub l1d_misses: f64,
    /// L2 misses.
    pub l2_misses: f64,
    /// Demand hits on lines a prefetch brought in (L1D).
    pub prefetch_hits: f64,
    /// Lines one core's read took from another core's cache (`model-coherence` interventions,
    /// summed over the vCPUs).
    pub interventions: f64,
}

/// The stream-double variants, counts per measured window.
pub fn double_rows(recs: &[Record], d: &ModelData) -> Vec<DoubleRow> {
    Bench::StreamDouble
        .variants()
        .iter()
        .filter_map(|&v| {
            let p = d.phases_of(v).next()?;
            let w = windows_of(recs, &p.name) as f64;
            let metric = recs.iter().find(|r| r.kind() == "metric" && r.obj.get("phase").and_then(Value::as_str) == Some(&p.name));
            let interventions: u64 = recs
                .iter()
                .filter(|r| r.kind() == "model-coherence" && r.obj.get("phase_id").and_then(Value::as_u64) == Some(p.id))
                .filter_map(|r| r.obj.get("interventions").and_then(Value::as_u64))
                .sum();
            Some(DoubleRow {
                variant: v.to_string(),
                cores: metric.and_then(|m| m.obj.get("cores").and_then(Value::as_u64)).unwrap_or(1),
                l1d_misses: misses(p, "L1D") as f64 / w,
                l2_misses: misses(p, "L2") as f64 / w,
                prefetch_hits: p.level("L1D").and_then(|l| l.prefetch_hits()).unwrap_or(0) as f64 / w,
                interventions: interventions as f64 / w,
            })
        })
        .collect()
}
