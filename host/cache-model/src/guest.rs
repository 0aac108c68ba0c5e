//! What the plugin knows about the guest: per vCPU, its Exception level and the controls of
//! each translation regime (SCTLR, TTBR, TCR, MAIR of EL1/EL2/EL3; HCR_EL2; SCR_EL3), the
//! attribute windows the kernel declared, and the translations of the guest's own tables
//! (walked by [`crate::walk`], cached in a small TLB).
//!
//! # Where the state comes from
//! The registers are read from the vCPU when its first TB is translated (reset values, or what
//! the boot code QEMU runs before the firmware set), then followed through every decoded write
//! (`MSR` to SCTLR/TTBR0/TTBR1/TCR/MAIR of any EL, HCR_EL2, SCR_EL3: see `decode`). The EL of
//! the code running comes from its TB (QEMU translates a TB for one EL, which is part of its
//! flags; the glue reads CPSR at translation), set at each TB's fetch.
//!
//! # The regime (Arm ARM DDI 0487, D8.1 "Translation regimes")
//! Code at EL0/EL1 uses the EL1&0 regime (SCTLR_EL1, TTBR0/1_EL1, TCR_EL1, MAIR_EL1), at EL2
//! the EL2 regime (non-VHE; with HCR_EL2.E2H = 1 the walk reports `vhe-el2-not-followed`), at
//! EL3 the EL3 regime. HCR_EL2.DC = 1 makes the EL1&0 stage 1 behave as if its MMU were off
//! with a default Normal Write-Back type (D8.2.x, "The effect of HCR_EL2.DC"), when EL2 is
//! enabled in the current security state (SCR_EL3.NS = 1, or no EL3 write seen). Stage 2
//! (HCR_EL2.VM), HCR_EL2.CD/ID/FWB and the security state's separate PA space are not
//! followed (the decoder's `model-warning`s name them).
//!
//! # Attributes
//! Data accesses: SCTLR.M = 0 → Device (HCR_EL2.DC: Normal write-back); M = 1 → the window
//! declared over the VA (an override, most recent first), else the walk's memory type (its MAIR
//! byte's inner domain); C = 0 → Non-cacheable (Device stays Device). Instruction fetches:
//! SCTLR.I = 0 → Non-cacheable; I = 1 with M = 0 → write-through (cacheable, as the
//! architecture makes them); I = 1 with M = 1 → window, else the walk's type. A data access
//! whose VA the walk cannot translate (QEMU did) takes write-back and is counted as
//! untranslated (`untranslated-va` warning at exit). The kernel's SCTLR marker declares the
//! SCTLR the attributes follow until the register is next written; translation always follows
//! the register (a kernel declaring its caches on with the MMU really off gets write-back
//! outside its windows, at PA = VA, as marker protocol 1 defined).
//!
//! # Translating a VA (instruction fetches, DC … VAC/VAU, DC ZVA, IC IVAU)
//! In order: the MMU of the VA's regime is off → PA = VA (the architecture, counted as
//! `va_identity`); the walk (`va_walked`); a page learned from a data access QEMU translated
//! (`va_learned`); a declared window with a known offset (`va_window`); else no translation:
//! the operation is not modelled and counted per cause (`untranslated-va` at exit). PA = VA is
//! never a guess.

use std::collections::{BTreeMap, HashSet};

use crate::hierarchy::{Attr, Shareability};
use crate::walk::{walk, Fault, PhysMem, Regime, RegimeRegs};

const SCTLR_M: u64 = 1 << 0;
const SCTLR_C: u64 = 1 << 2;
const SCTLR_I: u64 = 1 << 12;
const HCR_DC: u64 = 1 << 12;
const HCR_E2H: u64 = 1 << 34;
const SCR_NS: u64 = 1 << 0;
const PAGE_SHIFT: u32 = 12;
/// Slots of the learned-page table (direct-mapped by the VA page's low bits; the plugin's page
/// cache relies on it being a multiple of its own slots).
pub const RTLB_ENTRIES: usize = 1 << 12;
const TLB_ENTRIES: usize = 1 << 10;

/// A system register the guest state follows (each write is decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysReg {
    /// SCTLR_ELx of the regime.
    Sctlr(Regime),
    /// TTBR0_ELx of the regime.
    Ttbr0(Regime),
    /// TTBR1_EL1.
    Ttbr1El1,
    /// TCR_ELx of the regime.
    Tcr(Regime),
    /// MAIR_ELx of the regime.
    Mair(Regime),
    /// HCR_EL2.
    Hcr,
    /// SCR_EL3.
    Scr,
}

impl SysReg {
    /// Every register, as the glue reads them at the first translation: (register, QEMU's names
    /// for it, any of which may be exposed).
    pub const ALL: [(SysReg, &'static [&'static str]); 15] = [
        (SysReg::Sctlr(Regime::El1), &["SCTLR_EL1", "SCTLR"]),
        (SysReg::Sctlr(Regime::El2), &["SCTLR_EL2"]),
        (SysReg::Sctlr(Regime::El3), &["SCTLR_EL3"]),
        (SysReg::Ttbr0(Regime::El1), &["TTBR0_EL1"]),
        (SysReg::Ttbr0(Regime::El2), &["TTBR0_EL2"]),
        (SysReg::Ttbr0(Regime::El3), &["TTBR0_EL3"]),
        (SysReg::Ttbr1El1, &["TTBR1_EL1"]),
        (SysReg::Tcr(Regime::El1), &["TCR_EL1"]),
        (SysReg::Tcr(Regime::El2), &["TCR_EL2"]),
        (SysReg::Tcr(Regime::El3), &["TCR_EL3"]),
        (SysReg::Mair(Regime::El1), &["MAIR_EL1"]),
        (SysReg::Mair(Regime::El2), &["MAIR_EL2"]),
        (SysReg::Mair(Regime::El3), &["MAIR_EL3"]),
        (SysReg::Hcr, &["HCR_EL2"]),
        (SysReg::Scr, &["SCR_EL3"]),
    ];
}

/// A declared window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First VA.
    pub va: u64,
    /// Length in bytes (> 0).
    pub len: u64,
    /// Attribute of the window.
    pub attr: Attr,
    /// PA − VA: declared with the window, or learned from the first access inside it.
    pub offset: Option<u64>,
    /// The mapping's shareability (marker protocol 6; Inner before).
    pub share: Shareability,
}

impl Window {
    fn contains(&self, va: u64) -> bool {
        va.wrapping_sub(self.va) < self.len
    }
}

/// How a VA was translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Translation {
    /// The regime's MMU is off: PA = VA by the architecture.
    MmuOff,
    /// By the walk of the guest's tables.
    Walk,
    /// From a page a data access showed.
    Learned,
    /// From a window's offset.
    Window,
}

/// One vCPU's controls.
#[derive(Clone, Copy, Debug, Default)]
struct Cpu {
    el: u8,
    sctlr: [u64; 3],
    /// SCTLR as the kernel's SCTLR marker declared it (until the next decoded write): the
    /// attributes follow it; translation follows the real register.
    declared: [Option<u64>; 3],
    regs: [RegimeRegs; 3],
    hcr: u64,
    scr: Option<u64>,
}

impl Cpu {
    fn regime(&self) -> Regime {
        Regime::of_el(self.el)
    }

    /// The MMU of the current regime is off (the register, whatever a marker declared).
    fn real_mmu_off(&self) -> bool {
        self.sctlr[self.regime().index()] & SCTLR_M == 0
    }

    /// The SCTLR the attributes follow: the declared one, else the register.
    fn attr_sctlr(&self, r: Regime) -> u64 {
        self.declared[r.index()].unwrap_or(self.sctlr[r.index()])
    }

    /// HCR_EL2.DC applies: EL1&0, EL2 enabled in the current security state.
    fn default_cacheable(&self, r: Regime) -> bool {
        r == Regime::El1 && self.hcr & HCR_DC != 0 && self.scr.is_none_or(|s| s & SCR_NS != 0)
    }
}

/// A core no TB or write has named yet: EL1, everything 0.
static RESET: Cpu =
    Cpu { el: 1, sctlr: [0; 3], declared: [None; 3], regs: [RegimeRegs { ttbr0: 0, ttbr1: 0, tcr: 0, mair: 0 }; 3], hcr: 0, scr: None };

/// A cached walk: the 4 KiB VA page (+ 1; 0 = empty) of one vCPU's regime, in generation `gen`,
/// from a mapping of 2^`size_shift` bytes (a TLBI by VA of any page in it drops the entry).
#[derive(Clone, Copy, Debug, Default)]
struct TlbEntry {
    tag: u64,
    key: u32,
    gen: u32,
    pa_page: u64,
    attr: Option<Attr>,
    size_shift: u8,
    /// The descriptor's SH field.
    sh: u8,
    /// Descriptors the walk read (the TLB model's walk cost).
    levels: u8,
}

/// The VA bits a TLBI by VA names (VA[55:0]; the top byte is the range, or a tag).
const TLBI_VA_MASK: u64 = (1 << 56) - 1;

/// A data access whose page the walk of the guest's tables translated elsewhere than QEMU did
/// ([`Guest::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The access's VA.
    pub va: u64,
    /// QEMU's PA of it.
    pub qemu_pa: u64,
    /// The walk's PA of it.
    pub walk_pa: u64,
    /// The accessing instruction's PC.
    pub pc: u64,
}

/// Guest state the attribute and translation decisions need.
#[derive(Clone, Debug)]
pub struct Guest {
    cpus: Vec<Cpu>,
    /// In declaration order; the last containing window wins.
    windows: Vec<Window>,
    /// (VA page + 1, PA page); 0 = empty.
    rtlb: Vec<(u64, u64)>,
    tlb: Vec<TlbEntry>,
    /// Bumped to invalidate every cached walk (TLBI, a write to a followed register).
    gen: u32,
    /// VA pages that could not be translated, per cause: distinct pages, so that the count
    /// does not depend on how often the plugin asks (the shortcut asks less).
    untranslated: BTreeMap<String, (HashSet<u64>, u64, Option<u64>)>,
    /// Walks done (TLB misses).
    walks: u64,
    /// Data pages where the walk's PA differed from QEMU's: the pages, the first.
    disagreed: (HashSet<u64>, Option<Disagreement>),
    /// Print the first this many walks, the first this many faults, and (engine) every decoded
    /// translation-register write, to stderr
    /// (`CS_MODEL_WALK_LOG=N`, a debugging aid).
    pub log_walks: u64,
    faults_logged: u64,
    /// A Non-shareable cacheable mapping was seen (a window, or a walked descriptor): only then
    /// does [`Guest::data_shareability`] need asking.
    narrow: bool,
}

impl Default for Guest {
    fn default() -> Self {
        Self::new()
    }
}

impl Guest {
    /// MMU and caches off at EL1, no windows, nothing learned.
    pub fn new() -> Self {
        Self {
            cpus: Vec::new(),
            windows: Vec::new(),
            rtlb: vec![(0, 0); RTLB_ENTRIES],
            tlb: vec![TlbEntry::default(); TLB_ENTRIES],
            gen: 1,
            untranslated: BTreeMap::new(),
            walks: 0,
            log_walks: 0,
            faults_logged: 0,
            disagreed: (HashSet::new(), None),
            narrow: false,
        }
    }

    fn cpu_mut(&mut self, cpu: usize) -> &mut Cpu {
        if self.cpus.len() <= cpu {
            self.cpus.resize(cpu + 1, Cpu { el: 1, ..Cpu::default() });
        }
        &mut self.cpus[cpu]
    }

    fn cpu(&self, cpu: usize) -> &Cpu {
        self.cpus.get(cpu).unwrap_or(&RESET)
    }

    /// Sets the Exception level core `cpu` runs at (each TB's, at its fetch).
    #[inline]
    pub fn set_el(&mut self, cpu: usize, el: u8) {
        if self.cpus.get(cpu).is_some_and(|c| c.el == el) {
            return;
        }
        self.cpu_mut(cpu).el = el;
    }

    /// The Exception level of core `cpu` (1 before any TB said).
    pub fn el(&self, cpu: usize) -> u8 {
        self.cpu(cpu).el
    }

    /// Records a write of `v` to `reg` on core `cpu`; returns whether it changed anything a
    /// translation or an attribute depends on (then every cached walk is dropped).
    pub fn write(&mut self, cpu: usize, reg: SysReg, v: u64) -> bool {
        let c = self.cpu_mut(cpu);
        let slot = match reg {
            SysReg::Sctlr(r) => {
                c.declared[r.index()] = None;
                &mut c.sctlr[r.index()]
            }
            SysReg::Ttbr0(r) => &mut c.regs[r.index()].ttbr0,
            SysReg::Ttbr1El1 => &mut c.regs[0].ttbr1,
            SysReg::Tcr(r) => &mut c.regs[r.index()].tcr,
            SysReg::Mair(r) => &mut c.regs[r.index()].mair,
            SysReg::Hcr => &mut c.hcr,
            SysReg::Scr => {
                let changed = c.scr != Some(v);
                c.scr = Some(v);
                if changed {
                    self.invalidate();
                }
                return changed;
            }
        };
        let changed = *slot != v;
        *slot = v;
        if changed {
            self.invalidate();
        }
        changed
    }

    /// The value of `reg` on core `cpu` as the decoded writes (and resyncs) gave it.
    pub fn value(&self, cpu: usize, reg: SysReg) -> u64 {
        let c = self.cpu(cpu);
        match reg {
            SysReg::Sctlr(r) => c.sctlr[r.index()],
            SysReg::Ttbr0(r) => c.regs[r.index()].ttbr0,
            SysReg::Ttbr1El1 => c.regs[0].ttbr1,
            SysReg::Tcr(r) => c.regs[r.index()].tcr,
            SysReg::Mair(r) => c.regs[r.index()].mair,
            SysReg::Hcr => c.hcr,
            SysReg::Scr => c.scr.unwrap_or(0),
        }
    }

    /// Adopts `v` as `reg`'s value read from the vCPU (at a translation): unlike
    /// [`Guest::write`], an SCTLR declared by the marker stays declared. Returns whether the
    /// value differed from what the decoded writes gave (a write the plugin missed).
    ///
    /// Only the bits the model follows count: a bit the CPU does not implement reads as 0
    /// whatever was written (Linux 6.12 writes SCTLR_EL1.ATA, bit 41, which a Cortex-A72
    /// without MTE holds RES0), and that is no missed write.
    pub fn resync(&mut self, cpu: usize, reg: SysReg, v: u64) -> bool {
        let declared = match reg {
            SysReg::Sctlr(r) => self.cpu(cpu).declared[r.index()],
            _ => None,
        };
        let before = self.value(cpu, reg);
        self.write(cpu, reg, v);
        if let (SysReg::Sctlr(r), Some(d)) = (reg, declared) {
            self.cpu_mut(cpu).declared[r.index()] = Some(d);
        }
        (before ^ v) & Self::followed_bits(reg) != 0
    }

    /// The bits of `reg` translation or attributes depend on (all of TTBR, TCR, MAIR).
    fn followed_bits(reg: SysReg) -> u64 {
        match reg {
            SysReg::Sctlr(_) => SCTLR_M | SCTLR_C | SCTLR_I,
            SysReg::Hcr => HCR_DC | HCR_E2H,
            SysReg::Scr => SCR_NS,
            SysReg::Ttbr0(_) | SysReg::Ttbr1El1 | SysReg::Tcr(_) | SysReg::Mair(_) => u64::MAX,
        }
    }

    /// The SCTLR value the kernel's SCTLR marker declares for core `cpu`'s current EL: the
    /// attributes follow it until the register is written (a kernel may declare its memory
    /// cacheable with the MMU really off: its accesses are then write-back outside windows, at
    /// PA = VA, as marker protocol 1 defined).
    pub fn set_sctlr(&mut self, cpu: usize, v: u64) {
        let c = self.cpu_mut(cpu);
        let r = c.regime().index();
        if c.declared[r] != Some(v) {
            c.declared[r] = Some(v);
            self.invalidate();
        }
    }

    /// The SCTLR value the attributes of core `cpu`'s current regime follow (0, MMU and caches
    /// off, before any).
    pub fn sctlr(&self, cpu: usize) -> u64 {
        let c = self.cpu(cpu);
        c.attr_sctlr(c.regime())
    }

    /// Drops every cached walk (TLBI, or a followed register written).
    pub fn invalidate(&mut self) {
        self.gen = self.gen.wrapping_add(1).max(1);
    }

    /// Declares, replaces (same start) or removes (`len` 0) a window; `pa` is the physical
    /// address of its first byte when the kernel told it (protocol v2), else it is learned.
    pub fn window(&mut self, va: u64, len: u64, attr: Attr, pa: Option<u64>, share: Shareability) {
        self.windows.retain(|w| w.va != va);
        if len > 0 {
            self.narrow |= share == Shareability::Non && attr.cacheable();
            self.windows.push(Window { va, len, attr, offset: pa.map(|pa| pa.wrapping_sub(va)), share });
        }
    }

    /// Whether a cacheable Non-shareable mapping was ever seen (declared or walked): until then
    /// every access is Inner Shareable and [`Guest::data_shareability`] need not be asked.
    #[inline]
    pub fn narrow_seen(&self) -> bool {
        self.narrow
    }

    /// The shareability of a cacheable data access at `va` by core `cpu` (the sanitizer's
    /// `non-shareable-shared` rule): the window's over `va`, else the walked descriptor's SH
    /// (the reserved 0b01 as Inner); Inner while the regime's MMU is off (its default
    /// attributes are not judged) or the VA does not translate.
    pub fn data_shareability(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Shareability {
        if let Some(w) = self.window_at(va) {
            return w.share;
        }
        let c = self.cpu(cpu);
        let unmapped = c.attr_sctlr(c.regime()) & SCTLR_M == 0 || c.real_mmu_off();
        if unmapped || self.walked(cpu, va, mem).is_err() {
            return Shareability::Inner;
        }
        let (i, _, _) = self.tlb_slot(cpu, va);
        Shareability::from_sh_field(u64::from(self.tlb[i].sh)).unwrap_or(Shareability::Inner)
    }

    /// The TLB slot of `va` in core `cpu`'s current regime, its tag and its key.
    fn tlb_slot(&self, cpu: usize, va: u64) -> (usize, u64, u32) {
        let r = self.cpu(cpu).regime();
        let vpn = va >> PAGE_SHIFT;
        let key = (cpu as u32) << 2 | r.index() as u32;
        ((vpn as usize ^ (key as usize).wrapping_mul(0x9e37)) & (TLB_ENTRIES - 1), vpn + 1, key)
    }

    /// The declared windows.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    fn window_at(&self, va: u64) -> Option<&Window> {
        self.windows.iter().rev().find(|w| w.contains(va))
    }

    /// The walk of `va` in core `cpu`'s current regime, through the TLB: the PA of its page
    /// and the walk's attribute, or the fault.
    fn walked(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Result<(u64, Attr), Fault> {
        let c = self.cpu(cpu);
        let (r, e2h) = (c.regime(), c.hcr & HCR_E2H != 0);
        let regs = c.regs[r.index()];
        let (i, tag, key) = self.tlb_slot(cpu, va);
        let e = self.tlb[i];
        if e.tag == tag && e.key == key && e.gen == self.gen {
            if let Some(a) = e.attr {
                return Ok((e.pa_page, a));
            }
        }
        self.walks += 1;
        let result = walk(mem, r, &regs, e2h, va);
        let log_fault = result.is_err() && self.faults_logged < self.log_walks;
        if self.walks <= self.log_walks || log_fault {
            self.faults_logged += u64::from(log_fault);
            let l0 = mem.read_u64(regs.ttbr0 & 0x0000_ffff_ffff_f000);
            eprintln!(
                "cachescope-cache-model: walk {} cpu {cpu} {r:?} {regs:x?} (TTBR0's first entry {l0:x?}) va {va:#x}: {result:x?}",
                self.walks
            );
        }
        let w = result?;
        let pa_page = w.pa >> PAGE_SHIFT << PAGE_SHIFT;
        let attr = w.mem.attr();
        let size_shift = w.size_shift.clamp(PAGE_SHIFT, 63) as u8;
        self.narrow |= w.sh == 0 && attr.cacheable();
        self.tlb[i] = TlbEntry { tag, key, gen: self.gen, pa_page, attr: Some(attr), size_shift, sh: w.sh, levels: w.levels };
        Ok((pa_page, attr))
    }

    /// For the TLB model (`tlb.rs`): the regime (0..3: EL1&0, EL2, EL3), log2 of the mapping's
    /// size and the descriptors its walk reads, when `va` is translated by the guest's tables
    /// (`None` with the regime's MMU off, or when the walk faults).
    #[inline]
    pub fn mapping(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Option<(u8, u32, u8)> {
        if self.cpu(cpu).real_mmu_off() {
            return None;
        }
        self.walked(cpu, va, mem).ok()?;
        let (i, _, _) = self.tlb_slot(cpu, va);
        let e = &self.tlb[i];
        Some((self.cpu(cpu).regime().index() as u8, u32::from(e.size_shift), e.levels))
    }

    /// Counts an untranslated `va` under `what` and its fault; `pc` is asked once per cause, for
    /// its first occurrence (the warning names it).
    fn count_untranslated(&mut self, what: &str, va: u64, f: Fault, pc: impl FnOnce() -> Option<u64>) {
        let key = format!("{what}: {}", f.cause());
        match self.untranslated.get_mut(&key) {
            Some((set, _, _)) => {
                set.insert(va >> PAGE_SHIFT);
            }
            None => {
                self.untranslated.insert(key, (HashSet::from([va >> PAGE_SHIFT]), va, pc()));
            }
        }
    }

    /// The VA pages left untranslated so far, as ("use: cause", distinct 4 KiB pages, the
    /// first such VA, the PC of the instruction that made it when the plugin could tell).
    pub fn untranslated(&self) -> Vec<(String, u64, u64, Option<u64>)> {
        self.untranslated.iter().map(|(k, (set, first, pc))| (k.clone(), set.len() as u64, *first, *pc)).collect()
    }

    /// Walks done so far (translation-cache misses).
    pub fn walks(&self) -> u64 {
        self.walks
    }

    /// The mapped attribute of `va` with the MMU on: a window's, else the walk's (`None`:
    /// untranslated, counted under `what`).
    fn mapped(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem, what: &str) -> Option<Attr> {
        if let Some(w) = self.window_at(va) {
            return Some(w.attr);
        }
        if self.cpu(cpu).real_mmu_off() {
            // Declared on, really off: no tables to walk (write-back, the marker's contract).
            return Some(Attr::NormalWriteBack);
        }
        match self.walked(cpu, va, mem) {
            Ok((_, a)) => Some(a),
            Err(f) => {
                self.count_untranslated(what, va, f, || None);
                None
            }
        }
    }

    /// Attribute of a data access at `va` by core `cpu`.
    pub fn data_attr(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Attr {
        let c = self.cpu(cpu);
        let r = c.regime();
        let sctlr = c.attr_sctlr(r);
        if sctlr & SCTLR_M == 0 {
            return if c.default_cacheable(r) { Attr::NormalWriteBack } else { Attr::Device };
        }
        let mapped = self.mapped(cpu, va, mem, "data attribute").unwrap_or(Attr::NormalWriteBack);
        if sctlr & SCTLR_C == 0 && mapped != Attr::Device {
            return Attr::NormalNonCacheable;
        }
        mapped
    }

    /// Attribute of an instruction fetch at `va` by core `cpu`.
    pub fn fetch_attr(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Attr {
        let c = self.cpu(cpu);
        let r = c.regime();
        let sctlr = c.attr_sctlr(r);
        if sctlr & SCTLR_I == 0 {
            return Attr::NormalNonCacheable;
        }
        if sctlr & SCTLR_M == 0 {
            return if c.default_cacheable(r) { Attr::NormalWriteBack } else { Attr::NormalWriteThrough };
        }
        if let Some(w) = self.window_at(va) {
            return w.attr;
        }
        if self.cpu(cpu).real_mmu_off() {
            return Attr::NormalWriteBack;
        }
        // Untranslated: counted by the fetch's translation, which skips the fetch.
        self.walked(cpu, va, mem).map_or(Attr::NormalWriteBack, |(_, a)| a)
    }

    /// An instruction fetch's view of `va` for core `cpu` with one walk of its page: the
    /// attribute [`Guest::fetch_attr`] gives `va` and the translation [`Guest::try_translate`]
    /// gives the page's first byte (the fetch path asked both, walking the same page twice;
    /// the answers are the same, the second walk was a TLB hit).
    pub fn fetch_view(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> (Attr, Result<(u64, Translation), Fault>) {
        let page = va & !((1 << PAGE_SHIFT) - 1);
        let c = self.cpu(cpu);
        if c.real_mmu_off() {
            return (self.fetch_attr(cpu, va, mem), Ok((page, Translation::MmuOff)));
        }
        let c = self.cpu(cpu);
        let (r, sctlr) = (c.regime(), c.attr_sctlr(c.regime()));
        let default = c.default_cacheable(r);
        let walked = self.walked(cpu, page, mem);
        let attr = if sctlr & SCTLR_I == 0 {
            Attr::NormalNonCacheable
        } else if sctlr & SCTLR_M == 0 {
            if default {
                Attr::NormalWriteBack
            } else {
                Attr::NormalWriteThrough
            }
        } else if let Some(w) = self.window_at(va) {
            w.attr
        } else {
            walked.map_or(Attr::NormalWriteBack, |(_, a)| a)
        };
        (attr, self.translation_after(page, walked))
    }

    /// Counts `va` as untranslated under `what` (an `untranslated-va` cause), as
    /// [`Guest::translate`] does when [`Guest::try_translate`] fails.
    pub fn count_failed(&mut self, what: &str, va: u64, fault: Fault, pc: Option<u64>) {
        self.count_untranslated(what, va, fault, || pc);
    }

    /// Whether every byte of the 4 KiB page holding `va` has the same attribute (no window
    /// starts or ends inside it; a walk maps at least 4 KiB alike), so the plugin may cache the
    /// attribute per page.
    pub fn page_uniform(&self, va: u64) -> bool {
        let start = va & !((1 << PAGE_SHIFT) - 1);
        let end = start + (1 << PAGE_SHIFT);
        self.windows.iter().all(|w| {
            let w_end = w.va.wrapping_add(w.len);
            let inside = |x: u64| x > start && x < end;
            !inside(w.va) && !inside(w_end)
        })
    }

    /// Learns a translation from an access that went to `pa` through `va`; returns whether that
    /// changed what [`Guest::translate`] answers for any address.
    pub fn learn(&mut self, va: u64, pa: u64) -> bool {
        let vpn = va >> PAGE_SHIFT;
        let entry = &mut self.rtlb[(vpn as usize) & (RTLB_ENTRIES - 1)];
        let mut changed = *entry != (vpn + 1, pa >> PAGE_SHIFT);
        *entry = (vpn + 1, pa >> PAGE_SHIFT);
        if let Some(w) = self.windows.iter_mut().rev().find(|w| w.contains(va)) {
            if w.offset.is_none() {
                w.offset = Some(pa.wrapping_sub(va));
                changed = true;
            }
        }
        changed
    }

    /// Checks the walk against QEMU's own translation of a data access at `va` (to `pa`): a
    /// different PA is counted ([`Guest::disagreements`]). A failed walk is counted by the
    /// access's attribute, not here.
    pub fn check(&mut self, cpu: usize, va: u64, pa: u64, pc: u64, mem: &dyn PhysMem) {
        if self.cpu(cpu).real_mmu_off() {
            return;
        }
        if let Ok((pa_page, _)) = self.walked(cpu, va, mem) {
            let walked = pa_page | (va & ((1 << PAGE_SHIFT) - 1));
            if walked != pa {
                self.disagreed.0.insert(va >> PAGE_SHIFT);
                self.disagreed.1.get_or_insert(Disagreement { va, qemu_pa: pa, walk_pa: walked, pc });
            }
        }
    }

    /// The data pages where the walk disagreed with QEMU, and the first disagreement.
    pub fn disagreements(&self) -> (u64, Option<Disagreement>) {
        (self.disagreed.0.len() as u64, self.disagreed.1)
    }

    /// Forgets learned pages and cached walks (TLBI). Window offsets stay: a window is
    /// re-declared when remapped.
    pub fn forget_pages(&mut self) {
        self.rtlb.fill((0, 0));
        self.invalidate();
    }

    /// log2 of the span of VAs around `va` whose translations a TLBI by VA of `va` by `cpu`
    /// may have invalidated: the larger of the cached walk's mapping that holds `va` (the
    /// translation before the TLBI) and the current tables' (a page or block; the granule's
    /// page when the walk faults at the last level, since a guest that breaks a block before
    /// making it anew faults above that level until it has). `None` when the tables cannot
    /// tell (the MMU off, a fault above the last level, an unsupported regime). Asked before
    /// [`Guest::forget_page`].
    pub fn tlbi_extent(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Option<u32> {
        let c = self.cpu(cpu);
        if c.real_mmu_off() {
            return None;
        }
        let (r, e2h) = (c.regime(), c.hcr & HCR_E2H != 0);
        let regs = c.regs[r.index()];
        let (i, tag, key) = self.tlb_slot(cpu, va);
        let e = self.tlb[i];
        let old = if e.tag == tag && e.key == key && e.gen == self.gen { u32::from(e.size_shift) } else { PAGE_SHIFT };
        let new = match walk(mem, r, &regs, e2h, va) {
            Ok(w) => w.size_shift.clamp(PAGE_SHIFT, 63),
            Err(Fault::Translation(3)) => crate::walk::granule_shift(r, &regs, va)?,
            Err(_) => return None,
        };
        Some(old.max(new))
    }

    /// Forgets learned pages (as [`Guest::forget_pages`]) but, of the cached walks, only those
    /// whose mapping holds `va` (a TLBI by VA: the architecture lets every other entry stay, so
    /// a guest that changes a valid entry breaks before it makes, with a TLBI of that VA; an
    /// invalid entry is never cached). Every regime's and vCPU's matching entries go (a
    /// superset of what the TLBI's regime, ASID and level select).
    pub fn forget_page(&mut self, va: u64) {
        self.rtlb.fill((0, 0));
        let va = va & TLBI_VA_MASK;
        let gen = self.gen;
        for e in self.tlb.iter_mut().filter(|e| e.tag != 0 && e.gen == gen) {
            let entry_va = ((e.tag - 1) << PAGE_SHIFT) & TLBI_VA_MASK;
            if (entry_va ^ va) >> e.size_shift == 0 {
                e.tag = 0;
            }
        }
    }

    /// Translates `va` for core `cpu` (see the module documentation for the order); `None`
    /// when it cannot be, counted under `what` (an `untranslated-va` cause).
    /// `pc`: the instruction's, when the caller knows it (the warning names the first).
    pub fn translate(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem, what: &str, pc: Option<u64>) -> Option<(u64, Translation)> {
        match self.try_translate(cpu, va, mem) {
            Ok(t) => Some(t),
            Err(fault) => {
                self.count_untranslated(what, va, fault, || pc);
                None
            }
        }
    }

    /// [`Guest::translate`] without counting: the fault when there is no translation.
    pub fn try_translate(&mut self, cpu: usize, va: u64, mem: &dyn PhysMem) -> Result<(u64, Translation), Fault> {
        if self.cpu(cpu).real_mmu_off() {
            return Ok((va, Translation::MmuOff));
        }
        let walked = self.walked(cpu, va, mem);
        self.translation_after(va, walked)
    }

    /// [`Guest::try_translate`] with the MMU on, once `va`'s page has been walked (`walked`).
    fn translation_after(&self, va: u64, walked: Result<(u64, Attr), Fault>) -> Result<(u64, Translation), Fault> {
        let fault = match walked {
            Ok((pa_page, _)) => return Ok((pa_page | (va & ((1 << PAGE_SHIFT) - 1)), Translation::Walk)),
            Err(f) => f,
        };
        let vpn = va >> PAGE_SHIFT;
        let (tag, ppn) = self.rtlb[(vpn as usize) & (RTLB_ENTRIES - 1)];
        if tag == vpn + 1 {
            return Ok((ppn << PAGE_SHIFT | (va & ((1 << PAGE_SHIFT) - 1)), Translation::Learned));
        }
        if let Some(off) = self.window_at(va).and_then(|w| w.offset) {
            return Ok((va.wrapping_add(off), Translation::Window));
        }
        Err(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: u64 = SCTLR_M | SCTLR_C | SCTLR_I;
    const RAM: u64 = 0x4000_0000;
    const AF: u64 = 1 << 10 | 3 << 8;

    /// Tables at PA 0x1000: 4K, T0SZ = 32 (start level 1): VA 0..1 GiB Device block, VA
    /// 1..2 GiB → PA 0x8000_0000 Normal write-back except its first 2 MiB, NC (L2 block).
    struct Tables;

    impl PhysMem for Tables {
        fn read_u64(&self, pa: u64) -> Option<u64> {
            match pa {
                0x1000 => Some(AF | 1),                        // L1[0]: Device block (AttrIndx 0)
                0x1008 => Some(0x2000 | 3),                    // L1[1]: table
                0x2000 => Some(0x8000_0000 | AF | 2 << 2 | 1), // L2[0]: NC 2 MiB
                0x2008..=0x2ff8 => Some((0x8000_0000 + (((pa - 0x2000) / 8) << 21)) | AF | 1 << 2 | 1),
                _ => Some(0),
            }
        }
    }

    fn with_tables(regime: Regime) -> Guest {
        let mut g = Guest::new();
        g.write(0, SysReg::Ttbr0(regime), 0x1000);
        g.write(0, SysReg::Tcr(regime), 32);
        g.write(0, SysReg::Mair(regime), 0x44_ff_00);
        g
    }

    #[test]
    fn a_resync_counts_only_bits_the_model_follows() {
        let mut g = Guest::new();
        // Linux 6.12's SCTLR_EL1 with ATA (bit 41), read back without it (no MTE).
        let written = 0x0200_0020_34f4_d91d;
        g.write(0, SysReg::Sctlr(Regime::El1), written);
        assert!(!g.resync(0, SysReg::Sctlr(Regime::El1), written & !(1 << 41)), "a RES0 bit");
        assert_eq!(g.value(0, SysReg::Sctlr(Regime::El1)), written & !(1 << 41), "the CPU's value adopted");
        assert!(g.resync(0, SysReg::Sctlr(Regime::El1), written & !(1 << 41) & !SCTLR_C), "the C bit");
        g.write(0, SysReg::Ttbr0(Regime::El1), 0x4000_0000);
        assert!(g.resync(0, SysReg::Ttbr0(Regime::El1), 0x4000_1000));
        assert!(!g.resync(0, SysReg::Ttbr0(Regime::El1), 0x4000_1000), "no difference");
    }

    #[test]
    fn attributes_follow_sctlr_tables_and_windows() {
        let mut g = with_tables(Regime::El1);
        let m = &Tables;
        assert_eq!(g.data_attr(0, RAM, m), Attr::Device, "MMU off");
        assert_eq!(g.fetch_attr(0, RAM, m), Attr::NormalNonCacheable, "I off");
        g.write(0, SysReg::Sctlr(Regime::El1), SCTLR_I);
        assert_eq!(g.fetch_attr(0, RAM, m), Attr::NormalWriteThrough);
        g.write(0, SysReg::Sctlr(Regime::El1), SCTLR_M);
        assert_eq!(g.data_attr(0, RAM + 0x20_0000, m), Attr::NormalNonCacheable, "C off");
        g.write(0, SysReg::Sctlr(Regime::El1), ON);
        assert_eq!(g.data_attr(0, RAM + 0x20_0000, m), Attr::NormalWriteBack, "the tables' WB block");
        assert_eq!(g.data_attr(0, RAM + 0x1000, m), Attr::NormalNonCacheable, "the tables' NC block");
        assert_eq!(g.fetch_attr(0, RAM + 0x1000, m), Attr::NormalNonCacheable);
        assert_eq!(g.data_attr(0, 0x900_0000, m), Attr::Device, "the tables' Device block");
        // Windows override the tables; the last declared wins; removal restores the tables'.
        g.window(RAM, 0x10_0000, Attr::NormalWriteThrough, None, Shareability::Inner);
        g.window(RAM + 0x8_0000, 0x1000, Attr::Device, None, Shareability::Inner);
        assert_eq!(g.data_attr(0, RAM + 0x40, m), Attr::NormalWriteThrough);
        assert_eq!(g.data_attr(0, RAM + 0x8_0040, m), Attr::Device, "later window wins");
        g.window(RAM, 0, Attr::NormalWriteBack, None, Shareability::Inner);
        assert_eq!(g.data_attr(0, RAM + 0x40, m), Attr::NormalNonCacheable, "removed");
        // MAIR written: index 1 turns write-through, the cached walk is dropped.
        assert!(g.write(0, SysReg::Mair(Regime::El1), 0x44_bb_00));
        assert_eq!(g.data_attr(0, RAM + 0x20_0000, m), Attr::NormalWriteThrough);
        assert!(!g.write(0, SysReg::Mair(Regime::El1), 0x44_bb_00), "same value: nothing changes");
        // Out of the 32-bit range: write-back assumed for the data access, counted untranslated.
        assert_eq!(g.data_attr(0, 0x1_0000_0000, m), Attr::NormalWriteBack);
        assert_eq!(g.untranslated(), vec![("data attribute: va-out-of-range".to_string(), 1, 0x1_0000_0000, None)]);
    }

    #[test]
    fn each_el_has_its_regime_and_hcr_dc_makes_el1_cacheable() {
        let mut g = with_tables(Regime::El2);
        let m = &Tables;
        g.set_el(0, 2);
        assert_eq!(g.data_attr(0, RAM + 0x20_0000, m), Attr::Device, "SCTLR_EL2.M = 0");
        g.write(0, SysReg::Sctlr(Regime::El2), ON);
        assert_eq!(g.data_attr(0, RAM + 0x20_0000, m), Attr::NormalWriteBack, "EL2's tables");
        assert_eq!(g.translate(0, RAM + 0x20_0040, m, "t", None), Some((0x8020_0040, Translation::Walk)));
        // EL1: its own SCTLR (off), so PA = VA; with HCR_EL2.DC, Normal write-back.
        g.set_el(0, 1);
        assert_eq!(g.translate(0, RAM + 0x20_0040, m, "t", None), Some((RAM + 0x20_0040, Translation::MmuOff)));
        assert_eq!(g.data_attr(0, RAM, m), Attr::Device);
        g.write(0, SysReg::Hcr, HCR_DC);
        assert_eq!(g.data_attr(0, RAM, m), Attr::NormalWriteBack);
        assert_eq!(g.fetch_attr(0, RAM, m), Attr::NormalNonCacheable, "SCTLR_EL1.I = 0 still");
        g.write(0, SysReg::Scr, 0);
        assert_eq!(g.data_attr(0, RAM, m), Attr::Device, "Secure EL1: EL2 (and DC) not in effect");
        // VHE: EL2's two-range regime is not followed.
        g.set_el(0, 2);
        g.write(0, SysReg::Hcr, HCR_E2H);
        assert_eq!(g.translate(0, RAM + 0x20_0040, m, "t", None), None);
        assert_eq!(g.untranslated(), vec![("t: vhe-el2-not-followed".to_string(), 1, RAM + 0x20_0040, None)]);
        // A second core keeps its own state.
        assert_eq!(g.el(1), 1);
        assert_eq!(g.sctlr(1), 0);
    }

    /// The SCTLR marker declares the attributes' view; the register decides translation.
    #[test]
    fn a_declared_sctlr_gives_attributes_not_translations() {
        let mut g = with_tables(Regime::El1);
        let m = &Tables;
        g.set_sctlr(0, ON);
        assert_eq!(g.data_attr(0, RAM + 0x1000, m), Attr::NormalWriteBack, "MMU really off: no tables");
        assert_eq!(g.fetch_attr(0, RAM + 0x1000, m), Attr::NormalWriteBack);
        assert_eq!(g.translate(0, RAM + 0x1000, m, "t", None), Some((RAM + 0x1000, Translation::MmuOff)));
        g.window(RAM, 0x1000, Attr::NormalNonCacheable, None, Shareability::Inner);
        assert_eq!(g.data_attr(0, RAM + 0x40, m), Attr::NormalNonCacheable, "windows apply");
        g.set_sctlr(0, SCTLR_M);
        assert_eq!(g.data_attr(0, RAM + 0x1040, m), Attr::NormalNonCacheable, "declared C = 0");
        // A real write supersedes the declaration: the tables apply.
        g.write(0, SysReg::Sctlr(Regime::El1), ON);
        assert_eq!(g.data_attr(0, RAM + 0x1040, m), Attr::NormalNonCacheable, "the tables' NC block");
        assert_eq!(g.translate(0, RAM + 0x1040, m, "t", None), Some((0x8000_1040, Translation::Walk)));
        assert!(g.untranslated().is_empty());
        // A value read from the vCPU: adopted, a declared SCTLR stays declared.
        g.set_sctlr(0, SCTLR_M);
        assert!(!g.resync(0, SysReg::Sctlr(Regime::El1), ON), "the register's value already");
        assert!(g.resync(0, SysReg::Ttbr0(Regime::El1), 0x5000));
        assert_eq!(g.sctlr(0), SCTLR_M, "still declared");
        assert!(g.resync(0, SysReg::Sctlr(Regime::El1), 0));
        assert_eq!(g.sctlr(0), SCTLR_M, "still declared");
    }

    #[test]
    fn translation_order_walk_learned_window_then_untranslated() {
        let mut g = with_tables(Regime::El1);
        let m = &Tables;
        g.write(0, SysReg::Sctlr(Regime::El1), ON);
        assert_eq!(g.translate(0, RAM + 0x1234, m, "t", None), Some((0x8000_1234, Translation::Walk)));
        // Beyond the range: a page learned from a data access, then a window's offset.
        let far = 0x2_0000_0000;
        assert_eq!(g.translate(0, far, m, "t", None), None);
        g.window(far, 0x10_0000, Attr::NormalNonCacheable, Some(0x5000_0000), Shareability::Inner);
        assert_eq!(g.translate(0, far + 0x5_0080, m, "t", None), Some((0x5005_0080, Translation::Window)));
        assert!(g.learn(far + 0x40, 0x6000_0040));
        assert_eq!(g.translate(0, far + 0x80, m, "t", None), Some((0x6000_0080, Translation::Learned)));
        g.forget_pages();
        assert_eq!(g.translate(0, far + 0x80, m, "t", None), Some((0x5000_0080, Translation::Window)));
        g.window(far, 0x10_0000, Attr::NormalNonCacheable, None, Shareability::Inner);
        assert_eq!(g.translate(0, far + 0x1_0000, m, "t", None), None, "re-declared without a PA");
        assert_eq!(g.untranslated(), vec![("t: va-out-of-range".to_string(), 2, 0x2_0000_0000, None)], "two distinct pages");
        assert!(g.page_uniform(RAM));
        // QEMU's translation of a data access checks the walk.
        g.check(0, RAM + 0x1234, 0x8000_1234, 0x40_0000, m);
        assert_eq!(g.disagreements(), (0, None));
        g.check(0, RAM + 0x1234, 0x9000_1234, 0x40_0004, m);
        g.check(0, RAM + 0x1238, 0x9000_1238, 0x40_0008, m);
        let first = Disagreement { va: RAM + 0x1234, qemu_pa: 0x9000_1234, walk_pa: 0x8000_1234, pc: 0x40_0004 };
        assert_eq!(g.disagreements(), (1, Some(first)), "the first access, with its PC");
    }
}
