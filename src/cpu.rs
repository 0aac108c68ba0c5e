//! The processor as generic code sees it: the one seam in front of the architecture code
//! (`crate::arch::aarch64`). Layers above the board (the SMP runtime, the harness, cache, mem,
//! bench, suites) and the test kernels name the CPU only through this module, never
//! `crate::arch` (the layering check refuses it), so another architecture is this module's
//! re-exports pointed elsewhere.
//!
//! - The core's own registers and instructions: the functions re-exported at this level.
//! - [`cache`]: DC/IC by VA and set/way, DC ZVA, barriers; [`mmu`]: SCTLR/TCR/MAIR/TTBR0, TLBI, AT;
//!   [`pmu`]: the cycle counter and event counters; [`trap`]: the trap catcher (`try_run`);
//!   [`smp`]: starting secondary cores (PSCI, spin table) and which core this is (the mechanism;
//!   the runtime that runs jobs on them is `crate::smp`); [`psci`]: PSCI calls through a conduit.

pub use crate::arch::cpu::{counter, current_el, load_u32_raw, midr, mpidr, park, store_u32_raw, timer_frequency, undefined_instruction};
pub use crate::arch::{cache, mmu, pmu, psci, smp, trap};
