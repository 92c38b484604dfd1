//! What can go wrong when the kit drives `apply`: a refusal, a motion that is not there,
//! or a ruling that cannot be signed.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum KitError {
    /// `apply` refused the command; `code` is the refusal code of its reply.
    #[error("apply refused the command ({code}): {message}")]
    Refused {
        code: crate::log::refusal_code::RefusalCode,
        message: String,
    },
    /// The reply lacks a field the kit reads (`motion_id`, `debate_id`, ...).
    #[error("the reply names no {field}: {reply}")]
    MissingField {
        field: &'static str,
        reply: serde_json::Value,
    },
    /// No motion of this id is held.
    #[error("no motion {0} is held")]
    NoMotion(String),
    /// A seated arbiter whose key the kit does not hold.
    #[error("the kit holds no key for arbiter {0}; register it through the kit")]
    NoKey(String),
    /// A hex field of a motion did not decode.
    #[error("motion {motion}: its state hash is not hex")]
    StateHash { motion: String },
    /// Signing a ruling or a commitment failed.
    #[error("cannot sign for {arbiter}: {reason}")]
    Sign { arbiter: String, reason: String },
    /// The sealed sitting could not be set up (no pool, no open sitting, a draw error).
    #[error("the exam sitting: {0}")]
    Sitting(String),
    /// A fixture command did not deserialise (a kit defect).
    #[error("a kit command does not decode: {0}")]
    Command(#[from] serde_json::Error),
}
