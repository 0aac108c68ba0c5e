//! Test kernel: translation tables, memory attributes, alias windows, MMU/cache control and the
//! expected faults, on every entry EL and CPU model of the catalogue.

#![no_std]
#![no_main]

cachescope::kernel_main!(cachescope::harness::KernelSpec { suites: &[cachescope::suites::mmu::SUITE] });
