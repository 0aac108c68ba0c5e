//! The `kv` benchmark as the report tool reads it: the aligned ring's append and scan on the
//! timer, and under the model the token count where each level starts missing.

use super::{BenchView, Digest};
use crate::metrics::Metric;
use crate::model;
use crate::summary::{ends, n3, u, unit_label};
use cachescope_arch::bench::{Bench, Param, Variant};

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Kv
    }

    fn headline(&self, ms: &[&Metric], icount: bool) -> Option<String> {
        let mut parts = Vec::new();
        for v in [Variant::AppendAligned.name(), Variant::ScanAligned.name()] {
            let g: Vec<&Metric> =
                ms.iter().copied().filter(|m| m.key.variant.as_deref() == Some(v) && m.key.attr.as_deref() == Some("normal-wb")).collect();
            if let Some((x0, y0, x1, y1)) = ends(&g, |m| m.num(Param::Tokens.name()).unwrap_or(0.0)) {
                parts.push(format!("{v} {} {} at {x0} → {} at {x1} tokens", n3(y0), unit_label(&g[0].key.unit, icount), n3(y1)));
            }
        }
        Some(if parts.is_empty() { format!("{} measurements", ms.len()) } else { format!("normal-wb {}", parts.join("; ")) })
    }

    fn figures(&self) -> super::Figures {
        super::Figures::Sweep { heading: "KV-cache append cost vs tokens", what: "KV-cache" }
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let starts = model::kv_starts(d);
        if let Some(first) = starts.first() {
            let shape = run.iter().find(|r| r.kind() == "kv-shape").and_then(|r| u(r, "bytes_per_token"));
            let mut parts = Vec::new();
            for st in starts.iter().filter(|st| st.variant == first.variant && st.attr == first.attr) {
                parts.push(format!(
                    "{} holds {}, {}",
                    st.level,
                    st.capacity_tokens.map_or("?".into(), n3),
                    st.starts_at.map_or(format!("no misses up to {}", st.max_cached), |t| format!("misses from {t}"))
                ));
            }
            out.push((
                Bench::Kv.name(),
                format!(
                    "(model, tokens) {}{} B/layer scanned; {} {}: {}",
                    shape.map(|b| format!("{b} B/token, ")).unwrap_or_default(),
                    n3(first.bytes_per_token),
                    first.variant,
                    first.attr,
                    parts.join("; ")
                ),
            ));
        }
        out
    }
}
