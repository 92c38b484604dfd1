//! LLM judge: a client for OpenAI-compatible chat-completions endpoints (a local
//! llama.cpp server, Ollama's `/v1`, `panel model serve`, a hosted service; recipes in
//! docs/JUDGES.md).
//!
//! * Endpoint: `POST {base_url}/chat/completions` over `http://` or `https://` (rustls with
//!   the ring provider, the system's root certificates or `ca_file`; `crate::http`).
//! * Key: a bearer key read once at start from the environment variable `api_key_env` or
//!   the file `api_key_file`, never from a flag or the config itself, never logged (the
//!   settings' `Debug` redacts it). A key is never sent over `http://` to a host that is not
//!   loopback.
//! * What is asked: the instructions ([`super::prompt::Persona`]: system prompt, persona,
//!   the declared stance for the motion's debate) as the system message, and the questions
//!   the local judge asks ([`super::prompt::question`]), binary ones in both presentation
//!   orders.
//! * How it is read: with `"logprobs": true, "top_logprobs": 20`, P(affirmative) is the
//!   normalised probability of the answer tokens ("Yes"/"No" in their usual spellings)
//!   among the first answer token's alternatives, per order, averaged (reading method
//!   `next-token`); relevance and tier from the digits' probabilities; quantiles from the
//!   numbers written. An endpoint that returns no log-probabilities is remembered as such,
//!   and the ruling (and every later one) falls back to the written number: the answer as
//!   one JSON object against a schema (`response_format` json_schema), checked with the
//!   command judge's parser, a pairwise motion asked in both orders (reading method
//!   `stated`). Either way the ruling's signed reading names the instructions' digest.
//! * Transport errors, HTTP 429/5xx and unparseable answers are retried with exponential
//!   backoff, up to `max_retries` times; each attempt is bounded by `timeout`, the response
//!   by 1 MiB, and the whole ruling by the motion's commit deadline (the arbiter's).
//! * Tier verification: the model is given the text the node retrieved from the cited
//!   source (`crate::retrieval`), so its ruling is about the source it read.
//! * Provenance: the reply's `model` (and `system_fingerprint`) and `usage` token counts,
//!   summed over the ruling's requests, go into the signed ruling (docs/WIRE.md).

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use hyper::Method;
use hyper::body::Bytes;
use panel_proto::pb::{
    Decision, JudgeProvenance, JudgeReading, Motion, MotionKind, OrderReading, Quantile,
};
use panel_proto::ruling_check::{MAX_MODEL_BYTES, MAX_RATIONALE_BYTES, binary_pair};
use serde_json::{Value, json};

use super::answer_json::{allowed_decisions, check_against_motion, motion_json, parse_answer};
use super::prompt::{
    Instructions, Persona, Presentation, Question, Scale, claimed_tier, question, read_binary,
    read_scale,
};
use super::{Judge, JudgeAnswer, JudgeError, Retrieved};
use crate::address::Destinations;
use crate::http::{HttpClient, TrustRoots};

/// Largest response body accepted from the endpoint.
const MAX_RESPONSE_BYTES: usize = 1 << 20;
/// Alternatives asked for per answer position (the most OpenAI's API gives).
const TOP_LOGPROBS: u32 = 20;
/// Tokens a next-token question may write: the answer word, and room for a model that
/// puts markup before it (the first position holding an answer token is read).
const READ_TOKENS: u32 = 16;
/// Tokens a quantile answer may write.
const QUANTILE_TOKENS: u32 = 48;
/// "Yes" and "No" as an endpoint spells the answer tokens (the local judge's spellings).
const YES: [&str; 5] = ["Yes", " Yes", "yes", " yes", "YES"];
const NO: [&str; 5] = ["No", " No", "no", " no", "NO"];

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

/// What the endpoint has shown of token log-probabilities.
const LOGPROBS_UNKNOWN: u8 = 0;
const LOGPROBS_GIVEN: u8 = 1;
const LOGPROBS_ABSENT: u8 = 2;

pub struct LlmJudge {
    settings: LlmSettings,
    url: String,
    client: HttpClient,
    persona: Persona,
    temperature: f64,
    /// `LOGPROBS_*`: an endpoint that answered without them is asked for the written
    /// number from then on.
    logprobs: AtomicU8,
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

    fn provenance(self, model: &str, reading: JudgeReading) -> JudgeProvenance {
        JudgeProvenance {
            judge_kind: "llm".into(),
            model: truncate(model.to_owned(), MAX_MODEL_BYTES),
            model_version: self.model_version,
            latency_ms: None,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            requests: self.requests,
            reading: Some(reading),
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

/// What a JSON answer adds to the question (the stated fallback): the system message is
/// the arbiter's instructions, so the answer's form is asked for here, with the fields
/// named for an endpoint that does not enforce `response_format`.
const JSON_FORM: &str = "\n\nAnswer with one JSON object and nothing else: {\"decision\": one \
of allowed_decisions, \"probability\": a number from 0 to 1, \"rationale\": \"one short \
sentence\"}, with \"relevance\" (1 to 4), \"tier\" (1 to 5) or \"quantiles\" ([{\"level\": \
..., \"value\": ...}]) where the motion asks for them. Probabilities are your honest credence.";
const PAIRWISE_FORM: &str = "\n\nAnswer with one JSON object and nothing else: \
{\"probability_first\": a number from 0 to 1, \"rationale\": \"one short sentence\"}. The \
probability is your honest credence.";

/// What a procedure motion asks of the rationale (docs/PROCEDURES.md): for a crux report,
/// the report's JSON (docs/CRUX.md), with ACCEPT meaning "a verdict is warranted now".
fn procedure_instruction(m: &Motion) -> &'static str {
    if crux_report(m) {
        "\n\nThis motion asks for a crux report. Make the rationale exactly one JSON object \
         of docs/schemas/crux/crux-report.schema.json: the primary crux (one concrete, \
         checkable unknown that would end the disagreement), why both positions depend on \
         it, whether a verdict is warranted yet, and an optional leaning. ACCEPT means a \
         verdict is warranted now, REJECT that it is not."
    } else {
        ""
    }
}

/// A procedure motion whose answer is a written report (always the JSON answer).
fn crux_report(m: &Motion) -> bool {
    matches!(
        m.projection.as_ref().and_then(|p| p.procedure.as_ref()),
        Some(q) if q.answer_shape == 1
    )
}

/// One answer position of a reply's `choices[0].logprobs.content`: the token written and
/// its alternatives with their natural-log probabilities.
#[derive(Debug, Clone, PartialEq)]
struct Position {
    written: String,
    alternatives: Vec<(String, f64)>,
}

impl Position {
    /// Total probability of the alternatives spelled as one of `spellings`.
    fn mass(&self, spellings: &[&str]) -> f64 {
        self.alternatives
            .iter()
            .filter(|(t, _)| spellings.contains(&t.as_str()))
            .map(|(_, lp)| lp.exp())
            .sum()
    }
}

/// What a next-token reply holds: the positions (`None`: the endpoint gave no
/// log-probabilities) and the text written.
#[derive(Debug)]
struct Reply {
    positions: Option<Vec<Position>>,
    written: String,
}

fn read_reply(v: &Value) -> Reply {
    let written = v
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let positions = v
        .pointer("/choices/0/logprobs/content")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| {
                    let logprob = |x: &Value| {
                        x["logprob"]
                            .as_f64()
                            .filter(|lp| lp.is_finite())
                            .map(|lp| lp.min(0.0))
                    };
                    let written = e["token"].as_str()?.to_owned();
                    let mut alternatives: Vec<(String, f64)> = e["top_logprobs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| Some((a["token"].as_str()?.to_owned(), logprob(a)?)))
                        .collect();
                    if !alternatives.iter().any(|(t, _)| *t == written)
                        && let Some(lp) = logprob(e)
                    {
                        alternatives.push((written.clone(), lp));
                    }
                    Some(Position {
                        written,
                        alternatives,
                    })
                })
                .collect()
        });
    Reply { positions, written }
}

/// The probabilities of the "Yes" and of the "No" spellings at the first position that
/// holds an answer token (none: both 0).
fn yes_no(positions: &[Position]) -> (f64, f64) {
    positions
        .iter()
        .map(|p| (p.mass(&YES), p.mass(&NO)))
        .find(|(y, n)| y + n > 0.0)
        .unwrap_or((0.0, 0.0))
}

/// The digits' masses on `scale` at the first position that holds a digit token.
fn digit_masses(positions: &[Position], scale: Scale) -> Vec<(u32, f64)> {
    let at = |p: &Position| -> Vec<(u32, f64)> {
        scale
            .steps()
            .map(|d| {
                let (plain, spaced) = (d.to_string(), format!(" {d}"));
                (d, p.mass(&[plain.as_str(), spaced.as_str()]))
            })
            .collect()
    };
    positions
        .iter()
        .map(at)
        .find(|m| m.iter().any(|(_, w)| *w > 0.0))
        .unwrap_or_else(|| scale.steps().map(|d| (d, 0.0)).collect())
}

/// Numbers in a written quantile answer, in order.
fn written_numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| c == ',' || c.is_whitespace() || c == ';')
        .filter_map(|w| {
            w.trim_matches(|c: char| !c.is_ascii_digit() && c != '.' && c != '-')
                .parse::<f64>()
                .ok()
        })
        .filter(|x| x.is_finite())
        .collect()
}

fn answer(decision: Decision, probability: f64, rationale: String) -> JudgeAnswer {
    JudgeAnswer {
        decision,
        probability: probability.clamp(0.0, 1.0),
        relevance: None,
        tier: None,
        quantiles: Vec::new(),
        receipt: None,
        rationale: truncate(rationale, MAX_RATIONALE_BYTES),
        provenance: None,
    }
}

fn reading(method: &str, ins: &Instructions, orders: Vec<OrderReading>) -> JudgeReading {
    JudgeReading {
        method: method.into(),
        prompt_sha256: ins.sha256.to_vec(),
        orders,
    }
}

fn order(order: &str, p_affirmative: f64, answer_mass: f64) -> OrderReading {
    OrderReading {
        order: order.into(),
        p_affirmative: p_affirmative.clamp(0.0, 1.0),
        answer_mass: answer_mass.clamp(0.0, 1.0),
    }
}

/// What the model wrote, for a rationale: one line, short.
fn shown(text: &str) -> String {
    truncate(text.trim().replace(['\n', '\r'], " "), 200)
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
            persona: Persona::default(),
            temperature: 0.0,
            logprobs: AtomicU8::new(LOGPROBS_UNKNOWN),
        })
    }

    /// The arbiter's instructions (system prompt, persona, declared stances) and the
    /// sampling temperature of every request (`[judge] system_prompt`, `persona`,
    /// `temperature`). The next-token probability is the endpoint's distribution and does
    /// not depend on the temperature; the written answers do.
    pub fn with_persona(mut self, persona: Persona, temperature: f64) -> Result<Self, JudgeError> {
        if !(0.0..=2.0).contains(&temperature) {
            return Err(JudgeError::Endpoint {
                url: self.url,
                problem: format!("judge.temperature = {temperature} must lie in [0, 2]"),
            });
        }
        self.persona = persona;
        self.temperature = temperature;
        Ok(self)
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

    /// A request body: the model, the temperature, the two messages and `extra`.
    fn body(&self, system: &str, user: &str, extra: Value) -> String {
        let mut body = json!({
            "model": self.settings.model,
            "temperature": self.temperature,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        });
        if let (Some(b), Value::Object(extra)) = (body.as_object_mut(), extra) {
            b.extend(extra);
        }
        body.to_string()
    }

    fn json_body(&self, system: &str, user: &str, schema: Value) -> String {
        self.body(
            system,
            user,
            json!({"response_format": {
                "type": "json_schema",
                "json_schema": {"name": "ruling", "strict": true, "schema": schema}
            }}),
        )
    }

    /// One chat completion whose content must be a JSON object of `schema`, under
    /// `system` instead of the judge's instructions (advocates: `crate::advocate`).
    pub async fn complete_json(
        &self,
        system: &str,
        user: String,
        schema: Value,
    ) -> Result<Value, JudgeError> {
        let body = self.json_body(system, &user, schema);
        self.exchange(&body, &mut Tally::default(), |v| {
            serde_json::from_str(content(v)?)
                .map_err(|e| JudgeError::BadAnswer(format!("the answer is not JSON: {e}")))
        })
        .await
    }

    /// One chat completion, with retries; returns the reply parsed by `parse` (whose
    /// errors are retried like a malformed reply).
    async fn exchange<T>(
        &self,
        body: &str,
        tally: &mut Tally,
        parse: impl Fn(&Value) -> Result<T, JudgeError>,
    ) -> Result<T, JudgeError> {
        let attempts = self.settings.max_retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                let wait = self.settings.backoff * 2u32.saturating_pow(attempt - 1);
                tokio::time::sleep(wait).await;
            }
            match self.once(body, tally).await {
                Ok(reply) => match parse(&reply) {
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

    /// One HTTP exchange; the reply as JSON. Errors carry whether a retry may help. Never
    /// puts the key in an error.
    async fn once(&self, body: &str, tally: &mut Tally) -> Result<Value, (String, bool)> {
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
        Ok(v)
    }

    /// A question asked for the answer token's log-probabilities; `None` when the endpoint
    /// gave none.
    async fn ask_next_token(
        &self,
        ins: &Instructions,
        user: &str,
        tally: &mut Tally,
    ) -> Result<Option<(Vec<Position>, String)>, JudgeError> {
        let body = self.body(
            &ins.text,
            user,
            json!({"max_tokens": READ_TOKENS, "logprobs": true, "top_logprobs": TOP_LOGPROBS}),
        );
        let reply = self.exchange(&body, tally, |v| Ok(read_reply(v))).await?;
        Ok(reply.positions.map(|p| (p, reply.written)))
    }

    /// A binary question in each presentation order, read by next-token probability.
    async fn binary_by_next_token(
        &self,
        m: &Motion,
        ins: &Instructions,
        orders: &[Presentation],
        preamble: &str,
        tally: &mut Tally,
    ) -> Result<Option<(JudgeAnswer, JudgeReading)>, JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Merge);
        let (aff, neg) = binary_pair(kind).unwrap_or((Decision::Accept, Decision::Reject));
        let mut readings = Vec::new();
        let mut wrote = Vec::new();
        for p in orders {
            let user = format!("{preamble}{}", p.user);
            let Some((positions, written)) = self.ask_next_token(ins, &user, tally).await? else {
                return Ok(None);
            };
            let (y, n) = yes_no(&positions);
            readings.push(read_binary(p, y, n));
            wrote.push(format!("{}: \"{}\"", p.order, shown(&written)));
        }
        let prob = readings.iter().map(|r| r.p_affirmative).sum::<f64>() / readings.len() as f64;
        let decision = if prob >= 0.5 { aff } else { neg };
        let per_order: Vec<String> = readings
            .iter()
            .map(|r| format!("{} {:.3}", r.order, r.p_affirmative))
            .collect();
        let mut a = answer(
            decision,
            prob,
            format!(
                "P(affirmative) {prob:.3} from next-token probabilities ({}); the model wrote {}",
                per_order.join(", "),
                wrote.join(", ")
            ),
        );
        a.tier = (kind == MotionKind::VerifyTier && decision == aff).then(|| claimed_tier(m));
        Ok(Some((a, reading("next-token", ins, readings))))
    }

    /// An ordinal question (relevance, tier) read from the digits' probabilities.
    async fn ordinal_by_next_token(
        &self,
        ins: &Instructions,
        user: &str,
        scale: Scale,
        tally: &mut Tally,
    ) -> Result<Option<(JudgeAnswer, JudgeReading)>, JudgeError> {
        let Some((positions, written)) = self.ask_next_token(ins, user, tally).await? else {
            return Ok(None);
        };
        let masses = digit_masses(&positions, scale);
        // Relevance is an expectation over the steps; a tier is the likeliest one.
        let (step, conf, total) = read_scale(scale, &masses);
        let mut a = answer(
            Decision::None,
            conf,
            format!(
                "step {step} read from the digits' next-token probabilities ({}); the model \
                 wrote \"{}\"",
                masses
                    .iter()
                    .map(|(d, w)| format!("{d}: {:.3}", w / total.max(f64::MIN_POSITIVE)))
                    .collect::<Vec<_>>()
                    .join(", "),
                shown(&written)
            ),
        );
        a.relevance = (scale == Scale::Relevance).then_some(step);
        a.tier = (scale == Scale::Tier).then_some(step);
        let r = reading(
            "next-token",
            ins,
            vec![order("as-given", a.probability, total)],
        );
        Ok(Some((a, r)))
    }

    /// Quantiles from the numbers the model writes (an endpoint with log-probabilities is
    /// asked the local judge's question; an answer that is not increasing numbers abstains).
    async fn quantiles_written(
        &self,
        ins: &Instructions,
        user: &str,
        levels: &[f64],
        tally: &mut Tally,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let body = self.body(&ins.text, user, json!({"max_tokens": QUANTILE_TOKENS}));
        let text = self
            .exchange(&body, tally, |v| content(v).map(str::to_owned))
            .await?;
        let numbers = written_numbers(&text);
        let increasing = numbers.len() >= levels.len()
            && numbers[..levels.len()].windows(2).all(|w| w[0] < w[1]);
        let written = shown(&text);
        let a = if increasing {
            let mut a = answer(
                Decision::None,
                0.5,
                format!("quantiles as the model wrote them: \"{written}\""),
            );
            a.quantiles = levels
                .iter()
                .zip(&numbers)
                .map(|(l, v)| Quantile {
                    level: *l,
                    value: *v,
                })
                .collect();
            a
        } else {
            answer(
                Decision::Abstain,
                0.5,
                format!(
                    "abstained: the model wrote \"{written}\", not {} increasing numbers",
                    levels.len()
                ),
            )
        };
        Ok((a, reading("stated", ins, vec![order("as-given", 0.5, 1.0)])))
    }

    /// The stated fallback for a pairwise motion: the probability that FIRST prevails, as
    /// the model writes it, asked in both orders and averaged.
    async fn pairwise_stated(
        &self,
        m: &Motion,
        ins: &Instructions,
        tally: &mut Tally,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let p = m.projection.clone().unwrap_or_default();
        let (aff, neg) = binary_pair(MotionKind::try_from(m.kind).unwrap_or(MotionKind::Merge))
            .unwrap_or((Decision::Accept, Decision::Reject));
        let prompt = |first: &panel_proto::pb::ProjectionItem,
                      second: &panel_proto::pb::ProjectionItem| {
            format!(
                "Question: {}\nResolution of the debate: {}\n\nFIRST ({}):\n{}\n\nSECOND ({}):\n{}\n\n\
                 Give the probability that FIRST should prevail over SECOND, and a short \
                 rationale.{PAIRWISE_FORM}",
                p.question, p.resolution, first.label, first.text, second.label, second.text
            )
        };
        let parse = |v: &Value| -> Result<(f64, String), JudgeError> {
            let text = content(v)?;
            let v: Value = serde_json::from_str(text.trim()).map_err(|e| {
                JudgeError::BadAnswer(format!(
                    "pairwise answer is not JSON: {e}; the model wrote \"{}\"",
                    shown(text)
                ))
            })?;
            let pf = v["probability_first"]
                .as_f64()
                .filter(|x| (0.0..=1.0).contains(x))
                .ok_or_else(|| {
                    JudgeError::BadAnswer(format!(
                        "pairwise answer needs probability_first in [0, 1]; the model wrote \"{}\"",
                        shown(text)
                    ))
                })?;
            Ok((pf, v["rationale"].as_str().unwrap_or("").to_owned()))
        };
        let ask = |first, second| {
            self.json_body(&ins.text, &prompt(first, second), Self::pairwise_schema())
        };
        let (p_ab, r_ab) = self
            .exchange(&ask(&p.items[0], &p.items[1]), tally, parse)
            .await?;
        let (p_ba, r_ba) = self
            .exchange(&ask(&p.items[1], &p.items[0]), tally, parse)
            .await?;
        // Affirmative = the first projection item prevails.
        let prob = (p_ab + (1.0 - p_ba)) / 2.0;
        let a = answer(
            if prob >= 0.5 { aff } else { neg },
            prob,
            format!(
                "[order {0},{1}] {r_ab}\n[order {1},{0}] {r_ba}",
                p.items[0].label, p.items[1].label
            ),
        );
        check_against_motion(&a, m)?;
        let r = reading(
            "stated",
            ins,
            vec![
                order("as-given", p_ab, 1.0),
                order("swapped", 1.0 - p_ba, 1.0),
            ],
        );
        Ok((a, r))
    }

    /// The stated fallback for every other motion: one answer object about the whole
    /// projection, its probability as written.
    async fn single_stated(
        &self,
        m: &Motion,
        ins: &Instructions,
        source: Option<&Retrieved>,
        tally: &mut Tally,
    ) -> Result<(JudgeAnswer, JudgeReading), JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
        let user = format!(
            "Motion (JSON):\n{}\n\nAnswer with decision, probability (credence in the affirmative \
             decision, the first of allowed_decisions), rationale, and relevance/tier/quantiles \
             where the motion asks for them.{}{}{JSON_FORM}",
            motion_json(m, false),
            procedure_instruction(m),
            source_section(kind, source)
        );
        let body = self.json_body(&ins.text, &user, Self::answer_schema(m));
        let a = self
            .exchange(&body, tally, |v| {
                let text = content(v)?;
                parse_answer(text, m).map_err(|e| match e {
                    JudgeError::BadAnswer(why) => {
                        JudgeError::BadAnswer(format!("{why}; the model wrote \"{}\"", shown(text)))
                    }
                    e => e,
                })
            })
            .await?;
        let r = reading("stated", ins, vec![order("as-given", a.probability, 1.0)]);
        Ok((a, r))
    }

    /// Notes what a next-token question showed of the endpoint.
    fn note_logprobs(&self, given: bool) {
        if given {
            self.logprobs.store(LOGPROBS_GIVEN, Ordering::Relaxed);
        } else if self.logprobs.swap(LOGPROBS_ABSENT, Ordering::Relaxed) != LOGPROBS_ABSENT {
            tracing::warn!(
                url = %self.url,
                "the endpoint returned no token log-probabilities; this judge now rules by \
                 the probability the model writes (reading method \"stated\")"
            );
        }
    }

    async fn run(&self, m: &Motion, source: Option<&Retrieved>) -> Result<JudgeAnswer, JudgeError> {
        let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
        let ins = self.persona.instructions(&m.debate_id);
        let mut tally = Tally::default();
        let logprobs = self.logprobs.load(Ordering::Relaxed);
        let read = if crux_report(m) || logprobs == LOGPROBS_ABSENT {
            None
        } else {
            // The endpoint gets the content as message text: no chat markers to scrub here.
            match question(m, &|s: &str| s.to_owned()) {
                Question::Binary(orders) => {
                    let preamble = source_preamble(kind, source);
                    let r = self
                        .binary_by_next_token(m, &ins, &orders, &preamble, &mut tally)
                        .await?;
                    self.note_logprobs(r.is_some());
                    r
                }
                Question::Ordinal { user, scale } => {
                    let r = self
                        .ordinal_by_next_token(&ins, &user, scale, &mut tally)
                        .await?;
                    self.note_logprobs(r.is_some());
                    r
                }
                // Written numbers either way: the local judge's question once the endpoint
                // has shown it reads like one, the JSON answer until then.
                Question::Quantiles { user, levels, .. } if logprobs == LOGPROBS_GIVEN => Some(
                    self.quantiles_written(&ins, &user, &levels, &mut tally)
                        .await?,
                ),
                Question::Quantiles { .. } => None,
            }
        };
        let (mut answer, reading) = match read {
            Some(r) => r,
            None => {
                let items = m.projection.as_ref().map_or(0, |p| p.items.len());
                // Exam, procedure and tier-verification motions ask for one answer about
                // the whole projection (a tier-verification's two items are the source and
                // the claim).
                let pairwise = !matches!(
                    kind,
                    MotionKind::Exam | MotionKind::Procedure | MotionKind::VerifyTier
                );
                if pairwise && binary_pair(kind).is_some() && items == 2 {
                    self.pairwise_stated(m, &ins, &mut tally).await?
                } else {
                    self.single_stated(m, &ins, source, &mut tally).await?
                }
            }
        };
        check_against_motion(&answer, m)?;
        answer.provenance = Some(tally.provenance(&self.settings.model, reading));
        Ok(answer)
    }
}

/// The assistant message of a reply.
fn content(v: &Value) -> Result<&str, JudgeError> {
    v.pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            JudgeError::BadAnswer("response has no choices[0].message.content string".into())
        })
}

/// For a tier-verification motion asked by next-token: what the node retrieved, before
/// the question.
fn source_preamble(kind: MotionKind, source: Option<&Retrieved>) -> String {
    if kind != MotionKind::VerifyTier {
        return String::new();
    }
    match source {
        Some(r) => format!(
            "This node retrieved the cited source itself from {} (SHA-256 of the bytes: {}). \
             Its text{}, between the markers:\n<<<SOURCE\n{}\nSOURCE>>>\n\
             Judge the claim from what this source is and what it says; do not assume \
             content that is not shown.\n\n",
            r.url,
            r.sha256_hex,
            if r.truncated {
                " (cut at the node's bound)"
            } else {
                ""
            },
            r.text
        ),
        None => "This node could not retrieve the cited source; a source nobody retrieved \
                 cannot be verified.\n\n"
            .into(),
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
    use crate::judge::prompt::DeclaredStance;
    use panel_proto::pb::{ContentProjection, ProjectionItem};
    use std::sync::{Arc, Mutex};

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

    fn merge_motion() -> Motion {
        let item = |label: &str, text: &str| ProjectionItem {
            label: label.into(),
            text: text.into(),
            ..Default::default()
        };
        Motion {
            motion_id: "m-merge".into(),
            debate_id: "d-1".into(),
            kind: MotionKind::Merge as i32,
            state_hash: vec![1; 32],
            projection: Some(ContentProjection {
                question: "Should the candidate replace the incumbent?".into(),
                resolution: "Remote work raises output.".into(),
                items: vec![
                    item("candidate", "Output per hour rose 4%."),
                    item("incumbent", "Output rose."),
                ],
                ..Default::default()
            }),
            commit_deadline_unix_ms: i64::MAX,
            reveal_deadline_unix_ms: i64::MAX,
            ..Default::default()
        }
    }

    /// A chat completion with `content` and, when given, one answer position whose
    /// alternatives are `top` (token, probability).
    fn completion(content: &str, top: Option<&[(&str, f64)]>) -> String {
        let mut v = json!({
            "model": "local-model-q4", "system_fingerprint": "fp_1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        });
        if let Some(top) = top {
            let alts: Vec<Value> = top
                .iter()
                .map(|(t, p)| json!({"token": t, "logprob": p.ln()}))
                .collect();
            v["choices"][0]["logprobs"] = json!({"content": [{
                "token": top[0].0, "logprob": top[0].1.ln(), "top_logprobs": alts
            }]});
        }
        v.to_string()
    }

    /// Over HTTPS with a CA file, against an endpoint without log-probabilities: the first
    /// question finds none, the judge falls back to the JSON answer, a malformed first
    /// JSON reply is retried; `usage` is summed over the three requests, the reported
    /// model is kept, and the reading says "stated".
    #[tokio::test]
    async fn https_endpoint_with_a_ca_file_and_usage_in_the_provenance() {
        let pki = test_pki();
        let json_calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = json_calls.clone();
        let (port, count) = serve_with(&pki, move |body| {
            let v: Value = serde_json::from_str(body).unwrap();
            if v["logprobs"] == true {
                assert!(!body.contains("json_schema"), "{body}");
                return (200, completion("3", None));
            }
            assert!(body.contains("json_schema"), "{body}");
            let content = if n.fetch_add(1, Ordering::Relaxed) == 0 {
                "not json"
            } else {
                r#"{"decision":"NONE","probability":0.7,"relevance":3,"rationale":"bears on it"}"#
            };
            (200, completion(content, None))
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
        let m = relevance_motion();
        let a = judge.decide(&m).await.unwrap();
        assert_eq!(a.relevance, Some(3));
        let p = a.provenance.unwrap();
        assert_eq!(p.judge_kind, "llm");
        assert_eq!(p.model, "local-model");
        assert_eq!(p.model_version, "local-model-q4 system_fingerprint=fp_1");
        assert_eq!(
            (p.prompt_tokens, p.completion_tokens),
            (Some(300), Some(30))
        );
        assert_eq!(p.requests, 3);
        assert_eq!(count.load(Ordering::Relaxed), 3);
        let r = p.reading.unwrap();
        assert_eq!(r.method, "stated");
        assert_eq!(
            r.prompt_sha256,
            Persona::default().instructions("d-1").sha256.to_vec()
        );
        assert_eq!(r.orders.len(), 1);
        assert!((r.orders[0].p_affirmative - 0.7).abs() < 1e-12);

        // Remembered: the next ruling asks for the JSON answer straight away.
        let again = judge.decide(&m).await.unwrap();
        assert_eq!(again.provenance.unwrap().requests, 1);
        assert_eq!(count.load(Ordering::Relaxed), 4);
    }

    /// An endpoint with log-probabilities: a pairwise motion is asked the local judge's
    /// question in both orders under the arbiter's instructions, P(affirmative) is the
    /// normalised Yes/No mass per order, the probability their mean.
    #[tokio::test]
    async fn log_probabilities_are_read_per_order_under_the_arbiters_instructions() {
        let pki = test_pki();
        let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
        let seen = bodies.clone();
        let (port, _) = serve_with(&pki, move |body| {
            let v: Value = serde_json::from_str(body).unwrap();
            seen.lock().unwrap().push(v.clone());
            let user = v["messages"][1]["content"].as_str().unwrap_or("");
            // Prefers whichever item comes first, the candidate more.
            let top: &[(&str, f64)] = if user.contains("FIRST, candidate") {
                &[("Yes", 0.6), (" Yes", 0.2), ("No", 0.1), ("Maybe", 0.05)]
            } else {
                &[("No", 0.6), ("Yes", 0.3), ("**", 0.05)]
            };
            (200, completion(top[0].0, Some(top)))
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        let mut persona = Persona {
            persona: Some("You are a careful statistician.".into()),
            ..Persona::default()
        };
        persona.stances.insert(
            "d-1".into(),
            DeclaredStance {
                side: "B".into(),
                credence: 0.6,
            },
        );
        let ins = persona.instructions("d-1");
        let judge = LlmJudge::new(LlmSettings {
            api_key: None,
            ..settings(
                format!("https://127.0.0.1:{port}/v1"),
                TrustRoots::CaFile {
                    key: "judge.ca_file",
                    path: ca,
                },
            )
        })
        .unwrap()
        .with_persona(persona, 0.4)
        .unwrap();
        let m = merge_motion();
        let a = judge.decide(&m).await.unwrap();
        let p = a.provenance.clone().unwrap();
        let r = p.reading.unwrap();
        assert_eq!(r.method, "next-token");
        assert_eq!(r.prompt_sha256, ins.sha256.to_vec());
        let orders: Vec<&str> = r.orders.iter().map(|o| o.order.as_str()).collect();
        assert_eq!(orders, ["as-given", "swapped"]);
        assert!((r.orders[0].p_affirmative - 0.8 / 0.9).abs() < 1e-9);
        assert!((r.orders[0].answer_mass - 0.9).abs() < 1e-9);
        // Swapped: "Yes" means the incumbent prevails.
        assert!((r.orders[1].p_affirmative - 0.6 / 0.9).abs() < 1e-9);
        let mean = (r.orders[0].p_affirmative + r.orders[1].p_affirmative) / 2.0;
        assert!((a.probability - mean).abs() < 1e-12);
        assert_eq!(a.decision, Decision::Accept);
        assert!(a.rationale.contains("next-token"), "{}", a.rationale);
        assert_eq!(p.requests, 2);
        let bodies = bodies.lock().unwrap();
        for b in bodies.iter() {
            assert_eq!(b["messages"][0]["content"], ins.text.as_str());
            assert!(ins.text.contains("careful statistician") && ins.text.contains("side B"));
            assert_eq!(b["logprobs"], true);
            assert_eq!(b["top_logprobs"], 20);
            assert_eq!(b["temperature"], 0.4);
            assert!(b.get("response_format").is_none());
        }
    }

    /// Relevance from the digits' probabilities: the expectation over the steps, rounded.
    #[tokio::test]
    async fn relevance_is_read_from_the_digit_tokens() {
        let pki = test_pki();
        let (port, _) = serve_with(&pki, |_| {
            (
                200,
                completion(
                    "3",
                    Some(&[("3", 0.5), (" 4", 0.3), ("2", 0.1), ("x", 0.1)]),
                ),
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
        // (3 * 0.5 + 4 * 0.3 + 2 * 0.1) / 0.9 = 3.22: step 3, confidence 0.5 / 0.9.
        assert_eq!(a.relevance, Some(3));
        assert!((a.probability - 0.5 / 0.9).abs() < 1e-9);
        let r = a.provenance.unwrap().reading.unwrap();
        assert_eq!((r.method.as_str(), r.orders.len()), ("next-token", 1));
        assert!((r.orders[0].answer_mass - 0.9).abs() < 1e-9);
    }

    #[test]
    fn the_answer_is_read_at_the_first_position_holding_an_answer_token() {
        let v = json!({"choices": [{"message": {"content": "**Yes**"}, "logprobs": {"content": [
            {"token": "**", "logprob": -0.1, "top_logprobs": [{"token": "**", "logprob": -0.1}]},
            {"token": "Yes", "logprob": -0.5, "top_logprobs": [
                {"token": "No", "logprob": (0.25f64).ln()}, {"token": "bad", "logprob": "x"}]},
        ]}}]});
        let r = read_reply(&v);
        let pos = r.positions.unwrap();
        // The written token is an alternative too when the list leaves it out.
        assert_eq!(pos[1].alternatives.len(), 2);
        let (yes, no) = yes_no(&pos);
        assert!((yes - (-0.5f64).exp()).abs() < 1e-12 && (no - 0.25).abs() < 1e-12);
        assert_eq!(r.written, "**Yes**");
        // No logprobs at all, or an empty list: none given.
        let none = json!({"choices": [{"message": {"content": "Yes"}, "logprobs": null}]});
        assert!(read_reply(&none).positions.is_none());
        let empty =
            json!({"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": []}}]});
        assert!(read_reply(&empty).positions.is_none());
        // No answer token anywhere: no mass (read as one half).
        assert_eq!(yes_no(&[]), (0.0, 0.0));
        assert_eq!(written_numbers("5, 10.5; 20 km"), [5.0, 10.5, 20.0]);
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
        let e = LlmJudge::new(settings(
            "http://127.0.0.1:8080/v1".into(),
            TrustRoots::System,
        ))
        .unwrap()
        .with_persona(Persona::default(), 3.0)
        .err()
        .unwrap();
        assert!(e.to_string().contains("judge.temperature"), "{e}");
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
        let s = source_preamble(MotionKind::VerifyTier, Some(&r));
        assert!(s.contains("<<<SOURCE\nthe page says 4%\nSOURCE>>>") && s.ends_with("\n\n"));
        assert!(source_preamble(MotionKind::VerifyTier, None).contains("could not retrieve"));
        assert!(source_preamble(MotionKind::Merge, Some(&r)).is_empty());
    }
}
