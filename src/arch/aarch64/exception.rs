//! The EL1 exception handler: decode, report, and either resume the active trap catcher or end
//! the run. Never returns to a faulting instruction, so nothing hangs.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::exception::{ec, ExceptionKind, Syndrome, TrapReport};
use crate::{arch::trap, bsp, console};

/// The register frame built by `cs_exception_common` (exception.s).
#[repr(C)]
pub struct ExceptionFrame {
    /// x0..x30.
    pub x: [u64; 31],
    /// ELR_EL1 (written back on return).
    pub elr: u64,
    /// SPSR_EL1 (written back on return).
    pub spsr: u64,
    /// ESR_EL1.
    pub esr: u64,
    /// FAR_EL1.
    pub far: u64,
    /// SP at the time of the exception.
    pub sp: u64,
}

static NESTING: AtomicUsize = AtomicUsize::new(0);

fn read_insn(kind: ExceptionKind, esr: Syndrome, elr: u64) -> Option<u32> {
    // The instruction at ELR was fetched successfully unless the fault is a fetch fault.
    let fetch_fault = matches!(esr.ec(), ec::IABT_LOWER | ec::IABT_SAME | ec::PC_ALIGN);
    if kind != ExceptionKind::Synchronous || fetch_fault || !elr.is_multiple_of(4) {
        return None;
    }
    // SAFETY: ELR holds the address of an instruction that the CPU just fetched, so it is mapped
    // and readable (the kernel's own text, identity mapped or MMU off).
    Some(unsafe { core::ptr::read_volatile(elr as *const u32) })
}

/// Called from the vectors with the vector index and the saved frame.
#[no_mangle]
extern "C" fn cs_handle_exception(vector: u64, frame: &mut ExceptionFrame) {
    let nesting = NESTING.fetch_add(1, Ordering::AcqRel);
    let kind = ExceptionKind::from_vector(vector);
    let esr = Syndrome { raw: frame.esr };
    let insn = if nesting == 0 { read_insn(kind, esr, frame.elr) } else { None };
    let report = TrapReport { kind, esr, far: frame.far, elr: frame.elr, spsr: frame.spsr, insn };

    if nesting > 0 {
        console::write_line_unlocked(format_args!("# FATAL: exception inside the exception handler: {}", report.summary()));
        bsp::exit(3);
    }
    if vector >= 8 {
        console::write_line_unlocked(format_args!("# FATAL: exception from a lower EL (vector {vector}): {}", report.summary()));
        bsp::exit(3);
    }

    match trap::innermost() {
        Some(buf) => {
            // Resume the catcher: the interrupted code is abandoned, so a console lock it held
            // is released first.
            console::release_after_trap();
            trap::record(report);
            frame.x[0] = buf as u64;
            frame.x[1] = 1;
            frame.elr = trap::resume_address();
            // Stay at EL1h with the interrupted code's interrupt mask.
            frame.spsr = (frame.spsr & 0x3c0) | 0b0101;
        }
        None => {
            console::write_line_unlocked(format_args!("# FATAL: unhandled exception outside any test: {}", report.summary()));
            bsp::exit(3);
        }
    }
    NESTING.fetch_sub(1, Ordering::AcqRel);
}
