//! The panic policy: print where and why, then fail the run (exit status 101).

use core::panic::PanicInfo;

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    crate::console::set_depth(0);
    match info.location() {
        Some(l) => crate::console::write_line_unlocked(format_args!("# PANIC at {}:{}:{}: {}", l.file(), l.line(), l.column(), info.message())),
        None => crate::console::write_line_unlocked(format_args!("# PANIC: {}", info.message())),
    }
    crate::bsp::exit(101)
}
