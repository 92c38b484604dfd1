//! What an exam tells beyond the admission decision (docs/CALIBRATION.md, "Held-back
//! items and topics"): a few binary items held back from the admission score and scored
//! onto the arbiter's track record instead, and calibration per topic (the items' tags).
//!
//! Why hold items back: admission selects arbiters on their exam score, so the score of an
//! admitted arbiter is biased upwards (the winner's curse: an arbiter admitted on a lucky
//! draw looks better than it is). Items that took no part in the decision give an
//! unbiased first entry on the track record, which the recalibration bars then judge
//! together with outcomes resolved later. They are held back from the asked draw only
//! beyond the admission floor, so the decision never rests on fewer binary items than the
//! floor requires. Pure: no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exam::{Exam, Gold};
use crate::exam_scoring::{Answer, AnswerValue};
use crate::scoring_rules::brier_score;

/// Plain binary items (not bias-probe variants) held back from one arbiter's admission
/// score, at most.
pub const HELD_BACK: usize = 8;

/// Binary items that stay in the admission score whatever is held back: the default
/// admission policy's floor (`AdmissionPolicy::min_binary_items`).
pub const SCORED_FLOOR: usize = 30;

/// The items held back of those `answered` (ids in asking order): the last plain binary
/// items (never a probe variant, whose pairs the bias bars need whole), never leaving
/// fewer than [`SCORED_FLOOR`] answered binary items (probe variants included) scored.
/// Callers pass answered items only, so a missing answer never pushes the scored items
/// below the floor. The draw's order is the arbiter's seeded shuffle, so which items
/// these are is fixed by the draw and the answers alone.
pub fn held_back(exam: &Exam, answered: &[String]) -> Vec<String> {
    let binary: Vec<(&String, bool)> = answered
        .iter()
        .filter_map(|id| {
            let item = exam.item(id)?;
            matches!(item.gold, Gold::Binary(_)).then_some((id, item.probe.is_none()))
        })
        .collect();
    let plain: Vec<&String> = binary.iter().filter(|b| b.1).map(|b| b.0).collect();
    let n = binary
        .len()
        .saturating_sub(SCORED_FLOOR)
        .min(HELD_BACK)
        .min(plain.len());
    plain[plain.len() - n..]
        .iter()
        .map(|s| (*s).clone())
        .collect()
}

/// One held-back item as the track record scores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldBackForecast {
    pub item: String,
    /// The arbiter's probability of "yes".
    pub probability: f64,
    /// The gold answer.
    pub outcome: bool,
}

/// The arbiter's answers to the held-back items, with their golds; unanswered items are
/// left out (they carry no forecast).
pub fn forecasts(exam: &Exam, held: &[String], answers: &[&Answer]) -> Vec<HeldBackForecast> {
    held.iter()
        .filter_map(|id| {
            let Gold::Binary(outcome) = exam.item(id)?.gold else {
                return None;
            };
            let probability = answers.iter().find_map(|a| match a.value {
                AnswerValue::Probability(p) if &a.item == id => Some(p),
                _ => None,
            })?;
            Some(HeldBackForecast {
                item: id.clone(),
                probability,
                outcome,
            })
        })
        .collect()
}

/// Calibration on the binary items of one tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicCalibration {
    pub tag: String,
    /// Answered binary items carrying the tag.
    pub items: usize,
    /// Of those, how many have gold "yes".
    pub yes: usize,
    pub mean_forecast: f64,
    /// Mean Brier score (lower is better; 0.25 is always saying 0.5).
    pub brier: f64,
}

/// Calibration per tag over every answered binary item asked (probe variants included:
/// each is a question with a gold of its own), tags in name order.
pub fn by_topic(exam: &Exam, asked: &[String], answers: &[&Answer]) -> Vec<TopicCalibration> {
    let mut by_tag: BTreeMap<&str, (Vec<f64>, Vec<bool>)> = BTreeMap::new();
    for id in asked {
        let Some(item) = exam.item(id) else { continue };
        let Gold::Binary(gold) = item.gold else {
            continue;
        };
        let Some(p) = answers.iter().find_map(|a| match a.value {
            AnswerValue::Probability(p) if &a.item == id => Some(p),
            _ => None,
        }) else {
            continue;
        };
        for tag in &item.tags {
            let (forecasts, outcomes) = by_tag.entry(tag).or_default();
            forecasts.push(p);
            outcomes.push(gold);
        }
    }
    by_tag
        .into_iter()
        .filter_map(|(tag, (forecasts, outcomes))| {
            Some(TopicCalibration {
                tag: tag.to_owned(),
                items: forecasts.len(),
                yes: outcomes.iter().filter(|o| **o).count(),
                mean_forecast: forecasts.iter().sum::<f64>() / forecasts.len() as f64,
                // Answers were checked in [0, 1] when they were held, so this scores.
                brier: brier_score(&forecasts, &outcomes).ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exam::load_exam;

    const V2: &str = include_str!("../../exams/default-v2.jsonl");

    fn answer(item: &str, p: f64) -> Answer {
        Answer {
            arbiter: "a".into(),
            item: item.into(),
            value: AnswerValue::Probability(p),
            line: 0,
        }
    }

    fn plain_binary(exam: &Exam) -> Vec<String> {
        exam.items
            .iter()
            .filter(|i| matches!(i.gold, Gold::Binary(_)) && i.probe.is_none())
            .map(|i| i.id.clone())
            .collect()
    }

    #[test]
    fn the_last_plain_binary_items_are_held_back_above_the_floor_only() {
        let exam = load_exam(V2).unwrap();
        let plain = plain_binary(&exam);
        let variants: Vec<String> = exam
            .items
            .iter()
            .filter(|i| i.probe.is_some())
            .map(|i| i.id.clone())
            .collect();
        assert!(plain.len() >= 16 && variants.len() >= 24);
        // The service's draw: 24 probe items and 16 plain ones; 8 held back, 32 scored.
        let mut asked: Vec<String> = variants[..24].to_vec();
        asked.extend(plain[..16].iter().cloned());
        assert_eq!(held_back(&exam, &asked), plain[8..16].to_vec());
        // 31 binary asked: one above the floor, one held back; at the floor, none.
        assert_eq!(held_back(&exam, &plain[..31]), plain[30..31].to_vec());
        assert!(held_back(&exam, &plain[..30]).is_empty());
        // Probe variants alone are never held back, nor are other kinds or unknown ids.
        let mut others: Vec<String> = variants.clone();
        others.extend(
            exam.items
                .iter()
                .filter(|i| !matches!(i.gold, Gold::Binary(_)))
                .map(|i| i.id.clone()),
        );
        others.push("no-such-item".into());
        assert!(held_back(&exam, &others).is_empty());
    }

    #[test]
    fn held_back_forecasts_carry_the_gold_and_skip_the_unanswered() {
        let exam = load_exam(V2).unwrap();
        let plain = plain_binary(&exam);
        let held = plain[..2].to_vec();
        let a = answer(&held[0], 0.8);
        let got = forecasts(&exam, &held, &[&a]);
        assert_eq!(got.len(), 1);
        let Gold::Binary(gold) = exam.item(&held[0]).unwrap().gold else {
            unreachable!()
        };
        assert_eq!((got[0].probability, got[0].outcome), (0.8, gold));
    }

    #[test]
    fn topics_average_over_the_answered_items_of_each_tag() {
        let exam = load_exam(V2).unwrap();
        let plain = plain_binary(&exam);
        let answers: Vec<Answer> = plain.iter().map(|id| answer(id, 0.5)).collect();
        let refs: Vec<&Answer> = answers.iter().collect();
        let topics = by_topic(&exam, &plain, &refs);
        assert!(!topics.is_empty());
        for t in &topics {
            assert!(t.items > 0 && t.yes <= t.items, "{t:?}");
            assert!((t.brier - 0.25).abs() < 1e-12, "{t:?}");
            assert!((t.mean_forecast - 0.5).abs() < 1e-12);
        }
        let counted: usize = plain
            .iter()
            .filter(|id| exam.item(id).unwrap().tags.iter().any(|t| t == "challenge"))
            .count();
        let challenge = topics.iter().find(|t| t.tag == "challenge").unwrap();
        assert_eq!(challenge.items, counted);
    }
}
