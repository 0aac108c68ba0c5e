//! Where a log comes from and what it is: [`Log::load`] reads a file, stdin (`-`) or a serial
//! device (captured until the `end` record, see [`crate::capture`]); [`Log::kind`] tells a run's
//! log from a cache-model log and refuses what is neither. (Here, above both `input` and
//! `capture`, so that neither imports the other.)

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::input::{read_limited, Error, Log, LogLine, Result};

/// How long reading a serial device given as a plain input waits for the `end` record: the
/// `capture` default ([`crate::capture::DEFAULT_TIMEOUT_S`]).
pub const DEVICE_TIMEOUT: Duration = Duration::from_secs(crate::capture::DEFAULT_TIMEOUT_S);

impl Log {
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

#[cfg(test)]
mod tests {
    use super::*;

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
