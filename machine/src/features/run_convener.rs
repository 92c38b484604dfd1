//! Who may start a procedure run (docs/PROCEDURES.md, "Who may start a run";
//! docs/SECURITY.md "What is enforced").
//!
//! A run spends panel capacity (every question it asks seats a panel) in its convener's
//! name, and the convener's per-name limits count it. From rule set
//! [`SIGNED_RUNS`](crate::rules::SIGNED_RUNS) a chartered group starts a run only when its
//! convener is a registered contributor (or an arbiter) and the start is signed by that
//! name's key; nobody else can convene in that name, and a captured start cannot be sent
//! again: under new client or request ids the signature breaks, and under the same ids
//! it is refused as already used even after its deduplication row has expired.
//!
//! Signed bytes (docs/WIRE.md, "Run starts"), lengths big-endian:
//! `"crucible-panel/run-start/v1\0"`, then u16-length-prefixed UTF-8 convener and client
//! id, the u64 request id, and the 32-byte SHA-256 of the request's compact JSON as this
//! crate serializes it, with `signature` absent.

use ed25519_dalek::{Signer, SigningKey};
use panel_proto::VerifiedMemo;
use thiserror::Error;

use crate::authorship::{AuthorshipError, fingerprint_of, text, verify};
use crate::log::contributor_signature::ContributorSignature;
use crate::model::State;
use crate::runs::RunRequest;

/// Domain tag of signed run starts, layout version 1.
pub const RUN_START_TAG_V1: &[u8] = b"crucible-panel/run-start/v1\0";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvenerError {
    #[error(
        "a run in this chartered group must be signed by its convener's key ($.signature is missing for convener {convener:?}); pass --convener NAME --key FILE for a contributor registered with `panel org register-contributor`"
    )]
    Unsigned { convener: String },
    #[error(
        "convener {convener:?} is not a registered contributor or arbiter of this group; register the name and its key first (`panel org register-contributor`)"
    )]
    Unregistered { convener: String },
    #[error(
        "convener {convener:?} is bound to key {bound}, but this start is signed by {signer}; sign with the convener's own key"
    )]
    WrongKey {
        convener: String,
        bound: String,
        signer: String,
    },
    #[error(
        "this signed start already started {run}; a start is used once, sign a new request to start another run"
    )]
    Replayed { run: String },
    #[error("run start signature: {0}")]
    Signature(#[from] AuthorshipError),
}

/// The bytes a convener signs for one start (layout in the module docs).
pub fn signed_bytes(
    req: &RunRequest,
    client_id: &str,
    request_id: u64,
) -> Result<Vec<u8>, AuthorshipError> {
    let mut unsigned = req.clone();
    unsigned.signature = None;
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(RUN_START_TAG_V1);
    text(&mut buf, "convener", &req.convener)?;
    text(&mut buf, "client_id", client_id)?;
    buf.extend_from_slice(&request_id.to_be_bytes());
    buf.extend_from_slice(&crate::authorship::json_digest("run start", &unsigned)?);
    Ok(buf)
}

/// Signs a start as its convener, for the client that will send it under these ids.
pub fn sign(
    key: &SigningKey,
    req: &RunRequest,
    client_id: &str,
    request_id: u64,
) -> Result<ContributorSignature, AuthorshipError> {
    let bytes = signed_bytes(req, client_id, request_id)?;
    Ok(ContributorSignature {
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        signature: hex::encode(key.sign(&bytes).to_bytes()).into(),
    })
}

/// Checks who convenes `req`. Before [`SIGNED_RUNS`](crate::rules::SIGNED_RUNS) nothing is
/// checked (entries replay as they applied). From it: a signature, when present, must
/// verify and be made by the key the convener's name is bound to (a registered
/// contributor's, or an arbiter's current key) and must not have started a run before;
/// under a charter the signature and the registration are required.
pub fn check(
    state: &State,
    req: &RunRequest,
    client_id: &str,
    request_id: u64,
    memo: &VerifiedMemo,
) -> Result<(), ConvenerError> {
    if state.rules < crate::rules::SIGNED_RUNS {
        return Ok(());
    }
    let chartered = state.charter.is_some();
    let Some(sig) = &req.signature else {
        return if chartered {
            Err(ConvenerError::Unsigned {
                convener: req.convener.clone(),
            })
        } else {
            Ok(())
        };
    };
    let key = verify(sig, &signed_bytes(req, client_id, request_id)?, memo)?;
    let signer = hex::encode(key.to_bytes());
    let bound = match (
        state.contributors.get(&req.convener),
        state.arbiters.get(&req.convener),
    ) {
        (Some(c), _) => Some(&c.public_key),
        (None, Some(a)) => Some(&a.registration.public_key),
        (None, None) => None,
    };
    match bound {
        Some(b) if b.to_hex() != signer => {
            return Err(ConvenerError::WrongKey {
                convener: req.convener.clone(),
                bound: fingerprint_of(b),
                signer: panel_proto::fingerprint(&key),
            });
        }
        None if chartered => {
            return Err(ConvenerError::Unregistered {
                convener: req.convener.clone(),
            });
        }
        _ => {}
    }
    let used = canonical(sig);
    if let Some((id, _)) = state
        .runs
        .iter()
        .find(|(_, r)| r.start_signature.as_ref() == Some(&used))
    {
        return Err(ConvenerError::Replayed { run: id.clone() });
    }
    Ok(())
}

/// The signature as the run record keeps it: lower-case hex, so a replay cannot pass as
/// new by changing the case of its hex digits.
pub fn canonical(sig: &ContributorSignature) -> ContributorSignature {
    ContributorSignature {
        public_key: sig.public_key.to_hex().to_ascii_lowercase().into(),
        signature: sig.signature.to_hex().to_ascii_lowercase().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorship::AuthorKey;
    use crate::runs::RunRecord;
    use panel_procedures::{Run, RunStart, StartContext};

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn request(convener: &str) -> RunRequest {
        RunRequest {
            start: RunStart::Falsify(panel_procedures::falsify::demo_start()),
            seats: 4,
            min_per_stance: 1,
            policy: None,
            simulation: true,
            convener: convener.into(),
            retry_of: None,
            role_keys: Default::default(),
            signature: None,
        }
    }

    fn signed(k: &SigningKey, convener: &str, rid: u64) -> RunRequest {
        let mut r = request(convener);
        r.signature = Some(sign(k, &r, "cli", rid).expect("sign"));
        r
    }

    /// A chartered group at rule set 9 where `ops` is a contributor registered with key 1.
    fn chartered() -> State {
        let mut s = State {
            rules: crate::rules::SIGNED_RUNS,
            charter: Some(crate::features::charter_rules::tests::charter()),
            ..State::default()
        };
        s.contributors.insert(
            "ops".into(),
            AuthorKey {
                public_key: hex::encode(key(1).verifying_key().to_bytes()).into(),
                bound_at_log_index: 1,
            },
        );
        s
    }

    fn check_of(s: &State, r: &RunRequest, rid: u64) -> Result<(), ConvenerError> {
        check(s, r, "cli", rid, &VerifiedMemo::default())
    }

    /// Records `r` as started run `run_1`, as apply does.
    fn started(s: &mut State, r: &RunRequest) {
        let run = Run::start(
            r.start.clone(),
            &StartContext {
                run_id: "run_1".into(),
                seed: 0,
                simulation: true,
            },
        )
        .expect("start");
        let mut rec = RunRecord::started(run, &r.convener);
        rec.start_signature = r.signature.as_ref().map(canonical);
        s.runs.insert("run_1".into(), rec);
    }

    #[test]
    fn a_chartered_group_starts_only_runs_its_registered_convener_signed() {
        let s = chartered();
        assert_eq!(check_of(&s, &signed(&key(1), "ops", 5), 5), Ok(()));
        // Unsigned, in the registered name or any other.
        for name in ["ops", "panel-cli"] {
            let e = check_of(&s, &request(name), 5).expect_err("unsigned");
            assert!(matches!(e, ConvenerError::Unsigned { .. }), "{e}");
            assert!(e.to_string().contains("$.signature is missing"), "{e}");
        }
        // Someone else's key in the registered name.
        let e = check_of(&s, &signed(&key(2), "ops", 5), 5).expect_err("wrong key");
        assert!(matches!(e, ConvenerError::WrongKey { .. }), "{e}");
        // A name nobody registered, signed by a fresh key.
        let e = check_of(&s, &signed(&key(2), "mallory", 5), 5).expect_err("unregistered");
        assert!(matches!(e, ConvenerError::Unregistered { .. }), "{e}");
    }

    #[test]
    fn a_captured_start_cannot_start_a_second_run() {
        let mut s = chartered();
        let r = signed(&key(1), "ops", 5);
        // Under another request id, or with its content changed, the signature breaks.
        let e = check_of(&s, &r, 6).expect_err("new ids");
        assert!(matches!(e, ConvenerError::Signature(_)), "{e}");
        let mut altered = r.clone();
        altered.seats = 8;
        let e = check_of(&s, &altered, 5).expect_err("altered");
        assert!(matches!(e, ConvenerError::Signature(_)), "{e}");
        // Under the same ids once its deduplication row expired, and with its hex in
        // upper case (it still verifies): refused as used.
        started(&mut s, &r);
        let e = check_of(&s, &r, 5).expect_err("replayed");
        assert_eq!(
            e,
            ConvenerError::Replayed {
                run: "run_1".into()
            }
        );
        let mut shouted = r.clone();
        if let Some(sig) = &mut shouted.signature {
            sig.signature = sig.signature.to_hex().to_ascii_uppercase().into();
        }
        let e = check_of(&s, &shouted, 5).expect_err("case-changed replay");
        assert!(matches!(e, ConvenerError::Replayed { .. }), "{e}");
    }

    #[test]
    fn before_rule_set_9_and_without_a_charter_starts_apply_as_before() {
        let mut s = chartered();
        s.rules = crate::rules::STANDING_STANCES;
        assert_eq!(check_of(&s, &request("anyone"), 5), Ok(()));
        let mut open = State {
            rules: crate::rules::SIGNED_RUNS,
            ..State::default()
        };
        assert_eq!(check_of(&open, &request("anyone"), 5), Ok(()));
        // A signature is still checked where one is given.
        open.contributors = chartered().contributors;
        let e = check_of(&open, &signed(&key(2), "ops", 5), 5).expect_err("wrong key");
        assert!(matches!(e, ConvenerError::WrongKey { .. }), "{e}");
    }
}
