//! Debate questions answered by a final outcome on the same content, with no panel
//! (`crate::features::precedent`; docs/PANEL.md "Precedent"), and the settling of an accepted answer
//! that a panel's close shares.

use crate::debates::ToOpen;
use crate::model::motion::Precedent;
use crate::model::{ApplyCtx, EffectRefusal, Motion, MotionStatus, State};
use crate::reply::Settled;
use crate::rules::acceptance::{Acceptance, Outcome};

/// Answers the question `t` under `motion_id` by citing a final outcome when rule set 16
/// is in force, no fresh panel was asked for, the question is about content only and
/// that content has a final accepted answer: the motion goes on record decided, with the
/// cited verdict and the link, and the question is settled. `None` leaves it to a panel.
pub(super) fn cite(
    state: &mut State,
    ctx: &ApplyCtx,
    t: &ToOpen,
    motion_id: &str,
    fresh_panel: Option<&str>,
) -> Option<String> {
    // An empty index answers nothing: skip hashing the projection on every opening.
    if state.rules < crate::rules::PRECEDENTS
        || fresh_panel.is_some()
        || state.finality.precedents.is_empty()
    {
        return None;
    }
    let digest = crate::features::precedent::digest(&t.question, &t.projection)?;
    let cited = crate::features::precedent::find(state, &digest)?;
    let (verdict, confidence, cited_debate) = state
        .motions
        .get(&cited)
        .map(|m| (m.status.clone(), m.confidence, m.spec.debate_id.clone()))?;
    let MotionStatus::Decided(verdict @ Acceptance::Accepted { .. }) = verdict else {
        return None;
    };
    let rec = state.debates.get_mut(&t.debate_id)?;
    let spec = crate::command::MotionSpec {
        motion_id: motion_id.to_owned(),
        debate_id: t.debate_id.clone(),
        kind: t.kind,
        state_hash: t.state_hash.clone(),
        seats: 0,
        min_per_stance: rec.min_per_stance,
        contributors: Vec::new(),
        author_model_family: None,
        policy: Some(rec.policy.clone()),
        question: Some(t.question.clone()),
        projection: Some(t.projection.clone()),
        expected: t.expected,
        procedure: None,
        final_panel_of: None,
    };
    rec.questions
        .insert(motion_id.to_owned(), t.question.clone());
    state.motions.insert(
        motion_id.to_owned(),
        Motion {
            spec,
            seats: Vec::new(),
            draw_seed: 0,
            opened_at_ms: ctx.time_ms,
            opened_log_index: ctx.log_index,
            status: MotionStatus::Decided(verdict.clone()),
            rulings: Vec::new(),
            reveals: Vec::new(),
            decided_log_index: Some(ctx.log_index),
            round: None,
            independence: None,
            effect_refused: None,
            confidence,
            finality: None,
            beacon: None,
            precedent: Some(Precedent {
                motion_id: cited.clone(),
                debate_id: cited_debate,
                digest: crate::rules::hex_bytes::DigestBytes::from_hex(&digest),
            }),
            fresh_panel: None,
            last_word: None,
        },
    );
    if let Acceptance::Accepted { outcome, .. } = &verdict {
        let rationale = format!(
            "By precedent: motion {cited} decided the same question on the same content and \
             is final; no panel sat (ask with a fresh-panel reason to seat one)."
        );
        settle_answer(state, ctx, motion_id, outcome, &rationale);
    }
    crate::features::finality::on_decided(state, motion_id, (ctx.log_index, ctx.time_ms));
    Some(cited)
}

/// Settles a debate motion's question with an accepted `outcome`; an effect the engine
/// refuses is kept on the motion (docs/PANEL.md "Acceptance, in apply") and the outcome
/// stands.
pub(super) fn settle_answer(
    state: &mut State,
    ctx: &ApplyCtx,
    motion_id: &str,
    outcome: &Outcome,
    rationale: &str,
) -> Option<Settled> {
    let debate_id = state.motions.get(motion_id)?.spec.debate_id.clone();
    let rec = state.debates.get_mut(&debate_id)?;
    let settled = rec.settle(
        ctx.time_ms,
        motion_id,
        crate::debates::answer_of(outcome),
        rationale.trim(),
    );
    Some(match settled {
        Ok(()) => Settled::Settled(true),
        Err(e) => {
            if state.rules >= crate::rules::CHECKED_ADVANCES
                && let Some(m) = state.motions.get_mut(motion_id)
            {
                m.effect_refused = Some(EffectRefusal {
                    code: e.code().as_str().to_owned(),
                    message: e.to_string(),
                });
            }
            Settled::Refused {
                refused: e.to_string(),
            }
        }
    })
}
