//! QEMU `-M virt`: a PL011 console (boards.toml `console_base`, [`super::facts`]), RAM at
//! 0x4000_0000, the DTB at the base of RAM (QEMU puts it there for an ELF linked at or above
//! 0x4010_0000: boards.toml `link_base`), semihosting for the command line and the exit status.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::cpu;
use crate::arch::semihosting::{self, NoCommandLine};
use crate::arch::smp::{self, SecondaryEntry, StartError};
use crate::drivers::pl011::Pl011;
use crate::firmware::cmdline::{self, CmdlineError, CommandLine};
use crate::firmware::psci::{self, ConduitCell};

/// RAM when the DTB does not say: QEMU virt's default 128 MiB.
pub const RAM_FALLBACK: (u64, u64) = (0x4000_0000, 128 << 20);

/// QEMU's built-in PSCI, from the DTB's `/psci` node.
static CONDUIT: ConduitCell = ConduitCell::new();
static CORES: AtomicUsize = AtomicUsize::new(1);

/// This board is always an emulator.
pub fn emulated() -> bool {
    true
}

/// Learns the PSCI conduit and the number of cores (`-smp`) from the DTB.
pub fn probe(_x0: usize, fdt: Option<&crate::firmware::fdt::Fdt<'_>>) {
    if let Some(fdt) = fdt {
        CONDUIT.set(psci::conduit_from_dtb(fdt));
        CORES.store(fdt.cpu_count().max(1), Ordering::Relaxed);
    }
}

/// Cores this machine has (`-smp`).
pub fn cores() -> usize {
    CORES.load(Ordering::Relaxed)
}

/// How secondaries start here: PSCI through the DTB's conduit, or not at all without a
/// `/psci` node.
pub fn start_method() -> smp::StartMethod {
    CONDUIT.get().map_or(smp::StartMethod::None, smp::StartMethod::Psci)
}

/// Starts `core` at `entry(arg)` through QEMU's PSCI CPU_ON (the DTB's conduit; core n is
/// MPIDR Aff0 = n). Without a `/psci` node (`secure=on`: firmware would provide it) it fails.
pub fn start_core(core: usize, entry: SecondaryEntry, stack_top: usize, arg: u64) -> Result<(), StartError> {
    if core >= cores() {
        return Err(StartError::BadCore(core));
    }
    smp::validate(core, stack_top)?;
    let conduit = CONDUIT.get().ok_or(StartError::NoFirmware)?;
    smp::start_with_psci(conduit, core, core as u64, entry, stack_top, arg)
}

/// Powers the calling secondary core off (PSCI CPU_OFF through the DTB's conduit), so
/// [`start_core`] can start it again. Returns only when it cannot (no PSCI).
pub fn core_off() {
    if let Some(c) = CONDUIT.get() {
        let _ = crate::arch::psci::cpu_off(c);
    }
}

/// Where to look for the flattened device tree: the loader's x0 if set, else the base of RAM.
pub fn dtb_candidates(x0: usize) -> [usize; 2] {
    [x0, RAM_FALLBACK.0 as usize]
}

/// Brings up the console UART (QEMU needs no divisors; CR enables it).
pub fn console(base: usize) -> Pl011 {
    // SAFETY: `base` is the PL011 from the DTB (or QEMU virt's fixed one); MMU off = Device.
    let uart = unsafe { Pl011::new(base) };
    uart.enable();
    uart
}

/// The kernel command line: semihosting SYS_GET_CMDLINE minus argv0 (scripts/qemu-run makes it
/// the one word `cachescope`); without semihosting the DTB's `/chosen/bootargs`.
pub fn command_line(bootargs: Option<&[u8]>) -> Result<CommandLine, CmdlineError> {
    // On the heap (initialised before this is called): room for any realistic command line.
    let mut buf = alloc::vec![0u8; 64 << 10];
    match semihosting::command_line(&mut buf) {
        Ok(raw) => cmdline::checked(cmdline::decode(cmdline::without_argv0(raw))?, cmdline::argv0(raw)),
        Err(NoCommandLine::Refused) => Err(CmdlineError::Unreadable("semihosting SYS_GET_CMDLINE failed (longer than 64 KiB?)")),
        // No semihosting: no runner to tell of a cache model either.
        Err(NoCommandLine::Unavailable) => cmdline::checked(cmdline::decode(bootargs.unwrap_or(&[]))?, b""),
    }
}

/// Ends the run with `code` as QEMU's exit status (semihosting SYS_EXIT).
pub fn exit(code: u32) -> ! {
    crate::console::flush();
    use qemu_exit::QEMUExit;
    // Without `-semihosting` the HLT is UNDEFINED: the catcher turns that into a park.
    let _ = crate::arch::trap::try_run(|| {
        qemu_exit::AArch64::new().exit(code);
    });
    crate::println!("# semihosting unavailable: cannot exit QEMU (status {code}); parking");
    cpu::park()
}

/// The DTB's PL011 `reg` is already a CPU physical address on virt.
pub fn uart_from_dtb(reg: usize) -> Option<usize> {
    Some(reg)
}
