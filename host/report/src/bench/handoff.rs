//! The `handoff` benchmark under the model: reads, write-backs and maintenance per MiB, one
//! line per direction.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::digest_format::{n3, short_variant};
use crate::model_data::ModelData;
use crate::svg::BarChart;
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Handoff
    }

    fn figures(&self) -> super::Figures {
        super::Figures::Titled { heading: "Pinned DMA-like buffer hand-off", title: "DMA-like hand-off cost per attribute" }
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let h = handoff(d);
        for dir in ["to-", "from-"] {
            let parts: Vec<String> = h
                .iter()
                .filter(|r| r.variant.starts_with(dir))
                .map(|r| {
                    let v = short_variant(&r.variant);
                    format!("{} {}/{}/{}", v.trim_start_matches(dir), n3(r.memory_reads), n3(r.memory_writebacks), n3(r.maint))
                })
                .collect();
            if !parts.is_empty() {
                let label = if dir == "to-" { Bench::Handoff.name() } else { "" };
                out.push((label, format!("(model /MiB reads/writebacks/maint) {}device: {}", dir, parts.join(", "))));
            }
        }
        let other: Vec<String> = h
            .iter()
            .filter(|r| !r.variant.starts_with("to-") && !r.variant.starts_with("from-"))
            .map(|r| format!("{} {}/{}/{}", r.variant, n3(r.memory_reads), n3(r.memory_writebacks), n3(r.maint)))
            .collect();
        if !other.is_empty() {
            out.push((Bench::Handoff.name(), format!("(model /MiB reads/writebacks/maint) {}", other.join(", "))));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // Misses, memory reads and writebacks and maintained lines per MiB handed off.
        let d = cx.d;
        // Hand-off per MiB.
        let h = handoff(d);
        if !h.is_empty() {
            let chart = BarChart {
                labels: cx.labels("DMA-like hand-off per MiB [model]", "variant", "per MiB handed off"),
                categories: h.iter().map(|r| r.variant.clone()).collect(),
                series: vec![
                    ("L1D misses".into(), h.iter().map(|r| Some(r.l1d_misses)).collect()),
                    ("memory reads".into(), h.iter().map(|r| Some(r.memory_reads)).collect()),
                    ("memory writebacks".into(), h.iter().map(|r| Some(r.memory_writebacks)).collect()),
                    ("maint lines".into(), h.iter().map(|r| Some(r.maint)).collect()),
                ],
            };
            cx.figure(
                "model-handoff".into(),
                format!("Hand-off variants under the cache model, per MiB handed off: L1D misses, reads from memory (last-level misses), writebacks to memory (last-level writebacks), lines touched by maintenance at all levels (bar = exact count ÷ MiB). NC variants bypass the caches. {MODEL_SOURCE}."),
                chart,
            );
        }
    }
}

/// One hand-off phase (`handoff/VARIANT/ATTR/BYTES`) per MiB handed off.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffRow {
    /// Variant (`to-device-va-maint`, …).
    pub variant: String,
    /// Attribute.
    pub attr: String,
    /// Bytes handed off.
    pub bytes: u64,
    /// L1D misses per MiB.
    pub l1d_misses: f64,
    /// Last-level misses per MiB (reads from memory).
    pub memory_reads: f64,
    /// Last-level writebacks per MiB (writes to memory).
    pub memory_writebacks: f64,
    /// Lines touched by maintenance, all levels, per MiB.
    pub maint: f64,
    /// Accesses that bypassed the caches, per MiB.
    pub bypass: f64,
}

/// The hand-off phases per MiB, in phase order.
pub fn handoff(d: &ModelData) -> Vec<HandoffRow> {
    d.phases
        .iter()
        .filter(|p| p.parsed.of(Bench::Handoff) && p.parsed.bytes.is_some_and(|b| b > 0))
        .map(|p| {
            let bytes = p.parsed.bytes.unwrap_or(1);
            let per = |v: u64| v as f64 * 1048576.0 / bytes as f64;
            let last = p.data_levels().last();
            HandoffRow {
                variant: p.parsed.variant.clone(),
                attr: p.parsed.attr.clone(),
                bytes,
                l1d_misses: per(p.level("L1D").map_or(0, |l| l.misses)),
                memory_reads: per(last.map_or(0, |l| l.misses)),
                memory_writebacks: per(last.map_or(0, |l| l.writebacks)),
                maint: per(p.data_levels().map(|l| l.maint).sum()),
                bypass: per(p.bypass()),
            }
        })
        .collect()
}
