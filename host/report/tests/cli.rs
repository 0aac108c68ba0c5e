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
    for needle in [
        "knee 1 MiB (normal-wb +3)",
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
    assert_code(&run(&["compare", &fixture("bench-qemu.log")]), 2, &["the following required arguments were not provided", "--baseline <BASELINE.json>"]);
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "--baseline", "x.json", "--tolerance", "lots"]), 2, &["--tolerance 'lots'"]);
    assert_code(&run(&["compare", &fixture("bench-qemu.log"), "--baseline", "x.json", "--tolerance", "-1%"]), 2, &["--tolerance '-1%'"]);
    assert_code(&run(&["extract", &fixture("bench-qemu.log"), "--jsn", "x"]), 2, &["unexpected argument '--jsn'", "a similar argument exists: '--json'"]);
    assert_code(&run(&["extract", &fixture("bench-qemu.log")]), 2, &["the following required arguments were not provided", "--json <OUT>|--csv <DIR>"]);
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
        .starts_with("line,record,bench,variant,attr,bytes,reps,min,median,max,mad,unit,source,emulated,line,phase"));
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
    for needle in [
        "This run is emulated",
        "EMULATED (QEMU): these figures measure the emulator, not caches",
        "Latency vs working set: L1D misses/access [model]",
        "L1D 32 KiB (CCSIDR)",
        "L2 1 MiB (CCSIDR)",
        "L1 accesses=4096 misses=0 bypassed=0; L2 accesses=0 misses=0 bypassed=0",
    ] {
        assert!(m.contains(needle), "{needle} not in the Markdown report");
    }
    assert_eq!(std::fs::read_dir(&svgs).unwrap().count(), 7);
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
