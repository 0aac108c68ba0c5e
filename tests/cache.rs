//! Test kernel: the cache suite (topology report and records, set/way walks, VA maintenance,
//! self-modifying code, DC ZVA). tests/catalogue.toml runs it on every 64-bit CPU model QEMU offers
//! and checks each model's `cache`, `clidr` and `setway` records against golden geometry.

#![no_std]
#![no_main]

cachescope::kernel_main!(cachescope::harness::KernelSpec { suites: &[cachescope::suites::cache::SUITE] });
