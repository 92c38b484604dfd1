//! `panel coordinator run --restore FILE`: lays out a new replica's storage from a backup
//! (docs/coordinator/storage.md, "Backup, restore and a lost quorum"), before [`super::start`]
//! opens it as any replica's.
//!
//! The backup's state becomes the snapshot in `state.redb`, covering the backup's last
//! log id; `log.redb` holds no entries, is purged and committed up to that id, and has a
//! vote in its term. The snapshot's membership is this replica alone, so it elects itself
//! in a later term and serves as a group of one; further replicas join as learners and
//! voters as usual (`add-learner`, `change-membership`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openraft::{Membership, SnapshotMeta, StoredMembership, Vote};

use super::{Member, NodeId, log_store, state_machine};
use crate::backup::{self, BackupError, Header};

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "--restore needs an empty --data-dir, but {dir} holds {entry}: a restore starts a new \
         group and never overwrites a replica's files. Give a new or empty directory (move \
         this one aside if it is a damaged replica's)"
    )]
    DataDirNotEmpty { dir: PathBuf, entry: String },
    #[error("cannot read the backup {path} (--restore): {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--restore {path}: {source}")]
    Backup {
        path: PathBuf,
        #[source]
        source: BackupError,
    },
    #[error("cannot lay out the restored replica's storage in {dir}: {detail}")]
    Write { dir: PathBuf, detail: String },
}

/// The first entry of `dir`, if it exists and is not empty.
fn first_entry(dir: &Path) -> Option<String> {
    let mut entries = std::fs::read_dir(dir).ok()?;
    entries.next().map(|e| {
        e.map_or_else(
            |e| e.to_string(),
            |e| e.file_name().to_string_lossy().into(),
        )
    })
}

/// Refuses a `dir` that holds anything.
pub fn check_empty(dir: &Path) -> Result<(), RestoreError> {
    match first_entry(dir) {
        Some(entry) => Err(RestoreError::DataDirNotEmpty {
            dir: dir.to_owned(),
            entry,
        }),
        None => Ok(()),
    }
}

/// Reads and checks the backup at `file` (format, length, digest, the state decodes).
pub fn read_backup(file: &Path) -> Result<(Header, Vec<u8>), RestoreError> {
    let bytes = std::fs::read(file).map_err(|source| RestoreError::Read {
        path: file.to_owned(),
        source,
    })?;
    let bad = |source| RestoreError::Backup {
        path: file.to_owned(),
        source,
    };
    let (header, state) = backup::decode(&bytes).map_err(bad)?;
    backup::decode_state(state).map_err(bad)?;
    let state = state.to_vec();
    Ok((header, state))
}

/// Lays out `dir` (which must be empty or absent) as replica `id` at `addr` restored from
/// a checked backup.
pub fn seed(
    dir: &Path,
    id: NodeId,
    addr: &str,
    header: &Header,
    state_json: &[u8],
) -> Result<(), RestoreError> {
    check_empty(dir)?;
    let failed = |detail: String| RestoreError::Write {
        dir: dir.to_owned(),
        detail,
    };
    std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
    let at = header.last_log_id;
    let membership = Membership::new(
        vec![BTreeSet::from([id])],
        BTreeMap::from([(
            id,
            Member {
                addr: addr.to_owned(),
            },
        )]),
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let meta = SnapshotMeta {
        last_log_id: Some(at),
        last_membership: StoredMembership::new(Some(at), membership),
        snapshot_id: format!("{}-{}-{nanos}", at.leader_id.term, at.index),
    };
    state_machine::seed_snapshot(&dir.join("state.redb"), &meta, state_json)
        .map_err(|e| failed(format!("state.redb: {e}")))?;
    log_store::seed_restored_log(&dir.join("log.redb"), &Vote::new(at.leader_id.term, id), at)
        .map_err(|e| failed(format!("log.redb: {e}")))?;
    Ok(())
}
