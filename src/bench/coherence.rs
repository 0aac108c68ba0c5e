//! Coherence benchmarks across cores (the `smp` suite): a line bouncing between two cores
//! (ping-pong), false sharing, a cross-core single-producer single-consumer ring (a data
//! loader's worker → trainer queue), an NCCL-shaped ring all-reduce, and broadcast maintenance
//! (DC CIVAC on lines another core holds, TLBI VAE1IS vs VAE1, IC IALLUIS vs IALLU).
//!
//! Every figure is timed on the boot core through [`super::measure`] (one cache-model phase per
//! metric) while the other cores run their side as an SMP-harness job in lock-step with it: the
//! other side loops exactly `warmup + reps` times, one iteration per measured window. Windows
//! that need the cores in step start and end with a barrier; that hand-shake is part of the
//! window and is measured on its own (`bcast/handshake`) where it matters.
//!
//! Every spin-wait has a deadline, so a core that stops answering ends the benchmark with an
//! error instead of a hang.

/// Which chunk rank `rank` of `n` works on at `step` of a ring all-reduce (NCCL's ring
/// algorithm): steps `0..n-1` are the reduce-scatter (add the left neighbour's chunk into
/// one's own), steps `n-1..2(n-1)` the all-gather (copy the left neighbour's finished chunk).
/// After the reduce-scatter rank r holds the complete sum of chunk (r + 1) mod n.
pub const fn allreduce_chunk(n: usize, rank: usize, step: usize) -> (bool, usize) {
    if step < n - 1 {
        (true, (rank + 2 * n - step - 1) % n)
    } else {
        (false, (rank + 2 * n - (step - (n - 1))) % n)
    }
}

/// Bytes one all-reduce moves between neighbours: every rank reads one chunk per step,
/// 2 (n − 1) steps.
pub const fn allreduce_bytes(n: usize, chunk_bytes: usize) -> u64 {
    (2 * (n.saturating_sub(1)) * n * chunk_bytes) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Plays the schedule with one buffer per rank (pulling from the left neighbour, as the
    /// kernel does, with the step's reads done before its writes as the barrier guarantees).
    #[test]
    fn ring_schedule_reduces_everything_everywhere() {
        for n in 1..=8usize {
            let chunk = 3;
            let mut bufs: Vec<Vec<u64>> = (0..n).map(|r| (0..n * chunk).map(|j| ((r + 1) * (j + 7)) as u64).collect()).collect();
            let want: Vec<u64> = (0..n * chunk).map(|j| (0..n).map(|r| ((r + 1) * (j + 7)) as u64).sum()).collect();
            for step in 0..2 * (n - 1) {
                let snapshot = bufs.clone();
                let mut touched = std::collections::HashSet::new();
                for rank in 0..n {
                    let left = (rank + n - 1) % n;
                    let (reduce, c) = allreduce_chunk(n, rank, step);
                    // What a rank reads in a step is never what its left neighbour writes in it.
                    assert_ne!(allreduce_chunk(n, left, step).1, c, "n={n} step={step}: read/write race");
                    touched.insert(c);
                    for k in c * chunk..(c + 1) * chunk {
                        bufs[rank][k] = if reduce { snapshot[rank][k] + snapshot[left][k] } else { snapshot[left][k] };
                    }
                }
                assert_eq!(touched.len(), n, "every chunk moves at every step");
            }
            for b in &bufs {
                assert_eq!(b, &want, "n={n}");
            }
            assert_eq!(allreduce_bytes(n, 8), (2 * n.saturating_sub(1) * n * 8) as u64);
        }
    }
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use alloc::{format, string::String, sync::Arc, vec::Vec};
    use core::ptr::{read_volatile, write_volatile};

    use super::super::{measure, Env, Metric, MetricId, Unit};
    use super::super::{Notes, NO_NOTES};
    use super::{allreduce_bytes, allreduce_chunk};
    use crate::bench::stats::Summary;
    use crate::smp::{self, relax, Barrier, CoreError, Deadline, Sense};
    use cachescope_arch::bench::{Param, SmpBench, SmpVariant};
    use cachescope_arch::hw;

    /// A failure of one benchmark, as one line for the case's log.
    pub type Outcome = Result<(), String>;

    /// Waits until the u64 at `addr` equals `want`; false when the deadline passed first.
    #[inline(always)]
    fn wait_eq(addr: usize, want: u64, deadline: &Deadline) -> bool {
        let mut n = 0u32;
        loop {
            // SAFETY: `addr` is an aligned word of a mapped benchmark buffer.
            if unsafe { read_volatile(addr as *const u64) } == want {
                return true;
            }
            n = n.wrapping_add(1);
            if n.is_multiple_of(256) && deadline.expired() {
                return false;
            }
            relax();
        }
    }

    /// Waits until `cond()` holds; false when the deadline passed first.
    #[inline(always)]
    fn wait_for(deadline: &Deadline, mut cond: impl FnMut() -> bool) -> bool {
        let mut n = 0u32;
        while !cond() {
            n = n.wrapping_add(1);
            if n.is_multiple_of(256) && deadline.expired() {
                return false;
            }
            relax();
        }
        true
    }

    #[inline(always)]
    fn load(addr: usize) -> u64 {
        // SAFETY: callers pass aligned words of mapped benchmark buffers.
        unsafe { read_volatile(addr as *const u64) }
    }

    #[inline(always)]
    fn store(addr: usize, v: u64) {
        // SAFETY: callers pass aligned words of mapped benchmark buffers they own.
        unsafe { write_volatile(addr as *mut u64, v) }
    }

    /// Turns per-core outcomes into one error line naming every core that failed.
    fn gather<T>(what: &str, results: Vec<(usize, Result<T, CoreError>)>) -> Result<Vec<(usize, T)>, String> {
        let mut ok = Vec::new();
        let mut bad = String::new();
        for (core, r) in results {
            match r {
                Ok(v) => ok.push((core, v)),
                Err(e) => bad.push_str(&format!("{}core {core}: {e}", if bad.is_empty() { "" } else { "; " })),
            }
        }
        if bad.is_empty() {
            Ok(ok)
        } else {
            Err(format!("{what}: {bad}"))
        }
    }

    fn emit(env: &Env, id: MetricId, summary: Summary, work: u64, unit: Unit, notes: Notes<'_>) -> u64 {
        Metric { id, summary, work, unit, notes }.emit(env);
        summary.median
    }

    /// How one ping-pong hand-over writes the line.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum PingOp {
        /// A plain store (STR).
        Plain,
        /// LDXR / STXR (retried until the store-exclusive succeeds).
        Exclusive,
        /// LDADD (FEAT_LSE), one far atomic.
        Ldadd,
    }

    impl PingOp {
        /// Every variant.
        pub const ALL: [Self; 3] = [Self::Plain, Self::Exclusive, Self::Ldadd];

        /// Its variant of the `pingpong` benchmark.
        pub const fn variant(self) -> SmpVariant {
            match self {
                Self::Plain => SmpVariant::Plain,
                Self::Exclusive => SmpVariant::LdxrStxr,
                Self::Ldadd => SmpVariant::Ldadd,
            }
        }

        /// Variant name in records.
        pub const fn name(self) -> &'static str {
            self.variant().name()
        }

        /// Adds 1 to the word at `addr` this way.
        #[inline(always)]
        fn bump(self, addr: usize, known: u64) {
            match self {
                Self::Plain => store(addr, known + 1),
                // SAFETY: an exclusive increment of an aligned word of a mapped buffer.
                Self::Exclusive => unsafe {
                    core::arch::asm!(
                        "2: ldxr {v}, [{a}]",
                        "add {v}, {v}, #1",
                        "stxr {s:w}, {v}, [{a}]",
                        "cbnz {s:w}, 2b",
                        a = in(reg) addr, v = out(reg) _, s = out(reg) _,
                        options(nostack)
                    )
                },
                // SAFETY: LDADD of an aligned word of a mapped buffer; only called when
                // ID_AA64ISAR0_EL1.Atomic reports FEAT_LSE.
                Self::Ldadd => unsafe {
                    core::arch::asm!(
                        ".arch_extension lse",
                        "ldadd {one}, {old}, [{a}]",
                        a = in(reg) addr, one = in(reg) 1u64, old = out(reg) _,
                        options(nostack)
                    )
                },
            }
        }
    }

    /// FEAT_LSE: ID_AA64ISAR0_EL1.Atomic ≥ 0b0010.
    pub fn has_lse() -> bool {
        use tock_registers::interfaces::Readable;
        cachescope_arch::sysreg::ID_AA64ISAR0_EL1.read(cachescope_arch::sysreg::ID_AA64ISAR0_EL1::Atomic) >= 2
    }

    /// Ping-pong: the boot core and `peer` alternately bump the word at `line` (`iters` round
    /// trips per window; each round trip is two hand-overs of the line's ownership). Returns the
    /// median window in timer counts.
    #[allow(clippy::too_many_arguments)]
    pub fn pingpong(
        env: &Env,
        attr: &'static str,
        line: usize,
        line_bytes: u64,
        peer: usize,
        op: PingOp,
        iters: u64,
        timeout_ms: u64,
    ) -> Result<u64, String> {
        store(line, 0);
        hw::dsb_sy();
        let total = (env.warmup + env.reps) as u64;
        let job = smp::launch(&[peer], move |_| {
            let deadline = Deadline::after_ms(timeout_ms);
            for m in 0..total * iters {
                if !wait_eq(line, 2 * m + 1, &deadline) {
                    return Err(m);
                }
                op.bump(line, 2 * m + 1);
            }
            Ok(())
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let mut round = 0u64;
        let mut stuck = None;
        let params = [(Param::Iters.name(), iters), (Param::Peer.name(), peer as u64)];
        let id = MetricId { bench: SmpBench::Pingpong.name(), variant: op.name(), attr, bytes: line_bytes, params: &params };
        let summary = measure(env, id, || {
            for _ in 0..iters {
                if stuck.is_some() || !wait_eq(line, 2 * round, &deadline) {
                    stuck.get_or_insert(round);
                    return;
                }
                op.bump(line, 2 * round);
                round += 1;
            }
            if !wait_eq(line, 2 * round, &deadline) {
                stuck.get_or_insert(round);
            }
        });
        let results = gather("pingpong peer", job.join(timeout_ms))?;
        if let Some(m) = stuck {
            return Err(format!("pingpong {}: boot core waited in vain at hand-over {m}", op.name()));
        }
        if let Some((core, Err(m))) = results.first() {
            return Err(format!("pingpong {}: core {core} waited in vain at hand-over {m}", op.name()));
        }
        let want = 2 * total * iters;
        if load(line) != want {
            return Err(format!("pingpong {}: the line holds {} after {want} increments", op.name(), load(line)));
        }
        Ok(emit(env, id, summary, iters, Unit::TimePerOp, &|m| m.handovers_per_op(2)))
    }

    /// The go / done hand-shake of a core-to-core pair of two secondaries: kernel memory, not a
    /// declared window, so the cache model counts its hand-overs apart from the benchmark
    /// line's (`buf_` counts).
    #[repr(C, align(128))]
    struct Handshake {
        go: u64,
        _pad: [u64; 15],
        done: u64,
    }

    static mut HANDSHAKE: Handshake = Handshake { go: 0, _pad: [0; 15], done: 0 };

    /// The addresses of the hand-shake's two words.
    fn handshake() -> (usize, usize) {
        // SAFETY: only the addresses are taken; the words are read and written volatile.
        unsafe { (core::ptr::addr_of!(HANDSHAKE.go) as usize, core::ptr::addr_of!(HANDSHAKE.done) as usize) }
    }

    /// Core-to-core latency of the ordered pair (`from`, `to`): the word at `line` handed back
    /// and forth, `from` writing first; `iters` round trips (two one-way hand-overs each) per
    /// window, timed by the boot core (core 0). With the boot core in the pair it plays its side
    /// in the window; with two secondaries it opens each window (`go`) and waits for `from`'s
    /// `done`: two hand-overs of the hand-shake's lines in the timed window, besides the 2 ×
    /// `iters` of the line. Returns the median window in timer counts.
    #[allow(clippy::too_many_arguments)]
    pub fn core_to_core(
        env: &Env,
        line: usize,
        line_bytes: u64,
        from: usize,
        to: usize,
        iters: u64,
        timeout_ms: u64,
    ) -> Result<u64, String> {
        let (go, done) = handshake();
        store(line, 0);
        store(go, 0);
        store(done, 0);
        hw::dsb_sy();
        let total = (env.warmup + env.reps) as u64;
        let rounds = total * iters;
        let others: Vec<usize> = [from, to].into_iter().filter(|&c| c != 0).collect();
        let job = smp::launch(&others, move |core| {
            let deadline = Deadline::after_ms(timeout_ms);
            if core == to {
                // The responder: every round, wait for `from`'s store, then answer.
                for m in 0..rounds {
                    if !wait_eq(line, 2 * m + 1, &deadline) {
                        return Err(2 * m + 1);
                    }
                    store(line, 2 * m + 2);
                }
                return Ok(());
            }
            if to == 0 {
                // `from` against the boot core, which answers in its windows.
                for m in 0..rounds {
                    if !wait_eq(line, 2 * m, &deadline) {
                        return Err(2 * m);
                    }
                    store(line, 2 * m + 1);
                }
                return Ok(());
            }
            // `from` against another secondary: one window per `go`, then `done`.
            for w in 0..total {
                if !wait_eq(go, w + 1, &deadline) {
                    return Err(u64::MAX);
                }
                for m in w * iters..(w + 1) * iters {
                    if !wait_eq(line, 2 * m, &deadline) {
                        return Err(2 * m);
                    }
                    store(line, 2 * m + 1);
                }
                if !wait_eq(line, 2 * (w + 1) * iters, &deadline) {
                    return Err(2 * (w + 1) * iters);
                }
                store(done, w + 1);
            }
            Ok(())
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let (mut round, mut window) = (0u64, 0u64);
        let mut stuck = None;
        let params = [(Param::Iters.name(), iters), (Param::From.name(), from as u64), (Param::To.name(), to as u64)];
        let id = MetricId {
            bench: SmpBench::C2c.name(),
            variant: SmpVariant::LineHandover.name(),
            attr: "normal-wb",
            bytes: line_bytes,
            params: &params,
        };
        let summary = measure(env, id, || {
            if stuck.is_some() {
                return;
            }
            if from == 0 {
                for _ in 0..iters {
                    if !wait_eq(line, 2 * round, &deadline) {
                        stuck = Some(2 * round);
                        return;
                    }
                    store(line, 2 * round + 1);
                    round += 1;
                }
                if !wait_eq(line, 2 * round, &deadline) {
                    stuck = Some(2 * round);
                }
            } else if to == 0 {
                for _ in 0..iters {
                    if !wait_eq(line, 2 * round + 1, &deadline) {
                        stuck = Some(2 * round + 1);
                        return;
                    }
                    store(line, 2 * round + 2);
                    round += 1;
                }
            } else {
                window += 1;
                store(go, window);
                if !wait_eq(done, window, &deadline) {
                    stuck = Some(window);
                }
            }
        });
        let results = gather("core-to-core", job.join(timeout_ms))?;
        if let Some(at) = stuck {
            return Err(format!("core-to-core {from}->{to}: the boot core waited in vain at {at}"));
        }
        if let Some((core, Err(at))) = results.iter().find(|(_, r)| r.is_err()) {
            return Err(format!("core-to-core {from}->{to}: core {core} waited in vain at {at}"));
        }
        if load(line) != 2 * rounds {
            return Err(format!("core-to-core {from}->{to}: the line holds {} after {} hand-overs", load(line), 2 * rounds));
        }
        Ok(emit(env, id, summary, iters, Unit::TimePerOp, &|m| m.handovers_per_op(2)))
    }

    /// The identity of a false-sharing figure: `n` cores, counters `stride` bytes apart.
    pub fn false_sharing_id<'a>(variant: SmpVariant, n: usize, stride: usize, params: &'a [(&'a str, u64)]) -> MetricId<'a> {
        MetricId { bench: SmpBench::Falseshare.name(), variant: variant.name(), attr: "normal-wb", bytes: (n * stride) as u64, params }
    }

    /// The parameters of [`false_sharing_id`].
    pub fn false_sharing_params(n: usize, stride: usize, incs: u64) -> [(&'static str, u64); 3] {
        [(Param::Cores.name(), n as u64), (Param::Incs.name(), incs), (Param::Stride.name(), stride as u64)]
    }

    /// Emits a false-sharing figure measured by [`false_sharing`] (the caller adds the
    /// slowdown to the shared variant's notes once both are measured).
    pub fn emit_false_sharing(env: &Env, variant: SmpVariant, n: usize, stride: usize, incs: u64, summary: Summary, notes: Notes<'_>) {
        let params = false_sharing_params(n, stride, incs);
        emit(env, false_sharing_id(variant, n, stride, &params), summary, incs, Unit::TimePerOp, notes);
    }

    /// False sharing: every core of `cores` and the boot core increments its own counter `incs`
    /// times per window; counters `stride` bytes apart from `base`. Returns the windows'
    /// summary (not emitted: see [`emit_false_sharing`]).
    pub fn false_sharing(
        env: &Env,
        variant: SmpVariant,
        base: usize,
        stride: usize,
        cores: &[usize],
        incs: u64,
        timeout_ms: u64,
    ) -> Result<Summary, String> {
        let n = cores.len() + 1;
        for i in 0..n {
            store(base + i * stride, 0);
        }
        hw::dsb_sy();
        let total = (env.warmup + env.reps) as u64;
        let barrier = Arc::new(Barrier::new(n as u32));
        let b = barrier.clone();
        let others: Vec<usize> = cores.to_vec();
        let job = smp::launch(cores, move |core| {
            let rank = others.iter().position(|&c| c == core).unwrap_or(0) + 1;
            let mine = base + rank * stride;
            let deadline = Deadline::after_ms(timeout_ms);
            let mut s = Sense::new();
            for _ in 0..total {
                b.wait(&mut s, || deadline.expired()).map_err(|_| "barrier broken")?;
                for _ in 0..incs {
                    store(mine, load(mine) + 1);
                }
                b.wait(&mut s, || deadline.expired()).map_err(|_| "barrier broken")?;
            }
            Ok::<(), &'static str>(())
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let mut s = Sense::new();
        let params = false_sharing_params(n, stride, incs);
        let id = false_sharing_id(variant, n, stride, &params);
        let summary = measure(env, id, || {
            if barrier.wait(&mut s, || deadline.expired()).is_err() {
                return;
            }
            for _ in 0..incs {
                store(base, load(base) + 1);
            }
            let _ = barrier.wait(&mut s, || deadline.expired());
        });
        let results = gather("false sharing", job.join(timeout_ms))?;
        if barrier.is_broken() || results.iter().any(|(_, r)| r.is_err()) {
            return Err(format!("false sharing {variant}: a core stopped answering (barrier broken)"));
        }
        for i in 0..n {
            let got = load(base + i * stride);
            if got != total * incs {
                return Err(format!("false sharing {variant}: counter {i} holds {got}, not {}", total * incs));
            }
        }
        Ok(summary)
    }

    /// The barrier choice of the SPSC ring.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Fence {
        /// DMB ISH between data and index (ordering only).
        DmbIsh,
        /// DSB SY (completion: what a driver handing data to a device would use).
        DsbSy,
    }

    impl Fence {
        /// Both.
        pub const ALL: [Self; 2] = [Self::DmbIsh, Self::DsbSy];

        /// Its variant of the `spsc` benchmark, head and tail a granule apart (`separate`) or in
        /// one line.
        pub const fn variant(self, separate: bool) -> SmpVariant {
            match (self, separate) {
                (Self::DmbIsh, false) => SmpVariant::DmbIshShared,
                (Self::DmbIsh, true) => SmpVariant::DmbIshSeparate,
                (Self::DsbSy, false) => SmpVariant::DsbSyShared,
                (Self::DsbSy, true) => SmpVariant::DsbSySeparate,
            }
        }

        #[inline(always)]
        fn issue(self) {
            match self {
                // SAFETY: a barrier: orders memory accesses, nothing else.
                Self::DmbIsh => unsafe { core::arch::asm!("dmb ish", options(nostack, preserves_flags)) },
                Self::DsbSy => hw::dsb_sy(),
            }
        }
    }

    /// The ring's shape.
    #[derive(Clone, Copy, Debug)]
    pub struct RingShape {
        /// Slots in the ring.
        pub slots: u64,
        /// Bytes per batch (a multiple of 8).
        pub batch: usize,
        /// Batches per window.
        pub batches: u64,
    }

    /// Cross-core SPSC ring: `producer` fills batches into `slots` slots at `base + 2 * gap`,
    /// the boot core consumes and checks every word. `head` at `base`, `tail` at `base + gap`
    /// (8: one line; the writeback granule: separate lines). Returns the median window.
    #[allow(clippy::too_many_arguments)]
    pub fn spsc(
        env: &Env,
        base: usize,
        gap: usize,
        data_gap: usize,
        producer: usize,
        fence: Fence,
        shape: RingShape,
        timeout_ms: u64,
    ) -> Result<u64, String> {
        let (head, tail, ring) = (base, base + gap, base + data_gap);
        store(head, 0);
        store(tail, 0);
        hw::dsb_sy();
        let total = (env.warmup + env.reps) as u64 * shape.batches;
        let words = shape.batch / 8;
        let job = smp::launch(&[producer], move |_| {
            let deadline = Deadline::after_ms(timeout_ms);
            for seq in 0..total {
                if !wait_for(&deadline, || seq - load(tail) < shape.slots) {
                    return Err(seq);
                }
                let slot = ring + (seq % shape.slots) as usize * shape.batch;
                for w in 0..words {
                    store(slot + 8 * w, seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w as u64);
                }
                fence.issue();
                store(head, seq + 1);
            }
            Ok(())
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let (mut seq, mut bad, mut stuck) = (0u64, 0u64, false);
        let variant = fence.variant(gap >= 64);
        let params = [(Param::Slots.name(), shape.slots), (Param::Batches.name(), shape.batches)];
        let id = MetricId {
            bench: SmpBench::Spsc.name(),
            variant: variant.name(),
            attr: "normal-wb",
            bytes: shape.batch as u64,
            params: &params,
        };
        let summary = measure(env, id, || {
            for _ in 0..shape.batches {
                if stuck || !wait_for(&deadline, || load(head) > seq) {
                    stuck = true;
                    return;
                }
                fence.issue();
                let slot = ring + (seq % shape.slots) as usize * shape.batch;
                for w in 0..words {
                    bad += (load(slot + 8 * w) != seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w as u64) as u64;
                }
                fence.issue();
                seq += 1;
                store(tail, seq);
            }
        });
        let results = gather("spsc producer", job.join(timeout_ms))?;
        if stuck || results.iter().any(|(_, r)| r.is_err()) {
            return Err(format!("spsc {variant}: the producer or the consumer stopped at batch {seq}"));
        }
        if bad != 0 {
            return Err(format!("spsc {variant}: {bad} words read wrong over {total} batches"));
        }
        Ok(emit(env, id, summary, shape.batches * shape.batch as u64, Unit::Rate, NO_NOTES))
    }

    /// Ring all-reduce over the boot core and `cores`: rank r's buffer of `n` chunks of
    /// `chunk` bytes at `base + r * n * chunk`. Returns the median window and the bytes moved.
    pub fn allreduce(env: &Env, base: usize, cores: &[usize], chunk: usize, timeout_ms: u64) -> Result<(u64, u64), String> {
        let n = cores.len() + 1;
        let words = n * chunk / 8;
        let buf = move |r: usize| base + r * n * chunk;
        for r in 0..n {
            for j in 0..words {
                store(buf(r) + 8 * j, ((r + 1) * (j + 1)) as u64);
            }
        }
        hw::dsb_sy();
        let total = env.warmup + env.reps;
        let barrier = Arc::new(Barrier::new(n as u32));
        let one_round = move |rank: usize, s: &mut Sense, b: &Barrier, deadline: &Deadline| -> Result<(), ()> {
            b.wait(s, || deadline.expired()).map_err(|_| ())?;
            let left = (rank + n - 1) % n;
            for step in 0..2 * (n - 1) {
                let (reduce, c) = allreduce_chunk(n, rank, step);
                let (mine, theirs) = (buf(rank) + c * chunk, buf(left) + c * chunk);
                for w in 0..chunk / 8 {
                    let v = load(theirs + 8 * w);
                    store(mine + 8 * w, if reduce { load(mine + 8 * w).wrapping_add(v) } else { v });
                }
                b.wait(s, || deadline.expired()).map_err(|_| ())?;
            }
            Ok(())
        };
        let b = barrier.clone();
        let others: Vec<usize> = cores.to_vec();
        let job = smp::launch(cores, move |core| {
            let rank = others.iter().position(|&c| c == core).unwrap_or(0) + 1;
            let deadline = Deadline::after_ms(timeout_ms);
            let mut s = Sense::new();
            (0..total).try_for_each(|_| one_round(rank, &mut s, &b, &deadline))
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let mut s = Sense::new();
        let moved = allreduce_bytes(n, chunk);
        let params = [(Param::Ranks.name(), n as u64)];
        let id = MetricId {
            bench: SmpBench::Allreduce.name(),
            variant: SmpVariant::Ring.name(),
            attr: "normal-wb",
            bytes: chunk as u64,
            params: &params,
        };
        let summary = measure(env, id, || {
            let _ = one_round(0, &mut s, &barrier, &deadline);
        });
        let results = gather("all-reduce", job.join(timeout_ms))?;
        if barrier.is_broken() || results.iter().any(|(_, r)| r.is_err()) {
            return Err(String::from("all-reduce: a core stopped answering (barrier broken)"));
        }
        // Round 1 leaves every word j = (j+1) n(n+1)/2 on every rank; each later round multiplies by n.
        let mut factor = (n * (n + 1) / 2) as u64;
        for _ in 1..total {
            factor = factor.wrapping_mul(n as u64);
        }
        for r in 0..n {
            for j in 0..words {
                let want = factor.wrapping_mul(j as u64 + 1);
                if load(buf(r) + 8 * j) != want {
                    return Err(format!("all-reduce: rank {r} word {j} holds {:#x}, not {want:#x}", load(buf(r) + 8 * j)));
                }
            }
        }
        Ok((emit(env, id, summary, moved, Unit::TimePerMiB, &|m| m.bytes_moved(moved)), moved))
    }

    /// Broadcast maintenance. DC CIVAC on `lines` lines from `base` that `peer` dirtied just
    /// before (remote) or that the boot core dirtied in the window (local, with the store-only
    /// window beside it), every window opening with the same two-core hand-shake
    /// (`handshake`); then, with `peer` holding translations of `pages` pages from `base`,
    /// TLBI VAE1IS vs VAE1 of them, and IC IALLUIS vs IALLU. Returns (variant, median per op in
    /// timer counts ×1000) for the summary line.
    pub fn broadcast(
        env: &Env,
        base: usize,
        line: usize,
        lines: usize,
        pages: usize,
        peer: usize,
        timeout_ms: u64,
    ) -> Result<Vec<(SmpVariant, u64)>, String> {
        #[derive(Clone, Copy, PartialEq)]
        enum Dc {
            Handshake,
            Remote,
            StoreLocal,
            Local,
        }
        let mut out = Vec::new();
        let total = env.warmup + env.reps;
        for (dc, name) in [
            (Dc::Handshake, SmpVariant::Handshake),
            (Dc::Remote, SmpVariant::DcCivacRemote),
            (Dc::StoreLocal, SmpVariant::StoreLocal),
            (Dc::Local, SmpVariant::DcCivacLocal),
        ] {
            let barrier = Arc::new(Barrier::new(2));
            let b = barrier.clone();
            let job = smp::launch(&[peer], move |_| {
                let deadline = Deadline::after_ms(timeout_ms);
                let mut s = Sense::new();
                for round in 0..total {
                    if dc == Dc::Remote {
                        for l in 0..lines {
                            store(base + l * line, round as u64);
                        }
                        hw::dsb_sy();
                    }
                    b.wait(&mut s, || deadline.expired()).map_err(|_| ())?;
                    b.wait(&mut s, || deadline.expired()).map_err(|_| ())?;
                }
                Ok::<(), ()>(())
            });
            let deadline = Deadline::after_ms(timeout_ms);
            let mut s = Sense::new();
            let params = [(Param::Lines.name(), lines as u64), (Param::Peer.name(), peer as u64)];
            let id = MetricId {
                bench: SmpBench::Bcast.name(),
                variant: name.name(),
                attr: "normal-wb",
                bytes: (lines * line) as u64,
                params: &params,
            };
            let summary = measure(env, id, || {
                if barrier.wait(&mut s, || deadline.expired()).is_err() {
                    return;
                }
                if matches!(dc, Dc::StoreLocal | Dc::Local) {
                    for l in 0..lines {
                        store(base + l * line, 1);
                    }
                }
                if matches!(dc, Dc::Remote | Dc::Local) {
                    for l in 0..lines {
                        hw::dc_civac(base + l * line);
                    }
                    hw::dsb_sy();
                }
                let _ = barrier.wait(&mut s, || deadline.expired());
            });
            let results = gather(name.name(), job.join(timeout_ms))?;
            if barrier.is_broken() || results.iter().any(|(_, r)| r.is_err()) {
                return Err(format!("bcast {name}: core {peer} stopped answering (barrier broken)"));
            }
            out.push((name, emit(env, id, summary, lines as u64, Unit::TimePerOp, NO_NOTES)));
        }

        // TLBI and IC: the peer loads the translations, then waits while the boot core measures.
        let barrier = Arc::new(Barrier::new(2));
        let b = barrier.clone();
        let job = smp::launch(&[peer], move |_| {
            let deadline = Deadline::after_ms(timeout_ms);
            let mut s = Sense::new();
            for p in 0..pages {
                let _ = load(base + p * 4096);
            }
            b.wait(&mut s, || deadline.expired()).map_err(|_| ())?;
            b.wait(&mut s, || deadline.expired()).map_err(|_| ())
        });
        let deadline = Deadline::after_ms(timeout_ms);
        let mut s = Sense::new();
        let ready = barrier.wait(&mut s, || deadline.expired()).is_ok();
        let operand = |p: usize| hw::tlbi_vaae1is_operand((base + p * 4096) as u64);
        type Op<'a> = (SmpVariant, u64, &'a dyn Fn());
        let tlbi_is = || {
            hw::dsb_ishst();
            (0..pages).for_each(|p| hw::tlbi_vae1is(operand(p)));
            hw::dsb_ish();
            hw::isb();
        };
        let tlbi_local = || {
            hw::dsb_ishst();
            (0..pages).for_each(|p| hw::tlbi_vae1(operand(p)));
            hw::dsb_ish();
            hw::isb();
        };
        let ic_is = || {
            (0..lines).for_each(|_| hw::ic_ialluis());
            hw::dsb_ish();
            hw::isb();
        };
        let ic_local = || {
            (0..lines).for_each(|_| hw::ic_iallu());
            hw::dsb_ish();
            hw::isb();
        };
        let ops: [Op; 4] = [
            (SmpVariant::TlbiVae1is, pages as u64, &tlbi_is),
            (SmpVariant::TlbiVae1, pages as u64, &tlbi_local),
            (SmpVariant::IcIalluis, lines as u64, &ic_is),
            (SmpVariant::IcIallu, lines as u64, &ic_local),
        ];
        if ready {
            for (name, count, f) in ops {
                let params = [(Param::Ops.name(), count), (Param::Peer.name(), peer as u64)];
                let id = MetricId {
                    bench: SmpBench::Bcast.name(),
                    variant: name.name(),
                    attr: "normal-wb",
                    bytes: (pages * 4096) as u64,
                    params: &params,
                };
                let summary = measure(env, id, f);
                out.push((name, emit(env, id, summary, count, Unit::TimePerOp, NO_NOTES)));
            }
        }
        let _ = barrier.wait(&mut s, || deadline.expired());
        let results = gather("bcast tlbi/ic peer", job.join(timeout_ms))?;
        if !ready || results.iter().any(|(_, r)| r.is_err()) {
            return Err(format!("bcast tlbi/ic: core {peer} stopped answering (barrier broken)"));
        }
        Ok(out)
    }
}
