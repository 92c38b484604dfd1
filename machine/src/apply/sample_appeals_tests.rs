//! Random-sample appeals through the real apply (rule set 22, docs/PANEL.md
//! "Random-sample appeals"): a self-selected coalition that alone declared for a debate
//! holds every stance seat of its panels and of its ordinary appeal panel too (the others
//! sit, if at all, under no stance); an appeal put to a random sample is drawn from the
//! whole admitted population under registered stances, and the sample's outcome stands.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::debates::tests::{advance_motion, decide, ten_admitted, write};
use crate::command::{ClientCommand, ContributionSubmission, ItemReply};
use crate::debates::DeclaredStance;
use crate::model::State;

/// The coalition: two arbiters of each stance and each organisation, the only ones who
/// declared for deb_1.
const COALITION: [&str; 4] = ["a0", "a1", "b5", "b6"];

/// Ten admitted arbiters; deb_1 seats by declared stances, and only the coalition
/// declared; its advance motion was accepted by the coalition.
fn self_selected() -> State {
    let mut s = ten_admitted();
    s.rules = crate::rules::CURRENT;
    let rec = s.debates.get_mut("deb_1").expect("debate");
    rec.policy.independence.declared_stances = true;
    rec.min_per_stance = 2;
    for id in COALITION {
        let stance = s.arbiters.get(id).expect("arbiter").registration.stance;
        let rec = s.debates.get_mut("deb_1").expect("debate");
        rec.declared_stances.insert(
            id.to_owned(),
            DeclaredStance {
                stance,
                credence_permille: 900,
                log_index: 31,
            },
        );
    }
    let advance = advance_motion(&mut s, 40);
    assert_eq!(
        stance_seats(&s, &advance),
        coalition(),
        "the coalition seats itself"
    );
    assert!(matches!(
        decide(&mut s, 60, &advance, |_| true),
        ItemReply::Applied(_)
    ));
    s
}

fn coalition() -> BTreeSet<String> {
    COALITION.iter().map(|s| s.to_string()).collect()
}

fn seats(s: &State, motion_id: &str) -> BTreeSet<String> {
    s.motions
        .get(motion_id)
        .expect("motion")
        .seats
        .iter()
        .map(|seat| seat.arbiter_id.clone())
        .collect()
}

/// The arbiters seated under a stance (A or B): the seats the acceptance rule's agreement
/// across stances counts.
fn stance_seats(s: &State, motion_id: &str) -> BTreeSet<String> {
    s.motions
        .get(motion_id)
        .expect("motion")
        .seats
        .iter()
        .filter(|seat| seat.stance != crate::rules::acceptance::Stance::None)
        .map(|seat| seat.arbiter_id.clone())
        .collect()
}

fn appeal(random_sample: bool) -> ContributionSubmission {
    let mut sub: ContributionSubmission = serde_json::from_value(json!({
        "debate_id": "deb_1", "author": "x", "side": "B",
        "contribution": {"op": "appeal", "ground": "A2", "justification": "The panel resolved these challenges before the response filed in time was shown to it.", "evidence": [], "targetThreadIds": []},
    }))
    .expect("appeal");
    sub.random_sample = random_sample;
    sub
}

/// Closes deb_1 and files the appeal at request `n`; the reply.
fn file(s: &mut State, n: u64, random_sample: bool) -> ItemReply<crate::reply::Reply> {
    let rec = s.debates.get_mut("deb_1").expect("debate");
    rec.reissue_verdict(1_070, "x");
    rec.debate.phase = "closed".into();
    write(s, n, ClientCommand::Contribute(appeal(random_sample)))
}

fn applied(r: ItemReply<crate::reply::Reply>) -> Value {
    match r {
        ItemReply::Applied(v) => v.to_json(),
        r => panic!("{r:?}"),
    }
}

fn opened(v: &Value) -> String {
    v["opened"][0]
        .as_str()
        .expect("the appeal's motion")
        .to_owned()
}

/// The coalition's ordinary appeal panel gives every stance seat to the coalition again:
/// the declarations are its own, so nobody else is seated under a stance.
#[test]
fn an_ordinary_appeal_is_judged_by_the_self_selected_coalition_again() {
    let mut s = self_selected();
    let v = applied(file(&mut s, 80, false));
    let motion = opened(&v);
    assert_eq!(stance_seats(&s, &motion), coalition());
}

/// The random-sample appeal is drawn from all ten admitted arbiters, under their
/// registered stances, 2N+1 seats for the first appeal round; when the sample admits the
/// appeal, its outcome stands.
#[test]
fn a_random_sample_appeal_draws_from_the_whole_admitted_population() {
    let mut s = self_selected();
    let v = applied(file(&mut s, 80, true));
    let motion = opened(&v);
    let sample = seats(&s, &motion);
    assert_eq!(sample.len(), 9, "2N+1 seats for the first appeal round");
    assert_eq!(
        stance_seats(&s, &motion),
        sample,
        "every seat under its registered stance"
    );
    let outsiders: Vec<&String> = sample
        .iter()
        .filter(|id| !coalition().contains(*id))
        .collect();
    assert!(outsiders.len() >= 2, "{sample:?}");
    let rec = s.debates.get("deb_1").expect("debate");
    assert!(rec.sample_appeals.contains("app_1"));
    assert!(
        rec.policy.independence.declared_stances,
        "the debate's own policy is unchanged"
    );
    // The sample admits the appeal: its outcome stands, whatever the coalition held.
    let out = decide(&mut s, 90, &motion, |_| true);
    assert!(matches!(out, ItemReply::Applied(_)), "{out:?}");
    let m = s.motions.get(&motion).expect("motion");
    assert!(
        matches!(&m.status, crate::model::MotionStatus::Decided(a) if a.is_accepted()),
        "{:?}",
        m.status
    );
}

/// Only an appeal is put to a sample, and only from rule set 22; the refusal names both,
/// and nothing is filed.
#[test]
fn a_random_sample_is_refused_on_other_contributions_and_before_the_rule() {
    let mut s = self_selected();
    let mut definition: ContributionSubmission = serde_json::from_value(json!({
        "debate_id": "deb_1", "author": "x", "side": "A",
        "contribution": {"op": "definition", "term": "harm", "definition": "Measurable loss of welfare."},
    }))
    .expect("definition");
    definition.random_sample = true;
    let r = write(&mut s, 80, ClientCommand::Contribute(definition));
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "random_sample_refused" && message.contains("only an appeal")),
        "{r:?}"
    );
    s.rules = crate::rules::ORG_POOLS;
    let r = file(&mut s, 81, true);
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "random_sample_refused" && message.contains("rule set 22")),
        "{r:?}"
    );
    assert!(
        s.debates
            .get("deb_1")
            .expect("debate")
            .debate
            .appeals
            .is_empty()
    );
}

/// The request is in the signed bytes: a relay can neither add nor strip it.
#[test]
fn the_random_sample_request_is_signed() {
    let plain = crate::authorship::signed_bytes(&appeal(false), "cli", 7).expect("bytes");
    let sampled = crate::authorship::signed_bytes(&appeal(true), "cli", 7).expect("bytes");
    assert_ne!(plain, sampled);
    assert!(sampled.ends_with(crate::authorship::RANDOM_SAMPLE_TAG));
}
