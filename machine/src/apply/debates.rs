//! Debate commands: creating a debate, contributions, panel requests and verdicts; each
//! may open motions for the questions the document leaves pending.

use serde_json::{Value, json};

use super::motions::open_motion;
use super::{ApplyCtx, ApplyError, non_empty};
use crate::command::{ContributionSubmission, DebateSpec, MotionSpec, PanelRequest};
use crate::debates::{self, DebateError, DebateRecord, ToOpen};
use crate::model::State;

fn debate_mut<'a>(state: &'a mut State, id: &str) -> Result<&'a mut DebateRecord, ApplyError> {
    state
        .debates
        .get_mut(id)
        .ok_or_else(|| ApplyError::Debate(DebateError::UnknownDebate(id.to_string())))
}

pub(super) fn create_debate(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &DebateSpec,
) -> Result<Value, ApplyError> {
    non_empty("resolution", &spec.resolution)?;
    non_empty("convener", &spec.convener)?;
    let id = format!("deb_{}", state.debates.len() + 1);
    let rec = debates::create(
        &id,
        ctx.time_ms,
        crucible::model::NewDebate {
            resolution: spec.resolution.clone(),
            pos_a: spec.pos_a.clone(),
            pos_b: spec.pos_b.clone(),
            burden: spec.burden.clone(),
            claim_budget: spec.claim_budget,
        },
        spec.policy.clone().unwrap_or_default(),
        spec.seats.max(2),
        spec.min_per_stance.max(1),
        spec.simulation,
    );
    state.debates.insert(id.clone(), rec);
    Ok(json!({ "debate_id": id }))
}

pub(super) fn contribute(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    sub: &ContributionSubmission,
) -> Result<Value, ApplyError> {
    let authorship = crate::authorship::check(
        sub,
        state.contributors.get(&sub.author),
        client_id,
        request_id,
    )?;
    let rec = debate_mut(state, &sub.debate_id)?;
    let created = debates::contribute(
        rec,
        ctx.time_ms,
        &sub.author,
        &sub.side,
        sub.model_family.as_deref(),
        &sub.contribution,
        &sub.hints,
    )?;
    let signed_by = match authorship {
        crate::authorship::Authorship::Unsigned => None,
        crate::authorship::Authorship::Signed { public_key, bind } => {
            if bind {
                state.contributors.insert(
                    sub.author.clone(),
                    crate::authorship::AuthorKey {
                        public_key: public_key.clone(),
                        bound_at_log_index: ctx.log_index,
                    },
                );
            }
            Some(public_key)
        }
    };
    let opened = open_pending(state, ctx, &sub.debate_id);
    Ok(
        json!({ "debate_id": sub.debate_id, "created": created, "opened": opened, "signed_by": signed_by }),
    )
}

pub(super) fn ask_panel(
    state: &mut State,
    ctx: &ApplyCtx,
    req: &PanelRequest,
) -> Result<Value, ApplyError> {
    let rec = debate_mut(state, &req.debate_id)?;
    let to_open = rec.request(req.question.clone(), req.expected)?;
    let id = open_question(state, ctx, to_open, 0)?;
    let opened = open_pending(state, ctx, &req.debate_id);
    Ok(json!({ "debate_id": req.debate_id, "motion_id": id, "opened": opened }))
}

/// Opens a motion for one debate question: draws its panel from the admitted arbiters.
fn open_question(
    state: &mut State,
    ctx: &ApplyCtx,
    t: ToOpen,
    n: u32,
) -> Result<String, ApplyError> {
    let rec = state
        .debates
        .get(&t.debate_id)
        .ok_or_else(|| ApplyError::Debate(DebateError::UnknownDebate(t.debate_id.clone())))?;
    let motion_id = ctx.new_id("mot", n);
    let widen = rec.deadlocks.get(&t.question.key()).copied().unwrap_or(0) as usize;
    let spec = MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: t.debate_id.clone(),
        kind: t.kind,
        state_hash: t.state_hash.clone(),
        seats: rec.seats + 2 * widen,
        min_per_stance: rec.min_per_stance,
        contributors: rec.contributors.iter().cloned().collect(),
        author_model_family: rec.author_family_for(&t.question),
        policy: Some(rec.policy.clone()),
        question: Some(t.question.clone()),
        projection: Some(t.projection.clone()),
        expected: t.expected,
    };
    // A panel widened after a deadlock falls back to the debate's size when the pool of
    // admitted arbiters is too small for it.
    if let Err(e) = open_motion(state, ctx, &spec) {
        if widen == 0 {
            return Err(e);
        }
        let base = MotionSpec {
            seats: spec.seats - 2 * widen,
            ..spec
        };
        open_motion(state, ctx, &base)?;
    }
    if let Some(rec) = state.debates.get_mut(&t.debate_id) {
        rec.open.insert(t.question.key(), motion_id.clone());
        rec.questions.insert(motion_id.clone(), t.question);
    }
    Ok(motion_id)
}

/// Opens a motion for every question the document leaves pending. A question whose
/// panel cannot be drawn yet (too few admitted arbiters) stays pending and is tried
/// again after the next write.
pub(super) fn open_pending(state: &mut State, ctx: &ApplyCtx, debate_id: &str) -> Vec<String> {
    let Some(rec) = state.debates.get(debate_id) else {
        return Vec::new();
    };
    let mut opened = Vec::new();
    for (i, t) in rec.to_open().into_iter().enumerate() {
        if let Ok(id) = open_question(state, ctx, t, 1000 + i as u32) {
            opened.push(id);
        }
    }
    opened
}

/// Issues a fresh verdict from the current ledger.
pub(super) fn reissue_verdict(
    state: &mut State,
    ctx: &ApplyCtx,
    debate_id: &str,
    author: &str,
) -> Result<Value, ApplyError> {
    let rec = debate_mut(state, debate_id)?;
    let n = rec.reissue_verdict(ctx.time_ms, author);
    let opened = open_pending(state, ctx, debate_id);
    Ok(json!({ "debate_id": debate_id, "verdict": n, "opened": opened }))
}
