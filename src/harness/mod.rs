//! The test harness: suites and cases as data, one assertion primitive ([`Ctx::check`]),
//! expected faults, KTAP output (records are printed by [`crate::record`]).

pub mod args;
pub mod catalogue;
pub mod ktap;

use alloc::{string::String, vec::Vec};
use core::fmt::Display;

use crate::boot_info::BootInfo;
pub use args::{ArgDefault, ArgKind, ArgSpec, Args};
pub use catalogue::{Case, Suite};

/// The state of the running case: what it checked, whether it failed or skipped.
pub struct Ctx<'a> {
    /// Facts gathered at boot.
    pub boot: &'a BootInfo,
    /// Kernel arguments.
    pub args: &'a Args,
    failures: Vec<String>,
    skipped: Option<String>,
    checks: u32,
}

impl<'a> Ctx<'a> {
    /// A fresh context for one case.
    pub fn new(boot: &'a BootInfo, args: &'a Args) -> Self {
        Self { boot, args, failures: Vec::new(), skipped: None, checks: 0 }
    }

    /// The one assertion primitive: records `what` as a failure unless `cond` holds.
    /// Returns `cond` so a case can stop early.
    pub fn check(&mut self, cond: bool, what: impl Display) -> bool {
        self.checks += 1;
        if !cond {
            self.fail(what);
        }
        cond
    }

    /// Checks `left == right`, printing both on failure.
    pub fn check_eq<T: PartialEq + core::fmt::Debug>(&mut self, left: T, right: T, what: impl Display) -> bool {
        self.checks += 1;
        if left != right {
            self.fail(alloc::format!("{what}: {left:?} != {right:?}"));
            return false;
        }
        true
    }

    /// Marks the case failed with a reason (printed as a KTAP diagnostic).
    pub fn fail(&mut self, what: impl Display) {
        let msg = alloc::format!("{what}");
        #[cfg(target_os = "none")]
        crate::diag!("FAIL: {}", msg);
        self.failures.push(msg);
    }

    /// Marks the case skipped (a feature is absent or the emulator deviates): never a pass.
    pub fn skip(&mut self, reason: impl Display) {
        self.skipped = Some(alloc::format!("{reason}"));
    }

    /// True when some check failed.
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
    }

    /// The recorded failures.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }

    /// Number of checks made.
    pub fn checks(&self) -> u32 {
        self.checks
    }

    /// Declares that the code just run in the cache-model phase `phase` made a deliberate
    /// mistake the model's sanitizer must report exactly: `kind` at `lines` lines from physical
    /// address `pa`, `stride` bytes apart, and nothing else in that phase (an `expect-hazard`
    /// record, checked by the host: `scripts/xtask hazards`). Only under the model (else the
    /// record would mean nothing).
    #[cfg(target_os = "none")]
    pub fn expect_hazard(&self, phase: &str, kind: cachescope_arch::hazard::HazardKind, pa: u64, lines: u64, stride: u64) {
        use crate::record::{self, Emit};
        if self.boot.model.is_some() {
            record::ExpectHazard::new().phase(phase).kind(kind.name()).pa(pa).lines(lines).stride(stride).emit();
        }
    }

    /// Runs `f`, which must raise exactly `expected`. Passes only when that fault happens;
    /// any other fault, or none, is a failure. Returns the trap that was taken.
    #[cfg(target_os = "none")]
    pub fn expect_fault(&mut self, expected: crate::exception::ExpectedFault, f: impl FnOnce()) -> Option<crate::exception::TrapReport> {
        self.checks += 1;
        match crate::cpu::trap::try_run(f) {
            Ok(()) => {
                self.fail(alloc::format!("expected {expected}, but no exception was taken"));
                None
            }
            Err(report) => {
                crate::diag!("trap: {}", report.summary());
                if !expected.matches(&report) {
                    self.fail(alloc::format!("expected {expected}, got {}", report.summary()));
                }
                Some(report)
            }
        }
    }

    /// The secondary cores a case can use ([`crate::smp::secondaries`]), or None after marking the
    /// case skipped (one core, no way to start one: the same reason everywhere) or failed
    /// (every secondary lost at an earlier timeout).
    #[cfg(target_os = "none")]
    pub fn secondaries(&mut self) -> Option<Vec<usize>> {
        match crate::smp::secondaries() {
            Ok(cores) => Some(cores),
            Err(why) if why.is_skip() => {
                self.skip(why);
                None
            }
            Err(why) => {
                self.fail(why);
                None
            }
        }
    }

    /// The skip reason, if the case skipped.
    pub fn skip_reason(&self) -> Option<&str> {
        self.skipped.as_deref()
    }
}

/// Case counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Passed cases.
    pub passed: usize,
    /// Failed cases.
    pub failed: usize,
    /// Skipped cases.
    pub skipped: usize,
}

#[cfg(target_os = "none")]
mod runner;
#[cfg(target_os = "none")]
pub use runner::{run_kernel, KernelSpec};
