//! Raspberry Pi 4 Model B (BCM2711, 4 × Cortex-A72), also QEMU `-M raspi4b`. Its image, link
//! address, QEMU machine, console UART and clock and spin table are its boards.toml table
//! (in the kernel: [`super::facts`]).
//!
//! - The raw image is loaded at the link address; the firmware's armstub enters it at EL2 with
//!   x0 = DTB (QEMU without `-dtb`: x0 = 0x100, an ATAG list).
//! - Console: PL011 UART0 (its ARM address in low-peripheral mode; the DTB gives the bus
//!   address), divisors programmed from the board's UART clock. GPIO14/15 are switched to ALT0
//!   first: the firmware gives UART0 to Bluetooth.
//! - Timer frequency from CNTFRQ_EL0 (54 MHz on silicon, set by the armstub).
//! - Secondary cores stay in the armstub's spin loop (release words at the spin table + 8 × core);
//!   [`start_core`] releases one. With a TF-A armstub the DTB has a `/psci` node and PSCI is
//!   used instead.
//! - A run ends as described in [`raspberrypi`]: semihosting only under
//!   QEMU, PSCI SYSTEM_OFF only with a `/psci` node (the stock armstub has none), else WFE park.

#[path = "raspberrypi/mod.rs"]
mod raspberrypi;
use crate::arch::smp::{self, SecondaryEntry, StartError};
use crate::drivers::{bcm2711_gpio::Gpio, pl011::Pl011};

pub use raspberrypi::{command_line, emulated, exit};

/// RAM when no DTB says: the first bank below the default GPU split (the firmware's DTB says
/// 0..0x3b40_0000 with the default gpu_mem; QEMU raspi4b has 0..0x3c00_0000).
pub const RAM_FALLBACK: (u64, u64) = (0, 0x3b40_0000);
/// Cores on the BCM2711.
const CORES: usize = 4;

const GPIO_BASE: usize = 0xfe20_0000;
/// UART0's reference clock (boards.toml `console_clock_hz`): the divisors are programmed from it.
const UART_CLOCK_HZ: u32 = super::facts::CONSOLE_CLOCK_HZ.expect("boards.toml: rpi4 programs its UART divisors: console_clock_hz");
const BAUD: u32 = 115_200;
/// The armstub's spin table (boards.toml `spin_table`): core n (1..3) waits on the 64-bit word
/// at SPIN_TABLE + 8 n.
const SPIN_TABLE: usize = super::facts::SPIN_TABLE.expect("boards.toml: rpi4 starts cores from a spin table: spin_table");
/// Legacy peripheral window: bus 0x7E00_0000.. is ARM 0xFE00_0000.. (`/soc` ranges).
const BUS_WINDOW: core::ops::Range<usize> = 0x7e00_0000..0x8000_0000;
const BUS_TO_ARM: usize = 0xfe00_0000 - 0x7e00_0000;

/// The loader's x0 is the DTB; nothing else is searched.
pub fn dtb_candidates(x0: usize) -> [usize; 2] {
    [x0, 0]
}

/// Learns the PSCI conduit (only a TF-A armstub has one) and the ATAG command line.
pub fn probe(x0: usize, fdt: Option<&crate::firmware::fdt::Fdt<'_>>) {
    raspberrypi::probe(x0, fdt, None);
}

/// A DTB PL011 address (a VideoCore bus address on the Pi) as an ARM physical address.
pub fn uart_from_dtb(reg: usize) -> Option<usize> {
    if BUS_WINDOW.contains(&reg) {
        Some(reg + BUS_TO_ARM)
    } else if (0xfc00_0000..0x1_0000_0000).contains(&reg) {
        Some(reg)
    } else {
        None
    }
}

/// Routes UART0 to GPIO14/15 and programs it for 115200 8n1 from the 48 MHz clock.
pub fn console(base: usize) -> Pl011 {
    // SAFETY: the BCM2711 GPIO block at its fixed address; MMU off = Device; boot is single-core.
    unsafe { Gpio::new(GPIO_BASE) }.map_pl011_uart();
    // SAFETY: `base` is UART0 (board default or the DTB's, translated); MMU off = Device.
    let uart = unsafe { Pl011::new(base) };
    uart.init(UART_CLOCK_HZ, BAUD);
    uart
}

/// How secondaries start here: PSCI when the DTB offers it (a TF-A armstub), else the stock
/// armstub's spin table.
pub fn start_method() -> smp::StartMethod {
    raspberrypi::conduit().map_or(smp::StartMethod::SpinTable, smp::StartMethod::Psci)
}

/// Starts `core` (1..3) at `entry(arg)` on its own stack: PSCI CPU_ON when the DTB offers PSCI,
/// else the armstub's spin table (write the entry address, clean it to memory, SEV).
pub fn start_core(core: usize, entry: SecondaryEntry, stack_top: usize, arg: u64) -> Result<(), StartError> {
    if core >= CORES {
        return Err(StartError::BadCore(core));
    }
    if let Some(c) = raspberrypi::conduit() {
        return smp::start_with_psci(c, core, core as u64, entry, stack_top, arg);
    }
    let pc = smp::prepare(core, entry, stack_top, arg)?;
    let release = SPIN_TABLE + 8 * core;
    // SAFETY: the armstub's release word for `core` (below the kernel, reserved by the
    // firmware for this purpose); an aligned 64-bit store, then clean + SEV wakes the core.
    unsafe { core::ptr::write_volatile(release as *mut u64, pc) };
    smp::clean_to_poc(release);
    aarch64_cpu::asm::sev();
    Ok(())
}

/// Powers the calling secondary core off through PSCI CPU_OFF when the DTB offers PSCI (a TF-A
/// armstub), so [`start_core`] can start it again. Returns with the stock armstub: a core it
/// released from the spin table cannot go back there, and its caller keeps it waiting for work.
pub fn core_off() {
    if let Some(c) = raspberrypi::conduit() {
        let _ = crate::arch::psci::cpu_off(c);
    }
}

/// Cores this board has.
pub fn cores() -> usize {
    CORES
}
