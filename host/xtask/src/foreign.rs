//! `foreign`: firmware that knows nothing of cachescope, observed by the cache model (issue #21
//! item 7). Three kinds of subject, each run with an expectation file (tests/foreign/expect/):
//!
//! - **Our own foreign firmware**, tests/foreign/foreign.S: no markers, no TPIDR tag, its own
//!   page tables, console and exit, at EL1, EL2 and EL3, correct and with one planted mistake
//!   each ([`Variant`]). `foreign build` assembles every image with GNU as (`-g`: a PC resolves
//!   to foreign.S:LINE) into target/foreign/.
//! - **Debian's U-Boot** (`u-boot-qemu`, qemu_arm64's u-boot.bin and uboot.elf) through a
//!   scripted serial session (tests/foreign/u-boot.session: a newline that stops autoboot, a few
//!   memory commands, `poweroff`, which is PSCI SYSTEM_OFF).
//! - **Debian's arm64 Linux kernel** (the linux-image-*-arm64 that bookworm-backports'
//!   linux-image-arm64 names: one .deb shared with mksdcard's device trees) booted with
//!   `nokaslr panic=-1` and `-no-reboot` to the "unable to mount root" panic, on 1 and 2 vCPUs.
//!
//! `foreign fetch` (scripts/bootstrap) unpacks the Debian files into CACHE/foreign/ through
//! mksdcard's private apt configuration (no system change, no source build). `foreign run` runs
//! every subject side by side, each within its timeout: through `cachescope-xtask observe …
//! --expect FILE` ([`Subject::observe_args`]), or with `--direct` QEMU and the plugin alone, the
//! model log's hazard and warning records checked against the expectation file here (symbols by
//! binutils' addr2line), for as long as the tree has no observe command.

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
/// The cross assembler and linker (Debian's binutils-aarch64-linux-gnu; scripts/bootstrap).
pub const AS: &str = "aarch64-linux-gnu-as";
/// See [`AS`].
pub const LD: &str = "aarch64-linux-gnu-ld";
/// Symbolises a PC in direct mode (same package).
pub const ADDR2LINE: &str = "aarch64-linux-gnu-addr2line";
/// The exception levels every variant is built for.
pub const ELS: [u8; 3] = [1, 2, 3];
/// U-Boot's package and the files taken from it (qemu_arm64).
pub const UBOOT_PACKAGE: &str = "u-boot-qemu";
/// See [`UBOOT_PACKAGE`].
pub const UBOOT_FILES: [&str; 2] = ["usr/lib/u-boot/qemu_arm64/u-boot.bin", "usr/lib/u-boot/qemu_arm64/uboot.elf"];
/// U-Boot relocates itself to the top of RAM: relocaddr with QEMU virt's default 128 MiB
/// (`bdinfo`'s "reloc off"; uboot.elf is linked at 0), so post-relocation PCs symbolise.
pub const UBOOT_RELOC_OFFSET: u64 = 0x47ef_7000;
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
            a.push("--bios".into());
        }
        a.push(self.firmware.display().to_string());
        if !self.qemu.is_empty() {
            a.push("--".into());
            a.extend(self.qemu.iter().cloned());
        }
        a
    }

    /// QEMU's `-M` value for the entry EL (EL2: virtualization=on, EL3: secure=on).
    pub fn machine(&self) -> &'static str {
        match self.el {
            2 => "virt,virtualization=on",
            3 => "virt,secure=on",
            _ => "virt",
        }
    }
}

/// Every subject: the own images (`root`/target/foreign), U-Boot, Linux on 1 and 2 vCPUs (under
/// `debian`, [`debian_dir`] by default).
pub fn subjects(root: &Path, debian: &Path) -> Vec<Subject> {
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
    s.push(Subject {
        name: "u-boot".into(),
        firmware: debian.join("u-boot/u-boot.bin"),
        elf: Some(debian.join("u-boot/uboot.elf")),
        load_offset: UBOOT_RELOC_OFFSET,
        bios: true,
        el: 1,
        smp: 1,
        input: Some(root.join(UBOOT_SESSION)),
        expect: expect("u-boot"),
        timeout: 60,
        console: "poweroff ...",
        qemu: vec![],
    });
    for smp in [1, 2] {
        s.push(Subject {
            name: format!("linux-smp{smp}"),
            firmware: debian.join("linux").join(LINUX_KERNEL),
            elf: None,
            load_offset: 0,
            bios: false,
            el: 1,
            smp,
            input: None,
            expect: expect("linux"),
            timeout: 240,
            console: "Unable to mount root fs",
            qemu: vec!["-append".into(), LINUX_APPEND.into(), "-no-reboot".into()],
        });
    }
    s
}

/// An expected hazard (the expectation file's `[[hazard]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Hazard kind.
    pub kind: String,
    /// Symbol of the exposing PC.
    pub function: String,
    /// basename:line of the exposing PC.
    pub line: String,
    /// Symbol of the cause PC, when given.
    pub cause_function: Option<String>,
}

/// An expectation file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expectation {
    /// model-warning causes allowed.
    pub allow_warnings: Vec<String>,
    /// The hazards, each to be matched exactly once.
    pub hazards: Vec<Expected>,
}

/// Parses an expectation file (the format in docs of the observe command); unknown keys fail.
pub fn parse_expectation(text: &str) -> Result<Expectation, String> {
    let t: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut x = Expectation::default();
    for (k, v) in &t {
        match (k.as_str(), v) {
            ("allow_warnings", toml::Value::Array(a)) => {
                for w in a {
                    x.allow_warnings.push(w.as_str().ok_or("allow_warnings: a list of strings")?.to_string());
                }
            }
            ("hazard", toml::Value::Array(a)) => {
                for (i, h) in a.iter().enumerate() {
                    let h = h.as_table().ok_or(format!("hazard {}: a table", i + 1))?;
                    let s = |key: &str| {
                        h.get(key).map(|v| v.as_str().map(String::from).ok_or(format!("hazard {}: '{key}' is not a string", i + 1)))
                    };
                    if let Some(bad) = h.keys().find(|k| !["kind", "function", "line", "cause_function"].contains(&k.as_str())) {
                        return Err(format!("hazard {}: unknown key '{bad}'", i + 1));
                    }
                    let need = |key: &str| s(key).unwrap_or_else(|| Err(format!("hazard {}: '{key}' is missing", i + 1)));
                    x.hazards.push(Expected {
                        kind: need("kind")?,
                        function: need("function")?,
                        line: need("line")?,
                        cause_function: s("cause_function").transpose()?,
                    });
                }
            }
            (k, _) => return Err(format!("unknown key '{k}' (allow_warnings, [[hazard]])")),
        }
    }
    Ok(x)
}

/// A hazard the model reported, symbolised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reported {
    /// Hazard kind.
    pub kind: String,
    /// Exposing PC.
    pub pc: u64,
    /// Its symbol and basename:line (`??` when unknown).
    pub function: String,
    /// See `function`.
    pub line: String,
    /// Cause PC's symbol.
    pub cause_function: String,
}

/// What is wrong with a run against its expectation: one line per problem (empty: as expected).
pub fn check(x: &Expectation, hazards: &[Reported], warnings: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let matches = |e: &Expected, r: &Reported| {
        e.kind == r.kind && e.function == r.function && e.line == r.line && e.cause_function.as_ref().is_none_or(|c| *c == r.cause_function)
    };
    let mut used = vec![false; hazards.len()];
    for e in &x.hazards {
        let hits: Vec<usize> = (0..hazards.len()).filter(|&i| matches(e, &hazards[i])).collect();
        match hits.as_slice() {
            [i] => used[*i] = true,
            [] => problems.push(format!("expected {} in {} at {} was not reported", e.kind, e.function, e.line)),
            many => {
                many.iter().for_each(|&i| used[i] = true);
                problems.push(format!("expected {} in {} at {} matches {} reported hazards", e.kind, e.function, e.line, many.len()))
            }
        }
    }
    for (r, _) in hazards.iter().zip(&used).filter(|(_, u)| !**u) {
        problems.push(format!("unexpected {} at pc {:#x} in {} ({}), cause in {}", r.kind, r.pc, r.function, r.line, r.cause_function));
    }
    for (cause, what) in warnings {
        if !x.allow_warnings.contains(cause) {
            problems.push(format!("model-warning ({cause}): {what}"));
        }
    }
    problems
}

/// `addr2line -f -e ELF` of each address: (function, basename:line).
fn symbolise(elf: &Path, addrs: &[u64]) -> Result<Vec<(String, String)>, String> {
    if addrs.is_empty() {
        return Ok(vec![]);
    }
    let mut a = vec!["-f".to_string(), "-e".into(), elf.display().to_string()];
    a.extend(addrs.iter().map(|x| format!("{x:#x}")));
    let out = Command::new(ADDR2LINE).args(&a).output().map_err(|e| format!("cannot run {ADDR2LINE}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    Ok(lines
        .chunks(2)
        .map(|c| {
            let line = c.get(1).map(|l| l.split(" (").next().unwrap_or(l)).unwrap_or("??:0");
            (c[0].to_string(), base(line).to_string())
        })
        .collect())
}

/// The hazard and model-warning records of a model log (`# cs: {…}` lines).
fn model_records(log: &str) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let recs = log.lines().filter_map(|l| l.split_once("# cs: ").and_then(|(_, j)| serde_json::from_str::<serde_json::Value>(j).ok()));
    let (mut hazards, mut warnings) = (Vec::new(), Vec::new());
    for r in recs {
        match r.get("record").and_then(|v| v.as_str()) {
            Some("hazard") => hazards.push(r),
            Some("model-warning") => warnings.push(r),
            _ => {}
        }
    }
    (hazards, warnings)
}

fn hex(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(|x| x.as_str()).and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()).unwrap_or(0)
}

/// How one subject is run.
#[derive(Clone, Debug)]
pub struct RunWith {
    /// The cache-model plugin (.so), for direct runs.
    pub plugin: PathBuf,
    /// The xtask binary, for observe runs (None: direct).
    pub observe: Option<PathBuf>,
    /// Runs' folders.
    pub out: PathBuf,
}

/// The outcome of one subject: (passed, the line to print, the detail for a failure).
pub type Outcome = (bool, String, String);

/// Runs one subject and judges it.
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
    let secs = || format!("{:.1} s", t0.elapsed().as_secs_f64());
    let stdin = |input: &Option<PathBuf>| input.as_ref().and_then(|i| fs::File::open(i).ok()).map(Stdio::from).unwrap_or_else(Stdio::null);
    if let Some(xtask) = &with.observe {
        let r = Command::new("nice").arg("-n").arg("10").arg(xtask).args(s.observe_args(&out)).stdin(Stdio::null()).output();
        return match r {
            Ok(o) if o.status.success() => (true, format!("ok - {} ({})", s.name, secs()), String::new()),
            Ok(o) => (
                false,
                format!("not ok - {}: observe exit {:?} ({})", s.name, o.status.code(), secs()),
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
            ),
            Err(e) => (false, format!("not ok - {}: cannot run {}: {e}", s.name, xtask.display()), String::new()),
        };
    }
    let model = out.join("model.log");
    let console = out.join("console.log");
    let mut q: Vec<String> =
        ["timeout", &s.timeout.to_string(), "nice", "-n", "10", "qemu-system-aarch64", "-M", s.machine(), "-cpu", "cortex-a72"]
            .map(String::from)
            .to_vec();
    q.extend(["-smp".into(), s.smp.to_string()]);
    q.extend(
        ["-display", "none", "-monitor", "none", "-serial", "stdio", "-nic", "none", "-semihosting-config", "enable=on,target=native"]
            .map(String::from),
    );
    q.extend([if s.bios { "-bios" } else { "-kernel" }.into(), s.firmware.display().to_string()]);
    q.extend(["-plugin".into(), format!("{},out={}", with.plugin.display(), model.display())]);
    q.extend(crate::qemu::ICOUNT.map(String::from));
    q.extend(s.qemu.iter().cloned());
    let Ok(console_file) = fs::File::create(&console) else {
        return (false, format!("not ok - {}: cannot write {}", s.name, console.display()), String::new());
    };
    let status = Command::new(&q[0]).args(&q[1..]).stdin(stdin(&s.input)).stdout(console_file).stderr(Stdio::piped()).output();
    let took = secs();
    let text = fs::read_to_string(&console).unwrap_or_default().replace('\r', "");
    let tail = || text.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    let rc = match status {
        Ok(o) => (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => return (false, format!("not ok - {}: cannot run QEMU: {e}", s.name), String::new()),
    };
    if rc.0 != Some(0) {
        let why = if rc.0 == Some(124) { format!("timed out after {} s", s.timeout) } else { format!("QEMU exit {:?}", rc.0) };
        return (false, format!("not ok - {}: {why} ({took})", s.name), format!("{}\n{}", tail(), rc.1));
    }
    if !text.contains(s.console) {
        return (false, format!("not ok - {}: the console never printed '{}' ({took})", s.name, s.console), tail());
    }
    let verdict = judge(s, &model);
    match verdict {
        Ok((problems, n)) if problems.is_empty() => (true, format!("ok - {}: {n} hazard(s) as expected ({took})", s.name), String::new()),
        Ok((problems, _)) => (false, format!("not ok - {}: {} problem(s) ({took})", s.name, problems.len()), problems.join("\n")),
        Err(e) => (false, format!("not ok - {}: {e}", s.name), String::new()),
    }
}

/// A direct run's model log against the subject's expectation: (problems, hazards reported).
fn judge(s: &Subject, model: &Path) -> Result<(Vec<String>, usize), String> {
    let x = fs::read_to_string(&s.expect).map_err(|e| format!("{}: {e}", s.expect.display()))?;
    let x = parse_expectation(&x).map_err(|e| format!("{}: {e}", s.expect.display()))?;
    let log = fs::read_to_string(model).map_err(|e| format!("{}: {e}", model.display()))?;
    if !log.contains("\"record\":\"hazard-total\"") {
        return Err(format!("{}: no hazard-total record (the plugin did not finish)", model.display()));
    }
    let (hz, warns) = model_records(&log);
    let elf = s.elf.clone().unwrap_or_else(|| s.firmware.clone());
    let mut pcs = Vec::new();
    for h in &hz {
        pcs.push(hex(h, "pc").wrapping_sub(s.load_offset));
        pcs.push(hex(h, "cause_pc").wrapping_sub(s.load_offset));
    }
    let syms = symbolise(&elf, &pcs)?;
    let reported: Vec<Reported> = hz
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (function, line) = syms.get(2 * i).cloned().unwrap_or_else(|| ("??".into(), "??:0".into()));
            Reported {
                kind: h.get("kind").and_then(|k| k.as_str()).unwrap_or("?").to_string(),
                pc: hex(h, "pc"),
                function,
                line,
                cause_function: syms.get(2 * i + 1).map(|c| c.0.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let warnings: Vec<(String, String)> = warns
        .iter()
        .map(|w| {
            let f = |k: &str| w.get(k).and_then(|v| v.as_str()).map(String::from);
            (f("cause").unwrap_or_else(|| "unnamed".into()), f("what").unwrap_or_default())
        })
        .collect();
    Ok((check(&x, &reported, &warnings), reported.len()))
}

/// Runs the subjects, at most `jobs` at once, each one's line printed as it ends (in the order
/// given at the end); returns whether all passed.
pub fn run_all(subjects: &[Subject], with: &RunWith, jobs: usize) -> bool {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<BTreeMap<usize, Outcome>> = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|sc| {
        for _ in 0..jobs.clamp(1, subjects.len().max(1)) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(s) = subjects.get(i) else { break };
                let r = run_one(s, with);
                results.lock().unwrap_or_else(|p| p.into_inner()).insert(i, r);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut all = true;
    for (passed, line, detail) in results.values() {
        println!("{line}");
        if !passed {
            all = false;
            for d in detail.lines() {
                println!("#   | {d}");
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let x = parse_expectation(&text).unwrap();
            match v.defsym() {
                None => assert!(x.hazards.is_empty(), "{}", v.name()),
                Some(sym) => {
                    assert_eq!(x.hazards.len(), 1, "{}", v.name());
                    let (file, line) = x.hazards[0].line.split_once(':').unwrap();
                    assert_eq!(file, base(SOURCE));
                    let n: usize = line.parse().unwrap();
                    let text = src.lines().nth(n - 1).unwrap();
                    assert!(text.contains(&format!("(planted: {sym})")), "{}: line {n} is '{text}'", v.name());
                    assert_eq!(src.matches(&format!("(planted: {sym})")).count(), 1);
                }
            }
        }
        for n in ["u-boot", "linux"] {
            let x = parse_expectation(&fs::read_to_string(root().join(EXPECT_DIR).join(format!("{n}.toml"))).unwrap()).unwrap();
            assert_eq!(x, Expectation::default(), "{n}");
        }
    }

    #[test]
    fn expectation_refusals() {
        assert!(parse_expectation("bogus = 1").unwrap_err().contains("unknown key 'bogus'"));
        assert!(parse_expectation("[[hazard]]\nkind = \"x\"\nfunction = \"f\"").unwrap_err().contains("'line' is missing"));
        assert!(parse_expectation("[[hazard]]\nkind = \"x\"\nfunction = \"f\"\nline = \"a:1\"\nfile = \"a\"")
            .unwrap_err()
            .contains("unknown key 'file'"));
        assert!(parse_expectation("allow_warnings = [1]").is_err());
    }

    fn reported(kind: &str, function: &str, line: &str, cause: &str) -> Reported {
        Reported { kind: kind.into(), pc: 0x40, function: function.into(), line: line.into(), cause_function: cause.into() }
    }

    #[test]
    fn each_hazard_matches_exactly_once_and_warnings_must_be_allowed() {
        let x = parse_expectation(
            "allow_warnings = [\"attribution\"]\n[[hazard]]\nkind = \"stale-instruction\"\nfunction = \"f\"\nline = \"a.S:3\"\ncause_function = \"g\"\n",
        )
        .unwrap();
        let ok = reported("stale-instruction", "f", "a.S:3", "g");
        assert!(check(&x, std::slice::from_ref(&ok), &[("attribution".into(), "w".into())]).is_empty());
        // Missing, extra, twice, wrong cause, a warning not allowed: each is a problem.
        assert_eq!(check(&x, &[], &[]).len(), 1);
        assert_eq!(check(&x, &[ok.clone(), reported("lost-write", "f", "a.S:3", "g")], &[]).len(), 1);
        assert_eq!(check(&x, &[ok.clone(), ok.clone()], &[]).len(), 1);
        assert_eq!(check(&x, &[reported("stale-instruction", "f", "a.S:3", "h")], &[]).len(), 2);
        assert_eq!(check(&x, std::slice::from_ref(&ok), &[("untranslated-va".into(), "w".into())]).len(), 1);
    }

    #[test]
    fn subjects_and_their_observe_lines() {
        let s = subjects(Path::new("/r"), Path::new("/c"));
        assert_eq!(s.len(), 15);
        let uboot = s.iter().find(|s| s.name == "u-boot").unwrap();
        assert_eq!(
            uboot.observe_args(Path::new("/o")).join(" "),
            "observe --el 1 --smp 1 --timeout 60 --expect /r/tests/foreign/expect/u-boot.toml --out /o --elf /c/u-boot/uboot.elf \
             --load-offset 0x47ef7000 --input /r/tests/foreign/u-boot.session --bios /c/u-boot/u-boot.bin"
        );
        let linux = s.iter().find(|s| s.name == "linux-smp2").unwrap();
        assert!(linux
            .observe_args(Path::new("/o"))
            .join(" ")
            .ends_with("/c/linux/vmlinuz -- -append nokaslr panic=-1 console=ttyAMA0 -no-reboot"));
        let el3 = s.iter().find(|s| s.name == "el3-no-clean").unwrap();
        assert_eq!(el3.machine(), "virt,secure=on");
        assert_eq!(el3.expect, Path::new("/r/tests/foreign/expect/no-clean.toml"));
    }

    #[test]
    fn the_kernel_member_of_a_kernel_package() {
        assert_eq!(linux_image_member("linux-image-6.12.95+deb12-arm64").as_deref(), Some("boot/vmlinuz-6.12.95+deb12-arm64"));
        assert_eq!(linux_image_member("linux-image-arm64"), None);
    }
}
