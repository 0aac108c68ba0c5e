//! The kernel's part of the cache instructions: a tiny function whose instructions tests copy and
//! patch. Every maintenance instruction and identification register is
//! [`cachescope_arch::hw`], re-exported here.

pub use cachescope_arch::hw::*;

core::arch::global_asm!(
    ".section .text.cs_smc_template, \"ax\"",
    ".balign 4",
    ".global cs_smc_template",
    "cs_smc_template:",
    "    movz w0, #0x1234",
    "    ret",
    ".global cs_smc_template_end",
    "cs_smc_template_end:",
);

extern "C" {
    static cs_smc_template: u32;
    static cs_smc_template_end: u32;
}

/// The instruction words of `cs_smc_template` (`movz w0, #0x1234; ret`): code to copy into a
/// buffer, patch and run after `cache::maintenance::sync_instructions`.
pub fn smc_template() -> &'static [u32] {
    // SAFETY: both symbols delimit the two instruction words above in .text, which is mapped and
    // never written; the range is 4-byte aligned and non-empty.
    unsafe {
        let start = &raw const cs_smc_template;
        let end = &raw const cs_smc_template_end;
        core::slice::from_raw_parts(start, (end as usize - start as usize) / 4)
    }
}
