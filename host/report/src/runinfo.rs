//! The parameters a run was made with: kernel arguments, CPU, machine (board), entry EL,
//! emulation, QEMU version and timer. A baseline stores them (`"run"`), `compare` checks a
//! log's against them, and JUnit output carries them as properties.
//!
//! Where each comes from, in a log:
//! - `args`: the `boot` record's `cmdline` (or `args`) field; else the boot suite's diagnostic
//!   `# command line     '…'`; else unknown (a run with `only=bench` prints neither today).
//!   Whitespace is normalised (one space between words).
//! - `cpu`, `machine`, `entry_el`, `emulated`: the `boot` record's `cpu`, `board`, `el`,
//!   `emulated`.
//! - `qemu`: given by the caller (`--qemu-version`, or the `CS_QEMU_VERSION` environment
//!   variable); else a `QEMU emulator version …` line in the log's noise before the KTAP
//!   version line. The leading "QEMU emulator version " is dropped.
//! - `timer`: the `timer` records' `source` (distinct, in order, comma-separated); else the
//!   sources of the `metric` records other than `model`.
//!
//! A field unknown on either side is never a mismatch.

use crate::input::{Error, Log, Result};
use crate::records::Record;
use serde_json::{json, Map, Value};

/// Run parameters; `None` = unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// Kernel command line, whitespace-normalised.
    pub args: Option<String>,
    /// CPU name from the boot record (`Cortex-A72`).
    pub cpu: Option<String>,
    /// Board/machine from the boot record (`qemu-virt`, `rpi4`, `rpi5`).
    pub machine: Option<String>,
    /// Entry exception level.
    pub entry_el: Option<u64>,
    /// Whether the run was on an emulator.
    pub emulated: Option<bool>,
    /// QEMU version (`10.0.2 (Debian 1:10.0.2+ds-1)`).
    pub qemu: Option<String>,
    /// Timer(s) of the measured windows (`cntvct`, `pmccntr`).
    pub timer: Option<String>,
}

/// One field whose value differs between two runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Field name (`args`, `timer`, …).
    pub field: &'static str,
    /// Whether it changes which metrics a run measures or what they mean (everything but the
    /// QEMU version and the entry EL).
    pub decisive: bool,
}

fn normalise_args(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strip_qemu(s: &str) -> String {
    let s = s.trim();
    s.strip_prefix("QEMU emulator version ").unwrap_or(s).trim().to_string()
}

impl RunInfo {
    /// What `log` (with its records `recs`) says about its run; `qemu` is the caller's
    /// version string, if any.
    pub fn from_log(log: &Log, recs: &[Record], qemu: Option<&str>) -> RunInfo {
        let mut r = RunInfo::default();
        let boot = recs.iter().find(|x| x.kind() == "boot");
        if let Some(b) = boot.and_then(|b| b.view::<cachescope_arch::record::BootView<_>>()) {
            // `cmdline` is no declared field: the name `args` had in early logs.
            let cmdline = b.object().get("cmdline").and_then(Value::as_str);
            r.args = cmdline.or(b.args()).map(normalise_args);
            r.cpu = b.cpu().map(str::to_string);
            r.machine = b.board().map(str::to_string);
            r.entry_el = b.el();
            r.emulated = b.emulated();
        }
        if r.args.is_none() {
            r.args = log.lines.iter().filter(|l| l.defect.is_none()).find_map(|l| {
                let rest = l.text.trim_start().strip_prefix("# command line")?;
                let v = rest.trim();
                let v = v.strip_prefix('\'')?.strip_suffix('\'')?;
                Some(normalise_args(v))
            });
        }
        r.qemu = qemu.map(strip_qemu).filter(|q| !q.is_empty()).or_else(|| {
            let start = log.lines.iter().position(|l| l.text.trim() == "KTAP version 1").unwrap_or(log.lines.len());
            log.lines[..start].iter().find_map(|l| l.text.find("QEMU emulator version ").map(|i| strip_qemu(&l.text[i..])))
        });
        let sources = |kind: &str| {
            let mut v: Vec<String> = Vec::new();
            for x in recs.iter().filter(|x| x.kind() == kind) {
                match x.obj.get("source").and_then(Value::as_str) {
                    Some("model" | "") | None => {}
                    Some(t) if v.iter().any(|x| x == t) => {}
                    Some(t) => v.push(t.to_string()),
                }
            }
            v
        };
        let mut timers = sources("timer");
        if timers.is_empty() {
            timers = sources("metric");
        }
        if !timers.is_empty() {
            r.timer = Some(timers.join(","));
        }
        r
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        *self == RunInfo::default()
    }

    /// The known fields as a JSON object (the baseline's `"run"`).
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        if let Some(v) = &self.args {
            o.insert("args".into(), json!(v));
        }
        if let Some(v) = &self.cpu {
            o.insert("cpu".into(), json!(v));
        }
        if let Some(v) = &self.machine {
            o.insert("machine".into(), json!(v));
        }
        if let Some(v) = self.entry_el {
            o.insert("entry_el".into(), json!(v));
        }
        if let Some(v) = self.emulated {
            o.insert("emulated".into(), json!(v));
        }
        if let Some(v) = &self.qemu {
            o.insert("qemu".into(), json!(v));
        }
        if let Some(v) = &self.timer {
            o.insert("timer".into(), json!(v));
        }
        Value::Object(o)
    }

    /// Reads a baseline's `"run"` object; `ctx` names it in messages. Unknown keys are ignored
    /// (a newer tool may add some).
    pub fn from_json(v: &Value, ctx: &str) -> Result<RunInfo> {
        let Value::Object(o) = v else {
            return Err(Error(format!("{ctx}: \"run\" must be an object")));
        };
        let s = |k: &str| -> Result<Option<String>> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(Error(format!("{ctx}: \"run\".\"{k}\" must be a string, found {v}"))),
            }
        };
        let entry_el = match o.get("entry_el") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| Error(format!("{ctx}: \"run\".\"entry_el\" must be 1, 2 or 3, found {v}")))?),
        };
        let emulated = match o.get("emulated") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => return Err(Error(format!("{ctx}: \"run\".\"emulated\" must be true or false, found {v}"))),
        };
        Ok(RunInfo {
            args: s("args")?.map(|a| normalise_args(&a)),
            cpu: s("cpu")?,
            machine: s("machine")?,
            entry_el,
            emulated,
            qemu: s("qemu")?,
            timer: s("timer")?,
        })
    }

    fn fields(&self) -> [(&'static str, bool, Option<String>); 7] {
        [
            ("args", true, self.args.as_ref().map(|a| format!("'{a}'"))),
            ("timer", true, self.timer.clone()),
            ("cpu", true, self.cpu.clone()),
            ("machine", true, self.machine.clone()),
            ("emulated", true, self.emulated.map(|b| b.to_string())),
            ("el", false, self.entry_el.map(|e| e.to_string())),
            ("qemu", false, self.qemu.as_ref().map(|q| format!("'{q}'"))),
        ]
    }

    /// The fields known on both sides whose values differ.
    pub fn differences(&self, other: &RunInfo) -> Vec<Difference> {
        self.fields()
            .into_iter()
            .zip(other.fields())
            .filter_map(|((field, decisive, a), (_, _, b))| match (a, b) {
                (Some(a), Some(b)) if a != b => Some(Difference { field, decisive }),
                _ => None,
            })
            .collect()
    }

    /// `args='only=bench timer=pmccntr' timer=pmccntr cpu=Cortex-A72 …`: the known fields,
    /// `?` for unknown ones that `other` knows (so both sides of a mismatch line up).
    pub fn describe(&self, other: &RunInfo) -> String {
        let mut parts = Vec::new();
        for ((field, _, a), (_, _, b)) in self.fields().into_iter().zip(other.fields()) {
            match (a, b) {
                (Some(a), _) => parts.push(format!("{field}={a}")),
                (None, Some(_)) => parts.push(format!("{field}=?")),
                (None, None) => {}
            }
        }
        if parts.is_empty() {
            "(no run parameters recorded)".into()
        } else {
            parts.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::extract;

    fn info(text: &str, qemu: Option<&str>) -> RunInfo {
        let log = Log::from_bytes("t", text.as_bytes());
        RunInfo::from_log(&log, &extract(&log).0, qemu)
    }

    const BOOT: &str = r#"# cs: {"record":"boot","schema":1,"el":2,"board":"qemu-virt","cpu":"Cortex-A72","emulated":true}"#;

    #[test]
    fn from_the_boot_record_and_diagnostics() {
        let r = info(&format!("KTAP version 1\n{BOOT}\n  # command line     'only=bench   timer=pmccntr'\n"), None);
        assert_eq!(r.args.as_deref(), Some("only=bench timer=pmccntr"));
        assert_eq!(
            (r.cpu.as_deref(), r.machine.as_deref(), r.entry_el, r.emulated),
            (Some("Cortex-A72"), Some("qemu-virt"), Some(2), Some(true))
        );
        assert_eq!(r.qemu, None);
        assert_eq!(r.timer, None);
        // A cmdline field in the boot record wins; QEMU version from the caller or the noise.
        let boot = BOOT.replace("\"el\"", "\"cmdline\":\"only=boot\",\"el\"");
        let r = info(&format!("QEMU emulator version 10.0.2\nKTAP version 1\n{boot}\n  # command line     'x'\n"), None);
        assert_eq!((r.args.as_deref(), r.qemu.as_deref()), (Some("only=boot"), Some("10.0.2")));
        let r = info(&format!("KTAP version 1\n{boot}\n"), Some("QEMU emulator version 9.2.0 (x)"));
        assert_eq!(r.qemu.as_deref(), Some("9.2.0 (x)"));
    }

    #[test]
    fn timer_from_timer_records_else_metric_sources() {
        let t = r#"# cs: {"record":"timer","source":"pmccntr","hz":1}"#;
        let m = |s: &str| format!(r#"# cs: {{"record":"metric","source":"{s}"}}"#);
        assert_eq!(info(&format!("{t}\n{t}\n{}\n", m("cntvct")), None).timer.as_deref(), Some("pmccntr"));
        assert_eq!(info(&format!("{}\n{}\n{}\n", m("model"), m("cntvct"), m("pmccntr")), None).timer.as_deref(), Some("cntvct,pmccntr"));
    }

    #[test]
    fn json_roundtrip_and_differences() {
        let a = info(&format!("KTAP version 1\n{BOOT}\n  # command line     'only=bench'\n"), Some("10.0.2"));
        let back = RunInfo::from_json(&a.to_json(), "b").unwrap();
        assert_eq!(back, a);
        let mut b = a.clone();
        b.args = Some(String::new());
        b.qemu = Some("9.0".into());
        b.timer = Some("cntvct".into());
        let d = b.differences(&a);
        assert_eq!(d.iter().map(|d| (d.field, d.decisive)).collect::<Vec<_>>(), [("args", true), ("qemu", false)]);
        assert_eq!(b.describe(&a), "args='' timer=cntvct cpu=Cortex-A72 machine=qemu-virt emulated=true el=2 qemu='9.0'");
        assert_eq!(a.describe(&b), "args='only=bench' timer=? cpu=Cortex-A72 machine=qemu-virt emulated=true el=2 qemu='10.0.2'");
        assert!(RunInfo::from_json(&json!({"cpu": 3}), "b").unwrap_err().0.contains("\"cpu\" must be a string"));
        assert!(RunInfo::default().is_empty());
    }
}
