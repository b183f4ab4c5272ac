//! [`LockPool`]: reader-writer locks keyed by inode id or directory entry,
//! that exist only while they are used (Alluxio's `LockPool`, REFERENCE.md).
//!
//! Guarantees:
//! * one lock object per key at a time: a caller takes a reference to the
//!   key's entry (the entry's `Arc` count) under the entry's shard mutex
//!   *before* it locks, and eviction removes only entries nobody holds a
//!   reference to, under the same mutex. Two callers can therefore never
//!   lock two different objects for one key;
//! * bounded: when the pool holds more than its high watermark of entries,
//!   the caller that crossed it evicts unreferenced entries until the pool
//!   is down to the low watermark. Referenced entries are never evicted, so
//!   a pool whose every entry is held may stay above the high watermark
//!   (it cannot hold more entries than callers hold locks, plus what
//!   threads keep in their caches, [`MAX_THREAD_CACHED_ENTRIES`] each).
//!
//! Each thread keeps references to the entries it used last, so locking
//! a hot key (the root, the ancestors every path shares) takes no shard
//! mutex: the shard mutexes were the cache lines two threads fought over.
//!
//! A [`HeldLock`] unlocks on drop, from any thread (the raw lock is not
//! tied to the thread that took it), which lets an async caller take locks
//! on a blocking thread and release them on another. An async caller that
//! finds a lock busy awaits its release ([`Busy::wait`]) rather than
//! blocking a thread: a release wakes such waiters (and costs nothing more
//! when there are none).

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use compact_str::CompactString;
use parking_lot::lock_api::RawRwLock as _;
use parking_lot::{Mutex, RawRwLock};
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::inode::InodeId;

/// Entries past which the pool evicts unreferenced ones (Alluxio's default).
pub const LOCK_POOL_HIGH_WATERMARK_ENTRIES: usize = 1_000_000;
/// Entries the pool evicts down to once past the high watermark.
pub const LOCK_POOL_LOW_WATERMARK_ENTRIES: usize = 500_000;
/// Shards of the pool's map (a power of two): each has its own mutex.
const SHARDS: usize = 64;
/// Entries a thread keeps references to, so the keys it locks again and
/// again (the ancestors of the paths it works on) cost no shard mutex.
/// A cached entry is referenced, so it is not evicted: the pool holds at
/// most this many more entries per thread than its watermarks say.
pub const MAX_THREAD_CACHED_ENTRIES: usize = 1024;

/// A thread's references to one pool's entries (see [`MAX_THREAD_CACHED_ENTRIES`]).
#[derive(Default)]
struct ThreadEntries {
    pool: u64,
    entries: FxHashMap<LockKey, Arc<Entry>>,
}

thread_local! {
    static THREAD_ENTRIES: std::cell::RefCell<ThreadEntries> = std::cell::RefCell::new(ThreadEntries::default());
}

/// What a lock protects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockKey {
    /// An inode's own fields (permission, owner, blocks, lease, quota
    /// settings). Mergeable fields (mtime, child count, quota usage) change
    /// under a read lock.
    Inode(InodeId),
    /// The directory entry `(parent, name)`: whether it exists and which
    /// inode it names.
    Edge(InodeId, CompactString),
}

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    Read,
    Write,
}

struct Entry {
    raw: RawRwLock,
    /// Callers waiting asynchronously for this lock ([`Busy::wait`]), and
    /// how a release wakes them (only when there are some).
    waiters: AtomicUsize,
    released: tokio::sync::Notify,
}

impl Entry {
    fn new() -> Entry {
        Entry {
            raw: RawRwLock::INIT,
            waiters: AtomicUsize::new(0),
            released: tokio::sync::Notify::new(),
        }
    }
}

/// A lock that could not be taken without waiting ([`LockPool::try_lock`]
/// failed): an async caller awaits [`Busy::wait`] instead of blocking a
/// thread, then tries again.
pub struct Busy {
    entry: Arc<Entry>,
    mode: LockMode,
}

impl Busy {
    /// Wait until the lock may be free for the mode that was refused.
    pub async fn wait(self) {
        let e = &self.entry;
        e.waiters.fetch_add(1, Ordering::SeqCst);
        let released = e.released.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        std::sync::atomic::fence(Ordering::SeqCst);
        // Counted, then registered, then looked at: a release after the
        // look wakes us; one before it left the lock free (or taken by
        // someone whose release will).
        let busy = match self.mode {
            LockMode::Read => e.raw.is_locked_exclusive(),
            LockMode::Write => e.raw.is_locked(),
        };
        if busy {
            released.await;
        }
        e.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Busy({:?})", self.mode)
    }
}

/// One shard of the pool: key → its entry.
type Shard = Mutex<FxHashMap<LockKey, Arc<Entry>>>;

/// A lock this caller holds; unlocked (and its reference dropped) on drop.
pub struct HeldLock {
    entry: Arc<Entry>,
    mode: LockMode,
    key: LockKey,
}

impl HeldLock {
    pub fn key(&self) -> &LockKey {
        &self.key
    }
    pub fn mode(&self) -> LockMode {
        self.mode
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // SAFETY: this HeldLock was created only after `raw` was locked in
        // `mode`, and it unlocks exactly once. parking_lot's raw lock may be
        // unlocked by a thread other than the one that locked it.
        unsafe {
            match self.mode {
                LockMode::Read => self.entry.raw.unlock_shared(),
                LockMode::Write => self.entry.raw.unlock_exclusive(),
            }
        }
        // The unlock above is a release store and the count below a load:
        // without a full fence between them the load may be served before
        // the store is visible, and a waiter that counted itself meanwhile
        // could still see the lock held and never be woken (the waiter
        // fences the other way round in `Busy::wait`).
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.entry.waiters.load(Ordering::SeqCst) > 0 {
            self.entry.released.notify_waiters();
        }
    }
}

impl std::fmt::Debug for HeldLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}:{:?}", self.key, self.mode)
    }
}

/// Keyed locks, created on first use and evicted when unused (see the module docs).
pub struct LockPool {
    /// Tells this pool's entries in a thread's cache from another pool's.
    id: u64,
    shards: Box<[Shard]>,
    hasher: FxBuildHasher,
    len: AtomicUsize,
    evicting: AtomicBool,
    high: usize,
    low: usize,
    /// Most entries one thread keeps references to (at most the low watermark).
    thread_cache: usize,
}

impl Default for LockPool {
    fn default() -> Self {
        LockPool::with_watermarks(LOCK_POOL_HIGH_WATERMARK_ENTRIES, LOCK_POOL_LOW_WATERMARK_ENTRIES)
    }
}

impl LockPool {
    /// A pool that evicts from `high` entries down to `low`.
    pub fn with_watermarks(high: usize, low: usize) -> LockPool {
        assert!(low <= high, "low watermark {low} above high watermark {high}");
        static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);
        LockPool {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| Mutex::new(FxHashMap::default())).collect(),
            hasher: FxBuildHasher,
            len: AtomicUsize::new(0),
            evicting: AtomicBool::new(false),
            high,
            low,
            thread_cache: MAX_THREAD_CACHED_ENTRIES.min(low),
        }
    }

    /// Entries in the pool now (locked or not).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &LockKey) -> &Shard {
        let h = self.hasher.hash_one(key) as usize;
        &self.shards[(h >> 7) & (SHARDS - 1)]
    }

    /// A counted reference to `key`'s entry, made if missing: from this
    /// thread's cache when it has one (no shard mutex), else from the pool
    /// (and then kept in the cache).
    fn reference(&self, key: &LockKey) -> Arc<Entry> {
        if let Some(e) = THREAD_ENTRIES.with(|c| {
            let c = c.borrow();
            (c.pool == self.id).then(|| c.entries.get(key).cloned()).flatten()
        }) {
            return e;
        }
        let (entry, inserted) = {
            let mut map = self.shard(key).lock();
            match map.get(key) {
                Some(e) => (e.clone(), false),
                None => {
                    let e = Arc::new(Entry::new());
                    map.insert(key.clone(), e.clone());
                    (e, true)
                }
            }
        };
        if inserted && self.len.fetch_add(1, Ordering::Relaxed) + 1 > self.high {
            self.evict();
        }
        THREAD_ENTRIES.with(|c| {
            let mut c = c.borrow_mut();
            if c.pool != self.id || c.entries.len() >= self.thread_cache {
                c.pool = self.id;
                c.entries.clear();
            }
            if self.thread_cache > 0 {
                c.entries.insert(key.clone(), entry.clone());
            }
        });
        entry
    }

    /// Lock `key` in `mode`, waiting as long as it takes.
    pub fn lock(&self, key: LockKey, mode: LockMode) -> HeldLock {
        let entry = self.reference(&key);
        match mode {
            LockMode::Read => entry.raw.lock_shared(),
            LockMode::Write => entry.raw.lock_exclusive(),
        }
        HeldLock { entry, mode, key }
    }

    /// Lock `key` in `mode` if that needs no waiting.
    pub fn try_lock(&self, key: LockKey, mode: LockMode) -> Option<HeldLock> {
        self.try_lock_or_busy(key, mode).ok()
    }

    /// Lock `key` in `mode` if that needs no waiting; else what to wait on.
    pub fn try_lock_or_busy(&self, key: LockKey, mode: LockMode) -> Result<HeldLock, Busy> {
        let entry = self.reference(&key);
        let locked = match mode {
            LockMode::Read => entry.raw.try_lock_shared(),
            LockMode::Write => entry.raw.try_lock_exclusive(),
        };
        // Not `then_some`: a HeldLock built for a failed attempt would
        // unlock, on drop, a lock it never took.
        if locked {
            Ok(HeldLock { entry, mode, key })
        } else {
            Err(Busy { entry, mode })
        }
    }

    /// Remove unreferenced entries until the pool is at its low watermark
    /// (one caller at a time; the others go on).
    fn evict(&self) {
        if self.evicting.swap(true, Ordering::Acquire) {
            return;
        }
        for shard in self.shards.iter() {
            if self.len() <= self.low {
                break;
            }
            let mut map = shard.lock();
            let before = map.len();
            // Only the map holds an unreferenced entry, and taking a
            // reference needs this shard's mutex, which we hold.
            map.retain(|_, e| Arc::strong_count(e) > 1);
            self.len.fetch_sub(before - map.len(), Ordering::Relaxed);
        }
        self.evicting.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(p: InodeId, name: &str) -> LockKey {
        LockKey::Edge(p, name.into())
    }

    #[test]
    fn readers_share_and_writers_exclude() {
        let pool = LockPool::default();
        let r1 = pool.lock(edge(1, "a"), LockMode::Read);
        let r2 = pool.try_lock(edge(1, "a"), LockMode::Read).expect("readers share");
        assert!(pool.try_lock(edge(1, "a"), LockMode::Write).is_none());
        drop((r1, r2));
        let w = pool.try_lock(edge(1, "a"), LockMode::Write).expect("free again");
        assert!(pool.try_lock(edge(1, "a"), LockMode::Read).is_none());
        assert!(
            pool.try_lock(LockKey::Inode(1), LockMode::Write).is_some(),
            "other keys are free"
        );
        drop(w);
    }

    #[test]
    fn eviction_keeps_referenced_entries_and_the_bound() {
        let pool = LockPool::with_watermarks(100, 0); // no thread cache: only held entries stay
        let held: Vec<HeldLock> = (0..30).map(|i| pool.lock(LockKey::Inode(i), LockMode::Write)).collect();
        for i in 1000..1200 {
            drop(pool.lock(LockKey::Inode(i), LockMode::Read));
            assert!(pool.len() <= 100, "pool grew to {} past its high watermark", pool.len());
        }
        // Every held lock is still the one its key maps to: a second locker waits.
        for (i, h) in held.iter().enumerate() {
            assert_eq!(h.key(), &LockKey::Inode(i as u64));
            assert!(pool.try_lock(LockKey::Inode(i as u64), LockMode::Read).is_none());
        }
        drop(held);
        assert!(pool.try_lock(LockKey::Inode(3), LockMode::Write).is_some());
    }

    #[test]
    fn an_async_waiter_wakes_when_the_lock_is_released() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pool = Arc::new(LockPool::default());
        let w = pool.lock(LockKey::Inode(5), LockMode::Write);
        let busy = pool
            .try_lock_or_busy(LockKey::Inode(5), LockMode::Read)
            .expect_err("held in WRITE");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(w);
        });
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(10), busy.wait())
                .await
                .expect("woken by the release");
        });
        release.join().unwrap();
        assert!(pool.try_lock(LockKey::Inode(5), LockMode::Read).is_some());
        // A lock already free does not wait at all.
        let free = pool.lock(LockKey::Inode(6), LockMode::Read);
        let busy = pool
            .try_lock_or_busy(LockKey::Inode(6), LockMode::Write)
            .expect_err("read-locked");
        drop(free);
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(10), busy.wait())
                .await
                .expect("free already");
        });
    }

    #[test]
    fn a_lock_taken_on_one_thread_is_released_on_another() {
        let pool = Arc::new(LockPool::default());
        let w = pool.lock(LockKey::Inode(9), LockMode::Write);
        std::thread::spawn(move || drop(w)).join().unwrap();
        assert!(pool.try_lock(LockKey::Inode(9), LockMode::Write).is_some());
    }
}
