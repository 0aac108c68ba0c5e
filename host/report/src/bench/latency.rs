//! The `latency` benchmark as the report tool reads it: its timed headline (first and last
//! working set per attribute) and, under the model, the NOTE on a board profile, the knees and
//! the modelled latency.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::digest_format::{attrs_of, ends, n3, size_range, unit_label};
use crate::metrics::human_bytes;
use crate::metrics::{human_bytes as hb, Metric};
use crate::model_data;
use crate::svg::{LinePlot, Marker, Point, Series, XScale};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Latency
    }

    fn headline(&self, ms: &[&Metric], icount: bool) -> Option<String> {
        let unit = unit_label(&ms[0].key.unit, icount);
        let parts: Vec<String> = attrs_of(ms)
            .iter()
            .filter_map(|a| {
                let g: Vec<&Metric> = ms.iter().copied().filter(|m| m.key.attr.as_deref() == Some(a)).collect();
                let (x0, y0, x1, y1) = ends(&g, |m| m.key.bytes.unwrap_or(0) as f64)?;
                Some(format!("{a} {} ({}) → {} ({})", n3(y0), hb(x0), n3(y1), hb(x1)))
            })
            .collect();
        let more = parts.len().saturating_sub(4);
        Some(format!(
            "{unit}: {}{}",
            parts.iter().take(4).cloned().collect::<Vec<_>>().join(", "),
            if more > 0 { format!(" +{more} more") } else { String::new() }
        ))
    }

    fn figures(&self) -> super::Figures {
        super::Figures::Latency
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (d, inf) = (cx.d, cx.inf);
        let mut out = Vec::new();
        // Knees vs CCSIDR and silicon (a board profile's own core's silicon).
        if let Some((core, cpu)) = &inf.profile_core {
            out.push((
            "",
            format!(
                "NOTE: profile {} models a {core} but QEMU emulates a {cpu}: knees and geometry below compare with {core} silicon (QEMU_CPU={} matches)",
                d.profile_name().unwrap_or_default(),
                core.to_ascii_lowercase()
            ),
        ));
        }
        let knees = model_data::knees(d);
        let mut kparts = Vec::new();
        for l in &inf.levels {
            let Some(k) = knees.iter().filter(|k| k.level == l.level).min_by_key(|k| k.attr != "normal-wb") else { continue };
            let sil = l.silicon.as_ref().map(|s| size_range(&s.0)).unwrap_or_else(|| "–".into());
            kparts.push(format!(
                "{} {}→{} (CCSIDR {}, silicon {sil})",
                l.level,
                hb(k.fits as f64),
                hb(k.jump as f64),
                l.ccsidr.map_or("–".into(), |c| hb(c.0 as f64))
            ));
        }
        let curves = model_data::chase_curves(d);
        out.push((
            "knees",
            if kparts.is_empty() {
                if curves.is_empty() {
                    "no pointer-chase phases under the model".into()
                } else {
                    "no knee within the chase ladder".into()
                }
            } else {
                format!("(model miss rates: fits→misses) {}", kparts.join("; "))
            },
        ));
        // Modelled latency.
        if let Some(c) = curves.iter().find(|c| c.attr == "normal-wb").or(curves.first()) {
            let lat: Vec<(u64, f64, Option<f64>)> =
                c.points.iter().filter_map(|p| p.ns_per_access.map(|ns| (p.bytes, ns, p.cycles_per_access))).collect();
            if let (Some(a), Some(b)) = (lat.first(), lat.last()) {
                out.push((
                    Bench::Latency.name(),
                    format!(
                        "(model, {}) {} ns/access at {} → {} ns at {}{}",
                        c.attr,
                        n3(a.1),
                        hb(a.0 as f64),
                        n3(b.1),
                        hb(b.0 as f64),
                        b.2.map(|cy| format!(" ({} cycles)", n3(cy))).unwrap_or_default()
                    ),
                ));
            } else {
                out.push((Bench::Latency.name(), "(model) no model-time records: this plugin models counts, not time".into()));
            }
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // The chase under the model: miss rate per level and modelled latency vs working set.
        let (d, levels, caps) = (cx.d, cx.levels, cx.caps);
        let curves = model_data::chase_curves(d);
        let bypassing: Vec<String> = curves
            .iter()
            .filter(|c| c.bypasses())
            .map(|c| {
                let f = c.points.iter().map(|p| p.bypass_fraction).sum::<f64>() / c.points.len().max(1) as f64;
                format!("{} ({:.1}% of data accesses bypass the caches)", c.attr, f * 100.0)
            })
            .collect();
        for c in curves.iter().filter(|c| !c.bypasses()) {
            let series: Vec<Series> = levels
                .iter()
                .map(|l| Series {
                    name: format!("{l} misses / access"),
                    points: c
                        .points
                        .iter()
                        .filter_map(|p| p.global_rate(l).map(|y| Point { x: p.bytes as f64, y, lo: None, hi: None }))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            let knees: Vec<Marker> = levels
                .iter()
                .filter_map(|l| model_data::knee_of(c, l))
                .map(|k| Marker { x: k.fits as f64, label: format!("{} knee: fits {}", k.level, human_bytes(k.fits as f64)), knee: true })
                .collect();
            let plot = LinePlot {
                labels: cx.labels(
                    &format!("Miss rate per level vs working set: {} [model]", c.attr),
                    "working set (bytes, log2); dashed: CCSIDR and published silicon capacities; dotted: model knees",
                    "misses per data access",
                ),
                x_scale: XScale::Log2Bytes,
                y_log: false,
                series,
                markers: caps.iter().cloned().chain(knees).collect(),
            };
            let mut cap = format!(
                "Pointer chase under the cache model ({}): misses at each level per data access vs working set; dashed lines at the CCSIDR and published silicon capacities, dotted at the knees the model's miss rates give. {MODEL_SOURCE}.",
                c.attr
            );
            if !bypassing.is_empty() {
                cap.push_str(&format!(" Not plotted, bypassing the caches: {}.", bypassing.join(", ")));
            }
            cx.figure(format!("model-missrate-{}", c.attr), cap, plot);
        }
        // Modelled latency.
        let lat: Vec<Series> = curves
            .iter()
            .map(|c| Series {
                name: c.attr.clone(),
                points: c
                    .points
                    .iter()
                    .filter_map(|p| p.ns_per_access.map(|y| Point { x: p.bytes as f64, y, lo: None, hi: None }))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if lat.is_empty() {
            cx.para("No modelled latency: the plugin wrote no `model-time` records (it models counts, not time).".into());
        } else {
            let knees: Vec<Marker> = model_data::knees(d)
                .into_iter()
                .filter(|k| k.attr == "normal-wb")
                .map(|k| Marker { x: k.fits as f64, label: format!("{} knee {}", k.level, human_bytes(k.fits as f64)), knee: true })
                .collect();
            let y_log = lat.iter().flat_map(|s| s.points.iter()).map(|p| p.y).fold((f64::INFINITY, 0f64), |(a, b), y| (a.min(y), b.max(y)));
            let plot = LinePlot {
                labels: cx.labels(
                    "Modelled latency vs working set [model]",
                    "working set (bytes, log2 scale); dashed: CCSIDR and silicon capacities, dotted: model knees",
                    "modelled ns per data access",
                ),
                x_scale: XScale::Log2Bytes,
                y_log: y_log.0 > 0.0 && y_log.1 / y_log.0 > 20.0,
                series: lat,
                markers: caps.iter().cloned().chain(knees).collect(),
            };
            cx.figure(
                "model-latency".into(),
                format!("Modelled latency per data access (model-time ns ÷ data accesses) of the pointer chase, like lmbench lat_mem_rd on the modelled silicon. {MODEL_SOURCE}."),
                plot,
            );
        }
    }
}
