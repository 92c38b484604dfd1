//! Arbiter commands: registration, admission by exam, key revocation and rotation, and
//! the prior-consistency check.

use crate::apply::error::{ApplyError, RevocationError, RotationError, non_empty};
use crate::command::ArbiterRegistration;
use crate::features::admission::ExamRefusal;
use crate::features::priors::Claim;
use crate::model::ApplyCtx;
use crate::model::{Arbiter, Revocation, RotatedKey, State};
use crate::reply::{
    CheckPriorsReply, ExamReply, ExamWritten, FlaggedDeclaration, RegisterArbiterReply, Reply,
    RevokeKeyReply, RotateKeyReply, SetAdmissionReply, to_value,
};
use crate::rules::hex_bytes::PublicKeyBytes;
use crate::rules::ruling;

pub(super) fn register(
    state: &mut State,
    ctx: &ApplyCtx,
    reg: &ArbiterRegistration,
) -> Result<Reply, ApplyError> {
    non_empty("arbiter_id", &reg.arbiter_id)?;
    non_empty("organisation", &reg.organisation)?;
    non_empty("model_family", &reg.model_family)?;
    let key = ruling::parse_public_key(&reg.arbiter_id, &reg.public_key)?;
    if state.charter.is_some() {
        crate::features::charter_rules::check_registration(state, reg)?;
    }
    if state.arbiters.contains(&reg.arbiter_id) {
        return Err(ApplyError::ArbiterExists(reg.arbiter_id.clone()));
    }
    // One key, one arbiter, ever: a key held now or rotated away cannot be registered again.
    if let Some(other) = holder(
        state,
        key.as_bytes(),
        &reg.public_key.to_hex(),
        Held::NowOrBefore,
    ) {
        return Err(ApplyError::KeyInUse(other));
    }
    // One spelling per key from rule set 28, so every lookup by hex finds it.
    if state.rules >= crate::rules::KEYS_AS_BYTES
        && reg.public_key.to_hex() != hex::encode(key.as_bytes())
    {
        return Err(ruling::RulingError::KeyNotLowercase {
            arbiter: reg.arbiter_id.clone(),
        }
        .into());
    }
    state.arbiters.insert(
        reg.arbiter_id.clone(),
        Arbiter {
            registration: reg.clone(),
            admitted: false,
            score_milli: 0,
            registered_at_ms: ctx.time_ms,
            exam: None,
            prior_check: None,
            fitted_stance: None,
            revoked: None,
            key_history: Vec::new(),
            recalibration: Default::default(),
        },
    );
    Ok(Reply::from(RegisterArbiterReply {
        arbiter_id: reg.arbiter_id.clone(),
    }))
}

/// An arbiter's signed stance for one debate (`declared_priors`).
pub(super) fn declare_stance(
    state: &mut State,
    ctx: &ApplyCtx,
    d: &crate::command::StanceDeclaration,
) -> Result<Reply, ApplyError> {
    let declared = crate::features::declared_priors::check(state, d)?;
    if declared == crate::features::declared_priors::Declared::New {
        crate::features::declared_priors::record(state, d, ctx.log_index);
        // A new declaration may seat a question that waited for one (an appeal).
        if state.rules >= crate::rules::APPEALS_WAIT
            && state
                .debates
                .get(&d.debate_id)
                .is_some_and(|r| !r.waiting.is_empty())
        {
            super::debates::open_pending(state, ctx, &d.debate_id);
        }
    }
    Ok(Reply::from(crate::reply::DeclareStanceReply {
        arbiter_id: d.arbiter_id.clone(),
        debate_id: d.debate_id.clone(),
        stance: d.stance,
        repeated: declared == crate::features::declared_priors::Declared::Repeated,
    }))
}

/// Records an admission decision directly (test and operations command; see
/// `TestCommand::SetAdmission`).
pub(super) fn set_admission(
    state: &mut State,
    arbiter_id: &str,
    admitted: bool,
    score_milli: u32,
) -> Result<Reply, ApplyError> {
    let a = state
        .arbiters
        .get_mut(arbiter_id)
        .ok_or_else(|| ApplyError::UnknownArbiter(arbiter_id.to_owned()))?;
    a.admitted = admitted;
    a.score_milli = score_milli;
    Ok(Reply::from(SetAdmissionReply {
        arbiter_id: arbiter_id.to_owned(),
        admitted,
    }))
}

/// Records a signed revocation (signed by the revoked key): the arbiter is no longer
/// drawn and its rulings no longer count.
pub(super) fn revoke_key(
    state: &mut State,
    ctx: &ApplyCtx,
    revocation: &str,
) -> Result<Reply, ApplyError> {
    let bytes = hex::decode(revocation).map_err(|_| RevocationError::NotHex)?;
    let doc = <panel_proto::pb::KeyRevocation as prost::Message>::decode(bytes.as_slice())
        .map_err(RevocationError::from)?;
    let key = panel_proto::keys::verify_revocation(&doc).map_err(RevocationError::from)?;
    let key_hex = hex::encode(key.as_bytes());
    let id = holder(state, key.as_bytes(), &key_hex, Held::Now).ok_or_else(|| {
        RevocationError::UnknownKey {
            key: key_hex.clone(),
        }
    })?;
    let mut revocation = Revocation {
        reason: doc.reason,
        effective_from_unix_ms: doc.effective_from_unix_ms,
        log_index: ctx.log_index,
        counted_after_revocation: Vec::new(),
    };
    if state.rules >= crate::rules::REVOCATION_TIME {
        revocation.counted_after_revocation = counted_after(state, &id, &revocation);
    }
    let counted_after_revocation = revocation.counted_after_revocation.clone();
    if let Some(a) = state.arbiters.get_mut(&id) {
        a.admitted = false;
        a.revoked = Some(to_value(&revocation));
    }
    Ok(Reply::from(RevokeKeyReply {
        arbiter_id: id,
        revoked: true,
        counted_after_revocation,
    }))
}

/// How many of the latest opened motions a revocation dated back is checked against.
const REVOCATION_LOOKBACK: usize = 1000;

/// Decided motions among the [`REVOCATION_LOOKBACK`] latest that counted a ruling of
/// `arbiter` committed under the revoked key after the revocation took effect.
pub(super) fn counted_after(state: &State, arbiter: &str, rev: &Revocation) -> Vec<String> {
    let mut hit: Vec<String> = state
        .motions
        .latest_opened(REVOCATION_LOOKBACK)
        .iter()
        .filter(|m| m.decided_log_index.is_some())
        .filter_map(|m| {
            let round = m.round.as_ref()?;
            let seat = round.commitments.get(arbiter)?;
            let counted = seat.reveal.is_some()
                && !round
                    .absent
                    .as_ref()
                    .is_some_and(|a| a.revoked.iter().any(|r| r == arbiter));
            (counted && rev.covers(round.logged_at_ms)).then(|| m.spec.motion_id.clone())
        })
        .collect();
    hit.sort();
    hit
}

/// Whether a key search counts the keys arbiters rotated away from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    Now,
    NowOrBefore,
}

/// The arbiter holding `key` (written `hex` in the command): compared as key bytes from
/// rule set [`KEYS_AS_BYTES`](crate::rules::KEYS_AS_BYTES), as hex text before it (so
/// older records replay as they applied).
fn holder(state: &State, key: &[u8], hex: &str, held: Held) -> Option<String> {
    let as_bytes = state.rules >= crate::rules::KEYS_AS_BYTES;
    state
        .arbiters
        .iter()
        .find(|(_, a)| match (as_bytes, held) {
            (true, Held::Now) => a.holds_key(key),
            (true, Held::NowOrBefore) => a.holds_or_held_key(key),
            (false, Held::Now) => a.registration.public_key.to_hex() == hex,
            (false, Held::NowOrBefore) => a.holds_or_held(hex),
        })
        .map(|(id, _)| id.clone())
}

/// Records a signed key rotation: both signatures verify strictly (old key: authority; new
/// key: possession), the old key belongs to a registered, unrevoked arbiter, and the new
/// key is nobody's yet. From this entry on the arbiter's rulings must carry the new key;
/// rulings already recorded under the old key stay valid, and the old key is kept in
/// `key_history`.
pub(super) fn rotate_key(
    state: &mut State,
    ctx: &ApplyCtx,
    rotation: &str,
) -> Result<Reply, ApplyError> {
    let bytes = hex::decode(rotation).map_err(|_| RotationError::NotHex)?;
    let doc = <panel_proto::pb::KeyRotation as prost::Message>::decode(bytes.as_slice())
        .map_err(RotationError::from)?;
    let (old, new) = panel_proto::keys::verify_rotation(&doc).map_err(RotationError::from)?;
    let (old_hex, new_hex) = (hex::encode(old.as_bytes()), hex::encode(new.as_bytes()));
    // One key, one arbiter, ever: the same rule as registration.
    if let Some(other) = holder(state, new.as_bytes(), &new_hex, Held::NowOrBefore) {
        return Err(RotationError::KeyTaken { other }.into());
    }
    let id = holder(state, old.as_bytes(), &old_hex, Held::Now).ok_or_else(|| {
        RotationError::UnknownOldKey {
            fingerprint: panel_proto::fingerprint(&old),
        }
    })?;
    let Some(a) = state.arbiters.get_mut(&id) else {
        return Err(ApplyError::UnknownArbiter(id));
    };
    if a.revoked.is_some() {
        return Err(RotationError::Revoked { arbiter: id }.into());
    }
    a.key_history.push(RotatedKey {
        public_key: PublicKeyBytes::new(old.to_bytes()),
        rotated_to: PublicKeyBytes::new(new.to_bytes()),
        reason: doc.reason.clone(),
        issued_at_unix_ms: doc.issued_at_unix_ms,
        log_index: ctx.log_index,
    });
    a.registration.public_key = PublicKeyBytes::new(new.to_bytes());
    Ok(Reply::from(RotateKeyReply {
        arbiter_id: id,
        old_fingerprint: panel_proto::fingerprint(&old),
        new_fingerprint: panel_proto::fingerprint(&new),
    }))
}

pub(super) fn submit_exam(
    state: &mut State,
    ctx: &ApplyCtx,
    arbiter_id: &str,
    reveals: &[crate::rules::hex_bytes::RevealBytes],
    motions: &[crate::rules::signed_motion::WireMotion],
) -> Result<Reply, ApplyError> {
    let arbiter = state
        .arbiters
        .get(arbiter_id)
        .ok_or_else(|| ApplyError::UnknownArbiter(arbiter_id.to_string()))?;
    let key = ruling::parse_public_key(arbiter_id, &arbiter.registration.public_key)?;
    let exam =
        crate::features::admission::default_exam().map_err(|e| ExamRefusal::Load(e.clone()))?;
    let digests = if state.rules >= crate::rules::EXAM_MOTIONS {
        let pinned = crate::features::charter_rules::current_motion_key(state);
        Some(
            crate::features::admission::check_exam_motions(
                exam,
                arbiter_id,
                motions,
                pinned.as_ref(),
                ctx.memo,
            )
            .map_err(ExamRefusal::from)?,
        )
    } else {
        None
    };
    let answers = crate::features::admission::answers_from_reveals(
        exam,
        arbiter_id,
        &key,
        reveals,
        digests.as_ref(),
        ctx.memo,
    )
    .map_err(ExamRefusal::from)?;
    let (scores, decision) =
        crate::features::admission::admit(exam, arbiter_id, &answers, (ctx.time_ms / 1000) as i64)
            .map_err(ExamRefusal::from)?;
    let written = ExamWritten {
        scores: &scores,
        decision: &decision,
        probes: None,
        sitting: None,
        topics: None,
        held_back: None,
    };
    crate::features::admission::record_exam(state, arbiter_id, &written);
    Ok(Reply::from(ExamReply {
        arbiter_id: arbiter_id.to_owned(),
        admitted: decision.admitted,
        exam: to_value(&written),
    }))
}

/// Runs the prior-consistency check over the ruling history and records its findings; a
/// confirmed arbiter is seated under its fitted camp from then on.
pub(crate) fn check_priors(
    state: &mut State,
    at: (u64, u64),
) -> Result<CheckPriorsReply, ApplyError> {
    let reply = if state.rules >= crate::rules::DECLARED_CAMPS {
        check_claims(state)?
    } else {
        check_registered(state)?
    };
    // An armed breaker that trips on flags pauses new motions (`breakers::note_flagged`).
    let flagged: Vec<String> = reply
        .flagged
        .iter()
        .cloned()
        .chain(
            reply
                .flagged_declarations
                .iter()
                .map(|d| d.arbiter_id.clone()),
        )
        .collect();
    crate::features::breakers::note_flagged(state, &flagged, at);
    Ok(reply)
}

/// The check before rule set `DECLARED_CAMPS`: registered stances only.
fn check_registered(state: &mut State) -> Result<CheckPriorsReply, ApplyError> {
    let findings = crate::features::priors::run(state)?;
    let mut flagged = Vec::new();
    for (id, finding, fitted) in findings {
        if let Some(a) = state.arbiters.get_mut(&id) {
            a.prior_check = Some(finding);
            a.fitted_stance = fitted;
            if fitted.is_some() {
                flagged.push(id);
            }
        }
    }
    Ok(CheckPriorsReply {
        flagged,
        flagged_declarations: Vec::new(),
    })
}

/// The check from rule set `DECLARED_CAMPS` on (`priors::run_by_claim`): a registered
/// claim's finding goes on the arbiter as before; a declaration's on its debate, where a
/// confirmed mismatch reseats the arbiter under its fitted camp for that debate only.
/// Claims the window does not reach keep their last finding.
fn check_claims(
    state: &mut State,
) -> Result<CheckPriorsReply, crate::features::priors::PriorCheckError> {
    let mut reply = CheckPriorsReply::default();
    for f in crate::features::priors::run_by_claim(state)? {
        match f.claim {
            Claim::Registered { arbiter_id } => {
                if let Some(a) = state.arbiters.get_mut(&arbiter_id) {
                    a.prior_check = Some(to_value(&f.finding));
                    a.fitted_stance = f.fitted;
                    if f.fitted.is_some() {
                        reply.flagged.push(arbiter_id);
                    }
                }
            }
            Claim::Declared {
                arbiter_id,
                debate_id,
            } => {
                let Some(d) = state.debates.get_mut(&debate_id) else {
                    continue;
                };
                d.prior_checks.insert(arbiter_id.clone(), f.finding);
                match f.fitted {
                    Some(fitted) => {
                        d.fitted_stances.insert(arbiter_id.clone(), fitted);
                        reply.flagged_declarations.push(FlaggedDeclaration {
                            arbiter_id,
                            debate_id,
                            fitted,
                        });
                    }
                    None => {
                        d.fitted_stances.remove(&arbiter_id);
                    }
                }
            }
        }
    }
    Ok(reply)
}
