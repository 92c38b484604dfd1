//! The deduplication table: the stored reply of every recent write, so a retried write
//! applies at most once. Held in memory in front of an archive a replica keeps on disk.
//!
//! A stored reply never changes, and it is dropped by one rule alone: the lease
//! ([`Horizon::keeps`]), applied once a minute of batch time by `apply::prune_requests`.
//! The prune's horizon only moves forward (a prune runs only when batch time is a minute
//! past the last one, and log indexes only grow), so a reply the rule drops once stays
//! dropped. That makes the archive exact without deleting anything in apply: a retired
//! reply answers a lookup only while the state's latest horizon keeps it, which is exactly
//! when it would still be held; the shell deletes the ones a snapshot's horizon drops in
//! that snapshot's commit (the coordinator's `reply_store`). So a replica's memory and
//! snapshots hold the replies written since its last snapshot, not a day of them
//! (BENCHMARKS.md, "Soak"); offline (`panel verify`, tests) nothing is retired.
//!
//! What a writer may add is bounded before a row is written (`limits::ReplyBounds`, under
//! policies that carry them): refusals of anonymous callers and refusals over a limit
//! store no row, and one identity, one organisation and the anonymous callers together
//! each keep at most so many rows within the lease, counted by hour ([`StoredRows`]). A
//! write past its bound is refused and stores nothing. The bound refuses rather than
//! evicts, so the rule above (a reply is dropped by its lease alone) still holds, and so
//! does the archive that relies on it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::stored_reply::StoredReply;

/// How long a write's reply is kept for deduplication: a retry within this much batch
/// time returns the stored reply.
pub const DEDUP_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Replies stored within this many log entries are kept whatever the batch time says.
///
/// Batch time is one leader's wall clock. When it jumped 25 h forward (the nemesis's
/// `ClockJumpLeader`), the next prune dropped every stored reply at once, and a client
/// retrying an acknowledged write with its own ids had it applied a second time. A clock
/// cannot move log indexes, so the most recent replies, the ones a retry needs, survive
/// any jump; the table stays bounded (by this many entries or by the lease, whichever
/// keeps more).
pub const DEDUP_MIN_KEEP_ENTRIES: u64 = 100_000;

/// Batch time one slot of a [`StoredRows`] count covers.
pub const ROWS_SLOT_MS: u64 = 60 * 60 * 1000;

/// How many deduplication rows one writer (an identity, an organisation, the anonymous
/// callers) has stored, by hour of batch time (`time_ms / ROWS_SLOT_MS`). A slot counts
/// until its hour's end plus [`DEDUP_TTL_MS`]: as long as any row in it may still be within
/// its lease, so the count never misses a live row (it may count one up to an hour past its
/// lease). A clock that went backwards stores into an earlier hour, which expires sooner;
/// every replica counts from the same batch times, so the count is the same on all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StoredRows(BTreeMap<u64, u64>);

impl StoredRows {
    /// Batch time from which slot `slot` no longer counts.
    fn expires_ms(slot: u64) -> u64 {
        slot.saturating_add(1)
            .saturating_mul(ROWS_SLOT_MS)
            .saturating_add(DEDUP_TTL_MS)
    }

    fn counted(&self, now_ms: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0
            .iter()
            .filter(move |(slot, _)| Self::expires_ms(**slot) > now_ms)
            .map(|(slot, n)| (*slot, *n))
    }

    /// Rows stored within the lease at `now_ms`.
    pub fn live(&self, now_ms: u64) -> u64 {
        self.counted(now_ms).map(|(_, n)| n).sum()
    }

    /// Counts one row stored at `now_ms`.
    pub fn add(&mut self, now_ms: u64) {
        let n = self.0.entry(now_ms / ROWS_SLOT_MS).or_default();
        *n = n.saturating_add(1);
    }

    /// Milliseconds from `now_ms` until fewer than `bound` rows count (0 if they already
    /// do): until enough of the oldest hours have expired.
    pub fn wait_ms(&self, bound: u32, now_ms: u64) -> u64 {
        let live = self.live(now_ms);
        let must_expire = (live + 1).saturating_sub(u64::from(bound));
        if must_expire == 0 {
            return 0;
        }
        let mut expired = 0;
        for (slot, n) in self.counted(now_ms) {
            expired += n;
            if expired >= must_expire {
                return Self::expires_ms(slot) - now_ms;
            }
        }
        0
    }

    /// Drops the hours that no longer count.
    pub fn prune(&mut self, now_ms: u64) {
        self.0.retain(|slot, _| Self::expires_ms(*slot) > now_ms);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where the latest prune stood: its batch time and log index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    pub ms: u64,
    pub index: u64,
}

impl Horizon {
    /// Whether a prune at this horizon keeps `reply`: inside its lease of batch time, or
    /// among the latest [`DEDUP_MIN_KEEP_ENTRIES`] log entries.
    pub fn keeps(&self, reply: &StoredReply) -> bool {
        reply.stored_at_ms.saturating_add(DEDUP_TTL_MS) > self.ms
            || reply.log_index.saturating_add(DEDUP_MIN_KEEP_ENTRIES) > self.index
    }

    /// The latest batch time whose replies a prune at this horizon may drop (those stored
    /// at or before it); `None` when the lease protects every reply.
    pub fn expired_up_to_ms(&self) -> Option<u64> {
        self.ms.checked_sub(DEDUP_TTL_MS)
    }
}

/// Where a replica keeps its retired replies. Reads only: the shell writes the archive
/// with its snapshot and then tells the table what it retired ([`ReplyTable::forget`]).
///
/// A read that fails (a disk fault) answers as if nothing were archived; the
/// implementation remembers the failure and its replica stops before the apply counts.
pub trait ReplyArchive: Send + Sync + fmt::Debug {
    /// The retired reply stored under `key`, whatever its lease (the table applies it).
    fn get(&self, key: &str) -> Option<StoredReply>;
    /// How many replies the archive holds (some may have expired since its last prune).
    fn count(&self) -> u64;
}

/// A reply read from the table: borrowed when held, owned when read from the archive.
#[derive(Debug)]
pub enum ReplyRef<'a> {
    Held(&'a StoredReply),
    Retired(StoredReply),
}

impl std::ops::Deref for ReplyRef<'_> {
    type Target = StoredReply;
    fn deref(&self) -> &StoredReply {
        match self {
            ReplyRef::Held(r) => r,
            ReplyRef::Retired(r) => r,
        }
    }
}

/// Replies by deduplication key: the held ones, and the archive behind them. Serialises as
/// the held replies only (a replica's snapshot leaves out what its archive holds; a
/// snapshot sent to a follower, an export and a backup are completed first with
/// [`ReplyTable::restore`]).
#[derive(Clone, Default)]
pub struct ReplyTable {
    held: BTreeMap<String, Arc<StoredReply>>,
    archive: Option<Arc<dyn ReplyArchive>>,
}

impl fmt::Debug for ReplyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyTable")
            .field("held", &self.held)
            .field("archived", &self.archive.is_some())
            .finish()
    }
}

impl Serialize for ReplyTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.held.iter().map(|(k, v)| (k, &**v)))
    }
}

impl<'de> Deserialize<'de> for ReplyTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let held = BTreeMap::<String, StoredReply>::deserialize(d)?;
        Ok(Self {
            held: held.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
            archive: None,
        })
    }
}

/// Replies a snapshot moves to the archive, shared with the table until it forgets them.
pub type Retired = Vec<(String, Arc<StoredReply>)>;

impl ReplyTable {
    /// Reads retired replies through `archive` from now on (a replica, after loading its
    /// snapshot).
    pub fn attach(&mut self, archive: Arc<dyn ReplyArchive>) {
        self.archive = Some(archive);
    }

    /// The reply stored under `key` that the latest prune (at `horizon`) kept.
    pub fn get(&self, key: &str, horizon: Horizon) -> Option<ReplyRef<'_>> {
        if let Some(r) = self.held.get(key) {
            return Some(ReplyRef::Held(r));
        }
        let retired = self.archive.as_deref()?.get(key)?;
        horizon
            .keeps(&retired)
            .then_some(ReplyRef::Retired(retired))
    }

    /// The held reply under `key` (tests; lookups go through [`Self::get`]).
    pub fn held(&self, key: &str) -> Option<&StoredReply> {
        self.held.get(key).map(|r| &**r)
    }

    pub fn insert(&mut self, key: String, reply: StoredReply) {
        self.held.insert(key, Arc::new(reply));
    }

    /// Gives the held replies stored before leases were stamped (`stored_at_ms` 0, from old
    /// snapshots) a lease from `now_ms`.
    pub fn stamp_unstamped(&mut self, now_ms: u64) {
        for r in self.held.values_mut() {
            if r.stored_at_ms == 0 {
                Arc::make_mut(r).stored_at_ms = now_ms;
            }
        }
    }

    /// Drops the held replies a prune at `horizon` does not keep. Retired ones are
    /// dropped by [`Self::get`] reading the same rule, and from disk by the next snapshot.
    pub fn prune(&mut self, horizon: Horizon) {
        self.held.retain(|_, r| horizon.keeps(r));
    }

    /// Replies held and retired (retired ones counted until a snapshot deletes them).
    pub fn len(&self) -> usize {
        let archived = self.archive.as_deref().map_or(0, |a| a.count());
        self.held.len() + usize::try_from(archived).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many replies are held in memory.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// The replies a replica may retire now: every held one with a stamped lease. Shared,
    /// not copied.
    pub fn retirable(&self) -> Retired {
        self.held
            .iter()
            .filter(|(_, r)| r.stored_at_ms != 0)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }

    /// Drops the held replies the archive now holds (`retired`, as [`Self::retirable`]
    /// gave them and the shell stored them). A row replaced since is kept.
    pub fn forget(&mut self, retired: &Retired) {
        for (k, r) in retired {
            if self.held.get(k).is_some_and(|h| Arc::ptr_eq(h, r)) {
                self.held.remove(k);
            }
        }
    }

    /// Makes every reply held again from the archive's content (`retired`, the rows the
    /// state still keeps), so the table serialises complete: a snapshot sent to a
    /// follower, an export, a backup. A held row wins over an archived one.
    pub fn restore(&mut self, retired: impl IntoIterator<Item = (String, StoredReply)>) {
        for (k, r) in retired {
            self.held.entry(k).or_insert_with(|| Arc::new(r));
        }
        self.archive = None;
    }
}

/// An archive in memory: what a replica's store does, for tests of the table.
#[derive(Debug, Default)]
pub struct MemoryArchive {
    replies: Mutex<BTreeMap<String, StoredReply>>,
}

impl MemoryArchive {
    /// Stores `retired` (then call [`ReplyTable::forget`] with the same rows).
    pub fn put(&self, retired: &Retired) {
        let mut g = self.lock();
        for (k, r) in retired {
            g.insert(k.clone(), (**r).clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StoredReply>> {
        self.replies.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ReplyArchive for MemoryArchive {
    fn get(&self, key: &str) -> Option<StoredReply> {
        self.lock().get(key).cloned()
    }

    fn count(&self) -> u64 {
        self.lock().len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ItemReply;
    use crate::model::ReplyText;

    fn reply(log_index: u64, stored_at_ms: u64) -> StoredReply {
        StoredReply {
            reply: ReplyText::of(&ItemReply::Applied(serde_json::json!({ "n": log_index }))),
            log_index,
            stored_at_ms,
        }
    }

    /// A retired reply answers exactly while the latest prune would have kept it held.
    #[test]
    fn a_retired_reply_answers_while_its_lease_holds() {
        let mut t = ReplyTable::default();
        let archive = Arc::new(MemoryArchive::default());
        t.attach(archive.clone());
        t.insert("a".into(), reply(1, 1_000));
        t.insert("b".into(), reply(2, 0));
        let retired = t.retirable();
        assert_eq!(retired.len(), 1, "an unstamped reply stays held");
        archive.put(&retired);
        t.forget(&retired);
        assert_eq!(t.held_count(), 1);
        let early = Horizon { ms: 0, index: 0 };
        assert_eq!(*t.get("a", early).expect("retired, live"), reply(1, 1_000));
        // Expired by time alone: the entry window still keeps it.
        let by_time = Horizon {
            ms: 1_000 + DEDUP_TTL_MS,
            index: 2,
        };
        assert!(t.get("a", by_time).is_some());
        let gone = Horizon {
            ms: 1_000 + DEDUP_TTL_MS,
            index: 1 + DEDUP_MIN_KEEP_ENTRIES,
        };
        assert!(t.get("a", gone).is_none());
        assert_eq!(gone.expired_up_to_ms(), Some(1_000));
        // A key written again after it expired answers with the new reply.
        t.insert(
            "a".into(),
            reply(DEDUP_MIN_KEEP_ENTRIES + 5, 2_000 + DEDUP_TTL_MS),
        );
        assert_eq!(
            t.get("a", gone).map(|r| r.log_index),
            Some(DEDUP_MIN_KEEP_ENTRIES + 5)
        );
    }

    /// Serialised, the table is its held rows; restored, it holds every row again.
    #[test]
    fn restore_brings_every_row_back_and_serialises_them() {
        let mut t = ReplyTable::default();
        let archive = Arc::new(MemoryArchive::default());
        t.attach(archive.clone());
        t.insert("a".into(), reply(1, 5));
        let retired = t.retirable();
        archive.put(&retired);
        t.forget(&retired);
        t.insert("b".into(), reply(2, 6));
        assert_eq!(
            serde_json::to_value(&t).unwrap().as_object().unwrap().len(),
            1
        );
        assert_eq!(t.len(), 2);
        t.restore([("a".to_owned(), reply(1, 5)), ("b".to_owned(), reply(9, 9))]);
        let back: ReplyTable = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back.held("a"), Some(&reply(1, 5)));
        assert_eq!(back.held("b"), Some(&reply(2, 6)), "the held row wins");
    }
}
