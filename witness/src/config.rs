//! What a witness is started with, the clock it stamps cosignatures with, and why it may
//! refuse to start (docs/WITNESS.md, "Running one").

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use panel_tlog::note::TYPE_ED25519;
use panel_tlog::witness::KnownLog;
use panel_tlog::{Cosigner, VerifierKey};

/// Seconds since the Unix epoch. Injected so tests can pin the cosignatures' timestamps.
pub trait Clock: Send + Sync + 'static {
    fn now_unix(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

impl<F: Fn() -> u64 + Send + Sync + 'static> Clock for F {
    fn now_unix(&self) -> u64 {
        self()
    }
}

/// Why a witness does not start. Each names the flag or file at fault and the fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "the witness key file {} (--key) does not exist; create one with `panel witness keygen --key {} --name NAME`",
        path.display(), path.display()
    )]
    KeyMissing { path: PathBuf },
    #[error("the witness key file {} (--key): {problem}", path.display())]
    Key { path: PathBuf, problem: String },
    #[error(
        "--name {name:?}: a witness name is non-empty and holds no space or '+' (e.g. witness.example/w1)"
    )]
    BadName { name: String },
    #[error(
        "--log {vkey:?}: {problem}; give each log as its C2SP verifier key `<origin>+<key ID>+<base64(0x01 || key)>`"
    )]
    BadLog { vkey: String, problem: String },
    #[error("no --log given: a witness cosigns only for the logs it is configured with")]
    NoLogs,
    #[error("the data folder {} (--data): {source}", path.display())]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the data folder {} (--data) is in use by another witness (it holds {}); stop that witness or use another folder",
        path.display(), lock.display()
    )]
    Locked { path: PathBuf, lock: PathBuf },
    #[error(
        "the witness state file {} is corrupt: {problem}; restore it from a backup, or move it away deliberately (starting from nothing lets this witness cosign a log that was rolled back)",
        path.display()
    )]
    CorruptState {
        path: PathBuf,
        problem: Box<crate::store::StateFileError>,
    },
    #[error(
        "cannot listen on {addr} (--listen): {source}; choose another address or stop what holds it"
    )]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A witness's configuration. `logs` holds the log keys it cosigns for, grouped by origin
/// (a log's origin is its vkey's name, docs/WIRE.md).
#[derive(Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub cosigner: Cosigner,
    pub logs: Vec<KnownLog>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field("witness", &self.cosigner.name())
            .field("logs", &self.logs)
            .finish()
    }
}

impl Config {
    /// A configuration from a key already in hand (e.g. `panel up` running witnesses itself).
    pub fn new(
        listen: SocketAddr,
        data_dir: impl Into<PathBuf>,
        name: &str,
        key: SigningKey,
        logs: Vec<KnownLog>,
    ) -> Result<Self, StartError> {
        let cosigner = Cosigner::new(name, key).map_err(|_| StartError::BadName {
            name: name.to_string(),
        })?;
        if logs.is_empty() {
            return Err(StartError::NoLogs);
        }
        Ok(Config {
            listen,
            data_dir: data_dir.into(),
            cosigner,
            logs,
        })
    }

    /// A configuration from the flags of `panel witness run`: the key is read from a file.
    pub fn from_files(
        listen: SocketAddr,
        data_dir: impl Into<PathBuf>,
        name: &str,
        key_file: &Path,
        logs: Vec<KnownLog>,
    ) -> Result<Self, StartError> {
        let key = crate::key::read_key(key_file)?;
        Self::new(listen, data_dir, name, key, logs)
    }

    /// The witness's verifier key (type 0x04), what logs and verifiers pin.
    pub fn vkey(&self) -> VerifierKey {
        self.cosigner.verifier()
    }
}

/// A log no single replica signs for (`panel_tlog::log_quorum`): the witness cosigns a
/// checkpoint of `origin` only when the keys of `quorum.organisations` distinct
/// organisations signed it.
pub fn quorum_log(origin: &str, quorum: panel_tlog::LogQuorum) -> KnownLog {
    KnownLog {
        origin: origin.to_string(),
        keys: Vec::new(),
        quorum: Some(quorum),
    }
}

/// Groups log vkeys (Ed25519, type 0x01) by origin; several keys may sign one log, any one
/// of them sufficing.
pub fn known_logs(vkeys: &[String]) -> Result<Vec<KnownLog>, StartError> {
    if vkeys.is_empty() {
        return Err(StartError::NoLogs);
    }
    let mut logs: Vec<KnownLog> = Vec::new();
    for v in vkeys {
        let key = VerifierKey::parse(v).map_err(|e| StartError::BadLog {
            vkey: v.clone(),
            problem: e.to_string(),
        })?;
        if key.sig_type != TYPE_ED25519 {
            return Err(StartError::BadLog {
                vkey: v.clone(),
                problem: format!(
                    "signature type {:#04x}; a log signs its checkpoints with Ed25519 (0x01)",
                    key.sig_type
                ),
            });
        }
        match logs.iter_mut().find(|l| l.origin == key.name) {
            Some(log) => {
                if !log.keys.contains(&key) {
                    log.keys.push(key);
                }
            }
            None => logs.push(KnownLog {
                origin: key.name.clone(),
                keys: vec![key],
                quorum: None,
            }),
        }
    }
    Ok(logs)
}
