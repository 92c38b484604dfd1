//! Merge review (SPEC section 10): ports of the reference suite's test/merge.test.js (9).

mod engine_common;

use crucible::scoring::version_merit;
use engine_common::*;

fn setup() -> (P, crucible::Debate, String) {
    let mut p = proto();
    let mut d = debate(&mut p);
    let t = p
        .create_thread(&mut d, Some("A"), Some("Test claim"), Some("contributor"))
        .unwrap();
    (p, d, t)
}

#[test]
fn first_merge_needs_no_incumbent_and_sets_canonical() {
    let (mut p, mut d, t) = setup();
    let v = p.add_version(&mut d, &t, claim("A")).unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &v, Some("first"), Some("arbiter"))),
        None
    );
    assert_eq!(version(&d, &t, &v).status, "merged");
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(v.as_str())
    );
}

#[test]
fn stronger_candidate_supersedes_incumbent_only_once_tier_verified() {
    let (mut p, mut d, t) = setup();
    let weak = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T3")]))
        .unwrap();
    p.merge_version(&mut d, &t, &weak, Some("first"), Some("arbiter"))
        .unwrap();
    let strong = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T1")]))
        .unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &strong, Some("stronger"), Some("arbiter"))),
        Some("MERGE_NOT_ON_MERIT")
    );
    assert_eq!(
        codes(p.verify_tier(
            &mut d,
            &t,
            &strong,
            0,
            Some("Checked: systematic review."),
            Some("arbiter")
        )),
        None
    );
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &strong, Some("stronger"), Some("arbiter"))),
        None
    );
    assert_eq!(version(&d, &t, &weak).status, "superseded");
    assert_eq!(version(&d, &t, &strong).status, "merged");
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(strong.as_str())
    );
    assert!(d.log.iter().any(|e| e.action == "tier-verified"));
}

#[test]
fn weaker_candidate_refused_and_incumbent_untouched() {
    let (mut p, mut d, t) = setup();
    let strong = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T1")]))
        .unwrap();
    p.merge_version(&mut d, &t, &strong, Some("first"), Some("arbiter"))
        .unwrap();
    let weak = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T5")]))
        .unwrap();
    let e = p
        .merge_version(&mut d, &t, &weak, Some("attempt"), Some("arbiter"))
        .unwrap_err();
    assert_eq!(e.code.as_str(), "MERGE_NOT_ON_MERIT");
    assert!(e.message.contains("does not exceed"), "{}", e.message);
    assert_eq!(version(&d, &t, &strong).status, "merged");
    assert_eq!(version(&d, &t, &weak).status, "candidate");
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(strong.as_str())
    );
}

#[test]
fn equal_merit_is_refused() {
    let (mut p, mut d, t) = setup();
    let first = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T3")]))
        .unwrap();
    p.merge_version(&mut d, &t, &first, Some("first"), Some("arbiter"))
        .unwrap();
    let same = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T3")]))
        .unwrap();
    assert_eq!(
        version_merit(&d, version(&d, &t, &same)).merit,
        version_merit(&d, version(&d, &t, &first)).merit
    );
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &same, Some("attempt"), Some("arbiter"))),
        Some("MERGE_NOT_ON_MERIT")
    );
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(first.as_str())
    );
}

#[test]
fn candidate_without_relevance_inherits_incumbent_relevance() {
    let (mut p, mut d, t) = setup();
    let mut c = claim_with("A", vec![cite("T3")]);
    c.relevance = Some(0.75);
    let first = p.add_version(&mut d, &t, c).unwrap();
    p.merge_version(&mut d, &t, &first, Some("first"), Some("arbiter"))
        .unwrap();
    let next = p
        .add_version(&mut d, &t, claim_with("A", vec![cite_ok("T1")]))
        .unwrap();
    assert_eq!(version(&d, &t, &next).relevance, None);
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &next, Some("stronger"), Some("arbiter"))),
        None
    );
    assert_eq!(version(&d, &t, &next).relevance.map(|r| r.0), Some(0.75));
}

#[test]
fn explicit_candidate_relevance_is_not_overwritten() {
    let (mut p, mut d, t) = setup();
    let mut c = claim_with("A", vec![cite("T3")]);
    c.relevance = Some(0.25);
    let first = p.add_version(&mut d, &t, c).unwrap();
    p.merge_version(&mut d, &t, &first, Some("first"), Some("arbiter"))
        .unwrap();
    let mut c2 = claim_with("A", vec![cite_ok("T1")]);
    c2.relevance = Some(1.0);
    let next = p.add_version(&mut d, &t, c2).unwrap();
    p.merge_version(&mut d, &t, &next, Some("stronger"), Some("arbiter"))
        .unwrap();
    assert_eq!(version(&d, &t, &next).relevance.map(|r| r.0), Some(1.0));
}

#[test]
fn merging_a_non_candidate_or_unknown_id_is_refused() {
    let (mut p, mut d, t) = setup();
    let v = p.add_version(&mut d, &t, claim("A")).unwrap();
    p.merge_version(&mut d, &t, &v, Some("first"), Some("arbiter"))
        .unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &v, Some("again"), Some("arbiter"))),
        Some("MERGE_NOT_CANDIDATE")
    );
    assert_eq!(
        codes(p.merge_version(&mut d, &t, "no-such-id", Some("x"), Some("arbiter"))),
        Some("MERGE_NOT_CANDIDATE")
    );
}

#[test]
fn rejection_records_rationale_and_applies_only_to_candidates() {
    let (mut p, mut d, t) = setup();
    let v = p.add_version(&mut d, &t, claim("A")).unwrap();
    assert_eq!(
        codes(p.reject_version(&mut d, &t, &v, Some("below the bar"), Some("arbiter"))),
        None
    );
    assert_eq!(version(&d, &t, &v).status, "rejected");
    assert_eq!(version(&d, &t, &v).merge_rationale, "below the bar");
    assert_eq!(
        codes(p.reject_version(&mut d, &t, &v, Some("again"), Some("arbiter"))),
        Some("REJECT_NOT_CANDIDATE")
    );
}

#[test]
fn version_numbers_and_parent_links_track_thread_history() {
    let (mut p, mut d, t) = setup();
    let v1 = p.add_version(&mut d, &t, claim("A")).unwrap();
    p.merge_version(&mut d, &t, &v1, Some("first"), Some("arbiter"))
        .unwrap();
    let v2 = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T1")]))
        .unwrap();
    assert_eq!(version(&d, &t, &v1).num, 1);
    assert_eq!(version(&d, &t, &v2).num, 2);
    assert_eq!(version(&d, &t, &v2).parent_id.as_deref(), Some(v1.as_str()));
}
