//! The state machine adapter: runs the pure [`panel_machine::apply_batch`] on a state held
//! in memory, and keeps its durable form in redb (`state.redb`): snapshots, and the record's
//! entries (`record_store`).
//!
//! The durable truth is the Raft log (fsynced before an entry counts toward a quorum) plus
//! the latest snapshot, which is written with `Durability::Immediate` before openraft
//! learns of it (openraft may purge the log right after). Apply is deterministic, so on
//! restart the state is the snapshot, and openraft re-applies the log entries after it;
//! the log is purged only behind a snapshot, so those entries are always there. The record
//! entries apply appends move to the `record` table in background batches without an
//! fsync (the snapshot's commit makes them durable), so the write path keeps one fsync per
//! replica (the log append). Restart time grows with the entries since the last snapshot
//! (`--snapshot-logs`, default 5000).
//!
//! Tables: `snapshot` (`meta`, `data`: the JSON of the [`State`] without the record's
//! stored entries, with its applied position and membership), `record` and
//! `record_leaves`. A snapshot sent to a follower carries the whole record, and installing
//! one stores its entries and state in one durable transaction before the in-memory state
//! is replaced.

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::archive::RedbArchive;
use super::log_store::{FileError, StoreError, open_db, write_durably};
use super::motion_store;
use super::record_store;
use super::reply_store;
use super::{LogId, Member, NodeId, RaftStartError, TypeConfig};
use panel_machine::State;
use panel_machine::apply_batch;
use panel_machine::features::endorsers::organisations;
use panel_machine::{BatchReply, ItemReply};
use panel_proto::VerifiedMemo;
use panel_transport::LiveTrust;

const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

/// redb's page cache for `state.redb`. Its default (1 GiB) would let the record's pages
/// (read by exports, written by every apply) grow a replica's memory by that much; the
/// state machine reads its state from memory, so the cache serves only those reads.
const CACHE_BYTES: usize = 64 << 20;

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// One applied item, broadcast to `WatchEvents` subscribers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedEvent {
    pub log_index: u64,
    pub kind: String,
    pub reply: ItemReply<panel_machine::Reply>,
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
    /// snapshot age (docs/coordinator/operations.md, "Metrics and readiness").
    snapshot_at_ms: Arc<AtomicU64>,
    /// The replica's one memo of verified signatures: apply verifies through it, and the
    /// leader's intake and driver check through the same one ([`Self::memo`]), so apply
    /// finds what they verified instead of checking it again.
    memo: Arc<VerifiedMemo>,
    /// Set while a background write of record entries runs (`store_record_in_background`).
    storing: Arc<AtomicBool>,
    /// Where the state reads its retired motions (`motion_store`).
    archive: Arc<RedbArchive>,
    /// The transport's trust, which follows the organisations the applied record holds
    /// (docs/FEDERATION.md, "Trust follows the record"); `None` in the debug mode.
    trust: Option<LiveTrust>,
}

impl StateMachineStore {
    pub fn open(path: &Path) -> Result<Self, RaftStartError> {
        let db = open_db(path, Some(CACHE_BYTES), |tx| {
            tx.open_table(SNAPSHOT)?;
            record_store::create(tx)?;
            reply_store::create(tx)?;
            motion_store::create(tx)
        })?;
        let (mut applied, snapshot_id) = load(&db).map_err(|e| RaftStartError::Damaged {
            path: path.display().to_string(),
            detail: format!("the stored snapshot does not decode: {e}"),
        })?;
        let archive = RedbArchive::new(db.clone());
        attach(&mut applied.state, &archive);
        if let Some(e) = archive.take_failure() {
            return Err(RaftStartError::Damaged {
                path: path.display().to_string(),
                detail: format!("the retired motions' tally does not read: {e}"),
            });
        }
        let (events, _) = broadcast::channel(4096);
        Ok(Self {
            db,
            path: path.display().to_string().into(),
            shared: Arc::new(RwLock::new(applied)),
            events,
            snapshot_at_ms: Arc::new(AtomicU64::new(
                snapshot_id.as_deref().map_or(0, built_at_ms),
            )),
            memo: Arc::default(),
            storing: Arc::default(),
            archive,
            trust: None,
        })
    }

    /// Makes `trust` follow the organisations of the applied record from now on: at once,
    /// after every apply and after a snapshot is installed.
    pub fn following(mut self, trust: Option<LiveTrust>) -> Self {
        self.trust = trust;
        self.publish_trust();
        self
    }

    /// Puts the applied record's organisations in force in the transport, so an admitted
    /// organisation connects and a removed one is cut off within this apply.
    fn publish_trust(&self) {
        let Some(trust) = &self.trust else {
            return;
        };
        let g = self.shared.read().unwrap_or_else(PoisonError::into_inner);
        // Until the record adopts its charter, the charter file's founders are in force
        // (the group must be reachable to be initialised at all).
        if g.state.charter.is_none() {
            return;
        }
        if let Some(closed) = trust.set_organisations(organisations(&g.state)) {
            tracing::info!(
                organisations = trust.view().organisations().map_or(0, |o| o.len()),
                closed,
                "the record changed the organisations this replica trusts"
            );
        }
    }

    /// The memo apply verifies signatures through: a check made through it before
    /// proposing (intake, the driver) is not repeated by this replica's apply.
    pub fn memo(&self) -> &Arc<VerifiedMemo> {
        &self.memo
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

    /// Writes the held record entries to the store once at least `min` are held (encoded
    /// and written on the blocking pool), then drops them from memory; readers see them
    /// held until then, so the state and the store together always hold every entry
    /// (`record_store`).
    async fn store_record(&self, min: usize) -> Result<(), StoreError> {
        let Some(staged) = self.read(|a| record_store::Staged::of(&a.state, min)) else {
            return Ok(());
        };
        let db = self.db.clone();
        let end = staged.end();
        tokio::task::spawn_blocking(move || staged.write(&db)).await??;
        self.forget_stored(end);
        Ok(())
    }

    /// Drops the entries before `end` from memory, and the tree's leaves with them, once
    /// they are in the store (`record_store`).
    fn forget_stored(&self, end: u64) {
        let mut g = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        g.state.record.forget_before(end);
        g.state.tree.page_out(end);
    }

    /// [`Self::store_record`] in the background, at most one at a time: awaited in apply,
    /// a batch write held every apply behind it for tens of ms (paced p99 8 -> 48 ms,
    /// BENCHMARKS.md "Coordinator"). A failed write leaves the entries held; the next
    /// batch, or the snapshot's durable commit, writes them again, and a snapshot that
    /// cannot write stops the replica as any storage failure does.
    fn store_record_in_background(&self) {
        let due = self.read(|a| a.state.record.held_count() >= record_store::STORE_BATCH);
        if !due || self.storing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            if let Err(e) = me.store_record(record_store::STORE_BATCH).await {
                tracing::warn!("{}: storing record entries: {e}", me.path);
            }
            me.storing.store(false, Ordering::Release);
        });
    }

    /// A copy of the applied state that holds the whole record (an export, a backup):
    /// copied under the read lock, then given its stored entries outside it.
    pub(crate) fn whole_copy(&self) -> Result<Applied, FileError> {
        // The store is read as it stood when the copy was taken (`reply_store::complete`).
        let (mut copy, tx) = self.read(|a| (a.clone(), self.db.begin_read()));
        let tx = tx.map_err(|e| self.at(StoreError::from(e)))?;
        let applied = copy.last_applied.map_or(0, |l| l.index);
        complete(&tx, &mut copy.state, applied).map_err(|e| self.at(e))?;
        Ok(copy)
    }

    /// Record entry `seq` as applied, from memory or the store; `None` past the end.
    pub(crate) fn record_entry(
        &self,
        seq: u64,
    ) -> Result<Option<panel_machine::RecordEntry>, FileError> {
        let (held, len) = self.read(|a| (a.state.record.get(seq).cloned(), a.state.record.len()));
        if held.is_some() || seq >= len {
            return Ok(held);
        }
        record_store::read_one(&self.db, seq).map_err(|e| self.at(e))
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
    panel_machine::features::checkpoints::sync_tree(&mut state)
        .map_err(<serde_json::Error as serde::de::Error>::custom)?;
    Ok(state)
}

/// The state as of the stored snapshot (empty without one); openraft re-applies the log
/// entries after it. A snapshot that still holds record entries (written before entries
/// were stored apart, or seeded from a backup) has them moved into the record tables.
fn load(db: &Database) -> Result<(Applied, Option<String>), StoreError> {
    let tx = db.begin_read()?;
    let snap = tx.open_table(SNAPSHOT)?;
    let meta: Option<SnapshotMeta<NodeId, Member>> = read_json(&snap, "meta")?;
    let data = snap.get("data")?.map(|d| d.value().to_vec());
    drop(snap);
    drop(tx);
    let (Some(m), Some(data)) = (meta, data) else {
        return Ok((Applied::default(), None));
    };
    let mut state = decode_state(&data)?;
    record_store::load_tree(db, &mut state)?;
    if state.record.iter().next().is_some() {
        let mut tx = db.begin_write()?;
        tx.set_durability(redb::Durability::Immediate)?;
        record_store::write_held(&tx, &state)?;
        state.record.take_held();
        let live = serde_json::to_vec(&state)?;
        tx.open_table(SNAPSHOT)?.insert("data", live.as_slice())?;
        tx.commit()?;
    }
    Ok((
        Applied {
            state,
            last_applied: m.last_log_id,
            membership: m.last_membership,
        },
        Some(m.snapshot_id),
    ))
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

/// Makes `state` read what it retired or paged out through `archive` (motions, replies,
/// the tree's leaves).
fn attach(state: &mut State, archive: &Arc<RedbArchive>) {
    state.motions.attach(archive.clone());
    state.requests.attach(archive.clone());
    state.tree.attach(archive.clone());
}

/// Gives `state` (applied up to log index `applied`) back the record entries, motions and
/// replies it handed to the store, all read in `tx`, which began before anything newer
/// than `state` could change the store (`reply_store::complete`).
fn complete(tx: &redb::ReadTransaction, state: &mut State, applied: u64) -> Result<(), StoreError> {
    record_store::complete(tx, state)?;
    motion_store::complete(tx, state, applied)?;
    reply_store::complete(tx, state, applied)
}

/// A stored snapshot's state made whole ([`complete`]), as a follower installing it needs
/// it; `tx` is the transaction that read it.
fn with_whole_record(
    tx: &redb::ReadTransaction,
    live: &[u8],
    applied: u64,
) -> Result<Vec<u8>, StoreError> {
    let mut state: State = serde_json::from_slice(live)?;
    complete(tx, &mut state, applied)?;
    Ok(serde_json::to_vec(&state)?)
}

/// Applies entries to the shared state; returns the replies and the events to broadcast.
fn apply_entries(
    shared: &RwLock<Applied>,
    memo: &VerifiedMemo,
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
                let r = apply_batch(&mut g.state, e.log_id.index, &batch, memo);
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
        let (replies, events) = apply_entries(&self.shared, &self.memo, entries);
        if let Some(e) = self.archive.take_failure() {
            // A retired motion did not read: the apply may have answered wrongly, so it
            // must not count (openraft stops the replica on a storage error).
            return Err(StorageIOError::read_state_machine(&self.at(e)).into());
        }
        self.publish_trust();
        for ev in events {
            // No subscriber is fine.
            let _ = self.events.send(ev);
        }
        self.store_record_in_background();
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        // A consistent copy taken between two applies; building runs in another task.
        SnapshotBuilder {
            db: self.db.clone(),
            path: self.path.clone(),
            copy: self.read(Applied::clone),
            built_at_ms: self.snapshot_at_ms.clone(),
            shared: self.shared.clone(),
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
        let mut state = decode_state(&data)
            .map_err(|e| StorageIOError::read_snapshot(sig.clone(), &self.at(e)))?;
        drop(data);
        if !state.record.is_complete() {
            let e = StoreError::Record {
                detail: "a snapshot from the leader must carry the whole record".into(),
            };
            return Err(StorageIOError::read_snapshot(sig, &self.at(e)).into());
        }
        let meta_json = serde_json::to_vec(meta)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), &self.at(e)))?;
        // The entries go to the record tables and the live state to the snapshot, in one
        // durable commit; what this replica stored before is replaced.
        let mut state = write_durably(&self.db, &self.path, move |tx| {
            record_store::truncate(tx, 0)?;
            motion_store::truncate(tx)?;
            reply_store::truncate(tx)?;
            record_store::write_held(tx, &state)?;
            state.record.take_held();
            let live = serde_json::to_vec(&state)?;
            let mut s = tx.open_table(SNAPSHOT)?;
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", live.as_slice())?;
            Ok(state)
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(sig, &self.at(e)))?;
        // Every motion and reply is held now; the next snapshot built here retires again.
        attach(&mut state, &self.archive);
        state.tree.page_out(state.record.first_held());
        let mut g = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        *g = Applied {
            state,
            last_applied: meta.last_log_id,
            membership: meta.last_membership.clone(),
        };
        self.snapshot_at_ms
            .store(built_at_ms(&meta.snapshot_id), Ordering::Relaxed);
        drop(g);
        self.publish_trust();
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let read = || -> Result<Option<Snapshot<TypeConfig>>, StoreError> {
            let tx = self.db.begin_read()?;
            let t = tx.open_table(SNAPSHOT)?;
            let meta: Option<SnapshotMeta<NodeId, Member>> = read_json(&t, "meta")?;
            let data = t.get("data")?.map(|v| v.value().to_vec());
            let (Some(meta), Some(data)) = (meta, data) else {
                return Ok(None);
            };
            let applied = meta.last_log_id.map_or(0, |l| l.index);
            Ok(Some(Snapshot {
                meta,
                snapshot: Box::new(Cursor::new(with_whole_record(&tx, &data, applied)?)),
            }))
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
    /// The live state, which drops the motions and replies this snapshot retired once it is
    /// durable.
    shared: Arc<RwLock<Applied>>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        // The entries still held go to the record tables in the snapshot's own commit, and
        // the stored state leaves them out (`record_store`).
        let staged = record_store::Staged::of(&self.copy.state, 1);
        self.copy.state.record.take_held();
        // So do the decided motions it retires (`motion_store`).
        let retired = self.copy.state.motions.retirable();
        self.copy.state.motions.forget(&retired);
        // And its deduplication replies (`reply_store`).
        let replies = self.copy.state.requests.retirable();
        self.copy.state.requests.forget(&replies);
        let horizon = panel_machine::apply::dedup_horizon(&self.copy.state);
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
        let retired_rows = retired.clone();
        let reply_rows = replies.clone();
        let ours = meta.last_log_id;
        // Durable before openraft learns of it: openraft may purge the log right after.
        let stored_ours = write_durably(&self.db, &self.path, move |tx| {
            // A snapshot installed from the leader while this one was built is newer:
            // keep it (and the archive it emptied) rather than go back.
            let mut s = tx.open_table(SNAPSHOT)?;
            let newer = read_json::<SnapshotMeta<NodeId, Member>>(&s, "meta")?
                .is_some_and(|m| m.last_log_id > ours);
            if newer {
                return Ok(false);
            }
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", stored.as_slice())?;
            drop(s);
            if let Some(rows) = &staged {
                rows.write_in(tx)?;
            }
            motion_store::retire(tx, &retired_rows)?;
            reply_store::retire(tx, &reply_rows, horizon)?;
            Ok(true)
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &at(&self.path, e)))?;
        if stored_ours {
            self.built_at_ms
                .store((nanos / 1_000_000) as u64, Ordering::Relaxed);
            let mut live = self.shared.write().unwrap_or_else(PoisonError::into_inner);
            live.state.motions.forget(&retired);
            live.state.requests.forget(&replies);
        }
        // The write's closure (and its reference) is gone once the write returned.
        let data = Arc::try_unwrap(data).unwrap_or_else(|shared| shared.as_ref().clone());
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;
    use panel_machine::Stance;
    use panel_machine::command::ArbiterRegistration;
    use panel_machine::{Batch, ClientCommand, Item};

    /// Arbiter `i`'s registration under the key `seed` makes.
    fn arbiter_registration(i: u64, seed: [u8; 32]) -> ArbiterRegistration {
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        ArbiterRegistration {
            arbiter_id: format!("arb-{i}"),
            public_key: hex::encode(key.verifying_key().to_bytes()).into(),
            organisation: format!("org-{}", i % 2),
            model_family: format!("family-{i}"),
            stance: Stance::A,
            endpoint: String::new(),
            attestation: None,
            lineage: None,
        }
    }

    fn registration(i: u64) -> openraft::Entry<TypeConfig> {
        let reg = arbiter_registration(i, [i as u8 + 1; 32]);
        openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), i + 1),
            payload: EntryPayload::Normal(Batch {
                time_ms: 1_000 + i,
                seed: i,
                items: vec![Item {
                    client_id: "c".into(),
                    request_id: i,
                    command: ClientCommand::RegisterArbiter(reg).into(),
                    writer: None,
                }],
                limits: None,
                checkpoints: None,
                rules: None,
            }),
        }
    }

    /// A replica's state machine in a new directory: the directory (kept alive), the
    /// `state.redb` path to reopen and the store.
    fn fresh() -> (tempfile::TempDir, std::path::PathBuf, StateMachineStore) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.redb");
        let sm = StateMachineStore::open(&path).unwrap();
        (dir, path, sm)
    }

    /// Builds a snapshot of `sm` now, as openraft does every `--snapshot-logs` entries.
    async fn snapshot(sm: &mut StateMachineStore) {
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
    }

    /// `from`'s current snapshot as a follower receives it, installed on a new replica:
    /// the state shipped, the new replica's directory and the replica.
    async fn ship(from: &mut StateMachineStore) -> (State, tempfile::TempDir, StateMachineStore) {
        let shipped = from.get_current_snapshot().await.unwrap().unwrap();
        let state: State = serde_json::from_slice(shipped.snapshot.get_ref()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut other = StateMachineStore::open(&dir.path().join("state.redb")).unwrap();
        other
            .install_snapshot(&shipped.meta, shipped.snapshot)
            .await
            .unwrap();
        (state, dir, other)
    }

    fn root(sm: &StateMachineStore) -> (u64, panel_tlog::Hash) {
        sm.read(|a| (a.state.record.len(), a.state.tree.root()))
    }

    /// The record leaves memory after each apply, yet exports, restarts and a snapshot
    /// installed on another replica all see every entry and the same tree.
    #[tokio::test]
    async fn record_entries_live_in_the_store_not_in_memory() {
        let (_dir, path, mut sm) = fresh();
        sm.apply((0..3).map(registration)).await.unwrap();
        // Fewer than a store batch: still held, and readable as held.
        assert_eq!(sm.read(|a| a.state.record.iter().count()), 3);
        assert_eq!(sm.record_entry(2).unwrap().unwrap().seq, 2);
        sm.store_record(1).await.unwrap();
        assert_eq!(sm.read(|a| a.state.record.iter().count()), 0);
        let before = root(&sm);
        assert_eq!(before.0, 3);

        let whole = sm.whole_copy().unwrap();
        let seqs: Vec<u64> = whole.state.record.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(sm.record_entry(1).unwrap().unwrap().seq, 1);
        assert!(sm.record_entry(3).unwrap().is_none());

        snapshot(&mut sm).await;
        sm.apply((3..5).map(registration)).await.unwrap();
        let after = root(&sm);
        drop((sm, whole));

        // A restart: the snapshot (3 entries) plus the stored leaves; openraft then applies
        // entries 4 and 5 again, which overwrite their stored rows with the same bytes.
        let mut again = StateMachineStore::open(&path).unwrap();
        assert_eq!(root(&again), before);
        again.apply((3..5).map(registration)).await.unwrap();
        assert_eq!(root(&again), after);

        // What a follower receives carries the whole record.
        let (state, _other_dir, other) = ship(&mut again).await;
        assert!(state.record.is_complete());
        assert_eq!(state.record.len(), 3);
        assert_eq!(root(&other), before);
        assert_eq!(other.read(|a| a.state.record.iter().count()), 0);
        assert_eq!(other.record_entry(0).unwrap().unwrap().seq, 0);
        assert_eq!(other.whole_copy().unwrap().state.record.iter().count(), 3);
    }

    /// Entry `index` carrying `command` alone, under the current rule set.
    fn entry(index: u64, command: panel_machine::Command) -> openraft::Entry<TypeConfig> {
        openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Batch {
                time_ms: 1_000 + index,
                seed: index,
                items: vec![Item {
                    client_id: "c".into(),
                    request_id: index,
                    command,
                    writer: None,
                }],
                limits: None,
                checkpoints: None,
                rules: Some(panel_machine::rules::CURRENT),
            }),
        }
    }

    /// Every answer about motions a client can ask for.
    fn motion_answers(sm: &StateMachineStore, ids: &[String]) -> Vec<serde_json::Value> {
        use panel_machine::Query;
        let mut qs = vec![
            Query::Stats,
            Query::Debates,
            Query::DebateMotions {
                debate_id: "bench".into(),
            },
            Query::Motions { limit: None },
            Query::Motions { limit: Some(4) },
        ];
        qs.extend(ids.iter().map(|id| Query::Motion {
            motion_id: id.clone(),
        }));
        sm.read(|a| {
            qs.iter()
                .map(|q| panel_machine::read::query::query(&a.state, q))
                .collect()
        })
    }

    /// Decided motions leave memory with a snapshot, written in its commit, and are read
    /// back from the store: queries, exports, a restart, a snapshot shipped to another
    /// replica and later applies all see every motion as before (`motion_store`).
    #[tokio::test]
    async fn a_snapshot_retires_decided_motions_to_the_store() {
        use panel_machine::{ClientCommand, TestCommand};
        let (_dir, path, mut sm) = fresh();
        let keys: Vec<_> = (0..5).map(|i| crate::bench::arbiter(i, None)).collect();
        let mk = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let mut entries = Vec::new();
        for (_, reg) in &keys {
            entries.push(ClientCommand::RegisterArbiter(reg.clone()).into());
            entries.push(
                TestCommand::SetAdmission {
                    arbiter_id: reg.arbiter_id.clone(),
                    admitted: true,
                    score_milli: 900,
                }
                .into(),
            );
        }
        let decided = 30;
        for n in 0..decided {
            let (open, record) = crate::bench::decision(n, &keys, Some(&mk));
            entries.extend([open, record]);
        }
        // One more left open, decided after the restart.
        let (open, last_record) = crate::bench::decision(decided, &keys, Some(&mk));
        entries.push(open);
        let n_entries = entries.len() as u64;
        sm.apply(entries.into_iter().zip(1..).map(|(c, i)| entry(i, c)))
            .await
            .unwrap();
        let ids: Vec<String> = (0..=decided).map(|n| format!("bench-m{n}")).collect();
        let before = motion_answers(&sm, &ids);
        assert_eq!(sm.read(|a| a.state.motions.held_count()), decided + 1);
        assert_eq!(
            before[0]["accepted_motions"],
            serde_json::json!(decided),
            "{}",
            before[0]
        );

        snapshot(&mut sm).await;
        assert_eq!(
            sm.read(|a| a.state.motions.held_count()),
            1,
            "only the open one"
        );
        assert_eq!(sm.read(|a| a.state.motions.len()), decided + 1);
        assert_eq!(motion_answers(&sm, &ids), before);
        let whole = sm.whole_copy().unwrap();
        assert_eq!(whole.state.motions.held_count(), decided + 1);
        // A copy's tree reads paged-out leaves through the store, so it keeps it open.
        drop((sm, whole));

        let mut again = StateMachineStore::open(&path).unwrap();
        assert_eq!(again.read(|a| a.state.motions.held_count()), 1);
        assert_eq!(motion_answers(&again, &ids), before);
        let reply = again
            .apply([entry(n_entries + 1, last_record)])
            .await
            .unwrap();
        assert!(
            format!("{reply:?}").contains("Accepted"),
            "the open motion is decided after the restart: {reply:?}"
        );
        let after = motion_answers(&again, &ids);
        assert_eq!(after[0]["accepted_motions"], serde_json::json!(decided + 1));

        // What a follower receives carries every motion, and installing it holds them all
        // until its own next snapshot.
        let (state, _other_dir, mut other) = ship(&mut again).await;
        assert_eq!(state.motions.held_count(), decided + 1);
        assert_eq!(motion_answers(&other, &ids), before);
        snapshot(&mut other).await;
        assert_eq!(other.read(|a| a.state.motions.held_count()), 1);
        assert_eq!(motion_answers(&other, &ids), before);
    }

    /// The tree pages out the leaves the store holds and reads them back for proofs: every
    /// proof and root answers as a tree built from the whole record does, after a restart
    /// too (`panel_tlog::Log::page_out`).
    #[tokio::test]
    async fn the_tree_pages_out_stored_leaves_and_proves_from_the_store() {
        use panel_tlog::merkle::PAGE_LEVEL;
        let n = (1u64 << PAGE_LEVEL) + 76;
        let registration = |i: u64| {
            let mut seed = [9u8; 32];
            seed[..8].copy_from_slice(&i.to_le_bytes());
            let reg = arbiter_registration(i, seed);
            entry(i + 1, ClientCommand::RegisterArbiter(reg).into())
        };
        let (_dir, path, mut sm) = fresh();
        sm.apply((0..n).map(registration)).await.unwrap();
        assert_eq!(sm.read(|a| a.state.record.len()), n);
        sm.store_record(1).await.unwrap();
        assert_eq!(
            sm.read(|a| a.state.tree.held_leaves()),
            n - (1 << PAGE_LEVEL)
        );
        let mut whole = panel_tlog::Log::new();
        for e in sm.whole_copy().unwrap().state.record.iter() {
            whole.append(&e.leaf_bytes().expect("leaf"));
        }
        let of = |t: &panel_tlog::Log| {
            (
                t.root(),
                t.root_at(700),
                t.inclusion_proof(3, n),
                t.inclusion_proof(1_030, 1_040),
                t.consistency_proof(5, n),
                t.consistency_proof(1_000, 1_070),
            )
        };
        let answers = |sm: &StateMachineStore| sm.read(|a| of(&a.state.tree));
        let want = of(&whole);
        assert!(want.2.is_ok() && want.4.is_ok());
        assert_eq!(answers(&sm), want);
        snapshot(&mut sm).await;
        drop(sm);
        let again = StateMachineStore::open(&path).unwrap();
        assert!(again.read(|a| a.state.tree.held_leaves()) < 1 << PAGE_LEVEL);
        assert_eq!(answers(&again), want);
    }

    /// A note written at `index` and batch time `time_ms` with request id `request_id`.
    fn note(index: u64, time_ms: u64, request_id: u64) -> openraft::Entry<TypeConfig> {
        let mut e = entry(
            index,
            panel_machine::TestCommand::Note {
                topic: "t".into(),
                text: format!("{request_id}"),
            }
            .into(),
        );
        if let EntryPayload::Normal(b) = &mut e.payload {
            b.time_ms = time_ms;
            b.items[0].request_id = request_id;
        }
        e
    }

    /// Whether each item of `replies` was a duplicate, and the log index it answers from.
    fn dedup(replies: &[BatchReply]) -> Vec<(bool, u64)> {
        replies
            .iter()
            .flat_map(|r| r.items.iter().map(|i| (i.duplicate, i.log_index)))
            .collect()
    }

    /// Deduplication replies leave memory with a snapshot and still answer retries: after
    /// a restart, in an export, on a replica the snapshot was shipped to; and a snapshot
    /// whose prune dropped them deletes them from the store (`reply_store`).
    #[tokio::test]
    async fn a_snapshot_retires_replies_and_deletes_expired_ones() {
        use panel_machine::apply::{DEDUP_MIN_KEEP_ENTRIES, DEDUP_TTL_MS};
        let (_dir, path, mut sm) = fresh();
        let t0 = 3_600_000;
        sm.apply((1..=5).map(|i| note(i, t0 + i, i))).await.unwrap();
        snapshot(&mut sm).await;
        assert_eq!(sm.read(|a| a.state.requests.held_count()), 0);
        assert_eq!(sm.read(|a| a.state.requests.len()), 5);
        let retry = sm.apply([note(6, t0 + 6, 3)]).await.unwrap();
        assert_eq!(dedup(&retry), [(true, 3)]);
        assert_eq!(
            sm.whole_copy().unwrap().state.requests.held_count(),
            5,
            "an export carries the retired replies"
        );
        drop(sm);

        let mut again = StateMachineStore::open(&path).unwrap();
        let retry = again.apply([note(6, t0 + 6, 2)]).await.unwrap();
        assert_eq!(dedup(&retry), [(true, 2)], "after a restart");
        let (state, _other_dir, mut other) = ship(&mut again).await;
        assert_eq!(state.requests.held_count(), 5, "shipped whole");
        let retry = other.apply([note(7, t0 + 7, 5)]).await.unwrap();
        assert_eq!(
            dedup(&retry),
            [(true, 5)],
            "on the replica it was shipped to"
        );

        // A day and an entry window later a prune drops them: a retry applies anew, and
        // the next snapshot deletes them from the store.
        let far = 10 + DEDUP_MIN_KEEP_ENTRIES;
        let later = t0 + DEDUP_TTL_MS + 120_000;
        let replies = again
            .apply([note(far, later, 100), note(far + 1, later + 1, 1)])
            .await
            .unwrap();
        assert_eq!(dedup(&replies), [(false, far), (false, far + 1)]);
        snapshot(&mut again).await;
        assert_eq!(
            again.read(|a| a.state.requests.len()),
            2,
            "expired rows deleted"
        );
        let retry = again.apply([note(far + 2, later + 2, 1)]).await.unwrap();
        assert_eq!(dedup(&retry), [(true, far + 1)], "the key's new reply");
    }

    /// A snapshot built from a copy older than one installed from the leader meanwhile
    /// does not replace it: the stored snapshot never goes back.
    #[tokio::test]
    async fn an_older_built_snapshot_does_not_replace_an_installed_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = StateMachineStore::open(&dir.path().join("state.redb")).unwrap();
        sm.apply((0..2).map(registration)).await.unwrap();
        let mut stale = sm.get_snapshot_builder().await;
        let leader_dir = tempfile::tempdir().unwrap();
        let mut leader = StateMachineStore::open(&leader_dir.path().join("state.redb")).unwrap();
        leader.apply((0..5).map(registration)).await.unwrap();
        snapshot(&mut leader).await;
        let shipped = leader.get_current_snapshot().await.unwrap().unwrap();
        sm.install_snapshot(&shipped.meta, shipped.snapshot)
            .await
            .unwrap();
        stale.build_snapshot().await.unwrap();
        let current = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta.last_log_id.map(|l| l.index), Some(5));
        drop((sm, stale));
        let again = StateMachineStore::open(&dir.path().join("state.redb")).unwrap();
        assert_eq!(root(&again), root(&leader));
    }

    /// A snapshot built while entries are still held writes them in its own commit: a
    /// restart from it finds every entry it counts.
    #[tokio::test]
    async fn a_snapshot_stores_the_entries_still_held() {
        let (_dir, path, mut sm) = fresh();
        sm.apply((0..4).map(registration)).await.unwrap();
        assert_eq!(sm.read(|a| a.state.record.iter().count()), 4);
        let want = root(&sm);
        snapshot(&mut sm).await;
        drop(sm);
        let again = StateMachineStore::open(&path).unwrap();
        assert_eq!(root(&again), want);
        assert_eq!(again.whole_copy().unwrap().state.record.len(), 4);
        assert_eq!(again.record_entry(3).unwrap().unwrap().seq, 3);
    }

    /// A snapshot written before entries were stored apart holds them in the state; the
    /// first start moves them into the tables and keeps the tree.
    #[tokio::test]
    async fn an_old_snapshot_with_the_record_inside_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut offline = State::default();
        for i in 0..3 {
            let EntryPayload::Normal(b) = registration(i).payload else {
                unreachable!()
            };
            panel_machine::apply_batch(&mut offline, i + 1, &b, &VerifiedMemo::default());
        }
        let old_json = serde_json::to_vec(&offline).unwrap();
        let meta = SnapshotMeta {
            last_log_id: Some(LogId::new(CommittedLeaderId::new(1, 1), 3)),
            last_membership: StoredMembership::default(),
            snapshot_id: "1-3-0".into(),
        };
        let path = dir.path().join("state.redb");
        seed_snapshot(&path, &meta, &old_json).unwrap();
        let sm = StateMachineStore::open(&path).unwrap();
        assert_eq!(root(&sm), (3, offline.tree.root()));
        assert_eq!(sm.read(|a| a.state.record.iter().count()), 0);
        let whole = sm.whole_copy().unwrap();
        assert_eq!(whole.state.record, offline.record);
    }
}
