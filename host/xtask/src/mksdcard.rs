//! `mksdcard [options] BOARD`: a bootable SD-card image for a Raspberry Pi, built without root
//! (scripts/mksdcard execs it; its header is the usage). The kernel image and config.txt come
//! from scripts/mkimage; the board's firmware files and DTB (boards.toml `firmware`, `dtb`) from
//! Debian packages fetched with apt-get through a private configuration under the cache folder;
//! the card is an MBR (sfdisk) with one bootable FAT32 partition from 1 MiB (`mkfs.fat
//! --offset`, filled with `mcopy`), then checked by [`crate::checkimages`].

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::boards::Board;

/// The first sector of the FAT partition (512-byte sectors: 1 MiB).
pub const PART_START: u64 = 2048;
/// The smallest card, in MiB (FAT32 needs 65525 clusters).
pub const MIN_MIB: u64 = 40;

/// Why mksdcard stopped: the exit status and its line (`mksdcard: …` on stderr), if any.
#[derive(Debug, PartialEq, Eq)]
pub struct Stop(pub u8, pub Option<String>);

fn die(message: impl Into<String>) -> Stop {
    Stop(1, Some(message.into()))
}

fn say(message: &str) {
    eprintln!("mksdcard: {message}");
}

/// The options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The board.
    pub board: String,
    /// `--out FILE`.
    pub out: Option<PathBuf>,
    /// `--images DIR`.
    pub images: Option<PathBuf>,
    /// `--debug`.
    pub debug: bool,
    /// `--args "A=B …"`.
    pub args: String,
    /// `--dtb FILE`.
    pub dtb: Option<PathBuf>,
    /// `--no-dtb`.
    pub no_dtb: bool,
    /// `--firmware-dir DIR`.
    pub firmware_dir: Option<PathBuf>,
    /// `--size MIB`.
    pub size_mib: u64,
    /// `--fetch-only`.
    pub fetch_only: bool,
}

/// What the command line asks: the options, or the usage (`-h`/`--help` anywhere).
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Make (or fetch for) a card.
    Run(Options),
    /// Print the usage.
    Help,
}

/// Parses the command line as the script did (`--size` is checked here too).
pub fn parse(args: &[String]) -> Result<Parsed, Stop> {
    let mut o = Options { size_mib: 64, ..Default::default() };
    let mut size = "64".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |allow_empty: bool| -> Result<String, Stop> {
            match it.next() {
                Some(v) if allow_empty || !v.is_empty() => Ok(v.clone()),
                _ => Err(die(format!("{a} needs a value (see --help)"))),
            }
        };
        match a.as_str() {
            "--out" => o.out = Some(value(false)?.into()),
            "--images" => o.images = Some(value(false)?.into()),
            "--debug" => o.debug = true,
            "--args" => o.args = value(true)?,
            "--dtb" => o.dtb = Some(value(false)?.into()),
            "--no-dtb" => o.no_dtb = true,
            "--firmware-dir" => o.firmware_dir = Some(value(false)?.into()),
            "--size" => size = value(false)?,
            "--fetch-only" => o.fetch_only = true,
            "-h" | "--help" => return Ok(Parsed::Help),
            s if s.starts_with('-') => return Err(die(format!("unknown argument '{s}' (see --help)"))),
            s => o.board = s.to_string(),
        }
    }
    if o.board.is_empty() {
        return Err(die("which board? one with an image in boards.toml, e.g. rpi4 or rpi5 (see --help)"));
    }
    o.size_mib = match size.parse::<u64>() {
        Ok(n) if n >= MIN_MIB && size.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => return Err(die(format!("--size must be a number of MiB >= {MIN_MIB} (FAT32 needs 65525 clusters)"))),
    };
    Ok(Parsed::Run(o))
}

/// cmdline.txt: `-- ARGS` without trailing spaces, one line.
pub fn cmdline(args: &str) -> String {
    format!("{}\n", format!("-- {args}").trim_end_matches(' '))
}

/// The partition table sfdisk writes: one bootable FAT32 LBA partition from [`PART_START`] to the end.
pub fn partition_table(size_mib: u64) -> String {
    format!("label: dos\nunit: sectors\nstart={PART_START}, size={}, type=c, bootable\n", part_sectors(size_mib))
}

/// Sectors of the partition.
pub fn part_sectors(size_mib: u64) -> u64 {
    size_mib * 2048 - PART_START
}

/// The private apt sources (one arm64 configuration serves both packages: raspi-firmware is
/// Architecture: all).
pub fn sources(arch: &str) -> String {
    format!(
        "deb [arch={arch}] http://deb.debian.org/debian bookworm main non-free-firmware\ndeb [arch={arch}] http://deb.debian.org/debian bookworm-backports main\n"
    )
}

/// The kernel package `apt-cache depends linux-image-arm64` names (`Depends: linux-image-N…`).
pub fn kernel_package_of(depends: &str) -> Option<String> {
    depends
        .lines()
        .find(|l| {
            l.contains("Depends: linux-image-")
                && l.split("Depends: linux-image-").nth(1).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .and_then(|l| l.split_whitespace().nth(1))
        .map(String::from)
}

/// Runs a command; a failure stops mksdcard with its status (as `set -e`).
fn run(cmd: &mut Command) -> Result<(), Stop> {
    let st = cmd.status().map_err(|e| die(format!("cannot run {}: {e}", cmd.get_program().to_string_lossy())))?;
    if st.success() {
        Ok(())
    } else {
        Err(Stop(st.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1), None))
    }
}

fn quiet(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn copy(from: &Path, to: &Path) -> Result<(), Stop> {
    fs::copy(from, to).map(|_| ()).map_err(|e| die(format!("cannot copy {} to {}: {e}", from.display(), to.display())))
}

fn nonempty(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.len() > 0)
}

/// The cache folder: CS_CACHE, else XDG_CACHE_HOME (else ~/.cache)/cachescope.
pub fn cache_base() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("CS_CACHE")
        .unwrap_or_else(|| var("XDG_CACHE_HOME").unwrap_or_else(|| var("HOME").unwrap_or_default().join(".cache")).join("cachescope"))
}

/// The cache of Debian files: [`cache_base`]/firmware.
pub(crate) fn cache() -> PathBuf {
    cache_base().join("firmware")
}

/// apt-get and apt-cache through the private configuration (also the foreign subjects' Debian
/// packages, `crate::foreign`: one set of package lists and one copy of the kernel package).
pub struct Apt {
    cache: PathBuf,
    user: String,
}

impl Apt {
    /// The private configuration under [`cache_base`]/firmware, run as the current user.
    pub fn new() -> Apt {
        let user =
            Command::new("id").arg("-un").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        Apt { cache: cache(), user }
    }

    fn dir(&self, arch: &str) -> PathBuf {
        self.cache.join(format!("apt-{arch}"))
    }

    fn command(&self, arch: &str, program: &str, args: &[&str]) -> Command {
        let d = self.dir(arch);
        let _ = fs::create_dir_all(d.join("lists/partial"));
        let _ = fs::create_dir_all(d.join("cache/archives/partial"));
        let _ = fs::write(d.join("sources.list"), sources(arch));
        let mut c = Command::new(program);
        c.args(args);
        let p = |s: &Path| s.display().to_string();
        for o in [
            format!("APT::Architecture={arch}"),
            format!("APT::Architectures::={arch}"),
            format!("Dir::Etc::SourceList={}", p(&d.join("sources.list"))),
            "Dir::Etc::SourceParts=/dev/null".into(),
            format!("Dir::State::Lists={}", p(&d.join("lists"))),
            format!("Dir::Cache={}", p(&d.join("cache"))),
            "Dir::State::status=/dev/null".into(),
            "Debug::NoLocking=1".into(),
            format!("APT::Sandbox::User={}", self.user),
        ] {
            c.arg("-o").arg(o);
        }
        c
    }

    /// `apt-get update` of the private lists; whether it succeeded.
    pub fn update(&self, arch: &str) -> bool {
        let ok = quiet(&mut self.command(arch, "apt-get", &["-qq", "update"]));
        if ok {
            let _ = fs::File::create(self.dir(arch).join("updated"));
        }
        ok
    }

    /// The cached .deb of a package (the first by name), fetched when there is none.
    pub fn fetch_deb(&self, arch: &str, pkg: &str) -> Option<PathBuf> {
        let debs = self.cache.join("debs");
        let have = || {
            let mut found: Vec<PathBuf> = fs::read_dir(&debs)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.path())
                        .filter(|p| {
                            p.file_name().and_then(OsStr::to_str).is_some_and(|n| n.starts_with(&format!("{pkg}_")) && n.ends_with(".deb"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            found.sort();
            found.into_iter().next()
        };
        if let Some(p) = have() {
            return Some(p);
        }
        fs::create_dir_all(&debs).ok()?;
        if !self.dir(arch).join("updated").is_file() && !self.update(arch) {
            return None;
        }
        quiet(self.command(arch, "apt-get", &["-qq", "download", pkg]).current_dir(&debs)).then_some(())?;
        have()
    }

    /// The newest linux-image-*-arm64 that linux-image-arm64 points at in bookworm-backports.
    pub fn kernel_package(&self) -> Option<String> {
        let out =
            self.command("arm64", "apt-cache", &["depends", "linux-image-arm64/bookworm-backports"]).stderr(Stdio::null()).output().ok()?;
        kernel_package_of(&String::from_utf8_lossy(&out.stdout))
    }
}

/// `dpkg-deb --fsys-tarfile DEB | tar TAR_ARGS…`: Ok(tar succeeded).
pub fn untar(deb: &Path, tar_args: &[String], stdout: Option<fs::File>, stderr_null: bool) -> Result<bool, Stop> {
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| die(format!("cannot run dpkg-deb: {e}")))?;
    let mut tar = Command::new("tar");
    tar.args(tar_args).stdin(dpkg.stdout.take().map(Stdio::from).unwrap_or_else(Stdio::null));
    if let Some(f) = stdout {
        tar.stdout(f);
    }
    if stderr_null {
        tar.stderr(Stdio::null());
    }
    let ok = tar.status().is_ok_and(|s| s.success());
    let dpkg_ok = dpkg.wait().is_ok_and(|s| s.success());
    Ok(ok && dpkg_ok)
}

fn base(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn on_path(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| crate::qemu::is_executable(&d.join(name)))
}

/// Makes the card (module docs); returns the exit status (the card check's).
pub fn mksdcard(root: &Path, boards_path: &Path, boards: &[Board], o: &Options) -> Result<u8, Stop> {
    for t in ["sfdisk", "mkfs.fat", "mcopy", "mdir"] {
        if !on_path(t) {
            return Err(die(format!("'{t}' is missing: apt-get install fdisk dosfstools mtools (scripts/bootstrap does it)")));
        }
    }
    let board = crate::boards::find(boards, &o.board).map_err(|e| {
        eprintln!("cachescope-xtask: {}: {e}", boards_path.display());
        Stop(2, None)
    })?;
    let name = board.name.as_str();
    let Some(kernel) = board.image.clone() else {
        return Err(die(format!("board '{name}' boots no raw image (boards.toml: image = \"none\"): no SD card to make")));
    };
    let dtb_name = board.dtb.clone().unwrap_or_else(|| "none".into());
    let firmware = &board.firmware;
    let apt = Apt::new();
    let staging = std::env::temp_dir().join(format!("cachescope-sdcard-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| die(format!("{}: {e}", staging.display())))?;
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Cleanup(staging.clone());

    // 1. Kernel image and config.txt.
    if !o.fetch_only {
        let images = match &o.images {
            Some(d) => d.clone(),
            None => {
                let d = root.join("target/images").join(if o.debug { "debug" } else { "release" });
                let mut mk = Command::new(root.join("scripts/mkimage"));
                if o.debug {
                    mk.arg("--debug");
                }
                // Its output is progress: on stderr.
                run(mk.arg("--out").arg(&d).arg(name).stdout(std::io::stderr()))?;
                d
            }
        };
        let dir = images.join(name);
        if !dir.join(&kernel).is_file() || !dir.join("config.txt").is_file() {
            return Err(die(format!("no {kernel} / config.txt in {} (run scripts/mkimage)", dir.display())));
        }
        copy(&dir.join(&kernel), &staging.join(&kernel))?;
        copy(&dir.join("config.txt"), &staging.join("config.txt"))?;
        fs::write(staging.join("cmdline.txt"), cmdline(&o.args)).map_err(|e| die(e.to_string()))?;
    }

    // 2. Firmware files (boards.toml `firmware`: start4.elf and fixup4.dat on the Pi 4).
    if !firmware.is_empty() {
        if let Some(fw) = &o.firmware_dir {
            for f in firmware {
                if !fw.join(f).is_file() {
                    return Err(die(format!("--firmware-dir {} has no {f}", fw.display())));
                }
                copy(&fw.join(f), &staging.join(f))?;
            }
        } else {
            let deb = apt.fetch_deb("arm64", "raspi-firmware").ok_or_else(|| die(format!(
                "could not fetch Debian's raspi-firmware package. Add by hand (--firmware-dir DIR): {} from Debian's raspi-firmware package (bookworm, component non-free-firmware, /usr/lib/raspi-firmware/) or from the boot/ folder of the Raspberry Pi firmware repository (github.com/raspberrypi/firmware)",
                firmware.join(" ")
            )))?;
            let mut args: Vec<String> = vec!["-x".into(), "-C".into(), staging.display().to_string(), "--strip-components=4".into()];
            args.extend(firmware.iter().map(|f| format!("./usr/lib/raspi-firmware/{f}")));
            if !untar(&deb, &args, None, false)? {
                return Err(Stop(1, None));
            }
            let copyright = fs::File::create(staging.join("raspi-firmware.copyright")).ok();
            let args = ["-xO".to_string(), "./usr/share/doc/raspi-firmware/copyright".into()];
            let _ = untar(&deb, &args, copyright, true);
            say(&format!("Pi 4 firmware from {}", base(&deb)));
        }
    }

    // 3. Device tree.
    if let Some(dtb) = &o.dtb {
        if !dtb.is_file() {
            return Err(die(format!("no such DTB: {}", dtb.display())));
        }
        copy(dtb, &staging.join(&dtb_name))?;
    } else if !o.no_dtb {
        let pkg = apt.kernel_package().or_else(|| {
            apt.update("arm64");
            apt.kernel_package()
        });
        let deb = pkg.and_then(|p| apt.fetch_deb("arm64", &p)).ok_or_else(|| die(format!(
            "could not fetch a Debian arm64 kernel package for {dtb_name}. Give one with --dtb FILE: {dtb_name} from Debian's linux-image-*-arm64 (bookworm-backports, /usr/lib/linux-image-*/broadcom/) or from the boot/ folder of github.com/raspberrypi/firmware; or use --no-dtb"
        )))?;
        let deb_name = base(&deb);
        let unpacked = apt.cache.join("dtb").join(deb_name.strip_suffix(".deb").unwrap_or(&deb_name));
        if !nonempty(&unpacked.join(&dtb_name)) {
            let _ = fs::create_dir_all(&unpacked);
            let args = [
                "-x".to_string(),
                "-C".into(),
                unpacked.display().to_string(),
                "--wildcards".into(),
                "--no-anchored".into(),
                "--transform=s|.*/||".into(),
                format!("broadcom/{dtb_name}"),
            ];
            let _ = untar(&deb, &args, None, true);
        }
        if !nonempty(&unpacked.join(&dtb_name)) {
            return Err(die(format!("{deb_name} has no broadcom/{dtb_name}")));
        }
        copy(&unpacked.join(&dtb_name), &staging.join(&dtb_name))?;
        say(&format!("{dtb_name} from {deb_name}"));
    } else if !firmware.is_empty() {
        say(&format!("warning: no {dtb_name}: the Pi 4 firmware expects one (Circle and Zephyr ship it); the kernel itself runs without"));
    }
    if o.fetch_only {
        return Ok(0);
    }

    // 4. The card: MBR + FAT32 from 1 MiB.
    let out = match &o.out {
        Some(p) => p.clone(),
        None => root.join("target/sdcard").join(board.sdcard.clone().unwrap_or_else(|| "none".into())),
    };
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| die(format!("{}: {e}", parent.display())))?;
    let _ = fs::remove_file(&out);
    let card = fs::File::create(&out).map_err(|e| die(format!("{}: {e}", out.display())))?;
    card.set_len(o.size_mib << 20).map_err(|e| die(format!("{}: {e}", out.display())))?;
    drop(card);
    let mut sfdisk = Command::new("sfdisk")
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| die(format!("cannot run sfdisk: {e}")))?;
    if let Some(mut w) = sfdisk.stdin.take() {
        let _ = w.write_all(partition_table(o.size_mib).as_bytes());
    }
    let st = sfdisk.wait().map_err(|e| die(e.to_string()))?;
    if !st.success() {
        return Err(Stop(st.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1), None));
    }
    let start = PART_START.to_string();
    run(Command::new("mkfs.fat")
        .args(["-F", "32", "-s", "1", "-n", "CACHESCOPE", "-h", &start, "--offset", &start])
        .arg(&out)
        .arg((part_sectors(o.size_mib) / 2).to_string())
        .stdout(Stdio::null()))?;
    let fat = format!("{}@@{}", out.display(), PART_START * 512);
    let mut files: Vec<PathBuf> = fs::read_dir(&staging).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
    for f in &files {
        run(Command::new("mcopy").args(["-i", &fat, "-o"]).arg(f).arg("::/"))?;
    }
    let names: String = files.iter().map(|f| format!("{} ", base(f))).collect();
    say(&format!("{} ({} MiB): {names}", out.display(), o.size_mib));
    let asked = crate::checkimages::Asked::Sdcard(out.clone(), name.to_string(), Some(staging.clone()));
    match crate::checkimages::check_images(root, boards_path, boards, asked) {
        Ok(true) => Ok(0),
        Ok(false) => Ok(1),
        Err(m) => {
            if let Some(m) = m {
                eprintln!("{m}");
            }
            Ok(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_and_their_refusals() {
        let Parsed::Run(o) = parse(&args(&["--images", "d", "--args", "", "--no-dtb", "--size", "40", "rpi4"])).unwrap() else { panic!() };
        assert_eq!((o.board.as_str(), o.images, o.args.as_str(), o.no_dtb, o.size_mib), ("rpi4", Some(PathBuf::from("d")), "", true, 40));
        assert_eq!(parse(&args(&["rpi4", "-h"])).unwrap(), Parsed::Help);
        assert_eq!(parse(&args(&["--bogus"])).unwrap_err(), die("unknown argument '--bogus' (see --help)"));
        assert!(parse(&args(&[])).unwrap_err().1.unwrap().starts_with("which board?"));
        for bad in ["39", "x", "+50", ""] {
            let e = parse(&args(&["--size", bad, "rpi4"])).unwrap_err();
            assert_eq!(e.0, 1, "{bad}");
        }
        assert_eq!(parse(&args(&["--out"])).unwrap_err().0, 1);
    }

    #[test]
    fn card_layout_and_cmdline() {
        assert_eq!(partition_table(64), "label: dos\nunit: sectors\nstart=2048, size=129024, type=c, bootable\n");
        assert_eq!(part_sectors(40), 79872);
        assert_eq!(cmdline(""), "--\n");
        assert_eq!(cmdline("only=boot  "), "-- only=boot\n");
    }

    #[test]
    fn the_kernel_package_is_the_first_versioned_dependency() {
        let out = "linux-image-arm64\n  Depends: linux-image-6.12.12+bpo-arm64\n  Depends: linux-image-6.1.0-arm64\n";
        assert_eq!(kernel_package_of(out).as_deref(), Some("linux-image-6.12.12+bpo-arm64"));
        assert_eq!(kernel_package_of("  Depends: linux-image-unsigned\n"), None);
    }
}
