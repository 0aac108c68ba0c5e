//! `rotate`: which saved runs scripts/qemu-run keeps in its runs folder.
//!
//! The newest `keep` complete runs (a log with its `end` record) stay, and so does every run
//! newer than the oldest of them (a run that died is evidence too), with at most `keep` of
//! those; older logs go, each with the files named after it (`LOG.model`, `LOG.html`, …). The
//! log of the run just made (`current`) is never removed: the digest printed after it points at
//! it. Only runs are counted: `help` and refused command lines save nothing
//! (`console`), so no number of them can push a run out.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One saved run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The log.
    pub path: PathBuf,
    /// Its modification time (newest first when sorted).
    pub mtime: SystemTime,
    /// It holds the `end` record.
    pub complete: bool,
}

/// The runs to remove, given every run (any order), how many complete runs to keep and the run
/// just made.
pub fn to_remove(mut runs: Vec<Run>, keep: usize, current: Option<&Path>) -> Vec<PathBuf> {
    runs.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| b.path.cmp(&a.path)));
    let (mut complete, mut incomplete) = (0, 0);
    let mut out = Vec::new();
    for r in runs {
        let keep_it = if r.complete {
            complete += 1;
            complete <= keep
        } else {
            incomplete += 1;
            complete < keep && incomplete <= keep
        };
        if !keep_it && current != Some(r.path.as_path()) {
            out.push(r.path);
        }
    }
    out
}

/// Whether a log holds its `end` record.
pub fn is_complete(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.windows(14).any(|w| w == b"\"record\":\"end\""))
}

/// The saved runs in `dir` (`*.log`).
pub fn scan(dir: &Path) -> std::io::Result<Vec<Run>> {
    let mut runs = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let path = e.path();
        if path.extension().is_some_and(|x| x == "log") && e.file_type()?.is_file() {
            let mtime = e.metadata()?.modified()?;
            runs.push(Run { complete: is_complete(&path), path, mtime });
        }
    }
    Ok(runs)
}

/// Removes a log and the files named after it (`LOG.*`).
pub fn remove(log: &Path) -> std::io::Result<()> {
    let name = log.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    if let Some(dir) = log.parent() {
        for e in std::fs::read_dir(dir)?.flatten() {
            if e.file_name().to_string_lossy().starts_with(&format!("{name}.")) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    std::fs::remove_file(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(i: u64, complete: bool) -> Run {
        Run { path: PathBuf::from(format!("r{i:03}.log")), mtime: SystemTime::UNIX_EPOCH + Duration::from_secs(i), complete }
    }

    #[test]
    fn keeps_the_newest_complete_runs_and_the_failures_among_them() {
        // r000..r029 complete; r030..r034 died.
        let mut runs: Vec<Run> = (0..30).map(|i| run(i, true)).collect();
        runs.extend((30..35).map(|i| run(i, false)));
        let gone = to_remove(runs, 20, None);
        assert_eq!(gone, (0..10).rev().map(|i| PathBuf::from(format!("r{i:03}.log"))).collect::<Vec<_>>());
    }

    #[test]
    fn dead_runs_cannot_push_out_a_complete_one() {
        let mut runs = vec![run(0, true)];
        runs.extend((1..=40).map(|i| run(i, false)));
        let gone = to_remove(runs, 20, None);
        assert!(!gone.contains(&PathBuf::from("r000.log")), "the last complete run stays");
        assert_eq!(gone.len(), 20, "at most 20 dead runs are kept");
    }

    #[test]
    fn the_current_run_is_never_removed() {
        let runs: Vec<Run> = (0..25).map(|i| run(i, true)).collect();
        let gone = to_remove(runs, 20, Some(Path::new("r000.log")));
        assert_eq!(gone.len(), 4);
        assert!(!gone.contains(&PathBuf::from("r000.log")));
    }
}
