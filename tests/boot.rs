//! Test kernel: boot facts on every entry EL and CPU model of the catalogue.

#![no_std]
#![no_main]

cachescope::kernel_main!(cachescope::harness::KernelSpec { suites: &[cachescope::suites::boot::SUITE] });
