//! `cachescope-xtask bench-model`: the cache-model plugin's speed on memory-bound loops, plain
//! TCG against TCG with the plugin (the model test kernel's `bench` suite: one loop of N loads),
//! best of N runs of each, as the whole QEMU process's wall time: the slowdown a user sees. A
//! model run has `-icount` (scripts/qemu-run adds it), under which the guest's generic timer
//! counts instructions, so the loop's own time (its `bench-model` record, timed by that timer)
//! is host time only in the plain run: it is shown there, to tell the loop from the boot.
//!
//! Configurations (`BENCH_MODEL_CONFIGS`): `name=VALUE` pairs separated by `;`,
//! VALUE being what QEMU_CACHE_MODEL gets (`on`, or plugin arguments `key=value,…`; an optional
//! `@PATH` suffix loads another build of the plugin, e.g. the one before a change). The default
//! compares the model alone (sanitizer off, no hardware prefetcher), with the stride prefetcher,
//! and with the sanitizer (its default: on).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::run::discover_test_kernels;

/// One configuration: (name, kernel arguments).
const LOOPS: [(&str, &str); 3] =
    [("seq-8M", "pattern=seq bytes=8M"), ("seq-16K", "pattern=seq bytes=16K"), ("chase-8M", "pattern=chase bytes=8M")];

/// The default configurations (see the module docs).
pub const DEFAULT_CONFIGS: &str = "model=sanitize=off;model+hwpf=hwpf=stride,sanitize=off;model+sanitizer=sanitize=on";

/// Parses `name=VALUE[@PLUGIN];…` into (name, QEMU_CACHE_MODEL value, plugin path).
pub fn parse_configs(text: &str) -> Result<Vec<(String, String, Option<String>)>, String> {
    text.split(';')
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            let (name, value) = c.trim().split_once('=').ok_or_else(|| format!("bad configuration '{c}': expected name=VALUE"))?;
            let (value, plugin) = match value.split_once('@') {
                Some((v, p)) => (v, Some(p.to_string())),
                None => (value, None),
            };
            Ok((name.to_string(), value.to_string(), plugin))
        })
        .collect()
}

/// `scripts/qemu-run ELF` under cache-model arguments `model` (and another build of the plugin,
/// when `plugin` names one), its console raw, stdin closed, stopped after 600 s: the run the
/// benchmark scripts time (bench-model's loops, bench-smp's main job).
pub(crate) fn qemu_run(root: &Path, elf: &Path, model: &str, plugin: Option<&str>) -> Command {
    let mut cmd = Command::new(root.join("scripts/qemu-run"));
    if let Some(p) = plugin {
        cmd.env("CS_CACHE_MODEL_PLUGIN", p);
    }
    cmd.arg(elf).env("QEMU_CACHE_MODEL", model).env("CS_CONSOLE", "raw").env("QEMU_TIMEOUT", "600").stdin(Stdio::null());
    cmd
}

/// One run: the loop's milliseconds (its record) and the QEMU process's wall milliseconds.
fn run(root: &Path, elf: &Path, model: &str, plugin: Option<&str>, args: &str, accesses: u64) -> Result<(u64, u64), String> {
    let t0 = Instant::now();
    let out = qemu_run(root, elf, model, plugin)
        .arg("only=bench")
        .args(args.split_whitespace())
        .arg(format!("accesses={accesses}"))
        .env("CS_NO_MATRIX", "1")
        // One core: the loops are one core's.
        .env("QEMU_SMP", "1")
        .output()
        .map_err(|e| format!("cannot run scripts/qemu-run: {e}"))?;
    let wall = t0.elapsed().as_millis() as u64;
    let text = String::from_utf8_lossy(&out.stdout);
    let ms = crate::records::records(&text).into_iter().find_map(|(_, r)| cachescope_arch::record::BenchModelView::of(&r)?.ms());
    match ms {
        Some(ms) if out.status.success() => Ok((ms, wall)),
        _ => Err(format!(
            "no bench-model record from QEMU_CACHE_MODEL={model} {args} (exit {:?}): {}",
            out.status.code(),
            text.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        )),
    }
}

/// Best (smallest) loop and wall time over `reps` runs.
fn best(root: &Path, elf: &Path, model: &str, plugin: Option<&str>, args: &str, accesses: u64, reps: u32) -> Result<(u64, u64), String> {
    let (mut l, mut w) = (u64::MAX, u64::MAX);
    for _ in 0..reps {
        let (a, b) = run(root, elf, model, plugin, args, accesses)?;
        l = l.min(a);
        w = w.min(b);
    }
    Ok((l, w))
}

/// The table's row: the plain run's loop (host time), both QEMU processes' wall times in
/// seconds, and the model's slowdown over plain TCG (wall).
pub fn row(name: &str, plain: (u64, u64), model: (u64, u64)) -> String {
    let s = |ms: u64| ms as f64 / 1000.0;
    let ratio = if plain.1 == 0 { f64::NAN } else { model.1 as f64 / plain.1 as f64 };
    format!("{name:<9} {:>11.2}s {:>11.2}s {:>11.2}s {ratio:>8.1}", s(plain.0), s(plain.1), s(model.1))
}

/// Runs every loop plain and under each configuration and prints one table per configuration,
/// then each configuration's wall time relative to the first one's.
pub fn bench_model(root: &Path, accesses: u64, reps: u32) -> Result<(), String> {
    let configs = parse_configs(&std::env::var("BENCH_MODEL_CONFIGS").unwrap_or_else(|_| DEFAULT_CONFIGS.to_string()))?;
    let elf = discover_test_kernels(root, None)?
        .into_iter()
        .find(|(n, _)| n == "model")
        .map(|(_, e)| e)
        .ok_or("the model test kernel (tests/model.rs) was not built")?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "host load average {}; {accesses} loads per run, best of {reps}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let mut results = Vec::new();
    for (name, args) in LOOPS {
        let plain = best(root, &elf, "off", None, args, accesses, reps)?;
        let mut per = Vec::new();
        for (_, value, plugin) in &configs {
            per.push(best(root, &elf, value, plugin.as_deref(), args, accesses, reps)?);
        }
        results.push((name, plain, per));
    }
    for (k, (cname, value, plugin)) in configs.iter().enumerate() {
        println!("\n{cname}: QEMU_CACHE_MODEL={value}{}", plugin.as_ref().map(|p| format!(" (plugin {p})")).unwrap_or_default());
        println!("{:<9} {:>12} {:>12} {:>12} {:>8}", "pattern", "plain loop", "plain QEMU", "model QEMU", "QEMU ×");
        for (name, plain, per) in &results {
            println!("{}", row(name, *plain, per[k]));
        }
    }
    if configs.len() > 1 {
        println!("\nQEMU wall time relative to {} (1.00 = equal)", configs[0].0);
        for (name, _, per) in &results {
            let rel: Vec<String> =
                configs.iter().zip(per).map(|((c, _, _), t)| format!("{c} {:.2}", t.1 as f64 / per[0].1.max(1) as f64)).collect();
            println!("{name:<9} {}", rel.join("  "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_formats_seconds_and_ratios() {
        let r = row("seq-8M", (100, 250), (640, 1000));
        assert_eq!(r, "seq-8M           0.10s        0.25s        1.00s      4.0");
        assert!(row("x", (0, 0), (1, 1)).contains("NaN"));
    }

    #[test]
    fn configurations_parse() {
        let c = parse_configs("a=on;b=hwpf=stride,sanitize=off@/x.so;").unwrap();
        assert_eq!(c[0], ("a".into(), "on".into(), None));
        assert_eq!(c[1], ("b".into(), "hwpf=stride,sanitize=off".into(), Some("/x.so".into())));
        assert_eq!(parse_configs(DEFAULT_CONFIGS).unwrap().len(), 3);
        assert!(parse_configs("nothing").is_err());
    }
}
