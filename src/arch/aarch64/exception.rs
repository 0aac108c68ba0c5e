//! The EL1 exception handler: decode, report, and either resume the active trap catcher or end
//! the run. Never returns to a faulting instruction, so nothing hangs.
//!
//! Every core has its own nesting count and catchers. A report from a secondary core names it
//! (`core N: …`); an exception outside any catcher on a secondary parks that core (the SMP
//! harness's timeout then fails the case that used it) instead of ending the run.
//!
//! How the boot core ends the run is not this layer's to know: the layer that knows the board
//! registers it ([`set_fatal_exit`], done by `boot_info::init`); until then a fatal exception
//! parks the boot core too.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::smp::{self, MAX_CORES};
use crate::exception::{ec, ExceptionKind, Syndrome, TrapReport};
use crate::{arch::cpu, arch::trap, console};

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

static NESTING: [AtomicUsize; MAX_CORES] = [const { AtomicUsize::new(0) }; MAX_CORES];

/// `core N: ` on a secondary core, nothing on the boot core (whose reports keep their form).
struct CoreTag(usize);

impl core::fmt::Display for CoreTag {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0 != 0 {
            write!(f, "core {}: ", self.0)?;
        }
        Ok(())
    }
}

/// The exit status of a run ended by a fatal exception.
pub const FATAL_STATUS: u32 = 3;

/// How the boot core ends the run after a fatal exception (the board's exit), once registered.
static FATAL_EXIT: spin::Once<fn(u32) -> !> = spin::Once::new();

/// Registers how a fatal exception on the boot core ends the run: `exit(FATAL_STATUS)`. The
/// first registration stays.
pub fn set_fatal_exit(exit: fn(u32) -> !) {
    FATAL_EXIT.call_once(|| exit);
}

/// Ends the run from the boot core (through the registered exit; parks before there is one);
/// parks a secondary core (its user times out on it).
fn fatal(core: usize) -> ! {
    if let (0, Some(exit)) = (core, FATAL_EXIT.get()) {
        exit(FATAL_STATUS)
    }
    cpu::park()
}

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
    let core = smp::this_core();
    let tag = CoreTag(core);
    let nesting = NESTING[core].fetch_add(1, Ordering::AcqRel);
    let kind = ExceptionKind::from_vector(vector);
    let esr = Syndrome { raw: frame.esr };
    let insn = if nesting == 0 { read_insn(kind, esr, frame.elr) } else { None };
    let report = TrapReport { kind, esr, far: frame.far, elr: frame.elr, spsr: frame.spsr, insn };

    // Only the boot core prints outside traps; a secondary waits for the lock like anyone.
    let say = |args: core::fmt::Arguments| {
        if core == 0 {
            console::write_line_unlocked(args)
        } else {
            console::write_indented_line(args)
        }
    };
    if nesting > 0 {
        say(format_args!("# FATAL: {tag}exception inside the exception handler: {}", report.summary()));
        fatal(core);
    }
    if vector >= 8 {
        say(format_args!("# FATAL: {tag}exception from a lower EL (vector {vector}): {}", report.summary()));
        fatal(core);
    }

    match trap::innermost() {
        Some(buf) => {
            // Resume the catcher: the interrupted code is abandoned, so a console lock it held
            // is released first (on the boot core, the only one that prints while a case runs).
            if core == 0 {
                console::release_after_trap();
            }
            trap::record(report);
            frame.x[0] = buf as u64;
            frame.x[1] = 1;
            frame.elr = trap::resume_address();
            // Stay at EL1h with the interrupted code's interrupt mask.
            frame.spsr = (frame.spsr & 0x3c0) | 0b0101;
        }
        None => {
            say(format_args!("# FATAL: {tag}unhandled exception outside any test: {}", report.summary()));
            fatal(core);
        }
    }
    NESTING[core].fetch_sub(1, Ordering::AcqRel);
}
