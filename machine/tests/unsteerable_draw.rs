//! The draw cannot be steered (docs/SECURITY.md "The draw cannot be steered"): under a
//! policy with `unsteerable_draw`, a motion's panel is drawn from a seed fixed by the record
//! before the motion opened, so the seed a leader stamps into the batch that opens it
//! chooses nothing; motions under older policies still draw from the batch seed, so
//! records written before replay unchanged.

use panel_machine::apply::ApplyCtx;

use panel_machine::State;
use panel_machine::apply_batch;
use panel_machine::command::ArbiterRegistration;
use panel_machine::features::draw_seed;
use panel_machine::read::record::{export, verify};
use panel_machine::{Batch, ClientCommand, Command, Item, ItemReply, MotionSpec, TestCommand};
use panel_machine::{MotionKind, Policy, Seat, Stance};

const POOL: [(&str, Stance, &str); 8] = [
    ("a1", Stance::A, "o1"),
    ("a2", Stance::A, "o2"),
    ("a3", Stance::A, "o3"),
    ("a4", Stance::A, "o1"),
    ("b1", Stance::B, "o2"),
    ("b2", Stance::B, "o3"),
    ("b3", Stance::B, "o1"),
    ("b4", Stance::B, "o2"),
];

fn batch(time_ms: u64, seed: u64, commands: Vec<Command>) -> Batch {
    Batch {
        time_ms,
        seed,
        items: commands
            .into_iter()
            .enumerate()
            .map(|(i, command)| Item {
                client_id: "t".into(),
                request_id: time_ms * 100 + i as u64,
                command,
                writer: None,
            })
            .collect(),
        limits: None,
        checkpoints: None,
        rules: None,
    }
}

fn registration(n: usize, id: &str, stance: Stance, org: &str) -> Command {
    let key = ed25519_dalek::SigningKey::from_bytes(&[n as u8 + 1; 32]);
    ClientCommand::RegisterArbiter(ArbiterRegistration {
        arbiter_id: id.into(),
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        organisation: org.into(),
        model_family: format!("fam-{id}"),
        stance,
        endpoint: String::new(),
        attestation: None,
        lineage: None,
    })
    .into()
}

fn admit(id: &str) -> Command {
    TestCommand::SetAdmission {
        arbiter_id: id.into(),
        admitted: true,
        score_milli: 900,
    }
    .into()
}

/// The pool, registered and admitted in log entry 1.
fn prefix() -> State {
    let mut s = State::default();
    let mut commands = vec![];
    for (n, (id, stance, org)) in POOL.iter().enumerate() {
        commands.push(registration(n, id, *stance, org));
        commands.push(admit(id));
    }
    let r = apply_batch(
        &mut s,
        1,
        &batch(1_000, 1, commands),
        &panel_proto::VerifiedMemo::default(),
    );
    assert!(
        r.items
            .iter()
            .all(|o| matches!(o.reply, ItemReply::Applied(_)))
    );
    s
}

fn open(id: &str, policy: Option<Policy>) -> Command {
    TestCommand::OpenMotion(Box::new(MotionSpec {
        motion_id: id.into(),
        debate_id: "d1".into(),
        kind: MotionKind::Merge,
        state_hash: "ab".repeat(32).into(),
        seats: 4,
        min_per_stance: 1,
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

/// Opens motion `m1` at log index 2 in a batch the leader stamped with `seed`; returns the
/// seed the draw used and the panel.
fn open_with_seed(state: &mut State, seed: u64, policy: Option<Policy>) -> (u64, Vec<Seat>) {
    let r = apply_batch(
        state,
        2,
        &batch(2_000, seed, vec![open("m1", policy)]),
        &panel_proto::VerifiedMemo::default(),
    );
    let ItemReply::Applied(_) = &r.items[0].reply else {
        panic!("open refused: {:?}", r.items[0].reply)
    };
    let m = state.motions.get("m1").expect("opened");
    (m.draw_seed, m.seats.clone())
}

/// The attack: a leader re-stamps the batch that opens the motion with seed after seed,
/// hoping for a panel it likes. Under the unsteerable policy every try draws the same
/// panel, from the seed the record before the motion fixes.
#[test]
fn a_chosen_batch_seed_does_not_choose_the_panel() {
    let before = prefix();
    let fixed = draw_seed::derive(before.tree.len(), &before.tree.root(), "m1");
    let mut panels = std::collections::BTreeSet::new();
    for seed in 0..64u64 {
        let mut s = before.clone();
        let (used, seats) = open_with_seed(&mut s, seed, Some(Policy::independent()));
        assert_eq!(used, fixed, "the batch seed {seed} changed the draw seed");
        panels.insert(format!("{seats:?}"));
    }
    assert_eq!(panels.len(), 1, "{panels:?}");
}

/// The same leader under an older policy (a record written before the rule) still draws
/// from the batch seed, exactly as it did, and so does get different panels.
#[test]
fn motions_under_older_policies_draw_from_the_batch_seed_as_before() {
    let before = prefix();
    let mut panels = std::collections::BTreeSet::new();
    for seed in 0..64u64 {
        let mut s = before.clone();
        let (used, seats) = open_with_seed(&mut s, seed, None);
        let ctx = ApplyCtx {
            log_index: 2,
            item_index: 0,
            time_ms: 2_000,
            seed,
            memo: &panel_proto::VerifiedMemo::default(),
        };
        assert_eq!(used, ctx.derive_seed("m1"));
        panels.insert(format!("{seats:?}"));
    }
    assert!(
        panels.len() > 1,
        "the legacy draw must still follow the seed"
    );
}

/// The seed depends on the record before the opening entry and on the motion id: another
/// history, or another motion in the same batch, draws from another seed.
#[test]
fn the_record_before_the_motion_fixes_the_seed() {
    let mut longer = prefix();
    let r = apply_batch(
        &mut longer,
        2,
        &batch(1_500, 9, vec![registration(20, "n1", Stance::None, "o4")]),
        &panel_proto::VerifiedMemo::default(),
    );
    assert!(matches!(r.items[0].reply, ItemReply::Applied(_)));
    let short = prefix();
    assert_ne!(
        draw_seed::derive(short.tree.len(), &short.tree.root(), "m1"),
        draw_seed::derive(longer.tree.len(), &longer.tree.root(), "m1")
    );

    // Two motions in one batch: the second sees the first on the record.
    let mut s = prefix();
    let size = s.tree.len();
    let p = Some(Policy::independent());
    apply_batch(
        &mut s,
        2,
        &batch(2_000, 5, vec![open("m1", p.clone()), open("m2", p)]),
        &panel_proto::VerifiedMemo::default(),
    );
    let m1 = s.motions.get("m1").expect("m1");
    let m2 = s.motions.get("m2").expect("m2");
    assert_eq!(
        m1.draw_seed,
        draw_seed::derive(size, &s.tree.root_at(size).expect("root"), "m1")
    );
    assert_eq!(
        m2.draw_seed,
        draw_seed::derive(size + 1, &s.tree.root_at(size + 1).expect("root"), "m2")
    );
}

/// `panel verify` re-derives the seed from the record it replays.
#[test]
fn a_record_with_unsteerable_draws_verifies() {
    let mut s = prefix();
    let p = Some(Policy::independent());
    apply_batch(
        &mut s,
        2,
        &batch(2_000, 5, vec![open("m1", p.clone())]),
        &panel_proto::VerifiedMemo::default(),
    );
    apply_batch(
        &mut s,
        3,
        &batch(3_000, 6, vec![open("m2", p), open("m3", None)]),
        &panel_proto::VerifiedMemo::default(),
    );
    let origin = panel_machine::features::checkpoints::origin(&s).to_owned();
    let log_key =
        panel_tlog::NoteSigner::new(&origin, ed25519_dalek::SigningKey::from_bytes(&[50; 32]))
            .expect("log key");
    let bundle = export(&s, Some(&log_key));
    verify(&bundle).expect("the record verifies");
}
