//! The cache model's warning causes: the `cause` of a `model-warning` record, one word a check can
//! allow (an expectation file's `allow_warnings`, `cachescope-xtask observe --expect`). One list
//! for the plugin that writes them and the host tools that read them. Pure.

/// What a `model-warning` is about, when it is about something a check may accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WarningCause {
    /// A by-VA operand or access the model could not translate (no table walk, no learned
    /// page): it was not treated as a PA, and counts say how often.
    UntranslatedVa = 0,
    /// The core that ran some code is not known (several vCPUs under round-robin TCG): hazards
    /// raised there were counted, not reported.
    Attribution = 1,
}

impl WarningCause {
    /// Every cause, in declaration order (the index is the discriminant).
    pub const ALL: [WarningCause; 2] = [Self::UntranslatedVa, Self::Attribution];

    /// The `cause` field's value.
    pub const fn name(self) -> &'static str {
        ["untranslated-va", "attribution"][self as usize]
    }

    /// The cause a record's `cause` field names.
    pub fn from_name(name: &str) -> Option<WarningCause> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (i, c) in WarningCause::ALL.into_iter().enumerate() {
            assert_eq!(c as usize, i);
            assert_eq!(WarningCause::from_name(c.name()), Some(c));
        }
        assert_eq!(WarningCause::from_name("attributions"), None);
    }

    #[test]
    fn the_record_contract_names_every_cause() {
        let doc = crate::record::MODEL_WARNING.field("cause").expect("model-warning.cause").doc;
        for c in WarningCause::ALL {
            assert!(doc.contains(c.name()), "{doc}");
        }
    }
}
