//! Number and label formatting shared by the digest ([`crate::summary`]) and the benchmarks'
//! views ([`crate::bench`]), so neither needs the other for it.

use crate::metrics::{human_bytes as hb, sig, Metric};
use crate::records::Record;
use serde_json::Value;
pub(crate) fn u(r: &Record, k: &str) -> Option<u64> {
    r.obj.get(k).and_then(Value::as_u64)
}

/// 3 significant digits, SI multipliers from 10,000 on (`32.1k`).
pub(crate) fn n3(v: f64) -> String {
    if v.abs() >= 1e4 {
        crate::svg::si(v)
    } else {
        sig(v, 3)
    }
}

/// Under -icount (shift=0) one virtual ns is one instruction: `ns` → `insn`, a rate per second
/// → per 10^9 instructions.
pub(crate) fn unit_label(unit: &str, icount: bool) -> String {
    if icount {
        unit.replace("ns", "insn").replace("/s", "/Ginsn")
    } else {
        unit.to_string()
    }
}

/// First/last median of the series of one attribute, ordered by bytes (or tokens).
pub(crate) fn ends(ms: &[&Metric], key: impl Fn(&Metric) -> f64) -> Option<(f64, f64, f64, f64)> {
    let mut v: Vec<(f64, f64)> = ms.iter().filter_map(|m| m.median.map(|y| (key(m), y))).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some((v.first()?.0, v.first()?.1, v.last()?.0, v.last()?.1))
}

pub(crate) fn attrs_of(ms: &[&Metric]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for m in ms {
        let a = m.key.attr.clone().unwrap_or_else(|| "-".into());
        if !v.contains(&a) {
            v.push(a);
        }
    }
    v
}

/// A variant name shortened for the digest (`read-ldp` → `ldp`, `to-device-nc` → `to-nc`).
pub(crate) fn short_variant(v: &str) -> String {
    v.replacen("read-", "", 1).replacen("write-", "", 1).replacen("to-device-", "to-", 1).replacen("from-device-", "from-", 1)
}

/// Published sizes as one size or a range.
pub(crate) fn size_range(sizes: &[u64]) -> String {
    match (sizes.first(), sizes.last()) {
        (Some(a), Some(b)) if a != b => format!("{}–{}", hb(*a as f64), hb(*b as f64)),
        (Some(a), _) => hb(*a as f64),
        _ => "–".into(),
    }
}

pub(crate) fn pct(a: f64, b: f64) -> String {
    if b == 0.0 {
        "–".into()
    } else {
        format!("{:+.0}%", (a - b) / b * 100.0)
    }
}
