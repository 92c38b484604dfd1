//! The last word (rule set 17, docs/PANEL.md "The last word"): a question the panels left
//! not proven is decided by the authority the charter names, with a signed decision and a
//! reason; the answer goes through the engine and the motion becomes final with the route
//! on record. Nobody else can speak for the authority, and it cannot overrule an answer.

use crucible::motion::{Answer, Question};
use ed25519_dalek::SigningKey;
use panel_federation::{Charter, LastWordAuthority};
use panel_machine::ClientCommand;
use panel_machine::features::last_word::{LastWordDecision, sign};
use panel_machine::model::finality::OutcomeStatus;
use panel_machine::testkit::fixtures::bare_charter;
use panel_machine::testkit::{Driver, SIX, Vote, assert_refused, hinted};

fn authority() -> SigningKey {
    SigningKey::from_bytes(&[41; 32])
}

fn charter(last_word: Option<&SigningKey>) -> Charter {
    Charter {
        last_word: last_word.map(|k| LastWordAuthority {
            name: "the appeals board".into(),
            key: hex::encode(k.verifying_key().to_bytes()),
        }),
        ..bare_charter()
    }
}

/// A debate whose framing advance the stances split on until no fresh panel is left:
/// (driver, debate, the question's last motion, now not proven).
fn unanswered() -> (Driver, String, String) {
    let mut d = Driver::new(&SIX);
    d.rules = Some(panel_machine::rules::CURRENT);
    let debate = d.debate();
    let q = Question::AdvancePhase {
        from: "framing".into(),
    };
    let first = d.ask(&debate, &q, Some(Answer::Yes));
    let split = |m: &panel_machine::Motion, a: &str| Vote {
        yes: a.starts_with('a'),
        ..hinted(m, 0.9)
    };
    d.answer_all(&debate, &split);
    let last = d
        .motions_asking(&debate, |x| *x == q)
        .into_iter()
        .last()
        .unwrap_or(first);
    let f = d.state.motions.get(&last).and_then(|m| m.finality.clone());
    assert_eq!(
        f.as_ref().map(|f| f.status),
        Some(OutcomeStatus::NotProven),
        "{f:?}"
    );
    (d, debate, last)
}

fn decision(debate: &str, motion: &str, reason: &str) -> LastWordDecision {
    LastWordDecision {
        debate_id: debate.into(),
        motion_id: motion.into(),
        answer: Answer::Yes,
        reason: reason.into(),
        signature: Default::default(),
    }
}

#[track_caller]
fn refused(d: &mut Driver, w: LastWordDecision, needle: &str) {
    assert_refused(
        d.write(ClientCommand::LastWord(w)),
        "last_word_refused",
        needle,
    );
}

#[test]
fn the_charters_authority_decides_what_the_panels_left_unanswered() {
    let (mut d, debate, last) = unanswered();
    let key = authority();
    let reason = "Both positions are stated; the split was over wording only.";

    // No authority in the charter: nobody has the last word.
    d.state.charter = Some(charter(None));
    refused(
        &mut d,
        sign(&key, decision(&debate, &last, reason)),
        "names no last-word",
    );

    d.state.charter = Some(charter(Some(&key)));
    // Signed by anyone else (a member organisation's key, an arbiter's): refused.
    let other = SigningKey::from_bytes(&[42; 32]);
    refused(
        &mut d,
        sign(&other, decision(&debate, &last, reason)),
        "does not verify",
    );
    // Re-signed content: the signature covers the answer and the reason.
    let mut altered = sign(&key, decision(&debate, &last, reason));
    altered.answer = Answer::No;
    refused(&mut d, altered, "does not verify");
    refused(
        &mut d,
        sign(&key, decision(&debate, &last, " ")),
        "reason is empty",
    );
    assert_eq!(d.doc(&debate).phase, "framing", "nothing changed");

    let v = d.ok(ClientCommand::LastWord(sign(
        &key,
        decision(&debate, &last, reason),
    )));
    assert_eq!(v["authority"], "the appeals board", "{v}");
    let m = d.state.motions.get(&last).expect("the motion");
    let f = m.finality.clone().expect("a status");
    assert_eq!(f.status, OutcomeStatus::Final);
    assert!(f.reason.contains("last word of the appeals board"), "{f:?}");
    assert_eq!(
        m.last_word.as_ref().map(|w| w.reason.as_str()),
        Some(reason)
    );
    assert_eq!(
        d.doc(&debate).phase,
        "construction",
        "the answer went through the engine"
    );

    // Once spoken, never again; and never over an answer the panels gave.
    refused(
        &mut d,
        sign(&key, decision(&debate, &last, reason)),
        "already has the last word",
    );
}

#[test]
fn the_last_word_never_overrules_a_panels_answer() {
    let mut d = Driver::new(&SIX);
    d.rules = Some(panel_machine::rules::CURRENT);
    let debate = d.debate();
    let q = Question::AdvancePhase {
        from: "framing".into(),
    };
    let motion = d.ask(&debate, &q, Some(Answer::Yes));
    d.answer_all(&debate, &|m, _| hinted(m, 0.9));
    let key = authority();
    d.state.charter = Some(charter(Some(&key)));
    refused(
        &mut d,
        sign(&key, decision(&debate, &motion, "We prefer otherwise.")),
        "not not_proven",
    );
}
