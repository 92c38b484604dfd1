//! Retired deduplication replies on a replica: stored replies moved out of memory into
//! redb tables in `state.redb`, beside the snapshot (`panel_machine::model::reply_table`).
//!
//! A snapshot retires every reply its state holds
//! ([`ReplyTable::retirable`](panel_machine::model::reply_table::ReplyTable::retirable)) in its
//! own durable commit, and in the same commit deletes the retired replies its state's
//! prune horizon no longer keeps (a horizon only moves forward, so they are gone for
//! good); the live state then drops what it retired. The state reads retired replies
//! through [`RedbArchive`], which answers only while the state's latest horizon keeps them.
//! A snapshot sent to a follower, an export and a backup carry every reply the state
//! keeps ([`complete`]); installing a snapshot empties the archive.
//!
//! Tables: `reply_archive` (deduplication key -> the [`StoredReply`] JSON) and
//! `reply_by_time` ((stored-at batch time, key) -> ()), which finds the expired ones.

use std::sync::Arc;

use redb::{
    ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};

use super::archive::RedbArchive;
use super::log_store::StoreError;
use panel_machine::State;
use panel_machine::apply::dedup_horizon;
use panel_machine::model::StoredReply;
use panel_machine::model::reply_table::{Horizon, ReplyArchive};

const ARCHIVE: TableDefinition<&str, &[u8]> = TableDefinition::new("reply_archive");
const BY_TIME: TableDefinition<(u64, &str), ()> = TableDefinition::new("reply_by_time");

/// Creates the tables (opening a file written before they existed).
pub(crate) fn create(tx: &redb::WriteTransaction) -> Result<(), redb::TableError> {
    tx.open_table(ARCHIVE)?;
    tx.open_table(BY_TIME)?;
    Ok(())
}

/// Writes `retired` into `tx` (a snapshot's durable commit), after deleting the archived
/// replies a prune at `horizon` (the snapshot state's) drops. Writing a key again (a key
/// reused after its reply expired, a snapshot built again after a crash) replaces it.
/// Returns how many expired replies were deleted.
pub(crate) fn retire(
    tx: &redb::WriteTransaction,
    retired: &[(String, Arc<StoredReply>)],
    horizon: Horizon,
) -> Result<u64, StoreError> {
    let mut archive = tx.open_table(ARCHIVE)?;
    let mut by_time = tx.open_table(BY_TIME)?;
    let mut deleted = 0;
    if let Some(up_to) = horizon.expired_up_to_ms() {
        let mut expired = Vec::new();
        for row in by_time.range((0, "")..(up_to.saturating_add(1), ""))? {
            let (key, _) = row?;
            let (at, k) = key.value();
            if let Some(stored) = archive.get(k)? {
                let reply: StoredReply = serde_json::from_slice(stored.value())?;
                if !horizon.keeps(&reply) {
                    expired.push((at, k.to_owned()));
                }
            }
        }
        for (at, k) in &expired {
            archive.remove(k.as_str())?;
            by_time.remove((*at, k.as_str()))?;
        }
        deleted = expired.len() as u64;
    }
    for (k, reply) in retired {
        let json = serde_json::to_vec(&**reply)?;
        if let Some(old) = archive.insert(k.as_str(), json.as_slice())? {
            let old: StoredReply = serde_json::from_slice(old.value())?;
            by_time.remove((old.stored_at_ms, k.as_str()))?;
        }
        by_time.insert((reply.stored_at_ms, k.as_str()), ())?;
    }
    Ok(deleted)
}

/// Empties the archive (a snapshot installed from the leader holds every reply).
pub(crate) fn truncate(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    tx.open_table(ARCHIVE)?.retain(|_, _| false)?;
    tx.open_table(BY_TIME)?.retain(|_, _| false)?;
    Ok(())
}

/// Gives `state` back every retired reply it keeps, so it holds them all (a snapshot sent
/// to a follower, an export, a backup). `tx` must begin before anything newer than
/// `state` retires (under the state's lock, or in the transaction that read the stored
/// snapshot): a later snapshot's commit may delete replies its newer horizon drops. A
/// reply stored after `applied` (the last log index `state` applied) is not `state`'s.
pub(crate) fn complete(
    tx: &ReadTransaction,
    state: &mut State,
    applied: u64,
) -> Result<(), StoreError> {
    let horizon = dedup_horizon(state);
    let archive = tx.open_table(ARCHIVE)?;
    let mut rows = Vec::new();
    for row in archive.iter()? {
        let (k, json) = row?;
        let reply: StoredReply = serde_json::from_slice(json.value())?;
        if reply.log_index <= applied && horizon.keeps(&reply) {
            rows.push((k.value().to_owned(), reply));
        }
    }
    state.requests.restore(rows);
    Ok(())
}

impl RedbArchive {
    fn read_reply(&self, key: &str) -> Result<Option<StoredReply>, StoreError> {
        let tx = self.db().begin_read()?;
        let archive = tx.open_table(ARCHIVE)?;
        match archive.get(key)? {
            Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
            None => Ok(None),
        }
    }

    fn read_count(&self) -> Result<u64, StoreError> {
        let tx = self.db().begin_read()?;
        Ok(tx.open_table(ARCHIVE)?.len()?)
    }
}

impl ReplyArchive for RedbArchive {
    fn get(&self, key: &str) -> Option<StoredReply> {
        let r = self.read_reply(key);
        self.or_note(r)
    }

    fn count(&self) -> u64 {
        let r = self.read_count();
        self.or_note(r)
    }
}
