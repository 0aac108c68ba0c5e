//! PSCI calls (Arm DEN 0022) through `smc #0` or `hvc #0`, SMC Calling Convention: function id
//! in w0, arguments in x1..x3, result in x0; x4..x17 may be clobbered by SMCCC v1.0 firmware.
//!
//! With nothing behind the conduit (no EL3 firmware, no hypervisor) the instruction is
//! UNDEFINED, so every call runs under the trap catcher and reports that as `Err(None)`.

use crate::arch::trap;
use crate::firmware::psci::{self, Conduit, Error};

/// One SMCCC call through `$insn` ("smc #0" or "hvc #0"): the same registers either way.
macro_rules! smccc {
    ($insn:literal, $x0:ident, $a1:expr, $a2:expr, $a3:expr) => {
        core::arch::asm!(
            $insn,
            inout("x0") $x0, inout("x1") $a1 => _, inout("x2") $a2 => _, inout("x3") $a3 => _,
            out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            out("x10") _, out("x11") _, out("x12") _, out("x13") _, out("x14") _,
            out("x15") _, out("x16") _, out("x17") _,
            options(nostack)
        )
    };
}

fn raw_call(conduit: Conduit, fid: u32, a1: u64, a2: u64, a3: u64) -> u64 {
    let mut x0 = fid as u64;
    // SAFETY: a firmware call per SMCCC: the firmware reads x0..x3 and returns in x0; every
    // register it may clobber is declared. Memory is not touched by the calls used here
    // (VERSION, CPU_ON, CPU_OFF, SYSTEM_OFF).
    unsafe {
        match conduit {
            Conduit::Smc => smccc!("smc #0", x0, a1, a2, a3),
            Conduit::Hvc => smccc!("hvc #0", x0, a1, a2, a3),
        }
    }
    x0
}

/// One PSCI call. `Err(None)`: the conduit instruction trapped (no firmware behind it);
/// `Err(Some(e))`: firmware answered with an error.
pub fn call(conduit: Conduit, fid: u32, a1: u64, a2: u64, a3: u64) -> Result<u32, Option<Error>> {
    let ret = trap::try_run(|| raw_call(conduit, fid, a1, a2, a3)).map_err(|_| None)?;
    psci::decode(ret).map_err(Some)
}

/// PSCI_VERSION: (major, minor), or `None` when no firmware answers.
pub fn version(conduit: Conduit) -> Option<(u16, u16)> {
    call(conduit, psci::VERSION, 0, 0, 0).ok().map(psci::version)
}

/// CPU_ON: starts the core `target_mpidr` at `entry` (physical address) with x0 = `context`.
pub fn cpu_on(conduit: Conduit, target_mpidr: u64, entry: u64, context: u64) -> Result<(), Option<Error>> {
    call(conduit, psci::CPU_ON_64, target_mpidr, entry, context).map(|_| ())
}

/// CPU_OFF: powers the calling core down, so a later CPU_ON can start it again. Returns only
/// when it did not (then with the reason).
pub fn cpu_off(conduit: Conduit) -> Option<Error> {
    match call(conduit, psci::CPU_OFF, 0, 0, 0) {
        Ok(_) => Some(Error::InternalFailure), // CPU_OFF never returns success
        Err(e) => e,
    }
}

/// SYSTEM_OFF. Returns only when it did not power off (then with the reason).
pub fn system_off(conduit: Conduit) -> Option<Error> {
    match call(conduit, psci::SYSTEM_OFF, 0, 0, 0) {
        Ok(_) => Some(Error::InternalFailure), // SYSTEM_OFF never returns success
        Err(e) => e,
    }
}
