//! Mislabelled inference (seed `crux.txt`: "an extrapolation marked as a direct read with
//! high confidence"; the seed's deterministic layer never checked the labels). What code
//! can check:
//!
//! - `crux.direct_read_unsupported`: a claim marked `direct_read` whose figures are in
//!   neither its quoted spans nor the cited items' source labels, or most of whose key terms are in neither the spans nor the cited
//!   sources' names: it reads more than the span says.
//! - `crux.overconfident`: a confidence the label cannot carry: an extrapolation above
//!   0.8, or a direct read of a hedged span above 0.85 (a read is no surer than what it
//!   reads). A bound is not a hedge: a read of "for up to 400 developers" is as sure as
//!   the price sheet it reads (`drift::span_hedge`). Inference claims carry no cap here:
//!   their label already says they go beyond the span.

use std::collections::BTreeSet;

use super::drift::span_hedge;
use super::{claim_at, finding, located_quote};
use crate::crux::contract::{Claim, CruxStart, EvidencePack, InferenceType};
use crate::crux::words::{content_stems, numbers};
use crate::panel::Finding;

pub const MAX_EXTRAPOLATION_CONFIDENCE: f64 = 0.8;
pub const MAX_HEDGED_READ_CONFIDENCE: f64 = 0.85;
/// A direct read may use at most this share of key terms (percent) not in its spans.
pub const MAX_UNSUPPORTED_TERMS_PERCENT: usize = 40;

/// Key terms of a direct-read claim that its spans do not contain.
fn unsupported_terms(pack: &EvidencePack, c: &Claim) -> (Vec<String>, usize) {
    let mut support: BTreeSet<String> = BTreeSet::new();
    for r in c
        .evidence
        .iter()
        .filter(|r| located_quote(pack, r).is_some())
    {
        support.extend(content_stems(&r.quote));
        if let Some(item) = pack.item(&r.item) {
            support.extend(content_stems(&item.source));
        }
    }
    let terms: BTreeSet<String> = content_stems(&c.text).into_iter().collect();
    let missing = terms
        .iter()
        .filter(|t| !support.contains(*t))
        .cloned()
        .collect();
    (missing, terms.len())
}

pub fn check(s: &CruxStart) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let mut reads = 0usize;
    for (pi, p) in s.positions.iter().enumerate() {
        for (ci, c) in p.claims.iter().enumerate() {
            let at = claim_at(pi, ci, c);
            let resolved = c
                .evidence
                .iter()
                .all(|r| located_quote(&s.pack, r).is_some());
            if c.inference == InferenceType::DirectRead && resolved {
                reads += 1;
                direct_read(&s.pack, c, &at, &mut f);
            }
            if c.inference == InferenceType::Extrapolation
                && c.confidence > MAX_EXTRAPOLATION_CONFIDENCE
            {
                f.push(finding(
                    "crux.overconfident",
                    at.clone(),
                    format!(
                        "an extrapolation at confidence {:.2}; an extrapolation goes beyond the \
                         evidence and cannot exceed {MAX_EXTRAPOLATION_CONFIDENCE}",
                        c.confidence
                    ),
                ));
            }
            if c.inference == InferenceType::DirectRead
                && c.confidence > MAX_HEDGED_READ_CONFIDENCE
                && resolved
                && let Some(h) = span_hedge(&s.pack, c)
            {
                f.push(finding(
                    "crux.overconfident",
                    at,
                    format!(
                        "a direct read of a hedged span (\"{h}\") at confidence {:.2}; a read \
                         is no surer than its source, at most {MAX_HEDGED_READ_CONFIDENCE}",
                        c.confidence
                    ),
                ));
            }
        }
    }
    (
        f,
        format!("{reads} direct reads checked against their spans"),
    )
}

fn direct_read(pack: &EvidencePack, c: &Claim, at: &str, f: &mut Vec<Finding>) {
    // The cited item's source label is part of what is cited ("Staff survey, 31 of 34").
    let span_numbers: BTreeSet<String> = c
        .evidence
        .iter()
        .flat_map(|r| {
            let source = pack.item(&r.item).map_or("", |i| i.source.as_str());
            numbers(&r.quote).into_iter().chain(numbers(source))
        })
        .collect();
    let extra: Vec<String> = numbers(&c.text)
        .difference(&span_numbers)
        .cloned()
        .collect();
    if !extra.is_empty() {
        f.push(finding(
            "crux.direct_read_unsupported",
            at,
            format!(
                "marked direct_read, but {} is not in its quoted spans; a figure the span does \
                 not state is inference or extrapolation: relabel it",
                extra.join(", ")
            ),
        ));
        return;
    }
    let (missing, total) = unsupported_terms(pack, c);
    if missing.len() >= 2 && missing.len() * 100 > total * MAX_UNSUPPORTED_TERMS_PERCENT {
        f.push(finding(
            "crux.direct_read_unsupported",
            at,
            format!(
                "marked direct_read, but {} of its {total} key terms ({}) are not in its quoted \
                 spans; quote the span that says it, or relabel it inference",
                missing.len(),
                missing
                    .iter()
                    .take(6)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
}
