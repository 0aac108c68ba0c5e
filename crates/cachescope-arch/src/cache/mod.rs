//! Caches: pure decoders of the identification registers ([`id`]), the topology they describe
//! ([`topology`]), the one set/way walker ([`setway`]), maintenance by virtual address
//! ([`maintenance`]), the maintenance instructions as named, decodable operations ([`ops`]),
//! published silicon geometries ([`silicon`]) and the rules that infer a geometry from sweeps
//! ([`infer`]).
//!
//! The decoders and the loops are pure and host-tested; each loop is generic over a small
//! backend trait whose target implementation (in each module's target part) issues the real
//! instructions through `crate::hw`.

pub mod id;
pub mod infer;
pub mod maintenance;
pub mod ops;
pub mod setway;
pub mod silicon;
pub mod topology;

pub use id::{CacheType, Ccsidr, Clidr, Ctr, Dczid};

/// What kind of cache a cache is (CLIDR_EL1 Ctype splits a level into these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Kind {
    /// Instruction cache.
    Instruction = 1,
    /// Data cache.
    Data = 2,
    /// Unified cache.
    Unified = 3,
}

impl Kind {
    /// The record name: `instruction`, `data`, `unified`.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Instruction => "instruction",
            Kind::Data => "data",
            Kind::Unified => "unified",
        }
    }

    /// lscpu's suffix: `i`, `d` or nothing.
    pub const fn suffix(self) -> &'static str {
        match self {
            Kind::Instruction => "i",
            Kind::Data => "d",
            Kind::Unified => "",
        }
    }

    /// The cache-model protocol code (1 = instruction, 2 = data, 3 = unified).
    pub const fn model_code(self) -> u8 {
        self as u8
    }
}
