//! Motion commands after the opening (`motion_open`): the logged commit-reveal round
//! (commitments logged after the commit window, reveals submitted by anyone, the close
//! deciding from every stored reveal: docs/coordinator/state-machine.md "The commit-reveal round"), and
//! the older one-entry outcome (every ruling re-verified, then the acceptance rule), kept
//! for raw test motions and for records written before rounds were logged.

use crate::rules::hex_bytes::{CommitmentBytes, DigestBytes, PublicKeyBytes, RevealBytes};
use std::collections::{BTreeMap, BTreeSet};

use ed25519_dalek::VerifyingKey;
use panel_proto::pb;
use panel_proto::round::{Phase, Window};
use prost::Message;

use super::debates::open_pending;
use crate::apply::error::{ApplyError, RoundError};
use crate::command::{CommitmentLog, OutcomeSubmission};
use crate::model::ApplyCtx;
use crate::model::{
    Absent, Motion, MotionRound, MotionStatus, SeatCommitment, State, StoredReveal,
};
use crate::reply::{
    CloseReply, CommitmentsReply, Decided, EquivocationReply, OutcomeReply, Reply, RevealReply,
    ScheduledPriorCheck, Settled, SubmitRevealReply,
};
use crate::rules::acceptance::{self, Acceptance};
use crate::rules::ruling::{self, Binding, RulingError, WireRuling};
use crate::rules::signed_motion;

/// A close is held back while closings are paused, and the close of an advance into the
/// verdict phase (which issues a verdict) while verdicts are (`breakers.rs`).
fn refuse_paused_close(state: &State, motion: &Motion) -> Result<(), ApplyError> {
    use crate::features::breakers::refuse_if_paused;
    use crate::log::breaker_order::Scope;
    refuse_if_paused(state, Scope::Closings)?;
    if let Some(crucible::motion::Question::AdvancePhase { from }) = &motion.spec.question
        && from == crucible::document::phase::ADJUDICATION
    {
        refuse_if_paused(state, Scope::Verdicts)?;
    }
    Ok(())
}

/// Re-verify every ruling (decoding, seat by registered key, binding to motion, debate,
/// kind and state hash, strict signature), then run the acceptance rule. A single bad
/// ruling refuses the whole submission, so a forged or replayed ruling can never ride
/// along with good ones; a second ruling from one arbiter is refused too.
pub(super) fn record_outcome(
    state: &mut State,
    ctx: &ApplyCtx,
    sub: &OutcomeSubmission,
) -> Result<Reply, ApplyError> {
    let motion = open_motion_ref(state, &sub.motion_id)?;
    refuse_paused_close(state, motion)?;
    let state_hash = decoded_state_hash(motion)?;
    let binding = Binding {
        motion_id: &motion.spec.motion_id,
        debate_id: &motion.spec.debate_id,
        kind: motion.spec.kind,
        state_hash: &state_hash,
    };
    if let Some(round) = &motion.round {
        return Err(RoundError::RoundRequired {
            motion: sub.motion_id.clone(),
            logged_at: Some(round.logged_log_index),
        }
        .into());
    }
    if state.rounds_logged && motion.spec.asks_a_question() {
        return Err(RoundError::RoundRequired {
            motion: sub.motion_id.clone(),
            logged_at: None,
        }
        .into());
    }
    let (seated, seat_keys) = seat_keys(state, motion)?;
    // The signed motion the driver put to the seats, if the outcome carries one: checked
    // before any ruling, so every ruling below is held against its digest.
    let motion_digest = match &sub.motion {
        Some(wire) => {
            let pinned =
                crate::features::charter_rules::motion_key_at(state, motion.opened_log_index);
            Some(signed_motion::check(
                wire,
                &binding,
                &seat_keys,
                pinned.as_ref(),
                ctx.memo,
            )?)
        }
        // Under a charter every outcome answers a motion signed by its motion key.
        None if state.charter.is_some() => {
            return Err(signed_motion::MotionError::Unsigned {
                motion_id: sub.motion_id.clone(),
            }
            .into());
        }
        None => None,
    };
    let debate_motion = motion.spec.asks_a_question();
    if debate_motion && !sub.rulings.is_empty() {
        return Err(ApplyError::CommitmentRequired(sub.motion_id.clone()));
    }
    // Reveals: the commitment is signed by the arbiter and opened by the signed ruling
    // and the salt (docs/WIRE.md, commit-reveal); then the ruling is checked like any other.
    let mut from_reveals = Vec::with_capacity(sub.reveals.len());
    let mut rationales = Vec::with_capacity(sub.reveals.len());
    for hex_reveal in &sub.reveals {
        let bad = |reason: ruling::RevealError| ApplyError::BadReveal {
            motion: sub.motion_id.clone(),
            reason,
        };
        let ruling::RevealParts {
            signed: sr,
            salt,
            commitment: c,
        } = ruling::decode_reveal(hex_reveal).map_err(bad)?;
        // A commitment signature is checked at intake and removed from the entry
        // (`ruling::intake_check`); one still present is verified like any signature.
        if !c.signature.is_empty() {
            panel_proto::commit_reveal::verify_commitment(&c, ctx.memo)
                .map_err(|e| bad(e.into()))?;
        }
        panel_proto::commit_reveal::check_opens(&c, &sr, &salt, ctx.memo)
            .map_err(|e| bad(e.into()))?;
        if c.motion_id != motion.spec.motion_id {
            return Err(bad(ruling::RevealError::OtherMotion(c.motion_id.clone())));
        }
        if let Some(r) = sr.ruling.as_ref() {
            rationales.push(r.rationale.clone());
        }
        from_reveals.push(sr);
    }
    let bare = sub
        .rulings
        .iter()
        .map(WireRuling::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let mut revealed = Vec::new();
    let mut receipts = Vec::new();
    let mut seen = BTreeSet::new();
    for sr in bare.iter().chain(from_reveals.iter()) {
        let signer = sr
            .ruling
            .as_ref()
            .map(|r| r.arbiter_key.clone())
            .unwrap_or_default();
        let (arbiter_id, key) = seated.get(&signer).ok_or_else(|| RulingError::NotSeated {
            fingerprint: hex::encode(&signer),
        })?;
        if !seen.insert(arbiter_id.as_str()) {
            return Err(ApplyError::DuplicateRuling(arbiter_id.clone()));
        }
        let checked = ruling::check(sr, arbiter_id, key, &binding, ctx.memo)?;
        signed_motion::check_ruling(sr, arbiter_id, &sub.motion_id, motion_digest.as_ref())?;
        revealed.extend(checked.revealed);
        receipts.extend(checked.receipt);
    }
    let judged = judge(state, motion, &revealed, &receipts);
    let mut all = sub.rulings.clone();
    all.extend(from_reveals.iter().map(WireRuling::encode));
    let decided = conclude(
        state,
        ctx,
        &sub.motion_id,
        judged,
        all,
        &revealed,
        &rationales,
    );
    crate::features::breakers::observe(
        state,
        !decided.verdict.is_accepted(),
        0,
        (ctx.log_index, ctx.time_ms),
    );
    Ok(Reply::from(OutcomeReply {
        decided,
        motion_digest: motion_digest.map(|d| DigestBytes::new(d.to_vec())),
    }))
}

/// A motion's verdict and, under a policy with `measured_n_eff`, its supporters'
/// measured independence.
pub(super) struct Judged {
    pub verdict: Acceptance,
    pub independence: Option<crate::rules::independence::SupportIndependence>,
    /// The weights the weighted pool judged with; `None` under head counts.
    pub weights: Option<crate::rules::weighted_pool::Weights>,
}

/// The acceptance rule over a motion's counted rulings, then, under a policy with
/// `measured_n_eff`, the measured-independence rule over its supporters (docs/coordinator/acceptance.md
/// "The acceptance rule", "Measured independence").
fn judge(
    state: &State,
    motion: &crate::model::Motion,
    revealed: &[acceptance::RevealedRuling],
    receipts: &[acceptance::RetrievalReceipt],
) -> Judged {
    let policy = policy_in_force(state, motion);
    // Only the weighted pool reads track records: every other close skips the walk over
    // each seated arbiter's resolved items.
    let weights = (policy.aggregation == acceptance::Aggregation::WeightedPool)
        .then(|| seated_weights(state, motion));
    let verdict = acceptance::decide_weighted(
        motion.spec.kind,
        &motion.seats,
        revealed,
        receipts,
        &policy,
        weights
            .as_ref()
            .unwrap_or(&crate::rules::weighted_pool::Weights::equal()),
    );
    let (verdict, independence) = crate::rules::independence::require_independent_support(
        verdict,
        &motion.seats,
        revealed,
        &state.error_history,
        &policy,
    );
    Judged {
        verdict,
        independence,
        weights,
    }
}

/// The motion's policy as the rule set in force reads it: the weighted pool only from
/// rule set [`WEIGHTED_POOL`](crate::rules::WEIGHTED_POOL) on.
fn policy_in_force(state: &State, motion: &crate::model::Motion) -> acceptance::Policy {
    let mut policy = motion.spec.policy.clone().unwrap_or_default();
    if state.rules < crate::rules::WEIGHTED_POOL {
        policy.aggregation = acceptance::Aggregation::HeadCount;
    }
    policy
}

/// The seated arbiters' weights from their resolved track records (`weighted_pool.rs`).
fn seated_weights(
    state: &State,
    motion: &crate::model::Motion,
) -> crate::rules::weighted_pool::Weights {
    crate::rules::weighted_pool::Weights::from_records(motion.seats.iter().filter_map(|seat| {
        let a = state.arbiters.get(&seat.arbiter_id)?;
        Some((seat.arbiter_id.as_str(), a.recalibration.items.as_slice()))
    }))
}

/// Decides a motion: records the verdict with every counted ruling, settles the debate's
/// question (or records the deadlock) and opens what the document now asks. Shared by
/// the close of a logged round and the older one-entry outcome.
pub(super) fn conclude(
    state: &mut State,
    ctx: &ApplyCtx,
    motion_id: &str,
    judged: Judged,
    rulings: Vec<WireRuling>,
    revealed: &[acceptance::RevealedRuling],
    rationales: &[String],
) -> Decided {
    let Judged {
        verdict,
        independence,
        weights,
    } = judged;
    let mut reply = Decided::bare(motion_id, verdict.clone());
    reply.independence = independence.clone();
    let Some(motion) = state.motions.get_mut(motion_id) else {
        return reply;
    };
    motion.status = MotionStatus::Decided(verdict.clone());
    motion.rulings = rulings;
    motion.decided_log_index = Some(ctx.log_index);
    motion.independence = independence;
    if state.rules >= crate::rules::OUTCOME_CONFIDENCE
        && let Acceptance::Accepted { outcome, .. } = &verdict
    {
        let confidence = match &weights {
            Some(w) => crate::rules::confidence::of_pool(outcome, &motion.seats, revealed, w),
            None => crate::rules::confidence::of(outcome, &motion.seats, revealed),
        };
        motion.confidence = confidence;
        reply.confidence = confidence;
    }
    let question = motion.spec.question.clone();
    let debate_id = motion.spec.debate_id.clone();
    if let Some(q) = question
        && state.debates.get(&debate_id).is_some()
    {
        let settled = match &verdict {
            Acceptance::Accepted { outcome, tallies } => {
                let rationale = format!(
                    "Accepted by a cross-stance panel ({}). {}",
                    tallies
                        .iter()
                        .map(|(k, t)| format!("{k:?}: {} yes, {} no", t.yes, t.no))
                        .collect::<Vec<_>>()
                        .join("; "),
                    rationales.first().map(String::as_str).unwrap_or("")
                );
                super::precedent::settle_answer(state, ctx, motion_id, outcome, &rationale)
            }
            Acceptance::Deadlocked(_) => {
                if let Some(rec) = state.debates.get_mut(&debate_id) {
                    rec.deadlocked(motion_id, &q);
                }
                Some(Settled::Settled(true))
            }
        };
        reply.settled = settled;
        reply.opened = Some(open_pending(state, ctx, &debate_id));
        reply.prior_check = scheduled_prior_check(state, &debate_id, (ctx.log_index, ctx.time_ms));
    }
    crate::features::finality::on_decided(state, motion_id, (ctx.log_index, ctx.time_ms));
    let answered = matches!(reply.settled, Some(Settled::Settled(true)));
    reply.final_panel = super::final_panel::after_decided(state, ctx, motion_id, answered);
    reply.run = super::runs::settle_motion(state, ctx, motion_id, &verdict);
    reply.recalibration = crate::features::recalibration::on_outcome(state, motion_id);
    // Counted last, so the panels this decision opened were drawn on the history before
    // it; from rule set `MEASURED_ERRORS` on.
    if state.rules >= crate::rules::MEASURED_ERRORS
        && let Acceptance::Accepted { outcome, .. } = &verdict
    {
        state.error_history.record(outcome, revealed);
    }
    reply
}

/// The prior-consistency check a debate's policy schedules (`Policy::prior_check_every`):
/// after every N-th decided motion of the debate it runs inside apply, as `CheckPriors`
/// would, and its findings go on the record in this entry's reply. A check the history
/// cannot support yet is recorded as such and changes nothing.
fn scheduled_prior_check(
    state: &mut State,
    debate_id: &str,
    at: (u64, u64),
) -> Option<ScheduledPriorCheck> {
    let rec = state.debates.get(debate_id)?;
    let every = rec.policy.prior_check_every.filter(|n| *n > 0)? as usize;
    let decided = rec.questions.len().saturating_sub(rec.open.len());
    if decided == 0 || decided % every != 0 {
        return None;
    }
    Some(match super::arbiters::check_priors(state, at) {
        Ok(result) => ScheduledPriorCheck::Ran {
            after_decided_motions: decided,
            result,
        },
        Err(e) => ScheduledPriorCheck::NotRun {
            after_decided_motions: decided,
            not_run: e.to_string(),
        },
    })
}

/// Seated, unrevoked arbiters by raw registered key (whose rulings and commitments count),
/// and the registered keys of every drawn seat (what the signed motion must seat).
type SeatKeys = (BTreeMap<Vec<u8>, (String, VerifyingKey)>, BTreeSet<Vec<u8>>);

fn seat_keys(state: &State, motion: &Motion) -> Result<SeatKeys, ApplyError> {
    let mut seated = BTreeMap::new();
    let mut all = BTreeSet::new();
    for seat in &motion.seats {
        let arbiter = state
            .arbiters
            .get(&seat.arbiter_id)
            .ok_or_else(|| ApplyError::UnknownArbiter(seat.arbiter_id.clone()))?;
        let key = ruling::parse_public_key(&seat.arbiter_id, &arbiter.registration.public_key)?;
        all.insert(key.to_bytes().to_vec());
        if arbiter.revoked.is_some() {
            // A revoked key's rulings never count: treat it as holding no seat.
            continue;
        }
        seated.insert(key.to_bytes().to_vec(), (seat.arbiter_id.clone(), key));
    }
    Ok((seated, all))
}

/// The batch time as the signed motion's deadlines count it.
fn batch_time(ctx: &ApplyCtx) -> i64 {
    i64::try_from(ctx.time_ms).unwrap_or(i64::MAX)
}

/// Motion `motion_id` while it is open (an open motion is always held in memory; a
/// retired one is decided, `motion_table`).
fn open_motion_ref<'a>(state: &'a State, motion_id: &str) -> Result<&'a Motion, ApplyError> {
    match state.motions.held(motion_id) {
        Some(m) if m.status == MotionStatus::Open => Ok(m),
        Some(_) => Err(ApplyError::MotionClosed(motion_id.to_owned())),
        None if state.motions.contains(motion_id) => {
            Err(ApplyError::MotionClosed(motion_id.to_owned()))
        }
        None => Err(ApplyError::UnknownMotion(motion_id.to_owned())),
    }
}

fn decoded_state_hash(motion: &Motion) -> Result<std::borrow::Cow<'_, [u8]>, ApplyError> {
    motion
        .spec
        .state_hash
        .bytes()
        .map_err(|_| ApplyError::BadStateHash(motion.spec.state_hash.to_hex()))
}

/// Logs a round: the signed motion (checked as the one the state machine opened, seating
/// the drawn panel) and every commitment received, each verified under its seat's
/// registered key and made by the signed commit deadline. From here on the record shows
/// which seats committed, and only these commitments can be revealed.
pub(super) fn log_commitments(
    state: &mut State,
    ctx: &ApplyCtx,
    log: &CommitmentLog,
) -> Result<Reply, ApplyError> {
    let motion = open_motion_ref(state, &log.motion_id)?;
    if let Some(r) = &motion.round {
        return Err(RoundError::AlreadyLogged {
            motion: log.motion_id.clone(),
            log_index: r.logged_log_index,
        }
        .into());
    }
    let state_hash = decoded_state_hash(motion)?;
    let binding = Binding {
        motion_id: &motion.spec.motion_id,
        debate_id: &motion.spec.debate_id,
        kind: motion.spec.kind,
        state_hash: &state_hash,
    };
    let (seated, all_keys) = seat_keys(state, motion)?;
    let pinned = crate::features::charter_rules::motion_key_at(state, motion.opened_log_index);
    let (digest, signed) =
        signed_motion::check_round(&log.motion, &binding, &all_keys, pinned.as_ref(), ctx.memo)?;
    check_seals(state, &signed, &digest)?;
    let now = batch_time(ctx);
    let window = Window::of(&signed);
    if window.phase(now) == Phase::Over {
        return Err(RoundError::Expired {
            motion: log.motion_id.clone(),
            reveal_deadline: signed.reveal_deadline_unix_ms,
            now,
        }
        .into());
    }
    let mut commitments = BTreeMap::new();
    for (index, wire) in log.commitments.iter().enumerate() {
        let bad = |reason: String| RoundError::BadCommitment {
            motion: log.motion_id.clone(),
            index,
            reason,
        };
        let bytes = wire.bytes().map_err(|_| bad("not hex".into()))?;
        let c = pb::Commitment::decode(&*bytes)
            .map_err(|e| bad(format!("not a protobuf Commitment: {e}")))?;
        let key = panel_proto::commit_reveal::verify_commitment(&c, ctx.memo)
            .map_err(|e| bad(e.to_string()))?;
        let (arbiter_id, _) =
            seated
                .get(key.as_bytes().as_slice())
                .ok_or_else(|| RoundError::NotSeated {
                    motion: log.motion_id.clone(),
                    index,
                    fingerprint: panel_proto::keys::fingerprint(&key),
                })?;
        if c.motion_id != motion.spec.motion_id || c.debate_id != motion.spec.debate_id {
            return Err(bad(format!(
                "it names motion {:?} of debate {:?}",
                c.motion_id, c.debate_id
            ))
            .into());
        }
        if c.digest.len() != 32 {
            return Err(bad(format!("its digest is {} bytes, not 32", c.digest.len())).into());
        }
        if window
            .check_commit(&c.motion_id, c.committed_at_unix_ms)
            .is_err()
        {
            return Err(RoundError::Late {
                motion: log.motion_id.clone(),
                arbiter: arbiter_id.clone(),
                at: c.committed_at_unix_ms,
                deadline: signed.commit_deadline_unix_ms,
            }
            .into());
        }
        let logged = SeatCommitment {
            commitment: CommitmentBytes::new(c.encode_to_vec()),
            reveal: None,
            equivocation: None,
        };
        if commitments.insert(arbiter_id.clone(), logged).is_some() {
            return Err(RoundError::SecondCommitment {
                motion: log.motion_id.clone(),
                arbiter: arbiter_id.clone(),
            }
            .into());
        }
    }
    let not_committed: Vec<&str> = motion
        .seats
        .iter()
        .map(|s| s.arbiter_id.as_str())
        .filter(|id| !commitments.contains_key(*id))
        .collect();
    let reply = Reply::from(CommitmentsReply {
        motion_id: log.motion_id.clone(),
        motion_digest: DigestBytes::new(digest.to_vec()),
        signer_key: PublicKeyBytes::new(signed.signer_key.clone()),
        committed: commitments.keys().cloned().collect(),
        not_committed: not_committed.iter().map(|s| s.to_string()).collect(),
        commit_deadline_ms: signed.commit_deadline_unix_ms,
        reveal_deadline_ms: signed.reveal_deadline_unix_ms,
    });
    let round = MotionRound {
        motion: log.motion.clone(),
        motion_digest: DigestBytes::new(digest.to_vec()),
        signer_key: PublicKeyBytes::new(signed.signer_key.clone()),
        commit_deadline_ms: signed.commit_deadline_unix_ms,
        reveal_deadline_ms: signed.reveal_deadline_unix_ms,
        logged_log_index: ctx.log_index,
        logged_at_ms: ctx.time_ms,
        commitments,
        absent: None,
    };
    if let Some(m) = state.motions.get_mut(&log.motion_id) {
        m.round = Some(round);
    }
    state.rounds_logged = true;
    Ok(reply)
}

/// A reveal, from whoever submits it: accepted once per seat, inside the signed motion's
/// reveal window, when it is a v2 ruling of the seat's registered key bound to the
/// round's motion digest and opens the seat's logged commitment. A second, different
/// ruling of a seat that already revealed is equivocation: never counted, and the first
/// such ruling is kept on the motion as evidence.
pub(super) fn submit_reveal(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    motion_id: &str,
    wire: &RevealBytes,
) -> Result<Reply, ApplyError> {
    let motion = open_motion_ref(state, motion_id)?;
    let round = motion
        .round
        .as_ref()
        .ok_or_else(|| RoundError::NoRound(motion_id.to_owned()))?;
    let now = batch_time(ctx);
    if round.window().phase(now) != Phase::Reveal {
        return Err(RoundError::OutsideWindow {
            motion: motion_id.to_owned(),
            now,
            commit_deadline: round.commit_deadline_ms,
            reveal_deadline: round.reveal_deadline_ms,
        }
        .into());
    }
    let bad = |reason: ruling::RevealError| ApplyError::BadReveal {
        motion: motion_id.to_owned(),
        reason,
    };
    let bytes = wire.bytes().map_err(|_| bad(ruling::RevealError::NotHex))?;
    let reveal = pb::Reveal::decode(&*bytes).map_err(|e| bad(e.into()))?;
    let sr = reveal
        .signed_ruling
        .ok_or_else(|| bad(ruling::RevealError::NoSignedRuling))?;
    let signer = sr
        .ruling
        .as_ref()
        .map(|r| r.arbiter_key.clone())
        .unwrap_or_default();
    let (seated, _) = seat_keys(state, motion)?;
    let (arbiter_id, key) = seated.get(&signer).ok_or_else(|| RulingError::NotSeated {
        fingerprint: hex::encode(&signer),
    })?;
    let state_hash = decoded_state_hash(motion)?;
    let binding = Binding {
        motion_id: &motion.spec.motion_id,
        debate_id: &motion.spec.debate_id,
        kind: motion.spec.kind,
        state_hash: &state_hash,
    };
    let checked = ruling::check(&sr, arbiter_id, key, &binding, ctx.memo)?;
    let digest: [u8; 32] = round
        .motion_digest
        .array()
        .ok_or_else(|| bad(ruling::RevealError::LoggedDigest))?;
    signed_motion::check_ruling(&sr, arbiter_id, motion_id, Some(&digest))?;
    let seat = round
        .commitments
        .get(arbiter_id)
        .ok_or_else(|| RoundError::WithoutCommitment {
            motion: motion_id.to_owned(),
            arbiter: arbiter_id.clone(),
        })?;
    let arbiter_id = arbiter_id.clone();
    if let Some(stored) = &seat.reveal {
        let first = stored
            .reveal
            .as_ref()
            .ok_or(ruling::RevealError::Incomplete)
            .and_then(ruling::decode_reveal)
            .map_err(bad)?
            .signed;
        if first == sr {
            return Err(RoundError::AlreadyRevealed {
                motion: motion_id.to_owned(),
                arbiter: arbiter_id,
                submitted_by: stored.submitted_by.clone(),
                log_index: stored.log_index,
            }
            .into());
        }
        if seat.equivocation.is_some() {
            return Err(RoundError::Equivocation {
                motion: motion_id.to_owned(),
                arbiter: arbiter_id,
            }
            .into());
        }
        // Both rulings verify under the seat's key and bind this motion: the arbiter
        // signed two answers to one question. Kept as evidence, counted never.
        let reply = SubmitRevealReply::Equivocation(EquivocationReply {
            motion_id: motion_id.to_owned(),
            arbiter_id: arbiter_id.clone(),
            counted: false,
            equivocation: true,
            first_reveal_log_index: stored.log_index,
        });
        if let Some(s) = state
            .motions
            .get_mut(motion_id)
            .and_then(|m| m.round.as_mut())
            .and_then(|r| r.commitments.get_mut(&arbiter_id))
        {
            s.equivocation = Some(WireRuling::encode(&sr));
        }
        return Ok(Reply::from(reply));
    }
    let commitment = pb::Commitment::decode(
        &*seat
            .commitment
            .bytes()
            .map_err(|_| bad(ruling::RevealError::LoggedCommitmentNotHex))?,
    )
    .map_err(|e| bad(ruling::RevealError::LoggedCommitment(e)))?;
    panel_proto::commit_reveal::check_opens(&commitment, &sr, &reveal.salt, ctx.memo).map_err(
        |e| RoundError::Mismatch {
            motion: motion_id.to_owned(),
            arbiter: arbiter_id.clone(),
            reason: e.to_string(),
        },
    )?;
    let pending: Vec<&String> = round
        .commitments
        .iter()
        .filter(|(id, s)| s.reveal.is_none() && **id != arbiter_id)
        .map(|(id, _)| id)
        .collect();
    let reply = Reply::from(SubmitRevealReply::Revealed(RevealReply {
        motion_id: motion_id.to_owned(),
        arbiter_id: arbiter_id.clone(),
        counted: checked.revealed.is_some(),
        abstained: checked.revealed.is_none(),
        submitted_by: client_id.to_owned(),
        awaiting: pending.into_iter().cloned().collect(),
    }));
    let stored = StoredReveal {
        reveal: Some(
            ruling::RevealParts {
                signed: sr,
                salt: reveal.salt,
                commitment,
            }
            .encode(),
        ),
        submitted_by: client_id.to_owned(),
        log_index: ctx.log_index,
        counted: checked.revealed,
        receipt: checked.receipt,
    };
    if let Some(s) = state
        .motions
        .get_mut(motion_id)
        .and_then(|m| m.round.as_mut())
        .and_then(|r| r.commitments.get_mut(&arbiter_id))
    {
        s.reveal = Some(stored);
    }
    Ok(reply)
}

/// Closes a logged round: refused before the signed reveal deadline while a logged
/// commitment is still unrevealed (once all are revealed nothing can change, so it may
/// close at once); then the acceptance rule decides from every stored reveal, and the
/// seats that committed without revealing and those that never committed are recorded.
/// The close names no ruling, so nobody choosing it can leave one out.
/// Whether a revoked arbiter's ruling in a round logged at `logged_at_ms` is refused at
/// the close. From rule set [`REVOCATION_TIME`](crate::rules::REVOCATION_TIME) the
/// revocation's own instant decides: a commitment logged before `effective_from_unix_ms`
/// was made while the key was good and counts; one logged at or after it does not.
/// Before that rule set every revoked arbiter's rulings were refused, and still are on
/// replay.
fn revoked_for(state: &State, arbiter: &crate::model::Arbiter, logged_at_ms: u64) -> bool {
    let Some(rev) = &arbiter.revoked else {
        return false;
    };
    if state.rules < crate::rules::REVOCATION_TIME {
        return true;
    }
    serde_json::from_value::<crate::model::Revocation>(rev.clone())
        .map_or(true, |r| r.covers(logged_at_ms))
}

pub(super) fn close_motion(
    state: &mut State,
    ctx: &ApplyCtx,
    motion_id: &str,
) -> Result<Reply, ApplyError> {
    let motion = open_motion_ref(state, motion_id)?;
    refuse_paused_close(state, motion)?;
    let round = motion
        .round
        .as_ref()
        .ok_or_else(|| RoundError::NoRound(motion_id.to_owned()))?;
    let now = batch_time(ctx);
    let pending: Vec<String> = round
        .commitments
        .iter()
        .filter(|(_, s)| s.reveal.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    if round.window().phase(now) != Phase::Over && !pending.is_empty() {
        return Err(RoundError::TooEarly {
            motion: motion_id.to_owned(),
            now,
            deadline: round.reveal_deadline_ms,
            pending,
        }
        .into());
    }
    let mut revealed = Vec::new();
    let mut receipts = Vec::new();
    let mut rulings = Vec::new();
    let mut rationales = Vec::new();
    let mut counted_from = Vec::new();
    let mut revoked = Vec::new();
    for (id, seat) in &round.commitments {
        let Some(stored) = &seat.reveal else {
            continue;
        };
        if state
            .arbiters
            .get(id)
            .is_some_and(|a| revoked_for(state, a, round.logged_at_ms))
        {
            // Revoked since its reveal: its rulings no longer count.
            revoked.push(id.clone());
            continue;
        }
        let parts = stored
            .reveal
            .as_ref()
            .ok_or(ruling::RevealError::Incomplete)
            .and_then(ruling::decode_reveal)
            .map_err(|reason| ApplyError::BadReveal {
                motion: motion_id.to_owned(),
                reason,
            })?;
        if let Some(r) = parts.signed.ruling.as_ref() {
            rationales.push(r.rationale.clone());
        }
        revealed.extend(stored.counted.clone());
        receipts.extend(stored.receipt.clone());
        rulings.push(WireRuling::encode(&parts.signed));
        counted_from.push(id.clone());
    }
    let absent = Absent {
        committed_not_revealed: pending,
        not_committed: motion
            .seats
            .iter()
            .filter(|s| !round.commitments.contains_key(&s.arbiter_id))
            .map(|s| s.arbiter_id.clone())
            .collect(),
        revoked,
    };
    let equivocated: Vec<&String> = round
        .commitments
        .iter()
        .filter(|(_, s)| s.equivocation.is_some())
        .map(|(id, _)| id)
        .collect();
    let judged = judge(state, motion, &revealed, &receipts);
    let digest = round.motion_digest.clone();
    let equivocated: Vec<String> = equivocated.into_iter().cloned().collect();
    if let Some(r) = state
        .motions
        .get_mut(motion_id)
        .and_then(|m| m.round.as_mut())
    {
        r.absent = Some(absent.clone());
        // Each signed ruling is kept once: the counted ones in the motion's `rulings`
        // (below), every reveal as submitted on the record; this copy is dropped.
        for seat in r.commitments.values_mut() {
            if let Some(stored) = seat.reveal.as_mut() {
                stored.reveal = None;
            }
        }
    }
    let decided = conclude(
        state,
        ctx,
        motion_id,
        judged,
        rulings,
        &revealed,
        &rationales,
    );
    let refused = absent.committed_not_revealed.len() + equivocated.len();
    crate::features::breakers::observe(
        state,
        !decided.verdict.is_accepted(),
        refused as u32,
        (ctx.log_index, ctx.time_ms),
    );
    Ok(Reply::from(CloseReply {
        decided,
        motion_digest: digest,
        revealed: counted_from,
        absent,
        equivocated,
    }))
}

/// From rule set [`MOTION_SEALS`](crate::rules::MOTION_SEALS), under a charter whose log
/// is signed by a quorum, the motion put to the seats must carry that quorum's seals
/// (docs/WIRE.md "Motion seals"), exactly as nodes require.
fn check_seals(state: &State, signed: &pb::Motion, digest: &[u8; 32]) -> Result<(), RoundError> {
    if state.rules < crate::rules::MOTION_SEALS {
        return Ok(());
    }
    let Some(quorum) = state
        .charter
        .as_ref()
        .and_then(panel_federation::motion_seal::required)
    else {
        return Ok(());
    };
    panel_federation::motion_seal::check(&quorum, &signed.motion_id, digest, &signed.seals)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Attacks on the logged round: every test drives `apply_batch` with the entries a
    //! leader (or anyone) could propose, and checks what the record then holds.

    use ed25519_dalek::SigningKey;
    use panel_proto::pb;
    use prost::Message;

    use crate::apply::apply_batch;
    use crate::command::{
        ArbiterRegistration, Batch, ClientCommand, Command, CommitmentLog, InternalCommand, Item,
        ItemReply, MotionSpec, OutcomeSubmission, TestCommand,
    };
    use crate::model::{MotionStatus, State};
    use crate::reply::BatchReply;
    use crate::rules::acceptance::{Decision, MotionKind, Stance};
    use crate::rules::hex_bytes::{CommitmentBytes, RevealBytes};
    use crate::rules::ruling::{self, Binding};

    const HASH: [u8; 32] = [0xab; 32];
    const COMMIT_DEADLINE: i64 = 2_000;
    const REVEAL_DEADLINE: i64 = 9_000;
    /// Seats: keys 1..=4 are a1, a2 (stance A), b1, b2 (stance B); 9 holds no seat.
    const SEATS: [(&str, u8, Stance, &str); 4] = [
        ("a1", 1, Stance::A, "o1"),
        ("a2", 2, Stance::A, "o2"),
        ("b1", 3, Stance::B, "o1"),
        ("b2", 4, Stance::B, "o3"),
    ];

    fn key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn at(time_ms: u64, items: Vec<(&str, u64, Command)>) -> Batch {
        Batch {
            time_ms,
            seed: 7,
            items: items
                .into_iter()
                .map(|(c, r, command)| Item {
                    client_id: c.into(),
                    request_id: r,
                    command,
                    writer: None,
                })
                .collect(),
            limits: None,
            checkpoints: None,
            rules: None,
        }
    }

    /// Four admitted arbiters and an open raw motion `m1` seating all four.
    fn setup() -> State {
        let mut s = State::default();
        let mut items = vec![];
        for (n, (id, i, stance, org)) in SEATS.iter().enumerate() {
            items.push((
                "t",
                n as u64 * 2,
                ClientCommand::RegisterArbiter(ArbiterRegistration {
                    arbiter_id: (*id).into(),
                    public_key: hex::encode(key(*i).verifying_key().to_bytes()).into(),
                    organisation: (*org).into(),
                    model_family: format!("fam-{id}"),
                    stance: *stance,
                    endpoint: String::new(),
                    attestation: None,
                    lineage: None,
                })
                .into(),
            ));
            items.push((
                "t",
                n as u64 * 2 + 1,
                TestCommand::SetAdmission {
                    arbiter_id: (*id).into(),
                    admitted: true,
                    score_milli: 900,
                }
                .into(),
            ));
        }
        items.push((
            "t",
            100,
            TestCommand::OpenMotion(Box::new(MotionSpec {
                motion_id: "m1".into(),
                debate_id: "d1".into(),
                kind: MotionKind::Merge,
                state_hash: hex::encode(HASH).into(),
                seats: 4,
                min_per_stance: 2,
                contributors: vec![],
                author_model_family: None,
                policy: None,
                question: None,
                projection: None,
                expected: None,
                procedure: None,
                final_panel_of: None,
            }))
            .into(),
        ));
        let r = apply_batch(
            &mut s,
            1,
            &at(1_000, items),
            &panel_proto::VerifiedMemo::default(),
        );
        assert!(
            r.items
                .iter()
                .all(|o| matches!(o.reply, ItemReply::Applied(_))),
            "{r:?}"
        );
        s
    }

    fn signed_motion(tweak: impl FnOnce(&mut pb::Motion)) -> pb::Motion {
        let mut m = pb::Motion {
            motion_id: "m1".into(),
            debate_id: "d1".into(),
            kind: pb::MotionKind::Merge as i32,
            state_hash: HASH.to_vec(),
            commit_deadline_unix_ms: COMMIT_DEADLINE,
            reveal_deadline_unix_ms: REVEAL_DEADLINE,
            panel: (1..=4)
                .map(|i| pb::PanelSeat {
                    public_key: key(i).verifying_key().to_bytes().to_vec(),
                    endpoint: String::new(),
                })
                .collect(),
            ..Default::default()
        };
        tweak(&mut m);
        panel_proto::sign_motion(&key(50), m)
    }

    /// What seat `i` makes for the motion with `digest`: its signed v2 ruling, salt and
    /// signed commitment.
    struct Sealed {
        signed: pb::SignedRuling,
        salt: [u8; 32],
        commitment: pb::Commitment,
    }

    fn seal(i: u8, decision: Decision, digest: [u8; 32], salt: u8) -> Sealed {
        let binding = Binding {
            motion_id: "m1",
            debate_id: "d1",
            kind: MotionKind::Merge,
            state_hash: &HASH,
        };
        let mut r = ruling::sign(&key(i), &binding, decision, 0.8, None)
            .decode()
            .unwrap()
            .ruling
            .unwrap();
        r.motion_digest = digest.to_vec();
        let signed = panel_proto::sign_ruling(&key(i), r).unwrap();
        let salt = [salt; 32];
        let commitment =
            panel_proto::commit_reveal::commit(&key(i), &signed, &salt, 1_500).unwrap();
        Sealed {
            signed,
            salt,
            commitment,
        }
    }

    impl Sealed {
        fn reveal(&self) -> RevealBytes {
            RevealBytes::new(
                pb::Reveal {
                    signed_ruling: Some(self.signed.clone()),
                    salt: self.salt.to_vec(),
                    commitment: None,
                }
                .encode_to_vec(),
            )
        }
        fn commitment_hex(&self) -> CommitmentBytes {
            CommitmentBytes::new(self.commitment.encode_to_vec())
        }
    }

    fn log(m: &pb::Motion, sealed: &[&Sealed]) -> Command {
        InternalCommand::LogCommitments(CommitmentLog {
            motion_id: "m1".into(),
            motion: crate::rules::signed_motion::encode(m),
            commitments: sealed.iter().map(|s| s.commitment_hex()).collect(),
        })
        .into()
    }

    fn reveal(s: &Sealed) -> Command {
        ClientCommand::SubmitReveal {
            motion_id: "m1".into(),
            reveal: s.reveal(),
        }
        .into()
    }

    fn close() -> Command {
        InternalCommand::CloseMotion {
            motion_id: "m1".into(),
        }
        .into()
    }

    fn applied(r: &BatchReply) -> serde_json::Value {
        match &r.items[0].reply {
            ItemReply::Applied(v) => v.to_json(),
            other => panic!("expected it applied, got {other:?}"),
        }
    }

    fn refused(r: &BatchReply) -> String {
        match &r.items[0].reply {
            ItemReply::Refused { code, message } => format!("{code}: {message}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// One item at `time_ms`, with a fresh request id.
    fn one(s: &mut State, time_ms: u64, who: &str, c: Command) -> BatchReply {
        let n = s.requests.len() as u64 + 1_000;
        apply_batch(
            s,
            n,
            &at(time_ms, vec![(who, n, c)]),
            &panel_proto::VerifiedMemo::default(),
        )
    }

    /// Three seats agree, b2 dissents. Its reveal is stored, so the close (which names no
    /// ruling) counts it and the motion deadlocks; an outcome carrying only the three
    /// agreeing reveals, which a driver could choose, is refused.
    #[test]
    fn a_stored_dissenting_reveal_cannot_be_left_out() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let seats: Vec<Sealed> = (1..=4)
            .map(|i| {
                let dec = if i == 4 { Decision::No } else { Decision::Yes };
                seal(i, dec, d, i)
            })
            .collect();
        let v = applied(&one(
            &mut s,
            2_100,
            "motion-driver",
            log(&m, &seats.iter().collect::<Vec<_>>()),
        ));
        assert_eq!(v["committed"], serde_json::json!(["a1", "a2", "b1", "b2"]));
        for seat in &seats {
            applied(&one(&mut s, 3_000, "anyone", reveal(seat)));
        }
        // The old one-entry outcome with the agreeing three is refused.
        let chosen = OutcomeSubmission {
            motion_id: "m1".into(),
            rulings: vec![],
            reveals: seats[..3]
                .iter()
                .map(|x| {
                    ruling::RevealParts {
                        signed: x.signed.clone(),
                        salt: x.salt.to_vec(),
                        commitment: x.commitment.clone(),
                    }
                    .encode()
                })
                .collect(),
            motion: Some(crate::rules::signed_motion::encode(&m)),
        };
        let r = one(
            &mut s,
            3_100,
            "motion-driver",
            InternalCommand::RecordOutcome(chosen.clone()).into(),
        );
        assert!(refused(&r).starts_with("round_required"), "{}", refused(&r));
        let r = one(
            &mut s,
            3_100,
            "t",
            TestCommand::RecordOutcome(chosen).into(),
        );
        assert!(refused(&r).starts_with("round_required"), "{}", refused(&r));
        // Every logged commitment is revealed: the close may come before the deadline.
        let v = applied(&one(&mut s, 3_200, "motion-driver", close()));
        assert!(v["verdict"]["Deadlocked"].is_object(), "{v}");
        assert_eq!(v["revealed"], serde_json::json!(["a1", "a2", "b1", "b2"]));
        let motion = s.motions.get("m1").unwrap();
        assert_eq!(
            motion.rulings.len(),
            4,
            "every stored ruling is on the record"
        );
        assert!(matches!(motion.status, MotionStatus::Decided(_)));
        // Decided: no further reveal or close.
        let r = one(&mut s, 3_300, "motion-driver", close());
        assert!(refused(&r).starts_with("motion_closed"), "{}", refused(&r));
    }

    /// docs/coordinator/acceptance.md "The acceptance rule": a panel whose supporters of one stance all share a lineage deadlocks on
    /// rule 4, and the output must say so by name, not only count.
    #[test]
    fn a_deadlock_names_the_one_lineage_a_stances_supporters_share() {
        let mut s = setup();
        {
            let m1 = s.motions.get_mut("m1").expect("m1");
            m1.spec.policy = Some(crate::rules::acceptance::Policy {
                min_net_support_per_side: 2,
                independence: crate::rules::independence::Independence {
                    one_per_lineage: true,
                    ..Default::default()
                },
                ..Default::default()
            });
            for seat in m1.seats.iter_mut() {
                seat.lineage = if seat.stance == Stance::A {
                    "gemma3".into()
                } else {
                    format!("fam-{}", seat.arbiter_id)
                };
            }
        }
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let seats: Vec<Sealed> = (1..=4).map(|i| seal(i, Decision::Yes, d, i)).collect();
        applied(&one(
            &mut s,
            2_100,
            "motion-driver",
            log(&m, &seats.iter().collect::<Vec<_>>()),
        ));
        for seat in &seats {
            applied(&one(&mut s, 3_000, "motion-driver", reveal(seat)));
        }
        let v = applied(&one(&mut s, 3_100, "motion-driver", close()));
        assert!(v["verdict"]["Deadlocked"].is_object(), "{v}");
        let motion = s.motions.get("m1").expect("m1").clone();
        let notes = crate::features::motion_history::one_lineage_support(&motion);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].stance, Stance::A);
        assert_eq!(notes[0].lineage, "gemma3");
        assert_eq!(notes[0].supporters, ["a1", "a2"]);
        let line = notes[0].to_string();
        assert!(
            line.contains("lineage gemma3") && line.contains("another lineage"),
            "{line}"
        );
    }

    /// docs/SECURITY.md "What is enforced": a revocation's instant was stored and never read. Now a commitment logged
    /// before `effective_from_unix_ms` counts at the close, one logged at or after it does
    /// not; a revocation dated back names the decided motions that counted such a ruling.
    /// Before rule set 6 every revoked arbiter's rulings are refused, as they applied.
    #[test]
    fn a_revocation_counts_from_its_instant_against_the_logged_commitment() {
        let revoke = |s: &mut State, effective_from_unix_ms: i64| {
            s.arbiters.get_mut("a1").expect("a1").revoked = Some(
                serde_json::to_value(crate::model::Revocation {
                    reason: "key copied".into(),
                    effective_from_unix_ms,
                    log_index: 0,
                    counted_after_revocation: vec![],
                })
                .expect("json"),
            );
        };
        let decide = |rules: u32, effective_from: Option<i64>| {
            let mut s = setup();
            s.rules = rules;
            let m = signed_motion(|_| {});
            let d = panel_proto::motion_digest(&m);
            let seats: Vec<Sealed> = (1..=4).map(|i| seal(i, Decision::Yes, d, i)).collect();
            applied(&one(
                &mut s,
                2_100,
                "motion-driver",
                log(&m, &seats.iter().collect::<Vec<_>>()),
            ));
            for seat in &seats {
                applied(&one(&mut s, 3_000, "motion-driver", reveal(seat)));
            }
            if let Some(t) = effective_from {
                revoke(&mut s, t);
            }
            let v = applied(&one(&mut s, 3_100, "motion-driver", close()));
            let revoked: Vec<String> =
                serde_json::from_value(v["absent"]["revoked"].clone()).unwrap_or_default();
            (s, revoked)
        };
        let rules = crate::rules::REVOCATION_TIME;
        // Revoked from after the commitment was logged: the ruling was made with a good key.
        let (_, revoked) = decide(rules, Some(2_101));
        assert!(revoked.is_empty(), "counted: {revoked:?}");
        // Revoked from at or before it: refused.
        for t in [2_100, 1] {
            let (_, revoked) = decide(rules, Some(t));
            assert_eq!(revoked, ["a1"], "effective {t}");
        }
        // The old rule set refuses every revoked arbiter's rulings.
        let (_, revoked) = decide(crate::rules::PRACTICE_EXAMS, Some(2_101));
        assert_eq!(revoked, ["a1"]);

        // A revocation dated back to before a decided motion's logged commitments names it;
        // one dated after does not.
        let (s, _) = decide(rules, None);
        let rev = |t: i64| crate::model::Revocation {
            reason: "key copied".into(),
            effective_from_unix_ms: t,
            log_index: 0,
            counted_after_revocation: vec![],
        };
        assert_eq!(
            crate::apply::arbiters::counted_after(&s, "a1", &rev(2_000)),
            vec!["m1".to_string()]
        );
        assert!(crate::apply::arbiters::counted_after(&s, "a1", &rev(2_101)).is_empty());
        assert!(crate::apply::arbiters::counted_after(&s, "b9", &rev(0)).is_empty());
    }

    /// Without b2's dissent the same three would carry it: the close decides from what is
    /// stored, and records b2 as committed-not-revealed once its window is over.
    #[test]
    fn a_close_before_the_reveal_deadline_is_refused_and_absent_seats_are_recorded() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let a1 = seal(1, Decision::Yes, d, 1);
        let a2 = seal(2, Decision::Yes, d, 2);
        let b1 = seal(3, Decision::Yes, d, 3);
        let b2 = seal(4, Decision::No, d, 4);
        // b1 never committed (its node was unreachable); b2 commits and never reveals.
        let v = applied(&one(
            &mut s,
            2_100,
            "motion-driver",
            log(&m, &[&a1, &a2, &b2]),
        ));
        assert_eq!(v["not_committed"], serde_json::json!(["b1"]));
        for seat in [&a1, &a2] {
            applied(&one(&mut s, 3_000, "motion-driver", reveal(seat)));
        }
        // b1's reveal opens no logged commitment.
        let r = one(&mut s, 3_000, "b1-node", reveal(&b1));
        assert!(
            refused(&r).starts_with("reveal_without_commitment"),
            "{}",
            refused(&r)
        );
        for t in [3_000, REVEAL_DEADLINE as u64] {
            let r = one(&mut s, t, "motion-driver", close());
            let why = refused(&r);
            assert!(
                why.starts_with("close_too_early") && why.contains("b2"),
                "{why}"
            );
        }
        assert_eq!(s.motions.get("m1").unwrap().status, MotionStatus::Open);
        // After the deadline b2 can no longer reveal, and the close records who is absent.
        let r = one(&mut s, REVEAL_DEADLINE as u64 + 1, "b2-node", reveal(&b2));
        assert!(
            refused(&r).starts_with("reveal_outside_window"),
            "{}",
            refused(&r)
        );
        let v = applied(&one(
            &mut s,
            REVEAL_DEADLINE as u64 + 1,
            "motion-driver",
            close(),
        ));
        assert_eq!(
            v["absent"]["committed_not_revealed"],
            serde_json::json!(["b2"])
        );
        assert_eq!(v["absent"]["not_committed"], serde_json::json!(["b1"]));
        assert!(
            v["verdict"]["Deadlocked"].is_object(),
            "only stance A revealed: {v}"
        );
        let round = s.motions.get("m1").unwrap().round.clone().unwrap();
        assert_eq!(round.absent.unwrap().committed_not_revealed, vec!["b2"]);
    }

    #[test]
    fn reveals_without_a_logged_commitment_from_non_seats_or_for_other_motions_are_refused() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let a1 = seal(1, Decision::Yes, d, 1);
        let a2 = seal(2, Decision::Yes, d, 2);
        // Before any round is logged.
        let r = one(&mut s, 3_000, "a1-node", reveal(&a1));
        assert!(refused(&r).starts_with("no_round"), "{}", refused(&r));
        applied(&one(&mut s, 2_100, "motion-driver", log(&m, &[&a1])));
        let cases: Vec<(&str, Command, u64, &str)> = vec![
            (
                "no commitment logged",
                reveal(&a2),
                3_000,
                "reveal_without_commitment",
            ),
            (
                "non-seat",
                reveal(&seal(9, Decision::Yes, d, 9)),
                3_000,
                "bad_ruling",
            ),
            (
                "another motion digest",
                reveal(&seal(
                    1,
                    Decision::Yes,
                    panel_proto::motion_digest(&signed_motion(|m| m.reveal_deadline_unix_ms += 1)),
                    1,
                )),
                3_000,
                "motion_refused",
            ),
            (
                "a v1 ruling",
                reveal(&{
                    let mut x = seal(1, Decision::Yes, d, 1);
                    let mut r = x.signed.ruling.clone().unwrap();
                    r.motion_digest.clear();
                    x.signed = panel_proto::sign_ruling(&key(1), r).unwrap();
                    x
                }),
                3_000,
                "motion_refused",
            ),
            (
                "wrong salt",
                reveal(&Sealed {
                    salt: [7; 32],
                    ..seal(1, Decision::Yes, d, 1)
                }),
                3_000,
                "reveal_mismatch",
            ),
            (
                "before the commit deadline",
                reveal(&a1),
                COMMIT_DEADLINE as u64,
                "reveal_outside_window",
            ),
            (
                "after the reveal deadline",
                reveal(&a1),
                REVEAL_DEADLINE as u64 + 1,
                "reveal_outside_window",
            ),
        ];
        for (what, c, t, code) in cases {
            let r = one(&mut s, t, "anyone", c);
            assert!(refused(&r).starts_with(code), "{what}: {}", refused(&r));
        }
        let round = s.motions.get("m1").unwrap().round.clone().unwrap();
        assert!(
            round.commitments["a1"].reveal.is_none(),
            "nothing was stored"
        );
        // The genuine reveal is still accepted, from anyone, once.
        let v = applied(&one(&mut s, 3_000, "a1-node", reveal(&a1)));
        assert_eq!(v["submitted_by"], "a1-node");
        let r = one(&mut s, 3_001, "motion-driver", reveal(&a1));
        assert!(
            refused(&r).starts_with("already_revealed"),
            "{}",
            refused(&r)
        );
    }

    /// A reveal's text that is not hex is kept as text by the typed bytes and refused
    /// here, changing nothing; one in upper-case hex still counts, and the record keeps
    /// its text as submitted, so its leaf hashes as before the bytes were typed.
    #[test]
    fn a_reveal_that_is_not_hex_is_refused_and_one_in_upper_case_counts() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let a1 = seal(1, Decision::Yes, d, 1);
        applied(&one(&mut s, 2_100, "motion-driver", log(&m, &[&a1])));
        let submit = |text: &str| -> Command {
            ClientCommand::SubmitReveal {
                motion_id: "m1".into(),
                reveal: RevealBytes::from_hex(text),
            }
            .into()
        };
        let r = one(&mut s, 3_000, "anyone", submit("zz"));
        assert!(refused(&r).starts_with("bad_reveal"), "{}", refused(&r));
        let round = s.motions.get("m1").unwrap().round.clone().unwrap();
        assert!(
            round.commitments["a1"].reveal.is_none(),
            "nothing was stored"
        );
        let upper = a1.reveal().to_hex().to_ascii_uppercase();
        applied(&one(&mut s, 3_000, "a1-node", submit(&upper)));
        let last = s.record.iter().last().expect("the reveal is on the record");
        let json = serde_json::to_value(&last.command).expect("encodes");
        assert_eq!(json["SubmitReveal"]["reveal"], upper.as_str());
    }

    #[test]
    fn commitments_from_non_seats_late_or_forged_and_a_second_log_are_refused() {
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let a1 = seal(1, Decision::Yes, d, 1);
        let outsider = seal(9, Decision::Yes, d, 9);
        let mut late = seal(2, Decision::Yes, d, 2);
        late.commitment = panel_proto::commit_reveal::commit(
            &key(2),
            &late.signed,
            &late.salt,
            COMMIT_DEADLINE + 1,
        )
        .unwrap();
        let mut forged = seal(3, Decision::Yes, d, 3);
        forged.commitment.committed_at_unix_ms = 1_000;
        let other_motion = signed_motion(|m| m.panel.truncate(3));
        let cases: Vec<(&str, Command, u64, &str)> = vec![
            (
                "non-seat",
                log(&m, &[&a1, &outsider]),
                2_100,
                "bad_commitment",
            ),
            ("late", log(&m, &[&a1, &late]), 2_100, "late_commitment"),
            ("forged", log(&m, &[&forged]), 2_100, "bad_commitment"),
            ("twice", log(&m, &[&a1, &a1]), 2_100, "bad_commitment"),
            (
                "other seats",
                log(&other_motion, &[&a1]),
                2_100,
                "motion_refused",
            ),
            (
                "expired",
                log(&m, &[&a1]),
                REVEAL_DEADLINE as u64 + 1,
                "round_expired",
            ),
        ];
        for (what, c, t, code) in cases {
            let mut s = setup();
            let r = one(&mut s, t, "motion-driver", c);
            assert!(refused(&r).starts_with(code), "{what}: {}", refused(&r));
            assert!(s.motions.get("m1").unwrap().round.is_none(), "{what}");
        }
        let mut s = setup();
        applied(&one(&mut s, 2_100, "motion-driver", log(&m, &[&a1])));
        let r = one(
            &mut s,
            2_200,
            "motion-driver",
            log(&m, &[&a1, &seal(2, Decision::Yes, d, 2)]),
        );
        assert!(refused(&r).starts_with("round_logged"), "{}", refused(&r));
    }

    /// A seat that revealed and then signs another answer to the same motion: the second
    /// ruling is kept as evidence and never counted; a third is refused.
    #[test]
    fn equivocation_is_recorded_and_never_counted() {
        let mut s = setup();
        let m = signed_motion(|_| {});
        let d = panel_proto::motion_digest(&m);
        let seats: Vec<Sealed> = (1..=4).map(|i| seal(i, Decision::Yes, d, i)).collect();
        applied(&one(
            &mut s,
            2_100,
            "motion-driver",
            log(&m, &seats.iter().collect::<Vec<_>>()),
        ));
        applied(&one(&mut s, 3_000, "motion-driver", reveal(&seats[3])));
        let flip = seal(4, Decision::No, d, 40);
        let v = applied(&one(&mut s, 3_100, "b2-node", reveal(&flip)));
        assert_eq!(v["equivocation"], true);
        assert_eq!(v["counted"], false);
        let r = one(
            &mut s,
            3_200,
            "b2-node",
            reveal(&seal(4, Decision::No, d, 41)),
        );
        assert!(refused(&r).starts_with("equivocation"), "{}", refused(&r));
        for seat in &seats[..3] {
            applied(&one(&mut s, 3_300, "motion-driver", reveal(seat)));
        }
        let v = applied(&one(&mut s, 3_400, "motion-driver", close()));
        assert!(
            v["verdict"]["Accepted"].is_object(),
            "the first ruling counts: {v}"
        );
        assert_eq!(v["equivocated"], serde_json::json!(["b2"]));
        let round = s.motions.get("m1").unwrap().round.clone().unwrap();
        assert!(round.commitments["b2"].equivocation.is_some());
    }
}
