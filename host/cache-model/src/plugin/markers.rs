//! Markers: what one `hint #0x7f` marker (decoded by `cachescope_arch::marker`) does to the
//! guest state, the phases and the sanitizer's maintenance ranges.

use crate::config::MarkerMode;
use crate::protocol::{self, Marker};
use crate::sanitize::{HazardKind, MaintRange};

use super::emit::Core;
use super::engine::{Engine, Host};

impl<H: Host> Engine<H> {
    /// One marker; `x` = x9..x13.
    pub(super) fn marker(&self, core: &mut Core, cpu: usize, x: [u64; 5], pc: u64) {
        core.stats.markers += 1;
        let marker = match protocol::parse(core.kernel_protocol, x) {
            Ok(m) => m,
            Err(e) => return core.warn(&format!("marker ignored: {e}")),
        };
        if self.settings.markers == MarkerMode::Declarations && !declares(&marker) {
            *core.stats.markers_ignored.get_or_insert(0) += 1;
            return;
        }
        match marker {
            Marker::Hello { version } => {
                // Older versions are understood (their windows carry no PA); a newer one may
                // send markers this plugin misreads.
                if !(protocol::OLDEST..=protocol::VERSION).contains(&version) {
                    core.warn(&format!("kernel speaks marker protocol {version}, this plugin {}", protocol::VERSION));
                }
                core.kernel_protocol = version;
            }
            Marker::Geometry { level, kind, line, sets, ways } => {
                if core.guest_geo.report(level.into(), kind, line, sets, ways) {
                    core.geometry_changed = true;
                }
            }
            Marker::Window { va, len, attr, pa, share } => core.guest.window(va, len, attr, pa, share),
            Marker::Sctlr(v) => core.guest.set_sctlr(cpu, v),
            Marker::PhaseBegin { name_va, id } => {
                let name = self.host.read_name(name_va).unwrap_or_else(|| format!("phase-{id}"));
                let now = self.now(core);
                let coh = core.model.as_ref().map(|m| m.coherence().to_vec()).unwrap_or_default();
                core.phases.begin(id, name, now, coh);
                // The buffers the coherence counts single out: every window whose PA is known.
                let ranges = core
                    .guest
                    .windows()
                    .iter()
                    .filter_map(|w| w.offset.map(|o| (w.va.wrapping_add(o), w.va.wrapping_add(o).wrapping_add(w.len))))
                    .collect();
                if let Some(m) = core.model.as_mut().filter(|m| m.is_coherent()) {
                    m.set_buffers(ranges);
                }
            }
            Marker::Quiet(on) => core.quiet = on,
            Marker::MaintBegin { va, len } => core.maint.push(MaintRange { va, len, ..MaintRange::default() }),
            Marker::MaintEnd { va } => {
                let Some(i) = core.maint.iter().rposition(|r| r.va == va) else {
                    return core.warn(&format!("maintenance range end at {va:#x} without a begin"));
                };
                let r = core.maint.remove(i);
                if !self.settings.sanitize {
                    return;
                }
                let shift = core.maint_shift();
                let phase = core.phases.current();
                for gap in r.gaps(shift) {
                    let Some((pa, _)) = core.guest.translate(cpu, gap, &self.host, "maintenance range", None) else { continue };
                    let pa = pa >> shift << shift;
                    let e = crate::sanitize::Event {
                        kind: HazardKind::MaintenanceGap,
                        pa,
                        access: cachescope_arch::hazard::HazardAccess::MaintEnd,
                        cause: cachescope_arch::hazard::HazardCause::DcByVa,
                        cause_pc: r.last_pc,
                        masked_by: None,
                        uncounted: false,
                    };
                    core.add_hazard(e, gap, pc, phase.as_ref(), None);
                }
            }
            Marker::PhaseEnd { id } => {
                let now = self.now(core);
                let coh = core.model.as_ref().filter(|m| m.is_coherent()).map(|m| m.coherence().to_vec()).unwrap_or_default();
                match core.phases.end(id, now, &coh) {
                    Ok(done) => core.phases_ended(&done),
                    Err(e) => core.warn(&e),
                }
            }
        }
    }
}

/// Whether a marker declares what the sanitizer must find (followed under
/// `markers=declarations`, [`MarkerMode::Declarations`]): every marker but the machine's facts
/// (geometry, window, SCTLR), which the model must then find for itself.
pub(super) fn declares(m: &Marker) -> bool {
    match m {
        Marker::Hello { .. }
        | Marker::PhaseBegin { .. }
        | Marker::PhaseEnd { .. }
        | Marker::MaintBegin { .. }
        | Marker::MaintEnd { .. }
        | Marker::Quiet(_) => true,
        Marker::Geometry { .. } | Marker::Window { .. } | Marker::Sctlr(_) => false,
    }
}
