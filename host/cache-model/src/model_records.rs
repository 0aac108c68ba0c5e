//! The plugin's output: `# cs: {json}` lines in the kernel's record format, and named phases.
//!
//! | record | when | fields (after `"record"`) |
//! |--------|------|---------------------------|
//! | `model-profile` | once, before the first `model-geometry` | `profile`, `clock_mhz`, `memory_cycles`, `memory_ns`, `hwpf`, `hwpf_distance`, `hwpf_degree`, `latency_ref`, `hwpf_ref` |
//! | `model-topology` | once, after `model-profile` | `clusters`, `cores_per_cluster`, `cluster_cache`, `interconnect`, `handover_in_cycles`, `handover_cross_cycles` (each absent: the serving level's latency), `handover_ref` |
//! | `model-geometry` | when a geometry becomes active, one per level | `level`, `size`, `line`, `sets`, `ways`, `sharing`, `policy`, `origin`, `vcpus`, `hit_cycles`, `hit_ns` |
//! | `model` | at each phase end, one per level | `phase`, `phase_id`, `level`, `accesses`, `hits`, `misses`, `writebacks`, `maint`, `bypass`, `prefetches`, `prefetch_hits` |
//! | `model-time` | at each phase end | `phase`, `phase_id`, `data_accesses`, `cycles`, `ns` |
//! | `model-tlb` | once, after `model-topology`, when TLBs are modelled | `l1i`, `l1d`, `l2`, `l2_hit_cycles`, `walk_level_cycles`, `tlb_ref` |
//! | `tlb` | at each phase end, when TLBs are modelled | `phase`, `phase_id`, `l1i_hits`, `l1i_misses`, `l1d_hits`, `l1d_misses`, `l2_hits`, `l2_misses`, `data_walks`, `walk_levels`, `cycles` |
//! | `model-total` | at exit, one per level | `level`, `accesses`, `hits`, `misses`, `writebacks`, `maint`, `bypass`, `prefetches`, `prefetch_hits` |
//! | `model-coherence` | at each phase end, one per vCPU (more than one vCPU only) | `phase`, `phase_id`, `cpu`, `invalidations`, `interventions`, `upgrades`, `snoop_hits`, `snoop_misses`, `remote_maint`, `buf_invalidations`, `buf_interventions`, `buf_upgrades`, `cross_invalidations`, `cross_interventions`, `cross_remote_maint`, `cluster_handovers`, `cross_handovers`, `buf_cluster_handovers`, `buf_cross_handovers` |
//! | `model-coherence-total` | at exit, one per vCPU (more than one vCPU only) | `cpu` and the same sixteen counts |
//! | `hazard` | at each phase end (at exit outside phases), one per (kind, line) | see `sanitize.rs` |
//! | `hazard-total` | at exit | per-kind counts, `truncated`, `dropped` (past the hazard bound) |
//! | `model-pc` | at exit with `pc_table=N`, at most N + 1 | `pc`, `pcs`, `rest`, `l1d_misses`, `l2_misses`, `writebacks` (see `pc_table.rs`) |
//! | `model-run` | at exit | `protocol`, `markers`, `phases`, `va_learned`, `va_window`, `va_identity`, `setway_ops`, `warnings`, `fast` |
//! | `model-warning` | on a malformed marker or phase mismatch | `what` (optional `cause`, `count`) |
//!
//! Every record ends with `"source":"model"`. Levels: `L1I`, `L1D`, `L2`, `L3` (only those
//! modelled). Counters of private caches are summed over vCPUs.

use crate::geometry::{Hierarchy, Latency};
use crate::hierarchy::{Coherence, Level, Totals};
use crate::tlb::{TlbCounts, TlbGeometry};
use crate::topology::Topology;
use cachescope_arch::record::{self, Builder};

/// Every model record's `source`.
pub const SOURCE: &str = "model";

/// Modelled cycles of the demand data accesses in `t` (rule 15 of `hierarchy.rs`): each costs the
/// latency of the level that served it; memory for the rest. Returns (accesses, cycles).
pub fn modelled_cycles(t: &Totals, lat: &Latency) -> (u64, u64) {
    let cost = [lat.hit_cycles[0], lat.hit_cycles[1], lat.hit_cycles[2], lat.memory_cycles];
    let accesses = t.served.iter().fold(0u64, |a, &n| a.wrapping_add(n));
    let cycles = t.served.iter().zip(cost).fold(0u64, |a, (&n, c)| a.wrapping_add(n.wrapping_mul(u64::from(c))));
    (accesses, cycles)
}

/// [`modelled_cycles`] with rule 19's hand-overs (`hierarchy.rs`): each demand data access
/// served by another vCPU's dirty copy was counted as served by the first shared level (where
/// the model writes the copy back), or memory when every level is private; it costs the
/// topology's in-cluster or cross-cluster hand-over latency instead, when the profile gives one.
pub fn phase_cycles(t: &Totals, coh: &[Coherence], h: &Hierarchy) -> (u64, u64) {
    let lat = &h.latency;
    let (accesses, cycles) = modelled_cycles(t, lat);
    let served_at = h.serving_cycles();
    let ho = &h.topology.handover;
    let (cluster, cross) =
        coh.iter().fold((0u64, 0u64), |(a, b), c| (a.wrapping_add(c.cluster_handovers), b.wrapping_add(c.cross_handovers)));
    let adjust = |n: u64, cost: Option<u32>| -> u64 {
        // Wrapping: the served part already holds `n × served_at`.
        cost.map_or(0, |c| n.wrapping_mul(u64::from(c)).wrapping_sub(n.wrapping_mul(u64::from(served_at))))
    };
    let cycles = cycles.wrapping_add(adjust(cluster, ho.in_cluster_cycles)).wrapping_add(adjust(cross, ho.cross_cluster_cycles));
    (accesses, cycles)
}

/// The `model-time` record of a finished phase: its cycles by [`phase_cycles`] under `h`,
/// else (no model yet) by [`modelled_cycles`] at the generic latencies; plus, with TLBs, what
/// the data accesses' translations cost (`tlb.rs` rule T4).
pub fn time_line(name: &str, id: u64, counts: &Totals, coh: &[Coherence], h: Option<&Hierarchy>, tlb: Option<&TlbGeometry>) -> String {
    let generic = Latency::generic();
    let (lat, (accesses, cycles)) = match h {
        Some(h) => (&h.latency, phase_cycles(counts, coh, h)),
        None => (&generic, modelled_cycles(counts, &generic)),
    };
    let cycles = cycles.wrapping_add(tlb.map_or(0, |g| g.cycles(&counts.tlb)));
    line(record::ModelTime::new().phase(name).phase_id(id).data_accesses(accesses).cycles(cycles).ns(lat.ns(cycles), 2).source(SOURCE))
}

/// The `tlb` record of a finished phase.
pub fn tlb_line(name: &str, id: u64, c: &TlbCounts, g: &TlbGeometry) -> String {
    line(
        record::Tlb::new()
            .phase(name)
            .phase_id(id)
            .l1i_hits(c.l1i_hits)
            .l1i_misses(c.l1i_misses)
            .l1d_hits(c.l1d_hits)
            .l1d_misses(c.l1d_misses)
            .l2_hits(c.l2_hits)
            .l2_misses(c.l2_misses)
            .data_walks(c.data_walks)
            .walk_levels(c.data_walk_levels)
            .cycles(g.cycles(c))
            .source(SOURCE),
    )
}

/// The `model-tlb` record (once, after `model-topology`).
pub fn tlb_geometry_line(g: &TlbGeometry) -> String {
    line(
        record::ModelTlb::new()
            .l1i(&g.l1i.describe())
            .l1d(&g.l1d.describe())
            .l2(&g.l2.describe())
            .l2_hit_cycles(u64::from(g.l2_hit_cycles))
            .walk_level_cycles(u64::from(g.walk_level_cycles))
            .tlb_ref(g.reference)
            .source(SOURCE),
    )
}

/// The `model-topology` record.
pub fn topology_line(t: &Topology) -> String {
    let r = record::ModelTopology::new()
        .clusters(u64::from(t.clusters))
        .cores_per_cluster(u64::from(t.cores_per_cluster))
        .cluster_cache(t.cluster_cache.name())
        .interconnect(t.interconnect.name());
    let ho = &t.handover;
    match (ho.in_cluster_cycles, ho.cross_cluster_cycles) {
        (Some(i), Some(c)) => {
            line(r.handover_in_cycles(u64::from(i)).handover_cross_cycles(u64::from(c)).handover_ref(ho.reference).source(SOURCE))
        }
        (Some(i), None) => line(r.handover_in_cycles(u64::from(i)).handover_ref(ho.reference).source(SOURCE)),
        (None, Some(c)) => line(r.handover_cross_cycles(u64::from(c)).handover_ref(ho.reference).source(SOURCE)),
        (None, None) => line(r.handover_ref(ho.reference).source(SOURCE)),
    }
}

/// A built record as one output line: `# cs: {…}` and a newline.
pub fn line(r: impl Builder) -> String {
    format!("{}{}\n", record::PREFIX, r.finish())
}

/// A `model-warning` record as one output line, about the instruction at `pc` when given.
pub fn warning_line(what: &str, pc: Option<u64>) -> String {
    let r = record::ModelWarning::new().what(what);
    match pc {
        Some(pc) => line(r.pc(pc).source(SOURCE)),
        None => line(r.source(SOURCE)),
    }
}

/// A `model-warning` record with its cause (a check may allow it), when it stands for several
/// occurrences their count, and the PC of the first instruction it is about when known.
pub fn cause_warning_line(cause: cachescope_arch::warning::WarningCause, what: &str, count: Option<u64>, pc: Option<u64>) -> String {
    let r = record::ModelWarning::new().what(what).cause(cause.name());
    let r = match count {
        Some(n) => r.count(n),
        None => r,
    };
    match pc {
        Some(pc) => line(r.pc(pc).source(SOURCE)),
        None => line(r.source(SOURCE)),
    }
}

/// An `untranslated-va` `model-warning`: `n` VA pages of `what` ("use: fault"), the first by
/// the instruction at `pc` when known.
pub fn untranslated_line(what: &str, n: u64, pc: Option<u64>) -> String {
    let text = format!("{n} VA pages not translated by the guest's tables ({what}): not modelled, never taken as PA = VA");
    cause_warning_line(cachescope_arch::warning::WarningCause::UntranslatedVa, &text, Some(n), pc)
}

/// The levels a hierarchy with `lower` levels below L1 has.
pub fn levels(lower: usize) -> impl Iterator<Item = Level> {
    Level::ALL.into_iter().take(2 + lower)
}

/// One `model` record per level for a finished phase.
pub fn phase_lines(name: &str, id: u64, counts: &Totals, lower: usize) -> String {
    levels(lower)
        .map(|l| line(record::Model::new().phase(name).phase_id(id).level(l.name()).counts(counts.get(l)).source(SOURCE)))
        .collect()
}

/// One `model-total` record per level.
pub fn total_lines(counts: &Totals, lower: usize) -> String {
    levels(lower).map(|l| line(record::ModelTotal::new().level(l.name()).counts(counts.get(l)).source(SOURCE))).collect()
}

/// Adds a vCPU's coherence counters to a record.
macro_rules! with_coherence {
    ($r:expr, $cpu:expr, $c:expr) => {{
        let c: &Coherence = $c;
        $r.cpu($cpu as u64)
            .invalidations(c.invalidations)
            .interventions(c.interventions)
            .upgrades(c.upgrades)
            .snoop_hits(c.snoop_hits)
            .snoop_misses(c.snoop_misses)
            .remote_maint(c.remote_maint)
            .buf_invalidations(c.buf_invalidations)
            .buf_interventions(c.buf_interventions)
            .buf_upgrades(c.buf_upgrades)
            .cross_invalidations(c.cross_invalidations)
            .cross_interventions(c.cross_interventions)
            .cross_remote_maint(c.cross_remote_maint)
            .cluster_handovers(c.cluster_handovers)
            .cross_handovers(c.cross_handovers)
            .buf_cluster_handovers(c.buf_cluster_handovers)
            .buf_cross_handovers(c.buf_cross_handovers)
            .source(SOURCE)
    }};
}

/// One `model-coherence` record per vCPU for a finished phase.
pub fn coherence_lines(name: &str, id: u64, coh: &[Coherence]) -> String {
    coh.iter().enumerate().map(|(k, c)| line(with_coherence!(record::ModelCoherence::new().phase(name).phase_id(id), k, c))).collect()
}

/// One `model-coherence-total` record per vCPU.
pub fn coherence_total_lines(coh: &[Coherence]) -> String {
    coh.iter().enumerate().map(|(k, c)| line(with_coherence!(record::ModelCoherenceTotal::new(), k, c))).collect()
}

/// `hazard` records, each followed by one readable line
/// (`# model: hazard KIND pa=… va=… pc=… phase=… count=… access=… cause=… cause_pc=…`, then
/// ` masked_by=RULE` in silicon mode when the core's deviation hides the mistake).
pub fn hazard_lines(entries: &[crate::sanitize::Entry]) -> String {
    let mut out = String::new();
    for e in entries {
        let mut r = record::Hazard::new()
            .kind(e.event.kind.name())
            .pa(e.event.pa)
            .va(e.va)
            .pc(e.pc)
            .phase(&e.phase)
            .phase_id(e.phase_id)
            .count(e.count)
            .access(e.event.access.name())
            .cause(e.event.cause.name())
            .cause_pc(e.event.cause_pc);
        if let Some(v) = e.current {
            r = r.current(v);
        }
        if let Some(rule) = e.event.masked_by {
            r = r.masked_by(rule.name());
        }
        out += &line(r.source(SOURCE));
        out += &format!(
            "# model: hazard {} pa={:#x} va={:#x} pc={:#x} phase={} count={} access={} cause={} cause_pc={:#x}{}\n",
            e.event.kind.name(),
            e.event.pa,
            e.va,
            e.pc,
            if e.phase.is_empty() { "-" } else { &e.phase },
            e.count,
            e.event.access.name(),
            e.event.cause.name(),
            e.event.cause_pc,
            e.event.masked_by.map(|r| format!(" masked_by={}", r.name())).unwrap_or_default()
        );
    }
    out
}

/// The `hazard-total` record.
pub fn hazard_total_line(h: &crate::sanitize::Hazards, sanitize: bool) -> String {
    let r = record::HazardTotal::new().sanitize(sanitize).hazards(h.distinct()).count(h.occurrences);
    line(r.per_kind(&h.per_kind).truncated(h.truncated()).dropped(h.dropped).source(SOURCE))
}

/// An open phase.
#[derive(Clone, Debug)]
struct Open {
    id: u64,
    name: String,
    start: Totals,
    coh: Vec<Coherence>,
}

/// A phase that ended: its name, id and the counts inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// Name from the marker.
    pub name: String,
    /// Id from the marker.
    pub id: u64,
    /// Counts between begin and end.
    pub counts: Totals,
    /// Coherence counts per vCPU between begin and end.
    pub coherence: Vec<Coherence>,
}

/// Open phases (they may nest).
#[derive(Clone, Debug, Default)]
pub struct Phases {
    open: Vec<Open>,
    finished: u64,
}

impl Phases {
    /// Starts phase `id` at counter state `now` (and coherence counters `coh`, per vCPU).
    pub fn begin(&mut self, id: u64, name: String, now: Totals, coh: Vec<Coherence>) {
        self.open.push(Open { id, name, start: now, coh });
    }

    /// Ends phase `id` at `now`. Phases opened inside it and still open end with it (innermost
    /// first). An id that is not open is an error (no phase ends).
    pub fn end(&mut self, id: u64, now: Totals, coh: &[Coherence]) -> Result<Vec<Finished>, String> {
        let pos = self.open.iter().rposition(|p| p.id == id).ok_or_else(|| format!("phase end {id} without a matching begin"))?;
        let done: Vec<Finished> = self
            .open
            .drain(pos..)
            .rev()
            .map(|p| {
                // A phase that began before the model existed started from zero.
                let coherence = coh.iter().enumerate().map(|(k, c)| *c - p.coh.get(k).copied().unwrap_or_default()).collect();
                Finished { name: p.name, id: p.id, counts: now - p.start, coherence }
            })
            .collect();
        self.finished += done.len() as u64;
        Ok(done)
    }

    /// Number of phases that have ended.
    pub fn finished(&self) -> u64 {
        self.finished
    }

    /// The innermost open phase: (id, name).
    pub fn current(&self) -> Option<(u64, String)> {
        self.open.last().map(|p| (p.id, p.name.clone()))
    }

    /// Names of the phases still open.
    pub fn still_open(&self) -> Vec<String> {
        self.open.iter().map(|p| p.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Counts;
    use cachescope_arch::hazard::HazardAccess;

    /// A hazard with and without the value the emulator held: `current` before `source`, as
    /// declared (the builders' order is checked when a record is finished, in debug builds).
    #[test]
    fn hazard_records() {
        let event = crate::sanitize::Event {
            kind: crate::sanitize::HazardKind::LostWrite,
            pa: 0x40,
            access: HazardAccess::DcIvac,
            cause: crate::sanitize::HazardCause::Write,
            cause_pc: 0x10,
            masked_by: None,
            uncounted: false,
        };
        let e = crate::sanitize::Entry { event, va: 0x1040, pc: 0x20, phase: "p".into(), phase_id: 3, count: 2, current: Some(7) };
        let out = hazard_lines(&[e.clone(), crate::sanitize::Entry { current: None, ..e }]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            r#"# cs: {"record":"hazard","kind":"lost-write","pa":"0x40","va":"0x1040","pc":"0x20","phase":"p","phase_id":3,"count":2,"access":"dc-ivac","cause":"write","cause_pc":"0x10","current":"0x7","source":"model"}"#
        );
        assert!(lines[2].ends_with(r#""cause_pc":"0x10","source":"model"}"#), "{}", lines[2]);
    }

    #[test]
    fn record_format() {
        let c = Counts { accesses: 5, hits: 3, misses: 2, writebacks: 1, maint: 0, bypass: 4, prefetches: 6, prefetch_hits: 7 };
        let out = line(record::Model::new().phase("a\"b").phase_id(7).level("L1D").counts(&c).source(SOURCE));
        assert_eq!(
            out,
            "# cs: {\"record\":\"model\",\"phase\":\"a\\\"b\",\"phase_id\":7,\"level\":\"L1D\",\"accesses\":5,\"hits\":3,\"misses\":2,\"writebacks\":1,\"maint\":0,\"bypass\":4,\"prefetches\":6,\"prefetch_hits\":7,\"source\":\"model\"}\n"
        );
        let t = Totals { served: [10, 2, 1, 3], ..Totals::default() };
        let lat = Latency::generic();
        assert_eq!(modelled_cycles(&t, &lat), (16, 10 * 4 + 2 * 14 + 40 + 3 * 200));
        assert_eq!(
            time_line("p", 3, &t, &[], None, None),
            "# cs: {\"record\":\"model-time\",\"phase\":\"p\",\"phase_id\":3,\"data_accesses\":16,\"cycles\":708,\"ns\":354.00,\"source\":\"model\"}\n"
        );
        let topo = topology_line(&Topology::profile("dsu2x4").unwrap());
        assert!(topo.starts_with("# cs: {\"record\":\"model-topology\",\"clusters\":2,\"cores_per_cluster\":4,\"cluster_cache\":\"dsu-l3-snoop-filter\",\"interconnect\":\"cmn-hnf-slc\",\"handover_in_cycles\":41,\"handover_cross_cycles\":103,"), "{topo}");
        assert!(!topology_line(&Topology::generic()).contains("handover_in_cycles"));
        assert_eq!(total_lines(&Totals::default(), 0).lines().count(), 2);
        let mut h = crate::sanitize::Hazards::with_limit(1);
        for pa in [0, 0x40] {
            let e = crate::sanitize::Event {
                kind: crate::sanitize::HazardKind::LostWrite,
                pa,
                access: HazardAccess::DcIvac,
                cause: crate::sanitize::HazardCause::Write,
                cause_pc: 0,
                masked_by: None,
                uncounted: false,
            };
            h.add(e, pa, 0, None, None);
        }
        assert_eq!(
            hazard_total_line(&h, true),
            "# cs: {\"record\":\"hazard-total\",\"sanitize\":true,\"hazards\":1,\"count\":2,\"stale_read_by_device\":0,\"lost_write\":1,\"stale_read_by_cpu\":0,\"stale_instruction\":0,\"maintenance_gap\":0,\"shared_line\":0,\"non_shareable_shared\":0,\"truncated\":true,\"dropped\":1,\"source\":\"model\"}\n"
        );
        assert_eq!(phase_lines("x", 1, &Totals::default(), 2).lines().count(), 4);
    }

    #[test]
    fn phases_nest_and_diff() {
        let mut p = Phases::default();
        let mut t = Totals::default();
        p.begin(1, "outer".into(), t, Vec::new());
        t.levels[1].accesses = 10;
        let c = |n| vec![Coherence { upgrades: n, ..Coherence::default() }; 2];
        p.begin(2, "inner".into(), t, c(3));
        t.levels[1].accesses = 15;
        let done = p.end(2, t, &c(7)).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].counts.levels[1].accesses, 5);
        assert_eq!(done[0].coherence, c(4));
        assert!(p.end(9, t, &[]).is_err());
        p.begin(3, "unclosed".into(), t, Vec::new());
        t.levels[1].accesses = 20;
        let done = p.end(1, t, &c(8)).unwrap();
        assert_eq!(done[1].coherence, c(8), "begun before the model: from zero");
        assert_eq!(
            done.iter().map(|f| (f.name.as_str(), f.counts.levels[1].accesses)).collect::<Vec<_>>(),
            [("unclosed", 5), ("outer", 20)]
        );
        assert_eq!(p.finished(), 3);
        assert!(p.still_open().is_empty());
    }
}
