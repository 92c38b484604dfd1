//! The human judge: a Commit waits in the durable pending queue until an operator answers
//! with `panel node pending` / `panel node rule` (the real binary).

mod node_support;

use node_support::*;
use panel_proto::pb::{Decision, MotionKind, RevealRequest};
use panel_tests::panel;

fn run_cli(args: &[&str]) -> std::process::Output {
    panel().args(args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_answers_pending_motions_from_the_command_line() {
    let root = tempfile::tempdir().unwrap();
    let mut node = start_node(root.path(), "human", "[judge]\nkind = \"human\"", "").await;
    let endpoint = node.endpoint();

    let mut m = merge_motion("h-1", state(1), vec![node.seat()], 8_000);
    m.kind = MotionKind::ResolveChallenge as i32;
    m.projection.as_mut().unwrap().expected = None;
    let mut client = node.client().await;
    let waiting = tokio::spawn({
        let m = m.clone();
        async move { client.commit(sign(m)).await }
    });

    // The motion shows up in the queue.
    let mut listed = String::new();
    for _ in 0..100 {
        let out = run_cli(&["node", "pending", "--node", &endpoint]);
        listed = String::from_utf8_lossy(&out.stdout).into_owned();
        if listed.contains("h-1") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        listed.contains("h-1") && listed.contains("resolve-challenge"),
        "{listed}"
    );

    // SIGTERM while a Commit waits for the human: the call is released, the node exits
    // cleanly, and the motion is still pending after the restart (durable queue).
    let status = node.terminate();
    assert!(status.success(), "{status}");
    let released = waiting.await.unwrap();
    assert!(
        released.is_err(),
        "waiting commit must not succeed without an answer"
    );
    node.restart().await;
    let endpoint = node.endpoint();
    let out = run_cli(&["node", "pending", "--node", &endpoint]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("h-1"),
        "pending lost in restart"
    );
    let mut client = node.client().await;
    let waiting = tokio::spawn({
        let m = m.clone();
        async move { client.commit(sign(m)).await }
    });

    // A decision that does not fit the motion kind is refused with the allowed set.
    let out = run_cli(&[
        "node",
        "rule",
        "h-1",
        "--decision",
        "ACCEPT",
        "--probability",
        "0.9",
        "--node",
        &endpoint,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UPHOLD, DISMISS"), "{err}");
    let out = run_cli(&[
        "node",
        "rule",
        "h-1",
        "--decision",
        "MAYBE",
        "--probability",
        "0.9",
        "--node",
        &endpoint,
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not one of"));
    let out = run_cli(&[
        "node",
        "rule",
        "h-1",
        "--decision",
        "UPHOLD",
        "--probability",
        "1.7",
        "--node",
        &endpoint,
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside [0, 1]"));

    let out = run_cli(&[
        "node",
        "rule",
        "h-1",
        "--decision",
        "UPHOLD",
        "--probability",
        "0.85",
        "--rationale",
        "The response concedes the counterexample.",
        "--node",
        &endpoint,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let commitment = waiting
        .await
        .unwrap()
        .expect("commit returns once answered")
        .into_inner();
    assert_eq!(commitment.arbiter_key, node.public_key());

    let out = run_cli(&["node", "pending", "--node", &endpoint]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no pending motions"));
    let out = run_cli(&[
        "node",
        "rule",
        "h-1",
        "--decision",
        "DISMISS",
        "--probability",
        "0.1",
        "--node",
        &endpoint,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not pending"),
        "answered twice"
    );

    let err = node
        .client()
        .await
        .reveal(RevealRequest {
            motion_id: "h-1".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("reveal before the commit window closes")
    );
    // The stored commitment is returned again for the same motion.
    let again = node
        .client()
        .await
        .commit(sign(m.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again, commitment);

    wait_past(m.commit_deadline_unix_ms).await;
    let reveal = node
        .client()
        .await
        .reveal(RevealRequest {
            motion_id: "h-1".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let r = panel_proto::verify_ruling(
        reveal.signed_ruling.as_ref().unwrap(),
        &panel_proto::VerifiedMemo::default(),
    )
    .unwrap();
    assert_eq!(r.decision, Decision::Uphold as i32);
    assert_eq!(r.probability, 0.85);
    assert_eq!(r.rationale, "The response concedes the counterexample.");
}
