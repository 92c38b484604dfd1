//! Outbound arbiter links (`link.proto`, docs/WIRE.md "Arbiter link"): a node inside
//! another organisation's network cannot be called, so it connects out to every
//! coordinator replica it is given and keeps one stream open per replica, reconnecting
//! with backoff. Whichever replica leads then holds a link to it.
//!
//! On each stream the node answers the replica's challenge with a signed hello, then
//! answers requests by calling [`NodeCore::commit`] and [`NodeCore::reveal`], so the same
//! judge, signing key, commit-reveal checks and store serve links and the inbound
//! `ArbiterNode` service alike.

use std::sync::Arc;
use std::time::Duration;

use panel_proto::link::HelloError;
use panel_proto::pb::arbiter_link_client::ArbiterLinkClient;
use panel_proto::pb::{
    LinkError as WireError, LinkFromNode, LinkRequest, LinkResponse, LinkToNode, link_from_node,
    link_request, link_response, link_to_node,
};
use panel_transport::Peer;
use thiserror::Error;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tracing::{Instrument, info, info_span, warn};

use crate::core::NodeCore;

/// First retry delay after a failed or closed link; doubled up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Requests answered at once on one link (the judge bounds the real work).
const CONCURRENCY: usize = 64;

/// Why a link could not be opened or ended.
#[derive(Debug, Error)]
pub enum LinkError {
    #[error(
        "coordinator address {addr:?} is invalid ({reason}); give host:port or http://host:port, \
         e.g. 127.0.0.1:7001"
    )]
    Address { addr: String, reason: String },
    #[error("cannot reach coordinator {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// The server's certificate chains to a federation authority but is no replica's
    /// (docs/SECURITY.md "What is enforced"): a relay, or another member's host, at that address.
    #[error("refusing coordinator {addr}: {source}")]
    Pinned {
        addr: String,
        #[source]
        source: Box<panel_transport::PinError>,
    },
    #[error("coordinator {addr} refused the link ({code:?}): {message}")]
    Refused {
        addr: String,
        code: tonic::Code,
        message: String,
    },
    #[error("coordinator {addr} broke the link protocol: {reason}")]
    Protocol { addr: String, reason: String },
    #[error("cannot answer the challenge of coordinator {addr}: {source}")]
    Hello {
        addr: String,
        #[source]
        source: HelloError,
    },
    #[error("coordinator {addr} closed the link")]
    Closed { addr: String },
}

/// The URL of a coordinator address given as `host:port` or `http(s)://host:port`.
pub fn coordinator_url(addr: &str) -> Result<String, LinkError> {
    let addr = addr.trim();
    let url = if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_owned()
    } else {
        format!("http://{addr}")
    };
    let bad = |reason: String| LinkError::Address {
        addr: addr.to_owned(),
        reason,
    };
    let uri: tonic::codegen::http::Uri = url.parse().map_err(|e| bad(format!("{e}")))?;
    if uri.port_u16().is_none() {
        return Err(bad("no port".into()));
    }
    Ok(url)
}

/// Starts one link per coordinator address; each task runs until aborted.
pub fn spawn(
    core: Arc<NodeCore>,
    arbiter_id: &str,
    coordinators: &[String],
    max_message_bytes: usize,
) -> Result<Vec<JoinHandle<()>>, LinkError> {
    let urls = coordinators
        .iter()
        .map(|a| coordinator_url(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(urls
        .into_iter()
        .map(|url| {
            let span = info_span!("link", arbiter = %arbiter_id, coordinator = %url);
            tokio::spawn(
                keep_linked(core.clone(), arbiter_id.to_owned(), url, max_message_bytes)
                    .instrument(span),
            )
        })
        .collect())
}

/// Keeps one link open, reconnecting with exponential backoff (reset once a link is
/// accepted).
async fn keep_linked(core: Arc<NodeCore>, arbiter_id: String, url: String, limit: usize) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match session(&core, &arbiter_id, &url, limit, &mut backoff).await {
            Ok(()) => info!("coordinator closed the link; reconnecting"),
            Err(e) => warn!("{e}; retrying in {} ms", backoff.as_millis()),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn refused(addr: &str, s: tonic::Status) -> LinkError {
    LinkError::Refused {
        addr: addr.to_owned(),
        code: s.code(),
        message: s.message().to_owned(),
    }
}

fn protocol(addr: &str, reason: &str) -> LinkError {
    LinkError::Protocol {
        addr: addr.to_owned(),
        reason: reason.to_owned(),
    }
}

/// One stream: handshake, then requests until the stream ends.
async fn session(
    core: &Arc<NodeCore>,
    arbiter_id: &str,
    addr: &str,
    limit: usize,
    backoff: &mut Duration,
) -> Result<(), LinkError> {
    // Only a charter replica may hold this node's link: whoever holds it is sent the node's
    // hello and its commitments, and could drop them.
    let channel = core
        .peers
        .transport()
        .endpoint_pinned(addr, Peer::Replicas)
        .map_err(|e| LinkError::Address {
            addr: addr.to_owned(),
            reason: e.to_string(),
        })?
        .connect_timeout(Duration::from_secs(5))
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_while_idle(true)
        .connect()
        .await
        .map_err(|e| match panel_transport::pin_error(&e) {
            Some(pin) => LinkError::Pinned {
                addr: addr.to_owned(),
                source: Box::new(pin.clone()),
            },
            None => LinkError::Connect {
                addr: addr.to_owned(),
                reason: panel_transport::connect_failure(&e),
            },
        })?;
    let mut client = ArbiterLinkClient::new(channel)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let (tx, rx) = mpsc::channel::<LinkFromNode>(CONCURRENCY);
    let mut inbound = client
        .open(ReceiverStream::new(rx))
        .await
        .map_err(|s| refused(addr, s))?
        .into_inner();
    let challenge = match inbound.message().await.map_err(|s| refused(addr, s))? {
        Some(LinkToNode {
            body: Some(link_to_node::Body::Challenge(c)),
        }) => c,
        Some(_) => return Err(protocol(addr, "the first message is not a challenge")),
        None => return Err(LinkError::Closed { addr: addr.into() }),
    };
    let hello = core
        .arbiter
        .sign_link_hello(&challenge, arbiter_id)
        .map_err(|source| LinkError::Hello {
            addr: addr.to_owned(),
            source,
        })?;
    tx.send(LinkFromNode {
        body: Some(link_from_node::Body::Hello(hello)),
    })
    .await
    .map_err(|_| LinkError::Closed { addr: addr.into() })?;
    match inbound.message().await.map_err(|s| refused(addr, s))? {
        Some(LinkToNode {
            body: Some(link_to_node::Body::Accepted(a)),
        }) if a.arbiter_id == arbiter_id => {
            info!(replica = a.replica_id, "link accepted");
        }
        Some(_) => return Err(protocol(addr, "the hello was answered without acceptance")),
        None => return Err(LinkError::Closed { addr: addr.into() }),
    }
    *backoff = MIN_BACKOFF;
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    loop {
        let msg = inbound.message().await.map_err(|s| refused(addr, s))?;
        let request = match msg {
            None => return Ok(()),
            Some(LinkToNode {
                body: Some(link_to_node::Body::Request(r)),
            }) => r,
            Some(_) => {
                warn!("unexpected message on an open link; ignored");
                continue;
            }
        };
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return Ok(());
        };
        let core = core.clone();
        let tx = tx.clone();
        tokio::spawn(
            async move {
                let response = answer(&core, request).await;
                // A closed stream drops the answer; the coordinator asks again after
                // reconnecting, and Commit is idempotent per motion.
                let _ = tx
                    .send(LinkFromNode {
                        body: Some(link_from_node::Body::Response(response)),
                    })
                    .await;
                drop(permit);
            }
            .in_current_span(),
        );
    }
}

fn error_body(e: &crate::core::CoreError) -> link_response::Body {
    link_response::Body::Error(WireError {
        message: e.to_string(),
        code: crate::service::status_code(e) as i32,
    })
}

/// Answers one request through the node core (the same path as the inbound service).
async fn answer(core: &NodeCore, r: LinkRequest) -> LinkResponse {
    let body = match r.body {
        Some(link_request::Body::Commit(m)) => {
            let span = info_span!("motion", debate = %m.debate_id, motion = %m.motion_id);
            match core.commit(m).instrument(span).await {
                Ok(c) => link_response::Body::Commitment(c),
                Err(e) => error_body(&e),
            }
        }
        Some(link_request::Body::Reveal(q)) => {
            let span = info_span!("motion", motion = %q.motion_id);
            match core
                .reveal(q.motion_id, &q.motion_digest)
                .instrument(span)
                .await
            {
                Ok(rv) => link_response::Body::Reveal(rv),
                Err(e) => error_body(&e),
            }
        }
        None => link_response::Body::Error(WireError {
            message: "request has no body; expected commit or reveal".into(),
            code: tonic::Code::InvalidArgument as i32,
        }),
    };
    LinkResponse {
        request_id: r.request_id,
        body: Some(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_addresses_become_urls_or_are_named() {
        assert_eq!(
            coordinator_url("127.0.0.1:7001").unwrap(),
            "http://127.0.0.1:7001"
        );
        assert_eq!(
            coordinator_url(" http://c1.example:7001 ").unwrap(),
            "http://c1.example:7001"
        );
        let e = coordinator_url("127.0.0.1").unwrap_err().to_string();
        assert!(e.contains("no port") && e.contains("host:port"), "{e}");
        let e = coordinator_url("not an address").unwrap_err().to_string();
        assert!(e.contains("not an address"), "{e}");
    }

    #[tokio::test]
    async fn connecting_out_needs_the_arbiter_id_and_valid_addresses() {
        let cfg: crate::NodeConfig =
            toml::from_str("connect = [\"127.0.0.1:7001\"]\nlisten = \"127.0.0.1:0\"").unwrap();
        let e = crate::run(cfg.clone(), Default::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--arbiter-id") && e.contains("arbiter_id"),
            "{e}"
        );
        let over = crate::RunOverrides {
            connect: vec!["127.0.0.1".into()],
            arbiter_id: Some("org-a-1".into()),
            ..Default::default()
        };
        let e = crate::run(cfg, over).await.unwrap_err().to_string();
        assert!(e.contains("\"127.0.0.1\"") && e.contains("no port"), "{e}");
    }
}
