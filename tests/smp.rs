//! Test kernel: releasing parked secondary cores through the board's mechanism (the spin table
//! on the Pi 4 / QEMU raspi4b, PSCI CPU_ON on the Pi 5 and QEMU virt). Each started core drops
//! to EL1 on its own stack, reports its MPIDR and parks again.

#![no_std]
#![no_main]

extern crate alloc;

use core::sync::atomic::{AtomicU64, Ordering};

use cachescope::cpu::{self, smp};
use cachescope::harness::{Case, Ctx, KernelSpec, Suite};
use cachescope::{bsp, diag};

const STACK_BYTES: usize = 16 << 10;
/// What a secondary core reports once it runs Rust code.
struct CheckIn {
    /// Its MPIDR with bit 63 set (0 = not started yet).
    mpidr: AtomicU64,
    /// Its CurrentEL (must be EL1, like the boot core).
    el: AtomicU64,
}

static CHECK_IN: [CheckIn; smp::MAX_CORES] = [const { CheckIn { mpidr: AtomicU64::new(0), el: AtomicU64::new(0) } }; smp::MAX_CORES];

extern "C" fn secondary(core: u64) -> ! {
    let me = &CHECK_IN[core as usize];
    me.el.store(cpu::current_el() as u64, Ordering::Relaxed);
    me.mpidr.store(cpu::mpidr() | 1 << 63, Ordering::Release);
    cachescope_arch::hw::dsb_sy();
    aarch64_cpu::asm::sev();
    cpu::park()
}

fn stack_top() -> usize {
    let stack: &'static mut [u128] = alloc::vec![0u128; STACK_BYTES / 16].leak();
    stack.as_ptr_range().end as usize
}

/// Waits up to `ms` milliseconds (generic timer) for a core to check in; returns its MPIDR.
fn wait_check_in(check_in: &CheckIn, ms: u64) -> Option<u64> {
    let f = cpu::timer_frequency().max(1);
    let t0 = cpu::counter();
    loop {
        let v = check_in.mpidr.load(Ordering::Acquire);
        if v != 0 {
            return Some(v & !(1 << 63));
        }
        if (cpu::counter() - t0) * 1000 / f > ms {
            return None;
        }
        core::hint::spin_loop();
    }
}

fn start_all(ctx: &mut Ctx) {
    let n = bsp::cores();
    diag!("{} cores on {}", n, ctx.boot.board);
    // The harness's probe, as every suite asks it: one core, or no firmware behind the PSCI
    // conduit (QEMU virt,secure=on), SKIPs before any core is asked to start.
    match cachescope::smp::probe() {
        Ok(method) => diag!("secondaries start by {method:?}"),
        Err(why) => return ctx.skip(why),
    }
    for (core, check_in) in CHECK_IN.iter().enumerate().take(n).skip(1) {
        match bsp::start_core(core, secondary, stack_top(), core as u64) {
            Ok(()) => {}
            Err(e) => {
                ctx.fail(alloc::format!("core {core}: {e}"));
                continue;
            }
        }
        match wait_check_in(check_in, 500) {
            None => ctx.fail(alloc::format!("core {core} did not check in within 500 ms")),
            Some(mpidr) => {
                let el = check_in.el.load(Ordering::Relaxed);
                diag!("core {core} running: MPIDR {mpidr:#x}, EL{el}");
                let number = (mpidr & 0xff) | ((mpidr >> 8) & 0xff);
                ctx.check_eq(number as usize, core, "the started core's MPIDR Aff0|Aff1 is the core asked for");
                ctx.check_eq(el, 1, "the secondary runs at EL1");
            }
        }
    }
}

fn refuses_bad_requests(ctx: &mut Ctx) {
    let top = stack_top();
    ctx.check_eq(bsp::start_core(0, secondary, top, 0), Err(smp::StartError::BadCore(0)), "core 0 is the boot core");
    let n = bsp::cores();
    ctx.check_eq(bsp::start_core(n, secondary, top, 0), Err(smp::StartError::BadCore(n)), "a core beyond the board's");
    if n >= 2 {
        // Refused before anything is written: core 1 is not disturbed.
        ctx.check_eq(bsp::start_core(1, secondary, top - 8, 1), Err(smp::StartError::BadStack), "a misaligned stack");
        ctx.check_eq(bsp::start_core(1, secondary, 0, 1), Err(smp::StartError::BadStack), "a null stack");
    }
}

const SUITE: Suite = Suite {
    name: "smp",
    report: None,
    cases: &[Case { name: "refuses-bad-requests", run: refuses_bad_requests }, Case { name: "start-secondaries", run: start_all }],
    on_request: false,
    args: &[],
    validate: None,
};

cachescope::kernel_main!(KernelSpec { suites: &[SUITE] });
