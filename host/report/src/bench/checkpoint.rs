//! `checkpoint` under the model: the hot set's misses per scan after each way of writing a
//! checkpoint (plain STP, STNP, transient window, no-write-allocate window, DC CIVAC per chunk),
//! against scans with no write between them.

use super::MODEL_SOURCE;
use super::{BenchView, Digest, Draw};
use crate::dl::misses;
use crate::model_data::ModelData;
use crate::records::Record;
use crate::svg::BarChart;
use cachescope_arch::bench::{Bench, Variant};

/// The view.
pub struct View;

/// One variant: its scans (phases) and their mean misses per level below L1.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    /// The variant.
    pub variant: Variant,
    /// Scans (phases) of it.
    pub scans: usize,
    /// Hot-set bytes (the phase's bytes).
    pub hot_bytes: u64,
    /// (level, mean misses per scan), L1D first.
    pub misses: Vec<(String, f64)>,
}

impl ScanRow {
    /// Mean misses per scan at `level` (0 when not modelled).
    pub fn at(&self, level: &str) -> f64 {
        self.misses.iter().find(|(l, _)| l == level).map_or(0.0, |m| m.1)
    }
}

/// The checkpoint variants the run has, in the kernel's order.
pub fn rows(d: &ModelData) -> Vec<ScanRow> {
    let levels = d.data_level_names();
    Bench::Checkpoint
        .variants()
        .iter()
        .filter_map(|&v| {
            let phases: Vec<_> = d.phases_of(v).collect();
            let first = phases.first()?;
            let n = phases.len() as f64;
            let misses = levels.iter().map(|l| (l.clone(), phases.iter().map(|p| misses(p, l)).sum::<u64>() as f64 / n)).collect();
            Some(ScanRow { variant: v, scans: phases.len(), hot_bytes: first.parsed.bytes.unwrap_or(0), misses })
        })
        .collect()
}

/// The level the hot set fits: the first data level the model simulates at least as large as
/// it (L2 under the guest profile, L3 under `rpi5`), else the deepest.
fn hot_level(d: &ModelData, hot_bytes: u64) -> Option<String> {
    let levels = d.data_level_names();
    let fits = levels.iter().find(|l| d.geometry_of(l).is_some_and(|g| g.size >= hot_bytes));
    fits.or(levels.last()).cloned()
}

/// Lines of the hot set (the model's L1D line size; 64 bytes when unknown).
fn hot_lines(d: &ModelData, r: &ScanRow) -> u64 {
    let line = d.geometry_of("L1D").map_or(64, |g| g.line.max(1));
    r.hot_bytes / line
}

impl BenchView for View {
    fn bench(&self) -> Bench {
        Bench::Checkpoint
    }

    fn model_lines(&self, cx: &Digest<'_>) -> Vec<(&'static str, String)> {
        let d = cx.d;
        let rs = rows(d);
        let Some(first) = rs.first() else { return Vec::new() };
        let Some(level) = hot_level(d, first.hot_bytes) else { return Vec::new() };
        let parts: Vec<String> = rs.iter().map(|r| format!("{} {:.0}", r.variant, r.at(&level))).collect();
        vec![(Bench::Checkpoint.name(), format!("(model, {level} misses/scan of {} hot lines) {}", hot_lines(d, first), parts.join(", ")))]
    }

    fn model_figures(&self, cx: &mut Draw<'_>) {
        let d = cx.d;
        let rs = rows(d);
        let Some(first) = rs.first() else { return };
        let levels: Vec<String> = cx.levels.iter().filter(|l| *l != "L1D").cloned().collect();
        let series = levels.iter().map(|l| (format!("{l} misses per scan"), rs.iter().map(|r| Some(r.at(l))).collect())).collect();
        let chart = BarChart {
            labels: cx.labels("checkpoint: hot-set misses per scan after each way of writing [model]", "variant", "misses per scan (mean)"),
            categories: rs.iter().map(|r| r.variant.name().to_string()).collect(),
            series,
        };
        cx.figure(
            "model-checkpoint".into(),
            format!(
                "Checkpoint pollution (bench checkpoint, seed pitfall 5.5) under the cache model: a {} KiB hot set ({} lines, one load per line) scanned after each streaming write, the write done with plain STP, STNP, through a write-back transient window (MAIR 0x77), through a write-back no-write-allocate window (0xee), or with DC CIVAC of every written chunk; no-write is the scan alone. Bars: mean misses per scan over {} scans. {MODEL_SOURCE}.",
                first.hot_bytes >> 10,
                hot_lines(d, first),
                first.scans
            ),
            chart,
        );
    }

    fn model_checks(&self, _run: &[Record], d: &ModelData) -> Vec<(bool, String)> {
        let rs = rows(d);
        let get = |v: Variant| rs.iter().find(|r| r.variant == v);
        let (Some(plain), Some(base)) = (get(Variant::PlainStp), get(Variant::NoWrite)) else { return Vec::new() };
        let Some(level) = hot_level(d, plain.hot_bytes) else { return Vec::new() };
        let lines = hot_lines(d, plain) as f64;
        let mut f = vec![(
            plain.at(&level) > 0.5 * lines,
            format!(
                "checkpoint: plain STP writes leave {:.0} {level} misses per scan of {lines:.0} hot lines: the write evicts the hot set",
                plain.at(&level)
            ),
        )];
        for v in [Variant::TransientWindow, Variant::NwaWindow] {
            if let Some(r) = get(v) {
                f.push((
                    r.at(&level) <= base.at(&level) + 0.1 * lines,
                    format!(
                        "checkpoint: {v} leaves {:.0} {level} misses per scan (no-write {:.0}, plain {:.0}): the hot set survives",
                        r.at(&level),
                        base.at(&level),
                        plain.at(&level)
                    ),
                ));
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Log;

    /// Two scans per variant of a 4096-line hot set: (variant, L2 misses of each scan).
    fn data(l2: &[(&str, [u64; 2])]) -> (Vec<Record>, ModelData) {
        let mut t = String::from(concat!(
            "# cs: {\"record\":\"model-geometry\",\"level\":\"L1D\",\"size\":32768,\"line\":64,\"sets\":128,\"ways\":4,\"sharing\":\"private\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n",
            "# cs: {\"record\":\"model-geometry\",\"level\":\"L2\",\"size\":262144,\"line\":64,\"sets\":256,\"ways\":16,\"sharing\":\"shared\",\"policy\":\"lru\",\"origin\":\"guest\",\"vcpus\":1,\"source\":\"model\"}\n",
        ));
        let mut id = 0;
        for (v, scans) in l2 {
            for m in scans {
                id += 1;
                let ph = format!("checkpoint/{v}/normal-wb/262144/write=524288");
                for (level, misses) in [("L1D", 4096), ("L2", *m)] {
                    t += &format!("# cs: {{\"record\":\"model\",\"phase\":\"{ph}\",\"phase_id\":{id},\"level\":\"{level}\",\"accesses\":4096,\"hits\":{},\"misses\":{misses},\"writebacks\":0,\"maint\":0,\"bypass\":0,\"source\":\"model\"}}\n", 4096 - misses);
                }
            }
        }
        let recs = crate::records::extract(&Log::from_bytes("m", t.as_bytes())).0;
        let d = ModelData::from_records(&recs);
        (recs, d)
    }

    #[test]
    fn misses_per_scan_and_the_checks() {
        let (recs, d) =
            data(&[("no-write", [10, 20]), ("plain-stp", [4096, 4096]), ("transient-window", [100, 120]), ("nwa-window", [12, 14])]);
        let rs = rows(&d);
        assert_eq!(
            rs.iter().map(|r| r.variant).collect::<Vec<_>>(),
            [Variant::NoWrite, Variant::PlainStp, Variant::TransientWindow, Variant::NwaWindow]
        );
        assert_eq!((rs[2].scans, rs[2].at("L2"), rs[2].hot_bytes), (2, 110.0, 262144));
        let checks = View.model_checks(&recs, &d);
        assert_eq!(checks.len(), 3);
        assert!(checks.iter().all(|c| c.0), "{checks:?}");
        let inf = crate::model_data::infer(&recs, &d);
        let line = &View.model_lines(&Digest { run: &recs, d: &d, inf: &inf })[0].1;
        assert_eq!(line, "(model, L2 misses/scan of 4096 hot lines) no-write 15, plain-stp 4096, transient-window 110, nwa-window 13");
        // A transient window that loses the hot set, and plain stores that keep it, fail.
        let (recs, d) = data(&[("no-write", [10, 20]), ("plain-stp", [30, 30]), ("transient-window", [4096, 4096])]);
        let checks = View.model_checks(&recs, &d);
        assert_eq!(checks.iter().map(|c| c.0).collect::<Vec<_>>(), [false, false], "{checks:?}");
    }
}
