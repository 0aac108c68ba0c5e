//! The main job: boot facts → caches → maintenance → MMU → benchmarks, as KTAP with records.

#![no_std]
#![no_main]

cachescope::kernel_main!(cachescope::harness::KernelSpec { suites: cachescope::suites::MAIN });
