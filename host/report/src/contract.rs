//! The `# cs: {json}` record lines and the records contract (docs/records.md, declared in
//! `cachescope_arch::record`; schemas 1 and 2 are read):
//! - every record is of a declared kind, with its required fields, each of its declared type,
//!   and no undeclared field;
//! - every record line is `# cs: ` followed by one JSON object with a non-empty string
//!   `"record"` field naming its kind;
//! - the first record is `boot` with a known `"schema"` and the issue-2 fields (`el`, `board`,
//!   `midr`, `cpu`, `cntfrq`), and there is only one;
//! - the last record is `end`, the only one, with `passed`/`failed`/`skipped` equal to the
//!   KTAP leaf results;
//! - `metric` records follow the metric schema ([`crate::metrics`]) and no two share a key;
//! - no record appears before the KTAP version line.

use crate::input::{Log, Problem};
use crate::ktap;
use crate::metrics::Metric;
use crate::records::{extract, parse_line, short, Object, Record, OLDEST_SCHEMA, SCHEMA};
use cachescope_arch::record::{self, Ty};
use serde_json::Value;
use std::collections::HashMap;

/// Field `key` of a `kind` record converted by `conv`; a missing or mistyped field is a problem
/// (`what` names the expected type).
fn want<'a, T>(
    obj: &'a Object,
    key: &str,
    (line, kind): (usize, &str),
    problems: &mut Vec<Problem>,
    what: &str,
    conv: impl Fn(&'a Value) -> Option<T>,
) -> Option<T> {
    let Some(v) = obj.get(key) else {
        problems.push(Problem::new(line, format!("'{kind}' record has no \"{key}\" field")));
        return None;
    };
    let got = conv(v);
    if got.is_none() {
        problems.push(Problem::new(line, format!("'{kind}' record: \"{key}\" must be {what}, found {v}")));
    }
    got
}

fn want_uint(obj: &Object, key: &str, at: (usize, &str), problems: &mut Vec<Problem>) -> Option<u64> {
    want(obj, key, at, problems, "a non-negative integer", Value::as_u64)
}

fn want_str<'a>(obj: &'a Object, key: &str, at: (usize, &str), problems: &mut Vec<Problem>) -> Option<&'a str> {
    want(obj, key, at, problems, "a string", Value::as_str)
}

fn check_boot(r: &Record, problems: &mut Vec<Problem>) {
    let (o, l) = (&r.obj, r.line);
    if let Some(s) = want_uint(o, "schema", (l, "boot"), problems) {
        if !(OLDEST_SCHEMA..=SCHEMA).contains(&s) {
            problems.push(Problem::new(l, format!("boot record has schema {s}; this tool reads schemas {OLDEST_SCHEMA}..={SCHEMA}")));
        }
    }
    if let Some(el) = want_uint(o, "el", (l, "boot"), problems) {
        if el > 3 {
            problems.push(Problem::new(l, format!("boot record: \"el\" is {el}, not an exception level 0..3")));
        }
    }
    want_str(o, "board", (l, "boot"), problems);
    want_str(o, "cpu", (l, "boot"), problems);
    if let Some(m) = want_str(o, "midr", (l, "boot"), problems) {
        if !m.strip_prefix("0x").is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())) {
            problems.push(Problem::new(l, format!("boot record: \"midr\" '{m}' is not a 0x… hex string")));
        }
    }
    if want_uint(o, "cntfrq", (l, "boot"), problems) == Some(0) {
        problems.push(Problem::new(l, "boot record: \"cntfrq\" is 0"));
    }
}

fn check_end(r: &Record, leaves: ktap::Counts, problems: &mut Vec<Problem>) {
    let (o, l) = (&r.obj, r.line);
    let p = want_uint(o, "passed", (l, "end"), problems);
    let f = want_uint(o, "failed", (l, "end"), problems);
    let s = want_uint(o, "skipped", (l, "end"), problems);
    if let (Some(p), Some(f), Some(s)) = (p, f, s) {
        if (p, f, s) != (leaves.passed, leaves.failed, leaves.skipped) {
            problems.push(Problem::new(
                l,
                format!(
                    "end record says passed={p} failed={f} skipped={s}, but the KTAP leaf results are passed={} failed={} skipped={}",
                    leaves.passed, leaves.failed, leaves.skipped
                ),
            ));
        }
    }
}

/// Whether `v` has the declared type.
fn has_type(v: &Value, ty: Ty) -> bool {
    match ty {
        Ty::Str => v.is_string(),
        Ty::UInt => v.is_u64(),
        Ty::Num => v.is_number() || v.is_null(),
        Ty::Hex => v.as_str().and_then(|s| s.strip_prefix("0x")).is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())),
        Ty::Bool => v.is_boolean(),
        Ty::UIntOrNull => v.is_u64() || v.is_null(),
        Ty::StrOrNull => v.is_string() || v.is_null(),
        Ty::UIntList => v.as_array().is_some_and(|a| a.iter().all(Value::is_u64)),
        Ty::Params => v.as_object().is_some_and(|o| o.values().all(Value::is_u64)),
    }
}

/// Checks a record against its kind's declaration in `cachescope_arch::record` (the one record
/// contract, shared with the kernel's emitter): a declared kind, every field required in the
/// log's schema present, every field of its declared type, no undeclared field.
fn check_declared(r: &Record, schema: u32, problems: &mut Vec<Problem>) {
    let Some(kind) = record::kind(r.kind()) else {
        problems
            .push(Problem::new(r.line, format!("record kind '{}' is not declared (docs/records.md lists every kind)", short(r.kind()))));
        return;
    };
    for f in kind.fields.iter().filter(|f| f.required && f.since <= schema) {
        if !r.obj.contains_key(f.name) {
            problems.push(Problem::new(r.line, format!("'{}' record has no \"{}\" field", kind.name, f.name)));
        }
    }
    // Fields in declaration order (the wire format; schema-1 logs are read as they were).
    let mut last: Option<(usize, &str)> = None;
    for name in r.obj.keys().filter(|k| k.as_str() != "record") {
        let Some(at) = kind.fields.iter().position(|f| f.name == name) else { continue };
        if let Some((_, before)) = last.filter(|(l, _)| *l > at && schema >= 2) {
            problems.push(Problem::new(
                r.line,
                format!("'{}' record: \"{name}\" comes after \"{before}\", against the declared order", kind.name),
            ));
        }
        last = Some((at, name));
    }
    for (name, v) in r.obj.iter().filter(|(k, _)| k.as_str() != "record") {
        match kind.field(name) {
            Some(f) if !has_type(v, f.ty) => problems.push(Problem::new(
                r.line,
                format!("'{}' record: \"{name}\" must be {}, found {}", kind.name, f.ty.name(), short(&v.to_string())),
            )),
            Some(_) => {}
            None => problems.push(Problem::new(r.line, format!("'{}' record has an undeclared field \"{}\"", kind.name, short(name)))),
        }
    }
}

/// Checks the records contract of a validated log; `ktap` is its KTAP outcome.
pub fn check_contract(log: &Log, ktap: &ktap::Outcome) -> Vec<Problem> {
    let (mut records, mut problems) = extract(log);
    // The runner's records (the sanitizer's verdict) follow the kernel's `end` record; the rest
    // of the contract is the kernel's.
    let is_runner = |r: &Record| record::kind(r.kind()).is_some_and(|k| k.emitter == record::Emitter::Runner);
    if let Some(end_at) = records.iter().rposition(|r| !is_runner(r)) {
        for r in records[..end_at].iter().filter(|r| is_runner(r)) {
            problems.push(Problem::new(r.line, format!("'{}' (a runner's record) before the kernel's last record", r.kind())));
        }
    }
    let schema_of_first = records.first().and_then(|r| r.view::<record::BootView<_>>()?.schema());
    let runner: Vec<Record> = records.iter().filter(|r| is_runner(r)).cloned().collect();
    records.retain(|r| !is_runner(r));
    if schema_of_first.is_some_and(|s| s >= 2) {
        for r in &runner {
            check_declared(r, record::SCHEMA, &mut problems);
        }
    }
    let Some(start) = ktap.start else {
        return problems; // not a KTAP log at all: the KTAP problem says it; the contract cannot apply
    };
    let start_no = log.lines[start].no;
    for r in records.iter().filter(|r| r.line < start_no) {
        problems.push(Problem::new(r.line, format!("'{}' record before the 'KTAP version 1' line (line {start_no})", r.kind())));
    }
    let Some(first) = records.first() else {
        problems.push(Problem::new(0, "no '# cs:' records: a run starts with the 'boot' record and ends with the 'end' record"));
        return problems;
    };
    let last = records.last().expect("non-empty");
    if first.kind() == "boot" {
        check_boot(first, &mut problems);
    } else {
        problems.push(Problem::new(first.line, format!("first record is '{}', expected 'boot'", first.kind())));
    }
    if last.kind() == "end" {
        check_end(last, ktap.leaves, &mut problems);
    } else {
        problems.push(Problem::new(last.line, format!("last record is '{}', expected 'end' (truncated log?)", last.kind())));
    }
    // Schema-1 logs are checked as the schema-1 tool checked them (any kind, any extra field);
    // from schema 2 every record must follow its declaration.
    let schema = first
        .view::<record::BootView<_>>()
        .and_then(|b| b.schema())
        .filter(|s| (OLDEST_SCHEMA..=SCHEMA).contains(s))
        .unwrap_or(OLDEST_SCHEMA);
    if schema >= 2 {
        for r in &records {
            check_declared(r, schema as u32, &mut problems);
        }
    }
    let mut keys: HashMap<String, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match r.kind() {
            "boot" if i != 0 => problems.push(Problem::new(r.line, format!("second 'boot' record (the first is at line {})", first.line))),
            "end" if i != records.len() - 1 => problems.push(Problem::new(r.line, "'end' record is not the last record")),
            "metric" => match Metric::from_record(r) {
                Ok((m, issues)) => {
                    problems.extend(issues.into_iter().map(|e| Problem::new(r.line, format!("metric {}: {e}", m.key))));
                    if let Some(prev) = keys.insert(m.key.to_string(), r.line) {
                        problems.push(Problem::new(
                            r.line,
                            format!("metric key '{}' already used at line {prev}: each measurement needs distinguishing fields", m.key),
                        ));
                    }
                }
                Err(e) => problems.push(Problem::new(r.line, format!("metric record: {e}"))),
            },
            _ => {}
        }
    }
    problems.sort_by_key(|p| p.line);
    problems
}

/// The outcome of checking a cache-model log ([`check_model_log`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelLogCheck {
    /// What is wrong, by line (0: the whole log).
    pub problems: Vec<Problem>,
    /// Its records, in order.
    pub records: Vec<Record>,
}

impl ModelLogCheck {
    /// Whether the log passed: conclusions may be drawn from it.
    pub fn valid(&self) -> bool {
        self.problems.is_empty()
    }

    /// One line for a person: how many problems and the first (`None` when valid).
    pub fn flag(&self, name: &str) -> Option<String> {
        let p = self.problems.first()?;
        let at = if p.line == 0 { name.to_string() } else { format!("{name}:{}", p.line) };
        let more = if self.problems.len() > 1 { format!(" (and {} more problems)", self.problems.len() - 1) } else { String::new() };
        Some(format!("INVALID: the model log fails validation, no hazard conclusions drawn from it: {at}: {}{more}", p.msg))
    }

    /// The records conclusions may be drawn from: all of them when the log is valid; else
    /// every record but the sanitizer's (`hazard`, `hazard-total`), which a damaged log must
    /// not turn into a verdict.
    pub fn usable_records(&self) -> Vec<Record> {
        if self.valid() {
            return self.records.clone();
        }
        self.records.iter().filter(|r| !matches!(r.kind(), "hazard" | "hazard-total")).cloned().collect()
    }
}

/// The fields of a `hazard` record as the plugin's readable twin line prints them
/// (`# model: hazard KIND pa=… va=… pc=… phase=… count=… access=… cause=… cause_pc=…`).
fn hazard_twin(o: &Object) -> String {
    let Some(h) = record::HazardView::of(o) else { return String::new() };
    let s = |v: Option<&str>| v.unwrap_or("?").to_string();
    let x = |v: Option<u64>| v.map_or("?".to_string(), |v| format!("{v:#x}"));
    let phase = s(h.phase());
    format!(
        "# model: hazard {} pa={} va={} pc={} phase={} count={} access={} cause={} cause_pc={}{}",
        s(h.kind()),
        x(h.pa()),
        x(h.va()),
        x(h.pc()),
        if phase.is_empty() { "-".to_string() } else { phase },
        h.count().map_or("?".into(), |c| c.to_string()),
        s(h.access()),
        s(h.cause()),
        x(h.cause_pc()),
        h.masked_by().map(|r| format!(" masked_by={r}")).unwrap_or_default()
    )
}

/// Checks a cache-model log (the plugin's `out=` file) before anything is concluded from it:
/// - every line is a record (`# cs: {…}`) or the plugin's readable `# model: …` line, as text;
/// - every record is a cache-model kind as `cachescope_arch::record` declares it;
/// - it ends with its closing records: one `hazard-total` and one `model-run`, the last;
/// - its counts agree with each other: hits + misses = accesses per level, `hazard-total` per
///   kind equals the `hazard` records, each `hazard` record is followed by its readable twin
///   line, a hazard's phase is the phase of that id in the `model` records, and `model-run`
///   counts the phases and warnings the log holds.
///
/// A damaged log (bit flips, a truncated write, a file of another run) fails at least one of
/// these; a flip that keeps every field well-formed is caught by the twin line or the totals.
pub fn check_model_log(log: &Log) -> ModelLogCheck {
    let mut problems = Vec::new();
    let mut records = Vec::new();
    let mut twins: Vec<(usize, String, String)> = Vec::new(); // (record line, expected twin, found)
    let mut pending: Option<(usize, String)> = None;
    for l in &log.lines {
        if let Some(d) = l.defect {
            problems.push(Problem::new(l.no, d.to_string()));
            continue;
        }
        let t = l.text.trim_end();
        if let Some((at, want)) = pending.take() {
            twins.push((at, want, t.to_string()));
        }
        if t.is_empty() || t.starts_with("# model: ") {
            continue;
        }
        match parse_line(t) {
            None => problems.push(Problem::new(l.no, format!("not a cache-model line: '{}'", short(t)))),
            Some(Err(e)) => problems.push(Problem::new(l.no, e)),
            Some(Ok(obj)) => {
                let r = Record { line: l.no, obj };
                match record::kind(r.kind()) {
                    Some(k) if k.emitter == record::Emitter::Model => {
                        check_declared(&r, record::SCHEMA, &mut problems);
                        if r.kind() == "hazard" {
                            pending = Some((l.no, hazard_twin(&r.obj)));
                        }
                    }
                    Some(k) => problems
                        .push(Problem::new(l.no, format!("'{}' is a {} record, not the cache model's", k.name, emitter_name(k.emitter)))),
                    None => problems.push(Problem::new(l.no, format!("record kind '{}' is not declared", short(r.kind())))),
                }
                records.push(r);
            }
        }
    }
    if let Some((at, _)) = pending {
        problems.push(Problem::new(at, "hazard record without its '# model: hazard' line (the log ends there)"));
    }
    for (at, want, got) in twins {
        if want != got {
            problems.push(Problem::new(
                at,
                format!("hazard record and its '# model: hazard' line disagree: '{}' vs '{}'", short(&want), short(&got)),
            ));
        }
    }
    if records.is_empty() {
        problems.push(Problem::new(0, "no cache-model records (an empty or foreign file)"));
        problems.sort_by_key(|p| p.line);
        return ModelLogCheck { problems, records };
    }
    let of = |kind: &str| records.iter().filter(|r| r.kind() == kind).collect::<Vec<_>>();
    let (totals, runs) = (of("hazard-total"), of("model-run"));
    match totals.as_slice() {
        [] => problems
            .push(Problem::new(0, "no 'hazard-total' record: the log ends before the plugin's exit (truncated, or QEMU was killed)")),
        [_] => {}
        [_, second, ..] => problems.push(Problem::new(second.line, "a second 'hazard-total' record (two runs in one file?)")),
    }
    match runs.as_slice() {
        [] => {
            problems.push(Problem::new(0, "no 'model-run' record: the log ends before the plugin's exit (truncated, or QEMU was killed)"))
        }
        [r] if records.last().is_some_and(|l| l.line != r.line) => {
            problems.push(Problem::new(r.line, "'model-run' is not the last record (two runs in one file?)"))
        }
        [_] => {}
        [_, second, ..] => problems.push(Problem::new(second.line, "a second 'model-run' record (two runs in one file?)")),
    }
    for r in &records {
        let counts = match (r.view::<record::ModelView<_>>(), r.view::<record::ModelTotalView<_>>()) {
            (Some(m), _) => (m.accesses(), m.hits(), m.misses()),
            (_, Some(t)) => (t.accesses(), t.hits(), t.misses()),
            _ => continue,
        };
        if let (Some(a), Some(h), Some(m)) = counts {
            if h.checked_add(m) != Some(a) {
                problems.push(Problem::new(r.line, format!("'{}' record: hits {h} + misses {m} ≠ accesses {a}", r.kind())));
            }
        }
    }
    let hazards = of("hazard");
    if let Some((t, tv)) = totals.first().filter(|_| totals.len() == 1).and_then(|t| Some((t, t.view::<record::HazardTotalView<_>>()?))) {
        if let Some(n) = tv.hazards().filter(|n| *n != hazards.len() as u64) {
            problems.push(Problem::new(t.line, format!("'hazard-total' counts {n} hazards, the log holds {}", hazards.len())));
        }
        let per_kind = tv.per_kind();
        for k in cachescope_arch::hazard::HazardKind::ALL {
            let n = hazards.iter().filter(|h| h.view::<record::HazardView<_>>().and_then(|h| h.kind()) == Some(k.name())).count() as u64;
            if let Some(v) = per_kind[k as usize].filter(|v| *v != n) {
                problems.push(Problem::new(t.line, format!("'hazard-total' counts {v} {} hazards, the log holds {n}", k.name())));
            }
        }
    }
    let mut phase_names: HashMap<u64, &str> = HashMap::new();
    for r in of("model") {
        let Some(m) = r.view::<record::ModelView<_>>() else { continue };
        if let (Some(id), Some(name)) = (m.phase_id(), m.phase()) {
            if let Some(prev) = phase_names.insert(id, name).filter(|p| *p != name) {
                problems.push(Problem::new(r.line, format!("phase {id} is named '{}' here and '{}' before", short(name), short(prev))));
            }
        }
    }
    for h in &hazards {
        let Some(hv) = h.view::<record::HazardView<_>>() else { continue };
        let (Some(id), Some(name)) = (hv.phase_id(), hv.phase()) else { continue };
        if let Some(p) = phase_names.get(&id).filter(|p| **p != name) {
            problems.push(Problem::new(
                h.line,
                format!("hazard in phase {id} '{}', but the model records name phase {id} '{}'", short(name), short(p)),
            ));
        }
    }
    if let Some((r, rv)) = runs.first().filter(|_| runs.len() == 1).and_then(|r| Some((r, r.view::<record::ModelRunView<_>>()?))) {
        if let Some(n) = rv.phases().filter(|n| *n != phase_names.len() as u64 && !phase_names.is_empty()) {
            problems.push(Problem::new(r.line, format!("'model-run' counts {n} phases, the log holds {}", phase_names.len())));
        }
        let warnings = of("model-warning").len() as u64;
        if let Some(n) = rv.warnings().filter(|n| *n != warnings) {
            problems.push(Problem::new(r.line, format!("'model-run' counts {n} warnings, the log holds {warnings}")));
        }
    }
    problems.sort_by_key(|p| p.line);
    ModelLogCheck { problems, records }
}

fn emitter_name(e: record::Emitter) -> &'static str {
    match e {
        record::Emitter::Kernel => "kernel",
        record::Emitter::Model => "cache model",
        record::Emitter::Runner => "runner",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::*;

    const BOOT: &str = r#"# cs: {"record":"boot","schema":2,"el":1,"current_el":1,"board":"qemu-virt","midr":"0x410fd083","cpu":"Cortex-A72","cntfrq":62500000,"dtb":true,"ram_base":"0x40000000","ram_size":536870912,"uart":"0x9000000","emulated":true,"args":""}"#;

    fn contract(body: &str) -> Vec<String> {
        let log = Log::from_bytes("t", body.as_bytes());
        let k = ktap::validate(&log, ktap::Options::default());
        check_contract(&log, &k).iter().map(|p| p.to_string()).collect()
    }

    fn doc(records: &[&str], results: &str) -> String {
        let n = results.lines().count();
        let mut s = format!("KTAP version 1\n1..{n}\n");
        for r in records {
            s.push_str(r);
            s.push('\n');
        }
        s.push_str(results);
        s
    }

    fn assert_has(p: &[String], needle: &str) {
        assert!(p.iter().any(|m| m.contains(needle)), "expected {needle:?} in {p:#?}");
    }

    #[test]
    fn icount_is_read_one_way_from_the_records() {
        let recs = |text: &str| extract(&Log::from_bytes("t", text.as_bytes())).0;
        assert!(run_used_icount(&recs(&BOOT.replace(r#""args":"""#, r#""args":"","model":"rpi4""#))));
        assert!(!run_used_icount(&recs(&BOOT.replace(r#""args":"""#, r#""args":"","model":"off""#))));
        assert!(!run_used_icount(&recs(BOOT)));
        assert!(run_used_icount(&recs(r#"# cs: {"record":"model-run","icount":true}"#)));
    }

    #[test]
    fn a_model_log_must_be_whole_and_consistent() {
        let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mistakes-model.model")).unwrap();
        let check = |t: &str| check_model_log(&Log::from_bytes("m", t.as_bytes()));
        assert_eq!(check(&good).problems, vec![]);
        let has = |t: &str, needle: &str| {
            let c = check(t);
            assert!(c.problems.iter().any(|p| p.msg.contains(needle)), "{needle:?} not in {:#?}", c.problems);
            assert!(c.usable_records().iter().all(|r| !matches!(r.kind(), "hazard" | "hazard-total")), "hazard records kept");
        };
        has("", "no cache-model records");
        let lines: Vec<&str> = good.lines().collect();
        has(&lines[..lines.len() - 1].join("\n"), "no 'model-run' record");
        has(&good.replace("\"record\":\"hazard-total\"", "\"record\":\"hazard-totl\""), "record kind 'hazard-totl' is not declared");
        // A valid kind in place of another: the readable twin line and the totals disagree.
        has(&good.replacen("\"kind\":\"lost-write\"", "\"kind\":\"stale-read-by-cpu\"", 1), "disagree");
        has(&good.replacen("\"kind\":\"lost-write\"", "\"kind\":\"stale-read-by-cpu\"", 1), "counts 1 lost-write hazards, the log holds 0");
        has(
            &good.replacen("\"phase\":\"mistakes/stride-gap\",\"phase_id\"", "\"phase\":\"mistakes/stride-gaq\",\"phase_id\"", 1),
            "is named",
        );
        let mut renamed = false;
        let hazard_renamed: Vec<String> = lines
            .iter()
            .map(|l| {
                if !renamed && l.contains("\"record\":\"hazard\"") && l.contains("stride-gap") {
                    renamed = true;
                    l.replace("stride-gap", "stride-gaq")
                } else {
                    l.to_string()
                }
            })
            .collect();
        has(&hazard_renamed.join("\n"), "but the model records name phase");
        has(&format!("{good}{}\n", lines[0]), "'model-run' is not the last record");
        has(&format!("{BOOT}\n{good}"), "is a kernel record, not the cache model's");
        has(&good.replacen("# model: hazard", "# model: hazarb", 1), "disagree");
    }

    #[test]
    fn parse_line_cases() {
        assert_eq!(parse_line("  # hello"), None);
        assert!(parse_line(r#"  # cs: {"record":"x","a":1}"#).unwrap().is_ok());
        assert!(parse_line(r#"# cs:{"record":"x"}"#).unwrap().unwrap_err().contains("one space"));
        assert!(parse_line(r#"# cs: {"record":"x","#).unwrap().unwrap_err().contains("truncated JSON"));
        assert!(parse_line(r#"# cs: {"record":"x"} trailing"#).unwrap().unwrap_err().contains("invalid JSON"));
        assert!(parse_line("# cs: [1,2]").unwrap().unwrap_err().contains("not a JSON object"));
        assert!(parse_line(r#"# cs: {"a":1}"#).unwrap().unwrap_err().contains("no \"record\" field"));
        assert!(parse_line(r#"# cs: {"record":3}"#).unwrap().unwrap_err().contains("must be a string"));
        assert!(parse_line(r#"# cs: {"record":""}"#).unwrap().unwrap_err().contains("empty"));
    }

    #[test]
    fn field_order_is_kept() {
        let o = parse_line(r#"# cs: {"record":"x","z":1,"a":2}"#).unwrap().unwrap();
        assert_eq!(o.keys().collect::<Vec<_>>(), ["record", "z", "a"]);
    }

    #[test]
    fn valid_contract() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":1}"#;
        let p = contract(&doc(&[BOOT], &format!("ok 1 a\nok 2 b # SKIP r\n{end}\n")));
        assert_eq!(p, Vec::<String>::new());
    }

    #[test]
    fn first_must_be_boot_with_a_known_schema() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        assert_has(
            &contract(&doc(&[r#"# cs: {"record":"cache"}"#], &format!("ok 1 a\n{end}\n"))),
            "first record is 'cache', expected 'boot'",
        );
        let b9 = BOOT.replace("\"schema\":2", "\"schema\":9");
        assert_has(&contract(&doc(&[&b9], &format!("ok 1 a\n{end}\n"))), "boot record has schema 9; this tool reads schemas 1..=2");
        // Schema 1 is read as the schema-1 tool read it: no "args", kinds it did not know.
        let b1 = BOOT.replace("\"schema\":2", "\"schema\":1").replace(",\"args\":\"\"", "");
        let timer = r#"# cs: {"record":"timer","source":"cntvct","hz":54000000}"#;
        assert_eq!(contract(&doc(&[&b1, timer], &format!("ok 1 a\n{end}\n"))), Vec::<String>::new());
        let b3 = BOOT.replace("\"schema\":2,", "");
        assert_has(&contract(&doc(&[&b3], &format!("ok 1 a\n{end}\n"))), "'boot' record has no \"schema\" field");
        let b4 = BOOT.replace("0x410fd083", "410fd083");
        assert_has(&contract(&doc(&[&b4], &format!("ok 1 a\n{end}\n"))), "is not a 0x… hex string");
    }

    #[test]
    fn records_follow_their_declaration() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        let p = contract(&doc(&[BOOT, r#"# cs: {"record":"nosuch","x":1}"#], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "record kind 'nosuch' is not declared");
        let p = contract(&doc(
            &[BOOT, r#"# cs: {"record":"setway","op":"cisw","scope":"loc","ops":"many","bogus":1}"#],
            &format!("ok 1 a\n{end}\n"),
        ));
        assert_has(&p, "'setway' record: \"ops\" must be uint, found \"many\"");
        assert_has(&p, "'setway' record has an undeclared field \"bogus\"");
        let p = contract(&doc(&[BOOT, r#"# cs: {"record":"setway","op":"cisw","ops":1}"#], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "'setway' record has no \"scope\" field");
        let p = contract(&doc(&[BOOT, r#"# cs: {"record":"setway","scope":"loc","op":"cisw","ops":1}"#], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "'setway' record: \"op\" comes after \"scope\", against the declared order");
        let no_args = BOOT.replace(",\"args\":\"\"", "");
        assert_has(&contract(&doc(&[&no_args], &format!("ok 1 a\n{end}\n"))), "'boot' record has no \"args\" field");
    }

    #[test]
    fn last_must_be_end_matching_results() {
        let p = contract(&doc(&[BOOT], "ok 1 a\n"));
        assert_has(&p, "last record is 'boot', expected 'end'");
        let end = r#"# cs: {"record":"end","passed":2,"failed":0,"skipped":0}"#;
        let p = contract(&doc(&[BOOT], &format!("ok 1 a\nnot ok 2 b\n{end}\n")));
        assert_has(&p, "end record says passed=2 failed=0 skipped=0, but the KTAP leaf results are passed=1 failed=1 skipped=0");
        let end = r#"# cs: {"record":"end","passed":"1","failed":0,"skipped":0}"#;
        assert_has(&contract(&doc(&[BOOT], &format!("ok 1 a\n{end}\n"))), "\"passed\" must be a non-negative integer");
    }

    #[test]
    fn duplicates_and_order() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        let p = contract(&doc(&[BOOT, end, BOOT], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "second 'boot' record");
        assert_has(&p, "'end' record is not the last record");
    }

    #[test]
    fn no_records_and_records_in_noise() {
        assert_has(&contract("KTAP version 1\n1..1\nok 1 a\n"), "no '# cs:' records");
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        let p = contract(&format!("{BOOT}\n{}", doc(&[BOOT], &format!("ok 1 a\n{end}\n"))));
        assert_has(&p, "1: 'boot' record before the 'KTAP version 1' line (line 2)");
    }

    #[test]
    fn broken_record_lines_are_problems() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        let p = contract(&doc(&[BOOT, r#"# cs: {"record":"metric","bench":"#], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "4: record is truncated JSON");
    }

    #[test]
    fn metric_schema_and_duplicate_keys() {
        let end = r#"# cs: {"record":"end","passed":1,"failed":0,"skipped":0}"#;
        let m = r#"# cs: {"record":"metric","bench":"latency","variant":"chase","attr":"wb","bytes":4096,"reps":5,"min":1,"median":2,"max":3,"mad":0.5,"unit":"ns","source":"cntvct","emulated":true}"#;
        let p = contract(&doc(&[BOOT, m, m], &format!("ok 1 a\n{end}\n")));
        assert_has(&p, "5: metric key 'latency/chase/wb/4096 [cntvct ns]' already used at line 4");
        let bad = m.replace("\"source\":\"cntvct\"", "\"source\":\"tsc\"");
        assert_has(&contract(&doc(&[BOOT, &bad], &format!("ok 1 a\n{end}\n"))), "\"source\" 'tsc' is not one of cntvct, pmccntr, model");
        let nomed = m.replace("\"median\":2,", "");
        assert_has(&contract(&doc(&[BOOT, &nomed], &format!("ok 1 a\n{end}\n"))), "metric record: no \"median\"");
    }
}
