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

use super::case::{self, Benchmark, Machine};
use super::{stats, Env, Metric, MetricId, Region, Unit, NO_NOTES};
use crate::cache::{maintenance, setway};
use crate::diag;
use crate::harness::{args::typed_args, Ctx};
use cachescope_arch::bench::{Bench, Variant};

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

    /// The benchmark's variants of this method: (CPU to device, device to CPU).
    pub const fn variants(self) -> (Variant, Variant) {
        match self {
            Self::NonCacheable => (Variant::ToDeviceNc, Variant::FromDeviceNc),
            Self::VaMaintenance => (Variant::ToDeviceVaMaint, Variant::FromDeviceVaMaint),
            Self::SetWay => (Variant::ToDeviceSetway, Variant::FromDeviceSetway),
            Self::Device => (Variant::ToDeviceDevice, Variant::FromDeviceDevice),
        }
    }
}

// Each method's variants are `to-device-NAME` and `from-device-NAME` (checked at compile time:
// the method names and the library's variant names cannot drift apart).
const _: () = {
    /// True when `whole` is `head` followed by `tail`.
    const fn joined(whole: &str, head: &str, tail: &str) -> bool {
        let (w, h, t) = (whole.as_bytes(), head.as_bytes(), tail.as_bytes());
        if w.len() != h.len() + t.len() {
            return false;
        }
        let mut i = 0;
        while i < w.len() {
            if w[i] != if i < h.len() { h[i] } else { t[i - h.len()] } {
                return false;
            }
            i += 1;
        }
        true
    }
    let mut i = 0;
    while i < Method::ALL.len() {
        let m = Method::ALL[i];
        assert!(joined(m.variants().0.name(), "to-device-", m.name()), "a hand-off method's to-device variant is misnamed");
        assert!(joined(m.variants().1.name(), "from-device-", m.name()), "a hand-off method's from-device variant is misnamed");
        i += 1;
    }
};

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
    let (to_name, from_name) = (method.variants().0.name(), method.variants().1.name());
    // CPU → device: produce + maintenance is the CPU's cost; the device then checks every word.
    let mut to_dev: Vec<u64> = Vec::new();
    let id = |variant| MetricId { bench: Bench::Handoff.name(), variant, attr: cpu.attr, bytes: bytes as u64, params: &[] };
    super::phase(id(to_name), || {
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
    super::phase(id(from_name), || {
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
    for (variant, samples) in [(to_name, &mut to_dev), (from_name, &mut from_dev)] {
        let Some(summary) = stats::summarize(samples) else { continue };
        Metric { id: id(variant), summary, work: bytes as u64, unit: Unit::TimePerMiB, notes: NO_NOTES }.emit(env);
    }
    out
}

typed_args! {
    /// The hand-off benchmark's arguments.
    pub struct HandoffArgs = HANDOFF, HANDOFF_ARGS {
        handoff_bytes: Number { min: 4096, max: 1 << 30 }, Literal("256K"), "DMA-like hand-off buffer size";
    }
}

/// The `handoff` benchmark.
pub const BENCHMARK: Benchmark = Benchmark { id: Bench::Handoff, args: HANDOFF_ARGS, validate: Some(validate), run: run_case };

/// A given buffer larger than the test window.
fn validate(ctx: &Ctx, m: &Machine) -> Result<(), alloc::string::String> {
    let bytes = ctx.args.get(HANDOFF.handoff_bytes);
    if ctx.args.has(HANDOFF.handoff_bytes) && bytes > m.room.window {
        return case::too_big(ctx, HANDOFF.handoff_bytes.name(), bytes, m.room.window, "the test window");
    }
    Ok(())
}

fn run_case(ctx: &mut Ctx) {
    let env = match case::env(ctx) {
        Ok(e) => e,
        Err(why) => return ctx.skip(why),
    };
    let all = match case::regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    let find = |name: &str| all.iter().find(|r| r.attr == name).copied();
    let Some(nc) = find("normal-nc") else {
        return ctx.skip("needs the MMU's normal-nc alias window (the device's view of the buffer)");
    };
    let bytes = ctx.args.get(HANDOFF.handoff_bytes) as usize;
    for method in Method::ALL {
        let cpu_attr = match method {
            Method::NonCacheable => "normal-nc",
            Method::VaMaintenance | Method::SetWay => "normal-wb",
            Method::Device => "device-ngnre",
        };
        let Some(cpu) = find(cpu_attr) else {
            diag!("handoff {}: no {cpu_attr} window selected, skipped", method.name());
            continue;
        };
        case::settle_aliases();
        let out = run(&env, method, &cpu, &nc, bytes);
        ctx.check(
            out.bad_words == 0,
            alloc::format!("handoff {} via {}: {} wrong words over {} hand-offs", method.name(), cpu.attr, out.bad_words, out.handoffs),
        );
    }
}
