//! Emission: the state behind the lock ([`Core`]), its output, and the records the plugin writes
//! itself (`model-profile`, `model-geometry`, `model-warning`, the phase-end and exit records;
//! the record shapes are `report`'s).

use std::io::Write;

use cachescope_arch::cache::id::{Clidr, Ctr};

use crate::config::{GuestGeometry, Settings};
use crate::geometry::{Hierarchy, Indexing, VIPT_PAGE_SHIFT};
use crate::guest::Guest;
use crate::hierarchy::{IcAlias, Level, Model, Totals};
use crate::model_records::{self, Finished, Phases};
use crate::protocol;
use crate::sanitize::{Hazards, MaintRange};
use cachescope_arch::record;

/// The most `model-warning` records a run writes; past it they are only counted (`model-run`'s
/// `warnings`), so a guest that sends malformed markers in a loop cannot grow the log without
/// bound.
pub const WARNING_LIMIT: u64 = 100;

/// The most per-phase counter records (`model` per level, `model-time`, `model-coherence` per
/// vCPU) a run writes: each is at most ~450 bytes (a phase name is at most
/// `cachescope_arch::marker::PHASE_NAME_MAX` bytes), so at most ~90 MB, within what the digest
/// reads (256 MiB), however many phases or vCPUs. A phase whose records would pass it gets
/// none; its counts stay in the totals and its hazards are still reported. The main job writes
/// a few thousand (5 or 6 per phase with one vCPU).
pub const PHASE_RECORD_LIMIT: u64 = 200_000;

/// Run statistics for the `model-run` record.
#[derive(Default)]
pub struct Stats {
    /// Markers seen.
    pub markers: u64,
    /// Of those, ignored (`markers=declarations`): `None` when every marker is followed.
    pub markers_ignored: Option<u64>,
    /// `model-ic-alias` records written (rule 21), and those past their bound.
    pub ic_aliases: u64,
    /// See `ic_aliases`.
    pub ic_aliases_dropped: u64,
    /// Operand translations: learned, by window, MMU off (PA = VA), walked.
    pub va: [u64; 4],
    /// DC set/way operations.
    pub setway_ops: u64,
    /// Translation-register values adopted at a translation (`Engine::resync`).
    pub resyncs: u64,
    /// The first TB whose translation adopted one (its first instruction's VA).
    pub first_resync_pc: Option<u64>,
    /// Warnings (written or only counted).
    pub warnings: u64,
    /// Counter records of ended phases written so far (`model`, `model-time`, `model-coherence`).
    pub phase_records: u64,
    /// Phases whose counter records were not written (past [`PHASE_RECORD_LIMIT`]).
    pub phases_unreported: u64,
}

/// Everything behind the lock.
pub struct Core {
    /// The model, once built.
    pub model: Option<Model>,
    /// Counts from before the model exists (bypassed accesses while the caches are off).
    pub early: Totals,
    /// The records of a model built at reset from the CPU's table, held back until anything
    /// else is written (then they come first), or dropped when the guest's geometry markers
    /// replace that model before it was used: (text, whether it holds `model-profile`).
    pub built_pending: Option<(String, bool)>,
    /// New geometry markers arrived since the model was built.
    pub geometry_changed: bool,
    /// SCTLR, windows, learned translations.
    pub guest: Guest,
    /// The geometry the guest reported.
    pub guest_geo: GuestGeometry,
    /// Open and finished phases.
    pub phases: Phases,
    /// Run statistics.
    pub stats: Stats,
    /// Marker protocol version the kernel's hello announced (0 = no hello yet).
    pub kernel_protocol: u64,
    /// The `model-profile` record was written.
    pub profile_emitted: bool,
    /// The sanitizer's deduplicated hazards.
    pub hazards: Hazards,
    /// Open maintenance ranges (markers 7/8).
    pub maint: Vec<MaintRange>,
    /// CTR_EL0, once read (None: IDC = DIC = 0 assumed, the Cortex models' value, and the
    /// model's own line sizes for by-VA maintenance).
    pub ctr: Option<Ctr>,
    /// CLIDR_EL1, once read (None: not exposed; every modelled level is before the PoC).
    pub clidr: Option<Clidr>,
    /// The guest CPU's identification key ([`crate::cpu_models::KEY_REGS`]), read at the first
    /// vCPU's init, and the table's model with that key.
    pub cpu: Option<(crate::cpu_models::Key, Option<&'static crate::cpu_models::CpuModel>)>,
    /// The last value each vCPU wrote to each EL2/EL3 control register
    /// ([`crate::decode::ControlReg::ALL`] order).
    pub control: Vec<[Option<u64>; 4]>,
    /// The control bits already named in a `model-warning` (`SCTLR_EL2.C`, …).
    pub unfollowed: Vec<String>,
    /// Hazard occurrences not reported because the core that ran them is not known (more than
    /// one vCPU under round-robin TCG, TPIDR_EL1 untagged).
    pub unattributed: u64,
    /// The PC of the first unreported hazard's exposing access.
    pub unattributed_pc: Option<u64>,
    /// What unattributed model calls touched (hazards there are not reported either).
    pub taint: super::attribution::Taint,
    /// Sanitizer reports suspended (marker 9).
    pub quiet: bool,
    /// Hazard occurrences dropped while quiet.
    pub quieted: u64,
    /// The per-PC table (`pc_table=N`, N > 0) and its bound.
    pub pcs: Option<(crate::pc_table::PcTable, usize)>,
    /// The TLB model (`tlb.rs`), when the profile has TLBs and `tlb=off` was not given.
    pub tlb: Option<crate::tlb::Tlbs>,
    out: Box<dyn Write + Send>,
}

impl Core {
    /// Nothing seen yet; records go to `out`.
    pub fn new(settings: &Settings, out: Box<dyn Write + Send>) -> Self {
        Self {
            model: None,
            early: Totals::default(),
            built_pending: None,
            geometry_changed: false,
            guest: Guest::new(),
            guest_geo: GuestGeometry::default(),
            phases: Phases::default(),
            stats: Stats::default(),
            kernel_protocol: 0,
            profile_emitted: false,
            hazards: Hazards::with_limit(settings.hazard_limit),
            maint: Vec::new(),
            ctr: None,
            clidr: None,
            cpu: None,
            control: Vec::new(),
            unfollowed: Vec::new(),
            unattributed: 0,
            unattributed_pc: None,
            taint: super::attribution::Taint::default(),
            quiet: false,
            quieted: 0,
            pcs: (settings.pc_table > 0).then(|| (crate::pc_table::PcTable::default(), settings.pc_table as usize)),
            tlb: None,
            out,
        }
    }

    /// Drops held-back model records (their model is replaced unused).
    pub fn drop_pending(&mut self) {
        if let Some((_, profile)) = self.built_pending.take() {
            self.profile_emitted &= !profile;
        }
    }

    /// Writes record lines (after held-back model records, if any).
    pub fn emit(&mut self, text: &str) {
        if let Some((pending, _)) = self.built_pending.take() {
            let _ = self.out.write_all(pending.as_bytes());
        }
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// An `untranslated-va` warning (at exit, one per cause): `n` VAs of `what`, the first by
    /// the instruction at `pc` when known.
    pub fn untranslated_warning(&mut self, what: &str, n: u64, pc: Option<u64>) {
        self.stats.warnings += 1;
        let text = model_records::untranslated_line(what, n, pc);
        self.emit(&text);
    }

    /// A `model-warning` (up to [`WARNING_LIMIT`]; counted always).
    pub fn warn(&mut self, what: &str) {
        self.warn_line(model_records::warning_line(what, None));
    }

    /// A [`Core::warn`] about the instruction at `pc` (the record's `pc`).
    pub fn warn_at(&mut self, what: &str, pc: u64) {
        self.warn_line(model_records::warning_line(what, Some(pc)));
    }

    /// A `model-warning` with its cause, which a check may allow (and the occurrences it
    /// stands for, when several).
    pub fn warn_cause(&mut self, cause: cachescope_arch::warning::WarningCause, what: &str, count: Option<u64>, pc: Option<u64>) {
        self.warn_line(model_records::cause_warning_line(cause, what, count, pc));
    }

    fn warn_line(&mut self, line: String) {
        self.stats.warnings += 1;
        if self.stats.warnings > WARNING_LIMIT {
            return;
        }
        let mut text = line;
        if self.stats.warnings == WARNING_LIMIT {
            text += &model_records::warning_line(
                &format!("{WARNING_LIMIT} warnings: further ones are only counted (model-run.warnings)"),
                None,
            );
        }
        self.emit(&text);
    }

    /// Adds a hazard occurrence; the first one past the bound on hazard records says so, once.
    pub fn add_hazard(&mut self, e: crate::sanitize::Event, va: u64, pc: u64, phase: Option<&(u64, String)>, current: Option<u64>) {
        let was = self.hazards.truncated();
        self.hazards.add(e, va, pc, phase.map(|(id, n)| (*id, n.as_str())), current);
        if !was && self.hazards.truncated() {
            let limit = self.hazards.limit();
            let what = format!(
                "more than {limit} distinct hazards: further ones are only counted (hazard-total.dropped), not listed; the run fails (hazard-total.truncated)"
            );
            self.stats.warnings += 1;
            let text = model_records::warning_line(&what, None) + &format!("# model: hazard storm: {what}\n");
            self.emit(&text);
        }
    }

    /// log2 of the granule a by-VA data-cache operation covers, for the maintenance-range rule:
    /// the model's L1D line, or the guest's CTR_EL0.DminLine when that is longer (a loop that
    /// steps by DminLine, as the architecture recommends, then reaches every line).
    pub fn maint_shift(&self) -> u32 {
        let model = self.model.as_ref().map_or(6, |m| m.config().l1d.line_shift());
        model.max(self.ctr.map_or(0, |c| c.dmin_line().trailing_zeros()))
    }

    /// Levels below L1 the model has.
    pub fn lower_levels(&self) -> usize {
        self.model.as_ref().map_or(0, |m| m.lower_levels())
    }

    /// The records of phases that just ended: counters (within [`PHASE_RECORD_LIMIT`]), then
    /// each phase's hazards.
    pub fn phases_ended(&mut self, done: &[Finished]) {
        let lower = self.lower_levels();
        let config = self.model.as_ref().map(|m| m.config().clone());
        let tlb = self.tlb.as_ref().map(|t| t.geometry().clone());
        let mut text = String::new();
        for p in done {
            let records = (2 + lower + 1 + usize::from(tlb.is_some()) + p.coherence.len()) as u64;
            if self.stats.phase_records + records > PHASE_RECORD_LIMIT {
                self.stats.phases_unreported += 1;
            } else {
                self.stats.phase_records += records;
                text += &model_records::phase_lines(&p.name, p.id, &p.counts, lower);
                text += &model_records::time_line(&p.name, p.id, &p.counts, &p.coherence, config.as_ref(), tlb.as_ref());
                if let Some(g) = &tlb {
                    text += &model_records::tlb_line(&p.name, p.id, &p.counts.tlb, g);
                }
                text += &model_records::coherence_lines(&p.name, p.id, &p.coherence);
            }
        }
        for p in done {
            text += &model_records::hazard_lines(&self.hazards.take(Some(p.id)));
        }
        self.emit(&text);
    }

    /// Rule 21: one `model-ic-alias` record per IC IVAU note, in the current phase (at most
    /// [`crate::hierarchy::IC_ALIAS_LIMIT`] in a run; the rest are counted and warned about at
    /// exit).
    pub fn ic_aliases(&mut self, notes: &[IcAlias]) {
        let (id, name) = self.phases.current().unwrap_or((0, String::new()));
        let mut text = String::new();
        for n in notes {
            if self.stats.ic_aliases >= crate::hierarchy::IC_ALIAS_LIMIT as u64 {
                self.stats.ic_aliases_dropped += 1;
                continue;
            }
            self.stats.ic_aliases += 1;
            text += &model_records::line(
                record::ModelIcAlias::new()
                    .phase(&name)
                    .phase_id(id)
                    .cpu(n.cpu as u64)
                    .va(n.va)
                    .pa(n.pa)
                    .set(n.set as u64)
                    .copies_before(n.before)
                    .copies_left(n.left)
                    .source(model_records::SOURCE),
            );
        }
        self.emit(&text);
    }

    /// The records at exit: unended phases, hazards, totals, `model-run`.
    pub fn exit(&mut self, now: &Totals, sanitize: bool, fast: bool) {
        for name in self.phases.still_open() {
            self.warn(&format!("phase '{name}' never ended"));
        }
        let dropped = self.stats.ic_aliases_dropped + self.model.as_ref().map_or(0, |m| m.ic_aliases_dropped());
        if dropped > 0 {
            self.warn(&format!(
                "{dropped} more IC IVAUs left copies of their line at other VIPT L1I indexes: past {} model-ic-alias records",
                crate::hierarchy::IC_ALIAS_LIMIT
            ));
        }
        if self.stats.phases_unreported > 0 {
            let n = self.stats.phases_unreported;
            self.stats.warnings += 1;
            let what = format!(
                "{n} phases have no model/model-time records: past {PHASE_RECORD_LIMIT} per-phase records (their counts are in model-total)"
            );
            let text = model_records::warning_line(&what, None);
            self.emit(&text);
        }
        let lower = self.lower_levels();
        let mut text = model_records::hazard_lines(&self.hazards.take(None));
        text += &model_records::total_lines(now, lower);
        if let Some(m) = self.model.as_ref().filter(|m| m.is_coherent()) {
            text += &model_records::coherence_total_lines(m.coherence());
        }
        text += &model_records::hazard_total_line(&self.hazards, sanitize);
        if let Some((t, limit)) = &self.pcs {
            text += &t.lines(*limit);
        }
        let mut run = record::ModelRun::new().protocol(protocol::VERSION).markers(self.stats.markers);
        if let Some(n) = self.stats.markers_ignored {
            run = run.markers_ignored(n);
        }
        text += &model_records::line(
            run.phases(self.phases.finished())
                .va_learned(self.stats.va[0])
                .va_window(self.stats.va[1])
                .va_identity(self.stats.va[2])
                .va_walked(self.stats.va[3])
                .setway_ops(self.stats.setway_ops)
                .warnings(self.stats.warnings)
                .fast(fast)
                .source(model_records::SOURCE),
        );
        self.emit(&text);
    }

    /// The records of a new model: `model-profile` (once a run) and one `model-geometry` per level.
    /// With `hold`, the records are held back ([`Core::built_pending`]).
    pub fn model_built(&mut self, settings: &Settings, h: &Hierarchy, origin: &str, vcpus: usize, hold: bool) {
        self.drop_pending();
        let mut text = String::new();
        let lat = &h.latency;
        let profile = !self.profile_emitted;
        if !self.profile_emitted {
            self.profile_emitted = true;
            text += &model_records::line(
                record::ModelProfile::new()
                    .profile(settings.profile_name())
                    .clock_mhz(u64::from(lat.clock_mhz))
                    .memory_cycles(u64::from(lat.memory_cycles))
                    .memory_ns(lat.ns(u64::from(lat.memory_cycles)), 2)
                    .hwpf(h.hwpf.kind.name())
                    .hwpf_distance(u64::from(h.hwpf.distance))
                    .hwpf_degree(u64::from(h.hwpf.degree))
                    .latency_ref(&lat.reference)
                    .hwpf_ref(&h.hwpf.reference)
                    .policy_ref(h.policy_ref)
                    .implementation(settings.implementation.name())
                    .deviations(&match settings.implementation {
                        crate::geometry::Impl::Arch => "none".to_string(),
                        crate::geometry::Impl::Silicon => h.silicon.spelling(),
                    })
                    .deviations_ref(h.silicon.reference)
                    .source(model_records::SOURCE),
            );
            text += &model_records::topology_line(&h.topology);
            if let Some(t) = &self.tlb {
                text += &model_records::tlb_geometry_line(t.geometry());
            }
        }
        let l1 = [(Level::L1I, h.l1i), (Level::L1D, h.l1d)];
        let lower = h.lower.iter().enumerate().map(|(i, l)| ([Level::L2, Level::L3][i], l.geometry));
        for (k, (level, g)) in l1.into_iter().chain(lower).enumerate() {
            let sharing = if k < 2 { "private" } else { h.lower[k - 2].sharing.name() };
            let hit = u64::from(lat.hit_cycles[k.saturating_sub(1).min(2)]);
            let mut r = record::ModelGeometry::new()
                .level(level.name())
                .size(g.size())
                .line(u64::from(g.line))
                .sets(u64::from(g.sets))
                .ways(u64::from(g.ways))
                .sharing(sharing)
                .policy(h.policy.name())
                .origin(origin)
                .vcpus(vcpus as u64)
                .hit_cycles(hit)
                .hit_ns(lat.ns(hit), 2);
            if level == Level::L1I && h.l1i_index == Indexing::Vipt {
                // Rule 21: the set-index bits above the page offset (those a VA picks).
                let in_page = VIPT_PAGE_SHIFT.saturating_sub(g.line_shift());
                let bits = g.sets.trailing_zeros().saturating_sub(in_page);
                r = r.index(h.l1i_index.name()).va_index_bits(u64::from(bits)).index_ref(h.l1i_index_ref);
            }
            text += &model_records::line(r.source(model_records::SOURCE));
        }
        if hold {
            self.built_pending = Some((text, profile));
            return;
        }
        self.emit(&text);
    }
}
