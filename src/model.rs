//! Telling the emulator's cache model (host/cache-model, a QEMU TCG plugin) what the kernel is
//! doing: cache geometry, memory-attribute windows, MMU state and named benchmark phases.
//!
//! Every call is one `hint #0x7f` marker (see `arch::model`), a NOP on hardware and on QEMU
//! without the plugin, so it is safe to call unconditionally.
//!
//! Protocol version 2 (x9 = command; x10..x13 = arguments):
//!
//! | x9 | command        | x10                                  | x11              | x12          | x13                  |
//! |----|----------------|--------------------------------------|------------------|--------------|----------------------|
//! | 1  | hello          | protocol version (2)                 | –                | –            | –                    |
//! | 2  | geometry       | level \| kind << 8 \| line << 16     | sets             | ways         | –                    |
//! | 3  | window         | VA start                             | length (bytes)   | attribute    | PA start or all ones |
//! | 4  | sctlr          | SCTLR_EL1 (M bit 0, C bit 2, I bit 12)| –               | –            | –                    |
//! | 5  | phase begin    | VA of a NUL-terminated name (≤ 63 B) | phase id         | –            | –                    |
//! | 6  | phase end      | –                                    | phase id         | –            | –                    |
//!
//! Geometry kind: 1 = instruction, 2 = data, 3 = unified. Attribute: 0 = Normal write-back,
//! 1 = Normal write-through, 2 = Normal non-cacheable, 3 = Device. A window re-declared over the
//! same start replaces the earlier one; length 0 removes it. Accesses outside every window are
//! Normal write-back while SCTLR.M=1 and C=1, and bypass the caches otherwise (MMU off = Device).
//!
//! Window PA (x13, new in version 2): the physical address of the window's first byte, the window
//! being physically contiguous, so the model translates by-VA maintenance (`DC CIVAC`, …) inside
//! it before any access through it has shown the translation; [`PA_UNKNOWN`] (all ones) when the
//! kernel does not know it (or the window is not contiguous), and for a removal (length 0).
//! Version 1 kernels left x13 undefined, and nothing in x13 can tell the two apart: the plugin
//! reads x13 only after a hello announcing version 2 or later, and otherwise learns each window's
//! offset from the first access through it, as with version 1. Unused argument registers are 0.

/// Marker commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Command {
    /// Announces the protocol version.
    Hello = 1,
    /// Reports one cache's geometry.
    Geometry = 2,
    /// Declares a memory-attribute window (and, from version 2, its physical address).
    Window = 3,
    /// Reports SCTLR_EL1 after a change.
    Sctlr = 4,
    /// Starts a named phase.
    PhaseBegin = 5,
    /// Ends a phase.
    PhaseEnd = 6,
}

/// Attribute codes of the window command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum ModelAttr {
    /// Normal write-back, read/write-allocate.
    NormalWriteBack = 0,
    /// Normal write-through.
    NormalWriteThrough = 1,
    /// Normal non-cacheable.
    NormalNonCacheable = 2,
    /// Any Device type.
    Device = 3,
}

/// Protocol version sent with [`Command::Hello`]. Version 2 added the window's PA in x13.
pub const PROTOCOL_VERSION: u64 = 2;

/// Window PA meaning "not known" (x13 of [`Command::Window`]).
pub const PA_UNKNOWN: u64 = u64::MAX;

#[cfg(target_os = "none")]
mod target {
    use super::*;
    use crate::arch::model::marker;

    /// Announces the protocol.
    pub fn hello() {
        marker(Command::Hello as u64, PROTOCOL_VERSION, 0, 0, 0);
    }

    /// Announces the protocol and this CPU's cache geometry (from CCSIDR_EL1): sent once at
    /// boot by the harness, so the model knows the guest's caches whatever suites run.
    pub fn announce() {
        hello();
        for c in crate::cache::topology::this_cpu().caches {
            let g = &c.ccsidr;
            geometry(c.level, c.kind.model_code(), g.line(), g.sets as u64, g.ways as u64);
        }
    }

    /// Reports one cache (level 1..7; kind 1 = I, 2 = D, 3 = unified).
    pub fn geometry(level: u8, kind: u8, line: u32, sets: u64, ways: u64) {
        marker(Command::Geometry as u64, level as u64 | (kind as u64) << 8 | (line as u64) << 16, sets, ways, 0);
    }

    /// Declares `[va, va+len)` as having `attr`, mapped contiguously to physical `pa` onwards
    /// ([`PA_UNKNOWN`] when not known or not contiguous; irrelevant when `len` is 0).
    pub fn window(va: usize, pa: u64, len: usize, attr: ModelAttr) {
        marker(Command::Window as u64, va as u64, len as u64, attr as u64, pa);
    }

    /// Reports the current SCTLR_EL1.
    pub fn sctlr(value: u64) {
        marker(Command::Sctlr as u64, value, 0, 0, 0);
    }

    /// Runs `f` as the named phase `id`. `name` must be NUL-terminated (e.g. `c"stream-read"`).
    pub fn phase<R>(name: &core::ffi::CStr, id: u64, f: impl FnOnce() -> R) -> R {
        marker(Command::PhaseBegin as u64, name.as_ptr() as u64, id, 0, 0);
        let r = f();
        marker(Command::PhaseEnd as u64, 0, id, 0, 0);
        r
    }
}

#[cfg(target_os = "none")]
pub use target::*;
