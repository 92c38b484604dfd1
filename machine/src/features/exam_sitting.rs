//! Sealed exam sittings (rule set [`SEALED_EXAMS`](crate::rules::SEALED_EXAMS);
//! docs/CALIBRATION.md "Sealed pools", docs/coordinator/state-machine.md "Sealed exams").
//!
//! Before, the exam was a file in the repository: every gold answer was public, so a judge
//! that only looked answers up was admitted with a perfect score. Now an exam runs in
//! sittings:
//!
//! 1. `SealExamPool` publishes a pool's public half ([`PublicPool`]: questions, no golds,
//!    no sources) and a salted commitment to its answer key
//!    ([`calibration::answer_key`]). It opens sitting `n`.
//! 2. Each arbiter due an exam is asked its own draw from the pool
//!    ([`calibration::exam_draw::draw_public`]), seeded by the pool, the sitting and the
//!    arbiter's registered key, so the leader cannot choose who gets which items and anyone
//!    re-draws them from the record. The asking order is the draw's.
//! 3. `SubmitExam` checks the signed motions and the committed, revealed answers as
//!    before, and holds them: nothing can be scored, since no replica knows the key.
//! 4. `RevealExamKey` publishes the exam file and the salt. Apply checks that the file's
//!    public half is the sealed pool and that it opens the commitment, then scores every
//!    held exam with the bias probes' bars ([`AdmissionPolicy::with_bias_probes`]) and
//!    closes the sitting. The record keeps both entries, so `panel verify` re-scores.
//!
//! An arbiter refused at a sitting may sit a later one once its cooldown has passed, and a
//! flagged arbiter may sit again at once ([`exam_due`]); each sitting is a fresh draw. A
//! pool sealed again after its key was revealed is marked [`Sitting::reused_from`]: its
//! answers were public before that sitting, which the record then says.

use crate::log::refusal_code::RefusalCode;
use std::collections::BTreeMap;

use calibration::admission::{AdmissionDecision, AdmissionPolicy, assess_with_probes};
use calibration::answer_key::verify_answer_key;
use calibration::bias_probes::{ProbeScores, score_probes};
use calibration::exam::{Exam, LineError, load_exam};
use calibration::exam_draw::{DrawCounts, DrawError, draw_public_with_extra};
use calibration::exam_hold_back::{self, HeldBackForecast, TopicCalibration};
use calibration::exam_scoring::{Answer, ArbiterScores, score_arbiter};
use calibration::inert::InertPolicy;
use calibration::public_pool::{PoolError, PublicItem, PublicPool};
use calibration::recalibration::{RecalibrationPolicy, Resolution, ResolutionKind, ResolvedItem};
use ed25519_dalek::VerifyingKey;
use panel_proto::pb;
use sha2::{Digest, Sha256};

use crate::features::admission::{Asking, ExamMotionError, Sheet, item_motion};
use crate::features::org_pools::OfferRefusal;
pub use crate::log::exam_pool::{KeyReveal, SealedPool};
pub use crate::model::sitting::{HeldExam, Revealed, Sitting, SittingRef};
use crate::model::{Arbiter, State};

/// How many items of each kind one arbiter is asked: enough binary items and quantity
/// seeds for the admission bars (30 and 10), six whole probe groups, and a few relevance
/// and tier items for the inert-factor bars.
pub const DRAW: DrawCounts = DrawCounts {
    binary: 40,
    probe_groups: 6,
    relevance: 6,
    tier: 6,
    quantity: 12,
};

/// How many items a sitting sealed from rule set 14 asks beyond [`DRAW`]: plain binary
/// items drawn after it and held back from the admission score for the track record
/// (`calibration::exam_hold_back`), so the decision rests on exactly the items of [`DRAW`].
pub const HELD_BACK_EXTRA: usize = exam_hold_back::HELD_BACK;

/// Domain tag of an arbiter's draw seed.
pub const DRAW_SEED_DOMAIN: &str = "crucible-panel/exam/draw-seed/v1\n";

/// Why a sitting command is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SittingError {
    #[error("sitting {0} is still open: reveal its key before sealing another pool")]
    StillOpen(u32),
    #[error(
        "pool {0} is the shipped public pool, whose gold answers anyone can read, and this \
         federation's charter does not mark it a practice group (exam.practice): give every \
         replica private pools (exam_pools, docs/coordinator/state-machine.md \"Sealed exams\")"
    )]
    PublicPool(String),
    #[error("the sealed pool does not check: {0}")]
    Pool(#[from] PoolError),
    #[error("{what} must be 32 bytes of hex")]
    NotHex32 { what: &'static str },
    #[error("no exam sitting is open: the driver seals a pool first")]
    NoneOpen,
    #[error("sitting {got} is not the open sitting ({open:?})")]
    NotOpen { got: u32, open: Option<u32> },
    #[error("exam answers name no sitting: from rule set 3 every exam belongs to a sealed sitting")]
    NoSitting,
    #[error("{arbiter_id} is not due an exam: {why}")]
    NotDue { arbiter_id: String, why: NotDue },
    #[error("{0} already answered this sitting")]
    AlreadyHeld(String),
    #[error("the draw for {arbiter_id} failed: {source}")]
    Draw {
        arbiter_id: String,
        source: DrawError,
    },
    #[error("the revealed exam does not load: {0}")]
    Load(#[from] LineError),
    #[error(
        "the revealed exam's public half ({revealed}) is not the sealed pool ({sealed}): reveal the exam that was sealed"
    )]
    OtherPool { sealed: String, revealed: String },
    #[error("the revealed exam and salt do not open the sealed key commitment")]
    KeyMismatch,
    #[error(transparent)]
    OrgPool(#[from] crate::features::org_pools::OrgPoolError),
}

impl SittingError {
    pub fn code(&self) -> RefusalCode {
        match self {
            SittingError::StillOpen(_)
            | SittingError::PublicPool(_)
            | SittingError::Pool(_)
            | SittingError::NotHex32 { .. }
            | SittingError::Load(_)
            | SittingError::OtherPool { .. }
            | SittingError::KeyMismatch => RefusalCode::ExamPoolRefused,
            SittingError::OrgPool(e) => e.code(),
            _ => RefusalCode::ExamRefused,
        }
    }
}

/// The number the next sealed sitting takes: one past the newest, from 1.
pub fn next_sitting_number(state: &State) -> u32 {
    crate::model::sitting::next_number(&state.exam_sittings)
}

/// The open sitting: the newest, if its key is not revealed.
pub fn open_sitting(state: &State) -> Option<&Sitting> {
    crate::model::sitting::open(&state.exam_sittings)
}

/// Why an arbiter is not due an exam ([`exam_due`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotDue {
    #[error("its key is revoked")]
    Revoked,
    #[error("it is admitted and not flagged")]
    Admitted,
    #[error("it was refused and may retake from {} (the cooldown)", .date.as_deref().unwrap_or("later"))]
    Cooldown { date: Option<String> },
    #[error(
        "its exam record does not decode ({category:?} error at line {line} column {column}); \
         the state is damaged: restore the replica from a backup or a peer's snapshot"
    )]
    Record {
        category: serde_json::error::Category,
        line: usize,
        column: usize,
    },
}

/// Whether an arbiter may sit an exam at `now_ms`: never examined; or refused, once the
/// refusal's cooldown has passed; or flagged by recalibration. Never with a revoked key.
/// The driver asks the same question of every arbiter on every pass, so only a refused
/// arbiter's record is decoded.
pub fn exam_due(arbiter: &Arbiter, now_ms: u64) -> Result<(), NotDue> {
    if arbiter.revoked.is_some() {
        return Err(NotDue::Revoked);
    }
    if arbiter.exam.is_none() || arbiter.recalibration.is_flagged() {
        return Ok(());
    }
    // Not revoked, so `admitted` is the last exam's decision (`record_exam`).
    if arbiter.admitted {
        return Err(NotDue::Admitted);
    }
    let record = match arbiter.exam_record() {
        Some(Ok(record)) => record,
        Some(Err(e)) => {
            return Err(NotDue::Record {
                category: e.classify(),
                line: e.line(),
                column: e.column(),
            });
        }
        None => return Ok(()),
    };
    match record.decision.reexam_not_before {
        Some(t) if (t.max(0) as u64).saturating_mul(1000) > now_ms => Err(NotDue::Cooldown {
            date: record.decision.reexam_date,
        }),
        _ => Ok(()),
    }
}

/// The seed of an arbiter's draw in a sitting: the first 8 bytes (big-endian) of SHA-256
/// over [`DRAW_SEED_DOMAIN`], the pool id, the sitting number and the arbiter's key. All
/// three are fixed before the exam, and none is the leader's choice.
pub fn draw_seed(pool_id: &str, number: u32, key: &VerifyingKey) -> u64 {
    let mut h = Sha256::new();
    h.update(DRAW_SEED_DOMAIN.as_bytes());
    h.update((pool_id.len() as u64).to_be_bytes());
    h.update(pool_id.as_bytes());
    h.update(number.to_be_bytes());
    h.update(key.as_bytes());
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

fn hex32(what: &'static str, s: &str) -> Result<[u8; 32], SittingError> {
    hex::decode(s)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or(SittingError::NotHex32 { what })
}

/// `SealExamPool`: opens the next sitting.
pub fn seal(
    state: &mut State,
    log_index: u64,
    sealed: &SealedPool,
) -> Result<crate::reply::SealPoolReply, SittingError> {
    if let Some(open) = open_sitting(state) {
        return Err(SittingError::StillOpen(open.number));
    }
    sealed.public.validate()?;
    hex32("the key commitment", &sealed.key_commitment.to_hex())?;
    let pool_id = sealed.public.id()?;
    if state.rules >= crate::rules::PRACTICE_EXAMS && !may_seal_public(state) {
        let public = embedded_pool().map(|p| p.public_id.as_str());
        if public == Ok(pool_id.as_str()) {
            return Err(SittingError::PublicPool(pool_id));
        }
    }
    let number = next_sitting_number(state);
    let organisation = crate::features::org_pools::check_seal(state, number, sealed)?;
    let reused_from = state
        .exam_sittings
        .iter()
        .find(|s| s.pool_id == pool_id && s.revealed.is_some())
        .map(|s| s.number);
    state.exam_sittings.push(Sitting {
        number,
        pool_id: pool_id.clone(),
        public: sealed.public.clone(),
        key_commitment: sealed.key_commitment.clone(),
        sealed_log_index: log_index,
        reused_from,
        held: BTreeMap::new(),
        revealed: None,
        // Holding back needs a pool with the extra plain binary items; a smaller one is
        // asked the plain draw and holds nothing back.
        holds_back: state.rules >= crate::rules::EXAM_TRACK_RECORD
            && draw_public_with_extra(&sealed.public, 0, &DRAW, HELD_BACK_EXTRA).is_ok(),
        opaque: state.rules >= crate::rules::OPAQUE_EXAMS,
        organisation,
        closed_log_index: None,
    });
    Ok(crate::reply::SealPoolReply {
        sitting: number,
        pool_id,
        items: sealed.public.items.len(),
        reused_from,
    })
}

/// Whether this group may examine with the shipped public pool: an unchartered debug
/// group, or a charter that marks the federation a practice group.
fn may_seal_public(state: &State) -> bool {
    state
        .charter
        .as_ref()
        .is_none_or(|c| c.exam.as_ref().is_some_and(|e| e.practice))
}

/// The admission bar the charter sets (the skill bar when it sets none).
pub fn exam_bar(state: &State) -> panel_federation::ExamBar {
    state
        .charter
        .as_ref()
        .and_then(|c| c.exam.as_ref())
        .map_or(panel_federation::ExamBar::Skill, |e| e.bar)
}

/// Why `submit` refuses an exam; apply reports each as the refusal it always was.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Sitting(#[from] SittingError),
    #[error("arbiter {0} is not registered")]
    UnknownArbiter(String),
    #[error(transparent)]
    Ruling(#[from] crate::rules::ruling::RulingError),
    #[error(transparent)]
    Refusal(#[from] crate::features::admission::ExamRefusal),
}

/// `SubmitExam` in a sitting: checks the carried motions (exactly the arbiter's draw, as
/// signed) and the answers, and holds them until the reveal.
pub fn submit(
    state: &mut State,
    at: (u64, u64),
    arbiter_id: &str,
    sitting: Option<u32>,
    reveals: &[crate::rules::hex_bytes::RevealBytes],
    motions: &[crate::rules::signed_motion::WireMotion],
    memo: &panel_proto::VerifiedMemo,
) -> Result<crate::reply::ExamHeldReply, SubmitError> {
    let (log_index, time_ms) = at;
    let number = sitting.ok_or(SittingError::NoSitting)?;
    let open = open_sitting(state).ok_or(SittingError::NoneOpen)?;
    if open.number != number {
        return Err(SittingError::NotOpen {
            got: number,
            open: Some(open.number),
        }
        .into());
    }
    let arbiter = state
        .arbiters
        .get(arbiter_id)
        .ok_or_else(|| SubmitError::UnknownArbiter(arbiter_id.to_string()))?;
    exam_due(arbiter, time_ms).map_err(|why| SittingError::NotDue {
        arbiter_id: arbiter_id.to_owned(),
        why,
    })?;
    if open.held.contains_key(arbiter_id) {
        return Err(SittingError::AlreadyHeld(arbiter_id.to_owned()).into());
    }
    crate::features::org_pools::may_sit(open, arbiter_id, &arbiter.registration.organisation)
        .map_err(SittingError::from)?;
    let key = crate::rules::ruling::parse_public_key(arbiter_id, &arbiter.registration.public_key)?;
    let asked = open.asked(arbiter_id, &key)?;
    let seed = open.seed(&key);
    let pinned = crate::features::charter_rules::current_motion_key(state);
    let opaque = open
        .opaque
        .then(|| crate::features::opaque_exam::Matcher::new(open, seed, &asked));
    let sealed_by = (state.rules >= crate::rules::MOTION_SEALS)
        .then(|| {
            state
                .charter
                .as_ref()
                .and_then(panel_federation::motion_seal::required)
        })
        .flatten();
    let state_hash = open.state_hash()?;
    let digests = crate::features::admission::check_motions(
        motions,
        pinned.as_ref(),
        sealed_by.as_ref(),
        &open.pool_id,
        memo,
        |index, m| {
            let item = match &opaque {
                Some(matcher) => open.carried_item(matcher, arbiter_id, m),
                None => open.asked_item(arbiter_id, &asked, &m.motion_id),
            }
            .ok_or_else(|| ExamMotionError::NotAnItem {
                index,
                motion_id: m.motion_id.clone(),
                arbiter_id: arbiter_id.to_owned(),
            })?;
            // The hint is a simulation's; apply cannot check it before the reveal.
            let hint = m.projection.as_ref().and_then(|p| p.expected);
            let deadlines = (m.commit_deadline_unix_ms, m.reveal_deadline_unix_ms);
            let asking = Asked {
                motion_id: m.motion_id.clone(),
                seed,
                item,
            };
            Ok((
                open.motion_as(asking, deadlines, hint, state_hash.clone()),
                item.id.clone(),
            ))
        },
    )
    .map_err(crate::features::admission::ExamRefusal::from)?;
    let item_for = |motion_id: &str| {
        let id = match &opaque {
            Some(matcher) => matcher.item_for(motion_id)?,
            None => open.asked_item(arbiter_id, &asked, motion_id)?.id.clone(),
        };
        open.public.item(&id).map(|i| (i.id.clone(), i.kind))
    };
    let answers = Sheet {
        arbiter_id,
        key: &key,
        state_hash: &state_hash,
        item_for: &item_for,
    }
    .answers(reveals, Some(&digests), memo)
    .map_err(crate::features::admission::ExamRefusal::from)?;
    let reply = crate::reply::ExamHeldReply {
        arbiter_id: arbiter_id.to_owned(),
        sitting: number,
        asked: asked.len(),
        answered: answers.len(),
    };
    let motions = opaque.map(|m| m.by_item()).unwrap_or_default();
    if let Some(open) = state.exam_sittings.last_mut() {
        open.held.insert(
            arbiter_id.to_owned(),
            HeldExam {
                seed,
                asked,
                answers,
                submitted_log_index: log_index,
                submitted_at_ms: time_ms,
                motions,
            },
        );
    }
    Ok(reply)
}

/// `RevealExamKey`: checks the key against the seal, scores every held exam and closes
/// the sitting.
pub fn reveal(
    state: &mut State,
    at: (u64, u64),
    k: &KeyReveal,
) -> Result<crate::reply::RevealKeyReply, SittingError> {
    let (log_index, time_ms) = at;
    let open = open_sitting(state).ok_or(SittingError::NoneOpen)?;
    if open.number != k.sitting {
        return Err(SittingError::NotOpen {
            got: k.sitting,
            open: Some(open.number),
        });
    }
    crate::features::org_pools::may_reveal(open)?;
    let exam = load_exam(&k.exam)?;
    let revealed = PublicPool::of(&exam).id()?;
    if revealed != open.pool_id {
        return Err(SittingError::OtherPool {
            sealed: open.pool_id.clone(),
            revealed,
        });
    }
    let salt = hex32("the salt", &k.salt.to_hex())?;
    let commitment = hex32("the key commitment", &open.key_commitment.to_hex())?;
    if !verify_answer_key(&exam, salt, commitment) {
        return Err(SittingError::KeyMismatch);
    }
    let now_s = (time_ms / 1000) as i64;
    let bar = exam_bar(state);
    let hold_back = open.holds_back;
    let in_domain_only = state.rules >= crate::rules::ANSWERS_IN_DOMAIN;
    // Score first, from the held exams as they stand; then write.
    let scored: Vec<(String, Result<Scored, ScoreError>)> = open
        .held
        .iter()
        .map(|(arbiter_id, h)| {
            let held = if hold_back {
                // Only answered items are held back, so a missing answer never pushes
                // the scored items below the floor.
                let answered: Vec<String> = h
                    .asked
                    .iter()
                    .filter(|id| h.answers.iter().any(|a| &a.item == *id))
                    .cloned()
                    .collect();
                exam_hold_back::held_back(&exam, &answered)
            } else {
                Vec::new()
            };
            let ids = match crate::features::org_pools::token_key(open, Some(&salt)) {
                Some(key) if open.opaque => crate::features::opaque_exam::first_wrong_id(
                    &h.motions,
                    &key,
                    open.number,
                    arbiter_id,
                ),
                _ => None,
            };
            let scored = match ids {
                Some(item) => Err(ScoreError::NotOpaque(item.to_owned())),
                None => score(&exam, arbiter_id, h, (&held, in_domain_only), now_s, bar),
            }
            .map(|(scores, probes, decision)| Scored {
                scores,
                probes,
                decision,
                beyond: hold_back.then(|| Beyond::of(&exam, h, &held)),
                sitting: SittingRef {
                    number: open.number,
                    pool_id: open.pool_id.clone(),
                    seed: h.seed,
                    asked: h.asked.clone(),
                    reused_from: open.reused_from,
                },
            });
            (arbiter_id.clone(), scored)
        })
        .collect();
    let number = open.number;
    let mut outcomes = Vec::new();
    let mut unscored = Vec::new();
    for (arbiter_id, result) in scored {
        match result {
            Ok(x) => {
                let admitted = crate::features::admission::record_exam(
                    state,
                    &arbiter_id,
                    &crate::reply::ExamWritten {
                        scores: &x.scores,
                        decision: &x.decision,
                        probes: Some(&x.probes),
                        sitting: Some(&x.sitting),
                        topics: x.beyond.as_ref().map(|b| b.topics.as_slice()),
                        held_back: x.beyond.as_ref().map(|b| b.held_back.as_slice()),
                    },
                );
                if let Some(b) = &x.beyond {
                    track_held_back(state, &arbiter_id, number, &b.held_back);
                }
                outcomes.push(crate::reply::ExamOutcome {
                    arbiter_id,
                    admitted,
                });
            }
            Err(e) => unscored.push(crate::reply::Unscored {
                arbiter_id,
                reason: e.to_string(),
            }),
        }
    }
    count_exam_errors(state, &exam);
    if let Some(open) = state.exam_sittings.last_mut() {
        open.revealed = Some(Revealed {
            log_index,
            exam_hash: exam.content_hash.as_str().into(),
            examined: outcomes.iter().map(|o| o.arbiter_id.clone()).collect(),
        });
    }
    Ok(crate::reply::RevealKeyReply {
        sitting: number,
        exam_hash: exam.content_hash.as_str().into(),
        examined: outcomes,
        unscored,
    })
}

/// Counts the open sitting's binary items into the pairwise error history
/// (docs/coordinator/acceptance.md "Measured independence"): every item two or more held exams
/// answered, against the revealed gold, in item order.
fn count_exam_errors(state: &mut State, exam: &Exam) {
    // The fields, not `open_sitting(state)`: the sitting is read while the history is
    // written.
    let Some(open) = state.exam_sittings.last().filter(|s| s.revealed.is_none()) else {
        return;
    };
    for item in &exam.items {
        let calibration::exam::Gold::Binary(gold) = item.gold else {
            continue;
        };
        let answers: Vec<(&str, f64)> = open
            .held
            .iter()
            .filter_map(|(arbiter, h)| {
                let a = h.answers.iter().find(|a| a.item == item.id)?;
                match a.value {
                    calibration::exam_scoring::AnswerValue::Probability(p) => {
                        Some((arbiter.as_str(), p))
                    }
                    _ => None,
                }
            })
            .collect();
        state.error_history.record_exam_item(gold, &answers);
    }
}

/// A held exam, scored at the reveal.
struct Scored {
    scores: ArbiterScores,
    probes: ProbeScores,
    decision: AdmissionDecision,
    sitting: SittingRef,
    /// From rule set `EXAM_TRACK_RECORD` on: what the exam tells beyond the decision.
    beyond: Option<Beyond>,
}

/// What an exam tells beyond the admission decision (`calibration::exam_hold_back`).
struct Beyond {
    topics: Vec<TopicCalibration>,
    held_back: Vec<HeldBackForecast>,
}

impl Beyond {
    fn of(exam: &Exam, h: &HeldExam, held: &[String]) -> Self {
        let answers: Vec<&Answer> = h.answers.iter().collect();
        Beyond {
            topics: exam_hold_back::by_topic(exam, &h.asked, &answers),
            held_back: exam_hold_back::forecasts(exam, held, &answers),
        }
    }
}

/// Puts an arbiter's held-back exam items on its track record, resolved by the sitting's
/// revealed gold, and re-applies the recalibration bars. `record_exam` has just started
/// the new window, so these are its first items.
fn track_held_back(state: &mut State, arbiter_id: &str, sitting: u32, held: &[HeldBackForecast]) {
    let Some(a) = state.arbiters.get_mut(arbiter_id) else {
        return;
    };
    let by = Resolution {
        motion_id: format!("exam/s{sitting}/key"),
        kind: ResolutionKind::ExamHeldBack,
    };
    for f in held {
        // An item's id is unique in its pool, so a sitting records it once.
        let _ = a.recalibration.record(ResolvedItem {
            motion_id: format!("exam/s{sitting}/{}", f.item),
            probability: f.probability,
            outcome: f.outcome,
            resolved_by: by.clone(),
        });
    }
    if !held.is_empty() {
        let _ = a
            .recalibration
            .reassess(&RecalibrationPolicy::default(), &by);
    }
}

/// Why a held exam could not be scored (the arbiter stays due an exam).
#[derive(Debug, thiserror::Error)]
enum ScoreError {
    #[error("scoring: {0}")]
    Scores(#[from] calibration::CalibrationError),
    #[error("bias probes: {0}")]
    Probes(#[from] calibration::bias_probes::ProbeError),
    #[error(
        "item {0} was asked under a motion id that is not its opaque token: the sitting's \
         driver must ask every item under the id `opaque_exam::token` gives"
    )]
    NotOpaque(String),
}

/// Scores one held exam on the items it was asked, less those `held` back for the track
/// record, with the probes and their bars.
fn score(
    exam: &Exam,
    arbiter_id: &str,
    h: &HeldExam,
    (held, in_domain_only): (&[String], bool),
    now_s: i64,
    bar: panel_federation::ExamBar,
) -> Result<(ArbiterScores, ProbeScores, AdmissionDecision), ScoreError> {
    let scored: Vec<String> = h
        .asked
        .iter()
        .filter(|id| !held.contains(id))
        .cloned()
        .collect();
    let asked_exam = Exam {
        items: exam
            .items
            .iter()
            .filter(|i| scored.contains(&i.id))
            .cloned()
            .collect(),
        ..exam.clone()
    };
    // From rule set 24 an answer outside its item's domain is no answer.
    let scorable = |a: &Answer| {
        !in_domain_only
            || exam
                .item(&a.item)
                .is_none_or(|item| calibration::exam_scoring::in_domain(item, &a.value))
    };
    let refs: Vec<&Answer> = h
        .answers
        .iter()
        .filter(|a| !held.contains(&a.item) && scorable(a))
        .collect();
    let scores = score_arbiter(&asked_exam, arbiter_id, &refs, &InertPolicy::default())?;
    let probes = score_probes(exam, Some(&scored), &refs)?;
    let policy = match bar {
        panel_federation::ExamBar::Skill => AdmissionPolicy::with_bias_probes(),
        panel_federation::ExamBar::Attendance => AdmissionPolicy::attendance(),
    };
    let decision = assess_with_probes(&policy, &scores, Some(&probes), now_s);
    Ok((scores, probes, decision))
}

/// Domain tag of a private pool's salt.
pub const POOL_SALT_DOMAIN: &str = "crucible-panel/exam/pool-salt/v1\n";

/// The shipped pool (exams/default-v2.jsonl). It is in the repository, so its answers are
/// public: a panel that uses it (a local panel, the tests) examines nobody in secret, and
/// may seal it again and again. Operators give replicas private pools (`exam_pools`).
pub const EMBEDDED_POOL_TEXT: &str = include_str!("../../../exams/default-v2.jsonl");

static EMBEDDED_POOL: std::sync::LazyLock<Result<PrivatePool, LineError>> =
    std::sync::LazyLock::new(|| PrivatePool::load(EMBEDDED_POOL_TEXT));

/// The shipped pool, parsed once (a load error is the pool file's line error).
pub fn embedded_pool() -> Result<&'static PrivatePool, &'static LineError> {
    EMBEDDED_POOL.as_ref()
}

/// A pool the leader holds in full: the exam file, parsed, and the salt of its key.
#[derive(Debug, Clone)]
pub struct PrivatePool {
    pub exam: Exam,
    pub text: String,
    pub public_id: String,
    salt: [u8; 32],
}

impl PrivatePool {
    /// Loads a pool from its exam file. The salt is SHA-256 over [`POOL_SALT_DOMAIN`] and
    /// the whole file, so every replica given the file derives the same one (any of them
    /// may reveal after a failover) while nobody without the file can: the sources and
    /// golds in it are unpublished.
    pub fn load(text: &str) -> Result<Self, LineError> {
        let exam = load_exam(text)?;
        let mut h = Sha256::new();
        h.update(POOL_SALT_DOMAIN.as_bytes());
        h.update(text.as_bytes());
        Ok(PrivatePool {
            public_id: PublicPool::of(&exam)
                .id()
                .map_err(|e| LineError::new(0, "$", e.to_string()))?,
            exam,
            text: text.to_owned(),
            salt: h.finalize().into(),
        })
    }

    /// The `SealExamPool` payload.
    pub fn sealed(&self) -> SealedPool {
        SealedPool {
            public: PublicPool::of(&self.exam),
            key_commitment: crate::rules::hex_bytes::DigestBytes::new(
                calibration::answer_key::commit_answer_key(&self.exam, self.salt),
            ),
            organisation: None,
            seal: None,
        }
    }

    /// The salt of the pool's key commitment, which also keys opaque motion ids.
    pub fn salt(&self) -> &[u8; 32] {
        &self.salt
    }

    /// The `RevealExamKey` payload for sitting `number`.
    pub fn reveal(&self, number: u32) -> KeyReveal {
        KeyReveal {
            sitting: number,
            exam: self.text.clone(),
            salt: crate::rules::hex_bytes::SaltBytes::new(self.salt),
        }
    }
}

/// The pools a leader may seal, in order. A private pool is sealed once; a reusable one
/// (the embedded pool) whenever no other is left.
#[derive(Debug, Clone)]
pub struct Pools {
    pub pools: Vec<PrivatePool>,
    pub reusable: bool,
}

impl Pools {
    /// The embedded public pool, reusable.
    pub fn embedded() -> Result<Self, LineError> {
        Ok(Pools {
            pools: vec![embedded_pool().map_err(Clone::clone)?.clone()],
            reusable: true,
        })
    }

    /// The pool the next sitting should seal: the first never sealed, else (if reusable)
    /// the first; `None` when every private pool is spent.
    pub fn next(&self, state: &State) -> Option<&PrivatePool> {
        self.first_unsealed(state)
            .or_else(|| self.pools.first().filter(|_| self.reusable))
    }

    /// The first pool no sitting of `state` has sealed.
    fn first_unsealed(&self, state: &State) -> Option<&PrivatePool> {
        let sealed =
            |p: &&PrivatePool| state.exam_sittings.iter().any(|s| s.pool_id == p.public_id);
        self.pools.iter().find(|p| !sealed(p))
    }

    /// The held pool a sitting sealed.
    pub fn for_sitting(&self, sitting: &Sitting) -> Option<&PrivatePool> {
        self.pools.iter().find(|p| p.public_id == sitting.pool_id)
    }

    /// What `organisation`'s replica, holding these pools, offers for sitting `number`
    /// (unsigned: the shell signs it with the replica's log key): its first pool never
    /// sealed in this group, for the sitting that comes next in its own applied state
    /// (`org_pools`).
    pub fn offer(
        &self,
        state: &State,
        organisation: &str,
        number: u32,
    ) -> Result<SealedPool, OfferRefusal> {
        crate::features::org_pools::offerable(state, number)?;
        let pool = self.first_unsealed(state).ok_or(OfferRefusal::NoPool)?;
        Ok(SealedPool {
            organisation: Some(organisation.to_owned()),
            ..pool.sealed()
        })
    }

    /// The reveal `organisation`'s replica hands over for sitting `number`: only once the
    /// sitting is its organisation's, open and closed to answers in its own applied state.
    pub fn key_for(
        &self,
        state: &State,
        organisation: &str,
        number: u32,
    ) -> Result<KeyReveal, OfferRefusal> {
        let sitting = crate::features::org_pools::closed_sitting_of(state, organisation, number)?;
        self.for_sitting(sitting)
            .map(|p| p.reveal(number))
            .ok_or(OfferRefusal::NotHeld(number))
    }
}

/// What the leader's exam driver should do next about sittings.
#[derive(Debug, Clone, PartialEq)]
pub enum SittingStep {
    /// Nobody is due an exam and no sitting is open.
    Idle,
    /// Seal this pool as sitting `number`: arbiters are due and no sitting is open.
    Seal { number: u32, pool: SealedPool },
    /// Every private pool is spent: arbiters wait for the operator to add one.
    NoPool,
    /// Examine the due arbiters in this open sitting.
    Examine(u32),
    /// Reveal the open sitting's key (held exams wait, and no exam is in flight or the
    /// oldest has waited `patience_ms`).
    Reveal(KeyReveal),
    /// Under organisation pools (`org_pools`): ask member organisations' replicas, in
    /// [`crate::features::org_pools::seal_order`], for the pool of sitting `number`.
    SealFromOrganisation { number: u32 },
    /// End the answers of the open organisation sitting (`CloseExamSitting`), so its
    /// organisation's replica hands over the key.
    Close(u32),
    /// Ask `organisation`'s replicas for the key of its closed sitting, then reveal it.
    RevealFromOrganisation { sitting: u32, organisation: String },
}

/// The driver's next step, from the state alone (plus whether its exams are in flight and
/// the time): pure, so both the rule and its tests live here.
pub fn next_step(
    state: &State,
    pools: &Pools,
    any_due: bool,
    exams_in_flight: bool,
    now_ms: u64,
    patience_ms: u64,
) -> SittingStep {
    let Some(open) = open_sitting(state) else {
        if !any_due {
            return SittingStep::Idle;
        }
        if crate::features::org_pools::required(state) {
            return SittingStep::SealFromOrganisation {
                number: next_sitting_number(state),
            };
        }
        return match pools.next(state) {
            Some(p) => SittingStep::Seal {
                number: next_sitting_number(state),
                pool: p.sealed(),
            },
            None => SittingStep::NoPool,
        };
    };
    let oldest = open.held.values().map(|h| h.submitted_at_ms).min();
    let waited_out = oldest.is_some_and(|t| now_ms.saturating_sub(t) >= patience_ms);
    let ready = oldest.is_some() && (!exams_in_flight || waited_out);
    if ready && let Some(organisation) = &open.organisation {
        return match (open.closed_log_index, pools.for_sitting(open)) {
            (None, _) => SittingStep::Close(open.number),
            (Some(_), Some(p)) => SittingStep::Reveal(p.reveal(open.number)),
            (Some(_), None) => SittingStep::RevealFromOrganisation {
                sitting: open.number,
                organisation: organisation.clone(),
            },
        };
    }
    if ready && let Some(p) = pools.for_sitting(open) {
        return SittingStep::Reveal(p.reveal(open.number));
    }
    SittingStep::Examine(open.number)
}

/// One item put to one arbiter: under which id, and the arbiter's draw seed (which picks
/// the wording).
struct Asked<'a> {
    motion_id: String,
    seed: u64,
    item: &'a PublicItem,
}

impl Sitting {
    /// What `arbiter_id` (with registered key `key`) is asked here, in asking order.
    pub fn asked(&self, arbiter_id: &str, key: &VerifyingKey) -> Result<Vec<String>, SittingError> {
        draw_public_with_extra(&self.public, self.seed(key), &DRAW, self.extra()).map_err(
            |source| SittingError::Draw {
                arbiter_id: arbiter_id.to_owned(),
                source,
            },
        )
    }

    /// Plain binary items asked beyond [`DRAW`].
    fn extra(&self) -> usize {
        if self.holds_back { HELD_BACK_EXTRA } else { 0 }
    }

    /// How many items each arbiter is asked here.
    pub fn asked_count(&self) -> usize {
        DRAW.items() + self.extra()
    }

    pub fn seed(&self, key: &VerifyingKey) -> u64 {
        draw_seed(&self.pool_id, self.number, key)
    }

    /// The item a motion id asks, if it is one of `asked` for `arbiter_id`.
    fn asked_item(
        &self,
        arbiter_id: &str,
        asked: &[String],
        motion_id: &str,
    ) -> Option<&PublicItem> {
        let prefix = format!("exam/s{}/{arbiter_id}/", self.number);
        let item_id = motion_id.strip_prefix(&prefix)?;
        asked
            .iter()
            .any(|id| id == item_id)
            .then(|| self.public.item(item_id))
            .flatten()
    }

    /// The item an opaque sitting's carried motion asks (`opaque_exam`): its id must be
    /// token-shaped and what it shows must be the wording of an item of the draw.
    fn carried_item<'a>(
        &'a self,
        matcher: &crate::features::opaque_exam::Matcher<'a>,
        arbiter_id: &str,
        m: &pb::Motion,
    ) -> Option<&'a PublicItem> {
        crate::features::opaque_exam::token_of(self.number, arbiter_id, &m.motion_id)?;
        let p = m.projection.as_ref()?;
        let motion = p.items.first().map(|i| i.text.as_str());
        matcher.take(&m.motion_id, &p.question, motion)
    }

    /// Motion id of one item for one arbiter in this sitting: opaque (keyed by
    /// `token_key`, [`crate::features::org_pools::token_key`]) in a sitting sealed under rule set 15,
    /// the item id before.
    pub fn motion_id(&self, arbiter_id: &str, item_id: &str, token_key: &[u8; 32]) -> String {
        let last = if self.opaque {
            crate::features::opaque_exam::token(token_key, self.number, arbiter_id, item_id)
        } else {
            item_id.to_owned()
        };
        format!(
            "{}{last}",
            crate::features::opaque_exam::prefix(self.number, arbiter_id)
        )
    }

    /// The hash every ruling of the sitting judges: the pool id's digest. Seal computed the
    /// id, so only a damaged state has one that does not decode, and that is refused.
    pub fn state_hash(&self) -> Result<Vec<u8>, SittingError> {
        hex32(
            "the sitting's pool id",
            self.pool_id.trim_start_matches("sha256:"),
        )
        .map(|h| h.to_vec())
    }

    /// The motion that asks `item` of `arbiter_id` (with registered key `key`) in this
    /// sitting, its tokens keyed by `token_key`; `expected` is the simulation's hint.
    pub fn motion(
        &self,
        arbiter_id: &str,
        key: &VerifyingKey,
        item: &PublicItem,
        token_key: &[u8; 32],
        deadlines: (i64, i64),
        expected: Option<pb::ExpectedAnswer>,
    ) -> Result<pb::Motion, SittingError> {
        let asking = Asked {
            motion_id: self.motion_id(arbiter_id, &item.id, token_key),
            seed: self.seed(key),
            item,
        };
        Ok(self.motion_as(asking, deadlines, expected, self.state_hash()?))
    }

    /// The motion that asks `a.item` under `a.motion_id`: in an opaque sitting in the
    /// wording the draw seed picks and with the id's token for the item id. A simulation's
    /// motion (one with the truth hint, `expected`) keeps the item id: it carries the gold
    /// anyway, and the simulated judges answer an item the same way in every sitting by
    /// its id (docs/coordinator/state-machine.md "Sealed exams").
    fn motion_as(
        &self,
        a: Asked<'_>,
        deadlines: (i64, i64),
        expected: Option<pb::ExpectedAnswer>,
        state_hash: Vec<u8>,
    ) -> pb::Motion {
        let shown;
        let item = if self.opaque {
            let w = a.item.wording(a.seed);
            let token = a.motion_id.rsplit('/').next().unwrap_or_default();
            shown = PublicItem {
                id: match expected {
                    Some(_) => a.item.id.clone(),
                    None => token.to_owned(),
                },
                question: w.question.to_owned(),
                motion: w.motion.map(str::to_owned),
                phrasings: Vec::new(),
                ..a.item.clone()
            };
            &shown
        } else {
            a.item
        };
        item_motion(
            Asking {
                motion_id: a.motion_id,
                state_hash,
                quantiles: &self.public.quantiles,
                commit_deadline_ms: deadlines.0,
                reveal_deadline_ms: deadlines.1,
            },
            item,
            expected,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::command::{ClientCommand, Command, InternalCommand, ItemReply};
    use crate::features::admission::ExamRecord;
    use calibration::answer_key::commit_answer_key;
    use calibration::exam::{ExamItem, Gold, ProbeVariant};
    use ed25519_dalek::SigningKey;
    use serde_json::json;
    use std::collections::BTreeSet;

    pub(crate) const V2: &str = include_str!("../../../exams/default-v2.jsonl");
    pub(crate) const SALT: [u8; 32] = [9; 32];
    const DAY_MS: u64 = 24 * 3600 * 1000;
    /// Batch times: 2026-01-01 plus the entry number.
    pub(crate) const T0: u64 = 1_767_225_600_000;

    pub(crate) fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i + 1; 32])
    }

    pub(crate) fn motion_key() -> SigningKey {
        SigningKey::from_bytes(&[77; 32])
    }

    /// One entry at `time_ms`, under the sealed-exam rules.
    pub(crate) fn write(
        s: &mut State,
        n: u64,
        time_ms: u64,
        command: impl Into<Command>,
    ) -> ItemReply<crate::reply::Reply> {
        let batch = crate::command::Batch {
            time_ms,
            seed: n,
            items: vec![crate::command::Item {
                client_id: "exam-driver".into(),
                request_id: n,
                command: command.into(),
                writer: None,
            }],
            limits: None,
            checkpoints: None,
            rules: Some(crate::rules::SEALED_EXAMS),
        };
        let r = crate::apply::apply_batch(s, n, &batch, &panel_proto::VerifiedMemo::default());
        r.items.into_iter().next().expect("one item").reply
    }

    pub(crate) fn applied(r: ItemReply<crate::reply::Reply>) -> serde_json::Value {
        match r {
            ItemReply::Applied(v) => v.to_json(),
            other => panic!("refused: {other:?}"),
        }
    }

    pub(crate) fn refused(r: ItemReply<crate::reply::Reply>, code: &str, needle: &str) {
        match r {
            ItemReply::Refused { code: c, message } => {
                assert_eq!(c, code, "{message}");
                assert!(message.contains(needle), "{message}");
            }
            other => panic!("applied, expected {code}: {other:?}"),
        }
    }

    pub(crate) fn registered(ids: &[&str]) -> State {
        let mut s = State::default();
        for (i, id) in ids.iter().enumerate() {
            let reg = json!({
                "arbiter_id": id,
                "public_key": hex::encode(key(i as u8).verifying_key().to_bytes()),
                "organisation": format!("org-{i}"), "model_family": format!("fam-{id}"),
                "stance": "A",
            });
            let c = ClientCommand::RegisterArbiter(serde_json::from_value(reg).expect("reg"));
            applied(write(&mut s, i as u64 + 1, T0, c));
        }
        s
    }

    /// docs/SECURITY.md "Exams": a chartered group sealed the shipped pool, whose gold answers ship in the
    /// repository, and four lookup judges were admitted in seconds. From rule set 5 only
    /// a practice group may seal it; an unchartered debug group still may.
    #[test]
    fn only_a_practice_group_seals_the_public_pool() {
        let public = load_exam(V2).expect("the shipped pool");
        for (exam_terms, sealable) in [
            (None, false),
            (Some(panel_federation::ExamTerms::default()), false),
            (
                Some(panel_federation::ExamTerms {
                    practice: true,
                    bar: panel_federation::ExamBar::Skill,
                }),
                true,
            ),
        ] {
            let mut s = State {
                charter: Some(panel_federation::Charter {
                    exam: exam_terms.clone(),
                    ..crate::features::charter_rules::tests::charter()
                }),
                rules: crate::rules::PRACTICE_EXAMS,
                ..State::default()
            };
            let r = write(&mut s, 1, T0, seal_cmd(&public));
            if sealable {
                applied(r);
            } else {
                refused(r, "exam_pool_refused", "practice group");
                assert!(s.exam_sittings.is_empty(), "{exam_terms:?}");
            }
        }
        // Before rule set 5 the same entry replays as it applied.
        let mut s = State {
            charter: Some(crate::features::charter_rules::tests::charter()),
            ..State::default()
        };
        applied(write(&mut s, 1, T0, seal_cmd(&public)));
        // And a private pool is never refused for being public.
        let mut private = public.clone();
        private.items.truncate(private.items.len() - 1);
        let mut s = State {
            charter: Some(crate::features::charter_rules::tests::charter()),
            rules: crate::rules::PRACTICE_EXAMS,
            ..State::default()
        };
        applied(write(&mut s, 1, T0, seal_cmd(&private)));
    }

    fn seal_cmd(exam: &Exam) -> InternalCommand {
        InternalCommand::SealExamPool(Box::new(SealedPool {
            public: PublicPool::of(exam),
            key_commitment: hex::encode(commit_answer_key(exam, SALT)).into(),
            organisation: None,
            seal: None,
        }))
    }

    pub(crate) fn reveal_cmd(sitting: u32, text: &str, salt: [u8; 32]) -> InternalCommand {
        InternalCommand::RevealExamKey(Box::new(KeyReveal {
            sitting,
            exam: text.to_owned(),
            salt: hex::encode(salt).into(),
        }))
    }

    /// How a test judge answers a binary item: the probability of yes.
    pub(crate) type Judge<'a> = &'a dyn Fn(&ExamItem) -> f64;

    /// An honest judge of `exam`'s golds.
    pub(crate) fn by_gold(exam: &Exam) -> impl Fn(&ExamItem) -> f64 + '_ {
        |item| match exam.item(&item.id).map(|i| &i.gold) {
            Some(Gold::Binary(true)) => 0.9,
            _ => 0.1,
        }
    }

    /// The signed motions and revealed answers of arbiter `i` in the open sitting,
    /// answered from `truth` (the golds the judge believes) by `judge` on binary items.
    pub(crate) fn sit(
        s: &State,
        i: u8,
        id: &str,
        truth: &Exam,
        judge: Judge<'_>,
    ) -> InternalCommand {
        sit_salted(s, i, id, truth, judge, &SALT)
    }

    /// [`sit`], with opaque ids keyed by `salt` (a driver that does not hold the pool's).
    pub(crate) fn sit_salted(
        s: &State,
        i: u8,
        id: &str,
        truth: &Exam,
        judge: Judge<'_>,
        salt: &[u8; 32],
    ) -> InternalCommand {
        sit_sealed(s, i, id, (truth, judge), salt, &|_| {})
    }

    /// [`sit_salted`], each signed motion passed through `seal` (rule set 20's seals).
    pub(crate) fn sit_sealed(
        s: &State,
        i: u8,
        id: &str,
        (truth, judge): (&Exam, Judge<'_>),
        salt: &[u8; 32],
        seal: &dyn Fn(&mut pb::Motion),
    ) -> InternalCommand {
        let open = open_sitting(s).expect("open");
        let k = key(i);
        let asked = open.asked(id, &k.verifying_key()).expect("draw");
        let (mut motions, mut reveals) = (Vec::new(), Vec::new());
        for (n, item_id) in asked.iter().enumerate() {
            let public = open.public.item(item_id).expect("item");
            let mut m = panel_proto::sign_motion(
                &motion_key(),
                open.motion(
                    id,
                    &k.verifying_key(),
                    public,
                    salt,
                    (T0 as i64 + 10, T0 as i64 + 20),
                    None,
                )
                .expect("the pool id decodes"),
            );
            seal(&mut m);
            let item = truth.item(item_id).expect("in the judge's exam");
            let ruling = pb::Ruling {
                motion_id: m.motion_id.clone(),
                state_hash: open.state_hash().expect("the pool id decodes"),
                motion_digest: panel_proto::motion_digest(&m).to_vec(),
                ..Default::default()
            };
            let levels = &open.public.quantiles;
            let p = judge(item);
            reveals.push(
                crate::testkit::exam::item_reveal(&k, ruling, &item.gold, p, n, levels)
                    .expect("a reveal"),
            );
            motions.push(crate::rules::signed_motion::encode(&m));
        }
        InternalCommand::SubmitExam {
            arbiter_id: id.into(),
            reveals,
            motions,
            sitting: Some(open.number),
        }
    }

    pub(crate) fn sit_in(
        s: &mut State,
        n: u64,
        time_ms: u64,
        i: u8,
        id: &str,
        truth: &Exam,
        judge: Judge<'_>,
    ) -> ItemReply<crate::reply::Reply> {
        let c = sit(s, i, id, truth, judge);
        write(s, n, time_ms, c)
    }

    pub(crate) fn exam_of(s: &State, id: &str) -> ExamRecord {
        let a = s.arbiters.get(id).expect("arbiter");
        a.exam_record().expect("examined").expect("decodes")
    }

    /// From rule set 14 each arbiter's last answered plain binary items above the floor
    /// are left out of the admission score and scored onto its track record against the
    /// revealed gold, and the exam record carries calibration per topic; below it nothing
    /// is held back (records replay as they applied).
    #[test]
    fn held_back_items_go_to_the_track_record_and_topics_to_the_exam_record() {
        let exam = load_exam(V2).expect("v2");
        let judge = by_gold(&exam);
        let sat = |rules: u32| {
            let mut s = registered(&["a"]);
            s.rules = rules;
            applied(write(&mut s, 11, T0, seal_cmd(&exam)));
            let open = open_sitting(&s).expect("open");
            let asked = open.asked("a", &key(0).verifying_key()).expect("draw");
            assert_eq!(asked.len(), open.asked_count());
            applied(sit_in(&mut s, 13, T0, 0, "a", &exam, &judge));
            applied(write(&mut s, 19, T0, reveal_cmd(1, V2, SALT)));
            s.arbiters.get("a").expect("a").clone()
        };
        let a = sat(crate::rules::EXAM_TRACK_RECORD);
        assert!(a.admitted);
        let stored = a.exam.clone().expect("examined");
        assert_eq!(stored["held_back"].as_array().map(Vec::len), Some(8));
        assert_eq!(
            stored["scores"]["binary"]["items"],
            json!(40),
            "48 asked, 8 held back: the decision rests on as many as before"
        );
        let window = a.recalibration.window();
        assert_eq!(window.len(), 8);
        assert!(window.iter().all(|i| {
            i.resolved_by.kind == ResolutionKind::ExamHeldBack
                && i.resolved_by.motion_id == "exam/s1/key"
                && i.motion_id.starts_with("exam/s1/")
        }));
        let topics = stored["topics"].as_array().expect("topics");
        assert!(topics.iter().any(|t| t["tag"] == "challenge"), "{topics:?}");
        // Eight items are below the recalibration bars' 30: assessed, not flagged.
        assert!(!a.recalibration.is_flagged());

        let old = sat(crate::rules::SEALED_EXAMS);
        let stored = old.exam.clone().expect("examined");
        assert!(stored.get("held_back").is_none() && stored.get("topics").is_none());
        assert_eq!(stored["scores"]["binary"]["items"], json!(40));
        assert!(old.recalibration.is_empty());
    }

    /// The whole sitting: the pool is sealed with no gold on the record, each arbiter is
    /// asked its own seeded draw, answers are held unscored, a wrong key or another exam is
    /// refused without changing anything, and the true key scores everyone with the probes.
    #[test]
    fn answers_are_scored_only_once_the_sealed_key_is_revealed() {
        let exam = load_exam(V2).expect("v2");
        let mut s = registered(&["a", "b"]);
        refused(
            write(&mut s, 10, T0, sit_without_seal("a")),
            "exam_refused",
            "no exam sitting is open",
        );
        let sealed = applied(write(&mut s, 11, T0, seal_cmd(&exam)));
        assert_eq!(sealed["sitting"], json!(1));
        let on_record = serde_json::to_string(&s).expect("state");
        for item in &exam.items {
            assert!(
                !on_record.contains(&item.source),
                "{}'s source is public",
                item.id
            );
        }
        refused(
            write(&mut s, 12, T0, seal_cmd(&exam)),
            "exam_pool_refused",
            "still open",
        );
        let open = open_sitting(&s).expect("open").clone();
        let (ka, kb) = (key(0).verifying_key(), key(1).verifying_key());
        let (da, db) = (open.asked("a", &ka).unwrap(), open.asked("b", &kb).unwrap());
        assert_ne!(da, db, "each arbiter has its own draw");
        assert_eq!(da.len(), 64);
        // A pool id that does not decode (a damaged state) binds no motion: the hash is
        // refused, where 32 zero bytes stood in before.
        let mut damaged = open.clone();
        damaged.pool_id = "sha256:not-hex".into();
        assert!(open.state_hash().is_ok());
        assert!(matches!(
            damaged.state_hash(),
            Err(SittingError::NotHex32 { what }) if what.contains("pool id")
        ));

        let judge = by_gold(&exam);
        let held = applied(sit_in(&mut s, 13, T0, 0, "a", &exam, &judge));
        assert_eq!(held["answered"], json!(64));
        applied(sit_in(&mut s, 14, T0, 1, "b", &exam, &judge));
        assert!(
            s.arbiters.get("a").unwrap().exam.is_none(),
            "nothing scored yet"
        );
        refused(
            sit_in(&mut s, 15, T0, 0, "a", &exam, &judge),
            "exam_refused",
            "already answered",
        );

        let before = serde_json::to_string(&s).unwrap();
        refused(
            write(&mut s, 16, T0, reveal_cmd(1, V2, [8; 32])),
            "exam_pool_refused",
            "do not open",
        );
        let reworded = V2.replacen("Should this challenge be upheld?", "Upheld?", 1);
        refused(
            write(&mut s, 17, T0, reveal_cmd(1, &reworded, SALT)),
            "exam_pool_refused",
            "is not the sealed pool",
        );
        let flipped = flip_binary_golds(V2);
        refused(
            write(&mut s, 18, T0, reveal_cmd(1, &flipped, SALT)),
            "exam_pool_refused",
            "do not open",
        );
        // The refused entries are on the record; the sitting did not move.
        let after = serde_json::to_string(&s).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&before).unwrap()["exam_sittings"],
            serde_json::from_str::<serde_json::Value>(&after).unwrap()["exam_sittings"]
        );

        assert!(s.error_history.is_empty());
        let out = applied(write(&mut s, 19, T0, reveal_cmd(1, V2, SALT)));
        // The binary items both were asked feed the pairwise error history.
        let shared = da
            .iter()
            .filter(|i| db.contains(i) && matches!(exam.item(i).unwrap().gold, Gold::Binary(_)))
            .count() as u64;
        assert!(shared > 0);
        assert_eq!(s.error_history.motions, shared);
        let pair = &s.error_history.pairs[&("a".to_string(), "b".to_string())];
        assert_eq!(pair.both_wrong, 0, "two honest judges share no error");
        assert_eq!(out["examined"].as_array().map(Vec::len), Some(2), "{out}");
        let rec = exam_of(&s, "a");
        assert!(rec.decision.admitted, "{:?}", rec.decision.failed);
        assert!(s.arbiters.get("a").unwrap().admitted);
        let stored = s.arbiters.get("a").unwrap().exam.clone().unwrap();
        assert_eq!(
            stored["sitting"]["asked"],
            json!(da),
            "the draw is on the record"
        );
        assert_eq!(stored["sitting"]["seed"], json!(open.seed(&ka)));
        assert_eq!(
            stored["probes"]["order_swapped"]["pairs"],
            json!(6),
            "six whole groups"
        );
        assert!(open_sitting(&s).is_none(), "the reveal closes the sitting");
        refused(
            write(&mut s, 20, T0, reveal_cmd(1, V2, SALT)),
            "exam_refused",
            "no exam sitting is open",
        );
        // The record replays: `panel verify` re-draws, re-checks and re-scores.
        let log_key =
            panel_tlog::NoteSigner::new("test.example/log", SigningKey::from_bytes(&[42; 32]))
                .expect("log key");
        let bundle = crate::read::record::export(&s, Some(&log_key));
        crate::read::record::verify(&bundle).expect("the record replays");
    }

    fn sit_without_seal(id: &str) -> InternalCommand {
        InternalCommand::SubmitExam {
            arbiter_id: id.into(),
            reveals: vec![],
            motions: vec![],
            sitting: Some(1),
        }
    }

    /// A judge that looks answers up in the public default exam is refused on a private
    /// pool whose golds differ: the answers it could look up are not the key.
    #[test]
    fn a_judge_that_looks_up_the_public_exam_fails_a_private_pool() {
        let public = load_exam(V2).expect("v2");
        let private_text = flip_binary_golds(V2);
        let private = load_exam(&private_text).expect("private pool");
        let mut s = registered(&["lookup", "honest"]);
        applied(write(&mut s, 10, T0, seal_cmd(&private)));
        let lookup = by_gold(&public);
        applied(sit_in(&mut s, 11, T0, 0, "lookup", &public, &lookup));
        let honest = by_gold(&private);
        applied(sit_in(&mut s, 12, T0, 1, "honest", &private, &honest));
        applied(write(&mut s, 13, T0, reveal_cmd(1, &private_text, SALT)));
        let looked_up = exam_of(&s, "lookup");
        assert!(!looked_up.decision.admitted);
        assert!(
            looked_up
                .decision
                .failed
                .iter()
                .any(|f| f.bar == "brier_skill"),
            "{:?}",
            looked_up.decision.failed
        );
        assert!(exam_of(&s, "honest").decision.admitted);
    }

    /// A private pool: every binary gold of `text` flipped (probe groups stay consistent).
    fn flip_binary_golds(text: &str) -> String {
        text.lines()
            .map(|l| {
                if l.contains("\"gold\": true") {
                    l.replace("\"gold\": true", "\"gold\": false")
                } else {
                    l.replace("\"gold\": false", "\"gold\": true")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// An arbiter that answers the order-swapped variants the other way is refused on the
    /// order-flip bar; it may retake only after the cooldown, at a later sitting with a new
    /// draw, which the record marks as a reused pool.
    #[test]
    fn a_position_biased_arbiter_is_refused_and_retakes_after_the_cooldown() {
        let exam = load_exam(V2).expect("v2");
        let mut s = registered(&["biased"]);
        applied(write(&mut s, 10, T0, seal_cmd(&exam)));
        let honest = by_gold(&exam);
        let biased = |item: &ExamItem| {
            let p = honest(item);
            match &item.probe {
                Some(probe) if probe.variant == ProbeVariant::OrderSwapped => 1.0 - p,
                _ => p,
            }
        };
        applied(sit_in(&mut s, 11, T0, 0, "biased", &exam, &biased));
        applied(write(&mut s, 12, T0, reveal_cmd(1, V2, SALT)));
        let rec = exam_of(&s, "biased");
        assert!(!rec.decision.admitted);
        assert!(
            rec.decision
                .failed
                .iter()
                .any(|f| f.bar == "order_flip_rate"),
            "{:?}",
            rec.decision.failed
        );
        let first = s.exam_sittings[0].held["biased"].asked.clone();

        // A second sitting, before the cooldown: refused by name.
        let reused = applied(write(&mut s, 13, T0 + DAY_MS, seal_cmd(&exam)));
        assert_eq!(reused["reused_from"], json!(1));
        refused(
            sit_in(&mut s, 14, T0 + DAY_MS, 0, "biased", &exam, &honest),
            "exam_refused",
            "may retake from",
        );
        // After it: a fresh draw, scored at the reveal, and admitted.
        let later = T0 + 15 * DAY_MS;
        applied(sit_in(&mut s, 15, later, 0, "biased", &exam, &honest));
        assert_ne!(s.exam_sittings[1].held["biased"].asked, first, "a new draw");
        applied(write(&mut s, 16, later, reveal_cmd(2, V2, SALT)));
        let retaken = s.arbiters.get("biased").unwrap();
        assert!(retaken.admitted);
        assert_eq!(
            retaken.exam.as_ref().unwrap()["sitting"]["reused_from"],
            json!(1)
        );
        // Admitted and not flagged: no third exam.
        applied(write(&mut s, 17, later, seal_cmd(&exam)));
        refused(
            sit_in(&mut s, 18, later, 0, "biased", &exam, &honest),
            "exam_refused",
            "admitted and not flagged",
        );
    }

    /// Motions the leader was not given by the draw, or altered, are refused: the leader
    /// cannot pick an arbiter's items.
    #[test]
    fn a_motion_outside_the_arbiters_draw_is_refused() {
        let exam = load_exam(V2).expect("v2");
        let mut s = registered(&["a", "b"]);
        applied(write(&mut s, 10, T0, seal_cmd(&exam)));
        let judge = by_gold(&exam);
        // b's answers submitted as a's: every motion is b's, not a's.
        let mut swapped = sit(&s, 1, "b", &exam, &judge);
        if let InternalCommand::SubmitExam { arbiter_id, .. } = &mut swapped {
            *arbiter_id = "a".into();
        }
        refused(
            write(&mut s, 11, T0, swapped),
            "exam_refused",
            "is not an item",
        );
        // The wrong sitting number.
        let mut wrong = sit(&s, 0, "a", &exam, &judge);
        if let InternalCommand::SubmitExam { sitting, .. } = &mut wrong {
            *sitting = Some(7);
        }
        refused(
            write(&mut s, 12, T0, wrong),
            "exam_refused",
            "not the open sitting",
        );
        let mut none = sit(&s, 0, "a", &exam, &judge);
        if let InternalCommand::SubmitExam { sitting, .. } = &mut none {
            *sitting = None;
        }
        refused(
            write(&mut s, 13, T0, none),
            "exam_refused",
            "name no sitting",
        );
        assert!(s.exam_sittings[0].held.is_empty());
    }

    /// The driver's rule: seal only when someone is due, never reuse a private pool,
    /// reveal once the held exams are in (or the oldest has waited), else examine.
    #[test]
    fn the_driver_seals_examines_and_reveals_by_the_state() {
        let embedded = Pools::embedded().expect("embedded pool");
        let private = Pools {
            pools: embedded.pools.clone(),
            reusable: false,
        };
        let mut s = registered(&["a", "b"]);
        assert_eq!(
            next_step(&s, &embedded, false, false, T0, 1),
            SittingStep::Idle
        );
        let SittingStep::Seal {
            number: 1,
            pool: sealed,
        } = next_step(&s, &private, true, false, T0, 1)
        else {
            panic!("due arbiters and no sitting: seal");
        };
        let exam = load_exam(EMBEDDED_POOL_TEXT).unwrap();
        applied(write(
            &mut s,
            10,
            T0,
            InternalCommand::SealExamPool(Box::new(sealed)),
        ));
        assert_eq!(
            next_step(&s, &private, true, false, T0, 1),
            SittingStep::Examine(1)
        );
        let judge = by_gold(&exam);
        applied(sit_in(&mut s, 11, T0, 0, "a", &exam, &judge));
        // b is still being examined: the key waits, up to the patience.
        assert_eq!(
            next_step(&s, &private, true, true, T0 + 10, 60_000),
            SittingStep::Examine(1)
        );
        let reveal = SittingStep::Reveal(private.pools[0].reveal(1));
        assert_eq!(
            next_step(&s, &private, true, true, T0 + 60_000, 60_000),
            reveal
        );
        assert_eq!(
            next_step(&s, &private, false, false, T0 + 10, 60_000),
            reveal
        );
        let SittingStep::Reveal(k) = reveal else {
            unreachable!()
        };
        applied(write(
            &mut s,
            12,
            T0,
            InternalCommand::RevealExamKey(Box::new(k)),
        ));
        // The private pool is spent; the embedded one may be sealed again.
        assert_eq!(
            next_step(&s, &private, true, false, T0, 1),
            SittingStep::NoPool
        );
        assert!(matches!(
            next_step(&s, &embedded, true, false, T0, 1),
            SittingStep::Seal { number: 2, .. }
        ));
    }

    #[test]
    fn the_draw_seed_binds_pool_sitting_and_key() {
        let (k1, k2) = (key(0).verifying_key(), key(1).verifying_key());
        let s = draw_seed("sha256:aa", 1, &k1);
        assert_eq!(s, draw_seed("sha256:aa", 1, &k1));
        assert_ne!(s, draw_seed("sha256:aa", 2, &k1));
        assert_ne!(s, draw_seed("sha256:ab", 1, &k1));
        assert_ne!(s, draw_seed("sha256:aa", 1, &k2));
    }

    /// The motions a `SubmitExam` carries, decoded.
    fn carried(c: &InternalCommand) -> Vec<pb::Motion> {
        let InternalCommand::SubmitExam { motions, .. } = c else {
            panic!("not an exam: {c:?}");
        };
        motions
            .iter()
            .map(|w| crate::rules::signed_motion::decode(w).expect("motion"))
            .collect()
    }

    /// docs/SECURITY.md "Exams": an exam motion's id and its exam item named the pool item,
    /// so a judge holding a copy of the pool read the gold off the id. From rule set 15 the
    /// id ends in a token keyed by the pool's secret salt; apply matches the motion to the
    /// draw by its text, and the reveal scores only exams asked under the true tokens.
    #[test]
    fn an_opaque_sitting_names_no_item_and_scores_only_the_true_tokens() {
        let exam = load_exam(V2).expect("v2");
        let judge = by_gold(&exam);
        let mut s = registered(&["a", "b", "c"]);
        s.rules = crate::rules::OPAQUE_EXAMS;
        applied(write(&mut s, 11, T0, seal_cmd(&exam)));
        assert!(open_sitting(&s).expect("open").opaque);
        let ids: BTreeSet<&str> = exam.items.iter().map(|i| i.id.as_str()).collect();

        let a = sit(&s, 0, "a", &exam, &judge);
        for m in carried(&a) {
            let last = m.motion_id.rsplit('/').next().expect("a last part");
            let shown = m.projection.as_ref().and_then(|p| p.exam_item.as_ref());
            assert!(!ids.contains(last), "{} names its item", m.motion_id);
            assert_eq!(shown.map(|e| e.item_id.as_str()), Some(last));
        }
        // A simulation's motion carries the gold as its hint, and the item id beside it.
        let open = open_sitting(&s).expect("open");
        let k = key(0).verifying_key();
        let first = open.asked("a", &k).expect("draw").remove(0);
        let item = open.public.item(&first).expect("item");
        let gold = &exam.item(&first).expect("gold").gold;
        let hinted = open
            .motion(
                "a",
                &k,
                item,
                &SALT,
                (1, 2),
                Some(crate::features::admission::expected_answer(gold)),
            )
            .expect("the pool id decodes");
        let shown = hinted
            .projection
            .and_then(|p| p.exam_item)
            .map(|e| e.item_id);
        assert_eq!(shown.as_deref(), Some(first.as_str()));
        applied(write(&mut s, 12, T0, a));

        // Asked under the item ids (the old ids): no item of b's draw, refused.
        let mut plain = s.clone();
        if let Some(open) = plain.exam_sittings.last_mut() {
            open.opaque = false;
        }
        let b = sit(&plain, 1, "b", &exam, &judge);
        refused(
            write(&mut s, 13, T0, b),
            "exam_refused",
            "is not an item of b's exam",
        );
        // Under token-shaped ids the driver made up: held, since apply cannot know the
        // salt yet, but not scored at the reveal.
        let c = sit_salted(&s, 2, "c", &exam, &judge, &[7; 32]);
        applied(write(&mut s, 14, T0, c));

        let out = applied(write(&mut s, 19, T0, reveal_cmd(1, V2, SALT)));
        assert!(s.arbiters.get("a").expect("a").admitted, "{out}");
        assert!(!s.arbiters.get("c").expect("c").admitted);
        let unscored = out["unscored"].to_string();
        assert!(
            unscored.contains("\"c\"") && unscored.contains("opaque token"),
            "{out}"
        );
    }

    /// `V2` with another wording for every plain binary item that shows a motion.
    fn with_phrasings() -> String {
        V2.lines()
            .map(|line| {
                let mut v: serde_json::Value = serde_json::from_str(line).expect("json");
                let plain =
                    v["kind"] == "binary" && v.get("probe").is_none() && v["motion"].is_string();
                if plain {
                    let (q, m) = (v["question"].clone(), v["motion"].clone());
                    v["phrasings"] = json!([{
                        "question": format!("In other words: {}", q.as_str().unwrap_or_default()),
                        "motion": format!("Restated: {}", m.as_str().unwrap_or_default()),
                    }]);
                }
                v.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Where the pool gives other wordings, each arbiter is asked the one its draw picks:
    /// two arbiters see the same item in different words, and a driver that shows an
    /// arbiter another wording than its draw's is refused.
    #[test]
    fn each_arbiter_is_asked_the_wording_its_draw_picks() {
        let text = with_phrasings();
        let exam = load_exam(&text).expect("the reworded pool loads");
        let judge = by_gold(&exam);
        let mut s = registered(&["a", "b"]);
        s.rules = crate::rules::OPAQUE_EXAMS;
        applied(write(&mut s, 11, T0, seal_cmd(&exam)));
        let open = open_sitting(&s).expect("open").clone();
        let shown = |i: u8, id: &str| -> BTreeMap<String, String> {
            let key = key(i).verifying_key();
            open.asked(id, &key)
                .expect("draw")
                .into_iter()
                .map(|item| {
                    let w = open
                        .public
                        .item(&item)
                        .expect("item")
                        .wording(open.seed(&key));
                    (item, w.question.to_owned())
                })
                .collect()
        };
        let (qa, qb) = (shown(0, "a"), shown(1, "b"));
        let reworded = qa
            .values()
            .filter(|q| q.starts_with("In other words"))
            .count();
        assert!(
            reworded > 0 && reworded < qa.len(),
            "{reworded} of {}",
            qa.len()
        );
        assert!(
            qa.iter()
                .any(|(item, q)| qb.get(item).is_some_and(|other| other != q)),
            "no item shown to both in different words"
        );
        let a = sit(&s, 0, "a", &exam, &judge);
        applied(write(&mut s, 12, T0, a));

        // b asked every item as written, ignoring the wordings its draw picked.
        let mut as_written = s.clone();
        if let Some(open) = as_written.exam_sittings.last_mut() {
            open.public
                .items
                .iter_mut()
                .for_each(|i| i.phrasings.clear());
        }
        let b = sit(&as_written, 1, "b", &exam, &judge);
        refused(
            write(&mut s, 13, T0, b),
            "exam_refused",
            "is not an item of b's exam",
        );
        let out = applied(write(&mut s, 19, T0, reveal_cmd(1, &text, SALT)));
        assert!(s.arbiters.get("a").expect("a").admitted, "{out}");
    }

    /// From rule set 24 an answer outside its item's domain (a log-scale quantity quoted
    /// at zero or below) counts as unanswered, so the exam is scored; before, one such
    /// answer left the whole exam unscorable and its arbiter due at every sitting.
    #[test]
    fn an_answer_outside_its_items_domain_counts_as_unanswered() {
        let exam = load_exam(V2).expect("v2");
        // A judge that believes every quantity is below zero quotes negative quantiles.
        let mut below_zero = exam.clone();
        for item in &mut below_zero.items {
            if let Gold::Quantity { value, .. } = &mut item.gold {
                *value = -value.abs() - 1.0;
            }
        }
        let judge = by_gold(&exam);
        for (rules, scored) in [
            (crate::rules::DOUBLING_APPEALS, false),
            (crate::rules::ANSWERS_IN_DOMAIN, true),
        ] {
            let mut s = registered(&["a"]);
            s.rules = rules;
            applied(write(&mut s, 11, T0, seal_cmd(&exam)));
            let open = open_sitting(&s).expect("open");
            let asked = open.asked("a", &key(0).verifying_key()).expect("draw");
            let log_scale = asked.iter().any(|id| {
                matches!(
                    exam.item(id).map(|i| &i.gold),
                    Some(Gold::Quantity {
                        scale: calibration::cooke::Scale::Log,
                        ..
                    })
                )
            });
            assert!(log_scale, "the draw asks a log-scale quantity");
            applied(sit_in(&mut s, 12, T0, 0, "a", &below_zero, &judge));
            let out = applied(write(&mut s, 13, T0, reveal_cmd(1, V2, SALT)));
            let examined = out["examined"].as_array().map_or(0, Vec::len);
            let unscored = out["unscored"].as_array().map_or(0, Vec::len);
            assert_eq!(
                (examined, unscored),
                (usize::from(scored), usize::from(!scored)),
                "{out}"
            );
            if !scored {
                assert!(out.to_string().contains("log scale"), "{out}");
            }
        }
    }
}
