//! `extract`: records to JSON and CSV.
//!
//! - JSON: one array holding every record object exactly as printed (fields in printed order),
//!   one object per line.
//! - CSV: a directory with one file per record kind, `<kind>.csv` (e.g. `metric.csv`,
//!   `cache.csv`, `boot.csv`). Columns: `log_line` (the record's line in the log), then the union
//!   of the kind's field names in first-seen order. Strings are written raw, numbers and
//!   booleans as in JSON, `null` or a missing field as an empty cell, arrays and objects as
//!   their JSON text. RFC 4180 quoting (fields with `,` `"` or newlines are quoted, `"`
//!   doubled). Kind names are made file-safe (anything but `A-Za-z0-9_-` becomes `_`).

use crate::input::{Error, Result};
use crate::records::Record;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The JSON array text of `records`.
pub fn to_json(records: &[Record]) -> String {
    let mut s = String::from("[");
    for (i, r) in records.iter().enumerate() {
        s.push_str(if i == 0 { "\n  " } else { ",\n  " });
        s.push_str(&Value::Object(r.obj.0.clone()).to_string());
    }
    s.push_str(if records.is_empty() { "]\n" } else { "\n]\n" });
    s
}

/// Quotes one CSV field when needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => csv_field(s),
        Some(v) => csv_field(&v.to_string()),
    }
}

/// A file-safe form of a record kind.
pub fn safe_kind(kind: &str) -> String {
    kind.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// CSV text per (file-safe) kind, in kind order.
pub fn to_csv(records: &[Record]) -> BTreeMap<String, String> {
    let mut kinds: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in records {
        kinds.entry(safe_kind(r.kind())).or_default().push(r);
    }
    kinds
        .into_iter()
        .map(|(kind, rs)| {
            let mut cols: Vec<&str> = Vec::new();
            for r in &rs {
                for k in r.obj.keys() {
                    if !cols.contains(&k.as_str()) {
                        cols.push(k);
                    }
                }
            }
            // The record's place in the log; not `line`, which records use for a cache line size.
            let mut s = String::from(LOG_LINE);
            for c in &cols {
                s.push(',');
                s.push_str(&csv_field(c));
            }
            s.push('\n');
            for r in rs {
                s.push_str(&r.line.to_string());
                for c in &cols {
                    s.push(',');
                    s.push_str(&cell(r.obj.get(*c)));
                }
                s.push('\n');
            }
            (kind, s)
        })
        .collect()
}

/// The CSV column (and report-table column) holding a record's line number in its log.
pub const LOG_LINE: &str = "log_line";

/// Writes `text` to `path` (`-` = stdout).
pub fn write_out(path: &str, text: &str) -> Result<()> {
    if path == "-" {
        use std::io::Write;
        return std::io::stdout().write_all(text.as_bytes()).map_err(|e| Error(format!("<stdout>: {e}")));
    }
    std::fs::write(path, text).map_err(|e| Error(format!("{path}: cannot write: {e}")))
}

/// Writes the CSV directory; returns the files written.
pub fn write_csv_dir(dir: &str, records: &[Record]) -> Result<Vec<String>> {
    let d = Path::new(dir);
    if d.exists() && !d.is_dir() {
        return Err(Error(format!("{dir}: exists and is not a directory (--csv takes a directory: one <kind>.csv per record kind)")));
    }
    std::fs::create_dir_all(d).map_err(|e| Error(format!("{dir}: cannot create directory: {e}")))?;
    let mut written = Vec::new();
    for (kind, text) in to_csv(records) {
        let p = d.join(format!("{kind}.csv"));
        let name = p.display().to_string();
        std::fs::write(&p, text).map_err(|e| Error(format!("{name}: cannot write: {e}")))?;
        written.push(name);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Log;
    use crate::records::extract;

    fn recs(text: &str) -> Vec<Record> {
        extract(&Log::from_bytes("t", text.as_bytes())).0
    }

    #[test]
    fn json_array_keeps_order() {
        let r = recs("# cs: {\"record\":\"a\",\"z\":1,\"b\":[1,2]}\n  # cs: {\"record\":\"b\",\"s\":\"x\"}\n");
        assert_eq!(to_json(&r), "[\n  {\"record\":\"a\",\"z\":1,\"b\":[1,2]},\n  {\"record\":\"b\",\"s\":\"x\"}\n]\n");
        assert_eq!(to_json(&[]), "[]\n");
        let back: Value = serde_json::from_str(&to_json(&r)).unwrap();
        assert_eq!(back.as_array().unwrap().len(), 2);
    }

    #[test]
    fn csv_per_kind_with_union_of_columns() {
        let r = recs(concat!(
            "# cs: {\"record\":\"metric\",\"bench\":\"x\",\"median\":1.5}\n",
            "# cs: {\"record\":\"metric\",\"bench\":\"a,b\",\"tokens\":3,\"note\":\"say \\\"hi\\\"\",\"v\":null,\"arr\":[1]}\n",
            "# cs: {\"record\":\"odd/kind\"}\n",
        ));
        let csv = to_csv(&r);
        assert_eq!(csv.keys().collect::<Vec<_>>(), ["metric", "odd_kind"]);
        assert_eq!(
            csv["metric"],
            "log_line,record,bench,median,tokens,note,v,arr\n1,metric,x,1.5,,,,\n2,metric,\"a,b\",,3,\"say \"\"hi\"\"\",,[1]\n"
        );
        assert_eq!(csv["odd_kind"], "log_line,record\n3,odd/kind\n");
    }

    #[test]
    fn csv_dir_refuses_a_file() {
        let f = std::env::temp_dir().join(format!("cs-extract-file-{}", std::process::id()));
        std::fs::write(&f, "x").unwrap();
        let e = write_csv_dir(f.to_str().unwrap(), &[]).unwrap_err();
        assert!(e.0.contains("is not a directory"), "{e}");
        std::fs::remove_file(f).unwrap();
    }
}
