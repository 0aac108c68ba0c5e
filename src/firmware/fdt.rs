//! A flattened-devicetree (DTB) reader: pure, no allocation, and no panic on any input.
//!
//! Format: Devicetree Specification v0.4, chapter 5 ("Flattened Devicetree (DTB) Format"): a
//! big-endian header, a structure block of 32-bit tokens (`FDT_BEGIN_NODE` + name,
//! `FDT_PROP` + length + name offset + value, `FDT_END_NODE`, `FDT_NOP`, `FDT_END`), and a
//! strings block holding property names.
//!
//! [`Fdt::new`] walks the whole structure block once and refuses anything malformed (a token
//! out of place, a length past the block, a name without its NUL, unbalanced nodes, nesting
//! deeper than [`MAX_DEPTH`]); every later lookup works on a validated tree. `FDT_NOP` tokens
//! are skipped wherever they appear: QEMU `-M raspi4b` hands over a tree with 16 of them (it
//! edits the tree in place, as the Raspberry Pi firmware does), and the fdt 0.1.5 crate, which
//! this module replaces, could not find `/cpus` past them.

use core::fmt;

/// The header magic, big-endian `d00dfeed`.
pub const FDT_MAGIC: u32 = 0xd00d_feed;
/// The largest tree accepted (QEMU virt's is 1 MiB, a Pi's about 60 KiB).
pub const MAX_SIZE: usize = 8 << 20;
/// Deepest node nesting accepted (real trees nest 4–6 levels).
pub const MAX_DEPTH: usize = 32;

const HEADER_LEN: usize = 40;
const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;
const FDT_END: u32 = 9;
/// `#address-cells` / `#size-cells` when a node does not say (specification §2.3.5).
const DEFAULT_CELLS: (u32, u32) = (2, 1);

/// Why a blob is not a usable device tree. Offsets are from the start of the blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdtError {
    /// Shorter than its header or than the size the header claims.
    TooShort {
        /// Bytes available.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// The first word is not [`FDT_MAGIC`].
    BadMagic(u32),
    /// `last_comp_version` is above 17: a format this reader does not know.
    UnsupportedVersion(u32),
    /// A header field out of range (`totalsize` above [`MAX_SIZE`], a block outside the blob).
    BadHeader(&'static str),
    /// A token that cannot appear here.
    BadToken {
        /// Where.
        offset: usize,
        /// The token.
        token: u32,
    },
    /// A name, property or string runs past its block or lacks its NUL, or is not UTF-8.
    Truncated {
        /// Where the item starts.
        offset: usize,
    },
    /// Nodes nest deeper than [`MAX_DEPTH`].
    TooDeep {
        /// Where.
        offset: usize,
    },
    /// The structure block ends without closing every node and `FDT_END`.
    Unterminated,
}

impl fmt::Display for FdtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { len, need } => write!(f, "device tree truncated: {len} bytes, header needs {need}"),
            Self::BadMagic(m) => write!(f, "no device tree magic (found {m:#010x}, expected {FDT_MAGIC:#010x})"),
            Self::UnsupportedVersion(v) => write!(f, "device tree format version {v} is newer than 17"),
            Self::BadHeader(what) => write!(f, "device tree header: {what}"),
            Self::BadToken { offset, token } => write!(f, "device tree: unexpected token {token:#x} at offset {offset:#x}"),
            Self::Truncated { offset } => write!(f, "device tree: item at offset {offset:#x} runs past its block or is malformed"),
            Self::TooDeep { offset } => write!(f, "device tree: nodes nest deeper than {MAX_DEPTH} at offset {offset:#x}"),
            Self::Unterminated => write!(f, "device tree: structure block ends before FDT_END"),
        }
    }
}

fn be32(buf: &[u8], off: usize) -> Option<u32> {
    let b = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The NUL-terminated UTF-8 string at `off` in `buf`.
fn cstr(buf: &[u8], off: usize) -> Option<&str> {
    let rest = buf.get(off..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    core::str::from_utf8(&rest[..len]).ok()
}

/// A validated device tree.
#[derive(Clone, Copy, Debug)]
pub struct Fdt<'a> {
    structs: &'a [u8],
    strings: &'a [u8],
    total_size: usize,
}

impl<'a> Fdt<'a> {
    /// Validates `blob` (header, blocks, the whole structure block) and returns the tree.
    pub fn new(blob: &'a [u8]) -> Result<Self, FdtError> {
        let need = HEADER_LEN;
        if blob.len() < need {
            return Err(FdtError::TooShort { len: blob.len(), need });
        }
        let word = |i: usize| be32(blob, 4 * i).unwrap_or(0) as usize;
        let magic = word(0) as u32;
        if magic != FDT_MAGIC {
            return Err(FdtError::BadMagic(magic));
        }
        let total = word(1);
        if total > MAX_SIZE {
            return Err(FdtError::BadHeader("totalsize above the 8 MiB this reader accepts"));
        }
        if total < HEADER_LEN {
            return Err(FdtError::BadHeader("totalsize smaller than the header"));
        }
        if blob.len() < total {
            return Err(FdtError::TooShort { len: blob.len(), need: total });
        }
        let (off_struct, off_strings, version, last_comp) = (word(2), word(3), word(5) as u32, word(6) as u32);
        if last_comp > 17 {
            return Err(FdtError::UnsupportedVersion(last_comp));
        }
        let (size_strings, size_struct) = (word(8), if version >= 17 { word(9) } else { total.saturating_sub(off_struct) });
        let block = |off: usize, size: usize, what| {
            let end = off.checked_add(size).filter(|&e| e <= total && off >= HEADER_LEN).ok_or(FdtError::BadHeader(what))?;
            Ok::<_, FdtError>(&blob[off..end])
        };
        let fdt = Fdt {
            structs: block(off_struct, size_struct, "structure block outside the blob")?,
            strings: block(off_strings, size_strings, "strings block outside the blob")?,
            total_size: total,
        };
        if !off_struct.is_multiple_of(4) {
            return Err(FdtError::BadHeader("structure block not 4-byte aligned"));
        }
        fdt.validate(off_struct)?;
        Ok(fdt)
    }

    /// Size of the whole blob (`totalsize`).
    pub fn total_size(&self) -> usize {
        self.total_size
    }

    /// Walks every token once; `base` turns block offsets into blob offsets for errors.
    fn validate(&self, base: usize) -> Result<(), FdtError> {
        let s = self.structs;
        let mut off = 0;
        let mut depth = 0usize;
        let mut seen_root = false;
        loop {
            let token = be32(s, off).ok_or(FdtError::Unterminated)?;
            let at = base + off;
            match token {
                FDT_BEGIN_NODE => {
                    if depth == 0 && seen_root {
                        return Err(FdtError::BadToken { offset: at, token });
                    }
                    seen_root = true;
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(FdtError::TooDeep { offset: at });
                    }
                    let name = cstr(s, off + 4).ok_or(FdtError::Truncated { offset: at })?;
                    off = align4(off + 4 + name.len() + 1);
                }
                FDT_END_NODE => {
                    depth = depth.checked_sub(1).ok_or(FdtError::BadToken { offset: at, token })?;
                    off += 4;
                }
                FDT_PROP => {
                    if depth == 0 {
                        return Err(FdtError::BadToken { offset: at, token });
                    }
                    let (len, nameoff) = (be32(s, off + 4), be32(s, off + 8));
                    let (Some(len), Some(nameoff)) = (len, nameoff) else { return Err(FdtError::Truncated { offset: at }) };
                    let end = (off + 12).checked_add(len as usize).filter(|&e| e <= s.len()).ok_or(FdtError::Truncated { offset: at })?;
                    cstr(self.strings, nameoff as usize).ok_or(FdtError::Truncated { offset: at })?;
                    off = align4(end);
                }
                FDT_NOP => off += 4,
                FDT_END => {
                    return if depth == 0 && seen_root { Ok(()) } else { Err(FdtError::Unterminated) };
                }
                _ => return Err(FdtError::BadToken { offset: at, token }),
            }
        }
    }

    /// Every node in document order (the root first, at depth 0).
    pub fn nodes(&self) -> Nodes<'a> {
        Nodes { fdt: *self, off: 0, depth: 0, cells: [DEFAULT_CELLS; MAX_DEPTH], done: false }
    }

    /// The root node.
    pub fn root(&self) -> Option<Node<'a>> {
        self.nodes().next()
    }

    /// The node at an absolute `path` (`/`, `/cpus`, `/soc/serial@7e201000`). A component
    /// without a unit address also matches a node that has one (`/memory` → `memory@0`).
    pub fn find(&self, path: &str) -> Option<Node<'a>> {
        let rest = path.strip_prefix('/')?;
        let want = |i: usize| rest.split('/').filter(|c| !c.is_empty()).nth(i);
        let count = rest.split('/').filter(|c| !c.is_empty()).count();
        let mut matched = 0usize;
        for node in self.nodes() {
            let d = node.depth;
            if d == 0 {
                if count == 0 {
                    return Some(node);
                }
                continue;
            }
            matched = matched.min(d - 1);
            if matched == d - 1 && want(d - 1).is_some_and(|c| node.matches(c)) {
                matched = d;
                if d == count {
                    return Some(node);
                }
            }
        }
        None
    }

    /// The path an alias (`/aliases` property, e.g. `serial0`) stands for.
    pub fn alias(&self, name: &str) -> Option<&'a str> {
        self.find("/aliases")?.prop_str(name)
    }

    /// The node a path or alias names: `/path` directly, else through `/aliases`. Anything after
    /// a `:` (stdout-path options such as `serial0:115200n8`) is ignored.
    pub fn resolve(&self, spec: &str) -> Option<Node<'a>> {
        let name = spec.split(':').next()?;
        let path = if name.starts_with('/') { name } else { self.alias(name)? };
        path.starts_with('/').then(|| self.find(path)).flatten()
    }

    /// `/chosen/bootargs`.
    /// The bytes up to the NUL, not decoded: the command line is checked (and a bad byte
    /// reported) by [`super::cmdline`].
    pub fn bootargs(&self) -> Option<&'a [u8]> {
        let v = self.find("/chosen")?.property("bootargs")?;
        v.split(|&b| b == 0).next()
    }

    /// The first memory region of non-zero size: (base, size) from the first `memory` node
    /// (by name or `device_type = "memory"`) under the root.
    pub fn memory(&self) -> Option<(u64, u64)> {
        self.nodes()
            .filter(|n| n.depth == 1 && (n.base_name() == "memory" || n.prop_str("device_type") == Some("memory")))
            .flat_map(|n| n.reg())
            .find_map(|(base, size)| size.filter(|&s| s > 0).map(|s| (base, s)))
    }

    /// Number of CPU nodes under `/cpus` (by `device_type = "cpu"`, or named `cpu@…`).
    pub fn cpu_count(&self) -> usize {
        let mut inside = false;
        let mut count = 0;
        for n in self.nodes() {
            match n.depth {
                1 => inside = n.name == "cpus",
                2 if inside && (n.prop_str("device_type") == Some("cpu") || n.base_name() == "cpu") => count += 1,
                _ => {}
            }
        }
        count
    }
}

/// One node: its name, depth and properties.
#[derive(Clone, Copy, Debug)]
pub struct Node<'a> {
    /// Name with unit address (`serial@9000000`); empty for the root.
    pub name: &'a str,
    /// 0 for the root.
    pub depth: usize,
    structs: &'a [u8],
    strings: &'a [u8],
    /// Offset of the first token after the name.
    props: usize,
    /// The parent's `#address-cells` / `#size-cells`: the shape of this node's `reg`.
    reg_cells: (u32, u32),
}

impl<'a> Node<'a> {
    /// The name without its unit address.
    pub fn base_name(&self) -> &'a str {
        self.name.split('@').next().unwrap_or(self.name)
    }

    fn matches(&self, component: &str) -> bool {
        self.name == component || (!component.contains('@') && self.base_name() == component)
    }

    /// The node's properties as (name, value).
    pub fn properties(&self) -> Props<'a> {
        Props { structs: self.structs, strings: self.strings, off: self.props }
    }

    /// The raw value of property `name`.
    pub fn property(&self, name: &str) -> Option<&'a [u8]> {
        self.properties().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// A string property (its first string, without the NUL).
    pub fn prop_str(&self, name: &str) -> Option<&'a str> {
        self.prop_strings(name).next()
    }

    /// The strings of a string-list property (e.g. `compatible`).
    pub fn prop_strings(&self, name: &str) -> impl Iterator<Item = &'a str> {
        self.property(name).unwrap_or(&[]).split(|&b| b == 0).filter(|s| !s.is_empty()).map_while(|s| core::str::from_utf8(s).ok())
    }

    /// A one-cell (u32) property.
    pub fn prop_u32(&self, name: &str) -> Option<u32> {
        self.property(name).filter(|v| v.len() == 4).and_then(|v| be32(v, 0))
    }

    /// True when `compatible` lists `c`.
    pub fn is_compatible(&self, c: &str) -> bool {
        self.prop_strings("compatible").any(|x| x == c)
    }

    /// True unless `status` says otherwise than `okay`/`ok`.
    pub fn is_enabled(&self) -> bool {
        self.prop_str("status").is_none_or(|s| s == "okay" || s == "ok")
    }

    /// The `reg` entries as (address, size), shaped by the parent's cell counts; `None` size
    /// when the parent says `#size-cells = <0>`. Entries with more than two cells per number
    /// are not representable and end the list.
    pub fn reg(&self) -> Reg<'a> {
        let (a, s) = self.reg_cells;
        Reg { data: self.property("reg").unwrap_or(&[]), addr_cells: a as usize, size_cells: s as usize }
    }
}

/// Iterator over a node's properties.
pub struct Props<'a> {
    structs: &'a [u8],
    strings: &'a [u8],
    off: usize,
}

impl<'a> Iterator for Props<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match be32(self.structs, self.off)? {
                FDT_NOP => self.off += 4,
                FDT_PROP => {
                    let len = be32(self.structs, self.off + 4)? as usize;
                    let name = cstr(self.strings, be32(self.structs, self.off + 8)? as usize)?;
                    let start = self.off + 12;
                    let value = self.structs.get(start..start.checked_add(len)?)?;
                    self.off = align4(start + len);
                    return Some((name, value));
                }
                _ => return None,
            }
        }
    }
}

/// Iterator over `reg` entries.
pub struct Reg<'a> {
    data: &'a [u8],
    addr_cells: usize,
    size_cells: usize,
}

fn cells(data: &[u8], n: usize) -> Option<u64> {
    match n {
        0 => Some(0),
        1 => be32(data, 0).map(u64::from),
        2 => Some((u64::from(be32(data, 0)?) << 32) | u64::from(be32(data, 4)?)),
        _ => None,
    }
}

impl Iterator for Reg<'_> {
    type Item = (u64, Option<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.addr_cells == 0 || self.addr_cells > 2 || self.size_cells > 2 {
            return None;
        }
        let (a, s) = (4 * self.addr_cells, 4 * self.size_cells);
        let entry = self.data.get(..a + s)?;
        self.data = &self.data[a + s..];
        let addr = cells(entry, self.addr_cells)?;
        let size = if self.size_cells == 0 { None } else { Some(cells(&entry[a..], self.size_cells)?) };
        Some((addr, size))
    }
}

/// Iterator over every node, in document order.
pub struct Nodes<'a> {
    fdt: Fdt<'a>,
    off: usize,
    depth: usize,
    /// `#address-cells` / `#size-cells` each open node declares for its children.
    cells: [(u32, u32); MAX_DEPTH],
    done: bool,
}

impl<'a> Iterator for Nodes<'a> {
    type Item = Node<'a>;

    fn next(&mut self) -> Option<Node<'a>> {
        let s = self.fdt.structs;
        while !self.done {
            let Some(token) = be32(s, self.off) else { break };
            match token {
                FDT_BEGIN_NODE => {
                    let name = cstr(s, self.off + 4)?;
                    let props = align4(self.off + 4 + name.len() + 1);
                    let depth = self.depth;
                    let parent = if depth == 0 { DEFAULT_CELLS } else { *self.cells.get(depth - 1)? };
                    let node = Node { name, depth, structs: s, strings: self.fdt.strings, props, reg_cells: parent };
                    let own = (
                        node.prop_u32("#address-cells").unwrap_or(DEFAULT_CELLS.0),
                        node.prop_u32("#size-cells").unwrap_or(DEFAULT_CELLS.1),
                    );
                    *self.cells.get_mut(depth)? = own;
                    self.depth += 1;
                    self.off = props;
                    return Some(node);
                }
                FDT_END_NODE => {
                    self.depth = self.depth.saturating_sub(1);
                    self.off += 4;
                }
                FDT_PROP => {
                    let len = be32(s, self.off + 4)? as usize;
                    self.off = align4(self.off + 12 + len);
                }
                FDT_NOP => self.off += 4,
                _ => break,
            }
        }
        self.done = true;
        None
    }
}

#[cfg(test)]
mod tests;
