//! `kv-prefix` under the model: hits and misses with the prefix shared and private, and the bytes sharing saves.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::metrics::human_bytes;
use crate::model_data::ModelData;
use crate::records::Record;
use crate::svg::BarChart;
use cachescope_arch::bench::{Bench, Variant};

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvPrefix
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let pr = prefix(d);
        if !pr.is_empty() {
            let parts: Vec<String> = pr
                .iter()
                .map(|r| format!("{} {}", r.variant, r.levels.iter().map(|(l, h, m)| format!("{l} {h}/{m}")).collect::<Vec<_>>().join(" ")))
                .collect();
            let saved = |v| super::metric_of(run, v).and_then(|r| r.obj.get("pool_bytes").and_then(serde_json::Value::as_u64));
            let s = match (saved(Variant::Shared), saved(Variant::Private)) {
                (Some(a), Some(b)) if b >= a => format!("; saves {} KiB", (b - a) >> 10),
                _ => String::new(),
            };
            out.push((Bench::KvPrefix.name(), format!("(model, hits/misses) {}{s}", parts.join("; "))));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // Hits and misses per level, shared against private prefixes.
        let (d, recs, levels) = (cx.d, cx.run, cx.levels);
        // kv-prefix: hits and misses per level, shared against private prefixes.
        let pr = prefix(d);
        if !pr.is_empty() {
            let mut cats: Vec<String> = Vec::new();
            for level in levels {
                cats.push(format!("{level} hits"));
                cats.push(format!("{level} misses"));
            }
            let series: Vec<(String, Vec<Option<f64>>)> = pr
                .iter()
                .map(|r| {
                    let v = levels
                        .iter()
                        .flat_map(|l| {
                            let c = r.levels.iter().find(|x| &x.0 == l);
                            [c.map(|c| c.1 as f64), c.map(|c| c.2 as f64)]
                        })
                        .collect();
                    (format!("{} prefix", r.variant), v)
                })
                .collect();
            let chart = BarChart {
                labels: cx.labels(
                    "kv-prefix: hits and misses per level, shared vs private prefix [model]",
                    "level and count",
                    "count over the phase",
                ),
                categories: cats,
                series,
            };
            let pool = |v| super::metric_of(recs, v).and_then(|r| r.obj.get("pool_bytes").and_then(serde_json::Value::as_u64));
            let saved = match (pool(Variant::Shared), pool(Variant::Private)) {
                (Some(a), Some(b)) if b >= a => {
                    format!(" Sharing holds {} of KV instead of {} (all layers).", human_bytes(a as f64), human_bytes(b as f64))
                }
                _ => String::new(),
            };
            cx.figure(
                "model-kv-prefix".into(),
                format!("Prefix sharing (bench kv-prefix) under the cache model: sequences scanned one after the other, their common prefix one copy referenced by every block table (shared) or copied per sequence (private); hits and misses per level over the phase (bar = exact count). The shared prefix stays cached and hits across sequences; private copies miss.{saved} {MODEL_SOURCE}."),
                chart,
            );
        }
    }

    fn model_checks(&self, _run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let mut f = Vec::new();
        let pr = prefix(d);
        if let (Some(s), Some(p)) =
            (pr.iter().find(|r| r.variant == Variant::Shared.name()), pr.iter().find(|r| r.variant == Variant::Private.name()))
        {
            let l2 = |r: &PrefixRow| r.levels.iter().find(|l| l.0 == "L2").map_or((0, 0), |l| (l.1, l.2));
            let (sh, ph) = (l2(s), l2(p));
            f.push((
                sh.0 > ph.0 && sh.1 < ph.1,
                format!(
                    "kv-prefix: L2 hits/misses shared {}/{}, private {}/{}: the shared prefix hits across sequences",
                    sh.0, sh.1, ph.0, ph.1
                ),
            ));
        }
        f
    }
}

/// One kv-prefix variant: hits and misses per level over its scans.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixRow {
    /// `shared` or `private`.
    pub variant: String,
    /// (level, hits, misses).
    pub levels: Vec<(String, u64, u64)>,
}

/// The kv-prefix variants.
pub fn prefix(d: &ModelData) -> Vec<PrefixRow> {
    Bench::KvPrefix
        .variants()
        .iter()
        .filter_map(|&v| {
            let p = d.phases_of(v).next()?;
            Some(PrefixRow {
                variant: v.name().to_string(),
                levels: p.data_levels().map(|l| (l.level.clone(), l.hits, l.misses)).collect(),
            })
        })
        .collect()
}
