//! What every benchmark of the `bench` suite is and shares: the descriptor each `bench/NAME.rs`
//! declares ([`Benchmark`]), the arguments they all read ([`COMMON`]), the machine they are
//! validated against ([`Machine`]) and the regions they run over.

use alloc::{string::String, vec::Vec};

use super::{timer::Timer, Env, Region};
use crate::cache::topology::Kind;
use crate::harness::args::typed_args;
use crate::harness::{ArgSpec, Ctx};
use crate::mem::attr::MemAttr;
use cachescope_arch::bench::Bench;

/// A benchmark's check of the arguments against the machine: `Err` names the argument and why.
pub type Check = fn(&Ctx, &Machine) -> Result<(), String>;

/// One benchmark: its identity (case name, record names and variants: [`Bench`]), the kernel
/// arguments it declares, its check of them against the machine, and its KTAP case.
pub struct Benchmark {
    /// The benchmark; its variants are `id.variants()`.
    pub id: Bench,
    /// The arguments it declares (a `typed_args!` table; it may also read other benchmarks'
    /// keys, e.g. the KV shape, through their typed keys).
    pub args: &'static [ArgSpec],
    /// Refuses, before anything runs, argument values this machine cannot run; the message
    /// names the argument.
    pub validate: Option<Check>,
    /// The case body.
    pub run: fn(&mut Ctx),
}

/// Attribute names `attrs=` accepts: the MMU's alias windows plus `caches-off`.
pub const ATTR_NAMES: &[&str] = &["normal-wb", "normal-wt", "normal-nc", "device-ngnrne", "device-ngnre", "device-gre", "caches-off"];

typed_args! {
    /// The arguments every benchmark reads: repetitions, timer and the attributes it runs over.
    pub struct CommonArgs = COMMON, COMMON_ARGS {
        reps: Number { min: 1, max: 1000 }, Literal("5"), "measured repetitions per point";
        warmup: Number { min: 0, max: 100 }, Literal("1"), "warm-up runs per point";
        timer: OneOf(&["cntvct", "pmccntr"]), Literal("cntvct"), "timer for measured windows";
        pmu_counters: Number { min: 0, max: 31 }, Computed("PMCR_EL0.N; 0 under the cache model"), "PMU event counters a phase uses at most (below PMCR_EL0.N the events are multiplexed over more groups; 0: no pmu records)";
        attrs: SubsetOf(ATTR_NAMES), Computed("all"), "attributes to run over";
    }
}

/// What this machine leaves the benchmarks: the alias windows' length (every window maps the
/// same span of the test arena) and the heap (the pointer chase's visiting order lives there).
pub struct Room {
    /// Bytes of one alias window.
    pub window: u64,
    /// Bytes of heap.
    pub heap: u64,
}

impl Room {
    /// The room of the machine `ctx` runs on.
    pub fn of(ctx: &Ctx) -> Self {
        Room { window: crate::mem::alias::default_span(ctx.boot.arena).1 as u64, heap: ctx.boot.heap.1 as u64 }
    }

    /// Largest pointer-chase working set: inside the window, with its group order in at most
    /// half the heap. The chain is built from a streamed visiting order (8 heap bytes per 4 KiB
    /// group, not 4 per line), so the window is the limit up to terabytes of RAM: the largest
    /// chase grows with RAM as the window does.
    pub fn chase_max(&self, line: u64) -> u64 {
        self.chase_max_grouped(line, super::latency::GROUP_BYTES as u64)
    }

    /// [`Room::chase_max`] for a chase order in groups of `group` bytes (`chase_group=`): with
    /// one line a group the group order takes 8 heap bytes a line.
    pub fn chase_max_grouped(&self, line: u64, group: u64) -> u64 {
        let mut max = self.window / line * line;
        while max > line && super::latency::chase_table_bytes(max, line, group) > self.heap / 2 {
            max /= 2;
        }
        max
    }
}

/// What the benchmarks take from the cache ID registers, read once per case.
pub struct CacheFacts {
    /// The smallest data-cache line (CTR_EL0.DminLine): the node size of the pointer chase.
    pub line: usize,
    /// Largest data/unified cache in bytes (1 MiB when CLIDR reports none).
    pub largest: u64,
    /// (level, bytes) of every data/unified cache, printed beside inferred knees.
    pub capacities: Vec<(u8, u64)>,
}

impl CacheFacts {
    /// Reads this core's cache topology.
    pub fn read() -> Self {
        let topo = crate::cache::this_cpu();
        let capacities: Vec<(u8, u64)> =
            topo.caches.iter().filter(|c| c.kind != Kind::Instruction).map(|c| (c.level, c.ccsidr.size())).collect();
        let largest = capacities.iter().map(|&(_, size)| size).max().unwrap_or(1 << 20);
        Self { line: topo.ctr.dmin_line().max(8) as usize, largest, capacities }
    }
}

/// The machine the arguments are validated against, read once for every benchmark.
pub struct Machine {
    /// The room in the test window and the heap.
    pub room: Room,
    /// The caches.
    pub caches: CacheFacts,
}

impl Machine {
    /// Reads the machine `ctx` runs on.
    pub fn of(ctx: &Ctx) -> Self {
        Machine { room: Room::of(ctx), caches: CacheFacts::read() }
    }
}

/// `b` bytes in KiB or MiB.
pub fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        alloc::format!("{} MiB", b >> 20)
    } else {
        alloc::format!("{} KiB", b >> 10)
    }
}

/// The refusal of `key=v` above `max`, with why and the machine's RAM.
pub fn too_big(ctx: &Ctx, key: &str, v: u64, max: u64, why: &str) -> Result<(), String> {
    Err(alloc::format!("{key}={v} ({}) exceeds the {} this machine allows ({why}; RAM {})", mib(v), mib(max), mib(ctx.boot.ram.1)))
}

/// The common parameters of a run: timer, repetitions, emulation.
pub fn env(ctx: &Ctx) -> Result<Env, &'static str> {
    let timer = match ctx.args.get(COMMON.timer) {
        "pmccntr" => Timer::cycles()?,
        _ => Timer::generic(),
    };
    Ok(Env {
        timer,
        reps: ctx.args.get(COMMON.reps) as usize,
        warmup: ctx.args.get(COMMON.warmup) as usize,
        emulated: ctx.boot.emulated,
        // Under the cache model the PMU counts are the emulator's, and a pmu record between
        // phases changes the caches the next phase starts with: off unless asked for.
        pmu_counters: ctx.args.get(COMMON.pmu_counters).map_or(if ctx.boot.model.is_some() { 0 } else { 31 }, |n| n as u8),
    })
}

/// The regions benchmarks run over (every alias window of the test arena, and the write-back
/// window with the data cache off), filtered by `attrs=`. Turns the MMU on if it is not.
pub fn regions(ctx: &Ctx) -> Result<Vec<Region>, String> {
    let windows = crate::mem::mmu::enable_with_aliases(ctx.boot).map_err(|e| alloc::format!("cannot map the alias windows: {e}"))?;
    let mut all: Vec<Region> = windows
        .iter()
        .map(|w| Region { attr: w.name, va: w.va, pa: w.pa, len: w.len, device: w.attr.is_device(), caches_off: false })
        .collect();
    if let Some(wb) = windows.iter().find(|w| w.attr == MemAttr::NormalWriteBack) {
        all.push(Region { attr: "caches-off", va: wb.va, pa: wb.pa, len: wb.len, device: false, caches_off: true });
    }
    let want = ctx.args.get(COMMON.attrs);
    Ok(all.into_iter().filter(|r| want.is_empty() || want.contains(&r.attr)).collect())
}

/// Runs `f` over every region, with the data cache switched off around `caches-off`.
pub fn for_each_region(ctx: &mut Ctx, mut f: impl FnMut(&mut Ctx, &Region)) {
    let regions = match regions(ctx) {
        Ok(r) => r,
        Err(e) => return ctx.fail(e),
    };
    for region in &regions {
        settle_aliases();
        if region.caches_off {
            if let Err(e) = crate::mem::mmu::set_dcache(false) {
                ctx.fail(alloc::format!("cannot turn the data cache off: {e}"));
                continue;
            }
        }
        f(ctx, region);
        if region.caches_off {
            if let Err(e) = crate::mem::mmu::set_dcache(true) {
                ctx.fail(alloc::format!("cannot turn the data cache back on: {e}"));
            }
        }
    }
}

/// The alias windows map one span of memory with different attributes. Before another alias
/// touches it, every line is cleaned and invalidated to the Point of Coherency (set/way to LoC,
/// this core's caches being all there is on one core), so no dirty line of one alias is
/// written back over what another alias wrote, and no stale clean line is read: the maintenance
/// mismatched attributes require (Arm ARM DDI 0487, "Mismatched memory attributes").
pub fn settle_aliases() {
    crate::cache::dcsw(crate::cache::setway::SetWayOp::CleanInvalidate, crate::cache::setway::Scope::ToLoC);
}

/// The write-back window the deep-learning patterns run in (their signatures are cache
/// signatures: the other attributes only bypass), with the aliases settled; None (skipped) when
/// `attrs=` leaves it out.
pub fn wb_window(ctx: &mut Ctx) -> Option<Region> {
    let regions = match regions(ctx) {
        Ok(r) => r,
        Err(e) => {
            ctx.fail(e);
            return None;
        }
    };
    match regions.into_iter().find(|r| r.attr == "normal-wb") {
        Some(r) => {
            settle_aliases();
            Some(r)
        }
        None => {
            ctx.skip("needs the normal-wb window (attrs= leaves it out)");
            None
        }
    }
}

/// [`env()`] and [`wb_window`], or None (the case skipped or failed).
pub fn env_and_wb(ctx: &mut Ctx) -> Option<(Env, Region)> {
    let env = match env(ctx) {
        Ok(e) => e,
        Err(why) => {
            ctx.skip(why);
            return None;
        }
    };
    wb_window(ctx).map(|r| (env, r))
}
