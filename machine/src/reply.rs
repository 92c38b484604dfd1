//! What each command answers when it applies: one type per reply shape, so the writer
//! (`apply`) and every reader (the CLI, `panel verify`) share one definition instead of
//! building and indexing JSON by key.
//!
//! `apply` returns a [`Reply`], one variant per type; it becomes JSON only where it leaves
//! the process (the gRPC write reply) or goes to disk (records, snapshots, stored
//! replies). `panel verify` compares replayed replies with recorded ones, so each type
//! serializes to exactly the JSON written before these types existed: same keys, same
//! order, `null` where that JSON had `null`, keys absent where it had none. The tests
//! pin that.
//!
//! Parts produced by the calibration crate (exam scores, prior-consistency checks) are
//! kept as JSON here: their types serialize but do not decode, and readers decode the
//! parts they show (`admission::ExamRecord`).

use panel_procedures::{PanelOutcome, RunKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::ItemReply;
pub use crate::debates::PriorFinding;
use crate::model::Absent;
use crate::rules::acceptance::{Acceptance, Seat};
use crate::rules::hex_bytes::{DigestBytes, PublicKeyBytes};

/// The one place a reply part becomes JSON: the calibration crate's parts, which
/// serialize but do not decode, are kept as JSON inside the typed replies (`ExamReply`,
/// `PriorFinding`). A part whose serialization fails (none does: every key is a
/// string) would be `null` on every replica alike, never a panic inside apply.
pub fn to_value<T: Serialize>(reply: &T) -> Value {
    serde_json::to_value(reply).unwrap_or(Value::Null)
}

/// Declares [`Reply`]: one variant per reply shape, each built from its type with
/// `From`, and read back by type with [`Reply::get`].
macro_rules! replies {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        /// What an applied command answers, typed: `apply` returns it, the drivers and
        /// the client read it by type ([`Reply::get`]), and it becomes JSON only where
        /// it leaves the process or goes on the record (its serialization is the
        /// variant's own, so the record's bytes are those of the reply types above).
        ///
        /// A reply read back from JSON (a record, a snapshot, a stored duplicate, a
        /// forwarded write) is [`Reply::Recorded`]: JSON alone does not say which
        /// command answered, so it is decoded by the reader that knows, with
        /// [`Reply::get`], which decodes it once into the type asked for.
        #[derive(Debug, Clone, Serialize)]
        #[serde(untagged)]
        pub enum Reply {
            $($(#[$doc])* $variant($ty),)*
            /// A reply as JSON, read back from outside this process.
            Recorded(Value),
        }

        $(
            impl From<$ty> for Reply {
                fn from(reply: $ty) -> Self {
                    Reply::$variant(reply)
                }
            }

            impl ReplyShape for $ty {
                fn typed(reply: &Reply) -> Option<&Self> {
                    match reply {
                        Reply::$variant(r) => Some(r),
                        _ => None,
                    }
                }
            }
        )*
    };
}

/// A reply type [`Reply::get`] can read back.
pub trait ReplyShape: Clone + serde::de::DeserializeOwned {
    /// The reply, when it is held as this type.
    fn typed(reply: &Reply) -> Option<&Self>;
}

replies! {
    RegisterArbiter(RegisterArbiterReply),
    DeclareStance(DeclareStanceReply),
    SetAdmission(SetAdmissionReply),
    RevokeKey(RevokeKeyReply),
    RotateKey(RotateKeyReply),
    Exam(ExamReply),
    SealPool(SealPoolReply),
    SittingClosed(SittingClosedReply),
    ExamHeld(ExamHeldReply),
    RevealKey(RevealKeyReply),
    CheckPriors(CheckPriorsReply),
    Put(PutReply),
    Note(NoteReply),
    RegisterContributor(RegisterContributorReply),
    AdmitOrganisation(AdmitOrganisationReply),
    RemoveOrganisation(RemoveOrganisationReply),
    RotateRosterKey(RotateRosterKeyReply),
    RotateMotionKey(RotateMotionKeyReply),
    AdoptCharter(AdoptCharterReply),
    /// `AuthoriseMembership`: the change of voters as recorded.
    Membership(crate::model::MembershipChange),
    Breaker(BreakerReply),
    CreateDebate(CreateDebateReply),
    Contribute(ContributeReply),
    AskPanel(AskPanelReply),
    ReissueVerdict(ReissueVerdictReply),
    OpenMotion(OpenMotionReply),
    Outcome(OutcomeReply),
    Commitments(CommitmentsReply),
    SubmitReveal(SubmitRevealReply),
    Close(CloseReply),
    StartRun(StartRunReply),
    RunInput(RunInputReply),
    IssueCheckpoint(IssueCheckpointReply),
    Cosignatures(CosignaturesReply),
    /// `LastWord`: the last word as recorded on the motion.
    LastWord(crate::model::motion::LastWordRecord),
}

/// A reply read back as a type it does not have.
#[derive(Debug, thiserror::Error)]
#[error("the reply is not a {what}: {reason}")]
pub struct ReplyShapeError {
    pub what: &'static str,
    pub reason: String,
}

impl Reply {
    /// The reply as type `T`: borrowed when held as `T`, decoded once when read back
    /// from JSON; an error names the type when it is neither.
    pub fn get<T: ReplyShape>(&self) -> Result<std::borrow::Cow<'_, T>, ReplyShapeError> {
        use std::borrow::Cow;
        let wrong = |reason: String| ReplyShapeError {
            what: std::any::type_name::<T>()
                .rsplit("::")
                .next()
                .unwrap_or("reply"),
            reason,
        };
        if let Some(r) = T::typed(self) {
            return Ok(Cow::Borrowed(r));
        }
        match self {
            Reply::Recorded(v) => T::deserialize(v)
                .map(Cow::Owned)
                .map_err(|e| wrong(e.to_string())),
            _ => Err(wrong("it answers another command".into())),
        }
    }

    /// The JSON text the record carries; `null` for a reply whose serialization fails
    /// (none does), as [`to_value`] gives, so a leaf is never empty.
    pub fn json_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "null".into())
    }

    /// The decision of a decision's reply (`RecordOutcome`, `CloseMotion`), if it is one.
    pub fn decided(&self) -> Option<std::borrow::Cow<'_, Decided>> {
        use std::borrow::Cow;
        match self {
            Reply::Outcome(r) => Some(Cow::Borrowed(&r.decided)),
            Reply::Close(r) => Some(Cow::Borrowed(&r.decided)),
            Reply::Recorded(v) => Decided::deserialize(v).ok().map(Cow::Owned),
            _ => None,
        }
    }

    /// The reply as the JSON the record carries.
    pub fn to_json(&self) -> Value {
        match self {
            Reply::Recorded(v) => v.clone(),
            typed => to_value(typed),
        }
    }
}

/// The reply as its JSON text (what the record carries).
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.json_text())
    }
}

/// What `apply_batch` returns for one item of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemOutcome {
    pub reply: ItemReply<Reply>,
    /// True when this is the stored reply of an earlier item with the same ids.
    pub duplicate: bool,
    /// Log index of the entry that first applied the item.
    pub log_index: u64,
}

/// The application response of one Raft entry (openraft's `R`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchReply {
    pub items: Vec<ItemOutcome>,
}

impl ItemReply<Reply> {
    /// The reply as the record and the stored replies keep it.
    pub fn to_recorded(&self) -> ItemReply {
        match self {
            ItemReply::Applied(r) => ItemReply::Applied(r.to_json()),
            ItemReply::Refused { code, message } => ItemReply::Refused {
                code: code.clone(),
                message: message.clone(),
            },
        }
    }
}

impl ItemReply {
    /// A reply read back from the record or a stored reply, as `apply` answers.
    pub fn into_typed(self) -> ItemReply<Reply> {
        match self {
            ItemReply::Applied(v) => ItemReply::Applied(Reply::Recorded(v)),
            ItemReply::Refused { code, message } => ItemReply::Refused { code, message },
        }
    }
}

/// Read back from JSON, a reply is [`Reply::Recorded`] (see [`Reply`]).
impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Reply::Recorded)
    }
}

/// Two replies are equal when the record would carry the same JSON for them, so a
/// replayed reply (typed) equals the recorded one (read back as JSON).
impl PartialEq for Reply {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

// Arbiters.

/// `RegisterArbiter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterArbiterReply {
    pub arbiter_id: String,
}

/// `DeclareStance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclareStanceReply {
    pub arbiter_id: String,
    pub debate_id: String,
    pub stance: crate::rules::acceptance::Stance,
    /// True when the same declaration was already on the record (nothing changed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
}

/// `SetAdmission` (test command).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetAdmissionReply {
    pub arbiter_id: String,
    pub admitted: bool,
}

/// `RevokeKey`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevokeKeyReply {
    pub arbiter_id: String,
    pub revoked: bool,
    /// Decided motions that counted a ruling committed after the revocation's instant
    /// (`Revocation::counted_after_revocation`): review or appeal them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted_after_revocation: Vec<String>,
}

/// `RotateKey`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RotateKeyReply {
    pub arbiter_id: String,
    pub old_fingerprint: String,
    pub new_fingerprint: String,
}

/// `SubmitExam`: `exam` is the record also kept on the arbiter (`{scores, decision}`,
/// decoded by `admission::ExamRecord`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamReply {
    pub arbiter_id: String,
    pub admitted: bool,
    pub exam: Value,
}

/// The exam record `SubmitExam` writes, from the calibration crate's scores and
/// decision (which serialize but do not decode; readers use `admission::ExamRecord`).
#[derive(Debug, Clone, Serialize)]
pub struct ExamWritten<'a> {
    pub scores: &'a calibration::exam_scoring::ArbiterScores,
    pub decision: &'a calibration::admission::AdmissionDecision,
    /// The bias probes' scores (sealed sittings only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<&'a calibration::bias_probes::ProbeScores>,
    /// The sitting, seed and draw the exam was asked from (sealed sittings only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sitting: Option<&'a crate::model::sitting::SittingRef>,
    /// Calibration per tag over the binary items asked (rule set `EXAM_TRACK_RECORD` on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topics: Option<&'a [calibration::exam_hold_back::TopicCalibration]>,
    /// The items held back from the admission score for the track record (the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<&'a [calibration::exam_hold_back::HeldBackForecast]>,
}

/// `SealExamPool`: the sitting it opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealPoolReply {
    pub sitting: u32,
    pub pool_id: String,
    pub items: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<u32>,
}

/// `CloseExamSitting`: the sitting that stopped taking answers, and how many it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SittingClosedReply {
    pub sitting: u32,
    pub held: usize,
}

/// `SubmitExam` in a sealed sitting: the answers are held until the key is revealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamHeldReply {
    pub arbiter_id: String,
    pub sitting: u32,
    pub asked: usize,
    pub answered: usize,
}

/// `RevealExamKey`: who was scored, and any held exam that could not be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevealKeyReply {
    pub sitting: u32,
    pub exam_hash: DigestBytes,
    pub examined: Vec<ExamOutcome>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unscored: Vec<Unscored>,
}

/// One arbiter's admission at a reveal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamOutcome {
    pub arbiter_id: String,
    pub admitted: bool,
}

/// A held exam the reveal could not score; the arbiter stays due an exam.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unscored {
    pub arbiter_id: String,
    pub reason: String,
}

/// `CheckPriors`, and the `result` of a scheduled check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckPriorsReply {
    pub flagged: Vec<String>,
    /// Declarations the check found false, from rule set `DECLARED_CAMPS` on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged_declarations: Vec<FlaggedDeclaration>,
}

/// A stance declaration the prior-consistency check found false: the arbiter rules with
/// the other camp on that debate's motions, and is seated under `fitted` there from now on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlaggedDeclaration {
    pub arbiter_id: String,
    pub debate_id: String,
    pub fitted: crate::rules::acceptance::Stance,
}

// Test commands.

/// `Put` (test command).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PutReply {
    pub previous: Option<String>,
}

/// `Note` (test command).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteReply {
    pub count: usize,
}

// Federation.

/// `RegisterContributor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterContributorReply {
    pub contributor: String,
    pub organisation: String,
}

/// `AdmitOrganisation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmitOrganisationReply {
    pub organisation: String,
    pub endorsed_by: Vec<String>,
}

/// `RemoveOrganisation`: who left, who endorsed it, and who remains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveOrganisationReply {
    pub organisation: String,
    pub endorsed_by: Vec<String>,
    pub remaining: Vec<String>,
    /// The open motions that seated its arbiters, each withdrawn and its question asked
    /// again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reseated: Vec<Reseated>,
}

/// One motion withdrawn by a removal, and the motions its debate opened right after
/// (the question asked again; empty when no panel can be drawn yet, and the question
/// waits as any unseated question does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reseated {
    pub withdrawn: String,
    pub debate_id: String,
    pub opened: Vec<String>,
}

/// `RotateRosterKey`: the member's old and new keys, and until when the old one counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RotateRosterKeyReply {
    pub organisation: String,
    pub seq: u64,
    pub from: PublicKeyBytes,
    pub to: PublicKeyBytes,
    pub overlap_until_ms: u64,
    pub endorsed_by: Vec<String>,
}

/// `RotateMotionKey`: `from` is `None` when no motion key was in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RotateMotionKeyReply {
    pub seq: u64,
    pub from: Option<PublicKeyBytes>,
    pub to: PublicKeyBytes,
    pub endorsed_by: Vec<String>,
}

/// `AdoptCharter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdoptCharterReply {
    pub charter: String,
    pub organisations: Vec<String>,
    pub replicas: Vec<u64>,
}

// Debates.

/// `CreateDebate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateDebateReply {
    pub debate_id: String,
}

/// `Contribute`: the id the document gave the contribution, the motions it opened and
/// the contributor key that signed it (`None` unsigned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContributeReply {
    pub debate_id: String,
    pub created: Option<String>,
    pub opened: Vec<String>,
    pub signed_by: Option<PublicKeyBytes>,
    /// The deposit a filed appeal was charged and the balance left (rule set 19,
    /// `appeal_credits`); absent for other contributions and unfunded appeals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal_deposit: Option<crate::model::appeal_credits::AppealCharge>,
}

/// `AskPanel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskPanelReply {
    pub debate_id: String,
    pub motion_id: String,
    pub opened: Vec<String>,
    /// The final motion that answered the question, when no panel sat (`precedent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precedent: Option<String>,
}

/// `ReissueVerdict`: `verdict` is the new verdict's number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReissueVerdictReply {
    pub debate_id: String,
    pub verdict: u32,
    pub opened: Vec<String>,
}

// Motions.

/// `OpenMotion` (test command); also what opening a debate's or run's motion computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenMotionReply {
    pub motion_id: String,
    pub seats: Vec<Seat>,
    pub draw_seed: u64,
}

/// The decision part of `RecordOutcome` and `CloseMotion`: the verdict, and for a
/// debate's question how it was settled, what opened next and any scheduled prior
/// check; for a run's motion what the run took; what the outcome resolved for
/// recalibration.
/// What a breaker order did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerReply {
    pub seq: u64,
    pub pause: bool,
    pub scopes: Vec<crate::log::breaker_order::Scope>,
    pub endorsed_by: Vec<String>,
    /// Every scope paused after the order.
    pub paused_now: Vec<crate::log::breaker_order::Scope>,
    /// Motions opened for questions that waited for the pause to end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    pub motion_id: String,
    pub verdict: Acceptance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Settled>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_check: Option<ScheduledPriorCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSettledReply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recalibration: Option<RecalibrationReply>,
    /// The supporters' measured independence, under a policy with `measured_n_eff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub independence: Option<crate::rules::independence::SupportIndependence>,
    /// The accepted outcome's probability and 90% interval (`confidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<crate::rules::confidence::OutcomeConfidence>,
    /// The final panel this decision opened for a question left not proven, or why none
    /// could be drawn (`apply/final_panel.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_panel: Option<FinalPanelReply>,
}

/// What a not-proven question's final panel came to when it was due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalPanelReply {
    /// The final panel's motion, opened.
    Opened { motion_id: String, seats: usize },
    /// No panel could be drawn: the question stays not proven.
    NotDrawn { reason: String },
}

impl Decided {
    /// The verdict alone; what it went on to do is filled in as it happens.
    pub fn bare(motion_id: &str, verdict: Acceptance) -> Self {
        Self {
            motion_id: motion_id.to_owned(),
            verdict,
            settled: None,
            opened: None,
            prior_check: None,
            run: None,
            recalibration: None,
            independence: None,
            confidence: None,
            final_panel: None,
        }
    }
}

/// How a decided debate question went into the document: `true`, or the document's
/// refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Settled {
    Settled(bool),
    Refused { refused: String },
}

/// The prior-consistency check a debate's policy schedules after a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScheduledPriorCheck {
    Ran {
        after_decided_motions: usize,
        result: CheckPriorsReply,
    },
    NotRun {
        after_decided_motions: usize,
        not_run: String,
    },
}

/// `RecordOutcome`: the decision, and the signed motion's digest when the outcome
/// carried one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeReply {
    #[serde(flatten)]
    pub decided: Decided,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion_digest: Option<DigestBytes>,
}

/// `LogCommitments`: the round as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitmentsReply {
    pub motion_id: String,
    pub motion_digest: DigestBytes,
    pub signer_key: PublicKeyBytes,
    pub committed: Vec<String>,
    pub not_committed: Vec<String>,
    pub commit_deadline_ms: i64,
    pub reveal_deadline_ms: i64,
}

/// `SubmitReveal`: a reveal taken into the round, or a second ruling kept as evidence
/// of equivocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SubmitRevealReply {
    Equivocation(EquivocationReply),
    Revealed(RevealReply),
}

/// `SubmitReveal` of a seat's first reveal: `awaiting` the seats still to reveal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevealReply {
    pub motion_id: String,
    pub arbiter_id: String,
    pub counted: bool,
    pub abstained: bool,
    pub submitted_by: String,
    pub awaiting: Vec<String>,
}

/// `SubmitReveal` of a second, different ruling by a seat that revealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EquivocationReply {
    pub motion_id: String,
    pub arbiter_id: String,
    pub counted: bool,
    pub equivocation: bool,
    pub first_reveal_log_index: u64,
}

/// `CloseMotion`: the decision, then the round's digest, the seats counted, the absent
/// and the equivocating.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloseReply {
    #[serde(flatten)]
    pub decided: Decided,
    pub motion_digest: DigestBytes,
    pub revealed: Vec<String>,
    pub absent: Absent,
    pub equivocated: Vec<String>,
}

// Procedure runs.

/// `StartRun`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRunReply {
    pub run_id: String,
    pub kind: RunKind,
    pub opened: Vec<String>,
}

/// `SubmitRunInput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInputReply {
    pub run_id: String,
    pub opened: Vec<String>,
}

/// The `run` part of a decided run motion's reply: `settled` is `Ok(true)` or the run's
/// refusal of the settlement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettledReply {
    pub run_id: String,
    pub key: String,
    pub outcome: PanelOutcome,
    pub settled: Result<bool, String>,
    pub opened: Vec<String>,
}

// Recalibration.

/// The `recalibration` part of a decided motion's reply: what the outcome resolved,
/// whom it scored and whom it flagged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalibrationReply {
    pub by: calibration::recalibration::Resolution,
    pub resolved: Vec<ResolvedScored>,
    pub ambiguous_challenges: Vec<String>,
    pub flagged: Vec<String>,
}

/// One motion an outcome resolved, its truth and the arbiters scored on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedScored {
    pub motion_id: String,
    pub truth: bool,
    pub scored: Vec<String>,
}

// Checkpoints.

/// `IssueCheckpoint`: the size issued, `None` when nothing new was issued.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueCheckpointReply {
    pub issued: Option<u64>,
}

/// `AddCosignatures`: the witnesses whose lines were kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CosignaturesReply {
    pub size: u64,
    pub witnesses: Vec<String>,
}

#[cfg(test)]
mod tests {
    //! Each reply family against the literal JSON its `json!` wrote before the types, so
    //! a drift (a renamed key, a reordered field, a dropped `null`) fails here before a
    //! recorded reply stops verifying.

    use serde_json::json;

    use super::*;
    use crate::rules::acceptance::{Acceptance, DeadlockReason};

    /// `reply` serializes to `want` exactly (key order included) and decodes back.
    fn pins<T>(reply: T, want: Value)
    where
        T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let got = to_value(&reply);
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).expect("text"),
            serde_json::to_string(&want).expect("text"),
            "key order"
        );
        let back: T = serde_json::from_value(got).expect("decodes");
        assert_eq!(back, reply);
    }

    /// A typed reply writes the JSON of its type, reads back from that JSON as
    /// `Recorded`, equals what it was read from, and `get` gives the type from either
    /// and names the type it is not.
    #[test]
    fn a_typed_reply_and_its_json_are_one_reply() {
        let typed = Reply::from(OpenMotionReply {
            motion_id: "m-1".into(),
            seats: vec![],
            draw_seed: 7,
        });
        let text = typed.json_text();
        assert_eq!(text, r#"{"motion_id":"m-1","seats":[],"draw_seed":7}"#);
        let back: Reply = serde_json::from_str(&text).expect("decodes");
        assert!(matches!(back, Reply::Recorded(_)));
        assert_eq!(back, typed);
        assert_eq!(back.to_string(), text);
        for r in [&typed, &back] {
            assert_eq!(r.get::<OpenMotionReply>().expect("typed").draw_seed, 7);
            let wrong = r.get::<CloseReply>().expect_err("not a close");
            assert_eq!(wrong.what, "CloseReply");
        }
        assert!(matches!(
            typed.get::<OpenMotionReply>(),
            Ok(std::borrow::Cow::Borrowed(_))
        ));
        assert!(typed.decided().is_none() && back.decided().is_none());
        let other = Reply::from(NoteReply { count: 1 });
        assert_ne!(other, typed);
    }

    #[test]
    fn arbiter_replies_keep_their_json() {
        pins(
            RegisterArbiterReply {
                arbiter_id: "a1".into(),
            },
            json!({ "arbiter_id": "a1" }),
        );
        pins(
            SetAdmissionReply {
                arbiter_id: "a1".into(),
                admitted: true,
            },
            json!({ "arbiter_id": "a1", "admitted": true }),
        );
        pins(
            RevokeKeyReply {
                arbiter_id: "a1".into(),
                revoked: true,
                counted_after_revocation: vec![],
            },
            json!({ "arbiter_id": "a1", "revoked": true }),
        );
        pins(
            RotateKeyReply {
                arbiter_id: "a1".into(),
                old_fingerprint: "f1".into(),
                new_fingerprint: "f2".into(),
            },
            json!({ "arbiter_id": "a1", "old_fingerprint": "f1", "new_fingerprint": "f2" }),
        );
        let exam = json!({ "scores": { "answered": 3 }, "decision": { "admitted": false } });
        pins(
            ExamReply {
                arbiter_id: "a1".into(),
                admitted: false,
                exam: exam.clone(),
            },
            json!({ "arbiter_id": "a1", "admitted": false, "exam": exam }),
        );
        pins(
            CheckPriorsReply {
                flagged: vec!["b2".into()],
                flagged_declarations: Vec::new(),
            },
            json!({ "flagged": ["b2"] }),
        );
        pins(
            PriorFinding {
                motions: 4,
                check: json!({ "arbiter": 0, "factor": 0.25 }),
            },
            json!({ "motions": 4, "check": { "arbiter": 0, "factor": 0.25 } }),
        );
        pins(
            crate::model::Revocation {
                reason: "lost".into(),
                effective_from_unix_ms: 7,
                log_index: 9,
                counted_after_revocation: vec![],
            },
            json!({ "reason": "lost", "effective_from_unix_ms": 7, "log_index": 9 }),
        );
    }

    #[test]
    fn test_and_federation_replies_keep_their_json() {
        pins(PutReply { previous: None }, json!({ "previous": null }));
        pins(
            PutReply {
                previous: Some("v".into()),
            },
            json!({ "previous": "v" }),
        );
        pins(NoteReply { count: 2 }, json!({ "count": 2 }));
        pins(
            RegisterContributorReply {
                contributor: "ann".into(),
                organisation: "north".into(),
            },
            json!({ "contributor": "ann", "organisation": "north" }),
        );
        pins(
            AdmitOrganisationReply {
                organisation: "east".into(),
                endorsed_by: vec!["north".into()],
            },
            json!({ "organisation": "east", "endorsed_by": ["north"] }),
        );
        pins(
            RotateRosterKeyReply {
                organisation: "east".into(),
                seq: 1,
                from: "aa".into(),
                to: "bb".into(),
                overlap_until_ms: 5,
                endorsed_by: vec!["east".into()],
            },
            json!({
                "organisation": "east", "seq": 1, "from": "aa", "to": "bb",
                "overlap_until_ms": 5, "endorsed_by": ["east"]
            }),
        );
        pins(
            RemoveOrganisationReply {
                organisation: "east".into(),
                endorsed_by: vec!["north".into(), "south".into()],
                remaining: vec!["north".into(), "south".into()],
                reseated: vec![Reseated {
                    withdrawn: "mot_1".into(),
                    debate_id: "deb_1".into(),
                    opened: vec!["mot_2".into()],
                }],
            },
            json!({
                "organisation": "east",
                "endorsed_by": ["north", "south"],
                "remaining": ["north", "south"],
                "reseated": [{"withdrawn": "mot_1", "debate_id": "deb_1", "opened": ["mot_2"]}]
            }),
        );
        pins(
            RotateMotionKeyReply {
                seq: 1,
                from: None,
                to: "ab".into(),
                endorsed_by: vec!["north".into(), "south".into()],
            },
            json!({ "seq": 1, "from": null, "to": "ab", "endorsed_by": ["north", "south"] }),
        );
        pins(
            AdoptCharterReply {
                charter: "cd".into(),
                organisations: vec!["north".into()],
                replicas: vec![1, 2, 3],
            },
            json!({ "charter": "cd", "organisations": ["north"], "replicas": [1, 2, 3] }),
        );
        pins(
            IssueCheckpointReply { issued: None },
            json!({ "issued": null }),
        );
        pins(
            IssueCheckpointReply { issued: Some(4) },
            json!({ "issued": 4 }),
        );
        pins(
            CosignaturesReply {
                size: 4,
                witnesses: vec!["w.north".into()],
            },
            json!({ "size": 4, "witnesses": ["w.north"] }),
        );
    }

    #[test]
    fn debate_and_run_replies_keep_their_json() {
        pins(
            CreateDebateReply {
                debate_id: "deb_1".into(),
            },
            json!({ "debate_id": "deb_1" }),
        );
        pins(
            ContributeReply {
                debate_id: "deb_1".into(),
                created: Some("c1".into()),
                opened: vec!["mot-1".into()],
                signed_by: None,
                appeal_deposit: None,
            },
            json!({ "debate_id": "deb_1", "created": "c1", "opened": ["mot-1"], "signed_by": null }),
        );
        pins(
            AskPanelReply {
                debate_id: "deb_1".into(),
                motion_id: "mot-2".into(),
                opened: vec![],
                precedent: None,
            },
            json!({ "debate_id": "deb_1", "motion_id": "mot-2", "opened": [] }),
        );
        pins(
            ReissueVerdictReply {
                debate_id: "deb_1".into(),
                verdict: 2,
                opened: vec![],
            },
            json!({ "debate_id": "deb_1", "verdict": 2, "opened": [] }),
        );
        pins(
            StartRunReply {
                run_id: "run_1".into(),
                kind: RunKind::Crux,
                opened: vec!["mot-3".into()],
            },
            json!({ "run_id": "run_1", "kind": to_value(&RunKind::Crux), "opened": ["mot-3"] }),
        );
        pins(
            RunInputReply {
                run_id: "run_1".into(),
                opened: vec![],
            },
            json!({ "run_id": "run_1", "opened": [] }),
        );
    }

    fn deadlocked() -> Acceptance {
        Acceptance::Deadlocked(crate::rules::acceptance::Dissent {
            reasons: vec![DeadlockReason::NoQuorum {
                counted: 0,
                quorum: 1,
            }],
            tallies: Default::default(),
            ignored: vec![],
        })
    }

    #[test]
    fn motion_replies_keep_their_json() {
        let verdict = deadlocked();
        let v = to_value(&verdict);
        pins(
            OpenMotionReply {
                motion_id: "m".into(),
                seats: vec![],
                draw_seed: 42,
            },
            json!({ "motion_id": "m", "seats": [], "draw_seed": 42 }),
        );
        // A raw test motion: the verdict alone, and the digest when signed.
        let bare = Decided::bare("m", verdict.clone());
        pins(
            OutcomeReply {
                decided: bare.clone(),
                motion_digest: None,
            },
            json!({ "motion_id": "m", "verdict": v }),
        );
        pins(
            OutcomeReply {
                decided: bare,
                motion_digest: Some("dd".into()),
            },
            json!({ "motion_id": "m", "verdict": v, "motion_digest": "dd" }),
        );
        // A debate question, settled or refused, with a scheduled check and a run.
        let full = Decided {
            motion_id: "m".into(),
            verdict: verdict.clone(),
            settled: Some(Settled::Refused {
                refused: "no".into(),
            }),
            opened: Some(vec!["m2".into()]),
            prior_check: Some(ScheduledPriorCheck::NotRun {
                after_decided_motions: 4,
                not_run: "why".into(),
            }),
            run: Some(RunSettledReply {
                run_id: "run_1".into(),
                key: "k".into(),
                outcome: PanelOutcome::Deadlocked,
                settled: Err("refused".into()),
                opened: vec![],
            }),
            recalibration: Some(RecalibrationReply {
                by: calibration::recalibration::Resolution {
                    motion_id: "m".into(),
                    kind: calibration::recalibration::ResolutionKind::Appeal,
                },
                resolved: vec![ResolvedScored {
                    motion_id: "m0".into(),
                    truth: true,
                    scored: vec!["a1".into()],
                }],
                ambiguous_challenges: vec![],
                flagged: vec![],
            }),
            independence: None,
            confidence: None,
            final_panel: Some(FinalPanelReply::Opened {
                motion_id: "m3".into(),
                seats: 9,
            }),
        };
        let absent = Absent {
            committed_not_revealed: vec!["b1".into()],
            not_committed: vec![],
            revoked: vec![],
        };
        pins(
            CloseReply {
                decided: full,
                motion_digest: "dd".into(),
                revealed: vec!["a1".into()],
                absent: absent.clone(),
                equivocated: vec![],
            },
            json!({
                "motion_id": "m",
                "verdict": v,
                "settled": { "refused": "no" },
                "opened": ["m2"],
                "prior_check": { "after_decided_motions": 4, "not_run": "why" },
                "run": {
                    "run_id": "run_1", "key": "k", "outcome": to_value(&PanelOutcome::Deadlocked),
                    "settled": { "Err": "refused" }, "opened": [],
                },
                "recalibration": {
                    "by": { "motion_id": "m", "kind": "appeal" },
                    "resolved": [{ "motion_id": "m0", "truth": true, "scored": ["a1"] }],
                    "ambiguous_challenges": [],
                    "flagged": [],
                },
                "final_panel": { "opened": { "motion_id": "m3", "seats": 9 } },
                "motion_digest": "dd",
                "revealed": ["a1"],
                "absent": absent,
                "equivocated": [],
            }),
        );
        pins(
            ScheduledPriorCheck::Ran {
                after_decided_motions: 8,
                result: CheckPriorsReply::default(),
            },
            json!({ "after_decided_motions": 8, "result": { "flagged": [] } }),
        );
        pins(Settled::Settled(true), json!(true));
        pins(
            CommitmentsReply {
                motion_id: "m".into(),
                motion_digest: "dd".into(),
                signer_key: "kk".into(),
                committed: vec!["a1".into()],
                not_committed: vec!["b1".into()],
                commit_deadline_ms: 10,
                reveal_deadline_ms: 20,
            },
            json!({
                "motion_id": "m", "motion_digest": "dd", "signer_key": "kk",
                "committed": ["a1"], "not_committed": ["b1"],
                "commit_deadline_ms": 10, "reveal_deadline_ms": 20,
            }),
        );
        pins(
            SubmitRevealReply::Revealed(RevealReply {
                motion_id: "m".into(),
                arbiter_id: "a1".into(),
                counted: true,
                abstained: false,
                submitted_by: "c".into(),
                awaiting: vec!["b1".into()],
            }),
            json!({
                "motion_id": "m", "arbiter_id": "a1", "counted": true, "abstained": false,
                "submitted_by": "c", "awaiting": ["b1"],
            }),
        );
        pins(
            SubmitRevealReply::Equivocation(EquivocationReply {
                motion_id: "m".into(),
                arbiter_id: "a1".into(),
                counted: false,
                equivocation: true,
                first_reveal_log_index: 5,
            }),
            json!({
                "motion_id": "m", "arbiter_id": "a1", "counted": false, "equivocation": true,
                "first_reveal_log_index": 5,
            }),
        );
    }
}
