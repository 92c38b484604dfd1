//! `panel model serve`: an OpenAI-compatible chat-completions endpoint over the in-process
//! engine (`panel-lm`), so an `llm` judge (or any client of that API) can use a GGUF model
//! without llama.cpp (docs/JUDGES.md "panel model serve").
//!
//! * `POST /v1/chat/completions`: one system message (optional) and one user message,
//!   rendered through the file's chat template; `max_tokens` (lowered to the server's
//!   cap, at most [`MAX_TOKENS_CAP`]), `temperature` in [0, 2], `seed`, `logprobs`, `top_logprobs` (at
//!   most [`MAX_TOP_LOGPROBS`]). The reply has the written token's log-probability and its
//!   alternatives per position, `usage` and a `system_fingerprint` naming the file's
//!   digest. `response_format` is accepted and not enforced: the model writes what it
//!   writes, and the judge checks it.
//! * `GET /v1/models`: the one model loaded.
//! * Bounded: a body of at most [`MAX_BODY_BYTES`] (413 beyond), one generation at a time
//!   (the others wait, at most `max_queue` of them; 503 beyond), the prompt and the answer
//!   within the context the model was loaded with. A request the server cannot take gets a
//!   400 whose JSON error names the field (`error.param`).
//! * Loopback only unless told otherwise, and a request must be addressed to a loopback
//!   host (the Host header) and be `application/json`, so a web page can neither post to it
//!   as a simple cross-site request nor read it through a rebound name.
//! * Message content has the model's chat markers broken up ([`Model::scrub`]), so a user
//!   message cannot open a turn of its own.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use panel_lm::{Cache, LmError, LoadOptions, Model, NextToken, SlowFormats};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Largest request body, in bytes.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most tokens one completion writes; a larger `max_tokens` is lowered to this.
pub const MAX_TOKENS_CAP: usize = 256;
/// Most alternatives per position (as OpenAI's API).
pub const MAX_TOP_LOGPROBS: usize = 20;
/// Requests that may wait for the model by default.
pub const DEFAULT_MAX_QUEUE: usize = 16;
/// Positions a new prompt must share with the cached one before reuse is worth a copy.
const MIN_REUSE: usize = 8;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("--weights {0:?} must be \"auto\", \"q8\", \"f32\" or \"as-file\"")]
    Weights(String),
    #[error("{}: {source}", .path.display())]
    Load { path: PathBuf, source: LmError },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "--listen {addr} is not a loopback address and the server has no authentication: \
         anyone who reaches it can use the model. Listen on 127.0.0.1, or pass --allow-remote \
         behind a firewall or an authenticating proxy"
    )]
    NotLoopback { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("server: {0}")]
    Serve(std::io::Error),
}

/// `--weights`: how weights candle multiplies on a scalar path (Q5_0, Q5_1) are held; as
/// the local judge's `weights`, "auto" is f32 for files up to 600 MB, q8 above.
pub fn parse_weights(s: &str, model: &Path) -> Result<SlowFormats, ServeError> {
    match s {
        "auto" => {
            let bytes = std::fs::metadata(model).map_or(u64::MAX, |m| m.len());
            Ok(if bytes <= 600 << 20 {
                SlowFormats::F32
            } else {
                SlowFormats::Q8
            })
        }
        "q8" => Ok(SlowFormats::Q8),
        "f32" => Ok(SlowFormats::F32),
        "as-file" => Ok(SlowFormats::AsFile),
        other => Err(ServeError::Weights(other.to_owned())),
    }
}

/// Refuses a listening address beyond loopback unless `allow_remote`.
pub fn check_listen(addr: SocketAddr, allow_remote: bool) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(ServeError::NotLoopback { addr })
    }
}

/// The tokens last fed and their cache, for prefix reuse.
type Slot = Option<(Vec<u32>, Cache)>;

/// The loaded model and the one slot it generates in.
pub struct Engine {
    model: Model,
    /// What replies name as `model`: the file's name without `.gguf`.
    label: String,
    /// `system_fingerprint`: the file's digest and the weights' form.
    fingerprint: String,
    context: usize,
    /// Tokens that end an answer (EOS, end-of-turn markers).
    stop: Vec<u32>,
    /// One generation at a time; the last prompt's tokens and cache, for prefix reuse.
    slot: Arc<tokio::sync::Mutex<Slot>>,
    served: AtomicU64,
}

/// Stop markers looked up by text (as `panel-lm` does for generation).
const END_OF_TURN: [&str; 3] = ["<end_of_turn>", "<|im_end|>", "<|endoftext|>"];

impl Engine {
    /// Loads the model (seconds: the file is read, hashed for the fingerprint, slow formats
    /// converted).
    pub fn load(path: &Path, weights: SlowFormats, context: usize) -> Result<Self, ServeError> {
        let model = Model::load(
            path,
            LoadOptions {
                slow_formats: weights,
                context,
            },
        )
        .map_err(|source| ServeError::Load {
            path: path.to_owned(),
            source,
        })?;
        let sha = file_sha256(path).map_err(|source| ServeError::Read {
            path: path.to_owned(),
            source,
        })?;
        let md = model.metadata();
        let mut stop: Vec<u32> = md.tokenizer.eos.into_iter().collect();
        for marker in END_OF_TURN {
            if let Some(i) = md.tokenizer.tokens.iter().position(|t| t == marker) {
                stop.push(i as u32);
            }
        }
        stop.sort_unstable();
        stop.dedup();
        let label = path
            .file_name()
            .map(|f| f.to_string_lossy().trim_end_matches(".gguf").to_owned())
            .unwrap_or_else(|| md.name.clone());
        Ok(Self {
            fingerprint: format!("panel-lm sha256:{} weights={weights:?}", &sha[..16]),
            context: context.min(md.context_length.max(1)),
            label,
            stop,
            model,
            slot: Arc::default(),
            served: AtomicU64::new(0),
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The name replies give as `model`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// One completion, on the calling (blocking) thread, in `slot`.
    fn complete(
        &self,
        slot: &mut Slot,
        req: &ChatRequest,
        logprobs: bool,
    ) -> Result<Completion, Refusal> {
        let system = self.model.scrub(&req.system);
        let user = self.model.scrub(&req.user);
        let text = self
            .model
            .chat_prompt(&system, &user)
            .map_err(Refusal::internal)?;
        let prompt = self.model.prompt_tokens(&text).map_err(Refusal::internal)?;
        if prompt.is_empty() {
            return Err(Refusal::bad(
                "messages",
                "the messages make an empty prompt",
            ));
        }
        if prompt.len() >= self.context {
            return Err(Refusal::bad(
                "messages",
                format!(
                    "the prompt is {} tokens; this server's context is {} (--context)",
                    prompt.len(),
                    self.context
                ),
            ));
        }
        let shared = slot.as_ref().map_or(0, |(prev, _)| {
            prev.iter().zip(&prompt).take_while(|(a, b)| a == b).count()
        });
        let keep = shared.min(prompt.len() - 1);
        let mut cache = match slot.take() {
            Some((_, mut c)) if keep >= MIN_REUSE => {
                c.truncate(keep).map_err(Refusal::internal)?;
                c
            }
            _ => Cache::default(),
        };
        let from = cache.len();
        let mut next = self
            .model
            .feed(&mut cache, &prompt[from..])
            .map_err(Refusal::internal)?;
        let mut fed = prompt.clone();
        let mut sampler = panel_lm::sampling::Sampler::new(req.temperature, req.seed);
        let mut out = Vec::new();
        let mut positions = Vec::new();
        let mut finish = "length";
        while out.len() < req.max_tokens && cache.len() < self.context {
            let id = sampler.pick(&next);
            if self.stop.contains(&id) {
                finish = "stop";
                break;
            }
            if logprobs && req.logprobs {
                positions.push(self.position(&next, id, req.top_logprobs));
            }
            out.push(id);
            if out.len() == req.max_tokens {
                break;
            }
            next = self
                .model
                .feed(&mut cache, &[id])
                .map_err(Refusal::internal)?;
            fed.push(id);
        }
        *slot = Some((fed, cache));
        Ok(Completion {
            content: self.model.tokenizer().decode(&out),
            positions: (logprobs && req.logprobs).then_some(positions),
            finish,
            prompt_tokens: prompt.len(),
            completion_tokens: out.len(),
        })
    }

    /// One position of `logprobs.content`.
    fn position(&self, next: &NextToken, id: u32, k: usize) -> Value {
        let token = |id: u32| self.model.tokenizer().decode(&[id]);
        let lp = |id: u32| finite(next.logprobs.get(id as usize).copied().unwrap_or(f64::MIN));
        json!({
            "token": token(id),
            "logprob": lp(id),
            "top_logprobs": next.top(k).into_iter().map(|(t, l)| json!({
                "token": token(t), "logprob": finite(l),
            })).collect::<Vec<_>>(),
        })
    }
}

/// A log-probability JSON can carry (no infinities).
fn finite(lp: f64) -> f64 {
    if lp.is_finite() { lp } else { -1e4 }
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A request as the server takes it.
#[derive(Debug, Clone, PartialEq)]
struct ChatRequest {
    system: String,
    user: String,
    max_tokens: usize,
    temperature: f64,
    seed: u64,
    logprobs: bool,
    top_logprobs: usize,
}

struct Completion {
    content: String,
    positions: Option<Vec<Value>>,
    finish: &'static str,
    prompt_tokens: usize,
    completion_tokens: usize,
}

/// Why a request gets no completion: the status and an OpenAI-style error.
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    param: Option<&'static str>,
    message: String,
}

impl Refusal {
    fn bad(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            param: Some(param),
            message: message.into(),
        }
    }

    fn status(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            param: None,
            message: message.into(),
        }
    }

    fn internal(e: impl std::fmt::Display) -> Self {
        Self::status(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the model failed: {e}"),
        )
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let kind = match self.status {
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "invalid_request_error",
            StatusCode::UNSUPPORTED_MEDIA_TYPE | StatusCode::MISDIRECTED_REQUEST => {
                "invalid_request_error"
            }
            StatusCode::SERVICE_UNAVAILABLE => "server_busy",
            StatusCode::NOT_FOUND => "not_found",
            _ => "server_error",
        };
        let body = json!({"error": {
            "message": self.message, "type": kind, "param": self.param, "code": Value::Null,
        }});
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

/// The text of a message's `content`: a string, or an array of `{type: "text", text}`
/// parts.
fn message_text(v: &Value, at: usize) -> Result<String, Refusal> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match (p["type"].as_str(), p["text"].as_str()) {
                (Some("text"), Some(t)) => Ok(t),
                _ => Err(Refusal::bad(
                    "messages",
                    format!("messages[{at}].content: only text parts are supported"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|t| t.concat()),
        _ => Err(Refusal::bad(
            "messages",
            format!("messages[{at}].content must be a string or an array of text parts"),
        )),
    }
}

/// A request body checked field by field; every refusal names the field.
fn parse_request(bytes: &[u8], cap: usize) -> Result<ChatRequest, Refusal> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| Refusal::bad("body", format!("the body is not JSON: {e}")))?;
    let Some(o) = v.as_object() else {
        return Err(Refusal::bad("body", "the body must be a JSON object"));
    };
    let messages = o
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| Refusal::bad("messages", "messages must be a non-empty array"))?;
    let mut system = Vec::new();
    let mut user = None;
    for (i, m) in messages.iter().enumerate() {
        let text = message_text(&m["content"], i)?;
        match (m["role"].as_str(), &user) {
            (Some("system" | "developer"), None) => system.push(text),
            (Some("user"), None) => user = Some(text),
            (Some("system" | "developer" | "user" | "assistant" | "tool"), _) => {
                return Err(Refusal::bad(
                    "messages",
                    format!(
                        "messages[{i}]: this server answers one turn: system messages, then \
                         one user message"
                    ),
                ));
            }
            _ => {
                return Err(Refusal::bad(
                    "messages",
                    format!("messages[{i}].role must be \"system\" or \"user\""),
                ));
            }
        }
    }
    let user = user.ok_or_else(|| Refusal::bad("messages", "messages need one user message"))?;
    let uint = |name: &'static str| -> Result<Option<u64>, Refusal> {
        match o.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x.as_u64().map(Some).ok_or_else(|| {
                Refusal::bad(name, format!("{name} must be a non-negative integer"))
            }),
        }
    };
    let flag = |name: &'static str| -> Result<bool, Refusal> {
        match o.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Refusal::bad(name, format!("{name} must be true or false"))),
        }
    };
    let max_tokens = match (uint("max_tokens")?, uint("max_completion_tokens")?) {
        (Some(0), _) | (_, Some(0)) => {
            return Err(Refusal::bad("max_tokens", "max_tokens must be at least 1"));
        }
        (Some(n), _) | (None, Some(n)) => (n as usize).min(cap),
        (None, None) => cap,
    };
    let temperature = match o.get("temperature") {
        None | Some(Value::Null) => 1.0,
        Some(t) => t
            .as_f64()
            .filter(|t| (0.0..=2.0).contains(t))
            .ok_or_else(|| Refusal::bad("temperature", "temperature must be a number in [0, 2]"))?,
    };
    let logprobs = flag("logprobs")?;
    let top_logprobs = match uint("top_logprobs")? {
        Some(k) if k as usize > MAX_TOP_LOGPROBS => {
            return Err(Refusal::bad(
                "top_logprobs",
                format!("top_logprobs must be at most {MAX_TOP_LOGPROBS}"),
            ));
        }
        Some(k) if k > 0 && !logprobs => {
            return Err(Refusal::bad(
                "top_logprobs",
                "top_logprobs needs \"logprobs\": true",
            ));
        }
        k => k.unwrap_or(0) as usize,
    };
    if flag("stream")? {
        return Err(Refusal::bad("stream", "stream is not supported"));
    }
    if uint("n")?.is_some_and(|n| n != 1) {
        return Err(Refusal::bad("n", "n must be 1"));
    }
    if o.get("model").is_some_and(|m| !m.is_string()) {
        return Err(Refusal::bad("model", "model must be a string"));
    }
    Ok(ChatRequest {
        system: system.join("\n\n"),
        user,
        max_tokens,
        temperature,
        seed: uint("seed")?.unwrap_or(0),
        logprobs,
        top_logprobs,
    })
}

/// How a server answers.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Whether replies carry log-probabilities when asked (off: like an endpoint without
    /// them, for tests and for comparing the two readings).
    pub logprobs: bool,
    /// Requests that may wait for the model; more get 503.
    pub max_queue: usize,
    /// Most tokens one completion writes (at most [`MAX_TOKENS_CAP`]); a larger
    /// `max_tokens`, or none, is lowered to this.
    pub max_tokens: usize,
    /// Answer requests addressed to any host (`--allow-remote`).
    pub allow_remote: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            logprobs: true,
            max_queue: DEFAULT_MAX_QUEUE,
            max_tokens: MAX_TOKENS_CAP,
            allow_remote: false,
        }
    }
}

#[derive(Clone)]
struct Served {
    engine: Arc<Engine>,
    opts: ServeOptions,
    /// Requests of this server waiting for or holding the engine's slot.
    busy: Arc<AtomicUsize>,
}

/// The routes over `engine`. Two routers over one engine share its one slot; each bounds
/// its own queue.
pub fn router(engine: Arc<Engine>, opts: ServeOptions) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .fallback(|| async {
            Refusal::status(
                StatusCode::NOT_FOUND,
                "no such route: POST /v1/chat/completions and GET /v1/models are served",
            )
        })
        .with_state(Served {
            engine,
            opts,
            busy: Arc::default(),
        })
}

/// Whether the Host header names loopback (`localhost`, 127.0.0.0/8, `[::1]`).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn checked_origin(s: &Served, headers: &HeaderMap) -> Result<(), Refusal> {
    if !s.opts.allow_remote && !loopback_host(headers) {
        return Err(Refusal::status(
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers requests addressed to localhost or a loopback address only",
        ));
    }
    Ok(())
}

async fn models(State(s): State<Served>, headers: HeaderMap) -> Response {
    if let Err(r) = checked_origin(&s, &headers) {
        return r.into_response();
    }
    let body = json!({"object": "list", "data": [{
        "id": s.engine.label, "object": "model", "created": 0, "owned_by": "panel-lm",
    }]});
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Counts a request in the engine's queue while it lives.
struct InQueue<'a>(&'a AtomicUsize);

impl Drop for InQueue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn chat(State(s): State<Served>, headers: HeaderMap, body: Body) -> Response {
    match chat_inner(&s, &headers, body).await {
        Ok(v) => ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response(),
        Err(r) => r.into_response(),
    }
}

async fn chat_inner(s: &Served, headers: &HeaderMap, body: Body) -> Result<Value, Refusal> {
    checked_origin(s, headers)?;
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json_type {
        return Err(Refusal {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            param: Some("content-type"),
            message: "the request's content-type must be application/json".into(),
        });
    }
    let too_large = || Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        param: Some("body"),
        message: format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            let inner = e.into_inner();
            if inner
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                too_large()
            } else {
                Refusal::bad("body", format!("the body could not be read: {inner}"))
            }
        })?;
    let req = parse_request(&bytes, s.opts.max_tokens.clamp(1, MAX_TOKENS_CAP))?;
    let engine = &s.engine;
    let waiting = s.busy.fetch_add(1, Ordering::Relaxed);
    let _queued = InQueue(&s.busy);
    if waiting > s.opts.max_queue {
        return Err(Refusal::status(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server is busy: one completion runs and {} wait; try again",
                s.opts.max_queue
            ),
        ));
    }
    let mut slot = engine.slot.clone().lock_owned().await;
    let started = Instant::now();
    let (e, r, logprobs) = (engine.clone(), req.clone(), s.opts.logprobs);
    let done = tokio::task::spawn_blocking(move || e.complete(&mut slot, &r, logprobs))
        .await
        .map_err(|e| Refusal::internal(format!("the model thread stopped: {e}")))??;
    let n = engine.served.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::info!(
        request = n,
        prompt_tokens = done.prompt_tokens,
        completion_tokens = done.completion_tokens,
        ms = started.elapsed().as_millis() as u64,
        "chat completion"
    );
    let mut choice = json!({
        "index": 0,
        "message": {"role": "assistant", "content": done.content},
        "logprobs": Value::Null,
        "finish_reason": done.finish,
    });
    if let Some(p) = done.positions {
        choice["logprobs"] = json!({"content": p});
    }
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "created": created,
        "model": engine.label,
        "system_fingerprint": engine.fingerprint,
        "choices": [choice],
        "usage": {
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens,
            "total_tokens": done.prompt_tokens + done.completion_tokens,
        },
    }))
}

/// Serves `engine` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Arc<Engine>,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    axum::serve(listener, router(engine, opts))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

/// Binds `addr` (loopback unless `opts.allow_remote`), reports the bound address, and
/// serves until `shutdown`.
pub async fn bind_and_serve(
    addr: SocketAddr,
    engine: Arc<Engine>,
    opts: ServeOptions,
    on_bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    check_listen(addr, opts.allow_remote)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    on_bound(bound);
    serve(listener, engine, opts, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Result<ChatRequest, Refusal> {
        parse_request(v.to_string().as_bytes(), MAX_TOKENS_CAP)
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        let ok = req(json!({"model": "x", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "max_tokens": 10_000, "temperature": 0, "logprobs": true, "top_logprobs": 20,
            "response_format": {"type": "json_object"}}))
        .unwrap();
        assert_eq!(
            (ok.system.as_str(), ok.user.as_str(), ok.max_tokens),
            ("sys", "hi", MAX_TOKENS_CAP)
        );
        assert_eq!(
            (ok.temperature, ok.logprobs, ok.top_logprobs),
            (0.0, true, 20)
        );
        let param = |v: Value| req(v).unwrap_err().param.unwrap();
        let user = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(param(json!({"messages": []})), "messages");
        assert_eq!(param(json!([1])), "body");
        assert_eq!(
            param(json!({"messages": [{"role": "assistant", "content": "x"}]})),
            "messages"
        );
        assert_eq!(
            param(json!({"messages": [{"role": "user", "content": "a"},
                                      {"role": "user", "content": "b"}]})),
            "messages"
        );
        assert_eq!(
            param(json!({"messages": user, "top_logprobs": 21, "logprobs": true})),
            "top_logprobs"
        );
        assert_eq!(
            param(json!({"messages": user, "top_logprobs": 2})),
            "top_logprobs"
        );
        assert_eq!(
            param(json!({"messages": user, "temperature": 3})),
            "temperature"
        );
        assert_eq!(
            param(json!({"messages": user, "max_tokens": -1})),
            "max_tokens"
        );
        assert_eq!(param(json!({"messages": user, "stream": true})), "stream");
        assert_eq!(param(json!({"messages": user, "n": 2})), "n");
        assert_eq!(
            param(json!({"messages": user, "logprobs": "yes"})),
            "logprobs"
        );
        assert!(
            parse_request(b"{", 1)
                .unwrap_err()
                .message
                .contains("not JSON")
        );
    }

    #[test]
    fn only_loopback_hosts_are_answered_by_default() {
        let h = |host: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::HOST, host.parse().unwrap());
            loopback_host(&m)
        };
        assert!(h("127.0.0.1:8081") && h("localhost") && h("[::1]:80") && h("LOCALHOST:1"));
        assert!(!h("evil.example:8081") && !h("10.0.0.1") && !loopback_host(&HeaderMap::new()));
        assert!(check_listen("0.0.0.0:8081".parse().unwrap(), false).is_err());
        assert!(check_listen("0.0.0.0:8081".parse().unwrap(), true).is_ok());
        assert!(check_listen("127.0.0.1:0".parse().unwrap(), false).is_ok());
    }
}
