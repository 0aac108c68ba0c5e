//! Test kernel: the exception path. Expected faults pass only on exactly that fault, an
//! unexpected one fails only its own case, and a missing or different fault is caught.

#![no_std]
#![no_main]

use cachescope::cpu::{self, trap};
use cachescope::exception::{ExpectedFault, FaultStatus};
use cachescope::harness::{Args, Case, Ctx, KernelSpec, Suite};

fn unaligned_load_mmu_off(ctx: &mut Ctx) {
    let buf = [0u64; 2];
    let addr = buf.as_ptr() as usize + 1;
    // SAFETY: the load stays inside `buf`; with the MMU off it must raise an alignment fault.
    let r = ctx.expect_fault(ExpectedFault::DataAbort(FaultStatus::Alignment), || unsafe {
        cpu::load_u32_raw(addr);
    });
    if let Some(r) = r {
        ctx.check_eq(r.far, addr as u64, "FAR is the unaligned address");
        ctx.check_eq(r.esr.write_not_read(), Some(false), "WnR=0 for a load");
        ctx.check(r.insn.is_some(), "faulting instruction word was read");
    }
}

fn unaligned_store_reports_write(ctx: &mut Ctx) {
    let mut buf = [0u64; 2];
    let addr = buf.as_mut_ptr() as usize + 2;
    // SAFETY: store inside `buf`; must fault before writing.
    let r = ctx.expect_fault(ExpectedFault::DataAbort(FaultStatus::Alignment), || unsafe { cpu::store_u32_raw(addr, 0xdead_beef) });
    if let Some(r) = r {
        ctx.check_eq(r.esr.write_not_read(), Some(true), "WnR=1 for a store");
    }
    ctx.check_eq(buf, [0, 0], "the faulting store wrote nothing");
}

fn undefined_instruction(ctx: &mut Ctx) {
    ctx.expect_fault(ExpectedFault::Undefined, cpu::undefined_instruction);
}

fn wrong_fault_is_a_failure(ctx: &mut Ctx) {
    // A nested context that expects a translation fault but gets an alignment fault must fail.
    let args = Args::default();
    let mut inner = Ctx::new(ctx.boot, &args);
    let buf = [0u64; 2];
    let addr = buf.as_ptr() as usize + 1;
    // SAFETY: unaligned load inside `buf`.
    inner.expect_fault(ExpectedFault::DataAbort(FaultStatus::Translation(3)), || unsafe {
        cpu::load_u32_raw(addr);
    });
    ctx.check(inner.failed(), "expecting the wrong fault fails the case");
    let mut inner = Ctx::new(ctx.boot, &args);
    inner.expect_fault(ExpectedFault::Undefined, || {});
    ctx.check(inner.failed(), "expecting a fault that never happens fails the case");
}

fn unexpected_fault_is_caught(ctx: &mut Ctx) {
    let buf = [0u64; 2];
    // SAFETY: unaligned load inside `buf`.
    let r = trap::try_run(|| unsafe { cpu::load_u32_raw(buf.as_ptr() as usize + 1) });
    match r {
        Ok(v) => {
            ctx.fail(alloc_free_msg(v));
        }
        Err(t) => {
            ctx.check_eq(t.esr.fault_status(), Some(FaultStatus::Alignment), "caught trap is the alignment fault");
        }
    }
    // Execution continues normally after the catcher returned.
    ctx.check_eq(core::hint::black_box(2 + 2), 4, "code after a caught trap runs");
}

fn alloc_free_msg(v: u32) -> &'static str {
    if v == 0 {
        "unaligned load returned without a fault"
    } else {
        "unaligned load returned data without a fault"
    }
}

fn nested_catchers(ctx: &mut Ctx) {
    let outer = trap::try_run(|| {
        let inner = trap::try_run(cpu::undefined_instruction);
        inner.is_err()
    });
    ctx.check_eq(outer, Ok(true), "inner catcher takes the trap, outer sees a normal return");
}

const SUITE: Suite = Suite {
    name: "faults",
    report: None,
    cases: &[
        Case { name: "unaligned-load-mmu-off", run: unaligned_load_mmu_off },
        Case { name: "unaligned-store-reports-write", run: unaligned_store_reports_write },
        Case { name: "undefined-instruction", run: undefined_instruction },
        Case { name: "wrong-fault-is-a-failure", run: wrong_fault_is_a_failure },
        Case { name: "unexpected-fault-is-caught", run: unexpected_fault_is_caught },
        Case { name: "nested-catchers", run: nested_catchers },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

cachescope::kernel_main!(KernelSpec { suites: &[SUITE] });
