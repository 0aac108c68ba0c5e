//! `junit`: a KTAP log as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub actions'
//! test reporters) read.
//!
//! Mapping:
//! - `<testsuites name="cachescope">` holds one `<testsuite>` per KTAP subtest that has leaf
//!   results, named by its `# Subtest:` name (nested subtests join their names with `.`); leaf
//!   results at the top level go to a suite named after the log file.
//! - One `<testcase classname="SUITE" name="CASE">` per leaf result.
//! - `not ok` → `<failure message="…" type="check|fault|TIMEOUT|ERROR">`, the message made of the
//!   case's `FAIL:` diagnostics (an unexpected exception is a `fault`; its decoded syndrome is in
//!   the text), else its last diagnostic, else the result line; the body holds every diagnostic
//!   of the case. `not ok … # TODO/XFAIL` is a pass, as in KTAP's counts.
//! - `# SKIP reason` (with `ok` or `not ok`) → `<skipped message="reason"/>`.
//! - Diagnostics belong to the result line that follows them (KTAP's convention); those after a
//!   suite's last result (its totals line) go to the suite's `<system-out>`. A case's
//!   diagnostics are its `<system-out>`; its `metric` records are also `<properties>`
//!   (`metric key` → median).
//! - Property names are unique in the whole document (consumers such as xunitparser merge every
//!   suite's properties into one table and refuse a repeated name): the run parameters
//!   ([`RunInfo`]: `run.args`, `run.cpu`, `run.machine`, `run.timer`, …) are properties of the
//!   first suite only, as they describe the one run; each suite's own properties are the number
//!   of records of each kind printed inside it, named after the suite (`cache.records.metric`).
//! - `time` (seconds) on every `<testcase>`, `<testsuite>` and on `<testsuites>`, from the host's
//!   arrival time of each line ([`LineTimes`], the `LOG.times` the catalogue runner writes): a
//!   case's time runs from the previous result line of its suite (or the suite's first line) to
//!   its own result line — its diagnostics come before its result, so that is the span in which
//!   it ran; a suite's from its first line to its last; the document's from the first KTAP line
//!   to the last line. Without arrival times there is no `time` attribute (nothing is
//!   invented from the guest's clock, which under `-icount` counts instructions).
//! - A suite cut short (crash, hang, capture timeout) gets one `<error>` test case saying how
//!   many planned results are missing, so the CI shows the run as broken.
//!
//! Text is escaped for XML 1.0 by [`crate::xml::escape`].

use crate::input::Log;
use crate::ktap::{self, Directive};
use crate::metrics::{sig, Metric};
use crate::records::{self, Record};
use crate::runinfo::RunInfo;
use crate::times::LineTimes;
use crate::xml::escape;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Passed (including `not ok … # TODO/XFAIL`).
    Passed,
    /// Failed: the message and the failure type (`check`, `fault`, `TIMEOUT`, `ERROR`).
    Failed {
        /// One-line summary.
        message: String,
        /// Failure type.
        kind: String,
    },
    /// Skipped, with the reason.
    Skipped(String),
    /// Never reported (the log ends before it): an error, not a failure.
    Missing(String),
}

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The result line's description.
    pub name: String,
    /// Log line of its result.
    pub line: usize,
    /// How it ended.
    pub outcome: Outcome,
    /// Its diagnostics (without `# `), records included.
    pub output: Vec<String>,
    /// `metric key` → median of its metric records.
    pub properties: Vec<(String, String)>,
    /// Seconds from the previous result line (or the suite's start) to its result line.
    pub time: Option<f64>,
}

/// One test suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// Its name (`boot`, `cache`, `outer.inner`).
    pub name: String,
    /// Its cases in order.
    pub cases: Vec<Case>,
    /// Diagnostics after its last result.
    pub output: Vec<String>,
    /// Properties (the run parameters on the first suite, record counts).
    pub properties: Vec<(String, String)>,
    /// Seconds from its first line to its last.
    pub time: Option<f64>,
}

impl Suite {
    fn count(&self, p: fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|c| p(&c.outcome)).count()
    }
}

/// A whole JUnit document.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The suites in log order.
    pub suites: Vec<Suite>,
    /// Seconds from the first KTAP line to the last line of the log.
    pub time: Option<f64>,
}

/// Totals over all suites, in JUnit's terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Test cases.
    pub tests: usize,
    /// Failed cases.
    pub failures: usize,
    /// Skipped cases.
    pub skipped: usize,
    /// Missing cases (errors).
    pub errors: usize,
}

impl Report {
    /// Totals over all suites.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in &self.suites {
            t.tests += s.cases.len();
            t.failures += s.count(|o| matches!(o, Outcome::Failed { .. }));
            t.skipped += s.count(|o| matches!(o, Outcome::Skipped(_)));
            t.errors += s.count(|o| matches!(o, Outcome::Missing(_)));
        }
        t
    }
}

/// An open (sub)test while walking the log.
struct Frame {
    depth: usize,
    name: Option<String>,
    plan: Option<usize>,
    results: usize,
    pending: Vec<String>,
    pending_records: Vec<Record>,
    cases: Vec<Case>,
    kinds: BTreeMap<String, usize>,
    /// Arrival time of its first line, of its last result (or first line), of its last line.
    started: Option<f64>,
    last_result: Option<f64>,
    last_line: Option<f64>,
}

impl Frame {
    fn new(depth: usize, name: Option<String>, at: Option<f64>) -> Frame {
        Frame {
            depth,
            name,
            plan: None,
            results: 0,
            pending: Vec::new(),
            pending_records: Vec::new(),
            cases: Vec::new(),
            kinds: BTreeMap::new(),
            started: at,
            last_result: at,
            last_line: at,
        }
    }

    /// A line at `at` belongs to this frame.
    fn saw(&mut self, at: Option<f64>) {
        if at.is_some() {
            self.last_line = at;
        }
    }
}

/// Seconds from `from` to `to`, when both are known.
fn span(from: Option<f64>, to: Option<f64>) -> Option<f64> {
    Some((to? - from?).max(0.0))
}

fn split_depth(text: &str) -> (usize, &str) {
    let spaces = text.bytes().take_while(|&b| b == b' ').count();
    (spaces / 2, &text[spaces..])
}

fn failure_of(r: &ktap::ResultLine<'_>, diags: &[String]) -> Outcome {
    let fails: Vec<&str> = diags.iter().filter_map(|d| d.strip_prefix("FAIL: ")).collect();
    let message = if !fails.is_empty() {
        fails.join("; ")
    } else if let Some(last) = diags.iter().rev().find(|d| !d.starts_with("cs: ")) {
        last.clone()
    } else if !r.reason.is_empty() {
        r.reason.to_string()
    } else {
        format!("not ok {} {}", r.number, r.description)
    };
    let kind = match r.directive {
        Some(Directive::Timeout) => "TIMEOUT",
        Some(Directive::Error) => "ERROR",
        _ if message.contains("exception") => "fault",
        _ => "check",
    };
    Outcome::Failed { message, kind: kind.to_string() }
}

/// Builds the JUnit report of `log`; `run` becomes the first suite's properties; `times` (the
/// log's line arrival times, if any) give the `time` attributes.
pub fn build(log: &Log, run: &RunInfo, times: Option<&LineTimes>) -> Report {
    let start = ktap::validate(log, ktap::Options { allow_unknown: true }).start;
    let base = log.name.rsplit('/').next().unwrap_or(&log.name);
    let top_name = base.strip_suffix(".log").unwrap_or(base).to_string();
    let mut suites = Vec::new();
    let Some(start) = start else {
        return Report { suites, time: None };
    };
    let at = |no: usize| times.and_then(|t| t.at(no));
    let start_at = at(log.lines[start].no);
    let mut stack = vec![Frame::new(0, None, start_at)];
    let mut subtest_name: Option<(usize, String)> = None;
    let mut run_props: Vec<(String, String)> = Vec::new();
    if let Value::Object(o) = run.to_json() {
        for (k, v) in o {
            run_props.push((format!("run.{k}"), v.as_str().map_or_else(|| v.to_string(), str::to_string)));
        }
    }
    let finish = |f: Frame, path: &[String], suites: &mut Vec<Suite>| {
        let mut cases = f.cases;
        if let Some(plan) = f.plan {
            if f.results < plan {
                let what = format!("the log ends after {} of {plan} planned results (crash, hang or capture timeout?)", f.results);
                cases.push(Case {
                    name: format!("(results {}..{plan} missing)", f.results + 1),
                    line: 0,
                    outcome: Outcome::Missing(what),
                    output: f.pending.clone(),
                    properties: Vec::new(),
                    time: span(f.last_result, f.last_line),
                });
            }
        }
        if cases.is_empty() {
            return;
        }
        let name = if path.is_empty() { top_name.clone() } else { path.join(".") };
        let properties = f.kinds.iter().map(|(k, n)| (format!("{name}.records.{k}"), n.to_string())).collect();
        let output = if f.results < f.plan.unwrap_or(0) { Vec::new() } else { f.pending };
        suites.push(Suite { name, cases, output, properties, time: span(f.started, f.last_line) });
    };
    let path_of = |stack: &[Frame]| -> Vec<String> { stack.iter().skip(1).map(|f| f.name.clone().unwrap_or_else(|| "?".into())).collect() };
    // Arrival time of a `# Subtest:` line that comes before its version line (the suite's start).
    let mut subtest_at: Option<f64> = None;
    for l in &log.lines[start + 1..] {
        let now = at(l.no);
        let (depth, content) = split_depth(&l.text);
        let content = content.trim_end();
        if content == "KTAP version 1" {
            let named = subtest_name.take().filter(|(d, _)| *d == depth);
            let began = if named.is_some() { subtest_at.take().or(now) } else { now };
            stack.push(Frame::new(depth, named.map(|(_, n)| n), began));
            continue;
        }
        if let Some(name) = content.strip_prefix("# Subtest:") {
            let name = name.trim().to_string();
            match stack.last_mut() {
                Some(top) if top.depth == depth && top.depth > 0 && top.name.is_none() && top.results == 0 => {
                    top.name = Some(name);
                    top.saw(now);
                }
                _ => {
                    subtest_name = Some((depth, name));
                    subtest_at = now;
                }
            }
            continue;
        }
        // A line shallower than the open subtest: a result closes it (the parent's result for
        // it, not a leaf); a diagnostic closes it only when it is complete (ktap.rst allows one
        // there, e.g. "# example failed"); anything else stays with it.
        let result = ktap::parse_result(content);
        let mut closed_child = false;
        while stack.len() > 1 && stack.last().is_some_and(|f| f.depth > depth) {
            let complete = stack.last().is_some_and(|f| f.plan.is_none_or(|p| f.results >= p));
            if !(result.is_some() || (content.starts_with('#') && complete)) {
                break;
            }
            let path = path_of(&stack);
            let f = stack.pop().expect("non-empty");
            finish(f, &path, &mut suites);
            closed_child = true;
        }
        let top = stack.last_mut().expect("the top frame stays");
        top.saw(now);
        if let Some(p) = content.strip_prefix("1..") {
            if top.plan.is_none() {
                top.plan = p.trim().parse().ok();
            }
            continue;
        }
        match result {
            Some(Ok(_)) if closed_child && top.depth == depth => {
                top.results += 1;
                top.pending.clear();
                top.pending_records.clear();
                top.last_result = now.or(top.last_result);
            }
            Some(Ok(r)) => {
                top.results += 1;
                let diags = std::mem::take(&mut top.pending);
                let recs = std::mem::take(&mut top.pending_records);
                let outcome = match r.directive {
                    Some(Directive::Skip) => Outcome::Skipped(r.reason.to_string()),
                    _ if r.is_failure() => failure_of(&r, &diags),
                    _ => Outcome::Passed,
                };
                let properties = recs
                    .iter()
                    .filter(|x| x.kind() == "metric")
                    .filter_map(|x| Metric::from_record(x).ok())
                    .map(|(m, _)| (m.key.to_string(), m.median.map_or("null".into(), |v| sig(v, 6))))
                    .collect();
                let time = span(top.last_result, now);
                top.last_result = now.or(top.last_result);
                top.cases.push(Case { name: r.description.to_string(), line: l.no, outcome, output: diags, properties, time });
            }
            Some(Err(_)) | None => {
                if let Some(Ok(obj)) = records::parse_line(content) {
                    let rec = Record { line: l.no, obj };
                    *top.kinds.entry(rec.kind().to_string()).or_default() += 1;
                    top.pending_records.push(rec);
                }
                let text = content.strip_prefix("# ").or_else(|| content.strip_prefix('#')).unwrap_or(content);
                top.pending.push(text.to_string());
            }
        }
    }
    while stack.len() > 1 {
        let path = path_of(&stack);
        let f = stack.pop().expect("non-empty");
        finish(f, &path, &mut suites);
    }
    if let Some(f) = stack.pop() {
        let mut f = f;
        // Top-level leaves only (a top-level plan counts suites, not these cases).
        f.plan = None;
        finish(f, &[], &mut suites);
    }
    // Top-level leaf results were pushed last; keep log order by line.
    suites.sort_by_key(|s| s.cases.iter().map(|c| c.line).filter(|&l| l > 0).min().unwrap_or(usize::MAX));
    // The run's parameters once, on the first suite (unique property names in the document).
    if let Some(first) = suites.first_mut() {
        first.properties.splice(0..0, run_props);
    }
    let time = span(start_at, log.lines.last().and_then(|l| at(l.no)));
    Report { suites, time }
}

/// ` time="S.SSS"` when known.
fn time_attr(t: Option<f64>) -> String {
    t.map(|t| format!(" time=\"{t:.3}\"")).unwrap_or_default()
}

fn properties(out: &mut String, indent: &str, props: &[(String, String)]) {
    if props.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}<properties>");
    for (k, v) in props {
        let _ = writeln!(out, "{indent}  <property name=\"{}\" value=\"{}\"/>", escape(k, true), escape(v, true));
    }
    let _ = writeln!(out, "{indent}</properties>");
}

impl Report {
    /// The JUnit XML text.
    pub fn to_xml(&self) -> String {
        let t = self.totals();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"cachescope\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"{}>",
            t.tests,
            t.failures,
            t.errors,
            t.skipped,
            time_attr(self.time)
        );
        for s in &self.suites {
            let name = escape(&s.name, true);
            let _ = writeln!(
                out,
                "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"{}>",
                s.cases.len(),
                s.count(|o| matches!(o, Outcome::Failed { .. })),
                s.count(|o| matches!(o, Outcome::Missing(_))),
                s.count(|o| matches!(o, Outcome::Skipped(_))),
                time_attr(s.time)
            );
            properties(&mut out, "    ", &s.properties);
            for c in &s.cases {
                let _ = write!(out, "    <testcase classname=\"{name}\" name=\"{}\"{}", escape(&c.name, true), time_attr(c.time));
                if c.outcome == Outcome::Passed && c.output.is_empty() && c.properties.is_empty() {
                    out.push_str("/>\n");
                    continue;
                }
                out.push_str(">\n");
                properties(&mut out, "      ", &c.properties);
                let body = escape(&c.output.join("\n"), false);
                match &c.outcome {
                    Outcome::Passed => {}
                    Outcome::Failed { message, kind } => {
                        let _ = writeln!(
                            out,
                            "      <failure message=\"{}\" type=\"{}\">{body}</failure>",
                            escape(message, true),
                            escape(kind, true)
                        );
                    }
                    Outcome::Skipped(reason) => {
                        let _ = writeln!(out, "      <skipped message=\"{}\"/>", escape(reason, true));
                    }
                    Outcome::Missing(what) => {
                        let _ = writeln!(out, "      <error message=\"{}\" type=\"incomplete\">{body}</error>", escape(what, true));
                    }
                }
                if !c.output.is_empty() {
                    let _ = writeln!(out, "      <system-out>{body}</system-out>");
                }
                out.push_str("    </testcase>\n");
            }
            if !s.output.is_empty() {
                let _ = writeln!(out, "    <system-out>{}</system-out>", escape(&s.output.join("\n"), false));
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(text: &str) -> Report {
        let log = Log::from_bytes("run.log", text.as_bytes());
        build(&log, &RunInfo::default(), None)
    }

    const LOG: &str = "noise\nKTAP version 1\n1..2\n  KTAP version 1\n  # Subtest: boot\n  1..3\n  # report line\n  ok 1 a\n  # FAIL: x == 1 <&> \u{1b}[31m\n  # more\n  not ok 2 b\n  ok 3 c # SKIP no PMU\n  # boot: pass:1 fail:1 skip:1\nnot ok 1 boot\n  KTAP version 1\n  # Subtest: mmu\n  1..1\n  # cs: {\"record\":\"metric\",\"bench\":\"x\",\"variant\":\"v\",\"attr\":\"wb\",\"bytes\":64,\"reps\":1,\"min\":1,\"median\":2,\"max\":3,\"mad\":0,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}\n  not ok 1 fault # TODO known\nok 2 mmu\n";

    #[test]
    fn suites_cases_failures_and_skips() {
        let r = report(LOG);
        assert_eq!(r.suites.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["boot", "mmu"]);
        assert_eq!(r.totals(), Totals { tests: 4, failures: 1, skipped: 1, errors: 0 });
        let boot = &r.suites[0];
        assert_eq!(boot.cases[0].output, ["report line"]);
        assert_eq!(boot.cases[1].outcome, Outcome::Failed { message: "x == 1 <&> \u{1b}[31m".into(), kind: "check".into() });
        assert_eq!(boot.cases[2].outcome, Outcome::Skipped("no PMU".into()));
        assert_eq!(boot.output, ["boot: pass:1 fail:1 skip:1"]);
        let mmu = &r.suites[1];
        assert_eq!(mmu.cases[0].outcome, Outcome::Passed, "TODO counts as passed, as in KTAP's counts");
        assert_eq!(mmu.cases[0].properties, [("x/v/wb/64 [cntvct ns]".to_string(), "2".to_string())]);
        assert_eq!(mmu.properties, [("mmu.records.metric".to_string(), "1".to_string())]);
        let xml = r.to_xml();
        assert!(xml.contains("<failure message=\"x == 1 &lt;&amp;&gt; \\x1b[31m\" type=\"check\">"), "{xml}");
        assert!(xml.contains("<skipped message=\"no PMU\"/>"), "{xml}");
        assert!(!xml.chars().any(|c| (c as u32) < 0x20 && c != '\n'), "{xml}");
    }

    #[test]
    fn property_names_are_unique_in_the_document() {
        // xunitparser keeps one property table for the whole file and refuses a repeated name.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/qemu-real.log");
        let log = Log::from_bytes(path, &std::fs::read(path).unwrap());
        let (recs, _) = records::extract(&log);
        let r = build(&log, &RunInfo::from_log(&log, &recs, Some("10.0.2")), None);
        assert_eq!(r.suites.len(), 4);
        let names: Vec<&str> = r.suites.iter().flat_map(|s| s.properties.iter().map(|(k, _)| k.as_str())).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(r.suites[0].properties.iter().any(|(k, v)| k == "run.qemu" && v == "10.0.2"), "the run's parameters, once");
        assert!(r.suites[1..].iter().all(|s| s.properties.iter().all(|(k, _)| k.starts_with(&format!("{}.records.", s.name)))));
    }

    #[test]
    fn times_come_from_the_line_arrival_times() {
        // LOG's 20 lines: 2 the KTAP line, 4 boot's version line, 8/11/12 its results a/b/c,
        // 13 its totals, 14 its result in the parent, 20 the last. Line k arrives at k seconds,
        // except that case b (line 11) took 9 s more: it and every later line arrive 9 s later.
        let log = Log::from_bytes("run.log", LOG.as_bytes());
        let n = log.lines.len();
        assert_eq!(n, 20);
        let t: Vec<f64> = (1..=n).map(|k| if k >= 11 { k as f64 + 9.0 } else { k as f64 }).collect();
        let r = build(&log, &RunInfo::default(), Some(&LineTimes(t)));
        let boot = &r.suites[0];
        let case_times: Vec<Option<f64>> = boot.cases.iter().map(|c| c.time).collect();
        // a: from the suite's first line (4) to its result (8); b: 8 → 20; c: 20 → 21.
        assert_eq!(case_times, [Some(4.0), Some(12.0), Some(1.0)]);
        assert_eq!(boot.time, Some(22.0 - 4.0), "first line (4) to the totals line (13 → 22)");
        assert_eq!(r.time, Some(29.0 - 2.0), "KTAP line (2) to the last line (20 → 29)");
        let xml = r.to_xml();
        assert!(xml.contains("<testcase classname=\"boot\" name=\"b\" time=\"12.000\">"), "{xml}");
        assert!(xml.contains("<testsuite name=\"boot\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"18.000\">"), "{xml}");
        // Without arrival times, no time attribute at all (nothing invented).
        assert!(!report(LOG).to_xml().contains("time="));
    }

    #[test]
    fn old_nesting_order_and_cut_logs() {
        // `# Subtest:` before the version line (the order before issue 15) names the suite too.
        let old = LOG.replace("  KTAP version 1\n  # Subtest: boot\n", "  # Subtest: boot\n  KTAP version 1\n");
        assert_eq!(report(&old).suites[0].name, "boot");
        // Cut inside the boot suite: its missing results are one error case.
        let cut: String = LOG.lines().take(9).map(|l| format!("{l}\n")).collect();
        let r = report(&cut);
        assert_eq!(r.totals(), Totals { tests: 2, failures: 0, skipped: 0, errors: 1 });
        assert!(matches!(&r.suites[0].cases[1].outcome, Outcome::Missing(m) if m.contains("after 1 of 3 planned results")));
        assert_eq!(report("no ktap here\n").suites, []);
    }

    #[test]
    fn top_level_leaves_and_exceptions() {
        let r = report("KTAP version 1\n1..2\n# FAIL: unexpected exception: data abort (ESR 0x96000010)\nnot ok 1 first\nok 2 second\n");
        assert_eq!(r.suites.len(), 1);
        assert_eq!(r.suites[0].name, "run");
        assert_eq!(
            r.suites[0].cases[0].outcome,
            Outcome::Failed { message: "unexpected exception: data abort (ESR 0x96000010)".into(), kind: "fault".into() }
        );
    }
}
