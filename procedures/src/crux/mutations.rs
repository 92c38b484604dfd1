//! The eval's bad debates: each a named mutation of the baseline (seed `crux.txt`: "15
//! cases, each a named mutation of one baseline debate"), covering every failure shape
//! the seed names, including the four its deterministic layer let through.

use super::contract::{Claim, CruxReport, CruxStart, EvidenceRef, InferenceType, Side};

/// Where a bad case should be stopped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Expectation {
    /// A clean debate: it should reach an accepted crux.
    Clean,
    /// Refused by `CruxRun::start` with this rule among the findings.
    Blocked(String),
    /// Started, but the panel's gate or vote keeps any crux from being accepted.
    CaughtByPanel,
}

/// A named mutation.
pub struct Mutation {
    pub name: &'static str,
    pub what: &'static str,
    pub expect: Expectation,
    pub apply: fn(&mut CruxStart) -> Option<()>,
}

fn claim<'a>(s: &'a mut CruxStart, id: &str) -> Option<&'a mut Claim> {
    s.positions
        .iter_mut()
        .flat_map(|p| p.claims.iter_mut())
        .find(|c| c.id == id)
}

fn set_text(s: &mut CruxStart, id: &str, text: &str) -> Option<()> {
    claim(s, id)?.text = text.into();
    Some(())
}

fn blocked(rule: &str) -> Expectation {
    Expectation::Blocked(rule.into())
}

fn report(s: &mut CruxStart, r: CruxReport) -> Option<()> {
    s.simulation.as_mut()?.report = r;
    Some(())
}

/// Every bad case, in the order the eval reports them.
pub fn all() -> Vec<Mutation> {
    vec![
        Mutation {
            name: "phantom-opponent-phrase",
            what: "the pessimist names the optimist it was never shown",
            expect: blocked("crux.phantom_phrase"),
            apply: |s| {
                set_text(
                    s,
                    "p4",
                    "The optimist ignores lock-in, the real risk: sync history exports only in \
                     a proprietary format, and an open export may come in a future release.",
                )
            },
        },
        Mutation {
            name: "phantom-opponent-paraphrase",
            what: "the optimist rebuts buyers with a phrase no simple list of names holds",
            expect: blocked("crux.phantom_phrase"),
            apply: |s| {
                set_text(
                    s,
                    "o4",
                    "Those who argue for buying overlook the field: inspectors work offline for \
                     up to 6 hours a day and 41 lost-edit tickets were filed last quarter.",
                )
            },
        },
        Mutation {
            name: "phantom-opponent-substance",
            what: "the pessimist answers the optimist's own figure and framing without any \
                   flagged phrase (the seed's first escape)",
            expect: blocked("crux.phantom_substance"),
            apply: |s| {
                set_text(
                    s,
                    "p3",
                    "A Syncwell bill passing $200,000 a year is not the part we most need to \
                     own: it assumes roughly 1,900 devices, which depends on two pending \
                     municipal contracts, and at today's 700 devices Syncwell costs about \
                     $75,600 a year.",
                )
            },
        },
        Mutation {
            name: "generic-position",
            what: "the optimist's case reads the same for any build-vs-buy call (the seed's \
                   second escape)",
            expect: blocked("crux.generic_position"),
            apply: generic_optimist,
        },
        Mutation {
            name: "mislabelled-inference-figure",
            what: "an extrapolation marked as a direct read with high confidence (the seed's \
                   third escape)",
            expect: blocked("crux.direct_read_unsupported"),
            apply: |s| {
                let c = claim(s, "o3")?;
                c.inference = InferenceType::DirectRead;
                c.confidence = 0.95;
                Some(())
            },
        },
        Mutation {
            name: "mislabelled-inference-terms",
            what: "a direct read whose key terms its quoted span never says",
            expect: blocked("crux.direct_read_unsupported"),
            apply: |s| {
                let c = claim(s, "p4")?;
                c.text = "Syncwell would keep every inspection record captive in its relay, and \
                          leaving means rebuilding the archive by hand."
                    .into();
                c.inference = InferenceType::DirectRead;
                c.confidence = 0.8;
                Some(())
            },
        },
        Mutation {
            name: "overconfident-extrapolation",
            what: "an extrapolation at a confidence no extrapolation can have",
            expect: blocked("crux.overconfident"),
            apply: |s| {
                claim(s, "o3")?.confidence = 0.95;
                Some(())
            },
        },
        Mutation {
            name: "evidence-drift-hedge-figure",
            what: "\"up to 6 hours\" restated as \"6 hours\" (the seed's fourth escape)",
            expect: blocked("crux.drift_hedge"),
            apply: |s| {
                set_text(
                    s,
                    "o4",
                    "Conflict resolution is the part we most need to own: inspectors work \
                     offline 6 hours a day and 41 lost-edit tickets were filed last quarter.",
                )
            },
        },
        Mutation {
            name: "evidence-drift-hedge-word",
            what: "\"may be offered in a future release\" restated as a promise",
            expect: blocked("crux.drift_hedge"),
            apply: |s| {
                set_text(
                    s,
                    "p4",
                    "Lock-in, not price, is what to negotiate: sync history exports only in a \
                     proprietary format, and Syncwell will ship a documented open export in a \
                     future release.",
                )
            },
        },
        Mutation {
            name: "evidence-drift-number",
            what: "the renewal rise of 18% restated as 28%",
            expect: blocked("crux.drift_number"),
            apply: |s| {
                set_text(
                    s,
                    "o2",
                    "Renewal prices have not held: both reference customers paid 28% more at \
                     each of their last two renewals, so today's price is a floor, not a \
                     ceiling.",
                )
            },
        },
        Mutation {
            name: "length-asymmetry",
            what: "the pessimist argues 30% longer than the optimist, both within budget",
            expect: blocked("crux.length_ratio"),
            apply: |s| {
                let p = s.positions.iter_mut().find(|p| p.side == Side::Pessimist)?;
                p.claims.push(Claim {
                    id: "p5".into(),
                    text: "Outages are already covered: enterprise terms include a 99.9% uptime \
                           commitment for the relay service, so field sync would not rest on \
                           an unbacked promise."
                        .into(),
                    evidence: vec![EvidenceRef {
                        item: "E1".into(),
                        quote: "Enterprise terms include a 99.9% uptime commitment for the \
                                relay service."
                            .into(),
                    }],
                    inference: InferenceType::Inference,
                    confidence: 0.6,
                });
                Some(())
            },
        },
        Mutation {
            name: "over-budget",
            what: "both positions run past a budget of 150 words",
            expect: blocked("crux.over_budget"),
            apply: |s| {
                s.word_budget = 150;
                Some(())
            },
        },
        Mutation {
            name: "unresolvable-reference",
            what: "a claim cites item E7, which the pack does not have",
            expect: blocked("crux.unresolved_reference"),
            apply: |s| {
                claim(s, "o2")?.evidence.first_mut()?.item = "E7".into();
                Some(())
            },
        },
        Mutation {
            name: "quote-not-in-source",
            what: "a quote says $8 where the price sheet says $9",
            expect: blocked("crux.quote_not_in_source"),
            apply: |s| {
                claim(s, "o1")?.evidence.first_mut()?.quote =
                    "$8 per active device per month".into();
                Some(())
            },
        },
        Mutation {
            name: "altered-pack",
            what: "the pessimist was written from a pack whose forecast says 1,400 devices",
            expect: blocked("crux.pack_hash"),
            apply: |s| {
                let mut altered = s.pack.clone();
                let item = altered.items.iter_mut().find(|i| i.id == "E5")?;
                item.text = item.text.replace("1,900", "1,400");
                let hash = altered.content_hash();
                s.positions
                    .iter_mut()
                    .find(|p| p.side == Side::Pessimist)?
                    .pack_hash = hash;
                Some(())
            },
        },
        Mutation {
            name: "vague-crux-confident-verdict",
            what: "the mediators return \"it depends, more research is needed\" with a \
                   confident verdict for the optimist",
            expect: Expectation::CaughtByPanel,
            apply: |s| {
                report(
                    s,
                    CruxReport {
                        primary_crux: "It depends on many factors; more research is needed.".into(),
                        why_both_depend: "Both positions make reasonable points and each has \
                                          merit, so the answer depends on the situation."
                            .into(),
                        resolved_by: "More research into the options over time.".into(),
                        verdict_warranted: true,
                        leaning: Some(Side::Optimist),
                    },
                )
            },
        },
        Mutation {
            name: "unspecific-crux",
            what: "the mediators name a crux in no one's terms but their own",
            expect: Expectation::CaughtByPanel,
            apply: |s| {
                report(
                    s,
                    CruxReport {
                        primary_crux: "Whether this is a sound decision for the company.".into(),
                        why_both_depend: "Each position assumes the decision is sound or \
                                          unsound for the company as a whole."
                            .into(),
                        resolved_by: "A review of the company's strategic priorities by the \
                                      leadership."
                            .into(),
                        verdict_warranted: false,
                        leaning: None,
                    },
                )
            },
        },
    ]
}

/// The optimist rewritten as boilerplate: valid references, right length, no subject.
fn generic_optimist(s: &mut CruxStart) -> Option<()> {
    let p = s.positions.iter_mut().find(|p| p.side == Side::Optimist)?;
    p.thesis = "Building is the strategic choice: owning the technology gives us control over \
                our roadmap and a lasting advantage."
        .into();
    let texts = [
        "Owning the core technology means we are never tied to another company's priorities \
         and can move at our own pace.",
        "Vendors raise prices once customers depend on them, so the long-term cost of buying \
         is higher than it looks today.",
        "A capability we build ourselves becomes expertise we keep, and that knowledge can \
         compound for the business over the years.",
        "Our team understands our users better than any outside provider ever could, so what \
         we build will fit them better.",
    ];
    for (c, t) in p.claims.iter_mut().zip(texts) {
        c.text = t.into();
        c.inference = InferenceType::Inference;
        c.confidence = 0.6;
    }
    Some(())
}
