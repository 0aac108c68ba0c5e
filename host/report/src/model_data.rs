//! The cache model's records, analysed: the one home of every figure derived from them (the
//! `summary` digest, the report's model figures, `infer`, and the test checker in host/xtask
//! all call this module).
//!
//! Input: the records of the cache-model plugin (`"source":"model"`, docs/cache-model.md), read
//! by [`ModelData::from_records`]. Fields added after the first plugin version are optional:
//! `prefetches`/`prefetch_hits` (`model`, `model-total`), `hit_cycles`/`hit_ns`
//! (`model-geometry`), the kinds `model-time`, `model-profile`, `hazard` and `hazard-total`.
//!
//! Phases are named by the metric they measure: `bench/variant/attr/bytes[/name=value…]`
//! ([`PhaseName`]; parameters may also be joined by `,`). Each phase is identified by its
//! `phase_id`, so two phases with the same name are never merged.
//!
//! **Rates.** The *local* miss rate of a level is its misses ÷ its accesses. The *global* miss
//! rate of a level is its misses ÷ the data accesses of the phase (L1D accesses plus the accesses
//! that bypassed the caches, or `model-time`'s `data_accesses` when present): the fraction of
//! data accesses that had to go past that level. Chase knees use the global rate, because
//! the local L2 rate of a working set that fits L1 is a ratio of a handful of stray accesses.
//!
//! **Knee rule** ([`knees`]): along one attribute's pointer-chase ladder, the knee of a level is
//! the largest working set whose global miss rate, and that of every smaller working set, stays
//! below [`KNEE_LOW`] (the inferred capacity, `fits`), provided a larger working set reaches
//! [`KNEE_HIGH`]; `jump` is the next working set after `fits`. A curve that never reaches
//! [`KNEE_HIGH`] has no knee at that level (the ladder ends before the cache is exceeded).
//!
//! **Geometry inference** ([`infer()`]):
//! The rules are `cachescope_arch::cache::infer` (the kernel applies the same ones to its timer):
//! - line size from phases `infer/line/ATTR/BYTES/stride=S` (one load every S bytes over twice
//!   the L1D, every pass finding every line evicted: lines brought in per load, L1D misses plus
//!   prefetch hits, = min(1, S/line)): the smallest S whose rate is ≥ [`LINE_FULL_MISS`];
//! - capacity per level from the chase knees (`fits`);
//! - associativity from phases `infer/ways/ATTR/SPACING/level=L/n=K` (K addresses SPACING
//!   apart, cycled for many rounds): the largest K whose level-L local miss rate, and that of
//!   every smaller K, stays below [`WAYS_MISS`].

use crate::records::{Object, Record};
use cachescope_arch::bench::{Bench, Param, Variant};
use cachescope_arch::cache::Kind;
use cachescope_arch::cache::{infer, silicon};
use cachescope_arch::cpuid::Midr;
use cachescope_arch::record;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A global miss rate below this is "low" (the working set fits the level).
pub const KNEE_LOW: f64 = 0.1;
/// A global miss rate from this on is "high" (the working set is past the level).
pub const KNEE_HIGH: f64 = 0.5;
/// The line-size sweep: a stride whose lines brought in per load reach this brings a line in on
/// every load.
pub const LINE_FULL_MISS: f64 = infer::FULL_FILL;
/// The associativity sweep: K lines still fit one set while the level's miss rate is below this.
pub const WAYS_MISS: f64 = infer::NO_LONGER_FITS;

/// One cache level's counts (a `model` record, or a `model-total` record): the record
/// contract's counts group ([`record::LevelCounts`], the simulator's own counters), which this
/// `Deref`s to, and the level's name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelCounts {
    /// Level name: L1I, L1D, L2, L3.
    pub level: String,
    /// The counts (a field the record lacks is 0).
    pub counts: record::LevelCounts,
    /// The record has `prefetches`/`prefetch_hits` (plugins before them did not count prefetches).
    pub prefetch_counted: bool,
}

impl std::ops::Deref for LevelCounts {
    type Target = record::LevelCounts;
    fn deref(&self) -> &record::LevelCounts {
        &self.counts
    }
}

impl LevelCounts {
    /// From a record's `level`, counts and `prefetches` (read through its kind's view).
    fn new(level: Option<&str>, o: &Object, counts: record::LevelCounts, prefetches: Option<u64>) -> LevelCounts {
        // Schema 1 logs of the first plugin named a level by its number.
        let legacy = || record::Object::uint(o, "level").map(|l| format!("L{l}"));
        LevelCounts { level: level.map(str::to_string).or_else(legacy).unwrap_or_default(), counts, prefetch_counted: prefetches.is_some() }
    }

    /// Lines filled by a prefetch, when the plugin counts them.
    pub fn prefetches(&self) -> Option<u64> {
        self.prefetch_counted.then_some(self.counts.prefetches)
    }

    /// Demand accesses that hit a prefetched line, when counted.
    pub fn prefetch_hits(&self) -> Option<u64> {
        self.prefetch_counted.then_some(self.counts.prefetch_hits)
    }

    /// Local miss rate: misses ÷ accesses at this level (0 without accesses).
    pub fn local_rate(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.misses as f64 / self.accesses as f64
        }
    }
}

/// Modelled time of one phase (`model-time`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseTime {
    /// Data accesses of the phase.
    pub data_accesses: u64,
    /// Modelled cycles.
    pub cycles: f64,
    /// Modelled nanoseconds at the profile's clock.
    pub ns: f64,
}

/// A phase name taken apart: `bench/variant/attr/bytes[/name=value…]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseName {
    /// Benchmark (`latency`, `stream`, `handoff`, `kv`, `infer`, …).
    pub bench: String,
    /// Variant (`chase`, `read-ldp`, `line`, `ways`, …).
    pub variant: String,
    /// Memory attribute (`normal-wb`, …).
    pub attr: String,
    /// Working set / transfer size / spacing, bytes.
    pub bytes: Option<u64>,
    /// Parameters `name=value` in order (split at `/` and `,`).
    pub params: Vec<(String, String)>,
}

impl PhaseName {
    /// Parses a phase name; missing parts are empty.
    pub fn parse(name: &str) -> PhaseName {
        let mut parts = name.split('/');
        let mut p = PhaseName {
            bench: parts.next().unwrap_or("").to_string(),
            variant: parts.next().unwrap_or("").to_string(),
            attr: parts.next().unwrap_or("").to_string(),
            bytes: None,
            params: Vec::new(),
        };
        for (i, part) in parts.enumerate() {
            if i == 0 {
                if let Ok(b) = part.parse() {
                    p.bytes = Some(b);
                    continue;
                }
            }
            for kv in part.split(',') {
                if let Some((k, v)) = kv.split_once('=') {
                    p.params.push((k.to_string(), v.to_string()));
                }
            }
        }
        p
    }

    /// A parameter's value.
    pub fn param(&self, k: Param) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == k.name()).map(|(_, v)| v.as_str())
    }

    /// A numeric parameter.
    pub fn num(&self, k: Param) -> Option<u64> {
        self.param(k).and_then(|v| v.parse().ok())
    }

    /// True when the phase is one of `bench`'s.
    pub fn of(&self, bench: Bench) -> bool {
        self.bench == bench.name()
    }

    /// True when the phase measures `variant` (of its benchmark).
    pub fn is(&self, variant: Variant) -> bool {
        self.of(variant.bench()) && self.variant == variant.name()
    }

    /// The variant the phase measures, if the kernel declares it.
    pub fn variant_id(&self) -> Option<Variant> {
        Bench::from_name(&self.bench).and_then(|b| Variant::of(b, &self.variant))
    }
}

/// One phase: its counts per level and, when modelled, its time.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Phase name as printed.
    pub name: String,
    /// Its parts.
    pub parsed: PhaseName,
    /// Phase id (unique per run).
    pub id: u64,
    /// Counts per level, in printed order.
    pub levels: Vec<LevelCounts>,
    /// Modelled time (`model-time`), if the plugin models time.
    pub time: Option<PhaseTime>,
    /// Coherence traffic over every vCPU (`model-coherence`), with more than one vCPU.
    pub coherence: Option<PhaseCoherence>,
}

/// A phase's coherence traffic of buffer lines (the `buf_` fields of its `model-coherence`
/// records), summed over the vCPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseCoherence {
    /// Lines another core's cache supplied (interventions).
    pub transfers: u64,
    /// Copies invalidated by another core's write.
    pub invalidations: u64,
    /// Demand accesses served by a dirty copy of a core in the same cluster (hand-overs).
    pub cluster_handovers: u64,
    /// The same from a core in another cluster.
    pub cross_handovers: u64,
}

impl Phase {
    /// A phase with nothing counted yet.
    fn named(name: &str, id: u64) -> Phase {
        Phase { parsed: PhaseName::parse(name), name: name.to_string(), id, levels: Vec::new(), time: None, coherence: None }
    }

    /// The counts of `level` (`L1D`, `L2`, …).
    pub fn level(&self, level: &str) -> Option<&LevelCounts> {
        self.levels.iter().find(|l| l.level == level)
    }

    /// Data accesses: `model-time`'s count, else L1D accesses plus L1D bypasses.
    pub fn data_accesses(&self) -> u64 {
        if let Some(t) = self.time {
            return t.data_accesses;
        }
        self.level("L1D").map_or(0, |l| l.accesses + l.bypass)
    }

    /// Accesses that bypassed the caches (counted at L1D).
    pub fn bypass(&self) -> u64 {
        self.level("L1D").map_or(0, |l| l.bypass)
    }

    /// Global miss rate of `level`: its misses ÷ the phase's data accesses.
    pub fn global_rate(&self, level: &str) -> Option<f64> {
        let n = self.data_accesses();
        self.level(level).filter(|_| n > 0).map(|l| l.misses as f64 / n as f64)
    }

    /// The data levels of the phase (every level but L1I), in printed order.
    pub fn data_levels(&self) -> impl Iterator<Item = &LevelCounts> {
        self.levels.iter().filter(|l| l.level != "L1I")
    }
}

/// One cache the model simulates (`model-geometry`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelGeometry {
    /// Level name.
    pub level: String,
    /// Bytes.
    pub size: u64,
    /// Line, bytes.
    pub line: u64,
    /// Sets.
    pub sets: u64,
    /// Ways.
    pub ways: u64,
    /// Replacement policy.
    pub policy: String,
    /// Where the geometry came from (`guest`, a profile, the arguments).
    pub origin: String,
    /// Hit latency, cycles (newer plugins).
    pub hit_cycles: Option<f64>,
    /// Hit latency, ns (newer plugins).
    pub hit_ns: Option<f64>,
    /// L1I only: `vipt` when the model indexes it by VA (rule 21), with the VA index bits and
    /// where the choice came from; `None` = physically indexed.
    pub vipt: Option<(u64, String)>,
}

/// All the model's records of a run, by kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelData {
    /// Simulated caches.
    pub geometry: Vec<ModelGeometry>,
    /// Phases in phase-id order.
    pub phases: Vec<Phase>,
    /// Whole-run counts per level.
    pub totals: Vec<LevelCounts>,
    /// The `model-profile` record (profile, clock, latencies, prefetcher), if any.
    pub profile: Option<Object>,
    /// The `model-topology` record (clusters, hand-over costs), if any.
    pub topology: Option<Object>,
    /// The `model-run` record, if any.
    pub run: Option<Object>,
    /// `model-warning` texts.
    pub warnings: Vec<String>,
    /// `hazard` records (sanitizer findings).
    pub hazards: Vec<Object>,
    /// The `hazard-total` record, if any.
    pub hazard_total: Option<Object>,
    /// `model-ic-alias` records (rule 21: IC IVAUs that left VIPT L1I copies at other indexes).
    pub ic_aliases: Vec<Object>,
}

impl ModelData {
    /// Reads the model's records (records of other kinds are ignored).
    pub fn from_records(records: &[Record]) -> ModelData {
        let mut d = ModelData::default();
        let mut phases: BTreeMap<u64, Phase> = BTreeMap::new();
        let mut times: Vec<(u64, String, PhaseTime)> = Vec::new();
        let mut next_anon = u64::MAX;
        for r in records {
            let o = &r.obj;
            if let Some(g) = r.view::<record::ModelGeometryView<_>>() {
                d.geometry.push(ModelGeometry {
                    level: g.level().unwrap_or("").to_string(),
                    size: g.size().unwrap_or(0),
                    line: g.line().unwrap_or(0),
                    sets: g.sets().unwrap_or(0),
                    ways: g.ways().unwrap_or(0),
                    policy: g.policy().unwrap_or("").to_string(),
                    origin: g.origin().unwrap_or("").to_string(),
                    hit_cycles: g.hit_cycles().map(|c| c as f64),
                    hit_ns: g.hit_ns(),
                    vipt: (g.index() == Some("vipt")).then(|| (g.va_index_bits().unwrap_or(0), g.index_ref().unwrap_or("").to_string())),
                });
            } else if r.view::<record::ModelIcAliasView<_>>().is_some() {
                d.ic_aliases.push(o.clone());
            } else if let Some(m) = r.view::<record::ModelView<_>>() {
                let name = m.phase().unwrap_or("").to_string();
                // A record without an id is a phase of its own (never merged by name).
                let id = m.phase_id().unwrap_or_else(|| {
                    next_anon -= 1;
                    next_anon
                });
                let p = phases.entry(id).or_insert_with(|| Phase::named(&name, id));
                p.levels.push(LevelCounts::new(m.level(), o, m.counts(), m.prefetches()));
            } else if let Some(c) = r.view::<record::ModelCoherenceView<_>>() {
                let (name, id) = (c.phase().unwrap_or(""), c.phase_id().unwrap_or(u64::MAX));
                let p = phases.entry(id).or_insert_with(|| Phase::named(name, id));
                let sum = p.coherence.get_or_insert_with(PhaseCoherence::default);
                sum.transfers += c.buf_interventions().unwrap_or(0);
                sum.invalidations += c.buf_invalidations().unwrap_or(0);
                sum.cluster_handovers += c.buf_cluster_handovers().unwrap_or(0);
                sum.cross_handovers += c.buf_cross_handovers().unwrap_or(0);
            } else if let Some(t) = r.view::<record::ModelTimeView<_>>() {
                let time = PhaseTime {
                    data_accesses: t.data_accesses().unwrap_or(0),
                    cycles: t.cycles().map_or(f64::NAN, |c| c as f64),
                    ns: t.ns().unwrap_or(f64::NAN),
                };
                times.push((t.phase_id().unwrap_or(u64::MAX), t.phase().unwrap_or("").to_string(), time));
            } else if let Some(t) = r.view::<record::ModelTotalView<_>>() {
                d.totals.push(LevelCounts::new(t.level(), o, t.counts(), t.prefetches()));
            } else if let Some(w) = r.view::<record::ModelWarningView<_>>() {
                d.warnings.push(w.what().unwrap_or("").to_string());
            }
            match r.kind() {
                "model-profile" => d.profile = Some(o.clone()),
                "model-topology" => d.topology = Some(o.clone()),
                "model-run" => d.run = Some(o.clone()),
                "hazard" => d.hazards.push(o.clone()),
                "hazard-total" => d.hazard_total = Some(o.clone()),
                _ => {}
            }
        }
        for (id, name, t) in times {
            match phases.get_mut(&id) {
                Some(p) => p.time = Some(t),
                None => {
                    // A timed phase without counts still has a time.
                    phases.insert(id, Phase { time: Some(t), ..Phase::named(&name, id) });
                }
            }
        }
        d.phases = phases.into_values().collect();
        d
    }

    /// True when the log held no model record at all.
    pub fn is_empty(&self) -> bool {
        self.geometry.is_empty() && self.phases.is_empty() && self.totals.is_empty() && self.run.is_none() && self.profile.is_none()
    }

    /// Phases of one bench and variant.
    pub fn phases_of(&self, variant: Variant) -> impl Iterator<Item = &Phase> + '_ {
        self.phases.iter().filter(move |p| p.parsed.is(variant))
    }

    /// Phases of one bench.
    pub fn phases_in(&self, bench: Bench) -> impl Iterator<Item = &Phase> + '_ {
        self.phases.iter().filter(move |p| p.parsed.of(bench))
    }

    /// The profile name: `model-profile`'s, else the geometry's origin.
    pub fn profile_name(&self) -> Option<String> {
        self.profile
            .as_ref()
            .and_then(|p| record::ModelProfileView::of(p)?.profile())
            .map(str::to_string)
            .or_else(|| self.geometry.iter().find(|g| g.level == "L1D").map(|g| g.origin.clone()))
    }

    /// The model geometry of `level`.
    pub fn geometry_of(&self, level: &str) -> Option<&ModelGeometry> {
        self.geometry.iter().find(|g| g.level == level)
    }

    /// The data levels the model simulates (every level but L1I), in printed order; else the
    /// levels the phases count.
    pub fn data_level_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.geometry.iter().filter(|g| g.level != "L1I").map(|g| g.level.clone()).collect();
        if v.is_empty() {
            for p in &self.phases {
                for l in p.data_levels() {
                    if !v.contains(&l.level) {
                        v.push(l.level.clone());
                    }
                }
            }
        }
        v
    }
}

/// One working set of a pointer-chase curve.
#[derive(Debug, Clone, PartialEq)]
pub struct ChasePoint {
    /// Working set, bytes.
    pub bytes: u64,
    /// Phase id.
    pub phase_id: u64,
    /// Data accesses.
    pub data_accesses: u64,
    /// (level, global miss rate) per data level.
    pub global: Vec<(String, f64)>,
    /// (level, local miss rate) per data level.
    pub local: Vec<(String, f64)>,
    /// Fraction of data accesses that bypassed the caches.
    pub bypass_fraction: f64,
    /// Modelled cycles per data access (`model-time`).
    pub cycles_per_access: Option<f64>,
    /// Modelled ns per data access (`model-time`).
    pub ns_per_access: Option<f64>,
}

impl ChasePoint {
    /// The global miss rate of `level`.
    pub fn global_rate(&self, level: &str) -> Option<f64> {
        self.global.iter().find(|(l, _)| l == level).map(|(_, r)| *r)
    }
}

/// The pointer chase of one attribute (phases `latency/chase/ATTR/BYTES/…`), by working set.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaseCurve {
    /// Memory attribute.
    pub attr: String,
    /// Points in working-set order.
    pub points: Vec<ChasePoint>,
}

impl ChaseCurve {
    /// True when most data accesses bypass the caches (NC, Device, caches off).
    pub fn bypasses(&self) -> bool {
        let n = self.points.len().max(1) as f64;
        self.points.iter().map(|p| p.bypass_fraction).sum::<f64>() / n > 0.5
    }
}

fn ratio(a: f64, b: u64) -> Option<f64> {
    (b > 0 && a.is_finite()).then(|| a / b as f64)
}

/// The chase curves, one per attribute in first-seen order.
pub fn chase_curves(d: &ModelData) -> Vec<ChaseCurve> {
    let mut out: Vec<ChaseCurve> = Vec::new();
    for p in d.phases_of(Variant::Chase) {
        let Some(bytes) = p.parsed.bytes else { continue };
        let n = p.data_accesses();
        let point = ChasePoint {
            bytes,
            phase_id: p.id,
            data_accesses: n,
            global: p.data_levels().map(|l| (l.level.clone(), if n == 0 { 0.0 } else { l.misses as f64 / n as f64 })).collect(),
            local: p.data_levels().map(|l| (l.level.clone(), l.local_rate())).collect(),
            bypass_fraction: if n == 0 { 0.0 } else { p.bypass() as f64 / n as f64 },
            cycles_per_access: p.time.and_then(|t| ratio(t.cycles, t.data_accesses)),
            ns_per_access: p.time.and_then(|t| ratio(t.ns, t.data_accesses)),
        };
        match out.iter_mut().find(|c| c.attr == p.parsed.attr) {
            Some(c) => c.points.push(point),
            None => out.push(ChaseCurve { attr: p.parsed.attr.clone(), points: vec![point] }),
        }
    }
    for c in &mut out {
        c.points.sort_by_key(|p| (p.bytes, p.phase_id));
    }
    out
}

/// A knee of one level along one attribute's chase curve (the rule is in the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// Memory attribute.
    pub attr: String,
    /// Level name.
    pub level: String,
    /// The largest working set that still fits (the inferred capacity), bytes.
    pub fits: u64,
    /// The next working set, past the capacity, bytes.
    pub jump: u64,
    /// Global miss rate at `fits`.
    pub rate_fits: f64,
    /// Global miss rate at `jump`.
    pub rate_jump: f64,
}

/// The knee of `level` along `curve`, if the curve has one.
pub fn knee_of(curve: &ChaseCurve, level: &str) -> Option<Knee> {
    let pts: Vec<(u64, f64)> = curve.points.iter().filter_map(|p| p.global_rate(level).map(|r| (p.bytes, r))).collect();
    let first_high = pts.iter().position(|&(_, r)| r >= KNEE_HIGH)?;
    let first_not_low = pts.iter().position(|&(_, r)| r >= KNEE_LOW)?;
    if first_not_low == 0 || first_not_low > first_high {
        return None;
    }
    let (fits, rate_fits) = pts[first_not_low - 1];
    let (jump, rate_jump) = pts[first_not_low];
    Some(Knee { attr: curve.attr.clone(), level: level.to_string(), fits, jump, rate_fits, rate_jump })
}

/// Every knee of every cached attribute's chase curve (bypassing attributes have none).
pub fn knees(d: &ModelData) -> Vec<Knee> {
    let levels = d.data_level_names();
    chase_curves(d).iter().filter(|c| !c.bypasses()).flat_map(|c| levels.iter().filter_map(|l| knee_of(c, l)).collect::<Vec<_>>()).collect()
}

/// What one source says about a value, with where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it comes from (phases, register, manual).
    pub source: String,
}

/// One level as inferred, as CCSIDR reports it, and as the silicon is published.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LevelGeometry {
    /// Level name (L1D, L2, L3).
    pub level: String,
    /// Inferred capacity (the chase knee's `fits`), bytes.
    pub capacity: Option<Sourced<u64>>,
    /// Inferred ways (the associativity sweep).
    pub ways: Option<Sourced<u64>>,
    /// CCSIDR: (size, ways, sets, line).
    pub ccsidr: Option<(u64, u64, u64, u64)>,
    /// The CCSIDR geometry comes from the model's `model-geometry` record of origin `guest`
    /// (the kernel announces CCSIDR to the plugin), the run having no `cache` record.
    pub ccsidr_from_model: bool,
    /// Published silicon: (sizes in bytes the core can be built with, ways, line, source).
    pub silicon: Option<(Vec<u64>, u64, u64, String)>,
    /// What the model simulated: (size, ways, line, origin).
    pub model: Option<(u64, u64, u64, String)>,
}

/// Geometry inferred from the model's counts, beside CCSIDR and the published silicon.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Inferred {
    /// Core name (boot record).
    pub cpu: Option<String>,
    /// Model profile.
    pub profile: Option<String>,
    /// Inferred line size, bytes.
    pub line: Option<Sourced<u64>>,
    /// (stride, L1D local miss rate) of the line sweep.
    pub line_sweep: Vec<(u64, f64)>,
    /// Per data level.
    pub levels: Vec<LevelGeometry>,
    /// Each associativity sweep.
    pub ways_sweeps: Vec<WaysSweep>,
    /// When the model's profile is a board whose core is not the emulated CPU (`rpi5` on the
    /// default cortex-a72): (the profile's core, the CPU). The silicon compared with is then
    /// the profile's core's.
    pub profile_core: Option<(&'static str, String)>,
}

/// The core each board profile of the cache model models (host/cache-model's
/// `Hierarchy::profile`: BCM2711 = Cortex-A72, BCM2712 = Cortex-A76), by MIDR part number.
pub const PROFILE_CORES: &[(&str, u16)] = &[("rpi4", 0xd08), ("rpi5", 0xd0b)];

/// One associativity sweep: K addresses `spacing` apart, for K = 1, 2, …
#[derive(Debug, Clone, PartialEq)]
pub struct WaysSweep {
    /// Level whose miss rate is read.
    pub level: String,
    /// Spacing of the addresses, bytes.
    pub spacing: u64,
    /// (K, local miss rate at the level), by K.
    pub points: Vec<(u64, f64)>,
    /// The inferred ways (the rule is in the module docs).
    pub ways: Option<u64>,
}

/// The level name of an `infer/ways` phase's `level=` parameter (`1` → L1D, `2` → L2; names
/// are kept).
pub fn level_name(v: &str) -> String {
    match v.parse::<u64>() {
        Ok(1) => "L1D".into(),
        Ok(n) => format!("L{n}"),
        Err(_) => v.to_ascii_uppercase(),
    }
}

/// The line-size sweep: (stride, L1D local miss rate) sorted by stride, and the inferred line.
pub fn infer_line(d: &ModelData) -> (Vec<(u64, f64)>, Option<u64>) {
    // Lines brought in per load: a prefetcher turns misses into prefetch hits, not into fewer
    // fills, so both count.
    let mut pts: Vec<(u64, f64)> = d
        .phases_of(Variant::Line)
        .filter_map(|p| {
            let l1 = p.level("L1D")?;
            let fills = l1.misses + l1.prefetch_hits().unwrap_or(0);
            Some((p.parsed.num(Param::Stride)?, if l1.accesses == 0 { 0.0 } else { fills as f64 / l1.accesses as f64 }))
        })
        .collect();
    pts.sort_by_key(|&(s, _)| s);
    let line = infer::line_size(&pts);
    (pts, line)
}

/// The associativity sweeps, one per (level, spacing), with the inferred ways (the rule:
/// `cachescope_arch::cache::infer::ways`, the one the kernel applies to its timer).
pub fn infer_ways(d: &ModelData) -> Vec<WaysSweep> {
    let mut sweeps: Vec<WaysSweep> = Vec::new();
    for p in d.phases_of(Variant::Ways) {
        let (Some(level), Some(k)) = (p.parsed.param(Param::Level).map(level_name), p.parsed.num(Param::N)) else { continue };
        let Some(counts) = p.level(&level) else { continue };
        let spacing = p.parsed.bytes.unwrap_or(0);
        match sweeps.iter_mut().find(|w| w.level == level && w.spacing == spacing) {
            Some(w) => w.points.push((k, counts.local_rate())),
            None => sweeps.push(WaysSweep { level, spacing, points: vec![(k, counts.local_rate())], ways: None }),
        }
    }
    for w in &mut sweeps {
        w.points.sort_by_key(|&(k, _)| k);
        w.ways = infer::ways(&w.points);
    }
    sweeps
}

/// Infers line size, capacities and associativity from the model's counts, and sets them
/// beside CCSIDR (`cache` records of `run`) and the published silicon (the boot record's MIDR).
pub fn infer(run: &[Record], d: &ModelData) -> Inferred {
    let boot = run.iter().find_map(|r| r.view::<record::BootView<_>>());
    let cpu_midr = boot.and_then(|b| b.midr()).map(|raw| Midr { raw });
    // A board profile is compared with its own core's silicon, whatever CPU QEMU emulates.
    let profile_part = d.profile_name().and_then(|p| PROFILE_CORES.iter().find(|(n, _)| *n == p).map(|(_, part)| *part));
    let midr = profile_part.map(|part| Midr { raw: (0x41 << 24) | (u64::from(part) << 4) }).or(cpu_midr);
    let profile_core = profile_part.filter(|&part| cpu_midr.map(|m| m.part()) != Some(part)).and_then(|part| {
        let core = silicon::TABLE.iter().find(|e| e.part == part)?.core;
        Some((core, boot.and_then(|b| b.cpu()).unwrap_or("an unknown CPU").to_string()))
    });
    let (line_sweep, line) = infer_line(d);
    let ways = infer_ways(d);
    let knees = knees(d);
    let mut names = d.data_level_names();
    let caches: Vec<record::CacheView<_>> = run.iter().filter_map(|r| r.view()).collect();
    for c in &caches {
        if let Some(n) = ccsidr_level_name(c) {
            // Data and unified caches only: the sweeps load data.
            if !n.ends_with('I') && !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let levels = names
        .iter()
        .map(|name| {
            // Prefer the normal-wb curve's knee, else the first cached attribute's.
            let knee = knees.iter().filter(|k| &k.level == name).min_by_key(|k| k.attr != "normal-wb");
            let w = ways.iter().filter(|w| &w.level == name && w.ways.is_some()).max_by_key(|w| w.points.len());
            let cc = caches.iter().find(|c| ccsidr_level_name(c).as_ref() == Some(name));
            let (lvl, kind) = level_kind(name);
            let sil = midr.and_then(|m| silicon::lookup(m, lvl, kind));
            let guest = d.geometry_of(name).filter(|g| cc.is_none() && g.origin == "guest");
            LevelGeometry {
                ccsidr_from_model: guest.is_some(),
                level: name.clone(),
                capacity: knee.map(|k| Sourced {
                    value: k.fits,
                    source: format!(
                        "model chase knee ({}: miss rate {:.2} at {}, {:.2} at {})",
                        k.attr,
                        k.rate_fits,
                        crate::metrics::human_bytes(k.fits as f64),
                        k.rate_jump,
                        crate::metrics::human_bytes(k.jump as f64)
                    ),
                }),
                ways: w.map(|w| Sourced {
                    value: w.ways.unwrap_or(0),
                    source: format!(
                        "model conflict sweep (infer/ways, {} apart, {} points: largest K with {} miss rate < {WAYS_MISS})",
                        crate::metrics::human_bytes(w.spacing as f64),
                        w.points.len(),
                        w.level
                    ),
                }),
                ccsidr: cc
                    .map(|c| (c.size().unwrap_or(0), c.ways().unwrap_or(0), c.sets().unwrap_or(0), c.line().unwrap_or(0)))
                    .or(guest.map(|g| (g.size, g.ways, g.sets, g.line))),
                silicon: sil
                    .map(|p| (p.sizes_kib.iter().map(|k| *k as u64 * 1024).collect(), p.ways as u64, p.line as u64, p.source.to_string())),
                model: d.geometry_of(name).map(|g| (g.size, g.ways, g.line, g.origin.clone())),
            }
        })
        .collect();
    Inferred {
        cpu: boot.and_then(|b| b.cpu()).map(str::to_string),
        profile: d.profile_name(),
        line: line.map(|l| Sourced {
            value: l,
            source: format!("model stride sweep (infer/line: smallest stride bringing in ≥ {LINE_FULL_MISS} lines per load)"),
        }),
        line_sweep,
        levels,
        ways_sweeps: ways,
        profile_core,
    }
}

/// L1D / L1I / L2 … of a `cache` record.
pub fn ccsidr_level_name(c: &record::CacheView<'_, Object>) -> Option<String> {
    let level = c.level()?;
    let ty = c.r#type().unwrap_or("");
    Some(match (level, ty.chars().next()) {
        (l, Some('d')) => format!("L{l}D"),
        (l, Some('i')) => format!("L{l}I"),
        (l, _) => format!("L{l}"),
    })
}

fn level_kind(name: &str) -> (u8, Kind) {
    let digits: String = name.chars().filter(char::is_ascii_digit).collect();
    let level = digits.parse().unwrap_or(0);
    let kind = if name.ends_with('D') {
        Kind::Data
    } else if name.ends_with('I') {
        Kind::Instruction
    } else {
        Kind::Unified
    };
    (level, kind)
}

impl Inferred {
    /// The inferred / CCSIDR / published-silicon table, then the sources, as text.
    pub fn to_text(&self) -> String {
        use crate::metrics::human_bytes as hb;
        let dash = || "–".to_string();
        let mut t = format!(
            "geometry of {} under the cache model (profile {})\n{:<10} {:<10} {:<10} {}\n",
            self.cpu.as_deref().unwrap_or("an unknown core"),
            self.profile.as_deref().unwrap_or("?"),
            "",
            "inferred",
            "CCSIDR",
            "published silicon"
        );
        let row = |what: String, a: String, b: String, c: String| format!("{what:<10} {a:<10} {b:<10} {c}\n");
        t += &row(
            "line".into(),
            self.line.as_ref().map_or_else(dash, |l| format!("{} B", l.value)),
            self.levels.iter().find_map(|l| l.ccsidr.map(|c| format!("{} B", c.3))).unwrap_or_else(dash),
            self.levels.iter().find_map(|l| l.silicon.as_ref().map(|s| format!("{} B", s.2))).unwrap_or_else(dash),
        );
        for l in &self.levels {
            t += &row(
                format!("{} size", l.level),
                l.capacity.as_ref().map_or_else(dash, |c| hb(c.value as f64)),
                l.ccsidr.map_or_else(dash, |c| hb(c.0 as f64)),
                l.silicon.as_ref().map_or_else(dash, |s| s.0.iter().map(|b| hb(*b as f64)).collect::<Vec<_>>().join(" or ")),
            );
            t += &row(
                format!("{} ways", l.level),
                l.ways.as_ref().map_or_else(dash, |w| w.value.to_string()),
                l.ccsidr.map_or_else(dash, |c| c.1.to_string()),
                l.silicon.as_ref().map_or_else(dash, |s| s.1.to_string()),
            );
        }
        t += "sources:\n";
        match &self.line {
            Some(l) => t += &format!("  line: {}\n", l.source),
            None if self.line_sweep.is_empty() => t += "  line: not inferred (no infer/line phases in this run)\n",
            None => t += &format!("  line: not inferred (no stride of the sweep brought in {LINE_FULL_MISS} lines per load)\n"),
        }
        for l in &self.levels {
            match &l.capacity {
                Some(s) => t += &format!("  {} size: {}\n", l.level, s.source),
                None => t += &format!("  {} size: not inferred (no knee in the model's chase curves)\n", l.level),
            }
            match &l.ways {
                Some(s) => t += &format!("  {} ways: {}\n", l.level, s.source),
                None => t += &format!("  {} ways: not inferred (no infer/ways phases for this level)\n", l.level),
            }
            if l.ccsidr_from_model {
                t += &format!("  {} CCSIDR: as the kernel announced it to the model (model-geometry, origin guest)\n", l.level);
            }
            if let Some((_, _, _, src)) = &l.silicon {
                t += &format!("  {} silicon: {src}\n", l.level);
            }
            if let Some((size, ways, line, origin)) = &l.model {
                t += &format!("  {} simulated by the model: {} {ways}-way, {line} B lines (origin {origin})\n", l.level, hb(*size as f64));
            }
        }
        t += "  CCSIDR: the kernel's cache records (the register; architecturally only a set/way geometry)\n";
        t
    }

    /// The same as JSON.
    pub fn to_json(&self) -> Value {
        let src = |s: &Option<Sourced<u64>>| s.as_ref().map(|s| json!({"value": s.value, "source": s.source}));
        json!({
            "cpu": self.cpu,
            "profile": self.profile,
            "line": src(&self.line),
            "line_sweep": self.line_sweep,
            "levels": self.levels.iter().map(|l| json!({
                "level": l.level,
                "capacity": src(&l.capacity),
                "ways": src(&l.ways),
                "ccsidr": l.ccsidr.map(|(size, ways, sets, line)| json!({"size": size, "ways": ways, "sets": sets, "line": line})),
                "silicon": l.silicon.as_ref().map(|(sizes, ways, line, source)| json!({"sizes": sizes, "ways": ways, "line": line, "source": source})),
                "model": l.model.as_ref().map(|(size, ways, line, origin)| json!({"size": size, "ways": ways, "line": line, "origin": origin})),
            })).collect::<Vec<_>>(),
            "ways_sweeps": self.ways_sweeps.iter().map(|w| json!({"level": w.level, "spacing": w.spacing, "points": w.points, "ways": w.ways})).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::handoff::handoff;
    use crate::bench::kv::{kv_points, kv_starts};
    use crate::bench::stream::stream;
    use crate::input::Log;

    /// A `model` record line.
    fn rec(phase: &str, id: u64, level: &str, accesses: u64, misses: u64, extra: &str) -> String {
        format!(
            "# cs: {{\"record\":\"model\",\"phase\":\"{phase}\",\"phase_id\":{id},\"level\":\"{level}\",\"accesses\":{accesses},\"hits\":{},\"misses\":{misses},\"writebacks\":0,\"maint\":0,\"bypass\":0{extra},\"source\":\"model\"}}\n",
            accesses - misses
        )
    }

    fn data(text: &str) -> (Vec<Record>, ModelData) {
        let recs = crate::records::extract(&Log::from_bytes("m", text.as_bytes())).0;
        let d = ModelData::from_records(&recs);
        (recs, d)
    }

    const GEOMETRY: &str = concat!(
        "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":256,\"ways\":2,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"rpi4\",\"vcpus\":1,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-geometry\",\"level\":\"L2\",\"size\":1048576,\"line\":64,\"sets\":1024,\"ways\":16,\"sharing\":\"shared\",\"policy\":\"lru\",\"origin\":\"rpi4\",\"vcpus\":1,\"source\":\"model\"}\n",
    );

    #[test]
    fn phase_names_are_taken_apart() {
        let p = PhaseName::parse("infer/ways/normal-wb/16384/level=1,n=3");
        assert_eq!((p.bench.as_str(), p.variant.as_str(), p.attr.as_str(), p.bytes), ("infer", "ways", "normal-wb", Some(16384)));
        assert_eq!((p.param(Param::Level), p.num(Param::N)), (Some("1"), Some(3)));
        let p = PhaseName::parse("kv/scan-aligned/normal-wb/131072/tokens=320/cached=256");
        assert_eq!((p.num(Param::Tokens), p.num(Param::Cached)), (Some(320), Some(256)));
        assert_eq!(PhaseName::parse("x").variant, "");
    }

    #[test]
    fn knees_follow_the_documented_rule() {
        let mut t = GEOMETRY.to_string();
        // L1D: low up to 32 KiB, jumps at 40 KiB; L2: low up to 1 MiB, jumps at 1.25 MiB.
        for (i, (b, l1, l2)) in
            [(16384u64, 0u64, 0u64), (32768, 123, 0), (40960, 3847, 0), (1048576, 4000, 60), (1310720, 4090, 4080)].iter().enumerate()
        {
            let ph = format!("latency/chase/normal-wb/{b}/line=64");
            t += &rec(&ph, i as u64 + 1, "L1D", 4096, *l1, "");
            t += &rec(&ph, i as u64 + 1, "L2", (*l1).max(1), *l2, "");
        }
        let (_, d) = data(&t);
        let k = knees(&d);
        assert_eq!(k.len(), 2, "{k:#?}");
        assert_eq!((k[0].level.as_str(), k[0].fits, k[0].jump), ("L1D", 32768, 40960));
        assert_eq!((k[1].level.as_str(), k[1].fits, k[1].jump), ("L2", 1048576, 1310720));
        // A ladder that never gets past a level has no knee there.
        let c = &chase_curves(&d)[0];
        let short = ChaseCurve { attr: c.attr.clone(), points: c.points[..2].to_vec() };
        assert_eq!(knee_of(&short, "L1D"), None);
    }

    #[test]
    fn modelled_latency_prefetch_and_optional_fields() {
        let mut t = GEOMETRY.to_string();
        t += &rec("latency/chase/normal-wb/4096/line=64", 1, "L1D", 1000, 0, "");
        t += "# cs: {\"record\":\"model-time\",\"phase\":\"latency/chase/normal-wb/4096/line=64\",\"phase_id\":1,\"data_accesses\":1000,\"cycles\":3000,\"ns\":1670,\"source\":\"model\"}\n";
        t += &rec("stream/read-ldp/normal-wb/1048576/prefetch_distance=0", 2, "L1D", 65536, 16384, ",\"prefetches\":0,\"prefetch_hits\":0");
        t += &rec(
            "stream/read-ldp-pldl1strm/normal-wb/1048576/prefetch_distance=512",
            3,
            "L1D",
            65536,
            100,
            ",\"prefetches\":16284,\"prefetch_hits\":16200",
        );
        t += "# cs: {\"record\":\"model-profile\",\"profile\":\"rpi5\",\"clock_mhz\":2400,\"memory_cycles\":300,\"memory_ns\":125,\"hwpf\":\"off\",\"source\":\"model\"}\n";
        t += "# cs: {\"record\":\"hazard-total\",\"hazards\":0,\"source\":\"model\"}\n";
        let (_, d) = data(&t);
        let c = chase_curves(&d);
        assert_eq!(c[0].points[0].cycles_per_access, Some(3.0));
        assert!((c[0].points[0].ns_per_access.unwrap() - 1.67).abs() < 1e-9);
        let s = stream(&d);
        assert_eq!((s[0].demand_misses, s[0].prefetches, s[0].is_prefetch()), (16384, Some(0), false));
        assert_eq!((s[1].demand_misses, s[1].prefetch_hits, s[1].is_prefetch()), (100, Some(16200), true));
        assert_eq!(d.profile_name().as_deref(), Some("rpi5"));
        assert!(d.hazard_total.is_some());
        // Older plugins: no prefetch fields.
        let (_, old) = data(&rec("stream/read-ldp/normal-wb/1024", 1, "L1D", 10, 1, ""));
        assert_eq!(stream(&old)[0].prefetches, None);
    }

    #[test]
    fn handoff_per_mib_and_kv_tokens() {
        let mut t = GEOMETRY.to_string();
        t += "# cs: {\"record\":\"model\",\"phase\":\"handoff/to-device-va-maint/normal-wb/262144\",\"phase_id\":1,\"level\":\"L1D\",\"accesses\":65536,\"hits\":57344,\"misses\":8192,\"writebacks\":8192,\"maint\":4096,\"bypass\":0,\"source\":\"model\"}\n";
        t += "# cs: {\"record\":\"model\",\"phase\":\"handoff/to-device-va-maint/normal-wb/262144\",\"phase_id\":1,\"level\":\"L2\",\"accesses\":8192,\"hits\":8000,\"misses\":192,\"writebacks\":4096,\"maint\":4096,\"bypass\":0,\"source\":\"model\"}\n";
        for (i, (cached, l1)) in [(32u64, 0u64), (64, 140), (128, 1024)].iter().enumerate() {
            t += &rec(
                &format!("kv/scan-aligned/normal-wb/{}/tokens={cached}/cached={cached}/stride=512/wrapped=0", cached * 512),
                i as u64 + 2,
                "L1D",
                cached * 64,
                *l1,
                "",
            );
        }
        let (_, d) = data(&t);
        let h = handoff(&d);
        assert_eq!((h[0].l1d_misses, h[0].memory_reads, h[0].memory_writebacks, h[0].maint), (32768.0, 768.0, 16384.0, 32768.0));
        let st = kv_starts(&d);
        let l1 = st.iter().find(|s| s.level == "L1D").unwrap();
        assert_eq!((l1.bytes_per_token, l1.capacity_tokens, l1.starts_at), (512.0, Some(64.0), Some(64)));
        let l2 = st.iter().find(|s| s.level == "L2").unwrap();
        assert_eq!((l2.capacity_tokens, l2.starts_at, l2.max_cached), (Some(2048.0), None, 128));
        let p = kv_points(&d);
        assert_eq!(p[2].misses_per_token[0], ("L1D".to_string(), 8.0));
    }

    /// Synthetic sweeps as the kernel's infer/ phases will print them, under `rpi4` (L1D 2-way)
    /// and `guest` (4-way, as CCSIDR says).
    fn sweeps(l1_ways: u64) -> String {
        let mut t = GEOMETRY.to_string();
        let mut id = 0;
        for s in [8u64, 16, 32, 64, 128] {
            id += 1;
            // Cold walk: misses/access = min(1, S/64).
            t += &rec(&format!("infer/line/normal-wb/65536/stride={s}"), id, "L1D", 1000, (1000 * s / 64).min(1000), "");
        }
        for k in 1..=6u64 {
            id += 1;
            let misses = if k <= l1_ways { 2 } else { 990 };
            t += &rec(&format!("infer/ways/normal-wb/16384/level=1,n={k}"), id, "L1D", 1000, misses, "");
            id += 1;
            t += &rec(&format!("infer/ways/normal-wb/65536/level=2,n={}", k * 4), id, "L2", 1000, if k * 4 <= 16 { 1 } else { 999 }, "");
        }
        t
    }

    const RUN: &str = concat!(
        "# cs: {\"record\":\"boot\",\"schema\":2,\"el\":1,\"current_el\":1,\"board\":\"qemu-virt\",\"midr\":\"0x410fd083\",\"cpu\":\"Cortex-A72\",\"cntfrq\":62500000,\"dtb\":true,\"ram_base\":\"0x40000000\",\"ram_size\":536870912,\"uart\":\"0x9000000\",\"emulated\":true,\"args\":\"\"}\n",
        "# cs: {\"record\":\"cache\",\"level\":1,\"type\":\"data\",\"line\":64,\"ways\":4,\"sets\":128,\"size\":32768,\"source\":\"ccsidr\"}\n",
        "# cs: {\"record\":\"cache\",\"level\":1,\"type\":\"instruction\",\"line\":64,\"ways\":3,\"sets\":256,\"size\":49152,\"source\":\"ccsidr\"}\n",
    );

    #[test]
    fn geometry_is_inferred_beside_ccsidr_and_silicon() {
        let run = crate::records::extract(&Log::from_bytes("r", RUN.as_bytes())).0;
        for (ways, name) in [(2, "rpi4"), (4, "guest")] {
            let (_, d) = data(&sweeps(ways));
            let inf = infer(&run, &d);
            assert_eq!(inf.line.as_ref().map(|l| l.value), Some(64), "{name}");
            let l1 = inf.levels.iter().find(|l| l.level == "L1D").unwrap();
            assert_eq!(l1.ways.as_ref().map(|w| w.value), Some(ways), "{name}: {:#?}", inf.ways_sweeps);
            assert_eq!(l1.ccsidr, Some((32768, 4, 128, 64)));
            assert_eq!(l1.silicon.as_ref().map(|s| (s.1, s.3.as_str())), Some((2, "Cortex-A72 TRM 100095")));
            let l2 = inf.levels.iter().find(|l| l.level == "L2").unwrap();
            assert_eq!(l2.ways.as_ref().map(|w| w.value), Some(16));
            assert!(!inf.levels.iter().any(|l| l.level == "L1I"), "instruction caches are not inferred");
            let text = inf.to_text();
            assert!(text.contains(&format!("L1D ways   {ways:<10} 4          2")), "{text}");
            assert!(text.contains("model stride sweep"), "{text}");
            let json = inf.to_json();
            assert_eq!(json["line"]["value"], 64);
            assert_eq!(json["levels"][0]["ways"]["value"], ways);
        }
    }

    #[test]
    fn same_named_phases_stay_apart() {
        let t =
            rec("kv/scan-aligned/normal-wb/131072", 7, "L1D", 10, 1, "") + &rec("kv/scan-aligned/normal-wb/131072", 9, "L1D", 20, 2, "");
        let (_, d) = data(&t);
        assert_eq!(d.phases.len(), 2);
        assert_eq!(d.phases.iter().map(|p| p.id).collect::<Vec<_>>(), [7, 9]);
    }
}
