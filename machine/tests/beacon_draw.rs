//! The draw beacon (rule set 18, `beacon.rs`; docs/SECURITY.md "The draw cannot be
//! steered"): in a group whose charter gives its replicas beacon keys, an unsteerable
//! motion opens unseated and is seated by replicas' VRF proofs over its question key.
//! The attacks: a leader re-stamping times and seeds, padding the log and reordering
//! entries before a question, to choose its panel (it cannot: the same question draws the
//! same panel); a forged, foreign, replayed or duplicated share, or the shares of one
//! organisation alone (refused, the motion stays unseated); a second seating (refused). The same content asked again draws afresh.
//! Under the same quorum charter a seated motion's round is logged only with the seals of
//! the quorum's organisations (rule set 20, docs/WIRE.md "Motion seals").

use crucible::motion::{Answer, Question};
use panel_federation::beacon_key::BeaconSecret;
use panel_federation::{Charter, ReplicaEntry};
use panel_machine::Policy;
use panel_machine::features::beacon::{self, BeaconShare, Seating};
use panel_machine::rules::acceptance::Independence;
use panel_machine::testkit::fixtures::bare_charter;
use panel_machine::testkit::{Driver, KitError, SIX, Schedule, Vote, assert_refused};
use panel_machine::{InternalCommand, ItemReply, TestCommand};

fn secret(replica: u64) -> BeaconSecret {
    BeaconSecret::from_log_seed(&[replica as u8 + 60; 32])
}

fn charter() -> Charter {
    Charter {
        replicas: (1..=3)
            .map(|id| ReplicaEntry {
                id,
                organisation: if id == 2 { "south" } else { "north" }.into(),
                cert_sha256: panel_federation::Fingerprint([id as u8; 32]),
                log_vkey: None,
                beacon_vkey: Some(secret(id).public_hex()),
            })
            .collect(),
        // Two organisations must share every draw (the log quorum).
        log: Some(panel_federation::LogIdentity {
            origin: "example.com/beacon-test".into(),
            vkey: String::new(),
            quorum: 2,
        }),
        ..bare_charter()
    }
}

/// The unsteerable draw alone, so the pool's registered stances seat the panel.
fn policy() -> serde_json::Value {
    serde_json::to_value(Policy {
        independence: Independence {
            unsteerable_draw: true,
            ..Independence::default()
        },
        ..Policy::default()
    })
    .expect("a policy encodes")
}

fn merge() -> Question {
    Question::AdvancePhase {
        from: "framing".into(),
    }
}

/// A chartered driver under `schedule`, with `padding` notes on the log before the debate.
fn group(schedule: Schedule, padding: usize) -> Driver {
    let mut d = Driver::with_schedule(schedule);
    for (id, stance, org) in SIX {
        d.add_arbiter(id, stance, org);
    }
    d.rules = Some(panel_machine::rules::CURRENT);
    d.state.charter = Some(charter());
    for i in 0..padding {
        d.ok(TestCommand::Note {
            topic: "pad".into(),
            text: format!("filler {i}"),
        });
    }
    d
}

fn share(replica: u64, question: &str) -> BeaconShare {
    let q: [u8; 32] = hex::decode(question).unwrap().try_into().unwrap();
    BeaconShare {
        replica,
        proof: secret(replica).prove_hex(&beacon::input(&q)).into(),
    }
}

fn seat(
    d: &mut Driver,
    motion_id: &str,
    shares: Vec<BeaconShare>,
) -> ItemReply<panel_machine::Reply> {
    d.write(InternalCommand::SeatMotion(Seating {
        motion_id: motion_id.into(),
        shares,
    }))
}

fn question_of(d: &Driver, motion_id: &str) -> String {
    let m = d.state.motions.get(motion_id).expect("the motion exists");
    m.beacon
        .as_ref()
        .expect("a beacon motion")
        .question
        .to_hex()
}

/// Opens the question in a fresh debate; the motion id and its question key.
fn ask(d: &mut Driver) -> (String, String) {
    let debate = d.try_debate_under(Some(policy())).expect("debate created");
    let m = d.ask(&debate, &merge(), Some(Answer::Yes));
    let q = question_of(d, &m);
    (m, q)
}

#[track_caller]
fn refused(r: ItemReply<panel_machine::Reply>, needle: &str) {
    assert_refused(r, "beacon_refused", needle);
}

#[test]
fn a_motion_opens_unseated_and_only_a_charter_replicas_proof_over_its_question_seats_it() {
    let mut d = group(Schedule::default(), 0);
    let (m, q) = ask(&mut d);
    assert!(d.state.motions.get(&m).unwrap().seats.is_empty());

    // Forged: bytes that are no proof, and a proof by a key the charter does not list.
    let forged = BeaconShare {
        replica: 1,
        proof: "ab".repeat(80).into(),
    };
    refused(
        seat(&mut d, &m, vec![forged, share(2, &q)]),
        "replica 1's share",
    );
    let outsider = BeaconSecret::from_log_seed(&[9; 32]);
    let qb: [u8; 32] = hex::decode(&q).unwrap().try_into().unwrap();
    let foreign = BeaconShare {
        replica: 1,
        proof: outsider.prove_hex(&beacon::input(&qb)).into(),
    };
    refused(
        seat(&mut d, &m, vec![foreign, share(2, &q)]),
        "does not verify",
    );
    refused(
        seat(&mut d, &m, vec![share(1, &q), share(7, &q)]),
        "no beacon key",
    );
    // Replayed: replica 1's genuine proof over another question.
    let other = hex::encode(beacon::question_key(&[1; 32], 0));
    refused(
        seat(&mut d, &m, vec![share(1, &other), share(2, &q)]),
        "does not verify",
    );
    refused(seat(&mut d, &m, vec![share(2, &q), share(2, &q)]), "twice");
    refused(seat(&mut d, &m, vec![]), "no share");
    // One organisation alone: one share, or two shares of the same organisation.
    refused(seat(&mut d, &m, vec![share(1, &q)]), "needs exactly 2");
    refused(
        seat(&mut d, &m, vec![share(1, &q), share(3, &q)]),
        "both of organisation north",
    );
    assert!(d.state.motions.get(&m).unwrap().seats.is_empty());

    assert!(matches!(
        seat(&mut d, &m, vec![share(1, &q), share(2, &q)]),
        ItemReply::Applied(_)
    ));
    let seated = d.state.motions.get(&m).unwrap();
    assert_eq!(seated.seats.len(), seated.spec.seats);
    refused(
        seat(&mut d, &m, vec![share(2, &q), share(3, &q)]),
        "awaits no seats",
    );
}

/// The attack: a leader varies everything it controls before a question (the stamped
/// times and batch seeds, filler entries that move the log's indices and the record's
/// tree) hoping for a panel it likes. The question key, so the share and the panel, stay
/// the same; only a different share (another replica's) changes the draw.
#[test]
fn stamps_padding_and_order_before_a_question_do_not_move_its_draw() {
    let mut panels = std::collections::BTreeSet::new();
    let mut keys = std::collections::BTreeSet::new();
    for (i, padding) in [0usize, 1, 3, 7].into_iter().enumerate() {
        let schedule = Schedule {
            start_ms: 1_790_000_000_000 + 7_919 * i as u64,
            step_ms: 13 + i as u64,
            seed_base: 1_000 * i as u64,
        };
        let mut d = group(schedule, padding);
        let (m, q) = ask(&mut d);
        assert!(matches!(
            seat(&mut d, &m, vec![share(1, &q), share(2, &q)]),
            ItemReply::Applied(_)
        ));
        let motion = d.state.motions.get(&m).unwrap();
        keys.insert(q);
        panels.insert((motion.draw_seed, format!("{:?}", motion.seats)));
    }
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(panels.len(), 1, "{panels:?}");

    let mut d = group(Schedule::default(), 0);
    let (m, q) = ask(&mut d);
    seat(&mut d, &m, vec![share(2, &q), share(3, &q)]);
    let other = d.state.motions.get(&m).unwrap().draw_seed;
    assert!(!panels.iter().any(|(seed, _)| *seed == other));
}

#[test]
fn the_same_content_asked_again_gets_a_fresh_question_key_and_shares_list_in_order() {
    let mut d = group(Schedule::default(), 0);
    let (m1, q1) = ask(&mut d);
    let spec = d.state.motions.get(&m1).unwrap().spec.clone();
    // The next motion of exactly this content would be attempt 1, under another key.
    let again = beacon::open(&mut d.state, &spec, Vec::new()).expect("a key");
    assert_eq!(again.attempt, 1);
    assert_ne!(again.question.to_hex(), q1);
    // The two organisations' shares, listed by ascending id, seat it; out of order not.
    refused(
        seat(&mut d, &m1, vec![share(2, &q1), share(1, &q1)]),
        "out of order",
    );
    assert!(matches!(
        seat(&mut d, &m1, vec![share(1, &q1), share(2, &q1)]),
        ItemReply::Applied(_)
    ));
    let seated = d.state.motions.get(&m1).unwrap();
    assert_eq!(seated.beacon.as_ref().map(|b| b.shares.len()), Some(2));
}

/// What is admitted between the opening and the seating does not change the panel: the
/// seating draws from the pool the opening entry saw (so the order in which the leader
/// puts other writes before the seating chooses nothing either).
#[test]
fn an_arbiter_admitted_before_the_seating_changes_nothing() {
    let seat_after = |admit_first: bool| {
        let mut d = Driver::with_schedule(Schedule::default());
        for (id, stance, org) in SIX {
            d.add_arbiter(id, stance, org);
        }
        // Two more arbiters, registered but not yet admitted.
        for (id, stance, org) in [
            ("a9", panel_machine::Stance::A, "o1"),
            ("b9", panel_machine::Stance::B, "o2"),
        ] {
            d.try_register(id, org, &format!("fam-{id}"), stance)
                .expect("registered");
        }
        d.rules = Some(panel_machine::rules::CURRENT);
        d.state.charter = Some(charter());
        let (m, q) = ask(&mut d);
        if admit_first {
            for id in ["a9", "b9"] {
                d.try_admit_without_exam(id).expect("admitted");
            }
            let pending = d.state.motions.get(&m).unwrap();
            let pool = &pending.beacon.as_ref().unwrap().pool;
            assert!(pool.len() == 6 && !pool.iter().any(|c| c.id.ends_with('9')));
        }
        assert!(matches!(
            seat(&mut d, &m, vec![share(1, &q), share(2, &q)]),
            ItemReply::Applied(_)
        ));
        d.seated_on(&m)
    };
    let control = seat_after(false);
    let raced = seat_after(true);
    assert_eq!(control, raced);
    assert!(!raced.contains("a9") && !raced.contains("b9"), "{raced:?}");
}

/// A replica's log key, named for the test charter's log origin.
fn log_key(replica: u64) -> panel_tlog::NoteSigner {
    panel_tlog::NoteSigner::new(
        "example.com/beacon-test",
        panel_proto::SigningKey::from_bytes(&[replica as u8 + 90; 32]),
    )
    .unwrap()
}

/// Rule set 20 (`MOTION_SEALS`): the motion a round puts to its seats is logged only with
/// the seals of the log quorum's organisations over its digest, so the record shows that
/// no replica alone put it to them; one organisation's replicas, however many, do not
/// suffice.
#[test]
fn a_round_is_logged_only_with_the_seals_of_the_quorums_organisations() {
    let mut d = group(Schedule::default(), 0);
    let mut c = charter();
    for r in &mut c.replicas {
        r.log_vkey = Some(log_key(r.id).verifier().to_string());
    }
    d.state.charter = Some(c);
    let (m, q) = ask(&mut d);
    assert!(matches!(
        seat(&mut d, &m, vec![share(1, &q), share(2, &q)]),
        ItemReply::Applied(_)
    ));
    let yes = |_: &_, _: &str| Vote {
        yes: true,
        p: 0.9,
        relevance: None,
        receipt: None,
    };
    let unsealed = |r: Result<serde_json::Value, KitError>, found: &str| match r {
        Err(KitError::Refused { code, message }) => {
            assert_eq!(code, "motion_unsealed", "{message}");
            assert!(message.contains(found), "{message}");
        }
        other => panic!("{other:?}"),
    };
    unsealed(d.try_decide_by_round(&m, yes), "0 organisation(s)");
    d.sealers = vec![log_key(1), log_key(3)];
    unsealed(d.try_decide_by_round(&m, yes), "[\"north\"]");
    d.sealers = vec![log_key(1), log_key(2)];
    d.try_decide_by_round(&m, yes)
        .expect("sealed by north and south");
}
