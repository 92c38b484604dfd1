//! Debate commands: creating a debate, contributions, panel requests and verdicts; each
//! may open motions for the questions the document leaves pending.

use crate::apply::error::{ApplyError, non_empty};
use crate::command::{ContributionSubmission, DebateSpec, MotionSpec, PanelRequest};
use crate::debates::{self, DebateError, DebateRecord, ToOpen};
use crate::model::ApplyCtx;
use crate::model::State;
use crate::reply::{AskPanelReply, ContributeReply, CreateDebateReply, ReissueVerdictReply, Reply};

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
) -> Result<Reply, ApplyError> {
    non_empty("resolution", &spec.resolution)?;
    non_empty("convener", &spec.convener)?;
    let floors = crate::features::charter_rules::floors(state.charter.as_ref());
    let standing = state.rules >= crate::rules::STANDING_STANCES;
    let policy = match &spec.policy {
        Some(p) => p.clone(),
        // A chartered group's raw debate never falls back to the head-count rule.
        None if standing && state.charter.is_some() => {
            crate::rules::acceptance::Policy::independent()
        }
        None => crate::rules::acceptance::Policy::default(),
    };
    crate::features::charter_rules::check_policy(&floors, &policy, spec.min_per_stance)?;
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
    Ok(Reply::from(CreateDebateReply { debate_id: id }))
}

pub(super) fn contribute(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    sub: &ContributionSubmission,
) -> Result<Reply, ApplyError> {
    let authorship = crate::authorship::check(
        sub,
        state.contributors.get(&sub.author),
        client_id,
        request_id,
        ctx.memo,
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
            crate::features::charter_rules::CharterRuleError::UnregisteredContributor(
                sub.author.clone(),
            )
            .into(),
        );
    }
    // A registered arbiter's id is not a free name: only that arbiter's key may write
    // under it, so nobody can borrow an arbiter's name (docs/SECURITY.md).
    if let Some(arbiter) = state.arbiters.get(&sub.author) {
        let by_arbiter = matches!(&authorship,
            crate::authorship::Authorship::Signed { public_key, .. } if arbiter.holds_or_held(&public_key.to_hex()));
        if !by_arbiter {
            return Err(crate::authorship::AuthorshipError::ArbiterName {
                author: sub.author.clone(),
            }
            .into());
        }
    }
    crate::features::sample_appeals::check(sub, state.rules)?;
    let quote = appeal_quote(state, ctx, sub)?;
    let rec = debate_mut(state, &sub.debate_id)?;
    let appeals_before = rec.debate.appeals.len();
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
    let filed: Vec<String> = state
        .debates
        .get(&sub.debate_id)
        .map(|r| {
            r.debate
                .appeals
                .iter()
                .skip(appeals_before)
                .map(|a| a.id.clone())
                .collect()
        })
        .unwrap_or_default();
    let at = (ctx.log_index, ctx.time_ms);
    let appeal_deposit = match (quote, filed.first()) {
        (Some(q), Some(appeal_id)) => Some(crate::features::appeal_credits::charge(
            state,
            at,
            &sub.debate_id,
            appeal_id,
            &sub.author,
            q,
        )),
        _ => None,
    };
    if sub.random_sample
        && let Some(rec) = state.debates.get_mut(&sub.debate_id)
    {
        rec.sample_appeals.extend(filed.iter().cloned());
    }
    for appeal_id in filed {
        crate::features::finality::on_appeal_filed(state, &sub.debate_id, &appeal_id, at);
    }
    let opened = open_pending(state, ctx, &sub.debate_id);
    Ok(Reply::from(ContributeReply {
        debate_id: sub.debate_id.clone(),
        created,
        opened,
        signed_by,
        appeal_deposit,
    }))
}

/// What an appeal will cost its appellant's organisation, checked before the document
/// changes so a refusal changes nothing (`appeal_credits`; docs/PANEL.md "Funded
/// appeals"). The appeal's round is its place among the debate's appeals.
fn appeal_quote(
    state: &State,
    ctx: &ApplyCtx,
    sub: &ContributionSubmission,
) -> Result<Option<crate::features::appeal_credits::Quote>, ApplyError> {
    if !matches!(
        sub.contribution,
        crucible::contribution::Contribution::Appeal { .. }
    ) {
        return Ok(None);
    }
    // An unknown debate is refused by the caller, naming it.
    let Some(rec) = state.debates.get(&sub.debate_id) else {
        return Ok(None);
    };
    let round = u32::try_from(rec.debate.appeals.len() + 1).unwrap_or(u32::MAX);
    Ok(crate::features::appeal_credits::quote(
        state,
        ctx.time_ms,
        &sub.debate_id,
        &sub.author,
        round,
    )?)
}

/// The ids of the arbiters seated on motion `motion_id` (none when it is not held).
pub(super) fn seated_ids(state: &State, motion_id: &str) -> Vec<String> {
    state
        .motions
        .get(motion_id)
        .map(|m| m.seats.iter().map(|s| s.arbiter_id.clone()).collect())
        .unwrap_or_default()
}

/// The arbiters recused from a debate's panels: those holding, or having held, a key that
/// signed a contribution to it.
pub(super) fn recused(state: &State, rec: &DebateRecord) -> Vec<String> {
    if rec.contributor_keys.is_empty() {
        return Vec::new();
    }
    state
        .arbiters
        .iter()
        .filter(|(_, a)| {
            rec.contributor_keys
                .iter()
                .any(|k| a.holds_or_held(&k.to_hex()))
        })
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
) -> Result<Reply, ApplyError> {
    crate::features::breakers::refuse_if_paused(state, crate::log::breaker_order::Scope::Motions)?;
    if let crucible::motion::Question::AdvancePhase { from } = &req.question
        && from == crucible::document::phase::ADJUDICATION
    {
        crate::features::breakers::refuse_if_paused(
            state,
            crate::log::breaker_order::Scope::Verdicts,
        )?;
    }
    if let Some(reason) = &req.fresh_panel {
        non_empty("fresh_panel", reason)?;
    }
    let checked_advances = state.rules >= crate::rules::CHECKED_ADVANCES;
    let concluded_reviews = state.rules >= crate::rules::CONCLUDED_REVIEWS;
    let rec = debate_mut(state, &req.debate_id)?;
    if rec.open.len() >= MAX_OPEN_MOTIONS_PER_DEBATE {
        return Err(ApplyError::TooManyOpenMotions {
            debate: req.debate_id.clone(),
            open: rec.open.len(),
            max: MAX_OPEN_MOTIONS_PER_DEBATE,
        });
    }
    if checked_advances && let crucible::motion::Question::AdvancePhase { from } = &req.question {
        if concluded_reviews && from == crucible::document::phase::APPEAL_REVIEW {
            rec.check_conclude()?;
        } else {
            rec.check_advance(from)?;
        }
    }
    let to_open = rec.request(req.question.clone(), req.expected)?;
    let id = open_question(state, ctx, to_open, 0, req.fresh_panel.as_deref())?;
    let opened = open_pending(state, ctx, &req.debate_id);
    let precedent = state
        .motions
        .get(&id)
        .and_then(|m| m.precedent.as_ref().map(|p| p.motion_id.clone()));
    Ok(Reply::from(AskPanelReply {
        debate_id: req.debate_id.clone(),
        motion_id: id,
        opened,
        precedent,
    }))
}

/// Asks `question` of `debate_id` again after its motion was withdrawn (a removal,
/// `federation.rs`): the questions the document asks reopen by themselves
/// ([`open_pending`]); one a client asked (`AskPanel`) is requested again against the
/// document as it is now, and skipped if the document no longer asks it. The `k`-th
/// withdrawal of one entry numbers its new motions apart from every other's. Returns
/// every motion opened.
pub(super) fn reask(
    state: &mut State,
    ctx: &ApplyCtx,
    debate_id: &str,
    question: &crucible::motion::Question,
    expected: Option<crucible::motion::Answer>,
    k: usize,
) -> Vec<String> {
    // Pending questions take ids 1000 + first + i, i far below 999 (the per-debate cap of
    // open motions bounds each pass); each withdrawal gets a block of 1000 and the asked
    // question its block's last id.
    let block = k.saturating_mul(1000);
    let mut opened = open_pending_from(state, ctx, debate_id, block);
    let Some(rec) = state.debates.get_mut(debate_id) else {
        return opened;
    };
    if rec.open.contains_key(&question.key()) || rec.settled.contains(&question.key()) {
        return opened;
    }
    let Ok(to_open) = rec.request(question.clone(), expected) else {
        return opened;
    };
    let n = u32::try_from(1000 + block + 999).unwrap_or(u32::MAX);
    if let Ok(id) = open_question(state, ctx, to_open, n, None) {
        opened.push(id);
    }
    opened
}

/// Why a debate question got no motion.
enum NotOpened {
    /// The pool cannot seat a panel yet (too few admitted arbiters): asked again after the
    /// next write.
    Wait(ApplyError),
    /// The pool could seat a panel, but none disjoint from the arbiters who sat on what
    /// the question contests (`fresh_panel`): the question ends with a named outcome.
    NoFreshPanel { contested_sitters: usize },
}

impl From<NotOpened> for ApplyError {
    fn from(n: NotOpened) -> ApplyError {
        match n {
            NotOpened::Wait(e) => e,
            NotOpened::NoFreshPanel { contested_sitters } => {
                ApplyError::NoFreshPanel { contested_sitters }
            }
        }
    }
}

/// Opens a motion for one debate question: draws its panel from the admitted arbiters,
/// fresh and wider for a re-ask or an appeal (`fresh_panel`), falling back to the
/// debate's size when the pool is too small for the wider panel.
fn open_question(
    state: &mut State,
    ctx: &ApplyCtx,
    t: ToOpen,
    n: u32,
    fresh_panel: Option<&str>,
) -> Result<String, NotOpened> {
    // A paused federation opens nothing; the question waits for the pause to end.
    crate::features::breakers::refuse_if_paused(state, crate::log::breaker_order::Scope::Motions)
        .map_err(|e| NotOpened::Wait(e.into()))?;
    if state.debates.get(&t.debate_id).is_none() {
        return Err(NotOpened::Wait(ApplyError::Debate(
            DebateError::UnknownDebate(t.debate_id.clone()),
        )));
    }
    let motion_id = ctx.new_id("mot", n);
    if super::precedent::cite(state, ctx, &t, &motion_id, fresh_panel).is_some() {
        return Ok(motion_id);
    }
    let rec = state.debates.get(&t.debate_id).ok_or_else(|| {
        NotOpened::Wait(ApplyError::Debate(DebateError::UnknownDebate(
            t.debate_id.clone(),
        )))
    })?;
    let contested = rec.contested_sitters(&t.question, state.v2_rules, |m| seated_ids(state, m));
    let mut excluded = recused(state, rec);
    let unfresh_excluded = excluded.clone();
    excluded.extend(contested.iter().cloned());
    let mut sizes = rec.seat_ladder(&t.question, state.rules, state.v2_rules);
    sizes.push(rec.seats);
    let spec = MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: t.debate_id.clone(),
        kind: t.kind,
        state_hash: t.state_hash.clone(),
        seats: sizes[0],
        min_per_stance: rec.min_per_stance,
        contributors: excluded,
        author_model_family: rec.author_family_for(&t.question),
        policy: Some(crate::features::sample_appeals::drawing_policy(
            rec,
            &t.question,
        )),
        question: Some(t.question.clone()),
        projection: Some(t.projection.clone()),
        expected: t.expected,
        procedure: None,
        final_panel_of: None,
    };
    let base_seats = rec.seats;
    if let Err(e) = super::motion_open::open_laddered(state, ctx, &spec, &sizes[1..]) {
        let unfresh = MotionSpec {
            seats: base_seats,
            contributors: unfresh_excluded,
            ..spec
        };
        return Err(refusal(state, ctx, &unfresh, contested.len(), e));
    }
    if let Some(rec) = state.debates.get_mut(&t.debate_id) {
        rec.open.insert(t.question.key(), motion_id.clone());
        rec.questions.insert(motion_id.clone(), t.question);
    }
    if let (Some(reason), Some(m)) = (fresh_panel, state.motions.get_mut(&motion_id)) {
        m.fresh_panel = Some(reason.to_owned());
    }
    Ok(motion_id)
}

/// A failed draw is a lack of fresh arbiters only if the same panel at the base size
/// (`unfresh`) could be seated with the contested sitters allowed back.
fn refusal(
    state: &State,
    ctx: &ApplyCtx,
    unfresh: &MotionSpec,
    contested_sitters: usize,
    e: ApplyError,
) -> NotOpened {
    if contested_sitters > 0 && super::motion_open::can_seat(state, ctx, unfresh) {
        NotOpened::NoFreshPanel { contested_sitters }
    } else {
        NotOpened::Wait(e)
    }
}

/// Opens a motion for every question the document leaves pending. A question whose
/// panel cannot be drawn yet (too few admitted arbiters) stays pending and is tried
/// again after the next write.
pub(super) fn open_pending(state: &mut State, ctx: &ApplyCtx, debate_id: &str) -> Vec<String> {
    open_pending_from(state, ctx, debate_id, 0)
}

/// [`open_pending`], numbering the new motions' ids from `first`, for an entry that opens
/// the pending questions of several debates (each debate its own block of ids).
fn open_pending_from(
    state: &mut State,
    ctx: &ApplyCtx,
    debate_id: &str,
    first: usize,
) -> Vec<String> {
    let mut opened: Vec<String> = Vec::new();
    // A question answered by precedent is settled at once and may leave the document with
    // new questions; each pass settles at least one, so the passes are bounded.
    for _ in 0..MAX_OPEN_MOTIONS_PER_DEBATE {
        let pass = open_pending_once(state, ctx, debate_id, first + opened.len());
        let cited = pass
            .iter()
            .any(|id| state.motions.get(id).is_some_and(|m| m.precedent.is_some()));
        opened.extend(pass);
        if !cited {
            break;
        }
    }
    opened
}

/// One pass of [`open_pending`]; `first` numbers its motion ids after the earlier passes'.
fn open_pending_once(
    state: &mut State,
    ctx: &ApplyCtx,
    debate_id: &str,
    first: usize,
) -> Vec<String> {
    let appeals_wait = state.rules >= crate::rules::APPEALS_WAIT;
    let Some(rec) = state.debates.get(debate_id) else {
        return Vec::new();
    };
    let mut opened = Vec::new();
    for (i, t) in rec.to_open().into_iter().enumerate() {
        let question = t.question.clone();
        match open_question(state, ctx, t, 1000 + (first + i) as u32, None) {
            Ok(id) => {
                if let Some(rec) = state.debates.get_mut(debate_id) {
                    rec.waiting.remove(&question.key());
                }
                opened.push(id)
            }
            Err(NotOpened::Wait(_)) => {}
            Err(NotOpened::NoFreshPanel { contested_sitters })
                if appeals_wait
                    && matches!(question, crucible::motion::Question::AdmitAppeal { .. }) =>
            {
                if let Some(rec) = state.debates.get_mut(debate_id) {
                    let reason =
                        crate::features::fresh_panel::waiting_reason(debate_id, contested_sitters);
                    rec.waiting.insert(question.key(), reason);
                }
            }
            Err(NotOpened::NoFreshPanel { contested_sitters }) => {
                if let Some(rec) = state.debates.get_mut(debate_id) {
                    let reason = crate::features::fresh_panel::exhausted_reason(
                        &question,
                        contested_sitters,
                    );
                    // A refused denial leaves the question given up; either way it ends.
                    let _ = rec.exhaust(ctx.time_ms, &question, &reason);
                }
            }
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
) -> Result<Reply, ApplyError> {
    crate::features::breakers::refuse_if_paused(state, crate::log::breaker_order::Scope::Verdicts)?;
    let checked = state.rules >= crate::rules::CHECKED_ADVANCES;
    let rec = debate_mut(state, debate_id)?;
    if checked {
        rec.check_reissue()?;
    }
    let n = rec.reissue_verdict(ctx.time_ms, author);
    let opened = open_pending(state, ctx, debate_id);
    Ok(Reply::from(ReissueVerdictReply {
        debate_id: debate_id.to_owned(),
        verdict: n,
        opened,
    }))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::command::{ClientCommand, ItemReply};
    use ed25519_dalek::SigningKey;
    use serde_json::json;

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    pub(in crate::apply) fn write(
        state: &mut State,
        n: u64,
        command: ClientCommand,
    ) -> ItemReply<crate::reply::Reply> {
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

    /// A pool of ten admitted arbiters (five per stance, two organisations) and a debate
    /// of four seats.
    pub(in crate::apply) fn ten_admitted() -> State {
        let mut s = State::default();
        for n in 0..10u8 {
            let (id, stance) = if n < 5 {
                (format!("a{n}"), "A")
            } else {
                (format!("b{n}"), "B")
            };
            let reg = serde_json::from_value(json!({
                "arbiter_id": id,
                "public_key": hex::encode(key(n + 1).verifying_key().to_bytes()),
                "organisation": if n % 2 == 0 { "north" } else { "south" },
                "model_family": format!("fam-{n}"), "stance": stance,
            }))
            .expect("registration");
            let r = write(
                &mut s,
                2 * n as u64 + 1,
                ClientCommand::RegisterArbiter(reg),
            );
            assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
            let admit = crate::command::TestCommand::SetAdmission {
                arbiter_id: id,
                admitted: true,
                score_milli: 900,
            };
            let r = crate::apply::write_one(&mut s, 2 * n as u64 + 2, admit.into());
            assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        }
        let spec = serde_json::from_value(json!({
            "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
            "seats": 4, "min_per_stance": 1, "convener": "c",
        }))
        .expect("debate");
        let r = write(&mut s, 30, ClientCommand::CreateDebate(spec));
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        s
    }

    fn seats_of(s: &State, reply: &ItemReply<crate::reply::Reply>) -> Vec<String> {
        let ItemReply::Applied(v) = reply else {
            panic!("refused: {reply:?}")
        };
        let json = v.to_json();
        seated(s, json["motion_id"].as_str().expect("motion id"))
    }

    /// The arbiters seated on motion `id`.
    pub(in crate::apply) fn seated(s: &State, id: &str) -> Vec<String> {
        s.motions
            .get(id)
            .expect("motion")
            .seats
            .iter()
            .map(|seat| seat.arbiter_id.clone())
            .collect()
    }

    /// After a deadlock a question goes to a panel two seats wider and disjoint from every
    /// arbiter who sat on it before; when the pool can seat a panel but no fresh one, the
    /// request is refused by name, and a pending question so stuck ends with its reason on
    /// the record rather than waiting for ever.
    #[test]
    fn a_re_ask_goes_to_a_fresh_wider_panel_or_ends_by_name() {
        let mut s = ten_admitted();
        let q: crucible::motion::Question =
            serde_json::from_value(json!({"kind": "advance-phase", "from": "framing"}))
                .expect("question");
        let ask = |n: u64, s: &mut State| {
            let req: PanelRequest = serde_json::from_value(json!({
                "debate_id": "deb_1", "author": "x",
                "question": {"kind": "advance-phase", "from": "framing"},
            }))
            .expect("request");
            write(s, n, ClientCommand::AskPanel(req))
        };
        let deadlock = |s: &mut State| {
            let rec = s.debates.get_mut("deb_1").expect("debate");
            rec.open.remove(&q.key());
            *rec.deadlocks.entry(q.key()).or_default() += 1;
        };
        let first = ask(40, &mut s);
        let first_seats = seats_of(&s, &first);
        assert_eq!(first_seats.len(), 4);
        deadlock(&mut s);
        let second = ask(41, &mut s);
        let second_seats = seats_of(&s, &second);
        assert_eq!(second_seats.len(), 6, "not two seats wider");
        assert!(
            second_seats.iter().all(|a| !first_seats.contains(a)),
            "{first_seats:?} sat again in {second_seats:?}"
        );
        // All ten have sat: a pool that could seat four cannot seat a fresh panel.
        deadlock(&mut s);
        let third = ask(42, &mut s);
        assert!(
            matches!(&third, ItemReply::Refused { code, message } if code == "no_fresh_panel" && message.contains("10 arbiter")),
            "{third:?}"
        );
        let rec = s.debates.get_mut("deb_1").expect("debate");
        let reason = crate::features::fresh_panel::exhausted_reason(&q, 10);
        rec.exhaust(0, &q, &reason).expect("given up");
        assert!(rec.settled.contains(&q.key()));
        assert_eq!(rec.exhausted.get(&q.key()), Some(&reason));
    }

    fn ask_advance(s: &mut State, n: u64, from: &str) -> ItemReply<crate::reply::Reply> {
        let req: PanelRequest = serde_json::from_value(json!({
            "debate_id": "deb_1", "author": "x",
            "question": {"kind": "advance-phase", "from": from},
        }))
        .expect("request");
        write(s, n, ClientCommand::AskPanel(req))
    }

    /// From rule set `CHECKED_ADVANCES` a panel is asked to advance a phase only when the
    /// engine would apply its yes: walked over every phase with the prerequisites unmet
    /// (refused with the engine's code and reason, nothing opened) and with them met.
    #[test]
    fn an_advance_whose_prerequisites_fail_is_refused_before_a_panel_is_asked() {
        use crucible::document::phase;
        // (phase, its prerequisite met by an empty debate, the refusal otherwise)
        let walk: [(&str, Option<(&str, &str)>); 8] = [
            (
                phase::FRAMING,
                Some(("PHASE_PREREQ_UNMET", "both positions")),
            ),
            (
                phase::CONSTRUCTION,
                Some(("PHASE_PREREQ_UNMET", "merged claim")),
            ),
            (phase::CHALLENGE, None),
            (phase::STEELMAN, Some(("PHASE_PREREQ_UNMET", "certified"))),
            (phase::ADJUDICATION, None),
            (
                phase::VERDICT,
                Some(("PHASE_PREREQ_UNMET", "issue a verdict")),
            ),
            (phase::CLOSED, Some(("PHASE_TERMINAL", "closed"))),
            (
                phase::APPEAL_REVIEW,
                Some(("PHASE_NOT_ADVANCEABLE", "concluding the appeal")),
            ),
        ];
        for (n, (at, refusal)) in walk.into_iter().enumerate() {
            let mut s = ten_admitted();
            s.rules = crate::rules::CHECKED_ADVANCES;
            let rec = s.debates.get_mut("deb_1").expect("debate");
            rec.debate.phase = at.into();
            if at == phase::FRAMING {
                rec.debate.positions.b.clear();
            }
            let before = s.motions.len();
            let r = ask_advance(&mut s, 40 + n as u64, at);
            match refusal {
                Some((code, why)) => {
                    assert!(
                        matches!(&r, ItemReply::Refused { code: c, message }
                            if c == code && message.contains(why)
                                && message.contains("panel debate show deb_1")),
                        "{at}: {r:?}"
                    );
                    assert_eq!(s.motions.len(), before, "{at}: a motion opened");
                }
                None => assert!(matches!(r, ItemReply::Applied(_)), "{at}: {r:?}"),
            }
        }
        // Asked from a phase the debate is not in.
        let mut s = ten_admitted();
        s.rules = crate::rules::CHECKED_ADVANCES;
        let r = ask_advance(&mut s, 50, phase::CHALLENGE);
        assert!(
            matches!(&r, ItemReply::Refused { code, message }
                if code == "PHASE_NOT_ADVANCEABLE" && message.contains("is in framing, not challenge")),
            "{r:?}"
        );
        // Before the rule set the request opens a motion as it always did.
        let mut s = ten_admitted();
        let r = ask_advance(&mut s, 51, phase::CHALLENGE);
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
    }

    /// A seated arbiter's yes to `m` at 0.9, signed, committed and revealed (hex `Reveal`).
    fn yes_reveal(m: &crate::model::Motion, arbiter: &str) -> String {
        reveal(m, arbiter, true)
    }

    /// A seated arbiter's answer to `m` (yes at 0.9, or no at 0.1), signed, committed and
    /// revealed (hex `Reveal`).
    fn reveal(m: &crate::model::Motion, arbiter: &str, yes: bool) -> String {
        use panel_proto::pb;
        use prost::Message;
        let n: u8 = arbiter[1..].parse().expect("seat number");
        let k = key(n + 1);
        let ruling = pb::Ruling {
            motion_id: m.spec.motion_id.clone(),
            debate_id: m.spec.debate_id.clone(),
            kind: crate::rules::ruling::wire_kind(m.spec.kind) as i32,
            state_hash: m
                .spec
                .state_hash
                .bytes()
                .expect("hex state hash")
                .into_owned(),
            decision: {
                let kind = crate::rules::ruling::wire_kind(m.spec.kind);
                let (y, n) = panel_proto::ruling_check::binary_pair(kind).expect("a yes/no kind");
                if yes { y } else { n }
            } as i32,
            probability: if yes { 0.9 } else { 0.1 },
            rationale: "test ruling".into(),
            issued_at_unix_ms: 1,
            ..Default::default()
        };
        let signed = panel_proto::sign_ruling(&k, ruling).expect("sign");
        let salt = [n; 32];
        let commitment = panel_proto::commit_reveal::commit(&k, &signed, &salt, 1).expect("commit");
        hex::encode(
            pb::Reveal {
                signed_ruling: Some(signed),
                salt: salt.to_vec(),
                commitment: Some(commitment),
            }
            .encode_to_vec(),
        )
    }

    /// An accepted yes whose effect the engine refuses (the prerequisite failed after the
    /// panel was asked) stays on record as accepted, with the refusal on the motion, and
    /// carries how sure the panel was.
    #[test]
    fn an_accepted_outcome_whose_effect_is_refused_says_so_on_the_motion() {
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        let r = ask_advance(&mut s, 40, "framing");
        let ItemReply::Applied(v) = &r else {
            panic!("{r:?}")
        };
        let motion_id = v.to_json()["motion_id"].as_str().expect("id").to_owned();
        let m = s.motions.get(&motion_id).expect("motion").clone();
        // The prerequisite stops holding while the panel deliberates.
        s.debates
            .get_mut("deb_1")
            .expect("debate")
            .debate
            .positions
            .b
            .clear();
        let reveals: Vec<crate::rules::hex_bytes::RevealBytes> = m
            .seats
            .iter()
            .map(|seat| yes_reveal(&m, &seat.arbiter_id).into())
            .collect();
        let outcome: crate::command::OutcomeSubmission =
            serde_json::from_value(json!({ "motion_id": motion_id, "reveals": reveals }))
                .expect("outcome");
        let r = crate::apply::write_one(
            &mut s,
            60,
            crate::command::InternalCommand::RecordOutcome(outcome).into(),
        );
        assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
        let m = s.motions.get(&motion_id).expect("motion");
        assert!(
            matches!(&m.status, crate::model::MotionStatus::Decided(a) if a.is_accepted()),
            "{:?}",
            m.status
        );
        let refused = m
            .effect_refused
            .as_ref()
            .expect("the refusal on the motion");
        assert_eq!(refused.code, "PHASE_PREREQ_UNMET");
        assert!(refused.message.contains("both positions"), "{refused:?}");
        let sure = m.confidence.expect("how sure");
        assert_eq!(sure.probability_milli, 900);
        assert_eq!(sure.rulings, m.seats.len() as u32);
        assert!(sure.low_milli < 900 && sure.high_milli > 900, "{sure:?}");
        assert_eq!(
            s.debates.get("deb_1").expect("debate").debate.phase,
            "framing"
        );
    }

    /// Closes deb_1 with a verdict issued at `time_ms` and files side `side`'s appeal on it
    /// as request `n`; the contribution's reply.
    pub(in crate::apply) fn close_and_appeal(
        s: &mut State,
        n: u64,
        time_ms: u64,
        side: &str,
    ) -> serde_json::Value {
        let rec = s.debates.get_mut("deb_1").expect("debate");
        rec.reissue_verdict(time_ms, "x");
        rec.debate.phase = "closed".into();
        let appeal: ContributionSubmission = serde_json::from_value(json!({
            "debate_id": "deb_1", "author": "x", "side": side,
            "contribution": {"op": "appeal", "ground": "A2", "justification": "The panel resolved these challenges before the response filed in time was shown to it.", "evidence": [], "targetThreadIds": []},
        }))
        .expect("appeal");
        match write(s, n, ClientCommand::Contribute(appeal)) {
            ItemReply::Applied(v) => v.to_json(),
            r => panic!("{r:?}"),
        }
    }

    /// Asks deb_1's panel to advance from framing as request `n`; the motion id.
    pub(in crate::apply) fn advance_motion(s: &mut State, n: u64) -> String {
        let r = ask_advance(s, n, "framing");
        let ItemReply::Applied(v) = &r else {
            panic!("{r:?}")
        };
        v.to_json()["motion_id"].as_str().expect("id").to_owned()
    }

    /// Every seat of `motion_id` answers (`yes` per seat index); the outcome's reply.
    pub(in crate::apply) fn decide(
        s: &mut State,
        n: u64,
        motion_id: &str,
        yes: impl Fn(usize) -> bool,
    ) -> ItemReply<crate::reply::Reply> {
        let m = s.motions.get(motion_id).expect("motion").clone();
        let reveals: Vec<crate::rules::hex_bytes::RevealBytes> = m
            .seats
            .iter()
            .enumerate()
            .map(|(i, seat)| reveal(&m, &seat.arbiter_id, yes(i)).into())
            .collect();
        let outcome: crate::command::OutcomeSubmission =
            serde_json::from_value(json!({ "motion_id": motion_id, "reveals": reveals }))
                .expect("outcome");
        crate::apply::write_one(
            s,
            n,
            crate::command::InternalCommand::RecordOutcome(outcome).into(),
        )
    }

    fn status(s: &State, motion_id: &str) -> crate::model::finality::Finality {
        s.motions
            .get(motion_id)
            .expect("motion")
            .finality
            .clone()
            .expect("a status")
    }

    pub(in crate::apply) fn tick(s: &mut State, n: u64) {
        let note = crate::command::TestCommand::Note {
            topic: "t".into(),
            text: "tick".into(),
        };
        assert!(matches!(
            crate::apply::write_one(s, n, note.into()),
            ItemReply::Applied(_)
        ));
    }

    /// An accepted outcome is provisional for its debate's window and final after it; an
    /// appeal filed within the window holds it, and the appeal's denial makes it final; a
    /// question given up without an answer is not proven.
    #[test]
    fn outcomes_are_provisional_then_final_and_a_late_appeal_leaves_them_final() {
        use crate::model::finality::OutcomeStatus as S;
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        s.debates
            .get_mut("deb_1")
            .expect("debate")
            .policy
            .appeal_window_ms = Some(500);
        let advance = advance_motion(&mut s, 40);
        assert!(matches!(
            decide(&mut s, 60, &advance, |_| true),
            ItemReply::Applied(_)
        ));
        let f = status(&s, &advance);
        assert_eq!((f.status, f.final_at_ms), (S::Provisional, 1_060 + 500));
        let retirable = |s: &State| -> Vec<String> {
            s.motions
                .retirable_beyond(0)
                .iter()
                .map(|m| m.spec.motion_id.clone())
                .collect()
        };
        // A status that can still change keeps its row held (never archived).
        assert!(!retirable(&s).contains(&advance));
        tick(&mut s, 200);
        assert_eq!(
            status(&s, &advance).status,
            S::Provisional,
            "inside the window"
        );
        tick(&mut s, 600);
        assert!(retirable(&s).contains(&advance), "final: may be archived");
        let f = status(&s, &advance);
        assert_eq!((f.status, f.changed_log_index), (S::Final, 600), "{f:?}");
        assert!(f.reason.contains("window closed"), "{f:?}");

        // A second outcome, then an appeal inside its window.
        s.debates
            .get_mut("deb_1")
            .expect("debate")
            .policy
            .appeal_window_ms = Some(1_000_000);
        let r = ask_advance(&mut s, 700, "construction");
        // Construction's prerequisites fail: refused at the ask, nothing to hold.
        assert!(matches!(r, ItemReply::Refused { .. }), "{r:?}");
        // The advance is already final: an appeal cannot reopen it.
        let v = close_and_appeal(&mut s, 710, 1_701, "A");
        assert_eq!(status(&s, &advance).status, S::Final);
        let appeal_motion = v["opened"][0]
            .as_str()
            .expect("the appeal's motion")
            .to_owned();
        // The appeal panel admits nothing: denied, and its own outcome is provisional.
        assert!(matches!(
            decide(&mut s, 720, &appeal_motion, |_| false),
            ItemReply::Applied(_)
        ));
        assert_eq!(status(&s, &appeal_motion).status, S::Provisional);
        let doc = &s.debates.get("deb_1").expect("debate").debate;
        assert_eq!(doc.appeals[0].status, "denied");
    }

    /// An appeal filed while an outcome is provisional holds it as appealed until the
    /// appeal is decided; denied, it is final with the appeal named.
    #[test]
    fn an_appeal_inside_the_window_holds_an_outcome_until_it_is_decided() {
        use crate::model::finality::OutcomeStatus as S;
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        let advance = advance_motion(&mut s, 40);
        assert!(matches!(
            decide(&mut s, 60, &advance, |_| true),
            ItemReply::Applied(_)
        ));
        let v = close_and_appeal(&mut s, 80, 1_070, "B");
        let f = status(&s, &advance);
        assert_eq!(
            (f.status, f.appeal_id.as_deref()),
            (S::Appealed, Some("app_1")),
            "{f:?}"
        );
        // Past its original window it stays held: the appeal decides.
        tick(&mut s, 1_000_000);
        assert_eq!(status(&s, &advance).status, S::Appealed);
        let appeal_motion = v["opened"][0]
            .as_str()
            .expect("the appeal's motion")
            .to_owned();
        assert!(matches!(
            decide(&mut s, 1_000_010, &appeal_motion, |_| false),
            ItemReply::Applied(_)
        ));
        let f = status(&s, &advance);
        assert_eq!(f.status, S::Final, "{f:?}");
        assert!(f.reason.contains("appeal app_1 was denied"), "{f:?}");
        assert!(s.finality.appealed.is_empty());
    }

    /// The walk a party takes (docs/PANEL.md "Finality"): an outcome is provisional, an
    /// appeal inside its window holds it (appealed), the appeal's own panel admits the
    /// appeal (a second round), and a panel's yes to concluding the review issues the
    /// revised verdict and makes the held outcome final. Before rule set 27 the request to
    /// conclude is refused as an advance from the review was, and it is refused while the
    /// review may not conclude.
    #[test]
    fn an_admitted_appeal_ends_when_a_panel_concludes_its_review() {
        use crate::model::finality::OutcomeStatus as S;
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        let advance = advance_motion(&mut s, 40);
        assert!(matches!(
            decide(&mut s, 60, &advance, |_| true),
            ItemReply::Applied(_)
        ));
        assert_eq!(status(&s, &advance).status, S::Provisional);
        // Concluding is refused with nothing in review.
        let r = ask_advance(&mut s, 70, "appeal-review");
        assert!(
            matches!(&r, ItemReply::Refused { message, .. } if message.contains("no appeal review is in progress")),
            "{r:?}"
        );
        let v = close_and_appeal(&mut s, 80, 1_070, "B");
        assert_eq!(status(&s, &advance).status, S::Appealed);
        let appeal_motion = v["opened"][0]
            .as_str()
            .expect("the appeal's motion")
            .to_owned();
        assert!(matches!(
            decide(&mut s, 90, &appeal_motion, |_| true),
            ItemReply::Applied(_)
        ));
        let doc = &s.debates.get("deb_1").expect("debate").debate;
        assert_eq!(
            (doc.appeals[0].status.as_str(), doc.phase.as_str()),
            ("admitted", "appeal-review")
        );
        assert_eq!(
            status(&s, &advance).status,
            S::Appealed,
            "held through the review"
        );

        // Under the rule set before, the same request is refused as an advance.
        let mut before = s.clone();
        before.rules = crate::rules::CONCLUDED_REVIEWS - 1;
        let r = ask_advance(&mut before, 100, "appeal-review");
        assert!(
            matches!(&r, ItemReply::Refused { message, .. } if message.contains("ends by concluding the appeal")),
            "{r:?}"
        );

        let r = ask_advance(&mut s, 100, "appeal-review");
        let ItemReply::Applied(v) = &r else {
            panic!("{r:?}")
        };
        let conclude = v.to_json()["motion_id"].as_str().expect("id").to_owned();
        assert!(matches!(
            decide(&mut s, 110, &conclude, |_| true),
            ItemReply::Applied(_)
        ));
        let doc = &s.debates.get("deb_1").expect("debate").debate;
        assert_eq!(
            (doc.appeals[0].status.as_str(), doc.phase.as_str()),
            ("resolved", "closed")
        );
        assert_eq!(
            doc.verdicts.last().and_then(|v| v.via_appeal_id.as_deref()),
            Some("app_1"),
            "the revised verdict names the appeal"
        );
        let f = status(&s, &advance);
        assert_eq!(f.status, S::Final, "{f:?}");
        assert!(
            f.reason.contains("review of appeal app_1 left it standing"),
            "{f:?}"
        );
        assert!(s.finality.appealed.is_empty());
    }

    /// The state hash reads, byte for byte, what `serde_json::to_vec` wrote before it
    /// went through `Value`'s `Display`, so recorded motions' hashes still match.
    #[test]
    fn the_state_hash_reads_the_bytes_to_vec_wrote() {
        use sha2::Digest;
        let s = ten_admitted();
        let d = &s.debates.get("deb_1").expect("debate").debate;
        let before = hex::encode(sha2::Sha256::digest(
            serde_json::to_vec(&d.to_json()).expect("a document encodes"),
        ));
        assert_eq!(crate::debates::state_hash(d).to_hex(), before);
    }

    /// A deadlocked advance is given up at once: its question ends not proven.
    #[test]
    fn a_question_given_up_without_an_answer_is_not_proven() {
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        let advance = advance_motion(&mut s, 40);
        let m = s.motions.get(&advance).expect("motion").clone();
        // Stance A says yes, stance B says no: no net support from B.
        let yes_from_a = |i: usize| m.seats[i].stance == crate::rules::acceptance::Stance::A;
        assert!(matches!(
            decide(&mut s, 60, &advance, yes_from_a),
            ItemReply::Applied(_)
        ));
        let f = status(&s, &advance);
        assert_eq!(
            f.status,
            crate::model::finality::OutcomeStatus::NotProven,
            "{f:?}"
        );
    }

    /// Under declared stances a draw that cannot seat a stance names the missing
    /// declarations and the command that makes them (docs/REFUSALS.md).
    #[test]
    fn a_draw_short_of_declared_stances_names_panel_arbiter_declare() {
        let mut s = ten_admitted();
        let spec = serde_json::from_value(json!({
            "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
            "seats": 4, "min_per_stance": 1, "convener": "c",
            "policy": crate::rules::acceptance::Policy::independent(),
        }))
        .expect("debate");
        assert!(matches!(
            write(&mut s, 31, ClientCommand::CreateDebate(spec)),
            ItemReply::Applied(_)
        ));
        let req: PanelRequest = serde_json::from_value(json!({
            "debate_id": "deb_2", "author": "x",
            "question": {"kind": "advance-phase", "from": "framing"},
        }))
        .expect("request");
        let r = write(&mut s, 40, ClientCommand::AskPanel(req));
        let ItemReply::Refused { code, message } = &r else {
            panic!("{r:?}")
        };
        assert_eq!(code, "draw_failed");
        for needle in [
            "on debate deb_2",
            "0 arbiter(s) declared one so far",
            "panel arbiter declare --id ID --key-file FILE --debate deb_2",
        ] {
            assert!(message.contains(needle), "{needle:?} not in {message}");
        }
    }

    /// A fresh verdict is issued only once the debate reached its verdict.
    #[test]
    fn a_fresh_verdict_mid_debate_is_refused_by_phase() {
        let mut s = ten_admitted();
        s.rules = crate::rules::CURRENT;
        let reissue = || ClientCommand::ReissueVerdict {
            debate_id: "deb_1".into(),
            author: "x".into(),
        };
        let r = write(&mut s, 40, reissue());
        assert!(
            matches!(&r, ItemReply::Refused { code, message }
                if code == "PHASE_NOT_ADVANCEABLE" && message.contains("is in framing")
                    && message.contains("--advance framing")),
            "{r:?}"
        );
        assert!(
            s.debates
                .get("deb_1")
                .expect("debate")
                .debate
                .verdicts
                .is_empty()
        );
        s.debates.get_mut("deb_1").expect("debate").debate.phase = "verdict".into();
        assert!(matches!(
            write(&mut s, 41, reissue()),
            ItemReply::Applied(_)
        ));
    }
}
