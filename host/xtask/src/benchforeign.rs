//! `cachescope-xtask bench-foreign`: the cache-model plugin's speed on foreign firmware — Debian's
//! arm64 Linux kernel booted on QEMU virt to the "unable to mount root fs" panic, plain TCG
//! against TCG with the plugin, for each vCPU count asked, N runs of each (plain and model runs
//! alternate, so a change in the host's load meets both), as the whole QEMU process's wall time
//! (host monotonic clock) and CPU time (user + system, getrusage): best and median, and the
//! model's slowdown over plain TCG (wall, and CPU time, which a loaded host skews less). Both runs
//! have the model's `-icount shift=0,align=off,sleep=off` (the guest then executes the same
//! instructions in both), `nokaslr` (the same kernel addresses every boot), `panic=-1` and
//! `-no-reboot` (QEMU exits at the panic), `-nic none` (QEMU 10.0.2's PCI probe under a plugin:
//! docs/cache-model.md "Foreign firmware"). A run that does not reach the panic fails the
//! benchmark. A benchmark, not a test: it prints figures and never fails on them.
//!
//! The model run's records and both consoles of the last repetition are kept in
//! target/bench-foreign/ (`smpN.model`, `smpN.plain.console`, `smpN.model.console`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the console shows when the boot reached its end (the root fs cannot be mounted).
pub const PANIC_LINE: &str = "Kernel panic - not syncing: VFS: Unable to mount root fs";

/// The kernel command line of every run.
pub const APPEND: &str = "console=ttyAMA0 nokaslr panic=-1";

/// One benchmark configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The kernel Image.
    pub kernel: PathBuf,
    /// vCPU counts, one table row each.
    pub smp: Vec<u32>,
    /// Runs of each configuration.
    pub reps: u32,
    /// QEMU `-M` (e.g. `virt,virtualization=on` to boot Linux at EL2, where VMPIDR_EL2 names
    /// the executing vCPU).
    pub machine: String,
    /// QEMU `-cpu`.
    pub cpu: String,
    /// QEMU `-m`: virt's RAM (boards.toml `qemu_memory`, what observe gives it).
    pub memory: String,
    /// QEMU_CACHE_MODEL-style plugin value (`on` = the defaults, or `key=value,…`).
    pub model: String,
    /// Wall-clock limit of one run (then it is killed and the benchmark fails).
    pub timeout: Duration,
}

/// QEMU's arguments for one run: `plugin` is the `-plugin` value for a model run.
pub fn qemu_args(o: &Options, smp: u32, plugin: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = [
        "-M",
        &o.machine,
        "-cpu",
        &o.cpu,
        "-smp",
        &smp.to_string(),
        "-m",
        &o.memory,
        "-nographic",
        "-nic",
        "none",
        "-no-reboot",
        "-kernel",
        &o.kernel.display().to_string(),
        "-append",
        APPEND,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(crate::qemu::ICOUNT.map(String::from));
    if let Some(p) = plugin {
        a.extend(["-plugin".to_string(), p.to_string()]);
    }
    a
}

/// The CPU time (user + system, ms) of this process's waited-for children so far.
pub(crate) fn children_cpu_ms() -> u64 {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// Runs QEMU once with `args`, its console into `console`: the wall and CPU milliseconds, or why
/// the run does not count (it did not reach the panic, exited with an error, or timed out).
fn run(args: &[String], console: &Path, timeout: Duration) -> Result<(u64, u64), String> {
    let out = std::fs::File::create(console).map_err(|e| format!("{}: {e}", console.display()))?;
    let cpu0 = children_cpu_ms();
    let err = out.try_clone().map_err(|e| format!("{}: {e}", console.display()))?;
    let t0 = Instant::now();
    let mut child = Command::new("qemu-system-aarch64")
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run qemu-system-aarch64: {e}"))?;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > timeout {
            // Only the child this benchmark started.
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("timed out after {} s (console: {})", timeout.as_secs(), console.display()));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let ms = t0.elapsed().as_millis() as u64;
    let cpu = children_cpu_ms().saturating_sub(cpu0);
    let text = String::from_utf8_lossy(&std::fs::read(console).unwrap_or_default()).into_owned();
    if !status.success() || !text.contains(PANIC_LINE) {
        let tail: Vec<&str> = text.lines().rev().take(4).collect();
        return Err(format!("QEMU exited {:?} without '{PANIC_LINE}' ({}): {}", status.code(), console.display(), tail.join(" | ")));
    }
    Ok((ms, cpu))
}

/// The median of `v` (the mean of the middle two for an even count); 0 for none.
pub fn median(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => 0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2,
    }
}

/// One vCPU count's wall times (ms), CPU times and what the model reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Plain TCG runs' wall times.
    pub plain: Vec<u64>,
    /// Model runs' wall times.
    pub model: Vec<u64>,
    /// Plain runs' CPU times (user + system).
    pub plain_cpu: Vec<u64>,
    /// Model runs' CPU times.
    pub model_cpu: Vec<u64>,
    /// The last model run's `hazard-total` hazards (distinct) and `model-run` warnings.
    pub hazards: Option<u64>,
    /// Its warnings.
    pub warnings: Option<u64>,
}

/// The table's header.
pub fn header() -> String {
    format!(
        "{:<6} {:>11} {:>11} {:>11} {:>11} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "vCPUs", "plain best", "plain med", "model best", "model med", "× best", "× med", "× CPU", "hazards", "warnings"
    )
}

/// One row: wall seconds, then the slowdowns (model over plain: wall best over best, wall median
/// over median, CPU-time median over median — the CPU time suffers less from a loaded host).
pub fn row(smp: u32, s: &Sample) -> String {
    let sec = |ms: u64| ms as f64 / 1000.0;
    let best = |v: &[u64]| v.iter().copied().min().unwrap_or(0);
    let ratio = |m: u64, p: u64| if p == 0 { f64::NAN } else { m as f64 / p as f64 };
    let (pb, pm, mb, mm) = (best(&s.plain), median(&s.plain), best(&s.model), median(&s.model));
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |n| n.to_string());
    format!(
        "{smp:<6} {:>10.2}s {:>10.2}s {:>10.2}s {:>10.2}s {:>7.2} {:>7.2} {:>7.2} {:>8} {:>8}",
        sec(pb),
        sec(pm),
        sec(mb),
        sec(mm),
        ratio(mb, pb),
        ratio(mm, pm),
        ratio(median(&s.model_cpu), median(&s.plain_cpu)),
        opt(s.hazards),
        opt(s.warnings)
    )
}

/// The distinct hazards (`hazard-total`) and warnings (`model-run`) of a model log.
pub fn model_counts(text: &str) -> (Option<u64>, Option<u64>) {
    use cachescope_arch::record::{HazardTotalView, ModelRunView};
    let (mut hazards, mut warnings) = (None, None);
    for (_, r) in crate::records::records(text) {
        hazards = HazardTotalView::of(&r).and_then(|v| v.hazards()).or(hazards);
        warnings = ModelRunView::of(&r).and_then(|v| v.warnings()).or(warnings);
    }
    (hazards, warnings)
}

/// The Linux Image to boot: `--kernel`, else CS_LINUX_IMAGE, else the kernel the foreign
/// subjects boot ([`crate::foreign::linux_kernel`], unpacked by `cachescope-xtask foreign fetch`,
/// which scripts/bootstrap runs).
pub fn find_kernel(given: Option<PathBuf>) -> Result<PathBuf, String> {
    let hint = "give --kernel IMAGE or CS_LINUX_IMAGE=IMAGE (Debian's arm64 kernel Image), or run `scripts/foreign fetch` (scripts/bootstrap does)";
    if let Some(k) = given.or_else(|| std::env::var_os("CS_LINUX_IMAGE").filter(|v| !v.is_empty()).map(PathBuf::from)) {
        return if k.is_file() { Ok(k) } else { Err(format!("{}: no such kernel Image ({hint})", k.display())) };
    }
    let k = crate::foreign::linux_kernel();
    if k.is_file() {
        Ok(k)
    } else {
        Err(format!("{}: no kernel Image there ({hint})", k.display()))
    }
}

/// Runs the benchmark and prints its table.
pub fn bench_foreign(root: &Path, host_bin: &Path, o: &Options) -> Result<(), String> {
    let so = std::env::var("CS_CACHE_MODEL_PLUGIN").unwrap_or_else(|_| host_bin.join("libcachescope_cache_model.so").display().to_string());
    if !Path::new(&so).is_file() {
        return Err(format!("{so}: the plugin is not built (scripts/bench-foreign builds it)"));
    }
    let out = root.join("target/bench-foreign");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "host load average {}; {} ({}, -M {} -cpu {}) to the root-fs panic, {} runs each (plain and model alternate), whole QEMU process wall time (host monotonic clock) and CPU time (getrusage); plugin {so} {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        o.kernel.display(),
        APPEND,
        o.machine,
        o.cpu,
        o.reps,
        o.model
    );
    let mut rows = Vec::new();
    for &smp in &o.smp {
        let mut s = Sample::default();
        let model_log = out.join(format!("smp{smp}.model"));
        let plugin = crate::qemu::plugin_arg(&so, &o.model, Some(&model_log));
        for _ in 0..o.reps {
            let (w, c) = run(&qemu_args(o, smp, None), &out.join(format!("smp{smp}.plain.console")), o.timeout)?;
            s.plain.push(w);
            s.plain_cpu.push(c);
            let (w, c) = run(&qemu_args(o, smp, Some(&plugin)), &out.join(format!("smp{smp}.model.console")), o.timeout)?;
            s.model.push(w);
            s.model_cpu.push(c);
        }
        (s.hazards, s.warnings) = model_counts(&String::from_utf8_lossy(&std::fs::read(&model_log).unwrap_or_default()));
        eprintln!(
            "bench-foreign: {smp} vCPU(s): wall plain {:?} ms, model {:?} ms; CPU plain {:?} ms, model {:?} ms",
            s.plain, s.model, s.plain_cpu, s.model_cpu
        );
        rows.push((smp, s));
    }
    println!("{}", header());
    for (smp, s) in &rows {
        println!("{}", row(*smp, s));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options {
            kernel: "/k/Image".into(),
            smp: vec![1, 2],
            reps: 3,
            machine: "virt".into(),
            cpu: "cortex-a72".into(),
            memory: "512M".into(),
            model: "on".into(),
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn plain_and_model_runs_differ_only_by_the_plugin() {
        let o = options();
        let plain = qemu_args(&o, 2, None);
        let model = qemu_args(&o, 2, Some("/p.so,out=/m"));
        assert_eq!(model[..plain.len()], plain[..]);
        assert_eq!(model[plain.len()..], ["-plugin".to_string(), "/p.so,out=/m".into()]);
        let has = |a: &[String], w: &[&str]| a.windows(w.len()).any(|x| x.iter().zip(w).all(|(a, b)| a == b));
        assert!(has(&plain, &["-icount", "shift=0,align=off,sleep=off"]));
        assert!(has(&plain, &["-smp", "2"]) && has(&plain, &["-nic", "none"]) && has(&plain, &["-kernel", "/k/Image"]));
        assert!(has(&plain, &["-append", APPEND]) && plain.contains(&"-no-reboot".to_string()));
    }

    #[test]
    fn medians_and_rows() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[5, 1, 3]), 3);
        assert_eq!(median(&[4, 1, 3, 2]), 2);
        let s = Sample {
            plain: vec![2000, 2500, 2200],
            model: vec![9000, 8000, 8800],
            plain_cpu: vec![1000, 1200, 1100],
            model_cpu: vec![5000, 5500, 6000],
            hazards: Some(0),
            warnings: None,
        };
        let r = row(1, &s);
        assert_eq!(r, "1            2.00s       2.20s       8.00s       8.80s    4.00    4.00    5.00        0        -");
        assert_eq!(header().chars().count(), r.chars().count(), "columns line up");
        assert!(row(2, &Sample::default()).contains("NaN"));
    }

    #[test]
    fn counts_come_from_the_records() {
        let log = "# cs: {\"record\":\"hazard-total\",\"sanitize\":true,\"hazards\":2,\"count\":19,\"source\":\"model\"}\n\
                   # cs: {\"record\":\"model-run\",\"protocol\":5,\"warnings\":3,\"source\":\"model\"}\n";
        assert_eq!(model_counts(log), (Some(2), Some(3)));
        assert_eq!(model_counts("no records\n"), (None, None));
    }

    #[test]
    fn a_missing_kernel_is_named() {
        let e = find_kernel(Some("/nonexistent/Image".into())).unwrap_err();
        assert!(e.contains("/nonexistent/Image") && e.contains("--kernel"), "{e}");
    }
}
