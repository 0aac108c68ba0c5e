//! Symbols of a firmware ELF: the function and `file:line` of a PC, from the ELF's symbol table
//! and its DWARF line tables (gimli's `addr2line` over the `object` crate's ELF reader).
//!
//! A PC the model reports is a runtime address; the ELF's are link addresses. A relocated or
//! KASLR image runs at `link + load_offset` ([`Symbols::load`]'s `load_offset`), so a PC is
//! looked up at `pc - load_offset`.
//!
//! The function is the innermost DWARF frame's (an inlined function names itself, as KCSAN's
//! stacks do), else the symbol table's: the function symbol (`STT_FUNC`) whose range holds the
//! address, else the nearest code symbol at or below it (assembly labels without `.size`). The
//! line is the DWARF line table's, shown as `basename:line`. One home for observe and the report
//! tool.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// Where a PC lies in the firmware's source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    /// The function (demangled, without Rust's hash), `None` when no symbol covers the PC.
    pub function: Option<String>,
    /// Bytes from the function's symbol to the PC, when the function came from the symbol table.
    pub offset: Option<u64>,
    /// The source file's full path as DWARF names it.
    pub file: Option<String>,
    /// The line.
    pub line: Option<u32>,
    /// Functions inlined at the PC, innermost first, each `name (file:line)`.
    pub inlined: Vec<String>,
}

impl Place {
    /// `basename:line` (the expectation file's `line`), `None` without DWARF lines.
    pub fn file_line(&self) -> Option<String> {
        let file = self.file.as_deref()?;
        let base = Path::new(file).file_name().map_or(Cow::Borrowed(file), |b| b.to_string_lossy());
        Some(format!("{base}:{}", self.line?))
    }

    /// `function (file:line)`, `function+0xoff`, or `?` when nothing is known.
    pub fn describe(&self) -> String {
        let f = match (&self.function, self.offset) {
            (Some(f), Some(o)) if o != 0 && self.line.is_none() => format!("{f}+{o:#x}"),
            (Some(f), _) => f.clone(),
            (None, _) => "?".into(),
        };
        // The innermost frames say what the instruction does (a volatile read); at most four.
        let inl = match self.inlined.len() {
            0 => String::new(),
            n if n <= 4 => format!(" [inlined: {}]", self.inlined.join(" < ")),
            n => format!(" [inlined: {} < … {} more]", self.inlined[..4].join(" < "), n - 4),
        };
        match self.file_line() {
            Some(l) => format!("{f} ({l}){inl}"),
            None => format!("{f}{inl}"),
        }
    }
}

/// One symbol-table entry: start, size (0: unknown), name, whether it is a function symbol.
#[derive(Clone, Debug)]
struct Sym {
    addr: u64,
    size: u64,
    name: String,
    func: bool,
}

/// A firmware ELF's symbols.
pub struct Symbols {
    syms: Vec<Sym>,
    dwarf: Option<addr2line::Context<Reader>>,
    load_offset: i64,
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbols").field("symbols", &self.syms.len()).field("dwarf", &self.dwarf.is_some()).finish()
    }
}

/// Whether `bytes` start like an ELF file (the magic).
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

impl Symbols {
    /// Reads the ELF at `path`. Err: a message naming the file and the problem.
    pub fn load(path: &Path, load_offset: i64) -> Result<Symbols, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Symbols::parse(&bytes, load_offset).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses an ELF image.
    pub fn parse(bytes: &[u8], load_offset: i64) -> Result<Symbols, String> {
        if !is_elf(bytes) {
            return Err("not an ELF file (no \\x7fELF magic): give the firmware's ELF with --elf".into());
        }
        let file = object::File::parse(bytes).map_err(|e| format!("not a readable ELF: {e}"))?;
        let mut syms: Vec<Sym> = file
            .symbols()
            .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Label | SymbolKind::Unknown) && s.is_definition())
            .filter(|s| {
                s.section_index().is_some_and(|i| file.section_by_index(i).is_ok_and(|sec| sec.kind() == object::SectionKind::Text))
            })
            .filter_map(|s| {
                let name = s.name().ok()?;
                // Mapping symbols ($x, $d) and compiler-local labels name no function.
                if name.is_empty() || name.starts_with('$') || name.starts_with(".L") {
                    return None;
                }
                let name = addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned();
                Some(Sym { addr: s.address(), size: s.size(), func: s.kind() == SymbolKind::Text, name })
            })
            .collect();
        syms.sort_by(|a, b| a.addr.cmp(&b.addr).then(b.func.cmp(&a.func)).then(b.size.cmp(&a.size)));
        let endian = if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
        let has_debug = file.section_by_name(".debug_info").is_some() || file.section_by_name(".debug_line").is_some();
        let dwarf = if has_debug {
            let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
                let data = file
                    .section_by_name(id.name())
                    .and_then(|s| s.uncompressed_data().ok())
                    .map(|d| Arc::<[u8]>::from(d.as_ref()))
                    .unwrap_or_else(|| Arc::from(&[][..]));
                Ok(gimli::EndianArcSlice::new(data, endian))
            };
            let d = gimli::Dwarf::load(load).map_err(|e| format!("its DWARF cannot be read: {e}"))?;
            Some(addr2line::Context::from_dwarf(d).map_err(|e| format!("its DWARF cannot be read: {e}"))?)
        } else {
            None
        };
        Ok(Symbols { syms, dwarf, load_offset })
    }

    /// Whether the ELF has neither a symbol table nor DWARF (stripped): nothing can be named.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty() && self.dwarf.is_none()
    }

    /// Whether the ELF has DWARF (file:line); without it only functions are known.
    pub fn has_lines(&self) -> bool {
        self.dwarf.is_some()
    }

    /// The link address of runtime address `pc` (`None` below the load offset).
    fn link(&self, pc: u64) -> Option<u64> {
        pc.checked_add_signed(self.load_offset.checked_neg()?)
    }

    /// The symbol-table function holding `addr` and the offset into it.
    fn symbol(&self, addr: u64) -> Option<(&str, u64)> {
        let end = self.syms.partition_point(|s| s.addr <= addr);
        let below = &self.syms[..end];
        // A function symbol whose range holds the address wins over a later label inside it.
        if let Some(s) = below.iter().rev().take(64).find(|s| s.func && s.size > 0 && addr < s.addr + s.size) {
            return Some((&s.name, addr - s.addr));
        }
        let s = below.last()?;
        let ends_before = |f: &Sym| f.size > 0 && addr >= f.addr + f.size;
        // Past a sized symbol (or past the function a label lies in) and inside no other:
        // padding or code without a symbol.
        if ends_before(s) || below.iter().rev().take(64).any(|f| f.func && f.addr <= s.addr && s.addr < f.addr + f.size && ends_before(f)) {
            return None;
        }
        Some((&s.name, addr - s.addr))
    }

    /// Where runtime address `pc` lies: the function it belongs to (the outermost DWARF frame,
    /// the one the symbol table names: inlined code belongs to the function it was inlined
    /// into) and that function's line, with the inlined frames innermost first.
    pub fn place(&self, pc: u64) -> Place {
        let Some(addr) = self.link(pc) else { return Place::default() };
        let mut place = Place::default();
        if let Some(ctx) = &self.dwarf {
            let mut frames: Vec<(Option<String>, Option<String>, Option<u32>)> = Vec::new();
            if let Ok(mut it) = ctx.find_frames(addr).skip_all_loads() {
                while let Ok(Some(f)) = it.next() {
                    let name = f.function.as_ref().and_then(|n| n.demangle().ok()).map(Cow::into_owned);
                    let (file, line) = f.location.as_ref().map_or((None, None), |l| (l.file.map(String::from), l.line));
                    frames.push((name, file, line));
                }
            }
            if let Some((name, file, line)) = frames.pop() {
                place.function = name;
                place.file = file;
                place.line = line;
                place.inlined = frames
                    .into_iter()
                    .map(|(n, f, l)| {
                        let at = Place { file: f, line: l, ..Place::default() }.file_line();
                        let n = n.unwrap_or_else(|| "?".into());
                        at.map_or(n.clone(), |a| format!("{n} ({a})"))
                    })
                    .collect();
            }
            if place.line.is_none() {
                if let Ok(Some(l)) = ctx.find_location(addr) {
                    place.file = l.file.map(String::from);
                    place.line = l.line;
                }
            }
        }
        if let Some((name, off)) = self.symbol(addr) {
            if place.function.is_none() {
                place.function = Some(name.to_string());
            }
            place.offset = Some(off);
        }
        place
    }

    /// The function holding `pc` (as [`Symbols::place`] names it), for folding per function.
    pub fn function(&self, pc: u64) -> Option<String> {
        self.place(pc).function
    }
}

/// The running test binary's symbols, with its position-independent load offset found from
/// one of its own functions (tests of the modules that read symbols).
#[cfg(test)]
pub(crate) fn this_binary() -> Symbols {
    let s0 = tests::own();
    let off = tests::pie_offset(&s0);
    Symbols { load_offset: off, ..s0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report tool's own test binary: a real ELF the build produced, with DWARF (a debug
    /// test build) and symbols. This very function is looked up by its own address.
    #[inline(never)]
    fn marker_function() -> u64 {
        std::hint::black_box(0x5eed)
    }

    pub(super) fn own() -> Symbols {
        let exe = std::env::current_exe().unwrap();
        Symbols::load(&exe, 0).unwrap()
    }

    /// The runtime load offset of this (position-independent) executable: the address of
    /// `marker_function` minus its link address in the symbol table.
    pub(super) fn pie_offset(s: &Symbols) -> i64 {
        let runtime = marker_function as *const () as u64;
        let link = s.syms.iter().find(|x| x.name.ends_with("symbols::tests::marker_function")).expect("symbol").addr;
        runtime.wrapping_sub(link) as i64
    }

    #[test]
    fn a_function_of_this_binary_resolves_to_its_name_file_and_line() {
        let s0 = own();
        let s = Symbols { load_offset: pie_offset(&s0), ..s0 };
        assert!(s.has_lines(), "a debug test build has DWARF");
        let p = s.place(marker_function as *const () as u64);
        assert!(p.function.as_deref().is_some_and(|f| f.ends_with("marker_function")), "{p:?}");
        let fl = p.file_line().expect("file:line");
        assert!(fl.starts_with("symbols.rs:"), "{fl}");
        let line: u32 = fl["symbols.rs:".len()..].parse().unwrap();
        let src = include_str!("symbols.rs");
        let decl = src.lines().position(|l| l.contains("fn marker_function")).unwrap() as u32 + 1;
        assert!((decl..decl + 3).contains(&line), "line {line}, declared at {decl}");
        assert!(p.describe().contains("marker_function (symbols.rs:"), "{}", p.describe());
    }

    #[test]
    fn the_load_offset_moves_every_lookup() {
        let s0 = own();
        let off = pie_offset(&s0);
        let pc = marker_function as *const () as u64;
        let moved = Symbols { load_offset: off + 0x1000, ..own() };
        let f = moved.place(pc + 0x1000).function;
        assert!(f.as_deref().is_some_and(|f| f.ends_with("marker_function")), "{f:?}");
        // Below the load offset nothing is known.
        let high = Symbols { load_offset: i64::MAX, ..own() };
        assert_eq!(high.place(0x1000), Place::default());
    }

    #[test]
    fn symbol_table_fallback_and_labels() {
        let s = Symbols {
            syms: vec![
                Sym { addr: 0x1000, size: 0x40, name: "copy_and_run".into(), func: true },
                Sym { addr: 0x1010, size: 0, name: "inner_label".into(), func: false },
                Sym { addr: 0x2000, size: 0, name: "entry".into(), func: false },
            ],
            dwarf: None,
            load_offset: 0x10,
        };
        let p = s.place(0x1030);
        assert_eq!((p.function.as_deref(), p.offset, p.file_line()), (Some("copy_and_run"), Some(0x20), None));
        assert_eq!(p.describe(), "copy_and_run+0x20");
        // Past a sized function and no other symbol: unknown.
        assert_eq!(s.place(0x1060).function, None);
        assert_eq!(s.place(0x2014).describe(), "entry+0x4");
        assert_eq!(s.place(0x10).describe(), "?");
    }

    #[test]
    fn not_an_elf_is_refused_by_name() {
        let e = Symbols::parse(b"\xd5\x03\x20\x1f u-boot.bin", 0).unwrap_err();
        assert!(e.starts_with("not an ELF file"), "{e}");
        let e = Symbols::load(Path::new("/nonexistent/fw.elf"), 0).unwrap_err();
        assert!(e.starts_with("/nonexistent/fw.elf: cannot read"), "{e}");
        let e = Symbols::parse(b"\x7fELF\x02\x01\x01 truncated", 0).unwrap_err();
        assert!(e.starts_with("not a readable ELF"), "{e}");
    }
}
