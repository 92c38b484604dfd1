//! Retrieval for tier verification (SPEC section 5: verification means retrieval). The
//! node fetches the cited source itself and binds a receipt, the SHA-256 of the bytes it
//! got, into its ruling; a source it cannot fetch cannot be verified by it, whatever its
//! judge thinks of the citation string.

use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use panel_proto::pb::{Decision, Motion, MotionKind, RetrievalReceipt};
use sha2::{Digest, Sha256};

use crate::judge::JudgeAnswer;

/// Largest source fetched (bytes).
pub const MAX_SOURCE_BYTES: usize = 8 * 1024 * 1024;

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

/// Fetches `url` over plain HTTP/1.1 (`http://` only).
pub async fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "{url:?}: only http:// sources can be retrieved by this node"
        ));
    }
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let resp = tokio::time::timeout(Duration::from_secs(10), client.get(uri))
        .await
        .map_err(|_| format!("{url}: no answer within 10 s"))?
        .map_err(|e| format!("{url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("{url}: HTTP {}", resp.status()));
    }
    let body = Limited::new(resp.into_body(), MAX_SOURCE_BYTES)
        .collect()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    Ok(body.to_bytes().to_vec())
}

/// For a tier-verification motion, retrieves the source and binds a receipt into the
/// answer; if retrieval fails the answer becomes a rejection with the reason.
pub async fn bind_receipt(m: &Motion, mut answer: JudgeAnswer, now_ms: i64) -> JudgeAnswer {
    if m.kind != MotionKind::VerifyTier as i32 {
        return answer;
    }
    let Some(url) = source_url(m) else {
        answer.decision = Decision::Reject;
        answer.probability = answer.probability.min(0.05);
        answer.receipt = None;
        answer.rationale = format!("No source address to retrieve. {}", answer.rationale);
        return answer;
    };
    match fetch(&url).await {
        Ok(bytes) => {
            answer.receipt = Some(RetrievalReceipt {
                url,
                sha256: Sha256::digest(&bytes).to_vec(),
                fetched_at_unix_ms: now_ms,
            });
            answer
        }
        Err(e) => {
            answer.decision = Decision::Reject;
            answer.probability = answer.probability.min(0.05);
            answer.receipt = None;
            answer.rationale =
                format!("The source could not be retrieved ({e}), so its tier cannot be verified.");
            answer
        }
    }
}
