//! The `infer` benchmark: its sweeps are read as a geometry (the digest's `geometry` line, from
//! the model's counts), not as timed figures.

use super::{BenchView, Digest};
use crate::metrics::human_bytes as hb;
use cachescope_arch::bench::Bench;

/// The view.
pub struct View;

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Infer
    }

    fn timed(&self) -> bool {
        false
    }

    fn emulated_figures(&self) -> bool {
        false
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let (d, inf) = (cx.d, cx.inf);
        let mut out = Vec::new();
        let has_infer = d.phases_in(Bench::Infer).next().is_some();
        out.push((
            "geometry",
            if !has_infer && inf.levels.iter().all(|l| l.capacity.is_none()) {
                "not inferred: no infer/ phases and no chase knees".to_string()
            } else {
                let mut parts = vec![format!("line {}", inf.line.as_ref().map_or("?".into(), |l| format!("{} B", l.value)))];
                for l in &inf.levels {
                    let cap = l.capacity.as_ref().map(|c| hb(c.value as f64));
                    let ways = l.ways.as_ref().map(|w| format!("{}-way", w.value));
                    if cap.is_none() && ways.is_none() {
                        continue;
                    }
                    parts.push(format!(
                        "{} {} {} (CCSIDR {}{})",
                        l.level,
                        cap.unwrap_or_else(|| "?".into()),
                        ways.unwrap_or_else(|| "?-way".into()),
                        l.ccsidr.map_or("–".into(), |c| c.1.to_string()),
                        l.silicon.as_ref().map(|s| format!(", silicon {}", s.1)).unwrap_or_default()
                    ));
                }
                if !has_infer {
                    parts.push("no infer/ phases".into());
                }
                format!("(inferred from model counts) {}", parts.join("; "))
            },
        ));
        out
    }
}
