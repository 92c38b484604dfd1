//! Motion commands: opening a motion (the panel draw) and recording its outcome (every
//! ruling re-verified, then the acceptance rule).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::debates::open_pending;
use super::{ApplyCtx, ApplyError, non_empty};
use crate::acceptance::{self, Acceptance, Seat};
use crate::command::{MotionSpec, OutcomeSubmission};
use crate::debates;
use crate::draw::{self, Candidate, DrawSpec};
use crate::model::{Motion, MotionStatus, State};
use crate::ruling::{self, Binding, RulingError, WireRuling};
use crate::signed_motion;

pub(super) fn open_motion(
    state: &mut State,
    ctx: &ApplyCtx,
    spec: &MotionSpec,
) -> Result<Value, ApplyError> {
    non_empty("motion_id", &spec.motion_id)?;
    non_empty("debate_id", &spec.debate_id)?;
    if spec.state_hash.len() != 64 || hex::decode(&spec.state_hash).is_err() {
        return Err(ApplyError::BadStateHash(spec.state_hash.clone()));
    }
    if state.motions.contains(&spec.motion_id) {
        return Err(ApplyError::MotionExists(spec.motion_id.clone()));
    }
    let pool: Vec<Candidate> = state
        .arbiters
        .iter()
        .map(|(id, a)| Candidate {
            id: id.clone(),
            stance: a.seated_stance(),
            organisation: a.registration.organisation.clone(),
            model_family: a.registration.model_family.clone(),
            admitted: a.admitted && !a.recalibration.is_flagged(),
        })
        .collect();
    let draw_spec = DrawSpec {
        seats: spec.seats,
        min_per_stance: spec.min_per_stance,
        min_organisations: crate::charter::floors(state.charter.as_ref())
            .min_organisations
            .max(2),
        contributors: spec.contributors.iter().cloned().collect(),
        author_model_family: spec.author_model_family.clone(),
    };
    let draw_seed = ctx.derive_seed(&spec.motion_id);
    let panel = draw::draw(&pool, &draw_spec, draw_seed)?;
    let seats: Vec<Seat> = panel
        .into_iter()
        .map(|c| Seat {
            arbiter_id: c.id,
            stance: c.stance,
            organisation: c.organisation,
        })
        .collect();
    let reply = json!({ "motion_id": spec.motion_id, "seats": seats, "draw_seed": draw_seed });
    state.motions.insert(
        spec.motion_id.clone(),
        Motion {
            spec: spec.clone(),
            seats,
            draw_seed,
            opened_at_ms: ctx.time_ms,
            opened_log_index: ctx.log_index,
            status: MotionStatus::Open,
            rulings: Vec::new(),
            reveals: Vec::new(),
            decided_log_index: None,
        },
    );
    Ok(reply)
}

/// Re-verify every ruling (decoding, seat by registered key, binding to motion, debate,
/// kind and state hash, strict signature), then run the acceptance rule. A single bad
/// ruling refuses the whole submission, so a forged or replayed ruling can never ride
/// along with good ones; a second ruling from one arbiter is refused too.
pub(super) fn record_outcome(
    state: &mut State,
    ctx: &ApplyCtx,
    sub: &OutcomeSubmission,
) -> Result<Value, ApplyError> {
    let motion = state
        .motions
        .get(&sub.motion_id)
        .ok_or_else(|| ApplyError::UnknownMotion(sub.motion_id.clone()))?;
    if motion.status != MotionStatus::Open {
        return Err(ApplyError::MotionClosed(sub.motion_id.clone()));
    }
    let state_hash = hex::decode(&motion.spec.state_hash)
        .map_err(|_| ApplyError::BadStateHash(motion.spec.state_hash.clone()))?;
    let binding = Binding {
        motion_id: &motion.spec.motion_id,
        debate_id: &motion.spec.debate_id,
        kind: motion.spec.kind,
        state_hash: &state_hash,
    };
    // Seated arbiters by registered key.
    let mut seated: BTreeMap<Vec<u8>, (&str, ed25519_dalek::VerifyingKey)> = BTreeMap::new();
    for seat in &motion.seats {
        let arbiter = state
            .arbiters
            .get(&seat.arbiter_id)
            .ok_or_else(|| ApplyError::UnknownArbiter(seat.arbiter_id.clone()))?;
        let key = ruling::parse_public_key(&seat.arbiter_id, &arbiter.registration.public_key)?;
        if arbiter.revoked.is_some() {
            // A revoked key's rulings never count: treat it as holding no seat.
            continue;
        }
        seated.insert(key.to_bytes().to_vec(), (seat.arbiter_id.as_str(), key));
    }
    // The signed motion the driver put to the seats, if the outcome carries one: checked
    // before any ruling, so every ruling below is held against its digest.
    let motion_digest = match &sub.motion {
        Some(wire) => {
            let mut seat_keys = BTreeSet::new();
            for seat in &motion.seats {
                let arbiter = state
                    .arbiters
                    .get(&seat.arbiter_id)
                    .ok_or_else(|| ApplyError::UnknownArbiter(seat.arbiter_id.clone()))?;
                let key =
                    ruling::parse_public_key(&seat.arbiter_id, &arbiter.registration.public_key)?;
                seat_keys.insert(key.to_bytes().to_vec());
            }
            let pinned = state.charter.as_ref().and_then(|c| c.motion_key());
            Some(signed_motion::check(
                wire,
                &binding,
                &seat_keys,
                pinned.as_ref(),
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
    let debate_motion = motion.spec.question.is_some();
    if debate_motion && !sub.rulings.is_empty() {
        return Err(ApplyError::CommitmentRequired(sub.motion_id.clone()));
    }
    // Reveals: the commitment is signed by the arbiter and opened by the signed ruling
    // and the salt (docs/WIRE.md, commit-reveal); then the ruling is checked like any other.
    let mut from_reveals = Vec::with_capacity(sub.reveals.len());
    let mut rationales = Vec::with_capacity(sub.reveals.len());
    for hex_reveal in &sub.reveals {
        let bad = |reason: String| ApplyError::BadReveal {
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
            panel_proto::commit_reveal::verify_commitment(&c).map_err(|e| bad(e.to_string()))?;
        }
        panel_proto::commit_reveal::check_opens(&c, &sr, &salt).map_err(|e| bad(e.to_string()))?;
        if c.motion_id != motion.spec.motion_id {
            return Err(bad(format!("the commitment is for motion {}", c.motion_id)));
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
        if !seen.insert(*arbiter_id) {
            return Err(ApplyError::DuplicateRuling((*arbiter_id).to_owned()));
        }
        let checked = ruling::check(sr, arbiter_id, key, &binding)?;
        signed_motion::check_ruling(sr, arbiter_id, &sub.motion_id, motion_digest.as_ref())?;
        revealed.extend(checked.revealed);
        receipts.extend(checked.receipt);
    }
    let policy = motion.spec.policy.clone().unwrap_or_default();
    let verdict = acceptance::decide(
        motion.spec.kind,
        &motion.seats,
        &revealed,
        &receipts,
        &policy,
    );
    let question = motion.spec.question.clone();
    let debate_id = motion.spec.debate_id.clone();
    let mut reply = json!({ "motion_id": sub.motion_id, "verdict": verdict });
    if let Some(d) = motion_digest {
        reply["motion_digest"] = json!(hex::encode(d));
    }
    let mut all = sub.rulings.clone();
    all.extend(from_reveals.iter().map(WireRuling::encode));
    if let Some(m) = state.motions.get_mut(&sub.motion_id) {
        m.status = MotionStatus::Decided(verdict.clone());
        m.rulings = all;
        m.reveals = sub.reveals.clone();
        m.decided_log_index = Some(ctx.log_index);
    }
    if let Some(q) = question
        && let Some(rec) = state.debates.get_mut(&debate_id)
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
                rec.settle(
                    ctx.time_ms,
                    &sub.motion_id,
                    debates::answer_of(outcome),
                    rationale.trim(),
                )
                .map_err(|e| e.to_string())
            }
            Acceptance::Deadlocked(_) => {
                rec.deadlocked(&sub.motion_id, &q);
                Ok(())
            }
        };
        reply["settled"] = match settled {
            Ok(()) => json!(true),
            Err(e) => json!({ "refused": e }),
        };
        reply["opened"] = json!(open_pending(state, ctx, &debate_id));
    }
    if let Some(r) = crate::recalibration::on_outcome(state, &sub.motion_id) {
        reply["recalibration"] = r;
    }
    Ok(reply)
}
