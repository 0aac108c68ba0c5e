//! `kv-paged` under the model: L1D misses per token over the sweep, contiguous and per block size.

use super::{BenchView, Digest};
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvPaged
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let mut out = Vec::new();
        let rows = crate::dl::paged(d);
        if !rows.is_empty() {
            let parts: Vec<String> = rows
                .iter()
                .map(|r| {
                    let l1 = r.misses_per_token.iter().find(|(l, _)| l == "L1D").map_or(0.0, |x| x.1);
                    if r.contiguous {
                        format!("contiguous {l1:.2}")
                    } else {
                        format!("b{} {l1:.2}", r.block)
                    }
                })
                .collect();
            out.push((Bench::KvPaged.name(), format!("(model, L1D misses/token over the sweep) {}", parts.join(", "))));
        }
        out
    }
}
