//! `capture`: reads a serial device until the `end` record (the end-of-run marker on boards
//! without semihosting) or a timeout, saving everything it read.
//!
//! A terminal device is put in raw mode (termios `cfmakeraw`, 8N1, `CLOCAL|CREAD`, no flow
//! control) at the requested baud rate; its previous settings are restored afterwards. Any
//! other readable path (a FIFO, a regular file being appended to) is read as it is, like
//! `tail -f`: reaching its end waits for more until the timeout. Bytes are saved as received
//! (CRLF and all), so the log can be fed to every other subcommand.

use crate::input::{Error, Result};
use crate::records;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg, SpecialCharacterIndices};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Capture settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Baud rate (applied to terminal devices only).
    pub baud: u32,
    /// Give up after this long without the `end` record.
    pub timeout: Duration,
}

/// What a capture read.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Every byte read, as received.
    pub bytes: Vec<u8>,
    /// Whether the `end` record arrived (otherwise the timeout ended the capture).
    pub saw_end: bool,
    /// How long the capture took.
    pub elapsed: Duration,
}

/// Baud rates accepted by `--baud`.
pub const BAUDS: [u32; 17] = [
    9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000, 2500000, 3000000,
    4000000,
];

fn baud_rate(baud: u32) -> Result<BaudRate> {
    use BaudRate::*;
    let b = match baud {
        9600 => B9600,
        19200 => B19200,
        38400 => B38400,
        57600 => B57600,
        115200 => B115200,
        230400 => B230400,
        460800 => B460800,
        500000 => B500000,
        576000 => B576000,
        921600 => B921600,
        1000000 => B1000000,
        1152000 => B1152000,
        1500000 => B1500000,
        2000000 => B2000000,
        2500000 => B2500000,
        3000000 => B3000000,
        4000000 => B4000000,
        _ => return Err(Error(format!("--baud {baud}: not a supported rate (one of {})", BAUDS.map(|b| b.to_string()).join(", ")))),
    };
    Ok(b)
}

/// Checks a baud rate without opening anything.
pub fn check_baud(baud: u32) -> Result<()> {
    baud_rate(baud).map(|_| ())
}

/// Whether `path` is a terminal (a serial port or a pty), which needs [`capture`] to read.
pub fn is_terminal_device(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.file_type().is_char_device() {
        return false;
    }
    match std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK).open(path) {
        Ok(f) => nix::unistd::isatty(f.as_fd()).unwrap_or(false),
        Err(_) => false,
    }
}

/// Restores a terminal's settings when dropped.
struct RawMode<'a> {
    file: &'a File,
    saved: termios::Termios,
}

impl Drop for RawMode<'_> {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(self.file.as_fd(), SetArg::TCSANOW, &self.saved);
    }
}

fn make_raw<'a>(file: &'a File, name: &str, baud: BaudRate) -> Result<RawMode<'a>> {
    let err = |what: &str, e: Errno| Error(format!("{name}: cannot {what}: {}", e.desc()));
    let saved = termios::tcgetattr(file.as_fd()).map_err(|e| err("read the terminal settings", e))?;
    let mut t = saved.clone();
    termios::cfmakeraw(&mut t);
    termios::cfsetspeed(&mut t, baud).map_err(|e| err("set the baud rate", e))?;
    t.control_flags |= ControlFlags::CLOCAL | ControlFlags::CREAD;
    t.control_flags &= !(ControlFlags::CSTOPB | ControlFlags::CRTSCTS);
    t.control_chars[SpecialCharacterIndices::VMIN as usize] = 0;
    t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    termios::tcsetattr(file.as_fd(), SetArg::TCSANOW, &t).map_err(|e| err("set raw mode", e))?;
    Ok(RawMode { file, saved })
}

/// Finds the `end` record among the complete lines of `bytes[from..]`; returns whether it was
/// found and where the next unscanned line starts.
fn scan_for_end(bytes: &[u8], mut from: usize) -> (bool, usize) {
    while let Some(i) = bytes[from..].iter().position(|&b| b == b'\n') {
        let line = &bytes[from..from + i];
        from += i + 1;
        if let Ok(text) = std::str::from_utf8(line) {
            if let Some(Ok(obj)) = records::parse_line(text.trim_end_matches('\r')) {
                if obj.get("record").and_then(|v| v.as_str()) == Some("end") {
                    return (true, from);
                }
            }
        }
    }
    (false, from)
}

/// Reads `path` until the `end` record or `opts.timeout`. Everything read is also written to
/// `sink` as it arrives (so a log file survives an interrupted capture).
pub fn capture(path: &Path, opts: &Options, sink: &mut dyn Write) -> Result<Captured> {
    let name = path.display().to_string();
    let baud = baud_rate(opts.baud)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error(format!("{name}: cannot open: {e}")))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(Error(format!("{name}: is a directory")));
    }
    let _raw = if nix::unistd::isatty(file.as_fd()).unwrap_or(false) { Some(make_raw(&file, &name, baud)?) } else { None };
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let mut bytes = Vec::new();
    let mut scanned = 0;
    let mut buf = [0u8; 4096];
    let mut f = &file;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(Captured { bytes, saw_end: false, elapsed: start.elapsed() });
        }
        let wait = (deadline - now).min(Duration::from_millis(100));
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(Error(format!("{name}: poll failed: {}", e.desc()))),
        }
        match f.read(&mut buf) {
            Ok(0) => std::thread::sleep(Duration::from_millis(20)), // end of a file/FIFO for now, or a hung-up pty: wait for more
            Ok(n) => {
                bytes.extend_from_slice(&buf[..n]);
                if bytes.len() as u64 > crate::input::MAX_INPUT {
                    return Err(Error(format!(
                        "{name}: more than {} MiB without the end record; not a cachescope console?",
                        crate::input::MAX_INPUT >> 20
                    )));
                }
                sink.write_all(&buf[..n]).and_then(|_| sink.flush()).map_err(|e| Error(format!("writing the log: {e}")))?;
                let (end, next) = scan_for_end(&bytes, scanned);
                scanned = next;
                if end {
                    return Ok(Captured { bytes, saw_end: true, elapsed: start.elapsed() });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {}
            // A pty whose other side closed reports EIO until it is reopened: wait like at EOF.
            Err(e) if e.raw_os_error() == Some(Errno::EIO as i32) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error(format!("{name}: read error: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &[u8] =
        b"noise\r\nKTAP version 1\r\n1..0\r\n# cs: {\"record\":\"end\",\"passed\":0,\"failed\":0,\"skipped\":0}\r\n# Totals\r\n";

    fn opts(ms: u64) -> Options {
        Options { baud: 115200, timeout: Duration::from_millis(ms) }
    }

    #[test]
    fn end_detection_needs_a_complete_end_record_line() {
        assert_eq!(scan_for_end(b"# cs: {\"record\":\"end\"}", 0), (false, 0));
        assert_eq!(scan_for_end(b"x\n# cs: {\"record\":\"end\"}\r\n", 0), (true, 26));
        assert!(!scan_for_end(b"# cs: {\"record\":\"endx\"}\n", 0).0);
        assert_eq!(scan_for_end(b"# end\n", 0), (false, 6));
    }

    #[test]
    fn regular_file_stand_in() {
        let p = std::env::temp_dir().join(format!("cs-capture-file-{}.log", std::process::id()));
        std::fs::write(&p, LOG).unwrap();
        let got = capture(&p, &opts(5000), &mut std::io::sink()).unwrap();
        assert!(got.saw_end);
        assert_eq!(got.bytes, LOG);
        assert!(got.elapsed < Duration::from_secs(2));
        std::fs::write(&p, b"KTAP version 1\r\n1..1\r\n").unwrap();
        let got = capture(&p, &opts(300), &mut std::io::sink()).unwrap();
        assert!(!got.saw_end);
        assert_eq!(got.bytes, b"KTAP version 1\r\n1..1\r\n");
        assert!(got.elapsed >= Duration::from_millis(300));
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn pty_stand_in_in_raw_mode() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave_path = nix::unistd::ttyname(pty.slave.as_fd()).unwrap();
        assert!(is_terminal_device(&slave_path));
        let master = File::from(pty.master);
        let writer = std::thread::spawn(move || {
            let mut m = &master;
            std::thread::sleep(Duration::from_millis(100));
            for chunk in LOG.chunks(7) {
                m.write_all(chunk).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
            master
        });
        let mut echo = Vec::new();
        let got = capture(&slave_path, &opts(5000), &mut echo).unwrap();
        let _master = writer.join().unwrap();
        assert!(got.saw_end, "{:?}", String::from_utf8_lossy(&got.bytes));
        // Raw mode: CRLF arrives unchanged (no ICRNL/ONLCR translation), nothing is lost.
        let end_line: &[u8] = b"# cs: {\"record\":\"end\",\"passed\":0,\"failed\":0,\"skipped\":0}\r\n";
        assert!(
            LOG.starts_with(&got.bytes) && got.bytes.windows(end_line.len()).any(|w| w == end_line),
            "{:?}",
            String::from_utf8_lossy(&got.bytes)
        );
        assert_eq!(echo, got.bytes);
        // The previous settings are restored: the pty is back in canonical mode.
        let t = termios::tcgetattr(pty.slave.as_fd()).unwrap();
        assert!(t.local_flags.contains(termios::LocalFlags::ICANON));
    }

    #[test]
    fn bad_baud_and_missing_device() {
        assert!(check_baud(115200).is_ok());
        let e = check_baud(12345).unwrap_err();
        assert!(e.0.contains("not a supported rate"), "{e}");
        let e = capture(Path::new("/dev/nonexistent-tty"), &opts(100), &mut std::io::sink()).unwrap_err();
        assert!(e.0.starts_with("/dev/nonexistent-tty: cannot open"), "{e}");
        assert!(!is_terminal_device(Path::new("/dev/null")));
    }
}
