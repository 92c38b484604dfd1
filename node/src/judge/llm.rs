//! LLM judge: a client for OpenAI-compatible chat-completions endpoints.
//!
//! * Endpoint: `POST {base_url}/chat/completions`, bearer key read from the environment
//!   variable the config names (the key itself is never in a config file).
//! * The answer is requested as JSON against a schema (`response_format` json_schema) and
//!   checked with the same parser as the command judge.
//! * Transport errors, HTTP 429/5xx and unparseable answers are retried with exponential
//!   backoff, up to `max_retries` times.
//! * Pairwise motions (a binary motion whose projection has exactly two items) are asked
//!   in both orders, and the two answers are averaged, so a model's preference for the
//!   first- (or second-) listed item cancels out.
//!
//! Plain `http://` only: the client is hyper's HTTP/1.1 client without TLS (keeps the
//! build free of a TLS stack). Reach an `https://` endpoint through a local proxy.

use std::time::Duration;

use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use panel_proto::pb::{Motion, MotionKind};
use panel_proto::ruling_check::binary_pair;
use serde_json::{Value, json};

use super::answer_json::{allowed_decisions, check_against_motion, motion_json, parse_answer};
use super::{Judge, JudgeAnswer, JudgeError};

/// Largest response body accepted from the endpoint.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Settings of the LLM judge.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    /// The API key (already read from the named environment variable), if any.
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff: Duration,
}

pub struct LlmJudge {
    settings: LlmSettings,
    url: hyper::Uri,
    client: Client<HttpConnector, Full<Bytes>>,
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
        let url: hyper::Uri = full.parse().map_err(|e| JudgeError::Endpoint {
            url: full.clone(),
            problem: format!("not a valid URL: {e}"),
        })?;
        if url.scheme_str() != Some("http") {
            return Err(JudgeError::Endpoint {
                url: full,
                problem: "only http:// endpoints are supported (no TLS in this build); use a local proxy for https".into(),
            });
        }
        let client = Client::builder(TokioExecutor::new()).build_http();
        Ok(Self {
            settings,
            url,
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
        self.ask_as(system, user, schema, |t| {
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
        parse: impl Fn(&str) -> Result<T, JudgeError>,
    ) -> Result<T, JudgeError> {
        self.ask_as(SYSTEM_PROMPT, user, schema, parse).await
    }

    async fn ask_as<T>(
        &self,
        system: &str,
        user: String,
        schema: Value,
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
            match self.once(&body).await {
                Ok(content) => match parse(&content) {
                    Ok(v) => return Ok(v),
                    Err(e) => last = e.to_string(),
                },
                Err((e, retryable)) => {
                    if !retryable {
                        return Err(JudgeError::Endpoint {
                            url: self.url.to_string(),
                            problem: e,
                        });
                    }
                    last = e;
                }
            }
            tracing::warn!(attempt, error = %last, "llm judge attempt failed");
        }
        Err(JudgeError::RetriesExhausted {
            url: self.url.to_string(),
            attempts,
            last,
        })
    }

    /// One HTTP exchange. Errors carry whether a retry may help.
    async fn once(&self, body: &str) -> Result<String, (String, bool)> {
        let mut req = hyper::Request::post(self.url.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json");
        if let Some(k) = &self.settings.api_key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let req = req
            .body(Full::new(Bytes::from(body.to_owned())))
            .map_err(|e| (e.to_string(), false))?;
        let exchange = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| (format!("request failed: {e}"), true))?;
            let status = resp.status();
            let bytes = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| (format!("reading response: {e}"), true))?
                .to_bytes();
            Ok::<_, (String, bool)>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(self.settings.timeout, exchange)
            .await
            .map_err(|_| {
                (
                    format!("no response within {:?}", self.settings.timeout),
                    true,
                )
            })??;
        if !status.is_success() {
            let retryable = status.as_u16() == 429 || status.is_server_error();
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            return Err((format!("HTTP {status}: {text}"), retryable));
        }
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| (format!("response is not JSON: {e}"), true))?;
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
        let (p_ab, r_ab) = self
            .ask(
                prompt(&p.items[0], &p.items[1]),
                Self::pairwise_schema(),
                parse,
            )
            .await?;
        let (p_ba, r_ba) = self
            .ask(
                prompt(&p.items[1], &p.items[0]),
                Self::pairwise_schema(),
                parse,
            )
            .await?;
        // Affirmative = the first projection item prevails.
        let prob = (p_ab + (1.0 - p_ba)) / 2.0;
        let mut rationale = format!(
            "[order {0},{1}] {r_ab}\n[order {1},{0}] {r_ba}",
            p.items[0].label, p.items[1].label
        );
        if rationale.len() > panel_proto::ruling_check::MAX_RATIONALE_BYTES {
            let mut cut = panel_proto::ruling_check::MAX_RATIONALE_BYTES;
            while !rationale.is_char_boundary(cut) {
                cut -= 1;
            }
            rationale.truncate(cut);
        }
        let answer = JudgeAnswer {
            decision: if prob >= 0.5 { aff } else { neg },
            probability: prob,
            relevance: None,
            tier: None,
            quantiles: vec![],
            receipt: None,
            rationale,
        };
        check_against_motion(&answer, m)?;
        Ok(answer)
    }

    async fn run(&self, m: &Motion) -> Result<JudgeAnswer, JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
        let items = m.projection.as_ref().map_or(0, |p| p.items.len());
        let pairwise = !matches!(kind, MotionKind::Exam | MotionKind::Procedure);
        if pairwise && binary_pair(kind).is_some() && items == 2 {
            return self.decide_pairwise(m).await;
        }
        let user = format!(
            "Motion (JSON):\n{}\n\nAnswer with decision, probability (credence in the affirmative \
             decision, the first of allowed_decisions), rationale, and relevance/tier/quantiles \
             where the motion asks for them.{}",
            motion_json(m, false),
            procedure_instruction(m)
        );
        self.ask(user, Self::answer_schema(m), |t| parse_answer(t, m))
            .await
    }
}

impl Judge for LlmJudge {
    fn kind(&self) -> &'static str {
        "llm"
    }
    fn decide<'a>(&'a self, motion: &'a Motion) -> BoxFuture<'a, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.run(motion))
    }
}
