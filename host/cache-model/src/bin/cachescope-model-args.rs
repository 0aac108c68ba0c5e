//! `cachescope-model-args VALUE`: checks a `QEMU_CACHE_MODEL` value with the plugin's own
//! argument parser (`config.rs`, compiled here from the very same file) before QEMU starts, so
//! scripts/qemu-run never restates the profiles or the keys.
//!
//! VALUE is `on` (the guest's geometry), a profile name (`rpi4`), or the plugin's arguments
//! `key=value,…`. On success it prints `profile=NAME` (what the kernel is told) and exits 0; a
//! value the plugin would refuse prints `QEMU_CACHE_MODEL='…': WHY` on standard error
//! (the runner prefixes its name) and exits 2.

// The plugin's modules, from the plugin's files: only the parser is used here.
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../cache.rs"]
mod cache;
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../config.rs"]
mod config;
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../geometry.rs"]
mod geometry;
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../protocol.rs"]
mod protocol;
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../tlb.rs"]
mod tlb;
#[cfg(not(test))]
#[allow(dead_code, unused_imports)]
#[path = "../topology.rs"]
mod topology;

/// The plugin's argument words for a `QEMU_CACHE_MODEL` value (`on` → none, `NAME` →
/// `profile=NAME`, else the comma-separated words).
#[cfg(not(test))]
fn words(value: &str) -> Vec<String> {
    match value {
        "on" => Vec::new(),
        v if !v.contains('=') && !v.contains(',') => vec![format!("profile={v}")],
        v => v.split(',').map(str::to_string).collect(),
    }
}

#[cfg(not(test))]
fn main() {
    let Some(value) = std::env::args().nth(1) else {
        eprintln!("usage: cachescope-model-args QEMU_CACHE_MODEL-VALUE");
        std::process::exit(2);
    };
    match config::Settings::parse(&words(&value)) {
        Ok(s) => println!("profile={}", s.profile_name()),
        Err(e) => {
            eprintln!("QEMU_CACHE_MODEL='{value}': {e}");
            std::process::exit(2);
        }
    }
}
