//! The arbiter's secret key on disk.
//!
//! A key file holds the 32-byte ed25519 seed in hex, plus the public key and fingerprint
//! for the operator's eyes. It is created with mode 0600 and a key file that the group or
//! others can read is refused at load, with the command that fixes it: a readable secret
//! key is a compromised key.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use panel_proto::{SigningKey, fingerprint};
use thiserror::Error;

const HEADER: &str =
    "# crucible-panel ed25519 secret key v1. Keep private: mode 0600, never share.";

#[derive(Debug, Error)]
pub enum KeyFileError {
    #[error(
        "key file {path} already exists; refusing to overwrite a key (use --force to replace it)"
    )]
    Exists { path: PathBuf },
    #[error("cannot read key file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write key file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "key file {path} has mode {mode:04o}: it is readable by group or others, so the key \
         must be treated as exposed. Fix with `chmod 600 {path}` (and rotate the key if \
         others may have read it)"
    )]
    LoosePermissions { path: PathBuf, mode: u32 },
    #[error("key file {path} is malformed: {problem}")]
    Malformed { path: PathBuf, problem: String },
    #[error("no randomness from the operating system: {0}")]
    Random(getrandom::Error),
}

/// Fresh 32 random bytes from the OS.
pub fn random_32() -> Result<[u8; 32], KeyFileError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(KeyFileError::Random)?;
    Ok(b)
}

/// Generates a key and writes it to `path` with mode 0600. Refuses to overwrite unless
/// `force`.
pub fn keygen(path: &Path, force: bool) -> Result<SigningKey, KeyFileError> {
    let key = SigningKey::from_bytes(&random_32()?);
    write_key(path, &key, force)?;
    Ok(key)
}

/// Writes a key file with mode 0600.
pub fn write_key(path: &Path, key: &SigningKey, force: bool) -> Result<(), KeyFileError> {
    if path.exists() && !force {
        return Err(KeyFileError::Exists {
            path: path.to_owned(),
        });
    }
    let werr = |source| KeyFileError::Write {
        path: path.to_owned(),
        source,
    };
    if force && path.exists() {
        std::fs::remove_file(path).map_err(werr)?;
    }
    let vk = key.verifying_key();
    let text = format!(
        "{HEADER}\nseed: {}\npublic: {}\nfingerprint: {}\n",
        hex::encode(key.to_bytes()),
        hex::encode(vk.as_bytes()),
        fingerprint(&vk)
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(werr)?;
    f.write_all(text.as_bytes()).map_err(werr)?;
    f.sync_all().map_err(werr)?;
    Ok(())
}

/// Loads a key file, refusing group- or world-readable files.
pub fn load_key(path: &Path) -> Result<SigningKey, KeyFileError> {
    let rerr = |source| KeyFileError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(rerr)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::LoosePermissions {
            path: path.to_owned(),
            mode,
        });
    }
    let text = std::fs::read_to_string(path).map_err(rerr)?;
    let malformed = |problem: &str| KeyFileError::Malformed {
        path: path.to_owned(),
        problem: problem.to_owned(),
    };
    let mut seed_hex = None;
    let mut public_hex = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("seed:") {
            seed_hex = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("public:") {
            public_hex = Some(v.trim().to_owned());
        }
    }
    let seed_hex = seed_hex.ok_or_else(|| malformed("no `seed:` line"))?;
    let seed: [u8; 32] = hex::decode(&seed_hex)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| malformed("`seed:` must be 64 hex digits"))?;
    let key = SigningKey::from_bytes(&seed);
    if let Some(p) = public_hex
        && p != hex::encode(key.verifying_key().as_bytes())
    {
        return Err(malformed(
            "`public:` does not match the seed (file edited or corrupted)",
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_0600_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.key");
        let key = keygen(&path, false).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(load_key(&path).unwrap().to_bytes(), key.to_bytes());
        assert!(matches!(
            keygen(&path, false),
            Err(KeyFileError::Exists { .. })
        ));
    }

    #[test]
    fn loose_permissions_are_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.key");
        keygen(&path, false).unwrap();
        for mode in [0o640, 0o604, 0o644] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = load_key(&path).unwrap_err();
            assert!(matches!(err, KeyFileError::LoosePermissions { .. }));
            assert!(err.to_string().contains("chmod 600"), "{err}");
        }
    }

    #[test]
    fn edited_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.key");
        keygen(&path, false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let other = SigningKey::from_bytes(&[7; 32]);
        let edited = text
            .lines()
            .map(|l| {
                if l.starts_with("seed:") {
                    format!("seed: {}", hex::encode(other.to_bytes()))
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, edited).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            load_key(&path),
            Err(KeyFileError::Malformed { .. })
        ));
    }
}
