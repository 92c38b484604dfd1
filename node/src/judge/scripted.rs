//! Scripted judge: deterministic profiles for tests. (The demo's arbiters are simulated,
//! `simulated.rs`: they aim at the truth hint through declared noise.)
//!
//! A profile (TOML, docs/WIRE.md "Scripted profiles") sets accuracy, a bias toward a side,
//! a position bias, inert relevance, noise and a seed. Every draw is derived from
//! SHA-256(seed, motion id, purpose), so a profile answers a motion the same way on every
//! run, in every order, on every machine.
//!
//! Truth hint: in simulation and exam dry-runs the motion's projection may carry
//! `expected` (the right answer). The judge is then right with probability `accuracy`;
//! with accuracy 1.0, no bias and no noise it always gives the expected answer with
//! probability 1.0 (or 0.0 for the negative decision). Without a hint it has no truth to
//! aim at and answers from its biases around 0.5. Live motions never carry the hint.

use std::collections::BTreeMap;
use std::path::Path;

use futures::future::BoxFuture;
use panel_proto::pb::{AnswerKind, Decision, Motion, MotionKind, Quantile, Side};
use panel_proto::ruling_check::{binary_pair, is_affirmative};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::answer_json::quantile_levels;
use super::{Judge, JudgeAnswer, JudgeError};

/// One scripted arbiter's behaviour.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Probability of giving the expected answer when a truth hint is present, in [0, 1].
    #[serde(default = "one")]
    pub accuracy: f64,
    /// Side the judge leans toward ("A" or "B"); with `bias` it shifts the affirmative
    /// probability up when the affirmative outcome favours this side, down otherwise.
    #[serde(default)]
    pub bias_side: Option<String>,
    #[serde(default)]
    pub bias: f64,
    /// Shift toward the first-listed item (the affirmative one) in pairwise motions.
    #[serde(default)]
    pub position_bias: f64,
    /// If set, every relevance answer is this step (1..=4), whatever the content: an inert
    /// rater, for testing inert-factor detection.
    #[serde(default)]
    pub inert_relevance: Option<u32>,
    /// Uniform noise amplitude added to probabilities, in [0, 0.5].
    #[serde(default)]
    pub noise: f64,
    #[serde(default)]
    pub seed: u64,
}

fn one() -> f64 {
    1.0
}

impl Profile {
    /// A judge without bias or noise that always gives the expected answer.
    pub fn exact(seed: u64) -> Self {
        Self {
            accuracy: 1.0,
            bias_side: None,
            bias: 0.0,
            position_bias: 0.0,
            inert_relevance: None,
            noise: 0.0,
            seed,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    profiles: BTreeMap<String, Profile>,
}

/// Loads a named profile from a TOML file with `[profiles.NAME]` tables.
pub fn load_profile(path: &Path, name: &str) -> Result<Profile, JudgeError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| JudgeError::Script(format!("cannot read {}: {e}", path.display())))?;
    let file: ProfileFile = toml::from_str(&text)
        .map_err(|e| JudgeError::Script(format!("{}: {e}", path.display())))?;
    let names: Vec<&String> = file.profiles.keys().collect();
    let p = file.profiles.get(name).cloned().ok_or_else(|| {
        JudgeError::Script(format!(
            "{} has no profile {name:?}; profiles present: {names:?}",
            path.display()
        ))
    })?;
    p.check()?;
    Ok(p)
}

impl Profile {
    /// Checks ranges, naming the bad field.
    pub fn check(&self) -> Result<(), JudgeError> {
        let unit = |name: &str, v: f64, max: f64| {
            if v.is_finite() && (0.0..=max).contains(&v) {
                Ok(())
            } else {
                Err(JudgeError::Script(format!(
                    "{name} = {v} must lie in [0, {max}]"
                )))
            }
        };
        unit("accuracy", self.accuracy, 1.0)?;
        unit("bias", self.bias, 1.0)?;
        unit("position_bias", self.position_bias, 1.0)?;
        unit("noise", self.noise, 0.5)?;
        if let Some(s) = &self.bias_side
            && s != "A"
            && s != "B"
        {
            return Err(JudgeError::Script(format!(
                "bias_side = {s:?} must be \"A\" or \"B\""
            )));
        }
        if let Some(r) = self.inert_relevance
            && !(1..=4).contains(&r)
        {
            return Err(JudgeError::Script(format!(
                "inert_relevance = {r} must lie in 1..=4"
            )));
        }
        Ok(())
    }
}

/// The scripted judge.
pub struct ScriptedJudge {
    name: String,
    profile: Profile,
}

impl ScriptedJudge {
    pub fn new(name: impl Into<String>, profile: Profile) -> Result<Self, JudgeError> {
        profile.check()?;
        Ok(Self {
            name: name.into(),
            profile,
        })
    }

    /// Deterministic uniform draw in [0, 1) for a motion and a purpose.
    fn unit(&self, motion_id: &str, purpose: &str) -> f64 {
        let mut h = Sha256::new();
        h.update(self.profile.seed.to_be_bytes());
        h.update((motion_id.len() as u64).to_be_bytes());
        h.update(motion_id.as_bytes());
        h.update(purpose.as_bytes());
        let d = h.finalize();
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        (u64::from_be_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The pure decision rule (no I/O): answer for one motion.
    pub fn answer(&self, m: &Motion) -> Result<JudgeAnswer, JudgeError> {
        let p = &self.profile;
        let kind = MotionKind::try_from(m.kind)
            .map_err(|_| JudgeError::Script(format!("unknown motion kind {}", m.kind)))?;
        let proj = m.projection.clone().unwrap_or_default();
        let expected = proj.expected;
        let correct = self.unit(&m.motion_id, "correct") < p.accuracy;
        let noise = (self.unit(&m.motion_id, "noise") * 2.0 - 1.0) * p.noise;
        let exam_kind = proj.exam_item.as_ref().map(|e| e.answer_kind());
        let mut rationale = format!("scripted profile {:?}", self.name);

        // Value-answered motions: relevance and exam items asking for a value.
        let value_kind = match (kind, exam_kind) {
            (MotionKind::AssignRelevance, _) => Some(AnswerKind::Relevance),
            (
                MotionKind::Exam,
                Some(k @ (AnswerKind::Quantiles | AnswerKind::Relevance | AnswerKind::Tier)),
            ) => Some(k),
            _ => None,
        };
        if let Some(vk) = value_kind {
            let mut a = JudgeAnswer {
                decision: Decision::None,
                probability: (p.accuracy.max(0.5) + noise).clamp(0.0, 1.0),
                relevance: None,
                tier: None,
                quantiles: vec![],
                receipt: None,
                rationale: String::new(),
                provenance: None,
            };
            match vk {
                AnswerKind::Relevance => {
                    let truth = expected.as_ref().and_then(|x| x.relevance);
                    let r = match (p.inert_relevance, truth) {
                        (Some(inert), _) => {
                            rationale.push_str(": inert relevance");
                            inert
                        }
                        (None, Some(t)) if correct => t.clamp(1, 4),
                        (None, Some(t)) => {
                            if t >= 3 {
                                t - 2
                            } else {
                                t + 2
                            }
                        }
                        (None, None) => 1 + (self.unit(&m.motion_id, "relevance") * 4.0) as u32 % 4,
                    };
                    a.relevance = Some(r);
                }
                AnswerKind::Tier => {
                    let truth = expected.as_ref().and_then(|x| x.tier).unwrap_or(3);
                    a.tier = Some(if correct { truth } else { (truth % 5) + 1 });
                }
                _ => {
                    // Without a truth hint (a real exam) the judge guesses around 1: a
                    // positive value, as a log-scale item's quantiles must be.
                    let v = expected.as_ref().and_then(|x| x.value).unwrap_or(1.0);
                    // Relative width, so positive quantities keep positive quantiles (log-scale seeds).
                    let scale = if v != 0.0 { v.abs() } else { 1.0 };
                    let width = scale * (0.02 + 0.5 * (1.0 - p.accuracy));
                    // A calibrated judge's truths land in the inter-quantile bins with
                    // probabilities 5/45/45/5 %, not all on the median (which Cooke's
                    // calibration score rightly calls overconfident). An exam item's truth
                    // lands just below or just above the median by its item id, so the
                    // scripted judge's exam is the same in every sitting and draw: with
                    // the 10-13 seeds an exam asks, drawing the tails by chance would fail
                    // Cooke's bar for one calibrated arbiter in twenty.
                    let exam_item = proj.exam_item.as_ref().map(|e| e.item_id.as_str());
                    let position = match exam_item {
                        Some(item) => 0.25 + 0.5 * self.unit(item, "position").round(),
                        None => self.unit(&m.motion_id, "position"),
                    };
                    let miss = if correct {
                        if position < 0.05 {
                            -1.5
                        } else if position < 0.5 {
                            -0.5
                        } else if position < 0.95 {
                            0.5
                        } else {
                            1.5
                        }
                    } else if noise >= 0.0 {
                        3.0
                    } else {
                        -3.0
                    };
                    let median = v + (miss + noise) * width;
                    let levels = proj
                        .exam_item
                        .as_ref()
                        .map(quantile_levels)
                        .unwrap_or_else(|| vec![0.05, 0.5, 0.95]);
                    a.quantiles = levels
                        .iter()
                        .map(|l| Quantile {
                            level: *l,
                            value: median + (l - 0.5) / 0.45 * width,
                        })
                        .collect();
                }
            }
            a.rationale = rationale;
            return Ok(a);
        }

        let (aff, neg) = binary_pair(kind).unwrap_or((Decision::Accept, Decision::Reject));
        let truth_aff = expected
            .as_ref()
            .and_then(|x| Decision::try_from(x.decision).ok())
            .filter(|d| {
                *d != Decision::Unspecified && *d != Decision::None && *d != Decision::Abstain
            })
            .map(is_affirmative);
        let mut prob = match truth_aff {
            Some(t) => {
                let said_aff = if correct { t } else { !t };
                let conf = p.accuracy.max(0.5);
                if said_aff { conf } else { 1.0 - conf }
            }
            None => 0.5,
        };
        if let Some(side) = &p.bias_side {
            let favours = Side::try_from(proj.affirmative_favours).unwrap_or(Side::Unspecified);
            let mine = if side == "A" { Side::A } else { Side::B };
            let other = if side == "A" { Side::B } else { Side::A };
            if favours == mine {
                prob += p.bias;
                rationale.push_str(&format!(": leans to side {side}"));
            } else if favours == other {
                prob -= p.bias;
                rationale.push_str(&format!(": leans to side {side}"));
            }
        }
        if proj.items.len() == 2 {
            prob += p.position_bias;
        }
        let prob = (prob + noise).clamp(0.0, 1.0);
        let decision = if prob > 0.5 || (prob == 0.5 && truth_aff != Some(false)) {
            aff
        } else {
            neg
        };
        let tier = if kind == MotionKind::VerifyTier && decision == aff {
            let claimed = proj
                .items
                .iter()
                .flat_map(|i| i.citations.iter())
                .map(|c| c.claimed_tier)
                .find(|t| (1..=5).contains(t));
            Some(
                expected
                    .as_ref()
                    .and_then(|x| x.tier)
                    .or(claimed)
                    .unwrap_or(3),
            )
        } else {
            None
        };
        // A procedure question in a simulation run says what to write (a crux report's
        // JSON, a finding); the profile still decides yes or no.
        let rationale = match proj.procedure.as_ref() {
            Some(q) if !q.expected_rationale.is_empty() => q.expected_rationale.clone(),
            _ => rationale,
        };
        Ok(JudgeAnswer {
            decision,
            probability: prob,
            relevance: None,
            tier,
            quantiles: vec![],
            receipt: None,
            rationale,
            provenance: None,
        })
    }
}

impl Judge for ScriptedJudge {
    fn kind(&self) -> &'static str {
        "scripted"
    }
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(async move { self.answer(motion) })
    }
    fn model(&self) -> String {
        format!("profile:{}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_proto::pb::{ContentProjection, ExamItem, ExpectedAnswer, ProjectionItem};

    fn motion(kind: MotionKind, expected: Option<ExpectedAnswer>, id: &str) -> Motion {
        Motion {
            motion_id: id.into(),
            debate_id: "d".into(),
            kind: kind as i32,
            state_hash: vec![1; 32],
            projection: Some(ContentProjection {
                expected,
                affirmative_favours: Side::A as i32,
                items: vec![ProjectionItem::default(), ProjectionItem::default()],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn perfect() -> ScriptedJudge {
        ScriptedJudge::new("perfect", Profile::exact(3)).unwrap()
    }

    #[test]
    fn perfect_profile_gives_the_expected_answer() {
        let j = perfect();
        for (i, (kind, want)) in [
            (MotionKind::Merge, Decision::Accept),
            (MotionKind::Merge, Decision::Reject),
            (MotionKind::ResolveChallenge, Decision::Dismiss),
            (MotionKind::AdmitAppeal, Decision::Admit),
        ]
        .into_iter()
        .enumerate()
        {
            let x = ExpectedAnswer {
                decision: want as i32,
                ..Default::default()
            };
            let a = j.answer(&motion(kind, Some(x), &format!("m{i}"))).unwrap();
            assert_eq!(a.decision, want);
            assert_eq!(a.probability, if is_affirmative(want) { 1.0 } else { 0.0 });
        }
        let mut m = motion(
            MotionKind::Exam,
            Some(ExpectedAnswer {
                value: Some(1500.0),
                ..Default::default()
            }),
            "q",
        );
        m.projection.as_mut().unwrap().exam_item = Some(ExamItem {
            answer_kind: AnswerKind::Quantiles as i32,
            ..Default::default()
        });
        // Over many seed items a perfect profile puts the truths just below or just above
        // the median, about half each, by item id: calibrated, not all on the median, and
        // the same in every sitting (the motion id changes, the placement does not).
        let mut bins = [0usize; 4];
        for i in 0..400 {
            m.motion_id = format!("q{i}");
            if let Some(e) = m.projection.as_mut().and_then(|p| p.exam_item.as_mut()) {
                e.item_id = format!("item-{i}");
            }
            let a = j.answer(&m).unwrap();
            m.motion_id = format!("exam/s2/other/q{i}");
            assert_eq!(
                j.answer(&m).unwrap().quantiles,
                a.quantiles,
                "same item, same answer"
            );
            let (q5, q50, q95) = (
                a.quantiles[0].value,
                a.quantiles[1].value,
                a.quantiles[2].value,
            );
            assert!(q5 < q50 && q50 < q95);
            let b = if 1500.0 <= q5 {
                0
            } else if 1500.0 <= q50 {
                1
            } else if 1500.0 <= q95 {
                2
            } else {
                3
            };
            bins[b] += 1;
        }
        assert!(bins[1] > 120 && bins[2] > 120, "{bins:?}");
        assert!(bins[0] < 60 && bins[3] < 60, "{bins:?}");
    }

    #[test]
    fn answers_are_deterministic_and_accuracy_shows() {
        let p = Profile {
            accuracy: 0.7,
            bias_side: None,
            bias: 0.0,
            position_bias: 0.0,
            inert_relevance: None,
            noise: 0.0,
            seed: 9,
        };
        let j = ScriptedJudge::new("p", p.clone()).unwrap();
        let j2 = ScriptedJudge::new("p", p).unwrap();
        let x = ExpectedAnswer {
            decision: Decision::Accept as i32,
            ..Default::default()
        };
        let mut right = 0;
        for i in 0..1000 {
            let m = motion(MotionKind::Merge, Some(x), &format!("m{i}"));
            let a = j.answer(&m).unwrap();
            assert_eq!(a, j2.answer(&m).unwrap());
            if a.decision == Decision::Accept {
                right += 1;
            }
        }
        assert!((600..800).contains(&right), "{right}");
    }

    #[test]
    fn stance_bias_and_inert_relevance() {
        let j = ScriptedJudge::new(
            "b",
            Profile {
                accuracy: 1.0,
                bias_side: Some("B".into()),
                bias: 0.3,
                position_bias: 0.0,
                inert_relevance: Some(2),
                noise: 0.0,
                seed: 1,
            },
        )
        .unwrap();
        let a = j.answer(&motion(MotionKind::Merge, None, "m")).unwrap();
        assert_eq!(
            a.decision,
            Decision::Reject,
            "affirmative favours A, judge leans B"
        );
        for r in 1..=4 {
            let x = ExpectedAnswer {
                relevance: Some(r),
                ..Default::default()
            };
            let a = j
                .answer(&motion(MotionKind::AssignRelevance, Some(x), "r"))
                .unwrap();
            assert_eq!(a.relevance, Some(2));
        }
        assert!(
            ScriptedJudge::new(
                "x",
                Profile {
                    accuracy: 1.5,
                    bias_side: None,
                    bias: 0.0,
                    position_bias: 0.0,
                    inert_relevance: None,
                    noise: 0.0,
                    seed: 0
                }
            )
            .is_err()
        );
    }
}
