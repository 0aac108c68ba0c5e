//! `qemu-run`: cargo's runner for every kernel binary (`.cargo/config.toml` names
//! scripts/qemu-run, which execs `cachescope-xtask qemu-run`): boots a kernel under
//! qemu-system-aarch64. The catalogue runner ([`mod@crate::run`]) calls [`run`] directly for each row.
//!
//! ```text
//! cachescope-xtask qemu-run <kernel ELF> [kernel arguments…]
//! ```
//!
//! Environment (docs/running.md), each checked before QEMU starts (a bad value is refused with
//! `qemu-run: NAME='VALUE': …` and status 2; an empty value counts as unset unless said):
//!
//! - `QEMU_MACHINE` machine (default: the board's `qemu_machine` in boards.toml: virt for a
//!   qemu-virt build, raspi4b for an rpi4 build), e.g. `virt,secure=on`, `virt,virtualization=on`.
//! - `QEMU_CPU` CPU model (default: the board's `qemu_cpu`, else cortex-a72; raspi4b has its own
//!   fixed CPU).
//! - `QEMU_SMP` number of cores, 1 to 999 (default the board's `qemu_smp`: 2 on virt; raspi4b
//!   always 4).
//! - `QEMU_MEM` RAM such as 512M or 2G (default the board's `qemu_memory`; raspi4b is fixed at 2G).
//! - `QEMU_EXTRA` extra QEMU arguments, split at white space and appended (e.g. `-icount
//!   shift=0,align=off,sleep=off`); `-dtb FILE.dts` is compiled with dtc first (to target/dtb/).
//! - `QEMU_TIMEOUT` whole seconds ≥ 1 before QEMU is killed (default 120).
//! - `CS_LOG` the file the whole console stream (every record) is saved to (default
//!   `CS_RUNS/NAME-DATE-TIME-PID.log`, NAME the kernel's file name; the newest 20 complete runs
//!   are kept). Refused when it names a folder or cannot be created. `help` and a refused command
//!   line save nothing.
//! - `CS_RUNS` the folder of saved runs (default target/cachescope-logs/runs).
//! - `QEMU_CACHE_MODEL` off | on | rpi4 | rpi5 | dsu2x4 | key=value,… (default: the board's
//!   `qemu_cache_model`; set but empty: off): build host/cache-model and load it as a TCG plugin
//!   (host/cache-model/src/config.rs lists its arguments, checked by its own parser through
//!   cachescope-model-args), add `-icount shift=0,align=off,sleep=off` (not when QEMU_EXTRA has
//!   `-icount`) and tell the kernel the profile through semihosting's argv0
//!   (`cachescope+model=PROFILE`). Its records go to CS_MODEL_LOG, else `CS_LOG.model` (`out=FILE`
//!   in the value overrides). A plugin that cannot be built or loaded turns the model off for the
//!   run with one line.
//! - `CS_MODEL_LOG` file for the cache model's records (the catalogue sets it per row); checked as
//!   CS_LOG is (its folder writable, not a folder, creatable).
//! - `CS_MODEL_MARKERS` the plugin's `markers` argument (`all`, `declarations`: only the markers
//!   that declare the sanitizer's expectations, host/cache-model/src/config.rs), added to the
//!   model's words ([`with_markers`]) and checked with them by the plugin's parser; refused when
//!   the model is off.
//! - `CS_CONSOLE` human (default: `cachescope-report console`, then the digest and the saved
//!   log's path) or raw (the whole stream as the kernel prints it, model records after it).
//! - `CS_VERBOSE` 1: the human console shows the whole stream (read by the report tool); 0 or unset.
//! - `CS_NO_MATRIX` 1: run a test kernel (an ELF under …/deps/) once, not per catalogue row; 0 or unset.
//! - `CS_CACHE_MODEL_BUILT` 1: the caller built the plugin and the report tool (no cargo calls); 0 or unset.
//! - `CS_CACHE_MODEL_PLUGIN` the plugin's .so (default: host/target/TUPLE/release's).
//!
//! A test kernel (an ELF under target/…/deps/) run with neither QEMU_MACHINE nor QEMU_CPU set is
//! run once per matching row of tests/catalogue.toml ([`matrix_kernel`]: the caller runs the
//! catalogue). The board an ELF was built for is read from its `cachescope-board=NAME` tag; a
//! kernel runs only on a machine of its board. An image board (raspi4b) gets the raw image
//! (scripts/mkimage --raw) as its firmware loads it, plus the board's kernel arguments.
//!
//! Exit status ([`exit_status`]): the kernel's own (0 all passed, 1 a case failed, 2 refused
//! arguments, 101 panic), or the runner's: 1 the sanitizer's verdict failed a run the kernel
//! passed, 2 a bad environment variable or a kernel that cannot run on the machine asked for,
//! 4 QEMU is missing or refused to start, 124 timeout.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::boards::{Board, Qemu, QemuKernel};

/// The semihosting argv0 the runner writes (the kernel's `firmware::cmdline` reads it).
pub const ARGV0: &str = "cachescope";
/// What follows [`ARGV0`] when the cache model observes the run: `cachescope+model=PROFILE`.
pub const ARGV0_MODEL: &str = "+model=";
/// Whether QEMU arguments ask for multi-threaded TCG (`-accel tcg,…thread=multi…`).
pub fn mttcg(args: &[String]) -> bool {
    args.windows(2).any(|w| w[0] == "-accel" && w[1].split(',').any(|o| o == "thread=multi"))
}

/// The `-icount` the cache model's runs get (exactly reproducible).
pub const ICOUNT: [&str; 2] = ["-icount", "shift=0,align=off,sleep=off"];
/// Runs kept in the runs folder.
const KEEP_RUNS: &str = "20";

/// Environment as the runner sees it: `overlay` (later entries win) over the process's own.
/// Children (QEMU, the report tool, cargo) get the overlay too.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Variables set for this run, in order.
    pub overlay: Vec<(String, OsString)>,
}

impl Env {
    fn raw(&self, name: &str) -> Option<OsString> {
        match self.overlay.iter().rev().find(|(k, _)| k == name) {
            Some((_, v)) => Some(v.clone()),
            None => std::env::var_os(name),
        }
    }

    /// The value, `None` when unset; a value that is not UTF-8 is refused.
    fn get(&self, name: &str) -> Result<Option<String>, Stop> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) => v.into_string().map(Some).map_err(|v| usage(format!("{name}='{}' is not UTF-8", v.to_string_lossy()))),
        }
    }

    /// The value, `None` when unset or empty (the shell's `${NAME:-…}`).
    pub fn nonempty(&self, name: &str) -> Result<Option<String>, Stop> {
        Ok(self.get(name)?.filter(|v| !v.is_empty()))
    }

    /// A switch: unset, empty or `0` is off, `1` is on; anything else is refused.
    pub fn flag(&self, name: &str, meaning: &str) -> Result<bool, Stop> {
        match self.get(name)?.as_deref() {
            None | Some("") | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(v) => Err(usage(format!("{name}='{v}': 1 ({meaning}) or 0"))),
        }
    }

    /// Sets the overlay on a child command.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.envs(self.overlay.iter().map(|(k, v)| (k, v)));
    }
}

/// Why a run stopped before its end: the status and the runner's line (`qemu-run: …` on stderr).
#[derive(Debug, PartialEq, Eq)]
pub struct Stop {
    /// Exit status.
    pub status: u8,
    /// The message, without the `qemu-run: ` prefix (`None`: already said).
    pub message: Option<String>,
}

fn usage(message: impl Into<String>) -> Stop {
    Stop { status: 2, message: Some(message.into()) }
}

/// Where the runner's output goes: this process's stdout/stderr, or one file or pipe for both
/// (a catalogue row's log, `2>&1`).
#[derive(Debug)]
pub enum Io {
    /// The process's own stdout and stderr (a terminal stays a terminal for the report tool).
    Inherit,
    /// One file or pipe (`File::from(OwnedFd::from(pipe_writer))`) for stdout and stderr.
    Both(fs::File),
}

impl Io {
    fn stdio(&self) -> std::io::Result<Stdio> {
        match self {
            Io::Inherit => Ok(Stdio::inherit()),
            Io::Both(w) => Ok(Stdio::from(w.try_clone()?)),
        }
    }

    fn write(&self, err: bool, bytes: &[u8]) {
        match self {
            Io::Inherit if err => {
                let mut e = std::io::stderr().lock();
                let _ = e.write_all(bytes);
                let _ = e.flush();
            }
            Io::Inherit => {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(bytes);
                let _ = o.flush();
            }
            Io::Both(w) => {
                let mut f: &fs::File = w;
                let _ = f.write_all(bytes);
            }
        }
    }

    fn out(&self, line: &str) {
        self.write(false, format!("{line}\n").as_bytes());
    }

    fn err(&self, line: &str) {
        self.write(true, format!("{line}\n").as_bytes());
    }
}

/// What the runner needs besides the environment.
#[derive(Clone, Debug)]
pub struct Context {
    /// Repository root.
    pub root: PathBuf,
    /// boards.toml.
    pub boards: Vec<Board>,
    /// host/target/TUPLE/release: the report tool, the plugin, cachescope-model-args.
    pub host_bin: PathBuf,
}

impl Context {
    /// The context of the repository at `root`; the host tools' folder is found from this
    /// binary's own path (host/target/TUPLE/PROFILE/), else from `rustc --print host-tuple`.
    pub fn new(root: &Path, boards: Vec<Board>) -> Context {
        let target = root.join("host/target");
        let exe = std::env::current_exe().ok();
        let from_exe = exe.as_ref().and_then(|e| {
            let tuple_dir = e.parent()?.parent()?;
            (tuple_dir.parent()? == target.canonicalize().ok()?.as_path()).then(|| tuple_dir.join("release"))
        });
        let host_bin = from_exe.unwrap_or_else(|| {
            let tuple = Command::new("rustc")
                .args(["--print", "host-tuple"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_else(|| "unknown".into());
            target.join(tuple).join("release")
        });
        Context { root: root.to_path_buf(), boards, host_bin }
    }

    fn report(&self) -> PathBuf {
        self.host_bin.join("cachescope-report")
    }
}

/// A test kernel (an ELF under …/deps/) run with neither QEMU_MACHINE nor QEMU_CPU nor
/// CS_NO_MATRIX set runs once per catalogue row: its kernel name (the file name without cargo's
/// `-HASH`). `None`: run it once.
pub fn matrix_kernel(elf: &Path, env: &Env) -> Result<Option<String>, Stop> {
    let no_matrix = env.flag("CS_NO_MATRIX", "run a test kernel once, not per catalogue row")?;
    let deps = elf.as_os_str().as_bytes().windows(6).any(|w| w == b"/deps/");
    if !deps || no_matrix || env.nonempty("QEMU_MACHINE")?.is_some() || env.nonempty("QEMU_CPU")?.is_some() {
        return Ok(None);
    }
    let name = elf.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Some(match name.rfind('-') {
        Some(i) => name[..i].to_string(),
        None => name,
    }))
}

/// How the console is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Console {
    /// `cachescope-report console`, then the digest.
    Human,
    /// Every line as the kernel prints it.
    Raw,
}

/// The board facts and checked environment a run's QEMU command line is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `-M`.
    pub machine: String,
    /// `-cpu` and `-smp`, for machines that take them (the board has a `qemu_cpu`).
    pub cpu: Option<(String, u16)>,
    /// `-m`, for machines that take it (the board has a `qemu_memory`).
    pub memory: Option<String>,
    /// Seconds before QEMU is killed.
    pub timeout_s: u64,
    /// The console.
    pub console: Console,
    /// QEMU_EXTRA's words.
    pub extra: Vec<String>,
    /// The cache model's value (`off`: none).
    pub model: String,
    /// CS_CACHE_MODEL_BUILT.
    pub built: bool,
}

fn is_count(s: &str, max_digits: usize) -> bool {
    !s.is_empty() && s.len() <= max_digits && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0')
}

/// Every machine that emulates a board, with the board and its cargo feature.
fn machines(boards: &[Board]) -> Vec<(&str, &Board)> {
    boards.iter().filter_map(|b| b.qemu.as_ref().map(|q| (q.machine.as_str(), b))).collect()
}

/// Checks the environment against the kernel's board: QEMU_MACHINE (a machine of this board),
/// QEMU_CPU, QEMU_SMP, QEMU_MEM, QEMU_TIMEOUT, CS_CONSOLE, CS_VERBOSE, CS_CACHE_MODEL_BUILT,
/// QEMU_EXTRA, QEMU_CACHE_MODEL (its words are the plugin's to check). `elf` is for messages.
pub fn settings(env: &Env, board: &Board, qemu: &Qemu, boards: &[Board], elf: &Path) -> Result<Settings, Stop> {
    let machine = env.nonempty("QEMU_MACHINE")?.unwrap_or_else(|| qemu.machine.clone());
    let all = machines(boards);
    let base = machine.split(',').next().unwrap_or("");
    let Some((_, of)) = all.iter().find(|(m, _)| *m == base) else {
        let known: Vec<String> = all.iter().map(|(m, _)| format!("'{m}'")).collect();
        return Err(usage(format!(
            "QEMU_MACHINE='{machine}': cachescope runs on QEMU {} (with options, e.g. virt,secure=on)",
            known.join(" or ")
        )));
    };
    if of.name != board.name {
        return Err(usage(format!(
            "{} is built for '{}' but QEMU_MACHINE={machine} emulates '{}'; build with --features {}",
            elf.display(),
            board.name,
            of.name,
            of.feature
        )));
    }
    let cpu = env.nonempty("QEMU_CPU")?.unwrap_or_else(|| qemu.cpu.clone().unwrap_or_else(|| "cortex-a72".into()));
    let smp = env.nonempty("QEMU_SMP")?.unwrap_or_else(|| qemu.smp.to_string());
    if !is_count(&smp, 3) {
        return Err(usage(format!("QEMU_SMP='{smp}': a number of cores from 1 to 999")));
    }
    let mem = env.nonempty("QEMU_MEM")?;
    if let Some(m) = &mem {
        let digits = m.strip_suffix(['K', 'M', 'G', 'T']).unwrap_or(m);
        if !is_count(digits, usize::MAX) {
            return Err(usage(format!("QEMU_MEM='{m}': a RAM size such as 512M or 2G")));
        }
    }
    let timeout = env.nonempty("QEMU_TIMEOUT")?.unwrap_or_else(|| "120".into());
    let timeout_s = match timeout.parse::<u64>() {
        Ok(n) if is_count(&timeout, usize::MAX) => n,
        _ => return Err(usage(format!("QEMU_TIMEOUT='{timeout}': a whole number of seconds, at least 1 (there is no 'no timeout')"))),
    };
    let console = match env.nonempty("CS_CONSOLE")?.as_deref() {
        None | Some("human") => Console::Human,
        Some("raw") => Console::Raw,
        Some(c) => {
            return Err(usage(format!("CS_CONSOLE='{c}': human (the report and a digest) or raw (every line as the kernel prints it)")))
        }
    };
    env.flag("CS_VERBOSE", "the human console shows every record")?;
    let built = env.flag("CS_CACHE_MODEL_BUILT", "the caller built the plugin and the report tool")?;
    let extra = env.get("QEMU_EXTRA")?.unwrap_or_default().split_whitespace().map(String::from).collect();
    // Set but empty is off (the shell's `${QEMU_CACHE_MODEL-default}`).
    let model = match env.get("QEMU_CACHE_MODEL")? {
        None => qemu.cache_model.clone(),
        Some(m) if m.is_empty() => "off".into(),
        Some(m) => m,
    };
    let model = if model.is_empty() { "off".to_string() } else { model };
    let model = match env.nonempty("CS_MODEL_MARKERS")? {
        None => model,
        Some(m) if model == "off" => {
            return Err(usage(format!("CS_MODEL_MARKERS='{m}': needs the cache model, and QEMU_CACHE_MODEL is off for this run")))
        }
        Some(m) if m.contains([',', '=']) => {
            return Err(usage(format!("CS_MODEL_MARKERS='{m}': one value of the plugin's markers argument (no ',' or '=')")))
        }
        Some(m) => with_markers(&model, &m),
    };
    Ok(Settings {
        machine,
        cpu: qemu.cpu.as_ref().map(|_| (cpu, smp.parse().unwrap_or(1))),
        memory: qemu.memory.as_ref().map(|d| mem.clone().unwrap_or_else(|| d.clone())),
        timeout_s,
        console,
        extra,
        model,
        built,
    })
}

/// One QEMU command line: the settings plus what this run boots.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    /// Machine, CPU, memory, extra words.
    pub settings: &'a Settings,
    /// The board's QEMU facts (what `-kernel` loads, the board's kernel arguments).
    pub qemu: &'a Qemu,
    /// What `-kernel` loads: the ELF, or its raw image.
    pub kernel: &'a Path,
    /// The user's kernel arguments.
    pub args: &'a [OsString],
    /// The cache model's plugin argument (`-plugin`) and the profile it names.
    pub plugin: Option<(&'a str, &'a str)>,
    /// How QEMU loads [`Line::kernel`].
    pub load: Load,
}

/// How QEMU loads the firmware of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// `-kernel FILE -append ARGS` (an ELF at its entry, a raw image by the Linux boot protocol).
    Kernel,
    /// `-bios FILE`: a raw image at the base of the flash (U-Boot's u-boot.bin); no `-append`.
    Bios,
}

/// One semihosting `arg=` value: QEMU's option escaping doubles commas.
pub fn semihosting_escape(word: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(word.len());
    for &b in word.as_bytes() {
        out.push(b);
        if b == b',' {
            out.push(b',');
        }
    }
    OsString::from_vec(out)
}

fn cat(parts: &[&[u8]]) -> OsString {
    OsString::from_vec(parts.concat())
}

/// The QEMU command line (without the timeout around it).
///
/// The board's words come before the user's. Whether the cache model observes the run is not a
/// word: it is semihosting's argv0 (`cachescope+model=PROFILE`), which the runner alone writes
/// (every word a user types is a later `arg=`), so the kernel refuses a user's `model=`. On an
/// ELF board the semihosting command line is `ARGV0 ARGS…`, each argument an `arg=` (commas
/// doubled); `-append` also puts them in /chosen/bootargs. On an image board (the raw image as
/// the firmware hands it over, entered at EL2) the words arrive through the ATAGs (or a DTB given
/// in QEMU_EXTRA): semihosting's argv0 carries only the runner's fact.
pub fn qemu_argv(line: &Line) -> Vec<OsString> {
    let s = line.settings;
    let mut cmd: Vec<OsString> =
        ["qemu-system-aarch64", "-M", &s.machine, "-display", "none", "-monitor", "none", "-serial", "stdio", "-nic", "none"]
            .iter()
            .map(OsString::from)
            .collect();
    let argv0 = match line.plugin {
        Some((_, profile)) => format!("{ARGV0}{ARGV0_MODEL}{profile}"),
        None => ARGV0.to_string(),
    };
    let board_args = line.qemu.kernel_args.as_str();
    let user: Vec<&[u8]> = line.args.iter().map(|a| a.as_bytes()).collect();
    let user = user.join(&b' ');
    let sep: &[u8] = if !board_args.is_empty() && !user.is_empty() { b" " } else { b"" };
    let append = cat(&[board_args.as_bytes(), sep, &user]);
    let mut semi = OsString::from(format!("enable=on,target=native,arg={argv0}"));
    if line.qemu.kernel == QemuKernel::Elf {
        let words = board_args.split_whitespace().map(OsStr::new).chain(line.args.iter().map(OsString::as_os_str));
        for w in words {
            semi.push(",arg=");
            semi.push(semihosting_escape(w));
        }
    }
    match line.load {
        Load::Kernel => cmd.extend([OsString::from("-kernel"), line.kernel.as_os_str().to_owned(), "-append".into(), append]),
        Load::Bios => cmd.extend([OsString::from("-bios"), line.kernel.as_os_str().to_owned()]),
    }
    cmd.extend(["-semihosting-config".into(), semi]);
    if let Some((cpu, smp)) = &s.cpu {
        cmd.extend(["-cpu".into(), cpu.into(), "-smp".into(), smp.to_string().into()]);
    }
    if let Some(m) = &s.memory {
        cmd.extend(["-m".into(), m.into()]);
    }
    cmd.extend(s.extra.iter().map(OsString::from));
    if let Some((plugin, _)) = line.plugin {
        cmd.extend(["-plugin".into(), plugin.into()]);
        // Not when the user asked for -icount themselves, nor for multi-threaded TCG (which
        // -icount would forbid).
        if !s.extra.iter().any(|w| w == ICOUNT[0]) && !mttcg(&s.extra) {
            cmd.extend(ICOUNT.map(OsString::from));
        }
    }
    cmd
}

/// The plugin's argument: the .so, then the profile or the key=value words of QEMU_CACHE_MODEL
/// (`on`: the defaults), then `out=FILE` unless the value names one.
pub fn plugin_arg(so: &str, model: &str, out: Option<&Path>) -> String {
    let mut p = so.to_string();
    match model {
        "on" => {}
        m if m.contains('=') => p += &format!(",{m}"),
        m => p += &format!(",profile={m}"),
    }
    if let Some(o) = out {
        p += &format!(",out={}", o.display());
    }
    p
}

/// A QEMU_CACHE_MODEL value (not `off`) with the plugin's `markers=VALUE` added (CS_MODEL_MARKERS).
pub fn with_markers(model: &str, markers: &str) -> String {
    match model {
        "on" => format!("markers={markers}"),
        m if m.contains('=') => format!("{m},markers={markers}"),
        profile => format!("profile={profile},markers={markers}"),
    }
}

/// Whether QEMU_CACHE_MODEL names the model's output file itself (`out=FILE`).
pub fn names_out(model: &str) -> bool {
    format!(",{model}").contains(",out=")
}

/// QEMU's start-up refusal: its first `qemu-system-aarch64: ` line that is not a warning.
pub fn refusal(qemu_stderr: &str) -> Option<&str> {
    qemu_stderr.lines().filter(|l| !l.contains(": warning: ")).find(|l| l.starts_with("qemu-system-aarch64: "))
}

/// Whether `timeout`'s status says the run was killed at the timeout (124; 137 after -k).
pub fn timed_out(rc: i32) -> bool {
    rc == 124 || rc == 137
}

/// The runner's exit status: the kernel's (QEMU's) own, 124 for a timeout, 1 when the
/// sanitizer's verdict failed a run the kernel passed.
pub fn exit_status(rc: i32, verdict_failed: bool) -> u8 {
    if timed_out(rc) {
        124
    } else if rc == 0 && verdict_failed {
        1
    } else {
        u8::try_from(rc).unwrap_or(1)
    }
}

/// A process's status as a shell reports it (128 + the signal that killed it).
pub fn code(st: ExitStatus) -> i32 {
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Whether `name` is an executable file on PATH.
pub fn on_path(env: &Env, name: &str) -> bool {
    let path = env.raw("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| is_executable(&d.join(name)))
}

/// Whether `p` is a file with an execute bit (the shell's `-x` for files).
pub fn is_executable(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn writable_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a NUL-terminated path that lives across the call; access() only reads it.
    dir.is_dir() && unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0
}

/// Checks CS_LOG before QEMU starts: its folder exists and is writable, it is not a folder, and
/// it can be opened for appending as the run will open it (created and removed again if new).
pub fn check_log(log: &Path) -> Result<(), Stop> {
    check_file("CS_LOG", log, "name the file the console stream is saved to")
}

/// The checks of [`check_log`] for the file variable `var` (`hint`: what a folder should have been).
fn check_file(var: &str, log: &Path, hint: &str) -> Result<(), Stop> {
    let shown = log.display();
    let dir = match log.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !writable_dir(dir) {
        return Err(usage(format!("{var}='{shown}': the folder '{}' does not exist or is not writable", dir.display())));
    }
    if log.is_dir() {
        return Err(usage(format!("{var}='{shown}' is a folder: {hint}")));
    }
    let open = || fs::OpenOptions::new().append(true).create(true).open(log);
    if log.exists() {
        open().map_err(|_| usage(format!("{var}='{shown}' cannot be written")))?;
    } else {
        open().map_err(|_| usage(format!("{var}='{shown}' cannot be created")))?;
        let _ = fs::remove_file(log);
    }
    Ok(())
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A new empty file in TMPDIR (else /tmp): `STEM-PID-N` + `suffix`.
fn temp_file(env: &Env, stem: &str, suffix: &str) -> Result<PathBuf, Stop> {
    let dir = env.nonempty("TMPDIR")?.unwrap_or_else(|| "/tmp".into());
    loop {
        let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
        let p = Path::new(&dir).join(format!("{stem}-{}-{n}{suffix}", std::process::id()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(usage(format!("cannot create a temporary file in {dir}: {e}"))),
        }
    }
}

/// Files removed when the run ends, however it ends.
#[derive(Default)]
struct Temps(Vec<PathBuf>);

impl Drop for Temps {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = fs::remove_file(p);
        }
    }
}

/// `-dtb FILE.dts` words of QEMU_EXTRA (catalogue rows keep device trees as source): compiled with
/// dtc to target/dtb/FILE.dtb (written aside and renamed: parallel rows may compile the same
/// source while another boots it), the word replaced by the .dtb.
fn compile_dtbs(ctx: &Context, env: &Env, extra: &mut [String]) -> Result<(), Stop> {
    for i in 0..extra.len() {
        let Some(given) = extra.get(i + 1).cloned() else { continue };
        if extra[i] != "-dtb" || !given.ends_with(".dts") {
            continue;
        }
        let src = if Path::new(&given).is_file() { PathBuf::from(&given) } else { ctx.root.join(&given) };
        if !src.is_file() {
            return Err(usage(format!("no such device tree source: {given}")));
        }
        if !on_path(env, "dtc") {
            return Err(usage(format!(
                "dtc is needed for {} (apt-get install device-tree-compiler; scripts/bootstrap installs it)",
                src.display()
            )));
        }
        let stem = src.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let dtb = ctx.root.join("target/dtb").join(format!("{stem}.dtb"));
        let failed = || usage(format!("dtc failed on {}", src.display()));
        fs::create_dir_all(dtb.parent().unwrap_or(Path::new("."))).map_err(|_| failed())?;
        let aside = PathBuf::from(format!("{}.{}-{}", dtb.display(), std::process::id(), UNIQUE.fetch_add(1, Ordering::Relaxed)));
        let mut dtc = Command::new("dtc");
        env.apply(&mut dtc);
        let ok = dtc.args(["-q", "-I", "dts", "-O", "dtb", "-o"]).arg(&aside).arg(&src).status().is_ok_and(|s| s.success());
        if !ok || fs::rename(&aside, &dtb).is_err() {
            let _ = fs::remove_file(&aside);
            return Err(failed());
        }
        extra[i + 1] = dtb.display().to_string();
    }
    Ok(())
}

/// `cargo build --release` of one host package, each alone as scripts/report and scripts/test
/// build it (building them together would unify their features differently and make the next
/// `scripts/report` recompile). Err: cargo's output.
pub fn host_build(ctx: &Context, env: &Env, package: &str) -> Result<(), String> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    env.apply(&mut cmd);
    cmd.args(["build", "--quiet", "--release", "--manifest-path"]).arg(ctx.root.join("host/Cargo.toml"));
    cmd.args(["--target", "host-tuple", "-p", package]);
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned())
}

/// A command's stdout and stderr through one pipe, as `$(CMD 2>&1)`: (status, text without its
/// trailing newlines).
fn merged_output(mut cmd: Command) -> std::io::Result<(i32, String)> {
    let (mut r, w) = std::io::pipe()?;
    cmd.stdout(w.try_clone()?).stderr(w).stdin(Stdio::null());
    let mut child = cmd.spawn()?;
    drop(cmd);
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)?;
    let st = child.wait()?;
    Ok((code(st), String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_string()))
}

/// The local time as `date +%Y%m%d-%H%M%S` prints it (a saved run's name).
fn stamp() -> String {
    Command::new("date")
        .arg("+%Y%m%d-%H%M%S")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "00000000-000000".into())
}

/// One run's state between QEMU starts.
struct Run<'a> {
    ctx: &'a Context,
    env: &'a Env,
    io: &'a Io,
    elf: &'a Path,
    board: &'a Board,
    qemu: &'a Qemu,
    args: &'a [OsString],
    s: Settings,
    console: Console,
    log: Option<PathBuf>,
    plugin: Option<String>,
    profile: String,
    image: Option<PathBuf>,
    qemu_err: PathBuf,
    run_tmp: Option<PathBuf>,
    temps: Temps,
}

impl Run<'_> {
    fn argv(&mut self) -> Result<Vec<OsString>, Stop> {
        let kernel = if self.qemu.kernel == QemuKernel::Image {
            // One image per run: parallel rows boot the same ELF.
            if self.image.is_none() {
                let img = temp_file(self.env, &format!("cachescope-{}", self.board.name), ".img")?;
                self.temps.0.push(img.clone());
                let mut mk = Command::new(self.ctx.root.join("scripts/mkimage"));
                self.env.apply(&mut mk);
                mk.arg("--raw").arg(self.elf).arg(&img).stdin(Stdio::null());
                mk.stdout(self.io.stdio().map_err(|e| usage(e.to_string()))?);
                mk.stderr(self.io.stdio().map_err(|e| usage(e.to_string()))?);
                if !mk.status().is_ok_and(|s| s.success()) {
                    return Err(Stop { status: 1, message: None });
                }
                self.image = Some(img);
            }
            self.image.clone().unwrap_or_default()
        } else {
            self.elf.to_path_buf()
        };
        let line = Line {
            settings: &self.s,
            qemu: self.qemu,
            kernel: &kernel,
            args: self.args,
            plugin: self.plugin.as_deref().map(|p| (p, self.profile.as_str())),
            load: Load::Kernel,
        };
        Ok(qemu_argv(&line))
    }

    /// Runs QEMU once under `timeout`: (its status, whether the console filter says the stream
    /// never started a run — help, a refused command line — and the command line).
    fn qemu(&mut self) -> Result<(i32, bool, Vec<OsString>), Stop> {
        let argv = self.argv()?;
        let io_err = |e: std::io::Error| usage(format!("cannot run qemu-system-aarch64: {e}"));
        let mut cmd = Command::new("timeout");
        self.env.apply(&mut cmd);
        cmd.args(["-k", "2", &self.s.timeout_s.to_string()]).args(&argv).stdin(Stdio::null());
        // QEMU's own messages go to a file, shown once it has exited: a start-up refusal is told
        // apart from a kernel that reports a failure, and no check races a process still writing.
        cmd.stderr(fs::File::create(&self.qemu_err).map_err(io_err)?);
        let icount = argv.iter().any(|a| a == ICOUNT[0]);
        let (rc, asked) = match (self.console, &self.log, &self.plugin) {
            (Console::Human, Some(log), _) => {
                let mut q = cmd.stdout(Stdio::piped()).spawn().map_err(io_err)?;
                let mut filter = Command::new(self.ctx.report());
                self.env.apply(&mut filter);
                filter.arg("console").arg("--save").arg(log);
                if icount {
                    filter.arg("--icount");
                }
                let stdout = q.stdout.take().map(Stdio::from).unwrap_or_else(Stdio::null);
                filter.stdin(stdout).stdout(self.io.stdio().map_err(io_err)?).stderr(self.io.stdio().map_err(io_err)?);
                let asked = match filter.spawn() {
                    // The filter exits 3 when the stream never started a run.
                    Ok(mut f) => f.wait().is_ok_and(|st| st.code() == Some(3)),
                    Err(e) => {
                        self.io.err(&format!("qemu-run: cannot run {}: {e}", self.ctx.report().display()));
                        false
                    }
                };
                (code(q.wait().map_err(io_err)?), asked)
            }
            (Console::Raw, Some(_), _) | (Console::Raw, None, Some(_)) => {
                // A model run keeps its stream for the sanitizer's verdict (a temporary file without CS_LOG).
                let file = match &self.log {
                    Some(l) => l.clone(),
                    None => {
                        let t = temp_file(self.env, "cachescope-run", ".log")?;
                        self.temps.0.push(t.clone());
                        self.run_tmp = Some(t.clone());
                        t
                    }
                };
                let mut saved = fs::File::create(&file).map_err(|e| usage(format!("{}: cannot write: {e}", file.display())))?;
                let mut q = cmd.stdout(Stdio::piped()).spawn().map_err(io_err)?;
                if let Some(mut out) = q.stdout.take() {
                    let mut buf = [0u8; 8192];
                    while let Ok(n) = out.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let _ = saved.write_all(&buf[..n]);
                        self.io.write(false, &buf[..n]);
                    }
                }
                (code(q.wait().map_err(io_err)?), false)
            }
            _ => {
                cmd.stdout(self.io.stdio().map_err(io_err)?);
                (code(cmd.status().map_err(io_err)?), false)
            }
        };
        drop(cmd);
        self.io.write(true, &fs::read(&self.qemu_err).unwrap_or_default());
        Ok((rc, asked, argv))
    }
}

/// Boots `elf` with the kernel arguments `args` as scripts/qemu-run always has (module docs):
/// checks the environment, builds the command line, runs QEMU (again without the cache model
/// when QEMU cannot load the plugin), appends the sanitizer's verdict, rotates the saved runs and
/// shows the digest. Returns the exit status; every message has been written to `io`.
pub fn run(ctx: &Context, elf: &Path, args: &[OsString], env: &Env, io: &Io) -> u8 {
    match run_inner(ctx, elf, args, env, io) {
        Ok(status) => status,
        Err(Stop { status, message }) => {
            if let Some(m) = message {
                io.err(&format!("qemu-run: {m}"));
            }
            status
        }
    }
}

fn run_inner(ctx: &Context, elf: &Path, args: &[OsString], env: &Env, io: &Io) -> Result<u8, Stop> {
    if !elf.is_file() {
        return Err(usage(format!("no such kernel: {}", elf.display())));
    }
    let name = crate::run::board_of(elf, &ctx.boards).map_err(usage)?;
    let board = crate::boards::find(&ctx.boards, &name).map_err(|e| usage(e.to_string()))?;
    let qemu = board.qemu.as_ref().ok_or_else(|| {
        usage(format!(
            "{} is built for '{name}', which no QEMU machine emulates; make SD-card images with scripts/mkimage / scripts/mksdcard",
            elf.display()
        ))
    })?;
    if !on_path(env, "qemu-system-aarch64") {
        return Err(Stop {
            status: 4,
            message: Some("qemu-system-aarch64 is not installed (exit status 4): run scripts/bootstrap".into()),
        });
    }
    let mut s = settings(env, board, qemu, &ctx.boards, elf)?;
    let mut log = env.nonempty("CS_LOG")?.map(PathBuf::from);
    if let Some(l) = &log {
        check_log(l)?;
    }
    let mut runs = None;
    if s.console == Console::Human && log.is_none() {
        // One file per run (runs side by side never share one), written only if the kernel starts
        // a run (`help` and refusals save nothing); rotated after the run.
        let dir = env.nonempty("CS_RUNS")?.map(PathBuf::from).unwrap_or_else(|| ctx.root.join("target/cachescope-logs/runs"));
        fs::create_dir_all(&dir).map_err(|_| usage(format!("CS_RUNS='{}': cannot create the folder", dir.display())))?;
        let n = UNIQUE.fetch_add(1, Ordering::Relaxed);
        let unique = if n == 0 { String::new() } else { format!("-{n}") };
        let file = elf.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        log = Some(dir.join(format!("{file}-{}-{}{unique}.log", stamp(), std::process::id())));
        runs = Some(dir);
    }
    compile_dtbs(ctx, env, &mut s.extra)?;

    // The cache model: the plugin and the report tool are built here, once per run
    // (CS_CACHE_MODEL_BUILT=1: the caller built them for its parallel runs).
    let mut model = s.model.clone();
    if model != "off" && !s.built {
        if let Err(out) = host_build(ctx, env, "cachescope-cache-model") {
            let why = out.lines().find(|l| l.starts_with("error")).or_else(|| out.lines().last()).unwrap_or("");
            io.err(&format!("qemu-run: the cache model is off for this run: building host/cache-model failed ({why})"));
            model = "off".into();
        }
    }
    // The report tool: the human console's filter and digest, and the verdict on every model run.
    if (s.console == Console::Human || model != "off") && !s.built {
        let _ = host_build(ctx, env, "cachescope-report");
    }
    let mut temps = Temps::default();
    let (mut model_out, mut model_print) = (None::<PathBuf>, false);
    let (mut plugin, mut profile) = (None, String::new());
    if model != "off" {
        let so = env
            .nonempty("CS_CACHE_MODEL_PLUGIN")?
            .unwrap_or_else(|| ctx.host_bin.join("libcachescope_cache_model.so").display().to_string());
        // The value is checked by the plugin's own parser before QEMU starts; it also names the
        // profile the kernel is told.
        let checker = ctx.host_bin.join("cachescope-model-args");
        if !is_executable(&checker) {
            return Err(usage(format!(
                "QEMU_CACHE_MODEL='{model}' cannot be checked: {} is not built (cargo build --release --manifest-path host/Cargo.toml --target host-tuple -p cachescope-cache-model)",
                checker.display()
            )));
        }
        let mut c = Command::new(&checker);
        env.apply(&mut c);
        c.arg(&model);
        let (st, checked) = merged_output(c).map_err(|e| usage(format!("cannot run {}: {e}", checker.display())))?;
        if st != 0 {
            return Err(usage(checked));
        }
        profile = checked.strip_prefix("profile=").unwrap_or(&checked).to_string();
        if !names_out(&model) {
            let out = match (env.nonempty("CS_MODEL_LOG")?, &log) {
                (Some(m), _) => {
                    // Refused here, not as a plugin QEMU "could not load" (which would turn the model off).
                    check_file("CS_MODEL_LOG", Path::new(&m), "name the file the cache model's records go to")?;
                    PathBuf::from(m)
                }
                (None, Some(l)) => {
                    model_print = true;
                    PathBuf::from(format!("{}.model", l.display()))
                }
                (None, None) => {
                    model_print = true;
                    let t = temp_file(env, "cachescope-model", "")?;
                    temps.0.push(t.clone());
                    t
                }
            };
            let _ = fs::remove_file(&out);
            model_out = Some(out);
        }
        plugin = Some(plugin_arg(&so, &model, model_out.as_deref()));
    }
    let report = ctx.report();
    let mut console = s.console;
    if console == Console::Human && !is_executable(&report) {
        io.err("qemu-run: the report tool is not built (cargo build --release --manifest-path host/Cargo.toml -p cachescope-report): the console shows every line and no digest");
        console = Console::Raw;
    }
    let qemu_err = temp_file(env, "cachescope-qemu", ".err")?;
    temps.0.push(qemu_err.clone());
    let timeout_s = s.timeout_s;
    let mut r = Run { ctx, env, io, elf, board, qemu, args, s, console, log, plugin, profile, image: None, qemu_err, run_tmp: None, temps };
    let (mut rc, mut asked, mut argv) = r.qemu()?;
    let err_path = r.qemu_err.clone();
    let err_text = || fs::read(&err_path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let refused = |text: &str| refusal(text).map(String::from);
    if rc == 1 && r.plugin.is_some() {
        if let Some(line) = refused(&err_text()).filter(|l| l.contains("plugin")) {
            // Another QEMU, no plugin support, a broken .so: the run goes on without the model.
            io.err(&format!("qemu-run: the cache model is off for this run: QEMU could not load it ({line})"));
            r.plugin = None;
            model_print = false;
            (rc, asked, argv) = r.qemu()?;
        }
    }
    let refusal_now = refused(&err_text());
    if asked {
        // Asking is not running: the kernel's help or refusal is all there is to show; no digest,
        // no saved run, no model records kept.
        if model_print {
            if let Some(m) = &model_out {
                let _ = fs::remove_file(m);
            }
        }
        if rc == 1 {
            if let Some(line) = &refusal_now {
                return Err(Stop { status: 4, message: Some(format!("QEMU refused to start (exit status 4): {line}")) });
            }
        }
        if timed_out(rc) {
            io.err(&format!("TIMEOUT after {timeout_s} s before the kernel started a run: {}", elf.display()));
            return Ok(124);
        }
        return Ok(exit_status(rc, false));
    }
    if let Some(l) = &r.log {
        if rc == 0 && fs::metadata(l).map_or(true, |m| m.len() == 0) {
            return Err(usage(format!("nothing was written to CS_LOG='{}'", l.display())));
        }
    }
    if rc == 1 {
        if let Some(line) = &refusal_now {
            return Err(Stop { status: 4, message: Some(format!("QEMU refused to start (exit status 4): {line}")) });
        }
    }
    if timed_out(rc) {
        let words: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let text = cat(&[
            b"TIMEOUT after ",
            timeout_s.to_string().as_bytes(),
            b" s: ",
            elf.as_os_str().as_bytes(),
            b" ",
            &words.join(&b' '),
            b"\n",
        ]);
        io.write(false, text.as_bytes());
    }
    // The sanitizer's verdict (every model run): its lines are appended to the saved log (shown
    // on a raw console), and a failed verdict turns a passing run into status 1.
    let mut verdict_failed = false;
    if let (Some(_), Some(mo)) = (&r.plugin, model_out.as_ref().filter(|m| m.is_file())) {
        let run_log = r.log.clone().or_else(|| r.run_tmp.clone()).unwrap_or_default();
        let (v, verdict) = if !is_executable(&report) {
            (
                1,
                "# sanitizer: not ok (outside any phase): the report tool is not built, so nobody judged the sanitizer's findings"
                    .to_string(),
            )
        } else {
            let mut c = Command::new(&report);
            env.apply(&mut c);
            c.arg("verdict").arg(&run_log).arg("--model").arg(mo);
            merged_output(c).unwrap_or_else(|e| (1, format!("# sanitizer: not ok (outside any phase): cannot run the report tool: {e}")))
        };
        if let Some(l) = &r.log {
            append(l, &format!("{verdict}\n"));
            // The console's line arrival times (LOG.times) cover the appended lines too: judged
            // at the end, they arrive with the last line.
            let times = PathBuf::from(format!("{}.times", l.display()));
            if let Some(last) = fs::read_to_string(&times).ok().and_then(|t| t.lines().last().map(String::from)) {
                let n = verdict.split('\n').count();
                append(&times, &format!("{last}\n").repeat(n));
            }
        }
        if r.console == Console::Raw {
            io.out(&verdict);
        }
        if v != 0 && rc == 0 {
            // On a raw console the verdict's own lines say it; a person's console gets the
            // runner's line on stderr as well.
            if r.console == Console::Human {
                let first = verdict.lines().find(|l| l.starts_with("# sanitizer: not ok")).map(|l| &l[13..]).unwrap_or("");
                io.err(&format!("qemu-run: the cache-model sanitizer's verdict fails this run (exit status 1): {first}"));
            }
            verdict_failed = true;
        }
    }
    // The newest runs are kept, never this one (its digest points at it).
    if let (Some(dir), Some(l)) = (&runs, &r.log) {
        let mut c = Command::new(&report);
        env.apply(&mut c);
        c.arg("rotate").arg(dir).args(["--keep", KEEP_RUNS, "--current"]).arg(l);
        let _ = spawn_wait(c, io);
    }
    if r.console == Console::Human {
        let l = r.log.clone().unwrap_or_default();
        let mut c = Command::new(&report);
        env.apply(&mut c);
        c.arg("summary").arg(&l);
        if r.plugin.is_some() {
            c.arg("--model").arg(model_out.clone().unwrap_or_default());
        }
        if argv.iter().any(|a| a == ICOUNT[0]) {
            c.arg("--icount");
        }
        let _ = spawn_wait(c, io);
        let records = match (&r.plugin, &model_out) {
            (Some(_), m) => format!(" (model records: {})", m.as_deref().map(|m| m.display().to_string()).unwrap_or_default()),
            _ => String::new(),
        };
        io.out(&format!("full log: {}{records}; CS_VERBOSE=1 shows every record on the console", l.display()));
    } else if let (true, Some(_), Some(m)) = (model_print, &r.plugin, &model_out) {
        if let Ok(bytes) = fs::read(m) {
            io.write(false, &bytes);
        }
    }
    Ok(exit_status(rc, verdict_failed))
}

fn append(path: &Path, text: &str) {
    if let Ok(mut f) = fs::OpenOptions::new().append(true).create(true).open(path) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// Runs a command with the run's stdout and stderr; a command that cannot start is named on stderr.
fn spawn_wait(mut c: Command, io: &Io) -> Option<i32> {
    let (Ok(o), Ok(e)) = (io.stdio(), io.stdio()) else { return None };
    let program = c.get_program().to_owned();
    match c.stdin(Stdio::null()).stdout(o).stderr(e).status() {
        Ok(st) => Some(code(st)),
        Err(err) => {
            io.err(&format!("qemu-run: cannot run {}: {err}", Path::new(&program).display()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boards() -> Vec<Board> {
        crate::boards::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../boards.toml")).unwrap()
    }

    fn env(vars: &[(&str, &str)]) -> Env {
        // Every variable the runner reads is in the overlay (empty: unset), so the test process's
        // own environment cannot leak in.
        let names = [
            "QEMU_MACHINE",
            "QEMU_CPU",
            "QEMU_SMP",
            "QEMU_MEM",
            "QEMU_EXTRA",
            "QEMU_TIMEOUT",
            "CS_CONSOLE",
            "CS_VERBOSE",
            "CS_CACHE_MODEL_BUILT",
            "CS_NO_MATRIX",
            "CS_MODEL_MARKERS",
        ];
        let mut overlay: Vec<(String, OsString)> = names.iter().map(|n| (n.to_string(), OsString::new())).collect();
        overlay.extend(vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))));
        Env { overlay }
    }

    fn settings_for(board: &str, vars: &[(&str, &str)]) -> Result<Settings, Stop> {
        let all = boards();
        let b = crate::boards::find(&all, board).unwrap().clone();
        let mut e = env(vars);
        if !vars.iter().any(|(k, _)| *k == "QEMU_CACHE_MODEL") {
            e.overlay.retain(|(k, _)| k != "QEMU_CACHE_MODEL");
            // Unset: the board's default.
            e.overlay.push(("QEMU_CACHE_MODEL".into(), OsString::from(b.qemu.as_ref().unwrap().cache_model.clone())));
        }
        settings(&e, &b, b.qemu.as_ref().unwrap(), &all, Path::new("/k/cachescope"))
    }

    fn message(r: Result<Settings, Stop>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.status, 2);
        e.message.unwrap()
    }

    fn argv_for(board: &str, vars: &[(&str, &str)], args: &[&str], plugin: Option<(&str, &str)>) -> Vec<String> {
        let all = boards();
        let b = crate::boards::find(&all, board).unwrap();
        let s = settings_for(board, vars).unwrap();
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let line =
            Line { settings: &s, qemu: b.qemu.as_ref().unwrap(), kernel: Path::new("/k/kernel"), args: &args, plugin, load: Load::Kernel };
        qemu_argv(&line).into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    fn after<'a>(argv: &'a [String], opt: &str) -> Option<&'a str> {
        argv.iter().position(|a| a == opt).map(|i| argv[i + 1].as_str())
    }

    #[test]
    fn virt_command_line() {
        let a = argv_for("qemu-virt", &[], &["only=boot", "a,b"], None);
        assert_eq!(a[..11].join(" "), "qemu-system-aarch64 -M virt -display none -monitor none -serial stdio -nic none");
        assert_eq!(after(&a, "-kernel"), Some("/k/kernel"));
        assert_eq!(after(&a, "-append"), Some("only=boot a,b"));
        assert_eq!(after(&a, "-semihosting-config"), Some("enable=on,target=native,arg=cachescope,arg=only=boot,arg=a,,b"));
        assert_eq!(after(&a, "-cpu"), Some("cortex-a72"));
        assert_eq!(after(&a, "-smp"), Some("2"), "boards.toml's qemu_smp");
        assert_eq!(after(&argv_for("qemu-virt", &[("QEMU_SMP", "1")], &[], None), "-smp"), Some("1"), "QEMU_SMP=1: one core");
        assert_eq!(after(&a, "-m"), Some("512M"));
        assert!(!a.iter().any(|w| w == "-plugin" || w == "-icount"));
    }

    #[test]
    fn cpu_smp_memory_and_extra_come_from_the_environment() {
        let vars = [
            ("QEMU_CPU", "max"),
            ("QEMU_SMP", "4"),
            ("QEMU_MEM", "2G"),
            ("QEMU_EXTRA", " -d  int\t-S "),
            ("QEMU_MACHINE", "virt,secure=on"),
        ];
        let a = argv_for("qemu-virt", &vars, &[], None);
        assert_eq!(after(&a, "-M"), Some("virt,secure=on"));
        assert_eq!((after(&a, "-cpu"), after(&a, "-smp"), after(&a, "-m")), (Some("max"), Some("4"), Some("2G")));
        assert_eq!(a[a.len() - 3..], ["-d", "int", "-S"]);
        assert_eq!(after(&a, "-append"), Some(""));
        assert_eq!(after(&a, "-semihosting-config"), Some("enable=on,target=native,arg=cachescope"));
    }

    #[test]
    fn the_model_adds_the_plugin_icount_and_argv0() {
        let a = argv_for("qemu-virt", &[], &["only=boot"], Some(("/p.so,out=/m", "guest")));
        assert_eq!(after(&a, "-plugin"), Some("/p.so,out=/m"));
        assert_eq!(a[a.len() - 2..], ICOUNT);
        assert_eq!(after(&a, "-semihosting-config"), Some("enable=on,target=native,arg=cachescope+model=guest,arg=only=boot"));
        // The user's own -icount wins: no second one.
        let a = argv_for("qemu-virt", &[("QEMU_EXTRA", "-icount shift=1")], &[], Some(("/p.so", "rpi4")));
        assert_eq!(a.iter().filter(|w| *w == "-icount").count(), 1);
        assert_eq!(after(&a, "-icount"), Some("shift=1"));
        assert_eq!(a.last().map(String::as_str), Some("/p.so"));
    }

    #[test]
    fn raspi4b_boots_the_image_with_the_board_words() {
        let all = boards();
        let q = crate::boards::find(&all, "rpi4").unwrap().qemu.clone().unwrap();
        let a = argv_for("rpi4", &[("QEMU_CPU", "max"), ("QEMU_SMP", "2"), ("QEMU_MEM", "1G")], &["only=boot"], Some(("/p.so", "rpi4")));
        assert_eq!(after(&a, "-M"), Some(q.machine.as_str()));
        assert!(!q.kernel_args.is_empty());
        assert_eq!(after(&a, "-append"), Some(format!("{} only=boot", q.kernel_args).as_str()));
        // Only the runner's fact goes through semihosting on an image board.
        assert_eq!(after(&a, "-semihosting-config"), Some("enable=on,target=native,arg=cachescope+model=rpi4"));
        // The machine has its own CPU and RAM: QEMU_CPU, QEMU_SMP and QEMU_MEM are not passed.
        assert_eq!(q.cpu.is_none(), after(&a, "-cpu").is_none());
        assert_eq!(q.memory.is_none(), after(&a, "-m").is_none());
        let a = argv_for("rpi4", &[], &[], None);
        assert_eq!(after(&a, "-append"), Some(q.kernel_args.as_str()));
    }

    #[test]
    fn escaping_doubles_commas_and_keeps_bytes() {
        assert_eq!(semihosting_escape(OsStr::new("a,b,,c")), OsString::from("a,,b,,,,c"));
        let raw = OsStr::from_bytes(b"only=boot\xff,");
        assert_eq!(semihosting_escape(raw).as_bytes(), b"only=boot\xff,,");
        assert_eq!(semihosting_escape(OsStr::new("my dir")), OsString::from("my dir"));
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable() {
        assert_eq!(message(settings_for("qemu-virt", &[("QEMU_SMP", "0")])), "QEMU_SMP='0': a number of cores from 1 to 999");
        assert!(message(settings_for("qemu-virt", &[("QEMU_SMP", "1000")])).starts_with("QEMU_SMP='1000'"));
        assert!(message(settings_for("qemu-virt", &[("QEMU_SMP", "+2")])).starts_with("QEMU_SMP='+2'"));
        assert_eq!(message(settings_for("qemu-virt", &[("QEMU_MEM", "abc")])), "QEMU_MEM='abc': a RAM size such as 512M or 2G");
        assert!(message(settings_for("qemu-virt", &[("QEMU_MEM", "512MB")])).starts_with("QEMU_MEM='512MB'"));
        assert!(message(settings_for("qemu-virt", &[("QEMU_MEM", "G")])).starts_with("QEMU_MEM='G'"));
        assert!(message(settings_for("qemu-virt", &[("QEMU_TIMEOUT", "0")])).starts_with("QEMU_TIMEOUT='0': a whole number of seconds"));
        assert!(message(settings_for("qemu-virt", &[("QEMU_TIMEOUT", "1.5")])).starts_with("QEMU_TIMEOUT='1.5'"));
        assert!(message(settings_for("qemu-virt", &[("CS_CONSOLE", "x")])).starts_with("CS_CONSOLE='x': human"));
        assert_eq!(
            message(settings_for("qemu-virt", &[("CS_VERBOSE", "yes")])),
            "CS_VERBOSE='yes': 1 (the human console shows every record) or 0"
        );
        assert!(message(settings_for("qemu-virt", &[("CS_CACHE_MODEL_BUILT", "2")])).starts_with("CS_CACHE_MODEL_BUILT='2'"));
        let m = message(settings_for("qemu-virt", &[("QEMU_MACHINE", "bogus")]));
        assert!(m.starts_with("QEMU_MACHINE='bogus': cachescope runs on QEMU 'virt' or '"), "{m}");
        let pi = boards().into_iter().find(|b| b.name == "rpi4").unwrap().qemu.unwrap().machine;
        let m = message(settings_for("qemu-virt", &[("QEMU_MACHINE", &pi)]));
        assert_eq!(m, format!("/k/cachescope is built for 'qemu-virt' but QEMU_MACHINE={pi} emulates 'rpi4'; build with --features rpi4"));
        let mut e = env(&[]);
        e.overlay.push(("QEMU_EXTRA".into(), OsString::from_vec(b"-d \xff".to_vec())));
        let all = boards();
        let b = &all[0];
        let err = settings(&e, b, b.qemu.as_ref().unwrap(), &all, Path::new("k")).unwrap_err();
        assert!(err.message.unwrap().starts_with("QEMU_EXTRA='-d "), "not UTF-8 is named");
    }

    #[test]
    fn good_values_and_defaults() {
        let s = settings_for(
            "qemu-virt",
            &[("QEMU_SMP", "999"), ("QEMU_MEM", "1024"), ("QEMU_TIMEOUT", "5"), ("CS_CONSOLE", "raw"), ("CS_VERBOSE", "1")],
        )
        .unwrap();
        assert_eq!((s.cpu.as_ref().unwrap().1, s.memory.as_deref(), s.timeout_s, s.console), (999, Some("1024"), 5, Console::Raw));
        let s = settings_for("qemu-virt", &[]).unwrap();
        assert_eq!((s.timeout_s, s.console, s.model.as_str(), s.built), (120, Console::Human, "on", false));
        // Set but empty is off; unset is the board's default.
        assert_eq!(settings_for("qemu-virt", &[("QEMU_CACHE_MODEL", "")]).unwrap().model, "off");
        assert_eq!(settings_for("rpi4", &[]).unwrap().model, "off");
        assert!(settings_for("qemu-virt", &[("CS_CACHE_MODEL_BUILT", "1")]).unwrap().built);
    }

    #[test]
    fn the_marker_mode_joins_the_model_words() {
        let model = |vars: &[(&str, &str)]| settings_for("qemu-virt", vars).map(|s| s.model);
        assert_eq!(model(&[("CS_MODEL_MARKERS", "declarations")]).unwrap(), "markers=declarations");
        assert_eq!(model(&[("CS_MODEL_MARKERS", "all"), ("QEMU_CACHE_MODEL", "rpi4")]).unwrap(), "profile=rpi4,markers=all");
        assert_eq!(
            model(&[("CS_MODEL_MARKERS", "declarations"), ("QEMU_CACHE_MODEL", "fast=off,l3=none")]).unwrap(),
            "fast=off,l3=none,markers=declarations"
        );
        assert_eq!(model(&[("CS_MODEL_MARKERS", "")]).unwrap(), "on", "set but empty: not given");
        let m = message(settings_for("qemu-virt", &[("CS_MODEL_MARKERS", "declarations"), ("QEMU_CACHE_MODEL", "off")]));
        assert!(m.starts_with("CS_MODEL_MARKERS='declarations': needs the cache model"), "{m}");
        let m = message(settings_for("qemu-virt", &[("CS_MODEL_MARKERS", "all,fast=off")]));
        assert!(m.starts_with("CS_MODEL_MARKERS='all,fast=off': one value"), "{m}");
    }

    #[test]
    fn plugin_arguments() {
        assert_eq!(plugin_arg("/p.so", "on", Some(Path::new("/m"))), "/p.so,out=/m");
        assert_eq!(plugin_arg("/p.so", "rpi4", Some(Path::new("/m"))), "/p.so,profile=rpi4,out=/m");
        assert_eq!(plugin_arg("/p.so", "profile=rpi4,policy=fifo", None), "/p.so,profile=rpi4,policy=fifo");
        assert!(names_out("out=/x") && names_out("profile=rpi4,out=/x"));
        assert!(!names_out("profile=rpi4") && !names_out("layout=out=x"));
    }

    #[test]
    fn status_mapping() {
        assert_eq!([0, 1, 2, 3, 101].map(|rc| exit_status(rc, false)), [0, 1, 2, 3, 101]);
        assert_eq!(exit_status(124, false), 124);
        assert_eq!(exit_status(137, true), 124);
        assert_eq!(exit_status(0, true), 1);
        // A kernel that failed keeps its own status under a failed verdict.
        assert_eq!(exit_status(2, true), 2);
        assert_eq!(exit_status(-1, false), 1);
    }

    #[test]
    fn refusal_is_the_first_error_line_of_qemu() {
        let text =
            "qemu-system-aarch64: warning: x\nnoise\nqemu-system-aarch64: unable to find CPU model 'bogus'\nqemu-system-aarch64: later\n";
        assert_eq!(refusal(text), Some("qemu-system-aarch64: unable to find CPU model 'bogus'"));
        assert_eq!(refusal("qemu-system-aarch64: warning: only a warning\n"), None);
        assert_eq!(refusal(""), None);
    }

    #[test]
    fn test_kernels_run_per_row_unless_told() {
        let k = Path::new("/t/debug/deps/boot-0123abcd");
        assert_eq!(matrix_kernel(k, &env(&[])).unwrap().as_deref(), Some("boot"));
        assert_eq!(matrix_kernel(k, &env(&[("CS_NO_MATRIX", "1")])).unwrap(), None);
        assert_eq!(matrix_kernel(k, &env(&[("QEMU_CPU", "max")])).unwrap(), None);
        assert_eq!(matrix_kernel(k, &env(&[("QEMU_MACHINE", "virt")])).unwrap(), None);
        assert_eq!(matrix_kernel(Path::new("/t/debug/cachescope"), &env(&[])).unwrap(), None);
        assert_eq!(matrix_kernel(k, &env(&[("CS_NO_MATRIX", "yes")])).unwrap_err().status, 2);
    }

    #[test]
    fn cs_log_checks() {
        let dir = std::env::temp_dir().join(format!("cs-qemu-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert!(check_log(&dir.join("new.log")).is_ok());
        assert!(!dir.join("new.log").exists(), "a new CS_LOG is created and removed again");
        let m = check_log(&dir).unwrap_err().message.unwrap();
        assert!(m.ends_with("is a folder: name the file the console stream is saved to"), "{m}");
        let m = check_log(Path::new("/nonexistent/dir/x.log")).unwrap_err().message.unwrap();
        assert_eq!(m, "CS_LOG='/nonexistent/dir/x.log': the folder '/nonexistent/dir' does not exist or is not writable");
        let m = check_file("CS_MODEL_LOG", &dir, "name the file the cache model's records go to").unwrap_err().message.unwrap();
        assert!(m.starts_with("CS_MODEL_LOG='") && m.ends_with("is a folder: name the file the cache model's records go to"), "{m}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
