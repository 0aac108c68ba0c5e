//! Kernel arguments: `key=value` words from the semihosting command line or `/chosen/bootargs`.
//!
//! Every accepted key is declared up front ([`ArgSpec`]); an unknown key or a malformed value is
//! an error that names the word and lists the accepted forms. Pure and host-tested.

use alloc::{string::String, vec::Vec};
use core::fmt;

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

/// One accepted key.
#[derive(Clone, Copy, Debug)]
pub struct ArgSpec {
    /// The key (before `=`).
    pub key: &'static str,
    /// Accepted values.
    pub kind: ArgKind,
    /// One line of help: what it selects.
    pub help: &'static str,
}

/// Why the command line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// A word that is not `key=value`.
    Malformed(String),
    /// A key nobody declared.
    UnknownKey(String),
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
            Self::Malformed(w) => write!(f, "malformed argument '{}': expected key=value", Clip(w)),
            Self::UnknownKey(k) => write!(f, "unknown argument '{}'", Clip(k)),
            Self::Duplicate(k) => write!(f, "argument '{}' given twice", Clip(k)),
            Self::BadValue { key, value, why } => write!(f, "bad value '{}' for '{}': {why}", Clip(value), Clip(key)),
        }
    }
}

/// Shows at most 64 characters of user input in an error (then `…`).
struct Clip<'a>(&'a str);

impl fmt::Display for Clip<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(64) {
            Some((i, _)) => write!(f, "{}…", &self.0[..i]),
            None => f.write_str(self.0),
        }
    }
}

/// Parsed arguments (validated against the specs).
#[derive(Clone, Debug, Default)]
pub struct Args {
    pairs: Vec<(String, String)>,
}

/// Parses an unsigned number: decimal, `0x` hex, optional `K`/`M`/`G` (×1024ⁿ) suffix.
pub fn parse_number(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let v = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u64>().ok()?
    };
    v.checked_mul(mult)
}

fn check_number(key: &str, value: &str, v: &str, min: u64, max: u64) -> Result<(), ArgError> {
    let bad = |why| ArgError::BadValue { key: key.into(), value: value.into(), why };
    let n = parse_number(v).ok_or_else(|| bad("not a number (decimal, 0x hex, optional K/M/G)"))?;
    if n < min || n > max {
        return Err(bad("out of range"));
    }
    Ok(())
}

impl Args {
    /// Parses whitespace-separated words against `specs`.
    pub fn parse(cmdline: &str, specs: &[ArgSpec]) -> Result<Self, ArgError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for word in cmdline.split_whitespace() {
            let (key, value) = word.split_once('=').ok_or_else(|| ArgError::Malformed(word.into()))?;
            if key.is_empty() || value.is_empty() {
                return Err(ArgError::Malformed(word.into()));
            }
            let spec = specs.iter().find(|s| s.key == key).ok_or_else(|| ArgError::UnknownKey(key.into()))?;
            if pairs.iter().any(|(k, _)| k == key) {
                return Err(ArgError::Duplicate(key.into()));
            }
            let bad = |why| ArgError::BadValue { key: key.into(), value: value.into(), why };
            match spec.kind {
                ArgKind::OneOf(words) => {
                    if !words.contains(&value) {
                        return Err(bad("not one of the accepted words"));
                    }
                }
                ArgKind::NameList => {
                    if value.split(',').any(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))) {
                        return Err(bad("expected comma-separated names of [A-Za-z0-9._-]"));
                    }
                }
                ArgKind::SubsetOf(words) => {
                    if value.split(',').any(|n| !words.contains(&n)) {
                        return Err(bad("a name in the list is not one of the accepted words"));
                    }
                }
                ArgKind::Number { min, max } => check_number(key, value, value, min, max)?,
                ArgKind::NumberList { min, max } => {
                    for v in value.split(',') {
                        check_number(key, value, v, min, max)?;
                    }
                }
            }
            pairs.push((key.into(), value.into()));
        }
        Ok(Self { pairs })
    }

    /// The raw value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A number argument (already validated), or `default`.
    pub fn number(&self, key: &str, default: u64) -> u64 {
        self.get(key).and_then(parse_number).unwrap_or(default)
    }

    /// A list argument split at commas (empty if absent).
    pub fn list(&self, key: &str) -> Vec<&str> {
        self.get(key).map(|v| v.split(',').collect()).unwrap_or_default()
    }

    /// True when no argument was given.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Removes every whitespace-separated occurrence of `word` from `cmdline`: returns the other
/// words joined by single spaces, and whether `word` was there. Board code uses it for words
/// addressed to the board rather than the harness (the runner's `emulator=qemu` on raspi4b).
pub fn take_word(cmdline: &str, word: &str) -> (String, bool) {
    let mut rest = String::new();
    let mut found = false;
    for w in cmdline.split_whitespace() {
        if w == word {
            found = true;
            continue;
        }
        if !rest.is_empty() {
            rest.push(' ');
        }
        rest.push_str(w);
    }
    (rest, found)
}

/// The words after the last `--` of `cmdline`, or all of it when there is no `--`. On a
/// Raspberry Pi the firmware puts its own words (`coherent_pool=1M 8250.nr_uarts=1 …`) in
/// front of cmdline.txt; a cmdline.txt of `-- only=boot` keeps them out of the harness.
pub fn after_separator(cmdline: &str) -> &str {
    let mut rest = cmdline;
    let mut tail = cmdline;
    while let Some(i) = rest.find("--") {
        let before_ok = i == 0 || rest.as_bytes()[i - 1].is_ascii_whitespace();
        let after = &rest[i + 2..];
        let after_ok = after.is_empty() || after.as_bytes()[0].is_ascii_whitespace();
        if before_ok && after_ok {
            tail = after;
        }
        rest = after;
    }
    tail.trim()
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
        writeln!(out, "  — {}", s.help)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const SPECS: &[ArgSpec] = &[
        ArgSpec { key: "only", kind: ArgKind::NameList, help: "suites" },
        ArgSpec { key: "reps", kind: ArgKind::Number { min: 1, max: 1000 }, help: "repeats" },
        ArgSpec { key: "mode", kind: ArgKind::OneOf(&["a", "b"]), help: "mode" },
        ArgSpec { key: "sizes", kind: ArgKind::NumberList { min: 1024, max: 1 << 30 }, help: "sizes" },
        ArgSpec { key: "attrs", kind: ArgKind::SubsetOf(&["wb", "nc"]), help: "attrs" },
    ];

    #[test]
    fn accepts_valid() {
        let a = Args::parse("only=boot,cache.geometry reps=0x10 mode=b sizes=4K,1M", SPECS).unwrap();
        assert_eq!(a.list("only"), ["boot", "cache.geometry"]);
        assert_eq!(a.number("reps", 1), 16);
        assert_eq!(a.get("mode"), Some("b"));
        assert!(Args::parse("   ", SPECS).unwrap().is_empty());
    }

    #[test]
    fn refuses_bad() {
        assert_eq!(Args::parse("bogus=1", SPECS).unwrap_err(), ArgError::UnknownKey("bogus".into()));
        assert_eq!(Args::parse("only", SPECS).unwrap_err(), ArgError::Malformed("only".into()));
        assert_eq!(Args::parse("only=", SPECS).unwrap_err(), ArgError::Malformed("only=".into()));
        assert!(matches!(Args::parse("reps=0", SPECS), Err(ArgError::BadValue { .. })));
        assert!(matches!(Args::parse("reps=12x", SPECS), Err(ArgError::BadValue { .. })));
        assert!(matches!(Args::parse("mode=c", SPECS), Err(ArgError::BadValue { .. })));
        assert!(matches!(Args::parse("sizes=4K,1", SPECS), Err(ArgError::BadValue { .. })));
        assert!(matches!(Args::parse("reps=1 reps=2", SPECS), Err(ArgError::Duplicate(_))));
        assert!(matches!(Args::parse("only=a;b", SPECS), Err(ArgError::BadValue { .. })));
        assert!(Args::parse("attrs=nc,wb", SPECS).is_ok());
        assert!(matches!(Args::parse("attrs=nc,xx", SPECS), Err(ArgError::BadValue { .. })));
        let msg = Args::parse("reps=99999999999999999999", SPECS).unwrap_err().to_string();
        assert!(msg.contains("reps"), "{msg}");
        let long = alloc::format!("{}=1", "x".repeat(5000));
        let msg = Args::parse(&long, SPECS).unwrap_err().to_string();
        assert!(msg.len() < 120 && msg.ends_with("…'"), "{msg}");
    }

    #[test]
    fn take_word_removes_only_whole_words() {
        assert_eq!(take_word("emulator=qemu only=boot", "emulator=qemu"), ("only=boot".into(), true));
        assert_eq!(take_word("  only=boot   emulator=qemu ", "emulator=qemu"), ("only=boot".into(), true));
        assert_eq!(take_word("emulator=qemu2 x=emulator=qemu", "emulator=qemu"), ("emulator=qemu2 x=emulator=qemu".into(), false));
        assert_eq!(take_word("", "emulator=qemu"), (String::new(), false));
    }

    #[test]
    fn separator() {
        let pi = "coherent_pool=1M 8250.nr_uarts=1 video=HDMI-A-1:1920x1080M@60  -- only=boot skip=boot.heap";
        assert_eq!(after_separator(pi), "only=boot skip=boot.heap");
        assert_eq!(after_separator("only=boot"), "only=boot");
        assert_eq!(after_separator("x=1 --"), "");
        assert_eq!(after_separator("-- a=1 -- b=2"), "b=2");
        assert_eq!(after_separator("a=--x --b c=1"), "a=--x --b c=1");
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("64K"), Some(65536));
        assert_eq!(parse_number("0x1M"), Some(1 << 20));
        assert_eq!(parse_number("M"), None);
        assert_eq!(parse_number("-1"), None);
        assert_eq!(parse_number("20000000000G"), None);
    }
}
