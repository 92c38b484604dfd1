//! The last word (rule set [`LAST_WORD`](crate::rules::LAST_WORD); docs/PANEL.md "The
//! last word"): after the ladder's last round left a debate question without an answer
//! (`not_proven`), the authority the charter names (`Charter::last_word`) may decide it
//! with a signed decision and a reason. The answer goes through the engine as a panel's
//! would, and the question's last motion becomes `final` with the route on record. Nobody
//! else can: the signature must verify under the charter's key, and a question that is
//! still open, was answered, or has an answer from the authority already is refused.

pub use crate::log::last_word::LastWordDecision;
use crate::model::finality::{Finality, OutcomeStatus};
pub use crate::model::motion::LastWordRecord;
use crate::model::{ApplyCtx, State};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// Domain tag of the signed layout: no other signature of the project covers these bytes.
pub const TAG_V1: &[u8] = b"crucible-panel/last-word/v1\0";

/// The longest reason a decision may carry.
pub const MAX_REASON: usize = 4096;

/// Why a last word is refused (code `last_word_refused`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LastWordError {
    #[error(
        "the charter names no last-word authority (charter.last_word): a question the panels \
         could not answer stays not proven; name one with `panel pki init --last-word NAME` \
         in a new charter"
    )]
    NoAuthority,
    #[error("a last word needs rule set 17 (this group's record is at {0})")]
    NotInForce(u32),
    #[error("motion {0} is not a question of debate {1}: name the question's last motion")]
    NotAQuestion(String, String),
    #[error(
        "motion {motion} is {status}, not not_proven: the last word decides only what the \
         panels' last round left unanswered"
    )]
    NotUnanswered { motion: String, status: String },
    #[error("motion {0} already has the last word")]
    AlreadySpoken(String),
    #[error(
        "the charter's final panel is sitting on motion {motion}'s question (motion          {final_motion}): the last word waits until it has ruled without a supermajority"
    )]
    FinalPanelSitting {
        motion: String,
        final_motion: String,
    },
    #[error("the reason is empty or longer than {MAX_REASON} bytes: say why, briefly")]
    Reason,
    #[error(
        "the signature does not verify under the charter's last-word key ({0}): sign with \
         the authority's key file (`panel debate last-word --key FILE`)"
    )]
    Signature(String),
    #[error("the engine refused the answer ({code}): {message}; nothing changed")]
    Effect { code: String, message: String },
}

/// An answer as people and the signed layout read it: `yes`, `no`, `relevance 0.75`.
pub fn answer_text(a: &crucible::motion::Answer) -> String {
    match a {
        crucible::motion::Answer::Yes => "yes".to_owned(),
        crucible::motion::Answer::No => "no".to_owned(),
        crucible::motion::Answer::Relevance(x) => format!("relevance {x}"),
    }
}

/// The bytes the authority signs: the tag, then the debate, the motion, the answer
/// ([`answer_text`]) and the reason, each after its length (u32, big-endian).
pub fn signed_bytes(d: &LastWordDecision) -> Vec<u8> {
    let answer = answer_text(&d.answer);
    let mut buf = TAG_V1.to_vec();
    for part in [&d.debate_id, &d.motion_id, &answer, &d.reason] {
        buf.extend_from_slice(&(part.len() as u32).to_be_bytes());
        buf.extend_from_slice(part.as_bytes());
    }
    buf
}

/// `d` signed with the authority's key (its signature field replaced).
pub fn sign(key: &SigningKey, mut d: LastWordDecision) -> LastWordDecision {
    d.signature =
        crate::rules::hex_bytes::SignatureBytes::new(key.sign(&signed_bytes(&d)).to_bytes());
    d
}

fn verify(key_hex: &str, d: &LastWordDecision) -> Result<(), LastWordError> {
    let bad = |why: &str| LastWordError::Signature(why.to_owned());
    let key: [u8; 32] = hex::decode(key_hex.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("the charter's key is not 32 bytes of hex"))?;
    let key = VerifyingKey::from_bytes(&key).map_err(|_| bad("the charter's key is invalid"))?;
    let sig: [u8; 64] = hex::decode(d.signature.to_hex().trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("the signature is not 64 bytes of hex"))?;
    key.verify_strict(&signed_bytes(d), &Signature::from_bytes(&sig))
        .map_err(|_| bad("it was made by another key or over other content"))
}

/// The charter's final panel still sitting on not-proven motion `motion_id`'s question
/// (rule set `FINAL_PANEL`, `apply/final_panel.rs`): the last word waits for it.
fn final_panel_sitting(state: &State, debate_id: &str, motion_id: &str) -> Option<String> {
    let rec = state.debates.get(debate_id)?;
    rec.questions.keys().find_map(|id| {
        let m = state.motions.get(id)?;
        (m.spec.final_panel_of.as_deref() == Some(motion_id)
            && m.status == crate::model::MotionStatus::Open)
            .then(|| id.clone())
    })
}

/// Applies a last word: checks it, settles the question with the answer through the
/// engine, and makes the motion final with the route on record.
pub fn apply(
    state: &mut State,
    ctx: &ApplyCtx,
    d: &LastWordDecision,
) -> Result<LastWordRecord, LastWordError> {
    if state.rules < crate::rules::LAST_WORD {
        return Err(LastWordError::NotInForce(state.rules));
    }
    let authority = state
        .charter
        .as_ref()
        .and_then(|c| c.last_word.clone())
        .ok_or(LastWordError::NoAuthority)?;
    if d.reason.trim().is_empty() || d.reason.len() > MAX_REASON {
        return Err(LastWordError::Reason);
    }
    verify(&authority.key, d)?;
    let not_a_question = || LastWordError::NotAQuestion(d.motion_id.clone(), d.debate_id.clone());
    let m = state.motions.get(&d.motion_id).ok_or_else(not_a_question)?;
    if m.spec.debate_id != d.debate_id || m.spec.question.is_none() {
        return Err(not_a_question());
    }
    if m.last_word.is_some() {
        return Err(LastWordError::AlreadySpoken(d.motion_id.clone()));
    }
    if let Some(final_motion) = final_panel_sitting(state, &d.debate_id, &d.motion_id) {
        return Err(LastWordError::FinalPanelSitting {
            motion: d.motion_id.clone(),
            final_motion,
        });
    }
    let status = m.finality.as_ref().map(|f| f.status);
    if status != Some(OutcomeStatus::NotProven) {
        return Err(LastWordError::NotUnanswered {
            motion: d.motion_id.clone(),
            status: status.map_or("undecided", |s| s.name()).to_owned(),
        });
    }
    let rationale = format!("The last word of {}: {}", authority.name, d.reason.trim());
    let rec = state
        .debates
        .get_mut(&d.debate_id)
        .ok_or_else(not_a_question)?;
    // The engine decides whether the answer can still apply; on a refusal nothing changed.
    let mut trial = rec.clone();
    trial
        .settle(ctx.time_ms, &d.motion_id, d.answer, &rationale)
        .map_err(|e| LastWordError::Effect {
            code: e.code().as_str().to_owned(),
            message: e.to_string(),
        })?;
    *rec = trial;
    let record = LastWordRecord {
        authority: authority.name.clone(),
        answer: d.answer,
        reason: d.reason.trim().to_owned(),
        log_index: ctx.log_index,
    };
    if let Some(m) = state.motions.get_mut(&d.motion_id) {
        m.last_word = Some(record.clone());
        m.finality = Some(Finality {
            status: OutcomeStatus::Final,
            final_at_ms: ctx.time_ms,
            appeal_id: None,
            reason: format!(
                "final: the last word of {}, after the panels left it unanswered",
                authority.name
            ),
            changed_log_index: ctx.log_index,
            changed_at_ms: ctx.time_ms,
        });
    }
    Ok(record)
}
