//! The `mmu` suite: translation tables, memory attributes and alias windows, each mapping
//! proven by the hardware (`AT S1E1R` + PAR_EL1), data through aliases with the maintenance
//! their attributes need, MMU/cache control, break-before-make, the classic mistakes as
//! expected faults, and bad requests refused with errors.
//!
//! Leaves the MMU, D-cache and I-cache on with the identity map and the six alias windows
//! (`mem::mmu::enable_with_aliases`), which the benchmark suites use.

use alloc::{format, string::String, vec::Vec};

use crate::cache::{maintenance, Dczid, Kind};
use crate::cpu::cache::dc_zva;
use crate::cpu::{self, mmu as hw, trap};
use crate::diag;
use crate::exception::{ExpectedFault, FaultStatus};
use crate::harness::{Case, Ctx, Suite};
use crate::mem::{
    aarch64::{
        descriptor::{mair_byte, Mair, HINT_INDEX, MAIR_EL1_VALUE},
        regs::{self, par_shareability, MairByte, MmuFeatures, Par, SctlrView, TcrView},
    },
    alias::{self, AliasWindow, SCRATCH_BASE},
    mmu::{self, Control},
    table::{level_size, PAGE_SIZE},
    Access, Attributes, Error, Granularity, MemAttr, Shareability, Walk,
};
use crate::record::{self, Emit};
use cachescope_arch::hazard::HazardKind;
use cachescope_arch::sysreg::{DCZID_EL0, SCTLR_EL1};
use tock_registers::interfaces::Readable;

/// The MMU suite.
pub const SUITE: Suite = Suite {
    name: "mmu",
    report: Some(report),
    cases: &[
        Case { name: "enabled", run: enabled },
        Case { name: "identity-map", run: identity_map },
        Case { name: "alias-attributes", run: alias_attributes },
        Case { name: "alias-wb-to-nc", run: alias_wb_to_nc },
        Case { name: "alias-nc-to-wb", run: alias_nc_to_wb },
        Case { name: "break-before-make", run: break_before_make },
        Case { name: "cache-control", run: cache_control },
        Case { name: "mmu-off-unaligned-load", run: mmu_off_unaligned_load },
        Case { name: "device-unaligned-access", run: device_unaligned_access },
        Case { name: "xn-device-fetch", run: xn_device_fetch },
        Case { name: "unmapped-translation-fault", run: unmapped_translation_fault },
        Case { name: "dc-zva-device", run: dc_zva_device },
        Case { name: "bad-requests", run: bad_requests },
        Case { name: "final-state", run: final_state },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

// Arena offsets: each case that writes the arena has its own 1 MiB slot.
const DATA_OFF: usize = 0;
const DATA_WORDS: usize = 8192; // 64 KiB
const BBM_OFF: usize = 1 << 20;
const BBM_PAGES: u64 = 16;
const FETCH_OFF: usize = 2 << 20;
const ZVA_OFF: usize = 3 << 20;
const PROBE_OFF: usize = 4 << 20;
const ARENA_NEEDED: usize = 5 << 20;
const PAGE: usize = PAGE_SIZE as usize;
/// `ret`.
const RET: u32 = 0xd65f_03c0;

/// The windows, with the MMU on (enabling it if a case runs alone), or a failure.
fn windows(ctx: &mut Ctx) -> Option<&'static [AliasWindow]> {
    match mmu::enable_with_aliases(ctx.boot) {
        Ok(w) if w.len() == MemAttr::ALL.len() && w[0].len >= ARENA_NEEDED => Some(w),
        Ok(_) => {
            ctx.fail(format!("the cases need six alias windows over at least {} MiB of arena", ARENA_NEEDED >> 20));
            None
        }
        Err(e) => {
            ctx.fail(format!("MMU not enabled: {e}"));
            None
        }
    }
}

/// The window of `attr` (windows come in [`MemAttr::ALL`] order).
fn win(ws: &'static [AliasWindow], attr: MemAttr) -> &'static AliasWindow {
    &ws[MemAttr::ALL.iter().position(|&a| a == attr).unwrap_or(0)]
}

fn device_windows(ws: &'static [AliasWindow]) -> impl Iterator<Item = &'static AliasWindow> {
    ws.iter().filter(|w| w.attr.is_device())
}

fn human(len: u64) -> String {
    match len {
        l if l >= 1 << 30 && l % (1 << 30) == 0 => format!("{} GiB", l >> 30),
        l if l >= 1 << 20 && l % (1 << 20) == 0 => format!("{} MiB", l >> 20),
        l => format!("{} KiB", l >> 10),
    }
}

/// DminLine, the stride of by-VA maintenance.
fn line_bytes() -> usize {
    crate::cache::this_cpu().ctr.dmin_line() as usize
}

fn pattern(i: usize, seed: u64) -> u64 {
    seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn write_pattern(w: &AliasWindow, off: usize, words: usize, seed: u64) {
    for i in 0..words {
        if let Some(p) = w.ptr::<u64>(off + 8 * i) {
            // SAFETY: the window maps the test arena, which the kernel owns; `ptr` checked the
            // bounds and the offset is 8-byte aligned (Device memory needs aligned accesses).
            unsafe { p.write_volatile(pattern(i, seed)) };
        }
    }
}

/// The first word that differs from the pattern: (index, read, expected).
fn find_mismatch(w: &AliasWindow, off: usize, words: usize, seed: u64) -> Option<(usize, u64, u64)> {
    (0..words).find_map(|i| {
        let p = w.ptr::<u64>(off + 8 * i)?;
        // SAFETY: as in `write_pattern`.
        let v = unsafe { p.read_volatile() };
        (v != pattern(i, seed)).then_some((i, v, pattern(i, seed)))
    })
}

fn check_pattern(ctx: &mut Ctx, w: &AliasWindow, off: usize, words: usize, seed: u64, what: &str) -> bool {
    match find_mismatch(w, off, words, seed) {
        None => ctx.check(true, what),
        Some((i, got, want)) => ctx
            .check(false, format!("{what}: word {i} via {} ({:#x}) reads {got:#018x}, expected {want:#018x}", w.name, w.va + off + 8 * i)),
    }
}

fn report(ctx: &mut Ctx) {
    let ws = match mmu::enable_with_aliases(ctx.boot) {
        Ok(w) => w,
        Err(e) => {
            diag!("MMU not enabled: {e}");
            return;
        }
    };
    let r = mmu::registers();
    let tables = mmu::table_count();
    diag!("== MMU and memory attributes ==");
    diag!("{}", SctlrView(r.sctlr));
    diag!("{}", TcrView(r.tcr));
    diag!("MAIR_EL1 = {:#018x} (raw attribute bytes)", r.mair);
    let mair = mmu::mair().unwrap_or(Mair::DEFAULT);
    for i in 0..8u8 {
        let b = (r.mair >> (8 * i)) as u8;
        let slot = if i == HINT_INDEX { " (hint slot: reprogrammed per hint window)" } else { "" };
        diag!("  Attr{i} {b:#04x} {:<19} {}{slot}", mair.mem_at(i).map_or("unused", MemAttr::name), MairByte(b));
    }
    diag!("TTBR0_EL1 = {:#x}: {tables} tables ({} KiB), 4 KiB granule, 48-bit VA, walks start at level 0", r.ttbr0, tables * 4);
    record::Mmu::new().sctlr(r.sctlr).tcr(r.tcr).mair(r.mair).ttbr0(r.ttbr0).va_bits(48).tables(tables as u64).emit();
    diag!("mappings (identity map, then one alias window per memory type over the arena):");
    for m in mmu::mappings() {
        diag!("  {:<16} VA {:#016x}..{:#016x} -> PA {:#012x} {:>8}  {}", m.name, m.va, m.va + m.len, m.pa, human(m.len), m.attrs);
    }
    diag!(
        "alias windows: {} x {} of PA {:#x}; VA = {:#x} + index * {:#x} + PA",
        ws.len(),
        human(ws[0].len as u64),
        ws[0].pa,
        alias::WINDOW_BASE,
        alias::WINDOW_STRIDE
    );
}

/// `AT S1E1R` of `va` must give `pa`, the MAIR byte of `attrs` and its PAR shareability, and
/// agree with the software walk. Returns the PAR.
fn check_translation(ctx: &mut Ctx, what: &str, va: u64, pa: u64, attrs: Attributes) -> Par {
    let par = mmu::translate(va);
    let want = Par::Translated { pa: pa & !(PAGE_SIZE - 1), attr: mair_byte(attrs.mem), sh: par_shareability(&attrs) };
    ctx.check(par == want, format!("{what}: AT S1E1R {va:#x}: {par}; expected {want}"));
    match mmu::walk(va) {
        Ok(Walk::Mapped { pa: spa, attrs: sattrs, .. }) => {
            ctx.check(
                spa == pa && sattrs == attrs,
                format!("{what}: software walk {va:#x} -> {spa:#x} {sattrs}; expected {pa:#x} {attrs}"),
            );
        }
        other => {
            ctx.fail(format!("{what}: software walk of {va:#x}: {other:?}"));
        }
    }
    par
}

fn enabled(ctx: &mut Ctx) {
    if windows(ctx).is_none() {
        return;
    }
    let r = mmu::registers();
    ctx.check_eq(Control::from_sctlr(r.sctlr), Control::ALL_ON, "SCTLR_EL1 M, C and I");
    ctx.check_eq(r.mair, MAIR_EL1_VALUE, "MAIR_EL1 holds the raw attribute bytes (the hint slot its default)");
    ctx.check_eq(mmu::mair().map(Mair::value), Ok(r.mair), "the software walk decodes AttrIndx with MAIR_EL1's contents");
    let f = MmuFeatures::decode(hw::id_aa64mmfr0());
    ctx.check_eq(r.tcr, regs::tcr_value(f.pa_range), "TCR_EL1");
    ctx.check_eq(Ok(r.ttbr0 & 0x0000_ffff_ffff_f000), mmu::root(), "TTBR0_EL1 base = the root table");
    // What runs now translates to itself: this code, its stack, the console.
    let code = enabled as *const () as u64;
    let stack = &r as *const _ as u64;
    check_translation(ctx, "kernel text", code, code, Attributes::CODE);
    check_translation(ctx, "stack", stack, stack, Attributes::RW_DATA);
    let uart = ctx.boot.uart as u64;
    check_translation(ctx, "console UART", uart, uart, Attributes::MMIO);
}

fn identity_map(ctx: &mut Ctx) {
    if windows(ctx).is_none() {
        return;
    }
    let maps: Vec<_> = mmu::mappings().into_iter().filter(|m| m.va == m.pa).collect();
    ctx.check(maps.len() >= 5, format!("identity map has RAM (4+ regions) and MMIO: {} regions", maps.len()));
    for m in maps {
        for va in [m.va, m.va + m.len - PAGE_SIZE] {
            check_translation(ctx, m.name, va, va, m.attrs);
        }
    }
}

/// Words each hint window writes, cleans to PoC and reads back through the NC window.
const HINT_WORDS: usize = 16;

/// The hint window as `hint` ([`mmu::select_hint`]): MAIR_EL1's hint slot rewritten (checked
/// against the register), and data written through it, cleaned+invalidated to PoC and read back
/// through the NC window. None (failed) when refused.
fn select_hint_checked(ctx: &mut Ctx, hint: MemAttr, nc: &AliasWindow) -> Option<AliasWindow> {
    let w = match mmu::select_hint(hint) {
        Ok(w) => w,
        Err(e) => {
            ctx.fail(format!("hint window as {hint}: {e}"));
            return None;
        }
    };
    let want = Mair::with_hint(hint).map(Mair::value).ok();
    ctx.check_eq(Some(hw::mair()), want, format!("MAIR_EL1 with {hint} ({:#04x}) in Attr{HINT_INDEX}", mair_byte(hint)));
    let seed = 0x4849_4e54 ^ mair_byte(hint) as u64;
    write_pattern(&w, DATA_OFF, HINT_WORDS, seed);
    match maintenance::clean_invalidate_to_poc(w.va + DATA_OFF, 8 * HINT_WORDS) {
        Ok(_) => {
            check_pattern(ctx, nc, DATA_OFF, HINT_WORDS, seed, &format!("written via {hint}, cleaned to PoC, read via normal-nc"));
        }
        Err(e) => ctx.fail(format!("DC CIVAC of the {hint} window: {e:?}")),
    }
    Some(w)
}

fn alias_attributes(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    // The six fixed windows, then the hint window once per allocation hint (MAIR's hint slot
    // reprogrammed for each: mmu::select_hint), then the hint slot back to its default.
    let nc = *win(ws, MemAttr::NormalNonCacheable);
    let mut rows = Vec::new();
    let mut check = |ctx: &mut Ctx, w: AliasWindow| {
        let attrs = w.attributes();
        let mut verified = true;
        let mut first = None;
        for off in [0, (w.len / 2) & !(PAGE - 1), w.len - PAGE] {
            let failures = ctx.failures().len();
            let par = check_translation(ctx, w.name, (w.va + off) as u64, (w.pa + off) as u64, attrs);
            verified &= ctx.failures().len() == failures;
            first.get_or_insert(par);
        }
        let mair = format!("{:#04x}", mair_byte(w.attr));
        let rec = record::Attr::new().name(w.name).va(w.va as u64).pa(w.pa as u64).mair(&mair);
        match first {
            Some(Par::Translated { attr, sh, .. }) => rec.par_attr(Some(&format!("{attr:#04x}"))).sh(Some(sh.name())).emit(),
            _ => rec.par_attr(None).sh(None).emit(),
        }
        rows.push((w, verified));
    };
    for w in ws {
        check(ctx, *w);
    }
    for hint in MemAttr::HINTS {
        if let Some(w) = select_hint_checked(ctx, hint, &nc) {
            check(ctx, w);
        }
    }
    if let Err(e) = mmu::select_hint(Mair::DEFAULT.hint()) {
        ctx.fail(format!("hint slot back to its default: {e}"));
    }
    ctx.check_eq(hw::mair(), MAIR_EL1_VALUE, "MAIR_EL1 back to its default");
    diag!("attribute matrix (every row checked by AT S1E1R + PAR_EL1 at the first, middle and last page):");
    diag!("  {:<19} {:<5} {:<27} {:<20} {:<3} {}", "name", "MAIR", "cacheability", "shareability", "XN", "verified by AT");
    for (w, ok) in rows {
        let a = w.attributes();
        let share = match (a.share, par_shareability(&a)) {
            (mapped, eff) if mapped == eff => String::from(mapped.name()),
            (mapped, eff) => format!("{} ({} mapped)", eff.name(), mapped.name()),
        };
        diag!(
            "  {:<19} {:#04x}  {:<27} {:<20} {:<3} {}",
            w.name,
            mair_byte(w.attr),
            format!("{}", MairByte(mair_byte(w.attr))),
            share,
            if a.executable { "no" } else { "yes" },
            if ok { "yes" } else { "NO" }
        );
    }
}

/// Declares a probe's deliberate stale access to the sanitizer: `kind` on every line of the
/// `bytes` from `pa`, unless this CPU needs no maintenance to the PoC (then nothing is stale, and
/// the probe says why it declares nothing).
fn declare_probe(ctx: &Ctx, probe: &str, kind: HazardKind, pa: u64, bytes: usize) {
    match crate::cache::poc_maintenance_unneeded() {
        None => ctx.expect_hazard(probe, kind, pa, (bytes / line_bytes()) as u64, line_bytes() as u64),
        Some(why) => diag!("{probe} declares no hazard: {why}"),
    }
}

fn alias_wb_to_nc(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let (wb, nc) = (win(ws, MemAttr::NormalWriteBack), win(ws, MemAttr::NormalNonCacheable));
    let seed = cpu::counter();
    write_pattern(wb, DATA_OFF, DATA_WORDS, seed);
    // Without maintenance the new data may still sit dirty in the cache (information only:
    // QEMU models no cache, so there it is always visible). The probe is a deliberate
    // stale read, declared to the cache model's sanitizer.
    let probe = "mmu/probe-nc-before-clean";
    let early = crate::bench::named_phase(probe, || find_mismatch(nc, DATA_OFF, DATA_WORDS, seed).is_none());
    declare_probe(ctx, probe, HazardKind::StaleReadByDevice, (nc.pa + DATA_OFF) as u64, DATA_WORDS * 8);
    diag!("before the clean, the NC alias {} the data written through WB", if early { "already sees" } else { "does not yet see" });
    if let Err(e) = maintenance::clean_to_poc(wb.va + DATA_OFF, DATA_WORDS * 8) {
        ctx.fail(format!("clean to PoC refused: {e:?}"));
        return;
    }
    for w in [nc].into_iter().chain(device_windows(ws)) {
        check_pattern(ctx, w, DATA_OFF, DATA_WORDS, seed, &format!("written via normal-wb, cleaned to PoC, read via {}", w.name));
    }
}

/// The words of the stale-read probe in [`alias_nc_to_wb`]: a quarter of the smallest L1 data
/// (or unified) cache CCSIDR reports, and at most [`DATA_WORDS`].
///
/// The probe declares every line of the buffer a stale read, so every line must still be in
/// the CPU's L1D when it is read again. A buffer larger than L1D is held by L2 only in part
/// (reading it refills L1D in order, evicting its own first half), and a profile with a stride
/// prefetcher (rpi4, rpi5) refills those lines ahead of the reads: the cache model then sees
/// only the lines the prefetcher did not reach (34 of 1,024 under `rpi4`). A quarter of the
/// L1D the CPU reports stays within one way of every modelled L1D it is paired with: the
/// guest's own geometry, or a profile whose L1D is at least half the CPU's (rpi4 32 KiB 2-way:
/// one way is 16 KiB, a quarter of a 64 KiB CPU L1D; rpi5 64 KiB 4-way), so no set needs
/// more than one of the buffer's lines and the rest of each set is left for the stack and the
/// code that runs between the reads.
fn probe_words() -> usize {
    let topo = crate::cache::this_cpu();
    let l1d = topo.caches.iter().filter(|c| c.level == 1 && c.kind != Kind::Instruction).map(|c| c.ccsidr.size() as usize).min();
    l1d.map_or(DATA_WORDS, |bytes| (bytes / 4 / 8).clamp(1, DATA_WORDS))
}

fn alias_nc_to_wb(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let (wb, wt, nc) = (win(ws, MemAttr::NormalWriteBack), win(ws, MemAttr::NormalWriteThrough), win(ws, MemAttr::NormalNonCacheable));
    let words = probe_words();
    let (old, new) = (cpu::counter(), !cpu::counter());
    // Old data, cleaned to memory and read through WB so that the cache holds it.
    write_pattern(wb, DATA_OFF, words, old);
    let cleaned = maintenance::clean_to_poc(wb.va + DATA_OFF, words * 8).is_ok();
    ctx.check(cleaned, "clean to PoC of the old data");
    check_pattern(ctx, wb, DATA_OFF, words, old, "old data read back via normal-wb");
    // Read once more with nothing in between but the NC writes (the check above printed its
    // line, which may have evicted some of the buffer): every line is in L1D now.
    let _ = core::hint::black_box(find_mismatch(wb, DATA_OFF, words, old));
    // New data straight to memory.
    write_pattern(nc, DATA_OFF, words, new);
    // A deliberate read of the stale cached copy, declared to the sanitizer: every line.
    let probe = "mmu/probe-wb-before-invalidate";
    let stale = crate::bench::named_phase(probe, || find_mismatch(wb, DATA_OFF, words, new).is_some());
    declare_probe(ctx, probe, HazardKind::StaleReadByCpu, (wb.pa + DATA_OFF) as u64, words * 8);
    diag!(
        "before the invalidate, the WB alias {} ({} KiB probe: a quarter of L1D)",
        if stale { "still reads old (cached) data" } else { "already reads the new data" },
        (words * 8) >> 10
    );
    // SAFETY: the arena slot belongs to this case; its dirty lines (none: cleaned above, and
    // the reads since allocate clean lines) may be discarded.
    let inv = unsafe { maintenance::invalidate_to_poc(wb.va + DATA_OFF, words * 8) };
    if let Err(e) = inv {
        ctx.fail(format!("invalidate to PoC refused: {e:?}"));
        return;
    }
    for w in [wb, wt] {
        check_pattern(ctx, w, DATA_OFF, words, new, &format!("written via normal-nc, invalidated, read via {}", w.name));
    }
}

/// Checks `result` is exactly `want`, printing the refusal.
fn refused<T: core::fmt::Debug>(ctx: &mut Ctx, what: &str, result: Result<T, Error>, want: Error) {
    match &result {
        Err(e) if *e == want => diag!("{what}: refused: {e}"),
        _ => {}
    }
    ctx.check(matches!(&result, Err(e) if *e == want), format!("{what}: got {result:?}, expected Err({want:?})"));
}

fn break_before_make(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let wb = win(ws, MemAttr::NormalWriteBack);
    let pa = (wb.pa + BBM_OFF) as u64;
    let va = SCRATCH_BASE + pa;
    let len = BBM_PAGES * PAGE_SIZE;
    let _ = mmu::unmap(va, len); // left over by an earlier run that stopped midway
    let wb_attrs = Attributes::data(MemAttr::NormalWriteBack);
    if let Err(e) = mmu::map("bbm-scratch", va, pa, len, wb_attrs, Granularity::Pages) {
        ctx.fail(format!("mapping the scratch pages: {e}"));
        return;
    }
    let scratch = AliasWindow { attr: MemAttr::NormalWriteBack, name: "bbm-scratch", va: va as usize, pa: pa as usize, len: len as usize };
    let words = len as usize / 8;
    let seed = cpu::counter();
    write_pattern(&scratch, 0, words, seed);
    check_translation(ctx, "scratch before", va, pa, wb_attrs);

    // A live mapping is never changed by mapping again or by making without breaking.
    refused(
        ctx,
        "second map over the live scratch",
        mmu::map("again", va, pa, len, Attributes::data(MemAttr::NormalNonCacheable), Granularity::Pages),
        Error::Overlap { va, len, existing: "bbm-scratch" },
    );
    refused(
        ctx,
        "make without break",
        mmu::make_range(va, PAGE_SIZE, Attributes::data(MemAttr::NormalNonCacheable)),
        Error::LiveEntry { va },
    );

    // Pages 4..8 by hand: clean+invalidate (leaving WB), break, TLBI, make as NC.
    let (sub, sub_len) = (va + 4 * PAGE_SIZE, 4 * PAGE_SIZE);
    ctx.check(maintenance::clean_invalidate_to_poc(sub as usize, sub_len as usize).is_ok(), "clean+invalidate before leaving WB");
    if let Err(e) = mmu::break_range(sub, sub_len) {
        ctx.fail(format!("break: {e}"));
    }
    let par = mmu::translate(sub);
    ctx.check(
        matches!(par, Par::Fault { status: FaultStatus::Translation(3), .. }),
        format!("broken entry: AT S1E1R {sub:#x}: {par}; expected a level 3 translation fault"),
    );
    // SAFETY: an aligned load from a broken (invalid) entry: it must fault.
    ctx.expect_fault(ExpectedFault::DataAbort(FaultStatus::Translation(3)), || unsafe {
        cpu::load_u32_raw(sub as usize);
    });
    check_translation(ctx, "neighbour below the broken pages", sub - PAGE_SIZE, pa + 3 * PAGE_SIZE, wb_attrs);
    check_translation(ctx, "neighbour above the broken pages", sub + sub_len, pa + 8 * PAGE_SIZE, wb_attrs);
    if let Err(e) = mmu::make_range(sub, sub_len, Attributes::data(MemAttr::NormalNonCacheable)) {
        ctx.fail(format!("make: {e}"));
    }
    for k in 0..4 {
        check_translation(ctx, "made NC", sub + k * PAGE_SIZE, pa + (4 + k) * PAGE_SIZE, Attributes::data(MemAttr::NormalNonCacheable));
    }
    check_pattern(ctx, &scratch, 0, words, seed, "data after WB -> NC by hand");

    // The whole range through remap: to Device-nGnRE, then back to WB.
    for attr in [MemAttr::DeviceNGnRE, MemAttr::NormalWriteBack] {
        if let Err(e) = mmu::remap(va, len, Attributes::data(attr)) {
            ctx.fail(format!("remap to {attr}: {e}"));
            continue;
        }
        for k in [0, 5, BBM_PAGES - 1] {
            check_translation(ctx, &format!("remapped {attr}"), va + k * PAGE_SIZE, pa + k * PAGE_SIZE, Attributes::data(attr));
        }
        check_pattern(ctx, &scratch, 0, words, seed, &format!("data after remap to {attr}"));
    }
    if let Err(e) = mmu::unmap(va, len) {
        ctx.fail(format!("unmap of the scratch: {e}"));
    }
    let par = mmu::translate(va);
    ctx.check(matches!(par, Par::Fault { status: FaultStatus::Translation(3), .. }), format!("unmapped scratch: {par}"));
}

fn set_and_check(ctx: &mut Ctx, want: Control, what: &str) -> bool {
    match mmu::set_control(want) {
        Ok(()) => ctx.check_eq(mmu::control(), want, what),
        Err(e) => ctx.check(false, format!("{what}: {e}")),
    }
}

fn cache_control(ctx: &mut Ctx) {
    if windows(ctx).is_none() {
        return;
    }
    let mut cell = [0u64; 8];
    let p = cell.as_mut_ptr();
    let on = Control::ALL_ON;
    // Each step: switch, read what was written before (must survive), write a new value.
    let steps = [
        (Control { icache: false, ..on }, "I-cache off"),
        (on, "I-cache on"),
        (Control { dcache: false, ..on }, "D-cache off (MMU on)"),
        (on, "D-cache on"),
        (Control { mmu: false, ..on }, "MMU off (C set, data still uncached)"),
        (on, "MMU on"),
        (Control::ALL_OFF, "MMU, D-cache and I-cache off"),
        (on, "all on again"),
    ];
    // SAFETY: `cell` is this frame's; volatile so every access really reaches memory/cache.
    unsafe { p.write_volatile(1) };
    for (k, (want, what)) in steps.into_iter().enumerate() {
        if !set_and_check(ctx, want, what) {
            break;
        }
        // SAFETY: as above.
        let v = unsafe { p.read_volatile() };
        ctx.check_eq(v, k as u64 + 1, format!("value written before '{what}' reads back after it"));
        // SAFETY: as above.
        unsafe { p.write_volatile(k as u64 + 2) };
        diag!("{what}: {}", SctlrView(SCTLR_EL1.get()));
    }
    let _ = mmu::set_control(on);
}

fn mmu_off_unaligned_load(ctx: &mut Ctx) {
    if windows(ctx).is_none() {
        return;
    }
    let buf = [0x0123_4567_89ab_cdefu64, 0];
    let addr = buf.as_ptr() as usize + 1;
    // MMU on: Normal memory, SCTLR.A = 0: the unaligned load just works.
    // SAFETY: the load stays inside `buf`.
    let v = unsafe { cpu::load_u32_raw(addr) };
    ctx.check_eq(v, 0x6789_abcd, "unaligned load from Normal memory with the MMU on");
    if let Err(e) = mmu::disable() {
        ctx.fail(format!("MMU off: {e}"));
        return;
    }
    ctx.check(!mmu::control().mmu, "SCTLR_EL1.M = 0");
    // SAFETY: inside `buf`; with the MMU off data is Device-nGnRnE: must fault.
    let r = ctx.expect_fault(ExpectedFault::DataAbort(FaultStatus::Alignment), || unsafe {
        cpu::load_u32_raw(addr);
    });
    if let Some(r) = r {
        ctx.check_eq(r.far, addr as u64, "FAR is the unaligned address");
    }
    if let Err(e) = mmu::enable() {
        ctx.fail(format!("MMU back on: {e}"));
    }
    ctx.check_eq(mmu::control(), Control::ALL_ON, "MMU, D-cache, I-cache on again");
}

/// Runs `f`, which must raise `expected`: true when it trapped (a different fault fails the
/// case), false when it completed without any exception.
fn trapped(ctx: &mut Ctx, what: &str, expected: ExpectedFault, f: impl FnOnce()) -> bool {
    match trap::try_run(f) {
        Err(r) => {
            diag!("{what}: trap: {}", r.summary());
            ctx.check(expected.matches(&r), format!("{what}: expected {expected}, got {}", r.summary()));
            true
        }
        Ok(()) => false,
    }
}

/// Accesses that should have faulted but completed: a SKIP naming the emulator deviation when
/// `known` (an emulator that is known to behave so), a failure otherwise.
fn deviations(ctx: &mut Ctx, completed: &[String], known: bool, why: &str) {
    if completed.is_empty() {
        return;
    }
    let list = completed.join(", ");
    if known {
        ctx.skip(format!("emulator deviation: {why}: {list}"));
    } else {
        ctx.fail(format!("no fault where the architecture requires one: {list}"));
    }
}

/// Probes whether this machine alignment-checks Device accesses at all: one unaligned load
/// from `addr` (a Device mapping) under the trap catcher. True when it faulted as the
/// architecture requires. QEMU 10.0 TCG checks it under multi-threaded TCG only (not with one
/// vCPU, `-icount` or `-accel tcg,thread=single`): the behaviour is probed, not inferred from
/// the vCPU count or the accelerator options.
fn device_alignment_checked(addr: usize) -> bool {
    // SAFETY: inside the arena slot of the case, mapped Device: the load either faults (caught
    // here) or reads four bytes of test memory.
    trap::try_run(|| unsafe {
        cpu::load_u32_raw(addr);
    })
    .is_err()
}

fn device_unaligned_access(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let wb = win(ws, MemAttr::NormalWriteBack);
    let seed = cpu::counter();
    write_pattern(wb, DATA_OFF, 2, seed);
    let _ = maintenance::clean_to_poc(wb.va + DATA_OFF, 16);
    let want = (pattern(0, seed) >> 8) as u32;
    for w in ws.iter().filter(|w| !w.attr.is_device()) {
        let addr = w.va + DATA_OFF + 1;
        // SAFETY: inside the arena slot of this case; Normal memory allows unaligned loads.
        let v = unsafe { cpu::load_u32_raw(addr) };
        ctx.check_eq(v, want, format!("unaligned load via {} succeeds", w.name));
    }
    let fault = ExpectedFault::DataAbort(FaultStatus::Alignment);
    // On an emulator, probe first: one unaligned Device load, before the checked accesses.
    let probe = device_windows(ws).next().map(|w| w.va + DATA_OFF + 1);
    let unchecked_here = ctx.boot.emulated && probe.is_some_and(|a| !device_alignment_checked(a));
    if unchecked_here {
        diag!("probe: an unaligned Device load completed without a fault: this emulator run does not alignment-check Device accesses");
    }
    let mut completed = Vec::new();
    for w in device_windows(ws) {
        let addr = w.va + DATA_OFF + 1;
        // SAFETY: inside the arena slot; Device memory: must raise an alignment fault.
        if !trapped(ctx, &format!("{} unaligned load", w.name), fault, || unsafe {
            cpu::load_u32_raw(addr);
        }) {
            completed.push(format!("{} load", w.name));
        }
        // SAFETY: as above, a store: must fault before writing.
        if !trapped(ctx, &format!("{} unaligned store", w.name), fault, || unsafe { cpu::store_u32_raw(addr + 2, 0xdead_beef) }) {
            completed.push(format!("{} store", w.name));
        }
    }
    if completed.is_empty() {
        check_pattern(ctx, wb, DATA_OFF, 2, seed, "faulting stores wrote nothing");
    }
    // QEMU 10.0 checks Device alignment with the access's atomicity, which single-threaded TCG
    // (one vCPU, -icount, thread=single) relaxes to bytes; multi-threaded TCG faults as the
    // architecture says. Only a run whose probe did not fault may SKIP; on silicon it fails.
    deviations(
        ctx,
        &completed,
        unchecked_here,
        "this QEMU TCG run does not alignment-check Device accesses (probed: single-threaded TCG, i.e. -smp 1, -icount or -accel tcg,thread=single; multi-threaded TCG faults)",
    );
}

fn xn_device_fetch(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let wb = win(ws, MemAttr::NormalWriteBack);
    // A `ret` there, so that a fetch that wrongly succeeds returns instead of running wild.
    if let Some(p) = wb.ptr::<u32>(FETCH_OFF) {
        // SAFETY: the arena slot of this case.
        unsafe { p.write_volatile(RET) };
    }
    let _ = maintenance::clean_to_poc(wb.va + FETCH_OFF, 4);
    let _ = maintenance::sync_instructions(wb.va + FETCH_OFF, 4);
    for w in device_windows(ws) {
        let target = w.va + FETCH_OFF;
        let level = match mmu::walk(target as u64) {
            Ok(Walk::Mapped { level, attrs, .. }) if !attrs.executable => level,
            other => {
                ctx.fail(format!("{}: {target:#x} is not an execute-never mapping: {other:?}", w.name));
                continue;
            }
        };
        // SAFETY: the target holds `ret`; the fetch must raise a permission fault first.
        let r = ctx.expect_fault(ExpectedFault::InstructionAbort(FaultStatus::Permission(level as i8)), || unsafe { hw::call(target) });
        if let Some(r) = r {
            ctx.check_eq((r.far, r.elr), (target as u64, target as u64), format!("{}: FAR and ELR are the fetched address", w.name));
        }
    }
}

fn unmapped_translation_fault(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let wb = win(ws, MemAttr::NormalWriteBack);
    let pa = (wb.pa + PROBE_OFF) as u64;
    let probe = SCRATCH_BASE + pa;
    let _ = mmu::unmap(probe, PAGE_SIZE);
    if let Err(e) = mmu::map("fault-probe", probe, pa, PAGE_SIZE, Attributes::data(MemAttr::NormalWriteBack), Granularity::Pages) {
        ctx.fail(format!("mapping the probe page: {e}"));
        return;
    }
    let gib = level_size(1);
    let wb_end = (wb.va + wb.len) as u64;
    let candidates = [
        0x7000_0000_0000,
        SCRATCH_BASE,
        probe + PAGE_SIZE,
        probe - PAGE_SIZE,
        wb_end,
        wb_end.next_multiple_of(level_size(2)) + level_size(2),
        (wb.va as u64 & !(gib - 1)) + 4 * gib,
        wb.va as u64 - PAGE_SIZE,
    ];
    let mut by_level: [Option<u64>; 4] = [None; 4];
    for va in candidates {
        if let Ok(Walk::Fault { level }) = mmu::walk(va) {
            by_level[level as usize].get_or_insert(va);
        }
    }
    for (level, va) in by_level.iter().enumerate() {
        let Some(va) = *va else {
            ctx.fail(format!("no unmapped probe address faults at level {level} in this layout"));
            continue;
        };
        let level = level as i8;
        let par = mmu::translate(va);
        ctx.check(
            matches!(par, Par::Fault { status, .. } if status == FaultStatus::Translation(level)),
            format!("AT S1E1R {va:#x}: {par}; expected a level {level} translation fault"),
        );
        // SAFETY: an aligned load from an unmapped address: it must fault.
        let r = ctx.expect_fault(ExpectedFault::DataAbort(FaultStatus::Translation(level)), || unsafe {
            cpu::load_u32_raw(va as usize);
        });
        if let Some(r) = r {
            ctx.check_eq(r.far, va, format!("level {level}: FAR is the address"));
        }
    }
    if let Err(e) = mmu::unmap(probe, PAGE_SIZE) {
        ctx.fail(format!("unmap of the probe page: {e}"));
    }
}

fn dc_zva_device(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let dczid = Dczid { raw: DCZID_EL0.get() };
    let Some(block) = dczid.usable_block().map(|b| b as usize) else {
        ctx.skip(format!("DC ZVA unusable (DCZID_EL0 {:#x}: prohibited or reserved block size)", dczid.raw));
        return;
    };
    let wb = win(ws, MemAttr::NormalWriteBack);
    // Normal memory: DC ZVA zeroes one block.
    write_pattern(wb, ZVA_OFF, block / 8, 0x5555);
    // SAFETY: the arena slot of this case, aligned to the block size (1 MiB offset).
    unsafe { dc_zva(wb.va + ZVA_OFF) };
    let zeroed = (0..block / 8).all(|i| {
        wb.ptr::<u64>(ZVA_OFF + 8 * i).is_some_and(|p| {
            // SAFETY: `ptr` returned an aligned pointer inside the window (test memory).
            unsafe { p.read_volatile() == 0 }
        })
    });
    ctx.check(zeroed, format!("DC ZVA zeroes a {block}-byte block of Normal WB memory"));
    // The Device aliases below map the same memory: the zeroed block leaves the cache first,
    // or it would later be written back over what they write.
    if let Err(e) = maintenance::clean_invalidate_to_poc(wb.va + ZVA_OFF, block) {
        ctx.fail(format!("clean+invalidate to PoC refused: {e:?}"));
    }
    let mut completed = Vec::new();
    for w in device_windows(ws) {
        let target = w.va + ZVA_OFF;
        write_pattern(w, ZVA_OFF, block / 8, 0xaaaa);
        // SAFETY: the arena slot of this case; on Device memory DC ZVA must raise an alignment
        // fault (Arm ARM, DC ZVA), which the catcher takes.
        if !trapped(ctx, &format!("{} DC ZVA", w.name), ExpectedFault::DataAbort(FaultStatus::Alignment), || unsafe { dc_zva(target) }) {
            let zeroed = find_mismatch(w, ZVA_OFF, block / 8, 0xaaaa).is_some();
            completed.push(format!("{} ({})", w.name, if zeroed { "block zeroed" } else { "block unchanged" }));
        }
    }
    deviations(ctx, &completed, ctx.boot.emulated, "QEMU TCG executes DC ZVA on Device memory instead of raising an alignment fault");
}

fn bad_requests(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    let wb = win(ws, MemAttr::NormalWriteBack);
    let before = mmu::mappings();
    let pa = (wb.pa + PROBE_OFF) as u64;
    let va = SCRATCH_BASE + pa;
    let rw = Attributes::data(MemAttr::NormalWriteBack);
    let text = mmu::kernel_image().start;
    refused(
        ctx,
        "map over the kernel text",
        mmu::map("overlap", text, text, PAGE_SIZE, Attributes::RO_DATA, Granularity::Pages),
        Error::Overlap { va: text, len: PAGE_SIZE, existing: "kernel-text" },
    );
    let tail = (wb.va + wb.len) as u64 - PAGE_SIZE;
    refused(
        ctx,
        "map straddling the end of a window",
        mmu::map("overlap", tail, pa, 2 * PAGE_SIZE, rw, Granularity::Pages),
        Error::Overlap { va: tail, len: 2 * PAGE_SIZE, existing: "normal-wb" },
    );
    refused(
        ctx,
        "unaligned virtual address",
        mmu::map("x", va + 0x800, pa, PAGE_SIZE, rw, Granularity::Pages),
        Error::Unaligned { what: "virtual address", value: va + 0x800 },
    );
    refused(
        ctx,
        "unaligned physical address",
        mmu::map("x", va, pa + 8, PAGE_SIZE, rw, Granularity::Pages),
        Error::Unaligned { what: "physical address", value: pa + 8 },
    );
    refused(ctx, "unaligned length", mmu::map("x", va, pa, 100, rw, Granularity::Pages), Error::Unaligned { what: "length", value: 100 });
    refused(
        ctx,
        "writable+executable",
        mmu::map("x", va, pa, PAGE_SIZE, Attributes { executable: true, ..rw }, Granularity::Pages),
        Error::WriteExecute,
    );
    let xdev = Attributes { executable: true, access: Access::ReadOnly, ..Attributes::data(MemAttr::DeviceNGnRE) };
    refused(ctx, "executable Device", mmu::map("x", va, pa, PAGE_SIZE, xdev, Granularity::Pages), Error::ExecutableDevice);
    refused(
        ctx,
        "remap a window to writable+executable",
        mmu::remap(wb.va as u64, PAGE_SIZE, Attributes { executable: true, ..rw }),
        Error::WriteExecute,
    );
    let arena = ctx.boot.arena;
    let below = (arena.0 - PAGE, 2 * PAGE);
    refused(
        ctx,
        "alias window starting below the arena",
        alias::plan(arena, below),
        Error::OutsideArena { pa: below.0 as u64, len: below.1 as u64, arena_start: arena.0 as u64, arena_len: arena.1 as u64 },
    );
    let past = (arena.0 + arena.1 - PAGE, 2 * PAGE);
    refused(
        ctx,
        "alias window ending past the arena",
        alias::plan(arena, past),
        Error::OutsideArena { pa: past.0 as u64, len: past.1 as u64, arena_start: arena.0 as u64, arena_len: arena.1 as u64 },
    );
    refused(ctx, "unmap part of a window", mmu::unmap(wb.va as u64, PAGE_SIZE), Error::NoSuchMapping { va: wb.va as u64, len: PAGE_SIZE });
    match mmu::walk(wb.va as u64) {
        Ok(Walk::Mapped { level, .. }) if level < 3 => {
            refused(
                ctx,
                "break one page of a block",
                mmu::break_range(wb.va as u64, PAGE_SIZE),
                Error::SplitsBlock { va: wb.va as u64, level },
            );
            refused(
                ctx,
                "make over a live block",
                mmu::make_range(wb.va as u64, level_size(level), rw),
                Error::LiveEntry { va: wb.va as u64 },
            );
        }
        other => diag!("window start is a {other:?}: block-splitting request not applicable"),
    }
    refused(ctx, "break an unmapped range", mmu::break_range(SCRATCH_BASE, PAGE_SIZE), Error::NotMapped { va: SCRATCH_BASE });
    // Nothing changed.
    ctx.check_eq(mmu::mappings(), before, "refused requests left the mappings unchanged");
    check_translation(ctx, "normal-wb window after the refusals", wb.va as u64, wb.pa as u64, rw);
}

fn final_state(ctx: &mut Ctx) {
    let Some(ws) = windows(ctx) else { return };
    ctx.check_eq(mmu::control(), Control::ALL_ON, "MMU, D-cache and I-cache on");
    let names: Vec<_> = mmu::mappings().iter().map(|m| m.name).collect();
    ctx.check(!names.iter().any(|n| *n == "bbm-scratch" || *n == "fault-probe"), format!("test mappings removed: {names:?}"));
    for w in ws {
        check_translation(ctx, w.name, w.va as u64, w.pa as u64, w.attributes());
    }
    ctx.check(ws.iter().all(|w| w.attributes().share == Shareability::Inner), "windows are inner shareable");
    diag!("left for the following suites: MMU, D-cache and I-cache on; identity map + {} alias windows (mem::alias::windows())", ws.len());
}
