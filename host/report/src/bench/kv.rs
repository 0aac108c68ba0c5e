//! The `kv` benchmark as the report tool reads it: the aligned ring's append and scan on the
//! timer, and under the model the token count where each level starts missing.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::digest_format::{ends, n3, u, unit_label};
use crate::metrics::sig;
use crate::metrics::Metric;
use crate::model_data::ModelData;
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
        let starts = kv_starts(d);
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
        let kv: Vec<KvPoint> = kv_points(d).into_iter().filter(|p| p.variant.starts_with("scan")).collect();
        let starts = kv_starts(d);
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

/// KV scans "start to miss" a level at the first cached-token count whose global miss rate at
/// that level reaches this.
pub const KV_START_MISS: f64 = 0.01;

/// One KV phase (`kv/VARIANT/ATTR/BYTES/tokens=…/cached=…/…`).
#[derive(Debug, Clone, PartialEq)]
pub struct KvPoint {
    /// Variant (`scan-aligned`, `append-misaligned`, …).
    pub variant: String,
    /// Attribute.
    pub attr: String,
    /// Tokens appended so far.
    pub tokens: u64,
    /// Tokens held in the ring (what a scan reads).
    pub cached: u64,
    /// Bytes a scan reads.
    pub bytes: u64,
    /// (level, misses per cached token over the phase) per data level.
    pub misses_per_token: Vec<(String, f64)>,
    /// (level, global miss rate) per data level.
    pub global: Vec<(String, f64)>,
}

/// The KV phases, in phase order.
pub fn kv_points(d: &ModelData) -> Vec<KvPoint> {
    d.phases
        .iter()
        .filter(|p| p.parsed.of(Bench::Kv))
        .filter_map(|p| {
            let tokens = p.parsed.num(Param::Tokens)?;
            let cached = p.parsed.num(Param::Cached).unwrap_or(tokens).max(1);
            let n = p.data_accesses();
            Some(KvPoint {
                variant: p.parsed.variant.clone(),
                attr: p.parsed.attr.clone(),
                tokens,
                cached,
                bytes: p.parsed.bytes.unwrap_or(0),
                misses_per_token: p.data_levels().map(|l| (l.level.clone(), l.misses as f64 / cached as f64)).collect(),
                global: p.data_levels().map(|l| (l.level.clone(), if n == 0 { 0.0 } else { l.misses as f64 / n as f64 })).collect(),
            })
        })
        .collect()
}

/// Where a KV scan starts to miss a level.
#[derive(Debug, Clone, PartialEq)]
pub struct KvStart {
    /// Scan variant.
    pub variant: String,
    /// Attribute.
    pub attr: String,
    /// Level.
    pub level: String,
    /// Bytes one cached token occupies in the scanned layer (scan bytes ÷ cached tokens).
    pub bytes_per_token: f64,
    /// Tokens the level's capacity holds at that size (model geometry).
    pub capacity_tokens: Option<f64>,
    /// The first cached-token count whose global miss rate reaches [`KV_START_MISS`]; None
    /// when no measured count does.
    pub starts_at: Option<u64>,
    /// The largest cached-token count measured.
    pub max_cached: u64,
}

/// For each cached scan variant and data level: where scans start to miss.
pub fn kv_starts(d: &ModelData) -> Vec<KvStart> {
    let pts = kv_points(d);
    let mut out = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for p in pts.iter().filter(|p| p.variant.starts_with("scan")) {
        let k = (p.variant.clone(), p.attr.clone());
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let mut series: Vec<&KvPoint> = pts.iter().filter(|q| q.variant == p.variant && q.attr == p.attr).collect();
        series.sort_by_key(|q| (q.cached, q.tokens));
        let (bypass, total) = d
            .phases
            .iter()
            .filter(|ph| ph.parsed.of(Bench::Kv) && ph.parsed.variant == p.variant && ph.parsed.attr == p.attr)
            .fold((0, 0), |(b, n), ph| (b + ph.bypass(), n + ph.data_accesses()));
        let bypassing = bypass * 2 > total;
        if bypassing {
            continue;
        }
        let last = series.last().copied().unwrap_or(p);
        let bpt = last.bytes as f64 / last.cached as f64;
        for level in d.data_level_names() {
            let starts_at = series.iter().find(|q| q.global.iter().any(|(l, r)| *l == level && *r >= KV_START_MISS)).map(|q| q.cached);
            out.push(KvStart {
                variant: p.variant.clone(),
                attr: p.attr.clone(),
                level: level.clone(),
                bytes_per_token: bpt,
                capacity_tokens: d.geometry_of(&level).filter(|_| bpt > 0.0).map(|g| g.size as f64 / bpt),
                starts_at,
                max_cached: last.cached,
            });
        }
    }
    out
}
