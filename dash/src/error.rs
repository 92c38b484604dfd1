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
}

impl DashError {
    pub fn status(&self) -> StatusCode {
        match self {
            DashError::Unreachable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            DashError::Decode { .. } | DashError::Refused { .. } => StatusCode::BAD_GATEWAY,
            DashError::NotFound(_) => StatusCode::NOT_FOUND,
            DashError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    fn title(&self) -> &'static str {
        match self {
            DashError::Unreachable { .. } => "Coordinator unreachable",
            DashError::Decode { .. } | DashError::Refused { .. } => "Unexpected answer",
            DashError::NotFound(_) => "Not found",
            DashError::MethodNotAllowed { .. } => "Method not allowed",
        }
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
    html::page(e.title(), "", &body)
}

impl IntoResponse for DashError {
    fn into_response(self) -> Response {
        let mut r = (self.status(), Html(error_page(&self))).into_response();
        if matches!(self, DashError::MethodNotAllowed { .. }) {
            r.headers_mut().insert(
                axum::http::header::ALLOW,
                axum::http::HeaderValue::from_static("GET, HEAD"),
            );
        }
        r
    }
}
