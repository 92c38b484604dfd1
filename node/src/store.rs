//! Durable storage of a node (redb): its own commitments and rulings with their salts,
//! the revealed rulings received from peers, and the human judge's pending queue.
//!
//! A commitment is one redb transaction committed with immediate durability, so a
//! commitment returned to the coordinator survives a crash of the node: the node can
//! always open what it committed to. Peer rulings that arrive together share one durable
//! transaction (a group commit, [`Store::insert_peer`]), each acknowledged only once it is
//! on disk. Marking an own ruling revealed is not flushed by itself: the mark is only a
//! note (the ruling, salt and commitment are durable already), and losing it in a crash
//! makes the node reveal the same ruling once more, which its peers and the replicas
//! take as a duplicate. Values are protobuf-encoded `RulingRecord`s and `Motion`s, the
//! same messages the node serves.

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, PoisonError};

use panel_proto::pb::{ListRulingsRequest, Motion, RecordSource, RulingRecord};
use prost::Message;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use thiserror::Error;

const OWN: TableDefinition<&str, &[u8]> = TableDefinition::new("own_rulings");
const PEER: TableDefinition<&str, &[u8]> = TableDefinition::new("peer_rulings");
const PENDING: TableDefinition<&str, &[u8]> = TableDefinition::new("pending_motions");

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Redb(#[from] redb::Error),
    #[error("stored record is corrupt: {0}")]
    Corrupt(#[from] prost::DecodeError),
    #[error("cannot create data directory {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("no own ruling stored for motion {0:?}")]
    NoOwnRuling(String),
    /// The shared transaction of a group of peer rulings failed; every ruling in it was
    /// refused with the same reason.
    #[error("storing peer rulings: {0}")]
    PeerBatch(String),
}

fn redb_err(e: impl Into<redb::Error>) -> StoreError {
    StoreError::Redb(e.into())
}

/// Result of storing a peer's ruling.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerInsert {
    Inserted,
    /// The identical signed ruling was already stored.
    Duplicate,
    /// A different ruling by the same arbiter on the same motion is stored (equivocation).
    Conflict(Box<RulingRecord>),
}

/// A peer ruling waiting for the next group commit, and where its outcome goes.
struct QueuedPeer {
    record: RulingRecord,
    done: mpsc::Sender<Result<PeerInsert, String>>,
}

/// The node's database.
pub struct Store {
    db: Database,
    /// Peer rulings waiting to be written ([`Store::insert_peer`]).
    peer_queue: Mutex<Vec<QueuedPeer>>,
    /// Held by the caller that writes the queued peer rulings.
    peer_writer: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn peer_key(motion_id: &str, arbiter_key: &[u8]) -> String {
    format!("{motion_id}\u{0}{}", hex::encode(arbiter_key))
}

impl Store {
    /// Opens (or creates) `node.redb` inside `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
            path: dir.display().to_string(),
            source,
        })?;
        let db = Database::create(dir.join("node.redb")).map_err(redb_err)?;
        let txn = db.begin_write().map_err(redb_err)?;
        txn.open_table(OWN).map_err(redb_err)?;
        txn.open_table(PEER).map_err(redb_err)?;
        txn.open_table(PENDING).map_err(redb_err)?;
        txn.commit().map_err(redb_err)?;
        Ok(Self {
            db,
            peer_queue: Mutex::new(Vec::new()),
            peer_writer: Mutex::new(()),
        })
    }

    fn get(
        &self,
        table: TableDefinition<&str, &[u8]>,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let t = txn.open_table(table).map_err(redb_err)?;
        Ok(t.get(key).map_err(redb_err)?.map(|v| v.value().to_vec()))
    }

    /// The node's own record for a motion.
    pub fn own(&self, motion_id: &str) -> Result<Option<RulingRecord>, StoreError> {
        self.get(OWN, motion_id)?
            .map(|b| RulingRecord::decode(b.as_slice()).map_err(StoreError::from))
            .transpose()
    }

    /// Stores the own record unless one exists for the motion; returns the stored record
    /// and whether it is the one passed in. Check-and-set in one transaction, so two
    /// concurrent Commit calls cannot produce two commitments.
    pub fn insert_own_if_absent(
        &self,
        record: &RulingRecord,
        motion_id: &str,
    ) -> Result<(RulingRecord, bool), StoreError> {
        let txn = self.db.begin_write().map_err(redb_err)?;
        let out = {
            let mut t = txn.open_table(OWN).map_err(redb_err)?;
            let existing = t
                .get(motion_id)
                .map_err(redb_err)?
                .map(|v| v.value().to_vec());
            match existing {
                Some(b) => (RulingRecord::decode(b.as_slice())?, false),
                None => {
                    t.insert(motion_id, record.encode_to_vec().as_slice())
                        .map_err(redb_err)?;
                    (record.clone(), true)
                }
            }
        };
        if out.1 {
            let mut p = txn.open_table(PENDING).map_err(redb_err)?;
            p.remove(motion_id).map_err(redb_err)?;
        }
        txn.commit().map_err(redb_err)?;
        Ok(out)
    }

    /// Marks the own ruling on a motion as revealed; returns the updated record. The mark
    /// reaches the disk with the next durable write, not by itself (see the module doc).
    pub fn mark_revealed(&self, motion_id: &str) -> Result<RulingRecord, StoreError> {
        let mut txn = self.db.begin_write().map_err(redb_err)?;
        txn.set_durability(Durability::None).map_err(redb_err)?;
        let rec = {
            let mut t = txn.open_table(OWN).map_err(redb_err)?;
            let existing = t
                .get(motion_id)
                .map_err(redb_err)?
                .map(|v| v.value().to_vec());
            let mut rec = match existing {
                Some(b) => RulingRecord::decode(b.as_slice())?,
                None => return Err(StoreError::NoOwnRuling(motion_id.to_owned())),
            };
            if !rec.revealed {
                rec.revealed = true;
                t.insert(motion_id, rec.encode_to_vec().as_slice())
                    .map_err(redb_err)?;
            }
            rec
        };
        txn.commit().map_err(redb_err)?;
        Ok(rec)
    }

    /// Stores a verified peer ruling, durably. A peer's reveal reaches every other seat at
    /// about the same time, so the rulings queued while one transaction is written are
    /// written together in the next one, with one flush: whichever caller gets the writer
    /// slot writes everything queued, its own ruling or a later caller's among it.
    pub fn insert_peer(&self, record: &RulingRecord) -> Result<PeerInsert, StoreError> {
        let (done, outcome) = mpsc::channel();
        lock(&self.peer_queue).push(QueuedPeer {
            record: record.clone(),
            done,
        });
        {
            let _writer = lock(&self.peer_writer);
            let batch = std::mem::take(&mut *lock(&self.peer_queue));
            if !batch.is_empty() {
                self.write_peers(batch);
            }
        }
        // Sent before the writer slot was released, by this caller or an earlier one.
        outcome
            .recv()
            .map_err(|_| StoreError::PeerBatch("the writer stopped without an answer".into()))?
            .map_err(StoreError::PeerBatch)
    }

    /// One durable transaction for `batch`; answers every caller in it.
    fn write_peers(&self, batch: Vec<QueuedPeer>) {
        let written = (|| {
            let txn = self.db.begin_write().map_err(redb_err)?;
            let outcomes = {
                let mut t = txn.open_table(PEER).map_err(redb_err)?;
                batch
                    .iter()
                    .map(|q| insert_peer_in(&mut t, &q.record))
                    .collect::<Result<Vec<_>, StoreError>>()?
            };
            txn.commit().map_err(redb_err)?;
            Ok::<_, StoreError>(outcomes)
        })();
        match written {
            Ok(outcomes) => {
                for (q, o) in batch.into_iter().zip(outcomes) {
                    let _ = q.done.send(o.map_err(|e| e.to_string()));
                }
            }
            Err(e) => {
                let reason = e.to_string();
                for q in batch {
                    let _ = q.done.send(Err(reason.clone()));
                }
            }
        }
    }

    /// Records matching a filter, own first then peers, each in key order.
    pub fn list(&self, f: &ListRulingsRequest) -> Result<Vec<RulingRecord>, StoreError> {
        let want = RecordSource::try_from(f.source).unwrap_or(RecordSource::Unspecified);
        let limit = if f.limit == 0 {
            usize::MAX
        } else {
            f.limit as usize
        };
        let txn = self.db.begin_read().map_err(redb_err)?;
        let mut out = Vec::new();
        for (table, source) in [(OWN, RecordSource::Own), (PEER, RecordSource::Peer)] {
            if want != RecordSource::Unspecified && want != source {
                continue;
            }
            let t = txn.open_table(table).map_err(redb_err)?;
            for item in t.iter().map_err(redb_err)? {
                let (_, v) = item.map_err(redb_err)?;
                let rec = RulingRecord::decode(v.value())?;
                let ruling = rec.signed_ruling.as_ref().and_then(|s| s.ruling.as_ref());
                let (motion_id, debate_id) = ruling
                    .map(|r| (r.motion_id.as_str(), r.debate_id.as_str()))
                    .unwrap_or(("", ""));
                if (!f.motion_id.is_empty() && f.motion_id != motion_id)
                    || (!f.debate_id.is_empty() && f.debate_id != debate_id)
                {
                    continue;
                }
                out.push(rec);
                if out.len() >= limit {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// Adds a motion to the human judge's queue (idempotent).
    pub fn put_pending(&self, motion: &Motion) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(redb_err)?;
        {
            let mut t = txn.open_table(PENDING).map_err(redb_err)?;
            t.insert(motion.motion_id.as_str(), motion.encode_to_vec().as_slice())
                .map_err(redb_err)?;
        }
        txn.commit().map_err(redb_err)?;
        Ok(())
    }

    /// A pending motion by id.
    pub fn pending_get(&self, motion_id: &str) -> Result<Option<Motion>, StoreError> {
        self.get(PENDING, motion_id)?
            .map(|b| Motion::decode(b.as_slice()).map_err(StoreError::from))
            .transpose()
    }

    /// All pending motions, in motion-id order.
    pub fn pending(&self) -> Result<Vec<Motion>, StoreError> {
        let txn = self.db.begin_read().map_err(redb_err)?;
        let t = txn.open_table(PENDING).map_err(redb_err)?;
        let mut out = Vec::new();
        for item in t.iter().map_err(redb_err)? {
            let (_, v) = item.map_err(redb_err)?;
            out.push(Motion::decode(v.value())?);
        }
        Ok(out)
    }
}

/// One peer ruling into the open table. `Err` aborts the shared transaction (storage);
/// `Ok(Err)` refuses this ruling alone (a corrupt stored record under its key).
fn insert_peer_in(
    t: &mut redb::Table<&str, &[u8]>,
    record: &RulingRecord,
) -> Result<Result<PeerInsert, StoreError>, StoreError> {
    let (motion_id, arbiter, sig) = match record.signed_ruling.as_ref() {
        Some(sr) => match sr.ruling.as_ref() {
            Some(r) => (
                r.motion_id.clone(),
                r.arbiter_key.clone(),
                sr.signature.clone(),
            ),
            None => return Ok(Ok(PeerInsert::Duplicate)),
        },
        None => return Ok(Ok(PeerInsert::Duplicate)),
    };
    let key = peer_key(&motion_id, &arbiter);
    let existing = t
        .get(key.as_str())
        .map_err(redb_err)?
        .map(|v| v.value().to_vec());
    Ok(match existing {
        Some(b) => match RulingRecord::decode(b.as_slice()) {
            Ok(old)
                if old
                    .signed_ruling
                    .as_ref()
                    .is_some_and(|s| s.signature == sig) =>
            {
                Ok(PeerInsert::Duplicate)
            }
            Ok(old) => Ok(PeerInsert::Conflict(Box::new(old))),
            Err(e) => Err(e.into()),
        },
        None => {
            t.insert(key.as_str(), record.encode_to_vec().as_slice())
                .map_err(redb_err)?;
            Ok(PeerInsert::Inserted)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_proto::pb::{Ruling, SignedRuling};

    fn peer(motion: &str, arbiter: u8, signature: u8) -> RulingRecord {
        RulingRecord {
            source: RecordSource::Peer as i32,
            signed_ruling: Some(SignedRuling {
                ruling: Some(Ruling {
                    motion_id: motion.into(),
                    arbiter_key: vec![arbiter; 32],
                    ..Default::default()
                }),
                signature: vec![signature; 64],
                envelope_version: 2,
            }),
            revealed: true,
            ..Default::default()
        }
    }

    /// Callers at once share transactions, and each still gets its own ruling's outcome:
    /// inserted, the same ruling again, or a second ruling by the same arbiter.
    #[test]
    fn concurrent_peer_rulings_each_get_their_own_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open(dir.path()).unwrap());
        let threads: Vec<_> = (0..16u8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || store.insert_peer(&peer("m1", i, 1)).unwrap())
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), PeerInsert::Inserted);
        }
        assert_eq!(
            store.insert_peer(&peer("m1", 3, 1)).unwrap(),
            PeerInsert::Duplicate
        );
        match store.insert_peer(&peer("m1", 3, 2)).unwrap() {
            PeerInsert::Conflict(old) => {
                assert_eq!(old.signed_ruling.unwrap().signature, vec![1; 64]);
            }
            other => panic!("{other:?}"),
        }
        let stored = store
            .list(&ListRulingsRequest {
                source: RecordSource::Peer as i32,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(stored.len(), 16);
        drop(store);
        // Kept: all of them are there after reopening.
        let store = Store::open(dir.path()).unwrap();
        let stored = store.list(&ListRulingsRequest::default()).unwrap();
        assert_eq!(stored.len(), 16);
    }
}
