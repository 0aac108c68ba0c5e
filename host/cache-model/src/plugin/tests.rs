//! Differential tests of the shortcut: the engine with the shortcut (`fast=on`) and without it
//! (`fast=off`, every access through the model) on the same random traces must count the same
//! at every step and write the same records, byte for byte (bar `model-run.fast`). The traces
//! are one vCPU's, or several vCPUs' run round-robin ([`shortcut_allowed`]; the cores take
//! turns at TB boundaries, tagged, on shared data, so that snoops change remembered lines): TBs executed
//! back to back and in turn, data accesses with locality (single and batched), every
//! maintenance instruction the engine models, prefetches, TLBI and SCTLR writes, and markers
//! (phases, windows of every attribute, maintenance ranges, quiet, geometry changes).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use cachescope_arch::attr::Shareability;
use cachescope_arch::cache::id::{Clidr, Ctr};
use cachescope_arch::cache::Kind;
use cachescope_arch::marker::{Marker, ModelAttr};

use crate::cache::xorshift64star;
use crate::config::Settings;
use crate::decode::{Insn, Prefetch, PrfAddr};
use crate::guest::SysReg;
use crate::hierarchy::{Hint, LineOp, Point, Totals};
use crate::walk::Regime;

use super::access::TbAt;
use super::engine::{inline_repeats_allowed, shortcut_allowed, Engine, Host, MemAccess, NO_TB, SP};
use super::shortcut::FetchMemo;
use super::tb_plan::Group;

/// The fake emulator: the board's two counters for vCPU 0, phase names made up from their VA,
/// and the guest's translation tables ([`tables`]).
struct FakeHost {
    execs: AtomicU64,
    last: AtomicU64,
    tables: HashMap<u64, u64>,
    /// The running PC [`Host::pc`] answers (0: not readable).
    pc: AtomicU64,
}

impl Default for FakeHost {
    fn default() -> Self {
        Self { execs: AtomicU64::new(0), last: AtomicU64::new(0), tables: tables(), pc: AtomicU64::new(0) }
    }
}

impl crate::walk::PhysMem for FakeHost {
    fn read_u64(&self, pa: u64) -> Option<u64> {
        self.tables.get(&pa).copied()
    }
}

/// Where the fake guest's tables are (PAs no access of the traces touches).
const L0: u64 = 0x7000_0000;
/// TCR_EL1: 4K granules (TG1 = 0b10), 48-bit VAs both halves, 40-bit PAs.
const TCR: u64 = 16 | 16 << 16 | 0b10 << 30 | 0b010 << 32;
/// MAIR_EL1: 0 Device-nGnRE, 1 Normal WB, 2 Normal NC, 3 Normal WT.
const MAIR: u64 = 0xbb_44_ff_04;
/// The page of RAM the tables map Non-cacheable, the one they map write-through, the one they
/// leave unmapped (QEMU's own translation still maps it: the walk's fault is counted).
const TABLE_NC: u64 = 0xa_0000;
const TABLE_WT: u64 = 0xb_0000;
const TABLE_HOLE: u64 = 0xc_0000;

/// The guest's tables: VA = PA + [`VA_OFFSET`], by 1 GiB blocks (PA 0..1 GiB Device), except
/// RAM's first 2 MiB, mapped by 4 KiB pages: Normal write-back but [`TABLE_NC`], [`TABLE_WT`]
/// and [`TABLE_HOLE`]; the rest of RAM's GiB by 2 MiB write-back blocks.
fn tables() -> HashMap<u64, u64> {
    let (l1, l2, l3) = (L0 + 0x1000, L0 + 0x2000, L0 + 0x3000);
    let af = 1 << 10 | 3 << 8;
    let mut t = HashMap::new();
    t.insert(L0, l1 | 3);
    let l1_index = |va: u64| (va >> 30) & 511;
    t.insert(l1 + 8 * l1_index(VA_OFFSET), af | 1);
    t.insert(l1 + 8 * l1_index(VA_OFFSET + RAM), l2 | 3);
    t.insert(l2, l3 | 3);
    for k in 1..512 {
        t.insert(l2 + 8 * k, (RAM + (k << 21)) | af | 1 << 2 | 1);
    }
    for k in 0..512u64 {
        let idx = match k << 12 {
            TABLE_NC => 2,
            TABLE_WT => 3,
            TABLE_HOLE => {
                t.insert(l3 + 8 * k, 0);
                continue;
            }
            _ => 1,
        };
        t.insert(l3 + 8 * k, (RAM + (k << 12)) | af | idx << 2 | 3);
    }
    t
}

impl Host for FakeHost {
    fn execs(&self, _cpu: usize) -> u64 {
        self.execs.load(Relaxed)
    }

    fn forget_tb(&self, _cpu: usize) {
        self.last.store(0, Relaxed);
    }

    fn id_regs(&self) -> (Option<Ctr>, Option<Clidr>) {
        // QEMU's Cortex-A72: IDC = DIC = 0, 64-byte minimum lines.
        (Some(Ctr { raw: 0x8444_c004 }), None)
    }

    fn read_name(&self, va: u64) -> Option<String> {
        Some(format!("phase-at-{va:x}"))
    }

    fn regime_registers(&self, _el: u8) -> Vec<(SysReg, u64)> {
        Vec::new()
    }

    fn pc(&self) -> Option<u64> {
        Some(self.pc.load(Relaxed)).filter(|&pc| pc != 0)
    }
}

/// The guest's VA → PA map: VA = PA + this; the device region is I/O.
const VA_OFFSET: u64 = 0x1_0000_0000;
const RAM: u64 = 0x4000_0000;
const DEVICE: u64 = 0x0900_0000;

struct FakeAccess {
    size: u32,
    value: u64,
}

impl MemAccess for FakeAccess {
    fn size(&self) -> u32 {
        self.size
    }
    fn hwaddr(&self, vaddr: u64) -> Option<(u64, bool)> {
        let pa = vaddr - VA_OFFSET;
        Some((pa, (DEVICE..DEVICE + 0x1000).contains(&pa)))
    }
    fn value(&self) -> Option<u64> {
        Some(self.value)
    }
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A fetch callback's identity in a trace: TB key, segment, VA, length.
type MemoKey = (u64, usize, u64, u64);

/// One engine and the board semantics the glue's inline ops give it.
struct Run {
    engine: Engine<FakeHost>,
    out: Buf,
    /// The fetch memo of each TB's segments (by TB key and segment), as the glue keeps one per
    /// callback.
    memos: std::sync::Mutex<HashMap<MemoKey, std::sync::Arc<FetchMemo>>>,
}

impl Run {
    fn new(args: &[&str], fast: bool) -> Self {
        Self::with_vcpus(args, fast, 1, false)
    }

    /// An engine for `vcpus` vCPUs (the trace runs on vCPU 0), QEMU round-robin or not.
    fn with_vcpus(args: &[&str], fast: bool, vcpus: usize, round_robin: bool) -> Self {
        let mut words: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        words.push(format!("fast={}", if fast { "on" } else { "off" }));
        let settings = Settings::parse(&words).expect("valid settings");
        let out = Buf::default();
        let engine = Engine::new(settings, vcpus, Box::new(out.clone()), FakeHost::default()).with_round_robin(round_robin);
        engine.seed_registers(&[(SysReg::Ttbr0(Regime::El1), L0), (SysReg::Tcr(Regime::El1), TCR), (SysReg::Mair(Regime::El1), MAIR)]);
        assert_eq!(engine.fast_on, fast);
        Self { engine, out, memos: Default::default() }
    }

    /// One execution of TB `key` (`va`, `bytes`), fetched in `segments` (lengths; one = the TB
    /// lies in one fetch segment, so its back-to-back repeats are counted inline).
    fn tb(&self, key: u64, va: u64, segments: &[u64]) {
        let e = &self.engine;
        if e.counts_repeats() {
            // Several vCPUs round-robin: the engine's own boards, as the glue calls them.
            let memo = self.memo(key, 0, va, segments[0]);
            let key = if segments.len() == 1 { key } else { NO_TB };
            e.tb_exec(0, key, |counted| e.fetch(0, va, segments[0], counted, TbAt::Start(None), &memo));
        } else {
            self.tb_inline(key, va, segments);
        }
        let mut at = va + segments[0];
        for (k, &len) in segments.iter().enumerate().skip(1) {
            e.fetch(0, at, len, false, TbAt::Later, &self.memo(key, k, at, len));
            at += len;
        }
    }

    /// The fetch memo of TB `key`'s segment `k` (at `va`, `len` bytes: one callback's).
    fn memo(&self, key: u64, k: usize, va: u64, len: u64) -> std::sync::Arc<FetchMemo> {
        self.memos.lock().unwrap().entry((key, k, va, len)).or_default().clone()
    }

    /// [`Run::tb`]'s first segment with one vCPU: the glue's inline scoreboard semantics.
    fn tb_inline(&self, key: u64, va: u64, segments: &[u64]) {
        let e = &self.engine;
        let inline = e.repeats_inline && segments.len() == 1;
        if !inline || e.host.last.load(Relaxed) != key {
            e.fetch(0, va, segments[0], inline, TbAt::Start(None), &self.memo(key, 0, va, segments[0]));
        }
        if e.repeats_inline {
            if inline {
                e.host.execs.fetch_add(1, Relaxed);
                e.host.last.store(key, Relaxed);
            } else {
                e.host.last.store(NO_TB, Relaxed);
            }
        }
    }

    fn special(&self, insn: Insn, pc: u64, regs: &[(u8, u64)]) {
        let regs: HashMap<u8, u64> = regs.iter().copied().collect();
        self.engine.special(0, insn, pc, |n| regs.get(&n).copied().unwrap_or(0));
    }

    fn marker(&self, m: Marker, pc: u64) {
        let x = m.encode();
        let regs: Vec<(u8, u64)> = (9..=13).zip(x).collect();
        self.special(Insn::Marker, pc, &regs);
    }

    /// Every count, hazard occurrences included (those dropped while quiet too).
    fn counts(&self) -> (Totals, u64, u64) {
        let mut core = self.engine.lock();
        (self.engine.now(&mut core), core.hazards.occurrences, core.quieted)
    }

    /// The records at exit, `model-run.fast` normalised.
    fn finish(self) -> String {
        self.engine.at_exit();
        let text = String::from_utf8(self.out.0.lock().unwrap().clone()).unwrap();
        text.replace("\"fast\":true", "\"fast\":false")
    }
}

/// One step of a trace (`Core(c)`: the next TBs run on core c, round-robin: tagged TPIDR_EL1,
/// callback index 0).
#[derive(Clone, Debug)]
enum Step {
    Tb { key: u64, va: u64, segments: Vec<u64> },
    Data { va: u64, size: u32, write: bool, nt: bool, pc: u64 },
    Group { va: u64, write: bool, group: Arc<Group> },
    Special { insn: Insn, pc: u64, regs: Vec<(u8, u64)> },
    Marker(Marker),
    Core(u32),
}

fn apply(r: &Run, s: &Step) {
    match s {
        Step::Tb { key, va, segments } => r.tb(*key, *va, segments),
        Step::Data { va, size, write, nt, pc } => {
            let info = FakeAccess { size: *size, value: *va };
            r.engine.mem(0, &info, *va, *va, *write, None, Hint { pc: *pc, nt: *nt });
        }
        Step::Group { va, write, group } => r.engine.mem_group(0, &FakeAccess { size: group.size, value: 0 }, *va, *write, group),
        Step::Special { insn, pc, regs } => r.special(*insn, *pc, regs),
        Step::Marker(m) => r.marker(*m, 0x8_0000),
        Step::Core(c) => r.engine.identify_by(Some(cachescope_arch::marker::core_id_value(*c)), || None, 0),
    }
}

/// The windows a trace declares (VA, length, attribute): write-through, non-cacheable (one
/// starting inside a page: that page is not uniform), and device memory.
const WINDOWS: [(u64, u64, ModelAttr); 3] = [
    (VA_OFFSET + RAM + 0x4_0000, 0x2000, ModelAttr::NormalWriteThrough),
    (VA_OFFSET + RAM + 0x6_0800, 0x1800, ModelAttr::NormalNonCacheable),
    (VA_OFFSET + DEVICE, 0x1000, ModelAttr::Device),
];

/// A random trace of `n` steps: the start-up markers, then loops over a few TBs with data
/// accesses near a few pointers, and now and then anything else.
fn trace(seed: u64, n: usize, guest_geometry: bool) -> Vec<Step> {
    let mut rng = seed ^ 0x5eed_cafe;
    let mut r = move || xorshift64star(&mut rng);
    let mut steps = vec![Step::Marker(Marker::Hello { version: crate::protocol::VERSION })];
    if guest_geometry {
        for (level, kind, line, sets, ways) in
            [(1, Kind::Instruction, 64, 64, 2), (1, Kind::Data, 64, 32, 2), (2, Kind::Unified, 64, 256, 4)]
        {
            steps.push(Step::Marker(Marker::Geometry { level, kind, line, sets, ways }));
        }
    }
    steps.push(Step::Marker(Marker::Sctlr(1 | 4 | 1 << 12)));
    for &(va, len, attr) in &WINDOWS {
        steps.push(Step::Marker(Marker::Window { va, len, attr, pa: Some(va - VA_OFFSET), share: Shareability::Inner }));
    }
    // TBs: (key, va, fetch segments), some in one line, some over two or three lines (one
    // segment: the first line continues the previous TB's), some cut into segments; each in one
    // page, as QEMU's are.
    let code = VA_OFFSET + RAM + 0x1_0000;
    let tbs: Vec<(u64, u64, Vec<u64>)> = (0..12u64)
        .map(|k| {
            let va = code + k * 0x140 + 4 * (r() % 12);
            let len = 4 * (1 + r() % 40);
            let segments = if k % 4 == 3 { vec![len, 4 * (1 + r() % 8)] } else { vec![len] };
            (k + 1, va, segments)
        })
        .collect();
    // Pointers: cacheable RAM (two of them), the write-through and non-cacheable windows, device,
    // and the code itself (code written by data stores, then run).
    // Then the pages the tables map NC, WT or not at all.
    let bases = [
        VA_OFFSET + RAM + 0x8_0000,
        VA_OFFSET + RAM + 0x9_0f00,
        WINDOWS[0].0 + 0x100,
        WINDOWS[1].0 + 0x7c0,
        WINDOWS[2].0,
        VA_OFFSET + RAM + TABLE_NC + 0x40,
        VA_OFFSET + RAM + TABLE_WT + 0xfc0,
        VA_OFFSET + RAM + TABLE_HOLE + 0x80,
        code + 0x180,
    ];
    let ops = [LineOp::Clean, LineOp::Invalidate, LineOp::CleanInvalidate];
    let mut open_phases: Vec<u64> = Vec::new();
    let mut next_phase = 1;
    let mut maint: Option<u64> = None;
    while steps.len() < n {
        let (key, va, segments) = tbs[(r() % tbs.len() as u64) as usize].clone();
        // Now and then the loop writes its own code (the TB whose repeats are counted inline).
        let base = match r() % 50 {
            0 => bases[8],
            1 | 2 => va,
            _ => bases[(r() % 8) as usize],
        };
        let reps = 1 + r() % 6;
        for rep in 0..reps {
            steps.push(Step::Tb { key, va, segments: segments.clone() });
            for k in 0..r() % 5 {
                let pc = va + 4 * k;
                let off = (rep * 8 + r() % 24 * 8) as i64 - 16;
                let va = base.wrapping_add(off as u64) + r() % 2 * (r() % 8);
                match r() % 10 {
                    0 => {
                        let members: Vec<(i64, u32, bool)> =
                            (0..1 + r() % 3).map(|m| (8 * (m as i64 + 1) * if r() % 5 == 0 { 8 } else { 1 }, 8, r() % 3 == 0)).collect();
                        steps.push(Step::Group { va, write: r() % 3 == 0, group: Arc::new(Group::new(8, members, pc)) });
                    }
                    _ => {
                        let size = [1, 4, 8, 16][(r() % 4) as usize];
                        steps.push(Step::Data { va, size, write: r() % 3 == 0, nt: r() % 12 == 0, pc });
                    }
                }
            }
        }
        let pc = va;
        let target = bases[(r() % 3) as usize] + r() % 0x100;
        let step = match r() % 40 {
            0 => Step::Special {
                insn: Insn::DcVa {
                    op: ops[(r() % 3) as usize],
                    point: if r() % 4 == 0 { Point::Unification } else { Point::Coherency },
                    rt: 1,
                },
                pc,
                regs: vec![(1, target)],
            },
            1 => Step::Special { insn: Insn::DcZva { rt: 2 }, pc, regs: vec![(2, target & !63)] },
            2 => {
                let (set, way, level) = (r() % 32, r() % 2, r() % 2);
                Step::Special {
                    insn: Insn::DcSetWay { op: ops[(r() % 3) as usize], rt: 3 },
                    pc,
                    regs: vec![(3, way << 31 | set << 6 | level << 1)],
                }
            }
            3 => Step::Special { insn: Insn::IcIallu { broadcast: r() % 2 == 0 }, pc, regs: vec![] },
            4 => Step::Special { insn: Insn::IcIvau { rt: 4 }, pc, regs: vec![(4, code + r() % 0x1000)] },
            5 => Step::Special { insn: Insn::Tlbi { va_rt: None, broadcast: false }, pc, regs: vec![] },
            6 => Step::Special { insn: Insn::MsrSctlr { rt: 5 }, pc, regs: vec![(5, 1 | 4 | 1 << 12)] },
            7 | 8 => {
                let addr = if r() % 2 == 0 {
                    PrfAddr::Imm { base: 31, offset: 64 }
                } else {
                    PrfAddr::Reg { base: 6, index: 7, option: 3, shift: false }
                };
                let p = Prefetch { level: 1 + (r() % 3) as u32, strm: r() % 2 == 0, store: r() % 2 == 0, addr };
                Step::Special { insn: Insn::Prefetch(p), pc, regs: vec![(SP, target), (6, target), (7, 64 * (r() % 4))] }
            }
            9 => {
                let id = next_phase;
                next_phase += 1;
                open_phases.push(id);
                Step::Marker(Marker::PhaseBegin { name_va: 0x7000 + id, id })
            }
            10 | 11 if !open_phases.is_empty() => Step::Marker(Marker::PhaseEnd { id: open_phases.pop().unwrap() }),
            12 => match maint.take() {
                Some(va) => Step::Marker(Marker::MaintEnd { va }),
                None => {
                    maint = Some(target & !63);
                    Step::Marker(Marker::MaintBegin { va: target & !63, len: 256 })
                }
            },
            13 => Step::Marker(Marker::Quiet(r() % 2 == 0)),
            14 => {
                // A window changes its attribute.
                let (va, len, _) = WINDOWS[(r() % 2) as usize];
                let attrs = [
                    ModelAttr::NormalWriteBack,
                    ModelAttr::NormalWriteThrough,
                    ModelAttr::NormalNonCacheable,
                    ModelAttr::NormalWriteBackNoWriteAllocate,
                    ModelAttr::NormalWriteBackNoReadAllocate,
                    ModelAttr::NormalWriteBackNoAllocate,
                    ModelAttr::NormalWriteBackTransient,
                    ModelAttr::NormalWriteThroughTransient,
                ];
                let share = [Shareability::Inner, Shareability::Non][(r() % 2) as usize];
                Step::Marker(Marker::Window { va, len, attr: attrs[(r() % attrs.len() as u64) as usize], pa: Some(va - VA_OFFSET), share })
            }
            // The tables' NC index turns write-through and back (the walks cached are dropped),
            // or TTBR0 is written with its own value (nothing changes).
            16 => {
                let mair = if r() % 2 == 0 { MAIR } else { MAIR & !0xff_0000 | 0xbb_0000 };
                Step::Special { insn: Insn::MsrTranslation { reg: SysReg::Mair(Regime::El1), rt: 8 }, pc, regs: vec![(8, mair)] }
            }
            17 => Step::Special { insn: Insn::MsrTranslation { reg: SysReg::Ttbr0(Regime::El1), rt: 8 }, pc, regs: vec![(8, L0)] },
            15 if guest_geometry && r() % 8 == 0 => {
                Step::Marker(Marker::Geometry { level: 1, kind: Kind::Data, line: 64, sets: 64, ways: 2 })
            }
            _ => continue,
        };
        steps.push(step);
    }
    for id in open_phases.into_iter().rev() {
        steps.push(Step::Marker(Marker::PhaseEnd { id }));
    }
    steps
}

/// [`trace`] on `vcpus` cores run round-robin: every core turns its caches on after the
/// start-up markers, then before a third of the TBs the core switches to a random one. All
/// cores share the trace's pointers, so their lines move between cores (snoops, upgrades,
/// interventions, back-invalidations).
fn trace_cores(seed: u64, n: usize, vcpus: u32) -> Vec<Step> {
    let mut rng = seed ^ 0xc0_4e5;
    let mut r = move || xorshift64star(&mut rng);
    let base = trace(seed, n, false);
    let start = base.iter().position(|s| matches!(s, Step::Tb { .. })).expect("a trace has TBs");
    let mut steps = base[..start].to_vec();
    // Odd seeds: core 0 runs the first half of the TBs alone, while the other cores have no
    // state (secondaries powered off until the smp suite); seeds 4k+1 start each other core
    // with a TB, 4k+3 with its SCTLR write.
    let solo = if seed % 2 == 1 { (base.len() - start) / 2 } else { 0 };
    steps.push(Step::Core(0));
    steps.extend_from_slice(&base[start..start + solo]);
    let first_tb = base[start..].iter().find(|s| matches!(s, Step::Tb { .. })).cloned().expect("a trace has TBs");
    for c in 1..vcpus {
        steps.push(Step::Core(c));
        if seed % 4 == 1 {
            steps.push(first_tb.clone());
        }
        steps.push(Step::Marker(Marker::Sctlr(1 | 4 | 1 << 12)));
    }
    steps.push(Step::Core(0));
    for s in &base[start + solo..] {
        if matches!(s, Step::Tb { .. }) && r() % 3 == 0 {
            steps.push(Step::Core((r() % u64::from(vcpus)) as u32));
        }
        steps.push(s.clone());
    }
    steps
}

/// Runs `steps` with and without the shortcut: equal counts after every step, equal records at
/// the end; returns the records and how many steps the shortcut ran.
fn differential(args: &[&str], steps: &[Step]) -> String {
    differential_on(args, steps, 1)
}

/// [`differential`] with `vcpus` vCPUs run round-robin (more than one: TB repeats counted by
/// the engine's per-core boards, the coherence counts equal after every step, and the
/// coherence counters must show that cores shared lines).
fn differential_on(args: &[&str], steps: &[Step], vcpus: usize) -> String {
    let (fast, slow) = if vcpus == 1 {
        (Run::new(args, true), Run::new(args, false))
    } else {
        (Run::with_vcpus(args, true, vcpus, true), Run::with_vcpus(args, false, vcpus, true))
    };
    for (i, s) in steps.iter().enumerate() {
        apply(&fast, s);
        apply(&slow, s);
        assert_eq!(fast.counts(), slow.counts(), "counts differ after step {i} ({s:?}) with {args:?}");
        if vcpus > 1 {
            let cf = fast.engine.lock().model.as_ref().map(|m| format!("{:?}", m.coherence()));
            let cs = slow.engine.lock().model.as_ref().map(|m| format!("{:?}", m.coherence()));
            assert_eq!(cf, cs, "coherence counts differ after step {i} ({s:?}) with {args:?}");
        }
    }
    let shortcut = fast.engine.fast.iter().fold(Totals::default(), |t, f| t + f.totals());
    if vcpus > 1 {
        let core = fast.engine.lock();
        let coh = core.model.as_ref().expect("built").coherence().to_vec();
        let sum = |f: fn(&crate::hierarchy::Coherence) -> u64| coh.iter().map(f).sum::<u64>();
        assert!(
            sum(|c| c.invalidations) > 0 && sum(|c| c.interventions) > 0 && sum(|c| c.upgrades) > 0,
            "the cores never shared a line with {args:?}: {coh:?}"
        );
    }
    // With TLBs (the rpi4/rpi5 profiles), the shortcut counted L1 TLB hits and the model
    // looked pages up, missed and walked: the same counts either way (checked above).
    if args.iter().any(|a| a.starts_with("profile=rpi")) {
        let t = fast.counts().0.tlb;
        assert!(shortcut.tlb.l1d_hits > 0 && t.l1d_misses > 0 && t.data_walks > 0, "no TLB traffic with {args:?}: {t:?}");
        assert!(shortcut.tlb.l1i_hits > 0 || t.l1i_hits > 0, "no instruction TLB hits with {args:?}: {t:?}");
    }
    // Fetch memos answered (none with a TLB model: each fetch counts a lookup there).
    let memos: u64 = fast.engine.fast.iter().map(|f| f.memo_fetches()).sum();
    assert_eq!(memos > 0, fast.engine.memos_on, "fetch memos answered {memos} fetches with {args:?}");
    let (a, b) = (fast.finish(), slow.finish());
    for (k, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        assert_eq!(x, y, "record {k} differs with {args:?}");
    }
    assert_eq!(a.lines().count(), b.lines().count(), "record counts differ with {args:?}");
    // The shortcut did run: most L1D and L1I hits are its own.
    let (d, i) = (&shortcut.levels[crate::hierarchy::Level::L1D as usize], &shortcut.levels[crate::hierarchy::Level::L1I as usize]);
    assert!(d.hits > 0 && d.bypass > 0, "the data shortcut never answered with {args:?}: {shortcut:?}");
    // With several vCPUs, by the engine's per-core boards (Engine::tb_exec).
    assert!(i.hits > 0, "TB repeats were never counted without the model with {args:?}: {shortcut:?}");

    a
}

#[test]
fn the_shortcut_changes_no_count_and_no_record_with_several_cores() {
    let configs: [&[&str]; 4] = [
        &["profile=rpi4"],
        &["profile=rpi5", "policy=random"],
        &["profile=rpi4", "l1d=2K:2:64", "l2=16K:4:64", "policy=fifo"],
        &["profile=rpi5", "l1d=2K:2:64", "l2=8K:2:64", "l3=32K:4:64", "hwpf=stride"],
    ];
    for (seed, args) in configs.into_iter().cycle().take(8).enumerate() {
        let vcpus = 2 + seed % 3;
        let steps = trace_cores(seed as u64 + 101, 40_000, vcpus as u32);
        let records = differential_on(args, &steps, vcpus);
        assert!(records.contains("\"record\":\"model\",\"phase\":\"phase-at-"), "no phase records with {args:?}");
    }
}

#[test]
fn the_shortcut_changes_no_count_and_no_record() {
    let configs: [(&[&str], bool); 4] = [
        (&["profile=rpi4"], false),
        (&["profile=rpi5", "policy=random"], false),
        (&["profile=rpi4", "l1d=2K:2:64", "l2=16K:4:64", "policy=fifo"], false),
        (&[], true),
    ];
    for (seed, (args, guest)) in configs.into_iter().cycle().take(8).enumerate() {
        let steps = trace(seed as u64 + 1, 40_000, guest);
        let records = differential(args, &steps);
        // The traces reach what they mean to: phases, hazards, a rebuilt model.
        assert!(records.contains("\"record\":\"model\",\"phase\":\"phase-at-"), "no phase records with {args:?}");
        for kind in ["stale-read-by-device", "stale-read-by-cpu", "stale-instruction", "lost-write", "shared-line"] {
            assert!(records.contains(&format!("\"kind\":\"{kind}\"")), "no {kind} hazard with {args:?}");
        }
        if guest {
            assert!(records.contains("geometry changed after the caches were in use"), "no geometry change");
        }
    }
}

#[test]
fn the_shortcut_needs_one_thread_and_no_trace() {
    let s = |w: &[&str]| Settings::parse(w).unwrap();
    assert!(shortcut_allowed(&s(&[]), 1, false));
    assert!(shortcut_allowed(&s(&[]), 4, true), "round-robin: one thread runs every core");
    assert!(!shortcut_allowed(&s(&[]), 2, false), "MTTCG: another core's model call could race with the shortcut");
    assert!(!shortcut_allowed(&s(&[]), 65, true), "the model's disturbed set has 64 bits");
    assert!(!shortcut_allowed(&s(&["fast=off"]), 1, false));
    assert!(!shortcut_allowed(&s(&["trace=/dev/null"]), 1, false), "a trace lists every access");
    assert!(inline_repeats_allowed(&s(&[]), 1) && !inline_repeats_allowed(&s(&[]), 2), "inline ops name the translating vCPU");
}

/// QEMU 10.0.2's Cortex-A72 as the glue reads it at vCPU init.
fn a72_key() -> crate::cpu_models::Key {
    crate::cpu_models::TABLE.iter().find(|m| m.name == "cortex-a72").unwrap().key.map(Some)
}

/// The `model-geometry` records' (level, sets, ways, origin).
fn geometry_of(records: &str) -> Vec<(String, u64, u64, String)> {
    records
        .lines()
        .filter(|l| l.contains("\"record\":\"model-geometry\""))
        .map(|l| {
            let field = |k: &str| {
                let at = l.find(&format!("\"{k}\":")).unwrap() + k.len() + 3;
                l[at..].split([',', '}']).next().unwrap().trim_matches('"').to_string()
            };
            (field("level"), field("sets").parse().unwrap(), field("ways").parse().unwrap(), field("origin"))
        })
        .collect()
}

/// A cacheable run with no geometry markers: the SCTLR marker, a store, a set/way clean.
fn unmarked(r: &Run) {
    r.marker(Marker::Sctlr(1 | 4 | 1 << 12), 0x8_0000);
    r.engine.mem(0, &FakeAccess { size: 8, value: 1 }, VA_OFFSET + RAM + 0x8_0000, VA_OFFSET + RAM + 0x8_0000, true, None, Hint::default());
}

#[test]
fn the_cpu_table_gives_the_geometry_without_markers() {
    let r = Run::new(&[], false);
    r.engine.cpu_identified(a72_key(), Some(Ctr { raw: 0x8444_c004 }), None);
    unmarked(&r);
    // Way 3 of set 127 exists only in the CPU's 128 × 4 L1D (the rpi4 fallback has 2 ways).
    r.special(Insn::DcSetWay { op: LineOp::Clean, rt: 3 }, 0x9000, &[(3, 3 << 30 | 127 << 6)]);
    let records = r.finish();
    let g = geometry_of(&records);
    assert_eq!(g[1], ("L1D".into(), 128, 4, "cpu".into()), "{records}");
    assert_eq!(g[0], ("L1I".into(), 256, 3, "cpu".into()));
    assert_eq!(g[2], ("L2".into(), 1024, 16, "cpu".into()));
    assert!(!records.contains("model-warning"), "{records}");
}

#[test]
fn markers_override_the_table_and_disagreement_is_named() {
    for (sets, warned) in [(128, false), (64, true)] {
        let r = Run::new(&[], false);
        r.engine.cpu_identified(a72_key(), None, None);
        for (level, kind, line, sets, ways) in
            [(1, Kind::Instruction, 64, 256, 3), (1, Kind::Data, 64, sets, 4), (2, Kind::Unified, 64, 1024, 16)]
        {
            r.marker(Marker::Geometry { level, kind, line, sets, ways }, 0x8_0000);
        }
        unmarked(&r);
        let records = r.finish();
        assert_eq!(geometry_of(&records)[1], ("L1D".into(), sets, 4, "guest".into()));
        assert_eq!(records.contains("differ from QEMU 10.0.2's cortex-a72"), warned, "{records}");
    }
}

#[test]
fn an_unknown_cpu_gets_the_fallback_and_a_warning() {
    let r = Run::new(&[], false);
    let mut key = a72_key();
    key[0] = Some(0x1234);
    r.engine.cpu_identified(key, None, None);
    unmarked(&r);
    let records = r.finish();
    assert_eq!(geometry_of(&records)[1], ("L1D".into(), 256, 2, "fallback".into()));
    assert!(records.contains("not in the plugin's table (QEMU 10.0.2: CTR_EL0=0x1234 CLIDR=0xa200023"), "{records}");
}

#[test]
fn untagged_code_on_several_round_robin_vcpus_reports_no_hazard() {
    let steps = trace(7, 20_000, false);
    let tag = Some(cachescope_arch::marker::core_id_value(0));
    // (vCPUs, round-robin, TPIDR_EL1 tag): hazards reported?
    // VMPIDR_EL2 as QEMU resets it for vCPU 0 (MPIDR: RES1 bit 31, Aff0 = 0), and one that
    // names no vCPU of this run (Aff0 = 5).
    let (mpidr0, other) = (Some(1 << 31), Some(1 << 31 | 5));
    for (vcpus, rr, tpidr, vmpidr, reported) in [
        (2, true, None, None, false),
        (2, true, None, other, false),
        (2, true, tag, None, true),
        (2, true, None, mpidr0, true),
        (2, false, None, None, true),
        (1, true, None, None, true),
    ] {
        let r = Run::with_vcpus(&["profile=rpi4"], false, vcpus, rr);
        for s in &steps {
            if vcpus > 1 {
                r.engine.identify_by(tpidr, || vmpidr, 0);
            }
            apply(&r, s);
        }
        let records = r.finish();
        // Maintenance gaps come from the guest's own range markers, not from an access's core.
        let listed = records.lines().any(|l| l.contains("\"record\":\"hazard\"") && !l.contains("maintenance-gap"));
        assert_eq!(listed, reported, "{vcpus} vCPUs, round-robin {rr}, tag {tpidr:?}");
        let warned = records.contains("core attribution cannot be trusted");
        assert_eq!(warned, !reported, "{vcpus} vCPUs, round-robin {rr}, tag {tpidr:?}");
        if !reported {
            assert!(records.contains("hazard occurrences were not reported: raised by untagged code"), "{records}");
            // Both warnings name their cause, so a check can allow them (observe --expect).
            let caused = records.lines().filter(|l| l.contains(r#""record":"model-warning""#) && l.contains(r#""cause":"attribution""#));
            assert_eq!(caused.count(), 2, "{records}");
            assert!(
                records.contains(r#"untagged code whose core is not known, or on what such code touched","cause":"attribution","count":"#),
                "{records}"
            );
        }
    }
}

/// One step of [`two_rr_cores`]: the core it runs as (None: untagged), and what it does.
type CoreStep<'a> = (Option<u32>, &'a dyn Fn(&Run));

/// Two vCPUs under round-robin TCG: caches on for both cores (tagged), then `steps` with the
/// core each runs as (None: untagged, the callback's index 0); the records at exit.
fn two_rr_cores(steps: &[CoreStep]) -> String {
    let r = Run::with_vcpus(&["profile=rpi4"], false, 2, true);
    let tag = |c: u32| Some(cachescope_arch::marker::core_id_value(c));
    for c in 0..2 {
        r.engine.identify_by(tag(c), || None, 0);
        // The register (translation through the guest's tables) and the marker (the
        // attributes' view).
        r.special(Insn::MsrSctlr { rt: 1 }, 0x8_0000, &[(1, 1 | 4 | 1 << 12)]);
        r.marker(Marker::Sctlr(1 | 4 | 1 << 12), 0x8_0000);
    }
    for (core, step) in steps {
        r.engine.identify_by(core.and_then(tag), || None, 0);
        step(&r);
    }
    r.finish()
}

#[test]
fn hazards_that_may_follow_from_a_misattribution_are_not_reported() {
    // Code written at X without cleaning or invalidating, then executed: a stale-instruction
    // hazard, raised by the fetch of a core that is known. When the write ran untagged (its
    // core not known: maybe the other core's caches got it), the hazard is not reported.
    let x = VA_OFFSET + RAM + 0x9_0000;
    let write = |r: &Run| r.engine.mem(0, &FakeAccess { size: 4, value: 0 }, x, x, true, None, Hint { pc: 0x9100, nt: false });
    let fetch = |r: &Run| r.engine.fetch(0, x, 4, false, TbAt::Start(None), &FetchMemo::default());
    let other_page = |r: &Run| {
        let y = x + 0x1_0000;
        r.engine.mem(0, &FakeAccess { size: 4, value: 0 }, y, y, true, None, Hint::default());
    };
    let iallu = |r: &Run| r.special(Insn::IcIallu { broadcast: false }, 0x9200, &[]);
    let hazards = |records: &str| records.lines().filter(|l| l.contains("\"record\":\"hazard\"")).count();
    let tagged = two_rr_cores(&[(Some(0), &write), (Some(1), &fetch)]);
    assert_eq!(hazards(&tagged), 1, "{tagged}");
    assert!(tagged.contains("stale-instruction") && !tagged.contains("were not reported"), "{tagged}");
    // The write untagged: its page is tainted.
    let untagged = two_rr_cores(&[(None, &write), (Some(1), &fetch)]);
    assert_eq!(hazards(&untagged), 0, "{untagged}");
    assert!(untagged.contains("1 hazard occurrences were not reported"), "{untagged}");
    // The warning names the PC of the unreported hazard's access (the fetch at x).
    let warning = untagged.lines().find(|l| l.contains("hazard occurrences were not reported")).expect("the warning");
    assert!(warning.contains(&format!("\"pc\":\"{x:#x}\"")), "{warning}");
    // An untagged access to another page taints only that page.
    let elsewhere = two_rr_cores(&[(None, &other_page), (Some(0), &write), (Some(1), &fetch)]);
    assert_eq!(hazards(&elsewhere), 1, "{elsewhere}");
    // An untagged IC IALLU reaches every line of some core's L1I: nothing is reported after it.
    let after_iallu = two_rr_cores(&[(None, &iallu), (Some(0), &write), (Some(1), &fetch)]);
    assert_eq!(hazards(&after_iallu), 0, "{after_iallu}");
    let tagged_iallu = two_rr_cores(&[(Some(0), &iallu), (Some(0), &write), (Some(1), &fetch)]);
    assert_eq!(hazards(&tagged_iallu), 1, "{tagged_iallu}");
}

#[test]
fn under_mttcg_the_index_names_the_core_and_a_disagreeing_register_is_named() {
    let tag = |c: u32| Some(cachescope_arch::marker::core_id_value(c));
    for (tpidr, vcpu, disagrees) in [(tag(1), 0, true), (tag(0), 0, false), (tag(1), 1, false), (None, 1, false)] {
        let r = Run::with_vcpus(&["profile=rpi4"], false, 2, false);
        r.engine.identify_by(tpidr, || None, vcpu);
        // The access goes to the vCPU of the index, whatever the register says.
        let x = VA_OFFSET + RAM + 0x9_0000;
        r.engine.mem(vcpu, &FakeAccess { size: 8, value: 0 }, x, x, false, None, Hint::default());
        assert_eq!(r.engine.cpu(vcpu), vcpu as usize);
        let records = r.finish();
        assert_eq!(records.contains("core attribution: in 1 TBs"), disagrees, "{tpidr:?} on vCPU {vcpu}: {records}");
    }
}

#[test]
fn el2_and_el3_controls_the_model_does_not_follow_are_named_once() {
    use crate::decode::ControlReg;
    let r = Run::new(&["profile=rpi4"], false);
    let msr = |reg, v| r.special(Insn::MsrControl { reg, rt: 1 }, 0x9000, &[(1, v)]);
    msr(ControlReg::HcrEl2, 1 << 31); // RW only: the kernel's own EL2 set-up
    msr(ControlReg::ScrEl3, 1); // NS: followed (whether HCR_EL2.DC applies)
    msr(ControlReg::SctlrEl3, 0x30c5_0838); // RES1 bits, MMU and caches off
    assert_eq!(r.engine.lock().control[0], [None, Some(0x30c5_0838), Some(1 << 31), Some(1)]);
    msr(ControlReg::HcrEl2, 1 << 31 | 1 << 12 | 1); // DC is followed, VM (stage 2) is not
    msr(ControlReg::HcrEl2, 1 << 12 | 1);
    msr(ControlReg::HcrEl2, 1 << 34);
    msr(ControlReg::SctlrEl2, 1 | 1 << 2); // followed
    let records = r.finish();
    let warnings: Vec<&str> = records.lines().filter(|l| l.contains("model-warning")).collect();
    assert_eq!(warnings.len(), 2, "{records}");
    assert!(warnings[0].contains("HCR_EL2.VM set (vCPU 0, 0x80001001)"), "{}", warnings[0]);
    assert!(warnings[1].contains("HCR_EL2.E2H set"), "{records}");
}

/// A TB's EL picks the regime: the same VA is Device at EL2 (SCTLR_EL2.M = 0) and write-back
/// at EL1 (its tables); a DC CIVAC at EL2 translates PA = VA (MMU off), at EL1 through the walk,
/// and with the tables' hole it is not modelled and named once at exit with its page count.
#[test]
fn the_regime_follows_the_el_and_untranslated_vas_are_counted() {
    let r = Run::new(&["profile=rpi4"], false);
    r.special(Insn::MsrSctlr { rt: 1 }, 0x9000, &[(1, 1 | 4 | 1 << 12)]);
    let va = VA_OFFSET + RAM + 0x8_0000;
    {
        let mut c = r.engine.lock();
        assert_eq!(c.guest.data_attr(0, va, &r.engine.host), ModelAttr::NormalWriteBack);
        assert_eq!(c.guest.data_attr(0, VA_OFFSET + RAM + TABLE_NC, &r.engine.host), ModelAttr::NormalNonCacheable);
    }
    r.engine.at_el(0, 2);
    assert_eq!(r.engine.lock().guest.data_attr(0, va, &r.engine.host), ModelAttr::Device, "SCTLR_EL2.M = 0");
    let civac = Insn::DcVa { op: LineOp::CleanInvalidate, point: Point::Coherency, rt: 1 };
    r.special(civac, 0x9000, &[(1, va)]);
    r.engine.at_el(0, 1);
    r.special(civac, 0x9000, &[(1, va)]);
    for k in 0..3 {
        r.special(civac, 0x9000, &[(1, VA_OFFSET + RAM + TABLE_HOLE + 64 * k)]);
    }
    // A prefetch of an unmapped VA is a NOP (no warning).
    let prfm = Prefetch { level: 1, strm: false, store: false, addr: PrfAddr::Imm { base: 6, offset: 0 } };
    r.special(Insn::Prefetch(prfm), 0x9000, &[(6, VA_OFFSET + RAM + TABLE_HOLE)]);
    let records = r.finish();
    let run = records.lines().find(|l| l.contains("\"record\":\"model-run\"")).unwrap();
    assert!(run.contains("\"va_identity\":1,\"va_walked\":1"), "{run}");
    let warned: Vec<&str> = records.lines().filter(|l| l.contains("\"cause\":\"untranslated-va\"")).collect();
    assert_eq!(warned.len(), 1, "{records}");
    assert!(
        warned[0].contains("(dc by va: translation-fault-level3, first at VA 0x1400c0000 by the instruction at PC 0x9000)")
            && warned[0].contains("\"count\":1"),
        "{}",
        warned[0]
    );
}

/// Tracking from reset: code written with the MMU and caches off, before any cacheable access,
/// then fetched through the enabled I-cache without an IC invalidate, is stale code. The model
/// is built at the first access (the CPU's table gives the geometry), so that write is seen;
/// the held-back geometry records of that model are dropped when markers replace it unused.
#[test]
fn the_first_access_of_the_run_is_modelled() {
    let code = 0x4008_0000;
    for ic in [false, true] {
        let r = Run::new(&[], false);
        r.engine.cpu_identified(a72_key(), Some(Ctr { raw: 0x8444_c004 }), None);
        // A store with the MMU off: a Device access at PA = VA (QEMU's hwaddr is VA − VA_OFFSET).
        r.engine.mem(
            0,
            &FakeAccess { size: 8, value: 0xd503_201f },
            VA_OFFSET + code,
            VA_OFFSET + code,
            true,
            None,
            Hint { pc: 0x100, nt: false },
        );
        r.special(Insn::MsrSctlr { rt: 1 }, 0x104, &[(1, 1 << 12)]);
        if ic {
            r.special(Insn::IcIallu { broadcast: false }, 0x108, &[]);
        }
        r.engine.fetch(0, code, 8, false, TbAt::Start(None), &FetchMemo::default());
        let records = r.finish();
        let stale = records.lines().any(|l| l.contains("\"record\":\"hazard\"") && l.contains("stale-instruction"));
        assert_eq!(stale, !ic, "IC IALLU {ic}: {records}");
    }
    // Geometry markers before any cacheable access replace the reset model: one set of geometry
    // records (the guest's), and only the warning that they differ from the CPU's table.
    let r = Run::new(&[], false);
    r.engine.cpu_identified(a72_key(), None, None);
    r.engine.mem(0, &FakeAccess { size: 8, value: 0 }, VA_OFFSET + code, VA_OFFSET + code, false, None, Hint::default());
    for (level, kind, line, sets, ways) in
        [(1, Kind::Instruction, 64, 256, 3), (1, Kind::Data, 64, 64, 4), (2, Kind::Unified, 64, 1024, 16)]
    {
        r.marker(Marker::Geometry { level, kind, line, sets, ways }, 0x8_0000);
    }
    r.special(Insn::MsrSctlr { rt: 1 }, 0x104, &[(1, 1 << 12)]);
    r.engine.fetch(0, code, 8, false, TbAt::Start(None), &FetchMemo::default());
    let records = r.finish();
    assert_eq!(records.matches("\"record\":\"model-geometry\"").count(), 3, "{records}");
    assert_eq!(records.matches("\"record\":\"model-profile\"").count(), 1, "{records}");
    assert_eq!(geometry_of(&records)[1], ("L1D".into(), 64, 4, "guest".into()));
    assert_eq!(records.matches("model-warning").count(), 1, "{records}");
    assert!(records.contains("geometry markers differ from QEMU"), "{records}");
    let l1d = records.lines().find(|l| l.contains("\"record\":\"model-total\"") && l.contains("\"level\":\"L1D\"")).unwrap();
    assert!(l1d.contains("\"bypass\":1"), "the reset model's count is carried: {l1d}");
}

/// QEMU shares a TB between the VAs that map its code's page (`CF_PCREL`) and its callbacks carry
/// the VA it was translated at: the fetch runs at the PC's page when that VA does not reach the
/// TB's PA (Linux's memcpy translated at its idmap VA, run at its kernel VA), and the TB's later
/// fetch callbacks follow; without the TB's PA, or with a PC that does not reach it either, the
/// translated VA stays.
#[test]
fn a_tb_shared_between_va_aliases_is_fetched_where_it_runs() {
    let code = 0x4008_0000;
    let elsewhere = code + 0x10_0000; // the VA the TB was translated at (MMU off: its own PA)
    for (tb_pa, pc, stale) in [(Some(code), code, true), (None, code, false), (Some(code), code + 0x20_0000, false)] {
        for later in [false, true] {
            let r = Run::new(&[], false);
            r.engine.cpu_identified(a72_key(), Some(Ctr { raw: 0x8444_c004 }), None);
            // Code stored at `code` with the MMU off (behind the caches), then the I-cache on.
            r.engine.mem(
                0,
                &FakeAccess { size: 8, value: 0 },
                VA_OFFSET + code + 8,
                VA_OFFSET + code + 8,
                true,
                None,
                Hint { pc: 0x100, nt: false },
            );
            r.special(Insn::MsrSctlr { rt: 1 }, 0x104, &[(1, 1 << 12)]);
            r.engine.host.pc.store(pc, Relaxed);
            if later {
                // The TB's first segment does not cover the written bytes; its second does.
                r.engine.fetch(0, elsewhere, 8, false, TbAt::Start(tb_pa), &FetchMemo::default());
                r.engine.fetch(0, elsewhere + 8, 4, false, TbAt::Later, &FetchMemo::default());
            } else {
                r.engine.fetch(0, elsewhere, 16, false, TbAt::Start(tb_pa), &FetchMemo::default());
            }
            let records = r.finish();
            let found = records.lines().any(|l| l.contains("\"record\":\"hazard\"") && l.contains("stale-instruction"));
            assert_eq!(found, stale, "TB PA {tb_pa:x?}, PC {pc:#x}, later segment {later}: {records}");
        }
    }
}

#[test]
fn bytes_stored_through_the_shortcut_reach_the_sanitizer() {
    let a = VA_OFFSET + RAM + 0x8_0000;
    let mem = |r: &Run, va: u64, size: u32, write: bool| {
        r.engine.mem(0, &FakeAccess { size, value: 0 }, va, va, write, None, Hint { pc: 0x9000, nt: false })
    };
    for fast in [true, false] {
        // The device's first read: stale (bytes 8..16 were stored, through the shortcut with
        // fast=on) or a shared line (24..32 were not); then the group's store (44..48) is stale
        // and its load's bytes (36..40) are not.
        for (read, stale, shared) in [(a + 8, 2, 1), (a + 24, 1, 2)] {
            let r = Run::new(&["profile=rpi4"], fast);
            r.marker(Marker::Hello { version: crate::protocol::VERSION }, 0x8_0000);
            r.marker(Marker::Sctlr(1 | 4 | 1 << 12), 0x8_0000);
            mem(&r, a, 8, true);
            mem(&r, a + 8, 8, true); // the same line: the shortcut's, with fast=on
            mem(&r, a + 16, 4, false);
            let group = Group::new(4, vec![(4, 4, false), (12, 4, true)], 0x9100);
            r.engine.mem_group(0, &FakeAccess { size: 4, value: 0 }, a + 32, false, &group);
            // The device's view of the page: the window marker settles the deferred stores.
            r.marker(
                Marker::Window {
                    va: a,
                    len: 0x1000,
                    attr: ModelAttr::NormalNonCacheable,
                    pa: Some(a - VA_OFFSET),
                    share: Shareability::Inner,
                },
                0x8_0000,
            );
            mem(&r, read, 8, false);
            mem(&r, a + 44, 4, false);
            mem(&r, a + 36, 4, false);
            let records = r.finish();
            let hazards: Vec<&str> = records.lines().filter(|l| l.contains("\"record\":\"hazard\"")).collect();
            assert_eq!(hazards.len(), 2, "fast {fast}, read {read:#x}: {records}");
            for (kind, count) in [("stale-read-by-device", stale), ("shared-line", shared)] {
                let want = [format!("\"kind\":\"{kind}\",\"pa\":\"0x40080000\""), format!("\"count\":{count},")];
                assert!(
                    hazards.iter().any(|h| want.iter().all(|w| h.contains(w.as_str()))),
                    "fast {fast}, read {read:#x}: {kind} ×{count}: {hazards:?}"
                );
            }
        }
    }
}

#[test]
fn markers_declarations_follows_only_what_declares_the_verdict() {
    let a = VA_OFFSET + RAM + 0x8_0000;
    let mem = |r: &Run, va: u64, write: bool| r.engine.mem(0, &FakeAccess { size: 8, value: 0 }, va, va, write, None, Hint::default());
    for (mode, ignored) in [("all", false), ("declarations", true)] {
        let r = Run::new(&["profile=rpi4", &format!("markers={mode}")], false);
        r.marker(Marker::Hello { version: crate::protocol::VERSION }, 0x8_0000);
        r.marker(Marker::Geometry { level: 1, kind: Kind::Data, line: 64, sets: 64, ways: 2 }, 0x8_0000);
        // The caches on, as the guest's own SCTLR_EL1 write says (decoded in both modes).
        r.special(Insn::MsrSctlr { rt: 5 }, 0x9000, &[(5, 1 | 4 | 1 << 12)]);
        r.marker(Marker::PhaseBegin { name_va: 0x7001, id: 1 }, 0x8_0000);
        mem(&r, a, true);
        // The page becomes a device's view (a window): a read of the dirty line is stale, unless
        // the window is ignored.
        r.marker(
            Marker::Window { va: a, len: 0x1000, attr: ModelAttr::NormalNonCacheable, pa: Some(a - VA_OFFSET), share: Shareability::Inner },
            0x8_0000,
        );
        mem(&r, a, false);
        r.marker(Marker::MaintBegin { va: a + 0x100, len: 128 }, 0x8_0000);
        r.marker(Marker::MaintEnd { va: a + 0x100 }, 0x8_0000);
        r.marker(Marker::PhaseEnd { id: 1 }, 0x8_0000);
        let records = r.finish();
        let hazards: Vec<&str> = records.lines().filter(|l| l.contains("\"record\":\"hazard\"")).collect();
        let gaps =
            hazards.iter().filter(|h| h.contains("\"kind\":\"maintenance-gap\"") && h.contains("\"phase\":\"phase-at-7001\"")).count();
        assert_eq!(gaps, 2, "{mode}: the range and the phase are declarations: {hazards:?}");
        let stale = hazards.iter().any(|h| h.contains("\"kind\":\"stale-read-by-device\""));
        assert_eq!(stale, !ignored, "{mode}: {hazards:?}");
        assert!(records.contains("\"record\":\"model\",\"phase\":\"phase-at-7001\""), "{mode}: phase records");
        let run = records.lines().find(|l| l.contains("\"record\":\"model-run\"")).unwrap();
        assert!(run.contains("\"markers\":7,"), "{run}");
        assert_eq!(run.contains("\"markers_ignored\":2,"), ignored, "{run}");
        assert_eq!(geometry_of(&records)[1].2, 2, "the profile's L1D either way");
    }
    // The TPIDR_EL1 core tag is not followed either: untagged code on round-robin vCPUs.
    for (mode, reported) in [("all", true), ("declarations", false)] {
        let r = Run::with_vcpus(&["profile=rpi4", &format!("markers={mode}")], false, 2, true);
        r.engine.identify_by(Some(cachescope_arch::marker::core_id_value(0)), || None, 0);
        r.special(Insn::MsrSctlr { rt: 5 }, 0x9000, &[(5, 1 | 4 | 1 << 12)]);
        mem(&r, a, true);
        r.engine.fetch(0, a, 8, false, TbAt::Start(None), &FetchMemo::default()); // code written and run without maintenance
        let records = r.finish();
        assert_eq!(records.contains("\"kind\":\"stale-instruction\""), reported, "{mode}: {records}");
        assert_eq!(records.contains("core attribution cannot be trusted"), !reported, "{mode}");
    }
}

/// Rule T5 of `tlb.rs` through the decoder and the engine: a local TLBI by VA (`TLBI VALE1`)
/// drops the issuing vCPU's entry only, its Inner Shareable form (`TLBI VAE1IS`) every vCPU's.
#[test]
fn a_tlbi_reaches_the_issuing_vcpu_and_its_broadcast_form_every_vcpu() {
    let r = Run::with_vcpus(&["profile=rpi5"], false, 2, false);
    for cpu in 0..2 {
        r.engine.special(cpu, Insn::MsrSctlr { rt: 1 }, 0x9000, |_| 1 | 4 | 1 << 12);
    }
    let va = VA_OFFSET + RAM + 0x9_0000;
    let load = |cpu: u32| r.engine.mem(cpu, &FakeAccess { size: 8, value: 0 }, va, va, false, None, Hint::default());
    let tlb = || r.counts().0.tlb;
    let (local, broadcast) = (crate::decode::decode(0xd508_87a3).unwrap(), crate::decode::decode(0xd508_8320).unwrap());
    assert_eq!((local, broadcast), (Insn::Tlbi { va_rt: Some(3), broadcast: false }, Insn::Tlbi { va_rt: Some(0), broadcast: true }));
    load(0);
    load(1);
    let before = tlb();
    assert_eq!((before.l1d_misses, before.data_walks), (2, 2), "each vCPU walks once: {before:?}");
    r.engine.special(0, local, 0xa000, |n| if n == 3 { va >> 12 } else { 0 });
    load(0);
    load(1);
    let after_local = tlb() - before;
    assert_eq!((after_local.l1d_misses, after_local.l1d_hits), (1, 1), "TLBI VALE1 on vCPU 0: {after_local:?}");
    let before = tlb();
    r.engine.special(0, broadcast, 0xa004, |n| if n == 0 { va >> 12 } else { 0 });
    load(0);
    load(1);
    let after_is = tlb() - before;
    assert_eq!((after_is.l1d_misses, after_is.l1d_hits, after_is.data_walks), (2, 0, 2), "TLBI VAE1IS: {after_is:?}");
    let records = r.finish();
    assert!(records.contains("\"record\":\"model-tlb\""), "{records}");
}

/// With several vCPUs, the emulator's handle of the running vCPU stands for the register read
/// while it stays the same (after an identification by register), is checked every
/// `IDENTIFY_CHECK_EVERY` TBs, and a core re-tagged under an unchanged handle is caught, named at
/// exit, and turns the handle off.
#[test]
fn an_unchanged_vcpu_handle_stands_for_the_register_read_and_a_retag_is_caught() {
    use super::engine::IDENTIFY_CHECK_EVERY;
    let r = Run::with_vcpus(&["profile=rpi4"], true, 2, true);
    let e = &r.engine;
    let reads = std::cell::Cell::new(0u32);
    let tag = |c: u32| {
        reads.set(reads.get() + 1);
        Some(cachescope_arch::marker::core_id_value(c))
    };
    // Untagged: nothing is kept, every TB reads.
    e.identify_tb(Some(0x1000), || None, || None, 0);
    e.identify_tb(Some(0x1000), || tag(1), || None, 0);
    assert_eq!((e.cpu(0), reads.get()), (1, 1));
    // The same handle: no read until the check.
    for _ in 1..IDENTIFY_CHECK_EVERY {
        e.identify_tb(Some(0x1000), || tag(1), || None, 0);
    }
    assert_eq!((e.cpu(0), reads.get()), (1, 1));
    e.identify_tb(Some(0x1000), || tag(1), || None, 0);
    assert_eq!((e.cpu(0), reads.get()), (1, 2), "the periodic check reads");
    // Another handle: read at once.
    e.identify_tb(Some(0x2000), || tag(0), || None, 0);
    assert_eq!((e.cpu(0), reads.get()), (0, 3));
    // No handle (QEMU does not export it): every TB reads.
    e.identify_tb(None, || tag(0), || None, 0);
    assert_eq!(reads.get(), 4);
    // Re-tagged while the handle stays: caught at the check, then every TB reads.
    e.identify_tb(Some(0x2000), || tag(0), || None, 0);
    for _ in 0..IDENTIFY_CHECK_EVERY {
        e.identify_tb(Some(0x2000), || tag(1), || None, 0);
    }
    assert_eq!(e.cpu(0), 1, "the check found the new tag");
    let before = reads.get();
    e.identify_tb(Some(0x2000), || tag(1), || None, 0);
    assert_eq!(reads.get(), before + 1, "the handle is no longer trusted");
    let text = r.finish();
    assert!(text.contains("changed to name another core while it ran (1 checks)"), "{text}");
}

/// Stores the line table takes without the model must leave the sanitizer as the model would:
/// after an IC IVAU the stored bytes count as written again (a store it took as changing
/// nothing before the invalidate must reach the sanitizer after it), and a single aligned store
/// of a concurrently modifiable instruction (NOP) is marked as such (rule 16). With CTR_EL0.IDC
/// = 1 and DIC = 0 only the written bytes decide: the fetch after the IVAU and the second
/// store is a stale-instruction, the fetch of code whose last store was a NOP is not.
#[test]
fn stores_the_line_table_takes_reach_the_sanitizer_as_the_model_would() {
    let code = VA_OFFSET + RAM + 0x1_0000;
    let other = VA_OFFSET + RAM + 0x2_0000;
    let run = |fast: bool, value: u64, ivau: bool| {
        let r = Run::new(&[], fast);
        r.engine.cpu_identified(a72_key(), Some(Ctr { raw: 0x8444_c004 | 1 << 28 }), None);
        r.special(Insn::MsrSctlr { rt: 1 }, 0xfc, &[(1, 1 | 4 | 1 << 12)]);
        let store = |pc: u64| r.engine.mem(0, &FakeAccess { size: 4, value }, code, code, true, None, Hint { pc, nt: false });
        let load_elsewhere = || r.engine.mem(0, &FakeAccess { size: 8, value: 0 }, other, other, false, None, Hint::default());
        // Written (through the model), written again (the line table), settled by a model call.
        store(0x100);
        store(0x104);
        load_elsewhere();
        store(0x108);
        if ivau {
            r.special(Insn::IcIvau { rt: 0 }, 0x10c, &[(0, code)]);
            store(0x110);
            load_elsewhere();
        }
        r.engine.fetch(0, code, 4, false, TbAt::Start(None), &FetchMemo::default());
        r.finish()
    };
    let hazards = |records: &str| records.lines().filter(|l| l.contains("\"record\":\"hazard\"")).map(str::to_string).collect::<Vec<_>>();
    for (value, ivau, stale) in [(0x1234_5678, true, true), (0xd503_201f, false, false), (0xd503_201f, true, false)] {
        let (fast, slow) = (run(true, value, ivau), run(false, value, ivau));
        assert_eq!(hazards(&fast), hazards(&slow), "value {value:#x}, IC IVAU {ivau}");
        let reported = slow.lines().any(|l| l.contains("\"record\":\"hazard\"") && l.contains("stale-instruction"));
        assert_eq!(reported, stale, "value {value:#x}, IC IVAU {ivau}: {slow}");
    }
}
