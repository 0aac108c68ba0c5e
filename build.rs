//! Selects the board's link address for linker.ld and passes the script to every kernel binary.
use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    if !target.starts_with("aarch64") || !target.ends_with("-none") {
        return; // host build of the library (unit tests): nothing to link.
    }
    let rpi4 = env::var_os("CARGO_FEATURE_RPI4").is_some();
    let rpi5 = env::var_os("CARGO_FEATURE_RPI5").is_some();
    // QEMU virt keeps its DTB at the base of RAM only when the image starts at or above
    // 0x4010_0000 (see README: boot facts); the Pi firmware loads kernel8.img at 0x8_0000.
    let base: u64 = match (rpi4, rpi5) {
        (false, false) => 0x4020_0000,
        (true, false) | (false, true) => 0x8_0000,
        // src/bsp/mod.rs reports this combination as a compile error with a clear message.
        (true, true) => 0x8_0000,
    };
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out.join("board.ld"), format!("__kernel_base = {base:#x};\n")).unwrap();
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-T{}", manifest.join("linker.ld").display());
}
