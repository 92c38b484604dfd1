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

use std::time::Duration;

use hyper::Method;
use panel_proto::pb::{Decision, Motion, MotionKind, RetrievalReceipt};
use sha2::{Digest, Sha256};

use thiserror::Error;

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
}

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
    pub fn new(
        ca_file: Option<&std::path::Path>,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Self, TlsSetupError> {
        let roots = match ca_file {
            Some(p) => TrustRoots::CaFile {
                key: "retrieval.ca_file",
                path: p.to_owned(),
            },
            None => TrustRoots::System,
        };
        Ok(Self {
            client: HttpClient::new(&roots, "retrieval.ca_file")?,
            timeout,
            max_bytes,
        })
    }

    /// The default retriever: system roots, 10 s, [`MAX_SOURCE_BYTES`].
    pub fn system() -> Self {
        Self {
            client: HttpClient::system("retrieval.ca_file"),
            timeout: Duration::from_secs(10),
            max_bytes: MAX_SOURCE_BYTES,
        }
    }

    /// Fetches `url` (following at most [`MAX_REDIRECTS`] redirects), all within the
    /// retriever's timeout.
    pub async fn fetch(
        &self,
        url: &str,
        now_ms: impl Fn() -> i64,
    ) -> Result<Fetched, RetrievalError> {
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
                at = resolve(&at, location)?;
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

/// A redirect target: absolute, or absolute-path on the same origin.
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
    answer.rationale = why.to_owned();
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

    /// Over HTTPS with `retrieval.ca_file`: the judge gets the page's text, the ruling the
    /// receipt of its bytes; a source that answers 404 is a rejection that says why.
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
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, &pki.ca_pem).unwrap();
        let r = Retriever::new(Some(&ca), Duration::from_secs(5), 1 << 20).unwrap();
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

    #[test]
    fn redirects_resolve_absolute_and_same_origin_only() {
        assert_eq!(
            resolve("https://a.example/x", "/y?z=1").unwrap(),
            "https://a.example/y?z=1"
        );
        assert_eq!(
            resolve("https://a.example/x", "http://b.example/").unwrap(),
            "http://b.example/"
        );
        assert!(resolve("https://a.example/x", "y").is_err());
        assert!(resolve("https://a.example/x", "//evil/").is_err());
    }
}
