//! Shape rules of a ruling and its binding to the motion it answers.
//!
//! A ruling is checked before it is signed and again before a signature over it is
//! believed: the canonical layout (docs/WIRE.md) has room only for well-formed values, so
//! a ruling that fails these rules has no canonical bytes at all.

use thiserror::Error;

use crate::pb::{Decision, Motion, MotionKind, Ruling};

/// Longest motion or debate id, in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Longest rationale, in UTF-8 bytes. The rationale is committed with the vote.
pub const MAX_RATIONALE_BYTES: usize = 16 * 1024;
/// Most quantiles in one ruling.
pub const MAX_QUANTILES: usize = 16;
/// Longest receipt URL, in UTF-8 bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// Highest ordinal relevance step (SPEC section 4: 0.25, 0.5, 0.75, 1.0 are steps 1..4).
pub const MAX_RELEVANCE: u32 = 4;
/// Highest (weakest) tier number (SPEC section 4: T1..T5).
pub const MAX_TIER: u32 = 5;
/// Longest judge kind in a ruling's provenance, in UTF-8 bytes.
pub const MAX_JUDGE_KIND_BYTES: usize = 32;
/// Longest model name or model version in a ruling's provenance, in UTF-8 bytes.
pub const MAX_MODEL_BYTES: usize = 256;

/// Why a ruling is not well formed. Each variant names the field and the allowed range.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RulingError {
    #[error("{field} is empty; set it to the id of the motion/debate being ruled on")]
    EmptyId { field: &'static str },
    #[error("{field} is {len} bytes; at most {max} bytes are allowed")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("state_hash is {0} bytes; it must be the 32-byte SHA-256 of the debate state")]
    StateHashLength(usize),
    #[error("arbiter_key is {0} bytes; it must be a 32-byte ed25519 public key")]
    ArbiterKeyLength(usize),
    #[error("motion kind {0} is not a known MotionKind (1..=9)")]
    UnknownKind(i32),
    #[error("motion kind is UNSPECIFIED; set one of the MotionKind values")]
    KindUnspecified,
    #[error("decision {0} is not a known Decision (1..=8)")]
    UnknownDecision(i32),
    #[error("decision is UNSPECIFIED; set one of the Decision values")]
    DecisionUnspecified,
    #[error("decision {decision} does not answer a {kind} motion; allowed: {allowed}")]
    DecisionDoesNotFitKind {
        decision: &'static str,
        kind: &'static str,
        allowed: &'static str,
    },
    #[error("probability {0} is outside [0, 1] or not finite")]
    ProbabilityOutOfRange(f64),
    #[error("relevance {0} is outside the ordinal steps 1..=4")]
    RelevanceOutOfRange(u32),
    #[error("tier {0} is outside T1..T5 (1..=5)")]
    TierOutOfRange(u32),
    #[error("{kind} ruling needs a {field}")]
    MissingField {
        kind: &'static str,
        field: &'static str,
    },
    #[error("{0} quantiles; at most 16 are allowed")]
    TooManyQuantiles(usize),
    #[error("quantile {index}: {problem}")]
    BadQuantile { index: usize, problem: &'static str },
    #[error("retrieval receipt: {0}")]
    BadReceipt(&'static str),
    #[error("judge provenance: {0}")]
    BadProvenance(&'static str),
    #[error("issued_at_unix_ms {0} is negative")]
    NegativeTime(i64),
    #[error(
        "motion_digest is {0} bytes; an envelope v2 ruling binds the 32-byte digest of the \
         signed motion it answers"
    )]
    MotionDigestLength(usize),
    #[error(
        "a version 1 ruling carries a motion_digest, which version 1 does not sign; sign it \
         as envelope version 2"
    )]
    MotionDigestInV1,
}

/// Why a well-formed ruling does not answer a given motion (a replay onto another motion
/// or another debate state).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BindingError {
    #[error("ruling is for motion {ruling:?}, not for motion {motion:?}")]
    MotionId { ruling: String, motion: String },
    #[error("ruling is for debate {ruling:?}, but motion {motion_id:?} is in debate {motion:?}")]
    DebateId {
        motion_id: String,
        ruling: String,
        motion: String,
    },
    #[error("ruling judged a {ruling} motion, but motion {motion_id:?} is a {motion} motion")]
    Kind {
        motion_id: String,
        ruling: &'static str,
        motion: &'static str,
    },
    #[error(
        "ruling judged state {ruling}, but motion {motion_id:?} asks about state {motion}; \
         a ruling on one state cannot be replayed onto another"
    )]
    StateHash {
        motion_id: String,
        ruling: String,
        motion: String,
    },
    #[error(
        "ruling answers the signed motion with digest {ruling}, but motion {motion_id:?} here \
         has digest {motion}: it judged other content, deadlines or seats under this id"
    )]
    MotionDigest {
        motion_id: String,
        ruling: String,
        motion: String,
    },
}

/// Checks that a v2 signed ruling answers exactly the signed motion with `digest`
/// ([`crate::motion_signing::motion_digest`]). A v1 ruling binds no motion digest and is
/// refused here: whoever asks for this check holds a signed motion.
pub fn check_motion_digest(
    sr: &crate::pb::SignedRuling,
    motion_id: &str,
    digest: &[u8; 32],
) -> Result<(), BindingError> {
    let bound = crate::signing::bound_motion_digest(sr).unwrap_or(&[]);
    if bound != digest.as_slice() {
        return Err(BindingError::MotionDigest {
            motion_id: motion_id.to_owned(),
            ruling: if bound.is_empty() {
                "none (envelope v1)".to_owned()
            } else {
                hex::encode(bound)
            },
            motion: hex::encode(digest),
        });
    }
    Ok(())
}

/// Short lower-case name of a motion kind, as in docs and errors.
pub fn kind_name(kind: MotionKind) -> &'static str {
    match kind {
        MotionKind::Unspecified => "unspecified",
        MotionKind::Merge => "merge",
        MotionKind::Reject => "reject",
        MotionKind::VerifyTier => "verify-tier",
        MotionKind::ResolveChallenge => "resolve-challenge",
        MotionKind::AssignRelevance => "assign-relevance",
        MotionKind::CertifySteelman => "certify-steelman",
        MotionKind::AdvancePhase => "advance-phase",
        MotionKind::AdmitAppeal => "admit-appeal",
        MotionKind::Exam => "exam",
        MotionKind::Procedure => "procedure",
    }
}

/// Short upper-case name of a decision, as on the command line (`--decision ACCEPT`).
pub fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Unspecified => "UNSPECIFIED",
        Decision::Accept => "ACCEPT",
        Decision::Reject => "REJECT",
        Decision::Uphold => "UPHOLD",
        Decision::Dismiss => "DISMISS",
        Decision::Admit => "ADMIT",
        Decision::Deny => "DENY",
        Decision::None => "NONE",
        Decision::Abstain => "ABSTAIN",
    }
}

/// Parses a decision name (case-insensitive), the inverse of [`decision_name`].
pub fn parse_decision(name: &str) -> Option<Decision> {
    let upper = name.trim().to_ascii_uppercase();
    Decision::from_str_name(&format!("DECISION_{upper}")).filter(|d| *d != Decision::Unspecified)
}

/// The affirmative and negative decisions of a motion kind, or `None` for kinds answered
/// by a value (relevance) rather than a binary decision.
pub fn binary_pair(kind: MotionKind) -> Option<(Decision, Decision)> {
    match kind {
        MotionKind::Merge
        | MotionKind::Reject
        | MotionKind::VerifyTier
        | MotionKind::CertifySteelman
        | MotionKind::AdvancePhase
        | MotionKind::Exam
        | MotionKind::Procedure => Some((Decision::Accept, Decision::Reject)),
        MotionKind::ResolveChallenge => Some((Decision::Uphold, Decision::Dismiss)),
        MotionKind::AdmitAppeal => Some((Decision::Admit, Decision::Deny)),
        MotionKind::AssignRelevance | MotionKind::Unspecified => None,
    }
}

/// True for ACCEPT, UPHOLD and ADMIT: the decisions that change the record.
pub fn is_affirmative(decision: Decision) -> bool {
    matches!(
        decision,
        Decision::Accept | Decision::Uphold | Decision::Admit
    )
}

/// Parses the kind field, refusing unknown and unspecified values.
pub fn known_kind(raw: i32) -> Result<MotionKind, RulingError> {
    match MotionKind::try_from(raw) {
        Ok(MotionKind::Unspecified) => Err(RulingError::KindUnspecified),
        Ok(kind) => Ok(kind),
        Err(_) => Err(RulingError::UnknownKind(raw)),
    }
}

/// Parses the decision field, refusing unknown and unspecified values.
pub fn known_decision(raw: i32) -> Result<Decision, RulingError> {
    match Decision::try_from(raw) {
        Ok(Decision::Unspecified) => Err(RulingError::DecisionUnspecified),
        Ok(d) => Ok(d),
        Err(_) => Err(RulingError::UnknownDecision(raw)),
    }
}

fn check_id(field: &'static str, value: &str) -> Result<(), RulingError> {
    if value.is_empty() {
        return Err(RulingError::EmptyId { field });
    }
    if value.len() > MAX_ID_BYTES {
        return Err(RulingError::TooLong {
            field,
            len: value.len(),
            max: MAX_ID_BYTES,
        });
    }
    Ok(())
}

/// Checks every field of a ruling against its allowed range and the decision against the
/// motion kind. The canonical layout relies on these rules, so signing and verification
/// both run them first.
pub fn check_ruling(r: &Ruling) -> Result<(), RulingError> {
    check_id("motion_id", &r.motion_id)?;
    check_id("debate_id", &r.debate_id)?;
    if r.state_hash.len() != 32 {
        return Err(RulingError::StateHashLength(r.state_hash.len()));
    }
    if r.arbiter_key.len() != 32 {
        return Err(RulingError::ArbiterKeyLength(r.arbiter_key.len()));
    }
    let kind = known_kind(r.kind)?;
    let decision = known_decision(r.decision)?;
    if !r.probability.is_finite() || !(0.0..=1.0).contains(&r.probability) {
        return Err(RulingError::ProbabilityOutOfRange(r.probability));
    }
    if let Some(rel) = r.relevance
        && !(1..=MAX_RELEVANCE).contains(&rel)
    {
        return Err(RulingError::RelevanceOutOfRange(rel));
    }
    if let Some(tier) = r.tier
        && !(1..=MAX_TIER).contains(&tier)
    {
        return Err(RulingError::TierOutOfRange(tier));
    }
    check_quantiles(r)?;
    if let Some(receipt) = &r.receipt {
        if receipt.url.is_empty() {
            return Err(RulingError::BadReceipt("url is empty"));
        }
        if receipt.url.len() > MAX_URL_BYTES {
            return Err(RulingError::TooLong {
                field: "receipt.url",
                len: receipt.url.len(),
                max: MAX_URL_BYTES,
            });
        }
        if receipt.sha256.len() != 32 {
            return Err(RulingError::BadReceipt(
                "sha256 must be the 32-byte SHA-256 of the fetched bytes",
            ));
        }
    }
    if r.rationale.len() > MAX_RATIONALE_BYTES {
        return Err(RulingError::TooLong {
            field: "rationale",
            len: r.rationale.len(),
            max: MAX_RATIONALE_BYTES,
        });
    }
    if r.issued_at_unix_ms < 0 {
        return Err(RulingError::NegativeTime(r.issued_at_unix_ms));
    }
    if let Some(p) = &r.provenance {
        check_provenance(p)?;
    }
    check_decision_fits(kind, decision, r)
}

/// A ruling's provenance: a judge kind of 1..32 bytes, model and version of at most 256.
fn check_provenance(p: &crate::pb::JudgeProvenance) -> Result<(), RulingError> {
    if p.judge_kind.is_empty() {
        return Err(RulingError::BadProvenance(
            "judge_kind is empty; name the judge kind (scripted, command, llm, human)",
        ));
    }
    for (field, value, max) in [
        ("provenance.judge_kind", &p.judge_kind, MAX_JUDGE_KIND_BYTES),
        ("provenance.model", &p.model, MAX_MODEL_BYTES),
        (
            "provenance.model_version",
            &p.model_version,
            MAX_MODEL_BYTES,
        ),
    ] {
        if value.len() > max {
            return Err(RulingError::TooLong {
                field,
                len: value.len(),
                max,
            });
        }
    }
    match &p.reading {
        Some(r) => check_reading(r),
        None => Ok(()),
    }
}

/// The reading methods a model judge may name (docs/WIRE.md "Judge reading").
pub const READING_METHODS: [&str; 2] = ["next-token", "stated"];
/// The presentation orders a reading may name.
pub const READING_ORDERS: [&str; 2] = ["as-given", "swapped"];

/// A reading: a known method, a 32-byte prompt digest, one or two distinct known orders,
/// each with a probability and an answer mass in [0, 1].
fn check_reading(r: &crate::pb::JudgeReading) -> Result<(), RulingError> {
    if !READING_METHODS.contains(&r.method.as_str()) {
        return Err(RulingError::BadProvenance(
            "provenance.reading.method must be \"next-token\" or \"stated\"",
        ));
    }
    if r.prompt_sha256.len() != 32 {
        return Err(RulingError::BadProvenance(
            "provenance.reading.prompt_sha256 must be 32 bytes (SHA-256 of the instructions)",
        ));
    }
    if r.orders.is_empty() || r.orders.len() > READING_ORDERS.len() {
        return Err(RulingError::BadProvenance(
            "provenance.reading.orders must hold one or two orders",
        ));
    }
    for (i, o) in r.orders.iter().enumerate() {
        if !READING_ORDERS.contains(&o.order.as_str())
            || r.orders[..i].iter().any(|p| p.order == o.order)
        {
            return Err(RulingError::BadProvenance(
                "provenance.reading.orders[].order must be \"as-given\" or \"swapped\", each at most once",
            ));
        }
        let unit = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        if !unit(o.p_affirmative) || !unit(o.answer_mass) {
            return Err(RulingError::BadProvenance(
                "provenance.reading.orders[].p_affirmative and answer_mass must be in [0, 1]",
            ));
        }
    }
    Ok(())
}

fn check_quantiles(r: &Ruling) -> Result<(), RulingError> {
    if r.quantiles.len() > MAX_QUANTILES {
        return Err(RulingError::TooManyQuantiles(r.quantiles.len()));
    }
    let mut prev: Option<(f64, f64)> = None;
    for (index, q) in r.quantiles.iter().enumerate() {
        if !(q.level > 0.0 && q.level < 1.0) {
            return Err(RulingError::BadQuantile {
                index,
                problem: "level must lie strictly between 0 and 1",
            });
        }
        if !q.value.is_finite() {
            return Err(RulingError::BadQuantile {
                index,
                problem: "value must be finite",
            });
        }
        if let Some((pl, pv)) = prev {
            if q.level <= pl {
                return Err(RulingError::BadQuantile {
                    index,
                    problem: "levels must be strictly increasing",
                });
            }
            if q.value < pv {
                return Err(RulingError::BadQuantile {
                    index,
                    problem: "values must not decrease as levels increase",
                });
            }
        }
        prev = Some((q.level, q.value));
    }
    Ok(())
}

fn check_decision_fits(
    kind: MotionKind,
    decision: Decision,
    r: &Ruling,
) -> Result<(), RulingError> {
    let kname = kind_name(kind);
    if decision == Decision::Abstain {
        return Ok(());
    }
    let (fits, allowed) = match kind {
        MotionKind::ResolveChallenge => (
            matches!(decision, Decision::Uphold | Decision::Dismiss),
            "UPHOLD, DISMISS, ABSTAIN",
        ),
        MotionKind::AdmitAppeal => (
            matches!(decision, Decision::Admit | Decision::Deny),
            "ADMIT, DENY, ABSTAIN",
        ),
        MotionKind::AssignRelevance => {
            (decision == Decision::None, "NONE (with relevance), ABSTAIN")
        }
        MotionKind::Exam => (
            matches!(
                decision,
                Decision::Accept | Decision::Reject | Decision::None
            ),
            "ACCEPT, REJECT (binary items), NONE (quantile/relevance/tier items), ABSTAIN",
        ),
        _ => (
            matches!(decision, Decision::Accept | Decision::Reject),
            "ACCEPT, REJECT, ABSTAIN",
        ),
    };
    if !fits {
        return Err(RulingError::DecisionDoesNotFitKind {
            decision: decision_name(decision),
            kind: kname,
            allowed,
        });
    }
    match kind {
        MotionKind::AssignRelevance if r.relevance.is_none() => Err(RulingError::MissingField {
            kind: kname,
            field: "relevance (1..=4)",
        }),
        MotionKind::VerifyTier if decision == Decision::Accept && r.tier.is_none() => {
            Err(RulingError::MissingField {
                kind: kname,
                field: "tier (1..=5) when ACCEPT",
            })
        }
        MotionKind::Exam
            if decision == Decision::None
                && r.quantiles.is_empty()
                && r.relevance.is_none()
                && r.tier.is_none() =>
        {
            Err(RulingError::MissingField {
                kind: kname,
                field: "quantiles, relevance or tier when the decision is NONE",
            })
        }
        _ => Ok(()),
    }
}

/// Checks that a ruling answers exactly this motion: same motion id, debate id, kind and
/// state hash. This is what stops a valid signed ruling from being replayed onto another
/// motion or onto another state of the same debate.
pub fn check_binding(r: &Ruling, m: &Motion) -> Result<(), BindingError> {
    if r.motion_id != m.motion_id {
        return Err(BindingError::MotionId {
            ruling: r.motion_id.clone(),
            motion: m.motion_id.clone(),
        });
    }
    if r.debate_id != m.debate_id {
        return Err(BindingError::DebateId {
            motion_id: m.motion_id.clone(),
            ruling: r.debate_id.clone(),
            motion: m.debate_id.clone(),
        });
    }
    if r.kind != m.kind {
        return Err(BindingError::Kind {
            motion_id: m.motion_id.clone(),
            ruling: MotionKind::try_from(r.kind)
                .map(kind_name)
                .unwrap_or("unknown"),
            motion: MotionKind::try_from(m.kind)
                .map(kind_name)
                .unwrap_or("unknown"),
        });
    }
    if r.state_hash != m.state_hash {
        return Err(BindingError::StateHash {
            motion_id: m.motion_id.clone(),
            ruling: hex::encode(&r.state_hash),
            motion: hex::encode(&m.state_hash),
        });
    }
    Ok(())
}
