//! Records (`# cs: {json}` lines) read with serde_json, for the scripts that used to add them up
//! with grep and awk: the `records` filter (scripts/model-check, scripts/bench-model) and
//! `maint-check` (crate::maint).

use std::path::Path;
use std::process::Command;

use cachescope_report::records::Object;
use serde_json::Value;

/// The records of a log or model file, read by the report tool's record parser
/// (`cachescope_report::records::parse_line`: the one reader of `# cs: {…}` lines), each with
/// the line as written (for verbatim baselines); broken record lines are left out.
pub fn records(text: &str) -> Vec<(&str, Object)> {
    text.lines().filter_map(|line| Some((line, cachescope_report::records::parse_line(line)?.ok()?))).collect()
}

/// A record's kind (its `record` field).
pub fn kind(rec: &Object) -> &str {
    rec.get("record").and_then(Value::as_str).unwrap_or("")
}

/// Which records to keep.
#[derive(Clone, Debug, Default)]
pub struct Select {
    /// Only this `source`.
    pub source: Option<String>,
    /// Only these kinds (empty: any).
    pub kind: Vec<String>,
    /// Not these kinds.
    pub drop_kind: Vec<String>,
    /// Only this `level`.
    pub level: Option<String>,
}

impl Select {
    /// Whether `rec` passes.
    pub fn keeps(&self, rec: &Object) -> bool {
        let field_is =
            |name: &str, want: &Option<String>| want.as_ref().is_none_or(|w| rec.get(name).and_then(Value::as_str) == Some(w.as_str()));
        let k = kind(rec);
        field_is("source", &self.source)
            && field_is("level", &self.level)
            && (self.kind.is_empty() || self.kind.iter().any(|x| x == k))
            && !self.drop_kind.iter().any(|x| x == k)
    }
}

/// Builds the cache-model plugin once (scripts/qemu-run then finds it built).
pub fn build_plugin(root: &Path) -> Result<(), String> {
    let st = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "--release",
            "--manifest-path",
            "host/Cargo.toml",
            "--target",
            "host-tuple",
            "-p",
            "cachescope-cache-model",
        ])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err("building the cache-model plugin failed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_filters() {
        let log = "KTAP version 1\n  # cs: {\"record\":\"setway\",\"op\":\"csw\",\"ops\":16896}\n# cs: {\"record\":\"setway\",\"ops\":512}\n# cs: {bad json\n# cs: {\"record\":\"end\"}\n";
        let model = "# cs: {\"record\":\"model-run\",\"setway_ops\":17408,\"source\":\"model\"}\n";
        assert_eq!(records(log).len(), 3);
        let sel = Select { source: Some("model".into()), drop_kind: vec!["model-run".into()], ..Default::default() };
        assert!(!sel.keeps(&records(model)[0].1));
        let sel = Select { kind: vec!["setway".into()], ..Default::default() };
        assert_eq!(records(log).iter().filter(|(_, r)| sel.keeps(r)).count(), 2);
        assert_eq!(records(log)[0].0, "  # cs: {\"record\":\"setway\",\"op\":\"csw\",\"ops\":16896}");
    }
}
