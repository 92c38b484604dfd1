//! Signed rulings through a real 3-replica coordinator: an accepted outcome across stances,
//! a deadlock with its dissent on record, and attacks (tampered, forged, replayed rulings).

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use panel_machine::WireRuling;
use panel_machine::command::ArbiterRegistration;
use panel_machine::rules::ruling::{self, Binding};
use panel_machine::{ClientCommand, MotionSpec, OutcomeSubmission, TestCommand};
use panel_machine::{Decision, MotionKind, Stance};
use panel_tests::{ChildGuard, init_args, loopback_addrs, panel, spawn_replicas};
use serde_json::{Value, json};

fn run_json(args: &[&str]) -> Result<Value, String> {
    let out = panel().args(args).output().expect("run panel");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        sleep(Duration::from_millis(100));
    }
}

fn start(root: &Path) -> (Vec<ChildGuard>, Vec<String>) {
    let addrs = loopback_addrs(3);
    let guards = spawn_replicas(root, &addrs, |_, _| {});
    let init = init_args(&addrs);
    let init: Vec<&str> = init.iter().map(String::as_str).collect();
    poll("init", || run_json(&init).ok());
    (guards, addrs)
}

fn write(addrs: &str, req: u64, cmd: &impl serde::Serialize) -> Result<Value, String> {
    let c = serde_json::to_string(cmd).unwrap();
    run_json(&[
        "coordinator",
        "write",
        "--addr",
        addrs,
        "--client-id",
        "outcome-test",
        "--request-id",
        &req.to_string(),
        "--command",
        &c,
    ])
}

fn key(i: u8) -> SigningKey {
    SigningKey::from_bytes(&[i + 1; 32])
}

const STANCES: [Stance; 5] = [Stance::A, Stance::A, Stance::B, Stance::B, Stance::None];

fn open(id: &str, hash: &[u8; 32]) -> TestCommand {
    TestCommand::OpenMotion(Box::new(MotionSpec {
        motion_id: id.into(),
        debate_id: "d1".into(),
        kind: MotionKind::Merge,
        state_hash: hex::encode(hash).into(),
        seats: 5,
        min_per_stance: 2,
        contributors: vec![],
        author_model_family: None,
        policy: None,
        question: None,
        projection: None,
        expected: None,
        procedure: None,
        final_panel_of: None,
    }))
}

fn rulings(id: &str, hash: &[u8; 32], decisions: [Decision; 5]) -> Vec<WireRuling> {
    let b = Binding {
        motion_id: id,
        debate_id: "d1",
        kind: MotionKind::Merge,
        state_hash: hash,
    };
    (0..5u8)
        .map(|i| ruling::sign(&key(i), &b, decisions[i as usize], 0.8, None))
        .collect()
}

fn record(id: &str, rulings: Vec<WireRuling>) -> TestCommand {
    TestCommand::RecordOutcome(OutcomeSubmission {
        motion_id: id.into(),
        rulings,
        reveals: vec![],
        motion: None,
    })
}

fn motion_on(addr: &str, id: &str) -> Option<Value> {
    let q = json!({ "Motion": { "motion_id": id } }).to_string();
    let v = run_json(&["coordinator", "read", "--addr", addr, "--query", &q]).ok()?;
    let m = v["result"]["motion"].clone();
    (!m.is_null()).then_some(m)
}

#[test]
fn coord_signed_outcomes_accept_across_stances_and_refuse_attacks() {
    let tmp = tempfile::tempdir().unwrap();
    let (_guards, addrs) = start(tmp.path());
    let all = addrs.join(",");
    let mut req = 0;
    let mut next = || {
        req += 1;
        req
    };
    for i in 0..5u8 {
        let reg = ArbiterRegistration {
            arbiter_id: format!("arb{i}"),
            public_key: hex::encode(key(i).verifying_key().to_bytes()).into(),
            organisation: format!("org{}", i % 3),
            model_family: format!("fam{i}"),
            stance: STANCES[i as usize],
            endpoint: String::new(),
            attestation: None,
            lineage: None,
        };
        assert_eq!(
            write(&all, next(), &ClientCommand::RegisterArbiter(reg)).unwrap()["applied"],
            true
        );
        let admit = TestCommand::SetAdmission {
            arbiter_id: format!("arb{i}"),
            admitted: true,
            score_milli: 900,
        };
        assert_eq!(write(&all, next(), &admit).unwrap()["applied"], true);
    }

    // Agreement across stances: accepted, on every replica.
    let h1 = [0x11; 32];
    let v = write(&all, next(), &open("m1", &h1)).unwrap();
    assert_eq!(v["result"]["seats"].as_array().unwrap().len(), 5);
    let v = write(
        &all,
        next(),
        &record("m1", rulings("m1", &h1, [Decision::Yes; 5])),
    )
    .unwrap();
    assert!(v["result"]["verdict"]["Accepted"].is_object(), "{v}");
    for a in &addrs {
        let m = poll("m1 decided everywhere", || {
            motion_on(a, "m1").filter(|m| m["status"] != "Open")
        });
        assert!(m["status"]["Decided"]["Accepted"].is_object(), "{m}");
    }

    // Side B against: deadlocked, dissent and every ruling kept on the record.
    let h2 = [0x22; 32];
    write(&all, next(), &open("m2", &h2)).unwrap();
    use Decision::{No, Yes};
    let v = write(
        &all,
        next(),
        &record("m2", rulings("m2", &h2, [Yes, Yes, No, No, Yes])),
    )
    .unwrap();
    assert!(
        v["result"]["verdict"]["Deadlocked"]["reasons"].is_array(),
        "{v}"
    );
    let m = motion_on(&addrs[1], "m2").unwrap();
    assert_eq!(m["rulings"].as_array().unwrap().len(), 5);

    // Attacks on a fresh motion; none of them decides it.
    let h3 = [0x33; 32];
    write(&all, next(), &open("m3", &h3)).unwrap();
    // Tampered after signing: refused at intake, before the log.
    let mut rs = rulings("m3", &h3, [Yes; 5]);
    let mut sr = rs[2].decode().unwrap();
    sr.ruling.as_mut().unwrap().probability = 0.1;
    rs[2] = WireRuling::encode(&sr);
    let err = write(&all, next(), &record("m3", rs)).unwrap_err();
    assert!(err.contains("refused at intake"), "{err}");
    // Validly signed by a key that holds no seat (a sybil): refused in apply.
    let mut rs = rulings("m3", &h3, [Yes; 5]);
    let b = Binding {
        motion_id: "m3",
        debate_id: "d1",
        kind: MotionKind::Merge,
        state_hash: &h3,
    };
    rs[4] = ruling::sign(&SigningKey::from_bytes(&[99; 32]), &b, Yes, 0.9, None);
    let v = write(&all, next(), &record("m3", rs)).unwrap();
    assert_eq!(v["applied"], false);
    assert!(
        v["result"]["message"].as_str().unwrap().contains("no seat"),
        "{v}"
    );
    // Rulings from motion m1 replayed onto m3: refused by the binding.
    let v = write(&all, next(), &record("m3", rulings("m1", &h1, [Yes; 5]))).unwrap();
    assert_eq!(v["applied"], false);
    assert!(
        v["result"]["message"]
            .as_str()
            .unwrap()
            .contains("not bound"),
        "{v}"
    );
    assert_eq!(motion_on(&addrs[2], "m3").unwrap()["status"], "Open");
    // Counting m1 again is refused: rulings count once.
    let v = write(&all, next(), &record("m1", rulings("m1", &h1, [Yes; 5]))).unwrap();
    assert_eq!(v["result"]["code"], "motion_closed");
}

#[test]
fn coord_health_service_reports_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let (_guards, addrs) = start(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Init answers once the first replica took it; the second may still be starting
    // (a CI run under load refused the connection), so ask until it answers.
    let status = poll("replica 2's health service", || {
        rt.block_on(async {
            let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", addrs[1]))
                .ok()?
                .connect()
                .await
                .ok()?;
            let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
            let reply = health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: "crucible.coordinator.v1.Coordinator".into(),
                })
                .await
                .ok()?;
            Some(reply.into_inner().status)
        })
    });
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}
