//! Pinned DMA-like hand-off buffers (pinned host memory): the CPU produces a buffer that a
//! non-coherent "device" consumes, and the other way round. The device is modelled by accesses
//! through the Normal non-cacheable alias of the same physical buffer — what a non-coherent DMA
//! master sees is memory, i.e. the Point of Coherency.
//!
//! Methods (the CPU's view of the buffer and the maintenance it does):
//! - `nc`: the CPU uses the non-cacheable alias; no maintenance needed;
//! - `va-maint`: the CPU uses the write-back alias; DC CVAC to PoC before hand-off, invalidate
//!   to PoC before reading what the device wrote (and clean+invalidate before the device writes,
//!   so no dirty line is evicted over its data);
//! - `setway`: the CPU uses the write-back alias and flushes everything by set/way (DC CISW to
//!   LoC) instead — correct only on a single core with no other masters caching, and slow;
//! - `device`: the CPU uses a Device-nGnRE alias.
//!
//! Every hand-off is verified: the receiver checks every word. Under QEMU (no caches) a missing
//! maintenance step cannot produce stale data, so verification only has teeth on silicon or under
//! the cache model; the costs here are the emulator's.

use alloc::vec::Vec;

use super::NO_NOTES;
use super::{stats, Env, Metric, MetricId, Region, Unit};
use crate::cache::{maintenance, setway};

/// How the CPU side handles the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Non-cacheable alias, no maintenance.
    NonCacheable,
    /// Write-back alias with by-VA maintenance to PoC.
    VaMaintenance,
    /// Write-back alias with a set/way clean+invalidate to LoC.
    SetWay,
    /// Device alias.
    Device,
}

impl Method {
    /// All methods in report order.
    pub const ALL: [Method; 4] = [Self::NonCacheable, Self::VaMaintenance, Self::SetWay, Self::Device];

    /// Name in records.
    pub const fn name(self) -> &'static str {
        match self {
            Self::NonCacheable => "nc",
            Self::VaMaintenance => "va-maint",
            Self::SetWay => "setway",
            Self::Device => "device",
        }
    }
}

/// The word at index `i` of hand-off number `seed`.
pub const fn pattern(seed: u64, i: usize) -> u64 {
    (seed << 48) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn fill(va: usize, bytes: usize, seed: u64) {
    for i in 0..bytes / 8 {
        // SAFETY: [va, va + bytes) is a mapped alias window of the test arena; aligned store.
        unsafe { core::ptr::write_volatile((va + 8 * i) as *mut u64, pattern(seed, i)) };
    }
}

/// Counts words that differ from the pattern.
fn mismatches(va: usize, bytes: usize, seed: u64) -> u64 {
    let mut bad = 0;
    for i in 0..bytes / 8 {
        // SAFETY: as in `fill`; aligned load.
        let v = unsafe { core::ptr::read_volatile((va + 8 * i) as *const u64) };
        bad += (v != pattern(seed, i)) as u64;
    }
    bad
}

/// The points of a hand-off where the CPU side may need maintenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The CPU produced the buffer; the device reads it next.
    BeforeDeviceReads,
    /// The device writes the buffer next.
    BeforeDeviceWrites,
    /// The device wrote the buffer; the CPU reads it next.
    AfterDeviceWrote,
}

fn maintain(step: Step, m: Method, cpu: &Region, bytes: usize) {
    match (m, step) {
        (Method::VaMaintenance, Step::BeforeDeviceReads) => {
            let _ = maintenance::clean_to_poc(cpu.va, bytes);
        }
        // Clean+invalidate before the device writes: no dirty line may be evicted over its data.
        (Method::VaMaintenance, Step::BeforeDeviceWrites) => {
            let _ = maintenance::clean_invalidate_to_poc(cpu.va, bytes);
        }
        (Method::VaMaintenance, Step::AfterDeviceWrote) => {
            // SAFETY: the CPU holds no data of its own in the buffer: the device owns it now.
            let _ = unsafe { maintenance::invalidate_to_poc(cpu.va, bytes) };
        }
        (Method::SetWay, _) => {
            // Recorded: one `setway` record per phase (the walks are added up inside it).
            let _ = crate::cache::try_dcsw(setway::SetWayOp::CleanInvalidate, setway::Scope::ToLoC);
        }
        (Method::NonCacheable | Method::Device, _) => cachescope_arch::hw::dsb_sy(),
    }
}

/// Result of one method: hand-offs done and words that arrived wrong.
pub struct Outcome {
    /// Hand-offs performed (both directions).
    pub handoffs: u64,
    /// Words that differed from what the sender wrote.
    pub bad_words: u64,
}

/// Runs both directions for `method`: `cpu` is the CPU's view, `device` the non-cacheable view
/// of the same physical buffer. Emits two metrics (cost per MiB, maintenance included).
pub fn run(env: &Env, method: Method, cpu: &Region, device: &Region, bytes: usize) -> Outcome {
    let bytes = bytes.min(cpu.len).min(device.len) & !63;
    let mut out = Outcome { handoffs: 0, bad_words: 0 };
    let mut seed = 1u64;
    // Each direction, warm-up included, is one cache-model phase (both sides' accesses).
    let name = |dir: &str| alloc::format!("{dir}-{}", method.name());
    let (to_name, from_name) = (name("to-device"), name("from-device"));
    // CPU → device: produce + maintenance is the CPU's cost; the device then checks every word.
    let mut to_dev: Vec<u64> = Vec::new();
    let id = |variant| MetricId { bench: "handoff", variant, attr: cpu.attr, bytes: bytes as u64, params: &[] };
    super::phase(id(&to_name), || {
        for rep in 0..env.warmup + env.reps {
            seed += 1;
            let s = seed;
            let t = env.timer.window(&mut || {
                fill(cpu.va, bytes, s);
                maintain(Step::BeforeDeviceReads, method, cpu, bytes);
            });
            out.bad_words += mismatches(device.va, bytes, s);
            out.handoffs += 1;
            if rep >= env.warmup {
                to_dev.push(t);
            }
        }
    });
    // Device → CPU: prepare (before the device writes) + invalidate + consume is the CPU's cost.
    let mut from_dev: Vec<u64> = Vec::new();
    super::phase(id(&from_name), || {
        for rep in 0..env.warmup + env.reps {
            seed += 1;
            let s = seed;
            let t_pre = env.timer.window(&mut || maintain(Step::BeforeDeviceWrites, method, cpu, bytes));
            fill(device.va, bytes, s);
            let mut bad = 0;
            let t_post = env.timer.window(&mut || {
                maintain(Step::AfterDeviceWrote, method, cpu, bytes);
                bad = mismatches(cpu.va, bytes, s);
            });
            out.bad_words += bad;
            out.handoffs += 1;
            if rep >= env.warmup {
                from_dev.push(t_pre + t_post);
            }
        }
    });
    for (variant, samples) in [(&to_name, &mut to_dev), (&from_name, &mut from_dev)] {
        let Some(summary) = stats::summarize(samples) else { continue };
        Metric { id: id(variant), summary, work: bytes as u64, unit: Unit::TimePerMiB, notes: NO_NOTES }.emit(env);
    }
    out
}
