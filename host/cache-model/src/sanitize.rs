//! The cache-maintenance sanitizer: per-line data-consistency state, tracked by physical address
//! (so aliases meet), and the hazards it exposes.
//!
//! # State
//! - **Which levels hold a line, and whether dirty**: the model's own tag arrays.
//! - **Dirty since which write**: the PC of the write that turned a clean line dirty, per L1D
//!   line ([`LineBytes::dirty_pc`]); replaced when the line is dirtied again.
//! - **Memory written behind the cache**: a non-cacheable/Device write (any access that bypasses
//!   the caches, i.e. what a device or DMA master does) marks every cached copy of the line
//!   *stale* (a flag in the tag arrays; the copy dies with its way), and remembers the write.
//!   A D-side write that dirties a line likewise marks an L1I copy of it stale.
//! - **Which bytes** ([`ByteMask`], per L1D line): written since the line was last clean before
//!   the PoC ([`LineBytes::dirty`]), written behind the caches while a copy is stale
//!   ([`Behind::bytes`]), written since the last IC invalidate ([`LineBytes::written`]).
//!
//! # Rules (no false positives on correct code: a clean line refilled at any time — speculation —
//! holds what memory holds, so only dirty lines and stale copies are ever reported)
//!
//! Each read or fetch rule below needs the bytes the access reads (or the translation block
//! executes) to overlap the bytes written; when the rule holds for the line but the bytes do not
//! overlap, the hazard is a `shared-line` instead (advisory: listed, never failing a phase that
//! did not declare it; `cachescope_arch::hazard::Severity`).
//! - `stale-read-by-device`: a non-cacheable or Device read of bytes that are dirty in a cache
//!   before the Point of Coherency (a missing clean to PoC before the hand-off). Levels beyond the
//!   guest's CLIDR_EL1.LoC are transparent (model rule 16a): never dirty or stale for these rules.
//! - `lost-write`: DC IVAC or DC ISW (invalidate without clean) of a dirty line, whose data is
//!   discarded (also the partial edge line of a buffer whose neighbour is dirty).
//! - `stale-read-by-cpu`: a cacheable read that hits a stale copy (a missing invalidate after the
//!   device wrote).
//! - `stale-instruction`: an instruction fetch of a line that is dirty in an L1D (no clean to PoU:
//!   needed unless CTR_EL0.IDC = 1), or that was written through the D-side (or behind the
//!   caches) since its last IC IVAU/IALLU (needed unless CTR_EL0.DIC = 1: the I-side may hold, or
//!   speculatively fetch, the old code at any time before the invalidate), or that hits an L1I
//!   copy a device write made stale.
//! - `maintenance-gap`: lines of a range declared with the maintenance-range markers (protocol
//!   v4) that received no by-VA data-cache operation before the range's end marker.
//! - `non-shareable-shared` (model rule 16b, more than one vCPU): a coherent request (rule 17's
//!   snoop) by core c for a line that another core k holds in its private caches, when c's
//!   access goes through a Non-shareable mapping (cause `copy-elsewhere`) or k's copy was
//!   filled through one (cause `non-shareable-copy`, [`Sanitizer::non_shareable`]): two cores
//!   whose shareability domains for the line do not include each other cache it at once.
//!
//! Hazards are deduplicated per (kind, line, phase) with a count by the plugin, and at most
//! [`HAZARD_RECORD_LIMIT`] of them are recorded in a run: past it the rest are only counted
//! ([`Hazards::dropped`]), so a storm cannot grow the model log without bound, and
//! `hazard-total.truncated` fails the run.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hazard kinds: the record contract's list (`cachescope_arch::hazard`), and the silicon
/// rules that can mask one (`masked_by`).
pub use cachescope_arch::hazard::{HazardAccess, HazardCause, HazardKind, SiliconRule};

use crate::hierarchy::Shareability;

/// What the sanitizer saw, before the plugin adds the exposing access's VA, PC and phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The hazard.
    pub kind: HazardKind,
    /// Physical address of the line (its first byte).
    pub pa: u64,
    /// The exposing access.
    pub access: HazardAccess,
    /// The earlier access that made the line hazardous.
    pub cause: HazardCause,
    /// Its PC (0 when not known).
    pub cause_pc: u64,
    /// In silicon mode, the core's deviation that hides the mistake there (model rule 20).
    pub masked_by: Option<SiliconRule>,
    /// Found by a fetch the model does not count (the rest of a line the previous translation
    /// block ended in, [`crate::hierarchy::Model::check_fetch`]): it adds a hazard record when
    /// its (kind, line, phase) is new but no occurrence to an existing one, so occurrence
    /// counts follow the counted L1I accesses and do not depend on where QEMU ends a block.
    pub uncounted: bool,
}

/// A fast hasher for line numbers (a multiplicative hash; the keys are not adversarial).
#[derive(Default)]
pub struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

/// A map keyed by line number.
pub type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// Which bytes of one L1D line an access touched: bit `i` covers the bytes
/// `[i·g, (i+1)·g)` of the line, `g = max(1, line / 64)` (exact per byte for lines of up to 64
/// bytes; a longer line's granules are wider, which can only make bytes overlap that do not).
pub type ByteMask = u64;

/// The [`ByteMask`] of `len` bytes (at least one) from offset `off` of a line of `1 << shift`
/// bytes; bytes past the line's end are ignored (an access that crosses a line is split first).
#[inline]
pub fn byte_mask(off: u64, len: u64, shift: u32) -> ByteMask {
    let line = 1u64 << shift;
    let (off, end) = (off.min(line - 1), (off + len.max(1)).min(line));
    let g = shift.saturating_sub(6);
    let (first, last) = (off >> g, (end - 1) >> g);
    (u64::MAX >> (63 - last)) & (u64::MAX << first)
}

/// Every byte of a line of `1 << shift` bytes.
#[inline]
pub fn full_mask(shift: u32) -> ByteMask {
    byte_mask(0, 1 << shift, shift)
}

/// The last write behind the caches of a line, and the bytes written behind since a copy of it
/// was first made stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behind {
    /// PC of the write that last made a copy stale.
    pub pc: u64,
    /// Its kind: [`HazardCause::NcWrite`], [`HazardCause::DeviceWrite`] or
    /// [`HazardCause::WriteIvauOtherAlias`] (code written, then an IC IVAU that left copies at
    /// other VIPT L1I indexes: rule 21).
    pub kind: HazardCause,
    /// Bytes written behind the caches while some copy was stale.
    pub bytes: ByteMask,
}

/// What the sanitizer knows of one L1D line beyond the tag arrays: one map entry per line, so a
/// store costs one lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineBytes {
    /// PC of the write that made the line dirty (0: not known).
    pub dirty_pc: u64,
    /// The bytes written since the line was last clean in every cache before the PoC (what
    /// differs from memory). Only meaningful while a cache holds the line dirty (the tag arrays
    /// say so): the first write that dirties it while no cache before the PoC holds it dirty
    /// starts the mask afresh.
    pub dirty: ByteMask,
    /// The bytes written since the line's L1D copy was last clean (what an instruction fetch
    /// from the Point of Unification may miss). A clean to the PoU (DC CVAU) makes the L1D copy
    /// clean while a lower level before the PoC still holds it dirty: `dirty` keeps those bytes
    /// (they still differ from memory), this mask starts afresh at the next write.
    pub l1_dirty: ByteMask,
    /// PC of the first D-side write since the line's last IC invalidate (with `written`).
    pub written_pc: u64,
    /// The bytes written since the line's last IC invalidate (the stale-instruction rule; 0:
    /// none, always so when CTR_EL0.DIC = 1), valid in IC epoch `epoch` only.
    pub written: ByteMask,
    /// The [`Sanitizer::ic_epoch`] `written` belongs to (IC IALLU starts a new one).
    pub epoch: u64,
    /// The bytes whose last write was a single aligned store of an instruction the Arm ARM lets
    /// one PE modify while another executes it ([`crate::decode::is_cmodx_permitted`]).
    pub cmodx: ByteMask,
}

/// The sanitizer's state beyond the tag arrays.
#[derive(Default)]
pub struct Sanitizer {
    /// L1D line number → what was written of it.
    pub lines: LineMap<LineBytes>,
    /// L1D line number → the last write behind the cache and the bytes written behind.
    pub behind: LineMap<Behind>,
    /// Incremented by every IC IALLU/IALLUIS: every line's `written` bytes of an older epoch are
    /// forgotten at once.
    pub ic_epoch: u64,
    /// Hazards found since the plugin last drained them.
    pub events: Vec<Event>,
    /// The events reported now are [`Event::uncounted`].
    pub uncounted: bool,
    /// The write being recorded is a single aligned store of a concurrently modifiable
    /// instruction (set by the model around one data access: [`LineBytes::cmodx`]).
    pub store_cmodx: bool,
    /// CTR_EL0.IDC: data cleaning to PoU is not required for instruction coherence.
    pub idc: bool,
    /// CTR_EL0.DIC: instruction invalidation is not required for instruction coherence.
    pub dic: bool,
    /// L1D line number → the vCPUs (bit per vCPU, the first 64) whose last fill of the line
    /// into their private caches went through a Non-shareable mapping, and that fill's PC
    /// (rule 16b). Empty unless such a mapping was used.
    pub non_shareable: LineMap<(u64, u64)>,
    /// A direct-mapped memo of lines [`Sanitizer::written`] answers `None` for (`u64::MAX`:
    /// empty; no memo when empty, as after `Default`): every instruction fetch asks for its
    /// lines, and the map is as large as all the memory the run wrote. Only [`Sanitizer::wrote`]
    /// can make the answer `Some` (an IC invalidate or a new epoch only clears), and it drops
    /// the line's slot.
    unwritten: Vec<u64>,
}

/// Slots of [`Sanitizer`]'s memo of unwritten lines.
const UNWRITTEN_SLOTS: usize = 1 << 12;

impl Sanitizer {
    /// A sanitizer assuming CTR_EL0.IDC = `idc` and DIC = `dic`.
    pub fn new(idc: bool, dic: bool) -> Self {
        Self { idc, dic, unwritten: vec![u64::MAX; UNWRITTEN_SLOTS], ..Self::default() }
    }

    /// The bytes of `line` that one more write-back write, by a core whose L1D already holds
    /// the line dirty, would change nothing for ([`Sanitizer::wrote`] with `dirty:
    /// Some(false)` and no concurrently modifiable store): already dirty, dirty in the L1,
    /// written in this IC epoch (unless DIC), and not marked concurrently modifiable.
    pub fn rewrite_quiet_bytes(&self, line: u64) -> ByteMask {
        let Some(e) = self.lines.get(&line) else { return 0 };
        let quiet = e.dirty & e.l1_dirty & !e.cmodx;
        if self.dic {
            return quiet;
        }
        let slot = (line as usize) & (UNWRITTEN_SLOTS - 1);
        if e.written == 0 || e.epoch != self.ic_epoch || self.unwritten.get(slot) == Some(&line) {
            return 0;
        }
        quiet & e.written
    }

    /// [`Sanitizer::written`] through the memo of unwritten lines (the fetch path's question).
    #[inline]
    pub fn written_memo(&mut self, line: u64) -> Option<(u64, ByteMask)> {
        let slot = (line as usize) & UNWRITTEN_SLOTS.wrapping_sub(1);
        if self.unwritten.get(slot) == Some(&line) {
            return None;
        }
        let w = self.written(line);
        if w.is_none() {
            if let Some(s) = self.unwritten.get_mut(slot) {
                *s = line;
            }
        }
        w
    }

    /// Records a hazard.
    pub fn report(&mut self, kind: HazardKind, pa: u64, access: HazardAccess, cause: HazardCause, cause_pc: u64) {
        self.report_masked(kind, pa, access, cause, cause_pc, None);
    }

    /// [`Sanitizer::report`] of a mistake that silicon rule `masked` (if any) hides on the
    /// modelled core: still the architecture's hazard, with the rule as its `masked_by` note.
    pub fn report_masked(
        &mut self,
        kind: HazardKind,
        pa: u64,
        access: HazardAccess,
        cause: HazardCause,
        cause_pc: u64,
        masked: Option<SiliconRule>,
    ) {
        self.events.push(Event { kind, pa, access, cause, cause_pc, masked_by: masked, uncounted: self.uncounted });
    }

    /// Rule 16b at a coherent request of `cpu` for `line` (the snoop found the line in the
    /// private caches of the vCPUs in `holders`, bit per vCPU), by an access at `pc` through a
    /// mapping of `share` (`request` = `Some((share, pc))`; `None`: not known, e.g. a prefetch,
    /// taken as Inner Shareable and not recorded): reports `non-shareable-shared` at `pa` when the request is Non-shareable
    /// and a holder exists, or a holder's copy was filled Non-shareable; then records `cpu`'s
    /// fill as Non-shareable or not.
    pub fn shareability(&mut self, cpu: usize, line: u64, pa: u64, holders: u64, request: Option<(Shareability, u64)>, write: bool) {
        let (share, pc) = (request.map(|(s, _)| s), request.map_or(0, |(_, pc)| pc));
        let access = if write { HazardAccess::Write } else { HazardAccess::Read };
        let narrow = share == Some(Shareability::Non);
        if holders != 0 {
            if narrow {
                self.report(HazardKind::NonShareableShared, pa, access, HazardCause::CopyElsewhere, 0);
            } else if let Some(&(_, fill_pc)) = self.non_shareable.get(&line).filter(|&&(cores, _)| cores & holders != 0) {
                self.report(HazardKind::NonShareableShared, pa, access, HazardCause::NonShareableCopy, fill_pc);
            }
        }
        let Some(bit) = 1u64.checked_shl(cpu as u32).filter(|_| cpu < 64) else { return };
        if narrow {
            let e = self.non_shareable.entry(line).or_insert((0, pc));
            *e = (e.0 | bit, pc);
        } else if share.is_some() && !self.non_shareable.is_empty() {
            if let Some(e) = self.non_shareable.get_mut(&line) {
                e.0 &= !bit;
                if e.0 == 0 {
                    self.non_shareable.remove(&line);
                }
            }
        }
    }

    /// The recorded cause of a dirty line: (write, its PC) or (write, 0) when not known.
    pub fn dirty_cause(&self, line: u64) -> (HazardCause, u64) {
        (HazardCause::Write, self.lines.get(&line).map_or(0, |l| l.dirty_pc))
    }

    /// The bytes of a dirty line that differ from memory (every byte when not known).
    pub fn dirty_mask(&self, line: u64) -> ByteMask {
        self.lines.get(&line).map(|l| l.dirty).filter(|&d| d != 0).unwrap_or(u64::MAX)
    }

    /// The bytes of a line dirty in an L1D written since that copy was last clean (every byte
    /// when not known): the stale-instruction rule's dirty bytes.
    pub fn l1_dirty_mask(&self, line: u64) -> ByteMask {
        self.lines.get(&line).map(|l| l.l1_dirty).filter(|&d| d != 0).unwrap_or(u64::MAX)
    }

    /// The bytes of the line last written by a concurrently modifiable instruction store
    /// ([`LineBytes::cmodx`]).
    pub fn cmodx_mask(&self, line: u64) -> ByteMask {
        self.lines.get(&line).map_or(0, |l| l.cmodx)
    }

    /// The first write since the line's last IC invalidate (its PC) and the bytes written since.
    pub fn written(&self, line: u64) -> Option<(u64, ByteMask)> {
        self.lines.get(&line).filter(|l| l.written != 0 && l.epoch == self.ic_epoch).map(|l| (l.written_pc, l.written))
    }

    /// IC IVAU of the line: its written bytes are forgotten.
    pub fn ic_invalidated(&mut self, line: u64) {
        if let Some(l) = self.lines.get_mut(&line) {
            l.written = 0;
        }
    }

    /// IC IALLU: every line's written bytes are forgotten.
    pub fn ic_invalidated_all(&mut self) {
        self.ic_epoch += 1;
    }

    /// The recorded write behind the cache of a line.
    pub fn behind_cause(&self, line: u64) -> (HazardCause, u64) {
        self.behind.get(&line).map_or((HazardCause::WriteBehind, 0), |b| (b.kind, b.pc))
    }

    /// The bytes written behind the cache of a line with a stale copy (every byte when not known).
    pub fn behind_mask(&self, line: u64) -> ByteMask {
        self.behind.get(&line).map_or(u64::MAX, |b| b.bytes)
    }

    /// A write of `bytes` of `line` at `pc` through the D-side (write-back: `dirty` is
    /// `Some(fresh)`, `fresh` = it made a clean line dirty and no cache before the PoC held the
    /// line dirty, so the dirty bytes start afresh; write-through or behind the caches: `None`),
    /// `dirtied` = it turned the L1D copy from clean to dirty.
    #[inline]
    pub fn wrote(&mut self, line: u64, bytes: ByteMask, pc: u64, dirty: Option<bool>, dirtied: bool) {
        let epoch = self.ic_epoch;
        let cmodx = self.store_cmodx;
        let e = self.lines.entry(line).or_default();
        e.cmodx = if cmodx { e.cmodx | bytes } else { e.cmodx & !bytes };
        if dirtied {
            e.dirty_pc = pc;
        }
        match dirty {
            Some(true) => e.dirty = bytes,
            Some(false) => e.dirty |= bytes,
            None => {}
        }
        if dirty.is_some() {
            e.l1_dirty = if dirtied { bytes } else { e.l1_dirty | bytes };
        }
        if !self.dic {
            if let Some(s) = self.unwritten.get_mut((line as usize) & (UNWRITTEN_SLOTS - 1)).filter(|s| **s == line) {
                *s = u64::MAX;
            }
            if e.written == 0 || e.epoch != epoch {
                (e.written, e.written_pc, e.epoch) = (0, pc, epoch);
            }
            if dirtied {
                e.written_pc = pc;
            }
            e.written |= bytes;
        }
    }
}

/// One deduplicated hazard: the first occurrence's details and the count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The first occurrence.
    pub event: Event,
    /// VA and PC of the first exposing access.
    pub va: u64,
    /// See `va`.
    pub pc: u64,
    /// Phase name ("" outside phases).
    pub phase: String,
    /// Phase id (0 outside phases).
    pub phase_id: u64,
    /// Occurrences.
    pub count: u64,
    /// Value the emulator held at the exposing access, when known.
    pub current: Option<u64>,
}

/// The bound on hazard records, declared with the plugin's settings (`config.rs`).
pub use crate::config::HAZARD_RECORD_LIMIT;

/// Hazards deduplicated per (kind, line, phase id), in first-seen order, at most `limit` of them
/// in a run.
pub struct Hazards {
    index: HashMap<(HazardKind, u64, u64), usize>,
    entries: Vec<Option<Entry>>,
    /// Distinct hazards recorded per kind (whole run; not those past the limit).
    pub per_kind: [u64; HazardKind::ALL.len()],
    /// Occurrences (whole run, recorded or not).
    pub occurrences: u64,
    /// Occurrences of hazards not recorded because `limit` distinct ones already were.
    pub dropped: u64,
    limit: u64,
}

impl Default for Hazards {
    fn default() -> Self {
        Self::with_limit(HAZARD_RECORD_LIMIT)
    }
}

impl Hazards {
    /// A set that records at most `limit` distinct hazards in a run.
    pub fn with_limit(limit: u64) -> Self {
        Self { index: HashMap::new(), entries: Vec::new(), per_kind: [0; HazardKind::ALL.len()], occurrences: 0, dropped: 0, limit }
    }

    /// Whether the limit was reached and hazards went unrecorded.
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Adds one occurrence. Past the limit a new (kind, line, phase) is only counted in
    /// [`Hazards::dropped`]; one already recorded still counts its occurrences.
    #[allow(clippy::too_many_arguments)]
    pub fn add(&mut self, e: Event, va: u64, pc: u64, phase: Option<(u64, &str)>, current: Option<u64>) {
        let (phase_id, name) = phase.unwrap_or((0, ""));
        let key = (e.kind, e.pa, phase_id);
        if let Some(&i) = self.index.get(&key) {
            if let Some(x) = self.entries[i].as_mut() {
                if !e.uncounted {
                    x.count += 1;
                    self.occurrences += 1;
                }
                return;
            }
        }
        self.occurrences += 1;
        if self.distinct() >= self.limit {
            self.dropped += 1;
            return;
        }
        self.per_kind[e.kind as usize] += 1;
        self.index.insert(key, self.entries.len());
        self.entries.push(Some(Entry { event: e, va, pc, phase: name.to_string(), phase_id, count: 1, current }));
    }

    /// Takes the entries of phase `id` (or all with `None`), in first-seen order.
    pub fn take(&mut self, id: Option<u64>) -> Vec<Entry> {
        let mut out = Vec::new();
        for slot in &mut self.entries {
            if slot.as_ref().is_some_and(|e| id.is_none_or(|id| e.phase_id == id)) {
                let e = slot.take().expect("checked");
                self.index.remove(&(e.event.kind, e.event.pa, e.phase_id));
                out.push(e);
            }
        }
        if id.is_none() {
            self.entries.clear();
        }
        out
    }

    /// Distinct hazards so far.
    pub fn distinct(&self) -> u64 {
        self.per_kind.iter().sum()
    }
}

/// A maintenance range declared by the markers (protocol v4).
#[derive(Clone, Debug, Default)]
pub struct MaintRange {
    /// First VA.
    pub va: u64,
    /// Length in bytes.
    pub len: u64,
    /// VA line numbers that received a by-VA operation.
    pub done: LineMap<()>,
    /// PC of the last by-VA operation inside the range.
    pub last_pc: u64,
}

impl MaintRange {
    /// The VA lines of the range (of `1 << shift` bytes) that received no operation.
    pub fn gaps(&self, shift: u32) -> Vec<u64> {
        if self.len == 0 {
            return Vec::new();
        }
        let first = self.va >> shift;
        let last = (self.va + self.len - 1) >> shift;
        (first..=last).filter(|l| !self.done.contains_key(l)).map(|l| l << shift).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: HazardKind, pa: u64) -> Event {
        Event { kind, pa, access: HazardAccess::Read, cause: HazardCause::NcWrite, cause_pc: 0x10, masked_by: None, uncounted: false }
    }

    #[test]
    fn an_uncounted_event_adds_a_record_never_an_occurrence() {
        let mut h = Hazards::default();
        let quiet = Event { uncounted: true, ..ev(HazardKind::StaleInstruction, 0x40) };
        h.add(quiet, 0x40, 0x100, Some((1, "a")), None);
        h.add(ev(HazardKind::StaleInstruction, 0x40), 0x40, 0x104, Some((1, "a")), None);
        h.add(quiet, 0x40, 0x108, Some((1, "a")), None);
        assert_eq!((h.distinct(), h.occurrences), (1, 2));
        let e = h.take(None);
        assert_eq!((e[0].count, e[0].pc), (2, 0x100), "new: recorded (its first occurrence); existing: not counted");
    }

    #[test]
    fn dedup_per_kind_line_phase() {
        let mut h = Hazards::default();
        h.add(ev(HazardKind::LostWrite, 0x40), 0x40, 0x100, Some((1, "a")), None);
        h.add(ev(HazardKind::LostWrite, 0x40), 0x48, 0x104, Some((1, "a")), None);
        h.add(ev(HazardKind::LostWrite, 0x40), 0x40, 0x100, Some((2, "b")), None);
        h.add(ev(HazardKind::StaleReadByCpu, 0x40), 0x40, 0x100, Some((1, "a")), None);
        h.add(ev(HazardKind::LostWrite, 0x80), 0x80, 0x100, None, None);
        assert_eq!((h.distinct(), h.occurrences), (4, 5));
        let a = h.take(Some(1));
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].count, a[0].va, a[0].pc), (2, 0x40, 0x100), "first occurrence kept, counted twice");
        let rest = h.take(None);
        assert_eq!(rest.iter().map(|e| e.phase_id).collect::<Vec<_>>(), [2, 0]);
        assert_eq!(h.per_kind[HazardKind::LostWrite as usize], 3);
    }

    #[test]
    fn a_storm_is_bounded_and_counted() {
        let mut h = Hazards::with_limit(3);
        for line in 0..10u64 {
            for _ in 0..2 {
                h.add(ev(HazardKind::StaleReadByDevice, line << 6), 0, 0, Some((1, "a")), None);
            }
        }
        assert_eq!((h.distinct(), h.occurrences, h.dropped, h.truncated()), (3, 20, 14, true));
        let a = h.take(Some(1));
        assert_eq!(a.iter().map(|e| (e.event.pa, e.count)).collect::<Vec<_>>(), [(0, 2), (0x40, 2), (0x80, 2)]);
        // Draining a phase frees no room: the limit is per run.
        h.add(ev(HazardKind::LostWrite, 0), 0, 0, Some((2, "b")), None);
        assert!(h.take(None).is_empty());
        assert_eq!((h.distinct(), h.dropped), (3, 15));
        let mut h = Hazards::default();
        assert_eq!(h.limit(), HAZARD_RECORD_LIMIT);
        h.add(ev(HazardKind::LostWrite, 0), 0, 0, None, None);
        assert!(!h.truncated());
    }

    #[test]
    fn byte_masks() {
        assert_eq!(byte_mask(0, 8, 6), 0xff);
        assert_eq!(byte_mask(0x38, 8, 6), 0xff << 56);
        assert_eq!(byte_mask(60, 8, 6), 0xf << 60, "bytes past the line's end are ignored");
        assert_eq!(byte_mask(5, 0, 6), 1 << 5, "an access covers at least one byte");
        assert_eq!(full_mask(6), u64::MAX);
        // 16-byte lines use the low bits; 128-byte lines two bytes a bit.
        assert_eq!(full_mask(4), 0xffff);
        assert_eq!(byte_mask(3, 2, 4), 0b11000);
        assert_eq!(full_mask(7), u64::MAX);
        assert_eq!(byte_mask(1, 1, 7), 1, "byte 1 shares bit 0 with byte 0");
        assert_eq!(byte_mask(2, 4, 7), 0b110);
        assert_eq!(byte_mask(127, 1, 7), 1 << 63);
    }

    #[test]
    fn write_masks_start_afresh_only_on_a_fresh_dirty_line() {
        let mut s = Sanitizer::new(false, false);
        s.wrote(7, 0xf, 0x10, Some(true), true);
        s.wrote(7, 0xf0, 0x14, Some(false), false);
        assert_eq!((s.dirty_mask(7), s.dirty_cause(7)), (0xff, (HazardCause::Write, 0x10)));
        s.wrote(7, 0x100, 0x18, Some(false), true);
        assert_eq!((s.dirty_mask(7), s.dirty_cause(7)), (0x1ff, (HazardCause::Write, 0x18)), "dirty again while dirty elsewhere: added");
        s.wrote(7, 0x200, 0x1c, Some(true), true);
        assert_eq!(s.dirty_mask(7), 0x200, "clean everywhere before: afresh");
        assert_eq!(s.written(7), Some((0x1c, 0x3ff)), "the IC rule's bytes add up until an IC invalidate");
        s.wrote(8, 1, 0x20, None, false);
        assert_eq!((s.dirty_mask(8), s.written(8)), (u64::MAX, Some((0x20, 1))), "write-through: no dirty bytes (unknown = all)");
        s.ic_invalidated(8);
        assert_eq!(s.written(8), None);
        s.wrote(8, 2, 0x24, None, false);
        assert_eq!(s.written(8), Some((0x24, 2)), "after an IC IVAU: afresh");
        s.ic_invalidated_all();
        assert_eq!((s.written(7), s.written(8)), (None, None), "IC IALLU forgets every line");
        s.wrote(7, 4, 0x28, Some(false), false);
        assert_eq!((s.written(7), s.dirty_mask(7)), (Some((0x28, 4)), 0x204), "a new epoch starts afresh; dirty bytes stay");
        let mut s = Sanitizer::new(false, true);
        s.wrote(7, 1, 0x10, Some(true), true);
        assert_eq!(s.written(7), None, "DIC = 1: no IC rule");
    }

    #[test]
    fn gaps_of_a_strided_loop() {
        let mut r = MaintRange { va: 0x1000, len: 0x200, ..MaintRange::default() };
        for a in (0x1000..0x1200).step_by(128) {
            r.done.insert(a >> 6, ());
        }
        assert_eq!(r.gaps(6), [0x1040, 0x10c0, 0x1140, 0x11c0]);
        r.done.clear();
        let r = MaintRange { va: 0x1030, len: 0x20, ..MaintRange::default() };
        assert_eq!(r.gaps(6), [0x1000, 0x1040], "a range straddling two lines covers both");
    }
}
