//! Allocation as MAIR says (rules 1a-1c): no-write-allocate and no-read-allocate misses fill
//! nothing, transient lines are their set's next victim. Each case runs on the model and on the
//! reference simulator (its own implementation) and checks both.

use super::{lines, rpi4, run_both as run, BASE, WB};
use crate::hierarchy::{Attr, Level, Model};
use crate::reference::RefModel;

/// The Pi 4 L1D is 32 KiB: a 16 KiB hot set is read, then 256 KiB are written through a
/// no-write-allocate window, then the hot set is read again. The write fills nothing (no L1D or
/// L2 allocation: its misses go to memory), so the second scan hits L1D on every line, while the
/// same write through a write-allocate window evicts the hot set.
#[test]
fn no_write_allocate_stream_leaves_the_hot_set() {
    let h = rpi4();
    for (attr, hot_misses) in [(Attr::NormalWriteBackNoWriteAllocate, 0), (WB, 256)] {
        let mut m = Model::new(&h, 1);
        let mut r = RefModel::new(&h, 1);
        run(lines(BASE, (16 << 10) / 64, false, WB), &mut m, &mut r);
        run(lines(BASE + (8 << 20), (256 << 10) / 64, true, attr), &mut m, &mut r);
        let t0 = m.totals();
        let t1 = run(lines(BASE, (16 << 10) / 64, false, WB), &mut m, &mut r);
        let misses = t1.get(Level::L1D).misses - t0.get(Level::L1D).misses;
        assert_eq!(misses, hot_misses, "{attr:?}: L1D misses of the hot set's second scan");
        if attr == Attr::NormalWriteBackNoWriteAllocate {
            assert_eq!(
                t0.served[crate::hierarchy::SERVED_MEMORY] - (16 << 10) / 64,
                (256 << 10) / 64,
                "every streamed write went to memory"
            );
        }
    }
}

/// A read through a no-read-allocate window misses every time (nothing fills); a write through
/// it allocates (write-allocate), after which its reads hit.
#[test]
fn no_read_allocate_reads_do_not_fill() {
    let h = rpi4();
    let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
    let t = run((0..4).flat_map(|_| lines(BASE, 8, false, Attr::NormalWriteBackNoReadAllocate)), &mut m, &mut r);
    assert_eq!((t.get(Level::L1D).misses, t.get(Level::L1D).hits), (32, 0));
    let t0 = run(lines(BASE, 8, true, Attr::NormalWriteBackNoReadAllocate), &mut m, &mut r);
    let t1 = run(lines(BASE, 8, false, Attr::NormalWriteBackNoReadAllocate), &mut m, &mut r);
    assert_eq!(t1.get(Level::L1D).hits - t0.get(Level::L1D).hits, 8, "written lines were allocated and now hit");
}

/// Transient lines are their set's next victim: a hot set filling one way of every L1D set
/// (the Pi 4's 2-way, 256-set L1D: 16 KiB) survives a 64 KiB scan through a transient window,
/// whose lines evict each other; a plain write-back scan evicts it.
#[test]
fn transient_scan_evicts_itself_first() {
    let h = rpi4();
    for (attr, survives) in [(Attr::NormalWriteBackTransient, true), (Attr::NormalWriteThroughTransient, true), (WB, false)] {
        let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
        run(lines(BASE, 256, false, WB), &mut m, &mut r);
        run(lines(BASE + (8 << 20), 1024, false, attr), &mut m, &mut r);
        let t0 = m.totals();
        let t1 = run(lines(BASE, 256, false, WB), &mut m, &mut r);
        let misses = t1.get(Level::L1D).misses - t0.get(Level::L1D).misses;
        assert_eq!(misses == 0, survives, "{attr:?}: {misses} hot-set misses");
    }
}

/// Rule 1c below L1: a transient line is its set's next victim in L2 too. A hot set filling
/// half of every L2 set (512 KiB of the Pi 4's 1 MiB 16-way L2) survives in L2 a 2 MiB write
/// through a transient window (the write's lines evict each other), and the same write through
/// a plain write-back window evicts it. The checkpoint-pollution benchmark's rule.
#[test]
fn transient_write_leaves_an_l2_hot_set() {
    let h = rpi4();
    let hot = (512 << 10) / 64;
    for (attr, hot_l2_misses) in [(Attr::NormalWriteBackTransient, 0), (Attr::NormalWriteThroughTransient, 0), (WB, hot)] {
        let (mut m, mut r) = (Model::new(&h, 1), RefModel::new(&h, 1));
        run(lines(BASE, hot, false, WB).chain(lines(BASE, hot, false, WB)), &mut m, &mut r);
        run(lines(BASE + (8 << 20), (2 << 20) / 64, true, attr), &mut m, &mut r);
        let t0 = m.totals();
        let t1 = run(lines(BASE, hot, false, WB), &mut m, &mut r);
        let misses = t1.get(Level::L2).misses - t0.get(Level::L2).misses;
        assert_eq!(misses, hot_l2_misses, "{attr:?}: L2 misses of the hot set's scan after the write");
    }
}
