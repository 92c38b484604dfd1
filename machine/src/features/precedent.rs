//! Precedent: a question already decided for good is answered by citing the decision
//! (rule set [`PRECEDENTS`](crate::rules::PRECEDENTS); docs/PANEL.md "Precedent").
//!
//! A panel judges only what a motion shows: the question, the resolution and the items
//! with their citations (`crucible::motion::projection`, which carries no ids and no
//! authorship). Two motions of one kind that show exactly the same content ask the same
//! question of the same evidence, so once one of them is `final` a second panel would
//! spend its arbiters' judgment to re-decide it, and might differ by chance alone. From
//! this rule set such a question is answered by citing the final outcome, on record with
//! the link, unless the asker requests a fresh panel with a reason (`fresh_panel`).
//!
//! Only content questions are eligible: a phase advance depends on the debate's state
//! beyond what it shows, and an appeal's admission on the verdict it contests.

use crucible::motion::{Projection, Question};
use sha2::{Digest, Sha256};

use crate::model::finality::OutcomeStatus;
use crate::model::{MotionStatus, State};
use crate::rules::acceptance::Acceptance;

/// Domain tag of a precedent digest.
pub const DOMAIN: &[u8] = b"crucible-panel/precedent/v1\0";

/// Whether a question's answer follows from what its motion shows alone.
pub fn eligible(q: &Question) -> bool {
    !matches!(
        q,
        Question::AdvancePhase { .. } | Question::AdmitAppeal { .. }
    )
}

/// The question's kind as the digest names it (fixed, so digests on record never move).
fn kind_name(q: &Question) -> &'static str {
    match q {
        Question::Merge { .. } => "merge",
        Question::VerifyTier { .. } => "verify_tier",
        Question::ResolveChallenge { .. } => "resolve_challenge",
        Question::AssignRelevance { .. } => "assign_relevance",
        Question::CertifySteelman { .. } => "certify_steelman",
        Question::AdvancePhase { .. } => "advance_phase",
        Question::AdmitAppeal { .. } => "admit_appeal",
    }
}

/// Hex SHA-256 over [`DOMAIN`], the question's kind and the JSON of what the motion shows,
/// for an eligible question.
pub fn digest(q: &Question, projection: &Projection) -> Option<String> {
    if !eligible(q) {
        return None;
    }
    let shown = serde_json::to_vec(projection).ok()?;
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(kind_name(q).as_bytes());
    h.update([0]);
    h.update(&shown);
    Some(hex::encode(h.finalize()))
}

/// The digest of a decided motion's content, if it is an eligible debate question.
fn digest_of(state: &State, motion_id: &str) -> Option<String> {
    let m = state.motions.get(motion_id)?;
    digest(m.spec.question.as_ref()?, m.spec.projection.as_ref()?)
}

/// Indexes an outcome that just became `final`, if it is an accepted answer to an eligible
/// question and no standing precedent answers its content yet.
pub fn on_final(state: &mut State, motion_id: &str) {
    if state.rules < crate::rules::PRECEDENTS {
        return;
    }
    let accepted = state
        .motions
        .get(motion_id)
        .is_some_and(|m| matches!(m.status, MotionStatus::Decided(Acceptance::Accepted { .. })));
    if !accepted {
        return;
    }
    if let Some(d) = digest_of(state, motion_id)
        && find(state, &d).is_none()
    {
        // The first final outcome of a content answers it; one that no longer stands
        // (overturned since) gives its place to this one.
        state.finality.precedents.insert(d, motion_id.to_owned());
    }
}

/// The final outcome that answers content `digest`, if one still stands final.
pub fn find(state: &State, digest: &str) -> Option<String> {
    let cited = state.finality.precedents.get(digest)?;
    let m = state.motions.get(cited)?;
    let stands = m
        .finality
        .as_ref()
        .is_some_and(|f| f.status == OutcomeStatus::Final);
    (stands && matches!(m.status, MotionStatus::Decided(Acceptance::Accepted { .. })))
        .then(|| cited.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible::motion::ProjectionItem;

    fn shown(text: &str) -> Projection {
        Projection {
            question: "Should the challenge be upheld?".into(),
            resolution: "R".into(),
            items: vec![ProjectionItem {
                label: "Challenged claim".into(),
                text: text.into(),
                side: None,
                citations: Vec::new(),
            }],
        }
    }

    #[test]
    fn the_digest_follows_the_content_and_the_kind_not_the_ids() {
        let a = Question::ResolveChallenge {
            challenge_id: "chl_1".into(),
        };
        let b = Question::ResolveChallenge {
            challenge_id: "chl_9".into(),
        };
        let d = digest(&a, &shown("x")).unwrap();
        assert_eq!(Some(d.clone()), digest(&b, &shown("x")));
        assert_ne!(Some(d.clone()), digest(&a, &shown("y")));
        let relevance = Question::AssignRelevance {
            thread_id: "t".into(),
            version_id: "v".into(),
        };
        assert_ne!(Some(d), digest(&relevance, &shown("x")));
        let advance = Question::AdvancePhase {
            from: "framing".into(),
        };
        assert_eq!(digest(&advance, &shown("x")), None);
    }
}
