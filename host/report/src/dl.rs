//! What the deep-learning benchmarks' analyses under the cache model share (issue 14): a
//! phase's misses and hits at a level, the scan curves of kv-paged and kv-quant, the measured
//! windows of a phase, steps on a token ladder; and the checks issue 14 asks of a run
//! (`checks`, for `xtask model-observe`). Each benchmark's own rows (kv-paged, kv-quant,
//! kv-prefix, alloc-reuse, stream-double) live in its view file, `crate::bench::NAME`.

use crate::bench::alloc_reuse::reuse;
use crate::bench::kv_paged::{paged, PagedRow};
use crate::bench::kv_prefix::{prefix, PrefixRow};
use crate::bench::kv_quant::quant_knees;
use crate::bench::stream_double::double_rows;
use crate::model::{ModelData, Phase};
use crate::records::Record;
use cachescope_arch::bench::{Param, Variant};
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

/// The checks issue 14 asks of a run under the model: (passed, what). Empty when the run has
/// none of these benchmarks.
pub fn checks(run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
    let mut f = Vec::new();
    let rows = paged(d);
    if let Some(c) = rows.iter().find(|r| r.contiguous) {
        let l1 = |r: &PagedRow| r.misses_per_token.iter().find(|(l, _)| l == "L1D").map_or(0.0, |x| x.1);
        let paged: Vec<&PagedRow> = rows.iter().filter(|r| !r.contiguous).collect();
        if let (Some(small), Some(large)) = (paged.first(), paged.last()) {
            let (dc, ds, dl) = (l1(c), l1(small) - l1(c), l1(large) - l1(c));
            f.push((
                ds > 0.0 && dl.abs() < ds,
                format!(
                    "kv-paged: L1D misses/token over the sweep: contiguous {:.2}, block {} {:.2} (+{:.2}), block {} {:.2} ({:+.2}): paged misses more at small blocks and converges",
                    dc,
                    small.block,
                    l1(small),
                    ds,
                    large.block,
                    l1(large),
                    dl
                ),
            ));
        }
    }
    let pr = prefix(d);
    if let (Some(s), Some(p)) =
        (pr.iter().find(|r| r.variant == Variant::Shared.name()), pr.iter().find(|r| r.variant == Variant::Private.name()))
    {
        let l2 = |r: &PrefixRow| r.levels.iter().find(|l| l.0 == "L2").map_or((0, 0), |l| (l.1, l.2));
        let (sh, ph) = (l2(s), l2(p));
        f.push((
            sh.0 > ph.0 && sh.1 < ph.1,
            format!(
                "kv-prefix: L2 hits/misses shared {}/{}, private {}/{}: the shared prefix hits across sequences",
                sh.0, sh.1, ph.0, ph.1
            ),
        ));
    }
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
    let r = reuse(d);
    if let Some(l2) = d.geometry_of("L2").map(|g| g.size) {
        let below: Vec<&(u64, String, u64, u64)> = r.iter().filter(|x| x.1 == "L2" && x.0 < l2).collect();
        if !below.is_empty() {
            f.push((
                below.iter().all(|x| x.2 < x.3),
                format!(
                    "alloc-reuse: L2 misses reuse/fresh below the L2: {}",
                    below.iter().map(|x| format!("{} KiB {}/{}", x.0 >> 10, x.2, x.3)).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    let dbl = double_rows(run, d);
    if let (Some(none), Some(prfm)) = (dbl.iter().find(|r| r.variant == "none"), dbl.iter().find(|r| r.variant == "prfm")) {
        let double = dbl.iter().find(|r| r.variant == "double").map_or(String::new(), |r| {
            format!("; double buffering {:.0} over {} cores ({:.0} lines from the other core)", r.l1d_misses, r.cores, r.interventions)
        });
        f.push((
            prfm.l1d_misses < none.l1d_misses && prfm.prefetch_hits > 0.0,
            format!(
                "stream-double: L1D misses per window: none {:.0}, prfm {:.0} ({:.0} prefetch hits){double}: PRFM turns read misses into prefetch hits",
                none.l1d_misses, prfm.l1d_misses, prfm.prefetch_hits
            ),
        ));
    }
    f
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
