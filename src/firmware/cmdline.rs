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
    /// A user's word claims to be the runner's: `model=…` (the runner tells the kernel that the
    /// cache model is loaded through argv0, [`runner_model`], never through the user's words).
    RunnerWord,
}

impl fmt::Display for CmdlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 { offset, byte } => write!(f, "the command line is not UTF-8: byte {byte:#04x} at offset {offset}"),
            Self::Unreadable(why) => write!(f, "the command line could not be read: {why}"),
            Self::RunnerWord => write!(
                f,
                "'{RUNNER_WORD}…' is not an argument: the runner alone says the cache model observes the run (QEMU_CACHE_MODEL=on|PROFILE turns it on)"
            ),
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

/// The command line a board hands over: the user's words, and what the runner itself said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// The user's words (the harness's arguments).
    pub words: String,
    /// The cache model's profile, when the runner loaded the model ([`runner_model`]).
    pub model: Option<String>,
}

/// The word a user may not give: the kernel once took `model=PROFILE` from the command line.
pub const RUNNER_WORD: &str = "model=";

/// What scripts/qemu-run puts before the profile in argv0 when it loads the cache model.
const RUNNER_ARGV0_MODEL: &str = "cachescope+model=";

/// The runner's facts and the user's words, checked: `words` (already without the runner's own
/// board words) must not hold a [`RUNNER_WORD`]; the model's profile is read from `argv0` only.
///
/// Why argv0: scripts/qemu-run passes the semihosting command line as `arg=ARGV0,arg=WORD…`, and
/// always writes ARGV0 itself (`cachescope`, or `cachescope+model=PROFILE` with the model on);
/// every word a user types (`cargo run -- …`) becomes a later `arg=`, so no user word can become
/// argv0, and a user word that looks like the runner's is refused instead of believed.
pub fn checked(words: &str, argv0: &[u8]) -> Result<CommandLine, CmdlineError> {
    if words.split_whitespace().any(|w| w.starts_with(RUNNER_WORD)) {
        return Err(CmdlineError::RunnerWord);
    }
    Ok(CommandLine { words: String::from(words), model: runner_model(argv0) })
}

/// The cache model's profile named by the runner's argv0 (`cachescope+model=PROFILE`), if any.
pub fn runner_model(argv0: &[u8]) -> Option<String> {
    let p = argv0.strip_prefix(RUNNER_ARGV0_MODEL.as_bytes())?;
    let p = core::str::from_utf8(p).ok().filter(|p| !p.is_empty())?;
    Some(String::from(p))
}

/// The first whitespace-separated word of the semihosting command line (`ARGV0 ARGS…`).
pub fn argv0(raw: &[u8]) -> &[u8] {
    let start = raw.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(raw.len());
    let raw = &raw[start..];
    &raw[..raw.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(raw.len())]
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
    fn the_model_comes_from_argv0_only() {
        let ok = |w: &str, a: &[u8]| checked(w, a).map(|c| c.model);
        assert_eq!(ok("only=boot", b"cachescope+model=rpi4"), Ok(Some("rpi4".into())));
        assert_eq!(ok("only=boot", b"cachescope"), Ok(None));
        assert_eq!(ok("", b"cachescope+model="), Ok(None));
        assert_eq!(ok("only=boot model=fake", b"cachescope"), Err(CmdlineError::RunnerWord));
        assert_eq!(
            ok("model=guest", b"cachescope+model=guest"),
            Err(CmdlineError::RunnerWord),
            "a user's word is refused even when the runner agrees"
        );
        assert_eq!(ok("xmodel=a", b"cachescope"), Ok(None));
        assert_eq!(argv0(b" cachescope+model=guest only=boot"), b"cachescope+model=guest");
        assert_eq!(argv0(b""), b"");
        // A user's words come after argv0: a word shaped like the runner's argv0 is only a word.
        assert_eq!(runner_model(argv0(b"cachescope cachescope+model=fake")), None);
    }

    #[test]
    fn without_argv0_drops_the_first_word() {
        assert_eq!(without_argv0(b"cachescope only=boot reps=3"), b"only=boot reps=3");
        assert_eq!(without_argv0(b" cachescope  x=\xff"), b" x=\xff");
        assert_eq!(without_argv0(b"cachescope"), b"");
        assert_eq!(without_argv0(b""), b"");
    }
}
