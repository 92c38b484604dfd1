//! The draw beacon (docs/SECURITY.md "The draw cannot be steered"; docs/coordinator/acceptance.md
//! "The panel draw"): from rule set [`BEACON_DRAW`](crate::rules::BEACON_DRAW) on, a
//! debate or run motion of a policy with an unsteerable draw, in a group whose charter
//! gives its replicas beacon keys, opens *unseated*; its panel is drawn by a later
//! `SeatMotion` entry from replicas' VRF proofs over the motion's question key.
//!
//! Why two steps: the seed must not exist while anyone can still change what it is drawn
//! for. The question key is fixed by the opening entry and depends on what is asked, not
//! on the leader's stamps, the entries' order or the log's indices, so a leader cannot try
//! variants of the record before a motion; a share is a VRF output, one per key and input,
//! so a replica cannot try variants of its share either. The same question asked with the
//! same keys draws the same panel, which makes `panel up --seed` replay its outcomes.
//!
//! Question key: `SHA-256(QUESTION_DOMAIN || digest || attempt)` where `digest` is the
//! SHA-256 of the motion's spec as compact JSON with `motion_id` and `state_hash` blanked
//! (what is asked and under which terms; the debate's state hash is left out because the
//! debate document carries leader-stamped times), and `attempt` (u32 big-endian) counts
//! the earlier beacon motions with the same digest, so a re-ask draws afresh.
//!
//! Seed: the first 8 bytes (big-endian) of `SHA-256(SEED_DOMAIN || question key ||
//! for each share in replica order: replica id (u64 BE) || 64-byte VRF output)`.
//!
//! A seating carries exactly one share from each of as many organisations as the charter's
//! log quorum (`organisations_needed`): no organisation alone knows a seed before another
//! organisation's replica has proved over the question. What stays open is in
//! docs/SECURITY.md "The beacon".

use crate::log::refusal_code::RefusalCode;
use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use crate::command::MotionSpec;
pub use crate::log::seating::{BeaconShare, Seating};
use crate::model::State;
pub use crate::model::motion::BeaconDraw;
use panel_federation::beacon_key::{self, BeaconKeyError};

/// Domain of the question key.
pub const QUESTION_DOMAIN: &[u8] = b"crucible-panel/beacon-question/v1\0";
/// Domain of the VRF input (the question key follows it).
pub const INPUT_DOMAIN: &[u8] = b"crucible-panel/beacon-input/v1\0";
/// Domain of the seed.
pub const SEED_DOMAIN: &[u8] = b"crucible-panel/beacon-seed/v1\0";

/// Why a `SeatMotion` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeaconError {
    #[error(
        "motion {0} awaits no seats: it is unknown, decided, or already seated; `panel motion \
         show {0}` shows its panel"
    )]
    NotAwaiting(String),
    #[error("a seating carries no share; send the proof of at least one charter replica")]
    NoShares,
    #[error(
        "the seating lists replica {0} twice or out of order; list each replica once, by \
         ascending id"
    )]
    Duplicate(u64),
    #[error(
        "replica {0} has no beacon key in the charter; only replicas the charter gives a \
         beacon_vkey can share a draw (`panel pki init` writes one for each replica)"
    )]
    NoKey(u64),
    #[error(
        "replicas {first} and {second} are both of organisation {organisation}; a seating \
         carries one share per organisation: drop one of them"
    )]
    SameOrganisation {
        organisation: String,
        first: u64,
        second: u64,
    },
    #[error(
        "the seating carries shares of {got} organisation(s); the charter needs exactly \
         {needed} (its log quorum), so no organisation knows the seed before another's share: \
         keep a replica of each of {needed} organisations up, and the leader asks each for its \
         share"
    )]
    Organisations { got: usize, needed: usize },
    #[error("replica {replica}'s share: {source}")]
    Share {
        replica: u64,
        #[source]
        source: BeaconKeyError,
    },
    #[error("the motion's spec cannot be encoded for its question key: {0}")]
    Encode(String),
}

impl BeaconError {
    pub fn code(&self) -> RefusalCode {
        RefusalCode::BeaconRefused
    }
}

/// Whether a motion of `spec` opened now waits for a beacon seating: the rule set is in
/// force, the policy asks for an unsteerable draw, the motion asks a question, and the
/// charter gives at least one replica a beacon key.
pub fn applies(state: &State, spec: &MotionSpec) -> bool {
    state.rules >= crate::rules::BEACON_DRAW
        && crate::features::draw_seed::is_unsteerable(spec)
        && spec.asks_a_question()
        && state
            .charter
            .as_ref()
            .is_some_and(|c| c.replicas.iter().any(|r| r.beacon_vkey.is_some()))
}

/// The digest of what `spec` asks (module docs): its JSON with the motion id and the
/// debate's state hash blanked.
pub fn content_digest(spec: &MotionSpec) -> Result<[u8; 32], BeaconError> {
    let blank = MotionSpec {
        motion_id: String::new(),
        state_hash: Default::default(),
        ..spec.clone()
    };
    let json = serde_json::to_vec(&blank).map_err(|e| BeaconError::Encode(e.to_string()))?;
    Ok(Sha256::digest(&json).into())
}

/// The question key of the `attempt`-th motion with content `digest`.
pub fn question_key(digest: &[u8; 32], attempt: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(QUESTION_DOMAIN);
    h.update(digest);
    h.update(attempt.to_be_bytes());
    h.finalize().into()
}

/// The VRF input a replica proves over for `question`.
pub fn input(question: &[u8; 32]) -> Vec<u8> {
    let mut v = INPUT_DOMAIN.to_vec();
    v.extend_from_slice(question);
    v
}

/// The beacon a motion of `spec` opens with (pending, over the admitted `pool` of the
/// opening), counting the attempt in `state`.
pub fn open(
    state: &mut State,
    spec: &MotionSpec,
    pool: Vec<crate::rules::draw::Candidate>,
) -> Result<BeaconDraw, BeaconError> {
    let digest = content_digest(spec)?;
    let slot = state
        .beacon_attempts
        .entry(hex::encode(digest))
        .or_insert(0);
    let attempt = *slot;
    *slot += 1;
    Ok(BeaconDraw {
        question: crate::rules::hex_bytes::DigestBytes::new(question_key(&digest, attempt)),
        attempt,
        shares: Vec::new(),
        pool,
    })
}

/// How many organisations' shares a seating needs: the charter's log quorum (the same
/// number of organisations that must sign a checkpoint), at least one, and no more than
/// the organisations whose replicas hold beacon keys.
pub fn organisations_needed(charter: Option<&panel_federation::Charter>) -> usize {
    let Some(c) = charter else { return 1 };
    let keyed: BTreeSet<&str> = c
        .replicas
        .iter()
        .filter(|r| r.beacon_vkey.is_some())
        .map(|r| r.organisation.as_str())
        .collect();
    let quorum = c.log.as_ref().map_or(0, |l| l.quorum);
    quorum.max(1).min(keyed.len().max(1))
}

/// Checks `shares` against the charter's beacon keys for `draw`'s question and returns
/// the seed they give (module docs).
pub fn seed(
    charter: Option<&panel_federation::Charter>,
    draw: &BeaconDraw,
    shares: &[BeaconShare],
) -> Result<u64, BeaconError> {
    if shares.is_empty() {
        return Err(BeaconError::NoShares);
    }
    let question: [u8; 32] = draw
        .question
        .array()
        .ok_or_else(|| BeaconError::Encode("the stored question key is not 32 bytes".into()))?;
    let alpha = input(&question);
    let mut h = Sha256::new();
    h.update(SEED_DOMAIN);
    h.update(question);
    let mut last: Option<u64> = None;
    let mut organisations: std::collections::BTreeMap<&str, u64> = Default::default();
    for share in shares {
        if last.is_some_and(|l| l >= share.replica) {
            return Err(BeaconError::Duplicate(share.replica));
        }
        last = Some(share.replica);
        let entry = charter
            .and_then(|c| c.replicas.iter().find(|r| r.id == share.replica))
            .filter(|r| r.beacon_vkey.is_some())
            .ok_or(BeaconError::NoKey(share.replica))?;
        if let Some(first) = organisations.insert(&entry.organisation, share.replica) {
            return Err(BeaconError::SameOrganisation {
                organisation: entry.organisation.clone(),
                first,
                second: share.replica,
            });
        }
        let share_err = |source| BeaconError::Share {
            replica: share.replica,
            source,
        };
        let key = beacon_key::parse_public(entry.beacon_vkey.as_deref().unwrap_or_default())
            .map_err(share_err)?;
        let out = beacon_key::verify(&key, &alpha, &share.proof.to_hex()).map_err(share_err)?;
        h.update(share.replica.to_be_bytes());
        h.update(out);
    }
    let needed = organisations_needed(charter);
    if organisations.len() != needed {
        return Err(BeaconError::Organisations {
            got: organisations.len(),
            needed,
        });
    }
    Ok(crate::model::seed_of(h))
}

/// How many seeds a seating tries when a draw misses (`follow_on_seeds`).
pub const SEAT_TRIES: u64 = 8;

/// The beacon seed, then [`SEAT_TRIES`]` - 1` seeds derived from it in order
/// (`SHA-256(SEED_DOMAIN || seed || k)`, first 8 bytes big-endian).
pub fn follow_on_seeds(seed: u64) -> impl Iterator<Item = u64> {
    (0..SEAT_TRIES).map(move |k| {
        if k == 0 {
            return seed;
        }
        let mut h = Sha256::new();
        h.update(SEED_DOMAIN);
        h.update(seed.to_be_bytes());
        h.update(k.to_be_bytes());
        crate::model::seed_of(h)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_on_seeds_start_with_the_beacon_seed_and_differ() {
        let seeds: Vec<u64> = follow_on_seeds(42).collect();
        assert_eq!(seeds.len() as u64, SEAT_TRIES);
        assert_eq!(seeds[0], 42);
        let distinct: BTreeSet<u64> = seeds.iter().copied().collect();
        assert_eq!(distinct.len(), seeds.len());
        assert_eq!(seeds, follow_on_seeds(42).collect::<Vec<_>>());
    }

    #[test]
    fn the_question_key_binds_content_and_attempt() {
        let d = [3u8; 32];
        assert_eq!(question_key(&d, 0), question_key(&d, 0));
        assert_ne!(question_key(&d, 0), question_key(&d, 1));
        assert_ne!(question_key(&d, 0), question_key(&[4u8; 32], 0));
    }
}
