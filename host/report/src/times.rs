//! Line arrival times: when each line of a log reached the host, kept beside the log in
//! `LOG.times` (the log itself stays byte for byte what the kernel printed).
//!
//! The catalogue runner (`cachescope-xtask catalogue run`) reads a row's console stream line by
//! line as QEMU writes it (a pipe, no buffering in between) and records, for every line, the
//! seconds since it started the row on the host's monotonic clock: these are real arrival
//! times, not the guest's clock (which under `-icount` counts instructions). [`junit`] turns
//! them into `time` attributes.
//!
//! Format: one header line, then one decimal number of seconds per line of the log, in order,
//! never decreasing:
//!
//! ```text
//! # cachescope line times 1: seconds since the run started when each log line arrived (host clock)
//! 0.412118
//! 0.412130
//! ```
//!
//! [`junit`]: crate::junit

use std::io::Write;

/// The header's start (the number is the format's version).
pub const HEADER: &str = "# cachescope line times 1";

/// The header line as written.
pub fn header() -> String {
    format!("{HEADER}: seconds since the run started when each log line arrived (host clock)\n")
}

/// The sidecar of a log file: `LOG.times`.
pub fn sidecar(log_path: &str) -> String {
    format!("{log_path}.times")
}

/// Arrival time (seconds) of each line of a log; index 0 is line 1.
#[derive(Debug, Clone, PartialEq)]
pub struct LineTimes(pub Vec<f64>);

impl LineTimes {
    /// Parses a sidecar made for a log of `lines` lines; the error says why it does not fit.
    pub fn parse(text: &str, lines: usize) -> Result<LineTimes, String> {
        let mut it = text.lines();
        if !it.next().is_some_and(|h| h.starts_with(HEADER)) {
            return Err(format!("does not start with '{HEADER}'"));
        }
        let mut v = Vec::with_capacity(lines);
        for (i, l) in it.enumerate() {
            let t: f64 = l.trim().parse().map_err(|_| format!("line {}: '{l}' is not a number of seconds", i + 2))?;
            if !t.is_finite() || t < 0.0 || v.last().is_some_and(|&p| t < p) {
                return Err(format!("line {}: {t} is negative or earlier than the line before", i + 2));
            }
            v.push(t);
        }
        if v.len() != lines {
            return Err(format!("has {} times for a log of {lines} lines (made for another log?)", v.len()));
        }
        Ok(LineTimes(v))
    }

    /// Seconds at which line `no` (1-based) arrived.
    pub fn at(&self, no: usize) -> Option<f64> {
        no.checked_sub(1).and_then(|i| self.0.get(i)).copied()
    }

    /// Writes the sidecar text.
    pub fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut text = header();
        for t in &self.0 {
            text += &format!("{t:.6}\n");
        }
        out.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let t = LineTimes(vec![0.5, 0.5, 1.25]);
        let mut buf = Vec::new();
        t.write(&mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.starts_with(HEADER));
        assert_eq!(LineTimes::parse(&text, 3).unwrap(), t);
        assert_eq!(t.at(3), Some(1.25));
        assert_eq!(t.at(0), None);
        assert!(LineTimes::parse(&text, 4).unwrap_err().contains("3 times for a log of 4 lines"));
        assert!(LineTimes::parse("0.5\n", 1).unwrap_err().contains("does not start"));
        assert!(LineTimes::parse(&format!("{HEADER}\n2\n1\n"), 2).unwrap_err().contains("earlier"));
        assert!(LineTimes::parse(&format!("{HEADER}\nx\n"), 1).unwrap_err().contains("not a number"));
    }
}
