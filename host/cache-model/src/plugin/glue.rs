//! The QEMU glue (system mode, plugin API v4), compiled out of unit tests (its `qemu_plugin_*`
//! symbols exist only inside QEMU): registration, the translation callback turning a
//! [`Plan`](super::tb_plan::Plan) into callbacks, the scoreboard, register and guest-memory reads.
//! Every decision is the [`Engine`]'s.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, RwLock};

use qemu_plugin::install::{Args, Info};
use qemu_plugin::{
    qemu_plugin_register_atexit_cb, qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu, register, CallbackFlags, HasCallbacks, MemRW,
    MemoryInfo, PluginCondition, PluginId, PluginOp, PluginU64, Register, TranslationBlock, VCPUIndex,
};

use cachescope_arch::cache::id::{Clidr, Ctr};

use crate::config::Settings;
use crate::guest::SysReg;
use crate::walk::PhysMem;

use super::access::TbAt;
use super::engine::{fail, inline_repeats_allowed, Engine, Host, MemAccess, NO_TB, SP};
use super::ram::{mapping_containing, RamMap};
use super::shortcut::{FetchMemo, PAGE_SHIFT};
use super::tb_plan::{plan, Access, TbInsn};
use super::NAME;

/// Per-vCPU scoreboard entries of the fetch shortcut: a TB executed right after itself is a
/// repeat whose L1I lines all hit (see the module docs). Each TB, in this order: a conditional
/// callback when `last != key` (the model), an inline `execs += 1`, an inline `last = key`.
/// Repeats therefore cost no callback; they are credited from `execs` when anything reads or
/// changes the model.
struct Board {
    last: PluginU64,
    execs: PluginU64,
    /// vCPU 0's entry, found at the first use (see [`Board::entry`]).
    base: AtomicPtr<u8>,
}

impl Board {
    /// vCPU 0's scoreboard entry, asked of QEMU once: the board exists with one vCPU only
    /// (the shortcut's condition), and QEMU moves a scoreboard's entries only when it adds a
    /// vCPU, before the first instruction runs. Reading it directly saves two calls into QEMU
    /// (`qemu_plugin_u64_get`, `qemu_plugin_scoreboard_find`) per TB fetched through the model.
    #[inline]
    fn entry(&self) -> *mut u8 {
        let p = self.base.load(Relaxed);
        if !p.is_null() {
            return p;
        }
        // SAFETY: the scoreboard is QEMU's for the plugin's lifetime and has an entry for vCPU 0.
        let p = unsafe { qemu_plugin::sys::qemu_plugin_scoreboard_find(self.execs.score, 0) }.cast::<u8>();
        self.base.store(p, Relaxed);
        p
    }

    /// The u64 at `offset` in vCPU 0's entry.
    #[inline]
    fn field(&self, offset: usize) -> *mut u64 {
        // SAFETY: `offset` is one of the board's two fields, inside the 16-byte entry.
        unsafe { self.entry().add(offset).cast::<u64>() }
    }
}

// SAFETY: the entries are handles to a scoreboard QEMU owns for the plugin's lifetime; QEMU's
// scoreboard API may be called from any thread.
unsafe impl Send for Board {}
// SAFETY: as for Send; the handles are never mutated.
unsafe impl Sync for Board {}

/// Raw register handles, found once at the first vCPU's init: x0..x30 and SP (index 31); CTR_EL0
/// for the sanitizer's instruction-coherence rule, CLIDR_EL1 for its Point of Coherency (model
/// rule 16a), and with more than one vCPU TPIDR_EL1, the core identity (see the module docs),
/// when the guest CPU exposes them (QEMU's gdbstub system register feature).
struct Regs {
    x: [usize; 32],
    ctr: Option<usize>,
    clidr: Option<usize>,
    core_id: Option<usize>,
    vmpidr: Option<usize>,
    /// CPSR (its EL field: the EL a TB is translated for).
    cpsr: Option<usize>,
    /// PC (the VA a TB shared between VA aliases runs at: [`super::access::TbAt`]).
    pc: Option<usize>,
    /// SCTLR of EL1, EL2, EL3 (is the MMU of a TB's regime off, at translation).
    sctlr: [Option<usize>; 3],
    /// The registers the guest state follows, read once at the first translation.
    sys: Vec<(SysReg, usize)>,
    /// Per regime (EL1, EL2, EL3): the registers its walk reads, re-read at each translation.
    regime_sys: [Vec<(SysReg, usize)>; 3],
}

/// What the engine asks of QEMU.
struct Qemu {
    board: Option<Board>,
    regs: OnceLock<Regs>,
    next_tb: AtomicU64,
    /// Guest RAM blocks learned from fetches (see [`super::ram`]).
    ram: RwLock<RamMap>,
    /// `/proc/self/mem`, the walk's reads of guest RAM (an unmapped address fails, safely).
    mem: Option<std::fs::File>,
    /// The guest registers were read (at the first translation).
    seeded: AtomicBool,
    /// The warning that CPSR cannot be read was written.
    el_warned: AtomicBool,
}

type State = Engine<Qemu>;

extern "C" {
    fn g_byte_array_new() -> *mut qemu_plugin::sys::GByteArray;
    fn g_byte_array_free(array: *mut qemu_plugin::sys::GByteArray, free_segment: bool) -> *mut u8;
    fn g_byte_array_set_size(array: *mut qemu_plugin::sys::GByteArray, length: u32) -> *mut qemu_plugin::sys::GByteArray;
    fn g_array_free(array: *mut qemu_plugin::sys::GArray, free_segment: bool) -> *mut u8;
}

thread_local! {
    /// A byte array reused for register reads on this thread.
    static REG_BUF: std::cell::Cell<*mut qemu_plugin::sys::GByteArray> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// Every register the current vCPU exposes, as (name, raw handle). Called from a vCPU-init
/// callback, as the API requires.
fn register_list() -> Vec<(String, usize)> {
    // SAFETY: QEMU returns a GArray of `qemu_plugin_reg_descriptor` whose names are NUL-terminated
    // strings QEMU keeps for its lifetime; the array (not the strings) is freed here.
    unsafe {
        let arr = qemu_plugin::sys::qemu_plugin_get_registers();
        if arr.is_null() {
            return Vec::new();
        }
        let descs = std::slice::from_raw_parts((*arr).data as *const qemu_plugin::sys::qemu_plugin_reg_descriptor, (*arr).len as usize);
        let list = descs
            .iter()
            .filter(|d| !d.name.is_null())
            .filter_map(|d| Some((std::ffi::CStr::from_ptr(d.name).to_str().ok()?.to_string(), d.handle as usize)))
            .collect();
        g_array_free(arr, true);
        list
    }
}

/// Reads a register by raw handle into this thread's reusable buffer (no allocation): its first
/// 8 bytes (or fewer), little-endian (QEMU's byte order for AArch64). The plugin's one register
/// read; only from a callback registered with register access.
fn read_register(handle: usize) -> Option<u64> {
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
            if n <= 0 || (*arr).len == 0 {
                return None;
            }
            let bytes = std::slice::from_raw_parts((*arr).data, ((*arr).len as usize).min(8));
            Some(bytes.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b)))
        }
    })
}

/// An identification register's value, if the guest CPU exposes it to plugins (printed with
/// CS_MODEL_LIST_REGS).
fn read_id_reg(handle: Option<usize>, name: &str) -> Option<u64> {
    let v = read_register(handle?)?;
    if std::env::var_os("CS_MODEL_LIST_REGS").is_some() {
        eprintln!("{NAME}: {name} = {v:#x}");
    }
    Some(v)
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

impl Qemu {
    /// Register `n` (0..=30 Xn, [`SP`]) of the running vCPU; 0 when unreadable.
    #[inline]
    fn reg(&self, n: u8) -> u64 {
        let Some(regs) = self.regs.get() else { return 0 };
        let i = if n == SP { 31 } else { usize::from(n) };
        regs.x.get(i).and_then(|&h| read_register(h)).unwrap_or(0)
    }

    /// The raw handles of TPIDR_EL1 and VMPIDR_EL2 when cores are identified by them (more
    /// than one vCPU).
    fn core_id_registers(&self) -> Option<(usize, Option<usize>)> {
        let r = self.regs.get()?;
        Some((r.core_id?, r.vmpidr))
    }
}

impl PhysMem for Qemu {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        let host = self.ram.read().ok()?.host(pa, 8)?;
        if host % 8 == 0 {
            // SAFETY: `host` lies in a learned RAM block: inside a host mapping /proc/self/maps
            // listed as readable when the block was learned, which QEMU keeps mapped for the
            // machine's life (guest RAM is freed only at exit); aligned, so one volatile load
            // (a vCPU may be writing the descriptor: the value is one of the two, as a pread's).
            // See super::ram for the block's bounds. No syscall: this is the walk's hot path.
            return Some(u64::from_le(unsafe { (host as *const u64).read_volatile() }));
        }
        let mut b = [0u8; 8];
        self.mem.as_ref()?.read_exact_at(&mut b, host).ok()?;
        Some(u64::from_le_bytes(b))
    }
}

impl Qemu {
    /// At translation (the translating vCPU's registers are current): the TB's EL from CPSR,
    /// and when the MMU of that EL's regime is off, the RAM block of its first instruction,
    /// whose PA is then its VA (see [`super::ram`]). The guest registers are read at the
    /// first translation. `None` when CPSR is not readable.
    fn at_translation(&self, state: &State, va: u64, haddr: u64, word: Option<u32>) -> Option<u8> {
        let regs = self.regs.get()?;
        if !self.seeded.swap(true, Relaxed) {
            let values: Vec<(SysReg, u64)> = regs.sys.iter().filter_map(|&(r, h)| Some((r, read_register(h)?))).collect();
            state.seed_registers(&values);
        }
        let Some(cpsr) = regs.cpsr.and_then(read_register) else {
            if !self.el_warned.swap(true, Relaxed) {
                state.warn("CPSR is not readable at translation: every TB is taken for EL1 (the EL1&0 regime's tables and SCTLR_EL1)");
            }
            return None;
        };
        let el = (cpsr >> 2 & 3) as u8;
        let regime = crate::walk::Regime::of_el(el);
        let sctlr = regs.sctlr[regime.index()].and_then(read_register);
        if state.vcpus == 1 {
            let values: Vec<(SysReg, u64)> =
                regs.regime_sys[regime.index()].iter().filter_map(|&(r, h)| Some((r, read_register(h)?))).collect();
            state.resync(&values, va);
        }
        if haddr != 0 && sctlr.is_some_and(|s| s & 1 == 0) && !self.ram.read().is_ok_and(|m| m.knows(va)) {
            self.learn_block(va, haddr, word);
        }
        Some(el)
    }

    /// Learns the RAM block holding PA `pa` at host address `host`, checked by reading the
    /// instruction back through `/proc/self/mem`.
    #[cold]
    fn learn_block(&self, pa: u64, host: u64, word: Option<u32>) {
        let Some(file) = &self.mem else { return };
        let mut b = [0u8; 4];
        if file.read_exact_at(&mut b, host).is_err() || word.is_some_and(|w| w != u32::from_le_bytes(b)) {
            return;
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let Some(range) = mapping_containing(&maps, host) else { return };
        if let Ok(mut m) = self.ram.write() {
            if let Some(block) = m.learn(pa, host, range) {
                if std::env::var_os("CS_MODEL_LIST_REGS").is_some() {
                    eprintln!(
                        "{NAME}: guest RAM block PA {:#x}..{:#x} at host {:#x}",
                        block.pa,
                        block.pa_end,
                        block.pa.wrapping_add(block.host_minus_pa)
                    );
                }
            }
        }
    }
}

impl Host for Qemu {
    #[inline]
    fn execs(&self, cpu: usize) -> u64 {
        debug_assert_eq!(cpu, 0, "the board exists with one vCPU only");
        // SAFETY: vCPU 0's entry (Board::entry), written by the inline ops this very thread runs
        // between callbacks: a volatile read of an aligned u64.
        self.board.as_ref().map_or(0, |b| unsafe { b.field(b.execs.offset).read_volatile() })
    }

    fn forget_tb(&self, cpu: usize) {
        debug_assert_eq!(cpu, 0, "the board exists with one vCPU only");
        if let Some(b) = &self.board {
            // SAFETY: as in `execs`: vCPU 0's entry, only this thread uses it.
            unsafe { b.field(b.last.offset).write_volatile(0) };
        }
    }

    fn id_regs(&self) -> (Option<Ctr>, Option<Clidr>) {
        let Some(regs) = self.regs.get() else { return (None, None) };
        let ctr = read_id_reg(regs.ctr, "CTR_EL0").map(|raw| Ctr { raw });
        let clidr = read_id_reg(regs.clidr, "CLIDR_EL1").map(Clidr::decode);
        (ctr, clidr)
    }

    fn read_name(&self, va: u64) -> Option<String> {
        read_name(va)
    }

    fn regime_registers(&self, el: u8) -> Vec<(SysReg, u64)> {
        let Some(regs) = self.regs.get() else { return Vec::new() };
        regs.regime_sys[crate::walk::Regime::of_el(el).index()].iter().filter_map(|&(r, h)| Some((r, read_register(h)?))).collect()
    }

    fn pc(&self) -> Option<u64> {
        read_register(self.regs.get()?.pc?)
    }
}

impl MemAccess for MemoryInfo<'_> {
    #[inline]
    fn size(&self) -> u32 {
        1 << self.size_shift()
    }

    fn hwaddr(&self, vaddr: u64) -> Option<(u64, bool)> {
        MemoryInfo::hwaddr(self, vaddr).map(|h| (h.hwaddr(), h.is_io()))
    }

    fn value(&self) -> Option<u64> {
        match MemoryInfo::value(self) {
            qemu_plugin::MemValue::U8(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U16(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U32(v) => Some(u64::from(v)),
            qemu_plugin::MemValue::U64(v) => Some(v),
            _ => None,
        }
    }
}

extern "C" {
    fn dlsym(handle: *mut std::ffi::c_void, symbol: *const std::ffi::c_char) -> *mut std::ffi::c_void;
}

/// The address of QEMU's `current_cpu` for the host thread that runs the vCPUs round-robin
/// (see [`running_vcpu`]): 0 if not asked yet, 1 if QEMU does not export it.
static CURRENT_CPU_SLOT: AtomicUsize = AtomicUsize::new(0);

/// QEMU's own pointer to the vCPU (`CPUState`) the round-robin thread runs now: the
/// thread-local `current_cpu`, which QEMU's plugin API itself reads to answer
/// `qemu_plugin_read_register` (so it names the vCPU that register reads see). QEMU exports it
/// to the plugins' namespace (`nm -D qemu-system-aarch64`: `current_cpu`); glibc's `dlsym` of a
/// thread-local symbol gives the calling thread's instance, and under round-robin TCG one host
/// thread runs every vCPU and makes every callback, so its instance is found once. Used only as
/// an opaque value that changes when the running vCPU does ([`Engine::identify_tb`]); `None`
/// when not exported. Only under round-robin TCG (under MTTCG the callback's index is right).
fn running_vcpu() -> Option<usize> {
    let mut slot = CURRENT_CPU_SLOT.load(Relaxed);
    if slot == 0 {
        // SAFETY: dlsym with RTLD_DEFAULT (a null handle on glibc) and a NUL-terminated name
        // only looks the symbol up; the result is an address or null.
        let p = unsafe { dlsym(std::ptr::null_mut(), c"current_cpu".as_ptr()) } as usize;
        slot = if p == 0 { 1 } else { p };
        CURRENT_CPU_SLOT.store(slot, Relaxed);
    }
    if slot == 1 {
        return None;
    }
    // SAFETY: `slot` is the round-robin thread's instance of QEMU's `CPUState *current_cpu` (this
    // thread: the caller is a callback under round-robin TCG), a pointer-sized, aligned
    // thread-local that lives as long as the thread; QEMU writes it only on this thread.
    Some(unsafe { (slot as *const usize).read_volatile() })
}

/// At a TB's start with several vCPUs: which core runs it ([`Engine::identify_tb`]), from
/// TPIDR_EL1 (`tpidr`) and VMPIDR_EL2 (`vmpidr`) by their raw handles, unless QEMU's
/// `current_cpu` shows the vCPU of the last identification (round-robin TCG only).
fn identify_core(s: &State, tpidr: usize, vmpidr: Option<usize>, vcpu: VCPUIndex) {
    s.identify_tb(if s.round_robin { running_vcpu() } else { None }, || read_register(tpidr), || read_register(vmpidr?), vcpu);
}

/// Whether this QEMU runs its vCPUs on one host thread (round-robin TCG), from its own command
/// line: `-icount` forces it, `-accel tcg,thread=single` asks for it. (The plugin API does not
/// say; MTTCG is QEMU's default for AArch64 guests on 64-bit hosts.)
fn round_robin() -> bool {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    args.iter().any(|a| *a == b"-icount" || *a == b"--icount")
        || args.windows(2).any(|w| matches!(w[0], b"-accel" | b"--accel") && w[1].split(|&b| b == b',').any(|o| o == b"thread=single"))
}

/// The plugin instance QEMU's loader sees.
#[derive(Default)]
struct CacheModel {
    state: Option<Arc<State>>,
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
        let board = inline_repeats_allowed(&settings, vcpus).then(|| {
            // SAFETY: a scoreboard of two u64 per vCPU, owned by QEMU for the plugin's lifetime.
            let score = unsafe { qemu_plugin::sys::qemu_plugin_scoreboard_new(16) };
            let entry = |offset| PluginU64 { score, offset };
            // `last` starts at 0, which no TB key equals (keys start at 1).
            Board { last: entry(0), execs: entry(8), base: AtomicPtr::new(std::ptr::null_mut()) }
        });
        let mem = std::fs::File::open("/proc/self/mem").ok();
        let host = Qemu {
            board,
            regs: OnceLock::new(),
            next_tb: AtomicU64::new(1),
            ram: RwLock::new(RamMap::default()),
            mem,
            seeded: AtomicBool::new(false),
            el_warned: AtomicBool::new(false),
        };
        let state = Arc::new(Engine::new(settings, vcpus, out, host).with_round_robin(round_robin()));
        let s = state.clone();
        qemu_plugin_register_atexit_cb(id, move |_| s.at_exit())?;
        self.state = Some(state);
        Ok(())
    }
}

impl HasCallbacks for CacheModel {
    fn on_vcpu_init(&mut self, _id: PluginId, _vcpu: VCPUIndex) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else { return Ok(()) };
        if state.host.regs.get().is_some() {
            return Ok(());
        }
        let all = register_list();
        let find = |n: &str| all.iter().find(|(name, _)| name.eq_ignore_ascii_case(n)).map(|&(_, h)| h);
        let x: Vec<usize> = (0..31).map(|n| format!("x{n}")).chain(["sp".to_string()]).filter_map(|n| find(&n)).collect();
        let Ok(x) = <[usize; 32]>::try_from(x) else { fail("the guest CPU does not expose registers x0..x30 and sp to plugins") };
        if std::env::var_os("CS_MODEL_LIST_REGS").is_some() {
            let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
            eprintln!("{NAME}: {} registers: {}", names.len(), names.join(" "));
            for (n, h) in &all {
                if let Some(v) = read_register(*h) {
                    eprintln!("{NAME}: at vCPU init {n} = {v:#x}");
                }
            }
        }
        let core_id = if state.vcpus > 1 { find("TPIDR_EL1") } else { None };
        let clidr = find("CLIDR_EL1").or_else(|| find("CLIDR"));
        let ctr = find("CTR_EL0");
        // The CPU's identity and ID registers, before its first instruction: all constant, so
        // readable now (reset-valued registers such as PMCR_EL0 or VPIDR_EL2 still read 0).
        let key = crate::cpu_models::KEY_REGS.map(|n| find(n).and_then(read_register));
        let id_ctr = ctr.and_then(|h| read_id_reg(Some(h), "CTR_EL0")).map(|raw| Ctr { raw });
        let id_clidr = clidr.and_then(|h| read_id_reg(Some(h), "CLIDR_EL1")).map(Clidr::decode);
        state.cpu_identified(key, id_ctr, id_clidr);
        let vmpidr = if state.vcpus > 1 { find("VMPIDR_EL2") } else { None };
        let find_any = |names: &[&str]| names.iter().find_map(|n| find(n));
        let sys: Vec<(SysReg, usize)> = SysReg::ALL.iter().filter_map(|&(r, names)| Some((r, find_any(names)?))).collect();
        let sctlr = [find_any(&["SCTLR_EL1", "SCTLR"]), find("SCTLR_EL2"), find("SCTLR_EL3")];
        let cpsr = find("cpsr");
        let pc = find("pc");
        let regime_sys = crate::walk::Regime::ALL.map(|g| {
            sys.iter()
                .copied()
                .filter(|&(r, _)| match r {
                    SysReg::Sctlr(x) | SysReg::Ttbr0(x) | SysReg::Tcr(x) | SysReg::Mair(x) => x == g,
                    SysReg::Ttbr1El1 => g == crate::walk::Regime::El1,
                    SysReg::Hcr | SysReg::Scr => false,
                })
                .collect()
        });
        let _ = state.host.regs.set(Regs { x, ctr, clidr, core_id, vmpidr, cpsr, pc, sctlr, sys, regime_sys });
        Ok(())
    }

    fn on_translation_block_translate(&mut self, _id: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else { return Ok(()) };
        let insns: Vec<_> = tb.instructions().collect();
        let words: Vec<TbInsn> = insns
            .iter()
            .map(|insn| {
                let mut word = [0u8; 4];
                let word = (insn.read_data(&mut word) == 4).then(|| u32::from_le_bytes(word));
                TbInsn { vaddr: insn.vaddr(), size: insn.size() as u64, word }
            })
            .collect();
        let plan = plan(&words, state.fast_on);
        let haddr = insns.first().map_or(0, |i| i.haddr());
        let el = state.host.at_translation(state, plan.start, haddr, words.first().and_then(|w| w.word)).unwrap_or(1);
        // The PA QEMU finds this TB by (see `TbAt`): its first instruction's, from its host address
        // (after `at_translation`, which may have learned the RAM block from this very TB).
        let tb_pa = if haddr == 0 { None } else { state.host.ram.read().ok().and_then(|m| m.pa_of_host(haddr)) };
        let no_regs = CallbackFlags::QEMU_PLUGIN_CB_NO_REGS;
        // The further fetch segments first: each callback runs before its instruction's own.
        for &(at, seg_start, len) in &plan.segments {
            let s = state.clone();
            let memo = FetchMemo::default();
            insns[at].register_execute_callback_flags(move |vcpu| s.fetch(vcpu, seg_start, len, false, TbAt::Later, &memo), no_regs);
        }
        for (insn, p) in insns.iter().zip(plan.insns) {
            if let Some(d) = p.special {
                let (s, pc) = (state.clone(), p.pc);
                insn.register_execute_callback_flags(
                    move |vcpu| s.special(vcpu, d, pc, |n| s.host.reg(n)),
                    CallbackFlags::QEMU_PLUGIN_CB_R_REGS,
                );
            }
            match p.access {
                Access::Member => {}
                Access::Leader(g) => {
                    // One callback per direction, so the direction is a constant rather than a
                    // query to QEMU; QEMU emits only the one matching the access.
                    for (rw, write) in [(MemRW::QEMU_PLUGIN_MEM_R, false), (MemRW::QEMU_PLUGIN_MEM_W, true)] {
                        let (s, g) = (state.clone(), g.clone());
                        insn.register_memory_access_callback_flags(
                            move |vcpu, info, vaddr| s.mem_group(vcpu, &info, vaddr, write, &g),
                            rw,
                            no_regs,
                        );
                    }
                }
                Access::Single(hint) => {
                    for (rw, write) in [(MemRW::QEMU_PLUGIN_MEM_R, false), (MemRW::QEMU_PLUGIN_MEM_W, true)] {
                        let s = state.clone();
                        insn.register_memory_access_callback_flags(
                            move |vcpu, info, vaddr| s.mem(vcpu, &info, vaddr, vaddr, write, None, hint),
                            rw,
                            no_regs,
                        );
                    }
                }
            }
        }
        let (start, first_len) = (plan.start, plan.first_len);
        if plan.end > start {
            // The TB's first segment: with the shortcut, a conditional callback and inline
            // counters count back-to-back repeats without a call, unless later segments exist
            // (they are callbacks anyway): then it is always called and the execution key is
            // reset, so that the next TB is never taken for a repeat.
            let repeats_inline = state.host.board.is_some() && plan.segments.is_empty();
            // Each registered closure owns its fetch memo (no further indirection to it).
            let fetch = {
                let s = state.clone();
                let memo = FetchMemo::default();
                move |vcpu| {
                    s.at_el(vcpu, el);
                    s.fetch(vcpu, start, first_len, repeats_inline, TbAt::Start(tb_pa), &memo)
                }
            };
            // The TB's first callback may read the PC (`TbAt`): at a TB's start no register is
            // held apart from the vCPU state, so the access costs nothing there.
            let regs = CallbackFlags::QEMU_PLUGIN_CB_R_REGS;
            let core_id = if state.vcpus > 1 { state.host.core_id_registers() } else { None };
            match (&state.host.board, core_id) {
                (Some(b), _) if repeats_inline => {
                    let key = state.host.next_tb.fetch_add(1, Relaxed);
                    tb.register_conditional_execute_callback_flags(fetch, regs, PluginCondition::QEMU_PLUGIN_COND_NE, b.last, key);
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb.clone(), PluginOp::QEMU_PLUGIN_INLINE_ADD_U64, b.execs, 1);
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, PluginOp::QEMU_PLUGIN_INLINE_STORE_U64, b.last, key);
                }
                (Some(b), _) => {
                    tb.register_execute_callback_flags(fetch, regs);
                    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, PluginOp::QEMU_PLUGIN_INLINE_STORE_U64, b.last, NO_TB);
                }
                // More than one vCPU: the TB's first callback learns which core runs; with the
                // shortcut (round-robin), the engine counts the core's back-to-back repeats.
                (None, Some((handle, vmpidr))) if state.counts_repeats() => {
                    let key = if plan.segments.is_empty() { state.host.next_tb.fetch_add(1, Relaxed) } else { NO_TB };
                    let s = state.clone();
                    let memo = FetchMemo::default();
                    let identify_and_fetch = move |vcpu| {
                        identify_core(&s, handle, vmpidr, vcpu);
                        s.tb_exec(vcpu, key, |counted| {
                            s.at_el(vcpu, el);
                            s.fetch(vcpu, start, first_len, counted, TbAt::Start(tb_pa), &memo)
                        })
                    };
                    tb.register_execute_callback_flags(identify_and_fetch, CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
                }
                (None, Some((handle, vmpidr))) => {
                    let s = state.clone();
                    let identify_and_fetch = move |vcpu| {
                        identify_core(&s, handle, vmpidr, vcpu);
                        fetch(vcpu)
                    };
                    tb.register_execute_callback_flags(identify_and_fetch, CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
                }
                (None, None) => tb.register_execute_callback_flags(fetch, regs),
            }
        }
        Ok(())
    }
}

register!(CacheModel::default());
