//! The lock around the plugin's shared state (see the `plugin` module docs for its trade-off
//! under MTTCG).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// A spin lock: uncontended (one vCPU) it costs one compare-and-swap and one plain store,
/// about half of a `Mutex`; a waiting vCPU yields its host thread after a short spin.
pub struct SpinLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
    stats: Stats,
}

/// How often the lock was taken and waited for (`CS_MODEL_LOCK_STATS` prints them at exit).
#[derive(Default)]
struct Stats {
    /// Acquisitions (counted by the holder: a plain load and store).
    taken: AtomicU64,
    /// Acquisitions whose first attempt failed, spins and yields while waiting (the slow path).
    contended: AtomicU64,
    spins: AtomicU64,
    yields: AtomicU64,
    /// Host time spent waiting, summed over the threads (ns).
    wait_ns: AtomicU64,
}

/// A lock's [`SpinLock::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Acquisitions.
    pub taken: u64,
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// Failed attempts while waiting.
    pub spins: u64,
    /// Host-thread yields while waiting.
    pub yields: u64,
    /// Host time spent waiting, summed over the threads (ns).
    pub wait_ns: u64,
}

// SAFETY: the value is reached only through a guard, and a guard exists only while `held` is
// true and owned by the thread that set it (acquire/release ordering).
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// The lock held; dropping it releases the lock.
pub struct Guard<'a, T>(&'a SpinLock<T>);

impl<T> SpinLock<T> {
    /// An unlocked lock around `value`.
    pub fn new(value: T) -> Self {
        Self { held: AtomicBool::new(false), value: UnsafeCell::new(value), stats: Stats::default() }
    }

    /// Waits for the lock.
    #[inline]
    pub fn lock(&self) -> Guard<'_, T> {
        if self.held.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
            self.wait();
        }
        // Only the holder writes the count: a plain load and store.
        self.stats.taken.store(self.stats.taken.load(Relaxed) + 1, Relaxed);
        Guard(self)
    }

    #[cold]
    #[inline(never)]
    fn wait(&self) {
        let start = std::time::Instant::now();
        let (mut spins, mut yields) = (0u64, 0u64);
        while self.held.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                yields += 1;
                std::thread::yield_now();
            }
        }
        self.stats.contended.fetch_add(1, Relaxed);
        self.stats.spins.fetch_add(spins, Relaxed);
        self.stats.yields.fetch_add(yields, Relaxed);
        self.stats.wait_ns.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
    }

    /// The counts so far (exact once no other thread uses the lock, e.g. at exit).
    pub fn stats(&self) -> LockStats {
        let s = &self.stats;
        LockStats {
            taken: s.taken.load(Relaxed),
            contended: s.contended.load(Relaxed),
            spins: s.spins.load(Relaxed),
            yields: s.yields.load(Relaxed),
            wait_ns: s.wait_ns.load(Relaxed),
        }
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other reference to the value exists.
        unsafe { &*self.0.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; `&mut self` makes this the only use of the guard.
        unsafe { &mut *self.0.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.0.held.store(false, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_turns() {
        let lock = std::sync::Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = lock.clone();
                std::thread::spawn(move || (0..10_000).for_each(|_| *l.lock() += 1))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock.lock(), 40_000);
        let s = lock.stats();
        assert_eq!(s.taken, 40_001, "every acquisition, the read above included");
        assert!(s.contended <= s.taken);
    }
}
