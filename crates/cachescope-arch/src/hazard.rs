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
}

impl HazardKind {
    /// Every kind, in record order (the index is the discriminant).
    pub const ALL: [HazardKind; 5] =
        [Self::StaleReadByDevice, Self::LostWrite, Self::StaleReadByCpu, Self::StaleInstruction, Self::MaintenanceGap];

    /// The `kind` field of `hazard` and `expect-hazard` records.
    pub const fn name(self) -> &'static str {
        ["stale-read-by-device", "lost-write", "stale-read-by-cpu", "stale-instruction", "maintenance-gap"][self as usize]
    }

    /// The kind's count field in the `hazard-total` record.
    pub const fn total_field(self) -> &'static str {
        ["stale_read_by_device", "lost_write", "stale_read_by_cpu", "stale_instruction", "maintenance_gap"][self as usize]
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
    fn the_record_contract_names_every_kind() {
        let field = |kind: &crate::record::RecordKind, name: &str| kind.fields.iter().find(|f| f.name == name).map(|f| f.doc);
        let doc = field(&crate::record::HAZARD, "kind").expect("hazard.kind");
        for k in HazardKind::ALL {
            assert!(doc.contains(k.name()), "{doc}");
            assert!(field(&crate::record::HAZARD_TOTAL, k.total_field()).is_some(), "{}", k.total_field());
        }
    }
}
