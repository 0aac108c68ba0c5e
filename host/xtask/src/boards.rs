//! The board table, `boards.toml` at the repository root: read by `cachescope-boards`, the one
//! reader, which the kernel's build.rs uses too. Re-exported here as xtask's `boards` module.

pub use cachescope_boards::*;
