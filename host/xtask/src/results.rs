//! The check of a lava-run: lava-run exits 0 even when test cases fail, so its log is read
//! instead. Every log line is one JSON object (`{"dt": …, "lvl": …, "msg": …}`, optionally as
//! a YAML list item `- {…}`): `"lvl": "results"` lines are LAVA's results, `"lvl": "target"`
//! lines are the console output of the board, i.e. the kernel's KTAP log of the same run.

use serde_json::Value;

use cachescope_report::ktap::cases::{self, Outcome, Run};

/// One `"lvl": "results"` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LavaResult {
    /// Test suite (`lava` for LAVA's own actions, else the monitor's name).
    pub definition: String,
    /// Test case id.
    pub case: String,
    /// `pass`, `fail`, `skip` or `unknown`.
    pub result: String,
    /// LAVA's error message for a failed `lava` case.
    pub error: Option<String>,
}

/// What a lava-run log holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LavaLog {
    /// Results, in order.
    pub results: Vec<LavaResult>,
    /// Console lines of the device, in order (LAVA's `target` and `feedback` messages).
    pub target: Vec<String>,
}

/// One log line as JSON; LAVA writes some values with a YAML tag (`"size": ! "123"`), which
/// is dropped first.
fn json_line(line: &str) -> Option<Value> {
    let line = line.trim();
    let line = line.strip_prefix("- ").unwrap_or(line);
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str(line).ok().or_else(|| serde_json::from_str(&line.replace(": ! \"", ": \"")).ok())
}

/// Reads a lava-run log (its stderr/stdout).
pub fn parse_log(text: &str) -> LavaLog {
    let mut log = LavaLog::default();
    for line in text.lines() {
        let Some(v) = json_line(line) else { continue };
        match v["lvl"].as_str() {
            Some("results") => {
                let m = &v["msg"];
                let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
                log.results.push(LavaResult {
                    definition: s("definition"),
                    case: s("case"),
                    result: s("result"),
                    error: m["error_msg"].as_str().map(str::to_string),
                });
            }
            // The target logger escapes quotes once more: `\"` in the decoded message is `"`.
            // What the device prints after the test monitor matched its end pattern is logged
            // as `feedback` (lava_dispatcher reads the rest of the connection then): the same
            // console, so the `end` record can arrive either way, depending on when QEMU wrote it.
            Some("target" | "feedback") => log.target.push(v["msg"].as_str().unwrap_or_default().replace("\\\"", "\"")),
            _ => {}
        }
    }
    log
}

/// Counts of a check that agreed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Cases compared.
    pub cases: usize,
    /// Suites' own result lines of the run (not LAVA test cases).
    pub suites: usize,
    /// Passed.
    pub pass: usize,
    /// Failed.
    pub fail: usize,
    /// Skipped.
    pub skip: usize,
}

/// Checks that LAVA's results for `suite` list exactly the KTAP leaf cases of `run` (a suite's
/// own result line is not a test case), in order, with
/// the same outcome; that LAVA's own job passed; that the run reached its `end` record and the
/// record's counts match the leaf cases; and that every name in `must_fail` is a failed case.
/// Returns every disagreement, not just the first.
pub fn check(log: &LavaLog, run: &Run, suite: &str, must_fail: &[String]) -> Result<Agreement, Vec<String>> {
    let mut problems = Vec::new();
    match log.results.iter().find(|r| r.definition == "lava" && r.case == "job") {
        None => problems.push("lava-run logged no result for the job itself (did it run?)".to_string()),
        Some(r) if r.result != "pass" => {
            problems.push(format!("LAVA job result: {} ({})", r.result, r.error.as_deref().unwrap_or("no error message")))
        }
        Some(_) => {}
    }
    if run.cases.is_empty() {
        problems.push(format!("the console log holds no KTAP case after '{}'", cases::START));
    }
    match run.end {
        None => problems.push("the console log has no end record: the run did not finish".to_string()),
        Some(end) => {
            let count = |o: Outcome| run.cases.iter().filter(|c| c.leaf && c.outcome == o).count() as u64;
            let got = (count(Outcome::Pass), count(Outcome::Fail), count(Outcome::Skip));
            if got != (end.passed, end.failed, end.skipped) {
                problems.push(format!(
                    "end record says passed {} failed {} skipped {}, the KTAP lines say {} {} {}",
                    end.passed, end.failed, end.skipped, got.0, got.1, got.2
                ));
            }
        }
    }
    let lava: Vec<&LavaResult> = log.results.iter().filter(|r| r.definition == suite).collect();
    // Leaf cases only: a suite's own result line is not a test case (else one failure shows as two).
    let leaves: Vec<&cases::Case> = run.cases.iter().filter(|c| c.leaf).collect();
    for i in 0..lava.len().max(leaves.len()) {
        match (leaves.get(i).copied(), lava.get(i)) {
            (Some(c), Some(r)) => {
                let id = cases::lava_case_id(&c.name);
                if r.case != id || r.result != c.outcome.lava() {
                    problems.push(format!(
                        "case {}: KTAP '{}' {} (LAVA id {id}), LAVA '{}' {}",
                        i + 1,
                        c.name,
                        c.outcome.lava(),
                        r.case,
                        r.result
                    ));
                }
            }
            (Some(c), None) => {
                problems.push(format!("case {}: KTAP '{}' {} is missing from LAVA's results", i + 1, c.name, c.outcome.lava()))
            }
            (None, Some(r)) => problems.push(format!("case {}: LAVA '{}' {} is not a KTAP case of the run", i + 1, r.case, r.result)),
            (None, None) => {}
        }
    }
    for c in run.cases.iter().filter(|c| !c.leaf) {
        let id = cases::lava_case_id(&c.name);
        if let Some(r) = lava.iter().find(|r| r.case == id && !leaves.iter().any(|l| cases::lava_case_id(&l.name) == id)) {
            problems.push(format!(
                "LAVA lists the suite '{}' ({}) as a test case: only leaf cases may be (its cases are already counted)",
                c.name, r.result
            ));
        }
    }
    for name in must_fail {
        let id = cases::lava_case_id(name);
        if !lava.iter().any(|r| r.case == id && r.result == "fail") {
            problems.push(format!("'{name}' should be in LAVA's results as fail (the deliberately failing case)"));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let n = |o: Outcome| leaves.iter().filter(|c| c.outcome == o).count();
    Ok(Agreement {
        cases: leaves.len(),
        suites: run.cases.iter().filter(|c| !c.leaf).count(),
        pass: n(Outcome::Pass),
        fail: n(Outcome::Fail),
        skip: n(Outcome::Skip),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(lvl: &str, msg: &str) -> String {
        format!("{{\"dt\": \"2026-11-30T12:00:00\", \"lvl\": \"{lvl}\", \"msg\": {msg}}}\n")
    }

    fn target(text: &str) -> String {
        text.lines().map(|l| line("target", &serde_json::to_string(&l.replace('"', "\\\"")).unwrap())).collect()
    }

    fn result(def: &str, case: &str, res: &str) -> String {
        line("results", &format!("{{\"case\": \"{case}\", \"definition\": \"{def}\", \"result\": \"{res}\"}}"))
    }

    const KTAP: &str = "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: selftest\n  1..2\n  not ok 1 unexpected-data-abort\n  ok 2 runs-after-abort # SKIP x\nnot ok 1 selftest\n# cs: {\"record\":\"end\",\"passed\":0,\"failed\":1,\"skipped\":1}\n";

    fn good_log() -> String {
        let mut s = line("info", "\"start\"");
        s += &line(
            "results",
            "{\"case\": \"file-download\", \"definition\": \"lava\", \"extra\": {\"size\": ! \"6804832\"}, \"result\": \"pass\"}",
        );
        s += &target(KTAP);
        s += &result("cachescope", "unexpected_data_abort", "fail");
        s += &result("cachescope", "runs_after_abort", "skip");
        s += &result("lava", "job", "pass");
        s
    }

    fn run_of(log: &LavaLog) -> Run {
        cases::parse(log.target.iter().map(String::as_str))
    }

    #[test]
    fn end_record_read_as_feedback() {
        // lava_dispatcher logged the end record as `feedback` (it came after the monitor's end
        // pattern matched): still the device's console, and the run finished.
        let (body, end) = KTAP.trim_end().rsplit_once('\n').unwrap();
        let mut text = good_log().replace(&target(KTAP), &target(body));
        text += &line("feedback", &serde_json::to_string(&end.replace('"', "\\\"")).unwrap());
        let log = parse_log(&text);
        assert_eq!(run_of(&log).end, run_of(&parse_log(&good_log())).end);
        assert!(run_of(&log).end.is_some());
        // Without it, the run did not finish.
        let log = parse_log(&good_log().replace(&target(KTAP), &target(body)));
        assert!(run_of(&log).end.is_none());
    }

    #[test]
    fn agreeing_run() {
        let log = parse_log(&good_log());
        assert_eq!(log.results.len(), 4);
        assert!(log.target.iter().any(|l| l == "# cs: {\"record\":\"end\",\"passed\":0,\"failed\":1,\"skipped\":1}"));
        let a = check(&log, &run_of(&log), "cachescope", &["unexpected-data-abort".into()]).unwrap();
        assert_eq!(a, Agreement { cases: 2, suites: 1, pass: 0, fail: 1, skip: 1 });
        // A monitor that also matched the suite's line (one failure shown twice) is refused.
        let twice = good_log()
            .replace(&result("lava", "job", "pass"), &(result("cachescope", "selftest", "fail") + &result("lava", "job", "pass")));
        let log = parse_log(&twice);
        let e = check(&log, &run_of(&log), "cachescope", &[]).unwrap_err();
        assert_eq!(
            e,
            [
                "case 3: LAVA 'selftest' fail is not a KTAP case of the run",
                "LAVA lists the suite 'selftest' (fail) as a test case: only leaf cases may be (its cases are already counted)"
            ]
        );
    }

    #[test]
    fn disagreements_are_all_reported() {
        let text = good_log().replace(
            "\"runs_after_abort\", \"definition\": \"cachescope\", \"result\": \"skip\"",
            "\"runs_after_abort\", \"definition\": \"cachescope\", \"result\": \"pass\"",
        );
        let text = text.replace(&result("cachescope", "unexpected_data_abort", "fail"), "");
        let log = parse_log(&text);
        let e = check(&log, &run_of(&log), "cachescope", &["runs-after-abort".into()]).unwrap_err();
        assert_eq!(
            e,
            [
                "case 1: KTAP 'unexpected-data-abort' fail (LAVA id unexpected_data_abort), LAVA 'runs_after_abort' pass",
                "case 2: KTAP 'runs-after-abort' skip is missing from LAVA's results",
                "'runs-after-abort' should be in LAVA's results as fail (the deliberately failing case)",
            ]
        );
    }

    #[test]
    fn failed_job_and_unfinished_run() {
        let text = good_log().replace(&result("lava", "job", "pass"), &result("lava", "job", "fail"));
        let text = text.lines().filter(|l| !l.contains("record")).collect::<Vec<_>>().join("\n");
        let log = parse_log(&text);
        let e = check(&log, &run_of(&log), "cachescope", &[]).unwrap_err();
        assert_eq!(e[0], "LAVA job result: fail (no error message)");
        assert_eq!(e[1], "the console log has no end record: the run did not finish");
        let e = check(&LavaLog::default(), &Run::default(), "cachescope", &[]).unwrap_err();
        assert_eq!(e.len(), 3);
    }
}
