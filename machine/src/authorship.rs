//! Contributor signatures: a contributor may sign its writes with its own ed25519 key, and
//! the first signed write binds the author name to that key (trust on first use, recorded
//! in the replicated `contributors` table). From then on every write under that name must
//! be signed by that key, so nobody else can write as that author, and a reader of the
//! record can check who wrote each contribution. Unsigned writes under an unbound name
//! stay possible: an open debate keeps its open door (behind the Gate and the rate limit).
//!
//! Signed bytes (docs/WIRE.md, "Contributor signatures"), all lengths big-endian:
//! `"crucible-panel/contribution/v1\0"`, then u16-length-prefixed UTF-8 debate id, author,
//! side, model family (empty when none) and client id, the u64 request id, and the 32-byte
//! SHA-256 of the contribution's compact JSON as this crate serializes it
//! ([`contribution_digest`]), followed by [`RANDOM_SAMPLE_TAG`] only when the write asks for
//! a random-sample appeal. The client and request ids are signed so that a captured
//! signed write cannot be replayed as a new write: a replay with the same ids is the same
//! write (deduplicated), and new ids break the signature.

use ed25519_dalek::{Signature, Signer, SigningKey};
use panel_proto::VerifiedMemo;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::command::ContributionSubmission;
pub use crate::log::contributor_signature::ContributorSignature;

/// Domain tag of contributor-signed writes, layout version 1.
pub const CONTRIBUTION_TAG_V1: &[u8] = b"crucible-panel/contribution/v1\0";

/// Appended to the signed bytes of a write that asks for a random-sample appeal, so the
/// request cannot be added or stripped without the author's key (absent otherwise, so
/// earlier signatures still verify).
pub const RANDOM_SAMPLE_TAG: &[u8] = b"random-sample\0";

/// The key an author name is bound to, as the replicated state records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorKey {
    pub public_key: crate::rules::hex_bytes::PublicKeyBytes,
    /// Log index of the signed write that bound the name.
    pub bound_at_log_index: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthorshipError {
    #[error(
        "author {author:?} is a registered arbiter's id; a write under it must be signed by that arbiter's key (--key FILE), or use another author name"
    )]
    ArbiterName { author: String },
    #[error(
        "author {author:?} signs its writes with key {fingerprint}; sign this write with that key (--key FILE)"
    )]
    SignatureRequired { author: String, fingerprint: String },
    #[error(
        "author {author:?} is bound to key {bound}, but this write is signed by {signer}; sign with the author's key or write under another name"
    )]
    KeyMismatch {
        author: String,
        bound: String,
        signer: String,
    },
    #[error("contributor public key is not hex")]
    KeyNotHex,
    #[error("contributor public key is not a valid, non-weak ed25519 key: {0}")]
    BadKey(panel_proto::KeyError),
    #[error(
        "contributor signature does not verify (strict ed25519) for key {fingerprint}: the write was altered after signing, or its client_id/request_id differ from the signed ones"
    )]
    BadSignature { fingerprint: String },
    #[error("contributor signature is malformed: signature is not hex")]
    SignatureNotHex,
    #[error(
        "contributor signature is malformed: signature is {0} bytes; ed25519 signatures are 64"
    )]
    SignatureLength(usize),
    #[error("a {field} longer than 65535 bytes cannot be signed")]
    TooLong { field: &'static str },
    #[error("the {what} cannot be encoded for signing ({reason}); nothing was signed or checked")]
    Encode { what: &'static str, reason: String },
}

/// SHA-256 of `value`'s compact JSON, the digest a signed layout carries of a JSON part;
/// a value that does not encode is refused by name, never signed as empty bytes.
pub(crate) fn json_digest(
    what: &'static str,
    value: &impl serde::Serialize,
) -> Result<[u8; 32], AuthorshipError> {
    let json = serde_json::to_vec(value).map_err(|e| AuthorshipError::Encode {
        what,
        reason: e.to_string(),
    })?;
    Ok(Sha256::digest(&json).into())
}

/// SHA-256 of the contribution's compact JSON (serde field order of
/// `crucible::contribution::Contribution`).
pub fn contribution_digest(sub: &ContributionSubmission) -> Result<[u8; 32], AuthorshipError> {
    json_digest("contribution", &sub.contribution)
}

/// Appends `s` with its u16 length, big-endian (the layouts of every key-signed write).
pub(crate) fn text(buf: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), AuthorshipError> {
    let len = u16::try_from(s.len()).map_err(|_| AuthorshipError::TooLong { field })?;
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

/// The bytes a contributor signs for one write (layout in the module docs).
pub fn signed_bytes(
    sub: &ContributionSubmission,
    client_id: &str,
    request_id: u64,
) -> Result<Vec<u8>, AuthorshipError> {
    let mut buf = Vec::with_capacity(160);
    buf.extend_from_slice(CONTRIBUTION_TAG_V1);
    text(&mut buf, "debate_id", &sub.debate_id)?;
    text(&mut buf, "author", &sub.author)?;
    text(&mut buf, "side", &sub.side)?;
    text(
        &mut buf,
        "model_family",
        sub.model_family.as_deref().unwrap_or(""),
    )?;
    text(&mut buf, "client_id", client_id)?;
    buf.extend_from_slice(&request_id.to_be_bytes());
    buf.extend_from_slice(&contribution_digest(sub)?);
    if sub.random_sample {
        buf.extend_from_slice(RANDOM_SAMPLE_TAG);
    }
    Ok(buf)
}

/// Signs a write; the signature is set on a copy the caller sends.
pub fn sign(
    key: &SigningKey,
    sub: &ContributionSubmission,
    client_id: &str,
    request_id: u64,
) -> Result<ContributorSignature, AuthorshipError> {
    let mut unsigned = sub.clone();
    unsigned.signature = None;
    let bytes = signed_bytes(&unsigned, client_id, request_id)?;
    Ok(ContributorSignature {
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        signature: hex::encode(key.sign(&bytes).to_bytes()).into(),
    })
}

/// What apply does with a write's authorship: nothing to record, or bind the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorship {
    Unsigned,
    /// Signed by `public_key`; `bind` when the name was not bound yet.
    Signed {
        public_key: crate::rules::hex_bytes::PublicKeyBytes,
        bind: bool,
    },
}

/// Checks a write's signature against the author's bound key, if any. Pure: the same
/// write and binding give the same answer on every replica (`memo` changes no answer).
pub fn check(
    sub: &ContributionSubmission,
    bound: Option<&AuthorKey>,
    client_id: &str,
    request_id: u64,
    memo: &VerifiedMemo,
) -> Result<Authorship, AuthorshipError> {
    let Some(sig) = &sub.signature else {
        return match bound {
            Some(b) => Err(AuthorshipError::SignatureRequired {
                author: sub.author.clone(),
                fingerprint: fingerprint_of(&b.public_key),
            }),
            None => Ok(Authorship::Unsigned),
        };
    };
    let mut unsigned = sub.clone();
    unsigned.signature = None;
    let key = verify(sig, &signed_bytes(&unsigned, client_id, request_id)?, memo)?;
    let public_key = crate::rules::hex_bytes::PublicKeyBytes::new(key.to_bytes());
    match bound {
        Some(b) if b.public_key != public_key => Err(AuthorshipError::KeyMismatch {
            author: sub.author.clone(),
            bound: fingerprint_of(&b.public_key),
            signer: panel_proto::fingerprint(&key),
        }),
        Some(_) => Ok(Authorship::Signed {
            public_key,
            bind: false,
        }),
        None => Ok(Authorship::Signed {
            public_key,
            bind: true,
        }),
    }
}

/// Checks `sig` over `bytes` (strict ed25519, remembered in `memo`) and returns the key
/// that made it: the one check behind every key-signed write (contributions, run inputs).
pub(crate) fn verify(
    sig: &ContributorSignature,
    bytes: &[u8],
    memo: &VerifiedMemo,
) -> Result<ed25519_dalek::VerifyingKey, AuthorshipError> {
    let key_bytes = sig
        .public_key
        .bytes()
        .map_err(|_| AuthorshipError::KeyNotHex)?;
    let key = panel_proto::keys::parse_public_key(&key_bytes).map_err(AuthorshipError::BadKey)?;
    let sig_bytes = sig
        .signature
        .bytes()
        .map_err(|_| AuthorshipError::SignatureNotHex)?;
    let signature = <[u8; 64]>::try_from(sig_bytes.as_ref())
        .map(|b| Signature::from_bytes(&b))
        .map_err(|_| AuthorshipError::SignatureLength(sig_bytes.len()))?;
    if !memo.verify_strict(&key, bytes, &signature) {
        return Err(AuthorshipError::BadSignature {
            fingerprint: panel_proto::fingerprint(&key),
        });
    }
    Ok(key)
}

/// A key's fingerprint from its hex, or the hex itself when it does not decode.
pub(crate) fn fingerprint_of(public_key: &crate::rules::hex_bytes::PublicKeyBytes) -> String {
    public_key
        .bytes()
        .map(|b| panel_proto::keys::fingerprint_bytes(&b))
        .unwrap_or_else(|_| public_key.to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible::contribution::Contribution;

    fn sub(author: &str, text: &str) -> ContributionSubmission {
        ContributionSubmission {
            debate_id: "deb_1".into(),
            author: author.into(),
            side: "A".into(),
            model_family: None,
            contribution: Contribution::Definition {
                term: "harm".into(),
                definition: text.into(),
            },
            hints: Default::default(),
            signature: None,
            random_sample: false,
        }
    }

    fn signed(key: &SigningKey, s: &ContributionSubmission, rid: u64) -> ContributionSubmission {
        let mut out = s.clone();
        out.signature = Some(sign(key, s, "cli", rid).unwrap());
        out
    }

    #[test]
    fn first_signed_write_binds_and_later_writes_must_match() {
        let alice = SigningKey::from_bytes(&[1; 32]);
        let mallory = SigningKey::from_bytes(&[2; 32]);
        let w = signed(&alice, &sub("alice", "measurable injury"), 1);
        let first = check(&w, None, "cli", 1, &VerifiedMemo::default()).unwrap();
        let Authorship::Signed { public_key, bind } = first else {
            panic!("signed write")
        };
        assert!(bind);
        let bound = AuthorKey {
            public_key,
            bound_at_log_index: 7,
        };
        // Same key again: accepted, no new binding.
        let w2 = signed(&alice, &sub("alice", "second text"), 2);
        assert_eq!(
            check(&w2, Some(&bound), "cli", 2, &VerifiedMemo::default()).unwrap(),
            Authorship::Signed {
                public_key: bound.public_key.clone(),
                bind: false
            }
        );
        // Unsigned under the bound name: refused, naming the key to use.
        assert!(matches!(
            check(
                &sub("alice", "x"),
                Some(&bound),
                "cli",
                3,
                &VerifiedMemo::default()
            ),
            Err(AuthorshipError::SignatureRequired { .. })
        ));
        // Signed by someone else under the bound name: refused.
        let forged = signed(&mallory, &sub("alice", "x"), 4);
        assert!(matches!(
            check(&forged, Some(&bound), "cli", 4, &VerifiedMemo::default()),
            Err(AuthorshipError::KeyMismatch { .. })
        ));
    }

    #[test]
    fn tampered_or_replayed_writes_fail_verification() {
        let alice = SigningKey::from_bytes(&[1; 32]);
        let w = signed(&alice, &sub("alice", "measurable injury"), 1);
        // Text changed after signing.
        let mut t = w.clone();
        t.contribution = Contribution::Definition {
            term: "harm".into(),
            definition: "anything at all".into(),
        };
        assert!(matches!(
            check(&t, None, "cli", 1, &VerifiedMemo::default()),
            Err(AuthorshipError::BadSignature { .. })
        ));
        // Side, debate and author are signed too.
        for edit in [
            |s: &mut ContributionSubmission| s.side = "B".into(),
            |s: &mut ContributionSubmission| s.debate_id = "deb_2".into(),
            |s: &mut ContributionSubmission| s.author = "bob".into(),
        ] {
            let mut e = w.clone();
            edit(&mut e);
            assert!(matches!(
                check(&e, None, "cli", 1, &VerifiedMemo::default()),
                Err(AuthorshipError::BadSignature { .. })
            ));
        }
        // Replayed as a new request: the request id is signed.
        assert!(matches!(
            check(&w, None, "cli", 2, &VerifiedMemo::default()),
            Err(AuthorshipError::BadSignature { .. })
        ));
        assert!(matches!(
            check(&w, None, "other-client", 1, &VerifiedMemo::default()),
            Err(AuthorshipError::BadSignature { .. })
        ));
        // Malformed signature and weak key.
        let mut m = w.clone();
        m.signature.as_mut().unwrap().signature = "abcd".into();
        assert!(matches!(
            check(&m, None, "cli", 1, &VerifiedMemo::default()),
            Err(AuthorshipError::SignatureLength(2))
        ));
        let mut weak = w.clone();
        let mut small_order = [0u8; 32];
        small_order[0] = 1;
        weak.signature.as_mut().unwrap().public_key = hex::encode(small_order).into();
        assert!(matches!(
            check(&weak, None, "cli", 1, &VerifiedMemo::default()),
            Err(AuthorshipError::BadKey(_))
        ));
    }
}
