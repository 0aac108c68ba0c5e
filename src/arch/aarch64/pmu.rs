//! The PMU cycle counter, event counters and event probes (Arm ARM D13, PMUv3). The registers
//! are `cachescope_arch::sysreg`'s (layouts and access in one place); the event catalogue and the
//! multiplexing plan are `cachescope_arch::pmu`'s.

use tock_registers::interfaces::{ReadWriteable, Readable, Writeable};

use cachescope_arch::pmu::PmuEvent;
use cachescope_arch::sysreg::{
    ID_AA64DFR0_EL1, PMCCFILTR_EL0, PMCCNTR_EL0, PMCEID0_EL0, PMCEID1_EL0, PMCNTENCLR_EL0, PMCNTENSET_EL0, PMCR_EL0, PMOVSCLR_EL0,
    PMSELR_EL0, PMXEVCNTR_EL0, PMXEVTYPER_EL0,
};

/// PMUv3 is implemented (ID_AA64DFR0_EL1.PMUVer is neither 0 nor 0xf = IMPDEF).
pub fn present() -> bool {
    let ver = ID_AA64DFR0_EL1.read(ID_AA64DFR0_EL1::PMUVer);
    ver != 0 && ver != 0xf
}

/// Enables and resets the 64-bit cycle counter, counting at EL1.
pub fn enable_cycle_counter() {
    PMCCFILTR_EL0.set(0);
    PMCR_EL0.write(PMCR_EL0::E::SET + PMCR_EL0::LC::SET + PMCR_EL0::C::SET);
    PMCNTENSET_EL0.set(1 << 31);
    super::cache::isb();
}

/// The cycle counter.
#[inline(always)]
pub fn cycles() -> u64 {
    PMCCNTR_EL0.get()
}

/// Number of event counters (PMCR_EL0.N).
pub fn event_counters() -> u64 {
    PMCR_EL0.read(PMCR_EL0::N)
}

/// PMCEID0_EL0 and PMCEID1_EL0: the common events 0x00..0x3f the core implements.
pub fn pmceid() -> (u64, u64) {
    (PMCEID0_EL0.get(), PMCEID1_EL0.get())
}

/// Is common event `event` (0x00..0x3f) advertised by PMCEID0/1?
pub fn event_implemented(event: u16) -> bool {
    match event {
        0..=31 => PMCEID0_EL0.get() & (1 << event) != 0,
        32..=63 => PMCEID1_EL0.get() & (1 << (event - 32)) != 0,
        _ => false,
    }
}

/// Programs event counter `i` (i < PMCR_EL0.N) for each event of `group` in turn, counting at
/// EL1 and EL0 (PMEVTYPER filter bits 0), leaves them disabled, zeroes every event counter
/// (PMCR_EL0.P, which leaves the cycle counter alone) and clears their overflow flags. Sets
/// PMCR_EL0.E, which the cycle counter also needs.
pub fn program(group: &[PmuEvent]) {
    let mask = mask_of(group.len());
    PMCNTENCLR_EL0.set(mask);
    for (i, e) in group.iter().enumerate() {
        PMSELR_EL0.set(i as u64);
        super::cache::isb();
        PMXEVTYPER_EL0.set(u64::from(e.number()));
    }
    PMCR_EL0.modify(PMCR_EL0::E::SET + PMCR_EL0::P::SET);
    PMOVSCLR_EL0.set(mask);
    super::cache::isb();
}

/// The enable bits of event counters `0..n`.
pub const fn mask_of(n: usize) -> u64 {
    if n >= 31 {
        (1 << 31) - 1
    } else {
        (1 << n) - 1
    }
}

/// Starts the event counters of `mask` (PMCNTENSET_EL0).
#[inline(always)]
pub fn start(mask: u64) {
    PMCNTENSET_EL0.set(mask);
}

/// Stops the event counters of `mask` (PMCNTENCLR_EL0).
#[inline(always)]
pub fn stop(mask: u64) {
    PMCNTENCLR_EL0.set(mask);
}

/// Event counter `i`'s value (32 bits before PMUv3p5) and whether it overflowed since
/// [`program`] (PMOVSCLR_EL0).
pub fn read(i: usize) -> (u64, bool) {
    PMSELR_EL0.set(i as u64);
    super::cache::isb();
    (PMXEVCNTR_EL0.get(), PMOVSCLR_EL0.get() & (1 << i) != 0)
}
