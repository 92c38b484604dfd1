//! The default exam loads, meets the issue's content bars, and scores the demo arbiters
//! into the expected admission decisions; malformed answers are refused with line numbers.

use calibration::admission::{AdmissionPolicy, assess};
use calibration::exam::{Gold, load_exam};
use calibration::exam_scoring::{load_answers, score_answers};
use calibration::inert::InertPolicy;

const EXAM: &str = include_str!("../../exams/default-v1.jsonl");
const DEMO: &str = include_str!("../../exams/examples/answers-demo.jsonl");

#[test]
fn default_exam_meets_the_content_bars() {
    let exam = load_exam(EXAM).unwrap();
    assert_eq!(exam.name, "crucible-panel-default");
    assert!(exam.items.len() >= 60, "{} items", exam.items.len());
    assert!(exam.count("quantity") >= 10);
    assert!(exam.count("relevance") >= 5 && exam.count("tier") >= 5);
    assert!(
        exam.items.iter().all(|i| i.source.len() > 20),
        "every gold answer names a source"
    );
    for tag in [
        "challenge",
        "tier-claim",
        "off-resolution",
        "ad-hominem",
        "citation",
    ] {
        assert!(
            exam.items.iter().any(|i| i.tags.iter().any(|t| t == tag)),
            "no item tagged {tag}"
        );
    }
    // Both gold outcomes are present among challenges, so "always uphold" cannot pass.
    let challenges: Vec<bool> = exam
        .items
        .iter()
        .filter(|i| i.tags.iter().any(|t| t == "challenge"))
        .filter_map(|i| match i.gold {
            Gold::Binary(b) => Some(b),
            _ => None,
        })
        .collect();
    assert!(challenges.contains(&true) && challenges.contains(&false));
    // Every quantity's gold lies inside its frozen range.
    for i in &exam.items {
        if let Gold::Quantity { value, range, .. } = i.gold {
            assert!(range.0 <= value && value <= range.1, "{}", i.id);
        }
    }
}

/// The content hash is pinned: any edit to the exam must come with a new version (and a
/// new pinned hash here), so that scores always name the exact exam they came from.
#[test]
fn default_exam_hash_is_pinned() {
    let exam = load_exam(EXAM).unwrap();
    assert_eq!(exam.version, "1.0.0");
    assert_eq!(
        exam.content_hash,
        "sha256:721da19cbfd4652fa52c68433f3f9b610a9fbe85f4b68bbe0f111473e529318a"
    );
}

#[test]
fn demo_arbiters_get_the_expected_decisions() {
    let exam = load_exam(EXAM).unwrap();
    let answers = load_answers(&exam, DEMO).unwrap();
    let scores = score_answers(&exam, &answers, &InertPolicy::default()).unwrap();
    let policy = AdmissionPolicy::default();
    let now = 1_796_040_000; // 2026-11-30T12:00:00Z
    let decide = |id: &str| {
        let s = scores.iter().find(|s| s.arbiter == id).unwrap();
        assess(&policy, s, now)
    };
    let careful = decide("careful");
    assert!(careful.admitted, "{careful:?}");
    assert_eq!(careful.reexam_not_before, None);

    let over = decide("overconfident");
    assert!(!over.admitted);
    let bars: Vec<&str> = over.failed.iter().map(|f| f.bar).collect();
    assert_eq!(bars, ["calibration", "log_score"]);
    assert_eq!(over.reexam_not_before, Some(now + 14 * 86_400));
    assert_eq!(over.reexam_date.as_deref(), Some("2026-12-14T12:00:00Z"));

    let inert = decide("inert-relevance");
    let bars: Vec<&str> = inert.failed.iter().map(|f| f.bar).collect();
    assert_eq!(bars, ["inert_relevance"]);
}

#[test]
fn an_arbiter_with_too_few_answers_is_refused_on_counts() {
    let exam = load_exam(EXAM).unwrap();
    let few: String = DEMO
        .lines()
        .filter(|l| l.contains("\"careful\""))
        .take(20)
        .map(|l| format!("{l}\n"))
        .collect();
    let answers = load_answers(&exam, &few).unwrap();
    let scores = score_answers(&exam, &answers, &InertPolicy::default()).unwrap();
    let d = assess(&AdmissionPolicy::default(), &scores[0], 0);
    let bars: Vec<&str> = d.failed.iter().map(|f| f.bar).collect();
    assert!(
        bars.contains(&"quantile_seeds") && bars.contains(&"binary_items"),
        "{bars:?}"
    );
    assert_eq!(scores[0].missing.len(), exam.items.len() - 20);
}

#[test]
fn malformed_answers_are_refused_with_line_and_field() {
    let exam = load_exam(EXAM).unwrap();
    let text = [
        r#"{"arbiter": "a", "item": "chl-01", "answer": 0.3}"#,
        r#"{"arbiter": "a", "item": "chl-01", "answer": 0.4}"#,
        r#"{"arbiter": "a", "item": "no-such-item", "answer": 0.4}"#,
        r#"{"arbiter": "a", "item": "chl-02", "answer": 1.4}"#,
        r#"{"arbiter": "a", "item": "qty-01", "answer": [9000, 8000, 9500]}"#,
        r#"{"arbiter": "a", "item": "qty-02", "answer": [1, 2]}"#,
        r#"{"arbiter": "a", "item": "tir-01", "answer": "T9"}"#,
        r#"{"arbiter": "a", "item": "rel-01", "answer": 0.6}"#,
        r#"{"item": "rel-02", "answer": 0.5}"#,
        r#"not json"#,
        r#"{"arbiter": "a", "item": "rel-03"}"#,
    ]
    .join("\n");
    let errors = load_answers(&exam, &text).unwrap_err();
    let got: Vec<(usize, &str)> = errors.iter().map(|e| (e.line, e.field.as_str())).collect();
    assert_eq!(
        got,
        [
            (2, "$.item"),
            (3, "$.item"),
            (4, "$.answer"),
            (5, "$.answer"),
            (6, "$.answer"),
            (7, "$.answer"),
            (8, "$.answer"),
            (9, "$.arbiter"),
            (10, "$"),
            (11, "$.answer"),
        ]
    );
    assert!(errors[0].message.contains("twice"));
}
