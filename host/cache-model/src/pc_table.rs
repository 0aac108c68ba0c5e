//! The per-PC table (`pc_table=N`): the L1D misses, L2 misses and L1D write-backs each load or
//! store's demand accesses caused, written at exit as up to N `model-pc` records, most first,
//! and one `rest` record summing the PCs past the bound (`cachescope-xtask observe` folds them
//! per function after symbolisation, as cg_annotate does).
//!
//! Cheap by construction: the plugin reads the model's three counters before and after a model
//! call (the shortcut's L1D hits never reach the model and never miss) and touches the table
//! only when one moved, so a hash lookup is paid per miss or write-back, not per access.

use std::collections::HashMap;

use cachescope_arch::record;

use crate::model_records::{line, SOURCE};

/// Counts per PC: L1D misses, L2 misses, L1D write-backs.
pub type PcCounts = [u64; 3];

/// The table.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PcTable {
    rows: HashMap<u64, PcCounts>,
}

/// `after - before` per counter (the counters only grow; a model rebuilt with carried counters
/// keeps them).
#[inline]
pub fn delta(before: PcCounts, after: PcCounts) -> PcCounts {
    [after[0].wrapping_sub(before[0]), after[1].wrapping_sub(before[1]), after[2].wrapping_sub(before[2])]
}

impl PcTable {
    /// Adds `d` to `pc`'s row (nothing when `d` is all zero).
    #[inline]
    pub fn add(&mut self, pc: u64, d: PcCounts) {
        if d != [0; 3] {
            let r = self.rows.entry(pc).or_default();
            for (sum, n) in r.iter_mut().zip(d) {
                *sum = sum.wrapping_add(n);
            }
        }
    }

    /// PCs with a row.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No PC has a row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows, most first: by the sum of the three counts, then by L1D misses, then by PC
    /// (a deterministic order).
    pub fn sorted(&self) -> Vec<(u64, PcCounts)> {
        let mut v: Vec<(u64, PcCounts)> = self.rows.iter().map(|(&pc, &c)| (pc, c)).collect();
        let key = |c: &PcCounts| c[0].saturating_add(c[1]).saturating_add(c[2]);
        v.sort_unstable_by(|a, b| key(&b.1).cmp(&key(&a.1)).then(b.1[0].cmp(&a.1[0])).then(a.0.cmp(&b.0)));
        v
    }

    /// The `model-pc` records: at most `limit` rows, then one `rest` row when more PCs had any.
    pub fn lines(&self, limit: usize) -> String {
        let v = self.sorted();
        let row = |pc: u64, pcs: u64, rest: bool, c: PcCounts| {
            line(record::ModelPc::new().pc(pc).pcs(pcs).rest(rest).l1d_misses(c[0]).l2_misses(c[1]).writebacks(c[2]).source(SOURCE))
        };
        let mut out: String = v.iter().take(limit).map(|&(pc, c)| row(pc, 1, false, c)).collect();
        if v.len() > limit {
            let mut sum = [0u64; 3];
            for (_, c) in &v[limit..] {
                for (s, n) in sum.iter_mut().zip(c) {
                    *s = s.wrapping_add(*n);
                }
            }
            out += &row(0, (v.len() - limit) as u64, true, sum);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_is_checked() {
        use crate::config::{Settings, PC_TABLE_MAX};
        assert_eq!(Settings::default().pc_table, 0, "off unless asked for");
        assert_eq!(Settings::parse(&["pc_table=2000"]).unwrap().pc_table, 2000);
        assert_eq!(Settings::parse(&["pc_table=0"]).unwrap().pc_table, 0);
        let max = format!("pc_table={PC_TABLE_MAX}");
        assert_eq!(Settings::parse(&[max.as_str()]).unwrap().pc_table, PC_TABLE_MAX);
        for bad in ["pc_table=10001", "pc_table=-1", "pc_table=x", "pc_table=", "pc_table=012"] {
            let e = Settings::parse(&[bad]).unwrap_err();
            assert!(e.starts_with("bad value") && e.ends_with("for 'pc_table': expected an integer in 0..=10000"), "{bad}: {e}");
        }
    }

    #[test]
    fn rows_add_up_and_zero_deltas_add_no_row() {
        let mut t = PcTable::default();
        t.add(0x1000, [1, 0, 0]);
        t.add(0x1000, [2, 1, 1]);
        t.add(0x2000, [0, 0, 0]);
        assert_eq!(t.len(), 1);
        assert_eq!(t.sorted(), vec![(0x1000, [3, 1, 1])]);
        assert_eq!(delta([5, 2, 1], [7, 2, 4]), [2, 0, 3]);
    }

    #[test]
    fn the_table_is_bounded_most_first_with_a_rest_row() {
        let mut t = PcTable::default();
        for k in 0..5u64 {
            t.add(0x4000 + 4 * k, [k + 1, 0, k]);
        }
        // A tie on the sum: more L1D misses first, then the lower PC.
        t.add(0x3000, [0, 5, 0]);
        let text = t.lines(2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            r##"# cs: {"record":"model-pc","pc":"0x4010","pcs":1,"rest":false,"l1d_misses":5,"l2_misses":0,"writebacks":4,"source":"model"}"##
        );
        assert!(lines[1].contains(r#""pc":"0x400c","pcs":1,"rest":false,"l1d_misses":4"#), "{}", lines[1]);
        // The rest: 0x4008 (3+2), 0x3000 (5), 0x4004 (2+1), 0x4000 (1+0).
        assert_eq!(
            lines[2],
            r##"# cs: {"record":"model-pc","pc":"0x0","pcs":4,"rest":true,"l1d_misses":6,"l2_misses":5,"writebacks":3,"source":"model"}"##
        );
        assert_eq!(t.lines(10).lines().count(), 6, "no rest row when everything fits");
        assert_eq!(PcTable::default().lines(10), "");
    }
}
