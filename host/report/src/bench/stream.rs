//! The `stream` benchmark under the model: L1D demand misses of each prefetching kernel
//! against plain `read-ldp`.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::digest_format::{n3, pct};
use crate::metrics::human_bytes as hb;
use crate::metrics::human_bytes;
use crate::model_data::ModelData;
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
        let st = stream(d);
        let wb: Vec<&StreamRow> = st.iter().filter(|r| r.attr == "normal-wb" || (r.bypass * 2 < r.data_accesses.max(1))).collect();
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
        let st: Vec<StreamRow> = stream(d).into_iter().filter(|r| r.bypass * 2 < r.data_accesses.max(1)).collect();
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

/// One stream phase (`stream/VARIANT/ATTR/BYTES/…`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRow {
    /// Variant (`read-ldp`, `read-ldp-pldl1strm`, …).
    pub variant: String,
    /// Attribute.
    pub attr: String,
    /// Bytes streamed.
    pub bytes: u64,
    /// Data accesses.
    pub data_accesses: u64,
    /// L1D demand misses.
    pub demand_misses: u64,
    /// Misses per data level.
    pub misses: Vec<(String, u64)>,
    /// Prefetch fills over every level (None when the plugin does not count them).
    pub prefetches: Option<u64>,
    /// Demand hits on prefetched lines over every level (None when not counted).
    pub prefetch_hits: Option<u64>,
    /// Accesses that bypassed the caches.
    pub bypass: u64,
}

impl StreamRow {
    /// True for the software-prefetch variants (PRFM: `pld…`/`pst…`/`prfm` in the name).
    pub fn is_prefetch(&self) -> bool {
        self.variant.contains("pld") || self.variant.contains("pst") || self.variant.contains("prfm")
    }
}

fn sum_opt(it: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    it.fold(None, |acc, v| match (acc, v) {
        (a, None) => a,
        (None, Some(v)) => Some(v),
        (Some(a), Some(v)) => Some(a + v),
    })
}

/// The stream phases, in phase order.
pub fn stream(d: &ModelData) -> Vec<StreamRow> {
    d.phases
        .iter()
        .filter(|p| p.parsed.of(Bench::Stream))
        .map(|p| StreamRow {
            variant: p.parsed.variant.clone(),
            attr: p.parsed.attr.clone(),
            bytes: p.parsed.bytes.unwrap_or(0),
            data_accesses: p.data_accesses(),
            demand_misses: p.level("L1D").map_or(0, |l| l.misses),
            misses: p.data_levels().map(|l| (l.level.clone(), l.misses)).collect(),
            prefetches: sum_opt(p.data_levels().map(|l| l.prefetches())),
            prefetch_hits: sum_opt(p.data_levels().map(|l| l.prefetch_hits())),
            bypass: p.bypass(),
        })
        .collect()
}
