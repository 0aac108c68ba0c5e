//! Selects the board from boards.toml (the one board description, read through
//! `cachescope-boards`, the reader host/xtask uses too): the `[[board]]` table whose `feature`
//! is enabled (the first table is the default; another board's feature takes precedence; two
//! non-default boards at once are refused). From that table it writes to OUT_DIR:
//! - `board.ld`: the link address for linker.ld (`link_base`);
//! - `bsp_board.rs`: `mod board;` with the `#[path]` of the board's source file
//!   `src/bsp/NAME.rs` (NAME with `-` as `_`), which src/bsp/mod.rs includes;
//! - `board_facts.rs`: the board's facts as constants and its `.rodata` tag (`bsp::facts`).
use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=boards.toml");
    if !target.starts_with("aarch64") || !target.ends_with("-none") {
        return; // host build of the library (unit tests): no board, nothing to link.
    }
    let all = cachescope_boards::load(&manifest.join("boards.toml")).unwrap_or_else(|e| panic!("{e}"));
    let enabled = |feature: &str| env::var_os(format!("CARGO_FEATURE_{}", feature.to_uppercase().replace('-', "_"))).is_some();
    let board = cachescope_boards::select(&all, enabled).unwrap_or_else(|e| panic!("boards.toml: {e}"));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out.join("board.ld"), format!("__kernel_base = {:#x};\n", board.link_base)).unwrap();
    let source = manifest.join("src/bsp").join(board.source_file());
    if !source.is_file() {
        panic!("boards.toml: board '{}' has no source file {}", board.name, source.display());
    }
    println!("cargo:rerun-if-changed={}", source.display());
    fs::write(out.join("bsp_board.rs"), format!("#[path = {:?}]\nmod board;\n", source.display().to_string())).unwrap();
    fs::write(out.join("board_facts.rs"), cachescope_boards::kernel_facts(board)).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-T{}", manifest.join("linker.ld").display());
}
