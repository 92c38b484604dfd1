//! Each rule fires on its mutation, names the claim, and stays silent on every clean
//! control (docs/CRUX.md, "Eval").

use super::check;
use crate::crux::contract::{CruxStart, EvidenceItem, InferenceType, Side, decode_start};
use crate::crux::eval::{BASELINE, CONTROLS};

fn baseline() -> CruxStart {
    decode_start(BASELINE.as_bytes()).unwrap()
}

fn rules(s: &CruxStart) -> Vec<(String, String)> {
    check(s)
        .findings
        .into_iter()
        .map(|f| (f.rule, f.at))
        .collect()
}

fn claim<'a>(s: &'a mut CruxStart, id: &str) -> &'a mut crate::crux::contract::Claim {
    s.positions
        .iter_mut()
        .flat_map(|p| p.claims.iter_mut())
        .find(|c| c.id == id)
        .unwrap()
}

fn fires(s: &CruxStart, rule: &str, at: &str) {
    let got = rules(s);
    assert!(
        got.iter().any(|(r, a)| r == rule && a.contains(at)),
        "{rule} at {at} not in {got:?}"
    );
}

#[test]
fn no_rule_fires_on_the_baseline_or_any_control() {
    assert!(rules(&baseline()).is_empty());
    for (name, json) in CONTROLS {
        let s = decode_start(json.as_bytes()).unwrap();
        assert!(rules(&s).is_empty(), "{name}: {:?}", rules(&s));
    }
}

#[test]
fn shape_rules_name_the_path() {
    let mut s = baseline();
    s.positions[1].side = Side::Optimist;
    fires(&s, "crux.sides", "positions");
    let mut s = baseline();
    claim(&mut s, "p2").id = "p1".into();
    fires(&s, "crux.claim_id", "positions[1].claims[1].id");
    let mut s = baseline();
    claim(&mut s, "o1").confidence = 1.5;
    fires(&s, "crux.confidence_range", "claim o1");
    let mut s = baseline();
    s.pack.items[1].id = "E1".into();
    fires(&s, "crux.item_id", "pack.items[1].id");
    let mut s = baseline();
    s.pack.items = (0..201)
        .map(|i| EvidenceItem {
            id: format!("X{i}"),
            source: "s".into(),
            text: "t".into(),
        })
        .collect();
    fires(&s, "crux.size", "pack.items");
    let mut s = baseline();
    s.advocates[1].family = " ".into();
    fires(&s, "crux.advocates", "advocates");
    let mut s = baseline();
    s.word_budget = 10;
    fires(&s, "crux.budget_range", "word_budget");
}

#[test]
fn symmetry_recomputes_words_and_the_ratio() {
    let mut s = baseline();
    s.positions[0].word_count = Some(1);
    assert!(rules(&s).is_empty(), "the declared count is never used");
    s.positions[1].pack_hash = "00".repeat(32);
    fires(&s, "crux.pack_hash", "positions[1].pack_hash");
    let mut s = baseline();
    // 170 optimist words: 212 pessimist words is within 1.25, 213 is not.
    let pad = |n: usize| vec!["evidence"; n].join(" ");
    let extra = 212 - super::symmetry::position_words(&s.positions[1]);
    s.positions[1].thesis.push_str(&format!(" {}", pad(extra)));
    assert!(!rules(&s).iter().any(|(r, _)| r == "crux.length_ratio"));
    s.positions[1].thesis.push_str(" evidence");
    fires(&s, "crux.length_ratio", "positions[1]");
}

#[test]
fn references_resolve_and_quotes_are_verbatim() {
    let mut s = baseline();
    claim(&mut s, "o1").evidence[0].quote = "$9   per active\ndevice per month".into();
    assert!(rules(&s).is_empty(), "whitespace runs compare equal");
    claim(&mut s, "o1").evidence[0].quote = "$9 per device".into();
    fires(&s, "crux.quote_not_in_source", "claim o1");
    claim(&mut s, "o1").evidence[0].quote = "  ".into();
    fires(&s, "crux.quote_empty", "claim o1");
    claim(&mut s, "o2").evidence[0].item = "E9".into();
    fires(
        &s,
        "crux.unresolved_reference",
        "positions[0].claims[1] (claim o2) evidence[0]",
    );
    claim(&mut s, "p1").evidence.clear();
    fires(&s, "crux.unsupported_claim", "claim p1");
}

#[test]
fn phantom_phrases_fire_unless_the_pack_says_them() {
    let mut s = baseline();
    claim(&mut s, "p1").text = "My opponent forgets that the estimate excludes migration of \
                                existing inspection records."
        .into();
    fires(&s, "crux.phantom_phrase", "claim p1");
    let mut s = baseline();
    s.pack.items[1]
        .text
        .push_str(" Critics claim the rises will slow.");
    let h = s.pack.content_hash();
    s.positions.iter_mut().for_each(|p| p.pack_hash = h.clone());
    claim(&mut s, "o2")
        .text
        .push_str(" Critics claim the rises will slow.");
    assert!(
        !rules(&s).iter().any(|(r, _)| r == "crux.phantom_phrase"),
        "a phrase the pack itself uses is explained"
    );
}

#[test]
fn phantom_substance_needs_wording_the_pack_does_not_explain() {
    let mut s = baseline();
    // Shared wording that the pack explains (both name the pending municipal contracts).
    claim(&mut s, "o3").text = "If two pending municipal contracts land and the fleet reaches \
                                roughly 1,900 devices, the Syncwell bill would pass $200,000 a \
                                year within three years."
        .into();
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    // The pessimist takes up the optimist's invented figure and framing.
    claim(&mut s, "p3").text.push_str(
        " A bill that would pass $200,000 a year within three years is not the part we most \
         need to own.",
    );
    fires(&s, "crux.phantom_substance", "claim o3");
    fires(&s, "crux.phantom_substance", "claim p3");
}

#[test]
fn generic_positions_are_refused_by_their_share_of_pack_words() {
    let mut s = baseline();
    s.positions[1].thesis = "Buying is the prudent choice for a company that wants to focus on \
                             what it does best."
        .into();
    for c in &mut s.positions[1].claims {
        c.text = "A proven product lets our people focus on customers instead of plumbing, \
                  which can matter more than anything we would write ourselves."
            .into();
        c.inference = InferenceType::Inference;
    }
    fires(&s, "crux.generic_position", "positions[1]");
}

#[test]
fn drift_catches_dropped_hedges_and_restated_figures() {
    let mut s = baseline();
    claim(&mut s, "o3").text = "Once the fleet reaches 1,900 devices, the Syncwell bill passes \
                                $200,000 a year within three years."
        .into();
    fires(&s, "crux.drift_hedge", "claim o3");
    let mut s = baseline();
    claim(&mut s, "p2").text = "Two engineers build a minimal engine in five months, covering \
                                forms, photo uploads and retry only."
        .into();
    fires(&s, "crux.drift_hedge", "claim p2");
    let mut s = baseline();
    claim(&mut s, "o1").text = "Syncwell charges $12 per active device per month.".into();
    claim(&mut s, "o1").inference = InferenceType::Inference;
    claim(&mut s, "o1").evidence.truncate(1);
    fires(&s, "crux.drift_number", "claim o1");
}

#[test]
fn drift_ignores_the_month_may_and_hedges_of_the_previous_sentence() {
    let mut s = baseline();
    s.pack.items[3].text = "Data from May. Inspectors work without signal for 6 hours a day. \
                            Crews may rotate. 41 lost-edit tickets were filed last quarter."
        .into();
    let h = s.pack.content_hash();
    s.positions.iter_mut().for_each(|p| p.pack_hash = h.clone());
    let c = claim(&mut s, "o4");
    c.text = "Inspectors work offline 6 hours a day and 41 lost-edit tickets were filed last \
              quarter."
        .into();
    c.evidence[0].quote = "Inspectors work without signal for 6 hours a day.".into();
    c.evidence[1].quote = "41 lost-edit tickets were filed last quarter.".into();
    assert!(
        !rules(&s).iter().any(|(r, _)| r == "crux.drift_hedge"),
        "{:?}",
        rules(&s)
    );
}

#[test]
fn inference_labels_are_checked_against_the_span() {
    let mut s = baseline();
    let c = claim(&mut s, "o3");
    c.inference = InferenceType::DirectRead;
    c.confidence = 0.7;
    fires(&s, "crux.direct_read_unsupported", "claim o3");
    let mut s = baseline();
    claim(&mut s, "p1").text = "Migration of the inspection archive will overrun and sink the \
                                whole project schedule."
        .into();
    fires(&s, "crux.direct_read_unsupported", "claim p1");
    let mut s = baseline();
    claim(&mut s, "o3").confidence = 0.81;
    fires(&s, "crux.overconfident", "claim o3");
    let mut s = baseline();
    let c = claim(&mut s, "p4");
    c.inference = InferenceType::DirectRead;
    c.confidence = 0.9;
    fires(&s, "crux.overconfident", "claim p4");
}

/// The finding texts of one rule, for checking what a finding tells its author.
fn reasons(s: &CruxStart, rule: &str) -> Vec<String> {
    check(s)
        .findings
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| f.reason)
        .collect()
}

/// The baseline with an item E7 holding `text` (both positions re-hashed), and claim o1
/// rewritten as a direct read of all of it.
fn with_e7(text: &str) -> CruxStart {
    let mut s = baseline();
    s.pack.items.push(EvidenceItem {
        id: "E7".into(),
        source: "Added for this test".into(),
        text: text.into(),
    });
    let h = s.pack.content_hash();
    s.positions.iter_mut().for_each(|p| p.pack_hash = h.clone());
    let c = claim(&mut s, "o1");
    c.text = text.into();
    c.evidence.truncate(1);
    c.evidence[0].item = "E7".into();
    c.evidence[0].quote = text.into();
    s
}

#[test]
fn a_bound_is_not_a_hedge_but_a_restated_bound_must_stay() {
    let tier = "The Team tier costs $3,200 a month for up to 400 monthly active developers.";
    // A direct read of a tier bound is as sure as the price sheet.
    let mut s = with_e7(tier);
    claim(&mut s, "o1").confidence = 0.95;
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    // A claim that uses the price and not the bound owes the bound nothing.
    let c = claim(&mut s, "o1");
    c.text = "The Team tier costs $3,200 a month.".into();
    c.inference = InferenceType::Inference;
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    // The bound kept in other words, before or after the figure.
    for kept in [
        "With 310 developers we stay under the tier's 400-developer limit.",
        "Hiring past 400 developers would leave the tier.",
        "Hiring 100 more would take us above the tier's 400.",
        "The tier is capped at 400 developers.",
    ] {
        claim(&mut s, "o1").text = kept.into();
        assert!(rules(&s).is_empty(), "{kept}: {:?}", rules(&s));
    }
    // The bound dropped: the ceiling becomes the figure.
    claim(&mut s, "o1").text = "The Team tier has 400 monthly active developers.".into();
    fires(&s, "crux.drift_hedge", "claim o1");
    assert!(reasons(&s, "crux.drift_hedge")[0].contains("bounds 400"));
}

#[test]
fn up_to_without_a_figure_is_neither_hedge_nor_bound() {
    let mut s = with_e7("Whether to renew is up to the customer each year.");
    claim(&mut s, "o1").text = "The customer decides each year whether to renew.".into();
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
}

#[test]
fn a_hedge_reaches_its_clause_and_no_further() {
    let mut s = baseline();
    // The hedge after the figure, in its clause.
    claim(&mut s, "o4").text = "Conflict resolution is the part we most need to own: inspectors \
                                work offline 6 hours a day in some cases, and 41 lost-edit \
                                tickets were filed last quarter."
        .into();
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    // A hedge in another clause does not qualify the figure.
    claim(&mut s, "o4").text = "Conflict resolution could be the part we most need to own, and \
                                inspectors work offline 6 hours a day; 41 lost-edit tickets were \
                                filed last quarter."
        .into();
    fires(&s, "crux.drift_hedge", "claim o4");
}

#[test]
fn an_inference_may_conclude_flatly_but_not_restate_flatly() {
    let mut s = baseline();
    // An inference from a hedged span, restating none of it, in the advocate's words.
    claim(&mut s, "p4").text = "Lock-in, not price, is the risk to negotiate: sync history \
                                exports only in a proprietary format."
        .into();
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    // The hedged clause restated flatly, a hedge elsewhere in the claim notwithstanding.
    claim(&mut s, "p4").text = "Lock-in could be the risk to negotiate, and Syncwell will ship a \
                                documented open export in a future release."
        .into();
    fires(&s, "crux.drift_hedge", "claim p4");
    let why = &reasons(&s, "crux.drift_hedge")[0];
    assert!(why.contains("Syncwell will ship"), "{why}");
    assert!(
        !why.contains("mark what the claim adds as inference"),
        "the claim is already an inference: {why}"
    );
    // A direct read owes the source its hedge wherever it restates it.
    let c = claim(&mut s, "p4");
    c.text = "Sync history exports only in a proprietary format; a documented open export is \
              offered in a future release."
        .into();
    c.inference = InferenceType::DirectRead;
    c.confidence = 0.8;
    fires(&s, "crux.drift_hedge", "claim p4");
    assert!(reasons(&s, "crux.drift_hedge")[0].contains("direct read"));
}

#[test]
fn a_direct_read_of_a_hedge_is_still_capped_when_a_bound_sits_beside_it() {
    let mut s = with_e7("Restores of a whole archive may take up to 4 days.");
    claim(&mut s, "o1").confidence = 0.9;
    fires(&s, "crux.overconfident", "claim o1");
    claim(&mut s, "o1").confidence = 0.85;
    assert!(rules(&s).is_empty(), "{:?}", rules(&s));
    claim(&mut s, "o1").text = "Restores of a whole archive take 4 days.".into();
    fires(&s, "crux.drift_hedge", "claim o1");
    assert!(reasons(&s, "crux.drift_hedge")[0].contains("bounds 4"));
}
