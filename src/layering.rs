//! Host test of the layering rule (see the crate root): reads every source file, collects its
//! `crate::NAME` references outside `#[cfg(test)]` code, and fails on a reference to a higher
//! layer, naming file, line and edge.

use std::{fs, path::Path, string::String, vec::Vec};

/// (top-level module, layer). The crate root (lib.rs, main.rs) is glue and exempt.
const LAYERS: &[(&str, u8)] = &[
    ("drivers", 0),
    ("firmware", 0),
    ("exception", 0),
    ("cpuid", 0),
    ("arch", 1),
    ("console", 0),
    ("model", 2),
    // the console's macros, exported at the crate root
    ("print", 0),
    ("println", 0),
    ("diag", 0),
    ("bsp", 3),
    ("boot_info", 4),
    ("panic", 4),
    ("harness", 5),
    ("cache", 6),
    ("mem", 7),
    ("bench", 8),
    ("suites", 9),
];

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// Every `crate::NAME` reference of `text` outside test code: (line number, NAME).
fn references(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_test = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            in_test = true; // test code runs last in every file of this crate
        }
        if in_test || line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let name: String = rest[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            out.push((i + 1, name));
            rest = &rest[at + 7..];
        }
    }
    out
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_upward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut upward = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_string();
        // Test modules in their own files (`mod tests;` under #[cfg(test)]) are test code.
        if matches!(top.as_str(), "lib" | "main" | "layering" | "test_rng") || path.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let from = layer(&top).unwrap_or_else(|| panic!("src/{}: module '{top}' has no layer in layering.rs", rel.display()));
        for (line, name) in references(&fs::read_to_string(path).unwrap()) {
            if name == top || name.is_empty() {
                continue;
            }
            let Some(to) = layer(&name) else { panic!("src/{}:{line}: crate::{name} has no layer in layering.rs", rel.display()) };
            if to > from {
                upward.push(std::format!("src/{}:{line}: {top} (layer {from}) imports crate::{name} (layer {to})", rel.display()));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn references_skip_tests_and_comments() {
    let text = "use crate::harness::Ctx;\n// crate::suites in a comment\nlet x = crate::cache::y(crate::mem::z);\n#[cfg(test)]\nuse crate::suites;\n";
    let want: Vec<(usize, String)> = [(1, "harness"), (3, "cache"), (3, "mem")].iter().map(|&(l, n)| (l, String::from(n))).collect();
    assert_eq!(references(text), want);
}
