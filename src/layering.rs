//! Host test of the layering rule (see the crate root): reads every source file, collects the
//! crate's top-level modules each one names outside `#[cfg(test)]` items, and fails on a
//! reference to a higher layer, naming file, line and edge.
//!
//! A reference is any path into the crate, however it is written:
//! - `crate::NAME…` and `$crate::NAME…` (macro bodies), also grouped: `use crate::{a::x, b,
//!   c::{y, z}}` names `a`, `b` and `c`;
//! - `super::…` resolved against the file's module (and the inline `mod NAME { … }` it is in):
//!   going above the crate root's children names the module that follows;
//! - a macro exported at the crate root (`#[macro_export]`), called as `crate::NAME!` or by its
//!   bare name: the module that defines it.
//!
//! One module has a second rule: `arch` is named only by its facade `cpu` and by the platform
//! layers under the SMP runtime (`bsp`, `boot_info`, `panic`); everything above uses `cpu`.
//! (The compiler enforces the same for other crates: `arch` is private to the kernel crate.)

use std::{fs, path::Path, string::String, vec::Vec};

/// (top-level module, layer), bottom up. The crate root (lib.rs, main.rs) is glue and exempt.
const LAYERS: &[(&str, u8)] = &[
    ("drivers", 0),
    ("firmware", 0),
    ("exception", 0),
    ("cpuid", 0),
    ("console", 0),
    ("arch", 1),
    ("cpu", 1),
    ("record", 1),
    ("model_markers", 2),
    ("bsp", 3),
    ("boot_info", 4),
    ("panic", 4),
    ("smp", 5),
    ("harness", 6),
    ("cache", 7),
    ("mem", 8),
    ("bench", 9),
    ("suites", 10),
];

/// (module, its facade, the modules besides the facade that may name the module itself).
const FACADES: &[(&str, &str, &[&str])] = &[("arch", "cpu", &["bsp", "boot_info", "panic"])];

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// A token of Rust source: an identifier (`$crate` is one) or one punctuation character
/// (`::` is one token), with its line. Comments, strings and character literals are dropped.
#[derive(Clone, Debug, PartialEq)]
struct Tok {
    text: String,
    line: usize,
}

fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == 'r' && (next == Some('"') || (next == Some('#') && matches!(c.get(i + 2), Some('"') | Some('#')))) {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < c.len() && !(c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#'))) {
                line += usize::from(c[j] == '\n');
                j += 1;
            }
            i = j + 1 + hashes;
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a: only the quote goes).
            if next == Some('\\') {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ident(ch) || (ch == '$' && next.is_some_and(ident)) {
            let start = i;
            i += 1;
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
            out.push(Tok { text: c[start..i].iter().collect(), line });
        } else if ch == ':' && next == Some(':') {
            out.push(Tok { text: "::".into(), line });
            i += 2;
        } else {
            out.push(Tok { text: ch.to_string(), line });
            i += 1;
        }
    }
    out
}

/// Drops every item (or statement) carrying `#[cfg(test)]`: from the attribute to the item's
/// `;` or to the `}` that closes its body.
fn without_test_items(toks: Vec<Tok>) -> Vec<Tok> {
    let is = |t: &[Tok], at: usize, words: &[&str]| words.iter().enumerate().all(|(k, w)| t.get(at + k).is_some_and(|x| x.text == *w));
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !is(&toks, i, &["#", "[", "cfg", "(", "test", ")", "]"]) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        let mut depth = 0i32;
        while i < toks.len() {
            match toks[i].text.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" => depth -= 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                ";" if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The module path of a source file relative to `src/`: `bench/dl.rs` is `bench::dl`,
/// `mem/mod.rs` is `mem`.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The names of the macros `text` exports at the crate root (`#[macro_export] macro_rules! NAME`).
fn exported_macros(text: &str) -> Vec<String> {
    let t = without_test_items(tokens(text));
    let mut out = Vec::new();
    for i in 0..t.len() {
        let w = |k: usize| t.get(i + k).map_or("", |x| x.text.as_str());
        if w(0) == "#" && w(1) == "[" && w(2) == "macro_export" && w(3) == "]" && w(4) == "macro_rules" && w(5) == "!" {
            out.push(w(6).to_string());
        }
    }
    out
}

/// The names at the first level of the group opening at `toks[open]` (`{`): `{a::x, b, c::{y}}`
/// gives a, b and c; `self` (the path before the group) is left out. Returns them with the index
/// after the group's `}`.
fn group(toks: &[Tok], open: usize) -> (Vec<(usize, String)>, usize) {
    let mut names = Vec::new();
    let (mut depth, mut i, mut start) = (0, open, true);
    while i < toks.len() {
        let t = &toks[i].text;
        match t.as_str() {
            "{" => {
                depth += 1;
                start = depth == 1;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return (names, i + 1);
                }
            }
            "," if depth == 1 => start = true,
            _ if start && depth == 1 => {
                if t != "self" {
                    names.push((toks[i].line, t.clone()));
                }
                start = false;
            }
            _ => {}
        }
        i += 1;
    }
    (names, i)
}

/// Every top-level name of the crate that `text` (the file at module path `file`) uses outside
/// test items: (line number, name); a bare call of one of `macros` (the crate's exported macros
/// with the module that defines each) is that module.
fn references(text: &str, file: &[String], macros: &[(String, String)]) -> Vec<(usize, String)> {
    let toks = without_test_items(tokens(text));
    let mut out = Vec::new();
    // The inline modules the scan is in: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    // The top-level name at toks[at] (after `crate::`, or after `super::`s that reached the
    // crate root), or every name of a group there.
    let named = |out: &mut Vec<(usize, String)>, at: usize| -> usize {
        match toks.get(at) {
            Some(t) if t.text == "{" => {
                let (names, next) = group(&toks, at);
                out.extend(names);
                next
            }
            Some(t) => {
                out.push((t.line, t.text.clone()));
                at + 1
            }
            None => at,
        }
    };
    while i < toks.len() {
        let t = toks[i].text.as_str();
        let next = toks.get(i + 1).map_or("", |x| x.text.as_str());
        match t {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if toks.get(i + 2).is_some_and(|x| x.text == "{") => {
                inline.push((next.to_string(), depth + 1));
            }
            "crate" | "$crate" if next == "::" => {
                i = named(&mut out, i + 2);
                continue;
            }
            "super" if next == "::" && toks.get(i.wrapping_sub(1)).is_none_or(|p| p.text != "::") => {
                let mut path: Vec<String> = file.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
                let mut j = i;
                while toks.get(j).is_some_and(|x| x.text == "super") && toks.get(j + 1).is_some_and(|x| x.text == "::") {
                    path.pop();
                    j += 2;
                }
                match path.first() {
                    Some(top) => {
                        out.push((toks[i].line, top.clone()));
                        i = j;
                    }
                    None => i = named(&mut out, j),
                }
                continue;
            }
            _ if next == "!" && toks.get(i.wrapping_sub(1)).is_none_or(|p| p.text != "::" && p.text != "macro_rules") => {
                if let Some((_, module)) = macros.iter().find(|(m, _)| m == t) {
                    out.push((toks[i].line, module.clone()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every edge of `files` ((path relative to `src/`, text)) that breaks the rule, as
/// `src/FILE:LINE: …`; an error when a module has no layer.
fn violations(files: &[(String, String)]) -> Result<Vec<String>, String> {
    let top_of = |rel: &str| module_path(rel)[0].clone();
    let exempt = |rel: &str| matches!(top_of(rel).as_str(), "lib" | "main" | "layering" | "test_rng") || rel.ends_with("/tests.rs");
    let mut macros = Vec::new();
    for (rel, text) in files {
        macros.extend(exported_macros(text).into_iter().map(|m| (m, top_of(rel))));
    }
    let mut bad = Vec::new();
    for (rel, text) in files.iter().filter(|(rel, _)| !exempt(rel)) {
        let top = top_of(rel);
        let from = layer(&top).ok_or_else(|| format!("src/{rel}: module '{top}' has no layer in layering.rs"))?;
        for (line, name) in references(text, &module_path(rel), &macros) {
            // An exported macro named by path (`crate::diag!`, `use crate::{diag, …}`): its module.
            let name = match macros.iter().find(|(m, _)| *m == name) {
                Some((_, module)) if layer(&name).is_none() => module.clone(),
                _ => name,
            };
            if name == top || matches!(name.as_str(), "lib" | "main") {
                continue;
            }
            let to = layer(&name).ok_or_else(|| format!("src/{rel}:{line}: crate::{name} has no layer in layering.rs"))?;
            if to > from {
                bad.push(format!("src/{rel}:{line}: {top} (layer {from}) imports crate::{name} (layer {to})"));
            }
            for (module, facade, users) in FACADES {
                if name == *module && top != *facade && !users.contains(&top.as_str()) {
                    bad.push(format!("src/{rel}:{line}: {top} names crate::{module} (only through its facade crate::{facade})"));
                }
            }
        }
    }
    Ok(bad)
}

fn files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn no_module_imports_upward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    assert!(all.len() > 50, "read {} files under {}", all.len(), src.display());
    let bad = violations(&all).unwrap_or_else(|e| panic!("{e}"));
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn one(rel: &str, text: &str) -> Vec<String> {
        violations(&[(rel.to_string(), text.to_string())]).unwrap()
    }

    fn refs(file: &str, text: &str) -> Vec<(usize, String)> {
        references(text, &module_path(file), &[("diag".to_string(), "drivers".to_string())])
    }

    fn own(v: &[(usize, &str)]) -> Vec<(usize, String)> {
        v.iter().map(|&(l, n)| (l, n.to_string())).collect()
    }

    /// The exception handler's imports before it stopped calling the board: the grouped import
    /// that the line-based checker missed.
    #[test]
    fn the_arch_to_bsp_edge_fails() {
        let old = "use crate::arch::smp::{self, MAX_CORES};\nuse crate::exception::{ec, ExceptionKind};\nuse crate::{arch::cpu, arch::trap, bsp, console};\n\nfn fatal(core: usize) -> ! {\n    if core == 0 {\n        bsp::exit(3)\n    }\n    cpu::park()\n}\n";
        assert_eq!(one("arch/aarch64/exception.rs", old), ["src/arch/aarch64/exception.rs:3: arch (layer 1) imports crate::bsp (layer 3)"]);
        let now = old.replace("arch::trap, bsp, console}", "arch::trap, console}");
        assert_eq!(one("arch/aarch64/exception.rs", &now), Vec::<String>::new());
    }

    #[test]
    fn grouped_and_nested_groups_and_lines() {
        let text = "use crate::{\n    harness::Ctx,\n    cache::{a, b::{c}},\n    self,\n};\nlet x = crate::mem::z(crate::bench::y);\n";
        assert_eq!(refs("suites/x.rs", text), own(&[(2, "harness"), (3, "cache"), (6, "mem"), (6, "bench")]));
    }

    #[test]
    fn super_resolves_against_the_file_and_inline_modules() {
        // In bench/dl.rs, super:: is bench; two supers reach the root: the next name counts.
        let text = "use super::caching::x;\nuse super::super::harness::Ctx;\nuse super::super::{cache, mem::y};\nmod inner {\n    use super::super::suites;\n}\n";
        assert_eq!(refs("bench/dl.rs", text), own(&[(1, "bench"), (2, "harness"), (3, "cache"), (3, "mem"), (5, "bench")]));
        // In a top-level file, one super reaches the root.
        assert_eq!(
            refs("boot_info.rs", "mod target {\n    use super::BootInfo;\n}\nuse super::suites::X;\n"),
            own(&[(2, "boot_info"), (4, "suites")])
        );
        assert_eq!(one("cache/mod.rs", "use super::bench::Env;\n"), ["src/cache/mod.rs:1: cache (layer 7) imports crate::bench (layer 9)"]);
    }

    #[test]
    fn macro_paths_and_exported_macros() {
        let text = "macro_rules! m {\n    () => { $crate::suites::run() };\n}\ncrate::diag!(\"x\");\ndiag!(\"y\");\nprintln!(\"std's, not the crate's\");\n";
        assert_eq!(refs("harness/x.rs", text), own(&[(2, "suites"), (4, "diag"), (5, "drivers")]));
        let defs = "#[macro_export]\nmacro_rules! shout {\n    () => { $crate::console::write() };\n}\n";
        assert_eq!(exported_macros(defs), ["shout"]);
        let uses = "fn f() { shout!(); }\nuse crate::{shout, console};\nfn g() { crate::shout!(); }\n";
        let files = [("suites/s.rs".to_string(), defs.to_string()), ("cache/c.rs".to_string(), uses.to_string())];
        let want: Vec<String> = (1..=3).map(|l| format!("src/cache/c.rs:{l}: cache (layer 7) imports crate::suites (layer 10)")).collect();
        assert_eq!(violations(&files).unwrap(), want);
    }

    #[test]
    fn test_items_comments_and_strings_are_skipped() {
        let text = "// crate::suites in a comment\n/* crate::bench\n */\nlet s = \"crate::mem\";\nlet r = r#\"crate::mem\"#;\nlet c = '\"'; let l: &'static str = x;\n#[cfg(test)]\nuse crate::suites;\n#[cfg(test)]\nmod tests {\n    use crate::bench;\n}\n#[cfg(not(test))]\nuse crate::cache;\n";
        assert_eq!(refs("harness/x.rs", text), own(&[(14, "cache")]));
    }

    #[test]
    fn arch_only_through_its_facade() {
        assert_eq!(
            one("suites/mmu.rs", "use crate::arch::mmu::SCTLR_M;\n"),
            ["src/suites/mmu.rs:1: suites names crate::arch (only through its facade crate::cpu)"]
        );
        assert_eq!(one("suites/mmu.rs", "use crate::cpu::mmu::SCTLR_M;\n"), Vec::<String>::new());
        assert_eq!(one("bsp/rpi4.rs", "use crate::arch::smp;\n"), Vec::<String>::new());
        assert_eq!(one("cpu.rs", "pub use crate::arch::{cache, mmu};\n"), Vec::<String>::new());
    }

    #[test]
    fn a_module_without_a_layer_is_an_error() {
        let e = violations(&[("nowhere.rs".to_string(), String::new())]).unwrap_err();
        assert_eq!(e, "src/nowhere.rs: module 'nowhere' has no layer in layering.rs");
        let e = violations(&[("cache/x.rs".to_string(), "use crate::nowhere;\n".to_string())]).unwrap_err();
        assert_eq!(e, "src/cache/x.rs:1: crate::nowhere has no layer in layering.rs");
    }
}
