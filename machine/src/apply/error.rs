//! Why `apply` refused a command: the union of every feature's refusal, with the stable
//! `code()` clients match on and messages that name the fix (docs/REFUSALS.md).

use crate::log::refusal_code::RefusalCode;
use thiserror::Error;

use crate::debates::DebateError;
use crate::rules::draw::DrawError;
use crate::rules::ruling::RulingError;
/// Why `apply` refused a command. Stable `code()`s are returned to clients.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ApplyError {
    #[error("{field} is empty; give a non-empty {field} and send the write again")]
    Empty { field: &'static str },
    /// What a hash, a signature or the record binds could not be encoded; refused before
    /// anything changed rather than binding empty bytes.
    #[error(
        "{what} cannot be encoded as JSON ({reason}), so it cannot be hashed onto the record; \
         nothing was applied: send it with plain values (strings, numbers, lists, objects \
         keyed by text)"
    )]
    Unencodable { what: &'static str, reason: String },
    #[error(
        "arbiter {0} is already registered (`panel arbiter show {0}`); register another arbiter under a new id (`panel arbiter register --id NEW_ID`), or move this one to a new key with `panel node rotate`"
    )]
    ArbiterExists(String),
    #[error(
        "arbiter {0} is not registered; register it first with `panel arbiter register --id {0}` (`panel arbiter list` lists the registered arbiters)"
    )]
    UnknownArbiter(String),
    #[error("motion {0} already exists; use a fresh motion id")]
    MotionExists(String),
    #[error(
        "motion {0} does not exist; `panel motion list --debate ID` lists a debate's motions, and `panel ask` opens a new one"
    )]
    UnknownMotion(String),
    #[error(
        "motion {0} is already decided and rulings are counted once; `panel motion show {0}` shows its outcome, and `panel ask` puts the question to a new panel"
    )]
    MotionClosed(String),
    #[error(
        "arbiter {0} submitted two rulings on one motion; each arbiter counts once: send one ruling per arbiter"
    )]
    DuplicateRuling(String),
    #[error("{0}")]
    Ruling(#[from] RulingError),
    #[error("panel draw failed: {0}")]
    Draw(#[from] DrawError),
    #[error(
        "state_hash must be 64 hex characters (SHA-256), got {0:?}; send the SHA-256 of the debate document the motion is about, in hex"
    )]
    BadStateHash(String),
    #[error("{0}")]
    Debate(#[from] DebateError),
    #[error(
        "exam refused: {0}; the leader's exam driver examines the arbiter again at a later sitting (`panel arbiter show ID` shows its exam record)"
    )]
    Exam(#[from] crate::features::admission::ExamRefusal),
    #[error(transparent)]
    Sitting(#[from] crate::features::exam_sitting::SittingError),
    #[error(
        "prior-consistency check refused: {0}; submit CheckPriors again (`panel coordinator write --command '\"CheckPriors\"'`) once decided motions hold binary rulings"
    )]
    PriorCheck(#[from] crate::features::priors::PriorCheckError),
    #[error(
        "revocation refused: {0}; sign the revocation with the registered arbiter's current key (`panel node revoke --key KEY_FILE`) and submit the hex it prints unchanged"
    )]
    Revocation(#[from] RevocationError),
    #[error(
        "key rotation refused: {0}; sign the rotation with `panel node rotate --old OLD_KEY --new NEW_KEY` (the registered old key authorises, a fresh new key proves possession) and submit the hex it prints unchanged"
    )]
    Rotation(#[from] RotationError),
    #[error(
        "this public key is (or was) arbiter {0}'s; every arbiter needs its own key: make one with `panel node keygen --out FILE` and register with it"
    )]
    KeyInUse(String),
    #[error(
        "arbiter {0}'s key was revoked; its rulings no longer count: register the node again under a new id with a fresh key (`panel node keygen`, then `panel arbiter register`)"
    )]
    Revoked(String),
    #[error(
        "motion {0} belongs to a debate: submit reveals (signed ruling, salt and signed commitment), not bare rulings"
    )]
    CommitmentRequired(String),
    #[error(
        "reveal of a ruling on motion {motion}: {reason}; send the reveal exactly as the node made it (the signed ruling, its salt and the signed commitment)"
    )]
    BadReveal {
        motion: String,
        reason: crate::rules::ruling::RevealError,
    },
    #[error("{0}")]
    Motion(#[from] crate::rules::signed_motion::MotionError),
    #[error("{0}")]
    Round(#[from] RoundError),
    #[error("{0}")]
    Authorship(#[from] crate::authorship::AuthorshipError),
    #[error(
        "debate {debate} already has {open} open motions (at most {max}); ask again once some are decided (`panel motion list --debate {debate}` shows them)"
    )]
    TooManyOpenMotions {
        debate: String,
        open: usize,
        max: usize,
    },
    #[error("{0}")]
    Charter(#[from] crate::features::charter_rules::CharterRuleError),
    #[error("{0}")]
    Limit(#[from] crate::features::limits::LimitError),
    #[error("{0}")]
    Checkpoint(#[from] crate::features::checkpoints::CheckpointError),
    #[error(
        "run {0} does not exist; `panel runs` lists the runs, and `panel crux run`, `panel falsify run` or `panel dossier run` starts one"
    )]
    UnknownRun(String),
    #[error(
        "this group already holds {max} procedure runs, the most one group keeps; no more can be started here: start new runs on a new group (`panel coordinator init`)"
    )]
    TooManyRuns { max: usize },
    #[error("{inner}; {fix}", inner = .0, fix = procedure_fix(.0))]
    Procedure(#[from] panel_procedures::ProcedureError),
    #[error("{0}")]
    RunRole(#[from] crate::features::run_roles::RoleError),
    #[error("{0}")]
    RunConvener(#[from] crate::features::run_convener::ConvenerError),
    #[error(
        "no panel disjoint from the {contested_sitters} arbiter(s) who sat on what this question contests can be drawn; admit more arbiters (docs/PANEL.md, \"Fresh panels\")"
    )]
    NoFreshPanel { contested_sitters: usize },
    #[error("stance declaration refused: {0}")]
    Declaration(#[from] crate::features::declared_priors::DeclarationRefusal),
    #[error("{0}")]
    Breaker(#[from] crate::features::breakers::BreakerError),
    #[error("{0}")]
    LastWord(#[from] crate::features::last_word::LastWordError),
    #[error("seating refused: {0}")]
    Beacon(#[from] crate::features::beacon::BeaconError),
    /// Boxed: a shortfall names its whole schedule, and every `Result` carries the size.
    #[error("appeal refused: {0}")]
    AppealCredits(Box<crate::features::appeal_credits::AppealCreditError>),
    #[error(transparent)]
    SampleAppeal(#[from] crate::features::sample_appeals::SampleAppealError),
    #[error(
        "only {available} eligible arbiters are seated under stance {stance:?} on debate {debate}, {needed} needed: under this debate's policy an arbiter is seated only under the stance it declared for the debate ({declared} arbiter(s) declared one so far; admitted without a declaration: {}). Each arbiter declares with `panel arbiter declare --id ID --key-file FILE --debate {debate} --stance A|B` (a node declares by itself from its node.toml [[stances]]), or admit more arbiters",
        list_or_none(undeclared)
    )]
    Undeclared {
        debate: String,
        stance: crate::rules::acceptance::Stance,
        needed: usize,
        available: usize,
        declared: usize,
        /// Admitted arbiters with no declaration for the debate (the first
        /// [`UNDECLARED_NAMED`]), so the refusal names whose declarations are missing.
        undeclared: Vec<String>,
    },
}

/// How many undeclared arbiters a draw refusal names; the rest are counted.
pub const UNDECLARED_NAMED: usize = 8;

/// Ids joined with commas, "none" for none, "and N more" past [`UNDECLARED_NAMED`].
fn list_or_none(ids: &[String]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    let mut out = ids
        .iter()
        .take(UNDECLARED_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > UNDECLARED_NAMED {
        out.push_str(&format!(" and {} more", ids.len() - UNDECLARED_NAMED));
    }
    out
}

/// What resolves a procedure refusal; the procedure's own message says what is wrong.
fn procedure_fix(e: &panel_procedures::ProcedureError) -> &'static str {
    use panel_procedures::ProcedureError as P;
    match e {
        P::Contract(_) => {
            "fix the input at that JSON path and submit it again (docs/PROCEDURES.md gives each procedure's input format)"
        }
        P::Refused(_) => "change the input as the findings say and submit it again",
        P::OutOfOrder { .. } => {
            "submit that input instead (`panel runs` shows each run and what it waits for)"
        }
        P::UnknownQuestion(_) => {
            "answer one of the run's open questions (`panel runs` lists the runs; `panel crux show`, `panel falsify show` or `panel dossier show` prints one)"
        }
    }
}

impl From<crate::features::appeal_credits::AppealCreditError> for ApplyError {
    fn from(e: crate::features::appeal_credits::AppealCreditError) -> Self {
        ApplyError::AppealCredits(Box::new(e))
    }
}

impl From<crate::features::exam_sitting::SubmitError> for ApplyError {
    fn from(e: crate::features::exam_sitting::SubmitError) -> Self {
        use crate::features::exam_sitting::SubmitError;
        match e {
            SubmitError::Sitting(e) => ApplyError::Sitting(e),
            SubmitError::UnknownArbiter(id) => ApplyError::UnknownArbiter(id),
            SubmitError::Ruling(e) => ApplyError::Ruling(e),
            SubmitError::Refusal(e) => ApplyError::Exam(e),
        }
    }
}

impl ApplyError {
    pub fn code(&self) -> RefusalCode {
        match self {
            ApplyError::Empty { .. } => RefusalCode::EmptyField,
            ApplyError::Unencodable { .. } => RefusalCode::Unencodable,
            ApplyError::ArbiterExists(_) => RefusalCode::ArbiterExists,
            ApplyError::UnknownArbiter(_) => RefusalCode::UnknownArbiter,
            ApplyError::MotionExists(_) => RefusalCode::MotionExists,
            ApplyError::UnknownMotion(_) => RefusalCode::UnknownMotion,
            ApplyError::MotionClosed(_) => RefusalCode::MotionClosed,
            ApplyError::DuplicateRuling(_) => RefusalCode::DuplicateRuling,
            ApplyError::Ruling(_) => RefusalCode::BadRuling,
            ApplyError::Draw(_) | ApplyError::Undeclared { .. } => RefusalCode::DrawFailed,
            ApplyError::SampleAppeal(_) => RefusalCode::RandomSampleRefused,
            ApplyError::BadStateHash(_) => RefusalCode::BadStateHash,
            ApplyError::Debate(e) => e.code(),
            ApplyError::Exam(_) => RefusalCode::ExamRefused,
            ApplyError::Sitting(e) => e.code(),
            ApplyError::PriorCheck(_) => RefusalCode::PriorCheckRefused,
            ApplyError::Revocation(_) => RefusalCode::RevocationRefused,
            ApplyError::Rotation(_) => RefusalCode::RotationRefused,
            ApplyError::KeyInUse(_) => RefusalCode::KeyInUse,
            ApplyError::Revoked(_) => RefusalCode::RevokedKey,
            ApplyError::CommitmentRequired(_) => RefusalCode::CommitmentRequired,
            ApplyError::BadReveal { .. } => RefusalCode::BadReveal,
            ApplyError::Motion(_) => RefusalCode::MotionRefused,
            ApplyError::Round(e) => e.code(),
            ApplyError::Authorship(_) => RefusalCode::Authorship,
            ApplyError::TooManyOpenMotions { .. } => RefusalCode::TooManyOpenMotions,
            ApplyError::Charter(_) => RefusalCode::Charter,
            ApplyError::Limit(e) => e.code(),
            ApplyError::Checkpoint(e) => e.code(),
            ApplyError::UnknownRun(_) => RefusalCode::UnknownRun,
            ApplyError::TooManyRuns { .. } => RefusalCode::TooManyRuns,
            ApplyError::RunRole(_) => RefusalCode::RunRole,
            ApplyError::RunConvener(_) => RefusalCode::RunConvener,
            ApplyError::NoFreshPanel { .. } => RefusalCode::NoFreshPanel,
            ApplyError::Declaration(_) => RefusalCode::DeclarationRefused,
            ApplyError::Breaker(e) => e.code(),
            ApplyError::LastWord(_) => RefusalCode::LastWordRefused,
            ApplyError::Beacon(e) => e.code(),
            ApplyError::AppealCredits(e) => e.code(),
            ApplyError::Procedure(e) => match e {
                panel_procedures::ProcedureError::Contract(_) => RefusalCode::Malformed,
                panel_procedures::ProcedureError::Refused(_) => RefusalCode::ProcedureRefused,
                panel_procedures::ProcedureError::OutOfOrder { .. } => RefusalCode::OutOfOrder,
                panel_procedures::ProcedureError::UnknownQuestion(_) => {
                    RefusalCode::UnknownQuestion
                }
            },
        }
    }
}

pub(crate) fn non_empty(field: &'static str, v: &str) -> Result<(), ApplyError> {
    if v.trim().is_empty() {
        Err(ApplyError::Empty { field })
    } else {
        Ok(())
    }
}

/// Why a step of a logged commit-reveal round is refused (docs/coordinator/state-machine.md "The
/// commit-reveal round"). Each message names what is wrong and what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RoundError {
    #[error(transparent)]
    Unsealed(#[from] panel_federation::motion_seal::SealError),
    #[error(
        "motion {motion} already has its round logged (log index {log_index}); a motion's \
         commitments are logged once and never replaced: send reveals (SubmitReveal) for it instead"
    )]
    AlreadyLogged { motion: String, log_index: u64 },
    #[error(
        "the signed motion of {motion} closed its reveal window at {reveal_deadline} ms, before \
         this entry (batch time {now} ms); put a fresh round with new deadlines to the seats"
    )]
    Expired {
        motion: String,
        reveal_deadline: i64,
        now: i64,
    },
    #[error(
        "commitment {index} for motion {motion} is refused ({reason}); send each commitment \
         exactly as the seat signed it"
    )]
    BadCommitment {
        motion: String,
        index: usize,
        reason: String,
    },
    #[error(
        "commitment {index} for motion {motion} is signed by key {fingerprint}, which holds no \
         unrevoked seat on its panel; only the drawn seats commit, so leave it out"
    )]
    NotSeated {
        motion: String,
        index: usize,
        fingerprint: String,
    },
    #[error(
        "arbiter {arbiter} committed at {at} ms, after the commit deadline {deadline} ms of \
         motion {motion}'s signed motion; a late commitment could follow others' reveals: commit \
         before the deadline, or give slow judges a longer window (replica option \
         --commit-window KIND=MS)"
    )]
    Late {
        motion: String,
        arbiter: String,
        at: i64,
        deadline: i64,
    },
    #[error(
        "arbiter {arbiter} has two commitments for motion {motion}; send one commitment per seat"
    )]
    SecondCommitment { motion: String, arbiter: String },
    #[error(
        "motion {0} has no logged round; its commitments are logged (LogCommitments, after \
         the commit window) before any reveal or close"
    )]
    NoRound(String),
    #[error(
        "a reveal on motion {motion} at batch time {now} ms is outside its reveal window, \
         after {commit_deadline} ms and until {reveal_deadline} ms; reveal inside it"
    )]
    OutsideWindow {
        motion: String,
        now: i64,
        commit_deadline: i64,
        reveal_deadline: i64,
    },
    #[error(
        "arbiter {arbiter} has no commitment logged on motion {motion}; only a logged \
         commitment can be revealed"
    )]
    WithoutCommitment { motion: String, arbiter: String },
    #[error(
        "the reveal of arbiter {arbiter} on motion {motion} does not open its logged \
         commitment ({reason}); send the signed ruling and salt the commitment was made from"
    )]
    Mismatch {
        motion: String,
        arbiter: String,
        reason: String,
    },
    #[error(
        "arbiter {arbiter}'s reveal on motion {motion} is already stored (submitted by \
         {submitted_by:?} at log index {log_index}); a repeated reveal changes nothing"
    )]
    AlreadyRevealed {
        motion: String,
        arbiter: String,
        submitted_by: String,
        log_index: u64,
    },
    #[error(
        "arbiter {arbiter} signed yet another ruling on motion {motion}; its equivocation is \
         already on the record and a further one is not kept"
    )]
    Equivocation { motion: String, arbiter: String },
    #[error(
        "motion {motion} cannot be closed before its reveal deadline {deadline} ms (batch time \
         {now} ms) while {pending:?} committed and have not revealed; close after the deadline"
    )]
    TooEarly {
        motion: String,
        now: i64,
        deadline: i64,
        pending: Vec<String>,
    },
    #[error(
        "motion {motion} is decided by its logged round{}: close it with CloseMotion, which \
         counts every stored reveal; an outcome carrying chosen reveals is refused",
        logged_at.map(|i| format!(" (logged at log index {i})")).unwrap_or_else(|| " (this cluster logs rounds)".into())
    )]
    RoundRequired {
        motion: String,
        logged_at: Option<u64>,
    },
}

impl RoundError {
    pub fn code(&self) -> RefusalCode {
        match self {
            RoundError::Unsealed(_) => RefusalCode::MotionUnsealed,
            RoundError::AlreadyLogged { .. } => RefusalCode::RoundLogged,
            RoundError::Expired { .. } => RefusalCode::RoundExpired,
            RoundError::BadCommitment { .. }
            | RoundError::NotSeated { .. }
            | RoundError::SecondCommitment { .. } => RefusalCode::BadCommitment,
            RoundError::Late { .. } => RefusalCode::LateCommitment,
            RoundError::NoRound(_) => RefusalCode::NoRound,
            RoundError::OutsideWindow { .. } => RefusalCode::RevealOutsideWindow,
            RoundError::WithoutCommitment { .. } => RefusalCode::RevealWithoutCommitment,
            RoundError::Mismatch { .. } => RefusalCode::RevealMismatch,
            RoundError::AlreadyRevealed { .. } => RefusalCode::AlreadyRevealed,
            RoundError::Equivocation { .. } => RefusalCode::Equivocation,
            RoundError::TooEarly { .. } => RefusalCode::CloseTooEarly,
            RoundError::RoundRequired { .. } => RefusalCode::RoundRequired,
        }
    }
}

/// Why a signed revocation is refused (`revocation_refused`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevocationError {
    #[error("not hex")]
    NotHex,
    #[error("not a protobuf KeyRevocation: {0}")]
    NotProtobuf(#[from] prost::DecodeError),
    #[error("{0}")]
    Signature(#[from] panel_proto::keys::KeyError),
    #[error("no registered arbiter holds key {key}")]
    UnknownKey { key: String },
}

/// Why a signed key rotation is refused (`rotation_refused`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RotationError {
    #[error("not hex")]
    NotHex,
    #[error("not a protobuf KeyRotation: {0}")]
    NotProtobuf(#[from] prost::DecodeError),
    #[error("{0}")]
    Signature(#[from] panel_proto::keys::KeyError),
    #[error("the new key is (or was) arbiter {other}'s; generate a fresh key")]
    KeyTaken { other: String },
    #[error("no registered arbiter holds the old key {fingerprint}")]
    UnknownOldKey { fingerprint: String },
    #[error("arbiter {arbiter}'s key was revoked; a revoked key cannot authorise a rotation")]
    Revoked { arbiter: String },
}
