//! End to end: the reference's sample debate rebuilt through our writers, and ports of
//! test/protocol.test.js (11), plus interop of documents between the engines.

mod engine_common;

use crucible::appeal::AppealInput;
use crucible::document::{Definition, phase};
use crucible::migrate::{load, load_value};
use crucible::model::{NewDebate, VersionInput};
use crucible::scoring::compute_ledger;
use crucible::{Citation, Conformance, Debate, FixedEnv, Protocol, Side};
use engine_common::*;

/// 2026-01-12T09:00:00Z, the reference protocol test's T0.
const SAMPLE_T0: i64 = 1_768_208_400_000;

fn c(tier: &str) -> Citation {
    Citation::new("placeholder", "https://example.org/placeholder", tier)
}

fn v(
    author: &str,
    side: &str,
    assertion: &str,
    evidence: Vec<Citation>,
    qualifier: &str,
    relevance: Option<f64>,
) -> VersionInput {
    VersionInput {
        author: Some(author.into()),
        side: Some(side.into()),
        kind: Some("empirical".into()),
        assertion: Some(assertion.into()),
        grounds: Some("The cited source reports it.".into()),
        warrant: Some("If the source holds, the assertion follows.".into()),
        evidence,
        qualifier: Some(qualifier.into()),
        relevance,
        ..VersionInput::default()
    }
}

struct Sample {
    p: P,
    d: Debate,
    ta1: String,
    tb1: String,
}

/// The reference's examples/sample-debate.js, step for step (texts shortened).
fn build() -> Sample {
    let mut p = Protocol::with_mode(FixedEnv::new(SAMPLE_T0, 1000), Conformance::Reference);
    let arb = Some("arbiter");
    let mut d = p.new_debate(NewDebate {
        resolution:
            "Resolved: mandatory pre-merge code review reduces defect rates in software teams."
                .into(),
        pos_a: "Affirmative: review reduces defects".into(),
        pos_b: "Negative: the effect is small or offset by its costs".into(),
        burden: Some("A".into()),
        claim_budget: None,
    });
    p.add_definition(
        &mut d,
        Definition {
            term: Some("defect rate".into()),
            definition: Some("Defects per thousand changed lines over 90 days.".into()),
            author: Some("contributor-a".into()),
            side: Some("A".into()),
        },
    );
    p.advance_phase(&mut d, arb).unwrap();
    let ta1 = p
        .create_thread(
            &mut d,
            Some("A"),
            Some("Measured defect reduction"),
            Some("contributor-a"),
        )
        .unwrap();
    let a1v1 = p
        .add_version(
            &mut d,
            &ta1,
            v(
                "contributor-a",
                "A",
                "Review lowers defect rates.",
                vec![c("T3")],
                "plausible",
                None,
            ),
        )
        .unwrap();
    p.merge_version(&mut d, &ta1, &a1v1, Some("First compliant version."), arb)
        .unwrap();
    let a1v2 = p
        .add_version(
            &mut d,
            &ta1,
            v(
                "contributor-c",
                "A",
                "Review lowers defect rates.",
                vec![c("T1"), c("T2")],
                "probable",
                Some(1.0),
            ),
        )
        .unwrap();
    p.verify_tier(
        &mut d,
        &ta1,
        &a1v2,
        0,
        Some("Retrieved: meta-analysis."),
        arb,
    )
    .unwrap();
    p.verify_tier(&mut d, &ta1, &a1v2, 1, Some("Retrieved: cohort."), arb)
        .unwrap();
    p.merge_version(
        &mut d,
        &ta1,
        &a1v2,
        Some("Verified T1 plus T2 exceeds the incumbent."),
        arb,
    )
    .unwrap();
    let ta2 = p
        .create_thread(
            &mut d,
            Some("A"),
            Some("Knowledge transfer"),
            Some("contributor-a"),
        )
        .unwrap();
    let a2v1 = p
        .add_version(
            &mut d,
            &ta2,
            v(
                "contributor-a",
                "A",
                "Review spreads familiarity.",
                vec![c("T4")],
                "probable",
                Some(0.5),
            ),
        )
        .unwrap();
    p.merge_version(&mut d, &ta2, &a2v1, Some("Compliant, T4."), arb)
        .unwrap();
    let tb1 = p
        .create_thread(
            &mut d,
            Some("B"),
            Some("Cycle time cost"),
            Some("contributor-b"),
        )
        .unwrap();
    let b1v1 = p
        .add_version(
            &mut d,
            &tb1,
            v(
                "contributor-b",
                "B",
                "Review delay offsets its benefit.",
                vec![c("T5")],
                "probable",
                Some(0.75),
            ),
        )
        .unwrap();
    p.merge_version(&mut d, &tb1, &b1v1, Some("Compliant in form, T5."), arb)
        .unwrap();
    let tb2 = p
        .create_thread(
            &mut d,
            Some("B"),
            Some("Reviewer attention limits"),
            Some("contributor-b"),
        )
        .unwrap();
    let b2v1 = p
        .add_version(
            &mut d,
            &tb2,
            v(
                "contributor-b",
                "B",
                "Detection falls with changeset size.",
                vec![c("T3")],
                "probable",
                Some(0.75),
            ),
        )
        .unwrap();
    p.merge_version(&mut d, &tb2, &b2v1, Some("Peer-reviewed T3."), arb)
        .unwrap();
    p.advance_phase(&mut d, arb).unwrap();

    let mut ch1 = challenge_input(&ta2, &a2v1, "B");
    ch1.ground = Some("relevance".into());
    ch1.author = Some("contributor-b".into());
    let c1 = p.file_challenge(&mut d, ch1).unwrap();
    p.respond_challenge(
        &mut d,
        &c1,
        Some("The definition does not restrict the ledger."),
        Some("contributor-a"),
        Some("A"),
    )
    .unwrap();
    p.resolve_challenge(
        &mut d,
        &c1,
        "dismissed",
        Some("The claim bears on the resolution, indirectly."),
        arb,
    )
    .unwrap();
    let mut ch2 = challenge_input(&tb1, &b1v1, "A");
    ch2.ground = Some("evidence-validity".into());
    ch2.evidence = vec![c("T3")];
    ch2.author = Some("contributor-a".into());
    let c2 = p.file_challenge(&mut d, ch2).unwrap();
    p.respond_challenge(
        &mut d,
        &c2,
        Some("Repair rather than remove."),
        Some("contributor-b"),
        Some("B"),
    )
    .unwrap();
    p.resolve_challenge(
        &mut d,
        &c2,
        "upheld",
        Some("The source cannot support the generality asserted."),
        arb,
    )
    .unwrap();
    let b1v2 = p
        .add_version(
            &mut d,
            &tb1,
            v(
                "contributor-b",
                "B",
                "Review increases time to merge.",
                vec![c("T3")],
                "probable",
                Some(0.75),
            ),
        )
        .unwrap();
    p.merge_version(
        &mut d,
        &tb1,
        &b1v2,
        Some("Repair with the dataset named in the challenge."),
        arb,
    )
    .unwrap();
    p.advance_phase(&mut d, arb).unwrap();

    p.submit_steelman(
        &mut d,
        Side::A,
        Some("The affirmative case holds that review lowers defects."),
        Some("contributor-b"),
        Some("B"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::A, Some("contributor-a"), Some("A"))
        .unwrap();
    p.submit_steelman(
        &mut d,
        Side::B,
        Some("The negative case holds that review costs time."),
        Some("contributor-a"),
        Some("A"),
    )
    .unwrap();
    p.certify_steelman(&mut d, Side::B, Some("contributor-b"), Some("B"))
        .unwrap();
    p.advance_phase(&mut d, arb).unwrap();
    p.advance_phase(&mut d, arb).unwrap();
    p.issue_verdict(&mut d, None, None, arb);
    p.close_debate(&mut d, arb).unwrap();
    Sample { p, d, ta1, tb1 }
}

/// The reference's runSampleAppeal: an A1 appeal adding a stronger source to B1.
fn run_appeal(s: &mut Sample) -> String {
    let (p, d) = (&mut s.p, &mut s.d);
    let arb = Some("arbiter");
    let ap = p
        .file_appeal(
            d,
            AppealInput {
                side: Some("B".into()),
                author: Some("contributor-b".into()),
                ground: Some("A1".into()),
                justification: Some("A post-closure cohort study bears on the thread.".into()),
                evidence: vec![c("T2")],
                target_thread_ids: vec![s.tb1.clone()],
            },
        )
        .unwrap();
    p.decide_appeal(d, &ap, true, Some("Ground A1 is satisfied."), arb)
        .unwrap();
    let rv = p
        .add_version(
            d,
            &s.tb1,
            v(
                "contributor-b",
                "B",
                "Review increases time to merge.",
                vec![c("T2"), c("T3")],
                "probable",
                Some(0.75),
            ),
        )
        .unwrap();
    p.verify_tier(
        d,
        &s.tb1,
        &rv,
        0,
        Some("Retrieved during appeal review."),
        arb,
    )
    .unwrap();
    p.merge_version(
        d,
        &s.tb1,
        &rv,
        Some("Adds the admitted, verified source."),
        arb,
    )
    .unwrap();
    p.conclude_appeal_review(d, arb, None).unwrap();
    ap
}

#[test]
fn sample_debate_reaches_closed_record_with_one_verdict() {
    let s = build();
    assert_eq!(s.d.phase, phase::CLOSED);
    assert_eq!(s.d.verdicts.len(), 1);
    assert_eq!(s.d.threads.len(), 4);
    assert_eq!(s.d.schema_version, 1);
}

#[test]
fn ledger_scores_exactly_the_four_canonical_versions() {
    let s = build();
    let l = compute_ledger(&s.d);
    assert_eq!(l.rows.len(), 4);
    assert_eq!(approx(l.totals.a, 3), 5.94);
    assert_eq!(approx(l.totals.b, 3), 4.05);
    let mut merits: Vec<(String, f64)> = l
        .rows
        .iter()
        .map(|r| (r.thread_title.unwrap().to_string(), approx(r.merit.0, 3)))
        .collect();
    merits.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        merits,
        vec![
            ("Cycle time cost".to_string(), 2.025),
            ("Knowledge transfer".to_string(), 0.99),
            ("Measured defect reduction".to_string(), 4.95),
            ("Reviewer attention limits".to_string(), 2.025),
        ]
    );
}

#[test]
fn verdict_lands_in_clear_band_for_side_a() {
    let s = build();
    let v = &s.d.verdicts[0];
    assert_eq!(v.winner, Some(Side::A));
    assert_eq!(v.band.key, "clear");
    assert_eq!(
        crucible::verdict::js_to_fixed(v.margin.0 * 100.0, 1),
        "31.8"
    );
    assert_eq!(v.ledger.len(), 4);
    assert!(v.rationale.contains("Verdict for Side A"));
}

#[test]
fn superseded_and_demoted_versions_stay_in_history_and_score_nothing() {
    let s = build();
    let st = |t: &str| {
        s.d.thread(t)
            .unwrap()
            .versions
            .iter()
            .map(|v| v.status.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(st(&s.ta1), ["superseded", "merged"]);
    assert_eq!(st(&s.tb1), ["demoted", "merged"]);
    let scored: Vec<String> = compute_ledger(&s.d)
        .rows
        .into_iter()
        .map(|r| r.version_id.to_string())
        .collect();
    for t in &s.d.threads {
        for v in t.versions.iter().filter(|v| v.status != "merged") {
            assert!(
                !scored.contains(&v.id),
                "{} version {} is not in the ledger",
                v.status,
                v.id
            );
        }
    }
}

#[test]
fn admitted_appeal_recomputes_verdict_and_narrows_margin() {
    let mut s = build();
    let before = s.d.verdicts[0].clone();
    let ap = run_appeal(&mut s);
    assert_eq!(s.d.verdicts.len(), 2);
    let after = &s.d.verdicts[1];
    assert_eq!(after.via_appeal_id.as_deref(), Some(ap.as_str()));
    assert_eq!(s.d.appeal(&ap).unwrap().status, "resolved");
    assert_eq!(s.d.phase, phase::CLOSED);
    assert_eq!(approx(after.totals.b.0, 4), 5.0625);
    assert_eq!(after.totals.a, before.totals.a);
    assert!(after.margin.0 < before.margin.0);
    assert_eq!(after.band.key, "balance");
    assert_eq!(s.d.verdicts[0], before);
}

#[test]
fn run_is_reproducible_byte_for_byte() {
    let mut a = build();
    run_appeal(&mut a);
    let mut b = build();
    run_appeal(&mut b);
    assert_eq!(a.d.to_json().to_string(), b.d.to_json().to_string());
}

#[test]
fn log_records_full_history_in_order() {
    let mut s = build();
    run_appeal(&mut s);
    let actions: Vec<&str> = s.d.log.iter().map(|e| e.action.as_str()).collect();
    for want in [
        "debate-created",
        "thread-opened",
        "version-proposed",
        "version-merged",
        "challenge-filed",
        "challenge-response",
        "challenge-dismissed",
        "challenge-upheld",
        "version-demoted",
        "steelman-submitted",
        "steelman-certified",
        "phase-advanced",
        "verdict-issued",
        "debate-closed",
        "appeal-filed",
        "appeal-admitted",
        "appeal-resolved",
    ] {
        assert!(actions.contains(&want), "log contains {want}");
    }
    let first = |a: &str| actions.iter().position(|x| *x == a).unwrap();
    let last = |a: &str| actions.iter().rposition(|x| *x == a).unwrap();
    assert!(first("version-demoted") < first("verdict-issued"));
    assert!(last("verdict-issued") > first("appeal-admitted"));
}

#[test]
fn every_attribution_is_preserved() {
    let s = build();
    for t in &s.d.threads {
        for v in &t.versions {
            assert!(v.author.as_deref().is_some_and(|a| !a.is_empty()));
            assert!(matches!(v.side.as_deref(), Some("A" | "B")));
        }
    }
    for c in &s.d.challenges {
        assert!(c.author.is_some() && matches!(c.side.as_deref(), Some("A" | "B")));
    }
}

#[test]
fn document_survives_json_round_trip_with_same_totals() {
    let s = build();
    let revived = load(&s.d.to_json().to_string()).unwrap();
    assert_eq!(compute_ledger(&revived).totals, compute_ledger(&s.d).totals);
    assert_eq!(revived, s.d);
}

#[test]
fn migrate_repairs_document_missing_later_added_structure() {
    let s = build();
    let mut stale = s.d.to_json();
    let o = stale.as_object_mut().unwrap();
    o.remove("appealTargets");
    o.remove("activeAppealId");
    o.remove("schemaVersion");
    o["steelmans"].as_object_mut().unwrap().remove("B");
    o["threads"][0]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("evidence");
    let fixed = load_value(stale).unwrap();
    assert!(fixed.appeal_targets.is_empty());
    assert_eq!(fixed.active_appeal_id, None);
    assert_eq!(fixed.schema_version, 1);
    assert_eq!(fixed.steelmans.b.status, "none");
    assert!(fixed.threads[0].versions[0].evidence.is_empty());
    let _ = compute_ledger(&fixed);
}

#[test]
fn migrate_is_safe_on_junk_input() {
    assert!(load("null").is_err());
    assert!(load("[]").is_err());
    let empty = load("{}").expect("an empty object migrates to an empty debate");
    assert_eq!(empty.phase, "framing");
    assert_eq!(empty.burden, "shared");
    assert!(compute_ledger(&empty).rows.is_empty());
}

#[test]
fn reference_document_with_split_surrogate_pair_loads() {
    // The reference cuts log details at 80 UTF-16 units and can write half a pair.
    let doc = r#"{"id":"deb_1","log":[{"ts":1,"actor":"a","side":null,"action":"challenge-response","detail":"xx\ud83d"},
        {"ts":2,"action":"x","detail":"ok \ud83d\ude00 \\ud83d \udc00"}]}"#;
    let d = load(doc).expect("lone surrogates are replaced, not fatal");
    assert_eq!(d.log[0].detail.as_deref(), Some("xx\u{fffd}"));
    assert_eq!(
        d.log[1].detail.as_deref(),
        Some("ok \u{1F600} \\ud83d \u{fffd}")
    );
}

#[test]
fn log_truncation_never_splits_a_surrogate_pair() {
    let mut p = proto();
    let mut d = debate(&mut p);
    let (t, v) = seed_side(&mut p, &mut d, "A");
    let c = p
        .file_challenge(&mut d, challenge_input(&t, &v, "B"))
        .unwrap();
    let text = format!("{}\u{1F600}tail", "x".repeat(79));
    p.respond_challenge(&mut d, &c, Some(&text), Some("def"), Some("A"))
        .unwrap();
    assert_eq!(
        d.log.last().unwrap().detail.as_deref(),
        Some("x".repeat(79).as_str())
    );
}

#[test]
fn undefined_inputs_leave_keys_out_like_the_reference() {
    let mut p = proto();
    let mut d = debate(&mut p);
    p.create_thread(&mut d, Some("A"), None, None).unwrap();
    p.submit_steelman(&mut d, Side::A, Some("text"), None, None)
        .unwrap();
    let j = d.to_json();
    let entry = j["log"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(entry["action"], "steelman-submitted");
    let thread_entry = &j["log"][1];
    assert_eq!(thread_entry["action"], "thread-opened");
    assert!(
        thread_entry.get("detail").is_none(),
        "an undefined title leaves no detail"
    );
    assert!(
        j["steelmans"]["A"].get("side").is_none(),
        "no side given: key absent"
    );
    assert!(
        j["steelmans"]["B"]["side"].is_null(),
        "the empty steelman keeps side: null"
    );
    let back = load(&j.to_string()).unwrap();
    assert_eq!(
        back.to_json(),
        j,
        "absent and null survive a round trip distinctly"
    );
}
