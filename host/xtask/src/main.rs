//! cachescope-xtask: host tasks that read the one board description (boards.toml) and the test
//! catalogue (tests/catalogue.toml).
//!
//! ```text
//! cachescope-xtask catalogue run [--kernel NAME --elf PATH]… [--test-kernels [--features F]] [-- ARGS]
//! cachescope-xtask catalogue check-logs
//! cachescope-xtask catalogue list
//! cachescope-xtask model-check [--update]
//! cachescope-xtask check-junit [--setup] [LOG…]
//! cachescope-xtask check-images [DIR] | --sdcard IMAGE BOARD [SOURCE_DIR]
//! cachescope-xtask mksdcard [OPTIONS] BOARD
//! cachescope-xtask lava-local [--validate | --install] [--args A] [--elf F] [--must-fail N]… [--keep DIR]
//! cachescope-xtask maint-check [--elf ELF] [[KERNEL/]CPU[@CORES][:ARGS]]…
//! cachescope-xtask model-records FILE [--drop-kind K]… [--source model] [--level L]
//! cachescope-xtask bench-model-ms FILE
//! cachescope-xtask bench-foreign [--kernel IMAGE] [--smp 1,2] [--reps N] [--machine M] [--cpu C] [--model V]
//! cachescope-xtask board-names
//! cachescope-xtask board-of FILE
//! cachescope-xtask board-value BOARD KEY
//! cachescope-xtask qemu-board ELF
//! cachescope-xtask qemu-run ELF [KERNEL ARGS]
//! cachescope-xtask observe [OPTIONS] FIRMWARE|--bios IMAGE [-- QEMU ARGS]
//! cachescope-xtask lava-jobs [--board B]… [--args "KERNEL ARGS"] --base-url URL --out DIR
//! cachescope-xtask lava-device [--board B] --out DIR
//! cachescope-xtask lava-check --log LAVA_RUN_LOG [--must-fail NAME]…
//! cachescope-xtask script-help [--timeout S]
//! cachescope-xtask foreign build | fetch | list | run [--only REGEX] [--jobs N]
//! ```
//!
//! Environment of `catalogue`: CS_GROUP (rows of one group), CS_ROWS (row names matching a
//! regular expression), CS_JOBS (parallel runs; default the number of CPUs), QEMU_EXTRA.
//!
//! Exit status: 0 ok, 1 a check failed, 2 bad input (usage, unknown board or key, malformed
//! boards.toml or catalogue, bad environment value, unreadable file).

#![deny(missing_docs)]

mod benchforeign;
mod benchmodel;
mod benchsmp;
mod boards;
mod catalogue;
mod checkimages;
mod checkjunit;
mod checklogs;
mod docs;
mod foreign;
mod hazards;
mod lava;
mod lavalocal;
mod maint;
mod mksdcard;
mod model_observe;
mod modelcheck;
mod observe;
mod qemu;
mod records;
mod results;
mod run;
mod scripthelp;
mod yaml;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cachescope_report::ktap::cases;
use clap::{Parser, Subcommand};

/// Host tasks for cachescope, driven by boards.toml.
#[derive(Parser, Debug)]
#[command(name = "cachescope-xtask", version, about, long_about = None)]
struct Cli {
    /// The board table (default: boards.toml at the repository root).
    #[arg(long, global = true, value_name = "FILE")]
    boards: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The test catalogue (tests/catalogue.toml): run its rows, check their logs, list them.
    Catalogue {
        /// The catalogue (default: tests/catalogue.toml at the repository root).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        #[command(subcommand)]
        command: CatalogueCommand,
    },
    /// Every maintenance instruction accounted for: the main job under the insn-count plugin
    /// (host/insn-count), once per CPU model, in parallel; the kernel's `maint-total` record must
    /// equal the DC/IC/TLBI counts QEMU executed, and its `setway` records the DC set/way count.
    MaintCheck {
        /// The main job (default: target/aarch64-unknown-none/debug/cachescope).
        #[arg(long, value_name = "ELF")]
        elf: Option<PathBuf>,
        /// Runs: `[KERNEL/]CPU[@CORES][:ARGS]`: the whole main job (or the test kernel
        /// tests/KERNEL.rs) on that CPU model (one core unless `@CORES`), or with these kernel
        /// arguments. Default: cortex-a72 (the whole main job, small benchmark sweeps),
        /// cortex-a53:only=cache cortex-a710:only=cache max:only=cache cortex-a72@4:only=smp
        /// mmu/cortex-a72 model/cortex-a72.
        runs: Vec<String>,
    },
    /// The cache model's determinism and regression check (scripts/model-check): the model
    /// kernel twice and with fast=off, identical records; the L1D records, the main-model row's
    /// records and digest equal their baselines; main-model-tb1 equals main-model; the reference
    /// simulator replays two traces to the model's totals.
    ModelCheck {
        /// Rewrite tests/model.baseline, tests/baselines/model-bench.txt and model-digest.txt from this run.
        #[arg(long)]
        update: bool,
    },
    /// What scripts/mkimage and scripts/mksdcard built, read from the files: each board's ELF,
    /// raw image and config.txt under DIR (default target/images/release), or with `--sdcard
    /// IMAGE BOARD [SOURCE_DIR]` an SD card's partition table, FAT and files.
    CheckImages {
        /// `[DIR]` or `--sdcard IMAGE BOARD [SOURCE_DIR]`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<PathBuf>,
    },
    /// A bootable SD-card image for a Raspberry Pi, built without root (scripts/mksdcard's header
    /// lists the options: --out, --images, --debug, --args, --dtb, --no-dtb, --firmware-dir,
    /// --size, --fetch-only).
    Mksdcard {
        /// Options and the board.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// LAVA without a lab (scripts/lava-local's header is the usage): strict schema validation of
    /// the generated jobs (--validate), a real lava-run of the QEMU job checked by lava-check, or
    /// only the installation (--install).
    LavaLocal {
        /// Options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// The report tool's JUnit output read back by junitparser and xunitparser (in a venv): their
    /// counts must equal the KTAP counts with the sanitizer's verdict folded in, and times must
    /// be given exactly when a log has LOG.times. Exit 1 on a difference, 2 when it cannot run.
    CheckJunit {
        /// Only make the venv.
        #[arg(long)]
        setup: bool,
        /// Logs (each must be complete and valid; default: the report tool's fixtures and every
        /// complete log in target/cachescope-logs/).
        logs: Vec<PathBuf>,
    },
    /// The cache-model plugin's speed: memory-bound loops of the model test kernel, plain TCG
    /// against TCG with the plugin, best of N, as loop time and whole-QEMU wall time.
    BenchModel {
        /// Loads per run.
        #[arg(long, default_value_t = 100_000_000)]
        accesses: u64,
        /// Runs of each configuration (the best counts).
        #[arg(long, default_value_t = 3)]
        reps: u32,
    },
    /// The main job's wall time under the cache model for several core counts (QEMU_SMP), in
    /// one series, and the ratios to the first count (issue #25's goal: ≤ 1.3× one core).
    BenchSmp {
        /// The main-job kernel (what `cargo run` boots).
        #[arg(long, default_value = "target/aarch64-unknown-none/debug/cachescope")]
        elf: PathBuf,
        /// Core counts, in the order each round runs them; the ratios are to the first.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        smp: Vec<u32>,
        /// Rounds (every count once each); the best counts.
        #[arg(long, default_value_t = 2)]
        rounds: u32,
        /// QEMU_CACHE_MODEL's value.
        #[arg(long, default_value = "on")]
        model: String,
        /// Another build of the plugin (e.g. the one before a change).
        #[arg(long)]
        plugin: Option<String>,
        /// Kernel arguments (e.g. `only=boot,cache,mmu,bench,mistakes`: without the smp suite,
        /// what idle secondaries cost).
        args: Vec<String>,
    },
    /// The cache-model plugin's speed on foreign firmware: Debian's arm64 Linux booted to the
    /// root-fs panic on QEMU virt, plain TCG against TCG with the plugin, N runs each, best and
    /// median whole-QEMU wall time and their ratios.
    BenchForeign {
        /// The Linux Image (default: CS_LINUX_IMAGE, else the newest linux-image-*-arm64 .deb in
        /// the firmware cache, extracted once).
        #[arg(long)]
        kernel: Option<PathBuf>,
        /// vCPU counts, comma-separated (one row each).
        #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2])]
        smp: Vec<u32>,
        /// Runs of each configuration (the last one given counts: scripts/bench-foreign passes
        /// BENCH_REPS first).
        #[arg(long, default_value_t = 5, overrides_with = "reps")]
        reps: u32,
        /// QEMU machine (`virt,virtualization=on` boots Linux at EL2).
        #[arg(long, default_value = "virt")]
        machine: String,
        /// QEMU CPU.
        #[arg(long, default_value = "cortex-a72")]
        cpu: String,
        /// The plugin's arguments as QEMU_CACHE_MODEL takes them (`on`: the defaults).
        #[arg(long, default_value = "on")]
        model: String,
        /// Wall-clock limit of one run, seconds (then the benchmark fails).
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Print the record lines (`# cs: {…}`) of a log or model file that pass the filters, verbatim.
    Records {
        /// The log or model file.
        file: PathBuf,
        /// Only records with this `source` (e.g. model).
        #[arg(long, value_name = "S")]
        source: Option<String>,
        /// Only records of this kind (repeatable).
        #[arg(long, value_name = "K")]
        kind: Vec<String>,
        /// Leave out records of this kind (repeatable).
        #[arg(long, value_name = "K")]
        drop_kind: Vec<String>,
        /// Only records with this `level`.
        #[arg(long, value_name = "L")]
        level: Option<String>,
        /// Print only this field's value (of every record left).
        #[arg(long, value_name = "F")]
        field: Option<String>,
    },
    /// The cache model's sanitizer on a run: every `expect-hazard` of the kernel log (the
    /// mistakes suite) reported exactly, and no hazard anywhere else. Exit 1 naming each problem.
    Hazards {
        /// The kernel's log (KTAP with records).
        log: PathBuf,
        /// The cache model's records of the same run.
        model: PathBuf,
    },
    /// What the cache model must show of the main job: the L1D/L2 knees in its miss rates, the
    /// modelled latency rising across them, PRFM stream variants with fewer demand misses than
    /// LDP, and the inferred line and ways equal to the simulated geometry. Exit 1 naming each
    /// miss.
    ModelObserve {
        /// LOG MODEL of a main-job benchmark run (all checks), then LOG MODEL pairs of further
        /// runs whose geometry sweeps are checked (e.g. under QEMU_CACHE_MODEL=rpi4), or, for an
        /// smp-suite run, its coherence transfers.
        #[arg(required = true, num_args = 2.., value_name = "LOG MODEL")]
        files: Vec<PathBuf>,
    },
    /// Print the name of every board in boards.toml, one per line.
    BoardNames,
    /// Print the board a kernel ELF or raw image was built for (its cachescope-board tag).
    BoardOf {
        /// ELF or image.
        file: PathBuf,
    },
    /// Print, as NAME=value lines, how scripts/qemu-run boots a kernel: board, machine, kernel
    /// (elf or image), kernel_args, cpu, memory, cache_model. Exit 2 when no QEMU machine emulates its board.
    QemuBoard {
        /// Kernel ELF.
        elf: PathBuf,
    },
    /// Boot a kernel under qemu-system-aarch64 (cargo's runner, through scripts/qemu-run): the
    /// command line from boards.toml and the environment, the cache model, the console, the
    /// saved run, the sanitizer's verdict (host/xtask/src/qemu.rs; docs/running.md).
    #[command(long_about = QEMU_RUN_HELP)]
    QemuRun {
        /// The kernel ELF, then its arguments (bytes as given: a command line that is not UTF-8
        /// reaches the kernel; every word after the ELF is the kernel's, `--help` too).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "ELF [KERNEL ARGS]")]
        argv: Vec<std::ffi::OsString>,
    },
    /// Run any firmware (an ELF, a raw image, or --bios u-boot.bin) under the cache model on QEMU
    /// virt and print a digest: geometry and its origin, totals per level, hazards (symbolised,
    /// with the maintenance that would have prevented each), the top functions by L1D/L2 misses
    /// and write-backs, every warning (host/xtask/src/observe.rs; README "Your own firmware").
    /// Exit 0 observed, 1 --expect not met, 2 bad options or files, 4 QEMU missing or refused,
    /// 124 timeout.
    Observe(observe::Options),
    /// Write one LAVA job definition per board (DIR/BOARD.yaml).
    LavaJobs {
        /// Only this board (repeatable; default: every board in boards.toml).
        #[arg(long, value_name = "B")]
        board: Vec<String>,
        /// Kernel arguments (QEMU: -append; Pi: they must be in the card's cmdline.txt, see docs/lava.md).
        #[arg(long, value_name = "KERNEL ARGS", default_value = "")]
        args: String,
        /// Where the artefacts are served: BASE/BOARD/cachescope.elf, BASE/BOARD/cachescope-BOARD.img.
        /// Required: there is no default, as no path of this machine is one a lab can fetch
        /// (a local run passes file:///…, as scripts/lava-local does).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// Output directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Write the local device dictionary (DIR/device.yaml) and dispatcher configuration
    /// (DIR/dispatcher.yaml) that lava-run needs to run a QEMU job on this machine.
    LavaDevice {
        /// The board whose QEMU machine to describe.
        #[arg(long, value_name = "B", default_value = "qemu-virt")]
        board: String,
        /// Output directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Check a lava-run log: LAVA's results must list every KTAP case of the run (read from
    /// the same log's console lines, or from --ktap) with the same pass/fail/skip.
    LavaCheck {
        /// lava-run's output (its log lines).
        #[arg(long, value_name = "FILE")]
        log: PathBuf,
        /// Compare with this KTAP console log instead of the console lines in the LAVA log.
        #[arg(long, value_name = "FILE")]
        ktap: Option<PathBuf>,
        /// The monitor's name (LAVA test suite).
        #[arg(long, default_value = lava::SUITE)]
        suite: String,
        /// A case that must be in LAVA's results as fail (repeatable).
        #[arg(long, value_name = "NAME")]
        must_fail: Vec<String>,
    },
    /// Every script under scripts/ answers `--help` and `-h`: exit 0, a usage line on stdout,
    /// and nothing written (run in a scratch copy of the repository whose listing is compared
    /// before and after each call). Exit 1 naming each script that does not.
    ScriptHelp {
        /// Seconds a call may take before it counts as having started its job (and is killed).
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
    /// Run the README's and docs' runnable commands (fenced blocks tagged `runnable`), in
    /// parallel; exit 1 when any exits non-zero or times out (or none is marked).
    DocsRun {
        /// Markdown files (default: README.md and docs/*.md).
        files: Vec<PathBuf>,
        /// Commands run at a time.
        #[arg(long, default_value_t = 3)]
        jobs: usize,
        /// Seconds before a command is killed.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// Firmware that knows nothing of cachescope under the cache model (scripts/foreign): our own
    /// foreign images (tests/foreign/foreign.S, EL1/2/3, correct and broken), Debian's U-Boot
    /// and Linux, each against its expectation file (tests/foreign/expect/).
    Foreign {
        #[command(subcommand)]
        command: ForeignCommand,
    },
    /// Print one key of one board (arrays: one item per line), for shell scripts.
    BoardValue {
        /// Board name.
        board: String,
        /// Key (see the top of boards.toml).
        key: String,
    },
}

#[derive(Subcommand, Debug)]
enum ForeignCommand {
    /// Assemble and link every own image (GNU as -g, binutils-aarch64-linux-gnu) into target/foreign/.
    Build,
    /// Unpack Debian's U-Boot (u-boot-qemu) and arm64 Linux kernel into the cache
    /// (CS_CACHE, else ~/.cache/cachescope; /foreign), through mksdcard's private apt configuration.
    Fetch,
    /// Run every subject side by side through `cachescope-xtask observe … --expect FILE`, each
    /// within its timeout, and check that its console reached its end line. Exit 1 naming every
    /// failed one.
    Run {
        /// Only the subjects whose name matches this regular expression.
        #[arg(long, value_name = "REGEX")]
        only: Option<String>,
        /// Subjects run at a time (default: all at once; CS_JOBS is the catalogue's).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// The subjects: name, EL, vCPUs, firmware, expectation file.
    List,
}

#[derive(Subcommand, Debug)]
enum CatalogueCommand {
    /// Run the rows of the given kernels (parallel; results in catalogue order). A row runs for
    /// the kernel of its `kernel` name built for the board its machine emulates.
    Run {
        /// Kernel name of the next --elf (the catalogue's `kernel` key; repeatable, paired with --elf).
        #[arg(long, value_name = "NAME")]
        kernel: Vec<String>,
        /// Kernel ELF of the preceding --kernel.
        #[arg(long, value_name = "PATH")]
        elf: Vec<PathBuf>,
        /// Also every test kernel of `cargo test --no-run` (tests/*.rs).
        #[arg(long)]
        test_kernels: bool,
        /// Cargo features for --test-kernels (e.g. rpi4).
        #[arg(long, value_name = "F", requires = "test_kernels")]
        features: Option<String>,
        /// An environment variable for every row, set after the row's own `env` (repeatable),
        /// e.g. `QEMU_CACHE_MODEL=fast=off` to run model rows without the plugin's shortcut.
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Where the rows' logs go (default target/cachescope-logs): a run with `--env` keeps
        /// the usual logs of the same rows.
        #[arg(long, value_name = "DIR")]
        logs: Option<PathBuf>,
        /// Kernel arguments appended to every row.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Strict KTAP v1 + records check of the rows' logs: runs that end normally must pass,
    /// cut-short runs must be rejected.
    CheckLogs,
    /// One line per row: name, kernel, machine, groups.
    List,
}

/// `qemu-run --help`: the environment and exit status (the module's docs say the same at length).
const QEMU_RUN_HELP: &str = "Boot a kernel under qemu-system-aarch64: cargo's runner (scripts/qemu-run execs this).

Environment (docs/running.md; each checked before QEMU starts, a bad value exits 2 naming it):
  QEMU_MACHINE  machine (default: the board's qemu_machine in boards.toml), e.g. virt,secure=on
  QEMU_CPU      CPU model (default cortex-a72; raspi4b has its own fixed CPU)
  QEMU_SMP      number of cores, 1 to 999 (default the board's qemu_smp: 2 on virt; raspi4b always 4)
  QEMU_MEM      RAM, e.g. 512M or 2G (default 512M on virt; raspi4b is fixed at 2G)
  QEMU_EXTRA    extra QEMU arguments, appended (-dtb FILE.dts is compiled with dtc first)
  QEMU_TIMEOUT  whole seconds >= 1 before QEMU is killed (default 120)
  CS_LOG        the file the console stream is saved to (default CS_RUNS/NAME-DATE-TIME-PID.log;
                the newest 20 complete runs are kept)
  CS_RUNS       the folder of saved runs (default target/cachescope-logs/runs)
  QEMU_CACHE_MODEL  off | on | rpi4 | rpi5 | dsu2x4 | key=value,... (default: the board's qemu_cache_model):
                the cache-model plugin, -icount, argv0 cachescope+model=PROFILE
  CS_MODEL_LOG  file for the cache model's records (default CS_LOG.model)
  CS_MODEL_MARKERS  all | declarations: the plugin's markers= argument (declarations: only the
                markers that declare the sanitizer's expectations; needs the cache model)
  CS_CONSOLE    human (the report's console, the digest, the saved log's path) or raw
  CS_VERBOSE    1: the human console shows the whole stream
  CS_NO_MATRIX  1: a test kernel (an ELF under .../deps/) runs once, not per catalogue row
  CS_CACHE_MODEL_BUILT  1: the plugin and the report tool are built (no cargo calls)
  CS_CACHE_MODEL_PLUGIN  the plugin's .so

Exit status: the kernel's own (0 passed, 1 a case failed, 2 refused arguments, 101 panic), or the
runner's: 1 the sanitizer's verdict failed a passing run, 2 a bad environment variable or a kernel
of another board, 4 QEMU is missing or refused to start, 124 timeout.";

/// Why a command stopped.
enum Failure {
    /// Bad input: exit 2.
    Usage(String),
    /// A check that ran and found problems: exit 1.
    Check(Vec<String>),
    /// A check that ran, failed and has said why: exit 1.
    Quiet,
    /// A run that has said everything: exit with its status.
    Status(u8),
}

fn usage(e: impl std::fmt::Display) -> Failure {
    Failure::Usage(e.to_string())
}

use run::say;

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| usage(format!("{}: cannot read: {e}", path.display())))
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| usage(format!("{}: cannot write: {e}", path.display())))
}

fn mkdir(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| usage(format!("{}: cannot create: {e}", dir.display())))
}

/// Prints (passed, what) findings as numbered `ok`/`not ok` lines and one `# NAME: N ok, M not ok`
/// summary (with `context` after it); fails quietly when any did not pass.
fn report_findings(findings: &[(bool, String)], name: &str, context: &str) -> Result<(), Failure> {
    let bad = findings.iter().filter(|(ok, _)| !ok).count();
    for (i, (ok, what)) in findings.iter().enumerate() {
        say(&format!("{} {} {what}", if *ok { "ok" } else { "not ok" }, i + 1));
    }
    say(&format!("# {name}: {} ok, {bad} not ok{context}", findings.len() - bad));
    if bad == 0 {
        Ok(())
    } else {
        Err(Failure::Quiet)
    }
}

/// What `catalogue run` was asked to run.
struct RunArgs {
    kernel: Vec<String>,
    elf: Vec<PathBuf>,
    test_kernels: bool,
    features: Option<String>,
    env: Vec<String>,
    args: Vec<String>,
}

/// `catalogue run` (also a test kernel's `cargo test`: scripts/qemu-run runs its catalogue rows).
fn catalogue_run(
    boards_path: &Path,
    rows: &[catalogue::Row],
    filter: &run::Filter,
    root: &Path,
    logs: PathBuf,
    asked: RunArgs,
) -> Result<(), Failure> {
    let RunArgs { kernel, elf, test_kernels, features, env, args } = asked;
    let boards = boards::load(boards_path).map_err(usage)?;
    let env_override = env
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => Ok((k.to_string(), v.to_string())),
            _ => Err(usage(format!("--env '{kv}': expected KEY=VALUE"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = run::jobs_from_env().map_err(usage)?;
    if kernel.len() != elf.len() {
        return Err(usage("--kernel NAME and --elf PATH come in pairs"));
    }
    let mut pairs: Vec<(String, PathBuf)> = kernel.into_iter().zip(elf).collect();
    if test_kernels {
        pairs.extend(run::discover_test_kernels(root, features.as_deref()).map_err(usage)?);
    }
    if pairs.is_empty() {
        return Err(usage("no kernel: give --kernel NAME --elf PATH or --test-kernels"));
    }
    let mut kernels = Vec::new();
    for (name, elf) in pairs {
        let board = run::board_of(&elf, &boards).map_err(usage)?;
        kernels.push(run::Kernel { name, elf, board });
    }
    let planned = run::plan(rows, &kernels, &boards, filter).map_err(usage)?;
    let mut names: Vec<String> = kernels.iter().map(|k| format!("{} ({})", k.name, k.board)).collect();
    names.dedup();
    let title = names.join(", ");
    if planned.is_empty() {
        say(&format!("catalogue: no rows for {title} ({})", filter.describe()));
        return Ok(());
    }
    mkdir(&logs)?;
    // Rows under the cache model share one plugin build, made here once.
    let model_asked = |env: &[(String, String)]| env.iter().any(|(k, v)| k == "QEMU_CACHE_MODEL" && v != "off");
    if planned.iter().any(|j| model_asked(&j.row.env)) || model_asked(&env_override) {
        records::build_plugin(root).map_err(usage)?;
    }
    let runner = run::Runner {
        ctx: qemu::Context::new(root, boards.clone()),
        logs,
        extra_args: args,
        jobs,
        qemu_extra: std::env::var("QEMU_EXTRA").unwrap_or_default(),
        env_override,
    };
    let failed = runner.run_all(&planned, &title);
    if failed > 0 {
        return Err(Failure::Quiet);
    }
    Ok(())
}

/// `lava-jobs`: one job definition per board (all when `chosen` is empty) in `out`; the files written.
fn lava_jobs(
    all: &[boards::Board],
    chosen: &[String],
    args: String,
    base_url: Option<String>,
    out: &Path,
) -> Result<Vec<PathBuf>, Failure> {
    let chosen: Vec<&boards::Board> = if chosen.is_empty() {
        all.iter().collect()
    } else {
        chosen.iter().map(|b| boards::find(all, b)).collect::<Result<_, _>>().map_err(usage)?
    };
    let base_url = base_url.filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        usage(
            "lava-jobs needs --base-url URL: where the lab's worker downloads BOARD/cachescope.elf and \
             BOARD/cachescope-BOARD.img (e.g. https://files.example.org/cachescope; for a local lava-run \
             file:///ABSOLUTE/DIR). No job was written.",
        )
    })?;
    let opts = lava::JobOptions { args, base_url };
    mkdir(out)?;
    let mut written = Vec::new();
    for b in chosen {
        let job = lava::job(b, &opts).map_err(usage)?;
        let path = out.join(format!("{}.yaml", b.name));
        let head = format!(
            "# LAVA job for {} (device type {}), generated by `cachescope-xtask lava-jobs` from boards.toml.\n# Regenerate instead of editing; see docs/lava.md.\n",
            b.name, b.lava_device_type
        );
        write(&path, &(head + &yaml::to_yaml(&job)))?;
        written.push(path);
    }
    Ok(written)
}

/// `lava-device`: the local device dictionary and dispatcher configuration in `out`; the files written.
fn lava_device(all: &[boards::Board], board: &str, out: &Path) -> Result<Vec<PathBuf>, Failure> {
    let b = boards::find(all, board).map_err(usage)?;
    let device = lava::local_device(b).map_err(usage)?;
    mkdir(out)?;
    let head = format!("# Local LAVA device dictionary: device type qemu, board {} (cachescope-xtask lava-device).\n", b.name);
    write(&out.join("device.yaml"), &(head + &yaml::to_yaml(&device)))?;
    write(&out.join("dispatcher.yaml"), &yaml::to_yaml(&lava::local_dispatcher()))?;
    Ok(vec![out.join("device.yaml"), out.join("dispatcher.yaml")])
}

/// `lava-check`: LAVA's results against the KTAP cases of the run (the LAVA log's console lines,
/// or `ktap_text`).
fn lava_check(log_text: &str, ktap_text: Option<&str>, suite: &str, must_fail: &[String]) -> Result<(), Failure> {
    let lava_log = results::parse_log(log_text);
    let run = match ktap_text {
        Some(t) => cases::parse(t.lines()),
        None => cases::parse(lava_log.target.iter().map(String::as_str)),
    };
    let a = results::check(&lava_log, &run, suite, must_fail).map_err(Failure::Check)?;
    say(&format!(
        "lava-check: LAVA's results list all {} KTAP cases ({} suites) with the same outcome: {} pass, {} fail, {} skip",
        a.cases, a.suites, a.pass, a.fail, a.skip
    ));
    Ok(())
}

fn run(cli: Cli) -> Result<(), Failure> {
    let boards_path = cli.boards.unwrap_or_else(|| repo_root().join("boards.toml"));
    match cli.command {
        Command::Catalogue { file, command } => {
            let path = file.unwrap_or_else(|| repo_root().join("tests/catalogue.toml"));
            let rows = catalogue::load(&path).map_err(usage)?;
            let filter = run::Filter::from_env().map_err(usage)?;
            let root = repo_root();
            let logs = root.join("target/cachescope-logs");
            match command {
                CatalogueCommand::Run { kernel, elf, test_kernels, features, env, logs: logs_dir, args } => {
                    let logs = logs_dir.map_or(logs, |d| if d.is_absolute() { d } else { root.join(d) });
                    let asked = RunArgs { kernel, elf, test_kernels, features, env, args };
                    catalogue_run(&boards_path, &rows, &filter, &root, logs, asked)
                }
                CatalogueCommand::CheckLogs => {
                    if checklogs::check(&rows, &logs, &root, &filter).map_err(usage)? {
                        Ok(())
                    } else {
                        Err(Failure::Quiet)
                    }
                }
                CatalogueCommand::List => {
                    for r in rows.iter().filter(|r| filter.selects(r)) {
                        say(&format!("{:<22} {:<11} {:<34} {}", r.name, r.kernel, r.machine, r.groups.join(",")));
                    }
                    Ok(())
                }
            }
        }
        Command::MaintCheck { elf, runs } => {
            let root = repo_root();
            let elf = elf.unwrap_or_else(|| root.join("target/aarch64-unknown-none/debug/cachescope"));
            let cpus = if runs.is_empty() { maint::DEFAULT_RUNS.map(String::from).to_vec() } else { runs };
            let jobs = run::jobs_from_env().map_err(usage)?;
            let boards = boards::load(&boards_path).map_err(usage)?;
            if maint::maint_check(&root, &elf, &boards, &cpus, jobs).map_err(usage)? {
                Ok(())
            } else {
                Err(Failure::Quiet)
            }
        }
        Command::ModelCheck { update } => {
            let ctx = qemu::Context::new(&repo_root(), boards::load(&boards_path).map_err(usage)?);
            match modelcheck::model_check(&ctx, update) {
                Ok(true) => Ok(()),
                Ok(false) => Err(Failure::Quiet),
                Err(e) => Err(usage(e)),
            }
        }
        Command::CheckImages { args } => {
            let root = repo_root();
            let boards = boards::load(&boards_path).map_err(usage)?;
            let asked = if args.first().is_some_and(|a| a.as_os_str() == "--sdcard") {
                if !(3..=4).contains(&args.len()) {
                    eprintln!("usage: check-images --sdcard IMAGE BOARD [SOURCE_DIR]");
                    return Err(Failure::Status(2));
                }
                checkimages::Asked::Sdcard(args[1].clone(), args[2].display().to_string(), args.get(3).cloned())
            } else {
                checkimages::Asked::Images(args.first().cloned())
            };
            match checkimages::check_images(&root, &boards_path, &boards, asked) {
                Ok(true) => Ok(()),
                Ok(false) => Err(Failure::Quiet),
                Err(message) => {
                    if let Some(m) = message {
                        eprintln!("{m}");
                    }
                    Err(Failure::Status(2))
                }
            }
        }
        Command::Mksdcard { args } => {
            let root = repo_root();
            let stop = |mksdcard::Stop(status, message): mksdcard::Stop| {
                if let Some(m) = message {
                    eprintln!("mksdcard: {m}");
                }
                Failure::Status(status)
            };
            match mksdcard::parse(&args).map_err(stop)? {
                mksdcard::Parsed::Help => {
                    say(&scripthelp::header(&read(&root.join("scripts/mksdcard"))?));
                    Ok(())
                }
                mksdcard::Parsed::Run(o) => {
                    let boards = boards::load(&boards_path).map_err(usage)?;
                    match mksdcard::mksdcard(&root, &boards_path, &boards, &o).map_err(stop)? {
                        0 => Ok(()),
                        status => Err(Failure::Status(status)),
                    }
                }
            }
        }
        Command::LavaLocal { args } => {
            let root = repo_root();
            let stop = |lavalocal::Stop(status, message): lavalocal::Stop| {
                if let Some(m) = message {
                    eprintln!("lava-local: {m}");
                }
                Failure::Status(status)
            };
            let Some(o) = lavalocal::parse(&args).map_err(stop)? else {
                say(&scripthelp::header(&read(&root.join("scripts/lava-local"))?));
                return Ok(());
            };
            let boards = boards::load(&boards_path).map_err(usage)?;
            lavalocal::lava_local(&root, &boards, &o).map_err(stop)
        }
        Command::CheckJunit { setup, logs } => {
            let root = repo_root();
            let ctx = qemu::Context::new(&root, Vec::new());
            match checkjunit::check_junit(&root, &ctx.host_bin, setup, &logs) {
                Ok(true) => Ok(()),
                Ok(false) => Err(Failure::Quiet),
                Err(checkjunit::SetupFailed) => Err(Failure::Status(2)),
            }
        }
        Command::BenchForeign { kernel, smp, reps, machine, cpu, model, timeout } => {
            let root = repo_root();
            if smp.is_empty() || smp.contains(&0) {
                return Err(usage("--smp: vCPU counts of at least 1"));
            }
            let kernel = benchforeign::find_kernel(kernel).map_err(usage)?;
            let timeout = std::time::Duration::from_secs(timeout.max(1));
            let ctx = qemu::Context::new(&root, boards::load(&boards_path).map_err(usage)?);
            // virt's RAM, as observe and the foreign subjects give it to QEMU.
            let memory = observe::virt_board(&ctx.boards)
                .and_then(|b| b.qemu.as_ref()?.memory.clone())
                .ok_or_else(|| usage("boards.toml: no virt board with a qemu_memory"))?;
            let o = benchforeign::Options { kernel, smp, reps: reps.max(1), machine, cpu, memory, model, timeout };
            benchforeign::bench_foreign(&root, &ctx.host_bin, &o).map_err(usage)
        }
        Command::BenchSmp { elf, smp, rounds, model, plugin, args } => {
            let root = repo_root();
            benchsmp::bench_smp(&root, &root.join(elf), &args, &smp, rounds.max(1), &model, plugin.as_deref()).map_err(usage)
        }
        Command::BenchModel { accesses, reps } => benchmodel::bench_model(&repo_root(), accesses, reps.max(1)).map_err(usage),
        Command::Records { file, source, kind, drop_kind, level, field } => {
            let text = String::from_utf8_lossy(&std::fs::read(&file).map_err(|e| usage(format!("{}: cannot read: {e}", file.display())))?)
                .into_owned();
            let f = records::Select { source, kind, drop_kind, level };
            for (line, rec) in records::records(&text) {
                if !f.keeps(&rec) {
                    continue;
                }
                match &field {
                    None => say(line),
                    Some(name) => match rec.get(name) {
                        Some(serde_json::Value::String(s)) => say(s),
                        Some(v) => say(&v.to_string()),
                        None => {}
                    },
                }
            }
            Ok(())
        }
        Command::BoardNames => {
            for b in boards::load(&boards_path).map_err(usage)? {
                say(&b.name);
            }
            Ok(())
        }
        Command::BoardOf { file } => {
            let boards = boards::load(&boards_path).map_err(usage)?;
            say(&run::board_of(&file, &boards).map_err(usage)?);
            Ok(())
        }
        Command::QemuBoard { elf } => {
            let boards = boards::load(&boards_path).map_err(usage)?;
            let name = run::board_of(&elf, &boards).map_err(usage)?;
            let b = boards::find(&boards, &name).map_err(usage)?;
            let q = b.qemu.as_ref().ok_or_else(|| {
                usage(format!(
                    "{} is built for '{name}', which no QEMU machine emulates; make SD-card images with scripts/mkimage / scripts/mksdcard",
                    elf.display()
                ))
            })?;
            say(&format!("board={name}"));
            say(&format!("machine={}", q.machine));
            say(&format!("kernel={}", if q.kernel == boards::QemuKernel::Image { "image" } else { "elf" }));
            say(&format!("kernel_args={}", q.kernel_args));
            say(&format!("cpu={}", q.cpu.as_deref().unwrap_or("")));
            say(&format!("memory={}", q.memory.as_deref().unwrap_or("")));
            say(&format!("cache_model={}", q.cache_model));
            // Every machine that emulates some board, with its board, for QEMU_MACHINE checks.
            for other in &boards {
                if let Some(oq) = &other.qemu {
                    say(&format!("machine_board={}:{}:{}", oq.machine, other.name, other.feature));
                }
            }
            Ok(())
        }
        Command::QemuRun { argv } => {
            let elf = PathBuf::from(argv.first().cloned().unwrap_or_default());
            let args = argv.get(1..).unwrap_or_default().to_vec();
            let env = qemu::Env::default();
            let root = repo_root();
            let kernel = qemu::matrix_kernel(&elf, &env).map_err(|e| {
                eprintln!("qemu-run: {}", e.message.unwrap_or_default());
                Failure::Status(e.status)
            })?;
            if let Some(name) = kernel {
                // A test kernel runs once per matching catalogue row (its machine matrix).
                let path = root.join("tests/catalogue.toml");
                let rows = catalogue::load(&path).map_err(usage)?;
                let filter = run::Filter::from_env().map_err(usage)?;
                let args = args
                    .into_iter()
                    .map(|a| a.into_string().map_err(|a| usage(format!("kernel argument '{}' is not UTF-8", a.to_string_lossy()))))
                    .collect::<Result<_, _>>()?;
                let asked = RunArgs { kernel: vec![name], elf: vec![elf], test_kernels: false, features: None, env: Vec::new(), args };
                return catalogue_run(&boards_path, &rows, &filter, &root, root.join("target/cachescope-logs"), asked);
            }
            let boards = boards::load(&boards_path).map_err(usage)?;
            let ctx = qemu::Context::new(&root, boards);
            match qemu::run(&ctx, &elf, &args, &env, &qemu::Io::Inherit) {
                0 => Ok(()),
                status => Err(Failure::Status(status)),
            }
        }
        Command::Observe(o) => {
            let boards = boards::load(&boards_path).map_err(usage)?;
            let ctx = qemu::Context::new(&repo_root(), boards);
            match observe::run(&ctx, &o) {
                0 => Ok(()),
                status => Err(Failure::Status(status)),
            }
        }
        Command::LavaJobs { board, args, base_url, out } => {
            let all = boards::load(&boards_path).map_err(usage)?;
            for path in lava_jobs(&all, &board, args, base_url, &out)? {
                say(&path.display().to_string());
            }
            Ok(())
        }
        Command::LavaDevice { board, out } => {
            let all = boards::load(&boards_path).map_err(usage)?;
            for path in lava_device(&all, &board, &out)? {
                say(&path.display().to_string());
            }
            Ok(())
        }
        Command::LavaCheck { log, ktap: ktap_path, suite, must_fail } => {
            let ktap_text = ktap_path.as_deref().map(read).transpose()?;
            lava_check(&read(&log)?, ktap_text.as_deref(), &suite, &must_fail)
        }
        Command::ModelObserve { files } => {
            if files.len() % 2 != 0 {
                return Err(usage("model-observe takes LOG MODEL pairs".to_string()));
            }
            let mut findings = Vec::new();
            for (i, pair) in files.chunks(2).enumerate() {
                let (log, model) = (pair[0].display().to_string(), pair[1].display().to_string());
                let (run, d) = model_observe::load(&log, &model).map_err(usage)?;
                let smp = d.phases.iter().any(|p| p.parsed.bench == "pingpong");
                // The first pair is the main job: its benchmarks' checks always, and the smp
                // suite's as well when it ran on several cores (the default); the others are
                // geometry runs, or smp runs.
                let mut these = match (i, smp) {
                    (0, _) => model_observe::benchmarks(&run, &d),
                    (_, false) => model_observe::geometry(&run, &d),
                    (_, true) => Vec::new(),
                };
                if smp {
                    these.extend(model_observe::smp(&run, &d));
                }
                let profile = d.profile_name().unwrap_or_else(|| "?".into());
                findings.extend(these.into_iter().map(|(ok, w)| (ok, format!("[{log}, profile {profile}] {w}"))));
            }
            report_findings(&findings, "model-observe", "")
        }
        Command::Hazards { log, model } => {
            let findings = hazards::check(&read(&log)?, &read(&model)?).map_err(|e| usage(format!("{}: {e}", model.display())))?;
            report_findings(&findings, "hazards", &format!(" ({} and {})", log.display(), model.display()))
        }
        Command::Foreign { command } => {
            let root = repo_root();
            // virt's RAM, as observe gives it to QEMU (boards.toml `qemu_memory`).
            let ram = || -> Result<u64, Failure> {
                let boards = boards::load(&boards_path).map_err(usage)?;
                let m = observe::virt_board(&boards)
                    .and_then(|b| b.qemu.as_ref()?.memory.clone())
                    .ok_or_else(|| usage(format!("{}: no virt board with a qemu_memory", boards_path.display())))?;
                foreign::memory_bytes(&m).ok_or_else(|| usage(format!("{}: qemu_memory '{m}' is not a size", boards_path.display())))
            };
            match command {
                ForeignCommand::Build => {
                    let built = foreign::build(&root).map_err(usage)?;
                    say(&format!("foreign: {} images in {}", built.len(), root.join(foreign::IMAGE_DIR).display()));
                    Ok(())
                }
                ForeignCommand::Fetch => {
                    for line in foreign::fetch().map_err(usage)? {
                        say(&format!("foreign: {line}"));
                    }
                    Ok(())
                }
                ForeignCommand::List => {
                    for s in foreign::subjects(&root, &foreign::debian_dir(), ram()?) {
                        say(&format!("{} el{} smp{} {} {}", s.name, s.el, s.smp, s.firmware.display(), s.expect.display()));
                    }
                    Ok(())
                }
                ForeignCommand::Run { only, jobs } => {
                    let only = only.map(|r| regex::Regex::new(&r).map_err(|e| usage(format!("--only: {e}")))).transpose()?;
                    let subjects: Vec<_> = foreign::subjects(&root, &foreign::debian_dir(), ram()?)
                        .into_iter()
                        .filter(|s| only.as_ref().is_none_or(|r| r.is_match(&s.name)))
                        .collect();
                    if subjects.is_empty() {
                        return Err(usage("--only matches no subject (cachescope-xtask foreign list)"));
                    }
                    let with = foreign::RunWith {
                        observe: std::env::current_exe().map_err(|e| usage(format!("cannot find this binary for observe: {e}")))?,
                        out: root.join(foreign::IMAGE_DIR).join("runs"),
                    };
                    if foreign::run_all(&subjects, &with, jobs.unwrap_or(subjects.len())) {
                        Ok(())
                    } else {
                        Err(Failure::Quiet)
                    }
                }
            }
        }
        Command::ScriptHelp { timeout } => {
            let findings = scripthelp::check(&repo_root(), std::time::Duration::from_secs(timeout)).map_err(usage)?;
            report_findings(&findings, "script-help", " (every script under scripts/, --help and -h)")
        }
        Command::DocsRun { files, jobs, timeout } => {
            let root = repo_root();
            let files = if files.is_empty() {
                let mut f = vec![root.join("README.md")];
                let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
                    .map_err(|e| usage(format!("docs/: {e}")))?
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "md"))
                    .collect();
                docs.sort();
                f.extend(docs);
                f
            } else {
                files
            };
            match docs::run(&root, &files, jobs, std::time::Duration::from_secs(timeout)) {
                Ok(0) => Ok(()),
                Ok(_) => Err(Failure::Quiet),
                Err(e) => Err(usage(e)),
            }
        }
        Command::BoardValue { board, key } => {
            let text = read(&boards_path)?;
            let value = boards::value_text(&text, &board, &key).map_err(|e| usage(format!("{}: {e}", boards_path.display())))?;
            if !value.is_empty() {
                say(&value);
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("cachescope-xtask: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Check(problems)) => {
            for p in &problems {
                eprintln!("lava-check: {p}");
            }
            eprintln!("lava-check: FAILED ({} problem(s))", problems.len());
            ExitCode::from(1)
        }
        Err(Failure::Quiet) => ExitCode::from(1),
        Err(Failure::Status(status)) => ExitCode::from(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// cargo's runner gets `ELF ARGS…`: every word after the ELF is the kernel's (`cargo run --
    /// --help` asks the kernel, not this program), bytes as given.
    #[test]
    fn qemu_run_passes_every_word_after_the_elf() {
        use std::os::unix::ffi::OsStringExt;
        let raw = std::ffi::OsString::from_vec(b"only=boot\xff".to_vec());
        let cli =
            Cli::try_parse_from([OsString::from("x"), "qemu-run".into(), "k".into(), "--help".into(), "-x".into(), raw.clone()]).unwrap();
        let Command::QemuRun { argv } = cli.command else { panic!("not qemu-run") };
        assert_eq!(argv, [OsString::from("k"), "--help".into(), "-x".into(), raw]);
        assert!(Cli::try_parse_from(["x", "qemu-run"]).is_err(), "the ELF is required");
        assert_eq!(Cli::try_parse_from(["x", "qemu-run", "--help"]).unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp);
    }
}
