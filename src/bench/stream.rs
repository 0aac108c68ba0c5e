//! Streaming bandwidth (the data loader): sequential read, write and copy with LDP and LDNP,
//! with PRFM PLDL1STRM / PLDL2KEEP at a configurable distance against no prefetch.
//! Each kernel is a hand-written loop, 64 bytes (four pair instructions) per iteration, so the
//! instruction mix is known exactly: 16 bytes per load instruction.

use super::{measure, Env, Metric, MetricId, Region, Unit};

/// One streaming kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// LDP X, X.
    ReadLdp,
    /// LDNP X, X (non-temporal hint).
    ReadLdnp,
    /// LDP with PRFM PLDL1STRM `distance` bytes ahead.
    ReadLdpPldl1strm,
    /// LDP with PRFM PLDL2KEEP `distance` bytes ahead.
    ReadLdpPldl2keep,
    /// STP X, X.
    WriteStp,
    /// STNP X, X.
    WriteStnp,
    /// LDP + STP from one half of the buffer to the other.
    CopyLdpStp,
}

impl Kernel {
    /// All kernels, in report order.
    pub const ALL: [Kernel; 7] =
        [Self::ReadLdp, Self::ReadLdnp, Self::ReadLdpPldl1strm, Self::ReadLdpPldl2keep, Self::WriteStp, Self::WriteStnp, Self::CopyLdpStp];

    /// Variant name in records.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ReadLdp => "read-ldp",
            Self::ReadLdnp => "read-ldnp",
            Self::ReadLdpPldl1strm => "read-ldp-pldl1strm",
            Self::ReadLdpPldl2keep => "read-ldp-pldl2keep",
            Self::WriteStp => "write-stp",
            Self::WriteStnp => "write-stnp",
            Self::CopyLdpStp => "copy-ldp-stp",
        }
    }

    /// Bytes moved per load instruction (0 for write-only kernels).
    pub const fn bytes_per_load(self) -> u64 {
        match self {
            Self::WriteStp | Self::WriteStnp => 0,
            _ => 16,
        }
    }
}

/// A read loop: an optional prefetch, four pair loads of `$ld` (64 bytes), advance, loop.
macro_rules! read_loop {
    ($prefetch:literal, $ld:literal, $base:expr, $end:expr, $distance:expr) => {
        core::arch::asm!(
            concat!("2: ", $prefetch),
            concat!($ld, " x2, x3, [x0]"), concat!($ld, " x4, x5, [x0, #16]"),
            concat!($ld, " x6, x7, [x0, #32]"), concat!($ld, " x8, x9, [x0, #48]"),
            "add x0, x0, #64", "cmp x0, x1", "b.lo 2b",
            inout("x0") $base => _, in("x1") $end, in("x10") $distance,
            out("x2") _, out("x3") _, out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            options(nostack, readonly))
    };
}

/// A write loop: four pair stores of `$st` (64 bytes) of one pattern, advance, loop.
macro_rules! write_loop {
    ($st:literal, $base:expr, $end:expr, $pattern:expr) => {
        core::arch::asm!(
            concat!("2: ", $st, " x2, x2, [x0]"), concat!($st, " x2, x2, [x0, #16]"),
            concat!($st, " x2, x2, [x0, #32]"), concat!($st, " x2, x2, [x0, #48]"),
            "add x0, x0, #64", "cmp x0, x1", "b.lo 2b",
            inout("x0") $base => _, in("x1") $end, in("x2") $pattern,
            options(nostack))
    };
}

/// Runs `kernel` once over `bytes` (a multiple of 64) at `base`; copy reads the first half and
/// writes the second.
///
/// # Safety
/// `[base, base + bytes)` must be mapped, writable test memory, 16-byte aligned.
pub unsafe fn run(kernel: Kernel, base: usize, bytes: usize, distance: usize) {
    let end = base + bytes;
    // SAFETY: (all arms) the loops touch exactly [base, end) with aligned pair accesses, as the
    // caller guarantees; PRFM never faults.
    unsafe {
        match kernel {
            Kernel::ReadLdp => read_loop!("", "ldp", base, end, distance),
            Kernel::ReadLdnp => read_loop!("", "ldnp", base, end, distance),
            Kernel::ReadLdpPldl1strm => read_loop!("prfm pldl1strm, [x0, x10]", "ldp", base, end, distance),
            Kernel::ReadLdpPldl2keep => read_loop!("prfm pldl2keep, [x0, x10]", "ldp", base, end, distance),
            Kernel::WriteStp => write_loop!("stp", base, end, 0x5a5a_5a5a_5a5a_5a5au64),
            Kernel::WriteStnp => write_loop!("stnp", base, end, 0xa5a5_a5a5_a5a5_a5a5u64),
            Kernel::CopyLdpStp => {
                let half = bytes / 2;
                core::arch::asm!(
                    "2: ldp x4, x5, [x0]", "ldp x6, x7, [x0, #16]", "stp x4, x5, [x2]", "stp x6, x7, [x2, #16]",
                    "ldp x4, x5, [x0, #32]", "ldp x6, x7, [x0, #48]", "stp x4, x5, [x2, #32]", "stp x6, x7, [x2, #48]",
                    "add x0, x0, #64", "add x2, x2, #64", "cmp x0, x1", "b.lo 2b",
                    inout("x0") base => _, in("x1") base + half, inout("x2") base + half => _,
                    out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                    options(nostack))
            }
        }
    }
}

/// Measures every kernel over `bytes` of `region` and emits one metric each (bytes/s).
pub fn sweep(env: &Env, region: &Region, bytes: usize, distance: usize) {
    let bytes = bytes.min(region.len) & !127;
    if bytes == 0 {
        return;
    }
    for k in Kernel::ALL {
        let moved = if k == Kernel::CopyLdpStp { bytes as u64 / 2 } else { bytes as u64 };
        let dist = if matches!(k, Kernel::ReadLdpPldl1strm | Kernel::ReadLdpPldl2keep) { distance as u64 } else { 0 };
        let id =
            MetricId { bench: "stream", variant: k.name(), attr: region.attr, bytes: bytes as u64, params: &[("prefetch_distance", dist)] };
        // SAFETY: the region is mapped test memory of at least `bytes` (clipped above), page aligned.
        let summary = measure(env, id, || unsafe { run(k, region.va, bytes, distance) });
        Metric { id, summary, work: moved, unit: Unit::Rate, notes: &|m| m.bytes_per_load(k.bytes_per_load()) }.emit(env);
    }
}
