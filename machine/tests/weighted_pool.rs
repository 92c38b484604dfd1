//! The weighted pool through apply (rule set 25, `weighted_pool.rs`; docs/coordinator/acceptance.md
//! "The weighted pool"): a debate under `Policy::weighted()` decides a motion whose stance
//! groups split by the pool of its rulings, weighted by the seated arbiters' resolved
//! track records read from the state, and records the pooled probability beside what
//! equal weights would have given. Under the rule set before it, or under the independent
//! head-count rule, the same rulings deadlock.

use calibration::recalibration::{Resolution, ResolutionKind, ResolvedItem};
use panel_machine::MotionStatus;
use panel_machine::testkit::{Driver, Schedule, Vote};
use panel_machine::{Acceptance, Decision, MotionKind, Outcome, Policy, Stance};
use panel_machine::{MotionSpec, TestCommand};

const POOL: [(&str, Stance); 6] = [
    ("a1", Stance::A),
    ("a2", Stance::A),
    ("b1", Stance::B),
    ("b2", Stance::B),
    ("n1", Stance::None),
    ("n2", Stance::None),
];

/// Forty resolved items at `p` for a true "yes": the record an arbiter earns.
fn record(p: f64) -> Vec<ResolvedItem> {
    (0..40)
        .map(|i| ResolvedItem {
            motion_id: format!("held-{i}"),
            probability: p,
            outcome: true,
            resolved_by: Resolution {
                motion_id: "sitting-1".into(),
                kind: ResolutionKind::ExamHeldBack,
            },
        })
        .collect()
}

fn driver(rules: u32) -> Driver {
    let mut d = Driver::with_schedule(Schedule::default());
    d.rules = Some(rules);
    for (id, stance) in POOL {
        d.add_arbiter(id, stance, &format!("org-{id}"));
    }
    // a1 and b1 were sharp on their resolved items, the rest no better than a coin.
    for (id, p) in [
        ("a1", 0.9),
        ("b1", 0.9),
        ("a2", 0.5),
        ("b2", 0.5),
        ("n1", 0.5),
        ("n2", 0.5),
    ] {
        let a = d.state.arbiters.get_mut(id).expect("registered");
        a.recalibration.items = record(p);
    }
    d
}

/// One raw motion in a fresh debate under `policy`, every arbiter seated; its verdict
/// and recorded confidence.
fn decide(
    d: &mut Driver,
    policy: Policy,
) -> (
    Acceptance,
    Option<panel_machine::rules::confidence::OutcomeConfidence>,
) {
    let debate = d
        .try_debate_under(Some(serde_json::to_value(&policy).expect("policy")))
        .expect("debate");
    for (id, stance) in POOL.iter().filter(|(_, s)| *s != Stance::None) {
        d.try_declare(id, &debate, *stance, 750).expect("declared");
    }
    let motion_id = format!("m-{debate}");
    d.ok(TestCommand::OpenMotion(Box::new(MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: debate,
        kind: MotionKind::Merge,
        state_hash: "00".repeat(32).into(),
        seats: 6,
        min_per_stance: 2,
        contributors: Vec::new(),
        author_model_family: None,
        policy: Some(policy),
        question: None,
        projection: None,
        expected: None,
        procedure: None,
        final_panel_of: None,
    })));
    // The two sharp arbiters say yes at 0.9; the four coin-flippers say no.
    let vote = |_: &panel_machine::Motion, id: &str| {
        let p = match id {
            "a1" | "b1" => 0.9,
            "a2" | "b2" => 0.3,
            _ => 0.2,
        };
        Vote {
            yes: p > 0.5,
            p,
            relevance: None,
            receipt: None,
        }
    };
    d.try_decide_by_round(&motion_id, vote).expect("round");
    let m = d.motion(&motion_id).expect("motion");
    let MotionStatus::Decided(v) = &m.status else {
        panic!("undecided: {:?}", m.status);
    };
    (v.clone(), m.confidence)
}

#[test]
fn the_pool_answers_a_split_panel_by_the_arbiters_resolved_records() {
    let mut d = driver(panel_machine::rules::CURRENT);
    let (v, c) = decide(&mut d, Policy::weighted());
    assert!(
        matches!(
            &v,
            Acceptance::Accepted {
                outcome: Outcome::Decided(Decision::Yes),
                ..
            }
        ),
        "{v:?}"
    );
    let c = c.expect("an accepted outcome carries its confidence");
    // Equal weights would have said no (0.16 for yes): each ruling held to the log-odds
    // of 0.75. The records let the sharp pair add all of their 0.9 and hold the four
    // coin-flippers to 0.61 each: 0.93.
    assert_eq!(c.equal_weights_milli, Some(155));
    assert_eq!(c.probability_milli, 929);
    assert!(c.low_milli < 929 && 929 <= c.high_milli, "{c:?}");
    assert_eq!(c.effective_votes, 6);

    // The same rulings under the independent head-count rule: stance groups split.
    let (v, _) = decide(&mut d, Policy::independent());
    assert!(!v.is_accepted(), "{v:?}");
}

#[test]
fn before_rule_set_25_a_weighted_policy_is_judged_by_head_counts() {
    let mut d = driver(panel_machine::rules::ANSWERS_IN_DOMAIN);
    let (v, c) = decide(&mut d, Policy::weighted());
    assert!(!v.is_accepted(), "{v:?}");
    assert!(c.is_none());
}
