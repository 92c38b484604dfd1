//! Admission by calibration exam (docs/ARCHITECTURE.md "Admission"): the default exam is put
//! to a newly registered arbiter's node as exam motions; its committed, revealed and
//! signed answers are scored in `apply` with the pure `calibration` crate, and the
//! arbiter is admitted only if every bar of the admission policy passes. The gold
//! answers never leave the coordinator except, in simulation, as scripted judges' hints.

use std::sync::LazyLock;

use calibration::admission::{AdmissionDecision, AdmissionPolicy, assess};
use calibration::exam::{Exam, ExamItem, Gold, LineError, Tier, load_exam};
use calibration::exam_scoring::{Answer, AnswerValue, ArbiterScores, score_arbiter};
use calibration::inert::InertPolicy;
use calibration::public_pool::{ItemKind, PublicItem};
use calibration::scoring_rules::ReliabilityBin;
use ed25519_dalek::VerifyingKey;
use panel_proto::VerifiedMemo;
use panel_proto::commit_reveal::{check_opens, verify_commitment};
use panel_proto::pb;
use serde::{Deserialize, Serialize};

use crate::model::State;
use crate::reply::{ExamWritten, to_value};

/// The shipped default exam (exams/default-v1.jsonl), embedded so a fresh cluster needs
/// no files.
pub const DEFAULT_EXAM_TEXT: &str = include_str!("../../../exams/default-v1.jsonl");

static DEFAULT_EXAM: LazyLock<Result<Exam, LineError>> =
    LazyLock::new(|| load_exam(DEFAULT_EXAM_TEXT));

/// The default exam, parsed once (a load error is the exam file's line error).
pub fn default_exam() -> Result<&'static Exam, &'static LineError> {
    DEFAULT_EXAM.as_ref()
}

/// The pseudo debate id exam motions carry.
pub const EXAM_DEBATE: &str = "exam";

/// Motion id of one exam item for one arbiter.
pub fn exam_motion_id(exam: &Exam, arbiter_id: &str, item_id: &str) -> String {
    let h = exam.content_hash.trim_start_matches("sha256:");
    format!("exam/{}/{arbiter_id}/{item_id}", &h[..h.len().min(12)])
}

/// An exam whose content hash is not `sha256:` and 32 bytes of hex: no motion or ruling
/// can bind it (the calibration crate writes every hash it computes so; only a damaged
/// exam file has another).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the exam's content hash {0:?} is not sha256: and 64 hex digits; reload the exam file \
     the calibration crate wrote"
)]
pub struct BadExamHash(pub String);

/// The digest every ruling on the exam binds, from its content hash.
fn exam_hash_bytes(exam: &Exam) -> Result<Vec<u8>, BadExamHash> {
    hex::decode(exam.content_hash.trim_start_matches("sha256:"))
        .ok()
        .filter(|b| b.len() == 32)
        .ok_or_else(|| BadExamHash(exam.content_hash.clone()))
}

fn answer_kind(kind: ItemKind) -> pb::AnswerKind {
    match kind {
        ItemKind::Binary => pb::AnswerKind::Binary,
        ItemKind::Relevance => pb::AnswerKind::Relevance,
        ItemKind::Tier => pb::AnswerKind::Tier,
        ItemKind::Quantity => pb::AnswerKind::Quantiles,
    }
}

/// The truth hint of a gold answer, which simulation clusters put on exam motions for
/// scripted judges.
pub fn expected_answer(g: &Gold) -> pb::ExpectedAnswer {
    match g {
        Gold::Binary(b) => pb::ExpectedAnswer {
            decision: if *b {
                pb::Decision::Accept
            } else {
                pb::Decision::Reject
            } as i32,
            ..Default::default()
        },
        Gold::Relevance(r) => pb::ExpectedAnswer {
            decision: pb::Decision::None as i32,
            relevance: Some(crate::debates::relevance_step(*r) as u32),
            ..Default::default()
        },
        Gold::Tier(t) => pb::ExpectedAnswer {
            decision: pb::Decision::None as i32,
            tier: Some(t.index() as u32 + 1),
            ..Default::default()
        },
        Gold::Quantity { value, .. } => pb::ExpectedAnswer {
            decision: pb::Decision::None as i32,
            value: Some(*value),
            ..Default::default()
        },
    }
}

/// Where an exam motion sits: its id, the hash it is judged against and its deadlines.
pub struct Asking<'a> {
    pub motion_id: String,
    pub state_hash: Vec<u8>,
    pub quantiles: &'a [f64],
    pub commit_deadline_ms: i64,
    pub reveal_deadline_ms: i64,
}

/// The exam motion that asks `item` (the default exam's and a sealed sitting's alike);
/// `expected` is the simulation's truth hint.
pub fn item_motion(
    at: Asking<'_>,
    item: &PublicItem,
    expected: Option<pb::ExpectedAnswer>,
) -> pb::Motion {
    let quantity = item.kind == ItemKind::Quantity;
    pb::Motion {
        motion_id: at.motion_id,
        debate_id: EXAM_DEBATE.into(),
        kind: pb::MotionKind::Exam as i32,
        state_hash: at.state_hash,
        projection: Some(pb::ContentProjection {
            question: item.question.clone(),
            items: item
                .motion
                .iter()
                .map(|text| pb::ProjectionItem {
                    label: "Motion".into(),
                    text: text.clone(),
                    ..Default::default()
                })
                .collect(),
            exam_item: Some(pb::ExamItem {
                item_id: item.id.clone(),
                question: item.question.clone(),
                answer_kind: answer_kind(item.kind) as i32,
                quantile_levels: if quantity {
                    at.quantiles.to_vec()
                } else {
                    Vec::new()
                },
                unit: item.unit.clone().unwrap_or_default(),
                seed: true,
            }),
            expected,
            ..Default::default()
        }),
        commit_deadline_unix_ms: at.commit_deadline_ms,
        reveal_deadline_unix_ms: at.reveal_deadline_ms,
        panel: Vec::new(),
        // Signed by the driver before it is sent (`sign_motion`).
        signer_key: Vec::new(),
        signature: Vec::new(),
        seals: Vec::new(),
    }
}

/// The default exam's motion for one item. `simulation` adds the truth hint for scripted
/// judges.
pub fn exam_motion(
    exam: &Exam,
    item: &ExamItem,
    arbiter_id: &str,
    commit_deadline_ms: i64,
    reveal_deadline_ms: i64,
    simulation: bool,
) -> Result<pb::Motion, BadExamHash> {
    Ok(item_motion(
        Asking {
            motion_id: exam_motion_id(exam, arbiter_id, &item.id),
            state_hash: exam_hash_bytes(exam)?,
            quantiles: &exam.quantiles,
            commit_deadline_ms,
            reveal_deadline_ms,
        },
        &PublicItem::of(item),
        simulation.then(|| expected_answer(&item.gold)),
    ))
}

/// Why an exam submission was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExamError {
    #[error("exam answer {index}: {reason}")]
    Answer { index: usize, reason: String },
    #[error("scoring failed: {0}")]
    Scoring(#[from] calibration::error::CalibrationError),
    #[error(transparent)]
    ExamHash(#[from] BadExamHash),
}

/// Why apply refuses an exam submission (`exam_refused`): the default exam does not
/// load, a carried exam motion is not the exam's, or an answer or the scoring fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExamRefusal {
    #[error(transparent)]
    Load(#[from] LineError),
    #[error(transparent)]
    Motion(#[from] ExamMotionError),
    #[error(transparent)]
    Answers(#[from] ExamError),
}

/// Why a signed exam motion carried by an exam submission is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExamMotionError {
    #[error("exam motion {index} is not a hex-encoded protobuf Motion ({reason})")]
    Malformed { index: usize, reason: String },
    #[error(transparent)]
    ExamHash(#[from] BadExamHash),
    #[error("exam motion {index}: {source}")]
    Signed {
        index: usize,
        source: crate::rules::signed_motion::MotionError,
    },
    #[error(
        "exam motion {index} ({motion_id}) is not an item of {arbiter_id}'s exam; the driver \
         puts exactly the exam's items to the arbiter's node"
    )]
    NotAnItem {
        index: usize,
        motion_id: String,
        arbiter_id: String,
    },
    #[error(
        "exam motion {motion_id} differs from item {item} of the exam ({exam_hash}): a \
         motion put to an arbiter must carry the item's question and motion text exactly, \
         so no driver can examine an arbiter on other content"
    )]
    Altered {
        motion_id: String,
        item: String,
        exam_hash: String,
    },
    #[error("exam motion {motion_id} is carried twice")]
    Duplicate { motion_id: String },
    #[error("exam motion {index}: {source}")]
    Unsealed {
        index: usize,
        source: panel_federation::motion_seal::SealError,
    },
    #[error(
        "exam answer {index} answers {motion_id}, but the submission carries no signed motion \
         for it; the driver sends every exam motion it signed with the answers"
    )]
    Missing { index: usize, motion_id: String },
}

/// Checks the signed exam motions an exam submission carries (rule set
/// [`EXAM_MOTIONS`](crate::rules::EXAM_MOTIONS) on): each is signed (by the charter's
/// motion key when there is a charter) and is exactly the exam motion of one of the exam's
/// items for this arbiter, with the deadlines it was put with. Returns each motion's digest
/// by motion id, for the rulings to bind. Signatures are verified through `memo`.
pub fn check_exam_motions(
    exam: &Exam,
    arbiter_id: &str,
    wires: &[crate::rules::signed_motion::WireMotion],
    pinned: Option<&VerifyingKey>,
    memo: &VerifiedMemo,
) -> Result<std::collections::BTreeMap<String, [u8; 32]>, ExamMotionError> {
    check_motions(wires, pinned, None, &exam.content_hash, memo, |index, m| {
        let item = exam
            .items
            .iter()
            .find(|i| exam_motion_id(exam, arbiter_id, &i.id) == m.motion_id)
            .ok_or_else(|| ExamMotionError::NotAnItem {
                index,
                motion_id: m.motion_id.clone(),
                arbiter_id: arbiter_id.to_owned(),
            })?;
        // The only freedom a driver has: the deadlines, and (in simulation, for scripted
        // judges) the truth hint, whose answers the exam file publishes anyway.
        let hinted = m.projection.as_ref().is_some_and(|p| p.expected.is_some());
        let expected = exam_motion(
            exam,
            item,
            arbiter_id,
            m.commit_deadline_unix_ms,
            m.reveal_deadline_unix_ms,
            hinted,
        )?;
        Ok((expected, item.id.clone()))
    })
}

/// The shared check of carried exam motions: `expected(index, motion)` gives the motion
/// the driver should have put (unsigned) and the item it asks, or refuses the motion;
/// `exam_ref` names the exam (or pool) in a refusal. With `sealed_by`, each motion must
/// carry that quorum's seals (rule set `MOTION_SEALS`; docs/WIRE.md "Motion seals").
pub(crate) fn check_motions(
    wires: &[crate::rules::signed_motion::WireMotion],
    pinned: Option<&VerifyingKey>,
    sealed_by: Option<&panel_tlog::LogQuorum>,
    exam_ref: &str,
    memo: &VerifiedMemo,
    expected: impl Fn(usize, &pb::Motion) -> Result<(pb::Motion, String), ExamMotionError>,
) -> Result<std::collections::BTreeMap<String, [u8; 32]>, ExamMotionError> {
    use prost::Message;
    let mut digests = std::collections::BTreeMap::new();
    for (index, wire) in wires.iter().enumerate() {
        let malformed = |reason: String| ExamMotionError::Malformed { index, reason };
        let bytes = wire.bytes().map_err(|_| malformed("not hex".into()))?;
        let m = pb::Motion::decode(bytes.as_ref()).map_err(|e| malformed(e.to_string()))?;
        let signed = |e: crate::rules::signed_motion::MotionError| ExamMotionError::Signed {
            index,
            source: e,
        };
        let digest = panel_proto::motion_signing::verify_motion_self(&m, memo)
            .map_err(|e| signed(e.into()))?;
        if let Some(key) = pinned
            && m.signer_key.as_slice() != key.as_bytes()
        {
            return Err(signed(
                crate::rules::signed_motion::MotionError::UnpinnedSigner {
                    signer: hex::encode(&m.signer_key),
                    pinned: hex::encode(key.as_bytes()),
                },
            ));
        }
        if let Some(quorum) = sealed_by {
            panel_federation::motion_seal::check(quorum, &m.motion_id, &digest, &m.seals)
                .map_err(|source| ExamMotionError::Unsealed { index, source })?;
        }
        let (mut want, item) = expected(index, &m)?;
        want.signer_key.clone_from(&m.signer_key);
        want.signature.clone_from(&m.signature);
        // Seals sign the digest from outside it (docs/WIRE.md "Motion seals"); the nodes
        // check them, apply compares the content.
        want.seals.clone_from(&m.seals);
        if want != m {
            return Err(ExamMotionError::Altered {
                motion_id: m.motion_id,
                item,
                exam_hash: exam_ref.to_owned(),
            });
        }
        if digests.insert(m.motion_id.clone(), digest).is_some() {
            return Err(ExamMotionError::Duplicate {
                motion_id: m.motion_id,
            });
        }
    }
    Ok(digests)
}

/// Verifies every reveal (commitment, opening, strict signature under the registered
/// key, bound to this arbiter's exam motion) and turns it into a scored answer. With
/// `motions` (the digests from [`check_exam_motions`]) every ruling must also bind the
/// digest of the signed motion it answers; without (entries from before rule set
/// [`EXAM_MOTIONS`](crate::rules::EXAM_MOTIONS)) the binding is not checked, as it was not
/// when they applied. Signatures are verified through `memo`.
pub fn answers_from_reveals(
    exam: &Exam,
    arbiter_id: &str,
    key: &VerifyingKey,
    reveals: &[crate::rules::hex_bytes::RevealBytes],
    motions: Option<&std::collections::BTreeMap<String, [u8; 32]>>,
    memo: &VerifiedMemo,
) -> Result<Vec<Answer>, ExamError> {
    let sheet = Sheet {
        arbiter_id,
        key,
        state_hash: &exam_hash_bytes(exam)?,
        item_for: &|motion_id: &str| {
            exam.items
                .iter()
                .find(|i| exam_motion_id(exam, arbiter_id, &i.id) == motion_id)
                .map(|i| (i.id.clone(), ItemKind::of(&i.gold)))
        },
    };
    sheet.answers(reveals, motions, memo)
}

/// What an arbiter was asked, for turning its reveals into answers: the motion id of each
/// item and the hash every ruling must have judged.
pub(crate) struct Sheet<'a> {
    pub arbiter_id: &'a str,
    pub key: &'a VerifyingKey,
    pub state_hash: &'a [u8],
    /// The item (and its kind) a motion id asks, if it is one of this arbiter's.
    pub item_for: &'a dyn Fn(&str) -> Option<(String, ItemKind)>,
}

impl Sheet<'_> {
    /// [`answers_from_reveals`] for this sheet.
    pub fn answers(
        &self,
        reveals: &[crate::rules::hex_bytes::RevealBytes],
        motions: Option<&std::collections::BTreeMap<String, [u8; 32]>>,
        memo: &VerifiedMemo,
    ) -> Result<Vec<Answer>, ExamError> {
        let arbiter_id = self.arbiter_id;
        let mut out: Vec<Answer> = Vec::new();
        for (index, hex_reveal) in reveals.iter().enumerate() {
            let bad = |reason: String| ExamError::Answer { index, reason };
            let crate::rules::ruling::RevealParts {
                signed,
                salt,
                commitment,
            } = crate::rules::ruling::decode_reveal(hex_reveal).map_err(|e| bad(e.to_string()))?;
            let (sr, c) = (&signed, &commitment);
            let signer = verify_commitment(c, memo).map_err(|e| bad(e.to_string()))?;
            if signer.as_bytes() != self.key.as_bytes() {
                return Err(bad(format!(
                    "signed by a key that is not {arbiter_id}'s registered key"
                )));
            }
            check_opens(c, sr, &salt, memo).map_err(|e| bad(e.to_string()))?;
            let r = sr.ruling.as_ref().ok_or_else(|| bad("no ruling".into()))?;
            let (item, kind) = (self.item_for)(&r.motion_id).ok_or_else(|| {
                bad(format!(
                    "motion {} is not an item of this arbiter's exam",
                    r.motion_id
                ))
            })?;
            if r.state_hash != self.state_hash {
                return Err(bad("the ruling judged another version of the exam".into()));
            }
            if let Some(digests) = motions {
                let digest = digests.get(&r.motion_id).ok_or_else(|| {
                    bad(ExamMotionError::Missing {
                        index,
                        motion_id: r.motion_id.clone(),
                    }
                    .to_string())
                })?;
                crate::rules::signed_motion::check_ruling(
                    sr,
                    arbiter_id,
                    &r.motion_id,
                    Some(digest),
                )
                .map_err(|e| bad(e.to_string()))?;
            }
            if out.iter().any(|a| a.item == item) {
                return Err(bad(format!("item {item} answered twice")));
            }
            // A quantity or tier item answered without a value (an abstention: a model that
            // wrote no increasing numbers) is no answer: the item counts as missing, as an
            // unanswered one does, instead of leaving the whole exam unscorable.
            let no_value = match kind {
                ItemKind::Quantity => r.quantiles.is_empty(),
                ItemKind::Tier => r.tier.is_none(),
                _ => false,
            };
            if no_value && r.decision == pb::Decision::Abstain as i32 {
                continue;
            }
            let value = match kind {
                ItemKind::Binary => AnswerValue::Probability(r.probability.clamp(0.0, 1.0)),
                ItemKind::Relevance => AnswerValue::Relevance(crate::debates::relevance_value(
                    r.relevance.unwrap_or(0).min(4) as u8,
                )),
                ItemKind::Tier => AnswerValue::Tier(
                    Tier::parse(&format!("T{}", r.tier.unwrap_or(0)))
                        .ok_or_else(|| bad("tier answer must be 1..5".into()))?,
                ),
                ItemKind::Quantity => {
                    let mut q: Vec<(f64, f64)> =
                        r.quantiles.iter().map(|q| (q.level, q.value)).collect();
                    q.sort_by(|a, b| a.0.total_cmp(&b.0));
                    AnswerValue::Quantiles(q.into_iter().map(|(_, v)| v).collect())
                }
            };
            out.push(Answer {
                arbiter: arbiter_id.to_string(),
                item,
                value,
                line: index + 1,
            });
        }
        Ok(out)
    }
}

/// What an arbiter's `exam` field holds (the `{scores, decision}` that `SubmitExam` writes
/// from [`admit`]), decoded for readers such as `panel dash`: the headline scores, the
/// reliability table and the admission decision. Fields the writer adds later are
/// ignored, so an older reader keeps decoding newer records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamRecord {
    pub scores: ExamScores,
    pub decision: ExamDecision,
    /// The bias probes' scores (sealed sittings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<calibration::bias_probes::ProbeScores>,
    /// Calibration per tag (sittings from rule set 14 on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<calibration::exam_hold_back::TopicCalibration>,
    /// The items held back from the admission score for the track record (the same).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<calibration::exam_hold_back::HeldBackForecast>,
}

/// The scores of one exam ([`ArbiterScores`], the parts a reader shows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamScores {
    pub exam: String,
    pub answered: usize,
    #[serde(default)]
    pub missing: Vec<String>,
    pub binary: Option<ExamBinary>,
    pub quantiles: Option<ExamQuantiles>,
}

/// Scores on the exam's binary items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamBinary {
    pub items: usize,
    pub brier: f64,
    pub base_rate_brier: f64,
    pub brier_skill: Option<f64>,
    pub log_score: f64,
    pub ece: f64,
    pub reliability: Vec<ReliabilityBin>,
}

/// Cooke's scores on the exam's quantity seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamQuantiles {
    pub seeds: usize,
    pub calibration: f64,
    pub information: f64,
}

/// The admission decision ([`AdmissionDecision`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamDecision {
    pub admitted: bool,
    pub failed: Vec<ExamBar>,
    pub decided_at: i64,
    /// Earliest retake (Unix seconds) when refused.
    #[serde(default)]
    pub reexam_not_before: Option<i64>,
    #[serde(default)]
    pub reexam_date: Option<String>,
}

/// One failed admission bar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamBar {
    pub bar: String,
    pub observed: Option<f64>,
    pub required: String,
    pub message: String,
}

impl crate::model::Arbiter {
    /// The latest exam, decoded; `None` before the first exam.
    pub fn exam_record(&self) -> Option<Result<ExamRecord, serde_json::Error>> {
        self.exam.as_ref().map(ExamRecord::deserialize)
    }
}

/// Scores an arbiter's verified answers and applies the default admission policy at
/// `now_s` (Unix seconds, the leader's stamped time).
pub fn admit(
    exam: &Exam,
    arbiter_id: &str,
    answers: &[Answer],
    now_s: i64,
) -> Result<(ArbiterScores, AdmissionDecision), ExamError> {
    let refs: Vec<&Answer> = answers.iter().collect();
    let scores = score_arbiter(exam, arbiter_id, &refs, &InertPolicy::default())?;
    let decision = assess(&AdmissionPolicy::default(), &scores, now_s);
    Ok((scores, decision))
}

/// Keeps a scored exam on the arbiter: the record, the admission (never for a revoked
/// key), the headline score, and a fresh recalibration window. Returns the decision.
pub(crate) fn record_exam(state: &mut State, arbiter_id: &str, written: &ExamWritten<'_>) -> bool {
    let brier_skill = written
        .scores
        .binary
        .as_ref()
        .map(|b| (1.0 - b.brier).clamp(0.0, 1.0))
        .unwrap_or(0.0);
    if let Some(a) = state.arbiters.get_mut(arbiter_id) {
        // A revoked key is never re-admitted by an exam.
        a.admitted = written.decision.admitted && a.revoked.is_none();
        a.score_milli = (brier_skill * 1000.0).round() as u32;
        a.exam = Some(to_value(written));
        a.recalibration.restart_after_exam();
    }
    written.decision.admitted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exam whose content hash does not decode asks nothing and scores nothing: it
    /// names the hash, where a stand-in of 32 zero bytes was bound before.
    #[test]
    fn an_exam_whose_hash_does_not_decode_is_refused() {
        let mut exam = default_exam().expect("exam").clone();
        let item = exam.items[0].clone();
        assert!(exam_motion(&exam, &item, "a1", 1, 2, false).is_ok());
        for bad in ["sha256:zz", "sha256:abcd", ""] {
            exam.content_hash = bad.into();
            let e = exam_motion(&exam, &item, "a1", 1, 2, false).expect_err(bad);
            assert!(e.to_string().contains("64 hex digits"), "{e}");
            let key = ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key();
            let refused =
                answers_from_reveals(&exam, "a1", &key, &[], None, &VerifiedMemo::default());
            assert!(
                matches!(refused, Err(ExamError::ExamHash(_))),
                "{refused:?}"
            );
        }
    }

    /// The record `SubmitExam` stores (`{scores, decision}` from [`admit`]) decodes into
    /// [`ExamRecord`], so readers never index its JSON by key.
    #[test]
    fn the_stored_exam_decodes_into_the_reader_type() {
        let exam = default_exam().expect("exam");
        let answers: Vec<Answer> = exam
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let value = match &item.gold {
                    Gold::Binary(yes) => AnswerValue::Probability(if *yes { 0.8 } else { 0.2 }),
                    _ => return None,
                };
                Some(Answer {
                    arbiter: "a".into(),
                    item: item.id.clone(),
                    value,
                    line: i + 1,
                })
            })
            .collect();
        let (scores, decision) = admit(exam, "a", &answers, 1_700_000_000).expect("scored");
        let stored = serde_json::json!({ "scores": scores, "decision": decision });
        let r: ExamRecord = serde_json::from_value(stored).expect("decodes");
        let b = r.scores.binary.expect("binary items scored");
        assert_eq!(b.items, answers.len());
        assert_eq!(b.reliability.len(), 10);
        assert!(!r.decision.admitted, "no quantiles answered: refused");
        assert!(r.decision.failed.iter().any(|f| f.bar == "quantile_seeds"));
    }

    /// Under a quorum log (rule set `MOTION_SEALS`) an exam motion counts only with the
    /// seals of the quorum's organisations, as nodes require before answering.
    #[test]
    fn a_carried_exam_motion_needs_the_quorums_seals() {
        let key = |b: u8| {
            panel_tlog::NoteSigner::new(
                "example.com/log",
                ed25519_dalek::SigningKey::from_bytes(&[b; 32]),
            )
            .expect("signer")
        };
        let (north, south) = (key(1), key(2));
        let quorum = panel_tlog::LogQuorum::of(
            [("north", north.verifier()), ("south", south.verifier())],
            2,
        );
        let motion_key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        let signed = panel_proto::sign_motion(
            &motion_key,
            pb::Motion {
                motion_id: "exam/s1/a/t".into(),
                commit_deadline_unix_ms: 10,
                reveal_deadline_unix_ms: 20,
                ..Default::default()
            },
        );
        let digest = panel_proto::motion_digest(&signed);
        let check = |m: &pb::Motion| {
            check_motions(
                &[crate::rules::signed_motion::encode(m)],
                None,
                Some(&quorum),
                "pool",
                &VerifiedMemo::default(),
                |_, m| {
                    let mut want = m.clone();
                    want.seals.clear();
                    Ok((want, "item".into()))
                },
            )
        };
        let one = pb::Motion {
            seals: vec![panel_federation::motion_seal::seal(&north, &digest)],
            ..signed.clone()
        };
        let e = check(&one).unwrap_err();
        assert!(
            matches!(e, ExamMotionError::Unsealed { index: 0, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("quorum is 2"), "{e}");
        let both = pb::Motion {
            seals: vec![
                panel_federation::motion_seal::seal(&north, &digest),
                panel_federation::motion_seal::seal(&south, &digest),
            ],
            ..signed
        };
        assert!(check(&both).is_ok());
    }
}
