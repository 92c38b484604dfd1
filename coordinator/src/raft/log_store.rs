//! The Raft log and vote in redb (`log.redb`).
//!
//! Tables: `raft_log` (u64 index -> JSON entry) and `raft_meta` (`vote`, `committed`,
//! `last_purged` -> JSON). Every write is one redb transaction with `Durability::Immediate`
//! (fsync before `commit()` returns), run on the blocking pool. `append` signals
//! `LogFlushed::log_io_completed` only after that commit returned, so openraft never counts
//! an entry towards a quorum before it is on disk here.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{LogId, NodeId, RaftStartError, TypeConfig};

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("raft_log");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("raft_meta");

type StorageResult<T> = Result<T, StorageError<NodeId>>;

/// Internal failure of a store operation, mapped to openraft's error subjects by callers.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("redb: {0}")]
    Redb(#[from] redb::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error("blocking task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

macro_rules! redb_from {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { StoreError::Redb(e.into()) }
        }
    )*};
}
redb_from!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

/// Run a redb write transaction with `Durability::Immediate` on the blocking pool.
pub(crate) async fn write_durably<T, F>(db: &Arc<Database>, f: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&redb::WriteTransaction) -> Result<T, StoreError> + Send + 'static,
{
    let db = db.clone();
    tokio::task::spawn_blocking(move || {
        let mut tx = db.begin_write()?;
        tx.set_durability(Durability::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })
    .await?
}

/// Open `path`, creating the file and `tables` if absent.
pub(crate) fn open_db(
    path: &Path,
    create: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::TableError>,
) -> Result<Arc<Database>, RaftStartError> {
    let err = |e: redb::Error| RaftStartError::Open {
        path: path.display().to_string(),
        source: e,
    };
    let db = Database::create(path).map_err(|e| err(e.into()))?;
    let tx = db.begin_write().map_err(|e| err(e.into()))?;
    create(&tx).map_err(|e| err(e.into()))?;
    tx.commit().map_err(|e| err(e.into()))?;
    Ok(Arc::new(db))
}

/// Handle on the log database; cheap to clone (it is also the log reader).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Database>,
}

impl LogStore {
    pub fn open(path: &Path) -> Result<Self, RaftStartError> {
        let db = open_db(path, |tx| {
            tx.open_table(LOG)?;
            tx.open_table(META)?;
            Ok(())
        })?;
        Ok(Self { db })
    }

    fn read_meta<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(META)?;
        match t.get(key)? {
            Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
            None => Ok(None),
        }
    }

    async fn write_meta<T: Serialize>(&self, key: &'static str, v: &T) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(v)?;
        write_durably(&self.db, move |tx| {
            tx.open_table(META)?.insert(key, bytes.as_slice())?;
            Ok(())
        })
        .await
    }

    fn entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
    ) -> Result<Vec<Entry<TypeConfig>>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(LOG)?;
        let mut out = Vec::new();
        for row in t.range(range)? {
            let (_, v) = row?;
            out.push(serde_json::from_slice(v.value())?);
        }
        Ok(out)
    }

    fn last_entry_id(&self) -> Result<Option<LogId>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(LOG)?;
        match t.last()? {
            Some((_, v)) => {
                let e: Entry<TypeConfig> = serde_json::from_slice(v.value())?;
                Ok(Some(e.log_id))
            }
            None => Ok(None),
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let r = (range.start_bound().cloned(), range.end_bound().cloned());
        self.entries(r)
            .map_err(|e| StorageIOError::read_logs(&e).into())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let purged: Option<LogId> = self
            .read_meta("last_purged")
            .map_err(|e| StorageIOError::read_logs(&e))?;
        let last = self
            .last_entry_id()
            .map_err(|e| StorageIOError::read_logs(&e))?;
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last.or(purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        self.write_meta("vote", vote)
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.read_meta("vote")
            .map_err(|e| StorageIOError::read_vote(&e).into())
    }

    /// Saving the committed id lets a restarted replica re-apply its committed entries
    /// before any leader is elected. It is a hint openraft may see lag (a lost value is
    /// re-learned from the leader), so it is written with `Durability::None`: it costs no
    /// fsync of its own and becomes durable with the next log append's commit.
    async fn save_committed(&mut self, committed: Option<LogId>) -> StorageResult<()> {
        let bytes = serde_json::to_vec(&committed).map_err(|e| StorageIOError::write(&e))?;
        // No fsync, a few microseconds of work: done in place, since a hop to the blocking
        // pool (a thread wake-up and two context switches) would cost more than the write.
        let write = || -> Result<(), StoreError> {
            let mut tx = self.db.begin_write()?;
            tx.set_durability(Durability::None)?;
            tx.open_table(META)?.insert("committed", bytes.as_slice())?;
            tx.commit()?;
            Ok(())
        };
        write().map_err(|e| StorageIOError::write(&e).into())
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId>> {
        Ok(self
            .read_meta::<Option<LogId>>("committed")
            .map_err(|e| StorageIOError::read(&e))?
            .flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let rows: Result<Vec<(u64, Vec<u8>)>, serde_json::Error> = entries
            .into_iter()
            .map(|e| Ok((e.log_id.index, serde_json::to_vec(&e)?)))
            .collect();
        let result = match rows {
            Ok(rows) => {
                write_durably(&self.db, move |tx| {
                    let mut t = tx.open_table(LOG)?;
                    for (i, bytes) in &rows {
                        t.insert(*i, bytes.as_slice())?;
                    }
                    Ok(())
                })
                .await
            }
            Err(e) => Err(e.into()),
        };
        match result {
            Ok(()) => {
                // Durable now: only here may openraft count these entries as flushed.
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(io::Error::other(e.to_string())));
                Err(StorageIOError::write_logs(&e).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> StorageResult<()> {
        let from = log_id.index;
        write_durably(&self.db, move |tx| {
            let mut t = tx.open_table(LOG)?;
            t.retain_in(from.., |_, _| false)?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId) -> StorageResult<()> {
        let bytes = serde_json::to_vec(&log_id).map_err(|e| StorageIOError::write_logs(&e))?;
        let upto = log_id.index;
        write_durably(&self.db, move |tx| {
            tx.open_table(META)?
                .insert("last_purged", bytes.as_slice())?;
            tx.open_table(LOG)?.retain_in(..=upto, |_, _| false)?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
