//! Appeals (SPEC section 12): ports of the reference suite's test/appeals.test.js (11).

mod engine_common;

use crucible::appeal::{AppealInput, can_appeal};
use crucible::document::phase;
use engine_common::*;

/// A closed debate carrying one verdict.
fn closed() -> (P, crucible::Debate, (String, String), (String, String)) {
    let mut p = proto();
    let mut d = debate(&mut p);
    let a = seed_side(&mut p, &mut d, "A");
    let b = seed(&mut p, &mut d, claim_with("B", vec![cite("T5")]), None);
    set_relevance(&mut d, &a.0, &a.1, Some(1.0));
    set_relevance(&mut d, &b.0, &b.1, Some(1.0));
    p.issue_verdict(&mut d, None, None, None);
    d.phase = phase::CLOSED.into();
    (p, d, a, b)
}

fn appeal_on(targets: &[&str]) -> AppealInput {
    AppealInput {
        side: Some("B".into()),
        author: Some("appellant".into()),
        ground: Some("A1".into()),
        justification: Some(
            "A source published after closure bears on the targeted thread.".into(),
        ),
        evidence: vec![cite("T2")],
        target_thread_ids: targets.iter().map(|s| s.to_string()).collect(),
    }
}

fn can(d: &crucible::Debate, side: &str) -> Option<&'static str> {
    codes(can_appeal(d, side))
}

/// Advisory predicate of the reference (`canProposeVersion`), as SPEC section 12 scopes it.
fn can_propose(d: &crucible::Debate, thread: &str) -> bool {
    let t = d.thread(thread).unwrap();
    match d.phase.as_str() {
        phase::CONSTRUCTION => true,
        phase::CHALLENGE => t.canonical_id.is_none(),
        phase::APPEAL_REVIEW => d.appeal_targets.iter().any(|x| x == thread),
        _ => false,
    }
}

#[test]
fn appeals_require_closed_debate_with_a_verdict() {
    let mut p = proto();
    let mut d = debate(&mut p);
    assert_eq!(can(&d, "A"), Some("APPEAL_NOT_CLOSED"));
    d.phase = phase::CLOSED.into();
    assert_eq!(can(&d, "A"), Some("APPEAL_NO_VERDICT"));
}

#[test]
fn one_appeal_per_side_but_denial_does_not_consume_allowance() {
    let (mut p, mut d, _, b) = closed();
    assert_eq!(can(&d, "B"), None);
    let first = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    assert_eq!(can(&d, "B"), Some("APPEAL_LIMIT_REACHED"));
    p.decide_appeal(
        &mut d,
        &first,
        false,
        Some("The ground is not made out."),
        Some("arbiter"),
    )
    .unwrap();
    assert_eq!(can(&d, "B"), None, "a denied appeal may be refiled");
    assert_eq!(d.phase, phase::CLOSED);
    let second = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    assert_eq!(
        can(&d, "B"),
        Some("APPEAL_LIMIT_REACHED"),
        "filed but undecided counts"
    );
    p.decide_appeal(
        &mut d,
        &second,
        true,
        Some("The ground is made out."),
        Some("arbiter"),
    )
    .unwrap();
    assert_eq!(
        can(&d, "B"),
        Some("APPEAL_NOT_CLOSED"),
        "during review the phase check answers first"
    );
}

#[test]
fn the_other_side_keeps_its_own_appeal() {
    let (mut p, mut d, _, b) = closed();
    p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    assert_eq!(can(&d, "A"), None);
}

#[test]
fn admitted_appeal_reopens_only_named_threads() {
    let (mut p, mut d, a, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    assert_eq!(
        codes(p.decide_appeal(
            &mut d,
            &ap,
            true,
            Some("Post-closure source of higher tier."),
            Some("arbiter")
        )),
        None
    );
    assert_eq!(d.phase, phase::APPEAL_REVIEW);
    assert_eq!(d.active_appeal_id.as_deref(), Some(ap.as_str()));
    assert!(can_propose(&d, &b.0));
    assert!(!can_propose(&d, &a.0), "untargeted threads stay final");
}

#[test]
fn appeal_targets_are_a_copy_so_editing_the_appeal_cannot_widen_review() {
    let (mut p, mut d, a, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    d.appeals[0].target_thread_ids.push(a.0.clone());
    assert_eq!(d.appeal_targets, vec![b.0.clone()]);
    assert!(!can_propose(&d, &a.0));
}

#[test]
fn appeal_cannot_be_decided_twice() {
    let (mut p, mut d, _, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    assert_eq!(
        codes(p.decide_appeal(
            &mut d,
            &ap,
            false,
            Some("Changed my mind."),
            Some("arbiter")
        )),
        Some("APPEAL_ALREADY_DECIDED")
    );
    assert_eq!(d.appeal(&ap).unwrap().status, "admitted");
}

#[test]
fn concluding_requires_a_review_in_progress() {
    let (mut p, mut d, _, _) = closed();
    let e = p
        .conclude_appeal_review(&mut d, Some("arbiter"), None)
        .unwrap_err();
    assert_eq!(e.code.as_str(), "APPEAL_NOT_IN_REVIEW");
}

#[test]
fn concluding_blocked_by_this_cycles_open_challenges_and_pending_candidates() {
    let (mut p, mut d, _, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    let mut ci = challenge_input(&b.0, &b.1, "A");
    ci.ground = Some("counter-evidence".into());
    ci.evidence = vec![cite("T2")];
    let c = p.file_challenge(&mut d, ci).unwrap();
    let conclude = |p: &mut P, d: &mut crucible::Debate| {
        p.conclude_appeal_review(d, Some("arbiter"), None)
            .err()
            .map(|e| e.code.as_str())
    };
    assert_eq!(conclude(&mut p, &mut d), Some("APPEAL_OPEN_CHALLENGES"));
    p.resolve_challenge(
        &mut d,
        &c,
        "dismissed",
        Some("It measures a different quantity."),
        Some("arbiter"),
    )
    .unwrap();
    let pending = p
        .add_version(&mut d, &b.0, claim_with("B", vec![cite("T1")]))
        .unwrap();
    assert_eq!(conclude(&mut p, &mut d), Some("APPEAL_PENDING_CANDIDATES"));
    p.merge_version(
        &mut d,
        &b.0,
        &pending,
        Some("stronger source admitted on appeal"),
        Some("arbiter"),
    )
    .unwrap();
    assert_eq!(conclude(&mut p, &mut d), None);
}

#[test]
fn stale_challenge_from_original_cycle_does_not_block_later_appeal() {
    let (mut p, mut d, a, b) = closed();
    d.challenges
        .push(raw_challenge("stale", &a.0, &a.1, Some("B"), None));
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    assert!(
        p.conclude_appeal_review(&mut d, Some("arbiter"), None)
            .is_ok()
    );
}

#[test]
fn pending_candidate_on_untargeted_thread_does_not_block_concluding() {
    let (mut p, mut d, a, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    p.add_version(&mut d, &a.0, claim("A")).unwrap();
    assert!(
        p.conclude_appeal_review(&mut d, Some("arbiter"), None)
            .is_ok()
    );
}

#[test]
fn concluding_issues_revised_verdict_and_closes_again() {
    let (mut p, mut d, _, b) = closed();
    let ap = p.file_appeal(&mut d, appeal_on(&[&b.0])).unwrap();
    p.decide_appeal(&mut d, &ap, true, Some("Admitted."), Some("arbiter"))
        .unwrap();
    let stronger = p
        .add_version(&mut d, &b.0, claim_with("B", vec![cite("T1")]))
        .unwrap();
    p.merge_version(
        &mut d,
        &b.0,
        &stronger,
        Some("admitted source raises the evidence base"),
        Some("arbiter"),
    )
    .unwrap();
    let first = d.verdicts[0].clone();
    assert_eq!(
        p.conclude_appeal_review(&mut d, Some("arbiter"), None),
        Ok(2)
    );
    assert_eq!(d.verdicts.len(), 2);
    assert_eq!(d.verdicts[1].via_appeal_id.as_deref(), Some(ap.as_str()));
    assert_eq!(d.appeal(&ap).unwrap().status, "resolved");
    assert_eq!(d.phase, phase::CLOSED);
    assert_eq!(d.active_appeal_id, None);
    assert!(d.appeal_targets.is_empty());
    assert_eq!(
        d.verdicts[0], first,
        "the original verdict stays on the record unchanged"
    );
    assert_eq!(d.verdicts[0].via_appeal_id, None);
}
