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
    for h in model_recs.iter().filter_map(|r| cachescope_arch::record::HazardView::of(r)) {
        let Some(rule) = h.masked_by() else { continue };
        match cachescope_arch::hazard::SiliconRule::from_name(rule) {
            Some(r) => masked.push(format!("{}@{:#x} by {} ({})", h.kind().unwrap_or("?"), h.pa().unwrap_or(0), r.name(), r.describe())),
            None => findings.push((false, format!("a hazard's masked_by names no silicon rule: '{rule}'"))),
        }
    }
    if !masked.is_empty() {
        findings.push((
            true,
            format!("{} hazard(s) masked on the modelled core, reported as architectural mistakes all the same: {}", masked.len(), masked.join(", ")),
        ));
    }
    match verdict::recorded(&log_recs) {
        Some(r) if r.word == v.word => findings.push((true, format!("the runner recorded the same verdict ({})", r.word.name()))),
        Some(r) => findings.push((false, format!("the runner recorded '{}', but the logs give '{}'", r.word.name(), v.word.name()))),
        None => findings.push((false, "the log has no sanitizer-verdict record: the runner did not judge this run".into())),
    }
    Ok(findings)
}
