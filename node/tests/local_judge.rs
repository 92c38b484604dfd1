//! The local judge with a real model (Gemma 3 270M, the smallest shipped one): it rules by
//! next-token probability in both presentation orders, records both in a signed reading,
//! tells two declared priors apart by the prompt digest, and refuses a false lineage.
//! The file comes from scripts/models.sh, which `bash scripts/test` runs; a missing model
//! fails the test unless `PANEL_SKIP_MISSING=1`.
#![cfg(feature = "local-judge")]

use std::path::PathBuf;
use std::sync::OnceLock;

use panel_lm::SlowFormats;
use panel_node::judge::answer_json::check_against_motion;
use panel_node::judge::local::{LocalJudge, LocalSettings};
use panel_node::judge::prompt::{DeclaredStance, Persona};
use panel_proto::pb::{
    AnswerKind, ContentProjection, Decision, ExamItem, Motion, MotionKind, ProjectionItem, Side,
};

fn gemma() -> Option<PathBuf> {
    let dir = panel_node::judge::models_dir(None);
    let path = dir.join("gemma3-270m-q4_k_m.gguf");
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("PANEL_SKIP_MISSING").as_deref() == Ok("1"),
        "{} is missing: run `bash scripts/test` (it fetches the models with scripts/models.sh), or set PANEL_SKIP_MISSING=1 to skip this test",
        path.display()
    );
    eprintln!("skipping: {} not found (scripts/models.sh)", path.display());
    None
}

fn settings(path: PathBuf, side: Option<&str>) -> LocalSettings {
    let mut persona = Persona::default();
    if let Some(s) = side {
        persona.stances.insert(
            "deb_1".into(),
            DeclaredStance {
                side: s.into(),
                credence: 0.7,
            },
        );
    }
    LocalSettings {
        model: path,
        lineage: "gemma".into(),
        persona,
        temperature: 0.0,
        rationale_tokens: 6,
        slow_formats: SlowFormats::Q8,
        context: 1024,
    }
}

fn judge(side: &'static str) -> Option<&'static LocalJudge> {
    static A: OnceLock<Option<LocalJudge>> = OnceLock::new();
    static B: OnceLock<Option<LocalJudge>> = OnceLock::new();
    let cell = if side == "A" { &A } else { &B };
    cell.get_or_init(|| gemma().map(|p| LocalJudge::load(settings(p, Some(side))).expect("loads")))
        .as_ref()
}

fn merge(first: &str, second: &str) -> Motion {
    let item = |label: &str, text: &str| ProjectionItem {
        label: label.into(),
        text: text.into(),
        side: Side::A as i32,
        ..Default::default()
    };
    Motion {
        motion_id: "deb_1/merge/1".into(),
        debate_id: "deb_1".into(),
        kind: MotionKind::Merge as i32,
        state_hash: vec![1; 32],
        projection: Some(ContentProjection {
            question: "Should the candidate version replace the incumbent?".into(),
            resolution: "Cities should replace car lanes with bus lanes.".into(),
            items: vec![item("candidate", first), item("incumbent", second)],
            ..Default::default()
        }),
        ..Default::default()
    }
}

const CLEAR: &str = "Bus lanes cut average commute times by 12% in the three cities that \
                     built them (transport agency report, 2023).";
const VAGUE: &str = "Bus lanes are good.";

#[test]
fn a_pairwise_ruling_reads_both_orders_and_its_probability_follows_the_order() {
    let Some(j) = judge("A") else { return };
    let m = merge(CLEAR, VAGUE);
    let a = j.rule_blocking(&m, None).expect("rules");
    check_against_motion(&a, &m).expect("a signable ruling");
    let p = a.provenance.as_ref().unwrap();
    assert_eq!(p.judge_kind, "local");
    assert!(p.model_version.contains("Gemma 3"), "{}", p.model_version);
    let r = p.reading.as_ref().unwrap();
    assert_eq!(r.method, "next-token");
    let orders: Vec<&str> = r.orders.iter().map(|o| o.order.as_str()).collect();
    assert_eq!(orders, ["as-given", "swapped"]);
    let mean = (r.orders[0].p_affirmative + r.orders[1].p_affirmative) / 2.0;
    assert!((a.probability - mean).abs() < 1e-9);
    assert_eq!(a.decision == Decision::Accept, a.probability >= 0.5);

    // The same two texts the other way round: each order's prompt is the other's, so the
    // probability becomes its complement, and changes unless it was exactly one half.
    let mut reversed = m.clone();
    reversed.projection.as_mut().unwrap().items.reverse();
    let b = j.rule_blocking(&reversed, None).expect("rules");
    let rb = b.provenance.as_ref().unwrap().reading.as_ref().unwrap();
    assert!((r.orders[0].p_affirmative - (1.0 - rb.orders[1].p_affirmative)).abs() < 1e-3);
    assert!((a.probability + b.probability - 1.0).abs() < 1e-3);
    assert!(
        (a.probability - b.probability).abs() > 1e-6,
        "order did not matter: {}",
        a.probability
    );
}

#[test]
fn two_declared_priors_on_one_model_rule_under_different_prompts() {
    let (Some(a), Some(b)) = (judge("A"), judge("B")) else {
        return;
    };
    let m = merge(CLEAR, VAGUE);
    let digest = |j: &LocalJudge| {
        j.rule_blocking(&m, None)
            .unwrap()
            .provenance
            .unwrap()
            .reading
            .unwrap()
            .prompt_sha256
    };
    assert_ne!(digest(a), digest(b));
    // Outside the debate they declared for, the two arbiters are asked alike.
    let mut other = m.clone();
    other.debate_id = "deb_2".into();
    let d = |j: &LocalJudge| {
        j.rule_blocking(&other, None)
            .unwrap()
            .provenance
            .unwrap()
            .reading
            .unwrap()
            .prompt_sha256
    };
    assert_eq!(d(a), d(b));
}

#[test]
fn exam_items_are_answered_by_the_model_not_by_the_hint() {
    let Some(j) = judge("A") else { return };
    let item = |q: &str, expected: Decision| Motion {
        motion_id: format!("exam/{q}"),
        debate_id: "exam".into(),
        kind: MotionKind::Exam as i32,
        projection: Some(ContentProjection {
            exam_item: Some(ExamItem {
                item_id: "x".into(),
                question: q.into(),
                answer_kind: AnswerKind::Binary as i32,
                ..Default::default()
            }),
            expected: Some(panel_proto::pb::ExpectedAnswer {
                decision: expected as i32,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    // The same question with opposite hints gets the same answer: the hint is not read.
    let q = "Is the boiling point of water at sea level 100 degrees Celsius?";
    let yes = j.rule_blocking(&item(q, Decision::Accept), None).unwrap();
    let no = j.rule_blocking(&item(q, Decision::Reject), None).unwrap();
    assert_eq!(yes.probability, no.probability);
    assert!(yes.probability > 0.0 && yes.probability < 1.0);
}

#[test]
fn a_false_lineage_is_refused_at_load() {
    let Some(path) = gemma() else { return };
    let mut s = settings(path, None);
    s.lineage = "qwen".into();
    let e = LocalJudge::load(s).err().expect("refused");
    assert!(e.to_string().contains("model_family = \"gemma\""), "{e}");
}
