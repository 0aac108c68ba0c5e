//! The documents name files that exist: every repository path a document in docs/ (and README.md)
//! names — in prose, tables, code blocks or links — is a file or folder of the tree, so a rename
//! or a removal that leaves a document behind fails here.
//!
//! A path is a word starting with one of the repository's top-level folders (`src/`, `host/`,
//! `crates/`, `tests/`, `scripts/`, `docs/`, `examples/`, `.ci/`), or a relative markdown link.
//! Words with a placeholder in capitals (`src/bsp/NAME.rs`, `tests/KERNEL.rs`) are templates and
//! are not looked up; a `*` is a glob that must match at least one file.

use std::path::{Path, PathBuf};

use regex::Regex;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// The paths `text` names, each with its 1-based line number and whether it is a link (relative to
/// the document) or a word (relative to the repository root).
fn named_paths(text: &str) -> Vec<(usize, String, bool)> {
    let word = Regex::new(r"(?:^|[\s`(\[|'])((?:\.\./)?(?:src|host|crates|tests|scripts|docs|examples|\.ci)/[A-Za-z0-9_.*/-]*)").unwrap();
    let link = Regex::new(r"\]\(([^)#\s:]+)(?:#[^)]*)?\)").unwrap();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for c in word.captures_iter(line) {
            out.push((i + 1, c[1].to_string(), c[1].starts_with("../")));
        }
        for c in link.captures_iter(line) {
            out.push((i + 1, c[1].to_string(), true));
        }
    }
    // A link's target also reads as a word: once is enough.
    let mut seen = std::collections::HashSet::new();
    out.retain(|(line, path, _)| seen.insert((*line, path.clone())));
    out
}

/// Whether `word` is a template (`NAME`, `BOARD`, `KIND` …: two or more capitals in a row).
fn is_template(word: &str) -> bool {
    word.as_bytes().windows(2).any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase())
}

/// `pattern` (relative to `base`, `*` within one path component) matches something.
fn exists(base: &Path, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return base.join(pattern).exists();
    }
    let (dir, file) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    let (pre, post) = file.split_once('*').unwrap();
    std::fs::read_dir(base.join(dir)).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post)
        })
    })
}

/// The missing paths of one document, as `doc:line: path`.
fn missing(root: &Path, doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let dir = doc.parent().unwrap();
    let mut out = Vec::new();
    for (line, raw, is_link) in named_paths(&text) {
        let word = raw.trim_end_matches(['.', ',', ':', ';', ')', '\'']);
        if word.is_empty() || is_template(word) {
            continue;
        }
        if !exists(if is_link { dir } else { root }, word) {
            out.push(format!("{}:{line}: {word}", doc.strip_prefix(root).unwrap_or(doc).display()));
        }
    }
    out
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.push(root.join("README.md"));
    docs
}

#[test]
fn every_path_a_document_names_exists() {
    let root = root();
    let missing: Vec<String> = documents(&root).iter().flat_map(|d| missing(&root, d)).collect();
    assert!(missing.is_empty(), "documents name paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_check_finds_a_missing_path() {
    let root = root();
    let dir = std::env::temp_dir().join(format!("cachescope-doc-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let doc = dir.join("x.md");
    std::fs::write(&doc, "`src/console.rs` and `src/lib.rs`, [t](../tests/catalogue.toml), `src/bsp/NAME.rs`, `tests/*.rs`\n").unwrap();
    // The document sits outside docs/: its link resolves against its own folder and fails too.
    let got = missing(&root, &doc);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].ends_with(":1: src/console.rs"), "{got:?}");
    assert!(got[1].ends_with(":1: ../tests/catalogue.toml"), "{got:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
