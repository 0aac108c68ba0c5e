//! The core-to-core latency matrix (the smp suite's `c2c` benchmark): per ordered pair of cores,
//! the timer's cost of one one-way line hand-over (median and spread of the windows) and, under
//! the cache model, the modelled cycles of the benchmark line's hand-overs, priced by the
//! model's topology (`model-topology`: in-cluster and cross-cluster hand-over costs) and split
//! in-cluster / cross-cluster by the model's coherence records (`buf_cluster_handovers`,
//! `buf_cross_handovers`). The digest prints its in-/cross-cluster summary; the report draws it
//! as a heat map.

use std::fmt::Write;

use cachescope_arch::bench::{Param, SmpBench};
use serde_json::Value;

use crate::metrics::Metric;
use crate::model_data::ModelData;
use crate::svg::esc;

/// The model's view of one pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Modelled {
    /// Hand-overs of the benchmark line between cores of one cluster (all windows).
    pub cluster: u64,
    /// Hand-overs of it between clusters.
    pub cross: u64,
    /// Modelled cycles per hand-over (`None`: the profile gives no hand-over costs).
    pub cycles: Option<f64>,
}

/// One ordered pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The core that writes first.
    pub from: usize,
    /// The other core.
    pub to: usize,
    /// Timer: (median, median absolute deviation) of one one-way hand-over, in the record's unit.
    pub timer: Option<(f64, f64)>,
    /// The model's figures, under the model.
    pub model: Option<Modelled>,
}

/// The matrix of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Cores (one more than the highest core in a pair).
    pub cores: usize,
    /// The timer's unit (`ns`, or `insns` under -icount).
    pub unit: String,
    /// Whether the timer measured an emulator.
    pub emulated: bool,
    /// Every measured pair, in record order.
    pub pairs: Vec<Pair>,
}

fn param(m: &Metric, p: Param) -> Option<usize> {
    m.obj.get("params")?.get(p.name())?.as_u64().map(|v| v as usize)
}

/// The model's hand-over costs: (in-cluster, cross-cluster) cycles.
fn costs(md: &ModelData) -> (Option<f64>, Option<f64>) {
    let t = md.topology.as_ref();
    let get = |k: &str| t.and_then(|o| o.get(k)).and_then(Value::as_f64);
    (get("handover_in_cycles"), get("handover_cross_cycles"))
}

impl Matrix {
    /// The matrix from the run's `c2c` metrics and the model's phases; `None` without any.
    pub fn collect(metrics: &[Metric], md: &ModelData) -> Option<Matrix> {
        let (cin, ccross) = costs(md);
        let mut pairs = Vec::new();
        let (mut unit, mut emulated) = (String::new(), false);
        for m in metrics.iter().filter(|m| m.key.bench == SmpBench::C2c.name() && m.key.source != "model") {
            let (Some(from), Some(to)) = (param(m, Param::From), param(m, Param::To)) else { continue };
            let per = m.obj.get("handovers_per_op").and_then(Value::as_f64).unwrap_or(1.0).max(1.0);
            let timer = m.median.map(|v| (v / per, m.mad.unwrap_or(0.0) / per));
            unit.clone_from(&m.key.unit);
            emulated |= m.emulated == Some(true);
            let phase = m.obj.get("phase").and_then(Value::as_str);
            let model = phase.and_then(|name| md.phases.iter().find(|p| p.name == name)).and_then(|p| p.coherence).map(|c| {
                let n = c.cluster_handovers + c.cross_handovers;
                let cycles = match (cin, ccross, n) {
                    (_, _, 0) => None,
                    (Some(i), Some(x), _) => Some((c.cluster_handovers as f64 * i + c.cross_handovers as f64 * x) / n as f64),
                    (Some(i), None, _) if c.cross_handovers == 0 => Some(i),
                    _ => None,
                };
                Modelled { cluster: c.cluster_handovers, cross: c.cross_handovers, cycles }
            });
            pairs.push(Pair { from, to, timer, model });
        }
        let cores = pairs.iter().map(|p| p.from.max(p.to) + 1).max()?;
        Some(Matrix { cores, unit, emulated, pairs })
    }

    /// The pair (`from`, `to`).
    pub fn get(&self, from: usize, to: usize) -> Option<&Pair> {
        self.pairs.iter().find(|p| p.from == from && p.to == to)
    }

    /// The digest's line: under the model, the in-/cross-cluster summary of the modelled cycles
    /// (pairs, cycles per hand-over, their ratio); else the timer's smallest, median and largest
    /// pair.
    pub fn digest(&self) -> String {
        let modelled: Vec<Modelled> = self.pairs.iter().filter_map(|p| p.model).collect();
        if !modelled.is_empty() {
            let group = |cross: bool| -> (usize, Option<(f64, f64)>) {
                let g: Vec<f64> = modelled
                    .iter()
                    .filter(|m| if cross { m.cross > 0 } else { m.cross == 0 && m.cluster > 0 })
                    .filter_map(|m| m.cycles)
                    .collect();
                let n = modelled.iter().filter(|m| if cross { m.cross > 0 } else { m.cross == 0 && m.cluster > 0 }).count();
                let lo = g.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (n, (!g.is_empty()).then_some((lo, hi)))
            };
            let show = |(lo, hi): (f64, f64)| if lo == hi { format!("{lo:.0}") } else { format!("{lo:.0}-{hi:.0}") };
            let (ni, ci) = group(false);
            let (nx, cx) = group(true);
            let mut s = format!("(model, cycles per one-way hand-over) {} pairs: in-cluster {ni}", self.pairs.len());
            if let Some(c) = ci {
                let _ = write!(s, " at {}", show(c));
            }
            if nx > 0 {
                let _ = write!(s, ", cross-cluster {nx}");
                if let Some(c) = cx {
                    let _ = write!(s, " at {}", show(c));
                }
                if let (Some(i), Some(x)) = (ci, cx) {
                    let _ = write!(s, " ({:.2}x)", x.0 / i.0);
                }
            }
            return s;
        }
        let mut t: Vec<f64> = self.pairs.iter().filter_map(|p| p.timer.map(|t| t.0)).collect();
        if t.is_empty() {
            return format!("{} pairs, no timer figures", self.pairs.len());
        }
        t.sort_by(f64::total_cmp);
        format!(
            "(timer{}, {} per one-way hand-over) {} pairs: min {:.1}, median {:.1}, max {:.1}",
            if self.emulated { ", emulated: not silicon" } else { "" },
            self.unit,
            self.pairs.len(),
            t[0],
            t[t.len() / 2],
            t[t.len() - 1]
        )
    }

    /// The heat map as SVG: one cell per ordered pair (row `from`, column `to`), coloured from
    /// the smallest to the largest value; the model's cycles when modelled, else the timer's.
    pub fn heat_map(&self) -> String {
        let modelled = self.pairs.iter().any(|p| p.model.and_then(|m| m.cycles).is_some());
        let value = |p: &Pair| if modelled { p.model.and_then(|m| m.cycles) } else { p.timer.map(|t| t.0) };
        let vals: Vec<f64> = self.pairs.iter().filter_map(value).collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (cell, left, top) = (44.0, 60.0, 70.0);
        let n = self.cores as f64;
        let (w, h) = (left + n * cell + 20.0, top + n * cell + 40.0);
        let what = if modelled {
            "cache model: modelled cycles per one-way hand-over (latency table and coherence protocol)".to_string()
        } else {
            format!("timer: {} per one-way hand-over, median{}", self.unit, if self.emulated { " (emulated: not silicon)" } else { "" })
        };
        let mut s = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#);
        let _ = write!(s, r#"<text x="10" y="20" font-size="14">core-to-core latency</text><text x="10" y="40">{}</text>"#, esc(&what));
        let _ = write!(s, r#"<text x="{}" y="{}">to core</text>"#, left, top - 22.0);
        let _ = write!(s, r#"<text x="10" y="{}">from</text>"#, top + 12.0);
        for k in 0..self.cores {
            let c = k as f64 * cell + cell / 2.0;
            let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{k}</text>"#, left + c, top - 6.0);
            let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="end">{k}</text>"#, left - 6.0, top + c + 4.0);
        }
        for p in &self.pairs {
            let (x, y) = (left + p.to as f64 * cell, top + p.from as f64 * cell);
            let Some(v) = value(p) else { continue };
            let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
            // From pale yellow (cheapest) to dark red (dearest).
            let (r, g, b) = (255.0 - 80.0 * t, 240.0 - 200.0 * t, 180.0 - 150.0 * t);
            let _ = write!(
                s,
                r#"<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb({:.0},{:.0},{:.0})" stroke="white"><title>{} to {}: {v:.1}</title></rect><text x="{}" y="{}" text-anchor="middle" font-size="10">{v:.0}</text>"#,
                r,
                g,
                b,
                p.from,
                p.to,
                x + cell / 2.0,
                y + cell / 2.0 + 4.0
            );
        }
        s += "</svg>\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Log;
    use crate::records::Record;

    fn records(text: &str) -> Vec<Record> {
        crate::records::extract(&Log::from_bytes("t", text.as_bytes())).0
    }

    #[test]
    fn two_clusters_show_two_blocks() {
        let mut text = String::from(
            r#"# cs: {"record":"model-topology","clusters":2,"cores_per_cluster":2,"cluster_cache":"dsu-l3-snoop-filter","interconnect":"cmn-hnf-slc","handover_in_cycles":41,"handover_cross_cycles":103,"handover_ref":"x","source":"model"}"#,
        );
        text.push('\n');
        for from in 0..4u64 {
            for to in (0..4u64).filter(|&t| t != from) {
                let phase = format!("c2c/line-handover/normal-wb/64/iters=100/from={from}/to={to}");
                let cross = from / 2 != to / 2;
                let _ = writeln!(
                    text,
                    r#"# cs: {{"record":"metric","bench":"c2c","variant":"line-handover","attr":"normal-wb","bytes":64,"params":{{"iters":100,"from":{from},"to":{to}}},"phase":"{phase}","reps":3,"min":50,"median":58.4,"max":61,"mad":0.2,"unit":"ns","source":"cntvct","emulated":true,"handovers_per_op":2}}"#
                );
                let (c, x) = if cross { (0, 600) } else { (600, 0) };
                let _ = writeln!(
                    text,
                    r#"# cs: {{"record":"model-coherence","phase":"{phase}","phase_id":{},"cpu":0,"invalidations":0,"interventions":0,"upgrades":0,"snoop_hits":0,"snoop_misses":0,"remote_maint":0,"buf_invalidations":0,"buf_interventions":0,"buf_upgrades":0,"cross_invalidations":0,"cross_interventions":0,"cross_remote_maint":0,"cluster_handovers":{c},"cross_handovers":{x},"buf_cluster_handovers":{c},"buf_cross_handovers":{x},"source":"model"}}"#,
                    from * 4 + to
                );
            }
        }
        let recs = records(&text);
        let (metrics, _) = Metric::collect(&recs);
        let md = ModelData::from_records(&recs);
        let m = Matrix::collect(&metrics, &md).expect("a matrix");
        assert_eq!((m.cores, m.pairs.len()), (4, 12));
        assert_eq!(m.get(0, 1).unwrap().model.unwrap().cycles, Some(41.0));
        assert_eq!(m.get(1, 2).unwrap().model.unwrap().cycles, Some(103.0));
        assert_eq!(m.get(3, 0).unwrap().timer, Some((29.2, 0.1)));
        let d = m.digest();
        assert_eq!(d, "(model, cycles per one-way hand-over) 12 pairs: in-cluster 4 at 41, cross-cluster 8 at 103 (2.51x)", "{d}");
        let svg = m.heat_map();
        assert_eq!(svg.matches("<rect").count(), 12);
        assert!(svg.contains("<title>1 to 2: 103.0</title>") && svg.contains("modelled cycles"));
        assert!(Matrix::collect(&[], &ModelData::default()).is_none());
        // The timer alone: its smallest, median and largest pair, flagged as emulated.
        let timer_only = Matrix::collect(&metrics, &ModelData::default()).unwrap();
        assert_eq!(
            timer_only.digest(),
            "(timer, emulated: not silicon, ns per one-way hand-over) 12 pairs: min 29.2, median 29.2, max 29.2"
        );
        assert!(timer_only.heat_map().contains("timer: ns per one-way hand-over"));
    }
}
