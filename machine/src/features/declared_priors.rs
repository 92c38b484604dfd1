//! Declared priors per debate (docs/coordinator/acceptance.md "Declared priors"): a stance is a
//! signed claim about one debate, and a lineage is declared once per arbiter.
//!
//! Under a policy with `Independence::declared_stances`, a debate's panels seat an arbiter
//! under stance A or B only by its signed declaration for that debate; an arbiter without
//! one is seated, if at all, under no stance, so it never fills a stance's reserved seats
//! nor counts toward the cross-stance requirement. The registration's stance is then not
//! consulted: one label for every debate says nothing about this one. A stance, once
//! declared for a debate, cannot change: an arbiter switching camps mid-debate could
//! otherwise pass as the other side on exactly the motions it wants to carry.
//!
//! The same policy keeps off each motion every arbiter related by lineage to any author
//! the motion is about (`DebateRecord::involved_author_families`), not only the question's
//! own author.

use crate::command::{MotionSpec, StanceDeclaration};
use crate::debates::{DebateRecord, DeclaredStance};
use crate::model::{Arbiter, State};
use crate::rules::acceptance::{Policy, Stance};
use panel_proto::stance_declaration::{DeclarationClaim, DeclarationError, verify_declaration};

/// The debate id of a standing declaration: the arbiter's stance on every debate where it
/// declared none of its own (rule set [`STANDING_STANCES`](crate::rules::STANDING_STANCES)).
/// The first motion of a debate that seats the arbiter by it fixes it in that debate's
/// declarations ([`fix_standing`]), so from then on it cannot change there; a later
/// standing declaration binds only debates that have not seated the arbiter by it yet.
pub const STANDING: &str = "*";

/// Why a stance declaration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclarationRefusal {
    #[error(
        "arbiter {0} is not registered; register it with `panel arbiter register --id {0}` before declaring a stance"
    )]
    UnknownArbiter(String),
    #[error("arbiter {0}'s key was revoked; a revoked arbiter declares nothing")]
    Revoked(String),
    #[error(
        "debate {0} does not exist; declare a stance for a debate listed by `panel debate list`"
    )]
    UnknownDebate(String),
    #[error(
        "arbiter {arbiter} already declared stance {declared} for debate {debate} (log index {log_index}); a stance cannot change within a debate"
    )]
    AlreadyDeclared {
        arbiter: String,
        debate: String,
        declared: Stance,
        log_index: u64,
    },
    #[error("signature is not hex: give the 64-byte signature as 128 hex characters")]
    SignatureNotHex,
    #[error("stance declaration of arbiter {arbiter}: {problem}")]
    Signature {
        arbiter: String,
        problem: DeclarationError,
    },
}

/// Whether an accepted declaration changes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    New,
    /// The same declaration again: nothing changes.
    Repeated,
}

/// The claim a declaration's signature covers.
pub fn claim(d: &StanceDeclaration) -> DeclarationClaim<'_> {
    DeclarationClaim {
        arbiter_id: &d.arbiter_id,
        debate_id: &d.debate_id,
        side: crate::features::charter_rules::stance_label(d.stance),
        credence_permille: d.credence_permille,
    }
}

/// A declaration signed by `key` (the arbiter's own key): what `panel arbiter declare`,
/// `panel up` and a node's configured `[[stances]]` submit.
pub fn sign(
    key: &ed25519_dalek::SigningKey,
    arbiter_id: &str,
    debate_id: &str,
    stance: Stance,
    credence_permille: u16,
) -> Result<StanceDeclaration, DeclarationError> {
    let mut d = StanceDeclaration {
        arbiter_id: arbiter_id.to_owned(),
        debate_id: debate_id.to_owned(),
        stance,
        credence_permille,
        signature: Default::default(),
    };
    d.signature = crate::rules::hex_bytes::SignatureBytes::new(
        panel_proto::stance_declaration::sign_declaration(&claim(&d), key)?,
    );
    Ok(d)
}

/// Checks a declaration against the state: a registered, unrevoked arbiter, an existing
/// debate, a strict signature under the arbiter's current key, and no other stance
/// declared before for the debate.
pub fn check(state: &State, d: &StanceDeclaration) -> Result<Declared, DeclarationRefusal> {
    let arbiter = state
        .arbiters
        .get(&d.arbiter_id)
        .ok_or_else(|| DeclarationRefusal::UnknownArbiter(d.arbiter_id.clone()))?;
    if arbiter.revoked.is_some() {
        return Err(DeclarationRefusal::Revoked(d.arbiter_id.clone()));
    }
    let standing = d.debate_id == STANDING && state.rules >= crate::rules::STANDING_STANCES;
    let debate = match standing {
        true => None,
        false => Some(
            state
                .debates
                .get(&d.debate_id)
                .ok_or_else(|| DeclarationRefusal::UnknownDebate(d.debate_id.clone()))?,
        ),
    };
    let signature = d
        .signature
        .bytes()
        .map_err(|_| DeclarationRefusal::SignatureNotHex)?;
    let problem = |problem| DeclarationRefusal::Signature {
        arbiter: d.arbiter_id.clone(),
        problem,
    };
    let registered = &arbiter.registration.public_key;
    let key = registered
        .bytes()
        .map_err(|_| panel_proto::keys::KeyError::NotAPoint(registered.to_hex()))
        .and_then(|bytes| panel_proto::keys::parse_public_key(&bytes))
        .map_err(|e| problem(DeclarationError::Key(e)))?;
    verify_declaration(&claim(d), &signature, &key).map_err(problem)?;
    let Some(debate) = debate else {
        // A standing declaration may change: debates that seated the arbiter by the old
        // one keep it (`fix_standing`).
        let same = state
            .standing_stances
            .get(&d.arbiter_id)
            .is_some_and(|prior| {
                prior.stance == d.stance && prior.credence_permille == d.credence_permille
            });
        return Ok(if same {
            Declared::Repeated
        } else {
            Declared::New
        });
    };
    match debate.declared_stances.get(&d.arbiter_id) {
        None => Ok(Declared::New),
        Some(prior)
            if prior.stance == d.stance && prior.credence_permille == d.credence_permille =>
        {
            Ok(Declared::Repeated)
        }
        Some(prior) => Err(DeclarationRefusal::AlreadyDeclared {
            arbiter: d.arbiter_id.clone(),
            debate: d.debate_id.clone(),
            declared: prior.stance,
            log_index: prior.log_index,
        }),
    }
}

/// Records a checked declaration.
pub fn record(state: &mut State, d: &StanceDeclaration, log_index: u64) {
    if d.debate_id == STANDING && state.rules >= crate::rules::STANDING_STANCES {
        state.standing_stances.insert(
            d.arbiter_id.clone(),
            DeclaredStance {
                stance: d.stance,
                credence_permille: d.credence_permille,
                log_index,
            },
        );
        return;
    }
    if let Some(debate) = state.debates.get_mut(&d.debate_id) {
        debate.declared_stances.insert(
            d.arbiter_id.clone(),
            DeclaredStance {
                stance: d.stance,
                credence_permille: d.credence_permille,
                log_index,
            },
        );
    }
}

/// The standing stance that seats `arbiter_id` on a motion of `debate`, when the debate
/// has no declaration or fitted camp of its own for it (rule set
/// [`STANDING_STANCES`](crate::rules::STANDING_STANCES)). Once a motion seats it so, the
/// stance is written into the debate's declarations ([`fix_standing`]) and stays fixed
/// there, whatever the arbiter declares as its standing stance later.
pub fn standing_for<'a>(
    state: &'a State,
    arbiter_id: &str,
    debate: &DebateRecord,
) -> Option<&'a DeclaredStance> {
    if state.rules < crate::rules::STANDING_STANCES
        || debate.declared_stances.contains_key(arbiter_id)
        || debate.fitted_stances.contains_key(arbiter_id)
    {
        return None;
    }
    state.standing_stances.get(arbiter_id)
}

/// Writes into `debate_id`'s declarations the standing stance of every seat that was
/// seated by one, so later motions of the debate seat it the same way.
pub fn fix_standing(state: &mut State, debate_id: &str, seats: &[crate::rules::acceptance::Seat]) {
    let Some(debate) = state.debates.get(debate_id) else {
        return;
    };
    let fixed: Vec<(String, DeclaredStance)> = seats
        .iter()
        .filter_map(|seat| {
            let standing = standing_for(state, &seat.arbiter_id, debate)?;
            Some((seat.arbiter_id.clone(), standing.clone()))
        })
        .collect();
    if let Some(debate) = state.debates.get_mut(debate_id) {
        debate.declared_stances.extend(fixed);
    }
}

/// The debate whose declarations seat `spec`'s panel: its own debate, when the motion's
/// policy asks for declared stances. Motions outside any debate (procedure runs, raw test
/// motions) seat by the registered stance.
pub fn governing_debate<'a>(state: &'a State, spec: &MotionSpec) -> Option<&'a DebateRecord> {
    let declared = spec
        .policy
        .as_ref()
        .is_some_and(|p: &Policy| p.independence.declared_stances);
    if !declared {
        return None;
    }
    state.debates.get(&spec.debate_id)
}

/// The stance `arbiter` is seated under on a motion of `debate` (None: the registered
/// one): the camp the prior check fitted to its declaration for this debate, then a
/// confirmed impostor's fitted camp, then its declaration for the debate, else no stance.
pub fn seating_stance(
    arbiter_id: &str,
    arbiter: &Arbiter,
    debate: Option<&DebateRecord>,
) -> Stance {
    match debate {
        None => arbiter.seated_stance(),
        Some(d) => d
            .fitted_stances
            .get(arbiter_id)
            .copied()
            .or(arbiter.fitted_stance)
            .unwrap_or_else(|| {
                d.declared_stances
                    .get(arbiter_id)
                    .map_or(Stance::None, |s| s.stance)
            }),
    }
}

/// Whether `arbiter` shares a lineage with any of `families` (lower-cased author families).
pub fn related(arbiter: &Arbiter, families: &std::collections::BTreeSet<String>) -> bool {
    !families.is_empty()
        && arbiter
            .registration
            .lineage_names()
            .iter()
            .any(|n| families.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{ClientCommand, Command, ItemReply, TestCommand};
    use ed25519_dalek::SigningKey;
    use serde_json::json;

    /// Six admitted arbiters, all registered under stance A, two organisations; `rel`
    /// declares lineage base model "acme-7".
    const POOL: [&str; 6] = ["n1", "n2", "n3", "s1", "s2", "rel"];

    fn key(i: usize) -> SigningKey {
        SigningKey::from_bytes(&[i as u8 + 1; 32])
    }

    fn write(
        state: &mut State,
        n: u64,
        command: impl Into<Command>,
    ) -> ItemReply<crate::reply::Reply> {
        crate::apply::write_one(state, n, command.into())
    }

    fn applied(r: &ItemReply<crate::reply::Reply>) -> serde_json::Value {
        match r {
            ItemReply::Applied(v) => v.to_json(),
            other => panic!("refused: {other:?}"),
        }
    }

    fn debate(state: &mut State, n: u64, policy: Option<Policy>) -> String {
        let spec = serde_json::from_value(json!({
            "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
            "seats": 2, "min_per_stance": 1, "convener": "c", "policy": policy,
        }))
        .expect("debate");
        let r = write(state, n, ClientCommand::CreateDebate(spec));
        applied(&r)["debate_id"].as_str().expect("id").to_owned()
    }

    fn setup() -> State {
        let mut s = State::default();
        for (i, id) in POOL.iter().enumerate() {
            let mut reg = json!({
                "arbiter_id": id,
                "public_key": hex::encode(key(i).verifying_key().to_bytes()),
                "organisation": if id.starts_with('n') { "north" } else { "south" },
                "model_family": format!("fam-{id}"), "stance": "A",
            });
            if *id == "rel" {
                reg["lineage"] = json!({"provider": "Acme Labs", "base_model": "acme-7"});
            }
            let r = write(
                &mut s,
                2 * i as u64 + 1,
                ClientCommand::RegisterArbiter(serde_json::from_value(reg).expect("reg")),
            );
            applied(&r);
            let admit = TestCommand::SetAdmission {
                arbiter_id: id.to_string(),
                admitted: true,
                score_milli: 900,
            };
            applied(&write(&mut s, 2 * i as u64 + 2, admit));
        }
        s
    }

    fn declaration(i: usize, debate: &str, stance: Stance) -> StanceDeclaration {
        sign(&key(i), POOL[i], debate, stance, 700).expect("sign")
    }

    fn declare(s: &mut State, n: u64, d: StanceDeclaration) -> ItemReply<crate::reply::Reply> {
        write(s, n, ClientCommand::DeclareStance(d))
    }

    fn refused(r: &ItemReply<crate::reply::Reply>, needle: &str) {
        assert!(
            matches!(r, ItemReply::Refused { code, message } if code == "declaration_refused" && message.contains(needle)),
            "{r:?}"
        );
    }

    fn open(
        s: &mut State,
        n: u64,
        debate: &str,
        id: &str,
        seats: usize,
        q: Option<Value>,
    ) -> ItemReply<crate::reply::Reply> {
        let spec = serde_json::from_value(json!({
            "motion_id": id, "debate_id": debate, "kind": "Merge", "state_hash": "ab".repeat(32),
            "seats": seats, "min_per_stance": 1, "contributors": [],
            "author_model_family": null, "policy": Policy::independent(), "question": q,
        }))
        .expect("spec");
        write(s, n, TestCommand::OpenMotion(Box::new(spec)))
    }

    use serde_json::Value;

    /// The registered label seats nobody under a debate's declared-stances policy; the
    /// signed declarations do, each for its own debate only; a policy written before keeps
    /// seating by the registered stance.
    /// docs/coordinator/acceptance.md "Declared priors": a new debate under the independent policy could seat nobody, because
    /// stances were declared by hand per debate. A standing declaration seats the arbiter
    /// on every debate where it declared nothing, and the first motion that seats it so
    /// fixes the stance in that debate; a chartered group's raw debate without a policy
    /// gets the independent rule, never the head-count rule.
    #[test]
    fn a_standing_stance_seats_new_debates_and_a_raw_debate_is_never_head_count() {
        let mut s = setup();
        // Before rule set 8 a standing declaration names no debate and is refused.
        refused(
            &declare(&mut s, 100, declaration(0, STANDING, Stance::B)),
            "does not exist",
        );
        s.rules = crate::rules::STANDING_STANCES;
        let first = debate(&mut s, 101, Some(Policy::independent()));
        // Nobody declared: the independent policy seats no stance.
        assert!(matches!(
            open(&mut s, 102, &first, "m0", 2, None),
            ItemReply::Refused { .. }
        ));
        // n1 (north) stands for B, s1 (south) for A, from a debate that already exists.
        applied(&declare(&mut s, 103, declaration(0, STANDING, Stance::B)));
        applied(&declare(&mut s, 104, declaration(3, STANDING, Stance::A)));
        // Forged: n2's key signs n1's standing stance.
        let mut forged = declaration(1, STANDING, Stance::A);
        forged.arbiter_id = POOL[0].into();
        refused(
            &declare(&mut s, 105, forged),
            "stance declaration of arbiter n1",
        );
        applied(&open(&mut s, 106, &first, "m1", 2, None));
        let stances = |s: &State, d: &str| {
            s.debates
                .get(d)
                .expect("debate")
                .declared_stances
                .iter()
                .map(|(id, st)| (id.clone(), st.stance))
                .collect::<Vec<_>>()
        };
        let fixed = [("n1".to_string(), Stance::B), ("s1".to_string(), Stance::A)];
        assert_eq!(stances(&s, &first), fixed, "fixed by the first seating");
        // A later standing change binds debates that have not seated n1 by it yet;
        // within `first` the stance stays, and a per-debate change is refused.
        applied(&declare(&mut s, 107, declaration(0, STANDING, Stance::A)));
        refused(
            &declare(&mut s, 108, declaration(0, &first, Stance::A)),
            "cannot change within a debate",
        );
        applied(&declare(&mut s, 109, declaration(4, STANDING, Stance::B)));
        let later = debate(&mut s, 110, Some(Policy::independent()));
        applied(&open(&mut s, 111, &later, "m2", 2, None));
        assert_eq!(stances(&s, &first), fixed);
        let seated = stances(&s, &later);
        assert!(
            seated.iter().all(|(id, st)| match id.as_str() {
                "n1" => *st == Stance::A,
                "s1" => *st == Stance::A,
                "s2" => *st == Stance::B,
                _ => false,
            }) && seated.len() == 2,
            "{seated:?}"
        );
        // Unchartered: a raw debate keeps the default rule; chartered: independent.
        let raw = debate(&mut s, 112, None);
        assert_eq!(s.debates.get(&raw).unwrap().policy, Policy::default());
        s.charter = Some(crate::features::charter_rules::tests::charter());
        let raw = debate(&mut s, 113, None);
        assert_eq!(s.debates.get(&raw).unwrap().policy, Policy::independent());
    }

    #[test]
    fn only_a_debates_signed_declarations_seat_its_stances() {
        let mut s = setup();
        let d1 = debate(&mut s, 20, Some(Policy::independent()));
        let d2 = debate(&mut s, 21, Some(Policy::independent()));
        // Every arbiter registered as A, none declared: no stance can be reserved.
        let r = open(&mut s, 22, &d1, "m0", 2, None);
        assert!(
            matches!(&r, ItemReply::Refused { code, message } if code == "draw_failed" && message.contains("stance")),
            "{r:?}"
        );
        for (n, (i, stance)) in [
            (0, Stance::A),
            (1, Stance::A),
            (3, Stance::B),
            (4, Stance::B),
        ]
        .into_iter()
        .enumerate()
        {
            applied(&declare(&mut s, 30 + n as u64, declaration(i, &d1, stance)));
        }
        for k in 0..8u64 {
            let id = format!("m{}", k + 1);
            applied(&open(&mut s, 40 + k, &d1, &id, 2, None));
            let m = s.motions.get(&id).expect("motion");
            let declared = &s.debates.get(&d1).expect("debate").declared_stances;
            for seat in &m.seats {
                assert_eq!(
                    Some(seat.stance),
                    declared.get(&seat.arbiter_id).map(|d| d.stance),
                    "{seat:?} seated without its declaration"
                );
            }
        }
        // Declarations for one debate seat nothing in another.
        let r = open(&mut s, 60, &d2, "other", 2, None);
        assert!(
            matches!(&r, ItemReply::Refused { code, .. } if code == "draw_failed"),
            "{r:?}"
        );
        // An old policy (no independence rules) seats by the registered stance: all A.
        let old = debate(&mut s, 61, None);
        let spec = serde_json::from_value(json!({
            "motion_id": "legacy", "debate_id": old, "kind": "Merge", "state_hash": "ab".repeat(32),
            "seats": 2, "min_per_stance": 0, "contributors": [], "author_model_family": null,
        }))
        .expect("spec");
        applied(&write(&mut s, 62, TestCommand::OpenMotion(Box::new(spec))));
        assert!(
            s.motions
                .get("legacy")
                .expect("m")
                .seats
                .iter()
                .all(|x| x.stance == Stance::A)
        );
    }

    /// Forged, replayed onto another debate or arbiter, unknown, revoked and changed
    /// declarations are refused by name, and nothing is recorded; the same declaration
    /// again changes nothing.
    #[test]
    fn forged_replayed_and_changed_declarations_are_refused() {
        let mut s = setup();
        let d1 = debate(&mut s, 20, Some(Policy::independent()));
        let d2 = debate(&mut s, 21, Some(Policy::independent()));
        // Signed by another arbiter's key.
        let mut forged = declaration(0, &d1, Stance::B);
        forged.signature = declaration(1, &d1, Stance::B).signature;
        refused(&declare(&mut s, 30, forged), "does not verify");
        // A declaration for d1 replayed as one for d2.
        let mut replayed = declaration(0, &d1, Stance::B);
        replayed.debate_id = d2.clone();
        refused(&declare(&mut s, 31, replayed), "does not verify");
        // Moved to another arbiter.
        let mut moved = declaration(0, &d1, Stance::B);
        moved.arbiter_id = "n2".into();
        refused(&declare(&mut s, 32, moved), "does not verify");
        refused(
            &declare(&mut s, 33, declaration(0, "deb_99", Stance::A)),
            "does not exist",
        );
        let mut stranger = declaration(0, &d1, Stance::A);
        stranger.arbiter_id = "nobody".into();
        refused(&declare(&mut s, 34, stranger), "not registered");
        let mut garbled = declaration(0, &d1, Stance::A);
        garbled.signature = "zz".into();
        refused(&declare(&mut s, 35, garbled), "not hex");
        assert!(s.debates.get(&d1).expect("d1").declared_stances.is_empty());
        assert!(s.debates.get(&d2).expect("d2").declared_stances.is_empty());

        let first = declare(&mut s, 40, declaration(0, &d1, Stance::A));
        assert_eq!(applied(&first)["stance"], "A");
        let again = declare(&mut s, 41, declaration(0, &d1, Stance::A));
        assert_eq!(applied(&again)["repeated"], true);
        refused(
            &declare(&mut s, 42, declaration(0, &d1, Stance::B)),
            "cannot change",
        );
        let kept = &s.debates.get(&d1).expect("d1").declared_stances["n1"];
        assert_eq!((kept.stance, kept.log_index), (Stance::A, 40));
        // A revoked arbiter declares nothing.
        s.arbiters.get_mut("n2").expect("n2").revoked = Some(json!({"reason": "lost"}));
        refused(
            &declare(&mut s, 43, declaration(1, &d1, Stance::B)),
            "revoked",
        );
    }

    /// An arbiter of the lineage of any author a motion is about stays off its panel: here
    /// the thread's second author, not the question's own, shares `rel`'s base model.
    #[test]
    fn relatives_of_every_involved_author_are_not_seated() {
        let mut s = setup();
        let d1 = debate(&mut s, 20, Some(Policy::independent()));
        for (n, (i, stance)) in [
            (0, Stance::A),
            (1, Stance::A),
            (2, Stance::A),
            (3, Stance::B),
            (4, Stance::B),
            (5, Stance::B),
        ]
        .into_iter()
        .enumerate()
        {
            applied(&declare(&mut s, 30 + n as u64, declaration(i, &d1, stance)));
        }
        let rec = s.debates.get_mut(&d1).expect("debate");
        let version = |id: &str, num: u32, author: &str| json!({"id": id, "threadId": "t1", "num": num, "author": author, "status": "merged", "evidence": []});
        rec.debate.threads.push(
            serde_json::from_value(json!({
                "id": "t1", "versions": [version("v1", 1, "ada"), version("v2", 2, "bob")],
            }))
            .expect("thread"),
        );
        rec.author_families.insert("ada".into(), "other-lab".into());
        rec.author_families.insert("bob".into(), "ACME-7".into());
        let merge = json!({"kind": "merge", "threadId": "t1", "versionId": "v1"});
        // All six seats are needed, but `rel` may not sit: bob's lineage is its own.
        let r = open(&mut s, 50, &d1, "m1", 6, Some(merge.clone()));
        assert!(
            matches!(&r, ItemReply::Refused { code, .. } if code == "draw_failed"),
            "{r:?}"
        );
        for k in 0..6u64 {
            let id = format!("m{}", k + 2);
            applied(&open(&mut s, 51 + k, &d1, &id, 5, Some(merge.clone())));
            assert!(
                s.motions
                    .get(&id)
                    .expect("m")
                    .seats
                    .iter()
                    .all(|x| x.arbiter_id != "rel")
            );
        }
        // With no author of its lineage, `rel` is eligible again.
        let rec = s.debates.get_mut(&d1).expect("debate");
        rec.author_families.insert("bob".into(), "third-lab".into());
        applied(&open(&mut s, 60, &d1, "all", 6, Some(merge)));
        assert!(
            s.motions
                .get("all")
                .expect("m")
                .seats
                .iter()
                .any(|x| x.arbiter_id == "rel")
        );
        // Rule 4 counts `rel` under its declared base model.
        let seat = s
            .motions
            .get("all")
            .expect("m")
            .seats
            .iter()
            .find(|x| x.arbiter_id == "rel")
            .cloned();
        assert_eq!(seat.map(|x| x.lineage), Some("acme-7".to_string()));
    }
}
