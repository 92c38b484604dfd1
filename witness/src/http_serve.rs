//! The HTTP/1.1 accept loop the witness and the tiles server share: at most
//! [`MAX_CONNECTIONS`] connections at once, a header read timeout, bounded headers, one
//! task per connection, until shutdown.

use std::convert::Infallible;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Largest request head either server reads.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
const MAX_CONNECTIONS: usize = 256;
/// How long a request head (and the witness's request body) may take to arrive.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `listener` with a fresh `service()` per connection until `shutdown` completes.
pub async fn serve<S, B>(
    listener: &TcpListener,
    shutdown: impl Future<Output = ()>,
    service: impl Fn() -> S,
) where
    S: Service<Request<Incoming>, Response = Response<B>, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = std::sync::Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            p = limit.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let service = service();
        tokio::spawn(async move {
            let _permit = permit;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .max_headers(MAX_HEADERS)
                .max_header_size(MAX_HEADER_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
}
