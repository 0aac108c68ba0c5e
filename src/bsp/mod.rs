//! Board support: exactly one board is compiled in, chosen by cargo feature: `qemu-virt` (the
//! default), `rpi4` or `rpi5`. A Pi feature takes precedence over the default, so
//! `cargo build --features rpi4` builds for the Pi 4 (`--no-default-features --features rpi4`
//! is the same); `rpi4` together with `rpi5` is a compile error.
//!
//! Every board exports the same interface, and generic code only calls that:
//! `NAME`, `UART_FALLBACK`, `RAM_FALLBACK`, `dtb_candidates(x0)`, `probe(x0, fdt)` (learn from
//! the handover), `uart_from_dtb(reg)`, `console(base)`, `command_line(bootargs)`,
//! `emulated()`, `exit(code)` (after the `end` record), `cores()`, `start_method()` (how
//! secondaries start: PSCI through a conduit, a spin table, or not at all; nothing is started),
//! `start_core(core, entry, stack_top, arg)` (release a parked secondary core) and `core_off()`
//! (a secondary powers itself off where firmware can start it again; returns where it cannot).

// The board whose cargo feature is enabled, chosen by build.rs from boards.toml: `mod board;`
// with its `#[path]` (src/bsp/NAME.rs). A new board is its file here and its boards.toml table.
include!(concat!(env!("OUT_DIR"), "/bsp_board.rs"));

pub use board::*;
