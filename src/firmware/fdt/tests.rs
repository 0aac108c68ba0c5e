//! Host tests of the DTB reader: hand-built trees (with FDT_NOP where QEMU raspi4b and the Pi
//! firmware leave them), and a seeded mutation fuzzer over those trees and over real DTBs
//! (`CS_DTB_SEEDS=DIR`: every `*.dtb` in DIR, e.g. QEMU dumps and the Pi 4/5 trees; the
//! `dtb-fuzz` phase of scripts/test sets it).

use super::*;
use crate::test_rng::Rng;
use alloc::{string::String, vec, vec::Vec};

/// Writes a DTB (version 17) token by token.
#[derive(Default)]
struct Builder {
    structs: Vec<u8>,
    strings: Vec<u8>,
}

impl Builder {
    fn word(&mut self, w: u32) -> &mut Self {
        self.structs.extend_from_slice(&w.to_be_bytes());
        self
    }
    fn begin(&mut self, name: &str) -> &mut Self {
        self.word(FDT_BEGIN_NODE);
        self.structs.extend_from_slice(name.as_bytes());
        self.structs.push(0);
        while !self.structs.len().is_multiple_of(4) {
            self.structs.push(0);
        }
        self
    }
    fn end(&mut self) -> &mut Self {
        self.word(FDT_END_NODE)
    }
    fn nop(&mut self) -> &mut Self {
        self.word(FDT_NOP)
    }
    fn prop(&mut self, name: &str, value: &[u8]) -> &mut Self {
        let nameoff = match self.strings.windows(name.len() + 1).position(|w| &w[..name.len()] == name.as_bytes() && w[name.len()] == 0) {
            Some(i) => i,
            None => {
                let i = self.strings.len();
                self.strings.extend_from_slice(name.as_bytes());
                self.strings.push(0);
                i
            }
        };
        self.word(FDT_PROP).word(value.len() as u32).word(nameoff as u32);
        self.structs.extend_from_slice(value);
        while !self.structs.len().is_multiple_of(4) {
            self.structs.push(0);
        }
        self
    }
    fn str(&mut self, name: &str, value: &str) -> &mut Self {
        let mut v = Vec::from(value.as_bytes());
        v.push(0);
        self.prop(name, &v)
    }
    fn cells(&mut self, name: &str, cells: &[u32]) -> &mut Self {
        let v: Vec<u8> = cells.iter().flat_map(|c| c.to_be_bytes()).collect();
        self.prop(name, &v)
    }
    fn finish(&mut self) -> Vec<u8> {
        self.word(FDT_END);
        let rsv = 40usize; // memory reservation block: one empty entry (16 bytes) at 40
        let off_struct = rsv + 16;
        let off_strings = off_struct + self.structs.len();
        let total = off_strings + self.strings.len();
        let mut out = Vec::new();
        for w in [FDT_MAGIC, total as u32, off_struct as u32, off_strings as u32, rsv as u32, 17, 16, 0, self.strings.len() as u32] {
            out.extend_from_slice(&w.to_be_bytes());
        }
        out.extend_from_slice(&(self.structs.len() as u32).to_be_bytes());
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&self.structs);
        out.extend_from_slice(&self.strings);
        out
    }
}

/// A tree shaped like QEMU raspi4b's: NOPs before and inside nodes, aliases, a bus window.
fn pi_like() -> Vec<u8> {
    let mut b = Builder::default();
    b.nop().begin("").nop().cells("#address-cells", &[2]).cells("#size-cells", &[1]).str("model", "Raspberry Pi 4 Model B");
    b.begin("aliases").nop().str("serial0", "/soc/serial@7e201000").end();
    b.begin("chosen").nop().nop().str("bootargs", "coherent_pool=1M -- only=boot").str("stdout-path", "serial0:115200n8").end();
    b.nop().begin("memory@0").str("device_type", "memory").cells("reg", &[0, 0, 0x3c00_0000]).end();
    b.begin("soc").cells("#address-cells", &[1]).cells("#size-cells", &[1]);
    b.begin("serial@7e201000").prop("compatible", b"arm,pl011\0arm,primecell\0").cells("reg", &[0x7e20_1000, 0x200]).end();
    b.end();
    b.nop().begin("cpus").cells("#address-cells", &[1]).cells("#size-cells", &[0]);
    for i in 0..4 {
        b.begin(&alloc::format!("cpu@{i}")).str("device_type", "cpu").cells("reg", &[i]).nop().end();
    }
    b.end();
    b.begin("psci").str("method", "smc").end();
    b.end().nop();
    b.finish()
}

/// A tree shaped like QEMU virt's: no aliases, stdout by path, a disabled secure UART first.
fn virt_like() -> Vec<u8> {
    let mut b = Builder::default();
    b.begin("").cells("#address-cells", &[2]).cells("#size-cells", &[2]);
    b.begin("pl011@9040000").prop("compatible", b"arm,pl011\0").cells("reg", &[0, 0x0904_0000, 0, 0x1000]).str("status", "disabled").end();
    b.begin("pl011@9000000").prop("compatible", b"arm,pl011\0").cells("reg", &[0, 0x0900_0000, 0, 0x1000]).end();
    b.begin("memory@40000000").str("device_type", "memory").cells("reg", &[0, 0x4000_0000, 0, 0x2000_0000]).end();
    b.begin("chosen").str("stdout-path", "/pl011@9000000").end();
    b.begin("cpus").cells("#address-cells", &[1]).cells("#size-cells", &[0]);
    b.begin("cpu-map").begin("cluster0").end().end();
    b.begin("cpu@0").str("device_type", "cpu").cells("reg", &[0]).end();
    b.begin("cpu@1").str("device_type", "cpu").cells("reg", &[1]).end();
    b.end();
    b.begin("psci").str("method", "hvc").end();
    b.end();
    b.finish()
}

#[test]
fn reads_a_tree_with_nops() {
    let blob = pi_like();
    let f = Fdt::new(&blob).unwrap();
    assert_eq!(f.cpu_count(), 4);
    assert!(f.find("/cpus").is_some());
    assert_eq!(f.memory(), Some((0, 0x3c00_0000)));
    assert_eq!(f.bootargs(), Some(&b"coherent_pool=1M -- only=boot"[..]));
    let uart = f.resolve(f.find("/chosen").unwrap().prop_str("stdout-path").unwrap()).unwrap();
    assert_eq!(uart.name, "serial@7e201000");
    assert!(uart.is_compatible("arm,primecell") && uart.is_enabled());
    assert_eq!(uart.reg().collect::<Vec<_>>(), [(0x7e20_1000, Some(0x200))]);
    assert_eq!(f.find("/psci").unwrap().prop_str("method"), Some("smc"));
    assert_eq!(f.find("/cpus/cpu@2").unwrap().reg().collect::<Vec<_>>(), [(2, None)]);
    assert!(f.find("/cpus/cpu@9").is_none() && f.find("/nosuch").is_none() && f.find("cpus").is_none());
    assert_eq!(f.root().unwrap().prop_str("model"), Some("Raspberry Pi 4 Model B"));
}

#[test]
fn reads_a_virt_like_tree() {
    let blob = virt_like();
    let f = Fdt::new(&blob).unwrap();
    assert_eq!(f.cpu_count(), 2, "cpu-map is not a CPU");
    assert_eq!(f.memory(), Some((0x4000_0000, 0x2000_0000)));
    let first_enabled = f.nodes().find(|n| n.is_compatible("arm,pl011") && n.is_enabled()).unwrap();
    assert_eq!(first_enabled.reg().next(), Some((0x0900_0000, Some(0x1000))));
    assert_eq!(f.resolve("/pl011@9000000").unwrap().name, "pl011@9000000");
    assert!(f.resolve("serial0").is_none(), "no aliases node");
    assert_eq!(f.bootargs(), None);
    let names: Vec<&str> = f.nodes().map(|n| n.name).collect();
    assert_eq!(names.len(), 11);
}

#[test]
fn an_unfilled_memory_template_is_no_memory() {
    // The Pi DTBs ship `reg = <0 0 0>` for the firmware to fill in.
    let mut b = Builder::default();
    b.begin("").begin("memory@0").str("device_type", "memory").cells("reg", &[0, 0, 0]).end().end();
    let blob = b.finish();
    assert_eq!(Fdt::new(&blob).unwrap().memory(), None);
}

#[test]
fn refuses_malformed_headers_and_structure() {
    let good = virt_like();
    assert!(matches!(Fdt::new(&good[..20]), Err(FdtError::TooShort { .. })));
    assert!(matches!(Fdt::new(&good[..good.len() - 1]), Err(FdtError::TooShort { .. })));
    let mut bad = good.clone();
    bad[0] = 0;
    assert!(matches!(Fdt::new(&bad), Err(FdtError::BadMagic(_))));
    let mut big = good.clone();
    big[4..8].copy_from_slice(&(64u32 << 20).to_be_bytes());
    assert!(matches!(Fdt::new(&big), Err(FdtError::BadHeader(_))));
    let mut comp = good.clone();
    comp[24..28].copy_from_slice(&18u32.to_be_bytes());
    assert_eq!(Fdt::new(&comp).unwrap_err(), FdtError::UnsupportedVersion(18));
    // An unknown token right after the root's name.
    let mut tok = good.clone();
    tok[56 + 8..56 + 12].copy_from_slice(&7u32.to_be_bytes());
    assert!(matches!(Fdt::new(&tok), Err(FdtError::BadToken { token: 7, .. })));
    // Unbalanced: one END_NODE missing.
    let mut b = Builder::default();
    b.begin("").begin("a").end();
    assert_eq!(Fdt::new(&b.finish()).unwrap_err(), FdtError::Unterminated);
    // Too deep.
    let mut b = Builder::default();
    for _ in 0..=MAX_DEPTH {
        b.begin("n");
    }
    assert!(matches!(Fdt::new(&b.finish()), Err(FdtError::TooDeep { .. })));
    // Every error has a message.
    let e = Fdt::new(&bad).unwrap_err();
    assert!(alloc::format!("{e}").contains("magic"));
}

/// Uses every lookup the kernel makes on a tree; returns a value so nothing is optimised out.
fn exercise(f: &Fdt<'_>) -> usize {
    let mut acc = f.cpu_count() + f.total_size();
    if let Some((b, s)) = f.memory() {
        acc ^= (b ^ s) as usize;
    }
    acc += f.bootargs().map_or(0, <[u8]>::len);
    if let Some(spec) = f.find("/chosen").and_then(|c| c.prop_str("stdout-path")) {
        acc += f.resolve(spec).map_or(0, |n| n.reg().count());
    }
    acc += f.find("/psci").and_then(|n| n.prop_str("method")).map_or(0, str::len);
    for n in f.nodes() {
        acc += n.depth + n.base_name().len() + usize::from(n.is_enabled()) + usize::from(n.is_compatible("arm,pl011"));
        acc += n.properties().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        acc += n.reg().map(|(a, s)| (a ^ s.unwrap_or(1)) as usize & 0xff).sum::<usize>();
        acc += n.prop_strings("compatible").count();
    }
    acc
}

/// Trims a real blob to the bytes it uses (QEMU virt pads to 1 MiB) so mutants are cheap.
fn trimmed(mut blob: Vec<u8>) -> Vec<u8> {
    let Ok(f) = Fdt::new(&blob) else { return blob };
    let _ = f;
    let word = |b: &[u8], i: usize| u32::from_be_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]) as usize;
    let used = (word(&blob, 2) + word(&blob, 9)).max(word(&blob, 3) + word(&blob, 8));
    blob.truncate(used);
    blob[4..8].copy_from_slice(&(used as u32).to_be_bytes());
    blob
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut s = vec![(String::from("pi-like"), pi_like()), (String::from("virt-like"), virt_like())];
    if let Ok(dir) = std::env::var("CS_DTB_SEEDS") {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("CS_DTB_SEEDS={dir}: {e}"));
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort(); // read_dir order is the file system's: sort, so every run is the same
        for p in paths {
            if p.extension().is_some_and(|x| x == "dtb") {
                let blob = std::fs::read(&p).unwrap();
                assert!(Fdt::new(&blob).is_ok(), "{}: a real DTB must parse: {:?}", p.display(), Fdt::new(&blob).err());
                s.push((p.display().to_string(), trimmed(blob)));
            }
        }
    }
    s
}

#[test]
fn real_dtbs_parse_completely() {
    for (name, blob) in seeds() {
        let f = Fdt::new(&blob).unwrap();
        assert!(f.cpu_count() >= 1, "{name}: no CPUs found");
        assert!(f.find("/cpus").is_some() && f.find("/chosen").is_some(), "{name}");
        exercise(&f);
    }
}

/// Mutates real and built trees (bit flips, token words, NOP insertion, truncation, length and
/// offset fields) and runs every lookup on whatever still validates: nothing may panic.
/// `CS_FUZZ_CASES` sets the number of mutants (default 100,000).
#[test]
fn fuzz_mutated_trees_never_panic() {
    let cases: usize = std::env::var("CS_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let seeds = seeds();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut valid, mut sink) = (0usize, 0usize);
    for i in 0..cases {
        let (_, seed) = &seeds[i % seeds.len()];
        let mut m = seed.clone();
        for _ in 0..1 + rng.below(3) {
            let len = m.len();
            let word_at = rng.below(len / 4) * 4;
            match rng.below(8) {
                0 => m[rng.below(len)] ^= 1 << rng.below(8),
                1 => m[rng.below(len)] = rng.next() as u8,
                2 => {
                    let t = [FDT_BEGIN_NODE, FDT_END_NODE, FDT_PROP, FDT_NOP, FDT_END, 0, u32::MAX][rng.below(7)];
                    m[word_at..word_at + 4].copy_from_slice(&t.to_be_bytes());
                }
                3 => {
                    // Insert a NOP word and keep the header consistent, as firmware edits do.
                    m.splice(word_at..word_at, FDT_NOP.to_be_bytes());
                    let grow = |m: &mut Vec<u8>, i: usize| {
                        let v = u32::from_be_bytes([m[4 * i], m[4 * i + 1], m[4 * i + 2], m[4 * i + 3]]).wrapping_add(4);
                        m[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
                    };
                    if word_at >= 40 {
                        grow(&mut m, 1);
                        grow(&mut m, 3);
                        grow(&mut m, 9);
                    }
                }
                4 => m.truncate(rng.below(len)),
                5 => {
                    // A header field (sizes, offsets, versions) set to something surprising.
                    let f = rng.below(10) * 4;
                    let v = [0, 1, 3, 40, u32::MAX, u32::MAX - 3, rng.next() as u32][rng.below(7)];
                    if f + 4 <= m.len() {
                        m[f..f + 4].copy_from_slice(&v.to_be_bytes());
                    }
                }
                6 => {
                    // A property length or name offset (the word after an FDT_PROP token).
                    if let Some(p) = m.chunks_exact(4).skip(10).position(|w| w == FDT_PROP.to_be_bytes()) {
                        let at = (p + 10 + 1 + rng.below(2)) * 4;
                        let v = [0, 3, 0xffff, u32::MAX, rng.next() as u32][rng.below(5)];
                        if at + 4 <= m.len() {
                            m[at..at + 4].copy_from_slice(&v.to_be_bytes());
                        }
                    }
                }
                _ => {
                    let a = rng.below(len);
                    let b = (a + rng.below(64)).min(len);
                    let chunk: Vec<u8> = m[a..b].to_vec();
                    let at = rng.below(m.len());
                    m.splice(at..at, chunk);
                }
            }
            if m.len() < 4 {
                break;
            }
        }
        if let Ok(f) = Fdt::new(&m) {
            valid += 1;
            sink = sink.wrapping_add(exercise(&f));
        }
    }
    assert!(valid > cases / 20, "too few mutants still valid ({valid} of {cases}): the fuzzer is not reaching the lookups");
    std::println!("fdt fuzz: {cases} mutants of {} seeds, {valid} still valid and fully exercised (checksum {sink:#x})", seeds.len());
}
