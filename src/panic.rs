//! The panic policy: print where and why, then fail the run (exit status 101).

use core::panic::PanicInfo;

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    crate::console::set_depth(0);
    // A panic before the console exists (e.g. while parsing the DTB) must still be seen: bring up
    // the board's default UART.
    crate::console::release_after_trap(); // a panic inside print! must not deadlock on the lock
    if crate::console::uart_base().is_none() {
        crate::console::install(crate::bsp::console(crate::bsp::CONSOLE_BASE));
    }
    match info.location() {
        Some(l) => {
            crate::console::write_line_unlocked(format_args!("# PANIC at {}:{}:{}: {}", l.file(), l.line(), l.column(), info.message()))
        }
        None => crate::console::write_line_unlocked(format_args!("# PANIC: {}", info.message())),
    }
    crate::bsp::exit(101)
}
