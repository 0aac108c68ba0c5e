//! The TLB model (`tlb.rs`) against an independent reference: a list of entries per TLB kept in
//! recency order (most recent first), with its own entry-size rule, on random traces of lookups
//! and invalidations over one and several vCPUs.

use crate::tlb::{Side, TlbCounts, TlbGeometry, TlbShape, TlbiScope, Tlbs};

/// A reference TLB: per set a Vec of (VA base, size, regime), most recent first.
struct RefTlb {
    sets: u64,
    ways: usize,
    lists: Vec<Vec<(u64, u32, u8)>>,
    sizes: Vec<u32>,
}

impl RefTlb {
    fn new(s: &TlbShape) -> Self {
        let sets = u64::from(s.entries / s.ways);
        Self { sets, ways: s.ways as usize, lists: vec![Vec::new(); sets as usize], sizes: s.sizes.to_vec() }
    }

    fn size_for(&self, mapping: u32) -> u32 {
        // The largest stored size not above the mapping's, scanning down from the mapping.
        (12..=mapping).rev().find(|s| self.sizes.contains(s)).unwrap_or(12)
    }

    fn access(&mut self, va: u64, mapping: u32, regime: u8) -> bool {
        let size = self.size_for(mapping);
        let base = va / (1u64 << size) * (1u64 << size);
        let set = ((va >> size) % self.sets) as usize;
        let list = &mut self.lists[set];
        if let Some(i) = list.iter().position(|&(b, s, r)| b == base && s == size && r == regime) {
            let e = list.remove(i);
            list.insert(0, e);
            return true;
        }
        false
    }

    fn fill(&mut self, va: u64, mapping: u32, regime: u8) {
        let size = self.size_for(mapping);
        let base = va / (1u64 << size) * (1u64 << size);
        let set = ((va >> size) % self.sets) as usize;
        let list = &mut self.lists[set];
        if list.len() == self.ways {
            list.pop();
        }
        list.insert(0, (base, size, regime));
    }

    fn invalidate(&mut self, scope: TlbiScope) {
        let mask = (1u64 << 56) - 1;
        for l in &mut self.lists {
            l.retain(|&(b, s, _)| match scope {
                TlbiScope::All => false,
                TlbiScope::Va(va) => (b & mask) != (va & mask) / (1u64 << s) * (1u64 << s),
            });
        }
    }
}

struct RefCore {
    l1i: RefTlb,
    l1d: RefTlb,
    l2: RefTlb,
}

struct Reference {
    cores: Vec<RefCore>,
    c: TlbCounts,
}

impl Reference {
    fn new(g: &TlbGeometry, n: usize) -> Self {
        let cores = (0..n).map(|_| RefCore { l1i: RefTlb::new(&g.l1i), l1d: RefTlb::new(&g.l1d), l2: RefTlb::new(&g.l2) }).collect();
        Self { cores, c: TlbCounts::default() }
    }

    fn lookup(&mut self, cpu: usize, side: Side, va: u64, regime: u8, mapping: u32, levels: u8) {
        let core = &mut self.cores[cpu];
        let data = side == Side::Data;
        let l1 = if data { &mut core.l1d } else { &mut core.l1i };
        if l1.access(va, mapping, regime) {
            if data {
                self.c.l1d_hits += 1
            } else {
                self.c.l1i_hits += 1
            }
            return;
        }
        if data {
            self.c.l1d_misses += 1
        } else {
            self.c.l1i_misses += 1
        }
        l1.fill(va, mapping, regime);
        if core.l2.access(va, mapping, regime) {
            self.c.l2_hits += 1;
            if data {
                self.c.data_l2_hits += 1;
            }
        } else {
            self.c.l2_misses += 1;
            if data {
                self.c.data_walks += 1;
                self.c.data_walk_levels += u64::from(levels);
            }
            core.l2.fill(va, mapping, regime);
        }
    }
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn run(profile: &str, vcpus: usize, seed: u64, steps: usize) {
    let g = TlbGeometry::profile(profile).unwrap();
    let mut model = Tlbs::new(g.clone(), vcpus);
    let mut reference = Reference::new(&g, vcpus);
    let mut s = seed;
    for step in 0..steps {
        let r = xorshift(&mut s);
        let cpu = (r >> 8) as usize % vcpus;
        // Pages of a 64 MiB range with 4 KiB pages, then a 512 MiB range of 2 MiB blocks, and a
        // high (TTBR1) range of 1 GiB blocks; a hot set to make hits.
        let (va, mapping, levels) = match r % 8 {
            0..=2 => (0x4000_0000 + (r >> 20) % (1 << 14) * 4096 + (r >> 40) % 4096, 12, 4),
            3 | 4 => (0x8000_0000 + (r >> 20) % (1 << 29), 21, 3),
            5 => (0xffff_0000_0000_0000 + (r >> 20) % (1 << 33), 30, 2),
            _ => (0x4000_0000 + (r >> 20) % 64 * 4096, 12, 4),
        };
        let regime = u8::from((r >> 50).is_multiple_of(3));
        match (r >> 56) % 64 {
            0 => {
                let broadcast = r & 1 == 1;
                model.invalidate(cpu, TlbiScope::All, broadcast);
                for (k, c) in reference.cores.iter_mut().enumerate() {
                    if broadcast || k == cpu {
                        c.l1i.invalidate(TlbiScope::All);
                        c.l1d.invalidate(TlbiScope::All);
                        c.l2.invalidate(TlbiScope::All);
                    }
                }
            }
            1..=3 => {
                let broadcast = r & 1 == 1;
                model.invalidate(cpu, TlbiScope::Va(va), broadcast);
                for (k, c) in reference.cores.iter_mut().enumerate() {
                    if broadcast || k == cpu {
                        c.l1i.invalidate(TlbiScope::Va(va));
                        c.l1d.invalidate(TlbiScope::Va(va));
                        c.l2.invalidate(TlbiScope::Va(va));
                    }
                }
            }
            n => {
                let side = if n.is_multiple_of(4) { Side::Instruction } else { Side::Data };
                model.lookup(cpu, side, va, regime, mapping, levels);
                reference.lookup(cpu, side, va, regime, mapping, levels);
            }
        }
        assert_eq!(model.counts(), reference.c, "{profile}, {vcpus} vCPUs, seed {seed}: differs after step {step}");
    }
    assert!(reference.c.l1d_hits > 0 && reference.c.l2_hits > 0 && reference.c.l2_misses > 0, "the trace exercises every outcome");
}

#[test]
fn random_traces_agree_with_the_reference() {
    for seed in [1, 7, 0x1234_5678, 99] {
        run("rpi4", 1, seed, 40_000);
        run("rpi5", 1, seed, 40_000);
        run("rpi5", 3, seed, 40_000);
    }
}

#[test]
fn the_latency_curve_rises_past_tlb_reach() {
    // A chase over `bytes` of 4 KiB pages, one access per 64-byte line in a random-ish order:
    // within the L1 data TLB's reach no miss after the first pass; beyond the L2 TLB's reach a
    // walk per page touched.
    let g = TlbGeometry::profile("rpi5").unwrap();
    let misses = |bytes: u64| {
        let mut t = Tlbs::new(g.clone(), 1);
        let lines = bytes / 64;
        let pass = |t: &mut Tlbs| {
            for i in 0..lines {
                let line = i.wrapping_mul(0x9e37_79b9) % lines;
                t.lookup(0, Side::Data, 0x4000_0000 + line * 64, 1, 12, 4);
            }
        };
        pass(&mut t);
        let before = t.counts();
        pass(&mut t);
        t.counts() - before
    };
    let small = misses(48 * 4096);
    assert_eq!(small.l1d_misses, 0, "48 pages: the A76's 48-entry L1 data TLB holds them");
    let mid = misses(1024 * 4096);
    assert!(mid.l1d_misses > 0 && mid.l2_misses == 0, "4 MiB: L1 TLB misses, all L2 TLB hits: {mid:?}");
    let big = misses(16 << 20);
    assert!(big.data_walks > big.l1d_misses / 2, "16 MiB (4096 pages, past 1280 L2 entries): mostly walks: {big:?}");
    assert!(g.cycles(&big) / (16 << 14) > g.cycles(&mid) / (1 << 16), "the cost per access rises");
}

#[test]
fn the_guest_profile_models_no_tlb_and_tlb_on_needs_a_profile() {
    use crate::config::Settings;
    assert!(Settings::parse(&["profile=rpi5"]).unwrap().tlb_geometry().is_some());
    assert!(Settings::parse(&["profile=rpi5", "tlb=off"]).unwrap().tlb_geometry().is_none());
    assert!(Settings::parse::<&str>(&[]).unwrap().tlb_geometry().is_none(), "guest: off");
    let e = Settings::parse(&["tlb=on"]).unwrap_err();
    assert!(e.contains("tlb=on needs a profile"), "{e}");
    assert!(Settings::parse(&["profile=rpi4", "tlb=maybe"]).unwrap_err().contains("bad value 'maybe' for 'tlb'"));
    assert!(Settings::parse(&["profile=rpi4", "tlb_pages=2m"]).unwrap_err().contains("expected mapping or 4k"));
}
