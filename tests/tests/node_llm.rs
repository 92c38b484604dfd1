//! The LLM judge of a real `panel node run` process against a TEST DOUBLE of an
//! OpenAI-compatible chat-completions endpoint (no model endpoint is reachable from the
//! test machine). The double is a minimal HTTP/1.1 server started inside the test; it
//! plays a position-biased model and fails the first request to exercise the retry.

mod node_support;

use std::sync::{Arc, Mutex};

use node_support::*;
use panel_proto::pb::{Decision, ExpectedAnswer, MotionKind, RevealRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request the double received.
#[derive(Debug, Clone)]
struct Seen {
    authorization: Option<String>,
    path: String,
    body: Value,
}

/// Test double of a chat-completions endpoint.
struct FakeChatCompletionsEndpoint {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn completion(content: &str) -> String {
    json!({
        "id": "cmpl-double", "object": "chat.completion", "model": "test-double",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]
    })
    .to_string()
}

/// The double's "model": prefers whichever item is listed first (position bias), more
/// strongly for the candidate; answers relevance 3; talks nonsense about motion "llm-bad".
fn model(index: usize, body: &Value) -> (u16, String) {
    if index == 0 {
        return (503, "{\"error\":\"warming up\"}".into());
    }
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if user.contains("llm-bad") {
        return (200, completion("I think it is good."));
    }
    if user.contains("FIRST (candidate)") {
        return (
            200,
            completion(r#"{"probability_first":0.9,"rationale":"first one is stronger"}"#),
        );
    }
    if user.contains("FIRST (incumbent)") {
        return (
            200,
            completion(r#"{"probability_first":0.3,"rationale":"first one is weaker"}"#),
        );
    }
    (
        200,
        completion(
            r#"{"decision":"NONE","probability":0.7,"rationale":"bears on the resolution","relevance":3}"#,
        ),
    )
}

impl FakeChatCompletionsEndpoint {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // Read one request: headers, then Content-Length bytes of body.
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let header = |name: &str| {
                            head.lines().find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                            })
                        };
                        let len: usize = header("content-length")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            let mut chunk = [0u8; 4096];
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body: Value = serde_json::from_slice(&buf[head_end..head_end + len])
                            .unwrap_or(Value::Null);
                        buf.drain(..head_end + len);
                        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                        let index = {
                            let mut l = log.lock().unwrap();
                            l.push(Seen {
                                authorization: header("authorization"),
                                path,
                                body: body.clone(),
                            });
                            l.len() - 1
                        };
                        let (status, text) = model(index, &body);
                        let reply = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                            text.len()
                        );
                        if sock.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { port, seen }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_asks_both_orders_retries_and_signs() {
    let fake = FakeChatCompletionsEndpoint::start().await;
    let root = tempfile::tempdir().unwrap();
    let judge = format!(
        "[judge]\nkind = \"llm\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"test-double\"\n\
         api_key_env = \"PANEL_TEST_LLM_KEY\"\nbackoff_ms = 20\ntimeout_ms = 5000\nmax_retries = 3",
        fake.port
    );
    let node = start_node_env(
        root.path(),
        "llm",
        &judge,
        "",
        &[("PANEL_TEST_LLM_KEY", "sekrit")],
    )
    .await;

    let merge = merge_motion("llm-1", state(1), vec![node.seat()], 4_000);
    let mut relevance = merge_motion("llm-2", state(2), vec![node.seat()], 4_000);
    relevance.kind = MotionKind::AssignRelevance as i32;
    relevance.projection.as_mut().unwrap().items.truncate(1);
    relevance.projection.as_mut().unwrap().expected = Some(ExpectedAnswer {
        relevance: Some(1),
        ..Default::default()
    });
    let bad = merge_motion("llm-bad", state(3), vec![node.seat()], 4_000);
    let mut bad = bad;
    bad.kind = MotionKind::AssignRelevance as i32;
    bad.projection.as_mut().unwrap().items.truncate(1);

    let mut c = node.client().await;
    c.commit(sign(merge.clone()))
        .await
        .expect("merge committed after one retry");
    c.commit(sign(relevance.clone()))
        .await
        .expect("relevance committed");
    let err = c.commit(sign(bad)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err}");
    assert!(err.message().contains("failed after 4 attempts"), "{err}");
    assert!(err.message().contains("expected one JSON object"), "{err}");

    wait_past(merge.commit_deadline_unix_ms).await;
    let r = c
        .reveal(RevealRequest {
            motion_id: "llm-1".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let ruling = panel_proto::verify_ruling(
        r.signed_ruling.as_ref().unwrap(),
        &panel_proto::VerifiedMemo::default(),
    )
    .unwrap()
    .clone();
    // (0.9 + (1 - 0.3)) / 2: the position preference cancels, the content preference stays.
    assert!(
        (ruling.probability - 0.8).abs() < 1e-12,
        "{}",
        ruling.probability
    );
    assert_eq!(ruling.decision, Decision::Accept as i32);
    assert!(ruling.rationale.contains("[order candidate,incumbent]"));
    assert!(ruling.rationale.contains("[order incumbent,candidate]"));
    let r = c
        .reveal(RevealRequest {
            motion_id: "llm-2".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let ruling = r.signed_ruling.unwrap().ruling.unwrap();
    assert_eq!(
        ruling.relevance,
        Some(3),
        "the model's answer, not the simulation hint"
    );

    let seen = fake.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer sekrit"))
    );
    assert!(seen.iter().all(|s| s.path == "/v1/chat/completions"));
    // The first question asked for token log-probabilities (the 503 and its retry); the
    // double gives none, so every later request asked for the JSON answer.
    let (probes, stated): (Vec<&Seen>, Vec<&Seen>) =
        seen.iter().partition(|s| s.body["logprobs"] == true);
    assert_eq!(probes.len(), 2, "{probes:?}");
    assert!(
        stated
            .iter()
            .all(|s| s.body["response_format"]["type"] == "json_schema")
    );
    assert!(
        seen.iter()
            .all(|s| !s.body.to_string().contains("\"expected\"")),
        "truth hint leaked to the model"
    );
    let users: Vec<String> = seen
        .iter()
        .map(|s| {
            s.body["messages"][1]["content"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(users.iter().any(|u| u.contains("FIRST (candidate)")));
    assert!(users.iter().any(|u| u.contains("FIRST (incumbent)")));
}
