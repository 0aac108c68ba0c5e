use super::*;
use crate::test_rng::Rng;
use alloc::string::ToString;

const SPECS: &[ArgSpec] = &[
    ArgSpec { key: "only", kind: ArgKind::NameList, default: ArgDefault::Unset, help: "suites" },
    ArgSpec { key: "reps", kind: ArgKind::Number { min: 1, max: 1000 }, default: ArgDefault::Literal("5"), help: "repeats" },
    ArgSpec { key: "mode", kind: ArgKind::OneOf(&["a", "b"]), default: ArgDefault::Literal("a"), help: "mode" },
    ArgSpec {
        key: "sizes",
        kind: ArgKind::NumberList { min: 1024, max: 1 << 30 },
        default: ArgDefault::Computed("a ladder"),
        help: "sizes",
    },
    ArgSpec { key: "attrs", kind: ArgKind::SubsetOf(&["wb", "nc"]), default: ArgDefault::Unset, help: "attrs" },
];

#[test]
fn accepts_valid_and_types_once() {
    let a = Args::parse("only=boot,cache.geometry reps=0x10 mode=b sizes=4K,1M", SPECS).unwrap();
    assert_eq!(a.list("only"), ["boot", "cache.geometry"]);
    assert_eq!(a.number("reps"), 16);
    assert_eq!(a.word("mode"), Some("b"));
    assert_eq!(a.numbers("sizes"), Some(&[4096, 1 << 20][..]));
    assert_eq!(a.given_keys(), ["only", "reps", "mode", "sizes"]);
    let d = Args::parse("   ", SPECS).unwrap();
    assert!(d.is_empty());
    assert_eq!(
        (d.number("reps"), d.word("mode"), d.numbers("sizes")),
        (5, Some("a"), None),
        "literal defaults, computed left to the caller"
    );
    assert_eq!(d.number_or("nosuch", 7), 7);
    assert!(!d.given("reps"));
}

#[test]
fn refuses_bad() {
    assert_eq!(Args::parse("bogus=1", SPECS).unwrap_err(), ArgError::UnknownKey { key: "bogus".into(), nearest: None });
    assert_eq!(Args::parse("rep=1", SPECS).unwrap_err(), ArgError::UnknownKey { key: "rep".into(), nearest: Some("reps") });
    assert!(Args::parse("rep=1", SPECS).unwrap_err().to_string().contains("did you mean 'reps'?"));
    assert_eq!(Args::parse("only", SPECS).unwrap_err(), ArgError::Malformed("only".into()));
    assert_eq!(Args::parse("only=", SPECS).unwrap_err(), ArgError::Malformed("only=".into()));
    assert!(matches!(Args::parse("reps= 5", SPECS), Err(ArgError::Malformed(_))));
    for bad in ["reps=0", "reps=12x", "reps=0x+5", "reps=+5", "reps=0x", "mode=c", "sizes=4K,1", "only=a;b", "attrs=nc,xx"] {
        assert!(matches!(Args::parse(bad, SPECS), Err(ArgError::BadValue { .. })), "{bad} must be refused");
    }
    assert!(matches!(Args::parse("reps=1 reps=2", SPECS), Err(ArgError::Duplicate(_))));
    assert!(Args::parse("attrs=nc,wb", SPECS).is_ok());
    let msg = Args::parse("reps=99999999999999999999", SPECS).unwrap_err().to_string();
    assert!(msg.contains("reps"), "{msg}");
    let long = alloc::format!("{}=1", "x".repeat(5000));
    let msg = Args::parse(&long, SPECS).unwrap_err().to_string();
    assert!(msg.len() < 120 && msg.ends_with("…'"), "{msg}");
}

#[test]
fn echoed_input_is_escaped() {
    // CR is whitespace between words (a serial terminal's line end); echoed, it is escaped.
    assert_eq!(Args::parse("only=boot\r", SPECS).unwrap().list("only"), ["boot"]);
    assert_eq!(Escaped("only=boot\r").to_string(), "only=boot\\r");
    let msg = Args::parse("only=bo\u{7}ot", SPECS).unwrap_err().to_string();
    assert_eq!(msg, "bad value 'bo\\u{7}ot' for 'only': expected comma-separated names of [A-Za-z0-9._-]");
    let msg = Args::parse("\u{1b}[31mred=1", SPECS).unwrap_err().to_string();
    assert!(!msg.contains('\u{1b}') && msg.contains("\\u{1b}[31mred"), "{msg}");
    assert!(!Shown("a\u{7f}\u{9b}b").to_string().chars().any(char::is_control));
}

#[test]
fn numbers() {
    assert_eq!(parse_number("64K"), Some(65536));
    assert_eq!(parse_number("0x1M"), Some(1 << 20));
    assert_eq!(parse_number("0xffK"), Some(0xff << 10));
    assert_eq!(parse_number("M"), None);
    assert_eq!(parse_number("-1"), None);
    assert_eq!(parse_number("0x+5"), None);
    assert_eq!(parse_number("20000000000G"), None);
}

#[test]
fn help_words_and_usage_prints_defaults() {
    assert!(wants_help("help") && wants_help("only=boot --help") && wants_help("-h"));
    assert!(!wants_help("only=help"));
    let mut s = String::new();
    write_usage(&mut s, SPECS, ">").unwrap();
    assert!(s.contains(">  reps=N (1..=1000)  — repeats (default 5)\n"), "{s}");
    assert!(s.contains("— sizes (default a ladder)\n"), "{s}");
    assert!(s.contains("— suites\n"), "{s}");
}

#[test]
fn nearest_names() {
    assert_eq!(nearest("cach", ["boot", "cache", "mmu"]), Some("cache"));
    assert_eq!(nearest("mmmu", ["boot", "cache", "mmu"]), Some("mmu"));
    assert_eq!(nearest("zzzzzz", ["boot", "cache", "mmu"]), None);
}

/// Random and mutated command lines through the whole argument path the kernel takes (bytes →
/// UTF-8 → board words → parse → messages): nothing panics, every refusal has a message that
/// is one line without control characters and at most a few hundred bytes.
/// `CS_FUZZ_CASES` sets the count (default 100,000).
#[test]
fn fuzz_command_lines_never_panic() {
    use crate::firmware::cmdline;
    let cases: usize = std::env::var("CS_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let pieces: &[&[u8]] = &[
        b"only=",
        b"skip=",
        b"reps=",
        b"mode=",
        b"sizes=",
        b"attrs=",
        b"boot",
        b"cache.geometry",
        b",",
        b"=",
        b" ",
        b"\t",
        b"--",
        b"0x",
        b"+",
        b"-",
        b"K",
        b"M",
        b"G",
        b"99999999999999999999",
        b"1",
        b"4K",
        b"nc",
        b"wb",
        b"\xff",
        b"\xc3",
        b"\r",
        b"\x1b[2J",
        b"help",
        b"emulator=qemu",
        "é".as_bytes(),
        b"\0",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut accepted, mut refused) = (0usize, 0usize);
    for _ in 0..cases {
        let mut raw = Vec::new();
        for _ in 0..rng.below(12) {
            if rng.below(4) == 0 {
                raw.push(rng.next() as u8);
            } else {
                raw.extend_from_slice(pieces[rng.below(pieces.len())]);
            }
        }
        let _ = cmdline::has_word(&raw, "emulator=qemu");
        let text = match cmdline::decode(&raw) {
            Ok(t) => t,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
                continue;
            }
        };
        let (rest, _) = cmdline::take_word(text, "emulator=qemu");
        let line = cmdline::after_separator(&rest);
        let _ = wants_help(line);
        match Args::parse(line, SPECS) {
            Ok(a) => {
                accepted += 1;
                let _ = (a.number("reps"), a.list("only"), a.numbers("sizes"), a.word("mode"));
            }
            Err(e) => {
                refused += 1;
                let m = e.to_string();
                assert!(!m.chars().any(char::is_control) && m.len() < 400, "bad message {m:?} for {raw:?}");
            }
        }
    }
    assert!(accepted > cases / 50 && refused > cases / 50, "the fuzzer must reach both outcomes: {accepted} accepted, {refused} refused");
    std::println!("args fuzz: {cases} command lines, {accepted} accepted, {refused} refused, none panicked");
}
