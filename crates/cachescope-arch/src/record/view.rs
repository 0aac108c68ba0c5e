//! The host's side of the contract: a record read through its kind's generated view
//! ([`super::MetricView`], [`super::ModelView`], …), one accessor per declared field with the
//! field's type, over any JSON object that implements [`Object`].
//!
//! The library parses no JSON: the host implements [`Object`] for its own record type (a
//! `serde_json` object in the report tool) and reads `view.prefetch_hits()`, never a key
//! spelled out. Every accessor returns `None` when the field is absent, `null` or of another
//! type (the contract check reports those; a reader of old logs meets absent fields).

/// A JSON object as the views read it: one lookup per JSON type of the contract.
pub trait Object {
    /// What a [`super::Ty::UIntList`] field is in this representation.
    type List: ?Sized;
    /// What a [`super::Ty::Params`] field is in this representation.
    type Map: ?Sized;
    /// A string field.
    fn str(&self, key: &str) -> Option<&str>;
    /// A non-negative integer field.
    fn uint(&self, key: &str) -> Option<u64>;
    /// A number field.
    fn num(&self, key: &str) -> Option<f64>;
    /// A `"0x…"` field as its value.
    fn hex(&self, key: &str) -> Option<u64>;
    /// A boolean field.
    fn bool(&self, key: &str) -> Option<bool>;
    /// An array field.
    fn list(&self, key: &str) -> Option<&Self::List>;
    /// An object field.
    fn map(&self, key: &str) -> Option<&Self::Map>;
}

/// What every generated view is: a record of one kind, read through typed accessors.
pub trait View<'a, O: Object + ?Sized + 'a>: Sized {
    /// The kind it reads.
    const KIND: &'static super::RecordKind;

    /// The view of `obj` when it is a record of [`View::KIND`] (its `"record"` field).
    fn of(obj: &'a O) -> Option<Self>;
}
