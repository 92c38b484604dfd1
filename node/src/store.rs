//! Durable storage of a node (redb): its own commitments and rulings with their salts,
//! the revealed rulings received from peers, and the human judge's pending queue.
//!
//! Every write is one redb transaction committed with the default immediate durability,
//! so a commitment returned to the coordinator survives a crash of the node: the node can
//! always open what it committed to. Values are protobuf-encoded `RulingRecord`s and
//! `Motion`s, the same messages the node serves.

use std::path::Path;

use panel_proto::pb::{ListRulingsRequest, Motion, RecordSource, RulingRecord};
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
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

/// The node's database.
pub struct Store {
    db: Database,
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
        Ok(Self { db })
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

    /// Marks the own ruling on a motion as revealed; returns the updated record.
    pub fn mark_revealed(&self, motion_id: &str) -> Result<RulingRecord, StoreError> {
        let txn = self.db.begin_write().map_err(redb_err)?;
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

    /// Stores a verified peer ruling.
    pub fn insert_peer(&self, record: &RulingRecord) -> Result<PeerInsert, StoreError> {
        let (motion_id, arbiter, sig) = match record.signed_ruling.as_ref() {
            Some(sr) => match sr.ruling.as_ref() {
                Some(r) => (
                    r.motion_id.clone(),
                    r.arbiter_key.clone(),
                    sr.signature.clone(),
                ),
                None => return Ok(PeerInsert::Duplicate),
            },
            None => return Ok(PeerInsert::Duplicate),
        };
        let key = peer_key(&motion_id, &arbiter);
        let txn = self.db.begin_write().map_err(redb_err)?;
        let out = {
            let mut t = txn.open_table(PEER).map_err(redb_err)?;
            let existing = t
                .get(key.as_str())
                .map_err(redb_err)?
                .map(|v| v.value().to_vec());
            match existing {
                Some(b) => {
                    let old = RulingRecord::decode(b.as_slice())?;
                    let same = old
                        .signed_ruling
                        .as_ref()
                        .is_some_and(|s| s.signature == sig);
                    if same {
                        PeerInsert::Duplicate
                    } else {
                        PeerInsert::Conflict(Box::new(old))
                    }
                }
                None => {
                    t.insert(key.as_str(), record.encode_to_vec().as_slice())
                        .map_err(redb_err)?;
                    PeerInsert::Inserted
                }
            }
        };
        txn.commit().map_err(redb_err)?;
        Ok(out)
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
