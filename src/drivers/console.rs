//! The kernel console: one UART behind a `spin::Mutex`, and the `print!`/`println!` macros.
//!
//! KTAP output is nested, so the console also holds the current indentation depth that
//! diagnostic and record lines use (`harness::ktap`).

use super::pl011::Pl011;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;

static CONSOLE: Mutex<Option<Pl011>> = Mutex::new(None);
static DEPTH: AtomicUsize = AtomicUsize::new(0);

/// Installs the UART used by `print!`.
pub fn install(uart: Pl011) {
    *CONSOLE.lock() = Some(uart);
}

/// Base address of the installed UART, if any.
pub fn uart_base() -> Option<usize> {
    CONSOLE.lock().as_ref().map(Pl011::base)
}

/// Writes formatted text to the console (dropped if no UART is installed yet).
pub fn write_fmt(args: fmt::Arguments) {
    if let Some(uart) = CONSOLE.lock().as_mut() {
        let _ = uart.write_fmt(args);
    }
}

/// Writes a line prefixed by the current KTAP indentation.
pub fn write_indented_line(args: fmt::Arguments) {
    if let Some(uart) = CONSOLE.lock().as_mut() {
        for _ in 0..DEPTH.load(Ordering::Relaxed) {
            let _ = uart.write_str("  ");
        }
        let _ = uart.write_fmt(args);
        let _ = uart.write_str("\n");
    }
}

/// Writes a line when the console lock may be held by interrupted code (exception reports,
/// panics): takes the UART without waiting for the lock.
pub fn write_line_unlocked(args: fmt::Arguments) {
    // Single core and the interrupted holder never resumes while we print: forcing the lock is
    // the only way to report a fault taken inside `print!`.
    release_after_trap();
    write_indented_line(args);
}

/// Called when a trap abandons the interrupted code: a console lock it held is released.
pub fn release_after_trap() {
    if CONSOLE.is_locked() {
        // SAFETY: single core; the code that held the guard never runs again (it was unwound by
        // the trap catcher), so no two users of the UART exist at once.
        unsafe { CONSOLE.force_unlock() };
    }
}

/// Current KTAP nesting depth (0 = top level).
pub fn depth() -> usize {
    DEPTH.load(Ordering::Relaxed)
}

/// Sets the KTAP nesting depth for the lines that follow.
pub fn set_depth(d: usize) {
    DEPTH.store(d, Ordering::Relaxed);
}

/// Waits until the UART has sent everything.
pub fn flush() {
    if let Some(uart) = CONSOLE.lock().as_ref() {
        uart.flush();
    }
}

/// Prints to the console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => ($crate::console::write_fmt(format_args!($($arg)*)));
}

/// Prints to the console, with a newline.
#[macro_export]
macro_rules! println {
    () => ($crate::print!("\n"));
    ($($arg:tt)*) => ($crate::console::write_fmt(format_args!("{}\n", format_args!($($arg)*))));
}

/// Prints a KTAP diagnostic line (`# text`) at the current nesting depth: the form every
/// human-readable report line takes, so the output stays a valid KTAP stream.
#[macro_export]
macro_rules! diag {
    () => ($crate::console::write_indented_line(format_args!("#")));
    ($($arg:tt)*) => ($crate::console::write_indented_line(format_args!("# {}", format_args!($($arg)*))));
}
