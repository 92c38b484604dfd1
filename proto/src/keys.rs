//! Arbiter public keys: parsing with weak-key refusal, fingerprints, and the signed key
//! documents (rotation, revocation) a coordinator records.
//!
//! Weak (small-order) keys are refused at parse time because `verify_strict` would refuse
//! every signature under them anyway, and a registry must not admit a key that can never
//! sign, or worse, one for which a "signature" on any message can be crafted under plain
//! `verify` (ed25519-dalek docs, "weak keys").

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::pb::{KeyRevocation, KeyRotation};
use crate::ruling_check::MAX_RATIONALE_BYTES;
use crate::signing::{self, CanonicalWriter};

/// Why bytes are not an acceptable arbiter public key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    #[error("public key is {0} bytes; an ed25519 public key is exactly 32 bytes")]
    Length(usize),
    #[error("public key {0} is not a valid compressed Edwards point")]
    NotAPoint(String),
    #[error(
        "public key {0} is weak (small order): any signature would be forgeable; \
         generate a fresh key with `panel node keygen`"
    )]
    Weak(String),
    #[error("signature is {0} bytes; an ed25519 signature is exactly 64 bytes")]
    SignatureLength(usize),
    #[error("{document}: {which} signature does not verify (strict ed25519)")]
    BadSignature {
        document: &'static str,
        which: &'static str,
    },
    #[error("key rotation names the same key as old and new; rotate to a fresh key")]
    RotationToSelf,
    #[error("reason is {0} bytes; at most 16384 bytes are allowed")]
    ReasonTooLong(usize),
    #[error("{0} is negative")]
    NegativeTime(&'static str),
}

/// Parses a 32-byte public key and refuses keys that are malformed or weak. Use this at
/// arbiter registration and whenever a key arrives on the wire.
pub fn parse_public_key(bytes: &[u8]) -> Result<VerifyingKey, KeyError> {
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| KeyError::Length(bytes.len()))?;
    let cache = || {
        PARSED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(k) = cache().get(&arr) {
        return Ok(*k);
    }
    let key = VerifyingKey::from_bytes(&arr).map_err(|_| KeyError::NotAPoint(hex::encode(arr)))?;
    if key.is_weak() {
        return Err(KeyError::Weak(hex::encode(arr)));
    }
    let mut c = cache();
    if c.len() >= PARSED_MAX {
        c.clear();
    }
    c.insert(arr, key);
    Ok(key)
}

/// Keys that parsed and passed the weak-key check. Decompressing a key costs 10-15 % of a
/// verification and arbiters sign many rulings with one key; the cache only remembers a
/// pure function's successes.
static PARSED: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<[u8; 32], VerifyingKey>>,
> = std::sync::LazyLock::new(Default::default);

/// Bound on cached keys; the cache is cleared when full.
const PARSED_MAX: usize = 1 << 16;

/// Parses a 64-byte signature.
pub fn parse_signature(bytes: &[u8]) -> Result<Signature, KeyError> {
    let arr: [u8; 64] = bytes
        .try_into()
        .map_err(|_| KeyError::SignatureLength(bytes.len()))?;
    Ok(Signature::from_bytes(&arr))
}

/// Human-comparable fingerprint of a public key: the first 16 bytes of
/// SHA-256("crucible-panel/key-fingerprint/v1\0" || key), as 8 colon-separated groups of
/// 4 hex digits, e.g. `3f2a:91bc:...`. Compare fingerprints out of band before trusting a
/// peer key.
pub fn fingerprint(key: &VerifyingKey) -> String {
    fingerprint_bytes(key.as_bytes())
}

/// [`fingerprint`] of raw key bytes (no validity check; for display only).
pub fn fingerprint_bytes(key: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(signing::FINGERPRINT_TAG_V1);
    h.update(key);
    let digest = h.finalize();
    let hexed = hex::encode(&digest[..16]);
    hexed
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect::<Vec<_>>()
        .join(":")
}

fn check_reason(reason: &str) -> Result<(), KeyError> {
    if reason.len() > MAX_RATIONALE_BYTES {
        return Err(KeyError::ReasonTooLong(reason.len()));
    }
    Ok(())
}

/// Canonical bytes of a key rotation document (docs/WIRE.md, "Key documents").
pub fn rotation_canonical_bytes(doc: &KeyRotation) -> Result<Vec<u8>, KeyError> {
    let old = parse_public_key(&doc.old_key)?;
    let new = parse_public_key(&doc.new_key)?;
    if old == new {
        return Err(KeyError::RotationToSelf);
    }
    if doc.issued_at_unix_ms < 0 {
        return Err(KeyError::NegativeTime("issued_at_unix_ms"));
    }
    check_reason(&doc.reason)?;
    let mut w = CanonicalWriter::new(signing::KEY_ROTATION_TAG_V1);
    w.fixed(old.as_bytes());
    w.fixed(new.as_bytes());
    w.i64(doc.issued_at_unix_ms);
    w.text(&doc.reason);
    Ok(w.finish())
}

/// Creates a rotation from `old` to `new`, signed by both: the old key authorises it, the
/// new key proves possession (so nobody can rotate onto a key they do not hold).
pub fn sign_rotation(
    old: &SigningKey,
    new: &SigningKey,
    issued_at_unix_ms: i64,
    reason: &str,
) -> Result<KeyRotation, KeyError> {
    let mut doc = KeyRotation {
        old_key: old.verifying_key().to_bytes().to_vec(),
        new_key: new.verifying_key().to_bytes().to_vec(),
        issued_at_unix_ms,
        reason: reason.to_owned(),
        old_key_signature: Vec::new(),
        new_key_signature: Vec::new(),
    };
    let bytes = rotation_canonical_bytes(&doc)?;
    doc.old_key_signature = old.sign(&bytes).to_bytes().to_vec();
    doc.new_key_signature = new.sign(&bytes).to_bytes().to_vec();
    Ok(doc)
}

/// Verifies both signatures of a rotation strictly; returns (old, new) keys.
pub fn verify_rotation(doc: &KeyRotation) -> Result<(VerifyingKey, VerifyingKey), KeyError> {
    let bytes = rotation_canonical_bytes(doc)?;
    let old = parse_public_key(&doc.old_key)?;
    let new = parse_public_key(&doc.new_key)?;
    let old_sig = parse_signature(&doc.old_key_signature)?;
    let new_sig = parse_signature(&doc.new_key_signature)?;
    old.verify_strict(&bytes, &old_sig)
        .map_err(|_| KeyError::BadSignature {
            document: "key rotation",
            which: "old key's",
        })?;
    new.verify_strict(&bytes, &new_sig)
        .map_err(|_| KeyError::BadSignature {
            document: "key rotation",
            which: "new key's",
        })?;
    Ok((old, new))
}

/// Canonical bytes of a key revocation document (docs/WIRE.md, "Key documents").
pub fn revocation_canonical_bytes(doc: &KeyRevocation) -> Result<Vec<u8>, KeyError> {
    let key = parse_public_key(&doc.key)?;
    if doc.issued_at_unix_ms < 0 {
        return Err(KeyError::NegativeTime("issued_at_unix_ms"));
    }
    if doc.effective_from_unix_ms < 0 {
        return Err(KeyError::NegativeTime("effective_from_unix_ms"));
    }
    check_reason(&doc.reason)?;
    let mut w = CanonicalWriter::new(signing::KEY_REVOCATION_TAG_V1);
    w.fixed(key.as_bytes());
    w.i64(doc.issued_at_unix_ms);
    w.i64(doc.effective_from_unix_ms);
    w.text(&doc.reason);
    Ok(w.finish())
}

/// Revokes `key` from `effective_from_unix_ms` on (it may lie in the past, e.g. the time
/// a compromise began). Signed by the revoked key itself.
pub fn sign_revocation(
    key: &SigningKey,
    issued_at_unix_ms: i64,
    effective_from_unix_ms: i64,
    reason: &str,
) -> Result<KeyRevocation, KeyError> {
    let mut doc = KeyRevocation {
        key: key.verifying_key().to_bytes().to_vec(),
        issued_at_unix_ms,
        effective_from_unix_ms,
        reason: reason.to_owned(),
        signature: Vec::new(),
    };
    let bytes = revocation_canonical_bytes(&doc)?;
    doc.signature = key.sign(&bytes).to_bytes().to_vec();
    Ok(doc)
}

/// Verifies a revocation strictly; returns the revoked key.
pub fn verify_revocation(doc: &KeyRevocation) -> Result<VerifyingKey, KeyError> {
    let bytes = revocation_canonical_bytes(doc)?;
    let key = parse_public_key(&doc.key)?;
    let sig = parse_signature(&doc.signature)?;
    key.verify_strict(&bytes, &sig)
        .map_err(|_| KeyError::BadSignature {
            document: "key revocation",
            which: "revoked key's",
        })?;
    Ok(key)
}
