//! Expectation files (`cachescope-xtask observe --expect FILE`): what a run of foreign firmware
//! must report, checked against its model log with the firmware's symbols.
//!
//! ```toml
//! # zero [[hazard]] tables = the run must report no hazards
//! allow_warnings = ["attribution"]     # optional: model-warning causes allowed; any other warning fails
//! [[hazard]]
//! kind = "stale-instruction"           # the hazard kind exactly as the model log names it
//! function = "copy_and_run"            # symbol of the exposing PC
//! line = "el1_icache.S:57"             # basename:line of the exposing PC
//! cause_function = "copy_and_run"      # optional: symbol of the cause PC
//!
//! [[hazard]]                            # an image without symbols (a vmlinuz): the exposing PC
//! kind = "stale-instruction"
//! pc = "0xffff80008003c368"             # instead of function and line
//! cause_pc = "0xffff8000803246fc"       # optional, instead of cause_function
//! ```
//!
//! Advisory kinds ([`Severity::Advisory`]: `shared-line`) are judged only when the file lists at
//! least one hazard of that kind; otherwise they are reported, not checked (as a kernel phase's
//! verdict treats them).
//!
//! Every `[[hazard]]` must match exactly one reported hazard and every reported hazard must
//! match exactly one entry. A reported hazard is a site ([`Observed::sites`]): the records of one
//! kind from one exposing PC after one cause PC (a loop that reads a whole buffer without its
//! clean raises one record per line, one site). A warning whose cause is not listed fails (one without a cause
//! always does), so does a hazard list the plugin's bound cut short, and a model log without
//! its end-of-run records (its hazards are not all known).

use serde::Deserialize;

use cachescope_arch::hazard::{HazardKind, Severity};
use cachescope_arch::warning::WarningCause;

use crate::firmware::{Hazard, Observed, Site};
use crate::symbols::Symbols;

/// One expected hazard, as written in the file (checked by [`Expectation::parse`]).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The kind, as the model log names it.
    pub kind: String,
    /// The exposing PC's function (with `line`; or `pc`).
    #[serde(default)]
    pub function: Option<String>,
    /// The exposing PC's `basename:line` (with `function`).
    #[serde(default)]
    pub line: Option<String>,
    /// The exposing PC itself, `0x…`, for an image without symbols (instead of function and line).
    #[serde(default)]
    pub pc: Option<String>,
    /// The cause PC's function, when checked.
    #[serde(default)]
    pub cause_function: Option<String>,
    /// The cause PC itself, `0x…`, when checked without symbols.
    #[serde(default)]
    pub cause_pc: Option<String>,
}

/// An expectation file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Warning causes allowed.
    #[serde(default)]
    pub allow_warnings: Vec<String>,
    /// The hazards, exactly.
    #[serde(default, rename = "hazard")]
    pub hazards: Vec<Expected>,
}

/// `0x…` (or decimal) as a PC; `None` if it is not one.
fn parse_pc(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

impl Expected {
    fn describe(&self) -> String {
        let cause = match (&self.cause_function, &self.cause_pc) {
            (Some(c), _) => format!(" (cause in {c})"),
            (None, Some(c)) => format!(" (cause at {c})"),
            (None, None) => String::new(),
        };
        match (&self.function, &self.line, &self.pc) {
            (Some(f), Some(l), _) => format!("{} in {f} at {l}{cause}", self.kind),
            (_, _, Some(pc)) => format!("{} at pc {pc}{cause}", self.kind),
            _ => format!("{}{cause}", self.kind),
        }
    }

    /// Whether it names a function and line (so needs the firmware's symbols).
    fn needs_symbols(&self) -> bool {
        self.pc.is_none() || (self.cause_function.is_some())
    }

    fn matches(&self, h: &Hazard, syms: Option<&Symbols>) -> bool {
        if h.kind != self.kind {
            return false;
        }
        let place_ok = match (&self.pc, &self.function, &self.line, syms) {
            (Some(pc), _, _, _) => parse_pc(pc) == Some(h.pc),
            (None, Some(f), Some(l), Some(s)) => {
                let p = s.place(h.pc);
                p.function.as_deref() == Some(f.as_str()) && p.file_line().as_deref() == Some(l.as_str())
            }
            _ => false,
        };
        if !place_ok {
            return false;
        }
        match (&self.cause_function, &self.cause_pc) {
            (Some(c), _) => h.cause_pc != 0 && syms.is_some_and(|s| s.place(h.cause_pc).function.as_deref() == Some(c.as_str())),
            (None, Some(c)) => parse_pc(c) == Some(h.cause_pc),
            (None, None) => true,
        }
    }
}

fn reported(site: &Site, syms: Option<&Symbols>) -> String {
    let h: &Hazard = &site.first;
    let (f, l) = match syms {
        Some(s) => {
            let p = s.place(h.pc);
            (p.function.clone().unwrap_or_else(|| "?".into()), p.file_line().unwrap_or_else(|| "?".into()))
        }
        None => ("?".into(), "?".into()),
    };
    let cause = match syms {
        Some(s) if h.cause_pc != 0 => s.place(h.cause_pc).function.unwrap_or_else(|| format!("{:#x}", h.cause_pc)),
        _ => format!("{:#x}", h.cause_pc),
    };
    let lines = if site.lines > 1 { format!(", {} lines", site.lines) } else { String::new() };
    format!("{} in {f} at {l} (pc {:#x}, va {:#x}{lines}, cause {} in {cause})", h.kind, h.pc, h.va, h.cause)
}

impl Expectation {
    /// Parses and checks an expectation file's text (every kind known, every line `FILE:N`).
    pub fn parse(text: &str) -> Result<Expectation, String> {
        let e: Expectation = toml::from_str(text).map_err(|e| format!("not a valid expectation file: {}", e.to_string().trim_end()))?;
        for (i, h) in e.hazards.iter().enumerate() {
            let n = i + 1;
            if HazardKind::from_name(&h.kind).is_none() {
                let known: Vec<&str> = HazardKind::ALL.iter().map(|k| k.name()).collect();
                return Err(format!("[[hazard]] {n}: kind '{}' is not a hazard kind ({})", h.kind, known.join(", ")));
            }
            match (&h.function, &h.line, &h.pc) {
                (Some(_), Some(_), Some(_)) | (Some(_), None, Some(_)) | (None, Some(_), Some(_)) => {
                    return Err(format!("[[hazard]] {n}: give either function and line, or pc, not both"));
                }
                (None, None, Some(pc)) => {
                    if parse_pc(pc).is_none() {
                        return Err(format!("[[hazard]] {n}: pc '{pc}' is not an address (0x…)"));
                    }
                }
                (Some(f), Some(line), None) => {
                    if f.is_empty() {
                        return Err(format!("[[hazard]] {n}: function is empty"));
                    }
                    let ok = line.rsplit_once(':').is_some_and(|(f, l)| !f.is_empty() && !f.contains('/') && l.parse::<u32>().is_ok());
                    if !ok {
                        return Err(format!("[[hazard]] {n}: line '{line}' must be basename:line, e.g. el1_icache.S:57"));
                    }
                }
                (Some(_), None, None) => return Err(format!("[[hazard]] {n}: function without line (give line = \"FILE:N\")")),
                (None, Some(_), None) => return Err(format!("[[hazard]] {n}: line without function")),
                (None, None, None) => return Err(format!("[[hazard]] {n}: where? give function and line, or pc")),
            }
            match (&h.cause_function, &h.cause_pc) {
                (Some(_), Some(_)) => return Err(format!("[[hazard]] {n}: give either cause_function or cause_pc, not both")),
                (None, Some(c)) if parse_pc(c).is_none() => {
                    return Err(format!("[[hazard]] {n}: cause_pc '{c}' is not an address (0x…)"));
                }
                _ => {}
            }
        }
        for w in &e.allow_warnings {
            if WarningCause::from_name(w).is_none() {
                let known: Vec<&str> = WarningCause::ALL.iter().map(|c| c.name()).collect();
                return Err(format!("allow_warnings: '{w}' is not a warning cause ({})", known.join(", ")));
            }
        }
        Ok(e)
    }

    /// What the run does not meet, one line each (empty: met).
    pub fn check(&self, o: &Observed, syms: Option<&Symbols>) -> Vec<String> {
        let mut problems = Vec::new();
        if !o.complete {
            problems.push(
                "the model log has no end-of-run records (QEMU was stopped before the plugin's exit): its hazards are not all known".into(),
            );
        }
        if o.truncated {
            problems.push("the plugin's bound on hazard records cut the list short: not every hazard is known".into());
        }
        // Advisory kinds the file does not list are reported, not judged.
        let judged = |kind: &str| {
            HazardKind::from_name(kind).is_none_or(|k| k.severity() != Severity::Advisory) || self.hazards.iter().any(|e| e.kind == kind)
        };
        let sites: Vec<Site> = o.sites().into_iter().filter(|site| judged(&site.first.kind)).collect();
        if syms.is_none() && self.hazards.iter().any(Expected::needs_symbols) {
            problems.push("the expectation names functions and lines, but the run has no ELF to resolve them (--elf)".into());
        }
        let hits: Vec<Vec<usize>> = self
            .hazards
            .iter()
            .map(|e| sites.iter().enumerate().filter(|(_, site)| e.matches(&site.first, syms)).map(|(i, _)| i).collect())
            .collect();
        for (e, m) in self.hazards.iter().zip(&hits) {
            match m.len() {
                0 => problems.push(format!("missing hazard: {}", e.describe())),
                1 => {}
                n => problems.push(format!(
                    "expected once, reported at {n} sites: {} (cause PCs {})",
                    e.describe(),
                    m.iter().map(|&i| format!("{:#x}", sites[i].first.cause_pc)).collect::<Vec<_>>().join(", ")
                )),
            }
        }
        for (i, site) in sites.iter().enumerate() {
            let by: Vec<usize> = hits.iter().enumerate().filter(|(_, m)| m.contains(&i)).map(|(k, _)| k + 1).collect();
            match by.len() {
                0 => problems.push(format!("unexpected hazard: {}", reported(site, syms))),
                1 => {}
                _ => problems.push(format!(
                    "one hazard matches [[hazard]] entries {}: {}",
                    by.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(" and "),
                    reported(site, syms)
                )),
            }
        }
        for w in &o.warnings {
            let allowed = w.cause.as_ref().is_some_and(|c| self.allow_warnings.iter().any(|a| a == c));
            if !allowed {
                let cause = w.cause.as_deref().map_or("no cause".to_string(), |c| format!("cause {c}"));
                problems.push(format!("unexpected warning ({cause}): {}", w.what));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::Warning;

    /// A real ELF: the test binary, whose own function `target` is the "exposing" PC.
    #[inline(never)]
    fn target() -> u64 {
        std::hint::black_box(7)
    }

    #[inline(never)]
    fn causer() -> u64 {
        std::hint::black_box(8)
    }

    fn syms() -> Symbols {
        crate::symbols::this_binary()
    }

    fn hazard(kind: &str, pc: u64, cause_pc: u64) -> Hazard {
        Hazard {
            kind: kind.into(),
            pa: 0x4008_1000,
            va: 0x4008_1000,
            pc,
            phase: String::new(),
            count: 1,
            access: "fetch".into(),
            cause: "write".into(),
            cause_pc,
        }
    }

    fn observed(hazards: Vec<Hazard>, warnings: Vec<Warning>) -> Observed {
        Observed { hazards, warnings, complete: true, ..Default::default() }
    }

    fn expectation_for(s: &Symbols, kind: &str, cause: Option<&str>) -> Expectation {
        let p = s.place(target as *const () as u64);
        let text = format!(
            "allow_warnings = [\"attribution\"]\n[[hazard]]\nkind = \"{kind}\"\nfunction = \"{}\"\nline = \"{}\"\n{}",
            p.function.clone().unwrap(),
            p.file_line().unwrap(),
            cause.map(|c| format!("cause_function = \"{c}\"\n")).unwrap_or_default()
        );
        Expectation::parse(&text).unwrap()
    }

    #[test]
    fn a_matching_hazard_meets_the_expectation() {
        let s = syms();
        let (pc, cpc) = (target as *const () as u64, causer as *const () as u64);
        let cause_name = s.place(cpc).function.unwrap();
        let e = expectation_for(&s, "stale-instruction", Some(&cause_name));
        let attribution = Warning { what: "x".into(), cause: Some("attribution".into()), count: None, pc: None };
        assert_eq!(e.check(&observed(vec![hazard("stale-instruction", pc, cpc)], vec![attribution]), Some(&s)), Vec::<String>::new());
        // The wrong cause function does not match.
        let e = expectation_for(&s, "stale-instruction", Some("somewhere_else"));
        let p = e.check(&observed(vec![hazard("stale-instruction", pc, cpc)], vec![]), Some(&s));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("missing hazard: stale-instruction in ") && p[1].starts_with("unexpected hazard: "), "{p:?}");
    }

    #[test]
    fn a_missing_hazard_is_named() {
        let s = syms();
        let e = expectation_for(&s, "stale-read-by-device", None);
        let p = e.check(&observed(vec![], vec![]), Some(&s));
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("missing hazard: stale-read-by-device in ") && p[0].contains("expect.rs:"), "{p:?}");
        // The same place with another kind is missing too (and unexpected).
        let p = e.check(&observed(vec![hazard("lost-write", target as *const () as u64, 0)], vec![]), Some(&s));
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn an_extra_hazard_is_unexpected() {
        let s = syms();
        let e = Expectation::parse("").unwrap();
        let p = e.check(&observed(vec![hazard("stale-instruction", causer as *const () as u64, 0)], vec![]), Some(&s));
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("unexpected hazard: stale-instruction in ") && p[0].contains("causer"), "{p:?}");
        // Two lines from one PC after one cause: one site, met by one entry.
        let e = expectation_for(&s, "stale-instruction", None);
        let pc = target as *const () as u64;
        let mut second = hazard("stale-instruction", pc, 0);
        second.va += 64;
        assert_eq!(e.check(&observed(vec![hazard("stale-instruction", pc, 0), second], vec![]), Some(&s)), Vec::<String>::new());
        // One place after two causes: two sites, expected once.
        let p = e.check(&observed(vec![hazard("stale-instruction", pc, 0), hazard("stale-instruction", pc, 0x40)], vec![]), Some(&s));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("expected once, reported at 2 sites: ") && p[0].ends_with("(cause PCs 0x0, 0x40)"), "{p:?}");
        // No symbols: every hazard is unexpected.
        let p = Expectation::default().check(&observed(vec![hazard("lost-write", 0x10, 0)], vec![]), None);
        assert_eq!(p, ["unexpected hazard: lost-write in ? at ? (pc 0x10, va 0x40081000, cause write in 0x0)"]);
    }

    #[test]
    fn warnings_fail_unless_their_cause_is_allowed() {
        let e = Expectation::parse("allow_warnings = [\"attribution\"]").unwrap();
        let w = |c: Option<&str>| Warning { what: "w".into(), cause: c.map(String::from), count: None, pc: None };
        assert!(e.check(&observed(vec![], vec![w(Some("attribution"))]), None).is_empty());
        assert_eq!(e.check(&observed(vec![], vec![w(Some("untranslated-va"))]), None), ["unexpected warning (cause untranslated-va): w"]);
        assert_eq!(e.check(&observed(vec![], vec![w(None)]), None), ["unexpected warning (no cause): w"]);
        // An incomplete or truncated log cannot meet any expectation.
        let o = Observed { complete: false, truncated: true, ..Default::default() };
        assert_eq!(e.check(&o, None).len(), 2);
    }

    #[test]
    fn a_bad_file_is_refused_with_a_clear_error() {
        let bad = |t: &str| Expectation::parse(t).unwrap_err();
        assert!(
            bad("allow_warnings = \"attribution\"").starts_with("not a valid expectation file: "),
            "{}",
            bad("allow_warnings = \"attribution\"")
        );
        assert_eq!(
            bad("[[hazard]]\nkind = \"stale-instruction\"\nfunction = \"f\"\n"),
            "[[hazard]] 1: function without line (give line = \"FILE:N\")"
        );
        assert_eq!(bad("[[hazard]]\nkind = \"stale-instruction\"\n"), "[[hazard]] 1: where? give function and line, or pc");
        assert_eq!(
            bad("[[hazard]]\nkind = \"lost-write\"\nfunction = \"f\"\nline = \"a.S:1\"\npc = \"0x10\"\n"),
            "[[hazard]] 1: give either function and line, or pc, not both"
        );
        assert_eq!(bad("[[hazard]]\nkind = \"lost-write\"\npc = \"0xg\"\n"), "[[hazard]] 1: pc '0xg' is not an address (0x…)");
        assert_eq!(
            bad("[[hazard]]\nkind = \"lost-write\"\npc = \"0x10\"\ncause_pc = \"x\"\n"),
            "[[hazard]] 1: cause_pc 'x' is not an address (0x…)"
        );
        assert!(bad("[[hazard]]\nkind = \"stale-instruction\"\nfunction = \"f\"\nline = \"a.S:1\"\nfile = \"x\"\n")
            .contains("unknown field `file`"));
        assert!(bad("[[hazzard]]\nkind = \"x\"\n").contains("unknown field `hazzard`"));
        assert!(bad("[[hazard]]\nkind = \"stale\"\nfunction = \"f\"\nline = \"a.S:1\"\n")
            .starts_with("[[hazard]] 1: kind 'stale' is not a hazard kind (stale-read-by-device,"));
        assert_eq!(
            bad("[[hazard]]\nkind = \"lost-write\"\nfunction = \"f\"\nline = \"src/a.S:1\"\n"),
            "[[hazard]] 1: line 'src/a.S:1' must be basename:line, e.g. el1_icache.S:57"
        );
        assert!(bad("[[hazard]]\nkind = \"lost-write\"\nfunction = \"f\"\nline = \"a.S\"\n").contains("must be basename:line"));
        assert_eq!(
            bad("allow_warnings = [\"atribution\"]"),
            "allow_warnings: 'atribution' is not a warning cause (untranslated-va, attribution)"
        );
        assert_eq!(Expectation::parse("# nothing: no hazards\n").unwrap(), Expectation::default());
    }

    #[test]
    fn an_image_without_symbols_is_checked_by_pc() {
        let e = Expectation::parse("[[hazard]]\nkind = \"stale-instruction\"\npc = \"0xffff80008003c368\"\ncause_pc = \"0x40\"\n").unwrap();
        let h = hazard("stale-instruction", 0xffff_8000_8003_c368, 0x40);
        assert_eq!(e.check(&observed(vec![h.clone()], vec![]), None), Vec::<String>::new());
        // Another cause PC, or another PC: missing and unexpected.
        let p = e.check(&observed(vec![hazard("stale-instruction", 0xffff_8000_8003_c368, 0x44)], vec![]), None);
        assert_eq!(
            p,
            [
                "missing hazard: stale-instruction at pc 0xffff80008003c368 (cause at 0x40)",
                "unexpected hazard: stale-instruction in ? at ? (pc 0xffff80008003c368, va 0x40081000, cause write in 0x44)"
            ]
        );
    }

    #[test]
    fn advisory_hazards_are_judged_only_when_listed() {
        let shared = hazard("shared-line", 0x10, 0x20);
        // Not listed: reported by the digest, not a problem here.
        assert_eq!(Expectation::default().check(&observed(vec![shared.clone()], vec![]), None), Vec::<String>::new());
        // An error kind still is.
        let p = Expectation::default().check(&observed(vec![shared.clone(), hazard("lost-write", 0x10, 0)], vec![]), None);
        assert_eq!(p.len(), 1, "{p:?}");
        // Listed: judged exactly, like any kind.
        let e = Expectation::parse("[[hazard]]\nkind = \"shared-line\"\npc = \"0x10\"\n").unwrap();
        assert_eq!(e.check(&observed(vec![shared.clone()], vec![]), None), Vec::<String>::new());
        let p = e.check(&observed(vec![shared.clone(), hazard("shared-line", 0x30, 0)], vec![]), None);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("unexpected hazard: shared-line"), "{p:?}");
    }
}
