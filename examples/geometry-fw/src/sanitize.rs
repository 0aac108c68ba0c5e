//! A firmware that is not cachescope makes one cache-maintenance mistake and the cache model's
//! sanitizer catches it, through nothing but the marker protocol (cachescope-arch `marker`,
//! docs/markers.md). With the MMU off it tells the model its caches are on, reads a buffer (the
//! line is now cached), hands the buffer to a "device" by announcing it as a non-cacheable
//! window, writes it there (memory changes behind the cached copy), takes it back (the window
//! removed) and reads it again without invalidating: a stale read by the CPU.
//!
//! It prints the `expect-hazard` record the host checks the model's records against
//! (`scripts/xtask hazards`; scripts/example-fw runs it).

#![no_std]
#![no_main]

mod virt;

use core::fmt::Write;

use cachescope_arch::attr::Shareability;
use cachescope_arch::hazard::HazardKind;
use cachescope_arch::marker::{emit, Marker, ModelAttr, PROTOCOL_VERSION};
use virt::{exit, Console};

/// One cache line of "DMA buffer".
#[repr(C, align(64))]
struct Line([u64; 8]);

static mut BUFFER: Line = Line([0; 8]);

/// The phase the mistake happens in.
const PHASE: &core::ffi::CStr = c"sanitize-fw/remap-without-invalidate";

#[no_mangle]
extern "C" fn main() -> ! {
    let buf = &raw mut BUFFER as usize;
    let word = buf as *mut u64;
    emit(Marker::Hello { version: PROTOCOL_VERSION });
    // SCTLR_EL1 as the model should see it: M, C and I set (Normal write-back memory).
    emit(Marker::Sctlr(1 | 1 << 2 | 1 << 12));
    emit(Marker::PhaseBegin { name_va: PHASE.as_ptr() as u64, id: 1 });
    // SAFETY: `word` is this firmware's own buffer (identity-mapped RAM, MMU off); volatile so
    // every access happens as written.
    unsafe {
        let _ = word.read_volatile(); // the CPU reads: the line is cached
        emit(Marker::Window {
            va: buf as u64,
            len: 64,
            attr: ModelAttr::NormalNonCacheable,
            pa: Some(buf as u64),
            share: Shareability::Inner,
        });
        word.write_volatile(0xd0d0); // the device writes memory, behind the cached copy
        emit(Marker::Window { va: buf as u64, len: 0, attr: ModelAttr::NormalNonCacheable, pa: None, share: Shareability::Inner });
        let _ = word.read_volatile(); // the mistake: no DC IVAC before reading the device's data
    }
    emit(Marker::PhaseEnd { id: 1 });
    let _ = writeln!(
        Console,
        "# cs: {{\"record\":\"expect-hazard\",\"phase\":\"{}\",\"kind\":\"{}\",\"pa\":\"{buf:#x}\",\"lines\":1,\"stride\":64}}",
        PHASE.to_str().unwrap_or(""),
        HazardKind::StaleReadByCpu.name()
    );
    let _ = writeln!(Console, "sanitize-fw: read the buffer back without invalidating it (a stale read, on silicon)");
    exit(0)
}
