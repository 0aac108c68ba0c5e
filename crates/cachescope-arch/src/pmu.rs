//! The PMUv3 common events a measured window counts (Arm ARM D17.11 "The PMU event number
//! space and common events"), declared once: the kernel counts them per phase and writes their
//! numbers in the `pmu` record, the host's `compare-model` names them and pairs each with the
//! cache model's count that predicts it.
//!
//! ```
//! use cachescope_arch::pmu::PmuEvent;
//! assert_eq!(PmuEvent::L1dCacheRefill.number(), 0x03);
//! assert_eq!(PmuEvent::from_number(0x17), Some(PmuEvent::L2dCacheRefill));
//! assert_eq!(PmuEvent::L2dCacheRefill.name(), "L2D_CACHE_REFILL");
//! ```

/// One common event of the catalogue, in the order a window counts them (the first
/// `PMCR_EL0.N` advertised ones in one group, the next in the next group, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PmuEvent {
    /// 0x11 CPU_CYCLES: cycles.
    CpuCycles,
    /// 0x08 INST_RETIRED: instructions architecturally executed.
    InstRetired,
    /// 0x04 L1D_CACHE: level 1 data cache accesses.
    L1dCache,
    /// 0x03 L1D_CACHE_REFILL: level 1 data cache refills.
    L1dCacheRefill,
    /// 0x15 L1D_CACHE_WB: level 1 data cache write-backs.
    L1dCacheWb,
    /// 0x16 L2D_CACHE: level 2 data (or unified) cache accesses.
    L2dCache,
    /// 0x17 L2D_CACHE_REFILL: level 2 data cache refills.
    L2dCacheRefill,
    /// 0x18 L2D_CACHE_WB: level 2 data cache write-backs.
    L2dCacheWb,
    /// 0x2a L3D_CACHE_REFILL: level 3 data cache refills.
    L3dCacheRefill,
    /// 0x13 MEM_ACCESS: data memory accesses.
    MemAccess,
    /// 0x19 BUS_ACCESS: accesses on the core's external bus.
    BusAccess,
    /// 0x05 L1D_TLB_REFILL: level 1 data TLB refills.
    L1dTlbRefill,
}

impl PmuEvent {
    /// Every event, in counting order.
    pub const ALL: [PmuEvent; 12] = [
        PmuEvent::CpuCycles,
        PmuEvent::InstRetired,
        PmuEvent::L1dCache,
        PmuEvent::L1dCacheRefill,
        PmuEvent::L1dCacheWb,
        PmuEvent::L2dCache,
        PmuEvent::L2dCacheRefill,
        PmuEvent::L2dCacheWb,
        PmuEvent::L3dCacheRefill,
        PmuEvent::MemAccess,
        PmuEvent::BusAccess,
        PmuEvent::L1dTlbRefill,
    ];

    /// The architected event number (`PMEVTYPER<n>_EL0.evtCount`, the PMCEID bit).
    pub const fn number(self) -> u16 {
        match self {
            PmuEvent::CpuCycles => 0x11,
            PmuEvent::InstRetired => 0x08,
            PmuEvent::L1dCache => 0x04,
            PmuEvent::L1dCacheRefill => 0x03,
            PmuEvent::L1dCacheWb => 0x15,
            PmuEvent::L2dCache => 0x16,
            PmuEvent::L2dCacheRefill => 0x17,
            PmuEvent::L2dCacheWb => 0x18,
            PmuEvent::L3dCacheRefill => 0x2a,
            PmuEvent::MemAccess => 0x13,
            PmuEvent::BusAccess => 0x19,
            PmuEvent::L1dTlbRefill => 0x05,
        }
    }

    /// The Arm ARM's mnemonic.
    pub const fn name(self) -> &'static str {
        match self {
            PmuEvent::CpuCycles => "CPU_CYCLES",
            PmuEvent::InstRetired => "INST_RETIRED",
            PmuEvent::L1dCache => "L1D_CACHE",
            PmuEvent::L1dCacheRefill => "L1D_CACHE_REFILL",
            PmuEvent::L1dCacheWb => "L1D_CACHE_WB",
            PmuEvent::L2dCache => "L2D_CACHE",
            PmuEvent::L2dCacheRefill => "L2D_CACHE_REFILL",
            PmuEvent::L2dCacheWb => "L2D_CACHE_WB",
            PmuEvent::L3dCacheRefill => "L3D_CACHE_REFILL",
            PmuEvent::MemAccess => "MEM_ACCESS",
            PmuEvent::BusAccess => "BUS_ACCESS",
            PmuEvent::L1dTlbRefill => "L1D_TLB_REFILL",
        }
    }

    /// The catalogue's event with this number.
    pub fn from_number(n: u64) -> Option<PmuEvent> {
        PmuEvent::ALL.into_iter().find(|e| u64::from(e.number()) == n)
    }

    /// Is the event advertised by these PMCEID0_EL0 / PMCEID1_EL0 values?
    pub const fn advertised(self, pmceid0: u64, pmceid1: u64) -> bool {
        let n = self.number();
        match n {
            0..=31 => pmceid0 & (1 << n) != 0,
            32..=63 => pmceid1 & (1 << (n - 32)) != 0,
            _ => false,
        }
    }
}

/// How the advertised events of a window are split into groups of at most `counters` events
/// (PMCR_EL0.N), one group per share of the repetitions: the multiplexing plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The events to count, in catalogue order (`len` of them are valid).
    pub events: [PmuEvent; 12],
    /// Valid entries of `events`.
    pub len: usize,
    /// Event counters per group (PMCR_EL0.N, at most 31).
    pub counters: usize,
}

impl Plan {
    /// The plan for a core advertising `pmceid0`/`pmceid1` with `counters` event counters.
    pub fn new(pmceid0: u64, pmceid1: u64, counters: usize) -> Plan {
        let mut events = [PmuEvent::CpuCycles; 12];
        let mut len = 0;
        for e in PmuEvent::ALL {
            if e.advertised(pmceid0, pmceid1) {
                events[len] = e;
                len += 1;
            }
        }
        if counters == 0 {
            len = 0;
        }
        Plan { events, len, counters: counters.min(31) }
    }

    /// The events counted.
    pub fn events(&self) -> &[PmuEvent] {
        &self.events[..self.len]
    }

    /// Groups of at most `counters` events (0 when nothing is counted).
    pub fn groups(&self) -> usize {
        if self.counters == 0 {
            0
        } else {
            self.len.div_ceil(self.counters)
        }
    }

    /// The events of group `g`.
    pub fn group(&self, g: usize) -> &[PmuEvent] {
        let start = (g * self.counters).min(self.len);
        &self.events[start..(start + self.counters).min(self.len)]
    }

    /// The repetitions `0..reps` group `g` counts: a contiguous share, the first
    /// `reps % groups` groups one more (so a counter is programmed once per group, not per
    /// repetition). Empty when there are fewer repetitions than groups.
    pub fn reps_of(&self, g: usize, reps: usize) -> core::ops::Range<usize> {
        let n = self.groups().max(1);
        let (base, extra) = (reps / n, reps % n);
        let start = g * base + g.min(extra);
        start..start + base + usize::from(g < extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_distinct_and_round_trip() {
        for e in PmuEvent::ALL {
            assert_eq!(PmuEvent::from_number(e.number().into()), Some(e));
            assert_eq!(PmuEvent::ALL.iter().filter(|o| o.number() == e.number()).count(), 1);
        }
        assert_eq!(PmuEvent::from_number(0x00), None);
    }

    #[test]
    fn plan_multiplexes_the_advertised_events() {
        // CPU_CYCLES, INST_RETIRED, L1D_CACHE, L1D_CACHE_REFILL, L2D_CACHE_REFILL advertised; 2 counters.
        let p0 = (1 << 0x11) | (1 << 0x08) | (1 << 0x04) | (1 << 0x03) | (1 << 0x17);
        let p = Plan::new(p0, 0, 2);
        assert_eq!(
            p.events(),
            &[PmuEvent::CpuCycles, PmuEvent::InstRetired, PmuEvent::L1dCache, PmuEvent::L1dCacheRefill, PmuEvent::L2dCacheRefill]
        );
        assert_eq!(p.groups(), 3);
        assert_eq!(p.group(2), &[PmuEvent::L2dCacheRefill]);
        // 7 repetitions over 3 groups: 3, 2, 2, contiguous and covering every repetition.
        assert_eq!((0..3).map(|g| p.reps_of(g, 7)).collect::<std::vec::Vec<_>>(), [0..3, 3..5, 5..7]);
        // Fewer repetitions than groups: the last group counts none.
        assert_eq!(p.reps_of(2, 2), 2..2);
        // L3D_CACHE_REFILL lives in PMCEID1.
        assert!(PmuEvent::L3dCacheRefill.advertised(0, 1 << (0x2a - 32)));
        assert_eq!(Plan::new(u64::MAX, u64::MAX, 0).groups(), 0);
    }
}
