//! AArch64 instruction decoding for the plugin: what the model does for the cache-model marker
//! (`cachescope_arch::marker::MARKER_ENCODING`), the cache-maintenance SYS instructions, TLBI and
//! writes to SCTLR_EL1 (all decoded by `cachescope_arch::cache::ops::decode_sys`, the decoder
//! host/insn-count counts with), writes to the translation registers the walk reads
//! (TTBR0/TTBR1/TCR/MAIR of EL1, TTBR0/TCR/MAIR of EL2 and EL3) and to SCTLR_EL2/EL3, HCR_EL2 and
//! SCR_EL3, PRFM, the loads and stores the plugin batches; plus the DC
//! ISW/CSW/CISW operand.

use cachescope_arch::cache::ops::{decode_sys, SysInsn, SysOp};
use cachescope_arch::marker::MARKER_ENCODING;

use crate::guest::SysReg;
use crate::hierarchy::{LineOp, Point};
use crate::walk::Regime;

/// The MSR encodings (Rt = 0) of the translation registers the walk reads (Arm ARM D19.2:
/// op0 = 3; TTBR0 (op1, 2, 0, 0), TTBR1_EL1 (0, 2, 0, 1), TCR (op1, 2, 0, 2), MAIR (op1, 10, 2, 0),
/// op1 = 0 for EL1, 4 for EL2, 6 for EL3).
const MSR_TRANSLATION: [(u32, SysReg); 10] = [
    (0xd518_2000, SysReg::Ttbr0(Regime::El1)),
    (0xd518_2020, SysReg::Ttbr1El1),
    (0xd518_2040, SysReg::Tcr(Regime::El1)),
    (0xd518_a200, SysReg::Mair(Regime::El1)),
    (0xd51c_2000, SysReg::Ttbr0(Regime::El2)),
    (0xd51c_2040, SysReg::Tcr(Regime::El2)),
    (0xd51c_a200, SysReg::Mair(Regime::El2)),
    (0xd51e_2000, SysReg::Ttbr0(Regime::El3)),
    (0xd51e_2040, SysReg::Tcr(Regime::El3)),
    (0xd51e_a200, SysReg::Mair(Regime::El3)),
];

/// An instruction the plugin acts on. `rt` is the operand register number (31 = XZR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insn {
    /// The cache-model marker (arguments in x9..x13).
    Marker,
    /// DC by virtual address: IVAC, CVAC, CIVAC (to PoC), CVAU (to PoU).
    DcVa {
        /// Clean, invalidate or both.
        op: LineOp,
        /// How far.
        point: Point,
        /// Operand register.
        rt: u8,
    },
    /// DC by set/way: ISW, CSW, CISW.
    DcSetWay {
        /// Clean, invalidate or both.
        op: LineOp,
        /// Operand register.
        rt: u8,
    },
    /// DC ZVA.
    DcZva {
        /// Operand register.
        rt: u8,
    },
    /// IC IALLU (`broadcast` false) or IC IALLUIS (true).
    IcIallu {
        /// Inner Shareable: every vCPU.
        broadcast: bool,
    },
    /// IC IVAU.
    IcIvau {
        /// Operand register.
        rt: u8,
    },
    /// Any TLBI: learned translations are dropped; cached walks too, all of them or (by VA)
    /// those of the operand's page.
    Tlbi {
        /// The operand register of a TLBI by VA of one page ([`tlbi_by_va`]); `None` for every
        /// other TLBI (all, by ASID, by IPA, by range: every cached walk is dropped).
        va_rt: Option<u8>,
        /// An Inner or Outer Shareable form ([`tlbi_broadcast`]): every vCPU's TLBs.
        broadcast: bool,
    },
    /// MSR SCTLR_EL1, Xt.
    MsrSctlr {
        /// Operand register.
        rt: u8,
    },
    /// PRFM PLD/PST (PLI is not decoded: the model ignores it).
    Prefetch(Prefetch),
    /// MSR to a translation register: TTBR0/TTBR1/TCR/MAIR of EL1, TTBR0/TCR/MAIR of EL2 and
    /// EL3 (the walk's inputs: cached walks are dropped).
    MsrTranslation {
        /// Which one.
        reg: SysReg,
        /// Operand register.
        rt: u8,
    },
    /// MSR to a control register of EL2 or EL3 that decides cacheability or the regime.
    MsrControl {
        /// Which one.
        reg: ControlReg,
        /// Operand register.
        rt: u8,
    },
}

/// The EL2/EL3 control registers whose writes the plugin decodes (Arm ARM D19.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlReg {
    /// SCTLR_EL2: M, C, I of the EL2 regime.
    SctlrEl2,
    /// SCTLR_EL3: M, C, I of the EL3 regime.
    SctlrEl3,
    /// HCR_EL2: VM (stage 2), DC (default cacheable), CD/ID (stage 2 cacheability), FWB.
    HcrEl2,
    /// SCR_EL3: NS, the security state of the levels below EL3.
    ScrEl3,
}

impl ControlReg {
    /// Every one, in [`ControlReg::index`] order.
    pub const ALL: [Self; 4] = [Self::SctlrEl2, Self::SctlrEl3, Self::HcrEl2, Self::ScrEl3];

    /// The architectural name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SctlrEl2 => "SCTLR_EL2",
            Self::SctlrEl3 => "SCTLR_EL3",
            Self::HcrEl2 => "HCR_EL2",
            Self::ScrEl3 => "SCR_EL3",
        }
    }

    /// Its position in [`ControlReg::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The MSR encoding with Rt = 0: op0 = 3, (op1, CRn, CRm, op2) = SCTLR_EL2 (4, 1, 0, 0),
    /// SCTLR_EL3 (6, 1, 0, 0), HCR_EL2 (4, 1, 1, 0), SCR_EL3 (6, 1, 1, 0).
    const fn msr(self) -> u32 {
        match self {
            Self::SctlrEl2 => 0xd51c_1000,
            Self::SctlrEl3 => 0xd51e_1000,
            Self::HcrEl2 => 0xd51c_1100,
            Self::ScrEl3 => 0xd51e_1100,
        }
    }

    /// The register the guest state follows.
    pub fn sys_reg(self) -> SysReg {
        match self {
            Self::SctlrEl2 => SysReg::Sctlr(Regime::El2),
            Self::SctlrEl3 => SysReg::Sctlr(Regime::El3),
            Self::HcrEl2 => SysReg::Hcr,
            Self::ScrEl3 => SysReg::Scr,
        }
    }

    /// The bits set in `value` that change cacheability or the regime and that the model does
    /// not follow, by name. Followed (see `guest`): SCTLR_EL2/EL3 M, C, I; HCR_EL2.DC;
    /// SCR_EL3.NS (it only decides whether HCR_EL2.DC applies: the model does not separate the
    /// security states' PA spaces and changes no memory type for them). Not followed: stage 2
    /// (VM) and its cacheability controls (CD, ID, FWB), VHE (E2H: EL2's walk then reports
    /// `vhe-el2-not-followed`), TGE (EL0 under EL2's control).
    pub fn unfollowed(self, value: u64) -> Vec<&'static str> {
        let bits: &[(u32, &str)] = match self {
            Self::SctlrEl2 | Self::SctlrEl3 | Self::ScrEl3 => &[],
            Self::HcrEl2 => &[(0, "VM"), (27, "TGE"), (32, "CD"), (33, "ID"), (34, "E2H"), (46, "FWB")],
        };
        bits.iter().filter(|(b, _)| value >> b & 1 == 1).map(|&(_, n)| n).collect()
    }
}

/// How a PRFM forms its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrfAddr {
    /// `[Xn|SP, #offset]` (scaled immediate and PRFUM's unscaled one).
    Imm {
        /// Base register (31 = SP).
        base: u8,
        /// Byte offset.
        offset: i64,
    },
    /// `[Xn|SP, Rm{, extend {#3}}]`.
    Reg {
        /// Base register (31 = SP).
        base: u8,
        /// Index register (31 = XZR).
        index: u8,
        /// Extend: 2 = UXTW, 3 = LSL/UXTX, 6 = SXTW, 7 = SXTX.
        option: u8,
        /// Shift left by 3.
        shift: bool,
    },
    /// PC-relative literal: the PC plus this offset.
    Literal(i64),
}

impl PrfAddr {
    /// The effective address, given the base and index register values and the PC.
    pub fn effective(self, base: u64, index: u64, pc: u64) -> u64 {
        match self {
            PrfAddr::Imm { offset, .. } => base.wrapping_add(offset as u64),
            PrfAddr::Reg { option, shift, .. } => {
                let x = match option {
                    2 => index & 0xffff_ffff,
                    6 => index as i32 as i64 as u64,
                    _ => index,
                };
                base.wrapping_add(if shift { x << 3 } else { x })
            }
            PrfAddr::Literal(off) => pc.wrapping_add(off as u64),
        }
    }
}

/// A decoded PRFM PLD/PST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefetch {
    /// Target level: 1, 2 or 3.
    pub level: u32,
    /// STRM (non-temporal) rather than KEEP.
    pub strm: bool,
    /// PST rather than PLD.
    pub store: bool,
    /// Its address.
    pub addr: PrfAddr,
}

/// Decodes one instruction word; `None` for everything the plugin ignores.
pub fn decode(word: u32) -> Option<Insn> {
    if word == MARKER_ENCODING {
        return Some(Insn::Marker);
    }
    if let Some(reg) = ControlReg::ALL.into_iter().find(|r| word & !31 == r.msr()) {
        return Some(Insn::MsrControl { reg, rt: (word & 31) as u8 });
    }
    if let Some(&(_, reg)) = MSR_TRANSLATION.iter().find(|(enc, _)| word & !31 == *enc) {
        return Some(Insn::MsrTranslation { reg, rt: (word & 31) as u8 });
    }
    let Some(SysInsn { op, rt }) = decode_sys(word) else {
        return decode_prfm(word).map(Insn::Prefetch);
    };
    use LineOp::*;
    let va = |op, point| Some(Insn::DcVa { op, point, rt });
    match op {
        SysOp::DcIvac => va(Invalidate, Point::Coherency),
        // CVAC, and CVAP/CVADP (persistence, deep persistence): cleans to (at least) the PoC.
        o if o.clean_to_poc() => va(Clean, Point::Coherency),
        SysOp::DcCvau => va(Clean, Point::Unification),
        SysOp::DcCivac => va(CleanInvalidate, Point::Coherency),
        SysOp::DcIsw => Some(Insn::DcSetWay { op: Invalidate, rt }),
        SysOp::DcCsw => Some(Insn::DcSetWay { op: Clean, rt }),
        SysOp::DcCisw => Some(Insn::DcSetWay { op: CleanInvalidate, rt }),
        SysOp::DcZva => Some(Insn::DcZva { rt }),
        SysOp::IcIallu => Some(Insn::IcIallu { broadcast: false }),
        SysOp::IcIalluis => Some(Insn::IcIallu { broadcast: true }),
        SysOp::IcIvau => Some(Insn::IcIvau { rt }),
        SysOp::TlbiVmalle1is | SysOp::TlbiVaae1is | SysOp::TlbiOther => {
            Some(Insn::Tlbi { va_rt: tlbi_by_va(word).then_some(rt), broadcast: tlbi_broadcast(word) })
        }
        SysOp::MsrSctlrEl1 => Some(Insn::MsrSctlr { rt }),
        // The MTE tag operations and GVA/GZVA: not modelled.
        SysOp::DcOther | SysOp::DcCvac | SysOp::DcCvap | SysOp::DcCvadp => None,
    }
}

/// Whether a TLBI word invalidates by VA one page's entries (Arm ARM D8.13 "TLB maintenance
/// instructions", C5.5): `TLBI VAE1, VAAE1, VALE1, VAALE1` (op1 0, op2 1/3/5/7) and `VAE2,
/// VALE2`, `VAE3, VALE3` (op1 4/6, op2 1/5), each non-shareable (CRm 7), Inner (3) or Outer
/// Shareable (1). The range forms (RVA*, CRm 2/5/6), by IPA (stage 2, CRm 0/4 at op1 4), by
/// ASID and the "all" forms are not: they drop every cached walk.
pub fn tlbi_by_va(word: u32) -> bool {
    let (op1, crn, crm, op2) = ((word >> 16) & 7, (word >> 12) & 15, (word >> 8) & 15, (word >> 5) & 7);
    let sys = word & 0xfff8_0000 == 0xd508_0000;
    sys && crn == 8
        && matches!(crm, 1 | 3 | 7)
        && match op1 {
            0 => op2 & 1 == 1,
            4 | 6 => op2 == 1 || op2 == 5,
            _ => false,
        }
}

/// Whether a TLBI word is broadcast to every PE of its shareability domain (Arm ARM D8.13.3
/// "TLB maintenance instructions", the `IS` and `OS` forms): CRm 3 (Inner Shareable: VMALLE1IS,
/// VAE1IS, ASIDE1IS, ALLE2IS …), 1 (Outer Shareable), 2 and 5 (the range forms' IS and OS), 0
/// (IPAS2E1IS, IPAS2LE1IS). The non-shareable forms (CRm 7, 6, 4) reach the issuing PE only.
pub fn tlbi_broadcast(word: u32) -> bool {
    matches!((word >> 8) & 15, 0 | 1 | 2 | 3 | 5)
}

/// The VA a TLBI by VA's operand names: `VA[55:12]` in bits `[43:0]`, sign-extended from VA bit 55
/// (the ASID and TTL fields above are ignored: a superset of entries is dropped).
pub fn tlbi_operand_va(xt: u64) -> u64 {
    let va = (xt & ((1 << 44) - 1)) << 12;
    ((va << 8) as i64 >> 8) as u64
}

/// Decodes PRFM (immediate, register, literal) and PRFUM (C6.2 PRFM/PRFUM); `None` for other
/// words, for PLI, and for the prfop values that are not PLD/PST to L1–L3 (the architecture
/// treats those as NOPs or as hints the model does not follow, e.g. the SLC target).
pub fn decode_prfm(word: u32) -> Option<Prefetch> {
    let rn = ((word >> 5) & 31) as u8;
    let addr = if word & 0xffc0_0000 == 0xf980_0000 {
        PrfAddr::Imm { base: rn, offset: i64::from((word >> 10) & 0xfff) * 8 }
    } else if word & 0xffe0_0c00 == 0xf880_0000 {
        PrfAddr::Imm { base: rn, offset: i64::from(((word >> 12) & 0x1ff) as i32) << 55 >> 55 }
    } else if word & 0xffe0_0c00 == 0xf8a0_0800 {
        let option = ((word >> 13) & 7) as u8;
        if option & 2 == 0 {
            return None; // unallocated extend
        }
        PrfAddr::Reg { base: rn, index: ((word >> 16) & 31) as u8, option, shift: (word >> 12) & 1 == 1 }
    } else if word & 0xff00_0000 == 0xd800_0000 {
        PrfAddr::Literal(i64::from(((word >> 5) & 0x7_ffff) as i32) << 45 >> 43)
    } else {
        return None;
    };
    let prfop = word & 31;
    let (kind, target, strm) = (prfop >> 3, (prfop >> 1) & 3, prfop & 1 == 1);
    if (kind != 0 && kind != 2) || target == 3 {
        return None;
    }
    Some(Prefetch { level: target + 1, strm, store: kind == 2, addr })
}

/// Whether a word is a non-temporal load/store pair (LDNP/STNP, general-purpose or SIMD&FP:
/// `opc 101 V 000 L imm7 Rt2 Rn Rt`, C4.1.66 "Load/store no-allocate pair (offset)").
pub fn is_non_temporal_pair(word: u32) -> bool {
    word & 0x3b80_0000 == 0x2800_0000
}

/// A single-register load or store with an immediate offset and no base write-back
/// (`LDR/STR Rt, [Xn, #imm]` and `LDUR/STUR`, general-purpose or FP/SIMD). The plugin's
/// batching groups consecutive ones with the same base register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemImm {
    /// Base register (31 = SP).
    pub base: u8,
    /// Byte offset from the base.
    pub offset: i64,
    /// Access size in bytes (1..=16).
    pub size: u32,
    /// A store (else a load).
    pub store: bool,
    /// A load that overwrites its own base register (it ends a group).
    pub clobbers_base: bool,
}

/// Decodes an unsigned-offset or unscaled-offset single-register load/store (C4.1.66 "Load/store
/// register (unsigned immediate)" and "(unscaled immediate)"); prefetches and unallocated
/// encodings give `None`.
pub fn decode_mem_imm(word: u32) -> Option<MemImm> {
    if (word >> 27) & 7 != 7 {
        return None;
    }
    let size = word >> 30;
    let simd = (word >> 26) & 1 == 1;
    let opc = (word >> 22) & 3;
    let rn = ((word >> 5) & 31) as u8;
    let rt = (word & 31) as u8;
    let unsigned = (word >> 24) & 3 == 1;
    let unscaled = (word >> 24) & 3 == 0 && (word >> 21) & 1 == 0 && (word >> 10) & 3 == 0;
    if !unsigned && !unscaled {
        return None;
    }
    let (bytes, store) = if simd {
        match opc {
            0 | 1 => (1u32 << size, opc == 0),
            _ if size == 0 => (16, opc == 2),
            _ => return None,
        }
    } else {
        match (opc, size) {
            (0, _) => (1 << size, true),
            (1, _) => (1 << size, false),
            (2, 3) | (3, 2) | (3, 3) => return None, // PRFM, unallocated
            _ => (1 << size, false),                 // LDRS*
        }
    };
    let offset =
        if unsigned { i64::from((word >> 10) & 0xfff) * i64::from(bytes) } else { i64::from(((word >> 12) & 0x1ff) as i32) << 55 >> 55 };
    Some(MemImm { base: rn, offset, size: bytes, store, clobbers_base: !store && !simd && rt == rn && rn != 31 })
}

/// What the plugin registers for one instruction of a translation block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Its own memory callback (anything that is not a groupable load/store, or a group of one).
    Single,
    /// The first of a run of consecutive immediate-offset loads/stores on the same base register:
    /// its callback also simulates the members, as (offset from its own address, size, store).
    Leader(Vec<(i64, u32, bool)>),
    /// Simulated by its leader's callback: no callback of its own.
    Member,
}

/// Groups consecutive loads/stores that share a base register no member changes, so that one
/// memory callback (the first one's) covers the run: `mems[i]` is instruction i decoded with
/// [`decode_mem_imm`]. A load that overwrites the base ends its group (it is still a member).
pub fn plan_groups(mems: &[Option<MemImm>]) -> Vec<Role> {
    let mut roles = vec![Role::Single; mems.len()];
    let mut i = 0;
    while i < mems.len() {
        let Some(lead) = mems[i] else {
            i += 1;
            continue;
        };
        let mut members = Vec::new();
        let mut j = i + 1;
        let mut open = !lead.clobbers_base;
        while open && j < mems.len() {
            match mems[j] {
                Some(m) if m.base == lead.base => {
                    members.push((m.offset - lead.offset, m.size, m.store));
                    roles[j] = Role::Member;
                    open = !m.clobbers_base;
                    j += 1;
                }
                _ => break,
            }
        }
        if !members.is_empty() {
            roles[i] = Role::Leader(members);
        }
        i = j;
    }
    roles
}

/// A decoded DC ISW/CSW/CISW operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetWay {
    /// Cache level, 1-based (the operand's Level field + 1).
    pub level: u32,
    /// Set index.
    pub set: u32,
    /// Way index.
    pub way: u32,
}

/// ceil(log2(n)) for n ≥ 1 (the architecture's A for `ways`).
pub fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// Decodes a set/way operand `level << 1 | set << log2(line) | way << (32 - A)` (A = ceil(log2(ways)))
/// against the geometry of the cache at that level. Bits above 31 and the RES0 bits between the
/// set and way fields are ignored, as the architecture ignores them.
pub fn decode_set_way(operand: u64, line: u32, sets: u32, ways: u32) -> SetWay {
    let level = ((operand >> 1) & 7) as u32 + 1;
    let l = line.trailing_zeros();
    let a = ceil_log2(ways);
    let set = ((operand >> l) as u32) & (sets - 1);
    let way = if a == 0 { 0 } else { ((operand & 0xffff_ffff) >> (32 - a)) as u32 };
    SetWay { level, set, way }
}

/// Encodes a set/way operand (the inverse of [`decode_set_way`]; tests and the test kernel's
/// expectations).
pub fn encode_set_way(level: u32, set: u32, way: u32, line: u32, ways: u32) -> u64 {
    let a = ceil_log2(ways);
    let w = if a == 0 { 0 } else { u64::from(way) << (32 - a) };
    u64::from(level - 1) << 1 | u64::from(set) << line.trailing_zeros() | w
}

/// The model slots (as `way * model_sets + set` indices) that one guest set/way operation covers,
/// when the guest's geometry of that level (`guest_sets × guest_ways`) differs from the model's
/// (`model_sets × model_ways`). Guest index `g = way * guest_sets + set` of `G` lines covers model
/// indices `[g·M/G, (g+1)·M/G)` of `M` lines: a complete walk by the guest covers every model slot
/// exactly once. With identical geometries this is exactly (set, way).
pub fn guest_to_model_slots(
    set: u32,
    way: u32,
    guest_sets: u32,
    guest_ways: u32,
    model_sets: u32,
    model_ways: u32,
) -> std::ops::Range<u64> {
    let g_total = u64::from(guest_sets) * u64::from(guest_ways);
    let m_total = u64::from(model_sets) * u64::from(model_ways);
    let g = u64::from(way) * u64::from(guest_sets) + u64::from(set);
    if g >= g_total {
        return 0..0;
    }
    (g * m_total / g_total)..((g + 1) * m_total / g_total)
}

/// Whether `word` is one of the instructions the Arm architecture lets one PE modify while
/// another executes it, without the executing PE's synchronization, such that it executes
/// either the old or the new instruction: B, BL, BRK, HVC, ISB, NOP, SMC, SVC (Arm ARM
/// DDI 0487, B2.2.5 "Concurrent modification and execution of instructions"; Linux's jump
/// labels switch NOP and B at run time this way). The sanitizer does not call a fetch of such
/// a store stale (it cannot see the old instruction, which the rule also requires to be one
/// of these: that part is not checked).
pub fn is_cmodx_permitted(word: u32) -> bool {
    let b_or_bl = word & 0x7c00_0000 == 0x1400_0000;
    let nop = word == 0xd503_201f;
    let isb = word & 0xffff_f0ff == 0xd503_30df;
    let exception = word & 0xffe0_0000 == 0xd400_0000 && matches!(word & 0x1f, 1..=3);
    let brk = word & 0xffe0_001f == 0xd420_0000;
    b_or_bl || nop || isb || exception || brk
}

#[cfg(test)]
mod tests {
    #[test]
    fn concurrently_modifiable_instructions_are_the_arm_arm_list() {
        // B, BL, NOP, ISB, SVC #0, HVC #0, SMC #0, BRK #0x800 (assembled by GNU as).
        for w in [0x1400_0010, 0x97ff_fffe, 0xd503_201f, 0xd503_3fdf, 0xd400_0001, 0xd400_0002, 0xd400_0003, 0xd430_0000] {
            assert!(is_cmodx_permitted(w), "{w:#x}");
        }
        // MOV X9, LR (Linux's ftrace entry), RET, LDR, CBZ, B.cond, HLT, DCPS1, MSR DAIFSet.
        for w in [0xaa1e_03e9, 0xd65f_03c0, 0xf940_0000, 0xb400_0040, 0x5400_0040, 0xd440_0000, 0xd4a0_0001, 0xd503_43df] {
            assert!(!is_cmodx_permitted(w), "{w:#x}");
        }
    }

    use super::*;

    // Words as LLVM assembles them (rustc global_asm! for aarch64-unknown-none, then llvm-objdump -d).
    #[test]
    fn decodes_maintenance_instructions() {
        use LineOp::*;
        assert_eq!(decode(0xd503_2fff), Some(Insn::Marker));
        assert_eq!(decode(0xd50b_7e20), Some(Insn::DcVa { op: CleanInvalidate, point: Point::Coherency, rt: 0 })); // dc civac, x0
        assert_eq!(decode(0xd50b_7a21), Some(Insn::DcVa { op: Clean, point: Point::Coherency, rt: 1 })); // dc cvac, x1
        assert_eq!(decode(0xd508_7622), Some(Insn::DcVa { op: Invalidate, point: Point::Coherency, rt: 2 })); // dc ivac, x2
        assert_eq!(decode(0xd50b_7b23), Some(Insn::DcVa { op: Clean, point: Point::Unification, rt: 3 })); // dc cvau, x3
        assert_eq!(decode(0xd508_7644), Some(Insn::DcSetWay { op: Invalidate, rt: 4 })); // dc isw, x4
        assert_eq!(decode(0xd508_7a45), Some(Insn::DcSetWay { op: Clean, rt: 5 })); // dc csw, x5
        assert_eq!(decode(0xd508_7e46), Some(Insn::DcSetWay { op: CleanInvalidate, rt: 6 })); // dc cisw, x6
        assert_eq!(decode(0xd50b_7427), Some(Insn::DcZva { rt: 7 })); // dc zva, x7
        assert_eq!(decode(0xd508_751f), Some(Insn::IcIallu { broadcast: false })); // ic iallu
        assert_eq!(decode(0xd508_711f), Some(Insn::IcIallu { broadcast: true })); // ic ialluis
        assert_eq!(decode(0xd50b_7528), Some(Insn::IcIvau { rt: 8 })); // ic ivau, x8
        assert_eq!(decode(0xd508_871f), Some(Insn::Tlbi { va_rt: None, broadcast: false })); // tlbi vmalle1
        assert_eq!(decode(0xd508_8320), Some(Insn::Tlbi { va_rt: Some(0), broadcast: true })); // tlbi vae1is, x0
        assert_eq!(decode(0xd508_8362), Some(Insn::Tlbi { va_rt: Some(2), broadcast: true })); // tlbi vaae1is, x2
        assert_eq!(decode(0xd508_87a3), Some(Insn::Tlbi { va_rt: Some(3), broadcast: false })); // tlbi vale1, x3
        assert_eq!(decode(0xd508_8341), Some(Insn::Tlbi { va_rt: None, broadcast: true })); // tlbi aside1is, x1
        assert_eq!(decode(0xd50c_8721), Some(Insn::Tlbi { va_rt: Some(1), broadcast: false })); // tlbi vae2, x1
        assert_eq!(decode(0xd50e_87a1), Some(Insn::Tlbi { va_rt: Some(1), broadcast: false })); // tlbi vale3, x1
        assert_eq!(decode(0xd50c_8021), Some(Insn::Tlbi { va_rt: None, broadcast: true })); // tlbi ipas2e1is, x1
        assert_eq!(decode(0xd508_8621), Some(Insn::Tlbi { va_rt: None, broadcast: false })); // tlbi rvae1, x1
        assert_eq!(decode(0xd50c_871f), Some(Insn::Tlbi { va_rt: None, broadcast: false })); // tlbi alle2
        let operand = |va: u64, asid: u64| (va >> 12) & ((1 << 44) - 1) | asid << 48;
        assert_eq!(tlbi_operand_va(operand(0x4_0a00, 7)), 0x4_0000, "a low VA's page, the ASID ignored");
        assert_eq!(tlbi_operand_va(operand(0xffff_ff80_0000_1234, 5)), 0xffff_ff80_0000_1000, "a high VA, sign-extended");
        assert_eq!(decode(0xd518_1009), Some(Insn::MsrSctlr { rt: 9 })); // msr sctlr_el1, x9
        assert_eq!(decode(0xd538_1009), None); // mrs x9, sctlr_el1
        assert_eq!(decode(0xd51c_1001), Some(Insn::MsrControl { reg: ControlReg::SctlrEl2, rt: 1 })); // msr sctlr_el2, x1
        assert_eq!(decode(0xd51e_1002), Some(Insn::MsrControl { reg: ControlReg::SctlrEl3, rt: 2 })); // msr sctlr_el3, x2
        assert_eq!(decode(0xd51c_1101), Some(Insn::MsrControl { reg: ControlReg::HcrEl2, rt: 1 })); // msr hcr_el2, x1
        assert_eq!(decode(0xd51e_111f), Some(Insn::MsrControl { reg: ControlReg::ScrEl3, rt: 31 })); // msr scr_el3, xzr
        assert_eq!(decode(0xd53c_1101), None); // mrs x1, hcr_el2
        assert_eq!(ControlReg::HcrEl2.unfollowed(1 << 31), Vec::<&str>::new(), "RW changes no memory type");
        assert_eq!(ControlReg::HcrEl2.unfollowed(1 << 12 | 1 | 1 << 34), vec!["VM", "E2H"], "DC is followed");
        assert_eq!(ControlReg::SctlrEl3.unfollowed(0x30c5_0838), Vec::<&str>::new(), "SCTLR_EL3's RES1 bits, MMU and caches off");
        assert_eq!(ControlReg::SctlrEl2.unfollowed(0x30c5_1835), Vec::<&str>::new(), "M, C, I are followed");
        assert_eq!(ControlReg::HcrEl2.sys_reg(), SysReg::Hcr);
        // The walk's inputs: msr ttbr0_el1, x0; ttbr1_el1, x1; tcr_el2, x2; mair_el3, x3.
        assert_eq!(decode(0xd518_2000), Some(Insn::MsrTranslation { reg: SysReg::Ttbr0(Regime::El1), rt: 0 }));
        assert_eq!(decode(0xd518_2021), Some(Insn::MsrTranslation { reg: SysReg::Ttbr1El1, rt: 1 }));
        assert_eq!(decode(0xd51c_2042), Some(Insn::MsrTranslation { reg: SysReg::Tcr(Regime::El2), rt: 2 }));
        assert_eq!(decode(0xd51e_a203), Some(Insn::MsrTranslation { reg: SysReg::Mair(Regime::El3), rt: 3 }));
        assert_eq!(decode(0xd538_2000), None, "mrs x0, ttbr0_el1 is a read");
        assert_eq!(decode(0xd503_201f), None); // nop
        assert_eq!(decode(0xd503_3f9f), None); // dsb sy
        assert_eq!(decode(0xf940_0000), None); // ldr x0, [x0]
                                               // DC CVAP / CVADP (op1 = 3, CRm = 12 / 13, op2 = 1): cleans to the PoC for the model, as
                                               // `cachescope_arch::cache::ops` decides (host/insn-count counts them as dc_other).
        assert_eq!(decode(0xd50b_7c27), Some(Insn::DcVa { op: Clean, point: Point::Coherency, rt: 7 })); // dc cvap, x7
        assert_eq!(decode(0xd50b_7d28), Some(Insn::DcVa { op: Clean, point: Point::Coherency, rt: 8 })); // dc cvadp, x8
        assert_eq!(decode(0xd50b_7460), None); // dc gva, x0 (MTE): not modelled
        assert_eq!(decode(0xd508_7503), None, "IC IALLU with a register: unallocated, as insn-count decodes it");
    }

    // Words from llvm-mc -triple=aarch64 -show-encoding.
    #[test]
    fn decodes_prefetches_and_non_temporal_pairs() {
        let p = |level, strm, store, addr| Some(Prefetch { level, strm, store, addr });
        assert_eq!(decode_prfm(0xf980_0000), p(1, false, false, PrfAddr::Imm { base: 0, offset: 0 })); // prfm pldl1keep, [x0]
        assert_eq!(
            decode_prfm(0xf8aa_6801),
            p(1, true, false, PrfAddr::Reg { base: 0, index: 10, option: 3, shift: false }) // prfm pldl1strm, [x0, x10]
        );
        assert_eq!(decode_prfm(0xf980_2022), p(2, false, false, PrfAddr::Imm { base: 1, offset: 64 })); // prfm pldl2keep, [x1, #64]
        assert_eq!(decode_prfm(0xf89f_8055), p(3, true, true, PrfAddr::Imm { base: 2, offset: -8 })); // prfum pstl3strm, [x2, #-8]
        assert_eq!(decode_prfm(0xd800_0200), p(1, false, false, PrfAddr::Literal(64))); // prfm pldl1keep, #64
        assert_eq!(decode_prfm(0xf8a3_dbe8), None); // prfm plil1keep, [sp, w3, sxtw #3]: PLI ignored
        assert_eq!(decode(0xf8aa_6801).map(|i| matches!(i, Insn::Prefetch(_))), Some(true));
        let r = PrfAddr::Reg { base: 31, index: 3, option: 6, shift: true };
        assert_eq!(r.effective(0x1000, 0xffff_ffff, 0), 0x1000 - 8, "sxtw #3 of -1");
        assert_eq!(PrfAddr::Reg { base: 0, index: 3, option: 2, shift: false }.effective(0, 0x1_0000_0004, 0), 4, "uxtw");
        assert_eq!(PrfAddr::Literal(-8).effective(0, 0, 0x100), 0xf8);
        assert!(is_non_temporal_pair(0xa840_0c02)); // ldnp x2, x3, [x0]
        assert!(is_non_temporal_pair(0xac01_0400)); // stnp q0, q1, [x0, #32]
        assert!(is_non_temporal_pair(0x6c7f_0420)); // ldnp d0, d1, [x1, #-16]
        assert!(!is_non_temporal_pair(0xa940_0c02)); // ldp x2, x3, [x0]
        assert!(!is_non_temporal_pair(0xf940_0000)); // ldr x0, [x0]
    }

    #[test]
    fn decodes_immediate_loads_and_stores() {
        let m = |base, offset, size, store, clobbers_base| Some(MemImm { base, offset, size, store, clobbers_base });
        assert_eq!(decode_mem_imm(0xf940_0401), m(0, 8, 8, false, false)); // ldr x1, [x0, #8]
        assert_eq!(decode_mem_imm(0x3940_0c01), m(0, 3, 1, false, false)); // ldrb w1, [x0, #3]
        assert_eq!(decode_mem_imm(0xf85f_8001), m(0, -8, 8, false, false)); // ldur x1, [x0, #-8]
        assert_eq!(decode_mem_imm(0x3d80_0800), m(0, 32, 16, true, false)); // str q0, [x0, #32]
        assert_eq!(decode_mem_imm(0x3dc0_0401), m(0, 16, 16, false, false)); // ldr q1, [x0, #16]
        assert_eq!(decode_mem_imm(0xb980_0401), m(0, 4, 4, false, false)); // ldrsw x1, [x0, #4]
        assert_eq!(decode_mem_imm(0x7900_0441), m(2, 2, 2, true, false)); // strh w1, [x2, #2]
        assert_eq!(decode_mem_imm(0xf940_0400), m(0, 8, 8, false, true)); // ldr x0, [x0, #8]
        assert_eq!(decode_mem_imm(0xf940_0be1), m(31, 16, 8, false, false)); // ldr x1, [sp, #16]
        assert_eq!(decode_mem_imm(0x3cdf_0083), m(4, -16, 16, false, false)); // ldur q3, [x4, #-16]
        assert_eq!(decode_mem_imm(0xf980_0000), None); // prfm pldl1keep, [x0]
        assert_eq!(decode_mem_imm(0xf840_8401), None); // ldr x1, [x0], #8 (post-index)
        assert_eq!(decode_mem_imm(0xf840_8c01), None); // ldr x1, [x0, #8]! (pre-index)
        assert_eq!(decode_mem_imm(0xa940_0801), None); // ldp x1, x2, [x0]
        assert_eq!(decode_mem_imm(0xd503_201f), None); // nop
    }

    #[test]
    fn groups_runs_on_one_base() {
        let m = |base, offset, store, clobbers_base| Some(MemImm { base, offset, size: 8, store, clobbers_base });
        let roles = plan_groups(&[
            m(0, 0, false, false),
            m(0, 8, true, false),
            m(0, 16, false, true),
            m(0, 24, false, false),
            None,
            m(1, 0, false, false),
            m(2, 0, false, false),
            m(2, -8, false, false),
        ]);
        assert_eq!(
            roles,
            [
                Role::Leader(vec![(8, 8, true), (16, 8, false)]),
                Role::Member,
                Role::Member, // overwrites x0: the group ends here
                Role::Single,
                Role::Single,
                Role::Single,
                Role::Leader(vec![(-8, 8, false)]),
                Role::Member,
            ]
        );
        assert_eq!(plan_groups(&[m(0, 0, false, true), m(0, 8, false, false)]), [Role::Single, Role::Single]);
    }

    #[test]
    fn set_way_operand_round_trips() {
        // Pi 4 L1D: 64 B lines, 256 sets, 2 ways: way in bit 31, set in bits 13:6.
        let op = encode_set_way(1, 255, 1, 64, 2);
        assert_eq!(op, 1 << 31 | 255 << 6);
        assert_eq!(decode_set_way(op, 64, 256, 2), SetWay { level: 1, set: 255, way: 1 });
        // 3 ways: A = 2, way in bits 31:30.
        let op = encode_set_way(1, 3, 2, 64, 3);
        assert_eq!(op, 2 << 30 | 3 << 6);
        assert_eq!(decode_set_way(op, 64, 256, 3), SetWay { level: 1, set: 3, way: 2 });
        // L2 (level field 1), 16 ways: way in bits 31:28, 1024 sets in bits 15:6.
        let op = encode_set_way(2, 1023, 15, 64, 16);
        assert_eq!(op, 0xf000_0000 | 1023 << 6 | 2);
        assert_eq!(decode_set_way(op, 64, 1024, 16), SetWay { level: 2, set: 1023, way: 15 });
        // Direct-mapped: A = 0, no way field.
        assert_eq!(decode_set_way(5 << 6, 64, 256, 1), SetWay { level: 1, set: 5, way: 0 });
        // Upper bits and RES0 bits are ignored.
        assert_eq!(decode_set_way(0xffff_ffff_0000_0000 | 7 << 6, 64, 256, 2), SetWay { level: 1, set: 7, way: 0 });
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(3), 2);
        assert_eq!(ceil_log2(16), 4);
        assert_eq!(ceil_log2(17), 5);
    }

    #[test]
    fn guest_walk_covers_model_exactly_once() {
        for &(gs, gw, ms, mw) in &[(128u32, 4u32, 256u32, 2u32), (256, 2, 128, 4), (512, 16, 1024, 16), (64, 3, 256, 2), (256, 2, 256, 2)] {
            let mut seen = vec![0u32; (ms * mw) as usize];
            for w in 0..gw {
                for s in 0..gs {
                    for m in guest_to_model_slots(s, w, gs, gw, ms, mw) {
                        seen[m as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{gs}x{gw} over {ms}x{mw}");
        }
        // Identical geometry: exactly the named slot.
        assert_eq!(guest_to_model_slots(5, 1, 256, 2, 256, 2), 261..262);
        assert_eq!(guest_to_model_slots(0, 9, 256, 2, 256, 2), 0..0);
    }
}
