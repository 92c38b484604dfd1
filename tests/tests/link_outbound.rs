//! Node-initiated arbiter links through real processes: three `panel coordinator run`
//! replicas and four `panel node run` arbiters, two of which are only reachable over the
//! links they open to every replica (`--connect`, registered with `--endpoint link`). The
//! link arbiters take the calibration exam over their links, are admitted, and rule on a
//! motion the panel accepts, before and after the leader is killed. Attacks speak the
//! `ArbiterLink` stream directly: a hello under another key, an unregistered arbiter, a
//! replayed hello, a hello for another replica, a revoked arbiter, a wrong first message.
//! Nothing here asserts a timing; waits poll with generous deadlines.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use panel_proto::link::{hello_canonical_bytes, sign_hello};
use panel_proto::pb::arbiter_link_client::ArbiterLinkClient;
use panel_proto::pb::{
    LinkAccepted, LinkChallenge, LinkFromNode, LinkHello, LinkResponse, LinkToNode, link_from_node,
    link_to_node,
};
use panel_tests::run_folder::{self, log_file, logs, run_json};
use panel_tests::{ChildGuard, free_port, init_args, loopback_addrs, panel, spawn_replicas};
use prost::Message;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};

const DEADLINE: Duration = Duration::from_secs(120);

fn poll<T>(root: &Path, what: &str, f: impl FnMut() -> Option<T>) -> T {
    run_folder::poll(root, what, DEADLINE, f)
}

/// Three replicas with the simulation truth hint and short windows (as `panel up`).
fn start_cluster(root: &Path) -> (Vec<ChildGuard>, Vec<String>) {
    let addrs = loopback_addrs(3);
    let guards = spawn_replicas(root, &addrs, |id, cmd| {
        let (out, err) = log_file(root, &format!("replica-{id}"));
        cmd.args(["--commit-window-ms", "300", "--exam-window-ms", "3000"])
            .arg("--simulation")
            .env("NO_COLOR", "1")
            .stdout(out)
            .stderr(err);
    });
    let init = init_args(&addrs);
    let init: Vec<&str> = init.iter().map(String::as_str).collect();
    poll(root, "the group initialises", || run_json(&init).ok());
    poll(root, "a leader is elected", || {
        run_json(&["coordinator", "status", "--addr", &addrs[0]])
            .ok()
            .filter(|s| s["leader_id"].is_u64())
    });
    (guards, addrs)
}

/// `panel node keygen`; returns the key file and its public key hex.
fn keygen(dir: &Path) -> (PathBuf, String) {
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join("arbiter.key");
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .expect("run panel node keygen");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("public key"))
        .map(|h| h.trim().to_string())
        .expect("keygen prints the public key");
    (key, hex)
}

struct NodeSpec {
    id: &'static str,
    stance: &'static str,
    organisation: &'static str,
    family: &'static str,
    /// Only connects out (registered with `--endpoint link`).
    link: bool,
}

const NODES: [NodeSpec; 4] = [
    NodeSpec {
        id: "edge-a",
        stance: "A",
        organisation: "northwind",
        family: "family-x",
        link: true,
    },
    NodeSpec {
        id: "edge-b",
        stance: "B",
        organisation: "southbank",
        family: "family-y",
        link: true,
    },
    NodeSpec {
        id: "called-a",
        stance: "A",
        organisation: "southbank",
        family: "family-x",
        link: false,
    },
    NodeSpec {
        id: "called-b",
        stance: "B",
        organisation: "northwind",
        family: "family-y",
        link: false,
    },
];

/// Starts the node; returns its guard and the endpoint to register.
fn start_node(root: &Path, spec: &NodeSpec, addrs: &[String]) -> ChildGuard {
    let dir = root.join("nodes").join(spec.id);
    let (key, _) = keygen(&dir);
    let profiles = root.join("profiles.toml");
    std::fs::write(
        &profiles,
        "[profiles.calibrated]\naccuracy = 1.0\nseed = 7\n",
    )
    .unwrap();
    let port = free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
         organisation = \"{}\"\nmodel_family = \"{}\"\ncoordinator_keys = [\"{}\"]\n\n[judge]\nkind = \"scripted\"\n\
         profiles = \"{}\"\nprofile = \"calibrated\"\n",
        spec.organisation,
        spec.family,
        hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&panel_tests::TEST_MOTION_SEED)
                .verifying_key()
                .to_bytes()
        ),
        profiles.display()
    );
    std::fs::write(dir.join("node.toml"), config).unwrap();
    let (out, err) = log_file(root, spec.id);
    let mut cmd = panel();
    cmd.args(["node", "run", "--insecure-loopback", "--config"])
        .arg(dir.join("node.toml"))
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(out)
        .stderr(err);
    let endpoint = if spec.link {
        cmd.args(["--arbiter-id", spec.id])
            .args(["--connect", &addrs.join(",")]);
        "link".to_string()
    } else {
        format!("http://127.0.0.1:{port}")
    };
    let guard = ChildGuard::spawn(spec.id, cmd);
    let all = addrs.join(",");
    let reg = run_json(&[
        "arbiter",
        "register",
        "--id",
        spec.id,
        "--key-file",
        key.to_str().unwrap(),
        "--organisation",
        spec.organisation,
        "--model-family",
        spec.family,
        "--stance",
        spec.stance,
        "--endpoint",
        &endpoint,
        "--json",
        "--addr",
        &all,
    ]);
    assert!(reg.is_ok(), "registering {}: {reg:?}", spec.id);
    guard
}

#[test]
fn link_arbiters_take_the_exam_and_rule_over_their_links() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (mut replicas, addrs) = start_cluster(root);
    let all = addrs.join(",");
    let _nodes: Vec<ChildGuard> = NODES.iter().map(|s| start_node(root, s, &addrs)).collect();

    // Every node is examined (the link nodes over their links) and admitted.
    for spec in &NODES {
        let a = poll(root, &format!("{} is examined", spec.id), || {
            run_json(&["arbiter", "show", spec.id, "--json", "--addr", &all])
                .ok()
                .filter(|a| !a["exam"].is_null())
        });
        assert_eq!(
            a["admitted"],
            true,
            "{} was not admitted: {}{}",
            spec.id,
            a["exam"],
            logs(root)
        );
        let answered = a["exam"]["scores"]["answered"].as_u64().unwrap_or(0);
        assert!(answered > 0, "{}: {}", spec.id, a["exam"]);
    }
    // A link node holds one link per replica, so any leader can reach it.
    for spec in NODES.iter().filter(|s| s.link) {
        poll(
            root,
            &format!("{} linked to all 3 replicas", spec.id),
            || {
                let log =
                    std::fs::read_to_string(root.join("logs").join(format!("{}.log", spec.id)))
                        .unwrap_or_default();
                let replicas: std::collections::BTreeSet<&str> = log
                    .lines()
                    .filter(|l| l.contains("link accepted"))
                    .filter_map(|l| l.split("replica=").nth(1))
                    .filter_map(|r| r.split_whitespace().next())
                    .collect();
                (replicas.len() == 3).then_some(())
            },
        );
    }

    // A motion through the drawn panel: two link seats, two called seats, both stances.
    accepted_with_every_seat(root, &all);

    // The leader dies; the new leader already holds a link to each link node (one per
    // replica), so the next motion reaches them too.
    let leader = poll(root, "a leader", || {
        run_json(&["coordinator", "status", "--addr", &addrs[0]])
            .ok()
            .and_then(|s| s["leader_id"].as_u64())
    });
    replicas[leader as usize - 1].kill();
    let alive: Vec<String> = addrs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 + 1 != leader)
        .map(|(_, a)| a.clone())
        .collect();
    poll(root, "a new leader is elected", || {
        run_json(&["coordinator", "status", "--addr", &alive[0]])
            .ok()
            .and_then(|s| s["leader_id"].as_u64())
            .filter(|l| *l != leader)
    });
    accepted_with_every_seat(root, &alive.join(","));
}

/// Opens a simulation debate, asks the panel to advance it, and checks that the motion is
/// accepted with a ruling from every node, the link nodes' committed over their links.
fn accepted_with_every_seat(root: &Path, all: &str) {
    let d = run_json(&[
        "debate",
        "new",
        "--resolution",
        "Resolved: remote work raises output per employee.",
        "--pos-a",
        "Remote work raises output",
        "--pos-b",
        "Remote work does not raise output",
        // What this test exercises does not depend on declared stances.
        "--policy",
        "head-count",
        "--simulation",
        "--json",
        "--addr",
        all,
    ])
    .unwrap_or_else(|e| panic!("debate new: {e}"));
    let debate = d["debate_id"].as_str().expect("debate id").to_string();
    let asked = run_json(&[
        "ask",
        "--debate",
        &debate,
        "--advance",
        "framing",
        "--expect",
        "yes",
        "--wait",
        "--json",
        "--addr",
        all,
    ])
    .unwrap_or_else(|e| panic!("ask: {e}{}", logs(root)));
    let m = &asked["motion"];
    assert!(
        m["status"]["Decided"]["Accepted"].is_object(),
        "the motion was not accepted: {m}{}",
        logs(root)
    );
    let id = m["spec"]["motion_id"].as_str().expect("motion id");
    let shown = run_json(&["motion", "show", id, "--json", "--addr", all]).unwrap();
    let by: Vec<&str> = shown["rulings"]
        .as_array()
        .expect("rulings")
        .iter()
        .filter_map(|r| r["arbiter"].as_str())
        .collect();
    for spec in &NODES {
        assert!(
            by.contains(&spec.id),
            "no ruling of {} on the accepted motion: {shown}",
            spec.id
        );
    }
    // The link nodes kept their own signed rulings (the same store as the inbound path).
    for spec in NODES.iter().filter(|s| s.link) {
        let log = std::fs::read_to_string(root.join("logs").join(format!("{}.log", spec.id)))
            .unwrap_or_default();
        assert!(
            log.lines()
                .any(|l| l.contains("committed") && l.contains(id)),
            "{} did not commit on {id} over its link:\n{log}",
            spec.id
        );
    }
}

// ---------------------------------------------------------------- attacks

/// An open link stream after its challenge.
struct Stream {
    tx: mpsc::Sender<LinkFromNode>,
    inbound: Streaming<LinkToNode>,
    challenge: LinkChallenge,
}

async fn open(addr: &str) -> Stream {
    let mut client = ArbiterLinkClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to the replica");
    let (tx, rx) = mpsc::channel(8);
    let mut inbound = client
        .open(ReceiverStream::new(rx))
        .await
        .expect("open a link")
        .into_inner();
    let first = inbound
        .message()
        .await
        .expect("challenge")
        .expect("a message");
    let Some(link_to_node::Body::Challenge(challenge)) = first.body else {
        panic!("the replica did not speak first with a challenge: {first:?}");
    };
    assert_eq!(challenge.nonce.len(), 32);
    Stream {
        tx,
        inbound,
        challenge,
    }
}

impl Stream {
    /// Sends `msg` and returns the replica's answer: acceptance or the closing status.
    async fn answer(&mut self, msg: link_from_node::Body) -> Result<LinkAccepted, Status> {
        self.tx
            .send(LinkFromNode { body: Some(msg) })
            .await
            .expect("stream open");
        match self.inbound.message().await? {
            Some(LinkToNode {
                body: Some(link_to_node::Body::Accepted(a)),
            }) => Ok(a),
            Some(other) => panic!("unexpected message before acceptance: {other:?}"),
            None => Err(Status::unknown("stream ended without a status")),
        }
    }

    async fn hello(&mut self, h: LinkHello) -> Result<LinkAccepted, Status> {
        self.answer(link_from_node::Body::Hello(h)).await
    }
}

fn refused(r: Result<LinkAccepted, Status>, code: Code, needles: &[&str]) {
    let s = match r {
        Ok(a) => panic!("the link was accepted ({a:?}); expected {code:?}"),
        Err(s) => s,
    };
    assert_eq!(s.code(), code, "{s:?}");
    for n in needles {
        assert!(s.message().contains(n), "{n:?} missing in: {}", s.message());
    }
}

#[test]
fn link_handshake_refuses_forged_unregistered_replayed_and_revoked_hellos() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (_replicas, addrs) = start_cluster(root);
    let all = addrs.join(",");
    let key = SigningKey::from_bytes(&[41; 32]);
    let other = SigningKey::from_bytes(&[42; 32]);
    let register = |id: &str, k: &SigningKey, endpoint: &str| {
        run_json(&[
            "arbiter",
            "register",
            "--id",
            id,
            "--public-key",
            &hex::encode(k.verifying_key().as_bytes()),
            "--organisation",
            "edge-org",
            "--model-family",
            "fam",
            "--stance",
            "A",
            "--endpoint",
            endpoint,
            "--json",
            "--addr",
            &all,
        ])
        .unwrap_or_else(|e| panic!("register {id}: {e}"))
    };
    register("edge", &key, "link");
    register("called", &other, "http://127.0.0.1:9");
    let addr = addrs[0].clone();
    let rt = tokio::runtime::Runtime::new().unwrap();

    // The genuine hello is accepted, once the replica has applied the registration.
    let (first_nonce, first_hello) = poll(root, "the genuine hello is accepted", || {
        rt.block_on(async {
            let mut s = open(&addr).await;
            let h = sign_hello(&key, &s.challenge, "edge").unwrap();
            let a = s.hello(h.clone()).await.ok()?;
            assert_eq!(a.arbiter_id, "edge");
            assert_eq!(a.replica_id, s.challenge.replica_id);
            Some((s.challenge.nonce.clone(), h))
        })
    });
    // The accepted hello signs the documented layout (docs/WIRE.md "Arbiter link"):
    // tag, nonce, u16 length and arbiter id, replica id (replica 1 serves `addr`).
    let mut documented = b"crucible-panel/link-hello/v1\0".to_vec();
    documented.extend_from_slice(&first_nonce);
    documented.extend_from_slice(&(4u16).to_be_bytes());
    documented.extend_from_slice(b"edge");
    documented.extend_from_slice(&1u64.to_be_bytes());
    let sig = ed25519_dalek::Signature::from_slice(&first_hello.signature).unwrap();
    key.verifying_key()
        .verify_strict(&documented, &sig)
        .expect("the hello signs the documented bytes");

    rt.block_on(async {
        // Replayed: the hello accepted on the first stream, sent on a new stream.
        let mut s = open(&addr).await;
        assert_ne!(
            s.challenge.nonce, first_nonce,
            "every stream gets a fresh nonce"
        );
        refused(
            s.hello(first_hello.clone()).await,
            Code::Unauthenticated,
            &["does not verify", "replayed"],
        );

        // Another key under the registered arbiter's id.
        let mut s = open(&addr).await;
        let h = sign_hello(&other, &s.challenge, "edge").unwrap();
        refused(
            s.hello(h).await,
            Code::PermissionDenied,
            &[
                "not the key registered for arbiter \"edge\"",
                "registered key file",
            ],
        );

        // The registered public key, but signed by another key.
        let mut s = open(&addr).await;
        let mut h = sign_hello(&other, &s.challenge, "edge").unwrap();
        h.public_key = key.verifying_key().to_bytes().to_vec();
        refused(
            s.hello(h).await,
            Code::Unauthenticated,
            &["does not verify"],
        );

        // Signed for another replica than the one that issued the challenge.
        let mut s = open(&addr).await;
        let bytes =
            hello_canonical_bytes(&s.challenge.nonce, "edge", s.challenge.replica_id + 1).unwrap();
        let h = LinkHello {
            arbiter_id: "edge".into(),
            public_key: key.verifying_key().to_bytes().to_vec(),
            signature: key.sign(&bytes).to_bytes().to_vec(),
        };
        refused(
            s.hello(h).await,
            Code::Unauthenticated,
            &["another replica"],
        );

        // Unregistered arbiter.
        let mut s = open(&addr).await;
        let stranger = SigningKey::from_bytes(&[43; 32]);
        let h = sign_hello(&stranger, &s.challenge, "ghost").unwrap();
        refused(
            s.hello(h).await,
            Code::NotFound,
            &[
                "arbiter \"ghost\" is not registered",
                "panel arbiter register",
                "--endpoint link",
            ],
        );

        // An arbiter registered with a node URL is called, not linked.
        let mut s = open(&addr).await;
        let h = sign_hello(&other, &s.challenge, "called").unwrap();
        refused(
            s.hello(h).await,
            Code::FailedPrecondition,
            &["--endpoint link"],
        );

        // A first message that is not a hello.
        let mut s = open(&addr).await;
        refused(
            s.answer(link_from_node::Body::Response(LinkResponse::default()))
                .await,
            Code::InvalidArgument,
            &["first message", "hello"],
        );
    });

    // Revoked: after a signed revocation of its key the arbiter cannot link any more.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let revocation =
        panel_proto::keys::sign_revocation(&key, now, now, "key left the building").unwrap();
    let cmd = json!({ "RevokeKey": { "revocation": hex::encode(revocation.encode_to_vec()) } });
    let v = run_json(&[
        "coordinator",
        "write",
        "--addr",
        &all,
        "--client-id",
        "link-test",
        "--request-id",
        "1",
        "--command",
        &cmd.to_string(),
    ])
    .unwrap_or_else(|e| panic!("revoke: {e}"));
    assert_eq!(v["applied"], true, "{v}");
    let status = poll(root, "the revocation reaches the replica", || {
        rt.block_on(async {
            let mut s = open(&addr).await;
            let h = sign_hello(&key, &s.challenge, "edge").unwrap();
            s.hello(h).await.err()
        })
    });
    refused(
        Err(status),
        Code::PermissionDenied,
        &["revoked", "fresh key"],
    );
}
