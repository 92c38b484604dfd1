//! The witness's signing key file: a raw 32-byte Ed25519 seed (the format `panel pki` and
//! `panel node keygen` write) or the same seed as 64 hex characters. A file readable by
//! group or others is refused, as everywhere in the panel (docs/SECURITY.md).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use ed25519_dalek::SigningKey;

use crate::config::StartError;

fn problem(path: &Path, problem: impl Into<String>) -> StartError {
    StartError::Key {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// Reads a witness key file (raw 32-byte seed or 64 hex characters).
pub fn read_key(path: &Path) -> Result<SigningKey, StartError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            StartError::KeyMissing {
                path: path.to_path_buf(),
            }
        } else {
            problem(path, e.to_string())
        }
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(problem(
            path,
            format!(
                "mode {mode:o} lets others read it; run `chmod 600 {}`",
                path.display()
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| problem(path, e.to_string()))?;
    let seed: [u8; 32] = if bytes.len() == 32 {
        bytes
            .as_slice()
            .try_into()
            .map_err(|_| problem(path, "32 bytes expected"))?
    } else {
        let text = std::str::from_utf8(&bytes).map(str::trim).unwrap_or("");
        let mut seed = [0u8; 32];
        hex::decode_to_slice(text, &mut seed).map_err(|_| {
            problem(
                path,
                format!(
                    "{} bytes; a key file is a raw 32-byte Ed25519 seed or 64 hex characters",
                    bytes.len()
                ),
            )
        })?;
        seed
    };
    Ok(SigningKey::from_bytes(&seed))
}

/// Writes a fresh raw 32-byte seed with mode 0600; refuses to overwrite an existing file.
pub fn generate_key(path: &Path) -> Result<SigningKey, StartError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| problem(path, format!("no randomness: {e}")))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                problem(path, "it already exists; refusing to overwrite a key")
            } else {
                problem(path, e.to_string())
            }
        })?;
    f.write_all(&seed)
        .and_then(|()| f.sync_all())
        .map_err(|e| problem(path, e.to_string()))?;
    Ok(SigningKey::from_bytes(&seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_hex_seeds_read_the_same_key_and_loose_modes_are_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let raw = dir.path().join("raw.key");
        let key = generate_key(&raw).expect("generate");
        assert!(generate_key(&raw).is_err(), "overwrote a key");
        let hexed = dir.path().join("hex.key");
        std::fs::write(&hexed, format!("{}\n", hex::encode(key.to_bytes()))).expect("write");
        std::fs::set_permissions(&hexed, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_key(&raw).expect("raw").to_bytes(), key.to_bytes());
        assert_eq!(read_key(&hexed).expect("hex").to_bytes(), key.to_bytes());
        std::fs::set_permissions(&hexed, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(
            read_key(&hexed)
                .unwrap_err()
                .to_string()
                .contains("chmod 600")
        );
        assert!(matches!(
            read_key(&dir.path().join("none")),
            Err(StartError::KeyMissing { .. })
        ));
    }
}
