//! What the deep-learning benchmarks' analyses under the cache model share (issue 14): a
//! phase's misses and hits at a level, the scan curves of kv-paged and kv-quant, the measured
//! windows of a phase, steps on a token ladder. Each benchmark's own rows (kv-paged, kv-quant,
//! kv-prefix, alloc-reuse, stream-double) live in its view file, `crate::bench::NAME`.

use crate::model_data::{ModelData, Phase};
use crate::records::Record;
use cachescope_arch::bench::Param;
use serde_json::Value;

pub(crate) fn misses(p: &Phase, level: &str) -> u64 {
    p.level(level).map_or(0, |l| l.misses)
}

pub(crate) fn hits(p: &Phase, level: &str) -> u64 {
    p.level(level).map_or(0, |l| l.hits)
}

/// Steps between two token counts on a ladder (None when either is off it).
pub fn ladder_steps(ladder: &[u64], a: u64, b: u64) -> Option<usize> {
    let ia = ladder.iter().position(|&t| t >= a)?;
    let ib = ladder.iter().position(|&t| t >= b)?;
    Some(ia.abs_diff(ib))
}

/// One kv-paged layout's or kv-quant dtype's scans: misses per token at each token count.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanCurve {
    /// Legend name: `contiguous`, `block 16`, or a dtype (`int8`).
    pub name: String,
    /// Bytes one token adds to the scanned layer (the largest scan's bytes ÷ its tokens).
    pub bytes_per_token: f64,
    /// (tokens, (level, misses ÷ tokens)), in token order.
    pub points: Vec<(u64, Vec<(String, f64)>)>,
}

pub(crate) fn scan_curve(d: &ModelData, name: String, mut ps: Vec<&Phase>) -> ScanCurve {
    ps.sort_by_key(|p| p.parsed.num(Param::Tokens));
    ps.dedup_by_key(|p| p.parsed.num(Param::Tokens));
    let levels = d.data_level_names();
    let points: Vec<(u64, Vec<(String, f64)>)> = ps
        .iter()
        .filter_map(|p| {
            let t = p.parsed.num(Param::Tokens).filter(|&t| t > 0)?;
            Some((t, levels.iter().map(|l| (l.clone(), misses(p, l) as f64 / t as f64)).collect()))
        })
        .collect();
    let bytes_per_token =
        ps.iter().rev().find_map(|p| Some(p.parsed.bytes? as f64 / p.parsed.num(Param::Tokens).filter(|&t| t > 0)? as f64)).unwrap_or(0.0);
    ScanCurve { name, bytes_per_token, points }
}

/// Measured windows in a phase: the `reps` of the metric that names it (the model phase spans
/// the measured repetitions, not the warm-up), else 1.
pub fn windows_of(run: &[Record], phase: &str) -> u64 {
    run.iter()
        .find(|r| r.kind() == "metric" && r.obj.get("phase").and_then(Value::as_str) == Some(phase))
        .and_then(|r| r.obj.get("reps").and_then(Value::as_u64))
        .unwrap_or(1)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_on_a_ladder() {
        let l = [16, 24, 32, 48, 64];
        assert_eq!(ladder_steps(&l, 32, 32), Some(0));
        assert_eq!(ladder_steps(&l, 48, 32), Some(1));
        assert_eq!(ladder_steps(&l, 16, 64), Some(4));
        assert_eq!(ladder_steps(&l, 16, 65), None);
    }
}
