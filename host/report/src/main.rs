//! `cachescope-report` command line (see `cachescope-report help`).

use cachescope_report::compare::{self, Baseline};
use cachescope_report::input::{Error, Log};
use cachescope_report::{capture, extract, ktap, metrics::Metric, records, report};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "\
cachescope-report: check, extract, report on and compare cachescope UART logs

usage:
  cachescope-report check FILE... [--allow-unknown]
      Strict KTAP v1 validation plus the records contract (boot first with schema 1, end last
      matching the results, metric schema). Prints FILE:LINE: problem for each violation.
      --allow-unknown  accept non-KTAP lines inside the document (ktap.rst allows them)
  cachescope-report extract FILE [--json OUT] [--csv DIR]
      Records as one JSON array (OUT may be -) and/or one CSV per record kind in DIR.
  cachescope-report report FILE [--model MODEL_LOG] --out REPORT.md|REPORT.html [--svg-dir DIR]
      Markdown or HTML report with inline SVG plots and tables; --svg-dir also writes each
      figure as DIR/figN-*.svg. MODEL_LOG: records of the cache-model plugin.
  cachescope-report compare FILE --baseline BASELINE.json [--tolerance 5%] [--write-baseline]
      Compares metric medians with the baseline; exits 1 naming every regression or missing
      metric. --tolerance is the default for metrics without their own (0 = exact).
      --write-baseline writes BASELINE.json from FILE instead (model figures get tolerance 0).
  cachescope-report capture DEVICE --out LOG [--baud 115200] [--timeout 120] [--echo]
      Reads a serial device (raw mode) until the end record or the timeout (seconds), saving
      every byte to LOG (- = stdout); --echo also copies it to stdout.

FILE may be - (stdin) or a serial device (captured at 115200 baud until the end record).
Exit status: 0 ok; 1 validation problems, regressions, missing metrics or capture timeout;
2 bad arguments or unreadable/malformed input.

example:
  scripts/report check target/cachescope-logs/main-default.log
  scripts/report report run.log --out report.html
  scripts/report compare run.log --baseline tests/baselines/bench.json --tolerance 0
";

/// A failed command: exit status and message.
struct Fail(u8, String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail(2, e.0)
    }
}

fn usage(msg: impl Into<String>) -> Fail {
    Fail(2, format!("{}\n(run 'cachescope-report help' for usage)", msg.into()))
}

/// Parsed options of one subcommand: positional arguments and `--flag [value]` pairs.
struct Args {
    positional: Vec<String>,
    opts: Vec<(String, Option<String>)>,
}

impl Args {
    /// Splits `argv`; `with_value` lists the options that take a value, `flags` those that do not.
    fn parse(argv: &[String], with_value: &[&str], flags: &[&str]) -> Result<Args, Fail> {
        let mut a = Args { positional: Vec::new(), opts: Vec::new() };
        let mut it = argv.iter();
        while let Some(arg) = it.next() {
            if arg == "-" || !arg.starts_with("--") {
                a.positional.push(arg.clone());
                continue;
            }
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (arg.as_str(), None),
            };
            let key = &name[2..];
            if with_value.contains(&key) {
                let v = match inline {
                    Some(v) => v,
                    None => it.next().cloned().ok_or_else(|| usage(format!("{name} needs a value")))?,
                };
                if a.opts.iter().any(|(k, _)| k == key) {
                    return Err(usage(format!("{name} given twice")));
                }
                a.opts.push((key.to_string(), Some(v)));
            } else if flags.contains(&key) && inline.is_none() {
                a.opts.push((key.to_string(), None));
            } else {
                let mut accepted: Vec<String> = with_value.iter().map(|o| format!("--{o} VALUE")).collect();
                accepted.extend(flags.iter().map(|f| format!("--{f}")));
                return Err(usage(format!(
                    "unknown option '{arg}' (accepted: {})",
                    if accepted.is_empty() { "none".into() } else { accepted.join(", ") }
                )));
            }
        }
        Ok(a)
    }

    fn value(&self, key: &str) -> Option<&str> {
        self.opts.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.as_deref())
    }

    fn flag(&self, key: &str) -> bool {
        self.opts.iter().any(|(k, _)| k == key)
    }

    fn one_file(&self, cmd: &str) -> Result<&str, Fail> {
        match self.positional.as_slice() {
            [f] => Ok(f),
            [] => Err(usage(format!("{cmd}: which log? (a FILE, - for stdin, or a serial device)"))),
            more => Err(usage(format!("{cmd}: one log at a time, got {}", more.len()))),
        }
    }
}

fn check(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &[], &["allow-unknown"])?;
    if a.positional.is_empty() {
        return Err(usage("check: which logs? (FILE... or -)"));
    }
    let opts = ktap::Options { allow_unknown: a.flag("allow-unknown") };
    let mut bad = 0;
    let mut out = std::io::stdout().lock();
    for path in &a.positional {
        let log = Log::load(path)?;
        let k = ktap::validate(&log, opts);
        let mut problems = k.problems.clone();
        problems.extend(records::check_contract(&log, &k));
        problems.sort_by_key(|p| p.line);
        for p in problems.iter().take(100) {
            let _ =
                if p.line == 0 { writeln!(out, "{}: {}", log.name, p.msg) } else { writeln!(out, "{}:{}: {}", log.name, p.line, p.msg) };
        }
        if problems.len() > 100 {
            let _ = writeln!(out, "{}: … and {} more problems", log.name, problems.len() - 100);
        }
        let c = k.leaves;
        if problems.is_empty() {
            let recs = records::extract(&log).0.len();
            let _ = writeln!(
                out,
                "{}: ok: KTAP v1, {} top-level results, {} leaf results ({} passed, {} failed, {} skipped), {recs} records",
                log.name,
                k.top_results,
                c.passed + c.failed + c.skipped,
                c.passed,
                c.failed,
                c.skipped
            );
        } else {
            bad += 1;
            let _ = writeln!(out, "{}: INVALID: {} problems", log.name, problems.len());
        }
    }
    if bad > 0 {
        return Err(Fail(1, format!("check: {bad} of {} logs invalid", a.positional.len())));
    }
    Ok(())
}

fn warn_if_invalid(log: &Log) {
    let k = ktap::validate(log, ktap::Options::default());
    let n = k.problems.len() + records::check_contract(log, &k).len();
    if n > 0 {
        eprintln!("cachescope-report: warning: {}: {n} KTAP/records problems (run 'check' for details)", log.name);
    }
}

fn extract_cmd(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &["json", "csv"], &[])?;
    let path = a.one_file("extract")?;
    if a.value("json").is_none() && a.value("csv").is_none() {
        return Err(usage("extract: nothing to write: give --json OUT and/or --csv DIR"));
    }
    let log = Log::load(path)?;
    warn_if_invalid(&log);
    let recs = records::extract_strict(&log)?;
    if let Some(out) = a.value("json") {
        extract::write_out(out, &extract::to_json(&recs))?;
        if out != "-" {
            eprintln!("extract: {} records to {out}", recs.len());
        }
    }
    if let Some(dir) = a.value("csv") {
        let files = extract::write_csv_dir(dir, &recs)?;
        eprintln!(
            "extract: {} records to {} CSV files in {dir} ({})",
            recs.len(),
            files.len(),
            files.iter().map(|f| f.rsplit('/').next().unwrap_or(f)).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

fn report_cmd(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &["model", "out", "svg-dir"], &[])?;
    let path = a.one_file("report")?;
    let out = a.value("out").ok_or_else(|| usage("report: --out REPORT.md or --out REPORT.html is required"))?;
    let format = report::Format::from_path(out)?;
    let log = Log::load(path)?;
    let model = a.value("model").map(Log::load).transpose()?;
    let r = report::build(&log, model.as_ref());
    std::fs::write(out, r.render(format)).map_err(|e| Error(format!("{out}: cannot write: {e}")))?;
    if let Some(dir) = a.value("svg-dir") {
        std::fs::create_dir_all(dir).map_err(|e| Error(format!("{dir}: cannot create directory: {e}")))?;
        for (stem, svg) in &r.figures {
            let p = format!("{dir}/{stem}.svg");
            std::fs::write(&p, svg).map_err(|e| Error(format!("{p}: cannot write: {e}")))?;
        }
    }
    eprintln!("report: {out} ({} figures)", r.figures.len());
    Ok(())
}

fn compare_cmd(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &["baseline", "tolerance"], &["write-baseline"])?;
    let path = a.one_file("compare")?;
    let bpath = a.value("baseline").ok_or_else(|| usage("compare: --baseline BASELINE.json is required"))?;
    let tol = a.value("tolerance").map(compare::parse_tolerance).transpose()?;
    let log = Log::load(path)?;
    let recs = records::extract_strict(&log)?;
    let (metrics, skipped) = Metric::collect(&recs);
    if let Some(s) = skipped.first() {
        return Err(Fail(2, format!("{}:{s}", log.name)));
    }
    if a.flag("write-baseline") {
        if metrics.is_empty() {
            return Err(Fail(2, format!("{}: no metric records; refusing to write an empty baseline", log.name)));
        }
        let (b, notes) = Baseline::from_metrics(&metrics, tol.unwrap_or(compare::DEFAULT_TOLERANCE_PCT));
        for n in notes {
            eprintln!("compare: {}:{n}", log.name);
        }
        std::fs::write(bpath, b.to_json()).map_err(|e| Error(format!("{bpath}: cannot write: {e}")))?;
        eprintln!("compare: wrote {} metrics from {} to {bpath}", b.metrics.len(), log.name);
        return Ok(());
    }
    let b = Baseline::load(bpath)?;
    let c = compare::compare(&metrics, &b, tol).map_err(|e| Error(format!("{}: {e}", log.name)))?;
    print!("compare: {} ({} metrics) against {bpath} ({} metrics)\n{}", log.name, metrics.len(), b.metrics.len(), c.render());
    if c.failed() {
        return Err(Fail(1, format!("compare: {} differs from {bpath} (see above)", log.name)));
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
            std::io::stdout().write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        if self.echo {
            std::io::stdout().flush()?;
        }
        Ok(())
    }
}

fn capture_cmd(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &["baud", "timeout", "out"], &["echo"])?;
    let dev = a.one_file("capture")?;
    let out = a.value("out").ok_or_else(|| usage("capture: --out LOG is required (- for stdout)"))?;
    let baud: u32 = match a.value("baud") {
        None => 115_200,
        Some(b) => b.parse().map_err(|_| usage(format!("--baud '{b}': expected a number such as 115200")))?,
    };
    capture::check_baud(baud)?;
    let timeout = match a.value("timeout") {
        None => 120.0,
        Some(t) => match t.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e7 => s,
            _ => return Err(usage(format!("--timeout '{t}': expected seconds > 0, such as 60 or 0.5"))),
        },
    };
    let file: Box<dyn Write> = if out == "-" {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::fs::File::create(out).map_err(|e| Error(format!("{out}: cannot create: {e}")))?)
    };
    let mut sink = Tee { file, echo: a.flag("echo") && out != "-" };
    let opts = capture::Options { baud, timeout: Duration::from_secs_f64(timeout) };
    let got = capture::capture(std::path::Path::new(dev), &opts, &mut sink)?;
    let secs = got.elapsed.as_secs_f64();
    if got.saw_end {
        eprintln!("capture: {} bytes in {secs:.1} s, end record seen; saved to {out}", got.bytes.len());
        Ok(())
    } else {
        Err(Fail(1, format!("capture: timeout after {timeout} s without the end record; {} bytes saved to {out}", got.bytes.len())))
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let t0 = Instant::now();
    let result = match argv.first().map(String::as_str) {
        Some("check") => check(&argv[1..]),
        Some("extract") => extract_cmd(&argv[1..]),
        Some("report") => report_cmd(&argv[1..]),
        Some("compare") => compare_cmd(&argv[1..]),
        Some("capture") => capture_cmd(&argv[1..]),
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(usage(format!("unknown command '{other}' (check, extract, report, compare, capture, help)"))),
        None => Err(usage("no command given")),
    };
    if std::env::var_os("CS_REPORT_TIME").is_some() {
        eprintln!("cachescope-report: {:.3} s", t0.elapsed().as_secs_f64());
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("cachescope-report: {msg}");
            ExitCode::from(code)
        }
    }
}
