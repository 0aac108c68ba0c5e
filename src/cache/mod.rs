//! Caches. The decoders, the topology, the one set/way walker, by-VA maintenance and the
//! published silicon geometries are the library's ([`cachescope_arch::cache`], re-exported
//! here); this module adds what belongs to the kernel: reading CCSIDR2_EL1 under the trap catcher
//! (to report how a CPU without FEAT_CCIDX reacts) and the `setway` record of every walk. (The
//! `maint-total` record of every maintenance instruction executed is the runner's, from the
//! counts of `cachescope_arch::hw`.)
//!
//! API used by the MMU and benchmark code:
//! - `maintenance::{clean_to_poc, clean_invalidate_to_poc, invalidate_to_poc (unsafe),
//!   clean_to_pou, sync_instructions}(start, len) -> Result<u64, RangeError>` (instructions issued);
//! - `maintenance::zero(&mut [u8])` (DC ZVA when allowed, stores otherwise);
//! - [`try_dcsw`]`(op, scope) -> Result<u64, WalkError>` and [`dcsw`]`(op, scope) -> u64` (walk
//!   and record); [`record_walk`] records a walk made with the library's silent
//!   `setway::dcsw(op, scope)` when nothing may be written between the walk and what follows it
//!   (MMU control turning data caching off);
//! - [`per_phase`]`(phase, f)`: inside a benchmark phase the walks are not recorded one by one
//!   but added up, one `setway` record per (op, scope) with `walks` and `phase` when it ends, so
//!   the output does not grow with the repetitions.

pub use cachescope_arch::cache::*;

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::setway::{self, Scope, SetWayOp, WalkError};
    use super::topology::{IdRegs, Topology};
    use crate::cpu::cache as hw;
    use crate::record::{self, Emit};
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
            crate::cpu::trap::try_run(|| CCSIDR2_EL1.get()).ok()
        }
    }

    /// Reads this CPU's cache topology.
    pub fn this_cpu() -> Topology {
        Topology::read(&mut ThisCpu, CTR_EL0.get(), DCZID_EL0.get())
    }

    /// Why a missing clean or invalidate to the Point of Coherency is no mistake on this CPU, when it
    /// is not (CLIDR_EL1.LoC = 0: no cache level lies before the PoC).
    pub fn poc_maintenance_unneeded() -> Option<alloc::string::String> {
        let clidr = this_cpu().clidr;
        (!clidr.poc_maintenance_required()).then(|| {
            alloc::format!(
                "CLIDR_EL1.LoC = {}: no cache level lies before the point of coherency, so no clean or invalidate to PoC is needed here",
                clidr.loc
            )
        })
    }

    /// Walks `scope` with `op` and records it (see [`record_walk`]). Returns the number of DC
    /// instructions executed, or why the walk was refused (then nothing was executed).
    pub fn try_dcsw(op: SetWayOp, scope: Scope) -> Result<u64, WalkError> {
        let r = setway::dcsw(op, scope);
        record_walk(op, scope, &r);
        r
    }

    /// [`try_dcsw`], with a refusal counted as 0 instructions.
    pub fn dcsw(op: SetWayOp, scope: Scope) -> u64 {
        try_dcsw(op, scope).unwrap_or(0)
    }

    /// Records one walk made by `setway::dcsw`: `{"record":"setway","op":…,"scope":…,"ops":N}`
    /// with N the DC instructions executed; a refused walk prints the reason as a diagnostic and
    /// a record with `"ops":0` and an `"error"` field. Inside [`per_phase`] a walk that ran is
    /// added to the phase's tally instead (nothing is printed or allocated).
    pub fn record_walk(op: SetWayOp, scope: Scope, result: &Result<u64, WalkError>) {
        let rec = || record::Setway::new().op(op.name()).scope(scope.name());
        match result {
            Ok(n) => {
                if !PHASE.lock().as_mut().is_some_and(|t| t.add(op, scope, *n)) {
                    rec().ops(*n).emit();
                }
            }
            Err(e) => {
                let msg = alloc::format!("{e}");
                crate::diag!("set/way {} {} refused: {msg}", op.name(), scope.name());
                rec().ops(0).error(&msg).emit();
            }
        }
    }

    /// The walks of one phase, per (op, scope): walks and DC instructions.
    #[derive(Default)]
    struct Tally {
        rows: [Option<(SetWayOp, Scope, u64, u64)>; 4],
    }

    impl Tally {
        /// Adds a walk; false when the tally has no room for another (op, scope).
        fn add(&mut self, op: SetWayOp, scope: Scope, ops: u64) -> bool {
            for row in &mut self.rows {
                match row {
                    Some((o, s, walks, n)) if *o == op && *s == scope => {
                        *walks += 1;
                        *n += ops;
                        return true;
                    }
                    None => {
                        *row = Some((op, scope, 1, ops));
                        return true;
                    }
                    Some(_) => {}
                }
            }
            false
        }
    }

    /// The tally of the phase running now (None outside phases).
    static PHASE: spin::Mutex<Option<Tally>> = spin::Mutex::new(None);

    /// Runs `f` as one benchmark phase for the `setway` records: its walks are added up and
    /// recorded when it ends, one record per (op, scope) with `walks` and `phase` (the metric's
    /// `phase`, `id` formatted). Nested calls add to the outermost phase.
    pub fn per_phase<R>(id: &dyn core::fmt::Display, f: impl FnOnce() -> R) -> R {
        if PHASE.lock().is_some() {
            return f();
        }
        *PHASE.lock() = Some(Tally::default());
        let r = f();
        let tally = PHASE.lock().take().unwrap_or_default();
        let mut phase = None;
        for (op, scope, walks, ops) in tally.rows.into_iter().flatten() {
            let phase = phase.get_or_insert_with(|| alloc::format!("{id}"));
            record::Setway::new().op(op.name()).scope(scope.name()).ops(ops).walks(walks).phase(phase).emit();
        }
        r
    }
}
