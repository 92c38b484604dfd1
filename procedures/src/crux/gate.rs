//! The report gate (seed `crux.txt`, "Gate": "the mediator must name a concrete
//! primary_crux before any verdict, checked in code"). Every crux report a panel
//! arbiter returns passes through it; a report that fails is kept on the record as a
//! gate failure and does not count (docs/CRUX.md, "Gate rules").

use std::collections::BTreeSet;

use super::checks::finding;
use super::contract::{CruxReport, decode_report};
use super::words::{content_stems, tokens, word_count};
use crate::panel::Finding;

/// A crux needs this many content words to be specific...
pub const MIN_CRUX_CONTENT_WORDS: usize = 4;
/// ...of which this many name things in the decision, the pack or the positions.
pub const MIN_CRUX_ANCHORS: usize = 2;
pub const MIN_RESOLUTION_CONTENT_WORDS: usize = 3;
pub const MIN_DEPENDENCE_WORDS: usize = 8;
pub const MAX_FIELD_BYTES: usize = 4_000;

/// Phrases that name no unknown anyone could go and check.
const VAGUE: &[&str] = &[
    "more research",
    "further research",
    "more study",
    "further study",
    "further analysis",
    "more analysis",
    "more information",
    "more data is needed",
    "it depends",
    "depends on many",
    "depends on various",
    "many factors",
    "various factors",
    "several factors",
    "a number of factors",
    "uncertainty about the future",
    "the future is uncertain",
    "future uncertainty",
    "time will tell",
    "remains to be seen",
    "too early to tell",
    "hard to say",
    "difficult to say",
    "hard to know",
    "case by case",
    "both sides have",
    "on balance",
    "the right choice",
    "the best option",
    "overall strategy",
    "market conditions",
    "how things play out",
    "unknown unknowns",
];

/// The vague phrase a text contains, if any.
pub fn vague_phrase(text: &str) -> Option<&'static str> {
    let toks = tokens(text);
    VAGUE
        .iter()
        .find(|p| super::words::contains_phrase(&toks, &p.split(' ').collect::<Vec<_>>()))
        .copied()
}

/// Checks one arbiter's report. `anchors` are the content stems of the decision, the
/// pack and both positions; `yes` is the arbiter's answer (`None`: abstained).
pub fn gate(
    rationale: &str,
    yes: Option<bool>,
    anchors: &BTreeSet<String>,
) -> Result<CruxReport, (Option<CruxReport>, Vec<Finding>)> {
    let report = decode_report(rationale).map_err(|e| {
        (
            None,
            vec![finding(
                "crux.gate.malformed",
                "rationale",
                format!("not a crux report: {e}; return the crux-report schema's JSON"),
            )],
        )
    })?;
    let f = findings(&report, yes, anchors);
    if f.is_empty() {
        Ok(report)
    } else {
        Err((Some(report), f))
    }
}

fn findings(r: &CruxReport, yes: Option<bool>, anchors: &BTreeSet<String>) -> Vec<Finding> {
    let mut f = Vec::new();
    for (name, text) in [
        ("primary_crux", &r.primary_crux),
        ("why_both_depend", &r.why_both_depend),
        ("resolved_by", &r.resolved_by),
    ] {
        if text.len() > MAX_FIELD_BYTES {
            f.push(finding(
                "crux.gate.size",
                name,
                format!("{} bytes, more than {MAX_FIELD_BYTES}", text.len()),
            ));
        }
    }
    let crux = r.primary_crux.trim();
    let stems = content_stems(crux);
    if crux.is_empty() {
        f.push(finding(
            "crux.gate.empty_crux",
            "primary_crux",
            "no crux named; name the single unknown before any verdict",
        ));
    } else if let Some(v) = vague_phrase(crux) {
        let rule = if r.verdict_warranted {
            "crux.gate.vague_verdict"
        } else {
            "crux.gate.vague_crux"
        };
        f.push(finding(
            rule,
            "primary_crux",
            format!(
                "\"{v}\" names nothing anyone could check{}; name a concrete fact, figure or \
                 event both positions depend on",
                if r.verdict_warranted {
                    ", and a confident verdict on a vague crux is averaging, not mediation"
                } else {
                    ""
                }
            ),
        ));
    } else {
        let anchored = stems.iter().filter(|s| anchors.contains(*s)).count();
        if stems.len() < MIN_CRUX_CONTENT_WORDS || anchored < MIN_CRUX_ANCHORS {
            f.push(finding(
                "crux.gate.unspecific_crux",
                "primary_crux",
                format!(
                    "{} content words, {anchored} of them from this decision, pack or positions \
                     (need {MIN_CRUX_CONTENT_WORDS} and {MIN_CRUX_ANCHORS}); name the unknown in \
                     this debate's own terms",
                    stems.len()
                ),
            ));
        }
    }
    let resolution = content_stems(&r.resolved_by);
    if resolution.len() < MIN_RESOLUTION_CONTENT_WORDS || vague_phrase(&r.resolved_by).is_some() {
        f.push(finding(
            "crux.gate.uncheckable",
            "resolved_by",
            format!(
                "\"{}\" is not a check anyone could run; say what observation, figure or \
                 document would settle the crux",
                r.resolved_by.trim()
            ),
        ));
    }
    if word_count(&r.why_both_depend) < MIN_DEPENDENCE_WORDS {
        f.push(finding(
            "crux.gate.no_dependence",
            "why_both_depend",
            format!(
                "fewer than {MIN_DEPENDENCE_WORDS} words; say how each position stands or falls \
                 with the crux"
            ),
        ));
    }
    if let Some(y) = yes
        && y != r.verdict_warranted
    {
        f.push(finding(
            "crux.gate.answer_mismatch",
            "verdict_warranted",
            format!(
                "the ruling answers {} but the report says verdict_warranted {}; they must agree",
                if y { "yes" } else { "no" },
                r.verdict_warranted
            ),
        ));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> BTreeSet<String> {
        content_stems("municipal contracts device fleet Syncwell renewal migration records")
            .into_iter()
            .collect()
    }

    fn report(crux: &str, resolved: &str, warranted: bool) -> String {
        serde_json::to_string(&CruxReport {
            primary_crux: crux.into(),
            why_both_depend: "Each position's cost comparison turns on the size of the device \
                              fleet in three years."
                .into(),
            resolved_by: resolved.into(),
            verdict_warranted: warranted,
            leaning: None,
        })
        .unwrap()
    }

    fn rules(r: Result<CruxReport, (Option<CruxReport>, Vec<Finding>)>) -> Vec<String> {
        match r {
            Ok(_) => Vec::new(),
            Err((_, f)) => f.into_iter().map(|f| f.rule).collect(),
        }
    }

    const GOOD: &str = "Whether the two municipal contracts are signed, growing the device fleet";
    const CHECK: &str = "Ask sales for the contracts' signing status";

    #[test]
    fn a_concrete_checkable_crux_passes() {
        assert!(gate(&report(GOOD, CHECK, false), Some(false), &anchors()).is_ok());
        assert!(
            gate(&report(GOOD, CHECK, true), None, &anchors()).is_ok(),
            "abstained"
        );
    }

    #[test]
    fn vague_cruxes_fail_and_a_confident_verdict_on_one_is_named_as_such() {
        let a = anchors();
        let vague = "It depends on the device fleet and municipal contracts";
        assert_eq!(
            rules(gate(&report(vague, CHECK, true), Some(true), &a)),
            ["crux.gate.vague_verdict"]
        );
        assert_eq!(
            rules(gate(&report(vague, CHECK, false), Some(false), &a)),
            ["crux.gate.vague_crux"]
        );
        for v in [
            "More research is needed.",
            "Uncertainty about the future of the fleet",
            "Time will tell",
        ] {
            assert!(!rules(gate(&report(v, CHECK, false), Some(false), &a)).is_empty());
        }
    }

    #[test]
    fn unspecific_uncheckable_unexplained_or_contradicted_reports_fail() {
        let a = anchors();
        let r =
            |c: &str, res: &str, w: bool, yes: bool| rules(gate(&report(c, res, w), Some(yes), &a));
        assert_eq!(r("", CHECK, false, false), ["crux.gate.empty_crux"]);
        assert_eq!(
            r(
                "Whether leadership likes the plan overall",
                CHECK,
                false,
                false
            ),
            ["crux.gate.unspecific_crux"]
        );
        assert_eq!(r(GOOD, "Wait", false, false), ["crux.gate.uncheckable"]);
        assert_eq!(r(GOOD, CHECK, true, false), ["crux.gate.answer_mismatch"]);
        let short = serde_json::to_string(&CruxReport {
            primary_crux: GOOD.into(),
            why_both_depend: "Both need it.".into(),
            resolved_by: CHECK.into(),
            verdict_warranted: false,
            leaning: None,
        })
        .unwrap();
        assert_eq!(
            rules(gate(&short, Some(false), &a)),
            ["crux.gate.no_dependence"]
        );
        assert_eq!(
            rules(gate("{\"primary_crux\": 3}", Some(false), &a)),
            ["crux.gate.malformed"]
        );
    }
}
