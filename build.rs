//! Selects the board from boards.toml (the one board description, also read by host/xtask and
//! the scripts): the `[[board]]` table whose `feature` is enabled. The first table is the
//! default board; another board's feature takes precedence over it; two non-default boards at
//! once are refused. From that table: the link address for linker.ld, and the board's source
//! file `src/bsp/NAME.rs` (NAME with `-` as `_`), which src/bsp/mod.rs includes as `board`.
//! The file is read with a minimal parser: `[[board]]` headers and flat `key = value` lines,
//! which is all boards.toml uses.
use std::{env, fs, path::PathBuf};

/// One `[[board]]` table: its `name`, `feature` and `link_base`.
struct Board {
    name: String,
    feature: String,
    link_base: Option<u64>,
}

/// An integer as TOML writes it (`0x4020_0000`, `524288`).
fn integer(text: &str) -> Option<u64> {
    let t: String = text.chars().filter(|&c| c != '_').collect();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

fn boards(text: &str) -> Vec<Board> {
    let mut boards: Vec<Board> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line == "[[board]]" {
            boards.push(Board { name: String::new(), feature: String::new(), link_base: None });
            continue;
        }
        let (Some(board), Some((key, value))) = (boards.last_mut(), line.split_once('=')) else { continue };
        match key.trim() {
            "name" => board.name = value.trim().trim_matches('"').to_string(),
            "feature" => board.feature = value.trim().trim_matches('"').to_string(),
            "link_base" => board.link_base = integer(value.trim()),
            _ => {}
        }
    }
    boards
}

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=boards.toml");
    if !target.starts_with("aarch64") || !target.ends_with("-none") {
        return; // host build of the library (unit tests): nothing to link.
    }
    let path = manifest.join("boards.toml");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let all = boards(&text);
    let enabled = |b: &&Board| {
        let var = format!("CARGO_FEATURE_{}", b.feature.to_uppercase().replace('-', "_"));
        !b.feature.is_empty() && env::var_os(var).is_some()
    };
    // A non-default board's feature wins over the default one (the first table).
    let chosen: Vec<&Board> = all.iter().skip(1).filter(enabled).collect();
    if chosen.len() > 1 {
        panic!(
            "select one board: the features {} exclude each other (boards.toml)",
            chosen.iter().map(|b| format!("`{}`", b.feature)).collect::<Vec<_>>().join(" and ")
        );
    }
    let board = chosen.first().copied().or_else(|| all.first().filter(enabled)).unwrap_or_else(|| {
        panic!(
            "boards.toml: no [[board]] table's feature is enabled (features: {})",
            all.iter().map(|b| b.feature.as_str()).collect::<Vec<_>>().join(", ")
        )
    });
    let base = board.link_base.unwrap_or_else(|| panic!("boards.toml: board with feature '{}': no integer link_base", board.feature));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out.join("board.ld"), format!("__kernel_base = {base:#x};\n")).unwrap();
    let source = manifest.join("src/bsp").join(format!("{}.rs", board.name.replace('-', "_")));
    if !source.is_file() {
        panic!("boards.toml: board '{}' has no source file {}", board.name, source.display());
    }
    println!("cargo:rerun-if-changed={}", source.display());
    fs::write(out.join("bsp_board.rs"), format!("#[path = {:?}]\nmod board;\n", source.display().to_string())).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-T{}", manifest.join("linker.ld").display());
}
