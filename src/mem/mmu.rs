//! MMU control at EL1 (target only): builds the identity map and the alias windows, programs
//! MAIR_EL1/TCR_EL1/TTBR0_EL1, turns the MMU, the D-cache and the I-cache on and off
//! independently with the maintenance the architecture requires, and changes live mappings by
//! break-before-make.
//!
//! Maintenance rules (data is "cached" while SCTLR_EL1.M = 1 and C = 1):
//! - cached → not cached (D-cache or MMU off): clean+invalidate every data cache to PoC by
//!   set/way, then one uninterrupted sequence writes SCTLR and cleans+invalidates the stack by
//!   VA, then the maintenance counters (`cpu::mmu::write_sctlr_uncached`), so nothing dirty
//!   outlives the switch; the walk's `setway` record is printed after that;
//! - not cached → cached: clean+invalidate by set/way first (no line of ours is dirty then, so
//!   this drops stale clean lines without losing anyone's data);
//! - MMU on: MAIR/TCR/TTBR0 programmed, `TLBI VMALLE1IS; DSB ISH; ISB` before the SCTLR write
//!   (whose ISB follows it); MMU off: the same TLBI after, so a later enable starts clean;
//! - I-cache on: `IC IALLU` before; off: `IC IALLU` after.
//!
//! Live changes: [`map`] (new addresses: no TLB maintenance, invalid entries are never cached),
//! [`unmap`], and break-before-make: [`break_range`] (entries invalid, `DSB ISHST`, `TLBI VAAE1IS`
//! per leaf, `DSB ISH; ISB`) then [`make_range`] (new entries, `DSB ISHST; ISB`), or both in
//! [`remap`], which adds the cache maintenance a change of cacheability needs.

use alloc::vec::Vec;

use super::aarch64::{
    descriptor::Mair,
    regs::{self, MmuFeatures, Par},
};
use super::{
    alias::{self, AliasWindow},
    layout::{self, Device, KernelImage},
    table::{Mapping, PAGE_SIZE},
    Attributes, Error, Granularity, MemAttr, Tables, Walk,
};
use crate::boot_info::BootInfo;
use crate::cache::{
    maintenance,
    setway::{self, Scope, SetWayOp},
};
use crate::cpu::mmu::{self as hw, SCTLR_C, SCTLR_I, SCTLR_M};
use crate::model_markers;
use cachescope_arch::sysreg::SCTLR_EL1;
use tock_registers::interfaces::Readable;

extern "C" {
    static __image_start: u8;
    static __rodata_start: u8;
    static __data_start: u8;
    static __image_end: u8;
    static __stack_bottom: u8;
    static __stack_top: u8;
}

struct State {
    tables: Tables,
    tcr: u64,
}

static STATE: spin::Mutex<Option<State>> = spin::Mutex::new(None);
static WINDOWS: spin::Once<Vec<AliasWindow>> = spin::Once::new();
/// The physical span of the hint window (the windows' span).
static HINT_SPAN: spin::Once<(usize, usize)> = spin::Once::new();

/// The three SCTLR_EL1 switches this module controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Control {
    /// SCTLR_EL1.M: stage 1 translation.
    pub mmu: bool,
    /// SCTLR_EL1.C: data caching.
    pub dcache: bool,
    /// SCTLR_EL1.I: instruction caching.
    pub icache: bool,
}

impl Control {
    /// MMU, D-cache and I-cache on: the state the main job leaves for benchmarks.
    pub const ALL_ON: Self = Self { mmu: true, dcache: true, icache: true };
    /// Everything off: the state at boot.
    pub const ALL_OFF: Self = Self { mmu: false, dcache: false, icache: false };

    /// The switches in an SCTLR_EL1 value.
    pub const fn from_sctlr(v: u64) -> Self {
        Self { mmu: v & SCTLR_M != 0, dcache: v & SCTLR_C != 0, icache: v & SCTLR_I != 0 }
    }

    const fn bits(self) -> u64 {
        (if self.mmu { SCTLR_M } else { 0 }) | (if self.dcache { SCTLR_C } else { 0 }) | (if self.icache { SCTLR_I } else { 0 })
    }

    /// Data accesses to Normal memory can allocate in caches.
    pub const fn data_cached(self) -> bool {
        self.mmu && self.dcache
    }
}

/// The MMU registers as they are now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registers {
    /// SCTLR_EL1.
    pub sctlr: u64,
    /// TCR_EL1.
    pub tcr: u64,
    /// MAIR_EL1.
    pub mair: u64,
    /// TTBR0_EL1.
    pub ttbr0: u64,
}

/// Reads SCTLR_EL1, TCR_EL1, MAIR_EL1 and TTBR0_EL1.
pub fn registers() -> Registers {
    Registers { sctlr: SCTLR_EL1.get(), tcr: hw::tcr(), mair: hw::mair(), ttbr0: hw::ttbr0() }
}

/// The current switches.
pub fn control() -> Control {
    Control::from_sctlr(SCTLR_EL1.get())
}

/// The kernel image's sections from the linker script.
pub fn kernel_image() -> KernelImage {
    KernelImage {
        start: core::ptr::addr_of!(__image_start) as u64,
        rodata: core::ptr::addr_of!(__rodata_start) as u64,
        data: core::ptr::addr_of!(__data_start) as u64,
        end: core::ptr::addr_of!(__image_end) as u64,
    }
}

fn stack() -> (usize, usize) {
    (core::ptr::addr_of!(__stack_bottom) as usize, core::ptr::addr_of!(__stack_top) as usize)
}

/// The MMIO the kernel uses: the console UART's page.
fn devices(boot: &BootInfo) -> [Device; 1] {
    [Device { name: "console-uart", base: boot.uart as u64, len: PAGE_SIZE }]
}

/// Builds the tables once: the identity map of RAM and MMIO, the six alias windows over the
/// whole arena and the hint window ([`select_hint`]) over it too, holding
/// [`Mair::DEFAULT`]'s hint. Does not touch SCTLR; later calls do nothing.
pub fn build(boot: &BootInfo) -> Result<(), Error> {
    let mut st = STATE.lock();
    if st.is_some() {
        return Ok(());
    }
    let features = MmuFeatures::decode(hw::id_aa64mmfr0());
    if !features.granule_4k {
        return Err(Error::GranuleUnsupported);
    }
    let devices = devices(boot);
    let regions = layout::identity_map(boot.ram, kernel_image(), &devices)?;
    let windows = alias::plan(boot.arena, alias::default_span(boot.arena))?;
    let mut tables = Tables::new(regs::pa_limit(features.pa_range));
    for r in &regions {
        tables.map(r.name, r.va, r.pa, r.len, r.attrs, r.gran)?;
    }
    for w in &windows {
        tables.map(w.name, w.va as u64, w.pa as u64, w.len as u64, w.attributes(), Granularity::Largest)?;
    }
    let span = alias::default_span(boot.arena);
    let hint = alias::hint_window(span, tables.mair().hint());
    tables.map("hint-window", hint.va as u64, hint.pa as u64, hint.len as u64, hint.attributes(), Granularity::Largest)?;
    *st = Some(State { tables, tcr: regs::tcr_value(features.pa_range) });
    drop(st);
    HINT_SPAN.call_once(|| span);
    let windows = WINDOWS.call_once(|| windows);
    for w in windows.iter().chain([&hint]) {
        model_markers::window_shared(w.va, w.pa as u64, w.len, w.attr.model_attr(), w.attributes().share);
    }
    for d in &devices {
        // Identity mapped: PA = VA.
        let page = d.base & !(PAGE_SIZE - 1);
        model_markers::window(page as usize, page, PAGE_SIZE as usize, model_markers::ModelAttr::Device);
    }
    Ok(())
}

/// Builds the tables if needed and turns the MMU, D-cache and I-cache on. Returns the alias
/// windows (also available from [`windows`] afterwards). Idempotent.
pub fn enable_with_aliases(boot: &BootInfo) -> Result<&'static [AliasWindow], Error> {
    build(boot)?;
    set_control(Control::ALL_ON)?;
    Ok(windows())
}

/// The alias windows (empty before [`build`]).
pub fn windows() -> &'static [AliasWindow] {
    WINDOWS.get().map(Vec::as_slice).unwrap_or(&[])
}

const CLEAN_ALL: (SetWayOp, Scope) = (SetWayOp::CleanInvalidate, Scope::ToLoC);

fn walk_error(_: &setway::WalkError) -> Error {
    Error::CacheMaintenance { what: "set/way clean+invalidate to LoC" }
}

/// Set/way clean+invalidate to LoC, recorded (`setway`).
fn clean_invalidate_all() -> Result<(), Error> {
    crate::cache::try_dcsw(CLEAN_ALL.0, CLEAN_ALL.1).map(|_| ()).map_err(|e| walk_error(&e))
}

/// Sets the MMU, D-cache and I-cache switches, with the maintenance each transition needs
/// (module docs). Turning the MMU on needs [`build`] first.
pub fn set_control(want: Control) -> Result<(), Error> {
    let cur_raw = SCTLR_EL1.get();
    let cur = Control::from_sctlr(cur_raw);
    let new_raw = (cur_raw & !Control::ALL_ON.bits()) | want.bits();
    if want.mmu && !cur.mmu {
        let st = STATE.lock();
        let st = st.as_ref().ok_or(Error::NotBuilt)?;
        // The MMU is off (checked above and by the call): the regime takes effect only with the
        // SCTLR write below.
        hw::set_translation(st.tables.mair().value(), st.tcr, st.tables.root()).map_err(|_| Error::MmuOn)?;
        hw::tlbi_all();
    }
    if cur.data_cached() && !want.data_cached() {
        // Nothing may be written between the walk and the switch but the stack and the
        // maintenance counters (both cleaned by the switch): the walk is recorded once data is
        // no longer cached.
        let walk = setway::dcsw(CLEAN_ALL.0, CLEAN_ALL.1);
        if let Err(e) = &walk {
            crate::cache::record_walk(CLEAN_ALL.0, CLEAN_ALL.1, &walk);
            return Err(walk_error(e));
        }
        let (lo, hi) = stack();
        // SAFETY: every data cache was just cleaned to PoC; the stack is identity mapped in
        // both states; the new value only changes M/C/I.
        unsafe { hw::write_sctlr_uncached(new_raw, lo, hi) };
        crate::cache::record_walk(CLEAN_ALL.0, CLEAN_ALL.1, &walk);
    } else {
        if want.data_cached() && !cur.data_cached() {
            clean_invalidate_all()?;
        }
        if want.icache && !cur.icache {
            maintenance::invalidate_icache_all();
        }
        // SAFETY: translation (if turned on) was programmed and the TLBs invalidated above;
        // caches turning on hold nothing stale after the clean+invalidate.
        unsafe { hw::write_sctlr(new_raw) };
    }
    if cur.icache && !want.icache {
        maintenance::invalidate_icache_all();
    }
    if cur.mmu && !want.mmu {
        hw::tlbi_all();
    }
    model_markers::sctlr(SCTLR_EL1.get());
    Ok(())
}

/// Turns the MMU on, leaving the cache switches as they are.
pub fn enable() -> Result<(), Error> {
    set_control(Control { mmu: true, ..control() })
}

/// Turns the MMU off (data accesses become Device-nGnRnE), leaving the cache switches.
pub fn disable() -> Result<(), Error> {
    set_control(Control { mmu: false, ..control() })
}

/// Turns data caching (SCTLR_EL1.C) on or off.
pub fn set_dcache(on: bool) -> Result<(), Error> {
    set_control(Control { dcache: on, ..control() })
}

/// Turns instruction caching (SCTLR_EL1.I) on or off.
pub fn set_icache(on: bool) -> Result<(), Error> {
    set_control(Control { icache: on, ..control() })
}

fn with_tables<R>(f: impl FnOnce(&mut Tables) -> Result<R, Error>) -> Result<R, Error> {
    let mut st = STATE.lock();
    let st = st.as_mut().ok_or(Error::NotBuilt)?;
    f(&mut st.tables)
}

/// The software walk of `va` through the tables (what the hardware should find).
pub fn walk(va: u64) -> Result<Walk, Error> {
    with_tables(|t| Ok(t.walk(va)))
}

/// The mappings made so far (identity regions, windows, and any made with [`map`]).
pub fn mappings() -> Vec<Mapping> {
    with_tables(|t| Ok(t.mappings().to_vec())).unwrap_or_default()
}

/// Physical address of the root table (TTBR0_EL1's base address once enabled).
pub fn root() -> Result<u64, Error> {
    with_tables(|t| Ok(t.root()))
}

/// Number of translation tables in use.
pub fn table_count() -> usize {
    with_tables(|t| Ok(t.table_count())).unwrap_or(0)
}

/// `AT S1E1R` of `va`: the hardware's translation, decoded.
pub fn translate(va: u64) -> Par {
    Par::decode(hw::at_s1e1r(va))
}

/// Maps a new range (refused if it overlaps anything). Safe on live tables: an invalid entry
/// is never held in a TLB, so `DSB ISHST; ISB` suffices.
pub fn map(name: &'static str, va: u64, pa: u64, len: u64, attrs: Attributes, gran: Granularity) -> Result<(), Error> {
    with_tables(|t| t.map(name, va, pa, len, attrs, gran))?;
    hw::dsb_ishst();
    hw::tlbi_sync();
    model_markers::window_shared(va as usize, pa, len as usize, attrs.mem.model_attr(), attrs.share);
    Ok(())
}

fn invalidate_tlb(vas: &[u64]) {
    hw::dsb_ishst();
    for &va in vas {
        hw::tlbi_va(va);
    }
    hw::tlbi_sync();
}

/// Removes the mapping that is exactly `[va, va+len)` (entries zeroed, TLB invalidated by VA).
pub fn unmap(va: u64, len: u64) -> Result<(), Error> {
    let vas = with_tables(|t| t.unmap(va, len))?;
    invalidate_tlb(&vas);
    model_markers::window(va as usize, model_markers::PA_UNKNOWN, 0, model_markers::ModelAttr::Device);
    Ok(())
}

/// Break: every leaf of `[va, va+len)` becomes invalid; `DSB ISHST`, `TLBI VAAE1IS` per leaf,
/// `DSB ISH`, `ISB`. Accesses to the range now take translation faults.
pub fn break_range(va: u64, len: u64) -> Result<(), Error> {
    let vas = with_tables(|t| t.break_range(va, len))?;
    invalidate_tlb(&vas);
    Ok(())
}

/// Make: broken leaves of `[va, va+len)` get `attrs` (same output addresses); `DSB ISHST`,
/// `ISB`; the cache model is told the range's new type (and its PA when physically
/// contiguous). Refused while any of them is still valid.
pub fn make_range(va: u64, len: u64, attrs: Attributes) -> Result<(), Error> {
    let pa = with_tables(|t| t.make_range(va, len, attrs))?;
    hw::dsb_ishst();
    hw::tlbi_sync();
    model_markers::window_shared(va as usize, pa.unwrap_or(model_markers::PA_UNKNOWN), len as usize, attrs.mem.model_attr(), attrs.share);
    Ok(())
}

/// Changes the attributes of a live range by break-before-make. Leaving a cacheable type,
/// the range is cleaned and invalidated to PoC through the old mapping first (no dirty line
/// may outlive it); entering one, it is cleaned and invalidated through the new mapping (no
/// stale line may be hit). VA maintenance is skipped while data is not cached: nothing of ours
/// is in a cache then.
pub fn remap(va: u64, len: u64, attrs: Attributes) -> Result<(), Error> {
    attrs.validate()?;
    let old = match walk(va)? {
        Walk::Mapped { attrs, .. } => attrs.mem,
        Walk::Fault { .. } => return Err(Error::NotMapped { va }),
    };
    let cached = control().data_cached();
    let maintain = |what| {
        if cached {
            maintenance::clean_invalidate_to_poc(va as usize, len as usize).map(|_| ()).map_err(|_| Error::CacheMaintenance { what })
        } else {
            Ok(())
        }
    };
    if old.is_cacheable() && old != attrs.mem {
        maintain("clean+invalidate of the range leaving a cacheable type")?;
    }
    break_range(va, len)?;
    make_range(va, len, attrs)?;
    if attrs.mem.is_cacheable() && old != attrs.mem {
        maintain("clean+invalidate of the range entering a cacheable type")?;
    }
    Ok(())
}

/// The window of a memory type (after [`build`]).
pub fn window(attr: MemAttr) -> Option<&'static AliasWindow> {
    windows().iter().find(|w| w.attr == attr)
}

/// The hint window as it is now: the test arena's alias at [`alias::HINT_BASE`] whose
/// descriptors name MAIR's hint slot, of the allocation-hint type the slot holds (None before
/// [`build`]).
pub fn hint_window() -> Option<AliasWindow> {
    let span = *HINT_SPAN.get()?;
    let hint = with_tables(|t| Ok(t.mair().hint())).ok()?;
    Some(alias::hint_window(span, hint))
}

/// MAIR_EL1 as the tables read it (the register's value once the MMU is on).
pub fn mair() -> Result<Mair, Error> {
    with_tables(|t| Ok(t.mair()))
}

/// Makes the hint window `hint` (one of [`MemAttr::HINTS`]; any other type is refused) and
/// returns it. Eight MAIR slots cannot hold the six fixed types and three hints at once, so
/// the hint window's descriptors name one slot ([`HINT_INDEX`](super::aarch64::descriptor::HINT_INDEX))
/// and this reprograms it:
/// 1. with data cached, every data cache is cleaned and invalidated to PoC by set/way, so no
///    line filled under the old attributes outlives them (as between alias windows);
/// 2. MAIR_EL1 is rewritten, `ISB`, then `DSB ISHST; TLBI VMALLE1IS; DSB ISH; ISB`: TLB entries
///    may hold MAIR-derived attributes;
/// 3. the software walk reads the slot as the new type and the cache model is told the
///    window's new type (a window marker over the same start replaces the old one).
///
/// Nothing else uses the slot. Cores started earlier keep the MAIR they copied (they never
/// touch the hint window).
pub fn select_hint(hint: MemAttr) -> Result<AliasWindow, Error> {
    let mair = Mair::with_hint(hint).map_err(|_| Error::NotAHint { attr: hint })?;
    let span = *HINT_SPAN.get().ok_or(Error::NotBuilt)?;
    let w = alias::hint_window(span, hint);
    if with_tables(|t| Ok(t.mair()))? == mair {
        return Ok(w);
    }
    if control().data_cached() {
        clean_invalidate_all()?;
    }
    with_tables(|t| {
        t.set_mair(mair);
        Ok(())
    })?;
    hw::write_mair(mair.value());
    model_markers::window_shared(w.va, w.pa as u64, w.len, w.attr.model_attr(), w.attributes().share);
    Ok(w)
}
