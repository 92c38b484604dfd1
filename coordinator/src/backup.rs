//! The backup file of `panel coordinator backup` and `panel coordinator run --restore`
//! (docs/coordinator/storage.md, "Backup, restore and a lost quorum"): a replica's whole applied
//! state (every table, so the record with its checkpoints and cosignatures, the arbiters,
//! the deduplication table) as of one applied log entry.
//!
//! Layout: one line of JSON ([`Header`]), a newline, then the state exactly as a Raft
//! snapshot holds it (JSON of `State`). The header carries the length and SHA-256 of the
//! state bytes, so a truncated or altered file is refused before anything is written.
//! Encoding and checking are pure; the shells read and write the files.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::raft::{LogId, NodeId};
use panel_machine::State;

/// The `format` of every backup this version writes.
pub const FORMAT: &str = "crucible-panel-backup/v1";

/// What a backup says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    /// The replica that served it.
    pub source_replica: NodeId,
    /// The last log entry the state includes.
    pub last_log_id: LogId,
    /// Unix ms on the serving replica when the state was copied.
    pub taken_at_ms: u64,
    /// True when the copy was taken after a linearizable read barrier (it holds every
    /// write acknowledged before the backup was asked for); false for `--local`.
    pub linearizable: bool,
    pub state_bytes: u64,
    /// Hex SHA-256 of the state bytes.
    pub state_sha256: String,
    pub record_entries: u64,
    pub checkpoints: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "the backup's first line is not a {FORMAT} header ({0}); is the file a backup made by \
         `panel coordinator backup`?"
    )]
    Header(#[source] serde_json::Error),
    #[error(
        "the backup has no header line; is the file a backup made by `panel coordinator backup`?"
    )]
    NoHeader,
    #[error("the backup is format {found:?}; this panel reads {FORMAT} only")]
    Format { found: String },
    #[error(
        "the backup holds {found} state bytes but its header says {expected}: the file is \
         truncated or was altered; take a new backup"
    )]
    Length { expected: u64, found: u64 },
    #[error(
        "the backup's state does not match the SHA-256 in its header: the file was altered or \
         damaged; take a new backup"
    )]
    Digest,
    #[error("the backup's state does not decode: {0}")]
    State(#[source] serde_json::Error),
    #[error("the replica has applied nothing yet, so there is nothing to back up")]
    Empty,
}

/// Encodes a backup of `state` as of `last_log_id`. `state_json` is `state` as JSON (the
/// caller serialises it off the state machine's lock).
pub fn encode(
    source_replica: NodeId,
    last_log_id: Option<LogId>,
    taken_at_ms: u64,
    linearizable: bool,
    state: &State,
    state_json: Vec<u8>,
) -> Result<Vec<u8>, BackupError> {
    let last_log_id = last_log_id.ok_or(BackupError::Empty)?;
    let header = Header {
        format: FORMAT.into(),
        source_replica,
        last_log_id,
        taken_at_ms,
        linearizable,
        state_bytes: state_json.len() as u64,
        state_sha256: hex::encode(Sha256::digest(&state_json)),
        record_entries: state.record.len(),
        checkpoints: state.checkpoints.len() as u64,
    };
    let mut out = serde_json::to_vec(&header).map_err(BackupError::Header)?;
    out.push(b'\n');
    out.extend_from_slice(&state_json);
    Ok(out)
}

/// Splits a backup into its header and state bytes, after checking format, length and
/// digest (not yet that the state decodes: see [`decode_state`]).
pub fn decode(bytes: &[u8]) -> Result<(Header, &[u8]), BackupError> {
    let split = bytes
        .iter()
        .position(|b| *b == b'\n')
        .ok_or(BackupError::NoHeader)?;
    let header: Header = serde_json::from_slice(&bytes[..split]).map_err(BackupError::Header)?;
    if header.format != FORMAT {
        return Err(BackupError::Format {
            found: header.format,
        });
    }
    let state = &bytes[split + 1..];
    if state.len() as u64 != header.state_bytes {
        return Err(BackupError::Length {
            expected: header.state_bytes,
            found: state.len() as u64,
        });
    }
    if hex::encode(Sha256::digest(state)) != header.state_sha256 {
        return Err(BackupError::Digest);
    }
    Ok((header, state))
}

/// The state of a checked backup, with the record's Merkle tree rebuilt (it is derived,
/// so neither snapshots nor backups carry it).
pub fn decode_state(state_json: &[u8]) -> Result<State, BackupError> {
    let mut state: State = serde_json::from_slice(state_json).map_err(BackupError::State)?;
    panel_machine::features::checkpoints::sync_tree(&mut state)
        .map_err(|e| BackupError::State(<serde_json::Error as serde::de::Error>::custom(e)))?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    fn sample() -> Vec<u8> {
        let mut state = State::default();
        state.kv.insert("k".into(), "v".into());
        let json = serde_json::to_vec(&state).unwrap();
        let at = LogId::new(CommittedLeaderId::new(4, 2), 17);
        encode(2, Some(at), 5, true, &state, json).unwrap()
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let bytes = sample();
        let (h, state) = decode(&bytes).unwrap();
        assert_eq!(h.last_log_id.index, 17);
        assert_eq!(h.source_replica, 2);
        assert_eq!(decode_state(state).unwrap().kv.get("k").unwrap(), "v");

        let truncated = &bytes[..bytes.len() - 1];
        assert!(matches!(decode(truncated), Err(BackupError::Length { .. })));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 2;
        flipped[last] ^= 1;
        assert!(matches!(decode(&flipped), Err(BackupError::Digest)));
        assert!(matches!(decode(b"{}\n"), Err(BackupError::Header(_))));
    }

    #[test]
    fn an_empty_replica_has_nothing_to_back_up() {
        let s = State::default();
        let e = encode(1, None, 0, true, &s, b"{}".to_vec()).unwrap_err();
        assert!(matches!(e, BackupError::Empty));
    }
}
