//! The final panel (rule set [`FINAL_PANEL`](crate::rules::FINAL_PANEL); docs/PANEL.md
//! "The last word"): under a charter that names one, a debate question the ladder left
//! unanswered (`not_proven`) is put, in the same entry, to the widest fresh panel the
//! admitted pool can seat across all organisations: everyone who sat on the question before
//! and the debate's contributors stay off, arbiters sit under their registered stances
//! (not the debate's declarations, which the ladder has used up), and the answer stands
//! only with the charter's supermajority of the counted rulings, supported from both
//! stances by a pair of different organisation and lineage, and not carried by any one
//! organisation. Its answer is `final` at once, on its own motion and on the question's
//! not-proven one, with the route on record; when it reaches no supermajority the question
//! stays not proven and the charter's last-word authority, if any, may still decide it.

use crate::command::MotionSpec;
use crate::model::finality::{Finality, OutcomeStatus};
use crate::model::{ApplyCtx, MotionStatus, State};
use crate::reply::FinalPanelReply;
use crate::rules::acceptance::{Acceptance, Aggregation, Policy};

/// The most seats a final panel asks: wide enough to outweigh any one panel of the ladder,
/// bounded so a large pool does not make one motion cost every replica a round of hundreds.
pub const MAX_FINAL_SEATS: usize = 31;

/// The id counter the final panel's motion takes within its entry (`ApplyCtx::new_id`);
/// the pending questions a decision opens count from 1000.
const FINAL_PANEL_ID: u32 = 900;

/// After debate motion `motion_id` was decided and its status set: a final panel's own
/// motion makes its answer final (or leaves the question not proven); a motion that left
/// its question not proven gets its final panel when the charter names one. `settled`
/// says whether an accepted answer went into the document.
pub(super) fn after_decided(
    state: &mut State,
    ctx: &ApplyCtx,
    motion_id: &str,
    settled: bool,
) -> Option<FinalPanelReply> {
    if state.rules < crate::rules::FINAL_PANEL {
        return None;
    }
    let m = state.motions.get(motion_id)?;
    if let Some(of) = m.spec.final_panel_of.clone() {
        conclude(state, ctx, motion_id, &of, settled);
        return None;
    }
    let not_proven = m
        .finality
        .as_ref()
        .is_some_and(|f| f.status == OutcomeStatus::NotProven);
    let terms = state.charter.as_ref().and_then(|c| c.final_panel)?;
    if !not_proven || m.last_word.is_some() {
        return None;
    }
    Some(open(state, ctx, motion_id, terms.supermajority_milli))
}

/// Opens the final panel for the question `not_proven` left unanswered.
fn open(state: &mut State, ctx: &ApplyCtx, not_proven: &str, milli: u32) -> FinalPanelReply {
    let not_drawn = |reason: String| FinalPanelReply::NotDrawn { reason };
    let Some(m) = state.motions.get(not_proven) else {
        return not_drawn(format!("motion {not_proven} is not held"));
    };
    let Some(q) = m.spec.question.clone() else {
        return not_drawn(format!("motion {not_proven} asks no debate question"));
    };
    let debate_id = m.spec.debate_id.clone();
    let Some(rec) = state.debates.get(&debate_id) else {
        return not_drawn(format!("debate {debate_id} is not held"));
    };
    let mut kept_off = rec.sat_on(&q, |m| super::debates::seated_ids(state, m));
    kept_off.extend(super::debates::recused(state, rec));
    let kept_off: Vec<String> = kept_off.into_iter().collect();
    let eligible = state
        .arbiters
        .iter()
        .filter(|(id, a)| {
            a.admitted
                && a.revoked.is_none()
                && !a.recalibration.is_flagged()
                && kept_off.binary_search(id).is_err()
        })
        .count();
    let widest = eligible.min(MAX_FINAL_SEATS);
    let base = rec.seats;
    if widest < base {
        return not_drawn(format!(
            "only {eligible} admitted arbiter(s) have not sat on this question, fewer than the \
             debate's {base} seats; the question stays not proven"
        ));
    }
    let policy = Policy {
        quorum: None,
        independence: crate::rules::acceptance::Independence {
            declared_stances: false,
            without_any_organisation: true,
            ..rec.policy.independence
        },
        aggregation: Aggregation::Supermajority { milli },
        ..rec.policy.clone()
    };
    let motion_id = ctx.new_id("mot", FINAL_PANEL_ID);
    let spec = MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: debate_id.clone(),
        kind: m.spec.kind,
        state_hash: m.spec.state_hash.clone(),
        seats: widest,
        min_per_stance: rec.min_per_stance,
        contributors: kept_off,
        author_model_family: rec.author_family_for(&q),
        policy: Some(policy),
        question: Some(q.clone()),
        projection: m.spec.projection.clone(),
        expected: m.spec.expected,
        procedure: None,
        final_panel_of: Some(not_proven.to_owned()),
    };
    // The widest panel first, then one seat narrower at a time, down to the debate's own.
    let narrower: Vec<usize> = (base..widest).rev().collect();
    if let Err(e) = super::motion_open::open_laddered(state, ctx, &spec, &narrower) {
        return not_drawn(format!(
            "no panel of {base} to {widest} fresh seats could be drawn ({e}); the question \
             stays not proven"
        ));
    }
    let seats = state.motions.get(&motion_id).map_or(0, |m| m.seats.len());
    if let Some(rec) = state.debates.get_mut(&debate_id) {
        rec.questions.insert(motion_id.clone(), q);
    }
    FinalPanelReply::Opened { motion_id, seats }
}

/// The final panel `motion_id` (for not-proven `of`) was decided: an answer that went into
/// the document is final on both motions; otherwise the question stays not proven.
fn conclude(state: &mut State, ctx: &ApplyCtx, motion_id: &str, of: &str, settled: bool) {
    let Some(m) = state.motions.get(motion_id) else {
        return;
    };
    let MotionStatus::Decided(Acceptance::Accepted { tallies, .. }) = &m.status else {
        // Left not proven by `finality::on_decided`; the last word may still decide it.
        return;
    };
    let counted: usize = tallies.values().map(|t| t.yes + t.no).sum();
    let provisional = m
        .finality
        .as_ref()
        .map(|f| (f.final_at_ms, motion_id.to_owned()));
    if let Some(due) = provisional {
        state.finality.due.remove(&due);
    }
    let at = |status: OutcomeStatus, reason: String| Finality {
        status,
        final_at_ms: ctx.time_ms,
        appeal_id: None,
        reason,
        changed_log_index: ctx.log_index,
        changed_at_ms: ctx.time_ms,
    };
    let (own, question) = if settled {
        (
            at(
                OutcomeStatus::Final,
                format!(
                    "final: the final panel's supermajority of {counted} ruling(s) answered what \
                     the ladder left unanswered (motion {of})"
                ),
            ),
            Some(at(
                OutcomeStatus::Final,
                format!("final: answered by the final panel on motion {motion_id}"),
            )),
        )
    } else {
        (
            at(
                OutcomeStatus::NotProven,
                "no answer: the document refused the final panel's answer".to_owned(),
            ),
            None,
        )
    };
    if let Some(m) = state.motions.get_mut(motion_id) {
        m.finality = Some(own);
    }
    if let (Some(f), Some(m)) = (question, state.motions.get_mut(of)) {
        m.finality = Some(f);
    }
}
