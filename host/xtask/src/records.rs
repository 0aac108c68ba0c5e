//! Records (`# cs: {json}` lines) read with serde_json, for the scripts that used to add them up
//! with grep and awk: the `records` filter (scripts/model-check, scripts/bench-model) and
//! `setway-observed`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::boards::Board;
use crate::run::say;

/// The records of a log or model file, read by the report tool's record parser
/// (`cachescope_report::records::parse_line`: the one reader of `# cs: {…}` lines), each with
/// the line as written (for verbatim baselines); broken record lines are left out.
pub fn records(text: &str) -> Vec<(&str, Map<String, Value>)> {
    text.lines().filter_map(|line| Some((line, cachescope_report::records::parse_line(line)?.ok()?))).collect()
}

/// A record's kind (its `record` field).
pub fn kind(rec: &Map<String, Value>) -> &str {
    rec.get("record").and_then(Value::as_str).unwrap_or("")
}

/// Which records to keep.
#[derive(Clone, Debug, Default)]
pub struct Select {
    /// Only this `source`.
    pub source: Option<String>,
    /// Only these kinds (empty: any).
    pub kind: Vec<String>,
    /// Not these kinds.
    pub drop_kind: Vec<String>,
    /// Only this `level`.
    pub level: Option<String>,
}

impl Select {
    /// Whether `rec` passes.
    pub fn keeps(&self, rec: &Map<String, Value>) -> bool {
        let field_is =
            |name: &str, want: &Option<String>| want.as_ref().is_none_or(|w| rec.get(name).and_then(Value::as_str) == Some(w.as_str()));
        let k = kind(rec);
        field_is("source", &self.source)
            && field_is("level", &self.level)
            && (self.kind.is_empty() || self.kind.iter().any(|x| x == k))
            && !self.drop_kind.iter().any(|x| x == k)
    }
}

/// What `setway-observed` compares for one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetwayCount {
    /// `setway` records (walks) in the kernel's log.
    pub walks: usize,
    /// Sum of their `ops`.
    pub kernel_ops: u64,
    /// The plugin's `model-run` `setway_ops`, if it wrote one.
    pub observed: Option<u64>,
}

/// Adds up the kernel's `setway` ops and reads the plugin's count.
pub fn setway_count(log: &str, model: &str) -> SetwayCount {
    let walks: Vec<u64> =
        records(log).iter().filter(|(_, r)| kind(r) == "setway").map(|(_, r)| r.get("ops").and_then(Value::as_u64).unwrap_or(0)).collect();
    let observed = records(model).iter().find(|(_, r)| kind(r) == "model-run").and_then(|(_, r)| r.get("setway_ops")?.as_u64());
    SetwayCount { walks: walks.len(), kernel_ops: walks.iter().sum(), observed }
}

/// Builds the cache-model plugin once (scripts/qemu-run then finds it built).
pub fn build_plugin(root: &Path) -> Result<(), String> {
    let st = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "--release",
            "--manifest-path",
            "host/Cargo.toml",
            "--target",
            "host-tuple",
            "-p",
            "cachescope-cache-model",
        ])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err("building the cache-model plugin failed".into())
    }
}

/// Runs the main job's cache suite under the cache model on each CPU (`jobs` at a time) and
/// prints one ok/not ok line per CPU. Returns whether all agreed.
pub fn setway_observed(root: &Path, elf: &Path, boards: &[Board], cpus: &[String], jobs: usize) -> Result<bool, String> {
    if !elf.is_file() {
        return Err(format!("no such kernel: {} (cargo build)", elf.display()));
    }
    let board = crate::run::board_of(elf, boards)?;
    if crate::boards::find(boards, &board).map_err(|e| e.0)?.qemu.as_ref().is_none_or(|q| q.cpu.is_none()) {
        return Err(format!("{} is built for '{board}', whose QEMU machine has a fixed CPU: setway-observed needs a board whose machine takes -cpu (the default build)", elf.display()));
    }
    build_plugin(root)?;
    let logs = root.join("target/cachescope-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let queue = Mutex::new(cpus.iter().enumerate().collect::<Vec<_>>());
    let results: Mutex<Vec<Option<String>>> = Mutex::new(vec![None; cpus.len()]);
    let ok = Mutex::new(true);
    std::thread::scope(|s| {
        for _ in 0..jobs.min(cpus.len()).max(1) {
            s.spawn(|| loop {
                let next = queue.lock().map(|mut q| q.pop()).unwrap_or(None);
                let Some((i, cpu)) = next else { break };
                let (line, good) = setway_one(root, elf, &logs, cpu);
                if !good {
                    *ok.lock().unwrap_or_else(|e| e.into_inner()) = false;
                }
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(line);
            });
        }
    });
    for line in results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten() {
        say(&line);
    }
    Ok(ok.into_inner().unwrap_or_else(|e| e.into_inner()))
}

fn setway_one(root: &Path, elf: &Path, logs: &Path, cpu: &str) -> (String, bool) {
    let log: PathBuf = logs.join(format!("setway-observed-{cpu}.log"));
    let model = PathBuf::from(format!("{}.model", log.display()));
    let _ = std::fs::remove_file(&model);
    let out = Command::new(root.join("scripts/qemu-run"))
        .arg(elf)
        .arg("only=cache")
        .env("QEMU_CPU", cpu)
        .env("QEMU_CACHE_MODEL", "on")
        .env("CS_MODEL_LOG", &model)
        .env("QEMU_TIMEOUT", "60")
        .env("CS_CACHE_MODEL_BUILT", "1")
        .env("CS_XTASK", std::env::current_exe().unwrap_or_default())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output();
    let (rc, text) = match out {
        Ok(o) => (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).replace('\r', "")),
        Err(e) => (-1, format!("cannot start scripts/qemu-run: {e}\n")),
    };
    let _ = std::fs::write(&log, &text);
    let model_text = std::fs::read(&model).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let c = setway_count(&text, &model_text);
    if rc == 0 && c.walks > 0 && c.observed == Some(c.kernel_ops) {
        (format!("ok - {cpu}: {} walks, kernel reported {} DC set/way ops, plugin observed {}", c.walks, c.kernel_ops, c.kernel_ops), true)
    } else {
        let observed = c.observed.map_or("none".to_string(), |o| o.to_string());
        let shown = log.strip_prefix(root).unwrap_or(&log).display().to_string();
        (
            format!(
                "not ok - {cpu}: exit {rc}, {} walks, kernel reported {}, plugin observed '{observed}' (log {shown})",
                c.walks, c.kernel_ops
            ),
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_setway_sums() {
        let log = "KTAP version 1\n  # cs: {\"record\":\"setway\",\"op\":\"csw\",\"ops\":16896}\n# cs: {\"record\":\"setway\",\"ops\":512}\n# cs: {bad json\n# cs: {\"record\":\"end\"}\n";
        let model = "# cs: {\"record\":\"model-run\",\"setway_ops\":17408,\"source\":\"model\"}\n";
        assert_eq!(records(log).len(), 3);
        assert_eq!(setway_count(log, model), SetwayCount { walks: 2, kernel_ops: 17408, observed: Some(17408) });
        assert_eq!(setway_count(log, "").observed, None);
        let sel = Select { source: Some("model".into()), drop_kind: vec!["model-run".into()], ..Default::default() };
        assert!(!sel.keeps(&records(model)[0].1));
        let sel = Select { kind: vec!["setway".into()], ..Default::default() };
        assert_eq!(records(log).iter().filter(|(_, r)| sel.keeps(r)).count(), 2);
        assert_eq!(records(log)[0].0, "  # cs: {\"record\":\"setway\",\"op\":\"csw\",\"ops\":16896}");
    }
}
