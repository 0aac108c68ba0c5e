//! The record emitter (the `alloc` feature): a record's JSON object built in a `String` as its
//! fields are set, one `"key":value` appended per setter, exactly as the wire format has them.
//!
//! Every typed builder ([`super::Boot`], [`super::Metric`], …) wraps one [`Record`]; its setters
//! append through [`Record::value`]. Setters must be called in declaration order (the wire
//! order): debug builds check it, and that every required field was set, when the record is
//! finished ([`check`]). JSON strings are escaped by [`push_json_str`]; a number
//! ([`super::Ty::Num`]) is written with a fixed number of decimals, `null` when it is not finite
//! (JSON has no NaN).

use super::RecordKind;
use alloc::string::String;
use core::fmt::Write;

/// One field's value, of the field's declared [`super::Ty`] (the builder's setter decides
/// which variant).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A string ([`super::Ty::Str`], [`super::Ty::StrOrNull`]).
    Str(&'a str),
    /// A non-negative integer ([`super::Ty::UInt`], [`super::Ty::UIntOrNull`]).
    UInt(u64),
    /// A number with this many decimals ([`super::Ty::Num`]).
    Num(f64, usize),
    /// A value written as `"0x…"` ([`super::Ty::Hex`]).
    Hex(u64),
    /// `true` / `false` ([`super::Ty::Bool`]).
    Bool(bool),
    /// `null` ([`super::Ty::UIntOrNull`], [`super::Ty::StrOrNull`]).
    Null,
    /// An array of non-negative integers ([`super::Ty::UIntList`]).
    UIntList(&'a [u64]),
    /// An object of name → non-negative integer ([`super::Ty::Params`]).
    Params(&'a [(&'a str, u64)]),
}

impl Value<'_> {
    /// Appends the value as JSON.
    pub fn push(&self, out: &mut String) {
        // Writing into a String cannot fail.
        let _ = match *self {
            Value::Str(s) => {
                push_json_str(out, s);
                Ok(())
            }
            Value::UInt(v) => write!(out, "{v}"),
            Value::Num(v, decimals) if v.is_finite() => write!(out, "{v:.decimals$}"),
            Value::Num(..) | Value::Null => out.write_str("null"),
            Value::Hex(v) => write!(out, "\"{v:#x}\""),
            Value::Bool(b) => out.write_str(if b { "true" } else { "false" }),
            Value::UIntList(vs) => {
                out.push('[');
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{v}");
                }
                out.write_char(']')
            }
            Value::Params(vs) => {
                out.push('{');
                for (i, (name, v)) in vs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_json_str(out, name);
                    let _ = write!(out, ":{v}");
                }
                out.write_char('}')
            }
        };
    }
}

/// What every generated builder is: a record of [`Builder::KIND`] under construction.
pub trait Builder: Sized {
    /// The kind it builds.
    const KIND: &'static RecordKind;

    /// The record so far.
    fn record(&self) -> &Record;

    /// Takes the record out.
    fn into_record(self) -> Record;

    /// The finished JSON object. Debug builds panic when the fields were not set in declaration
    /// order or a required one is missing ([`check`]): a bug in the emitter, caught by its tests.
    fn finish(self) -> String {
        let json = self.into_record().finish();
        if cfg!(debug_assertions) {
            if let Err(e) = check(Self::KIND, &json) {
                panic!("a `{}` record {e}: {json}", Self::KIND.name);
            }
        }
        json
    }
}

/// Why a record this module wrote breaks its kind's declaration: a field out of declaration
/// order (or undeclared), or a required field missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// This field is not declared after the one before it.
    OutOfOrder(usize),
    /// This required field is not set.
    Missing(&'static str),
}

impl core::fmt::Display for Broken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Broken::OutOfOrder(at) => write!(f, "has a field out of declaration order at byte {at}"),
            Broken::Missing(name) => write!(f, "without its required field `{name}`"),
        }
    }
}

/// Checks a finished record of `kind` (as [`Record`] writes it: keys are plain identifiers)
/// against the declaration: its keys in declaration order, every required field present.
pub fn check(kind: &RecordKind, json: &str) -> Result<(), Broken> {
    let b = json.as_bytes();
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    let mut next = 0; // the first declared field the next key may be
    let mut seen: u64 = 0; // fields present, by declaration index (a test keeps kinds within 64)
    let mut seen_record = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if quoted {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => quoted = false,
                _ => {}
            }
        } else {
            match c {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth = depth.saturating_sub(1),
                b'"' if depth == 1 && matches!(b[i - 1], b'{' | b',') => {
                    let end = i + 1 + b[i + 1..].iter().position(|&c| c == b'"').ok_or(Broken::OutOfOrder(i))?;
                    let key = &json[i + 1..end];
                    if !seen_record {
                        seen_record = key == "record";
                    } else {
                        next += kind.fields[next..].iter().position(|f| f.name == key).ok_or(Broken::OutOfOrder(i))?;
                        seen |= 1 << next;
                        next += 1;
                    }
                    i = end;
                }
                b'"' => quoted = true,
                _ => {}
            }
        }
        i += 1;
    }
    match kind.fields.iter().enumerate().find(|(j, f)| f.required && seen & (1 << j) == 0) {
        Some((_, f)) => Err(Broken::Missing(f.name)),
        None => Ok(()),
    }
}

/// Appends `s` as a JSON string literal (quotes, backslashes and control characters escaped),
/// one character at a time (the `String` grows as it did when records were first built so).
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A record under construction: fields in the order they are added. The typed builders wrap
/// one; used directly (the cache-model plugin's remaining sites) its keys are not checked
/// against the declaration.
#[must_use = "a record is only built: finish() returns it"]
#[derive(Debug)]
pub struct Record {
    buf: String,
}

impl Record {
    /// Starts a record of the given kind (`"record":kind`).
    pub fn new(kind: &RecordKind) -> Self {
        let mut r = Self { buf: String::with_capacity(128) };
        r.buf.push('{');
        r.key("record");
        push_json_str(&mut r.buf, kind.name);
        r
    }

    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        push_json_str(&mut self.buf, k);
        self.buf.push(':');
    }

    /// Adds field `k` with value `v`.
    pub fn value(mut self, k: &str, v: Value<'_>) -> Self {
        self.key(k);
        v.push(&mut self.buf);
        self
    }

    /// Adds a string field.
    pub fn str(self, k: &str, v: &str) -> Self {
        self.value(k, Value::Str(v))
    }

    /// Adds an unsigned integer field.
    pub fn u64(self, k: &str, v: u64) -> Self {
        self.value(k, Value::UInt(v))
    }

    /// Adds a number with a fixed number of decimals (NaN/inf become null).
    pub fn f64(self, k: &str, v: f64, decimals: usize) -> Self {
        self.value(k, Value::Num(v, decimals))
    }

    /// Adds a value as a hex string, `"0x…"`.
    pub fn hex(self, k: &str, v: u64) -> Self {
        self.value(k, Value::Hex(v))
    }

    /// Adds a boolean field.
    pub fn bool(self, k: &str, v: bool) -> Self {
        self.value(k, Value::Bool(v))
    }

    /// Adds a JSON `null`.
    pub fn null(self, k: &str) -> Self {
        self.value(k, Value::Null)
    }

    /// The finished JSON object.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}
