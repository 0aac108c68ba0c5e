//! The digest of foreign firmware observed under the cache model (`cachescope-xtask observe`):
//! what the model log says, symbolised from the firmware's ELF when there is one.
//!
//! - the geometry per level and where it came from (`model-geometry`'s `origin`);
//! - the totals per level (`model-total`);
//! - every hazard as a KCSAN-shaped block: a title line (kind, the exposing function and the
//!   cause's), the exposing access (address, line size, symbol and `file:line`), the cause, and
//!   the maintenance that would have prevented it ([`advice`], one table over
//!   [`HazardKind`]);
//! - the top functions by L1D misses, L2 misses and write-backs (`model-pc` rows folded per
//!   function as cg_annotate does; raw PCs without an ELF);
//! - every warning (`model-warning`), with its cause.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use cachescope_arch::hazard::{HazardAccess, HazardKind, Severity};
use cachescope_arch::record;

use crate::input::Log;
use crate::records::{extract_strict, Record};
use crate::symbols::{Place, Symbols};

/// One modelled cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// L1I, L1D, L2, L3.
    pub level: String,
    /// Bytes.
    pub size: u64,
    /// Line bytes.
    pub line: u64,
    /// Sets.
    pub sets: u64,
    /// Ways.
    pub ways: u64,
    /// Where it came from (`cpu`, `guest`, `fallback`, …).
    pub origin: String,
}

/// One level's whole-run counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Total {
    /// Level.
    pub level: String,
    /// Accesses that reached it.
    pub accesses: u64,
    /// Misses.
    pub misses: u64,
    /// Dirty lines written to the next level.
    pub writebacks: u64,
    /// Accesses that bypassed the caches.
    pub bypass: u64,
}

/// One hazard record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hazard {
    /// The kind as the model log names it.
    pub kind: String,
    /// Physical address of the line.
    pub pa: u64,
    /// Virtual address of the first exposing access.
    pub va: u64,
    /// PC of the first exposing access.
    pub pc: u64,
    /// Phase (empty outside phases).
    pub phase: String,
    /// Occurrences.
    pub count: u64,
    /// The exposing access (`nc-read`, `fetch`, …).
    pub access: String,
    /// The cause (`write`, …).
    pub cause: String,
    /// The cause's PC (0: not known).
    pub cause_pc: u64,
}

/// The hazards of one site: the records of one kind raised by one exposing PC after one cause
/// PC (a loop over a buffer raises one record per line; the digest and `--expect` read sites).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The first record (kind, PCs, access, cause, its addresses).
    pub first: Hazard,
    /// Records (lines) in the site.
    pub lines: u64,
    /// Lowest and highest virtual address of its lines.
    pub va_range: (u64, u64),
    /// Occurrences over its records.
    pub count: u64,
    /// Distinct phases, in order of appearance.
    pub phases: Vec<String>,
}

/// One warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The text.
    pub what: String,
    /// Its cause word, when the model gave one.
    pub cause: Option<String>,
    /// Occurrences, when it stands for several.
    pub count: Option<u64>,
    /// The PC of the first instruction it is about, when the model knew it.
    pub pc: Option<u64>,
}

/// One per-PC row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcRow {
    /// The PC (meaningless in the rest row).
    pub pc: u64,
    /// PCs summed in the row.
    pub pcs: u64,
    /// The rest row.
    pub rest: bool,
    /// L1D misses, L2 misses, write-backs.
    pub counts: [u64; 3],
}

/// What a model log says about a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The last geometry of each level, in record order.
    pub geometry: Vec<Geometry>,
    /// The whole-run counts per level.
    pub totals: Vec<Total>,
    /// Every hazard.
    pub hazards: Vec<Hazard>,
    /// The hazard bound cut the list short.
    pub truncated: bool,
    /// Every warning.
    pub warnings: Vec<Warning>,
    /// The per-PC table.
    pub pcs: Vec<PcRow>,
    /// The model reached its exit (a `model-run` record).
    pub complete: bool,
    /// vCPUs.
    pub vcpus: u64,
}

impl Observed {
    /// Reads a model log's text (a broken record line is an error naming its line).
    pub fn from_text(text: &str) -> Result<Observed, String> {
        let log = Log::from_bytes("model log", text.as_bytes());
        let recs = extract_strict(&log).map_err(|e| e.to_string())?;
        Ok(Observed::from_records(&recs))
    }

    /// Reads the records of a model log.
    pub fn from_records(recs: &[Record]) -> Observed {
        let mut o = Observed::default();
        for r in recs {
            if let Some(g) = r.view::<record::ModelGeometryView<_>>() {
                let level = g.level().unwrap_or("?").to_string();
                let geo = Geometry {
                    level: level.clone(),
                    size: g.size().unwrap_or(0),
                    line: g.line().unwrap_or(0),
                    sets: g.sets().unwrap_or(0),
                    ways: g.ways().unwrap_or(0),
                    origin: g.origin().unwrap_or("?").to_string(),
                };
                o.vcpus = g.vcpus().unwrap_or(1);
                match o.geometry.iter_mut().find(|x| x.level == level) {
                    Some(x) => *x = geo,
                    None => o.geometry.push(geo),
                }
            } else if let Some(t) = r.view::<record::ModelTotalView<_>>() {
                o.totals.push(Total {
                    level: t.level().unwrap_or("?").to_string(),
                    accesses: t.accesses().unwrap_or(0),
                    misses: t.misses().unwrap_or(0),
                    writebacks: t.writebacks().unwrap_or(0),
                    bypass: t.bypass().unwrap_or(0),
                });
            } else if let Some(h) = r.view::<record::HazardView<_>>() {
                o.hazards.push(Hazard {
                    kind: h.kind().unwrap_or("?").to_string(),
                    pa: h.pa().unwrap_or(0),
                    va: h.va().unwrap_or(0),
                    pc: h.pc().unwrap_or(0),
                    phase: h.phase().unwrap_or("").to_string(),
                    count: h.count().unwrap_or(0),
                    access: h.access().unwrap_or("?").to_string(),
                    cause: h.cause().unwrap_or("?").to_string(),
                    cause_pc: h.cause_pc().unwrap_or(0),
                });
            } else if let Some(t) = r.view::<record::HazardTotalView<_>>() {
                o.truncated |= t.truncated().unwrap_or(false);
            } else if let Some(w) = r.view::<record::ModelWarningView<_>>() {
                o.warnings.push(Warning {
                    what: w.what().unwrap_or("").to_string(),
                    cause: w.cause().map(String::from),
                    count: w.count(),
                    pc: w.pc(),
                });
            } else if let Some(p) = r.view::<record::ModelPcView<_>>() {
                o.pcs.push(PcRow {
                    pc: p.pc().unwrap_or(0),
                    pcs: p.pcs().unwrap_or(1),
                    rest: p.rest().unwrap_or(false),
                    counts: [p.l1d_misses().unwrap_or(0), p.l2_misses().unwrap_or(0), p.writebacks().unwrap_or(0)],
                });
            } else if r.view::<record::ModelRunView<_>>().is_some() {
                o.complete = true;
            }
        }
        o
    }

    /// The hazard records grouped into sites (kind, exposing PC, cause PC, access, cause), in
    /// order of first appearance.
    pub fn sites(&self) -> Vec<Site> {
        let mut v: Vec<Site> = Vec::new();
        for h in &self.hazards {
            let same = |s: &&mut Site| {
                let f = &s.first;
                f.kind == h.kind && f.pc == h.pc && f.cause_pc == h.cause_pc && f.access == h.access && f.cause == h.cause
            };
            match v.iter_mut().find(same) {
                Some(s) => {
                    s.lines += 1;
                    s.va_range = (s.va_range.0.min(h.va), s.va_range.1.max(h.va));
                    s.count += h.count;
                    if !s.phases.contains(&h.phase) {
                        s.phases.push(h.phase.clone());
                    }
                }
                None => v.push(Site { first: h.clone(), lines: 1, va_range: (h.va, h.va), count: h.count, phases: vec![h.phase.clone()] }),
            }
        }
        v
    }

    /// The whole run's count of per-PC column `k` ([`PC_COLUMNS`]) from `model-total`.
    pub fn run_count(&self, k: usize) -> Option<u64> {
        let level = |l: &str| self.totals.iter().find(|t| t.level == l);
        match k {
            0 => level("L1D").map(|t| t.misses),
            1 => level("L2").map(|t| t.misses),
            2 => level("L1D").map(|t| t.writebacks),
            _ => None,
        }
    }

    /// The L1D line size (hazards are per line), 64 when no geometry was recorded.
    pub fn line_size(&self) -> u64 {
        self.geometry.iter().find(|g| g.level == "L1D").map_or(64, |g| g.line)
    }
}

/// The maintenance that would have prevented a hazard of `kind` at `va` (one table, typed by
/// the kind: a kind added to [`HazardKind`] must say its fix here).
pub fn advice(kind: HazardKind, va: u64, access: &str) -> String {
    match kind {
        HazardKind::StaleReadByDevice => format!(
            "DC CVAC (or DC CIVAC) to PoC of {va:#x} after the cached write and before the {} (then DSB), or map it Normal-WB",
            describe_access(access)
        ),
        HazardKind::LostWrite => format!(
            "DC CIVAC of {va:#x} (clean and invalidate) instead of DC IVAC, or DC CVAC it first: the invalidate discarded a dirty line"
        ),
        HazardKind::StaleReadByCpu => format!(
            "DC IVAC (or DC CIVAC) to PoC of {va:#x} after the non-cacheable/device write and before the cached read (then DSB), or read it through the same attribute"
        ),
        HazardKind::StaleInstruction => format!(
            "DC CVAU of {va:#x}, DSB ISH, IC IVAU of {va:#x}, DSB ISH, ISB after writing the code and before executing it (CTR_EL0.IDC/DIC say which steps a core may skip)"
        ),
        HazardKind::MaintenanceGap => format!(
            "extend the by-VA loop to every line of the range around {va:#x}: round the start down and the end up to the line size (CTR_EL0.DminLine), step one line"
        ),
        HazardKind::NonShareableShared => format!(
            "map the line of {va:#x} Inner Shareable (SH = 0b11) on every core that uses it, or keep it to one core and clean and invalidate it to PoC (DC CIVAC, DSB) before another core touches it"
        ),
        HazardKind::SharedLine => format!(
            "nothing stale was read yet, but the line of {va:#x} holds bytes the {} does not see through the cache: keep data and code (or cached and non-cacheable data) in separate lines, or clean the whole line (DC CVAC/CVAU) after each write",
            describe_access(access)
        ),
    }
}

/// A record's `access` in words ([`HazardAccess::describe`]; a name this tool does not know yet,
/// from a newer plugin, with its dashes as spaces).
fn describe_access(access: &str) -> String {
    match HazardAccess::from_name(access) {
        Some(a) => a.describe().into(),
        None => access.replace('-', " "),
    }
}

/// Parses a load offset (`--load-offset`): decimal or `0x` hex, optionally negative.
pub fn parse_offset(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse().ok()?,
        None => return None,
    };
    Some(if neg { -v } else { v })
}

/// How QEMU scheduled the vCPUs of an observed run: it decides whether its counts repeat and
/// whether a callback's vCPU index names the core that ran (docs/cache-model.md, "Which core runs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduling {
    /// Not known (a saved run digested again).
    #[default]
    Unknown,
    /// One host thread runs every vCPU in turn under `-icount`: counts repeat exactly; with several
    /// vCPUs the core comes from the guest (TPIDR_EL1 tag or VMPIDR_EL2), else hazards are withheld.
    RoundRobin,
    /// Multi-threaded TCG (several vCPUs, entered at EL1 where VMPIDR_EL2 does not exist): QEMU's
    /// index names the core, so attribution is right, but the interleaving, and so the counts,
    /// change from run to run.
    Mttcg,
}

impl Scheduling {
    /// The digest's line about it, if any.
    pub fn describe(self) -> Option<&'static str> {
        match self {
            Scheduling::Unknown => None,
            Scheduling::RoundRobin => Some("round-robin TCG under -icount: counts repeat exactly"),
            Scheduling::Mttcg => Some(
                "multi-threaded TCG (several vCPUs at EL1, no VMPIDR_EL2 to name the core under -icount): attribution is right, counts are NOT reproducible run to run; --el 2 gives reproducible counts where the firmware can enter at EL2",
            ),
        }
    }
}

/// How the run ended and where its files are (observe's side).
#[derive(Clone, Debug, Default)]
pub struct ObservedRun {
    /// How QEMU scheduled the vCPUs.
    pub scheduling: Scheduling,
    /// The firmware file.
    pub firmware: String,
    /// The ELF symbols came from.
    pub elf: Option<String>,
    /// QEMU's exit status (`None`: a saved run digested again).
    pub status: Option<i32>,
    /// Stopped at the timeout.
    pub timed_out: bool,
    /// The timeout.
    pub timeout_s: u64,
    /// Wall-clock seconds.
    pub secs: f64,
    /// The saved console.
    pub console: String,
    /// The saved model log.
    pub model: String,
}

fn place(syms: Option<&Symbols>, pc: u64) -> Place {
    syms.map(|s| s.place(pc)).unwrap_or_default()
}

/// `0x… function (file:line)` or `0x…` without symbols.
fn at(syms: Option<&Symbols>, pc: u64) -> String {
    match syms {
        Some(s) => format!("{pc:#x} {}", s.place(pc).describe()),
        None => format!("{pc:#x}"),
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The KCSAN-shaped block of one hazard site: the title (kind, the exposing function / the
/// cause's), the exposing access (address, line size, vCPU count, symbol), the cause, the fix.
pub fn hazard_block(site: &Site, syms: Option<&Symbols>, line: u64) -> String {
    let h = &site.first;
    let fname = |pc: u64| place(syms, pc).function.unwrap_or_else(|| format!("{pc:#x}"));
    let mut s = String::new();
    let title = if h.cause_pc != 0 { format!("{} / {}", fname(h.pc), fname(h.cause_pc)) } else { fname(h.pc) };
    let advisory = HazardKind::from_name(&h.kind).is_some_and(|k| k.severity() == Severity::Advisory);
    let _ = writeln!(s, "{}: cachescope: {} in {title}", if advisory { "NOTE" } else { "BUG" }, h.kind);
    let phases = site.phases.iter().filter(|p| !p.is_empty()).cloned().collect::<Vec<_>>();
    let phase = match phases.len() {
        0 => String::new(),
        1 => format!(", phase {}", phases[0]),
        n => format!(", phases {} and {} more", phases[0], n - 1),
    };
    let what = if site.lines == 1 {
        format!("va {:#x} (pa {:#x}, {line}-byte line)", h.va, h.pa)
    } else {
        format!("va {:#x}..{:#x} ({} {line}-byte lines; first pa {:#x})", site.va_range.0, site.va_range.1 + line, site.lines, h.pa)
    };
    let _ = writeln!(s, "  {} of {what} at pc {}  [{}×{phase}]", h.access, at(syms, h.pc), thousands(site.count));
    let cause = if h.cause_pc != 0 { at(syms, h.cause_pc) } else { "an unknown pc".into() };
    let _ = writeln!(s, "  after {} at {cause}", h.cause);
    match HazardKind::from_name(&h.kind) {
        Some(k) => {
            let _ = writeln!(s, "  fix: {}", advice(k, site.va_range.0, &h.access));
        }
        None => {
            let _ = writeln!(s, "  fix: (kind '{}' is new to this tool: see docs/cache-model.md, \"Sanitizer\")", h.kind);
        }
    }
    s
}

/// Advisory sites the digest shows in full (the rest are counted; all are in the model log).
pub const ADVISORIES_SHOWN: usize = 3;

/// The three per-function tables' keys: L1D misses, L2 misses, write-backs.
pub const PC_COLUMNS: [&str; 3] = ["L1D misses", "L2 misses", "write-backs"];

/// The per-PC rows folded per function (per PC without symbols): (name, counts), the rest row
/// last as `(other PCs)`.
pub fn per_function(rows: &[PcRow], syms: Option<&Symbols>) -> Vec<(String, [u64; 3])> {
    let mut by: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    let mut rest = None;
    for r in rows {
        if r.rest {
            rest = Some(r.counts);
            continue;
        }
        let name = match syms {
            Some(s) => {
                let p = s.place(r.pc);
                match (p.function.clone(), p.file_line()) {
                    (Some(f), Some(fl)) => {
                        let file = fl.rsplit_once(':').map_or(fl.clone(), |(f, _)| f.to_string());
                        format!("{f} ({file})")
                    }
                    (Some(f), None) => f,
                    (None, _) => format!("{:#x}", r.pc),
                }
            }
            None => format!("{:#x}", r.pc),
        };
        let e = by.entry(name).or_default();
        for (sum, n) in e.iter_mut().zip(r.counts) {
            *sum += n;
        }
    }
    let mut v: Vec<_> = by.into_iter().collect();
    if let Some(c) = rest {
        v.push(("(other PCs, past the table's bound)".into(), c));
    }
    v
}

/// Functions shown per table.
pub const TOP: usize = 10;

/// The whole digest.
pub fn digest(o: &Observed, syms: Option<&Symbols>, run: &ObservedRun) -> String {
    let mut s = String::new();
    let end = if run.timed_out {
        format!("TIMED OUT after {} s (stopped)", run.timeout_s)
    } else if let Some(st) = run.status {
        format!("QEMU exited with status {st} after {:.1} s", run.secs)
    } else {
        "a saved run".to_string()
    };
    let _ = writeln!(s, "# observe: {}: {end}", run.firmware);
    let syms_line = match (syms, &run.elf) {
        (Some(sy), Some(e)) if sy.is_empty() => format!("{e} has no symbols and no DWARF (stripped): raw PCs"),
        (Some(sy), Some(e)) if sy.has_lines() => format!("symbols and lines from {e}"),
        (Some(_), Some(e)) => format!("symbols from {e} (no DWARF: no file:line; build with -g)"),
        _ => "no ELF: raw PCs (give --elf)".into(),
    };
    let _ = writeln!(s, "# {syms_line}");
    if let Some(line) = run.scheduling.describe() {
        let _ = writeln!(s, "# scheduling: {line}");
    }
    if !o.complete {
        let _ = writeln!(s, "# the model log has no end-of-run records (QEMU was stopped): counts and the per-PC table are missing");
    }
    // Geometry.
    let geo: Vec<String> = o
        .geometry
        .iter()
        .map(|g| format!("{} {} KiB {}-way {} sets {} B lines ({})", g.level, g.size / 1024, g.ways, g.sets, g.line, g.origin))
        .collect();
    let _ = writeln!(s, "geometry: {}", if geo.is_empty() { "none recorded".into() } else { geo.join("; ") });
    // Totals.
    if !o.totals.is_empty() {
        let _ = writeln!(s, "totals ({} vCPU{}):", o.vcpus.max(1), if o.vcpus > 1 { "s" } else { "" });
        for t in &o.totals {
            let rate = if t.accesses > 0 { format!("{:.2}%", 100.0 * t.misses as f64 / t.accesses as f64) } else { "-".into() };
            let _ = writeln!(
                s,
                "  {:<4} {:>14} accesses {:>12} misses ({rate:>6}) {:>12} write-backs {:>12} bypassed",
                t.level,
                thousands(t.accesses),
                thousands(t.misses),
                thousands(t.writebacks),
                thousands(t.bypass)
            );
        }
    }
    // Hazards (errors), then advisories (fragile, not wrong: listed apart, the first few shown).
    let line = o.line_size();
    let is_advisory = |kind: &str| HazardKind::from_name(kind).is_some_and(|k| k.severity() == Severity::Advisory);
    let (advisories, errors): (Vec<Site>, Vec<Site>) = o.sites().into_iter().partition(|site| is_advisory(&site.first.kind));
    let summary = |sites: &[Site]| {
        let lines: u64 = sites.iter().map(|x| x.lines).sum();
        let occurrences: u64 = sites.iter().map(|x| x.count).sum();
        format!(
            "{} site{} ({} line{}, {} occurrence{})",
            sites.len(),
            if sites.len() == 1 { "" } else { "s" },
            lines,
            if lines == 1 { "" } else { "s" },
            thousands(occurrences),
            if occurrences == 1 { "" } else { "s" }
        )
    };
    let _ = writeln!(
        s,
        "hazards: {}{}",
        if errors.is_empty() { "none".to_string() } else { summary(&errors) },
        if o.truncated { " — TRUNCATED: more than the plugin records; the rest were only counted" } else { "" }
    );
    for site in &errors {
        s += &hazard_block(site, syms, line);
    }
    if !advisories.is_empty() {
        let kinds: BTreeSet<&str> = advisories.iter().map(|x| x.first.kind.as_str()).collect();
        let _ = writeln!(
            s,
            "advisories ({}: fragile, not wrong; not counted as hazards): {}",
            kinds.into_iter().collect::<Vec<_>>().join(", "),
            summary(&advisories)
        );
        for site in advisories.iter().take(ADVISORIES_SHOWN) {
            s += &hazard_block(site, syms, line);
        }
        if advisories.len() > ADVISORIES_SHOWN {
            let _ = writeln!(
                s,
                "  … {} more advisory sites: every one is in the model records ({})",
                advisories.len() - ADVISORIES_SHOWN,
                run.model
            );
        }
    }
    // Top functions.
    let funcs = per_function(&o.pcs, syms);
    if !funcs.is_empty() {
        let what = if syms.is_some() { "functions" } else { "PCs" };
        for (k, col) in PC_COLUMNS.iter().enumerate() {
            let total: u64 = funcs.iter().map(|f| f.1[k]).sum();
            if total == 0 {
                let _ = writeln!(s, "top {what} by {col}: none");
                continue;
            }
            let mut v: Vec<&(String, [u64; 3])> = funcs.iter().filter(|f| f.1[k] > 0).collect();
            v.sort_by(|a, b| b.1[k].cmp(&a.1[k]).then(a.0.cmp(&b.0)));
            // The run's own count, of which the loads and stores caused `total` (instruction
            // fetches and maintenance cause the rest).
            let run = o.run_count(k).filter(|&r| r != total).map(|r| format!(" of the run's {}", thousands(r))).unwrap_or_default();
            let _ = writeln!(s, "top {what} by {col} ({} by loads/stores{run}):", thousands(total));
            for f in v.iter().take(TOP) {
                let _ = writeln!(s, "  {:>12} {:>5.1}%  {}", thousands(f.1[k]), 100.0 * f.1[k] as f64 / total as f64, f.0);
            }
        }
    }
    // Warnings.
    let _ = writeln!(s, "warnings: {}", if o.warnings.is_empty() { "none".to_string() } else { o.warnings.len().to_string() });
    for w in &o.warnings {
        let cause = w.cause.as_deref().map(|c| format!("[{c}] ")).unwrap_or_default();
        let count = w.count.map(|c| format!(" (×{})", thousands(c))).unwrap_or_default();
        let _ = writeln!(s, "  {cause}{}{count}", w.what);
        if let Some(pc) = w.pc {
            let _ = writeln!(s, "    at pc {}", at(syms, pc));
        }
    }
    let _ = writeln!(s, "saved: console {}, model records {}", run.console, run.model);
    s
}

/// The expectation check's lines for the digest: `expect FILE: met`, or each problem.
pub fn expectation_lines(file: &Path, problems: &[String]) -> String {
    if problems.is_empty() {
        return format!("expect {}: met\n", file.display());
    }
    let mut s = format!("expect {}: NOT MET ({} problem{})\n", file.display(), problems.len(), if problems.len() == 1 { "" } else { "s" });
    for p in problems {
        let _ = writeln!(s, "  {p}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const LOG: &str = concat!(
        "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"cpu\",\"vcpus\":1,\"hit_cycles\":4,\"hit_ns\":2.00,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-total\",\"level\":\"L1D\",\"accesses\":1000,\"hits\":900,\"misses\":100,\"writebacks\":7,\"maint\":0,\"bypass\":3,\"prefetches\":0,\"prefetch_hits\":0,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"hazard\",\"kind\":\"stale-read-by-device\",\"pa\":\"0x40081000\",\"va\":\"0x40081000\",\"pc\":\"0x40080124\",\"phase\":\"\",\"phase_id\":0,\"count\":3,\"access\":\"nc-read\",\"cause\":\"write\",\"cause_pc\":\"0x40080110\",\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-warning\",\"what\":\"12 by-VA operations had no translation\",\"cause\":\"untranslated-va\",\"count\":12,\"pc\":\"0x40080130\",\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-pc\",\"pc\":\"0x40080124\",\"pcs\":1,\"rest\":false,\"l1d_misses\":60,\"l2_misses\":6,\"writebacks\":0,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-pc\",\"pc\":\"0x40080128\",\"pcs\":1,\"rest\":false,\"l1d_misses\":30,\"l2_misses\":3,\"writebacks\":5,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-pc\",\"pc\":\"0x0\",\"pcs\":9,\"rest\":true,\"l1d_misses\":10,\"l2_misses\":1,\"writebacks\":2,\"source\":\"model\"}\n",
        "# cs: {\"record\":\"model-run\",\"protocol\":5,\"markers\":0,\"phases\":0,\"va_learned\":0,\"va_window\":0,\"va_identity\":0,\"setway_ops\":0,\"warnings\":1,\"fast\":true,\"source\":\"model\"}\n",
    );

    #[test]
    fn a_model_log_is_read_through_the_views() {
        let o = Observed::from_text(LOG).unwrap();
        assert_eq!(o.geometry[0].origin, "cpu");
        assert_eq!((o.totals[0].misses, o.hazards.len(), o.hazards[0].cause_pc), (100, 1, 0x40080110));
        assert_eq!(
            o.warnings[0],
            Warning {
                what: "12 by-VA operations had no translation".into(),
                cause: Some("untranslated-va".into()),
                count: Some(12),
                pc: Some(0x4008_0130)
            }
        );
        assert_eq!(o.pcs.len(), 3);
        assert!(o.pcs[2].rest && o.complete);
        assert!(Observed::from_text("# cs: {\"record\":\n").unwrap_err().contains("model log:1"));
    }

    #[test]
    fn the_digest_without_symbols() {
        let o = Observed::from_text(LOG).unwrap();
        let run = ObservedRun {
            firmware: "fw.bin".into(),
            status: Some(0),
            secs: 1.25,
            console: "c".into(),
            model: "m".into(),
            ..Default::default()
        };
        let d = digest(&o, None, &run);
        let want = [
            "# observe: fw.bin: QEMU exited with status 0 after 1.2 s",
            "# no ELF: raw PCs (give --elf)",
            "geometry: L1D 32 KiB 4-way 128 sets 64 B lines (cpu)",
            "totals (1 vCPU):",
            "  L1D           1,000 accesses          100 misses (10.00%)            7 write-backs            3 bypassed",
            "hazards: 1 site (1 line, 3 occurrences)",
            "BUG: cachescope: stale-read-by-device in 0x40080124 / 0x40080110",
            "  nc-read of va 0x40081000 (pa 0x40081000, 64-byte line) at pc 0x40080124  [3×]",
            "  after write at 0x40080110",
            "  fix: DC CVAC (or DC CIVAC) to PoC of 0x40081000 after the cached write and before the non-cacheable read (then DSB), or map it Normal-WB",
            "top PCs by L1D misses (100 by loads/stores):",
            "            60  60.0%  0x40080124",
            "            30  30.0%  0x40080128",
            "            10  10.0%  (other PCs, past the table's bound)",
        ];
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[..want.len()], want, "{d}");
        assert!(d.contains("top PCs by write-backs (7 by loads/stores):\n             5  71.4%  0x40080128\n"), "{d}");
        // No L2 total in the log: nothing to compare with.
        assert!(d.contains("top PCs by L2 misses (10 by loads/stores):\n"), "{d}");
        assert!(d.contains("warnings: 1\n  [untranslated-va] 12 by-VA operations had no translation (×12)\n    at pc 0x40080130\n"), "{d}");
        assert!(d.ends_with("saved: console c, model records m\n"));
        let t = digest(&o, None, &ObservedRun { timed_out: true, timeout_s: 5, ..run.clone() });
        assert!(t.starts_with("# observe: fw.bin: TIMED OUT after 5 s (stopped)\n"), "{t}");
        let again = digest(&o, None, &ObservedRun { status: None, ..run });
        assert!(again.starts_with("# observe: fw.bin: a saved run\n"), "{again}");
    }

    #[test]
    fn a_loop_over_a_buffer_is_one_site() {
        let mut o = Observed::from_text(LOG).unwrap();
        let mut h = o.hazards[0].clone();
        for k in 1..4 {
            h.va += 64;
            h.pa += 64;
            h.phase = format!("p{}", k % 2);
            o.hazards.push(h.clone());
        }
        let sites = o.sites();
        assert_eq!(sites.len(), 1);
        assert_eq!((sites[0].lines, sites[0].count, sites[0].va_range), (4, 12, (0x4008_1000, 0x4008_10c0)));
        let b = hazard_block(&sites[0], None, 64);
        assert!(
            b.contains(
                "nc-read of va 0x40081000..0x40081100 (4 64-byte lines; first pa 0x40081000) at pc 0x40080124  [12×, phases p1 and 1 more]"
            ),
            "{b}"
        );
        let d = digest(&o, None, &ObservedRun::default());
        assert!(d.contains("hazards: 1 site (4 lines, 12 occurrences)\n"), "{d}");
    }

    #[inline(never)]
    fn exposing() -> u64 {
        std::hint::black_box(3)
    }

    #[test]
    fn the_digest_with_symbols_names_functions_and_folds_pcs_per_function() {
        let s = crate::symbols::this_binary();
        let pc = exposing as *const () as u64;
        let o = Observed {
            hazards: vec![Hazard {
                kind: "stale-instruction".into(),
                pa: 0x1000,
                va: 0x1000,
                pc,
                phase: String::new(),
                count: 1,
                access: "fetch".into(),
                cause: "write".into(),
                cause_pc: 0,
            }],
            // Two PCs of one function fold into one row; a third PC has no symbol.
            pcs: vec![
                PcRow { pc, pcs: 1, rest: false, counts: [5, 1, 0] },
                PcRow { pc: pc + 4, pcs: 1, rest: false, counts: [2, 0, 1] },
                PcRow { pc: 8, pcs: 1, rest: false, counts: [1, 0, 0] },
            ],
            // A warning about an instruction names its function too.
            warnings: vec![Warning { what: "w".into(), cause: None, count: None, pc: Some(pc + 4) }],
            complete: true,
            ..Default::default()
        };
        let d = digest(&o, Some(&s), &ObservedRun { elf: Some("t".into()), ..Default::default() });
        let name = s.place(pc).function.unwrap();
        assert!(d.contains(&format!("warnings: 1\n  w\n    at pc {:#x} {name}", pc + 4)), "{d}");
        assert!(name.ends_with("firmware::tests::exposing"), "{name}");
        assert!(d.contains("# symbols and lines from t\n"), "{d}");
        assert!(d.contains(&format!("BUG: cachescope: stale-instruction in {name}\n")), "{d}");
        assert!(d.contains("after write at an unknown pc\n  fix: DC CVAU of 0x1000"), "{d}");
        let row = format!("             7  87.5%  {name} (firmware.rs)\n             1  12.5%  0x8\n");
        assert!(d.contains(&format!("top functions by L1D misses (8 by loads/stores):\n{row}")), "{d}");
        let mut o = o;
        o.totals.push(Total { level: "L1D".into(), misses: 10, ..Default::default() });
        let d = digest(&o, Some(&s), &ObservedRun::default());
        assert!(d.contains("top functions by L1D misses (8 by loads/stores of the run's 10):\n"), "{d}");
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("0"), Some(0));
        assert_eq!(parse_offset("4096"), Some(4096));
        assert_eq!(parse_offset("0x80000"), Some(0x80000));
        assert_eq!(parse_offset("-0x10"), Some(-16));
        assert_eq!(parse_offset(""), None);
        assert_eq!(parse_offset("0x"), None);
        assert_eq!(parse_offset("ten"), None);
    }

    #[test]
    fn every_kind_has_advice_naming_the_address() {
        for k in HazardKind::ALL {
            let a = advice(k, 0x1234_5640, "read");
            assert!(a.contains("0x12345640"), "{k:?}: {a}");
        }
        assert!(advice(HazardKind::StaleInstruction, 0x80, "fetch").starts_with("DC CVAU of 0x80, DSB ISH, IC IVAU"));
        assert!(advice(HazardKind::StaleReadByDevice, 0x80, "device-read").contains("before the Device read"));
    }

    #[test]
    fn expectation_lines_say_met_or_each_problem() {
        assert_eq!(expectation_lines(Path::new("e.toml"), &[]), "expect e.toml: met\n");
        assert_eq!(expectation_lines(Path::new("e.toml"), &["a".into()]), "expect e.toml: NOT MET (1 problem)\n  a\n");
    }
}
