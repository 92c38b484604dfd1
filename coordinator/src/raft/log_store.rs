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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};
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
    /// The stored record does not match the state (`record_store`).
    #[error("the stored record: {detail}")]
    Record { detail: String },
    #[error("the stored record: {0}")]
    Leaf(#[from] panel_machine::LeafError),
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
    redb::SetDurabilityError,
    redb::DatabaseError
);

/// Writes a new `log.redb` at `path` for a replica restored from a backup
/// (`raft::restore`): no entries, purged and committed up to `at` (the backup's last
/// applied entry, which the snapshot beside it covers), and a vote in `at`'s term, so
/// the replica's first election is in a later term than every entry it holds.
pub(crate) fn seed_restored_log(
    path: &Path,
    vote: &Vote<NodeId>,
    at: LogId,
) -> Result<(), StoreError> {
    let db = Database::create(path)?;
    let vote = serde_json::to_vec(vote)?;
    let purged = serde_json::to_vec(&at)?;
    let committed = serde_json::to_vec(&Some(at))?;
    let mut tx = db.begin_write()?;
    tx.set_durability(Durability::Immediate)?;
    {
        tx.open_table(LOG)?;
        let mut meta = tx.open_table(META)?;
        meta.insert("vote", vote.as_slice())?;
        meta.insert("last_purged", purged.as_slice())?;
        meta.insert("committed", committed.as_slice())?;
    }
    tx.commit()?;
    Ok(())
}

/// Run a redb write transaction with `Durability::Immediate` on the blocking pool. A
/// failure is also noted beside the file ([`note_failed_commit`]), so the next start can
/// tell a commit that failed here, and was never acknowledged, from a damaged one.
pub(crate) async fn write_durably<T, F>(
    db: &Arc<Database>,
    path: &Arc<str>,
    f: F,
) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&redb::WriteTransaction) -> Result<T, StoreError> + Send + 'static,
{
    let db = db.clone();
    let path = path.clone();
    tokio::task::spawn_blocking(move || {
        let run = || -> Result<T, StoreError> {
            let mut tx = db.begin_write()?;
            tx.set_durability(Durability::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().inspect_err(|e| note_failed_commit(&path, e))
    })
    .await?
}

/// Name of the note a failed write transaction leaves beside `path`.
fn failed_commit_note(path: &str) -> PathBuf {
    PathBuf::from(format!("{path}.commit-failed"))
}

/// Best effort, on a full disk too (an empty file needs no data block): records that a
/// write transaction on `path` failed. Its commit was then never reported as done, so
/// nothing it held was acknowledged, and the next open may let redb roll it back
/// ([`open_db`]). Without the note such a roll-back is refused as damage, which is safe.
pub(crate) fn note_failed_commit(path: &str, e: &dyn std::fmt::Display) {
    let note = failed_commit_note(path);
    match std::fs::File::create(&note) {
        Ok(mut f) => {
            use std::io::Write;
            let _ = writeln!(f, "{e}");
            let _ = f.sync_all();
        }
        Err(err) => tracing::error!("cannot write {}: {err}", note.display()),
    }
}

/// A store failure with the file it happened on, so an operator reading a replica's last
/// words (a full disk, an I/O error on commit) and a client reading its error both know
/// which file failed and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {error}")]
pub(crate) struct FileError {
    pub(crate) path: Arc<str>,
    pub(crate) error: StoreError,
}

/// Progress a redb 4.6 repair reports only when the newest commit of the file does not
/// verify, just before it falls back to the previous commit (`Database::do_repair`: 0.0 at
/// the start of every repair, then 0.3 on that fallback, 0.6 and 0.9 otherwise).
const FALLBACK_PROGRESS: std::ops::Range<f64> = 0.2..0.5;

/// Open `path`, creating the file and `tables` if absent.
///
/// Every page checksum is verified on open (`set_check_integrity_on_open`), so bytes
/// altered on disk are found before anything is read, not at some later read. A repair
/// that would fall back to the previous commit is aborted: a commit that was fsynced and
/// then damaged may hold entries this replica acknowledged, and rolling it back silently
/// would drop them (docs/coordinator/storage.md, "Disk faults and recovery"). Commits are fsynced
/// before anything counts on them, so a kill cannot tear one; only damage can, or a
/// commit that failed (a full disk), which [`note_failed_commit`] records: then the roll
/// back is what redb is for, and it is allowed. `cache_bytes` bounds redb's page cache
/// (`None`: redb's default).
pub(crate) fn open_db(
    path: &Path,
    cache_bytes: Option<usize>,
    create: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::TableError>,
) -> Result<Arc<Database>, RaftStartError> {
    let shown = path.display().to_string();
    let note = failed_commit_note(&shown);
    let commit_failed = note.exists();
    let fell_back = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut builder = Database::builder();
    builder.set_check_integrity_on_open(true);
    if let Some(bytes) = cache_bytes {
        builder.set_cache_size(bytes);
    }
    {
        let fell_back = fell_back.clone();
        builder.set_repair_callback(move |session| {
            if FALLBACK_PROGRESS.contains(&session.progress()) {
                fell_back.store(true, SeqCst);
                if !commit_failed {
                    session.abort();
                }
            }
        });
    }
    // Debug builds of redb assert on some malformed pages instead of returning
    // `Corrupted`; either way the file is damaged.
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.create(path)))
        .map_err(|_| RaftStartError::Damaged {
            path: shown.clone(),
            detail: "redb could not read the file (it panicked on a malformed page)".into(),
        })?;
    let db = opened.map_err(|e| classify_open_error(&shown, e, fell_back.load(SeqCst)))?;
    let err = |e: redb::Error| RaftStartError::Open {
        path: shown.clone(),
        source: e,
    };
    let tx = db.begin_write().map_err(|e| err(e.into()))?;
    create(&tx).map_err(|e| err(e.into()))?;
    tx.commit().map_err(|e| err(e.into()))?;
    if commit_failed {
        if fell_back.load(SeqCst) {
            tracing::warn!(
                "{shown}: rolled back the write that failed in the last run (never acknowledged)"
            );
        }
        std::fs::remove_file(&note).map_err(|e| err(redb::StorageError::Io(e).into()))?;
    }
    Ok(Arc::new(db))
}

/// Damage (checksums, truncation, a refused rollback) versus a file this process cannot
/// use for another reason (locked by another replica, no permission, no space).
fn classify_open_error(path: &str, e: redb::DatabaseError, fell_back: bool) -> RaftStartError {
    use redb::{DatabaseError as D, StorageError as S};
    let damaged = |detail: String| RaftStartError::Damaged {
        path: path.to_owned(),
        detail,
    };
    match e {
        D::RepairAborted if fell_back => damaged(
            "its newest commit fails its checksum, and redb's repair would roll the file back \
             to the commit before it, dropping what that commit held"
                .into(),
        ),
        D::Storage(S::Corrupted(m)) => damaged(format!("redb integrity check: {m}")),
        D::Storage(S::Io(io))
            if !matches!(
                io.kind(),
                io::ErrorKind::StorageFull
                    | io::ErrorKind::PermissionDenied
                    | io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::ResourceBusy
            ) =>
        {
            damaged(format!("reading it failed: {io}"))
        }
        other => RaftStartError::Open {
            path: path.to_owned(),
            source: other.into(),
        },
    }
}

/// Handle on the log database; cheap to clone (it is also the log reader).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Database>,
    path: Arc<str>,
    /// The newest committed index openraft told this store (`save_committed`), for the
    /// metrics endpoint's apply lag and readiness: openraft 0.9's metrics do not carry it.
    committed: CommitIndex,
}

/// The committed log index as this replica last learned it (0 before any); a cheap shared
/// handle (docs/coordinator/operations.md, "Metrics and readiness").
#[derive(Debug, Clone, Default)]
pub struct CommitIndex(Arc<std::sync::atomic::AtomicU64>);

impl CommitIndex {
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set(&self, committed: Option<LogId>) {
        let index = committed.map_or(0, |l| l.index);
        self.0.store(index, std::sync::atomic::Ordering::Relaxed);
    }
}

impl LogStore {
    pub fn open(path: &Path) -> Result<Self, RaftStartError> {
        let db = open_db(path, None, |tx| {
            tx.open_table(LOG)?;
            tx.open_table(META)?;
            Ok(())
        })?;
        let store = Self {
            db,
            path: path.display().to_string().into(),
            committed: CommitIndex::default(),
        };
        store.check()?;
        let committed = store
            .read_meta::<Option<LogId>>("committed")
            .map_err(|e| RaftStartError::Damaged {
                path: path.display().to_string(),
                detail: format!("the committed index does not decode: {e}"),
            })?
            .flatten();
        store.committed.set(committed);
        Ok(store)
    }

    /// The handle the metrics endpoint reads the committed index through.
    pub fn commit_index(&self) -> CommitIndex {
        self.committed.clone()
    }

    /// `e` on this store's file, for openraft's error subjects.
    fn at(&self, e: impl Into<StoreError>) -> FileError {
        FileError {
            path: self.path.clone(),
            error: e.into(),
        }
    }

    /// What the checksums cannot see: the vote and the log bounds decode, and the log is
    /// one run of indexes starting right after the purged position. A gap would make
    /// openraft serve a log with entries missing from its middle.
    fn check(&self) -> Result<(), RaftStartError> {
        let damaged = |detail: String| RaftStartError::Damaged {
            path: self.path.to_string(),
            detail,
        };
        self.read_meta::<Vote<NodeId>>("vote")
            .map_err(|e| damaged(format!("the stored vote does not decode: {e}")))?;
        let purged = self.purged()?;
        let (first, last, rows) = (|| -> Result<_, StoreError> {
            let tx = self.db.begin_read()?;
            let t = tx.open_table(LOG)?;
            let first = t.first()?.map(|(k, _)| k.value());
            let last = t.last()?.map(|(k, _)| k.value());
            Ok((first, last, t.len()?))
        })()
        .map_err(|e| damaged(format!("the log table cannot be read: {e}")))?;
        if let (Some(first), Some(last)) = (first, last) {
            if let Some(p) = purged
                && first != p + 1
            {
                return Err(damaged(format!(
                    "the log starts at index {first}, not right after the purged index {p}"
                )));
            }
            if last - first + 1 != rows {
                return Err(damaged(format!(
                    "the log holds {rows} entries between indexes {first} and {last}: some are missing"
                )));
            }
            self.last_entry_id()
                .map_err(|e| damaged(format!("the last log entry does not decode: {e}")))?;
        }
        Ok(())
    }

    /// The index up to which the log was purged (0 if never).
    pub(crate) fn purged_index(&self) -> Result<u64, RaftStartError> {
        Ok(self.purged()?.unwrap_or(0))
    }

    fn purged(&self) -> Result<Option<u64>, RaftStartError> {
        self.read_meta::<LogId>("last_purged")
            .map(|p| p.map(|l| l.index))
            .map_err(|e| RaftStartError::Damaged {
                path: self.path.to_string(),
                detail: format!("the purged position does not decode: {e}"),
            })
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
        write_durably(&self.db, &self.path, move |tx| {
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
            .map_err(|e| StorageIOError::read_logs(&self.at(e)).into())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let purged: Option<LogId> = self
            .read_meta("last_purged")
            .map_err(|e| StorageIOError::read_logs(&self.at(e)))?;
        let last = self
            .last_entry_id()
            .map_err(|e| StorageIOError::read_logs(&self.at(e)))?;
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
            .map_err(|e| StorageIOError::write_vote(&self.at(e)).into())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        self.read_meta("vote")
            .map_err(|e| StorageIOError::read_vote(&self.at(e)).into())
    }

    /// Saving the committed id lets a restarted replica re-apply its committed entries
    /// before any leader is elected. It is a hint openraft may see lag (a lost value is
    /// re-learned from the leader), so it is written with `Durability::None`: it costs no
    /// fsync of its own and becomes durable with the next log append's commit.
    async fn save_committed(&mut self, committed: Option<LogId>) -> StorageResult<()> {
        self.committed.set(committed);
        let bytes =
            serde_json::to_vec(&committed).map_err(|e| StorageIOError::write(&self.at(e)))?;
        // No fsync, a few microseconds of work: done in place, since a hop to the blocking
        // pool (a thread wake-up and two context switches) would cost more than the write.
        let write = || -> Result<(), StoreError> {
            let mut tx = self.db.begin_write()?;
            tx.set_durability(Durability::None)?;
            tx.open_table(META)?.insert("committed", bytes.as_slice())?;
            tx.commit()?;
            Ok(())
        };
        write().map_err(|e| {
            note_failed_commit(&self.path, &e);
            StorageIOError::write(&self.at(e)).into()
        })
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId>> {
        Ok(self
            .read_meta::<Option<LogId>>("committed")
            .map_err(|e| StorageIOError::read(&self.at(e)))?
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
                write_durably(&self.db, &self.path, move |tx| {
                    let mut t = tx.open_table(LOG)?;
                    for (i, bytes) in &rows {
                        t.insert(*i, bytes.as_slice())?;
                    }
                    Ok(())
                })
                .await
            }
            Err(e) => Err(StoreError::from(e)),
        };
        match result {
            Ok(()) => {
                // Durable now: only here may openraft count these entries as flushed.
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                // Reported, never swallowed: openraft stops this replica on a storage
                // error, and serve() turns that into a non-zero exit naming the file.
                let e = self.at(e);
                callback.log_io_completed(Err(io::Error::other(e.to_string())));
                Err(StorageIOError::write_logs(&e).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> StorageResult<()> {
        let from = log_id.index;
        write_durably(&self.db, &self.path, move |tx| {
            let mut t = tx.open_table(LOG)?;
            t.retain_in(from.., |_, _| false)?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_logs(&self.at(e)).into())
    }

    async fn purge(&mut self, log_id: LogId) -> StorageResult<()> {
        let bytes =
            serde_json::to_vec(&log_id).map_err(|e| StorageIOError::write_logs(&self.at(e)))?;
        let upto = log_id.index;
        write_durably(&self.db, &self.path, move |tx| {
            tx.open_table(META)?
                .insert("last_purged", bytes.as_slice())?;
            tx.open_table(LOG)?.retain_in(..=upto, |_, _| false)?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_logs(&self.at(e)).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TableDefinition<u64, &[u8]> = TableDefinition::new("t");

    fn put(db: &Database, k: u64, v: &[u8]) {
        let mut tx = db.begin_write().unwrap();
        tx.set_durability(Durability::Immediate).unwrap();
        tx.open_table(T).unwrap().insert(k, v).unwrap();
        tx.commit().unwrap();
    }

    fn flip(bytes: &mut [u8], needle: &[u8]) -> usize {
        let hits: Vec<usize> = (0..=bytes.len() - needle.len())
            .filter(|&i| &bytes[i..i + needle.len()] == needle)
            .collect();
        for &h in &hits {
            bytes[h + needle.len() / 2] ^= 0x5a;
        }
        hits.len()
    }

    /// The file as a crash would leave it after two fsynced commits, taken while the
    /// database is open (so its next open repairs it, as after `kill -9`).
    fn crashed_copy(dir: &Path) -> Vec<u8> {
        let path = dir.join("live.redb");
        let db = open_db(&path, None, |tx| tx.open_table(T).map(|_| ())).unwrap();
        put(&db, 1, b"older-entry");
        put(&db, 2, b"newest-entry-acknowledged");
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn a_crash_is_repaired_but_a_damaged_newest_commit_is_never_rolled_back() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = crashed_copy(dir.path());

        // Undamaged: opens after a repair and holds both commits.
        let ok = dir.path().join("ok.redb");
        std::fs::write(&ok, &bytes).unwrap();
        let db = open_db(&ok, None, |tx| tx.open_table(T).map(|_| ())).unwrap();
        let tx = db.begin_read().unwrap();
        let t = tx.open_table(T).unwrap();
        assert_eq!(
            t.get(2).unwrap().unwrap().value(),
            b"newest-entry-acknowledged"
        );
        drop((t, tx, db));

        // The newest commit damaged: redb alone would fall back to the commit before it
        // and silently lose entry 2; the open must refuse, naming the file.
        let mut damaged = bytes.clone();
        assert!(flip(&mut damaged, b"newest-entry-acknowledged") > 0);
        let bad = dir.path().join("bad.redb");
        std::fs::write(&bad, &damaged).unwrap();
        match open_db(&bad, None, |tx| tx.open_table(T).map(|_| ())) {
            Err(RaftStartError::Damaged { path, detail }) => {
                assert!(path.ends_with("bad.redb"), "{path}");
                assert!(detail.contains("roll"), "{detail}");
            }
            Err(e) => panic!("expected Damaged, got {e}"),
            Ok(_) => panic!("a damaged newest commit was accepted"),
        }

        // The same file after a write that failed in the last run (a full disk): that
        // commit was never reported done, so redb's roll-back is allowed and the note goes.
        let note = failed_commit_note(&bad.display().to_string());
        std::fs::write(&note, "I/O error: No space left on device").unwrap();
        let db = open_db(&bad, None, |tx| tx.open_table(T).map(|_| ())).unwrap();
        let tx = db.begin_read().unwrap();
        let t = tx.open_table(T).unwrap();
        assert_eq!(t.get(1).unwrap().unwrap().value(), b"older-entry");
        assert!(t.get(2).unwrap().is_none());
        assert!(!note.exists());
    }
}
