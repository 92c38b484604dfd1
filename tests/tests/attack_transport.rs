//! Attacks on the transport (docs/SECURITY.md, "Transport"), against real replicas and a
//! real node running mutual TLS with certificates issued by two organisations' authorities.
//! Each test fails if the hole reopens:
//! - plaintext, or a certificate from an authority the federation does not list, gets no
//!   connection at all;
//! - a certificate from a listed authority that the charter does not pin as a replica
//!   cannot call the `Replica` service (a forged `AppendEntries` or `Vote` changes nothing);
//! - only the charter's operators may call `Admin`, and even they may name only the
//!   charter's replicas (no rogue replica joins);
//! - an arbiter node judges and reveals only for the charter's replicas;
//! - a half-configured or plaintext-on-the-network process refuses to start, naming the fix.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::admin_client::AdminClient;
use panel_coordinator::pb::replica::RaftPayload;
use panel_coordinator::pb::replica::replica_client::ReplicaClient;
use panel_proto::pb::Motion;
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_tests::tls::{issue, reader, start_cluster, tls};
use panel_tests::{ChildGuard, free_port, panel};
use panel_transport::pki;
use panel_transport::{TlsMaterial, Transport};
use tonic::Code;

async fn status(t: &Transport, addr: &str) -> Result<pb::StatusReply, String> {
    panel_coordinator::client::status(t, addr)
        .await
        .map_err(|e| e.to_string())
}

/// The leader's status, once there is one.
async fn leader_status(t: &Transport, addr: &str) -> pb::StatusReply {
    let start = Instant::now();
    loop {
        if let Ok(s) = status(t, addr).await
            && s.has_leader
            && !s.leader_addr.is_empty()
        {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_foreign_certificates_get_no_connection() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    let client = tls(&c.pki.dir(pki::LOCAL_CLIENT));
    leader_status(&client, &c.addrs[0]).await;

    // Positive controls: a known client and an anonymous reader may read.
    assert!(status(&client, &c.addrs[1]).await.is_ok());
    assert!(
        status(&reader(root.path(), &c.pki), &c.addrs[1])
            .await
            .is_ok()
    );

    // Plaintext to a TLS replica: no answer.
    let e = status(&Transport::InsecureLoopback, &c.addrs[1]).await;
    assert!(e.is_err(), "a plaintext client was answered: {e:?}");

    // A certificate from an authority outside the federation, and a client trusting
    // only that authority: the handshake fails both ways.
    let foreign = pki::issue(&pki::local_plan(3, &[]), &root.path().join("foreign")).unwrap();
    let e = status(&tls(&foreign.dir(pki::LOCAL_CLIENT)), &c.addrs[1]).await;
    assert!(e.is_err(), "a foreign certificate was answered: {e:?}");
}

fn forged_vote() -> RaftPayload {
    // A vote request from a fictitious replica 7 in a far-future term: accepted, it would
    // force an election.
    RaftPayload {
        json: br#"{"vote":{"leader_id":{"term":99,"node_id":7},"committed":false},"last_log_id":null}"#
            .to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_charters_replicas_may_call_the_replica_service() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    let client = tls(&c.pki.dir(pki::LOCAL_CLIENT));
    let before = leader_status(&client, &c.addrs[0]).await;
    let target = &c.addrs[1];

    let callers = [
        (
            "a known client",
            tls(&c.pki.dir(pki::LOCAL_CLIENT)),
            Code::PermissionDenied,
        ),
        (
            "an operator",
            tls(&c.pki.dir(&pki::operator_dir_name("southbank"))),
            Code::PermissionDenied,
        ),
        (
            "an anonymous reader",
            reader(root.path(), &c.pki),
            Code::Unauthenticated,
        ),
    ];
    for (who, t, code) in callers {
        let mut r = ReplicaClient::new(t.endpoint(target).unwrap().connect_lazy());
        let e = r.vote(forged_vote()).await.expect_err(who);
        assert_eq!(e.code(), code, "{who}: {e:?}");
        assert!(
            e.message().contains("Replica service"),
            "{who}: {}",
            e.message()
        );
        let e = r
            .append_entries(RaftPayload {
                json: b"{}".to_vec(),
            })
            .await
            .expect_err(who);
        assert_eq!(e.code(), code, "{who}: {e:?}");
        let e = r
            .install_snapshot(RaftPayload {
                json: b"{}".to_vec(),
            })
            .await
            .expect_err(who);
        assert_eq!(e.code(), code, "{who}: {e:?}");
    }

    // Positive control: replica 3's own certificate passes the guard (the malformed
    // payload is then refused by the decoder, not by the guard).
    let mut r = ReplicaClient::new(
        tls(&c.pki.dir(&pki::replica_dir_name(3)))
            .endpoint(target)
            .unwrap()
            .connect_lazy(),
    );
    let e = r
        .vote(RaftPayload {
            json: b"not json".to_vec(),
        })
        .await
        .expect_err("malformed payload");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");

    // The forged votes changed nothing: same leader, same term.
    let after = leader_status(&client, &c.addrs[0]).await;
    assert_eq!(
        (after.leader_id, after.term),
        (before.leader_id, before.term)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_operators_may_change_membership_and_only_to_charter_replicas() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    let client = tls(&c.pki.dir(pki::LOCAL_CLIENT));
    let leader = leader_status(&client, &c.addrs[0]).await.leader_addr;
    let rogue = format!("127.0.0.1:{}", free_port());
    let learner = || pb::AddLearnerRequest {
        member: Some(pb::Member {
            id: 4,
            addr: rogue.clone(),
        }),
    };

    for (who, t, code) in [
        ("a known client", client.clone(), Code::PermissionDenied),
        (
            "a replica",
            tls(&c.pki.dir(&pki::replica_dir_name(2))),
            Code::PermissionDenied,
        ),
        (
            "an anonymous reader",
            reader(root.path(), &c.pki),
            Code::Unauthenticated,
        ),
    ] {
        let mut admin = AdminClient::new(t.endpoint(&leader).unwrap().connect_lazy());
        let e = admin.add_learner(learner()).await.expect_err(who);
        assert_eq!(e.code(), code, "{who}: {e:?}");
        assert!(
            e.message().contains("Admin service"),
            "{who}: {}",
            e.message()
        );
        let e = admin
            .change_membership(pb::ChangeMembershipRequest {
                voters: vec![1],
                retain: false,
            })
            .await
            .expect_err(who);
        assert_eq!(e.code(), code, "{who}: {e:?}");
    }

    // An operator passes the guard, but cannot bring in a replica the charter does not
    // list, nor make one a voter.
    let operator = tls(&c.pki.dir(&pki::operator_dir_name("southbank")));
    let mut admin = AdminClient::new(operator.endpoint(&leader).unwrap().connect_lazy());
    let e = admin
        .add_learner(learner())
        .await
        .expect_err("rogue learner");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("not in the federation charter"),
        "{}",
        e.message()
    );
    let e = admin
        .change_membership(pb::ChangeMembershipRequest {
            voters: vec![1, 2, 3, 4],
            retain: false,
        })
        .await
        .expect_err("rogue voter");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    // Re-initialising is refused for the group's own reason, not the guard's (a voter
    // set of two organisations passes the charter's check, attack_membership.rs).
    let e = admin
        .init(pb::InitRequest {
            members: (1..=2)
                .map(|id| pb::Member {
                    id,
                    addr: c.addrs[id as usize - 1].clone(),
                })
                .collect(),
        })
        .await
        .expect_err("second init");
    assert_ne!(e.code(), Code::PermissionDenied, "{e:?}");
    // And a first voter set of one organisation is refused by the charter.
    let e = admin
        .init(pb::InitRequest {
            members: vec![pb::Member {
                id: 1,
                addr: c.addrs[0].clone(),
            }],
        })
        .await
        .expect_err("one-organisation init");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("distinct organisation"),
        "{}",
        e.message()
    );

    let s = leader_status(&client, &c.addrs[0]).await;
    assert_eq!(s.voters, vec![1, 2, 3]);
    assert!(s.learners.is_empty(), "{:?}", s.learners);
}

/// Runs `panel coordinator run` with `args` and returns its stderr; it must exit non-zero
/// promptly (bounded wait, not a timing assertion).
fn refused_start(args: &[&str], extra: &[PathBuf]) -> String {
    let mut child = panel()
        .args(["coordinator", "run"])
        .args(args)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run panel");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(!status.success(), "{args:?} started");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?} kept running: a misconfigured replica must refuse to start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn misconfigured_replicas_refuse_to_start_and_name_the_fix() {
    let root = tempfile::tempdir().unwrap();
    let issued = issue(root.path(), &[]);
    let data = root.path().join("data");
    let d = data.to_str().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let base = ["--id", "1", "--listen", &listen, "--data-dir", d];
    fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
        base.iter().chain(more).copied().collect()
    }

    let e = refused_start(&base, &[]);
    assert!(
        e.contains("--tls DIR") && e.contains("--insecure-loopback"),
        "{e}"
    );

    let public = format!("0.0.0.0:{}", free_port());
    let e = refused_start(
        &[
            "--id",
            "1",
            "--listen",
            &public,
            "--data-dir",
            d,
            "--insecure-loopback",
        ],
        &[],
    );
    assert!(e.contains("loopback addresses only"), "{e}");

    let r1 = issued.dir(&pki::replica_dir_name(1));
    let charter = issued.charter_path();
    let e = refused_start(
        &["--id", "2", "--listen", &listen, "--data-dir", d, "--tls"],
        &[r1.clone(), "--charter".into(), charter.clone()],
    );
    assert!(e.contains("not replica 2's"), "{e}");

    let e = refused_start(&with(&base, &["--tls"]), std::slice::from_ref(&r1));
    assert!(e.contains("charter"), "{e}");

    let e = refused_start(
        &with(&base, &["--insecure-loopback", "--tls"]),
        std::slice::from_ref(&r1),
    );
    assert!(e.contains("exclude each other"), "{e}");

    // Half an identity: a certificate without its key.
    let half = root.path().join("half");
    std::fs::create_dir_all(&half).unwrap();
    for f in ["ca.pem", "cert.pem"] {
        std::fs::copy(r1.join(f), half.join(f)).unwrap();
    }
    let e = refused_start(
        &with(&base, &["--tls"]),
        &[half, "--charter".into(), charter],
    );
    assert!(
        e.contains("half-configured") && e.contains("key.pem"),
        "{e}"
    );
    assert!(TlsMaterial::load(&r1).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_judges_and_reveals_only_for_the_charters_replicas() {
    let root = tempfile::tempdir().unwrap();
    let issued = issue(root.path(), &[("arb-x", "northwind")]);
    let dir = root.path().join("node");
    std::fs::create_dir_all(&dir).unwrap();
    let keygen = panel()
        .args(["node", "keygen", "--out"])
        .arg(dir.join("arbiter.key"))
        .output()
        .unwrap();
    assert!(keygen.status.success());
    std::fs::write(
        dir.join("profiles.toml"),
        "[profiles.perfect]\naccuracy = 1.0\nseed = 1\n",
    )
    .unwrap();
    let port = free_port();
    std::fs::write(
        dir.join("node.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
             organisation = \"northwind\"\nmodel_family = \"scripted\"\n\n[judge]\nkind = \"scripted\"\n\
             profiles = \"profiles.toml\"\nprofile = \"perfect\"\n\n[transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
            issued.dir(&pki::node_dir_name("arb-x")).display(),
            issued.charter_path().display()
        ),
    )
    .unwrap();
    let mut cmd = panel();
    cmd.args(["node", "run", "--config"])
        .arg(dir.join("node.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _node = ChildGuard::spawn("tls node", cmd);
    let addr = format!("127.0.0.1:{port}");

    let client = tls(&issued.dir(pki::LOCAL_CLIENT));
    let connect = |t: &Transport| ArbiterNodeClient::new(t.endpoint(&addr).unwrap().connect_lazy());
    let start = Instant::now();
    while connect(&client)
        .identity(panel_proto::pb::IdentityRequest {})
        .await
        .is_err()
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "node never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A client of the federation, and an operator: not replicas, so no judging, no reveals.
    for t in [
        client.clone(),
        tls(&issued.dir(&pki::operator_dir_name("southbank"))),
    ] {
        let mut n = connect(&t);
        let e = n.commit(Motion::default()).await.expect_err("commit");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message().contains("federation charter"),
            "{}",
            e.message()
        );
        let e = n
            .reveal(panel_proto::pb::RevealRequest {
                motion_id: "m".into(),
                ..Default::default()
            })
            .await
            .expect_err("reveal");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    }
    // Without a certificate the node does not even complete the handshake.
    let anonymous = connect(&reader(root.path(), &issued))
        .identity(panel_proto::pb::IdentityRequest {})
        .await;
    assert!(anonymous.is_err(), "an anonymous caller was answered");
    // Plaintext: no answer either.
    let plain = connect(&Transport::InsecureLoopback)
        .identity(panel_proto::pb::IdentityRequest {})
        .await;
    assert!(plain.is_err(), "a plaintext caller was answered");

    // A replica passes the guard: an empty motion is refused on its merits.
    let e = connect(&tls(&issued.dir(&pki::replica_dir_name(1))))
        .commit(Motion::default())
        .await
        .expect_err("empty motion");
    assert!(
        !e.message().contains("federation charter"),
        "{}",
        e.message()
    );
}
