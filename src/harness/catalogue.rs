//! Suites and cases as data, and the selection of what runs (`only=` / `skip=`). Pure.

use alloc::{string::String, vec::Vec};

use super::Ctx;

/// One test case: a KTAP leaf test.
pub struct Case {
    /// Stable name (`[a-z0-9-]`), addressed as `suite.case`.
    pub name: &'static str,
    /// The test body. It records checks, skips and expected faults on the context.
    pub run: fn(&mut Ctx),
}

/// A suite: a KTAP subtest holding cases.
pub struct Suite {
    /// Stable name, addressed by `only=name`.
    pub name: &'static str,
    /// Printed before the cases run (a report: the readable part of the main job), if any.
    pub report: Option<fn(&mut Ctx)>,
    /// The cases in order.
    pub cases: &'static [Case],
    /// Runs only when named by `only=` (self-tests of the harness: deliberate faults, hangs).
    pub on_request: bool,
}

/// What runs: for each selected suite, the indices of its selected cases.
pub type Selection = Vec<(usize, Vec<usize>)>;

/// Selects suites/cases. `only` entries are `suite` or `suite.case`; `skip` likewise.
/// An entry that names nothing is an error naming it.
pub fn select(suites: &[Suite], only: &[&str], skip: &[&str]) -> Result<Selection, String> {
    for pat in only.iter().chain(skip) {
        let found = match pat.split_once('.') {
            Some((s, c)) => suites.iter().any(|x| x.name == s && x.cases.iter().any(|k| k.name == c)),
            None => suites.iter().any(|x| x.name == *pat),
        };
        if !found {
            let mut known = String::new();
            for s in suites {
                if !known.is_empty() {
                    known.push_str(", ");
                }
                known.push_str(s.name);
            }
            return Err(alloc::format!("no suite or case named '{pat}' (suites: {known}; cases as suite.case)"));
        }
    }
    let hit = |pats: &[&str], s: &Suite, c: &Case| {
        pats.iter().any(|p| match p.split_once('.') {
            Some((ps, pc)) => ps == s.name && pc == c.name,
            None => *p == s.name,
        })
    };
    let mut sel = Vec::new();
    for (si, s) in suites.iter().enumerate() {
        let cases: Vec<usize> =
            s.cases.iter().enumerate().filter(|(_, c)| (only.is_empty() || hit(only, s, c)) && !hit(skip, s, c)).map(|(i, _)| i).collect();
        let named = only.iter().any(|p| p.split('.').next() == Some(s.name));
        let wanted_suite = named || (only.is_empty() && !s.on_request);
        if wanted_suite && (!cases.is_empty() || s.cases.is_empty()) {
            sel.push((si, cases));
        }
    }
    Ok(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nop(_: &mut Ctx) {}
    const CASES_A: &[Case] = &[Case { name: "x", run: nop }, Case { name: "y", run: nop }];
    const CASES_B: &[Case] = &[Case { name: "z", run: nop }];
    const SUITES: &[Suite] = &[
        Suite { name: "a", report: None, cases: CASES_A, on_request: false },
        Suite { name: "b", report: None, cases: CASES_B, on_request: false },
        Suite { name: "c", report: None, cases: CASES_B, on_request: true },
    ];

    #[test]
    fn all_by_default() {
        assert_eq!(select(SUITES, &[], &[]).unwrap(), [(0, alloc::vec![0, 1]), (1, alloc::vec![0])]);
    }

    #[test]
    fn only_and_skip() {
        assert_eq!(select(SUITES, &["b"], &[]).unwrap(), [(1, alloc::vec![0])]);
        assert_eq!(select(SUITES, &["a.y"], &[]).unwrap(), [(0, alloc::vec![1])]);
        assert_eq!(select(SUITES, &[], &["a.x", "b"]).unwrap(), [(0, alloc::vec![1])]);
    }

    #[test]
    fn on_request_only_when_named() {
        assert_eq!(select(SUITES, &["c"], &[]).unwrap(), [(2, alloc::vec![0])]);
        assert!(select(SUITES, &[], &[]).unwrap().iter().all(|(s, _)| *s != 2));
    }

    #[test]
    fn unknown_names_refused() {
        let e = select(SUITES, &["d"], &[]).unwrap_err();
        assert!(e.contains("'d'") && e.contains("a, b, c"), "{e}");
        assert!(select(SUITES, &["a.q"], &[]).is_err());
        assert!(select(SUITES, &[], &["zz"]).is_err());
    }
}
