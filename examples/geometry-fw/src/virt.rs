//! What a tiny firmware on QEMU virt needs besides the library: its entry (EL1, MMU off), a
//! console (the PL011, written without a driver), an exit (semihosting) and a panic handler.
//! Shared by the example firmwares of this crate.

use core::fmt::{self, Write};

// Entry at EL1 with the MMU off: stack, FP/SIMD on (Rust's formatting may use SIMD registers),
// BSS cleared, then `main`.
core::arch::global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    "_start:",
    "    ldr x1, =__stack_top",
    "    mov sp, x1",
    "    mov x1, #(3 << 20)",
    "    msr cpacr_el1, x1",
    "    isb",
    "    ldr x1, =__bss_start",
    "    ldr x2, =__bss_end",
    "1:  cmp x1, x2",
    "    b.hs 2f",
    "    str xzr, [x1], #8",
    "    b 1b",
    "2:  bl main",
    "    b .",
);

/// QEMU virt's PL011 data register.
const UART_DR: usize = 0x0900_0000;

/// The console: QEMU virt's PL011, written without a driver.
pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            // SAFETY: the PL011 data register of QEMU virt; with the MMU off it is Device memory
            // and QEMU accepts writes without any set-up.
            unsafe { core::ptr::write_volatile(UART_DR as *mut u32, u32::from(b)) };
        }
        Ok(())
    }
}

/// Ends the QEMU run with `code` (semihosting SYS_EXIT_EXTENDED).
pub fn exit(code: u64) -> ! {
    let block = [0x20026u64, code];
    // SAFETY: the semihosting call: x0 = SYS_EXIT_EXTENDED, x1 = its parameter block; QEMU
    // (-semihosting-config enable=on) ends the run and never returns.
    unsafe { core::arch::asm!("hlt #0xf000", in("x0") 0x20u64, in("x1") block.as_ptr(), options(nostack)) };
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = writeln!(Console, "firmware: panic: {info}");
    exit(101)
}
