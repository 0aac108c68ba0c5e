//! What the Raspberry Pi 4 and Pi 5 boards share: the firmware hands over at EL2 with x0 =
//! DTB (or, without a DTB, an ATAG list), kernel arguments come from `/chosen/bootargs`
//! (cmdline.txt), and a run ends with the `end` record and then PSCI SYSTEM_OFF where firmware
//! offers PSCI, else a WFE park. Semihosting is used only when the runner says the "board" is
//! QEMU (`emulator=qemu`, see [`EMULATOR_WORD`]): on silicon HLT is UNDEFINED without a
//! debugger, so it is never executed there.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::{cpu, trap};
use crate::firmware::atags;
use crate::firmware::cmdline::{self, CmdlineError, CommandLine};
use crate::firmware::psci::{self, Conduit, ConduitCell};

/// The kernel argument by which scripts/qemu-run says "this is QEMU, not silicon": the board's
/// boards.toml `qemu_kernel_args` (one word), `None` on a board no QEMU machine emulates (the
/// Pi 5), which is then never taken for QEMU. The board consumes it (the harness never sees
/// it); only with it does the run end through semihosting.
pub const EMULATOR_WORD: Option<&str> = crate::bsp::facts::QEMU_KERNEL_ARGS;

const _: () = assert!(match EMULATOR_WORD {
    Some(w) => one_word(w),
    None => true,
}, "boards.toml: a Pi's qemu_kernel_args must be one word, the emulator word");

/// True for a non-empty word without whitespace.
const fn one_word(w: &str) -> bool {
    let b = w.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            return false;
        }
        i += 1;
    }
    !b.is_empty()
}

/// Highest address at which a loader's ATAG list is believed (the legacy protocol puts it in
/// the first 16 KiB; QEMU uses 0x100).
const ATAG_WINDOW_END: usize = 0x4000;

static EMULATED: AtomicBool = AtomicBool::new(false);
static CONDUIT: ConduitCell = ConduitCell::new();
/// The ATAG command line: it stays where the loader put it (below the kernel, never reused).
static ATAG_CMDLINE: spin::Once<&'static [u8]> = spin::Once::new();

/// The PSCI conduit this board uses: the DTB's `/psci` method, else the board's firmware fact.
pub fn conduit() -> Option<Conduit> {
    CONDUIT.get()
}

/// Learns from the handover: the PSCI conduit (the DTB's `/psci` node, else `default_conduit`)
/// and, when there is no DTB and x0 points at an ATAG list, the ATAG command line. Called
/// before the console and the heap exist: it must neither print nor allocate.
pub fn probe(x0: usize, fdt: Option<&crate::firmware::fdt::Fdt<'_>>, default_conduit: Option<Conduit>) {
    CONDUIT.set(fdt.and_then(psci::conduit_from_dtb).or(default_conduit));
    if fdt.is_none() && x0 != 0 && x0 < ATAG_WINDOW_END && x0.is_multiple_of(4) {
        // SAFETY: x0 is in the first 16 KiB of RAM (below the kernel at 0x8_0000), which is
        // readable on every Pi and on QEMU and which nothing in this kernel writes: the slice
        // stays valid and unchanged for the whole run. Runs before the heap exists: no allocation.
        let bytes: &'static [u8] = unsafe { core::slice::from_raw_parts(x0 as *const u8, ATAG_WINDOW_END - x0) };
        if let Ok(atags::Atags { cmdline: Some(line), .. }) = atags::parse(bytes) {
            ATAG_CMDLINE.call_once(|| line);
        }
    }
}

/// The kernel command line: `/chosen/bootargs` (the firmware's words, then cmdline.txt), else
/// the ATAG command line; minus the emulator word `EMULATOR_WORD` (which marks the run as
/// emulated), and only the words after the last `--` when there is one (scripts/mksdcard writes
/// cmdline.txt as `-- ARGS` so that the firmware's own words stay out).
///
/// `EMULATOR_WORD` is looked for in the raw bytes first, so that a command line that is not
/// UTF-8 is refused with an error *and* the run still ends through semihosting under QEMU.
pub fn command_line(bootargs: Option<&[u8]>) -> Result<CommandLine, CmdlineError> {
    let raw = bootargs.or(ATAG_CMDLINE.get().copied()).unwrap_or(&[]);
    EMULATED.store(EMULATOR_WORD.is_some_and(|w| cmdline::has_word(raw, w)), Ordering::Relaxed);
    let text = cmdline::decode(raw)?;
    let rest = EMULATOR_WORD.map_or_else(|| text.into(), |w| cmdline::take_word(text, w).0);
    // The runner's argv0 (the cache model's profile) only under QEMU, through semihosting.
    let mut buf = alloc::vec![0u8; 256];
    let argv0 = if emulated() { crate::arch::semihosting::command_line(&mut buf).map(cmdline::argv0).unwrap_or(b"") } else { b"" };
    cmdline::checked(cmdline::after_separator(&rest), argv0)
}

/// True only when the runner said this is QEMU (`EMULATOR_WORD`, boards.toml `qemu_kernel_args`).
pub fn emulated() -> bool {
    EMULATED.load(Ordering::Relaxed)
}

/// Ends the run (after the `end` record): semihosting SYS_EXIT under QEMU; on a board PSCI
/// SYSTEM_OFF where PSCI exists, else every core stays parked in WFE.
pub fn exit(code: u32) -> ! {
    crate::console::flush();
    if emulated() {
        use qemu_exit::QEMUExit;
        // Under the trap catcher: a wrong `emulator=qemu` on silicon only costs a park.
        let _ = trap::try_run(|| qemu_exit::AArch64::new().exit(code));
        crate::diag!("semihosting unavailable: cannot exit QEMU (status {code})");
    }
    if let Some(c) = conduit() {
        let why = crate::arch::psci::system_off(c);
        crate::diag!("PSCI SYSTEM_OFF via {} did not power off ({:?})", c.name(), why);
    }
    crate::diag!("run finished with status {code}; cores parked: power the board off");
    crate::console::flush();
    cpu::park()
}
