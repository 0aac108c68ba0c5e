//! Plugin arguments (`-plugin libcachescope_cache_model.so,arg1=…,arg2=…`) and how they combine
//! with the geometry the guest reports.
//!
//! | argument | values | default |
//! |----------|--------|---------|
//! | `profile` | `guest`, `rpi4`, `rpi5`, `dsu2x4` (two clusters of four, `topology.rs`) | `guest`: the geometry markers the kernel sends at boot |
//! | `l1i`, `l1d`, `l2`, `l3` | `SIZE:WAYS[:LINE]` (e.g. `32K:2:64`); `l3=none` drops L3 | from the profile / guest |
//! | `l2share`, `l3share` | `shared`, `private` | profile's; `shared` for the guest's |
//! | `policy` | `lru`, `fifo`, `random`, `plru` (tree pseudo-LRU): every level (a profile's inclusion stays) | the profile's per level (`rpi4`, `rpi5`); `lru` for the guest's |
//! | `l1i_index` | `cpu` (the guest's CTR_EL0.L1Ip without a profile, the profile's with one), `pipt`, `vipt` (rule 21 of `hierarchy.rs`: the L1I set-index bits above the 4 KiB page offset come from the fetch's VA) | `cpu` |
//! | `seed` | integer (random policy) | `1` |
//! | `zva` | DC ZVA block in bytes | `64` |
//! | `out` | file for the records | standard error |
//! | `fast` | `on`, `off`: the shortcut (same line, batching, inline fetch; off = every access simulated) | `on` |
//! | `trace` | file for a text trace of every model operation (turns the shortcut off; replayed by the reference simulator's test) | none |
//! | `hwpf` | `off`, `nextline`, `stride`: the hardware data prefetcher | `guest`: `off`; `rpi4`, `rpi5`: `stride` |
//! | `hwpf_distance`, `hwpf_degree` | 1..=64 | the profile's (`guest`: 1, 1) |
//! | `sanitize` | `on`, `off`: the cache-maintenance sanitizer | `on` |
//! | `coherence` | `on`, `off`: MESI across vCPUs (off = private caches never snooped, for measuring its cost) | `on` |
//! | `hazard_limit` | 1..=10000: the most distinct hazards a run records; past it they are counted and `hazard-total.truncated` fails the run | `10000` |
//! | `pc_table` | 0..=10000: at exit, up to this many `model-pc` records (L1D/L2 misses and write-backs per load/store PC, `pc_table.rs`); 0 = no table, nothing counted | `0` |
//! | `impl` | `arch`, `silicon`: the architecture's rules, or the profile's core's documented deviations from them (rule 20 of `hierarchy.rs`: `rpi5`/`dsu2x4` Cortex-A76 — DC IVAC as DC CIVAC, DC ISW cleans, Inner Write-Through as Non-cacheable, write streaming after 3 full-line stores, an estimate; `rpi4` Cortex-A72 — none documented); `silicon` needs a profile | `arch` for every profile: the verdict and the baselines judge the architecture, and silicon mode hides mistakes (reported with `masked_by`) |
//! | `tlb` | `on`, `off`: the TLB model (`tlb.rs`: L1I/L1D/L2 TLBs per vCPU, walk cost in `model-time`); `on` needs a profile with TLBs | `rpi4`, `rpi5`, `dsu2x4`: `on`; `guest`: `off` (no TLB geometry: QEMU exposes no TLB facts) |
//! | `tlb_pages` | `mapping`, `4k`: what a TLB entry holds — the guest's page or block (cut to the TLB's page sizes), or one 4 KiB page whatever the mapping (the view of Linux user space without huge pages, where lmbench runs) | `mapping` |
//! | `markers` | `all`, `declarations`: which markers the plugin follows ([`MarkerMode`]; `declarations` = only those that declare what the sanitizer must find, as if the firmware told the model nothing else) | `all` |
//!
//! With `profile=guest` and no geometry markers from the kernel, the `rpi4` geometry is used and
//! the `model-geometry` record says `"origin":"fallback"`.

use std::collections::BTreeMap;

use crate::cache::Policy;
use crate::geometry::{
    Deviations, Geometry, Hierarchy, HwPfKind, HwPrefetch, Impl, Indexing, Latency, LowerLevel, Replacement, Sharing, GENERIC_POLICY_REF,
};
use crate::protocol::Kind;

/// Accepted argument keys (for the error message).
pub const KEYS: &[&str] = &[
    "profile",
    "l1i",
    "l1d",
    "l2",
    "l3",
    "l2share",
    "l3share",
    "policy",
    "l1i_index",
    "seed",
    "zva",
    "out",
    "fast",
    "trace",
    "hwpf",
    "hwpf_distance",
    "hwpf_degree",
    "sanitize",
    "coherence",
    "hazard_limit",
    "pc_table",
    "markers",
    "impl",
    "tlb",
    "tlb_pages",
];

/// Which markers the plugin follows (argument `markers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MarkerMode {
    /// Every marker, and the TPIDR_EL1 core tag (marker protocol 5).
    #[default]
    All,
    /// Only the markers that declare what the sanitizer must find and where: hello (the
    /// protocol version, which decides how the rest are decoded), phase begin and end (the
    /// phases the kernel's `expect-hazard` records name), maintenance range begin and end (the
    /// `maintenance-gap` rule's ranges) and sanitizer quiet. Geometry, window and SCTLR markers
    /// are ignored, and so is the TPIDR_EL1 core tag: the model sees the machine as it would
    /// see firmware that sends no markers, while the verdict can still be judged.
    Declarations,
}

impl MarkerMode {
    /// Every mode, in argument order.
    pub const ALL: [MarkerMode; 2] = [MarkerMode::All, MarkerMode::Declarations];

    /// The argument's value.
    pub const fn name(self) -> &'static str {
        match self {
            MarkerMode::All => "all",
            MarkerMode::Declarations => "declarations",
        }
    }

    /// The mode named `v`.
    pub fn parse(v: &str) -> Option<MarkerMode> {
        Self::ALL.into_iter().find(|m| m.name() == v)
    }
}

/// The most distinct hazards (kind, line, phase) a run records as `hazard` records. A correct
/// run has none outside its declared mistakes (the main job's declare about 1,200 lines); past
/// this bound the sanitizer stops listing lines, counts the rest, and the run is failed
/// (`hazard-total.truncated`). 10,000 records are about 6 MB of model log.
pub const HAZARD_RECORD_LIMIT: u64 = 10_000;

/// The largest per-PC table a run may ask for (`pc_table`, rows).
pub const PC_TABLE_MAX: u64 = 10_000;

/// Parsed plugin arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `None` = the guest's geometry.
    pub profile: Option<String>,
    /// Explicit per-level geometries (`l3` may be `None` = no L3).
    pub l1i: Option<Geometry>,
    /// See `l1i`.
    pub l1d: Option<Geometry>,
    /// See `l1i`.
    pub l2: Option<Geometry>,
    /// `Some(None)` = `l3=none`.
    pub l3: Option<Option<Geometry>>,
    /// Sharing overrides.
    pub l2share: Option<Sharing>,
    /// See `l2share`.
    pub l3share: Option<Sharing>,
    /// Replacement policy of every level (`None` = the profile's, else LRU).
    pub policy: Option<Policy>,
    /// L1I indexing (`None` = the guest's CTR_EL0.L1Ip, or the profile's).
    pub l1i_index: Option<Indexing>,
    /// Random-policy seed.
    pub seed: u64,
    /// DC ZVA block size.
    pub zva: u32,
    /// Output file.
    pub out: Option<String>,
    /// Fast path on.
    pub fast: bool,
    /// Operation trace file.
    pub trace: Option<String>,
    /// Hardware prefetcher override.
    pub hwpf: Option<HwPfKind>,
    /// Its distance override.
    pub hwpf_distance: Option<u32>,
    /// Its degree override.
    pub hwpf_degree: Option<u32>,
    /// The sanitizer runs.
    pub sanitize: bool,
    /// MESI across vCPUs (rule 17) when there is more than one.
    pub coherence: bool,
    /// The bound on hazard records ([`HAZARD_RECORD_LIMIT`] at most).
    pub hazard_limit: u64,
    /// Rows of the per-PC table (0: none kept).
    pub pc_table: u64,
    /// Which markers are followed.
    pub markers: MarkerMode,
    /// The architecture's rules or the profile's core's deviations (`impl`).
    pub implementation: Impl,
    /// The TLB model: `None` = the profile's default (on where it has TLBs).
    pub tlb: Option<bool>,
    /// TLB entries hold one 4 KiB page whatever the mapping (`tlb_pages=4k`).
    pub tlb_pages_4k: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            profile: None,
            l1i: None,
            l1d: None,
            l2: None,
            l3: None,
            l2share: None,
            l3share: None,
            policy: None,
            l1i_index: None,
            seed: 1,
            zva: 64,
            out: None,
            fast: true,
            trace: None,
            hwpf: None,
            hwpf_distance: None,
            hwpf_degree: None,
            sanitize: true,
            coherence: true,
            hazard_limit: HAZARD_RECORD_LIMIT,
            pc_table: 0,
            markers: MarkerMode::All,
            implementation: Impl::Arch,
            tlb: None,
            tlb_pages_4k: false,
        }
    }
}

fn sharing(key: &str, v: &str) -> Result<Sharing, String> {
    match v {
        "shared" => Ok(Sharing::Shared),
        "private" => Ok(Sharing::Private),
        _ => Err(format!("bad value '{v}' for '{key}': expected shared or private")),
    }
}

fn geometry(key: &str, v: &str) -> Result<Geometry, String> {
    Geometry::parse(v).map_err(|e| format!("bad value for '{key}': {e}"))
}

impl Settings {
    /// Parses `key=value` words.
    pub fn parse<S: AsRef<str>>(words: &[S]) -> Result<Self, String> {
        let mut s = Settings::default();
        let mut seen = Vec::new();
        for w in words {
            let w = w.as_ref();
            let (k, v) = w.split_once('=').ok_or_else(|| format!("malformed argument '{w}': expected key=value"))?;
            if seen.contains(&k) {
                return Err(format!("argument '{k}' given twice"));
            }
            seen.push(k);
            match k {
                "profile" => {
                    if v != "guest" && Hierarchy::profile(v).is_none() {
                        return Err(format!("bad value '{v}' for 'profile': expected guest, {}", Hierarchy::PROFILES.join(", ")));
                    }
                    s.profile = (v != "guest").then(|| v.to_string());
                }
                "l1i" => s.l1i = Some(geometry(k, v)?),
                "l1d" => s.l1d = Some(geometry(k, v)?),
                "l2" => s.l2 = Some(geometry(k, v)?),
                "l3" => s.l3 = Some(if v == "none" { None } else { Some(geometry(k, v)?) }),
                "l2share" => s.l2share = Some(sharing(k, v)?),
                "l3share" => s.l3share = Some(sharing(k, v)?),
                "policy" => {
                    s.policy =
                        Some(Policy::parse(v).ok_or_else(|| format!("bad value '{v}' for 'policy': expected lru, fifo, random or plru"))?)
                }
                "l1i_index" => {
                    s.l1i_index = match v {
                        "cpu" => None,
                        _ => {
                            Some(Indexing::parse(v).ok_or_else(|| format!("bad value '{v}' for 'l1i_index': expected cpu, pipt or vipt"))?)
                        }
                    }
                }
                "seed" => s.seed = v.parse().map_err(|_| format!("bad value '{v}' for 'seed': expected an unsigned integer"))?,
                "zva" => {
                    s.zva = v
                        .parse()
                        .ok()
                        .filter(|z: &u32| z.is_power_of_two() && (4..=2048).contains(z))
                        .ok_or_else(|| format!("bad value '{v}' for 'zva': expected a power of two in 4..=2048"))?
                }
                "out" => {
                    if v.is_empty() {
                        return Err("bad value '' for 'out': expected a file name".into());
                    }
                    s.out = Some(v.to_string())
                }
                "trace" => {
                    if v.is_empty() {
                        return Err("bad value '' for 'trace': expected a file name".into());
                    }
                    s.trace = Some(v.to_string())
                }
                "hwpf" => {
                    s.hwpf =
                        Some(HwPfKind::parse(v).ok_or_else(|| format!("bad value '{v}' for 'hwpf': expected off, nextline or stride"))?)
                }
                "hwpf_distance" | "hwpf_degree" => {
                    let n = v
                        .parse()
                        .ok()
                        .filter(|n: &u32| (1..=64).contains(n))
                        .ok_or_else(|| format!("bad value '{v}' for '{k}': expected an integer in 1..=64"))?;
                    if k == "hwpf_distance" {
                        s.hwpf_distance = Some(n);
                    } else {
                        s.hwpf_degree = Some(n);
                    }
                }
                "sanitize" => s.sanitize = on_off("sanitize", v)?,
                "fast" => s.fast = on_off("fast", v)?,
                "hazard_limit" => {
                    let max = HAZARD_RECORD_LIMIT;
                    s.hazard_limit = v
                        .parse()
                        .ok()
                        .filter(|n: &u64| (1..=max).contains(n))
                        .ok_or_else(|| format!("bad value '{v}' for 'hazard_limit': expected an integer in 1..={max}"))?
                }
                "pc_table" => {
                    let max = PC_TABLE_MAX;
                    s.pc_table = v
                        .parse()
                        .ok()
                        .filter(|n: &u64| *n <= max && (v == "0" || !v.starts_with('0')))
                        .ok_or_else(|| format!("bad value '{v}' for 'pc_table': expected an integer in 0..={max}"))?
                }
                "markers" => {
                    s.markers = MarkerMode::parse(v).ok_or_else(|| {
                        let names: Vec<&str> = MarkerMode::ALL.iter().map(|m| m.name()).collect();
                        format!("bad value '{v}' for 'markers': expected {}", names.join(" or "))
                    })?
                }
                "impl" => {
                    s.implementation = Impl::parse(v).ok_or_else(|| format!("bad value '{v}' for 'impl': expected arch or silicon"))?
                }
                "tlb" => s.tlb = Some(on_off("tlb", v)?),
                "tlb_pages" => {
                    s.tlb_pages_4k = match v {
                        "mapping" => false,
                        "4k" => true,
                        _ => return Err(format!("bad value '{v}' for 'tlb_pages': expected mapping or 4k")),
                    }
                }
                "coherence" => s.coherence = on_off("coherence", v)?,
                _ => return Err(format!("unknown argument '{k}'; accepted: {}", KEYS.join(", "))),
            }
        }
        if s.implementation == Impl::Silicon && s.profile.is_none() {
            return Err(format!(
                "'impl=silicon' needs a profile naming a core ({}): the guest's geometry names no core whose deviations the model could apply",
                Hierarchy::PROFILES.join(", ")
            ));
        }
        if s.tlb == Some(true) && s.tlb_geometry().is_none() {
            return Err(format!(
                "tlb=on needs a profile with TLBs ({}): profile={} has no TLB geometry (QEMU exposes none of the guest CPU's)",
                Hierarchy::PROFILES.join(", "),
                s.profile_name()
            ));
        }
        Ok(s)
    }

    /// The TLBs to model (`tlb.rs`): the profile's, unless `tlb=off`; `None` without a profile
    /// (the `guest` profile has no TLB geometry: QEMU exposes no TLB facts of the CPU).
    pub fn tlb_geometry(&self) -> Option<crate::tlb::TlbGeometry> {
        if self.tlb == Some(false) {
            return None;
        }
        crate::tlb::TlbGeometry::profile(self.profile.as_deref()?)
    }

    /// Whether the geometry waits for the guest's markers (no profile and not every level given).
    pub fn wants_guest_geometry(&self) -> bool {
        self.profile.is_none() && (self.l1i.is_none() || self.l1d.is_none() || self.l2.is_none())
    }

    /// The `model-profile` record's profile name: the profile, else `custom` when the arguments
    /// give every level, else `guest`.
    pub fn profile_name(&self) -> &str {
        match &self.profile {
            Some(p) => p,
            None if !self.wants_guest_geometry() => "custom",
            None => "guest",
        }
    }

    /// The hierarchy to model: the base (profile, else the guest's report, else the `rpi4`
    /// fallback geometry) with the explicit levels and options applied. Without a profile the
    /// latency table is the generic default and the hardware prefetcher is off. Returns it with
    /// its origin (`"profile rpi4"`, `"guest"`, `"fallback"`, `"arguments"`; `"+arguments"` when
    /// some levels were overridden).
    pub fn resolve(&self, guest: &GuestGeometry) -> Result<(Hierarchy, String), String> {
        let (mut h, mut origin) = match &self.profile {
            Some(p) => (Hierarchy::profile(p).expect("checked by parse"), format!("profile {p}")),
            None => match guest.hierarchy() {
                Some(h) => (h, "guest".to_string()),
                None => {
                    let mut h = Hierarchy::profile("rpi4").expect("built in");
                    h.hwpf = HwPrefetch::off(GENERIC_HWPF_REF);
                    h.latency = Latency::generic();
                    // The generic default, as for a guest's own geometry: LRU, nothing inclusive.
                    h.policy = Replacement::uniform(Policy::Lru);
                    h.policy_ref = GENERIC_POLICY_REF;
                    (h, "fallback".to_string())
                }
            },
        };
        if self.hwpf.is_some() || self.hwpf_distance.is_some() || self.hwpf_degree.is_some() {
            let pf = &mut h.hwpf;
            pf.kind = self.hwpf.unwrap_or(pf.kind);
            pf.distance = self.hwpf_distance.unwrap_or(pf.distance);
            pf.degree = self.hwpf_degree.unwrap_or(pf.degree);
            pf.reference = format!("plugin arguments (hwpf={},hwpf_distance={},hwpf_degree={})", pf.kind.name(), pf.distance, pf.degree);
        }
        let explicit = self.l1i.is_some()
            || self.l1d.is_some()
            || self.l2.is_some()
            || self.l3.is_some()
            || self.l2share.is_some()
            || self.l3share.is_some();
        if let Some(g) = self.l1i {
            h.l1i = g;
        }
        if let Some(g) = self.l1d {
            h.l1d = g;
        }
        if let Some(g) = self.l2 {
            match h.lower.first_mut() {
                Some(l) => l.geometry = g,
                None => h.lower.push(LowerLevel { geometry: g, sharing: Sharing::Shared }),
            }
        }
        match self.l3 {
            Some(None) => h.lower.truncate(1),
            Some(Some(g)) => {
                if h.lower.is_empty() {
                    return Err("l3 given but there is no L2".into());
                }
                h.lower.truncate(1);
                h.lower.push(LowerLevel { geometry: g, sharing: Sharing::Shared });
            }
            None => {}
        }
        if let Some(sh) = self.l2share {
            h.lower.first_mut().ok_or("l2share given but there is no L2")?.sharing = sh;
        }
        if let Some(sh) = self.l3share {
            h.lower.get_mut(1).ok_or("l3share given but there is no L3")?.sharing = sh;
        }
        if let Some(p) = self.policy {
            h.policy = Replacement { inclusive: h.policy.inclusive, ..p.into() };
            h.policy_ref = "plugin argument `policy` (every level; the profile's inclusion kept)";
        }
        if self.implementation == Impl::Silicon {
            let p = self.profile.as_deref().expect("checked by parse");
            h.silicon = Deviations::of_profile(p).expect("every profile has its core's deviations");
        }
        if let Some(i) = self.l1i_index {
            h.l1i_index = i;
            h.l1i_index_ref = match i {
                Indexing::Pipt => "plugin argument l1i_index=pipt",
                Indexing::Vipt => "plugin argument l1i_index=vipt",
            };
        } else if self.profile.is_none() {
            // The guest CPU's CTR_EL0.L1Ip decides ([`Settings::l1i_index_of_cpu`]).
            h.l1i_index = Indexing::Pipt;
            h.l1i_index_ref = crate::geometry::DEFAULT_INDEX_REF;
        }
        h.seed = self.seed;
        h.zva_bytes = self.zva;
        // Rule 19: a hand-over without a figure of its own costs the level that serves it; the
        // `model-topology` record says so with the number.
        let serving = h.serving_cycles();
        let ho = &mut h.topology.handover;
        ho.in_cluster_cycles.get_or_insert(serving);
        ho.cross_cluster_cycles.get_or_insert(serving);
        if explicit {
            origin = if self.wants_guest_geometry() || self.profile.is_some() { format!("{origin}+arguments") } else { "arguments".into() };
        }
        h.validate()?;
        Ok((h, origin))
    }
}

impl Settings {
    /// Applies the guest CPU's CTR_EL0 (`ctr`, when read) to a hierarchy [`Settings::resolve`]
    /// gave: without a profile or an `l1i_index` argument, the L1I is indexed as CTR_EL0.L1Ip
    /// says (0b10 VIPT, else PIPT).
    pub fn l1i_index_of_cpu(&self, h: &mut Hierarchy, ctr: Option<u64>) {
        if self.l1i_index.is_some() || self.profile.is_some() {
            return;
        }
        if let Some(raw) = ctr {
            h.l1i_index = Indexing::of_ctr(raw);
            h.l1i_index_ref = match h.l1i_index {
                Indexing::Vipt => "the guest CPU's CTR_EL0.L1Ip = 0b10 (VIPT)",
                Indexing::Pipt => "the guest CPU's CTR_EL0.L1Ip (PIPT: not 0b10)",
            };
        }
    }
}

/// `hwpf_ref` of the profiles without a prefetcher.
pub const GENERIC_HWPF_REF: &str = "generic default: no hardware prefetcher";

/// The geometry markers received from the guest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuestGeometry {
    /// (level, kind) → (line, sets, ways), the last report wins.
    pub caches: BTreeMap<(u32, u8), (u32, u64, u64)>,
}

impl GuestGeometry {
    /// Records one marker; returns whether it changed what was known (a repeated report does not).
    pub fn report(&mut self, level: u32, kind: Kind, line: u32, sets: u64, ways: u64) -> bool {
        let k = match kind {
            Kind::Instruction => 1,
            Kind::Data => 2,
            Kind::Unified => 3,
        };
        self.caches.insert((level, k), (line, sets, ways)) != Some((line, sets, ways))
    }

    /// The guest's (line, sets, ways) of the data or unified cache at `level` (set/way decoding).
    pub fn data_level(&self, level: u32) -> Option<(u32, u64, u64)> {
        self.caches.get(&(level, 2)).or_else(|| self.caches.get(&(level, 3))).copied()
    }

    fn geometry(&self, level: u32, kinds: &[u8]) -> Option<Geometry> {
        let &(line, sets, ways) = kinds.iter().find_map(|k| self.caches.get(&(level, *k)))?;
        Geometry::new(line, u32::try_from(sets).ok()?, u32::try_from(ways).ok()?).ok()
    }

    /// A hierarchy from the reports: L1 I and D (a unified L1 serves both), L2 and L3 unified and
    /// shared. `None` without a usable L1 D report.
    pub fn hierarchy(&self) -> Option<Hierarchy> {
        let l1d = self.geometry(1, &[2, 3])?;
        let l1i = self.geometry(1, &[1, 3]).unwrap_or(l1d);
        let mut lower = Vec::new();
        for level in 2..=3 {
            match self.geometry(level, &[3, 2]) {
                Some(g) => lower.push(LowerLevel { geometry: g, sharing: Sharing::Shared }),
                None => break,
            }
        }
        let h = Hierarchy {
            l1i,
            l1i_index: crate::geometry::Indexing::Pipt,
            l1i_index_ref: crate::geometry::DEFAULT_INDEX_REF,
            l1d,
            lower,
            policy: Replacement::uniform(Policy::Lru),
            seed: 1,
            zva_bytes: 64,
            hwpf: HwPrefetch::off(GENERIC_HWPF_REF),
            latency: Latency::generic(),
            topology: crate::topology::Topology::generic(),
            policy_ref: GENERIC_POLICY_REF,
            silicon: Deviations::NONE,
        };
        h.validate().ok()?;
        Some(h)
    }
}

/// An `on`/`off` argument's value, or the error naming the key and the accepted words.
fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("bad value '{v}' for '{key}': expected on or off")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qemu_a72() -> GuestGeometry {
        let mut g = GuestGeometry::default();
        assert!(g.report(1, Kind::Instruction, 64, 256, 3));
        assert!(g.report(1, Kind::Data, 64, 128, 4));
        assert!(g.report(2, Kind::Unified, 64, 1024, 16));
        assert!(!g.report(2, Kind::Unified, 64, 1024, 16), "a repeated report changes nothing");
        g
    }

    #[test]
    fn defaults_follow_the_guest() {
        let s = Settings::parse::<&str>(&[]).unwrap();
        assert!(s.wants_guest_geometry());
        let (h, origin) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!(origin, "guest");
        assert_eq!(h.l1d, Geometry::new(64, 128, 4).unwrap());
        assert_eq!(h.lower.len(), 1);
        let (h, origin) = s.resolve(&GuestGeometry::default()).unwrap();
        assert_eq!(origin, "fallback");
        let rpi4 = Hierarchy::profile("rpi4").unwrap();
        assert_eq!((h.l1i, h.l1d, &h.lower), (rpi4.l1i, rpi4.l1d, &rpi4.lower));
        assert_eq!(h.hwpf.kind, HwPfKind::Off, "no profile: no prefetcher");
        assert_eq!(h.latency, Latency::generic());
        assert_eq!(s.profile_name(), "guest");
        // No topology of its own: a hand-over costs the serving level (the L2 of the guest's
        // geometry, generic latencies), in the record's numbers too.
        let (h, _) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!((h.topology.clusters, h.topology.handover.in_cluster_cycles), (1, Some(14)));
        let (h, _) = Settings::parse(&["profile=dsu2x4"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert_eq!((h.topology.handover.in_cluster_cycles, h.topology.handover.cross_cluster_cycles), (Some(41), Some(103)));
    }

    #[test]
    fn profiles_and_overrides() {
        let s = Settings::parse(&["profile=rpi4"]).unwrap();
        let (h, origin) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!((h.l1d.sets, h.l1d.ways, origin.as_str()), (256, 2, "profile rpi4"));
        let s = Settings::parse(&["profile=rpi5", "l3=none", "policy=fifo", "seed=9"]).unwrap();
        let (h, origin) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!((h.lower.len(), h.policy, h.seed, origin.as_str()), (1, Policy::Fifo.into(), 9, "profile rpi5+arguments"));
        let s = Settings::parse(&["l1d=16K:4:64", "l3=4M:16:64", "l3share=private"]).unwrap();
        let (h, _) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!(h.l1d.size(), 16 << 10);
        assert_eq!(h.lower[1].sharing, Sharing::Private);
        let s = Settings::parse(&["l1i=32K:2", "l1d=32K:2", "l2=256K:8"]).unwrap();
        assert!(!s.wants_guest_geometry());
        assert_eq!(s.profile_name(), "custom");
        assert_eq!(s.resolve(&GuestGeometry::default()).unwrap().1, "arguments");
        let s = Settings::parse(&["profile=rpi5", "hwpf=nextline", "hwpf_degree=3"]).unwrap();
        let (h, _) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!((h.hwpf.kind, h.hwpf.distance, h.hwpf.degree), (HwPfKind::NextLine, 4, 3));
        assert!(h.hwpf.reference.starts_with("plugin arguments"));
        assert_eq!(h.latency.clock_mhz, 2400);
        let (h, _) = Settings::parse(&["profile=rpi4"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert_eq!(h.hwpf.kind, HwPfKind::Stride);
    }

    #[test]
    fn implementation_modes() {
        let (h, _) = Settings::parse(&["profile=rpi5"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert_eq!(h.silicon, Deviations::NONE, "arch is the default, on a profile too");
        let (h, _) = Settings::parse(&["profile=rpi5", "impl=silicon"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert!(h.silicon.ivac_as_civac && h.silicon.isw_cleans && h.silicon.wt_as_nc);
        assert_eq!(h.silicon.write_streaming, Some(crate::geometry::RPI5_WRITE_STREAMING_LINES));
        assert_eq!(h.silicon.spelling(), "ivac-as-civac,isw-cleans,wt-as-nc,write-streaming=3");
        assert_eq!(Deviations::parse(&h.silicon.spelling()).unwrap().spelling(), h.silicon.spelling());
        let (h, _) = Settings::parse(&["profile=rpi4", "impl=silicon"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert!(!h.silicon.any(), "the A72 TRM documents none");
        assert!(Deviations::parse("write-streaming=0").is_err() && Deviations::parse("ivac").is_err());
        assert_eq!(Settings::parse(&["impl=arch"]).unwrap().implementation, Impl::Arch);
    }

    #[test]
    fn l1i_index_follows_ctr_profile_and_argument() {
        const A53_CTR: u64 = 0x8444_8004;
        const A72_CTR: u64 = 0x8444_c004;
        let s = Settings::parse::<&str>(&[]).unwrap();
        let (mut h, _) = s.resolve(&qemu_a72()).unwrap();
        assert_eq!(h.l1i_index, Indexing::Pipt, "CTR_EL0 not read yet");
        s.l1i_index_of_cpu(&mut h, Some(A53_CTR));
        assert_eq!(h.l1i_index, Indexing::Vipt);
        s.l1i_index_of_cpu(&mut h, Some(A72_CTR));
        assert_eq!(h.l1i_index, Indexing::Pipt);
        let s = Settings::parse(&["profile=rpi4"]).unwrap();
        let (mut h, _) = s.resolve(&qemu_a72()).unwrap();
        s.l1i_index_of_cpu(&mut h, Some(A53_CTR));
        assert_eq!(h.l1i_index, Indexing::Pipt, "the profile's silicon, not the emulated CPU's");
        let s = Settings::parse(&["profile=rpi4", "l1i_index=vipt"]).unwrap();
        let (mut h, _) = s.resolve(&qemu_a72()).unwrap();
        s.l1i_index_of_cpu(&mut h, Some(A72_CTR));
        assert_eq!((h.l1i_index, h.l1i_index_ref), (Indexing::Vipt, "plugin argument l1i_index=vipt"));
        assert_eq!(Settings::parse(&["l1i_index=cpu"]).unwrap().l1i_index, None);
    }

    #[test]
    fn marker_modes() {
        assert_eq!(Settings::parse::<&str>(&[]).unwrap().markers, MarkerMode::All);
        for m in MarkerMode::ALL {
            assert_eq!(Settings::parse(&[format!("markers={}", m.name())]).unwrap().markers, m);
        }
    }

    #[test]
    fn plru_is_accepted_for_every_level() {
        let s = Settings::parse(&["profile=rpi4", "policy=plru"]).unwrap();
        assert_eq!(s.policy, Some(Policy::Plru));
        let (h, _) = s.resolve(&qemu_a72()).unwrap();
        assert!((0..4).all(|k| h.policy.level(k) == Policy::Plru), "{:?}", h.policy);
        assert_eq!(h.policy.inclusive, Hierarchy::profile("rpi4").unwrap().policy.inclusive, "the profile's inclusion stays");
        let (h, _) = Settings::parse(&["policy=plru"]).unwrap().resolve(&qemu_a72()).unwrap();
        assert_eq!(h.policy, Replacement::uniform(Policy::Plru));
        assert_eq!(h.policy.name(), "plru");
    }

    #[test]
    fn bad_arguments_are_named() {
        for (args, want) in [
            (&["bogus=1"][..], "unknown argument 'bogus'"),
            (&["profile=rpi3"], "bad value 'rpi3' for 'profile'"),
            (&["l1d=32K:3:64"], "bad value for 'l1d'"),
            (&["policy=mru"], "bad value 'mru' for 'policy': expected lru, fifo, random or plru"),
            (&["zva=48"], "bad value '48' for 'zva'"),
            (&["fast=maybe"], "bad value 'maybe' for 'fast'"),
            (&["policy=lru", "policy=fifo"], "given twice"),
            (&["out"], "malformed argument 'out'"),
            (&["hwpf=ampm"], "bad value 'ampm' for 'hwpf'"),
            (&["hwpf_degree=0"], "bad value '0' for 'hwpf_degree'"),
            (&["sanitize=maybe"], "bad value 'maybe' for 'sanitize'"),
            (&["coherence=mesi"], "bad value 'mesi' for 'coherence'"),
            (&["hazard_limit=0"], "bad value '0' for 'hazard_limit'"),
            (&["hazard_limit=10001"], "bad value '10001' for 'hazard_limit'"),
            (&["markers=none"], "bad value 'none' for 'markers': expected all or declarations"),
            (&["markers=all", "markers=declarations"], "given twice"),
            (&["profile=rpi5", "impl=asic"], "bad value 'asic' for 'impl': expected arch or silicon"),
            (&["impl=silicon"], "'impl=silicon' needs a profile"),
            (&["profile=guest", "impl=silicon"], "'impl=silicon' needs a profile"),
            (&["l1i_index=vivt"], "bad value 'vivt' for 'l1i_index': expected cpu, pipt or vipt"),
        ] {
            let e = Settings::parse(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        let s = Settings::parse(&["l2=1M:16:32"]).unwrap();
        assert!(s.resolve(&qemu_a72()).unwrap_err().contains("shorter"));
    }
}
