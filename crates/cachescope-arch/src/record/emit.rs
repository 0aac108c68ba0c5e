//! The record emitter: a record's JSON object, fields in declaration order, written to any
//! [`fmt::Write`] (no allocation), and the untyped [`Record`] writer behind the `alloc` feature.
//!
//! Every typed builder ([`super::Boot`], [`super::Metric`], …) stores one [`Value`] per declared
//! field and writes them through [`write_record`]; its `Display` is the JSON object, so the
//! kernel prints a record without allocating and the cache-model plugin formats it into its
//! output. JSON strings are escaped by [`write_json_str`]; a number ([`super::Ty::Num`]) is
//! written with a fixed number of decimals, `null` when it is not finite (JSON has no NaN).

use super::Kind;
use core::fmt::{self, Write};

/// One field's value in a builder, of the field's declared [`super::Ty`] (the builder's setter
/// decides which variant; nothing else constructs one).
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
    /// Writes the value as JSON.
    pub fn write(&self, out: &mut dyn Write) -> fmt::Result {
        match *self {
            Value::Str(s) => write_json_str(out, s),
            Value::UInt(v) => write!(out, "{v}"),
            Value::Num(v, decimals) if v.is_finite() => write!(out, "{v:.decimals$}"),
            Value::Num(..) | Value::Null => out.write_str("null"),
            Value::Hex(v) => write!(out, "\"{v:#x}\""),
            Value::Bool(b) => out.write_str(if b { "true" } else { "false" }),
            Value::UIntList(vs) => {
                out.write_char('[')?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        out.write_char(',')?;
                    }
                    write!(out, "{v}")?;
                }
                out.write_char(']')
            }
            Value::Params(vs) => {
                out.write_char('{')?;
                for (i, (name, v)) in vs.iter().enumerate() {
                    if i > 0 {
                        out.write_char(',')?;
                    }
                    write_json_str(out, name)?;
                    write!(out, ":{v}")?;
                }
                out.write_char('}')
            }
        }
    }
}

/// What every generated builder is: a kind and one optional value per declared field (in
/// declaration order); its `Display` is the record's JSON object ([`write_record`]).
pub trait Builder: fmt::Display {
    /// The kind it builds.
    const KIND: &'static Kind;

    /// One value per field of [`Builder::KIND`], in declaration order (`None`: not set).
    fn values(&self) -> &[Option<Value<'_>>];

    /// The first required field not set, if any (the record would break the contract).
    fn missing(&self) -> Option<&'static str> {
        Self::KIND.fields.iter().zip(self.values()).find(|(f, v)| f.required && v.is_none()).map(|(f, _)| f.name)
    }

    /// The record as a JSON string.
    #[cfg(any(test, feature = "alloc"))]
    fn finish(&self) -> alloc::string::String {
        alloc::format!("{self}")
    }
}

/// Writes `{"record":KIND,…}`: the set fields in declaration order. Debug builds check that
/// every required field is set (a missing one is a bug in the emitter, caught by its tests).
pub fn write_record(out: &mut dyn Write, kind: &Kind, values: &[Option<Value<'_>>]) -> fmt::Result {
    debug_assert_eq!(kind.fields.len(), values.len());
    if cfg!(debug_assertions) {
        if let Some((f, _)) = kind.fields.iter().zip(values).find(|(f, v)| f.required && v.is_none()) {
            panic!("a `{}` record without its required field `{}`", kind.name, f.name);
        }
    }
    out.write_str("{\"record\":")?;
    write_json_str(out, kind.name)?;
    for (f, v) in kind.fields.iter().zip(values) {
        if let Some(v) = v {
            out.write_char(',')?;
            write_json_str(out, f.name)?;
            out.write_char(':')?;
            v.write(out)?;
        }
    }
    out.write_char('}')
}

/// Writes `s` as a JSON string literal (quotes, backslashes and control characters escaped).
/// The runs between escapes go out in one `write_str` each: on the kernel's console every call
/// is a trip through the formatter, so a record costs a few calls per field, not one per byte.
pub fn write_json_str(out: &mut dyn Write, s: &str) -> fmt::Result {
    out.write_char('"')?;
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.write_str(&s[start..i])?;
        if escape.is_empty() {
            write!(out, "\\u{b:04x}")?;
        } else {
            out.write_str(escape)?;
        }
        start = i + 1;
    }
    out.write_str(&s[start..])?;
    out.write_char('"')
}

/// Appends `s` as a JSON string literal.
#[cfg(any(test, feature = "alloc"))]
pub fn push_json_str(out: &mut alloc::string::String, s: &str) {
    // Writing into a String cannot fail.
    let _ = write_json_str(out, s);
}

/// The untyped writer: keys are not checked against the kind's declaration. Only the
/// cache-model plugin's remaining sites use it; everything else builds records through the
/// typed builders, where an undeclared field does not compile. Field order is insertion order.
#[cfg(any(test, feature = "alloc"))]
#[must_use = "a record is only built: finish() returns it"]
pub struct Record {
    buf: alloc::string::String,
}

#[cfg(any(test, feature = "alloc"))]
impl Record {
    /// Starts a record of the given kind (`"record":kind`).
    pub fn new(kind: &Kind) -> Self {
        let mut r = Self { buf: alloc::string::String::with_capacity(128) };
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

    fn value(mut self, k: &str, v: Value<'_>) -> Self {
        self.key(k);
        // Writing into a String cannot fail.
        let _ = v.write(&mut self.buf);
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
    pub fn finish(mut self) -> alloc::string::String {
        self.buf.push('}');
        self.buf
    }
}
