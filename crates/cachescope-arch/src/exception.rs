//! Exception syndrome decoding (Arm ARM D24.2.40 ESR_ELx): pure functions of raw register values,
//! shared by the EL1 handler, the expected-fault checks and host unit tests.

use core::fmt;

/// Which of the four vector entries of a group was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionKind {
    /// Synchronous exception.
    Synchronous,
    /// IRQ.
    Irq,
    /// FIQ.
    Fiq,
    /// SError (asynchronous external abort).
    SError,
}

impl ExceptionKind {
    /// From the vector index 0..15 (`index % 4` selects the kind).
    pub const fn from_vector(index: u64) -> Self {
        match index % 4 {
            0 => Self::Synchronous,
            1 => Self::Irq,
            2 => Self::Fiq,
            _ => Self::SError,
        }
    }

    /// Name as printed.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Synchronous => "synchronous",
            Self::Irq => "IRQ",
            Self::Fiq => "FIQ",
            Self::SError => "SError",
        }
    }
}

/// ESR_ELx.EC values the suite names (Arm ARM D24.2.40).
pub mod ec {
    /// Unknown reason (includes UNDEFINED instructions).
    pub const UNKNOWN: u8 = 0x00;
    /// Trapped MSR/MRS/system instruction.
    pub const SYSREG: u8 = 0x18;
    /// Instruction abort from a lower EL.
    pub const IABT_LOWER: u8 = 0x20;
    /// Instruction abort taken without a change in EL.
    pub const IABT_SAME: u8 = 0x21;
    /// PC alignment fault.
    pub const PC_ALIGN: u8 = 0x22;
    /// Data abort from a lower EL.
    pub const DABT_LOWER: u8 = 0x24;
    /// Data abort taken without a change in EL.
    pub const DABT_SAME: u8 = 0x25;
    /// SP alignment fault.
    pub const SP_ALIGN: u8 = 0x26;
    /// BRK instruction.
    pub const BRK: u8 = 0x3c;
}

/// The exception class's name (ESR_ELx.EC).
pub const fn ec_name(ec: u8) -> &'static str {
    match ec {
        0x00 => "Unknown reason (UNDEFINED instruction)",
        0x01 => "Trapped WFI/WFE",
        0x07 => "Trapped SVE/SIMD/FP access",
        0x0e => "Illegal execution state",
        0x15 => "SVC from AArch64",
        0x16 => "HVC from AArch64",
        0x17 => "SMC from AArch64",
        0x18 => "Trapped MSR/MRS/system instruction",
        0x19 => "Trapped SVE access",
        0x20 => "Instruction abort from a lower EL",
        0x21 => "Instruction abort, same EL",
        0x22 => "PC alignment fault",
        0x24 => "Data abort from a lower EL",
        0x25 => "Data abort, same EL",
        0x26 => "SP alignment fault",
        0x2c => "Trapped floating-point exception",
        0x2f => "SError",
        0x30 | 0x31 => "Breakpoint",
        0x32 | 0x33 => "Software step",
        0x34 | 0x35 => "Watchpoint",
        0x3c => "BRK instruction",
        _ => "Reserved/unallocated exception class",
    }
}

/// A decoded fault status code (DFSC/IFSC, ESR_ELx.ISS\[5:0\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultStatus {
    /// Address size fault at the given lookup level (-1..=3).
    AddressSize(i8),
    /// Translation fault at the given lookup level (-1..=3).
    Translation(i8),
    /// Access flag fault at the given lookup level (0..=3).
    AccessFlag(i8),
    /// Permission fault at the given lookup level (0..=3).
    Permission(i8),
    /// Synchronous external abort, not on a table walk.
    SyncExternal,
    /// Synchronous external abort on a table walk at the given level.
    SyncExternalOnWalk(i8),
    /// Alignment fault.
    Alignment,
    /// TLB conflict abort.
    TlbConflict,
    /// Any other code, kept raw.
    Other(u8),
}

impl FaultStatus {
    /// Decodes the 6-bit fault status code.
    pub const fn decode(fsc: u8) -> Self {
        let fsc = fsc & 0x3f;
        let level = (fsc & 3) as i8;
        match fsc {
            0b00_0000..=0b00_0011 => Self::AddressSize(level),
            0b00_0100..=0b00_0111 => Self::Translation(level),
            0b00_1000..=0b00_1011 => Self::AccessFlag(level),
            0b00_1100..=0b00_1111 => Self::Permission(level),
            0b01_0000 => Self::SyncExternal,
            0b01_0100..=0b01_0111 => Self::SyncExternalOnWalk(level),
            0b10_0001 => Self::Alignment,
            0b10_1001 => Self::AddressSize(-1),
            0b10_1011 => Self::Translation(-1),
            0b11_0000 => Self::TlbConflict,
            other => Self::Other(other),
        }
    }
}

impl fmt::Display for FaultStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::AddressSize(l) => write!(f, "address size fault, level {l}"),
            Self::Translation(l) => write!(f, "translation fault, level {l}"),
            Self::AccessFlag(l) => write!(f, "access flag fault, level {l}"),
            Self::Permission(l) => write!(f, "permission fault, level {l}"),
            Self::SyncExternal => write!(f, "synchronous external abort"),
            Self::SyncExternalOnWalk(l) => write!(f, "synchronous external abort on walk, level {l}"),
            Self::Alignment => write!(f, "alignment fault"),
            Self::TlbConflict => write!(f, "TLB conflict abort"),
            Self::Other(c) => write!(f, "fault status {c:#04x}"),
        }
    }
}

/// A decoded ESR_ELx value.
///
/// ```
/// use cachescope_arch::exception::{FaultStatus, Syndrome};
/// let esr = Syndrome { raw: 0x9600_0021 }; // an unaligned load with the MMU off
/// assert!(esr.is_data_abort());
/// assert_eq!(esr.fault_status(), Some(FaultStatus::Alignment));
/// assert_eq!(esr.write_not_read(), Some(false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syndrome {
    /// Raw register value.
    pub raw: u64,
}

impl Syndrome {
    /// Exception class, ESR\[31:26\].
    pub const fn ec(self) -> u8 {
        ((self.raw >> 26) & 0x3f) as u8
    }
    /// Instruction length bit, ESR\[25\] (1 = 32-bit instruction).
    pub const fn il(self) -> bool {
        self.raw & (1 << 25) != 0
    }
    /// Instruction-specific syndrome, ESR\[24:0\].
    pub const fn iss(self) -> u32 {
        (self.raw & 0x1ff_ffff) as u32
    }
    /// True for instruction and data aborts (the classes with a fault status code).
    pub const fn is_abort(self) -> bool {
        matches!(self.ec(), ec::IABT_LOWER | ec::IABT_SAME | ec::DABT_LOWER | ec::DABT_SAME)
    }
    /// True for data aborts.
    pub const fn is_data_abort(self) -> bool {
        matches!(self.ec(), ec::DABT_LOWER | ec::DABT_SAME)
    }
    /// Fault status of an abort.
    pub const fn fault_status(self) -> Option<FaultStatus> {
        if self.is_abort() {
            Some(FaultStatus::decode((self.raw & 0x3f) as u8))
        } else {
            None
        }
    }
    /// WnR of a data abort: the fault was caused by a write.
    pub const fn write_not_read(self) -> Option<bool> {
        if self.is_data_abort() {
            Some(self.raw & (1 << 6) != 0)
        } else {
            None
        }
    }
    /// FnV: FAR is not valid (ISS\[10\]) for aborts.
    pub const fn far_valid(self) -> bool {
        !(self.is_abort() && self.raw & (1 << 10) != 0)
    }
}

/// Everything known about one taken exception.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapReport {
    /// Vector kind.
    pub kind: ExceptionKind,
    /// Syndrome.
    pub esr: Syndrome,
    /// FAR_EL1.
    pub far: u64,
    /// ELR_EL1 (the faulting instruction for synchronous exceptions).
    pub elr: u64,
    /// SPSR_EL1.
    pub spsr: u64,
    /// The instruction word at ELR, when it could be read safely.
    pub insn: Option<u32>,
}

impl TrapReport {
    /// One-line summary used in KTAP failure diagnostics and for matching expected faults.
    pub fn summary(&self) -> Summary<'_> {
        Summary(self)
    }
}

/// Display adapter for [`TrapReport::summary`].
pub struct Summary<'a>(&'a TrapReport);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        if r.kind != ExceptionKind::Synchronous {
            return write!(f, "{} exception, ELR={:#x} SPSR={:#x}", r.kind.name(), r.elr, r.spsr);
        }
        write!(f, "{} (EC {:#04x}, ESR {:#x})", ec_name(r.esr.ec()), r.esr.ec(), r.esr.raw)?;
        if let Some(fs) = r.esr.fault_status() {
            write!(f, ": {fs}")?;
            if let Some(wnr) = r.esr.write_not_read() {
                write!(f, ", WnR={} ({})", wnr as u8, if wnr { "write" } else { "read" })?;
            }
            if r.esr.far_valid() {
                write!(f, ", FAR={:#x}", r.far)?;
            } else {
                write!(f, ", FAR not valid")?;
            }
        }
        write!(f, ", ELR={:#x} SPSR={:#x}", r.elr, r.spsr)?;
        match r.insn {
            Some(w) => write!(f, ", insn={w:#010x}"),
            None => write!(f, ", insn=unreadable"),
        }
    }
}

/// What a test says must happen: the fault it expects. Passes only on exactly this fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedFault {
    /// A data abort with this fault status (either EL origin).
    DataAbort(FaultStatus),
    /// An instruction abort with this fault status.
    InstructionAbort(FaultStatus),
    /// An UNDEFINED instruction (EC 0).
    Undefined,
}

impl ExpectedFault {
    /// Does `report` show exactly the expected fault?
    pub fn matches(&self, report: &TrapReport) -> bool {
        if report.kind != ExceptionKind::Synchronous {
            return false;
        }
        let esr = report.esr;
        match *self {
            Self::DataAbort(fs) => esr.is_data_abort() && esr.fault_status() == Some(fs),
            Self::InstructionAbort(fs) => matches!(esr.ec(), ec::IABT_LOWER | ec::IABT_SAME) && esr.fault_status() == Some(fs),
            Self::Undefined => esr.ec() == ec::UNKNOWN,
        }
    }
}

impl fmt::Display for ExpectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DataAbort(fs) => write!(f, "data abort ({fs})"),
            Self::InstructionAbort(fs) => write!(f, "instruction abort ({fs})"),
            Self::Undefined => write!(f, "UNDEFINED instruction"),
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    fn report(esr: u64, far: u64) -> TrapReport {
        TrapReport {
            kind: ExceptionKind::Synchronous,
            esr: Syndrome { raw: esr },
            far,
            elr: 0x4020_1000,
            spsr: 0x3c5,
            insn: Some(0xb940_0000),
        }
    }

    #[test]
    fn alignment_fault_mmu_off() {
        // Measured under QEMU: an unaligned load with the MMU off.
        let r = report(0x9600_0021, 0x4030_0001);
        assert_eq!(r.esr.ec(), ec::DABT_SAME);
        assert_eq!(r.esr.fault_status(), Some(FaultStatus::Alignment));
        assert_eq!(r.esr.write_not_read(), Some(false));
        assert!(ExpectedFault::DataAbort(FaultStatus::Alignment).matches(&r));
        assert!(!ExpectedFault::DataAbort(FaultStatus::Translation(3)).matches(&r));
        let s = format!("{}", r.summary());
        assert!(s.contains("Data abort, same EL"), "{s}");
        assert!(s.contains("alignment fault"), "{s}");
        assert!(s.contains("FAR=0x40300001"), "{s}");
    }

    #[test]
    fn translation_levels_and_write() {
        let r = report(0x9600_0046, 0xdead_0000); // WnR=1, translation level 2
        assert_eq!(r.esr.fault_status(), Some(FaultStatus::Translation(2)));
        assert_eq!(r.esr.write_not_read(), Some(true));
        assert_eq!(FaultStatus::decode(0b10_1011), FaultStatus::Translation(-1));
        assert_eq!(FaultStatus::decode(0x0f), FaultStatus::Permission(3));
        assert_eq!(FaultStatus::decode(0x0b), FaultStatus::AccessFlag(3));
    }

    #[test]
    fn instruction_abort_and_undef() {
        let r = report(0x8600_000f, 0x5000_0000);
        assert!(ExpectedFault::InstructionAbort(FaultStatus::Permission(3)).matches(&r));
        assert!(!ExpectedFault::DataAbort(FaultStatus::Permission(3)).matches(&r));
        let u = report(0x0200_0000, 0);
        assert!(ExpectedFault::Undefined.matches(&u));
        assert_eq!(u.esr.fault_status(), None);
    }

    #[test]
    fn every_esr_formats() {
        for ec in 0..64u64 {
            for low in [0u64, 0x21, 0x3f, 0x40, 0x400] {
                let r = report((ec << 26) | low, 0);
                let _ = format!("{}", r.summary());
            }
        }
    }
}
