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
    for (n, (id, stance, org, family)) in arbiters.into_iter().enumerate() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[n as u8 + 1; 32]);
        let reg: ArbiterRegistration = serde_json::from_value(json!({
            "arbiter_id": id,
            "public_key": hex::encode(key.verifying_key().to_bytes()),
            "organisation": org, "model_family": family, "stance": stance,
        }))
        .expect("registration");
        applied(write(
            &mut s,
            2 * n as u64 + 1,
            ClientCommand::RegisterArbiter(reg).into(),
        ));
        applied(write(
            &mut s,
            2 * n as u64 + 2,
            TestCommand::SetAdmission {
                arbiter_id: id.into(),
                admitted: true,
                score_milli: 900,
            }
            .into(),
        ));
    }
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
