//! Phases (SPEC section 6): ports of the reference suite's test/phases.test.js (10).

mod engine_common;

use crucible::Side;
use crucible::document::phase;
use crucible::phase::phase_prereq;
use engine_common::*;

fn prereq(d: &crucible::Debate) -> Option<(&'static str, String)> {
    phase_prereq(d).err().map(|e| (e.code.as_str(), e.message))
}

/// One merged claim per side, both weighted, both steelmans certified.
fn ready() -> (P, crucible::Debate, (String, String), (String, String)) {
    let mut p = proto();
    let mut d = debate(&mut p);
    let a = seed_side(&mut p, &mut d, "A");
    let b = seed_side(&mut p, &mut d, "B");
    set_relevance(&mut d, &a.0, &a.1, Some(1.0));
    set_relevance(&mut d, &b.0, &b.1, Some(1.0));
    p.submit_steelman(
        &mut d,
        Side::A,
        Some("A restatement of side A."),
        Some("cb"),
        Some("B"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::A, Some("ca"), Some("A"))
        .unwrap();
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("A restatement of side B."),
        Some("ca"),
        Some("A"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::B, Some("cb"), Some("B"))
        .unwrap();
    (p, d, a, b)
}

#[test]
fn framing_blocks_without_resolution_or_both_positions() {
    let mut p = proto();
    let mut d = debate(&mut p);
    d.resolution.clear();
    assert_eq!(prereq(&d).unwrap().0, "PHASE_PREREQ_UNMET");
    d.resolution = "Resolved: something.".into();
    d.positions.b.clear();
    assert_eq!(prereq(&d).unwrap().0, "PHASE_PREREQ_UNMET");
    d.positions.b = "Negative".into();
    assert!(prereq(&d).is_none());
}

#[test]
fn construction_blocks_until_each_side_has_a_merged_claim() {
    let mut p = proto();
    let mut d = debate(&mut p);
    d.phase = phase::CONSTRUCTION.into();
    seed_side(&mut p, &mut d, "A");
    assert!(prereq(&d).unwrap().1.contains("at least one merged claim"));
    seed_side(&mut p, &mut d, "B");
    assert!(prereq(&d).is_none());
}

#[test]
fn construction_blocks_while_a_candidate_awaits_decision() {
    let mut p = proto();
    let mut d = debate(&mut p);
    d.phase = phase::CONSTRUCTION.into();
    seed_side(&mut p, &mut d, "A");
    let (tb, _) = seed_side(&mut p, &mut d, "B");
    assert!(prereq(&d).is_none());
    p.add_version(&mut d, &tb, claim("B")).unwrap();
    let (code, msg) = prereq(&d).unwrap();
    assert_eq!(code, "PHASE_PREREQ_UNMET");
    assert!(msg.contains("candidate version(s)"), "{msg}");
}

#[test]
fn challenge_blocks_on_unresolved_challenges_then_on_pending_repairs() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (ta, va) = seed_side(&mut p, &mut d, "A");
    seed_side(&mut p, &mut d, "B");
    d.phase = phase::CHALLENGE.into();
    let c = p
        .file_challenge(&mut d, challenge_input(&ta, &va, "B"))
        .unwrap();
    assert!(prereq(&d).unwrap().1.contains("challenge(s)"));
    p.resolve_challenge(
        &mut d,
        &c,
        "upheld",
        Some("It does not bear on the resolution."),
        Some("arbiter"),
    )
    .unwrap();
    assert!(prereq(&d).is_none());
    p.add_version(&mut d, &ta, claim("A")).unwrap();
    assert!(prereq(&d).unwrap().1.contains("repair candidate(s)"));
}

#[test]
fn steelman_blocks_unless_both_restatements_certified() {
    let mut p = proto();
    let mut d = debate(&mut p);
    seed_side(&mut p, &mut d, "A");
    seed_side(&mut p, &mut d, "B");
    d.phase = phase::STEELMAN.into();
    assert_eq!(prereq(&d).unwrap().0, "PHASE_PREREQ_UNMET");
    p.submit_steelman(
        &mut d,
        Side::A,
        Some("Restatement of A."),
        Some("b"),
        Some("B"),
    )
    .unwrap();
    assert_eq!(
        prereq(&d).unwrap().0,
        "PHASE_PREREQ_UNMET",
        "submitted is not certified"
    );
    p.certify_steelman(&mut d, Side::A, Some("a"), Some("A"))
        .unwrap();
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("Restatement of B."),
        Some("a"),
        Some("A"),
    )
    .unwrap();
    p.return_steelman(
        &mut d,
        Side::B,
        Some("This omits the cost argument."),
        Some("b"),
        Some("B"),
    )
    .unwrap();
    assert_eq!(
        prereq(&d).unwrap().0,
        "PHASE_PREREQ_UNMET",
        "returned is not certified"
    );
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("Restatement of B, revised."),
        Some("a"),
        Some("A"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::B, Some("b"), Some("B"))
        .unwrap();
    assert!(prereq(&d).is_none());
}

#[test]
fn adjudication_blocks_until_every_standing_claim_has_relevance() {
    let (_p, mut d, a, _) = ready();
    d.phase = phase::ADJUDICATION.into();
    assert!(prereq(&d).is_none());
    set_relevance(&mut d, &a.0, &a.1, None);
    assert!(prereq(&d).unwrap().1.contains("relevance weight"));
}

#[test]
fn verdict_blocks_until_verdict_exists_and_closed_is_terminal() {
    let (mut p, mut d, _, _) = ready();
    d.phase = phase::VERDICT.into();
    assert!(prereq(&d).unwrap().1.contains("verdict"));
    p.issue_verdict(&mut d, None, None, None);
    assert!(prereq(&d).is_none());
    d.phase = phase::CLOSED.into();
    assert_eq!(prereq(&d).unwrap().0, "PHASE_TERMINAL");
}

#[test]
fn advance_walks_phase_order_and_refuses_past_the_end() {
    let (mut p, mut d, _, _) = ready();
    let mut seen = vec![d.phase.clone()];
    for _ in 0..phase::ORDER.len() {
        if d.phase == phase::VERDICT {
            p.issue_verdict(&mut d, None, None, None);
        }
        if p.advance_phase(&mut d, Some("arbiter")).is_err() {
            break;
        }
        seen.push(d.phase.clone());
    }
    assert_eq!(seen, phase::ORDER);
    assert_eq!(
        codes(p.advance_phase(&mut d, Some("arbiter"))),
        Some("PHASE_TERMINAL")
    );
}

#[test]
fn advance_from_appeal_review_is_refused_not_wrapped_to_framing() {
    let (mut p, mut d, _, _) = ready();
    d.phase = phase::APPEAL_REVIEW.into();
    assert_eq!(
        codes(p.advance_phase(&mut d, Some("arbiter"))),
        Some("PHASE_NOT_ADVANCEABLE")
    );
    assert_eq!(d.phase, phase::APPEAL_REVIEW);
}

#[test]
fn phase_advanced_is_logged_with_protocol_key() {
    let (mut p, mut d, _, _) = ready();
    p.advance_phase(&mut d, Some("arbiter")).unwrap();
    let e = d
        .log
        .iter()
        .rev()
        .find(|e| e.action == "phase-advanced")
        .unwrap();
    assert_eq!(e.detail.as_deref(), Some("construction"));
}
