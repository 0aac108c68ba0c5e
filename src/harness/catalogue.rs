//! Suites and cases as data, and the plan of a run: the command line parsed against the
//! arguments the suites declare, what runs (`only=` / `skip=`), and each selected suite's own
//! check of its arguments against the machine. Pure.

use alloc::{format, string::String, vec::Vec};
use core::fmt::{self, Write};

use super::args::{self, ArgDefault, ArgKind, ArgSpec, Args, Shown};
use super::Ctx;
use crate::boot_info::BootInfo;

/// One test case: a KTAP leaf test.
pub struct Case {
    /// Stable name (`[a-z0-9-]`), addressed as `suite.case`.
    pub name: &'static str,
    /// The test body. It records checks, skips and expected faults on the context.
    pub run: fn(&mut Ctx),
}

/// A suite's check of its arguments against the machine: `Err` names the argument and why.
pub type Validator = fn(&Ctx) -> Result<(), String>;

/// A suite: a KTAP subtest holding cases.
pub struct Suite {
    /// Stable name, addressed by `only=name`.
    pub name: &'static str,
    /// Printed before the cases run (a report: the readable part of the main job), if any.
    pub report: Option<fn(&mut Ctx)>,
    /// The cases in order.
    pub cases: &'static [Case],
    /// Runs only when named by `only=` (self-tests of the harness: deliberate faults, hangs);
    /// never listed to users.
    pub on_request: bool,
    /// The kernel arguments this suite reads, each declared once with type, default and help.
    pub args: &'static [ArgSpec],
    /// Checks the arguments against the machine before anything runs (sizes that do not fit
    /// the arena or the heap, shapes the code cannot run); the message names the argument.
    pub validate: Option<Validator>,
}

/// The arguments of the selection itself.
pub const SELECTION_ARGS: &[ArgSpec] = &[
    ArgSpec { key: "only", kind: ArgKind::NameList, default: ArgDefault::Unset, help: "run only these suites or suite.case entries" },
    ArgSpec { key: "skip", kind: ArgKind::NameList, default: ArgDefault::Unset, help: "leave out these suites or suite.case entries" },
];

/// What runs: for each selected suite, the indices of its selected cases.
pub type Selection = Vec<(usize, Vec<usize>)>;

/// A run, planned: typed arguments and the selection.
pub struct Plan {
    /// The parsed arguments.
    pub args: Args,
    /// What runs.
    pub selection: Selection,
}

/// What the command line asks for.
pub enum Request {
    /// `help`: print [`write_help`] and stop.
    Help,
    /// Run this plan.
    Run(Plan),
}

/// The names a user may address: suites not `on_request`, for suggestions and listings.
fn public(suites: &[Suite]) -> impl Iterator<Item = &Suite> {
    suites.iter().filter(|s| !s.on_request)
}

/// Every argument spec: the selection's, then each suite's (a key two suites share is
/// declared by the first).
pub fn all_specs(suites: &[Suite]) -> Vec<ArgSpec> {
    let mut specs = Vec::from(SELECTION_ARGS);
    for s in suites {
        for a in s.args {
            if !specs.iter().any(|x| x.key == a.key) {
                specs.push(*a);
            }
        }
    }
    specs
}

/// Plans a run of `suites` from `cmdline` on the machine `boot` describes. Every refusal is
/// one message that names the offending word.
pub fn plan(suites: &[Suite], cmdline: &str, boot: &BootInfo) -> Result<Request, String> {
    if args::wants_help(cmdline) {
        return Ok(Request::Help);
    }
    let args = Args::parse(cmdline, &all_specs(suites)).map_err(|e| format!("{e}"))?;
    let selection = select(suites, &args.list("only"), &args.list("skip"))?;
    if selection.iter().all(|(_, cases)| cases.is_empty()) {
        return Err(format!(
            "nothing to run: only='{}' skip='{}' leave no case selected",
            Shown(&args.list("only").join(",")),
            Shown(&args.list("skip").join(","))
        ));
    }
    for key in args.given_keys() {
        if SELECTION_ARGS.iter().any(|s| s.key == *key) {
            continue;
        }
        let owners: Vec<&str> = suites.iter().filter(|s| s.args.iter().any(|a| a.key == *key)).map(|s| s.name).collect();
        if !selection.iter().any(|(si, _)| owners.contains(&suites[*si].name)) {
            return Err(format!("argument '{key}' is for suite {}, which this run does not select", owners.join(", ")));
        }
    }
    let ctx = Ctx::new(boot, &args);
    for (si, _) in &selection {
        if let Some(validate) = suites[*si].validate {
            validate(&ctx).map_err(|e| format!("{}: {e}", suites[*si].name))?;
        }
    }
    Ok(Request::Run(Plan { args, selection }))
}

/// Writes the help: how arguments are given, the selection's arguments, each public suite's
/// cases and arguments.
pub fn write_help(out: &mut dyn Write, suites: &[Suite], prefix: &str) -> fmt::Result {
    writeln!(out, "{prefix}arguments are key=value words; 'help' prints this")?;
    args::write_usage(out, SELECTION_ARGS, prefix)?;
    for s in public(suites) {
        write!(out, "{prefix}suite {}:", s.name)?;
        for c in s.cases {
            write!(out, " {}", c.name)?;
        }
        writeln!(out)?;
        args::write_usage(out, s.args, prefix)?;
    }
    Ok(())
}

/// Selects suites/cases. `only` entries are `suite` or `suite.case`; `skip` likewise.
/// An entry that names nothing is an error naming it (with the nearest public name).
pub fn select(suites: &[Suite], only: &[&str], skip: &[&str]) -> Result<Selection, String> {
    for pat in only.iter().chain(skip) {
        let found = match pat.split_once('.') {
            Some((s, c)) => suites.iter().any(|x| x.name == s && x.cases.iter().any(|k| k.name == c)),
            None => suites.iter().any(|x| x.name == *pat),
        };
        if !found {
            let mut known = String::new();
            for s in public(suites) {
                if !known.is_empty() {
                    known.push_str(", ");
                }
                known.push_str(s.name);
            }
            let names = public(suites)
                .flat_map(|s| core::iter::once(String::from(s.name)).chain(s.cases.iter().map(move |c| format!("{}.{}", s.name, c.name))));
            let names: Vec<String> = names.collect();
            let hint = match args::nearest(pat, names.iter().map(String::as_str)) {
                Some(n) => format!(" (did you mean '{n}'?)"),
                None => String::new(),
            };
            return Err(format!("no suite or case named '{}'{hint} (suites: {known}; cases as suite.case)", Shown(pat)));
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
    const N: ArgSpec = ArgSpec { key: "n", kind: ArgKind::Number { min: 1, max: 100 }, default: ArgDefault::Literal("3"), help: "n" };
    fn small(ctx: &Ctx) -> Result<(), String> {
        if ctx.args.number("n") > 50 {
            Err("n=… above 50 does not fit this machine".into())
        } else {
            Ok(())
        }
    }
    const SUITES: &[Suite] = &[
        Suite { name: "a", report: None, cases: CASES_A, on_request: false, args: &[N], validate: Some(small) },
        Suite { name: "b", report: None, cases: CASES_B, on_request: false, args: &[], validate: None },
        Suite { name: "c", report: None, cases: CASES_B, on_request: true, args: &[], validate: None },
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
        assert!(e.contains("'d'") && e.contains("suites: a, b;"), "internal suites are not offered: {e}");
        let e = select(SUITES, &["a.xx"], &[]).unwrap_err();
        assert!(e.contains("did you mean 'a.x'?"), "{e}");
        let e = select(SUITES, &[&"q".repeat(5000)], &[]).unwrap_err();
        assert!(e.len() < 200, "clipped: {}", e.len());
        assert!(select(SUITES, &["a.q"], &[]).is_err());
        assert!(select(SUITES, &[], &["zz"]).is_err());
    }

    fn run(cmdline: &str) -> Result<Plan, String> {
        match plan(SUITES, cmdline, &BootInfo::default())? {
            Request::Run(p) => Ok(p),
            Request::Help => Err("help".into()),
        }
    }

    #[test]
    fn plans_refuse_what_cannot_run() {
        assert_eq!(run("").unwrap().selection.len(), 2);
        assert_eq!(run("only=a n=7").unwrap().args.number("n"), 7);
        let e = run("only=a skip=a").err().unwrap();
        assert!(e.starts_with("nothing to run"), "{e}");
        let e = run("only=b n=3").err().unwrap();
        assert_eq!(e, "argument 'n' is for suite a, which this run does not select");
        let e = run("n=60").err().unwrap();
        assert_eq!(e, "a: n=… above 50 does not fit this machine");
        assert_eq!(run("help").err().unwrap(), "help");
        let e = run("m=1").err().unwrap();
        assert!(e.contains("unknown argument 'm' (did you mean 'n'?)"), "{e}");
    }

    #[test]
    fn help_lists_public_suites_and_their_arguments() {
        let mut s = String::new();
        write_help(&mut s, SUITES, "# ").unwrap();
        assert!(s.contains("# suite a: x y\n#   n=N (1..=100)  — n (default 3)\n"), "{s}");
        assert!(!s.contains("suite c"), "{s}");
    }
}
