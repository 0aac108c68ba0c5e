//! The second-wave deep-learning patterns under the cache model (issue 14): paged KV against the
//! contiguous layout (`kv-paged`), the scan knee per KV dtype (`kv-quant`) beside the formula's,
//! shared against private prefixes (`kv-prefix`) and a caching allocator's reuse against fresh
//! memory (`alloc-reuse`). The digest, the report and `xtask model-observe` read them here.

use crate::model::{ModelData, Phase};
use crate::records::Record;
use cachescope_arch::bench::{Bench, Param, Variant};
use serde_json::Value;

/// A global miss rate (misses ÷ data accesses) at which a kv-quant scan has left a level: one
/// access in 20. A scan that fits misses only on the few lines sharing sets with the stack.
pub const KNEE_MISS: f64 = 0.05;

fn misses(p: &Phase, level: &str) -> u64 {
    p.level(level).map_or(0, |l| l.misses)
}

fn hits(p: &Phase, level: &str) -> u64 {
    p.level(level).map_or(0, |l| l.hits)
}

/// One kv-paged layout: its scans' misses per token over the whole sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedRow {
    /// Tokens per block (the capacity for the contiguous layout).
    pub block: u64,
    /// The contiguous layout.
    pub contiguous: bool,
    /// (level, misses summed over every scan ÷ tokens summed over them).
    pub misses_per_token: Vec<(String, f64)>,
}

/// The kv-paged layouts, contiguous first.
pub fn paged(d: &ModelData) -> Vec<PagedRow> {
    let mut rows: Vec<PagedRow> = Vec::new();
    for variant in [Variant::ScanContiguous, Variant::ScanPaged] {
        let mut blocks: Vec<u64> = d.phases_of(variant).filter_map(|p| p.parsed.num(Param::Block)).collect();
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            let ps: Vec<&Phase> = d.phases_of(variant).filter(|p| p.parsed.num(Param::Block) == Some(b)).collect();
            let tokens: u64 = ps.iter().filter_map(|p| p.parsed.num(Param::Tokens)).sum();
            let levels = d.data_level_names();
            let mpt =
                levels.iter().map(|l| (l.clone(), ps.iter().map(|p| misses(p, l)).sum::<u64>() as f64 / tokens.max(1) as f64)).collect();
            rows.push(PagedRow { block: b, contiguous: variant == Variant::ScanContiguous, misses_per_token: mpt });
        }
    }
    rows
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

/// Steps between two token counts on a ladder (None when either is off it).
pub fn ladder_steps(ladder: &[u64], a: u64, b: u64) -> Option<usize> {
    let ia = ladder.iter().position(|&t| t >= a)?;
    let ib = ladder.iter().position(|&t| t >= b)?;
    Some(ia.abs_diff(ib))
}

/// One kv-prefix variant: hits and misses per level over its scans.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixRow {
    /// `shared` or `private`.
    pub variant: String,
    /// (level, hits, misses).
    pub levels: Vec<(String, u64, u64)>,
}

/// The kv-prefix variants.
pub fn prefix(d: &ModelData) -> Vec<PrefixRow> {
    Bench::KvPrefix
        .variants()
        .iter()
        .filter_map(|&v| {
            let p = d.phases_of(v).next()?;
            Some(PrefixRow {
                variant: v.name().to_string(),
                levels: p.data_levels().map(|l| (l.level.clone(), l.hits, l.misses)).collect(),
            })
        })
        .collect()
}

/// One alloc-reuse size: (bytes, level, misses with reuse, misses with fresh memory).
pub fn reuse(d: &ModelData) -> Vec<(u64, String, u64, u64)> {
    let mut out = Vec::new();
    for p in d.phases_of(Variant::Reuse) {
        let Some(bytes) = p.parsed.bytes else { continue };
        let Some(f) = d.phases_of(Variant::Fresh).find(|q| q.parsed.bytes == Some(bytes)) else { continue };
        for l in d.data_level_names() {
            out.push((bytes, l.clone(), misses(p, &l), misses(f, &l)));
        }
    }
    out
}

/// The stream-double variants: (variant, L1D misses, L2 misses, L1D hits).
pub fn double(d: &ModelData) -> Vec<(String, u64, u64, u64)> {
    Bench::StreamDouble
        .variants()
        .iter()
        .filter_map(|&v| d.phases_of(v).next().map(|p| (v.name().to_string(), misses(p, "L1D"), misses(p, "L2"), hits(p, "L1D"))))
        .collect()
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

fn scan_curve(d: &ModelData, name: String, mut ps: Vec<&Phase>) -> ScanCurve {
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

/// The kv-paged scans per layout: the contiguous ring first, then each block size, ascending.
pub fn paged_curves(d: &ModelData) -> Vec<ScanCurve> {
    paged(d)
        .iter()
        .map(|r| {
            let variant = if r.contiguous { Variant::ScanContiguous } else { Variant::ScanPaged };
            let ps = d.phases_of(variant).filter(|p| p.parsed.num(Param::Block) == Some(r.block)).collect();
            scan_curve(d, if r.contiguous { "contiguous".into() } else { format!("block {}", r.block) }, ps)
        })
        .collect()
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

/// Measured windows in a phase: the `reps` of the metric that names it (the model phase spans
/// the measured repetitions, not the warm-up), else 1.
pub fn windows_of(run: &[Record], phase: &str) -> u64 {
    run.iter()
        .find(|r| r.kind() == "metric" && r.obj.get("phase").and_then(Value::as_str) == Some(phase))
        .and_then(|r| r.obj.get("reps").and_then(Value::as_u64))
        .unwrap_or(1)
        .max(1)
}

/// One alloc-reuse size at one level: misses per line of the tensor and window.
#[derive(Debug, Clone, PartialEq)]
pub struct ReusePoint {
    /// Tensor bytes.
    pub bytes: u64,
    /// Level.
    pub level: String,
    /// Reusing the block just freed.
    pub reuse: f64,
    /// Fresh arena memory.
    pub fresh: f64,
}

/// alloc-reuse per size and level, as misses per 64-byte line of the tensor and window (a
/// cold write misses once per line).
pub fn reuse_per_line(run: &[Record], d: &ModelData) -> Vec<ReusePoint> {
    let mut out = Vec::new();
    for p in d.phases_of(Variant::Reuse) {
        let Some(bytes) = p.parsed.bytes.filter(|&b| b >= 64) else { continue };
        let Some(f) = d.phases_of(Variant::Fresh).find(|q| q.parsed.bytes == Some(bytes)) else { continue };
        let per = |ph: &Phase, l: &str| misses(ph, l) as f64 / (bytes / 64) as f64 / windows_of(run, &ph.name) as f64;
        for l in d.data_level_names() {
            out.push(ReusePoint { bytes, level: l.clone(), reuse: per(p, &l), fresh: per(f, &l) });
        }
    }
    out.sort_by(|a, b| (a.bytes, &a.level).cmp(&(b.bytes, &b.level)));
    out
}

/// One stream-double variant under the model, per window.
#[derive(Debug, Clone, PartialEq)]
pub struct DoubleRow {
    /// `none`, `prfm` or `double`.
    pub variant: String,
    /// Cores that ran it (the metric's `cores` note; 1 without one).
    pub cores: u64,
    /// L1D demand misses (every core's).
    pub l1d_misses: f64,
    /// L2 misses.
    pub l2_misses: f64,
    /// Demand hits on lines a prefetch brought in (L1D).
    pub prefetch_hits: f64,
    /// Lines one core's read took from another core's cache (`model-coherence` interventions,
    /// summed over the vCPUs).
    pub interventions: f64,
}

/// The stream-double variants, counts per measured window.
pub fn double_rows(recs: &[Record], d: &ModelData) -> Vec<DoubleRow> {
    Bench::StreamDouble
        .variants()
        .iter()
        .filter_map(|&v| {
            let p = d.phases_of(v).next()?;
            let w = windows_of(recs, &p.name) as f64;
            let metric = recs.iter().find(|r| r.kind() == "metric" && r.obj.get("phase").and_then(Value::as_str) == Some(&p.name));
            let interventions: u64 = recs
                .iter()
                .filter(|r| r.kind() == "model-coherence" && r.obj.get("phase_id").and_then(Value::as_u64) == Some(p.id))
                .filter_map(|r| r.obj.get("interventions").and_then(Value::as_u64))
                .sum();
            Some(DoubleRow {
                variant: v.to_string(),
                cores: metric.and_then(|m| m.obj.get("cores").and_then(Value::as_u64)).unwrap_or(1),
                l1d_misses: misses(p, "L1D") as f64 / w,
                l2_misses: misses(p, "L2") as f64 / w,
                prefetch_hits: p.level("L1D").and_then(|l| l.prefetch_hits()).unwrap_or(0) as f64 / w,
                interventions: interventions as f64 / w,
            })
        })
        .collect()
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
