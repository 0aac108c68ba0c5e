//! The cache model's hazard kinds: one list for the kernel (`expect-hazard` records), the
//! plugin's sanitizer (`hazard` and `hazard-total` records) and the host tools that read them
//! (docs/cache-model.md, "Sanitizer"). Pure.

/// A cache-maintenance hazard kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HazardKind {
    /// Non-cacheable/Device read of a dirty line (a missing clean to PoC).
    StaleReadByDevice = 0,
    /// Invalidate (without clean) of a dirty line: its data is discarded.
    LostWrite = 1,
    /// Cacheable read hitting a copy older than memory (a missing invalidate).
    StaleReadByCpu = 2,
    /// Execution of code written through the D-side without the required maintenance.
    StaleInstruction = 3,
    /// Lines of a declared range that no by-VA operation reached.
    MaintenanceGap = 4,
    /// A reader that bypasses a cache (MMU off, Non-cacheable, Device; or an instruction fetch)
    /// shares a line with a writer on the other side of that cache, and the bytes it reads are
    /// not the bytes written: nothing stale is read, but the line is one maintenance slip away
    /// from it ([`Severity::Advisory`]).
    SharedLine = 5,
    /// Two cores whose shareability domains for the line do not include each other cache it at
    /// once: a copy made through a Non-shareable mapping while another core holds one, or the
    /// reverse. The hardware keeps no coherence between them (Arm ARM DDI 0487, B2.7), so a
    /// write by either may never reach the other.
    NonShareableShared = 6,
}

/// The access that exposed a hazard: the `access` field of `hazard` records, written by the
/// plugin's sanitizer and read by the host tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HazardAccess {
    /// A cacheable data read.
    Read = 0,
    /// A data write.
    Write = 1,
    /// An instruction fetch.
    Fetch = 2,
    /// A Normal Non-cacheable read (or one with the cache off).
    NcRead = 3,
    /// A Device read.
    DeviceRead = 4,
    /// DC IVAC (invalidate by VA without clean).
    DcIvac = 5,
    /// DC ISW (invalidate by set/way without clean).
    DcIsw = 6,
    /// The end of a declared maintenance range (a `maintenance-gap`'s line no operation reached).
    MaintEnd = 7,
}

impl HazardAccess {
    /// Every access, in discriminant order.
    pub const ALL: [HazardAccess; 8] =
        [Self::Read, Self::Write, Self::Fetch, Self::NcRead, Self::DeviceRead, Self::DcIvac, Self::DcIsw, Self::MaintEnd];

    /// The `access` field of `hazard` records.
    pub const fn name(self) -> &'static str {
        ["read", "write", "fetch", "nc-read", "device-read", "dc-ivac", "dc-isw", "maint-end"][self as usize]
    }

    /// The access of a record's `access` field.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The access in words, for a human line ("the non-cacheable read", "the DC IVAC").
    pub const fn describe(self) -> &'static str {
        ["read", "write", "fetch", "non-cacheable read", "Device read", "DC IVAC", "DC ISW", "maintenance range's end"][self as usize]
    }
}

/// The earlier access that made a line hazardous: the `cause` field of `hazard` records, written
/// by the plugin's sanitizer and read by the host tools (docs/cache-model.md, "Sanitizer").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HazardCause {
    /// A cacheable write that dirtied the line (its PC, when the model saw it).
    Write = 0,
    /// A Normal Non-cacheable write (or one with the cache off) behind a cached copy.
    NcWrite = 1,
    /// A Device write behind a cached copy.
    DeviceWrite = 2,
    /// A write behind a cached copy whose kind and PC the model no longer holds.
    WriteBehind = 3,
    /// A write since the line's last IC invalidate (code written, no IC IVAU/IALLU since).
    WriteWithoutIcInvalidate = 4,
    /// A by-VA maintenance loop (a `maintenance-gap`'s loop, its last PC).
    DcByVa = 5,
    /// Another core's copy was filled through a Non-shareable mapping (that fill's PC).
    NonShareableCopy = 6,
    /// The request itself is Non-shareable while another core holds a copy.
    CopyElsewhere = 7,
    /// Code written, then an IC IVAU that left copies of the line at other VIPT L1I indexes
    /// (cache-model rule 21): a fetch through another alias runs the old code.
    WriteIvauOtherAlias = 8,
}

impl HazardCause {
    /// Every cause, in discriminant order.
    pub const ALL: [HazardCause; 9] = [
        Self::Write,
        Self::NcWrite,
        Self::DeviceWrite,
        Self::WriteBehind,
        Self::WriteWithoutIcInvalidate,
        Self::DcByVa,
        Self::NonShareableCopy,
        Self::CopyElsewhere,
        Self::WriteIvauOtherAlias,
    ];

    /// The `cause` field of `hazard` records.
    pub const fn name(self) -> &'static str {
        [
            "write",
            "nc-write",
            "device-write",
            "write-behind",
            "write-without-ic-invalidate",
            "dc-by-va",
            "non-shareable-copy",
            "copy-elsewhere",
            "write-ivau-other-alias",
        ][self as usize]
    }

    /// The cause a record's `cause` field names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A core's documented deviation from the architecture that the cache model applies in silicon
/// mode (the plugin's `impl=silicon`, docs/cache-model.md "Silicon mode"). A mistake such a rule
/// hides on that core is still reported by the sanitizer, with the rule as its `masked_by`
/// note: the silicon that masks it today makes it a latent bug on the next core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SiliconRule {
    /// DC IVAC is executed as DC CIVAC (Cortex-A76 TRM 100798_0300_00, A6.2.4): a dirty line is
    /// written back before it is invalidated, so the invalidate loses no data.
    IvacAsCivac = 0,
    /// DC ISW also cleans (Cortex-A76 TRM A6.2.4): set/way invalidation is a clean and invalidate.
    IswCleans = 1,
    /// Inner Write-Through memory is downgraded to Non-cacheable (Cortex-A76 TRM A7.3).
    WtAsNc = 2,
    /// Write-streaming mode (Cortex-A76 TRM A6.2.6): after a run of full-line stores, stores
    /// that miss L1D are written to L2 instead of starting a linefill.
    WriteStreaming = 3,
}

impl SiliconRule {
    /// Every rule, in discriminant order.
    pub const ALL: [SiliconRule; 4] = [Self::IvacAsCivac, Self::IswCleans, Self::WtAsNc, Self::WriteStreaming];

    /// The rule's name: the `masked_by` field of `hazard` records and the `deviations` field of
    /// `model-profile`.
    pub const fn name(self) -> &'static str {
        ["ivac-as-civac", "isw-cleans", "wt-as-nc", "write-streaming"][self as usize]
    }

    /// The rule a record field names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The rule in words, for a human line.
    pub const fn describe(self) -> &'static str {
        [
            "DC IVAC executed as DC CIVAC",
            "DC ISW also cleans",
            "Inner Write-Through treated as Non-cacheable",
            "write-streaming mode (no linefill for stores after a run of full-line stores)",
        ][self as usize]
    }
}

/// How much a hazard kind weighs in the sanitizer's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Listed in the verdict and the digest but never fails a phase, unless the phase declared
    /// a hazard of that kind (then it must be exactly as declared, like any kind).
    Advisory,
    /// Data or code was (or may be) wrong: fails a phase that did not declare it.
    Error,
}

impl HazardKind {
    /// Every kind, in record order (the index is the discriminant).
    pub const ALL: [HazardKind; 7] = [
        Self::StaleReadByDevice,
        Self::LostWrite,
        Self::StaleReadByCpu,
        Self::StaleInstruction,
        Self::MaintenanceGap,
        Self::SharedLine,
        Self::NonShareableShared,
    ];

    /// The `kind` field of `hazard` and `expect-hazard` records.
    pub const fn name(self) -> &'static str {
        [
            "stale-read-by-device",
            "lost-write",
            "stale-read-by-cpu",
            "stale-instruction",
            "maintenance-gap",
            "shared-line",
            "non-shareable-shared",
        ][self as usize]
    }

    /// The kind's count field in the `hazard-total` record.
    pub const fn total_field(self) -> &'static str {
        [
            "stale_read_by_device",
            "lost_write",
            "stale_read_by_cpu",
            "stale_instruction",
            "maintenance_gap",
            "shared_line",
            "non_shareable_shared",
        ][self as usize]
    }

    /// The kind's weight in the verdict: `shared-line` is advisory, every other kind an error.
    pub const fn severity(self) -> Severity {
        match self {
            Self::SharedLine => Severity::Advisory,
            _ => Severity::Error,
        }
    }

    /// The kind a record's `kind` field names.
    pub fn from_name(name: &str) -> Option<HazardKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_total_fields_follow_them() {
        for (i, k) in HazardKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
            assert_eq!(HazardKind::from_name(k.name()), Some(k));
            assert_eq!(k.total_field().replace('_', "-"), k.name());
        }
        assert_eq!(HazardKind::from_name("stale"), None);
    }

    #[test]
    fn only_shared_line_is_advisory() {
        for k in HazardKind::ALL {
            assert_eq!(k.severity() == Severity::Advisory, k == HazardKind::SharedLine, "{}", k.name());
        }
    }

    #[test]
    fn the_record_contract_names_every_kind() {
        let field = |kind: &crate::record::RecordKind, name: &str| kind.fields.iter().find(|f| f.name == name).map(|f| f.doc);
        let doc = field(&crate::record::HAZARD, "kind").expect("hazard.kind");
        for k in HazardKind::ALL {
            assert!(doc.contains(k.name()), "{doc}");
            assert!(field(&crate::record::HAZARD_TOTAL, k.total_field()).is_some(), "{}", k.total_field());
        }
    }

    #[test]
    fn cause_names_round_trip_and_the_record_contract_names_them() {
        let doc = crate::record::HAZARD.fields.iter().find(|f| f.name == "cause").expect("hazard.cause").doc;
        for (i, c) in HazardCause::ALL.into_iter().enumerate() {
            assert_eq!(c as usize, i);
            assert_eq!(HazardCause::from_name(c.name()), Some(c));
            assert!(doc.contains(c.name()), "{doc}");
        }
        assert_eq!(HazardCause::from_name("nc_write"), None);
    }

    #[test]
    fn silicon_rule_names_round_trip() {
        for (i, r) in SiliconRule::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
            assert_eq!(SiliconRule::from_name(r.name()), Some(r));
            assert!(!r.describe().is_empty());
        }
        assert_eq!(SiliconRule::from_name("ivac"), None);
        let doc = crate::record::HAZARD.fields.iter().find(|f| f.name == "masked_by").expect("hazard.masked_by").doc;
        for r in SiliconRule::ALL {
            assert!(doc.contains(r.name()), "{doc}");
        }
    }

    #[test]
    fn access_names_round_trip_and_are_distinct() {
        for (i, a) in HazardAccess::ALL.into_iter().enumerate() {
            assert_eq!(a as usize, i);
            assert_eq!(HazardAccess::from_name(a.name()), Some(a));
            assert!(!a.describe().is_empty());
        }
        assert_eq!(HazardAccess::from_name("nc_read"), None);
        assert_eq!(HazardAccess::NcRead.name(), "nc-read");
    }
}
