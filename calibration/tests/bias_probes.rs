//! The probe exam (exams/default-v2.jsonl) loads with whole probe groups; the probe bars
//! catch a position-biased and a consequence-swayed arbiter and admit an honest one; a
//! seeded draw keeps the groups whole; and the answer-key commitment binds every gold.

use std::collections::HashSet;

use calibration::admission::{AdmissionPolicy, assess, assess_with_probes};
use calibration::answer_key::{commit_answer_key, verify_answer_key};
use calibration::bias_probes::{ProbeScores, score_probes};
use calibration::exam::{Exam, ExamItem, Gold, ProbeVariant, load_exam};
use calibration::exam_draw::{DrawCounts, draw_items, item_presentation};
use calibration::exam_scoring::{Answer, AnswerValue, ArbiterScores, load_answers, score_arbiter};
use calibration::inert::InertPolicy;

const V1: &str = include_str!("../../exams/default-v1.jsonl");
const V2: &str = include_str!("../../exams/default-v2.jsonl");
const DEMO: &str = include_str!("../../exams/examples/answers-demo.jsonl");
const NOW: i64 = 1_796_040_000;

/// Probes do not touch an exam without them: default-v1 still hashes to its pinned value.
#[test]
fn v1_is_unchanged_and_has_no_probes() {
    let v1 = load_exam(V1).unwrap();
    assert_eq!(
        v1.content_hash,
        "sha256:721da19cbfd4652fa52c68433f3f9b610a9fbe85f4b68bbe0f111473e529318a"
    );
    assert!(v1.items.iter().all(|i| i.probe.is_none() && !i.objective));
    assert!(v1.probe_groups().unwrap().is_empty());
}

#[test]
fn v2_loads_with_whole_probe_groups() {
    let v1 = load_exam(V1).unwrap();
    let v2 = load_exam(V2).unwrap();
    assert_eq!(
        (v2.name.as_str(), v2.version.as_str()),
        ("crucible-panel-default", "2.0.0")
    );
    assert_eq!(
        v2.content_hash, "sha256:b56f7e2d675de146c7c12cf1ed19160218c34fd402629b3df4d282e04bd890ec",
        "any edit of default-v2 needs a new version"
    );
    // Every item of 1.0.0 is in 2.0.0 with the same text and gold.
    for old in &v1.items {
        let new = v2
            .item(&old.id)
            .unwrap_or_else(|| panic!("{} dropped", old.id));
        assert_eq!(
            (
                &old.question,
                &old.motion,
                &old.gold,
                &old.source,
                &old.tags
            ),
            (
                &new.question,
                &new.motion,
                &new.gold,
                &new.source,
                &new.tags
            ),
            "{}",
            old.id
        );
    }
    let groups = v2.probe_groups().unwrap();
    assert!(groups.len() >= 8, "{} groups", groups.len());
    let golds: HashSet<bool> = groups.iter().map(|g| g.gold).collect();
    assert_eq!(golds.len(), 2, "groups with both gold answers");
    for g in &groups {
        assert!(
            g.order_swapped.is_some() && g.padded.is_some() && g.consequence.is_some(),
            "group {} lacks a variant",
            g.id
        );
        let base = v2.item(&g.base).unwrap();
        for id in g.members().skip(1) {
            let v = v2.item(id).unwrap();
            assert_eq!(v.question, base.question, "{id}");
            assert_ne!(v.motion, base.motion, "{id} presents the base unchanged");
            assert_eq!(v.gold, base.gold, "{id}");
        }
        // The padded and consequence variants extend the base; the swap reorders it.
        let text = |id: &Option<String>| v2.item(id.as_deref().unwrap()).unwrap().motion.clone();
        let base_text = base.motion.clone().unwrap();
        assert!(text(&g.padded).unwrap().starts_with(&base_text));
        assert!(text(&g.consequence).unwrap().starts_with(&base_text));
        assert!(text(&g.consequence).unwrap().contains("If "));
    }
    let objective = v2.items.iter().filter(|i| i.objective).count();
    assert!(objective >= 20, "{objective} objective items");
    // Variant ids look like ordinary items: nothing in the id names the probe.
    for i in v2.items.iter().filter(|i| i.probe.is_some()) {
        assert!(
            !i.id.contains("probe") && !i.id.contains("swap"),
            "{}",
            i.id
        );
    }
}

#[test]
fn malformed_probes_are_refused_with_line_numbers() {
    let header = r#"{"exam":"t","version":"1","quantiles":[0.05,0.5,0.95]}"#;
    let item = |id: &str, gold: bool, probe: &str| {
        format!(
            r#"{{"id":"{id}","kind":"binary","question":"q","gold":{gold},"source":"s","probe":{probe}}}"#
        )
    };
    let cases: Vec<(String, usize, &str)> = vec![
        (
            format!(
                "{header}\n{}",
                item("a", true, r#"{"group":"g","variant":"padded"}"#)
            ),
            2,
            "$.probe.group",
        ),
        (
            format!(
                "{header}\n{}",
                item("a", true, r#"{"group":"g","variant":"sideways"}"#)
            ),
            2,
            "$.probe.variant",
        ),
        (
            format!(
                "{header}\n{}\n\n{}",
                item("a", true, r#"{"group":"g","variant":"base"}"#),
                item("b", false, r#"{"group":"g","variant":"order_swapped"}"#)
            ),
            4,
            "$.gold",
        ),
        (
            format!(
                "{header}\n{}\n{}",
                item("a", true, r#"{"group":"g","variant":"base"}"#),
                item("b", true, r#"{"group":"g","variant":"base"}"#)
            ),
            3,
            "$.probe.variant",
        ),
        (
            format!(
                "{header}\n{}",
                r#"{"id":"r","kind":"relevance","question":"q","gold":0.5,"source":"s","probe":{"group":"g","variant":"base"}}"#
            ),
            2,
            "$.probe",
        ),
        (
            format!(
                "{header}\n{}",
                r#"{"id":"r","kind":"tier","question":"q","gold":"T1","source":"s","objective":true}"#
            ),
            2,
            "$.objective",
        ),
        (
            format!(
                "{header}\n{}\n{}",
                item("a", true, r#"{"group":"g","variant":"base"}"#),
                r#"{"id":"b","kind":"binary","question":"q","gold":true,"source":"s","objective":true,"probe":{"group":"g","variant":"padded"}}"#
            ),
            3,
            "$.objective",
        ),
        (
            format!(
                "{header}\n{}",
                item("a", true, r#"{"group":"g","variant":"base","x":1}"#)
            ),
            2,
            "$.probe.x",
        ),
        (
            format!("{header}\n{}", item("a", true, r#""g""#)),
            2,
            "$.probe",
        ),
    ];
    for (text, line, field) in cases {
        let e = load_exam(&text).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
    }
}

/// `careful`'s demo answers on every 1.0.0 item, and on each variant `answer(item, base)`.
fn arbiter(exam: &Exam, name: &str, answer: impl Fn(&ExamItem, f64) -> f64) -> Vec<Answer> {
    let careful: String = DEMO
        .lines()
        .filter(|l| l.contains("\"careful\""))
        .map(|l| l.replace("\"careful\"", &format!("\"{name}\"")) + "\n")
        .collect();
    let mut answers = load_answers(exam, &careful).unwrap();
    let base_answer = |id: &str| {
        answers
            .iter()
            .find(|a| a.item == id)
            .and_then(|a| match a.value {
                AnswerValue::Probability(p) => Some(p),
                _ => None,
            })
    };
    let mut extra = Vec::new();
    for item in &exam.items {
        let Some(probe) = &item.probe else {
            continue;
        };
        let base = base_answer(&probe.group).unwrap();
        let p = answer(item, base);
        if probe.variant == ProbeVariant::Base {
            continue;
        }
        extra.push(Answer {
            arbiter: name.into(),
            item: item.id.clone(),
            value: AnswerValue::Probability(p),
            line: 0,
        });
    }
    for a in &mut answers {
        let item = exam.item(&a.item).unwrap();
        if let (Some(_), AnswerValue::Probability(p)) = (&item.probe, &mut a.value) {
            *p = answer(item, *p);
        }
    }
    answers.extend(extra);
    answers
}

fn scored(exam: &Exam, answers: &[Answer]) -> (ArbiterScores, ProbeScores) {
    let refs: Vec<&Answer> = answers.iter().collect();
    let scores = score_arbiter(exam, &answers[0].arbiter, &refs, &InertPolicy::default()).unwrap();
    let probes = score_probes(exam, None, &refs).unwrap();
    (scores, probes)
}

fn failed_bars(exam: &Exam, answers: &[Answer]) -> Vec<(&'static str, Option<f64>)> {
    let (scores, probes) = scored(exam, answers);
    assess_with_probes(
        &AdmissionPolicy::with_bias_probes(),
        &scores,
        Some(&probes),
        NOW,
    )
    .failed
    .iter()
    .map(|f| (f.bar, f.observed))
    .collect()
}

#[test]
fn an_honest_arbiter_passes_every_bar() {
    let v2 = load_exam(V2).unwrap();
    let honest = arbiter(&v2, "honest", |_, base| base);
    let (scores, probes) = scored(&v2, &honest);
    assert!(probes.missing.is_empty());
    assert_eq!(probes.order_flip_rate(), Some(0.0));
    assert_eq!(probes.consequence_shift(), Some(0.0));
    assert_eq!(probes.padding_shift(), Some(0.0));
    let k = probes.kappa.unwrap();
    assert_eq!(k.items, 45, "kappa is over the distinct questions");
    assert!(k.lower.unwrap() > 0.4, "{k:?}");
    let d = assess_with_probes(
        &AdmissionPolicy::with_bias_probes(),
        &scores,
        Some(&probes),
        NOW,
    );
    assert!(d.admitted, "{:?}", d.failed);
}

/// Reads only which side comes first and answers for it. In the exam's bases the claim (or
/// the incumbent) comes first, so it dismisses (or keeps the incumbent); when the challenge
/// (or the candidate) comes first, it upholds (or merges).
#[test]
fn a_position_biased_arbiter_flips_every_pair_and_fails_the_bar() {
    let v2 = load_exam(V2).unwrap();
    let biased = arbiter(&v2, "first-side", |item, _| {
        let text = item.motion.as_deref().unwrap_or_default();
        if text.starts_with("Challenge") || text.starts_with("Candidate") {
            0.9
        } else {
            0.1
        }
    });
    let (scores, probes) = scored(&v2, &biased);
    assert_eq!(probes.order_flip_rate(), Some(1.0));
    assert_eq!(probes.order_swapped.pairs, probes.order_swapped.flips);
    let failed = failed_bars(&v2, &biased);
    assert!(
        failed.contains(&("order_flip_rate", Some(1.0))),
        "{failed:?}"
    );
    // The default policy leaves the probe bars off, as before.
    let d = assess(&AdmissionPolicy::default(), &scores, NOW);
    assert!(d.failed.iter().all(|f| f.bar != "order_flip_rate"));
}

#[test]
fn a_consequence_swayed_arbiter_fails_the_consequence_bar() {
    let v2 = load_exam(V2).unwrap();
    let swayed = arbiter(&v2, "swayed", |item, base| {
        match item.probe.as_ref().map(|p| p.variant) {
            Some(ProbeVariant::Consequence) => (base - 0.25).max(0.0),
            _ => base,
        }
    });
    let (_, probes) = scored(&v2, &swayed);
    let shift = probes.consequence_shift().unwrap();
    assert!(shift < -0.1, "{shift}");
    assert_eq!(probes.order_flip_rate(), Some(0.0));
    let failed = failed_bars(&v2, &swayed);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "consequence_shift");
    assert!((failed[0].1.unwrap() - shift).abs() < 1e-12);
}

#[test]
fn skipping_a_variant_fails_its_bar() {
    let v2 = load_exam(V2).unwrap();
    let group = &v2.probe_groups().unwrap()[0];
    let skipped = group.order_swapped.clone().unwrap();
    let honest: Vec<Answer> = arbiter(&v2, "skipper", |_, base| base)
        .into_iter()
        .filter(|a| a.item != skipped)
        .collect();
    let (_, probes) = scored(&v2, &honest);
    assert_eq!(probes.missing, [skipped]);
    assert_eq!(
        probes.order_swapped.unanswered,
        std::slice::from_ref(&group.id)
    );
    let failed = failed_bars(&v2, &honest);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0], ("order_flip_rate", Some(0.0)));
}

#[test]
fn probe_bars_without_probe_scores_fail_as_unmeasured() {
    let v2 = load_exam(V2).unwrap();
    let honest = arbiter(&v2, "honest", |_, base| base);
    let (scores, _) = scored(&v2, &honest);
    let d = assess(&AdmissionPolicy::with_bias_probes(), &scores, NOW);
    let bars: Vec<(&str, Option<f64>)> = d.failed.iter().map(|f| (f.bar, f.observed)).collect();
    assert_eq!(
        bars,
        [
            ("order_flip_rate", None),
            ("consequence_shift", None),
            ("kappa", None)
        ]
    );
    assert!(d.failed[0].message.contains("no probe scores"));
    // Probe scores from another exam are not read either.
    let (_, mut probes) = scored(&v2, &honest);
    probes.exam_hash = "sha256:other".into();
    let d = assess_with_probes(
        &AdmissionPolicy::with_bias_probes(),
        &scores,
        Some(&probes),
        NOW,
    );
    assert_eq!(d.failed.len(), 3);
    assert!(d.failed.iter().all(|f| f.message.contains("sha256:other")));
    // With the bars off, probe scores change nothing.
    let off = assess_with_probes(&AdmissionPolicy::default(), &scores, Some(&probes), NOW);
    assert_eq!(off, assess(&AdmissionPolicy::default(), &scores, NOW));
}

#[test]
fn a_seeded_draw_of_the_probe_exam_scores_like_the_whole() {
    let v2 = load_exam(V2).unwrap();
    let counts = DrawCounts {
        binary: 40,
        probe_groups: 5,
        relevance: 4,
        tier: 4,
        quantity: 10,
    };
    let drawn = draw_items(&v2, 7, &counts).unwrap();
    assert_eq!(drawn, draw_items(&v2, 7, &counts).unwrap());
    assert_ne!(drawn, draw_items(&v2, 8, &counts).unwrap());
    assert_eq!(drawn.len(), 58);
    let set: HashSet<&str> = drawn.iter().map(String::as_str).collect();
    let groups = v2.probe_groups().unwrap();
    let whole = groups
        .iter()
        .filter(|g| g.members().all(|m| set.contains(m)))
        .count();
    let touched = groups
        .iter()
        .filter(|g| g.members().any(|m| set.contains(m)))
        .count();
    assert_eq!((whole, touched), (5, 5));
    // Objective plain binary items come first: 20 plain items are drawn, and 1.0.0 has
    // more objective plain items than that, so every plain item drawn is objective.
    assert!(
        drawn
            .iter()
            .map(|id| v2.item(id).unwrap())
            .filter(|i| matches!(i.gold, Gold::Binary(_)) && i.probe.is_none())
            .all(|i| i.objective)
    );
    // Score only the drawn items.
    let honest = arbiter(&v2, "honest", |_, base| base);
    let refs: Vec<&Answer> = honest.iter().collect();
    let probes = score_probes(&v2, Some(&drawn), &refs).unwrap();
    assert_eq!(probes.asked_binary, 40);
    assert_eq!(probes.order_swapped.pairs, 5);
    assert!(probes.missing.is_empty());
    // Every variant of a group shares the presentation its arbiter saw.
    for g in &groups {
        let flips: HashSet<bool> = g
            .members()
            .map(|m| item_presentation(7, v2.item(m).unwrap()).swapped)
            .collect();
        assert_eq!(flips.len(), 1, "group {}", g.id);
    }
}

#[test]
fn the_answer_key_commitment_binds_every_gold_of_the_probe_exam() {
    let v2 = load_exam(V2).unwrap();
    let salt = [0x5a; 32];
    let c = commit_answer_key(&v2, salt);
    assert!(verify_answer_key(&v2, salt, c));
    for index in 0..v2.items.len() {
        let mut edited = v2.clone();
        edited.items[index].gold = match &edited.items[index].gold {
            Gold::Binary(b) => Gold::Binary(!b),
            Gold::Relevance(r) => Gold::Relevance(if *r == 1.0 { 0.75 } else { 1.0 }),
            Gold::Tier(t) => Gold::Tier(if t.index() == 0 {
                calibration::exam::Tier::T2
            } else {
                calibration::exam::Tier::T1
            }),
            Gold::Quantity {
                value,
                unit,
                scale,
                range,
            } => Gold::Quantity {
                value: value * 1.001,
                unit: unit.clone(),
                scale: *scale,
                range: *range,
            },
        };
        assert!(!verify_answer_key(&edited, salt, c), "item {index}");
    }
}
