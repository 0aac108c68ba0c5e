//! End-to-end tests of the `cachescope-report` binary on the fixtures in tests/fixtures/
//! (hand-made logs shaped like the benchmark output, see tests/fixtures/README.md) and on
//! deliberately broken input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cachescope-report"))
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).display().to_string()
}

/// A scratch directory removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("cs-report-cli-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run cachescope-report")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn assert_code(o: &Output, code: i32, needles: &[&str]) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(code), "exit status, output:\n{t}");
    for n in needles {
        assert!(t.contains(n), "missing {n:?} in:\n{t}");
    }
    assert!(!t.contains("panicked"), "panic in:\n{t}");
}

#[test]
fn check_accepts_the_fixtures() {
    let o = run(&["check", &fixture("bench-qemu.log"), &fixture("bench-pi5.log")]);
    assert_code(
        &o,
        0,
        &[
            "bench-qemu.log: ok: KTAP v1, 3 top-level results, 7 leaf results (6 passed, 0 failed, 1 skipped), 170 records",
            "bench-pi5.log: ok",
        ],
    );
}

#[test]
fn real_kernel_log_checks_reports_and_compares() {
    // Real output of the main job, plain and under -icount (see fixtures/README.md).
    let icount = fixture("qemu-icount-real.log");
    let plain = fixture("qemu-real.log");
    for l in [&icount, &plain] {
        let o = run(&["check", l]);
        assert_code(&o, 0, &["ok: KTAP v1, 4 top-level results, 31 leaf results (28 passed, 0 failed, 3 skipped)"]);
    }
    let t = Scratch::new("real_kernel_log_checks_reports_and_compares");
    let html = t.path("real.html");
    assert_code(&run(&["report", &plain, "--out", html.to_str().unwrap()]), 0, &["(7 figures)"]);
    let h = std::fs::read_to_string(&html).unwrap();
    // Knees inferred from emulator timing are the host's caches: never drawn.
    assert!(!h.contains("knee 1 MiB"), "emulated knees drawn");
    for needle in [
        "(no knees: emulator timing)",
        "KV-cache append-misaligned vs tokens",
        "DMA-like hand-off cost per attribute",
        "L1D 32 KiB (CCSIDR)",
        "EMULATED (QEMU)",
    ] {
        assert!(h.contains(needle), "{needle}");
    }
    let baseline = fixture("qemu-icount-real.baseline.json");
    let o = run(&["compare", &icount, "--baseline", &baseline]);
    assert_code(&o, 0, &["compare: 736 within tolerance, 0 regressed/changed, 0 missing"]);
    // Without -icount the emulator's timings move: the exact baseline catches it.
    let o = run(&["compare", &plain, "--baseline", &baseline]);
    assert_code(&o, 1, &["CHANGED    latency/chase/normal-wb/1024 line=64 [cntvct ns]", "FAIL"]);
}

#[test]
fn check_reads_stdin() {
    let mut child = bin().args(["check", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let log = std::fs::read(fixture("bench-qemu.log")).unwrap();
    child.stdin.take().unwrap().write_all(&log).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0, &["<stdin>: ok: KTAP v1"]);
}

#[test]
fn check_names_file_and_line_of_each_problem() {
    let t = Scratch::new("check_names_file_and_line_of_each_problem");
    let p = t.path("truncated.log");
    let full = std::fs::read_to_string(fixture("bench-qemu.log")).unwrap();
    // Cut the run inside the bench suite, as a panic or a capture timeout would.
    let cut: String = full.lines().take(60).map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, cut).unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    let name = p.display().to_string();
    assert_code(
        &o,
        1,
        &[
            &format!("{name}:60: last record is 'metric', expected 'end'"),
            "subtest 'bench' (line 21) never got its result line (0 of 4 results)",
            &format!("{name}: INVALID"),
        ],
    );
}

#[test]
fn bad_input_gives_clear_errors_never_a_panic() {
    let t = Scratch::new("bad_input_gives_clear_errors_never_a_panic");
    // Missing file.
    assert_code(&run(&["check", "/nonexistent/run.log"]), 2, &["/nonexistent/run.log: cannot open: No such file or directory"]);
    // Binary garbage only.
    let g = t.path("garbage.bin");
    std::fs::write(&g, (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect::<Vec<_>>()).unwrap();
    assert_code(&run(&["check", g.to_str().unwrap()]), 1, &["no 'KTAP version 1' line"]);
    // Garbage inside the document.
    let mut bytes = std::fs::read(fixture("bench-qemu.log")).unwrap();
    let at = bytes.windows(6).position(|w| w == b"ok 1 l").unwrap();
    bytes.splice(at..at, b"\xff\xfe\x00\x01garbage\r\n  ".iter().cloned());
    let gi = t.path("garbage-inside.log");
    std::fs::write(&gi, &bytes).unwrap();
    assert_code(&run(&["check", gi.to_str().unwrap()]), 1, &["bytes that are not UTF-8"]);
    // A huge line (8 MiB without a newline) inside the document.
    let mut big = b"KTAP version 1\n1..1\n# ".to_vec();
    big.extend(std::iter::repeat_n(b'x', 8 << 20));
    big.extend_from_slice(b"\nok 1 a\n");
    let h = t.path("huge.log");
    std::fs::write(&h, &big).unwrap();
    assert_code(&run(&["check", h.to_str().unwrap()]), 1, &[":3: line of 8388610 bytes is longer than the 1048576-byte limit"]);
    // Truncated JSON in a record: check reports it, extract refuses with file:line.
    let tj = t.path("truncated-json.log");
    // Cut line 26 (a metric record) in the middle of its JSON.
    let s: String = std::fs::read_to_string(fixture("bench-qemu.log"))
        .unwrap()
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| if i == 25 { format!("{}\r\n", &l[..l.len() / 2]) } else { l.to_string() })
        .collect();
    std::fs::write(&tj, &s).unwrap();
    let tn = tj.display().to_string();
    assert_code(&run(&["check", &tn]), 1, &[&format!("{tn}:26: record is truncated JSON")]);
    let out = t.path("t.json");
    assert_code(&run(&["extract", &tn, "--json", out.to_str().unwrap()]), 2, &[&format!("{tn}:26: record is truncated JSON")]);
    assert_code(
        &run(&["compare", &tn, "--baseline", &fixture("bench-qemu.baseline.json")]),
        2,
        &[&format!("{tn}:26: record is truncated JSON")],
    );
    // A directory, and bad arguments.
    assert_code(&run(&["check", "/"]), 2, &["/: is a directory"]);
    assert_code(&run(&["frobnicate"]), 2, &["unrecognized subcommand 'frobnicate'"]);
    assert_code(&run(&["check"]), 2, &["the following required arguments were not provided", "<FILE>..."]);
    assert_code(&run(&["report", &fixture("bench-qemu.log"), "--out", "r.pdf"]), 2, &["must end in .md or .html"]);
    assert_code(
        &run(&["compare", &fixture("bench-qemu.log")]),
        2,
        &["the following required arguments were not provided", "--baseline <BASELINE.json>"],
    );
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "--baseline", "x.json", "--tolerance", "lots"]), 2, &["--tolerance 'lots'"]);
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "--baseline", "x.json", "--tolerance", "-1%"]), 2, &["--tolerance '-1%'"]);
    assert_code(
        &run(&["extract", &fixture("bench-qemu.log"), "--jsn", "x"]),
        2,
        &["unexpected argument '--jsn'", "a similar argument exists: '--json'"],
    );
    assert_code(
        &run(&["extract", &fixture("bench-qemu.log")]),
        2,
        &["the following required arguments were not provided", "--json <OUT>|--csv <DIR>"],
    );
    assert_code(&run(&["capture", "/dev/null", "--out", "x", "--baud", "12345"]), 2, &["--baud 12345: not a supported rate"]);
    assert_code(&run(&["capture", "/dev/null", "--out", "x", "--timeout", "-1"]), 2, &["--timeout '-1'"]);
}

#[test]
fn extract_writes_json_and_csv_per_kind() {
    let t = Scratch::new("extract_writes_json_and_csv_per_kind");
    let json = t.path("recs.json");
    let dir = t.path("csv");
    let o = run(&["extract", &fixture("bench-qemu.log"), "--json", json.to_str().unwrap(), "--csv", dir.to_str().unwrap()]);
    assert_code(&o, 0, &["extract: 170 records to", "metric.csv"]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 170);
    assert_eq!(arr[0]["record"], "boot");
    assert_eq!(arr[169]["record"], "end");
    let metric = std::fs::read_to_string(dir.join("metric.csv")).unwrap();
    let mut lines = metric.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("log_line,record,bench,variant,attr,bytes,reps,min,median,max,mad,unit,source,emulated,line,phase"));
    assert_eq!(metric.lines().count(), 1 + arr.iter().filter(|r| r["record"] == "metric").count());
    for kind in ["boot", "cache", "end", "kv-shape", "knee", "timer"] {
        assert!(dir.join(format!("{kind}.csv")).exists(), "{kind}.csv");
    }
}

#[test]
fn report_renders_markdown_html_and_svg_files() {
    let t = Scratch::new("report_renders_markdown_html_and_svg_files");
    let md = t.path("r.md");
    let html = t.path("r.html");
    let svgs = t.path("svg");
    let o = run(&[
        "report",
        &fixture("bench-qemu.log"),
        "--model",
        &fixture("model-qemu.log"),
        "--out",
        md.to_str().unwrap(),
        "--svg-dir",
        svgs.to_str().unwrap(),
    ]);
    assert_code(&o, 0, &["(7 figures)"]);
    let m = std::fs::read_to_string(&md).unwrap();
    for needle in ["This run is emulated", "L1 accesses=4096 misses=0 bypassed=0; L2 accesses=0 misses=0 bypassed=0", "![Figure 1]("] {
        assert!(m.contains(needle), "{needle} not in the Markdown report");
    }
    // Markdown links its figures (hosting sites strip inline SVG); the links resolve.
    assert!(!m.contains("<svg"), "no inline SVG in Markdown");
    let links: Vec<&str> = m.match_indices("](svg/").map(|(i, _)| &m[i + 2..i + 2 + m[i + 2..].find(')').unwrap()]).collect();
    assert_eq!(links.len(), 7, "{m}");
    let all_svg: String = links.iter().map(|l| std::fs::read_to_string(t.path(l)).unwrap()).collect();
    for needle in [
        "EMULATED (QEMU): these figures measure the emulator, not caches",
        "Latency vs working set: L1D misses/access [model]",
        "L1D 32 KiB (CCSIDR)",
        "L2 1 MiB (CCSIDR)",
    ] {
        assert!(all_svg.contains(needle), "{needle} not in the figures");
    }
    assert_eq!(std::fs::read_dir(&svgs).unwrap().count(), 7);
    // Without --svg-dir the figures go next to the report.
    let md2 = t.path("plain.md");
    let o = run(&["report", &fixture("bench-qemu.log"), "--out", md2.to_str().unwrap()]);
    assert_code(&o, 0, &["figures)"]);
    let m2 = std::fs::read_to_string(&md2).unwrap();
    assert!(m2.contains("](plain.figures/") && t.path("plain.figures").is_dir(), "{m2}");
    let o = run(&["report", &fixture("bench-pi5.log"), "--out", html.to_str().unwrap()]);
    assert_code(&o, 0, &["(6 figures)"]);
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("source: pmccntr (PMCCNTR_EL0 cycle counter)"));
    assert!(!h.contains("EMULATED"), "a hardware run carries no emulation warning");
    assert_eq!(h.matches("<svg").count(), 6);
}

fn write_baseline(t: &Scratch, name: &str, tolerance: &str) -> String {
    let b = t.path(name);
    let o = run(&["compare", &fixture("bench-qemu.log"), "--baseline", b.to_str().unwrap(), "--write-baseline", "--tolerance", tolerance]);
    assert_code(&o, 0, &["compare: wrote 161 metrics"]);
    b.display().to_string()
}

#[test]
fn committed_baseline_matches_the_fixture_exactly() {
    let t = Scratch::new("committed_baseline_matches_the_fixture_exactly");
    let o = run(&["compare", &fixture("bench-qemu.log"), "--baseline", &fixture("bench-qemu.baseline.json")]);
    assert_code(&o, 0, &["compare: 161 within tolerance, 0 regressed/changed, 0 missing, 0 other failures, 0 improved, 0 new: ok"]);
    // And it is what --write-baseline --tolerance 0 writes today (the format is stable).
    let fresh = write_baseline(&t, "fresh.json", "0");
    assert_eq!(std::fs::read_to_string(fresh).unwrap(), std::fs::read_to_string(fixture("bench-qemu.baseline.json")).unwrap());
}

#[test]
fn perturbed_baseline_fails_naming_the_metric() {
    let t = Scratch::new("perturbed_baseline_fails_naming_the_metric");
    let b = write_baseline(&t, "perturbed.json", "0");
    let text = std::fs::read_to_string(&b).unwrap();
    let key = "\"latency/chase/wb/4096 line=64 [cntvct ns]\": {\"median\":6.4,";
    assert!(text.contains(key), "{text}");
    std::fs::write(&b, text.replace(key, "\"latency/chase/wb/4096 line=64 [cntvct ns]\": {\"median\":6.3,")).unwrap();
    let o = run(&["compare", &fixture("bench-qemu.log"), "--baseline", &b]);
    assert_code(
        &o,
        1,
        &[
            "REGRESSION latency/chase/wb/4096 line=64 [cntvct ns]: baseline 6.3, measured 6.4 (+1.59%), tolerance exact (lower is better)",
            "160 within tolerance, 1 regressed/changed",
            "FAIL",
        ],
    );
    // With a 5% tolerance the same change passes.
    let o = run(&["compare", &fixture("bench-qemu.log"), "--baseline", &b, "--tolerance", "5%"]);
    assert_code(&o, 0, &["161 within tolerance"]);
}

#[test]
fn missing_metric_is_reported() {
    let t = Scratch::new("missing_metric_is_reported");
    let log = t.path("missing.log");
    let full = std::fs::read_to_string(fixture("bench-qemu.log")).unwrap();
    let kept: String = full.split_inclusive('\n').filter(|l| !l.contains("\"variant\":\"copy\",\"attr\":\"nc\"")).collect();
    assert!(kept.len() < full.len());
    std::fs::write(&log, kept).unwrap();
    let o = run(&["compare", log.to_str().unwrap(), "--baseline", &fixture("bench-qemu.baseline.json")]);
    assert_code(
        &o,
        1,
        &["MISSING    stream/copy/nc/8388608 prefetch_distance=0 [cntvct MB/s]: baseline 1069.5, not measured in this run", "1 missing"],
    );
}

#[test]
fn capture_from_a_file_and_a_fifo_stand_in() {
    let t = Scratch::new("capture_from_a_file_and_a_fifo_stand_in");
    // A regular file that already holds a whole run: stops at the end record.
    let out = t.path("captured.log");
    let o = run(&["capture", &fixture("bench-qemu.log"), "--out", out.to_str().unwrap(), "--timeout", "10"]);
    assert_code(&o, 0, &["end record seen"]);
    let captured = std::fs::read(&out).unwrap();
    let original = std::fs::read(fixture("bench-qemu.log")).unwrap();
    assert!(original.starts_with(&captured) && captured.len() + 100 > original.len());
    assert_code(&run(&["check", out.to_str().unwrap()]), 0, &["ok: KTAP v1"]);

    // A FIFO fed slowly by a writer: the capture waits for the end record, then stops.
    let fifo = t.path("uart.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out2 = t.path("captured-fifo.log");
    let child = bin()
        .args(["capture", fifo.to_str().unwrap(), "--out", out2.to_str().unwrap(), "--timeout", "20"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    for chunk in original.chunks(4000) {
        w.write_all(chunk).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0, &["end record seen"]);
    assert_code(&run(&["check", out2.to_str().unwrap()]), 0, &["ok: KTAP v1"]);

    // A run that never ends: timeout, exit 1, and what was read is kept.
    let partial = t.path("partial.log");
    std::fs::write(&partial, "KTAP version 1\r\n1..1\r\n").unwrap();
    let out3 = t.path("captured-partial.log");
    let o = run(&["capture", partial.to_str().unwrap(), "--out", out3.to_str().unwrap(), "--timeout", "0.3"]);
    assert_code(&o, 1, &["capture: timeout after 0.3 s without the end record; 22 bytes saved to"]);
    assert_eq!(std::fs::read(&out3).unwrap(), b"KTAP version 1\r\n1..1\r\n");
}

fn repo_file(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel).display().to_string()
}

#[test]
fn help_on_every_subcommand_and_version() {
    for cmd in ["check", "extract", "report", "compare", "junit", "capture"] {
        let usage = format!("Usage: cachescope-report {cmd}");
        assert_code(&run(&[cmd, "--help"]), 0, &[&usage, "-h, --help"]);
        assert_code(&run(&[cmd, "-h"]), 0, &[&usage]);
        assert_code(&run(&["help", cmd]), 0, &[&usage]);
    }
    for args in [&["--help"][..], &["help"], &["-h"]] {
        assert_code(&run(args), 0, &["Usage: cachescope-report [OPTIONS] <COMMAND>", "junit", "capture", "Exit status"]);
    }
    let version = format!("cachescope-report {}", env!("CARGO_PKG_VERSION"));
    assert_code(&run(&["-V"]), 0, &[&version]);
    assert_code(&run(&["--version"]), 0, &[&version]);
    assert_code(&run(&["check", "-V"]), 0, &[&format!("cachescope-report-check {}", env!("CARGO_PKG_VERSION"))]);
    // No command at all is a usage error that shows the help.
    assert_code(&run(&[]), 2, &["Usage: cachescope-report"]);
    // The help's example names a baseline that exists.
    let o = run(&["--help"]);
    let t = text(&o);
    let example = t.split_whitespace().find(|w| w.starts_with("tests/baselines/")).expect("a baseline in the examples");
    assert!(Path::new(&repo_file(example)).exists(), "{example} does not exist");
}

#[test]
fn typos_get_suggestions_and_exit_2() {
    assert_code(&run(&["chek", "x.log"]), 2, &["unrecognized subcommand 'chek'", "a similar subcommand exists: 'check'"]);
    assert_code(&run(&["compar"]), 2, &["some similar subcommands exist: 'compare-model', 'compare'"]);
    assert_code(&run(&["check", "--allow-unknwn", "x.log"]), 2, &["a similar argument exists: '--allow-unknown'"]);
    assert_code(
        &run(&["report", &fixture("bench-qemu.log"), "--svgdir", "d", "-o", "r.html"]),
        2,
        &["a similar argument exists: '--svg-dir'"],
    );
    assert_code(&run(&["capture", "/dev/null", "-o", "x", "--timout", "3"]), 2, &["a similar argument exists: '--timeout'"]);
}

#[test]
fn short_options_and_quiet() {
    let t = Scratch::new("short_options_and_quiet");
    let html = t.path("r.html");
    // -o is --out (it used to be taken as a file name), -q silences the progress note.
    let o = run(&["report", &fixture("bench-pi5.log"), "-o", html.to_str().unwrap()]);
    assert_code(&o, 0, &["(6 figures)"]);
    assert!(html.exists());
    let o = run(&["-q", "report", &fixture("bench-pi5.log"), "-o", html.to_str().unwrap()]);
    assert_code(&o, 0, &[]);
    assert_eq!(text(&o), "");
    let o = run(&["check", "-q", &fixture("bench-pi5.log")]);
    assert_code(&o, 0, &[]);
    assert_eq!(text(&o), "", "quiet check of a valid log prints nothing");
    let j = t.path("r.json");
    assert_code(&run(&["extract", &fixture("bench-pi5.log"), "-j", j.to_str().unwrap()]), 0, &["records to"]);
    let b = t.path("b.json");
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "-b", b.to_str().unwrap(), "-w", "-t", "0"]), 0, &["wrote 161 metrics"]);
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "-b", b.to_str().unwrap(), "-t", "0"]), 0, &["161 within tolerance"]);
}

/// Runs with standard output a pipe whose reading end is already closed.
fn run_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    bin().args(args).stdout(writer).stderr(Stdio::piped()).output().unwrap()
}

#[test]
fn closed_stdout_ends_quietly() {
    let log = fixture("qemu-icount-real.log");
    let baseline = fixture("qemu-icount-real.baseline.json");
    for args in [
        vec!["compare", &fixture("qemu-real.log"), "--baseline", &baseline],
        vec!["compare", &log, "--baseline", &baseline],
        vec!["check", &log],
        vec!["junit", &log, "-o", "-"],
        vec!["extract", &log, "--json", "-"],
        vec!["capture", &log, "-o", "-"],
        vec!["capture", "--list"],
        vec!["--help"],
        vec!["compare", "--help"],
    ] {
        let o = run_closed_stdout(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(matches!(o.status.code(), Some(0 | 141)), "{args:?}: status {:?}, stderr:\n{err}", o.status);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
    }
    // A real `| head -1`: the first line arrives, the tool ends without a panic.
    let mut child = bin()
        .args(["compare", &fixture("qemu-real.log"), "--baseline", &baseline])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(first.starts_with("compare: "), "{first}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
    assert!(matches!(o.status.code(), Some(1 | 141)), "{:?}", o.status);
}

#[test]
fn junit_round_trip_counts_equal_ktap_counts() {
    let t = Scratch::new("junit_round_trip_counts_equal_ktap_counts");
    for (log, tests, failures, skipped) in [("qemu-real.log", 31, 0, 3), ("qemu-failing.log", 13, 2, 1), ("bench-pi5.log", 7, 0, 1)] {
        let xml = t.path(&format!("{log}.xml"));
        let o = run(&["junit", &fixture(log), "--out", xml.to_str().unwrap()]);
        assert_code(&o, 0, &[&format!("{tests} tests, {failures} failures, {skipped} skipped, 0 errors")]);
        let x = std::fs::read_to_string(&xml).unwrap();
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"), "{x}");
        assert!(
            x.contains(&format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"")),
            "{log}: {}",
            x.lines().nth(1).unwrap()
        );
        assert_eq!(x.matches("<testcase ").count(), tests, "{log}");
        assert_eq!(x.matches("<failure ").count(), failures, "{log}");
        assert_eq!(x.matches("<skipped ").count(), skipped, "{log}");
        // The same counts as check's.
        let c = text(&run(&["check", &fixture(log)]));
        assert!(
            c.contains(&format!("{tests} leaf results ({} passed, {failures} failed, {skipped} skipped)", tests - failures - skipped)),
            "{c}"
        );
    }
    let x = std::fs::read_to_string(t.path("qemu-failing.log.xml")).unwrap();
    assert!(x.contains("<testsuite name=\"boot\" tests=\"6\" failures=\"1\" errors=\"0\" skipped=\"1\">"), "{x}");
    assert!(x.contains(
        "<failure message=\"device tree magic: expected 0xd00dfeed, found 0x00000000 (&quot;&lt;&amp;&gt;&quot; in &apos;/chosen&apos;)\" type=\"check\">"
    ));
    assert!(x.contains("<failure message=\"unexpected exception: data abort at EL1 (ESR_EL1 0x96000045"), "{x}");
    assert!(x.contains("type=\"fault\""));
    assert!(x.contains("<skipped message=\"entered at EL1: the EL2/EL3 drop path was not exercised\"/>"));
    assert!(x.contains("<property name=\"run.cpu\" value=\"Cortex-A72\"/>"));
    let x = std::fs::read_to_string(t.path("bench-pi5.log.xml")).unwrap();
    assert!(x.contains("<property name=\"latency/chase/wb/"), "metrics are test-case properties");
    // -o - writes to stdout; a log without KTAP is refused.
    assert_code(&run(&["junit", &fixture("qemu-real.log"), "-o", "-"]), 0, &["<testsuite name=\"bench\""]);
    assert_code(&run(&["junit", &fixture("model-qemu.log"), "-o", "-"]), 2, &["no KTAP results"]);
    assert_code(&run(&["junit", &fixture("qemu-real.log")]), 2, &["--out <RESULTS.xml>"]);
}

#[test]
fn junit_times_come_from_the_sidecar_beside_the_log() {
    let t = Scratch::new("junit_times_come_from_the_sidecar_beside_the_log");
    let text = std::fs::read_to_string(fixture("qemu-failing.log")).unwrap();
    let log = t.path("row.log");
    std::fs::write(&log, &text).unwrap();
    let log = log.to_str().unwrap();
    // No LOG.times: said on stderr, and no time attribute.
    let o = run(&["junit", log, "-o", "-"]);
    assert_code(&o, 0, &["no line arrival times"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains(" time="));
    // LOG.times (one time per line, 10 ms apart): every case, suite and the document get a time.
    let n = text.lines().count();
    let times: String = (0..n).map(|i| format!("{:.6}\n", i as f64 * 0.01)).collect();
    std::fs::write(format!("{log}.times"), format!("# cachescope line times 1: test\n{times}")).unwrap();
    let o = run(&["junit", log, "-o", "-"]);
    assert_code(&o, 0, &[]);
    let x = String::from_utf8_lossy(&o.stdout).into_owned();
    let cases = x.matches("<testcase ").count();
    assert!(cases > 0);
    assert_eq!(x.lines().filter(|l| l.contains("<testcase ")).filter(|l| l.contains(" time=\"")).count(), cases, "{x}");
    assert_eq!(x.lines().filter(|l| l.contains("<testsuite ")).filter(|l| !l.contains(" time=\"")).count(), 0, "{x}");
    assert!(x.lines().any(|l| l.starts_with("<testsuites ") && l.contains(" time=\"")), "{x}");
    // A sidecar of another log: a warning and no times; given explicitly: refused (status 2).
    std::fs::write(format!("{log}.times"), format!("# cachescope line times 1: test\n{}", &times[..times.len() / 2])).unwrap();
    let o = run(&["junit", log, "-o", "-"]);
    assert_code(&o, 0, &["warning:", "made for another log?"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains(" time="));
    let times_path = format!("{log}.times");
    assert_code(&run(&["junit", log, "--times", &times_path, "-o", "-"]), 2, &["made for another log?"]);
}

#[test]
fn junit_escapes_control_characters_and_reports_a_cut_run() {
    let t = Scratch::new("junit_escapes_control_characters_and_reports_a_cut_run");
    let full = std::fs::read_to_string(fixture("qemu-failing.log")).unwrap();
    let cut: String = full.split_inclusive('\n').take(30).map(|l| l.replace("found 0x00000000", "found \u{1b}[31m0\u{0}\u{7}")).collect();
    let log = t.path("cut.log");
    std::fs::write(&log, cut).unwrap();
    let xml = t.path("cut.xml");
    let o = run(&["junit", log.to_str().unwrap(), "-o", xml.to_str().unwrap()]);
    assert_code(&o, 0, &["warning:", "errors)"]);
    let x = std::fs::read_to_string(&xml).unwrap();
    assert!(!x.chars().any(|c| (c as u32) < 0x20 && c != '\n'), "raw control character in:\n{x}");
    assert!(x.contains("found \\x1b[31m0\\x00\\x07"), "{x}");
    assert!(x.contains("<error message=\"the log ends after"), "{x}");
}

#[test]
fn compare_explains_a_baseline_made_with_other_parameters() {
    let baseline = repo_file("tests/baselines/bench-icount-cortex-a72.json");
    let o = run(&["compare", &fixture("qemu-icount-real.log"), "--baseline", &baseline]);
    // Every metric of the baseline is missing from a log made with other parameters.
    let metrics = std::fs::read_to_string(&baseline).expect("baseline").matches("\"median\"").count();
    let missing = format!("{metrics} missing");
    assert_code(
        &o,
        1,
        &[
            "this log was made differently from the baseline (args, timer differ): baseline made with args='only=bench timer=pmccntr reps=3",
            "compare: this log: args='' timer=cntvct cpu=Cortex-A72",
            &missing,
            "per-metric lines left out",
        ],
    );
    let t = text(&o);
    assert!(!t.contains("MISSING") && t.lines().count() <= 6, "{t}");
    // -v lists every metric anyway.
    let o = run(&["compare", &fixture("qemu-icount-real.log"), "--baseline", &baseline, "-v"]);
    assert_code(&o, 1, &["MISSING    handoff/"]);
    // A QEMU version that differs is only a note; the metric comparison decides.
    let b = fixture("qemu-icount-real.baseline.json");
    let o = run(&["compare", &fixture("qemu-icount-real.log"), "--baseline", &b, "--qemu-version", "QEMU emulator version 11.0.0"]);
    assert_code(&o, 0, &["compare: note (qemu differs): baseline made with", "qemu='10.0.2'", "qemu='11.0.0'", "736 within tolerance"]);
    // The version can come from the environment (set by a runner).
    let o = bin().args(["compare", &fixture("qemu-icount-real.log"), "--baseline", &b]).env("CS_QEMU_VERSION", "9.2.0").output().unwrap();
    assert_code(&o, 0, &["qemu='9.2.0'"]);
}

#[test]
fn write_baseline_records_run_parameters_and_old_baselines_still_load() {
    let t = Scratch::new("write_baseline_records_run_parameters_and_old_baselines_still_load");
    let b = t.path("b.json");
    let o = bin()
        .args(["compare", &fixture("qemu-icount-real.log"), "-b", b.to_str().unwrap(), "-w", "-t", "0"])
        .env("CS_QEMU_VERSION", "QEMU emulator version 10.0.2")
        .output()
        .unwrap();
    assert_code(
        &o,
        0,
        &["wrote 736 metrics", "run: args='' timer=cntvct cpu=Cortex-A72 machine=qemu-virt emulated=true el=1 qemu='10.0.2'"],
    );
    let written = std::fs::read_to_string(&b).unwrap();
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        v["run"],
        serde_json::json!({"args": "", "cpu": "Cortex-A72", "machine": "qemu-virt", "entry_el": 1, "emulated": true, "qemu": "10.0.2", "timer": "cntvct"})
    );
    // Without the run line (a baseline from before): loads, compares, no explanation.
    let old = t.path("old.json");
    std::fs::write(&old, written.lines().filter(|l| !l.contains("\"run\"")).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let o = run(&["compare", &fixture("qemu-icount-real.log"), "-b", old.to_str().unwrap()]);
    assert_code(&o, 0, &["736 within tolerance"]);
    assert!(!text(&o).contains("differently"));
    let o = run(&["compare", &fixture("qemu-real.log"), "-b", old.to_str().unwrap()]);
    assert_code(&o, 1, &["CHANGED    latency/"]);
}

#[test]
fn byte_order_mark_is_skipped() {
    let t = Scratch::new("byte_order_mark_is_skipped");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(std::fs::read(fixture("qemu-real.log")).unwrap());
    let p = t.path("bom.log");
    std::fs::write(&p, &bytes).unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    assert_code(&o, 0, &["ok: KTAP v1, 4 top-level results, 31 leaf results (28 passed, 0 failed, 3 skipped)"]);
    // On stdin too, and for every command that loads a log.
    let mut child = bin().args(["check", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    assert_code(&child.wait_with_output().unwrap(), 0, &["<stdin>: ok: KTAP v1"]);
    assert_code(&run(&["junit", p.to_str().unwrap(), "-o", "-"]), 0, &["tests=\"31\""]);
}

#[test]
fn capture_lists_ports_and_declares_one_timeout_default() {
    assert_code(&run(&["capture", "--list"]), 0, &[]);
    assert_code(&run(&["capture", "-l", "/dev/null"]), 2, &["cannot be used with"]);
    assert_code(&run(&["capture", "/dev/null"]), 2, &["--out <LOG>"]);
    let help = text(&run(&["capture", "--help"]));
    assert!(help.contains("[default: 600]"), "{help}");
    // README and scripts/capture-serial do not restate it.
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    assert!(!readme.contains("--timeout 120"), "README restates another capture timeout");
    let script = std::fs::read_to_string(repo_file("scripts/capture-serial")).unwrap();
    assert!(!script.contains("tmo=600") && !script.contains("tmo=120"), "capture-serial declares its own timeout default");
}

#[test]
fn console_filters_a_stream_and_saves_it_whole() {
    use std::io::Write as _;
    let t = Scratch::new("console_filters_a_stream_and_saves_it_whole");
    let save = t.path("run.log");
    let input: &[u8] = b"KTAP version 1\r\n  # cs: {\"record\":\"boot\"}\r\n  # progress: 3/9\n  ok 1 x \xff\n";
    for (verbose_env, shows_records) in [(None, false), (Some("1"), true)] {
        let mut cmd = bin();
        cmd.args(["console", "--save", save.to_str().unwrap()]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.env_remove("CS_VERBOSE");
        if let Some(v) = verbose_env {
            cmd.env("CS_VERBOSE", v);
        }
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(std::fs::read(&save).unwrap(), input, "saved unchanged");
        let shown = o.stdout;
        assert_eq!(shown.windows(5).any(|w| w == b"# cs:"), shows_records);
        // stdout is a pipe here, not a terminal: progress lines are dropped.
        assert!(!shown.windows(11).any(|w| w == b"# progress:"));
        assert!(shown.ends_with(b"  ok 1 x \xff\n"));
    }
}

#[test]
fn summary_and_infer_on_real_logs() {
    let o = run(&["summary", &fixture("qemu-real.log")]);
    assert_code(
        &o,
        0,
        &[
            "== cachescope digest:",
            "(complete)",
            "DIFFERS (silicon 32 KiB 2-way 64 B)",
            "model    not observed (QEMU_CACHE_MODEL=off)",
            "results  28 passed",
        ],
    );
    assert!(String::from_utf8_lossy(&o.stdout).lines().count() <= 25);
    let o = run(&["summary", &fixture("qemu-icount-real.log"), "--icount"]);
    assert_code(&o, 0, &["-icount: instructions, not time"]);
    // A run cut short is digested, not refused.
    let t = Scratch::new("summary_and_infer_on_real_logs");
    let cut = t.path("cut.log");
    let full = std::fs::read_to_string(fixture("qemu-real.log")).unwrap();
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    assert_code(&run(&["summary", cut.to_str().unwrap()]), 0, &["INCOMPLETE", "before it stopped"]);
    let o = run(&["infer", &fixture("qemu-real.log"), "--model", &fixture("qemu-real.log")]);
    assert_code(&o, 2, &["no cache-model records"]);
}

/// What is not a cachescope log: an empty file, random bytes, NUL-only input.
fn not_logs(t: &Scratch) -> Vec<(String, &'static str)> {
    let empty = t.path("empty.log");
    std::fs::write(&empty, b"").unwrap();
    let random = t.path("random.log");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&random, bytes).unwrap();
    let nul = t.path("nul.log");
    std::fs::write(&nul, vec![0u8; 8192]).unwrap();
    vec![
        (empty.display().to_string(), "empty input: not a cachescope log"),
        (random.display().to_string(), "not a cachescope log: binary data"),
        (nul.display().to_string(), "not a cachescope log: NUL bytes only"),
    ]
}

#[test]
fn input_that_is_not_a_cachescope_log_is_refused_by_every_reader() {
    let t = Scratch::new("input_that_is_not_a_cachescope_log_is_refused_by_every_reader");
    for (path, why) in not_logs(&t) {
        let out_html = t.path("r.html");
        let out_json = t.path("r.json");
        let out_xml = t.path("r.xml");
        for args in [
            vec!["report", &path, "-o", out_html.to_str().unwrap()],
            vec!["extract", &path, "--json", out_json.to_str().unwrap()],
            vec!["summary", &path],
            vec!["junit", &path, "-o", out_xml.to_str().unwrap()],
        ] {
            let o = run(&args);
            assert_code(&o, 2, &[why, &path]);
            // One line naming why, and nothing written.
            assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1, "{}: {}", args[0], text(&o));
            assert!(o.stdout.is_empty(), "{}: {}", args[0], text(&o));
        }
        assert!(!out_html.exists() && !out_json.exists() && !out_xml.exists(), "{path}: an output was written");
    }
    // A cache-model log in the run log's place is named as such; extract takes it.
    let o = run(&["summary", &fixture("mistakes-model.model")]);
    assert_code(&o, 2, &["only the cache model's records", "with --model"]);
    assert_code(&run(&["extract", &fixture("mistakes-model.model"), "--json", "-"]), 0, &["\"record\":\"model-run\""]);
}

/// Flips `n` bits of `bytes` at positions from a fixed pseudo-random sequence, never in a
/// line ending (so the damage stays inside lines, as a bad cable's would).
fn flip_bits(bytes: &mut [u8], n: usize, seed: u64) {
    let mut x = seed;
    let mut done = 0;
    while done < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x >> 8) as usize % bytes.len();
        let bit = 1u8 << (x % 7); // bits 0..6: ASCII stays ASCII
        if bytes[at] == b'\n' || bytes[at] ^ bit == b'\n' || bytes[at] ^ bit == b'\r' {
            continue;
        }
        bytes[at] ^= bit;
        done += 1;
    }
}

#[test]
fn a_damaged_or_truncated_model_log_is_flagged_and_draws_no_hazard_conclusion() {
    let t = Scratch::new("a_damaged_or_truncated_model_log_is_flagged_and_draws_no_hazard_conclusion");
    let log = fixture("mistakes-model.log");
    let good = std::fs::read(fixture("mistakes-model.model")).unwrap();
    // The intact pair: as declared, no flag.
    let o = run(&["summary", &log, "--model", &fixture("mistakes-model.model")]);
    assert_code(&o, 0, &["hazards  (model sanitizer) as declared"]);
    let o = run(&["verdict", &log, "--model", &fixture("mistakes-model.model")]);
    assert_code(&o, 0, &["\"record\":\"sanitizer-verdict\",\"verdict\":\"as-declared\""]);
    assert!(!text(&o).contains("fails validation"), "{}", text(&o));
    // 200 flipped bits, several seeds; and the log cut before its closing records.
    let mut damaged: Vec<(String, Vec<u8>)> = (1..=5u64)
        .map(|seed| {
            let mut b = good.clone();
            flip_bits(&mut b, 200, seed * 0x2545_f491_4f6c_dd1d);
            (format!("flipped-{seed}.model"), b)
        })
        .collect();
    let cut = good.len() - good.iter().rev().skip(1).position(|&c| c == b'\n').unwrap() - 1;
    damaged.push(("no-model-run.model".into(), good[..cut].to_vec()));
    let total = std::str::from_utf8(&good).unwrap().find("{\"record\":\"hazard-total\"").unwrap();
    let line_start = good[..total].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    damaged.push(("no-hazard-total.model".into(), good[..line_start].to_vec()));
    for (name, bytes) in damaged {
        let m = t.path(&name);
        std::fs::write(&m, &bytes).unwrap();
        let m = m.display().to_string();
        let o = run(&["summary", &log, "--model", &m]);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert_code(&o, 0, &["model-log INVALID: the model log fails validation, no hazard conclusions drawn from it", "warning:"]);
        assert!(!out.lines().any(|l| l.starts_with("hazards")), "{name}: a hazard conclusion from a damaged log:\n{out}");
        assert!(out.lines().count() <= 25, "{name}: {out}");
        // The runner's verdict: a damaged model log can never pass.
        let o = run(&["verdict", &log, "--model", &m]);
        assert_code(
            &o,
            1,
            &["# sanitizer: not ok (outside any phase): INVALID: the model log fails validation", "\"verdict\":\"missing\""],
        );
        let html = t.path("r.html");
        let o = run(&["report", &log, "--model", &m, "-o", html.to_str().unwrap()]);
        assert_code(&o, 0, &["fails validation"]);
        let h = std::fs::read_to_string(&html).unwrap();
        let san = &h[h.find("<h2 id=\"sanitizer\"").unwrap()..h.find("<h2 id=\"attribute-matrix\"").unwrap()];
        assert!(san.contains("Not judged here") && !san.contains("found in declared phases") && !san.contains("NOT OK"), "{name}: {san}");
    }
}

#[test]
fn report_finds_the_model_log_and_icount_by_itself() {
    let t = Scratch::new("report_finds_the_model_log_and_icount_by_itself");
    // As qemu-run saves them: LOG and LOG.model.
    let log = t.path("run.log");
    std::fs::copy(fixture("mistakes-model.log"), &log).unwrap();
    std::fs::copy(fixture("mistakes-model.model"), t.path("run.log.model")).unwrap();
    let html = t.path("r.html");
    let o = run(&["report", log.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert_code(&o, 0, &["the cache model's records from", "run.log.model"]);
    let h = std::fs::read_to_string(&html).unwrap();
    for needle in [
        "<h2 id=\"findings\">",
        "<td>hazards</td><td>(model sanitizer) as declared",
        "<td>-icount</td><td>yes (the runner adds it with the cache model)",
        "Verdict: <strong>as declared",
        "<td>mistakes/stride-gap</td><td>mistakes.stride-gap</td>",
    ] {
        assert!(h.contains(needle), "{needle} not in the report");
    }
    // Flags override: without the model log and without -icount.
    let o = run(&["report", log.to_str().unwrap(), "--no-model", "--no-icount", "-o", html.to_str().unwrap()]);
    assert_code(&o, 0, &["figures)"]);
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<td>-icount</td><td>no (--no-icount)") && h.contains("No cache-model log"), "overrides");
    // The model figures come first, the emulator's in the appendix, labelled as instruction counts.
    let log = t.path("lat.log");
    std::fs::copy(fixture("latency-mistakes-model.log"), &log).unwrap();
    std::fs::copy(fixture("latency-mistakes-model.log.model"), t.path("lat.log.model")).unwrap();
    let md = t.path("lat.md");
    assert_code(&run(&["report", log.to_str().unwrap(), "-o", md.to_str().unwrap()]), 0, &["(3 figures)"]);
    let m = std::fs::read_to_string(&md).unwrap();
    let at = |n: &str| m.find(n).unwrap_or_else(|| panic!("no {n:?} in\n{m}"));
    assert!(at("](lat.figures/fig01-model-missrate-normal-wb.svg)") < at("## Sanitizer"));
    assert!(at("## Sanitizer") < at("## Appendix: emulator timing figures (instruction counts"));
    assert!(at("<details><summary>1 figure: instruction counts") < at("](lat.figures/fig03-latency-cntvct.svg)"));
    let svg = std::fs::read_to_string(t.path("lat.figures/fig03-latency-cntvct.svg")).unwrap();
    assert!(svg.contains("instruction counts"), "{svg}");
    // A catalogue row's NAME.log and NAME.model are found too.
    let o = run(&["report", &fixture("mistakes-model.log"), "-o", html.to_str().unwrap()]);
    assert_code(&o, 0, &["mistakes-model.model"]);
}

/// compare-model on a synthetic board log made from an emulator log and its model log
/// (profile rpi5): every event the model predicts matches exactly, except the two scaled ones,
/// whose error is exactly 1/factor - 1; the table and the figure name the counts synthetic.
#[test]
fn compare_model_reads_a_synthetic_board_log() {
    let t = Scratch::new("compare-model");
    let (log, model) = (fixture("bench-rpi5-model.log"), fixture("bench-rpi5-model.log.model"));
    let board = t.path("board.log").display().to_string();
    let o = run(&["synth-board-log", &log, &model, "--scale", "L1D_CACHE_REFILL=2", "--scale", "L2D_CACHE=4", "-o", &board]);
    assert_code(&o, 0, &[]);
    let text_of = std::fs::read_to_string(&board).unwrap();
    // One synthetic pmu record per metric; the emulator's own pmu records are gone.
    let metrics = text_of.matches("\"record\":\"metric\"").count();
    assert!(metrics >= 10, "{metrics} metrics");
    assert_eq!(text_of.matches("\"record\":\"pmu\"").count(), metrics);
    assert_eq!(text_of.matches("\"source\":\"synthetic\"").count(), metrics);
    assert_code(&run(&["check", &board]), 0, &["ok: KTAP v1"]);
    let svg = t.path("cmp.svg").display().to_string();
    let o = run(&["compare-model", &board, &model, "--svg", &svg]);
    assert_code(&o, 0, &["SYNTHETIC", "profile `rpi5`", "stream/read-ldp/normal-wb/2097152/prefetch_distance=0"]);
    let out = text(&o);
    let row = |phase: &str, event: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(phase) && l.split_whitespace().nth(1) == Some(event))
            .unwrap_or_else(|| panic!("no row {phase} {event} in:\n{out}"))
            .to_string()
    };
    let phase = "stream/read-ldp/normal-wb/2097152/prefetch_distance=0";
    assert!(row(phase, "L1D_CACHE_REFILL").ends_with("-50.0%"), "{}", row(phase, "L1D_CACHE_REFILL"));
    assert!(row(phase, "L2D_CACHE").ends_with("-75.0%"), "{}", row(phase, "L2D_CACHE"));
    for e in ["L1D_CACHE", "L1D_CACHE_WB", "L2D_CACHE_REFILL", "MEM_ACCESS", "CPU_CYCLES"] {
        assert!(row(phase, e).ends_with("+0.0%"), "{}", row(phase, e));
    }
    assert!(out.contains("L1D_CACHE_REFILL    50.0% over"), "{out}");
    let fig = std::fs::read_to_string(&svg).unwrap();
    assert!(fig.starts_with("<svg") && fig.ends_with("</svg>") && fig.contains("L1D_CACHE_REFILL") && fig.contains("not silicon"), "{fig}");
    // The board is a Pi 4 but the model log is the rpi5 profile's: refused.
    let pi4 = t.path("pi4.log");
    std::fs::write(&pi4, text_of.replace("\"board\":\"qemu-virt\"", "\"board\":\"rpi4\"")).unwrap();
    assert_code(&run(&["compare-model", &pi4.display().to_string(), &model]), 2, &["profile `rpi5`", "QEMU_CACHE_MODEL=rpi4"]);
    // A board log without pmu records (made before them) is refused with the reason.
    assert_code(&run(&["compare-model", &fixture("latency-mistakes-model.log"), &model]), 2, &["no pmu records"]);
    // A bad --scale names the problem.
    assert_code(&run(&["synth-board-log", &log, &model, "--scale", "L9_CACHE=2"]), 2, &["not an event of the catalogue"]);
    assert_code(&run(&["synth-board-log", &log, &model, "--scale", "L1D_CACHE=-1"]), 2, &["positive number"]);
}
