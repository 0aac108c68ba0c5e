//! `verdict`: the cache-model sanitizer's verdict on a run, decided in one place.
//!
//! The kernel declares, per deliberate mistake, what the sanitizer must report
//! (`expect-hazard` records in the run's log); the plugin reports what it saw (`hazard` records
//! and `hazard-total` in the model log). [`judge`] compares them: a declared phase passes when it
//! has exactly the declared kinds at exactly the declared lines; every other phase (every correct
//! sequence of the run, and code outside phases) passes when it has no hazard at all.
//! Advisory kinds (`shared-line`, [`Severity::Advisory`]) are judged only in a phase that declares
//! that kind; anywhere else they are listed, as a passing finding of their own, and never fail a
//! phase: a line shared by a cache-bypassing reader and a cached writer is fragile, not wrong.
//!
//! The runner (scripts/qemu-run) calls `cachescope-report verdict` after QEMU exits and folds the
//! result into the run's exit status: a failed verdict turns a passing run into status 1. What
//! [`Verdict::lines`] prints is appended to the saved log: one `# sanitizer:` diagnostic per
//! finding (KTAP diagnostics, so every KTAP reader keeps them), a `sanitizer-finding` record per
//! failed phase naming the KTAP case that declared it, and one `sanitizer-verdict` record. The
//! digest, JUnit and `xtask hazards` read these; none of them re-decides.

use std::collections::{BTreeMap, BTreeSet};

use cachescope_arch::hazard::{HazardKind, Severity};
use cachescope_arch::record::{self, Builder};

use crate::records::Object;

/// At most this many failed phases get their own `sanitizer-finding` record (the verdict record
/// counts them all).
pub const MAX_FINDING_RECORDS: usize = 20;

/// Every runner record's `source`.
const SOURCE: &str = "runner";

/// The verdict's word in the `sanitizer-verdict` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// Every declared hazard seen exactly, none elsewhere.
    AsDeclared,
    /// At least one phase failed.
    Failed,
    /// The sanitizer was switched off (`sanitize=off`): nothing was judged.
    Off,
    /// The model log has no `hazard-total` (the plugin did not finish) or fails validation
    /// (`contract::check_model_log`): nothing can be judged and the run cannot pass.
    Missing,
}

impl Word {
    /// The wire name.
    pub const fn name(self) -> &'static str {
        match self {
            Word::AsDeclared => "as-declared",
            Word::Failed => "failed",
            Word::Off => "off",
            Word::Missing => "missing",
        }
    }

    /// The wire names, for readers.
    pub const ALL: [Word; 4] = [Word::AsDeclared, Word::Failed, Word::Off, Word::Missing];

    /// The word named `name`.
    pub fn parse(name: &str) -> Option<Word> {
        Word::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// One phase's finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The phase (`""`: outside any phase).
    pub phase: String,
    /// Whether the phase passed.
    pub passed: bool,
    /// Whether the phase declared a deliberate mistake.
    pub declared: bool,
    /// What was found, one line.
    pub what: String,
}

/// The verdict on a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The word.
    pub word: Word,
    /// Every finding: declared phases first (in phase order), then failing undeclared phases.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// The failed findings.
    pub fn failed(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.passed)
    }

    /// Whether the run passes the sanitizer.
    pub fn passed(&self) -> bool {
        matches!(self.word, Word::AsDeclared | Word::Off)
    }

    /// The verdict when [`judge`] had nothing to judge by: `why` as its one finding.
    pub fn missing(why: String) -> Verdict {
        Verdict { word: Word::Missing, findings: vec![Finding { phase: String::new(), passed: false, declared: false, what: why }] }
    }

    /// The lines the runner appends to the run's log: `# sanitizer:` diagnostics, then
    /// `sanitizer-finding` records for failed phases (`case_of` names the KTAP case that declared
    /// a phase, `""` when none did), then the `sanitizer-verdict` record.
    pub fn lines(&self, case_of: impl Fn(&str) -> String) -> Vec<String> {
        let mut out = Vec::new();
        for f in &self.findings {
            out.push(format!("# sanitizer: {} {}: {}", if f.passed { "ok" } else { "not ok" }, phase_name(&f.phase), f.what));
        }
        let failed: Vec<&Finding> = self.failed().collect();
        for f in failed.iter().take(MAX_FINDING_RECORDS) {
            let case = case_of(&f.phase);
            let rec = record::SanitizerFinding::new().phase(&f.phase).case(&case).declared(f.declared).what(&f.what).source(SOURCE);
            out.push(format!("{}{}", record::PREFIX, rec.finish()));
        }
        let first = failed.first().map(|f| format!("{}: {}", phase_name(&f.phase), f.what)).unwrap_or_default();
        let rec = record::SanitizerVerdict::new()
            .verdict(self.word.name())
            .declared_phases(self.findings.iter().filter(|f| f.declared).count() as u64)
            .failed_phases(failed.len() as u64)
            .first(&first)
            .source(SOURCE);
        out.push(format!("{}{}", record::PREFIX, rec.finish()));
        if !self.passed() {
            out.push(format!(
                "# sanitizer: the verdict is {}: the run's exit status is 1 ({} phase(s) failed)",
                self.word.name(),
                failed.len()
            ));
        }
        out
    }
}

/// How a phase is named in findings.
pub fn phase_name(phase: &str) -> &str {
    if phase.is_empty() {
        "(outside any phase)"
    } else {
        phase
    }
}

/// At most 8 (kind@line) named, then how many in all.
fn show(s: &BTreeSet<(&str, u64)>) -> String {
    let mut t = s.iter().take(8).map(|(k, l)| format!("{k}@{l:#x}")).collect::<Vec<_>>().join(" ");
    if s.len() > 8 {
        t += &format!(" … ({} lines in all)", s.len());
    }
    t
}

/// Judges a run: `log` are the records of the kernel's log, `model` those of the model log.
/// `Err` when there is nothing to judge by: the model log has no `hazard-total` (the sanitizer's
/// summary, written at exit), so the plugin did not finish or did not run.
pub fn judge<'a>(log: impl IntoIterator<Item = &'a Object>, model: impl IntoIterator<Item = &'a Object>) -> Result<Verdict, String> {
    let expected: Vec<record::ExpectHazardView<'a, Object>> = log.into_iter().filter_map(record::ExpectHazardView::of).collect();
    let model: Vec<&'a Object> = model.into_iter().collect();
    let total = model
        .iter()
        .find_map(|r| record::HazardTotalView::of(*r))
        .ok_or("the model log has no hazard-total record: the sanitizer did not finish (QEMU stopped before the plugin's exit, or the model was off)")?;
    if total.sanitize() == Some(false) {
        return Ok(Verdict { word: Word::Off, findings: Vec::new() });
    }
    // (phase → set of (kind, line)) as reported.
    let mut seen: BTreeMap<&str, BTreeSet<(&str, u64)>> = BTreeMap::new();
    for h in model.iter().filter_map(|r| record::HazardView::of(*r)) {
        seen.entry(h.phase().unwrap_or("")).or_default().insert((h.kind().unwrap_or(""), h.pa().unwrap_or(u64::MAX)));
    }
    let mut want: BTreeMap<&str, BTreeSet<(&str, u64)>> = BTreeMap::new();
    for e in &expected {
        let (pa, lines, stride) = (e.pa().unwrap_or(0), e.lines().unwrap_or(0), e.stride().unwrap_or(0));
        let set = want.entry(e.phase().unwrap_or("")).or_default();
        for i in 0..lines {
            set.insert((e.kind().unwrap_or(""), pa + i * stride));
        }
    }
    // Advisory hazards of a kind their phase does not declare: listed, not judged.
    let advisory = |k: &str| HazardKind::from_name(k).is_some_and(|k| k.severity() == Severity::Advisory);
    let mut listed: BTreeMap<&str, BTreeSet<(&str, u64)>> = BTreeMap::new();
    for (phase, got) in seen.iter_mut() {
        let declares = |k: &str| want.get(phase).is_some_and(|w| w.iter().any(|(d, _)| *d == k));
        let (aside, judged): (BTreeSet<_>, BTreeSet<_>) = got.iter().partition(|(k, _)| advisory(k) && !declares(k));
        if !aside.is_empty() {
            listed.insert(phase, aside);
        }
        *got = judged;
    }
    seen.retain(|_, got| !got.is_empty());
    let mut findings = Vec::new();
    for (phase, w) in &want {
        let got = seen.get(phase).cloned().unwrap_or_default();
        let (passed, what) = if &got == w {
            (true, format!("{} reported exactly as declared", show(w)))
        } else {
            let missing: BTreeSet<_> = w.difference(&got).copied().collect();
            let extra: BTreeSet<_> = got.difference(w).copied().collect();
            let mut what = format!("declared {}", show(w));
            if !missing.is_empty() {
                what += &format!("; missing {}", show(&missing));
            }
            if !extra.is_empty() {
                what += &format!("; unexpected {}", show(&extra));
            }
            (false, what)
        };
        findings.push(Finding { phase: phase.to_string(), passed, declared: true, what });
    }
    for (phase, got) in seen.iter().filter(|(p, _)| !want.contains_key(*p)) {
        findings.push(Finding {
            phase: phase.to_string(),
            passed: false,
            declared: false,
            what: format!("a correct sequence produced {}", show(got)),
        });
    }
    for (phase, got) in &listed {
        findings.push(Finding {
            phase: phase.to_string(),
            passed: true,
            declared: false,
            what: format!("advisory (not failing): {}", show(got)),
        });
    }
    // Hazards the plugin stopped recording (its bound on a hazard storm): never a pass, and
    // named first (the list above is incomplete).
    let dropped = total.dropped().unwrap_or(0);
    if dropped > 0 || total.truncated() == Some(true) {
        findings.insert(
            0,
            Finding {
                phase: String::new(),
                passed: false,
                declared: false,
                what: format!(
                    "TRUNCATED: the sanitizer reached its bound on hazard records; {dropped} more occurrence(s) were only counted (a hazard storm: the first records name where)"
                ),
            },
        );
    }
    let word = if findings.iter().all(|f| f.passed) { Word::AsDeclared } else { Word::Failed };
    Ok(Verdict { word, findings })
}

/// The verdict a log carries (the runner appended it): the `sanitizer-verdict` record's word,
/// its first failure, and the `sanitizer-finding` records. `None` when the log has none.
pub fn recorded<'a>(log: impl IntoIterator<Item = &'a Object>) -> Option<Recorded> {
    let mut findings = Vec::new();
    let mut verdict = None;
    let text = |s: Option<&str>| s.unwrap_or("").to_string();
    for r in log {
        if let Some(f) = record::SanitizerFindingView::of(r) {
            findings.push(RecordedFinding { phase: text(f.phase()), case: text(f.case()), what: text(f.what()) });
        } else if let Some(v) = record::SanitizerVerdictView::of(r) {
            verdict = Some((Word::parse(v.verdict().unwrap_or(""))?, v.failed_phases().unwrap_or(0), text(v.first())));
        }
    }
    let (word, failed_phases, first) = verdict?;
    Some(Recorded { word, failed_phases, first, findings })
}

/// A verdict as a log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The word.
    pub word: Word,
    /// How many phases failed.
    pub failed_phases: u64,
    /// The first failure, `phase: what` (empty when none).
    pub first: String,
    /// The failed phases recorded one by one (at most [`MAX_FINDING_RECORDS`]).
    pub findings: Vec<RecordedFinding>,
}

/// A failed phase as a `sanitizer-finding` record gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFinding {
    /// The phase.
    pub phase: String,
    /// The KTAP case (`suite.case`) that declared it, empty when none did.
    pub case: String,
    /// What was found.
    pub what: String,
}

/// The KTAP case (`suite.case`) whose output holds the `expect-hazard` record of `phase`, in a
/// run's JUnit view (`junit::build`); empty when no case declared it.
pub fn declaring_case(cases: &crate::junit::Report, phase: &str) -> String {
    let needle = format!("\"record\":\"expect-hazard\",\"phase\":\"{phase}\"");
    cases
        .suites
        .iter()
        .flat_map(|s| s.cases.iter().map(move |c| (s, c)))
        .find(|(_, c)| c.output.iter().any(|o| o.contains(&needle)))
        .map(|(s, c)| format!("{}.{}", s.name, c.name))
        .unwrap_or_default()
}

/// Folds a recorded verdict into JUnit results: the case that declared a failed phase fails
/// with the finding (a mistake case passes only when its declared hazard was seen exactly); a
/// failed phase no case declared becomes a failed case of a `sanitizer` suite, named by phase
/// (judged after the run: a time of 0 s where the report has times).
pub fn apply_to_junit(report: &mut crate::junit::Report, v: &Recorded) {
    use crate::junit::{Case, Outcome, Suite};
    let time = report.time.map(|_| 0.0);
    let mut loose = Vec::new();
    for f in &v.findings {
        let message = format!("sanitizer: {}: {}", phase_name(&f.phase), f.what);
        let case = report
            .suites
            .iter_mut()
            .flat_map(|s| {
                let name = s.name.clone();
                s.cases.iter_mut().map(move |c| (name.clone(), c))
            })
            .find(|(s, c)| !f.case.is_empty() && format!("{s}.{}", c.name) == f.case);
        match case {
            Some((_, c)) => {
                c.output.push(message.clone());
                c.outcome = Outcome::Failed { message, kind: "sanitizer".into() };
            }
            None => loose.push(Case {
                name: phase_name(&f.phase).to_string(),
                line: 0,
                outcome: Outcome::Failed { message: message.clone(), kind: "sanitizer".into() },
                output: vec![message],
                properties: Vec::new(),
                time,
            }),
        }
    }
    let unrecorded = (v.failed_phases as usize).saturating_sub(v.findings.len());
    if unrecorded > 0 {
        let message = format!("sanitizer: {unrecorded} more failed phase(s) not recorded one by one; the first: {}", v.first);
        loose.push(Case {
            name: "(more phases)".into(),
            line: 0,
            outcome: Outcome::Failed { message: message.clone(), kind: "sanitizer".into() },
            output: vec![message],
            properties: Vec::new(),
            time,
        });
    }
    if !loose.is_empty() {
        report.suites.push(Suite { name: "sanitizer".into(), cases: loose, output: Vec::new(), properties: Vec::new(), time });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::parse_line;

    const LOG: &str = r#"# cs: {"record":"expect-hazard","phase":"mistakes/a","kind":"lost-write","pa":"0x1000","lines":2,"stride":64}"#;

    fn hazard(phase: &str, kind: &str, pa: u64) -> String {
        format!(
            r#"# cs: {{"record":"hazard","kind":"{kind}","pa":"{pa:#x}","va":"0x0","pc":"0x0","phase":"{phase}","phase_id":1,"count":1,"access":"dc-ivac","cause":"write","cause_pc":"0x0","source":"model"}}"#
        )
    }

    const TOTAL: &str = r#"# cs: {"record":"hazard-total","sanitize":true,"hazards":2,"count":2,"stale_read_by_device":0,"lost_write":2,"stale_read_by_cpu":0,"stale_instruction":0,"maintenance_gap":0,"shared_line":0,"source":"model"}"#;

    fn objs(text: &str) -> Vec<Object> {
        text.lines().filter_map(|l| parse_line(l)?.ok()).collect()
    }

    fn judge_text(log: &str, model: &str) -> Result<Verdict, String> {
        let (l, m) = (objs(log), objs(model));
        judge(&l, &m)
    }

    #[test]
    fn exact_match_passes_and_anything_else_fails_named() {
        let model = [hazard("mistakes/a", "lost-write", 4096), hazard("mistakes/a", "lost-write", 4160), TOTAL.into()].join("\n");
        let v = judge_text(LOG, &model).unwrap();
        assert_eq!(v.word, Word::AsDeclared);
        assert!(v.findings.iter().all(|f| f.passed));
        // A missing line fails the declared phase, named.
        let model = [hazard("mistakes/a", "lost-write", 4096), TOTAL.into()].join("\n");
        let v = judge_text(LOG, &model).unwrap();
        assert_eq!(v.word, Word::Failed);
        assert!(v.failed().any(|f| f.phase == "mistakes/a" && f.what.contains("missing lost-write@0x1040")));
        // A hazard in a correct phase fails that phase.
        let model = [
            hazard("mistakes/a", "lost-write", 4096),
            hazard("mistakes/a", "lost-write", 4160),
            hazard("handoff/to-device-va-maint/normal-wb/262144", "stale-read-by-device", 8192),
            TOTAL.into(),
        ]
        .join("\n");
        let v = judge_text(LOG, &model).unwrap();
        let bad: Vec<_> = v.failed().collect();
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].phase, "handoff/to-device-va-maint/normal-wb/262144");
        assert!(!bad[0].declared && bad[0].what.contains("stale-read-by-device@0x2000"));
        // No hazard-total: nothing to judge by.
        assert!(judge_text(LOG, "").is_err());
        // The sanitizer off: not judged, not failed.
        let off = TOTAL.replace(r#""sanitize":true"#, r#""sanitize":false"#);
        assert_eq!(judge_text(LOG, &off).unwrap().word, Word::Off);
        // Lines dropped at the plugin's bound: failed even without any other finding.
        let dropped = TOTAL.replace(r#""source":"model""#, r#""truncated":true,"dropped":7,"source":"model""#);
        let model = [hazard("mistakes/a", "lost-write", 4096), hazard("mistakes/a", "lost-write", 4160), dropped].join("\n");
        assert_eq!(judge_text(LOG, &model).unwrap().word, Word::Failed);
    }

    #[test]
    fn shared_lines_are_listed_and_judged_only_where_declared() {
        let exact = [hazard("mistakes/a", "lost-write", 4096), hazard("mistakes/a", "lost-write", 4160)];
        // Beside a declared mistake, and in a correct phase: listed, passing.
        let model = [&exact[..], &[hazard("mistakes/a", "shared-line", 4224), hazard("boot", "shared-line", 8192), TOTAL.into()]]
            .concat()
            .join("\n");
        let v = judge_text(LOG, &model).unwrap();
        assert_eq!(v.word, Word::AsDeclared, "{v:?}");
        let listed: Vec<_> = v.findings.iter().filter(|f| f.what.starts_with("advisory")).map(|f| (f.phase.as_str(), f.passed)).collect();
        assert_eq!(listed, [("boot", true), ("mistakes/a", true)]);
        assert!(v.findings.iter().any(|f| f.phase == "boot" && f.what.contains("shared-line@0x2000")));
        assert_eq!(v.findings.iter().filter(|f| f.declared).count(), 1, "the advisory finding declares nothing");
        // A phase that declares shared-line gets it judged exactly, like any kind.
        let log = LOG.replace("mistakes/a", "mistakes/b").replace("lost-write", "shared-line");
        let v = judge_text(&log, &[hazard("mistakes/b", "shared-line", 4096), TOTAL.into()].join("\n")).unwrap();
        assert_eq!(v.word, Word::Failed);
        assert!(v.failed().any(|f| f.phase == "mistakes/b" && f.what.contains("missing shared-line@0x1040")), "{v:?}");
        // And an error kind beside a listed shared line still fails.
        let model = [&exact[..], &[hazard("boot", "shared-line", 8192), hazard("boot", "stale-instruction", 8192), TOTAL.into()]]
            .concat()
            .join("\n");
        let v = judge_text(LOG, &model).unwrap();
        assert_eq!(v.word, Word::Failed);
        let bad: Vec<_> = v.failed().map(|f| f.what.as_str()).collect();
        assert_eq!(bad, ["a correct sequence produced stale-instruction@0x2000"]);
    }

    #[test]
    fn lines_round_trip_through_the_recorded_reader_and_validate() {
        let model = [hazard("mistakes/a", "lost-write", 4096), hazard("x/y", "stale-read-by-cpu", 8192), TOTAL.into()].join("\n");
        let v = judge_text(LOG, &model).unwrap();
        let lines = v.lines(|p| if p == "mistakes/a" { "mistakes.a".into() } else { String::new() });
        assert!(lines.iter().any(|l| l.starts_with("# sanitizer: not ok x/y: a correct sequence produced stale-read-by-cpu@0x2000")));
        let recs = objs(&lines.join("\n"));
        for r in &recs {
            let k = cachescope_arch::record::kind(r.kind()).expect("declared kind");
            for (name, _) in r.iter().filter(|(n, _)| *n != "record") {
                assert!(k.field(name).is_some(), "{} has no field {name}", k.name);
            }
        }
        let rec = recorded(&recs).unwrap();
        assert_eq!(rec.word, Word::Failed);
        assert_eq!(rec.failed_phases, 2);
        assert!(rec.first.starts_with("mistakes/a: declared lost-write@0x1000 lost-write@0x1040; missing lost-write@0x1040"));
        assert_eq!(rec.findings[0].case, "mistakes.a");
        assert_eq!(rec.findings[1].phase, "x/y");
    }
}
