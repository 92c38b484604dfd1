//! Organisation pools over a real chartered group (docs/coordinator/state-machine.md
//! "Organisation pools", docs/SECURITY.md "Exams"): three TLS replicas of two member
//! organisations (northwind: replicas 1 and 3; southbank: replica 2), each replica given
//! only its own organisation's private pool. A northwind arbiter is examined on
//! southbank's pool, which only southbank's replica holds: whichever replica leads, the
//! pool is offered and sealed by southbank's replica, and its key is handed over only
//! after the logged close. Before, every replica held every pool, so northwind's operators
//! could read every gold their own arbiters were asked.

use std::path::Path;
use std::time::Duration;

use panel_coordinator::pb::replica::replica_client::ReplicaClient;
use panel_coordinator::pb::replica::{ExamPoolKeyRequest, OfferExamPoolRequest};
use panel_machine::features::exam_sitting::PrivatePool;
use panel_tests::run_folder::{log_file, logs, poll};
use panel_tests::tls::{TlsCluster, start_configured, tls};
use panel_tests::tls_node::{self, NodeSpec, cli_until_ok};
use panel_transport::{Peer, Transport, pki};
use tonic::Code;

const SHIPPED: &str = include_str!("../../exams/default-v2.jsonl");
const ARBITER: &str = "nw-judge";

/// A private pool: the shipped one with one question reworded by `tag`.
fn pool_text(tag: &str) -> String {
    SHIPPED.replacen(
        "Should this challenge be upheld?",
        &format!("Should this challenge be upheld ({tag})?"),
        1,
    )
}

/// A real federation (not a practice group, so rule set 21 requires organisation pools),
/// its replicas each given their own organisation's pool.
fn start(root: &Path) -> TlsCluster {
    let mut plan = pki::local_plan(3, &[(ARBITER, "northwind")]);
    plan.exam = None;
    let issued = pki::issue(&plan, &root.join("pki")).expect("issue");
    let pools = [
        ("northwind", pool_text("nw")),
        ("southbank", pool_text("sb")),
    ];
    for (org, text) in &pools {
        std::fs::write(root.join(format!("{org}.jsonl")), text).unwrap();
    }
    start_configured(root, issued, |id, cmd| {
        let org = if id == 2 { "southbank" } else { "northwind" };
        let config = root.join(format!("r{id}.toml"));
        let pool = root.join(format!("{org}.jsonl"));
        std::fs::write(&config, format!("exam_pools = [\"{}\"]\n", pool.display())).unwrap();
        cmd.arg("--config").arg(&config).args([
            "--exam-window-ms",
            "4000",
            "--reveal-window-ms",
            "2000",
        ]);
        let (out, err) = log_file(root, &format!("replica-{id}"));
        cmd.env("RUST_LOG", "info").stdout(out).stderr(err);
    })
}

/// `who` (a TLS identity folder) calling replica `target`'s `Replica` service, pinned to
/// its charter certificate.
async fn replica_as(
    c: &TlsCluster,
    who: &str,
    target: u64,
) -> ReplicaClient<tonic::transport::Channel> {
    let t = Transport::from_flags(Some(&c.pki.dir(who)), Some(&c.pki.charter_path()), false)
        .expect("transport");
    let endpoint = t
        .endpoint_pinned(&c.addrs[target as usize - 1], Peer::Replica(target))
        .expect("endpoint");
    ReplicaClient::new(endpoint.connect().await.expect("connect"))
}

#[test]
fn an_arbiter_is_examined_on_another_organisations_pool_that_only_its_replicas_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let c = start(root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    cli_until_ok(root, &c, &["arbiter", "list", "--json"]);

    // Northwind's replica 1 (or its operator, holding its certificate) asks southbank's
    // replica for the key of a sitting that is not closed: refused, no key.
    rt.block_on(async {
        let mut r = replica_as(&c, &pki::replica_dir_name(1), 2).await;
        let e = r
            .exam_pool_key(ExamPoolKeyRequest { sitting: 1 })
            .await
            .expect_err("no closed sitting, no key");
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        // A client certificate is no replica: the Replica service is not its to call.
        let client = tls(&c.pki.dir(pki::LOCAL_CLIENT));
        let mut r = ReplicaClient::new(client.endpoint(&c.addrs[1]).unwrap().connect_lazy());
        let e = r
            .offer_exam_pool(OfferExamPoolRequest { sitting: 1 })
            .await
            .expect_err("a client asks for a pool");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    });

    let dir = root.join("node");
    tls_node::register(root, &c, &dir, ARBITER, "northwind");
    let node = NodeSpec {
        arbiter: ARBITER,
        organisation: "northwind",
        identity: &pki::node_dir_name(ARBITER),
        log: "node",
    };
    let _node = tls_node::start_node(root, &c, &dir, &node, &[c.addrs.join(",").as_str()]);

    // The exam is scored on southbank's pool, whatever replica leads.
    let southbank = PrivatePool::load(&pool_text("sb")).unwrap().public_id;
    let record = poll(
        root,
        "the arbiter's exam is scored",
        Duration::from_secs(150),
        || {
            let out = cli_until_ok(root, &c, &["arbiter", "show", ARBITER, "--json"]);
            let v: serde_json::Value = serde_json::from_str(&out).ok()?;
            let exam = v.get("exam").filter(|e| !e.is_null())?.clone();
            Some(exam)
        },
    );
    let text = record.to_string();
    assert!(
        text.contains(&southbank),
        "examined on southbank's pool {southbank}: {record}\n{}",
        logs(root)
    );
    // How the test configured it (not a check of the system): northwind's replicas were
    // given northwind's pool only.
    for id in [1, 3] {
        let config = std::fs::read_to_string(root.join(format!("r{id}.toml"))).unwrap();
        assert!(!config.contains("southbank"), "{config}");
    }
    // Southbank's only pool is spent: asked by northwind's replica 1 for the next
    // sitting, it offers none (NOT_FOUND when replica 1 leads, FAILED_PRECONDITION when
    // it does not: only the leader is answered).
    rt.block_on(async {
        let mut r = replica_as(&c, &pki::replica_dir_name(1), 2).await;
        let e = r
            .offer_exam_pool(OfferExamPoolRequest { sitting: 2 })
            .await
            .expect_err("spent, or not asked by the leader");
        assert!(
            matches!(e.code(), Code::NotFound | Code::FailedPrecondition),
            "{e:?}"
        );
    });
}
