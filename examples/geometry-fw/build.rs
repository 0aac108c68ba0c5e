//! Links the firmware with its own linker script (the kernel's is not involved).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo:rerun-if-changed=link.ld");
    if std::env::var("TARGET").is_ok_and(|t| t.ends_with("-none")) {
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
    }
}
