//! A read-only C2SP tlog-tiles server (docs/WIRE.md "tlog-tiles"): `GET /checkpoint`,
//! `GET /tile/<L>/<N>[.p/<W>]`, `GET /tile/entries/<N>[.p/<W>]` (and the wide
//! `tile/entries32` bundles), over plain HTTP/1.1 like the witness's endpoints: what it
//! serves is only as good as the signatures on the checkpoint, which the reader checks.
//!
//! What to serve is a [`Published`] snapshot the owner replaces through a [`Publisher`]
//! whenever a newer checkpoint is chosen; every answer comes from one snapshot, so a
//! reader never sees tiles of one tree with the checkpoint of another. The resource rules
//! (paths, widths, what the tree holds) are `panel_tlog::tiles`; this is the HTTP shell.
//!
//! Caching as tlog-tiles asks: tiles and bundles never change (`immutable`, a year), the
//! checkpoint is cached for a few seconds at most, and refusals not at all (a tile beyond
//! the tree today exists tomorrow). Nothing a request carries can panic the server: a
//! malformed path is 400, a tile the tree does not hold 404, a method other than GET or
//! HEAD 405.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use panel_tlog::tiles::{BundleSpan, Caching, GetError, Located, Published};
use tokio::net::TcpListener;

const TEXT: &str = "text/plain; charset=utf-8";
const OCTETS: &str = "application/octet-stream";
/// tlog-tiles: tiles and bundles are immutable, so long-lived caching.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// tlog-tiles: the checkpoint must not be cached beyond a few seconds.
pub const CHECKPOINT: &str = "public, max-age=5";
const NO_STORE: &str = "no-store";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum TileServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

type Current = Arc<RwLock<Option<Arc<Published>>>>;

/// Replaces what the server serves; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Publisher(Current);

impl Publisher {
    /// Serves `published` from the next request on.
    pub fn publish(&self, published: Published) {
        let next = Some(Arc::new(published));
        match self.0.write() {
            Ok(mut g) => *g = next,
            // A writer never panics while holding the lock; recover the guard regardless.
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }

    /// The snapshot being served, if any.
    pub fn current(&self) -> Option<Arc<Published>> {
        match self.0.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// A bound tile server, ready to [`run`](TileServer::run).
pub struct TileServer {
    listener: TcpListener,
    publisher: Publisher,
}

impl TileServer {
    pub async fn bind(addr: SocketAddr) -> Result<TileServer, TileServerError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| TileServerError::Bind { addr, source })?;
        Ok(TileServer {
            listener,
            publisher: Publisher::default(),
        })
    }

    /// The address it listens on (the real port when `:0` was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The handle that changes what is served.
    pub fn publisher(&self) -> Publisher {
        self.publisher.clone()
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let publisher = self.publisher.clone();
        crate::http_serve::serve(&self.listener, shutdown, move || {
            let publisher = publisher.clone();
            hyper::service::service_fn(move |req| {
                let answer = route(&publisher, &req);
                async move { Ok::<_, Infallible>(answer) }
            })
        })
        .await;
    }
}

type Answer = Response<BoxBody<Bytes, Infallible>>;

/// An entry bundle sent one entry per frame, read from the snapshot as hyper asks for
/// more, so a large bundle costs a request one entry of memory, not the whole bundle.
struct BundleBody {
    published: Arc<Published>,
    bundle: BundleSpan,
    next: usize,
    remaining: u64,
}

impl Body for BundleBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        match this.bundle.frame(&this.published, this.next) {
            Some(frame) => {
                this.next += 1;
                this.remaining = this.remaining.saturating_sub(frame.len() as u64);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(frame)))))
            }
            None => {
                this.remaining = 0;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    /// Exact, so the answer carries a Content-Length rather than chunks.
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    cache: &'static str,
    body: Vec<u8>,
) -> Answer {
    headers(
        Response::new(Full::new(Bytes::from(body)).boxed()),
        status,
        content_type,
        cache,
    )
}

fn headers(
    mut r: Answer,
    status: StatusCode,
    content_type: &'static str,
    cache: &'static str,
) -> Answer {
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    // The record is public; a browser-based auditor on another origin may read it.
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    r
}

fn refuse(status: StatusCode, why: String) -> Answer {
    respond(status, TEXT, NO_STORE, format!("{why}\n").into_bytes())
}

/// Answers one request from the current snapshot. The body of a HEAD answer is dropped
/// by hyper, its headers kept.
fn route(publisher: &Publisher, req: &Request<Incoming>) -> Answer {
    answer(publisher, req.method(), req.uri().path())
}

fn answer(publisher: &Publisher, method: &Method, path: &str) -> Answer {
    if method != Method::GET && method != Method::HEAD {
        let mut r = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "this log is read-only: use GET".into(),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let Some(rel) = path.strip_prefix('/') else {
        return refuse(StatusCode::BAD_REQUEST, "the path must start with /".into());
    };
    let Some(published) = publisher.current() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "no witnessed checkpoint has been published yet".into(),
        );
    };
    match published.locate(rel) {
        Ok(Located::Bytes(r)) => match r.caching {
            Caching::Mutable => respond(StatusCode::OK, TEXT, CHECKPOINT, r.body),
            Caching::Immutable => respond(StatusCode::OK, OCTETS, IMMUTABLE, r.body),
        },
        Ok(Located::Bundle(bundle)) => {
            let remaining = bundle.len(&published);
            let body = BundleBody {
                published,
                bundle,
                next: 0,
                remaining,
            };
            headers(
                Response::new(body.boxed()),
                StatusCode::OK,
                OCTETS,
                IMMUTABLE,
            )
        }
        Err(e @ GetError::BadPath(_)) => refuse(
            StatusCode::BAD_REQUEST,
            format!("{e}: this server has /checkpoint and /tile/... (C2SP tlog-tiles)"),
        ),
        Err(e @ (GetError::Beyond { .. } | GetError::Bundle(_))) => {
            refuse(StatusCode::NOT_FOUND, e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use panel_tlog::{Checkpoint, Log, Note, NoteSigner};

    fn published(n: u64) -> Published {
        let entries: Vec<Vec<u8>> = (0..n).map(|i| i.to_be_bytes().to_vec()).collect();
        let mut log = Log::new();
        for e in &entries {
            log.append(e);
        }
        let s = NoteSigner::new("log.example/x", SigningKey::from_bytes(&[5; 32])).expect("s");
        let mut note = Note::new(Checkpoint::new(s.name(), n, log.root()).body()).expect("n");
        note.add(s.sign(&note.text));
        Published::new(entries, note).expect("publish")
    }

    fn header(r: &Answer, name: hyper::header::HeaderName) -> &str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[test]
    fn statuses_and_caching_follow_the_spec() {
        let p = Publisher::default();
        let get = |path: &str| answer(&p, &Method::GET, path);
        assert_eq!(get("/checkpoint").status(), 503);
        p.publish(published(300));
        let cp = get("/checkpoint");
        assert_eq!(cp.status(), 200);
        assert_eq!(header(&cp, CACHE_CONTROL), CHECKPOINT);
        assert_eq!(header(&cp, CONTENT_TYPE), TEXT);
        let t = get("/tile/0/000");
        assert_eq!(t.status(), 200);
        assert_eq!(header(&t, CACHE_CONTROL), IMMUTABLE);
        assert_eq!(header(&t, CONTENT_TYPE), OCTETS);
        assert_eq!(get("/tile/0/001.p/44").status(), 200);
        assert_eq!(get("/tile/entries/001.p/44").status(), 200);
        assert_eq!(get("/tile/1/000.p/1").status(), 200);
        for beyond in [
            "/tile/0/001",
            "/tile/0/001.p/45",
            "/tile/1/000.p/2",
            "/tile/2/000.p/1",
        ] {
            let r = get(beyond);
            assert_eq!(r.status(), 404, "{beyond}");
            assert_eq!(header(&r, CACHE_CONTROL), NO_STORE);
        }
        for bad in [
            "/",
            "/tile/0/1",
            "/tile/0/000.p/0",
            "/checkpoint/",
            "/tile/x/000",
            "tile",
        ] {
            assert_eq!(get(bad).status(), 400, "{bad}");
        }
        let post = answer(&p, &Method::POST, "/checkpoint");
        assert_eq!(post.status(), 405);
        assert_eq!(header(&post, ALLOW), "GET, HEAD");
    }

    /// A bundle sent entry by entry is the bundle, with its exact length announced.
    #[tokio::test]
    async fn bundles_stream_the_same_bytes_with_a_content_length() {
        let p = Publisher::default();
        p.publish(published(300));
        let snapshot = p.current().expect("published");
        for path in ["tile/entries/000", "tile/entries32/001.p/44"] {
            let want = snapshot.get(path).expect("bundle").body;
            let r = answer(&p, &Method::GET, &format!("/{path}"));
            assert_eq!(r.status(), 200);
            assert_eq!(r.body().size_hint().exact(), Some(want.len() as u64));
            let got = r.into_body().collect().await.expect("body").to_bytes();
            assert_eq!(got.as_ref(), want.as_slice(), "{path}");
        }
    }
}
