//! `kv-paged` under the model: L1D misses per token over the sweep, contiguous and per block size.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::metrics::sig;
use crate::svg::{LinePlot, Marker, XScale};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvPaged
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let rows = crate::dl::paged(d);
        if !rows.is_empty() {
            let parts: Vec<String> = rows
                .iter()
                .map(|r| {
                    let l1 = r.misses_per_token.iter().find(|(l, _)| l == "L1D").map_or(0.0, |x| x.1);
                    if r.contiguous {
                        format!("contiguous {l1:.2}")
                    } else {
                        format!("b{} {l1:.2}", r.block)
                    }
                })
                .collect();
            out.push((Bench::KvPaged.name(), format!("(model, L1D misses/token over the sweep) {}", parts.join(", "))));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // One figure per level: the contiguous ring and each block size as series.
        let (d, levels) = (cx.d, cx.levels);
        // kv-paged: one figure per level, the contiguous ring and each block size as series.
        let paged = crate::dl::paged_curves(d);
        if let Some(contiguous) = paged.first().filter(|c| c.bytes_per_token > 0.0) {
            let bpt = contiguous.bytes_per_token;
            let markers: Vec<Marker> = levels
                .iter()
                .filter_map(|l| d.geometry_of(l))
                .map(|g| Marker {
                    x: g.size as f64 / bpt,
                    label: format!("{} holds {} tokens", g.level, sig(g.size as f64 / bpt, 4)),
                    knee: false,
                })
                .collect();
            let swept = paged.iter().flat_map(|c| c.points.last()).map(|p| p.0).max().unwrap_or(0);
            for level in levels {
                let series = super::per_level(&paged, level);
                if series.is_empty() {
                    continue;
                }
                // A level the largest scan fits has no knee in the sweep: a sentence, no figure.
                if let Some(cap) = d.geometry_of(level).map(|g| g.size as f64 / bpt).filter(|&c| (swept as f64) < c) {
                    let stray: f64 = paged
                        .iter()
                        .flat_map(|c| c.points.iter())
                        .filter_map(|(t, ls)| ls.iter().find(|(l, _)| l == level).map(|x| x.1 * *t as f64))
                        .sum();
                    cx.para(format!(
                        "kv-paged under the cache model: the sweep's largest scan ({swept} tokens) fits the {level} ({} tokens): {stray:.0} {level} misses over every scan and block size; no figure.",
                        sig(cap, 4)
                    ));
                    continue;
                }
                let plot = LinePlot {
                    labels: cx.labels(
                        &format!("kv-paged: {level} misses per token vs cached tokens, per block size [model]"),
                        "cached tokens (log2 scale); dashed: level capacity in tokens (one layer's scan bytes per token)",
                        &format!("{level} misses per cached token"),
                    ),
                    x_scale: XScale::Log2,
                    y_log: false,
                    series,
                    markers: markers.clone(),
                };
                cx.figure(
                    format!("model-kv-paged-{}", level.to_lowercase()),
                    format!(
                        "Paged KV cache (bench kv-paged) under the cache model: {level} misses per cached token of one layer's scan through the block table, the contiguous ring (one block) and each block size (tokens per block) at equal bytes; dashed where the level holds the scanned layer ({} B per token). Small blocks scatter the KV over 4 KiB pool slots that crowd some sets: more misses per token, converging on the ring as blocks grow. {MODEL_SOURCE}.",
                        sig(bpt, 4)
                    ),
                    plot,
                );
            }
        }
    }
}
