//! The KTAP cases of one run, read from the console log: what LAVA's results must list.
//!
//! Only what the LAVA comparison needs: every result line (`ok N name`, `not ok N name`,
//! `ok N name # SKIP reason`) at any depth (two spaces per level), between the first
//! `KTAP version 1` line and the `end` record. Header order inside a nested suite
//! (`# Subtest:` before or after `KTAP version 1`) does not matter here. The strict checker is
//! the parent module's [`super::validate`] (`scripts/report check`); this lenient reader is what
//! the LAVA comparison (xtask's `lava-check` and results) needs, with the one result-line parser
//! ([`super::parse_result`]).

use super::Directive;

/// The outcome of one case, in LAVA's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `ok` without a SKIP directive.
    Pass,
    /// `not ok` without a SKIP directive.
    Fail,
    /// `# SKIP` directive.
    Skip,
}

impl Outcome {
    /// LAVA's result word.
    pub fn lava(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
        }
    }
}

/// One KTAP result line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Nesting depth (0 = top level).
    pub depth: usize,
    /// Test number.
    pub number: u64,
    /// Test name as printed.
    pub name: String,
    /// Outcome.
    pub outcome: Outcome,
    /// False for a suite's own result line (its subtests came before it).
    pub leaf: bool,
}

/// The counts of the kernel's `end` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndCounts {
    /// Passed leaf cases.
    pub passed: u64,
    /// Failed leaf cases.
    pub failed: u64,
    /// Skipped leaf cases.
    pub skipped: u64,
}

/// The cases of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Every result line, in order.
    pub cases: Vec<Case>,
    /// The `end` record, when the run got that far.
    pub end: Option<EndCounts>,
}

/// The first KTAP line of a run: LAVA's monitor start string.
pub const START: &str = "KTAP version 1";
/// The start of the kernel's `end` record line.
pub const END_RECORD: &str = "# cs: {\"record\":\"end\"";

/// A result line: (depth, number, name, outcome), or `None` for any other line. The line is
/// read by the report tool's KTAP parser (`super::parse_result`), the one
/// parser of result lines; a malformed one is not a case.
pub fn result_line(line: &str) -> Option<(usize, u64, String, Outcome)> {
    let body = line.trim_end_matches(['\r', '\n']);
    let content = body.trim_start_matches(' ');
    let depth = (body.len() - content.len()) / 2;
    let r = super::parse_result(content)?.ok()?;
    // TAP's optional "- " before the description is not part of the name.
    let name = r.description.trim();
    let name = name.strip_prefix("- ").unwrap_or(name).trim();
    if name.is_empty() {
        return None;
    }
    let outcome = match r.directive {
        Some(Directive::Skip) => Outcome::Skip,
        _ if r.ok => Outcome::Pass,
        _ => Outcome::Fail,
    };
    Some((depth, r.number as u64, name.to_string(), outcome))
}

/// Reads the run from console lines.
pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Run {
    let mut run = Run::default();
    let mut started = false;
    // deeper[d]: a result deeper than d was seen since the last result at depth d.
    let mut deeper: Vec<bool> = Vec::new();
    for line in lines {
        if !started {
            started = line.trim() == START;
            continue;
        }
        if line.trim_start().starts_with(END_RECORD) {
            run.end = end_counts(line.trim_start());
            break;
        }
        let Some((depth, number, name, outcome)) = result_line(line) else { continue };
        if deeper.len() <= depth {
            deeper.resize(depth + 1, false);
        }
        let leaf = !deeper[depth];
        for d in deeper.iter_mut().skip(depth) {
            *d = false;
        }
        for d in deeper.iter_mut().take(depth) {
            *d = true;
        }
        run.cases.push(Case { depth, number, name, outcome, leaf });
    }
    run
}

fn end_counts(line: &str) -> Option<EndCounts> {
    let r = crate::records::parse_line(line)?.ok()?;
    let n = |k: &str| r.get(k).and_then(serde_json::Value::as_u64);
    Some(EndCounts { passed: n("passed")?, failed: n("failed")?, skipped: n("skipped")? })
}

/// The test-case id LAVA makes from a name (lava_dispatcher's test monitor: strip, lower-case,
/// every run of non-word characters becomes one `_`).
pub fn lava_case_id(name: &str) -> String {
    let mut out = String::new();
    let mut in_run = false;
    for c in name.trim().to_lowercase().chars() {
        if c.is_alphanumeric() || c == '_' {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELFTEST: &str = "noise\nKTAP version 1\n1..2\n# cs: {\"record\":\"boot\"}\n  # Subtest: boot\n  KTAP version 1\n  1..2\n  ok 1 runs-at-el1\n  ok 2 entry-above-el1 # SKIP entered at EL1\n  # boot: pass:1\nok 1 boot\n  KTAP version 1\n  # Subtest: selftest\n  1..2\n  not ok 1 unexpected-data-abort\n  ok 2 runs-after-abort\nnot ok 2 selftest\n# cs: {\"record\":\"end\",\"passed\":2,\"failed\":1,\"skipped\":1}\nok 9 after-the-end\n";

    #[test]
    fn cases_in_both_header_orders() {
        let run = parse(SELFTEST.lines());
        let got: Vec<(usize, &str, Outcome, bool)> = run.cases.iter().map(|c| (c.depth, c.name.as_str(), c.outcome, c.leaf)).collect();
        assert_eq!(
            got,
            [
                (1, "runs-at-el1", Outcome::Pass, true),
                (1, "entry-above-el1", Outcome::Skip, true),
                (0, "boot", Outcome::Pass, false),
                (1, "unexpected-data-abort", Outcome::Fail, true),
                (1, "runs-after-abort", Outcome::Pass, true),
                (0, "selftest", Outcome::Fail, false),
            ]
        );
        assert_eq!(run.end, Some(EndCounts { passed: 2, failed: 1, skipped: 1 }));
    }

    #[test]
    fn nothing_before_the_start() {
        assert_eq!(parse("ok 1 early\n".lines()), Run::default());
    }

    #[test]
    fn result_lines() {
        assert_eq!(result_line("ok 1 a"), Some((0, 1, "a".into(), Outcome::Pass)));
        assert_eq!(result_line("    not ok 12 b-c\r"), Some((2, 12, "b-c".into(), Outcome::Fail)));
        assert_eq!(result_line("ok 3 - d # SKIP why"), Some((0, 3, "d".into(), Outcome::Skip)));
        assert_eq!(result_line("not ok 3 d # SKIP why"), Some((0, 3, "d".into(), Outcome::Skip)));
        assert_eq!(result_line("ok 4 e # TODO later"), Some((0, 4, "e".into(), Outcome::Pass)));
        assert_eq!(result_line("  # ok 1 comment"), None);
        assert_eq!(result_line("okay 1 x"), None);
        assert_eq!(result_line("ok x y"), None);
        assert_eq!(result_line("ok 1"), None);
    }

    #[test]
    fn case_ids_as_lava_makes_them() {
        assert_eq!(lava_case_id("runs-at-el1"), "runs_at_el1");
        assert_eq!(lava_case_id(" Alias WB->NC "), "alias_wb_nc");
        assert_eq!(lava_case_id("a__b"), "a__b");
    }

    #[test]
    fn real_log_fixture() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qemu-real.log");
        let text = std::fs::read_to_string(path).unwrap();
        let run = parse(text.lines());
        let end = run.end.expect("end record");
        let leaves = run.cases.iter().filter(|c| c.leaf);
        let count = |o| leaves.clone().filter(|c| c.outcome == o).count() as u64;
        assert_eq!((count(Outcome::Pass), count(Outcome::Fail), count(Outcome::Skip)), (end.passed, end.failed, end.skipped));
        assert_eq!(run.cases.iter().filter(|c| !c.leaf).count(), 4);
    }
}
