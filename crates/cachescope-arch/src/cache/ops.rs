//! The system instructions the tools decode, with one decoder ([`decode_sys`]): every DC, IC and
//! TLBI operation and the SCTLR_EL1 write ([`SysOp`]); and the maintenance operations as a closed
//! set for counting: one [`MaintOp`] per DC, IC and TLBI operation the kernel issues, its record
//! name (a field of the `maint-total` record).
//!
//! Two independent counts meet here. On the target every instruction wrapper of `crate::hw`
//! counts what it issues (`hw::maint_counts`); under QEMU a TCG plugin (host/insn-count) decodes
//! each executed instruction word with [`MaintOp::decode`]. The names are shared, the counting
//! is not: a wrapper that stops counting, or an instruction issued around the wrappers, makes
//! the two differ. The cache-model plugin decodes the same words with [`decode_sys`] too.
//!
//! Encodings (Arm ARM C5.3 "A64 system instructions for cache maintenance", C5.5 TLBI):
//! `SYS #op1, Cn, Cm, #op2, Xt` is `1101 0101 0000 1 op1 CRn CRm op2 Rt`; DC and IC are CRn = 7,
//! TLBI is CRn = 8 (FEAT_TLBIOS/RANGE included: every TLBI is one of the two TLBI classes).
//! `MSR <sysreg>, Xt` is `1101 0101 0001 o0 op1 CRn CRm op2 Rt` with op0 = 2 + o0.
//!
//! DC CVAP (op1 = 3, CRm = 12, op2 = 1; FEAT_DPB) and DC CVADP (CRm = 13; FEAT_DPB2) clean to the
//! Point of Persistence and of Deep Persistence, which the Arm ARM places at or beyond the Point
//! of Coherency: for a cache model they are cleans to the PoC ([`SysOp::clean_to_poc`]; QEMU
//! implements them as DC CVAC where no persistent memory backs the address, target/arm commit
//! 0d57b499 "Add support for DC CVAP & DC CVADP ins"). The kernel issues neither, so for
//! counting they stay [`MaintOp::DcOther`] (the `maint-total` record has no field for them).
//!
//! ```
//! use cachescope_arch::cache::ops::MaintOp;
//! assert_eq!(MaintOp::decode(0xd50b_7e20), Some(MaintOp::DcCivac)); // dc civac, x0
//! assert_eq!(MaintOp::decode(0xd503_201f), None); // nop
//! assert_eq!(MaintOp::DcCisw.name(), "dc_cisw");
//! ```

/// One maintenance operation, counted by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MaintOp {
    /// DC ISW: invalidate by set/way.
    DcIsw,
    /// DC CSW: clean by set/way.
    DcCsw,
    /// DC CISW: clean and invalidate by set/way.
    DcCisw,
    /// DC CIVAC: clean and invalidate by VA to PoC.
    DcCivac,
    /// DC CVAC: clean by VA to PoC.
    DcCvac,
    /// DC IVAC: invalidate by VA to PoC.
    DcIvac,
    /// DC CVAU: clean by VA to PoU.
    DcCvau,
    /// DC ZVA: zero a DCZID block.
    DcZva,
    /// IC IVAU: invalidate instruction cache by VA to PoU.
    IcIvau,
    /// IC IALLU: invalidate all instruction caches of this PE to PoU.
    IcIallu,
    /// IC IALLUIS: … of the Inner Shareable domain.
    IcIalluis,
    /// TLBI VMALLE1IS: every EL1&0 entry, Inner Shareable.
    TlbiVmalle1is,
    /// TLBI VAAE1IS: one VA, any ASID, Inner Shareable.
    TlbiVaae1is,
    /// Any other TLBI (the kernel issues none; the plugin counts them so none goes unseen).
    TlbiOther,
    /// Any other DC (CVAP, CVADP, the MTE tag operations, …; the kernel issues none).
    DcOther,
}

impl MaintOp {
    /// Number of operations.
    pub const COUNT: usize = 15;

    /// Every operation, in record order.
    pub const ALL: [MaintOp; Self::COUNT] = [
        MaintOp::DcIsw,
        MaintOp::DcCsw,
        MaintOp::DcCisw,
        MaintOp::DcCivac,
        MaintOp::DcCvac,
        MaintOp::DcIvac,
        MaintOp::DcCvau,
        MaintOp::DcZva,
        MaintOp::IcIvau,
        MaintOp::IcIallu,
        MaintOp::IcIalluis,
        MaintOp::TlbiVmalle1is,
        MaintOp::TlbiVaae1is,
        MaintOp::TlbiOther,
        MaintOp::DcOther,
    ];

    /// The operations a DC set/way walk issues.
    pub const SET_WAY: [MaintOp; 3] = [MaintOp::DcIsw, MaintOp::DcCsw, MaintOp::DcCisw];

    /// The name in records (the `maint-total` field): `dc_isw`, …, `tlbi_vaae1is`, `tlbi_other`.
    pub const fn name(self) -> &'static str {
        match self {
            MaintOp::DcIsw => "dc_isw",
            MaintOp::DcCsw => "dc_csw",
            MaintOp::DcCisw => "dc_cisw",
            MaintOp::DcCivac => "dc_civac",
            MaintOp::DcCvac => "dc_cvac",
            MaintOp::DcIvac => "dc_ivac",
            MaintOp::DcCvau => "dc_cvau",
            MaintOp::DcZva => "dc_zva",
            MaintOp::IcIvau => "ic_ivau",
            MaintOp::IcIallu => "ic_iallu",
            MaintOp::IcIalluis => "ic_ialluis",
            MaintOp::TlbiVmalle1is => "tlbi_vmalle1is",
            MaintOp::TlbiVaae1is => "tlbi_vaae1is",
            MaintOp::TlbiOther => "tlbi_other",
            MaintOp::DcOther => "dc_other",
        }
    }

    /// The operation named `name` (the inverse of [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<MaintOp> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Its index in [`ALL`](Self::ALL).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The operation an instruction word encodes, or `None` for any other instruction
    /// ([`decode_sys`], counted by [`SysOp::counted_as`]).
    pub const fn decode(word: u32) -> Option<MaintOp> {
        match decode_sys(word) {
            Some(s) => s.op.counted_as(),
            None => None,
        }
    }
}

/// A system instruction the tools act on (see the module docs for the encodings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SysOp {
    /// DC IVAC: invalidate by VA to PoC.
    DcIvac,
    /// DC CVAC: clean by VA to PoC.
    DcCvac,
    /// DC CVAU: clean by VA to PoU.
    DcCvau,
    /// DC CIVAC: clean and invalidate by VA to PoC.
    DcCivac,
    /// DC CVAP: clean by VA to the Point of Persistence (at or beyond the PoC).
    DcCvap,
    /// DC CVADP: clean by VA to the Point of Deep Persistence (at or beyond the PoC).
    DcCvadp,
    /// DC ISW: invalidate by set/way.
    DcIsw,
    /// DC CSW: clean by set/way.
    DcCsw,
    /// DC CISW: clean and invalidate by set/way.
    DcCisw,
    /// DC ZVA: zero a DCZID block.
    DcZva,
    /// Any other DC (the MTE tag operations, GVA/GZVA, …).
    DcOther,
    /// IC IVAU: invalidate instruction cache by VA to PoU.
    IcIvau,
    /// IC IALLU: this PE's instruction caches.
    IcIallu,
    /// IC IALLUIS: … of the Inner Shareable domain.
    IcIalluis,
    /// TLBI VMALLE1IS.
    TlbiVmalle1is,
    /// TLBI VAAE1IS.
    TlbiVaae1is,
    /// Any other TLBI.
    TlbiOther,
    /// MSR SCTLR_EL1, Xt.
    MsrSctlrEl1,
}

/// A decoded system instruction: the operation and its register (`Rt`; 31 = XZR).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SysInsn {
    /// What it does.
    pub op: SysOp,
    /// Its operand register.
    pub rt: u8,
}

/// Decodes one instruction word: a DC, IC or TLBI (SYS, op0 = 1) or an MSR to SCTLR_EL1; `None`
/// for any other instruction. The one decoder of these for the kernel's tools (host/insn-count
/// through [`MaintOp::decode`], the cache-model plugin).
pub const fn decode_sys(word: u32) -> Option<SysInsn> {
    let rt = (word & 31) as u8;
    // MSR SCTLR_EL1, Xt: op0 = 3 (o0 = 1), op1 = 0, CRn = 1, CRm = 0, op2 = 0.
    if word & 0xffff_ffe0 == 0xd518_1000 {
        return Some(SysInsn { op: SysOp::MsrSctlrEl1, rt });
    }
    // SYS (L = 0, op0 = 0b01): 1101 0101 0000 1 op1 CRn CRm op2 Rt.
    if word & 0xfff8_0000 != 0xd508_0000 {
        return None;
    }
    let op2 = (word >> 5) & 7;
    let crm = (word >> 8) & 15;
    let crn = (word >> 12) & 15;
    let op1 = (word >> 16) & 7;
    let op = match (op1, crn, crm, op2) {
        (0, 7, 6, 2) => SysOp::DcIsw,
        (0, 7, 10, 2) => SysOp::DcCsw,
        (0, 7, 14, 2) => SysOp::DcCisw,
        (3, 7, 14, 1) => SysOp::DcCivac,
        (3, 7, 10, 1) => SysOp::DcCvac,
        (3, 7, 12, 1) => SysOp::DcCvap,
        (3, 7, 13, 1) => SysOp::DcCvadp,
        (0, 7, 6, 1) => SysOp::DcIvac,
        (3, 7, 11, 1) => SysOp::DcCvau,
        (3, 7, 4, 1) => SysOp::DcZva,
        (3, 7, 5, 1) => SysOp::IcIvau,
        // IC IALLU / IALLUIS take no register: Rt is 31.
        (0, 7, 5, 0) if rt == 31 => SysOp::IcIallu,
        (0, 7, 1, 0) if rt == 31 => SysOp::IcIalluis,
        (0, 8, 3, 0) if rt == 31 => SysOp::TlbiVmalle1is,
        (0, 8, 3, 3) => SysOp::TlbiVaae1is,
        (_, 8, _, _) => SysOp::TlbiOther,
        // The other DC operations (CRm 4, 6, 10–14): the MTE tag forms, GVA/GZVA.
        // CRm 1 and 5 are IC, 8 and 9 AT, 3 the prediction restrictions.
        (_, 7, 4 | 6 | 10..=14, _) => SysOp::DcOther,
        _ => return None,
    };
    Some(SysInsn { op, rt })
}

impl SysOp {
    /// The operation it is counted as (`maint-total`), `None` for the SCTLR write.
    pub const fn counted_as(self) -> Option<MaintOp> {
        Some(match self {
            SysOp::DcIvac => MaintOp::DcIvac,
            SysOp::DcCvac => MaintOp::DcCvac,
            SysOp::DcCvau => MaintOp::DcCvau,
            SysOp::DcCivac => MaintOp::DcCivac,
            SysOp::DcCvap | SysOp::DcCvadp | SysOp::DcOther => MaintOp::DcOther,
            SysOp::DcIsw => MaintOp::DcIsw,
            SysOp::DcCsw => MaintOp::DcCsw,
            SysOp::DcCisw => MaintOp::DcCisw,
            SysOp::DcZva => MaintOp::DcZva,
            SysOp::IcIvau => MaintOp::IcIvau,
            SysOp::IcIallu => MaintOp::IcIallu,
            SysOp::IcIalluis => MaintOp::IcIalluis,
            SysOp::TlbiVmalle1is => MaintOp::TlbiVmalle1is,
            SysOp::TlbiVaae1is => MaintOp::TlbiVaae1is,
            SysOp::TlbiOther => MaintOp::TlbiOther,
            SysOp::MsrSctlrEl1 => return None,
        })
    }

    /// Whether it cleans a line by VA to (at least) the Point of Coherency: CVAC, CVAP, CVADP.
    pub const fn clean_to_poc(self) -> bool {
        matches!(self, SysOp::DcCvac | SysOp::DcCvap | SysOp::DcCvadp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SYS #op1, Cn, Cm, #op2, Xt`.
    const fn sys(op1: u32, crn: u32, crm: u32, op2: u32, rt: u32) -> u32 {
        0xd508_0000 | op1 << 16 | crn << 12 | crm << 8 | op2 << 5 | rt
    }

    /// Words as LLVM assembles them (`llvm-mc -triple=aarch64 -mattr=+v8.2a -show-encoding`).
    #[test]
    fn assembler_encodings() {
        let cases = [
            (0xd508_7640, "dc isw, x0"),
            (0xd508_7a41, "dc csw, x1"),
            (0xd508_7e42, "dc cisw, x2"),
            (0xd50b_7e23, "dc civac, x3"),
            (0xd50b_7a24, "dc cvac, x4"),
            (0xd508_7625, "dc ivac, x5"),
            (0xd50b_7b26, "dc cvau, x6"),
            (0xd50b_7427, "dc zva, x7"),
            (0xd50b_7528, "ic ivau, x8"),
            (0xd508_751f, "ic iallu"),
            (0xd508_711f, "ic ialluis"),
            (0xd508_831f, "tlbi vmalle1is"),
            (0xd508_8369, "tlbi vaae1is, x9"),
            (0xd508_871f, "tlbi vmalle1"),
            (0xd50b_7c2a, "dc cvap, x10"),
        ];
        let want = [
            Some(MaintOp::DcIsw),
            Some(MaintOp::DcCsw),
            Some(MaintOp::DcCisw),
            Some(MaintOp::DcCivac),
            Some(MaintOp::DcCvac),
            Some(MaintOp::DcIvac),
            Some(MaintOp::DcCvau),
            Some(MaintOp::DcZva),
            Some(MaintOp::IcIvau),
            Some(MaintOp::IcIallu),
            Some(MaintOp::IcIalluis),
            Some(MaintOp::TlbiVmalle1is),
            Some(MaintOp::TlbiVaae1is),
            Some(MaintOp::TlbiOther),
            Some(MaintOp::DcOther),
        ];
        for ((word, text), want) in cases.into_iter().zip(want) {
            assert_eq!(MaintOp::decode(word), want, "{text} ({word:#010x})");
        }
    }

    /// DC CVAP and DC CVADP (Arm ARM C5.3: op1 = 3, CRn = 7, CRm = 12 and 13, op2 = 1), as LLVM
    /// assembles them (`dc cvap, x7` is 0xd50b7c27 in its armv8.2a-persistent-memory test): both
    /// are cleans to the PoC for a model, counted as `dc_other`.
    #[test]
    fn persistence_cleans_are_cleans_to_the_poc() {
        assert_eq!(sys(3, 7, 12, 1, 7), 0xd50b_7c27);
        assert_eq!(decode_sys(0xd50b_7c27), Some(SysInsn { op: SysOp::DcCvap, rt: 7 }), "dc cvap, x7");
        assert_eq!(decode_sys(0xd50b_7d28), Some(SysInsn { op: SysOp::DcCvadp, rt: 8 }), "dc cvadp, x8");
        for op in [SysOp::DcCvac, SysOp::DcCvap, SysOp::DcCvadp] {
            assert!(op.clean_to_poc(), "{op:?}");
        }
        for op in [SysOp::DcCivac, SysOp::DcCvau, SysOp::DcIvac, SysOp::DcOther] {
            assert!(!op.clean_to_poc(), "{op:?}");
        }
        assert_eq!(MaintOp::decode(0xd50b_7c27), Some(MaintOp::DcOther));
        assert_eq!(MaintOp::decode(0xd50b_7d28), Some(MaintOp::DcOther));
    }

    #[test]
    fn sctlr_writes_decode_but_are_not_maintenance() {
        assert_eq!(decode_sys(0xd518_1003), Some(SysInsn { op: SysOp::MsrSctlrEl1, rt: 3 }), "msr sctlr_el1, x3");
        assert_eq!(SysOp::MsrSctlrEl1.counted_as(), None);
        assert_eq!(decode_sys(0xd538_1000), None, "mrs x0, sctlr_el1");
    }

    #[test]
    fn not_maintenance() {
        for word in [
            0xd503_201f, // nop
            0xd503_3f9f, // dsb sy
            0xd503_3fdf, // isb
            crate::marker::MARKER_ENCODING,
            0xd518_1000,        // msr sctlr_el1, x0 (decoded by decode_sys, not counted)
            0xd538_0000,        // mrs x0, midr_el1
            0xd508_7800,        // at s1e1r, x0
            sys(0, 7, 5, 0, 3), // IC IALLU with a register: unallocated
            sys(0, 1, 0, 0, 0), // some other SYS
        ] {
            assert_eq!(MaintOp::decode(word), None, "{word:#010x}");
        }
    }

    #[test]
    fn every_op_has_one_name_and_one_index() {
        for (i, op) in MaintOp::ALL.into_iter().enumerate() {
            assert_eq!(op.index(), i);
            assert_eq!(MaintOp::from_name(op.name()), Some(op));
        }
        assert_eq!(MaintOp::from_name("dc_nothing"), None);
        // The kernel's own operations decode back to themselves (the encodings a wrapper uses).
        let own = [
            (sys(0, 7, 6, 2, 0), MaintOp::DcIsw),
            (sys(0, 7, 10, 2, 0), MaintOp::DcCsw),
            (sys(0, 7, 14, 2, 0), MaintOp::DcCisw),
            (sys(3, 7, 14, 1, 0), MaintOp::DcCivac),
            (sys(3, 7, 10, 1, 0), MaintOp::DcCvac),
            (sys(0, 7, 6, 1, 0), MaintOp::DcIvac),
            (sys(3, 7, 11, 1, 0), MaintOp::DcCvau),
            (sys(3, 7, 4, 1, 0), MaintOp::DcZva),
            (sys(3, 7, 5, 1, 0), MaintOp::IcIvau),
            (sys(0, 7, 5, 0, 31), MaintOp::IcIallu),
            (sys(0, 7, 1, 0, 31), MaintOp::IcIalluis),
            (sys(0, 8, 3, 0, 31), MaintOp::TlbiVmalle1is),
            (sys(0, 8, 3, 3, 0), MaintOp::TlbiVaae1is),
        ];
        for (word, op) in own {
            assert_eq!(MaintOp::decode(word), Some(op), "{}", op.name());
        }
    }
}
