//! `model-observe`: what the cache model must show of the main job's benchmarks, read from the
//! records with the report tool's analysis (`cachescope_report::model_data`, the one home of the
//! rules the digest and the figures use):
//!
//! - the latency sweep's L1D and L2 knees, found in the model's miss rates, at the capacities
//!   the model simulates (CCSIDR's under the guest geometry);
//! - the modelled latency per access rising across each knee;
//! - every PRFM stream variant with fewer demand misses than the plain LDP loop at the level
//!   it names (PLDL1STRM: L1D, PLDL2KEEP: L2);
//! - the inferred line size, and ways per level equal to the simulated geometry (4-way L1D
//!   under the guest geometry; 2-way under `rpi4`, where CCSIDR says 4);
//! - issue 14's deep-learning patterns (`cachescope_report::bench::model_checks`): paged KV scans missing
//!   more per token than the contiguous layout at small blocks and converging as blocks grow,
//!   the shared prefix's L2 hits across sequences, int8's knee within one sweep step of twice
//!   fp16's (L1D and L2), and the caching allocator's reuse missing less than fresh memory below
//!   the L2.

use cachescope_arch::bench::Param;
use cachescope_report::bench::stream::{stream, StreamRow};
use cachescope_report::input::Log;
use cachescope_report::model_data::{self, ModelData};
use cachescope_report::records;

/// One finding: (passed, what).
pub type Finding = (bool, String);

/// Reads a kernel log and its model log.
pub fn load(log: &str, model_log: &str) -> Result<(Vec<records::Record>, ModelData), String> {
    let run = Log::load(log).map_err(|e| e.to_string())?;
    let m = Log::load(model_log).map_err(|e| e.to_string())?;
    let run_recs = records::extract(&run).0;
    let d = ModelData::from_records(&records::extract(&m).0);
    if d.is_empty() {
        return Err(format!("{model_log}: no cache-model records"));
    }
    Ok((run_recs, d))
}

/// The latency, stream and geometry checks of a main-job run under the model.
pub fn benchmarks(run: &[records::Record], d: &ModelData) -> Vec<Finding> {
    let mut f = Vec::new();
    let curves = model_data::chase_curves(d);
    let Some(wb) = curves.iter().find(|c| c.attr == "normal-wb") else {
        return vec![(false, "no latency/chase/normal-wb phases under the model".into())];
    };
    for level in ["L1D", "L2"] {
        let size = d.geometry_of(level).map(|g| g.size);
        match (model_data::knee_of(wb, level), size) {
            (Some(k), Some(size)) => f.push((
                k.fits == size,
                format!(
                    "{level} knee from miss rates: fits {} B (miss rate {:.3}), next {} B ({:.3}); the model simulates {size} B",
                    k.fits, k.rate_fits, k.jump, k.rate_jump
                ),
            )),
            (k, size) => f.push((false, format!("{level}: knee {k:?}, simulated size {size:?}"))),
        }
    }
    // Modelled latency per access: below L1D, between L1D and L2, past L2.
    let at = |bytes: u64| {
        wb.points.iter().filter(|p| p.bytes <= bytes).max_by_key(|p| p.bytes).and_then(|p| p.ns_per_access.map(|n| (p.bytes, n)))
    };
    let (l1, l2) = (d.geometry_of("L1D").map_or(0, |g| g.size), d.geometry_of("L2").map_or(0, |g| g.size));
    match (at(l1 / 2), at(l2 / 2), wb.points.last().and_then(|p| p.ns_per_access.map(|n| (p.bytes, n)))) {
        (Some(a), Some(b), Some(c)) => f.push((
            a.1 < b.1 && b.1 < c.1,
            format!(
                "modelled latency per access rises across the knees: {} B {:.2} ns, {} B {:.2} ns, {} B {:.2} ns",
                a.0, a.1, b.0, b.1, c.0, c.1
            ),
        )),
        other => f.push((false, format!("modelled latency missing (model-time records?): {other:?}"))),
    }
    let stream: Vec<_> = stream(d).into_iter().filter(|r| r.attr == "normal-wb" && r.variant.starts_with("read-")).collect();
    match stream.iter().find(|r| r.variant == "read-ldp") {
        None => f.push((false, "no stream/read-ldp/normal-wb phase under the model".into())),
        Some(plain) => {
            let prefetching: Vec<_> = stream.iter().filter(|r| r.is_prefetch()).collect();
            if prefetching.is_empty() {
                f.push((false, "no PRFM stream variants under the model".into()));
            }
            for r in prefetching {
                // A PRFM fills the level it names (…L1…, …L2…): its demand misses drop there.
                let level = if r.variant.contains("l2") {
                    "L2"
                } else if r.variant.contains("l3") {
                    "L3"
                } else {
                    "L1D"
                };
                let misses = |row: &StreamRow| row.misses.iter().find(|(l, _)| l == level).map(|&(_, n)| n);
                let (with, without) = (misses(r), misses(plain));
                f.push((
                    matches!((with, without), (Some(a), Some(b)) if a < b),
                    format!(
                        "stream {}: {with:?} {level} demand misses against read-ldp's {without:?} ({} prefetches, {} prefetch hits)",
                        r.variant,
                        r.prefetches.map_or("?".into(), |n| n.to_string()),
                        r.prefetch_hits.map_or("?".into(), |n| n.to_string())
                    ),
                ));
            }
        }
    }
    f.extend(geometry(run, d));
    // Issue 14's deep-learning patterns: paged vs contiguous, shared prefix, int8 knee, reuse.
    let dl = cachescope_report::bench::model_checks(run, d);
    if dl.is_empty() {
        f.push((false, "no kv-paged / kv-prefix / kv-quant / alloc-reuse phases under the model".into()));
    }
    f.extend(dl);
    f
}

/// The inferred line size and ways against the geometry the model simulated.
pub fn geometry(run: &[records::Record], d: &ModelData) -> Vec<Finding> {
    let mut f = Vec::new();
    let inferred = model_data::infer(run, d);
    let simulated_line = d.geometry_of("L1D").map(|g| g.line);
    let line = inferred.line.as_ref().map(|l| l.value);
    f.push((line.is_some() && line == simulated_line, format!("line size inferred {line:?} B, simulated {simulated_line:?} B")));
    let sweeps = model_data::infer_ways(d);
    if sweeps.is_empty() {
        f.push((false, "no infer/ways phases under the model".into()));
    }
    for w in sweeps {
        let simulated = d.geometry_of(&w.level).map(|g| g.ways);
        let ccsidr = inferred.levels.iter().find(|l| l.level == w.level).and_then(|l| l.ccsidr).map(|c| c.1);
        f.push((
            w.ways.is_some() && w.ways == simulated,
            format!("{} ways inferred {:?} (spacing {} B), simulated {simulated:?}, CCSIDR {ccsidr:?}", w.level, w.ways, w.spacing),
        ));
    }
    f
}

/// The coherent model's transfers of the smp suite, from its `model-coherence` records (summed
/// over vCPUs, buffer lines only) against what each benchmark must cause:
/// - ping-pong on normal-wb: one transfer (intervention) per hand-over, two hand-overs per round
///   trip: 2 × iters × reps; on normal-nc none (non-cacheable lines are not snooped);
/// - false sharing padded to CWG: no invalidation; on a shared line: one invalidation and one
///   transfer per core per window (cores × reps: each core's increments run in one round-robin
///   slice under `-icount`);
/// - SPSC ring: every data line once (reps × batches × bytes/64) and one head and one tail
///   transfer per burst of `slots` batches (2 × reps × batches / slots);
/// - ring all-reduce: reps × ranks × (2 ranks − 3) × chunk/64 transfers (every step's pull of the
///   left neighbour's chunk but step 0's, already Shared since the previous round's step n); with
///   two ranks a round has no step n (steps 0 and 1), so reps × 2 × 2 × chunk/64.
///
/// Exact with four cores too: the plugin identifies cores by TPIDR_EL1 (marker protocol 5;
/// docs/cache-model.md, Coherence).
pub fn smp(run: &[records::Record], d: &ModelData) -> Vec<Finding> {
    // Buffer-line (transfers, invalidations) of the phases named `phase`, over every vCPU.
    let sum = |phase: &str| -> (u64, u64) {
        d.phases
            .iter()
            .filter(|p| p.name == phase)
            .filter_map(|p| p.coherence)
            .fold((0, 0), |a, c| (a.0 + c.transfers, a.1 + c.invalidations))
    };
    let mut f = Vec::new();
    for metric in run.iter().filter_map(|r| r.view::<cachescope_arch::record::MetricView<_>>()) {
        let (Some(phase), Some(reps)) = (metric.phase(), metric.reps()) else {
            continue;
        };
        let name = model_data::PhaseName::parse(phase);
        let (ivs, invs) = sum(phase);
        match (name.bench.as_str(), name.attr.as_str()) {
            ("pingpong", "normal-wb") => {
                let want = 2 * name.num(Param::Iters).unwrap_or(0) * reps;
                f.push((ivs == want, format!("{phase}: {ivs} transfers, expected 2 × iters × reps = {want}")));
            }
            ("pingpong", _) => {
                f.push((ivs + invs == 0, format!("{phase}: {ivs} transfers, {invs} invalidations, expected none (not snooped)")))
            }
            ("falseshare", _) if name.variant.starts_with("padded") => {
                f.push((invs == 0, format!("{phase}: {invs} invalidations, expected none (padded to CWG)")))
            }
            // Under -icount's round-robin each core runs its increments of a window without a
            // switch (the switch comes at the barrier's wait), so each core takes the shared line
            // once per window: the fewest transfers N counters on one line can cost (exact here;
            // concurrent cores could cost up to one per increment).
            ("falseshare", _) => {
                let want = name.num(Param::Cores).unwrap_or(0) * reps;
                f.push((
                    invs == want && ivs == want,
                    format!(
                        "{phase}: {invs} invalidations, {ivs} transfers, expected cores × reps = {want} each (one per core per window)"
                    ),
                ))
            }
            // Ring all-reduce: every step each rank pulls its left neighbour's chunk, written by
            // that neighbour in the step before (a dirty line: one transfer per line), except at
            // step 0, whose chunk the rank already pulled (Shared) at step n of the previous round:
            // reps × n × (2n − 3) × chunk lines for n ≥ 3 (a warm-up round precedes the measured ones).
            ("allreduce", _) => {
                let (n, lines) = (name.num(Param::Ranks).unwrap_or(0), name.bytes.unwrap_or(0).div_ceil(64));
                // A round has 2(n − 1) steps; step 0's exception needs a step n, so only n ≥ 3
                // has it (two ranks: steps 0 and 1, each a transfer).
                let per_rank = if n >= 3 { 2 * n - 3 } else { 2 * n.saturating_sub(1) };
                let want = reps * n * per_rank * lines;
                let rule = if n >= 3 { "2 ranks − 3" } else { "2 (ranks − 1)" };
                f.push((ivs == want, format!("{phase}: {ivs} transfers, expected reps × ranks × ({rule}) × chunk lines = {want}")));
            }
            ("spsc", _) => {
                let (batches, slots, bytes) =
                    (name.num(Param::Batches).unwrap_or(0), name.num(Param::Slots).unwrap_or(1).max(1), name.bytes.unwrap_or(0));
                let want = reps * batches * bytes.div_ceil(64) + 2 * reps * batches / slots;
                f.push((ivs == want, format!("{phase}: {ivs} transfers, expected data lines + head/tail = {want}")));
            }
            _ => {}
        }
    }
    if f.is_empty() {
        f.push((false, "no smp benchmark phases with model-coherence records".into()));
    }
    f
}
