//! Raspberry Pi 5 (BCM2712, 4 × Cortex-A76). No QEMU machine exists for it: this file is
//! checked against the documented boot protocol only (see README, "What is verified where").
//! Its image, config.txt, DTB and console UART are its boards.toml table (in the kernel:
//! [`super::facts`]).
//!
//! - The raw image is loaded at `kernel_address` (config.txt); the EEPROM firmware's BL31 enters
//!   it at EL2 with x0 = DTB (the board's DTB on the card; with `os_check=0` and no DTB the
//!   board defaults below are used).
//! - Console: the 3-pin debug UART (JST-SH between the HDMI ports), a PL011 (uart10).
//!   The firmware programs it for 115200 8n1 and its clock is reported inconsistently, so the
//!   divisors are left alone: the UART is only enabled.
//! - Secondary cores: PSCI CPU_ON through `smc` (BL31); cores are numbered in MPIDR Aff1.
//! - A run ends with PSCI SYSTEM_OFF through `smc` (falls back to a WFE park if it returns).

#[path = "raspberrypi/mod.rs"]
mod raspberrypi;
use crate::arch::smp::{self, SecondaryEntry, StartError};
use crate::drivers::pl011::Pl011;
use crate::firmware::psci::Conduit;

pub use raspberrypi::{command_line, emulated, exit};

/// RAM when no DTB says: the first 948 MiB, below the firmware's reservations in the first GiB.
pub const RAM_FALLBACK: (u64, u64) = (0, 0x3b40_0000);

const CORES: usize = 4;
/// `/soc` ranges on the BCM2712: bus 0x7C00_0000..0x8000_0000 is ARM 0x10_7C00_0000.
const BUS_WINDOW: core::ops::Range<usize> = 0x7c00_0000..0x8000_0000;
const BUS_TO_ARM: usize = 0x10_0000_0000;
/// PSCI target of core n: the MPIDR affinity fields, core number in Aff1 (the DTB's cpu `reg`:
/// 0x000, 0x100, 0x200, 0x300). MPIDR's MT bit (24) is not an affinity field and is left out.
const fn mpidr_of(core: usize) -> u64 {
    (core as u64) << 8
}

/// The loader's x0 is the DTB; nothing else is searched.
pub fn dtb_candidates(x0: usize) -> [usize; 2] {
    [x0, 0]
}

/// Learns the PSCI conduit: the DTB's `/psci` method, else `smc` (BL31 is always there).
pub fn probe(x0: usize, fdt: Option<&crate::firmware::fdt::Fdt<'_>>) {
    raspberrypi::probe(x0, fdt, Some(Conduit::Smc));
}

/// A DTB PL011 address (a bus address under `/soc`) as an ARM physical address; PL011s
/// elsewhere (RP1's, behind PCIe) are not usable before PCIe is up and are refused.
pub fn uart_from_dtb(reg: usize) -> Option<usize> {
    if BUS_WINDOW.contains(&reg) {
        Some(reg + BUS_TO_ARM)
    } else if reg == super::facts::CONSOLE_BASE {
        Some(reg)
    } else {
        None
    }
}

/// Enables the debug UART as the firmware programmed it (115200 8n1): divisors untouched.
pub fn console(base: usize) -> Pl011 {
    // SAFETY: `base` is the debug PL011 (board default or the DTB's, translated); MMU off = Device.
    let uart = unsafe { Pl011::new(base) };
    uart.enable();
    uart
}

/// How secondaries start here: PSCI through BL31 (the DTB's conduit, else `smc`).
pub fn start_method() -> smp::StartMethod {
    smp::StartMethod::Psci(raspberrypi::conduit().unwrap_or(Conduit::Smc))
}

/// Starts `core` (1..3) at `entry(arg)` through PSCI CPU_ON.
pub fn start_core(core: usize, entry: SecondaryEntry, stack_top: usize, arg: u64) -> Result<(), StartError> {
    if core >= CORES {
        return Err(StartError::BadCore(core));
    }
    let conduit = raspberrypi::conduit().unwrap_or(Conduit::Smc);
    smp::start_with_psci(conduit, core, mpidr_of(core), entry, stack_top, arg)
}

/// Powers the calling secondary core off (PSCI CPU_OFF through BL31), so [`start_core`] can
/// start it again. Returns only if firmware refuses.
pub fn core_off() {
    let _ = crate::arch::psci::cpu_off(raspberrypi::conduit().unwrap_or(Conduit::Smc));
}

/// Cores this board has.
pub fn cores() -> usize {
    CORES
}
