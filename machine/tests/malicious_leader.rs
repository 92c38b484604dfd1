//! The leader's remaining powers, tested (docs/SECURITY.md "What each
//! attacker can and cannot do", "Leader").
//!
//! The Raft leader seals every batch: it stamps `time_ms` and `seed`, chooses which pending
//! writes go in and in what order, and its drivers propose the internal commands
//! (`LogCommitments`, `CloseMotion`, `SubmitExam`, ...). Every test here plays such a
//! leader through `apply_batch`, the real transition function, and checks what apply
//! refuses and what the record then holds. Tests named `open_*` pin a power apply does
//! **not** bound today: each asserts the attack works, so the day a protection lands the
//! test fails and must be turned into a refusal test.
//!
//! 1. Stamped times: a close before the signed reveal deadline is refused while a logged
//!    commitment is unrevealed; but the deadline is judged by the stamped batch time, and
//!    apply accepts a time in the far future or going backwards (`open_*`).
//! 2. Omitting a commitment from `LogCommitments`: the seat is silently excluded; the record
//!    names it `not_committed` and its node's own reveal is refused (`open_*`).
//! 3. Re-ordering reveals: the close is the same, byte for byte, for every order.
//! 4. Grinding the draw seed through the entries before a motion: measured.
//! 5. Exam items: the draw ignores every stamp; which drawn answers reach the exam is still
//!    the driver's choice (`open_*`).

use std::collections::BTreeSet;

use calibration::exam::Gold;
use ed25519_dalek::SigningKey;
use panel_machine::apply_batch;
use panel_machine::command::ArbiterRegistration;
use panel_machine::features::draw_seed;
use panel_machine::features::exam_sitting::{self, Sitting};
use panel_machine::read::record;
use panel_machine::rules;
use panel_machine::rules::ruling::{self, Binding};
use panel_machine::{
    Batch, BatchReply, ClientCommand, Command, CommitmentLog, InternalCommand, Item, ItemReply,
    MotionSpec, TestCommand,
};
use panel_machine::{Decision, MotionKind, Policy, Stance};
use panel_machine::{MotionStatus, State};
use panel_proto::pb;
use prost::Message;
use serde_json::{Value, json};

fn key(i: u8) -> SigningKey {
    SigningKey::from_bytes(&[i; 32])
}

/// The cluster's motion key (every replica, so every leader, holds it).
fn motion_key() -> SigningKey {
    key(50)
}

/// A leader sealing batches onto one state: it picks each batch's time, seed and items.
#[derive(Clone)]
struct Leader {
    state: State,
    /// The next Raft log index.
    index: u64,
    rules: Option<u32>,
}

impl Leader {
    fn new(rules: Option<u32>) -> Self {
        Leader {
            state: State::default(),
            index: 1,
            rules,
        }
    }

    /// Seals one batch of `(client_id, command)` items stamped `time_ms` and `seed`.
    fn seal(&mut self, time_ms: u64, seed: u64, items: Vec<(&str, Command)>) -> BatchReply {
        let index = self.index;
        self.index += 1;
        let batch = Batch {
            time_ms,
            seed,
            items: items
                .into_iter()
                .enumerate()
                .map(|(i, (client_id, command))| Item {
                    client_id: client_id.into(),
                    request_id: index * 1_000 + i as u64,
                    command,
                    writer: None,
                })
                .collect(),
            limits: None,
            checkpoints: None,
            rules: self.rules,
        };
        apply_batch(
            &mut self.state,
            index,
            &batch,
            &panel_proto::VerifiedMemo::default(),
        )
    }

    /// One item in its own batch (seed 7).
    fn one(
        &mut self,
        time_ms: u64,
        client_id: &str,
        c: Command,
    ) -> ItemReply<panel_machine::Reply> {
        self.seal(time_ms, 7, vec![(client_id, c)])
            .items
            .remove(0)
            .reply
    }
}

fn applied(r: ItemReply<panel_machine::Reply>) -> Value {
    match r {
        ItemReply::Applied(v) => v.to_json(),
        other => panic!("expected it applied, got {other:?}"),
    }
}

fn refused(r: ItemReply<panel_machine::Reply>) -> String {
    match r {
        ItemReply::Refused { code, message } => format!("{code}: {message}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn registration(id: &str, k: u8, stance: Stance, org: &str) -> Command {
    ClientCommand::RegisterArbiter(ArbiterRegistration {
        arbiter_id: id.into(),
        public_key: hex::encode(key(k).verifying_key().to_bytes()).into(),
        organisation: org.into(),
        model_family: format!("fam-{id}"),
        stance,
        endpoint: String::new(),
        attestation: None,
        lineage: None,
    })
    .into()
}

fn admission(id: &str) -> Command {
    TestCommand::SetAdmission {
        arbiter_id: id.into(),
        admitted: true,
        score_milli: 900,
    }
    .into()
}

fn open_motion(id: &str, seats: usize, min_per_stance: usize, policy: Option<Policy>) -> Command {
    TestCommand::OpenMotion(Box::new(MotionSpec {
        motion_id: id.into(),
        debate_id: "d1".into(),
        kind: MotionKind::Merge,
        state_hash: hex::encode(HASH).into(),
        seats,
        min_per_stance,
        contributors: vec![],
        author_model_family: None,
        policy,
        question: None,
        projection: None,
        expected: None,
        procedure: None,
        final_panel_of: None,
    }))
    .into()
}

// ---------------------------------------------------------------------------------------
// A logged commit-reveal round on motion m1 (powers 1 to 3).

const HASH: [u8; 32] = [0xab; 32];
const COMMIT_DEADLINE: i64 = 2_000;
const REVEAL_DEADLINE: i64 = 9_000;
/// Keys 1..=4: a1, a2 (stance A), b1, b2 (stance B); the four seats of m1.
const SEATS: [(&str, u8, Stance, &str); 4] = [
    ("a1", 1, Stance::A, "o1"),
    ("a2", 2, Stance::A, "o2"),
    ("b1", 3, Stance::B, "o1"),
    ("b2", 4, Stance::B, "o3"),
];

/// Entry 1 at 1 000 ms: four admitted arbiters and raw motion m1 seating all four.
fn round_setup() -> Leader {
    let mut l = Leader::new(None);
    let mut items = vec![];
    for (id, k, stance, org) in SEATS {
        items.push(("t", registration(id, k, stance, org)));
        items.push(("t", admission(id)));
    }
    items.push(("t", open_motion("m1", 4, 2, None)));
    let r = l.seal(1_000, 1, items);
    assert!(
        r.items
            .iter()
            .all(|o| matches!(o.reply, ItemReply::Applied(_))),
        "{r:?}"
    );
    assert_eq!(l.state.motions.get("m1").expect("m1").seats.len(), 4);
    l
}

/// The signed motion of m1's round with the given deadlines.
fn signed_motion(commit: i64, reveal: i64) -> pb::Motion {
    panel_proto::sign_motion(
        &motion_key(),
        pb::Motion {
            motion_id: "m1".into(),
            debate_id: "d1".into(),
            kind: pb::MotionKind::Merge as i32,
            state_hash: HASH.to_vec(),
            commit_deadline_unix_ms: commit,
            reveal_deadline_unix_ms: reveal,
            panel: SEATS
                .iter()
                .map(|(_, k, _, _)| pb::PanelSeat {
                    public_key: key(*k).verifying_key().to_bytes().to_vec(),
                    endpoint: String::new(),
                })
                .collect(),
            ..Default::default()
        },
    )
}

/// What a seat's node makes for a motion: its signed v2 ruling, salt and commitment.
#[derive(Clone)]
struct Sealed {
    signed: pb::SignedRuling,
    salt: [u8; 32],
    commitment: pb::Commitment,
}

fn seat_seal(k: u8, decision: Decision, digest: [u8; 32]) -> Sealed {
    let binding = Binding {
        motion_id: "m1",
        debate_id: "d1",
        kind: MotionKind::Merge,
        state_hash: &HASH,
    };
    let mut r = ruling::sign(&key(k), &binding, decision, 0.8, None)
        .decode()
        .expect("decodes")
        .ruling
        .expect("ruling");
    r.motion_digest = digest.to_vec();
    r.rationale = format!("seat key {k} says {decision:?}");
    let signed = panel_proto::sign_ruling(&key(k), r).expect("sign");
    let salt = [k; 32];
    // Made inside the commit window, as an honest node does.
    let commitment =
        panel_proto::commit_reveal::commit(&key(k), &signed, &salt, 1_500).expect("commit");
    Sealed {
        signed,
        salt,
        commitment,
    }
}

impl Sealed {
    fn reveal(&self) -> Command {
        self.reveal_with(None)
    }

    /// The `SubmitReveal` of this seal; `commitment` rides inside the reveal if given.
    fn reveal_with(&self, commitment: Option<pb::Commitment>) -> Command {
        ClientCommand::SubmitReveal {
            motion_id: "m1".into(),
            reveal: panel_machine::RevealBytes::new(
                pb::Reveal {
                    signed_ruling: Some(self.signed.clone()),
                    salt: self.salt.to_vec(),
                    commitment,
                }
                .encode_to_vec(),
            ),
        }
        .into()
    }
}

fn log_commitments(m: &pb::Motion, seals: &[&Sealed]) -> Command {
    InternalCommand::LogCommitments(CommitmentLog {
        motion_id: "m1".into(),
        motion: panel_machine::rules::signed_motion::encode(m),
        commitments: seals
            .iter()
            .map(|s| panel_machine::CommitmentBytes::new(s.commitment.encode_to_vec()))
            .collect(),
    })
    .into()
}

fn close() -> Command {
    InternalCommand::CloseMotion {
        motion_id: "m1".into(),
    }
    .into()
}

/// a1, a2, b1 agree; b2 dissents. Counted together the motion deadlocks (b2's "no" leaves
/// stance B without two agreeing seats); without b2 the other three carry it.
fn seals(m: &pb::Motion) -> Vec<Sealed> {
    let d = panel_proto::motion_digest(m);
    SEATS
        .iter()
        .map(|(id, k, _, _)| {
            let decision = if *id == "b2" {
                Decision::No
            } else {
                Decision::Yes
            };
            seat_seal(*k, decision, d)
        })
        .collect()
}

fn verdict_kind(v: &Value) -> &'static str {
    if v["verdict"]["Accepted"].is_object() {
        "Accepted"
    } else if v["verdict"]["Deadlocked"].is_object() {
        "Deadlocked"
    } else {
        panic!("no verdict in {v}")
    }
}

/// Batch times of the record's entries, in order.
fn record_times(s: &State) -> Vec<u64> {
    s.record.iter().map(|e| e.time_ms).collect()
}

fn verifies(s: &State) -> Result<(), String> {
    let origin = panel_machine::features::checkpoints::origin(s).to_owned();
    let log_key = panel_tlog::NoteSigner::new(&origin, key(60)).expect("log key");
    record::verify(&record::export(s, Some(&log_key)))
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Power 1, the protection: a close stamped inside the signed reveal window is refused
/// while a logged commitment is unrevealed, at every instant up to the deadline itself,
/// and the motion stays open. Once every logged commitment is revealed the close may come
/// early (nothing can change any more), and then it counts the dissent.
#[test]
fn a_close_inside_the_signed_reveal_window_is_refused_while_a_seat_is_still_to_reveal() {
    let mut l = round_setup();
    let m = signed_motion(COMMIT_DEADLINE, REVEAL_DEADLINE);
    let s = seals(&m);
    applied(l.one(
        2_100,
        "motion-driver",
        log_commitments(&m, &s.iter().collect::<Vec<_>>()),
    ));
    for seat in &s[..3] {
        applied(l.one(3_000, "anyone", seat.reveal()));
    }
    for t in [
        3_000,
        5_000,
        REVEAL_DEADLINE as u64 - 1,
        REVEAL_DEADLINE as u64,
    ] {
        let why = refused(l.one(t, "motion-driver", close()));
        assert!(
            why.starts_with("close_too_early") && why.contains("b2"),
            "close at {t}: {why}"
        );
        assert_eq!(
            l.state.motions.get("m1").unwrap().status,
            MotionStatus::Open
        );
    }
    // Honest time: b2 reveals inside its window, the close counts it.
    applied(l.one(REVEAL_DEADLINE as u64, "b2-node", s[3].reveal()));
    let v = applied(l.one(REVEAL_DEADLINE as u64, "motion-driver", close()));
    assert_eq!(verdict_kind(&v), "Deadlocked", "{v}");
    assert_eq!(v["revealed"], json!(["a1", "a2", "b1", "b2"]));
}

/// Power 1, open: the reveal deadline is judged by the batch time the leader stamps, and
/// apply takes any time. A leader whose real clock reads 3 050 ms (b2 has until 9 000 ms)
/// stamps its close past the deadline, or decades ahead: the close applies, b2's dissent is
/// lost (`committed_not_revealed`), and the deadlock becomes "Accepted". The next batch,
/// stamped by the honest clock again, goes *backwards* and applies too; b2's own reveal is
/// refused because the motion is closed. The lie is on the record (the close's entry
/// carries the stamped time, a later entry an earlier one) and `panel verify` passes it.
#[test]
fn open_a_batch_time_past_the_signed_deadline_closes_the_round_early_and_time_may_go_back() {
    for stamped in [REVEAL_DEADLINE as u64 + 1, 4_102_444_800_000] {
        let mut l = round_setup();
        let m = signed_motion(COMMIT_DEADLINE, REVEAL_DEADLINE);
        let s = seals(&m);
        applied(l.one(
            2_100,
            "motion-driver",
            log_commitments(&m, &s.iter().collect::<Vec<_>>()),
        ));
        for seat in &s[..3] {
            applied(l.one(3_000, "anyone", seat.reveal()));
        }
        // The same close at the honest time is refused (the test above).
        let mut honest = l.clone();
        assert!(
            refused(honest.one(3_050, "motion-driver", close())).starts_with("close_too_early")
        );

        let v = applied(l.one(stamped, "motion-driver", close()));
        assert_eq!(
            verdict_kind(&v),
            "Accepted",
            "b2's dissent was closed out: {v}"
        );
        assert_eq!(v["absent"]["committed_not_revealed"], json!(["b2"]));
        // Back to the real clock: earlier than the close, and applied.
        let why = refused(l.one(3_100, "b2-node", s[3].reveal()));
        assert!(why.starts_with("motion_closed"), "{why}");
        applied(l.one(3_100, "t", registration("x1", 21, Stance::None, "o4")));
        let times = record_times(&l.state);
        let close_at = times.len() - 2;
        assert_eq!(times[close_at], stamped);
        assert!(
            times[close_at + 1] < times[close_at],
            "the record holds a backwards step: {times:?}"
        );
        assert_eq!(verifies(&l.state), Ok(()), "panel verify does not flag it");
    }
}

/// Power 1, open, the other direction: once the record's time is past b2's reveal deadline
/// (b2's reveal at 9 500 ms is refused as outside the window), a leader stamps its next
/// batch back at 3 100 ms and b2's late reveal counts. A window the signed deadline closed
/// is open again for whoever the leader favours, e.g. a seat that waited to see the others.
#[test]
fn open_a_batch_time_stamped_backwards_reopens_a_closed_reveal_window() {
    let mut l = round_setup();
    let m = signed_motion(COMMIT_DEADLINE, REVEAL_DEADLINE);
    let s = seals(&m);
    applied(l.one(
        2_100,
        "motion-driver",
        log_commitments(&m, &s.iter().collect::<Vec<_>>()),
    ));
    for seat in &s[..3] {
        applied(l.one(3_000, "anyone", seat.reveal()));
    }
    applied(l.one(9_500, "t", registration("x1", 21, Stance::None, "o4")));
    let why = refused(l.one(9_500, "b2-node", s[3].reveal()));
    assert!(why.starts_with("reveal_outside_window"), "{why}");
    // The leader turns its clock back.
    let v = applied(l.one(3_100, "b2-node", s[3].reveal()));
    assert_eq!(v["counted"], true, "{v}");
    let v = applied(l.one(3_200, "motion-driver", close()));
    assert_eq!(
        verdict_kind(&v),
        "Deadlocked",
        "the late reveal counted: {v}"
    );
    assert_eq!(v["revealed"], json!(["a1", "a2", "b1", "b2"]));
    assert_eq!(verifies(&l.state), Ok(()));
}

/// Power 1, open: the deadlines themselves are the leader's. Every replica holds the motion
/// key, and apply checks the signed motion's identity and seats, not its windows: a round
/// signed with a 1 ms reveal window is logged, every reveal is then outside it, and the
/// close right after records all four seats as committed-not-revealed.
#[test]
fn open_the_leader_signs_the_reveal_window_it_likes() {
    let mut l = round_setup();
    let m = signed_motion(COMMIT_DEADLINE, COMMIT_DEADLINE + 1);
    let s = seals(&m);
    let v = applied(l.one(
        1_900,
        "motion-driver",
        log_commitments(&m, &s.iter().collect::<Vec<_>>()),
    ));
    assert_eq!(v["reveal_deadline_ms"], json!(COMMIT_DEADLINE + 1));
    let why = refused(l.one(2_500, "a1-node", s[0].reveal()));
    assert!(why.starts_with("reveal_outside_window"), "{why}");
    let v = applied(l.one(2_500, "motion-driver", close()));
    assert_eq!(
        v["absent"]["committed_not_revealed"],
        json!(["a1", "a2", "b1", "b2"])
    );
}

// ---------------------------------------------------------------------------------------
// Power 2: omitting one commitment.

/// Power 2, open. Nodes reveal to anyone who asks once the commit deadline has passed (by
/// their own clock, not by whether their commitment is logged), so a leader can ask for the
/// reveals first, see that b2 dissents, and log only the other three commitments. Apply
/// cannot tell a seat that never answered from one the leader dropped:
/// - the round's reply and the close name b2 `not_committed`;
/// - b2's node's own `SubmitReveal` is refused (`reveal_without_commitment`), also when it
///   carries b2's signed, timely commitment: a commitment inside a reveal is ignored;
/// - the round is logged once, so b2 cannot be added later;
/// - the other three are all revealed, so the close may come at once, and it accepts what
///   the same four seats, all logged, deadlock.
///
/// b2 holds the proof of the omission (its commitment verifies under its key and is dated
/// inside the commit window) but there is no entry that puts it on the record.
#[test]
fn open_a_commitment_left_out_of_the_log_excludes_its_seat() {
    let m = signed_motion(COMMIT_DEADLINE, REVEAL_DEADLINE);
    let s = seals(&m);

    // The honest round, for comparison.
    let mut honest = round_setup();
    applied(honest.one(
        2_100,
        "motion-driver",
        log_commitments(&m, &s.iter().collect::<Vec<_>>()),
    ));
    for seat in &s {
        applied(honest.one(3_000, "anyone", seat.reveal()));
    }
    let fair = applied(honest.one(3_100, "motion-driver", close()));
    assert_eq!(verdict_kind(&fair), "Deadlocked", "{fair}");

    // The leader drops b2's commitment, which it received before the commit deadline.
    let mut l = round_setup();
    let b2 = &s[3];
    let committed_at = b2.commitment.committed_at_unix_ms;
    assert!(committed_at <= COMMIT_DEADLINE, "b2 committed in time");
    panel_proto::commit_reveal::verify_commitment(
        &b2.commitment,
        &panel_proto::VerifiedMemo::default(),
    )
    .expect("b2's commitment verifies: it is b2's proof that it committed");
    let v = applied(l.one(
        2_100,
        "motion-driver",
        log_commitments(&m, &[&s[0], &s[1], &s[2]]),
    ));
    assert_eq!(v["committed"], json!(["a1", "a2", "b1"]));
    assert_eq!(v["not_committed"], json!(["b2"]));
    for seat in &s[..3] {
        applied(l.one(3_000, "anyone", seat.reveal()));
    }
    for reveal in [b2.reveal(), b2.reveal_with(Some(b2.commitment.clone()))] {
        let why = refused(l.one(3_000, "b2-node", reveal));
        assert!(why.starts_with("reveal_without_commitment"), "{why}");
    }
    let why = refused(l.one(
        3_000,
        "motion-driver",
        log_commitments(&m, &s.iter().collect::<Vec<_>>()),
    ));
    assert!(why.starts_with("round_logged"), "{why}");
    let v = applied(l.one(3_100, "motion-driver", close()));
    assert_eq!(
        verdict_kind(&v),
        "Accepted",
        "the dropped dissent flips it: {v}"
    );
    assert_eq!(v["absent"]["not_committed"], json!(["b2"]));
    assert_eq!(v["revealed"], json!(["a1", "a2", "b1"]));
    let round = l.state.motions.get("m1").unwrap().round.clone().unwrap();
    assert_eq!(round.absent.unwrap().not_committed, vec!["b2"]);
    assert!(!round.commitments.contains_key("b2"));
}

// ---------------------------------------------------------------------------------------
// Power 3: re-ordering reveals.

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out
}

/// The motion as the state holds it, with each stored reveal's log index (where the
/// leader put it, the one order-dependent field) removed.
fn motion_without_reveal_positions(s: &State) -> Value {
    let mut v = serde_json::to_value(s.motions.get("m1").expect("m1")).expect("json");
    if let Some(cs) = v["round"]["commitments"].as_object_mut() {
        for seat in cs.values_mut() {
            if let Some(r) = seat["reveal"].as_object_mut() {
                r.remove("log_index");
            }
        }
    }
    v
}

/// Power 3, harmless: for all 24 orders of the four reveals, each in its own batch (so
/// their log indices differ) or all in one batch (so only their item order does), the
/// close's reply, the close's record leaf (the bytes hashed into the transparency log) and
/// the decided motion are the same; only the reveals' own positions differ. Each seat's
/// ruling carries its own rationale, so a close that listed rulings or took the first
/// rationale in reveal order would fail here. Checked for an accepting and a deadlocking
/// panel.
#[test]
fn the_close_is_the_same_for_every_order_of_the_reveals() {
    let m = signed_motion(COMMIT_DEADLINE, REVEAL_DEADLINE);
    let d = panel_proto::motion_digest(&m);
    let all_yes: Vec<Sealed> = SEATS
        .iter()
        .map(|(_, k, _, _)| seat_seal(*k, Decision::Yes, d))
        .collect();
    for (panel, want) in [(seals(&m), "Deadlocked"), (all_yes, "Accepted")] {
        let mut closes = BTreeSet::new();
        let mut leaves = BTreeSet::new();
        let mut motions = BTreeSet::new();
        let mut whole_motions = BTreeSet::new();
        let mut positioned = BTreeSet::new();
        let orders = permutations(4);
        assert_eq!(orders.len(), 24);
        for one_batch in [false, true] {
            for order in &orders {
                let mut l = round_setup();
                applied(l.one(
                    2_100,
                    "motion-driver",
                    log_commitments(&m, &panel.iter().collect::<Vec<_>>()),
                ));
                if one_batch {
                    let items = order
                        .iter()
                        .map(|&i| ("anyone", panel[i].reveal()))
                        .collect();
                    let r = l.seal(3_000, 7, items);
                    assert!(
                        r.items
                            .iter()
                            .all(|o| matches!(o.reply, ItemReply::Applied(_)))
                    );
                } else {
                    for &i in order {
                        applied(l.one(3_000, "anyone", panel[i].reveal()));
                    }
                }
                // Same log index, time and seed for the close in every run.
                assert!(l.index <= 10);
                l.index = 10;
                let v = applied(l.one(3_500, "motion-driver", close()));
                assert_eq!(verdict_kind(&v), want, "{order:?}: {v}");
                let close_entry = l.state.record.iter().last().expect("close on the record");
                assert!(matches!(
                    close_entry.command,
                    Command::Internal(InternalCommand::CloseMotion { .. })
                ));
                closes.insert(serde_json::to_string(&v).expect("json"));
                leaves.insert(close_entry.leaf_bytes().expect("leaf"));
                motions.insert(motion_without_reveal_positions(&l.state).to_string());
                let whole = serde_json::to_string(&l.state.motions.get("m1").unwrap()).unwrap();
                if one_batch {
                    whole_motions.insert(whole);
                } else {
                    positioned.insert(whole);
                }
            }
        }
        assert_eq!(closes.len(), 1, "{want}: the close reply depends on order");
        assert_eq!(
            leaves.len(),
            1,
            "{want}: the close's record bytes depend on order"
        );
        assert_eq!(
            motions.len(),
            1,
            "{want}: the decided motion depends on order"
        );
        assert_eq!(
            whole_motions.len(),
            1,
            "{want}: within one batch nothing differs"
        );
        // The separate-batch runs did differ where the leader put each reveal (its log
        // index), so the equalities above compare genuinely different histories.
        assert_eq!(positioned.len(), 24, "{want}");
    }
}

// ---------------------------------------------------------------------------------------
// Power 4: grinding the draw seed through the entries before the motion.

/// Twelve admitted arbiters, six per stance, in four organisations.
fn draw_setup() -> Leader {
    let mut l = Leader::new(None);
    let mut items = vec![];
    for n in 0..12u8 {
        let (stance, side) = if n < 6 {
            (Stance::A, "a")
        } else {
            (Stance::B, "b")
        };
        let id = format!("{side}{}", n % 6 + 1);
        items.push((
            "t",
            registration(&id, n + 1, stance, &format!("o{}", n % 4 + 1)),
        ));
        items.push(("t", admission(&id)));
    }
    let r = l.seal(1_000, 1, items);
    assert!(
        r.items
            .iter()
            .all(|o| matches!(o.reply, ItemReply::Applied(_)))
    );
    l
}

/// K pending client writes the leader holds: registrations of arbiters not (yet) admitted,
/// so they change the record, never the pool.
fn pending(k: usize) -> Vec<Command> {
    (0..k)
        .map(|i| registration(&format!("n{i}"), 100 + i as u8, Stance::None, "o9"))
        .collect()
}

/// The leader after it seals one batch `items ++ [open m1]` (m1 unsteerable) stamped
/// `time_ms`, `seed` onto `before`.
fn open_after(before: &Leader, items: Vec<Command>, time_ms: u64, seed: u64) -> Leader {
    let mut l = before.clone();
    let mut batch: Vec<(&str, Command)> = items.into_iter().map(|c| ("client", c)).collect();
    batch.push(("t", open_motion("m1", 4, 1, Some(Policy::independent()))));
    let r = l.seal(time_ms, seed, batch);
    assert!(
        r.items
            .iter()
            .all(|o| matches!(o.reply, ItemReply::Applied(_))),
        "{r:?}"
    );
    l
}

/// The panel (sorted ids) of m1.
fn panel_of(l: &Leader) -> Vec<String> {
    let m = l.state.motions.get("m1").expect("opened");
    let mut ids: Vec<String> = m.seats.iter().map(|s| s.arbiter_id.clone()).collect();
    ids.sort();
    ids
}

fn panel_after(before: &Leader, items: Vec<Command>, time_ms: u64, seed: u64) -> Vec<String> {
    panel_of(&open_after(before, items, time_ms, seed))
}

/// Every ordered selection (subset, then order) of `0..k`: what a leader holding k writes
/// may put before the motion in one batch.
fn ordered_selections(k: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    let mut frontier = vec![vec![]];
    for _ in 0..k {
        let mut next = Vec::new();
        for p in &frontier {
            for i in 0..k {
                if !p.contains(&i) {
                    let mut q: Vec<usize> = p.clone();
                    q.push(i);
                    next.push(q);
                }
            }
        }
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

/// Power 4, measured. The unsteerable seed hashes the record before the opening entry, and
/// the leader writes that record: with K = 5 pending writes it can try 5! = 120 orders, or
/// 326 ordered selections (which to include, in which order), each a distinct record root
/// and so an independent draw. The test counts the distinct panels those histories reach
/// and how many of them seat a chosen pair (a1 and b1 together). If the seed stopped
/// depending on what the leader chose, every history would draw one panel.
#[test]
fn grinding_the_order_of_pending_writes_reaches_many_panels() {
    let before = draw_setup();
    let writes = pending(5);
    let target = |p: &[String]| p.iter().any(|x| x == "a1") && p.iter().any(|x| x == "b1");

    let mut by_order = BTreeSet::new();
    let mut seeds = BTreeSet::new();
    let mut hits = 0;
    for order in permutations(5) {
        let items = order.iter().map(|&i| writes[i].clone()).collect();
        let l = open_after(&before, items, 2_000, 7);
        let panel = panel_of(&l);
        // The seed the draw used is the documented one, of the record before the opening.
        let m = l.state.motions.get("m1").unwrap();
        let size = l.state.tree.len() - 1;
        assert_eq!(
            m.draw_seed,
            draw_seed::derive(size, &l.state.tree.root_at(size).unwrap(), "m1")
        );
        seeds.insert(m.draw_seed);
        hits += usize::from(target(&panel));
        by_order.insert(panel);
    }
    assert_eq!(seeds.len(), 120, "every order is a distinct draw seed");

    let selections = ordered_selections(5);
    assert_eq!(selections.len(), 326);
    let mut by_selection = BTreeSet::new();
    let mut selection_hits = 0;
    for sel in &selections {
        let items = sel.iter().map(|&i| writes[i].clone()).collect();
        let panel = panel_after(&before, items, 2_000, 7);
        selection_hits += usize::from(target(&panel));
        by_selection.insert(panel);
    }
    eprintln!(
        "grinding: 120 orders of 5 writes -> {} distinct panels ({hits} seat a1+b1); \
         326 ordered selections -> {} distinct panels ({selection_hits} seat a1+b1)",
        by_order.len(),
        by_selection.len()
    );
    assert!(by_order.len() >= 20, "{}", by_order.len());
    assert!(by_selection.len() >= by_order.len());
    assert!(hits > 0, "some order seats the chosen pair");
}

/// Power 4, open, and sharper: the stamped seed and time of the *opening* batch still steer
/// the draw whenever any record entry precedes the opening item in that batch, because
/// every record entry carries its batch's seed and time (they are hashed into its leaf).
/// `unsteerable_draw.rs` stamps 64 seeds on a batch whose first item opens the motion and
/// sees one panel (checked here too); put one pending write in front and the same 64
/// seeds, or 64 stamped times, re-roll the panel. A leader that holds a single write has a
/// 2^64-value re-roll, as free as the old batch-seed lever.
#[test]
fn open_the_opening_batch_seed_steers_through_an_entry_before_the_opening_item() {
    let before = draw_setup();
    let write = pending(1).remove(0);
    let target = |p: &[String]| p.iter().any(|x| x == "a1") && p.iter().any(|x| x == "b1");

    // The motion first in its batch: the batch seed is no input (the documented claim).
    let mut first = BTreeSet::new();
    for seed in 0..64u64 {
        let mut l = before.clone();
        l.seal(
            2_000,
            seed,
            vec![
                ("t", open_motion("m1", 4, 1, Some(Policy::independent()))),
                ("client", write.clone()),
            ],
        );
        let m = l.state.motions.get("m1").unwrap();
        first.insert(
            m.seats
                .iter()
                .map(|s| s.arbiter_id.clone())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(first.len(), 1, "{first:?}");

    // One write in front of it.
    let mut by_seed = BTreeSet::new();
    let mut first_hit = None;
    for seed in 0..64u64 {
        let panel = panel_after(&before, vec![write.clone()], 2_000, seed);
        if first_hit.is_none() && target(&panel) {
            first_hit = Some(seed);
        }
        by_seed.insert(panel);
    }
    let mut by_time = BTreeSet::new();
    for t in 0..64u64 {
        by_time.insert(panel_after(&before, vec![write.clone()], 2_000 + t, 7));
    }
    // How many re-rolls a leader needs for the chosen pair.
    let tries = 1_000u64;
    let mut space = BTreeSet::new();
    let mut hits = 0;
    for seed in 0..tries {
        let panel = panel_after(&before, vec![write.clone()], 2_000, seed);
        hits += usize::from(target(&panel));
        space.insert(panel);
    }
    eprintln!(
        "one write before the opening item: 64 seeds -> {} panels, 64 times -> {} panels; \
         {tries} seeds -> {} panels; a1+b1 seated for {hits} of {tries} seeds (first at seed \
         {first_hit:?})",
        by_seed.len(),
        by_time.len(),
        space.len()
    );
    assert!(by_seed.len() > 10, "{}", by_seed.len());
    assert!(by_time.len() > 10, "{}", by_time.len());
    assert!(hits > 0 && first_hit.is_some());
}

// ---------------------------------------------------------------------------------------
// Power 5: exam items.

/// 2026-01-01, in ms.
const T0: u64 = 1_767_225_600_000;

/// A leader under the current rule set with arbiters x (key 7) and y (key 8) registered,
/// and the shipped pool sealed as sitting 1 (an unchartered group may seal it).
fn exam_setup() -> Leader {
    let mut l = Leader::new(Some(rules::CURRENT));
    applied(l.one(T0, "t", registration("x", 7, Stance::A, "o1")));
    applied(l.one(T0, "t", registration("y", 8, Stance::B, "o2")));
    let pool = exam_sitting::embedded_pool().expect("the shipped pool");
    let v = applied(l.one(
        T0,
        "exam-driver",
        InternalCommand::SealExamPool(Box::new(pool.sealed())).into(),
    ));
    assert_eq!(v["sitting"], json!(1));
    l
}

fn open_sitting(l: &Leader) -> Sitting {
    exam_sitting::open_sitting(&l.state)
        .expect("a sitting is open")
        .clone()
}

/// A test judge's calibrated quantiles for a quantity of true value `value`.
fn quantiles(value: f64, n: usize, levels: &[f64]) -> Vec<pb::Quantile> {
    let shift = if n.is_multiple_of(2) { 0.01 } else { -0.01 };
    let q = if value > 0.0 {
        [value / 2.0, value * (1.0 + shift), value * 2.0]
    } else {
        let w = value.abs().max(1.0);
        [value - w, value + shift * w, value + w]
    };
    levels
        .iter()
        .zip(q)
        .map(|(&level, value)| pb::Quantile { level, value })
        .collect()
}

/// Arbiter `id`'s (key `k`) signed exam motion and revealed answer for every item it is
/// asked in `open`, answered from the golds; `p_yes` gives its probability on a binary
/// item from the item and its gold.
fn exam_answers(
    open: &Sitting,
    id: &str,
    k: u8,
    p_yes: &dyn Fn(&str, bool) -> f64,
) -> Vec<(String, String, String)> {
    let exam = &exam_sitting::embedded_pool().expect("pool").exam;
    let asked = open.asked(id, &key(k).verifying_key()).expect("draw");
    asked
        .iter()
        .enumerate()
        .map(|(n, item_id)| {
            let public = open.public.item(item_id).expect("item");
            let m = panel_proto::sign_motion(
                &motion_key(),
                open.motion(
                    id,
                    &key(k).verifying_key(),
                    public,
                    exam_sitting::embedded_pool().expect("pool").salt(),
                    (T0 as i64 + 10, T0 as i64 + 20),
                    None,
                )
                .expect("the pool id decodes"),
            );
            let mut r = pb::Ruling {
                motion_id: m.motion_id.clone(),
                state_hash: open.state_hash().expect("the pool id decodes"),
                motion_digest: panel_proto::motion_digest(&m).to_vec(),
                debate_id: panel_machine::features::admission::EXAM_DEBATE.into(),
                kind: pb::MotionKind::Exam as i32,
                decision: pb::Decision::None as i32,
                rationale: "exam answer".into(),
                issued_at_unix_ms: 1,
                ..Default::default()
            };
            match &exam.item(item_id).expect("gold").gold {
                Gold::Binary(g) => {
                    let p = p_yes(item_id, *g);
                    r.probability = p;
                    r.decision = if p >= 0.5 {
                        pb::Decision::Accept
                    } else {
                        pb::Decision::Reject
                    } as i32;
                }
                Gold::Relevance(x) => {
                    r.relevance = Some(u32::from(panel_machine::debates::relevance_step(*x)))
                }
                Gold::Tier(t) => r.tier = Some(t.index() as u32 + 1),
                Gold::Quantity { value, .. } => {
                    r.quantiles = quantiles(*value, n, &open.public.quantiles)
                }
            }
            let sr = panel_proto::sign_ruling(&key(k), r).expect("sign");
            let salt = [n as u8; 32];
            let c = panel_proto::commit_reveal::commit(&key(k), &sr, &salt, 1).expect("commit");
            let reveal = hex::encode(
                pb::Reveal {
                    signed_ruling: Some(sr),
                    salt: salt.to_vec(),
                    commitment: Some(c),
                }
                .encode_to_vec(),
            );
            (
                item_id.clone(),
                panel_machine::rules::signed_motion::encode(&m).to_hex(),
                reveal,
            )
        })
        .collect()
}

fn submit_exam(id: &str, sitting: u32, answers: &[&(String, String, String)]) -> Command {
    InternalCommand::SubmitExam {
        arbiter_id: id.into(),
        reveals: answers.iter().map(|a| a.2.clone().into()).collect(),
        motions: answers.iter().map(|a| a.1.as_str().into()).collect(),
        sitting: Some(sitting),
    }
    .into()
}

/// Power 5, refused: each arbiter's items are drawn from the pool, the sitting number and
/// its registered key, nothing the leader stamps. The same `SubmitExam` sealed at other log
/// indices, times and seeds, after other entries in its batch, holds the same draw under
/// the documented seed; a signed exam motion for an item outside the draw is refused. The
/// one re-roll left, holding an arbiter back to a later sitting, costs a whole sitting, and
/// a pool sealed again after its reveal is marked `reused_from` on the record.
#[test]
fn the_exam_draw_ignores_every_stamp_the_leader_controls() {
    let base = exam_setup();
    let open = open_sitting(&base);
    let kx = key(7).verifying_key();
    let want = open.asked("x", &kx).expect("draw");
    assert_eq!(
        open.seed(&kx),
        exam_sitting::draw_seed(&open.pool_id, 1, &kx)
    );
    assert_ne!(want, open.asked("y", &key(8).verifying_key()).unwrap());

    let mut draws = BTreeSet::new();
    for (skip, time_ms, seed, filler) in [
        (0u64, T0, 0u64, 0usize),
        (5, T0 + 1, 1, 1),
        (50, T0 + 86_400_000, u64::MAX, 3),
        (7, T0 + 17, 0xdead_beef, 2),
    ] {
        let mut l = base.clone();
        l.index += skip;
        let mut items: Vec<(&str, Command)> = (0..filler)
            .map(|i| {
                (
                    "client",
                    registration(&format!("f{i}"), 30 + i as u8, Stance::None, "o9"),
                )
            })
            .collect();
        items.push(("exam-driver", submit_exam("x", 1, &[])));
        let r = l.seal(time_ms, seed, items);
        assert!(
            r.items
                .iter()
                .all(|o| matches!(o.reply, ItemReply::Applied(_))),
            "{r:?}"
        );
        let held = &exam_sitting::open_sitting(&l.state).unwrap().held["x"];
        assert_eq!(held.seed, open.seed(&kx));
        draws.insert(held.asked.clone());
    }
    assert_eq!(draws.len(), 1, "a stamp moved the draw");
    assert_eq!(draws.into_iter().next().unwrap(), want);

    // An item the draw did not give x, put to it anyway: refused, nothing held.
    let other = open
        .public
        .items
        .iter()
        .find(|i| !want.contains(&i.id))
        .expect("the pool is larger than one draw");
    let m = panel_proto::sign_motion(
        &motion_key(),
        open.motion(
            "x",
            &kx,
            other,
            exam_sitting::embedded_pool().expect("pool").salt(),
            (T0 as i64 + 10, T0 as i64 + 20),
            None,
        )
        .expect("the pool id decodes"),
    );
    let mut l = base.clone();
    let why = refused(
        l.one(
            T0,
            "exam-driver",
            InternalCommand::SubmitExam {
                arbiter_id: "x".into(),
                reveals: vec![],
                motions: vec![panel_machine::rules::signed_motion::encode(&m)],
                sitting: Some(1),
            }
            .into(),
        ),
    );
    assert!(why.starts_with("exam_refused"), "{why}");
    assert!(
        exam_sitting::open_sitting(&l.state)
            .unwrap()
            .held
            .is_empty()
    );

    // Holding x back to sitting 2: a fresh draw, on a pool the record marks as reused.
    let pool = exam_sitting::embedded_pool().unwrap();
    applied(l.one(
        T0,
        "exam-driver",
        InternalCommand::RevealExamKey(Box::new(pool.reveal(1))).into(),
    ));
    let v = applied(l.one(
        T0,
        "exam-driver",
        InternalCommand::SealExamPool(Box::new(pool.sealed())).into(),
    ));
    assert_eq!(v["sitting"], json!(2));
    assert_eq!(v["reused_from"], json!(1));
    let second = open_sitting(&l);
    assert_ne!(second.asked("x", &kx).unwrap(), want);
}

/// The answers of `answers` whose item ids are not in `drop`.
fn keep_but<'a>(
    answers: &'a [(String, String, String)],
    drop: &BTreeSet<String>,
) -> Vec<&'a (String, String, String)> {
    answers.iter().filter(|a| !drop.contains(&a.0)).collect()
}

/// Submits `answers` for x in sitting 1 of a clone of `base`, reveals the key, and returns
/// whether x was admitted and the bars it failed.
fn sit_and_score(base: &Leader, answers: &[&(String, String, String)]) -> (bool, Vec<String>) {
    let mut l = base.clone();
    let held = applied(l.one(T0 + 1, "exam-driver", submit_exam("x", 1, answers)));
    assert_eq!(held["answered"], json!(answers.len()), "{held}");
    let pool = exam_sitting::embedded_pool().unwrap();
    applied(l.one(
        T0 + 2,
        "exam-driver",
        InternalCommand::RevealExamKey(Box::new(pool.reveal(1))).into(),
    ));
    let x = l.state.arbiters.get("x").expect("x");
    let rec = x.exam_record().expect("examined").expect("decodes");
    let failed = rec.decision.failed.iter().map(|f| f.bar.clone()).collect();
    (x.admitted, failed)
}

/// Power 5, open: the draw is fixed, but `SubmitExam` is the exam driver's, and the driver
/// sees every answer before it submits (and, holding the pool file to reveal it, every
/// gold). Apply holds whichever of the drawn answers arrive; unanswered items count as
/// missing. So the leader picks which drawn items are scored:
/// - an honest judge that answered everything is failed by dropping three quantity answers
///   (below the 10-seed bar);
/// - a judge confidently wrong on eight ordinary binary items is refused on all its
///   answers and admitted once the leader drops exactly those eight.
///
/// The record shows how many drawn items were answered, never who left the rest out.
#[test]
fn open_the_exam_driver_chooses_which_drawn_answers_are_scored() {
    let base = exam_setup();
    let open = open_sitting(&base);
    let exam = &exam_sitting::embedded_pool().unwrap().exam;
    let honest = |_: &str, gold: bool| if gold { 0.9 } else { 0.1 };

    // Suppression: the honest judge, all answers, then three quantity answers dropped.
    let answers = exam_answers(&open, "x", 7, &honest);
    let (admitted, failed) = sit_and_score(&base, &answers.iter().collect::<Vec<_>>());
    assert!(
        admitted,
        "the honest judge passes on its whole draw: {failed:?}"
    );
    let quantities: BTreeSet<String> = answers
        .iter()
        .filter(|a| matches!(exam.item(&a.0).unwrap().gold, Gold::Quantity { .. }))
        .map(|a| a.0.clone())
        .take(3)
        .collect();
    assert_eq!(quantities.len(), 3);
    let (admitted, failed) = sit_and_score(&base, &keep_but(&answers, &quantities));
    assert!(!admitted, "dropping three answers fails an honest judge");
    assert!(failed.iter().any(|b| b == "quantile_seeds"), "{failed:?}");

    // Promotion: wrong, confidently, on eight binary items outside the probe groups.
    let asked = open.asked("x", &key(7).verifying_key()).unwrap();
    let wrong: BTreeSet<String> = asked
        .iter()
        .filter(|id| {
            let item = exam.item(id).unwrap();
            matches!(item.gold, Gold::Binary(_)) && item.probe.is_none()
        })
        .take(8)
        .cloned()
        .collect();
    assert_eq!(wrong.len(), 8);
    let weak = |id: &str, gold: bool| match (wrong.contains(id), gold) {
        (true, true) => 0.01,
        (true, false) => 0.99,
        (false, g) => honest(id, g),
    };
    let answers = exam_answers(&open, "x", 7, &weak);
    let (admitted, failed) = sit_and_score(&base, &answers.iter().collect::<Vec<_>>());
    assert!(!admitted, "the weak judge fails on its whole draw");
    let (admitted, after) = sit_and_score(&base, &keep_but(&answers, &wrong));
    assert!(
        admitted,
        "dropping its eight errors admits it (failed before: {failed:?}, after: {after:?})"
    );
    eprintln!("exam: weak judge failed {failed:?} on its draw; admitted without 8 answers");

    // What the record shows: asked versus answered, nothing about who dropped them.
    let mut l = base.clone();
    let held = applied(l.one(
        T0 + 1,
        "exam-driver",
        submit_exam("x", 1, &keep_but(&answers, &wrong)),
    ));
    assert_eq!(held["asked"], json!(asked.len()));
    assert_eq!(held["answered"], json!(asked.len() - 8));
}
