//! Procedure runs through apply (docs/PROCEDURES.md): a start opens its first questions as
//! procedure motions drawn from the admitted pool, a refused start or input changes
//! nothing, the advocates' model families never sit, and bad input names its rule.

use panel_machine::apply::apply_batch;
use panel_machine::command::{
    ArbiterRegistration, Batch, ClientCommand, Command, Item, ItemReply, TestCommand,
};
use panel_machine::model::State;
use panel_machine::runs::{RunInputSubmission, RunRequest};
use panel_procedures::{RunInput, RunStart, crux, dossier, falsify};
use serde_json::{Value, json};

fn write(state: &mut State, n: u64, command: Command) -> ItemReply {
    let batch = Batch {
        time_ms: 1_000 + n,
        seed: n,
        items: vec![Item {
            client_id: "t".into(),
            request_id: n,
            command,
            writer: None,
        }],
        limits: None,
        checkpoints: None,
    };
    apply_batch(state, n, &batch).items.remove(0).reply
}

fn applied(r: ItemReply) -> Value {
    match r {
        ItemReply::Applied(v) => v,
        other => panic!("refused: {other:?}"),
    }
}

/// Registers and admits each (id, stance, organisation, family).
fn admit(s: &mut State, arbiters: &[(&str, &str, &str, &str)]) {
    for (n, (id, stance, org, family)) in arbiters.iter().enumerate() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[n as u8 + 1; 32]);
        let reg: ArbiterRegistration = serde_json::from_value(json!({
            "arbiter_id": id,
            "public_key": hex::encode(key.verifying_key().to_bytes()),
            "organisation": org, "model_family": family, "stance": stance,
        }))
        .expect("registration");
        applied(write(
            s,
            2 * n as u64 + 1,
            ClientCommand::RegisterArbiter(reg).into(),
        ));
        applied(write(
            s,
            2 * n as u64 + 2,
            TestCommand::SetAdmission {
                arbiter_id: (*id).into(),
                admitted: true,
                score_milli: 900,
            }
            .into(),
        ));
    }
}

/// Four admitted arbiters: two stances, two organisations, families x and y (and one of
/// family `claude`, an advocate's, when `with_claude`).
fn pool(with_claude: bool) -> State {
    let mut s = State::default();
    let mut arbiters = vec![
        ("a1", "A", "north", "family-x"),
        ("a2", "A", "south", "family-y"),
        ("b1", "B", "north", "family-y"),
        ("b2", "B", "south", "family-x"),
    ];
    if with_claude {
        arbiters.push(("c1", "A", "north", "claude"));
    }
    admit(&mut s, &arbiters);
    s
}

fn start(state: &mut State, n: u64, start: RunStart, seats: usize) -> ItemReply {
    write(
        state,
        n,
        ClientCommand::StartRun(Box::new(RunRequest {
            start,
            seats,
            min_per_stance: 1,
            policy: None,
            simulation: true,
            convener: "c".into(),
            retry_of: None,
        }))
        .into(),
    )
}

fn crux_start() -> crux::CruxStart {
    crux::decode_start(crux::eval::BASELINE.as_bytes()).expect("baseline")
}

#[test]
fn every_demo_start_opens_its_first_questions() {
    let demos = [
        (RunStart::Crux(crux_start()), 4),
        (RunStart::Falsify(falsify::demo_start()), 2),
        (RunStart::Dossier(dossier::demo_start()), 4),
    ];
    for (i, (demo, seats)) in demos.into_iter().enumerate() {
        let mut s = pool(false);
        let v = applied(start(&mut s, 100 + i as u64, demo, seats));
        let run_id = v["run_id"].as_str().expect("run id").to_owned();
        let rec = s.runs.get(&run_id).expect("run");
        let awaiting = rec.run.awaiting();
        let opened = v["opened"].as_array().expect("opened").len();
        assert!(
            opened > 0 || !awaiting.is_empty(),
            "{run_id}: nothing opened and nothing awaited: {v}"
        );
        for m in v["opened"].as_array().expect("opened") {
            let motion = s.motions.get(m.as_str().expect("id")).expect("motion");
            assert_eq!(motion.spec.debate_id, run_id);
            assert!(motion.spec.procedure.is_some());
            assert_eq!(motion.seats.len(), seats);
        }
    }
}

/// A start the deterministic layer refuses (here: the optimist wrote from other pack
/// bytes) is refused in apply with the rule named; no run exists and nothing is on the
/// record.
#[test]
fn a_refused_start_names_the_rule_and_changes_nothing() {
    let mut s = pool(false);
    let before = s.record.len();
    let mut bad = crux_start();
    bad.positions[0].pack_hash = "00".repeat(32);
    let r = start(&mut s, 100, RunStart::Crux(bad), 4);
    match r {
        ItemReply::Refused { code, message } => {
            assert_eq!(code, "procedure_refused");
            assert!(message.contains("crux.pack_hash"), "{message}");
        }
        other => panic!("accepted: {other:?}"),
    }
    assert!(s.runs.is_empty());
    assert_eq!(s.record.len(), before);
}

/// The advocates' model families never sit on their run's panels, while arbiters of
/// other families do.
#[test]
fn advocates_families_are_kept_off_the_panel() {
    let mut s = pool(true);
    let v = applied(start(&mut s, 100, RunStart::Crux(crux_start()), 4));
    let opened = v["opened"].as_array().expect("opened");
    assert!(!opened.is_empty(), "{v}");
    for m in opened {
        let motion = s.motions.get(m.as_str().expect("id")).expect("motion");
        assert!(
            motion.seats.iter().all(|seat| seat.arbiter_id != "c1"),
            "an arbiter of the optimist's family sat: {:?}",
            motion.seats
        );
    }
}

/// An input the run does not wait for is refused and the run is unchanged; the refusal
/// says what the run waits for.
#[test]
fn an_out_of_order_input_is_refused_and_the_run_is_unchanged() {
    let mut s = pool(false);
    let v = applied(start(
        &mut s,
        100,
        RunStart::Falsify(falsify::demo_start()),
        2,
    ));
    let run_id = v["run_id"].as_str().expect("run").to_owned();
    let before = s.runs.get(&run_id).expect("run").clone();
    // The critic's attack before its commitment: the seed's "commitment before argument".
    let attack = falsify::demo_inputs()
        .into_iter()
        .find(|i| matches!(i, falsify::FalsifyInput::Attack { .. }))
        .expect("an attack in the demo");
    let r = write(
        &mut s,
        101,
        ClientCommand::SubmitRunInput(Box::new(RunInputSubmission {
            run_id: run_id.clone(),
            input: RunInput::Falsify(attack),
        }))
        .into(),
    );
    assert!(
        matches!(&r, ItemReply::Refused { code, .. } if code == "out_of_order" || code == "procedure_refused"),
        "{r:?}"
    );
    assert_eq!(s.runs.get(&run_id).expect("run"), &before);
    // An input for a run that does not exist names the run.
    let r = write(
        &mut s,
        102,
        ClientCommand::SubmitRunInput(Box::new(RunInputSubmission {
            run_id: "run_99".into(),
            input: RunInput::Falsify(falsify::demo_inputs().remove(0)),
        }))
        .into(),
    );
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "unknown_run" && message.contains("run_99")),
        "{r:?}"
    );
}

/// One stance alone cannot carry a procedure question: with only stance-A arbiters
/// admitted no panel can be drawn, so the question stays open and no bucket is set.
#[test]
fn one_stance_alone_cannot_seat_a_procedure_panel() {
    let mut s = State::default();
    admit(
        &mut s,
        &[
            ("a1", "A", "north", "f"),
            ("a2", "A", "south", "f"),
            ("a3", "A", "east", "f"),
        ],
    );
    // Crux asks its first question at once; a mixed pool would seat it (see above).
    let v = applied(start(&mut s, 100, RunStart::Crux(crux_start()), 2));
    let run_id = v["run_id"].as_str().expect("run").to_owned();
    assert!(!s.runs.get(&run_id).expect("run").run.pending().is_empty());
    assert!(s.motions.is_empty(), "a one-stance panel was drawn: {v}");
    let rec = s.runs.get(&run_id).expect("run");
    assert!(rec.settled.is_empty() && rec.open.is_empty());
}

/// Advocates and arbiters come from different model families: a crux run whose advocates'
/// families are the only ones admitted is refused at start with the families named.
#[test]
fn a_run_no_other_family_could_judge_is_refused() {
    let mut s = State::default();
    admit(
        &mut s,
        &[
            ("a1", "A", "north", "claude"),
            ("a2", "A", "south", "gpt"),
            ("b1", "B", "north", "claude"),
            ("b2", "B", "south", "gpt"),
        ],
    );
    let r = start(&mut s, 100, RunStart::Crux(crux_start()), 4);
    assert!(
        matches!(&r, ItemReply::Refused { code, message }
            if code == "procedure_refused" && message.contains("run.advocate_families") && message.contains("claude")),
        "{r:?}"
    );
    assert!(s.runs.is_empty());
}
