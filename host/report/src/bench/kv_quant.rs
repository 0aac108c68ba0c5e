//! `kv-quant` under the model: the token count where each dtype's scan starts missing, measured and by formula.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::svg::{LinePlot, Marker, XScale};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvQuant
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let knees = crate::dl::quant_knees(run, d);
        if !knees.is_empty() {
            let parts: Vec<String> = knees
                .iter()
                .map(|k| {
                    format!(
                        "{} {} {}/{}",
                        k.dtype,
                        k.level,
                        k.measured.map_or("-".into(), |t| t.to_string()),
                        k.predicted.map_or("-".into(), |t| t.to_string())
                    )
                })
                .collect();
            out.push((Bench::KvQuant.name(), format!("(model, tokens: misses from/fits by formula) {}", parts.join(", "))));
        }
        out
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        // One figure per level, one series per dtype, the formula's capacity and the measured knee.
        let (d, recs, levels) = (cx.d, cx.run, cx.levels);
        // kv-quant: one figure per level, one series per dtype, the formula's capacity and the
        // measured knee in tokens per dtype.
        let quant = crate::dl::quant_curves(d);
        if !quant.is_empty() {
            let knees = crate::dl::quant_knees(recs, d);
            for level in levels {
                let series = super::per_level(&quant, level);
                if series.is_empty() {
                    continue;
                }
                let markers: Vec<Marker> = knees
                    .iter()
                    .filter(|k| &k.level == level)
                    .filter_map(|k| {
                        let x = k.predicted.or(k.measured)? as f64;
                        let knee = k.measured.map_or("none".into(), |t| t.to_string());
                        Some(Marker {
                            x,
                            label: format!("{} holds {} tokens (knee {knee})", k.dtype, k.predicted.map_or("?".into(), |t| t.to_string())),
                            knee: k.predicted.is_none(),
                        })
                    })
                    .collect();
                let plot = LinePlot {
                    labels: cx.labels(
                        &format!("kv-quant: {level} misses per token vs cached tokens, per dtype [model]"),
                        &format!("cached tokens (log2 scale); dashed: tokens of one layer the {level} holds by the formula, per dtype (measured knee in brackets)"),
                        &format!("{level} misses per cached token"),
                    ),
                    x_scale: XScale::Log2,
                    y_log: false,
                    series,
                    markers,
                };
                cx.figure(
                    format!("model-kv-quant-{}", level.to_lowercase()),
                    format!(
                        "KV quantization (bench kv-quant) under the cache model: {level} misses per cached token of one layer's scan per dtype; dashed where the formula (2 × layers × kv_heads × head_dim × dtype bytes, + per-block scales for int8/fp8, one layer) says the {level} is full, with the knee the model measures (first token count missing on ≥ {}% of accesses). Halving the bytes per token doubles the tokens that fit. Dequantization is out of scope. {MODEL_SOURCE}.",
                        crate::dl::KNEE_MISS * 100.0
                    ),
                    plot,
                );
            }
        }
    }
}
