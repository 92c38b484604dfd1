//! A TEST DOUBLE of an OpenAI-compatible chat-completions endpoint, for the cross-process
//! tests of LLM judges (`llm_panel.rs`). No model endpoint is reachable from a test machine,
//! so this stands in for one, as a real one behaves on the wire:
//!
//! * real HTTPS (rustls, ring) under a test authority made with rcgen; the nodes trust it
//!   through `ca_file`, exactly as an operator trusts a private endpoint;
//! * every answer after 1 to 3 s (a pseudo-random delay per request);
//! * the first attempt of a request fails for about a third of the bodies it sees, in one
//!   of three ways: no answer before the client's timeout, an answer whose content is not
//!   JSON, or a reply that is not JSON at all; the retry of the same body succeeds;
//! * `usage` token counts, a `model` and a `system_fingerprint` in every reply;
//! * a "model" that is well calibrated on the shipped exam pool (it knows the pool's gold
//!   answers, as a good model knows the facts), prefers the candidate in pairwise motions,
//!   and verifies a tier only when the node gave it the source text.
//!
//! It also serves the cited sources (`/sources/NAME`, HTML) over the same HTTPS, so tier
//! verification retrieves through rustls with the node's `[retrieval] ca_file`.
//! Every request is logged for the test's assertions.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use calibration::exam::Gold;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The model name the double reports (`model` in every reply).
pub const REPORTED_MODEL: &str = "double-llm-2026-05";
/// The `system_fingerprint` the double reports.
pub const FINGERPRINT: &str = "fp_test_double";
/// The phrase the source page holds; a verify-tier ruling that quotes it read the source.
pub const SOURCE_PHRASE: &str = "output per hour worked rose 4.1 per cent";

/// How one request was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    Answered,
    /// No answer until long after any client timeout.
    Stalled,
    /// A chat completion whose content is prose, not the requested JSON.
    MalformedContent,
    /// A reply body that is not JSON at all.
    MalformedReply,
    /// A source page.
    Source,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
    pub served: Served,
    pub delay_ms: u64,
}

impl Request {
    /// The user message of a chat request.
    pub fn user(&self) -> &str {
        self.body["messages"][1]["content"].as_str().unwrap_or("")
    }
}

/// The running double.
pub struct ChatCompletionsDouble {
    pub port: u16,
    /// PEM of the authority that issued the double's certificate (the nodes' `ca_file`).
    pub ca_file: PathBuf,
    pub log: Arc<Mutex<Vec<Request>>>,
}

impl ChatCompletionsDouble {
    pub fn base_url(&self) -> String {
        format!("https://127.0.0.1:{}/v1", self.port)
    }

    pub fn source_url(&self, name: &str) -> String {
        format!("https://127.0.0.1:{}/sources/{name}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// Starts the double on a loopback port; writes the authority's PEM under `dir`.
    pub async fn start(dir: &Path) -> Self {
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let ca_file = dir.join("double-ca.pem");
        std::fs::write(&ca_file, issuer.pem()).unwrap();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let seen: Arc<Mutex<HashMap<[u8; 32], u32>>> = Arc::default();
        let (log2, seen2) = (log.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log, seen) = (acceptor.clone(), log2.clone(), seen2.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve_one(tls, &log, &seen).await;
                    }
                });
            }
        });
        Self { port, ca_file, log }
    }
}

/// Reads one HTTP/1.1 request (bounded) and answers it; the connection then closes.
async fn serve_one<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut s: S,
    log: &Mutex<Vec<Request>>,
    seen: &Mutex<HashMap<[u8; 32], u32>>,
) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return;
        }
        let mut chunk = [0u8; 8192];
        match s.read(&mut chunk).await {
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
        .unwrap_or(0)
        .min(2 << 20);
    while buf.len() < head_end + len {
        let mut chunk = [0u8; 8192];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let raw_body = &buf[head_end..head_end + len];
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    if let Some(name) = path.strip_prefix("/sources/") {
        log.lock().unwrap().push(Request {
            path: path.clone(),
            authorization: header("authorization"),
            body: Value::Null,
            served: Served::Source,
            delay_ms: 0,
        });
        let page = source_page(name);
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = s.write_all(reply.as_bytes()).await;
        let _ = s.shutdown().await;
        return;
    }
    let body: Value = serde_json::from_slice(raw_body).unwrap_or(Value::Null);
    let digest: [u8; 32] = Sha256::digest(raw_body).into();
    let first = {
        let mut seen = seen.lock().unwrap();
        let n = seen.entry(digest).or_insert(0);
        *n += 1;
        *n == 1
    };
    let delay_ms = 1_000 + u64::from(u16::from_be_bytes([digest[0], digest[1]])) % 2_001;
    let served = match (first, digest[2] % 9) {
        (true, 0) => Served::Stalled,
        (true, 1) => Served::MalformedContent,
        (true, 2) => Served::MalformedReply,
        _ => Served::Answered,
    };
    log.lock().unwrap().push(Request {
        path,
        authorization: header("authorization"),
        body: body.clone(),
        served,
        delay_ms,
    });
    if served == Served::Stalled {
        // Far beyond the judge's per-attempt timeout; the client has hung up by then.
        tokio::time::sleep(Duration::from_secs(60)).await;
        return;
    }
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    let content = match served {
        Served::MalformedContent => "Sure! After careful thought my ruling is: ACCEPT.".to_owned(),
        _ => model(user),
    };
    let text = match served {
        Served::MalformedReply => "{\"choices\": [{\"message\": {\"content\": ".to_owned(),
        _ => json!({
            "id": format!("chatcmpl-{}", hex::encode(&digest[..6])),
            "object": "chat.completion",
            "model": REPORTED_MODEL,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": user.len() / 4 + 20,
                "completion_tokens": content.len() / 4 + 1,
                "total_tokens": user.len() / 4 + content.len() / 4 + 21
            }
        })
        .to_string(),
    };
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = s.write_all(reply.as_bytes()).await;
    let _ = s.shutdown().await;
}

/// The cited source: an HTML page with markup, a script and a style the node must strip.
fn source_page(name: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><title>Productivity survey ({name})</title>\
         <style>body {{ font-family: serif }}</style><script>var tracking = '<b>no</b>';</script>\
         </head><body><h1>Office for National Statistics</h1><p>Among firms that moved to \
         hybrid working, {SOURCE_PHRASE} between 2019 and 2023 &amp; held after.</p>\
         <p>Peer-reviewed methodology; national statistics.</p></body></html>"
    )
}

/// The double's "model": answers from the prompt alone.
fn model(user: &str) -> String {
    if let Some(rest) = user.split("FIRST (").nth(1) {
        let label = rest.split(')').next().unwrap_or("");
        let p = if label.eq_ignore_ascii_case("candidate") {
            0.85
        } else {
            0.2
        };
        return json!({"probability_first": p, "rationale": format!("{label} argued first.")})
            .to_string();
    }
    let motion: Value = user
        .split_once("Motion (JSON):\n")
        .and_then(|(_, r)| r.split_once("\n\nAnswer with"))
        .and_then(|(m, _)| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    match motion["kind"].as_str().unwrap_or("") {
        "exam" => exam_answer(&motion),
        "verify-tier" => {
            let source = user
                .split_once("<<<SOURCE\n")
                .and_then(|(_, r)| r.split_once("\nSOURCE>>>"))
                .map(|(s, _)| s);
            let claimed = motion["items"][0]["citations"][0]["claimed_tier"]
                .as_u64()
                .unwrap_or(3);
            match source {
                Some(text) if text.contains(SOURCE_PHRASE) => json!({
                    "decision": "ACCEPT", "probability": 0.9, "tier": claimed,
                    "rationale": format!("The retrieved source is national statistics and says: {SOURCE_PHRASE}."),
                })
                .to_string(),
                _ => json!({"decision": "REJECT", "probability": 0.1,
                            "rationale": "I was not shown the source, so I cannot verify it."})
                .to_string(),
            }
        }
        "assign-relevance" => json!({"decision": "NONE", "probability": 0.7, "relevance": 3,
                                     "rationale": "Bears directly on the resolution."})
        .to_string(),
        "resolve-challenge" => json!({"decision": "DISMISS", "probability": 0.3,
                                      "rationale": "The challenge misreads the claim."})
        .to_string(),
        "admit-appeal" => json!({"decision": "DENY", "probability": 0.3,
                                 "rationale": "No new evidence."})
        .to_string(),
        _ => json!({"decision": "ACCEPT", "probability": 0.85,
                    "rationale": "The motion is well supported by what is shown."})
        .to_string(),
    }
}

/// A calibrated answer to an exam item: the gold answer, with honest uncertainty, and
/// quantiles whose truths fall in the inter-quantile bins 5/45/45/5 % of the time.
///
/// The item is recognised by what it asks (question and motion text), as a model knows a
/// question, not by its id: exam motions carry opaque ids (docs/coordinator/
/// state-machine.md "Sealed exams").
fn exam_answer(motion: &Value) -> String {
    let question = motion["exam_item"]["question"].as_str().unwrap_or("");
    let shown = motion["items"][0]["text"].as_str();
    let exam = &panel_machine::features::exam_sitting::embedded_pool()
        .expect("the shipped pool loads")
        .exam;
    let Some(item) = exam
        .items
        .iter()
        .find(|i| i.question == question && i.motion.as_deref() == shown)
    else {
        return json!({"decision": "ABSTAIN", "probability": 0.5, "rationale": "unknown item"})
            .to_string();
    };
    match &item.gold {
        Gold::Binary(yes) => json!({
            "decision": if *yes { "ACCEPT" } else { "REJECT" },
            "probability": if *yes { 0.93 } else { 0.07 },
            "rationale": "From the facts of the case.",
        }),
        Gold::Relevance(r) => json!({
            "decision": "NONE", "probability": 0.8,
            "relevance": panel_machine::debates::relevance_step(*r),
            "rationale": "Relevance as the content bears on it.",
        }),
        Gold::Tier(t) => json!({
            "decision": "NONE", "probability": 0.8, "tier": t.index() + 1,
            "rationale": "The source's standing.",
        }),
        Gold::Quantity { value, .. } => {
            let scale = if *value != 0.0 { value.abs() } else { 1.0 };
            let width = scale * 0.02;
            // The item's place among the exam's quantity seeds picks its bin, so the
            // spread is the same every run: 1 in 20 below the 5 % quantile, 1 in 20 above
            // the 95 %, the rest split between the two middle bins.
            let k = exam
                .items
                .iter()
                .filter(|i| matches!(i.gold, Gold::Quantity { .. }))
                .position(|i| i.id == item.id)
                .unwrap_or(0);
            let miss = match k % 20 {
                0 => -1.5,
                10 => 1.5,
                k if k % 2 == 1 => -0.5,
                _ => 0.5,
            };
            let median = value + miss * width;
            let levels: Vec<f64> = motion["exam_item"]["quantile_levels"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .filter(|v: &Vec<f64>| !v.is_empty())
                .unwrap_or_else(|| vec![0.05, 0.5, 0.95]);
            let quantiles: Vec<Value> = levels
                .iter()
                .map(|l| json!({"level": l, "value": median + (l - 0.5) / 0.45 * width}))
                .collect();
            json!({"decision": "NONE", "probability": 0.8, "quantiles": quantiles,
                   "rationale": "An estimate with its uncertainty."})
        }
    }
    .to_string()
}
