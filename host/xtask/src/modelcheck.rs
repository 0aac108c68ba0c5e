//! `model-check [--update]`: the cache model's end-to-end determinism and regression check
//! (scripts/model-check execs it; its lines are the test command's model-check phase):
//!
//! 1. the model kernel (tests/model.rs) under QEMU_CACHE_MODEL=on, twice: identical records;
//! 2. again with the plugin's shortcut off (fast=off): identical records; and the catalogue's
//!    main-model-tb1 row (main-model with fast=off and one instruction per TB) has the same model
//!    records as main-model (2b: the counts depend neither on the shortcut nor on TB boundaries);
//! 3. the L1D phase records equal the committed baseline tests/model.baseline;
//! 4. the benchmark regression under the model: the catalogue's main-model row (the main job's
//!    short benchmarks under QEMU_CACHE_MODEL=on and icount, run by the catalogue phase before
//!    this one; run here when its records are missing or older than the kernel, or with
//!    --update): every record equals tests/baselines/model-bench.txt; 4b its digest
//!    (`scripts/report summary`) equals tests/baselines/model-digest.txt;
//! 5. the reference simulator agrees with the model on real runs: the model kernel under the
//!    guest geometry and under profile=rpi5,policy=random,impl=silicon (L3, private L2, the
//!    Cortex-A76's deviations: model rule 20), each with trace=FILE,
//!    replayed through host/cache-model/src/reference.rs: its totals must equal the model's.
//!
//! `--update` rewrites the three baselines from this run (after an intended change).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::qemu::{self, Context, Env, Io};
use crate::records;
use crate::run::say;

/// Where the logs go, as the lines name it (relative to the repository root).
const DIR: &str = "target/cachescope-logs";

/// The model records of a file as `xtask records` prints them (filtered, verbatim lines).
fn records_of(path: &Path, select: &records::Select) -> Option<String> {
    let text = String::from_utf8_lossy(&fs::read(path).ok()?).into_owned();
    Some(records::records(&text).into_iter().filter(|(_, r)| select.keeps(r)).map(|(l, _)| format!("{l}\n")).collect())
}

fn model_only() -> records::Select {
    records::Select { source: Some("model".into()), drop_kind: vec!["model-run".into()], ..Default::default() }
}

fn drop_run() -> records::Select {
    records::Select { drop_kind: vec!["model-run".into()], ..Default::default() }
}

fn lines_in(path: &Path) -> usize {
    fs::read(path).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0)
}

/// Missing or empty (the shell's `! -s`).
fn empty(path: &Path) -> bool {
    fs::metadata(path).map_or(true, |m| m.len() == 0)
}

fn same(a: &Path, b: &Path) -> bool {
    matches!((fs::read(a), fs::read(b)), (Ok(x), Ok(y)) if x == y)
}

/// The first `n` lines of `diff A B` (what a difference looks like).
fn diff_head(a: &Path, b: &Path, n: usize) {
    if let Ok(out) = Command::new("diff").arg(a).arg(b).stdin(Stdio::null()).stderr(Stdio::inherit()).output() {
        for l in String::from_utf8_lossy(&out.stdout).lines().take(n) {
            say(l);
        }
    }
}

/// Whether `a` is missing or older than `b` (the shell's `-ot`).
fn older(a: &Path, b: &Path) -> bool {
    let m = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    match (m(a), m(b)) {
        (Some(x), Some(y)) => x < y,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// Boots `elf` under QEMU_CACHE_MODEL=`value` on a raw console (the whole stream into `log`).
fn boot(ctx: &Context, elf: &Path, value: &str, log: &Path) -> Result<u8, String> {
    let file = fs::File::create(log).map_err(|e| format!("{}: cannot write: {e}", log.display()))?;
    let overlay = [("QEMU_CACHE_MODEL", value), ("CS_CONSOLE", "raw"), ("CS_NO_MATRIX", "1"), ("QEMU_TIMEOUT", "60")];
    let env = Env { overlay: overlay.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect() };
    Ok(qemu::run(ctx, elf, &[], &env, &Io::Both(file)))
}

/// One catalogue row for the main job, its output (stdout and stderr) in `log`: its exit status.
fn catalogue_row(ctx: &Context, row: &str, elf: &Path, log: &Path) -> Result<i32, String> {
    let out = fs::File::create(log).map_err(|e| format!("{}: cannot write: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let st = Command::new(exe)
        .current_dir(&ctx.root)
        .args(["catalogue", "run", "--kernel", "cachescope", "--elf"])
        .arg(elf)
        .env("CS_ROWS", format!("^{row}$"))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run the catalogue: {e}"))?;
    Ok(st.code().unwrap_or(1))
}

/// The model kernel's ELF (`cargo test --no-run --test model`).
fn model_kernel(root: &Path) -> Option<PathBuf> {
    let out = crate::run::cargo(root)
        .args(["test", "--no-run", "--test", "model", "--message-format=json"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    crate::run::test_executables(&out.stdout).into_iter().find(|(n, _)| n == "model").map(|(_, e)| e)
}

/// Runs the checks (module docs), printing one `ok`/`not ok` line each; Ok(false) when any failed.
pub fn model_check(ctx: &Context, update: bool) -> Result<bool, String> {
    let root = &ctx.root;
    let Some(elf) = model_kernel(root) else {
        say("model-check: could not build the model kernel");
        return Ok(false);
    };
    let abs = |name: &str| root.join(DIR).join(name);
    let shown = |name: &str| format!("{DIR}/{name}");
    fs::create_dir_all(abs("")).map_err(|e| format!("{DIR}: cannot create: {e}"))?;
    let mut fail = false;
    // The three runs side by side (each its own QEMU; -icount is not needed for the model
    // kernel's counts, which its own test rows check).
    let runs = [("on", "model-a.txt"), ("on", "model-b.txt"), ("fast=off", "model-slow.txt")];
    let failed: Vec<Option<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(value, out)| {
                let elf = &elf;
                s.spawn(move || {
                    let log = abs(&format!("{out}.log"));
                    let rc = match boot(ctx, elf, value, &log) {
                        Ok(rc) => rc,
                        Err(e) => return Some(format!("model-check: {e}")),
                    };
                    let recs = records_of(&log, &model_only()).unwrap_or_default();
                    let _ = fs::write(abs(out), &recs);
                    (rc != 0 || recs.is_empty())
                        .then(|| format!("model-check: run with QEMU_CACHE_MODEL={value} failed (exit {rc}); log: {}.log", shown(out)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Some("model-check: a run panicked".into()))).collect()
    });
    let failed: Vec<String> = failed.into_iter().flatten().collect();
    if !failed.is_empty() {
        failed.iter().for_each(|m| say(m));
        return Ok(false);
    }
    let (a, b, slow) = (abs("model-a.txt"), abs("model-b.txt"), abs("model-slow.txt"));
    if same(&a, &b) {
        say(&format!("ok 1 same counts on a second run ({} records)", lines_in(&a)));
    } else {
        say("not ok 1 same counts on a second run");
        diff_head(&a, &b, 10);
        fail = true;
    }
    if same(&a, &slow) {
        say("ok 2 same counts with fast=off");
    } else {
        say("not ok 2 same counts with fast=off");
        diff_head(&a, &slow, 10);
        fail = true;
    }
    let l1d = abs("model-l1d.txt");
    let l1d_only = records::Select { kind: vec!["model".into()], level: Some("L1D".into()), ..Default::default() };
    let _ = fs::write(&l1d, records_of(&a, &l1d_only).unwrap_or_default());
    let baseline = root.join("tests/model.baseline");
    if update {
        fs::copy(&l1d, &baseline).map_err(|e| format!("tests/model.baseline: {e}"))?;
        say(&format!("ok 3 baseline written: tests/model.baseline ({} records)", lines_in(&baseline)));
    } else if same(&l1d, &baseline) {
        say("ok 3 L1D phase counts equal tests/model.baseline");
    } else {
        say("not ok 3 L1D phase counts differ from tests/model.baseline (scripts/model-check --update after a deliberate change)");
        diff_head(&baseline, &l1d, 20);
        fail = true;
    }
    // 4. Benchmarks under the model, with icount like scripts/bench-regress: without it,
    // timer-polling code runs a host-time-dependent number of times and leaves a different set
    // of dirty lines behind, so write-back counts of later phases would vary.
    let elf_main = root.join("target/aarch64-unknown-none/debug/cachescope");
    let built = crate::run::cargo(root).args(["build", "--quiet"]).stdin(Stdio::null()).status();
    if !built.is_ok_and(|s| s.success()) {
        return Ok(false);
    }
    let model_rec = abs("main-model.model");
    let mut rc = 0;
    if update || empty(&model_rec) || older(&model_rec, &elf_main) {
        rc = catalogue_row(ctx, "main-model", &elf_main, &abs("model-bench.log"))?;
    }
    let bench_model = abs("model-bench.model");
    let _ = fs::copy(&model_rec, &bench_model);
    let bench = abs("model-bench.txt");
    let _ = fs::write(&bench, records_of(&bench_model, &drop_run()).unwrap_or_default());
    let bench_base = root.join("tests/baselines/model-bench.txt");
    if rc != 0 || empty(&bench) {
        say(&format!("not ok 4 benchmarks under the model: the main-model row failed (exit {rc}); log: {}", shown("model-bench.log")));
        fail = true;
    } else if update {
        fs::copy(&bench, &bench_base).map_err(|e| format!("tests/baselines/model-bench.txt: {e}"))?;
        say(&format!("ok 4 baseline written: tests/baselines/model-bench.txt ({} records)", lines_in(&bench_base)));
    } else if same(&bench, &bench_base) {
        say(&format!("ok 4 benchmark phase counts under the model equal tests/baselines/model-bench.txt ({} records)", lines_in(&bench)));
    } else {
        say("not ok 4 benchmark phase counts under the model differ from tests/baselines/model-bench.txt (scripts/model-check --update after a deliberate change)");
        diff_head(&bench_base, &bench, 20);
        fail = true;
    }
    // 4b. The digest of the same run (`scripts/report summary`, what `cargo run` ends with): under
    // the model with -icount every line of it is reproducible. Its paths are relative to the
    // repository root, as the baseline has them.
    let digest = abs("model-digest.txt");
    let out = fs::File::create(&digest).map_err(|e| format!("{}: {e}", digest.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let _ = Command::new(root.join("scripts/report"))
        .current_dir(root)
        .arg("summary")
        .arg(shown("main-model.log"))
        .arg("--model")
        .arg(shown("main-model.model"))
        .arg("--icount")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status();
    let digest_base = root.join("tests/baselines/model-digest.txt");
    if update {
        fs::copy(&digest, &digest_base).map_err(|e| format!("tests/baselines/model-digest.txt: {e}"))?;
        say(&format!("ok 4b baseline written: tests/baselines/model-digest.txt ({} lines)", lines_in(&digest_base)));
    } else if same(&digest, &digest_base) {
        say(&format!("ok 4b the digest of the model run equals tests/baselines/model-digest.txt ({} lines)", lines_in(&digest)));
    } else {
        say("not ok 4b the digest of the model run differs from tests/baselines/model-digest.txt (scripts/model-check --update after a deliberate change)");
        diff_head(&digest_base, &digest, 20);
        fail = true;
    }
    // 2b. The main-model-tb1 row passed its expectations and its model records equal main-model's.
    let slow_rec = abs("main-model-tb1.model");
    if update || empty(&slow_rec) || older(&slow_rec, &elf_main) {
        let log = abs("model-tb1.log");
        if catalogue_row(ctx, "main-model-tb1", &elf_main, &log)? != 0 {
            say(&format!("not ok 2b the main-model-tb1 row failed; log: {}", shown("main-model-tb1.log")));
            let text = String::from_utf8_lossy(&fs::read(&log).unwrap_or_default()).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(5)..].iter().for_each(|l| say(l));
            fail = true;
        }
    }
    let tb1 = abs("model-tb1.txt");
    let _ = fs::write(&tb1, records_of(&slow_rec, &drop_run()).unwrap_or_default());
    if empty(&tb1) {
        say(&format!("not ok 2b no model records from the main-model-tb1 row ({})", shown("main-model-tb1.model")));
        fail = true;
    } else if same(&bench, &tb1) {
        say(&format!("ok 2b main-model-tb1 (fast=off, one insn per TB): the same {} records as main-model", lines_in(&tb1)));
    } else {
        say("not ok 2b main-model-tb1 (fast=off, one insn per TB): records differ from main-model's (the shortcut, or TB boundaries)");
        diff_head(&bench, &tb1, 10);
        fail = true;
    }
    // 5. Replays through the reference simulator.
    let replays = [
        ("guest geometry", "", "model-guest.trace"),
        ("profile=rpi5 policy=random impl=silicon", "profile=rpi5,policy=random,impl=silicon,", "model-rpi5.trace"),
    ];
    for (n, (label, cfg, name)) in replays.iter().enumerate() {
        let n = n + 5;
        let trace = abs(name);
        let _ = fs::remove_file(&trace);
        let log = PathBuf::from(format!("{}.log", trace.display()));
        boot(ctx, &elf, &format!("{cfg}trace={}", trace.display()), &log)?;
        let mut test = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        test.current_dir(root).env("CS_MODEL_TRACE", &trace);
        test.args(["test", "--quiet", "--manifest-path", "host/Cargo.toml", "--target", "host-tuple", "-p", "cachescope-cache-model"]);
        test.args(["replay_plugin_trace", "--", "--ignored", "--nocapture"]);
        let (ok, out) = match merged(test) {
            Ok((st, out)) => (st, out),
            Err(e) => (false, e),
        };
        if ok {
            let found: Vec<&str> = out.lines().filter_map(|l| l.find("replay: ").map(|i| &l[i..])).collect();
            say(&format!("ok {n} {} ({label})", found.join("\n")));
        } else {
            say(&format!("not ok {n} reference replay of {} ({label}); log: {}", trace.display(), log.display()));
            let words = ["panicked", "disagree", "left", "right"];
            out.lines().filter(|l| words.iter().any(|w| l.contains(w))).take(8).for_each(say);
            fail = true;
        }
        let _ = fs::remove_file(&trace);
    }
    Ok(!fail)
}

/// A command's stdout and stderr through one pipe (as `$(CMD 2>&1)`): (success, text).
fn merged(mut cmd: Command) -> Result<(bool, String), String> {
    use std::io::Read;
    let (mut r, w) = std::io::pipe().map_err(|e| e.to_string())?;
    let w2 = w.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null()).stdout(w).stderr(w2);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run cargo: {e}"))?;
    drop(cmd);
    let mut bytes = Vec::new();
    let _ = r.read_to_end(&mut bytes);
    let st = child.wait().map_err(|e| e.to_string())?;
    Ok((st.success(), String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_kept_verbatim_and_filtered() {
        let dir = std::env::temp_dir().join(format!("cs-modelcheck-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("x.log");
        let text = "KTAP version 1\n# cs: {\"record\":\"model\",\"source\":\"model\",\"level\":\"L1D\",\"n\":1}\n# cs: {\"record\":\"model-run\",\"source\":\"model\"}\n# cs: {\"record\":\"setway\"}\n";
        fs::write(&log, text).unwrap();
        assert_eq!(
            records_of(&log, &model_only()).unwrap(),
            "# cs: {\"record\":\"model\",\"source\":\"model\",\"level\":\"L1D\",\"n\":1}\n"
        );
        assert_eq!(records_of(&log, &drop_run()).unwrap().lines().count(), 2);
        assert_eq!(lines_in(&log), 4);
        assert!(records_of(&dir.join("missing"), &drop_run()).is_none());
        let other = dir.join("y.log");
        fs::write(&other, text).unwrap();
        assert!(same(&log, &other));
        fs::write(&other, "x").unwrap();
        assert!(!same(&log, &other) && !same(&log, &dir.join("missing")));
        assert!(older(&dir.join("missing"), &log) && !older(&log, &dir.join("missing")));
        fs::remove_dir_all(&dir).unwrap();
    }
}
