//! Procedure runs through apply (docs/PROCEDURES.md): a start opens its first questions as
//! procedure motions drawn from the admitted pool, a refused start or input changes
//! nothing, the advocates' model families never sit, and bad input names its rule.

use panel_machine::RunRequest;
use panel_machine::State;
use panel_machine::apply_batch;
use panel_machine::command::ArbiterRegistration;
use panel_machine::runs::RunInputSubmission;
use panel_machine::{Batch, ClientCommand, Command, Item, ItemReply, TestCommand};
use panel_procedures::{Run, RunInput, RunStart, StartContext, crux, dossier, falsify};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn write(state: &mut State, n: u64, command: Command) -> ItemReply<panel_machine::Reply> {
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
        rules: None,
    };
    apply_batch(state, n, &batch, &panel_proto::VerifiedMemo::default())
        .items
        .remove(0)
        .reply
}

fn applied(r: ItemReply<panel_machine::Reply>) -> Value {
    match r {
        ItemReply::Applied(v) => v.to_json(),
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
/// family `fixture-family-a`, an advocate's, when `with_advocate_family`).
fn pool(with_advocate_family: bool) -> State {
    let mut s = State::default();
    let mut arbiters = vec![
        ("a1", "A", "north", "family-x"),
        ("a2", "A", "south", "family-y"),
        ("b1", "B", "north", "family-y"),
        ("b2", "B", "south", "family-x"),
    ];
    if with_advocate_family {
        arbiters.push(("c1", "A", "north", "fixture-family-a"));
    }
    admit(&mut s, &arbiters);
    s
}

/// Each role's key in these tests: derived from the role's name.
fn role_key(role: &str) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&Sha256::digest(role.as_bytes()).into())
}

/// Every role the start will await, bound to [`role_key`].
fn role_keys(
    start: &RunStart,
) -> std::collections::BTreeMap<String, panel_machine::rules::hex_bytes::PublicKeyBytes> {
    let ctx = StartContext {
        run_id: "probe".into(),
        seed: 0,
        simulation: true,
    };
    Run::start(start.clone(), &ctx)
        .map(|r| r.roles())
        .unwrap_or_default()
        .into_iter()
        .map(|role| {
            let key = hex::encode(role_key(&role).verifying_key().to_bytes());
            (role, key.into())
        })
        .collect()
}

fn start_with(
    state: &mut State,
    n: u64,
    start: RunStart,
    seats: usize,
    keys: std::collections::BTreeMap<String, panel_machine::rules::hex_bytes::PublicKeyBytes>,
) -> ItemReply<panel_machine::Reply> {
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
            role_keys: keys,
            signature: None,
        }))
        .into(),
    )
}

fn start(
    state: &mut State,
    n: u64,
    start: RunStart,
    seats: usize,
) -> ItemReply<panel_machine::Reply> {
    let keys = role_keys(&start);
    start_with(state, n, start, seats, keys)
}

/// An input signed by `signer` for the client id and request id `write` sends it under.
fn input_by(signer: &ed25519_dalek::SigningKey, run_id: &str, input: RunInput, n: u64) -> Command {
    let signature =
        panel_machine::features::run_roles::sign(signer, run_id, &input, "t", n).expect("sign");
    ClientCommand::SubmitRunInput(Box::new(RunInputSubmission {
        run_id: run_id.into(),
        input,
        signature: Some(signature),
    }))
    .into()
}

/// An input signed by its own role's key.
fn input(run_id: &str, input: RunInput, n: u64) -> Command {
    let role = input.role().unwrap_or_default();
    input_by(&role_key(&role), run_id, input, n)
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

/// A pool with the falsification demo started: the state, its run id and the run as it
/// started.
fn falsify_started() -> (State, String, panel_machine::RunRecord) {
    let mut s = pool(false);
    let v = applied(start(
        &mut s,
        100,
        RunStart::Falsify(falsify::demo_start()),
        2,
    ));
    let run_id = v["run_id"].as_str().expect("run").to_owned();
    let before = s.runs.get(&run_id).expect("run").clone();
    (s, run_id, before)
}

/// An input the run does not wait for is refused and the run is unchanged; the refusal
/// says what the run waits for.
#[test]
fn an_out_of_order_input_is_refused_and_the_run_is_unchanged() {
    let (mut s, run_id, before) = falsify_started();
    // The critic's attack before its commitment: the seed's "commitment before argument".
    let attack = falsify::demo_inputs()
        .into_iter()
        .find(|i| matches!(i, falsify::FalsifyInput::Attack { .. }))
        .expect("an attack in the demo");
    let r = write(&mut s, 101, input(&run_id, RunInput::Falsify(attack), 101));
    assert!(
        matches!(&r, ItemReply::Refused { code, .. } if code == "out_of_order" || code == "procedure_refused"),
        "{r:?}"
    );
    assert_eq!(s.runs.get(&run_id).expect("run"), &before);
    // An input for a run that does not exist names the run.
    let r = write(
        &mut s,
        102,
        input(
            "run_99",
            RunInput::Falsify(falsify::demo_inputs().remove(0)),
            102,
        ),
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
            ("a1", "A", "north", "fixture-family-a"),
            ("a2", "A", "south", "fixture-family-b"),
            ("b1", "B", "north", "fixture-family-a"),
            ("b2", "B", "south", "fixture-family-b"),
        ],
    );
    let r = start(&mut s, 100, RunStart::Crux(crux_start()), 4);
    assert!(
        matches!(&r, ItemReply::Refused { code, message }
            if code == "procedure_refused" && message.contains("run.advocate_families") && message.contains("fixture-family-a")),
        "{r:?}"
    );
    assert!(s.runs.is_empty());
}

/// Who may speak for a role: only the key the start bound to it. An unsigned input, one
/// signed by another role's key or by a stranger, and a captured signed input replayed
/// under new request ids are all refused, naming the rule, and leave the run unchanged;
/// the role's own signed input is taken.
#[test]
fn only_a_roles_own_key_may_submit_its_input() {
    let (mut s, run_id, before) = falsify_started();
    let form = RunInput::Falsify(falsify::demo_inputs().remove(0));
    assert_eq!(form.role().as_deref(), Some("defender"));
    let refused = |r: &ItemReply<panel_machine::Reply>, want: &str| match r {
        ItemReply::Refused { code, message } => {
            assert_eq!(code, "run_role", "{message}");
            assert!(message.contains(want), "{want:?} not in {message}");
        }
        other => panic!("accepted: {other:?}"),
    };
    // Unsigned.
    let unsigned = ClientCommand::SubmitRunInput(Box::new(RunInputSubmission {
        run_id: run_id.clone(),
        input: form.clone(),
        signature: None,
    }));
    refused(&write(&mut s, 101, unsigned.into()), "must be signed");
    // Signed by the critic, or by a key nobody bound.
    let by_critic = input_by(&role_key("critic"), &run_id, form.clone(), 102);
    refused(&write(&mut s, 102, by_critic), "only the role's own key");
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[99; 32]);
    let forged = input_by(&stranger, &run_id, form.clone(), 103);
    refused(&write(&mut s, 103, forged), "only the role's own key");
    // The defender's own signature over other ids: a replay under request id 105.
    let captured = input(&run_id, form.clone(), 104);
    refused(&write(&mut s, 105, captured), "does not verify");
    assert_eq!(s.runs.get(&run_id).expect("run"), &before);
    // The defender's own input, under the ids it signed.
    applied(write(&mut s, 106, input(&run_id, form, 106)));
    assert_ne!(s.runs.get(&run_id).expect("run"), &before);
}

/// A run with roles is refused unless every role is bound to a valid key, and a key for
/// a role the run does not have is refused too; each refusal names the JSON path.
#[test]
fn a_start_must_bind_every_role_to_a_valid_key() {
    let mut s = pool(false);
    let demo = RunStart::Falsify(falsify::demo_start());
    let mut keys = role_keys(&demo);
    keys.remove("critic");
    let r = start_with(&mut s, 100, demo.clone(), 2, keys);
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "run_role" && message.contains("$.role_keys.\"critic\" is missing")),
        "{r:?}"
    );
    let mut keys = role_keys(&demo);
    keys.insert("judge".into(), keys["critic"].clone());
    let r = start_with(&mut s, 101, demo.clone(), 2, keys);
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "run_role" && message.contains("no such role") && message.contains("defender, critic")),
        "{r:?}"
    );
    let mut keys = role_keys(&demo);
    keys.insert("critic".into(), "00".repeat(32).into());
    let r = start_with(&mut s, 102, demo.clone(), 2, keys);
    assert!(
        matches!(&r, ItemReply::Refused { code, message } if code == "run_role" && message.contains("not a valid")),
        "{r:?}"
    );
    assert!(s.runs.is_empty());
    // A dossier binds one role per advocate.
    let dossier = RunStart::Dossier(dossier::demo_start());
    let roles: Vec<String> = role_keys(&dossier).into_keys().collect();
    assert!(
        roles.iter().all(|r| r.starts_with("advocate:")),
        "{roles:?}"
    );
    assert!(roles.len() >= 2, "{roles:?}");
}

/// Records exported before roles were bound (format v2) hold runs started without role
/// keys and unsigned inputs: they still verify as v2, and the same entries claimed as a
/// v3 record do not (the start is refused on replay).
#[test]
fn a_v2_record_with_unbound_roles_still_verifies() {
    let mut s = pool(false);
    s.v2_rules = true;
    let v = applied(start_with(
        &mut s,
        100,
        RunStart::Falsify(falsify::demo_start()),
        2,
        Default::default(),
    ));
    let run_id = v["run_id"].as_str().expect("run").to_owned();
    let form = RunInput::Falsify(falsify::demo_inputs().remove(0));
    applied(write(
        &mut s,
        101,
        ClientCommand::SubmitRunInput(Box::new(RunInputSubmission {
            run_id,
            input: form,
            signature: None,
        }))
        .into(),
    ));
    let log = panel_tlog::NoteSigner::new(
        "example.org/log",
        ed25519_dalek::SigningKey::from_bytes(&[50; 32]),
    )
    .expect("log key");
    let mut bundle = panel_machine::read::record::export(&s, Some(&log));
    bundle.format = panel_machine::read::record::FORMAT_V2.into();
    panel_machine::read::record::verify(&bundle).expect("a v2 record verifies");
    bundle.format = panel_machine::read::record::FORMAT.into();
    let err = panel_machine::read::record::verify(&bundle).expect_err("v3 binds roles");
    assert!(err.to_string().contains("role_keys"), "{err}");
}
