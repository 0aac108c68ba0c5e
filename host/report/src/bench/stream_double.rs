//! `stream-double` under the model: L1D/L2 misses without prefetch, with PRFM and double-buffered.

use super::{BenchView, Digest};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::StreamDouble
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let dbl = crate::dl::double(d);
        if !dbl.is_empty() {
            let parts: Vec<String> = dbl.iter().map(|(v, l1, l2, _)| format!("{v} {l1}/{l2}")).collect();
            out.push((Bench::StreamDouble.name(), format!("(model, L1D/L2 misses) {}", parts.join(", "))));
        }
        out
    }
}
