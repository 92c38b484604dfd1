//! Scoring an arbiter's answers against an exam.
//!
//! Answers file (JSONL), one answer per line:
//! `{"arbiter": "<id>", "item": "<exam item id>", "answer": <value>}` where the value is a
//! probability for `binary` items, a relevance step for `relevance`, `"T1"`..`"T5"` for
//! `tier`, and `[q5, q50, q95]` (one value per exam quantile level) for `quantity`.
//!
//! Per arbiter: Brier, log score (clipped, see [`LOG_CLIP`]) and the exact one, base-rate
//! Brier, ECE, Murphy terms and the reliability table on binary items; Cooke's calibration
//! and information on the quantity seeds with the exam's frozen ranges (`N` = seeds this
//! arbiter answered); quadratic-weighted kappa against gold and the inert screen for
//! relevance and tier items.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agreement::{KappaWeights, cohen_kappa};
use crate::cooke::{Assessment, CookeModel, Item};
use crate::error::Result;
use crate::exam::{Exam, Gold, LineError, RELEVANCE_STEPS, Tier, json_type, parse_object};
use crate::inert::{InertPolicy, InertReport, detect_inert};
use crate::scoring_rules::{
    LogClip, Murphy, REPORT_BINS, ReliabilityBin, base_rate_brier, brier_score,
    expected_calibration_error, log_score, murphy_grouped, reliability_table,
};

/// Forecasts are clamped to [0.01, 0.99] for the admission log score (calibration-digest
/// E.1), so one confident slip costs ln(100) = 4.6 nats instead of infinity.
pub const LOG_CLIP: f64 = 0.01;

/// One parsed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AnswerValue {
    Probability(f64),
    Relevance(f64),
    Tier(Tier),
    Quantiles(Vec<f64>),
}

/// One line of an answers file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub arbiter: String,
    pub item: String,
    pub value: AnswerValue,
    pub line: usize,
}

fn parse_answer_value(
    exam: &Exam,
    item_id: &str,
    v: &Value,
    line: usize,
) -> std::result::Result<AnswerValue, LineError> {
    let item = exam.item(item_id).ok_or_else(|| {
        LineError::new(
            line,
            "$.item",
            format!(
                "`{item_id}` is not an item of exam {} {}",
                exam.name, exam.version
            ),
        )
    })?;
    let err = |msg: String| LineError::new(line, "$.answer", msg);
    match &item.gold {
        Gold::Binary(_) => match v.as_f64() {
            Some(p) if (0.0..=1.0).contains(&p) => Ok(AnswerValue::Probability(p)),
            Some(p) => Err(err(format!(
                "{p} is not a probability: answer a number in [0, 1]"
            ))),
            None => Err(err(format!(
                "binary item `{item_id}` needs a probability, found {}",
                json_type(v)
            ))),
        },
        Gold::Relevance(_) => match v.as_f64() {
            Some(r) if RELEVANCE_STEPS.contains(&r) => Ok(AnswerValue::Relevance(r)),
            _ => Err(err(format!(
                "relevance item `{item_id}` needs one of 0.25, 0.5, 0.75, 1.0"
            ))),
        },
        Gold::Tier(_) => v
            .as_str()
            .and_then(Tier::parse)
            .map(AnswerValue::Tier)
            .ok_or_else(|| err(format!("tier item `{item_id}` needs \"T1\" ... \"T5\""))),
        Gold::Quantity { .. } => {
            let q = exam.quantiles.len();
            let values: Option<Vec<f64>> = v.as_array().filter(|xs| xs.len() == q).and_then(|xs| {
                xs.iter()
                    .map(|x| x.as_f64().filter(|f| f.is_finite()))
                    .collect()
            });
            let values = values.ok_or_else(|| {
                err(format!(
                    "quantity item `{item_id}` needs {q} numbers, one per quantile level {:?}",
                    exam.quantiles
                ))
            })?;
            if !values.windows(2).all(|w| w[0] < w[1]) {
                return Err(err(format!(
                    "quantiles {values:?} must strictly increase (q5 < q50 < q95)"
                )));
            }
            Ok(AnswerValue::Quantiles(values))
        }
    }
}

/// Parse an answers file against `exam`. Errors name the line and the field; every line
/// is checked and all errors are returned together.
pub fn load_answers(exam: &Exam, text: &str) -> std::result::Result<Vec<Answer>, Vec<LineError>> {
    let mut answers = Vec::new();
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed = parse_object(raw, line).and_then(|obj| {
            let arbiter = match obj.get("arbiter") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => {
                    return Err(LineError::new(
                        line,
                        "$.arbiter",
                        "missing or not a non-empty string: name the arbiter",
                    ));
                }
            };
            let item = match obj.get("item") {
                Some(Value::String(s)) => s.clone(),
                _ => {
                    return Err(LineError::new(
                        line,
                        "$.item",
                        "missing or not a string: give the exam item id",
                    ));
                }
            };
            let v = obj.get("answer").ok_or_else(|| {
                LineError::new(line, "$.answer", "missing: add the arbiter's answer")
            })?;
            let value = parse_answer_value(exam, &item, v, line)?;
            if !seen.insert((arbiter.clone(), item.clone())) {
                return Err(LineError::new(
                    line,
                    "$.item",
                    format!("arbiter `{arbiter}` answered `{item}` twice: keep one answer"),
                ));
            }
            Ok(Answer {
                arbiter,
                item,
                value,
                line,
            })
        });
        match parsed {
            Ok(a) => answers.push(a),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(answers)
    } else {
        Err(errors)
    }
}

/// Scores of binary items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryScores {
    pub items: usize,
    pub brier: f64,
    /// Brier of always forecasting the gold base rate of the answered items.
    pub base_rate_brier: f64,
    /// `1 - brier / base_rate_brier` (`None` when the base rate is 0 or 1).
    pub brier_skill: Option<f64>,
    /// Log score with forecasts clamped to [0.01, 0.99].
    pub log_score: f64,
    /// Exact log score, `None` if a realised outcome got probability 0.
    pub log_score_exact: Option<f64>,
    pub ece: f64,
    pub murphy: Murphy,
    pub reliability: Vec<ReliabilityBin>,
}

/// Cooke's scores on quantity seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuantileScores {
    pub seeds: usize,
    pub calibration: f64,
    pub information: f64,
    pub counts: Vec<usize>,
}

/// Agreement and inertness on an ordinal factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrdinalScores {
    pub items: usize,
    /// Quadratic-weighted Cohen's kappa against gold; `None` with no items.
    pub kappa: Option<f64>,
    pub inert: InertReport,
}

/// Everything measured for one arbiter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArbiterScores {
    pub arbiter: String,
    pub exam: String,
    pub exam_hash: String,
    pub answered: usize,
    pub missing: Vec<String>,
    pub binary: Option<BinaryScores>,
    pub quantiles: Option<QuantileScores>,
    pub relevance: OrdinalScores,
    pub tier: OrdinalScores,
}

impl ArbiterScores {
    /// The inert screen fired on relevance or on tiers.
    pub fn inert(&self) -> bool {
        self.relevance.inert.inert || self.tier.inert.inert
    }
}

fn ordinal(
    answers: &[(usize, usize, f64, f64)],
    categories: usize,
    policy: &InertPolicy,
) -> Result<OrdinalScores> {
    let a: Vec<usize> = answers.iter().map(|x| x.0).collect();
    let g: Vec<usize> = answers.iter().map(|x| x.1).collect();
    let av: Vec<f64> = answers.iter().map(|x| x.2).collect();
    let gv: Vec<f64> = answers.iter().map(|x| x.3).collect();
    Ok(OrdinalScores {
        items: answers.len(),
        kappa: if answers.is_empty() {
            None
        } else {
            Some(cohen_kappa(&a, &g, categories, KappaWeights::Quadratic)?)
        },
        inert: detect_inert(&av, &gv, policy)?,
    })
}

fn relevance_index(r: f64) -> usize {
    RELEVANCE_STEPS.iter().position(|&s| s == r).unwrap_or(0)
}

/// Score every arbiter that appears in `answers`, in order of first appearance.
pub fn score_answers(
    exam: &Exam,
    answers: &[Answer],
    inert_policy: &InertPolicy,
) -> Result<Vec<ArbiterScores>> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_arbiter: BTreeMap<&str, Vec<&Answer>> = BTreeMap::new();
    for a in answers {
        if !by_arbiter.contains_key(a.arbiter.as_str()) {
            order.push(&a.arbiter);
        }
        by_arbiter.entry(&a.arbiter).or_default().push(a);
    }
    order
        .iter()
        .map(|id| score_arbiter(exam, id, &by_arbiter[id], inert_policy))
        .collect()
}

/// Whether `value` is an answer the item's gold can score: a log-scale quantity's
/// quantiles must all be positive (the log of zero or less is undefined). An answer
/// outside its item's domain is no answer; the caller may count it as missing.
pub fn in_domain(item: &crate::exam::ExamItem, value: &AnswerValue) -> bool {
    match (&item.gold, value) {
        (
            Gold::Quantity {
                scale: crate::cooke::Scale::Log,
                ..
            },
            AnswerValue::Quantiles(q),
        ) => q.iter().all(|v| *v > 0.0),
        _ => true,
    }
}

/// Score one arbiter's answers.
pub fn score_arbiter(
    exam: &Exam,
    arbiter: &str,
    answers: &[&Answer],
    inert_policy: &InertPolicy,
) -> Result<ArbiterScores> {
    let answer_of = |id: &str| answers.iter().find(|a| a.item == id).map(|a| &a.value);
    let (mut forecasts, mut outcomes) = (Vec::new(), Vec::new());
    let (mut relevance, mut tiers) = (Vec::new(), Vec::new());
    let (mut seed_items, mut seed_values) = (Vec::new(), Vec::new());
    let mut missing = Vec::new();
    for item in &exam.items {
        let Some(value) = answer_of(&item.id) else {
            missing.push(item.id.clone());
            continue;
        };
        match (&item.gold, value) {
            (Gold::Binary(g), AnswerValue::Probability(p)) => {
                forecasts.push(*p);
                outcomes.push(*g);
            }
            (Gold::Relevance(g), AnswerValue::Relevance(r)) => {
                relevance.push((relevance_index(*r), relevance_index(*g), *r, *g));
            }
            (Gold::Tier(g), AnswerValue::Tier(t)) => {
                tiers.push((t.index(), g.index(), t.weight(), g.weight()));
            }
            (
                Gold::Quantity {
                    value: x,
                    scale,
                    range,
                    ..
                },
                AnswerValue::Quantiles(q),
            ) => {
                seed_items.push(Item {
                    id: item.id.clone(),
                    realization: Some(*x),
                    scale: *scale,
                    frozen_range: Some(*range),
                });
                seed_values.push(Some(q.clone()));
            }
            // load_answers types every answer by its item, so a mismatch is a caller
            // building answers by hand; count it as missing rather than guess.
            _ => missing.push(item.id.clone()),
        }
    }
    let binary = if forecasts.is_empty() {
        None
    } else {
        let brier = brier_score(&forecasts, &outcomes)?;
        let base = base_rate_brier(&outcomes)?;
        Some(BinaryScores {
            items: forecasts.len(),
            brier,
            base_rate_brier: base,
            brier_skill: (base > 0.0).then(|| 1.0 - brier / base),
            log_score: log_score(&forecasts, &outcomes, LogClip::Clamp(LOG_CLIP))?
                .unwrap_or(f64::INFINITY),
            log_score_exact: log_score(&forecasts, &outcomes, LogClip::Exact)?,
            ece: expected_calibration_error(&forecasts, &outcomes, REPORT_BINS)?,
            murphy: murphy_grouped(&forecasts, &outcomes)?,
            reliability: reliability_table(&forecasts, &outcomes, REPORT_BINS)?,
        })
    };
    let quantiles = if seed_items.is_empty() {
        None
    } else {
        let seeds = seed_items.len();
        let model = CookeModel::new(
            &exam.quantiles,
            seed_items,
            vec![Assessment {
                id: arbiter.to_string(),
                values: seed_values,
            }],
            exam.overshoot,
            1.0,
        )?;
        let score = model.score_experts()?.remove(0);
        Some(QuantileScores {
            seeds,
            calibration: score.calibration,
            information: score.information_seed,
            counts: score.counts,
        })
    };
    Ok(ArbiterScores {
        arbiter: arbiter.to_string(),
        exam: format!("{} {}", exam.name, exam.version),
        exam_hash: exam.content_hash.clone(),
        answered: answers.len(),
        missing,
        binary,
        quantiles,
        relevance: ordinal(&relevance, RELEVANCE_STEPS.len(), inert_policy)?,
        tier: ordinal(&tiers, 5, inert_policy)?,
    })
}
