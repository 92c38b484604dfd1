//! The record's entries on a replica: two redb tables in `state.redb`, beside the snapshot.
//!
//! Apply appends entries to the state's [`RecordLog`]; once [`STORE_BATCH`] are held, the
//! state machine writes them here (`record`: seq -> the entry's leaf bytes,
//! `record_leaves`: seq -> its leaf hash) in the background, one write at a time, without
//! holding up apply, and then drops them from memory, and a snapshot writes the rest, so neither a replica's memory nor its snapshots
//! grow with the record (BENCHMARKS.md, "Soak"). Batch writes are not fsynced: the log
//! holds every entry until a snapshot covers it, and the snapshot's own durable commit in
//! the same file makes every earlier commit durable with it (redb's `Durability::None`).
//! After a crash, the entries past the snapshot are applied again and written again,
//! identically. An export, a backup and a snapshot sent to a follower read the entries
//! back ([`complete`]); the Merkle tree is rebuilt from the leaves at start ([`load_tree`]).
//!
//! [`RecordLog`]: panel_machine::model::record_log::RecordLog

use redb::{Database, Durability, ReadableDatabase, TableDefinition};

use super::log_store::StoreError;
use panel_machine::{RecordEntry, State};

pub(crate) const RECORD: TableDefinition<u64, &[u8]> = TableDefinition::new("record");
pub(crate) const LEAVES: TableDefinition<u64, &[u8]> = TableDefinition::new("record_leaves");

/// Creates the tables (opening a file written before they existed).
pub(crate) fn create(tx: &redb::WriteTransaction) -> Result<(), redb::TableError> {
    tx.open_table(RECORD)?;
    tx.open_table(LEAVES)?;
    Ok(())
}

/// Writes the entries `state` holds into `tx` (each under its sequence number, so writing
/// an entry again after a crash overwrites it with the same bytes). Drop them from the
/// state with `RecordLog::take_held` once `tx` committed.
pub(crate) fn write_held(tx: &redb::WriteTransaction, state: &State) -> Result<(), StoreError> {
    let mut record = tx.open_table(RECORD)?;
    let mut leaves = tx.open_table(LEAVES)?;
    for e in state.record.iter() {
        let bytes = e.leaf_bytes()?;
        let leaf = state
            .tree
            .leaf(e.seq)
            .unwrap_or_else(|| panel_tlog::merkle::leaf_hash(&bytes));
        record.insert(e.seq, bytes.as_slice())?;
        leaves.insert(e.seq, leaf.as_slice())?;
    }
    Ok(())
}

/// Held entries that make a batch write: one redb commit per batch rather than per apply
/// (each commit copies the tables' upper pages, which a non-durable commit cannot free).
pub(crate) const STORE_BATCH: usize = 1024;

/// The held entries, shared out of the state (no copy, no encoding under its lock), with
/// their leaf hashes; encoded and written off the apply path.
pub(crate) struct Staged {
    rows: Vec<(std::sync::Arc<RecordEntry>, Option<panel_tlog::Hash>)>,
}

impl Staged {
    /// The held entries of `state` once there are at least `min` of them.
    pub(crate) fn of(state: &State, min: usize) -> Option<Self> {
        (state.record.held_count() >= min.max(1)).then(|| Staged {
            rows: state
                .record
                .held_shared()
                .into_iter()
                .map(|e| {
                    let leaf = state.tree.leaf(e.seq);
                    (e, leaf)
                })
                .collect(),
        })
    }

    /// The entry after the last one staged (forget the held entries before it once stored).
    pub(crate) fn end(&self) -> u64 {
        self.rows.last().map_or(0, |(e, _)| e.seq + 1)
    }

    /// Writes the rows in one commit that is not fsynced (module docs).
    pub(crate) fn write(&self, db: &Database) -> Result<(), StoreError> {
        let mut tx = db.begin_write()?;
        tx.set_durability(Durability::None)?;
        self.write_in(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Writes the rows as part of `tx` (a snapshot's durable commit).
    pub(crate) fn write_in(&self, tx: &redb::WriteTransaction) -> Result<(), StoreError> {
        let mut record = tx.open_table(RECORD)?;
        let mut leaves = tx.open_table(LEAVES)?;
        for (e, leaf) in &self.rows {
            let bytes = e.leaf_bytes()?;
            let leaf = leaf.unwrap_or_else(|| panel_tlog::merkle::leaf_hash(&bytes));
            record.insert(e.seq, bytes.as_slice())?;
            leaves.insert(e.seq, leaf.as_slice())?;
        }
        Ok(())
    }
}

/// Removes every stored entry from `from` on (a snapshot installed from the leader replaces
/// the record; entries past it are applied again from the log).
pub(crate) fn truncate(tx: &redb::WriteTransaction, from: u64) -> Result<(), StoreError> {
    tx.open_table(RECORD)?.retain_in(from.., |_, _| false)?;
    tx.open_table(LEAVES)?.retain_in(from.., |_, _| false)?;
    Ok(())
}

/// Builds the state's Merkle tree from the stored leaves of the entries it handed off
/// (keeping only what `panel_tlog::Log::page_out` keeps of them), then from the entries it
/// still holds. Attach a leaf store before asking it for proofs.
pub(crate) fn load_tree(db: &Database, state: &mut State) -> Result<(), StoreError> {
    let stored = state.record.first_held();
    if state.tree.len() < stored {
        let tx = db.begin_read()?;
        let leaves = tx.open_table(LEAVES)?;
        let mut tree = panel_tlog::Log::new();
        let tile = 1u64 << panel_tlog::merkle::PAGE_LEVEL;
        for row in leaves.range(0..stored)? {
            let (seq, leaf) = row?;
            let leaf = stored_leaf(seq.value(), leaf.value())?;
            if seq.value() != tree.len() {
                return Err(StoreError::Record {
                    detail: format!(
                        "entry {} is missing from the stored record (found {} next)",
                        tree.len(),
                        seq.value()
                    ),
                });
            }
            tree.append_leaf(leaf);
            // Stored leaves are read back when a proof needs them: held whole, the tree
            // grew a replica's memory with the record (`panel_tlog::Log::page_out`).
            if tree.len().is_multiple_of(tile) {
                tree.page_out(tree.len());
            }
        }
        if tree.len() < stored {
            return Err(StoreError::Record {
                detail: format!(
                    "the stored record ends at entry {}, but the snapshot counts {stored}",
                    tree.len()
                ),
            });
        }
        state.tree = tree;
    }
    panel_machine::features::checkpoints::sync_tree(state)?;
    Ok(())
}

/// The stored entry `seq`, if stored.
pub(crate) fn read_one(db: &Database, seq: u64) -> Result<Option<RecordEntry>, StoreError> {
    let tx = db.begin_read()?;
    let record = tx.open_table(RECORD)?;
    match record.get(seq)? {
        Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
        None => Ok(None),
    }
}

/// Gives `state` back the entries it handed off, so it holds the whole record (an export,
/// a backup, a snapshot sent to a follower). Reads entries `0..first_held` only: entries
/// applied after `state` was copied may be stored already and are not its.
pub(crate) fn complete(tx: &redb::ReadTransaction, state: &mut State) -> Result<(), StoreError> {
    let stored = state.record.first_held();
    if stored == 0 {
        return Ok(());
    }
    let record = tx.open_table(RECORD)?;
    let mut earlier = Vec::with_capacity(usize::try_from(stored).unwrap_or(0));
    for row in record.range(0..stored)? {
        let (_, bytes) = row?;
        earlier.push(serde_json::from_slice::<RecordEntry>(bytes.value())?);
    }
    state
        .record
        .restore(earlier)
        .map_err(|e| StoreError::Record {
            detail: e.to_string(),
        })
}

/// The leaf hash stored for entry `seq`.
fn stored_leaf(seq: u64, bytes: &[u8]) -> Result<panel_tlog::Hash, StoreError> {
    bytes.try_into().map_err(|_| StoreError::Record {
        detail: format!("the stored leaf of entry {seq} is not 32 bytes"),
    })
}

impl panel_tlog::merkle::LeafStore for super::archive::RedbArchive {
    fn leaves(&self, lo: u64, hi: u64) -> Result<Vec<panel_tlog::Hash>, String> {
        let read = || -> Result<Vec<panel_tlog::Hash>, StoreError> {
            let tx = self.db().begin_read()?;
            let leaves = tx.open_table(LEAVES)?;
            let mut out = Vec::with_capacity(usize::try_from(hi - lo).unwrap_or(0));
            for row in leaves.range(lo..hi)? {
                let (seq, leaf) = row?;
                out.push(stored_leaf(seq.value(), leaf.value())?);
            }
            Ok(out)
        };
        read().map_err(|e| e.to_string())
    }
}
