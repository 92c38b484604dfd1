//! The charter's own command: `AdoptCharter`, once, as the first record entry
//! (crate::features::charter_rules for the rules it brings).

use panel_federation::Charter;

use crate::apply::error::ApplyError;
use crate::command::OrganisationAdmission;
use crate::features::charter_rules::CharterRuleError;
use crate::model::State;
use crate::reply::{
    AdmitOrganisationReply, AdoptCharterReply, RegisterContributorReply, RemoveOrganisationReply,
    Reply, RotateMotionKeyReply, RotateRosterKeyReply,
};

pub(super) fn register_contributor(
    state: &mut State,
    ctx: &crate::model::ApplyCtx,
    reg: &crate::command::ContributorRegistration,
) -> Result<Reply, ApplyError> {
    if reg.name.trim().is_empty() {
        return Err(ApplyError::Empty { field: "name" });
    }
    if state.contributors.contains(&reg.name) || state.arbiters.contains(&reg.name) {
        return Err(CharterRuleError::NameTaken(reg.name.clone()).into());
    }
    let key = crate::features::charter_rules::check_contributor(state, reg)?;
    state.contributors.insert(
        reg.name.clone(),
        crate::authorship::AuthorKey {
            public_key: hex::encode(key).into(),
            bound_at_log_index: ctx.log_index,
        },
    );
    // Kept whatever the rule set: an appeal it files later is charged to this
    // organisation (`appeal_credits`), and the row changes no reply.
    state
        .appeal_credits
        .contributor_organisations
        .insert(reg.name.clone(), reg.organisation.clone());
    Ok(Reply::from(RegisterContributorReply {
        contributor: reg.name.clone(),
        organisation: reg.organisation.clone(),
    }))
}

pub(super) fn admit_organisation(
    state: &mut State,
    adm: &OrganisationAdmission,
) -> Result<Reply, ApplyError> {
    crate::features::charter_rules::check_admission(state, adm)?;
    state.admitted_organisations.push(adm.organisation.clone());
    Ok(Reply::from(AdmitOrganisationReply {
        organisation: adm.organisation.name.clone(),
        endorsed_by: adm.endorsements.iter().map(|e| e.by.clone()).collect(),
    }))
}

/// Removes a member organisation (checked by `charter_rules::check_removal`): from this
/// entry on it endorses nothing, its arbiters are drawn on no panel, every replica's
/// transport stops trusting its authority, and every open debate motion seating one of
/// its arbiters is withdrawn and its question asked again (docs/FEDERATION.md, "Removal").
pub(super) fn remove_organisation(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    rm: &crate::command::OrganisationRemoval,
) -> Result<Reply, ApplyError> {
    let member = crate::features::charter_rules::check_removal(state, rm)
        .map_err(crate::features::charter_rules::CharterRuleError::from)?;
    state.removed_organisations.push(member.clone());
    let reseated = reseat_motions_of(state, ctx, &member.name);
    let remaining = crate::features::endorsers::organisations(state)
        .map(|o| o.name.clone())
        .collect();
    Ok(Reply::from(RemoveOrganisationReply {
        organisation: member.name,
        endorsed_by: rm.endorsements.iter().map(|e| e.by.clone()).collect(),
        remaining,
        reseated,
    }))
}

/// Withdraws every open debate motion that seats an arbiter of the removed
/// `organisation` (decided with [`DeadlockReason::SeatsRemoved`], no ruling counted) and
/// asks its question again under a new motion, drawn from the organisations still in
/// force. A new motion id, not new seats on the old one: an arbiter's node commits once
/// per motion id, so the arbiters who stay could not answer the old id's second panel.
/// Motions without a debate question (raw test motions, procedure runs, exam sittings)
/// are left to their windows.
///
/// [`DeadlockReason::SeatsRemoved`]: crate::rules::acceptance::DeadlockReason::SeatsRemoved
fn reseat_motions_of(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    organisation: &str,
) -> Vec<crate::reply::Reseated> {
    use crate::rules::acceptance::{Acceptance, DeadlockReason, Dissent};
    let seats_member = |state: &State, m: &crate::model::Motion| {
        m.seats.iter().any(|seat| {
            state
                .arbiters
                .get(&seat.arbiter_id)
                .is_some_and(|a| a.registration.organisation == organisation)
        })
    };
    type Affected = (
        String,
        String,
        crucible::motion::Question,
        Option<crucible::motion::Answer>,
    );
    let affected: Vec<Affected> = state
        .motions
        .iter_held()
        .filter(|(_, m)| m.status == crate::model::MotionStatus::Open && seats_member(state, m))
        .filter_map(|(id, m)| {
            let q = m.spec.question.clone()?;
            state
                .debates
                .get(&m.spec.debate_id)
                .map(|_| (id.clone(), m.spec.debate_id.clone(), q, m.spec.expected))
        })
        .collect();
    let mut reseated = Vec::with_capacity(affected.len());
    for (k, (motion_id, debate_id, question, expected)) in affected.into_iter().enumerate() {
        if let Some(m) = state.motions.get_mut(&motion_id) {
            m.status = crate::model::MotionStatus::Decided(Acceptance::Deadlocked(Dissent {
                reasons: vec![DeadlockReason::SeatsRemoved {
                    organisation: organisation.to_owned(),
                }],
                tallies: Default::default(),
                ignored: Vec::new(),
            }));
            m.decided_log_index = Some(ctx.log_index);
        }
        if let Some(rec) = state.debates.get_mut(&debate_id) {
            rec.withdrawn(&question);
        }
        let opened = super::debates::reask(state, ctx, &debate_id, &question, expected, k);
        reseated.push(crate::reply::Reseated {
            withdrawn: motion_id,
            debate_id,
            opened,
        });
    }
    reseated
}

/// Rotates a member's roster key (checked by `roster_keys::check`).
pub(super) fn rotate_roster_key(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    rot: &crate::command::RosterKeyRotation,
) -> Result<Reply, ApplyError> {
    let change = crate::features::roster_keys::check(state, rot, ctx.log_index)
        .map_err(crate::features::charter_rules::CharterRuleError::from)?;
    let reply = RotateRosterKeyReply {
        organisation: change.organisation.clone(),
        seq: change.seq,
        from: change.previous.clone(),
        to: change.key.clone(),
        overlap_until_ms: change.overlap_until_ms,
        endorsed_by: rot.endorsements.iter().map(|e| e.by.clone()).collect(),
    };
    state.roster_keys.push(change);
    Ok(Reply::from(reply))
}

/// Rotates the cluster's motion key (checked by `charter_rules::check_rotation`): motions opened
/// from this entry on must be signed by the new key; motions already open keep the key
/// they were opened under.
pub(super) fn rotate_motion_key(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    rot: &crate::command::MotionKeyRotation,
) -> Result<Reply, ApplyError> {
    let from = crate::features::charter_rules::current_motion_key(state);
    let to = crate::features::charter_rules::check_rotation(state, rot)?;
    state.motion_keys.push(crate::model::MotionKeyChange {
        seq: rot.seq,
        key: crate::rules::hex_bytes::PublicKeyBytes::new(to.to_bytes()),
        log_index: ctx.log_index,
    });
    Ok(Reply::from(RotateMotionKeyReply {
        seq: rot.seq,
        from: from.map(|k| crate::rules::hex_bytes::PublicKeyBytes::new(k.to_bytes())),
        to: crate::rules::hex_bytes::PublicKeyBytes::new(to.to_bytes()),
        endorsed_by: rot.endorsements.iter().map(|e| e.by.clone()).collect(),
    }))
}

/// Authorises the next change of voters (checked by `membership::check_membership`); the
/// replicas' `Admin.ChangeMembership` then executes it.
pub(super) fn authorise_membership(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    auth: &crate::command::MembershipAuthorisation,
) -> Result<Reply, ApplyError> {
    let endorsed_by = crate::features::membership::check_membership(state, auth)
        .map_err(crate::features::charter_rules::CharterRuleError::from)?;
    let change = crate::features::membership::record(state, auth, endorsed_by, ctx.log_index);
    Ok(Reply::from(change))
}

/// `SetBreaker`: a checked order pauses or lifts its scopes; lifting new motions opens
/// every question that waited for the pause to end.
pub(super) fn set_breaker(
    state: &mut State,
    ctx: &crate::apply::ApplyCtx,
    order: &crate::log::breaker_order::BreakerOrder,
) -> Result<Reply, ApplyError> {
    let endorsed_by = crate::features::breakers::check(state, order)?;
    crate::features::breakers::record(
        state,
        order,
        endorsed_by.clone(),
        (ctx.log_index, ctx.time_ms),
    );
    let mut opened = Vec::new();
    if !order.pause
        && order
            .scopes
            .contains(&crate::log::breaker_order::Scope::Motions)
    {
        let debates: Vec<String> = state.debates.iter().map(|(id, _)| id.clone()).collect();
        for id in debates {
            opened.extend(super::debates::open_pending(state, ctx, &id));
        }
        let runs: Vec<String> = state.runs.iter().map(|(id, _)| id.clone()).collect();
        for id in runs {
            opened.extend(super::runs::open_pending(state, ctx, &id));
        }
    }
    Ok(Reply::from(crate::reply::BreakerReply {
        seq: order.seq,
        pause: order.pause,
        scopes: order.scopes.clone(),
        endorsed_by,
        paused_now: state.breakers.paused.keys().copied().collect(),
        opened,
    }))
}

pub(super) fn adopt_charter(state: &mut State, charter: &Charter) -> Result<Reply, ApplyError> {
    if state.charter.is_some() {
        return Err(CharterRuleError::AlreadyChartered.into());
    }
    if !state.record.is_empty() {
        return Err(CharterRuleError::NotFirst {
            entries: state.record.len() as usize,
        }
        .into());
    }
    charter.check().map_err(CharterRuleError::Invalid)?;
    let digest = charter.digest().map_err(CharterRuleError::Invalid)?;
    state.charter = Some(charter.clone());
    Ok(Reply::from(AdoptCharterReply {
        charter: hex::encode(digest),
        organisations: charter
            .organisations
            .iter()
            .map(|o| o.name.clone())
            .collect(),
        replicas: charter.replicas.iter().map(|r| r.id).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{
        ArbiterRegistration, ClientCommand, Command, DebateSpec, InternalCommand, ItemReply,
    };
    use crate::features::charter_rules::tests::{charter, org_key};
    use crate::rules::acceptance::{Policy, Stance};
    use panel_proto::SigningKey;

    fn write(state: &mut State, n: u64, command: Command) -> ItemReply<crate::reply::Reply> {
        crate::apply::write_one(state, n, command)
    }

    fn adopt() -> Command {
        InternalCommand::AdoptCharter(Box::new(charter())).into()
    }

    fn chartered() -> State {
        let mut s = State::default();
        assert!(matches!(write(&mut s, 1, adopt()), ItemReply::Applied(_)));
        s
    }

    fn code(r: &ItemReply<crate::reply::Reply>) -> (String, String) {
        match r {
            ItemReply::Refused { code, message } => (code.to_string(), message.clone()),
            ItemReply::Applied(v) => panic!("applied: {v}"),
        }
    }

    fn arbiter_key(i: u8) -> SigningKey {
        SigningKey::from_bytes(&[i; 32])
    }

    fn registration(id: &str, key: &SigningKey, org: &str) -> ArbiterRegistration {
        ArbiterRegistration {
            arbiter_id: id.into(),
            public_key: hex::encode(key.verifying_key().to_bytes()).into(),
            organisation: org.into(),
            model_family: "fam".into(),
            stance: Stance::A,
            endpoint: "link".into(),
            attestation: None,
            lineage: None,
        }
    }

    fn attested(id: &str, key: &SigningKey, org: &str, org_signer: &SigningKey) -> Command {
        let mut reg = registration(id, key, org);
        reg.attestation =
            Some(crate::features::charter_rules::attest(&reg, key, org_signer).unwrap());
        ClientCommand::RegisterArbiter(reg).into()
    }

    #[test]
    fn the_charter_is_adopted_once_and_only_as_the_first_entry() {
        let mut s = chartered();
        let (c, m) = code(&write(&mut s, 2, adopt()));
        assert_eq!(c, "charter");
        assert!(m.contains("already has its charter"), "{m}");

        let mut late = State::default();
        let first = write(
            &mut late,
            1,
            ClientCommand::RegisterArbiter(registration("early", &arbiter_key(9), "north")).into(),
        );
        assert!(matches!(first, ItemReply::Applied(_)), "{first:?}");
        let (c, m) = code(&write(&mut late, 2, adopt()));
        assert_eq!(c, "charter");
        assert!(m.contains("first entry"), "{m}");
        assert!(late.charter.is_none());

        let mut bad = charter();
        bad.floors.min_organisations = 1;
        let mut s = State::default();
        let (c, _) = code(&write(
            &mut s,
            1,
            InternalCommand::AdoptCharter(Box::new(bad)).into(),
        ));
        assert_eq!(c, "charter");
    }

    #[test]
    fn under_a_charter_registration_needs_possession_and_the_organisations_endorsement() {
        let mut s = chartered();
        let honest = arbiter_key(1);
        // No attestation at all (the pre-charter form).
        let bare = ClientCommand::RegisterArbiter(registration("a1", &honest, "north")).into();
        let (c, m) = code(&write(&mut s, 2, bare));
        assert_eq!(c, "charter");
        assert!(m.contains("no attestation"), "{m}");
        // An honest arbiter's key registered by someone who does not hold it.
        let thief = arbiter_key(2);
        let mut stolen = registration("fake", &honest, "north");
        let sig = crate::features::charter_rules::attest(&stolen, &thief, &org_key(0)).unwrap();
        stolen.attestation = Some(sig);
        let (c, m) = code(&write(
            &mut s,
            3,
            ClientCommand::RegisterArbiter(stolen).into(),
        ));
        assert_eq!(c, "charter");
        assert!(m.contains("proof of possession"), "{m}");
        // Endorsed by the other organisation's key, or by a made-up organisation.
        let (_, m) = code(&write(
            &mut s,
            4,
            attested("a1", &honest, "north", &org_key(1)),
        ));
        assert!(m.contains("endorsement"), "{m}");
        let (_, m) = code(&write(
            &mut s,
            5,
            attested("a1", &honest, "eastside", &org_key(0)),
        ));
        assert!(m.contains("not in the federation charter"), "{m}");
        assert!(s.arbiters.is_empty());
        // The proper registration, then a second registration of the same key.
        let ok = write(&mut s, 6, attested("a1", &honest, "north", &org_key(0)));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let (c, _) = code(&write(
            &mut s,
            7,
            attested("a2", &honest, "north", &org_key(0)),
        ));
        assert_eq!(c, "key_in_use");
        // One organisation cannot endorse an arbiter as the other's.
        let other = arbiter_key(3);
        let (_, m) = code(&write(
            &mut s,
            8,
            attested("b1", &other, "south", &org_key(0)),
        ));
        assert!(m.contains("endorsement"), "{m}");
    }

    fn debate_spec(policy: Option<Policy>) -> DebateSpec {
        DebateSpec {
            resolution: "r".into(),
            pos_a: "a".into(),
            pos_b: "b".into(),
            burden: None,
            claim_budget: None,
            seats: 4,
            min_per_stance: 1,
            policy,
            simulation: false,
            convener: "c".into(),
        }
    }

    #[test]
    fn a_debate_policy_cannot_go_below_the_floors() {
        for mut s in [State::default(), chartered()] {
            let weak = Policy {
                quorum: None,
                min_net_support_per_side: 0,
                ..Policy::default()
            };
            let (c, m) = code(&write(
                &mut s,
                10,
                ClientCommand::CreateDebate(debate_spec(Some(weak))).into(),
            ));
            assert_eq!(c, "charter");
            assert!(m.contains("below the charter's floor"), "{m}");
            let ok = write(
                &mut s,
                11,
                ClientCommand::CreateDebate(debate_spec(None)).into(),
            );
            assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        }
    }

    fn newcomer() -> (panel_federation::Organisation, SigningKey) {
        let key = SigningKey::from_bytes(&[150; 32]);
        let org = panel_federation::Organisation {
            name: "eastside".into(),
            ca_sha256: panel_federation::Fingerprint([9; 32]),
            signing_key: hex::encode(key.verifying_key().to_bytes()),
        };
        (org, key)
    }

    fn admission(org: &panel_federation::Organisation, by: &[(&str, u8)]) -> Command {
        let endorsements = by
            .iter()
            .map(|(name, i)| crate::log::endorsement::Endorsement {
                by: (*name).into(),
                signature: crate::features::charter_rules::endorse(org, &org_key(*i)).unwrap(),
            })
            .collect();
        ClientCommand::AdmitOrganisation(crate::command::OrganisationAdmission {
            organisation: org.clone(),
            endorsements,
        })
        .into()
    }

    #[test]
    fn a_new_organisation_needs_the_thresholds_endorsements() {
        let mut s = chartered();
        let (org, org_signer) = newcomer();
        // One founder alone (the charter's threshold is two), and one founder twice.
        let (_, m) = code(&write(&mut s, 2, admission(&org, &[("north", 0)])));
        assert!(m.contains("requires 2"), "{m}");
        let (_, m) = code(&write(
            &mut s,
            3,
            admission(&org, &[("north", 0), ("north", 0)]),
        ));
        assert!(m.contains("requires 2"), "{m}");
        // A signature claimed for the other founder but made with the first one's key.
        let (_, m) = code(&write(
            &mut s,
            4,
            admission(&org, &[("north", 0), ("south", 0)]),
        ));
        assert!(m.contains("endorsements[1]"), "{m}");
        // An endorser that is not a member.
        let (_, m) = code(&write(
            &mut s,
            5,
            admission(&org, &[("north", 0), ("eastside", 0)]),
        ));
        assert!(m.contains("not a member"), "{m}");
        // A founder's own key or authority under a new name.
        let mut copy = org.clone();
        copy.signing_key = charter().organisations[0].signing_key.clone();
        let (_, m) = code(&write(
            &mut s,
            6,
            admission(&copy, &[("north", 0), ("south", 1)]),
        ));
        assert!(m.contains("already holds"), "{m}");
        copy.signing_key = copy.signing_key.to_uppercase();
        let (_, m) = code(&write(
            &mut s,
            6,
            admission(&copy, &[("north", 0), ("south", 1)]),
        ));
        assert!(
            m.contains("already holds"),
            "the same key in upper-case hex: {m}"
        );
        // Before admission its arbiters are refused; after it, accepted.
        let arb = arbiter_key(20);
        let (_, m) = code(&write(
            &mut s,
            7,
            attested("e1", &arb, "eastside", &org_signer),
        ));
        assert!(m.contains("not in the federation charter"), "{m}");
        let ok = write(&mut s, 8, admission(&org, &[("north", 0), ("south", 1)]));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let ok = write(&mut s, 9, attested("e1", &arb, "eastside", &org_signer));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        // Admitted once only; and an unchartered group admits nobody.
        let (_, m) = code(&write(
            &mut s,
            10,
            admission(&org, &[("north", 0), ("south", 1)]),
        ));
        assert!(m.contains("already a member"), "{m}");
        let mut bare = State::default();
        let (c, _) = code(&write(
            &mut bare,
            1,
            admission(&org, &[("north", 0), ("south", 1)]),
        ));
        assert_eq!(c, "charter");
    }

    /// The removal of `name` (a founder of the test charter, else the newcomer's entry)
    /// endorsed by `by`.
    fn removal(name: &str, by: &[(&str, &SigningKey)]) -> Command {
        let charter = charter();
        let member = charter
            .organisations
            .iter()
            .find(|o| o.name == name)
            .cloned()
            .unwrap_or_else(|| newcomer().0);
        let endorsements = by
            .iter()
            .map(|(who, key)| crate::log::endorsement::Endorsement {
                by: (*who).into(),
                signature: crate::features::charter_rules::endorse_removal(&charter, &member, key)
                    .unwrap(),
            })
            .collect();
        ClientCommand::RemoveOrganisation(crate::command::OrganisationRemoval {
            organisation: name.into(),
            endorsements,
        })
        .into()
    }

    /// Removal is the others' decision: never one member's alone, never its own, never by
    /// an admission's signatures; it leaves enough organisations for the floors, and the
    /// removed identity never comes back (not by replaying its admission, not renamed).
    #[test]
    fn an_organisation_is_removed_by_the_others_and_never_readmitted() {
        let mut s = chartered();
        let (org, east_key) = newcomer();
        let ok = write(&mut s, 2, admission(&org, &[("north", 0), ("south", 1)]));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let arb = arbiter_key(20);
        let ok = write(&mut s, 3, attested("e1", &arb, "eastside", &east_key));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let (north, south) = (org_key(0), org_key(1));

        let (c, m) = code(&write(&mut s, 4, removal("eastside", &[("north", &north)])));
        assert_eq!(c, "charter");
        assert!(m.contains("it takes 2") && m.contains("alone"), "{m}");
        let (_, m) = code(&write(
            &mut s,
            5,
            removal("eastside", &[("north", &north), ("eastside", &east_key)]),
        ));
        assert!(
            m.contains("endorsements[1]") && m.contains("being removed"),
            "{m}"
        );
        let (_, m) = code(&write(
            &mut s,
            6,
            removal("eastside", &[("north", &north), ("south", &north)]),
        ));
        assert!(m.contains("endorsements[1]"), "{m}");
        // The admission's endorsements are not a removal's.
        let admitted = match admission(&org, &[("north", 0), ("south", 1)]) {
            Command::Client(ClientCommand::AdmitOrganisation(a)) => a.endorsements,
            _ => unreachable!(),
        };
        let replayed = ClientCommand::RemoveOrganisation(crate::command::OrganisationRemoval {
            organisation: "eastside".into(),
            endorsements: admitted,
        });
        let (_, m) = code(&write(&mut s, 7, replayed.into()));
        assert!(m.contains("endorsements[0]"), "{m}");
        let (_, m) = code(&write(
            &mut s,
            8,
            removal("westside", &[("north", &north), ("south", &south)]),
        ));
        assert!(m.contains("not a member"), "{m}");
        assert!(s.removed_organisations.is_empty());

        let done = write(
            &mut s,
            9,
            removal("eastside", &[("north", &north), ("south", &south)]),
        );
        let ItemReply::Applied(reply) = &done else {
            panic!("{done:?}")
        };
        let r = reply.get::<RemoveOrganisationReply>().expect("typed reply");
        assert_eq!(r.remaining, vec!["north".to_owned(), "south".to_owned()]);
        assert!(!crate::features::endorsers::organisations(&s).any(|o| o.name == "eastside"));
        // Removed: it endorses nothing, and its identity is not admitted again.
        let (_, m) = code(&write(
            &mut s,
            10,
            admission(&org, &[("north", 0), ("south", 1)]),
        ));
        assert!(m.contains("was removed"), "{m}");
        let mut renamed = org.clone();
        renamed.name = "eastgate".into();
        let (_, m) = code(&write(
            &mut s,
            11,
            admission(&renamed, &[("north", 0), ("south", 1)]),
        ));
        assert!(m.contains("was removed"), "{m}");
        let (_, m) = code(&write(
            &mut s,
            12,
            attested("e2", &arbiter_key(21), "eastside", &east_key),
        ));
        assert!(m.contains("not in the federation charter"), "{m}");
        // Two organisations left: removing either would break the floors.
        let (_, m) = code(&write(&mut s, 13, removal("south", &[("north", &north)])));
        assert!(m.contains("floors.min_organisations"), "{m}");
    }

    /// A removal withdraws every open debate motion seating one of the removed
    /// organisation's arbiters and asks its question again, under a new motion id, drawn
    /// only from the organisations still in force; the withdrawal is named (not a panel's
    /// deadlock) and counts no deadlock against the question.
    #[test]
    fn a_removal_reseats_the_open_motions_its_arbiters_sat_on() {
        use crate::rules::acceptance::{Acceptance, DeadlockReason};
        let mut s = chartered();
        let (org, east_key) = newcomer();
        let ok = write(&mut s, 2, admission(&org, &[("north", 0), ("south", 1)]));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let members = [
            ("north", org_key(0)),
            ("south", org_key(1)),
            ("eastside", east_key),
        ];
        let mut n = 3;
        for (i, (member, signer)) in members.iter().enumerate() {
            for (j, stance) in [Stance::A, Stance::B].into_iter().enumerate() {
                let id = format!("{member}-{j}");
                let key = arbiter_key(40 + (2 * i + j) as u8);
                let mut reg = registration(&id, &key, member);
                reg.stance = stance;
                reg.model_family = format!("fam-{i}{j}");
                reg.attestation =
                    Some(crate::features::charter_rules::attest(&reg, &key, signer).unwrap());
                let r = write(&mut s, n, ClientCommand::RegisterArbiter(reg).into());
                assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
                let admit = crate::command::TestCommand::SetAdmission {
                    arbiter_id: id,
                    admitted: true,
                    score_milli: 900,
                };
                let r = write(&mut s, n + 1, admit.into());
                assert!(matches!(r, ItemReply::Applied(_)), "{r:?}");
                n += 2;
            }
        }
        let r = write(
            &mut s,
            n,
            ClientCommand::CreateDebate(debate_spec(None)).into(),
        );
        let ItemReply::Applied(debate) = &r else {
            panic!("{r:?}")
        };
        let debate_id = debate.to_json()["debate_id"]
            .as_str()
            .expect("debate id")
            .to_owned();
        let ask: crate::command::PanelRequest = serde_json::from_value(serde_json::json!({
            "debate_id": debate_id, "author": "x",
            "question": {"kind": "advance-phase", "from": "framing"},
        }))
        .expect("request");
        let r = write(&mut s, n + 1, ClientCommand::AskPanel(ask).into());
        let ItemReply::Applied(asked) = &r else {
            panic!("{r:?}")
        };
        let first = asked.to_json()["motion_id"]
            .as_str()
            .expect("motion id")
            .to_owned();
        let seats = crate::apply::debates::tests::seated;
        assert!(
            seats(&s, &first).iter().any(|a| a.starts_with("eastside")),
            "the panel drawn seats no eastside arbiter: {:?}",
            seats(&s, &first)
        );

        let removal = removal(
            "eastside",
            &[("north", &org_key(0)), ("south", &org_key(1))],
        );
        let r = write(&mut s, n + 2, removal);
        let ItemReply::Applied(reply) = &r else {
            panic!("{r:?}")
        };
        let r = reply.get::<RemoveOrganisationReply>().expect("typed reply");
        assert_eq!(r.reseated.len(), 1, "{r:?}");
        assert_eq!(r.reseated[0].withdrawn, first);
        assert_eq!(r.reseated[0].opened.len(), 1, "{r:?}");
        let second = r.reseated[0].opened[0].clone();
        assert_ne!(second, first);
        let withdrawn = s.motions.get(&first).expect("withdrawn motion");
        match &withdrawn.status {
            crate::model::MotionStatus::Decided(Acceptance::Deadlocked(d)) => assert_eq!(
                d.reasons,
                vec![DeadlockReason::SeatsRemoved {
                    organisation: "eastside".into()
                }]
            ),
            other => panic!("{other:?}"),
        }
        let reseated = seats(&s, &second);
        assert_eq!(reseated.len(), 4, "{reseated:?}");
        assert!(
            reseated.iter().all(|a| !a.starts_with("eastside")),
            "{reseated:?}"
        );
        let rec = s.debates.get(&debate_id).expect("debate");
        assert!(
            rec.deadlocks.values().all(|n| *n == 0),
            "{:?}",
            rec.deadlocks
        );
        assert_eq!(rec.open.values().collect::<Vec<_>>(), vec![&second]);
    }

    /// North's rotation to `to` as seq `seq` with `overlap_ms`, proven by `possession` and
    /// endorsed by `by` (each signing over north's key in force, `from`).
    fn roster_rotation(
        seq: u64,
        to: &SigningKey,
        overlap_ms: u64,
        possession: &SigningKey,
        from: &SigningKey,
        by: &[(&str, &SigningKey)],
    ) -> Command {
        let charter = charter();
        let mut rot = crate::command::RosterKeyRotation {
            organisation: "north".into(),
            seq,
            to: hex::encode(to.verifying_key().to_bytes()).into(),
            overlap_ms,
            possession: Default::default(),
            endorsements: vec![],
        };
        let sign = |rot: &crate::command::RosterKeyRotation, key: &SigningKey| {
            crate::features::roster_keys::sign(&charter, rot, &from.verifying_key(), key).unwrap()
        };
        rot.possession = sign(&rot, possession);
        rot.endorsements = by
            .iter()
            .map(|(who, key)| crate::log::endorsement::Endorsement {
                by: (*who).into(),
                signature: sign(&rot, key),
            })
            .collect();
        ClientCommand::RotateRosterKey(rot).into()
    }

    /// A member's roster key changes only with its own consent, the threshold's
    /// endorsements and the new key's possession, to a key nobody held; the old key counts
    /// through the overlap and not after; a rotation is not replayed.
    #[test]
    fn a_roster_key_rotates_by_endorsed_entry_with_an_overlap() {
        let mut s = chartered();
        let (north, south) = (org_key(0), org_key(1));
        let new = SigningKey::from_bytes(&[160; 32]);
        let refused = |s: &mut State, n, c| code(&write(s, n, c)).1;

        let m = refused(
            &mut s,
            2,
            roster_rotation(1, &new, 5, &new, &north, &[("south", &south)]),
        );
        assert!(m.contains("does not endorse its own rotation"), "{m}");
        let m = refused(
            &mut s,
            3,
            roster_rotation(1, &new, 5, &new, &north, &[("north", &north)]),
        );
        assert!(m.contains("requires 2"), "{m}");
        let both = [("north", &north), ("south", &south)];
        let m = refused(&mut s, 4, roster_rotation(2, &new, 5, &new, &north, &both));
        assert!(m.contains("next rotation is 1"), "{m}");
        let m = refused(
            &mut s,
            5,
            roster_rotation(1, &south, 5, &south, &north, &both),
        );
        assert!(m.contains("\"south\"'s roster key"), "{m}");
        let m = refused(
            &mut s,
            6,
            roster_rotation(1, &new, 8 * 86_400_000, &new, &north, &both),
        );
        assert!(m.contains("seven days"), "{m}");
        let m = refused(
            &mut s,
            7,
            roster_rotation(1, &new, 5, &north, &north, &both),
        );
        assert!(m.contains("possession"), "{m}");
        assert!(s.roster_keys.is_empty());

        // At n = 10 (batch time 1010): the old key counts until 1015.
        let ok = write(&mut s, 10, roster_rotation(1, &new, 5, &new, &north, &both));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let ok = write(
            &mut s,
            12,
            attested("n1", &arbiter_key(40), "north", &north),
        );
        assert!(
            matches!(ok, ItemReply::Applied(_)),
            "within the overlap: {ok:?}"
        );
        let m = refused(
            &mut s,
            20,
            attested("n2", &arbiter_key(41), "north", &north),
        );
        assert!(m.contains("endorsement"), "after the overlap: {m}");
        let ok = write(&mut s, 21, attested("n2", &arbiter_key(41), "north", &new));
        assert!(matches!(ok, ItemReply::Applied(_)), "the new key: {ok:?}");
        // Replayed, or rotated back to the old key: refused.
        let m = refused(&mut s, 22, roster_rotation(1, &new, 5, &new, &north, &both));
        assert!(m.contains("next rotation is 2"), "{m}");
        let back = [("north", &new), ("south", &south)];
        let m = refused(
            &mut s,
            23,
            roster_rotation(2, &north, 0, &north, &new, &back),
        );
        assert!(m.contains("\"north\"'s roster key"), "{m}");
        // The new key endorses for north from now on; the old one does not.
        let (org, _) = newcomer();
        let m = refused(&mut s, 24, admission(&org, &[("north", 0), ("south", 1)]));
        assert!(m.contains("endorsements[0]"), "{m}");
    }

    fn definition(author: &str, signer: Option<(&SigningKey, u64)>) -> Command {
        let mut sub: crate::command::ContributionSubmission = serde_json::from_value(serde_json::json!({
            "debate_id": "deb_1", "author": author, "side": "A",
            "contribution": {"op": "definition", "term": "harm", "definition": "Measurable loss of welfare."},
        }))
        .expect("submission");
        if let Some((k, n)) = signer {
            sub.signature = Some(crate::authorship::sign(k, &sub, "t", n).expect("sign"));
        }
        ClientCommand::Contribute(sub).into()
    }

    fn contributor(name: &str, key: &SigningKey, org: &str, roster: &SigningKey) -> Command {
        let mut reg = crate::command::ContributorRegistration {
            name: name.into(),
            public_key: hex::encode(key.verifying_key().to_bytes()).into(),
            organisation: org.into(),
            attestation: crate::command::WireAttestation {
                proof: Default::default(),
                endorsement: Default::default(),
            },
        };
        reg.attestation =
            crate::features::charter_rules::attest_contributor(&reg, key, roster).unwrap();
        ClientCommand::RegisterContributor(reg).into()
    }

    #[test]
    fn under_a_charter_contributor_names_are_bound_by_registration_only() {
        let mut s = chartered();
        let debate = ClientCommand::CreateDebate(debate_spec(None));
        assert!(matches!(
            write(&mut s, 2, debate.into()),
            ItemReply::Applied(_)
        ));
        let ada = arbiter_key(30);
        // Neither an unsigned write nor a first signed use claims the name.
        let (c, m) = code(&write(&mut s, 3, definition("ada", None)));
        assert_eq!(c, "charter");
        assert!(m.contains("not registered"), "{m}");
        let (_, m) = code(&write(&mut s, 4, definition("ada", Some((&ada, 4)))));
        assert!(m.contains("not registered"), "{m}");
        assert!(s.contributors.get("ada").is_none());
        // A registration endorsed by the other organisation's key, or proven by another key.
        let (_, m) = code(&write(
            &mut s,
            5,
            contributor("ada", &ada, "north", &org_key(1)),
        ));
        assert!(m.contains("endorsement"), "{m}");
        let mut stolen = crate::command::ContributorRegistration {
            name: "ada".into(),
            public_key: hex::encode(ada.verifying_key().to_bytes()).into(),
            organisation: "north".into(),
            attestation: crate::command::WireAttestation {
                proof: Default::default(),
                endorsement: Default::default(),
            },
        };
        stolen.attestation = crate::features::charter_rules::attest_contributor(
            &stolen,
            &arbiter_key(31),
            &org_key(0),
        )
        .unwrap();
        let (_, m) = code(&write(
            &mut s,
            6,
            ClientCommand::RegisterContributor(stolen).into(),
        ));
        assert!(m.contains("proof of possession"), "{m}");
        // The proper registration binds the name; the signed write is then accepted, and
        // nobody can register the name again.
        let ok = write(&mut s, 7, contributor("ada", &ada, "north", &org_key(0)));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        // Its appeals are charged to the organisation that endorsed it (`appeal_credits`).
        assert_eq!(
            crate::features::appeal_credits::organisation_of(&s, "ada").as_deref(),
            Some("north")
        );
        let ok = write(&mut s, 8, definition("ada", Some((&ada, 8))));
        assert!(matches!(ok, ItemReply::Applied(_)), "{ok:?}");
        let (_, m) = code(&write(
            &mut s,
            9,
            contributor("ada", &arbiter_key(32), "south", &org_key(1)),
        ));
        assert!(m.contains("already bound"), "{m}");
    }

    /// A rotation of the motion key from the key in force to `to`, `seq`, its possession
    /// signed by `possessor` and endorsed by `endorsers`.
    fn rotation(
        state: &State,
        seq: u64,
        to: &SigningKey,
        possessor: &SigningKey,
        endorsers: &[(&str, &SigningKey)],
    ) -> Command {
        use panel_proto::motion_key_rotation::{RotationClaim, sign_rotation};
        let digest = state
            .charter
            .as_ref()
            .map_or([0; 32], |c| c.digest().expect("the test charter encodes"));
        // A bare group has no key in force; any valid key stands in for the signature.
        let from = crate::features::charter_rules::current_motion_key(state)
            .unwrap_or_else(|| SigningKey::from_bytes(&[1; 32]).verifying_key())
            .to_bytes();
        let to_pub = to.verifying_key().to_bytes();
        let claim = RotationClaim {
            charter_digest: &digest,
            seq,
            from: &from,
            to: &to_pub,
        };
        let sign = |k: &SigningKey| hex::encode(sign_rotation(&claim, k).expect("sign")).into();
        ClientCommand::RotateMotionKey(crate::command::MotionKeyRotation {
            seq,
            to: hex::encode(to_pub).into(),
            possession: sign(possessor),
            endorsements: endorsers
                .iter()
                .map(|(by, k)| crate::log::endorsement::Endorsement {
                    by: (*by).into(),
                    signature: sign(k),
                })
                .collect(),
        })
        .into()
    }

    /// The motion key changes only by an entry the charter's threshold of organisations
    /// endorse and the new key signs; it never goes back to a used key, an old rotation
    /// cannot be replayed, and motions opened before it keep the key they were opened
    /// under.
    #[test]
    fn the_motion_key_rotates_only_with_endorsements_and_possession() {
        let new = SigningKey::from_bytes(&[201; 32]);
        let both = [("north", &org_key(0)), ("south", &org_key(1))];
        // Without a charter there is no key to rotate.
        let mut bare = State::default();
        let cmd = rotation(&bare, 1, &new, &new, &both);
        let (c, m) = code(&write(&mut bare, 1, cmd));
        assert_eq!(c, "charter");
        assert!(m.contains("no charter"), "{m}");

        let mut s = chartered();
        let old = crate::features::charter_rules::current_motion_key(&s).expect("charter key");
        let refusals = [
            (
                rotation(&s, 1, &new, &new, &both[..1]),
                "the charter requires 2",
            ),
            (
                rotation(&s, 2, &new, &new, &both),
                "the next rotation of this federation is 1",
            ),
            (
                rotation(&s, 1, &new, &arbiter_key(9), &both),
                "the new motion key must sign",
            ),
            (
                rotation(
                    &s,
                    1,
                    &new,
                    &new,
                    &[("north", &org_key(0)), ("east", &org_key(2))],
                ),
                "\"east\" is not a member organisation",
            ),
            (
                rotation(
                    &s,
                    1,
                    &new,
                    &new,
                    &[("north", &org_key(0)), ("south", &org_key(0))],
                ),
                "endorsements[1] by \"south\"",
            ),
            (
                rotation(
                    &s,
                    1,
                    &SigningKey::from_bytes(&[200; 32]),
                    &SigningKey::from_bytes(&[200; 32]),
                    &both,
                ),
                "used before",
            ),
        ];
        for (n, (cmd, needle)) in refusals.into_iter().enumerate() {
            let (c, m) = code(&write(&mut s, 10 + n as u64, cmd));
            assert_eq!(c, "charter", "{m}");
            assert!(m.contains(needle), "{needle:?} not in {m}");
        }
        assert_eq!(
            crate::features::charter_rules::current_motion_key(&s),
            Some(old),
            "nothing rotated"
        );

        let ok = rotation(&s, 1, &new, &new, &both);
        let ItemReply::Applied(v) = write(&mut s, 20, ok.clone()) else {
            panic!("the endorsed rotation is refused");
        };
        assert_eq!(
            v.to_json()["to"],
            hex::encode(new.verifying_key().to_bytes())
        );
        assert_eq!(
            crate::features::charter_rules::current_motion_key(&s),
            Some(new.verifying_key())
        );
        // Motions opened before the rotating entry keep the charter's key.
        assert_eq!(
            crate::features::charter_rules::motion_key_at(&s, 19),
            Some(old)
        );
        assert_eq!(
            crate::features::charter_rules::motion_key_at(&s, 21),
            Some(new.verifying_key())
        );
        // Replaying the rotation (seq 1 again) and rotating back are refused.
        let (_, m) = code(&write(&mut s, 21, ok));
        assert!(
            m.contains("the next rotation of this federation is 2"),
            "{m}"
        );
        let charter_key = SigningKey::from_bytes(&[200; 32]);
        let back = rotation(&s, 2, &charter_key, &charter_key, &both);
        let (_, m) = code(&write(&mut s, 22, back));
        assert!(m.contains("used before"), "{m}");
    }
}
