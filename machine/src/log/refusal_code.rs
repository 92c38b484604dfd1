//! The stable code of a refused command (docs/REFUSALS.md): what clients and the leader's
//! drivers match on, typed, so no reader compares our own replies as text. The record
//! keeps the code as the same snake-case text as before (the engine's codes in its
//! capitals), so records verify unchanged.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! refusal_codes {
    ($($(#[$doc:meta])* $variant:ident = $text:literal,)*) => {
        /// Why `apply` refused a command, as a code. Compared and hashed by its text, so a
        /// code decoded from a record equals the one a replay produces whatever variant
        /// carries it.
        #[derive(Debug, Clone)]
        pub enum RefusalCode {
            $($(#[$doc])* $variant,)*
            /// A protocol engine's refusal (SPEC section 13's codes, `crucible::Code`).
            Engine(crucible::Code),
            /// A code this version does not know (a newer writer's, or a foreign record's),
            /// kept as written.
            Other(Box<str>),
        }

        impl RefusalCode {
            /// Every code of this crate (the engine's are `crucible::Code::ALL`):
            /// docs/REFUSALS.md lists each, and `machine/tests/refusal_messages.rs` holds
            /// a case for each.
            pub const KNOWN: &'static [RefusalCode] = &[$(RefusalCode::$variant,)*];

            /// The code as the record and the wire carry it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(RefusalCode::$variant => $text,)*
                    RefusalCode::Engine(c) => c.as_str(),
                    RefusalCode::Other(text) => text,
                }
            }

            /// The code written as `text`.
            pub fn parse(text: &str) -> RefusalCode {
                match text {
                    $($text => RefusalCode::$variant,)*
                    _ => crucible::Code::parse(text)
                        .map_or_else(|| RefusalCode::Other(text.into()), RefusalCode::Engine),
                }
            }
        }
    };
}

refusal_codes! {
    EmptyField = "empty_field",
    Unencodable = "unencodable",
    ArbiterExists = "arbiter_exists",
    UnknownArbiter = "unknown_arbiter",
    MotionExists = "motion_exists",
    UnknownMotion = "unknown_motion",
    MotionClosed = "motion_closed",
    DuplicateRuling = "duplicate_ruling",
    BadRuling = "bad_ruling",
    DrawFailed = "draw_failed",
    RandomSampleRefused = "random_sample_refused",
    BadStateHash = "bad_state_hash",
    ExamRefused = "exam_refused",
    ExamPoolRefused = "exam_pool_refused",
    PriorCheckRefused = "prior_check_refused",
    RevocationRefused = "revocation_refused",
    RotationRefused = "rotation_refused",
    KeyInUse = "key_in_use",
    RevokedKey = "revoked_key",
    CommitmentRequired = "commitment_required",
    BadReveal = "bad_reveal",
    MotionRefused = "motion_refused",
    Authorship = "authorship",
    TooManyOpenMotions = "too_many_open_motions",
    Charter = "charter",
    UnknownRun = "unknown_run",
    TooManyRuns = "too_many_runs",
    RunRole = "run_role",
    RunConvener = "run_convener",
    NoFreshPanel = "no_fresh_panel",
    DeclarationRefused = "declaration_refused",
    LastWordRefused = "last_word_refused",
    Malformed = "malformed",
    ProcedureRefused = "procedure_refused",
    OutOfOrder = "out_of_order",
    UnknownQuestion = "unknown_question",
    // The commit-reveal round (`RoundError`).
    MotionUnsealed = "motion_unsealed",
    RoundLogged = "round_logged",
    RoundExpired = "round_expired",
    BadCommitment = "bad_commitment",
    LateCommitment = "late_commitment",
    NoRound = "no_round",
    RevealOutsideWindow = "reveal_outside_window",
    RevealWithoutCommitment = "reveal_without_commitment",
    RevealMismatch = "reveal_mismatch",
    /// The reveal is already stored; a driver retrying it treats this as done.
    AlreadyRevealed = "already_revealed",
    Equivocation = "equivocation",
    /// A close before the reveal deadline while seats are pending; the driver waits.
    CloseTooEarly = "close_too_early",
    RoundRequired = "round_required",
    // Debates.
    UnknownDebate = "unknown_debate",
    GateRefused = "gate_refused",
    NoQuestion = "no_question",
    // Features.
    BeaconRefused = "beacon_refused",
    AppealCreditsShort = "appeal_credits_short",
    AppealOrgUnknown = "appeal_org_unknown",
    BreakerRefused = "breaker_refused",
    Paused = "paused",
    BadCosignature = "bad_cosignature",
    QuotaExceeded = "quota_exceeded",
    /// Over a rate limit: the same write may succeed later.
    RateLimited = "rate_limited",
    /// A stored reply that no longer decodes (a damaged state).
    StoredReply = "stored_reply",
}

impl PartialEq for RefusalCode {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for RefusalCode {}

impl std::hash::Hash for RefusalCode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

/// Tests and tools compare a code with its documented text.
impl PartialEq<&str> for RefusalCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<&str> for &RefusalCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RefusalCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RefusalCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(RefusalCode::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_as_itself() {
        for text in [
            "draw_failed",
            "already_revealed",
            "PHASE_NOT_ADVANCEABLE",
            "from_a_newer_writer",
        ] {
            let code = RefusalCode::parse(text);
            assert_eq!(code.as_str(), text);
            let json = serde_json::to_string(&code).expect("a string");
            assert_eq!(json, format!("\"{text}\""));
            let back: RefusalCode = serde_json::from_str(&json).expect("decodes");
            assert_eq!(back, code);
        }
        assert!(matches!(
            RefusalCode::parse("close_too_early"),
            RefusalCode::CloseTooEarly
        ));
        assert!(matches!(
            RefusalCode::parse("PHASE_NOT_ADVANCEABLE"),
            RefusalCode::Engine(crucible::Code::PhaseNotAdvanceable)
        ));
        assert!(matches!(RefusalCode::parse("x"), RefusalCode::Other(_)));
        // Equal by text whatever carries it.
        assert_eq!(RefusalCode::Other("paused".into()), RefusalCode::Paused);
    }
}
