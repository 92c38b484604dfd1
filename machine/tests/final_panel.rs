//! The final panel (rule set 26, docs/PANEL.md "The last word"): under a charter that
//! names one, a question the ladder left not proven goes at once to the widest fresh panel
//! across all organisations, under registered stances, and its answer stands only with the
//! charter's supermajority; it is final at once, with the route on record. Without a
//! supermajority the question stays not proven and the last-word authority may decide it,
//! but not while the final panel sits.

use crucible::motion::{Answer, Question};
use ed25519_dalek::SigningKey;
use panel_federation::{Charter, FinalPanel, LastWordAuthority};
use panel_machine::ClientCommand;
use panel_machine::MotionStatus;
use panel_machine::features::last_word::{LastWordDecision, sign};
use panel_machine::model::finality::OutcomeStatus;
use panel_machine::rules::acceptance::{Independence, RevealedRuling, decide};
use panel_machine::testkit::fixtures::bare_charter;
use panel_machine::testkit::{Driver, EIGHTEEN, Vote, assert_refused, hinted};
use panel_machine::{
    Acceptance, DeadlockReason, Decision, MotionKind, Outcome, Policy, Seat, Stance,
};

fn authority() -> SigningKey {
    SigningKey::from_bytes(&[43; 32])
}

fn charter(final_panel: Option<u32>) -> Charter {
    Charter {
        last_word: Some(LastWordAuthority {
            name: "the appeals board".into(),
            key: hex::encode(authority().verifying_key().to_bytes()),
        }),
        final_panel: final_panel.map(|supermajority_milli| FinalPanel {
            supermajority_milli,
        }),
        ..bare_charter()
    }
}

/// A debate whose framing advance the first panel splits on (the advance is given up at
/// its first deadlock): (driver, debate, the not-proven motion).
fn split_first_panel(final_panel: Option<u32>) -> (Driver, String, String) {
    let mut d = Driver::new(&EIGHTEEN);
    d.rules = Some(panel_machine::rules::CURRENT);
    let debate = d.debate();
    let q = Question::AdvancePhase {
        from: "framing".into(),
    };
    let first = d.ask(&debate, &q, Some(Answer::Yes));
    // Adopted after the debate opened under registered stances; the charter in force when
    // the question is left unanswered is what decides.
    d.state.charter = Some(charter(final_panel));
    let split = |m: &panel_machine::Motion, a: &str| Vote {
        yes: a.starts_with('a'),
        ..hinted(m, 0.9)
    };
    d.try_decide_by_round(&first, split).expect("the round");
    (d, debate, first)
}

/// The open final panel of `debate`, if any.
fn final_panel_of(d: &Driver, debate: &str) -> Option<(String, panel_machine::Motion)> {
    d.state
        .motions
        .iter_held()
        .find(|(_, m)| m.spec.debate_id == debate && m.spec.final_panel_of.is_some())
        .map(|(id, m)| (id.clone(), m.clone()))
}

fn status(d: &Driver, motion: &str) -> (OutcomeStatus, String) {
    let f = d
        .state
        .motions
        .get(motion)
        .and_then(|m| m.finality.clone())
        .expect("a status");
    (f.status, f.reason)
}

#[test]
fn a_question_left_not_proven_goes_to_the_widest_fresh_panel_and_its_supermajority_is_final() {
    let (mut d, debate, first) = split_first_panel(Some(667));
    assert_eq!(status(&d, &first).0, OutcomeStatus::NotProven);
    let (id, fp) = final_panel_of(&d, &debate).expect("the final panel opened");
    assert_eq!(fp.spec.final_panel_of.as_deref(), Some(first.as_str()));
    // Everyone but the four who sat on the question: fourteen seats, none of them again.
    let first_seats: Vec<String> = d
        .state
        .motions
        .get(&first)
        .map(|m| m.seats.iter().map(|s| s.arbiter_id.clone()).collect())
        .unwrap_or_default();
    assert_eq!(fp.seats.len(), 14);
    assert!(
        fp.seats
            .iter()
            .all(|s| !first_seats.contains(&s.arbiter_id)),
        "{:?} {first_seats:?}",
        fp.seats
    );

    // The last word waits while the final panel sits.
    let word = sign(
        &authority(),
        LastWordDecision {
            debate_id: debate.clone(),
            motion_id: first.clone(),
            answer: Answer::No,
            reason: "We would rather decide now.".into(),
            signature: Default::default(),
        },
    );
    assert_refused(
        d.write(ClientCommand::LastWord(word)),
        "last_word_refused",
        "final panel is sitting",
    );

    // Eleven of fourteen say yes: 79%, above two thirds.
    let mostly_yes = |m: &panel_machine::Motion, a: &str| Vote {
        yes: !matches!(a, "a9" | "b8" | "b9"),
        ..hinted(m, 0.9)
    };
    d.try_decide_by_round(&id, mostly_yes).expect("the round");
    let decided = d.state.motions.get(&id).expect("held");
    assert!(
        matches!(
            &decided.status,
            MotionStatus::Decided(Acceptance::Accepted {
                outcome: Outcome::Decided(Decision::Yes),
                ..
            })
        ),
        "{:?}",
        decided.status
    );
    let (own, why) = status(&d, &id);
    assert_eq!(own, OutcomeStatus::Final, "{why}");
    assert!(why.contains("final panel's supermajority"), "{why}");
    let (was_unproven, why) = status(&d, &first);
    assert_eq!(was_unproven, OutcomeStatus::Final);
    assert!(why.contains(&id), "{why}");
    assert_eq!(
        d.doc(&debate).phase,
        "construction",
        "the answer went through the engine"
    );
}

#[test]
fn without_a_supermajority_the_question_stays_not_proven_for_the_last_word() {
    let (mut d, debate, first) = split_first_panel(Some(667));
    let (id, _) = final_panel_of(&d, &debate).expect("the final panel opened");
    // The final panel splits as the first did, seven against seven.
    let narrow = |m: &panel_machine::Motion, a: &str| Vote {
        yes: a.starts_with('a'),
        ..hinted(m, 0.9)
    };
    d.try_decide_by_round(&id, narrow).expect("the round");
    let decided = d.state.motions.get(&id).expect("held");
    let MotionStatus::Decided(Acceptance::Deadlocked(dissent)) = &decided.status else {
        panic!("{:?}", decided.status);
    };
    assert!(
        dissent.reasons.iter().any(|r| matches!(
            r,
            DeadlockReason::NoSupermajority {
                needed_milli: 667,
                ..
            }
        )),
        "{dissent:?}"
    );
    assert_eq!(status(&d, &id).0, OutcomeStatus::NotProven);
    assert_eq!(status(&d, &first).0, OutcomeStatus::NotProven);
    assert_eq!(d.doc(&debate).phase, "framing");
    // No second final panel, and now the authority may decide.
    let opened = d
        .state
        .motions
        .iter_held()
        .filter(|(_, m)| m.spec.final_panel_of.is_some())
        .count();
    assert_eq!(opened, 1);
    let word = sign(
        &authority(),
        LastWordDecision {
            debate_id: debate.clone(),
            motion_id: first.clone(),
            answer: Answer::Yes,
            reason: "The split was over wording.".into(),
            signature: Default::default(),
        },
    );
    d.ok(ClientCommand::LastWord(word));
    assert_eq!(status(&d, &first).0, OutcomeStatus::Final);
}

#[test]
fn a_charter_without_a_final_panel_leaves_the_question_to_the_last_word() {
    let (d, debate, first) = split_first_panel(None);
    assert!(final_panel_of(&d, &debate).is_none());
    assert_eq!(status(&d, &first).0, OutcomeStatus::NotProven);
}

#[test]
fn the_charter_refuses_a_supermajority_that_is_not_one() {
    for milli in [0, 500, 599, 1001] {
        let e = charter(Some(milli)).check().expect_err("refused");
        assert!(
            e.to_string().contains("final_panel.supermajority_milli"),
            "{milli}: {e}"
        );
    }
    // In range, the check moves on to the rest of this bare charter.
    for milli in [600, 667, 1000] {
        let rest = charter(Some(milli)).check().err().map(|e| e.to_string());
        assert!(
            !rest.as_deref().unwrap_or("").contains("final_panel"),
            "{milli}: {rest:?}"
        );
    }
}

fn seat(id: &str, stance: Stance, org: &str) -> Seat {
    Seat {
        arbiter_id: id.into(),
        stance,
        organisation: org.into(),
        lineage: format!("fam-{id}"),
    }
}

fn yes(id: &str, y: bool) -> RevealedRuling {
    RevealedRuling {
        arbiter_id: id.into(),
        decision: if y { Decision::Yes } else { Decision::No },
        probability_milli: if y { 900 } else { 100 },
        relevance: None,
    }
}

fn supermajority() -> Policy {
    Policy {
        independence: Independence {
            without_any_organisation: true,
            ..Independence::default()
        },
        aggregation: panel_machine::rules::acceptance::Aggregation::Supermajority { milli: 667 },
        ..Policy::default()
    }
}

#[test]
fn one_stance_or_one_organisation_cannot_make_the_supermajority() {
    // Five of six say yes, all of stance A: no supporter of B.
    let seats = [
        seat("a1", Stance::A, "o1"),
        seat("a2", Stance::A, "o2"),
        seat("a3", Stance::A, "o3"),
        seat("a4", Stance::A, "o4"),
        seat("a5", Stance::A, "o5"),
        seat("b1", Stance::B, "o6"),
    ];
    let rs: Vec<_> = ["a1", "a2", "a3", "a4", "a5"]
        .into_iter()
        .map(|a| yes(a, true))
        .chain([yes("b1", false)])
        .collect();
    let v = decide(MotionKind::Phase, &seats, &rs, &[], &supermajority());
    let Acceptance::Deadlocked(d) = v else {
        panic!("{v:?}")
    };
    assert!(
        d.reasons.iter().any(|r| matches!(
            r,
            DeadlockReason::SideWithoutSupport {
                stance: Stance::B,
                ..
            }
        )),
        "{d:?}"
    );

    // Five of seven say yes across both stances (71%), but three of the five are one
    // organisation's: without it two of four are left, so it would carry the answer.
    let seats = [
        seat("a1", Stance::A, "big"),
        seat("a2", Stance::A, "big"),
        seat("b1", Stance::B, "big"),
        seat("b2", Stance::B, "o2"),
        seat("b4", Stance::B, "o5"),
        seat("a3", Stance::A, "o3"),
        seat("b3", Stance::B, "o4"),
    ];
    let rs = [
        yes("a1", true),
        yes("a2", true),
        yes("b1", true),
        yes("b2", true),
        yes("b4", true),
        yes("a3", false),
        yes("b3", false),
    ];
    let v = decide(MotionKind::Phase, &seats, &rs, &[], &supermajority());
    let Acceptance::Deadlocked(d) = v else {
        panic!("{v:?}")
    };
    assert!(
        d.reasons.contains(&DeadlockReason::DependsOnOrganisation {
            organisation: "big".into()
        }),
        "{d:?}"
    );
}

/// A convener cannot give its debate a final panel's rule: a supermajority of one in a
/// thousand would accept an answer a single supporter of each stance backs against
/// everyone else. The machine sets that rule only on the final panels it opens.
#[test]
fn a_debate_cannot_ask_for_a_final_panels_rule() {
    let mut d = Driver::new(&EIGHTEEN);
    d.rules = Some(panel_machine::rules::CURRENT);
    for milli in [1, 667] {
        let policy = Policy {
            aggregation: panel_machine::rules::acceptance::Aggregation::Supermajority { milli },
            ..Policy::default()
        };
        let refused = d.try_debate_under(Some(serde_json::to_value(&policy).expect("policy")));
        let message = match refused {
            Err(panel_machine::testkit::KitError::Refused { code, message }) => {
                assert_eq!(code, "charter", "{message}");
                message
            }
            other => panic!("a final panel's rule was taken for a debate: {other:?}"),
        };
        assert!(message.contains("final panel"), "{message}");
    }
    // The rules a convener may ask for are still taken.
    for policy in [Policy::weighted(), Policy::independent(), Policy::default()] {
        d.try_debate_under(Some(serde_json::to_value(&policy).expect("policy")))
            .expect("a debate rule");
    }
}
