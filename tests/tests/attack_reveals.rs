//! A seat's own reveal reaches the record when the driver does not deliver it, through
//! real processes: three `panel coordinator run` replicas drive a debate motion to four
//! arbiters played by this test over their outbound links (docs/WIRE.md "Arbiter link").
//! Each fake node signs real commitments and envelope v2 rulings; one of them refuses to
//! reveal to the driver, and the test submits that seat's reveal itself, as any client
//! can (`SubmitReveal`). The record must show the commitment logged before the reveal, the
//! reveal submitted by the test's client id, and the close counting it
//! (docs/coordinator/state-machine.md "The commit-reveal round").

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::Duration;

use ed25519_dalek::SigningKey;
use panel_proto::link::sign_hello;
use panel_proto::pb::arbiter_link_client::ArbiterLinkClient;
use panel_proto::pb::{
    self, LinkError, LinkFromNode, LinkResponse, LinkToNode, link_from_node, link_request,
    link_response, link_to_node,
};
use panel_tests::run_folder::{self, logs, run_json};
use panel_tests::{ChildGuard, init_args, loopback_addrs, spawn_replicas};
use prost::Message;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

const DEADLINE: Duration = Duration::from_secs(120);

fn poll<T>(root: &Path, what: &str, f: impl FnMut() -> Option<T>) -> T {
    run_folder::poll(root, what, DEADLINE, f)
}

/// What a fake node sealed for one motion.
#[derive(Clone)]
struct Sealed {
    signed: pb::SignedRuling,
    salt: Vec<u8>,
    commitment: pb::Commitment,
}

/// One fake arbiter: its key, and what it committed on, by motion id.
struct FakeNode {
    id: &'static str,
    key: SigningKey,
    /// Refuses every reveal the driver asks for.
    withholds: bool,
    sealed: Mutex<BTreeMap<String, Sealed>>,
}

impl FakeNode {
    /// Judges (always the affirmative), signs an envelope v2 ruling bound to the signed
    /// motion's digest, and commits to it, as a real node does.
    fn commit(&self, m: &pb::Motion) -> Result<pb::Commitment, String> {
        if m.kind == pb::MotionKind::Exam as i32 {
            return Err("this test node takes no exam (admitted by SetAdmission)".into());
        }
        if let Some(s) = self.sealed.lock().unwrap().get(&m.motion_id) {
            return Ok(s.commitment.clone());
        }
        let kind = pb::MotionKind::try_from(m.kind).map_err(|e| e.to_string())?;
        let (yes, _) = panel_proto::ruling_check::binary_pair(kind).ok_or("not binary")?;
        let ruling = pb::Ruling {
            motion_id: m.motion_id.clone(),
            debate_id: m.debate_id.clone(),
            kind: m.kind,
            state_hash: m.state_hash.clone(),
            motion_digest: panel_proto::motion_digest(m).to_vec(),
            provenance: None,
            decision: yes as i32,
            probability: 0.9,
            rationale: format!("{} agrees", self.id),
            issued_at_unix_ms: 1,
            ..Default::default()
        };
        let signed = panel_proto::sign_ruling(&self.key, ruling).map_err(|e| e.to_string())?;
        let salt = vec![self.key.as_bytes()[0]; 32];
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let commitment = panel_proto::commit_reveal::commit(&self.key, &signed, &salt, now)
            .map_err(|e| e.to_string())?;
        self.sealed.lock().unwrap().insert(
            m.motion_id.clone(),
            Sealed {
                signed,
                salt,
                commitment: commitment.clone(),
            },
        );
        Ok(commitment)
    }

    fn reveal(&self, motion_id: &str) -> Option<pb::Reveal> {
        self.sealed
            .lock()
            .unwrap()
            .get(motion_id)
            .map(|s| pb::Reveal {
                signed_ruling: Some(s.signed.clone()),
                salt: s.salt.clone(),
                commitment: Some(s.commitment.clone()),
            })
    }

    fn answer(&self, req: pb::LinkRequest) -> link_response::Body {
        let refuse = |message: String| {
            link_response::Body::Error(LinkError {
                message,
                code: tonic::Code::FailedPrecondition as i32,
            })
        };
        match req.body {
            Some(link_request::Body::Commit(m)) => match self.commit(&m) {
                Ok(c) => link_response::Body::Commitment(c),
                Err(e) => refuse(e),
            },
            Some(link_request::Body::Reveal(r)) if self.withholds => refuse(format!(
                "{} does not reveal {} to the driver",
                self.id, r.motion_id
            )),
            Some(link_request::Body::Reveal(r)) => match self.reveal(&r.motion_id) {
                Some(rv) => link_response::Body::Reveal(rv),
                None => refuse("no commitment".into()),
            },
            None => refuse("empty request".into()),
        }
    }
}

/// Keeps one link open from `node` to the replica at `addr`, answering its requests.
async fn serve_link(node: Arc<FakeNode>, addr: String) {
    loop {
        let _ = link_once(&node, &addr).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn link_once(node: &FakeNode, addr: &str) -> Result<(), String> {
    let mut client = ArbiterLinkClient::connect(format!("http://{addr}"))
        .await
        .map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel(64);
    let mut inbound = client
        .open(ReceiverStream::new(rx))
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    while let Some(LinkToNode { body }) = inbound.message().await.map_err(|e| e.to_string())? {
        let reply = match body {
            Some(link_to_node::Body::Challenge(c)) => {
                let hello = sign_hello(&node.key, &c, node.id).map_err(|e| e.to_string())?;
                link_from_node::Body::Hello(hello)
            }
            Some(link_to_node::Body::Request(req)) => {
                let request_id = req.request_id;
                link_from_node::Body::Response(LinkResponse {
                    request_id,
                    body: Some(node.answer(req)),
                })
            }
            _ => continue,
        };
        tx.send(LinkFromNode { body: Some(reply) })
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[test]
fn a_seats_own_reveal_counts_when_the_driver_does_not_deliver_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let addrs = loopback_addrs(3);
    let _replicas: Vec<ChildGuard> = spawn_replicas(root, &addrs, |id, cmd| {
        let log = std::fs::File::create(root.join(format!("replica-{id}.log"))).unwrap();
        cmd.args(["--commit-window-ms", "400", "--reveal-window-ms", "8000"])
            .env("NO_COLOR", "1")
            .stdout(log.try_clone().unwrap())
            .stderr(log);
    });
    let init = init_args(&addrs);
    let init: Vec<&str> = init.iter().map(String::as_str).collect();
    poll(root, "the group initialises", || run_json(&init).ok());
    let all = addrs.join(",");

    let spec = [
        ("edge-a1", 61u8, "A", "northwind", false),
        ("edge-a2", 62, "A", "southbank", false),
        ("edge-b1", 63, "B", "northwind", false),
        ("edge-b2", 64, "B", "southbank", true),
    ];
    let nodes: Vec<Arc<FakeNode>> = spec
        .iter()
        .map(|(id, seed, _, _, withholds)| {
            Arc::new(FakeNode {
                id,
                key: SigningKey::from_bytes(&[*seed; 32]),
                withholds: *withholds,
                sealed: Mutex::new(BTreeMap::new()),
            })
        })
        .collect();
    for (n, ((id, _, stance, org, _), node)) in spec.iter().zip(&nodes).enumerate() {
        run_json(&[
            "arbiter",
            "register",
            "--id",
            id,
            "--public-key",
            &hex::encode(node.key.verifying_key().as_bytes()),
            "--organisation",
            org,
            "--model-family",
            &format!("family-{id}"),
            "--stance",
            stance,
            "--endpoint",
            "link",
            "--json",
            "--addr",
            &all,
        ])
        .unwrap_or_else(|e| panic!("register {id}: {e}"));
        let admit =
            json!({"SetAdmission": {"arbiter_id": id, "admitted": true, "score_milli": 900}});
        let w = run_json(&[
            "coordinator",
            "write",
            "--addr",
            &all,
            "--client-id",
            "test-admin",
            "--request-id",
            &(n + 1).to_string(),
            "--command",
            &admit.to_string(),
        ])
        .unwrap_or_else(|e| panic!("admit {id}: {e}"));
        assert_eq!(w["applied"], true, "{w}");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    for node in &nodes {
        for addr in &addrs {
            rt.spawn(serve_link(node.clone(), addr.clone()));
        }
    }

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
        "--json",
        "--addr",
        &all,
    ])
    .unwrap_or_else(|e| panic!("debate new: {e}"));
    let debate = d["debate_id"].as_str().expect("debate id").to_string();
    // The links must be up before the motion opens, or seats do not commit.
    sleep(Duration::from_secs(2));
    let asked = run_json(&[
        "ask",
        "--debate",
        &debate,
        "--advance",
        "framing",
        "--json",
        "--addr",
        &all,
    ])
    .unwrap_or_else(|e| panic!("ask: {e}{}", logs(root)));
    let motion_id = asked["motion_id"].as_str().expect("motion id").to_string();
    let read_motion = || {
        run_json(&[
            "coordinator",
            "read",
            "--addr",
            &addrs[0],
            "--query",
            &json!({"Motion": {"motion_id": motion_id}}).to_string(),
        ])
        .ok()
        .map(|v| v["result"]["motion"].clone())
    };

    // The round is logged with all four commitments; the driver got three reveals.
    let m = poll(root, "the round logged and three reveals stored", || {
        read_motion().filter(|m| {
            let c = &m["round"]["commitments"];
            c.as_object().is_some_and(|o| o.len() == 4)
                && ["edge-a1", "edge-a2", "edge-b1"]
                    .iter()
                    .all(|id| c[id]["reveal"].is_object())
        })
    });
    assert_eq!(m["status"], "Open", "b2 has not revealed yet: {m}");
    assert!(
        m["round"]["commitments"]["edge-b2"]["reveal"].is_null(),
        "{m}"
    );

    // The seat submits its own reveal, as a client, through any replica.
    let b2 = &nodes[3];
    let reveal = b2.reveal(&motion_id).expect("b2 committed");
    let cmd = json!({"SubmitReveal": {"motion_id": motion_id, "reveal": hex::encode(reveal.encode_to_vec())}});
    let w = run_json(&[
        "coordinator",
        "write",
        "--addr",
        &addrs[2],
        "--client-id",
        "edge-b2-own",
        "--request-id",
        "1",
        "--command",
        &cmd.to_string(),
    ])
    .unwrap_or_else(|e| panic!("submit reveal: {e}"));
    assert_eq!(w["applied"], true, "{w}");
    assert_eq!(w["result"]["submitted_by"], "edge-b2-own", "{w}");

    // Every logged commitment is revealed: the driver closes, and b2's ruling counts.
    let m = poll(root, "the motion is decided", || {
        read_motion().filter(|m| m["status"] != "Open")
    });
    assert!(
        m["status"]["Decided"]["Accepted"].is_object(),
        "{m}{}",
        logs(root)
    );
    let by = |id: &str| m["round"]["commitments"][id]["reveal"]["submitted_by"].clone();
    assert_eq!(by("edge-b2"), "edge-b2-own");
    assert_eq!(by("edge-a1"), "motion-driver");
    assert_eq!(
        m["round"]["absent"],
        json!({"committed_not_revealed": [], "not_committed": []}),
        "{m}"
    );
    assert_eq!(m["rulings"].as_array().map(Vec::len), Some(4), "{m}");
    // The commitments were logged before any reveal: the record says so.
    let logged_at = m["round"]["logged_log_index"].as_u64().unwrap();
    for id in ["edge-a1", "edge-a2", "edge-b1", "edge-b2"] {
        let at = m["round"]["commitments"][id]["reveal"]["log_index"]
            .as_u64()
            .unwrap();
        assert!(at > logged_at, "{id}: reveal at {at}, round at {logged_at}");
    }
}
