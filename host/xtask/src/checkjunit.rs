//! `check-junit [--setup] [LOG…]`: the report tool's JUnit output (`scripts/report junit`) read
//! back by two independent consumers from PyPI, junitparser and xunitparser
//! (scripts/lib/junit_read.py, in a venv): for every log, the tests, failures, skipped and errors
//! each counts must equal the KTAP leaf counts `scripts/report check` finds, with the runner's
//! sanitizer verdict folded in (its failed phases fail cases); a log with line arrival times
//! (LOG.times) must give a `time` to every case and suite, a log without them none.
//! scripts/check-junit execs it; its header says the rest.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::run::say;

/// The consumers, pinned.
pub const CONSUMERS: [&str; 2] = ["junitparser==5.0.3", "xunitparser==1.3.4"];

/// Why the check could not run: exit 2 (the message is already on stderr).
pub struct SetupFailed;

/// The venv: CS_JUNIT_VENV, else XDG_CACHE_HOME (else ~/.cache)/cachescope/venv-junitparser.
fn venv() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(v) = var("CS_JUNIT_VENV") {
        return PathBuf::from(v);
    }
    let cache = var("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(var("HOME").unwrap_or_default()).join(".cache"));
    cache.join("cachescope/venv-junitparser")
}

/// Makes the venv with both consumers unless it has them.
fn setup(venv: &Path) -> Result<(), SetupFailed> {
    let py = venv.join("bin/python");
    let quiet = |c: &mut Command| c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if quiet(Command::new(&py).args(["-c", "import junitparser, xunitparser"])) {
        return Ok(());
    }
    let _ = fs::create_dir_all(venv.parent().unwrap_or(Path::new(".")));
    if !crate::qemu::is_executable(&py) && !quiet(Command::new("python3").args(["-m", "venv"]).arg(venv)) {
        eprintln!("check-junit: 'python3 -m venv {}' failed (Debian/Ubuntu: apt-get install python3-venv)", venv.display());
        return Err(SetupFailed);
    }
    // pip's own output goes to stderr.
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(CONSUMERS)
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("check-junit: pip install {} failed", CONSUMERS.join(" "));
        return Err(SetupFailed);
    }
    Ok(())
}

/// The KTAP leaf counts of `report check`'s last line (`N passed, M failed, K skipped`).
pub fn check_counts(summary: &str) -> Option<(u64, u64, u64)> {
    let re = regex::Regex::new(r"([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped").ok()?;
    let c = re.captures(summary)?;
    Some((c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?))
}

/// What JUnit must count for a log with these KTAP counts: tests, failures, skipped, errors. The
/// runner's sanitizer verdict (records after the end record) fails cases: the (passing) case that
/// declared a failed phase, and one case per failed phase no case declared (plus one for phases
/// not recorded one by one).
pub fn wanted(log: &str, (kp, kf, ks): (u64, u64, u64)) -> String {
    let cased_re = regex::Regex::new(r#""record":"sanitizer-finding",.*"case":"[^"]"#).expect("a regular expression");
    let loose_re = regex::Regex::new(r#""record":"sanitizer-finding",.*"case":"","#).expect("a regular expression");
    let phases_re = regex::Regex::new(r#"^.*"record":"sanitizer-verdict",.*"failed_phases":([0-9]*),.*$"#).expect("a regular expression");
    let cased = log.lines().filter(|l| cased_re.is_match(l)).count() as u64;
    let loose = log.lines().filter(|l| loose_re.is_match(l)).count() as u64;
    let phases: u64 = log.lines().filter_map(|l| phases_re.captures(l)).next_back().and_then(|c| c[1].parse().ok()).unwrap_or(0);
    let more = u64::from(phases > cased + loose);
    format!("{} {} {ks} 0", kp + kf + ks + loose + more, kf + cased + loose + more)
}

/// `report check LOG`'s last line (stderr: `with_stderr`).
fn last_line(tool: &Path, args: &[&std::ffi::OsStr], with_stderr: bool) -> String {
    let mut c = Command::new(tool);
    c.args(args).stdin(Stdio::null());
    let out = c.output();
    let text = out.map(|o| if with_stderr { [o.stdout, o.stderr].concat() } else { o.stdout }).unwrap_or_default();
    String::from_utf8_lossy(&text).lines().last().unwrap_or("").to_string()
}

/// One reader line: PATH CONSUMER T F S E TIMES… (the last field keeps the rest of the line).
fn fields(line: &str) -> [String; 7] {
    let mut out: [String; 7] = Default::default();
    let mut rest = line.trim_start();
    for slot in out.iter_mut().take(6) {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        *slot = rest[..end].to_string();
        rest = rest[end..].trim_start();
    }
    out[6] = rest.trim_end().to_string();
    out
}

/// Runs the check; Ok(true) when every count is equal.
pub fn check_junit(root: &Path, host_bin: &Path, setup_only: bool, given: &[PathBuf]) -> Result<bool, SetupFailed> {
    let venv = venv();
    let py = venv.join("bin/python");
    if setup_only {
        setup(&venv)?;
        let versions = Command::new(&py)
            .args([
                "-c",
                "import importlib.metadata as m; print(*(f\"{p} {m.version(p)}\" for p in (\"junitparser\", \"xunitparser\")), sep=\", \")",
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_string())
            .unwrap_or_default();
        say(&format!("check-junit: {versions} in {}", venv.display()));
        return Ok(true);
    }
    setup(&venv)?;
    let built = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "--release", "--manifest-path"])
        .arg(root.join("host/Cargo.toml"))
        .args(["--target", "host-tuple", "-p", "cachescope-report"])
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return Err(SetupFailed);
    }
    let tool = host_bin.join("cachescope-report");
    let explicit = !given.is_empty();
    let logs: Vec<PathBuf> = if explicit {
        given.to_vec()
    } else {
        let fx = root.join("host/report/tests/fixtures");
        let mut l: Vec<PathBuf> = ["qemu-real.log", "qemu-icount-real.log", "qemu-failing.log", "bench-qemu.log", "bench-pi5.log"]
            .iter()
            .map(|f| fx.join(f))
            .collect();
        let mut found: Vec<PathBuf> = fs::read_dir(root.join("target/cachescope-logs"))
            .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "log")).collect())
            .unwrap_or_default();
        // The shell's glob order (C collation: bytes).
        found.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
        l.extend(found);
        l
    };
    let work = std::env::temp_dir().join(format!("cachescope-junit-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| {
        eprintln!("check-junit: {}: {e}", work.display());
        SetupFailed
    })?;
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Cleanup(work.clone());
    let prefix = format!("{}/", root.display());
    let (mut fail, mut n, mut left) = (false, 0usize, 0usize);
    // XML path → (name, wanted counts, wanted times), in order.
    let mut want: BTreeMap<String, (String, String, &str)> = BTreeMap::new();
    let mut xmls: Vec<String> = Vec::new();
    for log in &logs {
        let shown = log.display().to_string();
        let name = shown.strip_prefix(&prefix).unwrap_or(&shown).to_string();
        let Some(counts) = check_counts(&last_line(&tool, &["check".as_ref(), log.as_os_str()], false)) else {
            if explicit {
                let why = last_line(&tool, &["check".as_ref(), log.as_os_str()], true);
                say(&format!("not ok - {name}: not a complete, valid KTAP log ({why})"));
                fail = true;
            } else {
                left += 1;
            }
            continue;
        };
        let xml = work.join(format!("{n}.xml")).display().to_string();
        n += 1;
        let junit = Command::new(&tool).args(["-q", "junit"]).arg(log).args(["-o", &xml]).stdin(Stdio::null()).status();
        if !junit.is_ok_and(|s| s.success()) {
            say(&format!("not ok - {name}: scripts/report junit failed"));
            fail = true;
            continue;
        }
        let text = String::from_utf8_lossy(&fs::read(log).unwrap_or_default()).into_owned();
        let times = if PathBuf::from(format!("{shown}.times")).is_file() { "all" } else { "none" };
        want.insert(xml.clone(), (name, wanted(&text, counts), times));
        xmls.push(xml);
    }
    if !xmls.is_empty() {
        let err_path = work.join("py.err");
        let reader = root.join("scripts/lib/junit_read.py");
        let out = Command::new(&py)
            .arg(&reader)
            .args(&xmls)
            .stdin(Stdio::null())
            .stderr(fs::File::create(&err_path).map(Stdio::from).unwrap_or_else(|_| Stdio::null()))
            .output();
        let (ok, mut text) = match out {
            Ok(o) => (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned()),
            Err(_) => (false, String::new()),
        };
        if !ok {
            let err = fs::read_to_string(&err_path).unwrap_or_default();
            text += &format!("- python ERROR the readers failed: {}\n", err.lines().last().unwrap_or(""));
        }
        for line in text.lines() {
            let [xml, consumer, t, f, s, e, times] = fields(line);
            let (name, counts, want_times) = match want.get(&xml) {
                Some((name, counts, times)) => (name.as_str(), counts.as_str(), *times),
                None => (xml.as_str(), "?", ""),
            };
            if t == "ERROR" {
                say(&format!("not ok - {name}: {consumer} cannot read the XML: {f} {s} {e} {times}"));
                fail = true;
            } else if format!("{t} {f} {s} {e}") == counts && times == want_times {
                say(&format!("ok - {name}: {consumer} reads {t} tests, {f} failures, {s} skipped = KTAP; times: {times}"));
            } else {
                say(&format!("not ok - {name}: KTAP tests/failed/skipped/errors {counts}, times {want_times}; {consumer} reads {t}/{f}/{s}/{e}, times {times}"));
                fail = true;
            }
        }
    }
    if n == 0 && !fail {
        say("check-junit: no log to check");
        return Ok(false);
    }
    let left_out = if left > 0 { format!(", {left} incomplete logs left out") } else { String::new() };
    say(&format!("check-junit: {n} logs{left_out}: {}", if fail { "FAILED" } else { "all counts equal" }));
    Ok(!fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_the_check_summary() {
        assert_eq!(check_counts("# check: a.log: 12 passed, 1 failed, 3 skipped (ok)"), Some((12, 1, 3)));
        assert_eq!(check_counts("a.log: not KTAP"), None);
    }

    #[test]
    fn the_sanitizer_verdict_fails_cases() {
        let log = concat!(
            "# cs: {\"record\":\"sanitizer-finding\",\"phase\":\"p\",\"case\":\"c1\",\"x\":1}\n",
            "# cs: {\"record\":\"sanitizer-finding\",\"phase\":\"q\",\"case\":\"\",\"x\":1}\n",
            "# cs: {\"record\":\"sanitizer-verdict\",\"failed_phases\":1,\"ok\":false}\n",
            "# cs: {\"record\":\"sanitizer-verdict\",\"failed_phases\":4,\"ok\":false}\n",
        );
        // 1 cased + 1 loose, 4 failed phases (the last verdict) > 2: one more.
        assert_eq!(wanted(log, (10, 1, 2)), "15 4 2 0");
        assert_eq!(wanted("", (10, 1, 2)), "13 1 2 0");
    }

    #[test]
    fn reader_lines_split_like_read() {
        assert_eq!(fields("/w/0.xml junitparser 5 1 0 0 all"), ["/w/0.xml", "junitparser", "5", "1", "0", "0", "all"].map(String::from));
        let f = fields("- python ERROR the readers failed: ModuleNotFoundError: x y");
        assert_eq!((f[2].as_str(), f[6].as_str()), ("ERROR", "ModuleNotFoundError: x y"));
    }
}
