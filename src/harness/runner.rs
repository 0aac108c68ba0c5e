//! Runs the selected suites on the target and prints KTAP. Every case runs under the trap
//! catcher, so an unexpected exception fails that case and the next one still runs.

use alloc::string::String;
use core::fmt::Write;

use super::catalogue::{Plan, Request};
use super::{args, catalogue, ktap, ktap::Verdict, Args, Ctx, Suite, Totals};
use crate::record::{self, Emit};
use crate::{boot_info::BootInfo, bsp, console, cpu::trap, cpuid::Midr, diag, println};

/// What a kernel binary (the main job or a test kernel) runs: its suites in order. The
/// arguments it accepts are those its suites declare (plus `only=` / `skip=`).
pub struct KernelSpec {
    /// The suites in order.
    pub suites: &'static [Suite],
}

fn arg_error(msg: &dyn core::fmt::Display, spec: &KernelSpec) -> ! {
    println!("cachescope: error: {msg}");
    let mut usage = String::new();
    let _ = writeln!(usage, "cachescope: accepted arguments ('help' lists them with the cases):");
    let _ = args::write_usage(&mut usage, &catalogue::all_specs(spec.suites), "cachescope:");
    crate::print!("{usage}");
    bsp::exit(2)
}

/// Parses the command line, runs the selected suites, prints the `end` record and exits with
/// 0 only when nothing failed. `help` prints the accepted arguments and exits 0; a bad command
/// line prints `cachescope: error: …` and exits 2 before anything runs.
pub fn run_kernel(boot: &BootInfo, spec: &KernelSpec) -> ! {
    if let Some(e) = &boot.cmdline_error {
        arg_error(e, spec);
    }
    let Plan { args, selection } = match catalogue::plan(spec.suites, &boot.cmdline, boot) {
        Ok(Request::Run(p)) => p,
        Ok(Request::Help) => {
            let mut help = String::new();
            let _ = catalogue::write_help(&mut help, spec.suites, "cachescope: ");
            crate::print!("{help}");
            bsp::exit(0)
        }
        Err(e) => arg_error(&e, spec),
    };

    let mut line = String::new();
    let _ = ktap::header(&mut line, 0, None, selection.len());
    println!("{line}");
    emit_boot_record(boot);
    crate::model_markers::announce();
    // The runner loads the model only together with -icount: waits get their wall-time bound.
    crate::smp::set_icount(boot.model.is_some());

    let mut totals = Totals::default();
    for (n, (si, cases)) in selection.iter().enumerate() {
        let suite = &spec.suites[*si];
        let suite_totals = run_suite(boot, &args, suite, cases);
        totals.passed += suite_totals.passed;
        totals.failed += suite_totals.failed;
        totals.skipped += suite_totals.skipped;
        let verdict = if suite_totals.failed > 0 {
            Verdict::Fail
        } else if suite_totals.passed == 0 && suite_totals.skipped > 0 {
            Verdict::Skip
        } else {
            Verdict::Pass
        };
        line.clear();
        let _ = ktap::result_line(&mut line, 0, n + 1, suite.name, verdict, "all cases skipped");
        println!("{line}");
    }
    finish(totals)
}

fn run_suite(boot: &BootInfo, args: &Args, suite: &Suite, cases: &[usize]) -> Totals {
    let mut line = String::new();
    let _ = ktap::header(&mut line, 1, Some(suite.name), cases.len());
    println!("{line}");
    console::set_depth(1);
    let mut t = Totals::default();
    if let Some(report) = suite.report {
        let mut ctx = Ctx::new(boot, args);
        if let Err(trap) = trap::try_run(|| report(&mut ctx)) {
            diag!("report of suite {} stopped by an exception: {}", suite.name, trap.summary());
        }
    }
    for (k, &ci) in cases.iter().enumerate() {
        let case = &suite.cases[ci];
        let mut ctx = Ctx::new(boot, args);
        let result = trap::try_run(|| (case.run)(&mut ctx));
        if let Err(trap) = result {
            ctx.fail(alloc::format!("unexpected exception: {}", trap.summary()));
        }
        let (verdict, reason) = if ctx.failed() {
            t.failed += 1;
            (Verdict::Fail, "")
        } else if let Some(r) = ctx.skip_reason() {
            t.skipped += 1;
            (Verdict::Skip, r)
        } else {
            t.passed += 1;
            (Verdict::Pass, "")
        };
        line.clear();
        let _ = ktap::result_line(&mut line, 1, k + 1, case.name, verdict, reason);
        println!("{line}");
    }
    line.clear();
    let _ = ktap::totals_line(&mut line, 1, suite.name, t.passed, t.failed, t.skipped);
    println!("{line}");
    console::set_depth(0);
    t
}

/// Prints the `maint-total` record, the `end` record and totals, then ends the run (exit status 0 only if nothing failed).
pub fn finish(t: Totals) -> ! {
    console::set_depth(0);
    emit_maint_total();
    record::End::new().passed(t.passed as u64).failed(t.failed as u64).skipped(t.skipped as u64).emit();
    let mut line = String::new();
    let _ = ktap::totals_line(&mut line, 0, "Totals", t.passed, t.failed, t.skipped);
    println!("{line}");
    bsp::exit(if t.failed == 0 { 0 } else { 1 })
}

/// The `maint-total` record: every DC, IC and TLBI executed in the run, by operation, as the
/// instruction wrappers of `cachescope_arch::hw` counted them.
fn emit_maint_total() {
    record::MaintTotal::new().ops(&cachescope_arch::hw::maint_counts()).emit();
}

/// Emits the `boot` record: always the first record of a run.
fn emit_boot_record(b: &BootInfo) {
    let midr = Midr { raw: b.midr };
    record::Boot::new()
        .schema(record::SCHEMA as u64)
        .el(b.entry_el as u64)
        .current_el(b.current_el as u64)
        .board(b.board)
        .midr(b.midr)
        .cpu(midr.core_name().unwrap_or("unknown"))
        .cntfrq(b.cntfrq)
        .dtb(b.dtb.is_some())
        .ram_base(b.ram.0)
        .ram_size(b.ram.1)
        .uart(b.uart as u64)
        .emulated(b.emulated)
        .args(&alloc::format!("{}", super::args::Escaped(&b.cmdline)))
        .model(b.model.as_deref().unwrap_or("off"))
        .cores(bsp::cores() as u64)
        .emit();
}
