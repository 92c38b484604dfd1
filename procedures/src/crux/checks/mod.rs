//! The deterministic layer (docs/CRUX.md, "Checks"; seed `crux.txt`, "Parallel
//! isolation" and "Symmetry enforcement", made stronger): every check runs before a
//! panel is drawn, and any finding refuses the start.
//!
//! Shape checks run first and alone (the others assume one position per side and sane
//! sizes); then every family runs and all findings are returned together, so an
//! advocate's author sees every problem at once.

mod drift;
mod generic;
mod inference;
mod phantom;
mod references;
mod shape;
mod symmetry;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::contract::{Claim, CruxStart, EvidencePack, Position};
use super::words::{content_ngrams, content_stems, numbers};
use crate::panel::Finding;

/// What one check family measured on a start, kept on the run (and printed) whether it
/// passed or not, so a refusal's margin is visible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub family: String,
    pub passed: bool,
    pub measured: String,
}

/// Every finding and every measurement of one start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub records: Vec<CheckRecord>,
}

impl Checked {
    fn family(&mut self, family: &str, findings: Vec<Finding>, measured: String) {
        self.records.push(CheckRecord {
            family: family.into(),
            passed: findings.is_empty(),
            measured,
        });
        self.findings.extend(findings);
    }
}

/// The pack (and the decision) as vocabulary: what a position may share without
/// having seen the other one, and what makes it specific to this decision.
pub(crate) struct PackVocabulary {
    /// Content stems of every item and of the decision.
    pub stems: BTreeSet<String>,
    /// Content stems per item (and the decision as a last entry).
    pub per_item: Vec<BTreeSet<String>>,
    pub numbers: BTreeSet<String>,
    pub ngrams: BTreeSet<String>,
}

impl PackVocabulary {
    pub fn new(decision: &str, pack: &EvidencePack) -> Self {
        let texts: Vec<String> = pack
            .items
            .iter()
            .map(|i| format!("{} {}", i.source, i.text))
            .chain(std::iter::once(decision.to_string()))
            .collect();
        let per_item: Vec<BTreeSet<String>> = texts
            .iter()
            .map(|t| content_stems(t).into_iter().collect())
            .collect();
        PackVocabulary {
            stems: per_item.iter().flatten().cloned().collect(),
            numbers: texts.iter().flat_map(|t| numbers(t)).collect(),
            ngrams: texts
                .iter()
                .flat_map(|t| content_ngrams(t, phantom::NGRAM))
                .collect(),
            per_item,
        }
    }
}

/// A claim's place, for findings: JSON path and id.
pub(crate) fn claim_at(pi: usize, ci: usize, claim: &Claim) -> String {
    format!("positions[{pi}].claims[{ci}] (claim {})", claim.id)
}

pub(crate) fn finding(rule: &str, at: impl Into<String>, reason: impl Into<String>) -> Finding {
    Finding {
        rule: rule.into(),
        at: at.into(),
        reason: reason.into(),
    }
}

/// A position's own prose: thesis and claim texts, without quotes (quotes are pack
/// text and would make any position look specific and any pair look alike).
pub(crate) fn own_prose(p: &Position) -> String {
    std::iter::once(p.thesis.as_str())
        .chain(p.claims.iter().map(|c| c.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the deterministic layer over a start document.
pub fn check(start: &CruxStart) -> Checked {
    let mut out = Checked::default();
    let shape = shape::check(start);
    out.family(
        "shape",
        shape,
        "sizes, ids, sides, ranges, advocates".into(),
    );
    if !out.findings.is_empty() {
        return out;
    }
    let vocab = PackVocabulary::new(&start.decision, &start.pack);
    let (f, m) = symmetry::check(start);
    out.family("symmetry", f, m);
    let (f, m) = references::check(start);
    out.family("references", f, m);
    let (f, m) = phantom::check(start, &vocab);
    out.family("phantom", f, m);
    let (f, m) = generic::check(start, &vocab);
    out.family("generic", f, m);
    let (f, m) = drift::check(start);
    out.family("drift", f, m);
    let (f, m) = inference::check(start);
    out.family("inference", f, m);
    out
}

pub(crate) use references::{located_quote, quote_context, quote_context_text};

#[cfg(test)]
mod tests;
