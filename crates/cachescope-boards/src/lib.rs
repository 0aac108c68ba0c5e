//! `boards.toml` at the repository root, one `[[board]]` table per board: the one description of
//! every board cachescope runs on, and its one reader. The kernel's build.rs selects a board
//! with it ([`select`]) and generates the board's Rust constants ([`kernel_facts`]); host/xtask
//! reads it for QEMU, LAVA and the scripts.
//!
//! The file is parsed into a plain TOML table and read key by key, so that every error names
//! the board and the key ("boards.toml: board 'rpi4': key 'link_base': expected an integer").
//! Unknown keys are refused (a typo would otherwise silently fall back to nothing). The keys
//! are documented at the top of boards.toml itself.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use toml::{Table, Value};

/// What QEMU loads with `-kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QemuKernel {
    /// The kernel ELF (entry point and segments from the ELF).
    Elf,
    /// The raw image, exactly as the board's firmware loads it.
    Image,
}

/// How the board is emulated, when QEMU has a machine for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qemu {
    /// `-M` value.
    pub machine: String,
    /// `-cpu` value, for machines that take one.
    pub cpu: Option<String>,
    /// `-m` value, for machines that take one.
    pub memory: Option<String>,
    /// `-smp` default when QEMU_SMP is unset, for machines that take one (key `qemu_smp`,
    /// default 1).
    pub smp: u32,
    /// What `-kernel` loads.
    pub kernel: QemuKernel,
    /// Words prepended to the kernel arguments under QEMU (may be empty).
    pub kernel_args: String,
    /// The cache model's default when QEMU_CACHE_MODEL is unset: `on`, a profile, or `off`.
    pub cache_model: String,
}

/// Where the kernel reads its arguments from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgsFrom {
    /// Semihosting SYS_GET_CMDLINE: QEMU's `-append`.
    Semihosting,
    /// The DTB's `/chosen/bootargs`, filled by the Pi firmware from cmdline.txt on the card.
    CmdlineTxt,
}

/// How secondary cores are started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreStart {
    /// PSCI CPU_ON through the conduit the DTB's `/psci` node names; core n is MPIDR Aff0 n.
    Psci,
    /// The armstub's spin table (PSCI instead when the DTB has `/psci`).
    SpinTable,
    /// PSCI CPU_ON through `smc` to the firmware's BL31; core n is MPIDR Aff1 n.
    PsciSmc,
}

/// One way a run ends after the `end` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Semihosting SYS_EXIT: QEMU exits with the kernel's status.
    Semihosting,
    /// Semihosting, only when the kernel argument `emulator=qemu` says the board is QEMU.
    SemihostingIfEmulated,
    /// PSCI SYSTEM_OFF, where firmware offers PSCI.
    PsciSystemOff,
    /// Every core parks in WFE; the board must be powered off.
    WfePark,
}

/// The console UART.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Console {
    /// UART type (`pl011`).
    pub uart: String,
    /// Physical address when the DTB does not say.
    pub base: u64,
    /// Reference clock the divisors are programmed from; `None`: left as the loader set it.
    pub clock_hz: Option<u64>,
}

/// One board, as boards.toml describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Board {
    /// Board name (the `boot` record's `board`).
    pub name: String,
    /// Cargo feature selecting the board.
    pub feature: String,
    /// The `.rodata` marker `cachescope-board=NAME`.
    pub tag: String,
    /// Link (= load) address of the kernel.
    pub link_base: u64,
    /// Raw image file the firmware loads; `None`: the ELF is booted.
    pub image: Option<String>,
    /// config.txt lines (empty: no config.txt).
    pub config_txt: Vec<String>,
    /// Further firmware files the SD card needs.
    pub firmware: Vec<String>,
    /// SD-card image file name written by scripts/mksdcard.
    pub sdcard: Option<String>,
    /// Device-tree file on the card; `None`: the loader makes one.
    pub dtb: Option<String>,
    /// The QEMU machine emulating the board, if any.
    pub qemu: Option<Qemu>,
    /// Where kernel arguments come from.
    pub kernel_args_from: ArgsFrom,
    /// Exception level at entry.
    pub entry_el: u8,
    /// The console UART.
    pub console: Console,
    /// How secondary cores start.
    pub core_start: CoreStart,
    /// Core 0's spin-table word (only with [`CoreStart::SpinTable`]).
    pub spin_table: Option<u64>,
    /// How a run ends, in order of preference.
    pub run_end: Vec<RunEnd>,
    /// LAVA device type of the board in a lab.
    pub lava_device_type: String,
}

/// A boards.toml that cannot be used: the message names the file, the board and the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardError(pub String);

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BoardError {}

/// What every board's `tag` starts with; the board's name follows (`cachescope-board=rpi4`).
pub const TAG_PREFIX: &str = "cachescope-board=";

/// Every key a `[[board]]` table may have.
pub const KEYS: &[&str] = &[
    "name",
    "feature",
    "tag",
    "link_base",
    "image",
    "config_txt",
    "firmware",
    "sdcard",
    "dtb",
    "qemu_machine",
    "qemu_cpu",
    "qemu_memory",
    "qemu_smp",
    "qemu_kernel",
    "qemu_kernel_args",
    "qemu_cache_model",
    "kernel_args_from",
    "entry_el",
    "console_uart",
    "console_base",
    "console_clock_hz",
    "core_start",
    "spin_table",
    "run_end",
    "lava_device_type",
];

/// Reads and checks a boards.toml file.
pub fn load(path: &Path) -> Result<Vec<Board>, BoardError> {
    let text = std::fs::read_to_string(path).map_err(|e| BoardError(format!("{}: cannot read: {e}", path.display())))?;
    parse(&text).map_err(|BoardError(m)| BoardError(format!("{}: {m}", path.display())))
}

/// Parses the text of a boards.toml.
pub fn parse(text: &str) -> Result<Vec<Board>, BoardError> {
    let table: Table = text.parse().map_err(|e: toml::de::Error| BoardError(format!("not valid TOML: {}", e.to_string().trim_end())))?;
    for key in table.keys() {
        if key != "board" {
            return Err(BoardError(format!("unknown top-level key '{key}' (boards are [[board]] tables)")));
        }
    }
    let list = match table.get("board") {
        None => return Err(BoardError("no [[board]] table".into())),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(BoardError("'board' must be an array of tables ([[board]])".into())),
    };
    let mut boards: Vec<Board> = Vec::new();
    for (i, value) in list.iter().enumerate() {
        let Value::Table(t) = value else {
            return Err(BoardError(format!("board #{}: not a table", i + 1)));
        };
        let board = board(t, i)?;
        if boards.iter().any(|b| b.name == board.name) {
            return Err(BoardError(format!("board '{}': defined twice", board.name)));
        }
        boards.push(board);
    }
    Ok(boards)
}

/// Finds a board by name; the error lists the known ones.
pub fn find<'a>(boards: &'a [Board], name: &str) -> Result<&'a Board, BoardError> {
    boards.iter().find(|b| b.name == name).ok_or_else(|| {
        let known: Vec<&str> = boards.iter().map(|b| b.name.as_str()).collect();
        BoardError(format!("unknown board '{name}' (boards.toml has: {})", known.join(", ")))
    })
}

/// Reads one table's keys, remembering the board for error messages.
struct Fields<'a> {
    table: &'a Table,
    who: String,
}

impl Fields<'_> {
    fn err(&self, key: &str, what: impl fmt::Display) -> BoardError {
        BoardError(format!("{}: key '{key}': {what}", self.who))
    }

    fn get(&self, key: &str) -> Result<&Value, BoardError> {
        self.table.get(key).ok_or_else(|| BoardError(format!("{}: missing key '{key}'", self.who)))
    }

    fn string(&self, key: &str) -> Result<String, BoardError> {
        match self.get(key)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(key, format!("expected a string, found {}", other.type_str()))),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, BoardError> {
        if self.table.contains_key(key) {
            self.string(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A string where "none" means absent.
    fn none_or_string(&self, key: &str) -> Result<Option<String>, BoardError> {
        let s = self.string(key)?;
        if s.is_empty() {
            return Err(self.err(key, "empty (write \"none\" when the board has none)"));
        }
        Ok((s != "none").then_some(s))
    }

    fn int(&self, key: &str) -> Result<u64, BoardError> {
        match self.get(key)? {
            Value::Integer(n) if *n >= 0 => Ok(*n as u64),
            Value::Integer(n) => Err(self.err(key, format!("must not be negative ({n})"))),
            other => Err(self.err(key, format!("expected an integer, found {}", other.type_str()))),
        }
    }

    fn opt_int(&self, key: &str) -> Result<Option<u64>, BoardError> {
        if self.table.contains_key(key) {
            self.int(key).map(Some)
        } else {
            Ok(None)
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, BoardError> {
        match self.get(key)? {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.err(key, format!("item {}: expected a string, found {}", i + 1, other.type_str()))),
                })
                .collect(),
            other => Err(self.err(key, format!("expected an array of strings, found {}", other.type_str()))),
        }
    }

    fn choice<T: Copy>(&self, key: &str, value: &str, options: &[(&str, T)]) -> Result<T, BoardError> {
        options.iter().find(|(name, _)| *name == value).map(|(_, v)| *v).ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            self.err(key, format!("'{value}' is not one of: {}", names.join(", ")))
        })
    }
}

fn board(t: &Table, index: usize) -> Result<Board, BoardError> {
    let name = match t.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(BoardError(format!("board #{}: key 'name': expected a non-empty string", index + 1))),
        None => return Err(BoardError(format!("board #{}: missing key 'name'", index + 1))),
    };
    let f = Fields { table: t, who: format!("board '{name}'") };
    let known: BTreeSet<&str> = KEYS.iter().copied().collect();
    for key in t.keys() {
        if !known.contains(key.as_str()) {
            return Err(BoardError(format!("{}: unknown key '{key}' (known keys are listed at the top of boards.toml)", f.who)));
        }
    }
    let tag = f.string("tag")?;
    if tag != format!("{TAG_PREFIX}{name}") {
        return Err(f.err("tag", format!("'{tag}' must be '{TAG_PREFIX}{name}'")));
    }
    let image = f.none_or_string("image")?;
    let qemu = match f.none_or_string("qemu_machine")? {
        None => None,
        Some(machine) => {
            let kernel = match f.opt_string("qemu_kernel")? {
                None => QemuKernel::Elf,
                Some(k) => f.choice("qemu_kernel", &k, &[("elf", QemuKernel::Elf), ("image", QemuKernel::Image)])?,
            };
            if kernel == QemuKernel::Image && image.is_none() {
                return Err(f.err("qemu_kernel", "\"image\" needs an image (key 'image' is \"none\")"));
            }
            Some(Qemu {
                machine,
                cpu: f.opt_string("qemu_cpu")?,
                memory: f.opt_string("qemu_memory")?,
                smp: match f.opt_int("qemu_smp")? {
                    None => 1,
                    Some(n @ 1..=999) => n as u32,
                    Some(n) => return Err(f.err("qemu_smp", format!("{n} is not a number of cores from 1 to 999"))),
                },
                kernel,
                kernel_args: f.opt_string("qemu_kernel_args")?.unwrap_or_default(),
                cache_model: f.opt_string("qemu_cache_model")?.unwrap_or_else(|| "off".into()),
            })
        }
    };
    let kernel_args_from = f.choice(
        "kernel_args_from",
        &f.string("kernel_args_from")?,
        &[("semihosting", ArgsFrom::Semihosting), ("cmdline.txt", ArgsFrom::CmdlineTxt)],
    )?;
    let entry_el = f.int("entry_el")?;
    if !(1..=3).contains(&entry_el) {
        return Err(f.err("entry_el", format!("{entry_el} is not an exception level 1..3")));
    }
    let clock = f.int("console_clock_hz")?;
    let core_start = f.choice(
        "core_start",
        &f.string("core_start")?,
        &[("psci", CoreStart::Psci), ("spin-table", CoreStart::SpinTable), ("psci-smc", CoreStart::PsciSmc)],
    )?;
    let spin_table = f.opt_int("spin_table")?;
    if core_start == CoreStart::SpinTable && spin_table.is_none() {
        return Err(f.err("spin_table", "missing: core_start = \"spin-table\" needs the address"));
    }
    let run_end = f
        .strings("run_end")?
        .iter()
        .map(|s| {
            f.choice(
                "run_end",
                s,
                &[
                    ("semihosting", RunEnd::Semihosting),
                    ("semihosting-if-emulated", RunEnd::SemihostingIfEmulated),
                    ("psci-system-off", RunEnd::PsciSystemOff),
                    ("wfe-park", RunEnd::WfePark),
                ],
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    if run_end.is_empty() {
        return Err(f.err("run_end", "empty: say how a run ends"));
    }
    let link_base = f.int("link_base")?;
    if link_base % 4096 != 0 {
        return Err(f.err("link_base", format!("{link_base:#x} is not 4 KiB aligned")));
    }
    let lava_device_type = f.string("lava_device_type")?;
    if lava_device_type.is_empty() {
        return Err(f.err("lava_device_type", "empty"));
    }
    Ok(Board {
        feature: f.string("feature")?,
        tag,
        link_base,
        image,
        config_txt: f.strings("config_txt")?,
        firmware: f.strings("firmware")?,
        sdcard: f.none_or_string("sdcard")?,
        dtb: f.none_or_string("dtb")?,
        qemu,
        kernel_args_from,
        entry_el: entry_el as u8,
        console: Console { uart: f.string("console_uart")?, base: f.int("console_base")?, clock_hz: (clock != 0).then_some(clock) },
        core_start,
        spin_table,
        run_end,
        lava_device_type,
        name,
    })
}

/// One key of one board as text, for shell scripts: strings as they are, integers in hex for
/// addresses (`link_base`, `console_base`, `spin_table`) and decimal otherwise, arrays one item
/// per line. The key must be one of [`KEYS`]; an absent optional key prints nothing.
pub fn value_text(text: &str, board: &str, key: &str) -> Result<String, BoardError> {
    let boards = parse(text)?;
    find(&boards, board)?;
    if !KEYS.contains(&key) {
        return Err(BoardError(format!("unknown key '{key}' (known: {})", KEYS.join(", "))));
    }
    let table: Table = text.parse().map_err(|e: toml::de::Error| BoardError(e.to_string()))?;
    let Some(Value::Array(list)) = table.get("board") else { unreachable_board() };
    let t = list.iter().filter_map(Value::as_table).find(|t| t.get("name").and_then(Value::as_str) == Some(board));
    let Some(t) = t else { unreachable_board() };
    let hex = matches!(key, "link_base" | "console_base" | "spin_table");
    Ok(match t.get(key) {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Integer(n)) if hex => format!("{n:#x}"),
        Some(Value::Integer(n)) => n.to_string(),
        Some(Value::Array(items)) => {
            items.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect::<Vec<_>>().join("\n")
        }
        Some(other) => other.to_string(),
    })
}

/// `parse` succeeded and `find` found the board, so the raw table has it.
fn unreachable_board() -> ! {
    unreachable!("board table checked by parse() and find()")
}

/// The board a kernel build is for, from the cargo features it enables (`enabled(feature)`):
/// the first table is the default board, another board's feature takes precedence over it, and
/// two non-default boards at once are refused.
pub fn select(boards: &[Board], enabled: impl Fn(&str) -> bool) -> Result<&Board, BoardError> {
    let on = |b: &&Board| !b.feature.is_empty() && enabled(&b.feature);
    let chosen: Vec<&Board> = boards.iter().skip(1).filter(on).collect();
    if chosen.len() > 1 {
        let names: Vec<String> = chosen.iter().map(|b| format!("`{}`", b.feature)).collect();
        return Err(BoardError(format!("select one board: the features {} exclude each other", names.join(" and "))));
    }
    chosen.first().copied().or_else(|| boards.first().filter(on)).ok_or_else(|| {
        let features: Vec<&str> = boards.iter().map(|b| b.feature.as_str()).collect();
        BoardError(format!("no [[board]] table's feature is enabled (features: {})", features.join(", ")))
    })
}

impl Board {
    /// The board's kernel source, relative to the kernel's `src/bsp`: `NAME.rs` with `-` as `_`.
    pub fn source_file(&self) -> String {
        format!("{}.rs", self.name.replace('-', "_"))
    }
}

/// The Rust source of the kernel's `bsp::facts` module for `board` (build.rs writes it to
/// OUT_DIR): the boards.toml facts the kernel uses, as constants, and the board's `.rodata`
/// tag. The board's source file states none of them again.
pub fn kernel_facts(board: &Board) -> String {
    let opt = |v: Option<u64>| v.map_or("None".to_string(), |v| format!("Some({v:#x})"));
    let mut out = String::new();
    out.push_str(&format!("// Generated from boards.toml (board '{}') by cachescope_boards::kernel_facts: do not edit.\n", board.name));
    out.push_str(&format!(
        "/// Board name: the `boot` record's `board` field (boards.toml `name`).\npub const NAME: &str = {:?};\n",
        board.name
    ));
    out.push_str(&format!(
        "/// The console UART ({}) when the DTB does not say: a physical address (boards.toml `console_base`).\n\
         pub const CONSOLE_BASE: usize = {:#x};\n",
        board.console.uart, board.console.base
    ));
    out.push_str(&format!(
        "/// The console UART's reference clock, from which the divisors are programmed; `None`: left as the\n\
         /// loader set it, only enabled (boards.toml `console_clock_hz`).\n\
         pub const CONSOLE_CLOCK_HZ: Option<u32> = {};\n",
        board.console.clock_hz.map_or("None".to_string(), |hz| format!("Some({hz})"))
    ));
    out.push_str(&format!(
        "/// Core 0's spin-table release word, core n's at `+ 8 n` (boards.toml `spin_table`); `None`: no spin table.\n\
         pub const SPIN_TABLE: Option<usize> = {};\n",
        opt(board.spin_table)
    ));
    out.push_str(&format!(
        "/// The words the runner puts before the kernel arguments under QEMU (boards.toml `qemu_kernel_args`);\n\
         /// `None`: no QEMU machine emulates the board.\n\
         pub const QEMU_KERNEL_ARGS: Option<&str> = {};\n",
        board.qemu.as_ref().map_or("None".to_string(), |q| format!("Some({:?})", q.kernel_args))
    ));
    let tag = format!("{}\\0", board.tag);
    out.push_str(&format!(
        "/// Marks the ELF and the raw image as built for this board (boards.toml `tag`, NUL-terminated; the\n\
         /// scripts and xtask read it).\n\
         #[used]\n\
         #[link_section = \".rodata.cs_board\"]\n\
         static BOARD_TAG: [u8; {}] = *b\"{tag}\";\n",
        board.tag.len() + 1
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(rel: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn repo_boards() -> Vec<Board> {
        parse(&repo_file("boards.toml")).expect("boards.toml parses")
    }

    const GOOD: &str = r#"
[[board]]
name = "b"
feature = "b"
tag = "cachescope-board=b"
link_base = 0x8_0000
image = "none"
config_txt = []
firmware = []
sdcard = "none"
dtb = "none"
qemu_machine = "virt"
kernel_args_from = "semihosting"
entry_el = 1
console_uart = "pl011"
console_base = 0x0900_0000
console_clock_hz = 0
core_start = "psci"
run_end = ["semihosting"]
lava_device_type = "qemu"
"#;

    /// GOOD three times, as boards `a` (the default), `b` and `c`; `c` on a spin table.
    fn three() -> Vec<Board> {
        let c = GOOD
            .replace("\"b\"", "\"c\"")
            .replace("=b\"", "=c\"")
            .replace("core_start = \"psci\"", "core_start = \"spin-table\"\nspin_table = 0xd8")
            .replace("console_clock_hz = 0", "console_clock_hz = 48_000_000");
        parse(&format!("{}{GOOD}{c}", GOOD.replace("\"b\"", "\"a\"").replace("=b\"", "=a\""))).unwrap()
    }

    fn err_of(text: &str) -> String {
        parse(text).expect_err("must be refused").0
    }

    #[test]
    fn minimal_board_parses() {
        let b = &parse(GOOD).unwrap()[0];
        assert_eq!(b.name, "b");
        assert_eq!(b.link_base, 0x8_0000);
        assert_eq!(b.qemu.as_ref().unwrap().kernel, QemuKernel::Elf);
        assert_eq!(b.console.clock_hz, None);
        assert_eq!(b.image, None);
    }

    #[test]
    fn errors_name_board_and_key() {
        let e = err_of(&GOOD.replace("link_base = 0x8_0000", "link_base = \"0x80000\""));
        assert_eq!(e, "board 'b': key 'link_base': expected an integer, found string");
        let e = err_of(&GOOD.replace("entry_el = 1\n", ""));
        assert_eq!(e, "board 'b': missing key 'entry_el'");
        let e = err_of(&GOOD.replace("core_start = \"psci\"", "core_start = \"magic\""));
        assert_eq!(e, "board 'b': key 'core_start': 'magic' is not one of: psci, spin-table, psci-smc");
        let e = err_of(&GOOD.replace("tag = \"cachescope-board=b\"", "tag = \"cachescope-board=c\""));
        assert!(e.starts_with("board 'b': key 'tag':"), "{e}");
        let e = err_of(&GOOD.replace("dtb = \"none\"", "dtb = \"none\"\ndtbb = 1"));
        assert!(e.starts_with("board 'b': unknown key 'dtbb'"), "{e}");
        let e = err_of(&GOOD.replace("core_start = \"psci\"", "core_start = \"spin-table\""));
        assert_eq!(e, "board 'b': key 'spin_table': missing: core_start = \"spin-table\" needs the address");
        let e = err_of(&GOOD.replace("run_end = [\"semihosting\"]", "run_end = [\"semihosting\", 3]"));
        assert_eq!(e, "board 'b': key 'run_end': item 2: expected a string, found integer");
        let e = err_of(&GOOD.replace("name = \"b\"\n", ""));
        assert_eq!(e, "board #1: missing key 'name'");
        let e = err_of(&format!("{GOOD}{GOOD}"));
        assert_eq!(e, "board 'b': defined twice");
    }

    #[test]
    fn malformed_toml_is_an_error_not_a_panic() {
        let e = err_of("[[board]\nname = ");
        assert!(e.starts_with("not valid TOML"), "{e}");
        assert_eq!(err_of("x = 1"), "unknown top-level key 'x' (boards are [[board]] tables)");
        assert_eq!(err_of(""), "no [[board]] table");
        assert_eq!(err_of("board = 3"), "'board' must be an array of tables ([[board]])");
    }

    #[test]
    fn unknown_board_lists_known_ones() {
        let e = find(&three(), "d").unwrap_err().0;
        assert_eq!(e, "unknown board 'd' (boards.toml has: a, b, c)");
    }

    #[test]
    fn select_prefers_a_non_default_board() {
        let boards = three();
        let pick = |on: &[&str]| select(&boards, |f| on.contains(&f)).map(|b| b.name.clone());
        assert_eq!(pick(&["a"]).unwrap(), "a");
        assert_eq!(pick(&["a", "c"]).unwrap(), "c");
        assert_eq!(pick(&["b"]).unwrap(), "b");
        assert_eq!(pick(&["a", "b", "c"]).unwrap_err().0, "select one board: the features `b` and `c` exclude each other");
        assert_eq!(pick(&[]).unwrap_err().0, "no [[board]] table's feature is enabled (features: a, b, c)");
    }

    #[test]
    fn kernel_facts_state_the_table() {
        let boards = three();
        let c = kernel_facts(&boards[2]);
        assert_eq!(boards[2].source_file(), "c.rs");
        for line in [
            "pub const NAME: &str = \"c\";",
            "pub const CONSOLE_BASE: usize = 0x9000000;",
            "pub const CONSOLE_CLOCK_HZ: Option<u32> = Some(48000000);",
            "pub const SPIN_TABLE: Option<usize> = Some(0xd8);",
            "pub const QEMU_KERNEL_ARGS: Option<&str> = Some(\"\");",
            "#[link_section = \".rodata.cs_board\"]",
            "static BOARD_TAG: [u8; 19] = *b\"cachescope-board=c\\0\";",
        ] {
            assert!(c.lines().any(|l| l == line), "no line {line:?} in:\n{c}");
        }
        let a = kernel_facts(&boards[0]);
        assert!(
            a.contains("pub const CONSOLE_CLOCK_HZ: Option<u32> = None;\n") && a.contains("SPIN_TABLE: Option<usize> = None;\n"),
            "{a}"
        );
        let none = Board { qemu: None, ..boards[0].clone() };
        assert!(kernel_facts(&none).contains("pub const QEMU_KERNEL_ARGS: Option<&str> = None;\n"));
        let ds = Board { name: "with-dash".into(), ..boards[0].clone() };
        assert_eq!(ds.source_file(), "with_dash.rs");
    }

    /// Every board's cargo feature is declared by the kernel crate (its `[features]` table).
    /// build.rs and the scripts read board facts from boards.toml instead of restating them: no
    /// code line (comments aside) names a board's image, DTB, SD card, firmware file or machine.
    #[test]
    fn build_and_scripts_read_boards_toml() {
        let files = ["build.rs", "scripts/mkimage", "scripts/mksdcard", "scripts/check-images", "scripts/qemu-run", "scripts/board-of"];
        let build = repo_file("build.rs");
        assert!(build.contains("boards.toml") && build.contains("link_base"), "build.rs reads link_base from boards.toml");
        for b in repo_boards() {
            let mut facts: Vec<String> = [&b.image, &b.dtb, &b.sdcard].into_iter().flatten().cloned().collect();
            facts.extend(b.firmware.iter().cloned());
            facts.extend(b.qemu.iter().map(|q| q.machine.clone()).filter(|m| m != "virt"));
            for file in files {
                for (n, line) in repo_file(file).lines().enumerate() {
                    let code = line.split(" #").next().unwrap_or("").trim_start();
                    if code.starts_with('#') || code.starts_with("//") {
                        continue;
                    }
                    for fact in &facts {
                        assert!(
                            !code.contains(fact.as_str()),
                            "{file}:{}: names '{fact}' of board {} (read it from boards.toml)",
                            n + 1,
                            b.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_board_feature_is_a_kernel_feature() {
        let manifest: Table = repo_file("Cargo.toml").parse().unwrap();
        let features = manifest.get("features").and_then(Value::as_table).expect("Cargo.toml has [features]");
        for b in repo_boards() {
            assert!(features.contains_key(&b.feature), "{}: feature '{}' not in Cargo.toml [features]", b.name, b.feature);
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/bsp").join(b.source_file());
            assert!(source.is_file(), "{}: no {}", b.name, source.display());
        }
    }

    #[test]
    fn every_pi_config_sends_the_firmware_log_to_the_uart() {
        // Without uart_2ndstage=1 a first boot that fails inside the firmware shows nothing.
        for b in repo_boards().iter().filter(|b| !b.config_txt.is_empty()) {
            assert!(b.config_txt.iter().any(|l| l == "uart_2ndstage=1"), "{}: config.txt lacks uart_2ndstage=1", b.name);
        }
    }

    #[test]
    fn value_text_for_scripts() {
        let text = repo_file("boards.toml");
        let boards = repo_boards();
        for b in &boards {
            assert_eq!(value_text(&text, &b.name, "link_base").unwrap(), format!("{:#x}", b.link_base));
            assert_eq!(value_text(&text, &b.name, "image").unwrap(), b.image.clone().unwrap_or_else(|| "none".into()));
            assert_eq!(value_text(&text, &b.name, "config_txt").unwrap(), b.config_txt.join("\n"));
            assert_eq!(value_text(&text, &b.name, "qemu_cpu").unwrap(), b.qemu.as_ref().and_then(|q| q.cpu.clone()).unwrap_or_default());
            assert!(value_text(&text, &b.name, "nope").is_err());
        }
        assert!(value_text(&text, "no-such-board", "image").is_err());
    }
}
