//! Precedent (rule set 16, docs/PANEL.md "Precedent"): a debate question whose content
//! matches an outcome that is `final` is answered by citing it, on record with the link
//! and with no panel; an outcome still open to appeal is no precedent; asking with a
//! fresh-panel reason seats a panel anyway.

use crucible::motion::{Answer, Question};
use panel_machine::MotionStatus;
use panel_machine::model::finality::OutcomeStatus;
use panel_machine::testkit::{Driver, SIX, hinted};
use panel_machine::{ClientCommand, ItemReply, TestCommand};
use serde_json::json;

const WINDOW_MS: u64 = 5_000;

fn driver() -> Driver {
    let mut d = Driver::new(&SIX);
    d.rules = Some(panel_machine::rules::CURRENT);
    d
}

/// A debate with a short appeal window, past framing, with one cited claim on side A;
/// its id once every question it opened is answered yes by the panel (or by precedent).
fn debate_with_claim(d: &mut Driver) -> String {
    let id = d.debate();
    if let Some(rec) = d.state.debates.get_mut(&id) {
        rec.policy.appeal_window_ms = Some(WINDOW_MS);
    }
    let framing = Question::AdvancePhase {
        from: "framing".into(),
    };
    d.ask(&id, &framing, Some(Answer::Yes));
    d.answer_all(&id, &|m, _| hinted(m, 0.9));
    d.contribute(
        &id,
        "ada",
        "A",
        panel_machine::testkit::fixtures::registry_claim(vec![json!(
            {"source": "Registry report", "url": "http://source.test/report.txt", "tier": "T1"}
        )]),
        Default::default(),
    );
    d.answer_all(&id, &|m, _| hinted(m, 0.9));
    id
}

/// The debate's decided content questions: (motion id, cited precedent, seats).
fn content_motions(d: &Driver, debate_id: &str) -> Vec<(String, Option<String>, usize)> {
    d.state
        .motions
        .iter_held()
        .filter(|(_, m)| m.spec.debate_id == debate_id)
        .filter(|(_, m)| {
            m.spec
                .question
                .as_ref()
                .is_some_and(panel_machine::features::precedent::eligible)
        })
        .map(|(id, m)| {
            assert!(matches!(m.status, MotionStatus::Decided(_)), "{id} open");
            let cited = m.precedent.as_ref().map(|p| p.motion_id.clone());
            (id.clone(), cited, m.seats.len())
        })
        .collect()
}

fn tick_past_window(d: &mut Driver) {
    for _ in 0..(WINDOW_MS / 1000 + 2) {
        d.ok(TestCommand::Note {
            topic: "t".into(),
            text: "time passes".into(),
        });
    }
}

#[test]
fn a_final_outcome_answers_the_same_content_with_no_panel() {
    let mut d = driver();
    let first = debate_with_claim(&mut d);
    let decided = content_motions(&d, &first);
    assert!(!decided.is_empty(), "the claim opened content questions");
    assert!(
        decided
            .iter()
            .all(|(_, cited, seats)| cited.is_none() && *seats > 0)
    );

    // Still provisional: the same content in another debate goes to a panel.
    let early = debate_with_claim(&mut d);
    assert!(
        content_motions(&d, &early)
            .iter()
            .all(|(_, cited, seats)| cited.is_none() && *seats > 0),
        "a provisional outcome is no precedent"
    );

    tick_past_window(&mut d);
    for (id, _, _) in &decided {
        let m = d.state.motions.get(id).expect("held");
        let f = m.finality.as_ref().expect("a status");
        assert_eq!(f.status, OutcomeStatus::Final, "{id}: {f:?}");
    }

    let later = debate_with_claim(&mut d);
    let answered = content_motions(&d, &later);
    assert_eq!(answered.len(), decided.len());
    for (id, cited, seats) in &answered {
        let cited = cited.as_ref().unwrap_or_else(|| panic!("{id} sat a panel"));
        assert_eq!(*seats, 0, "{id}");
        let source = d.state.motions.get(cited).expect("the cited motion");
        assert!(
            source.spec.debate_id == first || source.spec.debate_id == early,
            "{id} cites {cited} of {}",
            source.spec.debate_id
        );
        let m = d.state.motions.get(id).expect("held");
        assert_eq!(
            m.finality.as_ref().map(|f| f.status),
            Some(OutcomeStatus::Provisional),
            "its own outcome is open to appeal like any other"
        );
    }
    // The cited answers did what a panel's would have: the claim is merged.
    let doc = d.doc(&later);
    assert!(doc.threads[0].canonical_id.is_some(), "the merge settled");
}

#[test]
fn a_fresh_panel_needs_a_reason_and_then_sits() {
    let mut d = driver();
    debate_with_claim(&mut d);
    tick_past_window(&mut d);
    let later = debate_with_claim(&mut d);
    let thread = d.doc(&later).threads[0].clone();
    let version = thread.canonical_id.clone().expect("merged by precedent");
    let relevance = Question::AssignRelevance {
        thread_id: thread.id.clone(),
        version_id: version,
    };
    let ask = |reason: Option<&str>| {
        ClientCommand::AskPanel(panel_machine::testkit::fixtures::cmd(json!({
            "debate_id": later, "author": "sim", "question": relevance,
            "fresh_panel": reason,
        })))
    };
    match d.write(ask(Some("  "))) {
        ItemReply::Refused { code, message } => {
            assert_eq!(code, "empty_field", "{message}");
            assert!(message.contains("fresh_panel"), "{message}");
        }
        r => panic!("a blank reason was accepted: {r:?}"),
    }
    let v = d.ok(ask(Some("the registry revised its counts since")));
    let id = v["motion_id"].as_str().expect("motion id").to_owned();
    assert!(v.get("precedent").is_none(), "{v}");
    let m = d.state.motions.get(&id).expect("held");
    assert!(!m.seats.is_empty(), "a panel sits");
    assert_eq!(
        m.fresh_panel.as_deref(),
        Some("the registry revised its counts since")
    );
}
