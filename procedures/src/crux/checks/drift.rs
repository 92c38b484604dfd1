//! Evidence drift (seed `crux.txt`: "a claim cites a real source, then restates it as
//! something stronger than the source actually said"). Two shapes code can see:
//!
//! - `crux.drift_hedge`: the source qualifies what the claim restates, and the claim drops
//!   the qualifier. A figure the source hedges ("roughly 1,900", "estimated 140") or bounds
//!   ("up to 6 hours", "at most 5 TB") must keep a hedge in its clause, or a bound next to
//!   it ("the 400-developer limit", "capped at 15"). A bound is not a hedge: it is part of
//!   the figure, so a span whose only qualifier is a bound asks nothing of the rest of the
//!   claim. A verbal hedge ("may", "in some cases") must survive in a direct read; a claim
//!   labelled inference or extrapolation may conclude in its own words, but the clause in
//!   which it restates the hedged source clause must keep a hedge.
//! - `crux.drift_number`: the span has figures and the claim has figures, but none of
//!   the span's: the claim restates the number differently.

use std::collections::{BTreeMap, BTreeSet};

use super::{claim_at, finding, located_quote, quote_context, quote_context_text};
use crate::crux::contract::{Claim, CruxStart, EvidencePack, InferenceType};
use crate::crux::words::{
    clauses, contains_phrase, content_stems, hedge_tokens, is_number, numbers,
};
use crate::panel::Finding;

/// Tokens before a quote (and before a figure) that still qualify it.
pub const HEDGE_WINDOW: usize = 3;

/// Tokens after a figure that can still bound it ("400-developer limit").
pub const BOUND_WINDOW_AFTER: usize = 3;

/// A claim clause restates a hedged source clause when it shares this many content
/// stems with it.
pub const RESTATED_STEMS: usize = 2;

/// Hedges a source uses: they mark what it says as uncertain.
pub const SOURCE_HEDGES: &[&str] = &[
    "may",
    "might",
    "could",
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

/// Upper bounds a source puts on a figure. They are not hedges (a tier "for up to 400
/// developers" is certain), but a claim that drops one states more than the source did.
pub const SOURCE_BOUNDS: &[&str] = &[
    "up to",
    "as much as",
    "as many as",
    "as little as",
    "as few as",
    "at most",
    "no more than",
    "not more than",
    "less than",
    "fewer than",
    "a maximum of",
    "limited to",
    "capped at",
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
    "unlikely",
    "would",
    "some",
    "if",
    "assuming",
    "uncertain",
    "unclear",
    "not guaranteed",
    "claims",
    "hopes",
    "expects",
    "expected",
    "unproven",
];

/// Words just before a figure that keep it a bound or a threshold in a claim: the
/// source's bounds, and words that use the figure as a limit ("under 400", "past 400").
const CLAIM_BOUNDS_BEFORE: &[&str] = &[
    "at the most",
    "maximum",
    "max",
    "limit",
    "cap",
    "caps",
    "capped",
    "ceiling",
    "allowance",
    "quota",
    "within",
    "under",
    "below",
    "over",
    "above",
    "beyond",
    "past",
    "exceed",
    "exceeds",
    "exceeding",
    "more than",
];

/// Words just after a figure that keep it a bound ("the 200-file ceiling", "25 or fewer").
const CLAIM_BOUNDS_AFTER: &[&str] = &[
    "limit",
    "limits",
    "cap",
    "ceiling",
    "maximum",
    "max",
    "allowance",
    "quota",
    "threshold",
    "or fewer",
    "or less",
    "at most",
    "at the most",
];

/// Words skipped when looking for what stands next to a figure in a claim, so that
/// "more than the plan's 60" keeps its bound as "more than 60" does.
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "its", "their", "our", "your", "his", "her", "this", "that", "these",
    "those", "each",
];

pub(crate) fn has_any(toks: &[String], phrases: &[&'static str]) -> Option<&'static str> {
    phrases
        .iter()
        .find(|p| contains_phrase(toks, &p.split(' ').collect::<Vec<_>>()))
        .copied()
}

/// The first hedge in the span's context, if the span is hedged. Bounds do not count: a
/// read of "up to 400 developers" is no less sure for the bound.
pub(crate) fn span_hedge(pack: &EvidencePack, claim: &Claim) -> Option<&'static str> {
    claim
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
        .find_map(|r| has_any(&quote_context(pack, r, HEDGE_WINDOW), SOURCE_HEDGES))
}

/// Does a span of the claim bound a figure ("up to 400 developers")? For the record only.
fn span_bounds_a_figure(pack: &EvidencePack, claim: &Claim) -> bool {
    claim
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
        .any(|r| {
            qualified_numbers(&quote_context(pack, r, HEDGE_WINDOW))
                .values()
                .any(|q| matches!(q, Qualifier::Bound(_)))
        })
}

fn hedged(toks: &[String]) -> bool {
    has_any(toks, SOURCE_HEDGES).is_some() || has_any(toks, CLAIM_HEDGES).is_some()
}

/// How the source qualifies a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qualifier {
    Hedge(&'static str),
    Bound(&'static str),
}

impl Qualifier {
    fn describe(self, n: &str) -> String {
        match self {
            Qualifier::Hedge(h) => format!("the source hedges {n} (\"{h}\")"),
            Qualifier::Bound(b) => format!("the source bounds {n} (\"{b}\")"),
        }
    }
}

/// Figures a hedge or a bound just before qualifies ("roughly 1,900", "up to 6 hours"). A
/// hedge wins over a bound ("may take up to 4 days").
fn qualified_numbers(toks: &[String]) -> BTreeMap<String, Qualifier> {
    let mut out = BTreeMap::new();
    for (i, t) in toks.iter().enumerate() {
        if !is_number(t) {
            continue;
        }
        let window = toks.get(i.saturating_sub(HEDGE_WINDOW)..i).unwrap_or(&[]);
        let q = has_any(window, SOURCE_HEDGES)
            .map(Qualifier::Hedge)
            .or_else(|| has_any(window, SOURCE_BOUNDS).map(Qualifier::Bound));
        if let Some(q) = q {
            for n in numbers(t) {
                out.insert(n, q);
            }
        }
    }
    out
}

/// Does the claim keep a qualifier on some occurrence of the figure `n`: a hedge anywhere
/// in the figure's clause (a hedge qualifies its clause: "140 potholes by the engineer's
/// estimate"), or a bound right next to it (determiners aside)? A verb of capacity is not
/// enough ("seats 9" for "seats up to 9"): "cover", "hold" and "carry" also measure ("who
/// cover 14 km"), and a bound is cheap to keep.
fn keeps_qualifier(claim: &str, n: &str) -> bool {
    clauses(claim).iter().any(|clause| {
        let toks = hedge_tokens(clause);
        let near: Vec<&String> = toks
            .iter()
            .filter(|t| !DETERMINERS.contains(&t.as_str()))
            .collect();
        near.iter().enumerate().any(|(k, t)| {
            if !(is_number(t) && numbers(t).contains(n)) {
                return false;
            }
            let word = |j: usize| near.get(j).map(|w| (*w).clone());
            let before: Vec<String> = (k.saturating_sub(HEDGE_WINDOW)..k)
                .filter_map(word)
                .collect();
            let after: Vec<String> = (k + 1..k + 1 + BOUND_WINDOW_AFTER)
                .filter_map(word)
                .collect();
            hedged(&toks)
                || has_any(&before, SOURCE_BOUNDS).is_some()
                || has_any(&before, CLAIM_BOUNDS_BEFORE).is_some()
                || has_any(&after, CLAIM_BOUNDS_AFTER).is_some()
        })
    })
}

/// The claim's first clause that restates a hedged clause of the span's context without
/// a hedge of its own, if any.
fn unhedged_restatement(context: &str, claim: &str) -> Option<String> {
    let hedged_source: Vec<BTreeSet<String>> = clauses(context)
        .iter()
        .filter(|c| has_any(&hedge_tokens(c), SOURCE_HEDGES).is_some())
        .map(|c| content_stems(c).into_iter().collect())
        .collect();
    clauses(claim)
        .into_iter()
        .find(|clause| {
            let stems: BTreeSet<String> = content_stems(clause).into_iter().collect();
            hedged_source
                .iter()
                .any(|s| s.intersection(&stems).count() >= RESTATED_STEMS)
                && !hedged(&hedge_tokens(clause))
        })
        .map(|c| c.trim().to_string())
}

/// The hedge or bound a claim drops, if it drops one, with the fix.
fn dropped_hedge(pack: &EvidencePack, c: &Claim) -> Option<String> {
    let claim = hedge_tokens(&c.text);
    let claim_numbers = numbers(&c.text);
    let read = c.inference == InferenceType::DirectRead;
    for r in c
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
    {
        let ctx = quote_context(pack, r, HEDGE_WINDOW);
        let qualified = qualified_numbers(&ctx);
        let restated: Vec<(&String, &Qualifier)> = qualified
            .iter()
            .filter(|(n, _)| claim_numbers.contains(*n))
            .collect();
        if let Some((n, q)) = restated.iter().find(|(n, _)| !keeps_qualifier(&c.text, n)) {
            let keep = match q {
                Qualifier::Hedge(_) => "keep a hedge in the clause that states it",
                Qualifier::Bound(_) => {
                    "keep the bound next to it (\"up to\", \"at most\", \"limit\")"
                }
            };
            return Some(format!(
                "{} but the claim states it flatly; {keep}",
                q.describe(n)
            ));
        }
        let Some(h) = has_any(&ctx, SOURCE_HEDGES) else {
            continue;
        };
        if !restated.is_empty() {
            continue;
        }
        if read && !hedged(&claim) {
            return Some(format!(
                "the source hedges (\"{h}\") but this direct read states it flatly; keep the \
                 hedge, since a read is no surer than its source"
            ));
        }
        if !read
            && let Some(clause) =
                unhedged_restatement(&quote_context_text(pack, r, HEDGE_WINDOW), &c.text)
        {
            return Some(format!(
                "the source hedges (\"{h}\") but the claim restates it flatly in \"{clause}\"; \
                 keep the hedge in that clause (the {} label covers what the claim concludes, \
                 not what it restates)",
                c.inference.name()
            ));
        }
    }
    None
}

pub fn check(s: &CruxStart) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let mut hedged_spans = 0usize;
    let mut bounded = 0usize;
    for (pi, p) in s.positions.iter().enumerate() {
        for (ci, c) in p.claims.iter().enumerate() {
            if span_hedge(&s.pack, c).is_some() {
                hedged_spans += 1;
            }
            if span_bounds_a_figure(&s.pack, c) {
                bounded += 1;
            }
            if let Some(why) = dropped_hedge(&s.pack, c) {
                f.push(finding("crux.drift_hedge", claim_at(pi, ci, c), why));
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
    (
        f,
        format!("{hedged_spans} claims cite hedged spans, {bounded} cite bounded figures"),
    )
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}
