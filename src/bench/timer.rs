//! Measured windows: a timer source (CNTVCT_EL0 or the PMU cycle counter) read inside DSB/ISB
//! brackets, a warm-up, and repeated samples.

use alloc::vec::Vec;

use crate::cpu::{self, pmu, trap};

/// Where a figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The generic timer's virtual count, at CNTFRQ_EL0 Hz.
    Cntvct,
    /// PMCCNTR_EL0, in CPU cycles.
    Pmccntr,
}

impl Source {
    /// Name used in records.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cntvct => "cntvct",
            Self::Pmccntr => "pmccntr",
        }
    }
}

/// A configured timer.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    /// The counter read.
    pub source: Source,
    /// Counts per second for CNTVCT (CNTFRQ_EL0); 0 for the cycle counter (unit: cycles).
    pub freq: u64,
}

impl Timer {
    /// The generic timer (always present). Never assumes a frequency: CNTFRQ_EL0 is read.
    pub fn generic() -> Self {
        Self { source: Source::Cntvct, freq: cpu::timer_frequency() }
    }

    /// The PMU cycle counter, if the PMU exists and is usable at EL1 (probed under a catcher).
    pub fn cycles() -> Result<Self, &'static str> {
        match trap::try_run(|| {
            if !pmu::present() {
                return false;
            }
            pmu::enable_cycle_counter();
            let a = pmu::cycles();
            for _ in 0..1000 {
                core::hint::spin_loop();
            }
            pmu::cycles() > a
        }) {
            Ok(true) => Ok(Self { source: Source::Pmccntr, freq: 0 }),
            Ok(false) => Err("no PMUv3 cycle counter (ID_AA64DFR0_EL1.PMUVer) or it does not count"),
            Err(_) => Err("PMU registers trap at EL1"),
        }
    }

    /// Reads the counter.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            Source::Cntvct => aarch64_cpu::registers::CNTVCT_EL0.get(),
            Source::Pmccntr => pmu::cycles(),
        }
    }

    /// One measured window: DSB SY; ISB; read; `f`; DSB SY; ISB; read.
    #[inline(always)]
    pub fn window(&self, f: &mut impl FnMut()) -> u64 {
        cachescope_arch::hw::dsb_sy();
        cachescope_arch::hw::isb();
        let t0 = self.now();
        f();
        cachescope_arch::hw::dsb_sy();
        cachescope_arch::hw::isb();
        self.now().wrapping_sub(t0)
    }

    /// [`window`](Self::window) with the PMU event counters of `mask` running inside its
    /// barriers: started after the opening DSB/ISB, stopped after the closing ones
    /// (`bench::pmu`).
    #[inline(always)]
    pub fn counted_window(&self, mask: u64, f: &mut impl FnMut()) -> u64 {
        cachescope_arch::hw::dsb_sy();
        cachescope_arch::hw::isb();
        pmu::start(mask);
        let t0 = self.now();
        f();
        cachescope_arch::hw::dsb_sy();
        cachescope_arch::hw::isb();
        let t1 = self.now();
        pmu::stop(mask);
        t1.wrapping_sub(t0)
    }

    /// `reps` measured windows of `f` (warm-up is the caller's: `bench::measure` runs it through
    /// this same function, so warm-up and measured runs take the same path).
    pub fn measure(&self, reps: usize, mut f: impl FnMut()) -> Vec<u64> {
        (0..reps).map(|_| self.window(&mut f)).collect()
    }

    /// [`measure`](Self::measure) with the PMU event counters of `mask` running inside each
    /// window ([`counted_window`](Self::counted_window)): the same loop, so the windows touch the
    /// same memory as uncounted ones.
    pub fn measure_counted(&self, reps: usize, mask: u64, mut f: impl FnMut()) -> Vec<u64> {
        (0..reps).map(|_| self.counted_window(mask, &mut f)).collect()
    }

    /// Resolution: the smallest non-zero difference of two back-to-back reads (counts).
    pub fn resolution(&self) -> u64 {
        let mut best = u64::MAX;
        for _ in 0..64 {
            let a = self.now();
            let mut b = self.now();
            let mut guard = 0;
            while b == a && guard < 1_000_000 {
                b = self.now();
                guard += 1;
            }
            if b > a {
                best = best.min(b - a);
            }
        }
        best
    }

    /// Converts counts to nanoseconds (None for the cycle counter, whose unit is cycles).
    pub fn to_ns(&self, counts: f64) -> Option<f64> {
        (self.freq > 0).then(|| counts * 1e9 / self.freq as f64)
    }
}

use tock_registers::interfaces::Readable;
