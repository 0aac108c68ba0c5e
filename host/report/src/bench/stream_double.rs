//! `stream-double` under the model: L1D/L2 misses without prefetch, with PRFM and double-buffered.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::svg::BarChart;
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::StreamDouble
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let dbl = crate::dl::double(d);
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
        let dbl = crate::dl::double_rows(recs, d);
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
            let single = if dbl.iter().any(|r| r.variant == "double") {
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
}
