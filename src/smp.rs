//! The multicore runtime (its own layer, below the harness, which uses it for
//! `harness::Ctx::secondaries`; benchmarks use it directly): run a closure on other cores, a
//! sense-reversing barrier, per-core outcomes gathered on the boot core, and a per-core timeout,
//! so that a core that faults fails its case with a line naming the core and a core that hangs
//! fails it after the timeout, never hanging the run.
//!
//! How a job reaches core N ([`launch`], target only):
//! - a core that is off is started through the board (`bsp::start_core`: PSCI CPU_ON on QEMU
//!   virt and the Pi 5, the spin table on the Pi 4) into the worker, which turns its MMU on with
//!   the boot core's registers (the same tables, MAIR, TCR; SCTLR's M/C/I as the boot core has
//!   them), runs the job under its own trap catcher, reports, and powers itself off again
//!   (`bsp::core_off`: PSCI CPU_OFF) so that an idle core costs nothing;
//! - where a core cannot be powered off (the spin table releases a core once) the worker waits
//!   for its next job in a WFE loop and is sent it through its mailbox.
//!
//! A job is a `Fn(core) -> T` shared by every core it runs on; its value comes back to the boot
//! core in [`Running::join`]. The boot core does its own part between [`launch`] and `join`.
//! A core that misses the deadline is *lost*: it is never given work again and the job's memory
//! is leaked rather than freed under it, which is why jobs are `'static` (they capture
//! addresses and counts by value, barriers through `Arc`). Closures on secondaries must not
//! print (the boot core prints every result).

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Why a barrier wait ended without every party arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken;

/// A participant's local sense for a [`Barrier`]: each participant keeps one, starting `new()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sense(bool);

impl Sense {
    /// The sense every participant starts with.
    pub const fn new() -> Self {
        Self(false)
    }
}

/// A sense-reversing centralised barrier (Mellor-Crummey & Scott, 1991): the last of `parties`
/// to arrive resets the count and flips the shared sense that the others spin on, so the same
/// barrier is reused episode after episode without a second counter.
///
/// A wait gives up when its `expired` probe says so; the barrier is then *broken* and every other
/// waiter (now and later) returns [`Broken`] too, so one stuck core releases all the others.
pub struct Barrier {
    parties: u32,
    count: AtomicU32,
    sense: AtomicBool,
    broken: AtomicBool,
}

impl Barrier {
    /// A barrier for `parties` participants (at least 1).
    pub const fn new(parties: u32) -> Self {
        let parties = if parties == 0 { 1 } else { parties };
        Self { parties, count: AtomicU32::new(parties), sense: AtomicBool::new(false), broken: AtomicBool::new(false) }
    }

    /// Number of participants.
    pub const fn parties(&self) -> u32 {
        self.parties
    }

    /// Waits until every party has arrived at this episode. `expired` is probed now and then
    /// while waiting (e.g. a deadline on the generic timer); when it returns true the barrier
    /// breaks.
    pub fn wait(&self, local: &mut Sense, mut expired: impl FnMut() -> bool) -> Result<(), Broken> {
        local.0 = !local.0;
        if self.broken.load(Ordering::Acquire) {
            return Err(Broken);
        }
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.count.store(self.parties, Ordering::Relaxed);
            self.sense.store(local.0, Ordering::Release);
            return Ok(());
        }
        let mut spins = 0u32;
        while self.sense.load(Ordering::Acquire) != local.0 {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                if self.broken.load(Ordering::Acquire) {
                    return Err(Broken);
                }
                if expired() {
                    self.break_all();
                    return Err(Broken);
                }
            }
            relax();
        }
        Ok(())
    }

    /// Breaks the barrier: every waiter returns [`Broken`].
    pub fn break_all(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// True once a wait gave up.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }
}

/// One step of a spin-wait: YIELD on AArch64 (under QEMU's round-robin TCG, e.g. with `-icount`,
/// it hands the host thread to the next vCPU, so the core being waited for runs; elsewhere it
/// is a hint), the host's spin hint elsewhere.
#[inline(always)]
pub fn relax() {
    #[cfg(all(target_arch = "aarch64", target_os = "none"))]
    // SAFETY: YIELD is a hint: no memory, register or flag effect.
    unsafe {
        core::arch::asm!("yield", options(nomem, nostack, preserves_flags))
    };
    #[cfg(not(all(target_arch = "aarch64", target_os = "none")))]
    core::hint::spin_loop();
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use alloc::{boxed::Box, vec::Vec};
    use core::cell::UnsafeCell;
    use core::fmt;
    use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

    use super::relax;
    use crate::cpu::mmu::{self as hw, SCTLR_C, SCTLR_I, SCTLR_M};
    use crate::cpu::smp::{StartError, StartMethod, MAX_CORES};
    use crate::cpu::{self, trap};
    use crate::exception::TrapReport;
    use crate::{bsp, model_markers};
    use cachescope_arch::sysreg::SCTLR_EL1;
    use tock_registers::interfaces::Readable;

    /// Stack of each secondary core.
    const STACK_BYTES: usize = 64 << 10;

    /// Why a core did not return a value.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CoreError {
        /// It could not be started.
        Start(StartError),
        /// An exception was taken while it ran the job (caught on that core).
        Trap(TrapReport),
        /// It did not finish within the timeout (it is now lost).
        Timeout {
            /// The timeout waited, ms.
            ms: u64,
            /// The timeout asked for, when `-icount` cut it to [`ICOUNT_WAIT_MAX_MS`].
            cut_from: Option<u64>,
        },
        /// It missed an earlier deadline and is never given work again.
        Lost,
        /// The boot core, or a core named twice in one launch.
        NotASecondary,
    }

    impl fmt::Display for CoreError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Self::Start(e) => write!(f, "not started: {e}"),
                Self::Trap(r) => write!(f, "unexpected exception: {}", r.summary()),
                Self::Timeout { ms, cut_from: None } => write!(f, "did not finish within {ms} ms (stuck: it gets no more work)"),
                Self::Timeout { ms, cut_from: Some(asked) } => write!(
                    f,
                    "did not finish within {ms} ms ({asked} ms asked, cut to the -icount bound of {ms} ms virtual, about {ICOUNT_WAIT_WALL_S} s of wall time; stuck: it gets no more work)"
                ),
                Self::Lost => f.write_str("lost at an earlier timeout"),
                Self::NotASecondary => f.write_str("not a secondary core of this launch"),
            }
        }
    }

    /// The longest wait under `-icount`, in virtual ms: every [`Deadline`] is cut to it.
    ///
    /// Under `-icount shift=0` (what scripts/qemu-run adds whenever the cache model is on) the
    /// generic timer counts instructions, 1 ns each, so a wait costs its virtual length in
    /// instructions whatever the host does: a core spinning out a 5 s timeout executes 5 × 10⁹
    /// instructions, about 220 s of wall time under the model. The spin loop of a wait runs at
    /// about 23 × 10⁶ instructions per wall second under the model on the reference host (2
    /// loaded cores), so this cap (10⁷ instructions) bounds any wait at about 1 s of wall time
    /// ([`ICOUNT_WAIT_WALL_S`]); without the model QEMU runs faster and the bound holds with
    /// room. Legitimate jobs are far shorter: the longest launch-to-join of the smp suite, the
    /// mistakes suite and stream-double under the model is under 1 ms virtual (a tenth of the
    /// cap), and under `-icount` their virtual length does not depend on host load.
    pub const ICOUNT_WAIT_MAX_MS: u64 = 10;

    /// The wall-time bound [`ICOUNT_WAIT_MAX_MS`] gives under the model, seconds (docs/running.md).
    pub const ICOUNT_WAIT_WALL_S: u64 = 1;

    /// True when the run's virtual time is an instruction count (`-icount`): waits are cut to
    /// [`ICOUNT_WAIT_MAX_MS`].
    static ICOUNT: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

    /// Tells the harness whether virtual time is an instruction count: the runner calls it at
    /// boot with "the cache model is loaded" (`model=`), which the runner only says together
    /// with `-icount`.
    pub fn set_icount(on: bool) {
        ICOUNT.store(on, Ordering::Relaxed);
    }

    /// The length a wait of `ms` gets: `ms`, or at most [`ICOUNT_WAIT_MAX_MS`] under `-icount`.
    pub fn wait_ms(ms: u64) -> u64 {
        if ICOUNT.load(Ordering::Relaxed) {
            ms.min(ICOUNT_WAIT_MAX_MS)
        } else {
            ms
        }
    }

    /// A deadline on the generic timer.
    #[derive(Clone, Copy, Debug)]
    pub struct Deadline {
        end: u64,
        ms: u64,
    }

    impl Deadline {
        /// `ms` milliseconds from now (cut to [`ICOUNT_WAIT_MAX_MS`] under `-icount`, see
        /// [`wait_ms`]).
        pub fn after_ms(ms: u64) -> Self {
            let ms = wait_ms(ms);
            let ticks = (ms as u128 * cpu::timer_frequency().max(1) as u128 / 1000) as u64;
            Self { end: cpu::counter().saturating_add(ticks), ms }
        }

        /// The deadline's length as given to the timer, ms.
        pub fn ms(&self) -> u64 {
            self.ms
        }

        /// True once the deadline has passed.
        pub fn expired(&self) -> bool {
            cpu::counter() >= self.end
        }
    }

    const OFF: u32 = 0;
    const STARTING: u32 = 1;
    const IDLE: u32 = 2;
    const LOST: u32 = 3;

    /// One secondary core's control block, on its own cache lines.
    #[repr(C, align(128))]
    struct Ctl {
        state: AtomicU32,
        /// Sequence number of the last job posted / finished.
        posted: AtomicU64,
        finished: AtomicU64,
        /// The posted job: its entry and data.
        call: AtomicUsize,
        data: AtomicUsize,
        /// The job's outcome: 0 = value stored, else the trap in `trap`.
        trapped: AtomicU32,
        trap: spin::Mutex<Option<TrapReport>>,
        stack_top: AtomicUsize,
    }

    static CTL: [Ctl; MAX_CORES] = [const {
        Ctl {
            state: AtomicU32::new(OFF),
            posted: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            call: AtomicUsize::new(0),
            data: AtomicUsize::new(0),
            trapped: AtomicU32::new(0),
            trap: spin::Mutex::new(None),
            stack_top: AtomicUsize::new(0),
        }
    }; MAX_CORES];

    /// The boot core's translation regime, read by a starting core with its MMU off: MAIR,
    /// TCR, TTBR0, SCTLR. Cleaned to PoC after each write.
    #[repr(C, align(128))]
    struct Regime([AtomicU64; 4]);
    static REGIME: Regime = Regime([const { AtomicU64::new(0) }; 4]);

    /// Cores this machine has.
    pub fn cores() -> usize {
        bsp::cores().min(MAX_CORES)
    }

    /// Why no secondary core can be given a job: the one reason every case that needs a
    /// secondary SKIPs with (or, for [`NoSecondary::AllLost`], fails with).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum NoSecondary {
        /// The machine has one core.
        SingleCore,
        /// The board knows no way to start a core, or its PSCI conduit has no firmware behind
        /// it (QEMU virt with `secure=on`: EL3 firmware would provide PSCI, and there is none).
        NoFirmware,
        /// Every secondary missed an earlier deadline and gets no more work (a failure).
        AllLost,
    }

    impl NoSecondary {
        /// True when the case should SKIP (the machine cannot run it); false when the harness
        /// lost the cores (the case fails).
        pub fn is_skip(self) -> bool {
            !matches!(self, Self::AllLost)
        }
    }

    impl fmt::Display for NoSecondary {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                Self::SingleCore => "a single core: needs 2 or more (QEMU virt: QEMU_SMP=2 or more; raspi4b has 4)",
                Self::NoFirmware => "no PSCI firmware behind the conduit: secondary cores cannot be started here",
                Self::AllLost => "every secondary core was lost at an earlier timeout",
            })
        }
    }

    /// The outcome of [`probe`], found once.
    static PROBED: spin::Once<Result<StartMethod, NoSecondary>> = spin::Once::new();

    /// Whether this machine can start secondary cores at all, and how: the board's
    /// [`StartMethod`], and for PSCI a PSCI_VERSION call through the conduit under the trap
    /// catcher (no firmware: the instruction traps). Nothing is started and nothing waits, so a
    /// core that cannot start costs no timeout. A spin table cannot be asked; a stub that never
    /// releases its core is caught by the launch's deadline. Found once per run.
    pub fn probe() -> Result<StartMethod, NoSecondary> {
        if cores() < 2 {
            return Err(NoSecondary::SingleCore);
        }
        *PROBED.call_once(|| match bsp::start_method() {
            StartMethod::Psci(c) if crate::cpu::psci::version(c).is_some() => Ok(StartMethod::Psci(c)),
            StartMethod::Psci(_) | StartMethod::None => Err(NoSecondary::NoFirmware),
            StartMethod::SpinTable => Ok(StartMethod::SpinTable),
        })
    }

    /// The secondary cores that can be given a job now (startable, not lost), or why there are
    /// none: every suite and case that needs a secondary asks this first.
    pub fn secondaries() -> Result<Vec<usize>, NoSecondary> {
        probe()?;
        let cores: Vec<usize> = (1..cores()).filter(|&c| !is_lost(c)).collect();
        if cores.is_empty() {
            return Err(NoSecondary::AllLost);
        }
        Ok(cores)
    }

    /// True when `core` missed a deadline earlier.
    pub fn is_lost(core: usize) -> bool {
        core < MAX_CORES && CTL[core].state.load(Ordering::Acquire) == LOST
    }

    fn dline() -> usize {
        cachescope_arch::cache::Ctr { raw: cachescope_arch::sysreg::CTR_EL0.get() }.dmin_line().max(4) as usize
    }

    /// DC CIVAC over `[start, start+len)`, then DSB SY.
    fn clean_invalidate(start: usize, len: usize) {
        let line = dline();
        let mut a = start & !(line - 1);
        while a < start + len {
            cachescope_arch::hw::dc_civac(a);
            a += line;
        }
        cachescope_arch::hw::dsb_sy();
    }

    /// Publishes the boot core's MMU registers for starting cores.
    fn publish_regime() {
        let v = [hw::mair(), hw::tcr(), hw::ttbr0(), SCTLR_EL1.get()];
        for (slot, v) in REGIME.0.iter().zip(v) {
            slot.store(v, Ordering::Relaxed);
        }
        clean_invalidate(REGIME.0.as_ptr() as usize, core::mem::size_of::<Regime>());
    }

    /// On a secondary right after it started (MMU off): the boot core's regime, same tables.
    fn adopt_regime() {
        let [mair, tcr, ttbr0, sctlr] = core::array::from_fn(|i| REGIME.0[i].load(Ordering::Acquire));
        let cur = SCTLR_EL1.get();
        if sctlr & SCTLR_M == 0 || cur & SCTLR_M != 0 {
            return;
        }
        if hw::set_translation(mair, tcr, ttbr0).is_err() {
            return;
        }
        // TLBI VMALLE1IS and IC IALLU issued directly and counted once caching is on: the shared
        // maintenance counters must not be written with this core's caches off (that write
        // would go to memory behind a copy another core holds).
        // SAFETY: TLB and I-cache invalidation only drop cached translations and instructions;
        // the barriers only order.
        unsafe {
            core::arch::asm!("dsb ishst", "tlbi vmalle1is", "dsb ish", "ic iallu", "dsb ish", "isb", options(nostack, preserves_flags))
        };
        let new = (cur & !(SCTLR_M | SCTLR_C | SCTLR_I)) | (sctlr & (SCTLR_M | SCTLR_C | SCTLR_I));
        // SAFETY: the tables are the boot core's live tables (built once, never freed); this
        // core's TLBs and I-cache were just invalidated and its data cache holds nothing after
        // power-on (PSCI CPU_ON / reset): nothing stale is hit when caching starts.
        unsafe { hw::write_sctlr(new) };
        model_markers::sctlr(new);
        cachescope_arch::hw::count_executed(cachescope_arch::cache::ops::MaintOp::TlbiVmalle1is, 1);
        cachescope_arch::hw::count_executed(cachescope_arch::cache::ops::MaintOp::IcIallu, 1);
    }

    /// A secondary core's life: adopt the regime, run posted jobs, power off (or wait).
    extern "C" fn worker(core: u64) -> ! {
        let core = core as usize;
        // The regime first: with the MMU (and caches) on, this core's writes to shared state
        // (its catcher depth, its control block) are coherent with the other cores' caches; a
        // write with caches off would go to memory behind a copy core 0 may hold.
        adopt_regime();
        trap::reset_this_core();
        let ctl = &CTL[core];
        loop {
            let posted = ctl.posted.load(Ordering::Acquire);
            if posted != ctl.finished.load(Ordering::Relaxed) {
                let (call, data) = (ctl.call.load(Ordering::Acquire), ctl.data.load(Ordering::Acquire));
                // SAFETY: `call` is the `run_job::<F, T>` matching `data`'s job, posted together
                // by `launch` (Release) and read after `posted` (Acquire); the job outlives the run.
                let call: unsafe fn(usize, usize) = unsafe { core::mem::transmute::<usize, unsafe fn(usize, usize)>(call) };
                // SAFETY: as above: `data` points at the job `call` expects.
                let result = trap::try_run(|| unsafe { call(data, core) });
                match result {
                    Ok(()) => ctl.trapped.store(0, Ordering::Relaxed),
                    Err(report) => {
                        *ctl.trap.lock() = Some(report);
                        ctl.trapped.store(1, Ordering::Relaxed);
                    }
                }
                ctl.finished.store(posted, Ordering::Release);
                cachescope_arch::hw::dsb_sy();
                aarch64_cpu::asm::sev();
                continue;
            }
            if ctl.state.compare_exchange(STARTING, OFF, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                bsp::core_off();
                // Still here: this core cannot be powered off; it waits for work instead.
                let _ = ctl.state.compare_exchange(OFF, IDLE, Ordering::AcqRel, Ordering::Acquire);
            }
            if ctl.state.load(Ordering::Acquire) == LOST {
                cpu::park();
            }
            while ctl.posted.load(Ordering::Acquire) == ctl.finished.load(Ordering::Relaxed) {
                aarch64_cpu::asm::wfe();
            }
        }
    }

    /// Bytes at the top of a stack a starting core writes with its caches off (its entry frames
    /// before `adopt_regime`), cleaned and invalidated again before every start: the core used
    /// them cacheably in its last job, and a copy left in a shared cache would be stale.
    const STACK_ENTRY_BYTES: usize = 4096;

    /// The stack of `core`, allocated once and cleaned+invalidated to PoC (its top again before
    /// every start): the core writes it with its MMU off before turning it on, so no line of it
    /// may be in another cache.
    fn stack_top(core: usize) -> usize {
        let ctl = &CTL[core];
        let top = ctl.stack_top.load(Ordering::Relaxed);
        if top != 0 {
            clean_invalidate(top - STACK_ENTRY_BYTES, STACK_ENTRY_BYTES);
            return top;
        }
        let stack: &'static mut [u128] = alloc::vec![0u128; STACK_BYTES / 16].leak();
        let range = stack.as_ptr_range();
        clean_invalidate(range.start as usize, STACK_BYTES);
        ctl.stack_top.store(range.end as usize, Ordering::Relaxed);
        range.end as usize
    }

    /// Gives `core` the posted job: a mailbox wake-up for a waiting core, a start for one that
    /// is off (retried while firmware still reports it on: it is powering off).
    fn wake(core: usize, deadline: &Deadline) -> Result<(), CoreError> {
        let ctl = &CTL[core];
        loop {
            match ctl.state.load(Ordering::Acquire) {
                LOST => return Err(CoreError::Lost),
                IDLE => {
                    cachescope_arch::hw::dsb_sy();
                    aarch64_cpu::asm::sev();
                    return Ok(());
                }
                _ => {}
            }
            ctl.state.store(STARTING, Ordering::Release);
            match bsp::start_core(core, worker, stack_top(core), core as u64) {
                Ok(()) => return Ok(()),
                Err(StartError::Psci(crate::firmware::psci::Error::AlreadyOn | crate::firmware::psci::Error::OnPending))
                    if !deadline.expired() =>
                {
                    // Powering off after its last job (or it found it cannot: then IDLE).
                    let _ = ctl.state.compare_exchange(STARTING, OFF, Ordering::AcqRel, Ordering::Acquire);
                    relax();
                }
                Err(e) => {
                    ctl.state.store(OFF, Ordering::Release);
                    return Err(CoreError::Start(e));
                }
            }
        }
    }

    /// One core's result slot, on its own cache lines.
    #[repr(align(128))]
    struct Slot<T>(UnsafeCell<Option<T>>);

    struct Job<F, T> {
        f: F,
        out: [Slot<T>; MAX_CORES],
    }

    /// Runs the job at `data` on `core` and stores its value in the core's slot.
    ///
    /// # Safety
    /// `data` must point at a live `Job<F, T>`; only `core` writes `out[core]`, and the boot core
    /// reads it only after the core reported the job finished.
    unsafe fn run_job<F: Fn(usize) -> T, T>(data: usize, core: usize) {
        // SAFETY: the caller's contract.
        let job = unsafe { &*(data as *const Job<F, T>) };
        let v = (job.f)(core);
        // SAFETY: this core's own slot (the caller's contract).
        unsafe { *job.out[core].0.get() = Some(v) };
    }

    /// A job running on secondary cores (from [`launch`]); [`join`](Self::join) gathers it.
    pub struct Running<F, T> {
        job: Option<Box<Job<F, T>>>,
        /// (core, its sequence number, or why it was not given the job).
        cores: Vec<(usize, Result<u64, CoreError>)>,
    }

    /// Starts `f(core)` on every core of `cores` (secondaries, each at most once) and returns at
    /// once: the boot core does its own part, then [`Running::join`]s. Every core gets the boot
    /// core's MMU regime as it is now.
    pub fn launch<F, T>(cores: &[usize], f: F) -> Running<F, T>
    where
        F: Fn(usize) -> T + Sync + Send + 'static,
        T: Send + 'static,
    {
        publish_regime();
        let job = Box::new(Job { f, out: core::array::from_fn(|_| Slot(UnsafeCell::new(None))) });
        let data = &*job as *const Job<F, T> as usize;
        let deadline = Deadline::after_ms(1000);
        let mut list: Vec<(usize, Result<u64, CoreError>)> = Vec::new();
        for &core in cores {
            if core == 0 || core >= self::cores() || list.iter().any(|(c, _)| *c == core) {
                list.push((core, Err(CoreError::NotASecondary)));
                continue;
            }
            let ctl = &CTL[core];
            if ctl.state.load(Ordering::Acquire) == LOST {
                list.push((core, Err(CoreError::Lost)));
                continue;
            }
            let seq = ctl.finished.load(Ordering::Acquire) + 1;
            ctl.call.store(run_job::<F, T> as unsafe fn(usize, usize) as usize, Ordering::Release);
            ctl.data.store(data, Ordering::Release);
            ctl.posted.store(seq, Ordering::Release);
            list.push((core, wake(core, &deadline).map(|()| seq)));
        }
        Running { job: Some(job), cores: list }
    }

    impl<F, T> Running<F, T> {
        /// Waits for every launched core (all within `timeout_ms` of this call) and returns each
        /// core's value or why there is none, in launch order. A core past the deadline is lost.
        pub fn join(mut self, timeout_ms: u64) -> Vec<(usize, Result<T, CoreError>)> {
            let deadline = Deadline::after_ms(timeout_ms);
            let mut out = Vec::new();
            let mut leak = false;
            for (core, seq) in core::mem::take(&mut self.cores) {
                let seq = match seq {
                    Ok(s) => s,
                    Err(e) => {
                        out.push((core, Err(e)));
                        continue;
                    }
                };
                let ctl = &CTL[core];
                let mut finished = false;
                while !deadline.expired() {
                    if ctl.finished.load(Ordering::Acquire) == seq {
                        finished = true;
                        break;
                    }
                    relax();
                }
                if !finished {
                    ctl.state.store(LOST, Ordering::Release);
                    leak = true;
                    let cut_from = (deadline.ms() < timeout_ms).then_some(timeout_ms);
                    out.push((core, Err(CoreError::Timeout { ms: deadline.ms(), cut_from })));
                    continue;
                }
                if ctl.trapped.load(Ordering::Relaxed) != 0 {
                    let r = ctl.trap.lock().take();
                    out.push((core, Err(r.map_or(CoreError::Lost, CoreError::Trap))));
                    continue;
                }
                let job = self.job.as_ref().expect("job alive until join");
                // SAFETY: the core finished (Acquire above): it no longer touches its slot.
                let v = unsafe { (*job.out[core].0.get()).take() };
                out.push((core, v.ok_or(CoreError::Lost)));
            }
            if leak {
                // A lost core may still run the job: it must never be freed under it.
                Box::leak(self.job.take().expect("job"));
            }
            out
        }
    }

    impl<F, T> Drop for Running<F, T> {
        fn drop(&mut self) {
            if !self.cores.is_empty() {
                // Never joined: the cores may still use the job.
                if let Some(job) = self.job.take() {
                    Box::leak(job);
                }
            }
        }
    }

    // SAFETY: the job is shared by reference with other cores only while they run it; `F: Sync`
    // makes the shared calls sound and each core writes only its own `T` slot (`T: Send`).
    unsafe impl<F: Sync, T: Send> Sync for Job<F, T> {}

    /// Runs `f` on `core` and waits for it (at most `timeout_ms`).
    pub fn run_on<F, T>(core: usize, timeout_ms: u64, f: F) -> Result<T, CoreError>
    where
        F: Fn(usize) -> T + Sync + Send + 'static,
        T: Send + 'static,
    {
        launch(&[core], f).join(timeout_ms).pop().map_or(Err(CoreError::NotASecondary), |(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::vec::Vec;

    #[test]
    fn barrier_holds_every_episode() {
        // Four threads, 200 episodes: nobody passes episode k before all have done k - 1.
        let b = Arc::new(Barrier::new(4));
        let stage = Arc::new([const { core::sync::atomic::AtomicU32::new(0) }; 4]);
        let handles: Vec<_> = (0..4)
            .map(|me| {
                let (b, stage) = (b.clone(), stage.clone());
                std::thread::spawn(move || {
                    let mut s = Sense::new();
                    for k in 0..200u32 {
                        stage[me].store(k, Ordering::SeqCst);
                        b.wait(&mut s, || false).unwrap();
                        for other in stage.iter() {
                            assert!(other.load(Ordering::SeqCst) >= k, "a thread passed episode {k} early");
                        }
                        b.wait(&mut s, || false).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(!b.is_broken());
    }

    #[test]
    fn a_missing_party_breaks_it_for_everyone() {
        let b = Arc::new(Barrier::new(3));
        let b2 = b.clone();
        // One waiter gives up at once; a second one (no deadline) is released by the break.
        let waiter = std::thread::spawn(move || b2.wait(&mut Sense::new(), || false));
        assert_eq!(b.wait(&mut Sense::new(), || true), Err(Broken));
        assert_eq!(waiter.join().unwrap(), Err(Broken));
        assert_eq!(b.wait(&mut Sense::new(), || false), Err(Broken), "stays broken");
    }

    #[test]
    fn one_party_never_waits() {
        let b = Barrier::new(1);
        let mut s = Sense::new();
        for _ in 0..3 {
            assert_eq!(b.wait(&mut s, || true), Ok(()));
        }
        assert_eq!(Barrier::new(0).parties(), 1);
    }
}
