//! `catalogue run`: the catalogue's rows for one or more kernels, booted through scripts/qemu-run
//! in parallel, reported in catalogue order as KTAP-like lines.
//!
//! Each row runs exactly as scripts/run-catalogue ran it: scripts/qemu-run with
//! `QEMU_CACHE_MODEL=off` and `CS_CONSOLE=raw` unless the row's `env` says otherwise, the row's `env`,
//! `CS_MODEL_LOG=target/cachescope-logs/ROW.model`, `CS_NO_MATRIX=1`, `QEMU_MACHINE`, `QEMU_CPU`
//! (default cortex-a72), `QEMU_EXTRA` (the row's `qemu` then the caller's), `QEMU_TIMEOUT`; its
//! output (stdout and stderr) goes to target/cachescope-logs/ROW.log with CRs removed, and the
//! host time at which each of its lines arrived (seconds since the row started, read line by
//! line from the pipe as QEMU writes it) to ROW.log.times ([`cachescope_report::times`]: the
//! JUnit `time` attributes come from it).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use crate::boards::Board;
use crate::catalogue::{first_unmatched, Row};

/// A kernel to run rows for.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its name in the catalogue's `kernel` key.
    pub name: String,
    /// The ELF.
    pub elf: PathBuf,
    /// The board it was built for (its `cachescope-board=` tag).
    pub board: String,
}

/// Row selection from the environment.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// CS_GROUP: only rows in this group.
    pub group: Option<String>,
    /// CS_ROWS: only rows whose name matches.
    pub rows: Option<regex::Regex>,
}

impl Filter {
    /// Reads CS_GROUP and CS_ROWS; a CS_ROWS that is not a regular expression is an error.
    pub fn from_env() -> Result<Filter, String> {
        let group = std::env::var("CS_GROUP").ok().filter(|g| !g.is_empty());
        let rows = match std::env::var("CS_ROWS") {
            Ok(r) if !r.is_empty() => Some(regex::Regex::new(&r).map_err(|e| format!("CS_ROWS='{r}' is not a regular expression: {e}"))?),
            _ => None,
        };
        Ok(Filter { group, rows })
    }

    /// Whether the row is selected.
    pub fn selects(&self, row: &Row) -> bool {
        self.group.as_ref().is_none_or(|g| row.in_group(g)) && self.rows.as_ref().is_none_or(|r| r.is_match(&row.name))
    }

    /// For messages.
    pub fn describe(&self) -> String {
        format!("CS_GROUP='{}' CS_ROWS='{}'", self.group.as_deref().unwrap_or(""), self.rows.as_ref().map(|r| r.as_str()).unwrap_or(""))
    }
}

/// CS_JOBS, or the number of CPUs.
pub fn jobs_from_env() -> Result<usize, String> {
    match std::env::var("CS_JOBS") {
        Ok(v) if !v.is_empty() => match v.parse::<usize>() {
            Ok(n) if (1..=256).contains(&n) => Ok(n),
            _ => Err(format!("CS_JOBS='{v}': a number of parallel runs from 1 to 256")),
        },
        _ => Ok(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)),
    }
}

/// The board tag in a kernel ELF or image (`cachescope-board=NAME`), as scripts/board-of reads it.
pub fn board_tag(bytes: &[u8]) -> Option<String> {
    const TAG: &[u8] = crate::boards::TAG_PREFIX.as_bytes();
    let at = bytes.windows(TAG.len()).position(|w| w == TAG)?;
    let name: Vec<u8> =
        bytes[at + TAG.len()..].iter().copied().take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-').collect();
    (!name.is_empty()).then(|| String::from_utf8_lossy(&name).into_owned())
}

/// Reads the board of a kernel file and checks that boards.toml knows it.
pub fn board_of(path: &Path, boards: &[Board]) -> Result<String, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let name = board_tag(&bytes).ok_or_else(|| {
        format!("{} carries no cachescope-board tag (not a cachescope kernel, or built before boards were tagged)", path.display())
    })?;
    crate::boards::find(boards, &name).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(name)
}

/// The board whose QEMU machine a row's machine is, if any.
pub fn board_of_row<'b>(row: &Row, boards: &'b [Board]) -> Option<&'b Board> {
    boards.iter().find(|b| b.qemu.as_ref().is_some_and(|q| q.machine == row.machine_name()))
}

/// One row to run with one kernel.
#[derive(Clone, Debug)]
pub struct Job {
    /// Position in the output (1-based, catalogue order).
    pub number: usize,
    /// The row.
    pub row: Row,
    /// Its kernel.
    pub kernel: Kernel,
}

/// Pairs rows with kernels: a row runs for a kernel of its name built for the board its machine
/// emulates. Rows keep catalogue order.
pub fn plan(rows: &[Row], kernels: &[Kernel], boards: &[Board], filter: &Filter) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    for row in rows.iter().filter(|r| filter.selects(r)) {
        let board = board_of_row(row, boards)
            .ok_or_else(|| format!("row '{}': machine '{}' emulates no board of boards.toml", row.name, row.machine))?;
        let mut matching = kernels.iter().filter(|k| k.name == row.kernel && k.board == board.name);
        if let Some(k) = matching.next() {
            if let Some(other) = matching.next() {
                return Err(format!(
                    "two kernels named '{}' for board {}: {} and {}",
                    k.name,
                    k.board,
                    k.elf.display(),
                    other.elf.display()
                ));
            }
            jobs.push(Job { number: jobs.len() + 1, row: row.clone(), kernel: k.clone() });
        }
    }
    Ok(jobs)
}

/// What one row's run gave.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Seconds the run took.
    pub secs: f64,
    /// Why it failed; `None`: it passed.
    pub failure: Option<String>,
    /// The log file.
    pub log: PathBuf,
}

/// A row's console stream as it arrived.
struct Captured {
    /// The run's exit status (`None`: killed by a signal).
    code: Option<i32>,
    /// Everything it printed (stdout and stderr, one pipe).
    bytes: Vec<u8>,
    /// Seconds since the row started at which each line arrived.
    arrived: Vec<f64>,
}

/// Where and how rows run.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The runner's boards and host tools ([`crate::qemu::run`] boots each row).
    pub ctx: crate::qemu::Context,
    /// target/cachescope-logs.
    pub logs: PathBuf,
    /// Kernel arguments appended to every row.
    pub extra_args: Vec<String>,
    /// Parallel runs.
    pub jobs: usize,
    /// The caller's QEMU_EXTRA, appended to every row's.
    pub qemu_extra: String,
    /// Environment set for every row after the row's own `env` (`catalogue run --env`).
    pub env_override: Vec<(String, String)>,
}

impl Runner {
    /// Runs one row and checks its exit status and expectations.
    pub fn run_one(&self, job: &Job) -> Outcome {
        let row = &job.row;
        let log = self.logs.join(format!("{}.log", row.name));
        let model = self.logs.join(format!("{}.model", row.name));
        let _ = fs::remove_file(&model);
        let start = Instant::now();
        // One pipe for stdout and stderr, read to its end: as with `2>&1 | tr -d '\r' >LOG`, output
        // of processes that outlive the run is still in the log.
        let run = || -> Result<Captured, String> {
            let (mut reader, writer) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
            // A row runs without the cache model unless its env asks for it, and keeps the raw
            // console stream (every record on stdout, no digest): the row's checks read it.
            // One core unless the row says otherwise (its env's QEMU_SMP or its qemu's -smp): the
            // board's default of more is for `cargo run`.
            let mut overlay: Vec<(String, OsString)> =
                vec![("QEMU_CACHE_MODEL".into(), "off".into()), ("CS_CONSOLE".into(), "raw".into()), ("QEMU_SMP".into(), "1".into())];
            overlay.extend(row.env.iter().chain(&self.env_override).map(|(k, v)| (k.clone(), OsString::from(v))));
            let cpu = row.cpu.as_deref().unwrap_or("cortex-a72");
            let fixed = [
                ("CS_MODEL_LOG", model.as_os_str().to_owned()),
                ("CS_NO_MATRIX", "1".into()),
                ("QEMU_MACHINE", row.machine.as_str().into()),
                ("QEMU_CPU", cpu.into()),
                ("QEMU_EXTRA", format!("{} {}", row.qemu, self.qemu_extra).into()),
                ("QEMU_TIMEOUT", row.timeout.to_string().into()),
                ("CS_CACHE_MODEL_BUILT", "1".into()),
                // Scripts the run starts (scripts/mkimage) reach this binary through scripts/xtask.
                ("CS_XTASK", std::env::current_exe().unwrap_or_default().into_os_string()),
            ];
            overlay.extend(fixed.into_iter().map(|(k, v)| (k.to_string(), v)));
            let env = crate::qemu::Env { overlay };
            let args: Vec<OsString> = row.args.iter().chain(&self.extra_args).map(OsString::from).collect();
            let io = crate::qemu::Io::Both(fs::File::from(std::os::fd::OwnedFd::from(writer)));
            std::thread::scope(|s| {
                let booted = s.spawn(move || crate::qemu::run(&self.ctx, &job.kernel.elf, &args, &env, &io));
                // Line by line as it arrives (until every writer, the runner's and its children's,
                // is closed): each line's arrival time is taken when its newline is read.
                let (mut bytes, mut arrived) = (Vec::new(), Vec::new());
                let mut reader = std::io::BufReader::new(&mut reader);
                loop {
                    let n = std::io::BufRead::read_until(&mut reader, b'\n', &mut bytes).map_err(|e| format!("reading the output: {e}"))?;
                    if n == 0 {
                        break;
                    }
                    arrived.push(start.elapsed().as_secs_f64());
                }
                let status = booted.join().map_err(|_| "the runner panicked".to_string())?;
                Ok(Captured { code: Some(i32::from(status)), bytes, arrived })
            })
        };
        let (status, text, arrived) = match run() {
            Ok(c) => (Ok(c.code), String::from_utf8_lossy(&c.bytes).replace('\r', ""), c.arrived),
            Err(e) => (Err(e), String::new(), Vec::new()),
        };
        let secs = start.elapsed().as_secs_f64();
        if let Err(e) = fs::write(&log, &text) {
            return Outcome { secs, failure: Some(format!("{}: cannot write: {e}", log.display())), log };
        }
        let times_path = cachescope_report::times::sidecar(&log.display().to_string());
        let written = fs::File::create(&times_path).and_then(|mut f| cachescope_report::times::LineTimes(arrived).write(&mut f));
        if let Err(e) = written {
            return Outcome { secs, failure: Some(format!("{times_path}: cannot write: {e}")), log };
        }
        let failure = match status {
            Err(e) => Some(e),
            Ok(code) if code != Some(row.exit) => Some(format!(
                "exit status {}, expected {}",
                code.map_or("none (killed by a signal)".to_string(), |c| c.to_string()),
                row.exit
            )),
            // The caller's kernel arguments (`cargo test --test boot -- only=boot.heap`) change
            // what a row runs, and its `expect` lines were written for its own arguments: such a
            // row is judged by its exit status and, when it must pass, a complete run.
            Ok(_) if !self.extra_args.is_empty() => (row.exit == 0 && !text.contains("\"record\":\"end\""))
                .then(|| format!("no end record with the caller's arguments '{}': the run did not complete", self.extra_args.join(" "))),
            Ok(_) => {
                let model_text = fs::read(&model).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
                first_unmatched(row, &[&text, &model_text]).map(|e| format!("no output line matches /{}/", e.source))
            }
        };
        Outcome { secs, failure, log }
    }

    /// Runs the jobs (serial rows alone, first; the others on `self.jobs` threads, longest
    /// expected first) and prints the results in job order as they become known. Returns the
    /// number of failed rows.
    pub fn run_all(&self, jobs: &[Job], title: &str) -> usize {
        say("KTAP version 1");
        say(&format!("1..{}", jobs.len()));
        let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
        let mut failed = 0;
        let serial: Vec<&Job> = jobs.iter().filter(|j| j.row.serial).collect();
        let mut parallel: Vec<&Job> = jobs.iter().filter(|j| !j.row.serial).collect();
        // Longest first (last run's time, else a guess from the timeout) keeps every core busy to the end.
        parallel.sort_by(|a, b| self.expected(b).total_cmp(&self.expected(a)));
        let queue = Mutex::new(parallel.into_iter().collect::<VecDeque<_>>());
        std::thread::scope(|s| {
            let runner = &self;
            let tx_serial = tx.clone();
            let queue = &queue;
            let workers = self.jobs;
            s.spawn(move || {
                for j in serial {
                    let o = runner.run_one(j);
                    let _ = tx_serial.send((j.number, o));
                }
                // Parallel rows start once the serial ones are done.
                std::thread::scope(|inner| {
                    for _ in 0..workers {
                        let tx = tx_serial.clone();
                        inner.spawn(move || loop {
                            let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
                            let Some(j) = next else { break };
                            let o = runner.run_one(j);
                            let _ = tx.send((j.number, o));
                        });
                    }
                });
            });
            drop(tx);
            let mut done: Vec<Option<Outcome>> = vec![None; jobs.len() + 1];
            let mut next = 1;
            for (n, o) in rx {
                done[n] = Some(o);
                while next <= jobs.len() {
                    let Some(o) = done[next].take() else { break };
                    let job = &jobs[next - 1];
                    self.remember(job, &o);
                    if self.report(job, &o) {
                        failed += 1;
                    }
                    next += 1;
                }
            }
        });
        say(&format!("# catalogue {title}: {} passed, {failed} failed", jobs.len() - failed));
        failed
    }

    /// Expected seconds of a row: its last run's, else a tenth of its timeout.
    fn expected(&self, job: &Job) -> f64 {
        fs::read_to_string(self.logs.join(format!("{}.secs", job.row.name)))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(job.row.timeout as f64 / 10.0)
    }

    fn remember(&self, job: &Job, o: &Outcome) {
        let _ = fs::write(self.logs.join(format!("{}.secs", job.row.name)), format!("{:.2}\n", o.secs));
    }

    /// Prints one result; true when it failed.
    fn report(&self, job: &Job, o: &Outcome) -> bool {
        let row = &job.row;
        let Some(why) = &o.failure else {
            say(&format!("ok {} {} # {:.2}s", job.number, row.name, o.secs));
            return false;
        };
        let mut text = format!("not ok {} {} # {:.2}s\n", job.number, row.name, o.secs);
        text += &format!(
            "# {why} (machine {}, cpu {}, args '{}'); log: {}\n",
            row.machine,
            row.cpu.as_deref().unwrap_or("cortex-a72"),
            row.args.join(" "),
            o.log.display()
        );
        let log = fs::read(&o.log).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        for l in &lines[lines.len().saturating_sub(25)..] {
            text += &format!("#   | {l}\n");
        }
        say(text.trim_end());
        true
    }
}

/// Prints a line and flushes (results appear as rows finish); a closed stdout is not a panic.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Test kernels (name, ELF) from `cargo test --no-run --message-format=json [--features F]`
/// run in the repository root.
pub fn discover_test_kernels(root: &Path, features: Option<&str>) -> Result<Vec<(String, PathBuf)>, String> {
    let mut cmd = cargo(root);
    cmd.args(["test", "--no-run", "--quiet", "--message-format=json"]);
    if let Some(f) = features {
        cmd.args(["--features", f]);
    }
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo test --no-run{} failed", features.map(|f| format!(" --features {f}")).unwrap_or_default()));
    }
    let kernels = test_executables(&out.stdout);
    if kernels.is_empty() {
        return Err("cargo test --no-run built no test kernel".into());
    }
    Ok(kernels)
}

/// Cargo in the repository root for the kernel's builds: without the variables cargo sets for a
/// `cargo run` of this tool (they must not leak into the kernel build).
pub fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root);
    for v in ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_MANIFEST_DIR"] {
        cmd.env_remove(v);
    }
    cmd
}

/// The test executables (name, path) of cargo's `--message-format=json` output.
pub fn test_executables(json_lines: &[u8]) -> Vec<(String, PathBuf)> {
    let mut kernels = Vec::new();
    for line in String::from_utf8_lossy(json_lines).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["reason"] != "compiler-artifact" || !v["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "test")) {
            continue;
        }
        if let (Some(name), Some(exe)) = (v["target"]["name"].as_str(), v["executable"].as_str()) {
            kernels.push((name.to_string(), PathBuf::from(exe)));
        }
    }
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_tag_is_read_like_board_of() {
        assert_eq!(board_tag(b"\0\0cachescope-board=rpi4\0more").as_deref(), Some("rpi4"));
        assert_eq!(board_tag(b"cachescope-board=qemu-virt").as_deref(), Some("qemu-virt"));
        assert_eq!(board_tag(b"cachescope-board=\0"), None);
        assert_eq!(board_tag(b"nothing"), None);
    }

    fn rows() -> Vec<Row> {
        crate::catalogue::parse(
            r#"
[v]
kernel = "boot"
groups = ["quick"]
machine = "virt,secure=on"
exit = 0
timeout = 30
expect = ['x']
[p]
kernel = "boot"
groups = ["rpi4"]
machine = "raspi4b"
exit = 0
timeout = 30
expect = ['x']
[m]
kernel = "cachescope"
groups = ["main"]
machine = "virt"
exit = 0
timeout = 30
expect = ['x']
"#,
        )
        .unwrap()
    }

    fn boards() -> Vec<Board> {
        crate::boards::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../boards.toml")).unwrap()
    }

    fn kernel(name: &str, board: &str) -> Kernel {
        Kernel { name: name.into(), elf: PathBuf::from(format!("/k/{name}-{board}")), board: board.into() }
    }

    #[test]
    fn rows_go_to_the_kernel_of_their_board() {
        let ks = [kernel("boot", "qemu-virt"), kernel("boot", "rpi4"), kernel("cachescope", "qemu-virt")];
        let jobs = plan(&rows(), &ks, &boards(), &Filter::default()).unwrap();
        let got: Vec<(usize, &str, &str)> = jobs.iter().map(|j| (j.number, j.row.name.as_str(), j.kernel.board.as_str())).collect();
        assert_eq!(got, [(1, "v", "qemu-virt"), (2, "p", "rpi4"), (3, "m", "qemu-virt")]);
        let f = Filter { group: Some("quick".into()), rows: None };
        assert_eq!(plan(&rows(), &ks, &boards(), &f).unwrap().len(), 1);
        let f = Filter { group: None, rows: Some(regex::Regex::new("^[pm]$").unwrap()) };
        assert_eq!(plan(&rows(), &ks, &boards(), &f).unwrap().len(), 2);
        let rpi5_only = [kernel("boot", "rpi5")];
        assert!(plan(&rows(), &rpi5_only, &boards(), &Filter::default()).unwrap().is_empty());
        let twice = [kernel("boot", "qemu-virt"), kernel("boot", "qemu-virt")];
        assert!(plan(&rows(), &twice, &boards(), &Filter::default()).unwrap_err().starts_with("two kernels named 'boot'"));
    }
}
