//! cachescope-xtask: host tasks that read the one board description (boards.toml).
//!
//! ```text
//! cachescope-xtask lava-jobs [--board B]… [--args "KERNEL ARGS"] [--base-url URL] --out DIR
//! cachescope-xtask lava-device [--board B] --out DIR
//! cachescope-xtask lava-check --log LAVA_RUN_LOG [--must-fail NAME]…
//! cachescope-xtask board-value BOARD KEY
//! ```
//!
//! Exit status: 0 ok, 1 a check failed, 2 bad input (usage, unknown board, malformed
//! boards.toml, unreadable file).

#![deny(missing_docs)]

mod boards;
mod ktap;
mod lava;
mod results;
mod yaml;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Write one LAVA job definition per board (DIR/BOARD.yaml).
    LavaJobs {
        /// Only this board (repeatable; default: every board in boards.toml).
        #[arg(long, value_name = "B")]
        board: Vec<String>,
        /// Kernel arguments (QEMU: -append; Pi: they must be in the card's cmdline.txt, see docs/lava.md).
        #[arg(long, value_name = "KERNEL ARGS", default_value = "")]
        args: String,
        /// Where the artefacts are served: BASE/BOARD/cachescope.elf, BASE/BOARD/cachescope-BOARD.img
        /// (default: file://REPO/target/lava/artefacts).
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
    /// Print one key of one board (arrays: one item per line), for shell scripts.
    BoardValue {
        /// Board name.
        board: String,
        /// Key (see the top of boards.toml).
        key: String,
    },
}

/// Why a command stopped.
enum Failure {
    /// Bad input: exit 2.
    Usage(String),
    /// A check that ran and found problems: exit 1.
    Check(Vec<String>),
}

fn usage(e: impl std::fmt::Display) -> Failure {
    Failure::Usage(e.to_string())
}

/// Prints a line; a closed stdout (`| head -1`) is not an error worth a panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

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

fn run(cli: Cli) -> Result<(), Failure> {
    let boards_path = cli.boards.unwrap_or_else(|| repo_root().join("boards.toml"));
    match cli.command {
        Command::LavaJobs { board, args, base_url, out } => {
            let all = boards::load(&boards_path).map_err(usage)?;
            let chosen: Vec<&boards::Board> = if board.is_empty() {
                all.iter().collect()
            } else {
                board.iter().map(|b| boards::find(&all, b)).collect::<Result<_, _>>().map_err(usage)?
            };
            let base_url = base_url.unwrap_or_else(|| format!("file://{}/target/lava/artefacts", repo_root().display()));
            let opts = lava::JobOptions { args, base_url };
            mkdir(&out)?;
            for b in chosen {
                let job = lava::job(b, &opts).map_err(usage)?;
                let path = out.join(format!("{}.yaml", b.name));
                let head = format!(
                    "# LAVA job for {} (device type {}), generated by `cachescope-xtask lava-jobs` from boards.toml.\n# Regenerate instead of editing; see docs/lava.md.\n",
                    b.name, b.lava_device_type
                );
                write(&path, &(head + &yaml::to_yaml(&job)))?;
                say(&path.display().to_string());
            }
            Ok(())
        }
        Command::LavaDevice { board, out } => {
            let all = boards::load(&boards_path).map_err(usage)?;
            let b = boards::find(&all, &board).map_err(usage)?;
            let device = lava::local_device(b).map_err(usage)?;
            mkdir(&out)?;
            let head = format!("# Local LAVA device dictionary: device type qemu, board {} (cachescope-xtask lava-device).\n", b.name);
            write(&out.join("device.yaml"), &(head + &yaml::to_yaml(&device)))?;
            write(&out.join("dispatcher.yaml"), &yaml::to_yaml(&lava::local_dispatcher()))?;
            say(&out.join("device.yaml").display().to_string());
            say(&out.join("dispatcher.yaml").display().to_string());
            Ok(())
        }
        Command::LavaCheck { log, ktap: ktap_path, suite, must_fail } => {
            let lava_log = results::parse_log(&read(&log)?);
            let run = match &ktap_path {
                Some(p) => ktap::parse(read(p)?.lines()),
                None => ktap::parse(lava_log.target.iter().map(String::as_str)),
            };
            let a = results::check(&lava_log, &run, &suite, &must_fail).map_err(Failure::Check)?;
            say(&format!(
                "lava-check: LAVA's results list all {} KTAP cases ({} suites) with the same outcome: {} pass, {} fail, {} skip",
                a.cases, a.suites, a.pass, a.fail, a.skip
            ));
            Ok(())
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
    }
}
