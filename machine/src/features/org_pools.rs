//! Organisation pools (rule set [`ORG_POOLS`](crate::rules::ORG_POOLS);
//! docs/coordinator/state-machine.md "Organisation pools", docs/SECURITY.md "Exams").
//!
//! When every replica holds every private pool, every member organisation's operators
//! know every item and its gold, and can feed them to their own arbiters. Under this rule a
//! chartered group whose log is signed by a quorum (and that is not a practice group)
//! examines only from pools that belong to one member organisation each:
//!
//! - only that organisation's replicas hold the pool file; one of them offers the next
//!   sitting's pool and seals it (`panel_federation::pool_seal`), so no other replica, the
//!   leader included, can seal a pool in its name or alter its questions;
//! - that organisation's arbiters never sit its sitting, so no organisation's arbiters are
//!   examined on items their operators could read;
//! - the golds stay with the pool's organisation until a logged `CloseExamSitting` ends the
//!   answers; only then does its replica hand the file and salt to the leader for the
//!   reveal, and apply refuses any answer after the close.
//!
//! The draw is still the pool's, the sitting's and the arbiter's key's, so nobody picks
//! which items an arbiter gets. Opaque motion ids in such a sitting are keyed by the
//! pool's key commitment instead of its secret salt ([`token_key`]): the pool is private,
//! so an item id of it names no public item, and any replica can build and vouch for an
//! arbiter's sheet without holding the pool.

use crate::log::refusal_code::RefusalCode;
use std::collections::BTreeSet;

use panel_federation::pool_seal::{PoolSealError, PoolSealed};
use sha2::{Digest, Sha256};

use crate::log::exam_pool::{SealedPool, SittingClose};
use crate::model::State;
use crate::model::sitting::Sitting;

/// Domain tag of an organisation sitting's token key.
pub const TOKEN_KEY_DOMAIN: &[u8] = b"crucible-panel/exam/org-token-key/v1\0";

/// Why an organisation pool's seal, sitting or close is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OrgPoolError {
    #[error(
        "this group examines from organisation pools (rule set 21: a charter whose log is \
         signed by a quorum, not a practice group): the pool must name the member \
         organisation whose replica offered it, with that replica's seal"
    )]
    NoOrganisation,
    #[error(
        "the organisation pool carries no seal: its organisation's replica signs the \
         sitting, pool id and key commitment (Replica.OfferExamPool)"
    )]
    Unsealed,
    #[error(transparent)]
    Seal(#[from] PoolSealError),
    #[error(transparent)]
    Pool(#[from] calibration::public_pool::PoolError),
    #[error(
        "pool {pool_id} was already sealed by sitting {sitting}: an organisation's pool is \
         sealed once; offer a fresh one"
    )]
    Spent { pool_id: String, sitting: u32 },
    #[error(
        "{arbiter_id} is an arbiter of {organisation}, whose pool this sitting is: its \
         operators hold the answers, so it sits another organisation's sitting"
    )]
    OwnPool {
        arbiter_id: String,
        organisation: String,
    },
    #[error("sitting {0} is closed to answers: the arbiter sits the next sitting")]
    Closed(u32),
    #[error(
        "sitting {0} is an organisation's sitting that still takes answers: its key is \
         revealed only after a CloseExamSitting"
    )]
    NotClosed(u32),
    #[error("no organisation's sitting {0} is open to close")]
    NothingToClose(u32),
}

impl OrgPoolError {
    /// The refusal code: the pool's or the step's (`exam_pool_refused`), or the arbiter's
    /// answers' (`exam_refused`).
    pub fn code(&self) -> RefusalCode {
        match self {
            OrgPoolError::OwnPool { .. } | OrgPoolError::Closed(_) => RefusalCode::ExamRefused,
            _ => RefusalCode::ExamPoolRefused,
        }
    }
}

/// Whether this group's sittings must come from organisation pools: rule set 21, a charter
/// whose log is signed by a quorum of organisations, and not a practice group (which may
/// still examine with the shipped public pool).
pub fn required(state: &State) -> bool {
    state.rules >= crate::rules::ORG_POOLS
        && state.charter.as_ref().is_some_and(|c| {
            c.log_quorum().is_some() && !c.exam.as_ref().is_some_and(|e| e.practice)
        })
}

/// Checks a `SealExamPool`'s organisation and seal for sitting `number`; returns the
/// organisation whose pool it is, if any.
pub fn check_seal(
    state: &State,
    number: u32,
    sealed: &SealedPool,
) -> Result<Option<String>, OrgPoolError> {
    let organisation = match &sealed.organisation {
        Some(o) if state.rules >= crate::rules::ORG_POOLS => o,
        _ if required(state) => return Err(OrgPoolError::NoOrganisation),
        _ => return Ok(None),
    };
    let charter = state.charter.as_ref().ok_or(OrgPoolError::NoOrganisation)?;
    let line = sealed.seal.as_deref().ok_or(OrgPoolError::Unsealed)?;
    let pool_id = sealed.public.id()?;
    PoolSealed {
        sitting: number,
        pool_id: &pool_id,
        key_commitment: &sealed.key_commitment.to_hex(),
    }
    .check(charter, organisation, line)?;
    if let Some(earlier) = state.exam_sittings.iter().find(|s| s.pool_id == pool_id) {
        return Err(OrgPoolError::Spent {
            pool_id,
            sitting: earlier.number,
        });
    }
    Ok(Some(organisation.clone()))
}

/// The key an opaque sitting's motion tokens are keyed by: the pool's salt, except in an
/// organisation's sitting, where it is derived from the public key commitment (so every
/// replica can compute it). `None` when the salt is needed and not held.
pub fn token_key(sitting: &Sitting, salt: Option<&[u8; 32]>) -> Option<[u8; 32]> {
    if sitting.organisation.is_none() {
        return salt.copied();
    }
    let mut h = Sha256::new();
    h.update(TOKEN_KEY_DOMAIN);
    // The hex text, as hashed since pools were sealed by organisations.
    h.update(sitting.key_commitment.to_hex().as_bytes());
    Some(h.finalize().into())
}

/// Whether `organisation`'s arbiter may answer in `sitting`: not in its own
/// organisation's sitting, and not once the sitting is closed.
pub fn may_sit(
    sitting: &Sitting,
    arbiter_id: &str,
    organisation: &str,
) -> Result<(), OrgPoolError> {
    if sitting.organisation.as_deref() == Some(organisation) {
        return Err(OrgPoolError::OwnPool {
            arbiter_id: arbiter_id.to_owned(),
            organisation: organisation.to_owned(),
        });
    }
    if sitting.closed_log_index.is_some() {
        return Err(OrgPoolError::Closed(sitting.number));
    }
    Ok(())
}

/// Whether `sitting`'s key may be revealed: an organisation's sitting only once closed.
pub fn may_reveal(sitting: &Sitting) -> Result<(), OrgPoolError> {
    match (&sitting.organisation, sitting.closed_log_index) {
        (Some(_), None) => Err(OrgPoolError::NotClosed(sitting.number)),
        _ => Ok(()),
    }
}

/// `CloseExamSitting`: ends the answers of the open organisation sitting `c.sitting`.
pub fn close(
    state: &mut State,
    log_index: u64,
    c: &SittingClose,
) -> Result<crate::reply::SittingClosedReply, OrgPoolError> {
    let open = state
        .exam_sittings
        .last_mut()
        .filter(|s| s.revealed.is_none() && s.number == c.sitting && s.organisation.is_some())
        .ok_or(OrgPoolError::NothingToClose(c.sitting))?;
    if open.closed_log_index.is_some() {
        return Err(OrgPoolError::Closed(open.number));
    }
    open.closed_log_index = Some(log_index);
    Ok(crate::reply::SittingClosedReply {
        sitting: c.sitting,
        held: open.held.len(),
    })
}

/// The organisations the leader asks, in order, for the next sitting's pool: every member
/// organisation with a replica in the log quorum, starting after the organisation of the
/// newest sitting (so pools rotate), keeping only those whose sitting at least one due
/// arbiter could sit (`due` holds the due arbiters' organisations).
pub fn seal_order(state: &State, due: &BTreeSet<String>) -> Vec<String> {
    let Some(quorum) = state.charter.as_ref().and_then(|c| c.log_quorum()) else {
        return Vec::new();
    };
    let orgs: Vec<String> = quorum
        .signers
        .iter()
        .map(|s| s.organisation.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let last = state
        .exam_sittings
        .iter()
        .rev()
        .find_map(|s| s.organisation.as_deref());
    let start = last
        .and_then(|l| orgs.iter().position(|o| o.as_str() == l))
        .map_or(0, |i| i + 1);
    (0..orgs.len())
        .map(|k| &orgs[(start + k) % orgs.len()])
        .filter(|o| due.iter().any(|d| d != *o))
        .cloned()
        .collect()
}

/// Why an organisation's replica does not offer a pool or its key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OfferRefusal {
    #[error("sitting {open} is open: a pool is offered only for the next sitting")]
    StillOpen { open: u32 },
    #[error("sitting {asked} is not the next sitting here ({next}); ask again once applied")]
    NotNext { asked: u32, next: u32 },
    #[error(
        "every exam pool of this organisation is spent: its operators add a fresh pool to \
         exam_pools on its replicas"
    )]
    NoPool,
    #[error("sitting {0} is not open here")]
    NotOpen(u32),
    #[error("sitting {sitting} is {owner:?}'s, not this replica's organisation's")]
    NotOurs { sitting: u32, owner: Option<String> },
    #[error(
        "sitting {0} still takes answers: its key is handed over only after a logged \
         CloseExamSitting"
    )]
    NotClosed(u32),
    #[error("this replica does not hold the pool sitting {0} sealed")]
    NotHeld(u32),
}

impl OfferRefusal {
    /// Whether asking again later, once more is applied here, may succeed.
    pub fn not_yet(&self) -> bool {
        matches!(
            self,
            OfferRefusal::NotNext { .. } | OfferRefusal::NotOpen(_) | OfferRefusal::NotClosed(_)
        )
    }
}

/// Checks that sitting `number` is the next one in `state` with none open: the sitting an
/// organisation's replica may offer a pool for.
pub fn offerable(state: &State, number: u32) -> Result<(), OfferRefusal> {
    if let Some(open) = crate::model::sitting::open(&state.exam_sittings) {
        return Err(OfferRefusal::StillOpen { open: open.number });
    }
    let next = crate::model::sitting::next_number(&state.exam_sittings);
    if number != next {
        return Err(OfferRefusal::NotNext {
            asked: number,
            next,
        });
    }
    Ok(())
}

/// The open sitting `number`, if it is `organisation`'s and closed to answers: the only
/// sitting whose key that organisation's replica hands over.
pub fn closed_sitting_of<'a>(
    state: &'a State,
    organisation: &str,
    number: u32,
) -> Result<&'a Sitting, OfferRefusal> {
    let open = crate::model::sitting::open(&state.exam_sittings)
        .filter(|o| o.number == number)
        .ok_or(OfferRefusal::NotOpen(number))?;
    if open.organisation.as_deref() != Some(organisation) {
        return Err(OfferRefusal::NotOurs {
            sitting: number,
            owner: open.organisation.clone(),
        });
    }
    if open.closed_log_index.is_none() {
        return Err(OfferRefusal::NotClosed(number));
    }
    Ok(open)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::InternalCommand;
    use crate::features::exam_sitting::tests::{
        T0, V2, applied, by_gold, key, motion_key, refused, registered, reveal_cmd, sit_sealed,
        write,
    };
    use crate::features::exam_sitting::{Pools, PrivatePool, open_sitting};
    use calibration::exam::load_exam;
    use panel_federation::{Fingerprint, LogIdentity, Organisation, ReplicaEntry};
    use panel_tlog::NoteSigner;

    /// Replica `i`'s log key; replica `i` belongs to `org-i`.
    fn log_key(i: u8) -> NoteSigner {
        NoteSigner::new(
            "panel.test/log",
            panel_proto::SigningKey::from_bytes(&[i + 40; 32]),
        )
        .expect("signer")
    }

    /// Three organisations `org-0..2`, one replica each with its own log key, a log quorum
    /// of two; `practice` marks a practice group.
    fn charter(practice: bool) -> panel_federation::Charter {
        let base = crate::features::charter_rules::tests::charter();
        panel_federation::Charter {
            organisations: (0..3u8)
                .map(|i| Organisation {
                    name: format!("org-{i}"),
                    ca_sha256: Fingerprint([i + 1; 32]),
                    ..base.organisations[0].clone()
                })
                .collect(),
            replicas: (0..3u8)
                .map(|i| ReplicaEntry {
                    id: u64::from(i) + 1,
                    organisation: format!("org-{i}"),
                    cert_sha256: Fingerprint([i + 50; 32]),
                    log_vkey: Some(log_key(i).verifier().to_string()),
                    beacon_vkey: None,
                })
                .collect(),
            log: Some(LogIdentity {
                origin: "panel.test/log".into(),
                vkey: String::new(),
                quorum: 2,
            }),
            exam: Some(panel_federation::ExamTerms {
                practice,
                ..Default::default()
            }),
            motion_key: hex::encode(motion_key().verifying_key().to_bytes()),
            ..base
        }
    }

    /// Arbiters `a0..a2` of `org-0..2`, under the charter and rule set 21.
    fn group() -> State {
        let mut s = registered(&["a0", "a1", "a2"]);
        s.charter = Some(charter(false));
        s.rules = crate::rules::ORG_POOLS;
        s
    }

    /// A private pool: the shipped one with one question reworded.
    fn private_pool() -> PrivatePool {
        let text = V2.replacen("Should this challenge be upheld?", "Upheld?", 1);
        PrivatePool::load(&text).expect("pool")
    }

    fn pools() -> Pools {
        Pools {
            pools: vec![private_pool()],
            reusable: false,
        }
    }

    /// `org-<by>`'s replica's seal of `pool` for sitting `number` in `org`'s name.
    fn sealed_by(pool: &PrivatePool, number: u32, org: &str, by: u8) -> InternalCommand {
        let mut sealed = pool.sealed();
        let pool_id = sealed.public.id().expect("the test pool encodes");
        sealed.seal = Some(
            PoolSealed {
                sitting: number,
                pool_id: &pool_id,
                key_commitment: &sealed.key_commitment.to_hex(),
            }
            .seal(&log_key(by)),
        );
        sealed.organisation = Some(org.to_owned());
        InternalCommand::SealExamPool(Box::new(sealed))
    }

    fn sit_as(s: &mut State, n: u64, i: u8) -> crate::command::ItemReply<crate::reply::Reply> {
        let c = sit(s, i);
        write(s, n, T0, c)
    }

    /// Sitting 1 sealed from org-1's pool by org-1's replica, at entry `n`.
    fn seal_org1(s: &mut State, n: u64) {
        applied(write(s, n, T0, sealed_by(&private_pool(), 1, "org-1", 1)));
    }

    fn close_cmd(sitting: u32) -> InternalCommand {
        InternalCommand::CloseExamSitting(SittingClose { sitting })
    }

    /// Arbiter `i`'s answers in the open organisation sitting, honest by the pool's golds.
    fn sit(s: &State, i: u8) -> InternalCommand {
        let open = open_sitting(s).expect("open");
        let token = token_key(open, None).expect("public in an organisation's sitting");
        let truth = private_pool().exam;
        // Rule set 20: every exam motion bears the seals of two organisations' replicas.
        let seal = |m: &mut panel_proto::pb::Motion| {
            let digest = panel_proto::motion_digest(m);
            m.seals = (0..2)
                .map(|r| panel_federation::motion_seal::seal(&log_key(r), &digest))
                .collect();
        };
        sit_sealed(
            s,
            i,
            &format!("a{i}"),
            (&truth, &by_gold(&truth)),
            &token,
            &seal,
        )
    }

    /// docs/SECURITY.md "Exams": every replica held every private pool, so each member's
    /// operators could read every gold. Now a pool is sealed only in the name of the
    /// organisation whose replica signed it, and never without one.
    #[test]
    fn only_an_organisations_own_replica_seals_its_pool() {
        let pool = private_pool();
        let mut s = group();
        // The leader's own private pool, sealed as before rule set 21: refused.
        let mut plain = pool.sealed();
        plain.organisation = None;
        refused(
            write(
                &mut s,
                10,
                T0,
                InternalCommand::SealExamPool(Box::new(plain)),
            ),
            "exam_pool_refused",
            "organisation pools",
        );
        // org-0's replica (say the leader) seals a pool in org-1's name: refused.
        refused(
            write(&mut s, 11, T0, sealed_by(&pool, 1, "org-1", 0)),
            "exam_pool_refused",
            "OfferExamPool",
        );
        // org-1's own seal, but for another sitting number: refused.
        refused(
            write(&mut s, 12, T0, sealed_by(&pool, 2, "org-1", 1)),
            "exam_pool_refused",
            "does not verify",
        );
        // An organisation the charter has no replica of.
        refused(
            write(&mut s, 13, T0, sealed_by(&pool, 1, "org-9", 1)),
            "exam_pool_refused",
            "no replica",
        );
        assert!(s.exam_sittings.is_empty());
        let r = applied(write(&mut s, 14, T0, sealed_by(&pool, 1, "org-1", 1)));
        assert_eq!(r["sitting"], 1);
        let open = open_sitting(&s).expect("open");
        assert_eq!(open.organisation.as_deref(), Some("org-1"));
        // A practice group may still seal the shipped pool without an organisation.
        let mut practice = registered(&["a0"]);
        practice.charter = Some(charter(true));
        practice.rules = crate::rules::ORG_POOLS;
        let shipped = crate::features::exam_sitting::embedded_pool()
            .expect("shipped")
            .sealed();
        applied(write(
            &mut practice,
            10,
            T0,
            InternalCommand::SealExamPool(Box::new(shipped)),
        ));
    }

    /// An organisation's arbiters never sit its own pool; answers end at a logged close,
    /// and only then is the key revealed (and handed over by its replica).
    #[test]
    fn own_arbiters_are_not_examined_and_the_key_waits_for_the_close() {
        let pool = private_pool();
        let pools = pools();
        let mut s = group();
        seal_org1(&mut s, 10);
        refused(
            sit_as(&mut s, 11, 1),
            "exam_refused",
            "whose pool this sitting is",
        );
        let held = applied(sit_as(&mut s, 12, 0));
        assert_eq!(held["answered"], held["asked"], "{held}");
        // No reveal, and no key from org-1's replica, before the close.
        refused(
            write(&mut s, 13, T0, reveal_cmd(1, &pool.text, *pool.salt())),
            "exam_pool_refused",
            "CloseExamSitting",
        );
        assert_eq!(
            pools.key_for(&s, "org-1", 1),
            Err(OfferRefusal::NotClosed(1))
        );
        applied(write(&mut s, 14, T0, close_cmd(1)));
        refused(
            write(&mut s, 15, T0, close_cmd(1)),
            "exam_refused",
            "closed",
        );
        // After the close nobody answers, whatever the leader stamps.
        refused(sit_as(&mut s, 16, 2), "exam_refused", "closed to answers");
        // Only org-1's replica holds the key, and hands it only for its own sitting.
        assert!(matches!(
            pools.key_for(&s, "org-2", 1),
            Err(OfferRefusal::NotOurs { .. })
        ));
        let reveal = pools.key_for(&s, "org-1", 1).expect("closed: handed over");
        let out = applied(write(
            &mut s,
            17,
            T0,
            InternalCommand::RevealExamKey(Box::new(reveal)),
        ));
        assert_eq!(out["examined"][0]["arbiter_id"], "a0", "{out}");
        assert!(
            out["unscored"].as_array().is_none_or(Vec::is_empty),
            "{out}"
        );
        // A pool is sealed once.
        let again = sealed_by(&pool, 2, "org-1", 1);
        refused(
            write(&mut s, 18, T0, again),
            "exam_pool_refused",
            "sealed once",
        );
    }

    #[test]
    fn a_replica_offers_its_next_pool_only_for_the_next_sitting() {
        let pools = pools();
        let mut s = group();
        assert_eq!(
            pools.offer(&s, "org-1", 2),
            Err(OfferRefusal::NotNext { asked: 2, next: 1 })
        );
        let offered = pools.offer(&s, "org-1", 1).expect("offered");
        assert_eq!(offered.organisation.as_deref(), Some("org-1"));
        assert_eq!(
            offered.public.id().expect("encodes"),
            private_pool().public_id
        );
        seal_org1(&mut s, 10);
        assert_eq!(
            pools.offer(&s, "org-1", 2),
            Err(OfferRefusal::StillOpen { open: 1 })
        );
        let mut closed = s.clone();
        applied(write(&mut closed, 11, T0, close_cmd(1)));
        let reveal = pools.key_for(&closed, "org-1", 1).expect("key");
        applied(write(
            &mut closed,
            12,
            T0,
            InternalCommand::RevealExamKey(Box::new(reveal)),
        ));
        assert_eq!(pools.offer(&closed, "org-1", 2), Err(OfferRefusal::NoPool));
    }

    /// Pools rotate among the organisations, and an organisation is asked only when a due
    /// arbiter of another organisation could sit its sitting.
    #[test]
    fn the_leader_asks_the_organisations_in_turn() {
        let mut s = group();
        let due = |orgs: &[&str]| orgs.iter().map(|o| o.to_string()).collect();
        assert_eq!(
            seal_order(&s, &due(&["org-0", "org-2"])),
            ["org-0", "org-1", "org-2"]
        );
        assert_eq!(seal_order(&s, &due(&["org-0"])), ["org-1", "org-2"]);
        seal_org1(&mut s, 10);
        assert_eq!(
            seal_order(&s, &due(&["org-1"])),
            ["org-2", "org-0"],
            "after org-1's sitting, org-2 comes first"
        );
        assert!(seal_order(&s, &BTreeSet::new()).is_empty());
    }

    /// The driver's steps under organisation pools, from the state alone.
    #[test]
    fn the_driver_seals_closes_and_reveals_through_the_organisation() {
        use crate::features::exam_sitting::{SittingStep, next_step};
        let none = Pools {
            pools: Vec::new(),
            reusable: false,
        };
        let mut s = group();
        assert_eq!(
            next_step(&s, &none, true, false, T0, 1),
            SittingStep::SealFromOrganisation { number: 1 }
        );
        seal_org1(&mut s, 10);
        assert_eq!(
            next_step(&s, &none, true, false, T0, 1),
            SittingStep::Examine(1)
        );
        applied(sit_as(&mut s, 11, 0));
        assert_eq!(
            next_step(&s, &none, true, false, T0, 1),
            SittingStep::Close(1)
        );
        applied(write(&mut s, 12, T0, close_cmd(1)));
        assert_eq!(
            next_step(&s, &none, true, false, T0, 1),
            SittingStep::RevealFromOrganisation {
                sitting: 1,
                organisation: "org-1".into()
            }
        );
        // org-1's own replica, leading, reveals from the pool it holds.
        assert!(matches!(
            next_step(&s, &pools(), true, false, T0, 1),
            SittingStep::Reveal(_)
        ));
        // The pool is not needed to build a sheet: the token key is public here.
        let open = open_sitting(&s).expect("open");
        let k = key(2).verifying_key();
        assert!(token_key(open, None).is_some());
        assert!(open.asked("a2", &k).is_ok());
        let _ = load_exam(&private_pool().text).expect("loads");
    }
}
