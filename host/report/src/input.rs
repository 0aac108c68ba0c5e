//! A UART log as numbered lines, from its bytes ([`Log::from_bytes`]; reading it from a file,
//! stdin or a serial device, and telling what it is, is [`crate::source`]).
//!
//! Line endings may be LF or CRLF (the PL011 prints CRLF); every trailing `\r` is dropped, and so
//! is a UTF-8 byte-order mark at the very start (some Windows serial terminals write one). Bytes
//! that are not UTF-8, control characters and over-long lines are not errors here: they are
//! recorded on the line as a [`LineDefect`], and each consumer decides (noise before the KTAP
//! version line may contain anything; a line inside the KTAP document may not).

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Longest line kept in full; longer lines are cut and marked [`LineDefect::TooLong`].
pub const MAX_LINE: usize = 1 << 20;
/// Largest input accepted (a UART log of a full run is a few MiB at most).
pub const MAX_INPUT: u64 = 256 << 20;
/// The UTF-8 byte-order mark, skipped at the start of a log.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

/// An error that stops a command, with a message meant for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error(s)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Self {
        Error(s.to_string())
    }
}

/// Result type of the tool.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a line cannot be taken at face value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineDefect {
    /// The bytes are not UTF-8; `offset` is the first bad byte within the line.
    InvalidUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// A control character other than TAB (e.g. NUL from line noise).
    ControlChar {
        /// The character's code.
        code: u32,
        /// Byte offset within the line.
        offset: usize,
    },
    /// The line is longer than [`MAX_LINE`]; only its start is kept.
    TooLong {
        /// Its full length in bytes.
        len: usize,
    },
}

impl fmt::Display for LineDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LineDefect::InvalidUtf8 { offset } => {
                write!(f, "bytes that are not UTF-8 (from byte {offset}): binary data or a wrong baud rate?")
            }
            LineDefect::ControlChar { code, offset } => {
                write!(f, "control character 0x{code:02x} at byte {offset}: line noise or binary data?")
            }
            LineDefect::TooLong { len } => {
                write!(f, "line of {len} bytes is longer than the {MAX_LINE}-byte limit (binary data or missing newlines?)")
            }
        }
    }
}

/// One line of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// 1-based line number in the source.
    pub no: usize,
    /// The text without its line ending (lossily decoded if not UTF-8, cut if too long).
    pub text: String,
    /// Why the text is not trustworthy, if it is not.
    pub defect: Option<LineDefect>,
}

/// A whole log.
#[derive(Debug, Clone)]
pub struct Log {
    /// How to name the source in messages (the path, or `<stdin>`).
    pub name: String,
    /// Its lines in order.
    pub lines: Vec<LogLine>,
}

impl Log {
    /// Splits raw bytes into lines (LF or CRLF; a final line without newline is kept; a leading
    /// byte-order mark is skipped).
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Log {
        let mut lines = Vec::new();
        let mut rest = bytes.strip_prefix(BOM).unwrap_or(bytes);
        let mut no = 0;
        while !rest.is_empty() {
            let (raw, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = next;
            no += 1;
            lines.push(decode_line(no, raw));
        }
        Log { name: name.to_string(), lines }
    }
}

/// The cache model's log beside a run's log, as the runner names it: `LOG.model` (qemu-run's
/// `"$CS_LOG.model"`), else `NAME.model` for `NAME.log` (scripts/run-catalogue's rows). `None`
/// for stdin or when neither is a file.
pub fn model_log_beside(run: &str) -> Option<String> {
    if run == "-" {
        return None;
    }
    let mut candidates = vec![format!("{run}.model")];
    candidates.extend(run.strip_suffix(".log").map(|stem| format!("{stem}.model")));
    candidates.into_iter().find(|c| Path::new(c).is_file())
}

pub(crate) fn read_limited(r: impl Read, name: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(MAX_INPUT + 1).read_to_end(&mut bytes).map_err(|e| Error(format!("{name}: read error: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(Error(format!("{name}: larger than {} MiB; not a UART log?", MAX_INPUT >> 20)));
    }
    Ok(bytes)
}

fn decode_line(no: usize, raw: &[u8]) -> LogLine {
    let mut raw = raw;
    while let [head @ .., b'\r'] = raw {
        raw = head;
    }
    let mut defect = None;
    let full_len = raw.len();
    if full_len > MAX_LINE {
        raw = &raw[..MAX_LINE];
        defect = Some(LineDefect::TooLong { len: full_len });
    }
    let text = match std::str::from_utf8(raw) {
        Ok(s) => s.to_string(),
        Err(e) => {
            defect = defect.or(Some(LineDefect::InvalidUtf8 { offset: e.valid_up_to() }));
            String::from_utf8_lossy(raw).into_owned()
        }
    };
    if defect.is_none() {
        if let Some((offset, c)) = text.char_indices().find(|&(_, c)| c.is_control() && c != '\t') {
            defect = Some(LineDefect::ControlChar { code: c as u32, offset });
        }
    }
    LogLine { no, text, defect }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_final_line_without_newline() {
        let log = Log::from_bytes("t", b"a\r\nb\r\r\nc");
        let texts: Vec<_> = log.lines.iter().map(|l| (l.no, l.text.as_str(), l.defect)).collect();
        assert_eq!(texts, vec![(1, "a", None), (2, "b", None), (3, "c", None)]);
    }

    #[test]
    fn leading_byte_order_mark_is_skipped() {
        let log = Log::from_bytes("t", b"\xef\xbb\xbfKTAP version 1\r\n1..0\r\n");
        assert_eq!(log.lines[0].text, "KTAP version 1");
        assert_eq!(log.lines[0].defect, None);
        // Only at the start: a BOM inside a line is kept (U+FEFF is not a control character).
        let log = Log::from_bytes("t", b"a\n\xef\xbb\xbfb\n");
        assert_eq!(log.lines[1].text, "\u{feff}b");
    }

    #[test]
    fn empty_lines_are_kept_and_numbered() {
        let log = Log::from_bytes("t", b"\n\nx\n");
        assert_eq!(log.lines.len(), 3);
        assert_eq!(log.lines[2].no, 3);
        assert_eq!(log.lines[0].text, "");
    }

    #[test]
    fn binary_garbage_is_marked_not_fatal() {
        let log = Log::from_bytes("t", b"ok\n\xff\xfe\x00x\nab\x00c\n");
        assert_eq!(log.lines[0].defect, None);
        assert_eq!(log.lines[1].defect, Some(LineDefect::InvalidUtf8 { offset: 0 }));
        assert_eq!(log.lines[2].defect, Some(LineDefect::ControlChar { code: 0, offset: 2 }));
    }

    #[test]
    fn huge_line_is_cut_and_marked() {
        let mut bytes = vec![b'x'; MAX_LINE + 10];
        bytes.extend_from_slice(b"\nnext\n");
        let log = Log::from_bytes("t", &bytes);
        assert_eq!(log.lines[0].text.len(), MAX_LINE);
        assert_eq!(log.lines[0].defect, Some(LineDefect::TooLong { len: MAX_LINE + 10 }));
        assert_eq!(log.lines[1].text, "next");
    }
}

/// One rule violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number; 0 when the problem concerns the whole file.
    pub line: usize,
    /// What is wrong, for a person.
    pub msg: String,
}

impl Problem {
    /// A problem at `line`.
    pub fn new(line: usize, msg: impl Into<String>) -> Self {
        Problem { line, msg: msg.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.msg)
    }
}
