//! The witnessed record, end to end over the pure machine (docs/SECURITY.md "The
//! record"): apply issues checkpoints, witnesses of two organisations cosign them through
//! the log, the export verifies under a tlog-policy, one entry's proof verifies on its own,
//! and the forgeries docs/WITNESS.md lists are refused with the missing piece named.

use ed25519_dalek::SigningKey;
use panel_federation::{Charter, Floors, LogIdentity, Organisation, WitnessEntry};
use panel_machine::Bundle;
use panel_machine::State;
use panel_machine::apply_batch;
use panel_machine::command::ArbiterRegistration;
use panel_machine::features::checkpoints;
use panel_machine::features::checkpoints::{Cadence, Cosignatures};
use panel_machine::read::entry_proof;
use panel_machine::read::record::{self, FORMAT_V1, check_policy, export, verify};
use panel_machine::{Batch, ClientCommand, Command, InternalCommand, Item};
use panel_tlog::note::SignatureLine;
use panel_tlog::{Cosigner, NoteSigner, Policy};

const ORIGIN: &str = "panel.test/log";

fn key(i: u8) -> SigningKey {
    SigningKey::from_bytes(&[i; 32])
}

struct Fed {
    log: NoteSigner,
    witnesses: [Cosigner; 2],
    charter: Charter,
}

fn federation() -> Fed {
    let log = NoteSigner::new(ORIGIN, key(50)).expect("log key");
    let witnesses = [
        Cosigner::new("witness.north", key(60)).expect("w"),
        Cosigner::new("witness.south", key(61)).expect("w"),
    ];
    let pk = |k: SigningKey| hex::encode(k.verifying_key().to_bytes());
    let charter = Charter {
        charter_version: 1,
        organisations: ["north", "south"]
            .iter()
            .enumerate()
            .map(|(i, n)| Organisation {
                name: (*n).into(),
                ca_sha256: panel_federation::Fingerprint([i as u8; 32]),
                signing_key: pk(key(100 + i as u8)),
            })
            .collect(),
        admission_threshold: 2,
        replicas: vec![],
        operators: vec![],
        motion_key: pk(key(99)),
        floors: Floors::PROJECT,
        log: Some(LogIdentity {
            origin: ORIGIN.into(),
            vkey: log.verifier().to_string(),
            quorum: 0,
        }),
        witnesses: vec![
            WitnessEntry {
                organisation: "north".into(),
                vkey: witnesses[0].verifier().to_string(),
            },
            WitnessEntry {
                organisation: "south".into(),
                vkey: witnesses[1].verifier().to_string(),
            },
        ],
        exam: None,
        last_word: None,
        final_panel: None,
        appeal_credits: None,
    };
    charter.check().expect("charter");
    Fed {
        log,
        witnesses,
        charter,
    }
}

fn policy(fed: &Fed) -> Policy {
    Policy::parse(&format!(
        "log {}\nwitness north {}\nwitness south {}\ngroup both all north south\nquorum both\n",
        fed.log.verifier(),
        fed.witnesses[0].verifier(),
        fed.witnesses[1].verifier()
    ))
    .expect("policy")
}

fn registration(id: &str, arbiter: u8, org: &str, org_key: u8, family: &str) -> Command {
    let k = key(arbiter);
    let mut reg: ArbiterRegistration = serde_json::from_value(serde_json::json!({
        "arbiter_id": id,
        "public_key": hex::encode(k.verifying_key().to_bytes()),
        "organisation": org, "model_family": family, "stance": "A", "endpoint": "link",
    }))
    .expect("registration");
    reg.attestation = Some(
        panel_machine::features::charter_rules::attest(&reg, &k, &key(org_key)).expect("attest"),
    );
    Command::Client(ClientCommand::RegisterArbiter(reg))
}

fn write(state: &mut State, index: &mut u64, command: Command) {
    *index += 1;
    let batch = Batch {
        time_ms: 1_000 * *index,
        seed: *index,
        items: vec![Item {
            client_id: String::new(),
            request_id: *index,
            command,
            writer: None,
        }],
        limits: None,
        checkpoints: Some(Cadence {
            every_entries: 2,
            every_ms: 3_600_000,
        }),
        rules: None,
    };
    let reply = apply_batch(state, *index, &batch, &panel_proto::VerifiedMemo::default());
    assert!(
        matches!(reply.items[0].reply, panel_machine::ItemReply::Applied(_)),
        "{:?}",
        reply.items[0].reply
    );
}

/// Every issued checkpoint cosigned by both witnesses, through the log.
fn cosign_all(state: &mut State, index: &mut u64, fed: &Fed) {
    let issued: Vec<_> = state.checkpoints.clone();
    for cp in issued {
        let text = checkpoints::body(state, &cp);
        let lines = fed
            .witnesses
            .iter()
            .map(|w| {
                w.cosign(&text, 1_764_590_400)
                    .to_line()
                    .trim_end()
                    .to_string()
            })
            .collect();
        write(
            state,
            index,
            Command::Internal(InternalCommand::AddCosignatures(Cosignatures {
                size: cp.size,
                lines,
            })),
        );
    }
}

/// The charter, three registrations (one with a family the forger will change).
fn history(fed: &Fed, family: &str) -> (State, u64) {
    let mut st = State::default();
    let mut n = 0;
    write(
        &mut st,
        &mut n,
        Command::Internal(InternalCommand::AdoptCharter(Box::new(fed.charter.clone()))),
    );
    write(
        &mut st,
        &mut n,
        registration("a1", 1, "north", 100, "fam-a"),
    );
    write(&mut st, &mut n, registration("b1", 2, "south", 101, family));
    write(
        &mut st,
        &mut n,
        registration("b2", 3, "south", 101, "fam-c"),
    );
    (st, n)
}

#[test]
fn a_witnessed_record_verifies_under_the_policy_and_names_its_witnesses() {
    let fed = federation();
    let (mut st, mut n) = history(&fed, "fam-b");
    cosign_all(&mut st, &mut n, &fed);
    let sizes: Vec<u64> = st.checkpoints.iter().map(|c| c.size).collect();
    assert_eq!(
        sizes,
        [2, 4],
        "a checkpoint every two entries; cosignature entries are not on the record"
    );
    let bundle = export(&st, Some(&fed.log));
    let report = verify(&bundle).expect("internally consistent");
    assert!(report.log_signed_per_charter);
    assert_eq!(report.checkpoints, 2);
    let ok = check_policy(&bundle, &policy(&fed)).expect("meets the policy");
    assert_eq!(ok.witnesses, ["north", "south"]);
    // The same record without one organisation's cosignature misses the quorum.
    let mut one = bundle.clone();
    let last = one.checkpoints.len() - 1;
    one.checkpoints[last] = one.checkpoints[last]
        .lines()
        .filter(|l| !l.contains("witness.south"))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = check_policy(&one, &policy(&fed)).expect_err("one witness is not enough");
    assert!(
        err.to_string()
            .contains("no cosignature from witness south"),
        "{err}"
    );
}

#[test]
fn a_checkpoint_re_signed_by_an_unknown_key_is_refused() {
    let fed = federation();
    let (mut st, mut n) = history(&fed, "fam-b");
    cosign_all(&mut st, &mut n, &fed);
    let impostor = NoteSigner::new(ORIGIN, key(77)).expect("impostor");
    let forged: Bundle = export(&st, Some(&impostor));
    let err = check_policy(&forged, &policy(&fed)).expect_err("unknown log key");
    assert!(
        err.to_string()
            .contains("not signed by the policy's log key"),
        "{err}"
    );
    // The record's own charter names the real log key, so even without a policy the
    // internal check says the checkpoints are not the charter's log's.
    let err = verify(&forged).expect_err("charter log key");
    assert!(
        err.to_string()
            .contains("the log key of the record's charter"),
        "{err}"
    );
}

#[test]
fn a_history_rewritten_and_re_signed_with_the_real_log_key_lacks_the_witnesses() {
    let fed = federation();
    let (mut honest, mut n) = history(&fed, "fam-b");
    cosign_all(&mut honest, &mut n, &fed);
    let honest_bundle = export(&honest, Some(&fed.log));
    // The forger holds the log key and south's roster key: it rewrites b1's registration
    // (re-endorsed, so the replay passes) and re-signs every checkpoint.
    let (forged_state, _) = history(&fed, "fam-rewritten");
    let mut forged = export(&forged_state, Some(&fed.log));
    verify(&forged).expect("the rewritten history is internally consistent");
    let err = check_policy(&forged, &policy(&fed)).expect_err("no fresh cosignatures");
    assert!(err.to_string().contains("quorum"), "{err}");
    // Copying the honest cosignatures onto the new roots does not help: they do not verify.
    let last = forged.checkpoints.len() - 1;
    let honest_last = &honest_bundle.checkpoints[honest_bundle.checkpoints.len() - 1];
    for line in honest_last.lines().filter(|l| l.contains("witness.")) {
        forged.checkpoints[last].push_str(line);
        forged.checkpoints[last].push('\n');
    }
    let err = check_policy(&forged, &policy(&fed)).expect_err("stale cosignatures");
    assert!(err.to_string().contains("does not verify"), "{err}");
}

#[test]
fn one_entrys_proof_verifies_on_its_own_and_a_changed_entry_does_not() {
    let fed = federation();
    let (mut st, mut n) = history(&fed, "fam-b");
    cosign_all(&mut st, &mut n, &fed);
    let bundle = entry_proof::prove(&st, 2, Some(&fed.log)).expect("proof");
    let text = bundle.to_text();
    let parsed = panel_tlog::ProofBundle::parse(&text).expect("parses");
    let proven = entry_proof::check(&parsed, &policy(&fed)).expect("holds");
    assert_eq!((proven.entry.seq, proven.size), (2, 4));
    assert_eq!(proven.witnesses, ["north", "south"]);
    let mut edited = parsed.clone();
    let extra = String::from_utf8(edited.extra.clone().expect("extra")).expect("utf8");
    edited.extra = Some(extra.replace("fam-b", "fam-x").into_bytes());
    let err = entry_proof::check(&edited, &policy(&fed)).expect_err("edited entry");
    assert!(
        err.to_string().contains("inclusion proof does not hold"),
        "{err}"
    );
    let mut moved = parsed;
    moved.index = 1;
    assert!(entry_proof::check(&moved, &policy(&fed)).is_err());
    assert!(entry_proof::prove(&st, 9, Some(&fed.log)).is_err());
}

#[test]
fn cosignatures_by_strangers_never_reach_the_state() {
    let fed = federation();
    let (mut st, mut n) = history(&fed, "fam-b");
    let cp = st.checkpoints[0].clone();
    let stranger = Cosigner::new("witness.north", key(88)).expect("stranger");
    let line = stranger.cosign(&checkpoints::body(&st, &cp), 1).to_line();
    n += 1;
    let batch = Batch {
        time_ms: 1_000 * n,
        seed: n,
        items: vec![Item {
            client_id: String::new(),
            request_id: n,
            command: Command::Internal(InternalCommand::AddCosignatures(Cosignatures {
                size: cp.size,
                lines: vec![line.trim_end().to_string()],
            })),
            writer: None,
        }],
        limits: None,
        checkpoints: None,
        rules: None,
    };
    let r = apply_batch(&mut st, n, &batch, &panel_proto::VerifiedMemo::default());
    assert!(
        matches!(&r.items[0].reply, panel_machine::ItemReply::Refused { code, .. } if code == "bad_cosignature"),
        "{:?}",
        r.items[0].reply
    );
    assert!(st.checkpoints[0].cosignatures.is_empty());
    assert!(SignatureLine::parse(line.trim_end()).is_ok());
}

#[test]
fn a_v1_record_still_verifies_and_cannot_meet_a_policy() {
    let fed = federation();
    let (st, _) = history(&fed, "fam-b");
    let mut v1 = export(&st, Some(&fed.log));
    v1.format = FORMAT_V1.into();
    v1.checkpoints.clear();
    record::sign_v1(&mut v1, &key(42), 7).expect("leaves");
    verify(&v1).expect("v1 still verifies");
    let err = check_policy(&v1, &policy(&fed)).expect_err("v1 has no log checkpoints");
    assert!(
        err.to_string().contains("no log-signed checkpoints"),
        "{err}"
    );
}
