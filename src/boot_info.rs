//! Facts gathered at boot (entry EL, DTB, RAM, UART, command line) and the `boot` record.

use alloc::string::String;

/// What the kernel learned while booting.
#[derive(Clone, Debug, Default)]
pub struct BootInfo {
    /// Exception level at entry (1, 2 or 3).
    pub entry_el: u8,
    /// Exception level the suite runs at (always 1).
    pub current_el: u8,
    /// Board name (`qemu-virt`, `rpi4`, `rpi5`).
    pub board: &'static str,
    /// Address of a valid flattened device tree, if one was found.
    pub dtb: Option<usize>,
    /// RAM base and size.
    pub ram: (u64, u64),
    /// True when `ram` came from the DTB.
    pub ram_from_dtb: bool,
    /// Console UART base.
    pub uart: usize,
    /// True when `uart` came from the DTB.
    pub uart_from_dtb: bool,
    /// Kernel command line.
    pub cmdline: String,
    /// MIDR_EL1.
    pub midr: u64,
    /// CNTFRQ_EL0 in Hz.
    pub cntfrq: u64,
    /// Running under an emulator (QEMU): timings measure the emulator, not caches.
    pub emulated: bool,
    /// Heap: start and size in bytes.
    pub heap: (usize, usize),
    /// Free RAM after the heap (start, size) for test arenas.
    pub arena: (usize, usize),
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use super::BootInfo;
    use crate::harness::Record;
    use crate::{arch::cpu, bsp, console, cpuid::Midr};

    const FDT_MAGIC: u32 = 0xd00d_feed;
    /// Heap size cap; RAM beyond it is the test arena.
    const HEAP_MAX: usize = 16 << 20;

    #[global_allocator]
    static ALLOCATOR: linked_list_allocator::LockedHeap = linked_list_allocator::LockedHeap::empty();

    extern "C" {
        static __image_end: u8;
    }

    fn valid_fdt(addr: usize) -> Option<fdt::Fdt<'static>> {
        if addr == 0 || !addr.is_multiple_of(8) {
            return None;
        }
        // SAFETY: candidates are the loader's x0 or the base of RAM: readable memory. The magic
        // is checked before the header's size is trusted.
        let magic = u32::from_be(unsafe { core::ptr::read_volatile(addr as *const u32) });
        if magic != FDT_MAGIC {
            return None;
        }
        // SAFETY: a header with the FDT magic; the fdt crate validates sizes and offsets.
        unsafe { fdt::Fdt::from_ptr(addr as *const u8) }.ok()
    }

    /// The node `/chosen/stdout-path` names ("serial0:115200n8" or "/path@addr"), resolving an
    /// alias by hand: fdt 0.1.5's `Chosen::stdout` passes "serial0:115200n8" to `find_node`,
    /// which panics on a path without a leading '/' (seen with the Raspberry Pi 4 device tree).
    fn stdout_node<'b, 'a>(fdt: &'b fdt::Fdt<'a>) -> Option<fdt::node::FdtNode<'b, 'a>> {
        let spec = fdt.find_node("/chosen")?.property("stdout-path")?.as_str()?;
        let name = spec.split(':').next()?;
        let path = if name.starts_with('/') { name } else { fdt.aliases()?.resolve(name)? };
        path.starts_with('/').then(|| fdt.find_node(path)).flatten()
    }

    /// Brings up console and heap and gathers the boot facts.
    pub fn init(x0: usize, entry_el: u64) -> BootInfo {
        let mut info = BootInfo {
            entry_el: entry_el as u8,
            current_el: cpu::current_el(),
            board: bsp::NAME,
            ram: bsp::RAM_FALLBACK,
            uart: bsp::UART_FALLBACK,
            midr: cpu::midr(),
            cntfrq: cpu::timer_frequency(),
            ..BootInfo::default()
        };
        let fdt = bsp::dtb_candidates(x0).into_iter().find_map(|a| valid_fdt(a).map(|f| (a, f)));
        let mut bootargs = None;
        // Before the console and the heap: the board only records what it learns.
        bsp::probe(x0, fdt.as_ref().map(|(_, f)| f));
        if let Some((addr, fdt)) = &fdt {
            info.dtb = Some(*addr);
            if let Some(region) = fdt.memory().regions().next() {
                // A zero size is a template the loader did not fill (the Pi DTBs ship `reg = <0 0 0>`).
                if let Some(size) = region.size.filter(|&s| s > 0) {
                    info.ram = (region.starting_address as u64, size as u64);
                    info.ram_from_dtb = true;
                }
            }
            // The console is /chosen/stdout-path; otherwise the first enabled PL011 (QEMU's
            // secure=on DTB also lists a secure-only PL011 with status "disabled").
            let enabled = |n: &fdt::node::FdtNode| n.property("status").and_then(|p| p.as_str()).is_none_or(|s| s == "okay" || s == "ok");
            let console_node = stdout_node(fdt)
                .filter(|n| n.compatible().is_some_and(|c| c.all().any(|c| c == "arm,pl011")))
                .or_else(|| fdt.all_nodes().find(|n| n.compatible().is_some_and(|c| c.all().any(|c| c == "arm,pl011")) && enabled(n)));
            if let Some(uart) =
                console_node.and_then(|n| n.reg()).and_then(|mut r| r.next()).and_then(|r| bsp::uart_from_dtb(r.starting_address as usize))
            {
                info.uart = uart;
                info.uart_from_dtb = true;
            }
            bootargs = fdt.chosen().bootargs();
        }
        console::install(bsp::console(info.uart));

        // __image_end is a linker symbol marking the end of the image (2 MiB aligned).
        let heap_start = core::ptr::addr_of!(__image_end) as usize;
        let ram_end = (info.ram.0 + info.ram.1) as usize;
        let heap_size = ram_end.saturating_sub(heap_start).min(HEAP_MAX);
        // SAFETY: [heap_start, +heap_size) is RAM above the image and below the end of RAM,
        // used by nothing else; init is called once.
        unsafe { ALLOCATOR.lock().init(heap_start as *mut u8, heap_size) };
        info.heap = (heap_start, heap_size);
        info.arena = (heap_start + heap_size, ram_end.saturating_sub(heap_start + heap_size));
        info.cmdline = bsp::command_line(bootargs);
        info.emulated = bsp::emulated();
        info
    }

    /// Emits the `boot` record: always the first record of a run.
    pub fn emit_boot_record(b: &BootInfo) {
        let midr = Midr { raw: b.midr };
        Record::new("boot")
            .u64("schema", crate::harness::record::SCHEMA as u64)
            .u64("el", b.entry_el as u64)
            .u64("current_el", b.current_el as u64)
            .str("board", b.board)
            .hex("midr", b.midr)
            .str("cpu", midr.core_name().unwrap_or("unknown"))
            .u64("cntfrq", b.cntfrq)
            .bool("dtb", b.dtb.is_some())
            .hex("ram_base", b.ram.0)
            .u64("ram_size", b.ram.1)
            .hex("uart", b.uart as u64)
            .bool("emulated", b.emulated)
            .emit();
    }
}
