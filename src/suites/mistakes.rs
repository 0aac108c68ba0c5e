//! The classic cache-maintenance mistakes, made on purpose, one per case, so that the cache
//! model's sanitizer (host/cache-model) can be seen to catch each one: a hand-off without a
//! clean, a read-back without an invalidate, an invalidate of a partial edge line, a by-VA loop
//! with twice the line as its stride, self-modifying code without IC IVAU, and set/way
//! maintenance of one level where another level holds the data; and, on two cores, a
//! non-cacheable write behind another core's cached copy and a line cached by two cores through
//! a Non-shareable mapping.
//!
//! Each case runs its mistake as the cache-model phase `mistakes/CASE` and declares what the
//! sanitizer must report with `expect-hazard` records (kind and lines). The plugin cannot answer
//! the kernel under plugin API v4 (it can read guest registers and memory, not write them), so
//! the verdict is the host's: `scripts/xtask hazards` requires, per mistakes phase, exactly the
//! expected kinds at exactly the expected lines, and no hazard anywhere else in the run.
//! Without the model the cases SKIP: on QEMU nothing else can see these mistakes (its memory is
//! always coherent), and on silicon they corrupt data silently.
//!
//! A declaration follows the machine: a case whose mistake is no mistake on this CPU SKIPs with
//! the register that says so and declares nothing — `smc-without-ic` on CTR_EL0.DIC = 1 (no IC
//! invalidate needed), `setway-one-level` on CLIDR_EL1.LoC < 2 (level 2 beyond PoC), and the
//! missing clean or invalidate to PoC (`handoff-without-clean`, `readback-without-invalidate`,
//! `partial-edge-invalidate`) on CLIDR_EL1.LoC = 0 (no level before PoC). The stride gap is a
//! mistake on every CPU (lines of the range are never reached), and CTR_EL0.IDC only removes the
//! clean to PoU, which none of them relies on. Lines and
//! strides are DminLine (CTR_EL0) wide.
//!
//! Every case works on lines of its own at the far end of the alias windows (the benchmarks use
//! their start) and leaves them clean and invalidated, by the correct sequence, when it is done.

use alloc::format;

use crate::bench::named_phase;
use crate::cache::setway::{Scope, SetWayOp};
use crate::cpu::cache as arch_cache;
use crate::harness::{Case, Ctx, Suite};
use crate::mem::alias::AliasWindow;
use crate::mem::attr::MemAttr;
use cachescope_arch::hazard::HazardKind;
use cachescope_arch::hw;

/// The mistakes suite.
pub const SUITE: Suite = Suite {
    name: "mistakes",
    report: None,
    cases: &[
        Case { name: "handoff-without-clean", run: handoff_without_clean },
        Case { name: "readback-without-invalidate", run: readback_without_invalidate },
        Case { name: "partial-edge-invalidate", run: partial_edge_invalidate },
        Case { name: "stride-gap", run: stride_gap },
        Case { name: "smc-without-ic", run: smc_without_ic },
        Case { name: "setway-one-level", run: setway_one_level },
        Case { name: "cross-core-nc-write", run: cross_core_nc_write },
        Case { name: "non-shareable-shared", run: non_shareable_shared },
    ],
    on_request: false,
    args: &[],
    validate: None,
};

/// Lines each case owns.
const LINES: usize = 4;

/// Bytes set aside per case at the end of the windows.
const CASE_SPAN: usize = 64 * 1024;

/// The write-back and non-cacheable views of one case's lines.
struct Lines {
    /// Write-back alias (the CPU's cached view).
    wb: usize,
    /// Non-cacheable alias of the same bytes (a non-coherent device's view).
    nc: usize,
    /// Physical address.
    pa: u64,
    /// DminLine.
    line: usize,
}

/// The case's lines, or the reason it cannot run (SKIP).
fn lines(ctx: &Ctx, index: usize) -> Result<Lines, alloc::string::String> {
    if ctx.boot.model.is_none() {
        return Err("needs the cache model's sanitizer (QEMU_CACHE_MODEL): nothing else on QEMU sees a missing clean or invalidate, and on silicon the mistake corrupts data silently".into());
    }
    let windows = crate::mem::mmu::enable_with_aliases(ctx.boot).map_err(|e| format!("cannot map the alias windows: {e}"))?;
    let find = |attr: MemAttr| windows.iter().find(|w: &&AliasWindow| w.attr == attr);
    let (Some(wb), Some(nc)) = (find(MemAttr::NormalWriteBack), find(MemAttr::NormalNonCacheable)) else {
        return Err("needs the normal-wb and normal-nc alias windows".into());
    };
    let offset = wb.len.checked_sub(CASE_SPAN * (index + 1)).ok_or("the alias windows are too small")?;
    let line = crate::cache::this_cpu().ctr.dmin_line() as usize;
    let l = Lines { wb: wb.va + offset, nc: nc.va + offset, pa: (wb.pa + offset) as u64, line };
    // A known start: the lines written back and in no cache, by the correct sequence.
    settle(&l, CASE_SPAN);
    Ok(l)
}

/// Cleans and invalidates `bytes` of the case's lines to PoC (the correct sequence).
fn settle(l: &Lines, bytes: usize) {
    let _ = crate::cache::maintenance::clean_invalidate_to_poc(l.wb, bytes);
}

fn write(va: usize, value: u64) {
    // SAFETY: `va` lies in a case's lines inside a mapped alias window (test memory).
    unsafe { core::ptr::write_volatile(va as *mut u64, value) };
}

fn read(va: usize) -> u64 {
    // SAFETY: as in `write`.
    unsafe { core::ptr::read_volatile(va as *const u64) }
}

/// Runs `f` as the phase `mistakes/NAME` and declares the hazard it must produce.
fn mistake(ctx: &mut Ctx, index: usize, name: &str, f: impl FnOnce(&Lines) -> (HazardKind, u64, u64, usize)) {
    let l = match lines(ctx, index) {
        Ok(l) => l,
        Err(why) => return ctx.skip(why),
    };
    let phase = format!("mistakes/{name}");
    let (kind, pa, stride, count) = named_phase(&phase, || f(&l));
    ctx.expect_hazard(&phase, kind, pa, count as u64, stride);
    settle(&l, CASE_SPAN);
    crate::diag!("{name}: expects {} at {count} line(s) from {pa:#x} (checked by the host from the model's hazard records)", kind.name());
    ctx.check(true, format!("{name} performed; the verdict is the sanitizer's"));
}

/// The CPU fills a buffer through its write-back view and hands it to a device that reads
/// memory (the non-cacheable view) — without DC CVAC: the device reads stale memory.
fn handoff_without_clean(ctx: &mut Ctx) {
    if let Some(why) = crate::cache::poc_maintenance_unneeded() {
        return ctx.skip(why);
    }
    mistake(ctx, 0, "handoff-without-clean", |l| {
        for i in 0..LINES {
            write(l.wb + i * l.line, 0xc0de_0000 + i as u64);
        }
        hw::dsb_sy();
        for i in 0..LINES {
            core::hint::black_box(read(l.nc + i * l.line));
        }
        (HazardKind::StaleReadByDevice, l.pa, l.line as u64, LINES)
    });
}

/// The CPU reads a buffer (its lines are now cached), a device writes new data to memory, and
/// the CPU reads again without DC IVAC: it sees its stale cached copy.
fn readback_without_invalidate(ctx: &mut Ctx) {
    if let Some(why) = crate::cache::poc_maintenance_unneeded() {
        return ctx.skip(why);
    }
    mistake(ctx, 1, "readback-without-invalidate", |l| {
        for i in 0..LINES {
            core::hint::black_box(read(l.wb + i * l.line));
        }
        for i in 0..LINES {
            write(l.nc + i * l.line, 0xd0d0_0000 + i as u64);
        }
        hw::dsb_sy();
        for i in 0..LINES {
            core::hint::black_box(read(l.wb + i * l.line));
        }
        (HazardKind::StaleReadByCpu, l.pa, l.line as u64, LINES)
    });
}

/// A receive buffer of two and a half lines is invalidated with DC IVAC on every line it
/// touches, including its last line, which it shares with a variable the CPU just wrote: the
/// invalidate discards that write (the correct sequence cleans partial lines first).
fn partial_edge_invalidate(ctx: &mut Ctx) {
    if let Some(why) = crate::cache::poc_maintenance_unneeded() {
        return ctx.skip(why);
    }
    mistake(ctx, 2, "partial-edge-invalidate", |l| {
        let buffer_len = 2 * l.line + l.line / 2;
        let neighbour = l.wb + buffer_len;
        write(neighbour, 0x5eed);
        hw::dsb_sy();
        let mut a = l.wb;
        while a < l.wb + buffer_len {
            // SAFETY: the mistake on purpose: the lines belong to this case (test memory); the
            // neighbour's write is discarded, which is what the case shows.
            unsafe { hw::dc_ivac(a) };
            a += l.line;
        }
        hw::dsb_sy();
        (HazardKind::LostWrite, l.pa + 2 * l.line as u64, l.line as u64, 1)
    });
}

/// Cleans a dirty buffer to PoC with a DC CVAC loop whose stride is twice DminLine: every
/// other line is never cleaned.
fn stride_gap(ctx: &mut Ctx) {
    mistake(ctx, 3, "stride-gap", |l| {
        let bytes = 2 * LINES * l.line;
        for i in 0..2 * LINES {
            write(l.wb + i * l.line, 0x9a9 + i as u64);
        }
        crate::model_markers::maintenance_range(l.wb, bytes, || {
            let mut a = l.wb;
            while a < l.wb + bytes {
                hw::dc_cvac(a);
                a += 2 * l.line;
            }
            hw::dsb_sy();
        });
        (HazardKind::MaintenanceGap, l.pa + l.line as u64, 2 * l.line as u64, LINES)
    });
}

/// Writes an instruction, cleans it to PoU (DC CVAU) but never invalidates the I-cache (no IC
/// IVAU) before executing it: the core may run the old instruction. Mappings are never writable
/// and executable at once (W^X), so like a JIT the case writes the code through its write-back
/// window and runs it through a read-only executable alias of the same page.
///
/// On a CPU with CTR_EL0.DIC = 1 instruction fetches are coherent with data to PoU: no IC
/// invalidate is needed, the code is not a mistake there and the sanitizer rightly reports
/// nothing, so the case SKIPs and declares nothing. (CTR_EL0.IDC = 1 only makes the DC CVAU
/// unnecessary; the missing IC IVAU is still the mistake, and it is declared.)
fn smc_without_ic(ctx: &mut Ctx) {
    let ctr = crate::cache::this_cpu().ctr;
    if ctr.dic() {
        return ctx.skip("this CPU needs no IC invalidate: CTR_EL0.DIC = 1");
    }
    let template = arch_cache::smc_template();
    let l = match lines(ctx, 4) {
        Ok(l) => l,
        Err(why) => return ctx.skip(why),
    };
    let page = crate::mem::table::PAGE_SIZE;
    let code_va = crate::mem::alias::SCRATCH_BASE + l.pa;
    let _ = crate::mem::mmu::unmap(code_va, page); // left over by an earlier run that stopped midway
    if let Err(e) =
        crate::mem::mmu::map("smc-code", code_va, l.pa, page, crate::mem::attr::Attributes::CODE, crate::mem::Granularity::Pages)
    {
        return ctx.fail(format!("cannot map the executable alias: {e}"));
    }
    let phase = "mistakes/smc-without-ic";
    let result = named_phase(phase, || {
        for (i, w) in template.iter().enumerate() {
            // SAFETY: the case's lines in the write-back window (test memory); 4-byte aligned.
            unsafe { core::ptr::write_volatile((l.wb + 4 * i) as *mut u32, *w) };
        }
        hw::dc_cvau(l.wb);
        hw::dsb_ish();
        hw::isb();
        // SAFETY: the executable alias holds `movz w0, #imm; ret` (the template), a function
        // of the C ABI; on QEMU the instruction fetch sees memory, so it runs the new code.
        let f: extern "C" fn() -> u32 = unsafe { core::mem::transmute(code_va as usize) };
        crate::cpu::trap::try_run(|| f())
    });
    ctx.expect_hazard(phase, HazardKind::StaleInstruction, l.pa, 1, l.line as u64);
    // Made right afterwards: the I-cache invalidated by the correct sequence, the alias gone.
    let _ = crate::cache::maintenance::sync_instructions(l.wb, l.line);
    if let Err(e) = crate::mem::mmu::unmap(code_va, page) {
        ctx.fail(format!("cannot unmap the executable alias: {e}"));
    }
    settle(&l, CASE_SPAN);
    match result {
        Ok(v) => {
            crate::diag!(
                "smc-without-ic: the new code ran (returned {v:#x}; QEMU fetches from memory); expects stale-instruction at {:#x}",
                l.pa
            );
            ctx.check(true, "smc-without-ic performed; the verdict is the sanitizer's");
        }
        Err(e) => ctx.fail(format!("the written code raised {}", e.summary())),
    }
}

/// Hands a buffer to a device after cleaning only level 1 by set/way: the dirty lines move to
/// L2, which still holds them when the device reads memory.
///
/// That is a mistake only where level 2 lies before the point of coherency: CLIDR_EL1.LoC ≥ 2
/// (levels 1..=LoC must be cleaned to reach PoC). With LoC < 2 cleaning level 1 already
/// reaches PoC, or no level needs cleaning at all (LoC = 0), so the case SKIPs and declares
/// nothing.
fn setway_one_level(ctx: &mut Ctx) {
    let topo = crate::cache::this_cpu();
    if topo.caches.iter().all(|c| c.level < 2) {
        return ctx.skip("needs a second cache level");
    }
    if topo.clidr.loc < 2 {
        return ctx.skip(format!(
            "CLIDR_EL1.LoC = {}: level 2 is beyond the point of coherency, so cleaning level 1 is not a mistake here",
            topo.clidr.loc
        ));
    }
    mistake(ctx, 5, "setway-one-level", |l| {
        for i in 0..LINES {
            write(l.wb + i * l.line, 0x5e7_0000 + i as u64);
        }
        crate::cache::dcsw(SetWayOp::Clean, Scope::Level(1));
        for i in 0..LINES {
            core::hint::black_box(read(l.nc + i * l.line));
        }
        (HazardKind::StaleReadByDevice, l.pa, l.line as u64, LINES)
    });
}

/// Core 0 caches a buffer; core 1 writes it through the non-cacheable alias (memory, not the
/// caches: a non-cacheable write is not snooped), and core 0 reads it again without an
/// invalidate: it sees its stale copy. Needs a second core.
fn cross_core_nc_write(ctx: &mut Ctx) {
    use crate::smp;
    let Some(cores) = ctx.secondaries() else { return };
    let peer = cores[0];
    let l = match lines(ctx, 6) {
        Ok(l) => l,
        Err(why) => return ctx.skip(why),
    };
    let phase = "mistakes/cross-core-nc-write";
    let (nc, line) = (l.nc, l.line);
    let wrote = named_phase(phase, || {
        for i in 0..LINES {
            core::hint::black_box(read(l.wb + i * l.line));
        }
        let wrote = smp::run_on(peer, 1000, move |_| {
            for i in 0..LINES {
                write(nc + i * line, 0xc0_0000 + i as u64);
            }
            hw::dsb_sy();
        });
        for i in 0..LINES {
            core::hint::black_box(read(l.wb + i * l.line));
        }
        wrote
    });
    ctx.expect_hazard(phase, HazardKind::StaleReadByCpu, l.pa, LINES as u64, l.line as u64);
    settle(&l, CASE_SPAN);
    match wrote {
        Ok(()) => {
            ctx.check(true, format!("cross-core-nc-write performed on cores 0 and {peer}; the verdict is the sanitizer's"));
        }
        Err(e) => ctx.fail(format!("core {peer} did not write: {e}")),
    }
}

/// Core 0 maps its case's lines a second time, Non-shareable (a scratch alias whose descriptors
/// have SH = 0b00), and reads them through it; core 1 then reads them through the Inner
/// Shareable write-back alias. Two cores whose shareability domains for the lines do not include
/// each other now cache them (Arm ARM DDI 0487, B2.7): the hardware keeps the copies coherent
/// for neither, so a write by one may never reach the other. The correct sequence maps the lines
/// Inner Shareable on both cores (every other case). Needs a second core.
fn non_shareable_shared(ctx: &mut Ctx) {
    use crate::mem::{alias::SCRATCH_BASE, attr::Attributes, mmu, table::PAGE_SIZE, Granularity, Shareability};
    use crate::smp;
    let Some(cores) = ctx.secondaries() else { return };
    let peer = cores[0];
    let l = match lines(ctx, 7) {
        Ok(l) => l,
        Err(why) => return ctx.skip(why),
    };
    let ns = (SCRATCH_BASE + l.pa) as usize;
    let _ = mmu::unmap(ns as u64, PAGE_SIZE); // left over by an earlier run that stopped midway
    let attrs = Attributes { share: Shareability::Non, ..Attributes::RW_DATA };
    if let Err(e) = mmu::map("non-shareable", ns as u64, l.pa, PAGE_SIZE, attrs, Granularity::Pages) {
        return ctx.fail(format!("cannot map the non-shareable alias: {e}"));
    }
    let phase = "mistakes/non-shareable-shared";
    let (wb, line) = (l.wb, l.line);
    let read = named_phase(phase, || {
        for i in 0..LINES {
            core::hint::black_box(read(ns + i * line));
        }
        smp::run_on(peer, 1000, move |_| {
            for i in 0..LINES {
                core::hint::black_box(read(wb + i * line));
            }
        })
    });
    ctx.expect_hazard(phase, HazardKind::NonShareableShared, l.pa, LINES as u64, l.line as u64);
    settle(&l, CASE_SPAN);
    if let Err(e) = mmu::unmap(ns as u64, PAGE_SIZE) {
        return ctx.fail(format!("cannot unmap the non-shareable alias: {e}"));
    }
    match read {
        Ok(()) => {
            ctx.check(true, format!("non-shareable-shared performed on cores 0 and {peer}; the verdict is the sanitizer's"));
        }
        Err(e) => ctx.fail(format!("core {peer} did not read: {e}")),
    }
}
