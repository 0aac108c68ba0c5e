//! The maintenance instructions as a closed set: one [`MaintOp`] per DC, IC and TLBI operation
//! the kernel issues, its record name (a field of the `maint-total` record) and its encoding.
//!
//! Two independent counts meet here. On the target every instruction wrapper of `crate::hw`
//! counts what it issues (`hw::maint_counts`); under QEMU a TCG plugin (host/insn-count) decodes
//! each executed instruction word with [`MaintOp::decode`]. The names are shared, the counting
//! is not: a wrapper that stops counting, or an instruction issued around the wrappers, makes
//! the two differ.
//!
//! Encodings (Arm ARM C5.3 "A64 system instructions for cache maintenance", C5.5 TLBI):
//! `SYS #op1, Cn, Cm, #op2, Xt` is `1101 0101 0000 1 op1 CRn CRm op2 Rt`; DC and IC are CRn = 7,
//! TLBI is CRn = 8 (FEAT_TLBIOS/RANGE included: every TLBI is one of the two TLBI classes).
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

    /// The operation an instruction word encodes, or `None` for any other instruction.
    pub const fn decode(word: u32) -> Option<MaintOp> {
        // SYS (L = 0, op0 = 0b01): 1101 0101 0000 1 op1 CRn CRm op2 Rt.
        if word & 0xfff8_0000 != 0xd508_0000 {
            return None;
        }
        let op2 = (word >> 5) & 7;
        let crm = (word >> 8) & 15;
        let crn = (word >> 12) & 15;
        let op1 = (word >> 16) & 7;
        let rt = word & 31;
        Some(match (op1, crn, crm, op2) {
            (0, 7, 6, 2) => MaintOp::DcIsw,
            (0, 7, 10, 2) => MaintOp::DcCsw,
            (0, 7, 14, 2) => MaintOp::DcCisw,
            (3, 7, 14, 1) => MaintOp::DcCivac,
            (3, 7, 10, 1) => MaintOp::DcCvac,
            (0, 7, 6, 1) => MaintOp::DcIvac,
            (3, 7, 11, 1) => MaintOp::DcCvau,
            (3, 7, 4, 1) => MaintOp::DcZva,
            (3, 7, 5, 1) => MaintOp::IcIvau,
            // IC IALLU / IALLUIS take no register: Rt is 31.
            (0, 7, 5, 0) if rt == 31 => MaintOp::IcIallu,
            (0, 7, 1, 0) if rt == 31 => MaintOp::IcIalluis,
            (0, 8, 3, 0) if rt == 31 => MaintOp::TlbiVmalle1is,
            (0, 8, 3, 3) => MaintOp::TlbiVaae1is,
            (_, 8, _, _) => MaintOp::TlbiOther,
            // The other DC operations (CRm 4, 6, 10–14): CVAP, CVADP, the MTE tag forms, GVA/GZVA.
            // CRm 1 and 5 are IC, 8 and 9 AT, 3 the prediction restrictions.
            (_, 7, 4 | 6 | 10..=14, _) => MaintOp::DcOther,
            _ => return None,
        })
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

    #[test]
    fn not_maintenance() {
        for word in [
            0xd503_201f,        // nop
            0xd503_3f9f,        // dsb sy
            0xd503_3fdf,        // isb
            0xd503_2fff,        // hint #0x7f (the cache-model marker)
            0xd518_1000,        // msr sctlr_el1, x0
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
