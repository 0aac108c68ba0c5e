//! The `kv` benchmark as the report tool reads it: the aligned ring's append and scan on the
//! timer, and under the model the token count where each level starts missing.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::metrics::sig;
use crate::metrics::Metric;
use crate::model;
use crate::summary::{ends, n3, u, unit_label};
use crate::svg::{LinePlot, Marker, Point, Series, XScale};
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

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // The scans' misses per token vs cached tokens, with the capacities in tokens.
        let d = cx.d;
        // KV: misses per token vs cached tokens, scans.
        let kv: Vec<model::KvPoint> = model::kv_points(d).into_iter().filter(|p| p.variant.starts_with("scan")).collect();
        let starts = model::kv_starts(d);
        if !kv.is_empty() && !starts.is_empty() {
            let mut series: Vec<Series> = Vec::new();
            for p in &kv {
                if starts.iter().all(|s| s.variant != p.variant || s.attr != p.attr) {
                    continue; // bypassing attribute
                }
                for (l, v) in &p.misses_per_token {
                    let name = format!("{} {} {l}", p.variant.trim_start_matches("scan-"), p.attr);
                    let pt = Point { x: p.cached as f64, y: *v, lo: None, hi: None };
                    match series.iter_mut().find(|s| s.name == name) {
                        Some(s) => {
                            // Past the ring wrap the cached count repeats: keep the first.
                            if !s.points.iter().any(|q| q.x == pt.x) {
                                s.points.push(pt)
                            }
                        }
                        None => series.push(Series { name, points: vec![pt] }),
                    }
                }
            }
            let mut markers: Vec<Marker> = Vec::new();
            let first = &starts[0];
            for s in starts.iter().filter(|s| s.variant == first.variant && s.attr == first.attr) {
                if let Some(tk) = s.capacity_tokens {
                    markers.push(Marker { x: tk, label: format!("{} holds {} tokens", s.level, sig(tk, 3)), knee: false });
                }
            }
            let plot = LinePlot {
                labels: cx.labels(
                    "KV-cache scan: misses per token vs cached tokens [model]",
                    "cached tokens (log2 scale); dashed: level capacity in tokens (one layer's bytes per token)",
                    "misses per cached token",
                ),
                x_scale: XScale::Log2,
                y_log: false,
                series,
                markers,
            };
            cx.figure(
                "model-kv".into(),
                format!(
                    "KV-cache attention scans under the cache model: misses per cached token at each level vs the tokens held; dashed lines where the cache level holds the scanned layer ({} B per token). {MODEL_SOURCE}.",
                    sig(first.bytes_per_token, 4)
                ),
                plot,
            );
        }
    }
}
