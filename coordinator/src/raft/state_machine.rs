//! The state machine adapter: runs the pure [`panel_machine::apply::apply_batch`] on a state held
//! in memory, and keeps its durable form in redb (`state.redb`): snapshots.
//!
//! The durable truth is the Raft log (fsynced before an entry counts toward a quorum) plus
//! the latest snapshot, which is written with `Durability::Immediate` before openraft
//! learns of it (openraft may purge the log right after). Apply is deterministic, so on
//! restart the state is the snapshot, and openraft re-applies the log entries after it;
//! the log is purged only behind a snapshot, so those entries are always there. Applying
//! an entry therefore writes nothing to disk: the write path has one fsync per replica
//! (the log append), and no per-entry serialization of state rows. Restart time grows
//! with the entries since the last snapshot (`--snapshot-logs`, default 5000).
//!
//! Tables: `snapshot` (`meta`, `data`: the JSON of the whole [`State`] with its applied
//! position and membership). Installing a received snapshot stores it in one durable
//! transaction before the in-memory state is replaced.

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::log_store::{FileError, StoreError, open_db, write_durably};
use super::{LogId, Member, NodeId, RaftStartError, TypeConfig};
use crate::apply::apply_batch;
use crate::command::{BatchReply, ItemReply};
use crate::model::State;

const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// One applied item, broadcast to `WatchEvents` subscribers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedEvent {
    pub log_index: u64,
    pub kind: String,
    pub reply: ItemReply,
}

/// The state plus what openraft needs to know about it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Applied {
    pub state: State,
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership<NodeId, Member>,
}

/// Shared handle: openraft owns one clone, the client API reads through another.
#[derive(Clone)]
pub struct StateMachineStore {
    db: Arc<Database>,
    /// `state.redb`, named in every storage error.
    path: Arc<str>,
    shared: Arc<RwLock<Applied>>,
    events: broadcast::Sender<AppliedEvent>,
    /// When the latest snapshot was built (Unix ms; 0: none), for the metrics endpoint's
    /// snapshot age (docs/COORDINATOR.md, "Metrics and readiness").
    snapshot_at_ms: Arc<AtomicU64>,
}

impl StateMachineStore {
    pub fn open(path: &Path) -> Result<Self, RaftStartError> {
        let db = open_db(path, |tx| {
            tx.open_table(SNAPSHOT)?;
            Ok(())
        })?;
        let (applied, snapshot_id) = load(&db).map_err(|e| RaftStartError::Damaged {
            path: path.display().to_string(),
            detail: format!("the stored snapshot does not decode: {e}"),
        })?;
        let (events, _) = broadcast::channel(4096);
        Ok(Self {
            db,
            path: path.display().to_string().into(),
            shared: Arc::new(RwLock::new(applied)),
            events,
            snapshot_at_ms: Arc::new(AtomicU64::new(
                snapshot_id.as_deref().map_or(0, built_at_ms),
            )),
        })
    }

    /// How long ago the latest snapshot was built; `None` without one.
    pub fn snapshot_age(&self) -> Option<std::time::Duration> {
        let at = self.snapshot_at_ms.load(Ordering::Relaxed);
        (at > 0).then(|| std::time::Duration::from_millis(now_ms().saturating_sub(at)))
    }

    /// Run `f` on the current state (a local, possibly stale read on a follower).
    pub fn read<T>(&self, f: impl FnOnce(&Applied) -> T) -> T {
        f(&self.shared.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<AppliedEvent> {
        self.events.subscribe()
    }

    fn at(&self, e: impl Into<StoreError>) -> FileError {
        at(&self.path, e)
    }
}

fn at(path: &Arc<str>, e: impl Into<StoreError>) -> FileError {
    FileError {
        path: path.clone(),
        error: e.into(),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(
    t: &impl redb::ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<T>, StoreError> {
    match t.get(key)? {
        Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
        None => Ok(None),
    }
}

/// A snapshot's state, with the record's Merkle tree rebuilt (it is derived, so snapshots
/// do not carry it).
fn decode_state(bytes: &[u8]) -> Result<State, serde_json::Error> {
    let mut state: State = serde_json::from_slice(bytes)?;
    panel_machine::checkpoints::sync_tree(&mut state);
    Ok(state)
}

/// The state as of the stored snapshot (empty without one); openraft re-applies the log
/// entries after it.
fn load(db: &Database) -> Result<(Applied, Option<String>), StoreError> {
    let tx = db.begin_read()?;
    let snap = tx.open_table(SNAPSHOT)?;
    let meta: Option<SnapshotMeta<NodeId, Member>> = read_json(&snap, "meta")?;
    Ok(match (meta, snap.get("data")?) {
        (Some(m), Some(data)) => (
            Applied {
                state: decode_state(data.value())?,
                last_applied: m.last_log_id,
                membership: m.last_membership,
            },
            Some(m.snapshot_id),
        ),
        _ => (Applied::default(), None),
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// When a snapshot was built, from its id: [`SnapshotBuilder`] names a snapshot
/// `TERM-INDEX-NANOS` with the Unix time it was built at (a received snapshot keeps the
/// leader's id). An id of another form counts as built now.
fn built_at_ms(snapshot_id: &str) -> u64 {
    snapshot_id
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<u128>().ok())
        .map_or_else(now_ms, |nanos| (nanos / 1_000_000) as u64)
}

/// Writes `state` as the snapshot of a new `state.redb` at `path`, for a replica restored
/// from a backup (`raft::restore`): openraft then starts from it as from any snapshot.
pub(crate) fn seed_snapshot(
    path: &Path,
    meta: &SnapshotMeta<NodeId, Member>,
    state_json: &[u8],
) -> Result<(), StoreError> {
    let db = Database::create(path)?;
    let meta_json = serde_json::to_vec(meta)?;
    let mut tx = db.begin_write()?;
    tx.set_durability(redb::Durability::Immediate)?;
    {
        let mut s = tx.open_table(SNAPSHOT)?;
        s.insert("meta", meta_json.as_slice())?;
        s.insert("data", state_json)?;
    }
    tx.commit()?;
    Ok(())
}

/// Applies entries to the shared state; returns the replies and the events to broadcast.
fn apply_entries(
    shared: &RwLock<Applied>,
    entries: impl IntoIterator<Item = openraft::Entry<TypeConfig>>,
) -> (Vec<BatchReply>, Vec<AppliedEvent>) {
    let mut g = shared.write().unwrap_or_else(PoisonError::into_inner);
    let mut replies = Vec::new();
    let mut events = Vec::new();
    for e in entries {
        g.last_applied = Some(e.log_id);
        match e.payload {
            EntryPayload::Blank => replies.push(BatchReply::default()),
            EntryPayload::Normal(batch) => {
                let r = apply_batch(&mut g.state, e.log_id.index, &batch);
                for (item, out) in batch.items.iter().zip(&r.items) {
                    if !out.duplicate {
                        events.push(AppliedEvent {
                            log_index: e.log_id.index,
                            kind: item.command.kind().into(),
                            reply: out.reply.clone(),
                        });
                    }
                }
                replies.push(r);
            }
            EntryPayload::Membership(m) => {
                g.membership = StoredMembership::new(Some(e.log_id), m);
                replies.push(BatchReply::default());
            }
        }
    }
    (replies, events)
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> StorageResult<(Option<LogId>, StoredMembership<NodeId, Member>)> {
        Ok(self.read(|a| (a.last_applied, a.membership.clone())))
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<BatchReply>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // In place on openraft's state-machine task: an entry's work is mostly the
        // followers' signature checks (~55 µs per ruling), less than what a hop to the
        // blocking pool costs on this kind of VM (a wake-up and two context switches).
        let (replies, events) = apply_entries(&self.shared, entries);
        for ev in events {
            // No subscriber is fine.
            let _ = self.events.send(ev);
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        // A consistent copy taken between two applies; building runs in another task.
        SnapshotBuilder {
            db: self.db.clone(),
            path: self.path.clone(),
            copy: self.read(Applied::clone),
            built_at_ms: self.snapshot_at_ms.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Member>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StorageResult<()> {
        let data = snapshot.into_inner();
        let sig = Some(meta.signature());
        let state = decode_state(&data)
            .map_err(|e| StorageIOError::read_snapshot(sig.clone(), &self.at(e)))?;
        let meta_json = serde_json::to_vec(meta)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), &self.at(e)))?;
        write_durably(&self.db, &self.path, move |tx| {
            let mut s = tx.open_table(SNAPSHOT)?;
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", data.as_slice())?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(sig, &self.at(e)))?;
        let mut g = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        *g = Applied {
            state,
            last_applied: meta.last_log_id,
            membership: meta.last_membership.clone(),
        };
        self.snapshot_at_ms
            .store(built_at_ms(&meta.snapshot_id), Ordering::Relaxed);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let read = || -> Result<Option<Snapshot<TypeConfig>>, StoreError> {
            let tx = self.db.begin_read()?;
            let t = tx.open_table(SNAPSHOT)?;
            let meta: Option<SnapshotMeta<NodeId, Member>> = read_json(&t, "meta")?;
            let data = t.get("data")?.map(|v| v.value().to_vec());
            Ok(match (meta, data) {
                (Some(meta), Some(data)) => Some(Snapshot {
                    meta,
                    snapshot: Box::new(Cursor::new(data)),
                }),
                _ => None,
            })
        };
        read().map_err(|e| StorageIOError::read_snapshot(None, &self.at(e)).into())
    }
}

/// Serializes a copy of the state taken by `get_snapshot_builder`.
pub struct SnapshotBuilder {
    db: Arc<Database>,
    path: Arc<str>,
    copy: Applied,
    built_at_ms: Arc<AtomicU64>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let data = serde_json::to_vec(&self.copy.state)
            .map_err(|e| StorageIOError::read_state_machine(&at(&self.path, e)))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let snapshot_id = match self.copy.last_applied {
            Some(l) => format!("{}-{}-{nanos}", l.leader_id.term, l.index),
            None => format!("0-0-{nanos}"),
        };
        let meta = SnapshotMeta {
            last_log_id: self.copy.last_applied,
            last_membership: self.copy.membership.clone(),
            snapshot_id,
        };
        let meta_json = serde_json::to_vec(&meta).map_err(|e| {
            StorageIOError::write_snapshot(Some(meta.signature()), &at(&self.path, e))
        })?;
        // One buffer for the stored copy and the one handed to openraft: a snapshot is the
        // whole state, and a second copy doubled its peak (BENCHMARKS.md, "Soak").
        let data = Arc::new(data);
        let stored = data.clone();
        // Durable before openraft learns of it: openraft may purge the log right after.
        write_durably(&self.db, &self.path, move |tx| {
            let mut s = tx.open_table(SNAPSHOT)?;
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", stored.as_slice())?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &at(&self.path, e)))?;
        self.built_at_ms
            .store((nanos / 1_000_000) as u64, Ordering::Relaxed);
        // The write's closure (and its reference) is gone once the write returned.
        let data = Arc::try_unwrap(data).unwrap_or_else(|shared| shared.as_ref().clone());
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}
