//! `alloc-reuse` under the model: L2 misses of the reused block against fresh memory, and the trace's fragmentation.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::dl::{misses, windows_of};
use crate::model_data::{ModelData, Phase};
use crate::records::Record;
use crate::svg::{LinePlot, Point, Series, XScale};
use cachescope_arch::bench::Bench;
use cachescope_arch::bench::Variant;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::AllocReuse
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let r = reuse(d);
        if !r.is_empty() {
            let parts: Vec<String> = r.iter().filter(|x| x.1 == "L2").map(|x| format!("{} KiB {}/{}", x.0 >> 10, x.2, x.3)).collect();
            let trace = run.iter().find(|r| r.kind() == "alloc-trace").map(|t| {
                let g = |k: &str| t.obj.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
                format!("; trace: {} MiB reserved, {} MiB in use", g("reserved") >> 20, g("allocated") >> 20)
            });
            out.push((
                Bench::AllocReuse.name(),
                format!("(model, L2 misses reuse/fresh) {}{}", parts.join(", "), trace.unwrap_or_default()),
            ));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // Misses per tensor line, reuse against fresh memory, per size.
        let (d, recs, levels, caps) = (cx.d, cx.run, cx.levels, cx.caps);
        // alloc-reuse: misses per tensor line, reuse against fresh memory, per size.
        let reuse = reuse_per_line(recs, d);
        if !reuse.is_empty() {
            let mut series: Vec<Series> = Vec::new();
            for level in levels {
                for (name, pick) in
                    [(cachescope_arch::bench::Variant::Reuse.name(), true), (cachescope_arch::bench::Variant::Fresh.name(), false)]
                {
                    let points: Vec<Point> = reuse
                        .iter()
                        .filter(|r| &r.level == level)
                        .map(|r| Point { x: r.bytes as f64, y: if pick { r.reuse } else { r.fresh }, lo: None, hi: None })
                        .collect();
                    if !points.is_empty() {
                        series.push(Series { name: format!("{name} {level}"), points });
                    }
                }
            }
            let plot = LinePlot {
                labels: cx.labels(
                    "alloc-reuse: misses per tensor line, reuse vs fresh memory [model]",
                    "tensor size (bytes, log2); dashed: CCSIDR and published silicon capacities",
                    "misses per 64-byte line per window",
                ),
                x_scale: XScale::Log2Bytes,
                y_log: false,
                series,
                markers: caps.to_vec(),
            };
            cx.figure(
                "model-alloc-reuse".into(),
                format!("Caching allocator (bench alloc-reuse) under the cache model: a tensor of each size is requested, written and freed window after window, from the block just freed (reuse) or from fresh arena memory; misses per 64-byte line of the tensor and window at each level (1 = every line missed). Below a level's capacity reuse hits where fresh memory misses every line. {MODEL_SOURCE}."),
                plot,
            );
        }
    }

    fn model_checks(&self, _run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let mut f = Vec::new();
        let r = reuse(d);
        if let Some(l2) = d.geometry_of("L2").map(|g| g.size) {
            let below: Vec<&(u64, String, u64, u64)> = r.iter().filter(|x| x.1 == "L2" && x.0 < l2).collect();
            if !below.is_empty() {
                f.push((
                    below.iter().all(|x| x.2 < x.3),
                    format!(
                        "alloc-reuse: L2 misses reuse/fresh below the L2: {}",
                        below.iter().map(|x| format!("{} KiB {}/{}", x.0 >> 10, x.2, x.3)).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        f
    }
}

/// One alloc-reuse size: (bytes, level, misses with reuse, misses with fresh memory).
pub fn reuse(d: &ModelData) -> Vec<(u64, String, u64, u64)> {
    let mut out = Vec::new();
    for p in d.phases_of(Variant::Reuse) {
        let Some(bytes) = p.parsed.bytes else { continue };
        let Some(f) = d.phases_of(Variant::Fresh).find(|q| q.parsed.bytes == Some(bytes)) else { continue };
        for l in d.data_level_names() {
            out.push((bytes, l.clone(), misses(p, &l), misses(f, &l)));
        }
    }
    out
}

/// One alloc-reuse size at one level: misses per line of the tensor and window.
#[derive(Debug, Clone, PartialEq)]
pub struct ReusePoint {
    /// Tensor bytes.
    pub bytes: u64,
    /// Level.
    pub level: String,
    /// Reusing the block just freed.
    pub reuse: f64,
    /// Fresh arena memory.
    pub fresh: f64,
}

/// alloc-reuse per size and level, as misses per 64-byte line of the tensor and window (a
/// cold write misses once per line).
pub fn reuse_per_line(run: &[Record], d: &ModelData) -> Vec<ReusePoint> {
    let mut out = Vec::new();
    for p in d.phases_of(Variant::Reuse) {
        let Some(bytes) = p.parsed.bytes.filter(|&b| b >= 64) else { continue };
        let Some(f) = d.phases_of(Variant::Fresh).find(|q| q.parsed.bytes == Some(bytes)) else { continue };
        let per = |ph: &Phase, l: &str| misses(ph, l) as f64 / (bytes / 64) as f64 / windows_of(run, &ph.name) as f64;
        for l in d.data_level_names() {
            out.push(ReusePoint { bytes, level: l.clone(), reuse: per(p, &l), fresh: per(f, &l) });
        }
    }
    out.sort_by(|a, b| (a.bytes, &a.level).cmp(&(b.bytes, &b.level)));
    out
}
