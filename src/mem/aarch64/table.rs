//! Translation tables for the EL1&0 regime through TTBR0_EL1: 4 KiB granule, 48-bit input
//! addresses, walks starting at level 0 (level sizes 512 GiB, 1 GiB, 2 MiB, 4 KiB).
//!
//! Pure: tables are heap pages whose address is their physical address (the kernel's RAM is
//! identity mapped), and nothing here touches a system register. The hardware side (TLBI,
//! barriers, TTBR0) is `mem::mmu` with `cpu::mmu`; a change to a live table returns the
//! virtual addresses whose TLB entries must be invalidated.
//!
//! Every request is checked before the first descriptor is written: alignment, address ranges,
//! attributes ([`Attributes::validate`]) and overlap with existing mappings, which is refused:
//! changing a live mapping goes through [`Tables::break_range`] / [`Tables::make_range`]
//! (break-before-make), never through a second `map`.

use alloc::{boxed::Box, vec::Vec};

use super::descriptor::{self, Entry};
use crate::mem::{attr::Attributes, Error};

/// The translation granule and smallest mapping.
pub const PAGE_SIZE: u64 = 4096;
/// Input address bits (TCR_EL1.T0SZ = 64 - VA_BITS).
pub const VA_BITS: u32 = 48;
/// First lookup level of a 48-bit, 4 KiB-granule walk.
pub const START_LEVEL: u8 = 0;
/// Default limit on the number of tables (2 MiB of heap).
pub const MAX_TABLES: usize = 512;
const ENTRIES: usize = 512;

const _: () = assert!(VA_BITS == 12 + 9 * (4 - START_LEVEL as u32), "48-bit VA with 4 KiB pages starts at level 0");
const _: () = assert!(core::mem::size_of::<Table>() == PAGE_SIZE as usize);

/// Bit position of the lowest address bit a level-`level` entry resolves.
pub const fn level_shift(level: u8) -> u32 {
    12 + 9 * (3 - level as u32)
}

/// Bytes mapped by one entry at `level` (level 0: 512 GiB … level 3: 4 KiB).
pub const fn level_size(level: u8) -> u64 {
    1 << level_shift(level)
}

/// Refuses the first value that is not a multiple of the page size (`what` names it).
pub fn page_aligned(values: &[(&'static str, u64)]) -> Result<(), Error> {
    match values.iter().find(|(_, v)| v % PAGE_SIZE != 0) {
        Some(&(what, value)) => Err(Error::Unaligned { what, value }),
        None => Ok(()),
    }
}

/// One table: 512 descriptors in a 4 KiB-aligned page.
#[repr(C, align(4096))]
struct Table([u64; ENTRIES]);

/// How large the leaf entries of a new mapping may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// 1 GiB and 2 MiB blocks wherever virtual and physical addresses are aligned to them.
    Largest,
    /// 4 KiB pages only (so that any page can later be changed on its own).
    Pages,
}

/// One mapping made by [`Tables::map`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Name used in reports and errors.
    pub name: &'static str,
    /// Virtual start.
    pub va: u64,
    /// Physical start.
    pub pa: u64,
    /// Length in bytes.
    pub len: u64,
    /// Attributes it was mapped with (break-before-make may since have changed parts of it).
    pub attrs: Attributes,
}

impl Mapping {
    /// True when `va` lies inside this mapping.
    pub fn contains(&self, va: u64) -> bool {
        va >= self.va && va - self.va < self.len
    }
}

/// The outcome of a software walk, as the hardware would see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Translates: the leaf's level, the output address and the attributes.
    Mapped {
        /// Lookup level of the leaf (1 or 2 = block, 3 = page).
        level: u8,
        /// Output (physical) address of the input address.
        pa: u64,
        /// Attributes of the leaf.
        attrs: Attributes,
    },
    /// A translation fault at this lookup level.
    Fault {
        /// Lookup level at which the walk met an invalid descriptor.
        level: u8,
    },
}

/// Where a walk for one address stopped: a table, an index in it and the descriptor there.
#[derive(Clone, Copy, Debug)]
struct Slot {
    table: usize,
    index: usize,
    level: u8,
    raw: u64,
}

/// A set of translation tables and the mappings made in them.
pub struct Tables {
    tables: Vec<Box<Table>>,
    mappings: Vec<Mapping>,
    pa_limit: u64,
    max_tables: usize,
    mair: descriptor::Mair,
}

impl Tables {
    /// Empty tables (only the root) for output addresses below `pa_limit`.
    pub fn new(pa_limit: u64) -> Self {
        Self::with_limit(pa_limit, MAX_TABLES)
    }

    /// Like [`new`](Self::new) with at most `max_tables` tables.
    pub fn with_limit(pa_limit: u64, max_tables: usize) -> Self {
        let pa_limit = pa_limit.min(1 << 48);
        Self {
            tables: alloc::vec![Box::new(Table([0; ENTRIES]))],
            mappings: Vec::new(),
            pa_limit,
            max_tables: max_tables.max(1),
            mair: descriptor::Mair::DEFAULT,
        }
    }

    /// MAIR_EL1's contents the walk decodes AttrIndx with ([`descriptor::Mair::DEFAULT`] until
    /// [`set_mair`](Self::set_mair)).
    pub fn mair(&self) -> descriptor::Mair {
        self.mair
    }

    /// The hint slot now holds `mair.hint()`: the walk reads every hint-slot leaf as that type,
    /// and the mappings made with a hint type say so (the caller reprograms MAIR_EL1 and the
    /// TLBs, `mem::mmu::select_hint`).
    pub fn set_mair(&mut self, mair: descriptor::Mair) {
        self.mair = mair;
        for m in self.mappings.iter_mut().filter(|m| m.attrs.mem.is_hint()) {
            m.attrs.mem = mair.hint();
        }
    }

    /// Physical address of the root (level 0) table: the TTBR0_EL1 base address.
    pub fn root(&self) -> u64 {
        self.address(0)
    }

    /// The mappings made so far, in order.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The mapping containing `va`, if any.
    pub fn mapping_at(&self, va: u64) -> Option<&Mapping> {
        self.mappings.iter().find(|m| m.contains(va))
    }

    /// Number of tables in use (root included).
    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    /// Every table's physical address and size, for cache maintenance of the tables themselves.
    pub fn table_pages(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.tables.len()).map(|i| self.address(i))
    }

    fn address(&self, i: usize) -> u64 {
        &*self.tables[i] as *const Table as u64
    }

    fn index_of(&self, addr: u64) -> Option<usize> {
        (0..self.tables.len()).find(|&i| self.address(i) == addr)
    }

    /// Checks a request against the address spaces and the existing mappings.
    fn check(&self, va: u64, pa: u64, len: u64, attrs: Attributes) -> Result<(), Error> {
        if len == 0 {
            return Err(Error::Empty { va });
        }
        page_aligned(&[("virtual address", va), ("physical address", pa), ("length", len)])?;
        let va_limit = 1u64 << VA_BITS;
        if va.checked_add(len).is_none_or(|end| end > va_limit) {
            return Err(Error::VaOutOfRange { va, len, limit: va_limit });
        }
        if pa.checked_add(len).is_none_or(|end| end > self.pa_limit) {
            return Err(Error::PaOutOfRange { pa, len, limit: self.pa_limit });
        }
        attrs.validate()?;
        if let Some(m) = self.mappings.iter().find(|m| va < m.va + m.len && m.va < va + len) {
            return Err(Error::Overlap { va, len, existing: m.name });
        }
        Ok(())
    }

    /// Maps `[va, va+len)` to `[pa, pa+len)` with `attrs`. Refuses (and writes nothing on)
    /// an empty, unaligned, out-of-range, overlapping, writable+executable or executable
    /// Device request. Mapping addresses that were unmapped is allowed on live tables without
    /// TLB maintenance (invalid entries are never cached in TLBs).
    pub fn map(&mut self, name: &'static str, va: u64, pa: u64, len: u64, attrs: Attributes, gran: Granularity) -> Result<(), Error> {
        self.check(va, pa, len, attrs)?;
        if let Err(e) = self.map_level(0, START_LEVEL, va, pa, len, attrs, gran) {
            // Only possible failure after the checks: the table limit. Nothing else maps
            // inside the range, so every leaf in it is ours to clear.
            self.clear_leaves(va, len);
            return Err(e);
        }
        self.mappings.push(Mapping { name, va, pa, len, attrs });
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn map_level(&mut self, t: usize, level: u8, va: u64, pa: u64, len: u64, attrs: Attributes, gran: Granularity) -> Result<(), Error> {
        let size = level_size(level);
        let mut off = 0;
        while off < len {
            let (v, p) = (va + off, pa + off);
            let index = ((v >> level_shift(level)) as usize) % ENTRIES;
            let chunk = (len - off).min(size - (v & (size - 1)));
            let raw = self.tables[t].0[index];
            let whole = v % size == 0 && p % size == 0 && chunk == size;
            let leaf_here = level == 3 || (whole && level >= 1 && gran == Granularity::Largest);
            match descriptor::classify(raw, level) {
                Entry::Table(next) if level < 3 => {
                    let next = self.index_of(next).ok_or(Error::NotMapped { va: v })?;
                    self.map_level(next, level + 1, v, p, chunk, attrs, gran)?;
                }
                Entry::Invalid if raw == 0 && leaf_here => self.tables[t].0[index] = descriptor::leaf(p, level, attrs),
                Entry::Invalid if raw == 0 => {
                    if self.tables.len() >= self.max_tables {
                        return Err(Error::TooManyTables { limit: self.max_tables });
                    }
                    self.tables.push(Box::new(Table([0; ENTRIES])));
                    let next = self.tables.len() - 1;
                    self.tables[t].0[index] = descriptor::table(self.address(next));
                    self.map_level(next, level + 1, v, p, chunk, attrs, gran)?;
                }
                // A leaf (valid or broken) is there: the overlap check makes this unreachable.
                _ => return Err(Error::Overlap { va: v, len: chunk, existing: "an existing entry" }),
            }
            off += chunk;
        }
        Ok(())
    }

    fn slot(&self, va: u64) -> Slot {
        let mut t = 0;
        let mut level = START_LEVEL;
        loop {
            let index = ((va >> level_shift(level)) as usize) % ENTRIES;
            let raw = self.tables[t].0[index];
            match descriptor::classify(raw, level) {
                Entry::Table(next) if level < 3 => match self.index_of(next) {
                    Some(n) => {
                        t = n;
                        level += 1;
                    }
                    None => return Slot { table: t, index, level, raw },
                },
                _ => return Slot { table: t, index, level, raw },
            }
        }
    }

    /// Walks the tables for `va` as the hardware does.
    pub fn walk(&self, va: u64) -> Walk {
        if va >> VA_BITS != 0 {
            // Outside TTBR0's range (and TTBR1 walks are disabled): a level-0 translation fault.
            return Walk::Fault { level: START_LEVEL };
        }
        let s = self.slot(va);
        match descriptor::classify(s.raw, s.level) {
            Entry::Leaf(out) => match descriptor::leaf_attributes(s.raw, self.mair) {
                Ok(attrs) => Walk::Mapped { level: s.level, pa: out + (va & (level_size(s.level) - 1)), attrs },
                Err(_) => Walk::Fault { level: s.level },
            },
            _ => Walk::Fault { level: s.level },
        }
    }

    /// Leaf slots covering exactly `[va, va+len)`: each must hold a leaf (valid or broken)
    /// that lies wholly inside the range.
    fn leaves(&self, va: u64, len: u64) -> Result<Vec<(u64, Slot)>, Error> {
        if len == 0 {
            return Err(Error::Empty { va });
        }
        page_aligned(&[("virtual address", va), ("length", len)])?;
        let end = va.checked_add(len).filter(|&e| e <= 1 << VA_BITS).ok_or(Error::VaOutOfRange { va, len, limit: 1 << VA_BITS })?;
        let mut out = Vec::new();
        let mut v = va;
        while v < end {
            let s = self.slot(v);
            let is_leaf = s.raw != 0 && matches!(descriptor::classify(s.raw | 1, s.level), Entry::Leaf(_));
            if !is_leaf {
                return Err(Error::NotMapped { va: v });
            }
            let size = level_size(s.level);
            let base = v & !(size - 1);
            if base < va || base + size > end {
                return Err(Error::SplitsBlock { va: base, level: s.level });
            }
            out.push((base, s));
            v = base + size;
        }
        Ok(out)
    }

    /// Break: makes every leaf of `[va, va+len)` invalid, keeping its output address and
    /// attributes for [`make_range`](Self::make_range). Returns the leaves' virtual addresses,
    /// which the caller must invalidate in the TLBs (after a DSB) before making new entries.
    pub fn break_range(&mut self, va: u64, len: u64) -> Result<Vec<u64>, Error> {
        let leaves = self.leaves(va, len)?;
        if let Some((v, _)) = leaves.iter().find(|(_, s)| s.raw & 1 == 0) {
            return Err(Error::AlreadyBroken { va: *v });
        }
        for (_, s) in &leaves {
            self.tables[s.table].0[s.index] = descriptor::broken(s.raw);
        }
        Ok(leaves.into_iter().map(|(v, _)| v).collect())
    }

    /// Make: gives every broken leaf of `[va, va+len)` new attributes, same output address.
    /// Refuses a leaf that is still valid ([`Error::LiveEntry`]): that would change a live
    /// mapping without break-before-make. Returns the output address of `va` when the range is
    /// physically contiguous (one VA→PA offset throughout), else `None`.
    pub fn make_range(&mut self, va: u64, len: u64, attrs: Attributes) -> Result<Option<u64>, Error> {
        attrs.validate()?;
        let leaves = self.leaves(va, len)?;
        if let Some((v, _)) = leaves.iter().find(|(_, s)| s.raw & 1 != 0) {
            return Err(Error::LiveEntry { va: *v });
        }
        let mut offset = None;
        let mut contiguous = true;
        for (base, s) in &leaves {
            if let Entry::Leaf(out) = descriptor::classify(s.raw | 1, s.level) {
                self.tables[s.table].0[s.index] = descriptor::leaf(out, s.level, attrs);
                let this = out.wrapping_sub(*base);
                contiguous &= *offset.get_or_insert(this) == this;
            }
        }
        Ok(offset.filter(|_| contiguous).map(|o| va.wrapping_add(o)))
    }

    /// Removes the mapping that is exactly `[va, va+len)`: every leaf becomes zero. Returns the
    /// leaves' virtual addresses for TLB invalidation.
    pub fn unmap(&mut self, va: u64, len: u64) -> Result<Vec<u64>, Error> {
        let pos = self.mappings.iter().position(|m| m.va == va && m.len == len).ok_or(Error::NoSuchMapping { va, len })?;
        let leaves = self.leaves(va, len)?;
        for (_, s) in &leaves {
            self.tables[s.table].0[s.index] = 0;
        }
        self.mappings.remove(pos);
        Ok(leaves.into_iter().map(|(v, _)| v).collect())
    }

    /// Zeroes every leaf inside `[va, va+len)` (used to undo a partly made mapping).
    fn clear_leaves(&mut self, va: u64, len: u64) {
        let end = va + len;
        let mut v = va;
        while v < end {
            let s = self.slot(v);
            let size = level_size(s.level);
            if s.raw != 0 && matches!(descriptor::classify(s.raw | 1, s.level), Entry::Leaf(_)) {
                self.tables[s.table].0[s.index] = 0;
            }
            v = (v & !(size - 1)) + size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::attr::{Access, MemAttr, Shareability};

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn tables() -> Tables {
        Tables::new(1 << 44)
    }

    #[test]
    fn largest_granularity_uses_blocks() {
        let mut t = tables();
        t.map("a", GIB, GIB, GIB, Attributes::RW_DATA, Granularity::Largest).unwrap();
        t.map("b", 4 * GIB + 2 * MIB, 2 * MIB, 4 * MIB + 8192, Attributes::RW_DATA, Granularity::Largest).unwrap();
        assert_eq!(t.walk(GIB + 123), Walk::Mapped { level: 1, pa: GIB + 123, attrs: Attributes::RW_DATA });
        assert_eq!(t.walk(4 * GIB + 2 * MIB + 5), Walk::Mapped { level: 2, pa: 2 * MIB + 5, attrs: Attributes::RW_DATA });
        assert_eq!(t.walk(4 * GIB + 6 * MIB + 4096), Walk::Mapped { level: 3, pa: 6 * MIB + 4096, attrs: Attributes::RW_DATA });
        // root + L1 + (L2 for 4 GiB..5 GiB) + L3 for the tail.
        assert_eq!(t.table_count(), 4);
    }

    #[test]
    fn pages_granularity_and_misaligned_pa_use_pages() {
        let mut t = tables();
        t.map("p", 2 * MIB, 2 * MIB, 2 * MIB, Attributes::RW_DATA, Granularity::Pages).unwrap();
        assert!(matches!(t.walk(2 * MIB + 4096), Walk::Mapped { level: 3, .. }));
        // VA 2 MiB-aligned but PA only 4 KiB-aligned: no block possible.
        t.map("q", GIB, 4096, 2 * MIB, Attributes::RW_DATA, Granularity::Largest).unwrap();
        assert_eq!(t.walk(GIB + 2 * MIB - 1), Walk::Mapped { level: 3, pa: 2 * MIB + 4095, attrs: Attributes::RW_DATA });
    }

    #[test]
    fn fault_levels() {
        let mut t = tables();
        t.map("blocks", 0x1000_0000_0000 + GIB, GIB, 4 * MIB, Attributes::RW_DATA, Granularity::Largest).unwrap();
        t.map("pages", 0x1000_0000_0000 + GIB + 8 * MIB, GIB, 8192, Attributes::RW_DATA, Granularity::Pages).unwrap();
        assert_eq!(t.walk(0x7000_0000_0000), Walk::Fault { level: 0 });
        assert_eq!(t.walk(0x1000_0000_0000), Walk::Fault { level: 1 });
        assert_eq!(t.walk(0x1000_0000_0000 + GIB + 4 * MIB), Walk::Fault { level: 2 });
        assert_eq!(t.walk(0x1000_0000_0000 + GIB + 8 * MIB + 8192), Walk::Fault { level: 3 });
        assert_eq!(t.walk(1 << 48), Walk::Fault { level: 0 });
    }

    #[test]
    fn bad_requests_are_refused_without_writing() {
        let mut t = tables();
        t.map("a", 2 * MIB, 2 * MIB, 2 * MIB, Attributes::RW_DATA, Granularity::Largest).unwrap();
        let n = t.table_count();
        let rw = Attributes::RW_DATA;
        assert_eq!(t.map("x", 0x1001, 0, 4096, rw, Granularity::Largest), Err(Error::Unaligned { what: "virtual address", value: 0x1001 }));
        assert_eq!(
            t.map("x", 0x1000, 0x10, 4096, rw, Granularity::Largest),
            Err(Error::Unaligned { what: "physical address", value: 0x10 })
        );
        assert_eq!(t.map("x", 0x1000, 0, 100, rw, Granularity::Largest), Err(Error::Unaligned { what: "length", value: 100 }));
        assert_eq!(t.map("x", 0x1000, 0, 0, rw, Granularity::Largest), Err(Error::Empty { va: 0x1000 }));
        // Overlap: the same range, a range straddling its start, and a range containing it.
        for (va, len) in [(2 * MIB, 2 * MIB), (MIB, 2 * MIB), (0, 8 * MIB), (3 * MIB, 4096)] {
            assert_eq!(
                t.map("x", va, va, len, rw, Granularity::Largest),
                Err(Error::Overlap { va, len, existing: "a" }),
                "{va:#x}+{len:#x}"
            );
        }
        let wx = Attributes { executable: true, ..rw };
        assert_eq!(t.map("x", GIB, GIB, 4096, wx, Granularity::Largest), Err(Error::WriteExecute));
        let xdev = Attributes { executable: true, access: Access::ReadOnly, ..Attributes::MMIO };
        assert_eq!(t.map("x", GIB, GIB, 4096, xdev, Granularity::Largest), Err(Error::ExecutableDevice));
        assert!(matches!(t.map("x", (1 << 48) - 4096, 0, 8192, rw, Granularity::Largest), Err(Error::VaOutOfRange { .. })));
        assert!(matches!(t.map("x", u64::MAX - 4095, 0, 8192, rw, Granularity::Largest), Err(Error::VaOutOfRange { .. })));
        assert!(matches!(t.map("x", GIB, (1 << 44) - 4096, 8192, rw, Granularity::Largest), Err(Error::PaOutOfRange { .. })));
        assert_eq!(t.table_count(), n, "a refused request allocates no table");
        assert_eq!(t.mappings().len(), 1);
        assert_eq!(t.walk(GIB), Walk::Fault { level: 1 });
    }

    #[test]
    fn table_limit_rolls_back() {
        let mut t = Tables::with_limit(1 << 44, 3);
        // Needs root + L1 + L2 + L3: one too many.
        let r = t.map("x", GIB, 0, 8192, Attributes::RW_DATA, Granularity::Pages);
        assert_eq!(r, Err(Error::TooManyTables { limit: 3 }));
        assert!(t.mappings().is_empty());
        // The failure left no leaf behind; its empty level-2 table is reused for 2 MiB blocks.
        assert_eq!(t.walk(GIB), Walk::Fault { level: 2 });
        t.map("y", GIB, GIB, GIB, Attributes::RW_DATA, Granularity::Largest).unwrap();
        assert_eq!(t.walk(GIB + 5), Walk::Mapped { level: 2, pa: GIB + 5, attrs: Attributes::RW_DATA });
        assert_eq!(t.table_count(), 3);
    }

    #[test]
    fn break_before_make() {
        let mut t = tables();
        let wb = Attributes::data(MemAttr::NormalWriteBack);
        let nc = Attributes::data(MemAttr::NormalNonCacheable);
        t.map("pages", GIB, 3 * GIB, 16 * 4096, wb, Granularity::Pages).unwrap();
        t.map("block", 2 * GIB, 4 * GIB, 2 * MIB, wb, Granularity::Largest).unwrap();
        // make without break: refused.
        assert_eq!(t.make_range(GIB, 4096, nc), Err(Error::LiveEntry { va: GIB }));
        let vas = t.break_range(GIB + 4096, 2 * 4096).unwrap();
        assert_eq!(vas, [GIB + 4096, GIB + 8192]);
        assert_eq!(t.walk(GIB + 4096), Walk::Fault { level: 3 });
        assert!(matches!(t.walk(GIB), Walk::Mapped { .. }), "neighbours untouched");
        assert_eq!(t.break_range(GIB + 4096, 4096), Err(Error::AlreadyBroken { va: GIB + 4096 }));
        // A make over a partly live range is refused as a whole.
        assert_eq!(t.make_range(GIB, 3 * 4096, nc), Err(Error::LiveEntry { va: GIB }));
        assert_eq!(t.walk(GIB + 4096), Walk::Fault { level: 3 });
        assert_eq!(t.make_range(GIB + 4096, 2 * 4096, nc), Ok(Some(3 * GIB + 4096)), "contiguous: the PA of the start");
        assert_eq!(t.walk(GIB + 8192 + 7), Walk::Mapped { level: 3, pa: 3 * GIB + 8192 + 7, attrs: nc });
        // Part of a block: refused; the whole block: fine.
        assert_eq!(t.break_range(2 * GIB, 4096), Err(Error::SplitsBlock { va: 2 * GIB, level: 2 }));
        assert_eq!(t.break_range(2 * GIB, 2 * MIB).unwrap(), [2 * GIB]);
        assert_eq!(t.walk(2 * GIB), Walk::Fault { level: 2 });
        assert_eq!(t.make_range(2 * GIB, 2 * MIB, Attributes::data(MemAttr::DeviceGRE)), Ok(Some(4 * GIB)));
        assert!(
            matches!(t.walk(2 * GIB + 5), Walk::Mapped { level: 2, pa, attrs } if pa == 4 * GIB + 5 && attrs.mem == MemAttr::DeviceGRE)
        );
        // A range over two mappings that are not physically adjacent: no single PA.
        t.map("apart", GIB + 16 * 4096, 5 * GIB, 4096, wb, Granularity::Pages).unwrap();
        t.break_range(GIB + 15 * 4096, 2 * 4096).unwrap();
        assert_eq!(t.make_range(GIB + 15 * 4096, 2 * 4096, nc), Ok(None));
        assert_eq!(t.walk(GIB + 16 * 4096), Walk::Mapped { level: 3, pa: 5 * GIB, attrs: nc });
        // Unmapped ranges and bad attributes.
        assert_eq!(t.break_range(5 * GIB, 4096), Err(Error::NotMapped { va: 5 * GIB }));
        t.break_range(GIB, 4096).unwrap();
        assert_eq!(t.make_range(GIB, 4096, Attributes { executable: true, ..wb }), Err(Error::WriteExecute));
    }

    #[test]
    fn unmap_exact_only_and_remap() {
        let mut t = tables();
        let a = Attributes { share: Shareability::Outer, ..Attributes::RW_DATA };
        t.map("s", GIB, GIB, 4 * 4096, a, Granularity::Pages).unwrap();
        assert_eq!(t.unmap(GIB, 4096), Err(Error::NoSuchMapping { va: GIB, len: 4096 }));
        assert_eq!(t.unmap(GIB, 4 * 4096).unwrap().len(), 4);
        assert_eq!(t.walk(GIB), Walk::Fault { level: 3 });
        assert!(t.mappings().is_empty());
        t.map("s2", GIB, 2 * GIB, 4 * 4096, a, Granularity::Largest).unwrap();
        assert_eq!(t.walk(GIB + 4096), Walk::Mapped { level: 3, pa: 2 * GIB + 4096, attrs: a });
    }

    #[test]
    fn tables_are_page_aligned_and_root_is_first() {
        let mut t = tables();
        t.map("x", GIB, GIB, 4096, Attributes::RW_DATA, Granularity::Pages).unwrap();
        assert_eq!(t.table_pages().next(), Some(t.root()));
        assert!(t.table_pages().all(|p| p % PAGE_SIZE == 0));
        assert_eq!(t.mapping_at(GIB + 5).map(|m| m.name), Some("x"));
    }

    #[test]
    fn the_hint_slot_reads_as_mair_says() {
        use super::descriptor::Mair;
        let mut t = tables();
        let nwa = Attributes::data(MemAttr::NormalWriteBackNoWriteAllocate);
        t.map("hint", GIB, GIB, 2 * MIB, nwa, Granularity::Largest).unwrap();
        t.map("wb", 2 * GIB, GIB, 4096, Attributes::RW_DATA, Granularity::Pages).unwrap();
        assert_eq!(t.mair(), Mair::DEFAULT);
        assert_eq!(t.walk(GIB + 64), Walk::Mapped { level: 2, pa: GIB + 64, attrs: nwa });
        let tr = Attributes::data(MemAttr::NormalWriteThroughTransient);
        t.set_mair(Mair::with_hint(tr.mem).unwrap());
        assert_eq!(t.walk(GIB + 64), Walk::Mapped { level: 2, pa: GIB + 64, attrs: tr }, "same descriptor, new MAIR");
        assert_eq!(t.mapping_at(GIB).map(|m| m.attrs), Some(tr));
        assert_eq!(t.walk(2 * GIB), Walk::Mapped { level: 3, pa: GIB, attrs: Attributes::RW_DATA }, "fixed slots untouched");
    }
}
