//! What the kernel maps, as data: the identity map of RAM (split by permission around the
//! kernel image: code RO+X, read-only data RO XN, everything else RW XN) and of the MMIO the
//! kernel uses (Device-nGnRE, execute-never). Pure; `mem::mmu` turns it into tables.

use alloc::vec::Vec;

use super::{
    attr::Attributes,
    table::{page_aligned, Granularity, PAGE_SIZE},
    Error,
};

/// The kernel image's sections, as the linker laid them out (each boundary page-aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelImage {
    /// First byte of the image (start of `.text`).
    pub start: u64,
    /// Start of `.rodata` (end of `.text`).
    pub rodata: u64,
    /// Start of `.data` (end of read-only data).
    pub data: u64,
    /// End of the image: data, BSS and the boot stack (`__image_end`).
    pub end: u64,
}

/// One MMIO range the kernel touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    /// Name in reports.
    pub name: &'static str,
    /// Physical base.
    pub base: u64,
    /// Length in bytes (rounded out to pages when mapped).
    pub len: u64,
}

/// One region to map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Name in reports and errors.
    pub name: &'static str,
    /// Virtual start.
    pub va: u64,
    /// Physical start.
    pub pa: u64,
    /// Length.
    pub len: u64,
    /// Attributes.
    pub attrs: Attributes,
    /// Leaf size policy.
    pub gran: Granularity,
}

fn identity(name: &'static str, start: u64, end: u64, attrs: Attributes) -> Option<Region> {
    (end > start).then_some(Region { name, va: start, pa: start, len: end - start, attrs, gran: Granularity::Largest })
}

/// The identity map: RAM (`base`, `size`) around the kernel `image`, and `devices`. RAM is
/// trimmed inward to whole pages, devices are widened outward.
pub fn identity_map(ram: (u64, u64), image: KernelImage, devices: &[Device]) -> Result<Vec<Region>, Error> {
    let ram_start = ram.0.checked_next_multiple_of(PAGE_SIZE).ok_or(Error::ImageOutsideRam)?;
    let ram_end = ram.0.checked_add(ram.1).ok_or(Error::ImageOutsideRam)? / PAGE_SIZE * PAGE_SIZE;
    let KernelImage { start, rodata, data, end } = image;
    page_aligned(&[start, rodata, data, end].map(|v| ("kernel image boundary", v)))?;
    if !(ram_start <= start && start <= rodata && rodata <= data && data <= end && end <= ram_end) {
        return Err(Error::ImageOutsideRam);
    }
    let mut regions: Vec<Region> = [
        identity("ram-below-kernel", ram_start, start, Attributes::RW_DATA),
        identity("kernel-text", start, rodata, Attributes::CODE),
        identity("kernel-rodata", rodata, data, Attributes::RO_DATA),
        identity("kernel-data", data, end, Attributes::RW_DATA),
        identity("ram", end, ram_end, Attributes::RW_DATA),
    ]
    .into_iter()
    .flatten()
    .collect();
    for d in devices {
        let base = d.base / PAGE_SIZE * PAGE_SIZE;
        let top = d.base.checked_add(d.len.max(1)).and_then(|e| e.checked_next_multiple_of(PAGE_SIZE)).ok_or(Error::PaOutOfRange {
            pa: d.base,
            len: d.len,
            limit: u64::MAX,
        })?;
        regions.extend(identity(d.name, base, top, Attributes::MMIO));
    }
    Ok(regions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::attr::MemAttr;

    const IMAGE: KernelImage = KernelImage { start: 0x4020_0000, rodata: 0x4024_3000, data: 0x4025_8000, end: 0x4040_0000 };

    #[test]
    fn qemu_virt_layout() {
        let uart = Device { name: "uart", base: 0x0900_0000, len: 0x1000 };
        let r = identity_map((0x4000_0000, 512 << 20), IMAGE, &[uart]).unwrap();
        let names: Vec<_> = r.iter().map(|r| r.name).collect();
        assert_eq!(names, ["ram-below-kernel", "kernel-text", "kernel-rodata", "kernel-data", "ram", "uart"]);
        assert_eq!(r[1].attrs, Attributes::CODE);
        assert_eq!((r[4].va, r[4].len), (0x4040_0000, 0x6000_0000 - 0x4040_0000));
        assert_eq!(r[5].attrs.mem, MemAttr::DeviceNGnRE);
        assert!(r.iter().all(|r| r.va == r.pa && r.attrs.validate().is_ok()));
        // Contiguous cover of RAM.
        for w in r[..5].windows(2) {
            assert_eq!(w[0].va + w[0].len, w[1].va);
        }
    }

    #[test]
    fn pi_layout_ram_at_zero_and_unaligned_device() {
        let img = KernelImage { start: 0x8_0000, rodata: 0x9_0000, data: 0xa_0000, end: 0x20_0000 };
        let r = identity_map((0, 1 << 30), img, &[Device { name: "uart", base: 0xfe20_1000, len: 0x200 }]).unwrap();
        assert_eq!((r[0].va, r[0].len), (0, 0x8_0000));
        assert_eq!((r[5].va, r[5].len), (0xfe20_1000, 0x1000));
        let r = identity_map((0, 1 << 30), img, &[Device { name: "odd", base: 0xfe20_1ff0, len: 0x20 }]).unwrap();
        assert_eq!((r[5].va, r[5].len), (0xfe20_1000, 0x2000));
    }

    #[test]
    fn image_must_be_inside_ram_and_aligned() {
        assert_eq!(identity_map((0x5000_0000, 1 << 20), IMAGE, &[]), Err(Error::ImageOutsideRam));
        let bad = KernelImage { rodata: 0x4024_3004, ..IMAGE };
        assert_eq!(
            identity_map((0x4000_0000, 1 << 30), bad, &[]),
            Err(Error::Unaligned { what: "kernel image boundary", value: 0x4024_3004 })
        );
        let backwards = KernelImage { data: 0x4021_0000, ..IMAGE };
        assert_eq!(identity_map((0x4000_0000, 1 << 30), backwards, &[]), Err(Error::ImageOutsideRam));
        assert_eq!(identity_map((u64::MAX - 10, 100), IMAGE, &[]), Err(Error::ImageOutsideRam));
    }
}
