//! The shortcut: the plugin's fast path, one [`Shortcut`] per vCPU, pure (no QEMU type), so the
//! differential tests (`plugin/tests.rs`) run it against the model alone.
//!
//! It remembers facts about the vCPU's model calls that make an access's outcome known without
//! the model (see the module docs of `plugin` for why each is exact):
//! - the most recent L1D line of up to 256 sets (`LINES`) and what may hit each ([`LineMode`]),
//!   with a deferred dirty bit for write-back stores ([`Shortcut::settle_dirty`] applies it); a
//!   line is dropped when its set changes in the model (a stamp per set, [`Shortcut::model_changed`]);
//! - the VA→PA page and the attribute of the last translated access in each of 16 slots
//!   (the page cache, direct-mapped by the VA page's low bits);
//! - the L1I lines a back-to-back repeat of the last TB fetches and how ([`FetchMode`]), credited
//!   from the board's execution counter ([`Shortcut::credit`]).
//!
//! Only one host thread writes the shortcuts (one vCPU, or several run round-robin by one
//! thread: see `engine::shortcut_allowed`); atomics with relaxed ordering make the exit-time
//! read well defined and cost plain loads and stores.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use crate::cache::SetChanges;
use crate::hierarchy::{Attr, Level, Model, Totals, SERVED_MEMORY};
use crate::sanitize::byte_mask;

use super::tb_plan::Group;

/// "Nothing remembered" for a line or page number.
pub(super) const NONE: u64 = u64::MAX;
/// log2 of the page the page cache and the translation work in.
pub(super) const PAGE_SHIFT: u32 = 12;
/// Slots of the page cache. A page there skips what a data access in a new page asks (QEMU's
/// translation, the learned page, the attribute); exact because the guest's learned-page table
/// is direct-mapped by a superset of the same bits (`guest::RTLB_ENTRIES` is a multiple): a page
/// that would replace a learned page evicts the remembered one of the same slot first, so a
/// remembered page is always the one its learned-page entry holds.
pub(super) const PAGES: usize = 16;
const _: () = assert!(crate::guest::RTLB_ENTRIES.is_multiple_of(PAGES) && PAGES.is_power_of_two());

/// The page-cache slot of `vaddr`.
#[inline]
fn page_slot(vaddr: u64) -> usize {
    (vaddr >> PAGE_SHIFT) as usize & (PAGES - 1)
}

/// Pairs of entries of the line table: two-way, by the VA line number's low bits (two lines
/// alternating in one L1D set both stay remembered; at most one of them is current, the set's
/// most recent line: the other is promoted by [`Shortcut::promoted`]).
const LINE_PAIRS: usize = 128;
/// Entries of the line table.
pub(super) const LINES: usize = 2 * LINE_PAIRS;
/// Stamps of L1D sets, indexed by the set number's low bits (sets beyond share a stamp: a change
/// of one drops the other's line too, which costs a model call, never a wrong count).
const STAMPS: usize = 1024;
/// Words of the pending-dirty bitmap (one bit per line-table entry).
const PENDING_WORDS: usize = LINES / 64;

/// The first of the two line-table entries VA line `vline` may occupy.
#[inline]
fn line_pair(vline: u64) -> usize {
    2 * (vline as usize & (LINE_PAIRS - 1))
}

/// What the line table says of a data access ([`Shortcut::access`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Counted here: a hit that changes nothing.
    Counted,
    /// Entry `k` holds the line and its mode allows the access, but the line's set changed
    /// since: a plain hit if the line is still there, which only promotes it
    /// ([`Shortcut::promoted`]).
    Moved(usize),
    /// The model decides.
    No,
}

/// log2 of the blocks write stamps cover ([`MemoStamps::writes`]): the smallest line any cache
/// has, and the fetch segments' unit (`tb_plan::FETCH_SEGMENT_SHIFT`), so one fetch callback's
/// bytes lie in one block.
pub(super) const BLOCK_SHIFT: u32 = 6;
const _: () = assert!(BLOCK_SHIFT == super::tb_plan::FETCH_SEGMENT_SHIFT);
/// log2 of the VA pages page stamps cover ([`MemoStamps::pages`]): the smallest granule.
const VA_PAGE_SHIFT: u32 = 12;
/// Stamps kept per table: blocks are stamped by the low bits of their number.
const BLOCK_STAMPS: usize = 16384;

/// A stamp per aligned block of `1 << SHIFT` bytes of an address space, by the block number's
/// low bits (blocks beyond share a stamp: a bump of one drops the other's memos too). Inline
/// (no pointer to follow on the fetch path).
pub struct Stamps<const SHIFT: u32> {
    stamps: [AtomicU32; BLOCK_STAMPS],
}

impl<const SHIFT: u32> Default for Stamps<SHIFT> {
    fn default() -> Self {
        Self { stamps: std::array::from_fn(|_| AtomicU32::new(0)) }
    }
}

impl<const SHIFT: u32> Stamps<SHIFT> {
    /// The index of the block holding `addr` and its stamp.
    #[inline]
    fn at(&self, addr: u64) -> (u32, u32) {
        let k = (addr >> SHIFT) as usize & (BLOCK_STAMPS - 1);
        (k as u32, self.stamps[k].load(Relaxed))
    }

    /// Whether stamp `k` still has the value `stamp`.
    #[inline]
    fn holds(&self, k: u32, stamp: u32) -> bool {
        self.stamps[k as usize].load(Relaxed) == stamp
    }

    /// Bumps the stamp of every block of `[first, last]` (addresses), at most every stamp once.
    #[inline]
    fn bump(&self, first: u64, last: u64) {
        let (lo, hi) = (first >> SHIFT, last >> SHIFT);
        for b in lo..=hi.min(lo + BLOCK_STAMPS as u64 - 1) {
            let s = &self.stamps[b as usize & (BLOCK_STAMPS - 1)];
            s.store(s.load(Relaxed).wrapping_add(1), Relaxed);
        }
    }
}

/// What a fetch memo ([`FetchMemo`]) depends on beyond its vCPU's epoch and L1I set, shared by
/// every vCPU: the writes to its code (the sanitizer's judgement of a fetch changes only when
/// its line is written) and the TLBIs of its VA page (its translation and attribute).
#[derive(Default)]
pub struct MemoStamps {
    /// A stamp per 64-byte block of physical memory: bumped for every block of the L1D
    /// line(s) a data write touches (through the model, or the first store a remembered line
    /// defers).
    writes: Stamps<BLOCK_SHIFT>,
    /// A stamp per 4 KiB page of VA: bumped for every page a TLBI by VA reaches.
    pages: Stamps<VA_PAGE_SHIFT>,
}

impl MemoStamps {
    /// A write to `[pa, pa + len)`, in lines of log2 size `shift`: every block of those lines.
    #[inline]
    pub fn wrote(&self, pa: u64, len: u64, shift: u32) {
        let first = pa >> shift << shift;
        let last = (pa + len.max(1) - 1) | ((1 << shift) - 1);
        self.writes.bump(first, last);
    }

    /// A TLBI by VA that reaches `[va, va + len)`.
    pub fn unmapped(&self, va: u64, len: u64) {
        self.pages.bump(va, va + len.max(1) - 1);
    }
}

/// One fetch callback's memo (the glue keeps one per callback, the tests one per TB segment):
/// the facts of its last fetch through the model that make the next one a plain L1I hit
/// without the model (see [`Shortcut::memo_fetch`]).
#[derive(Default)]
pub struct FetchMemo {
    /// The engine's fetch epoch when made, plus one (0: none).
    epoch: AtomicU32,
    /// The vCPU it was made for.
    core: AtomicU32,
    /// The L1I line fetched (model line number, the fetch end), the PA of the fetched bytes,
    /// and the PA range `[lo, hi)` of the TB's lines.
    line: AtomicU64,
    pa: AtomicU64,
    lo: AtomicU64,
    hi: AtomicU64,
    /// The index of the line's L1I set in [`Shortcut`]'s most-recent-line table.
    set_at: AtomicU32,
    /// The fetched block's write stamp ([`MemoStamps`]) index and value, and its VA page's.
    write_at: AtomicU32,
    write: AtomicU32,
    page_at: AtomicU32,
    page: AtomicU32,
}

/// What a fetch memo gives a fetch that it answers: the line it fetched and the PA range of
/// its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoHit {
    /// The L1I line (model line number).
    pub line: u64,
    /// The PA of the fetched bytes.
    pub pa: u64,
    /// The line is still the most recent of its set (nothing changed the set since a memo or
    /// a fetch made it so): the fetch is a hit that changes nothing. Else the line may have
    /// moved down its set's order, or left the L1I.
    pub quiet: bool,
    /// The start of the PA range of the TB's lines, `[lo, hi)`.
    pub lo: u64,
    /// Its end.
    pub hi: u64,
}

/// A data line a model access lets the shortcut remember ([`Shortcut::remember_line`]).
#[derive(Clone, Copy, Debug)]
pub struct Remembered {
    /// VA line number.
    pub vline: u64,
    /// What may hit it.
    pub mode: LineMode,
    /// Its L1D slot (0 for an uncached line).
    pub slot: u64,
    /// Its L1D set (for an uncached line, any number: its stamp drops nothing that matters).
    pub set: usize,
    /// Its model line number.
    pub l1line: u64,
    /// The bytes a store changes nothing for ([`Model::l1d_rewrite_quiet`]; 0 but for a
    /// write-back line).
    pub quiet: u64,
}

/// One remembered L1D line (see [`Shortcut`]; its VA line number is in the tag array). One
/// host cache line each.
#[derive(Default)]
#[repr(align(64))]
struct LineEntry {
    /// Its [`LineMode`].
    mode: AtomicU8,
    /// The index of its set's stamp, and the stamp's value when the line was remembered: the
    /// line is current while they are equal.
    stamp_at: AtomicU32,
    stamp: AtomicU32,
    /// The model's L1D slot of the line and its model line number (for the deferred dirty bit).
    slot: AtomicU64,
    l1line: AtomicU64,
    /// Stores were counted here since the last settle: a deferred dirty bit (write-back) or a
    /// deferred note of uncached writes (bypass), for the model.
    dirty: AtomicBool,
    /// PC of the first write deferred in `dirty` (the sanitizer's "dirty since").
    pc: AtomicU64,
    /// The bytes of the line those stores wrote (`sanitize::ByteMask`).
    bytes: AtomicU64,
    /// The bytes a store changes nothing for (the copy is dirty and the sanitizer holds them
    /// written: [`Model::l1d_rewrite_quiet`]): such a store is only counted, nothing deferred.
    quiet: AtomicU64,
    /// 1 when the line's access was looked up in the TLB model (its page is then the L1 data
    /// TLB's most recent entry: every access counted here is an L1 TLB hit), else 0.
    tlb: AtomicU8,
}

/// Marks a line number in the fetch end ([`Shortcut::fetch_end`]) as fetched bypassing the caches.
pub(super) const BYPASS_LINE: u64 = 1 << 63;

/// What may hit the remembered L1D line without the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LineMode {
    /// Cacheable, not write-back (write-through): loads hit; a store goes to the model (it
    /// writes through to the next level).
    Loads = 1,
    /// Cacheable write-back: loads and stores hit; the first store defers the line's dirty bit.
    LoadsAndStores = 2,
    /// Not cacheable: every access to the line is a bypass (a single-line access, uniform page;
    /// with the sanitizer, no cache holds a copy of the line and the last model access was a
    /// store, so a store's first-writer mark is already set; the bytes later stores write are
    /// deferred like a dirty bit, [`Shortcut::settle_dirty`]).
    Bypass = 3,
    /// Not cacheable, with the sanitizer after a load: loads are bypasses; a store goes to the
    /// model (the sanitizer marks the line written, for the stale-instruction rule).
    BypassLoads = 4,
}

impl LineMode {
    fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::Loads),
            2 => Some(Self::LoadsAndStores),
            3 => Some(Self::Bypass),
            4 => Some(Self::BypassLoads),
            _ => None,
        }
    }
}

/// How a back-to-back repeat of the last TB fetches its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FetchMode {
    /// Cacheable: L1I hits.
    Hit = 1,
    /// Not cacheable: bypasses.
    Bypass = 3,
}

/// One vCPU's shortcut state (see the module docs).
pub struct Shortcut {
    /// The VA line number each entry of `lines` holds (NONE: empty), apart so that a lookup
    /// reads one host cache line for a pair.
    tags: Box<[AtomicU64]>,
    /// The remembered L1D lines ([`LINES`] entries, two-way by the VA line).
    lines: Box<[LineEntry]>,
    /// One stamp per L1D set (low bits of the set number): bumped when the set changes in the
    /// model, which makes the line remembered there stale.
    stamps: Box<[AtomicU32]>,
    /// Per pair of entries: which of the two was remembered last (the other is replaced first).
    recent: Box<[AtomicU8]>,
    /// The entries with a deferred dirty bit (bit k = entry k).
    pending: [AtomicU64; PENDING_WORDS],
    /// The entry holding an uncached line ([`LineMode::Bypass`] or [`LineMode::BypassLoads`]),
    /// NONE if none: at most one, dropped at every model call of the vCPU (the call may leave
    /// a copy of the line in some cache: see the engine's `drop_disturbed`).
    bypass_at: AtomicU64,
    /// Bit `l1line % 64` of every line remembered since the table was last emptied: a cheap
    /// "may hold" for another core's code fetch ([`Shortcut::may_hold`]).
    held: AtomicU64,
    /// Per L1I set (low bits of the set number): the line a fetch memo or a fetch made the most
    /// recent of its set when nothing changed the set since, else NONE (set by the changes
    /// each model call reports). Any memo of that line is then a hit that changes nothing,
    /// whichever callback made it (TBs share lines).
    imru: Box<[AtomicU64]>,
    /// Every vCPU's memo stamps (one object, shared).
    stamps_memo: Arc<MemoStamps>,
    /// Fetches a memo answered (diagnostics: the tests check the memos run).
    memo_fetches: AtomicU64,
    /// The vCPU's fetch epoch: its fetch memos hold only within one ([`Shortcut::drop_memos`]).
    memo_epoch: AtomicU32,
    d_hits: AtomicU64,
    d_bypass: AtomicU64,
    /// The L1 data TLB hits counted here.
    d_tlb_hits: AtomicU64,
    /// log2 of the L1D line size.
    d_shift: AtomicU64,
    /// The page cache, direct-mapped by the VA page's low bits ([`PAGES`] slots): the VA page
    /// of a translated access, its PA page | io flag (bit 63), and the attribute code of that
    /// page (`NONE` = not known, or not uniform across the page: look it up).
    p_vpn: [AtomicU64; PAGES],
    p_ppn: [AtomicU64; PAGES],
    p_attr: [AtomicU64; PAGES],
    /// The lines a repeat of the last TB fetched through the model fetches (0 when the TB lies
    /// in one line: see the engine's `fetch`), their [`FetchMode`], and the value of the board's
    /// execution counter already accounted for.
    i_lines: AtomicU64,
    i_mode: AtomicU8,
    i_acc: AtomicU64,
    /// The line the vCPU's instruction fetch is in: the last line of the last TB fetched, as
    /// the model address's line number, [`BYPASS_LINE`] set when it bypassed the caches
    /// (`NONE`: none). Kept with the shortcut off too (the counts never depend on TB bounds).
    i_end: AtomicU64,
    i_hits: AtomicU64,
    i_bypass: AtomicU64,
    /// The last TB's lines were looked up in the TLB model (its page is the L1 instruction
    /// TLB's most recent entry): each line a repeat fetches is an L1 TLB hit.
    i_tlb: AtomicBool,
    /// The L1 instruction TLB hits counted here.
    i_tlb_hits: AtomicU64,
    /// The last TB's fetch reported a hazard: its repeats are replayed through the model (each
    /// reports again), not counted; its address and length.
    i_replay: AtomicBool,
    i_va: AtomicU64,
    i_bytes: AtomicU64,
    /// The PA range `[lo, hi)` of the lines the last TB fetched through the model (empty: none).
    i_lo: AtomicU64,
    i_hi: AtomicU64,
    /// The last TB's fetch depended on translations learned from data accesses or windows
    /// (its page did not walk, or it ran at another VA than it was translated at).
    i_learned: AtomicBool,
}

#[inline]
fn add(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed) + n, Relaxed);
}

impl Default for Shortcut {
    fn default() -> Self {
        Self::new(Arc::default())
    }
}

impl Shortcut {
    /// Nothing remembered, 64-byte L1D lines; `stamps_memo`: the memo stamps every vCPU shares.
    pub fn new(stamps_memo: Arc<MemoStamps>) -> Self {
        let f = Self {
            imru: (0..STAMPS).map(|_| AtomicU64::new(NONE)).collect(),
            stamps_memo,
            memo_fetches: AtomicU64::new(0),
            memo_epoch: AtomicU32::new(0),
            tags: (0..LINES).map(|_| AtomicU64::new(NONE)).collect(),
            lines: (0..LINES).map(|_| LineEntry::default()).collect(),
            recent: (0..LINE_PAIRS).map(|_| AtomicU8::new(0)).collect(),
            stamps: (0..STAMPS).map(|_| AtomicU32::new(0)).collect(),
            pending: Default::default(),
            bypass_at: AtomicU64::new(NONE),
            held: AtomicU64::new(0),
            d_hits: AtomicU64::new(0),
            d_bypass: AtomicU64::new(0),
            d_tlb_hits: AtomicU64::new(0),
            d_shift: AtomicU64::new(6),
            p_vpn: Default::default(),
            p_ppn: Default::default(),
            p_attr: Default::default(),
            i_lines: AtomicU64::new(0),
            i_mode: AtomicU8::new(0),
            i_acc: AtomicU64::new(0),
            i_end: AtomicU64::new(NONE),
            i_hits: AtomicU64::new(0),
            i_bypass: AtomicU64::new(0),
            i_tlb: AtomicBool::new(false),
            i_tlb_hits: AtomicU64::new(0),
            i_replay: AtomicBool::new(false),
            i_va: AtomicU64::new(0),
            i_bytes: AtomicU64::new(0),
            i_lo: AtomicU64::new(0),
            i_hi: AtomicU64::new(0),
            i_learned: AtomicBool::new(false),
        };
        f.p_vpn.iter().for_each(|p| p.store(NONE, Relaxed));
        f
    }

    /// log2 of the L1D line size the data shortcut works in.
    #[inline]
    pub fn line_shift(&self) -> u32 {
        self.d_shift.load(Relaxed) as u32
    }

    /// A new model's L1D line size (log2).
    pub fn set_line_shift(&self, shift: u32) {
        self.d_shift.store(u64::from(shift), Relaxed);
    }

    /// The entry holding VA line `vline`, if any.
    #[inline]
    fn find(&self, vline: u64) -> Option<(usize, &LineEntry)> {
        let k = line_pair(vline);
        if self.tags[k].load(Relaxed) == vline {
            return Some((k, &self.lines[k]));
        }
        (self.tags[k + 1].load(Relaxed) == vline).then(|| (k + 1, &self.lines[k + 1]))
    }

    /// Whether entry `e` is current (its set has not changed in the model since it was
    /// remembered).
    #[inline]
    fn is_current(&self, e: &LineEntry) -> bool {
        self.stamps[e.stamp_at.load(Relaxed) as usize].load(Relaxed) == e.stamp.load(Relaxed)
    }

    /// One data access of `size()` bytes at `vaddr`: [`Answer::Counted`] here when it falls in
    /// a remembered current line and the line's mode allows it, [`Answer::Moved`] when the
    /// line's set changed since but the access would still be a plain hit, else [`Answer::No`]
    /// (the model decides). The size is asked only for a store (the bytes it writes) or an
    /// access within 16 bytes of the line's end.
    #[inline]
    pub fn access(&self, vaddr: u64, size: impl FnOnce() -> u32, write: bool, pc: u64) -> Answer {
        let shift = self.line_shift();
        let off = vaddr & ((1 << shift) - 1);
        let Some((k, e)) = self.find(vaddr >> shift) else { return Answer::No };
        // Accesses are at most 16 bytes: only those near the line's end need their size.
        let size = if write || off + 16 > 1 << shift { u64::from(size()) } else { 1 };
        if off + size > 1 << shift {
            return Answer::No;
        }
        if self.is_current(e) {
            return if self.hit(k, e, 1, write, pc, || byte_mask(off, size, shift)) { Answer::Counted } else { Answer::No };
        }
        // A load, or a store of bytes it changes nothing for, of a cacheable line.
        let mode = LineMode::from_u8(e.mode.load(Relaxed));
        let plain = match mode {
            Some(LineMode::Loads) => !write,
            Some(LineMode::LoadsAndStores) => !write || byte_mask(off, size, shift) & !e.quiet.load(Relaxed) == 0 && !self.in_code(e),
            _ => false,
        };
        if plain {
            Answer::Moved(k)
        } else {
            Answer::No
        }
    }

    /// Entry `k`'s L1D slot and model line number (an [`Answer::Moved`]'s, for the model).
    pub fn entry_line(&self, k: usize) -> (usize, u64) {
        let e = &self.lines[k];
        (e.slot.load(Relaxed) as usize, e.l1line.load(Relaxed))
    }

    /// Entry `k`'s line was promoted by the model (a plain hit, counted there: an
    /// [`Answer::Moved`]), whose changes [`Shortcut::model_changed`] has seen: it is current
    /// again, in L1D set `set`.
    pub fn promoted(&self, k: usize, set: usize) {
        let e = &self.lines[k];
        let at = set & (STAMPS - 1);
        e.stamp_at.store(at as u32, Relaxed);
        e.stamp.store(self.stamps[at].load(Relaxed), Relaxed);
    }

    /// Forgets which bytes the remembered lines take stores of without the model (an IC
    /// invalidate starts the sanitizer's written bytes afresh).
    pub fn forget_quiet(&self) {
        self.lines.iter().for_each(|e| e.quiet.store(0, Relaxed));
    }

    /// A group's members after its leader's access at `vaddr` (see `tb_plan::Group`): all counted
    /// here (`true`) when they fall in the leader's remembered line and its mode allows them.
    #[inline]
    pub fn group(&self, vaddr: u64, g: &Group) -> bool {
        let shift = self.line_shift();
        let off = (vaddr & ((1 << shift) - 1)) as i64;
        if off + g.lo < 0 || off + g.hi > 1 << shift {
            return false;
        }
        let Some((k, e)) = self.find(vaddr >> shift).filter(|(_, e)| self.is_current(e)) else { return false };
        // The bytes the store members write.
        let bytes = || g.members.iter().filter(|m| m.2).fold(0, |b, &(d, size, _)| b | byte_mask((off + d) as u64, u64::from(size), shift));
        self.hit(k, e, g.members.len() as u64, g.stores, g.store_pc, bytes)
    }

    /// `n` accesses to entry `k`'s line (`write`: any of them a store, the first at `pc`,
    /// writing `bytes()` of the line). A store to a line of the last TB goes to the model (the
    /// engine's `wrote_code`).
    #[inline]
    fn hit(&self, k: usize, e: &LineEntry, n: u64, write: bool, pc: u64, bytes: impl FnOnce() -> u64) -> bool {
        let counter = match LineMode::from_u8(e.mode.load(Relaxed)) {
            Some(LineMode::Bypass) => &self.d_bypass,
            Some(LineMode::BypassLoads) if !write => &self.d_bypass,
            Some(LineMode::LoadsAndStores) => &self.d_hits,
            Some(LineMode::Loads) if !write => &self.d_hits,
            _ => return false,
        };
        if write && !self.defer_store(k, e, pc, bytes) {
            return false;
        }
        add(counter, n);
        add(&self.d_tlb_hits, n * u64::from(e.tlb.load(Relaxed)));
        true
    }

    /// Whether entry `e`'s line overlaps the last TB's lines (a store there goes to the model:
    /// the engine's `wrote_code`).
    #[inline]
    fn in_code(&self, e: &LineEntry) -> bool {
        let shift = self.line_shift();
        self.in_last_tb(e.l1line.load(Relaxed) << shift, 1 << shift)
    }

    /// A store to entry `k`'s line that its mode allows, at `pc`, writing `bytes()`: nothing to
    /// do for bytes it changes nothing for, else its dirty bit (or note of uncached writes) is
    /// deferred; `false` (the model decides) for a line of the last TB.
    #[inline(always)]
    fn defer_store(&self, k: usize, e: &LineEntry, pc: u64, bytes: impl FnOnce() -> u64) -> bool {
        if self.in_code(e) {
            return false;
        }
        let shift = self.line_shift();
        let bytes = bytes();
        if bytes & !e.quiet.load(Relaxed) == 0 {
            return true;
        }
        if !e.dirty.load(Relaxed) {
            self.stamps_memo.wrote(e.l1line.load(Relaxed) << shift, 1, shift);
            e.pc.store(pc, Relaxed);
            e.dirty.store(true, Relaxed);
            e.bytes.store(0, Relaxed);
            let w = &self.pending[k / 64];
            w.store(w.load(Relaxed) | 1 << (k % 64), Relaxed);
        }
        e.bytes.store(e.bytes.load(Relaxed) | bytes, Relaxed);
        true
    }

    /// Remembers the line `line` of a model access; `tlb`: its access was looked up in the TLB
    /// model. `single`: the line is the only one remembered (the others are forgotten: a TLB
    /// model's most recent entry, or a write-streaming detector, sees every access in order).
    /// Called after the vCPU's deferred dirty bits were settled and
    /// [`Shortcut::model_changed`] saw the call's changes.
    pub fn remember_line(&self, line: &Remembered, tlb: bool, single: bool) {
        let Remembered { vline, mode, slot, set, l1line, quiet } = *line;
        debug_assert!(self.pending.iter().all(|w| w.load(Relaxed) == 0), "remembered before settling");
        if single {
            self.forget_lines();
        }
        let k = match self.find(vline) {
            Some((k, _)) => k,
            None => {
                // The entry not current (or empty) first, else the one remembered before.
                let p = line_pair(vline);
                let free = |k: usize| self.tags[k].load(Relaxed) == NONE || !self.is_current(&self.lines[k]);
                if free(p) {
                    p
                } else if free(p + 1) {
                    p + 1
                } else {
                    p + 1 - usize::from(self.recent[p / 2].load(Relaxed))
                }
            }
        };
        self.recent[k / 2].store((k % 2) as u8, Relaxed);
        let e = &self.lines[k];
        let at = set & (STAMPS - 1);
        e.mode.store(mode as u8, Relaxed);
        e.quiet.store(quiet, Relaxed);
        e.tlb.store(u8::from(tlb), Relaxed);
        e.slot.store(slot, Relaxed);
        e.l1line.store(l1line, Relaxed);
        e.stamp_at.store(at as u32, Relaxed);
        e.stamp.store(self.stamps[at].load(Relaxed), Relaxed);
        self.tags[k].store(vline, Relaxed);
        self.held.store(self.held.load(Relaxed) | 1 << (l1line % 64), Relaxed);
        if matches!(mode, LineMode::Bypass | LineMode::BypassLoads) {
            self.bypass_at.store(k as u64, Relaxed);
        } else if self.bypass_at.load(Relaxed) == k as u64 {
            self.bypass_at.store(NONE, Relaxed);
        }
    }

    /// After a model call of this vCPU: drops the lines of the L1D sets that changed in it
    /// (every line when more changed than [`SetChanges`] holds).
    #[inline]
    pub fn model_changed(&self, changes: SetChanges) {
        match changes.sets() {
            Some(sets) => {
                for &set in sets {
                    let s = &self.stamps[set as usize & (STAMPS - 1)];
                    s.store(s.load(Relaxed).wrapping_add(1), Relaxed);
                }
            }
            None => self.forget_lines(),
        }
    }

    /// After a model call of this vCPU: the L1I sets that changed in it no longer hold a line
    /// a memo made the most recent; when more changed than [`SetChanges`] holds, every fetch
    /// memo of the vCPU is dropped.
    #[inline]
    pub fn l1i_changed(&self, changes: SetChanges) {
        let Some(sets) = changes.sets() else {
            self.imru.iter().for_each(|m| m.store(NONE, Relaxed));
            return self.drop_memos();
        };
        for &set in sets {
            self.imru[set as usize & (STAMPS - 1)].store(NONE, Relaxed);
        }
    }

    /// After model calls that may have changed the L1 caches of this vCPU (`cpu`): what
    /// [`Shortcut::model_changed`] and [`Shortcut::l1i_changed`] drop for the sets the model
    /// reports changed.
    #[inline]
    pub fn caches_changed(&self, m: &mut Model, cpu: usize) {
        self.model_changed(m.take_l1d_changes(cpu));
        self.l1i_changed(m.take_l1i_changes(cpu));
    }

    /// Makes `memo` answer the next fetches of its callback at `va` on this vCPU (`core`) while
    /// its fetch epoch lasts ([`Shortcut::drop_memos`]): its one L1I line `line` (set `set`, PA range
    /// `[lo, hi)` of the TB's lines) is the most recent of its set now (a hit on it changes
    /// nothing while it stays so), and the fetched bytes at `pa` reported nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn memo_fetch(&self, memo: &FetchMemo, core: usize, va: u64, line: u64, set: usize, pa: u64, lo: u64, hi: u64) {
        let at = set & (STAMPS - 1);
        let (write_at, write) = self.stamps_memo.writes.at(pa);
        let (page_at, page) = self.stamps_memo.pages.at(va);
        memo.page_at.store(page_at, Relaxed);
        memo.page.store(page, Relaxed);
        self.imru[at].store(line, Relaxed);
        memo.core.store(core as u32, Relaxed);
        memo.line.store(line, Relaxed);
        memo.pa.store(pa, Relaxed);
        memo.lo.store(lo, Relaxed);
        memo.hi.store(hi, Relaxed);
        memo.set_at.store(at as u32, Relaxed);
        memo.write_at.store(write_at, Relaxed);
        memo.write.store(write, Relaxed);
        memo.epoch.store(self.memo_epoch.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Whether `memo` answers this vCPU's (`core`) fetch: made for it in its current fetch
    /// epoch, its block and VA page unchanged since (the translation, the attribute and the
    /// sanitizer's judgement hold); what it gives, with whether its line is still the most
    /// recent of its L1I set.
    #[inline]
    pub fn memo_answers(&self, memo: &FetchMemo, core: usize) -> Option<MemoHit> {
        let e = memo.epoch.load(Relaxed);
        let ok = e != 0
            && e == self.memo_epoch.load(Relaxed).wrapping_add(1)
            && memo.core.load(Relaxed) == core as u32
            && self.stamps_memo.writes.holds(memo.write_at.load(Relaxed), memo.write.load(Relaxed))
            && self.stamps_memo.pages.holds(memo.page_at.load(Relaxed), memo.page.load(Relaxed));
        ok.then(|| MemoHit {
            line: memo.line.load(Relaxed),
            pa: memo.pa.load(Relaxed),
            lo: memo.lo.load(Relaxed),
            hi: memo.hi.load(Relaxed),
            quiet: self.imru[memo.set_at.load(Relaxed) as usize].load(Relaxed) == memo.line.load(Relaxed),
        })
    }

    /// Every fetch memo of this vCPU stops answering (a new fetch epoch: anything that may
    /// change a fetch's translation, attribute or L1I state beyond the L1I set table and the
    /// memo stamps).
    #[inline]
    pub fn drop_memos(&self) {
        self.memo_epoch.store(self.memo_epoch.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// A fetch a memo answered (counted for [`Shortcut::memo_fetches`]).
    #[inline]
    pub fn memo_fetched(&self) {
        add(&self.memo_fetches, 1);
    }

    /// How many fetches memos answered.
    pub fn memo_fetches(&self) -> u64 {
        self.memo_fetches.load(Relaxed)
    }

    /// A fetch of one L1I line counted here (a hit: [`Shortcut::memo_answers`]).
    #[inline]
    pub fn count_fetch_hit(&self) {
        add(&self.i_hits, 1);
    }

    /// Forgets the uncached line if it lies in the PA range `[lo, hi)` (L1D lines of log2 size
    /// `shift`).
    #[inline]
    pub fn forget_bypass_in(&self, lo: u64, hi: u64, shift: u32) {
        let k = self.bypass_at.load(Relaxed);
        if k != NONE {
            let pa = self.lines[k as usize].l1line.load(Relaxed) << shift;
            if pa < hi && pa + (1 << shift) > lo {
                self.forget_bypass();
            }
        }
    }

    /// Forgets the uncached line, if one is remembered.
    #[inline]
    pub fn forget_bypass(&self) {
        let k = self.bypass_at.load(Relaxed);
        if k != NONE {
            self.tags[k as usize].store(NONE, Relaxed);
            self.bypass_at.store(NONE, Relaxed);
        }
    }

    /// Forgets every remembered line (anything that may change their sets beyond what
    /// [`Shortcut::model_changed`] is told: another vCPU's snoop, a prefetch, maintenance).
    pub fn forget_lines(&self) {
        if self.held.load(Relaxed) == 0 && self.bypass_at.load(Relaxed) == NONE {
            return;
        }
        self.tags.iter().for_each(|t| t.store(NONE, Relaxed));
        self.bypass_at.store(NONE, Relaxed);
        self.held.store(0, Relaxed);
    }

    /// Whether an uncached line is remembered.
    pub fn has_bypass(&self) -> bool {
        self.bypass_at.load(Relaxed) != NONE
    }

    /// Forgets the lines and the pages of VAs in `[va, va + len)` (a TLBI by VA that reaches
    /// that span: [`crate::guest::Guest::tlbi_extent`]).
    pub fn forget_va_range(&self, va: u64, len: u64) {
        let (lo, hi) = (va, va + len.max(1) - 1);
        let shift = self.line_shift();
        for (k, t) in self.tags.iter().enumerate() {
            let vline = t.load(Relaxed);
            if vline != NONE && (lo >> shift..=hi >> shift).contains(&vline) {
                t.store(NONE, Relaxed);
                if self.bypass_at.load(Relaxed) == k as u64 {
                    self.bypass_at.store(NONE, Relaxed);
                }
            }
        }
        for p in &self.p_vpn {
            if (lo >> PAGE_SHIFT..=hi >> PAGE_SHIFT).contains(&p.load(Relaxed)) {
                p.store(NONE, Relaxed);
            }
        }
    }

    /// Forgets the lines and the pages (TLBI, an SCTLR write, a marker).
    pub fn forget_all(&self) {
        self.forget_lines();
        self.p_vpn.iter().for_each(|p| p.store(NONE, Relaxed));
    }

    /// Applies the deferred dirty bits (or, on a bypassed line, the deferred note of uncached
    /// writes) to the model, with the bytes the deferred stores wrote, before any model call of
    /// this vCPU that could observe them; `true` when there was one.
    #[inline]
    pub fn settle_dirty(&self, mut model: Option<&mut Model>, cpu: usize) -> bool {
        // Only this vCPU's thread sets the bits: plain loads and stores suffice.
        let mut any = false;
        for (w, word) in self.pending.iter().enumerate() {
            let mut bits = word.load(Relaxed);
            if bits == 0 {
                continue;
            }
            word.store(0, Relaxed);
            any = true;
            while bits != 0 {
                let k = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let e = &self.lines[k];
                e.dirty.store(false, Relaxed);
                if let Some(m) = model.as_deref_mut() {
                    let (line, pc, bytes) = (e.l1line.load(Relaxed), e.pc.load(Relaxed), e.bytes.load(Relaxed));
                    if e.mode.load(Relaxed) == LineMode::Bypass as u8 {
                        m.note_uncached_writes(line, pc, bytes);
                    } else {
                        m.mark_l1d_dirty(cpu, e.slot.load(Relaxed) as usize, line, pc, bytes);
                        // Now dirty and held written: further stores of them change nothing.
                        if !m.streams_writes() {
                            e.quiet.store(e.quiet.load(Relaxed) | bytes, Relaxed);
                        }
                    }
                }
            }
        }
        any
    }

    /// The page cache: the PA of `vaddr` and whether it is I/O, when its page is the one its
    /// slot remembers.
    #[inline]
    pub fn page(&self, vaddr: u64) -> Option<(u64, bool)> {
        let k = page_slot(vaddr);
        if self.p_vpn[k].load(Relaxed) != vaddr >> PAGE_SHIFT {
            return None;
        }
        let p = self.p_ppn[k].load(Relaxed);
        Some(((p & !(1 << 63)) << PAGE_SHIFT | (vaddr & ((1 << PAGE_SHIFT) - 1)), p >> 63 == 1))
    }

    /// Remembers the page of a translated access (its attribute is not known yet), in place of
    /// its slot's.
    pub fn remember_page(&self, vaddr: u64, pa: u64, io: bool) {
        let k = page_slot(vaddr);
        self.p_vpn[k].store(vaddr >> PAGE_SHIFT, Relaxed);
        self.p_ppn[k].store(pa >> PAGE_SHIFT | u64::from(io) << 63, Relaxed);
        self.p_attr[k].store(NONE, Relaxed);
    }

    /// The attribute of the remembered page holding `vaddr`, when known (the page is uniform;
    /// asked after [`Shortcut::page`] found the page).
    #[inline]
    pub fn page_attr(&self, vaddr: u64) -> Option<Attr> {
        let k = page_slot(vaddr);
        if self.p_vpn[k].load(Relaxed) != vaddr >> PAGE_SHIFT {
            return None;
        }
        Attr::try_from(self.p_attr[k].load(Relaxed)).ok()
    }

    /// Remembers the attribute of the page holding `vaddr`, if that page is remembered.
    pub fn remember_page_attr(&self, vaddr: u64, attr: Attr) {
        let k = page_slot(vaddr);
        if self.p_vpn[k].load(Relaxed) == vaddr >> PAGE_SHIFT {
            self.p_attr[k].store(attr as u64, Relaxed);
        }
    }

    /// The line the last fetch ended in (see the field docs).
    #[inline]
    pub fn fetch_end(&self) -> u64 {
        self.i_end.load(Relaxed)
    }

    /// Sets the line the last fetch ended in.
    #[inline]
    pub fn set_fetch_end(&self, line: u64) {
        self.i_end.store(line, Relaxed);
    }

    /// Credits the TB repeats the board counted inline since the last look (its execution
    /// counter is now `execs`) to the last fetched TB; returns how many of them are to be
    /// replayed through the model instead ([`Shortcut::replay`]).
    #[inline]
    pub fn credit(&self, execs: u64) -> u64 {
        let new = execs.wrapping_sub(self.i_acc.load(Relaxed));
        self.i_acc.store(execs, Relaxed);
        if new == 0 || new >= 1 << 62 {
            return 0;
        }
        if self.i_replay.load(Relaxed) {
            return new;
        }
        let lines = self.i_lines.load(Relaxed) * new;
        let bypass = self.i_mode.load(Relaxed) == FetchMode::Bypass as u8;
        add(if bypass { &self.i_bypass } else { &self.i_hits }, lines);
        if self.i_tlb.load(Relaxed) {
            add(&self.i_tlb_hits, lines);
        }
        0
    }

    /// After a TB's fetch through the model: each of its inline-counted repeats fetches `lines`
    /// lines `mode`; `acc` is the execution counter's value that is already accounted for;
    /// `replay` = the TB (address, length) when its fetch reported a hazard.
    #[inline]
    pub fn set_repeats(&self, lines: u64, mode: FetchMode, acc: u64, replay: Option<(u64, u64)>) {
        self.i_lines.store(lines, Relaxed);
        self.i_mode.store(mode as u8, Relaxed);
        self.i_acc.store(acc, Relaxed);
        self.i_replay.store(replay.is_some(), Relaxed);
        if let Some((va, bytes)) = replay {
            self.i_va.store(va, Relaxed);
            self.i_bytes.store(bytes, Relaxed);
        }
    }

    /// Whether the last TB's lines were looked up in the TLB model (set at each fetch through the model).
    #[inline]
    pub fn set_fetch_tlb(&self, on: bool) {
        self.i_tlb.store(on, Relaxed);
    }

    /// Whether the last TB's fetch used a learned or window translation (see the field).
    #[inline]
    pub fn set_fetch_learned(&self, on: bool) {
        self.i_learned.store(on, Relaxed);
    }

    /// Whether a change of the learned translations can change what a repeat of the last TB
    /// fetches.
    #[inline]
    pub fn fetch_learned(&self) -> bool {
        self.i_learned.load(Relaxed)
    }

    /// Sets the PA range of the last TB's lines (`[lo, hi)`).
    #[inline]
    pub fn set_last_tb(&self, lo: u64, hi: u64) {
        self.i_lo.store(lo, Relaxed);
        self.i_hi.store(hi, Relaxed);
    }

    /// The PA range of the last TB's lines (`[lo, hi)`).
    pub fn last_tb(&self) -> (u64, u64) {
        (self.i_lo.load(Relaxed), self.i_hi.load(Relaxed))
    }

    /// Whether `[pa, pa + len)` overlaps the last TB's lines.
    #[inline]
    pub fn in_last_tb(&self, pa: u64, len: u64) -> bool {
        pa < self.i_hi.load(Relaxed) && pa + len > self.i_lo.load(Relaxed)
    }

    /// Whether a remembered line may lie in the PA range `[lo, hi)` of L1D lines of log2 size
    /// `shift` (another core fetched code there: cross-modifying code).
    pub fn may_hold(&self, lo: u64, hi: u64, shift: u32) -> bool {
        let held = self.held.load(Relaxed);
        held != 0 && (lo >> shift..(hi + (1 << shift) - 1) >> shift).any(|l| held >> (l % 64) & 1 == 1)
    }

    /// The TB whose repeats are replayed (address, length), if any: credit its repeats before any
    /// model call, so that they meet the model in program order.
    #[inline]
    pub fn replay(&self) -> Option<(u64, u64)> {
        self.i_replay.load(Relaxed).then(|| (self.i_va.load(Relaxed), self.i_bytes.load(Relaxed)))
    }

    /// What the shortcut counted (to add to the model's totals).
    pub fn totals(&self) -> Totals {
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
        t.tlb.l1d_hits = self.d_tlb_hits.load(Relaxed);
        t.tlb.l1i_hits = self.i_tlb_hits.load(Relaxed);
        t
    }
}
