//! Guest physical memory for the table walk, through the host's mapping of guest RAM.
//!
//! Plugin API v4 reads guest memory only by VA, through the vCPU's *current* translation
//! (`qemu_plugin_read_memory_vaddr`), and translation tables live at PAs. The options were:
//! - reading a table PA as a VA: right only where the current regime maps it identically (the
//!   cachescope kernel, U-Boot) or the MMU is off; Linux's tables are not identity-mapped;
//! - a reverse map PA page → a VA learned from a data access: only pages the guest touched
//!   through a VA the current regime still maps, and a walk's first table is rarely one;
//! - **the host address of guest RAM** (chosen): `qemu_plugin_insn_haddr` gives the host address
//!   of a fetched instruction. When the PA of that fetch is known for certain (the MMU of the
//!   TB's regime is off: PA = VA by the architecture; the glue reads SCTLR at translation),
//!   host − PA is the offset of the RAM block holding it, and the host mapping around that
//!   address (`/proc/self/maps`) bounds the block. Any PA inside a learned block is then read
//!   straight from that host address (an aligned descriptor: one load, no syscall), or with
//!   `pread` on `/proc/self/mem` (unaligned), which fails with an error for an unmapped host
//!   address instead of crashing QEMU. (A pread per descriptor was 12 % of a Linux boot's
//!   samples under the model.) It works for any firmware that executes from RAM with its MMU
//!   off once (every firmware does at reset or before it enables its MMU), whatever its
//!   later mappings; a table outside every learned block gives `table-unreadable-levelN`.
//!
//! QEMU allocates each RAM block as one host mapping, so one learned fetch covers the block.
//! Adjacent anonymous mappings with the same protection may be merged by the host kernel, so a
//! block's bound can be too large, never too small: a descriptor read beyond the guest's RAM
//! reads other host memory only if the guest's own tables point outside its RAM.

/// A learned block: the guest PAs `[pa, pa_end)` are at host address `pa + host_minus_pa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// First PA.
    pub pa: u64,
    /// End PA (exclusive).
    pub pa_end: u64,
    /// Host address − PA.
    pub host_minus_pa: u64,
}

/// The learned blocks (few: RAM, flash).
#[derive(Clone, Debug, Default)]
pub struct RamMap {
    blocks: Vec<Block>,
}

/// The host mapping `[start, end)` of `/proc/self/maps` text that contains `addr`.
pub fn mapping_containing(maps: &str, addr: u64) -> Option<(u64, u64)> {
    maps.lines().find_map(|l| {
        let range = l.split_whitespace().next()?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?);
        (a <= addr && addr < b).then_some((a, b))
    })
}

impl RamMap {
    /// Whether `pa` lies in a learned block.
    pub fn knows(&self, pa: u64) -> bool {
        self.blocks.iter().any(|b| (b.pa..b.pa_end).contains(&pa))
    }

    /// Learns the block holding `pa`, fetched at host address `host`, from the host mapping
    /// `[map_start, map_end)` that contains `host`; returns the block when it is new.
    pub fn learn(&mut self, pa: u64, host: u64, (map_start, map_end): (u64, u64)) -> Option<Block> {
        if self.knows(pa) || !(map_start..map_end).contains(&host) {
            return None;
        }
        let b = Block { pa: pa - (host - map_start), pa_end: pa + (map_end - host), host_minus_pa: host.wrapping_sub(pa) };
        self.blocks.push(b);
        Some(b)
    }

    /// The PA at host address `host`, when it lies in a learned block (a fetched instruction's
    /// PA from `qemu_plugin_insn_haddr`, whatever VA the TB was translated at).
    pub fn pa_of_host(&self, host: u64) -> Option<u64> {
        self.blocks
            .iter()
            .map(|b| host.wrapping_sub(b.host_minus_pa))
            .find(|pa| self.blocks.iter().any(|b| (b.pa..b.pa_end).contains(pa) && pa.wrapping_add(b.host_minus_pa) == host))
    }

    /// The host address of `len` bytes at `pa`, when they lie in one learned block.
    pub fn host(&self, pa: u64, len: u64) -> Option<u64> {
        let b = self.blocks.iter().find(|b| pa >= b.pa && pa.checked_add(len).is_some_and(|e| e <= b.pa_end))?;
        Some(pa.wrapping_add(b.host_minus_pa))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0000000-55d0c0100000 r-xp 00000000 08:01 123 /usr/bin/qemu-system-aarch64
7f0000000000-7f0008000000 rw-p 00000000 00:00 0
7f0010000000-7f0014000000 rw-p 00000000 00:00 0 
";

    #[test]
    fn a_fetch_bounds_its_block() {
        assert_eq!(mapping_containing(MAPS, 0x7f00_0008_0000), Some((0x7f00_0000_0000, 0x7f00_0800_0000)));
        assert_eq!(mapping_containing(MAPS, 0x7f00_0900_0000), None);
        let mut m = RamMap::default();
        // RAM at PA 0x4000_0000 (128 MiB) mapped at 0x7f00_0000_0000; a fetch at PA 0x4008_0000.
        let b = m.learn(0x4008_0000, 0x7f00_0008_0000, (0x7f00_0000_0000, 0x7f00_0800_0000)).unwrap();
        assert_eq!((b.pa, b.pa_end), (0x4000_0000, 0x4800_0000));
        assert_eq!(m.learn(0x4010_0000, 0x7f00_0010_0000, (0x7f00_0000_0000, 0x7f00_0800_0000)), None, "known");
        assert_eq!(m.host(0x4000_0000, 8), Some(0x7f00_0000_0000));
        assert_eq!(m.host(0x47ff_fff8, 8), Some(0x7f00_07ff_fff8));
        assert_eq!(m.host(0x47ff_fffc, 8), None, "crosses the end");
        assert_eq!(m.host(0x3fff_fff8, 8), None);
        // Flash at PA 0 mapped elsewhere: a second block.
        assert!(m.learn(0x100, 0x7f00_1000_0100, (0x7f00_1000_0000, 0x7f00_1400_0000)).is_some());
        assert_eq!(m.host(0x200, 8), Some(0x7f00_1000_0200));
        assert!(m.knows(0x400_0000 - 1) && !m.knows(0x400_0000));
        assert_eq!(m.learn(0x5000_0000, 0x10, (0x100, 0x200)), None, "host outside the mapping");
        assert_eq!(m.pa_of_host(0x7f00_0008_0040), Some(0x4008_0040), "RAM");
        assert_eq!(m.pa_of_host(0x7f00_1000_0200), Some(0x200), "flash");
        assert_eq!(m.pa_of_host(0x7f00_0800_0000), None, "past RAM's end");
        assert_eq!(m.pa_of_host(0x55d0_c000_0000), None, "not guest memory");
    }
}
