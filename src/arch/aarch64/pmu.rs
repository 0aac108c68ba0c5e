//! The PMU cycle counter and event probes (Arm ARM D13, PMUv3). The registers are
//! `cachescope_arch::sysreg`'s (layouts and access in one place).

use tock_registers::interfaces::{Readable, Writeable};

use cachescope_arch::sysreg::{ID_AA64DFR0_EL1, PMCCFILTR_EL0, PMCCNTR_EL0, PMCEID0_EL0, PMCEID1_EL0, PMCNTENSET_EL0, PMCR_EL0};

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

/// Is common event `event` (0x00..0x3f) advertised by PMCEID0/1?
pub fn event_implemented(event: u16) -> bool {
    match event {
        0..=31 => PMCEID0_EL0.get() & (1 << event) != 0,
        32..=63 => PMCEID1_EL0.get() & (1 << (event - 32)) != 0,
        _ => false,
    }
}
