//! Telling the emulator's cache model (host/cache-model, a QEMU TCG plugin) what the kernel is
//! doing: cache geometry, memory-attribute windows, MMU state and named benchmark phases.
//!
//! Every call is one `hint #0x7f` marker ([`cachescope_arch::marker::emit`]), a NOP on hardware and on QEMU
//! without the plugin, so it is safe to call unconditionally.
//!
//! The protocol itself (commands, attribute codes, version, encoding) is
//! [`cachescope_arch::marker`], shared with the plugin.

pub use cachescope_arch::attr::Shareability;
pub use cachescope_arch::marker::{Command, Marker, ModelAttr, PA_UNKNOWN, PROTOCOL_VERSION};

#[cfg(target_os = "none")]
mod target {
    use super::*;
    use cachescope_arch::marker::emit;

    /// Announces the protocol.
    pub fn hello() {
        emit(Marker::Hello { version: PROTOCOL_VERSION });
    }

    /// Announces the protocol and this CPU's cache geometry (from CCSIDR_EL1): sent once at
    /// boot by the harness, so the model knows the guest's caches whatever suites run.
    pub fn announce() {
        hello();
        for c in cachescope_arch::hw::topology().caches {
            let g = &c.ccsidr;
            emit(Marker::Geometry { level: c.level, kind: c.kind, line: g.line(), sets: g.sets as u64, ways: g.ways as u64 });
        }
    }

    /// Declares `[va, va+len)` as having `attr`, Inner Shareable, mapped contiguously to
    /// physical `pa` onwards ([`PA_UNKNOWN`] when not known or not contiguous; irrelevant when
    /// `len` is 0).
    pub fn window(va: usize, pa: u64, len: usize, attr: ModelAttr) {
        window_shared(va, pa, len, attr, Shareability::Inner);
    }

    /// [`window`] with the mapping's shareability (protocol 6: the sanitizer's
    /// `non-shareable-shared` rule).
    pub fn window_shared(va: usize, pa: u64, len: usize, attr: ModelAttr, share: Shareability) {
        let pa = (pa != PA_UNKNOWN).then_some(pa);
        emit(Marker::Window { va: va as u64, len: len as u64, attr, pa, share });
    }

    /// Reports the current SCTLR_EL1.
    pub fn sctlr(value: u64) {
        emit(Marker::Sctlr(value));
    }

    /// Runs `f`, a by-VA maintenance loop meant to cover `[va, va+len)`, between the
    /// maintenance-range markers (protocol v4): when the range ends, the sanitizer reports every
    /// line of it that received no maintenance operation (`maintenance-gap`).
    pub fn maintenance_range<R>(va: usize, len: usize, f: impl FnOnce() -> R) -> R {
        emit(Marker::MaintBegin { va: va as u64, len: len as u64 });
        let r = f();
        emit(Marker::MaintEnd { va: va as u64 });
        r
    }

    /// Runs `f` as the named phase `id`. `name` must be NUL-terminated (e.g. `c"stream-read"`).
    pub fn phase<R>(name: &core::ffi::CStr, id: u64, f: impl FnOnce() -> R) -> R {
        emit(Marker::PhaseBegin { name_va: name.as_ptr() as u64, id });
        let r = f();
        emit(Marker::PhaseEnd { id });
        r
    }
}

#[cfg(target_os = "none")]
pub use target::*;
