//! Data accesses and instruction fetches: the engine's hot paths, where the [`Shortcut`] answers
//! first and the model is asked only when it cannot.

use std::sync::atomic::Ordering::Relaxed;

use crate::hierarchy::{Attr, Hint, Level, Shareability};
use crate::pc_table::delta;
use crate::tlb::Side;

use super::emit::Core;
use super::engine::{Engine, Host, MemAccess};
use super::shortcut::{Answer, FetchMemo, FetchMode, LineMode, MemoHit, Remembered, Shortcut, BYPASS_LINE, PAGE_SHIFT};
use super::tb_plan::Group;

/// A fetch's attribute and its page's translation ([`Guest::fetch_view`](crate::guest::Guest::fetch_view)).
type FetchView = (Attr, Result<(u64, crate::guest::Translation), crate::walk::Fault>);

/// Where a fetch callback's TB runs. QEMU translates every AArch64 TB position-independent
/// (`CF_PCREL`) and finds it by the physical address of its code: one TB serves every VA that
/// maps that page, and the callbacks carry the VA it was translated at. Linux's early boot runs
/// `memcpy`, `memset`, `strlen` at their idmap VAs; the same TBs later run at the kernel VAs,
/// where the idmap VA no longer translates (TTBR0 = reserved_pg_dir). The TB's first callback
/// therefore checks that its VA still reaches the TB's PA, and else takes the running PC's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TbAt {
    /// The TB's first fetch callback: the PA of its first instruction when known (its host
    /// address in a learned RAM block: [`super::ram`]).
    Start(Option<u64>),
    /// A later fetch callback of the TB: the correction its start found applies.
    Later,
}

impl<H: Host> Engine<H> {
    /// A leader's callback: its own access, then its group's members (see `decode::plan_groups`).
    /// When the leader left its line in the shortcut and every member falls in that line, the
    /// members are hits of that line: counted in one step.
    pub fn mem_group(&self, vcpu: u32, info: &impl MemAccess, vaddr: u64, write: bool, g: &Group) {
        self.mem(vcpu, info, vaddr, vaddr, write, Some(g.size), Hint { pc: g.pc, nt: false });
        let (cpu, shortcut) = self.cpu_and_shortcut(vcpu);
        if shortcut && self.fast[cpu].group(vaddr, g) {
            return;
        }
        for (k, &(delta, size, store)) in g.members.iter().enumerate() {
            let hint = Hint { pc: g.pc + 4 * (k as u64 + 1), nt: false };
            self.mem(vcpu, info, vaddr, vaddr.wrapping_add(delta as u64), store, Some(size), hint);
        }
    }

    /// One data access at `vaddr`; `size` is `None` for the callback's own access (the emulator
    /// knows it). `translated` is the address the emulator translated for the callback: only an
    /// access in its page is asked of the emulator's TLB (QEMU prints "invalid use of
    /// qemu_plugin_get_hwaddr" into the console for any other).
    /// The shortcut's answer is inline; the rest is `mem_through`, out of
    /// line (the fast path then saves no registers for it).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn mem(&self, vcpu: u32, info: &impl MemAccess, translated: u64, vaddr: u64, write: bool, size: Option<u32>, hint: Hint) {
        let (cpu, shortcut) = self.cpu_and_shortcut(vcpu);
        // The callback's own access (a group member's size is the decoder's).
        let own = size.is_none();
        // A store's size is asked once (the shortcut needs it for the bytes it writes).
        let size = if write { Some(size.unwrap_or_else(|| info.size())) } else { size };
        // The shortcut and the page cache answer only for the emulator's own page: a group
        // member in another page is translated by the guest's tables, as without the shortcut
        // (which may map its VA elsewhere than the emulator did when the line was remembered).
        let own_page = vaddr >> PAGE_SHIFT == translated >> PAGE_SHIFT;
        // A store of an instruction one PE may modify while another runs it (the sanitizer marks
        // its bytes: rule 16) goes to the model.
        let cmodx = || {
            write && own && vaddr & 3 == 0 && size == Some(4) && self.settings.sanitize && {
                info.value().is_some_and(|v| crate::decode::is_cmodx_permitted(v as u32))
            }
        };
        if shortcut && own_page && !cmodx() {
            match self.fast[cpu].access(vaddr, || size.unwrap_or_else(|| info.size()), write, hint.pc) {
                Answer::Counted => return,
                Answer::Moved(k) if self.memos_on && self.promote(cpu, k, write) => return,
                _ => {}
            }
        }
        self.mem_through(cpu, info, own, own_page, vaddr, write, size, hint);
    }

    /// An access the line table answered [`Answer::Moved`] (entry `k`): the model's plain hit
    /// alone, under the lock (the translation, the attribute and the sanitizer's part are the
    /// entry's), and the entry current again; `false` (nothing done) when the line is no
    /// longer a plain hit, the previous TB's repeats are to be replayed first, or the
    /// shortcut remembers one line at a time.
    #[inline(never)]
    fn promote(&self, cpu: usize, k: usize, write: bool) -> bool {
        let f = &self.fast[cpu];
        if f.replay().is_some() {
            return false;
        }
        let mut core = self.lock();
        if self.one_line_only(&core) {
            return false;
        }
        let Some(m) = core.model.as_mut() else { return false };
        let (slot, line) = f.entry_line(k);
        let Some(set) = m.l1d_plain_hit(cpu, slot, line, write) else { return false };
        f.model_changed(m.take_l1d_changes(cpu));
        f.promoted(k, set);
        true
    }

    /// A data access the shortcut did not answer: through the model.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn mem_through(
        &self,
        cpu: usize,
        info: &impl MemAccess,
        own: bool,
        own_page: bool,
        vaddr: u64,
        write: bool,
        size: Option<u32>,
        hint: Hint,
    ) {
        let f = &self.fast[cpu];
        let size = size.unwrap_or_else(|| info.size());
        let page = if self.fast_on && own_page { f.page(vaddr) } else { None };
        let known = match page {
            Some((pa, io)) => Some((pa, io, false)),
            None if own_page => info.hwaddr(vaddr).map(|(pa, io)| (pa, io, true)),
            None => None,
        };
        let mut core = self.lock();
        self.settle_own(&mut core, cpu);
        // A data access may leave a copy of the uncached line in some cache.
        f.forget_bypass();
        if f.replay().is_some() {
            self.credit_fetch(&mut core, cpu);
        }
        self.mem_model(&mut core, cpu, info, own, known, page, vaddr, write, size, hint);
        self.drop_disturbed(&mut core, cpu, false);
    }

    /// The model's part of [`mem`](Self::mem), under the lock: `known` is the PA (and I/O flag,
    /// and whether the emulator just told it) when known without the guest's translation,
    /// `page` the page cache's answer.
    #[allow(clippy::too_many_arguments)]
    fn mem_model(
        &self,
        core: &mut Core,
        cpu: usize,
        info: &impl MemAccess,
        own: bool,
        known: Option<(u64, bool, bool)>,
        page: Option<(u64, bool)>,
        vaddr: u64,
        write: bool,
        size: u32,
        hint: Hint,
    ) {
        let f = &self.fast[cpu];
        // Not in the emulator's TLB (a group member in another page): the guest's translation.
        // Its line is not remembered: the next access to that VA line is translated by the
        // emulator, which a stale TLB (or a test's host) may map elsewhere.
        let (pa, io, learned) = match known {
            Some(k) => k,
            None => match core.guest.translate(cpu, vaddr, &self.host, "data access", Some(hint.pc)) {
                Some((pa, _)) => (pa, false, false),
                None => return,
            },
        };
        let emulator_pa = known.is_some();
        if write && self.memos_on {
            // A fetch memo of these lines no longer holds (the sanitizer's judgement may change).
            self.stamps_memo.wrote(pa, u64::from(size), f.line_shift());
        }
        self.touched(core, pa, u64::from(size));
        if learned {
            if !io {
                core.guest.check(cpu, vaddr, pa, hint.pc, &self.host);
            }
            let changed = core.guest.learn(vaddr, pa);
            if self.fast_on {
                f.remember_page(vaddr, pa, io);
                if changed && self.repeats_inline {
                    // A fetch whose page does not walk translates it through what was learned:
                    // a repeat of such a last TB (any core's) may no longer fetch the lines it did.
                    self.forget_learned_tbs();
                }
            }
        }
        let cached = if page.is_some() { f.page_attr(vaddr) } else { None };
        let attr = match cached {
            Some(a) => a,
            None => {
                let a = if io { Attr::Device } else { core.guest.data_attr(cpu, vaddr, &self.host) };
                if self.fast_on && core.guest.page_uniform(vaddr) {
                    f.remember_page_attr(vaddr, a);
                }
                a
            }
        };
        // Silicon mode (model rule 20c): the core's attribute decides the path.
        let attr = core.model.as_ref().map_or(attr, |m| m.effective(attr));
        let current = || if own { info.value() } else { None };
        let shift = f.line_shift();
        let single = (vaddr & ((1 << shift) - 1)) + u64::from(size) <= 1 << shift;
        let tlb = self.tlb_data(core, cpu, vaddr, size, shift);
        if !attr.cacheable() {
            let lines = if single { 1 } else { 2 };
            let mut hazard = false;
            match self.early_model(core) {
                Some(m) => {
                    // One bypass per line; the sanitizer judges the bytes.
                    m.data_hint(cpu, pa, size, write, attr, hint);
                    hazard = m.has_events();
                }
                None => core.early.levels[Level::L1D as usize].bypass += lines,
            }
            if hazard {
                self.hazards(core, vaddr, hint.pc, current());
            }
            self.wrote_code(pa, size, write);
            // With the sanitizer, a copy of the line in any cache makes the next uncached
            // access's outcome depend on it (a stale read, a stale copy): no shortcut then.
            let ok = single
                && emulator_pa
                && !hazard
                && core.guest.page_uniform(vaddr)
                && !(self.settings.sanitize && core.model.as_ref().is_some_and(|m| m.cached_anywhere(pa)));
            let mode = if write || !self.settings.sanitize { LineMode::Bypass } else { LineMode::BypassLoads };
            let single = self.one_line_only(core);
            self.own_changes(core, cpu);
            let line = Remembered { vline: vaddr >> shift, mode, slot: 0, set: (pa >> shift) as usize, l1line: pa >> shift, quiet: 0 };
            return self.remember_data(f, line, ok, tlb, single);
        }
        let counting = core.pcs.is_some();
        // Rule 16b (non-shareable-shared): asked only once a Non-shareable mapping was seen.
        let share = if self.settings.sanitize && core.guest.narrow_seen() {
            core.guest.data_shareability(cpu, vaddr, &self.host)
        } else {
            Shareability::Inner
        };
        let m = self.model(core);
        let shift = m.config().l1d.line_shift();
        let before = if counting { m.pc_counts() } else { [0; 3] };
        // A single aligned store of a concurrently modifiable instruction (Linux's jump labels
        // switch NOP and B while other cores run them): its fetch is not stale (rule 16).
        let cmodx = write
            && own
            && size == 4
            && vaddr & 3 == 0
            && self.settings.sanitize
            && info.value().is_some_and(|v| crate::decode::is_cmodx_permitted(v as u32));
        let slot = m.data_in_domain(cpu, pa, size, write, attr, hint, share, cmodx);
        let moved = if counting { delta(before, m.pc_counts()) } else { [0; 3] };
        let events = m.has_events();
        // A non-temporal fill sits at the end of the replacement order, so a repeated hit
        // is not a no-op (LRU promotes it): no shortcut after LDNP/STNP.
        // A stale copy reports every hit (the sanitizer): no shortcut either.
        let keep = slot.filter(|&s| !(hint.nt || attr.transient() || write && attr == Attr::NormalWriteThrough || m.l1d_stale(cpu, s)));
        // A shared copy (rule 17) takes a store only with an upgrade: loads only then.
        let shared = keep.is_some_and(|s| m.vcpus() > 1 && m.l1d_shared(cpu, s));
        let set = keep.map(|s| m.l1d_set_of_slot(cpu, s));
        // After a write-back store (the sanitizer's record of the line is at hand): the bytes
        // later stores change nothing for.
        let quiet = match keep {
            Some(s) if write && attr == Attr::NormalWriteBack => m.l1d_rewrite_quiet(cpu, s, pa >> shift),
            _ => 0,
        };
        if let Some((t, _)) = core.pcs.as_mut() {
            t.add(hint.pc, moved);
        }
        let code = self.wrote_code(pa, size, write);
        let single = self.one_line_only(core);
        self.own_changes(core, cpu);
        if events {
            self.hazards(core, vaddr, hint.pc, current());
            return f.forget_lines();
        }
        // A store to a line of the last TB goes to the model (see `wrote_code`).
        let mode = if attr == Attr::NormalWriteBack && !code && !shared { LineMode::LoadsAndStores } else { LineMode::Loads };
        // Not kept: the line's set changed in the call, so whatever was remembered there is
        // no longer current.
        if let (Some(s), Some(set)) = (keep, set) {
            let line = Remembered { vline: vaddr >> shift, mode, slot: s as u64, set, l1line: pa >> shift, quiet };
            self.remember_data(f, line, emulator_pa, tlb, single);
        }
    }

    /// Whether the shortcut may remember only one data line of `cpu` at a time: its hits must
    /// then be the vCPU's most recent access (a TLB model's most recent entry, the
    /// write-streaming detector's last line, rule 16b's per-access shareability once a
    /// Non-shareable mapping was seen).
    #[inline]
    fn one_line_only(&self, core: &Core) -> bool {
        core.tlb.is_some() || core.model.as_ref().is_some_and(|m| m.streams_writes()) || self.settings.sanitize && core.guest.narrow_seen()
    }

    /// Rule T1 of `tlb.rs`: `n` lookups by `cpu` of the page holding `va` (one per line of it an
    /// access touches or a fetch counts), when TLBs are modelled and the guest's tables
    /// translate `va`; whether it was looked up.
    #[inline]
    pub(super) fn tlb_lookup(&self, core: &mut Core, cpu: usize, side: Side, va: u64, n: u64) -> bool {
        if core.tlb.is_none() || n == 0 {
            return false;
        }
        let Some((regime, mut mapping, mut levels)) = core.guest.mapping(cpu, va, &self.host) else { return false };
        if self.settings.tlb_pages_4k && mapping > 12 {
            // One 4 KiB page: the walk a page mapping of it would take (9 VA bits a level).
            levels += ((mapping - 12) / 9) as u8;
            mapping = 12;
        }
        let t = core.tlb.as_mut().expect("checked");
        for _ in 0..n {
            t.lookup(cpu, side, va, regime, mapping, levels);
        }
        true
    }

    /// The data access's TLB lookups (one per L1D line it touches): `None` when none was made,
    /// `Some(true)` when its lines lie in one page (that page is now the L1 data TLB's most
    /// recent entry), `Some(false)` when it crossed a page.
    #[inline]
    fn tlb_data(&self, core: &mut Core, cpu: usize, vaddr: u64, size: u32, shift: u32) -> Option<bool> {
        core.tlb.as_ref()?;
        let last = vaddr.wrapping_add(u64::from(size.max(1)) - 1);
        if vaddr >> PAGE_SHIFT == last >> PAGE_SHIFT {
            let lines = 1 + u64::from(vaddr >> shift != last >> shift);
            return self.tlb_lookup(core, cpu, Side::Data, vaddr, lines).then_some(true);
        }
        let a = self.tlb_lookup(core, cpu, Side::Data, vaddr, 1);
        let b = self.tlb_lookup(core, cpu, Side::Data, last, 1);
        (a || b).then_some(false)
    }

    /// With the sanitizer and the shortcut, whether the access of `size` bytes at `pa` touches
    /// code of the last TB `cpu` fetched, the one whose repeats are counted inline: a store
    /// there marks it written (rule 16: each later fetch of it reports), so the next TB is
    /// fetched through the model, not taken for a repeat (and such a line never takes stores
    /// in the shortcut).
    /// Every core's last TB counts (with several vCPUs: cross-modifying code): each core whose
    /// last TB the store touches fetches its next TB through the model.
    #[inline]
    fn wrote_code(&self, pa: u64, size: u32, write: bool) -> bool {
        if !self.fast_on || !self.settings.sanitize {
            return false;
        }
        let len = u64::from(size.max(1));
        let mut code = false;
        for (k, f) in self.started_cores() {
            if f.in_last_tb(pa, len) {
                code = true;
                if write && self.repeats_inline {
                    self.forget_tb(k);
                }
            }
        }
        code
    }

    /// Remembers the line for the shortcut (when `ok`); `tlb`: [`Engine::tlb_data`]'s answer (a
    /// line whose access crossed a page is not remembered: the L1 data TLB's most recent entry
    /// is the other page); `single`: [`Engine::one_line_only`].
    fn remember_data(&self, f: &Shortcut, line: Remembered, ok: bool, tlb: Option<bool>, single: bool) {
        if ok && self.shortcut_now() && tlb != Some(false) {
            f.remember_line(&line, tlb == Some(true), single);
        } else if single || tlb.is_some() || !self.shortcut_now() {
            f.forget_lines();
        }
    }

    /// A TB's instruction fetches through the model (its first execution after anything else),
    /// or those of one segment of it (the instructions after a marker, an IC invalidation or an
    /// SCTLR write are fetched right after that instruction: see `plan`).
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
    ///
    /// `at`: where the TB runs (`TbAt`, below): `va` is the VA QEMU translated the TB at.
    /// `memo`: the callback's own fetch memo: when it answers ([`Shortcut::memo_answers`]) the
    /// fetch is one L1I hit that changes nothing, counted without the lock or the model; a
    /// fetch through the model that could be answered so next time makes it.
    #[inline]
    pub fn fetch(&self, vcpu: u32, va: u64, bytes: u64, repeats_inline: bool, at: TbAt, memo: &FetchMemo) {
        let (cpu, shortcut) = self.cpu_and_shortcut(vcpu);
        let hit = if shortcut && self.memos_on { self.fast[cpu].memo_answers(memo, cpu) } else { None };
        if let Some(h) = hit.filter(|h| h.quiet) {
            if self.fetch_memo_hit(cpu, h, va, repeats_inline, at, memo) {
                return;
            }
        }
        self.fetch_through(cpu, va, bytes, repeats_inline, at, memo, hit);
    }

    /// A fetch its memo did not answer without the lock (`hit`: the memo's answer, if any):
    /// through the model.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn fetch_through(&self, cpu: usize, va: u64, bytes: u64, repeats_inline: bool, at: TbAt, memo: &FetchMemo, hit: Option<MemoHit>) {
        if let Some(h) = hit.filter(|h| !h.quiet) {
            if self.fetch_memo_hit(cpu, h, va, repeats_inline, at, memo) {
                return;
            }
        }
        let mut core = self.lock();
        let (delta, view) = match at {
            TbAt::Start(Some(tb_pa)) => {
                let (d, view) = self.alias_delta(&mut core, cpu, va, tb_pa);
                self.alias[cpu].store(d, Relaxed);
                (d, view)
            }
            TbAt::Start(None) => {
                self.alias[cpu].store(0, Relaxed);
                (0, None)
            }
            TbAt::Later => (self.alias[cpu].load(Relaxed), None),
        };
        let va = va.wrapping_add(delta);
        self.settle_own(&mut core, cpu);
        // The replays of the previous TB (if any) change no translation: `view` stays right.
        let execs = self.credit_fetch(&mut core, cpu);
        let (mode, per_repeat, hazard) = self.fetch_lines_viewed(&mut core, cpu, va, bytes, view);
        if delta != 0 {
            // Run at another VA than translated at: found through translations that may be learned.
            self.fast[cpu].set_fetch_learned(true);
        }
        self.drop_disturbed(&mut core, cpu, true);
        if self.memos_on && delta == 0 && mode == FetchMode::Hit && !hazard {
            self.make_fetch_memo(&mut core, cpu, va, bytes, memo);
        }
        if self.repeats_inline {
            // The execution counter is bumped right after this callback for this very execution.
            let acc = execs.wrapping_add(u64::from(repeats_inline));
            // One vCPU: the repeats of a TB that reported a hazard are replayed through the model
            // before its next model call. Several: such a TB is fetched through the model again
            // (a replay of one core's repeats would meet the model after other cores' calls), and
            // so is an uncached one (whether its fetch is stale depends on other cores' caches).
            let replay = (repeats_inline && hazard && !self.counts_repeats()).then_some((va, bytes));
            if (hazard || mode == FetchMode::Bypass) && self.counts_repeats() {
                self.forget_tb(cpu);
            }
            self.fast[cpu].set_repeats(if repeats_inline { per_repeat } else { 0 }, mode, acc, replay);
        }
    }

    /// A fetch at `va` its memo answers (`hit`): what [`fetch`](Self::fetch) does for a fetch
    /// of one L1I line that hits and reports nothing. Without the lock when the line is still
    /// the most recent of its set (the hit changes nothing); else the model is asked for the
    /// hit alone (the translation, the attribute and the sanitizer's judgement are the memo's),
    /// and the memo made again. `false` (the fetch goes the whole way through the model) when
    /// the previous TB's repeats are to be replayed through it, a later segment runs at an
    /// alias, or the line is no longer a plain hit (it left the L1I, or its copy is stale or
    /// prefetched).
    #[inline]
    fn fetch_memo_hit(&self, cpu: usize, hit: MemoHit, va: u64, repeats_inline: bool, at: TbAt, memo: &FetchMemo) -> bool {
        let f = &self.fast[cpu];
        if f.replay().is_some() || matches!(at, TbAt::Later) && self.alias[cpu].load(Relaxed) != 0 {
            return false;
        }
        // Counted unless fetch continues in the line the previous TB ended in (see `fetch`).
        let counted = f.fetch_end() != hit.line;
        if !hit.quiet {
            if !self.memo_hit_moved(cpu, hit, va, memo, counted) {
                return false;
            }
        } else if counted {
            f.count_fetch_hit();
        }
        if let TbAt::Start(_) = at {
            self.alias[cpu].store(0, Relaxed);
        }
        // The previous TB's repeats (none to replay: checked above).
        let execs = if self.repeats_inline {
            let execs = self.tb_execs(cpu);
            f.credit(execs);
            execs
        } else {
            0
        };
        f.set_fetch_learned(false);
        f.set_fetch_end(hit.line);
        f.set_fetch_tlb(false);
        f.set_last_tb(hit.lo, hit.hi);
        self.code_fetched(cpu, hit.lo, hit.hi);
        if self.repeats_inline {
            f.set_repeats(0, FetchMode::Hit, execs.wrapping_add(u64::from(repeats_inline)), None);
        }
        f.memo_fetched();
        true
    }

    /// [`fetch_memo_hit`](Self::fetch_memo_hit) of a line that may no longer be the most recent
    /// of its set: the model's hit alone (when `counted`), and the memo made again; `false`
    /// when the line is no longer a plain hit.
    #[inline(never)]
    fn memo_hit_moved(&self, cpu: usize, hit: MemoHit, va: u64, memo: &FetchMemo, counted: bool) -> bool {
        let f = &self.fast[cpu];
        let mut core = self.lock();
        let Some(m) = core.model.as_mut() else { return false };
        if counted {
            let Some(set) = m.l1i_plain_hit(cpu, va, hit.pa) else { return false };
            f.l1i_changed(m.take_l1i_changes(cpu));
            f.memo_fetch(memo, cpu, va, hit.line, set, hit.pa, hit.lo, hit.hi);
            true
        } else {
            m.l1i_holds_fresh(cpu, va, hit.pa)
        }
    }

    /// After a fetch through the model that fetched one cacheable L1I line at its translated
    /// VA, reported nothing and learned nothing: `memo` answers the callback's next fetches
    /// while the line stays a hit that changes nothing ([`crate::hierarchy::Model::l1i_quiet_set`])
    /// and its block is not written.
    fn make_fetch_memo(&self, core: &mut Core, cpu: usize, va: u64, bytes: u64, memo: &FetchMemo) {
        let f = &self.fast[cpu];
        if f.fetch_learned() || !self.shortcut_now() {
            return;
        }
        let Some(m) = core.model.as_ref() else { return };
        // A VIPT L1I (rule 21): which alias a shared TB runs at is the running PC's (`alias_delta`),
        // which a memo does not read.
        if m.l1i_va_index_bits() != 0 {
            return;
        }
        let shift = m.config().l1i.line_shift();
        if va >> shift != (va + bytes - 1) >> shift {
            return;
        }
        let line = f.fetch_end();
        let pa = (line << shift) | (va & ((1 << shift) - 1));
        if let Some(set) = m.l1i_quiet_set(cpu, va, pa) {
            let (lo, hi) = f.last_tb();
            f.memo_fetch(memo, cpu, va, line, set, pa, lo, hi);
        }
    }

    /// A TB's code at `[lo, hi)` was fetched by `cpu`: with the sanitizer, its uncached data line
    /// there is forgotten (the fetch may cache it), and so is every line of another core that
    /// may lie there (its stores there must reach the model: cross-modifying code). Its own
    /// remembered lines take no store in the last TB's lines (`Shortcut::hit`).
    #[inline]
    fn code_fetched(&self, cpu: usize, lo: u64, hi: u64) {
        if !self.settings.sanitize {
            return;
        }
        let l1d_shift = self.fast[cpu].line_shift();
        if self.vcpus == 1 {
            return self.fast[cpu].forget_bypass_in(lo, hi, l1d_shift);
        }
        for (k, g) in self.started_cores() {
            if k == cpu {
                g.forget_bypass_in(lo, hi, l1d_shift);
            } else if g.may_hold(lo, hi, l1d_shift) {
                g.forget_lines();
            }
        }
    }

    /// Running VA − `va` of a TB translated at `va` whose first instruction lies at PA `tb_pa`:
    /// 0 when the walk of `va`'s page reaches `tb_pa`'s page (or `va` is not translatable and
    /// the PC cannot tell better), else the page of the running PC when that page's walk does.
    /// With a VIPT L1I (rule 21) the running PC's page is taken whenever its walk reaches the
    /// TB's PA: two aliases that both map the code are two VAs that index the L1I differently.
    /// With a delta of 0, also `va`'s fetch view ([`Guest::fetch_view`](crate::guest::Guest::fetch_view)),
    /// which the fetch then uses instead of walking the page again.
    fn alias_delta(&self, core: &mut Core, cpu: usize, va: u64, tb_pa: u64) -> (u64, Option<FetchView>) {
        let mask = (1u64 << PAGE_SHIFT) - 1;
        let vipt = core.model.as_ref().is_some_and(|m| m.l1i_va_index_bits() != 0);
        let view = core.guest.fetch_view(cpu, va, &self.host);
        if !vipt && view.1.is_ok_and(|(p, _)| p == tb_pa & !mask) {
            return (0, Some(view));
        }
        let mut reaches = |v: u64| core.guest.try_translate(cpu, v & !mask, &self.host).is_ok_and(|(p, _)| p == tb_pa & !mask);
        if vipt {
            return match self.host.pc() {
                Some(pc) if pc & !mask != va & !mask && reaches(pc) => ((pc & !mask).wrapping_sub(va & !mask), None),
                _ => (0, Some(view)),
            };
        }
        match self.host.pc() {
            Some(pc) if reaches(pc) => ((pc & !mask).wrapping_sub(va & !mask), None),
            _ => (0, Some(view)),
        }
    }

    /// The model's part of [`fetch`](Self::fetch) (also a replayed repeat's): how the lines were
    /// fetched, how many a repeat right after itself fetches, and whether a hazard was reported.
    pub(super) fn fetch_lines(&self, core: &mut Core, cpu: usize, va: u64, bytes: u64) -> (FetchMode, u64, bool) {
        self.fetch_lines_viewed(core, cpu, va, bytes, None)
    }

    /// [`fetch_lines`](Self::fetch_lines) with `va`'s fetch view when the caller has it.
    fn fetch_lines_viewed(&self, core: &mut Core, cpu: usize, va: u64, bytes: u64, view: Option<FetchView>) -> (FetchMode, u64, bool) {
        let f = &self.fast[cpu];
        // The attribute and the page's translation, from one walk of the page.
        let (attr, page_pa) = view.unwrap_or_else(|| core.guest.fetch_view(cpu, va, &self.host));
        // Silicon mode (model rule 20c): the core's attribute decides the path.
        let attr = core.model.as_ref().map_or(attr, |m| m.effective(attr));
        let mut page_pa = Some(page_pa);
        // Whether a translation this fetch used may change when a data access teaches one.
        let not_walked = |t: crate::guest::Translation| !matches!(t, crate::guest::Translation::Walk | crate::guest::Translation::MmuOff);
        f.set_fetch_learned(false);
        let mut translate_page = |core: &mut Core, page: u64| match page_pa.take().expect("asked once") {
            Ok(t) => {
                if not_walked(t.1) {
                    f.set_fetch_learned(true);
                }
                Some(t)
            }
            Err(fault) => {
                core.guest.count_failed("instruction fetch", page, fault, Some(va));
                None
            }
        };
        let previous_end = f.fetch_end();
        if !attr.cacheable() {
            let shift = core.model.as_ref().map_or(6, |m| m.config().l1i.line_shift());
            // The TB's page translated once (see below); PA = VA with the MMU off.
            let page = va & !((1 << PAGE_SHIFT) - 1);
            let Some((pa_page, _)) = translate_page(core, page) else {
                return (FetchMode::Bypass, 0, false);
            };
            let pa = pa_page + (va - page);
            let (first, last) = (pa >> shift, (pa + bytes - 1) >> shift);
            let first = first + u64::from(previous_end == first | BYPASS_LINE);
            f.set_fetch_end(last | BYPASS_LINE);
            let in_tlb = self.tlb_lookup(core, cpu, Side::Instruction, va, (last + 1).saturating_sub(first));
            // A repeat fetches its lines in this page, the L1 instruction TLB's most recent
            // entry when any line was looked up (a repeat fetches lines only then).
            f.set_fetch_tlb(in_tlb);
            self.touched(core, pa, bytes);
            match self.early_model(core) {
                Some(m) => (first..=last).for_each(|l| m.fetch(cpu, l << shift, attr)),
                None => core.early.levels[Level::L1I as usize].bypass += (last + 1).saturating_sub(first),
            }
            let all = last - (pa >> shift) + 1;
            (FetchMode::Bypass, if all == 1 { 0 } else { all }, false)
        } else {
            let shift = self.model(core).config().l1i.line_shift();
            let lines = (va >> shift)..=((va + bytes - 1) >> shift);
            // A TB lies in one page (AArch64 instructions never straddle one): translate its
            // page once; a line before it (lines longer than the TB's start offset) is the
            // previous page's. Untranslated: the fetch is not modelled (counted).
            let page = va & !((1 << PAGE_SHIFT) - 1);
            let first = (*lines.start() << shift) & !((1 << PAGE_SHIFT) - 1);
            let Some((pa_page, _)) = translate_page(core, page) else {
                return (FetchMode::Bypass, 0, false);
            };
            let pa_first = if first == page {
                pa_page
            } else {
                match core.guest.translate(cpu, first, &self.host, "instruction fetch", Some(va)) {
                    Some((p, t)) => {
                        if not_walked(t) {
                            f.set_fetch_learned(true);
                        }
                        p
                    }
                    None => return (FetchMode::Bypass, 0, false),
                }
            };
            let m = core.model.as_mut().expect("built above");
            let pa_of = |l: u64| -> u64 {
                let a = l << shift;
                if a & !((1 << PAGE_SHIFT) - 1) == page {
                    pa_page + (a - page)
                } else {
                    pa_first + (a - first)
                }
            };
            let first_pa = pa_of(*lines.start());
            if !self.attributed() {
                // The TB's lines (one page: see above): see `attribution`.
                core.taint.page(first_pa, bytes);
            }
            // Rule 21: a VIPT L1I indexes each line by its VA, so lookups carry it.
            let continues = previous_end == first_pa >> shift && m.l1i_holds_at(cpu, *lines.start() << shift, first_pa);
            f.set_fetch_end(pa_of(*lines.end()) >> shift);
            let counted = lines.end() - lines.start() + 1 - u64::from(continues);
            let in_tlb = self.tlb_lookup(core, cpu, Side::Instruction, va, counted);
            f.set_fetch_tlb(in_tlb);
            let m = core.model.as_mut().expect("built above");
            if self.fast_on {
                // The TB's code (one page), for `wrote_code`; a remembered data line in it
                // would take stores without the model.
                let (lo, hi) = (first_pa, pa_of(*lines.end()) + (1 << shift));
                f.set_last_tb(lo, hi);
                self.code_fetched(cpu, lo, hi);
            }
            // Each line's fetched bytes: the TB's instructions there (the sanitizer's byte masks).
            let bytes_of = |l: u64| {
                let (lo, hi) = (va.max(l << shift), (va + bytes).min((l + 1) << shift));
                (lo, pa_of(l) + (lo - (l << shift)), hi - lo)
            };
            if continues {
                // Not counted (see above), but its bytes are executed: the sanitizer judges them.
                let (at, pa, len) = bytes_of(*lines.start());
                m.check_fetch_at(cpu, at, pa, len);
            }
            for l in lines.clone().skip(usize::from(continues)) {
                let (at, pa, len) = bytes_of(l);
                m.fetch_range_at(cpu, at, pa, len, attr);
            }
            let hazard = m.has_events();
            // A TB in one line holds it now (just fetched, or continued in a held line): only a
            // TB of several lines can have evicted one of its own.
            let several = lines.start() != lines.end();
            if self.repeats_inline
                && several
                && !lines.clone().all(|l| m.l1i_holds_at(cpu, l << shift, pa_of(l)))
                && !self.fetch_warned.swap(true, Relaxed)
            {
                core.warn("a translation block does not fit the L1I at once (L1I way smaller than a page): repeats are counted as hits; use fast=off for exact counts");
            }
            if hazard {
                self.hazards(core, va, va, None);
            }
            let all = lines.end() - lines.start() + 1;
            (FetchMode::Hit, if all == 1 { 0 } else { all }, hazard)
        }
    }
}
