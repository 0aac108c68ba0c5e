//! KTAP version 1 line formats (Linux Documentation/dev-tools/ktap.rst). Pure: the runner prints
//! these lines, host tests pin their exact shape.

use core::fmt::{self, Write};

/// Result of one test as KTAP reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `ok`.
    Pass,
    /// `not ok`.
    Fail,
    /// `ok … # SKIP reason`.
    Skip,
}

/// Writes `ok N name`, `not ok N name` or `ok N name # SKIP reason` at `depth` (2 spaces each).
pub fn result_line(out: &mut dyn Write, depth: usize, n: usize, name: &str, verdict: Verdict, reason: &str) -> fmt::Result {
    indent(out, depth)?;
    match verdict {
        Verdict::Pass => write!(out, "ok {n} {name}"),
        Verdict::Fail => write!(out, "not ok {n} {name}"),
        Verdict::Skip => write!(out, "ok {n} {name} # SKIP {reason}"),
    }
}

/// Writes the header of a (sub)test list: `KTAP version 1`, optional `# Subtest: name`, `1..N`
/// — the order of ktap.rst's example and of KUnit, which Linux's `kunit_parser.py` requires.
pub fn header(out: &mut dyn Write, depth: usize, subtest: Option<&str>, planned: usize) -> fmt::Result {
    indent(out, depth)?;
    writeln!(out, "KTAP version 1")?;
    if let Some(name) = subtest {
        indent(out, depth)?;
        writeln!(out, "# Subtest: {name}")?;
    }
    indent(out, depth)?;
    write!(out, "1..{planned}")
}

/// Writes KUnit-style totals: `# Totals: pass:P fail:F skip:S total:T`.
pub fn totals_line(out: &mut dyn Write, depth: usize, label: &str, pass: usize, fail: usize, skip: usize) -> fmt::Result {
    indent(out, depth)?;
    write!(out, "# {label}: pass:{pass} fail:{fail} skip:{skip} total:{}", pass + fail + skip)
}

fn indent(out: &mut dyn Write, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        out.write_str("  ")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn shapes() {
        let mut s = String::new();
        header(&mut s, 1, Some("cache"), 3).unwrap();
        s.push('\n');
        result_line(&mut s, 1, 1, "decode", Verdict::Pass, "").unwrap();
        s.push('\n');
        result_line(&mut s, 1, 2, "el2", Verdict::Skip, "entered at EL1").unwrap();
        s.push('\n');
        result_line(&mut s, 0, 1, "cache", Verdict::Fail, "").unwrap();
        s.push('\n');
        totals_line(&mut s, 0, "Totals", 1, 1, 1).unwrap();
        assert_eq!(
            s,
            "  KTAP version 1\n  # Subtest: cache\n  1..3\n  ok 1 decode\n  ok 2 el2 # SKIP entered at EL1\nnot ok 1 cache\n# Totals: pass:1 fail:1 skip:1 total:3"
        );
    }
}
