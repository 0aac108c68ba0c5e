//! The record emitter: one JSON object per `# cs: {…}` line, of a kind the record contract
//! declares ([`cachescope_arch::record`], docs/records.md): the one emitter of the kernel and of
//! the cache-model plugin.
//!
//! Building is pure (host-tested); [`Record::emit`] prints the line at the current KTAP depth.

use alloc::string::String;
use core::fmt::Write;

pub use cachescope_arch::record::{Kind, SCHEMA};

/// A record under construction. Field order is insertion order.
#[must_use = "a record is printed only by emit()"]
pub struct Record {
    buf: String,
}

impl Record {
    /// Starts a record of the given kind (`"record":kind`); its fields follow in declaration
    /// order (the host checks every record against the declaration).
    pub fn new(kind: &Kind) -> Self {
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

    /// Adds a string field.
    pub fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        push_json_str(&mut self.buf, v);
        self
    }

    /// Adds an unsigned integer field.
    pub fn u64(mut self, k: &str, v: u64) -> Self {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    /// Adds a signed integer field.
    pub fn i64(mut self, k: &str, v: i64) -> Self {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    /// Adds a number with a fixed number of decimals (JSON has no NaN/inf: those become null).
    pub fn f64(mut self, k: &str, v: f64, decimals: usize) -> Self {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.buf, "{v:.decimals$}");
        } else {
            self.buf.push_str("null");
        }
        self
    }

    /// Adds a value as a hex string, `"0x…"` (addresses and raw register values).
    pub fn hex(mut self, k: &str, v: u64) -> Self {
        self.key(k);
        let _ = write!(self.buf, "\"{v:#x}\"");
        self
    }

    /// Adds a boolean field.
    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }

    /// Adds a JSON `null`.
    pub fn null(mut self, k: &str) -> Self {
        self.key(k);
        self.buf.push_str("null");
        self
    }

    /// Adds an object of name → unsigned integer (a measurement's `params`).
    pub fn params(mut self, k: &str, vs: &[(&str, u64)]) -> Self {
        self.key(k);
        self.buf.push('{');
        for (i, (name, v)) in vs.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            push_json_str(&mut self.buf, name);
            let _ = write!(self.buf, ":{v}");
        }
        self.buf.push('}');
        self
    }

    /// Adds an array of unsigned integers.
    pub fn u64_array(mut self, k: &str, vs: &[u64]) -> Self {
        self.key(k);
        self.buf.push('[');
        for (i, v) in vs.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            let _ = write!(self.buf, "{v}");
        }
        self.buf.push(']');
        self
    }

    /// The finished JSON object.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }

    /// Prints the record as `# cs: {…}` at the current KTAP depth.
    #[cfg(target_os = "none")]
    pub fn emit(self) {
        let json = self.finish();
        crate::console::write_indented_line(format_args!("# cs: {json}"));
    }
}

/// Appends `s` as a JSON string literal.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_order_and_escaped() {
        let j = Record::new(&cachescope_arch::record::BOOT)
            .u64("schema", 1)
            .str("cpu", "a \"q\"\n")
            .hex("midr", 0x410f_d083)
            .bool("x", true)
            .finish();
        assert_eq!(j, r#"{"record":"boot","schema":1,"cpu":"a \"q\"\n","midr":"0x410fd083","x":true}"#);
    }

    #[test]
    fn floats_and_arrays() {
        let j = Record::new(&cachescope_arch::record::METRIC)
            .f64("v", 1.23456, 2)
            .f64("n", f64::NAN, 1)
            .u64_array("a", &[1, 2])
            .params("p", &[("t", 3), ("u", 4)])
            .finish();
        assert_eq!(j, r#"{"record":"metric","v":1.23,"n":null,"a":[1,2],"p":{"t":3,"u":4}}"#);
    }

    #[test]
    fn control_chars() {
        let mut s = String::new();
        push_json_str(&mut s, "\u{1}");
        assert_eq!(s, "\"\\u0001\"");
    }
}
