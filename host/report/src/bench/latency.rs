//! The `latency` benchmark as the report tool reads it: its timed headline (first and last
//! working set per attribute) and, under the model, the NOTE on a board profile, the knees and
//! the modelled latency.

use super::{BenchView, Digest};
use crate::metrics::{human_bytes as hb, Metric};
use crate::model;
use crate::summary::{attrs_of, ends, n3, size_range, unit_label};
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
        let knees = model::knees(d);
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
        let curves = model::chase_curves(d);
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
}
