//! Memory attributes, translation tables, alias windows and MMU control.
//!
//! # Layers
//! - [`attr`]: arch-neutral [`MemAttr`] (`NormalWriteBack`, `NormalWriteThrough`,
//!   `NormalNonCacheable`, `DeviceNGnRnE`, `DeviceNGnRE`, `DeviceGRE`) plus orthogonal flags
//!   ([`Attributes`]: access, execute, shareability), validated (no W+X, no executable Device).
//! - [`aarch64`] (the arch twin, pure): descriptors declared with tock-registers
//!   (`descriptor`), the 4 KiB-granule 48-bit [`Tables`] builder and software walker (`table`),
//!   and the TCR/MAIR values with SCTLR/TCR/MAIR/PAR decoders (`regs`).
//! - [`layout`]: what the kernel maps (identity map of RAM by permission and of its MMIO);
//!   [`alias`]: where the alias windows go.
//! - `mmu` (target only): builds the tables, programs MAIR/TCR/TTBR0, turns the MMU and the
//!   caches on and off with the maintenance the architecture requires, and changes live
//!   mappings by break-before-make.
//!
//! # Using the alias windows (benchmark code)
//! ```ignore
//! use cachescope::mem::{self, MemAttr};
//! let windows = mem::mmu::enable_with_aliases(&boot)?;       // idempotent; MMU + caches on
//! let nc = mem::alias::window(MemAttr::NormalNonCacheable).unwrap();
//! let p = nc.ptr::<u64>(0).unwrap();                            // same bytes as every window
//! ```
//! [`mmu::enable_with_aliases`] returns the six windows (`&'static [AliasWindow]`, in
//! [`MemAttr::ALL`] order); afterwards [`alias::windows`] and [`alias::window`] return them
//! too. Every window maps the same physical range (by default the whole test arena,
//! `BootInfo::arena`, trimmed to pages), so data written through one window is visible through
//! the others only after the cache maintenance their attributes require. The arena is also
//! reachable through the identity map (Normal WB).
//!
//! State left by the main job's `mmu` suite: MMU, D-cache and I-cache on, TTBR0 = the identity
//! map and the six windows, MAIR/TCR as [`aarch64::regs`] describes. A suite that changes it
//! must restore it ([`mmu::enable_with_aliases`] does).

pub mod aarch64;
pub mod alias;
pub use cachescope_arch::attr;
mod error;
pub mod layout;
#[cfg(target_os = "none")]
pub mod mmu;

pub use aarch64::table::{self, Granularity, Tables, Walk};
pub use alias::AliasWindow;
pub use attr::{Access, Attributes, MemAttr, Shareability};
pub use error::Error;
