//! `console`: the streaming filter between QEMU's console and the terminal.
//!
//! Every input line is written unchanged (bytes, line ending and all) to the saved log; the
//! human view on standard output leaves out the `# cs:` record lines (unless verbose) and the
//! `# progress:` diagnostics when standard output is not a terminal. The filter works line by
//! line and flushes both outputs after every line, so a run that dies mid-way leaves its log
//! and its screen complete up to the last line printed; it never holds more than one line.
//! Bytes that are not UTF-8 pass through; a line is classified by its bytes after leading
//! spaces, so CRLF and LF endings are alike.

use std::io::{self, BufRead, Write};

/// The `end` record's kind, as printed.
const END: &[u8] = b"\"record\":\"end\"";

/// What the human view shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Show the `# cs:` record lines too (`--verbose`, `CS_VERBOSE=1`).
    pub verbose: bool,
    /// Standard output is a terminal: keep the `# progress:` lines.
    pub terminal: bool,
}

/// What the filter saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines read (and saved).
    pub lines: u64,
    /// Record lines hidden from the view.
    pub hidden_records: u64,
    /// Progress lines dropped from the view.
    pub dropped_progress: u64,
    /// Whether the `end` record was seen.
    pub saw_end: bool,
}

/// How one line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `# cs:` record line.
    Record,
    /// A `# progress:` diagnostic.
    Progress,
    /// Anything else.
    Text,
}

/// Classifies one raw line (with or without its line ending).
pub fn classify(line: &[u8]) -> Kind {
    let start = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
    let t = &line[start..];
    if t.starts_with(b"# cs:") {
        Kind::Record
    } else if t.starts_with(b"# progress:") {
        Kind::Progress
    } else {
        Kind::Text
    }
}

/// Copies `input` to `save` unchanged and the human view to `view`, line by line, flushing
/// both after each line. Write errors on `view` (a closed terminal) stop the view but not the
/// saving; write errors on `save` are returned.
pub fn filter(input: &mut dyn BufRead, save: &mut dyn Write, view: &mut dyn Write, opts: Options) -> io::Result<Counts> {
    let mut c = Counts::default();
    let mut buf = Vec::with_capacity(256);
    let mut view_ok = true;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        c.lines += 1;
        save.write_all(&buf)?;
        save.flush()?;
        let kind = classify(&buf);
        if kind == Kind::Record && buf.windows(END.len()).any(|w| w == END) {
            c.saw_end = true;
        }
        let show = match kind {
            Kind::Record => opts.verbose,
            Kind::Progress => opts.terminal,
            Kind::Text => true,
        };
        if !show {
            match kind {
                Kind::Record => c.hidden_records += 1,
                _ => c.dropped_progress += 1,
            }
            continue;
        }
        if view_ok && view.write_all(&buf).and_then(|_| view.flush()).is_err() {
            view_ok = false;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &[u8] = b"KTAP version 1\r\n  # cs: {\"record\":\"boot\"}\r\n  # progress: 1/4\n  ok 1 a \xff\xfe\n# cs: {\"record\":\"end\",\"passed\":1}\nno newline";

    fn run(opts: Options) -> (Vec<u8>, Vec<u8>, Counts) {
        let (mut save, mut view) = (Vec::new(), Vec::new());
        let c = filter(&mut &INPUT[..], &mut save, &mut view, opts).unwrap();
        (save, view, c)
    }

    #[test]
    fn saves_everything_and_hides_records_and_progress() {
        let (save, view, c) = run(Options::default());
        assert_eq!(save, INPUT, "the saved log is byte-identical");
        assert_eq!(view, b"KTAP version 1\r\n  ok 1 a \xff\xfe\nno newline".to_vec());
        assert_eq!(c, Counts { lines: 6, hidden_records: 2, dropped_progress: 1, saw_end: true });
    }

    #[test]
    fn verbose_shows_records_and_a_terminal_keeps_progress() {
        let (_, view, _) = run(Options { verbose: true, terminal: true });
        assert_eq!(view, INPUT, "the full stream");
        let (_, view, _) = run(Options { verbose: false, terminal: true });
        assert!(view.windows(11).any(|w| w == b"# progress:") && !view.windows(5).any(|w| w == b"# cs:"));
    }

    #[test]
    fn a_closed_view_does_not_stop_the_saving() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut save = Vec::new();
        let c = filter(&mut &INPUT[..], &mut save, &mut Closed, Options::default()).unwrap();
        assert_eq!(save, INPUT);
        assert_eq!(c.lines, 6);
    }

    #[test]
    fn classification() {
        assert_eq!(classify(b"    # cs: {}\r\n"), Kind::Record);
        assert_eq!(classify(b"# progress: x"), Kind::Progress);
        assert_eq!(classify(b"  # csx"), Kind::Text);
        assert_eq!(classify(b""), Kind::Text);
    }
}
