//! What every page carries around its view: the address it was loaded from, and the
//! optional auto-refresh (`?refresh=N`). The frame ([`crate::html::page`]) turns the
//! refresh into a `<meta http-equiv="refresh">` and shows a link that turns it on or off;
//! no script is involved, the browser reloads by itself. Off unless asked for, so a page
//! left open does not read the cluster every few seconds by surprise.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::error::DashError;

/// The shortest auto-refresh period, in seconds: a page reads the cluster each time.
pub const REFRESH_MIN: u32 = 5;
/// The longest auto-refresh period, in seconds.
pub const REFRESH_MAX: u32 = 300;
/// The period the "turn on" link offers.
pub const REFRESH_OFFER: u32 = 30;

/// The request a page answers, as far as the frame needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chrome {
    /// Reload every this many seconds ([`REFRESH_MIN`]..=[`REFRESH_MAX`]).
    pub refresh: Option<u32>,
    /// The page's path and query without `refresh` (as sent, percent-encoded), for the
    /// toggle's links; empty for pages that have none (errors).
    pub target: String,
}

impl Chrome {
    /// The chrome of a request for `path` with query `query`; a `refresh` that is not a
    /// whole number of seconds in bounds is a 400 naming the parameter.
    pub fn parse(path: &str, query: &str) -> Result<Chrome, DashError> {
        let mut refresh = None;
        let mut kept = Vec::new();
        for part in query.split('&').filter(|p| !p.is_empty()) {
            let key = part.split_once('=').map_or(part, |(k, _)| k);
            if key != "refresh" {
                kept.push(part);
                continue;
            }
            let value = part.split_once('=').map_or("", |(_, v)| v);
            let secs = value
                .parse::<u32>()
                .ok()
                .filter(|s| (REFRESH_MIN..=REFRESH_MAX).contains(s))
                .ok_or_else(|| {
                    DashError::BadRequest(format!(
                        "refresh={} is not an auto-refresh period: give a whole number of seconds from {REFRESH_MIN} to {REFRESH_MAX}, or leave refresh out to turn it off",
                        crate::server::decoded(value)
                    ))
                })?;
            refresh = Some(secs);
        }
        let target = if kept.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{}", kept.join("&"))
        };
        Ok(Chrome { refresh, target })
    }

    /// This page's address with auto-refresh every `secs` seconds, or without it (not
    /// escaped: the caller escapes it for the attribute).
    pub fn href(&self, secs: Option<u32>) -> String {
        match secs {
            None => self.target.clone(),
            Some(s) if self.target.contains('?') => format!("{}&refresh={s}", self.target),
            Some(s) => format!("{}?refresh={s}", self.target),
        }
    }

    /// A hidden form field that keeps the auto-refresh across a filter form's submit.
    pub fn hidden_field(&self) -> String {
        self.refresh
            .map(|s| format!("<input type=\"hidden\" name=\"refresh\" value=\"{s}\">"))
            .unwrap_or_default()
    }

    /// `&refresh=N` (not escaped) to append to a link a view builds, so paging and
    /// filtering keep the refresh.
    pub fn keep(&self) -> String {
        self.refresh
            .map(|s| format!("&refresh={s}"))
            .unwrap_or_default()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Chrome {
    type Rejection = DashError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Chrome, DashError> {
        Chrome::parse(parts.uri.path(), parts.uri.query().unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_is_bounded_and_kept_out_of_the_target() {
        let c = Chrome::parse("/motions", "debate=deb_1&refresh=30&page=2").expect("ok");
        assert_eq!(c.refresh, Some(30));
        assert_eq!(c.target, "/motions?debate=deb_1&page=2");
        assert_eq!(c.href(None), "/motions?debate=deb_1&page=2");
        assert_eq!(c.href(Some(5)), "/motions?debate=deb_1&page=2&refresh=5");
        assert!(c.hidden_field().contains("value=\"30\""));
        let c = Chrome::parse("/", "").expect("ok");
        assert_eq!((c.refresh, c.href(Some(30))), (None, "/?refresh=30".into()));
        assert_eq!(c.hidden_field(), "");
        for bad in [
            "refresh=4",
            "refresh=301",
            "refresh=x",
            "refresh=",
            "refresh",
        ] {
            let e = Chrome::parse("/", bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
            assert!(e.to_string().starts_with("refresh="), "{e}");
        }
        assert!(
            Chrome::parse("/", "refresh=5").is_ok() && Chrome::parse("/", "refresh=300").is_ok()
        );
    }
}
