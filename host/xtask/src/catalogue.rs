//! The test catalogue: `tests/catalogue.toml`, one table per kernel run (kvm-unit-tests'
//! unittests.cfg, in TOML). The keys are documented at the top of the file itself.
//!
//! Every error names the row and the key ("tests/catalogue.toml: row 'boot-el1': key 'exit':
//! expected an integer, found string"); unknown keys, duplicate rows and regular expressions
//! that `grep -E` would read differently are refused.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use regex::Regex;
use toml::{Table, Value};

/// One expected output line: an extended regular expression, matched line by line.
#[derive(Clone, Debug)]
pub struct Expect {
    /// The expression as written in the catalogue.
    pub source: String,
    /// Compiled.
    pub regex: Regex,
}

/// One row: one boot of one kernel on one machine, with its expected exit status and output.
#[derive(Clone, Debug)]
pub struct Row {
    /// Row name (the table name; also the log's file name).
    pub name: String,
    /// Test kernel (`tests/NAME.rs`) or `cachescope` (the main job).
    pub kernel: String,
    /// Groups (CS_GROUP selects one).
    pub groups: Vec<String>,
    /// QEMU `-M` value.
    pub machine: String,
    /// QEMU `-cpu` value, if the row names one.
    pub cpu: Option<String>,
    /// Extra QEMU arguments (may be empty).
    pub qemu: String,
    /// Environment for scripts/qemu-run, in file order.
    pub env: Vec<(String, String)>,
    /// Kernel arguments.
    pub args: Vec<String>,
    /// Exit status the run must end with.
    pub exit: i32,
    /// Seconds before the runner stops QEMU.
    pub timeout: u32,
    /// Each must match some line of the log or of the cache model's records.
    pub expect: Vec<Expect>,
    /// The output is usage text for a person, not a KTAP run (check-logs skips it).
    pub usage_text: bool,
    /// Timing-sensitive: never run next to another row.
    pub serial: bool,
}

impl Row {
    /// The QEMU machine's name without options (`virt,secure=on` → `virt`).
    pub fn machine_name(&self) -> &str {
        self.machine.split(',').next().unwrap_or_default()
    }

    /// Whether the row is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// A catalogue that cannot be used: the message names the row and the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogueError(pub String);

impl fmt::Display for CatalogueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CatalogueError {}

/// Every key a row may have.
pub const KEYS: &[&str] =
    &["like", "kernel", "groups", "machine", "cpu", "qemu", "env", "args", "exit", "timeout", "expect", "usage_text", "serial"];

/// Reads and checks a catalogue file; errors start with its path.
pub fn load(path: &Path) -> Result<Vec<Row>, CatalogueError> {
    let text = std::fs::read_to_string(path).map_err(|e| CatalogueError(format!("{}: cannot read: {e}", path.display())))?;
    parse(&text).map_err(|CatalogueError(m)| CatalogueError(format!("{}: {m}", path.display())))
}

/// Parses the text of a catalogue. Rows keep the file's order.
pub fn parse(text: &str) -> Result<Vec<Row>, CatalogueError> {
    duplicates(text)?;
    let table: Table =
        text.parse().map_err(|e: toml::de::Error| CatalogueError(format!("not valid TOML: {}", e.to_string().trim_end())))?;
    let mut rows = Vec::new();
    for (name, value) in &table {
        let Value::Table(t) = value else {
            return Err(CatalogueError(format!("top-level key '{name}': a row is a table ([{name}]), found {}", value.type_str())));
        };
        rows.push(row(name, &inherit(name, t, &table)?)?);
    }
    if rows.is_empty() {
        return Err(CatalogueError("no rows".into()));
    }
    Ok(rows)
}

/// A row defined twice is a TOML error too; this names the row and both lines.
fn duplicates(text: &str) -> Result<(), CatalogueError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        let Some(inner) = l.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else { continue };
        if inner.starts_with('[') {
            continue;
        }
        let name = inner.trim().trim_matches('"');
        if let Some(first) = seen.insert(name, i + 1) {
            return Err(CatalogueError(format!("row '{name}': defined twice (lines {first} and {})", i + 1)));
        }
    }
    Ok(())
}

struct Fields<'a> {
    table: &'a Table,
    name: &'a str,
}

impl Fields<'_> {
    fn err(&self, key: &str, what: impl fmt::Display) -> CatalogueError {
        CatalogueError(format!("row '{}': key '{key}': {what}", self.name))
    }

    fn get(&self, key: &str) -> Result<&Value, CatalogueError> {
        self.table.get(key).ok_or_else(|| CatalogueError(format!("row '{}': missing key '{key}'", self.name)))
    }

    fn string(&self, key: &str) -> Result<String, CatalogueError> {
        match self.get(key)? {
            Value::String(s) if s.trim().is_empty() => Err(self.err(key, "empty")),
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(key, format!("expected a string, found {}", other.type_str()))),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, CatalogueError> {
        if self.table.contains_key(key) {
            self.string(key).map(Some)
        } else {
            Ok(None)
        }
    }

    fn int(&self, key: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64, CatalogueError> {
        match self.get(key)? {
            Value::Integer(n) if range.contains(n) => Ok(*n),
            Value::Integer(n) => Err(self.err(key, format!("{n} is not in {}..={}", range.start(), range.end()))),
            other => Err(self.err(key, format!("expected an integer, found {}", other.type_str()))),
        }
    }

    fn flag(&self, key: &str) -> Result<bool, CatalogueError> {
        match self.table.get(key) {
            None => Ok(false),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.err(key, format!("expected true or false, found {}", other.type_str()))),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, CatalogueError> {
        match self.get(key)? {
            Value::Array(items) if items.is_empty() => Err(self.err(key, "empty list")),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    Value::String(_) => Err(self.err(key, format!("item {}: empty", i + 1))),
                    other => Err(self.err(key, format!("item {}: expected a string, found {}", i + 1, other.type_str()))),
                })
                .collect(),
            other => Err(self.err(key, format!("expected a list of strings, found {}", other.type_str()))),
        }
    }
}

/// A row with `like = "OTHER"` is OTHER's keys with its own on top (a key it sets replaces
/// OTHER's whole value: `env` and `expect` too); OTHER is an earlier or later row without `like`.
fn inherit(name: &str, t: &Table, all: &Table) -> Result<Table, CatalogueError> {
    let Some(like) = t.get("like") else { return Ok(t.clone()) };
    let err = |what: String| CatalogueError(format!("row '{name}': key 'like': {what}"));
    let Value::String(base_name) = like else { return Err(err(format!("expected a row name, found {}", like.type_str()))) };
    let base = match all.get(base_name) {
        Some(Value::Table(b)) if base_name != name => b,
        Some(_) if base_name == name => return Err(err("a row cannot be like itself".into())),
        _ => return Err(err(format!("no row '{base_name}'"))),
    };
    if base.contains_key("like") {
        return Err(err(format!("'{base_name}' is itself like another row (one level only)")));
    }
    let mut merged = base.clone();
    merged.extend(t.iter().filter(|(k, _)| k.as_str() != "like").map(|(k, v)| (k.clone(), v.clone())));
    Ok(merged)
}

fn is_env_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some('A'..='Z' | '_')) && c.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn row(name: &str, t: &Table) -> Result<Row, CatalogueError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
        return Err(CatalogueError(format!("row '{name}': a row name is letters, digits, '-', '_' and '.' (it names the log file)")));
    }
    let f = Fields { table: t, name };
    for key in t.keys() {
        if !KEYS.contains(&key.as_str()) {
            return Err(CatalogueError(format!("row '{name}': unknown key '{key}' (known: {})", KEYS.join(", "))));
        }
    }
    let groups = f.strings("groups")?;
    if let Some(g) = groups.iter().find(|g| g.contains(|c: char| c == ',' || c.is_whitespace())) {
        return Err(f.err("groups", format!("'{g}': one group per item")));
    }
    let env = match t.get("env") {
        None => Vec::new(),
        Some(Value::Table(e)) => e
            .iter()
            .map(|(k, v)| {
                if !is_env_name(k) {
                    return Err(f.err("env", format!("'{k}' is not an environment variable name (A-Z, 0-9, _)")));
                }
                match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(f.err("env", format!("'{k}': expected a string, found {}", other.type_str()))),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(other) => Err(f.err("env", format!("expected a table ({{ NAME = \"value\" }}), found {}", other.type_str())))?,
    };
    let expect = f
        .strings("expect")?
        .into_iter()
        .enumerate()
        .map(|(i, source)| {
            ere_compatible(&source).map_err(|e| f.err("expect", format!("item {} /{source}/: {e}", i + 1)))?;
            let regex = Regex::new(&source).map_err(|e| f.err("expect", format!("item {} /{source}/: bad regex: {e}", i + 1)))?;
            Ok(Expect { source, regex })
        })
        .collect::<Result<_, CatalogueError>>()?;
    Ok(Row {
        name: name.to_string(),
        kernel: f.string("kernel")?,
        groups,
        machine: f.string("machine")?,
        cpu: f.opt_string("cpu")?,
        qemu: f.opt_string("qemu")?.unwrap_or_default(),
        env,
        args: f.opt_string("args")?.map(|a| a.split_whitespace().map(str::to_string).collect()).unwrap_or_default(),
        exit: f.int("exit", 0..=255)? as i32,
        timeout: f.int("timeout", 1..=3600)? as u32,
        expect,
        usage_text: f.flag("usage_text")?,
        serial: f.flag("serial")?,
    })
}

/// Refuses the syntax that the `regex` crate and `grep -E` (POSIX ERE, GNU) read differently,
/// so an expectation means what it meant when the catalogue was checked with grep: escapes of
/// letters or digits (`\d`, `\b`, back-references), `(?` groups, lazy quantifiers, and a
/// backslash inside a bracket expression (literal in ERE, an escape here).
pub fn ere_compatible(re: &str) -> Result<(), String> {
    let chars: Vec<char> = re.chars().collect();
    let mut i = 0;
    let mut prev_quant = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else { return Err("ends with a lone '\\'".into()) };
                if n.is_ascii_alphanumeric() {
                    return Err(format!("'\\{n}' means different things in grep -E and here; write a bracket expression"));
                }
                i += 2;
                prev_quant = false;
                continue;
            }
            '[' => {
                // A bracket expression: ']' first (after an optional '^') is literal; [:class:] inside.
                let mut j = i + 1;
                if chars.get(j) == Some(&'^') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                loop {
                    match chars.get(j) {
                        None => return Err("unclosed bracket expression".into()),
                        Some(']') => break,
                        Some('\\') => return Err("'\\' inside a bracket expression is literal in grep -E, an escape here".into()),
                        Some('[') if matches!(chars.get(j + 1), Some(':' | '.' | '=')) => {
                            let close = chars[j + 2..].iter().position(|&c| c == ']').map(|p| j + 2 + p);
                            j = close.ok_or("unclosed character class")? + 1;
                        }
                        Some(_) => j += 1,
                    }
                }
                i = j + 1;
                prev_quant = false;
                continue;
            }
            '(' if chars.get(i + 1) == Some(&'?') => return Err("'(?' groups are not grep -E syntax".into()),
            '?' | '*' | '+' if prev_quant && c == '?' => return Err("lazy quantifiers are not grep -E syntax".into()),
            _ => {}
        }
        prev_quant = matches!(c, '?' | '*' | '+' | '}');
        i += 1;
    }
    Ok(())
}

/// Whether every expectation matches some line of `texts` (the log, the model's records).
/// Returns the first expectation that matches no line.
pub fn first_unmatched<'r>(row: &'r Row, texts: &[&str]) -> Option<&'r Expect> {
    row.expect.iter().find(|e| !texts.iter().any(|t| t.lines().any(|l| e.regex.is_match(l))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[a-row]
kernel = "boot"
groups = ["el", "quick"]
machine = "virt,secure=on"
cpu = "cortex-a72"
qemu = "-smp 2"
env = { QEMU_CACHE_MODEL = "on" }
args = "only=boot  reps=1"
exit = 0
timeout = 30
expect = [
    '"el":3,',
    '^ok 1 boot$',
]
"#;

    fn err_of(text: &str) -> String {
        parse(text).expect_err("must be refused").0
    }

    #[test]
    fn row_parses() {
        let r = &parse(GOOD).unwrap()[0];
        assert_eq!(r.name, "a-row");
        assert_eq!(r.machine_name(), "virt");
        assert_eq!(r.args, ["only=boot", "reps=1"]);
        assert_eq!(r.env, [("QEMU_CACHE_MODEL".to_string(), "on".to_string())]);
        assert!(r.in_group("quick") && !r.in_group("qui"));
        assert!(!r.usage_text && !r.serial);
        assert!(first_unmatched(r, &["x\n\"el\":3,\nok 1 boot\n"]).is_none());
        assert_eq!(first_unmatched(r, &["\"el\":3,\n", "ok 1 boot # SKIP\n"]).unwrap().source, "^ok 1 boot$");
    }

    #[test]
    fn errors_name_row_and_key() {
        let e = err_of(&GOOD.replace("exit = 0", "exit = \"0\""));
        assert_eq!(e, "row 'a-row': key 'exit': expected an integer, found string");
        let e = err_of(&GOOD.replace("exit = 0", "exit = 256"));
        assert_eq!(e, "row 'a-row': key 'exit': 256 is not in 0..=255");
        let e = err_of(&GOOD.replace("timeout = 30\n", ""));
        assert_eq!(e, "row 'a-row': missing key 'timeout'");
        let e = err_of(&GOOD.replace("cpu = ", "cpus = "));
        assert!(e.starts_with("row 'a-row': unknown key 'cpus' (known: like, kernel,"), "{e}");
        let e = err_of(&GOOD.replace("'\"el\":3,'", "'\"el\":(3'"));
        assert!(e.starts_with("row 'a-row': key 'expect': item 1 /\"el\":(3/: bad regex:"), "{e}");
        let e = err_of(&GOOD.replace("'\"el\":3,'", r"'\d'"));
        assert!(e.starts_with(r"row 'a-row': key 'expect': item 1 /\d/: '\d' means different"), "{e}");
        let e = err_of(&GOOD.replace("groups = [\"el\", \"quick\"]", "groups = \"el\""));
        assert_eq!(e, "row 'a-row': key 'groups': expected a list of strings, found string");
        let e = err_of(&GOOD.replace("QEMU_CACHE_MODEL = \"on\"", "qemu_model = \"on\""));
        assert!(e.starts_with("row 'a-row': key 'env': 'qemu_model' is not"), "{e}");
        let e = err_of(&GOOD.replace("QEMU_CACHE_MODEL = \"on\"", "QEMU_SMP = 2"));
        assert_eq!(e, "row 'a-row': key 'env': 'QEMU_SMP': expected a string, found integer");
        let e = err_of(&format!("{GOOD}{}", GOOD.replace("a-row", "b").replace("expect = [", "serial = 1\nexpect = [")));
        assert_eq!(e, "row 'b': key 'serial': expected true or false, found integer");
        let e = err_of(&format!("{GOOD}\n{GOOD}"));
        assert_eq!(e, "row 'a-row': defined twice (lines 2 and 18)");
        assert_eq!(err_of("x = 1"), "top-level key 'x': a row is a table ([x]), found integer");
        assert!(err_of("[a\nkernel=").starts_with("not valid TOML"));
        assert_eq!(err_of("# nothing\n"), "no rows");
    }

    #[test]
    fn like_takes_the_other_rows_keys_under_its_own() {
        let text = format!("{GOOD}\n[b-row]\nlike = \"a-row\"\nenv = {{ QEMU_CACHE_MODEL = \"fast=off\" }}\ngroups = [\"model\"]\n");
        let rows = parse(&text).unwrap();
        let (a, b) = (&rows[0], &rows[1]);
        assert_eq!(b.name, "b-row");
        assert_eq!(b.env, [("QEMU_CACHE_MODEL".to_string(), "fast=off".to_string())]);
        assert_eq!(b.groups, ["model"]);
        assert_eq!((&b.kernel, &b.machine, &b.args, b.exit, b.timeout), (&a.kernel, &a.machine, &a.args, a.exit, a.timeout));
        assert_eq!(b.expect.len(), a.expect.len());
        let like = |v: &str| format!("{GOOD}\n[b-row]\nlike = {v}\n");
        assert_eq!(err_of(&like("\"nope\"")), "row 'b-row': key 'like': no row 'nope'");
        assert_eq!(err_of(&like("\"b-row\"")), "row 'b-row': key 'like': a row cannot be like itself");
        assert_eq!(err_of(&like("1")), "row 'b-row': key 'like': expected a row name, found integer");
        let chain = format!("{}\n[c-row]\nlike = \"b-row\"\n", like("\"a-row\""));
        assert_eq!(err_of(&chain), "row 'c-row': key 'like': 'b-row' is itself like another row (one level only)");
    }

    #[test]
    fn ere_differences_are_refused() {
        for ok in [r"a\(b\)", "[0-9]+", "^x$", r"[^}]*", "[[:digit:]]{1,2}", r"0x\+5", r"\?", "[]a]", "a+b?"] {
            assert_eq!(ere_compatible(ok), Ok(()), "{ok}");
        }
        for bad in [r"\d", r"\b", r"(?i)x", "a+?", r"[\]]", "[a", r"x\", r"\1"] {
            assert!(ere_compatible(bad).is_err(), "{bad}");
        }
    }

    /// The committed catalogue parses, and every row's machine emulates a board of boards.toml.
    #[test]
    fn repo_catalogue_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let rows = load(&root.join("tests/catalogue.toml")).unwrap();
        assert!(rows.len() >= 70, "{}", rows.len());
        let boards = crate::boards::load(&root.join("boards.toml")).unwrap();
        for r in &rows {
            assert!(
                boards.iter().any(|b| b.qemu.as_ref().is_some_and(|q| q.machine == r.machine_name())),
                "{}: machine {} emulates no board",
                r.name,
                r.machine
            );
        }
        let help: Vec<&str> = rows.iter().filter(|r| r.usage_text).map(|r| r.name.as_str()).collect();
        assert_eq!(help, ["main-help"]);
    }
}
