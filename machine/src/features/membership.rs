//! Who may change a chartered group's Raft voters (docs/SECURITY.md, "Membership"): no
//! single operator. A change is first authorised on record by an `AuthoriseMembership`
//! entry that enough distinct member organisations endorse with their roster keys, and
//! whose voters are charter replicas of enough distinct organisations; the replicas'
//! `Admin.ChangeMembership` then executes only the latest authorised voter set. An
//! unchartered debug group has no organisations and no such rule.

use std::collections::BTreeSet;

use panel_federation::Charter;
use panel_proto::membership_change::{
    MembershipClaim, MembershipSignatureError, verify_membership,
};
use thiserror::Error;

use crate::command::MembershipAuthorisation;
use crate::features::endorsers::EndorsementError;
use crate::model::{MembershipChange, State};

/// Why a membership change is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MembershipError {
    #[error("the group has no charter; an unchartered group's membership has no organisations")]
    Unchartered,
    #[error(
        "seq is {seq}, but the next membership change of this federation is {expected}; sign \
         the change again with seq {expected}"
    )]
    WrongSeq { seq: u64, expected: u64 },
    #[error("voters is empty; a group needs voters")]
    NoVoters,
    #[error("voters must be strictly ascending Raft ids with no repeats, e.g. [1, 2, 3]")]
    Unordered,
    #[error(
        "voters names replica {0}, which the federation charter does not list; voters must be \
         the charter's replicas"
    )]
    NotAReplica(u64),
    #[error(
        "the voters {voters:?} are run by {found} distinct organisation(s); the charter \
         requires voters of at least {required} (floors.min_organisations), so no \
         organisation alone holds the group"
    )]
    TooFewVoterOrganisations {
        voters: Vec<u64>,
        found: usize,
        required: usize,
    },
    #[error(transparent)]
    Endorsement(#[from] EndorsementError<MembershipSignatureError>),
    #[error(transparent)]
    Signature(#[from] MembershipSignatureError),
    #[error(transparent)]
    Charter(#[from] panel_federation::CharterError),
    #[error(
        "{found} distinct member organisation(s) endorse the change to voters {voters:?} \
         ({endorsers}); it needs {required} (the larger of the charter's admission_threshold \
         and floors.min_organisations): have more organisations sign it with `panel org \
         endorse-membership`"
    )]
    TooFewEndorsers {
        voters: Vec<u64>,
        endorsers: String,
        found: usize,
        required: usize,
    },
}

/// Distinct organisations that must endorse a change: as many as admit an organisation,
/// and never fewer than sit on a panel (so a one-organisation threshold in a charter does
/// not hand the voter set to one member), capped at the number of members.
pub fn required_endorsers(charter: &Charter, members: usize) -> usize {
    charter
        .admission_threshold
        .max(charter.floors.min_organisations)
        .min(members)
        .max(1)
}

/// Checks a change against the charter; returns the distinct endorsing organisations.
pub fn check_membership(
    state: &State,
    auth: &MembershipAuthorisation,
) -> Result<Vec<String>, MembershipError> {
    type E = MembershipError;
    let charter = state.charter.as_ref().ok_or(E::Unchartered)?;
    let expected = state.membership.len() as u64 + 1;
    if auth.seq != expected {
        return Err(E::WrongSeq {
            seq: auth.seq,
            expected,
        });
    }
    if auth.voters.is_empty() {
        return Err(E::NoVoters);
    }
    if auth.voters.windows(2).any(|w| w[0] >= w[1]) {
        return Err(E::Unordered);
    }
    voter_organisations(charter, &auth.voters)?;
    let digest = charter.digest()?;
    let claim = MembershipClaim {
        charter_digest: &digest,
        seq: auth.seq,
        voters: &auth.voters,
    };
    crate::features::endorsers::distinct_endorsers(state, &auth.endorsements, |sig, by| {
        verify_membership(&claim, sig, by)
    })?;
    let endorsers: BTreeSet<String> = auth.endorsements.iter().map(|e| e.by.clone()).collect();
    let required = required_endorsers(
        charter,
        crate::features::endorsers::organisations(state).count(),
    );
    if endorsers.len() < required {
        return Err(E::TooFewEndorsers {
            voters: auth.voters.clone(),
            endorsers: endorsers.iter().cloned().collect::<Vec<_>>().join(", "),
            found: endorsers.len(),
            required,
        });
    }
    Ok(endorsers.into_iter().collect())
}

/// Refuses voters that are not charter replicas of `floors.min_organisations` distinct
/// organisations (also checked at `Admin.Init`, before any entry exists).
pub fn voter_organisations(charter: &Charter, voters: &[u64]) -> Result<(), MembershipError> {
    let mut orgs = BTreeSet::new();
    for id in voters {
        let entry = charter
            .replicas
            .iter()
            .find(|r| r.id == *id)
            .ok_or(MembershipError::NotAReplica(*id))?;
        orgs.insert(entry.organisation.as_str());
    }
    let required = charter
        .floors
        .min_organisations
        .min(charter.organisations.len());
    if orgs.len() < required {
        return Err(MembershipError::TooFewVoterOrganisations {
            voters: voters.to_vec(),
            found: orgs.len(),
            required,
        });
    }
    Ok(())
}

/// The voter set `Admin.ChangeMembership` may execute now: the latest authorised one.
pub fn authorised_voters(state: &State) -> Option<&MembershipChange> {
    state.membership.last()
}

/// Records a checked change (apply, `AuthoriseMembership`).
pub fn record(
    state: &mut State,
    auth: &MembershipAuthorisation,
    endorsed_by: Vec<String>,
    log_index: u64,
) -> MembershipChange {
    let change = MembershipChange {
        seq: auth.seq,
        voters: auth.voters.clone(),
        endorsed_by,
        log_index,
    };
    state.membership.push(change.clone());
    change
}

/// An organisation's endorsement of the change to `voters` as the `seq`th under
/// `charter` (`panel org endorse-membership`). `voters` in any order; they are sorted.
pub fn endorse(
    charter: &Charter,
    seq: u64,
    voters: &[u64],
    roster_key: &panel_proto::SigningKey,
) -> Result<crate::rules::hex_bytes::SignatureBytes, MembershipError> {
    let voters = sorted(voters);
    let digest = charter.digest()?;
    let claim = MembershipClaim {
        charter_digest: &digest,
        seq,
        voters: &voters,
    };
    Ok(
        panel_proto::membership_change::sign_membership(&claim, roster_key)
            .map(crate::rules::hex_bytes::SignatureBytes::new)?,
    )
}

/// `voters` ascending without repeats, the form a change is signed and recorded in.
pub fn sorted(voters: &[u64]) -> Vec<u64> {
    let set: BTreeSet<u64> = voters.iter().copied().collect();
    set.into_iter().collect()
}
