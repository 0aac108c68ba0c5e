//! The QEMU glue (system mode, plugin API v4): translation-time decoding, per-access memory
//! callbacks, per-TB instruction-fetch callbacks, marker and maintenance callbacks with register
//! access, and the records at phase ends and at exit.
//!
//! # Speed (the shortcut; one vCPU only, `fast=off` disables all of it)
//! - **Same line**: an access to the same L1D line as the vCPU's previous data access is an L1D
//!   hit that changes no replacement state (the line is already the most recent of its set; not
//!   after a non-temporal access, whose line may sit at the end of the order), so
//!   it is only counted, without the lock or the model (a write-back write defers its dirty bit to
//!   the next model call).
//! - **Batching**: a run of consecutive immediate-offset loads/stores on one base register gets a
//!   single memory callback per direction (the first one's; the direction is fixed at translation,
//!   so no query to QEMU), which also simulates the others at their decoded
//!   offsets; when they all fall in the first one's line they are counted in one step.
//! - **Inline fetch**: a TB executed right after itself hits the same L1I lines; an inline
//!   scoreboard counter and a conditional callback make such repeats cost no callback at all.
//! - **Page cache**: the VA→PA page and attribute of the previous access are reused without
//!   asking QEMU or scanning the windows.
//!
//! Anything that could change these facts (maintenance, markers, TLBI, SCTLR writes, a geometry
//! change) drops the shortcut first. The counts are identical with and without it
//! (scripts/model-check compares them).
//!
//! # Which core runs (more than one vCPU)
//! QEMU 10.0 passes a callback the vCPU index as a constant baked into the translated code
//! whenever the translation is not `CF_PARALLEL` (`gen_cpu_index()` in accel/tcg/plugin-gen.c),
//! i.e. always under `-icount`'s round-robin TCG: a TB that several cores share reports the
//! vCPU that translated it. With more than one vCPU the plugin therefore asks the guest instead:
//! each TB's fetch callback (the first callback of every TB) reads `TPIDR_EL1`, which firmware
//! speaking marker protocol 5 sets to [`cachescope_arch::marker::core_id_value`] on every core,
//! and every callback of the TB uses that core (a per-host-thread value: right under
//! round-robin, where one thread runs every vCPU between TBs, and under MTTCG alike). Firmware
//! that leaves the register untagged gets the callback's index, as before.

use std::cell::{Cell, UnsafeCell};
use std::io::Write;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Arc, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::{
    qemu_plugin_get_registers, qemu_plugin_register_atexit_cb, qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu, qemu_plugin_u64_get,
    qemu_plugin_u64_set, register, CallbackFlags, HasCallbacks, MemRW, MemoryInfo, PluginCondition, PluginId, PluginOp, PluginU64,
    Register, RegisterDescriptor, TranslationBlock, VCPUIndex,
};

use cachescope_arch::cache::id::{Clidr, Ctr};

use crate::config::{GuestGeometry, Settings};
use crate::decode::{decode, decode_mem_imm, decode_set_way, guest_to_model_slots, is_non_temporal_pair, plan_groups, Insn, PrfAddr, Role};
use crate::guest::{Guest, Translation};
use crate::model::{Attr, Hint, Level, MaintOp, Model, Totals, SERVED_MEMORY};
use crate::protocol::{self, Marker};
use crate::report::{self, Phases, Record};
use crate::sanitize::{HazardKind, Hazards, MaintRange};

const NAME: &str = "cachescope-cache-model";
const NONE: u64 = u64::MAX;
/// The execution key of a TB whose fetch is never taken for a back-to-back repeat (the keys of
/// the others count up from 1).
const NO_TB: u64 = u64::MAX;
/// Marks a line number in [`Fast::i_end`] as fetched bypassing the caches.
const BYPASS_LINE: u64 = 1 << 63;
/// A TB's instructions in each aligned block of this many bytes (log2) are fetched as a segment of
/// their own, right before the first of them executes: the smallest instruction-cache line any
/// CPU or profile has (64 bytes), so a segment never starts inside a line it shares with the
/// previous one except where the line is longer (then `fetch` skips the line it continues).
const FETCH_SEGMENT_SHIFT: u32 = 6;

/// A register's value: its first 8 bytes, little-endian (QEMU's byte order for AArch64).
fn read_u64(r: &RegisterDescriptor<'_>) -> Option<u64> {
    let bytes = r.read().ok()?;
    Some(bytes.iter().take(8).rev().fold(0u64, |v, &b| v << 8 | u64::from(b)))
}

const PAGE_SHIFT: u32 = 12;

/// Per-vCPU shortcut state. Only the vCPU's own thread writes it (the shortcut is enabled with one
/// vCPU only); atomics with relaxed ordering make the exit-time read well defined and cost plain
/// loads and stores.
#[derive(Default)]
struct Fast {
    /// VA line number of the previous data access (NONE = no shortcut).
    d_line: AtomicU64,
    /// 1 = cacheable, reads only; 2 = cacheable, writes too (write-back); 3 = bypass.
    d_mode: AtomicU64,
    d_slot: AtomicU64,
    d_l1line: AtomicU64,
    d_dirty: AtomicBool,
    /// PC of the first write deferred in `d_dirty` (the sanitizer's "dirty since").
    d_pc: AtomicU64,
    d_hits: AtomicU64,
    d_bypass: AtomicU64,
    /// VA page of the previous translated access and its PA page | io flag (bit 63).
    p_vpn: AtomicU64,
    p_ppn: AtomicU64,
    /// Attribute code of that page (`NONE` = not uniform across the page: look it up).
    p_attr: AtomicU64,
    /// The lines a repeat of the last TB fetched through the model fetches (0 when the TB lies
    /// in one line: see `fetch`), their mode (1 hit, 3 bypass), and the value of the board's
    /// execution counter already accounted for.
    i_lines: AtomicU64,
    i_acc: AtomicU64,
    i_mode: AtomicU64,
    /// The line the vCPU's instruction fetch is in: the last line of the last TB fetched, as
    /// the model address's line number, bit 63 set when it bypassed the caches (`NONE`: none).
    i_end: AtomicU64,
    i_hits: AtomicU64,
    i_bypass: AtomicU64,
    /// log2 of the L1D line size.
    d_shift: AtomicU64,
}

impl Fast {
    fn new() -> Self {
        let f = Self::default();
        f.d_line.store(NONE, Relaxed);
        f.p_vpn.store(NONE, Relaxed);
        f.i_end.store(NONE, Relaxed);
        f.d_shift.store(6, Relaxed);
        f
    }

    fn drop_data(&self) {
        self.d_line.store(NONE, Relaxed);
    }

    fn drop_all(&self) {
        self.d_line.store(NONE, Relaxed);
        self.p_vpn.store(NONE, Relaxed);
    }

    fn totals(&self) -> Totals {
        let mut t = Totals::default();
        let d = self.d_hits.load(Relaxed);
        t.levels[Level::L1D as usize].accesses = d;
        t.levels[Level::L1D as usize].hits = d;
        t.levels[Level::L1D as usize].bypass = self.d_bypass.load(Relaxed);
        t.served[0] = d;
        t.served[SERVED_MEMORY] = self.d_bypass.load(Relaxed);
        let i = self.i_hits.load(Relaxed);
        t.levels[Level::L1I as usize].accesses = i;
        t.levels[Level::L1I as usize].hits = i;
        t.levels[Level::L1I as usize].bypass = self.i_bypass.load(Relaxed);
        t
    }
}

/// A leader's members and their span relative to the leader's address.
struct Group {
    /// The leader's own access size.
    size: u32,
    members: Vec<(i64, u32, bool)>,
    /// Lowest member offset and highest member end (offset + size).
    lo: i64,
    hi: i64,
    /// Any member is a store.
    stores: bool,
    /// The leader's PC (member k's is 4 (k + 1) further: members are consecutive instructions).
    pc: u64,
    /// PC of the first store member.
    store_pc: u64,
}

impl Group {
    fn new(size: u32, members: Vec<(i64, u32, bool)>, pc: u64) -> Self {
        let lo = members.iter().map(|m| m.0).min().unwrap_or(0);
        let hi = members.iter().map(|m| m.0 + i64::from(m.1)).max().unwrap_or(0);
        let stores = members.iter().any(|m| m.2);
        let store_pc = members.iter().position(|m| m.2).map_or(pc, |k| pc + 4 * (k as u64 + 1));
        Self { size, members, lo, hi, stores, pc, store_pc }
    }
}

/// Run statistics for the `model-run` record.
#[derive(Default)]
struct Stats {
    markers: u64,
    va: [u64; 3],
    setway_ops: u64,
    warnings: u64,
    /// Counter records of ended phases written so far (`model`, `model-time`, `model-coherence`).
    phase_records: u64,
    /// Phases whose counter records were not written (past [`PHASE_RECORD_LIMIT`]).
    phases_unreported: u64,
}

/// The most `model-warning` records a run writes; past it they are only counted (`model-run`'s
/// `warnings`), so a guest that sends malformed markers in a loop cannot grow the log without
/// bound.
const WARNING_LIMIT: u64 = 100;

/// The most per-phase counter records (`model` per level, `model-time`, `model-coherence` per
/// vCPU) a run writes: each is at most ~450 bytes (a phase name is at most
/// `cachescope_arch::marker::PHASE_NAME_MAX` bytes), so at most ~90 MB, within what the digest
/// reads (256 MiB), however many phases or vCPUs. A phase whose records would pass it gets
/// none; its counts stay in the totals and its hazards are still reported. The main job writes
/// a few thousand (5 or 6 per phase with one vCPU).
const PHASE_RECORD_LIMIT: u64 = 200_000;

/// A spin lock: uncontended (one vCPU) it costs one compare-and-swap and one plain store,
/// about half of a `Mutex`; a waiting vCPU yields its host thread after a short spin.
struct SpinLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and a guard exists only while `held` is
// true and owned by the thread that set it (acquire/release ordering).
unsafe impl<T: Send> Sync for SpinLock<T> {}

struct Guard<'a, T>(&'a SpinLock<T>);

impl<T> SpinLock<T> {
    fn new(value: T) -> Self {
        Self { held: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    fn lock(&self) -> Guard<'_, T> {
        let mut spins = 0u32;
        while self.held.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Guard(self)
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other reference to the value exists.
        unsafe { &*self.0.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; `&mut self` makes this the only use of the guard.
        unsafe { &mut *self.0.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.0.held.store(false, Release);
    }
}

/// Everything behind the lock.
struct Core {
    model: Option<Model>,
    /// Counts from before the model exists (bypassed accesses while the caches are off).
    early: Totals,
    geometry_changed: bool,
    guest: Guest,
    guest_geo: GuestGeometry,
    phases: Phases,
    stats: Stats,
    /// Marker protocol version the kernel's hello announced (0 = no hello yet).
    kernel_protocol: u64,
    /// The `model-profile` record was written.
    profile_emitted: bool,
    /// The sanitizer's deduplicated hazards.
    hazards: Hazards,
    /// Open maintenance ranges (markers 7/8).
    maint: Vec<MaintRange>,
    /// CTR_EL0, once read (None: IDC = DIC = 0 assumed, the Cortex models' value, and the
    /// model's own line sizes for by-VA maintenance).
    ctr: Option<Ctr>,
    /// CLIDR_EL1, once read (None: not exposed; every modelled level is before the PoC).
    clidr: Option<Clidr>,
    /// Sanitizer reports suspended (marker 9).
    quiet: bool,
    /// Hazard occurrences dropped while quiet.
    quieted: u64,
    out: Box<dyn Write + Send>,
}

/// Per-vCPU scoreboard entries of the fetch shortcut: a TB executed right after itself is a
/// repeat whose L1I lines all hit (see the module docs). Each TB, in this order: a conditional
/// callback when `last != key` (the model), an inline `execs += 1`, an inline `last = key`.
/// Repeats therefore cost no callback; they are credited from `execs` when anything reads or
/// changes the model.
struct Board {
    last: PluginU64,
    execs: PluginU64,
}

// SAFETY: the entries are handles to a scoreboard QEMU owns for the plugin's lifetime; QEMU's
// scoreboard API may be called from any thread.
unsafe impl Send for Board {}
// SAFETY: as for Send; the handles are never mutated.
unsafe impl Sync for Board {}

struct State {
    settings: Settings,
    board: Option<Board>,
    fetch_warned: AtomicBool,
    vcpus: usize,
    fast_on: bool,
    fast: Box<[Fast]>,
    core: SpinLock<Core>,
    regs: OnceLock<Vec<RegisterDescriptor<'static>>>,
    sysregs: OnceLock<SysRegs>,
    next_tb: AtomicU64,
}

/// System registers the plugin reads when the guest CPU exposes them (QEMU's gdbstub system
/// register feature): CTR_EL0 for the sanitizer's instruction-coherence rule, CLIDR_EL1 for its
/// Point of Coherency (model rule 16a), and with more than one vCPU TPIDR_EL1 (raw handle), the
/// core identity (see the module docs).
struct SysRegs {
    ctr: Option<RegisterDescriptor<'static>>,
    clidr: Option<RegisterDescriptor<'static>>,
    core_id: Option<usize>,
}

thread_local! {
    /// The core (model vCPU) whose TB this host thread runs now, set by the TB's fetch callback
    /// when the plugin identifies cores by register; `u32::MAX` = not yet known.
    static CURRENT: Cell<u32> = const { Cell::new(u32::MAX) };
    /// A byte array reused for register reads on this thread.
    static REG_BUF: Cell<*mut qemu_plugin::sys::GByteArray> = const { Cell::new(std::ptr::null_mut()) };
}

/// Finds a register's raw handle by name (case-insensitive) in the current vCPU's list. Called
/// from a vCPU-init callback, as the API requires.
fn raw_register(name: &str) -> Option<usize> {
    // SAFETY: QEMU returns a GArray of `qemu_plugin_reg_descriptor` whose names are NUL-terminated
    // strings QEMU keeps for its lifetime; the array (not the strings) is freed here.
    unsafe {
        let arr = qemu_plugin::sys::qemu_plugin_get_registers();
        if arr.is_null() {
            return None;
        }
        let descs = std::slice::from_raw_parts((*arr).data as *const qemu_plugin::sys::qemu_plugin_reg_descriptor, (*arr).len as usize);
        let found = descs
            .iter()
            .find(|d| !d.name.is_null() && std::ffi::CStr::from_ptr(d.name).to_str().is_ok_and(|n| n.eq_ignore_ascii_case(name)))
            .map(|d| d.handle as usize);
        g_array_free(arr, true);
        found
    }
}

/// Reads a 64-bit register by raw handle into this thread's reusable buffer (no allocation).
/// Only from a callback registered with register access.
fn read_raw_register(handle: usize) -> Option<u64> {
    REG_BUF.with(|b| {
        // SAFETY: the buffer is this thread's own GByteArray, created by glib, emptied before
        // QEMU appends the register's bytes to it, and read only within its length.
        unsafe {
            let mut arr = b.get();
            if arr.is_null() {
                arr = g_byte_array_new();
                b.set(arr);
            }
            g_byte_array_set_size(arr, 0);
            let n = qemu_plugin::sys::qemu_plugin_read_register(handle as *mut qemu_plugin::sys::qemu_plugin_register, arr);
            if n < 8 || (*arr).len < 8 {
                return None;
            }
            let bytes = std::slice::from_raw_parts((*arr).data, 8);
            Some(u64::from_le_bytes(bytes.try_into().ok()?))
        }
    })
}

impl Core {
    fn emit(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    fn warn(&mut self, what: &str) {
        self.stats.warnings += 1;
        if self.stats.warnings > WARNING_LIMIT {
            return;
        }
        let mut text = report::untyped_line(Record::new(&cachescope_arch::record::MODEL_WARNING).str("what", what));
        if self.stats.warnings == WARNING_LIMIT {
            text += &report::untyped_line(
                Record::new(&cachescope_arch::record::MODEL_WARNING)
                    .str("what", &format!("{WARNING_LIMIT} warnings: further ones are only counted (model-run.warnings)")),
            );
        }
        self.emit(&text);
    }

    /// Adds a hazard occurrence; the first one past the bound on hazard records says so, once.
    fn add_hazard(&mut self, e: crate::sanitize::Event, va: u64, pc: u64, phase: Option<&(u64, String)>, current: Option<u64>) {
        let was = self.hazards.truncated();
        self.hazards.add(e, va, pc, phase.map(|(id, n)| (*id, n.as_str())), current);
        if !was && self.hazards.truncated() {
            let limit = self.hazards.limit();
            let what = format!(
                "more than {limit} distinct hazards: further ones are only counted (hazard-total.dropped), not listed; the run fails (hazard-total.truncated)"
            );
            self.stats.warnings += 1;
            let text = report::untyped_line(Record::new(&cachescope_arch::record::MODEL_WARNING).str("what", &what))
                + &format!("# model: hazard storm: {what}\n");
            self.emit(&text);
        }
    }

    /// log2 of the granule a by-VA data-cache operation covers, for the maintenance-range rule:
    /// the model's L1D line, or the guest's CTR_EL0.DminLine when that is longer (a loop that
    /// steps by DminLine, as the architecture recommends, then reaches every line).
    fn maint_shift(&self) -> u32 {
        let model = self.model.as_ref().map_or(6, |m| m.config().l1d.line_shift());
        model.max(self.ctr.map_or(0, |c| c.dmin_line().trailing_zeros()))
    }

    fn lower_levels(&self) -> usize {
        self.model.as_ref().map_or(0, |m| m.lower_levels())
    }
}

impl State {
    fn lock(&self) -> Guard<'_, Core> {
        self.core.lock()
    }

    /// The model vCPU of a callback: its index with one vCPU; with more, the core the TB's
    /// fetch callback identified (see the module docs), else the index.
    #[inline]
    fn cpu(&self, vcpu: VCPUIndex) -> usize {
        if self.vcpus == 1 {
            return vcpu as usize;
        }
        match CURRENT.with(Cell::get) {
            u32::MAX => vcpu as usize,
            c => c as usize,
        }
    }

    /// The raw handle of TPIDR_EL1 when cores are identified by it (more than one vCPU).
    fn core_id_register(&self) -> Option<usize> {
        if self.vcpus == 1 {
            return None;
        }
        self.sysregs.get()?.core_id
    }

    /// At a TB's start (more than one vCPU): which core runs it, from TPIDR_EL1's tagged core
    /// number; untagged or out of range, the callback's index.
    fn identify(&self, handle: usize, vcpu: VCPUIndex) {
        let core = read_raw_register(handle).and_then(cachescope_arch::marker::core_of_id_value).filter(|&c| (c as usize) < self.vcpus);
        CURRENT.with(|c| c.set(core.unwrap_or(vcpu)));
    }

    fn fast_totals(&self) -> Totals {
        for cpu in 0..self.vcpus {
            self.credit_fetch(cpu);
        }
        self.fast.iter().fold(Totals::default(), |t, f| t + f.totals())
    }

    /// Credits the TB repeats counted inline since the last look to the last fetched TB;
    /// returns the execution counter's value.
    fn credit_fetch(&self, cpu: usize) -> u64 {
        let Some(b) = &self.board else { return 0 };
        let f = &self.fast[cpu];
        let execs = qemu_plugin_u64_get(b.execs, cpu as VCPUIndex);
        let new = execs.wrapping_sub(f.i_acc.load(Relaxed));
        if new != 0 && new < 1 << 62 {
            let lines = f.i_lines.load(Relaxed) * new;
            add(if f.i_mode.load(Relaxed) == 3 { &f.i_bypass } else { &f.i_hits }, lines);
        }
        f.i_acc.store(execs, Relaxed);
        execs
    }

    fn now(&self, core: &Core) -> Totals {
        core.early + core.model.as_ref().map(|m| m.totals()).unwrap_or_default() + self.fast_totals()
    }

    /// Applies deferred dirty bits and drops every shortcut (before any model change).
    fn settle(&self, core: &mut Core, drop_pages: bool) {
        for (cpu, f) in self.fast.iter().enumerate() {
            if f.d_dirty.swap(false, Relaxed) {
                if let Some(m) = core.model.as_mut() {
                    m.mark_l1d_dirty(cpu, f.d_slot.load(Relaxed) as usize, f.d_l1line.load(Relaxed), f.d_pc.load(Relaxed));
                }
            }
            if drop_pages {
                f.drop_all();
            } else {
                f.drop_data();
            }
            self.credit_fetch(cpu);
            if let Some(b) = &self.board {
                qemu_plugin_u64_set(b.last, cpu as VCPUIndex, 0);
            }
        }
    }

    /// The model, built (or rebuilt after new geometry markers) on first need. The check is
    /// inline in every access; the (re)build is out of line.
    #[inline]
    fn model<'c>(&self, core: &'c mut Core) -> &'c mut Model {
        if core.model.is_none() || (core.geometry_changed && self.settings.wants_guest_geometry()) {
            self.build_model(core);
        }
        core.model.as_mut().expect("built above")
    }

    /// Builds the model from the settings and the guest's geometry, carrying the counters and
    /// the trace over from the previous model, and emits the `model-geometry` records.
    #[cold]
    #[inline(never)]
    fn build_model(&self, core: &mut Core) {
        core.geometry_changed = false;
        let (h, origin) = match self.settings.resolve(&core.guest_geo) {
            Ok(x) => x,
            Err(e) => {
                core.warn(&format!("guest geometry unusable ({e}); using the rpi4 profile"));
                let mut s = self.settings.clone();
                s.profile = Some("rpi4".into());
                s.resolve(&GuestGeometry::default())
                    .unwrap_or_else(|_| (crate::geometry::Hierarchy::profile("rpi4").expect("built in"), "fallback".into()))
            }
        };
        let carried = core.model.as_ref().map(|m| m.totals()).unwrap_or_default();
        let carried_coh = core.model.as_ref().map(|m| m.coherence().to_vec()).unwrap_or_default();
        if core.model.is_some() {
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
            f.d_shift.store(u64::from(h.l1d.line_shift()), Relaxed);
        }
        let mut text = String::new();
        let lat = &h.latency;
        if !core.profile_emitted {
            core.profile_emitted = true;
            text += &report::untyped_line(
                Record::new(&cachescope_arch::record::MODEL_PROFILE)
                    .str("profile", self.settings.profile_name())
                    .u64("clock_mhz", u64::from(lat.clock_mhz))
                    .u64("memory_cycles", u64::from(lat.memory_cycles))
                    .f64("memory_ns", lat.ns(u64::from(lat.memory_cycles)), 2)
                    .str("hwpf", h.hwpf.kind.name())
                    .u64("hwpf_distance", u64::from(h.hwpf.distance))
                    .u64("hwpf_degree", u64::from(h.hwpf.degree))
                    .str("latency_ref", &lat.reference)
                    .str("hwpf_ref", &h.hwpf.reference),
            );
        }
        let l1 = [(Level::L1I, h.l1i), (Level::L1D, h.l1d)];
        let lower = h.lower.iter().enumerate().map(|(i, l)| ([Level::L2, Level::L3][i], l.geometry));
        for (k, (level, g)) in l1.into_iter().chain(lower).enumerate() {
            let sharing = if k < 2 { "private" } else { h.lower[k - 2].sharing.name() };
            let hit = u64::from(lat.hit_cycles[k.saturating_sub(1).min(2)]);
            text += &report::untyped_line(
                Record::new(&cachescope_arch::record::MODEL_GEOMETRY)
                    .str("level", level.name())
                    .u64("size", g.size())
                    .u64("line", u64::from(g.line))
                    .u64("sets", u64::from(g.sets))
                    .u64("ways", u64::from(g.ways))
                    .str("sharing", sharing)
                    .str("policy", h.policy.name())
                    .str("origin", &origin)
                    .u64("vcpus", self.vcpus as u64)
                    .u64("hit_cycles", hit)
                    .f64("hit_ns", lat.ns(hit), 2),
            );
        }
        core.emit(&text);
        core.model = Some(m);
    }

    // ---- data accesses --------------------------------------------------------------------

    /// A leader's callback: its own access, then its group's members (see `decode::plan_groups`).
    /// When the leader left its line in the shortcut and every member falls in that line, the
    /// members are hits of that line: counted in one step.
    fn mem_group(&self, vcpu: VCPUIndex, info: &MemoryInfo, vaddr: u64, write: bool, g: &Group) {
        self.mem(vcpu, info, vaddr, vaddr, write, Some(g.size), Hint { pc: g.pc, nt: false });
        let f = &self.fast[self.cpu(vcpu)];
        let shift = f.d_shift.load(Relaxed);
        let off = (vaddr & ((1 << shift) - 1)) as i64;
        if f.d_line.load(Relaxed) == vaddr >> shift && off + g.lo >= 0 && off + g.hi <= 1 << shift {
            match f.d_mode.load(Relaxed) {
                3 => return add(&f.d_bypass, g.members.len() as u64),
                2 => {
                    if g.stores && !f.d_dirty.load(Relaxed) {
                        f.d_pc.store(g.store_pc, Relaxed);
                        f.d_dirty.store(true, Relaxed);
                    }
                    return add(&f.d_hits, g.members.len() as u64);
                }
                _ if !g.stores => return add(&f.d_hits, g.members.len() as u64),
                _ => {}
            }
        }
        for (k, &(delta, size, store)) in g.members.iter().enumerate() {
            let hint = Hint { pc: g.pc + 4 * (k as u64 + 1), nt: false };
            self.mem(vcpu, info, vaddr, vaddr.wrapping_add(delta as u64), store, Some(size), hint);
        }
    }

    /// One data access at `vaddr`; `size` is `None` for the callback's own access (QEMU knows
    /// it). `translated` is the address QEMU translated for the callback: only an access in its
    /// page is asked of QEMU's TLB (anything else makes QEMU print "invalid use of
    /// qemu_plugin_get_hwaddr" into the console).
    #[allow(clippy::too_many_arguments)]
    fn mem(&self, vcpu: VCPUIndex, info: &MemoryInfo, translated: u64, vaddr: u64, write: bool, size: Option<u32>, hint: Hint) {
        let cpu = self.cpu(vcpu);
        let own = size.is_none();
        let f = &self.fast[cpu];
        let size_of = || size.unwrap_or_else(|| 1 << info.size_shift());
        if self.fast_on {
            let shift = f.d_shift.load(Relaxed);
            let off = vaddr & ((1 << shift) - 1);
            // Accesses are at most 16 bytes: only those near the line's end need their size.
            if vaddr >> shift == f.d_line.load(Relaxed) && (off + 16 <= 1 << shift || off + u64::from(size_of()) <= 1 << shift) {
                match f.d_mode.load(Relaxed) {
                    3 => return add(&f.d_bypass, 1),
                    2 => {
                        if write && !f.d_dirty.load(Relaxed) {
                            f.d_pc.store(hint.pc, Relaxed);
                            f.d_dirty.store(true, Relaxed);
                        }
                        return add(&f.d_hits, 1);
                    }
                    _ if !write => return add(&f.d_hits, 1),
                    _ => {}
                }
            }
        }
        let size = size_of();
        let vpn = vaddr >> PAGE_SHIFT;
        let same_page = self.fast_on && f.p_vpn.load(Relaxed) == vpn;
        let known = if same_page {
            let p = f.p_ppn.load(Relaxed);
            Some(((p & !(1 << 63)) << PAGE_SHIFT | (vaddr & ((1 << PAGE_SHIFT) - 1)), p >> 63 == 1, false))
        } else if vpn == translated >> PAGE_SHIFT {
            info.hwaddr(vaddr).map(|h| (h.hwaddr(), h.is_io(), true))
        } else {
            None
        };
        let mut core = self.lock();
        self.settle_own(&mut core, cpu);
        // Not in QEMU's TLB (a group member in another page): the learned translation.
        let (pa, io, learned) = known.unwrap_or_else(|| (core.guest.translate(vaddr).0, false, false));
        if learned {
            core.guest.learn(vaddr, pa);
            if self.fast_on {
                f.p_vpn.store(vpn, Relaxed);
                f.p_ppn.store(pa >> PAGE_SHIFT | u64::from(io) << 63, Relaxed);
                f.p_attr.store(NONE, Relaxed);
            }
        }
        let cached = if same_page { Attr::try_from(f.p_attr.load(Relaxed)).ok() } else { None };
        let attr = match cached {
            Some(a) => a,
            None => {
                let a = if io { Attr::Device } else { core.guest.data_attr(cpu, vaddr) };
                if self.fast_on && f.p_vpn.load(Relaxed) == vpn && core.guest.page_uniform(vaddr) {
                    f.p_attr.store(a as u64, Relaxed);
                }
                a
            }
        };
        let shift = f.d_shift.load(Relaxed);
        let single = (vaddr & ((1 << shift) - 1)) + u64::from(size) <= 1 << shift;
        if !attr.cacheable() {
            let lines = if single { 1 } else { 2 };
            let mut hazard = false;
            match core.model.as_mut() {
                Some(m) => {
                    for k in 0..lines {
                        m.data_hint(cpu, pa + k * (1 << shift), 1, write, attr, hint);
                    }
                    hazard = m.has_events();
                }
                None => core.early.levels[Level::L1D as usize].bypass += lines,
            }
            if hazard {
                self.hazards(&mut core, vaddr, hint.pc, own.then_some(info));
            }
            let ok = single && !hazard && core.guest.page_uniform(vaddr);
            self.remember_data(f, vaddr >> shift, 3, 0, 0, ok);
            return;
        }
        let m = self.model(&mut core);
        let shift = u64::from(m.config().l1d.line_shift());
        let slot = m.data_hint(cpu, pa, size, write, attr, hint);
        if m.has_events() {
            self.hazards(&mut core, vaddr, hint.pc, own.then_some(info));
            return f.drop_data();
        }
        let mode = if attr == Attr::NormalWriteBack { 2 } else { 1 };
        match slot {
            // A non-temporal fill sits at the end of the replacement order, so a repeated hit
            // is not a no-op (LRU promotes it): no shortcut after LDNP/STNP.
            Some(s) if !(hint.nt || write && attr == Attr::NormalWriteThrough) => {
                self.remember_data(f, vaddr >> shift, mode, s as u64, pa >> shift, true)
            }
            _ => f.drop_data(),
        }
    }

    fn remember_data(&self, f: &Fast, vline: u64, mode: u64, slot: u64, l1line: u64, ok: bool) {
        if self.fast_on && ok {
            f.d_mode.store(mode, Relaxed);
            f.d_slot.store(slot, Relaxed);
            f.d_l1line.store(l1line, Relaxed);
            f.d_line.store(vline, Relaxed);
        } else {
            f.drop_data();
        }
    }

    /// Before this vCPU's own model call: apply its deferred dirty bit.
    fn settle_own(&self, core: &mut Core, cpu: usize) {
        let f = &self.fast[cpu];
        // Only this vCPU's thread sets its flag: a plain load and store suffice.
        if f.d_dirty.load(Relaxed) {
            f.d_dirty.store(false, Relaxed);
            if let Some(m) = core.model.as_mut() {
                m.mark_l1d_dirty(cpu, f.d_slot.load(Relaxed) as usize, f.d_l1line.load(Relaxed), f.d_pc.load(Relaxed));
            }
        }
    }

    // ---- instruction fetches --------------------------------------------------------------

    /// A TB's instruction fetches through the model (its first execution after anything else),
    /// or those of one segment of it (the instructions after a marker, an IC invalidation or an
    /// SCTLR write are fetched right after that instruction: see the translation callback).
    ///
    /// One L1I access (or bypass) per line the TB's instructions lie in, except its first line
    /// when fetch only continues in the line the vCPU's previous TB ended in, same attribute,
    /// still in the L1I (an access there would be a hit on the most recent line of its set,
    /// changing nothing): so the counts do not depend on where QEMU ends a TB, which varies with
    /// the code TCG generates (the instrumentation of `fast=on` and `fast=off` differs, TCG
    /// halves a TB whose code outgrows its buffer, the host's backend sizes the code). A TB
    /// repeated right after itself thus fetches its lines again unless it lies in one line.
    ///
    /// `repeats_inline`: the TB's execution counter is bumped right after this call and its
    /// back-to-back repeats are counted inline (the shortcut); otherwise every execution calls.
    fn fetch(&self, vcpu: VCPUIndex, va: u64, bytes: u64, repeats_inline: bool) {
        let cpu = self.cpu(vcpu);
        let f = &self.fast[cpu];
        let mut core = self.lock();
        self.settle_own(&mut core, cpu);
        let execs = self.credit_fetch(cpu);
        let attr = core.guest.fetch_attr(cpu, va);
        let previous_end = f.i_end.load(Relaxed);
        // (mode, lines a repeat right after itself fetches: see above)
        let (mode, per_repeat) = if !attr.cacheable() {
            let shift = core.model.as_ref().map_or(6, |m| m.config().l1i.line_shift());
            let (first, last) = (va >> shift, (va + bytes - 1) >> shift);
            let first = first + u64::from(previous_end == first | BYPASS_LINE);
            f.i_end.store(last | BYPASS_LINE, Relaxed);
            match core.model.as_mut() {
                Some(m) => (first..=last).for_each(|l| m.fetch(cpu, l << shift, attr)),
                None => core.early.levels[Level::L1I as usize].bypass += (last + 1).saturating_sub(first),
            }
            let all = last - (va >> shift) + 1;
            (3, if all == 1 { 0 } else { all })
        } else {
            let shift = self.model(&mut core).config().l1i.line_shift();
            let lines = (va >> shift)..=((va + bytes - 1) >> shift);
            let Core { model, guest, .. } = &mut *core;
            let m = model.as_mut().expect("built above");
            // A TB lies in one page (AArch64 instructions never straddle one): translate its
            // page once.
            let page = va & !((1 << PAGE_SHIFT) - 1);
            let pa_page = guest.translate(page).0;
            let pa_of = |l: u64| -> u64 {
                let a = l << shift;
                if a & !((1 << PAGE_SHIFT) - 1) == page {
                    pa_page + (a - page)
                } else {
                    guest.translate(a).0
                }
            };
            let first_pa = pa_of(*lines.start());
            let continues = previous_end == first_pa >> shift && m.l1i_holds(cpu, first_pa);
            f.i_end.store(pa_of(*lines.end()) >> shift, Relaxed);
            let fetched = lines.clone().skip(usize::from(continues));
            for l in fetched.clone() {
                m.fetch(cpu, pa_of(l), attr);
            }
            let hazard = m.has_events();
            if self.board.is_some() && !lines.clone().all(|l| m.l1i_holds(cpu, pa_of(l))) && !self.fetch_warned.swap(true, Relaxed) {
                core.warn("a translation block does not fit the L1I at once (L1I way smaller than a page): repeats are counted as hits; use fast=off for exact counts");
            }
            if hazard {
                self.hazards(&mut core, va, va, None);
            }
            let all = lines.end() - lines.start() + 1;
            (1, if all == 1 { 0 } else { all })
        };
        if self.board.is_some() {
            f.i_lines.store(if repeats_inline { per_repeat } else { 0 }, Relaxed);
            f.i_mode.store(mode, Relaxed);
            // The inline counter is bumped right after this callback for this very execution.
            f.i_acc.store(execs.wrapping_add(u64::from(repeats_inline)), Relaxed);
        }
    }

    // ---- markers and maintenance ----------------------------------------------------------

    fn reg(&self, n: u8) -> u64 {
        if n == 31 {
            return 0; // XZR
        }
        let Some(regs) = self.regs.get() else { return 0 };
        regs.get(n as usize).and_then(read_u64).unwrap_or(0)
    }

    fn special(&self, vcpu: VCPUIndex, insn: Insn, pc: u64) {
        let cpu = self.cpu(vcpu);
        if let Insn::Prefetch(p) = insn {
            return self.prefetch(cpu, p, pc);
        }
        // Registers are read before the lock: reading them needs no model state.
        let (a, b, c, d, e) = match insn {
            Insn::Marker => (self.reg(9), self.reg(10), self.reg(11), self.reg(12), self.reg(13)),
            Insn::DcVa { rt, .. } | Insn::DcSetWay { rt, .. } | Insn::DcZva { rt } | Insn::IcIvau { rt } | Insn::MsrSctlr { rt } => {
                (self.reg(rt), 0, 0, 0, 0)
            }
            Insn::IcIallu { .. } | Insn::Tlbi | Insn::Prefetch(_) => (0, 0, 0, 0, 0),
        };
        let mut core = self.lock();
        let drop_pages = matches!(insn, Insn::Tlbi | Insn::MsrSctlr { .. } | Insn::Marker);
        self.settle(&mut core, drop_pages);
        if matches!(insn, Insn::DcVa { .. } | Insn::DcZva { .. }) && !core.maint.is_empty() {
            let shift = core.maint_shift();
            for r in core.maint.iter_mut().filter(|r| a.wrapping_sub(r.va) < r.len) {
                r.done.insert(a >> shift, ());
                r.last_pc = pc;
            }
        }
        if let (Insn::Marker, None) = (insn, core.ctr) {
            core.ctr = self.read_ctr();
            core.clidr = self.read_clidr();
            let (ctr, clidr) = (core.ctr, core.clidr);
            if let Some(m) = core.model.as_mut() {
                apply_id_regs(m, ctr, clidr);
            }
        }
        match insn {
            Insn::Marker => self.marker(&mut core, cpu, [a, b, c, d, e], pc),
            Insn::Tlbi => core.guest.forget_pages(),
            Insn::MsrSctlr { .. } => core.guest.set_sctlr(cpu, a),
            Insn::DcVa { op, point, .. } => {
                let pa = self.translate(&mut core, a);
                let dline = core.ctr.map_or(0, |c| u64::from(c.dmin_line()));
                self.model(&mut core).dc_by_pa_granule(cpu, op, point, pa, dline);
            }
            Insn::DcZva { .. } => {
                let pa = self.translate(&mut core, a);
                let attr = core.guest.data_attr(cpu, a);
                if attr.cacheable() {
                    self.model(&mut core).dc_zva(cpu, pa, attr);
                } else {
                    match core.model.as_mut() {
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
                let pa = self.translate(&mut core, a);
                let iline = core.ctr.map_or(0, |c| u64::from(c.imin_line()));
                self.model(&mut core).ic_invalidate_granule(cpu, pa, iline);
            }
            Insn::Prefetch(_) => {}
        }
        if core.model.as_ref().is_some_and(|m| m.has_events()) {
            let va = if matches!(insn, Insn::DcSetWay { .. }) { 0 } else { a };
            self.hazards(&mut core, va, pc, None);
        }
    }

    /// Drains the model's hazards into the deduplicated set, with the exposing access's VA and
    /// PC, the innermost open phase, and (for a data access) the value the emulator returned.
    fn hazards(&self, core: &mut Core, va: u64, pc: u64, info: Option<&MemoryInfo>) {
        let Some(m) = core.model.as_mut() else { return };
        let events = m.take_events();
        let current = info.and_then(|i| match i.value() {
            qemu_plugin::MemValue::U8(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U16(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U32(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U64(v) => Some(v),
            _ => None,
        });
        if core.quiet {
            core.quieted += events.len() as u64;
            return;
        }
        let phase = core.phases.current();
        for e in events {
            core.add_hazard(e, va, pc, phase.as_ref(), current);
        }
    }

    /// An identification register's value, if the guest CPU exposes it to plugins (printed with
    /// CS_MODEL_LIST_REGS).
    fn read_id_reg(r: Option<&RegisterDescriptor<'static>>, name: &str) -> Option<u64> {
        let v = read_u64(r?)?;
        if std::env::var_os("CS_MODEL_LIST_REGS").is_some() {
            eprintln!("{NAME}: {name} = {v:#x}");
        }
        Some(v)
    }

    /// CTR_EL0, if the guest CPU exposes it to plugins.
    fn read_ctr(&self) -> Option<Ctr> {
        Self::read_id_reg(self.sysregs.get()?.ctr.as_ref(), "CTR_EL0").map(|raw| Ctr { raw })
    }

    /// CLIDR_EL1, if the guest CPU exposes it to plugins.
    fn read_clidr(&self) -> Option<Clidr> {
        Self::read_id_reg(self.sysregs.get()?.clidr.as_ref(), "CLIDR_EL1").map(Clidr::decode)
    }

    /// A PRFM PLD/PST: its address from the registers (read in this exec callback, before the
    /// instruction), translated like a DC operand; nothing on non-cacheable memory.
    fn prefetch(&self, cpu: usize, p: crate::decode::Prefetch, pc: u64) {
        let va = match p.addr {
            PrfAddr::Imm { base, .. } => p.addr.effective(self.reg_or_sp(base), 0, pc),
            PrfAddr::Reg { base, index, .. } => p.addr.effective(self.reg_or_sp(base), self.reg(index), pc),
            PrfAddr::Literal(_) => p.addr.effective(0, 0, pc),
        };
        let mut core = self.lock();
        let attr = core.guest.data_attr(cpu, va);
        if !attr.cacheable() {
            return;
        }
        // Only this vCPU's data shortcut can be affected (a prefetch may evict its line).
        self.settle_own(&mut core, cpu);
        self.fast[cpu].drop_data();
        let pa = self.translate(&mut core, va);
        self.model(&mut core).prefetch(cpu, pa, p.level, p.strm, attr);
    }

    /// Register `n` as a base register: 31 is SP.
    fn reg_or_sp(&self, n: u8) -> u64 {
        if n != 31 {
            return self.reg(n);
        }
        let Some(regs) = self.regs.get() else { return 0 };
        regs.get(31).and_then(read_u64).unwrap_or(0)
    }

    fn translate(&self, core: &mut Core, va: u64) -> u64 {
        let (pa, how) = core.guest.translate(va);
        let k = match how {
            Translation::Learned => 0,
            Translation::Window => 1,
            Translation::Identity => 2,
        };
        core.stats.va[k] += 1;
        pa
    }

    fn set_way(&self, core: &mut Core, cpu: usize, op: MaintOp, operand: u64) {
        core.stats.setway_ops += 1;
        let level = ((operand >> 1) & 7) as u32 + 1;
        let guest = core.guest_geo.data_level(level);
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

    /// One marker; `x` = x9..x13.
    fn marker(&self, core: &mut Core, cpu: usize, x: [u64; 5], pc: u64) {
        core.stats.markers += 1;
        let marker = match protocol::parse(core.kernel_protocol, x) {
            Ok(m) => m,
            Err(e) => return core.warn(&format!("marker ignored: {e}")),
        };
        match marker {
            Marker::Hello { version } => {
                // Older versions are understood (their windows carry no PA); a newer one may
                // send markers this plugin misreads.
                if !(protocol::OLDEST..=protocol::VERSION).contains(&version) {
                    core.warn(&format!("kernel speaks marker protocol {version}, this plugin {}", protocol::VERSION));
                }
                core.kernel_protocol = version;
            }
            Marker::Geometry { level, kind, line, sets, ways } => {
                if core.guest_geo.report(level.into(), kind, line, sets, ways) {
                    core.geometry_changed = true;
                }
            }
            Marker::Window { va, len, attr, pa } => core.guest.window(va, len, attr, pa),
            Marker::Sctlr(v) => core.guest.set_sctlr(cpu, v),
            Marker::PhaseBegin { name_va, id } => {
                let name = read_name(name_va).unwrap_or_else(|| format!("phase-{id}"));
                let now = self.now(core);
                let coh = core.model.as_ref().map(|m| m.coherence().to_vec()).unwrap_or_default();
                core.phases.begin(id, name, now, coh);
                // The buffers the coherence counts single out: every window whose PA is known.
                let ranges = core
                    .guest
                    .windows()
                    .iter()
                    .filter_map(|w| w.offset.map(|o| (w.va.wrapping_add(o), w.va.wrapping_add(o).wrapping_add(w.len))))
                    .collect();
                if let Some(m) = core.model.as_mut().filter(|m| m.is_coherent()) {
                    m.set_buffers(ranges);
                }
            }
            Marker::Quiet(on) => core.quiet = on,
            Marker::MaintBegin { va, len } => core.maint.push(MaintRange { va, len, ..MaintRange::default() }),
            Marker::MaintEnd { va } => {
                let Some(i) = core.maint.iter().rposition(|r| r.va == va) else {
                    return core.warn(&format!("maintenance range end at {va:#x} without a begin"));
                };
                let r = core.maint.remove(i);
                if !self.settings.sanitize {
                    return;
                }
                let shift = core.maint_shift();
                let phase = core.phases.current();
                for gap in r.gaps(shift) {
                    let pa = core.guest.translate(gap).0 >> shift << shift;
                    let e = crate::sanitize::Event {
                        kind: HazardKind::MaintenanceGap,
                        pa,
                        access: "maint-end",
                        cause: "dc-by-va",
                        cause_pc: r.last_pc,
                    };
                    core.add_hazard(e, gap, pc, phase.as_ref(), None);
                }
            }
            Marker::PhaseEnd { id } => {
                let now = self.now(core);
                let coh = core.model.as_ref().filter(|m| m.is_coherent()).map(|m| m.coherence().to_vec()).unwrap_or_default();
                match core.phases.end(id, now, &coh) {
                    Ok(done) => {
                        let lower = core.lower_levels();
                        let lat = core.model.as_ref().map_or_else(crate::geometry::Latency::generic, |m| m.config().latency.clone());
                        let mut text = String::new();
                        for p in &done {
                            let records = (2 + lower + 1 + p.coherence.len()) as u64;
                            if core.stats.phase_records + records > PHASE_RECORD_LIMIT {
                                core.stats.phases_unreported += 1;
                            } else {
                                core.stats.phase_records += records;
                                text += &report::phase_lines(&p.name, p.id, &p.counts, lower);
                                text += &report::time_line(&p.name, p.id, &p.counts, &lat);
                                text += &report::coherence_lines(&p.name, p.id, &p.coherence);
                            }
                        }
                        for p in &done {
                            text += &report::hazard_lines(&core.hazards.take(Some(p.id)));
                        }
                        core.emit(&text);
                    }
                    Err(e) => core.warn(&e),
                }
            }
        }
    }

    fn at_exit(&self) {
        let mut core = self.lock();
        self.settle(&mut core, true);
        if let Some(m) = core.model.as_mut() {
            m.end_trace();
        }
        for name in core.phases.still_open() {
            core.warn(&format!("phase '{name}' never ended"));
        }
        if core.stats.phases_unreported > 0 {
            let n = core.stats.phases_unreported;
            core.stats.warnings += 1;
            let what = format!(
                "{n} phases have no model/model-time records: past {PHASE_RECORD_LIMIT} per-phase records (their counts are in model-total)"
            );
            let text = report::untyped_line(Record::new(&cachescope_arch::record::MODEL_WARNING).str("what", &what));
            core.emit(&text);
        }
        let now = self.now(&core);
        let lower = core.lower_levels();
        let mut text = report::hazard_lines(&core.hazards.take(None));
        text += &report::total_lines(&now, lower);
        if let Some(m) = core.model.as_ref().filter(|m| m.is_coherent()) {
            text += &report::coherence_total_lines(m.coherence());
        }
        text += &report::hazard_total_line(&core.hazards, self.settings.sanitize);
        text += &report::untyped_line(
            Record::new(&cachescope_arch::record::MODEL_RUN)
                .u64("protocol", protocol::VERSION)
                .u64("markers", core.stats.markers)
                .u64("phases", core.phases.finished())
                .u64("va_learned", core.stats.va[0])
                .u64("va_window", core.stats.va[1])
                .u64("va_identity", core.stats.va[2])
                .u64("setway_ops", core.stats.setway_ops)
                .u64("warnings", core.stats.warnings)
                .bool("fast", self.fast_on),
        );
        core.emit(&text);
    }
}

#[inline]
fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed) + n, Relaxed);
}

extern "C" {
    fn g_byte_array_new() -> *mut qemu_plugin::sys::GByteArray;
    fn g_byte_array_free(array: *mut qemu_plugin::sys::GByteArray, free_segment: bool) -> *mut u8;
    fn g_byte_array_set_size(array: *mut qemu_plugin::sys::GByteArray, length: u32) -> *mut qemu_plugin::sys::GByteArray;
    fn g_array_free(array: *mut qemu_plugin::sys::GArray, free_segment: bool) -> *mut u8;
}

/// Reads a NUL-terminated phase name (≤ `PHASE_NAME_MAX` bytes) from guest memory at `va`.
fn read_name(va: u64) -> Option<String> {
    // The name and its NUL, but never across the page end (the next page may be unmapped).
    let want = cachescope_arch::marker::PHASE_NAME_MAX as u64 + 1;
    let len = want.min((1 << PAGE_SHIFT) - (va & ((1 << PAGE_SHIFT) - 1))) as usize;
    // SAFETY: a GByteArray from glib's own constructor (QEMU resizes it), read only within its
    // length, freed with its segment. Called from a vCPU callback, as the API requires.
    let bytes = unsafe {
        let arr = g_byte_array_new();
        let ok = qemu_plugin::sys::qemu_plugin_read_memory_vaddr(va, arr, len);
        let v = if ok { std::slice::from_raw_parts((*arr).data, (*arr).len as usize).to_vec() } else { Vec::new() };
        g_byte_array_free(arr, true);
        if !ok {
            return None;
        }
        v
    };
    let end = bytes.iter().position(|&b| b == 0)?;
    String::from_utf8(bytes[..end].to_vec()).ok().filter(|s| !s.is_empty())
}

/// The plugin instance QEMU's loader sees.
#[derive(Default)]
struct CacheModel {
    state: Option<Arc<State>>,
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

fn fail(msg: &str) -> ! {
    eprintln!("{NAME}: error: {msg}");
    std::process::exit(2)
}

impl Register for CacheModel {
    fn register(&mut self, id: PluginId, args: &Args, info: &Info) -> qemu_plugin::Result<()> {
        let settings = Settings::parse(&args.raw).unwrap_or_else(|e| fail(&e));
        let Some(system) = &info.system else { fail("system emulation only (physical addresses are needed)") };
        let vcpus = system.max_vcpus.max(system.smp_vcpus).max(1) as usize;
        let out: Box<dyn Write + Send> = match &settings.out {
            Some(path) => Box::new(std::fs::File::create(path).unwrap_or_else(|e| fail(&format!("cannot create '{path}': {e}")))),
            None => Box::new(std::io::stderr()),
        };
        let core = Core {
            model: None,
            early: Totals::default(),
            geometry_changed: false,
            guest: Guest::new(),
            guest_geo: GuestGeometry::default(),
            phases: Phases::default(),
            stats: Stats::default(),
            kernel_protocol: 0,
            profile_emitted: false,
            hazards: Hazards::with_limit(settings.hazard_limit),
            maint: Vec::new(),
            ctr: None,
            clidr: None,
            quiet: false,
            quieted: 0,
            out,
        };
        if !settings.wants_guest_geometry() {
            // Validate fixed geometry now, so a bad combination fails at start.
            settings.resolve(&GuestGeometry::default()).unwrap_or_else(|e| fail(&e));
        }
        let fast_on = settings.fast && settings.trace.is_none() && vcpus == 1;
        let board = fast_on.then(|| {
            // SAFETY: a scoreboard of two u64 per vCPU, owned by QEMU for the plugin's lifetime.
            let score = unsafe { qemu_plugin::sys::qemu_plugin_scoreboard_new(16) };
            let entry = |offset| PluginU64 { score, offset };
            // `last` starts at 0, which no TB key equals (keys start at 1).
            Board { last: entry(0), execs: entry(8) }
        });
        let state = Arc::new(State {
            settings,
            board,
            fetch_warned: AtomicBool::new(false),
            vcpus,
            fast_on,
            fast: (0..vcpus).map(|_| Fast::new()).collect(),
            core: SpinLock::new(core),
            regs: OnceLock::new(),
            sysregs: OnceLock::new(),
            next_tb: AtomicU64::new(1),
        });
        if !state.settings.wants_guest_geometry() {
            let mut c = state.lock();
            state.model(&mut c);
        }
        let s = state.clone();
        qemu_plugin_register_atexit_cb(id, move |_| s.at_exit())?;
        self.state = Some(state);
        Ok(())
    }
}

impl HasCallbacks for CacheModel {
    fn on_vcpu_init(&mut self, _id: PluginId, _vcpu: VCPUIndex) -> qemu_plugin::Result<()> {
        if let Some(state) = &self.state {
            if state.regs.get().is_none() {
                let all = qemu_plugin_get_registers()?;
                let xs: Vec<RegisterDescriptor<'static>> = (0..31)
                    .map(|n| format!("x{n}"))
                    .chain(["sp".to_string()])
                    .filter_map(|n| all.iter().find(|r| r.name == n).cloned())
                    .collect();
                if xs.len() != 32 {
                    fail("the guest CPU does not expose registers x0..x30 and sp to plugins");
                }
                let _ = state.regs.set(xs);
                if std::env::var_os("CS_MODEL_LIST_REGS").is_some() {
                    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
                    eprintln!("{NAME}: {} registers: {}", names.len(), names.join(" "));
                }
                let find = |n: &str| all.iter().find(|r| r.name.eq_ignore_ascii_case(n)).cloned();
                let core_id = if state.vcpus > 1 { raw_register("TPIDR_EL1") } else { None };
                let clidr = find("CLIDR_EL1").or_else(|| find("CLIDR"));
                let _ = state.sysregs.set(SysRegs { ctr: find("CTR_EL0"), clidr, core_id });
            }
        }
        Ok(())
    }

    fn on_translation_block_translate(&mut self, _id: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else { return Ok(()) };
        let start = tb.vaddr();
        let mut end = start;
        let words: Vec<Option<u32>> = tb
            .instructions()
            .map(|insn| {
                end = insn.vaddr() + insn.size() as u64;
                let mut word = [0u8; 4];
                (insn.read_data(&mut word) == 4).then(|| u32::from_le_bytes(word))
            })
            .collect();
        // Fetch segments: the TB's instructions are fetched at its start, but those after an
        // instruction that changes what a fetch means (a marker: phase attribution; IC
        // invalidation; an SCTLR write), and those of each further instruction line
        // ([`FETCH_SEGMENT_SHIFT`]), are fetched right before the first of them executes, by a
        // callback on that instruction registered before its own callbacks. So the counts do not
        // depend on where QEMU ends TBs (see `fetch`), and a TB left early by a synchronous
        // exception (a faulting load, a trapped register access) fetches no line it never reached,
        // as one instruction per TB would not.
        let mut breaks: Vec<u64> = tb
            .instructions()
            .zip(&words)
            .filter(|(_, w)| {
                matches!(w.and_then(decode), Some(Insn::Marker | Insn::IcIallu { .. } | Insn::IcIvau { .. } | Insn::MsrSctlr { .. }))
            })
            .map(|(insn, _)| insn.vaddr() + insn.size() as u64)
            .chain(tb.instructions().map(|insn| insn.vaddr()).filter(|&va| va != start && va & ((1 << FETCH_SEGMENT_SHIFT) - 1) == 0))
            .filter(|&next| next < end)
            .collect();
        breaks.sort_unstable();
        breaks.dedup();
        let first_end = breaks.first().copied().unwrap_or(end);
        for (k, &seg_start) in breaks.iter().enumerate() {
            let seg_end = breaks.get(k + 1).copied().unwrap_or(end);
            if let Some(insn) = tb.instructions().find(|i| i.vaddr() == seg_start) {
                let s = state.clone();
                insn.register_execute_callback_flags(
                    move |vcpu| s.fetch(vcpu, seg_start, seg_end - seg_start, false),
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
        }
        // Batching (part of the shortcut): one callback per run of loads/stores on one base.
        let mems: Vec<_> = words.iter().map(|w| w.and_then(decode_mem_imm)).collect();
        let roles = if state.fast_on { plan_groups(&mems) } else { vec![Role::Single; words.len()] };
        for (((insn, word), role), mem) in tb.instructions().zip(&words).zip(roles).zip(mems) {
            let pc = insn.vaddr();
            if let Some(d) = word.and_then(decode) {
                let s = state.clone();
                insn.register_execute_callback_flags(move |vcpu| s.special(vcpu, d, pc), CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
            }
            let nt = word.is_some_and(is_non_temporal_pair);
            let no_regs = CallbackFlags::QEMU_PLUGIN_CB_NO_REGS;
            match role {
                Role::Member => {}
                Role::Leader(members) => {
                    let members = Group::new(mem.map_or(8, |m| m.size), members, pc);
                    // One callback per direction, so the direction is a constant rather than a
                    // query to QEMU; QEMU emits only the one matching the access.
                    let members = Arc::new(members);
                    for (rw, write) in [(MemRW::QEMU_PLUGIN_MEM_R, false), (MemRW::QEMU_PLUGIN_MEM_W, true)] {
                        let (s, g) = (state.clone(), members.clone());
                        insn.register_memory_access_callback_flags(
                            move |vcpu, info, vaddr| s.mem_group(vcpu, &info, vaddr, write, &g),
                            rw,
                            no_regs,
                        );
                    }
                }
                Role::Single => {
                    let s = state.clone();
                    let hint = Hint { pc, nt };
                    insn.register_memory_access_callback_flags(
                        move |vcpu, info, vaddr| s.mem(vcpu, &info, vaddr, vaddr, false, None, hint),
                        MemRW::QEMU_PLUGIN_MEM_R,
                        no_regs,
                    );
                    let s = state.clone();
                    insn.register_memory_access_callback_flags(
                        move |vcpu, info, vaddr| s.mem(vcpu, &info, vaddr, vaddr, true, None, hint),
                        MemRW::QEMU_PLUGIN_MEM_W,
                        no_regs,
                    );
                }
            }
        }
        if end > start {
            // The TB's first segment: with the shortcut, a conditional callback and inline
            // counters count back-to-back repeats without a call, unless later segments exist
            // (they are callbacks anyway): then it is always called and the execution key is
            // reset, so that the next TB is never taken for a repeat.
            let repeats_inline = state.board.is_some() && breaks.is_empty();
            let s = state.clone();
            let fetch = move |vcpu| s.fetch(vcpu, start, first_end - start, repeats_inline);
            match (&state.board, state.core_id_register()) {
                (Some(b), _) if repeats_inline => {
                    let key = state.next_tb.fetch_add(1, Relaxed);
                    tb.register_conditional_execute_callback_flags(
                        fetch,
                        CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                        PluginCondition::QEMU_PLUGIN_COND_NE,
                        b.last,
                        key,
                    );
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb.clone(), PluginOp::QEMU_PLUGIN_INLINE_ADD_U64, b.execs, 1);
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, PluginOp::QEMU_PLUGIN_INLINE_STORE_U64, b.last, key);
                }
                (Some(b), _) => {
                    tb.register_execute_callback_flags(fetch, CallbackFlags::QEMU_PLUGIN_CB_NO_REGS);
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, PluginOp::QEMU_PLUGIN_INLINE_STORE_U64, b.last, NO_TB);
                }
                // More than one vCPU (no shortcut): the TB's first callback learns which core runs.
                (None, Some(handle)) => {
                    let s = state.clone();
                    let identify_and_fetch = move |vcpu| {
                        s.identify(handle, vcpu);
                        fetch(vcpu)
                    };
                    tb.register_execute_callback_flags(identify_and_fetch, CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
                }
                (None, None) => tb.register_execute_callback_flags(fetch, CallbackFlags::QEMU_PLUGIN_CB_NO_REGS),
            }
        }
        Ok(())
    }
}

register!(CacheModel::default());
