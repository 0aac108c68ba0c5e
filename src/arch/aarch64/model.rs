//! The cache-model marker instruction: `hint #0x7f` with arguments in x9..x13.
//!
//! HINT #0x7f is an unallocated hint: it executes as a NOP on hardware and on QEMU without the
//! cache-model plugin (Arm ARM C6.2.122: unallocated HINT encodings behave as NOP). The plugin
//! (host/cache-model) recognises the encoding 0xd5032fff, reads x9..x13 and acts on it.

/// Encoding of `hint #0x7f` (0xd503201f | 0x7f << 5), matched by the plugin.
pub const MARKER_ENCODING: u32 = 0xd503_2fff;

/// Issues one marker: x9 = command, x10..x13 = arguments.
#[inline(always)]
pub fn marker(cmd: u64, a: u64, b: u64, c: u64, d: u64) {
    // SAFETY: an unallocated HINT is architecturally a NOP; registers are only read.
    unsafe {
        core::arch::asm!(
            "hint #0x7f",
            in("x9") cmd, in("x10") a, in("x11") b, in("x12") c, in("x13") d,
            options(nostack, nomem, preserves_flags)
        );
    }
}
