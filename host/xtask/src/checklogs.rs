//! `catalogue check-logs`: the strict KTAP v1 + records-contract check of the report tool
//! (its library: [`cachescope_report::ktap::validate`], [`cachescope_report::contract::check_contract`])
//! over the logs the catalogue's rows left in target/cachescope-logs/.
//!
//! A row expected to exit 0 or 1 ran to its end: its log must pass. Any other status (bad
//! arguments, panic, timeout) cuts the run short: its log must be rejected, which proves the
//! checker catches truncated and non-KTAP output. Rows marked `usage_text` and rows without a log
//! are skipped.

use std::path::Path;

use cachescope_report::input::Log;
use cachescope_report::{contract, ktap, records};

use crate::catalogue::Row;
use crate::run::{say, Filter};

/// The problems the report tool's `check` finds in one log, as "FILE:LINE: message" lines.
pub fn problems(log: &Log) -> Vec<String> {
    let k = ktap::validate(log, ktap::Options { allow_unknown: false });
    let mut problems = k.problems.clone();
    problems.extend(contract::check_contract(log, &k));
    problems.sort_by_key(|p| p.line);
    problems
        .iter()
        .map(|p| if p.line == 0 { format!("{}: {}", log.name, p.msg) } else { format!("{}:{}: {}", log.name, p.line, p.msg) })
        .collect()
}

/// Checks every selected row's log; prints one line per log and a summary. Returns whether all
/// logs were judged as their rows require.
pub fn check(rows: &[Row], logs: &Path, root: &Path, filter: &Filter) -> Result<bool, String> {
    let (mut must_pass, mut must_fail, mut wrong) = (0, 0, 0);
    for row in rows.iter().filter(|r| filter.selects(r) && !r.usage_text) {
        let path = logs.join(format!("{}.log", row.name));
        if !path.is_file() {
            continue;
        }
        let shown = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let bytes = std::fs::read(&path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
        let log = Log::from_bytes(&shown, &bytes);
        let found = problems(&log);
        if matches!(row.exit, 0 | 1) {
            must_pass += 1;
            if found.is_empty() {
                let k = ktap::validate(&log, ktap::Options { allow_unknown: false });
                let c = k.leaves;
                say(&format!(
                    "{shown}: ok: KTAP v1, {} top-level results, {} leaf results ({} passed, {} failed, {} skipped), {} records",
                    k.top_results,
                    c.passed + c.failed + c.skipped,
                    c.passed,
                    c.failed,
                    c.skipped,
                    records::extract(&log).0.len()
                ));
            } else {
                wrong += 1;
                for p in found.iter().take(100) {
                    say(p);
                }
                say(&format!("{shown}: INVALID: {} problems", found.len()));
            }
        } else {
            must_fail += 1;
            match found.first() {
                None => {
                    wrong += 1;
                    say(&format!(
                        "check-logs: {shown} passed the check but its run ends early (exit {}: bad argument, panic or timeout): the checker missed it",
                        row.exit
                    ));
                }
                Some(first) => {
                    let why = first.strip_prefix(&format!("{shown}:")).unwrap_or(first);
                    let why =
                        why.split_once(": ").map_or(why, |(line, msg)| if line.chars().all(|c| c.is_ascii_digit()) { msg } else { why });
                    say(&format!("{shown}: rejected as expected ({})", why.trim()));
                }
            }
        }
    }
    say(&format!("check-logs: {must_pass} logs must pass, {must_fail} must be rejected: {}", if wrong == 0 { "ok" } else { "FAILED" }));
    Ok(wrong == 0)
}
