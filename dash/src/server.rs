//! The HTTP side: one GET route per view, a 404 page for any other path, 405 for any
//! method but GET and HEAD, and every failure rendered as a page (`DashError`).
//!
//! In front of the routes, outermost first: the Host header must name this dashboard
//! ([`HostPolicy`], against DNS rebinding: 421 otherwise); the method must be GET or HEAD;
//! the request line is at most [`MAX_URI`] bytes and there is no body; at most
//! [`Options::max_in_flight`] requests are served at once (more get 503 with
//! Retry-After, none are queued), each for at most [`Options::request_timeout`] (504).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, Method, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::VIEWS;
use crate::paging::Paging;
use crate::source::Source;
use crate::views;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "--listen {addr} is not a loopback address; the dashboard reads the cluster with this command's TLS identity for anyone who reaches it, so pass --allow-remote to mean it (and --allow-host NAME for each name it is reached by)"
    )]
    NotLoopback { addr: SocketAddr },
    #[error("--allow-host {name:?}: {why}")]
    BadAllowHost { name: String, why: &'static str },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the dashboard's server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// How many requests are served at once by default.
pub const MAX_IN_FLIGHT: usize = 16;

/// How long one request may take by default (every read of the cluster it makes).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest request target (path and query) served, in bytes: 414 beyond.
pub const MAX_URI: usize = 4096;

/// How the dashboard serves; [`Options::default`] is loopback only, [`MAX_IN_FLIGHT`]
/// requests at once, [`REQUEST_TIMEOUT`] each.
#[derive(Debug, Clone)]
pub struct Options {
    /// Listen on an address other than loopback (`--allow-remote`).
    pub allow_remote: bool,
    /// Host names (or addresses) accepted in the Host header besides loopback's and the
    /// listen address (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// Requests served at once; one more is refused with 503 and Retry-After.
    pub max_in_flight: usize,
    /// How long one request may take before it is answered with 504.
    pub request_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            allow_remote: false,
            allow_hosts: Vec::new(),
            max_in_flight: MAX_IN_FLIGHT,
            request_timeout: REQUEST_TIMEOUT,
        }
    }
}

/// Refuses a listen address other than loopback unless `allow_remote`: whoever reaches
/// the dashboard reads the cluster with its identity.
pub fn check_listen(addr: SocketAddr, allow_remote: bool) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(ServeError::NotLoopback { addr })
    }
}

/// Which hosts a request may be addressed to (its Host header, and the authority of an
/// absolute request target): `localhost`, a loopback address (127.0.0.0/8, `[::1]`), the
/// address the dashboard listens on (unless unspecified, 0.0.0.0 or `[::]`), and the names
/// given with `--allow-host`. Compared without the port, case-insensitively. A page of
/// another site whose name is made to resolve to this machine (DNS rebinding) sends its
/// own name, and is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    extra: Vec<String>,
}

impl HostPolicy {
    /// The policy of a dashboard listening on `listen`, also accepting `allow_hosts`.
    pub fn new(listen: IpAddr, allow_hosts: &[String]) -> Result<HostPolicy, ServeError> {
        let mut extra = Vec::new();
        if !listen.is_unspecified() {
            extra.push(ip_host(listen));
        }
        for name in allow_hosts {
            let bad = |why| ServeError::BadAllowHost {
                name: name.clone(),
                why,
            };
            let given = name.trim();
            // A bare IPv6 address is taken as one, not as a name with a port.
            let given = match given.parse::<Ipv6Addr>() {
                Ok(ip) => ip_host(IpAddr::V6(ip)),
                Err(_) => given.to_string(),
            };
            match split_host(&given) {
                Some((h, false)) if !extra.contains(&h) => extra.push(h),
                Some((_, false)) => {}
                Some((_, true)) => return Err(bad("give the name without a port")),
                None => {
                    return Err(bad(
                        "not a host name (letters, digits, '-', '.' and '_') or an IP address",
                    ));
                }
            }
        }
        Ok(HostPolicy { extra })
    }

    /// Whether a Host header value (or an authority), port and all, is one of ours.
    pub fn allows(&self, value: &str) -> bool {
        let Some((host, _)) = split_host(value) else {
            return false;
        };
        host == "localhost"
            || parse_host_ip(&host).is_some_and(|ip| ip.is_loopback())
            || self.extra.contains(&host)
    }

    /// The accepted hosts, for the 421 page.
    pub fn describe(&self) -> String {
        let mut all = vec![
            "localhost".to_string(),
            "127.0.0.1 (or any 127.x.y.z)".into(),
            "[::1]".into(),
        ];
        all.extend(self.extra.iter().cloned());
        all.join(", ")
    }
}

/// An address as it appears in a Host header: `a.b.c.d` or `[v6]`.
fn ip_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn parse_host_ip(host: &str) -> Option<IpAddr> {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// `name`, `name:port`, `[v6]` or `[v6]:port` as (the host, lowercased, an IPv6 address
/// in its canonical form; whether a port followed). `None` for anything else: an empty
/// name, a bare IPv6 address, user information, a port that is not digits, a character
/// no host name has.
fn split_host(value: &str) -> Option<(String, bool)> {
    let (host, rest) = match value.strip_prefix('[') {
        Some(inner) => {
            let (v6, rest) = inner.split_once(']')?;
            (ip_host(IpAddr::V6(v6.parse().ok()?)), rest)
        }
        None => {
            let (name, rest) = match value.find(':') {
                Some(i) => value.split_at(i),
                None => (value, ""),
            };
            let ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
            if !ok {
                return None;
            }
            (name.to_ascii_lowercase(), rest)
        }
    };
    match rest.strip_prefix(':') {
        None if rest.is_empty() => Some((host, false)),
        Some(port) if port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()) => {
            Some((host, true))
        }
        _ => None,
    }
}

/// At most 100 characters of what a request sent, for a page that quotes it.
fn quoted(s: &str) -> String {
    if s.chars().count() <= 100 {
        return s.to_string();
    }
    s.chars().take(99).chain(['…']).collect()
}

/// Refuses (421) a request addressed to a host the policy does not accept, or to none.
async fn check_host(State(policy): State<Arc<HostPolicy>>, req: Request, next: Next) -> Response {
    let refuse = |got: Option<&str>| {
        DashError::MisdirectedHost {
            got: got.map(quoted),
            accepted: policy.describe(),
        }
        .into_response()
    };
    if let Some(a) = req.uri().authority()
        && !policy.allows(a.as_str())
    {
        return refuse(Some(a.as_str()));
    }
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h.to_str().ok(),
        _ => None,
    };
    match host {
        Some(h) if policy.allows(h) => next.run(req).await,
        other => refuse(other),
    }
}

/// Read-only: GET (and HEAD, which axum answers from the GET route) reach the views;
/// anything else is refused before any route runs.
async fn only_get(req: Request, next: Next) -> Response {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return next.run(req).await;
    }
    DashError::MethodNotAllowed {
        method: req.method().to_string(),
    }
    .into_response()
}

/// No page reads a body, and no page's address is long: a request target over
/// [`MAX_URI`] bytes is a 414, a request with a body a 413 (unread, the connection closed).
async fn bounded(req: Request, next: Next) -> Response {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len())
        + req.uri().authority().map_or(0, |a| a.as_str().len());
    if target > MAX_URI {
        return DashError::TooLarge {
            what: format!(
                "the request's address is {target} bytes long; the dashboard serves none longer than {MAX_URI}"
            ),
            uri: true,
        }
        .into_response();
    }
    let h = req.headers();
    let body = h.contains_key(header::TRANSFER_ENCODING)
        || h.get_all(header::CONTENT_LENGTH)
            .iter()
            .any(|v| v.as_bytes() != b"0");
    if body {
        return DashError::TooLarge {
            what: "the request carries a body; the dashboard only reads, and reads none".into(),
            uri: false,
        }
        .into_response();
    }
    next.run(req).await
}

/// The in-flight bound and the per-request timeout.
#[derive(Clone)]
struct Limits {
    permits: Arc<Semaphore>,
    max: usize,
    timeout: Duration,
}

impl Limits {
    fn new(opts: &Options) -> Limits {
        let max = opts.max_in_flight.max(1);
        Limits {
            permits: Arc::new(Semaphore::new(max)),
            max,
            timeout: opts.request_timeout,
        }
    }
}

/// A request beyond the in-flight bound is shed at once (503, Retry-After), never queued;
/// one that takes longer than the timeout is dropped, its reads with it (504).
async fn limit(State(l): State<Limits>, req: Request, next: Next) -> Response {
    let Ok(_permit) = l.permits.clone().try_acquire_owned() else {
        return DashError::Busy { limit: l.max }.into_response();
    };
    match tokio::time::timeout(l.timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => DashError::TimedOut {
            secs: l.timeout.as_secs_f64(),
        }
        .into_response(),
    }
}

type Page = Result<Html<String>, DashError>;

async fn index(State(src): State<Source>, chrome: Chrome) -> Page {
    views::index::page(&src, &chrome).await.map(Html)
}

async fn debates(State(src): State<Source>, chrome: Chrome) -> Page {
    views::debates::page(&src, &chrome).await.map(Html)
}

async fn debate(
    State(src): State<Source>,
    chrome: Chrome,
    id: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Page {
    let page = page_param(q.as_deref())?;
    views::debate::page(&src, &path_id(id)?, page, &chrome)
        .await
        .map(Html)
}

async fn motions(State(src): State<Source>, chrome: Chrome, RawQuery(q): RawQuery) -> Page {
    let filter = views::motions::Filter::parse(q.as_deref().unwrap_or(""))?;
    views::motions::page(&src, &filter, &chrome).await.map(Html)
}

async fn motion(
    State(src): State<Source>,
    chrome: Chrome,
    id: Result<Path<String>, PathRejection>,
) -> Page {
    views::motion::page(&src, &path_id(id)?, &chrome)
        .await
        .map(Html)
}

async fn arbiters(State(src): State<Source>, chrome: Chrome) -> Page {
    views::arbiters::page(&src, &chrome).await.map(Html)
}

async fn arbiter(
    State(src): State<Source>,
    chrome: Chrome,
    id: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Page {
    let page = page_param(q.as_deref())?;
    views::arbiter::page(&src, &path_id(id)?, page, &chrome)
        .await
        .map(Html)
}

async fn record(State(src): State<Source>, chrome: Chrome) -> Page {
    views::record::page(&src, &chrome).await.map(Html)
}

async fn runs(State(src): State<Source>, chrome: Chrome) -> Page {
    views::runs::page(&src, &chrome).await.map(Html)
}

/// The id in a page's path (`/motions/ID`), percent-decoded; one that does not decode is
/// a 400.
fn path_id(id: Result<Path<String>, PathRejection>) -> Result<String, DashError> {
    id.map(|Path(id)| id).map_err(|e| {
        DashError::BadRequest(format!("the id in this page's address does not read: {e}"))
    })
}

/// The `page` of a query string (1 when absent); a bad one is a 400 naming it.
fn page_param(q: Option<&str>) -> Result<usize, DashError> {
    params(q.unwrap_or(""))
        .into_iter()
        .find(|(k, _)| k == "page")
        .map_or(Ok(1), |(_, v)| Paging::parse_number(&v))
}

/// What every response is sent with: the pages use no script, no frame, no outside
/// asset and only forms to themselves, so the policy allows nothing else; a page that
/// did end up with markup from the cluster in it could still run nothing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Adds the Content-Security-Policy and its companions to every response, refusals and
/// errors included.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

async fn not_found(uri: Uri) -> DashError {
    let pages: Vec<&str> = VIEWS.iter().map(|(p, _)| *p).collect();
    DashError::NotFound(format!(
        "there is no page at {}; the dashboard's pages are {}",
        uri.path(),
        pages.join(", ")
    ))
}

/// The routes behind the guards, in the order a request meets them.
fn app(src: Source, policy: HostPolicy, limits: Limits) -> Router {
    Router::new()
        .route(views::index::PATH, get(index))
        .route(views::debates::PATH, get(debates))
        .route(views::debate::ROUTE, get(debate))
        .route(views::motions::PATH, get(motions))
        .route(views::motion::ROUTE, get(motion))
        .route(views::arbiters::PATH, get(arbiters))
        .route(views::arbiter::ROUTE, get(arbiter))
        .route(views::record::PATH, get(record))
        .route(views::runs::PATH, get(runs))
        .fallback(not_found)
        // The last layer added is the first a request meets.
        .layer(middleware::from_fn_with_state(limits, limit))
        .layer(middleware::from_fn(bounded))
        .layer(middleware::from_fn(only_get))
        .layer(middleware::from_fn_with_state(Arc::new(policy), check_host))
        .layer(middleware::from_fn(security_headers))
        .with_state(src)
}

/// The dashboard's routes over `src`, for a server listening on `listen`.
pub fn router(src: Source, listen: IpAddr, opts: &Options) -> Result<Router, ServeError> {
    let policy = HostPolicy::new(listen, &opts.allow_hosts)?;
    Ok(app(src, policy, Limits::new(opts)))
}

/// Serves the dashboard on `listener` until `shutdown` completes; refuses a listener
/// that is not on loopback unless `opts.allow_remote`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    src: Source,
    opts: &Options,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(ServeError::Serve)?;
    check_listen(local, opts.allow_remote)?;
    axum::serve(listener, router(src, local.ip(), opts)?)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

/// How long requests in flight may take to finish once a stop was asked for.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Binds `addr` and serves until `shutdown`, then lets requests in flight finish for at
/// most [`GRACE`]; `ready` gets the bound address first (port 0 picks a free one). A
/// non-loopback `addr` without `opts.allow_remote`, or a malformed `opts.allow_hosts`, is
/// refused before anything is bound.
pub async fn bind_and_serve(
    addr: SocketAddr,
    src: Source,
    opts: &Options,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    check_listen(addr, opts.allow_remote)?;
    HostPolicy::new(addr.ip(), &opts.allow_hosts)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    ready(bound);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let mut graceful = stopped.clone();
    let served = serve(listener, src, opts, async move {
        let _ = graceful.wait_for(|s| *s).await;
    });
    let mut deadline = stopped;
    tokio::select! {
        r = served => r,
        () = async move {
            let _ = deadline.wait_for(|s| *s).await;
            tokio::time::sleep(GRACE).await;
        } => Ok(()),
    }
}

/// `k=v&k2=v2` with `+` and `%XX` decoded; malformed escapes are kept as they are.
pub fn params(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decoded(k), decoded(v))
        })
        .collect()
}

/// `s` with `+` and `%XX` decoded; malformed escapes are kept as they are.
pub fn decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits for Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn query_strings_decode() {
        assert_eq!(
            params("debate=deb%5F1&exams=1&x=a+b&bad=%zz&end=%4"),
            vec![
                ("debate".to_string(), "deb_1".to_string()),
                ("exams".into(), "1".into()),
                ("x".into(), "a b".into()),
                ("bad".into(), "%zz".into()),
                ("end".into(), "%4".into()),
            ]
        );
    }

    /// Sends `req` as it is and reads the whole answer: (status code, headers and body).
    async fn raw(addr: SocketAddr, req: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(req.as_bytes()).await.expect("send");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read");
        let buf = String::from_utf8_lossy(&buf).into_owned();
        let code = buf
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, buf)
    }

    /// `method path` addressed to `host`.
    async fn get_as(addr: SocketAddr, host: &str, method: &str, path: &str) -> (u16, String) {
        raw(
            addr,
            &format!(
                "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        )
        .await
    }

    /// `method path` addressed to the server's own address, as a browser sends it.
    async fn get(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
        get_as(addr, &addr.to_string(), method, path).await
    }

    /// A source whose only replica refuses connections.
    fn dead_source() -> (Source, String) {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        let dead_addr = dead.local_addr().expect("addr").to_string();
        drop(dead);
        let src = Source::new(
            &panel_transport::Transport::InsecureLoopback,
            std::slice::from_ref(&dead_addr),
        )
        .expect("source");
        (src, dead_addr)
    }

    /// A source whose only replica accepts connections (the kernel's backlog) and never
    /// answers: every read hangs until the source's own timeout.
    fn silent_source() -> (Source, std::net::TcpListener) {
        let hole = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        let src = Source::new(
            &panel_transport::Transport::InsecureLoopback,
            &[hole.local_addr().expect("addr").to_string()],
        )
        .expect("source");
        (src, hole)
    }

    /// `serve` on a fresh loopback port with `opts`; dropping the sender stops it.
    async fn start(
        src: Source,
        opts: Options,
    ) -> (
        SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), ServeError>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            serve(listener, src, &opts, async {
                let _ = rx.await;
            })
            .await
        });
        (addr, tx, server)
    }

    /// With no coordinator at the address every view is a 503 page naming it; other paths
    /// are 404 and other methods 405, each with a page that says so.
    #[tokio::test]
    async fn unreachable_unknown_and_writes_are_pages_not_panics() {
        let (src, dead_addr) = dead_source();
        let (addr, tx, server) = start(src, Options::default()).await;
        for (path, _) in VIEWS {
            let (code, body) = get(addr, "GET", path).await;
            assert_eq!(code, 503, "{path}: {body}");
            assert!(
                body.contains(&dead_addr),
                "{path} names the address: {body}"
            );
            assert!(body.contains("Coordinator unreachable"));
        }
        // The path is quoted on the page, escaped: `"`, `'` and `&` travel unencoded.
        let (code, body) = get(addr, "GET", "/nope/\"onclick='x'&").await;
        assert_eq!(code, 404, "{body}");
        assert!(
            body.contains("there is no page at /nope/&quot;onclick=&#39;x&#39;&amp;;"),
            "{body}"
        );
        assert!(!body.contains("\"onclick="), "{body}");
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            for path in ["/", "/debates", "/nope"] {
                let (code, body) = get(addr, method, path).await;
                assert_eq!(code, 405, "{method} {path}: {body}");
                assert!(
                    body.contains(&format!("{method} is not allowed, only GET")),
                    "{body}"
                );
                assert!(
                    body.to_ascii_lowercase().contains("allow: get, head"),
                    "{body}"
                );
            }
        }
        let (code, _) = get(addr, "HEAD", "/nope").await;
        assert_eq!(code, 404);
        // The motions page's query is checked before the cluster is read.
        let (code, body) = get(addr, "GET", "/motions?debate=deb_1&page=0").await;
        assert_eq!(code, 400, "{body}");
        assert!(body.contains("page=0 is not a page number"), "{body}");
        // So are the other pages' parameters, each named in its 400.
        for (path, says) in [
            ("/motions?outcome=won", "outcome=won is not an outcome"),
            ("/motions?kind=x", "kind=x is not a motion kind"),
            (
                "/motions?refresh=1",
                "refresh=1 is not an auto-refresh period",
            ),
            ("/debates/deb_1?page=x", "page=x is not a page number"),
            ("/arbiters/a1?page=0", "page=0 is not a page number"),
            ("/?refresh=9999", "refresh=9999 is not"),
        ] {
            let (code, body) = get(addr, "GET", path).await;
            assert_eq!(code, 400, "{path}: {body}");
            assert!(body.contains(says), "{path}: {body}");
        }
        // The pages of one debate, motion or arbiter read the cluster too.
        for path in [
            "/debates/deb_1",
            "/motions/mot-1-0-0",
            "/arbiters/arb%20x",
            "/?refresh=5",
        ] {
            let (code, body) = get(addr, "GET", path).await;
            assert_eq!(code, 503, "{path}: {body}");
        }
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }

    /// Every response carries the Content-Security-Policy (no script, no frames, forms
    /// to itself only) and its companions: pages, 404s, 405s, 400s and 421s alike.
    #[tokio::test]
    async fn every_response_carries_the_security_policy() {
        let (src, _) = dead_source();
        let (addr, tx, server) = start(src, Options::default()).await;
        for (method, path, host) in [
            ("GET", "/debates", None),
            ("GET", "/nope", None),
            ("POST", "/", None),
            ("GET", "/motions?page=0", None),
            ("GET", "/", Some("evil.example")),
        ] {
            let (code, resp) = match host {
                Some(h) => get_as(addr, h, method, path).await,
                None => get(addr, method, path).await,
            };
            let lower = resp.to_ascii_lowercase();
            assert!(
                lower.contains(&format!(
                    "content-security-policy: {}",
                    CONTENT_SECURITY_POLICY.to_ascii_lowercase()
                )),
                "{method} {path} ({code}): {resp}"
            );
            assert!(lower.contains("x-content-type-options: nosniff"), "{resp}");
            assert!(lower.contains("x-frame-options: deny"), "{resp}");
        }
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }

    /// DNS rebinding: a page of another site whose name resolves to 127.0.0.1 reaches the
    /// server with its own name in the Host header. Only loopback's names, the listen
    /// address and `--allow-host` names are served; anything else, and no Host at all, is
    /// a 421 page naming what was sent and the flag, before any route, method or read.
    #[tokio::test]
    async fn requests_for_other_hosts_are_misdirected() {
        let (src, _) = dead_source();
        let (addr, tx, server) = start(src, Options::default()).await;
        let port = addr.port();
        for host in [
            format!("127.0.0.1:{port}"),
            "127.0.0.1".into(),
            "127.9.8.7:1".into(),
            format!("localhost:{port}"),
            "LocalHost".into(),
            format!("[::1]:{port}"),
            "[0:0:0:0:0:0:0:1]".into(),
        ] {
            let (code, body) = get_as(addr, &host, "GET", "/nope").await;
            assert_eq!(code, 404, "Host: {host} is ours: {body}");
        }
        for host in [
            "evil.example".to_string(),
            format!("evil.example:{port}"),
            format!("localhost.evil.example:{port}"),
            "127.0.0.1.nip.io".into(),
            format!("0.0.0.0:{port}"),
            "[::1".into(),
            "::1".into(),
            "127.0.0.1:x".into(),
            "user@127.0.0.1".into(),
            String::new(),
        ] {
            let (code, body) = get_as(addr, &host, "GET", "/nope").await;
            assert_eq!(code, 421, "Host: {host:?} is not ours: {body}");
            assert!(body.contains("Wrong host"), "{body}");
        }
        let (code, body) = get_as(addr, "evil.example:8080", "GET", "/debates").await;
        assert_eq!(code, 421, "refused before the view reads: {body}");
        assert!(
            body.contains("addressed to host &quot;evil.example:8080&quot;")
                && body.contains("--allow-host evil.example:8080")
                && body.contains("localhost, 127.0.0.1"),
            "{body}"
        );
        let (code, _) = get_as(addr, "evil.example", "POST", "/").await;
        assert_eq!(code, 421, "refused before the method is");
        let (code, body) = get_as(addr, "<script>x</script>", "GET", "/").await;
        assert_eq!(code, 421);
        assert!(body.contains("&lt;script&gt;x") && !body.contains("<script>"));
        for req in [
            "GET /nope HTTP/1.0\r\n\r\n".to_string(),
            "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n".into(),
            format!(
                "GET /nope HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        ] {
            let (code, body) = raw(addr, &req).await;
            assert_eq!(code, 421, "{req:?}: {body}");
            assert!(body.contains("named no host"), "{body}");
        }
        // An absolute request target names its host too.
        let (code, body) = raw(
            addr,
            &format!(
                "GET http://evil.example/nope HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert_eq!(code, 421, "{body}");
        let _ = tx.send(());
        server.await.expect("join").expect("served");

        // --allow-host adds names, compared without case or port.
        let (src, _) = dead_source();
        let opts = Options {
            allow_hosts: vec!["Dash.Example".into()],
            ..Options::default()
        };
        let (addr, tx, server) = start(src, opts).await;
        for (host, want) in [
            ("dash.example:1234", 404),
            ("DASH.EXAMPLE", 404),
            ("other.example", 421),
        ] {
            let (code, body) = get_as(addr, host, "GET", "/nope").await;
            assert_eq!(code, want, "Host: {host}: {body}");
        }
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }

    /// The listen address counts as ours unless it is unspecified; `--allow-host` takes a
    /// name or an address, without a port.
    #[test]
    fn the_host_policy() {
        let p = HostPolicy::new("192.0.2.1".parse().expect("ip"), &[]).expect("policy");
        assert!(p.allows("192.0.2.1:80") && p.allows("192.0.2.1") && p.allows("localhost"));
        assert!(!p.allows("192.0.2.2") && !p.allows("192.0.2.1.example"));
        let p = HostPolicy::new("2001:db8::1".parse().expect("ip"), &[]).expect("policy");
        assert!(p.allows("[2001:db8::1]:8080") && p.allows("[2001:DB8:0::1]"));
        assert!(!p.allows("2001:db8::1") && !p.allows("[2001:db8::2]"));
        let p = HostPolicy::new(
            "0.0.0.0".parse().expect("ip"),
            &["2001:db8::2".into(), " Box.LAN ".into(), "10.0.0.5".into()],
        )
        .expect("policy");
        assert!(
            !p.allows("0.0.0.0"),
            "an unspecified address is nobody's name"
        );
        assert!(p.allows("[2001:db8::2]:1") && p.allows("box.lan:8080") && p.allows("10.0.0.5"));
        assert!(!p.allows("lan") && !p.allows("10.0.0.6"));
        assert!(p.describe().contains("box.lan") && p.describe().contains("[2001:db8::2]"));
        for (bad, why) in [
            ("box.lan:8080", "without a port"),
            ("[::1]:80", "without a port"),
            ("two words", "not a host name"),
            ("", "not a host name"),
            ("http://x", "not a host name"),
        ] {
            let e = HostPolicy::new("127.0.0.1".parse().expect("ip"), &[bad.into()])
                .expect_err(bad)
                .to_string();
            assert!(e.contains("--allow-host") && e.contains(why), "{bad}: {e}");
        }
    }

    /// A non-loopback listen address is refused, naming --allow-remote, by the check the
    /// CLI calls first and again by `bind_and_serve` and `serve` themselves, before
    /// anything is bound; with `allow_remote` it is served.
    #[tokio::test]
    async fn a_non_loopback_listen_address_needs_allow_remote() {
        for addr in ["0.0.0.0:0", "192.0.2.1:80", "[::]:0", "[2001:db8::1]:80"] {
            let addr: SocketAddr = addr.parse().expect("addr");
            let e = check_listen(addr, false).expect_err("refused").to_string();
            assert!(
                e.contains(&format!("--listen {addr} is not a loopback address"))
                    && e.contains("pass --allow-remote"),
                "{e}"
            );
            assert!(check_listen(addr, true).is_ok());
        }
        for addr in ["127.0.0.1:0", "127.0.0.2:8080", "[::1]:0"] {
            assert!(
                check_listen(addr.parse().expect("addr"), false).is_ok(),
                "{addr}"
            );
        }
        // 192.0.2.1 is no address of this machine: a refusal that is not a bind error
        // was made before binding.
        let (src, _) = dead_source();
        let r = bind_and_serve(
            "192.0.2.1:80".parse().expect("addr"),
            src.clone(),
            &Options::default(),
            |_| panic!("nothing may be bound"),
            std::future::pending(),
        )
        .await;
        assert!(matches!(r, Err(ServeError::NotLoopback { .. })), "{r:?}");
        let bad_name = Options {
            allow_hosts: vec!["x:1".into()],
            ..Options::default()
        };
        let r = bind_and_serve(
            "127.0.0.1:0".parse().expect("addr"),
            src.clone(),
            &bad_name,
            |_| panic!("nothing may be bound"),
            std::future::pending(),
        )
        .await;
        assert!(matches!(r, Err(ServeError::BadAllowHost { .. })), "{r:?}");

        let any = tokio::net::TcpListener::bind("0.0.0.0:0")
            .await
            .expect("bind");
        let r = serve(any, src.clone(), &Options::default(), async {}).await;
        assert!(matches!(r, Err(ServeError::NotLoopback { .. })), "{r:?}");
        let any = tokio::net::TcpListener::bind("0.0.0.0:0")
            .await
            .expect("bind");
        let port = any.local_addr().expect("addr").port();
        let remote = Options {
            allow_remote: true,
            ..Options::default()
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            serve(any, src, &remote, async {
                let _ = rx.await;
            })
            .await
        });
        let here: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let (code, body) = get(here, "GET", "/nope").await;
        assert_eq!(code, 404, "{body}");
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }

    /// At most `max_in_flight` requests are served at once: one more is refused at once
    /// with 503 and Retry-After, not queued behind a slow cluster.
    #[tokio::test]
    async fn requests_beyond_the_bound_are_shed_not_queued() {
        let (src, _hole) = silent_source();
        let limits = Limits::new(&Options {
            max_in_flight: 2,
            request_timeout: Duration::from_secs(120),
            ..Options::default()
        });
        let permits = limits.permits.clone();
        let policy = HostPolicy::new(Ipv4Addr::LOCALHOST.into(), &[]).expect("policy");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server =
            tokio::spawn(async move { axum::serve(listener, app(src, policy, limits)).await });
        let hogs: Vec<_> = (0..2)
            .map(|_| tokio::spawn(async move { get(addr, "GET", "/debates").await }))
            .collect();
        let t = Instant::now();
        while permits.available_permits() > 0 {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the two slow requests never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let t = Instant::now();
        let (code, body) = get(addr, "GET", "/debates").await;
        assert_eq!(code, 503, "{body}");
        assert!(
            body.to_ascii_lowercase().contains("retry-after: 1"),
            "{body}"
        );
        assert!(
            body.contains("already serving 2 request(s) at once"),
            "{body}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "shed at once, not after {:?}",
            t.elapsed()
        );
        for h in hogs {
            h.abort();
        }
        server.abort();
    }

    /// A request that takes longer than `request_timeout` (a silent cluster) is answered
    /// with 504 when the limit is up, not when the cluster's reads give up.
    #[tokio::test]
    async fn slow_requests_time_out() {
        let (src, _hole) = silent_source();
        let opts = Options {
            request_timeout: Duration::from_millis(300),
            ..Options::default()
        };
        let (addr, tx, server) = start(src, opts).await;
        let t = Instant::now();
        let (code, body) = get(addr, "GET", "/debates").await;
        assert_eq!(code, 504, "{body}");
        assert!(body.contains("not ready within 0.3 s"), "{body}");
        assert!(
            t.elapsed() < crate::source::READ_TIMEOUT,
            "the request's own limit, not the read's: {:?}",
            t.elapsed()
        );
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }

    /// Long request targets are a 414 and requests with a body a 413, before any read.
    #[tokio::test]
    async fn long_targets_and_bodies_are_refused() {
        let (src, _) = dead_source();
        let (addr, tx, server) = start(src, Options::default()).await;
        let long = format!("/motions?debate={}", "x".repeat(MAX_URI));
        let (code, body) = get(addr, "GET", &long).await;
        assert_eq!(code, 414, "{body}");
        let ok = format!("/nope?{}", "x".repeat(MAX_URI - "/nope?".len()));
        let (code, body) = get(addr, "GET", &ok).await;
        assert_eq!(code, 404, "{MAX_URI} bytes are served: {body}");
        let port = addr.port();
        for req in [
            format!(
                "GET /debates HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
            ),
            format!(
                "GET /debates HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            ),
        ] {
            let (code, body) = raw(addr, &req).await;
            assert_eq!(code, 413, "{req:?}: {body}");
            assert!(body.contains("carries a body"), "{body}");
        }
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }
}
