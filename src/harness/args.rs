//! Kernel arguments: `key=value` words from the semihosting command line or `/chosen/bootargs`.
//!
//! Every accepted key is declared once, by the suite or benchmark that uses it ([`ArgSpec`]:
//! type, default, help); values are parsed once, into typed [`Value`]s. An unknown key or a
//! malformed value is an error that names the word (escaped and clipped, see [`Shown`]),
//! suggests the nearest key, and lists the accepted forms. Pure and host-tested.
//!
//! Code reads a value through a typed [`Key`], never through a string: [`typed_args!`] declares
//! a struct of keys together with its `ArgSpec` table, from one line per key, so the key's name
//! is a field (a misspelling does not compile) and its type follows from its kind and default
//! (a number with a literal default reads as `u64`, one with a computed default as
//! `Option<u64>`, a list as a slice).

use alloc::{string::String, vec::Vec};
use core::{fmt, marker::PhantomData};

/// What values a key accepts.
#[derive(Clone, Copy, Debug)]
pub enum ArgKind {
    /// One of a fixed set of words.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of names (validated later against the catalogue).
    NameList,
    /// A comma-separated list, each one of a fixed set of words.
    SubsetOf(&'static [&'static str]),
    /// An unsigned integer in `min..=max` (decimal, 0x hex, or K/M/G binary suffixes).
    Number {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A comma-separated list of numbers, each in `min..=max`.
    NumberList {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
}

/// A key's value when the command line does not give one.
#[derive(Clone, Copy, Debug)]
pub enum ArgDefault {
    /// Absent means "not given" (lists: everything; selections: none).
    Unset,
    /// This literal, parsed like a given value (a host test checks that it parses).
    Literal(&'static str),
    /// Computed at run time from the machine; the text says how (for the help).
    Computed(&'static str),
}

/// One accepted key.
#[derive(Clone, Copy, Debug)]
pub struct ArgSpec {
    /// The key (before `=`).
    pub key: &'static str,
    /// Accepted values.
    pub kind: ArgKind,
    /// The value when not given.
    pub default: ArgDefault,
    /// One line of help: what it selects (the default is printed from `default`).
    pub help: &'static str,
}

/// A parsed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// [`ArgKind::OneOf`].
    Word(&'static str),
    /// [`ArgKind::NameList`].
    Names(Vec<String>),
    /// [`ArgKind::SubsetOf`].
    Words(Vec<&'static str>),
    /// [`ArgKind::Number`].
    Number(u64),
    /// [`ArgKind::NumberList`].
    Numbers(Vec<u64>),
}

/// Why the command line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// A word that is not `key=value`.
    Malformed(String),
    /// A key nobody declared; with the nearest declared key, if one is close.
    UnknownKey {
        /// The key as given.
        key: String,
        /// A declared key within two edits.
        nearest: Option<&'static str>,
    },
    /// The same key twice.
    Duplicate(String),
    /// A value outside what the key accepts.
    BadValue {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// What was wrong.
        why: &'static str,
    },
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(w) => write!(f, "malformed argument '{}': expected key=value (or 'help')", Shown(w)),
            Self::UnknownKey { key, nearest: Some(n) } => write!(f, "unknown argument '{}' (did you mean '{n}'?)", Shown(key)),
            Self::UnknownKey { key, nearest: None } => write!(f, "unknown argument '{}'", Shown(key)),
            Self::Duplicate(k) => write!(f, "argument '{}' given twice", Shown(k)),
            Self::BadValue { key, value, why } => write!(f, "bad value '{}' for '{}': {why}", Shown(value), Shown(key)),
        }
    }
}

/// User input as it may be echoed in an error: control characters escaped (`\r`, `\u{1b}`), so
/// a log line stays one valid line, and at most 64 characters (then `…`).
pub struct Shown<'a>(pub &'a str);

/// User input echoed whole (the boot report's command line), control characters escaped.
pub struct Escaped<'a>(pub &'a str);

fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str, limit: usize) -> fmt::Result {
    for (i, c) in s.chars().enumerate() {
        if i == limit {
            return f.write_str("…");
        }
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            fmt::Write::write_char(f, c)?;
        }
    }
    Ok(())
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, self.0, 64)
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, self.0, usize::MAX)
    }
}

/// Edit distance (Levenshtein) of two short ASCII-ish strings, capped at `cap + 1`.
fn distance(a: &str, b: &str, cap: usize) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > cap {
        return cap + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = alloc::vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()].min(cap + 1)
}

/// The candidate nearest to `given` within two edits (or of which it is a prefix), if any.
pub fn nearest<'c>(given: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = if c.starts_with(given) && given.len() >= 3 { 1 } else { distance(given, c, 2) };
        if d <= 2 && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Parses an unsigned number: decimal or `0x` hex digits only, optional `K`/`M`/`G` (×1024ⁿ)
/// suffix. Signs, spaces and empty digit strings are refused.
pub fn parse_number(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let (digits, radix) = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (digits, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()?.checked_mul(mult)
}

/// Parses `value` as `spec` says.
fn parse_value(spec: &ArgSpec, value: &str) -> Result<Value, ArgError> {
    let bad = |why| ArgError::BadValue { key: spec.key.into(), value: value.into(), why };
    let number = |v: &str, min: u64, max: u64| {
        let n = parse_number(v).ok_or_else(|| bad("not a number (decimal, 0x hex, optional K/M/G)"))?;
        if n < min || n > max {
            return Err(bad("out of range"));
        }
        Ok(n)
    };
    Ok(match spec.kind {
        ArgKind::OneOf(words) => Value::Word(words.iter().find(|w| **w == value).ok_or_else(|| bad("not one of the accepted words"))?),
        ArgKind::NameList => {
            if value.split(',').any(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))) {
                return Err(bad("expected comma-separated names of [A-Za-z0-9._-]"));
            }
            Value::Names(value.split(',').map(String::from).collect())
        }
        ArgKind::SubsetOf(words) => Value::Words(
            value
                .split(',')
                .map(|n| words.iter().find(|w| **w == n).copied())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("a name in the list is not one of the accepted words"))?,
        ),
        ArgKind::Number { min, max } => Value::Number(number(value, min, max)?),
        ArgKind::NumberList { min, max } => Value::Numbers(value.split(',').map(|v| number(v, min, max)).collect::<Result<_, _>>()?),
    })
}

/// Parsed arguments: every given key and every key with a literal default, typed.
#[derive(Clone, Debug, Default)]
pub struct Args {
    values: Vec<(&'static str, Value)>,
    given: Vec<&'static str>,
}

impl Args {
    /// Parses whitespace-separated words against `specs` (which must have distinct keys), then
    /// fills in the literal defaults of the keys not given.
    pub fn parse(cmdline: &str, specs: &[ArgSpec]) -> Result<Self, ArgError> {
        let mut args = Args::default();
        for word in cmdline.split_whitespace() {
            let (key, value) = word.split_once('=').ok_or_else(|| ArgError::Malformed(word.into()))?;
            if key.is_empty() || value.is_empty() {
                return Err(ArgError::Malformed(word.into()));
            }
            let spec = specs
                .iter()
                .find(|s| s.key == key)
                .ok_or_else(|| ArgError::UnknownKey { key: key.into(), nearest: nearest(key, specs.iter().map(|s| s.key)) })?;
            if args.given.contains(&spec.key) {
                return Err(ArgError::Duplicate(key.into()));
            }
            args.values.push((spec.key, parse_value(spec, value)?));
            args.given.push(spec.key);
        }
        for spec in specs {
            if let (ArgDefault::Literal(v), false) = (spec.default, args.given.contains(&spec.key)) {
                args.values.push((spec.key, parse_value(spec, v)?));
            }
        }
        Ok(args)
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// True when the command line gave `key`.
    pub(super) fn given(&self, key: &str) -> bool {
        self.given.contains(&key)
    }

    /// The keys the command line gave, in order.
    pub fn given_keys(&self) -> &[&'static str] {
        &self.given
    }

    /// A number: the given value, else the literal default (0 for an undeclared key). Tests
    /// only: code reads a typed [`Key`].
    #[cfg(test)]
    pub(super) fn number(&self, key: &str) -> u64 {
        self.number_opt(key).unwrap_or(0)
    }

    /// A number with a computed default: the given value, else `computed` (tests only).
    #[cfg(test)]
    pub(super) fn number_or(&self, key: &str, computed: u64) -> u64 {
        self.number_opt(key).unwrap_or(computed)
    }

    fn number_opt(&self, key: &str) -> Option<u64> {
        match self.value(key)? {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// A list of numbers, if given (or defaulted).
    pub(super) fn numbers(&self, key: &str) -> Option<&[u64]> {
        match self.value(key)? {
            Value::Numbers(v) => Some(v),
            _ => None,
        }
    }

    /// A one-of word, if given (or defaulted).
    pub(super) fn word(&self, key: &str) -> Option<&'static str> {
        match self.value(key)? {
            Value::Word(w) => Some(w),
            _ => None,
        }
    }

    /// A list of names or words (empty if absent).
    pub(super) fn list(&self, key: &str) -> Vec<&str> {
        match self.value(key) {
            Some(Value::Names(v)) => v.iter().map(String::as_str).collect(),
            Some(Value::Words(v)) => v.clone(),
            _ => Vec::new(),
        }
    }

    /// True when no argument was given.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// The value of a declared key, typed by its kind and default (see [`Read`]).
    pub fn get<T: Read>(&self, key: Key<T>) -> T::Out<'_> {
        T::read(self, key.key)
    }

    /// True when the command line gave the key.
    pub fn has<T>(&self, key: Key<T>) -> bool {
        self.given(key.key)
    }
}

/// A declared key, typed: only [`typed_args!`] makes one, from the same line that declares the
/// key's [`ArgSpec`], so every `Key` names a declared key and reads it as its kind parses it.
pub struct Key<T> {
    key: &'static str,
    _kind: PhantomData<T>,
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Key<T> {}

impl<T> Key<T> {
    /// The key of an `ArgSpec` declared beside it (for [`typed_args!`] only).
    #[doc(hidden)]
    pub const fn declared(key: &'static str) -> Self {
        Key { key, _kind: PhantomData }
    }

    /// The key as written on the command line.
    pub const fn name(self) -> &'static str {
        self.key
    }
}

/// The type tags of [`Key`]: an [`ArgKind`] and an [`ArgDefault`], by name.
pub mod tag {
    use core::marker::PhantomData;

    /// [`ArgDefault::Unset`](super::ArgDefault::Unset).
    pub struct Unset;
    /// [`ArgDefault::Literal`](super::ArgDefault::Literal): the value is always there.
    pub struct Literal;
    /// [`ArgDefault::Computed`](super::ArgDefault::Computed): absent unless given.
    pub struct Computed;
    /// [`ArgKind::OneOf`](super::ArgKind::OneOf).
    pub struct OneOf<D>(PhantomData<D>);
    /// [`ArgKind::NameList`](super::ArgKind::NameList).
    pub struct NameList<D>(PhantomData<D>);
    /// [`ArgKind::SubsetOf`](super::ArgKind::SubsetOf).
    pub struct SubsetOf<D>(PhantomData<D>);
    /// [`ArgKind::Number`](super::ArgKind::Number).
    pub struct Number<D>(PhantomData<D>);
    /// [`ArgKind::NumberList`](super::ArgKind::NumberList).
    pub struct NumberList<D>(PhantomData<D>);
}

/// How a key of one kind and default reads from parsed [`Args`].
pub trait Read {
    /// The value's type.
    type Out<'a>;
    /// Reads `key` (declared with this kind and default, so parsed as it says).
    fn read<'a>(args: &'a Args, key: &'static str) -> Self::Out<'a>;
}

/// A number with a literal default: always there.
impl Read for tag::Number<tag::Literal> {
    type Out<'a> = u64;
    fn read(args: &Args, key: &'static str) -> u64 {
        // Parse filled in the literal default of every declared key not given.
        args.number_opt(key).unwrap_or(0)
    }
}

/// A number with a computed default: the given value, else `None` (the caller computes it).
impl Read for tag::Number<tag::Computed> {
    type Out<'a> = Option<u64>;
    fn read(args: &Args, key: &'static str) -> Option<u64> {
        args.number_opt(key)
    }
}

/// A list of numbers: given or defaulted, else `None`.
impl<D> Read for tag::NumberList<D> {
    type Out<'a> = Option<&'a [u64]>;
    fn read<'a>(args: &'a Args, key: &'static str) -> Option<&'a [u64]> {
        args.numbers(key)
    }
}

/// A one-of word with a literal default: always there.
impl Read for tag::OneOf<tag::Literal> {
    type Out<'a> = &'static str;
    fn read(args: &Args, key: &'static str) -> &'static str {
        args.word(key).unwrap_or("")
    }
}

/// A subset of words: empty when absent.
impl<D> Read for tag::SubsetOf<D> {
    type Out<'a> = Vec<&'a str>;
    fn read<'a>(args: &'a Args, key: &'static str) -> Vec<&'a str> {
        args.list(key)
    }
}

/// A list of names: empty when absent.
impl<D> Read for tag::NameList<D> {
    type Out<'a> = Vec<&'a str>;
    fn read<'a>(args: &'a Args, key: &'static str) -> Vec<&'a str> {
        args.list(key)
    }
}

/// Declares a struct of typed [`Key`]s, a constant of it and its [`ArgSpec`] table, one line per
/// key: `name: Kind{…}|Kind(…)|Kind, Default(…)|Default, "help";`. The field is the key (its
/// name on the command line), its type follows from the kind and the default.
///
/// ```ignore
/// typed_args! {
///     /// The latency sweep's arguments.
///     pub struct LatencyArgs = LATENCY, LATENCY_ARGS {
///         max_size: Number { min: 4096, max: 1 << 30 }, Computed("4x the largest cache"), "largest working set";
///     }
/// }
/// let max = ctx.args.get(LATENCY.max_size).unwrap_or(computed);
/// ```
#[macro_export]
macro_rules! typed_args {
    (
        $(#[$m:meta])*
        $vis:vis struct $name:ident = $konst:ident, $table:ident {
            $( $field:ident: $kind:ident $(($($kp:tt)*))? $({$($kb:tt)*})?, $def:ident $(($dv:expr))?, $help:literal; )*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy)]
        $vis struct $name {
            $(
                #[doc = $help]
                pub $field: $crate::harness::args::Key<$crate::harness::args::tag::$kind<$crate::harness::args::tag::$def>>,
            )*
        }

        #[doc = concat!("The keys of [`", stringify!($name), "`].")]
        $vis const $konst: $name = $name { $( $field: $crate::harness::args::Key::declared(stringify!($field)), )* };

        #[doc = concat!("The argument table of [`", stringify!($name), "`]: type, default and help of each key.")]
        $vis const $table: &[$crate::harness::args::ArgSpec] = &[
            $(
                $crate::harness::args::ArgSpec {
                    key: stringify!($field),
                    kind: $crate::harness::args::ArgKind::$kind $(($($kp)*))? $({$($kb)*})?,
                    default: $crate::harness::args::ArgDefault::$def $(($dv))?,
                    help: $help,
                },
            )*
        ];
    };
}
pub use crate::typed_args;

/// True when the command line asks for help (`help`, `--help` or `-h` as a word).
pub fn wants_help(cmdline: &str) -> bool {
    cmdline.split_whitespace().any(|w| matches!(w, "help" | "--help" | "-h"))
}

/// Writes the accepted forms, one per line, each prefixed by `prefix`.
pub fn write_usage(out: &mut dyn fmt::Write, specs: &[ArgSpec], prefix: &str) -> fmt::Result {
    for s in specs {
        match s.kind {
            ArgKind::OneOf(words) => {
                write!(out, "{prefix}  {}=", s.key)?;
                for (i, w) in words.iter().enumerate() {
                    write!(out, "{}{w}", if i > 0 { "|" } else { "" })?;
                }
            }
            ArgKind::NameList => write!(out, "{prefix}  {}=NAME[,NAME…]", s.key)?,
            ArgKind::SubsetOf(words) => {
                write!(out, "{prefix}  {}=", s.key)?;
                for (i, w) in words.iter().enumerate() {
                    write!(out, "{}{w}", if i > 0 { "," } else { "" })?;
                }
                write!(out, " (any subset)")?;
            }
            ArgKind::Number { min, max } => write!(out, "{prefix}  {}=N ({min}..={max})", s.key)?,
            ArgKind::NumberList { min, max } => write!(out, "{prefix}  {}=N[,N…] ({min}..={max})", s.key)?,
        }
        write!(out, "  — {}", s.help)?;
        match s.default {
            ArgDefault::Unset => writeln!(out)?,
            ArgDefault::Literal(v) | ArgDefault::Computed(v) => writeln!(out, " (default {v})")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
