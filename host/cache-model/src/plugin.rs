//! The QEMU glue (system mode, plugin API v4): translation-time decoding, per-access memory
//! callbacks, per-TB instruction-fetch callbacks, marker and maintenance callbacks with register
//! access, and the records at phase ends and at exit.
//!
//! # Speed
//! Every guest load/store calls [`State::mem`]. With one vCPU, a per-vCPU shortcut handles the
//! common case without the lock or the model: an access to the same L1D line as the previous
//! data access of that vCPU is an L1D hit that changes no replacement state (the line is already
//! the most recent of its set), so it only counts (a write-back write defers its dirty bit to the
//! next model call). Likewise a TB executed again right after itself hits the same L1I lines,
//! and the VA→PA page of the previous access is reused without asking QEMU. Anything that could
//! change these facts (maintenance, markers, TLBI, SCTLR writes, a geometry change) drops the
//! shortcut. `fast=off` disables it; the counts are identical either way (the end-to-end test
//! checks this).

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::{
    qemu_plugin_get_registers, qemu_plugin_register_atexit_cb, register, CallbackFlags, HasCallbacks, MemRW, MemoryInfo, PluginId,
    RegisterDescriptor, Register, TranslationBlock, VCPUIndex,
};

use crate::config::{GuestGeometry, Settings};
use crate::decode::{decode, decode_set_way, guest_to_model_slots, Insn};
use crate::guest::{Guest, Translation};
use crate::model::{Attr, Level, MaintOp, Model, Totals};
use crate::protocol::{self, Marker};
use crate::report::{self, Phases, Record};

const NAME: &str = "cachescope-cache-model";
const NONE: u64 = u64::MAX;
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
    d_hits: AtomicU64,
    d_bypass: AtomicU64,
    /// VA page of the previous translated access and its PA page | io flag (bit 63).
    p_vpn: AtomicU64,
    p_ppn: AtomicU64,
    /// TB key of the previous fetch (NONE = no shortcut), its line count and mode (1 hit, 3 bypass).
    i_key: AtomicU64,
    i_lines: AtomicU64,
    i_mode: AtomicU64,
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
        f.i_key.store(NONE, Relaxed);
        f.d_shift.store(6, Relaxed);
        f
    }

    fn drop_data(&self) {
        self.d_line.store(NONE, Relaxed);
    }

    fn drop_all(&self) {
        self.d_line.store(NONE, Relaxed);
        self.p_vpn.store(NONE, Relaxed);
        self.i_key.store(NONE, Relaxed);
    }

    fn totals(&self) -> Totals {
        let mut t = Totals::default();
        let d = self.d_hits.load(Relaxed);
        t.levels[Level::L1D as usize].accesses = d;
        t.levels[Level::L1D as usize].hits = d;
        t.levels[Level::L1D as usize].bypass = self.d_bypass.load(Relaxed);
        let i = self.i_hits.load(Relaxed);
        t.levels[Level::L1I as usize].accesses = i;
        t.levels[Level::L1I as usize].hits = i;
        t.levels[Level::L1I as usize].bypass = self.i_bypass.load(Relaxed);
        t
    }
}

/// Run statistics for the `model-run` record.
#[derive(Default)]
struct Stats {
    markers: u64,
    va: [u64; 3],
    setway_ops: u64,
    warnings: u64,
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
    out: Box<dyn Write + Send>,
}

struct State {
    settings: Settings,
    vcpus: usize,
    fast_on: bool,
    fast: Box<[Fast]>,
    core: Mutex<Core>,
    regs: OnceLock<Vec<RegisterDescriptor<'static>>>,
    next_tb: AtomicU64,
}

impl Core {
    fn emit(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    fn warn(&mut self, what: &str) {
        self.stats.warnings += 1;
        let line = Record::new("model-warning").str("what", what).line();
        self.emit(&line);
    }

    fn lower_levels(&self) -> usize {
        self.model.as_ref().map_or(0, |m| m.lower_levels())
    }
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Core> {
        // A panic cannot happen while the lock is held (no callback panics); if one did, the
        // counts are still the best there is.
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fast_totals(&self) -> Totals {
        self.fast.iter().fold(Totals::default(), |t, f| t + f.totals())
    }

    fn now(&self, core: &Core) -> Totals {
        core.early + core.model.as_ref().map(|m| m.totals()).unwrap_or_default() + self.fast_totals()
    }

    /// Applies deferred dirty bits and drops every shortcut (before any model change).
    fn settle(&self, core: &mut Core, drop_pages: bool) {
        for (cpu, f) in self.fast.iter().enumerate() {
            if f.d_dirty.swap(false, Relaxed) {
                if let Some(m) = core.model.as_mut() {
                    m.mark_l1d_dirty(cpu, f.d_slot.load(Relaxed) as usize, f.d_l1line.load(Relaxed));
                }
            }
            if drop_pages {
                f.drop_all();
            } else {
                f.drop_data();
                f.i_key.store(NONE, Relaxed);
            }
        }
    }

    /// The model, built (or rebuilt after new geometry markers) on first need.
    fn model<'c>(&self, core: &'c mut Core) -> &'c mut Model {
        if core.model.is_none() || (core.geometry_changed && self.settings.wants_guest_geometry()) {
            core.geometry_changed = false;
            let (h, origin) = match self.settings.resolve(&core.guest_geo) {
                Ok(x) => x,
                Err(e) => {
                    core.warn(&format!("guest geometry unusable ({e}); using the rpi4 profile"));
                    let mut s = self.settings.clone();
                    s.profile = Some("rpi4".into());
                    s.resolve(&GuestGeometry::default()).unwrap_or_else(|_| (crate::geometry::Hierarchy::profile("rpi4").expect("built in"), "fallback".into()))
                }
            };
            let carried = core.model.as_ref().map(|m| m.totals()).unwrap_or_default();
            if core.model.is_some() {
                core.warn("geometry changed after the caches were in use: the caches start empty again");
            }
            let mut m = Model::new(&h, self.vcpus);
            m.set_totals(carried);
            for f in self.fast.iter() {
                f.d_shift.store(u64::from(h.l1d.line_shift()), Relaxed);
            }
            let mut text = String::new();
            let l1 = [(Level::L1I, h.l1i), (Level::L1D, h.l1d)];
            let lower = h.lower.iter().enumerate().map(|(i, l)| ([Level::L2, Level::L3][i], l.geometry));
            for (k, (level, g)) in l1.into_iter().chain(lower).enumerate() {
                let sharing = if k < 2 { "private" } else { h.lower[k - 2].sharing.name() };
                text += &Record::new("model-geometry")
                    .str("level", level.name())
                    .u64("size", g.size())
                    .u64("line", u64::from(g.line))
                    .u64("sets", u64::from(g.sets))
                    .u64("ways", u64::from(g.ways))
                    .str("sharing", sharing)
                    .str("policy", h.policy.name())
                    .str("origin", &origin)
                    .u64("vcpus", self.vcpus as u64)
                    .line();
            }
            core.emit(&text);
            core.model = Some(m);
        }
        core.model.as_mut().expect("built above")
    }

    // ---- data accesses --------------------------------------------------------------------

    fn mem(&self, vcpu: VCPUIndex, info: &MemoryInfo, vaddr: u64, write: bool) {
        let cpu = vcpu as usize;
        let f = &self.fast[cpu];
        if self.fast_on {
            let shift = f.d_shift.load(Relaxed);
            let off = vaddr & ((1 << shift) - 1);
            // Accesses are at most 16 bytes: only those near the line's end need their size.
            if vaddr >> shift == f.d_line.load(Relaxed) && (off + 16 <= 1 << shift || off + (1u64 << info.size_shift()) <= 1 << shift) {
                match f.d_mode.load(Relaxed) {
                    3 => return add(&f.d_bypass, 1),
                    2 => {
                        if write {
                            f.d_dirty.store(true, Relaxed);
                        }
                        return add(&f.d_hits, 1);
                    }
                    _ if !write => return add(&f.d_hits, 1),
                    _ => {}
                }
            }
        }
        let size = 1u32 << info.size_shift();
        let vpn = vaddr >> PAGE_SHIFT;
        let (pa, io, learned) = if self.fast_on && f.p_vpn.load(Relaxed) == vpn {
            let p = f.p_ppn.load(Relaxed);
            ((p & !(1 << 63)) << PAGE_SHIFT | (vaddr & ((1 << PAGE_SHIFT) - 1)), p >> 63 == 1, false)
        } else {
            match info.hwaddr(vaddr) {
                Some(h) => (h.hwaddr(), h.is_io(), true),
                None => (vaddr, false, false),
            }
        };
        let mut core = self.lock();
        self.settle_own(&mut core, cpu);
        if learned {
            core.guest.learn(vaddr, pa);
            if self.fast_on {
                f.p_vpn.store(vpn, Relaxed);
                f.p_ppn.store(pa >> PAGE_SHIFT | u64::from(io) << 63, Relaxed);
            }
        }
        let attr = if io { Attr::Device } else { core.guest.data_attr(vaddr) };
        let shift = f.d_shift.load(Relaxed);
        let single = (vaddr & ((1 << shift) - 1)) + u64::from(size) <= 1 << shift;
        if !attr.cacheable() {
            let lines = if single { 1 } else { 2 };
            match core.model.as_mut() {
                Some(m) => {
                    for k in 0..lines {
                        m.data(cpu, pa + k * (1 << shift), 1, write, attr);
                    }
                }
                None => core.early.levels[Level::L1D as usize].bypass += lines,
            }
            self.remember_data(f, vaddr >> shift, 3, 0, 0, single && core.guest.page_uniform(vaddr));
            return;
        }
        let m = self.model(&mut core);
        let shift = u64::from(m.config().l1d.line_shift());
        let slot = m.data(cpu, pa, size, write, attr);
        let mode = if attr == Attr::WriteBack { 2 } else { 1 };
        match slot {
            Some(s) if !(write && attr == Attr::WriteThrough) => self.remember_data(f, vaddr >> shift, mode, s as u64, pa >> shift, true),
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
        if f.d_dirty.swap(false, Relaxed) {
            if let Some(m) = core.model.as_mut() {
                m.mark_l1d_dirty(cpu, f.d_slot.load(Relaxed) as usize, f.d_l1line.load(Relaxed));
            }
        }
    }

    // ---- instruction fetches --------------------------------------------------------------

    fn fetch(&self, vcpu: VCPUIndex, key: u64, va: u64, bytes: u64) {
        let cpu = vcpu as usize;
        let f = &self.fast[cpu];
        if self.fast_on && f.i_key.load(Relaxed) == key {
            let n = f.i_lines.load(Relaxed);
            return add(if f.i_mode.load(Relaxed) == 3 { &f.i_bypass } else { &f.i_hits }, n);
        }
        let mut core = self.lock();
        self.settle_own(&mut core, cpu);
        let attr = core.guest.fetch_attr(va);
        let uniform = core.guest.page_uniform(va) && core.guest.page_uniform(va + bytes - 1);
        if !attr.cacheable() {
            let shift = core.model.as_ref().map_or(6, |m| m.config().l1i.line_shift());
            let n = ((va + bytes - 1) >> shift) - (va >> shift) + 1;
            match core.model.as_mut() {
                Some(m) => (0..n).for_each(|k| m.fetch(cpu, ((va >> shift) + k) << shift, attr)),
                None => core.early.levels[Level::L1I as usize].bypass += n,
            }
            return self.remember_fetch(f, key, n, 3, uniform);
        }
        let lines: Vec<u64> = {
            let shift = self.model(&mut core).config().l1i.line_shift();
            ((va >> shift)..=((va + bytes - 1) >> shift)).map(|l| l << shift).collect()
        };
        let pas: Vec<u64> = lines.iter().map(|&l| core.guest.translate(l).0).collect();
        let m = self.model(&mut core);
        for &pa in &pas {
            m.fetch(cpu, pa, attr);
        }
        let resident = pas.iter().all(|&pa| m.l1i_holds(cpu, pa));
        self.remember_fetch(f, key, pas.len() as u64, 1, uniform && resident);
    }

    fn remember_fetch(&self, f: &Fast, key: u64, n: u64, mode: u64, ok: bool) {
        if self.fast_on && ok {
            f.i_lines.store(n, Relaxed);
            f.i_mode.store(mode, Relaxed);
            f.i_key.store(key, Relaxed);
        } else {
            f.i_key.store(NONE, Relaxed);
        }
    }

    // ---- markers and maintenance ----------------------------------------------------------

    fn reg(&self, n: u8) -> u64 {
        if n == 31 {
            return 0; // XZR
        }
        let Some(regs) = self.regs.get() else { return 0 };
        regs.get(n as usize).and_then(|r| r.read().ok()).map_or(0, |bytes| bytes.iter().take(8).rev().fold(0, |v, &b| v << 8 | u64::from(b)))
    }

    fn special(&self, vcpu: VCPUIndex, insn: Insn) {
        let cpu = vcpu as usize;
        // Registers are read before the lock: reading them needs no model state.
        let (a, b, c, d) = match insn {
            Insn::Marker => (self.reg(9), self.reg(10), self.reg(11), self.reg(12)),
            Insn::DcVa { rt, .. } | Insn::DcSetWay { rt, .. } | Insn::DcZva { rt } | Insn::IcIvau { rt } | Insn::MsrSctlr { rt } => (self.reg(rt), 0, 0, 0),
            Insn::IcIallu { .. } | Insn::Tlbi => (0, 0, 0, 0),
        };
        let mut core = self.lock();
        let drop_pages = matches!(insn, Insn::Tlbi | Insn::MsrSctlr { .. } | Insn::Marker);
        self.settle(&mut core, drop_pages);
        match insn {
            Insn::Marker => self.marker(&mut core, a, b, c, d),
            Insn::Tlbi => core.guest.forget_pages(),
            Insn::MsrSctlr { .. } => core.guest.set_sctlr(a),
            Insn::DcVa { op, point, .. } => {
                let pa = self.translate(&mut core, a);
                self.model(&mut core).dc_by_pa(cpu, op, point, pa);
            }
            Insn::DcZva { .. } => {
                let pa = self.translate(&mut core, a);
                let attr = core.guest.data_attr(a);
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
                self.model(&mut core).ic_invalidate_pa(pa);
            }
        }
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

    fn marker(&self, core: &mut Core, x9: u64, x10: u64, x11: u64, x12: u64) {
        core.stats.markers += 1;
        let marker = match protocol::parse(x9, x10, x11, x12) {
            Ok(m) => m,
            Err(e) => return core.warn(&format!("marker ignored: {}", e.0)),
        };
        match marker {
            Marker::Hello { version } => {
                if version != protocol::VERSION {
                    core.warn(&format!("kernel speaks marker protocol {version}, this plugin {}", protocol::VERSION));
                }
            }
            Marker::Geometry { level, kind, line, sets, ways } => {
                core.guest_geo.report(level, kind, line, sets, ways);
                core.geometry_changed = true;
            }
            Marker::Window { va, len, attr } => core.guest.window(va, len, attr),
            Marker::Sctlr(v) => core.guest.set_sctlr(v),
            Marker::PhaseBegin { name_va, id } => {
                let name = read_name(name_va).unwrap_or_else(|| format!("phase-{id}"));
                let now = self.now(core);
                core.phases.begin(id, name, now);
            }
            Marker::PhaseEnd { id } => {
                let now = self.now(core);
                match core.phases.end(id, now) {
                    Ok(done) => {
                        let lower = core.lower_levels();
                        let text: String = done.iter().map(|p| report::phase_lines(&p.name, p.id, &p.counts, lower)).collect();
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
        for name in core.phases.still_open() {
            core.warn(&format!("phase '{name}' never ended"));
        }
        let now = self.now(&core);
        let lower = core.lower_levels();
        let mut text = report::total_lines(&now, lower);
        text += &Record::new("model-run")
            .u64("protocol", protocol::VERSION)
            .u64("markers", core.stats.markers)
            .u64("phases", core.phases.finished())
            .u64("va_learned", core.stats.va[0])
            .u64("va_window", core.stats.va[1])
            .u64("va_identity", core.stats.va[2])
            .u64("setway_ops", core.stats.setway_ops)
            .u64("warnings", core.stats.warnings)
            .bool("fast", self.fast_on)
            .line();
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
}

/// Reads a NUL-terminated name (≤ 63 bytes) from guest memory at `va`.
fn read_name(va: u64) -> Option<String> {
    // Up to 64 bytes, but never across the page end (the next page may be unmapped).
    let len = (64u64).min((1 << PAGE_SHIFT) - (va & ((1 << PAGE_SHIFT) - 1))) as usize;
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
            out,
        };
        if !settings.wants_guest_geometry() {
            // Validate fixed geometry now, so a bad combination fails at start.
            settings.resolve(&GuestGeometry::default()).unwrap_or_else(|e| fail(&e));
        }
        let fast_on = settings.fast && vcpus == 1;
        let state = Arc::new(State {
            settings,
            vcpus,
            fast_on,
            fast: (0..vcpus).map(|_| Fast::new()).collect(),
            core: Mutex::new(core),
            regs: OnceLock::new(),
            next_tb: AtomicU64::new(0),
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
                let xs: Vec<RegisterDescriptor<'static>> = (0..31).filter_map(|n| all.iter().find(|r| r.name == format!("x{n}")).cloned()).collect();
                if xs.len() != 31 {
                    fail("the guest CPU does not expose registers x0..x30 to plugins");
                }
                let _ = state.regs.set(xs);
            }
        }
        Ok(())
    }

    fn on_translation_block_translate(&mut self, _id: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else { return Ok(()) };
        let start = tb.vaddr();
        let mut end = start;
        for insn in tb.instructions() {
            end = insn.vaddr() + insn.size() as u64;
            let mut word = [0u8; 4];
            if insn.read_data(&mut word) == 4 {
                if let Some(d) = decode(u32::from_le_bytes(word)) {
                    let s = state.clone();
                    insn.register_execute_callback_flags(move |vcpu| s.special(vcpu, d), CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
                }
            }
            let s = state.clone();
            insn.register_memory_access_callback_flags(move |vcpu, info, vaddr| s.mem(vcpu, &info, vaddr, false), MemRW::QEMU_PLUGIN_MEM_R, CallbackFlags::QEMU_PLUGIN_CB_NO_REGS);
            let s = state.clone();
            insn.register_memory_access_callback_flags(move |vcpu, info, vaddr| s.mem(vcpu, &info, vaddr, true), MemRW::QEMU_PLUGIN_MEM_W, CallbackFlags::QEMU_PLUGIN_CB_NO_REGS);
        }
        if end > start {
            let key = state.next_tb.fetch_add(1, Relaxed);
            let s = state.clone();
            tb.register_execute_callback_flags(move |vcpu| s.fetch(vcpu, key, start, end - start), CallbackFlags::QEMU_PLUGIN_CB_NO_REGS);
        }
        Ok(())
    }
}

register!(CacheModel::default());
