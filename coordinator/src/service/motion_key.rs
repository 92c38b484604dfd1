//! The cluster's motion key: the ed25519 key every replica's motion driver signs motions
//! with (docs/WIRE.md "Motion, layout v1"; docs/SECURITY.md). One 32-byte seed file, the
//! same on every replica, given as `panel coordinator run --motion-key FILE`; nodes list
//! its public key in `coordinator_keys`. Stored like the checkpoint key (raw seed, mode
//! 0600), and refused at load when group or others can read it: whoever reads it can make
//! any node judge any content.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use thiserror::Error;

/// Why the motion key cannot be used.
#[derive(Debug, Error)]
pub enum MotionKeyError {
    #[error(
        "no motion key: start every replica with --motion-key FILE (the same 32-byte seed file \
         on each; `panel coordinator motion-keygen FILE` makes one), so nodes can verify the \
         motions they are sent"
    )]
    Missing,
    #[error("motion key {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("motion key {path} is {len} bytes; it must be a raw 32-byte ed25519 seed")]
    Length { path: PathBuf, len: usize },
    #[error(
        "motion key {path} is readable by group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    Permissions { path: PathBuf, mode: u32 },
    #[error("motion key {path} already exists; refusing to overwrite it")]
    Exists { path: PathBuf },
    #[error(
        "this replica holds no motion key {in_force}, the key the record says is in force \
         (rotated by RotateMotionKey); restart it with --motion-key (or --next-motion-key) \
         naming that key's file"
    )]
    NotHeld { in_force: String },
}

/// Loads a motion key file (raw 32-byte seed, mode 0600 or stricter).
pub fn load(path: &Path) -> Result<SigningKey, MotionKeyError> {
    let io = |source| MotionKeyError::Io {
        path: path.to_owned(),
        source,
    };
    let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(MotionKeyError::Permissions {
            path: path.to_owned(),
            mode,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let seed: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| MotionKeyError::Length {
            path: path.to_owned(),
            len: bytes.len(),
        })?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Writes a fresh motion key (mode 0600); refuses to overwrite an existing file.
pub fn generate(path: &Path) -> Result<SigningKey, MotionKeyError> {
    let io = |source| MotionKeyError::Io {
        path: path.to_owned(),
        source,
    };
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => MotionKeyError::Exists {
                path: path.to_owned(),
            },
            _ => io(e),
        })?;
    f.write_all(&seed).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The key a replica signs motions with: the `--motion-key` file, or, on a test cluster
/// (`--test-commands`) started without one, a per-replica key kept in its data directory
/// (nodes of such a cluster must then trust every replica's key). A production replica
/// without the flag refuses to start ([`MotionKeyError::Missing`]).
pub fn resolve(
    flag: Option<&Path>,
    data_dir: &Path,
    test_cluster: bool,
) -> Result<SigningKey, MotionKeyError> {
    match flag {
        Some(p) => load(p),
        None if test_cluster => {
            let p = data_dir.join("motion.key");
            if p.exists() {
                load(&p)
            } else {
                tracing::warn!(
                    path = %p.display(),
                    "no --motion-key: this test replica signs motions with its own key"
                );
                generate(&p)
            }
        }
        None => Err(MotionKeyError::Missing),
    }
}

/// The motion keys a replica holds: its `--motion-key` and, during a rotation, its
/// `--next-motion-key`. The driver signs each motion with the held key the record says is
/// in force for it (`panel_machine::features::charter_rules::motion_key_at`).
#[derive(Debug)]
pub struct MotionKeys(Vec<SigningKey>);

impl MotionKeys {
    /// The keys from the flags ([`resolve`] for the first; the next key is loaded as is).
    pub fn resolve(
        flag: Option<&Path>,
        next: Option<&Path>,
        data_dir: &Path,
        test_cluster: bool,
    ) -> Result<Self, MotionKeyError> {
        let mut keys = vec![resolve(flag, data_dir, test_cluster)?];
        if let Some(p) = next {
            keys.push(load(p)?);
        }
        Ok(Self(keys))
    }

    /// Whether a held key is the one hex-encoded in `public_hex`.
    pub fn holds_hex(&self, public_hex: &str) -> bool {
        self.0
            .iter()
            .any(|k| hex::encode(k.verifying_key().to_bytes()) == public_hex)
    }

    /// The held key to sign with when the record says `in_force` (`None`: an unchartered
    /// group, which pins no key, so the `--motion-key`).
    pub fn for_key(
        &self,
        in_force: Option<&ed25519_dalek::VerifyingKey>,
    ) -> Result<&SigningKey, MotionKeyError> {
        match in_force {
            None => Ok(&self.0[0]),
            Some(want) => self
                .0
                .iter()
                .find(|k| &k.verifying_key() == want)
                .ok_or_else(|| MotionKeyError::NotHeld {
                    in_force: hex::encode(want.to_bytes()),
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_load_back_and_loose_modes_are_refused() {
        let dir = std::env::temp_dir().join(format!("motion-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("motion.key");
        let k = generate(&p).unwrap();
        assert_eq!(load(&p).unwrap().to_bytes(), k.to_bytes());
        assert!(matches!(generate(&p), Err(MotionKeyError::Exists { .. })));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load(&p).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
        assert!(
            resolve(None, &dir, false)
                .unwrap_err()
                .to_string()
                .contains("--motion-key")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_held_key_in_force_signs_and_a_missing_one_names_the_fix() {
        let old = SigningKey::from_bytes(&[1; 32]);
        let new = SigningKey::from_bytes(&[2; 32]);
        let keys = MotionKeys(vec![old.clone(), new.clone()]);
        let pick = |k: &SigningKey| keys.for_key(Some(&k.verifying_key())).map(|s| s.to_bytes());
        assert_eq!(pick(&old).unwrap(), old.to_bytes());
        assert_eq!(pick(&new).unwrap(), new.to_bytes());
        assert_eq!(keys.for_key(None).unwrap().to_bytes(), old.to_bytes());
        let stranger = SigningKey::from_bytes(&[3; 32]);
        let err = pick(&stranger).unwrap_err().to_string();
        assert!(err.contains("--next-motion-key"), "{err}");
        assert!(keys.holds_hex(&hex::encode(new.verifying_key().to_bytes())));
        assert!(!keys.holds_hex(&hex::encode(stranger.verifying_key().to_bytes())));
    }
}
