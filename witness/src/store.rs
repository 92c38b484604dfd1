//! The witness's state: for each log, the latest checkpoint it cosigned (size, root and the
//! note with the log's signatures and this witness's cosignature), in one JSON file under
//! the data folder (docs/WITNESS.md, "What it stores").
//!
//! The spec requires the new checkpoint to be persisted before the answer and the check
//! and the persist to be atomic; [`write_atomically`] gives the first (temp file, fsync,
//! rename, fsync of the folder) and the server's single lock the second. A file that does
//! not parse or check stops the witness: an empty state would let it cosign a rolled-back
//! tree.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use panel_tlog::checkpoint::{decode_hash, encode_hash};
use panel_tlog::witness::Latest;
use panel_tlog::{Checkpoint, Note, VerifierKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::StartError;

/// The state file's name in the data folder.
pub const STATE_FILE: &str = "witness-state.json";
/// Held (an exclusive OS lock) while a witness runs on the folder.
pub const LOCK_FILE: &str = "witness.lock";
const FORMAT: &str = "panel-witness-state/1";

/// What the witness holds for one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub latest: Latest,
    /// The cosigned checkpoint: the log's verified signatures and this witness's.
    pub note: Note,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Disk {
    format: String,
    logs: Vec<DiskLog>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiskLog {
    origin: String,
    size: u64,
    root: String,
    checkpoint: String,
}

/// The loaded state and the folder lock.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    logs: BTreeMap<String, Entry>,
    _lock: File,
}

impl Store {
    /// Opens (creating if needed) the data folder, takes its lock and loads the state; each
    /// stored checkpoint must carry a cosignature by `witness` that verifies.
    pub fn open(dir: &Path, witness: &VerifierKey) -> Result<Store, StartError> {
        let io = |source| StartError::DataDir {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        if lock.try_lock().is_err() {
            return Err(StartError::Locked {
                path: dir.to_path_buf(),
                lock: lock_path,
            });
        }
        let path = dir.join(STATE_FILE);
        let logs = match std::fs::read(&path) {
            Ok(bytes) => load(&bytes, witness).map_err(|problem| StartError::CorruptState {
                path: path.clone(),
                problem: Box::new(problem),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(io(e)),
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            logs,
            _lock: lock,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn get(&self, origin: &str) -> Option<&Entry> {
        self.logs.get(origin)
    }

    /// The entry whose origin hashes (SHA-256, lowercase hex) to `origin_hash`: the
    /// monitoring endpoint's key.
    pub fn by_origin_hash(&self, origin_hash: &str) -> Option<&Entry> {
        self.logs
            .iter()
            .find(|(origin, _)| hex::encode(Sha256::digest(origin.as_bytes())) == origin_hash)
            .map(|(_, e)| e)
    }

    /// The whole state file as it will be once `entry` replaces the one for `origin`.
    pub fn serialize_with(
        &self,
        origin: &str,
        entry: &Entry,
    ) -> Result<Vec<u8>, serde_json::Error> {
        let mut logs: Vec<DiskLog> = self
            .logs
            .iter()
            .filter(|(o, _)| o.as_str() != origin)
            .map(|(o, e)| disk_log(o, e))
            .collect();
        logs.push(disk_log(origin, entry));
        logs.sort_by(|a, b| a.origin.cmp(&b.origin));
        let disk = Disk {
            format: FORMAT.to_string(),
            logs,
        };
        let mut bytes = serde_json::to_vec_pretty(&disk)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Records `entry` in memory; call only after [`write_atomically`] succeeded.
    pub fn commit(&mut self, origin: &str, entry: Entry) {
        self.logs.insert(origin.to_string(), entry);
    }
}

fn disk_log(origin: &str, e: &Entry) -> DiskLog {
    DiskLog {
        origin: origin.to_string(),
        size: e.latest.size,
        root: encode_hash(&e.latest.root),
        checkpoint: e.note.to_text(),
    }
}

/// Why the witness's state file cannot be loaded; each names the part that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    #[error("it is not the witness state JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("format {found:?}, expected {FORMAT:?}")]
    Format { found: String },
    #[error("log {origin:?}: the root is not a base64 hash")]
    Root { origin: String },
    #[error("log {origin:?}: {source}")]
    Note {
        origin: String,
        source: panel_tlog::NoteError,
    },
    #[error("log {origin:?}: {source}")]
    Checkpoint {
        origin: String,
        source: panel_tlog::checkpoint::CheckpointError,
    },
    #[error(
        "log {origin:?}: the stored checkpoint does not match the stored origin, size and root"
    )]
    Mismatch { origin: String },
    #[error(
        "log {origin:?}: the stored checkpoint carries no valid cosignature by this witness ({witness}): {source}"
    )]
    NotCosigned {
        origin: String,
        witness: String,
        source: panel_tlog::NoteError,
    },
    #[error("log {origin:?} is listed twice")]
    Duplicate { origin: String },
}

fn load(bytes: &[u8], witness: &VerifierKey) -> Result<BTreeMap<String, Entry>, StateFileError> {
    let disk: Disk = serde_json::from_slice(bytes)?;
    if disk.format != FORMAT {
        return Err(StateFileError::Format { found: disk.format });
    }
    let mut logs = BTreeMap::new();
    for l in disk.logs {
        let origin = || l.origin.clone();
        let root = decode_hash(&l.root).ok_or_else(|| StateFileError::Root { origin: origin() })?;
        let note = Note::parse(l.checkpoint.as_bytes()).map_err(|source| StateFileError::Note {
            origin: origin(),
            source,
        })?;
        let cp =
            Checkpoint::parse_body(&note.text).map_err(|source| StateFileError::Checkpoint {
                origin: origin(),
                source,
            })?;
        if cp.origin != l.origin || cp.size != l.size || cp.root != root {
            return Err(StateFileError::Mismatch { origin: origin() });
        }
        note.verify(std::slice::from_ref(witness))
            .map_err(|source| StateFileError::NotCosigned {
                origin: origin(),
                witness: witness.to_string(),
                source,
            })?;
        if logs
            .insert(
                l.origin.clone(),
                Entry {
                    latest: Latest {
                        size: cp.size,
                        root,
                    },
                    note,
                },
            )
            .is_some()
        {
            return Err(StateFileError::Duplicate { origin: origin() });
        }
    }
    Ok(logs)
}

/// Replaces `dir/STATE_FILE` with `bytes` so that after a crash at any point the file holds
/// either the old state or the new one, and the new one once this returns.
pub fn write_atomically(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{STATE_FILE}.tmp"));
    let mut f = File::options()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, dir.join(STATE_FILE))?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use panel_tlog::merkle::Log;
    use panel_tlog::{Cosigner, NoteSigner};

    fn entry(w: &Cosigner, size: u64) -> (String, Entry) {
        let log = NoteSigner::new("log.example/a", SigningKey::from_bytes(&[1; 32])).expect("l");
        let mut l = Log::new();
        for i in 0..size {
            l.append(&i.to_be_bytes());
        }
        let cp = Checkpoint::new(log.name(), size, l.root());
        let mut note = Note::new(cp.body()).expect("note");
        note.add(log.sign(&note.text));
        note.add(w.cosign(&note.text, 1_700_000_000));
        let latest = Latest {
            size,
            root: l.root(),
        };
        (log.name().to_string(), Entry { latest, note })
    }

    #[test]
    fn the_state_survives_a_reopen_and_a_corrupt_or_foreign_file_stops_the_start() {
        let dir = tempfile::tempdir().expect("dir");
        let w = Cosigner::new("w.example/1", SigningKey::from_bytes(&[2; 32])).expect("w");
        let (origin, e) = entry(&w, 7);
        {
            let mut s = Store::open(dir.path(), &w.verifier()).expect("open");
            assert!(matches!(
                Store::open(dir.path(), &w.verifier()),
                Err(StartError::Locked { .. })
            ));
            write_atomically(dir.path(), &s.serialize_with(&origin, &e).expect("json"))
                .expect("write");
            s.commit(&origin, e.clone());
        }
        let s = Store::open(dir.path(), &w.verifier()).expect("reopen");
        assert_eq!(s.get(&origin), Some(&e));
        let hash = hex::encode(Sha256::digest(origin.as_bytes()));
        assert_eq!(s.by_origin_hash(&hash), Some(&e));
        drop(s);
        let other = Cosigner::new("w.example/1", SigningKey::from_bytes(&[3; 32])).expect("o");
        assert!(matches!(
            Store::open(dir.path(), &other.verifier()),
            Err(StartError::CorruptState { problem, .. }) if matches!(*problem, StateFileError::NotCosigned { .. })
        ));
        let path = dir.path().join(STATE_FILE);
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("\"size\": 7", "\"size\": 3")).expect("edit");
        assert!(matches!(
            Store::open(dir.path(), &w.verifier()),
            Err(StartError::CorruptState { problem, .. }) if matches!(*problem, StateFileError::Mismatch { .. })
        ));
        std::fs::write(&path, "").expect("truncate");
        let err = Store::open(dir.path(), &w.verifier()).unwrap_err();
        assert!(err.to_string().contains(STATE_FILE), "{err}");
        assert!(
            matches!(&err, StartError::CorruptState { problem, .. } if matches!(**problem, StateFileError::Json(_))),
            "{err}"
        );
    }
}
