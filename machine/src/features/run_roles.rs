//! Who may submit a run's role inputs (docs/PROCEDURES.md, "Who may submit").
//!
//! A run's start binds every role the procedure will await (`Run::roles`: a
//! falsification run's defender and critic, each dossier advocate) to an ed25519 key.
//! From then on an input counts only when that role's key signed it, so no other client
//! can answer for a defender, commit a critic's refuter or file an advocate's report; the
//! record shows which key spoke for each role.
//!
//! Signed bytes (docs/WIRE.md, "Run inputs"), lengths big-endian: `"crucible-panel/run-input/v1\0"`,
//! then u16-length-prefixed UTF-8 run id, role and client id, the u64 request id, and the
//! 32-byte SHA-256 of the input's compact JSON as this crate serializes it. The client and
//! request ids are signed for the same reason as a contribution's (`authorship`): a
//! captured input replayed under new ids breaks the signature, and under the same ids it
//! is the same write, deduplicated.

use std::collections::BTreeMap;

use ed25519_dalek::{Signer, SigningKey};
use panel_procedures::{Run, RunInput};
use panel_proto::VerifiedMemo;
use thiserror::Error;

use crate::authorship::{AuthorshipError, fingerprint_of, text, verify};
use crate::log::contributor_signature::ContributorSignature;
use crate::rules::hex_bytes::PublicKeyBytes;
use crate::runs::RunInputSubmission;

/// Domain tag of role-signed run inputs, layout version 1.
pub const RUN_INPUT_TAG_V1: &[u8] = b"crucible-panel/run-input/v1\0";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RoleError {
    #[error(
        "$.role_keys.{role:?} is missing: the run awaits input from role {role:?}; bind it to the hex ed25519 public key of whoever will submit that role's input"
    )]
    Missing { role: String },
    #[error("$.role_keys.{role:?}: the run has no such role; its roles are {roles}")]
    Unknown { role: String, roles: String },
    #[error("$.role_keys.{role:?} is not a valid, non-weak ed25519 public key: {reason}")]
    BadKey { role: String, reason: String },
    #[error(
        "an input for role {role:?} of run {run} must be signed by that role's key {fingerprint} ($.signature is missing); submit it with `panel runs submit {run} --input JSON --key ROLE_KEY_FILE`"
    )]
    Unsigned {
        run: String,
        role: String,
        fingerprint: String,
    },
    #[error(
        "role {role:?} of run {run} is bound to key {bound}, but this input is signed by {signer}; only the role's own key may submit its input (`panel runs submit {run} --key ROLE_KEY_FILE`)"
    )]
    WrongKey {
        run: String,
        role: String,
        bound: String,
        signer: String,
    },
    #[error("run input signature: {0}")]
    Signature(#[from] AuthorshipError),
}

/// Checks a start's role keys against the roles `run` will await: every role bound, no
/// unknown role, every key a valid ed25519 point. Returns them in canonical form (held as
/// bytes, written as lower-case hex).
pub fn check_start(
    run: &Run,
    keys: &BTreeMap<String, PublicKeyBytes>,
) -> Result<BTreeMap<String, PublicKeyBytes>, RoleError> {
    let roles = run.roles();
    if let Some(role) = keys.keys().find(|k| !roles.contains(k)) {
        return Err(RoleError::Unknown {
            role: role.clone(),
            roles: if roles.is_empty() {
                "none (its inputs all come with the start document)".into()
            } else {
                roles.join(", ")
            },
        });
    }
    let mut canonical = BTreeMap::new();
    for role in roles {
        let given = keys
            .get(&role)
            .ok_or_else(|| RoleError::Missing { role: role.clone() })?;
        let bytes = given.bytes().map_err(|_| RoleError::BadKey {
            role: role.clone(),
            reason: "not hex".into(),
        })?;
        let key = panel_proto::keys::parse_public_key(&bytes).map_err(|e| RoleError::BadKey {
            role: role.clone(),
            reason: e.to_string(),
        })?;
        canonical.insert(role, PublicKeyBytes::new(key.to_bytes()));
    }
    Ok(canonical)
}

/// The bytes a role signs for one input (layout in the module docs).
pub fn signed_bytes(
    run_id: &str,
    input: &RunInput,
    client_id: &str,
    request_id: u64,
) -> Result<Vec<u8>, AuthorshipError> {
    let mut buf = Vec::with_capacity(160);
    buf.extend_from_slice(RUN_INPUT_TAG_V1);
    text(&mut buf, "run_id", run_id)?;
    text(&mut buf, "role", &input.role().unwrap_or_default())?;
    text(&mut buf, "client_id", client_id)?;
    buf.extend_from_slice(&request_id.to_be_bytes());
    buf.extend_from_slice(&crate::authorship::json_digest("run input", input)?);
    Ok(buf)
}

/// Signs an input as its role, for the client that will send it under these ids.
pub fn sign(
    key: &SigningKey,
    run_id: &str,
    input: &RunInput,
    client_id: &str,
    request_id: u64,
) -> Result<ContributorSignature, AuthorshipError> {
    let bytes = signed_bytes(run_id, input, client_id, request_id)?;
    Ok(ContributorSignature {
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        signature: hex::encode(key.sign(&bytes).to_bytes()).into(),
    })
}

/// Checks that the input is signed by its role's bound key (the signature is verified
/// through `memo`). Inputs that speak for no role (a crux input) pass here and are
/// refused by the procedure itself.
pub fn check_input(
    keys: &BTreeMap<String, PublicKeyBytes>,
    sub: &RunInputSubmission,
    client_id: &str,
    request_id: u64,
    memo: &VerifiedMemo,
) -> Result<(), RoleError> {
    let Some(role) = sub.input.role() else {
        return Ok(());
    };
    let Some(bound) = keys.get(&role) else {
        // `check_start` bound every role the run can await; an input for another role is
        // one the procedure refuses by name.
        return Ok(());
    };
    let Some(sig) = &sub.signature else {
        return Err(RoleError::Unsigned {
            run: sub.run_id.clone(),
            role,
            fingerprint: fingerprint_of(bound),
        });
    };
    let key = verify(
        sig,
        &signed_bytes(&sub.run_id, &sub.input, client_id, request_id)?,
        memo,
    )?;
    if bound.to_hex() != hex::encode(key.to_bytes()) {
        return Err(RoleError::WrongKey {
            run: sub.run_id.clone(),
            role,
            bound: fingerprint_of(bound),
            signer: panel_proto::fingerprint(&key),
        });
    }
    Ok(())
}
