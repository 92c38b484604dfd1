//! Challenges (SPEC section 7): ports of the reference suite's test/challenges.test.js (8).

mod engine_common;

use crucible::document::phase;
use crucible::scoring::version_merit;
use engine_common::*;

#[test]
fn upheld_challenge_demotes_canonical_version_and_empties_thread() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    assert_eq!(
        codes(p.resolve_challenge(
            &mut d,
            &c,
            "upheld",
            Some("The warrant fails."),
            Some("arbiter")
        )),
        None
    );
    assert_eq!(version(&d, &t, &v).status, "demoted");
    assert_eq!(d.thread(&t).unwrap().canonical_id, None);
    assert!(d.log.iter().any(|e| e.action == "version-demoted"));
}

#[test]
fn upheld_challenge_against_superseded_version_leaves_main_branch_alone() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let t = p
        .create_thread(&mut d, Some("A"), Some("Claim"), Some("contributor"))
        .unwrap();
    let v1 = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T3")]))
        .unwrap();
    p.merge_version(&mut d, &t, &v1, Some("first"), Some("arbiter"))
        .unwrap();
    let v2 = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T1")]))
        .unwrap();
    p.verify_tier(&mut d, &t, &v2, 0, Some("Checked."), Some("arbiter"))
        .unwrap();
    p.merge_version(&mut d, &t, &v2, Some("stronger"), Some("arbiter"))
        .unwrap();
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v1, "B"))
        .unwrap();
    p.resolve_challenge(
        &mut d,
        &c,
        "upheld",
        Some("Against the old version."),
        Some("arbiter"),
    )
    .unwrap();
    assert_eq!(version(&d, &t, &v1).status, "superseded");
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(v2.as_str())
    );
}

#[test]
fn dismissed_challenge_raises_survival_factor() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let before = version_merit(&d, version(&d, &t, &v)).merit;
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    p.resolve_challenge(
        &mut d,
        &c,
        "dismissed",
        Some("The objection targets a stronger claim."),
        Some("arbiter"),
    )
    .unwrap();
    let after = version_merit(&d, version(&d, &t, &v));
    assert_eq!(approx(after.s, 4), 1.1);
    assert_eq!(approx(after.merit, 4), approx(before * 1.1, 4));
    assert_eq!(version(&d, &t, &v).status, "merged");
}

#[test]
fn challenge_cannot_be_resolved_twice() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    assert_eq!(
        codes(p.resolve_challenge(&mut d, &c, "dismissed", Some("first"), Some("arbiter"))),
        None
    );
    assert_eq!(
        codes(p.resolve_challenge(&mut d, &c, "upheld", Some("second"), Some("arbiter"))),
        Some("CHALLENGE_ALREADY_RESOLVED")
    );
    assert_eq!(
        d.challenge(&c).unwrap().resolution.as_deref(),
        Some("dismissed")
    );
}

#[test]
fn challenges_filed_outside_an_appeal_carry_no_appeal_id() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    d.phase = phase::CHALLENGE.into();
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    assert_eq!(d.challenge(&c).unwrap().appeal_id, None);
}

#[test]
fn challenges_filed_during_appeal_review_are_stamped_with_the_appeal() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    d.phase = phase::APPEAL_REVIEW.into();
    d.active_appeal_id = Some("app_1".into());
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    assert_eq!(d.challenge(&c).unwrap().appeal_id.as_deref(), Some("app_1"));
}

#[test]
fn response_is_recorded_with_author_side_and_timestamp() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    p.respond_challenge(
        &mut d,
        &c,
        Some("The warrant is scoped to hours."),
        Some("defender"),
        Some("A"),
    )
    .unwrap();
    let r = d
        .challenge(&c)
        .unwrap()
        .response
        .clone()
        .expect("response stored");
    assert_eq!(r.author.as_deref(), Some("defender"));
    assert_eq!(r.side.as_deref(), Some("A"));
    assert!(r.ts.is_some_and(|ts| ts.0 > 0.0));
}

#[test]
fn repaired_version_merges_onto_thread_emptied_by_demotion() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed(&mut p, &mut d, claim_with("A", vec![cite("T5")]), None);
    let mut ci = challenge_input(&t, &v, "B");
    ci.ground = Some("evidence-validity".into());
    let c = p.file_challenge(&mut d, ci).unwrap();
    p.resolve_challenge(
        &mut d,
        &c,
        "upheld",
        Some("The source cannot support the generality."),
        Some("arbiter"),
    )
    .unwrap();
    let repair = p
        .add_version(&mut d, &t, claim_with("A", vec![cite("T3")]))
        .unwrap();
    assert_eq!(
        codes(p.merge_version(&mut d, &t, &repair, Some("repaired"), Some("arbiter"))),
        None
    );
    assert_eq!(
        d.thread(&t).unwrap().canonical_id.as_deref(),
        Some(repair.as_str())
    );
    assert_eq!(version(&d, &t, &v).status, "demoted");
}
