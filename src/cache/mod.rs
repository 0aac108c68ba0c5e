//! Caches: pure decoders of the identification registers ([`id`]), the one set/way walker
//! ([`setway`]) and maintenance by virtual address ([`maintenance`]).
//!
//! The decoders and the loops are pure and host-tested (`cargo host-test`); each loop is generic
//! over a small backend trait whose target implementation issues the real instructions through
//! `arch::cache`.
//!
//! API used by the MMU and benchmark code:
//! - `maintenance::{clean_to_poc, clean_invalidate_to_poc, invalidate_to_poc (unsafe),
//!   clean_to_pou, sync_instructions}(start, len) -> Result<u64, RangeError>` (instructions issued);
//! - `maintenance::zero(&mut [u8])` (DC ZVA when allowed, stores otherwise);
//! - `setway::dcsw(op, scope) -> u64` (emits the `setway` record) and
//!   `setway::dcsw_silent(op, scope) -> Result<u64, WalkError>` (prints nothing).

pub mod id;
pub mod maintenance;
pub mod setway;
pub mod silicon;
pub mod topology;

pub use id::{CacheType, Ccsidr, Clidr, Ctr, Dczid};
