//! `check-images [DIR]` and `check-images --sdcard IMAGE BOARD [SOURCE_DIR]`: checks what
//! scripts/mkimage and scripts/mksdcard built by reading the files themselves (scripts/check-images
//! execs it; its header lists the checks). The ELF is read here ([`Elf`]: header, program headers,
//! the `_start` symbol); the image's first instructions are disassembled with llvm-objdump from
//! the image alone; the card is read with sfdisk and mtools.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::boards::Board;
use crate::run::say;

/// `e_machine` of AArch64.
const EM_AARCH64: u16 = 183;
/// `e_type` of an executable.
const ET_EXEC: u16 = 2;
/// `p_type` of a loadable segment.
const PT_LOAD: u32 = 1;
/// `sh_type` of a symbol table.
const SHT_SYMTAB: u32 = 2;

/// A loadable segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// File offset.
    pub offset: u64,
    /// Virtual address.
    pub vaddr: u64,
    /// Physical (load) address.
    pub paddr: u64,
    /// Bytes in the file.
    pub filesz: u64,
}

/// What the checks read of an ELF64 little-endian file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elf {
    /// `e_type`.
    pub kind: u16,
    /// `e_machine`.
    pub machine: u16,
    /// `e_entry`.
    pub entry: u64,
    /// The PT_LOAD segments, in file order.
    pub loads: Vec<Segment>,
    /// The value of the `_start` symbol, if the symbol table has one.
    pub start: Option<u64>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Elf {
    /// Parses an ELF64 little-endian file; `None` when it is not one or is cut short.
    pub fn parse(b: &[u8]) -> Option<Elf> {
        if b.get(..6)? != b"\x7fELF\x02\x01" {
            return None;
        }
        let (kind, machine, entry) = (u16_at(b, 16)?, u16_at(b, 18)?, u64_at(b, 24)?);
        let (phoff, shoff) = (u64_at(b, 32)? as usize, u64_at(b, 40)? as usize);
        let (phentsize, phnum) = (u16_at(b, 54)? as usize, u16_at(b, 56)? as usize);
        let (shentsize, shnum) = (u16_at(b, 58)? as usize, u16_at(b, 60)? as usize);
        let mut loads = Vec::new();
        for i in 0..phnum {
            let p = phoff + i * phentsize;
            if u32_at(b, p)? == PT_LOAD {
                loads.push(Segment {
                    offset: u64_at(b, p + 8)?,
                    vaddr: u64_at(b, p + 16)?,
                    paddr: u64_at(b, p + 24)?,
                    filesz: u64_at(b, p + 32)?,
                });
            }
        }
        let section = |i: usize| shoff + i * shentsize;
        let mut start = None;
        for i in 0..shnum {
            let s = section(i);
            if u32_at(b, s + 4)? != SHT_SYMTAB {
                continue;
            }
            let (off, size, link, entsize) =
                (u64_at(b, s + 24)? as usize, u64_at(b, s + 32)? as usize, u32_at(b, s + 40)? as usize, u64_at(b, s + 56)? as usize);
            let strtab = u64_at(b, section(link) + 24)? as usize;
            for sym in (off..off + size).step_by(entsize.max(24)) {
                let name = strtab + u32_at(b, sym)? as usize;
                if b.get(name..name + 7) == Some(b"_start\0") {
                    start = Some(u64_at(b, sym + 8)?);
                }
            }
        }
        Some(Elf { kind, machine, entry, loads, start })
    }
}

/// `printf '%#x'`: 0x and hex digits, but 0 as `0`.
pub fn hash_x(v: u64) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

/// The end of the loadable bytes: the highest `vaddr + filesz` of a segment with file contents
/// (0 when none has any).
pub fn load_end(loads: &[Segment]) -> u64 {
    loads.iter().filter(|s| s.filesz > 0).map(|s| s.vaddr + s.filesz).max().unwrap_or(0)
}

/// Counts and prints the checks.
#[derive(Default)]
struct Checks {
    checks: usize,
    fails: usize,
}

impl Checks {
    fn ok(&mut self, what: &str) {
        self.checks += 1;
        say(&format!("ok - {what}"));
    }

    fn bad(&mut self, what: &str) {
        self.checks += 1;
        self.fails += 1;
        say(&format!("not ok - {what}"));
    }

    fn check(&mut self, what: &str, passed: bool) {
        if passed {
            self.ok(what)
        } else {
            self.bad(what)
        }
    }
}

/// The llvm tools (scripts/llvm-tool finds them).
struct Tools {
    objdump: PathBuf,
    objcopy: PathBuf,
}

fn llvm_tool(root: &Path, name: &str) -> Option<PathBuf> {
    let out = Command::new(root.join("scripts/llvm-tool")).arg(name).stdin(Stdio::null()).stderr(Stdio::inherit()).output().ok()?;
    out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// objdump's instruction lines as "address: mnemonic operands", white space collapsed.
fn instructions(out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| {
            let t = l.trim_start_matches(' ');
            t.len() < l.len()
                && t.find(':').is_some_and(|i| i > 0 && t[..i].bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)))
        })
        .map(|l| l.trim_start_matches(' ').split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    lines.join("\n")
}

impl Tools {
    fn disasm(&self, file: &Path, link: u64, n: u64) -> String {
        let out = Command::new(&self.objdump)
            .args(["-d", "--no-show-raw-insn", &format!("--start-address={link}"), &format!("--stop-address={}", link + 4 * n)])
            .arg(file)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output();
        out.map(|o| instructions(&o.stdout)).unwrap_or_default()
    }

    /// The raw bytes wrapped into a code section at the link address so llvm-objdump reads them.
    fn disasm_raw(&self, image: &Path, link: u64, n: u64) -> String {
        let tmp = std::env::temp_dir().join(format!("cachescope-disasm-{}", std::process::id()));
        if fs::create_dir_all(&tmp).is_err() {
            return String::new();
        }
        let (a, b) = (tmp.join("a.o"), tmp.join("b.o"));
        let run = |c: &mut Command| c.stdin(Stdio::null()).status().is_ok_and(|s| s.success());
        let wrapped = run(Command::new(&self.objcopy)
            .args(["-I", "binary", "-O", "elf64-littleaarch64", "--rename-section=.data=.text,alloc,code"])
            .arg(image)
            .arg(&a))
            && run(Command::new(&self.objcopy).arg(format!("--change-section-address=.text={link}")).arg(&a).arg(&b));
        let text = if wrapped { self.disasm(&b, link, n) } else { String::new() };
        let _ = fs::remove_dir_all(&tmp);
        text
    }
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

/// A board's mkimage folder: the ELF, the image, config.txt.
fn check_board_dir(c: &mut Checks, tools: &Tools, boards: &[Board], dir: &Path, board: &Board, image: &str) {
    let name = board.name.as_str();
    let (elf_path, img_path) = (dir.join("cachescope.elf"), dir.join(image));
    let link_n = board.link_base;
    let link = hash_x(link_n);
    say(&format!("# {name}: {}", img_path.display()));
    let (Ok(elf_bytes), Ok(img)) = (fs::read(&elf_path), fs::read(&img_path)) else {
        c.bad(&format!("{name}: {} and {} exist", elf_path.display(), img_path.display()));
        return;
    };
    let tag_is = |p: &Path| crate::run::board_of(p, boards).is_ok_and(|b| b == name);
    c.check(&format!("{name}: ELF board tag"), tag_is(&elf_path));
    c.check(&format!("{name}: image board tag"), tag_is(&img_path));
    let elf = Elf::parse(&elf_bytes);
    c.check(&format!("{name}: ELF is an AArch64 executable"), elf.as_ref().is_some_and(|e| e.machine == EM_AARCH64));
    c.check(&format!("{name}: ELF type EXEC"), elf.as_ref().is_some_and(|e| e.kind == ET_EXEC));
    let entry = elf.as_ref().map_or(0, |e| e.entry);
    c.check(&format!("{name}: ELF entry {} is the link address {link}", hash_x(entry)), entry == link_n);
    c.check(&format!("{name}: _start is at {link}"), elf.as_ref().and_then(|e| e.start) == Some(link_n));
    let loads = elf.map(|e| e.loads).unwrap_or_default();
    let Some(first) = loads.first() else {
        c.bad(&format!("{name}: ELF has PT_LOAD segments"));
        return;
    };
    c.check(&format!("{name}: first PT_LOAD at the link address"), first.vaddr == link_n);
    for s in loads.iter().filter(|s| s.vaddr != s.paddr) {
        c.bad(&format!("{name}: segment at {:#018x} has p_paddr {:#018x} (loaded at a different address)", s.vaddr, s.paddr));
    }
    let end = load_end(&loads);
    c.check(
        &format!("{name}: image size {} = end of loadable bytes {} - {link}", img.len(), hash_x(end)),
        img.len() as i128 == i128::from(end) - i128::from(link_n),
    );
    // Every segment's bytes at its place; everything else zero.
    let mut seg_ok = true;
    for s in loads.iter().filter(|s| s.filesz > 0) {
        let from = elf_bytes.get(s.offset as usize..).unwrap_or(&[]);
        let from = &from[..from.len().min(s.filesz as usize)];
        let at = img.get(s.vaddr.saturating_sub(link_n) as usize..).unwrap_or(&[]);
        let at = &at[..at.len().min(s.filesz as usize)];
        if from != at {
            seg_ok = false;
            c.bad(&format!("{name}: image bytes at {} equal the ELF segment ({} bytes)", hash_x(s.vaddr), s.filesz));
        }
    }
    if seg_ok {
        c.ok(&format!("{name}: every loadable segment is in the image at (p_vaddr - {link})"));
    }
    // The image with the segments' places copied from itself and zero elsewhere: equal to the
    // image exactly when the gaps are zero.
    let mut mask = vec![0u8; img.len()];
    for s in loads.iter().filter(|s| s.filesz > 0) {
        let at = s.vaddr.saturating_sub(link_n) as usize;
        let n = (s.filesz as usize).min(img.len().saturating_sub(at));
        if n > 0 {
            mask[at..at + n].copy_from_slice(&img[at..at + n]);
        }
    }
    c.check(&format!("{name}: bytes between segments are zero"), mask == img);
    let a = tools.disasm(&elf_path, link_n, 4);
    let b = tools.disasm_raw(&img_path, link_n, 4);
    for l in b.split('\n') {
        say(&format!("#   image: {l}"));
    }
    c.check(&format!("{name}: the image's first instructions at {link} are the ELF's _start"), !a.is_empty() && a == b);
    let cfg = fs::read_to_string(dir.join("config.txt")).unwrap_or_default();
    c.check(&format!("{name}: config.txt names kernel={image}"), has_line(&cfg, &format!("kernel={image}")));
    c.check(
        &format!("{name}: config.txt arm_64bit=1, kernel_address={link}"),
        has_line(&cfg, "arm_64bit=1") && has_line(&cfg, &format!("kernel_address={link}")),
    );
}

fn output(cmd: &mut Command, with_stderr: bool) -> Vec<u8> {
    cmd.stdin(Stdio::null());
    if !with_stderr {
        cmd.stderr(Stdio::null());
    }
    match cmd.output() {
        Ok(o) if with_stderr => [o.stdout, o.stderr].concat(),
        Ok(o) => o.stdout,
        Err(_) => Vec::new(),
    }
}

/// A file of the card's FAT (`mtype -i FAT ::/NAME`).
fn mtype(fat: &str, name: &str) -> Vec<u8> {
    output(Command::new("mtype").args(["-i", fat, &format!("::/{name}")]), false)
}

/// An SD card image: partition table, FAT, the board's files (boards.toml), and with `from` every
/// file equal to its source.
fn check_sdcard(c: &mut Checks, card: &Path, board: &Board, from: Option<&Path>) {
    let name = board.name.as_str();
    if !card.is_file() {
        c.bad(&format!("{} exists", card.display()));
        return;
    }
    say(&format!("# {name} SD card: {}", card.display()));
    let dump = String::from_utf8_lossy(&output(Command::new("sfdisk").arg("--dump").arg(card), false)).into_owned();
    for l in dump.lines().filter(|l| l.starts_with("label") || l.starts_with('/')) {
        say(&format!("#   {l}"));
    }
    c.check("one DOS partition, bootable, type 0x0c (FAT32 LBA)", dump.contains("type=c, bootable"));
    let start_re = regex::Regex::new(r"start= *([0-9]+),").expect("a regular expression");
    let Some(start) = dump.lines().find_map(|l| start_re.captures(l).and_then(|m| m[1].parse::<u64>().ok())) else {
        c.bad("partition start readable");
        return;
    };
    let fat = format!("{}@@{}", card.display(), start * 512);
    let listing = String::from_utf8_lossy(&output(Command::new("mdir").args(["-i", &fat, "-/", "-b", "::/"]), true)).into_owned();
    say("# mdir (FAT contents):");
    for l in String::from_utf8_lossy(&output(Command::new("mdir").args(["-i", &fat, "::/"]), true)).lines() {
        say(&format!("#   {l}"));
    }
    let info = String::from_utf8_lossy(&output(Command::new("minfo").args(["-i", &fat, "::"]), false)).into_owned();
    c.check("the partition holds a FAT32 file system", info.contains("disk type=\"FAT32"));
    c.check(&format!("the FAT's hidden sectors equal the partition start ({start})"), has_line(&info, &format!("hidden sectors: {start}")));
    let on_card = |f: &str| listing.lines().any(|l| l.eq_ignore_ascii_case(&format!("::/{f}")));
    let kernel = board.image.clone().unwrap_or_else(|| "none".into());
    let dtb = board.dtb.clone().unwrap_or_else(|| "none".into());
    let mut need = vec!["config.txt".to_string(), "cmdline.txt".to_string(), kernel.clone()];
    need.extend(board.firmware.iter().cloned());
    for f in &need {
        c.check(&format!("required file {f} is on the card"), on_card(f));
    }
    if on_card(&dtb) {
        c.ok(&format!("device tree {dtb} is on the card"));
        c.check(&format!("{dtb} is a flattened device tree (magic d00dfeed)"), mtype(&fat, &dtb).starts_with(&[0xd0, 0x0d, 0xfe, 0xed]));
    } else if board.config_txt.iter().any(|l| l == "os_check=0") {
        let cfg = String::from_utf8_lossy(&mtype(&fat, "config.txt")).into_owned();
        c.check(&format!("no {dtb} on the card: config.txt has os_check=0"), has_line(&cfg, "os_check=0"));
    } else {
        say(&format!("# warning: no {dtb} on the card (built with --no-dtb)"));
    }
    for f in board.firmware.iter().filter(|f| f.ends_with(".elf")) {
        c.check(&format!("{f} is an ELF file"), mtype(&fat, f).starts_with(b"\x7fELF"));
    }
    let tag = format!("cachescope-board={name}");
    c.check(&format!("{kernel} on the card carries the {name} tag"), mtype(&fat, &kernel).windows(tag.len()).any(|w| w == tag.as_bytes()));
    let cfg = String::from_utf8_lossy(&mtype(&fat, "config.txt")).into_owned();
    c.check(&format!("config.txt on the card names {kernel}"), has_line(&cfg, &format!("kernel={kernel}")));
    let cmdline = String::from_utf8_lossy(&mtype(&fat, "cmdline.txt")).into_owned();
    c.check("cmdline.txt starts with the -- separator", cmdline.lines().any(|l| l.starts_with("--")));
    if let Some(from) = from {
        let mut files: Vec<PathBuf> = fs::read_dir(from).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        files.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
        let mut same = true;
        for f in &files {
            let base = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if fs::read(f).ok() != Some(mtype(&fat, &base)) {
                same = false;
                c.bad(&format!("{base} on the card equals {}/{base}", from.display()));
            }
        }
        if same {
            c.ok(&format!("every file on the card equals its source ({} files)", files.len()));
        }
    }
}

/// What check-images was asked.
pub enum Asked {
    /// The mkimage folder (default target/images/release).
    Images(Option<PathBuf>),
    /// An SD card image, its board, and optionally the folder its files came from.
    Sdcard(PathBuf, String, Option<PathBuf>),
}

/// Runs the checks: Ok(true) when all passed; Err: bad input (exit 2, message on stderr).
pub fn check_images(root: &Path, boards_path: &Path, boards: &[Board], asked: Asked) -> Result<bool, Option<String>> {
    let (Some(objdump), Some(objcopy)) = (llvm_tool(root, "objdump"), llvm_tool(root, "objcopy")) else {
        return Ok(false);
    };
    let tools = Tools { objdump, objcopy };
    let mut c = Checks::default();
    match asked {
        Asked::Sdcard(card, board, from) => {
            let b = crate::boards::find(boards, &board).map_err(|e| Some(format!("cachescope-xtask: {}: {e}", boards_path.display())))?;
            check_sdcard(&mut c, &card, b, from.as_deref());
        }
        Asked::Images(dir) => {
            let dir = dir.unwrap_or_else(|| root.join("target/images/release"));
            if !dir.is_dir() {
                return Err(Some(format!("check-images: no image directory {} (run scripts/mkimage)", dir.display())));
            }
            let mut found = false;
            for b in boards {
                if let Some(image) = &b.image {
                    let sub = dir.join(&b.name);
                    if sub.is_dir() {
                        check_board_dir(&mut c, &tools, boards, &sub, b, image);
                        found = true;
                    }
                }
            }
            if !found {
                return Err(Some(format!("check-images: {} has no board directory (scripts/mkimage)", dir.display())));
            }
        }
    }
    say(&format!("# check-images: {} passed, {} failed", c.checks - c.fails, c.fails));
    Ok(c.fails == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64: header, two PT_LOAD program headers, a symbol table with `_start`.
    fn elf(entry: u64, loads: &[(u64, u64, u64, u64)], start: u64) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[16..18].copy_from_slice(&ET_EXEC.to_le_bytes());
        b[18..20].copy_from_slice(&EM_AARCH64.to_le_bytes());
        b[24..32].copy_from_slice(&entry.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&(loads.len() as u16).to_le_bytes());
        for &(off, va, pa, fsz) in loads {
            let mut p = vec![0u8; 56];
            p[..4].copy_from_slice(&PT_LOAD.to_le_bytes());
            p[8..16].copy_from_slice(&off.to_le_bytes());
            p[16..24].copy_from_slice(&va.to_le_bytes());
            p[24..32].copy_from_slice(&pa.to_le_bytes());
            p[32..40].copy_from_slice(&fsz.to_le_bytes());
            b.extend(p);
        }
        // strtab, then symtab (one null symbol, then _start), then two section headers.
        let strtab_off = b.len() as u64;
        b.extend(b"\0_start\0");
        let symtab_off = b.len() as u64;
        b.extend([0u8; 24]);
        let mut sym = vec![0u8; 24];
        sym[..4].copy_from_slice(&1u32.to_le_bytes());
        sym[8..16].copy_from_slice(&start.to_le_bytes());
        b.extend(sym);
        let shoff = b.len() as u64;
        let mut strtab_sh = vec![0u8; 64];
        strtab_sh[4..8].copy_from_slice(&3u32.to_le_bytes());
        strtab_sh[24..32].copy_from_slice(&strtab_off.to_le_bytes());
        let mut symtab_sh = vec![0u8; 64];
        symtab_sh[4..8].copy_from_slice(&SHT_SYMTAB.to_le_bytes());
        symtab_sh[24..32].copy_from_slice(&symtab_off.to_le_bytes());
        symtab_sh[32..40].copy_from_slice(&48u64.to_le_bytes());
        symtab_sh[56..64].copy_from_slice(&24u64.to_le_bytes());
        b.extend(strtab_sh);
        b.extend(symtab_sh);
        b[40..48].copy_from_slice(&shoff.to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&2u16.to_le_bytes());
        b
    }

    #[test]
    fn elf_facts_are_read() {
        let b = elf(0x80000, &[(0, 0x80000, 0x80000, 16), (16, 0x80020, 0x90000, 8)], 0x80000);
        let e = Elf::parse(&b).unwrap();
        assert_eq!((e.kind, e.machine, e.entry, e.start), (ET_EXEC, EM_AARCH64, 0x80000, Some(0x80000)));
        assert_eq!(e.loads.len(), 2);
        assert_eq!(e.loads[1], Segment { offset: 16, vaddr: 0x80020, paddr: 0x90000, filesz: 8 });
        assert!(Elf::parse(b"\x7fELF\x01\x01").is_none(), "ELF32 is not read");
        assert!(Elf::parse(&b[..40]).is_none(), "cut short");
    }

    #[test]
    fn loadable_bytes_end_at_the_last_segment_with_contents() {
        let seg = |vaddr, filesz| Segment { offset: 0, vaddr, paddr: vaddr, filesz };
        assert_eq!(load_end(&[seg(0x1000, 4), seg(0x1008, 2), seg(0x2000, 0)]), 0x100a);
        assert_eq!(load_end(&[seg(0x2000, 0)]), 0);
    }

    #[test]
    fn printf_hash_x_and_objdump_lines() {
        assert_eq!((hash_x(0), hash_x(0x80000)), ("0".to_string(), "0x80000".to_string()));
        let out = b"\nb.o:\tfile format elf64-littleaarch64\n\nDisassembly of section .text:\n\n0000000000080000 <_start>:\n   80000:\tmrs\tx0, MPIDR_EL1\n   80004:      and   x0, x0, #0xff\n";
        assert_eq!(instructions(out), "80000: mrs x0, MPIDR_EL1\n80004: and x0, x0, #0xff");
    }
}
