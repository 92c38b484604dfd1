//! Retired motions on a replica: decided motions moved out of memory into redb tables in
//! `state.redb`, beside the snapshot (`panel_machine::model::motion_table`).
//!
//! A snapshot retires the decided motions its state offers
//! ([`MotionTable::retirable`](panel_machine::model::motion_table::MotionTable::retirable)): it
//! writes them here in its own durable commit and leaves them out of its stored state, and
//! the live state then drops them ([`MotionTable::forget`]). So the archive and the stored
//! snapshot always agree, and after a restart the state reads them back through
//! [`RedbArchive`]. A snapshot sent to a follower, an export and a backup carry every motion
//! ([`complete`]); installing a snapshot empties the archive (the next snapshot retires
//! again).
//!
//! Tables: `motion_archive` (motion id -> the motion's JSON), `motion_by_debate`
//! ((debate id, motion id) -> ()), `motion_by_opening` ((opening log index, motion id) -> ())
//! and `motion_tally` (`tally` -> the [`MotionTally`] JSON).
//!
//! [`MotionTable::forget`]: panel_machine::model::motion_table::MotionTable::forget

use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::archive::RedbArchive;
use super::log_store::StoreError;
use panel_machine::model::motion_table::{MotionArchive, MotionTally};
use panel_machine::{Motion, State};

const ARCHIVE: TableDefinition<&str, &[u8]> = TableDefinition::new("motion_archive");
const BY_DEBATE: TableDefinition<(&str, &str), ()> = TableDefinition::new("motion_by_debate");
const BY_OPENING: TableDefinition<(u64, &str), ()> = TableDefinition::new("motion_by_opening");
const TALLY: TableDefinition<&str, &[u8]> = TableDefinition::new("motion_tally");

/// Creates the tables (opening a file written before they existed).
pub(crate) fn create(tx: &redb::WriteTransaction) -> Result<(), redb::TableError> {
    tx.open_table(ARCHIVE)?;
    tx.open_table(BY_DEBATE)?;
    tx.open_table(BY_OPENING)?;
    tx.open_table(TALLY)?;
    Ok(())
}

/// Writes `retired` into `tx` (a snapshot's durable commit) and counts them in the tally.
/// Writing a motion again (a snapshot built again after a crash) overwrites it and is not
/// counted twice.
pub(crate) fn retire(
    tx: &redb::WriteTransaction,
    retired: &[Arc<Motion>],
) -> Result<(), StoreError> {
    if retired.is_empty() {
        return Ok(());
    }
    let mut archive = tx.open_table(ARCHIVE)?;
    let mut by_debate = tx.open_table(BY_DEBATE)?;
    let mut by_opening = tx.open_table(BY_OPENING)?;
    let mut tally_table = tx.open_table(TALLY)?;
    let mut tally: MotionTally = match tally_table.get("tally")? {
        Some(v) => serde_json::from_slice(v.value())?,
        None => MotionTally::default(),
    };
    for m in retired {
        let id = m.spec.motion_id.as_str();
        let json = serde_json::to_vec(&**m)?;
        if archive.insert(id, json.as_slice())?.is_none() {
            tally.add(m);
        }
        by_debate.insert((m.spec.debate_id.as_str(), id), ())?;
        by_opening.insert((m.opened_log_index, id), ())?;
    }
    let json = serde_json::to_vec(&tally)?;
    tally_table.insert("tally", json.as_slice())?;
    Ok(())
}

/// Empties the archive (a snapshot installed from the leader holds every motion).
pub(crate) fn truncate(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    tx.open_table(ARCHIVE)?.retain(|_, _| false)?;
    tx.open_table(BY_DEBATE)?.retain(|_, _| false)?;
    tx.open_table(BY_OPENING)?.retain(|_, _| false)?;
    tx.open_table(TALLY)?.retain(|_, _| false)?;
    Ok(())
}

/// Gives `state` back every retired motion it knew of, so it holds every motion (a
/// snapshot sent to a follower, an export, a backup). A motion opened after `applied`
/// (the last log index `state` applied) is not `state`'s and is left out: a later snapshot
/// may have retired it already.
pub(crate) fn complete(
    tx: &redb::ReadTransaction,
    state: &mut State,
    applied: u64,
) -> Result<(), StoreError> {
    let archive = tx.open_table(ARCHIVE)?;
    let mut retired = Vec::new();
    for row in archive.iter()? {
        let (_, json) = row?;
        let m: Motion = serde_json::from_slice(json.value())?;
        if m.opened_log_index <= applied {
            retired.push(m);
        }
    }
    state.motions.restore(retired);
    Ok(())
}

impl RedbArchive {
    fn read_one(&self, motion_id: &str) -> Result<Option<Motion>, StoreError> {
        let tx = self.db().begin_read()?;
        let archive = tx.open_table(ARCHIVE)?;
        read_motion(&archive, motion_id)
    }

    fn read_debate(&self, debate_id: &str) -> Result<Vec<Motion>, StoreError> {
        let tx = self.db().begin_read()?;
        let archive = tx.open_table(ARCHIVE)?;
        let by_debate = tx.open_table(BY_DEBATE)?;
        let mut out = Vec::new();
        for row in by_debate.range((debate_id, "")..)? {
            let (key, _) = row?;
            let (debate, id) = key.value();
            if debate != debate_id {
                break;
            }
            out.extend(read_motion(&archive, id)?);
        }
        Ok(out)
    }

    fn read_latest(&self, n: usize) -> Result<Vec<Motion>, StoreError> {
        let tx = self.db().begin_read()?;
        let archive = tx.open_table(ARCHIVE)?;
        let by_opening = tx.open_table(BY_OPENING)?;
        let mut out = Vec::new();
        for row in by_opening.iter()?.rev().take(n) {
            let (key, _) = row?;
            out.extend(read_motion(&archive, key.value().1)?);
        }
        Ok(out)
    }

    fn read_all(&self, f: &mut dyn FnMut(Motion)) -> Result<(), StoreError> {
        let tx = self.db().begin_read()?;
        let archive = tx.open_table(ARCHIVE)?;
        for row in archive.iter()? {
            let (_, json) = row?;
            f(serde_json::from_slice(json.value())?);
        }
        Ok(())
    }

    fn read_tally(&self) -> Result<MotionTally, StoreError> {
        let tx = self.db().begin_read()?;
        let t = tx.open_table(TALLY)?;
        match t.get("tally")? {
            Some(v) => Ok(serde_json::from_slice(v.value())?),
            None => Ok(MotionTally::default()),
        }
    }
}

fn read_motion(
    archive: &impl ReadableTable<&'static str, &'static [u8]>,
    motion_id: &str,
) -> Result<Option<Motion>, StoreError> {
    match archive.get(motion_id)? {
        Some(v) => Ok(Some(serde_json::from_slice(v.value())?)),
        None => Ok(None),
    }
}

impl MotionArchive for RedbArchive {
    fn get(&self, motion_id: &str) -> Option<Motion> {
        let r = self.read_one(motion_id);
        self.or_note(r)
    }

    fn of_debate(&self, debate_id: &str) -> Vec<Motion> {
        let r = self.read_debate(debate_id);
        self.or_note(r)
    }

    fn latest_opened(&self, n: usize) -> Vec<Motion> {
        let r = self.read_latest(n);
        self.or_note(r)
    }

    fn for_each(&self, f: &mut dyn FnMut(Motion)) {
        let r = self.read_all(f);
        self.or_note(r)
    }

    fn tally(&self) -> MotionTally {
        let r = self.read_tally();
        self.or_note(r)
    }
}
