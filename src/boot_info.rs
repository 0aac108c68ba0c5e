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
    /// Kernel command line (empty when [`cmdline_error`](Self::cmdline_error) is set).
    pub cmdline: String,
    /// Why the command line the loader handed over is unusable (the run refuses to start).
    pub cmdline_error: Option<crate::firmware::cmdline::CmdlineError>,
    /// MIDR_EL1.
    pub midr: u64,
    /// CNTFRQ_EL0 in Hz.
    pub cntfrq: u64,
    /// Running under an emulator (QEMU): timings measure the emulator, not caches.
    pub emulated: bool,
    /// The cache model's profile when the runner loaded it (its argv0 `cachescope+model=PROFILE`,
    /// `firmware::cmdline::checked`; a user's `model=` word is refused): the run's cache
    /// behaviour is observed through the model.
    pub model: Option<String>,
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
    use crate::arch::handover;
    use crate::{arch::cpu, bsp, console};

    /// Heap size cap; RAM beyond it is the test arena.
    const HEAP_MAX: usize = 16 << 20;

    /// Brings up console and heap and gathers the boot facts. First of all, a fatal exception
    /// on the boot core is made to end the run through the board's exit.
    pub fn init(x0: usize, entry_el: u64) -> BootInfo {
        crate::arch::exception::set_fatal_exit(bsp::exit);
        let mut info = BootInfo {
            entry_el: entry_el as u8,
            current_el: cpu::current_el(),
            board: bsp::NAME,
            ram: bsp::RAM_FALLBACK,
            uart: bsp::CONSOLE_BASE,
            midr: cpu::midr(),
            cntfrq: cpu::timer_frequency(),
            ..BootInfo::default()
        };
        let mut rejected = None;
        let fdt = bsp::dtb_candidates(x0).into_iter().find_map(|a| match handover::fdt_at(a)? {
            Ok(f) => Some((a, f)),
            Err(e) => {
                rejected.get_or_insert((a, e));
                None
            }
        });
        let mut bootargs = None;
        // Before the console and the heap: the board only records what it learns.
        bsp::probe(x0, fdt.as_ref().map(|(_, f)| f));
        if let Some((addr, fdt)) = &fdt {
            info.dtb = Some(*addr);
            // A zero size is a template the loader did not fill (the Pi DTBs ship `reg = <0 0 0>`):
            // `memory()` skips it.
            if let Some(ram) = fdt.memory() {
                info.ram = ram;
                info.ram_from_dtb = true;
            }
            // The console is /chosen/stdout-path; otherwise the first enabled PL011 (QEMU's
            // secure=on DTB also lists a secure-only PL011 with status "disabled").
            let console_node = fdt
                .find("/chosen")
                .and_then(|c| c.prop_str("stdout-path"))
                .and_then(|spec| fdt.resolve(spec))
                .filter(|n| n.is_compatible("arm,pl011"))
                .or_else(|| fdt.nodes().find(|n| n.is_compatible("arm,pl011") && n.is_enabled()));
            if let Some(uart) = console_node.and_then(|n| n.reg().next()).and_then(|(base, _)| bsp::uart_from_dtb(base as usize)) {
                info.uart = uart;
                info.uart_from_dtb = true;
            }
            bootargs = fdt.bootargs();
        }
        console::install(bsp::console(info.uart));
        if let Some((addr, e)) = rejected.filter(|_| fdt.is_none()) {
            crate::diag!("device tree at {addr:#x} ignored: {e}; using the board's defaults");
        }

        let ram_end = (info.ram.0 + info.ram.1) as usize;
        let (heap_start, heap_size) = handover::init_heap(ram_end, HEAP_MAX);
        info.heap = (heap_start, heap_size);
        info.arena = (heap_start + heap_size, ram_end.saturating_sub(heap_start + heap_size));
        match bsp::command_line(bootargs) {
            Ok(line) => (info.cmdline, info.model) = (line.words, line.model),
            Err(e) => info.cmdline_error = Some(e),
        }
        info.emulated = bsp::emulated();
        info
    }
}
