//! The state machine adapter: runs the pure [`crate::state::apply_batch`] and keeps its
//! tables in redb (`state.redb`).
//!
//! Tables: one per state table (`kv`, `notes`, `arbiters`, `motions`, `requests`; string key
//! -> JSON row), `sm_meta` (`last_applied`, `membership`) and `snapshot` (`meta`, `data`).
//! After each applied run of entries the changed rows and `last_applied` are written in one
//! transaction, so the stored state is always a committed prefix of the log. That
//! transaction is made durable (fsync) at most once per [`DURABLE_EVERY`]: the log is the
//! durable truth and apply is deterministic, so a crash that loses the newest non-durable
//! state commits only makes openraft re-apply those entries from the log on restart (a
//! snapshot is always written durably, and the log is purged only behind a snapshot). This
//! halves the fsyncs on the write path, where the log's own fsync is the one Raft needs. Snapshots are the JSON of the whole [`State`], stored durably before openraft
//! is told about them; installing one rewrites every table in one transaction.

use std::io::Cursor;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use redb::{Database, Durability, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::log_store::{StoreError, open_db, write_durably, write_with};
use super::{LogId, Member, NodeId, RaftStartError, TypeConfig};
use crate::command::{BatchReply, ItemReply};
use crate::state::{self, RowChanges, State};

/// Changed rows per named table.
type TableChanges = Vec<(&'static str, RowChanges)>;

const SM_META: TableDefinition<&str, &[u8]> = TableDefinition::new("sm_meta");
const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

fn table_def(name: &'static str) -> TableDefinition<'static, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}

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

/// How often applied state is made durable; in between, state commits skip the fsync.
pub const DURABLE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Shared handle: openraft owns one clone, the client API reads through another.
#[derive(Clone)]
pub struct StateMachineStore {
    db: Arc<Database>,
    shared: Arc<RwLock<Applied>>,
    events: broadcast::Sender<AppliedEvent>,
    /// When the last durable state commit happened.
    durable_at: Arc<std::sync::Mutex<std::time::Instant>>,
}

impl StateMachineStore {
    pub fn open(path: &Path) -> Result<Self, RaftStartError> {
        let db = open_db(path, |tx| {
            tx.open_table(SM_META)?;
            tx.open_table(SNAPSHOT)?;
            for (name, _) in State::default().tables() {
                tx.open_table(table_def(name))?;
            }
            Ok(())
        })?;
        let applied = load(&db).map_err(|e| RaftStartError::Corrupt(e.to_string()))?;
        let (events, _) = broadcast::channel(4096);
        Ok(Self {
            db,
            shared: Arc::new(RwLock::new(applied)),
            events,
            durable_at: Arc::new(std::sync::Mutex::new(std::time::Instant::now())),
        })
    }

    /// Run `f` on the current state (a local, possibly stale read on a follower).
    pub fn read<T>(&self, f: impl FnOnce(&Applied) -> T) -> T {
        f(&self.shared.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<AppliedEvent> {
        self.events.subscribe()
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

/// Load the state tables; if the stored snapshot is newer (never expected, as installs
/// are atomic) restore from it instead.
fn load(db: &Database) -> Result<Applied, StoreError> {
    let tx = db.begin_read()?;
    let meta = tx.open_table(SM_META)?;
    let mut applied = Applied {
        state: State::default(),
        last_applied: read_json(&meta, "last_applied")?.flatten(),
        membership: read_json(&meta, "membership")?.unwrap_or_default(),
    };
    for (name, table) in applied.state.tables_mut() {
        let t = tx.open_table(table_def(name))?;
        for row in redb::ReadableTable::iter(&t)? {
            let (k, v) = row?;
            table.load_row(k.value().to_owned(), v.value())?;
        }
    }
    let snap = tx.open_table(SNAPSHOT)?;
    let snap_meta: Option<SnapshotMeta<NodeId, Member>> = read_json(&snap, "meta")?;
    if let Some(m) = snap_meta
        && m.last_log_id > applied.last_applied
        && let Some(data) = snap.get("data")?
    {
        applied = Applied {
            state: serde_json::from_slice(data.value())?,
            last_applied: m.last_log_id,
            membership: m.last_membership,
        };
    }
    Ok(applied)
}

/// Write the changed rows and the applied position in one transaction.
async fn persist_changes(
    db: &Arc<Database>,
    durability: Durability,
    changes: TableChanges,
    last_applied: Vec<u8>,
    membership: Vec<u8>,
) -> Result<(), StoreError> {
    write_with(db, durability, move |tx| {
        for (name, rows) in &changes {
            let mut t = tx.open_table(table_def(name))?;
            for (k, v) in rows {
                match v {
                    Some(bytes) => {
                        t.insert(k.as_str(), bytes.as_slice())?;
                    }
                    None => {
                        t.remove(k.as_str())?;
                    }
                }
            }
        }
        let mut m = tx.open_table(SM_META)?;
        m.insert("last_applied", last_applied.as_slice())?;
        m.insert("membership", membership.as_slice())?;
        Ok(())
    })
    .await
}

fn take_changes(a: &mut Applied) -> Result<(TableChanges, Vec<u8>, Vec<u8>), StoreError> {
    let mut changes = Vec::new();
    for (name, table) in a.state.tables_mut() {
        let rows = table.take_dirty()?;
        if !rows.is_empty() {
            changes.push((name, rows));
        }
    }
    Ok((
        changes,
        serde_json::to_vec(&a.last_applied)?,
        serde_json::to_vec(&a.membership)?,
    ))
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
        let entries: Vec<_> = entries.into_iter().collect();
        let shared = self.shared.clone();
        // Signature checks inside apply are CPU work: keep them off the async workers.
        let computed = tokio::task::spawn_blocking(move || {
            let mut g = shared.write().unwrap_or_else(PoisonError::into_inner);
            let mut replies = Vec::with_capacity(entries.len());
            let mut events = Vec::new();
            for e in entries {
                g.last_applied = Some(e.log_id);
                match e.payload {
                    EntryPayload::Blank => replies.push(BatchReply::default()),
                    EntryPayload::Normal(batch) => {
                        let r = state::apply_batch(&mut g.state, e.log_id.index, &batch);
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
            let changes = take_changes(&mut g)?;
            Ok::<_, StoreError>((replies, events, changes))
        })
        .await
        .map_err(|e| StorageIOError::write_state_machine(&e))?;
        let (replies, events, (changes, last, membership)) =
            computed.map_err(|e| StorageIOError::write_state_machine(&e))?;
        let durability = {
            let mut at = self
                .durable_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if at.elapsed() >= DURABLE_EVERY {
                *at = std::time::Instant::now();
                Durability::Immediate
            } else {
                Durability::None
            }
        };
        persist_changes(&self.db, durability, changes, last, membership)
            .await
            .map_err(|e| StorageIOError::write_state_machine(&e))?;
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
            copy: self.read(Applied::clone),
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
        let state: State = serde_json::from_slice(&data)
            .map_err(|e| StorageIOError::read_snapshot(sig.clone(), &e))?;
        let mut rows = Vec::new();
        for (name, table) in state.tables() {
            rows.push((
                name,
                table
                    .all_rows()
                    .map_err(|e| StorageIOError::read_snapshot(sig.clone(), &e))?,
            ));
        }
        let meta_json = serde_json::to_vec(meta)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), &e))?;
        let last = serde_json::to_vec(&meta.last_log_id)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), &e))?;
        let membership = serde_json::to_vec(&meta.last_membership)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), &e))?;
        write_durably(&self.db, move |tx| {
            for (name, rows) in &rows {
                tx.delete_table(table_def(name))?;
                let mut t = tx.open_table(table_def(name))?;
                for (k, v) in rows {
                    t.insert(k.as_str(), v.as_slice())?;
                }
            }
            let mut m = tx.open_table(SM_META)?;
            m.insert("last_applied", last.as_slice())?;
            m.insert("membership", membership.as_slice())?;
            let mut s = tx.open_table(SNAPSHOT)?;
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", data.as_slice())?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(sig, &e))?;
        let mut g = self.shared.write().unwrap_or_else(PoisonError::into_inner);
        *g = Applied {
            state,
            last_applied: meta.last_log_id,
            membership: meta.last_membership.clone(),
        };
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
        read().map_err(|e| StorageIOError::read_snapshot(None, &e).into())
    }
}

/// Serializes a copy of the state taken by `get_snapshot_builder`.
pub struct SnapshotBuilder {
    db: Arc<Database>,
    copy: Applied,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let data = serde_json::to_vec(&self.copy.state)
            .map_err(|e| StorageIOError::read_state_machine(&e))?;
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
        let meta_json = serde_json::to_vec(&meta)
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        let stored = data.clone();
        // Durable before openraft learns of it: openraft may purge the log right after.
        write_durably(&self.db, move |tx| {
            let mut s = tx.open_table(SNAPSHOT)?;
            s.insert("meta", meta_json.as_slice())?;
            s.insert("data", stored.as_slice())?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}
