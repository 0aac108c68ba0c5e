//! `script-help`: every script under scripts/ answers `--help` and `-h` the conventional way —
//! exit status 0, its usage on standard output (first line `scripts/NAME …`, the header comment
//! that scripts/lib/usage.sh prints), and no side effect.
//!
//! The scripts are found by listing the folder (every regular file directly in scripts/), not
//! from a list. They run in a scratch copy of the repository (everything but `.git` and the
//! `target` folders), with HOME, TMPDIR and the caches pointing into the scratch folder, so a
//! script that starts its job instead of printing its usage writes there: a listing of the
//! whole scratch folder (path, type, size, modification time) is taken before and after each
//! call, and any difference fails the call. A call that does not end within the timeout (a
//! script that starts a build or a run) is killed with its process group and fails.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// A script's usage as scripts/lib/usage.sh prints it: the `#` lines after the shebang, without
/// the `#` and one space (for a tool a script execs that answers a later `--help` itself).
pub fn header(script: &str) -> String {
    let lines: Vec<&str> =
        script.lines().skip(1).take_while(|l| l.starts_with('#')).map(|l| l[1..].strip_prefix(' ').unwrap_or(&l[1..])).collect();
    lines.join("\n")
}

/// One entry of a folder listing: type, size, modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `f` file, `d` folder, `l` symbolic link.
    pub kind: char,
    /// Size in bytes (0 for folders).
    pub len: u64,
    /// Modification time (files and links only: a folder's changes show as entries).
    pub modified: Option<SystemTime>,
}

/// Path (relative to the listed folder) → entry, of everything below `dir`.
pub fn listing(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = fs::symlink_metadata(&path) else { continue };
            let rel = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
            let kind = if meta.is_symlink() {
                'l'
            } else if meta.is_dir() {
                'd'
            } else {
                'f'
            };
            if kind == 'd' {
                todo.push(path);
                out.insert(rel, Entry { kind, len: 0, modified: None });
            } else {
                out.insert(rel, Entry { kind, len: meta.len(), modified: meta.modified().ok() });
            }
        }
    }
    out
}

/// What changed between two listings: `+path` new, `-path` gone, `~path` changed.
pub fn changes(before: &BTreeMap<PathBuf, Entry>, after: &BTreeMap<PathBuf, Entry>) -> Vec<String> {
    let mut out = Vec::new();
    for (p, e) in after {
        match before.get(p) {
            None => out.push(format!("+{}", p.display())),
            Some(b) if b != e => out.push(format!("~{}", p.display())),
            Some(_) => {}
        }
    }
    out.extend(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("-{}", p.display())));
    out
}

/// Copies the tree `from` to `to`, leaving out `.git` and every folder named `target`.
/// Permissions are kept (fs::copy); symbolic links are copied as links.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        if name == ".git" || name == "target" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        let meta = fs::symlink_metadata(&src)?;
        if meta.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else if meta.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// The scripts: every regular file directly in `dir`, by name.
pub fn scripts(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(|e| format!("{}: cannot list: {e}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("{}: no script", dir.display()));
    }
    Ok(names)
}

/// How one call ended.
#[derive(Debug)]
struct Call {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs `script flag` in `repo` with the scratch environment; kills its process group after
/// `timeout`.
fn call(repo: &Path, scratch: &Path, out_dir: &Path, script: &str, flag: &str, timeout: Duration) -> Result<Call, String> {
    use std::os::unix::process::CommandExt;
    let (out_path, err_path) = (out_dir.join("stdout"), out_dir.join("stderr"));
    let open = |p: &Path| fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let mut cmd = Command::new(repo.join("scripts").join(script));
    cmd.arg(flag).current_dir(repo).stdin(Stdio::null()).stdout(open(&out_path)?).stderr(open(&err_path)?).process_group(0);
    // Everything a script may write to by default points into the scratch folder; cargo and
    // rustup keep the real toolchain (a script that builds shows as new files under target/).
    cmd.env("HOME", scratch.join("home")).env("TMPDIR", scratch.join("tmp"));
    for v in ["XDG_CACHE_HOME", "CS_CACHE", "CS_XTASK", "CS_LOG", "CS_JUNIT_VENV", "CARGO_TARGET_DIR"] {
        cmd.env_remove(v);
    }
    if std::env::var_os("CARGO_HOME").is_none() {
        cmd.env("CARGO_HOME", home.join(".cargo"));
    }
    if std::env::var_os("RUSTUP_HOME").is_none() {
        cmd.env("RUSTUP_HOME", home.join(".rustup"));
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start scripts/{script}: {e}"))?;
    let start = Instant::now();
    let (code, timed_out) = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break (st.code(), false);
        }
        if start.elapsed() > timeout {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let read = |p: &Path| fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    Ok(Call { code, timed_out, stdout: read(&out_path), stderr: read(&err_path) })
}

/// What is wrong with one call, if anything.
fn verdict(script: &str, c: &Call, wrote: &[String]) -> Option<String> {
    let mut why = Vec::new();
    if c.timed_out {
        why.push("still running at the timeout (killed): it started its job".to_string());
    } else if c.code != Some(0) {
        let last = c.stderr.lines().chain(c.stdout.lines()).rfind(|l| !l.trim().is_empty()).unwrap_or("").trim();
        why.push(format!(
            "exit status {}{}",
            c.code.map_or("none".into(), |n| n.to_string()),
            if last.is_empty() { String::new() } else { format!(" ({last})") }
        ));
    }
    let first = c.stdout.lines().next().unwrap_or("");
    let usage = format!("scripts/{script}");
    if first != usage && !first.starts_with(&format!("{usage} ")) {
        why.push(format!(
            "standard output does not start with a usage line 'scripts/{script} …' (got '{}')",
            first.chars().take(60).collect::<String>()
        ));
    }
    if !wrote.is_empty() {
        let shown: Vec<&str> = wrote.iter().take(3).map(String::as_str).collect();
        why.push(format!("wrote {} path(s): {}{}", wrote.len(), shown.join(" "), if wrote.len() > 3 { " …" } else { "" }));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Checks `--help` and `-h` of every script under `root`/scripts in a scratch copy of `root`.
/// Returns (ok, description) per call.
pub fn check(root: &Path, timeout: Duration) -> Result<Vec<(bool, String)>, String> {
    let names = scripts(&root.join("scripts"))?;
    let base = std::env::temp_dir().join(format!("cachescope-script-help-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    let (scratch, outputs) = (base.join("scratch"), base.join("outputs"));
    let repo = scratch.join("repo");
    let result = (|| {
        copy_tree(root, &repo).map_err(|e| format!("copying {} to {}: {e}", root.display(), repo.display()))?;
        for d in [scratch.join("home"), scratch.join("tmp"), outputs.clone()] {
            fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let mut findings = Vec::new();
        for name in &names {
            for flag in ["--help", "-h"] {
                let before = listing(&scratch);
                let c = call(&repo, &scratch, &outputs, name, flag, timeout)?;
                let wrote = changes(&before, &listing(&scratch));
                let what = format!("scripts/{name} {flag}");
                match verdict(name, &c, &wrote) {
                    None => findings.push((true, what)),
                    Some(why) => findings.push((false, format!("{what}: {why}"))),
                }
            }
        }
        Ok(findings)
    })();
    let _ = fs::remove_dir_all(&base);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_the_comment_after_the_shebang() {
        assert_eq!(header("#!/bin/sh\n# a — b\n#\n#   c\nsource x\n# not this\n"), "a — b\n\n  c");
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cachescope-scripthelp-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn listings_see_new_changed_and_removed_files() {
        let d = tmp("listing");
        fs::write(d.join("a"), "1").unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        fs::write(d.join("sub/b"), "2").unwrap();
        let before = listing(&d);
        assert_eq!(changes(&before, &listing(&d)), Vec::<String>::new());
        fs::write(d.join("a"), "longer").unwrap();
        fs::remove_file(d.join("sub/b")).unwrap();
        fs::create_dir(d.join("target")).unwrap();
        assert_eq!(changes(&before, &listing(&d)), ["~a", "+target", "-sub/b"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_script_that_runs_its_job_fails_and_a_conventional_one_passes() {
        let root = tmp("root");
        fs::create_dir_all(root.join("scripts/lib")).unwrap();
        fs::create_dir_all(root.join("target")).unwrap();
        fs::write(root.join("target/big"), "not copied").unwrap();
        let script = |name: &str, body: &str| {
            let p = root.join("scripts").join(name);
            fs::write(&p, format!("#!/usr/bin/env bash\n# scripts/{name} — a test script\n{body}\n")).unwrap();
            fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        };
        script("good", "case \"$1\" in -h|--help) sed -n 2p \"$0\" | cut -c3-; exit 0;; esac\nexit 1");
        script("builds", "mkdir -p target && touch target/built");
        script("home", "mkdir -p \"$HOME/.cache\"; touch \"$HOME/.cache/x$1\"; echo scripts/home; exit 0");
        script("slow", "echo scripts/slow; sleep 30");
        script("traceback", "echo 'Traceback (most recent call last):' >&2; exit 1");
        let f = check(&root, Duration::from_secs(1)).unwrap();
        let bad: Vec<&str> = f.iter().filter(|(ok, _)| !ok).map(|(_, w)| w.as_str()).collect();
        assert_eq!(f.len(), 10, "{f:?}");
        assert!(f.iter().filter(|(ok, _)| *ok).all(|(_, w)| w.starts_with("scripts/good ")), "{f:?}");
        assert!(bad.iter().any(|w| w.starts_with("scripts/builds --help:") && w.contains("+repo/target/built")), "{bad:?}");
        assert!(bad.iter().any(|w| w.starts_with("scripts/home -h:") && w.contains("+home/.cache/x-h")), "{bad:?}");
        assert!(bad.iter().any(|w| w.starts_with("scripts/slow --help:") && w.contains("killed")), "{bad:?}");
        assert!(bad.iter().any(|w| w.starts_with("scripts/traceback --help: exit status 1 (Traceback")), "{bad:?}");
        assert_eq!(bad.len(), 8);
        fs::remove_dir_all(&root).unwrap();
    }
}
