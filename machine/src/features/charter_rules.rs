//! The federation charter in the state machine (docs/SECURITY.md, "Charter and
//! registrations"): adopted once, as the first record entry; from then on an arbiter is
//! registered only with its own proof of possession and its organisation's endorsement, an
//! organisation is one the charter lists, motions count only when signed by the charter's
//! motion key, and no debate policy goes below the charter's floors.

pub use crate::features::endorsers::{EndorsementError, organisations};
use crate::features::endorsers::{distinct_endorsers, verify_as_member};
use panel_federation::{Charter, Floors, Organisation};
use panel_proto::motion_key_rotation::RotationSignatureError;
use panel_proto::organisation::{self as admission, OrganisationClaim};
use panel_proto::registration::{
    self, Attestation, AttestationError, LineageClaim, RegistrationClaim,
};
use panel_proto::{SigningKey, VerifyingKey};
use thiserror::Error;

use crate::command::{ArbiterRegistration, OrganisationAdmission, WireAttestation};
use crate::model::State;
use crate::rules::acceptance::{Policy, Stance};

/// Why a command is refused under the charter's rules.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CharterRuleError {
    #[error(
        "the group already has its charter (the record's first entry); a charter is adopted \
         once, at init"
    )]
    AlreadyChartered,
    #[error(
        "a charter must be the record's first entry, and this record already has {entries}; \
         initialise a fresh group with --charter"
    )]
    NotFirst { entries: usize },
    #[error("the charter is not valid: {0}")]
    Invalid(#[from] panel_federation::CharterError),
    #[error(
        "organisation {0:?} is not in the federation charter; an arbiter belongs to one of \
         the charter's organisations (a new organisation is admitted by the others first)"
    )]
    UnknownOrganisation(String),
    #[error(
        "registration of {0} carries no attestation: under the charter a registration is \
         signed by the arbiter's own key and endorsed by its organisation's roster key \
         (`panel arbiter register --key-file ARBITER.key --org-key ORG/signing.key`)"
    )]
    Unattested(String),
    #[error("registration of {arbiter}: {problem}")]
    BadAttestation { arbiter: String, problem: String },
    #[error("organisation admission refused: {0}")]
    Admission(#[from] AdmissionError),
    #[error("motion-key rotation refused: {0}")]
    Rotation(#[from] MotionKeyRotationError),
    #[error("organisation removal refused: {0}")]
    Removal(#[from] RemovalError),
    #[error("roster-key rotation refused: {0}")]
    RosterRotation(#[from] crate::features::roster_keys::RosterRotationError),
    #[error("membership change refused: {0}")]
    Membership(#[from] crate::features::membership::MembershipError),
    #[error(
        "contributor name {0:?} is not registered: under a charter a name is bound to a key by \
         RegisterContributor (signed by that key, endorsed by its organisation), and every \
         contribution under it is signed by that key. Register it with `panel org \
         register-contributor --name {0} --key-file FILE --organisation ORG --org-key \
         ORG_KEY`, then write with `--key FILE`"
    )]
    UnregisteredContributor(String),
    #[error(
        "contributor name {0:?} is already bound to a key (or is an arbiter's id); register another name with `panel org register-contributor --name NAME`, or write under this one signed with its key (--key FILE)"
    )]
    NameTaken(String),
    #[error(
        "policy {field} = {value} is below the charter's floor of {floor}; a debate may ask \
         for more agreement, never less"
    )]
    BelowFloor {
        field: &'static str,
        value: usize,
        floor: usize,
    },
    #[error(
        "policy.aggregation asks for a final panel's supermajority, a rule the machine sets \
         only on the final panels the charter names (charter.final_panel); ask for the \
         weighted pool or head counts (`panel debate new --policy weighted|independent|head-count`)"
    )]
    FinalPanelRule,
}

/// Why an organisation's admission (or an endorsement of one) is refused
/// (docs/SECURITY.md, "Charter and registrations").
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AdmissionError {
    #[error("the group has no charter to admit organisations into")]
    Unchartered,
    #[error("organisation.name is empty")]
    EmptyName,
    #[error("organisation.signing_key is not hex")]
    KeyNotHex,
    #[error("organisation.signing_key: {0}")]
    Key(panel_proto::KeyError),
    #[error("organisation {0:?} is already a member")]
    AlreadyMember(String),
    #[error(
        "organisation {0:?} already holds this roster key or authority; every organisation \
         has its own"
    )]
    SharedIdentity(String),
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<admission::EndorsementError>),
    #[error(
        "{found} distinct member organisation(s) endorse {name:?}; the charter requires \
         {required}"
    )]
    TooFewEndorsers {
        name: String,
        found: usize,
        required: usize,
    },
    #[error("the admission cannot be signed: {0}")]
    Signing(admission::EndorsementError),
    #[error(
        "organisation {0:?} was removed by entry; its name, roster key and authority are \
         never admitted again (a new organisation brings its own: `panel org init`)"
    )]
    Removed(String),
}

/// Why an organisation's removal (or an endorsement of one) is refused
/// (docs/FEDERATION.md, "Removal").
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RemovalError {
    #[error("the group has no charter to remove organisations from")]
    Unchartered,
    #[error(
        "organisation {0:?} is not a member (the members are the charter's organisations and \
         those admitted by entry, less those removed)"
    )]
    NotMember(String),
    #[error(
        "endorsements[{index}] is by {by:?}, the organisation being removed; only the other \
         members' endorsements count"
    )]
    SelfEndorsed { index: usize, by: String },
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<admission::EndorsementError>),
    #[error(
        "{found} distinct other member organisation(s) endorse removing {name:?}; it takes \
         {required} (the charter's admission_threshold, and never fewer than two, so no \
         member removes another alone)"
    )]
    TooFewEndorsers {
        name: String,
        found: usize,
        required: usize,
    },
    #[error(
        "removing {name:?} would leave {left} organisation(s), below the charter's floor of \
         {floor} (floors.min_organisations) that every panel must span"
    )]
    BelowFloor {
        name: String,
        left: usize,
        floor: usize,
    },
    #[error("the charter cannot be digested, so no removal can be signed under it: {0}")]
    Charter(#[from] panel_federation::CharterError),
    #[error("the removal cannot be signed: {0}")]
    Signing(admission::EndorsementError),
}

/// Why a rotation of the federation's motion key (or a signature over one) is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MotionKeyRotationError {
    #[error("the group has no charter, so it has no motion key to rotate")]
    Unchartered,
    #[error(
        "seq is {seq}, but the next rotation of this federation is {expected}; sign the \
         rotation again with seq {expected}"
    )]
    WrongSeq { seq: u64, expected: u64 },
    #[error("the charter's motion key is not a valid key")]
    CurrentKeyInvalid,
    #[error("to is not hex")]
    ToNotHex,
    #[error("to: {0}")]
    To(panel_proto::KeyError),
    #[error(
        "to is a motion key this federation has used before; rotate to a fresh key \
         (`panel coordinator motion-keygen FILE`)"
    )]
    Reused,
    #[error("possession is not hex")]
    PossessionNotHex,
    #[error("possession: {0}; the new motion key must sign the rotation it is named in")]
    Possession(RotationSignatureError),
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<RotationSignatureError>),
    #[error(transparent)]
    Charter(#[from] panel_federation::CharterError),
    #[error(
        "{found} distinct member organisation(s) endorse the rotation; the charter requires \
         {required}"
    )]
    TooFewEndorsers { found: usize, required: usize },
    #[error("the rotation cannot be signed: {0}")]
    Signing(RotationSignatureError),
}

pub(crate) fn stance_label(s: Stance) -> &'static str {
    match s {
        Stance::A => "A",
        Stance::B => "B",
        Stance::None => "none",
    }
}

fn hex_field(arbiter: &str, what: &str, text: &str) -> Result<Vec<u8>, CharterRuleError> {
    hex::decode(text).map_err(|_| CharterRuleError::BadAttestation {
        arbiter: arbiter.to_owned(),
        problem: format!("{what} is not hex"),
    })
}

/// Checks a registration against the federation: a listed organisation, both signatures.
pub fn check_registration(
    state: &State,
    reg: &ArbiterRegistration,
) -> Result<(), CharterRuleError> {
    let wire = reg
        .attestation
        .as_ref()
        .ok_or_else(|| CharterRuleError::Unattested(reg.arbiter_id.clone()))?;
    let public_key = hex_field(&reg.arbiter_id, "public_key", &reg.public_key.to_hex())?;
    let attestation = Attestation {
        proof: hex_field(&reg.arbiter_id, "attestation.proof", &wire.proof.to_hex())?,
        endorsement: hex_field(
            &reg.arbiter_id,
            "attestation.endorsement",
            &wire.endorsement.to_hex(),
        )?,
    };
    let claim = claim(reg, &public_key);
    verify_as_member(state, &reg.organisation, |org_key| {
        registration::verify_attestation(&claim, &attestation, org_key)
    })
    .ok_or_else(|| CharterRuleError::UnknownOrganisation(reg.organisation.clone()))?
    .map_err(|e| CharterRuleError::BadAttestation {
        arbiter: reg.arbiter_id.clone(),
        problem: e.to_string(),
    })
}

fn claim<'a>(reg: &'a ArbiterRegistration, public_key: &'a [u8]) -> RegistrationClaim<'a> {
    RegistrationClaim {
        arbiter_id: &reg.arbiter_id,
        public_key,
        organisation: &reg.organisation,
        model_family: &reg.model_family,
        stance: stance_label(reg.stance),
        endpoint: &reg.endpoint,
        lineage: reg.lineage.as_ref().map(|l| LineageClaim {
            provider: &l.provider,
            base_model: &l.base_model,
            fine_tune: &l.fine_tune,
            data_source: &l.data_source,
        }),
    }
}

/// A registration's hex public key as bytes; text that is no hex is no key.
fn key_bytes(hex_key: &str) -> Result<Vec<u8>, AttestationError> {
    hex::decode(hex_key).map_err(|_| {
        AttestationError::Key(panel_proto::keys::KeyError::NotAPoint(hex_key.to_owned()))
    })
}

/// Signs `reg` for submission: the arbiter's key must be the registered one.
pub fn attest(
    reg: &ArbiterRegistration,
    arbiter: &SigningKey,
    organisation: &SigningKey,
) -> Result<WireAttestation, AttestationError> {
    let public_key = key_bytes(&reg.public_key.to_hex())?;
    let a = registration::attest(&claim(reg, &public_key), arbiter, organisation)?;
    Ok(WireAttestation {
        proof: hex::encode(a.proof).into(),
        endorsement: hex::encode(a.endorsement).into(),
    })
}

fn contributor_claim<'a>(
    reg: &'a crate::command::ContributorRegistration,
    public_key: &'a [u8],
) -> registration::ContributorClaim<'a> {
    registration::ContributorClaim {
        name: &reg.name,
        public_key,
        organisation: &reg.organisation,
    }
}

/// Signs a contributor registration with the contributor's key and its organisation's.
pub fn attest_contributor(
    reg: &crate::command::ContributorRegistration,
    contributor: &SigningKey,
    organisation: &SigningKey,
) -> Result<WireAttestation, AttestationError> {
    let public_key = key_bytes(&reg.public_key.to_hex())?;
    let a = registration::attest_contributor(
        &contributor_claim(reg, &public_key),
        contributor,
        organisation,
    )?;
    Ok(WireAttestation {
        proof: hex::encode(a.proof).into(),
        endorsement: hex::encode(a.endorsement).into(),
    })
}

/// Checks a contributor registration: a member organisation, both signatures.
/// Checks a contributor registration's attestations; returns its public key's bytes.
pub fn check_contributor(
    state: &State,
    reg: &crate::command::ContributorRegistration,
) -> Result<Vec<u8>, CharterRuleError> {
    let public_key = hex_field(&reg.name, "public_key", &reg.public_key.to_hex())?;
    let attestation = Attestation {
        proof: hex_field(
            &reg.name,
            "attestation.proof",
            &reg.attestation.proof.to_hex(),
        )?,
        endorsement: hex_field(
            &reg.name,
            "attestation.endorsement",
            &reg.attestation.endorsement.to_hex(),
        )?,
    };
    let claim = contributor_claim(reg, &public_key);
    verify_as_member(state, &reg.organisation, |org_key| {
        registration::verify_contributor(&claim, &attestation, org_key)
    })
    .ok_or_else(|| CharterRuleError::UnknownOrganisation(reg.organisation.clone()))?
    .map_err(|e| CharterRuleError::BadAttestation {
        arbiter: reg.name.clone(),
        problem: e.to_string(),
    })?;
    Ok(public_key)
}

/// The signature (hex) of `endorser`'s roster key on a newcomer's entry.
pub fn endorse(
    newcomer: &Organisation,
    endorser: &SigningKey,
) -> Result<crate::rules::hex_bytes::SignatureBytes, CharterRuleError> {
    let key = hex::decode(&newcomer.signing_key).map_err(|_| AdmissionError::KeyNotHex)?;
    let claim = OrganisationClaim {
        name: &newcomer.name,
        ca_sha256: &newcomer.ca_sha256.0,
        signing_key: &key,
    };
    admission::endorse(&claim, endorser)
        .map(crate::rules::hex_bytes::SignatureBytes::new)
        .map_err(|e| AdmissionError::Signing(e).into())
}

/// Signs the rotation of `charter`'s federation's motion key from `from` to `to` as the
/// `seq`th: with an organisation's roster key (an endorsement) or with the new key itself
/// (its proof of possession): the 64-byte signature (`panel org endorse-rotation`).
pub fn sign_rotation(
    charter: &Charter,
    seq: u64,
    from: &VerifyingKey,
    to: &VerifyingKey,
    key: &SigningKey,
) -> Result<crate::rules::hex_bytes::SignatureBytes, CharterRuleError> {
    let digest = charter.digest()?;
    let claim = panel_proto::motion_key_rotation::RotationClaim {
        charter_digest: &digest,
        seq,
        from: from.as_bytes(),
        to: to.as_bytes(),
    };
    panel_proto::motion_key_rotation::sign_rotation(&claim, key)
        .map(crate::rules::hex_bytes::SignatureBytes::new)
        .map_err(|e| MotionKeyRotationError::Signing(e).into())
}

/// Checks an admission: a chartered group, a new name, key and authority, and at least
/// `admission_threshold` distinct existing organisations' valid endorsements.
pub fn check_admission(state: &State, adm: &OrganisationAdmission) -> Result<(), CharterRuleError> {
    let charter = state.charter.as_ref().ok_or(AdmissionError::Unchartered)?;
    let new = &adm.organisation;
    if new.name.trim().is_empty() {
        return Err(AdmissionError::EmptyName.into());
    }
    let key = hex::decode(&new.signing_key).map_err(|_| AdmissionError::KeyNotHex)?;
    let roster = panel_proto::parse_public_key(&key).map_err(AdmissionError::Key)?;
    for o in &state.removed_organisations {
        let same_key = o.roster_key() == Some(roster);
        if o.name == new.name || same_key || o.ca_sha256 == new.ca_sha256 {
            return Err(AdmissionError::Removed(o.name.clone()).into());
        }
    }
    for o in organisations(state) {
        if o.name == new.name {
            return Err(AdmissionError::AlreadyMember(new.name.clone()).into());
        }
        // Keys compared as keys, not as hex text (upper-case hex names the same key).
        if o.roster_key() == Some(roster) || o.ca_sha256 == new.ca_sha256 {
            return Err(AdmissionError::SharedIdentity(o.name.clone()).into());
        }
    }
    if let Some(holder) = crate::features::endorsers::roster_key_holder(state, &roster) {
        return Err(AdmissionError::SharedIdentity(holder).into());
    }
    let claim = OrganisationClaim {
        name: &new.name,
        ca_sha256: &new.ca_sha256.0,
        signing_key: &key,
    };
    let found = distinct_endorsers(state, &adm.endorsements, |sig, by| {
        admission::verify_endorsement(&claim, sig, by)
    })
    .map_err(AdmissionError::from)?;
    if found < charter.admission_threshold {
        return Err(AdmissionError::TooFewEndorsers {
            name: new.name.clone(),
            found,
            required: charter.admission_threshold,
        }
        .into());
    }
    Ok(())
}

/// Runs `f` over the claim every removal endorsement of `member` under `charter` signs.
fn with_removal_claim<T>(
    charter: &Charter,
    member: &Organisation,
    f: impl FnOnce(&admission::RemovalClaim<'_>) -> Result<T, RemovalError>,
) -> Result<T, RemovalError> {
    let digest = charter.digest()?;
    let key = hex::decode(&member.signing_key)
        .map_err(|_| RemovalError::Signing(admission::EndorsementError::BadSignature))?;
    f(&admission::RemovalClaim {
        charter_digest: &digest,
        organisation: OrganisationClaim {
            name: &member.name,
            ca_sha256: &member.ca_sha256.0,
            signing_key: &key,
        },
    })
}

/// The signature of `endorser`'s roster key on the removal of `member` from the
/// federation of `charter` (`panel org endorse-removal`).
pub fn endorse_removal(
    charter: &Charter,
    member: &Organisation,
    endorser: &SigningKey,
) -> Result<crate::rules::hex_bytes::SignatureBytes, RemovalError> {
    with_removal_claim(charter, member, |claim| {
        admission::endorse_removal(claim, endorser)
            .map(crate::rules::hex_bytes::SignatureBytes::new)
            .map_err(RemovalError::Signing)
    })
}

/// Checks a removal: a chartered group, a member in force, endorsements by at least
/// `max(admission_threshold, 2)` distinct other members, and enough organisations left
/// for every panel's floor. Returns the member being removed.
pub fn check_removal(
    state: &State,
    rm: &crate::command::OrganisationRemoval,
) -> Result<Organisation, RemovalError> {
    let charter = state.charter.as_ref().ok_or(RemovalError::Unchartered)?;
    let member = organisations(state)
        .find(|o| o.name == rm.organisation)
        .cloned()
        .ok_or_else(|| RemovalError::NotMember(rm.organisation.clone()))?;
    if let Some((index, e)) = rm
        .endorsements
        .iter()
        .enumerate()
        .find(|(_, e)| e.by == member.name)
    {
        return Err(RemovalError::SelfEndorsed {
            index,
            by: e.by.clone(),
        });
    }
    let left = organisations(state).count() - 1;
    if left < charter.floors.min_organisations {
        return Err(RemovalError::BelowFloor {
            name: member.name.clone(),
            left,
            floor: charter.floors.min_organisations,
        });
    }
    let found = with_removal_claim(charter, &member, |claim| {
        Ok(distinct_endorsers(state, &rm.endorsements, |sig, by| {
            admission::verify_removal_endorsement(claim, sig, by)
        })?)
    })?;
    let required = charter.admission_threshold.max(2);
    if found < required {
        return Err(RemovalError::TooFewEndorsers {
            name: member.name.clone(),
            found,
            required,
        });
    }
    Ok(member)
}

/// The motion key in force for a motion opened at `log_index`: the last key rotated to
/// before it, else the charter's; `None` in an unchartered group.
pub fn motion_key_at(state: &State, log_index: u64) -> Option<VerifyingKey> {
    let rotated = state
        .motion_keys
        .iter()
        .rev()
        .find(|k| k.log_index <= log_index);
    match rotated {
        Some(k) => k
            .key
            .bytes()
            .ok()
            .and_then(|b| panel_proto::parse_public_key(&b).ok()),
        None => state.charter.as_ref()?.motion_key(),
    }
}

/// The motion key in force now (after every rotation applied).
pub fn current_motion_key(state: &State) -> Option<VerifyingKey> {
    motion_key_at(state, u64::MAX)
}

/// Checks a motion-key rotation: a chartered group, the next sequence number, a key never
/// used before, the new key's proof of possession, and endorsements by at least the
/// charter's `admission_threshold` of distinct member organisations. Returns the new key.
pub fn check_rotation(
    state: &State,
    rot: &crate::command::MotionKeyRotation,
) -> Result<VerifyingKey, CharterRuleError> {
    rotation_key(state, rot).map_err(CharterRuleError::from)
}

fn rotation_key(
    state: &State,
    rot: &crate::command::MotionKeyRotation,
) -> Result<VerifyingKey, MotionKeyRotationError> {
    use panel_proto::motion_key_rotation::{RotationClaim, verify_rotation};
    type E = MotionKeyRotationError;
    let charter = state.charter.as_ref().ok_or(E::Unchartered)?;
    let expected = state.motion_keys.len() as u64 + 1;
    if rot.seq != expected {
        return Err(E::WrongSeq {
            seq: rot.seq,
            expected,
        });
    }
    let from = current_motion_key(state).ok_or(E::CurrentKeyInvalid)?;
    let to_bytes = rot.to.bytes().map_err(|_| E::ToNotHex)?;
    let to = panel_proto::parse_public_key(&to_bytes).map_err(E::To)?;
    let is_to = |k: Option<&[u8]>| k == Some(to.as_bytes().as_slice());
    let used = is_to(hex::decode(&charter.motion_key).ok().as_deref())
        || state
            .motion_keys
            .iter()
            .any(|k| is_to(k.key.bytes().ok().as_deref()));
    if used {
        return Err(E::Reused);
    }
    let digest = charter.digest()?;
    let claim = RotationClaim {
        charter_digest: &digest,
        seq: rot.seq,
        from: from.as_bytes(),
        to: to.as_bytes(),
    };
    let sig = rot.possession.bytes().map_err(|_| E::PossessionNotHex)?;
    verify_rotation(&claim, &sig, &to).map_err(E::Possession)?;
    let found = distinct_endorsers(state, &rot.endorsements, |sig, by| {
        verify_rotation(&claim, sig, by)
    })?;
    if found < charter.admission_threshold {
        return Err(E::TooFewEndorsers {
            found,
            required: charter.admission_threshold,
        });
    }
    Ok(to)
}

/// The floors in force: the charter's, or the project's for an unchartered debug group.
pub fn floors(charter: Option<&Charter>) -> Floors {
    charter.map_or(Floors::PROJECT, |c| c.floors.clone())
}

/// Refuses a debate's acceptance policy or seats per stance below the floors.
pub fn check_policy(
    floors: &Floors,
    policy: &Policy,
    min_per_stance: usize,
) -> Result<(), CharterRuleError> {
    if policy.min_net_support_per_side < floors.min_net_support_per_side {
        return Err(CharterRuleError::BelowFloor {
            field: "min_net_support_per_side",
            value: policy.min_net_support_per_side,
            floor: floors.min_net_support_per_side,
        });
    }
    // A supermajority of the counted rulings drops the per-stance majorities; it is safe
    // only on a final panel, drawn by the machine across all organisations
    // (`apply/final_panel.rs`). Chosen by a convener it could be set low enough that one
    // supporter of each stance carries an answer everyone else refused.
    if matches!(
        policy.aggregation,
        crate::rules::acceptance::Aggregation::Supermajority { .. }
    ) {
        return Err(CharterRuleError::FinalPanelRule);
    }
    // Two stances seated means at least one seat reserved for each.
    if floors.min_stances >= 2 && min_per_stance < 1 {
        return Err(CharterRuleError::BelowFloor {
            field: "min_per_stance",
            value: min_per_stance,
            floor: 1,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use panel_federation::{Fingerprint, OperatorEntry, Organisation, ReplicaEntry};

    pub(crate) fn org_key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[100 + i; 32])
    }

    /// Two organisations, `north` (key 100) and `south` (key 101), motion key 200.
    pub(crate) fn charter() -> Charter {
        let pk = |k: SigningKey| hex::encode(k.verifying_key().to_bytes());
        Charter {
            charter_version: 1,
            organisations: ["north", "south"]
                .iter()
                .enumerate()
                .map(|(i, n)| Organisation {
                    name: (*n).into(),
                    ca_sha256: Fingerprint([i as u8; 32]),
                    signing_key: pk(org_key(i as u8)),
                })
                .collect(),
            admission_threshold: 2,
            replicas: vec![ReplicaEntry {
                id: 1,
                organisation: "north".into(),
                cert_sha256: Fingerprint([7; 32]),
                log_vkey: None,
                beacon_vkey: None,
            }],
            operators: vec![OperatorEntry {
                name: "ops".into(),
                organisation: "south".into(),
                cert_sha256: Fingerprint([8; 32]),
            }],
            motion_key: pk(SigningKey::from_bytes(&[200; 32])),
            floors: Floors::PROJECT,
            log: None,
            witnesses: Vec::new(),
            exam: None,
            last_word: None,
            final_panel: None,
            appeal_credits: None,
        }
    }

    #[test]
    fn floors_refuse_weaker_policies() {
        let f = Floors::PROJECT;
        let weak = Policy {
            quorum: None,
            min_net_support_per_side: 0,
            ..Policy::default()
        };
        assert!(matches!(
            check_policy(&f, &weak, 1),
            Err(CharterRuleError::BelowFloor {
                field: "min_net_support_per_side",
                ..
            })
        ));
        assert!(check_policy(&f, &Policy::default(), 0).is_err());
        assert!(check_policy(&f, &Policy::default(), 1).is_ok());
    }
}
