//! The replica's log key (docs/SECURITY.md "The record"; docs/WIRE.md "Transparency log"):
//! the Ed25519 key it signs checkpoints with, under the charter's origin. Under a charter
//! that names a log, `--log-key FILE` is required: under a quorum log it is this replica's
//! own key, the one its charter entry names (`panel pki init` writes it to the replica's
//! folder); under an older single-key log, the key every replica holds. An unchartered
//! debug group signs with a key of its data folder (`DATA_DIR/log.key`), which no verifier
//! can pin.

use std::path::{Path, PathBuf};

use panel_federation::beacon_key::BeaconSecret;
use panel_machine::features::checkpoints::UNCHARTERED_ORIGIN;
use panel_tlog::NoteSigner;
use panel_transport::Charter;

/// Why the log key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LogKeyError {
    #[error(
        "the charter names the record log {origin}; start every replica with --log-key FILE \
         (the log.key issued with the charter)"
    )]
    Missing { origin: String },
    #[error(
        "the --log-key file {path} is not the charter's log key {vkey}; give every replica the \
         log.key issued with the charter"
    )]
    NotChartered { path: PathBuf, vkey: String },
    #[error(
        "the --log-key file {path} is not replica {id}'s log key in the charter ({vkey}); under \
         a quorum log each replica signs with its own key: give this replica the log.key \
         issued in its own folder"
    )]
    NotThisReplicas {
        path: PathBuf,
        id: u64,
        vkey: String,
    },
    #[error(
        "the charter's log is signed by a quorum of replicas, but it lists no log key for \
         replica {0}; run this replica under an id the charter lists"
    )]
    NoReplicaKey(u64),
    #[error(
        "the charter gives replica {id} the beacon key {charter}, but the --log-key file {path} \
         derives {derived}; give this replica the log.key issued in its own folder"
    )]
    BeaconMismatch {
        path: PathBuf,
        id: u64,
        charter: String,
        derived: String,
    },
    #[error(transparent)]
    File(#[from] panel_transport::TransportError),
    #[error("log key: {0}")]
    Name(#[from] panel_tlog::NoteError),
}

/// The replica's log signer: its own key under a quorum log, the charter's shared log key,
/// or the debug group's own.
pub fn resolve(
    path: Option<&Path>,
    data_dir: &Path,
    charter: Option<&Charter>,
    id: u64,
) -> Result<NoteSigner, LogKeyError> {
    let log = charter.and_then(|c| c.log.as_ref());
    let Some(log) = log else {
        let key = match path {
            Some(p) => panel_transport::pki::read_seed_key(p)?,
            None => own_key(&data_dir.join("log.key"))?,
        };
        return Ok(NoteSigner::new(UNCHARTERED_ORIGIN, key)?);
    };
    let path = path.ok_or_else(|| LogKeyError::Missing {
        origin: log.origin.clone(),
    })?;
    let signer = NoteSigner::new(&log.origin, panel_transport::pki::read_seed_key(path)?)?;
    if log.quorum > 0 {
        let own = charter
            .and_then(|c| c.replicas.iter().find(|r| r.id == id))
            .and_then(|r| r.log_vkey.clone())
            .ok_or(LogKeyError::NoReplicaKey(id))?;
        if panel_tlog::VerifierKey::parse(&own).ok() != Some(signer.verifier()) {
            return Err(LogKeyError::NotThisReplicas {
                path: path.to_owned(),
                id,
                vkey: own,
            });
        }
        return Ok(signer);
    }
    if log.verifier().as_ref() != Some(&signer.verifier()) {
        return Err(LogKeyError::NotChartered {
            path: path.to_owned(),
            vkey: log.vkey.clone(),
        });
    }
    Ok(signer)
}

fn own_key(path: &Path) -> Result<ed25519_dalek::SigningKey, LogKeyError> {
    if path.exists() {
        Ok(panel_transport::pki::read_seed_key(path)?)
    } else {
        Ok(panel_transport::pki::generate_seed_key(path)?)
    }
}

/// The replica's beacon key (docs/SECURITY.md "The draw cannot be steered"): derived
/// from its own log key when its charter entry names a `beacon_vkey`, which it must match;
/// `None` when the charter names none for it (the group draws from the record's tree).
pub fn beacon(
    path: Option<&Path>,
    charter: Option<&Charter>,
    id: u64,
) -> Result<Option<BeaconSecret>, LogKeyError> {
    let Some(want) = charter
        .and_then(|c| c.replicas.iter().find(|r| r.id == id))
        .and_then(|r| r.beacon_vkey.clone())
    else {
        return Ok(None);
    };
    let origin = charter
        .and_then(|c| c.log.as_ref())
        .map(|l| l.origin.clone())
        .unwrap_or_default();
    let path = path.ok_or(LogKeyError::Missing { origin })?;
    let seed = panel_transport::pki::read_seed_key(path)?.to_bytes();
    let secret = BeaconSecret::from_log_seed(&seed);
    let derived = secret.public_hex();
    if !derived.eq_ignore_ascii_case(&want) {
        return Err(LogKeyError::BeaconMismatch {
            path: path.to_owned(),
            id,
            charter: want,
            derived,
        });
    }
    Ok(Some(secret))
}
