//! The `infer` benchmark: its sweeps are read as a geometry (the digest's `geometry` line, from
//! the model's counts), not as timed figures.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::metrics::human_bytes as hb;
use crate::metrics::human_bytes;
use crate::svg::{LinePlot, Marker, Point, Series, XScale};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Infer
    }

    fn timed(&self) -> bool {
        false
    }

    fn emulated_figures(&self) -> bool {
        false
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (d, inf) = (cx.d, cx.inf);
        let mut out = Vec::new();
        let has_infer = d.phases_in(Bench::Infer).next().is_some();
        out.push((
            "geometry",
            if !has_infer && inf.levels.iter().all(|l| l.capacity.is_none()) {
                "not inferred: no infer/ phases and no chase knees".to_string()
            } else {
                let mut parts = vec![format!("line {}", inf.line.as_ref().map_or("?".into(), |l| format!("{} B", l.value)))];
                for l in &inf.levels {
                    let cap = l.capacity.as_ref().map(|c| hb(c.value as f64));
                    let ways = l.ways.as_ref().map(|w| format!("{}-way", w.value));
                    if cap.is_none() && ways.is_none() {
                        continue;
                    }
                    parts.push(format!(
                        "{} {} {} (CCSIDR {}{})",
                        l.level,
                        cap.unwrap_or_else(|| "?".into()),
                        ways.unwrap_or_else(|| "?-way".into()),
                        l.ccsidr.map_or("–".into(), |c| c.1.to_string()),
                        l.silicon.as_ref().map(|s| format!(", silicon {}", s.1)).unwrap_or_default()
                    ));
                }
                if !has_infer {
                    parts.push("no infer/ phases".into());
                }
                format!("(inferred from model counts) {}", parts.join("; "))
            },
        ));
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // The line and conflict sweeps, and the geometry table: inferred, CCSIDR, published silicon.
        let (d, recs, _levels) = (cx.d, cx.run, cx.levels);
        // The geometry sweeps: lines brought in per load vs stride, miss rate vs addresses per set.
        let (line_sweep, line) = crate::model_data::infer_line(d);
        if !line_sweep.is_empty() {
            let series = vec![Series {
                name: "L1D".into(),
                points: line_sweep.iter().map(|&(x, y)| Point { x: x as f64, y, lo: None, hi: None }).collect(),
            }];
            let markers = line.map(|l| Marker { x: l as f64, label: format!("inferred line {l} B"), knee: true }).into_iter().collect();
            let plot = LinePlot {
                labels: cx.labels(
                    "Line size: lines brought in per load vs stride [model]",
                    "stride between loads (bytes, log2 scale); dotted: the inferred line size",
                    "L1D (misses + prefetch hits) per load",
                ),
                x_scale: XScale::Log2Bytes,
                y_log: false,
                series,
                markers,
            };
            cx.figure(
                "model-infer-line".into(),
                format!("Stride sweep under the cache model (bench infer, variant line): one load every stride bytes over twice the L1D; a line is brought in per load once the stride reaches the line size. {MODEL_SOURCE}."),
                plot,
            );
        }
        let sweeps = crate::model_data::infer_ways(d);
        if !sweeps.is_empty() {
            let series: Vec<Series> = sweeps
                .iter()
                .map(|w| Series {
                    name: format!("{} ({} apart)", w.level, human_bytes(w.spacing as f64)),
                    points: w.points.iter().map(|&(x, y)| Point { x: x as f64, y, lo: None, hi: None }).collect(),
                })
                .collect();
            let markers = sweeps
                .iter()
                .filter_map(|w| w.ways.map(|n| Marker { x: n as f64, label: format!("{} {n} ways", w.level), knee: true }))
                .collect();
            let plot = LinePlot {
                labels: cx.labels(
                    "Associativity: miss rate vs addresses in one set [model]",
                    "addresses one level capacity apart, cycled 128 rounds; dotted: the inferred ways",
                    "miss rate at the level",
                ),
                x_scale: XScale::Linear,
                y_log: false,
                series,
                markers,
            };
            cx.figure(
                "model-infer-ways".into(),
                format!("Conflict sweep under the cache model (bench infer, variant ways): n addresses that all fall in one set stay cached while n ≤ ways. {MODEL_SOURCE}."),
                plot,
            );
        }
        // Inferred geometry.
        let inf = crate::model_data::infer(recs, d);
        let mut rows = vec![vec![
            "line".to_string(),
            inf.line.as_ref().map_or("–".into(), |l| format!("{} B", l.value)),
            inf.levels.iter().find_map(|l| l.ccsidr.map(|c| format!("{} B", c.3))).unwrap_or_else(|| "–".into()),
            inf.levels.iter().find_map(|l| l.silicon.as_ref().map(|s| format!("{} B", s.2))).unwrap_or_else(|| "–".into()),
            inf.line.as_ref().map_or("no infer/line phases".into(), |l| l.source.clone()),
        ]];
        for l in &inf.levels {
            rows.push(vec![
                format!("{} size", l.level),
                l.capacity.as_ref().map_or("–".into(), |c| human_bytes(c.value as f64)),
                l.ccsidr.map_or("–".into(), |c| human_bytes(c.0 as f64)),
                l.silicon.as_ref().map_or("–".into(), |s| s.0.iter().map(|b| human_bytes(*b as f64)).collect::<Vec<_>>().join(" or ")),
                l.capacity.as_ref().map_or("no knee".into(), |c| c.source.clone()),
            ]);
            rows.push(vec![
                format!("{} ways", l.level),
                l.ways.as_ref().map_or("–".into(), |w| w.value.to_string()),
                l.ccsidr.map_or("–".into(), |c| c.1.to_string()),
                l.silicon.as_ref().map_or("–".into(), |s| s.1.to_string()),
                l.ways.as_ref().map_or("no infer/ways phases".into(), |w| w.source.clone()),
            ]);
        }
        cx.heading(3, "Geometry: inferred / CCSIDR / published silicon".into());
        cx.table(["", "inferred (model)", "CCSIDR", "published silicon", "inferred from"].iter().map(|s| s.to_string()).collect(), rows);
    }
}
