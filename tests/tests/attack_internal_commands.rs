//! Attacks on the client/internal command split (docs/SECURITY.md), against production
//! replicas (no `--test-commands`) over real sockets: a client cannot admit an arbiter
//! without the exam, open a raw motion, close a motion with an outcome of its choosing,
//! submit an exam for someone, write test commands, or squat the drivers' client ids. Each
//! refusal names the rule, and nothing reaches the log.

use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::command::ArbiterRegistration;
use panel_machine::{
    ClientCommand, Command, InternalCommand, MotionSpec, OutcomeSubmission, TestCommand,
};
use panel_machine::{MotionKind, Stance};
use panel_tests::{
    ChildGuard, init_cluster, loopback_addrs, production_replica_command, start_production_cluster,
};
use serde_json::Value;

/// A 3-replica production cluster (clients may send client commands only).
fn start(root: &std::path::Path) -> (Vec<ChildGuard>, Vec<String>) {
    let addrs = loopback_addrs(3);
    (start_production_cluster(root, &addrs), addrs)
}

/// A client of `addr` and one of the leader (for linearizable reads), once one is elected.
async fn client(
    addr: &str,
) -> (
    CoordinatorClient<tonic::transport::Channel>,
    CoordinatorClient<tonic::transport::Channel>,
) {
    let t = Instant::now();
    let leader = loop {
        if let Ok(s) =
            panel_coordinator::client::status(&panel_transport::Transport::InsecureLoopback, addr)
                .await
            && s.has_leader
            // Just after an election a replica may know a leader's id before its address.
            && !s.leader_addr.is_empty()
        {
            break s.leader_addr;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    (
        panel_coordinator::client::coordinator(&panel_transport::Transport::InsecureLoopback, addr)
            .expect("client"),
        panel_coordinator::client::coordinator(
            &panel_transport::Transport::InsecureLoopback,
            &leader,
        )
        .expect("leader client"),
    )
}

async fn write(
    c: &mut CoordinatorClient<tonic::transport::Channel>,
    client_id: &str,
    request_id: u64,
    command: &Command,
) -> Result<pb::WriteReply, tonic::Status> {
    c.write(pb::WriteRequest {
        client_id: client_id.into(),
        request_id,
        command_json: serde_json::to_string(command).expect("json"),
        forwarded: false,
        ..Default::default()
    })
    .await
    .map(tonic::Response::into_inner)
}

/// [`write`], retried under the same ids while the group has no leader (an election
/// on a loaded machine): the write applies at most once, and a refusal is returned as is.
async fn write_through_elections(
    c: &mut CoordinatorClient<tonic::transport::Channel>,
    client_id: &str,
    request_id: u64,
    command: &Command,
) -> Result<pb::WriteReply, tonic::Status> {
    let start = std::time::Instant::now();
    loop {
        match write(c, client_id, request_id, command).await {
            Err(st)
                if st.code() == tonic::Code::Unavailable
                    && start.elapsed() < Duration::from_secs(20) =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

fn registration(id: &str, seed: u8, stance: Stance) -> ArbiterRegistration {
    ArbiterRegistration {
        arbiter_id: id.into(),
        public_key: hex::encode(
            SigningKey::from_bytes(&[seed; 32])
                .verifying_key()
                .to_bytes(),
        )
        .into(),
        organisation: format!("org-{id}"),
        model_family: format!("fam-{id}"),
        stance,
        endpoint: String::new(),
        attestation: None,
        lineage: None,
    }
}

async fn read(c: &mut CoordinatorClient<tonic::transport::Channel>, query: &str) -> Value {
    let r = c
        .read(pb::ReadRequest {
            query_json: query.into(),
            linearizable: true,
            ..Default::default()
        })
        .await
        .expect("read")
        .into_inner();
    serde_json::from_str(&r.result_json).expect("read json")
}

/// The number of debates in one replica's own applied state (a plain read), polled for
/// up to 20 s until it reaches `want`; the last count seen otherwise.
async fn local_debates_reaching(
    c: &mut CoordinatorClient<tonic::transport::Channel>,
    want: usize,
) -> usize {
    let t = Instant::now();
    loop {
        let seen = c
            .read(pb::ReadRequest {
                query_json: "\"Debates\"".into(),
                linearizable: false,
                ..Default::default()
            })
            .await
            .ok()
            .and_then(|r| serde_json::from_str::<Value>(&r.into_inner().result_json).ok())
            .map_or(0, |v| v["debates"].as_array().map_or(0, Vec::len));
        if seen >= want || t.elapsed() > Duration::from_secs(20) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn assert_denied(r: Result<pb::WriteReply, tonic::Status>, kind: &str, rule: &str) {
    let st = r.expect_err("an internal or test command must be refused");
    assert_eq!(st.code(), tonic::Code::PermissionDenied, "{kind}: {st:?}");
    assert!(
        st.message().contains(kind) && st.message().contains(rule),
        "{kind}: the refusal names the command and the rule: {}",
        st.message()
    );
}

#[test]
fn clients_cannot_send_internal_or_test_commands_or_squat_driver_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_guards, addrs) = start(dir.path());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        // Through a follower as well as the leader: forwarding must not open a side door.
        for (n, addr) in addrs.iter().enumerate() {
            let (mut c, mut leader) = client(addr).await;
            let base = 100 * n as u64;
            let id = format!("fake-{n}");
            let reg = ClientCommand::RegisterArbiter(registration(&id, n as u8 + 1, Stance::B));
            let w = write(&mut c, "attacker", base, &reg.into())
                .await
                .expect("write");
            assert!(
                w.applied,
                "registration is a client command: {}",
                w.result_json
            );

            // Self-admission without the exam.
            let admit: Command = TestCommand::SetAdmission {
                arbiter_id: id.clone(),
                admitted: true,
                score_milli: 1000,
            }
            .into();
            assert_denied(
                write(&mut c, "attacker", base + 1, &admit).await,
                "SetAdmission",
                "test clusters only",
            );
            // An exam "result" written by a client.
            let exam: Command = InternalCommand::SubmitExam {
                arbiter_id: id.clone(),
                reveals: vec![],
                motions: vec![],
                sitting: Some(1),
            }
            .into();
            assert_denied(
                write(&mut c, "attacker", base + 2, &exam).await,
                "SubmitExam",
                "only the leader's motion and exam drivers",
            );
            // A sitting sealed with a pool of the client's choosing (whose answers it
            // knows), and a "reveal" of a key of its choosing: both are the exam
            // driver's alone.
            let pool = panel_machine::features::exam_sitting::embedded_pool().expect("pool");
            let sealed: Command = InternalCommand::SealExamPool(Box::new(pool.sealed())).into();
            assert_denied(
                write(&mut c, "attacker", base + 6, &sealed).await,
                "SealExamPool",
                "only the leader's motion and exam drivers",
            );
            let reveal: Command = InternalCommand::RevealExamKey(Box::new(pool.reveal(1))).into();
            assert_denied(
                write(&mut c, "attacker", base + 7, &reveal).await,
                "RevealExamKey",
                "only the leader's motion and exam drivers",
            );
            // Closing a sitting early (and so releasing its key): the driver's alone.
            let close: Command =
                InternalCommand::CloseExamSitting(panel_machine::log::exam_pool::SittingClose {
                    sitting: 1,
                })
                .into();
            assert_denied(
                write(&mut c, "attacker", base + 9, &close).await,
                "CloseExamSitting",
                "only the leader's motion and exam drivers",
            );
            // A seating with shares of the client's choosing: the driver's alone.
            let seat: Command =
                InternalCommand::SeatMotion(panel_machine::features::beacon::Seating {
                    motion_id: format!("m{n}"),
                    shares: vec![panel_machine::features::beacon::BeaconShare {
                        replica: 1,
                        proof: "00".repeat(80).into(),
                    }],
                })
                .into();
            assert_denied(
                write(&mut c, "attacker", base + 8, &seat).await,
                "SeatMotion",
                "only the leader's motion and exam drivers",
            );
            // A raw motion, and an outcome of the client's choosing.
            let open: Command = TestCommand::OpenMotion(Box::new(MotionSpec {
                motion_id: format!("m{n}"),
                debate_id: "d".into(),
                kind: MotionKind::Merge,
                state_hash: "ab".repeat(32).into(),
                seats: 2,
                min_per_stance: 1,
                contributors: vec![],
                author_model_family: None,
                policy: None,
                question: None,
                projection: None,
                expected: None,
                procedure: None,
                final_panel_of: None,
            }))
            .into();
            assert_denied(
                write(&mut c, "attacker", base + 3, &open).await,
                "OpenMotion",
                "test clusters only",
            );
            let outcome: Command = InternalCommand::RecordOutcome(OutcomeSubmission {
                motion_id: "mot-1-0-0".into(),
                rulings: vec![],
                reveals: vec![],
                motion: None,
            })
            .into();
            assert_denied(
                write(&mut c, "attacker", base + 4, &outcome).await,
                "RecordOutcome",
                "only the leader's motion and exam drivers",
            );
            // Test commands are not part of the product.
            let note: Command = TestCommand::Note {
                topic: "t".into(),
                text: "x".into(),
            }
            .into();
            assert_denied(
                write(&mut c, "attacker", base + 5, &note).await,
                "Note",
                "test clusters only",
            );
            // The drivers' reserved ids, even with an innocent command.
            for reserved in ["motion-driver", "exam-driver"] {
                let st = write(&mut c, reserved, 7, &ClientCommand::CheckPriors.into())
                    .await
                    .expect_err("a reserved client id must be refused");
                assert_eq!(st.code(), tonic::Code::PermissionDenied, "{st:?}");
                assert!(st.message().contains("reserved"), "{}", st.message());
                // The typed API hands its command to the replica without the JSON decode,
                // so it checks the reserved ids on its own path: refused there too.
                let ch = tonic::transport::Channel::from_shared(format!("http://{addr}"))
                    .expect("url")
                    .connect()
                    .await
                    .expect("connect");
                let st = pb::debates_client::DebatesClient::new(ch)
                    .create_debate(pb::CreateDebateRequest {
                        client_id: reserved.into(),
                        request_id: 8,
                        convener: "conv".into(),
                        resolution: "A squatted id opens nothing".into(),
                        pos_a: "yes".into(),
                        pos_b: "no".into(),
                        ..Default::default()
                    })
                    .await
                    .expect_err("a reserved client id must be refused by the typed API");
                assert_eq!(st.code(), tonic::Code::PermissionDenied, "{st:?}");
                assert!(st.message().contains("reserved"), "{}", st.message());
            }

            // Nothing the attacker tried reached the state: the fake is not admitted and
            // no motion exists.
            let a = read(
                &mut leader,
                &format!("{{\"Arbiter\":{{\"arbiter_id\":\"{id}\"}}}}"),
            )
            .await;
            assert_eq!(a["arbiter"]["admitted"], false, "{a}");
            let stats = read(&mut leader, "\"Stats\"").await;
            assert_eq!(stats["rows"]["motions"], 0, "{stats}");
            assert_eq!(stats["rows"]["notes"], 0, "{stats}");
            let debates = read(&mut leader, "\"Debates\"").await;
            assert_eq!(debates["debates"], serde_json::json!([]), "{debates}");
        }
    });
}

fn debate(resolution: String) -> Command {
    ClientCommand::CreateDebate(panel_machine::DebateSpec {
        resolution,
        pos_a: "yes".into(),
        pos_b: "no".into(),
        burden: None,
        claim_budget: None,
        seats: 4,
        min_per_stance: 1,
        policy: None,
        simulation: false,
        convener: "c".into(),
    })
    .into()
}

/// A command over the byte cap is refused at intake with the limit named, on the leader
/// and on followers, so it can never become a log entry too big to replicate (one 48 MiB
/// write once wedged the log for good); a command just under the cap replicates, and the
/// cluster keeps serving small writes.
///
/// The cap is set to 128 KiB here (`--max-command-bytes`): openraft gives one
/// `AppendEntries` one heartbeat (50 ms in these tests) and this debug build encodes JSON
/// strings at a few tens of MB/s, so a 1 MiB entry could never replicate in time on the
/// test machine. docs/COORDINATOR.md "Sizing entries" gives the rule for real deployments.
#[test]
fn an_oversized_command_is_refused_and_the_cluster_keeps_serving() {
    const CAP: usize = 128 * 1024;
    let dir = tempfile::tempdir().expect("tempdir");
    let addrs = loopback_addrs(3);
    let _guards: Vec<ChildGuard> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut cmd = production_replica_command(dir.path(), i + 1, a);
            cmd.args(["--max-command-bytes", &CAP.to_string()]);
            ChildGuard::spawn(format!("replica {}", i + 1), cmd)
        })
        .collect();
    init_cluster(&addrs);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        for (n, addr) in addrs.iter().enumerate() {
            let (mut c, _) = client(addr).await;
            let base = 10 * n as u64;
            let huge = debate("x".repeat(16 * 1024 * 1024));
            let st = write(&mut c, "big", base, &huge)
                .await
                .expect_err("a 16 MiB command must be refused");
            assert_eq!(st.code(), tonic::Code::InvalidArgument, "{st:?}");
            assert!(
                st.message().contains(&format!("the limit is {CAP} bytes"))
                    && st.message().contains("--max-command-bytes"),
                "{}",
                st.message()
            );
            let just_over = debate("z".repeat(CAP));
            let st = write(&mut c, "big", base, &just_over)
                .await
                .expect_err("a command one resolution over the cap must be refused");
            assert_eq!(st.code(), tonic::Code::InvalidArgument, "{st:?}");
            let near = debate("y".repeat(CAP - 1024));
            let w = write_through_elections(&mut c, "big", base + 1, &near)
                .await
                .expect("near cap");
            assert!(w.applied, "{}", w.result_json);
            let small = write_through_elections(&mut c, "big", base + 2, &debate("small".into()))
                .await
                .expect("small write after the refusal");
            assert!(small.applied, "{}", small.result_json);
        }
        // Every replica holds the same debates: the near-cap entries replicated. Each
        // replica's own state is read (not the leader's, which a leadership change under
        // load could move between reads), waiting for it to catch up.
        let mut counts = Vec::new();
        for a in &addrs {
            let (mut replica, _) = client(a).await;
            counts.push(local_debates_reaching(&mut replica, 6).await);
        }
        assert_eq!(counts, vec![6, 6, 6]);
    });
}

/// A flood of `CreateDebate` under rotating convener names meets the global limit with a
/// retry time, the number of debates stays bounded, and other writers are still served.
#[test]
fn a_debate_flood_under_rotating_names_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_guards, addrs) = start(dir.path());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (mut c, mut leader) = client(&addrs[0]).await;
        let (mut accepted, mut refused) = (0u64, 0u64);
        for i in 0..300u64 {
            let mut spec = debate(format!("flood {i}"));
            if let Command::Client(ClientCommand::CreateDebate(s)) = &mut spec {
                s.convener = format!("sock-{i}");
            }
            match write(&mut c, "flood", i, &spec).await {
                Ok(w) if w.applied => accepted += 1,
                Ok(w) => panic!("refused in apply: {}", w.result_json),
                Err(st) => {
                    assert_eq!(st.code(), tonic::Code::ResourceExhausted, "{st:?}");
                    assert!(
                        st.message().contains("all writers") && st.message().contains("retry in"),
                        "{}",
                        st.message()
                    );
                    refused += 1;
                }
            }
        }
        assert!(refused > 0, "the flood was never limited");
        // The default global burst is 50 with 5 more per second; the flood took seconds
        // at most.
        assert!(accepted < 120, "{accepted} debates accepted");
        let reg = ClientCommand::RegisterArbiter(registration("honest", 42, Stance::A));
        let w = write(&mut c, "honest", 1, &reg.into())
            .await
            .expect("another kind of write is still served");
        assert!(w.applied, "{}", w.result_json);
        let d = read(&mut leader, "\"Debates\"").await;
        assert_eq!(
            d["debates"].as_array().map_or(0, Vec::len) as u64,
            accepted,
            "{d}"
        );
    });
}

/// Over real sockets: a stance declaration signed by another key, or replayed onto another
/// debate, is refused by name and records nothing; the arbiter's own declaration is
/// recorded once, and a later switch of camp for the same debate is refused.
#[test]
fn a_forged_or_switched_stance_declaration_is_refused() {
    use panel_machine::Policy;
    use panel_machine::features::declared_priors;
    let dir = tempfile::tempdir().expect("tempdir");
    let (_guards, addrs) = start(dir.path());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (mut c, mut leader) = client(&addrs[0]).await;
        let reg: Command =
            ClientCommand::RegisterArbiter(registration("arb-d", 41, Stance::A)).into();
        let w = write_through_elections(&mut c, "decl", 1, &reg)
            .await
            .expect("register");
        assert!(w.applied, "{}", w.result_json);
        let mut ids = Vec::new();
        for (n, resolution) in ["first", "second"].into_iter().enumerate() {
            let mut spec = debate(format!("declarations {resolution}"));
            if let Command::Client(ClientCommand::CreateDebate(s)) = &mut spec {
                s.policy = Some(Policy::independent());
            }
            let w = write_through_elections(&mut c, "decl", 2 + n as u64, &spec)
                .await
                .expect("debate");
            assert!(w.applied, "{}", w.result_json);
            let v: Value = serde_json::from_str(&w.result_json).expect("json");
            ids.push(v["debate_id"].as_str().expect("id").to_owned());
        }
        let own = SigningKey::from_bytes(&[41; 32]);
        let thief = SigningKey::from_bytes(&[42; 32]);
        let declare = |key: &SigningKey, debate: &str, stance: Stance| -> Command {
            ClientCommand::DeclareStance(
                declared_priors::sign(key, "arb-d", debate, stance, 700).expect("sign"),
            )
            .into()
        };
        let refused = |w: pb::WriteReply, needle: &str| {
            assert!(!w.applied, "{}", w.result_json);
            assert!(
                w.result_json.contains("declaration_refused") && w.result_json.contains(needle),
                "{}",
                w.result_json
            );
        };
        let forged =
            write_through_elections(&mut c, "decl", 10, &declare(&thief, &ids[0], Stance::B))
                .await
                .expect("write");
        refused(forged, "does not verify");
        let mut replayed =
            declared_priors::sign(&own, "arb-d", &ids[0], Stance::A, 700).expect("sign");
        replayed.debate_id = ids[1].clone();
        let w = write_through_elections(
            &mut c,
            "decl",
            11,
            &ClientCommand::DeclareStance(replayed).into(),
        )
        .await
        .expect("write");
        refused(w, "does not verify");
        let w = write_through_elections(&mut c, "decl", 12, &declare(&own, &ids[0], Stance::A))
            .await
            .expect("write");
        assert!(w.applied, "{}", w.result_json);
        let w = write_through_elections(&mut c, "decl", 13, &declare(&own, &ids[0], Stance::B))
            .await
            .expect("write");
        refused(w, "cannot change");
        let d = read(
            &mut leader,
            &format!("{{\"Debate\":{{\"debate_id\":\"{}\"}}}}", ids[0]),
        )
        .await;
        assert_eq!(
            d["debate"]["declared_stances"]["arb-d"]["stance"], "A",
            "{d}"
        );
        let other = read(
            &mut leader,
            &format!("{{\"Debate\":{{\"debate_id\":\"{}\"}}}}", ids[1]),
        )
        .await;
        assert!(other["debate"]["declared_stances"].is_null(), "{other}");
    });
}
