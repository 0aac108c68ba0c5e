//! `lava-local`: LAVA without a lab (scripts/lava-local execs it; its header is the usage): the
//! generated jobs validated by lava_common's strict schemas (scripts/lib/lava_validate.py), and
//! a real lava-run of the QEMU job on this machine checked by `lava-check`; `--install` unpacks
//! lava-dispatcher (apt-get download + dpkg -x) under the cache folder. The jobs, the device
//! dictionary and the check are this program's own functions, called in-process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Debian's python: lava_common and its dependencies are Debian packages.
const PY: &str = "/usr/bin/python3";
/// The kernel arguments of a run when none are given: pass, skip and one deliberate failure.
pub const DEFAULT_ARGS: &str = "only=boot,selftest";
/// The selftest case that must fail under the default arguments.
pub const DEFAULT_MUST_FAIL: &str = "unexpected-data-abort";
/// The modules lava_common and lava-run import.
const PY_DEPS: [&str; 13] = [
    "lava_common",
    "yaml",
    "voluptuous",
    "aiohttp",
    "configobj",
    "jinja2",
    "magic",
    "netifaces",
    "pexpect",
    "pyudev",
    "requests",
    "setproctitle",
    "pytz",
];
/// Their Debian packages.
const APT_DEPS: [&str; 13] = [
    "lava-common",
    "python3-yaml",
    "python3-voluptuous",
    "python3-aiohttp",
    "python3-configobj",
    "python3-jinja2",
    "python3-magic",
    "python3-netifaces",
    "python3-pexpect",
    "python3-pyudev",
    "python3-requests",
    "python3-setproctitle",
    "python3-tz",
];
/// Seconds lava-run may take.
const LAVA_RUN_TIMEOUT: &str = "300";

/// What to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A lava-run of the QEMU job.
    Run,
    /// Validate every board's job and the device dictionary.
    Validate,
    /// Only install.
    Install,
}

/// The options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// What to do.
    pub mode: Mode,
    /// Kernel arguments.
    pub args: String,
    /// The kernel ELF (default: the debug main job).
    pub elf: Option<PathBuf>,
    /// Keep the run's folder here.
    pub keep: Option<PathBuf>,
    /// Cases that must be in LAVA's results as fail.
    pub must_fail: Vec<String>,
}

/// Why lava-local stopped: exit status and its line (`lava-local: …` on stderr), if any.
#[derive(Debug, PartialEq, Eq)]
pub struct Stop(pub u8, pub Option<String>);

fn die(m: impl Into<String>) -> Stop {
    Stop(2, Some(m.into()))
}

fn say(m: &str) {
    eprintln!("lava-local: {m}");
}

/// The command line: `None` is a request for the usage (`-h`/`--help`).
pub fn parse(argv: &[String]) -> Result<Option<Options>, Stop> {
    let mut o = Options { mode: Mode::Run, args: DEFAULT_ARGS.into(), elf: None, keep: None, must_fail: Vec::new() };
    let mut args_given = false;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str, allow_empty: bool| match it.next() {
            Some(v) if allow_empty || !v.is_empty() => Ok(v.clone()),
            _ => Err(die(format!("{a} needs {what}"))),
        };
        match a.as_str() {
            "--validate" => o.mode = Mode::Validate,
            "--install" => o.mode = Mode::Install,
            "--args" => {
                o.args = value("a value", true)?;
                args_given = true;
            }
            "--elf" => o.elf = Some(value("a file", false)?.into()),
            "--must-fail" => o.must_fail.push(value("a case name", false)?),
            "--keep" => o.keep = Some(value("a directory", false)?.into()),
            "-h" | "--help" => return Ok(None),
            other => return Err(die(format!("unknown argument '{other}' (see --help)"))),
        }
    }
    if !args_given && o.must_fail.is_empty() {
        o.must_fail.push(DEFAULT_MUST_FAIL.into());
    }
    Ok(Some(o))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn py_ok() -> bool {
    let import = format!("import {}", PY_DEPS.join(", "));
    Command::new(PY)
        .args(["-c", &import])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn on_path(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| crate::qemu::is_executable(&d.join(name)))
}

/// A command, under sudo unless this process is root.
fn maybe_sudo(program: &str) -> Command {
    if is_root() {
        Command::new(program)
    } else {
        let mut c = Command::new("sudo");
        c.arg(program);
        c
    }
}

fn succeeds(c: &mut Command) -> bool {
    c.stdin(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The cache folder: CS_CACHE, else XDG_CACHE_HOME (else ~/.cache)/cachescope; then /lava.
fn cache() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("CS_CACHE")
        .unwrap_or_else(|| var("XDG_CACHE_HOME").unwrap_or_else(|| var("HOME").unwrap_or_default().join(".cache")).join("cachescope"))
        .join("lava")
}

/// lava-common and lava-run's Python dependencies (apt, no recommends: python3-guestfs would
/// pull an old qemu-system-x86), and lava-dispatcher + lava-dispatcher-host of the same version
/// unpacked under the cache, with a stub `guestfs` module. Returns the unpacked folder.
fn install() -> Result<PathBuf, Stop> {
    if !py_ok() {
        if !on_path("apt-get") {
            return Err(die(format!("lava-common needs Debian's packages (apt-get not found): install {} by hand", APT_DEPS.join(" "))));
        }
        say(&format!("installing {} (no recommends)", APT_DEPS.join(" ")));
        let apt_install = || {
            let mut c = maybe_sudo("apt-get");
            c.env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .args(APT_DEPS)
                .stdout(Stdio::null());
            succeeds(&mut c)
        };
        let ok = apt_install() || (succeeds(maybe_sudo("apt-get").args(["update", "-qq"])) && apt_install());
        if !ok {
            return Err(die(format!("apt-get install {} failed", APT_DEPS.join(" "))));
        }
        if !py_ok() {
            return Err(die(format!("{PY} still cannot import: {}", PY_DEPS.join(" "))));
        }
    }
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "lava-common"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .ok_or_else(|| die("lava-common is not a dpkg-installed package"))?;
    let dispatcher = cache().join(&version);
    if !dispatcher.join("ok").is_file() {
        say(&format!("unpacking lava-dispatcher {version} into {}", dispatcher.display()));
        let _ = fs::remove_dir_all(&dispatcher);
        let (debs, stub) = (dispatcher.join("debs"), dispatcher.join("stub"));
        fs::create_dir_all(&debs).and_then(|_| fs::create_dir_all(&stub)).map_err(|e| die(format!("{}: {e}", dispatcher.display())))?;
        let user =
            Command::new("id").arg("-un").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        let fetch = || {
            Command::new("apt-get")
                .current_dir(&debs)
                .args(["download", "-qq", "-o", &format!("APT::Sandbox::User={user}")])
                .args([format!("lava-dispatcher={version}"), format!("lava-dispatcher-host={version}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !(fetch() || (succeeds(maybe_sudo("apt-get").args(["update", "-qq"])) && fetch())) {
            return Err(die(format!("apt-get download lava-dispatcher={version} lava-dispatcher-host={version} failed")));
        }
        let mut found: Vec<PathBuf> = fs::read_dir(&debs).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        found.sort();
        for deb in found.iter().filter(|p| p.extension().is_some_and(|x| x == "deb")) {
            if !succeeds(Command::new("dpkg").arg("-x").arg(deb).arg(dispatcher.join("root"))) {
                return Err(Stop(1, None));
            }
        }
        let _ = fs::remove_dir_all(&debs);
        let stub_text = "\"\"\"Stub: lava_dispatcher imports guestfs only for disk-image overlays (not used by cachescope jobs).\"\"\"\n";
        fs::write(stub.join("guestfs.py"), stub_text).map_err(|e| die(e.to_string()))?;
        fs::File::create(dispatcher.join("ok")).map_err(|e| die(e.to_string()))?;
    }
    Ok(dispatcher)
}

/// A scratch folder, removed when dropped (unless kept).
struct Work {
    path: PathBuf,
    remove: bool,
}

impl Drop for Work {
    fn drop(&mut self) {
        if self.remove {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

fn scratch(stem: &str) -> Result<Work, Stop> {
    let path = std::env::temp_dir().join(format!("{stem}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).map_err(|e| die(format!("{}: {e}", path.display())))?;
    Ok(Work { path, remove: true })
}

fn quiet(r: Result<Vec<PathBuf>, crate::Failure>) -> Result<(), Stop> {
    r.map(|_| ()).map_err(|f| match f {
        crate::Failure::Usage(m) => die(m),
        _ => Stop(1, None),
    })
}

fn ms(t0: Instant) -> u128 {
    t0.elapsed().as_millis()
}

/// Every board's job with the default and the given arguments, and the device dictionary,
/// through LAVA's own validators.
fn validate(root: &Path, boards: &[crate::boards::Board], o: &Options) -> Result<(), Stop> {
    if !py_ok() {
        return Err(die("lava_common is not installed: run scripts/bootstrap (or scripts/lava-local --install)"));
    }
    let t0 = Instant::now();
    let work = scratch("cachescope-lava-validate")?;
    let dir = &work.path;
    // A placeholder under the reserved .invalid domain: validation needs a URL, not a real one.
    let url = Some("https://artefacts.invalid/cachescope".to_string());
    quiet(crate::lava_jobs(boards, &[], String::new(), url.clone(), &dir.join("default")))?;
    quiet(crate::lava_jobs(boards, &[], o.args.clone(), url, &dir.join("args")))?;
    quiet(crate::lava_device(boards, "qemu-virt", &dir.join("device")))?;
    let yamls = |sub: &str| {
        let mut f: Vec<PathBuf> = fs::read_dir(dir.join(sub))
            .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "yaml")).collect())
            .unwrap_or_default();
        f.sort();
        f
    };
    let mut py = Command::new(PY);
    py.arg(root.join("scripts/lib/lava_validate.py"))
        .args(yamls("default"))
        .args(yamls("args"))
        .arg("--")
        .arg(dir.join("device/device.yaml"));
    if !succeeds(&mut py) {
        return Err(Stop(1, None));
    }
    say(&format!("validation took {} ms", ms(t0)));
    Ok(())
}

/// The QEMU job through lava-run, then lava-check on its log.
fn run(root: &Path, boards: &[crate::boards::Board], o: &Options) -> Result<(), Stop> {
    let dispatcher = install()?;
    if !is_root() {
        return Err(die("lava-run refuses to run unless root (it checks the effective uid); run as root, e.g. sudo -E scripts/lava-local"));
    }
    if !on_path("qemu-system-aarch64") {
        return Err(die("qemu-system-aarch64 missing: run scripts/bootstrap"));
    }
    let elf = match &o.elf {
        Some(e) => e.clone(),
        None => {
            if !succeeds(crate::run::cargo(root).args(["build", "--quiet", "--bin", "cachescope"])) {
                return Err(die("building the kernel failed"));
            }
            root.join("target/aarch64-unknown-none/debug/cachescope")
        }
    };
    if !elf.is_file() {
        return Err(die(format!("no such kernel ELF: {}", elf.display())));
    }
    let work = match &o.keep {
        Some(k) => {
            let _ = fs::remove_dir_all(k);
            fs::create_dir_all(k).map_err(|e| die(format!("{}: {e}", k.display())))?;
            Work { path: k.canonicalize().unwrap_or_else(|_| k.clone()), remove: false }
        }
        None => scratch("cachescope-lava-run")?,
    };
    let w = &work.path;
    let artefacts = w.join("artefacts/qemu-virt");
    fs::create_dir_all(&artefacts).map_err(|e| die(e.to_string()))?;
    fs::copy(&elf, artefacts.join("cachescope.elf")).map_err(|e| die(format!("{}: {e}", elf.display())))?;
    let board = vec!["qemu-virt".to_string()];
    quiet(crate::lava_jobs(boards, &board, o.args.clone(), Some(format!("file://{}/artefacts", w.display())), w))?;
    quiet(crate::lava_device(boards, "qemu-virt", w))?;
    let t0 = Instant::now();
    let log_path = w.join("lava-run.log");
    let log = fs::File::create(&log_path).map_err(|e| die(e.to_string()))?;
    let log_err = log.try_clone().map_err(|e| die(e.to_string()))?;
    let pythonpath = format!("{}:{}", dispatcher.join("root/usr/lib/python3/dist-packages").display(), dispatcher.join("stub").display());
    let st = Command::new("timeout")
        .args(["-k", "5", LAVA_RUN_TIMEOUT, PY])
        .arg(dispatcher.join("root/usr/bin/lava-run"))
        .args(["--job-id", &format!("cachescope-{}", std::process::id()), "--output-dir"])
        .arg(w.join("output"))
        .arg("--device")
        .arg(w.join("device.yaml"))
        .arg("--dispatcher")
        .arg(w.join("dispatcher.yaml"))
        .arg(w.join("qemu-virt.yaml"))
        .env("PYTHONPATH", pythonpath)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .status();
    let rc = st.map(|s| s.code().unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0))).unwrap_or(127);
    let kept = if o.keep.is_some() { format!("; log: {}", log_path.display()) } else { String::new() };
    say(&format!("lava-run exited {rc} after {} ms{kept}", ms(t0)));
    let text = String::from_utf8_lossy(&fs::read(&log_path).unwrap_or_default()).into_owned();
    if let Err(f) = crate::lava_check(&text, None, crate::lava::SUITE, &o.must_fail) {
        if let crate::Failure::Check(problems) = f {
            for p in &problems {
                eprintln!("lava-check: {p}");
            }
            eprintln!("lava-check: FAILED ({} problem(s))", problems.len());
        }
        if o.keep.is_none()
            && fs::create_dir_all(root.join("target")).is_ok()
            && fs::copy(&log_path, root.join("target/lava-run.log")).is_ok()
        {
            say("kept the log as target/lava-run.log");
        }
        return Err(Stop(1, None));
    }
    if rc != 0 {
        say(&format!("lava-run failed (status {rc}) although the results agree"));
        return Err(Stop(1, None));
    }
    Ok(())
}

/// Runs the mode.
pub fn lava_local(root: &Path, boards: &[crate::boards::Board], o: &Options) -> Result<(), Stop> {
    match o.mode {
        Mode::Install => install().map(|_| ()),
        Mode::Validate => validate(root, boards, o),
        Mode::Run => run(root, boards, o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn default_arguments_expect_the_deliberate_failure() {
        let o = parse(&[]).unwrap().unwrap();
        assert_eq!((o.mode, o.args.as_str(), o.must_fail.clone()), (Mode::Run, DEFAULT_ARGS, vec![DEFAULT_MUST_FAIL.to_string()]));
        // Own arguments: no case is assumed to fail.
        let o = parse(&args(&["--args", "only=boot", "--elf", "k"])).unwrap().unwrap();
        assert!(o.must_fail.is_empty());
        assert_eq!(o.elf, Some(PathBuf::from("k")));
        let o = parse(&args(&["--validate", "--must-fail", "x"])).unwrap().unwrap();
        assert_eq!((o.mode, o.must_fail), (Mode::Validate, vec!["x".to_string()]));
        assert_eq!(parse(&args(&["--keep", "d", "-h"])).unwrap(), None);
    }

    #[test]
    fn refusals() {
        assert_eq!(parse(&args(&["--bogus"])).unwrap_err(), die("unknown argument '--bogus' (see --help)"));
        assert_eq!(parse(&args(&["--elf"])).unwrap_err(), die("--elf needs a file"));
        assert_eq!(parse(&args(&["--elf", ""])).unwrap_err().0, 2);
        assert!(parse(&args(&["--args", ""])).is_ok(), "empty kernel arguments are arguments");
    }
}
