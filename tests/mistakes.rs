//! Test kernel: the `mistakes` suite alone (src/suites/mistakes.rs) — each classic
//! cache-maintenance mistake made once, on purpose, for the cache model's sanitizer to catch.
//! Rows in tests/catalogue.toml run it with and without the model; `scripts/xtask hazards`
//! checks the model's hazard records against the kernel's `expect-hazard` records.

#![no_std]
#![no_main]

cachescope::kernel_main!(cachescope::harness::KernelSpec { suites: &[cachescope::suites::mistakes::SUITE] });
