//! `cachescope-xtask bench-smp`: the wall time of the main job under the cache model (what
//! `cargo run` runs on QEMU virt) for several core counts, in one series, and each count's
//! ratio to the first count's (goal, issue #25: 2 and 4 cores ≤ 1.3× one core).
//!
//! Each round runs every count once, in the order given, so that a change of the host's load
//! reaches every count alike; the best (smallest) time of the rounds counts. A run is the
//! whole `scripts/qemu-run` process (QEMU with the plugin, `-icount`), its console raw (no
//! report tool), timed two ways: wall time (what a user waits), and CPU time (user + system of
//! the process and its children, `getrusage`), which a loaded host changes less (under
//! `-icount` QEMU runs every vCPU on one thread, so CPU time is close to wall time on an idle
//! host). A run that fails, or whose kernel does not report success, stops the bench
//! with its last lines: a figure of a broken run would mean nothing. A benchmark, not a test:
//! it never fails on the figures.

use std::path::Path;
use std::time::Instant;

/// One run's wall and CPU milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Times {
    /// Wall time.
    pub wall: u64,
    /// CPU time (user + system) of the run's processes.
    pub cpu: u64,
}

/// One run of `elf` with `QEMU_SMP=smp`.
fn run(root: &Path, elf: &Path, args: &[String], smp: u32, model: &str, plugin: Option<&str>, log: &Path) -> Result<Times, String> {
    let cpu0 = crate::benchforeign::children_cpu_ms();
    let t0 = Instant::now();
    let out = crate::benchmodel::qemu_run(root, elf, model, plugin)
        .args(args)
        .env("QEMU_SMP", smp.to_string())
        .env("CS_CACHE_MODEL_BUILT", "1")
        .env("CS_LOG", log)
        .output()
        .map_err(|e| format!("cannot run scripts/qemu-run: {e}"))?;
    let times = Times { wall: t0.elapsed().as_millis() as u64, cpu: crate::benchforeign::children_cpu_ms() - cpu0 };
    let text = String::from_utf8_lossy(&out.stdout);
    // The run's `end` record: complete, nothing failed (the exit status says the same).
    let end = crate::records::records(&text).into_iter().find_map(|(_, r)| cachescope_arch::record::EndView::of(&r)?.failed());
    if !out.status.success() || end != Some(0) {
        return Err(format!(
            "QEMU_SMP={smp} QEMU_CACHE_MODEL={model}: the main job did not pass (exit {:?}): {}",
            out.status.code(),
            text.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(times)
}

/// The best (smallest) wall and CPU times of `runs`.
pub fn best(runs: &[Times]) -> Times {
    Times { wall: runs.iter().map(|t| t.wall).min().unwrap_or(0), cpu: runs.iter().map(|t| t.cpu).min().unwrap_or(0) }
}

/// The table's row for `smp` cores: best wall time in seconds and its ratio to the first
/// count's best, the same for CPU time, then every round's wall/CPU seconds.
pub fn row(smp: u32, runs: &[Times], first: Times) -> String {
    let b = best(runs);
    let s = |ms: u64| ms as f64 / 1000.0;
    let ratio = |x: u64, y: u64| if y == 0 { f64::NAN } else { x as f64 / y as f64 };
    let all: Vec<String> = runs.iter().map(|t| format!("{:.1}/{:.1}", s(t.wall), s(t.cpu))).collect();
    format!(
        "{smp:>5} {:>9.2}s {:>6.2}× {:>9.2}s {:>6.2}×  ({})",
        s(b.wall),
        ratio(b.wall, first.wall),
        s(b.cpu),
        ratio(b.cpu, first.cpu),
        all.join(" ")
    )
}

/// Runs the main job `elf` (with kernel arguments `args`) for each of `counts` cores, `rounds`
/// times, and prints the table.
pub fn bench_smp(
    root: &Path,
    elf: &Path,
    args: &[String],
    counts: &[u32],
    rounds: u32,
    model: &str,
    plugin: Option<&str>,
) -> Result<(), String> {
    if counts.is_empty() {
        return Err("no core counts given".into());
    }
    if !elf.is_file() {
        return Err(format!("{}: no such kernel (build it with `cargo build`)", elf.display()));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "main job{} under QEMU_CACHE_MODEL={model}{}: wall time of scripts/qemu-run, best of {rounds} rounds; host load average {}",
        if args.is_empty() { String::new() } else { format!(" {}", args.join(" ")) },
        plugin.map(|p| format!(" (plugin {p})")).unwrap_or_default(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let dir = std::env::temp_dir().join(format!("cachescope-bench-smp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut times = vec![Vec::new(); counts.len()];
    for _ in 0..rounds {
        for (k, &n) in counts.iter().enumerate() {
            times[k].push(run(root, elf, args, n, model, plugin, &dir.join(format!("smp{n}.log")))?);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let first = best(&times[0]);
    println!("{:>5} {:>10} {:>7} {:>10} {:>7}  (each round: wall/CPU s)", "cores", "wall", "ratio", "CPU", "ratio");
    for (k, &n) in counts.iter().enumerate() {
        println!("{}", row(n, &times[k], first));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_gives_the_best_and_its_ratio() {
        let t = |wall, cpu| Times { wall, cpu };
        assert_eq!(
            row(2, &[t(13_000, 11_000), t(12_500, 12_000)], t(10_000, 10_000)),
            "    2     12.50s   1.25×     11.00s   1.10×  (13.0/11.0 12.5/12.0)"
        );
        assert!(row(1, &[t(1, 1)], t(0, 0)).contains("NaN"));
    }
}
