//! The suites every kernel binary can run, in the main job's order: boot facts → caches →
//! maintenance → MMU → benchmarks. A new suite is one module plus one line in [`MAIN`].

pub mod bench;
pub mod boot;
pub mod cache;
pub mod mistakes;
pub mod mmu;
pub mod selftest;
pub mod smp;

use crate::harness::Suite;

/// The main job (`cargo run`), in order.
pub const MAIN: &[Suite] = &[
    boot::SUITE,
    cache::SUITE,
    mmu::SUITE,
    bench::SUITE,
    smp::SUITE,
    mistakes::SUITE,
    selftest::ABORT,
    selftest::HANG,
    selftest::PANIC,
    smp::SELFTEST,
];
