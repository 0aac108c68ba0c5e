//! The ATAG list of the legacy ARM boot protocol (Linux `Documentation/arch/arm/booting.rst`).
//!
//! Loaders that have no device tree still hand over a tag list: QEMU `-M raspi4b` without
//! `-dtb` puts one at 0x100 (x0 = 0x100) holding `ATAG_MEM` and `ATAG_CMDLINE` (the `-append`
//! text). Each tag is `size` (in 32-bit words, header included), `tag`, then the payload; the
//! list starts with `ATAG_CORE` and ends with `ATAG_NONE`. Pure: the caller supplies the words.

/// First tag of every list.
pub const ATAG_CORE: u32 = 0x5441_0001;
/// End of the list.
pub const ATAG_NONE: u32 = 0;
/// A RAM bank: size, start.
pub const ATAG_MEM: u32 = 0x5441_0002;
/// The kernel command line (NUL-terminated).
pub const ATAG_CMDLINE: u32 = 0x5441_0009;

/// What this kernel uses from a tag list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Atags<'a> {
    /// The first RAM bank: (start, size).
    pub mem: Option<(u64, u64)>,
    /// The command line as raw bytes, without its NUL terminator (decoded and checked by
    /// [`cmdline`](super::cmdline), so that bad bytes are reported, never dropped).
    pub cmdline: Option<&'a [u8]>,
}

/// Why a word sequence is not a tag list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtagError {
    /// The first tag is not `ATAG_CORE`.
    NoCoreTag,
    /// A tag's size is 1 (too small for a header) or runs past the supplied words.
    BadSize {
        /// Word offset of the tag.
        at: usize,
    },
    /// The words ended before `ATAG_NONE`.
    Unterminated,
}

/// True when the first two words (size, tag) look like the start of a tag list: a cheap check
/// before reading further.
pub fn looks_like_atags(first_two: [u32; 2]) -> bool {
    first_two[1] == ATAG_CORE && (first_two[0] == 2 || first_two[0] == 5)
}

fn word(bytes: &[u8], index: usize) -> Option<u32> {
    let b = bytes.get(index * 4..index * 4 + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Parses a tag list held in `bytes` (the memory at the list's address). Unknown tags are
/// skipped; an `ATAG_CMDLINE` that is not UTF-8 is ignored.
pub fn parse(bytes: &[u8]) -> Result<Atags<'_>, AtagError> {
    if word(bytes, 1) != Some(ATAG_CORE) {
        return Err(AtagError::NoCoreTag);
    }
    let words = bytes.len() / 4;
    let mut out = Atags::default();
    let mut at = 0;
    loop {
        let size = word(bytes, at).ok_or(AtagError::Unterminated)? as usize;
        if size == 0 {
            // ATAG_NONE has size 0 by definition.
            return Ok(out);
        }
        let tag = word(bytes, at + 1).ok_or(AtagError::Unterminated)?;
        if size < 2 || at + size > words {
            return Err(AtagError::BadSize { at });
        }
        match tag {
            ATAG_NONE => return Ok(out),
            ATAG_MEM if size >= 4 && out.mem.is_none() => {
                let (len, start) = (word(bytes, at + 2), word(bytes, at + 3));
                out.mem = start.zip(len).map(|(s, l)| (s as u64, l as u64));
            }
            ATAG_CMDLINE => {
                let text = &bytes[(at + 2) * 4..(at + size) * 4];
                let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                out.cmdline = Some(&text[..end]);
            }
            _ => {}
        }
        at += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u32]) -> alloc::vec::Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn words_of(cmd: &[u8]) -> alloc::vec::Vec<u32> {
        // As QEMU writes it for raspi4b: CORE (size 5), MEM (size 4), CMDLINE, NONE.
        let mut w = alloc::vec![5, ATAG_CORE, 1, 0x1000, 0, 4, ATAG_MEM, 0x3c00_0000, 0];
        let mut bytes = cmd.to_vec();
        bytes.push(0);
        while !bytes.len().is_multiple_of(4) {
            bytes.push(0);
        }
        w.push(2 + bytes.len() as u32 / 4);
        w.push(ATAG_CMDLINE);
        w.extend(bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        w.extend([0, 0]);
        w
    }

    #[test]
    fn qemu_raspi4b_list() {
        // Words seen at 0x100 under QEMU 10.0.2 `-M raspi4b -append "hello world emulator=qemu"`.
        let w = words_of(b"hello world emulator=qemu");
        assert_eq!(&w[..8], &[5, ATAG_CORE, 1, 0x1000, 0, 4, ATAG_MEM, 0x3c00_0000]);
        let b = bytes(&w);
        let a = parse(&b).unwrap();
        assert_eq!(a.mem, Some((0, 0x3c00_0000)));
        assert_eq!(a.cmdline, Some(&b"hello world emulator=qemu"[..]));
        assert!(looks_like_atags([w[0], w[1]]));
    }

    #[test]
    fn empty_cmdline_and_short_core() {
        let w = [2, ATAG_CORE, 3, ATAG_CMDLINE, 0, 0, 0];
        assert_eq!(parse(&bytes(&w)).unwrap(), Atags { mem: None, cmdline: Some(&b""[..]) });
    }

    #[test]
    fn refuses_garbage() {
        assert_eq!(parse(&bytes(&[])), Err(AtagError::NoCoreTag));
        assert_eq!(parse(&bytes(&[5, 0xdead_beef])), Err(AtagError::NoCoreTag));
        assert_eq!(parse(&bytes(&[2, ATAG_CORE, 1, 7])), Err(AtagError::BadSize { at: 2 }));
        assert_eq!(parse(&bytes(&[2, ATAG_CORE, 9, 7, 0])), Err(AtagError::BadSize { at: 2 }));
        assert_eq!(parse(&bytes(&[2, ATAG_CORE])), Err(AtagError::Unterminated));
        assert!(!looks_like_atags([0xd00d_feed, 0]));
    }

    #[test]
    fn non_utf8_cmdline_is_kept_as_bytes() {
        let w = [2, ATAG_CORE, 3, ATAG_CMDLINE, u32::from_le_bytes([0xff, 0xfe, 0, 0]), 0, 0];
        assert_eq!(parse(&bytes(&w)).unwrap().cmdline, Some(&[0xff, 0xfe][..]));
    }
}
