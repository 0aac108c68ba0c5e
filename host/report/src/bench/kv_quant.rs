//! `kv-quant` under the model: the token count where each dtype's scan starts missing, measured and by formula.

use super::{BenchView, Digest};
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
}
