//! `maint-check`: every maintenance instruction the kernel executes is accounted for. The main
//! job runs plain (no cache model) under the host/insn-count TCG plugin, which counts the DC, IC
//! and TLBI instructions QEMU executed by operation, once per CPU model and in parallel; the
//! kernel's `maint-total` record must equal those counts for every operation, and the `ops` of
//! its `setway` records must add up to the DC ISW + CSW + CISW executed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use cachescope_arch::cache::ops::MaintOp;
use cachescope_arch::record;

use crate::boards::Board;
use crate::records::records;
use crate::run::say;

/// What one run's log and plugin output say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounts {
    /// The kernel's `maint-total` record, by operation name (`None`: no record).
    pub recorded: Option<BTreeMap<String, u64>>,
    /// `maint-total` records in the log (exactly one expected).
    pub totals: usize,
    /// Sum of the `setway` records' `ops`, and of their `walks` (1 when absent).
    pub setway_ops: u64,
    /// Walks the `setway` records account for.
    pub setway_walks: u64,
    /// The plugin's counts by operation name (`None`: it wrote no line).
    pub executed: Option<BTreeMap<String, u64>>,
}

/// Reads the plugin's line `insn-count NAME=N …` (the last such line of `text`).
pub fn parse_executed(text: &str) -> Option<BTreeMap<String, u64>> {
    let line = text.lines().rev().find_map(|l| l.strip_prefix("insn-count "))?;
    line.split_whitespace().map(|w| w.split_once('=').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?)))).collect()
}

/// Reads a run's log (kernel records) and the plugin's output.
pub fn accounts(log: &str, plugin: &str) -> Accounts {
    let mut a = Accounts { executed: parse_executed(plugin), ..Accounts::default() };
    for (_, r) in records(log) {
        if let Some(w) = record::SetwayView::of(&r) {
            a.setway_ops += w.ops().unwrap_or(0);
            a.setway_walks += w.walks().unwrap_or(1);
        }
        if let Some(t) = record::MaintTotalView::of(&r) {
            a.totals += 1;
            let ops = t.ops();
            a.recorded = Some(MaintOp::ALL.iter().filter_map(|op| Some((op.name().to_string(), ops[op.index()]?))).collect());
        }
    }
    a
}

/// The differences between what the kernel recorded and what was executed, one readable line
/// each (empty: everything is accounted for).
pub fn problems(a: &Accounts) -> Vec<String> {
    let mut out = Vec::new();
    let Some(executed) = &a.executed else { return vec!["the insn-count plugin wrote no counts".into()] };
    let Some(recorded) = &a.recorded else { return vec!["no maint-total record in the log".into()] };
    if a.totals != 1 {
        out.push(format!("{} maint-total records (one expected)", a.totals));
    }
    let get = |m: &BTreeMap<String, u64>, op: MaintOp| m.get(op.name()).copied();
    for op in MaintOp::ALL {
        match (get(recorded, op), get(executed, op)) {
            (Some(r), Some(e)) if r == e => {}
            (r, e) => {
                let show = |v: Option<u64>| v.map_or("nothing".to_string(), |v| v.to_string());
                out.push(format!("{}: kernel recorded {}, executed {}", op.name(), show(r), show(e)));
            }
        }
    }
    let setway: u64 = MaintOp::SET_WAY.iter().filter_map(|&op| get(executed, op)).sum();
    if a.setway_ops != setway {
        out.push(format!("setway records: {} ops in {} walks, executed DC ISW+CSW+CISW {setway}", a.setway_ops, a.setway_walks));
    }
    out
}

/// Builds the insn-count plugin (release) and returns its path.
pub fn build_plugin(root: &Path) -> Result<PathBuf, String> {
    let tuple = Command::new("rustc").args(["--print", "host-tuple"]).output().map_err(|e| format!("cannot run rustc: {e}"))?;
    let tuple = String::from_utf8_lossy(&tuple.stdout).trim().to_string();
    let st = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args(["build", "--quiet", "--release", "--manifest-path", "host/Cargo.toml", "--target", &tuple, "-p", "cachescope-insn-count"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !st.success() {
        return Err("building the insn-count plugin failed".into());
    }
    Ok(root.join(format!("host/target/{tuple}/release/libcachescope_insn_count.so")))
}

/// What [`maint_check`] runs when no run is named: the whole main job on cortex-a72 (every suite;
/// the benchmark sweeps as small as the raspi4b rows run them: the same instructions, fewer
/// repetitions); its cache suite (every set/way walk shape, both CCSIDR formats, the IDC/DIC
/// variants of instruction sync) on three more; the smp suite on four cores, where every core
/// counts its own maintenance at once (MTTCG: the vCPUs run in parallel host threads); and the
/// test kernels that issue maintenance of their own (tests/mmu.rs, tests/model.rs).
pub const DEFAULT_RUNS: [&str; 7] = [
    "cortex-a72:reps=1 warmup=0 max_size=256K stream_bytes=256K handoff_bytes=64K kv_capacity=64",
    "cortex-a53:only=cache",
    "cortex-a710:only=cache",
    "max:only=cache",
    "cortex-a72@4:only=smp",
    "mmu/cortex-a72",
    "model/cortex-a72",
];

/// One run: `[KERNEL/]CPU[@CORES][:ARGS]` — a test kernel (tests/KERNEL.rs; none: the main
/// job), the CPU model, the number of cores (`QEMU_SMP`, default 1) and kernel arguments
/// (space-separated; none: the whole kernel).
#[derive(Debug, PartialEq, Eq)]
pub struct RunSpec<'a> {
    /// The test kernel's name, if not the main job.
    pub kernel: Option<&'a str>,
    /// The CPU model (`QEMU_CPU`).
    pub cpu: &'a str,
    /// The number of cores (`QEMU_SMP`), if not one.
    pub cores: Option<&'a str>,
    /// Kernel arguments.
    pub args: Vec<&'a str>,
}

/// Splits a run (see [`RunSpec`]).
pub fn split_run(run: &str) -> RunSpec<'_> {
    let (machine, args) = match run.split_once(':') {
        Some((m, args)) => (m, args.split_whitespace().collect()),
        None => (run, Vec::new()),
    };
    let (kernel, machine) = match machine.split_once('/') {
        Some((k, m)) => (Some(k), m),
        None => (None, machine),
    };
    let (cpu, cores) = match machine.split_once('@') {
        Some((cpu, cores)) => (cpu, Some(cores)),
        None => (machine, None),
    };
    RunSpec { kernel, cpu, cores, args }
}

/// Runs the main job under the plugin once per run (`CPU` or `CPU:ARGS`, `jobs` at a time) and
/// prints one ok/not ok line per run, with a line per difference. Returns whether every run
/// added up.
pub fn maint_check(root: &Path, elf: &Path, boards: &[Board], cpus: &[String], jobs: usize) -> Result<bool, String> {
    if !elf.is_file() {
        return Err(format!("no such kernel: {} (cargo build)", elf.display()));
    }
    // The test kernels the runs name, built for the same board as `elf` (the default build).
    let test_kernels =
        if cpus.iter().any(|r| split_run(r).kernel.is_some()) { crate::run::discover_test_kernels(root, None)? } else { Vec::new() };
    let mut elfs = Vec::new();
    for run in cpus {
        elfs.push(match split_run(run).kernel {
            None => elf.to_path_buf(),
            Some(k) => test_kernels.iter().find(|(name, _)| name == k).map(|(_, e)| e.clone()).ok_or_else(|| {
                let known: Vec<&str> = test_kernels.iter().map(|(n, _)| n.as_str()).collect();
                format!("run '{run}': no test kernel '{k}' (tests/*.rs: {})", known.join(", "))
            })?,
        });
    }
    let board = crate::run::board_of(elf, boards)?;
    if crate::boards::find(boards, &board).map_err(|e| e.0)?.qemu.as_ref().is_none_or(|q| q.cpu.is_none()) {
        return Err(format!(
            "{} is built for '{board}', whose QEMU machine has a fixed CPU: maint-check needs a board whose machine takes -cpu (the default build)",
            elf.display()
        ));
    }
    let plugin = build_plugin(root)?;
    let logs = root.join("target/cachescope-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let queue = Mutex::new(cpus.iter().zip(&elfs).enumerate().collect::<Vec<_>>());
    let results: Mutex<Vec<Option<RunResult>>> = Mutex::new(vec![None; cpus.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.min(cpus.len()).max(1) {
            s.spawn(|| loop {
                let next = queue.lock().map(|mut q| q.pop()).unwrap_or(None);
                let Some((i, (cpu, elf))) = next else { break };
                let r = check_one(root, elf, &plugin, &logs, cpu);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    let mut ok = true;
    for (lines, good) in results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten() {
        ok &= good;
        for l in lines {
            say(&l);
        }
    }
    Ok(ok)
}

/// One run's report lines and whether it passed.
type RunResult = (Vec<String>, bool);

fn check_one(root: &Path, elf: &Path, plugin: &Path, logs: &Path, run: &str) -> RunResult {
    let RunSpec { cpu, cores, args, .. } = split_run(run);
    let name: String = run.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    let log: PathBuf = logs.join(format!("maint-check-{name}.log"));
    let counts = PathBuf::from(format!("{}.insn-count", log.display()));
    let _ = std::fs::remove_file(&counts);
    let cpu_shown = run;
    let out = Command::new(root.join("scripts/qemu-run"))
        .arg(elf)
        .args(&args)
        .env("QEMU_CPU", cpu)
        .env("QEMU_SMP", cores.unwrap_or("1"))
        .env("QEMU_CACHE_MODEL", "off")
        .env("QEMU_EXTRA", format!("-plugin {},out={}", plugin.display(), counts.display()))
        .env("CS_CONSOLE", "raw")
        .env("QEMU_TIMEOUT", "60")
        .env("CS_XTASK", std::env::current_exe().unwrap_or_default())
        .env_remove("CS_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output();
    let (rc, text) = match out {
        Ok(o) => (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).replace('\r', "")),
        Err(e) => (-1, format!("cannot start scripts/qemu-run: {e}\n")),
    };
    let _ = std::fs::write(&log, &text);
    let plugin_text = std::fs::read(&counts).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let a = accounts(&text, &plugin_text);
    let mut problems = problems(&a);
    if rc != 0 {
        problems.insert(0, format!("the main job exited with status {rc}"));
    }
    let shown = log.strip_prefix(root).unwrap_or(&log).display().to_string();
    if problems.is_empty() {
        let e = a.executed.unwrap_or_default();
        let n = |op: MaintOp| e.get(op.name()).copied().unwrap_or(0);
        let all: u64 = e.values().sum();
        let line = format!(
            "ok - {cpu_shown}: maint-total equals the {all} executed DC/IC/TLBI (dc_cisw {}, dc_civac {}, dc_cvac {}, dc_ivac {}, ic_iallu {}); setway records: {} ops in {} walks",
            n(MaintOp::DcCisw),
            n(MaintOp::DcCivac),
            n(MaintOp::DcCvac),
            n(MaintOp::DcIvac),
            n(MaintOp::IcIallu),
            a.setway_ops,
            a.setway_walks
        );
        (vec![line], true)
    } else {
        let mut lines = vec![format!("not ok - {cpu_shown}: maintenance not accounted for (log {shown})")];
        lines.extend(problems.into_iter().map(|p| format!("  # {cpu_shown}: {p}")));
        (lines, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(counts: &[(MaintOp, u64)]) -> String {
        let mut s = String::from("insn-count");
        for op in MaintOp::ALL {
            s += &format!(" {}={}", op.name(), counts.iter().find(|(o, _)| *o == op).map_or(0, |c| c.1));
        }
        s
    }

    fn total(counts: &[(MaintOp, u64)]) -> String {
        let fields: Vec<String> = MaintOp::ALL
            .iter()
            .map(|op| format!("\"{}\":{}", op.name(), counts.iter().find(|(o, _)| o == op).map_or(0, |c| c.1)))
            .collect();
        format!("# cs: {{\"record\":\"maint-total\",{}}}\n", fields.join(","))
    }

    #[test]
    fn equal_counts_pass() {
        let c = [(MaintOp::DcCisw, 17408), (MaintOp::DcCvac, 3)];
        let log = format!(
            "  # cs: {{\"record\":\"setway\",\"op\":\"cisw\",\"scope\":\"loc\",\"ops\":512}}\n  # cs: {{\"record\":\"setway\",\"op\":\"cisw\",\"scope\":\"loc\",\"ops\":16896,\"walks\":33,\"phase\":\"p\"}}\n{}",
            total(&c)
        );
        let a = accounts(&log, &format!("noise\n{}\n", line(&c)));
        assert_eq!((a.setway_ops, a.setway_walks, a.totals), (17408, 34, 1));
        assert_eq!(problems(&a), Vec::<String>::new());
    }

    #[test]
    fn a_difference_names_the_op_and_both_numbers() {
        let executed = [(MaintOp::DcCisw, 512), (MaintOp::DcCvac, 4)];
        let recorded = [(MaintOp::DcCisw, 512), (MaintOp::DcCvac, 3)];
        let log = format!("# cs: {{\"record\":\"setway\",\"op\":\"cisw\",\"scope\":\"loc\",\"ops\":500}}\n{}", total(&recorded));
        let p = problems(&accounts(&log, &line(&executed)));
        assert_eq!(p, ["dc_cvac: kernel recorded 3, executed 4", "setway records: 500 ops in 1 walks, executed DC ISW+CSW+CISW 512"]);
        assert_eq!(problems(&accounts(&log, "")), ["the insn-count plugin wrote no counts"]);
        assert_eq!(problems(&accounts("", &line(&executed))), ["no maint-total record in the log"]);
        let twice = format!("{log}{}", total(&recorded));
        assert!(problems(&accounts(&twice, &line(&recorded))).iter().any(|p| p == "2 maint-total records (one expected)"));
    }

    #[test]
    fn runs() {
        assert_eq!(split_run("max"), RunSpec { kernel: None, cpu: "max", cores: None, args: vec![] });
        assert_eq!(
            split_run("cortex-a53:only=cache seed=1"),
            RunSpec { kernel: None, cpu: "cortex-a53", cores: None, args: vec!["only=cache", "seed=1"] }
        );
        assert_eq!(
            split_run("cortex-a72@4:only=smp"),
            RunSpec { kernel: None, cpu: "cortex-a72", cores: Some("4"), args: vec!["only=smp"] }
        );
        assert_eq!(split_run("mmu/max@2"), RunSpec { kernel: Some("mmu"), cpu: "max", cores: Some("2"), args: vec![] });
    }

    #[test]
    fn executed_line() {
        let m = parse_executed("insn-count dc_isw=1 dc_csw=22\n").unwrap();
        assert_eq!((m["dc_isw"], m["dc_csw"]), (1, 22));
        assert_eq!(parse_executed("insn-count dc_isw=x"), None);
        assert_eq!(parse_executed("nothing"), None);
    }
}
