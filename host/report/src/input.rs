//! Reading a UART log into numbered lines: from a file, from stdin (`-`) or from a serial
//! device (captured until the `end` record, see [`crate::capture`]).
//!
//! Line endings may be LF or CRLF (the PL011 prints CRLF); every trailing `\r` is dropped, and so
//! is a UTF-8 byte-order mark at the very start (some Windows serial terminals write one). Bytes
//! that are not UTF-8, control characters and over-long lines are not errors here: they are
//! recorded on the line as a [`LineDefect`], and each consumer decides (noise before the KTAP
//! version line may contain anything; a line inside the KTAP document may not).

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// Longest line kept in full; longer lines are cut and marked [`LineDefect::TooLong`].
pub const MAX_LINE: usize = 1 << 20;
/// Largest input accepted (a UART log of a full run is a few MiB at most).
pub const MAX_INPUT: u64 = 256 << 20;
/// How long reading a serial device given as a plain input waits for the `end` record: the
/// `capture` default ([`crate::capture::DEFAULT_TIMEOUT_S`]).
pub const DEVICE_TIMEOUT: Duration = Duration::from_secs(crate::capture::DEFAULT_TIMEOUT_S);
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

    /// Reads a log from `path`: `-` is stdin, a terminal device is captured (raw, 115200 baud)
    /// until the `end` record or [`DEVICE_TIMEOUT`], anything else is read to its end.
    pub fn load(path: &str) -> Result<Log> {
        if path == "-" {
            let bytes = read_limited(std::io::stdin().lock(), "<stdin>")?;
            return Ok(Log::from_bytes("<stdin>", &bytes));
        }
        let p = Path::new(path);
        let meta = std::fs::metadata(p).map_err(|e| Error(format!("{path}: cannot open: {e}")))?;
        if meta.is_dir() {
            return Err(Error(format!("{path}: is a directory, expected a log file")));
        }
        if crate::capture::is_terminal_device(p) {
            let opts = crate::capture::Options { baud: 115_200, timeout: DEVICE_TIMEOUT };
            let got = crate::capture::capture(p, &opts, &mut std::io::sink())?;
            if !got.saw_end {
                // (a closed stderr must not panic: the note is dropped)
                let _ = writeln!(
                    std::io::stderr(),
                    "cachescope-report: warning: {path}: no end record within {} s; using what was read",
                    DEVICE_TIMEOUT.as_secs()
                );
            }
            return Ok(Log::from_bytes(path, &got.bytes));
        }
        let f = std::fs::File::open(p).map_err(|e| Error(format!("{path}: cannot open: {e}")))?;
        let bytes = read_limited(f, path)?;
        Ok(Log::from_bytes(path, &bytes))
    }
}

/// What a log that is not refused holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// A run's log: a KTAP document (maybe cut short) or kernel records.
    Run,
    /// A cache-model log: only the plugin's records.
    Model,
}

impl Log {
    /// What this log is, or why it is not a cachescope log, in one line: an empty file, binary
    /// data (NUL-only input, random bytes), or text with neither a `KTAP version 1` line nor a
    /// record. A run cut short is still a run log (it starts with `KTAP version 1`).
    pub fn kind(&self) -> Result<LogKind> {
        let name = &self.name;
        let text: Vec<&LogLine> = self.lines.iter().filter(|l| l.defect.is_none()).collect();
        if self.lines.iter().all(|l| l.defect.is_none() && l.text.trim().is_empty()) {
            return Err(Error(format!("{name}: empty input: not a cachescope log (a run's log starts with 'KTAP version 1')")));
        }
        if text.iter().any(|l| l.text.trim() == "KTAP version 1") {
            return Ok(LogKind::Run);
        }
        let kinds: Vec<cachescope_arch::record::Emitter> = text
            .iter()
            .filter_map(|l| crate::records::parse_line(&l.text)?.ok())
            .filter_map(|o| cachescope_arch::record::kind(o.kind()).map(|k| k.emitter))
            .collect();
        if kinds.iter().any(|e| *e != cachescope_arch::record::Emitter::Model) {
            return Ok(LogKind::Run); // records without the KTAP line: an older or a filtered log, still ours
        }
        if !kinds.is_empty() {
            return Ok(LogKind::Model);
        }
        let bad = self.lines.len() - text.len();
        let nul_only = self.lines.iter().all(|l| l.text.chars().all(|c| c == '\0'));
        let why = if nul_only {
            "NUL bytes only (an erased or unwritten file?)".to_string()
        } else if bad * 2 > self.lines.len() {
            format!("binary data ({bad} of {} lines are not text)", self.lines.len())
        } else {
            "no 'KTAP version 1' line and no '# cs:' record".to_string()
        };
        Err(Error(format!("{name}: not a cachescope log: {why}")))
    }

    /// Refuses input that is not a cachescope run log (see [`Log::kind`]), a cache-model log
    /// given in the run log's place included, naming why in one line.
    pub fn require_run_log(&self) -> Result<()> {
        match self.kind()? {
            LogKind::Run => Ok(()),
            LogKind::Model => Err(Error(format!(
                "{}: not a cachescope run log: no KTAP results (no 'KTAP version 1' line) and only the cache model's records: give the run's log, and this file with --model",
                self.name
            ))),
        }
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

fn read_limited(r: impl Read, name: &str) -> Result<Vec<u8>> {
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

    #[test]
    fn missing_file_is_a_clear_error() {
        let e = Log::load("/nonexistent/dir/run.log").unwrap_err();
        assert!(e.0.starts_with("/nonexistent/dir/run.log: cannot open:"), "{e}");
    }

    #[test]
    fn what_is_not_a_run_log_is_refused_naming_why() {
        let refused = |bytes: &[u8]| Log::from_bytes("x.log", bytes).require_run_log().unwrap_err().0;
        assert!(refused(b"").contains("x.log: empty input"), "{}", refused(b""));
        assert!(refused(b"\n\n").contains("empty input"));
        assert!(refused(&[0u8; 4096]).contains("NUL bytes only"), "{}", refused(&[0u8; 4096]));
        let random: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert!(refused(&random).contains("not a cachescope log: binary data"), "{}", refused(&random));
        assert!(refused(b"hello\nworld\n").contains("no 'KTAP version 1' line and no '# cs:' record"));
        let model = b"# cs: {\"record\":\"model-run\",\"protocol\":5}\n";
        assert!(refused(model).contains("only the cache model's records"), "{}", refused(model));
        // A run cut short, and records without the KTAP line, are run logs.
        assert!(Log::from_bytes("t", b"noise\nKTAP version 1\n1..3\n").require_run_log().is_ok());
        assert!(Log::from_bytes("t", b"# cs: {\"record\":\"boot\",\"schema\":1}\n").require_run_log().is_ok());
        assert_eq!(Log::from_bytes("t", model).kind(), Ok(LogKind::Model), "a model log is a log of records");
    }

    #[test]
    fn directory_is_refused() {
        let e = Log::load("/").unwrap_err();
        assert!(e.0.contains("is a directory"), "{e}");
    }
}
