//! `panel org fingerprint FILE...`: what a key or certificate file is, and the value the
//! charter and the members' endorsements name it by, for every kind of file `panel pki
//! init` and `panel node keygen` write (docs/SECURITY.md "Membership"):
//!
//! - a certificate (PEM): the SHA-256 of its DER, as the charter pins an organisation's
//!   authority (`ca_sha256`) or a replica, operator or node certificate;
//! - a raw 32-byte Ed25519 seed (roster, log and motion keys): the public key, hex, as the
//!   charter lists it, and its fingerprint;
//! - a node key file (`seed:`/`public:` lines): the same.
//!
//! A joining organisation sends these values to the members, who check them before they
//! endorse its admission.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ed25519_dalek::VerifyingKey;
use panel_federation::Fingerprint;
use serde::Serialize;

/// One file described.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Described {
    /// A PEM certificate: the SHA-256 of its DER (what the charter pins).
    Certificate { file: String, sha256: String },
    /// An Ed25519 key (raw seed or node key file): its public key and fingerprint.
    SigningKey {
        file: String,
        public_key: String,
        fingerprint: String,
    },
}

const PEM_CERTIFICATE: &[u8] = b"-----BEGIN CERTIFICATE-----";

/// What `path` is, from its bytes alone (never from its name).
pub fn describe(path: &Path) -> Result<Described> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {file}"))?;
    if bytes
        .windows(PEM_CERTIFICATE.len())
        .any(|w| w == PEM_CERTIFICATE)
    {
        let der = panel_transport::material::first_der(&bytes)
            .with_context(|| format!("{file}: a PEM certificate block that does not decode"))?;
        return Ok(Described::Certificate {
            file,
            sha256: Fingerprint::of_der(&der).to_string(),
        });
    }
    let vk = if bytes.len() == 32 {
        panel_transport::pki::read_seed_key(path)
            .with_context(|| format!("{file}: a 32-byte key file"))?
            .verifying_key()
    } else if bytes.starts_with(b"seed:") || bytes.starts_with(b"public:") {
        panel_node::keyfile::load_key(path)
            .with_context(|| format!("{file}: a node key file"))?
            .verifying_key()
    } else {
        bail!(
            "{file} is neither a PEM certificate, a raw 32-byte Ed25519 key (roster, log and \
             motion keys from `panel pki init`) nor a node key file (`panel node keygen`)"
        );
    };
    Ok(signing_key(file, &vk))
}

fn signing_key(file: String, vk: &VerifyingKey) -> Described {
    Described::SigningKey {
        file,
        public_key: hex::encode(vk.as_bytes()),
        fingerprint: panel_proto::keys::fingerprint(vk),
    }
}

/// Prints each file, as lines or one JSON document per file.
pub fn run(files: &[PathBuf], json: bool) -> Result<()> {
    for f in files {
        let d = describe(f)?;
        if json {
            println!("{}", serde_json::to_string(&d)?);
            continue;
        }
        match d {
            Described::Certificate { file, sha256 } => {
                println!("{file}: certificate, sha256 {sha256}");
            }
            Described::SigningKey {
                file,
                public_key,
                fingerprint,
            } => println!("{file}: ed25519 key, public {public_key}, fingerprint {fingerprint}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    }

    #[test]
    fn a_raw_seed_and_a_node_key_file_of_one_key_give_one_public_key() {
        let dir = tempfile::tempdir().unwrap();
        let seed = [7u8; 32];
        let raw = write(dir.path(), "signing.key", &seed);
        let sk = ed25519_dalek::SigningKey::from_bytes(&seed);
        let text = format!(
            "seed: {}\npublic: {}\n",
            hex::encode(seed),
            hex::encode(sk.verifying_key().as_bytes())
        );
        let node = write(dir.path(), "node.key", text.as_bytes());
        let (
            Described::SigningKey { public_key: a, .. },
            Described::SigningKey { public_key: b, .. },
        ) = (describe(&raw).unwrap(), describe(&node).unwrap())
        else {
            panic!("both are keys");
        };
        assert_eq!(a, b);
        assert_eq!(a, hex::encode(sk.verifying_key().as_bytes()));
    }

    #[test]
    fn anything_else_is_refused_naming_what_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let junk = write(dir.path(), "junk", b"not a key at all");
        let e = describe(&junk).unwrap_err().to_string();
        assert!(e.contains("neither a PEM certificate"), "{e}");
        let bad_pem = write(
            dir.path(),
            "bad.pem",
            b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        );
        assert!(describe(&bad_pem).is_err());
    }
}
