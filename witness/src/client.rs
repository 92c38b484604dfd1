//! Submitting a checkpoint to a witness (docs/WITNESS.md, "Client"): one `add-checkpoint`
//! POST over plain HTTP/1.1. No TLS is needed for integrity: the answer is only trusted
//! once its cosignature verifies under the witness's vkey, which the caller does.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use panel_tlog::SignatureLine;
use panel_tlog::witness::{AddCheckpoint, parse_cosignatures};
use tokio::net::TcpStream;

/// Largest response body read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Why a submission did not return cosignatures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// 409: the witness holds another size for the log; resend with the proof from it.
    #[error(
        "the witness holds size {size} for this log (409 Conflict); resend with the consistency proof from that size"
    )]
    Conflict { size: u64 },
    /// Any other answer than 200 and 409 (403, 404, 422, 400, 413, 5xx ...).
    #[error("the witness refused the checkpoint with {status}: {}", body.trim_end())]
    Refused { status: u16, body: String },
    /// The witness could not be reached or the connection failed (or the URL is unusable).
    #[error("could not reach the witness: {0}")]
    Transport(String),
    #[error("the witness did not answer within the timeout")]
    Timeout,
    /// A 200 or 409 whose body is not what the spec says.
    #[error("the witness's answer is malformed: {0}")]
    BadResponse(String),
}

/// POSTs `req` to `{url}/add-checkpoint`, where `url` is the witness's submission prefix
/// (`http://host:port`, optionally with a path). Returns the signature lines of a 200; they
/// are not verified here (the caller knows which witness keys it trusts). `timeout` bounds
/// the whole exchange.
pub async fn add_checkpoint(
    url: &str,
    req: &AddCheckpoint,
    timeout: Duration,
) -> Result<Vec<SignatureLine>, SubmitError> {
    let target = format!("{}/add-checkpoint", url.trim_end_matches('/'));
    let uri: Uri = target.parse().map_err(|e| {
        SubmitError::Transport(format!("the witness URL {url:?} is not a URL: {e}"))
    })?;
    if uri.scheme_str() != Some("http") {
        return Err(SubmitError::Transport(format!(
            "the witness URL {url:?} must start with http:// (cosignatures carry their own integrity)"
        )));
    }
    let body = req.to_body();
    match tokio::time::timeout(timeout, exchange(uri, body)).await {
        Ok(r) => r,
        Err(_) => Err(SubmitError::Timeout),
    }
}

async fn exchange(uri: Uri, body: String) -> Result<Vec<SignatureLine>, SubmitError> {
    let transport = |e: &dyn std::fmt::Display| SubmitError::Transport(format!("{uri}: {e}"));
    let authority = uri
        .authority()
        .ok_or_else(|| transport(&"no host"))?
        .clone();
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| transport(&e))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| transport(&e))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = uri
        .path_and_query()
        .map_or("/add-checkpoint", |p| p.as_str())
        .to_string();
    let mut request = Request::new(Full::new(Bytes::from(body)));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = path.parse().map_err(|e| transport(&e))?;
    let host_value = HeaderValue::from_str(authority.as_str()).map_err(|e| transport(&e))?;
    request.headers_mut().insert(HOST, host_value);
    request
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    let result = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| transport(&e))?;
        let status = response.status().as_u16();
        let text = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| SubmitError::BadResponse(format!("the body: {e}")))?
            .to_bytes();
        let text = String::from_utf8(text.to_vec())
            .map_err(|_| SubmitError::BadResponse("the body is not UTF-8".into()))?;
        match status {
            200 => parse_cosignatures(&text).map_err(|e| SubmitError::BadResponse(e.to_string())),
            409 => text
                .strip_suffix('\n')
                .and_then(|s| s.parse::<u64>().ok())
                .map(|size| SubmitError::Conflict { size })
                .ok_or_else(|| {
                    SubmitError::BadResponse(format!("a 409 whose body {text:?} is not a size"))
                })
                .and_then(Err),
            _ => Err(SubmitError::Refused { status, body: text }),
        }
    }
    .await;
    driver.abort();
    result
}
