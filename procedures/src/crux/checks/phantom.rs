//! Phantom opponent (seed `crux.txt`, "Parallel isolation"): a position that answers an
//! opponent it was never shown. Two tests, because the seed's phrase denylist alone
//! leaks:
//!
//! - `crux.phantom_phrase`: the position's own prose names or rebuts an opponent
//!   ("my opponent", "the other side", "those who argue"), unless the pack says it too.
//! - `crux.phantom_substance`: the two positions share specific wording the pack does
//!   not explain: stemmed word 4-grams (with at least two content words) whose content
//!   words never occur together in one pack item, and numbers in neither the pack nor
//!   the decision. Advocates who never saw each other only share what the pack gave
//!   them; code cannot tell which of the two copied, so the finding names both claims.

use std::collections::BTreeSet;

use super::{PackVocabulary, finding, own_prose};
use crate::crux::contract::{CruxStart, Position};
use crate::crux::words::{
    contains_phrase, content_ngrams, content_stems, is_number, numbers, tokens,
};
use crate::panel::Finding;

pub const NGRAM: usize = 4;
/// Shared unexplained 4-grams count 1 each, shared unexplained numbers 2; this score or
/// more refuses (docs/CRUX.md gives the controls' maximum).
pub const SUBSTANCE_LIMIT: usize = 3;

/// Phrases that refer to an opponent or a rebuttal.
const OPPONENT_PHRASES: &[&str] = &[
    "my opponent",
    "the opponent",
    "opponents",
    "opponent",
    "the other side",
    "other sides",
    "the other position",
    "the other advocate",
    "the other debater",
    "the opposing",
    "opposing view",
    "opposing case",
    "the optimist",
    "the optimists",
    "optimists",
    "the pessimist",
    "the pessimists",
    "pessimists",
    "counterargument",
    "counter argument",
    "rebut",
    "rebuts",
    "rebuttal",
    "refute",
    "refutes",
    "as they argue",
    "those who argue",
    "anyone who argues",
    "some will argue",
    "some argue",
    "some may argue",
    "proponents",
    "detractors",
    "naysayers",
    "critics claim",
    "their argument",
    "their case",
    "contrary to what",
];

pub fn check(s: &CruxStart, vocab: &PackVocabulary) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let pack_tokens: Vec<String> = s.pack.items.iter().flat_map(|i| tokens(&i.text)).collect();
    for (pi, p) in s.positions.iter().enumerate() {
        for (at, text) in prose_parts(pi, p) {
            let toks = tokens(&text);
            for phrase in OPPONENT_PHRASES {
                let words: Vec<&str> = phrase.split(' ').collect();
                if contains_phrase(&toks, &words) && !contains_phrase(&pack_tokens, &words) {
                    f.push(finding(
                        "crux.phantom_phrase",
                        at.clone(),
                        format!(
                            "\"{phrase}\" refers to an opponent the {} was never shown; argue \
                             from the pack only",
                            p.side.name()
                        ),
                    ));
                    break;
                }
            }
        }
    }
    let shared = shared_unexplained(s, vocab);
    let score = shared.ngrams.len() + 2 * shared.numbers.len();
    if score >= SUBSTANCE_LIMIT && s.positions.len() == 2 {
        let sample: Vec<&str> = shared
            .ngrams
            .iter()
            .map(String::as_str)
            .chain(shared.numbers.iter().map(String::as_str))
            .take(4)
            .collect();
        f.push(finding(
            "crux.phantom_substance",
            format!("{} and {}", shared.at[0], shared.at[1]),
            format!(
                "the positions share wording the pack does not contain ({}; score {score}, \
                 limit {SUBSTANCE_LIMIT}): one of them answers the other; each must be \
                 written without sight of the other",
                sample
                    .iter()
                    .map(|x| format!("\"{x}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let measured = format!(
        "shared unexplained: {} 4-grams, {} numbers (score {score}, limit {SUBSTANCE_LIMIT})",
        shared.ngrams.len(),
        shared.numbers.len()
    );
    (f, measured)
}

/// Thesis and each claim's text, with where they are.
fn prose_parts(pi: usize, p: &Position) -> Vec<(String, String)> {
    std::iter::once((format!("positions[{pi}].thesis"), p.thesis.clone()))
        .chain(
            p.claims
                .iter()
                .enumerate()
                .map(|(ci, c)| (super::claim_at(pi, ci, c), c.text.clone())),
        )
        .collect()
}

/// What two positions share that the pack does not explain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shared {
    pub ngrams: BTreeSet<String>,
    pub numbers: BTreeSet<String>,
    /// The places holding most of it, one per position.
    pub at: [String; 2],
}

/// The shared, unexplained wording of the two positions (empty unless there are two).
pub fn shared_unexplained(s: &CruxStart, vocab: &PackVocabulary) -> Shared {
    let [a, b] = match s.positions.as_slice() {
        [a, b] => [a, b],
        _ => return Shared::default(),
    };
    let explained = |g: &str| {
        vocab.ngrams.contains(g) || {
            let stems: BTreeSet<String> = content_stems(g).into_iter().collect();
            vocab.per_item.iter().any(|item| stems.is_subset(item))
        }
    };
    let ga = content_ngrams(&own_prose(a), NGRAM);
    let gb = content_ngrams(&own_prose(b), NGRAM);
    let ngrams: BTreeSet<String> = ga
        .intersection(&gb)
        .filter(|g| !explained(g))
        .cloned()
        .collect();
    let na = numbers(&own_prose(a));
    let nb = numbers(&own_prose(b));
    let nums: BTreeSet<String> = na
        .intersection(&nb)
        .filter(|n| !vocab.numbers.contains(*n) && is_number(n))
        .cloned()
        .collect();
    let at = [0, 1].map(|pi| {
        let p = s.positions.get(pi).map_or(a, |p| p);
        most_shared(pi, p, &ngrams, &nums)
    });
    Shared {
        ngrams,
        numbers: nums,
        at,
    }
}

fn most_shared(pi: usize, p: &Position, g: &BTreeSet<String>, n: &BTreeSet<String>) -> String {
    prose_parts(pi, p)
        .into_iter()
        .map(|(at, text)| {
            let hits = content_ngrams(&text, NGRAM).intersection(g).count()
                + numbers(&text).intersection(n).count();
            (hits, at)
        })
        .max_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)))
        .map_or(format!("positions[{pi}]"), |(_, at)| at)
}
