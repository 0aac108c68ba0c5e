//! A firmware that is not cachescope: it depends only on the `cachescope-arch` library and brings
//! its own entry point, console (QEMU virt's PL011, written without a driver), panic handler and
//! exit (semihosting). It prints the cache geometry the ID registers describe, then cleans every
//! data cache to the Point of Coherency with the library's set/way walker and prints how many
//! DC CSW instructions that took next to the count the geometry predicts.
//!
//! Run: `qemu-system-aarch64 -M virt -cpu cortex-a72 -display none -serial stdio -nic none
//! -semihosting-config enable=on,target=native -kernel geometry-fw` (scripts/example-fw).

#![no_std]
#![no_main]

use core::fmt::{self, Write};

use cachescope_arch::cache::setway::{self, Scope, SetWayOp};
use cachescope_arch::hw;

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

struct Console;

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
fn exit(code: u64) -> ! {
    let block = [0x20026u64, code];
    // SAFETY: the semihosting call: x0 = SYS_EXIT_EXTENDED, x1 = its parameter block; QEMU
    // (-semihosting-config enable=on) ends the run and never returns.
    unsafe { core::arch::asm!("hlt #0xf000", in("x0") 0x20u64, in("x1") block.as_ptr(), options(nostack)) };
    loop {
        core::hint::spin_loop();
    }
}

#[no_mangle]
extern "C" fn main() -> ! {
    let mut out = Console;
    let t = hw::topology();
    let _ = writeln!(out, "geometry-fw: caches of this CPU (CCSIDR_EL1 via cachescope-arch):");
    for c in &t.caches {
        let g = c.ccsidr;
        let _ = writeln!(out, "  {:<4} {:>8} B  line {:>3}  ways {:>2}  sets {:>5}", c.name(), g.size(), g.line(), g.ways, g.sets);
    }
    let _ = writeln!(out, "  LoC {}  LoUIS {}  DminLine {} B", t.clidr.loc, t.clidr.louis, t.ctr.dmin_line());
    let expected = t.setway_ops(1, t.clidr.loc);
    match setway::dcsw(SetWayOp::Clean, Scope::ToLoC) {
        Ok(ops) => {
            let _ = writeln!(out, "geometry-fw: set/way clean to LoC: {ops} DC CSW (geometry predicts {expected})");
            exit(if ops == expected { 0 } else { 1 })
        }
        Err(e) => {
            let _ = writeln!(out, "geometry-fw: set/way clean to LoC refused: {e}");
            exit(1)
        }
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = writeln!(Console, "geometry-fw: panic: {info}");
    exit(101)
}
