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

/// The command line QEMU was given (`<kernel path> <-append text>`), or `None` when
/// semihosting is not enabled (the HLT was UNDEFINED) or the call failed.
pub fn command_line(buf: &mut [u8]) -> Option<&str> {
    let mut block = [buf.as_mut_ptr() as u64, buf.len() as u64];
    let ptr = block.as_mut_ptr() as usize;
    let rc = trap::try_run(|| call(SYS_GET_CMDLINE, ptr)).ok()?;
    if rc != 0 {
        return None;
    }
    let len = (block[1] as usize).min(buf.len());
    core::str::from_utf8(&buf[..len]).ok()
}
