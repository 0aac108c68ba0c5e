//! Trap recovery: run a closure so that an exception taken inside it returns here as an error
//! instead of hanging. The exception handler resumes the innermost active catcher
//! (`cs_try_resume` in exception.s restores the callee-saved state saved by `cs_try_call`).
//!
//! Frames skipped by a resume do not run destructors: code run under a catcher must not rely on
//! `Drop` (it may leak, never corrupt).
//!
//! Catchers are per core (indexed by [`smp::this_core`]): a trap on one core resumes that
//! core's innermost catcher and never another core's.

use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use super::smp::{self, MAX_CORES};
use crate::exception::TrapReport;

/// Callee-saved state for one catcher (layout shared with exception.s).
#[repr(C, align(16))]
pub struct JumpBuf([u64; 22]);

const MAX_DEPTH: usize = 8;

/// One core's catchers: its nesting depth, their buffers and the last trap's report.
struct Catchers {
    depth: AtomicUsize,
    bufs: [AtomicPtr<JumpBuf>; MAX_DEPTH],
    last: spin::Mutex<Option<TrapReport>>,
}

static CORES: [Catchers; MAX_CORES] = [const {
    Catchers {
        depth: AtomicUsize::new(0),
        bufs: [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_DEPTH],
        last: spin::Mutex::new(None),
    }
}; MAX_CORES];

fn mine() -> &'static Catchers {
    &CORES[smp::this_core()]
}

extern "C" {
    fn cs_try_call(f: extern "C" fn(*mut u8), arg: *mut u8, buf: *mut JumpBuf) -> u64;
    fn cs_try_resume(buf: *mut JumpBuf, code: u64) -> !;
}

/// Address of `cs_try_resume`, where the exception handler sends the ERET.
pub fn resume_address() -> u64 {
    cs_try_resume as *const () as u64
}

/// This core's innermost active catcher, if any (read by the exception handler).
pub fn innermost() -> Option<*mut JumpBuf> {
    let c = mine();
    let d = c.depth.load(Ordering::Acquire);
    if d == 0 {
        None
    } else {
        Some(c.bufs[d - 1].load(Ordering::Acquire))
    }
}

/// Forgets this core's catchers: for a core that starts afresh at its entry point, whose earlier
/// frames are gone (a PSCI CPU_OFF made under a catcher never returns to pop it).
pub fn reset_this_core() {
    mine().depth.store(0, Ordering::Release);
}

/// Stores the report of a trap for this core's catcher that will resume.
pub fn record(report: TrapReport) {
    *mine().last.lock() = Some(report);
}

extern "C" fn trampoline<R, F: FnOnce() -> R>(arg: *mut u8) {
    // SAFETY: `arg` is the `(Option<F>, Option<R>)` owned by `try_run`'s frame, alive for the call.
    let slot = unsafe { &mut *(arg as *mut (Option<F>, Option<R>)) };
    if let Some(f) = slot.0.take() {
        slot.1 = Some(f());
    }
}

/// Runs `f`; an exception taken while it runs makes this return `Err(report)`.
pub fn try_run<R, F: FnOnce() -> R>(f: F) -> Result<R, TrapReport> {
    let mut buf = JumpBuf([0; 22]);
    let mut slot: (Option<F>, Option<R>) = (Some(f), None);
    let c = mine();
    let depth = c.depth.load(Ordering::Acquire);
    assert!(depth < MAX_DEPTH, "trap catchers nested deeper than {MAX_DEPTH}");
    c.bufs[depth].store(&mut buf, Ordering::Release);
    c.depth.store(depth + 1, Ordering::Release);
    // SAFETY: cs_try_call saves callee-saved registers and SP in `buf`, calls the trampoline
    // with a pointer to `slot`, and returns once: normally with 0, or with the handler's code
    // after it restored exactly that saved state.
    let code = unsafe { cs_try_call(trampoline::<R, F>, &mut slot as *mut _ as *mut u8, &mut buf) };
    c.depth.store(depth, Ordering::Release);
    if code == 0 {
        Ok(slot.1.take().expect("closure result"))
    } else {
        Err(c.last.lock().take().expect("trap report"))
    }
}
