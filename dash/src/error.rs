//! What can go wrong serving a page, each with its HTTP status and a page that says what
//! happened in words. Nothing on a request path panics: every failure is one of these.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::html;

/// A failed request.
#[derive(Debug, thiserror::Error)]
pub enum DashError {
    /// No replica answered (refused, timed out, no quorum): 503.
    #[error(
        "no coordinator answered at {addrs}: {last}. Is the cluster running, and are the addresses and the TLS identity (--addr, --state, --tls) right?"
    )]
    Unreachable { addrs: String, last: String },
    /// A replica answered, but not with what this dashboard reads (another version): 502.
    #[error(
        "the coordinator at {addr} answered {what} with something this dashboard cannot read: {error}"
    )]
    Decode {
        addr: String,
        what: String,
        error: String,
    },
    /// A replica refused the question itself (for example an older replica that does not
    /// know it): 502.
    #[error("the coordinator at {addr} refused {what}: {message}")]
    Refused {
        addr: String,
        what: String,
        message: String,
    },
    /// No such page, or no such debate, motion or run: 404.
    #[error("{0}")]
    NotFound(String),
    /// Anything but GET (or HEAD): 405.
    #[error("this dashboard is read-only: {method} is not allowed, only GET")]
    MethodNotAllowed { method: String },
    /// A query the page does not understand (`?page=0`): 400.
    #[error("{0}")]
    BadRequest(String),
    /// A Host header naming none of the names this dashboard answers for (a page reached
    /// through a name that rebinds to this machine), or none at all: 421.
    #[error("{}", misdirected(.got.as_deref(), .accepted))]
    MisdirectedHost {
        got: Option<String>,
        accepted: String,
    },
    /// A request line longer than [`crate::server::MAX_URI`], or a request with a body
    /// (no page reads one): 414 or 413.
    #[error("{what}")]
    TooLarge { what: String, uri: bool },
    /// As many requests in flight as the dashboard serves at once: 503 with Retry-After.
    #[error(
        "the dashboard is already serving {limit} request(s) at once, its limit; try again in a moment"
    )]
    Busy { limit: usize },
    /// The page was not ready within the per-request limit (a slow cluster): 504.
    #[error(
        "the page was not ready within {secs} s (is the cluster slow or partly down?); reload to try again"
    )]
    TimedOut { secs: f64 },
}

impl DashError {
    pub fn status(&self) -> StatusCode {
        match self {
            DashError::Unreachable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            DashError::Decode { .. } | DashError::Refused { .. } => StatusCode::BAD_GATEWAY,
            DashError::NotFound(_) => StatusCode::NOT_FOUND,
            DashError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            DashError::BadRequest(_) => StatusCode::BAD_REQUEST,
            DashError::MisdirectedHost { .. } => StatusCode::MISDIRECTED_REQUEST,
            DashError::TooLarge { uri: true, .. } => StatusCode::URI_TOO_LONG,
            DashError::TooLarge { uri: false, .. } => StatusCode::PAYLOAD_TOO_LARGE,
            DashError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            DashError::TimedOut { .. } => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    fn title(&self) -> &'static str {
        match self {
            DashError::Unreachable { .. } => "Coordinator unreachable",
            DashError::Decode { .. } | DashError::Refused { .. } => "Unexpected answer",
            DashError::NotFound(_) => "Not found",
            DashError::MethodNotAllowed { .. } => "Method not allowed",
            DashError::BadRequest(_) => "Bad request",
            DashError::MisdirectedHost { .. } => "Wrong host",
            DashError::TooLarge { .. } => "Request too large",
            DashError::Busy { .. } => "Busy",
            DashError::TimedOut { .. } => "Timed out",
        }
    }
}

/// What a 421 page says: what the request named, what is accepted, and the flag.
fn misdirected(got: Option<&str>, accepted: &str) -> String {
    match got {
        Some(h) => format!(
            "this request was addressed to host \"{h}\", and this dashboard answers only requests addressed to {accepted} (a page of another site must not read the cluster through a name that resolves to this machine). If \"{h}\" is a name of this machine you mean to use, start panel dash with --allow-host {h}"
        ),
        None => format!(
            "this request named no host (its Host header is missing, repeated or malformed), and this dashboard answers only requests addressed to {accepted}; to use another name, start panel dash with --allow-host NAME"
        ),
    }
}

/// The error page: the status, the message, and the way back.
pub fn error_page(e: &DashError) -> String {
    let code = e.status();
    let body = format!(
        "<section class=\"card\"><p class=\"bad\">{} {}</p><p id=\"message\">{}</p><p><a href=\"/\">Overview</a></p></section>",
        code.as_u16(),
        html::escape(code.canonical_reason().unwrap_or("")),
        html::escape(&e.to_string())
    );
    html::page(&crate::chrome::Chrome::default(), e.title(), "", &body)
}

impl IntoResponse for DashError {
    fn into_response(self) -> Response {
        use axum::http::{HeaderValue, header};
        let mut r = (self.status(), Html(error_page(&self))).into_response();
        match self {
            DashError::MethodNotAllowed { .. } => {
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            DashError::Busy { .. } => {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            // The body of a request with one was not read: do not reuse the connection.
            DashError::TooLarge { .. } => {
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        r
    }
}
