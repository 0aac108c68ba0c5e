//! Self-tests of the harness that must fail or hang on purpose. They run only when named
//! (`only=selftest`, `only=hang`, `only=panic`); the test command checks their output.

use crate::harness::{Case, Ctx, Suite};

/// An unexpected data abort must be reported `not ok` with its decoded fault, and the next case
/// must still run.
pub const ABORT: Suite = Suite {
    name: "selftest",
    report: None,
    cases: &[Case { name: "unexpected-data-abort", run: unexpected_data_abort }, Case { name: "runs-after-abort", run: runs_after_abort }],
    on_request: true,
    args: &[],
    validate: None,
};

/// A hang the runner's timeout must catch.
pub const HANG: Suite =
    Suite { name: "hang", report: None, cases: &[Case { name: "forever", run: forever }], on_request: true, args: &[], validate: None };

/// A panic must print its location and fail the run.
pub const PANIC: Suite =
    Suite { name: "panic", report: None, cases: &[Case { name: "panics", run: panics }], on_request: true, args: &[], validate: None };

fn unexpected_data_abort(ctx: &mut Ctx) {
    // With the MMU off every data access is Device-nGnRnE: an unaligned load is an alignment
    // fault (unless the MMU is on and this is Normal memory, in which case nothing faults and
    // the check below fails the case instead, which is also `not ok`).
    let buf = [0u64; 2];
    // SAFETY: deliberately unaligned read inside owned memory: it faults or reads our bytes.
    let v = unsafe { crate::cpu::load_u32_raw(buf.as_ptr() as usize + 1) };
    ctx.fail(alloc::format!("unaligned load did not fault (read {v:#x})"));
}

fn runs_after_abort(ctx: &mut Ctx) {
    ctx.check(true, "this case runs after the abort");
}

fn forever(_ctx: &mut Ctx) {
    loop {
        core::hint::spin_loop();
    }
}

fn panics(_ctx: &mut Ctx) {
    panic!("deliberate panic from the panic self-test");
}
