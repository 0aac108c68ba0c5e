//! Translation planning: what the plugin registers for one translation block, decided from its
//! instruction words alone (no QEMU type; the glue turns a [`Plan`] into callbacks).
//!
//! - **Fetch segments.** The TB's instructions are fetched at its start, but those after an
//!   instruction that changes what a fetch means (a marker: phase attribution; IC invalidation;
//!   a write to SCTLR, TTBR, TCR, MAIR of any EL, HCR_EL2 or SCR_EL3), and those of each further instruction line ([`FETCH_SEGMENT_SHIFT`]), are
//!   fetched right before the first of them executes, by a callback on that instruction
//!   registered before its own callbacks. So the counts do not depend on where QEMU ends TBs
//!   (see the engine's `fetch`), and a TB left early by a synchronous exception (a faulting
//!   load, a trapped register access) fetches no line it never reached, as one instruction per
//!   TB would not.
//! - **Batching** (part of the shortcut): one memory callback per run of immediate-offset
//!   loads/stores on one base register ([`decode::plan_groups`](crate::decode::plan_groups)).
//! - **Special instructions**: the markers, maintenance, TLBI, SCTLR writes and prefetches get
//!   an execute callback with register access.

use std::sync::Arc;

use crate::decode::{decode, decode_mem_imm, is_non_temporal_pair, plan_groups, Insn, Role};
use crate::hierarchy::Hint;

/// A TB's instructions in each aligned block of this many bytes (log2) are fetched as a segment of
/// their own, right before the first of them executes: the smallest instruction-cache line any
/// CPU or profile has (64 bytes), so a segment never starts inside a line it shares with the
/// previous one except where the line is longer (then `fetch` skips the line it continues).
pub const FETCH_SEGMENT_SHIFT: u32 = 6;

/// A leader's members and their span relative to the leader's address.
#[derive(Debug, PartialEq, Eq)]
pub struct Group {
    /// The leader's own access size.
    pub size: u32,
    /// (offset from the leader's address, size, store) of each member, in program order.
    pub members: Vec<(i64, u32, bool)>,
    /// Lowest member offset.
    pub lo: i64,
    /// Highest member end (offset + size).
    pub hi: i64,
    /// Any member is a store.
    pub stores: bool,
    /// The leader's PC (member k's is 4 (k + 1) further: members are consecutive instructions).
    pub pc: u64,
    /// PC of the first store member.
    pub store_pc: u64,
}

impl Group {
    /// The group of a leader of `size` bytes at `pc`.
    pub fn new(size: u32, members: Vec<(i64, u32, bool)>, pc: u64) -> Self {
        let lo = members.iter().map(|m| m.0).min().unwrap_or(0);
        let hi = members.iter().map(|m| m.0 + i64::from(m.1)).max().unwrap_or(0);
        let stores = members.iter().any(|m| m.2);
        let store_pc = members.iter().position(|m| m.2).map_or(pc, |k| pc + 4 * (k as u64 + 1));
        Self { size, members, lo, hi, stores, pc, store_pc }
    }
}

/// One instruction of a TB as the translation callback sees it.
#[derive(Clone, Copy, Debug)]
pub struct TbInsn {
    /// Its address.
    pub vaddr: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its word, when QEMU could read it.
    pub word: Option<u32>,
}

/// The memory callbacks of one instruction.
#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    /// None: simulated by its group's leader.
    Member,
    /// Its own access (one callback per direction).
    Single(Hint),
    /// Its own access, then its group's members.
    Leader(Arc<Group>),
}

/// What to register for one instruction.
#[derive(Debug)]
pub struct InsnPlan {
    /// Its address.
    pub pc: u64,
    /// An execute callback with register access for this decoded instruction.
    pub special: Option<Insn>,
    /// Its memory callbacks.
    pub access: Access,
}

/// What to register for one TB.
#[derive(Debug)]
pub struct Plan {
    /// The TB's first address.
    pub start: u64,
    /// The end of its last instruction (`start` for an empty TB).
    pub end: u64,
    /// Length of the first fetch segment (fetched by the TB's own callback).
    pub first_len: u64,
    /// The further fetch segments: (index of the instruction it starts at, start, length).
    pub segments: Vec<(usize, u64, u64)>,
    /// One entry per instruction.
    pub insns: Vec<InsnPlan>,
}

/// Plans one TB; `batching` = the shortcut is on.
pub fn plan(insns: &[TbInsn], batching: bool) -> Plan {
    let start = insns.first().map_or(0, |i| i.vaddr);
    let end = insns.last().map_or(start, |i| i.vaddr + i.size);
    let decoded: Vec<Option<Insn>> = insns.iter().map(|i| i.word.and_then(decode)).collect();
    let changes_fetch = |d: &Option<Insn>| {
        matches!(
            d,
            Some(
                Insn::Marker
                    | Insn::IcIallu { .. }
                    | Insn::IcIvau { .. }
                    | Insn::MsrSctlr { .. }
                    | Insn::MsrControl { .. }
                    | Insn::MsrTranslation { .. }
            )
        )
    };
    let mut breaks: Vec<u64> = insns
        .iter()
        .zip(&decoded)
        .filter(|(_, d)| changes_fetch(d))
        .map(|(i, _)| i.vaddr + i.size)
        .chain(insns.iter().map(|i| i.vaddr).filter(|&va| va != start && va & ((1 << FETCH_SEGMENT_SHIFT) - 1) == 0))
        .filter(|&next| next < end)
        .collect();
    breaks.sort_unstable();
    breaks.dedup();
    let first_len = breaks.first().copied().unwrap_or(end) - start;
    let segments = breaks
        .iter()
        .enumerate()
        .filter_map(|(k, &seg_start)| {
            let seg_end = breaks.get(k + 1).copied().unwrap_or(end);
            let at = insns.iter().position(|i| i.vaddr == seg_start)?;
            Some((at, seg_start, seg_end - seg_start))
        })
        .collect();
    let mems: Vec<_> = insns.iter().map(|i| i.word.and_then(decode_mem_imm)).collect();
    let roles = if batching { plan_groups(&mems) } else { vec![Role::Single; insns.len()] };
    let insns = insns
        .iter()
        .zip(decoded)
        .zip(roles)
        .zip(mems)
        .map(|(((i, special), role), mem)| {
            let pc = i.vaddr;
            let access = match role {
                Role::Member => Access::Member,
                Role::Leader(members) => Access::Leader(Arc::new(Group::new(mem.map_or(8, |m| m.size), members, pc))),
                Role::Single => Access::Single(Hint { pc, nt: i.word.is_some_and(is_non_temporal_pair) }),
            };
            InsnPlan { pc, special, access }
        })
        .collect();
    Plan { start, end, first_len, segments, insns }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOP: u32 = 0xd503_201f;
    /// `ldr x1, [x0, #8]`, `ldr x2, [x0, #16]`, `str x3, [x0, #24]`.
    const LDR1: u32 = 0xf940_0401;
    const LDR2: u32 = 0xf940_0802;
    const STR3: u32 = 0xf900_0c03;

    fn tb(start: u64, words: &[u32]) -> Vec<TbInsn> {
        words.iter().enumerate().map(|(k, &w)| TbInsn { vaddr: start + 4 * k as u64, size: 4, word: Some(w) }).collect()
    }

    #[test]
    fn a_tb_in_one_line_is_one_segment() {
        let p = plan(&tb(0x1000, &[NOP, NOP, NOP]), true);
        assert_eq!((p.start, p.end, p.first_len), (0x1000, 0x100c, 12));
        assert!(p.segments.is_empty());
    }

    #[test]
    fn lines_and_markers_start_segments() {
        // 0x1038..0x1048: crosses a 64-byte boundary at 0x1040; a marker at 0x103c also ends a
        // segment there (deduplicated), and an IC IALLU at 0x1040 ends one at 0x1044.
        let marker = cachescope_arch::marker::MARKER_ENCODING;
        let ic_iallu = 0xd508_751f;
        let p = plan(&tb(0x1038, &[NOP, marker, ic_iallu, NOP]), true);
        assert_eq!(p.first_len, 8);
        assert_eq!(p.segments, vec![(2, 0x1040, 4), (3, 0x1044, 4)]);
        assert_eq!(p.insns[1].special, Some(Insn::Marker));
        // A marker as the last instruction starts no empty segment.
        let p = plan(&tb(0x1000, &[NOP, marker]), true);
        assert!(p.segments.is_empty());
        assert_eq!(p.first_len, 8);
    }

    #[test]
    fn batching_groups_one_base_only_with_the_shortcut() {
        let p = plan(&tb(0x2000, &[LDR1, LDR2, STR3, NOP]), true);
        let Access::Leader(g) = &p.insns[0].access else { panic!("{:?}", p.insns[0].access) };
        assert_eq!(**g, Group::new(8, vec![(8, 8, false), (16, 8, true)], 0x2000));
        assert_eq!((g.lo, g.hi, g.stores, g.store_pc), (8, 24, true, 0x2008));
        assert_eq!((&p.insns[1].access, &p.insns[2].access), (&Access::Member, &Access::Member));
        assert_eq!(p.insns[3].access, Access::Single(Hint { pc: 0x200c, nt: false }));
        let p = plan(&tb(0x2000, &[LDR1, LDR2, STR3]), false);
        assert!(p.insns.iter().all(|i| matches!(i.access, Access::Single(_))));
    }
}
