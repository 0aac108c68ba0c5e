//! System registers: the one home of their layouts and the one way to access them.
//!
//! Layouts are tock-registers bitfields: aarch64-cpu's (re-exported here, e.g. [`CLIDR_EL1`](mod@CLIDR_EL1),
//! [`SCTLR_EL1`](mod@SCTLR_EL1), [`TCR_EL1`](mod@TCR_EL1)) and, for the registers aarch64-cpu lacks, ours below
//! ([`CTR_EL0`](mod@CTR_EL0), [`DCZID_EL0`](mod@DCZID_EL0), [`CCSIDR2_EL1`](mod@CCSIDR2_EL1), [`PAR`], [`PMCR_EL0`](mod@PMCR_EL0)). Access, on the target,
//! is always the tock-registers interface on a register value: `CTR_EL0.get()`,
//! `SCTLR_EL1.is_set(SCTLR_EL1::C)`, `PMCR_EL0.write(PMCR_EL0::E::SET)` — aarch64-cpu's
//! registers and ours alike. Decoders work on raw values (`LocalRegisterCopy`) and run on the
//! host. Arm ARM DDI 0487K.a: CTR_EL0 D24.2.33, DCZID_EL0 D24.2.36, CCSIDR2_EL1 D24.2.27,
//! PAR_EL1 D24.2.124, PMCR_EL0 D24.5.15.
//!
//! ```
//! use cachescope_arch::sysreg::CTR_EL0;
//! use tock_registers::LocalRegisterCopy;
//! let ctr = LocalRegisterCopy::<u64, CTR_EL0::Register>::new(0x8444_c004);
//! assert_eq!(ctr.read(CTR_EL0::DminLine), 4); // 2^4 words = 64-byte lines
//! ```

pub use aarch64_cpu::registers::{
    CCSIDR_EL1, CLIDR_EL1, CSSELR_EL1, ID_AA64DFR0_EL1, ID_AA64MMFR0_EL1, ID_AA64MMFR2_EL1, MAIR_EL1, MPIDR_EL1, SCTLR_EL1, TCR_EL1,
    TTBR0_EL1,
};
pub use layouts::{CCSIDR2_EL1, CTR_EL0, DCZID_EL0, ID_AA64ISAR0_EL1, PAR, PMCR_EL0};

/// Register layouts aarch64-cpu lacks (the macro generates undocumented helper items, hence the
/// `allow`; every field is documented).
#[allow(missing_docs)]
pub mod layouts {
    use tock_registers::register_bitfields;

    register_bitfields! {u64,
    /// Cache Type Register (aarch64-cpu has no definition of it).
    pub CTR_EL0 [
        /// Log2 of the number of words (4 B) in the smallest allocation-tag cache line (FEAT_MTE2).
        TminLine OFFSET(32) NUMBITS(6) [],
        /// RES1 in the AArch64 format (0 means an Armv6/Armv7-style layout).
        Res1 OFFSET(31) NUMBITS(1) [],
        /// Instruction cache invalidation to PoU is not required for data-to-instruction coherence.
        DIC OFFSET(29) NUMBITS(1) [],
        /// Data cache clean to PoU is not required for instruction-to-data coherence.
        IDC OFFSET(28) NUMBITS(1) [],
        /// Cache writeback granule: log2 words (0 = not provided).
        CWG OFFSET(24) NUMBITS(4) [],
        /// Exclusives reservation granule: log2 words (0 = not provided).
        ERG OFFSET(20) NUMBITS(4) [],
        /// Log2 of the number of words in the smallest data/unified line that maintenance affects.
        DminLine OFFSET(16) NUMBITS(4) [],
        /// Level 1 instruction cache policy.
        L1Ip OFFSET(14) NUMBITS(2) [
            VPIPT = 0b00,
            AIVIVT = 0b01,
            VIPT = 0b10,
            PIPT = 0b11
        ],
        /// Log2 of the number of words in the smallest instruction cache line.
        IminLine OFFSET(0) NUMBITS(4) []
    ],
    /// Data Cache Zero ID register (aarch64-cpu has no definition of it).
    pub DCZID_EL0 [
        /// DC ZVA (and DC GVA/GZVA) prohibited.
        DZP OFFSET(4) NUMBITS(1) [],
        /// Log2 of the block size in words (4 B); 9 (2 KiB) is the largest permitted value.
        BS OFFSET(0) NUMBITS(4) []
    ],
    /// Instruction Set Attribute Register 0 (aarch64-cpu declares only RNDR).
    pub ID_AA64ISAR0_EL1 [
        /// Atomic instructions: 0b0010 = FEAT_LSE (LDADD, CAS, SWP, …), 0b0011 = also FEAT_LSE128.
        Atomic OFFSET(20) NUMBITS(4) []
    ],
    /// Current Cache Size ID Register 2 (FEAT_CCIDX; aarch64-cpu has no definition of it).
    pub CCSIDR2_EL1 [
        /// Number of sets minus 1.
        NumSets OFFSET(0) NUMBITS(24) []
    ],
        /// PAR_EL1 after an address translation instruction (aarch64-cpu declares only F and PA).
        pub PAR [
            /// Memory attributes of the translation, in MAIR byte format (F = 0).
            ATTR OFFSET(56) NUMBITS(8) [],
            /// Output address bits \[47:12\] (F = 0).
            PA OFFSET(12) NUMBITS(36) [],
            /// Fault in a stage 2 translation (F = 1).
            S OFFSET(9) NUMBITS(1) [],
            /// Fault on a stage 2 walk of a stage 1 table (F = 1).
            PTW OFFSET(8) NUMBITS(1) [],
            /// Shareability (F = 0).
            SH OFFSET(7) NUMBITS(2) [],
            /// Fault status code, DFSC encoding (F = 1).
            FST OFFSET(1) NUMBITS(6) [],
            /// The translation aborted.
            F OFFSET(0) NUMBITS(1) []
        ],
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

/// Declares an accessor for a system register aarch64-cpu lacks, in aarch64-cpu's style: a
/// constant of a unit type implementing tock-registers' `Readable` (and `Writeable`).
#[cfg(target_os = "none")]
macro_rules! sysreg {
    ($(#[$m:meta])* $name:ident: $ty:ident, $reg:literal, $fields:ty, read $(, write $($w:ident)?)?) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug)]
        pub struct $ty;
        $(#[$m])*
        pub const $name: $ty = $ty;
        impl tock_registers::interfaces::Readable for $ty {
            type T = u64;
            type R = $fields;
            #[inline]
            fn get(&self) -> u64 {
                let v;
                // SAFETY: an MRS of this register; the declaration documents when it is
                // readable at EL1 (the caller checks features or catches the trap).
                unsafe { core::arch::asm!(concat!("mrs {}, ", $reg), out(reg) v, options(nostack, preserves_flags)) };
                v
            }
        }
        $($(#[doc = stringify!($w)])?
        impl tock_registers::interfaces::Writeable for $ty {
            type T = u64;
            type R = $fields;
            #[inline]
            fn set(&self, v: u64) {
                // SAFETY: an MSR of a register whose writes affect only what its declaration
                // says (performance counting); no memory is touched.
                unsafe { core::arch::asm!(concat!("msr ", $reg, ", {}"), in(reg) v, options(nostack, preserves_flags)) };
            }
        })?
    };
}

#[cfg(target_os = "none")]
pub use access::*;

/// The accessors (target only).
#[cfg(target_os = "none")]
mod access {
    use super::layouts;

    sysreg!(
        /// CTR_EL0: line sizes, L1 I-cache policy, ERG/CWG, IDC/DIC. Readable at EL1.
        CTR_EL0: CtrEl0, "ctr_el0", layouts::CTR_EL0::Register, read
    );
    sysreg!(
        /// DCZID_EL0: DC ZVA block size and prohibition. Readable at EL1.
        DCZID_EL0: DczidEl0, "dczid_el0", layouts::DCZID_EL0::Register, read
    );
    sysreg!(
        /// CCSIDR2_EL1 of the cache CSSELR_EL1 selects: UNDEFINED without FEAT_CCIDX (and may
        /// trap, FEAT_IDST): read it only with FEAT_CCIDX or under a trap catcher.
        CCSIDR2_EL1: Ccsidr2El1, "s3_1_c0_c0_2", layouts::CCSIDR2_EL1::Register, read
    );
    sysreg!(
        /// ID_AA64ISAR0_EL1: instruction-set features (FEAT_LSE in `Atomic`). Readable at EL1.
        ID_AA64ISAR0_EL1: IdAa64isar0El1, "id_aa64isar0_el1", layouts::ID_AA64ISAR0_EL1::Register, read
    );
    sysreg!(
        /// PMCR_EL0: PMU control. EL1 access needs MDCR_EL2/MDCR_EL3 not to trap it.
        PMCR_EL0: PmcrEl0, "pmcr_el0", layouts::PMCR_EL0::Register, read, write
    );
    sysreg!(
        /// PMCCNTR_EL0: the cycle counter.
        PMCCNTR_EL0: PmccntrEl0, "pmccntr_el0", (), read, write
    );
    sysreg!(
        /// PMCNTENSET_EL0: counter enables (bit 31 = cycle counter).
        PMCNTENSET_EL0: PmcntensetEl0, "pmcntenset_el0", (), read, write
    );
    sysreg!(
        /// PMCNTENCLR_EL0: counter disables (write 1 to a counter's bit).
        PMCNTENCLR_EL0: PmcntenclrEl0, "pmcntenclr_el0", (), read, write
    );
    sysreg!(
        /// PMOVSCLR_EL0: counter overflow flags (write 1 to clear; bit 31 = cycle counter).
        PMOVSCLR_EL0: PmovsclrEl0, "pmovsclr_el0", (), read, write
    );
    sysreg!(
        /// PMSELR_EL0: selects the event counter PMXEVTYPER_EL0 / PMXEVCNTR_EL0 access.
        PMSELR_EL0: PmselrEl0, "pmselr_el0", (), read, write
    );
    sysreg!(
        /// PMXEVTYPER_EL0: the selected counter's event and filter (0 in bits 31:27 = count at
        /// EL1 and EL0, not EL2).
        PMXEVTYPER_EL0: PmxevtyperEl0, "pmxevtyper_el0", (), read, write
    );
    sysreg!(
        /// PMXEVCNTR_EL0: the selected event counter's value.
        PMXEVCNTR_EL0: PmxevcntrEl0, "pmxevcntr_el0", (), read, write
    );
    sysreg!(
        /// PMCCFILTR_EL0: cycle counter filter (0 = count at EL1 and EL0).
        PMCCFILTR_EL0: PmccfiltrEl0, "pmccfiltr_el0", (), read, write
    );
    sysreg!(
        /// PMCEID0_EL0: common events 0x00..0x1f implemented.
        PMCEID0_EL0: Pmceid0El0, "pmceid0_el0", (), read
    );
    sysreg!(
        /// PMCEID1_EL0: common events 0x20..0x3f implemented.
        PMCEID1_EL0: Pmceid1El0, "pmceid1_el0", (), read
    );
}
