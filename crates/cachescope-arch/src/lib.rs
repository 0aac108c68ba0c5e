//! `cachescope-arch`: the parts of cachescope that other AArch64 firmware can use as they are.
//!
//! `no_std`, no allocation, no panic handler, allocator, entry point or console: the caller
//! brings those. Everything decodes raw values or works through a small backend trait, so it
//! runs in host tests with recorded register values and on the target with real registers.
//!
//! - [`cpuid`]: MIDR_EL1 (implementer, part, variant, revision; core names).
//! - [`exception`]: ESR_ELx decoding (class, fault status with level, WnR) and trap reports.
//! - [`cache`]: ID-register decoders, topology, the set/way walker, by-VA maintenance, silicon
//!   geometries.
//! - [`mod@bench`]: the benchmark, variant and parameter identities shared with the host.
//! - [`attr`]: arch-neutral memory types and attributes (MAIR encodings, validation).
//! - [`descriptor`]: VMSAv8-64 stage 1 descriptors (tock-registers layouts) and MAIR_EL1.
//! - [`list`]: the fixed-capacity list returned where a `Vec` would need an allocator.
//! - `hw` (target only): the instructions, one wrapper each, and the real CPU behind the seams.
//! - [`pmu`]: the PMUv3 common events a measured window counts, and how they are multiplexed.
//! - [`record`]: the record contract (every `# cs:` record kind and field), shared with the host.
//! - [`sysreg`]: every system-register layout (tock-registers) and the one access style.
//! - [`marker`]: the cache-model marker protocol (`hint #0x7f`), shared with the QEMU plugin.
//! - [`warning`]: the cache model's warning causes (`model-warning`'s `cause`).
//!
//! What follows is the crate's README.

#![no_std]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]

#[cfg(test)]
extern crate std;

#[cfg(any(test, feature = "alloc"))]
extern crate alloc;

pub mod attr;
pub mod bench;
pub mod cache;
pub mod cpuid;
pub mod descriptor;
pub mod exception;
pub mod hazard;
pub mod list;
pub mod marker;
pub mod pmu;
pub mod record;
pub mod sysreg;
pub mod warning;

#[cfg(target_os = "none")]
pub mod hw;
