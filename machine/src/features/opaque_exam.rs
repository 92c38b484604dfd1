//! Opaque exam motions (rule set [`OPAQUE_EXAMS`](crate::rules::OPAQUE_EXAMS);
//! docs/coordinator/state-machine.md "Sealed exams", docs/SECURITY.md "Exams").
//!
//! Before, an exam motion's id was `exam/s<N>/<arbiter>/<item id>` and the motion named the
//! item id again, so anyone holding a copy of the pool (the shipped one is public, and a
//! private pool is public after its reveal) read the gold off the id. In a sitting sealed
//! under this rule the id ends in a token, the first 16 bytes of
//! `SHA-256(DOMAIN || salt || sitting || len(arbiter) || arbiter || len(item) || item)` in
//! hex, where `salt` is the pool's secret key salt: only a holder of the pool file can
//! compute or invert it, and the motion's `exam_item.item_id` is the same token. Apply
//! cannot check a token before the salt is revealed, so it matches a carried motion to an
//! item of the arbiter's draw by what the motion shows (the wording the draw picks,
//! `calibration::phrasing`), each item once, and checks every token at the reveal: an
//! exam asked under any other id is not scored.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use calibration::public_pool::PublicItem;
use sha2::{Digest, Sha256};

use crate::model::sitting::Sitting;

/// Domain tag of an opaque exam motion's token.
pub const DOMAIN: &[u8] = b"crucible-panel/exam/opaque-id/v1\0";

/// Hex digits of a token.
pub const TOKEN_HEX: usize = 32;

/// The token of `item_id` asked of `arbiter_id` in sitting `number` of a pool with key
/// salt `salt`.
pub fn token(salt: &[u8; 32], number: u32, arbiter_id: &str, item_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(salt);
    h.update(number.to_be_bytes());
    h.update((arbiter_id.len() as u64).to_be_bytes());
    h.update(arbiter_id.as_bytes());
    h.update((item_id.len() as u64).to_be_bytes());
    h.update(item_id.as_bytes());
    hex::encode(&h.finalize()[..TOKEN_HEX / 2])
}

/// The prefix every exam motion id of `arbiter_id` in sitting `number` starts with.
pub fn prefix(number: u32, arbiter_id: &str) -> String {
    format!("exam/s{number}/{arbiter_id}/")
}

/// The arbiter an exam motion id of sitting `number` names ([`prefix`]'s inverse).
pub fn arbiter_of(number: u32, motion_id: &str) -> Option<&str> {
    let rest = motion_id.strip_prefix(&format!("exam/s{number}/"))?;
    rest.split_once('/').map(|(arbiter_id, _)| arbiter_id)
}

/// The token a motion id ends in, if it is shaped like one of this arbiter's.
pub fn token_of<'a>(number: u32, arbiter_id: &str, motion_id: &'a str) -> Option<&'a str> {
    let t = motion_id.strip_prefix(&prefix(number, arbiter_id))?;
    let shaped = t.len() == TOKEN_HEX
        && t.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    shaped.then_some(t)
}

/// What apply matches carried motions against: the arbiter's draw by wording, and the
/// items already matched (each item is asked once).
pub struct Matcher<'a> {
    by_wording: BTreeMap<(&'a str, Option<&'a str>), Vec<&'a PublicItem>>,
    matched: RefCell<BTreeMap<String, String>>,
    used: RefCell<BTreeSet<String>>,
}

impl<'a> Matcher<'a> {
    /// The draw `asked` of an arbiter with draw seed `seed` in `sitting`.
    pub fn new(sitting: &'a Sitting, seed: u64, asked: &[String]) -> Self {
        let mut by_wording: BTreeMap<_, Vec<&PublicItem>> = BTreeMap::new();
        for item in asked.iter().filter_map(|id| sitting.public.item(id)) {
            let w = item.wording(seed);
            by_wording
                .entry((w.question, w.motion))
                .or_default()
                .push(item);
        }
        Matcher {
            by_wording,
            matched: RefCell::new(BTreeMap::new()),
            used: RefCell::new(BTreeSet::new()),
        }
    }

    /// The item a motion with this id, question and motion text asks: the first of the
    /// draw's items with that wording not matched yet. Records the match.
    pub fn take(
        &self,
        motion_id: &str,
        question: &str,
        motion: Option<&str>,
    ) -> Option<&'a PublicItem> {
        let candidates = self.by_wording.get(&(question, motion))?;
        let mut used = self.used.borrow_mut();
        let item = candidates.iter().find(|i| !used.contains(&i.id))?;
        used.insert(item.id.clone());
        self.matched
            .borrow_mut()
            .insert(motion_id.to_owned(), item.id.clone());
        Some(item)
    }

    /// The item matched to a motion id.
    pub fn item_for(&self, motion_id: &str) -> Option<String> {
        self.matched.borrow().get(motion_id).cloned()
    }

    /// Every match, item id to motion id, as the held exam keeps it.
    pub fn by_item(&self) -> BTreeMap<String, String> {
        self.matched
            .borrow()
            .iter()
            .map(|(m, i)| (i.clone(), m.clone()))
            .collect()
    }
}

/// The first item of a held exam asked under another id than its token, checked at the
/// reveal with the revealed salt.
pub fn first_wrong_id<'m>(
    motions: &'m BTreeMap<String, String>,
    salt: &[u8; 32],
    number: u32,
    arbiter_id: &str,
) -> Option<&'m str> {
    motions.iter().find_map(|(item, motion_id)| {
        let want = format!(
            "{}{}",
            prefix(number, arbiter_id),
            token(salt, number, arbiter_id, item)
        );
        (want != *motion_id).then_some(item.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_neither_item_nor_arbiter_and_moves_with_every_input() {
        let salt = [3u8; 32];
        let t = token(&salt, 2, "arb-1", "bin-007");
        assert_eq!(t.len(), TOKEN_HEX);
        assert!(!t.contains("bin") && !t.contains("007"));
        assert_ne!(t, token(&[4u8; 32], 2, "arb-1", "bin-007"));
        assert_ne!(t, token(&salt, 3, "arb-1", "bin-007"));
        assert_ne!(t, token(&salt, 2, "arb-2", "bin-007"));
        assert_ne!(t, token(&salt, 2, "arb-1", "bin-008"));
        // Length-prefixed: moving a byte between arbiter and item is another token.
        assert_ne!(token(&salt, 2, "ab", "c"), token(&salt, 2, "a", "bc"));
    }

    #[test]
    fn only_token_shaped_ids_of_this_arbiter_and_sitting_parse() {
        let t = token(&[1u8; 32], 4, "a", "x");
        assert_eq!(
            token_of(4, "a", &format!("exam/s4/a/{t}")),
            Some(t.as_str())
        );
        assert_eq!(token_of(5, "a", &format!("exam/s4/a/{t}")), None);
        assert_eq!(token_of(4, "b", &format!("exam/s4/a/{t}")), None);
        assert_eq!(token_of(4, "a", "exam/s4/a/bin-007"), None);
        assert_eq!(
            token_of(4, "a", &format!("exam/s4/a/{}", t.to_uppercase())),
            None
        );
    }

    #[test]
    fn an_exam_motion_id_names_its_arbiter() {
        let id = format!("{}{}", prefix(3, "arb-a"), "ab12");
        assert_eq!(arbiter_of(3, &id), Some("arb-a"));
        assert_eq!(arbiter_of(2, &id), None, "another sitting");
        assert_eq!(arbiter_of(3, "exam/s3/no-token"), None);
    }
}
