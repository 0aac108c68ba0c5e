//! `foreign`: firmware that knows nothing of cachescope, observed by the cache model (issue #21
//! item 7). Three kinds of subject, each run with an expectation file (tests/foreign/expect/):
//!
//! - **Our own foreign firmware**, tests/foreign/foreign.S: no markers, no TPIDR tag, its own
//!   page tables, console and exit, at EL1, EL2 and EL3, correct and with one planted mistake
//!   each ([`Variant`]). `foreign build` assembles every image with GNU as (`-g`: a PC resolves
//!   to foreign.S:LINE) into target/foreign/.
//! - **Debian's U-Boot** (`u-boot-qemu`, qemu_arm64's u-boot.bin and uboot.elf, which Debian
//!   strips: no symbols), entered at EL1 and at EL2, through a scripted serial session (tests/foreign/u-boot.session: a newline that stops autoboot, a few
//!   memory commands, `poweroff`, which is PSCI SYSTEM_OFF).
//! - **Debian's arm64 Linux kernel** (the linux-image-*-arm64 that bookworm-backports'
//!   linux-image-arm64 names: one .deb shared with mksdcard's device trees) booted with
//!   `nokaslr panic=-1` (observe adds `-no-reboot`) to the "unable to mount root" panic, on 1
//!   and 2 vCPUs.
//!
//! `foreign fetch` (scripts/bootstrap) unpacks the Debian files into CACHE/foreign/ through
//! mksdcard's private apt configuration (no system change, no source build). `foreign run` runs
//! every subject side by side through `cachescope-xtask observe … --expect FILE`
//! ([`Subject::observe_args`]: observe runs QEMU with the plugin, symbolises and checks the
//! expectation), then reads the saved console for the line that says the run got to its end.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::mksdcard::{self, Apt};

/// The source of every own image.
pub const SOURCE: &str = "tests/foreign/foreign.S";
/// Its linker script.
pub const LINKER_SCRIPT: &str = "tests/foreign/foreign.ld";
/// Where the images go.
pub const IMAGE_DIR: &str = "target/foreign";
/// The expectation files.
pub const EXPECT_DIR: &str = "tests/foreign/expect";
/// U-Boot's scripted session.
pub const UBOOT_SESSION: &str = "tests/foreign/u-boot.session";
/// U-Boot's `-icount`: 16 ns of virtual time per instruction (`shift=4`) instead of the runner's
/// 1 ns (`shift=0`), as reproducible (a fixed shift, no alignment to the host's clock, no sleep).
/// U-Boot busy-waits on the generic timer (`poweroff` waits 100 ms before PSCI SYSTEM_OFF, the
/// flash and console probes wait too): at 1 ns per instruction a 100 ms wait is 10^8
/// instructions, most of a session under the model (measured 2026-12-02, alone on the 2-core
/// host: 15-18 s per session, 9-12 s of it after `poweroff ...`; with `shift=4` 4.2 s, the same
/// console, no hazard, no warning). Nothing U-Boot's expectation checks depends on the shift.
pub const UBOOT_ICOUNT: [&str; 2] = ["-icount", "shift=4,align=off,sleep=off"];
/// The cross assembler and linker (Debian's binutils-aarch64-linux-gnu; scripts/bootstrap).
pub const AS: &str = "aarch64-linux-gnu-as";
/// See [`AS`].
pub const LD: &str = "aarch64-linux-gnu-ld";
/// The exception levels every variant is built for.
pub const ELS: [u8; 3] = [1, 2, 3];
/// U-Boot's package and the files taken from it (qemu_arm64).
pub const UBOOT_PACKAGE: &str = "u-boot-qemu";
/// See [`UBOOT_PACKAGE`].
pub const UBOOT_FILES: [&str; 2] = ["usr/lib/u-boot/qemu_arm64/u-boot.bin", "usr/lib/u-boot/qemu_arm64/uboot.elf"];
/// U-Boot relocates itself to the top of RAM, this far below its end (uboot.elf is linked at 0,
/// so the relocation address is the load offset of post-relocation PCs): `bdinfo`'s
/// "reloc off" with 128 MiB (0x47ef_7000) and 512 MiB (0x5fef_7000) of RAM, U-Boot 2023.01
/// qemu_arm64. Each run checks the offset against the session's `bdinfo` ([`reloc_off`]).
pub const UBOOT_TOP_RESERVE: u64 = 0x10_9000;
/// QEMU virt's RAM base.
pub const VIRT_RAM_BASE: u64 = 0x4000_0000;
/// The RAM size of a `-m` value (`512M`, `2G`, plain MiB as QEMU takes it).
pub fn memory_bytes(m: &str) -> Option<u64> {
    let (n, unit) = match m.trim().strip_suffix(['M', 'm']) {
        Some(n) => (n, 1 << 20),
        None => match m.trim().strip_suffix(['G', 'g']) {
            Some(n) => (n, 1 << 30),
            None => (m.trim(), 1 << 20),
        },
    };
    n.parse::<u64>().ok().and_then(|n| n.checked_mul(unit))
}

/// U-Boot's relocation offset as the session's `bdinfo` prints it (`reloc off   = 0x…`).
pub fn reloc_off(console: &str) -> Option<u64> {
    let l = console.lines().find(|l| l.trim_start().starts_with("reloc off"))?;
    let v = l.split('=').nth(1)?.trim();
    u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
}

/// The kernel command line of the Linux subjects.
pub const LINUX_APPEND: &str = "nokaslr panic=-1 console=ttyAMA0";

/// One build of tests/foreign/foreign.S: correct, or with one planted mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Every maintenance it needs.
    Correct,
    /// No DC CVAC before the read through the Non-cacheable alias.
    NoClean,
    /// No IC IVAU after rewriting code that then runs.
    NoIc,
    /// The set/way clean before the MMU-off read cleans level 1 only.
    SetwayL1,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 4] = [Variant::Correct, Variant::NoClean, Variant::NoIc, Variant::SetwayL1];

    /// Its name in image and expectation file names.
    pub fn name(self) -> &'static str {
        ["correct", "no-clean", "no-ic", "setway-l1"][self as usize]
    }

    /// The assembler symbol that plants its mistake (foreign.S's header lists them).
    pub fn defsym(self) -> Option<&'static str> {
        [None, Some("BROKEN_CLEAN"), Some("BROKEN_IC"), Some("BROKEN_SETWAY")][self as usize]
    }
}

/// An own image: an exception level and a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// The EL it is entered at and runs at.
    pub el: u8,
    /// What it does.
    pub variant: Variant,
}

impl Image {
    /// Every image, EL-major.
    pub fn all() -> Vec<Image> {
        ELS.iter().flat_map(|&el| Variant::ALL.map(|variant| Image { el, variant })).collect()
    }

    /// `el1-correct`, `el3-no-ic`, …
    pub fn name(self) -> String {
        format!("el{}-{}", self.el, self.variant.name())
    }

    /// The assembler's arguments besides input and output.
    pub fn as_args(self) -> Vec<String> {
        let mut a = vec!["-g".to_string(), "--defsym".into(), format!("EL={}", self.el)];
        if let Some(d) = self.variant.defsym() {
            a.extend(["--defsym".into(), format!("{d}=1")]);
        }
        a
    }
}

fn tool(program: &str, args: &[String]) -> Result<(), String> {
    let out = Command::new(program).args(args).stdin(Stdio::null()).output().map_err(|e| {
        format!("cannot run {program}: {e} (Debian: apt-get install binutils-aarch64-linux-gnu; scripts/bootstrap installs it)")
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{program} {}: {}{}", args.join(" "), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

/// Assembles and links every own image into `root`/target/foreign/NAME.elf; returns them.
/// The code segment is writable on purpose (the firmware rewrites an instruction): ld's RWX
/// warning is turned off, nothing else.
pub fn build(root: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = root.join(IMAGE_DIR);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let src = root.join(SOURCE).display().to_string();
    let script = root.join(LINKER_SCRIPT).display().to_string();
    let mut built = Vec::new();
    for image in Image::all() {
        let obj = dir.join(format!("{}.o", image.name()));
        let elf = dir.join(format!("{}.elf", image.name()));
        let mut a = image.as_args();
        a.extend(["-o".into(), obj.display().to_string(), src.clone()]);
        tool(AS, &a)?;
        // --discard-all: foreign.S's .equ constants stay out of the symbol table (a PA near one
        // would otherwise symbolise as CONSTANT+offset); the functions are global.
        let l = ["--no-warn-rwx-segments", "--discard-all", "-T", &script, "-o", &elf.display().to_string(), &obj.display().to_string()];
        tool(LD, &l.map(String::from))?;
        built.push(elf);
    }
    Ok(built)
}

/// Where the Debian subjects are unpacked: CACHE/foreign (CACHE as mksdcard's).
pub fn debian_dir() -> PathBuf {
    mksdcard::cache_base().join("foreign")
}

/// Unpacks `files` (path inside the package, name to give it) of `deb` into `dir`, flat; records
/// the .deb's name in `dir`/SOURCE so a newer package replaces them. Quick when they are there.
fn unpack(deb: &Path, files: &[(&str, &str)], dir: &Path) -> Result<String, String> {
    let name = deb.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stamp = dir.join("SOURCE");
    let have = |f: &(&str, &str)| dir.join(f.1).is_file();
    if fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == name) && files.iter().all(have) {
        return Ok(format!("{} cached ({name})", dir.display()));
    }
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let mut args = vec!["-x".to_string(), "-C".into(), dir.display().to_string(), "--transform=s|.*/||".into()];
    args.extend(files.iter().map(|f| format!("./{}", f.0)));
    let ok = mksdcard::untar(deb, &args, None, false).map_err(|mksdcard::Stop(_, m)| m.unwrap_or_else(|| "dpkg-deb failed".into()))?;
    for (member, to) in files {
        if base(member) != *to {
            let _ = fs::rename(dir.join(base(member)), dir.join(to));
        }
    }
    if !ok || !files.iter().all(have) {
        return Err(format!("{name}: could not unpack {}", files.iter().map(|f| f.0).collect::<Vec<_>>().join(" ")));
    }
    fs::write(&stamp, format!("{name}\n")).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(format!("{} from {name}", files.iter().map(|f| f.1).collect::<Vec<_>>().join(", ")))
}

fn base(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The kernel image inside linux-image-VERSION: boot/vmlinuz-VERSION (arm64: an uncompressed Image).
pub fn linux_image_member(package: &str) -> Option<String> {
    package.strip_prefix("linux-image-").filter(|v| v.starts_with(|c: char| c.is_ascii_digit())).map(|v| format!("boot/vmlinuz-{v}"))
}

/// The file name the Linux subjects boot (the member's, unpacked flat).
const LINUX_KERNEL: &str = "vmlinuz";

/// The Linux kernel Image the subjects boot (and scripts/bench-foreign times), once fetched.
pub fn linux_kernel() -> PathBuf {
    debian_dir().join("linux").join(LINUX_KERNEL)
}

/// `foreign fetch`: U-Boot and the Linux kernel from Debian into [`debian_dir`]; one line each.
pub fn fetch() -> Result<Vec<String>, String> {
    let apt = Apt::new();
    let dir = debian_dir();
    let mut said = Vec::new();
    let deb = apt
        .fetch_deb("arm64", UBOOT_PACKAGE)
        .ok_or_else(|| format!("could not fetch Debian's {UBOOT_PACKAGE} (bookworm main) through {}", mksdcard::cache_base().display()))?;
    let uboot = UBOOT_FILES.map(|f| (f, base(f)));
    said.push(unpack(&deb, &uboot, &dir.join("u-boot"))?);
    let pkg = apt
        .kernel_package()
        .or_else(|| {
            apt.update("arm64");
            apt.kernel_package()
        })
        .ok_or("could not find the kernel package bookworm-backports' linux-image-arm64 names")?;
    let member = linux_image_member(&pkg).ok_or_else(|| format!("'{pkg}' is not a linux-image-VERSION package"))?;
    let deb = apt.fetch_deb("arm64", &pkg).ok_or_else(|| format!("could not fetch Debian's {pkg}"))?;
    said.push(unpack(&deb, &[(member.as_str(), LINUX_KERNEL)], &dir.join("linux"))?);
    Ok(said)
}

/// One run under the model and what it must report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// Its name (the run's folder under target/foreign/runs/).
    pub name: String,
    /// The firmware QEMU loads.
    pub firmware: PathBuf,
    /// The ELF for symbols when the firmware is not one.
    pub elf: Option<PathBuf>,
    /// Runtime minus link address of the code that matters.
    pub load_offset: u64,
    /// Loaded with -bios (a raw image at the reset vector) instead of -kernel.
    pub bios: bool,
    /// Entry EL.
    pub el: u8,
    /// vCPUs.
    pub smp: u8,
    /// Bytes fed to the serial console.
    pub input: Option<PathBuf>,
    /// The expectation file.
    pub expect: PathBuf,
    /// Wall-clock limit under the model, in seconds.
    pub timeout: u32,
    /// A line the console must print (the run got where it should: its own check passed, the
    /// session ended, the panic came).
    pub console: &'static str,
    /// Extra QEMU arguments.
    pub qemu: Vec<String>,
}

impl Subject {
    /// The `cachescope-xtask observe` arguments of this run (docs: the interface the observe
    /// command fixed), output into `out`.
    pub fn observe_args(&self, out: &Path) -> Vec<String> {
        let mut a = vec!["observe".to_string(), "--el".into(), self.el.to_string(), "--smp".into(), self.smp.to_string()];
        a.extend(["--timeout".into(), self.timeout.to_string(), "--expect".into(), self.expect.display().to_string()]);
        a.extend(["--out".into(), out.display().to_string()]);
        if let Some(elf) = &self.elf {
            a.extend(["--elf".into(), elf.display().to_string()]);
        }
        if self.load_offset != 0 {
            a.extend(["--load-offset".into(), format!("{:#x}", self.load_offset)]);
        }
        if let Some(i) = &self.input {
            a.extend(["--input".into(), i.display().to_string()]);
        }
        if self.bios {
            a.push("--bios".into()); // observe's --bios IMAGE: the firmware is its value
        }
        a.push(self.firmware.display().to_string());
        if !self.qemu.is_empty() {
            a.push("--".into());
            a.extend(self.qemu.iter().cloned());
        }
        a
    }
}

/// Every subject: the own images (`root`/target/foreign), U-Boot, Linux on 1 and 2 vCPUs (under
/// `debian`, [`debian_dir`] by default); `ram` is virt's RAM in bytes (boards.toml `qemu_memory`,
/// what observe gives QEMU).
pub fn subjects(root: &Path, debian: &Path, ram: u64) -> Vec<Subject> {
    let expect = |n: &str| root.join(EXPECT_DIR).join(format!("{n}.toml"));
    let mut s: Vec<Subject> = Image::all()
        .into_iter()
        .map(|i| Subject {
            name: i.name(),
            firmware: root.join(IMAGE_DIR).join(format!("{}.elf", i.name())),
            elf: None,
            load_offset: 0,
            bios: false,
            el: i.el,
            smp: 1,
            input: None,
            expect: expect(i.variant.name()),
            timeout: 30,
            console: "foreign: done",
            qemu: vec![],
        })
        .collect();
    // U-Boot at EL1 and at EL2 (virtualization=on: its own EL2 regime, PSCI by SMC).
    for el in [1, 2] {
        s.push(Subject {
            name: format!("u-boot-el{el}"),
            firmware: debian.join("u-boot/u-boot.bin"),
            elf: Some(debian.join("u-boot/uboot.elf")),
            load_offset: VIRT_RAM_BASE + ram - UBOOT_TOP_RESERVE,
            bios: true,
            el,
            smp: 1,
            input: Some(root.join(UBOOT_SESSION)),
            expect: expect("u-boot"),
            // Under the test command's load (every other phase beside it on 2 cores) a session
            // took 43-59 s in clean-clone CI runs, and one run of six hit 60 s after its
            // `poweroff` line: a hang guard, not a speed bound.
            timeout: 180,
            console: "poweroff ...",
            qemu: UBOOT_ICOUNT.map(String::from).to_vec(),
        });
    }
    for smp in [1, 2] {
        s.push(Subject {
            name: format!("linux-smp{smp}"),
            firmware: debian.join("linux").join(LINUX_KERNEL),
            elf: None,
            load_offset: 0,
            bios: false,
            // Two vCPUs enter at EL2, so that under -icount (reproducible counts) VMPIDR_EL2
            // names the core running each TB (observe at EL1 would run MTTCG instead).
            el: if smp == 1 { 1 } else { 2 },
            smp,
            input: None,
            expect: expect("linux"),
            // A bound on a hang, not a speed goal: 84 s (1 vCPU) and 172 s (2 vCPUs) measured
            // beside other work at load 5-8 on 2 cores.
            timeout: if smp == 1 { 300 } else { 420 },
            console: "Unable to mount root fs",
            // observe adds -no-reboot: panic=-1's reboot ends the run.
            qemu: vec!["-append".into(), LINUX_APPEND.into()],
        });
    }
    s
}

/// How the subjects are run.
#[derive(Clone, Debug)]
pub struct RunWith {
    /// The xtask binary whose `observe` runs them.
    pub observe: PathBuf,
    /// Runs' folders (one per subject: observe's --out).
    pub out: PathBuf,
}

/// The outcome of one subject: (passed, the line to print, the detail for a failure).
pub type Outcome = (bool, String, String);

/// Runs one subject through observe (its exit status: the expectation met) and reads the
/// saved console for the subject's end line.
pub fn run_one(s: &Subject, with: &RunWith) -> Outcome {
    let out = with.out.join(&s.name);
    let _ = fs::remove_dir_all(&out);
    if let Err(e) = fs::create_dir_all(&out) {
        return (false, format!("not ok - {}: {}: {e}", s.name, out.display()), String::new());
    }
    if !s.firmware.is_file() {
        let hint = if s.firmware.starts_with(debian_dir()) { "scripts/bootstrap fetches it" } else { "cachescope-xtask foreign build" };
        return (false, format!("not ok - {}: no {} ({hint})", s.name, s.firmware.display()), String::new());
    }
    let t0 = Instant::now();
    let r = Command::new("nice").arg("-n").arg("10").arg(&with.observe).args(s.observe_args(&out)).stdin(Stdio::null()).output();
    let took = format!("{:.1} s", t0.elapsed().as_secs_f64());
    let o = match r {
        Ok(o) => o,
        Err(e) => return (false, format!("not ok - {}: cannot run {}: {e}", s.name, with.observe.display()), String::new()),
    };
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        return (
            false,
            format!("not ok - {}: observe exit {} ({took})", s.name, o.status.code().map_or("signal".into(), |c| c.to_string())),
            said,
        );
    }
    let console = fs::read_to_string(out.join("console.log")).unwrap_or_default();
    if !console.contains(s.console) {
        let tail: Vec<&str> = console.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return (false, format!("not ok - {}: the console never printed '{}' ({took})", s.name, s.console), tail.join("\n"));
    }
    if s.load_offset != 0 {
        if let Some(r) = reloc_off(&console).filter(|&r| r != s.load_offset) {
            return (
                false,
                format!("not ok - {}: symbols at load offset {:#x} but the firmware says {r:#x} ({took})", s.name, s.load_offset),
                said,
            );
        }
    }
    (true, format!("ok - {} ({took})", s.name), String::new())
}

/// The order subjects start in: the longest first (by timeout, a bound on how long each takes),
/// so the long Linux boots do not start last behind the short ones; ties keep the given order.
fn start_order(subjects: &[Subject]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..subjects.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(subjects[i].timeout));
    order
}

/// Runs the subjects, at most `jobs` at once, the longest first ([`start_order`]); their lines
/// are printed at the end, in the order given; returns whether all passed.
pub fn run_all(subjects: &[Subject], with: &RunWith, jobs: usize) -> bool {
    let order = start_order(subjects);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<BTreeMap<usize, Outcome>> = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|sc| {
        for _ in 0..jobs.clamp(1, subjects.len().max(1)) {
            sc.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let s = &subjects[i];
                let r = run_one(s, with);
                results.lock().unwrap_or_else(|p| p.into_inner()).insert(i, r);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut failed = 0;
    for (passed, line, detail) in results.values() {
        println!("{line}");
        if !passed {
            failed += 1;
            for d in detail.lines() {
                println!("#   | {d}");
            }
        }
    }
    println!("# foreign: {} ok, {failed} not ok", results.len() - failed);
    failed == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use cachescope_report::expect::Expectation;

    #[test]
    fn the_longest_subjects_start_first() {
        let all = subjects(Path::new("/r"), Path::new("/c"), 512 << 20);
        let order = start_order(&all);
        let names: Vec<&str> = order.iter().map(|&i| all[i].name.as_str()).collect();
        assert_eq!(&names[..2], ["linux-smp2", "linux-smp1"], "{names:?}");
        assert!(order.windows(2).all(|w| all[w[0]].timeout >= all[w[1]].timeout));
        // Ties keep the given order.
        assert!(order.windows(2).all(|w| all[w[0]].timeout != all[w[1]].timeout || w[0] < w[1]));
    }

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
    }

    #[test]
    fn twelve_images_and_their_assembler_symbols() {
        let all = Image::all();
        assert_eq!(all.len(), 12);
        assert_eq!(all[0].name(), "el1-correct");
        assert_eq!(all[11].name(), "el3-setway-l1");
        assert_eq!(all[0].as_args(), ["-g", "--defsym", "EL=1"]);
        assert_eq!(all[6].as_args(), ["-g", "--defsym", "EL=2", "--defsym", "BROKEN_IC=1"]);
    }

    #[test]
    fn every_expectation_parses_and_each_planted_line_is_its_variants() {
        // The source's planted lines carry "(planted: SYMBOL)"; each broken variant's
        // expectation names exactly that line, so a shifted line fails here, not in a run.
        let src = fs::read_to_string(root().join(SOURCE)).unwrap();
        for v in Variant::ALL {
            let text = fs::read_to_string(root().join(EXPECT_DIR).join(format!("{}.toml", v.name()))).unwrap();
            let x = Expectation::parse(&text).unwrap();
            match v.defsym() {
                None => assert!(x.hazards.is_empty(), "{}", v.name()),
                Some(sym) => {
                    assert_eq!(x.hazards.len(), 1, "{}", v.name());
                    let (file, line) = x.hazards[0].line.as_deref().unwrap().split_once(':').unwrap();
                    assert_eq!(file, base(SOURCE));
                    let n: usize = line.parse().unwrap();
                    let text = src.lines().nth(n - 1).unwrap();
                    assert!(text.contains(&format!("(planted: {sym})")), "{}: line {n} is '{text}'", v.name());
                    assert_eq!(src.matches(&format!("(planted: {sym})")).count(), 1);
                }
            }
        }
        let read = |n: &str| Expectation::parse(&fs::read_to_string(root().join(EXPECT_DIR).join(format!("{n}.toml"))).unwrap()).unwrap();
        assert_eq!(read("u-boot"), Expectation::default());
        // Linux: exactly its own stale-instruction (by PC: the vmlinuz has no symbols), no warning.
        let linux = read("linux");
        assert!(linux.allow_warnings.is_empty());
        assert_eq!(linux.hazards.len(), 1);
        assert_eq!((linux.hazards[0].kind.as_str(), linux.hazards[0].pc.as_deref()), ("stale-instruction", Some("0xffff80008003c368")));
    }

    #[test]
    fn subjects_and_their_observe_lines() {
        let s = subjects(Path::new("/r"), Path::new("/c"), 512 << 20);
        assert_eq!(s.len(), 16);
        let uboot = s.iter().find(|s| s.name == "u-boot-el1").unwrap();
        assert_eq!(
            uboot.observe_args(Path::new("/o")).join(" "),
            "observe --el 1 --smp 1 --timeout 180 --expect /r/tests/foreign/expect/u-boot.toml --out /o --elf /c/u-boot/uboot.elf \
             --load-offset 0x5fef7000 --input /r/tests/foreign/u-boot.session --bios /c/u-boot/u-boot.bin \
             -- -icount shift=4,align=off,sleep=off"
        );
        let linux = s.iter().find(|s| s.name == "linux-smp2").unwrap();
        assert!(linux.observe_args(Path::new("/o")).join(" ").ends_with("/c/linux/vmlinuz -- -append nokaslr panic=-1 console=ttyAMA0"));
        let el3 = s.iter().find(|s| s.name == "el3-no-clean").unwrap();
        assert!(el3.observe_args(Path::new("/o")).starts_with(&["observe".into(), "--el".into(), "3".into()]));
        assert_eq!(el3.expect, Path::new("/r/tests/foreign/expect/no-clean.toml"));
    }

    #[test]
    fn memory_sizes_and_the_relocation_bdinfo_prints() {
        assert_eq!(memory_bytes("512M"), Some(512 << 20));
        assert_eq!(memory_bytes("2G"), Some(2 << 30));
        assert_eq!(memory_bytes("128"), Some(128 << 20));
        assert_eq!(memory_bytes("lots"), None);
        // Both sizes measured: the offset is the RAM's end minus the same reserve.
        assert_eq!(VIRT_RAM_BASE + (128 << 20) - UBOOT_TOP_RESERVE, 0x47ef_7000);
        let console = "relocaddr   = 0x000000005fef7000\r\nreloc off   = 0x000000005fef7000\r\nBuild       = 64-bit\r\n";
        assert_eq!(reloc_off(console), Some(0x5fef_7000));
        assert_eq!(reloc_off("no bdinfo here"), None);
    }

    #[test]
    fn the_kernel_member_of_a_kernel_package() {
        assert_eq!(linux_image_member("linux-image-6.12.95+deb12-arm64").as_deref(), Some("boot/vmlinuz-6.12.95+deb12-arm64"));
        assert_eq!(linux_image_member("linux-image-arm64"), None);
    }
}
