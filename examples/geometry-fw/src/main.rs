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

mod virt;

use core::fmt::Write;

use cachescope_arch::cache::setway::{self, Scope, SetWayOp};
use cachescope_arch::hw;
use virt::{exit, Console};

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
