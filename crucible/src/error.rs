//! Stable error codes of the protocol writers. The code is the contract; messages are
//! for people.

use std::fmt;

/// Why a writer refused. Codes shared with the reference engine keep its spelling; codes
/// marked *(ours)* come from rules SPEC states that the reference leaves unchecked
/// (see docs/CONFORMANCE.md) or from lookups the reference does not guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    MergeNotCandidate,
    MergeNotOnMerit,
    RejectNotCandidate,
    ChallengeAlreadyResolved,
    ChallengeSameSide,
    SteelmanNotSubmitted,
    VersionNotFound,
    CitationNotFound,
    PhasePrereqUnmet,
    PhaseTerminal,
    PhaseNotAdvanceable,
    AppealNotClosed,
    AppealNoVerdict,
    AppealLimitReached,
    AppealAlreadyDecided,
    AppealNotInReview,
    AppealOpenChallenges,
    AppealPendingCandidates,
    /// *(ours)* The id names no thread.
    ThreadNotFound,
    /// *(ours)* The id names no challenge.
    ChallengeNotFound,
    /// *(ours)* The id names no appeal.
    AppealNotFound,
    /// *(ours)* SPEC section 4: every arbiter decision carries a written rationale.
    RationaleRequired,
    /// *(ours)* SPEC 3.6: a resolution is `upheld` or `dismissed`.
    ChallengeBadResolution,
    /// *(ours)* SPEC section 6: the action is not open in the current phase.
    PhaseForbids,
    /// *(ours)* SPEC section 7: a challenge targets a canonical version.
    ChallengeNotCanonical,
    /// *(ours)* SPEC 3.5: only the restated side certifies its own case.
    SteelmanNotOwnSide,
    /// *(ours)* SPEC 3.5: arbiter certification needs one revision cycle first.
    SteelmanNoRevision,
    /// *(ours)* SPEC 9: relevance is one of 0.25, 0.5, 0.75, 1.0.
    RelevanceInvalid,
    /// *(ours)* A side must be exactly `A` or `B`.
    SideInvalid,
}

impl Code {
    /// Every code, for reading one back from its text ([`Code::parse`]); a code added to
    /// the enum belongs here too.
    pub const ALL: [Code; 29] = {
        use Code::*;
        [
            MergeNotCandidate,
            MergeNotOnMerit,
            RejectNotCandidate,
            ChallengeAlreadyResolved,
            ChallengeSameSide,
            SteelmanNotSubmitted,
            VersionNotFound,
            CitationNotFound,
            PhasePrereqUnmet,
            PhaseTerminal,
            PhaseNotAdvanceable,
            AppealNotClosed,
            AppealNoVerdict,
            AppealLimitReached,
            AppealAlreadyDecided,
            AppealNotInReview,
            AppealOpenChallenges,
            AppealPendingCandidates,
            ThreadNotFound,
            ChallengeNotFound,
            AppealNotFound,
            RationaleRequired,
            ChallengeBadResolution,
            PhaseForbids,
            ChallengeNotCanonical,
            SteelmanNotOwnSide,
            SteelmanNoRevision,
            RelevanceInvalid,
            SideInvalid,
        ]
    };

    /// The code written as `text` (`as_str`'s inverse), if it is one.
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        use Code::*;
        match self {
            MergeNotCandidate => "MERGE_NOT_CANDIDATE",
            MergeNotOnMerit => "MERGE_NOT_ON_MERIT",
            RejectNotCandidate => "REJECT_NOT_CANDIDATE",
            ChallengeAlreadyResolved => "CHALLENGE_ALREADY_RESOLVED",
            ChallengeSameSide => "CHALLENGE_SAME_SIDE",
            SteelmanNotSubmitted => "STEELMAN_NOT_SUBMITTED",
            VersionNotFound => "VERSION_NOT_FOUND",
            CitationNotFound => "CITATION_NOT_FOUND",
            PhasePrereqUnmet => "PHASE_PREREQ_UNMET",
            PhaseTerminal => "PHASE_TERMINAL",
            PhaseNotAdvanceable => "PHASE_NOT_ADVANCEABLE",
            AppealNotClosed => "APPEAL_NOT_CLOSED",
            AppealNoVerdict => "APPEAL_NO_VERDICT",
            AppealLimitReached => "APPEAL_LIMIT_REACHED",
            AppealAlreadyDecided => "APPEAL_ALREADY_DECIDED",
            AppealNotInReview => "APPEAL_NOT_IN_REVIEW",
            AppealOpenChallenges => "APPEAL_OPEN_CHALLENGES",
            AppealPendingCandidates => "APPEAL_PENDING_CANDIDATES",
            ThreadNotFound => "THREAD_NOT_FOUND",
            ChallengeNotFound => "CHALLENGE_NOT_FOUND",
            AppealNotFound => "APPEAL_NOT_FOUND",
            RationaleRequired => "RATIONALE_REQUIRED",
            ChallengeBadResolution => "CHALLENGE_BAD_RESOLUTION",
            PhaseForbids => "PHASE_FORBIDS",
            ChallengeNotCanonical => "CHALLENGE_NOT_CANONICAL",
            SteelmanNotOwnSide => "STEELMAN_NOT_OWN_SIDE",
            SteelmanNoRevision => "STEELMAN_NO_REVISION",
            RelevanceInvalid => "RELEVANCE_INVALID",
            SideInvalid => "SIDE_INVALID",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused write: a stable code and a message saying what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Refusal {
    pub code: Code,
    pub message: String,
}

impl Refusal {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Result of a writer.
pub type Outcome<T = ()> = Result<T, Refusal>;
