//! Strict KTAP version 1 validation (Linux Documentation/dev-tools/ktap.rst), in the profile
//! cachescope's harness prints.
//!
//! Rules (each violation is a [`Problem`] naming its line):
//! - Anything before the first `KTAP version 1` line is noise (QEMU warnings) and is skipped.
//!   That line must start in column 0. `TAP version 13/14` is not accepted.
//! - A (sub)test is: version line, then its plan `1..N` (only a `# Subtest: name` header may sit
//!   between them), then its results numbered 1, 2, … N, each `ok N desc` or `not ok N desc`,
//!   optionally `# DIRECTIVE reason` (SKIP, TODO, XFAIL, TIMEOUT, ERROR — upper case; TIMEOUT and
//!   ERROR only on `not ok`). A description cannot contain `#`.
//! - A subtest is indented two more spaces than its parent, from its version line to its last
//!   line; its `# Subtest: name` header (right after its version line, at the subtest's
//!   indentation: the order KUnit prints and Linux's `tools/testing/kunit/kunit_parser.py`
//!   requires) is required and must match the parent's result line, which closes it. A parent whose subtest failed must itself be `not ok`.
//! - Diagnostics (`# …`) sit at the current test's indentation; one at a shallower indentation
//!   is accepted only when every deeper subtest has all its planned results (the ktap.rst
//!   example puts "# example failed" just before the parent's result line).
//! - Indentation uses spaces only, two per level.
//! - Unknown lines (neither version, plan, result nor `#` diagnostic, including blank lines)
//!   are errors unless [`Options::allow_unknown`] is set (ktap.rst allows them; cachescope never
//!   prints them, so one means corrupted output).
//! - One document per log: a second top-level version line is an error.
//! - At the end every subtest must have its plan's number of results and its own result line;
//!   a log cut short by a panic, a hang or a capture timeout fails here.
//!
//! Leaf results (result lines without subtests) are counted for the `end` record check: SKIP
//! counts as skipped whatever its `ok`/`not ok`; `not ok` with TODO or XFAIL counts as passed
//! (an expected failure); every other `not ok` is failed, `ok` is passed.

pub mod cases;

use crate::input::{Log, LogLine, Problem};

/// Validation options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Accept unknown lines inside the document, as ktap.rst does.
    pub allow_unknown: bool,
}

/// Leaf result counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Passed leaves.
    pub passed: u64,
    /// Failed leaves.
    pub failed: u64,
    /// Skipped leaves.
    pub skipped: u64,
}

/// The result of validating one log.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Index (into `Log::lines`) of the top-level version line, if there is one.
    pub start: Option<usize>,
    /// Violations in line order.
    pub problems: Vec<Problem>,
    /// Leaf results.
    pub leaves: Counts,
    /// Number of top-level results.
    pub top_results: usize,
}

/// A directive of a result line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// `# SKIP`.
    Skip,
    /// `# TODO`.
    Todo,
    /// `# XFAIL`.
    Xfail,
    /// `# TIMEOUT`.
    Timeout,
    /// `# ERROR`.
    Error,
}

const DIRECTIVES: [(&str, Directive); 5] = [
    ("SKIP", Directive::Skip),
    ("TODO", Directive::Todo),
    ("XFAIL", Directive::Xfail),
    ("TIMEOUT", Directive::Timeout),
    ("ERROR", Directive::Error),
];

/// A parsed result line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLine<'a> {
    /// `ok` (true) or `not ok`.
    pub ok: bool,
    /// The test number.
    pub number: usize,
    /// The description (may be empty).
    pub description: &'a str,
    /// The directive, if any.
    pub directive: Option<Directive>,
    /// The text after the directive (or the diagnostic data without a directive).
    pub reason: &'a str,
}

impl ResultLine<'_> {
    /// Whether this result counts as a failure.
    pub fn is_failure(&self) -> bool {
        !self.ok && !matches!(self.directive, Some(Directive::Skip | Directive::Todo | Directive::Xfail))
    }
}

/// What a line (without its indentation) is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind<'a> {
    Version,
    OtherVersion,
    Plan(usize),
    BadPlan,
    Result(ResultLine<'a>),
    BadResult(String),
    Subtest(&'a str),
    Diagnostic,
    BadDiagnostic,
    Unknown,
}

/// Parses a result line; `None` if the text is not one at all, `Some(Err)` if it is a broken one.
pub fn parse_result(content: &str) -> Option<Result<ResultLine<'_>, String>> {
    let (ok, rest) = if let Some(r) = content.strip_prefix("not ok") {
        (false, r)
    } else if let Some(r) = content.strip_prefix("ok") {
        (true, r)
    } else {
        return None;
    };
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None; // "okay …" is not a result line
    }
    Some(parse_result_rest(ok, rest.strip_prefix(' ').unwrap_or(rest)))
}

fn parse_result_rest(ok: bool, rest: &str) -> Result<ResultLine<'_>, String> {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("result line without a test number".into());
    }
    let after = &rest[digits..];
    if !after.is_empty() && !after.starts_with(' ') {
        return Err(format!("malformed test number '{}'", rest.split(' ').next().unwrap_or(rest)));
    }
    let number: usize = rest[..digits].parse().map_err(|_| format!("test number {} is too large", &rest[..digits]))?;
    if number == 0 {
        return Err("test number 0: numbers start at 1".into());
    }
    let after = after.strip_prefix(' ').unwrap_or(after);
    let (description, tail) = if let Some(t) = after.strip_prefix('#') {
        ("", Some(t))
    } else if let Some(i) = after.find(" #") {
        (&after[..i], Some(&after[i + 2..]))
    } else {
        (after, None)
    };
    if description.contains('#') {
        return Err(format!("description '{description}' contains '#' (write ' # ' before a directive)"));
    }
    let description = description.trim();
    let mut directive = None;
    let mut reason = "";
    if let Some(tail) = tail {
        let tail = tail.trim();
        let (word, more) = tail.split_once(char::is_whitespace).unwrap_or((tail, ""));
        if let Some(&(_, d)) = DIRECTIVES.iter().find(|(w, _)| *w == word) {
            directive = Some(d);
            reason = more.trim();
        } else if let Some(&(w, _)) = DIRECTIVES.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
            return Err(format!("directive '{word}' must be written '{w}'"));
        } else {
            reason = tail;
        }
    }
    if ok && matches!(directive, Some(Directive::Timeout | Directive::Error)) {
        return Err(format!(
            "'ok' with a {} directive: a timed-out or erroring test is 'not ok'",
            if directive == Some(Directive::Timeout) { "TIMEOUT" } else { "ERROR" }
        ));
    }
    Ok(ResultLine { ok, number, description, directive, reason })
}

fn classify(content: &str) -> Kind<'_> {
    let content = content.trim_end();
    if content == "KTAP version 1" {
        return Kind::Version;
    }
    if content.starts_with("KTAP version") || content.starts_with("TAP version") {
        return Kind::OtherVersion;
    }
    if let Some(n) = content.strip_prefix("1..") {
        return match n.parse::<usize>() {
            Ok(n) if n.to_string() == content[3..] => Kind::Plan(n),
            _ => Kind::BadPlan,
        };
    }
    if content.split_once("..").is_some_and(|(a, _)| !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit())) {
        return Kind::BadPlan;
    }
    if let Some(r) = parse_result(content) {
        return match r {
            Ok(r) => Kind::Result(r),
            Err(e) => Kind::BadResult(e),
        };
    }
    if let Some(name) = content.strip_prefix("# Subtest:") {
        return Kind::Subtest(name.trim());
    }
    if content == "#" || content.starts_with("# ") {
        return Kind::Diagnostic;
    }
    if content.starts_with('#') {
        return Kind::BadDiagnostic;
    }
    Kind::Unknown
}

/// Splits a line into (depth, content) or explains why its indentation is wrong.
fn indentation(text: &str) -> Result<(usize, &str), String> {
    let spaces = text.bytes().take_while(|&b| b == b' ').count();
    let rest = &text[spaces..];
    if rest.starts_with('\t') {
        return Err("tab in the indentation (KTAP indents with two spaces per level)".into());
    }
    if spaces % 2 != 0 {
        return Err(format!("indented by {spaces} spaces, not a multiple of 2 (KTAP indents with two spaces per level)"));
    }
    Ok((spaces / 2, rest))
}

#[derive(Debug)]
struct Frame {
    line: usize,
    name: Option<String>,
    name_line: usize,
    plan: Option<usize>,
    results: usize,
    failures: usize,
    awaiting_plan: bool,
    header_allowed: bool,
}

impl Frame {
    fn new(line: usize) -> Self {
        Frame { line, name: None, name_line: 0, plan: None, results: 0, failures: 0, awaiting_plan: true, header_allowed: true }
    }

    fn complete(&self) -> bool {
        self.plan == Some(self.results)
    }

    fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("subtest '{n}' (line {})", self.line),
            None => format!("subtest at line {}", self.line),
        }
    }
}

fn snippet(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Validates the KTAP document in `log`.
pub fn validate(log: &Log, opts: Options) -> Outcome {
    let mut out = Outcome::default();
    let Some(start) = log.lines.iter().position(|l| l.defect.is_none() && l.text.trim_start_matches(' ').trim_end() == "KTAP version 1")
    else {
        match log.lines.iter().find(|l| classify(l.text.trim_start()) == Kind::OtherVersion) {
            Some(l) => out.problems.push(Problem::new(l.no, format!("'{}' is not 'KTAP version 1'", snippet(l.text.trim())))),
            None => {
                let hint = log
                    .lines
                    .iter()
                    .find(|l| l.defect.is_none() && !l.text.trim().is_empty())
                    .map(|l| format!("; first line {}: '{}'", l.no, snippet(l.text.trim())))
                    .unwrap_or_default();
                out.problems.push(Problem::new(0, format!("no 'KTAP version 1' line in {} lines: not a KTAP log{hint}", log.lines.len())));
            }
        }
        return out;
    };
    out.start = Some(start);
    let first = &log.lines[start];
    if first.text.starts_with(' ') {
        out.problems.push(Problem::new(first.no, "the first version line is indented: the top-level test starts in column 0"));
    }
    Validator { out, opts, stack: vec![Frame::new(first.no)], done: false }.run(&log.lines[start + 1..])
}

struct Validator {
    out: Outcome,
    opts: Options,
    stack: Vec<Frame>,
    done: bool,
}

impl Validator {
    fn problem(&mut self, line: usize, msg: impl Into<String>) {
        self.out.problems.push(Problem::new(line, msg));
    }

    fn cur(&self) -> usize {
        self.stack.len() - 1
    }

    fn top(&mut self) -> &mut Frame {
        self.stack.last_mut().expect("the root frame is never popped")
    }

    fn run(mut self, lines: &[LogLine]) -> Outcome {
        for l in lines {
            if self.done {
                break;
            }
            self.line(l);
        }
        self.finish(lines.last().map_or(0, |l| l.no));
        self.out
    }

    fn line(&mut self, l: &LogLine) {
        if let Some(d) = l.defect {
            self.problem(l.no, d.to_string());
            return;
        }
        let (depth, content) = match indentation(&l.text) {
            Ok(x) => x,
            Err(e) => {
                self.problem(l.no, e);
                return;
            }
        };
        let kind = classify(content);
        let cur = self.cur();
        match kind {
            Kind::Version => self.version(l.no, depth),
            Kind::OtherVersion => self.problem(l.no, format!("'{}' is not 'KTAP version 1'", snippet(content))),
            Kind::Subtest(name) => self.subtest_header(l.no, depth, name),
            Kind::Plan(n) => self.plan(l.no, depth, n),
            Kind::BadPlan => self.problem(l.no, format!("malformed plan line '{}' (expected '1..N')", snippet(content))),
            Kind::Result(r) => self.result(l.no, depth, &r),
            Kind::BadResult(e) => self.problem(l.no, e),
            Kind::Diagnostic => self.diagnostic(l.no, depth),
            Kind::BadDiagnostic => self.problem(l.no, format!("diagnostic '{}' must start with '# ' (hash, space)", snippet(content))),
            Kind::Unknown => {
                if !self.opts.allow_unknown {
                    let what = if content.is_empty() { "blank line".to_string() } else { format!("'{}'", snippet(content)) };
                    self.problem(l.no, format!("{what} is not a KTAP line (version, plan, result or '# ' diagnostic) at depth {cur}"));
                }
            }
        }
    }

    fn version(&mut self, no: usize, depth: usize) {
        let cur = self.cur();
        if depth == cur + 1 {
            if self.top().awaiting_plan {
                self.problem(no, "a subtest starts before its parent's plan line");
                self.top().awaiting_plan = false;
            }
            self.stack.push(Frame::new(no));
        } else if depth == 0 && self.stack.len() == 1 && self.stack[0].complete() {
            self.problem(no, "a second top-level 'KTAP version 1': one run per log (split the log); the rest is not checked");
            self.done = true;
        } else {
            self.problem(no, format!("version line at depth {depth}; a subtest here would be at depth {}", cur + 1));
        }
    }

    fn subtest_header(&mut self, no: usize, depth: usize, name: &str) {
        let cur = self.cur();
        if name.is_empty() {
            self.problem(no, "'# Subtest:' header without a name");
        }
        if depth == cur + 1 {
            self.problem(
                no,
                format!("'# Subtest: {name}' comes before the subtest's version line: KTAP (and Linux's kunit_parser) wants 'KTAP version 1' first, then '# Subtest:'"),
            );
        } else if depth == cur && self.top().header_allowed {
            let top = self.top();
            top.name = Some(name.to_string());
            top.name_line = no;
            top.header_allowed = false;
        } else {
            self.problem(no, format!("'# Subtest: {name}' header at depth {depth} is not next to a subtest's version line"));
        }
    }

    fn plan(&mut self, no: usize, depth: usize, n: usize) {
        let cur = self.cur();
        if depth != cur {
            self.problem(no, format!("plan line at depth {depth}, expected depth {cur}"));
            return;
        }
        let top = self.top();
        if let Some(p) = top.plan {
            let msg = format!("second plan line (1..{p} already given)");
            self.problem(no, msg);
            return;
        }
        let late = !top.awaiting_plan;
        top.plan = Some(n);
        top.awaiting_plan = false;
        top.header_allowed = false;
        if late {
            self.problem(no, "plan line must directly follow the version line (only a '# Subtest:' header may come between)");
        }
    }

    fn diagnostic(&mut self, no: usize, depth: usize) {
        let cur = self.cur();
        if depth == cur {
            if self.top().awaiting_plan {
                self.top().awaiting_plan = false;
                self.top().header_allowed = false;
                self.problem(no, "expected the plan line '1..N' after the version line, found a diagnostic");
            }
        } else if depth < cur {
            if let Some(f) = self.stack[depth + 1..].iter().find(|f| !f.complete()) {
                let msg = match f.plan {
                    Some(p) => format!(
                        "diagnostic at depth {depth} while {} at depth {cur} is incomplete ({} of {p} results)",
                        f.label(),
                        f.results
                    ),
                    None => format!("diagnostic at depth {depth} while {} at depth {cur} has no plan yet", f.label()),
                };
                self.problem(no, msg);
            }
        } else {
            self.problem(no, format!("diagnostic at depth {depth}, deeper than the current test (depth {cur})"));
        }
    }

    /// Closes frames deeper than `depth` (the result line at `no` ends them) and returns the
    /// summary of the direct child of the frame at `depth`: (label, name, name line, failed?).
    fn close_to(&mut self, no: usize, depth: usize) -> Option<(String, Option<String>, usize, bool)> {
        let mut child = None;
        while self.cur() > depth {
            let f = self.stack.pop().expect("cur > depth >= 0");
            match f.plan {
                None => self.problem(f.line, format!("{} has no plan line", f.label())),
                Some(p) if p != f.results => self.problem(no, format!("{} planned 1..{p} but has {} results", f.label(), f.results)),
                _ => {}
            }
            if self.cur() > depth {
                self.problem(
                    f.line,
                    format!("{} has no result line of its own (found one at line {no}, {} levels up)", f.label(), self.cur() + 1 - depth),
                );
            }
            child = Some((f.label(), f.name.clone(), f.name_line, f.failures > 0));
        }
        child
    }

    fn result(&mut self, no: usize, depth: usize, r: &ResultLine<'_>) {
        let cur = self.cur();
        if depth > cur {
            self.problem(no, format!("result line at depth {depth} inside a test at depth {cur} (missing version line?)"));
            return;
        }
        let child = self.close_to(no, depth);
        let top = self.top();
        top.header_allowed = false;
        let no_plan = std::mem::replace(&mut top.awaiting_plan, false);
        let expected = top.results + 1;
        let plan = top.plan;
        top.results += 1;
        if r.is_failure() {
            top.failures += 1;
        }
        if no_plan {
            self.problem(no, "result line before the plan line '1..N'");
        }
        if r.number != expected {
            self.problem(no, format!("test number {}, expected {expected} (numbers count 1, 2, … at each level)", r.number));
        }
        if let Some(p) = plan {
            if expected > p {
                self.problem(no, format!("result {expected} is beyond the plan 1..{p}"));
            }
        }
        match child {
            Some((label, name, name_line, child_failed)) => {
                match name {
                    None => self.problem(no, format!("{label} has no '# Subtest: name' header")),
                    Some(n) if n != r.description => self
                        .problem(no, format!("result '{}' closes a subtest whose header (line {name_line}) names it '{n}'", r.description)),
                    Some(_) => {}
                }
                if child_failed && r.ok {
                    self.problem(
                        no,
                        format!(
                            "'ok {} {}' but a subtest of it failed: a parent with a failed subtest is 'not ok'",
                            r.number, r.description
                        ),
                    );
                }
            }
            None => {
                let c = &mut self.out.leaves;
                if r.directive == Some(Directive::Skip) {
                    c.skipped += 1;
                } else if r.is_failure() {
                    c.failed += 1;
                } else {
                    c.passed += 1;
                }
            }
        }
    }

    fn finish(&mut self, last: usize) {
        while self.stack.len() > 1 {
            let f = self.stack.pop().expect("len > 1");
            let progress = match f.plan {
                Some(p) => format!("{} of {p} results", f.results),
                None => "no plan line".to_string(),
            };
            self.problem(
                f.line,
                format!(
                    "{} never got its result line ({progress}): the log ends at line {last} (crash, panic, hang or cut capture?)",
                    f.label()
                ),
            );
        }
        let root = &self.stack[0];
        let (line, plan, results) = (root.line, root.plan, root.results);
        self.out.top_results = results;
        match plan {
            None => self.problem(line, "the top-level test has no plan line '1..N'"),
            Some(p) if p != results => {
                self.problem(last, format!("the top-level plan is 1..{p} but the log has {results} top-level results (truncated log?)"))
            }
            _ => {}
        }
        self.out.problems.sort_by_key(|p| p.line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Outcome {
        validate(&Log::from_bytes("t", text.as_bytes()), Options::default())
    }

    fn problems(text: &str) -> Vec<String> {
        check(text).problems.iter().map(|p| p.to_string()).collect()
    }

    fn assert_valid_with_leaves(text: &str, (passed, failed, skipped): (u64, u64, u64)) {
        let o = check(text);
        assert_eq!(o.problems, vec![]);
        assert_eq!(o.leaves, Counts { passed, failed, skipped });
    }

    fn assert_one(text: &str, line: usize, needle: &str) {
        let p = problems(text);
        assert!(
            p.iter().any(|m| m.starts_with(&format!("{line}: ")) && m.contains(needle)),
            "expected a problem at line {line} containing {needle:?}, got {p:#?}"
        );
    }

    const VALID: &str = "\
qemu-system-aarch64: warning: some noise\r
KTAP version 1\r
1..2\r
# cs: {\"record\":\"boot\"}\r
  KTAP version 1\r
  # Subtest: boot\r
  1..3\r
  # a diagnostic\r
  ok 1 first\r
  not ok 2 second\r
  ok 3 third # SKIP not here\r
  # boot: pass:1 fail:1 skip:1 total:3\r
not ok 1 boot\r
ok 2 leaf # a note\r
# Totals: pass:2 fail:1 skip:1 total:4\r
";

    #[test]
    fn valid_document_with_noise_and_crlf() {
        let o = check(VALID);
        assert_eq!(o.problems, vec![], "{:#?}", o.problems);
        assert_eq!(o.start, Some(1));
        assert_eq!(o.leaves, Counts { passed: 2, failed: 1, skipped: 1 });
        assert_eq!(o.top_results, 2);
    }

    #[test]
    fn kunit_style_header_after_version_and_spec_parent_diagnostic() {
        let text = "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: s\n  1..1\n  not ok 1 a\n# s failed\nnot ok 1 s\n";
        assert_eq!(problems(text), Vec::<String>::new());
    }

    #[test]
    fn three_levels() {
        let text = "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: a\n  1..1\n    KTAP version 1\n    # Subtest: b\n    1..2\n    ok 1 x\n    ok 2 y # SKIP r\n  ok 1 b\nok 1 a\n";
        assert_valid_with_leaves(text, (1, 0, 1));
    }

    #[test]
    fn no_version_line() {
        assert_one(
            "cachescope: error: unknown argument 'bogus'\n",
            0,
            "no 'KTAP version 1' line in 1 lines: not a KTAP log; first line 1: 'cachescope: error: unknown argument 'bogus''",
        );
        assert_one("TAP version 14\n1..1\nok 1 a\n", 1, "'TAP version 14' is not 'KTAP version 1'");
        assert_one("", 0, "no 'KTAP version 1' line in 0 lines");
    }

    #[test]
    fn indented_first_version() {
        assert_one("  KTAP version 1\n1..0\n", 1, "first version line is indented");
    }

    #[test]
    fn missing_plan() {
        assert_one("KTAP version 1\nok 1 a\n", 2, "result line before the plan line");
        assert_one("KTAP version 1\n# diag\n1..1\nok 1 a\n", 2, "expected the plan line");
    }

    #[test]
    fn plan_mismatch() {
        assert_one("KTAP version 1\n1..3\nok 1 a\nok 2 b\n", 4, "top-level plan is 1..3 but the log has 2 top-level results");
        assert_one("KTAP version 1\n1..1\nok 1 a\nok 2 b\n", 4, "result 2 is beyond the plan 1..1");
        assert_one(
            "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: s\n  1..2\n  ok 1 a\nok 1 s\n",
            7,
            "subtest 's' (line 3) planned 1..2 but has 1 results",
        );
    }

    #[test]
    fn malformed_plan_and_second_plan() {
        assert_one("KTAP version 1\n1..x\n", 2, "malformed plan line '1..x'");
        assert_one("KTAP version 1\n0..1\n", 2, "malformed plan line");
        assert_one("KTAP version 1\n1..1\n1..1\nok 1 a\n", 3, "second plan line");
    }

    #[test]
    fn numbering() {
        assert_one("KTAP version 1\n1..2\nok 1 a\nok 3 b\n", 4, "test number 3, expected 2");
        assert_one("KTAP version 1\n1..1\nok 0 a\n", 3, "numbers start at 1");
        assert_one("KTAP version 1\n1..1\nok a\n", 3, "without a test number");
        assert_one("KTAP version 1\n1..1\nok 1a\n", 3, "malformed test number");
        assert_one("KTAP version 1\n1..1\nok 99999999999999999999999 a\n", 3, "too large");
    }

    #[test]
    fn numbering_restarts_in_each_subtest() {
        let text = "KTAP version 1\n1..2\n  KTAP version 1\n  # Subtest: a\n  1..1\n  ok 2 x\nok 1 a\n";
        assert_one(text, 6, "test number 2, expected 1");
    }

    #[test]
    fn directives() {
        assert_eq!(
            problems("KTAP version 1\n1..3\nok 1 a # SKIP why\nnot ok 2 b # TIMEOUT 30 s\nnot ok 3 c # XFAIL\n"),
            Vec::<String>::new()
        );
        assert_one("KTAP version 1\n1..1\nok 1 a # skip why\n", 3, "directive 'skip' must be written 'SKIP'");
        assert_one("KTAP version 1\n1..1\nok 1 a # TIMEOUT\n", 3, "'ok' with a TIMEOUT directive");
        assert_one("KTAP version 1\n1..1\nok 1 a#b\n", 3, "contains '#'");
        let r = parse_result("ok 2 entry-above-el1 # SKIP entered at EL1: the EL2/EL3 drop path").unwrap().unwrap();
        assert_eq!(
            (r.number, r.description, r.directive, r.reason),
            (2, "entry-above-el1", Some(Directive::Skip), "entered at EL1: the EL2/EL3 drop path")
        );
        assert_eq!(parse_result("okay"), None);
    }

    #[test]
    fn skip_counts_whatever_ok() {
        assert_valid_with_leaves("KTAP version 1\n1..2\nnot ok 1 a # SKIP r\nnot ok 2 b # TODO r\n", (1, 0, 1));
    }

    #[test]
    fn indentation_rules() {
        assert_one("KTAP version 1\n1..1\n ok 1 a\n", 3, "indented by 1 spaces, not a multiple of 2");
        assert_one("KTAP version 1\n1..1\n\tok 1 a\n", 3, "tab in the indentation");
        assert_one("KTAP version 1\n1..1\n  ok 1 a\n", 3, "result line at depth 1 inside a test at depth 0");
        assert_one("KTAP version 1\n1..1\n    KTAP version 1\n", 3, "version line at depth 2; a subtest here would be at depth 1");
        assert_one("KTAP version 1\n1..1\n  # deep\nok 1 a\n", 3, "diagnostic at depth 1, deeper than the current test");
    }

    #[test]
    fn subtest_header_rules() {
        assert_one("KTAP version 1\n1..1\n  KTAP version 1\n  1..1\n  ok 1 x\nok 1 s\n", 6, "has no '# Subtest: name' header");
        assert_one("KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: s\n  1..1\n  ok 1 x\nok 1 t\n", 7, "names it 's'");
        assert_one("KTAP version 1\n1..1\n  # Subtest: s\n  # other\n", 3, "comes before the subtest's version line");
        // The order this harness printed before: Linux's kunit_parser rejects it, so must we.
        assert_one(
            "KTAP version 1\n1..1\n  # Subtest: s\n  KTAP version 1\n  1..1\n  ok 1 x\nok 1 s\n",
            3,
            "wants 'KTAP version 1' first, then '# Subtest:'",
        );
        assert_one("KTAP version 1\n1..1\n# Subtest: s\nok 1 s\n", 3, "not next to a subtest's version line");
    }

    #[test]
    fn parent_must_fail_when_child_fails() {
        assert_one(
            "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: s\n  1..1\n  not ok 1 x\nok 1 s\n",
            7,
            "a parent with a failed subtest is 'not ok'",
        );
    }

    #[test]
    fn truncated_by_a_panic() {
        let text = "KTAP version 1\n1..1\n# cs: {}\n  KTAP version 1\n  # Subtest: panic\n  1..1\n# PANIC at src/x.rs:1:1: boom\n";
        let p = problems(text);
        assert!(p.iter().any(|m| m.starts_with("7: diagnostic at depth 0 while subtest 'panic' (line 4) at depth 1 is incomplete (0 of 1 results)")), "{p:#?}");
        assert!(
            p.iter()
                .any(|m| m.starts_with("4: subtest 'panic' (line 4) never got its result line (0 of 1 results): the log ends at line 7")),
            "{p:#?}"
        );
        assert!(p.iter().any(|m| m.starts_with("7: the top-level plan is 1..1 but the log has 0 top-level results")), "{p:#?}");
    }

    #[test]
    fn missing_own_result_line() {
        let text = "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: a\n  1..1\n    KTAP version 1\n    # Subtest: b\n    1..1\n    ok 1 x\nok 1 a\n";
        assert_one(text, 6, "subtest 'b' (line 6) has no result line of its own");
    }

    #[test]
    fn unknown_lines() {
        let text = "KTAP version 1\n1..1\nhello world\n\nok 1 a\n";
        assert_one(text, 3, "'hello world' is not a KTAP line");
        assert_one(text, 4, "blank line is not a KTAP line");
        assert_one("KTAP version 1\n1..1\n#nospace\nok 1 a\n", 3, "must start with '# '");
        let lenient = validate(&Log::from_bytes("t", text.as_bytes()), Options { allow_unknown: true });
        assert_eq!(lenient.problems, vec![]);
    }

    #[test]
    fn second_document() {
        assert_one("KTAP version 1\n1..1\nok 1 a\nKTAP version 1\n1..1\nok 1 a\n", 4, "a second top-level 'KTAP version 1'");
    }

    #[test]
    fn garbage_inside_document() {
        let mut bytes = b"KTAP version 1\n1..1\n".to_vec();
        bytes.extend_from_slice(b"\x00\x01\xff\xfe\n");
        bytes.extend_from_slice(b"ok 1 a\n");
        let o = validate(&Log::from_bytes("t", &bytes), Options::default());
        assert_eq!(o.problems.len(), 1, "{:?}", o.problems);
        assert!(o.problems[0].msg.contains("not UTF-8"), "{:?}", o.problems);
    }

    #[test]
    fn garbage_before_document_is_noise() {
        let mut bytes = b"\xff\xfe\x00garbage\n".to_vec();
        bytes.extend_from_slice(b"KTAP version 1\n1..1\nok 1 a\n");
        assert_eq!(validate(&Log::from_bytes("t", &bytes), Options::default()).problems, vec![]);
    }
}
