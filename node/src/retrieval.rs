//! Retrieval for tier verification (SPEC section 5: verification means retrieval). The
//! node fetches the cited source itself, over `http://` or `https://` (`crate::http`:
//! rustls, the system's roots or `[retrieval] ca_file`), gives its judge the text extracted
//! from the bytes it got (so the ruling is about the source the judge read), and binds a
//! receipt, the SHA-256 of those bytes, into its ruling. A source it cannot fetch cannot be
//! verified by it, whatever its judge thinks of the citation string.
//!
//! Bounded: at most [`Retriever`]'s byte limit fetched, [`MAX_REDIRECTS`] redirects
//! followed, the whole retrieval within its timeout, and at most [`MAX_TEXT_BYTES`] of
//! text shown to the judge.
//!
//! Guarded, because whoever wrote the citation chose the address (server-side request
//! forgery):
//! * only public unicast addresses are connected to, judged on the addresses the host
//!   resolves to, on every redirect hop (`crate::address`); hosts the operator lists in
//!   `[retrieval] allow_hosts` are exempt;
//! * a redirect from `https://` to `http://` is not followed ([`RetrievalError::Downgrade`]);
//! * an address longer than a ruling's receipt may name ([`MAX_URL_BYTES`]) is not fetched,
//!   nor is a redirect to one.

use std::time::Duration;

use hyper::Method;
use panel_proto::pb::{Decision, Motion, MotionKind, RetrievalReceipt};
use panel_proto::ruling_check::{MAX_RATIONALE_BYTES, MAX_URL_BYTES};
use sha2::{Digest, Sha256};

use thiserror::Error;

use crate::address::{AllowHostError, AllowHosts, Destinations};
use crate::config::RetrievalConfig;
use crate::http::{HttpClient, HttpError, TlsSetupError, TrustRoots};
use crate::judge::{JudgeAnswer, Retrieved};

/// Why a cited source was not retrieved; the ruling's rationale then says so.
#[derive(Debug, Error)]
pub enum RetrievalError {
    #[error("the motion cites no source address to retrieve")]
    NoSource,
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{url}: no answer within {ms} ms")]
    Timeout { url: String, ms: u128 },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: HTTP {status} redirect without a Location")]
    NoLocation { url: String, status: u16 },
    #[error("{url}: redirect to {location:?}, which is neither absolute nor an absolute path")]
    BadRedirect { url: String, location: String },
    #[error("{url}: more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects { url: String },
    #[error(
        "the cited address is {len} bytes long ({start}); a ruling's receipt may name at most \
         {limit} bytes, so it is not fetched; cite a shorter address for the source"
    )]
    UrlTooLong {
        /// The address's first bytes.
        start: String,
        len: usize,
        limit: usize,
    },
    #[error(
        "{url}: redirect to an address of {len} bytes ({start}); at most {limit} bytes are \
         followed"
    )]
    RedirectTooLong {
        url: String,
        /// The target's first bytes.
        start: String,
        len: usize,
        limit: usize,
    },
    #[error(
        "{from}: redirect to {to}, from https:// down to plain http://; not followed (the \
         source would travel unauthenticated); cite the https:// address the source is \
         served at"
    )]
    Downgrade { from: String, to: String },
}

/// Why the retriever could not be set up from `[retrieval]`.
#[derive(Debug, Error)]
pub enum RetrievalSetupError {
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error(transparent)]
    AllowHosts(#[from] AllowHostError),
}

/// How many leading bytes of an over-long address an error shows.
const SHOWN_URL_BYTES: usize = 96;

/// Largest source fetched by default (bytes).
pub const MAX_SOURCE_BYTES: usize = 8 * 1024 * 1024;
/// Most text extracted from a source and shown to the judge (bytes of UTF-8).
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Redirects followed before a retrieval gives up.
pub const MAX_REDIRECTS: usize = 3;

/// The source a verification motion asks about: the first citation of its first item.
pub fn source_url(m: &Motion) -> Option<String> {
    m.projection
        .as_ref()?
        .items
        .iter()
        .flat_map(|i| i.citations.iter())
        .map(|c| c.url.clone())
        .find(|u| !u.is_empty())
}

/// What one retrieval got.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The address asked for (the citation's; the receipt names it).
    pub url: String,
    /// The address the bytes came from, after redirects.
    pub final_url: String,
    pub bytes: Vec<u8>,
    pub content_type: String,
    pub fetched_at_unix_ms: i64,
}

impl Fetched {
    /// The judge's view of the source: extracted text, bounded.
    pub fn retrieved(&self) -> Retrieved {
        let (text, truncated) = extract_text(&self.bytes, &self.content_type);
        Retrieved {
            url: self.final_url.clone(),
            text,
            truncated,
            sha256_hex: hex::encode(Sha256::digest(&self.bytes)),
        }
    }
}

/// The node's retriever (`[retrieval]` in node.toml).
#[derive(Clone)]
pub struct Retriever {
    client: HttpClient,
    timeout: Duration,
    max_bytes: usize,
}

impl Retriever {
    /// A retriever trusting `ca_file` (or the system's roots) and connecting only to
    /// `destinations`: [`Destinations::public_only`] unless the operator exempted hosts.
    pub fn new(
        ca_file: Option<&std::path::Path>,
        timeout: Duration,
        max_bytes: usize,
        destinations: Destinations,
    ) -> Result<Self, TlsSetupError> {
        let roots = match ca_file {
            Some(p) => TrustRoots::CaFile {
                key: "retrieval.ca_file",
                path: p.to_owned(),
            },
            None => TrustRoots::System,
        };
        Ok(Self {
            client: HttpClient::new(&roots, "retrieval.ca_file", destinations)?,
            timeout,
            max_bytes,
        })
    }

    /// The retriever `[retrieval]` describes: public addresses only, except the hosts in
    /// `allow_hosts`.
    pub fn from_config(cfg: &RetrievalConfig) -> Result<Self, RetrievalSetupError> {
        let destinations = Destinations::Public(AllowHosts::parse(&cfg.allow_hosts)?);
        Ok(Self::new(
            cfg.ca_file.as_deref(),
            Duration::from_millis(cfg.timeout_ms),
            cfg.max_bytes,
            destinations,
        )?)
    }

    /// The default retriever: system roots, 10 s, [`MAX_SOURCE_BYTES`], public addresses
    /// only.
    pub fn system() -> Self {
        Self {
            client: HttpClient::system("retrieval.ca_file", Destinations::public_only()),
            timeout: Duration::from_secs(10),
            max_bytes: MAX_SOURCE_BYTES,
        }
    }

    /// Fetches `url` (following at most [`MAX_REDIRECTS`] redirects), all within the
    /// retriever's timeout. An address longer than [`MAX_URL_BYTES`] is refused before
    /// anything is sent.
    pub async fn fetch(
        &self,
        url: &str,
        now_ms: impl Fn() -> i64,
    ) -> Result<Fetched, RetrievalError> {
        if url.len() > MAX_URL_BYTES {
            return Err(RetrievalError::UrlTooLong {
                start: clip(url, SHOWN_URL_BYTES),
                len: url.len(),
                limit: MAX_URL_BYTES,
            });
        }
        let started = std::time::Instant::now();
        let mut at = url.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let left = self.timeout.checked_sub(started.elapsed()).ok_or_else(|| {
                RetrievalError::Timeout {
                    url: url.to_owned(),
                    ms: self.timeout.as_millis(),
                }
            })?;
            let resp = self
                .client
                .send(
                    Method::GET,
                    &at,
                    &[("accept", "text/html, text/plain;q=0.9, */*;q=0.5")],
                    None,
                    self.max_bytes,
                    left,
                )
                .await?;
            if resp.status.is_redirection() {
                let location = resp
                    .headers
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| RetrievalError::NoLocation {
                        url: at.clone(),
                        status: resp.status.as_u16(),
                    })?;
                at = next_hop(&at, location)?;
                continue;
            }
            if !resp.status.is_success() {
                return Err(RetrievalError::Status {
                    url: at,
                    status: resp.status.as_u16(),
                });
            }
            let content_type = resp
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            return Ok(Fetched {
                url: url.to_owned(),
                final_url: at,
                bytes: resp.body.to_vec(),
                content_type,
                fetched_at_unix_ms: now_ms(),
            });
        }
        Err(RetrievalError::TooManyRedirects {
            url: url.to_owned(),
        })
    }

    /// For a tier-verification motion, retrieves its source; `None` for other motions.
    pub async fn retrieve_for(
        &self,
        m: &Motion,
        now_ms: impl Fn() -> i64,
    ) -> Option<Result<Fetched, RetrievalError>> {
        if m.kind != MotionKind::VerifyTier as i32 {
            return None;
        }
        Some(match source_url(m) {
            None => Err(RetrievalError::NoSource),
            Some(url) => self.fetch(&url, now_ms).await,
        })
    }
}

/// Where a redirect from `at` to `location` leads: [`resolve`]d, at most [`MAX_URL_BYTES`]
/// long, and not from `https://` down to `http://`. (Whether its host may be connected to
/// is decided when it is, like the first hop's.)
fn next_hop(at: &str, location: &str) -> Result<String, RetrievalError> {
    let too_long = |target: &str| RetrievalError::RedirectTooLong {
        url: at.to_owned(),
        start: clip(target, SHOWN_URL_BYTES),
        len: target.len(),
        limit: MAX_URL_BYTES,
    };
    if location.len() > MAX_URL_BYTES {
        return Err(too_long(location));
    }
    let next = resolve(at, location)?;
    if next.len() > MAX_URL_BYTES {
        return Err(too_long(&next));
    }
    let https = at.parse::<hyper::Uri>().is_ok_and(|u| {
        u.scheme_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("https"))
    });
    if https && next.starts_with("http://") {
        return Err(RetrievalError::Downgrade {
            from: at.to_owned(),
            to: next,
        });
    }
    Ok(next)
}

/// At most `max` bytes of `s`, cut at a character boundary, with "..." when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// A redirect target: absolute (any origin), or an absolute path on the same origin.
fn resolve(base: &str, location: &str) -> Result<String, RetrievalError> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Ok(location.to_owned());
    }
    if location.starts_with('/')
        && !location.starts_with("//")
        && let Ok(uri) = base.parse::<hyper::Uri>()
        && let (Some(scheme), Some(auth)) = (uri.scheme_str(), uri.authority())
    {
        return Ok(format!("{scheme}://{auth}{location}"));
    }
    Err(RetrievalError::BadRedirect {
        url: base.to_owned(),
        location: location.to_owned(),
    })
}

/// Text for the judge from fetched bytes: HTML with its tags, scripts, styles and comments
/// stripped (crudely: this is not a browser) and a few entities decoded; other text as
/// UTF-8; whitespace collapsed; at most [`MAX_TEXT_BYTES`]. Returns the text and whether it
/// was cut.
pub fn extract_text(bytes: &[u8], content_type: &str) -> (String, bool) {
    let raw = String::from_utf8_lossy(bytes);
    let head: String = raw
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    let html = content_type.to_ascii_lowercase().contains("html")
        || head.contains("<html")
        || head.contains("<!doctype html");
    let binary = raw.chars().take(4096).filter(|c| *c == '\u{fffd}').count() > 64;
    if binary && !html {
        let kind = if content_type.is_empty() {
            "unknown type"
        } else {
            content_type
        };
        return (
            format!(
                "(binary content: {} bytes of {kind}; no text to show)",
                bytes.len()
            ),
            false,
        );
    }
    let text = if html {
        strip_html(&raw)
    } else {
        raw.into_owned()
    };
    let mut out = String::with_capacity(text.len().min(MAX_TEXT_BYTES));
    let mut space = false;
    let mut truncated = false;
    for c in text.chars() {
        let c = if c.is_whitespace() { ' ' } else { c };
        if c == ' ' {
            if space || out.is_empty() {
                continue;
            }
            space = true;
        } else {
            space = false;
        }
        if out.len() + c.len_utf8() > MAX_TEXT_BYTES {
            truncated = true;
            break;
        }
        out.push(c);
    }
    (out.trim_end().to_owned(), truncated)
}

/// Removes tags, comments and the contents of script/style elements; decodes the common
/// entities. Block-level tags become spaces so words do not run together.
fn strip_html(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len() / 2);
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() {
        if b[i] == b'<' {
            let rest = &lower[i..];
            let skip_to = |end: &str| rest.find(end).map_or(b.len(), |p| i + p + end.len());
            let next = if rest.starts_with("<!--") {
                skip_to("-->")
            } else if rest.starts_with("<script") {
                skip_to("</script>")
            } else if rest.starts_with("<style") {
                skip_to("</style>")
            } else {
                rest.find('>').map_or(b.len(), |p| i + p + 1)
            };
            out.push(' ');
            i = next;
            continue;
        }
        // Copy up to the next tag, whole characters only (the index moves over ASCII '<').
        let end = s[i..].find('<').map_or(s.len(), |p| i + p);
        out.push_str(&decode_entities(&s[i..end]));
        i = end;
    }
    out
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    s.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Binds the retrieval into the judge's answer for a tier-verification motion: the receipt
/// of the bytes fetched, or, when nothing was fetched, a rejection that says why.
pub fn bind(
    m: &Motion,
    mut answer: JudgeAnswer,
    retrieval: Option<&Result<Fetched, RetrievalError>>,
) -> JudgeAnswer {
    if m.kind != MotionKind::VerifyTier as i32 {
        return answer;
    }
    match retrieval {
        Some(Ok(f)) => {
            answer.receipt = Some(RetrievalReceipt {
                url: f.url.clone(),
                sha256: Sha256::digest(&f.bytes).to_vec(),
                fetched_at_unix_ms: f.fetched_at_unix_ms,
            });
            answer
        }
        Some(Err(e)) => refuse(
            answer,
            &format!("The source could not be retrieved ({e}), so its tier cannot be verified."),
        ),
        None => refuse(
            answer,
            "No source was retrieved, so its tier cannot be verified.",
        ),
    }
}

fn refuse(mut answer: JudgeAnswer, why: &str) -> JudgeAnswer {
    answer.decision = Decision::Reject;
    answer.probability = answer.probability.min(0.05);
    answer.receipt = None;
    answer.tier = None;
    // A rationale over the limit could not be signed; the reason is cut rather than lost.
    answer.rationale = clip(why, MAX_RATIONALE_BYTES - 3);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_stripped_text_is_kept_and_both_are_bounded() {
        let page = b"<!DOCTYPE html><html><head><style>p{x:1}</style><script>var a='<b>';</script>\
            <title>Survey</title></head><body><!-- hidden --><h1>Remote&nbsp;work</h1>\
            <p>Output rose 4% &amp; held.</p></body></html>";
        let (t, cut) = extract_text(page, "text/html; charset=utf-8");
        assert_eq!(t, "Survey Remote work Output rose 4% & held.");
        assert!(!cut);
        let (t, _) = extract_text("plain\n\n  text é".as_bytes(), "text/plain");
        assert_eq!(t, "plain text é");
        let long = "ab ".repeat(20_000);
        let (t, cut) = extract_text(long.as_bytes(), "text/plain");
        assert!(cut && t.len() <= MAX_TEXT_BYTES);
        let (t, _) = extract_text(&[0xff; 5000], "application/pdf");
        assert!(
            t.contains("binary content") && t.contains("application/pdf"),
            "{t}"
        );
    }

    fn verify_motion(url: &str) -> Motion {
        use panel_proto::pb::{Citation, ContentProjection, ProjectionItem};
        Motion {
            motion_id: "v-1".into(),
            kind: MotionKind::VerifyTier as i32,
            projection: Some(ContentProjection {
                items: vec![ProjectionItem {
                    label: "Source to retrieve".into(),
                    citations: vec![Citation {
                        url: url.into(),
                        claimed_tier: 2,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn answer() -> JudgeAnswer {
        JudgeAnswer {
            decision: Decision::Accept,
            probability: 0.9,
            relevance: None,
            tier: Some(2),
            quantiles: vec![],
            receipt: None,
            rationale: "read it".into(),
            provenance: None,
        }
    }

    /// `[retrieval]` with the test authority as `ca_file`, and `allow_hosts` when given
    /// (the test servers are on loopback, which is refused by default).
    fn retriever(ca: &std::path::Path, allow_hosts: &[&str]) -> Retriever {
        Retriever::from_config(&RetrievalConfig {
            ca_file: Some(ca.to_owned()),
            timeout_ms: 5_000,
            max_bytes: 1 << 20,
            allow_hosts: allow_hosts.iter().map(|h| h.to_string()).collect(),
        })
        .unwrap()
    }

    fn write_ca(pki: &crate::http::tests::TestPki) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        (dir, ca)
    }

    /// Over HTTPS with `retrieval.ca_file` (and the loopback test server opted in through
    /// `allow_hosts`): the judge gets the page's text, the ruling the receipt of its bytes;
    /// a source that answers 404 is a rejection that says why.
    #[tokio::test]
    async fn https_sources_are_read_and_receipted_and_failures_reject() {
        let pki = crate::http::tests::test_pki();
        let (port, _) = crate::http::tests::serve_with(&pki, |_| {
            (
                200,
                "<html><body><p>Output rose 4%.</p></body></html>".into(),
            )
        })
        .await;
        let (missing, _) = crate::http::tests::serve_with(&pki, |_| (404, "gone".into())).await;
        let (_dir, ca) = write_ca(&pki);
        let r = retriever(&ca, &["127.0.0.1"]);
        let m = verify_motion(&format!("https://127.0.0.1:{port}/doc"));
        let got = r.retrieve_for(&m, || 7).await.unwrap();
        let f = got.as_ref().unwrap();
        assert_eq!(f.retrieved().text, "Output rose 4%.");
        let bound = bind(&m, answer(), Some(&got));
        let rc = bound.receipt.unwrap();
        assert_eq!(rc.sha256, Sha256::digest(&f.bytes).to_vec());
        assert_eq!(rc.fetched_at_unix_ms, 7);

        let m = verify_motion(&format!("https://127.0.0.1:{missing}/doc"));
        let got = r.retrieve_for(&m, || 7).await.unwrap();
        let e = got.as_ref().unwrap_err();
        assert!(
            matches!(e, RetrievalError::Status { status: 404, .. }),
            "{e}"
        );
        let bound = bind(&m, answer(), Some(&got));
        assert_eq!(bound.decision, Decision::Reject);
        assert!(bound.rationale.contains("HTTP 404") && bound.receipt.is_none());
        // Not a verification motion: nothing is fetched.
        let mut other = m.clone();
        other.kind = MotionKind::Merge as i32;
        assert!(r.retrieve_for(&other, || 7).await.is_none());
    }

    /// The default `[retrieval]` (no `allow_hosts`) refuses loopback, whether named by
    /// address or by a name that resolves to it, and the metadata and private addresses,
    /// before any connection; the ruling is a rejection that names the fix.
    #[tokio::test]
    async fn non_public_sources_are_refused_by_default_without_connecting() {
        let pki = crate::http::tests::test_pki();
        let (port, seen) =
            crate::http::tests::serve_full(&pki, |_, _| (200, vec![], "secret".into())).await;
        let (_dir, ca) = write_ca(&pki);
        let r = retriever(&ca, &[]);
        for url in [
            format!("https://127.0.0.1:{port}/doc"),
            format!("https://localhost:{port}/doc"),
            format!("https://[::1]:{port}/doc"),
            format!("https://[::ffff:127.0.0.1]:{port}/doc"),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "http://10.1.2.3/".to_owned(),
            "http://192.168.0.1/".to_owned(),
            "http://[fd00::1]/".to_owned(),
        ] {
            let m = verify_motion(&url);
            let got = r.retrieve_for(&m, || 7).await.unwrap();
            let e = got.as_ref().unwrap_err();
            assert!(
                matches!(e, RetrievalError::Http(HttpError::Refused { .. })),
                "{url}: {e}"
            );
            let bound = bind(&m, answer(), Some(&got));
            assert_eq!(bound.decision, Decision::Reject);
            assert!(bound.receipt.is_none());
            assert!(
                bound.rationale.contains("retrieval.allow_hosts"),
                "{}",
                bound.rationale
            );
        }
        assert_eq!(seen.accepted(), 0, "no connection reached the server");
        // Retriever::system (an Arbiter without [retrieval]) is as strict.
        let e = Retriever::system()
            .fetch(&format!("https://127.0.0.1:{port}/doc"), || 7)
            .await
            .unwrap_err();
        assert!(
            matches!(e, RetrievalError::Http(HttpError::Refused { .. })),
            "{e}"
        );
        assert_eq!(seen.accepted(), 0);
        // An allow_hosts entry that is not a host stops the node at start.
        let e = Retriever::from_config(&RetrievalConfig {
            allow_hosts: vec!["*.internal".into()],
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(
            matches!(e, RetrievalSetupError::AllowHosts(_))
                && e.to_string().contains("retrieval.allow_hosts"),
            "{e}"
        );
    }

    /// An exempt host is reached, and only that host as written: `localhost` is not
    /// exempted by `127.0.0.1`.
    #[tokio::test]
    async fn allowed_hosts_are_retrieved_and_only_they() {
        let pki = crate::http::tests::test_pki();
        let (port, seen) =
            crate::http::tests::serve_full(&pki, |_, _| (200, vec![], "mirrored".into())).await;
        let (_dir, ca) = write_ca(&pki);
        let by_ip = retriever(&ca, &["127.0.0.1"]);
        let f = by_ip
            .fetch(&format!("https://127.0.0.1:{port}/doc"), || 7)
            .await
            .unwrap();
        assert_eq!(f.bytes, b"mirrored");
        let e = by_ip
            .fetch(&format!("https://localhost:{port}/doc"), || 7)
            .await
            .unwrap_err();
        assert!(
            matches!(e, RetrievalError::Http(HttpError::Refused { .. })),
            "{e}"
        );
        assert_eq!(seen.accepted(), 1);
        let by_name = retriever(&ca, &["LocalHost"]);
        let f = by_name
            .fetch(&format!("https://localhost:{port}/doc"), || 7)
            .await
            .unwrap();
        assert_eq!(f.final_url, format!("https://localhost:{port}/doc"));
        assert_eq!(seen.answered(), 2);
    }

    /// A server that redirects by path, for the redirect tests.
    async fn redirecting_server(
        pki: &crate::http::tests::TestPki,
        plain_port: u16,
    ) -> (u16, crate::http::tests::Seen) {
        let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
        let own = port.clone();
        let (p, seen) = crate::http::tests::serve_full(pki, move |head, _| {
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let me = own.get().copied().unwrap_or(0);
            let to =
                |location: String| (302, vec![("location".to_owned(), location)], String::new());
            match path.as_str() {
                "/down" => to(format!("http://127.0.0.1:{plain_port}/doc")),
                "/same" => to("/doc".into()),
                "/to-localhost" => to(format!("https://localhost:{me}/doc")),
                "/to-metadata" => to("https://169.254.169.254/latest/meta-data/".into()),
                "/long" => to(format!("/{}", "a".repeat(MAX_URL_BYTES))),
                _ => (200, vec![], "the source".into()),
            }
        })
        .await;
        port.set(p).unwrap();
        (p, seen)
    }

    /// Redirects are followed over https:// only upward or level, and every hop's host is
    /// vetted like the first: no downgrade to http://, no hop to a non-public address the
    /// operator did not list, no hop to an address too long for a receipt.
    #[tokio::test]
    async fn redirect_hops_are_vetted_and_never_downgrade() {
        let pki = crate::http::tests::test_pki();
        // The plain-http target a downgrade would reach: counts connections.
        let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let plain_port = plain.local_addr().unwrap().port();
        let plain_seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = plain_seen.clone();
        tokio::spawn(async move {
            while let Ok(_conn) = plain.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let (port, seen) = redirecting_server(&pki, plain_port).await;
        let (_dir, ca) = write_ca(&pki);
        let r = retriever(&ca, &["127.0.0.1"]);
        let base = format!("https://127.0.0.1:{port}");

        let f = r.fetch(&format!("{base}/same"), || 7).await.unwrap();
        assert_eq!(
            (f.final_url.as_str(), &f.bytes[..]),
            (&*format!("{base}/doc"), &b"the source"[..])
        );

        let e = r.fetch(&format!("{base}/down"), || 7).await.unwrap_err();
        let RetrievalError::Downgrade { from, to } = &e else {
            panic!("{e}");
        };
        assert_eq!(from, &format!("{base}/down"));
        assert_eq!(to, &format!("http://127.0.0.1:{plain_port}/doc"));
        assert!(
            e.to_string().contains(from) && e.to_string().contains(to),
            "{e}"
        );
        assert_eq!(
            plain_seen.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "the downgraded target was never contacted"
        );

        for path in ["/to-localhost", "/to-metadata"] {
            let e = r.fetch(&format!("{base}{path}"), || 7).await.unwrap_err();
            assert!(
                matches!(e, RetrievalError::Http(HttpError::Refused { .. })),
                "{path}: {e}"
            );
        }

        let e = r.fetch(&format!("{base}/long"), || 7).await.unwrap_err();
        assert!(
            matches!(e, RetrievalError::RedirectTooLong { len, limit: MAX_URL_BYTES, .. } if len == MAX_URL_BYTES + 1),
            "{e}"
        );
        // Each refused hop was refused before its connection: one request per fetch.
        assert_eq!(seen.answered(), 2 + 1 + 2 + 1);
        assert_eq!(seen.accepted(), seen.answered());
    }

    /// A citation longer than a receipt may name is refused before any connection; one of
    /// exactly the limit is fetched.
    #[tokio::test]
    async fn overlong_urls_are_refused_before_connecting() {
        let pki = crate::http::tests::test_pki();
        let (port, seen) =
            crate::http::tests::serve_full(&pki, |_, _| (200, vec![], "ok".into())).await;
        let (_dir, ca) = write_ca(&pki);
        let r = retriever(&ca, &["127.0.0.1"]);
        let base = format!("https://127.0.0.1:{port}/");
        let at_limit = format!("{base}{}", "x".repeat(MAX_URL_BYTES - base.len()));
        let over = format!("{at_limit}y");
        assert_eq!((at_limit.len(), over.len()), (2048, 2049));
        let m = verify_motion(&over);
        let got = r.retrieve_for(&m, || 7).await.unwrap();
        let e = got.as_ref().unwrap_err();
        assert!(
            matches!(
                e,
                RetrievalError::UrlTooLong {
                    len: 2049,
                    limit: 2048,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("2049") && e.to_string().contains("2048"),
            "{e}"
        );
        assert!(
            e.to_string().len() < 512,
            "the message shows only the address's start"
        );
        assert_eq!(bind(&m, answer(), Some(&got)).decision, Decision::Reject);
        assert_eq!(seen.accepted(), 0);
        let f = r.fetch(&at_limit, || 7).await.unwrap();
        assert_eq!(f.bytes, b"ok");
        assert_eq!(seen.accepted(), 1);
    }

    #[test]
    fn redirect_targets_are_absolute_or_same_origin_paths_and_never_downgrade() {
        // An absolute path stays on the origin.
        assert_eq!(
            next_hop("https://a.example/x", "/y?z=1").unwrap(),
            "https://a.example/y?z=1"
        );
        // An absolute URL may lead to another origin (its host is vetted at connect time).
        assert_eq!(
            next_hop("https://a.example/x", "https://b.example/").unwrap(),
            "https://b.example/"
        );
        assert_eq!(
            next_hop("http://a.example/x", "https://b.example/").unwrap(),
            "https://b.example/"
        );
        assert_eq!(
            next_hop("http://a.example/x", "http://b.example/").unwrap(),
            "http://b.example/"
        );
        // Never from https:// down to http://, same host or not.
        for (from, location) in [
            ("https://a.example/x", "http://b.example/"),
            ("https://a.example/x", "http://a.example/x"),
            ("HTTPS://a.example/x", "http://a.example/x"),
        ] {
            let e = next_hop(from, location).unwrap_err();
            assert!(
                matches!(&e, RetrievalError::Downgrade { from: f, to } if f == from && to == location),
                "{from} -> {location}: {e}"
            );
        }
        // Relative and scheme-relative targets are refused.
        assert!(matches!(
            next_hop("https://a.example/x", "y"),
            Err(RetrievalError::BadRedirect { .. })
        ));
        assert!(matches!(
            next_hop("https://a.example/x", "//evil/"),
            Err(RetrievalError::BadRedirect { .. })
        ));
        // Too long, as written or once resolved.
        let long = format!("https://b.example/{}", "a".repeat(MAX_URL_BYTES));
        assert!(matches!(
            next_hop("https://a.example/x", &long),
            Err(RetrievalError::RedirectTooLong { .. })
        ));
        let path = format!("/{}", "a".repeat(MAX_URL_BYTES - 2));
        assert!(path.len() < MAX_URL_BYTES);
        assert!(matches!(
            next_hop("https://a.example/x", &path),
            Err(RetrievalError::RedirectTooLong { .. })
        ));
    }

    #[test]
    fn refusals_fit_a_ruling() {
        let why = "é".repeat(MAX_RATIONALE_BYTES);
        let a = refuse(answer(), &why);
        assert!(a.rationale.len() <= MAX_RATIONALE_BYTES && a.rationale.ends_with("..."));
    }
}
