//! The engine: everything the plugin decides, over the model and the [`Shortcut`]s, with no QEMU
//! type. The glue (`glue.rs`) hands it what QEMU knows through two small seams, [`Host`] (the
//! scoreboard, the ID registers, guest memory) and [`MemAccess`] (one memory callback's access),
//! and registers values read through a closure; the differential tests drive it directly.

use cachescope_arch::warning::WarningCause;
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use cachescope_arch::cache::id::{Clidr, Ctr};

use crate::config::{GuestGeometry, Settings};
use crate::cpu_models::{identify, key_text, Key};
use crate::decode::{decode_set_way, guest_to_model_slots, ControlReg, Insn, PrfAddr};
use crate::guest::{SysReg, Translation};
use crate::hierarchy::{Level, LineOp, Model, Totals};
use crate::walk::PhysMem;

use super::emit::Core;
use super::lock::{Guard, SpinLock};
use super::shortcut::{MemoStamps, Shortcut};

/// What the engine asks of the emulator besides the callback's arguments; guest physical memory
/// ([`PhysMem`]) is what the walk reads the guest's tables from.
pub trait Host: PhysMem {
    /// The board's execution counter of `cpu` (the inline-counted TB executions; asked only
    /// when the engine counts repeats inline).
    fn execs(&self, cpu: usize) -> u64;
    /// Makes sure the next TB `cpu` executes calls its fetch callback (no inline repeat).
    fn forget_tb(&self, cpu: usize);
    /// CTR_EL0 and CLIDR_EL1, if the guest CPU exposes them.
    fn id_regs(&self) -> (Option<Ctr>, Option<Clidr>);
    /// The NUL-terminated phase name at `va` in guest memory.
    fn read_name(&self, va: u64) -> Option<String>;
    /// The running vCPU's SCTLR/TTBR/TCR/MAIR of the regime of Exception level `el` (asked in a
    /// callback with register access: at a TLBI); empty when not readable.
    fn regime_registers(&self, el: u8) -> Vec<(SysReg, u64)>;
    /// The running vCPU's PC (asked at a TB's first fetch callback, which QEMU calls with
    /// register access, when the TB's translated VA does not reach its PA); `None` when not
    /// readable.
    fn pc(&self) -> Option<u64>;
}

/// The access a memory callback reports.
pub trait MemAccess {
    /// Its size in bytes.
    fn size(&self) -> u32;
    /// The PA of `vaddr` (in the access's page) and whether it is I/O, if the emulator knows.
    fn hwaddr(&self, vaddr: u64) -> Option<(u64, bool)>;
    /// The value the emulator loaded or stored.
    fn value(&self) -> Option<u64>;
}

/// A register number for [`Engine::special`]'s reader: 0..=30 are X0..X30, this one is SP
/// (31 reads as XZR, 0).
pub const SP: u8 = 32;

/// Whether the shortcut may run: asked (`fast`), not tracing (a trace lists every access), and
/// one vCPU, or up to 64 run round-robin by one host thread (`-icount`): there another core's
/// access happens between two of this core's callbacks, never during one, and the model tells
/// which cores' remembered lines it changed ([`Model::take_disturbed`]). Under MTTCG a core's
/// shortcut would race with another's model call.
pub fn shortcut_allowed(settings: &Settings, vcpus: usize, round_robin: bool) -> bool {
    settings.fast && settings.trace.is_none() && (vcpus == 1 || round_robin && vcpus <= 64)
}

/// Whether TB repeats are counted inline (the glue's scoreboard): the shortcut with one vCPU.
/// With more, QEMU's inline operations would name the translating vCPU (see the module docs);
/// there the engine counts them itself ([`TbBoard`]).
pub fn inline_repeats_allowed(settings: &Settings, vcpus: usize) -> bool {
    shortcut_allowed(settings, vcpus, false)
}

/// The key of a TB execution that is never taken for a repeat (one fetched in several
/// segments); the keys of the others count up from 1, and 0 is no TB.
pub const NO_TB: u64 = u64::MAX;

/// One core's TB-repeat board with several vCPUs run round-robin: what the glue's inline
/// scoreboard does for one vCPU (`last` = the key of the core's last TB, `execs` = its TB
/// executions), kept by the engine per *identified* core, since QEMU's inline operations and
/// callbacks name the translating vCPU there. A TB the core runs right after itself is a
/// repeat ([`Engine::tb_exec`]): one compare and one add in its fetch callback, no model call.
#[derive(Default)]
pub struct TbBoard {
    last: AtomicU64,
    execs: AtomicU64,
}

/// Which core runs the current TB (more than one vCPU), as its first callback identified it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Running {
    /// The core (model vCPU); `u32::MAX` = not yet known (the callback's index stands for it).
    core: u32,
    /// A TPIDR_EL1 tag or VMPIDR_EL2 named it (else it is the callback's index).
    tagged: bool,
    /// The emulator's handle of the vCPU at the last identification by register
    /// ([`Engine::identify_tb`]; 0: none), and the TBs it ran since.
    handle: usize,
    since: u32,
}

impl Running {
    const UNKNOWN: Running = Running { core: u32::MAX, tagged: false, handle: 0, since: 0 };

    /// `core`, `tagged` and `since` in one word (the handle is the other).
    fn pack(self) -> u64 {
        u64::from(self.core) | u64::from(self.tagged) << 32 | u64::from(self.since) << 33
    }

    fn unpack(word: u64, handle: usize) -> Self {
        Running { core: word as u32, tagged: word >> 32 & 1 == 1, handle, since: (word >> 33) as u32 }
    }
}

thread_local! {
    /// [`Running`] of this host thread under MTTCG (one thread per vCPU). Under round-robin TCG
    /// one thread runs every vCPU and the engine keeps it itself (no thread-local access, which
    /// in a shared object is a call, on every callback).
    static RUNNING: Cell<Running> = const { Cell::new(Running::UNKNOWN) };
}

/// [`Engine::identify_tb`] reads the registers anyway at every this many TBs of an unchanged
/// vCPU, and checks that they name the same core.
pub const IDENTIFY_CHECK_EVERY: u32 = 4096;

/// The plugin's decisions (see the module docs).
pub struct Engine<H> {
    pub(super) settings: Settings,
    /// The emulator's side.
    pub host: H,
    pub(super) fetch_warned: AtomicBool,
    pub(super) vcpus: usize,
    /// The shortcut runs ([`shortcut_allowed`]).
    pub fast_on: bool,
    /// TB repeats are counted without the model: inline by the glue's scoreboard with one vCPU
    /// ([`inline_repeats_allowed`]), by the engine's [`TbBoard`]s with several run round-robin
    /// (`boards`).
    pub repeats_inline: bool,
    /// The per-core repeat boards with several vCPUs run round-robin (the shortcut on), else
    /// empty (the glue's scoreboard counts, with one vCPU).
    boards: Box<[TbBoard]>,
    pub(super) fast: Box<[Shortcut]>,
    /// QEMU runs every vCPU on one host thread (round-robin TCG: `-icount`, or
    /// `-accel tcg,thread=single`), where a callback's vCPU index is the translating vCPU's
    /// (see the module docs): with more than one vCPU, only a TPIDR_EL1 tag names the core.
    pub round_robin: bool,
    /// A TB whose core was known (tagged TPIDR_EL1 or VMPIDR_EL2) ran (more than one vCPU).
    tagged_seen: AtomicBool,
    /// TBs, under MTTCG (where the callback's index is the running vCPU's), whose register
    /// named another core than the index (see [`Engine::identify_by`]).
    disagreed: AtomicU64,
    /// [`Engine::identify_tb`]'s checks that found another core than the unchanged vCPU handle
    /// implied; any turns the handle off (`running_trusted`) for the rest of the run.
    running_disagreed: AtomicU64,
    /// The emulator's running-vCPU handle may stand for a register read ([`Engine::identify_tb`]).
    running_trusted: AtomicBool,
    /// [`Running`] under round-robin TCG ([`Running::pack`], and the handle).
    rr_running: AtomicU64,
    rr_handle: AtomicU64,
    /// The cores a callback has been made for, bit `k` for core `k` (cores beyond 64 always
    /// count as started): a core that has not run has no shortcut state, so the per-call loops over the
    /// cores skip it (secondaries that stay powered off until the smp suite cost nothing).
    started: AtomicU64,
    /// The Exception level of each vCPU's running TB (set at its fetch, [`Engine::at_el`]).
    els: Box<[AtomicU8]>,
    /// Per vCPU, running VA − translated VA of its running TB (0 but for a TB QEMU shares
    /// between VA aliases: [`super::access::TbAt`]), set at the TB's first fetch callback.
    pub(super) alias: Box<[AtomicU64]>,
    /// Fetch memos ([`FetchMemo`](super::shortcut::FetchMemo)) are made: the shortcut runs and
    /// no TLB model counts lookups. A vCPU's memos hold only within its fetch epoch
    /// ([`Shortcut::drop_memos`]), ended by anything that may change a fetch's translation,
    /// attribute or L1I state beyond the L1I set table and the memo stamps (a settle, another
    /// core's disturbance, many L1I sets changed at once, a model rebuild).
    pub(super) memos_on: bool,
    /// Every vCPU's fetch-memo stamps ([`MemoStamps`]).
    pub(super) stamps_memo: Arc<MemoStamps>,
    core: SpinLock<Core>,
}

/// Hands the guest's CTR_EL0 and CLIDR_EL1 (when read) to the model's sanitizer: the
/// instruction-coherence bits, with the clean to PoU also unnecessary when CLIDR says so (the
/// CTR_EL0.IDC description: "unless CLIDR_EL1.LoC == 0b000 or (CLIDR_EL1.LoUIS == 0b000 &&
/// CLIDR_EL1.LoUU == 0b000)"), and the Level of Coherence (model rule 16a).
fn apply_id_regs(m: &mut Model, ctr: Option<Ctr>, clidr: Option<Clidr>) {
    let (idc, dic) = ctr.map_or((false, false), |c| (c.idc(), c.dic()));
    m.set_ctr(idc || clidr.is_some_and(|c| !c.clean_to_pou_required()), dic);
    if let Some(c) = clidr {
        m.set_level_of_coherence(u32::from(c.loc));
    }
}

/// Exits with an error message (a bad argument or an unusable output file).
pub fn fail(msg: &str) -> ! {
    eprintln!("{}: error: {msg}", super::NAME);
    std::process::exit(2)
}

impl<H: Host> Engine<H> {
    /// The engine for `vcpus` vCPUs, writing records to `out`; the model is built now when the
    /// settings fix the geometry (else at the first access after the guest's geometry markers).
    pub fn new(settings: Settings, vcpus: usize, out: Box<dyn Write + Send>, host: H) -> Self {
        if !settings.wants_guest_geometry() {
            // Validate fixed geometry now, so a bad combination fails at start.
            settings.resolve(&GuestGeometry::default()).unwrap_or_else(|e| fail(&e));
        }
        let fast_on = shortcut_allowed(&settings, vcpus, false);
        let repeats_inline = inline_repeats_allowed(&settings, vcpus);
        let mut core = Core::new(&settings, out);
        core.tlb = settings.tlb_geometry().map(|g| crate::tlb::Tlbs::new(g, vcpus));
        let stamps_memo = Arc::new(MemoStamps::default());
        let memos_on = fast_on && settings.tlb_geometry().is_none();
        let engine = Self {
            settings,
            host,
            fetch_warned: AtomicBool::new(false),
            vcpus,
            fast_on,
            repeats_inline,
            boards: Box::new([]),
            fast: (0..vcpus).map(|_| Shortcut::new(stamps_memo.clone())).collect(),
            round_robin: false,
            tagged_seen: AtomicBool::new(false),
            disagreed: AtomicU64::new(0),
            running_disagreed: AtomicU64::new(0),
            running_trusted: AtomicBool::new(true),
            rr_running: AtomicU64::new(Running::UNKNOWN.pack()),
            rr_handle: AtomicU64::new(0),
            // One vCPU: core 0 from the start (its callbacks do not ask `cpu` to mark it).
            started: AtomicU64::new(if vcpus == 1 { 1 } else { 0 }),
            els: (0..vcpus).map(|_| AtomicU8::new(1)).collect(),
            alias: (0..vcpus).map(|_| AtomicU64::new(0)).collect(),
            memos_on,
            stamps_memo,
            core: SpinLock::new(core),
        };
        if let Ok(v) = std::env::var("CS_MODEL_WALK_LOG") {
            let n = v.parse().unwrap_or_else(|_| fail(&format!("CS_MODEL_WALK_LOG={v}: not a number of walks to print")));
            engine.lock().guest.log_walks = n;
        }
        if !engine.settings.wants_guest_geometry() {
            let mut c = engine.lock();
            engine.model(&mut c);
        }
        engine
    }

    /// The same engine, told whether QEMU runs its vCPUs round-robin ([`Engine::round_robin`]).
    pub fn with_round_robin(mut self, on: bool) -> Self {
        self.round_robin = on;
        self.fast_on = shortcut_allowed(&self.settings, self.vcpus, on);
        self.memos_on = self.fast_on && self.settings.tlb_geometry().is_none();
        if self.vcpus > 1 && self.fast_on {
            self.repeats_inline = true;
            self.boards = (0..self.vcpus).map(|_| TbBoard::default()).collect();
        }
        self
    }

    /// Whether the engine counts TB repeats itself ([`TbBoard`]: several vCPUs run
    /// round-robin with the shortcut), so that every TB's first fetch callback goes through
    /// [`Engine::tb_exec`].
    pub fn counts_repeats(&self) -> bool {
        !self.boards.is_empty()
    }

    /// One execution of a TB by the core its callback identified ([`Engine::identify_by`],
    /// called first), with the engine's repeat boards: `key` is the TB's ([`NO_TB`] for one
    /// fetched in several segments), `fetch` its first fetch through the model, given whether
    /// its repeats may be counted. A TB the core runs right after itself is only counted (its
    /// lines are the L1I's most recent, as for the inline scoreboard with one vCPU), when its
    /// core was identified by register: an untagged TB's core is the translating vCPU's index,
    /// which another core's run may share.
    pub fn tb_exec(&self, vcpu: u32, key: u64, fetch: impl FnOnce(bool)) {
        let cpu = self.cpu(vcpu);
        let board = &self.boards[cpu];
        let counted = key != NO_TB && self.running().tagged;
        if counted && board.last.load(Relaxed) == key {
            board.execs.store(board.execs.load(Relaxed) + 1, Relaxed);
            return;
        }
        // While fetching, no TB: a fetch that must not be repeated without the model (one that
        // reported a hazard, or changed the core's caches from outside) stores 0.
        board.last.store(NO_TB, Relaxed);
        fetch(counted);
        if counted {
            board.execs.store(board.execs.load(Relaxed) + 1, Relaxed);
            if board.last.load(Relaxed) == NO_TB {
                board.last.store(key, Relaxed);
            }
        }
    }

    /// The TB executions counted for `cpu` (the inline scoreboard's or the engine's board).
    #[inline]
    pub(super) fn tb_execs(&self, cpu: usize) -> u64 {
        match self.boards.get(cpu) {
            Some(b) => b.execs.load(Relaxed),
            None => self.host.execs(cpu),
        }
    }

    /// Makes sure the next TB `cpu` executes is fetched through the model (no repeat).
    #[inline]
    pub(super) fn forget_tb(&self, cpu: usize) {
        match self.boards.get(cpu) {
            Some(b) => b.last.store(0, Relaxed),
            None => self.host.forget_tb(cpu),
        }
    }

    /// A learned translation changed: the next TB of every core whose last TB's fetch used
    /// one is fetched through the model (a TB whose pages walked does not depend on them).
    /// (Fetch memos stay: they are made only for fetches whose page walked.)
    pub(super) fn forget_learned_tbs(&self) {
        for (k, f) in self.started_cores() {
            if f.fetch_learned() {
                self.forget_tb(k);
            }
        }
    }

    /// At the first vCPU's init, before any instruction: the CPU's identification key
    /// ([`crate::cpu_models::KEY_REGS`]), CTR_EL0 and CLIDR_EL1. The key picks the geometry the model
    /// is built with when the guest sends no geometry markers; CTR and CLIDR are the
    /// sanitizer's from the start (a marker no longer has to ask for them).
    pub fn cpu_identified(&self, key: Key, ctr: Option<Ctr>, clidr: Option<Clidr>) {
        let mut core = self.lock();
        core.cpu = Some((key, identify(&key)));
        if core.ctr.is_none() && (ctr.is_some() || clidr.is_some()) {
            (core.ctr, core.clidr) = (ctr, clidr);
            if let Some(m) = core.model.as_mut().filter(|_| self.settings.sanitize) {
                apply_id_regs(m, ctr, clidr);
            }
        }
    }

    /// At a translation (one vCPU): the TB's regime's registers as the vCPU holds them now.
    /// Any that differ from the decoded writes' values (a write the plugin did not see, e.g. in
    /// a TB QEMU re-translated for I/O with memory callbacks only) are adopted, and counted
    /// (`model-warning` at exit, naming the PC `pc` of the first such TB or TLBI).
    pub fn resync(&self, values: &[(SysReg, u64)], pc: u64) {
        if self.vcpus != 1 {
            return;
        }
        let mut core = self.lock();
        let mut changed = false;
        for &(reg, v) in values {
            if core.guest.log_walks > 0 && core.guest.value(0, reg) != v {
                eprintln!("{}: cpu 0: {reg:?} read {v:#x}, decoded writes gave {:#x} (adopted)", super::NAME, core.guest.value(0, reg));
            }
            if core.guest.resync(0, reg, v) {
                core.stats.resyncs += 1;
                core.stats.first_resync_pc.get_or_insert(pc);
                changed = true;
            }
        }
        if changed {
            self.settle(&mut core, true);
        }
    }

    /// A `model-warning` from the glue.
    pub fn warn(&self, what: &str) {
        self.lock().warn(what);
    }

    /// The guest's registers as the vCPUs start (read at the first translation, after QEMU's
    /// reset and boot code): every core's, until its own writes.
    pub fn seed_registers(&self, values: &[(SysReg, u64)]) {
        let mut core = self.lock();
        for cpu in 0..self.vcpus {
            for &(reg, v) in values {
                core.guest.write(cpu, reg, v);
            }
        }
    }

    /// At a TB's start: the Exception level it was translated for (a TB runs only at the EL it
    /// was translated at: the EL is part of QEMU's TB flags). A change drops the shortcut's
    /// pages (their attributes were the other regime's). The check is one atomic load.
    #[inline]
    pub fn at_el(&self, vcpu: u32, el: u8) {
        let cpu = self.cpu(vcpu);
        if self.els[cpu].load(Relaxed) == el {
            return;
        }
        self.els[cpu].store(el, Relaxed);
        let mut core = self.lock();
        self.settle(&mut core, true);
        core.guest.set_el(cpu, el);
    }

    pub(super) fn lock(&self) -> Guard<'_, Core> {
        self.core.lock()
    }

    /// The model vCPU of a callback: its index with one vCPU; with more, the core the TB's
    /// fetch callback identified (see the module docs), else the index.
    #[inline]
    pub(super) fn cpu(&self, vcpu: u32) -> usize {
        self.cpu_and_shortcut(vcpu).0
    }

    /// [`Engine::cpu`] and [`Engine::shortcut_now`] from one look at the running core.
    #[inline]
    pub(super) fn cpu_and_shortcut(&self, vcpu: u32) -> (usize, bool) {
        if self.vcpus == 1 {
            return (vcpu as usize, self.fast_on);
        }
        let r = self.running();
        let c = match r.core {
            u32::MAX => vcpu as usize,
            c => c as usize,
        };
        let bit = 1u64 << c.min(63);
        if self.started.load(Relaxed) & bit == 0 {
            self.started.fetch_or(bit, Relaxed);
        }
        (c, self.fast_on && self.attributed_by(r))
    }

    /// The cores that have run (a callback was made for them), with their shortcuts: every
    /// core whose shortcut may hold state.
    /// Visits the set bits only (cores beyond 64 always count), so a loop over the cores costs
    /// nothing per core that has not run.
    #[inline]
    pub(super) fn started_cores(&self) -> impl Iterator<Item = (usize, &Shortcut)> {
        let mut bits = self.started.load(Relaxed);
        let mut beyond = 64..self.fast.len().max(64);
        // One loop, not a chain of two: this runs at every model call.
        std::iter::from_fn(move || {
            let k = if bits != 0 {
                let k = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                k
            } else {
                beyond.next()?
            };
            self.fast.get(k).map(|f| (k, f))
        })
    }

    /// Which core runs the current TB ([`Running`]): the engine's own under round-robin TCG,
    /// this host thread's under MTTCG.
    #[inline]
    fn running(&self) -> Running {
        if self.round_robin {
            Running::unpack(self.rr_running.load(Relaxed), self.rr_handle.load(Relaxed) as usize)
        } else {
            RUNNING.with(Cell::get)
        }
    }

    #[inline]
    fn set_running(&self, r: Running) {
        if self.round_robin {
            self.rr_running.store(r.pack(), Relaxed);
            self.rr_handle.store(r.handle as u64, Relaxed);
        } else {
            RUNNING.with(|c| c.set(r));
        }
    }

    /// At a TB's start (more than one vCPU): which core runs it, from TPIDR_EL1's value (`tpidr`)
    /// with its tagged core number; untagged or out of range, the callback's index.
    pub fn identify(&self, tpidr: Option<u64>, vcpu: u32) {
        self.identify_by(tpidr, || None, vcpu)
    }

    /// [`Engine::identify`], and when TPIDR_EL1 is untagged, VMPIDR_EL2 (`vmpidr`, asked only
    /// then): QEMU resets it to the vCPU's MPIDR_EL1 and exposes it to plugins when the CPU has
    /// EL2 (`virt,virtualization=on`), and Linux's EL2 set-up writes MPIDR_EL1's value into it,
    /// so it names the executing vCPU (Aff0 on `virt` up to 8 vCPUs) until a hypervisor gives
    /// it a guest's value. Accepted only with MPIDR's RES1 bit 31 set, Aff1..Aff3 = 0 and Aff0
    /// below the vCPU count.
    /// Under `markers=declarations` the TPIDR_EL1 tag is not read (a firmware that tells the
    /// model nothing).
    pub fn identify_by(&self, tpidr: Option<u64>, vmpidr: impl FnOnce() -> Option<u64>, vcpu: u32) {
        let tpidr = tpidr.filter(|_| self.settings.markers == crate::config::MarkerMode::All);
        let tagged = tpidr.and_then(cachescope_arch::marker::core_of_id_value).filter(|&c| (c as usize) < self.vcpus);
        let core = tagged.or_else(|| {
            let v = vmpidr()?;
            let aff0 = (v & 0xff) as u32;
            (v >> 31 & 1 == 1 && v & 0xff_0000_ff00 == 0 && (aff0 as usize) < self.vcpus && self.vcpus <= 8).then_some(aff0)
        });
        if !self.round_robin && core.is_some_and(|c| c != vcpu) {
            // Under MTTCG the index is right: the register does not name the running core.
            self.disagreed.fetch_add(1, Relaxed);
        }
        // Under MTTCG the index is the running vCPU's: it wins over the register.
        let r = self.running();
        self.set_running(Running { core: if self.round_robin { core.unwrap_or(vcpu) } else { vcpu }, tagged: core.is_some(), ..r });
        if core.is_some() && !self.tagged_seen.load(Relaxed) {
            self.tagged_seen.store(true, Relaxed);
        }
    }

    /// At a TB's start with more than one vCPU: [`Engine::identify_by`] with the registers read
    /// by `tpidr` and `vmpidr`, unless `running` — the emulator's own handle of the vCPU this
    /// host thread runs, when the glue can read it (QEMU's `current_cpu`) — is the one of the
    /// last identification and that came from a register: a vCPU is one core for the whole
    /// run, so the core is unchanged and no register is read (under round-robin TCG most TBs
    /// run on the vCPU of the TB before). Every [`IDENTIFY_CHECK_EVERY`]th such TB reads them
    /// anyway; one that names another core (the guest re-tagged a core) is counted, turns the
    /// handle off for the rest of the run, and is named in a `model-warning` at exit. The
    /// counts do not depend on it: the same cores are identified either way.
    pub fn identify_tb(
        &self,
        running: Option<usize>,
        tpidr: impl FnOnce() -> Option<u64>,
        vmpidr: impl FnOnce() -> Option<u64>,
        vcpu: u32,
    ) {
        let handle = running.filter(|&h| h != 0 && self.running_trusted.load(Relaxed));
        let was = self.running();
        if let Some(h) = handle.filter(|&h| h == was.handle && was.tagged) {
            if was.since + 1 < IDENTIFY_CHECK_EVERY {
                self.set_running(Running { since: was.since + 1, ..was });
                return;
            }
            self.identify_by(tpidr(), vmpidr, vcpu);
            let now = self.running();
            if now.core != was.core || !now.tagged {
                self.running_disagreed.fetch_add(1, Relaxed);
                self.running_trusted.store(false, Relaxed);
            }
            self.set_running(Running { handle: h, since: 0, ..now });
            return;
        }
        self.identify_by(tpidr(), vmpidr, vcpu);
        let now = self.running();
        self.set_running(Running { handle: if now.tagged { handle.unwrap_or(0) } else { 0 }, since: 0, ..now });
    }

    fn fast_totals(&self, core: &mut Core) -> Totals {
        for cpu in 0..self.vcpus {
            self.credit_fetch(core, cpu);
        }
        self.fast.iter().fold(Totals::default(), |t, f| t + f.totals())
    }

    /// Credits the TB repeats counted inline since the last look to the last fetched TB (or
    /// replays them through the model: see [`Shortcut::replay`]); returns the execution
    /// counter's value.
    pub(super) fn credit_fetch(&self, core: &mut Core, cpu: usize) -> u64 {
        if !self.repeats_inline {
            return 0;
        }
        let execs = self.tb_execs(cpu);
        let f = &self.fast[cpu];
        let replays = f.credit(execs);
        if let (n @ 1.., Some((va, bytes))) = (replays, f.replay()) {
            for _ in 0..n {
                self.fetch_lines(core, cpu, va, bytes);
            }
        }
        execs
    }

    /// Every count so far: before the model, the model's, the shortcut's.
    pub(super) fn now(&self, core: &mut Core) -> Totals {
        let fast = self.fast_totals(core);
        let tlb = Totals { tlb: core.tlb.as_ref().map(|t| t.counts()).unwrap_or_default(), ..Totals::default() };
        core.early + core.model.as_ref().map(|m| m.totals()).unwrap_or_default() + fast + tlb
    }

    /// Every fetch memo stops answering ([`Shortcut::drop_memos`]).
    pub(super) fn drop_fetch_memos(&self) {
        self.fast.iter().for_each(Shortcut::drop_memos);
    }

    /// Applies deferred dirty bits and drops every shortcut (before any model change).
    pub(super) fn settle(&self, core: &mut Core, drop_pages: bool) {
        self.drop_fetch_memos();
        for (cpu, f) in self.fast.iter().enumerate() {
            f.settle_dirty(core.model.as_mut(), cpu);
            if drop_pages {
                f.forget_all();
            } else {
                f.forget_lines();
            }
            self.credit_fetch(core, cpu);
            if self.repeats_inline {
                self.forget_tb(cpu);
            }
        }
    }

    /// Before an operation the shortcut follows precisely (DC by VA, DC ZVA, IC IVAU, a TLBI by
    /// VA whose span the tables tell), with the shortcut: [`Engine::settle`] that keeps the
    /// remembered lines and fetch memos, which [`Engine::after_by_va`] (and, for a TLBI,
    /// [`Shortcut::forget_va_range`]) then drop where the operation changed them.
    fn settle_keeping_shortcut(&self, core: &mut Core) {
        for (k, f) in self.started_cores() {
            self.settle_core(core, k, f);
            self.credit_fetch(core, k);
            if self.repeats_inline {
                self.forget_tb(k);
            }
        }
    }

    /// After such an operation of `cpu` ([`Engine::settle_keeping_shortcut`]): every core's lines
    /// and fetch memos where the operation changed its L1s, and for a data-cache operation at
    /// `pa` every fetch memo of the blocks around it (DC ZVA writes a block of up to 2 KiB: Arm
    /// ARM DCZID_EL0.BS ≤ 9).
    fn after_by_va(&self, core: &mut Core, cpu: usize, pa: Option<u64>) {
        if let Some(pa) = pa {
            const ZVA_MAX: u64 = 2048;
            self.stamps_memo.wrote(pa & !(ZVA_MAX - 1), ZVA_MAX, super::shortcut::BLOCK_SHIFT);
        }
        if let Some(m) = core.model.as_mut() {
            for (k, f) in self.started_cores().filter(|&(k, _)| k != cpu) {
                f.caches_changed(m, k);
            }
        }
        self.drop_disturbed(core, cpu, true);
    }

    /// Before a model call of `cpu`: apply its deferred dirty bits, and with more than one vCPU
    /// every core's (the call may snoop another core's line, which must then be dirty in the
    /// model). The lines stay remembered: [`Engine::own_changes`] and [`Engine::drop_disturbed`]
    /// forget those the call changes. A settled line stays current: its set's changes so far
    /// are applied first, the settling's own (the dirty bit its mode already assumed) are not.
    #[inline]
    pub(super) fn settle_own(&self, core: &mut Core, cpu: usize) {
        if !self.fast_on {
            return;
        }
        if self.vcpus == 1 {
            self.settle_core(core, cpu, &self.fast[cpu]);
        } else {
            for (k, f) in self.started_cores() {
                self.settle_core(core, k, f);
            }
        }
    }

    /// [`Engine::settle_own`] for core `k`'s shortcut `f`.
    #[inline]
    fn settle_core(&self, core: &mut Core, k: usize, f: &Shortcut) {
        match core.model.as_mut() {
            Some(m) => {
                f.caches_changed(m, k);
                if f.settle_dirty(Some(m), k) {
                    m.take_l1d_changes(k);
                }
            }
            None => {
                f.settle_dirty(None, k);
            }
        }
    }

    /// After a model call of `cpu`: its lines and fetch memos in the L1 sets the call changed
    /// are no longer current ([`Shortcut::caches_changed`]).
    #[inline]
    pub(super) fn own_changes(&self, core: &mut Core, cpu: usize) {
        if let (true, Some(m)) = (self.fast_on, core.model.as_mut()) {
            self.fast[cpu].caches_changed(m, cpu);
        }
    }

    /// After a model call of `cpu`: applies the L1 set changes the call made to `cpu`'s caches
    /// (its lines and fetch memos there: [`Shortcut::caches_changed`]),
    /// and forgets the remembered data lines and fetch memos of every core whose private caches
    /// the call changed from outside ([`Model::take_disturbed`]: a snoop, a back-invalidation, a
    /// write behind the copies), `cpu`'s own lines too when `own` (a fetch or a prefetch, which do
    /// not remember a line themselves). With the sanitizer, every other core's
    /// uncached line is also forgotten: the call may have left a copy of it in some cache (its
    /// next uncached access's outcome then depends on that copy), and asking the model whether
    /// it did costs a probe of every cache at every call, while forgetting costs that core one
    /// model call at its next access to the line.
    #[inline]
    pub(super) fn drop_disturbed(&self, core: &mut Core, cpu: usize, own: bool) {
        if !self.fast_on {
            return;
        }
        let Some(m) = core.model.as_mut() else { return };
        let mask = m.take_disturbed();
        self.fast[cpu].caches_changed(m, cpu);
        if self.vcpus == 1 {
            if mask != 0 {
                self.fast[cpu].drop_memos();
                if own {
                    self.fast[cpu].forget_lines();
                }
            }
            return;
        }
        for (k, f) in self.started_cores() {
            let disturbed = mask >> k.min(63) & 1 == 1;
            if disturbed {
                f.drop_memos();
            }
            if disturbed && self.repeats_inline {
                // Its private caches changed: its next TB is fetched through the model.
                self.forget_tb(k);
            }
            if k == cpu && !own {
                continue;
            }
            if disturbed {
                f.forget_lines();
            } else if k != cpu && self.settings.sanitize && f.has_bypass() {
                f.forget_bypass();
            }
        }
    }

    /// The model, built (or rebuilt after new geometry markers) on first need. The check is
    /// inline in every access; the (re)build is out of line.
    #[inline]
    pub(super) fn model<'c>(&self, core: &'c mut Core) -> &'c mut Model {
        if core.model.is_none() || (core.geometry_changed && self.settings.wants_guest_geometry()) {
            self.build_model(core, false);
        } else if core.built_pending.is_some() {
            core.emit("");
        }
        core.model.as_mut().expect("built above")
    }

    /// The model for an access that bypasses the caches: built now when its geometry is known
    /// without the guest's markers (fixed by the settings, or the CPU is in the plugin's table
    /// and no geometry marker came), so that the first access of the run is modelled (the
    /// sanitizer sees the writes made with the MMU and caches off from reset); `None` while
    /// the geometry waits for the guest's markers (the access is only counted).
    pub(super) fn early_model<'c>(&self, core: &'c mut Core) -> Option<&'c mut Model> {
        if core.model.is_none() && core.guest_geo.hierarchy().is_none() && core.cpu.is_some_and(|(_, m)| m.is_some()) {
            self.build_model(core, true);
        }
        core.model.as_mut()
    }

    /// Builds the model from the settings and the guest's geometry, carrying the counters and
    /// the trace over from the previous model, and emits the `model-geometry` records.
    #[cold]
    #[inline(never)]
    fn build_model(&self, core: &mut Core, hold: bool) {
        core.drop_pending();
        core.geometry_changed = false;
        // The guest's markers, else the CPU's table entry, else the settings' fallback.
        let cpu_model = core.cpu.and_then(|(_, m)| m);
        let cpu_geo = cpu_model.map(|m| m.geometry());
        let from_cpu = core.guest_geo.hierarchy().is_none() && cpu_geo.is_some();
        let guest = if from_cpu { cpu_geo.as_ref().expect("checked") } else { &core.guest_geo };
        let resolved = self.settings.resolve(guest).map(|(h, o)| (h, if from_cpu { o.replacen("guest", "cpu", 1) } else { o }));
        if self.settings.wants_guest_geometry() {
            match (&cpu_geo, cpu_model, core.cpu) {
                (Some(g), Some(m), _) if !from_cpu && g.hierarchy() != core.guest_geo.hierarchy() => core.warn(&format!(
                    "the guest's geometry markers differ from QEMU {}'s {} in the plugin's CPU table: the markers are followed",
                    crate::cpu_models::QEMU_VERSION,
                    m.name
                )),
                (None, _, Some((key, None))) if core.guest_geo.hierarchy().is_none() => core.warn(&format!(
                    "no geometry markers and the CPU is not in the plugin's table (QEMU {}: {}): the rpi4 fallback geometry is modelled",
                    crate::cpu_models::QEMU_VERSION,
                    key_text(&key)
                )),
                _ => {}
            }
        }
        let (mut h, origin) = match resolved {
            Ok(x) => x,
            Err(e) => {
                core.warn(&format!("guest geometry unusable ({e}); using the rpi4 profile"));
                let mut s = self.settings.clone();
                s.profile = Some("rpi4".into());
                s.resolve(&GuestGeometry::default())
                    .unwrap_or_else(|_| (crate::geometry::Hierarchy::profile("rpi4").expect("built in"), "fallback".into()))
            }
        };
        // Rule 21: the guest CPU's CTR_EL0.L1Ip, unless a profile or `l1i_index` decides.
        self.settings.l1i_index_of_cpu(&mut h, core.ctr.map(|c| c.raw));
        let carried = core.model.as_ref().map(|m| m.totals()).unwrap_or_default();
        let carried_coh = core.model.as_ref().map(|m| m.coherence().to_vec()).unwrap_or_default();
        // A model that only counted bypassing accesses (built at reset from the CPU's table)
        // has no cache contents to lose.
        let used = core.model.as_ref().is_some_and(|m| {
            let t = m.totals();
            Level::ALL.iter().any(|&l| t.get(l).accesses > 0 || t.get(l).maint > 0)
        });
        if used {
            core.warn("geometry changed after the caches were in use: the caches start empty again");
        }
        let mut m = Model::new(&h, self.vcpus);
        if !self.settings.coherence {
            m.disable_coherence();
        }
        m.set_totals(carried);
        m.set_coherence(&carried_coh);
        if self.settings.sanitize {
            m.enable_sanitizer(false, false);
            apply_id_regs(&mut m, core.ctr, core.clidr);
        }
        let trace = match core.model.as_mut().and_then(|old| old.take_trace()) {
            Some(w) => Some(w),
            None => self.settings.trace.as_ref().map(|path| -> Box<dyn Write + Send> {
                let f = std::fs::File::create(path).unwrap_or_else(|e| fail(&format!("cannot create '{path}': {e}")));
                Box::new(std::io::BufWriter::new(f))
            }),
        };
        if let Some(w) = trace {
            m.trace_to(w);
        }
        for f in self.fast.iter() {
            // The lines remembered were the old model's (their deferred dirty bits are settled
            // before any model call), and so were the fetch memos.
            f.forget_lines();
            self.drop_fetch_memos();
            f.set_line_shift(h.l1d.line_shift());
        }
        core.model_built(&self.settings, &h, &origin, self.vcpus, hold);
        core.model = Some(m);
    }

    /// An operand VA's PA, counted by how it was found; `None` (counted under `what`, an
    /// `untranslated-va` cause) when it cannot be translated.
    pub(super) fn translate(&self, core: &mut Core, cpu: usize, va: u64, what: &str, pc: Option<u64>) -> Option<u64> {
        let (pa, how) = core.guest.translate(cpu, va, &self.host, what, pc)?;
        let k = match how {
            Translation::Learned => 0,
            Translation::Window => 1,
            Translation::MmuOff => 2,
            Translation::Walk => 3,
        };
        core.stats.va[k] += 1;
        Some(pa)
    }

    /// Drains the model's hazards into the deduplicated set, with the exposing access's VA and
    /// PC, the innermost open phase, and (for a data access) the value the emulator returned.
    pub(super) fn hazards(&self, core: &mut Core, va: u64, pc: u64, current: Option<u64>) {
        let Some(m) = core.model.as_mut() else { return };
        let events = m.take_events();
        if core.quiet {
            core.quieted += events.len() as u64;
            return;
        }
        if !self.attributed() && !events.is_empty() {
            if core.unattributed == 0 {
                core.warn_cause(WarningCause::Attribution, &self.unattributed_warning(), None, Some(pc));
            }
            core.unattributed += events.len() as u64;
            core.unattributed_pc.get_or_insert(pc);
            return;
        }
        let phase = core.phases.current();
        for e in events {
            if core.taint.covers(e.pa) {
                // It may follow from an unattributed call (see `attribution`): counted only.
                core.unattributed += 1;
                core.unattributed_pc.get_or_insert(pc);
                continue;
            }
            core.add_hazard(e, va, pc, phase.as_ref(), current);
        }
    }

    /// A model call touched `[pa, pa + len)`: tainted when its core is not known (see
    /// [`super::attribution`]).
    #[inline]
    pub(super) fn touched(&self, core: &mut Core, pa: u64, len: u64) {
        if !self.attributed() {
            core.taint.page(pa, len);
        }
    }

    /// Whether the shortcut answers this callback: it runs, and the running TB's core is known
    /// ([`Engine::attributed`]: a core's shortcut serves only that core's accesses).
    #[inline]
    pub(super) fn shortcut_now(&self) -> bool {
        self.fast_on && self.attributed()
    }

    /// Whether the running TB's core is known: one vCPU, or several under MTTCG (the callback's
    /// index is the executing vCPU's), or a TPIDR_EL1 tag.
    #[inline]
    pub(super) fn attributed(&self) -> bool {
        self.attributed_by(self.running())
    }

    /// [`Engine::attributed`] given the running core `r`.
    #[inline]
    fn attributed_by(&self, r: Running) -> bool {
        self.vcpus == 1 || !self.round_robin || r.tagged
    }

    fn unattributed_warning(&self) -> String {
        format!(
            "core attribution cannot be trusted: {} vCPUs under round-robin TCG (-icount or thread=single), TPIDR_EL1 untagged and VMPIDR_EL2 not naming a vCPU (no EL2, or a value a hypervisor set), so a callback names the vCPU that translated its TB, not the one running it; hazards raised by such code, or on pages it touched, are not reported (counted in the warning at exit). Tag TPIDR_EL1 (marker protocol 5), give the CPU EL2 (virt,virtualization=on: Linux and most firmware then keep VMPIDR_EL2 = MPIDR_EL1), or run without -icount (MTTCG: correct, not reproducible)",
            self.vcpus
        )
    }

    /// A marker, maintenance, TLBI, SCTLR write or prefetch at `pc` (decoded at translation);
    /// `reg(n)` reads register n (0..=30 Xn, 31 XZR, [`SP`]) before the instruction executes.
    pub fn special(&self, vcpu: u32, insn: Insn, pc: u64, reg: impl Fn(u8) -> u64) {
        let cpu = self.cpu(vcpu);
        let x = |n: u8| if n == 31 { 0 } else { reg(n) };
        if let Insn::Prefetch(p) = insn {
            let base = |n: u8| if n == 31 { reg(SP) } else { reg(n) };
            let va = match p.addr {
                PrfAddr::Imm { base: b, .. } => p.addr.effective(base(b), 0, pc),
                PrfAddr::Reg { base: b, index, .. } => p.addr.effective(base(b), x(index), pc),
                PrfAddr::Literal(_) => p.addr.effective(0, 0, pc),
            };
            return self.prefetch(cpu, p, va, pc);
        }
        // Registers are read before the lock: reading them needs no model state.
        let (a, b, c, d, e) = match insn {
            Insn::Marker => (x(9), x(10), x(11), x(12), x(13)),
            Insn::DcVa { rt, .. } | Insn::DcSetWay { rt, .. } | Insn::DcZva { rt } | Insn::IcIvau { rt } | Insn::MsrSctlr { rt } => {
                (x(rt), 0, 0, 0, 0)
            }
            Insn::MsrControl { rt, .. } | Insn::MsrTranslation { rt, .. } => (x(rt), 0, 0, 0, 0),
            Insn::Tlbi { va_rt: Some(rt), .. } => (x(rt), 0, 0, 0, 0),
            Insn::IcIallu { .. } | Insn::Tlbi { va_rt: None, .. } | Insn::Prefetch(_) => (0, 0, 0, 0, 0),
        };
        // At a TLBI (translation state changes around one): the regime's registers as the vCPU
        // holds them, adopted where a write escaped the decoder (see `resync`).
        let resync = if matches!(insn, Insn::Tlbi { .. }) && self.vcpus == 1 {
            self.host.regime_registers(self.els[cpu].load(Relaxed))
        } else {
            Vec::new()
        };
        if !resync.is_empty() {
            self.resync(&resync, pc);
        }
        let mut core = self.lock();
        let drop_pages = matches!(
            insn,
            Insn::Tlbi { .. } | Insn::MsrSctlr { .. } | Insn::Marker | Insn::MsrControl { .. } | Insn::MsrTranslation { .. }
        );
        // A DC by VA or an IC IVAU changes no translation and only the caches it reaches, a
        // TLBI by VA only the translations of the span it reaches: the shortcut keeps what the
        // operation leaves unchanged (Linux's boot makes over a million DC ZVAs, and a TLBI
        // by VA and an IC IVAU per instruction it patches). Not with a TLB model (a TLBI
        // changes its entries; the shortcut's TLB hits assume them).
        let by_va = self.fast_on && matches!(insn, Insn::DcVa { .. } | Insn::DcZva { .. } | Insn::IcIvau { .. });
        let tlbi_span = match insn {
            Insn::Tlbi { va_rt: Some(_), .. } if self.fast_on && core.tlb.is_none() => {
                let va = crate::decode::tlbi_operand_va(a);
                // Up to a 2 MiB block (512 pages); beyond, everything is dropped.
                core.guest.tlbi_extent(cpu, va, &self.host).filter(|&s| s <= 21).map(|s| (va >> s << s, 1u64 << s))
            }
            _ => None,
        };
        if by_va || tlbi_span.is_some() {
            self.settle_keeping_shortcut(&mut core);
        } else {
            self.settle(&mut core, drop_pages);
        }
        let mut dc_pa = None;
        if matches!(insn, Insn::DcVa { .. } | Insn::DcZva { .. }) && !core.maint.is_empty() {
            let shift = core.maint_shift();
            for r in core.maint.iter_mut().filter(|r| a.wrapping_sub(r.va) < r.len) {
                r.done.insert(a >> shift, ());
                r.last_pc = pc;
            }
        }
        if let (Insn::Marker, None) = (insn, core.ctr) {
            (core.ctr, core.clidr) = self.host.id_regs();
            let (ctr, clidr) = (core.ctr, core.clidr);
            if let Some(m) = core.model.as_mut() {
                apply_id_regs(m, ctr, clidr);
            }
        }
        if !self.attributed() {
            // What an unattributed instruction of this kind can reach (see `attribution`).
            match insn {
                Insn::DcVa { .. } | Insn::DcZva { .. } | Insn::IcIvau { .. } => {
                    // The name the operation's own translation below gives an untranslated VA;
                    // untranslated, the operation is not modelled, so it reaches nothing.
                    let what = match insn {
                        Insn::DcVa { .. } => "dc by va",
                        Insn::DcZva { .. } => "dc zva",
                        _ => "ic ivau",
                    };
                    if let Some((pa, _)) = core.guest.translate(cpu, a, &self.host, what, Some(pc)) {
                        core.taint.page(pa, 1 << 11);
                    }
                }
                // Every line of a core's cache, or a control or translation register of one core
                // (the cacheability or the translation of all it does, per core in the walk).
                Insn::DcSetWay { .. }
                | Insn::IcIallu { .. }
                | Insn::MsrSctlr { .. }
                | Insn::MsrControl { .. }
                | Insn::MsrTranslation { .. } => core.taint.everything(),
                // Global.
                Insn::Marker | Insn::Tlbi { .. } | Insn::Prefetch(_) => {}
            }
        }
        match insn {
            Insn::Marker => self.marker(&mut core, cpu, [a, b, c, d, e], pc),
            Insn::Tlbi { va_rt, broadcast } => {
                let scope = match va_rt {
                    None => {
                        core.guest.forget_pages();
                        crate::tlb::TlbiScope::All
                    }
                    Some(_) => {
                        let va = crate::decode::tlbi_operand_va(a);
                        core.guest.forget_page(va);
                        crate::tlb::TlbiScope::Va(va)
                    }
                };
                // Rule T5 of tlb.rs (every shortcut was dropped above).
                if let Some(t) = core.tlb.as_mut() {
                    t.invalidate(cpu, scope, broadcast);
                }
            }
            Insn::MsrSctlr { .. } => {
                core.guest.write(cpu, SysReg::Sctlr(crate::walk::Regime::El1), a);
            }
            Insn::MsrTranslation { reg, .. } => {
                if core.guest.log_walks > 0 {
                    eprintln!("{}: cpu {cpu} pc {pc:#x}: msr {reg:?} = {a:#x}", super::NAME);
                }
                core.guest.write(cpu, reg, a);
            }
            Insn::MsrControl { reg, .. } => {
                core.guest.write(cpu, reg.sys_reg(), a);
                self.control_write(&mut core, cpu, reg, a);
            }
            Insn::DcVa { op, point, .. } => {
                let Some(pa) = self.translate(&mut core, cpu, a, "dc by va", Some(pc)) else { return };
                dc_pa = Some(pa);
                let dline = core.ctr.map_or(0, |c| u64::from(c.dmin_line()));
                self.model(&mut core).dc_by_pa_granule(cpu, op, point, pa, dline);
            }
            Insn::DcZva { .. } => {
                let Some(pa) = self.translate(&mut core, cpu, a, "dc zva", Some(pc)) else { return };
                dc_pa = Some(pa);
                let attr = core.guest.data_attr(cpu, a, &self.host);
                if attr.cacheable() {
                    self.model(&mut core).dc_zva(cpu, pa, attr);
                } else {
                    match self.early_model(&mut core) {
                        Some(m) => m.dc_zva(cpu, pa, attr),
                        None => {
                            let l1d = &mut core.early.levels[Level::L1D as usize];
                            l1d.maint += 1;
                            l1d.bypass += 1;
                        }
                    }
                }
            }
            Insn::DcSetWay { op, .. } => self.set_way(&mut core, cpu, op, a),
            Insn::IcIallu { broadcast } => self.model(&mut core).ic_invalidate_all(cpu, broadcast),
            Insn::IcIvau { .. } => {
                let Some(pa) = self.translate(&mut core, cpu, a, "ic ivau", Some(pc)) else { return };
                let iline = core.ctr.map_or(0, |c| u64::from(c.imin_line()));
                let m = self.model(&mut core);
                m.ic_invalidate_granule_va(cpu, a, pa, iline);
                let notes = m.take_ic_aliases();
                if !notes.is_empty() {
                    core.ic_aliases(&notes);
                }
            }
            Insn::Prefetch(_) => {}
        }
        if by_va {
            self.after_by_va(&mut core, cpu, dc_pa);
        }
        if self.fast_on && matches!(insn, Insn::IcIvau { .. }) {
            // The sanitizer's written bytes of the line start afresh: stores must reach it again.
            for (_, f) in self.started_cores() {
                f.forget_quiet();
            }
        }
        if let Some((va, len)) = tlbi_span {
            for (_, f) in self.started_cores() {
                f.forget_va_range(va, len);
            }
            self.stamps_memo.unmapped(va, len);
        }
        if core.model.as_ref().is_some_and(|m| m.has_events()) {
            let va = if matches!(insn, Insn::DcSetWay { .. }) { 0 } else { a };
            self.hazards(&mut core, va, pc, None);
            if by_va || tlbi_span.is_some() {
                self.settle(&mut core, false);
            }
        }
    }

    /// A write of `value` to an EL2/EL3 control register by `cpu`: kept per vCPU, and a
    /// `model-warning` (once per register and bit in a run) for each cacheability control it
    /// sets that the model does not follow (see [`ControlReg::unfollowed`]).
    fn control_write(&self, core: &mut Core, cpu: usize, reg: ControlReg, value: u64) {
        if core.control.len() <= cpu {
            core.control.resize(cpu + 1, [None; 4]);
        }
        core.control[cpu][reg.index()] = Some(value);
        for bit in reg.unfollowed(value) {
            let name = format!("{}.{bit}", reg.name());
            if core.unfollowed.contains(&name) {
                continue;
            }
            core.warn(&format!(
                "{name} set (vCPU {cpu}, {value:#x}): a control the model does not follow (it follows SCTLR, TTBR, TCR and MAIR of EL1/EL2/EL3, HCR_EL2.DC, SCR_EL3.NS and the window markers; not stage 2 or VHE), so accesses it governs are modelled as if it were clear"
            ));
            core.unfollowed.push(name);
        }
    }

    /// A PRFM PLD/PST of `va` (its address from the registers, read in the exec callback, before
    /// the instruction), translated like a DC operand; nothing on non-cacheable memory, nothing
    /// for a VA the guest's tables do not map (a prefetch never faults: the architecture makes
    /// it a NOP there, e.g. Linux's `prefetch()` of a NULL list pointer).
    fn prefetch(&self, cpu: usize, p: crate::decode::Prefetch, va: u64, pc: u64) {
        let mut core = self.lock();
        if core.guest.try_translate(cpu, va, &self.host).is_err_and(|f| f.unmapped()) {
            return;
        }
        let attr = core.guest.data_attr(cpu, va, &self.host);
        if !attr.cacheable() {
            return;
        }
        // Only this vCPU's data shortcut can be affected (a prefetch may evict its lines: the
        // sets it changes are dropped after it, `drop_disturbed`; and it may cache its uncached
        // line).
        self.settle_own(&mut core, cpu);
        if self.fast[cpu].replay().is_some() {
            self.credit_fetch(&mut core, cpu);
        }
        self.fast[cpu].forget_bypass();
        let Some(pa) = self.translate(&mut core, cpu, va, "prefetch", None) else { return };
        self.touched(&mut core, pa, 1);
        let m = self.model(&mut core);
        m.prefetch(cpu, pa, p.level, p.strm, attr);
        // A hazard the prefetch's fill exposed (rule 16b: another core caches the line in
        // another shareability domain) is the prefetch's, at its own VA and PC, not the next
        // model call's.
        if m.has_events() {
            self.hazards(&mut core, va, pc, None);
        }
        self.drop_disturbed(&mut core, cpu, true);
    }

    fn set_way(&self, core: &mut Core, cpu: usize, op: LineOp, operand: u64) {
        core.stats.setway_ops += 1;
        let level = ((operand >> 1) & 7) as u32 + 1;
        // The geometry the guest walks by: its markers', else the CPU's (a profile's model may differ).
        let guest = core.guest_geo.data_level(level).or_else(|| core.cpu.and_then(|(_, m)| m)?.geometry().data_level(level));
        let m = self.model(core);
        let Some(mg) = m.data_level_geometry(level) else {
            // A level the model does not have: counted nowhere, like the hardware ignores it.
            return;
        };
        match guest {
            Some((line, sets, ways)) if (line, u64::from(mg.sets), u64::from(mg.ways)) != (mg.line, sets, ways) => {
                let (gs, gw) = (sets as u32, ways as u32);
                let sw = decode_set_way(operand, line, gs.max(1).next_power_of_two(), gw.max(1));
                let slots = guest_to_model_slots(sw.set, sw.way, gs, gw, mg.sets, mg.ways);
                m.dc_set_way_slots(cpu, op, level, slots);
            }
            _ => {
                let sw = decode_set_way(operand, mg.line, mg.sets, mg.ways);
                m.dc_set_way(cpu, op, sw.level, sw.set as usize, sw.way as usize);
            }
        }
    }

    /// At exit: settles the shortcut, ends the trace, writes the exit records.
    pub fn at_exit(&self) {
        let mut core = self.lock();
        self.settle(&mut core, true);
        if let Some(m) = core.model.as_mut() {
            m.end_trace();
        }
        let untranslated = core.guest.untranslated();
        for (cause, n, first, pc) in untranslated {
            let at = pc.map_or_else(|| " (PC not known)".to_string(), |pc| format!(" by the instruction at PC {pc:#x}"));
            core.untranslated_warning(&format!("{cause}, first at VA {first:#x}{at}"), n, pc);
        }
        if core.stats.resyncs > 0 {
            let n = core.stats.resyncs;
            let what = format!("{n} translation-register values read at translation differed from the decoded writes (adopted): writes the plugin did not see");
            match core.stats.first_resync_pc {
                Some(pc) => core.warn_at(&format!("{what}; first at PC {pc:#x}"), pc),
                None => core.warn(&what),
            }
        }
        if let (n @ 1.., Some(d)) = core.guest.disagreements() {
            let what = format!(
                "the walk of the guest's tables disagrees with QEMU's translation of data accesses on {n} pages (first: VA {:#x} → QEMU PA {:#x}, walk {:#x}, by the instruction at PC {:#x}): the model's regime state missed a change",
                d.va, d.qemu_pa, d.walk_pa, d.pc
            );
            core.warn_at(&what, d.pc);
        }
        if core.unattributed > 0 {
            let n = core.unattributed;
            let what = format!(
                "{n} hazard occurrences were not reported: raised by untagged code whose core is not known, or on what such code touched"
            );
            let pc = core.unattributed_pc;
            core.warn_cause(WarningCause::Attribution, &what, Some(n), pc);
        } else if self.vcpus > 1 && self.round_robin && !self.tagged_seen.load(Relaxed) {
            core.warn_cause(WarningCause::Attribution, &self.unattributed_warning(), None, None);
        }
        let disagreed = self.disagreed.load(Relaxed);
        if disagreed > 0 {
            core.warn_cause(WarningCause::Attribution, &format!(
                "core attribution: in {disagreed} TBs the core TPIDR_EL1's tag or VMPIDR_EL2 named was not the vCPU QEMU ran (MTTCG, where its index is right): the guest's register does not identify the core, so hazards between cores may be misattributed"
            ), Some(disagreed), None);
        }
        let rechecked = self.running_disagreed.load(Relaxed);
        if rechecked > 0 {
            core.warn_cause(WarningCause::Attribution, &format!(
                "core attribution: a vCPU's TPIDR_EL1 tag or VMPIDR_EL2 changed to name another core while it ran ({rechecked} checks): from then on every TB's core was read from the registers; up to {IDENTIFY_CHECK_EVERY} TBs before the check may have been attributed to the core it named before"
            ), Some(rechecked), None);
        }
        let now = self.now(&mut core);
        core.exit(&now, self.settings.sanitize, self.fast_on);
        if std::env::var_os("CS_MODEL_LOCK_STATS").is_some() {
            let s = self.core.stats();
            let pct = |n: u64| 100.0 * n as f64 / s.taken.max(1) as f64;
            eprintln!(
                "{}: lock: taken {}, contended {} ({:.2} %), spins {}, yields {}, waited {:.3} s",
                super::NAME,
                s.taken,
                s.contended,
                pct(s.contended),
                s.spins,
                s.yields,
                s.wait_ns as f64 / 1e9
            );
        }
    }
}
