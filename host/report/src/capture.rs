//! `capture`: reads a serial device until the `end` record (the end-of-run marker on boards
//! without semihosting) or a timeout, saving everything it read.
//!
//! A terminal device (a USB-serial adapter, a pty) is opened with the `serialport` crate (Linux
//! and macOS): raw mode (`cfmakeraw`), 8 data bits, no parity, 1 stop bit, no flow control,
//! `CLOCAL|CREAD`, at the requested baud rate, opened exclusively. Its previous termios settings
//! are saved before and restored afterwards (serialport leaves the port raw). Any other readable
//! path (a FIFO, a regular file being appended to) is read as it is, like `tail -f`: reaching its
//! end waits for more until the timeout. Bytes are saved as received (CRLF and all), so the log
//! can be fed to every other subcommand. [`list_ports`] names the serial ports of the machine.

use crate::input::{Error, Result};
use crate::records;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{self, SetArg};
use serialport::{DataBits, FlowControl, Parity, SerialPortType, StopBits};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// Default `--timeout` of `capture` (and of a serial device given as a log) in seconds: long
/// enough for the whole main job on a Pi at 115200 baud. Declared here only; `--help`,
/// scripts/capture-serial and README take it from here.
pub const DEFAULT_TIMEOUT_S: u64 = 600;

/// Default `--baud`.
pub const DEFAULT_BAUD: u32 = 115_200;

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
    /// Every byte read, as received, up to the end of the `end` record's line.
    pub bytes: Vec<u8>,
    /// Whether the `end` record arrived (otherwise the timeout ended the capture).
    pub saw_end: bool,
    /// How long the capture took.
    pub elapsed: Duration,
    /// Seconds since the capture started at which each line arrived (the read that brought its
    /// newline; a last line without one: the read that brought its last byte), for
    /// [`crate::times`].
    pub arrived: Vec<f64>,
}

/// Baud rates accepted by `--baud` (the standard rates both Linux and macOS can set).
pub const BAUDS: [u32; 17] = [
    9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000, 2500000, 3000000,
    4000000,
];

/// Checks a baud rate without opening anything.
pub fn check_baud(baud: u32) -> Result<()> {
    if BAUDS.contains(&baud) {
        Ok(())
    } else {
        Err(Error(format!("--baud {baud}: not a supported rate (one of {})", BAUDS.map(|b| b.to_string()).join(", "))))
    }
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

/// One serial port of this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    /// Device path (`/dev/ttyUSB0`, `/dev/cu.usbserial-…`).
    pub name: String,
    /// What it is: `usb VID:PID manufacturer product serial`, `pci`, `bluetooth` or `unknown`.
    pub kind: String,
}

/// The serial ports `serialport` finds (on Linux from /sys without libudev, on macOS from
/// IOKit), sorted by name.
pub fn list_ports() -> Result<Vec<PortInfo>> {
    let ports = serialport::available_ports().map_err(|e| Error(format!("cannot list serial ports: {e}")))?;
    let mut out: Vec<PortInfo> = ports
        .into_iter()
        .map(|p| {
            let kind = match p.port_type {
                SerialPortType::UsbPort(u) => {
                    let mut k = format!("usb {:04x}:{:04x}", u.vid, u.pid);
                    for s in [u.manufacturer, u.product, u.serial_number].into_iter().flatten() {
                        k.push(' ');
                        k.push_str(&s);
                    }
                    k
                }
                SerialPortType::PciPort => "pci".into(),
                SerialPortType::BluetoothPort => "bluetooth".into(),
                SerialPortType::Unknown => "unknown".into(),
            };
            PortInfo { name: p.port_name, kind }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Restores a terminal's termios settings when dropped (the fd stays owned by the port).
struct Restore {
    fd: std::os::fd::RawFd,
    saved: termios::Termios,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: the fd belongs to the port, which is dropped after this guard ([`Port`]).
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let _ = termios::tcsetattr(fd, SetArg::TCSANOW, &self.saved);
    }
}

/// An open serial port and the guard that restores its settings (fields drop in order: the
/// settings are restored before the port is closed).
struct Port {
    _restore: Restore,
    port: serialport::TTYPort,
}

/// What is being read: a serial port (raw 8N1) or a plain file/FIFO.
enum Source {
    Port(Box<Port>),
    File(File),
}

/// Opens a terminal as a raw 8N1 serial port, remembering its previous settings.
fn open_port(path: &Path, name: &str, baud: u32) -> Result<Source> {
    // The settings to restore, read before serialport changes them.
    let saved = {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error(format!("{name}: cannot open: {e}")))?;
        termios::tcgetattr(f.as_fd()).map_err(|e| Error(format!("{name}: cannot read the terminal settings: {}", e.desc())))?
    };
    let port = serialport::new(name, baud)
        .data_bits(DataBits::Eight)
        .parity(Parity::None)
        .stop_bits(StopBits::One)
        .flow_control(FlowControl::None)
        .timeout(Duration::from_millis(100))
        .open_native()
        .map_err(|e| Error(format!("{name}: cannot open as a serial port ({baud} 8N1 raw): {e}")))?;
    Ok(Source::Port(Box::new(Port { _restore: Restore { fd: port.as_raw_fd(), saved }, port })))
}

/// Reads what is there within `wait`: `Ok(0)` means nothing yet (timeout, end of a file for
/// now, or a hung-up pty), to be retried.
fn read_some(src: &mut Source, buf: &mut [u8], wait: Duration, name: &str) -> Result<usize> {
    let r = match src {
        Source::Port(p) => {
            let _ = serialport::SerialPort::set_timeout(&mut p.port, wait);
            p.port.read(buf)
        }
        Source::File(f) => {
            let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
            match nix::poll::poll(&mut fds, PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO)) {
                Ok(0) | Err(Errno::EINTR) => return Ok(0),
                Ok(_) => {}
                Err(e) => return Err(Error(format!("{name}: poll failed: {}", e.desc()))),
            }
            f.read(buf)
        }
    };
    match r {
        Ok(0) => {
            // End of a file/FIFO for now: wait for more.
            std::thread::sleep(Duration::from_millis(20));
            Ok(0)
        }
        Ok(n) => Ok(n),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted | ErrorKind::TimedOut) => Ok(0),
        // A pty or adapter whose other side is gone reports a hang-up (EIO, or POLLHUP that
        // serialport maps to BrokenPipe) until it comes back: wait like at EOF.
        Err(e) if e.kind() == ErrorKind::BrokenPipe || e.raw_os_error() == Some(Errno::EIO as i32) => {
            std::thread::sleep(Duration::from_millis(20));
            Ok(0)
        }
        Err(e) => Err(Error(format!("{name}: read error: {e}"))),
    }
}

/// Finds the `end` record among the complete lines of `bytes[from..]`; returns whether it was
/// found and where the next unscanned line starts.
fn scan_for_end(bytes: &[u8], mut from: usize) -> (bool, usize) {
    while let Some(i) = bytes[from..].iter().position(|&b| b == b'\n') {
        let line = &bytes[from..from + i];
        from += i + 1;
        if let Ok(text) = std::str::from_utf8(line) {
            if let Some(Ok(obj)) = records::parse_line(text.trim_end_matches('\r')) {
                if cachescope_arch::record::EndView::of(&obj).is_some() {
                    return (true, from);
                }
            }
        }
    }
    (false, from)
}

/// Reads `path` until the `end` record or `opts.timeout`. Everything read is also written to
/// `sink` as it arrives (so a log file survives an interrupted capture), up to the end of the
/// `end` record's line: the log and its arrival times end there.
pub fn capture(path: &Path, opts: &Options, sink: &mut dyn Write) -> Result<Captured> {
    let name = path.display().to_string();
    check_baud(opts.baud)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error(format!("{name}: cannot open: {e}")))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(Error(format!("{name}: is a directory")));
    }
    let mut src = if nix::unistd::isatty(file.as_fd()).unwrap_or(false) {
        drop(file);
        open_port(path, &name, opts.baud)?
    } else {
        Source::File(file)
    };
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let mut bytes = Vec::new();
    let mut scanned = 0;
    let mut buf = [0u8; 4096];
    let (mut arrived, mut last_read) = (Vec::new(), 0.0);
    let done = |bytes: Vec<u8>, mut arrived: Vec<f64>, last_read: f64, saw_end: bool| {
        if bytes.last().is_some_and(|&b| b != b'\n') {
            arrived.push(last_read);
        }
        Captured { bytes, saw_end, elapsed: start.elapsed(), arrived }
    };
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(done(bytes, arrived, last_read, false));
        }
        let wait = (deadline - now).min(Duration::from_millis(100));
        let n = read_some(&mut src, &mut buf, wait, &name)?;
        if n == 0 {
            continue;
        }
        let chunk_start = bytes.len();
        bytes.extend_from_slice(&buf[..n]);
        if bytes.len() as u64 > crate::input::MAX_INPUT {
            return Err(Error(format!(
                "{name}: more than {} MiB without the end record; not a cachescope console?",
                crate::input::MAX_INPUT >> 20
            )));
        }
        let (end, next) = scan_for_end(&bytes, scanned);
        scanned = next;
        if end {
            // What came in the same read after the end record's line is not part of the run.
            bytes.truncate(next);
        }
        let kept = &bytes[chunk_start..];
        last_read = start.elapsed().as_secs_f64();
        arrived.extend(kept.iter().filter(|&&b| b == b'\n').map(|_| last_read));
        sink.write_all(kept).and_then(|_| sink.flush()).map_err(|e| Error(format!("writing the log: {e}")))?;
        if end {
            return Ok(done(bytes, arrived, last_read, true));
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
        let mut saved = Vec::new();
        let got = capture(&p, &opts(5000), &mut saved).unwrap();
        assert!(got.saw_end);
        // Read in one piece: what follows the end record's line ("# Totals") is left out.
        let through_end = &LOG[..LOG.len() - b"# Totals\r\n".len()];
        assert_eq!(got.bytes, through_end);
        assert_eq!(saved, through_end);
        assert_eq!(got.arrived.len(), 4);
        assert!(got.elapsed < Duration::from_secs(2));
        std::fs::write(&p, b"KTAP version 1\r\n1..1\r\n").unwrap();
        let got = capture(&p, &opts(300), &mut std::io::sink()).unwrap();
        assert!(!got.saw_end);
        assert_eq!(got.bytes, b"KTAP version 1\r\n1..1\r\n");
        assert_eq!(got.arrived.len(), 2);
        assert!(got.elapsed >= Duration::from_millis(300));
        std::fs::write(&p, b"KTAP version 1\r\n1..1").unwrap();
        assert_eq!(capture(&p, &opts(100), &mut std::io::sink()).unwrap().arrived.len(), 2, "a last line without newline has a time");
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
        let lines = crate::input::Log::from_bytes("pty", &got.bytes).lines.len();
        assert_eq!(got.arrived.len(), lines, "one arrival time per line");
        assert!(got.arrived.windows(2).all(|w| w[0] <= w[1]));
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
    fn serial_port_is_raw_8n1_at_the_baud_rate_and_restored() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave_path = nix::unistd::ttyname(pty.slave.as_fd()).unwrap();
        let name = slave_path.display().to_string();
        let before = termios::tcgetattr(pty.slave.as_fd()).unwrap();
        assert!(before.local_flags.contains(termios::LocalFlags::ICANON));
        let src = open_port(&slave_path, &name, 115200).unwrap();
        let t = termios::tcgetattr(pty.slave.as_fd()).unwrap();
        use termios::{ControlFlags as C, InputFlags as I, LocalFlags as L, OutputFlags as O};
        assert_eq!(t.control_flags & C::CSIZE, C::CS8);
        assert!(!t.control_flags.intersects(C::PARENB | C::CSTOPB | C::CRTSCTS));
        assert!(t.control_flags.contains(C::CLOCAL | C::CREAD));
        assert!(!t.local_flags.intersects(L::ICANON | L::ECHO | L::ISIG));
        assert!(!t.input_flags.intersects(I::ICRNL | I::IXON | I::IXOFF));
        assert!(!t.output_flags.contains(O::OPOST));
        // serialport sets the rate through termios2 (BOTHER) on Linux: read it back that way.
        #[cfg(target_os = "linux")]
        {
            let mut t2 = std::mem::MaybeUninit::<nix::libc::termios2>::uninit();
            // SAFETY: TCGETS2 fills a termios2 on a valid tty fd.
            let r = unsafe { nix::libc::ioctl(pty.slave.as_raw_fd(), nix::libc::TCGETS2, t2.as_mut_ptr()) };
            assert_eq!(r, 0);
            // SAFETY: initialised by the successful ioctl.
            let t2 = unsafe { t2.assume_init() };
            assert_eq!((t2.c_ispeed, t2.c_ospeed), (115200, 115200));
        }
        drop(src);
        let after = termios::tcgetattr(pty.slave.as_fd()).unwrap();
        assert_eq!(after.local_flags, before.local_flags);
        assert_eq!(after.control_flags, before.control_flags);
    }

    #[test]
    fn listing_ports_works_without_udev() {
        // The machine may have no serial port at all; the listing must still succeed.
        let ports = list_ports().unwrap();
        assert!(ports.windows(2).all(|w| w[0].name <= w[1].name));
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
