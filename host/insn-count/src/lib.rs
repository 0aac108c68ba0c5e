//! cachescope's instruction counter for QEMU: a TCG plugin (system or user mode, plugin API v4)
//! that counts the executed cache and TLB maintenance instructions by operation, independently
//! of the kernel. scripts/maint-check compares its counts with the kernel's `maint-total` record.
//!
//! At translation every instruction word is decoded with `cachescope_arch::cache::ops::MaintOp::decode`;
//! a maintenance instruction gets one inline scoreboard add (no callback: the count costs one
//! add per execution, inserted before the instruction, so an instruction that faults is counted
//! as executed, as the kernel's wrappers count it). At exit the per-vCPU counts are summed and
//! written as one line:
//!
//! ```text
//! insn-count dc_isw=0 dc_csw=33792 … dc_other=0
//! ```
//!
//! every operation of `MaintOp::ALL` by its record name, in that order.
//!
//! Arguments: `out=FILE` (default: standard error).
//!
//! Licence: GPL-2.0-or-later, because the plugin links the `qemu-plugin` crate (see LICENSE).

//! The QEMU glue (registration, the translation callback, the scoreboard) is in `plugin.rs`,
//! compiled out of unit tests (its `qemu_plugin_*` symbols exist only inside QEMU); the pure parts
//! (the argument parser and the exit line) are here and tested.

#![deny(missing_docs)]

use cachescope_arch::cache::ops::MaintOp;

#[cfg(not(test))]
mod plugin;

/// The line written at exit: every operation of `MaintOp::ALL` by its record name with its count.
fn counts_line(count: impl Fn(MaintOp) -> u64) -> String {
    let mut line = String::from("insn-count");
    for op in MaintOp::ALL {
        line.push_str(&format!(" {}={}", op.name(), count(op)));
    }
    line
}

/// The `out=FILE` argument (the only one).
fn out_path(words: &[String]) -> Result<Option<String>, String> {
    let mut out = None;
    for w in words {
        match w.split_once('=') {
            Some(("out", path)) if out.is_none() && !path.is_empty() => out = Some(path.to_string()),
            Some(("out", _)) => return Err(format!("bad argument '{w}': out=FILE, given once")),
            _ => return Err(format!("unknown argument '{w}': the only argument is out=FILE")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn out_is_the_only_argument_given_once() {
        assert_eq!(out_path(&[]), Ok(None));
        assert_eq!(out_path(&words(&["out=/tmp/x"])), Ok(Some("/tmp/x".into())));
        assert!(out_path(&words(&["out="])).unwrap_err().contains("given once"));
        assert!(out_path(&words(&["out=a", "out=b"])).unwrap_err().contains("given once"));
        assert!(out_path(&words(&["verbose=1"])).unwrap_err().contains("unknown argument 'verbose=1'"));
    }

    #[test]
    fn the_exit_line_names_every_operation_in_order() {
        let line = counts_line(|op| op.index() as u64 * 10);
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields[0], "insn-count");
        assert_eq!(fields.len(), 1 + MaintOp::COUNT);
        for (i, op) in MaintOp::ALL.into_iter().enumerate() {
            assert_eq!(fields[1 + i], format!("{}={}", op.name(), op.index() * 10));
        }
    }
}
