//! The kernel command line as firmware or the emulator hands it over: raw bytes, decoded to
//! UTF-8 with an error that says where it is not, and the word-level edits boards make (words
//! addressed to the board, the Raspberry Pi firmware's own words before `--`). Pure.

use alloc::string::String;
use core::fmt;

/// Why there is no usable command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineError {
    /// A byte sequence that is not UTF-8.
    NotUtf8 {
        /// Offset of the first bad byte.
        offset: usize,
        /// That byte.
        byte: u8,
    },
    /// The loader had one but could not hand it over (e.g. semihosting refused the call).
    Unreadable(&'static str),
}

impl fmt::Display for CmdlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 { offset, byte } => write!(f, "the command line is not UTF-8: byte {byte:#04x} at offset {offset}"),
            Self::Unreadable(why) => write!(f, "the command line could not be read: {why}"),
        }
    }
}

/// `raw` as text, or where it stops being UTF-8.
pub fn decode(raw: &[u8]) -> Result<&str, CmdlineError> {
    core::str::from_utf8(raw).map_err(|e| CmdlineError::NotUtf8 { offset: e.valid_up_to(), byte: raw[e.valid_up_to()] })
}

/// True when `word` is one of the whitespace-separated words of `raw` — read from the bytes, so
/// that it is found even when another word is not UTF-8 (the runner's `emulator=qemu` must
/// survive a broken user argument, or the run could not end).
pub fn has_word(raw: &[u8], word: &str) -> bool {
    raw.split(|b| b.is_ascii_whitespace()).any(|w| w == word.as_bytes())
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

/// Removes every whitespace-separated word of `cmdline` that starts with `prefix` (e.g.
/// `model=`), with the whitespace that follows it (or precedes it, at the end); every other byte
/// stays as it was (a user's `\r` is still there to be refused or echoed). Returns the rest and
/// the value after the prefix of the last such word. The runner tells the kernel so that the
/// cache model observes it (`model=PROFILE`), a word addressed to the kernel, not to a suite.
pub fn take_prefixed(cmdline: &str, prefix: &str) -> (String, Option<String>) {
    let mut rest = String::from(cmdline);
    let mut value = None;
    let mut from = 0;
    while let Some((start, end)) = next_word(&rest, from) {
        if let Some(v) = rest[start..end].strip_prefix(prefix) {
            value = Some(String::from(v));
            // The word and the whitespace after it; at the end of the line, the whitespace before.
            let after = rest[end..].chars().next().filter(|c| c.is_whitespace()).map_or(0, char::len_utf8);
            let before =
                if after == 0 { rest[..start].chars().next_back().filter(|c| c.is_whitespace()).map_or(0, char::len_utf8) } else { 0 };
            rest.replace_range(start - before..end + after, "");
            from = start - before;
        } else {
            from = end;
        }
    }
    (rest, value)
}

/// The byte range of the first whitespace-separated word at or after `from`.
fn next_word(text: &str, from: usize) -> Option<(usize, usize)> {
    let start = from + text[from..].find(|c: char| !c.is_whitespace())?;
    let end = text[start..].find(char::is_whitespace).map_or(text.len(), |i| start + i);
    Some((start, end))
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

/// The semihosting command line (`ARGV0 ARGS…`) without its first word. scripts/qemu-run passes
/// argv0 as the single word `cachescope` (`-semihosting-config arg=…`), so a kernel path with
/// spaces cannot leak into the arguments.
pub fn without_argv0(raw: &[u8]) -> &[u8] {
    let start = raw.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(raw.len());
    let raw = &raw[start..];
    match raw.iter().position(|b| b.is_ascii_whitespace()) {
        Some(i) => &raw[i + 1..],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_or_names_the_bad_byte() {
        assert_eq!(decode(b"only=boot"), Ok("only=boot"));
        assert_eq!(decode(b"only=boot\xff"), Err(CmdlineError::NotUtf8 { offset: 9, byte: 0xff }));
        let msg = alloc::format!("{}", decode(b"a=\xc3").unwrap_err());
        assert!(msg.contains("0xc3 at offset 2"), "{msg}");
    }

    #[test]
    fn finds_a_word_among_broken_bytes() {
        assert!(has_word(b"emulator=qemu only=boot\xff", "emulator=qemu"));
        assert!(has_word(b"x=\xff\temulator=qemu", "emulator=qemu"));
        assert!(!has_word(b"emulator=qemu2", "emulator=qemu"));
    }

    #[test]
    fn take_word_removes_only_whole_words() {
        assert_eq!(take_word("emulator=qemu only=boot", "emulator=qemu"), ("only=boot".into(), true));
        assert_eq!(take_word("  only=boot   emulator=qemu ", "emulator=qemu"), ("only=boot".into(), true));
        assert_eq!(take_word("emulator=qemu2 x=emulator=qemu", "emulator=qemu"), ("emulator=qemu2 x=emulator=qemu".into(), false));
        assert_eq!(take_word("", "emulator=qemu"), (String::new(), false));
        assert_eq!(take_prefixed("only=boot model=rpi4 x=1", "model="), ("only=boot x=1".into(), Some("rpi4".into())));
        assert_eq!(take_prefixed("only=boot model=rpi4", "model="), ("only=boot".into(), Some("rpi4".into())));
        assert_eq!(take_prefixed("model=guest only=boot\r", "model="), ("only=boot\r".into(), Some("guest".into())));
        assert_eq!(take_prefixed("only=boot\r model=guest", "model="), ("only=boot\r".into(), Some("guest".into())));
        assert_eq!(take_prefixed("only=boot", "model="), ("only=boot".into(), None));
        assert_eq!(take_prefixed("xmodel=a", "model="), ("xmodel=a".into(), None));
        assert_eq!(take_prefixed("", "model="), (String::new(), None));
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
    fn argv0() {
        assert_eq!(without_argv0(b"cachescope only=boot reps=3"), b"only=boot reps=3");
        assert_eq!(without_argv0(b" cachescope  x=\xff"), b" x=\xff");
        assert_eq!(without_argv0(b"cachescope"), b"");
        assert_eq!(without_argv0(b""), b"");
    }
}
