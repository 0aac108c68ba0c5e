//! The PMU cycle counter and event probes (Arm ARM D13, PMUv3). Registers aarch64-cpu lacks are
//! declared here with tock-registers bitfields.

use tock_registers::interfaces::{Readable, Writeable};

/// Bitfield declarations (generated items carry no docs of their own).
#[allow(missing_docs)]
pub mod fields {
    use tock_registers::register_bitfields;
    register_bitfields! {u64,
        /// PMCR_EL0: performance monitors control.
        pub PMCR_EL0 [
            /// Number of event counters implemented.
            N OFFSET(11) NUMBITS(5) [],
            /// Long cycle counter (64-bit overflow).
            LC OFFSET(6) NUMBITS(1) [],
            /// Cycle counter reset (write 1).
            C OFFSET(2) NUMBITS(1) [],
            /// Event counter reset (write 1).
            P OFFSET(1) NUMBITS(1) [],
            /// Enable.
            E OFFSET(0) NUMBITS(1) []
        ]
    }
}
pub use fields::PMCR_EL0;

macro_rules! sysreg {
    ($name:ident, $reg:literal, $fields:ty, $doc:literal) => {
        #[doc = $doc]
        pub struct $name;
        impl Readable for $name {
            type T = u64;
            type R = $fields;
            #[inline]
            fn get(&self) -> u64 {
                let v;
                // SAFETY: reads a PMU system register; EL1 access is granted by boot.s
                // (MDCR_EL2.HPMN = N, no TPM/TPMCR traps). Callers probe under a trap catcher.
                unsafe { core::arch::asm!(concat!("mrs {}, ", $reg), out(reg) v, options(nomem, nostack)) };
                v
            }
        }
        impl Writeable for $name {
            type T = u64;
            type R = $fields;
            #[inline]
            fn set(&self, v: u64) {
                // SAFETY: writes a PMU control register, affecting only performance counting.
                unsafe { core::arch::asm!(concat!("msr ", $reg, ", {}"), in(reg) v, options(nomem, nostack)) };
            }
        }
    };
}

sysreg!(Pmcr, "pmcr_el0", PMCR_EL0::Register, "PMCR_EL0.");
sysreg!(Pmccntr, "pmccntr_el0", (), "PMCCNTR_EL0: the cycle counter.");
sysreg!(Pmcntenset, "pmcntenset_el0", (), "PMCNTENSET_EL0: counter enables (bit 31 = cycle counter).");
sysreg!(Pmccfiltr, "pmccfiltr_el0", (), "PMCCFILTR_EL0: cycle counter filter (0 = count at EL1 and EL0).");
sysreg!(Pmceid0, "pmceid0_el0", (), "PMCEID0_EL0: common events 0x00..0x1f implemented.");
sysreg!(Pmceid1, "pmceid1_el0", (), "PMCEID1_EL0: common events 0x20..0x3f implemented.");
sysreg!(IdAa64dfr0, "id_aa64dfr0_el1", (), "ID_AA64DFR0_EL1 (PMUVer in bits 11:8).");

/// PMUv3 is implemented (ID_AA64DFR0_EL1.PMUVer is neither 0 nor 0xf = IMPDEF).
pub fn present() -> bool {
    let ver = (IdAa64dfr0.get() >> 8) & 0xf;
    ver != 0 && ver != 0xf
}

/// Enables and resets the 64-bit cycle counter, counting at EL1.
pub fn enable_cycle_counter() {
    Pmccfiltr.set(0);
    Pmcr.write(PMCR_EL0::E::SET + PMCR_EL0::LC::SET + PMCR_EL0::C::SET);
    Pmcntenset.set(1 << 31);
    super::cpu::isb();
}

/// The cycle counter.
#[inline(always)]
pub fn cycles() -> u64 {
    Pmccntr.get()
}

/// Number of event counters (PMCR_EL0.N).
pub fn event_counters() -> u64 {
    Pmcr.read(PMCR_EL0::N)
}

/// Is common event `event` (0x00..0x3f) advertised by PMCEID0/1?
pub fn event_implemented(event: u16) -> bool {
    match event {
        0..=31 => Pmceid0.get() & (1 << event) != 0,
        32..=63 => Pmceid1.get() & (1 << (event - 32)) != 0,
        _ => false,
    }
}
