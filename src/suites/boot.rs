//! Boot facts: entry and current EL, the core, the timer, RAM, DTB, heap and command line.

use alloc::vec::Vec;

use crate::cpu;
use crate::cpuid::Midr;
use crate::diag;
use crate::harness::{Case, Ctx, Suite};

/// The boot suite.
pub const SUITE: Suite = Suite {
    name: "boot",
    report: Some(report),
    cases: &[
        Case { name: "runs-at-el1", run: runs_at_el1 },
        Case { name: "entry-above-el1", run: entry_above_el1 },
        Case { name: "device-tree", run: device_tree },
        Case { name: "generic-timer", run: generic_timer },
        Case { name: "heap", run: heap },
        Case { name: "fp-simd", run: fp_simd },
        Case { name: "pmu-events", run: pmu_events },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

fn report(ctx: &mut Ctx) {
    let b = ctx.boot;
    let midr = Midr { raw: b.midr };
    diag!("== cachescope system report ==");
    match (&b.model, b.emulated) {
        (Some(profile), _) => diag!(
            "board            {} (emulator: caches observed through the cache model, profile {profile}; timings measure the emulator)",
            b.board
        ),
        (None, true) => diag!("board            {} (emulator: QEMU models no caches; timings measure the emulator)", b.board),
        (None, false) => diag!("board            {}", b.board),
    }
    diag!("entry EL         EL{} -> running at EL{}", b.entry_el, b.current_el);
    diag!(
        "core             {} (MIDR {:#010x}: implementer {:#04x} {}, part {:#05x}, variant {}, revision {})",
        midr.core_name().unwrap_or("unknown"),
        b.midr,
        midr.implementer(),
        midr.implementer_name(),
        midr.part(),
        midr.variant(),
        midr.revision()
    );
    diag!("generic timer    {} Hz (CNTFRQ_EL0; one tick = {} ns)", b.cntfrq, 1_000_000_000u64.checked_div(b.cntfrq).unwrap_or(0));
    diag!(
        "RAM              {:#x}..{:#x} ({} MiB, from {})",
        b.ram.0,
        b.ram.0 + b.ram.1,
        b.ram.1 >> 20,
        if b.ram_from_dtb { "DTB" } else { "board default" }
    );
    match b.dtb {
        Some(a) => diag!("device tree      found at {a:#x}"),
        None => diag!("device tree      not found (board defaults used)"),
    }
    diag!("console          PL011 at {:#x} (from {})", b.uart, if b.uart_from_dtb { "DTB" } else { "board default" });
    diag!("heap             {:#x} + {} MiB; arena {:#x} + {} MiB", b.heap.0, b.heap.1 >> 20, b.arena.0, b.arena.1 >> 20);
    diag!("command line     '{}'", crate::harness::args::Escaped(&b.cmdline));
}

fn runs_at_el1(ctx: &mut Ctx) {
    ctx.check_eq(cpu::current_el(), 1, "CurrentEL after boot");
    ctx.check((1..=3).contains(&ctx.boot.entry_el), "entry EL is 1, 2 or 3");
}

fn entry_above_el1(ctx: &mut Ctx) {
    if ctx.boot.entry_el == 1 {
        ctx.skip("entered at EL1: the EL2/EL3 drop path was not exercised");
        return;
    }
    // Having dropped from EL2/EL3, the timer and PMU must be usable at EL1 without traps.
    let t0 = cpu::counter();
    let t1 = cpu::counter();
    ctx.check(t1 >= t0, "CNTVCT readable at EL1 after the drop");
}

fn device_tree(ctx: &mut Ctx) {
    if ctx.boot.dtb.is_none() {
        if ctx.boot.board == "qemu-virt" {
            ctx.fail("QEMU virt always provides a DTB at the base of RAM; none was found");
        } else {
            ctx.skip("no device tree handed over by the loader");
        }
        return;
    }
    ctx.check(ctx.boot.ram_from_dtb, "RAM size read from /memory");
    ctx.check(ctx.boot.ram.1 >= 64 << 20, "at least 64 MiB of RAM");
    ctx.check(ctx.boot.uart_from_dtb, "UART address read from the arm,pl011 node");
}

fn generic_timer(ctx: &mut Ctx) {
    let f = ctx.boot.cntfrq;
    ctx.check(f > 0, "CNTFRQ_EL0 is programmed");
    let t0 = cpu::counter();
    let mut spins = 0u64;
    while cpu::counter() == t0 && spins < 10_000_000 {
        spins += 1;
    }
    ctx.check(cpu::counter() > t0, "CNTVCT_EL0 advances");
}

fn heap(ctx: &mut Ctx) {
    let v: Vec<u64> = (0..4096).collect();
    ctx.check_eq(v.iter().sum::<u64>(), 4096 * 4095 / 2, "sum over a heap vector");
    let big: Vec<u8> = alloc::vec![0xa5; 1 << 20];
    ctx.check(big.iter().all(|&b| b == 0xa5), "1 MiB heap allocation holds its contents");
}

fn fp_simd(ctx: &mut Ctx) {
    // FP/SIMD was enabled at every EL on the way down; a trap here would fail the case.
    let x = core::hint::black_box(1.5f64);
    ctx.check_eq(x * x, 2.25, "FP multiply");
}

/// The PMU event counters' plumbing, as the benchmarks' `pmu` records use it (`bench::pmu`):
/// a window of 1024 NOPs and one of 2048 retire exactly 1024 instructions apart (INST_RETIRED,
/// where advertised: QEMU advertises it only under `-icount`, counting its instruction count),
/// and CPU_CYCLES advances over a window.
fn pmu_events(ctx: &mut Ctx) {
    use cachescope_arch::pmu::PmuEvent;
    let Some(plan) = crate::bench::pmu::plan(usize::MAX) else {
        ctx.skip("no PMUv3 event counter usable at EL1, or none of the catalogue's events advertised (PMCEID0/1)");
        return;
    };
    // No allocation here: the heap's layout is the later benchmarks' buffer placement.
    diag!("PMU: {} event counters (PMCR_EL0.N), {} group(s) of the catalogue's events advertised:", plan.counters, plan.groups());
    for e in plan.events() {
        diag!("  {:#04x} {}", e.number(), e.name());
    }
    let mut tested = false;
    if plan.events().contains(&PmuEvent::InstRetired) {
        let (short, long) = (inst_retired_over_nops::<1024>(), inst_retired_over_nops::<2048>());
        diag!("INST_RETIRED: {short} over 1024 NOPs, {long} over 2048 NOPs");
        ctx.check_eq(long.wrapping_sub(short), 1024, "INST_RETIRED counts 1024 more over 1024 more NOPs");
        tested = true;
    } else {
        diag!("INST_RETIRED not advertised (QEMU: only under -icount): its plumbing is not checked");
    }
    if plan.events().contains(&PmuEvent::CpuCycles) {
        cpu::pmu::program(&[PmuEvent::CpuCycles]);
        cpu::pmu::start(1);
        for _ in 0..10_000 {
            core::hint::spin_loop();
        }
        cpu::pmu::stop(1);
        let (cycles, _) = cpu::pmu::read(0);
        ctx.check(cycles > 0, "CPU_CYCLES advances over a window of 10,000 spins");
        tested = true;
    }
    if !tested {
        ctx.skip("neither INST_RETIRED nor CPU_CYCLES advertised");
    }
}

/// INST_RETIRED counted over `N` NOPs (and the counter stop after them).
#[inline(never)]
fn inst_retired_over_nops<const N: usize>() -> u64 {
    use cachescope_arch::pmu::PmuEvent;
    cpu::pmu::program(&[PmuEvent::InstRetired]);
    cpu::pmu::start(1);
    // SAFETY: NOPs only; no memory, stack or flags touched.
    unsafe { core::arch::asm!(".rept {n}", "nop", ".endr", n = const N, options(nomem, nostack, preserves_flags)) };
    cpu::pmu::stop(1);
    cpu::pmu::read(0).0
}
