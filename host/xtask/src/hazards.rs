//! `hazards`: the sanitizer's verdict on a run. The kernel's `mistakes` suite declares, per
//! deliberate mistake, what the cache model's sanitizer must report (`expect-hazard` records);
//! the plugin reports what it saw (`hazard` records, `hazard-total`). A run passes when every
//! mistakes phase has exactly the expected kinds at exactly the expected lines, and no other
//! phase — every correct sequence of the run — has any hazard.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::records::{kind, records};

/// One finding: (passed, what).
pub type Finding = (bool, String);

fn str_field<'a>(r: &'a Map<String, Value>, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Checks the kernel log's expectations against the model log's hazards. `Err` when the
/// sanitizer did not run at all (no `hazard-total`).
pub fn check(log: &str, model: &str) -> Result<Vec<Finding>, String> {
    let expected: Vec<Map<String, Value>> = records(log).into_iter().map(|(_, r)| r).filter(|r| kind(r) == "expect-hazard").collect();
    let model_recs: Vec<Map<String, Value>> = records(model).into_iter().map(|(_, r)| r).collect();
    let total = model_recs
        .iter()
        .find(|r| kind(r) == "hazard-total")
        .ok_or("the model log has no hazard-total record: the sanitizer did not run (QEMU_CACHE_MODEL off, or sanitize=off)")?;
    if total.get("sanitize").and_then(Value::as_bool) == Some(false) {
        return Err("hazard-total says the sanitizer was off (sanitize=off)".into());
    }
    // (phase → set of (kind, line)) as reported.
    let mut seen: BTreeMap<&str, BTreeSet<(&str, u64)>> = BTreeMap::new();
    for h in model_recs.iter().filter(|r| kind(r) == "hazard") {
        seen.entry(str_field(h, "phase"))
            .or_default()
            .insert((str_field(h, "kind"), cachescope_report::records::hex(h, "pa").unwrap_or(u64::MAX)));
    }
    let mut want: BTreeMap<&str, BTreeSet<(&str, u64)>> = BTreeMap::new();
    for e in &expected {
        let (pa, lines, stride) = (
            cachescope_report::records::hex(e, "pa").unwrap_or(0),
            e.get("lines").and_then(Value::as_u64).unwrap_or(0),
            e.get("stride").and_then(Value::as_u64).unwrap_or(0),
        );
        let set = want.entry(str_field(e, "phase")).or_default();
        for i in 0..lines {
            set.insert((str_field(e, "kind"), pa + i * stride));
        }
    }
    let mut findings = Vec::new();
    // At most 8 lines named, then how many more.
    let show = |s: &BTreeSet<(&str, u64)>| {
        let mut t = s.iter().take(8).map(|(k, l)| format!("{k}@{l:#x}")).collect::<Vec<_>>().join(" ");
        if s.len() > 8 {
            t += &format!(" … ({} lines in all)", s.len());
        }
        t
    };
    for (phase, w) in &want {
        let got = seen.get(phase).cloned().unwrap_or_default();
        if &got == w {
            findings.push((true, format!("{phase}: {} reported exactly as expected", show(w))));
        } else {
            let missing: BTreeSet<_> = w.difference(&got).copied().collect();
            let extra: BTreeSet<_> = got.difference(w).copied().collect();
            findings.push((
                false,
                format!(
                    "{phase}: expected {}; {}{}",
                    show(w),
                    if missing.is_empty() { String::new() } else { format!("missing {}", show(&missing)) },
                    if extra.is_empty() {
                        String::new()
                    } else {
                        format!("{}unexpected {}", if missing.is_empty() { "" } else { "; " }, show(&extra))
                    }
                ),
            ));
        }
    }
    // Every other phase: correct code, no hazard.
    for (phase, got) in seen.iter().filter(|(p, _)| !want.contains_key(*p)) {
        let name = if phase.is_empty() { "(outside any phase)" } else { phase };
        findings.push((false, format!("{name}: a correct sequence produced {}", show(got))));
    }
    let others = seen.keys().filter(|p| !want.contains_key(*p)).count();
    if others == 0 {
        findings.push((true, "every phase without a declared mistake (and all code outside phases) has zero hazards".into()));
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"# cs: {"record":"expect-hazard","phase":"mistakes/a","kind":"lost-write","pa":"0x1000","lines":2,"stride":64}"#;

    fn hazard(phase: &str, kind: &str, pa: u64) -> String {
        format!(
            r#"# cs: {{"record":"hazard","kind":"{kind}","pa":"{pa:#x}","va":"0x0","pc":"0x0","phase":"{phase}","phase_id":1,"count":1,"access":"dc-ivac","cause":"write","cause_pc":"0x0","source":"model"}}"#
        )
    }

    const TOTAL: &str = r#"# cs: {"record":"hazard-total","sanitize":true,"hazards":2,"count":2,"stale_read_by_device":0,"lost_write":2,"stale_read_by_cpu":0,"stale_instruction":0,"maintenance_gap":0,"source":"model"}"#;

    #[test]
    fn exact_match_passes_and_anything_else_fails() {
        let model = [hazard("mistakes/a", "lost-write", 4096), hazard("mistakes/a", "lost-write", 4160), TOTAL.into()].join("\n");
        assert!(check(LOG, &model).unwrap().iter().all(|(ok, _)| *ok));
        // A missing line, a wrong kind, a hazard in a correct phase: each fails, named.
        let model = [hazard("mistakes/a", "lost-write", 4096), TOTAL.into()].join("\n");
        let f = check(LOG, &model).unwrap();
        assert!(f.iter().any(|(ok, w)| !ok && w.contains("missing lost-write@0x1040")));
        let model = [
            hazard("mistakes/a", "lost-write", 4096),
            hazard("mistakes/a", "lost-write", 4160),
            hazard("handoff/to-device-va-maint/normal-wb/262144", "stale-read-by-device", 8192),
            TOTAL.into(),
        ]
        .join("\n");
        let f = check(LOG, &model).unwrap();
        assert!(f.iter().any(|(ok, w)| !ok && w.starts_with("handoff/to-device-va-maint") && w.contains("stale-read-by-device@0x2000")));
        assert!(check(LOG, "").is_err());
    }
}
