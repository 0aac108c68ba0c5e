//! PMU event counts of a phase's measured windows: the events of `cachescope_arch::pmu`'s
//! catalogue the core advertises, at most PMCR_EL0.N at a time, the groups multiplexed over
//! contiguous shares of the repetitions, and the one `pmu` record per phase.
//!
//! The counters run only inside each window's DSB/ISB bracket (PMCNTENSET after the opening
//! barrier, PMCNTENCLR after the closing one), so a count covers `f` plus the two timer reads
//! and the closing barrier, as the window's time does. With one group (every event fits the
//! counters, as on QEMU) the counters are programmed before the phase, its windows run the same
//! loop as uncounted ones ([`Timer::measure_counted`]) and the counters are read after it, so
//! counting adds no memory access to the cache model's phase (two MSRs per window). With several
//! groups, the group changes inside the phase touch a few lines of the kernel's stack.

use alloc::vec::Vec;

use cachescope_arch::pmu::{Plan, PmuEvent};

use super::timer::Timer;
use crate::cpu::{pmu, trap};
use crate::record::{self, Emit};

/// The plan for this core, using at most `at_most` event counters (the kernel argument
/// `pmu_counters`): `None` when the PMU is absent, its registers trap at EL1, it advertises none
/// of the catalogue's events, or `at_most` is 0.
pub fn plan(at_most: usize) -> Option<Plan> {
    let probed = trap::try_run(|| {
        if !pmu::present() {
            return None;
        }
        let (p0, p1) = pmu::pmceid();
        Some(Plan::new(p0, p1, (pmu::event_counters() as usize).min(at_most)))
    });
    probed.ok().flatten().filter(|p| p.groups() > 0)
}

/// One phase's counts, per event of the plan (in its order).
pub struct PhaseCounts {
    plan: Plan,
    reps: usize,
    /// The group whose counters hold counts not yet added up, if any.
    pending: Option<usize>,
    counts: [u64; PmuEvent::ALL.len()],
    windows: [u64; PmuEvent::ALL.len()],
    overflowed: [bool; PmuEvent::ALL.len()],
}

impl PhaseCounts {
    /// Nothing counted yet.
    pub fn new(plan: &Plan) -> Self {
        const N: usize = PmuEvent::ALL.len();
        PhaseCounts { plan: *plan, reps: 0, pending: None, counts: [0; N], windows: [0; N], overflowed: [false; N] }
    }

    /// Programs the plan's one group for `reps` windows and returns its counters' enable mask:
    /// the windows then run as [`Timer::measure_counted`], inside the phase, and
    /// [`finish`](Self::finish) reads the counters after it. `None` when the plan has several
    /// groups (use [`measure`](Self::measure)).
    pub fn program_single(&mut self, reps: usize) -> Option<u64> {
        if self.plan.groups() != 1 {
            return None;
        }
        self.reps = reps;
        pmu::program(self.plan.group(0));
        self.pending = Some(0);
        Some(pmu::mask_of(self.plan.group(0).len()))
    }

    /// Runs `reps` measured windows of `f` with `timer`, counting the plan's events, and
    /// returns the windows' times in repetition order. The last group's counters stay in the
    /// counters until [`finish`](Self::finish) (call it after the phase's end marker).
    pub fn measure(&mut self, timer: &Timer, reps: usize, f: &mut impl FnMut()) -> Vec<u64> {
        self.reps = reps;
        let mut samples = Vec::with_capacity(reps);
        for g in 0..self.plan.groups() {
            self.finish();
            pmu::program(self.plan.group(g));
            let mask = pmu::mask_of(self.plan.group(g).len());
            for _ in self.plan.reps_of(g, reps) {
                samples.push(timer.counted_window(mask, f));
            }
            self.pending = Some(g);
        }
        samples
    }

    /// Adds the pending group's counters to the counts.
    pub fn finish(&mut self) {
        let Some(g) = self.pending.take() else { return };
        let windows = self.plan.reps_of(g, self.reps).len() as u64;
        let first = g * self.plan.counters;
        for i in 0..self.plan.group(g).len() {
            let (v, overflowed) = pmu::read(i);
            self.counts[first + i] += v;
            self.windows[first + i] += windows;
            self.overflowed[first + i] |= overflowed;
        }
    }

    /// Emits the `pmu` record of phase `phase`. A counter that overflowed (32 bits) gives no
    /// count: its event is left out of the record, with a diagnostic.
    pub fn emit(&self, phase: &str, emulated: bool) {
        let mut events = [0u64; PmuEvent::ALL.len()];
        let mut counts = [0u64; PmuEvent::ALL.len()];
        let mut windows = [0u64; PmuEvent::ALL.len()];
        let mut n = 0;
        for (i, e) in self.plan.events().iter().enumerate() {
            if self.overflowed[i] {
                crate::diag!("pmu: {phase}: {} overflowed its 32-bit counter: left out", e.name());
                continue;
            }
            events[n] = e.number().into();
            counts[n] = self.counts[i];
            windows[n] = self.windows[i];
            n += 1;
        }
        record::Pmu::new()
            .phase(phase)
            .reps(self.reps as u64)
            .counters(self.plan.counters as u64)
            .events(&events[..n])
            .counts(&counts[..n])
            .windows(&windows[..n])
            .source(record::PMU_SOURCE_PMU)
            .emulated(emulated)
            .emit();
    }
}
