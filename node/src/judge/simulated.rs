//! Simulated judge: an arbiter with declared noise, for simulations and the demo
//! (docs/JUDGES.md "Simulated").
//!
//! It judges by the verdict-quality simulator's judge model (docs/SIMULATION.md "The
//! model", `sim/src/judge.rs`), whose formulas both share through
//! `calibration::judge_model`. A binary ruling is the sign of a latent judgement
//!
//! ```text
//! z = skill·(±1 for the truth) + position_bias·[two items, a yes picks the first]
//!     + stance_bias·(±1 when a yes favours the leaning side or the other)
//!     + √lineage_share·L + √(1 − lineage_share)·E
//! ```
//!
//! with `skill = Φ⁻¹(accuracy)`, `L` the error of the judge's lineage on this question
//! (drawn from the lineage's name and the question alone, so every simulated arbiter of
//! one lineage makes it) and `E` its own (drawn from its seed and the question). It reports
//! `P(yes) = σ(confidence·2·skill·z)` clamped to [0.001, 0.999]. A relevance step or a
//! tier is `round(truth + error / (2·skill))` on its scale; quantiles are centred on
//! `truth + σ·error` with `σ = |truth|·0.1/skill`, so a calibrated judge's truths fall in
//! the inter-quantile bins as often as the levels say.
//!
//! **The truth channel** is the simulation hint (`projection.expected`) that simulation
//! clusters put on motions and exam items: the judge never answers the hint, only the
//! noisy judgement it aims with. Without a hint it has no signal: `z` is its biases and its
//! error around 0 (P(yes) around 0.5), and the rationale says so. Its exam score therefore
//! measures the noise it was declared with, never any model: there is none.
//!
//! **Deterministic.** Every draw is SHA-256 over the seed (or the lineage's name), the
//! question and the purpose. The question is the exam item's id for an exam motion (the
//! same item in every sitting and draw) and otherwise a digest of what the motion shows:
//! kind, question, resolution and the items, order aside, with the host and port of every
//! web address left out (where a source is served is not what it says). Not the motion id, which carries
//! the log index the motion opened at and so differs from one run of the same demo to the
//! next: the same content gets the same answer on every run and when it is asked again (a
//! wider panel after a deadlock, a procedure's re-ask), as from a judge at temperature zero.
//!
//! **Text.** A simulated arbiter writes no prose. Its rationale states that it is
//! simulated and the parameters and `z` behind the ruling. A procedure question of a
//! simulation run carries the scripted fixture's rationale: on a yes/no question the
//! arbiter quotes it, marked as scripted fixture text, when its own decision agrees with
//! the scripted one; on a crux-report question (whose rationale must be the report) it
//! returns the fixture's report with `verdict_warranted` set to its own decision.

use futures::future::BoxFuture;
use panel_proto::pb::{AnswerKind, Decision, JudgeProvenance, Motion, MotionKind, Quantile, Side};
use panel_proto::ruling_check::{MAX_RATIONALE_BYTES, binary_pair, is_affirmative};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use calibration::judge_model;

use super::answer_json::quantile_levels;
use super::{Judge, JudgeAnswer, JudgeError};

/// Domain tag of every draw.
const DRAW_DOMAIN: &[u8] = b"crucible-panel/simulated-judge/v1\n";

/// Quantile spread relative to the truth at skill 1 (halved at skill 2).
const RELATIVE_SPREAD: f64 = 0.1;

/// One simulated arbiter's declared noise (`[judge] kind = "simulated"` in node.toml).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimulatedProfile {
    /// Probability of a right binary ruling without bias, in (0.5, 1): `skill = Φ⁻¹(accuracy)`.
    pub accuracy: f64,
    /// Scales the reported log-odds; 1 is calibrated, below 1 underconfident. In (0, 4].
    #[serde(default = "one")]
    pub confidence: f64,
    /// The lineage whose error this judge shares; empty means the node's `model_family`
    /// (filled in when node.toml is loaded).
    #[serde(default)]
    pub lineage: String,
    /// Share of the error's variance common to the lineage, in [0, 1).
    #[serde(default = "default_lineage_share")]
    pub lineage_share: f64,
    /// Added to `z` when the motion shows two items and a yes picks the first-listed one.
    #[serde(default)]
    pub position_bias: f64,
    /// Added to `z` when a yes favours `leaning`, subtracted when it favours the other side.
    #[serde(default)]
    pub stance_bias: f64,
    /// The side the judge leans to: "A" or "B".
    #[serde(default)]
    pub leaning: Option<String>,
    #[serde(default)]
    pub seed: u64,
}

fn one() -> f64 {
    1.0
}

fn default_lineage_share() -> f64 {
    0.3
}

impl SimulatedProfile {
    /// Checks ranges, naming the bad field and the fix.
    pub fn check(&self) -> Result<(), ProfileError> {
        let bad = |m: String| Err(ProfileError(m));
        if !(self.accuracy > 0.5 && self.accuracy < 1.0) {
            return bad(format!(
                "judge.accuracy = {} must lie strictly between 0.5 and 1 (the probability of a right ruling)",
                self.accuracy
            ));
        }
        if !(self.confidence > 0.0 && self.confidence <= 4.0) {
            return bad(format!(
                "judge.confidence = {} must lie in (0, 4]; 1 is calibrated",
                self.confidence
            ));
        }
        if !(0.0..1.0).contains(&self.lineage_share) {
            return bad(format!(
                "judge.lineage_share = {} must lie in [0, 1)",
                self.lineage_share
            ));
        }
        for (name, v) in [
            ("position_bias", self.position_bias),
            ("stance_bias", self.stance_bias),
        ] {
            if !(v.is_finite() && v.abs() <= 10.0) {
                return bad(format!("judge.{name} = {v} must lie in [-10, 10]"));
            }
        }
        if let Some(s) = &self.leaning
            && s != "A"
            && s != "B"
        {
            return bad(format!("judge.leaning = {s:?} must be \"A\" or \"B\""));
        }
        if self.lineage.is_empty() {
            return bad(
                "judge.lineage is empty; name the lineage (or set the node's model_family)".into(),
            );
        }
        Ok(())
    }

    /// `Φ⁻¹(accuracy)`.
    pub fn skill(&self) -> f64 {
        judge_model::skill_of_accuracy(self.accuracy)
    }

    fn leaning_side(&self) -> Option<Side> {
        match self.leaning.as_deref() {
            Some("A") => Some(Side::A),
            Some("B") => Some(Side::B),
            _ => None,
        }
    }
}

/// A simulated judge's settings out of range: names the setting and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("simulated judge: {0}")]
pub struct ProfileError(pub String);

/// The simulated judge.
pub struct SimulatedJudge {
    profile: SimulatedProfile,
    skill: f64,
}

/// What a question is, for the draws: 32 bytes.
type QuestionKey = [u8; 32];

fn put(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

/// The question a motion asks, independent of its id and of the order its items are
/// shown in (module docs, "Deterministic").
pub fn question_key(m: &Motion) -> QuestionKey {
    let mut h = Sha256::new();
    h.update(DRAW_DOMAIN);
    let proj = m.projection.clone().unwrap_or_default();
    if let Some(item) = proj.exam_item.as_ref() {
        put(&mut h, b"exam-item");
        put(&mut h, item.item_id.as_bytes());
        return h.finalize().into();
    }
    put(&mut h, b"motion");
    h.update(m.kind.to_be_bytes());
    put(&mut h, without_authorities(&proj.question).as_bytes());
    put(&mut h, without_authorities(&proj.resolution).as_bytes());
    let mut items: Vec<[u8; 32]> = proj
        .items
        .iter()
        .map(|i| {
            let mut d = Sha256::new();
            put(&mut d, i.label.as_bytes());
            put(&mut d, without_authorities(&i.text).as_bytes());
            d.update(i.side.to_be_bytes());
            for c in &i.citations {
                put(&mut d, without_authorities(&c.source).as_bytes());
                put(&mut d, without_authorities(&c.url).as_bytes());
                d.update(c.claimed_tier.to_be_bytes());
            }
            d.finalize().into()
        })
        .collect();
    items.sort_unstable();
    for i in items {
        h.update(i);
    }
    h.finalize().into()
}

/// `text` with the host and port of every `http://` and `https://` address left out: an
/// address names where a source is served, not what it says, and a local demo's file
/// server takes a free port on every run.
fn without_authorities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let scheme_is_web = head.ends_with("http://") || head.ends_with("https://");
        let end = if scheme_is_web {
            tail.find(|c: char| c == '/' || c.is_whitespace())
                .unwrap_or(tail.len())
        } else {
            0
        };
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A standard normal draw from a digest (Box-Muller on its first 16 bytes).
fn normal_of(d: &[u8]) -> f64 {
    let u = |b: &[u8]| {
        let mut x = [0u8; 8];
        x.copy_from_slice(b);
        (u64::from_be_bytes(x) >> 11) as f64 / (1u64 << 53) as f64
    };
    let (u1, u2) = (1.0 - u(&d[..8]), u(&d[8..16]));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The parts of one binary judgement, for the rationale.
struct Latent {
    truth: Option<bool>,
    position: f64,
    stance: f64,
    error: f64,
    z: f64,
}

impl SimulatedJudge {
    pub fn new(profile: SimulatedProfile) -> Result<Self, ProfileError> {
        profile.check()?;
        Ok(Self {
            skill: profile.skill(),
            profile,
        })
    }

    pub fn profile(&self) -> &SimulatedProfile {
        &self.profile
    }

    /// This judge's own standard normal error on a question, for one purpose.
    fn own(&self, q: &QuestionKey, purpose: &str) -> f64 {
        let mut h = Sha256::new();
        h.update(DRAW_DOMAIN);
        put(&mut h, b"own");
        h.update(self.profile.seed.to_be_bytes());
        h.update(q);
        put(&mut h, purpose.as_bytes());
        normal_of(&h.finalize())
    }

    /// The lineage's standard normal error on a question: the same for every simulated
    /// arbiter that declares this lineage, whatever its seed.
    fn lineage(&self, q: &QuestionKey, purpose: &str) -> f64 {
        lineage_error(&self.profile.lineage, q, purpose)
    }

    /// The unit-variance error of this judge on a question.
    fn error(&self, q: &QuestionKey, purpose: &str) -> f64 {
        judge_model::error(
            0.0,
            self.profile.lineage_share,
            0.0,
            self.lineage(q, purpose),
            self.own(q, purpose),
        )
    }

    /// `±stance_bias` when a yes favours a side, 0 otherwise.
    fn stance_term(&self, favours: Side) -> f64 {
        match self.profile.leaning_side() {
            Some(mine) if favours == mine => self.profile.stance_bias,
            Some(_) if favours == Side::A || favours == Side::B => -self.profile.stance_bias,
            _ => 0.0,
        }
    }

    fn latent(&self, m: &Motion, q: &QuestionKey, truth: Option<bool>) -> Latent {
        let proj = m.projection.clone().unwrap_or_default();
        let position = if proj.exam_item.is_none() && proj.items.len() == 2 {
            self.profile.position_bias
        } else {
            0.0
        };
        let stance =
            self.stance_term(Side::try_from(proj.affirmative_favours).unwrap_or(Side::Unspecified));
        let error = self.error(q, "decision");
        let t = match truth {
            Some(true) => 1.0,
            Some(false) => -1.0,
            None => 0.0,
        };
        Latent {
            truth,
            position,
            stance,
            error,
            z: self.skill * t + position + stance + error,
        }
    }

    /// "simulated arbiter (accuracy 0.95, sim-lineage-x 30%, position 0.05, stance 0.10 to
    /// A)": what it is and the noise it was declared with, biases only when it has them.
    fn who(&self) -> String {
        let p = &self.profile;
        let mut out = format!(
            "simulated arbiter (accuracy {:.2}, {} {:.0}%",
            p.accuracy,
            p.lineage,
            p.lineage_share * 100.0
        );
        if p.position_bias != 0.0 {
            out.push_str(&format!(", position {:.2}", p.position_bias));
        }
        if let Some(side) = p.leaning_side().filter(|_| p.stance_bias != 0.0) {
            out.push_str(&format!(
                ", stance {:.2} to {}",
                p.stance_bias,
                side_name(side)
            ));
        }
        out.push(')');
        out
    }

    fn provenance(&self) -> JudgeProvenance {
        JudgeProvenance {
            model: "simulated".into(),
            model_version: format!("simulated/skill-{:.2}/{}", self.skill, self.profile.lineage),
            ..Default::default()
        }
    }

    /// The pure decision rule (no I/O): the answer to one motion.
    pub fn answer(&self, m: &Motion) -> Result<JudgeAnswer, JudgeError> {
        let kind = MotionKind::try_from(m.kind)
            .map_err(|_| JudgeError::BadAnswer(format!("unknown motion kind {}", m.kind)))?;
        let proj = m.projection.clone().unwrap_or_default();
        let expected = proj.expected;
        let q = question_key(m);
        let exam_kind = proj.exam_item.as_ref().map(|e| e.answer_kind());
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
                probability: self.profile.accuracy,
                relevance: None,
                tier: None,
                quantiles: vec![],
                receipt: None,
                rationale: String::new(),
                provenance: Some(self.provenance()),
            };
            let hint = |present: bool| {
                if present {
                    ""
                } else {
                    "; no truth hint, so no signal: centred on the scale's middle"
                }
            };
            a.rationale = match vk {
                AnswerKind::Relevance => {
                    let truth = expected.as_ref().and_then(|x| x.relevance);
                    let e = self.error(&q, "relevance")
                        + self.stance_term(
                            Side::try_from(proj.affirmative_favours).unwrap_or(Side::Unspecified),
                        );
                    let step =
                        judge_model::noisy_step(truth.map_or(2.5, f64::from), e, self.skill, 1, 4);
                    a.relevance = Some(u32::from(step));
                    format!(
                        "{}: relevance step {step} = round(truth + {e:+.2} / (2·skill)){}",
                        self.who(),
                        hint(truth.is_some())
                    )
                }
                AnswerKind::Tier => {
                    let truth = expected.as_ref().and_then(|x| x.tier);
                    let e = self.error(&q, "tier");
                    let tier =
                        judge_model::noisy_step(truth.map_or(3.0, f64::from), e, self.skill, 1, 5);
                    a.tier = Some(u32::from(tier));
                    format!(
                        "{}: tier T{tier} = round(truth + {e:+.2} / (2·skill)){}",
                        self.who(),
                        hint(truth.is_some())
                    )
                }
                _ => {
                    let truth = expected.as_ref().and_then(|x| x.value);
                    let v = truth.unwrap_or(0.0);
                    let scale = if v != 0.0 { v.abs() } else { 1.0 };
                    let sigma = scale * RELATIVE_SPREAD / self.skill;
                    let e = self.error(&q, "quantity");
                    let median = v + sigma * e;
                    let levels = proj
                        .exam_item
                        .as_ref()
                        .map(quantile_levels)
                        .unwrap_or_else(|| vec![0.05, 0.5, 0.95]);
                    a.quantiles = levels
                        .iter()
                        .map(|l| Quantile {
                            level: *l,
                            value: median
                                + judge_model::normal_quantile(*l) * sigma
                                    / self.profile.confidence,
                        })
                        .collect();
                    format!(
                        "{}: median = truth {:+.2}σ, σ = {} × truth / skill {:.2}{}",
                        self.who(),
                        e,
                        RELATIVE_SPREAD,
                        self.skill,
                        if truth.is_some() {
                            ""
                        } else {
                            "; no truth hint, so no signal: centred on 0"
                        }
                    )
                }
            };
            return Ok(a);
        }

        let (aff, neg) = binary_pair(kind).unwrap_or((Decision::Accept, Decision::Reject));
        let truth = expected
            .as_ref()
            .and_then(|x| Decision::try_from(x.decision).ok())
            .filter(|d| {
                *d != Decision::Unspecified && *d != Decision::None && *d != Decision::Abstain
            })
            .map(is_affirmative);
        let l = self.latent(m, &q, truth);
        let probability = judge_model::p_yes(self.skill, self.profile.confidence, l.z);
        let yes = l.z > 0.0;
        let decision = if yes { aff } else { neg };
        let tier = (kind == MotionKind::VerifyTier && yes).then(|| {
            let claimed = proj
                .items
                .iter()
                .flat_map(|i| i.citations.iter())
                .map(|c| c.claimed_tier)
                .find(|t| (1..=5).contains(t));
            let centre = expected
                .as_ref()
                .and_then(|x| x.tier)
                .or(claimed)
                .unwrap_or(3);
            u32::from(judge_model::noisy_step(
                f64::from(centre),
                self.error(&q, "tier"),
                self.skill,
                1,
                5,
            ))
        });
        let mut rationale = format!(
            "{}: z = {} {:+.2} bias {:+.2} error = {:+.2} -> {}, P(yes) {:.3}",
            self.who(),
            match l.truth {
                Some(t) => format!("{:.2}·({}1 truth)", self.skill, if t { "+" } else { "-" }),
                None => "0 (no truth hint, so no signal)".into(),
            },
            l.position + l.stance,
            l.error,
            l.z,
            panel_proto::ruling_check::decision_name(decision),
            probability
        );
        if let Some(t) = tier {
            rationale.push_str(&format!(", tier T{t}"));
        }
        if let Some(pq) = proj.procedure.as_ref()
            && !pq.expected_rationale.is_empty()
        {
            rationale = procedure_rationale(
                rationale,
                pq.answer_shape,
                &pq.expected_rationale,
                yes,
                truth,
            );
        }
        Ok(JudgeAnswer {
            decision,
            probability,
            relevance: None,
            tier,
            quantiles: vec![],
            receipt: None,
            rationale: truncated(rationale),
            provenance: Some(self.provenance()),
        })
    }
}

/// The lineage's standard normal error on a question (shared by every arbiter of it).
fn lineage_error(lineage: &str, q: &QuestionKey, purpose: &str) -> f64 {
    let mut h = Sha256::new();
    h.update(DRAW_DOMAIN);
    put(&mut h, b"lineage");
    put(&mut h, lineage.as_bytes());
    h.update(q);
    put(&mut h, purpose.as_bytes());
    normal_of(&h.finalize())
}

/// A procedure question's rationale (module docs, "Text"): the fixture's crux report with
/// this judge's decision, or its own rationale quoting the fixture's when they agree.
fn procedure_rationale(
    mine: String,
    shape: u32,
    fixture: &str,
    yes: bool,
    scripted: Option<bool>,
) -> String {
    if shape == 1 {
        // A crux report: the rationale must be the report, and its verdict this judge's.
        if let Ok(mut report) = serde_json::from_str::<serde_json::Value>(fixture)
            && let Some(obj) = report.as_object_mut()
        {
            obj.insert("verdict_warranted".into(), serde_json::Value::Bool(yes));
            return report.to_string();
        }
        return mine;
    }
    if scripted == Some(yes) {
        format!("{mine}. Scripted fixture rationale: {fixture}")
    } else {
        format!("{mine}. It differs from the scripted answer, so it quotes no fixture rationale.")
    }
}

fn truncated(mut s: String) -> String {
    if s.len() > MAX_RATIONALE_BYTES {
        let mut cut = MAX_RATIONALE_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

fn side_name(s: Side) -> &'static str {
    match s {
        Side::A => "A",
        Side::B => "B",
        _ => "none",
    }
}

impl Judge for SimulatedJudge {
    fn kind(&self) -> &'static str {
        "simulated"
    }
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(async move { self.answer(motion) })
    }
    fn model(&self) -> String {
        "simulated".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_proto::pb::{ContentProjection, ExamItem, ExpectedAnswer, ProjectionItem};

    fn profile(accuracy: f64, lineage: &str, seed: u64) -> SimulatedProfile {
        SimulatedProfile {
            accuracy,
            confidence: 1.0,
            lineage: lineage.into(),
            lineage_share: 0.5,
            position_bias: 0.0,
            stance_bias: 0.0,
            leaning: None,
            seed,
        }
    }

    fn judge(accuracy: f64, lineage: &str, seed: u64) -> SimulatedJudge {
        SimulatedJudge::new(profile(accuracy, lineage, seed)).unwrap()
    }

    /// A binary exam item with its gold as the hint, as a simulation cluster asks it.
    fn exam_item(i: usize, gold: bool) -> Motion {
        Motion {
            motion_id: format!("exam/s1/arb/item-{i}"),
            debate_id: "exam".into(),
            kind: MotionKind::Exam as i32,
            projection: Some(ContentProjection {
                question: format!("question {i}"),
                items: vec![ProjectionItem {
                    label: "Motion".into(),
                    text: format!("motion text {i}"),
                    ..Default::default()
                }],
                exam_item: Some(ExamItem {
                    item_id: format!("item-{i}"),
                    answer_kind: AnswerKind::Binary as i32,
                    seed: true,
                    ..Default::default()
                }),
                expected: Some(ExpectedAnswer {
                    decision: if gold {
                        Decision::Accept
                    } else {
                        Decision::Reject
                    } as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn merge(i: usize, favours: Side, expected: Option<Decision>) -> Motion {
        Motion {
            motion_id: format!("mot-{i}"),
            debate_id: "deb_1".into(),
            kind: MotionKind::Merge as i32,
            projection: Some(ContentProjection {
                question: format!("Should candidate v{i} be merged?"),
                affirmative_favours: favours as i32,
                items: vec![
                    ProjectionItem {
                        label: "candidate".into(),
                        text: format!("claim {i}"),
                        side: favours as i32,
                        ..Default::default()
                    },
                    ProjectionItem {
                        label: "incumbent".into(),
                        text: format!("old claim {i}"),
                        side: favours as i32,
                        ..Default::default()
                    },
                ],
                expected: expected.map(|d| ExpectedAnswer {
                    decision: d as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn exam_answers_are_noisy_judgements_and_their_brier_is_what_the_skill_implies() {
        let accuracy = 0.9;
        let j = judge(accuracy, "sim-lineage-x", 7);
        let n = 4000;
        let (mut brier, mut right, mut copies) = (0.0, 0, 0);
        for i in 0..n {
            let gold = i % 3 != 0;
            let a = j.answer(&exam_item(i, gold)).unwrap();
            let said_yes = a.decision == Decision::Accept;
            assert_eq!(
                said_yes,
                a.probability > 0.5,
                "decision and probability agree"
            );
            if said_yes == gold {
                right += 1;
            }
            // Copying the hint would answer exactly 1.0 or 0.0: never.
            if a.probability == 1.0 || a.probability == 0.0 {
                copies += 1;
            }
            let y = if gold { 1.0 } else { 0.0 };
            brier += (a.probability - y).powi(2);
            let prov = a.provenance.unwrap();
            assert_eq!(prov.model, "simulated");
            assert!(prov.model_version.starts_with("simulated/skill-1.28/"));
        }
        brier /= n as f64;
        let rate = f64::from(right) / n as f64;
        assert_eq!(copies, 0);
        assert!((rate - accuracy).abs() < 0.02, "right {rate}");
        // A calibrated judge of skill s: Brier = E[(σ(2s·z) − y)²] with z ~ N(±s, 1).
        let s = j.skill;
        let steps = 20_000;
        let mut implied = 0.0;
        for k in 0..steps {
            let u = (k as f64 + 0.5) / steps as f64;
            let z = s + judge_model::normal_quantile(u);
            implied += (judge_model::p_yes(s, 1.0, z) - 1.0).powi(2);
        }
        implied /= steps as f64;
        assert!(
            implied > 0.05,
            "the skill implies a Brier far from 0: {implied}"
        );
        assert!(
            (brier - implied).abs() < 0.015,
            "Brier {brier}, implied {implied}"
        );
        // Deterministic: same item, same answer, whatever the sitting's motion id.
        let mut m = exam_item(5, true);
        let a = j.answer(&m).unwrap();
        m.motion_id = "exam/s9/arb/item-5".into();
        assert_eq!(j.answer(&m).unwrap(), a);
    }

    #[test]
    fn arbiters_of_one_lineage_err_together() {
        let n = 3000;
        let errors = |j: &SimulatedJudge| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    let a = j.answer(&exam_item(i, true)).unwrap();
                    if a.decision == Decision::Accept {
                        0.0
                    } else {
                        1.0
                    }
                })
                .collect()
        };
        let phi = |x: &[f64], y: &[f64]| {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (mx, my) = (mean(x), mean(y));
            let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
            let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
            let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
            cov / (vx * vy).sqrt()
        };
        let x1 = errors(&judge(0.8, "sim-lineage-x", 1));
        let x2 = errors(&judge(0.8, "sim-lineage-x", 2));
        let y1 = errors(&judge(0.8, "sim-lineage-y", 3));
        let same = phi(&x1, &x2);
        let different = phi(&x1, &y1);
        assert!(same > 0.2, "one lineage: {same}");
        assert!(different.abs() < 0.06, "two lineages: {different}");
        assert!(same > different + 0.15, "{same} vs {different}");
    }

    #[test]
    fn biases_move_the_judgement_and_no_hint_means_no_signal() {
        let mut p = profile(0.95, "sim-lineage-z", 11);
        p.leaning = Some("B".into());
        p.stance_bias = 4.0;
        let partisan = SimulatedJudge::new(p).unwrap();
        let honest = judge(0.95, "sim-lineage-z", 11);
        let (mut p_no, mut h_yes) = (0, 0);
        for i in 0..200 {
            let m = merge(i, Side::A, Some(Decision::Accept));
            if partisan.answer(&m).unwrap().decision == Decision::Reject {
                p_no += 1;
            }
            if honest.answer(&m).unwrap().decision == Decision::Accept {
                h_yes += 1;
            }
        }
        assert!(p_no > 180, "the partisan refuses side A's claims: {p_no}");
        assert!(h_yes > 180, "the honest judge accepts them: {h_yes}");
        // Without a hint: no signal, answers around 0.5 either way, and it says so.
        let mut yes = 0;
        for i in 0..400 {
            let a = honest.answer(&merge(i, Side::None, None)).unwrap();
            assert!(a.rationale.contains("no truth hint"), "{}", a.rationale);
            assert!(a.rationale.starts_with("simulated arbiter"));
            if a.decision == Decision::Accept {
                yes += 1;
            }
        }
        assert!((150..250).contains(&yes), "{yes}");
        // Content, not the motion id, decides: a motion asked again under another id.
        let mut m = merge(3, Side::A, Some(Decision::Accept));
        let a = honest.answer(&m).unwrap();
        m.motion_id = "mot-99-0-1".into();
        m.projection.as_mut().unwrap().items.reverse();
        let b = honest.answer(&m).unwrap();
        assert_eq!((a.decision, a.probability), (b.decision, b.probability));
    }

    #[test]
    fn value_answers_are_noisy_around_the_truth() {
        let j = judge(0.9, "sim-lineage-x", 5);
        let mut rel_right = 0;
        let mut bins = [0usize; 4];
        for i in 0..1000 {
            let mut m = exam_item(i, true);
            let p = m.projection.as_mut().unwrap();
            let e = p.exam_item.as_mut().unwrap();
            e.answer_kind = AnswerKind::Relevance as i32;
            p.expected = Some(ExpectedAnswer {
                decision: Decision::None as i32,
                relevance: Some(1 + (i % 4) as u32),
                ..Default::default()
            });
            let a = j.answer(&m).unwrap();
            if a.relevance == Some(1 + (i % 4) as u32) {
                rel_right += 1;
            }
            let p = m.projection.as_mut().unwrap();
            p.exam_item.as_mut().unwrap().answer_kind = AnswerKind::Quantiles as i32;
            p.expected = Some(ExpectedAnswer {
                decision: Decision::None as i32,
                value: Some(1500.0),
                ..Default::default()
            });
            let a = j.answer(&m).unwrap();
            let q: Vec<f64> = a.quantiles.iter().map(|q| q.value).collect();
            assert!(q[0] < q[1] && q[1] < q[2] && q[0] > 0.0, "{q:?}");
            bins[q.iter().filter(|v| **v < 1500.0).count()] += 1;
        }
        assert!((850..990).contains(&rel_right), "{rel_right}");
        // Calibrated: about 5 / 45 / 45 / 5 % of truths per inter-quantile bin.
        assert!(bins[0] > 20 && bins[0] < 90, "{bins:?}");
        assert!(bins[3] > 20 && bins[3] < 90, "{bins:?}");
        assert!(bins[1] > 380 && bins[2] > 380, "{bins:?}");
    }

    #[test]
    fn addresses_count_by_path_not_by_host_and_port() {
        assert_eq!(
            without_authorities(
                "see http://127.0.0.1:4100/a.txt and https://x.example/b, ftp://h/c"
            ),
            "see http:///a.txt and https:///b, ftp://h/c"
        );
        assert_eq!(without_authorities("http://host:1"), "http://");
        let mut a = merge(1, Side::A, Some(Decision::Accept));
        let mut b = a.clone();
        for (m, port) in [(&mut a, 4100), (&mut b, 4200)] {
            let p = m.projection.as_mut().unwrap();
            p.question = format!("Does http://127.0.0.1:{port}/a.txt support it?");
            p.items[0].citations.push(panel_proto::pb::Citation {
                source: "tabulation".into(),
                url: format!("http://127.0.0.1:{port}/a.txt"),
                claimed_tier: 2,
                quote: String::new(),
            });
        }
        assert_eq!(question_key(&a), question_key(&b));
    }

    #[test]
    fn profiles_are_checked() {
        for (p, field) in [
            (profile(1.0, "x", 0), "accuracy"),
            (profile(0.5, "x", 0), "accuracy"),
            (profile(0.9, "", 0), "lineage"),
            (
                SimulatedProfile {
                    leaning: Some("C".into()),
                    ..profile(0.9, "x", 0)
                },
                "leaning",
            ),
            (
                SimulatedProfile {
                    lineage_share: 1.0,
                    ..profile(0.9, "x", 0)
                },
                "lineage_share",
            ),
        ] {
            let e = SimulatedJudge::new(p).err().unwrap().to_string();
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn a_crux_report_keeps_the_fixture_and_takes_the_judges_decision() {
        let fixture = r#"{"primary_crux":"c","why_both_depend":"w","resolved_by":"r","verdict_warranted":false}"#;
        let r = procedure_rationale("mine".into(), 1, fixture, true, Some(false));
        let v: serde_json::Value = serde_json::from_str(&r).unwrap();
        assert_eq!(v["verdict_warranted"], true);
        assert_eq!(v["primary_crux"], "c");
        let r = procedure_rationale("mine".into(), 0, "because", true, Some(true));
        assert_eq!(r, "mine. Scripted fixture rationale: because");
        let r = procedure_rationale("mine".into(), 0, "because", false, Some(true));
        assert!(!r.contains("because"), "{r}");
    }
}
