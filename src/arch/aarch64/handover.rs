//! What the loader leaves in memory for the kernel, read where it lies: the flattened device
//! tree at an address (x0 or the base of RAM), and the heap placed above the kernel image.

use crate::firmware::fdt::{Fdt, FdtError, FDT_MAGIC, MAX_SIZE};

/// The device tree at `addr`: `None` when nothing there looks like one (no magic, unaligned,
/// 0), else the validated tree or why it was refused. `addr` must be readable RAM for at least
/// the header (the loader's x0 or the base of RAM: both are); the tree must stay unchanged for
/// the run (nothing in this kernel writes there).
pub fn fdt_at(addr: usize) -> Option<Result<Fdt<'static>, FdtError>> {
    if addr == 0 || !addr.is_multiple_of(8) {
        return None;
    }
    // SAFETY: `addr` is readable RAM (see above); the magic is checked before anything else.
    let magic = u32::from_be(unsafe { core::ptr::read_volatile(addr as *const u32) });
    if magic != FDT_MAGIC {
        return None;
    }
    // SAFETY: a header with the FDT magic; totalsize is clamped to MAX_SIZE before the slice is
    // formed, and `Fdt::new` validates every size and offset inside it.
    let total = u32::from_be(unsafe { core::ptr::read_volatile((addr + 4) as *const u32) }) as usize;
    // SAFETY: as above; the loader placed the whole blob there (at most MAX_SIZE bytes are read).
    let blob = unsafe { core::slice::from_raw_parts(addr as *const u8, total.clamp(40, MAX_SIZE)) };
    Some(Fdt::new(blob))
}

#[global_allocator]
static ALLOCATOR: linked_list_allocator::LockedHeap = linked_list_allocator::LockedHeap::empty();

static HEAP: spin::Once<(usize, usize)> = spin::Once::new();

extern "C" {
    static __image_end: u8;
}

/// Gives the allocator the RAM right above the kernel image (`__image_end`) up to `ram_end`,
/// at most `max` bytes; returns (start, size). Only the first call initialises; later calls
/// return the same region.
pub fn init_heap(ram_end: usize, max: usize) -> (usize, usize) {
    *HEAP.call_once(|| {
        let start = core::ptr::addr_of!(__image_end) as usize;
        let size = ram_end.saturating_sub(start).min(max);
        // SAFETY: [start, start + size) is RAM above the image (`__image_end` is the end of BSS
        // and the boot stack) and below the end of RAM, used by nothing else; `Once` makes this
        // the only initialisation.
        unsafe { ALLOCATOR.lock().init(start as *mut u8, size) };
        (start, size)
    })
}
