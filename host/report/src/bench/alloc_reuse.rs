//! `alloc-reuse` under the model: L2 misses of the reused block against fresh memory, and the trace's fragmentation.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::svg::{LinePlot, Point, Series, XScale};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::AllocReuse
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let r = crate::dl::reuse(d);
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
        let reuse = crate::dl::reuse_per_line(recs, d);
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
}
