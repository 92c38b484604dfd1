//! Who the member organisations are, with which roster keys they sign now (their entries'
//! keys, or those rotated to, `roster_keys.rs`), and how many of them endorse an entry:
//! the count every threshold rule (admission, membership, motion-key rotation, breakers)
//! is checked against (docs/SECURITY.md "Membership").

use ed25519_dalek::VerifyingKey;
use panel_federation::Organisation;

use crate::model::State;

/// The organisations of the federation: the charter's founders, then those admitted,
/// less those removed.
pub fn organisations(state: &State) -> impl Iterator<Item = &Organisation> {
    state
        .charter
        .iter()
        .flat_map(|c| c.organisations.iter())
        .chain(state.admitted_organisations.iter())
        .filter(|o| !is_removed(state, &o.name))
}

/// Whether organisation `name` was removed by entry.
pub fn is_removed(state: &State, name: &str) -> bool {
    state.removed_organisations.iter().any(|r| r.name == name)
}

/// `o`'s roster key in force now: its entry's, or the last it rotated to.
pub fn current_roster_key(state: &State, o: &Organisation) -> Option<VerifyingKey> {
    match state
        .roster_keys
        .iter()
        .rev()
        .find(|c| c.organisation == o.name)
    {
        Some(change) => key_of(&change.key),
        None => o.roster_key(),
    }
}

/// Every key that speaks for member `name` now: its current key, then the key it replaced
/// while the rotation's overlap lasts. Empty for a non-member.
pub fn roster_keys_in_force(state: &State, name: &str) -> Vec<VerifyingKey> {
    let Some(o) = organisations(state).find(|o| o.name == name) else {
        return Vec::new();
    };
    let mut keys: Vec<VerifyingKey> = current_roster_key(state, o).into_iter().collect();
    if let Some(change) = state
        .roster_keys
        .iter()
        .rev()
        .find(|c| c.organisation == name)
        && state.batch_time_ms < change.overlap_until_ms
        && let Some(previous) = key_of(&change.previous)
    {
        keys.push(previous);
    }
    keys
}

/// The organisation that holds or ever held `key` as its roster key (removed ones too).
pub fn roster_key_holder(state: &State, key: &VerifyingKey) -> Option<String> {
    let entries = organisations(state).chain(state.removed_organisations.iter());
    for o in entries {
        if o.roster_key().as_ref() == Some(key) {
            return Some(o.name.clone());
        }
    }
    state
        .roster_keys
        .iter()
        .find(|c| key_of(&c.key).as_ref() == Some(key))
        .map(|c| c.organisation.clone())
}

fn key_of(bytes: &crate::rules::hex_bytes::PublicKeyBytes) -> Option<VerifyingKey> {
    panel_proto::parse_public_key(&bytes.bytes().ok()?).ok()
}

/// Checks a signature of member `name` with each of its roster keys in force
/// ([`roster_keys_in_force`]: the current one, and the replaced one during a rotation's
/// overlap): `None` for a non-member, else the first success or the current key's refusal.
pub fn verify_as_member<E>(
    state: &State,
    name: &str,
    verify: impl Fn(&VerifyingKey) -> Result<(), E>,
) -> Option<Result<(), E>> {
    let keys = roster_keys_in_force(state, name);
    let (first, rest) = keys.split_first()?;
    let refused = match verify(first) {
        Ok(()) => return Some(Ok(())),
        Err(e) => e,
    };
    Some(if rest.iter().any(|k| verify(k).is_ok()) {
        Ok(())
    } else {
        Err(refused)
    })
}

/// Why one endorsement of an entry is refused; `E` is why its signature does not verify
/// (an admission's and a rotation's differ only in the bytes signed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndorsementError<E> {
    #[error("endorsements[{index}].by: {by:?} is not a member organisation")]
    NotMember { index: usize, by: String },
    #[error("endorsements[{index}].signature is not hex")]
    NotHex { index: usize },
    #[error("endorsements[{index}] by {by:?}: {problem}")]
    Invalid {
        index: usize,
        by: String,
        problem: E,
    },
}

/// How many distinct member organisations endorse an entry: each endorsement must name a
/// member (founder or admitted) and verify under its roster key (`verify`); the first one
/// that does not is the refusal, with its JSON path. Shared by organisation admission and
/// motion-key rotation, which differ only in the bytes signed.
pub(crate) fn distinct_endorsers<E>(
    state: &State,
    endorsements: &[crate::log::endorsement::Endorsement],
    verify: impl Fn(&[u8], &VerifyingKey) -> Result<(), E>,
) -> Result<usize, EndorsementError<E>> {
    let mut endorsers = std::collections::BTreeSet::new();
    for (index, e) in endorsements.iter().enumerate() {
        let sig = e
            .signature
            .bytes()
            .map_err(|_| EndorsementError::NotHex { index })?;
        verify_as_member(state, &e.by, |by| verify(&sig, by))
            .ok_or_else(|| EndorsementError::NotMember {
                index,
                by: e.by.clone(),
            })?
            .map_err(|problem| EndorsementError::Invalid {
                index,
                by: e.by.clone(),
                problem,
            })?;
        endorsers.insert(e.by.as_str());
    }
    Ok(endorsers.len())
}
