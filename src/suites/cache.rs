//! The cache suite: the topology report (lscpu -C style, with what each field means for firmware)
//! and its records, then the maintenance tests (set/way walk counts, invalidate of a misaligned
//! range, self-modifying code, DC ZVA, the VIPT instruction-cache alias).

use alloc::{format, string::String, vec, vec::Vec};

use crate::cache::id::{CcsidrFormat, L1Ip};
use crate::cache::maintenance::{self, RangeError};
use crate::cache::setway::{self, Recorder, Scope, SetWayOp, WalkError};
use crate::cache::silicon;
use crate::cache::topology::{Kind, Topology};
use crate::cpu::{cache as hw, trap};
use crate::cpuid::Midr;
use crate::diag;
use crate::harness::{Case, Ctx, Suite};
use crate::record::{self, Emit};
use cachescope_arch::sysreg::{CSSELR_EL1, SCTLR_EL1};
use tock_registers::interfaces::Readable;

/// The cache suite.
pub const SUITE: Suite = Suite {
    name: "cache",
    report: Some(report),
    cases: &[
        Case { name: "id-registers", run: id_registers },
        Case { name: "setway-walk-counts", run: setway_walk_counts },
        Case { name: "va-range-counts", run: va_range_counts },
        Case { name: "invalidate-keeps-neighbours", run: invalidate_keeps_neighbours },
        Case { name: "self-modifying-code", run: self_modifying_code },
        Case { name: "dc-zva-one-block", run: dc_zva_one_block },
        Case { name: "zero-buffer", run: zero_buffer },
        Case { name: "vipt-alias", run: vipt_alias },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

fn kib(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn granule(g: Option<u32>) -> String {
    match g {
        Some(b) => format!("{b} B"),
        None => "not given (assume 2 KiB)".into(),
    }
}

fn report(ctx: &mut Ctx) {
    let t = crate::cache::this_cpu();
    let midr = Midr { raw: ctx.boot.midr };
    let core = midr.core_name().unwrap_or("unknown core");

    diag!("== caches ({core}) ==");
    if ctx.boot.emulated {
        diag!("QEMU models no caches: every value below is a constant of QEMU's CPU model, and the");
        diag!("maintenance instructions execute but change nothing measurable.");
    }
    diag!("CCSIDR_EL1 format: {} (ID_AA64MMFR2_EL1.CCIDX = {})", t.format.name(), (t.mmfr2 >> 20) & 0xf);
    diag!("NAME  ONE-SIZE  WAYS  TYPE         LEVEL   SETS  LINE  CCSIDR_EL1          PUBLISHED SILICON");
    for c in &t.caches {
        let g = &c.ccsidr;
        let published = match silicon::lookup(midr, c.level, c.kind) {
            Some(p) if p.agrees(g) => format!("agrees ({})", p.source),
            Some(p) => format!("DIFFERS: {}-way {} sets {} B ({})", p.ways, p.sets_for(g), p.line, p.source),
            None => "-".into(),
        };
        diag!(
            "{:<5} {:>8}  {:>4}  {:<11}  {:>5}  {:>5}  {:>4}  {:#018x}  {}",
            c.name(),
            kib(g.size()),
            g.ways,
            c.kind.name(),
            c.level,
            g.sets,
            g.line(),
            g.raw,
            published
        );
        record::Cache::new()
            .level(c.level as u64)
            .r#type(c.kind.name())
            .line(g.line() as u64)
            .ways(g.ways as u64)
            .sets(g.sets as u64)
            .size(g.size())
            .source("ccsidr")
            .emit();
    }
    if t.caches.iter().any(|c| silicon::lookup(midr, c.level, c.kind).is_some_and(|p| !p.agrees(&c.ccsidr))) {
        diag!("CCSIDR is only guaranteed to be right for set/way maintenance, not to describe the");
        diag!("physical cache: where it disagrees with the published silicon, size working sets and");
        diag!("alignment from the silicon, and drive set/way loops from CCSIDR.");
    }
    ccsidr2_line(&t);
    explain_levels(&t);
    explain_ctr(&t);
    explain_dczid(&t);
    for (at, p) in t.problems() {
        diag!("WARNING {at}: {p} (value not trusted)");
    }
    emit_id_records(&t);
}

fn ccsidr2_line(t: &Topology) {
    match t.caches.first().map(|c| c.ccsidr2) {
        Some(Some(c2)) => diag!("CCSIDR2_EL1 readable (FEAT_CCIDX): L1 NumSets+1 = {}", c2.sets),
        Some(None) if t.format == CcsidrFormat::Ccidx => diag!("CCSIDR2_EL1 trapped although FEAT_CCIDX is reported"),
        Some(None) => diag!("CCSIDR2_EL1 not readable (UNDEFINED without FEAT_CCIDX, or trapped): probed safely"),
        None => {}
    }
}

fn explain_levels(t: &Topology) {
    let c = &t.clidr;
    diag!(
        "CLIDR_EL1 {:#x}: {} level(s); LoUU = {}, LoUIS = {}, LoC = {}{}",
        c.raw,
        c.levels(),
        c.louu,
        c.louis,
        c.loc,
        if c.icb != 0 { format!(", ICB = L{}", c.icb) } else { String::new() }
    );
    if c.louu == 0 {
        diag!("  LoUU = 0: no cache level lies before this core's Point of Unification: instruction");
        diag!("    fetch and table walks already see data this core wrote (no DC CVAU needed for them).");
    } else {
        diag!("  Point of Unification (this core) is after L{} (LoUU): clean levels 1..={} by VA", c.louu, c.louu);
        diag!("    (DC CVAU) so this core's instruction fetch and table walks see data it wrote.");
    }
    diag!(
        "  LoUIS = {}: the levels to clean for the Inner Shareable PoU; set/way to LoUIS visits {} lines.",
        c.louis,
        t.setway_ops(1, c.louis)
    );
    if c.loc == 0 {
        diag!("  LoC = 0: no cache needs maintenance to reach the Point of Coherency (caches are");
        diag!("    coherent with every observer); set/way to LoC does nothing.");
    } else {
        diag!("  Point of Coherency is after L{} (LoC): clean levels 1..={} (DC CVAC/CIVAC) before a", c.loc, c.loc);
        diag!("    non-coherent observer (DMA, a core with caches off) reads; invalidate (DC IVAC) before");
        diag!("    reading what it wrote. Set/way to LoC visits {} lines.", t.setway_ops(1, c.loc));
    }
}

fn explain_ctr(t: &Topology) {
    let ctr = &t.ctr;
    diag!("CTR_EL0 {:#x}:", ctr.raw);
    let c = &t.clidr;
    if ctr.idc() {
        diag!("  IDC=1: no D-cache clean is needed for instruction coherence; a DSB ISH orders new code.");
    } else if c.loc == 0 || (c.louis == 0 && c.louu == 0) {
        diag!("  IDC=0, but CLIDR (LoC = 0, or LoUIS = LoUU = 0) makes the clean to PoU unnecessary:");
        diag!("    the architecture lets software treat this as IDC=1. sync_instructions still cleans (harmless).");
    } else {
        diag!("  IDC=0: after writing code, clean it to PoU (DC CVAU per line), then DSB ISH.");
    }
    if ctr.dic() {
        diag!("  DIC=1: no I-cache invalidation is needed; an ISB makes new code visible to this core.");
    } else {
        diag!("  DIC=0: then invalidate the I-cache to PoU (IC IVAU per line, or IC IALLU), DSB ISH, ISB.");
    }
    diag!("  DminLine {} B: the stride of every DC-by-VA loop (a wider stride would skip lines);", ctr.dmin_line());
    diag!("    IminLine {} B: the stride of IC IVAU loops.", ctr.imin_line());
    diag!("  CWG {}: the largest block a writeback can touch: align and pad buffers that a", granule(ctr.cwg()));
    diag!("    device writes (and you invalidate) to it, or a writeback of a neighbour clobbers them.");
    diag!("  ERG {}: the exclusive monitor's granule: keep unrelated LDXR/STXR words this far apart.", granule(ctr.erg()));
    let l1ip = match ctr.l1ip() {
        L1Ip::Pipt => "PIPT: no aliasing; IC IVAU by VA is exact",
        L1Ip::Vipt => "VIPT: code mapped at two VAs may alias; after changing code mappings use IC IALLU",
        L1Ip::Vpipt => "VPIPT (VMID-aware PIPT, deprecated): hypervisors must invalidate on VMID reuse",
        L1Ip::Aivivt => "AIVIVT (reserved in Armv8): treat as VIVT, invalidate the whole I-cache",
    };
    diag!("  L1Ip {}", l1ip);
    if let Some(tl) = ctr.tmin_line() {
        diag!("  TminLine {tl} B: smallest allocation-tag line (MTE).");
    }
}

fn explain_dczid(t: &Topology) {
    let d = &t.dczid;
    match (d.prohibited(), d.block()) {
        (false, Some(b)) => diag!("DCZID_EL0 {:#x}: DC ZVA zeroes {b}-byte blocks aligned to {b} B (address rounded down).", d.raw),
        (true, Some(b)) => diag!("DCZID_EL0 {:#x}: DZP=1, DC ZVA prohibited ({b}-byte blocks): zero memory with stores.", d.raw),
        (_, None) => diag!("DCZID_EL0 {:#x}: BS={} is reserved: do not use DC ZVA.", d.raw, d.bs()),
    }
}

fn emit_id_records(t: &Topology) {
    let ctr = &t.ctr;
    record::Ctr::new()
        .raw(ctr.raw)
        .imin_line(ctr.imin_line() as u64)
        .dmin_line(ctr.dmin_line() as u64)
        .l1ip(ctr.l1ip().name())
        .erg(ctr.erg().map(u64::from))
        .cwg(ctr.cwg().map(u64::from))
        .idc(ctr.idc())
        .dic(ctr.dic())
        .tmin_line(ctr.tmin_line())
        .emit();
    let c = &t.clidr;
    let ctypes: Vec<u64> = (0..7).map(|i| (c.raw >> (3 * i)) & 7).collect();
    record::Clidr::new()
        .raw(c.raw)
        .ctype(&ctypes)
        .levels(c.levels() as u64)
        .louu(c.louu as u64)
        .louis(c.louis as u64)
        .loc(c.loc as u64)
        .icb(c.icb as u64)
        .ccsidr_format(if t.format == CcsidrFormat::Ccidx { "ccidx" } else { "32bit" })
        .emit();
    let d = &t.dczid;
    record::Dczid::new().raw(d.raw).bs(d.bs() as u64).block(d.block().map(u64::from)).dzp(d.prohibited()).emit();
}

// ---- cases -------------------------------------------------------------------------------------

fn id_registers(ctx: &mut Ctx) {
    let t = crate::cache::this_cpu();
    for (at, p) in t.problems() {
        ctx.fail(format!("{at}: {p}"));
    }
    ctx.check(t.clidr.levels() >= 1, "CLIDR describes at least one cache level");
    ctx.check(t.caches.iter().any(|c| c.level == 1 && c.kind != Kind::Instruction), "an L1 data or unified cache");
    ctx.check(t.clidr.loc >= t.clidr.louis, "LoC is not inside LoUIS");
    // CCSIDR2 exists exactly with FEAT_CCIDX (a trap with CCIDX would be FEAT_IDST: allowed).
    for c in &t.caches {
        match (t.format, c.ccsidr2) {
            (CcsidrFormat::Ccidx, Some(c2)) => {
                ctx.check_eq(c2.sets, c.ccsidr.sets, format!("{}: CCSIDR2 NumSets agrees with CCSIDR", c.name()));
            }
            (CcsidrFormat::Short, Some(c2)) => ctx.fail(format!("{}: CCSIDR2_EL1 readable ({:#x}) without FEAT_CCIDX", c.name(), c2.raw)),
            _ => {}
        }
    }
    // CSSELR was restored by the topology read.
    let before = CSSELR_EL1.get();
    let _ = crate::cache::this_cpu();
    ctx.check_eq(CSSELR_EL1.get(), before, "CSSELR_EL1 restored after reading the topology");
}

/// Replays a walk on a [`Recorder`] loaded with this CPU's raw ID values: the count the walker
/// issues when every operation is logged.
fn recorded_ops(t: &Topology, op: SetWayOp, scope: Scope) -> Result<u64, WalkError> {
    let mut r = Recorder { clidr: t.clidr.raw, mmfr2: t.mmfr2, ..Default::default() };
    for c in &t.caches {
        r.ccsidr[crate::cache::id::csselr(c.level, c.kind == Kind::Instruction) as usize & 0xf] = c.ccsidr.raw;
    }
    setway::walk(&mut r, op, scope)?;
    Ok(r.log.iter().filter(|e| matches!(e, setway::Event::Dc(..))).count() as u64)
}

fn setway_walk_counts(ctx: &mut Ctx) {
    let t = crate::cache::this_cpu();
    let c = &t.clidr;
    let mut scopes = vec![(Scope::ToLoC, 1, c.loc), (Scope::ToLoUIS, 1, c.louis)];
    for l in 1..=c.levels() {
        scopes.push((Scope::Level(l), l, l));
    }
    let caches_on = SCTLR_EL1.is_set(SCTLR_EL1::C);
    let saved = CSSELR_EL1.get();
    for op in [SetWayOp::Clean, SetWayOp::CleanInvalidate, SetWayOp::Invalidate] {
        for &(scope, first, last) in &scopes {
            let what = format!("{} {}", op.name(), scope.name());
            if op == SetWayOp::Invalidate && caches_on {
                ctx.check_eq(setway::dcsw(op, scope), Err(WalkError::InvalidateWithCachesOn), format!("{what} refused with caches on"));
                continue;
            }
            let expected = t.setway_ops(first, last);
            let n = crate::cache::dcsw(op, scope);
            ctx.check_eq(n, expected, format!("{what}: DC instructions executed = Σ sets × ways"));
            ctx.check_eq(recorded_ops(&t, op, scope), Ok(expected), format!("{what}: recorded walk issues the same count"));
        }
    }
    ctx.check_eq(CSSELR_EL1.get(), saved, "CSSELR_EL1 restored after the walks");
    ctx.check_eq(setway::dcsw(SetWayOp::Clean, Scope::Level(0)), Err(WalkError::BadLevel(0)), "level 0 refused");
    ctx.check_eq(setway::dcsw(SetWayOp::Clean, Scope::Level(8)), Err(WalkError::BadLevel(8)), "level 8 refused");
}

/// A heap buffer of `n` bytes whose start (returned) is aligned to `align`.
fn aligned_buffer(n: usize, align: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; n + align];
    let base = v.as_ptr() as usize;
    let off = base.next_multiple_of(align) - base;
    (v, off)
}

fn va_range_counts(ctx: &mut Ctx) {
    let line = crate::cache::this_cpu().ctr.dmin_line() as usize;
    let (buf, off) = aligned_buffer(8 * line, line);
    let a = buf.as_ptr() as usize + off;
    ctx.check_eq(maintenance::clean_to_poc(a, 4 * line), Ok(4), "clean_to_poc of 4 aligned lines: 4 DC CVAC");
    ctx.check_eq(maintenance::clean_invalidate_to_poc(a + 1, 4 * line), Ok(5), "misaligned 4-line range touches 5 lines");
    ctx.check_eq(maintenance::clean_to_pou(a + line - 1, 2), Ok(2), "2 bytes across a line boundary: 2 DC CVAU");
    ctx.check_eq(maintenance::clean_to_poc(a, 0), Ok(0), "empty range: nothing");
    ctx.check_eq(
        maintenance::clean_to_poc(usize::MAX - 3, 8),
        Err(RangeError { start: usize::MAX - 3, len: 8 }),
        "a range wrapping the address space is refused",
    );
}

fn invalidate_keeps_neighbours(ctx: &mut Ctx) {
    let line = crate::cache::this_cpu().ctr.dmin_line() as usize;
    let (mut buf, off) = aligned_buffer(4 * line, line);
    let b = &mut buf[off..off + 4 * line];
    // Range: from the middle of line 0 to the middle of line 2; lines 0 and 2 are shared with
    // bytes outside it.
    let (start, len) = (line / 2, 2 * line);
    for (i, x) in b.iter_mut().enumerate() {
        *x = i as u8;
    }
    maintenance::clean_to_poc(b.as_ptr() as usize, b.len()).ok();
    // Fresh writes to the neighbours only (on hardware with caches on these live in the cache).
    for i in (0..start).chain(start + len..4 * line) {
        b[i] = 0xc0 ^ i as u8;
    }
    let addr = b.as_ptr() as usize + start;
    // SAFETY: the range lies inside `buf`, which this case owns; its bytes may revert to memory.
    let n = unsafe { maintenance::invalidate_to_poc(addr, len) };
    ctx.check_eq(n, Ok(3), "a 2-line range starting mid-line touches 3 lines");
    let lost = (0..start).chain(start + len..4 * line).filter(|&i| b[i] != 0xc0 ^ i as u8).count();
    ctx.check_eq(lost, 0, "neighbour bytes sharing the edge lines survive the invalidate");
    let inside_ok = (start..start + len).all(|i| b[i] == i as u8);
    ctx.check(inside_ok, "bytes inside the range hold what was cleaned to memory");
}

/// movz w0, #imm16 with the immediate replaced.
fn patch_movz(word: u32, imm: u16) -> u32 {
    (word & !(0xffff << 5)) | (imm as u32) << 5
}

fn self_modifying_code(ctx: &mut Ctx) {
    let template = hw::smc_template();
    if !ctx.check(template.len() == 2 && template[0] & 0x7f80_0000 == 0x5280_0000, "template is movz w0, #imm; ret") {
        return;
    }
    let mut code: Vec<u32> = template.to_vec();
    let addr = code.as_ptr() as usize;
    let bytes = code.len() * 4;
    let run = |addr: usize| {
        // SAFETY: `addr` holds `movz w0, #imm; ret` made coherent by sync_instructions: a
        // function of the C ABI that takes nothing and returns w0.
        let f: extern "C" fn() -> u32 = unsafe { core::mem::transmute(addr) };
        trap::try_run(|| f())
    };
    let n = maintenance::sync_instructions(addr, bytes);
    let ctr = crate::cache::this_cpu().ctr;
    let lines = |l: u32| maintenance::line_span(addr, bytes, l as usize).map(|(a, b)| ((b - a) / l as usize) as u64).unwrap_or(0);
    let expected = (if ctr.idc() { 0 } else { lines(ctr.dmin_line()) }) + (if ctr.dic() { 0 } else { lines(ctr.imin_line()) });
    ctx.check_eq(n, Ok(expected), format!("sync_instructions issued DC CVAU/IC IVAU per IDC={} DIC={}", ctr.idc() as u8, ctr.dic() as u8));
    diag!("sync_instructions: {expected} maintenance instruction(s) for {bytes} bytes of code");
    match run(addr) {
        Ok(v) => ctx.check_eq(v, 0x1234, "copied code returns the template's immediate"),
        Err(e) => ctx.check(false, format!("copied code raised {}", e.summary())),
    };
    code[0] = patch_movz(code[0], 0x5678);
    ctx.check(maintenance::sync_instructions(addr, bytes).is_ok(), "sync after patching");
    match run(addr) {
        Ok(v) => ctx.check_eq(v, 0x5678, "patched immediate is executed after sync_instructions"),
        Err(e) => ctx.check(false, format!("patched code raised {}", e.summary())),
    };
}

fn dc_zva_one_block(ctx: &mut Ctx) {
    let d = crate::cache::this_cpu().dczid;
    let Some(block) = d.usable_block().map(|b| b as usize) else {
        diag!("DC ZVA not usable ({}): zero() falls back to stores", if d.prohibited() { "DZP=1" } else { "reserved BS" });
        zero_and_check(ctx, 0x1234 % 64 + 1, 300);
        ctx.skip("DC ZVA prohibited: fallback to stores checked instead");
        return;
    };
    let (mut buf, off) = aligned_buffer(4 * block, block);
    let b = &mut buf[off..off + 4 * block];
    b.fill(0xa5);
    // An address inside block 1: DC ZVA rounds it down to the block.
    let target = b.as_ptr() as usize + block + block / 2 + 3;
    // SAFETY: the block containing `target` lies inside `b`, which this case owns; DZP = 0.
    match trap::try_run(|| unsafe { hw::dc_zva(target) }) {
        Ok(()) => {}
        Err(e) => {
            ctx.skip(format!("DC ZVA raised {} (Device memory with the MMU off on hardware)", e.summary()));
            return;
        }
    }
    let zeroed: Vec<usize> = (0..b.len()).filter(|&i| b[i] == 0).collect();
    ctx.check_eq(zeroed.first().copied(), Some(block), "the zeroed bytes start at the block boundary");
    ctx.check_eq(zeroed.len(), block, "exactly one DCZID block is zeroed");
    ctx.check(zeroed.last() == Some(&(2 * block - 1)), "and end at the next block boundary");
    ctx.check(b[..block].iter().chain(&b[2 * block..]).all(|&x| x == 0xa5), "nothing beside the block changed");
}

/// Zeroes `len` bytes at offset `skew` of a patterned buffer with `maintenance::zero` and checks
/// that exactly they became 0.
fn zero_and_check(ctx: &mut Ctx, skew: usize, len: usize) -> maintenance::Zeroed {
    let mut buf = vec![0x5au8; skew + len + 64];
    let z = maintenance::zero(&mut buf[skew..skew + len]);
    ctx.check(buf[skew..skew + len].iter().all(|&x| x == 0), "zero(): every byte of the slice is 0");
    ctx.check(buf[..skew].iter().chain(&buf[skew + len..]).all(|&x| x == 0x5a), "zero(): bytes beside the slice untouched");
    let bs = crate::cache::this_cpu().dczid.block().unwrap_or(0) as usize;
    ctx.check_eq(z.zva_blocks * bs + z.stored, len, "zero(): DC ZVA blocks + stored bytes cover the slice");
    z
}

fn zero_buffer(ctx: &mut Ctx) {
    let z = zero_and_check(ctx, 13, 1000);
    match z.fallback {
        Some(why) => diag!("zero(): stores only: {why}"),
        None => diag!("zero(): {} DC ZVA block(s) + {} stored bytes", z.zva_blocks, z.stored),
    }
    let empty = maintenance::zero(&mut []);
    ctx.check_eq(empty.zva_blocks + empty.stored, 0, "zero() of an empty slice does nothing");
}

/// The phase of the VIPT alias case (its `model-ic-alias` record names it).
const VIPT_PHASE: &str = "cache/vipt-alias";

/// A VIPT L1I's aliasing (docs/cache.md, "VIVT, PIPT, VIPT"): one page of code mapped at two
/// VAs whose set-index bits above the 4 KiB page offset differ, executed through both, then IC
/// IVAU by the first VA and executed again through the second. On a VIPT L1I whose way is larger
/// than a page the line is cached twice, in two sets, and the invalidation by the first VA
/// reaches only its own set (Arm ARM DDI 0487, D7.5.9, the IC table's note b): the cache model
/// says so in a `model-ic-alias` record (copies before 2, left 1). PIPT cores, and VIPT ones
/// whose way fits a page, cannot alias: the case SKIPs with the reason. Afterwards the aliases
/// are unmapped and the whole I-cache is invalidated (IC IALLU: what code-mapping changes need
/// on a VIPT I-cache), and the MMU and caches are left as they were found.
fn vipt_alias(ctx: &mut Ctx) {
    use crate::mem::{alias::SCRATCH_BASE, attr::Attributes, attr::MemAttr, mmu, table::PAGE_SIZE, Granularity};
    use cachescope_arch::hw as ops;
    let t = crate::cache::this_cpu();
    let l1ip = t.ctr.l1ip();
    if l1ip != L1Ip::Vipt {
        return ctx.skip(format!("the L1I is {} (CTR_EL0.L1Ip): a physical line has one L1I copy whatever VA fetches it", l1ip.name()));
    }
    let Some(l1i) = t.caches.iter().find(|c| c.level == 1 && matches!(c.kind, Kind::Instruction | Kind::Unified)) else {
        return ctx.skip("CLIDR_EL1 lists no level-1 instruction cache");
    };
    let way = u64::from(l1i.ccsidr.sets) << l1i.ccsidr.log2_line;
    if way <= PAGE_SIZE {
        return ctx.skip(format!(
            "the L1I's way ({} per CCSIDR) fits a 4 KiB page: no VA bit above the page offset indexes it, so two aliases share one set",
            kib(way)
        ));
    }
    let before = mmu::control();
    let windows = match mmu::enable_with_aliases(ctx.boot) {
        Ok(w) => w,
        Err(e) => return ctx.fail(format!("cannot enable the MMU and the alias windows: {e}")),
    };
    let Some(wb) = windows.iter().find(|w| w.attr == MemAttr::NormalWriteBack) else {
        return ctx.fail("no normal-wb alias window");
    };
    // The first page of the test arena; VA1 = SCRATCH_BASE + PA keeps the PA's page bits, VA2
    // one page further maps the same PA with VA bit 12 flipped: another L1I set.
    let pa = wb.pa as u64;
    let (va1, va2) = (SCRATCH_BASE + pa, SCRATCH_BASE + pa + PAGE_SIZE);
    let template = hw::smc_template();
    for (i, w) in template.iter().enumerate() {
        // SAFETY: the first page of the normal-wb window (test memory), 4-byte aligned.
        unsafe { core::ptr::write_volatile((wb.va + 4 * i) as *mut u32, *w) };
    }
    if maintenance::sync_instructions(wb.va, 4 * template.len()).is_err() {
        return ctx.fail("cannot make the code coherent (DC CVAU/IC IVAU)");
    }
    for (name, va) in [("vipt-code-1", va1), ("vipt-code-2", va2)] {
        let _ = mmu::unmap(va, PAGE_SIZE); // left over by an earlier run that stopped midway
        if let Err(e) = mmu::map(name, va, pa, PAGE_SIZE, Attributes::CODE, Granularity::Pages) {
            return ctx.fail(format!("cannot map the code alias at {va:#x}: {e}"));
        }
    }
    let run = |va: u64| {
        // SAFETY: both aliases map the page holding `movz w0, #0x1234; ret` (the template, made
        // coherent above), a function of the C ABI that takes nothing and returns w0.
        let f: extern "C" fn() -> u32 = unsafe { core::mem::transmute(va as usize) };
        trap::try_run(|| f())
    };
    let results = crate::bench::named_phase(VIPT_PHASE, || {
        let first = run(va1);
        let second = run(va2);
        ops::ic_ivau(va1 as usize);
        ops::dsb_ish();
        ops::isb();
        (first, second, run(va2))
    });
    for (name, va) in [("first", va1), ("second", va2)] {
        if let Err(e) = mmu::unmap(va, PAGE_SIZE) {
            ctx.fail(format!("cannot unmap the {name} code alias: {e}"));
        }
    }
    ops::ic_iallu();
    ops::dsb_ish();
    ops::isb();
    if let Err(e) = mmu::set_control(before) {
        ctx.fail(format!("cannot restore the MMU and cache controls: {e}"));
    }
    let index = |va: u64| (va >> l1i.ccsidr.log2_line) & u64::from(l1i.ccsidr.sets - 1);
    for (what, r) in [("through VA1", results.0), ("through VA2", results.1), ("through VA2 after IC IVAU by VA1", results.2)] {
        match r {
            Ok(v) => ctx.check_eq(v, 0x1234, format!("the aliased code runs {what}")),
            Err(e) => ctx.check(false, format!("the aliased code raised {} {what}", e.summary())),
        };
    }
    let (s1, s2) = (index(va1), index(va2));
    diag!("vipt-alias: PA {pa:#x} ran at VA {va1:#x} (L1I set {s1}) and {va2:#x} (set {s2}); IC IVAU by the first VA reaches only its set");
    if ctx.boot.model.is_some() {
        diag!("  the cache model's model-ic-alias record of phase {VIPT_PHASE} counts the L1I copies before and after it");
    } else {
        diag!("  no count shows the two copies here (QEMU models no caches; silicon counts none): run it under the cache model");
    }
}
