//! Deep-learning-shaped microbenchmarks over every memory attribute: latency vs working set,
//! streaming with prefetch (data loader), pinned DMA-like hand-off, and ring-buffer KV append.
//! Each benchmark is one file under `src/bench/` (its typed arguments, validation, variants and
//! case: [`bench::case::Benchmark`]); this suite is a loop over their catalogue,
//! [`bench::BENCHMARKS`].
//!
//! Under QEMU these figures count the emulator's work (with `-icount` they are deterministic
//! instruction-driven counts), never cache behaviour: every record carries `"emulated": true`.

use crate::bench::{self, case::Machine, timer::Timer, BENCHMARKS};
use crate::diag;
use crate::harness::{ArgSpec, Case, Ctx, Suite};

/// The benchmark suite.
pub const SUITE: Suite =
    Suite { name: "bench", report: Some(report), cases: &CASES, args: &ARGS, validate: Some(validate), on_request: false };

/// One case per benchmark, in catalogue order.
const CASES: [Case; BENCHMARKS.len()] = {
    let mut cases = [const { Case { name: "", run: |_| {} } }; BENCHMARKS.len()];
    let mut i = 0;
    while i < BENCHMARKS.len() {
        cases[i] = Case { name: BENCHMARKS[i].id.name(), run: BENCHMARKS[i].run };
        i += 1;
    }
    cases
};

/// How many keys the benchmarks declare, the common ones included.
const N_ARGS: usize = {
    let mut n = bench::case::COMMON_ARGS.len();
    let mut i = 0;
    while i < BENCHMARKS.len() {
        n += BENCHMARKS[i].args.len();
        i += 1;
    }
    n
};

/// Kernel arguments of the benchmarks: the common ones, then each benchmark's, each declared
/// once (a key declared twice does not compile).
pub const ARGS: [ArgSpec; N_ARGS] = {
    let mut out = [bench::case::COMMON_ARGS[0]; N_ARGS];
    let mut n = 0;
    let mut table = 0;
    while table <= BENCHMARKS.len() {
        let specs = if table == 0 { bench::case::COMMON_ARGS } else { BENCHMARKS[table - 1].args };
        let mut j = 0;
        while j < specs.len() {
            let mut k = 0;
            while k < n {
                assert!(!same(out[k].key, specs[j].key), "a benchmark argument key is declared twice");
                k += 1;
            }
            out[n] = specs[j];
            n += 1;
            j += 1;
        }
        table += 1;
    }
    out
};

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Refuses, before anything runs, argument values this machine cannot run: each benchmark's
/// check, in catalogue order, against the machine read once.
fn validate(ctx: &Ctx) -> Result<(), alloc::string::String> {
    let machine = Machine::of(ctx);
    for b in BENCHMARKS {
        if let Some(check) = b.validate {
            check(ctx, &machine)?;
        }
    }
    Ok(())
}

fn report(ctx: &mut Ctx) {
    diag!("== benchmarks ==");
    if ctx.boot.emulated {
        diag!("These run under an emulator: QEMU models no caches and memory attributes change no");
        diag!("timing, so the figures below measure the emulator (with -icount they count instructions).");
        diag!("Every record says \"emulated\":true. Real cache behaviour needs silicon or the cache model.");
    }
    let t = Timer::generic();
    diag!(
        "timer: CNTVCT_EL0 at {} Hz (CNTFRQ_EL0), resolution {} count(s) = {:.1} ns",
        t.freq,
        t.resolution(),
        t.to_ns(t.resolution() as f64).unwrap_or(0.0)
    );
    match Timer::cycles() {
        Ok(_) => {
            diag!("PMU: cycle counter usable at EL1, {} event counters", crate::cpu::pmu::event_counters());
            for e in cachescope_arch::pmu::PmuEvent::ALL {
                let (ev, name) = (e.number(), e.name());
                if crate::cpu::pmu::event_implemented(ev) {
                    diag!("  event {ev:#04x} {name}: advertised by PMCEID, counted per phase (pmu records)");
                } else {
                    diag!("  event {ev:#04x} {name}: not advertised by PMCEID0/1 - not counted");
                }
            }
        }
        Err(why) => diag!("PMU: skipped ({why})"),
    }
}
