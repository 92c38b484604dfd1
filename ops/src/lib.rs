//! The operator endpoint of a replica or a node: metrics and health probes
//! (docs/coordinator/operations.md, "Metrics and readiness").
//!
//! Plain HTTP/1.1 on the address of `--metrics-addr` (replica) or
//! `metrics_addr` (node.toml), serving
//!
//! - `GET /metrics`: the process's metrics in the text exposition format, encoded by
//!   `prometheus-client` (OpenMetrics text, which Prometheus scrapes);
//! - `GET /livez`: 200 while the process serves at all;
//! - `GET /readyz`: 200 when the process can do its job, 503 with the reason otherwise.
//!
//! What "ready" means and which metrics exist is the shell's business ([`Probe`]); this
//! crate only serves them. It is plain HTTP on purpose: scrapers and load balancers
//! speak it, and nothing here is secret or writable (bind it to an address only the
//! monitoring network reaches).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

pub use prometheus_client;

/// What the endpoint asks of its process.
pub trait Probe: Send + Sync + 'static {
    /// The metrics as exposition text (see [`encode`]); gauges derived from state are
    /// computed here, at scrape time.
    fn metrics(&self) -> Result<String, std::fmt::Error>;
    /// `Ok` when ready; otherwise why not, in words an operator can act on.
    fn ready(&self) -> Result<(), NotReady>;
}

/// Why a process is not ready: the shell's own typed cause (a replica's and a node's
/// differ), boxed because [`Probe`] is used as a trait object. `/readyz` answers 503 with
/// its text.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NotReady(Box<dyn std::error::Error + Send + Sync>);

impl NotReady {
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        NotReady(Box::new(cause))
    }
}

/// The content type of [`encode`]'s output.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// Scrapers are few; more connections than this wait for a free slot.
const MAX_CONNECTIONS: usize = 64;
/// A client that does not send its headers within this is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Encodes a registry in the OpenMetrics text format (with its `# EOF` line).
pub fn encode(registry: &prometheus_client::registry::Registry) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(
        "cannot listen on {addr} for the metrics endpoint ({flag}): {source}; pick a free \
         address or leave {flag} unset (the endpoint is off by default)"
    )]
    Bind {
        addr: SocketAddr,
        /// The flag or config key that named the address.
        flag: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// A bound, not yet serving endpoint.
pub struct Endpoint {
    listener: tokio::net::TcpListener,
}

impl Endpoint {
    /// Binds `addr` (`flag` names where it came from, for the error).
    pub async fn bind(addr: SocketAddr, flag: &'static str) -> Result<Self, OpsError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| OpsError::Bind { addr, flag, source })?;
        Ok(Self { listener })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, probe: Arc<dyn Probe>, shutdown: impl Future<Output = ()>) {
        let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                () = &mut shutdown => break,
                p = limit.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let stream = tokio::select! {
                () = &mut shutdown => break,
                r = self.listener.accept() => match r {
                    Ok((s, _)) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let probe = probe.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let service = hyper::service::service_fn(move |req| {
                    let probe = probe.clone();
                    async move { Ok::<_, Infallible>(route(probe.as_ref(), &req)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(READ_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service);
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "metrics connection ended");
                }
            });
        }
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// One request: the three paths, `GET` (or `HEAD`) only.
fn route(probe: &dyn Probe, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return respond(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "use GET /metrics, /livez or /readyz\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => match probe.metrics() {
            Ok(text) => respond(StatusCode::OK, METRICS_CONTENT_TYPE, text),
            Err(_) => respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                TEXT,
                "the metrics could not be encoded\n".into(),
            ),
        },
        "/livez" => respond(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" => match probe.ready() {
            Ok(()) => respond(StatusCode::OK, TEXT, "ready\n".into()),
            Err(why) => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                TEXT,
                format!("not ready: {why}\n"),
            ),
        },
        _ => respond(
            StatusCode::NOT_FOUND,
            TEXT,
            "not found; the endpoint serves /metrics, /livez and /readyz\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::registry::Registry;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[derive(Debug, thiserror::Error)]
    #[error("no leader")]
    struct NoLeader;

    struct Fake {
        registry: Registry,
        ready: AtomicBool,
    }

    impl Probe for Fake {
        fn metrics(&self) -> Result<String, std::fmt::Error> {
            encode(&self.registry)
        }
        fn ready(&self) -> Result<(), NotReady> {
            if self.ready.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err(NotReady::new(NoLeader))
            }
        }
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_the_three_paths_over_a_real_socket() {
        let mut registry = Registry::default();
        let c = Counter::<u64>::default();
        registry.register("things", "Things done", c.clone());
        c.inc();
        let probe = Arc::new(Fake {
            registry,
            ready: AtomicBool::new(false),
        });
        let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap(), "--metrics-addr")
            .await
            .unwrap();
        let addr = ep.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let dyn_probe: Arc<dyn Probe> = probe.clone();
        let server = tokio::spawn(ep.run(dyn_probe, async {
            let _ = stopped.await;
        }));
        let m = get(addr, "/metrics").await;
        assert!(m.starts_with("HTTP/1.1 200"), "{m}");
        assert!(m.contains("things_total 1"), "{m}");
        assert!(m.trim_end().ends_with("# EOF"), "{m}");
        assert!(get(addr, "/livez").await.starts_with("HTTP/1.1 200"));
        let r = get(addr, "/readyz").await;
        assert!(
            r.starts_with("HTTP/1.1 503") && r.contains("no leader"),
            "{r}"
        );
        probe.ready.store(true, Ordering::Relaxed);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/nope").await.starts_with("HTTP/1.1 404"));
        let _ = stop.send(());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_taken_address_names_the_flag() {
        let first = Endpoint::bind("127.0.0.1:0".parse().unwrap(), "--metrics-addr")
            .await
            .unwrap();
        let addr = first.local_addr().unwrap();
        let Err(e) = Endpoint::bind(addr, "metrics_addr").await else {
            panic!("a second bind of {addr} succeeded");
        };
        assert!(e.to_string().contains("metrics_addr"), "{e}");
    }
}
