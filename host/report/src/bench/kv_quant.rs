//! `kv-quant` under the model: the token count where each dtype's scan starts missing, measured and by formula.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::dl::{ladder_steps, scan_curve, ScanCurve};
use crate::model_data::{ModelData, Phase};
use crate::records::Record;
use crate::svg::{LinePlot, Marker, XScale};
use cachescope_arch::bench::Bench;
use cachescope_arch::bench::{Param, Variant};
use serde_json::Value;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvQuant
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let knees = quant_knees(run, d);
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
        let quant = quant_curves(d);
        if !quant.is_empty() {
            let knees = quant_knees(recs, d);
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
                        KNEE_MISS * 100.0
                    ),
                    plot,
                );
            }
        }
    }

    fn model_checks(&self, run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let mut f = Vec::new();
        let knees = quant_knees(run, d);
        for level in ["L1D", "L2"] {
            let k = |dt: &str| knees.iter().find(|k| k.dtype == dt && k.level == level);
            if let (Some(h), Some(i)) = (k("fp16"), k("int8")) {
                let ok = match (h.measured, i.measured) {
                    (Some(a), Some(b)) => ladder_steps(&i.ladder, b, 2 * a).is_some_and(|s| s <= 1),
                    _ => false,
                };
                f.push((
                    ok,
                    format!(
                        "kv-quant {level} knee (tokens, measured/formula): fp16 {:?}/{:?}, int8 {:?}/{:?}: int8 within one sweep step of twice fp16",
                        h.measured, h.predicted, i.measured, i.predicted
                    ),
                ));
            }
        }
        f
    }
}

/// Where one dtype's scans leave one level: measured and predicted, in tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantKnee {
    /// Dtype.
    pub dtype: String,
    /// Level.
    pub level: String,
    /// The first token count on the ladder whose global miss rate reaches [`KNEE_MISS`].
    pub measured: Option<u64>,
    /// Tokens of one layer the level holds by the formula (`kv-layout` record and the model's
    /// geometry).
    pub predicted: Option<u64>,
    /// The token ladder swept.
    pub ladder: Vec<u64>,
}

/// The kv-quant knees per dtype and data level.
pub fn quant_knees(run: &[Record], d: &ModelData) -> Vec<QuantKnee> {
    let mut out = Vec::new();
    let mut variants: Vec<Variant> = Vec::new();
    for v in d.phases_in(Bench::KvQuant).filter_map(|p| p.parsed.variant_id()) {
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    for variant in variants {
        let dt = variant.name().trim_start_matches("scan-").to_string();
        let mut ps: Vec<&Phase> = d.phases_of(variant).filter(|p| p.parsed.num(Param::Tokens).is_some()).collect();
        ps.sort_by_key(|p| p.parsed.num(Param::Tokens));
        ps.dedup_by_key(|p| p.parsed.num(Param::Tokens));
        let layout = run.iter().find(|r| {
            r.kind() == "kv-layout"
                && r.obj.get("bench").and_then(Value::as_str) == Some(Bench::KvQuant.name())
                && r.obj.get("dtype").and_then(Value::as_str) == Some(&dt)
        });
        let per_block = layout.and_then(|r| Some((r.obj.get("block")?.as_u64()?, r.obj.get("scan_bytes_per_block")?.as_u64()?)));
        for level in d.data_level_names() {
            let measured =
                ps.iter().find(|p| p.global_rate(&level).is_some_and(|r| r >= KNEE_MISS)).and_then(|p| p.parsed.num(Param::Tokens));
            let predicted = match (d.geometry_of(&level), per_block) {
                (Some(g), Some((block, bytes))) if bytes > 0 => Some(g.size * block / bytes),
                _ => None,
            };
            out.push(QuantKnee {
                dtype: dt.clone(),
                level,
                measured,
                predicted,
                ladder: ps.iter().filter_map(|p| p.parsed.num(Param::Tokens)).collect(),
            });
        }
    }
    out
}

/// The kv-quant scans per dtype, in the order the run swept them.
pub fn quant_curves(d: &ModelData) -> Vec<ScanCurve> {
    let mut variants: Vec<Variant> = Vec::new();
    for v in d.phases_in(Bench::KvQuant).filter_map(|p| p.parsed.variant_id()) {
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    variants.iter().map(|&v| scan_curve(d, v.name().trim_start_matches("scan-").to_string(), d.phases_of(v).collect())).collect()
}

/// A global miss rate (misses ÷ data accesses) at which a kv-quant scan has left a level: one
/// access in 20. A scan that fits misses only on the few lines sharing sets with the stack.
pub const KNEE_MISS: f64 = 0.05;
