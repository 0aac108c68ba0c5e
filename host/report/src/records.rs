//! The `# cs: {json}` record lines: parsing, extraction and the typed views' object. The
//! records contract a log must keep is checked in [`crate::contract`].

use crate::input::{Log, Problem};
use cachescope_arch::record;
use serde_json::{Map, Value};

/// The newest record schema version this tool reads (it reads every version from
/// `cachescope_arch::record::OLDEST_SCHEMA`).
pub const SCHEMA: u64 = cachescope_arch::record::SCHEMA as u64;

/// The oldest record schema version this tool reads.
pub const OLDEST_SCHEMA: u64 = cachescope_arch::record::OLDEST_SCHEMA as u64;

/// A JSON object record: a `serde_json` object (`Deref`s to it) that the record contract's
/// typed views read (`cachescope_arch::record::MetricView::of(&obj)`, [`Record::view`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object(pub Map<String, Value>);

impl std::ops::Deref for Object {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl std::ops::DerefMut for Object {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.0
    }
}

impl Object {
    /// The record's kind (its `"record"` field; empty when it has none).
    pub fn kind(&self) -> &str {
        self.get("record").and_then(Value::as_str).unwrap_or("")
    }
}

impl From<Map<String, Value>> for Object {
    fn from(m: Map<String, Value>) -> Object {
        Object(m)
    }
}

impl record::Object for Object {
    type List = Vec<Value>;
    type Map = Map<String, Value>;
    fn str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }
    fn uint(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }
    fn num(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }
    /// `"0x…"`; a plain number is taken as it is (as [`hex`]).
    fn hex(&self, key: &str) -> Option<u64> {
        hex(self, key)
    }
    fn bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }
    fn list(&self, key: &str) -> Option<&Vec<Value>> {
        self.get(key)?.as_array()
    }
    fn map(&self, key: &str) -> Option<&Map<String, Value>> {
        self.get(key)?.as_object()
    }
}

/// One record and where it was printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in its log.
    pub line: usize,
    /// The object, fields in printed order.
    pub obj: Object,
}

impl Record {
    /// The record's kind (its `"record"` field).
    pub fn kind(&self) -> &str {
        self.obj.kind()
    }

    /// The record through its kind's typed view (`r.view::<record::MetricView<_>>()`), `None`
    /// when it is a record of another kind.
    pub fn view<'a, V: record::View<'a, Object>>(&'a self) -> Option<V> {
        V::of(&self.obj)
    }
}

/// A `Hex` field (`"0x…"`, the record contract's addresses and register values) as a number; a
/// plain number is taken as it is.
pub fn hex(obj: &Object, key: &str) -> Option<u64> {
    match obj.get(key)? {
        Value::String(s) => u64::from_str_radix(s.strip_prefix("0x")?, 16).ok(),
        v => v.as_u64(),
    }
}

/// Parses one line: `None` if it is not a record line, `Some(Err)` if it is a broken one.
pub fn parse_line(text: &str) -> Option<Result<Object, String>> {
    let rest = text.trim_start_matches(' ').strip_prefix("# cs:")?;
    let Some(json) = rest.strip_prefix(' ') else {
        return Some(Err("record line must be '# cs: {…}' (one space after 'cs:')".into()));
    };
    let value: Value = match serde_json::from_str(json.trim_end()) {
        Ok(v) => v,
        Err(e) => {
            let what = if e.is_eof() { "truncated JSON" } else { "invalid JSON" };
            return Some(Err(format!("record is {what}: {e} (in '{}')", short(json))));
        }
    };
    let Value::Object(obj) = value else {
        return Some(Err(format!("record is not a JSON object: '{}'", short(json))));
    };
    match obj.get("record") {
        None => Some(Err("record has no \"record\" field naming its kind".into())),
        Some(Value::String(s)) if s.is_empty() => Some(Err("record has an empty \"record\" kind".into())),
        Some(Value::String(_)) => Some(Ok(Object(obj))),
        Some(v) => Some(Err(format!("\"record\" must be a string, found {v}"))),
    }
}

pub(crate) fn short(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// All records of a log, and the broken record lines as problems. Lines with a
/// [`crate::input::LineDefect`] are never records.
pub fn extract(log: &Log) -> (Vec<Record>, Vec<Problem>) {
    let mut records = Vec::new();
    let mut problems = Vec::new();
    for l in &log.lines {
        if l.defect.is_some() {
            continue;
        }
        match parse_line(&l.text) {
            None => {}
            Some(Ok(obj)) => records.push(Record { line: l.no, obj }),
            Some(Err(e)) => problems.push(Problem::new(l.no, e)),
        }
    }
    (records, problems)
}

/// Like [`extract`], but any broken record line is an error naming `file:line`.
pub fn extract_strict(log: &Log) -> crate::input::Result<Vec<Record>> {
    let (records, problems) = extract(log);
    match problems.first() {
        None => Ok(records),
        Some(p) => {
            let more = if problems.len() > 1 { format!(" (and {} more broken record lines)", problems.len() - 1) } else { String::new() };
            Err(format!("{}:{}: {}{more}", log.name, p.line, p.msg).into())
        }
    }
}

/// Whether the run was made under QEMU's `-icount` (so that its timer figures are instruction
/// counts), as its records show: the `boot` record names a cache-model profile (`model`, set by
/// the runner, which adds `-icount shift=0` whenever it loads the model), or a `boot`,
/// `model-run` or `model-profile` record says `"icount": true`. `report` and `summary` decide it
/// this one way; their `--icount` / `--no-icount` flags override it.
pub fn run_used_icount<'a>(recs: impl IntoIterator<Item = &'a Record>) -> bool {
    // `icount` is no declared field: logs of runners that wrote it are still read.
    let icount = |r: &Record| r.obj.get("icount").and_then(Value::as_bool) == Some(true);
    recs.into_iter().any(|r| match r.view::<record::BootView<_>>() {
        Some(b) => icount(r) || b.model().is_some_and(|m| !m.is_empty() && m != "off"),
        None => matches!(r.kind(), "model-run" | "model-profile") && icount(r),
    })
}
