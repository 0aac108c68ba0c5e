//! `kv-prefix` under the model: hits and misses with the prefix shared and private, and the bytes sharing saves.

use super::{BenchView, Digest};
use cachescope_arch::bench::{Bench, Variant};

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::KvPrefix
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (run, d) = (cx.run, cx.d);
        let mut out = Vec::new();
        let pr = crate::dl::prefix(d);
        if !pr.is_empty() {
            let parts: Vec<String> = pr
                .iter()
                .map(|r| format!("{} {}", r.variant, r.levels.iter().map(|(l, h, m)| format!("{l} {h}/{m}")).collect::<Vec<_>>().join(" ")))
                .collect();
            let saved = |v| super::metric_of(run, v).and_then(|r| r.obj.get("pool_bytes").and_then(serde_json::Value::as_u64));
            let s = match (saved(Variant::Shared), saved(Variant::Private)) {
                (Some(a), Some(b)) if b >= a => format!("; saves {} KiB", (b - a) >> 10),
                _ => String::new(),
            };
            out.push((Bench::KvPrefix.name(), format!("(model, hits/misses) {}{s}", parts.join("; "))));
        }
        out
    }
}
