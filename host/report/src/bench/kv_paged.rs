//! `kv-paged` under the model: L1D misses per token over the sweep, contiguous and per block size.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::dl::{misses, scan_curve, ScanCurve};
use crate::metrics::sig;
use crate::model_data::{ModelData, Phase};
use crate::records::Record;
use crate::svg::{LinePlot, Marker, XScale};
use cachescope_arch::bench::Bench;
use cachescope_arch::bench::{Param, Variant};

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvPaged
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let rows = paged(d);
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
        let paged = paged_curves(d);
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

    fn model_checks(&self, _run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let mut f = Vec::new();
        let rows = paged(d);
        if let Some(c) = rows.iter().find(|r| r.contiguous) {
            let l1 = |r: &PagedRow| r.misses_per_token.iter().find(|(l, _)| l == "L1D").map_or(0.0, |x| x.1);
            let paged: Vec<&PagedRow> = rows.iter().filter(|r| !r.contiguous).collect();
            if let (Some(small), Some(large)) = (paged.first(), paged.last()) {
                let (dc, ds, dl) = (l1(c), l1(small) - l1(c), l1(large) - l1(c));
                f.push((
                    ds > 0.0 && dl.abs() < ds,
                    format!(
                        "kv-paged: L1D misses/token over the sweep: contiguous {:.2}, block {} {:.2} (+{:.2}), block {} {:.2} ({:+.2}): paged misses more at small blocks and converges",
                        dc,
                        small.block,
                        l1(small),
                        ds,
                        large.block,
                        l1(large),
                        dl
                    ),
                ));
            }
        }
        f
    }
}

/// One kv-paged layout: its scans' misses per token over the whole sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedRow {
    /// Tokens per block (the capacity for the contiguous layout).
    pub block: u64,
    /// The contiguous layout.
    pub contiguous: bool,
    /// (level, misses summed over every scan ÷ tokens summed over them).
    pub misses_per_token: Vec<(String, f64)>,
}

/// The kv-paged layouts, contiguous first.
pub fn paged(d: &ModelData) -> Vec<PagedRow> {
    let mut rows: Vec<PagedRow> = Vec::new();
    for variant in [Variant::ScanContiguous, Variant::ScanPaged] {
        let mut blocks: Vec<u64> = d.phases_of(variant).filter_map(|p| p.parsed.num(Param::Block)).collect();
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            let ps: Vec<&Phase> = d.phases_of(variant).filter(|p| p.parsed.num(Param::Block) == Some(b)).collect();
            let tokens: u64 = ps.iter().filter_map(|p| p.parsed.num(Param::Tokens)).sum();
            let levels = d.data_level_names();
            let mpt =
                levels.iter().map(|l| (l.clone(), ps.iter().map(|p| misses(p, l)).sum::<u64>() as f64 / tokens.max(1) as f64)).collect();
            rows.push(PagedRow { block: b, contiguous: variant == Variant::ScanContiguous, misses_per_token: mpt });
        }
    }
    rows
}

/// The kv-paged scans per layout: the contiguous ring first, then each block size, ascending.
pub fn paged_curves(d: &ModelData) -> Vec<ScanCurve> {
    paged(d)
        .iter()
        .map(|r| {
            let variant = if r.contiguous { Variant::ScanContiguous } else { Variant::ScanPaged };
            let ps = d.phases_of(variant).filter(|p| p.parsed.num(Param::Block) == Some(r.block)).collect();
            scan_curve(d, if r.contiguous { "contiguous".into() } else { format!("block {}", r.block) }, ps)
        })
        .collect()
}
