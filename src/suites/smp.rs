//! The multicore suite: every core brought up with the boot core's MMU regime, then coherence
//! benchmarks — ping-pong (a line's ownership round trip), false sharing, a cross-core SPSC
//! ring, a ring all-reduce, broadcast maintenance and the core-to-core matrix (every ordered pair
//! of cores handing a line back and forth) ([`crate::bench::coherence`]). With one
//! core every case SKIPs with the reason.
//!
//! Under QEMU every figure measures the emulator (vCPUs are host threads, or one thread
//! round-robin with `-icount`; no cache is modelled), and every record says `"emulated":true`.
//!
//! [`SELFTEST`] (`only=smp-selftest`, never in a default run) makes a core fault and another
//! hang on purpose: both cases must fail with a line naming the core, and the run continues.

use alloc::{format, string::String, vec::Vec};

use crate::bench::coherence::{self as co, Fence, PingOp, RingShape};
use crate::bench::{timer::Timer, Env};
use crate::diag;
use crate::harness::{args::typed_args, ArgSpec, Case, Ctx, Suite};
use crate::mem::{alias::AliasWindow, attr::MemAttr};
use crate::smp::{self, CoreError};
use cachescope_arch::bench::SmpVariant;

/// The multicore suite.
pub const SUITE: Suite = Suite {
    name: "smp",
    report: Some(report),
    cases: &[
        Case { name: "bring-up", run: bring_up },
        Case { name: "pingpong", run: pingpong },
        Case { name: "false-sharing", run: false_sharing },
        Case { name: "spsc-ring", run: spsc },
        Case { name: "allreduce", run: allreduce },
        Case { name: "broadcast", run: broadcast },
        Case { name: "core-to-core", run: core_to_core },
    ],
    args: ARGS,
    validate: Some(validate),
    on_request: false,
};

/// A secondary core faults, another hangs: each fails its case, and the run goes on.
pub const SELFTEST: Suite = Suite {
    name: "smp-selftest",
    report: None,
    cases: &[
        Case { name: "core-faults", run: core_faults },
        Case { name: "core-hangs", run: core_hangs },
        Case { name: "runs-after", run: runs_after },
    ],
    args: TIMEOUT,
    validate: None,
    on_request: true,
};

typed_args! {
    /// Kernel arguments of the multicore suite: each declared once, with its type, default and
    /// help (`smp_timeout_ms`, last, is also the self-test suite's).
    pub struct SmpArgs = SMP, ARGS {
        smp_reps: Number { min: 1, max: 1000 }, Literal("3"), "measured repetitions per figure";
        smp_warmup: Number { min: 0, max: 100 }, Literal("1"), "warm-up runs per figure";
        smp_iters: Number { min: 1, max: 1 << 20 }, Literal("100"), "ping-pong round trips per window";
        smp_incs: Number { min: 1, max: 1 << 24 }, Literal("500"), "false sharing: increments per core per window";
        smp_slots: Number { min: 1, max: 1024 }, Literal("8"), "SPSC ring slots";
        smp_batch: Number { min: 8, max: 65536 }, Literal("256"), "SPSC batch bytes (a multiple of 8; slots x batch <= 512 KiB)";
        smp_batches: Number { min: 1, max: 1 << 20 }, Literal("32"), "SPSC batches per window";
        smp_chunk: Number { min: 8, max: 16384 }, Literal("1024"), "all-reduce chunk bytes per rank (a multiple of 8)";
        smp_lines: Number { min: 1, max: 1024 }, Literal("64"), "broadcast maintenance: lines (DC), pages (TLBI) and IC operations per window";
        smp_timeout_ms: Number { min: 10, max: 600_000 }, Literal("10000"), "per-core timeout of one SMP job, ms (a core past it fails its case and gets no more work)";
    }
}

/// The self-test suite's one argument: `smp_timeout_ms`.
const TIMEOUT: &[ArgSpec] = core::slice::from_ref(&ARGS[ARGS.len() - 1]);

/// Where each benchmark works, as offsets into the test arena (through the normal-wb window
/// unless said otherwise): far enough apart that none shares a line or a page with another.
mod at {
    pub const PINGPONG: usize = 0;
    pub const CORE_TO_CORE: usize = 32 << 10;
    pub const PINGPONG_NC: usize = 1 << 20;
    pub const FALSE_SHARING: usize = 64 << 10;
    pub const SPSC: usize = 128 << 10;
    pub const ALLREDUCE: usize = 2 << 20;
    pub const BCAST: usize = 4 << 20;
    /// End of the last: the window must be at least this long plus the broadcast pages.
    pub const END: usize = 8 << 20;
}

fn validate(ctx: &Ctx) -> Result<(), String> {
    for key in [SMP.smp_batch, SMP.smp_chunk] {
        if !ctx.args.get(key).is_multiple_of(8) {
            return Err(format!("{}={} is not a multiple of 8 bytes", key.name(), ctx.args.get(key)));
        }
    }
    let ring = ctx.args.get(SMP.smp_slots) * ctx.args.get(SMP.smp_batch);
    if ring > 512 << 10 {
        return Err(format!("smp_slots x smp_batch = {ring} B exceeds the ring's 512 KiB"));
    }
    let window = crate::mem::alias::default_span(ctx.boot.arena).1;
    if window < at::END {
        return Err(format!("the test window ({window} B) is below the {} B the smp suite uses", at::END));
    }
    Ok(())
}

fn env(ctx: &Ctx) -> Env {
    Env {
        timer: Timer::generic(),
        reps: ctx.args.get(SMP.smp_reps) as usize,
        warmup: ctx.args.get(SMP.smp_warmup) as usize,
        emulated: ctx.boot.emulated,
        // Windows across several cores: one core's counters would not cover them.
        pmu_counters: 0,
    }
}

fn timeout(ctx: &Ctx) -> u64 {
    ctx.args.get(SMP.smp_timeout_ms)
}

/// The cache facts the layouts need: the smallest D-cache line and the writeback granule
/// (CTR_EL0.CWG; 0 means "not provided": the architectural maximum, 2 KiB).
fn line_and_cwg() -> (usize, usize) {
    use tock_registers::interfaces::Readable;
    let ctr = cachescope_arch::sysreg::CTR_EL0.get();
    let line = cachescope_arch::cache::Ctr { raw: ctr }.dmin_line().max(8) as usize;
    let cwg = (ctr >> 24) & 0xf;
    (line, if cwg == 0 { 2048 } else { 4 << cwg })
}

/// MMU on with the alias windows, the data caches cleaned to PoC (earlier suites used every
/// alias of the arena), and the normal-wb and normal-nc windows.
fn setup(ctx: &mut Ctx) -> Option<(Vec<usize>, AliasWindow, AliasWindow)> {
    let cores = ctx.secondaries()?;
    if let Err(e) = crate::mem::mmu::enable_with_aliases(ctx.boot) {
        ctx.fail(format!("cannot map the alias windows: {e}"));
        return None;
    }
    crate::cache::dcsw(crate::cache::setway::SetWayOp::CleanInvalidate, crate::cache::setway::Scope::ToLoC);
    let (Some(wb), Some(nc)) = (crate::mem::mmu::window(MemAttr::NormalWriteBack), crate::mem::mmu::window(MemAttr::NormalNonCacheable))
    else {
        ctx.fail("the normal-wb and normal-nc windows are missing");
        return None;
    };
    // The probe said the cores can start: one that does not now is a failure.
    match smp::run_on(cores[0], timeout(ctx), |_| ()) {
        Ok(()) => Some((cores, *wb, *nc)),
        Err(e) => {
            ctx.fail(format!("core {}: {e}", cores[0]));
            None
        }
    }
}

fn report(ctx: &mut Ctx) {
    diag!("== multicore ==");
    diag!("{} core(s); the boot core times every window, the others run their side in lock-step", smp::cores());
    if ctx.boot.emulated {
        diag!("Under QEMU vCPUs are host threads (one thread, round-robin, with -icount) and no cache");
        diag!("is modelled: these figures measure the emulator. Every record says \"emulated\":true.");
    }
}

/// Every secondary starts, runs at EL1 with its MMU on through the boot core's tables and
/// reports its MPIDR.
fn bring_up(ctx: &mut Ctx) {
    let Some((cores, _, _)) = setup(ctx) else { return };
    let boot = crate::mem::mmu::registers();
    let job = smp::launch(&cores, |_| {
        let r = crate::mem::mmu::registers();
        (crate::cpu::mpidr(), crate::cpu::current_el(), r.sctlr, r.ttbr0)
    });
    for (core, r) in job.join(timeout(ctx)) {
        match r {
            Ok((mpidr, el, sctlr, ttbr0)) => {
                diag!("core {core} running: MPIDR {mpidr:#x}, EL{el}, SCTLR {sctlr:#x}, TTBR0 {ttbr0:#x}");
                ctx.check_eq(crate::cpu::smp::core_of_mpidr(mpidr), core, format!("core {core}: MPIDR Aff0|Aff1"));
                ctx.check_eq(el, 1, format!("core {core}: runs at EL1"));
                ctx.check_eq(ttbr0, boot.ttbr0, format!("core {core}: the boot core's tables"));
                let mci = crate::cpu::mmu::SCTLR_M | crate::cpu::mmu::SCTLR_C | crate::cpu::mmu::SCTLR_I;
                ctx.check_eq(sctlr & mci, boot.sctlr & mci, format!("core {core}: SCTLR M/C/I as on the boot core"));
            }
            Err(e) => ctx.fail(format!("core {core}: {e}")),
        }
    }
}

fn pingpong(ctx: &mut Ctx) {
    let Some((cores, wb, nc)) = setup(ctx) else { return };
    let env = env(ctx);
    let (line, _) = line_and_cwg();
    let peer = cores[0];
    let iters = ctx.args.get(SMP.smp_iters);
    let t = timeout(ctx);
    match smp::run_on(peer, t, |_| crate::cpu::mpidr()) {
        Ok(m) => {
            let same = (m >> 16) & 0xff == (crate::cpu::mpidr() >> 16) & 0xff;
            diag!("pingpong: core 0 and core {peer} (MPIDR {m:#x}): {} cluster (MPIDR Aff2)", if same { "same" } else { "different" });
        }
        Err(e) => return ctx.fail(format!("core {peer}: {e}")),
    }
    let lse = co::has_lse();
    if !lse {
        diag!("pingpong ldadd: skipped: no FEAT_LSE (ID_AA64ISAR0_EL1.Atomic < 2)");
    }
    // The NC line is a different physical line; whatever an earlier suite left of it in a
    // cache is cleaned and invalidated through the WB alias first.
    let _ = crate::cache::maintenance::clean_invalidate_to_poc(wb.va + at::PINGPONG_NC, line);
    for (window, off) in [(wb, at::PINGPONG), (nc, at::PINGPONG_NC)] {
        let mut plain = None;
        for op in PingOp::ALL {
            if op == PingOp::Ldadd && !lse {
                continue;
            }
            if op != PingOp::Plain && window.attr == MemAttr::NormalNonCacheable && !ctx.boot.emulated {
                diag!("pingpong {} normal-nc: skipped on silicon: exclusives on Non-cacheable memory need a global monitor (IMPLEMENTATION DEFINED)", op.name());
                continue;
            }
            match co::pingpong(&env, window.name, window.va + off, line as u64, peer, op, iters, t) {
                Ok(median) => {
                    let m = *plain.get_or_insert(median);
                    if op != PingOp::Plain && m > 0 {
                        diag!("pingpong {} {}: {:.2}x the plain-store round trip", op.name(), window.name, median as f64 / m as f64);
                    }
                }
                Err(e) => ctx.fail(e),
            }
        }
    }
}

fn false_sharing(ctx: &mut Ctx) {
    let Some((cores, wb, _)) = setup(ctx) else { return };
    let env = env(ctx);
    let (line, cwg) = line_and_cwg();
    let incs = ctx.args.get(SMP.smp_incs);
    let t = timeout(ctx);
    let base = wb.va + at::FALSE_SHARING;
    let n = cores.len() + 1;
    if 8 * n > line {
        diag!("false sharing: {n} counters of 8 B do not fit one {line} B line: the shared variant spans lines");
    }
    let shared = co::false_sharing(&env, SmpVariant::SharedLine, base, 8, &cores, incs, t);
    let padded = co::false_sharing(&env, SmpVariant::PaddedCwg, base, cwg, &cores, incs, t);
    match (shared, padded) {
        (Ok(s), Ok(p)) => {
            let factor = s.median as f64 / p.median.max(1) as f64;
            co::emit_false_sharing(&env, SmpVariant::PaddedCwg, n, cwg, incs, p, &|m| m.cwg(cwg as u64));
            co::emit_false_sharing(&env, SmpVariant::SharedLine, n, 8, incs, s, &|m| m.slowdown_permille((factor * 1000.0) as u64));
            diag!(
                "false sharing: {n} cores, counters in one line vs padded to CWG {cwg} B: slowdown {factor:.2}x (median windows, {})",
                env.timer.source.name()
            );
        }
        (s, p) => {
            for e in [s.err(), p.err()].into_iter().flatten() {
                ctx.fail(e);
            }
        }
    }
}

fn spsc(ctx: &mut Ctx) {
    let Some((cores, wb, _)) = setup(ctx) else { return };
    let env = env(ctx);
    let (_, cwg) = line_and_cwg();
    let shape = RingShape {
        slots: ctx.args.get(SMP.smp_slots),
        batch: ctx.args.get(SMP.smp_batch) as usize,
        batches: ctx.args.get(SMP.smp_batches),
    };
    let base = wb.va + at::SPSC;
    for fence in Fence::ALL {
        for gap in [8, cwg] {
            if let Err(e) = co::spsc(&env, base, gap, 2 * cwg, cores[0], fence, shape, timeout(ctx)) {
                ctx.fail(e);
            }
        }
    }
}

fn allreduce(ctx: &mut Ctx) {
    let Some((cores, wb, _)) = setup(ctx) else { return };
    let env = env(ctx);
    let chunk = ctx.args.get(SMP.smp_chunk) as usize;
    match co::allreduce(&env, wb.va + at::ALLREDUCE, &cores, chunk, timeout(ctx)) {
        Ok((_, moved)) => {
            diag!("allreduce: {} ranks, {chunk} B chunks: {moved} B moved between neighbours per all-reduce", cores.len() + 1)
        }
        Err(e) => ctx.fail(e),
    }
}

/// The boot core's broadcast maintenance reaching the lines, translations and instructions
/// another core holds. That core is the highest-numbered one: in a multi-cluster system whose
/// cores are numbered cluster by cluster (QEMU's `-smp N,clusters=C`, the cache model's
/// topologies) it is in the last cluster, so with more than one cluster the maintenance
/// crosses the interconnect (the model's `cross_remote_maint`); with two cores it is core 1.
fn broadcast(ctx: &mut Ctx) {
    let Some((cores, wb, _)) = setup(ctx) else { return };
    let env = env(ctx);
    let (line, _) = line_and_cwg();
    let lines = ctx.args.get(SMP.smp_lines) as usize;
    let peer = *cores.last().expect("setup returns at least one secondary");
    match co::broadcast(&env, wb.va + at::BCAST, line, lines, lines, peer, timeout(ctx)) {
        Ok(figures) => {
            let get = |n: SmpVariant| figures.iter().find(|(v, _)| *v == n).map(|&(_, m)| m as f64);
            if env.emulated {
                diag!("broadcast: emulated: the hand-shake's noise dominates the DC CIVAC windows; under the cache model its counts show the remote effect");
            } else if let (Some(h), Some(r), Some(s), Some(l)) =
                (get(SmpVariant::Handshake), get(SmpVariant::DcCivacRemote), get(SmpVariant::StoreLocal), get(SmpVariant::DcCivacLocal))
            {
                let per = |x: f64| env.timer.to_ns(x / lines as f64).unwrap_or(x / lines as f64);
                diag!(
                    "broadcast: DC CIVAC per line, hand-shake taken out: on lines core {} holds {:.1} ns, on own dirty lines {:.1} ns ({})",
                    peer,
                    per(r - h),
                    per(l - s),
                    env.timer.source.name()
                );
            }
        }
        Err(e) => ctx.fail(e),
    }
}

/// The last secondary, where the self-tests hang one.
fn last_core() -> Option<usize> {
    let n = smp::cores();
    (n >= 3).then_some(n - 1)
}

fn core_faults(ctx: &mut Ctx) {
    if smp::cores() < 3 {
        return ctx.skip("needs 3 or more cores (one faults, one hangs, one runs after)");
    }
    match smp::run_on(1, timeout(ctx), |_| crate::cpu::undefined_instruction()) {
        Ok(()) => ctx.fail("core 1: UDF did not fault"),
        Err(CoreError::Trap(r)) => ctx.fail(format!("core 1: unexpected exception: {}", r.summary())),
        Err(e) => ctx.fail(format!("core 1: {e}")),
    }
}

fn core_hangs(ctx: &mut Ctx) {
    let Some(core) = last_core() else {
        return ctx.skip("needs 3 or more cores (one faults, one hangs, one runs after)");
    };
    match smp::run_on(core, timeout(ctx), |_| loop {
        smp::relax();
    }) {
        Ok(()) => ctx.fail(format!("core {core}: the endless loop ended")),
        Err(e) => ctx.fail(format!("core {core}: {e}")),
    }
}

fn runs_after(ctx: &mut Ctx) {
    if smp::cores() < 3 {
        return ctx.skip("needs 3 or more cores (one faults, one hangs, one runs after)");
    }
    // Core 1 faulted earlier and must still work; the hung core must be refused, not waited for.
    ctx.check_eq(smp::run_on(1, timeout(ctx), |c| c), Ok(1), "core 1 runs a job after its fault");
    if let Some(core) = last_core() {
        ctx.check(smp::is_lost(core), format!("core {core} is marked lost after its timeout"));
        ctx.check_eq(smp::run_on(core, timeout(ctx), |c| c), Err(CoreError::Lost), format!("core {core} gets no more work"));
    }
}

/// Every ordered pair of cores hands one line back and forth (`smp_iters` round trips per
/// window): the core-to-core latency matrix, one `c2c` record per pair.
fn core_to_core(ctx: &mut Ctx) {
    let Some((cores, wb, _)) = setup(ctx) else { return };
    let env = env(ctx);
    let (line, _) = line_and_cwg();
    let iters = ctx.args.get(SMP.smp_iters);
    let all: Vec<usize> = core::iter::once(0).chain(cores.iter().copied()).collect();
    let at = wb.va + at::CORE_TO_CORE;
    let mut pairs = 0;
    for &from in &all {
        for &to in all.iter().filter(|&&t| t != from) {
            match co::core_to_core(&env, at, line as u64, from, to, iters, timeout(ctx)) {
                Ok(_) => pairs += 1,
                Err(e) => return ctx.fail(e),
            }
        }
    }
    diag!("core-to-core: {pairs} ordered pairs of {} cores, {iters} round trips per window", all.len());
    ctx.check_eq(pairs, all.len() * (all.len() - 1), "core-to-core: every ordered pair measured");
}
