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
    let floors = crate::charter::floors(state.charter.as_ref());
    let policy = spec.policy.clone().unwrap_or_default();
    crate::charter::check_policy(&floors, &policy, spec.min_per_stance)?;
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
        policy,
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
    // Under a charter a name is never claimed on first use: it must be registered
    // (RegisterContributor) and the write signed by its key.
    if state.charter.is_some()
        && !state.arbiters.contains(&sub.author)
        && !matches!(
            authorship,
            crate::authorship::Authorship::Signed { bind: false, .. }
        )
    {
        return Err(
            crate::charter::CharterRuleError::UnregisteredContributor(sub.author.clone()).into(),
        );
    }
    // A registered arbiter's id is not a free name: only that arbiter's key may write
    // under it, so nobody can borrow an arbiter's name (docs/SECURITY.md).
    if let Some(arbiter) = state.arbiters.get(&sub.author) {
        let by_arbiter = matches!(&authorship,
            crate::authorship::Authorship::Signed { public_key, .. } if arbiter.holds_or_held(public_key));
        if !by_arbiter {
            return Err(crate::authorship::AuthorshipError::ArbiterName {
                author: sub.author.clone(),
            }
            .into());
        }
    }
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
    if let crate::authorship::Authorship::Signed { public_key, .. } = &authorship {
        rec.contributor_keys.insert(public_key.clone());
    }
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

/// The arbiters recused from a debate's panels: those holding, or having held, a key that
/// signed a contribution to it.
fn recused(state: &State, rec: &DebateRecord) -> Vec<String> {
    if rec.contributor_keys.is_empty() {
        return Vec::new();
    }
    state
        .arbiters
        .iter()
        .filter(|(_, a)| rec.contributor_keys.iter().any(|k| a.holds_or_held(k)))
        .map(|(id, _)| id.clone())
        .collect()
}

/// Open motions a debate may hold before panel requests are refused: each open motion
/// costs every replica memory and the driver a round, so a flood of `AskPanel` must not
/// open them without bound.
pub const MAX_OPEN_MOTIONS_PER_DEBATE: usize = 64;

pub(super) fn ask_panel(
    state: &mut State,
    ctx: &ApplyCtx,
    req: &PanelRequest,
) -> Result<Value, ApplyError> {
    let rec = debate_mut(state, &req.debate_id)?;
    if rec.open.len() >= MAX_OPEN_MOTIONS_PER_DEBATE {
        return Err(ApplyError::TooManyOpenMotions {
            debate: req.debate_id.clone(),
            open: rec.open.len(),
            max: MAX_OPEN_MOTIONS_PER_DEBATE,
        });
    }
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
        contributors: recused(state, rec),
        author_model_family: rec.author_family_for(&t.question),
        policy: Some(rec.policy.clone()),
        question: Some(t.question.clone()),
        projection: Some(t.projection.clone()),
        expected: t.expected,
        procedure: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ClientCommand, ItemReply};
    use ed25519_dalek::SigningKey;
    use serde_json::json;

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn write(state: &mut State, n: u64, command: ClientCommand) -> ItemReply {
        crate::apply::write_one(state, n, command.into())
    }

    fn definition(author: &str, signer: Option<(u8, u64)>) -> ClientCommand {
        let mut sub: ContributionSubmission = serde_json::from_value(json!({
            "debate_id": "deb_1", "author": author, "side": "A",
            "contribution": {"op": "definition", "term": "harm", "definition": "Measurable loss of welfare."},
        }))
        .expect("submission");
        if let Some((k, n)) = signer {
            sub.signature = Some(crate::authorship::sign(&key(k), &sub, "t", n).expect("sign"));
        }
        ClientCommand::Contribute(sub)
    }

    /// Two arbiters and a debate.
    fn setup() -> State {
        let mut s = State::default();
        for (n, (id, stance)) in [("a1", "A"), ("b1", "B")].into_iter().enumerate() {
            let reg = serde_json::from_value(json!({
                "arbiter_id": id,
                "public_key": hex::encode(key(n as u8 + 1).verifying_key().to_bytes()),
                "organisation": format!("org-{id}"), "model_family": format!("fam-{id}"),
                "stance": stance,
            }))
            .expect("registration");
            let r = write(&mut s, n as u64 + 1, ClientCommand::RegisterArbiter(reg));
            assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        }
        let spec = serde_json::from_value(json!({
            "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
            "seats": 2, "min_per_stance": 1, "convener": "c",
        }))
        .expect("debate");
        let r = write(&mut s, 3, ClientCommand::CreateDebate(spec));
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        s
    }

    /// A name proves nothing: writes under an arbiter's id that its key did not sign are
    /// refused, so nobody can get honest arbiters recused by borrowing their names.
    #[test]
    fn a_borrowed_arbiter_name_is_refused_and_recuses_nobody() {
        let mut s = setup();
        let unsigned = write(&mut s, 10, definition("b1", None));
        assert!(
            matches!(&unsigned, ItemReply::Refused { code, message } if code == "authorship" && message.contains("registered arbiter")),
            "{unsigned:?}"
        );
        let foreign = write(&mut s, 11, definition("a1", Some((9, 11))));
        assert!(
            matches!(&foreign, ItemReply::Refused { code, .. } if code == "authorship"),
            "{foreign:?}"
        );
        let rec = s.debates.get("deb_1").expect("debate");
        assert!(recused(&s, rec).is_empty());
    }

    /// Recusal follows keys: an arbiter that signed a contribution, under its own id or
    /// under any other name, is not drawn for the debate; an unsigned contributor name that
    /// happens to equal no arbiter's key recuses nobody.
    #[test]
    fn recusal_is_keyed_to_the_signing_key() {
        let mut s = setup();
        let own = write(&mut s, 10, definition("a1", Some((1, 10))));
        assert!(matches!(own, ItemReply::Applied(_)), "{own:?}");
        let other_name = write(&mut s, 11, definition("bob", Some((2, 11))));
        assert!(
            matches!(other_name, ItemReply::Applied(_)),
            "{other_name:?}"
        );
        let anonymous = write(&mut s, 12, definition("carol", None));
        assert!(matches!(anonymous, ItemReply::Applied(_)), "{anonymous:?}");
        let rec = s.debates.get("deb_1").expect("debate");
        assert_eq!(recused(&s, rec), vec!["a1".to_string(), "b1".to_string()]);
    }

    /// A debate holding the most open motions refuses further panel requests with the
    /// limit named, and nothing changes.
    #[test]
    fn panel_requests_stop_at_the_open_motion_cap() {
        let mut s = setup();
        let rec = s.debates.get_mut("deb_1").expect("debate");
        for i in 0..MAX_OPEN_MOTIONS_PER_DEBATE {
            rec.open.insert(format!("q{i}"), format!("m{i}"));
        }
        let ask: PanelRequest = serde_json::from_value(json!({
            "debate_id": "deb_1", "author": "x",
            "question": {"kind": "merge", "threadId": "t1", "versionId": "v1"},
        }))
        .expect("request");
        let r = write(&mut s, 20, ClientCommand::AskPanel(ask));
        assert!(
            matches!(&r, ItemReply::Refused { code, message } if code == "too_many_open_motions" && message.contains("64")),
            "{r:?}"
        );
        assert_eq!(s.debates.get("deb_1").expect("debate").open.len(), 64);
    }
}
