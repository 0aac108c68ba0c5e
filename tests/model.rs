//! Test kernel for the emulator's cache model (host/cache-model): named phases whose counts the
//! plugin reports, checked by the `model-*` rows of tests/catalogue.toml (run with QEMU_CACHE_MODEL).
//!
//! The kernel runs with the MMU off and tells the model, through the SCTLR marker, to treat its
//! memory as Normal write-back with the caches on (a test of the plugin, not of the MMU: on
//! QEMU the MMU state does not change what the model sees, only the reported attribute does).
//! Every measured loop is one `asm!` block so the phase contains exactly the accesses named.
//!
//! The harness announces the CPU's cache geometry to the model at boot (`model_markers::announce`); the
//! set/way walk is the kernel's own (`cache::setway`).

#![no_std]
#![no_main]

extern crate alloc;

use core::arch::asm;

use cachescope::cache::setway::{self, Scope, SetWayOp};
use cachescope::cache::Dczid;
use cachescope::harness::{args::typed_args, Case, Ctx, KernelSpec, Suite};
use cachescope::model_markers::{self, ModelAttr};
use cachescope::record::{self, Emit};
use cachescope_arch::cache::ops::MaintOp;
use cachescope_arch::hw::count_executed;
use cachescope_arch::sysreg::DCZID_EL0;
use tock_registers::interfaces::Readable;

cachescope::kernel_main!(KernelSpec { suites: &[SUITE, BENCH, PLANTED] });

const SUITE: Suite = Suite {
    name: "model",
    report: None,
    cases: &[
        Case { name: "caches-on", run: announce },
        Case { name: "scan-twice", run: scan_twice },
        Case { name: "cisw-then-miss", run: cisw_then_miss },
        Case { name: "nc-bypass", run: nc_bypass },
        Case { name: "wb-vs-wt", run: wb_vs_wt },
        Case { name: "civac-then-miss", run: civac_then_miss },
        Case { name: "zva", run: zva },
        Case { name: "ic-iallu", run: ic_iallu },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

typed_args! {
    /// The load loop's arguments.
    struct LoopArgs = LOOP, LOOP_ARGS {
        accesses: Number { min: 1 << 10, max: 1 << 40 }, Literal("100000000"), "number of loads";
        pattern: OneOf(&["seq", "chase"]), Literal("seq"), "sequential 8-byte loads, or a dependent random pointer chase";
        bytes: Number { min: 1 << 12, max: 256 << 20 }, Literal("8M"), "working set in bytes";
    }
}

/// The speed benchmark of scripts/bench-model (`only=bench`): one memory-bound loop, timed by
/// the generic timer (which follows host time under TCG), reported as a `bench-model` record.
const BENCH: Suite = Suite {
    name: "bench",
    report: None,
    cases: &[Case { name: "loop", run: bench_loop }],
    on_request: true,
    args: LOOP_ARGS,
    validate: None,
};

/// A planted stray hazard (`only=planted`, never in a default run): a hand-off to a device
/// with its clean left out, in a phase that declares no mistake, as a firmware bug would be. The
/// runner's sanitizer verdict must fail the run (exit status 1), naming the phase: the
/// catalogue's `model-planted-stray` row.
const PLANTED: Suite = Suite {
    name: "planted",
    report: None,
    cases: &[Case { name: "handoff-skips-clean", run: handoff_skips_clean }],
    on_request: true,
    args: &[],
    validate: None,
};

/// Lines per test buffer (16 KiB: fits every modelled L1D).
const LINES: usize = 256;
const LINE: usize = 64;
const BUF: usize = LINES * LINE;

/// Test buffer `k` in the arena (1 MiB apart, so they never share L1/L2 sets in a way that
/// matters for 16 KiB).
fn buffer(ctx: &Ctx, k: usize) -> usize {
    ctx.boot.arena.0.div_ceil(1 << 20) * (1 << 20) + k * (1 << 20)
}

/// Reads one u64 from every line of `[base, base + BUF)`.
fn read_lines(base: usize) {
    // SAFETY: the arena is free RAM owned by this kernel; only loads.
    unsafe {
        asm!("1: ldr {t}, [{p}], #64", "subs {n}, {n}, #1", "b.ne 1b",
             p = inout(reg) base => _, n = inout(reg) LINES => _, t = out(reg) _, options(nostack, readonly));
    }
}

/// Writes one u64 to every line of `[base, base + BUF)`.
fn write_lines(base: usize) {
    // SAFETY: the arena is free RAM owned by this kernel.
    unsafe {
        asm!("1: str {n}, [{p}], #64", "subs {n}, {n}, #1", "b.ne 1b",
             p = inout(reg) base => _, n = inout(reg) LINES => _, options(nostack));
    }
}

/// DC CIVAC / CVAC on every line of `[base, base + BUF)`. Not counted here: the caller counts
/// the [`LINES`] operations (`hw::count_executed`) after its phase, which then holds exactly the
/// loop's accesses and not the counter's.
fn dc_lines(base: usize, clean_only: bool) {
    // SAFETY: cleaning (and invalidating after cleaning) loses no data.
    unsafe {
        if clean_only {
            asm!("1: dc cvac, {p}", "add {p}, {p}, #64", "subs {n}, {n}, #1", "b.ne 1b", "dsb sy",
                 p = inout(reg) base => _, n = inout(reg) LINES => _, options(nostack));
        } else {
            asm!("1: dc civac, {p}", "add {p}, {p}, #64", "subs {n}, {n}, #1", "b.ne 1b", "dsb sy",
                 p = inout(reg) base => _, n = inout(reg) LINES => _, options(nostack));
        }
    }
}

/// Tells the model the caches are on (see the module docs).
fn announce(ctx: &mut Ctx) {
    // The model's view: MMU, data and instruction caches on (M | C | I).
    model_markers::sctlr(1 | 1 << 2 | 1 << 12);
    ctx.check(true, "SCTLR reported to the model");
}

fn scan_twice(ctx: &mut Ctx) {
    let b = buffer(ctx, 0);
    model_markers::phase(c"scan-cold", 1, || read_lines(b));
    model_markers::phase(c"scan-warm", 2, || read_lines(b));
}

fn cisw_then_miss(ctx: &mut Ctx) {
    let b = buffer(ctx, 0);
    let n = model_markers::phase(c"cisw-all", 3, || setway::dcsw(SetWayOp::CleanInvalidate, Scope::ToLoC));
    // The walk's `setway` record, printed after the phase (which holds only the walk).
    cachescope::cache::record_walk(SetWayOp::CleanInvalidate, Scope::ToLoC, &n);
    model_markers::phase(c"after-cisw", 4, || read_lines(b));
    ctx.check(n.is_ok_and(|n| n > 0), "set/way clean+invalidate to LoC issued");
}

fn nc_bypass(ctx: &mut Ctx) {
    let b = buffer(ctx, 1);
    // The MMU is off: PA = VA.
    model_markers::window(b, b as u64, BUF, ModelAttr::NormalNonCacheable);
    model_markers::phase(c"nc-scan", 5, || read_lines(b));
    model_markers::window(b, model_markers::PA_UNKNOWN, 0, ModelAttr::NormalNonCacheable);
    model_markers::phase(c"wb-scan", 6, || read_lines(b));
    ctx.check(true, "windows declared");
}

fn wb_vs_wt(ctx: &mut Ctx) {
    let wb = buffer(ctx, 2);
    let wt = buffer(ctx, 3);
    read_lines(wb);
    model_markers::phase(c"wb-write-clean", 7, || {
        write_lines(wb);
        dc_lines(wb, true);
    });
    count_executed(MaintOp::DcCvac, LINES as u64);
    model_markers::window(wt, wt as u64, BUF, ModelAttr::NormalWriteThrough);
    read_lines(wt);
    model_markers::phase(c"wt-write-clean", 8, || {
        write_lines(wt);
        dc_lines(wt, true);
    });
    count_executed(MaintOp::DcCvac, LINES as u64);
    model_markers::window(wt, model_markers::PA_UNKNOWN, 0, ModelAttr::NormalWriteThrough);
    ctx.check(true, "phases ran");
}

fn civac_then_miss(ctx: &mut Ctx) {
    let b = buffer(ctx, 4);
    read_lines(b);
    model_markers::phase(c"civac", 9, || dc_lines(b, false));
    count_executed(MaintOp::DcCivac, LINES as u64);
    model_markers::phase(c"after-civac", 10, || read_lines(b));
}

fn zva(ctx: &mut Ctx) {
    let b = buffer(ctx, 5);
    write_lines(b); // non-zero contents
    dc_lines(b, false);
    count_executed(MaintOp::DcCivac, LINES as u64);
    let dczid = Dczid { raw: DCZID_EL0.get() };
    if dczid.prohibited() || dczid.block() != Some(LINE as u32) {
        return ctx.skip("DC ZVA is prohibited or its block is not one 64-byte line");
    }
    model_markers::phase(c"zva", 11, || {
        // SAFETY: zeroes the test buffer this kernel owns.
        unsafe {
            asm!("1: dc zva, {p}", "add {p}, {p}, #64", "subs {n}, {n}, #1", "b.ne 1b",
                 p = inout(reg) b => _, n = inout(reg) LINES => _, options(nostack));
        }
    });
    count_executed(MaintOp::DcZva, LINES as u64);
    model_markers::phase(c"after-zva", 12, || read_lines(b));
    // SAFETY: reading the buffer just zeroed.
    let all_zero = (0..BUF / 8).all(|i| unsafe { core::ptr::read_volatile((b as *const u64).add(i)) } == 0);
    ctx.check(all_zero, "DC ZVA zeroed the buffer");
}

fn ic_iallu(ctx: &mut Ctx) {
    model_markers::phase(c"ic-iallu", 13, || {
        // SAFETY: invalidating the instruction cache loses nothing.
        unsafe { asm!("ic iallu", "dsb sy", "isb", options(nostack)) };
    });
    count_executed(MaintOp::IcIallu, 1);
    ctx.check(true, "IC IALLU issued");
}

fn handoff_skips_clean(ctx: &mut Ctx) {
    model_markers::sctlr(1 | 1 << 2 | 1 << 12); // caches on, as `caches-on` tells the model
    let b = buffer(ctx, 6);
    read_lines(b);
    write_lines(b); // the data for the device, dirty in the cache
                    // A correct hand-off cleans here (`dc_lines(b, true)`): the planted bug leaves it out. The
                    // device then reads memory, through a non-cacheable window.
    model_markers::window(b, b as u64, BUF, ModelAttr::NormalNonCacheable);
    model_markers::phase(c"planted/handoff-skips-clean", 14, || read_lines(b));
    model_markers::window(b, model_markers::PA_UNKNOWN, 0, ModelAttr::NormalNonCacheable);
    dc_lines(b, false);
    count_executed(MaintOp::DcCivac, LINES as u64);
    ctx.check(true, "hand-off performed without its clean");
}

/// Sequential: eight 8-byte loads per 64-byte line over `bytes`, repeated. Chase: one dependent
/// load per 64-byte node of a random cyclic permutation of `bytes`.
fn bench_loop(ctx: &mut Ctx) {
    announce(ctx);
    let accesses = ctx.args.get(LOOP.accesses);
    let bytes = ctx.args.get(LOOP.bytes) as usize / 64 * 64;
    let chase = ctx.args.get(LOOP.pattern) == "chase";
    let base = buffer(ctx, 0);
    if !ctx.check(base + bytes <= ctx.boot.arena.0 + ctx.boot.arena.1, "working set fits the arena") {
        return;
    }
    let nodes = bytes / 64;
    if chase {
        // A random cyclic permutation (Sattolo), xorshift-driven so every run is the same.
        let mut order: alloc::vec::Vec<u32> = (0..nodes as u32).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..nodes).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % i as u64) as usize);
        }
        for i in 0..nodes {
            let next = base + order[(i + 1) % nodes] as usize * 64;
            // SAFETY: writes pointers into the arena this kernel owns.
            unsafe { core::ptr::write_volatile((base + order[i] as usize * 64) as *mut usize, next) };
        }
    }
    let freq = ctx.boot.cntfrq.max(1);
    let t0 = counter();
    let mut done = 0u64;
    while done < accesses {
        if chase {
            let n = (accesses - done).min(nodes as u64);
            // SAFETY: follows the pointer chain built above; loads only.
            unsafe {
                asm!("1: ldr {p}, [{p}]", "subs {n}, {n}, #1", "b.ne 1b", p = inout(reg) base => _, n = inout(reg) n => _, options(nostack, readonly))
            };
            done += n;
        } else {
            // SAFETY: loads from the arena this kernel owns.
            unsafe {
                asm!("1: ldr {t}, [{p}]", "ldr {t}, [{p}, #8]", "ldr {t}, [{p}, #16]", "ldr {t}, [{p}, #24]",
                     "ldr {t}, [{p}, #32]", "ldr {t}, [{p}, #40]", "ldr {t}, [{p}, #48]", "ldr {t}, [{p}, #56]",
                     "add {p}, {p}, #64", "subs {n}, {n}, #1", "b.ne 1b",
                     p = inout(reg) base => _, n = inout(reg) nodes => _, t = out(reg) _, options(nostack, readonly));
            }
            done += nodes as u64 * 8;
        }
    }
    let ticks = counter() - t0;
    record::BenchModel::new()
        .pattern(if chase { "chase" } else { "seq" })
        .accesses(done)
        .bytes(bytes as u64)
        .ticks(ticks)
        .cntfrq(freq)
        .ms(ticks * 1000 / freq)
        .emit();
}

fn counter() -> u64 {
    cachescope::cpu::counter()
}
