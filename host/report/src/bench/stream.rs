//! The `stream` benchmark under the model: L1D demand misses of each prefetching kernel
//! against plain `read-ldp`.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::metrics::human_bytes as hb;
use crate::metrics::human_bytes;
use crate::model;
use crate::summary::{n3, pct};
use crate::svg::BarChart;
use cachescope_arch::bench::{Bench, Variant};

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Stream
    }

    fn figures(&self) -> super::Figures {
        super::Figures::Bars { heading: "Streaming bandwidth per attribute", title: "Bandwidth per attribute" }
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let st = model::stream(d);
        let wb: Vec<&model::StreamRow> = st.iter().filter(|r| r.attr == "normal-wb" || (r.bypass * 2 < r.data_accesses.max(1))).collect();
        if let Some(base) = wb.iter().find(|r| r.variant == Variant::ReadLdp.name()) {
            let counted = wb.iter().any(|r| r.prefetches.is_some());
            let mut parts: Vec<String> = wb
                .iter()
                .filter(|r| r.is_prefetch() && r.attr == base.attr)
                .map(|r| {
                    let mut p = format!(
                        "{} {} ({})",
                        r.variant.trim_start_matches("read-ldp-"),
                        n3(r.demand_misses as f64),
                        pct(r.demand_misses as f64, base.demand_misses as f64)
                    );
                    if counted {
                        p += &format!(
                            " prefetches {} hits {}",
                            n3(r.prefetches.unwrap_or(0) as f64),
                            n3(r.prefetch_hits.unwrap_or(0) as f64)
                        );
                    }
                    p
                })
                .collect();
            if !counted {
                parts.push("(this plugin counts no prefetches)".into());
            }
            out.push((
                "prefetch",
                format!(
                    "(model, {} {}, L1D demand misses) read-ldp {}{}{}",
                    base.attr,
                    hb(base.bytes as f64),
                    n3(base.demand_misses as f64),
                    if parts.is_empty() { String::new() } else { "; ".into() },
                    parts.join("; ")
                ),
            ));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // Demand misses and prefetches per variant (cached attributes).
        let d = cx.d;
        // Stream: demand misses and prefetches per variant (cached attributes).
        let st: Vec<model::StreamRow> = model::stream(d).into_iter().filter(|r| r.bypass * 2 < r.data_accesses.max(1)).collect();
        if !st.is_empty() {
            let cats: Vec<String> = st
                .iter()
                .map(|r| if st.iter().all(|x| x.attr == r.attr) { r.variant.clone() } else { format!("{} {}", r.variant, r.attr) })
                .collect();
            let mut series = vec![("L1D demand misses".to_string(), st.iter().map(|r| Some(r.demand_misses as f64)).collect::<Vec<_>>())];
            if st.iter().any(|r| r.prefetches.is_some()) {
                series.push(("prefetches".into(), st.iter().map(|r| r.prefetches.map(|v| v as f64)).collect()));
                series.push(("prefetch hits".into(), st.iter().map(|r| r.prefetch_hits.map(|v| v as f64)).collect()));
            }
            let chart = BarChart {
                labels: cx.labels(
                    &format!("Stream: demand misses and prefetches per variant ({}) [model]", human_bytes(st[0].bytes as f64)),
                    "variant",
                    "count over the phase",
                ),
                categories: cats,
                series,
            };
            let counted = if st.iter().any(|r| r.prefetches.is_some()) {
                ""
            } else {
                " This plugin counts no prefetches (older plugin): only demand misses are shown."
            };
            cx.figure(
                "model-stream".into(),
                format!("Streaming loops under the cache model: L1D demand misses, prefetch fills and demand hits on prefetched lines per variant (bar = count over the phase, no whiskers: the model is exact).{counted} {MODEL_SOURCE}."),
                chart,
            );
        }
    }
}
