//! References: every claim cites evidence, every cited item is in the pack, and every
//! quoted span occurs verbatim in the item it cites (docs/CRUX.md, "References").

use super::{claim_at, finding};
use crate::crux::contract::{CruxStart, EvidencePack, EvidenceRef};
use crate::crux::words::{hedge_tokens, normalise_space};
use crate::panel::Finding;

/// The item text and the byte offset of the quote in it (both whitespace-normalised),
/// if the reference resolves and the quote occurs verbatim.
pub(crate) fn located_quote(pack: &EvidencePack, r: &EvidenceRef) -> Option<(String, usize)> {
    let item = pack.item(&r.item)?;
    let text = normalise_space(&item.text);
    let quote = normalise_space(&r.quote);
    if quote.is_empty() {
        return None;
    }
    text.find(&quote).map(|at| (text, at))
}

/// The part of `text`'s sentence before byte `at` (the quote's start): from the last
/// sentence or clause end (". ", "; ", "! ", "? ") before it.
fn sentence_before(text: &str, at: usize) -> &str {
    let before_text = text.get(..at).unwrap_or("");
    let sentence_start = [". ", "; ", "! ", "? "]
        .iter()
        .filter_map(|end| before_text.rfind(end).map(|i| i + end.len()))
        .max()
        .unwrap_or(0);
    before_text.get(sentence_start..).unwrap_or("")
}

/// The quote's tokens with the `before` tokens that precede it in its sentence: a hedge
/// just outside the quoted span ("up to" before "9 months") still qualifies it.
pub(crate) fn quote_context(pack: &EvidencePack, r: &EvidenceRef, before: usize) -> Vec<String> {
    let Some((text, at)) = located_quote(pack, r) else {
        return hedge_tokens(&r.quote);
    };
    // A hedge in the previous sentence does not qualify this one.
    let prefix = hedge_tokens(sentence_before(&text, at));
    let start = prefix.len().saturating_sub(before);
    let mut out: Vec<String> = prefix.get(start..).unwrap_or(&[]).to_vec();
    out.extend(hedge_tokens(&r.quote));
    out
}

/// As [`quote_context`], but as text with its punctuation, so it can be cut into clauses:
/// the last `before` words of the quote's sentence before it, then the quote.
pub(crate) fn quote_context_text(pack: &EvidencePack, r: &EvidenceRef, before: usize) -> String {
    let Some((text, at)) = located_quote(pack, r) else {
        return normalise_space(&r.quote);
    };
    let words: Vec<&str> = sentence_before(&text, at).split_whitespace().collect();
    let prefix = words
        .get(words.len().saturating_sub(before)..)
        .unwrap_or(&[]);
    let mut out = prefix.join(" ");
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(&normalise_space(&r.quote));
    out
}

pub fn check(s: &CruxStart) -> (Vec<Finding>, String) {
    let mut f = Vec::new();
    let mut refs = 0usize;
    for (pi, p) in s.positions.iter().enumerate() {
        for (ci, c) in p.claims.iter().enumerate() {
            if c.evidence.is_empty() {
                f.push(finding(
                    "crux.unsupported_claim",
                    claim_at(pi, ci, c),
                    "cites no evidence; cite the pack item and quote the span it rests on",
                ));
            }
            for (ri, r) in c.evidence.iter().enumerate() {
                refs += 1;
                let at = format!("{} evidence[{ri}]", claim_at(pi, ci, c));
                let Some(item) = s.pack.item(&r.item) else {
                    f.push(finding(
                        "crux.unresolved_reference",
                        at,
                        format!(
                            "item {} is not in the pack; cite one of its items ({})",
                            r.item,
                            item_ids(&s.pack)
                        ),
                    ));
                    continue;
                };
                if normalise_space(&r.quote).is_empty() {
                    f.push(finding(
                        "crux.quote_empty",
                        at,
                        "the quote is empty; quote the span of the item the claim rests on",
                    ));
                } else if located_quote(&s.pack, r).is_none() {
                    f.push(finding(
                        "crux.quote_not_in_source",
                        at,
                        format!(
                            "\"{}\" does not occur verbatim in item {}; copy the span exactly",
                            excerpt(&r.quote),
                            item.id
                        ),
                    ));
                }
            }
        }
    }
    (f, format!("{refs} references"))
}

fn item_ids(pack: &EvidencePack) -> String {
    let ids: Vec<&str> = pack.items.iter().take(12).map(|i| i.id.as_str()).collect();
    ids.join(", ")
}

pub(crate) fn excerpt(text: &str) -> String {
    let t = normalise_space(text);
    if t.chars().count() <= 80 {
        t
    } else {
        format!("{}…", t.chars().take(80).collect::<String>())
    }
}
