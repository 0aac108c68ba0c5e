//! `alloc-reuse` under the model: L2 misses of the reused block against fresh memory, and the trace's fragmentation.

use super::{BenchView, Digest};
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
}
