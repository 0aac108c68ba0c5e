//! `metric` records (issue 5): one measurement each.
//!
//! Schema: `{"record":"metric","bench":…,"variant":…,"attr":…,"bytes":…,"reps":…,"min":…,
//! "median":…,"max":…,"mad":…,"unit":…,"source":"cntvct"|"pmccntr"|"model","emulated":true|false}`
//! plus any extra fields. Required: `bench`, `median` (a number; `null` is reported), `unit`,
//! `source`, `emulated`. Type-checked when present: `variant`/`attr` strings, `bytes`/`reps`
//! non-negative integers, `min`/`max`/`mad` numbers with min ≤ median ≤ max and mad ≥ 0.
//!
//! **Metric key** (identity of a measurement across runs, used by `compare` and to spot
//! duplicates): `bench/variant/attr/bytes`, then its parameters sorted by name (e.g.
//! `tokens=512`, `stride=80`), then `[source unit]`. From schema 2 the record names its
//! parameters (`params`, declared in `cachescope_arch::record`); in schema-1 logs they are
//! every extra field whose value is a string or an integer, except the rule below.
//! Excluded from the key: the statistics and flags above, `phase`, booleans (flags or outcomes
//! such as `"verified":true`), non-integer numbers (a
//! derived measurement such as `"gib_per_s":1.8`), arrays/objects, and names in
//! [`MEASUREMENT_FIELDS`] or ending in one of [`MEASUREMENT_SUFFIXES`]. A missing
//! variant/attr/bytes prints as `-`. Example: `kv/append/wb/- stride=80 tokens=512 [cntvct ns]`.

use crate::records::{Object, Record};
use serde_json::Value;
use std::fmt;

/// The accepted `source` values.
pub const SOURCES: [&str; 3] = ["cntvct", "pmccntr", "model"];

/// Fields of the schema that are never part of the key.
const SCHEMA_FIELDS: [&str; 12] = ["record", "bench", "variant", "attr", "bytes", "reps", "min", "median", "max", "mad", "unit", "source"];

/// Extra field names that are measurements or notes, not parameters (never in the key).
pub const MEASUREMENT_FIELDS: [&str; 24] = [
    "emulated",
    "phase",
    "mean",
    "stddev",
    "sd",
    "cv",
    "p50",
    "p90",
    "p99",
    "total",
    "sum",
    "count",
    "resolution",
    "ticks",
    "cycles",
    "ns",
    "bandwidth",
    "rate",
    "per_load",
    "bytes_per_load",
    "bytes_per_s",
    "note",
    "label",
    "progress",
];

/// Name endings of extra fields that are measurements (e.g. `append_ns`, `scan_bytes_per_s`).
pub const MEASUREMENT_SUFFIXES: [&str; 9] = ["_per_s", "_per_sec", "_ns", "_ps", "_ticks", "_cycles", "_pct", "_mbps", "_per_load"];

fn is_key_extra(name: &str, v: &Value) -> Option<String> {
    if SCHEMA_FIELDS.contains(&name) || MEASUREMENT_FIELDS.contains(&name) || MEASUREMENT_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return None;
    }
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

/// The identity of a measurement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetricKey {
    /// Benchmark name.
    pub bench: String,
    /// Variant (e.g. `chase`, `ldnp`), if any.
    pub variant: Option<String>,
    /// Memory attribute (e.g. `wb`, `nc`), if any.
    pub attr: Option<String>,
    /// Working-set or buffer size, if any.
    pub bytes: Option<u64>,
    /// Distinguishing extra fields, sorted by name.
    pub extras: Vec<(String, String)>,
    /// Timing source.
    pub source: String,
    /// Unit of min/median/max/mad.
    pub unit: String,
}

impl MetricKey {
    /// The key without `[source unit]`: the same measurement point seen by any source.
    pub fn point(&self) -> String {
        let mut s = format!(
            "{}/{}/{}/{}",
            self.bench,
            self.variant.as_deref().unwrap_or("-"),
            self.attr.as_deref().unwrap_or("-"),
            self.bytes.map_or("-".to_string(), |b| b.to_string())
        );
        for (k, v) in &self.extras {
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{} {}]", self.point(), self.source, self.unit)
    }
}

/// A parsed metric record.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Line of the record in its log.
    pub line: usize,
    /// Its key.
    pub key: MetricKey,
    /// The median (`None` when the record has `null`).
    pub median: Option<f64>,
    /// Minimum.
    pub min: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
    /// Median absolute deviation.
    pub mad: Option<f64>,
    /// Repetitions.
    pub reps: Option<u64>,
    /// Whether measured under an emulator.
    pub emulated: Option<bool>,
    /// The whole record.
    pub obj: Object,
}

fn opt_str(o: &Object, k: &str, issues: &mut Vec<String>) -> Option<String> {
    match o.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => {
            issues.push(format!("\"{k}\" must be a string, found {v}"));
            Some(v.to_string())
        }
    }
}

fn opt_u64(o: &Object, k: &str, issues: &mut Vec<String>) -> Option<u64> {
    match o.get(k) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) => Some(n),
            None => {
                issues.push(format!("\"{k}\" must be a non-negative integer, found {v}"));
                None
            }
        },
    }
}

fn opt_f64(o: &Object, k: &str, issues: &mut Vec<String>) -> Option<f64> {
    match o.get(k) {
        None => None,
        Some(Value::Null) => {
            issues.push(format!("\"{k}\" is null (no measurement)"));
            None
        }
        Some(v) => match v.as_f64() {
            Some(n) => Some(n),
            None => {
                issues.push(format!("\"{k}\" must be a number, found {v}"));
                None
            }
        },
    }
}

fn req_str(o: &Object, k: &str) -> Result<String, String> {
    match o.get(k) {
        None => Err(format!("no \"{k}\" field")),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(v) => Err(format!("\"{k}\" must be a non-empty string, found {v}")),
    }
}

impl Metric {
    /// Parses a `metric` record. `Err` when it cannot be used at all (no bench, unit, source or
    /// median field); otherwise the metric and the schema violations found.
    pub fn from_record(r: &Record) -> Result<(Metric, Vec<String>), String> {
        let o = &r.obj;
        let bench = req_str(o, "bench")?;
        let unit = req_str(o, "unit")?;
        let source = req_str(o, "source")?;
        if !o.contains_key("median") {
            return Err("no \"median\" field".into());
        }
        let mut issues = Vec::new();
        let variant = opt_str(o, "variant", &mut issues);
        let attr = opt_str(o, "attr", &mut issues);
        let bytes = opt_u64(o, "bytes", &mut issues);
        let reps = opt_u64(o, "reps", &mut issues);
        let median = opt_f64(o, "median", &mut issues);
        let min = opt_f64(o, "min", &mut issues);
        let max = opt_f64(o, "max", &mut issues);
        let mad = opt_f64(o, "mad", &mut issues);
        if !SOURCES.contains(&source.as_str()) {
            issues.push(format!("\"source\" '{source}' is not one of {}", SOURCES.join(", ")));
        }
        let emulated = match o.get("emulated") {
            Some(Value::Bool(b)) => Some(*b),
            None => {
                issues.push("no \"emulated\" field (true under an emulator)".into());
                None
            }
            Some(v) => {
                issues.push(format!("\"emulated\" must be true or false, found {v}"));
                None
            }
        };
        if let (Some(lo), Some(m)) = (min, median) {
            if lo > m {
                issues.push(format!("min {lo} > median {m}"));
            }
        }
        if let (Some(m), Some(hi)) = (median, max) {
            if m > hi {
                issues.push(format!("median {m} > max {hi}"));
            }
        }
        if mad.is_some_and(|d| d < 0.0) {
            issues.push("mad is negative".into());
        }
        // Schema 2 names the identity (`params`); schema-1 logs leave it to the rule above.
        let mut extras: Vec<(String, String)> = match o.get("params") {
            Some(Value::Object(params)) => params
                .iter()
                .map(|(k, v)| match v.as_u64() {
                    Some(n) => (k.clone(), n.to_string()),
                    None => {
                        issues.push(format!("params.{k} must be a non-negative integer, found {v}"));
                        (k.clone(), v.to_string())
                    }
                })
                .collect(),
            Some(v) => {
                issues.push(format!("\"params\" must be an object of name: integer, found {v}"));
                Vec::new()
            }
            None => o.iter().filter_map(|(k, v)| is_key_extra(k, v).map(|s| (k.clone(), s))).collect(),
        };
        extras.sort();
        let key = MetricKey { bench, variant, attr, bytes, extras, source, unit };
        Ok((Metric { line: r.line, key, median, min, max, mad, reps, emulated, obj: o.clone() }, issues))
    }

    /// All usable metric records of `records` (unusable ones are skipped and returned as
    /// messages `line: problem`).
    pub fn collect(records: &[Record]) -> (Vec<Metric>, Vec<String>) {
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for r in records.iter().filter(|r| r.kind() == "metric") {
            match Metric::from_record(r) {
                Ok((m, _)) => out.push(m),
                Err(e) => skipped.push(format!("{}: metric record skipped: {e}", r.line)),
            }
        }
        (out, skipped)
    }

    /// A numeric parameter or extra field (e.g. `tokens`: in `params` from schema 2).
    pub fn num(&self, k: &str) -> Option<f64> {
        let params = self.obj.get("params").and_then(Value::as_object);
        params.and_then(|p| p.get(k)).or_else(|| self.obj.get(k)).and_then(Value::as_f64)
    }
}

/// Formats a byte count with binary units (`512 B`, `32 KiB`, `1.5 MiB`).
pub fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v.abs() >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{} {}", v.round() as i64, UNITS[u])
    } else {
        format!("{} {}", sig(v, 3), UNITS[u])
    }
}

/// Formats a number with `digits` significant digits, without exponent for ordinary values.
pub fn sig(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..=15).contains(&mag) {
        return format!("{v:.*e}", digits.saturating_sub(1));
    }
    let decimals = (digits as i32 - 1 - mag).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::parse_line;

    fn metric(json: &str) -> Result<(Metric, Vec<String>), String> {
        let obj = parse_line(&format!("# cs: {json}")).unwrap().unwrap();
        Metric::from_record(&Record { line: 7, obj })
    }

    #[test]
    fn key_with_extras() {
        let (m, issues) = metric(r#"{"record":"metric","bench":"kv","variant":"append","attr":"wb","reps":9,"min":1,"median":2,"max":3,"mad":0.1,"unit":"ns","source":"cntvct","emulated":false,"tokens":512,"stride":80,"gib_per_s":1.5,"scan_ns":12,"phase":"kv/append","layout":"aligned","verified":true}"#).unwrap();
        assert_eq!(issues, Vec::<String>::new());
        assert_eq!(m.key.to_string(), "kv/append/wb/- layout=aligned stride=80 tokens=512 [cntvct ns]");
        assert_eq!(m.key.point(), "kv/append/wb/- layout=aligned stride=80 tokens=512");
        assert_eq!(m.num("tokens"), Some(512.0));
    }

    #[test]
    fn schema_violations() {
        let (_, issues) = metric(
            r#"{"record":"metric","bench":"b","bytes":-1,"median":2,"min":3,"max":1,"mad":-1,"unit":"ns","source":"x","emulated":"yes"}"#,
        )
        .unwrap();
        let all = issues.join("; ");
        for needle in [
            "\"bytes\" must be a non-negative integer",
            "min 3 > median 2",
            "median 2 > max 1",
            "mad is negative",
            "'x' is not one of",
            "\"emulated\" must be true or false",
        ] {
            assert!(all.contains(needle), "{needle} not in {all}");
        }
        let (m, issues) = metric(r#"{"record":"metric","bench":"b","median":null,"unit":"ns","source":"model","emulated":true}"#).unwrap();
        assert_eq!(m.median, None);
        assert_eq!(issues, vec!["\"median\" is null (no measurement)".to_string()]);
        assert_eq!(metric(r#"{"record":"metric","median":1,"unit":"ns","source":"model"}"#).unwrap_err(), "no \"bench\" field");
        assert_eq!(metric(r#"{"record":"metric","bench":"","median":1}"#).unwrap_err(), "\"bench\" must be a non-empty string, found \"\"");
    }

    #[test]
    fn formatting() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(32768.0), "32 KiB");
        assert_eq!(human_bytes(1.5 * 1048576.0), "1.5 MiB");
        assert_eq!(sig(1234.5678, 3), "1235");
        assert_eq!(sig(0.012345, 3), "0.0123");
        assert_eq!(sig(2.0, 3), "2");
        assert_eq!(sig(f64::NAN, 3), "n/a");
        assert_eq!(sig(1.5e20, 3), "1.50e20");
    }
}
