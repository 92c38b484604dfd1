//! Stable error codes of the protocol writers. The code is the contract; messages are
//! for people.

use std::fmt;

/// Declares [`Code`], its text and the list of every code from one table, so none of the
/// three can miss a code the others have.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $text:literal,)*) => {
        /// Why a writer refused. Codes shared with the reference engine keep its spelling;
        /// codes marked *(ours)* come from rules SPEC states that the reference leaves
        /// unchecked (see docs/CONFORMANCE.md) or from lookups the reference does not guard.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            /// Every code, for reading one back from its text ([`Code::parse`]).
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }
        }
    };
}

codes! {
    MergeNotCandidate = "MERGE_NOT_CANDIDATE",
    MergeNotOnMerit = "MERGE_NOT_ON_MERIT",
    RejectNotCandidate = "REJECT_NOT_CANDIDATE",
    ChallengeAlreadyResolved = "CHALLENGE_ALREADY_RESOLVED",
    ChallengeSameSide = "CHALLENGE_SAME_SIDE",
    SteelmanNotSubmitted = "STEELMAN_NOT_SUBMITTED",
    VersionNotFound = "VERSION_NOT_FOUND",
    CitationNotFound = "CITATION_NOT_FOUND",
    PhasePrereqUnmet = "PHASE_PREREQ_UNMET",
    PhaseTerminal = "PHASE_TERMINAL",
    PhaseNotAdvanceable = "PHASE_NOT_ADVANCEABLE",
    AppealNotClosed = "APPEAL_NOT_CLOSED",
    AppealNoVerdict = "APPEAL_NO_VERDICT",
    AppealLimitReached = "APPEAL_LIMIT_REACHED",
    AppealAlreadyDecided = "APPEAL_ALREADY_DECIDED",
    AppealNotInReview = "APPEAL_NOT_IN_REVIEW",
    AppealOpenChallenges = "APPEAL_OPEN_CHALLENGES",
    AppealPendingCandidates = "APPEAL_PENDING_CANDIDATES",
    /// *(ours)* The id names no thread.
    ThreadNotFound = "THREAD_NOT_FOUND",
    /// *(ours)* The id names no challenge.
    ChallengeNotFound = "CHALLENGE_NOT_FOUND",
    /// *(ours)* The id names no appeal.
    AppealNotFound = "APPEAL_NOT_FOUND",
    /// *(ours)* SPEC section 4: every arbiter decision carries a written rationale.
    RationaleRequired = "RATIONALE_REQUIRED",
    /// *(ours)* SPEC 3.6: a resolution is `upheld` or `dismissed`.
    ChallengeBadResolution = "CHALLENGE_BAD_RESOLUTION",
    /// *(ours)* SPEC section 6: the action is not open in the current phase.
    PhaseForbids = "PHASE_FORBIDS",
    /// *(ours)* SPEC section 7: a challenge targets a canonical version.
    ChallengeNotCanonical = "CHALLENGE_NOT_CANONICAL",
    /// *(ours)* SPEC 3.5: only the restated side certifies its own case.
    SteelmanNotOwnSide = "STEELMAN_NOT_OWN_SIDE",
    /// *(ours)* SPEC 3.5: arbiter certification needs one revision cycle first.
    SteelmanNoRevision = "STEELMAN_NO_REVISION",
    /// *(ours)* SPEC 9: relevance is one of 0.25, 0.5, 0.75, 1.0.
    RelevanceInvalid = "RELEVANCE_INVALID",
    /// *(ours)* A side must be exactly `A` or `B`.
    SideInvalid = "SIDE_INVALID",
}

impl Code {
    /// The code written as `text` (`as_str`'s inverse), if it is one.
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == text)
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
