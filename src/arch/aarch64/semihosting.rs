//! Arm semihosting (HLT #0xF000): used only on QEMU, where the runner enables it. Every call
//! runs under the trap catcher, because without a debugger HLT is UNDEFINED.

use crate::arch::trap;

const SYS_GET_CMDLINE: u64 = 0x15;

fn call(op: u64, param: usize) -> u64 {
    let ret: u64;
    // SAFETY: the semihosting ABI: x0 = operation, x1 = parameter block; reads/writes only the
    // block we own. Without semihosting it is UNDEFINED, which the caller's trap catcher takes.
    unsafe {
        core::arch::asm!("hlt #0xf000", inout("x0") op => ret, in("x1") param, options(nostack));
    }
    ret
}

/// Why SYS_GET_CMDLINE gave no command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoCommandLine {
    /// Semihosting is not enabled: the HLT was UNDEFINED.
    Unavailable,
    /// The call returned an error (QEMU: the line does not fit the buffer).
    Refused,
}

/// The command line QEMU was given as raw bytes (`ARGV0 ARGS…` with `-semihosting-config
/// arg=…`, else `<kernel path> <-append text>`).
pub fn command_line(buf: &mut [u8]) -> Result<&[u8], NoCommandLine> {
    let mut block = [buf.as_mut_ptr() as u64, buf.len() as u64];
    let ptr = block.as_mut_ptr() as usize;
    let rc = trap::try_run(|| call(SYS_GET_CMDLINE, ptr)).map_err(|_| NoCommandLine::Unavailable)?;
    if rc != 0 {
        return Err(NoCommandLine::Refused);
    }
    let len = (block[1] as usize).min(buf.len());
    Ok(&buf[..len])
}
