//! Three real `panel node run` processes rule on motions, reveal after the window and
//! exchange their signed rulings; the coordinator's commit-reveal rule
//! (`CommitRevealBook`) accepts what they produce. Also: batches, health, graceful
//! shutdown and durability across a restart.

mod node_support;

use std::time::{Duration, Instant};

use node_support::*;
use panel_proto::commit_reveal::{self, CommitRevealBook, MotionWindow};
use panel_proto::pb::{Decision, ListRulingsRequest, RecordSource, RevealRequest};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_rule_and_exchange_rulings() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for name in ["n1", "n2", "n3"] {
        nodes.push(start_node(root.path(), name, SCRIPTED_PERFECT, "").await);
    }
    let panel: Vec<_> = nodes.iter().map(|n| n.seat()).collect();
    let motion = merge_motion("m-1", state(7), panel.clone(), 3_000);
    let mut book = CommitRevealBook::new();
    let memo = panel_proto::VerifiedMemo::default();
    book.open(MotionWindow::from_motion(&motion).unwrap())
        .unwrap();

    // Commit on every node; the coordinator's book accepts every commitment.
    let mut commitments = Vec::new();
    for n in &nodes {
        let c = n
            .client()
            .await
            .commit(sign(motion.clone()))
            .await
            .expect("commit")
            .into_inner();
        assert_eq!(c.arbiter_key, n.public_key());
        commit_reveal::verify_commitment(&c, &memo).expect("commitment signature verifies");
        book.commit(&c, c.committed_at_unix_ms, &memo)
            .expect("book accepts commitment");
        commitments.push(c);
    }
    // Idempotent: the same motion again returns the same commitment.
    let again = nodes[0]
        .client()
        .await
        .commit(sign(motion.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again, commitments[0]);

    // Nothing is visible before the window closes.
    let err = nodes[0]
        .client()
        .await
        .reveal(RevealRequest {
            motion_id: "m-1".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(
        err.message()
            .contains("reveal before the commit window closes"),
        "{err}"
    );
    let own = nodes[0]
        .client()
        .await
        .list_rulings(ListRulingsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .records;
    assert_eq!(own.len(), 1);
    assert!(
        own[0].signed_ruling.is_none() && own[0].salt.is_empty(),
        "unrevealed ruling leaked"
    );

    wait_past(motion.commit_deadline_unix_ms).await;
    for n in &nodes {
        let r = n
            .client()
            .await
            .reveal(RevealRequest {
                motion_id: "m-1".into(),
                motion_digest: Vec::new(),
            })
            .await
            .expect("reveal")
            .into_inner();
        let ruling = r.signed_ruling.as_ref().unwrap().ruling.as_ref().unwrap();
        assert_eq!(
            ruling.decision,
            Decision::Accept as i32,
            "perfect judge follows the hint"
        );
        assert_eq!(ruling.state_hash, state(7));
        book.reveal(&r, now_ms(), &memo)
            .expect("book accepts the reveal");
    }
    assert_eq!(book.revealed("m-1").len(), 3);

    // Every node ends up holding the two peers' rulings, each strictly verifiable.
    for n in &nodes {
        let deadline = Instant::now() + Duration::from_secs(30);
        let peers = loop {
            let recs = n
                .client()
                .await
                .list_rulings(ListRulingsRequest {
                    source: RecordSource::Peer as i32,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
                .records;
            if recs.len() == 2 || Instant::now() > deadline {
                break recs;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(
            peers.len(),
            2,
            "node {} holds {} peer rulings",
            n.name,
            peers.len()
        );
        for rec in &peers {
            let sr = rec.signed_ruling.as_ref().unwrap();
            let r = panel_proto::verify_ruling(sr, &memo).expect("stored peer ruling verifies");
            assert_ne!(r.arbiter_key, n.public_key());
            commit_reveal::check_opens(rec.commitment.as_ref().unwrap(), sr, &rec.salt, &memo)
                .expect("stored peer ruling opens its commitment");
        }
    }

    // Graceful shutdown on SIGTERM, and everything is still there after a restart.
    let status = nodes[1].terminate();
    assert!(status.success(), "node exited with {status}");
    nodes[1].restart().await;
    let all = nodes[1]
        .client()
        .await
        .list_rulings(ListRulingsRequest {
            motion_id: "m-1".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .records;
    assert_eq!(all.len(), 3, "own + 2 peers survive a restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_health_and_reflection() {
    let root = tempfile::tempdir().unwrap();
    let node = start_node(root.path(), "b1", SCRIPTED_PERFECT, "").await;

    let channel = tonic::transport::Endpoint::from_shared(node.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let resp = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "crucible.panel.v1.ArbiterNode".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        resp.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    let deadline_in = 4_000;
    let motions: Vec<_> = (0..40)
        .map(|i| {
            merge_motion(
                &format!("bm-{i}"),
                state(i as u8),
                vec![node.seat()],
                deadline_in,
            )
        })
        .collect();
    let commit_deadline = motions[0].commit_deadline_unix_ms;
    let mut bad = motions[0].clone();
    bad.motion_id = "bm-bad".into();
    bad.state_hash = vec![1, 2, 3];
    let mut input = motions.clone();
    input.push(bad);
    let results: Vec<_> = node
        .client()
        .await
        .commit_batch(tokio_stream::iter(input.into_iter().map(sign)))
        .await
        .unwrap()
        .into_inner()
        .collect_all()
        .await;
    assert_eq!(results.len(), 41);
    for r in &results {
        if r.motion_id == "bm-bad" {
            assert_eq!(r.code, Code::InvalidArgument as i32);
            assert!(r.error.contains("state_hash"), "{}", r.error);
        } else {
            assert_eq!(r.code, 0, "{}: {}", r.motion_id, r.error);
            assert!(r.commitment.is_some());
        }
    }
    wait_past(commit_deadline).await;
    let reqs: Vec<_> = (0..40)
        .map(|i| RevealRequest {
            motion_id: format!("bm-{i}"),
            motion_digest: Vec::new(),
        })
        .collect();
    let reveals: Vec<_> = node
        .client()
        .await
        .reveal_batch(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner()
        .collect_all()
        .await;
    assert_eq!(reveals.len(), 40);
    let signed: Vec<_> = reveals
        .iter()
        .map(|r| {
            r.reveal
                .as_ref()
                .and_then(|x| x.signed_ruling.clone())
                .expect("revealed")
        })
        .collect();
    assert!(
        panel_proto::verify_rulings_batch(&signed, &panel_proto::VerifiedMemo::default())
            .iter()
            .all(|r| r.is_ok())
    );
    // Server reflection lists the node's services.
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let channel = tonic::transport::Endpoint::from_shared(node.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut replies = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::iter(vec![req]))
        .await
        .unwrap()
        .into_inner();
    let reply = replies
        .message()
        .await
        .unwrap()
        .expect("one reflection reply");
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
        panic!("unexpected reflection reply {reply:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.iter().any(|n| n == "crucible.panel.v1.ArbiterNode"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "grpc.health.v1.Health"),
        "{names:?}"
    );
}

/// Collects a response stream into its items (panics on a stream error).
trait CollectAll<T> {
    async fn collect_all(self) -> Vec<T>;
}

impl<T> CollectAll<T> for tonic::Streaming<T> {
    async fn collect_all(mut self) -> Vec<T> {
        let mut out = Vec::new();
        while let Some(item) = self.message().await.expect("stream item") {
            out.push(item);
        }
        out
    }
}
