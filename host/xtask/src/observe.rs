//! `observe`: any firmware under the cache model on QEMU virt, and a digest a firmware engineer
//! can act on (scripts/observe is the thin wrapper; README "Your own firmware").
//!
//! ```text
//! cachescope-xtask observe [OPTIONS] FIRMWARE [-- EXTRA QEMU ARGS]
//! cachescope-xtask observe [OPTIONS] --bios IMAGE [-- EXTRA QEMU ARGS]
//! ```
//!
//! The QEMU command line is the runner's ([`crate::qemu::qemu_argv`]: machine, CPU, vCPUs,
//! memory, `-nic none`, the plugin and `-icount`), with the firmware loaded by `-kernel` (an ELF
//! at its entry, a raw image by the Linux boot protocol) or `-bios` (`--bios`: u-boot.bin), plus
//! `-no-reboot` (a guest reset ends the run: U-Boot's `reset`). The console (the guest's serial
//! output) goes to `OUT/console.log`, the model's records to `OUT/model.log`; `--input FILE` is
//! fed to the guest's serial input. After the run the digest
//! ([`cachescope_report::firmware`]) is printed and written to `OUT/digest.txt`.
//!
//! Exit status: 0 the run was observed (whatever the firmware's own status; the digest says
//! it) and any `--expect` file is met; 1 the expectation is not met; 2 bad options or files;
//! 4 QEMU is missing or refused to start; 124 the run reached `--timeout` (the digest of what
//! ran is still printed and checked).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cachescope_report::expect::Expectation;
use cachescope_report::firmware::{self, parse_offset, Observed, Scheduling};
use cachescope_report::symbols::{self, Symbols};

use crate::boards::{Board, QemuKernel};
use crate::qemu::{self, Console, Context, Env, Line, Load, Settings};

/// The command's options, exactly as docs/running.md and the issue's interface name them.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// The firmware: an ELF (loaded with -kernel at its entry) or a raw image (-kernel: Linux
    /// boot protocol). Give either this or --bios.
    #[arg(value_name = "FIRMWARE", required_unless_present = "bios", conflicts_with = "bios")]
    pub firmware: Option<PathBuf>,
    /// A raw image loaded with -bios at the base of the flash (U-Boot's u-boot.bin).
    #[arg(long, value_name = "IMAGE")]
    pub bios: Option<PathBuf>,
    /// ELF for symbols (default: FIRMWARE itself when it is an ELF).
    #[arg(long, value_name = "PATH")]
    pub elf: Option<PathBuf>,
    /// Runtime address minus link address (relocated or KASLR images): decimal, 0x…, or -0x….
    #[arg(long, value_name = "N", default_value = "0", allow_hyphen_values = true)]
    pub load_offset: String,
    /// QEMU -cpu.
    #[arg(long, value_name = "NAME", default_value = "cortex-a72")]
    pub cpu: String,
    /// Entry exception level: 1 (virt), 2 (virt,virtualization=on), 3 (virt,secure=on).
    #[arg(long, value_name = "1|2|3", default_value = "1")]
    pub el: String,
    /// vCPUs.
    #[arg(long, value_name = "N", default_value = "1")]
    pub smp: String,
    /// Wall-clock seconds before QEMU is stopped and the run reported as timed out.
    #[arg(long, value_name = "SECS", default_value = "120")]
    pub timeout: String,
    /// Bytes fed to the guest's serial console (a scripted U-Boot session).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Check the run against an expectation file (TOML, docs/running.md); exit 1 listing what
    /// is not met.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Where the full records go (default target/observe/FIRMWARE-STEM/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also show the guest's console as it runs (it is always saved to OUT/console.log).
    #[arg(long)]
    pub show_console: bool,
    /// Extra QEMU arguments, after `--`.
    #[arg(last = true, value_name = "EXTRA QEMU ARGS")]
    pub qemu: Vec<String>,
}

/// Rows of the plugin's per-PC table (`pc_table=`): enough for the top functions of a boot.
pub const PC_ROWS: u64 = 2000;

/// Why observe stopped early: (status, message).
type Stop = (u8, String);

fn bad(m: impl Into<String>) -> Stop {
    (2, m.into())
}

/// The options, checked: everything a run needs, or the first problem (status 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The file QEMU loads.
    pub firmware: PathBuf,
    /// How.
    pub load: Load,
    /// The ELF symbols come from, when there is one.
    pub elf: Option<PathBuf>,
    /// Runtime minus link address.
    pub load_offset: i64,
    /// `-M`.
    pub machine: String,
    /// `-cpu`.
    pub cpu: String,
    /// `-smp`.
    pub smp: u16,
    /// Seconds.
    pub timeout_s: u64,
    /// Serial input.
    pub input: Option<PathBuf>,
    /// The expectation file, read and parsed.
    pub expect: Option<Expectation>,
    /// Output folder.
    pub out: PathBuf,
    /// Extra QEMU words.
    pub extra: Vec<String>,
}

/// The board QEMU virt emulates (what observe runs on; its `qemu_memory` is virt's RAM).
pub fn virt_board(boards: &[Board]) -> Option<&Board> {
    boards.iter().find(|b| b.qemu.as_ref().is_some_and(|q| q.machine == "virt"))
}

/// The machine of an entry EL on virt.
pub fn machine_for_el(el: &str) -> Option<&'static str> {
    match el {
        "1" => Some("virt"),
        "2" => Some("virt,virtualization=on"),
        "3" => Some("virt,secure=on"),
        _ => None,
    }
}

fn readable(opt: &str, p: &Path) -> Result<(), Stop> {
    match fs::metadata(p) {
        Ok(m) if m.is_dir() => Err(bad(format!("{opt} {}: is a folder, not a file", p.display()))),
        Ok(_) => fs::File::open(p).map(|_| ()).map_err(|e| bad(format!("{opt} {}: cannot read: {e}", p.display()))),
        Err(e) => Err(bad(format!("{opt} {}: {e}", p.display()))),
    }
}

/// Checks the options against the files they name (`root`: the repository, for the default
/// output folder).
pub fn check(o: &Options, root: &Path) -> Result<Checked, Stop> {
    let (firmware, load, what) = match (&o.firmware, &o.bios) {
        (Some(f), None) => (f.clone(), Load::Kernel, "FIRMWARE"),
        (None, Some(b)) => (b.clone(), Load::Bios, "--bios"),
        _ => return Err(bad("give the firmware to observe: FIRMWARE (an ELF or raw image, -kernel) or --bios IMAGE")),
    };
    readable(what, &firmware)?;
    let load_offset = parse_offset(&o.load_offset)
        .ok_or_else(|| bad(format!("--load-offset '{}': a number of bytes, decimal or 0x… (may be negative)", o.load_offset)))?;
    let head = {
        let mut h = [0u8; 4];
        let n = fs::File::open(&firmware).and_then(|mut f| std::io::Read::read(&mut f, &mut h)).unwrap_or(0);
        h[..n].to_vec()
    };
    let elf = match &o.elf {
        Some(e) => {
            readable("--elf", e)?;
            Some(e.clone())
        }
        None => symbols::is_elf(&head).then(|| firmware.clone()),
    };
    if load == Load::Bios && symbols::is_elf(&head) {
        return Err(bad(format!(
            "--bios {}: is an ELF; -bios takes a raw image (u-boot.bin); give an ELF as FIRMWARE (-kernel), or its raw image to --bios and the ELF to --elf",
            firmware.display()
        )));
    }
    let machine =
        machine_for_el(&o.el).ok_or_else(|| bad(format!("--el '{}': 1, 2 or 3 (the exception level QEMU virt enters at)", o.el)))?;
    let cpu = o.cpu.trim();
    if cpu.is_empty() || cpu.contains(char::is_whitespace) {
        return Err(bad(format!("--cpu '{}': a QEMU CPU model name such as cortex-a72, cortex-a53, max", o.cpu)));
    }
    let smp = o.smp.parse::<u16>().ok().filter(|n| (1..=512).contains(n) && !o.smp.starts_with(['0', '+']));
    let smp = smp.ok_or_else(|| bad(format!("--smp '{}': a number of vCPUs from 1 to 512", o.smp)))?;
    let timeout_s = o.timeout.parse::<u64>().ok().filter(|&t| t >= 1 && !o.timeout.starts_with('+'));
    let timeout_s = timeout_s.ok_or_else(|| bad(format!("--timeout '{}': a whole number of seconds, at least 1", o.timeout)))?;
    if let Some(i) = &o.input {
        // A pipe (`<(printf …)`) is fine; a folder or a missing file is not.
        if i.is_dir() || fs::File::open(i).is_err() {
            return Err(bad(format!("--input {}: not a readable file", i.display())));
        }
    }
    let expect = match &o.expect {
        Some(p) => {
            let text = fs::read_to_string(p).map_err(|e| bad(format!("--expect {}: cannot read: {e}", p.display())))?;
            Some(Expectation::parse(&text).map_err(|e| bad(format!("--expect {}: {e}", p.display())))?)
        }
        None => None,
    };
    let out = match &o.out {
        Some(d) => d.clone(),
        None => {
            let stem = firmware.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "firmware".into());
            root.join("target/observe").join(stem)
        }
    };
    if out.exists() && !out.is_dir() {
        return Err(bad(format!("--out {}: exists and is not a folder", out.display())));
    }
    for w in &o.qemu {
        if matches!(w.as_str(), "-kernel" | "-bios" | "-plugin" | "-serial") {
            return Err(bad(format!("QEMU argument '{w}' after --: observe sets it itself (FIRMWARE, --bios, the model, the console)")));
        }
    }
    Ok(Checked {
        firmware,
        load,
        elf,
        load_offset,
        machine: machine.to_string(),
        cpu: cpu.to_string(),
        smp,
        timeout_s,
        input: o.input.clone(),
        expect,
        out,
        extra: o.qemu.clone(),
    })
}

/// How a checked run's vCPUs are scheduled: several vCPUs entered at EL1 (no EL2, so no
/// VMPIDR_EL2 to name the core under -icount, whose round-robin TCG gives every callback the
/// translating vCPU's index) run under multi-threaded TCG, where the index is right, unless the
/// user chose with `-icount` or `-accel` after `--`; everything else under -icount.
pub fn scheduling(c: &Checked) -> Scheduling {
    let chosen = c.extra.iter().any(|w| w == qemu::ICOUNT[0] || w == "-accel");
    if qemu::mttcg(&c.extra) || (!chosen && c.smp > 1 && c.machine == "virt") {
        Scheduling::Mttcg
    } else {
        Scheduling::RoundRobin
    }
}

/// The QEMU command line of a checked run (the runner's, [`qemu::qemu_argv`]) with the plugin
/// argument `plugin`.
pub fn argv(c: &Checked, board: &Board, plugin: &str) -> Vec<std::ffi::OsString> {
    let q = board.qemu.as_ref().expect("virt board has qemu facts");
    let mut extra = vec!["-no-reboot".to_string()];
    if c.input.is_some() {
        extra.extend(MAIN_LOOP_WAKE.map(String::from));
    }
    if scheduling(c) == Scheduling::Mttcg && !qemu::mttcg(&c.extra) {
        extra.extend(["-accel".to_string(), "tcg,thread=multi".to_string()]);
    }
    extra.extend(c.extra.iter().cloned());
    let settings = Settings {
        machine: c.machine.clone(),
        cpu: Some((c.cpu.clone(), c.smp)),
        memory: q.memory.clone(),
        timeout_s: c.timeout_s,
        console: Console::Raw,
        extra,
        model: "on".into(),
        built: true,
    };
    let mut facts = q.clone();
    facts.kernel = QemuKernel::Elf;
    facts.kernel_args.clear();
    let line = Line { settings: &settings, qemu: &facts, kernel: &c.firmware, args: &[], plugin: Some((plugin, "guest")), load: c.load };
    qemu::qemu_argv(&line)
}

/// What every `--input` run adds to QEMU's arguments: a socket chardev that never connects and
/// retries every 200 ms. Under `-icount` nothing else wakes QEMU's main loop (virtual timers do not), so when
/// it first polled the serial input while the guest's PL011 was still disabled (QEMU 10 reads
/// no input then) it never looked at the input again: 3 of 6 U-Boot runs under the model
/// lost the whole session and sat in the autoboot countdown; with the retry timer 7 of 7 read it.
pub const MAIN_LOOP_WAKE: [&str; 2] = ["-chardev", "socket,id=cs-main-loop-wake,path=/nonexistent/cachescope-wake,reconnect-ms=200"];
/// How long the console must have been quiet before the next line of `--input` is typed.
pub const INPUT_QUIET: Duration = Duration::from_millis(300);

/// What the input feeder knows of the console: when the guest last printed, and whether QEMU
/// has exited.
#[derive(Default)]
struct ConsoleState {
    last: Mutex<Option<Instant>>,
    done: AtomicBool,
}

impl ConsoleState {
    fn printed(&self) {
        if let Ok(mut l) = self.last.lock() {
            *l = Some(Instant::now());
        }
    }

    /// Waits until the guest has printed and then been quiet for `quiet`; false once QEMU has
    /// exited.
    fn wait_quiet(&self, quiet: Duration) -> bool {
        loop {
            if self.done.load(Ordering::Relaxed) {
                return false;
            }
            if self.last.lock().ok().and_then(|l| *l).is_some_and(|t| t.elapsed() >= quiet) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The input's lines, each with its newline (a last line without one is kept as it is).
pub fn input_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split_inclusive(|&b| b == b'\n')
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended {
    /// QEMU's exit status (the firmware's, through semihosting or PSCI).
    pub status: i32,
    /// Stopped at --timeout.
    pub timed_out: bool,
    /// Wall-clock seconds.
    pub secs: f64,
}

fn run_qemu(c: &Checked, argv: &[std::ffi::OsString], env: &Env, show: bool, console: &Path, qemu_err: &Path) -> Result<Ended, Stop> {
    let io_err = |e: std::io::Error| (4, format!("cannot run qemu-system-aarch64: {e}"));
    let mut cmd = Command::new("timeout");
    env.apply(&mut cmd);
    cmd.args(["-k", "2", &c.timeout_s.to_string()]).args(argv);
    // The input goes through a pipe held open until QEMU exits (a file, or a pipe at its end,
    // makes QEMU's stdio backend stop reading: under -icount the bytes the guest had not yet
    // taken were lost), typed line by line as a person at a prompt would: each line once the
    // console has printed something and then been quiet for INPUT_QUIET. Fed at once, the input
    // raced the firmware's UART set-up (U-Boot's PL011 probe drains the receive FIFO, and QEMU
    // refills it from the pipe as fast as it is drained): one run in three lost the script.
    let console_state = Arc::new(ConsoleState::default());
    let mut feeder = None;
    match &c.input {
        Some(i) => {
            let bytes = fs::read(i).map_err(|e| bad(format!("--input {}: cannot read: {e}", i.display())))?;
            let (r, mut w) = std::io::pipe().map_err(|e| bad(format!("cannot make a pipe: {e}")))?;
            cmd.stdin(Stdio::from(r));
            let state = Arc::clone(&console_state);
            feeder = Some(std::thread::spawn(move || {
                for line in input_lines(&bytes) {
                    if !state.wait_quiet(INPUT_QUIET) || w.write_all(line).is_err() {
                        break;
                    }
                }
                w
            }));
        }
        None => {
            cmd.stdin(Stdio::null());
        }
    }
    cmd.stderr(fs::File::create(qemu_err).map_err(|e| bad(format!("{}: cannot write: {e}", qemu_err.display())))?);
    let mut saved = fs::File::create(console).map_err(|e| bad(format!("{}: cannot write: {e}", console.display())))?;
    let start = Instant::now();
    let mut q = cmd.stdout(Stdio::piped()).spawn().map_err(io_err)?;
    if let Some(mut out) = q.stdout.take() {
        let mut buf = [0u8; 8192];
        while let Ok(n) = std::io::Read::read(&mut out, &mut buf) {
            if n == 0 {
                break;
            }
            let _ = saved.write_all(&buf[..n]);
            console_state.printed();
            if show {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(&buf[..n]);
                let _ = o.flush();
            }
        }
    }
    let status = qemu::code(q.wait().map_err(io_err)?);
    console_state.done.store(true, Ordering::Relaxed);
    drop(cmd);
    // The write end closes only now (the thread returns it once everything is written, or
    // fails once QEMU has gone).
    if let Some(f) = feeder {
        drop(f.join());
    }
    Ok(Ended { status, timed_out: qemu::timed_out(status), secs: start.elapsed().as_secs_f64() })
}

/// Runs `observe`: returns the exit status (messages written).
pub fn run(ctx: &Context, o: &Options) -> u8 {
    match run_inner(ctx, o) {
        Ok(s) => s,
        Err((status, m)) => {
            eprintln!("observe: {m}");
            status
        }
    }
}

fn run_inner(ctx: &Context, o: &Options) -> Result<u8, Stop> {
    let c = check(o, &ctx.root)?;
    let env = Env::default();
    // Symbols are read before QEMU runs: a bad --elf is refused at once.
    let syms = match &c.elf {
        Some(e) => Some(Symbols::load(e, c.load_offset).map_err(|m| bad(format!("--elf: {m}")))?),
        None => None,
    };
    let board = virt_board(&ctx.boards).ok_or_else(|| bad("boards.toml has no board QEMU virt emulates"))?;
    if !qemu::on_path(&env, "qemu-system-aarch64") {
        return Err((4, "qemu-system-aarch64 is not installed (exit status 4): run scripts/bootstrap".into()));
    }
    if !env.flag("CS_CACHE_MODEL_BUILT", "the caller built the plugin").map_err(|s| bad(s.message.unwrap_or_default()))? {
        qemu::host_build(ctx, &env, "cachescope-cache-model").map_err(|out| {
            let why = out.lines().find(|l| l.starts_with("error")).or_else(|| out.lines().last()).unwrap_or("").to_string();
            bad(format!("building the cache model (host/cache-model) failed: {why}"))
        })?;
    }
    let so = env
        .nonempty("CS_CACHE_MODEL_PLUGIN")
        .map_err(|s| bad(s.message.unwrap_or_default()))?
        .map(PathBuf::from)
        .unwrap_or_else(|| ctx.host_bin.join("libcachescope_cache_model.so"));
    if !so.is_file() {
        return Err(bad(format!("the cache-model plugin {} is not built", so.display())));
    }
    fs::create_dir_all(&c.out).map_err(|e| bad(format!("--out {}: cannot create: {e}", c.out.display())))?;
    let (console, model, qemu_err, digest_file) =
        (c.out.join("console.log"), c.out.join("model.log"), c.out.join("qemu.err"), c.out.join("digest.txt"));
    let _ = fs::remove_file(&model);
    let plugin = qemu::plugin_arg(&so.display().to_string(), &format!("pc_table={PC_ROWS}"), Some(&model));
    let argv = argv(&c, board, &plugin);
    fs::write(c.out.join("command.txt"), argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ") + "\n")
        .map_err(|e| bad(format!("{}: cannot write: {e}", c.out.display())))?;
    let ended = run_qemu(&c, &argv, &env, o.show_console, &console, &qemu_err)?;
    let err_text = fs::read_to_string(&qemu_err).unwrap_or_default();
    if !err_text.is_empty() {
        eprint!("{err_text}");
    }
    if !model.is_file() {
        if let Some(line) = qemu::refusal(&err_text) {
            return Err((4, format!("QEMU refused to start (exit status 4): {line}")));
        }
        return Err((4, format!("QEMU wrote no model records (status {}): see {}", ended.status, qemu_err.display())));
    }
    let text = fs::read_to_string(&model).map_err(|e| bad(format!("{}: cannot read: {e}", model.display())))?;
    let obs = Observed::from_text(&text).map_err(|e| (1, format!("{}: {e}", model.display())))?;
    let run = firmware::ObservedRun {
        scheduling: scheduling(&c),
        firmware: c.firmware.display().to_string(),
        elf: c.elf.as_ref().map(|e| e.display().to_string()),
        status: Some(ended.status),
        timed_out: ended.timed_out,
        timeout_s: c.timeout_s,
        secs: ended.secs,
        console: console.display().to_string(),
        model: model.display().to_string(),
    };
    let mut digest = firmware::digest(&obs, syms.as_ref(), &run);
    let mut status = if ended.timed_out { 124 } else { 0 };
    if let Some(e) = &c.expect {
        let problems = e.check(&obs, syms.as_ref());
        digest += &firmware::expectation_lines(o.expect.as_deref().unwrap_or(Path::new("?")), &problems);
        if !problems.is_empty() {
            status = 1;
        }
    }
    print!("{digest}");
    let _ = std::io::stdout().flush();
    let _ = fs::write(&digest_file, &digest);
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        o: Options,
    }

    fn opts(args: &[&str]) -> Options {
        T::try_parse_from(std::iter::once("observe").chain(args.iter().copied())).unwrap().o
    }

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn refused(args: &[&str]) -> String {
        let e = check(&opts(args), &root()).unwrap_err();
        assert_eq!(e.0, 2);
        e.1
    }

    /// A real file the checks can open (this source).
    const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/observe.rs");

    #[test]
    fn defaults_are_the_interface_s() {
        let c = check(&opts(&[SRC]), &root()).unwrap();
        assert_eq!((c.machine.as_str(), c.cpu.as_str(), c.smp, c.timeout_s, c.load_offset), ("virt", "cortex-a72", 1, 120, 0));
        assert_eq!(c.load, Load::Kernel);
        assert_eq!(c.elf, None, "a source file is no ELF: no symbols");
        assert!(c.out.ends_with("target/observe/observe"), "{}", c.out.display());
        let c = check(&opts(&["--el", "3", "--smp", "2", "--load-offset", "-0x1000", "--bios", SRC, "--", "-m", "1G"]), &root()).unwrap();
        assert_eq!((c.machine.as_str(), c.smp, c.load_offset, c.load), ("virt,secure=on", 2, -0x1000, Load::Bios));
        assert_eq!(c.extra, ["-m", "1G"]);
        assert_eq!(check(&opts(&["--el", "2", SRC]), &root()).unwrap().machine, "virt,virtualization=on");
    }

    #[test]
    fn bad_options_and_files_are_named() {
        assert!(refused(&["/nonexistent/fw.elf"]).starts_with("FIRMWARE /nonexistent/fw.elf: "));
        assert!(refused(&["--el", "4", SRC]).starts_with("--el '4': 1, 2 or 3"));
        assert!(refused(&["--smp", "0", SRC]).starts_with("--smp '0'"));
        assert!(refused(&["--timeout", "0", SRC]).starts_with("--timeout '0'"));
        assert!(refused(&["--load-offset", "12k", SRC]).starts_with("--load-offset '12k'"));
        assert!(refused(&["--elf", "/nonexistent/x.elf", SRC]).starts_with("--elf /nonexistent/x.elf"));
        assert!(refused(&["--input", "/nonexistent/in", SRC]).starts_with("--input /nonexistent/in"));
        assert!(refused(&["--expect", "/nonexistent/e.toml", SRC]).starts_with("--expect /nonexistent/e.toml: cannot read"));
        assert!(refused(&["--out", SRC, SRC]).ends_with("exists and is not a folder"));
        assert!(refused(&[SRC, "--", "-kernel", "x"]).starts_with("QEMU argument '-kernel'"));
        assert!(refused(&[env!("CARGO_MANIFEST_DIR")]).ends_with("is a folder, not a file"));
        // Both or neither of FIRMWARE and --bios: clap refuses.
        assert!(T::try_parse_from(["observe"]).is_err());
        assert!(T::try_parse_from(["observe", SRC, "--bios", SRC]).is_err());
    }

    #[test]
    fn input_is_typed_line_by_line_once_the_console_is_quiet() {
        let lines: Vec<&[u8]> = input_lines(b"\nversion\npoweroff").collect();
        assert_eq!(lines, [&b"\n"[..], b"version\n", b"poweroff"]);
        assert_eq!(input_lines(b"").count(), 0);
        let s = ConsoleState::default();
        s.done.store(true, Ordering::Relaxed);
        assert!(!s.wait_quiet(Duration::ZERO), "QEMU gone: nothing more is typed");
        let s = ConsoleState::default();
        s.printed();
        let t = Instant::now();
        assert!(s.wait_quiet(Duration::from_millis(50)));
        assert!(t.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn the_command_line_is_the_runner_s_with_bios_and_no_reboot() {
        let boards = crate::boards::load(&root().join("boards.toml")).unwrap();
        let b = virt_board(&boards).unwrap();
        let c = check(&opts(&["--bios", SRC, "--cpu", "max", "--el", "2", "--", "-d", "int"]), &root()).unwrap();
        let a: Vec<String> = argv(&c, b, "/p.so,out=/m").into_iter().map(|w| w.into_string().unwrap()).collect();
        let after = |o: &str| a.iter().position(|w| w == o).map(|i| a[i + 1].as_str());
        assert_eq!(after("-M"), Some("virt,virtualization=on"));
        assert_eq!(after("-bios"), Some(SRC));
        assert!(!a.iter().any(|w| w == "-kernel" || w == "-append"), "{a:?}");
        assert_eq!((after("-cpu"), after("-smp"), after("-nic")), (Some("max"), Some("1"), Some("none")));
        assert_eq!(after("-plugin"), Some("/p.so,out=/m"));
        assert!(a.iter().any(|w| w == "-no-reboot") && a.iter().any(|w| w == "-icount"));
        assert!(a.windows(2).any(|w| w == ["-d", "int"]));
        assert!(!a.iter().any(|w| w.contains("cs-main-loop-wake")), "no input, no wake timer");
        let c = check(&opts(&["--input", SRC, SRC]), &root()).unwrap();
        let a: Vec<String> = argv(&c, b, "/p.so").into_iter().map(|w| w.into_string().unwrap()).collect();
        assert!(a.windows(2).any(|w| w == MAIN_LOOP_WAKE), "--input adds the wake timer: {a:?}");
        let c = check(&opts(&[SRC]), &root()).unwrap();
        let a: Vec<String> = argv(&c, b, "/p.so").into_iter().map(|w| w.into_string().unwrap()).collect();
        assert!(a.windows(2).any(|w| w == ["-kernel", SRC]));
    }

    #[test]
    fn several_vcpus_at_el1_run_multi_threaded_everything_else_under_icount() {
        let boards = crate::boards::load(&root().join("boards.toml")).unwrap();
        let b = virt_board(&boards).unwrap();
        let run = |args: &[&str]| {
            let c = check(&opts(args), &root()).unwrap();
            let a: Vec<String> = argv(&c, b, "/p.so").into_iter().map(|w| w.into_string().unwrap()).collect();
            (scheduling(&c), a.iter().any(|w| w == "-icount"), a.windows(2).any(|w| w == ["-accel", "tcg,thread=multi"]))
        };
        assert_eq!(run(&[SRC]), (Scheduling::RoundRobin, true, false));
        assert_eq!(run(&["--smp", "2", SRC]), (Scheduling::Mttcg, false, true));
        // With EL2, VMPIDR_EL2 names the core: reproducible round-robin.
        assert_eq!(run(&["--smp", "2", "--el", "2", SRC]), (Scheduling::RoundRobin, true, false));
        assert_eq!(run(&["--smp", "4", "--el", "3", SRC]), (Scheduling::RoundRobin, true, false));
        // The user's choice wins.
        assert_eq!(run(&["--smp", "2", SRC, "--", "-icount", "shift=1"]), (Scheduling::RoundRobin, true, false));
        assert_eq!(run(&["--smp", "2", SRC, "--", "-accel", "tcg,thread=single"]), (Scheduling::RoundRobin, true, false));
    }
}
