//! `summary`: the digest of a run, at most [`MAX_LINES`] lines, printed after a QEMU run by the
//! runner and after a serial capture.
//!
//! It holds the core and caches (CCSIDR beside the published silicon), the maintenance
//! performed, the attribute-matrix verdict, each benchmark's headline figures with their source,
//! the cache model's findings ([`crate::model_data`]: knees, modelled latency, hand-off per MiB,
//! bypass, KV tokens, prefetch effect, inferred geometry, hazards), the pass/fail/skip totals and
//! the command that renders the report. A run cut short (no `end` record) is digested as far as
//! it got and called incomplete. Numbers are printed to 3 significant digits: no timer here
//! resolves more.

use crate::bench;
use crate::contract;
use crate::digest_format::{n3, short_variant, u, unit_label};
use crate::input::Log;
use crate::ktap;
use crate::metrics::{human_bytes as hb, sig, Metric};
use crate::model_data::{self, ModelData};
use crate::records::{self, Record};
use cachescope_arch::bench::{SmpBench, SmpVariant};
use cachescope_arch::cache::ops::MaintOp;
use cachescope_arch::cache::silicon;
use cachescope_arch::cpuid::Midr;
use cachescope_arch::record;
use serde_json::Value;

/// The most lines a digest has.
pub const MAX_LINES: usize = 25;

/// How the digest is made.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The run used `-icount` (the runner knows; the log may not say): timer figures are
    /// instruction counts.
    pub icount: bool,
    /// The path to print for the model log in the report command (None: no model log).
    pub model_path: Option<String>,
}

pub(crate) fn s<'a>(r: &'a Record, k: &str) -> Option<&'a str> {
    r.obj.get(k).and_then(Value::as_str)
}

/// "name   text", the label padded to a column.
pub(crate) fn line(label: &str, text: impl AsRef<str>) -> String {
    if label.chars().count() >= 9 {
        format!("{label} {}", text.as_ref())
    } else {
        format!("{label:<9}{}", text.as_ref())
    }
}

/// Whether the run is under `-icount`: the option, or as its records show it
/// ([`records::run_used_icount`], the report's way too).
fn is_icount(recs: &[Record], opts: &Options) -> bool {
    opts.icount || records::run_used_icount(recs)
}

/// What a timing source means in this run.
fn source_label(source: &str, emulated: bool, icount: bool) -> String {
    match (source, emulated, icount) {
        ("model", ..) => "model".into(),
        (_, true, true) => "-icount: instructions, not time".into(),
        ("cntvct", true, false) => "emulator timer: measures QEMU".into(),
        ("pmccntr", true, false) => "emulator cycle counter: measures QEMU".into(),
        ("cntvct", false, _) => "timer CNTVCT".into(),
        ("pmccntr", false, _) => "cycle counter PMCCNTR".into(),
        (s, ..) => s.into(),
    }
}

/// Longest digest line; longer ones are cut with `…` (except the results and the render command).
pub const MAX_WIDTH: usize = 160;

/// `l` as lines of at most [`MAX_WIDTH`] characters, broken after `, ` (continuations indented
/// under the text): for the lines that are never cut (the hazard breakdown).
fn wrap(l: String) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, piece) in l.split_inclusive(", ").enumerate() {
        if i > 0 && cur.chars().count() + piece.chars().count() > MAX_WIDTH {
            out.push(cur.trim_end().to_string());
            cur = " ".repeat(9);
        }
        cur.push_str(piece);
    }
    out.push(cur);
    out
}

/// Every failed case (`suite.case`, or the suite for a failure outside its cases) with its first
/// diagnostic: the `#` lines between the previous result at its depth and its `not ok` (records,
/// per-point rows and progress lines are not diagnostics), else the result's own reason.
pub fn failed_cases(run: &Log) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    // Per depth: the suite's name and the first diagnostic since its last result.
    let mut suites: Vec<String> = Vec::new();
    let mut first: Vec<Option<String>> = vec![None];
    let mut failed_below = vec![false];
    for l in &run.lines {
        let depth = l.text.chars().take_while(|&c| c == ' ').count() / 2;
        let t = l.text.trim_start();
        while first.len() <= depth {
            first.push(None);
            failed_below.push(false);
        }
        if let Some(name) = t.strip_prefix("# Subtest: ") {
            suites.truncate(depth);
            suites.push(name.trim().to_string());
            first[depth] = None;
            continue;
        }
        if let Some(Ok(r)) = ktap::parse_result(t) {
            if r.is_failure() {
                let mut name: Vec<&str> = suites.iter().take(depth).map(String::as_str).collect();
                name.push(r.description);
                // A suite whose failed cases are listed is not listed again.
                if !failed_below.get(depth + 1).copied().unwrap_or(false) {
                    let why = first[depth].take().or_else(|| (!r.reason.is_empty()).then(|| r.reason.to_string()));
                    out.push((name.join("."), why));
                }
                if depth > 0 {
                    failed_below[depth] = true;
                }
            }
            first[depth] = None;
            if let Some(b) = failed_below.get_mut(depth + 1) {
                *b = false;
            }
            continue;
        }
        let is_diag = t.starts_with('#')
            && !["# cs:", "# progress:", "# point:", "# Subtest:"].iter().any(|p| t.starts_with(p))
            && !t.trim_start_matches('#').trim().is_empty();
        if is_diag && first[depth].is_none() {
            first[depth] = Some(t.trim_start_matches('#').trim().to_string());
        }
    }
    out
}

fn clip(mut l: String) -> String {
    if l.chars().count() > MAX_WIDTH {
        l = l.chars().take(MAX_WIDTH - 1).collect();
        l.push('…');
    }
    l
}

/// The digest of `run` (and the records of `model`, if given), one string per line.
pub fn digest(run: &Log, model: Option<&Log>, opts: &Options) -> Vec<String> {
    let (recs, _) = records::extract(run);
    // A model log that fails validation is flagged and its hazards are not judged (records.rs).
    let mcheck = model.map(|m| (m, contract::check_model_log(m)));
    let mrecs = mcheck.as_ref().map(|(_, c)| c.usable_records()).unwrap_or_default();
    let mut all = recs.clone();
    all.extend(mrecs.iter().cloned());
    let boot = recs.iter().find_map(|r| r.view::<record::BootView<_>>());
    let end = recs.iter().rev().find(|r| r.kind() == "end");
    let emulated = boot.and_then(|b| b.emulated()).unwrap_or(false);
    let icount = is_icount(&all, opts);
    let mut out: Vec<String> = Vec::new();
    let mut tail: Vec<String> = Vec::new();

    let status = match end {
        Some(_) => "complete".to_string(),
        None => {
            let last_suite = run.lines.iter().rev().find_map(|l| l.text.trim_start().strip_prefix("# Subtest: ").map(str::to_string));
            format!(
                "INCOMPLETE: no end record, the run died or was cut short{}; what it printed is digested below",
                last_suite.map(|s| format!(" (last suite started: {s})")).unwrap_or_default()
            )
        }
    };
    out.push(format!("== cachescope digest: {} ({status}) ==", run.name));

    // Core and caches.
    match boot {
        Some(b) => out.push(line(
            "core",
            format!(
                "{} (MIDR {}) on {}, entered at EL{}{}",
                b.cpu().unwrap_or("?"),
                b.midr().map_or("?".into(), |m| format!("{m:#x}")),
                b.board().unwrap_or("?"),
                b.el().map_or("?".into(), |e| e.to_string()),
                match (emulated, icount) {
                    (true, true) => "; EMULATED (QEMU, -icount): timings are instruction counts",
                    (true, false) => "; EMULATED (QEMU): timings measure the emulator",
                    _ => "",
                }
            ),
        )),
        None => out.push(line("core", "no boot record")),
    }
    let midr = boot.and_then(|b| b.midr()).map(|raw| Midr { raw });
    let caches: Vec<record::CacheView<_>> = recs.iter().filter_map(|r| r.view()).collect();
    if caches.is_empty() {
        out.push(line("caches", "no cache records (cache suite not run)"));
    }
    // One line: each cache as CCSIDR describes it, against the published silicon.
    let mut parts: Vec<String> = Vec::new();
    let mut sources: Vec<&str> = Vec::new();
    for c in &caches {
        let name = model_data::ccsidr_level_name(c).unwrap_or_else(|| "L?".into());
        let (size, ways, ln) = (c.size().unwrap_or(0), c.ways().unwrap_or(0), c.line().unwrap_or(0));
        let kind = match c.r#type().and_then(|t| t.chars().next()) {
            Some('d') => cachescope_arch::cache::Kind::Data,
            Some('i') => cachescope_arch::cache::Kind::Instruction,
            _ => cachescope_arch::cache::Kind::Unified,
        };
        let sil = midr.and_then(|m| silicon::lookup(m, c.level().unwrap_or(0) as u8, kind));
        let verdict = match sil {
            None => "no silicon figures".to_string(),
            Some(p) => {
                if !sources.contains(&p.source) {
                    sources.push(p.source);
                }
                let agrees = p.ways as u64 == ways && p.line as u64 == ln && p.sizes_kib.iter().any(|k| *k as u64 * 1024 == size);
                let sizes = p.sizes_kib.iter().map(|k| hb(*k as f64 * 1024.0)).collect::<Vec<_>>().join("/");
                if agrees {
                    "agrees".to_string()
                } else {
                    format!("DIFFERS (silicon {sizes} {}-way {} B)", p.ways, p.line)
                }
            }
        };
        parts.push(format!("{name} {} {ways}-way {verdict}", hb(size as f64)));
    }
    if !parts.is_empty() {
        let src = if sources.is_empty() { String::new() } else { format!(" [{}]", sources.join(", ")) };
        out.push(line("caches", format!("(CCSIDR vs silicon) {}{src}", parts.join("; "))));
    }

    // Maintenance.
    let walks: Vec<record::SetwayView<_>> = recs.iter().filter_map(|r| r.view()).collect();
    let mut maint = if walks.is_empty() {
        "no set/way records".to_string()
    } else {
        let mut by_op: Vec<(String, u64)> = Vec::new();
        for w in &walks {
            let op = w.op().unwrap_or("?").to_string();
            let n = w.ops().unwrap_or(0);
            match by_op.iter_mut().find(|(o, _)| *o == op) {
                Some((_, t)) => *t += n,
                None => by_op.push((op, n)),
            }
        }
        let refused = walks.iter().filter(|w| w.error().is_some()).count();
        format!(
            "{} set/way walks, {} DC ops ({}){}",
            walks.len(),
            by_op.iter().map(|(_, n)| n).sum::<u64>(),
            by_op.iter().map(|(o, n)| format!("{o} {n}")).collect::<Vec<_>>().join(", "),
            if refused > 0 { format!(", {refused} refused") } else { String::new() }
        )
    };
    if let Some(t) = recs.iter().find_map(|r| r.view::<record::MaintTotalView<_>>()) {
        // Grouped: set/way, DC by VA, DC ZVA, IC, TLBI (each field is one instruction's count).
        let ops = t.ops();
        let sum = |f: &dyn Fn(&str) -> bool| MaintOp::ALL.iter().filter(|op| f(op.name())).filter_map(|op| ops[op.index()]).sum::<u64>();
        let groups = [
            ("set/way", sum(&|k| k.starts_with("dc_") && k.ends_with("sw"))),
            ("DC by VA", sum(&|k| k.starts_with("dc_") && k.contains("va"))),
            ("DC ZVA", sum(&|k| k == "dc_zva")),
            ("IC", sum(&|k| k.starts_with("ic_"))),
            ("TLBI", sum(&|k| k.starts_with("tlbi_"))),
        ];
        maint += &format!("; whole run: {}", groups.iter().map(|(n, v)| format!("{n} {}", n3(*v as f64))).collect::<Vec<_>>().join(", "));
    }
    out.push(line("maint", maint));

    // Attribute matrix.
    let attrs: Vec<record::AttrView<_>> = recs.iter().filter_map(|r| r.view()).collect();
    let mmu = suite_verdict(run, "mmu");
    if attrs.is_empty() && mmu.is_none() {
        out.push(line("attrs", "no attribute records (mmu suite not run)"));
    } else {
        let ok = attrs.iter().filter(|a| a.par_attr().is_some() && a.par_attr() == a.mair()).count();
        let bad: Vec<&str> = attrs.iter().filter(|a| a.par_attr().is_none() || a.par_attr() != a.mair()).filter_map(|a| a.name()).collect();
        out.push(line(
            "attrs",
            format!(
                "{ok}/{} alias windows verified by AT (PAR_EL1.ATTR = MAIR byte){}; mmu suite: {}",
                attrs.len(),
                if bad.is_empty() { String::new() } else { format!(", MISMATCH: {}", bad.join(", ")) },
                mmu.unwrap_or_else(|| "no result".into())
            ),
        ));
    }

    // Benchmarks (kernel timing).
    let (metrics, _) = Metric::collect(&recs);
    // Some sweeps are read otherwise (`infer`'s as the `geometry` line), not as a benchmark.
    let timed: Vec<&Metric> =
        metrics.iter().filter(|m| m.key.source != "model" && crate::bench::view(&m.key.bench).is_none_or(|v| v.timed())).collect();
    if timed.is_empty() {
        out.push(line("bench", "no benchmark metrics"));
    }
    let mut benches: Vec<&str> = Vec::new();
    for m in &timed {
        if !benches.contains(&m.key.bench.as_str()) {
            benches.push(&m.key.bench);
        }
    }
    // Under the model the headline figures are the model's (below): the emulator's timings of the
    // same phases, which hold no cache, shrink to one line (the report plots them).
    let observed = !mrecs.is_empty();
    if emulated && observed && !benches.is_empty() {
        out.push(line(
            "bench",
            format!(
                "{} benchmark{}, {} measurements: emulator timings ({}), not cache behaviour; the model's figures follow",
                benches.len(),
                if benches.len() == 1 { "" } else { "s" },
                timed.len(),
                if icount { "instruction counts under -icount" } else { "host-dependent" }
            ),
        ));
    } else {
        for b in benches {
            let ms: Vec<&Metric> = timed.iter().copied().filter(|m| m.key.bench == b).collect();
            out.push(line(b, bench_headline(b, &ms, icount)));
        }
    }
    if !emulated {
        let knees: Vec<String> =
            recs.iter().filter(|r| r.kind() == "knee").filter_map(|r| u(r, "capacity")).map(|c| hb(c as f64)).collect();
        if !knees.is_empty() {
            out.push(line("knees", format!("from the timer: {}", knees.join(", "))));
        }
    }

    // The model.
    let md =
        ModelData::from_records(&mrecs.iter().chain(recs.iter().filter(|r| s(r, "source") == Some("model"))).cloned().collect::<Vec<_>>());
    let loaded = boot.and_then(|b| b.model()).filter(|m| *m != "off");
    if md.is_empty() && loaded.is_some() {
        out.push(line(
            "model",
            format!("loaded (profile {}) but its records were not given: add --model MODEL_LOG", loaded.unwrap_or("?")),
        ));
    } else if md.is_empty() {
        out.push(line(
            "model",
            "not observed (QEMU_CACHE_MODEL=off): knees, modelled latency, hand-off, bypass, KV, prefetch and geometry need the cache model",
        ));
        // The timer's core-to-core matrix, without the model's.
        out.extend(crate::core_to_core::Matrix::collect(&metrics, &md).map(|m| line("core-to-core", m.digest())));
    } else {
        // The sanitizer's verdict and the coherence line are never dropped for room.
        let mut lines = model_lines(&recs, &md);
        let keep: Vec<String> = lines.iter().filter(|l| l.starts_with("hazards")).cloned().collect();
        lines.retain(|l| !l.starts_with("hazards"));
        out.extend(lines);
        tail.extend(coherence_line(&md).map(clip));
        tail.extend(crate::core_to_core::Matrix::collect(&metrics, &md).map(|m| clip(line("core-to-core", m.digest()))));
        // The hazard breakdown whole: wrapped, never cut.
        tail.extend(keep.into_iter().flat_map(wrap));
    }

    tail.extend(mcheck.and_then(|(m, c)| c.flag(&m.name)).map(|f| clip(line("model-log", f))));
    // Totals and how to go on.
    let k = ktap::validate(run, ktap::Options::default());
    tail.push(line(
        "results",
        match end {
            Some(e) => format!(
                "{} passed, {} failed, {} skipped",
                u(e, "passed").unwrap_or(0),
                u(e, "failed").unwrap_or(0),
                u(e, "skipped").unwrap_or(0)
            ),
            None => format!(
                "INCOMPLETE run: {} passed, {} failed, {} skipped before it stopped",
                k.leaves.passed, k.leaves.failed, k.leaves.skipped
            ),
        },
    ));
    // Every failed case, with its first diagnostic (one line each while there is room; the
    // rest by name).
    let failed = failed_cases(run);
    let room_for_cases = MAX_LINES.saturating_sub(tail.len() + 1 + 8);
    for (i, (name, why)) in failed.iter().enumerate() {
        if failed.len() > room_for_cases && i + 1 >= room_for_cases {
            let rest: Vec<&str> = failed[i..].iter().map(|(n, _)| n.as_str()).collect();
            tail.extend(wrap(line("failed", format!("and {}: {}", rest.len(), rest.join(", ")))));
            break;
        }
        tail.push(clip(line("failed", format!("{name}{}", why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()))));
    }
    let stem = run.name.strip_suffix(".log").unwrap_or(&run.name);
    tail.push(line(
        "report",
        format!(
            "scripts/report report {}{}{} -o {stem}.html",
            run.name,
            opts.model_path.as_ref().map(|m| format!(" --model {m}")).unwrap_or_default(),
            if opts.icount { " --icount" } else { "" },
        ),
    ));
    // Keep the head within the limit, the tail always.
    let room = MAX_LINES.saturating_sub(tail.len()).max(2);
    if out.len() > room {
        let dropped = out.len() - (room - 1);
        out.truncate(room - 1);
        out.push(format!("… {dropped} more lines: scripts/report report gives everything"));
    }
    // The tail (results, the render command) is never cut: a clipped command could not be run.
    let mut lines: Vec<String> = out.into_iter().map(clip).collect();
    lines.extend(tail);
    lines
}

/// A suite's verdict from its top-level result and its `# NAME: pass:P fail:F skip:S` line.
fn suite_verdict(run: &Log, suite: &str) -> Option<String> {
    let counts = run.lines.iter().find_map(|l| {
        let t = l.text.trim_start().strip_prefix("# ")?.strip_prefix(suite)?.strip_prefix(": pass:")?;
        Some(t.to_string())
    });
    let result = run.lines.iter().filter(|l| !l.text.starts_with(' ')).find_map(|l| {
        ktap::parse_result(&l.text).and_then(|r| r.ok()).filter(|r| r.description == suite).map(|r| {
            if r.is_failure() {
                "NOT OK"
            } else {
                "ok"
            }
        })
    });
    match (result, counts) {
        (None, None) => None,
        (r, c) => Some(format!("{}{}", r.unwrap_or("no result (cut short)"), c.map(|c| format!(" (pass:{c})")).unwrap_or_default())),
    }
}

fn bench_headline(bench: &str, ms: &[&Metric], icount: bool) -> String {
    let emulated = ms.iter().all(|m| m.emulated == Some(true));
    let src = source_label(&ms[0].key.source, emulated, icount);
    let unit = unit_label(&ms[0].key.unit, icount);
    let headline = crate::bench::view(bench).and_then(|v| v.headline(ms, icount));
    let body = match headline {
        Some(body) => body,
        None => {
            // One figure per variant: the median of its normal-wb (else first) measurement at
            // the largest size.
            let mut variants: Vec<String> = Vec::new();
            for m in ms {
                let v = m.key.variant.clone().unwrap_or_else(|| "-".into());
                if !variants.contains(&v) {
                    variants.push(v);
                }
            }
            let more = variants.len().saturating_sub(5);
            let parts: Vec<String> = variants
                .iter()
                .take(5)
                .filter_map(|v| {
                    let g: Vec<&Metric> = ms.iter().copied().filter(|m| m.key.variant.as_deref() == Some(v.as_str())).collect();
                    let m = g.iter().find(|m| m.key.attr.as_deref() == Some("normal-wb")).or(g.first())?;
                    Some(format!("{} {}", short_variant(v), n3(m.median?)))
                })
                .collect();
            let size = ms.iter().filter_map(|m| m.key.bytes).max().map(|b| format!(" ({})", hb(b as f64))).unwrap_or_default();
            format!("{unit}{size}, normal-wb: {}{}", parts.join(", "), if more > 0 { format!(" +{more} more") } else { String::new() })
        }
    };
    format!("[{src}] {body}")
}

/// The model's lines of the digest.
/// The coherent model's transfers per multicore benchmark (buffer lines, summed over the vCPUs
/// and averaged over a benchmark's phases per attribute): one line, when the run had more than
/// one vCPU.
fn coherence_line(d: &ModelData) -> Option<String> {
    let mut per: Vec<(String, u64, u64, u64)> = Vec::new(); // (bench attr, transfers, invalidations, phases)
    for p in &d.phases {
        let (Some(c), name) = (p.coherence, &p.parsed) else { continue };
        // The multicore benchmarks (bcast's effect is remote maintenance, not line transfers).
        let Some(bench) = SmpBench::from_name(&name.bench) else { continue };
        let key = match (bench, SmpVariant::of(bench, &name.variant)) {
            (SmpBench::Bcast, _) | (_, None) => continue,
            (SmpBench::Falseshare, Some(SmpVariant::SharedLine)) => format!("{bench} shared"),
            (SmpBench::Falseshare, Some(_)) => format!("{bench} padded"),
            _ => format!("{bench} {}", name.attr.trim_start_matches("normal-")),
        };
        match per.iter_mut().find(|(k, ..)| *k == key) {
            Some(e) => {
                e.1 += c.transfers;
                e.2 += c.invalidations;
                e.3 += 1;
            }
            None => per.push((key, c.transfers, c.invalidations, 1)),
        }
    }
    if per.is_empty() {
        return None;
    }
    let parts: Vec<String> = per.iter().map(|(k, t, i, n)| format!("{k} {}/{}", t / n, i / n)).collect();
    Some(line("coherence", format!("(model, per phase: line transfers/invalidations) {}", parts.join(", "))))
}

/// The run-wide line of the phases that bypass the caches, per attribute (non-cacheable,
/// Device, caches off).
fn bypass_line(d: &ModelData) -> Option<String> {
    let mut by: Vec<(String, u64, u64)> = Vec::new();
    for p in &d.phases {
        let a = p.parsed.attr.clone();
        if a.is_empty() {
            continue;
        }
        let e = match by.iter_mut().find(|(x, _, _)| *x == a) {
            Some(e) => e,
            None => {
                by.push((a, 0, 0));
                by.last_mut().expect("just pushed")
            }
        };
        e.1 += p.bypass();
        e.2 += p.data_accesses();
    }
    let byp: Vec<String> = by
        .iter()
        .filter(|(a, ..)| a.contains("nc") || a.starts_with("device") || a.contains("off"))
        .map(|(a, b, n)| {
            format!(
                "{a} {} of {} data accesses",
                if *n == 0 { "–".into() } else { format!("{:.1}%", *b as f64 * 100.0 / *n as f64) },
                n3(*n as f64)
            )
        })
        .collect();
    (!byp.is_empty()).then(|| line("bypass", format!("(model) bypassing the caches: {}", byp.join(", "))))
}

/// A VIPT L1I (model rule 21): its VA index bits, and the IC IVAUs that left copies of their
/// line at other indexes (`model-ic-alias`), the first of them whole. Nothing for a PIPT L1I.
fn vipt_line(d: &ModelData) -> Option<String> {
    let (bits, _) = d.geometry.iter().find(|g| g.level == "L1I")?.vipt.clone()?;
    let mut text = format!("(model) L1I VIPT, {bits} VA index bit{}", if bits == 1 { "" } else { "s" });
    match d.ic_aliases.first().and_then(record::ModelIcAliasView::of) {
        Some(a) => {
            text += &format!(
                ": {} IC IVAU{} left alias copies valid (first {} in {}: L1I copies {} -> {})",
                d.ic_aliases.len(),
                if d.ic_aliases.len() == 1 { "" } else { "s" },
                a.pa().map_or("?".into(), |p| format!("pa {p:#x}")),
                a.phase().filter(|p| !p.is_empty()).unwrap_or("(no phase)"),
                a.copies_before().unwrap_or(0),
                a.copies_left().unwrap_or(0)
            );
        }
        None => text += ": no IC IVAU left an alias copy",
    }
    Some(line("vipt", text))
}

fn model_lines(run: &[Record], d: &ModelData) -> Vec<String> {
    let mut out = Vec::new();
    let geo: Vec<String> =
        d.geometry.iter().filter(|g| g.level != "L1I").map(|g| format!("{} {} {}-way", g.level, hb(g.size as f64), g.ways)).collect();
    let policy = d.geometry.first().map(|g| g.policy.clone()).unwrap_or_default();
    let mut extra = String::new();
    if let Some(p) = d.profile.as_ref().and_then(record::ModelProfileView::of) {
        if let Some(mhz) = p.clock_mhz() {
            extra += &format!(", {} MHz", sig(mhz as f64, 4));
        }
        if let Some(h) = p.hwpf() {
            extra += &format!(", hw prefetcher {h}");
        }
        // Silicon mode (`impl=silicon`): the core's deviations applied (listed in model-profile).
        if p.implementation() == Some("silicon") {
            extra += ", impl=silicon";
        }
    }
    out.push(line(
        "model",
        format!(
            "profile {} ({policy}{extra}): {}; {} phases, {} warnings",
            d.profile_name().unwrap_or_else(|| "?".into()),
            geo.join(", "),
            d.phases.len(),
            d.warnings.len()
        ),
    ));

    out.extend(vipt_line(d));
    // Each benchmark's lines, and the run-wide bypass line, in the digest's order.
    let inf = model_data::infer(run, d);
    let cx = bench::Digest { run, d, inf: &inf };
    for section in bench::DIGEST {
        match section {
            bench::Section::Bench(b) => out.extend(bench::view_of(*b).model_lines(&cx).into_iter().map(|(label, text)| line(label, text))),
            bench::Section::Bypass => out.extend(bypass_line(d)),
        }
    }
    if let Some(h) = &d.hazard_total {
        // Hazards in phases that declared a deliberate mistake (`expect-hazard`) against the rest,
        // and the verdict: the runner's (`sanitizer-verdict`), else judged here the same way.
        let declared: Vec<&str> = run.iter().filter_map(|r| r.view::<record::ExpectHazardView<_>>()?.phase()).collect();
        let phase_of = |o: &crate::records::Object| record::HazardView::of(o).and_then(|h| h.phase()).unwrap_or("").to_string();
        let (expected, other): (Vec<_>, Vec<_>) = d.hazards.iter().partition(|o| declared.contains(&phase_of(o).as_str()));
        // Advisory kinds (shared-line) elsewhere are listed, never failing: counted apart.
        let is_advisory = |o: &&crate::records::Object| -> bool {
            record::HazardView::of(*o)
                .and_then(|h| cachescope_arch::hazard::HazardKind::from_name(h.kind()?))
                .is_some_and(|k| k.severity() == cachescope_arch::hazard::Severity::Advisory)
        };
        let (advisory, other): (Vec<_>, Vec<_>) = other.into_iter().partition(is_advisory);
        let per_kind = record::HazardTotalView::of(h).map(|t| t.per_kind()).unwrap_or_default();
        let mut kinds: Vec<String> = cachescope_arch::hazard::HazardKind::ALL
            .into_iter()
            .filter_map(|k| per_kind[k as usize].filter(|n| *n > 0).map(|n| format!("{} {n}", k.name())))
            .collect();
        if kinds.is_empty() {
            kinds.push("none".into());
        }
        let (word, failed, first) = match crate::verdict::recorded(run.iter().map(|r| &r.obj)) {
            Some(r) => (r.word, r.failed_phases as usize, r.first),
            None => {
                let hazards: Vec<&crate::records::Object> = d.hazards.iter().collect();
                let model = hazards.into_iter().chain(std::iter::once(h));
                let v = crate::verdict::judge(run.iter().map(|r| &r.obj), model).unwrap_or_else(crate::verdict::Verdict::missing);
                let first = v.failed().next().map(|f| format!("{}: {}", crate::verdict::phase_name(&f.phase), f.what)).unwrap_or_default();
                (v.word, v.failed().count(), first)
            }
        };
        let n_declared = declared.iter().collect::<std::collections::BTreeSet<_>>().len();
        // Silicon mode: the lines the modelled core's deviations mask (still mistakes), per rule.
        let mut masked: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for rule in d.hazards.iter().filter_map(|o| record::HazardView::of(o)?.masked_by()) {
            *masked.entry(rule).or_default() += 1;
        }
        let masked = if masked.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = masked.iter().map(|(r, n)| format!("{r} {n}")).collect();
            format!(", masked on this core: {}", v.join(", "))
        };
        let text = match word {
            crate::verdict::Word::AsDeclared => format!(
                "(model sanitizer) as declared: {} line(s) in {n_declared} deliberate-mistake phase(s), {} elsewhere{} [{}]",
                expected.len(),
                other.len(),
                if advisory.is_empty() { String::new() } else { format!(", {} advisory (not failing)", advisory.len()) },
                kinds.join(", ") + &masked
            ),
            crate::verdict::Word::Off => "(model sanitizer) off (sanitize=off): nothing judged".to_string(),
            _ => format!("(model sanitizer) FAILED in {failed} phase(s), exit status 1 — {first} [{}]", kinds.join(", ") + &masked),
        };
        out.push(line("hazards", text));
    } else if !d.hazards.is_empty() {
        out.push(line("hazards", format!("{} hazard records", d.hazards.len())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coherence_line_matches_the_smp_identities() {
        // Two vCPUs' records of one phase add up; bcast, a bench-suite benchmark and a variant
        // the kernel does not declare are left out.
        let mut m = String::new();
        for (id, phase) in [
            (1, "pingpong/plain/normal-wb/64/iters=100/peer=1"),
            (2, "pingpong/plain/normal-nc/64/iters=100/peer=1"),
            (3, "falseshare/shared-line/normal-wb/16/cores=2/incs=500/stride=8"),
            (4, "falseshare/padded-cwg/normal-wb/128/cores=2/incs=500/stride=64"),
            (5, "falseshare/mystery/normal-wb/16"),
            (6, "bcast/dc-civac-remote/normal-wb/4096/lines=64/peer=1"),
            (7, "stream/read-ldp/normal-wb/4096"),
        ] {
            for cpu in 0..2 {
                m += &format!("# cs: {{\"record\":\"model-coherence\",\"phase\":\"{phase}\",\"phase_id\":{id},\"cpu\":{cpu},\"invalidations\":1,\"interventions\":9,\"buf_invalidations\":{},\"buf_interventions\":{},\"source\":\"model\"}}\n", id, 10 * id);
            }
        }
        let recs = records::extract(&Log::from_bytes("m", m.as_bytes())).0;
        let d = ModelData::from_records(&recs);
        let l = coherence_line(&d).expect("a line");
        assert!(l.ends_with("pingpong wb 20/2, pingpong nc 40/4, falseshare shared 60/6, falseshare padded 80/8"), "{l}");
    }

    pub(crate) const BOOT: &str = r#"# cs: {"record":"boot","schema":2,"el":1,"current_el":1,"board":"qemu-virt","midr":"0x410fd083","cpu":"Cortex-A72","cntfrq":62500000,"dtb":true,"ram_base":"0x40000000","ram_size":536870912,"uart":"0x9000000","emulated":true,"args":""}"#;

    fn run_text(with_end: bool) -> String {
        let mut s = String::from("KTAP version 1\n1..2\n");
        s += BOOT;
        s += "\n  KTAP version 1\n  # Subtest: cache\n  1..1\n";
        s += r#"  # cs: {"record":"cache","level":1,"type":"data","line":64,"ways":4,"sets":128,"size":32768,"source":"ccsidr"}"#;
        s += "\n";
        s += r#"  # cs: {"record":"cache","level":2,"type":"unified","line":64,"ways":16,"sets":1024,"size":1048576,"source":"ccsidr"}"#;
        s += "\n";
        s += r#"  # cs: {"record":"setway","op":"cisw","scope":"loc","ops":16896}"#;
        s += "\n  ok 1 id\nok 1 cache\n  KTAP version 1\n  # Subtest: bench\n  1..1\n";
        for (b, m) in [(1024, 5.852), (4194304, 48.167)] {
            s += &format!("  # cs: {{\"record\":\"metric\",\"bench\":\"latency\",\"variant\":\"chase\",\"attr\":\"normal-wb\",\"bytes\":{b},\"params\":{{\"line\":64}},\"phase\":\"latency/chase/normal-wb/{b}/line=64\",\"reps\":3,\"min\":{m},\"median\":{m},\"max\":{m},\"mad\":0,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}}\n");
        }
        if with_end {
            s += "  ok 1 lat\nok 2 bench\n";
            s += "# cs: {\"record\":\"end\",\"passed\":2,\"failed\":0,\"skipped\":0}\n";
        }
        s
    }

    fn model_text() -> String {
        let mut s = String::new();
        s += "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n";
        s += "# cs: {\"record\":\"model-geometry\",\"level\":\"L2\",\"size\":1048576,\"line\":64,\"sets\":1024,\"ways\":16,\"sharing\":\"shared\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n";
        let mut id = 0;
        for (b, l1, l2) in [(16384u64, 0u64, 0u64), (32768, 100, 0), (40960, 3800, 0), (1048576, 4000, 60), (1310720, 4100, 4090)] {
            id += 1;
            s += &format!("# cs: {{\"record\":\"model\",\"phase\":\"latency/chase/normal-wb/{b}/line=64\",\"phase_id\":{id},\"level\":\"L1D\",\"accesses\":4100,\"hits\":{},\"misses\":{l1},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}}\n", 4100 - l1);
            s += &format!("# cs: {{\"record\":\"model\",\"phase\":\"latency/chase/normal-wb/{b}/line=64\",\"phase_id\":{id},\"level\":\"L2\",\"accesses\":{l1},\"hits\":{},\"misses\":{l2},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}}\n", l1 - l2);
        }
        s
    }

    #[test]
    fn digest_of_a_complete_run_without_the_model() {
        let run = Log::from_bytes("run.log", run_text(true).as_bytes());
        let d = digest(&run, None, &Options::default());
        let text = d.join("\n");
        assert!(d.len() <= MAX_LINES, "{text}");
        for needle in [
            "== cachescope digest: run.log (complete) ==",
            "Cortex-A72 (MIDR 0x410fd083) on qemu-virt, entered at EL1; EMULATED (QEMU): timings measure the emulator",
            "caches   (CCSIDR vs silicon) L1D 32 KiB 4-way DIFFERS (silicon 32 KiB 2-way 64 B); L2 1 MiB 16-way agrees [Cortex-A72 TRM 100095]",
            "1 set/way walks, 16896 DC ops (cisw 16896)",
            "[emulator timer: measures QEMU] ns: normal-wb 5.85 (1 KiB) → 48.2 (4 MiB)",
            "model    not observed (QEMU_CACHE_MODEL=off)",
            "results  2 passed, 0 failed, 0 skipped",
            "scripts/report report run.log -o run.html",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn digest_of_a_partial_run_under_the_model_with_icount() {
        let run = Log::from_bytes("cut.log", run_text(false).as_bytes());
        let model = Log::from_bytes("cut.model", model_text().as_bytes());
        let opts = Options { icount: true, model_path: Some("cut.model".into()) };
        let d = digest(&run, Some(&model), &opts);
        let text = d.join("\n");
        assert!(d.len() <= MAX_LINES, "{text}");
        for needle in [
            "(INCOMPLETE: no end record, the run died or was cut short (last suite started: bench)",
            "EMULATED (QEMU, -icount): timings are instruction counts",
            "bench    1 benchmark, 2 measurements: emulator timings (instruction counts under -icount), not cache behaviour",
            "L1D 32 KiB→40 KiB (CCSIDR 32 KiB, silicon 32 KiB)",
            "L1D 32 KiB ?-way (CCSIDR 4, silicon 2)",
            "L2 1 MiB→1.25 MiB (CCSIDR 1 MiB, silicon 512 KiB–4 MiB)",
            "no model-time records",
            "INCOMPLETE run: 1 passed, 0 failed, 0 skipped before it stopped",
            "scripts/report report cut.log --model cut.model --icount -o cut.html",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn digest_never_exceeds_the_limit_and_survives_garbage() {
        let mut t = run_text(true);
        for i in 0..40 {
            t += &format!(
                "# cs: {{\"record\":\"metric\",\"bench\":\"b{i}\",\"median\":1,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}}\n"
            );
        }
        let d = digest(&Log::from_bytes("x.log", t.as_bytes()), None, &Options::default());
        assert_eq!(d.len(), MAX_LINES);
        assert!(d[MAX_LINES - 3].contains("more lines"), "{d:#?}");
        assert!(d[MAX_LINES - 1].starts_with("report"));
        let empty = digest(&Log::from_bytes("e.log", b"\xff\xfe garbage\n# cs: {broken\n"), None, &Options::default());
        assert!(empty[0].contains("INCOMPLETE") && empty.iter().any(|l| l.contains("no boot record")), "{empty:#?}");
    }

    #[test]
    fn every_failed_case_is_named_with_its_first_diagnostic() {
        let t = "KTAP version 1\n1..2\n  KTAP version 1\n  # Subtest: mmu\n  1..3\n  # fine\n  ok 1 a\n  # point: x median 1 ns\n  # the first reason\n  # the second\n  not ok 2 b\n  not ok 3 c # the result's own reason\nnot ok 1 mmu\n  KTAP version 1\n  # Subtest: boot\n  1..0\nnot ok 2 boot # no cases ran\n";
        let f = failed_cases(&Log::from_bytes("x.log", t.as_bytes()));
        assert_eq!(
            f,
            vec![
                ("mmu.b".to_string(), Some("the first reason".to_string())),
                ("mmu.c".to_string(), Some("the result's own reason".to_string())),
                ("boot".to_string(), Some("no cases ran".to_string())),
            ]
        );
        let d = digest(&Log::from_bytes("x.log", t.as_bytes()), None, &Options::default());
        assert!(d.iter().any(|l| l == "failed   mmu.b: the first reason"), "{d:#?}");
        assert!(d.len() <= MAX_LINES);
    }

    #[test]
    fn a_long_line_is_wrapped_whole() {
        let l = line("hazards", (0..40).map(|i| format!("kind-{i} {i}")).collect::<Vec<_>>().join(", "));
        let w = wrap(l.clone());
        assert!(w.len() > 1 && w.iter().all(|x| x.chars().count() <= MAX_WIDTH), "{w:#?}");
        assert_eq!(w.iter().map(|x| x.trim_start()).collect::<Vec<_>>().join(" "), l);
        assert!(!w.concat().contains('…'));
    }

    #[test]
    fn a_board_profile_on_another_cpu_says_so_and_compares_with_its_own_silicon() {
        let run = Log::from_bytes("r.log", run_text(true).as_bytes());
        let m = model_text() + "# cs: {\"record\":\"model-profile\",\"profile\":\"rpi5\",\"source\":\"model\"}\n";
        let d = digest(&run, Some(&Log::from_bytes("r.model", m.as_bytes())), &Options::default());
        let text = d.join("\n");
        assert!(text.contains("NOTE: profile rpi5 models a Cortex-A76 but QEMU emulates a Cortex-A72"), "{text}");
        assert!(text.contains("(CCSIDR 32 KiB, silicon 64 KiB)"), "A76 silicon, not A72's: {text}");
        let m = model_text() + "# cs: {\"record\":\"model-profile\",\"profile\":\"rpi4\",\"source\":\"model\"}\n";
        let d = digest(&run, Some(&Log::from_bytes("r.model", m.as_bytes())), &Options::default()).join("\n");
        assert!(!d.contains("NOTE: profile"), "rpi4 on the A72 it models: {d}");
    }
}

#[cfg(test)]
mod vipt_tests {
    use super::*;

    fn data(text: &str) -> ModelData {
        ModelData::from_records(&crate::records::extract(&crate::input::Log::from_bytes("t", text.as_bytes())).0)
    }

    #[test]
    fn the_vipt_line_names_the_index_bits_and_the_first_alias_left() {
        let geo = r#"# cs: {"record":"model-geometry","level":"L1I","size":32768,"line":64,"sets":512,"ways":1,"sharing":"private","policy":"lru","origin":"guest","vcpus":1,"hit_cycles":4,"hit_ns":2.00,"index":"vipt","va_index_bits":3,"index_ref":"the guest CPU's CTR_EL0.L1Ip = 0b10 (VIPT)","source":"model"}"#;
        let alias = r#"# cs: {"record":"model-ic-alias","phase":"cache/vipt-alias","phase_id":1,"cpu":0,"va":"0x1f0041400000","pa":"0x41400000","set":0,"copies_before":2,"copies_left":1,"source":"model"}"#;
        let l = vipt_line(&data(&format!("{geo}\n{alias}\n"))).expect("a VIPT L1I has a line");
        assert!(
            l.contains(
                "L1I VIPT, 3 VA index bits: 1 IC IVAU left alias copies valid (first pa 0x41400000 in cache/vipt-alias: L1I copies 2 -> 1)"
            ),
            "{l}"
        );
        let l = vipt_line(&data(&format!("{geo}\n"))).expect("a VIPT L1I has a line");
        assert!(l.ends_with("no IC IVAU left an alias copy"), "{l}");
        let pipt = geo.replace(r#""index":"vipt","va_index_bits":3,"index_ref":"the guest CPU's CTR_EL0.L1Ip = 0b10 (VIPT)","#, "");
        assert_eq!(vipt_line(&data(&format!("{pipt}\n{alias}\n"))), None, "a PIPT L1I has none");
    }
}
