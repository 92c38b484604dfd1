//! LLM judge: a client for OpenAI-compatible chat-completions endpoints (a local
//! llama.cpp server, Ollama's `/v1`, a hosted service; recipes in docs/JUDGES.md).
//!
//! * Endpoint: `POST {base_url}/chat/completions` over `http://` or `https://` (rustls with
//!   the ring provider, the system's root certificates or `ca_file`; `crate::http`).
//! * Key: a bearer key read once at start from the environment variable `api_key_env` or
//!   the file `api_key_file`, never from a flag or the config itself, never logged (the
//!   settings' `Debug` redacts it). A key is never sent over `http://` to a host that is not
//!   loopback.
//! * The answer is requested as JSON against a schema (`response_format` json_schema) and
//!   checked with the same parser as the command judge.
//! * Transport errors, HTTP 429/5xx and unparseable answers are retried with exponential
//!   backoff, up to `max_retries` times; each attempt is bounded by `timeout`, the response
//!   by 1 MiB, and the whole ruling by the motion's commit deadline (the arbiter's).
//! * Pairwise motions (a binary motion whose projection has exactly two items, other than
//!   tier verification) are asked in both orders, and the two answers are averaged, so a
//!   model's preference for the first- (or second-) listed item cancels out.
//! * Tier verification: the model is given the text the node retrieved from the cited
//!   source (`crate::retrieval`), so its ruling is about the source it read.
//! * Provenance: the reply's `model` (and `system_fingerprint`) and `usage` token counts,
//!   summed over the ruling's requests, go into the signed ruling (docs/WIRE.md).

use std::time::Duration;

use futures::future::BoxFuture;
use hyper::Method;
use hyper::body::Bytes;
use panel_proto::pb::{JudgeProvenance, Motion, MotionKind};
use panel_proto::ruling_check::{MAX_MODEL_BYTES, binary_pair};
use serde_json::{Value, json};

use super::answer_json::{allowed_decisions, check_against_motion, motion_json, parse_answer};
use super::{Judge, JudgeAnswer, JudgeError, Retrieved};
use crate::address::Destinations;
use crate::http::{HttpClient, TrustRoots};

/// Largest response body accepted from the endpoint.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Settings of the LLM judge.
#[derive(Clone)]
pub struct LlmSettings {
    /// e.g. `http://127.0.0.1:8080/v1` or `https://api.example.com/v1`.
    pub base_url: String,
    pub model: String,
    /// The API key (already read from the environment variable or file), if any.
    pub api_key: Option<String>,
    /// Per attempt: connect, TLS, request and the whole answer.
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff: Duration,
    /// Where HTTPS trust comes from: the system's roots, or `judge.ca_file`.
    pub roots: TrustRoots,
}

impl std::fmt::Debug for LlmSettings {
    /// Never shows the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .field("roots", &self.roots)
            .finish()
    }
}

pub struct LlmJudge {
    settings: LlmSettings,
    url: String,
    client: HttpClient,
}

/// What one ruling's requests cost and who answered them, for its provenance.
#[derive(Debug, Default)]
struct Tally {
    requests: u32,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    model_version: String,
}

impl Tally {
    fn add_usage(&mut self, v: &Value) {
        let add = |slot: &mut Option<u64>, n: Option<u64>| {
            if let Some(n) = n {
                *slot = Some(slot.unwrap_or(0).saturating_add(n));
            }
        };
        add(
            &mut self.prompt_tokens,
            v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
        );
        add(
            &mut self.completion_tokens,
            v.pointer("/usage/completion_tokens")
                .and_then(Value::as_u64),
        );
        let mut reported = v["model"].as_str().unwrap_or("").to_owned();
        if let Some(fp) = v["system_fingerprint"].as_str().filter(|f| !f.is_empty()) {
            reported.push_str(&format!(" system_fingerprint={fp}"));
        }
        if !reported.is_empty() {
            self.model_version = truncate(reported, MAX_MODEL_BYTES);
        }
    }

    fn provenance(self, model: &str) -> JudgeProvenance {
        JudgeProvenance {
            judge_kind: "llm".into(),
            model: truncate(model.to_owned(), MAX_MODEL_BYTES),
            model_version: self.model_version,
            latency_ms: None,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            requests: self.requests,
            reading: None,
        }
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

fn loopback_host(uri: &hyper::Uri) -> bool {
    match uri.host() {
        Some("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

const SYSTEM_PROMPT: &str = "You are an arbiter on a panel judging a structured debate under the Crucible \
Protocol. Judge only the content shown; you are never told who wrote it. Answer with one JSON object \
that matches the given schema, and nothing else. Probabilities are your honest credence.";

/// What a procedure motion asks of the rationale (docs/PROCEDURES.md): for a crux report,
/// the report's JSON (docs/CRUX.md), with ACCEPT meaning "a verdict is warranted now".
fn procedure_instruction(m: &Motion) -> &'static str {
    match m.projection.as_ref().and_then(|p| p.procedure.as_ref()) {
        Some(q) if q.answer_shape == 1 => {
            "\n\nThis motion asks for a crux report. Make the rationale exactly one JSON object \
             of docs/schemas/crux/crux-report.schema.json: the primary crux (one concrete, \
             checkable unknown that would end the disagreement), why both positions depend on \
             it, whether a verdict is warranted yet, and an optional leaning. ACCEPT means a \
             verdict is warranted now, REJECT that it is not."
        }
        _ => "",
    }
}

impl LlmJudge {
    pub fn new(settings: LlmSettings) -> Result<Self, JudgeError> {
        let full = format!(
            "{}/chat/completions",
            settings.base_url.trim_end_matches('/')
        );
        let endpoint = |problem: String| JudgeError::Endpoint {
            url: full.clone(),
            problem,
        };
        let uri: hyper::Uri = full
            .parse()
            .map_err(|e| endpoint(format!("judge.base_url is not a valid URL: {e}")))?;
        // The endpoint is the operator's own setting (often loopback or a private host):
        // no address rule, unlike retrieved sources.
        let client = HttpClient::new(&settings.roots, "judge.ca_file", Destinations::Any)
            .map_err(|e| endpoint(e.to_string()))?;
        match uri.scheme_str() {
            Some("https") => client.https_ready().map_err(|e| endpoint(e.to_string()))?,
            Some("http") => {
                if settings.api_key.is_some() && !loopback_host(&uri) {
                    return Err(endpoint(
                        "judge.base_url is http:// to a host that is not loopback, and an API \
                         key is configured: the key would cross the network in the clear; use \
                         https:// (with judge.ca_file for a private authority)"
                            .into(),
                    ));
                }
            }
            _ => {
                return Err(endpoint(
                    "judge.base_url must start with http:// or https://".into(),
                ));
            }
        }
        Ok(Self {
            settings,
            url: full,
            client,
        })
    }

    fn answer_schema(m: &Motion) -> Value {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
        let exam = m.projection.as_ref().and_then(|p| p.exam_item.as_ref());
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["decision", "probability", "rationale"],
            "properties": {
                "decision": {"type": "string", "enum": allowed_decisions(kind, exam)},
                "probability": {"type": "number", "minimum": 0, "maximum": 1},
                "rationale": {"type": "string"},
                "relevance": {"type": "integer", "minimum": 1, "maximum": 4},
                "tier": {"type": "integer", "minimum": 1, "maximum": 5},
                "quantiles": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["level", "value"],
                    "properties": {"level": {"type": "number"}, "value": {"type": "number"}}
                }}
            }
        })
    }

    fn pairwise_schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["probability_first", "rationale"],
            "properties": {
                "probability_first": {"type": "number", "minimum": 0, "maximum": 1},
                "rationale": {"type": "string"}
            }
        })
    }

    /// One chat completion whose content must be a JSON object of `schema`, under
    /// `system` instead of the judge's prompt (advocates: `crate::advocate`).
    pub async fn complete_json(
        &self,
        system: &str,
        user: String,
        schema: Value,
    ) -> Result<Value, JudgeError> {
        self.ask_as(system, user, schema, &mut Tally::default(), |t| {
            serde_json::from_str(t)
                .map_err(|e| JudgeError::BadAnswer(format!("the answer is not JSON: {e}")))
        })
        .await
    }

    /// One chat completion, with retries; returns the assistant message content parsed by
    /// `parse`.
    async fn ask<T>(
        &self,
        user: String,
        schema: Value,
        tally: &mut Tally,
        parse: impl Fn(&str) -> Result<T, JudgeError>,
    ) -> Result<T, JudgeError> {
        self.ask_as(SYSTEM_PROMPT, user, schema, tally, parse).await
    }

    async fn ask_as<T>(
        &self,
        system: &str,
        user: String,
        schema: Value,
        tally: &mut Tally,
        parse: impl Fn(&str) -> Result<T, JudgeError>,
    ) -> Result<T, JudgeError> {
        let body = json!({
            "model": self.settings.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "ruling", "strict": true, "schema": schema}
            }
        })
        .to_string();
        let attempts = self.settings.max_retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                let wait = self.settings.backoff * 2u32.saturating_pow(attempt - 1);
                tokio::time::sleep(wait).await;
            }
            match self.once(&body, tally).await {
                Ok(content) => match parse(&content) {
                    Ok(v) => return Ok(v),
                    Err(e) => last = e.to_string(),
                },
                Err((e, retryable)) => {
                    if !retryable {
                        return Err(JudgeError::Endpoint {
                            url: self.url.clone(),
                            problem: e,
                        });
                    }
                    last = e;
                }
            }
            tracing::warn!(attempt, error = %last, "llm judge attempt failed");
        }
        Err(JudgeError::RetriesExhausted {
            url: self.url.clone(),
            attempts,
            last,
        })
    }

    /// One HTTP exchange. Errors carry whether a retry may help. Never puts the key in an
    /// error.
    async fn once(&self, body: &str, tally: &mut Tally) -> Result<String, (String, bool)> {
        let auth = self
            .settings
            .api_key
            .as_ref()
            .map(|k| format!("Bearer {k}"));
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ];
        if let Some(a) = &auth {
            headers.push(("authorization", a.as_str()));
        }
        tally.requests = tally.requests.saturating_add(1);
        let resp = self
            .client
            .send(
                Method::POST,
                &self.url,
                &headers,
                Some(Bytes::from(body.to_owned())),
                MAX_RESPONSE_BYTES,
                self.settings.timeout,
            )
            .await
            .map_err(|e| (e.to_string(), e.retryable()))?;
        let status = resp.status;
        let bytes = resp.body;
        if !status.is_success() {
            let retryable = status.as_u16() == 429 || status.is_server_error();
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            return Err((format!("HTTP {status}: {text}"), retryable));
        }
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| (format!("response is not JSON: {e}"), true))?;
        tally.add_usage(&v);
        v.pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                (
                    "response has no choices[0].message.content string".to_owned(),
                    true,
                )
            })
    }

    async fn decide_pairwise(&self, m: &Motion) -> Result<JudgeAnswer, JudgeError> {
        let p = m.projection.clone().unwrap_or_default();
        let (aff, neg) = binary_pair(MotionKind::try_from(m.kind).unwrap_or(MotionKind::Merge))
            .unwrap_or((
                panel_proto::pb::Decision::Accept,
                panel_proto::pb::Decision::Reject,
            ));
        let prompt = |first: &panel_proto::pb::ProjectionItem,
                      second: &panel_proto::pb::ProjectionItem| {
            format!(
                "Question: {}\nResolution of the debate: {}\n\nFIRST ({}):\n{}\n\nSECOND ({}):\n{}\n\n\
                 Give the probability that FIRST should prevail over SECOND, and a short rationale.",
                p.question, p.resolution, first.label, first.text, second.label, second.text
            )
        };
        let parse = |text: &str| -> Result<(f64, String), JudgeError> {
            let v: Value = serde_json::from_str(text.trim())
                .map_err(|e| JudgeError::BadAnswer(format!("pairwise answer is not JSON: {e}")))?;
            let pf = v["probability_first"]
                .as_f64()
                .filter(|x| (0.0..=1.0).contains(x))
                .ok_or_else(|| {
                    JudgeError::BadAnswer(
                        "pairwise answer needs probability_first in [0, 1]".into(),
                    )
                })?;
            Ok((pf, v["rationale"].as_str().unwrap_or("").to_owned()))
        };
        let mut tally = Tally::default();
        let (p_ab, r_ab) = self
            .ask(
                prompt(&p.items[0], &p.items[1]),
                Self::pairwise_schema(),
                &mut tally,
                parse,
            )
            .await?;
        let (p_ba, r_ba) = self
            .ask(
                prompt(&p.items[1], &p.items[0]),
                Self::pairwise_schema(),
                &mut tally,
                parse,
            )
            .await?;
        // Affirmative = the first projection item prevails.
        let prob = (p_ab + (1.0 - p_ba)) / 2.0;
        let rationale = truncate(
            format!(
                "[order {0},{1}] {r_ab}\n[order {1},{0}] {r_ba}",
                p.items[0].label, p.items[1].label
            ),
            panel_proto::ruling_check::MAX_RATIONALE_BYTES,
        );
        let answer = JudgeAnswer {
            decision: if prob >= 0.5 { aff } else { neg },
            probability: prob,
            relevance: None,
            tier: None,
            quantiles: vec![],
            receipt: None,
            rationale,
            provenance: Some(tally.provenance(&self.settings.model)),
        };
        check_against_motion(&answer, m)?;
        Ok(answer)
    }

    async fn run(&self, m: &Motion, source: Option<&Retrieved>) -> Result<JudgeAnswer, JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
        let items = m.projection.as_ref().map_or(0, |p| p.items.len());
        // Exam, procedure and tier-verification motions ask for one answer about the whole
        // projection (a tier-verification's two items are the source and the claim).
        let pairwise = !matches!(
            kind,
            MotionKind::Exam | MotionKind::Procedure | MotionKind::VerifyTier
        );
        if pairwise && binary_pair(kind).is_some() && items == 2 {
            return self.decide_pairwise(m).await;
        }
        let user = format!(
            "Motion (JSON):\n{}\n\nAnswer with decision, probability (credence in the affirmative \
             decision, the first of allowed_decisions), rationale, and relevance/tier/quantiles \
             where the motion asks for them.{}{}",
            motion_json(m, false),
            procedure_instruction(m),
            source_section(kind, source)
        );
        let mut tally = Tally::default();
        let mut answer = self
            .ask(user, Self::answer_schema(m), &mut tally, |t| {
                parse_answer(t, m)
            })
            .await?;
        answer.provenance = Some(tally.provenance(&self.settings.model));
        Ok(answer)
    }
}

/// For a tier-verification motion: what the node retrieved, or that it retrieved nothing.
fn source_section(kind: MotionKind, source: Option<&Retrieved>) -> String {
    if kind != MotionKind::VerifyTier {
        return String::new();
    }
    match source {
        Some(r) => format!(
            "\n\nThis node retrieved the cited source itself from {} (SHA-256 of the bytes: {}). \
             Its text{}, between the markers:\n<<<SOURCE\n{}\nSOURCE>>>\n\
             Judge the claimed tier from what this source is and what it says; ACCEPT with the \
             tier you find only if the text supports it, and do not assume content that is not \
             shown.",
            r.url,
            r.sha256_hex,
            if r.truncated {
                " (cut at the node's bound)"
            } else {
                ""
            },
            r.text
        ),
        None => "\n\nThis node could not retrieve the cited source; a source nobody \
                 retrieved cannot be verified."
            .into(),
    }
}

impl Judge for LlmJudge {
    fn kind(&self) -> &'static str {
        "llm"
    }
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.run(motion, None))
    }
    fn decide_with<'a>(
        &'a self,
        motion: &'a Motion,
        source: Option<&'a Retrieved>,
    ) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.run(motion, source))
    }
    fn model(&self) -> String {
        self.settings.model.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::{serve_with, test_pki};
    use panel_proto::pb::{ContentProjection, ProjectionItem};
    use std::sync::atomic::Ordering;

    fn settings(base_url: String, roots: TrustRoots) -> LlmSettings {
        LlmSettings {
            base_url,
            model: "local-model".into(),
            api_key: Some("sk-secret-value".into()),
            timeout: Duration::from_secs(5),
            max_retries: 2,
            backoff: Duration::from_millis(10),
            roots,
        }
    }

    fn relevance_motion() -> Motion {
        Motion {
            motion_id: "m-rel".into(),
            debate_id: "d-1".into(),
            kind: MotionKind::AssignRelevance as i32,
            state_hash: vec![1; 32],
            projection: Some(ContentProjection {
                question: "How relevant?".into(),
                items: vec![ProjectionItem {
                    label: "claim".into(),
                    text: "Remote work saves commuting time.".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            commit_deadline_unix_ms: i64::MAX,
            reveal_deadline_unix_ms: i64::MAX,
            ..Default::default()
        }
    }

    /// Over HTTPS with a CA file; a malformed first reply is retried; `usage` is summed
    /// over both requests and the reported model is kept.
    #[tokio::test]
    async fn https_endpoint_with_a_ca_file_and_usage_in_the_provenance() {
        let pki = test_pki();
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = calls.clone();
        let (port, count) = serve_with(&pki, move |body| {
            assert!(body.contains("json_schema"), "{body}");
            let content = if n.fetch_add(1, Ordering::Relaxed) == 0 {
                "not json".to_owned()
            } else {
                r#"{"decision":"NONE","probability":0.7,"relevance":3,"rationale":"bears on it"}"#
                    .to_owned()
            };
            (
                200,
                json!({
                    "model": "local-model-q4", "system_fingerprint": "fp_1",
                    "choices": [{"message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
                })
                .to_string(),
            )
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        let judge = LlmJudge::new(settings(
            format!("https://127.0.0.1:{port}/v1"),
            TrustRoots::CaFile {
                key: "judge.ca_file",
                path: ca,
            },
        ))
        .unwrap();
        let a = judge.decide(&relevance_motion()).await.unwrap();
        assert_eq!(a.relevance, Some(3));
        let p = a.provenance.unwrap();
        assert_eq!(p.judge_kind, "llm");
        assert_eq!(p.model, "local-model");
        assert_eq!(p.model_version, "local-model-q4 system_fingerprint=fp_1");
        assert_eq!(
            (p.prompt_tokens, p.completion_tokens),
            (Some(200), Some(20))
        );
        assert_eq!(p.requests, 2);
        assert_eq!(count.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn keys_are_never_shown_nor_sent_in_the_clear_off_the_machine() {
        let s = settings("http://10.1.2.3:8080/v1".into(), TrustRoots::System);
        assert!(!format!("{s:?}").contains("sk-secret-value"));
        let e = LlmJudge::new(s.clone()).err().unwrap().to_string();
        assert!(
            e.contains("in the clear") && !e.contains("sk-secret"),
            "{e}"
        );
        // Loopback http is fine (a local llama.cpp or Ollama), and without a key anywhere.
        LlmJudge::new(settings(
            "http://127.0.0.1:8080/v1".into(),
            TrustRoots::System,
        ))
        .unwrap();
        LlmJudge::new(LlmSettings { api_key: None, ..s }).unwrap();
        let e = LlmJudge::new(settings("ftp://x/v1".into(), TrustRoots::System))
            .err()
            .unwrap();
        assert!(e.to_string().contains("http:// or https://"), "{e}");
    }

    #[test]
    fn the_source_is_shown_only_to_tier_verification() {
        let r = Retrieved {
            url: "https://src.example/a".into(),
            text: "the page says 4%".into(),
            truncated: true,
            sha256_hex: "ab".repeat(32),
        };
        let s = source_section(MotionKind::VerifyTier, Some(&r));
        assert!(s.contains("<<<SOURCE\nthe page says 4%\nSOURCE>>>") && s.contains("cut"));
        assert!(source_section(MotionKind::VerifyTier, None).contains("could not retrieve"));
        assert!(source_section(MotionKind::Merge, Some(&r)).is_empty());
    }
}
