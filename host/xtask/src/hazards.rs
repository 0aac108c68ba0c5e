//! `hazards`: the sanitizer's verdict on a saved run, as a list of findings. The verdict itself
//! is decided in one place, `cachescope_report::verdict` (the runner calls it after every model
//! run and folds it into the exit status); this re-judges a row's saved log and model log, and
//! also requires that the runner recorded the same verdict in the log.

use cachescope_report::verdict::{self, phase_name};

use crate::records::records;

/// One finding: (passed, what).
pub type Finding = (bool, String);

/// Judges the kernel log's expectations against the model log's hazards. `Err` when the
/// sanitizer did not run at all (no `hazard-total`).
pub fn check(log: &str, model: &str) -> Result<Vec<Finding>, String> {
    let log_recs: Vec<_> = records(log).into_iter().map(|(_, r)| r).collect();
    let model_recs: Vec<_> = records(model).into_iter().map(|(_, r)| r).collect();
    let v = verdict::judge(&log_recs, &model_recs)?;
    if v.word == verdict::Word::Off {
        return Err("hazard-total says the sanitizer was off (sanitize=off)".into());
    }
    let mut findings: Vec<Finding> = v.findings.iter().map(|f| (f.passed, format!("{}: {}", phase_name(&f.phase), f.what))).collect();
    if v.findings.iter().all(|f| f.declared || f.passed) {
        findings.push((true, "every phase without a declared mistake (and all code outside phases) has zero hazards".into()));
    }
    // Silicon mode (`impl=silicon`): the hazards the modelled core's documented deviations hide
    // there, each still the architecture's mistake (the verdict above counts them as any).
    let mut masked = Vec::new();
    for h in model_recs.iter().filter_map(cachescope_arch::record::HazardView::of) {
        let Some(rule) = h.masked_by() else { continue };
        match cachescope_arch::hazard::SiliconRule::from_name(rule) {
            Some(r) => masked.push(format!("{}@{:#x} by {} ({})", h.kind().unwrap_or("?"), h.pa().unwrap_or(0), r.name(), r.describe())),
            None => findings.push((false, format!("a hazard's masked_by names no silicon rule: '{rule}'"))),
        }
    }
    if !masked.is_empty() {
        findings.push((
            true,
            format!(
                "{} hazard(s) masked on the modelled core, reported as architectural mistakes all the same: {}",
                masked.len(),
                masked.join(", ")
            ),
        ));
    }
    match verdict::recorded(&log_recs) {
        Some(r) if r.word == v.word => findings.push((true, format!("the runner recorded the same verdict ({})", r.word.name()))),
        Some(r) => findings.push((false, format!("the runner recorded '{}', but the logs give '{}'", r.word.name(), v.word.name()))),
        None => findings.push((false, "the log has no sanitizer-verdict record: the runner did not judge this run".into())),
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"# cs: {"record":"expect-hazard","phase":"mistakes/a","kind":"lost-write","pa":"0x1000","lines":1,"stride":64}"#;
    const TOTAL: &str = r#"# cs: {"record":"hazard-total","sanitize":true,"hazards":1,"count":1,"stale_read_by_device":0,"lost_write":1,"stale_read_by_cpu":0,"stale_instruction":0,"maintenance_gap":0,"shared_line":0,"non_shareable_shared":0,"truncated":false,"dropped":0,"source":"model"}"#;

    fn model(masked_by: &str) -> String {
        format!(
            "# cs: {{\"record\":\"hazard\",\"kind\":\"lost-write\",\"pa\":\"0x1000\",\"va\":\"0x1000\",\"pc\":\"0x0\",\"phase\":\"mistakes/a\",\"phase_id\":1,\"count\":1,\"access\":\"dc-ivac\",\"cause\":\"write\",\"cause_pc\":\"0x0\",{masked_by}\"source\":\"model\"}}\n{TOTAL}\n"
        )
    }

    /// Silicon mode: a masked mistake is judged as any (the declared phase passes) and listed with
    /// its rule; a rule the contract does not know is a failed finding.
    #[test]
    fn masked_hazards_are_judged_as_any_and_listed() {
        let f = check(LOG, &model(r#""masked_by":"ivac-as-civac","#)).unwrap();
        assert!(f.iter().any(|(ok, w)| *ok && w.starts_with("mistakes/a")), "{f:?}");
        assert!(
            f.iter().any(|(ok, w)| *ok && w.contains("1 hazard(s) masked") && w.contains("lost-write@0x1000 by ivac-as-civac")),
            "{f:?}"
        );
        let f = check(LOG, &model("")).unwrap();
        assert!(!f.iter().any(|(_, w)| w.contains("masked")), "arch mode: no note {f:?}");
        let f = check(LOG, &model(r#""masked_by":"ivac","#)).unwrap();
        assert!(f.iter().any(|(ok, w)| !ok && w.contains("names no silicon rule: 'ivac'")), "{f:?}");
    }
}
