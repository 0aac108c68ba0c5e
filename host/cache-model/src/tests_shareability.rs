//! Rule 16b (`non-shareable-shared`): two cores whose shareability domains for a line do not
//! include each other caching it at once — found, and not found on correct sequences.

use super::*;
use crate::hierarchy::Shareability::{self, Inner, Non, Outer};
use crate::sanitize::{Event, HazardKind::NonShareableShared};

fn two_cores() -> Model {
    let mut m = Model::new(&rpi4(), 2);
    m.enable_sanitizer(false, false);
    m
}

fn access(m: &mut Model, cpu: usize, pa: u64, write: bool, share: Shareability, pc: u64) {
    m.data_in_domain(cpu, pa, 8, write, WB, Hint { pc, nt: false }, share, false);
}

fn events(m: &mut Model) -> Vec<(crate::sanitize::HazardKind, u64, &'static str, &'static str, u64)> {
    m.take_events()
        .into_iter()
        .map(|Event { kind, pa, access, cause, cause_pc, .. }| (kind, pa, access.name(), cause.name(), cause_pc))
        .collect()
}

#[test]
fn a_non_shareable_copy_then_another_cores_read_is_reported() {
    let mut m = two_cores();
    access(&mut m, 0, BASE + 8, false, Non, 0x100);
    assert!(events(&mut m).is_empty(), "one copy: nothing yet");
    access(&mut m, 1, BASE + 16, false, Inner, 0x200);
    assert_eq!(events(&mut m), [(NonShareableShared, BASE, "read", "non-shareable-copy", 0x100)]);
    // A second line, by a write this time: the other core's copy is reported at the write.
    access(&mut m, 0, BASE + 64, false, Non, 0x104);
    access(&mut m, 1, BASE + 64, true, Outer, 0x204);
    assert_eq!(events(&mut m), [(NonShareableShared, BASE + 64, "write", "non-shareable-copy", 0x104)]);
}

#[test]
fn a_non_shareable_access_to_a_line_another_core_holds_is_reported() {
    let mut m = two_cores();
    access(&mut m, 1, BASE, false, Inner, 0x200);
    access(&mut m, 0, BASE, false, Non, 0x100);
    assert_eq!(events(&mut m), [(NonShareableShared, BASE, "read", "copy-elsewhere", 0)]);
}

#[test]
fn correct_sequences_are_silent() {
    let mut m = two_cores();
    // Every mapping shareable: the cores' copies are coherent.
    for (cpu, share) in [(0, Inner), (1, Inner), (0, Outer), (1, Outer)] {
        access(&mut m, cpu, BASE, true, share, 0x10);
    }
    // A Non-shareable buffer used by one core only.
    for _ in 0..3 {
        access(&mut m, 0, BASE + 0x1000, true, Non, 0x20);
    }
    // Handed to the other core after a clean and invalidate to PoC: no copy is left.
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE + 0x1000);
    access(&mut m, 1, BASE + 0x1000, false, Inner, 0x30);
    // Core 0's copy refilled through a shareable mapping is no longer Non-shareable.
    access(&mut m, 0, BASE + 0x2000, false, Non, 0x40);
    m.dc_by_pa(0, LineOp::CleanInvalidate, Point::Coherency, BASE + 0x2000);
    access(&mut m, 0, BASE + 0x2000, false, Inner, 0x44);
    access(&mut m, 1, BASE + 0x2000, false, Inner, 0x48);
    assert!(events(&mut m).is_empty());
    // One core: no other domain; no sanitizer: nothing judged.
    let mut one = Model::new(&rpi4(), 1);
    one.enable_sanitizer(false, false);
    access(&mut one, 0, BASE, false, Non, 0x10);
    access(&mut one, 0, BASE, true, Inner, 0x14);
    assert!(events(&mut one).is_empty());
    let mut quiet = Model::new(&rpi4(), 2);
    access(&mut quiet, 0, BASE, false, Non, 0x10);
    access(&mut quiet, 1, BASE, false, Inner, 0x14);
    assert!(events(&mut quiet).is_empty());
}

#[test]
fn shareability_never_changes_the_counts() {
    let h = small(Policy::Lru, Sharing::Private, true);
    let (mut a, mut b) = (Model::new(&h, 2), Model::new(&h, 2));
    b.enable_sanitizer(false, false);
    let mut rng = 11;
    let mut found = 0;
    for _ in 0..40_000 {
        if let Op::Data { cpu, pa, size, write, attr, pc, nt } = random_op(&mut rng, 2, 8 << 10, false) {
            let share = [Inner, Outer, Non][(pc >> 2) as usize % 3];
            a.data_hint(cpu, pa, size, write, attr, Hint { pc, nt });
            b.data_in_domain(cpu, pa, size, write, attr, Hint { pc, nt }, share, false);
            found += b.take_events().iter().filter(|e| e.kind == NonShareableShared).count();
        }
    }
    assert_eq!(a.totals(), b.totals());
    assert_eq!(a.coherence(), b.coherence());
    assert!(found > 0, "random Non-shareable accesses by two cores meet");
}
