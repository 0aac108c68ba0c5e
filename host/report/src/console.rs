//! `console`: the streaming filter between QEMU's console and the terminal.
//!
//! Every input line of a run is written unchanged (bytes, line ending and all) to the saved log.
//! The human view on standard output is a console of findings:
//! - each suite's `# Subtest:` line and every KTAP result line (`ok`/`not ok`, any depth), and
//!   the `# Totals:` line;
//! - after a benchmark's result line, one line of what it measured and from which source
//!   ([`bench_line`], from the case's `metric` records); figures timed by the emulator under
//!   `-icount` are never given time or bandwidth units;
//! - a failed case's own diagnostics, just before its `not ok` line, and those of the case that
//!   was running when the stream ended without its `end` record (the run died);
//! - anything that is not KTAP (a panic's text, a board's message).
//!
//! The per-point rows (`# point:`, printed by the kernel's one metric emitter), the other
//! diagnostics and the `# cs:` records stay in the saved log; `--verbose` (`CS_VERBOSE=1`) shows
//! the whole stream, the per-point rows relabelled as instruction counts under `-icount`. On a
//! terminal a status line (suite, case, elapsed time and the kernel's `# progress:` text) is
//! redrawn in place; off a terminal there is none.
//!
//! Asking is not running: the kernel's `cachescope:` lines (and diagnostics) before the stream's
//! first `KTAP version` line are held; a stream of only those (`help`, a refused command line)
//! saves nothing (the save file is never written, so it is never created) and its lines go to
//! the view — to the error view when the kernel said `cachescope: error:` — and
//! [`Counts::started`] is false. Any other line (KTAP, another firmware's own text) starts a run.
//!
//! The filter works line by line and flushes both outputs after every line it writes, so a run
//! that dies mid-way leaves its log and its screen complete up to the last line printed. Bytes
//! that are not UTF-8 pass through; a line is classified by its bytes after leading spaces, so
//! CRLF and LF endings are alike.

use std::io::{self, BufRead, Write};
use std::time::Instant;

/// The `end` record's kind, as printed.
const END: &[u8] = b"\"record\":\"end\"";

/// At most this many of a failed case's diagnostics are shown (the rest are in the log).
const CASE_DIAG_MAX: usize = 12;

/// What the human view shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Show the whole stream, records and per-point rows too (`--verbose`, `CS_VERBOSE=1`).
    pub verbose: bool,
    /// Standard output is a terminal: draw the status line.
    pub terminal: bool,
    /// The run is under `-icount`: emulator timings are instruction counts.
    pub icount: bool,
}

/// What the filter saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines read (and saved, once the run started).
    pub lines: u64,
    /// Lines written to the views.
    pub shown: u64,
    /// Record lines hidden from the view.
    pub hidden_records: u64,
    /// Whether the `end` record was seen.
    pub saw_end: bool,
    /// Whether the stream started a run (a `KTAP version` line at the left margin, or any line
    /// that is not the kernel's `cachescope:` help or refusal).
    pub started: bool,
}

/// How one line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `# cs:` record line.
    Record,
    /// A `# progress:` diagnostic.
    Progress,
    /// A per-point benchmark row (`# point:`).
    Point,
    /// A KTAP result line (`ok …`, `not ok …`).
    Result,
    /// `# Subtest: NAME`.
    Subtest,
    /// `KTAP version …` or a plan `1..N`.
    Header,
    /// `# Totals: …`.
    Totals,
    /// Any other diagnostic (`#…`).
    Diag,
    /// Anything else.
    Text,
}

/// The line without leading spaces and its line ending.
fn body(line: &[u8]) -> &[u8] {
    let start = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
    let mut t = &line[start..];
    while let [rest @ .., b'\n' | b'\r'] = t {
        t = rest;
    }
    t
}

/// Classifies one raw line (with or without its line ending).
pub fn classify(line: &[u8]) -> Kind {
    let t = body(line);
    if t.starts_with(b"# cs:") {
        Kind::Record
    } else if t.starts_with(b"# progress:") {
        Kind::Progress
    } else if t.starts_with(b"# point:") {
        Kind::Point
    } else if t.starts_with(b"ok ") || t.starts_with(b"not ok ") || t == b"ok" {
        Kind::Result
    } else if t.starts_with(b"# Subtest:") {
        Kind::Subtest
    } else if t.starts_with(b"KTAP version") || (t.starts_with(b"1..") && t[3..].iter().all(u8::is_ascii_digit)) {
        Kind::Header
    } else if t.starts_with(b"# Totals:") {
        Kind::Totals
    } else if t.starts_with(b"#") {
        Kind::Diag
    } else {
        Kind::Text
    }
}

/// A per-point row under `-icount`: the emulator's "time" is instructions (shift=0: one
/// instruction per virtual ns), so the figure's unit is relabelled (ns → insn, MB/s → B/kinsn,
/// ns/MiB → insn/MiB). The row's format is the kernel's one metric emitter's
/// (`… median FIGURE UNIT min …`).
pub fn relabel_icount(line: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(line);
    let Some(at) = text.find(" median ") else { return line.to_vec() };
    let after = &text[at + 8..];
    let figure_start = after.len() - after.trim_start().len();
    let figure_end = after[figure_start..].find(' ').map_or(after.len(), |i| figure_start + i);
    let unit_start = figure_end + (after[figure_end..].len() - after[figure_end..].trim_start().len());
    let unit_end = after[unit_start..].find(' ').map_or(after.len(), |i| unit_start + i);
    let label = match &after[unit_start..unit_end] {
        "ns" => "insn",
        "MB/s" => "B/kinsn",
        "ns/MiB" => "insn/MiB",
        _ => return line.to_vec(),
    };
    // The unit's column: the token and its padding, kept as wide (one space before `min`).
    let field_end = after[unit_end..].find(|c: char| c != ' ').map_or(after.len(), |i| unit_end + i);
    let width = (field_end - unit_start).saturating_sub(1);
    let mut out = String::with_capacity(text.len() + 4);
    out.push_str(&text[..at + 8 + unit_start]);
    out.push_str(&format!("{label:<width$}"));
    if field_end > unit_end {
        out.push(' ');
    }
    out.push_str(&after[field_end..]);
    out.into_bytes()
}

/// What one benchmark case's `metric` records said.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BenchCase {
    /// Measurements.
    pub points: usize,
    /// Distinct benchmark names, attributes, timer sources and units, in first-seen order.
    pub benches: Vec<String>,
    /// See `benches`.
    pub attrs: Vec<String>,
    /// See `benches`.
    pub sources: Vec<String>,
    /// See `benches`.
    pub units: Vec<String>,
    /// Any measurement was taken under an emulator.
    pub emulated: bool,
    /// Smallest and largest median (in the first unit).
    pub range: Option<(f64, f64)>,
}

impl BenchCase {
    fn add(&mut self, m: cachescope_arch::record::MetricView<'_, crate::records::Object>) {
        let s = |v: Option<&str>| v.unwrap_or("?").to_string();
        let push = |list: &mut Vec<String>, v: String| {
            if !list.contains(&v) {
                list.push(v);
            }
        };
        self.points += 1;
        push(&mut self.benches, s(m.bench()));
        push(&mut self.attrs, s(m.attr()));
        push(&mut self.sources, s(m.source()));
        let unit = s(m.unit());
        if self.units.is_empty() || self.units[0] == unit {
            if let Some(m) = m.median() {
                let (lo, hi) = self.range.unwrap_or((m, m));
                self.range = Some((lo.min(m), hi.max(m)));
            }
        }
        push(&mut self.units, unit);
        self.emulated |= m.emulated().unwrap_or(false);
    }
}

/// The one line a benchmark case gets on the console: what it measured, from which source, and
/// where its finding is. Emulator timings carry no time or bandwidth units: under `-icount` they
/// are instruction counts, otherwise the emulator's own speed.
pub fn bench_line(case: &BenchCase, icount: bool) -> String {
    let list = |v: &[String]| v.join(", ");
    let what = format!(
        "{} measurement{} of {} over {} ({})",
        case.points,
        if case.points == 1 { "" } else { "s" },
        list(&case.benches),
        if case.attrs.len() > 3 { format!("{} attributes", case.attrs.len()) } else { list(&case.attrs) },
        list(&case.sources)
    );
    if case.emulated {
        let how = if icount { "instruction counts under -icount" } else { "the emulator's own speed" };
        format!("{what}: emulator timings ({how}), not cache behaviour; the cache model's finding is in the digest")
    } else {
        let range = case.range.map(|(lo, hi)| format!(": median {lo} … {hi} {}", case.units.first().map_or("", String::as_str)));
        format!("{what}{}", range.unwrap_or_default())
    }
}

/// Where the run is, for the status line.
#[derive(Debug, Default)]
struct Place {
    /// Top-level plan and results so far.
    suites: (usize, usize),
    /// The suite running, its plan and results so far.
    suite: String,
    cases: (usize, usize),
    /// The last case that ended.
    last_case: String,
    /// The kernel's latest `# progress:` text.
    progress: String,
}

impl Place {
    fn status(&self, secs: u64) -> String {
        let mut s = format!("[{}:{:02}] ", secs / 60, secs % 60);
        if self.suite.is_empty() && self.suites.1 == 0 {
            s.push_str("starting");
        } else if self.suite.is_empty() {
            s.push_str(&format!("{}/{} suites done", self.suites.1, self.suites.0));
        } else {
            s.push_str(&format!("{} (suite {}/{})", self.suite, self.suites.1 + 1, self.suites.0));
            if self.cases.0 > 0 {
                s.push_str(&format!(" case {}/{}", (self.cases.1 + 1).min(self.cases.0), self.cases.0));
            }
            if !self.last_case.is_empty() {
                s.push_str(&format!(" after {}", self.last_case));
            }
        }
        if !self.progress.is_empty() {
            s.push_str(" · ");
            s.push_str(&self.progress);
        }
        s
    }
}

/// The name in a result line (`ok 3 NAME # …`).
fn result_name(t: &[u8]) -> String {
    let text = String::from_utf8_lossy(t);
    let rest = text.strip_prefix("not ok ").or_else(|| text.strip_prefix("ok ")).unwrap_or("");
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    rest.split(" #").next().unwrap_or("").trim().to_string()
}

/// The views a filter writes to.
pub struct Views<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error: a refused command line's message.
    pub err: &'a mut dyn Write,
}

struct Screen<'a, 'b> {
    views: &'b mut Views<'a>,
    ok: bool,
    /// A status line is drawn (and must be cleared before the next line).
    status: bool,
    shown: u64,
}

impl Screen<'_, '_> {
    fn line(&mut self, bytes: &[u8]) {
        self.clear();
        if self.ok && self.views.out.write_all(bytes).and_then(|_| self.views.out.flush()).is_err() {
            self.ok = false;
        }
        self.shown += 1;
    }

    fn error(&mut self, bytes: &[u8]) {
        self.clear();
        let _ = self.views.err.write_all(bytes).and_then(|_| self.views.err.flush());
        self.shown += 1;
    }

    fn draw(&mut self, text: &str) {
        if self.ok {
            let w = &mut self.views.out;
            self.ok = write!(w, "\r\x1b[K{text}").and_then(|_| w.flush()).is_ok();
            self.status = true;
        }
    }

    fn clear(&mut self) {
        if self.status {
            self.status = false;
            let w = &mut self.views.out;
            self.ok = self.ok && write!(w, "\r\x1b[K").and_then(|_| w.flush()).is_ok();
        }
    }
}

/// Copies `input` to `save` unchanged (once the run started) and the human view to `views`,
/// line by line. Write errors on the views (a closed terminal) stop them but not the saving;
/// write errors on `save` are returned.
pub fn filter(input: &mut dyn BufRead, save: &mut dyn Write, views: &mut Views, opts: Options) -> io::Result<Counts> {
    let start = Instant::now();
    let mut c = Counts::default();
    let mut screen = Screen { views, ok: true, status: false, shown: 0 };
    let mut buf = Vec::with_capacity(256);
    let mut prelude: Vec<Vec<u8>> = Vec::new();
    let mut case_diag: Vec<Vec<u8>> = Vec::new();
    let mut dropped_diag = 0usize;
    let mut bench = BenchCase::default();
    let mut place = Place::default();
    let mut depth_of_suite = false;
    let mut drawn = String::new();
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        c.lines += 1;
        let kind = classify(&buf);
        if !c.started {
            // The kernel's help and refusals are `cachescope:` lines before any KTAP; anything
            // else (KTAP, another firmware's text, a crash) starts a run. Diagnostics wait.
            let t = body(&buf);
            let ask = t.is_empty() || t.starts_with(b"cachescope:") || t.starts_with(b"#");
            if (kind == Kind::Header && buf.starts_with(b"KTAP version")) || !ask {
                c.started = true;
                for l in prelude.drain(..) {
                    save.write_all(&l)?;
                    screen.line(&l);
                }
            } else {
                prelude.push(buf.clone());
                continue;
            }
        }
        save.write_all(&buf)?;
        save.flush()?;
        let t = body(&buf);
        if kind == Kind::Record && buf.windows(END.len()).any(|w| w == END) {
            c.saw_end = true;
        }
        // Where the run is (for the status line and the benchmark lines).
        let indented = buf.first() == Some(&b' ');
        match kind {
            Kind::Header if t.starts_with(b"1..") => {
                let n = String::from_utf8_lossy(&t[3..]).parse().unwrap_or(0);
                if indented {
                    place.cases = (n, 0);
                } else {
                    place.suites = (n, 0);
                }
            }
            Kind::Subtest => {
                place.suite = String::from_utf8_lossy(&t[10..]).trim().to_string();
                place.last_case.clear();
                place.cases = (0, 0);
                depth_of_suite = true;
            }
            Kind::Progress => place.progress = String::from_utf8_lossy(&t[11..]).trim().to_string(),
            Kind::Record => {
                if let Some(Ok(obj)) = crate::records::parse_line(&String::from_utf8_lossy(&buf)) {
                    if let Some(m) = cachescope_arch::record::MetricView::of(&obj) {
                        bench.add(m);
                    }
                }
            }
            _ => {}
        }
        if opts.verbose {
            let show = match kind {
                Kind::Progress => opts.terminal,
                Kind::Point if opts.icount => {
                    screen.line(&relabel_icount(&buf));
                    false
                }
                _ => true,
            };
            if show {
                screen.line(&buf);
            }
        } else {
            match kind {
                Kind::Record => c.hidden_records += 1,
                Kind::Progress | Kind::Point | Kind::Header => {}
                Kind::Diag => {
                    if case_diag.len() < CASE_DIAG_MAX {
                        case_diag.push(buf.clone());
                    } else {
                        dropped_diag += 1;
                    }
                }
                Kind::Subtest | Kind::Totals | Kind::Text => screen.line(&buf),
                Kind::Result => {
                    if t.starts_with(b"not ok") {
                        for l in &case_diag {
                            screen.line(l);
                        }
                        if dropped_diag > 0 {
                            let pad: String = buf.iter().take_while(|&&b| b == b' ').map(|_| ' ').collect();
                            screen.line(format!("{pad}# … {dropped_diag} more diagnostic line(s) in the saved log\n").as_bytes());
                        }
                    }
                    screen.line(&buf);
                    if bench.points > 0 {
                        let pad: String = buf.iter().take_while(|&&b| b == b' ').map(|_| ' ').collect();
                        screen.line(format!("{pad}  # {}\n", bench_line(&bench, opts.icount)).as_bytes());
                    }
                }
            }
        }
        if kind == Kind::Result {
            case_diag.clear();
            dropped_diag = 0;
            bench = BenchCase::default();
            place.progress.clear();
            if indented && depth_of_suite {
                place.cases.1 += 1;
                place.last_case = result_name(t);
            } else {
                place.suites.1 += 1;
                place.suite.clear();
                depth_of_suite = false;
            }
        }
        if opts.terminal && !opts.verbose && !c.saw_end {
            // Redrawn when it changes, or when a line was printed over it.
            let status = place.status(start.elapsed().as_secs());
            if status != drawn || !screen.status {
                screen.draw(&status);
                drawn = status;
            }
        }
    }
    screen.clear();
    if !c.started {
        // Not a run: a help text or a refusal, shown as the kernel printed it.
        let refused = prelude.iter().any(|l| body(l).starts_with(b"cachescope: error:"));
        for l in &prelude {
            if refused {
                screen.error(l);
            } else {
                screen.line(l);
            }
        }
    } else if !c.saw_end && !opts.verbose {
        // The run died inside a case: its diagnostics are the last thing it said.
        for l in &case_diag {
            screen.line(l);
        }
    }
    c.shown = screen.shown;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &[u8] = b"KTAP version 1\r\n1..1\n  # cs: {\"record\":\"boot\"}\r\n  KTAP version 1\n  # Subtest: bench\n  1..2\n  # progress: 1/4\n  # point: latency chase normal-wb 1024 B  median        6.004 ns      min 6.004\n  # cs: {\"record\":\"metric\",\"bench\":\"latency\",\"attr\":\"normal-wb\",\"median\":6.004,\"unit\":\"ns\",\"source\":\"cntvct\",\"emulated\":true}\n  # a diagnostic\n  ok 1 latency \xff\xfe\n  # why it failed\n  not ok 2 broken\nnot ok 1 bench\n# Totals: pass:1 fail:1 skip:0 total:2\n# cs: {\"record\":\"end\",\"passed\":1}\nno newline";

    fn run_on(input: &[u8], opts: Options) -> (Vec<u8>, Vec<u8>, Vec<u8>, Counts) {
        let (mut save, mut out, mut err) = (Vec::new(), Vec::new(), Vec::new());
        let c = filter(&mut &input[..], &mut save, &mut Views { out: &mut out, err: &mut err }, opts).unwrap();
        (save, out, err, c)
    }

    #[test]
    fn saves_everything_and_shows_findings() {
        let (save, out, err, c) = run_on(INPUT, Options { icount: true, ..Options::default() });
        assert_eq!(save, INPUT, "the saved log is byte-identical");
        let out = String::from_utf8_lossy(&out);
        let want = "  # Subtest: bench\n  ok 1 latency \u{fffd}\u{fffd}\n    # 1 measurement of latency over normal-wb (cntvct): emulator timings (instruction counts under -icount), not cache behaviour; the cache model's finding is in the digest\n  # why it failed\n  not ok 2 broken\nnot ok 1 bench\n# Totals: pass:1 fail:1 skip:0 total:2\nno newline";
        assert_eq!(out, want);
        assert!(!out.contains(" ns") && !out.contains("# a diagnostic") && !out.contains("# cs:"), "{out}");
        assert!(err.is_empty());
        assert_eq!((c.lines, c.hidden_records, c.saw_end, c.started), (17, 3, true, true));
    }

    #[test]
    fn verbose_shows_the_stream_and_relabels_icount_rows() {
        let (_, out, _, _) = run_on(INPUT, Options { verbose: true, ..Options::default() });
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains("# cs: {\"record\":\"metric\"") && out.contains("# a diagnostic") && out.contains("6.004 ns "));
        assert!(!out.contains("# progress:"), "progress only on a terminal");
        let (_, out, _, _) = run_on(INPUT, Options { verbose: true, icount: true, terminal: true });
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains("median        6.004 insn    min") && out.contains("# progress: 1/4"), "{out}");
        assert!(!out.contains(" ns "));
    }

    #[test]
    fn relabelling_keeps_the_columns() {
        assert_eq!(
            relabel_icount(b"  # point: kv scan normal-wb 512 B  median          800 MB/s    min 800\n"),
            b"  # point: kv scan normal-wb 512 B  median          800 B/kinsn min 800\n".to_vec()
        );
        assert_eq!(relabel_icount(b"# point: x median 5 cycles min 5"), b"# point: x median 5 cycles min 5".to_vec());
        assert_eq!(relabel_icount(b"# point: x median 5 ns/MiB min"), b"# point: x median 5 insn/MiB min".to_vec());
    }

    #[test]
    fn a_terminal_gets_a_status_line_cleared_before_each_line() {
        let (_, out, _, _) = run_on(INPUT, Options { terminal: true, ..Options::default() });
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains("\r\x1b[K[0:00] bench (suite 1/1) case 1/2 · 1/4"), "{out:?}");
        assert!(out.contains("after latency"), "{out:?}");
        assert!(!out.ends_with("\x1b[K") || out.ends_with("\r\x1b[K"), "the status line is cleared at the end");
        let plain: String = out.split("\r\x1b[K").filter(|s| !s.starts_with('[')).collect();
        assert!(plain.contains("  ok 1 latency"), "{plain:?}");
    }

    #[test]
    fn help_and_refusals_are_not_runs() {
        let help = b"cachescope: suites and cases:\ncachescope:  boot\n";
        let (save, out, err, c) = run_on(help, Options::default());
        assert!(save.is_empty() && err.is_empty() && !c.started);
        assert_eq!(out, help.to_vec());
        let refused = b"cachescope: error: bad value 'cach' for 'only'\ncachescope: accepted arguments:\n";
        let (save, out, err, c) = run_on(refused, Options::default());
        assert!(save.is_empty() && out.is_empty() && !c.started);
        assert_eq!(err, refused.to_vec(), "a refusal goes to the error view");
    }

    #[test]
    fn another_firmware_is_a_run() {
        let fw = b"geometry-fw: L1D 32 KiB\ndone\n";
        let (save, out, _, c) = run_on(fw, Options::default());
        assert!(c.started);
        assert_eq!((save, out), (fw.to_vec(), fw.to_vec()));
    }

    #[test]
    fn a_run_that_dies_shows_what_its_last_case_said() {
        let (_, out, _, c) = run_on(b"KTAP version 1\n1..1\n  # Subtest: boot\n  # where it hung\n", Options::default());
        assert!(!c.saw_end);
        assert_eq!(String::from_utf8_lossy(&out), "  # Subtest: boot\n  # where it hung\n");
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
        let c = filter(&mut &INPUT[..], &mut save, &mut Views { out: &mut Closed, err: &mut Closed }, Options::default()).unwrap();
        assert_eq!(save, INPUT);
        assert_eq!(c.lines, 17);
    }

    #[test]
    fn classification() {
        assert_eq!(classify(b"    # cs: {}\r\n"), Kind::Record);
        assert_eq!(classify(b"# progress: x"), Kind::Progress);
        assert_eq!(classify(b"  # point: latency"), Kind::Point);
        assert_eq!(classify(b"  # csx"), Kind::Diag);
        assert_eq!(classify(b"  not ok 3 x # SKIP y\r\n"), Kind::Result);
        assert_eq!(classify(b"  1..14\n"), Kind::Header);
        assert_eq!(classify(b"1..x"), Kind::Text);
        assert_eq!(classify(b""), Kind::Text);
    }
}
