//! cachescope's cache model for QEMU: a TCG plugin (this crate's cdylib) around a pure,
//! deterministic cache simulator.
//!
//! - [`hierarchy`]: the hierarchy and its rules (the core; no QEMU needed).
//! - [`cache`]: one set-associative tag array and the replacement policies.
//! - [`geometry`]: cache shapes, profiles and the `SIZE:WAYS:LINE` syntax.
//! - [`decode`]: AArch64 decoding of the marker and the maintenance instructions.
//! - [`protocol`]: the marker protocol (shared with the kernel's `src/model_markers.rs`).
//! - [`guest`]: the regime per vCPU (SCTLR/TTBR/TCR/MAIR of each EL), attribute windows,
//!   translations from the guest's tables.
//! - [`walk`]: the stage-1 translation table walker (pure).
//! - [`config`]: plugin arguments.
//! - [`cpu_models`]: the guest CPU's cache geometry from the registers a plugin can read.
//! - [`model_records`]: output records and phases.
//! - [`pc_table`]: the per-PC miss and write-back table (`pc_table=N`).
//! - [`sanitize`]: the cache-maintenance sanitizer's state and hazards.
//! - [`topology`]: clusters, interconnect and core-to-core hand-over costs of a profile.
//! - [`plugin`]: the plugin around the model: translation planning, the shortcut, markers,
//!   records, and the QEMU glue (only the glue is left out of test builds).
//!
//! Licence: GPL-2.0-or-later, because the plugin links the `qemu-plugin` crate (see LICENSE).

#![deny(missing_docs)]

pub mod cache;
pub mod config;
pub mod cpu_models;
pub mod decode;
pub mod geometry;
pub mod guest;
pub mod hierarchy;
pub mod model_records;
pub mod pc_table;
pub mod protocol;
pub mod sanitize;
pub mod tlb;
pub mod topology;
pub mod walk;

pub mod plugin;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tlb;
