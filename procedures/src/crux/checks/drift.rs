//! Evidence drift (seed `crux.txt`: "a claim cites a real source, then restates it as
//! something stronger than the source actually said"). Two shapes code can see:
//!
//! - `crux.drift_hedge`: the quoted span (or the few words just before it in the item)
//!   is hedged ("may", "up to", "in some cases", "estimated") and the claim carries no
//!   hedge at all: it states flatly what the source only allowed.
//! - `crux.drift_number`: the span has figures and the claim has figures, but none of
//!   the span's: the claim restates the number differently.

use std::collections::BTreeSet;

use super::{claim_at, finding, located_quote, quote_context};
use crate::crux::contract::{Claim, CruxStart, EvidencePack};
use crate::crux::words::{contains_phrase, hedge_tokens, is_number, numbers};
use crate::panel::Finding;

/// Tokens before a quote that still qualify it.
pub const HEDGE_WINDOW: usize = 3;

/// Hedges a source uses.
pub const SOURCE_HEDGES: &[&str] = &[
    "may",
    "might",
    "could",
    "up to",
    "as much as",
    "as many as",
    "as little as",
    "in some cases",
    "in certain cases",
    "estimated",
    "estimate",
    "estimates",
    "approximately",
    "roughly",
    "projected",
    "projection",
    "forecast",
    "expected to",
    "likely",
    "potentially",
    "reportedly",
    "preliminary",
    "anecdotal",
    "unverified",
    "sometimes",
];

/// Words that keep a hedge in a claim (the source's hedges and their kin).
const CLAIM_HEDGES: &[&str] = &[
    "can",
    "suggests",
    "suggest",
    "possibly",
    "possible",
    "perhaps",
    "probably",
    "would",
    "some",
    "if",
    "assuming",
    "at most",
    "uncertain",
    "unclear",
    "not guaranteed",
    "claims",
    "hopes",
    "unproven",
];

pub(crate) fn has_any(toks: &[String], phrases: &[&'static str]) -> Option<&'static str> {
    phrases
        .iter()
        .find(|p| contains_phrase(toks, &p.split(' ').collect::<Vec<_>>()))
        .copied()
}

/// The first hedge in the span's context, if the span is hedged.
pub(crate) fn span_hedge(pack: &EvidencePack, claim: &Claim) -> Option<&'static str> {
    claim
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
        .find_map(|r| has_any(&quote_context(pack, r, HEDGE_WINDOW), SOURCE_HEDGES))
}

fn claim_hedged(claim: &Claim) -> bool {
    let toks = hedge_tokens(&claim.text);
    has_any(&toks, SOURCE_HEDGES).is_some() || has_any(&toks, CLAIM_HEDGES).is_some()
}

/// Numbers that a hedge just before qualifies ("up to 6 hours").
fn hedged_numbers(toks: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, t) in toks.iter().enumerate() {
        let window = toks.get(i.saturating_sub(HEDGE_WINDOW)..i).unwrap_or(&[]);
        if is_number(t) && has_any(window, SOURCE_HEDGES).is_some() {
            out.extend(numbers(t));
        }
    }
    out
}

/// Does the claim keep a hedge just before some occurrence of the number `n`?
fn keeps_number_hedge(claim: &[String], n: &str) -> bool {
    claim.iter().enumerate().any(|(i, t)| {
        let window = claim.get(i.saturating_sub(HEDGE_WINDOW)..i).unwrap_or(&[]);
        is_number(t)
            && numbers(t).contains(n)
            && (has_any(window, SOURCE_HEDGES).is_some() || has_any(window, CLAIM_HEDGES).is_some())
    })
}

/// The hedge a claim drops, if it drops one: a hedged figure restated without its hedge,
/// or a hedged span restated with no hedge at all.
fn dropped_hedge(pack: &EvidencePack, c: &Claim) -> Option<String> {
    let claim = hedge_tokens(&c.text);
    let claim_numbers = numbers(&c.text);
    for r in c
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
    {
        let ctx = quote_context(pack, r, HEDGE_WINDOW);
        let Some(h) = has_any(&ctx, SOURCE_HEDGES) else {
            continue;
        };
        let restated: Vec<String> = hedged_numbers(&ctx)
            .intersection(&claim_numbers)
            .cloned()
            .collect();
        if let Some(n) = restated.iter().find(|n| !keeps_number_hedge(&claim, n)) {
            return Some(format!(
                "the source hedges {n} but the claim states it flatly"
            ));
        }
        if restated.is_empty() && !claim_hedged(c) {
            return Some(format!(
                "the source hedges (\"{h}\") but the claim states it flatly"
            ));
        }
    }
    None
}

pub fn check(s: &CruxStart) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let mut hedged = 0usize;
    for (pi, p) in s.positions.iter().enumerate() {
        for (ci, c) in p.claims.iter().enumerate() {
            if span_hedge(&s.pack, c).is_some() {
                hedged += 1;
            }
            if let Some(why) = dropped_hedge(&s.pack, c) {
                f.push(finding(
                    "crux.drift_hedge",
                    claim_at(pi, ci, c),
                    format!("{why}; keep the hedge, or mark what the claim adds as inference"),
                ));
            }
            let span_numbers: BTreeSet<String> = c
                .evidence
                .iter()
                .filter(|r| located_quote(&s.pack, r).is_some())
                .flat_map(|r| numbers(&r.quote))
                .collect();
            let claim_numbers = numbers(&c.text);
            if !span_numbers.is_empty()
                && !claim_numbers.is_empty()
                && span_numbers.is_disjoint(&claim_numbers)
            {
                f.push(finding(
                    "crux.drift_number",
                    claim_at(pi, ci, c),
                    format!(
                        "the claim states {} but its quoted span says {}; restate the source's \
                         figure, or show the arithmetic with the source's figure in it",
                        join(&claim_numbers),
                        join(&span_numbers)
                    ),
                ));
            }
        }
    }
    (f, format!("{hedged} claims cite hedged spans"))
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}
