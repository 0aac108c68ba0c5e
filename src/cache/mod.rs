//! Caches. The decoders, the topology, the one set/way walker, by-VA maintenance and the
//! published silicon geometries are the library's ([`cachescope_arch::cache`], re-exported
//! here); this module adds what belongs to the kernel: reading CCSIDR2_EL1 under the trap catcher
//! (to report how a CPU without FEAT_CCIDX reacts) and the `setway` record of each walk.
//!
//! API used by the MMU and benchmark code:
//! - `maintenance::{clean_to_poc, clean_invalidate_to_poc, invalidate_to_poc (unsafe),
//!   clean_to_pou, sync_instructions}(start, len) -> Result<u64, RangeError>` (instructions issued);
//! - `maintenance::zero(&mut [u8])` (DC ZVA when allowed, stores otherwise);
//! - [`dcsw`]`(op, scope) -> u64` (walks and emits the `setway` record) and
//!   `setway::dcsw(op, scope) -> Result<u64, WalkError>` (the library's: prints nothing).

pub use cachescope_arch::cache::*;

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::setway::{self, Scope, SetWayOp};
    use super::topology::{IdRegs, Topology};
    use crate::arch::cache as hw;
    use cachescope_arch::sysreg::{CCSIDR2_EL1, CTR_EL0, DCZID_EL0};
    use tock_registers::interfaces::Readable;

    /// This CPU's identification registers, CCSIDR2_EL1 read under the trap catcher whatever
    /// ID_AA64MMFR2_EL1 says (the library's `hw::Cpu` reads it only with FEAT_CCIDX).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct ThisCpu;

    impl IdRegs for ThisCpu {
        fn clidr(&mut self) -> u64 {
            hw::Cpu.clidr()
        }
        fn mmfr2(&mut self) -> u64 {
            hw::Cpu.mmfr2()
        }
        fn csselr(&mut self) -> u64 {
            hw::Cpu.csselr()
        }
        fn select(&mut self, v: u64) {
            hw::Cpu.select(v);
        }
        fn ccsidr(&mut self) -> u64 {
            hw::Cpu.ccsidr()
        }
        fn ccsidr2(&mut self) -> Option<u64> {
            crate::arch::trap::try_run(|| CCSIDR2_EL1.get()).ok()
        }
    }

    /// Reads this CPU's cache topology.
    pub fn this_cpu() -> Topology {
        Topology::read(&mut ThisCpu, CTR_EL0.get(), DCZID_EL0.get())
    }

    /// Walks `scope` with `op` and emits `{"record":"setway","op":…,"scope":…,"ops":N}` with N
    /// the DC instructions actually executed. A refused walk prints the reason as a diagnostic
    /// and a record with `"ops":0` and an `"error"` field, and returns 0.
    pub fn dcsw(op: SetWayOp, scope: Scope) -> u64 {
        let rec = crate::harness::Record::new(&cachescope_arch::record::SETWAY).str("op", op.name()).str("scope", scope.name());
        match setway::dcsw(op, scope) {
            Ok(n) => {
                rec.u64("ops", n).emit();
                n
            }
            Err(e) => {
                let msg = alloc::format!("{e}");
                crate::diag!("set/way {} {} refused: {msg}", op.name(), scope.name());
                rec.u64("ops", 0).str("error", &msg).emit();
                0
            }
        }
    }
}
