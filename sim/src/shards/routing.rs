//! Which group a new debate goes to: rendezvous (highest-random-weight) hashing over
//! SHA-256.
//!
//! Each group scores the debate id with SHA-256 over domain-tagged bytes and the highest
//! score wins (ties, which SHA-256 makes vanishingly rare, go to the lower group index).
//! Why rendezvous rather than `hash mod G`: when a group is added, only the debates the new
//! group now outscores move to it (about 1/(G+1) of them) and no debate moves between two
//! old groups; `mod G` would move most of them. In the design (docs/SHARDING.md) this
//! choice only places *new* debates: a debate's group is fixed on the federation index
//! when it is created and never recomputed, so re-sharding never moves a record.
//!
//! The bytes hashed are `SHA-256(0x00 || "crucible-panel/shard/v1" || 0x00 || group as 4
//! bytes big-endian || debate id as UTF-8)`: the leading zero byte is there because the
//! digest is computed with the record's own RFC 6962 leaf hash
//! (`panel_machine::rules::transparency::leaf_hash`), so no new dependency is needed. The score is
//! the digest's first 8 bytes, big-endian. A deployment would hash the group's charter
//! fingerprint instead of its index; the model has no charters.

use panel_machine::rules::transparency::leaf_hash;

use super::error::ShardsError;
use super::params::MAX_GROUPS;

/// The domain tag, so a shard score can never be mistaken for a record leaf of the same
/// bytes.
pub const SHARD_TAG: &[u8] = b"crucible-panel/shard/v1";

/// Group `group`'s score for `debate_id`.
pub fn score(group: u32, debate_id: &str) -> u64 {
    let mut bytes = Vec::with_capacity(SHARD_TAG.len() + 5 + debate_id.len());
    bytes.extend_from_slice(SHARD_TAG);
    bytes.push(0);
    bytes.extend_from_slice(&group.to_be_bytes());
    bytes.extend_from_slice(debate_id.as_bytes());
    let digest = leaf_hash(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The group of `groups` (1 to [`MAX_GROUPS`]) that `debate_id` goes to.
pub fn group_of(debate_id: &str, groups: u32) -> Result<u32, ShardsError> {
    if !(1..=MAX_GROUPS).contains(&groups) {
        return Err(ShardsError::invalid("groups", groups, "1 to 64"));
    }
    let mut best = (0u32, score(0, debate_id));
    for g in 1..groups {
        let s = score(g, debate_id);
        if s > best.1 {
            best = (g, s);
        }
    }
    Ok(best.0)
}

/// The model's debate ids: `deb-0`, `deb-1`, ...
pub fn debate_id(n: u32) -> String {
    format!("deb-{n}")
}

/// The group of each of `debates` debates, by index.
pub fn assign(debates: u32, groups: u32) -> Result<Vec<u32>, ShardsError> {
    (0..debates)
        .map(|n| group_of(&debate_id(n), groups))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_group_takes_everything() {
        assert!(assign(100, 1).unwrap().iter().all(|g| *g == 0));
    }

    #[test]
    fn the_mapping_is_a_function_of_the_id() {
        assert_eq!(
            group_of("deb-7", 16).unwrap(),
            group_of("deb-7", 16).unwrap()
        );
        assert_ne!(score(0, "deb-7"), score(1, "deb-7"));
    }

    #[test]
    fn every_group_gets_a_fair_share() {
        for groups in [2u32, 4, 8, 16] {
            let a = assign(4000, groups).unwrap();
            let fair = 4000.0 / f64::from(groups);
            for g in 0..groups {
                let n = a.iter().filter(|x| **x == g).count() as f64;
                assert!(
                    (n - fair).abs() < 0.25 * fair,
                    "group {g} of {groups} has {n} debates, fair is {fair}"
                );
            }
        }
    }

    #[test]
    fn adding_a_group_moves_debates_only_to_the_new_group() {
        for groups in 1..16u32 {
            let before = assign(2000, groups).unwrap();
            let after = assign(2000, groups + 1).unwrap();
            let mut moved = 0;
            for (b, a) in before.iter().zip(&after) {
                if b != a {
                    assert_eq!(*a, groups, "a debate moved between two old groups");
                    moved += 1;
                }
            }
            let expected = 2000.0 / f64::from(groups + 1);
            assert!(
                (f64::from(moved) - expected).abs() < 0.35 * expected,
                "{moved} moved going to {} groups, about {expected} expected",
                groups + 1
            );
        }
    }

    #[test]
    fn out_of_range_group_counts_are_refused() {
        assert_eq!(group_of("deb-1", 0).unwrap_err().parameter(), "groups");
        assert_eq!(group_of("deb-1", 65).unwrap_err().parameter(), "groups");
    }
}
