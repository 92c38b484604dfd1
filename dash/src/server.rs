//! The HTTP side: one GET route per view, a 404 page for any other path, 405 for any
//! method but GET and HEAD, and every failure rendered as a page (`DashError`).

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{RawQuery, Request, State};
use axum::http::{Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::error::DashError;
use crate::html::VIEWS;
use crate::source::Source;
use crate::views;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the dashboard's server failed: {0}")]
    Serve(#[source] std::io::Error),
}

type Page = Result<Html<String>, DashError>;

async fn index(State(src): State<Source>) -> Page {
    views::index::page(&src).await.map(Html)
}

async fn debates(State(src): State<Source>) -> Page {
    views::debates::page(&src).await.map(Html)
}

async fn motions(State(src): State<Source>, RawQuery(q): RawQuery) -> Page {
    let mut filter = views::motions::Filter::default();
    for (k, v) in params(q.as_deref().unwrap_or("")) {
        match k.as_str() {
            "debate" if !v.is_empty() => filter.debate = Some(v),
            _ => {}
        }
    }
    views::motions::page(&src, &filter).await.map(Html)
}

async fn arbiters(State(src): State<Source>) -> Page {
    views::arbiters::page(&src).await.map(Html)
}

async fn record(State(src): State<Source>) -> Page {
    views::record::page(&src).await.map(Html)
}

async fn runs(State(src): State<Source>) -> Page {
    views::runs::page(&src).await.map(Html)
}

async fn not_found(uri: Uri) -> DashError {
    let pages: Vec<&str> = VIEWS.iter().map(|(p, _)| *p).collect();
    DashError::NotFound(format!(
        "there is no page at {}; the dashboard's pages are {}",
        uri.path(),
        pages.join(", ")
    ))
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

/// The dashboard's routes over `src`.
pub fn router(src: Source) -> Router {
    Router::new()
        .route(views::index::PATH, get(index))
        .route(views::debates::PATH, get(debates))
        .route(views::motions::PATH, get(motions))
        .route(views::arbiters::PATH, get(arbiters))
        .route(views::record::PATH, get(record))
        .route(views::runs::PATH, get(runs))
        .fallback(not_found)
        .layer(middleware::from_fn(only_get))
        .with_state(src)
}

/// Serves the dashboard on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    src: Source,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    axum::serve(listener, router(src))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Serve)
}

/// How long requests in flight may take to finish once a stop was asked for.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Binds `addr` and serves until `shutdown`, then lets requests in flight finish for at
/// most [`GRACE`]; `ready` gets the bound address first (port 0 picks a free one).
pub async fn bind_and_serve(
    addr: SocketAddr,
    src: Source,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
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
    let served = serve(listener, src, async move {
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
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
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

    async fn get(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.expect("send");
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.expect("read");
        let code = buf
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, buf)
    }

    /// With no coordinator at the address every view is a 503 page naming it; other paths
    /// are 404 and other methods 405, each with a page that says so.
    #[tokio::test]
    async fn unreachable_unknown_and_writes_are_pages_not_panics() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        let dead_addr = dead.local_addr().expect("addr").to_string();
        drop(dead);
        let src = Source::new(
            &panel_transport::Transport::InsecureLoopback,
            std::slice::from_ref(&dead_addr),
        )
        .expect("source");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, src, async {
            let _ = rx.await;
        }));
        for (path, _) in VIEWS {
            let (code, body) = get(addr, "GET", path).await;
            assert_eq!(code, 503, "{path}: {body}");
            assert!(
                body.contains(&dead_addr),
                "{path} names the address: {body}"
            );
            assert!(body.contains("Coordinator unreachable"));
        }
        let (code, body) = get(addr, "GET", "/nope/%3Cx%3E").await;
        assert_eq!(code, 404, "{body}");
        assert!(body.contains("there is no page at /nope/"), "{body}");
        assert!(!body.contains("<x>"));
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            for path in ["/", "/debates", "/nope"] {
                let (code, body) = get(addr, method, path).await;
                assert_eq!(code, 405, "{method} {path}: {body}");
                assert!(body.contains("read-only"), "{body}");
                assert!(
                    body.to_ascii_lowercase().contains("allow: get, head"),
                    "{body}"
                );
            }
        }
        let (code, _) = get(addr, "HEAD", "/nope").await;
        assert_eq!(code, 404);
        let _ = tx.send(());
        server.await.expect("join").expect("served");
    }
}
