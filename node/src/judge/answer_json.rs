//! The JSON forms shared by the command and LLM judges: the motion as the judge sees it,
//! and the answer it returns (docs/WIRE.md, "Judge JSON").

use panel_proto::pb::{
    AnswerKind, Decision, ExamItem, Motion, MotionKind, Quantile, RetrievalReceipt, Side,
};
use panel_proto::ruling_check::{self, binary_pair, decision_name, kind_name, parse_decision};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{JudgeAnswer, JudgeError};

fn side_name(raw: i32) -> Value {
    match Side::try_from(raw).unwrap_or(Side::Unspecified) {
        Side::A => json!("A"),
        Side::B => json!("B"),
        Side::None => json!("none"),
        Side::Unspecified => Value::Null,
    }
}

/// Decisions a motion kind accepts, by name.
pub fn allowed_decisions(kind: MotionKind, exam: Option<&ExamItem>) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = match (kind, binary_pair(kind)) {
        (MotionKind::Exam, _) => match exam.map(|e| e.answer_kind()) {
            Some(AnswerKind::Binary) | None | Some(AnswerKind::Unspecified) => {
                vec!["ACCEPT", "REJECT"]
            }
            _ => vec!["NONE"],
        },
        (_, Some((a, n))) => vec![decision_name(a), decision_name(n)],
        (_, None) => vec!["NONE"],
    };
    v.push("ABSTAIN");
    v
}

/// The motion as JSON for an external judge. `include_expected` adds the simulation truth
/// hint (never for LLM endpoints).
pub fn motion_json(m: &Motion, include_expected: bool) -> Value {
    let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
    let p = m.projection.clone().unwrap_or_default();
    let exam = p.exam_item.as_ref();
    let mut v = json!({
        "motion_id": m.motion_id,
        "debate_id": m.debate_id,
        "kind": kind_name(kind),
        "state_hash": hex::encode(&m.state_hash),
        "question": p.question,
        "resolution": p.resolution,
        "affirmative_favours": side_name(p.affirmative_favours),
        "items": p.items.iter().map(|i| json!({
            "label": i.label,
            "text": i.text,
            "side": side_name(i.side),
            "citations": i.citations.iter().map(|c| json!({
                "source": c.source, "url": c.url, "claimed_tier": c.claimed_tier, "quote": c.quote,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "allowed_decisions": allowed_decisions(kind, exam),
        "commit_deadline_unix_ms": m.commit_deadline_unix_ms,
    });
    if let Some(e) = exam {
        v["exam_item"] = json!({
            "item_id": e.item_id,
            "question": e.question,
            "answer_kind": match e.answer_kind() {
                AnswerKind::Binary => "binary",
                AnswerKind::Quantiles => "quantiles",
                AnswerKind::Relevance => "relevance",
                AnswerKind::Tier => "tier",
                AnswerKind::Unspecified => "unspecified",
            },
            "quantile_levels": quantile_levels(e),
            "unit": e.unit,
        });
    }
    if include_expected && let Some(x) = &p.expected {
        v["expected"] = json!({
            "decision": Decision::try_from(x.decision).map(decision_name).unwrap_or("UNSPECIFIED"),
            "value": x.value, "relevance": x.relevance, "tier": x.tier,
        });
    }
    v
}

/// Quantile levels of an exam item (default 5%, 50%, 95%).
pub fn quantile_levels(e: &ExamItem) -> Vec<f64> {
    if e.quantile_levels.is_empty() {
        vec![0.05, 0.5, 0.95]
    } else {
        e.quantile_levels.clone()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuantileJson {
    level: f64,
    value: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReceiptJson {
    url: String,
    /// Hex SHA-256 of the fetched bytes.
    sha256: String,
    #[serde(default)]
    fetched_at_unix_ms: i64,
}

/// The answer object a command or LLM judge returns.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerJson {
    decision: String,
    probability: f64,
    #[serde(default)]
    rationale: String,
    #[serde(default)]
    relevance: Option<u32>,
    #[serde(default)]
    tier: Option<u32>,
    #[serde(default)]
    quantiles: Vec<QuantileJson>,
    #[serde(default)]
    receipt: Option<ReceiptJson>,
}

/// Parses an answer object and checks it against the motion, so a bad answer is named
/// here (with the judge's own words) rather than later as a signing failure.
pub fn parse_answer(text: &str, motion: &Motion) -> Result<JudgeAnswer, JudgeError> {
    let a: AnswerJson = serde_json::from_str(text.trim()).map_err(|e| {
        JudgeError::BadAnswer(format!(
            "{e}; expected one JSON object like {{\"decision\":\"ACCEPT\",\"probability\":0.8,\"rationale\":\"...\"}}"
        ))
    })?;
    let decision = parse_decision(&a.decision).ok_or_else(|| {
        JudgeError::BadAnswer(format!(
            "decision {:?} is not one of ACCEPT, REJECT, UPHOLD, DISMISS, ADMIT, DENY, NONE, ABSTAIN",
            a.decision
        ))
    })?;
    let receipt = match a.receipt {
        None => None,
        Some(r) => Some(RetrievalReceipt {
            sha256: hex::decode(&r.sha256).map_err(|_| {
                JudgeError::BadAnswer("receipt.sha256 must be 64 hex digits".into())
            })?,
            url: r.url,
            fetched_at_unix_ms: r.fetched_at_unix_ms,
        }),
    };
    let answer = JudgeAnswer {
        decision,
        probability: a.probability,
        relevance: a.relevance,
        tier: a.tier,
        quantiles: a
            .quantiles
            .into_iter()
            .map(|q| Quantile {
                level: q.level,
                value: q.value,
            })
            .collect(),
        receipt,
        rationale: a.rationale,
        provenance: None,
    };
    check_against_motion(&answer, motion)?;
    Ok(answer)
}

/// Runs the ruling shape rules on an answer for a motion.
pub fn check_against_motion(a: &JudgeAnswer, m: &Motion) -> Result<(), JudgeError> {
    let probe = crate::arbiter::ruling_from(m, a, &[0u8; 32], 0);
    ruling_check::check_ruling(&probe).map_err(|e| JudgeError::BadAnswer(e.to_string()))
}
