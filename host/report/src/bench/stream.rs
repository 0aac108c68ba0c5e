//! The `stream` benchmark under the model: L1D demand misses of each prefetching kernel
//! against plain `read-ldp`.

use super::{BenchView, Digest};
use crate::metrics::human_bytes as hb;
use crate::model;
use crate::summary::{n3, pct};
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
}
