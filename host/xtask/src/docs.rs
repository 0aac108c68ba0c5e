//! `docs-run`: the README's and docs' runnable commands, run.
//!
//! A fenced block whose info string has the word `runnable` (```` ```sh runnable ````) holds
//! commands a reader can type as they are; each of its lines (a trailing `\` continues it, `#`
//! lines are comments) is run with `bash -c` at the repository root, in parallel, each with a
//! timeout, and any non-zero status fails the phase. Runs save nowhere a user would look: the
//! runner's folder of saved runs is a scratch folder (`CS_RUNS`), removed afterwards. A file set
//! with no runnable command at all is a failure too (a phase that checks nothing cannot pass).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One runnable command and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runnable {
    /// The Markdown file, as given.
    pub file: String,
    /// 1-based line of the command's first line.
    pub line: usize,
    /// The command.
    pub command: String,
}

/// The runnable commands of one Markdown text.
pub fn runnables(file: &str, text: &str) -> Vec<Runnable> {
    let mut out = Vec::new();
    let mut fence: Option<(&str, bool)> = None;
    let mut pending: Option<Runnable> = None;
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim_start();
        match fence {
            None => {
                for marker in ["```", "~~~"] {
                    if let Some(info) = t.strip_prefix(marker) {
                        let runnable = info.split(|c: char| c.is_whitespace() || c == ',').any(|w| w == "runnable");
                        fence = Some((marker, runnable));
                        break;
                    }
                }
            }
            Some((marker, runnable)) => {
                if t.starts_with(marker) {
                    fence = None;
                    out.extend(pending.take());
                    continue;
                }
                if !runnable {
                    continue;
                }
                let (body, continues) = match t.trim_end().strip_suffix('\\') {
                    Some(b) => (b.trim_end(), true),
                    None => (t.trim_end(), false),
                };
                match &mut pending {
                    Some(p) => {
                        p.command.push(' ');
                        p.command.push_str(body.trim());
                    }
                    None if body.is_empty() || body.starts_with('#') => continue,
                    None => pending = Some(Runnable { file: file.to_string(), line: i + 1, command: body.to_string() }),
                }
                if !continues {
                    out.extend(pending.take());
                }
            }
        }
    }
    out
}

/// How one command ended.
struct Outcome {
    status: Option<i32>,
    secs: f64,
    output: String,
}

fn run_one(root: &Path, scratch: &Path, cmd: &str, timeout: Duration) -> Outcome {
    let t0 = Instant::now();
    // coreutils' timeout runs the command in a process group of its own and ends that group
    // (cargo, the runner, QEMU) when the time is up: status 124, or 137 after the KILL.
    let out = Command::new("timeout")
        .arg("-k")
        .arg("5")
        .arg(timeout.as_secs().max(1).to_string())
        .arg("bash")
        .arg("-c")
        .arg(format!("{cmd} 2>&1"))
        .current_dir(root)
        .env("CS_RUNS", scratch)
        .env_remove("CS_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let status = o.status.code().filter(|c| *c != 124 && *c != 137);
            Outcome { status, secs: t0.elapsed().as_secs_f64(), output: String::from_utf8_lossy(&o.stdout).into_owned() }
        }
        Err(e) => Outcome { status: None, secs: 0.0, output: format!("cannot start timeout/bash: {e}") },
    }
}

/// Runs every runnable command of `files` (`jobs` at a time), prints a KTAP line per command
/// and returns the number that failed.
pub fn run(root: &Path, files: &[PathBuf], jobs: usize, timeout: Duration) -> Result<usize, String> {
    let mut all = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: cannot read: {e}", f.display()))?;
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        all.extend(runnables(&name, &text));
    }
    if all.is_empty() {
        return Err("no runnable command (a fenced block tagged `runnable`) in the files given".into());
    }
    let scratch = std::env::temp_dir().join(format!("cachescope-docs-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Outcome>>> = all.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(r) = all.get(i) else { break };
                let o = run_one(root, &scratch, &r.command, timeout);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(o);
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    println!("KTAP version 1\n1..{}", all.len());
    let mut failed = 0;
    for (i, (r, o)) in all.iter().zip(results).enumerate() {
        let o = o.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or(Outcome { status: None, secs: 0.0, output: String::new() });
        if o.status == Some(0) {
            println!("ok {} {}:{} {} # {:.1} s", i + 1, r.file, r.line, r.command, o.secs);
        } else {
            failed += 1;
            let why = o.status.map_or(format!("killed after {:.0} s", o.secs), |c| format!("exit status {c}"));
            println!("not ok {} {}:{} {} # {why}", i + 1, r.file, r.line, r.command);
            for l in o.output.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev() {
                println!("#   | {l}");
            }
        }
    }
    println!("# docs-run: {} passed, {failed} failed", all.len() - failed);
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_blocks_tagged_runnable_count() {
        let md = "# T\n```sh\nrm -rf /\n```\n\n```sh runnable\n# a comment\ncargo run -- help\n\nscripts/report summary x \\\n   --icount\n```\n~~~ runnable\necho hi\n~~~\n```\nnot this\n```\n";
        let r = runnables("README.md", md);
        let got: Vec<(usize, &str)> = r.iter().map(|r| (r.line, r.command.as_str())).collect();
        assert_eq!(got, vec![(8, "cargo run -- help"), (10, "scripts/report summary x --icount"), (14, "echo hi")]);
    }

    #[test]
    fn a_failing_command_fails_and_nothing_runnable_is_an_error() {
        let dir = std::env::temp_dir().join(format!("cs-docs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.md");
        std::fs::write(&f, "```sh runnable\ntrue\nexit 3\nsleep 3\n```\n").unwrap();
        assert_eq!(run(&dir, std::slice::from_ref(&f), 3, Duration::from_secs(1)), Ok(2), "exit 3 and the timeout fail");
        std::fs::write(&f, "```sh\ntrue\n```\n").unwrap();
        assert!(run(&dir, &[f], 1, Duration::from_secs(1)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
