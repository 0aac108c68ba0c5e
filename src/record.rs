//! Printing a record: the record contract and its typed builders live in
//! [`cachescope_arch::record`] (one declaration per kind, docs/records.md); the kernel adds only
//! [`Emit::emit`], which prints a built record as `# cs: {…}` at the current KTAP depth.
//!
//! ```ignore
//! use crate::record::{self, Emit};
//! record::End::new().passed(3).failed(0).skipped(1).emit();
//! ```

pub use cachescope_arch::record::*;

/// Prints a built record (any kind's typed builder).
pub trait Emit {
    /// Prints the record as `# cs: {…}` at the current KTAP depth.
    fn emit(self);
}

impl<B: Builder> Emit for B {
    #[cfg(target_os = "none")]
    fn emit(self) {
        let json = self.finish();
        crate::console::write_indented_line(format_args!("{PREFIX}{json}"));
    }

    /// Host builds (the library's unit tests) have no console.
    #[cfg(not(target_os = "none"))]
    fn emit(self) {
        let _ = self.finish();
    }
}
