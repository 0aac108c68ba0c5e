//! `cachescope-report` command line (`cachescope-report --help`, `cachescope-report help CMD`).
//!
//! Exit status: 0 ok; 1 a check failed (KTAP/records problems, regressions, missing metrics,
//! capture timeout); 2 usage errors (clap's) and unreadable or malformed input; 141 when
//! standard output was closed early (`… | head -1`), quietly, as a tool killed by SIGPIPE.

use cachescope_report::compare::{self, Baseline};
use cachescope_report::input::{Error, Log};
use cachescope_report::runinfo::RunInfo;
use cachescope_report::{
    capture, compare_model, console, contract, extract, junit, ktap, metrics::Metric, model_data, records, report, summary, times, verdict,
};
use clap::{ArgGroup, Args, Parser, Subcommand};
use std::io::{ErrorKind, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
FILE may be - (stdin) or a serial device (read at 115200 baud until the end record).

Exit status: 0 ok; 1 validation problems, regressions, missing metrics or capture timeout;
2 bad arguments or unreadable/malformed input; 141 standard output closed early.

Examples:
  scripts/report check target/cachescope-logs/main-default.log
  scripts/report junit run.log -o results.xml
  scripts/report report run.log -o report.html
  scripts/report summary run.log --model run.log.model
  qemu-system-aarch64 … | scripts/report console --save run.log
  scripts/report compare run.log --baseline tests/baselines/bench-icount-cortex-a72.json --tolerance 0";

/// Check, extract, report on and compare cachescope UART logs.
#[derive(Parser)]
#[command(name = "cachescope-report", version, after_help = EXAMPLES, propagate_version = true, arg_required_else_help = true)]
struct Cli {
    /// Print only problems and failures (no progress or summary notes).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Strict KTAP v1 validation plus the records contract; prints FILE:LINE: problem.
    ///
    /// The records contract (docs/records.md): the boot record first (schema 1 or 2), the end
    /// record last matching the results, every schema-2 record as declared, the metric schema.
    /// Exit 1 when a log is invalid.
    Check(CheckArgs),
    /// Records as one JSON array and/or one CSV file per record kind.
    #[command(group(ArgGroup::new("what").required(true).multiple(true).args(["json", "csv"])))]
    Extract(ExtractArgs),
    /// Markdown or HTML report with inline SVG plots and tables.
    Report(ReportArgs),
    /// Compares metric medians with a baseline (or writes one); exit 1 naming every regression.
    ///
    /// --tolerance is the default for metrics without their own (0 = exact). A baseline records
    /// the run parameters it was made with (kernel arguments, CPU, machine, timer, QEMU version);
    /// a log made differently is explained in two lines instead of a list of MISSING metrics.
    Compare(CompareArgs),
    /// JUnit XML for CI systems: one testsuite per KTAP suite, one testcase per case.
    ///
    /// Failures carry the case's FAIL diagnostics (decoded faults included), SKIPs their reason,
    /// metric records are properties. Exit 0 once written, whatever the tests' results (the CI
    /// reads them from the XML); a log that is not valid KTAP is warned about.
    Junit(JunitArgs),
    /// Reads a serial device (raw 8N1) until the end record or the timeout, saving every byte;
    /// then prints the run's digest (as `summary`).
    Capture(CaptureArgs),
    /// Streaming console filter (stdin → stdout): saves every line to FILE, shows the findings.
    ///
    /// Shows suite headers, KTAP result lines, one line per benchmark (what it measured, from
    /// which source), a failed case's diagnostics and any non-KTAP text; the rest (records,
    /// per-point rows, diagnostics) only with --verbose or CS_VERBOSE=1. On a terminal a status
    /// line is redrawn in place. Line by line, flushed per line; CR/LF and bytes that are not
    /// UTF-8 pass through unchanged. A stream that never starts a run (`help`, a refused
    /// command line) is shown (a refusal on stderr), saves nothing and exits 3.
    Console(ConsoleArgs),
    /// Rotates a folder of saved runs: keeps the newest KEEP complete runs (and the runs that
    /// died after the oldest of them, at most KEEP), never the one just made (--current).
    ///
    /// A log and the files named after it (LOG.model, LOG.html, …) go together.
    Rotate(RotateArgs),
    /// The digest of a run (at most 25 lines): core and caches, maintenance, attributes,
    /// benchmark headlines with their source, the cache model's findings, totals.
    ///
    /// A run cut short is digested as far as it got and called incomplete.
    Summary(SummaryArgs),
    /// The cache-model sanitizer's verdict on a run: the kernel's declared hazards
    /// (`expect-hazard`) against the model's (`hazard`), exactly, and none elsewhere.
    ///
    /// Prints the lines the runner appends to the run's log: `# sanitizer: ok|not ok PHASE: …`,
    /// a `sanitizer-finding` record per failed phase and the `sanitizer-verdict` record. Exit 0
    /// as declared (or sanitize=off), 1 failed or no verdict possible (the model log has no
    /// hazard-total), 2 unreadable input.
    Verdict(VerdictArgs),
    /// Cache geometry inferred from the cache model's counts (line, capacity per level, ways),
    /// beside CCSIDR and the published silicon, with sources.
    Infer(InferArgs),
    /// The digest of foreign firmware observed under the cache model (what `cachescope-xtask
    /// observe` prints), from a saved model log: geometry, totals, hazards (symbolised from
    /// --elf, KCSAN-shaped, with the maintenance that would have prevented each), the top
    /// functions by L1D/L2 misses and write-backs, warnings; with --expect, the expectation
    /// check (exit 1 when not met).
    Firmware(FirmwareArgs),
    /// A board's PMU counts per phase (its `pmu` records) beside the cache model's prediction
    /// for the same phases under the board's profile, per measured window, with the error
    /// (model - PMU) / PMU; a table on stdout and, with --svg, the figure.
    ///
    /// Make the model log with the same kernel arguments under the board's profile
    /// (QEMU_CACHE_MODEL=rpi5 for a Pi 5; docs/raspberry-pi.md). Exit 2 when the board log has
    /// no pmu records or the model log another Pi's profile.
    CompareModel(CompareModelArgs),
    /// A synthetic board log for compare-model: the emulator log with a `pmu` record of source
    /// `synthetic` before each metric, its counts the model log's predictions (times --scale).
    ///
    /// A test input of compare-model, never silicon: every such record says `synthetic`.
    SynthBoardLog(SynthArgs),
}

#[derive(Args)]
struct CompareModelArgs {
    /// The board's log (its boot and pmu records).
    #[arg(value_name = "BOARD_LOG")]
    board: String,
    /// The cache model's log of the same kernel arguments under the board's profile.
    #[arg(value_name = "MODEL_LOG")]
    model: String,
    /// Also write the figure (SVG) here.
    #[arg(long, value_name = "FILE.svg")]
    svg: Option<String>,
}

#[derive(Args)]
struct SynthArgs {
    /// The emulator run's log (its metric records name the phases).
    #[arg(value_name = "EMULATOR_LOG")]
    log: String,
    /// That run's cache-model log.
    #[arg(value_name = "MODEL_LOG")]
    model: String,
    /// Multiply an event's counts: EVENT=FACTOR (e.g. L1D_CACHE_REFILL=1.25); repeatable.
    #[arg(long, value_name = "EVENT=FACTOR")]
    scale: Vec<String>,
    /// Where to write the synthetic board log (- = stdout).
    #[arg(short, long, value_name = "OUT", default_value = "-")]
    out: String,
}

#[derive(Args)]
struct FirmwareArgs {
    /// The model log (observe's OUT/model.log).
    #[arg(value_name = "MODEL_LOG")]
    model: String,
    /// The firmware's ELF, for symbols.
    #[arg(long, value_name = "PATH")]
    elf: Option<String>,
    /// Runtime address minus link address (decimal or 0x…, may be negative).
    #[arg(long, value_name = "N", default_value = "0", allow_hyphen_values = true)]
    load_offset: String,
    /// An expectation file (TOML; cachescope_report::expect).
    #[arg(long, value_name = "FILE")]
    expect: Option<String>,
}

#[derive(Args)]
struct ConsoleArgs {
    /// Where to save every input line unchanged.
    #[arg(short, long, value_name = "FILE")]
    save: String,
    /// Show the whole stream: records, per-point rows, every diagnostic (also: CS_VERBOSE=1).
    #[arg(short, long)]
    verbose: bool,
    /// The run is under -icount: emulator timings are instruction counts (relabelled so).
    #[arg(long)]
    icount: bool,
}

#[derive(Args)]
struct RotateArgs {
    /// The folder of saved runs (*.log).
    #[arg(value_name = "DIR")]
    dir: String,
    /// Complete runs to keep.
    #[arg(long, default_value_t = 20)]
    keep: usize,
    /// The run just made: never removed (its digest points at it).
    #[arg(long, value_name = "LOG")]
    current: Option<String>,
}

#[derive(Args)]
struct SummaryArgs {
    /// The log (- = stdin).
    #[arg(value_name = "LOG")]
    file: String,
    /// The cache model's records (QEMU_CACHE_MODEL runs).
    #[arg(short, long, value_name = "MODEL_LOG")]
    model: Option<String>,
    /// The run used -icount: label timer figures as instruction counts.
    #[arg(long)]
    icount: bool,
}

#[derive(Args)]
struct VerdictArgs {
    /// The run's log (its `expect-hazard` records).
    #[arg(value_name = "LOG")]
    file: String,
    /// The cache model's records.
    #[arg(short, long, value_name = "MODEL_LOG")]
    model: String,
}

#[derive(Args)]
struct InferArgs {
    /// The run's log (the boot and cache records: MIDR, CCSIDR).
    #[arg(value_name = "LOG")]
    file: String,
    /// The cache model's records.
    #[arg(short, long, value_name = "MODEL_LOG")]
    model: String,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CheckArgs {
    /// Logs to check (- = stdin).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// Accept non-KTAP lines inside the document (ktap.rst allows them).
    #[arg(long)]
    allow_unknown: bool,
}

#[derive(Args)]
struct ExtractArgs {
    /// The log (- = stdin).
    #[arg(value_name = "FILE")]
    file: String,
    /// Write the records as one JSON array to OUT (- = stdout).
    #[arg(short, long, value_name = "OUT")]
    json: Option<String>,
    /// Write one CSV per record kind into DIR.
    #[arg(short, long, value_name = "DIR")]
    csv: Option<String>,
}

#[derive(Args)]
struct ReportArgs {
    /// The log (- = stdin).
    #[arg(value_name = "FILE")]
    file: String,
    /// Where to write the report: REPORT.md or REPORT.html.
    #[arg(short, long, value_name = "REPORT")]
    out: String,
    /// Records of the cache-model plugin to plot beside the run [default: FILE.model, or
    /// NAME.model for NAME.log, when it exists].
    #[arg(short, long, value_name = "MODEL_LOG", conflicts_with = "no_model")]
    model: Option<String>,
    /// Do not look for the model log beside FILE.
    #[arg(long)]
    no_model: bool,
    /// Also write each figure as DIR/figNN-*.svg (Markdown: by default REPORT.figures/).
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<String>,
    /// The run used -icount: label timer figures as instruction counts [default: as the log
    /// shows it, i.e. a run under the cache model].
    #[arg(long, conflicts_with = "no_icount")]
    icount: bool,
    /// The run did not use -icount, whatever the log suggests.
    #[arg(long)]
    no_icount: bool,
}

#[derive(Args)]
struct CompareArgs {
    /// The log (- = stdin).
    #[arg(value_name = "FILE")]
    file: String,
    /// The baseline JSON to compare with (or to write).
    #[arg(short, long, value_name = "BASELINE.json")]
    baseline: String,
    /// Default tolerance: 5% or 5 (percent); 0 = exact. [default: the baseline's, else 5%]
    #[arg(short, long, value_name = "PCT", value_parser = parse_tolerance, allow_hyphen_values = true)]
    tolerance: Option<f64>,
    /// Write BASELINE.json from FILE instead (model figures get tolerance 0).
    #[arg(short, long)]
    write_baseline: bool,
    /// QEMU version the log was made with (`qemu-system-aarch64 --version`; else the log's own
    /// "QEMU emulator version" line, if any).
    #[arg(long, value_name = "VERSION", env = "CS_QEMU_VERSION")]
    qemu_version: Option<String>,
    /// List every metric even when the run parameters differ from the baseline's.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Args)]
struct JunitArgs {
    /// The log (- = stdin).
    #[arg(value_name = "FILE")]
    file: String,
    /// Where to write the XML (- = stdout).
    #[arg(short, long, value_name = "RESULTS.xml")]
    out: String,
    /// QEMU version the log was made with (a suite property).
    #[arg(long, value_name = "VERSION", env = "CS_QEMU_VERSION")]
    qemu_version: Option<String>,
    /// The log's line arrival times, for the `time` attributes (default: FILE.times when it
    /// exists, as the catalogue runner writes it beside each row's log).
    #[arg(long, value_name = "FILE.times")]
    times: Option<String>,
}

#[derive(Args)]
struct CaptureArgs {
    /// The serial device (/dev/ttyUSB0, /dev/cu.usbserial-…), or a file/FIFO to follow.
    #[arg(value_name = "DEVICE", required_unless_present = "list")]
    device: Option<String>,
    /// Where to save what is read (- = stdout).
    #[arg(short, long, value_name = "LOG", required_unless_present = "list")]
    out: Option<String>,
    /// Baud rate.
    #[arg(short, long, default_value_t = capture::DEFAULT_BAUD, value_parser = parse_baud)]
    baud: u32,
    /// Give up after this many seconds without the end record.
    #[arg(short, long, value_name = "SECONDS", default_value_t = capture::DEFAULT_TIMEOUT_S as f64, value_parser = parse_timeout, allow_hyphen_values = true)]
    timeout: f64,
    /// Also copy what is read to stdout.
    #[arg(short, long)]
    echo: bool,
    /// Do not print the digest at the end.
    #[arg(long)]
    no_summary: bool,
    /// Where to write each line's arrival time (default: LOG.times; with `--out -` only when given).
    #[arg(long, value_name = "FILE")]
    times: Option<String>,
    /// List the serial ports of this machine and exit.
    #[arg(short, long, conflicts_with_all = ["device", "out", "echo"])]
    list: bool,
}

fn parse_tolerance(s: &str) -> Result<f64, String> {
    compare::parse_tolerance(s).map_err(|e| e.0)
}

fn parse_baud(s: &str) -> Result<u32, String> {
    let b: u32 = s.parse().map_err(|_| format!("--baud '{s}': expected a number such as 115200"))?;
    capture::check_baud(b).map_err(|e| e.0)?;
    Ok(b)
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t < 1e7 => Ok(t),
        _ => Err(format!("--timeout '{s}': expected seconds > 0, such as 60 or 0.5")),
    }
}

/// A failed command: exit status and message (an empty message prints nothing).
struct Fail(u8, String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail(2, e.0)
    }
}

/// Set once a write to standard output found the pipe closed.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Standard output that never panics: a closed pipe is remembered (the command then ends
/// quietly with status 141) and reported to the caller as an error, to stop writing.
struct Stdout;

impl Stdout {
    fn note(e: std::io::Error) -> std::io::Error {
        if e.kind() == ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        e
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().write(buf).map_err(Stdout::note)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush().map_err(Stdout::note)
    }
}

/// Writes `text` to standard output.
fn out(text: &str) -> Result<(), Fail> {
    Stdout.write_all(text.as_bytes()).and_then(|_| Stdout.flush()).map_err(|e| Fail(2, format!("<stdout>: {e}")))
}

/// A note on standard error (`eprintln!` would panic on a closed stderr).
macro_rules! note {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// Writes `text` to `path`, `-` being standard output.
fn write_to(path: &str, text: &str) -> Result<(), Fail> {
    if path == "-" {
        out(text)
    } else {
        extract::write_out(path, text).map_err(Fail::from)
    }
}

fn check(a: &CheckArgs, quiet: bool) -> Result<(), Fail> {
    let opts = ktap::Options { allow_unknown: a.allow_unknown };
    let mut bad = 0;
    for path in &a.files {
        let log = Log::load(path)?;
        let k = ktap::validate(&log, opts);
        let mut problems = k.problems.clone();
        problems.extend(contract::check_contract(&log, &k));
        problems.sort_by_key(|p| p.line);
        let mut text = String::new();
        for p in problems.iter().take(100) {
            text += &if p.line == 0 { format!("{}: {}\n", log.name, p.msg) } else { format!("{}:{}: {}\n", log.name, p.line, p.msg) };
        }
        if problems.len() > 100 {
            text += &format!("{}: … and {} more problems\n", log.name, problems.len() - 100);
        }
        let c = k.leaves;
        if problems.is_empty() {
            if !quiet {
                let recs = records::extract(&log).0.len();
                text += &format!(
                    "{}: ok: KTAP v1, {} top-level results, {} leaf results ({} passed, {} failed, {} skipped), {recs} records\n",
                    log.name,
                    k.top_results,
                    c.passed + c.failed + c.skipped,
                    c.passed,
                    c.failed,
                    c.skipped
                );
            }
        } else {
            bad += 1;
            text += &format!("{}: INVALID: {} problems\n", log.name, problems.len());
        }
        out(&text)?;
    }
    if bad > 0 {
        return Err(Fail(1, format!("check: {bad} of {} logs invalid", a.files.len())));
    }
    Ok(())
}

fn warn_if_invalid(log: &Log) {
    let k = ktap::validate(log, ktap::Options::default());
    let n = k.problems.len() + contract::check_contract(log, &k).len();
    if n > 0 {
        note!("cachescope-report: warning: {}: {n} KTAP/records problems (run 'check' for details)", log.name);
    }
}

/// Warns on standard error about a model log that fails validation (the report and the digest
/// flag it too, and draw no hazard conclusion from it).
fn warn_if_model_invalid(model: &Log) {
    if let Some(f) = contract::check_model_log(model).flag(&model.name) {
        note!("cachescope-report: warning: {}: {f}", model.name);
    }
}

fn extract_cmd(a: &ExtractArgs, quiet: bool) -> Result<(), Fail> {
    let log = Log::load(&a.file)?;
    // A run's log or a cache-model log: both hold records.
    if log.kind()? == cachescope_report::source::LogKind::Run {
        warn_if_invalid(&log);
    }
    let recs = records::extract_strict(&log)?;
    if let Some(o) = &a.json {
        write_to(o, &extract::to_json(&recs))?;
        if o != "-" && !quiet {
            note!("extract: {} records to {o}", recs.len());
        }
    }
    if let Some(dir) = &a.csv {
        let files = extract::write_csv_dir(dir, &recs)?;
        if !quiet {
            note!(
                "extract: {} records to {} CSV files in {dir} ({})",
                recs.len(),
                files.len(),
                files.iter().map(|f| f.rsplit('/').next().unwrap_or(f)).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}

fn report_cmd(a: &ReportArgs, quiet: bool) -> Result<(), Fail> {
    let format = report::Format::from_path(&a.out)?;
    let log = Log::load(&a.file)?;
    log.require_run_log()?;
    // The model log beside the run's, unless one is named or none is wanted.
    let model_path = if a.no_model { None } else { a.model.clone().or_else(|| cachescope_report::input::model_log_beside(&a.file)) };
    let model = model_path.as_deref().map(Log::load).transpose()?;
    if let (Some(p), None, false) = (&model_path, &a.model, quiet) {
        note!("report: the cache model's records from {p} (--no-model: without them)");
    }
    if let Some(m) = &model {
        warn_if_model_invalid(m);
    }
    let icount = match (a.icount, a.no_icount) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let r = report::build_with(&log, model.as_ref(), report::Options { icount });
    // Markdown links its figures (hosting sites strip inline SVG): they go to --svg-dir, by
    // default a folder next to the report, named after it.
    let md_dir = match (format, &a.svg_dir) {
        (report::Format::Markdown, None) => Some(format!("{}.figures", a.out.strip_suffix(".md").unwrap_or(&a.out))),
        _ => None,
    };
    let svg_dir = a.svg_dir.clone().or(md_dir);
    let text = match (format, &svg_dir) {
        (report::Format::Markdown, Some(dir)) => {
            let base = std::path::Path::new(&a.out).parent().filter(|p| !p.as_os_str().is_empty());
            let rel = match base {
                Some(b) => std::path::Path::new(dir).strip_prefix(b).map(|p| p.display().to_string()).unwrap_or_else(|_| dir.clone()),
                None => dir.clone(),
            };
            r.markdown_linked(&rel)
        }
        _ => r.render(format),
    };
    std::fs::write(&a.out, text).map_err(|e| Error(format!("{}: cannot write: {e}", a.out)))?;
    if let Some(dir) = &svg_dir {
        std::fs::create_dir_all(dir).map_err(|e| Error(format!("{dir}: cannot create directory: {e}")))?;
        for (stem, svg) in &r.figures {
            let p = format!("{dir}/{stem}.svg");
            std::fs::write(&p, svg).map_err(|e| Error(format!("{p}: cannot write: {e}")))?;
        }
    }
    if !quiet {
        note!("report: {} ({} figures)", a.out, r.figures.len());
    }
    Ok(())
}

fn compare_cmd(a: &CompareArgs, quiet: bool) -> Result<(), Fail> {
    let bpath = &a.baseline;
    let log = Log::load(&a.file)?;
    let recs = records::extract_strict(&log)?;
    let (metrics, skipped) = Metric::collect(&recs);
    if let Some(s) = skipped.first() {
        return Err(Fail(2, format!("{}:{s}", log.name)));
    }
    let run = RunInfo::from_log(&log, &recs, a.qemu_version.as_deref());
    if a.write_baseline {
        if metrics.is_empty() {
            return Err(Fail(2, format!("{}: no metric records; refusing to write an empty baseline", log.name)));
        }
        let (mut b, notes) = Baseline::from_metrics(&metrics, a.tolerance.unwrap_or(compare::DEFAULT_TOLERANCE_PCT));
        b.run = Some(run.clone());
        for n in notes {
            note!("compare: {}:{n}", log.name);
        }
        std::fs::write(bpath, b.to_json()).map_err(|e| Error(format!("{bpath}: cannot write baseline: {e}")))?;
        if !quiet {
            note!("compare: wrote {} metrics from {} to {bpath}; run: {}", b.metrics.len(), log.name, run.describe(&run));
        }
        return Ok(());
    }
    let b = Baseline::load(bpath)?;
    let c = compare::compare(&metrics, &b, a.tolerance).map_err(|e| Error(format!("{}: {e}", log.name)))?;
    let rc = compare::check_run(b.run.as_ref(), &run);
    let mut text = format!("compare: {} ({} metrics) against {bpath} ({} metrics)\n", log.name, metrics.len(), b.metrics.len());
    for l in &rc.lines {
        text += l;
        text.push('\n');
    }
    if rc.decisive && c.failed() && !a.verbose {
        text += &c.summary(" (the run parameters differ from the baseline's: per-metric lines left out, -v lists them)");
    } else {
        text += &c.render_findings(|f| !quiet || f.fails());
        text += &c.summary("");
    }
    out(&text)?;
    if c.failed() {
        let why = if rc.decisive { " (made with other run parameters, see above)" } else { " (see above)" };
        return Err(Fail(1, format!("compare: {} differs from {bpath}{why}", log.name)));
    }
    Ok(())
}

fn junit_cmd(a: &JunitArgs, quiet: bool) -> Result<(), Fail> {
    let log = Log::load(&a.file)?;
    log.require_run_log()?;
    warn_if_invalid(&log);
    let (recs, _) = records::extract(&log);
    let run = RunInfo::from_log(&log, &recs, a.qemu_version.as_deref());
    // Line arrival times: given (must fit the log), else the sidecar beside the log if any.
    let (times_path, given) = match &a.times {
        Some(p) => (Some(p.clone()), true),
        None if a.file != "-" => (Some(times::sidecar(&a.file)).filter(|p| std::path::Path::new(p).is_file()), false),
        None => (None, false),
    };
    let times = match &times_path {
        None => {
            if !quiet {
                note!("junit: {}: no line arrival times ({}): the XML has no time attributes", log.name, times::sidecar(&a.file));
            }
            None
        }
        Some(p) => {
            let parsed = std::fs::read_to_string(p).map_err(|e| e.to_string()).and_then(|t| times::LineTimes::parse(&t, log.lines.len()));
            match parsed {
                Ok(t) => Some(t),
                Err(e) if given => return Err(Fail(2, format!("{p}: {e}"))),
                Err(e) => {
                    note!("cachescope-report: warning: {p}: {e}: the XML has no time attributes");
                    None
                }
            }
        }
    };
    let mut r = junit::build(&log, &run, times.as_ref());
    if let Some(v) = verdict::recorded(recs.iter().map(|r| &r.obj)) {
        verdict::apply_to_junit(&mut r, &v);
    }
    if r.suites.is_empty() {
        return Err(Fail(2, format!("{}: no KTAP results to report (no 'KTAP version 1' line?)", log.name)));
    }
    write_to(&a.out, &r.to_xml())?;
    if !quiet && a.out != "-" {
        let t = r.totals();
        note!(
            "junit: {} ({} suites, {} tests, {} failures, {} skipped, {} errors)",
            a.out,
            r.suites.len(),
            t.tests,
            t.failures,
            t.skipped,
            t.errors
        );
    }
    Ok(())
}

/// Writes to a file (or stdout) and optionally echoes to stdout.
struct Tee {
    file: Box<dyn Write>,
    echo: bool,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all(buf)?;
        if self.echo {
            Stdout.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        if self.echo {
            Stdout.flush()?;
        }
        Ok(())
    }
}

fn capture_cmd(a: &CaptureArgs, quiet: bool) -> Result<(), Fail> {
    if a.list {
        let ports = capture::list_ports()?;
        let mut text = String::new();
        for p in &ports {
            text += &format!("{}\t{}\n", p.name, p.kind);
        }
        out(&text)?;
        if ports.is_empty() && !quiet {
            note!("capture: no serial ports found");
        }
        return Ok(());
    }
    let (Some(dev), Some(o)) = (&a.device, &a.out) else {
        return Err(Fail(2, "capture: DEVICE and --out LOG are required (or --list)".into()));
    };
    let file: Box<dyn Write> = if o == "-" {
        Box::new(Stdout)
    } else {
        Box::new(std::fs::File::create(o).map_err(|e| Error(format!("{o}: cannot create: {e}")))?)
    };
    let mut sink = Tee { file, echo: a.echo && o != "-" };
    let opts = capture::Options { baud: a.baud, timeout: Duration::from_secs_f64(a.timeout) };
    let got = capture::capture(std::path::Path::new(dev), &opts, &mut sink)?;
    let secs = got.elapsed.as_secs_f64();
    if !a.no_summary && !quiet {
        // The digest of what was captured, complete or not (a board that died mid-run too).
        let name = if o == "-" { dev.as_str() } else { o.as_str() };
        let log = Log::from_bytes(name, &got.bytes);
        let text = summary::digest(&log, None, &summary::Options::default()).join("\n") + "\n";
        if o == "-" {
            note!("{}", text.trim_end());
        } else {
            out(&text)?;
        }
    }
    // The lines' arrival times (JUnit `time`): LOG.times beside the log, or --times FILE.
    let times_path = a.times.clone().or_else(|| (o != "-").then(|| times::sidecar(o)));
    if let Some(path) = times_path {
        std::fs::File::create(&path)
            .and_then(|mut f| times::LineTimes(got.arrived.clone()).write(&mut f))
            .map_err(|e| Error(format!("{path}: cannot write: {e}")))?;
    }
    if got.saw_end {
        if !quiet {
            note!("capture: {} bytes in {secs:.1} s, end record seen; saved to {o}", got.bytes.len());
        }
        Ok(())
    } else {
        Err(Fail(1, format!("capture: timeout after {} s without the end record; {} bytes saved to {o}", a.timeout, got.bytes.len())))
    }
}

/// The saved log, created on its first write: a stream that is not a run saves nothing.
struct LazyFile<'a> {
    path: &'a str,
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// When each saved line was written (the filter saves a line as it arrives), seconds since
    /// the filter started: the log's line arrival times, for JUnit.
    arrived: Vec<f64>,
    /// Whether the last byte written ended a line.
    at_line_start: bool,
    t0: Instant,
}

impl Write for LazyFile<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() {
            self.file = Some(std::io::BufWriter::new(std::fs::File::create(self.path)?));
        }
        let n = self.file.as_mut().map_or(Ok(0), |f| f.write(buf))?;
        let now = self.t0.elapsed().as_secs_f64();
        let written = &buf[..n];
        self.arrived.extend(written.iter().filter(|&&b| b == b'\n').map(|_| now));
        if let Some(&last) = written.last() {
            self.at_line_start = last == b'\n';
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

fn console_cmd(a: &ConsoleArgs) -> Result<(), Fail> {
    use std::io::IsTerminal;
    let mut save = LazyFile { path: &a.save, file: None, arrived: Vec::new(), at_line_start: true, t0: Instant::now() };
    // CS_VERBOSE=1 (any value but empty or 0) shows the full stream.
    let env_verbose = std::env::var("CS_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    let opts = console::Options { verbose: a.verbose || env_verbose, terminal: std::io::stdout().is_terminal(), icount: a.icount };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut err = std::io::stderr();
    let mut views = console::Views { out: &mut Stdout, err: &mut err };
    let counts = console::filter(&mut input, &mut save, &mut views, opts).map_err(|e| Fail(2, format!("console: {}: {e}", a.save)))?;
    // A closed terminal is not an error of the filter: the log is complete.
    STDOUT_CLOSED.store(false, Ordering::Relaxed);
    if !counts.started {
        // `help` or a refused command line: shown, nothing saved, and the runner is told so.
        return Err(Fail(3, String::new()));
    }
    // The line arrival times beside the log (LOG.times, as the catalogue runner and the serial
    // capture write them): a last line without its newline arrived too.
    if !save.at_line_start {
        save.arrived.push(save.t0.elapsed().as_secs_f64());
    }
    let path = times::sidecar(&a.save);
    std::fs::File::create(&path)
        .and_then(|mut f| times::LineTimes(std::mem::take(&mut save.arrived)).write(&mut f))
        .map_err(|e| Fail(2, format!("console: {path}: cannot write: {e}")))?;
    Ok(())
}

fn rotate_cmd(a: &RotateArgs) -> Result<(), Fail> {
    use cachescope_report::runs;
    let dir = std::path::Path::new(&a.dir);
    let all = runs::scan(dir).map_err(|e| Fail(2, format!("rotate: {}: {e}", a.dir)))?;
    for old in runs::to_remove(all, a.keep, a.current.as_deref().map(std::path::Path::new)) {
        runs::remove(&old).map_err(|e| Fail(2, format!("rotate: {}: {e}", old.display())))?;
    }
    Ok(())
}

fn summary_cmd(a: &SummaryArgs) -> Result<(), Fail> {
    let log = Log::load(&a.file)?;
    log.require_run_log()?;
    let model = a.model.as_deref().map(Log::load).transpose()?;
    if let Some(m) = &model {
        warn_if_model_invalid(m);
    }
    let opts = summary::Options { icount: a.icount, model_path: a.model.clone() };
    out(&(summary::digest(&log, model.as_ref(), &opts).join("\n") + "\n"))
}

fn verdict_cmd(a: &VerdictArgs) -> Result<(), Fail> {
    let log = Log::load(&a.file)?;
    let mlog = Log::load(&a.model)?;
    let (run, _) = records::extract(&log);
    let (mrecs, _) = records::extract(&mlog);
    // A damaged model log (bit flips, a truncated write) draws no verdict: it cannot pass.
    let v = match contract::check_model_log(&mlog).flag(&mlog.name) {
        Some(why) => verdict::Verdict::missing(why),
        None => verdict::judge(run.iter().map(|r| &r.obj), mrecs.iter().map(|r| &r.obj)).unwrap_or_else(verdict::Verdict::missing),
    };
    let cases = junit::build(&log, &RunInfo::default(), None);
    out(&(v.lines(|phase| verdict::declaring_case(&cases, phase)).join("\n") + "\n"))?;
    if v.passed() {
        Ok(())
    } else {
        Err(Fail(1, String::new()))
    }
}

/// The model log's records, refused when it has none of the model's.
fn model_data_of(path: &str) -> Result<model_data::ModelData, Fail> {
    let mlog = Log::load(path)?;
    let (mrecs, _) = records::extract(&mlog);
    let d = model_data::ModelData::from_records(&mrecs);
    if d.is_empty() {
        return Err(Fail(2, format!("{path}: no cache-model records")));
    }
    Ok(d)
}

fn compare_model_cmd(a: &CompareModelArgs) -> Result<(), Fail> {
    let log = Log::load(&a.board)?;
    let (board, _) = records::extract(&log);
    let d = model_data_of(&a.model)?;
    let c = compare_model::compare(&board, &d).map_err(|e| Fail(2, format!("{} / {}: {e}", a.board, a.model)))?;
    if let Some(path) = &a.svg {
        write_to(path, &c.figure())?;
    }
    out(&c.to_text())
}

fn synth_cmd(a: &SynthArgs) -> Result<(), Fail> {
    let factors = a
        .scale
        .iter()
        .map(|s| compare_model::parse_factor(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Fail(2, format!("--scale {e}")))?;
    let log = Log::load(&a.log)?;
    let d = model_data_of(&a.model)?;
    let text = compare_model::synthesize(&log, &d, &factors).map_err(|e| Fail(2, format!("{} / {}: {e}", a.log, a.model)))?;
    write_to(&a.out, &text)
}

fn infer_cmd(a: &InferArgs) -> Result<(), Fail> {
    let log = Log::load(&a.file)?;
    let mlog = Log::load(&a.model)?;
    let (run, _) = records::extract(&log);
    let (mrecs, _) = records::extract(&mlog);
    let d = model_data::ModelData::from_records(&mrecs);
    if d.is_empty() {
        return Err(Fail(2, format!("{}: no cache-model records", a.model)));
    }
    let inf = model_data::infer(&run, &d);
    if a.json {
        out(&(serde_json::to_string_pretty(&inf.to_json()).unwrap_or_default() + "\n"))
    } else {
        out(&inf.to_text())
    }
}

fn firmware_cmd(a: &FirmwareArgs) -> Result<(), Fail> {
    use cachescope_report::{expect::Expectation, firmware, symbols::Symbols};
    let offset = firmware::parse_offset(&a.load_offset)
        .ok_or_else(|| Fail(2, format!("--load-offset '{}': a number of bytes, decimal or 0x… (may be negative)", a.load_offset)))?;
    let text = std::fs::read_to_string(&a.model).map_err(|e| Fail(2, format!("{}: cannot read: {e}", a.model)))?;
    let obs = firmware::Observed::from_text(&text).map_err(|e| Fail(2, format!("{}: {e}", a.model)))?;
    let syms = match &a.elf {
        Some(e) => Some(Symbols::load(std::path::Path::new(e), offset).map_err(|m| Fail(2, m))?),
        None => None,
    };
    let expect = match &a.expect {
        Some(p) => {
            let t = std::fs::read_to_string(p).map_err(|e| Fail(2, format!("{p}: cannot read: {e}")))?;
            Some(Expectation::parse(&t).map_err(|e| Fail(2, format!("{p}: {e}")))?)
        }
        None => None,
    };
    let run = firmware::ObservedRun { firmware: a.model.clone(), elf: a.elf.clone(), model: a.model.clone(), ..Default::default() };
    let mut d = firmware::digest(&obs, syms.as_ref(), &run);
    let mut met = true;
    if let (Some(e), Some(p)) = (&expect, &a.expect) {
        let problems = e.check(&obs, syms.as_ref());
        met = problems.is_empty();
        d += &firmware::expectation_lines(std::path::Path::new(p), &problems);
    }
    out(&d)?;
    if met {
        Ok(())
    } else {
        Err(Fail(1, String::new()))
    }
}

fn main() -> ExitCode {
    let t0 = Instant::now();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help/--version (exit 0) or a usage error (exit 2), printed by clap; a closed
            // stdout or stderr is ignored here too.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let q = cli.quiet;
    let result = match &cli.cmd {
        Cmd::Check(a) => check(a, q),
        Cmd::Extract(a) => extract_cmd(a, q),
        Cmd::Report(a) => report_cmd(a, q),
        Cmd::Compare(a) => compare_cmd(a, q),
        Cmd::Junit(a) => junit_cmd(a, q),
        Cmd::Capture(a) => capture_cmd(a, q),
        Cmd::Console(a) => console_cmd(a),
        Cmd::Rotate(a) => rotate_cmd(a),
        Cmd::Summary(a) => summary_cmd(a),
        Cmd::Infer(a) => infer_cmd(a),
        Cmd::Firmware(a) => firmware_cmd(a),
        Cmd::CompareModel(a) => compare_model_cmd(a),
        Cmd::SynthBoardLog(a) => synth_cmd(a),
        Cmd::Verdict(a) => verdict_cmd(a),
    };
    if std::env::var_os("CS_REPORT_TIME").is_some() {
        note!("cachescope-report: {:.3} s", t0.elapsed().as_secs_f64());
    }
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        // The reader went away (`| head`): end quietly, as a tool killed by SIGPIPE would.
        return ExitCode::from(141);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            if !msg.is_empty() {
                note!("cachescope-report: {msg}");
            }
            ExitCode::from(code)
        }
    }
}
