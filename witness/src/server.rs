//! The witness's HTTP/1.1 server (docs/WITNESS.md, "Endpoints"):
//!
//! - `POST /add-checkpoint`: C2SP tlog-witness v1.0.0; the decision is
//!   `panel_tlog::witness::decide`, the answer a `cosignature/v1` line;
//! - `GET /<hex SHA-256 of the origin>/checkpoint`: the latest cosigned checkpoint (the
//!   monitoring prefix is the submission prefix).
//!
//! Bodies, headers and read times are bounded, so a slow or large request costs little;
//! nothing a request carries can panic the server (every refusal is a status).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use panel_tlog::witness::{AddCheckpoint, KnownLog, Latest, Refusal, decide};
use panel_tlog::{Checkpoint, Cosigner, Note, VerifierKey};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::config::{Clock, Config, StartError};
use crate::store::{Entry, Store, write_atomically};

/// Largest request body read: a request is a size line, at most 63 hashes and a checkpoint
/// of a few hundred bytes, so 64 KiB is generous.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Largest request head (request line and headers).
pub use crate::http_serve::MAX_HEADER_BYTES;
use crate::http_serve::READ_TIMEOUT;

const TEXT: &str = "text/plain; charset=utf-8";
const SIZE: &str = "text/x.tlog.size";

struct Shared {
    logs: Vec<KnownLog>,
    cosigner: Cosigner,
    clock: Box<dyn Clock>,
    /// Held across the decision and the persist, so two requests cannot both pass the
    /// old-size check and then roll the stored size back (tlog-witness, add-checkpoint).
    store: Mutex<Store>,
}

/// A bound witness, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Loads the state from the data folder (refusing a corrupt one) and binds the address.
    pub async fn bind(config: Config, clock: impl Clock) -> Result<Server, StartError> {
        let store = Store::open(&config.data_dir, &config.cosigner.verifier())?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| StartError::Bind {
                    addr: config.listen,
                    source,
                })?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                logs: config.logs,
                cosigner: config.cosigner,
                clock: Box::new(clock),
                store: Mutex::new(store),
            }),
        })
    }

    /// The address it listens on (the port is real even when `:0` was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The witness's verifier key (type 0x04).
    pub fn vkey(&self) -> VerifierKey {
        self.shared.cosigner.verifier()
    }

    /// Serves until `shutdown` completes. A request already deciding finishes its persist
    /// even if its client goes away (the decision runs in its own task).
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let shared = self.shared.clone();
        crate::http_serve::serve(&self.listener, shutdown, move || {
            let shared = shared.clone();
            hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(route(shared, req).await) }
            })
        })
        .await;
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn refusal(r: &Refusal) -> Response<Full<Bytes>> {
    let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let ct = if matches!(r, Refusal::Conflict(_)) {
        SIZE
    } else {
        TEXT
    };
    respond(status, ct, r.body())
}

fn not_allowed(allow: &'static str) -> Response<Full<Bytes>> {
    let mut r = respond(
        StatusCode::METHOD_NOT_ALLOWED,
        TEXT,
        format!("use {allow}\n"),
    );
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    r
}

async fn route(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    if path == "/add-checkpoint" {
        if req.method() != Method::POST {
            return not_allowed("POST");
        }
        return match read_body(req).await {
            Ok(body) => add_checkpoint(shared, body).await,
            Err(r) => r,
        };
    }
    if let Some(hash) = path
        .strip_prefix('/')
        .and_then(|p| p.strip_suffix("/checkpoint"))
    {
        if req.method() != Method::GET {
            return not_allowed("GET");
        }
        return monitor(&shared, hash).await;
    }
    respond(
        StatusCode::NOT_FOUND,
        TEXT,
        "no such endpoint: POST /add-checkpoint or GET /<origin hash>/checkpoint\n".into(),
    )
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, Response<Full<Bytes>>> {
    let too_large = || {
        respond(
            StatusCode::PAYLOAD_TOO_LARGE,
            TEXT,
            format!("the body is larger than {MAX_BODY_BYTES} bytes\n"),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let body = Limited::new(req.into_body(), MAX_BODY_BYTES);
    match tokio::time::timeout(READ_TIMEOUT, body.collect()).await {
        Err(_) => Err(respond(
            StatusCode::REQUEST_TIMEOUT,
            TEXT,
            "the body did not arrive in time\n".into(),
        )),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(e)) => Err(respond(
            StatusCode::BAD_REQUEST,
            TEXT,
            format!("the body could not be read: {e}\n"),
        )),
        Ok(Ok(c)) => Ok(c.to_bytes()),
    }
}

async fn add_checkpoint(shared: Arc<Shared>, body: Bytes) -> Response<Full<Bytes>> {
    let req = match AddCheckpoint::parse(&body) {
        Ok(r) => r,
        Err(r) => return refusal(&r),
    };
    let origin = match Checkpoint::parse_body(&req.checkpoint.text) {
        Ok(cp) => cp.origin,
        Err(e) => return refusal(&Refusal::BadRequest(format!("the checkpoint: {e}"))),
    };
    // The decision and the persist run in their own task: if the client hangs up, hyper
    // drops this future, and a persist cut short would leave memory behind the disk.
    let task = tokio::spawn(decide_and_persist(shared, origin, req));
    match task.await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "the add-checkpoint task failed");
            respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                TEXT,
                "internal error\n".into(),
            )
        }
    }
}

async fn decide_and_persist(
    shared: Arc<Shared>,
    origin: String,
    req: AddCheckpoint,
) -> Response<Full<Bytes>> {
    let internal = |why: String| {
        tracing::error!(%origin, "{why}");
        respond(StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("{why}\n"))
    };
    let mut store = shared.store.lock().await;
    let cp = match decide(&shared.logs, store.get(&origin).map(|e| &e.latest), &req) {
        Ok(cp) => cp,
        Err(r) => {
            // Refusals of a known, validly signed log may be evidence of misbehaviour
            // (the spec allows logging them); the checkpoint is in the log line.
            if matches!(r, Refusal::Conflict(_) | Refusal::Unprocessable(_)) {
                tracing::warn!(%origin, old = req.old_size, reason = %r, checkpoint = %req.checkpoint.text, "refused");
            } else {
                tracing::info!(%origin, reason = %r, "refused");
            }
            return refusal(&r);
        }
    };
    let now = shared.clock.now_unix();
    if now == 0 {
        return internal("the clock reads 0; a cosignature must carry a real time".into());
    }
    let line = shared.cosigner.cosign(&req.checkpoint.text, now);
    // Keep the log's signatures the decision verified (not unknown keys'), then ours.
    let log_keys = shared
        .logs
        .iter()
        .find(|l| l.origin == origin)
        .map(|l| l.keys.as_slice())
        .unwrap_or_default();
    let mut note = Note {
        text: req.checkpoint.text.clone(),
        signatures: req
            .checkpoint
            .signatures
            .iter()
            .filter(|s| log_keys.iter().any(|k| k.matches(s)))
            .cloned()
            .collect(),
    };
    note.add(line.clone());
    let entry = Entry {
        latest: Latest {
            size: cp.size,
            root: cp.root,
        },
        note,
    };
    let bytes = match store.serialize_with(&origin, &entry) {
        Ok(b) => b,
        Err(e) => return internal(format!("the state could not be encoded: {e}")),
    };
    let dir = store.dir().to_path_buf();
    match tokio::task::spawn_blocking(move || write_atomically(&dir, &bytes)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return internal(format!(
                "the state could not be written to {}: {e}",
                store.dir().display()
            ));
        }
        Err(e) => return internal(format!("the state write did not finish: {e}")),
    }
    store.commit(&origin, entry);
    drop(store);
    tracing::info!(%origin, size = cp.size, "cosigned");
    respond(StatusCode::OK, TEXT, line.to_line())
}

async fn monitor(shared: &Shared, hash: &str) -> Response<Full<Bytes>> {
    let well_formed = hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let store = shared.store.lock().await;
    match store.by_origin_hash(hash).filter(|_| well_formed) {
        Some(e) => respond(StatusCode::OK, TEXT, e.note.to_text()),
        None => respond(
            StatusCode::NOT_FOUND,
            TEXT,
            "this witness has cosigned no checkpoint for that origin hash (lowercase hex SHA-256 of the origin)\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use panel_tlog::NoteSigner;
    use panel_tlog::merkle::Log;
    use std::time::Duration;

    /// In-process, with the clock pinned: the cosignature carries the injected time, and a
    /// clock reading 0 cosigns nothing (the spec forbids a zero timestamp).
    #[tokio::test]
    async fn cosignatures_carry_the_injected_time() {
        let dir = tempfile::tempdir().expect("dir");
        let log = NoteSigner::new("log.example/a", SigningKey::from_bytes(&[1; 32])).expect("l");
        let mut tree = Log::new();
        for i in 0u64..5 {
            tree.append(&i.to_be_bytes());
        }
        let cp = Checkpoint::new(log.name(), 5, tree.root());
        let mut note = Note::new(cp.body()).expect("note");
        note.add(log.sign(&note.text));
        let req = AddCheckpoint {
            old_size: 0,
            proof: vec![],
            checkpoint: note,
        };
        let vkeys = [log.verifier().to_string()];
        let start = |data: &str, clock: fn() -> u64| {
            let config = Config::new(
                "127.0.0.1:0".parse().expect("addr"),
                dir.path().join(data),
                "w.example/1",
                SigningKey::from_bytes(&[2; 32]),
                crate::config::known_logs(&vkeys).expect("logs"),
            )
            .expect("config");
            Server::bind(config, clock)
        };

        let server = start("a", || 1_700_000_123).await.expect("bind");
        let (url, vkey) = (
            format!("http://{}", server.local_addr().expect("addr")),
            server.vkey(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        let lines = crate::add_checkpoint(&url, &req, Duration::from_secs(10))
            .await
            .expect("cosigned");
        assert_eq!(
            panel_tlog::cosignature::verify(&vkey.key, &req.checkpoint.text, &lines[0].signature),
            Some(1_700_000_123)
        );
        let _ = stop.send(());
        task.await.expect("stopped");

        let server = start("b", || 0).await.expect("bind");
        let url = format!("http://{}", server.local_addr().expect("addr"));
        tokio::spawn(server.run(std::future::pending()));
        match crate::add_checkpoint(&url, &req, Duration::from_secs(10)).await {
            Err(crate::SubmitError::Refused { status: 500, .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}
