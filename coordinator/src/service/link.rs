//! Arbiter links (`link.proto`, docs/WIRE.md "Arbiter link"): nodes that cannot be called
//! (inside another organisation's network) connect out to every coordinator replica and
//! keep one stream open per replica. This module serves `ArbiterLink.Open` and keeps the
//! registry of open links of this replica; the leader's motion driver puts Commit and
//! Reveal requests through it for arbiters registered with the [`LINK_ENDPOINT`] marker.
//!
//! Handshake: the replica speaks first with a fresh 32-byte nonce and its replica id; the
//! node answers with a hello signed over both and its arbiter id
//! ([`panel_proto::link`]). The link is accepted only if the arbiter is registered in the
//! replicated state with exactly that key, registered as a link arbiter, and not revoked;
//! otherwise the stream ends with a status naming what is wrong and how to fix it. A link
//! is trusted with transport only: every commitment and reveal it carries is verified in
//! `apply` like those fetched over gRPC.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use panel_proto::link::{self as hello, LINK_VERSION, NONCE_LEN};
use panel_proto::pb::arbiter_link_server::{ArbiterLink, ArbiterLinkServer};
use panel_proto::pb::{
    Commitment, LinkAccepted, LinkChallenge, LinkFromNode, LinkHello, LinkRequest, LinkToNode,
    Motion, Reveal, RevealRequest, link_from_node, link_request, link_response, link_to_node,
};
use panel_transport::spiffe::{SpiffeId, TRUST_DOMAIN};
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, info, info_span, warn};

use crate::raft::{NodeId, StateMachineStore};
use panel_machine::State;

pub use panel_machine::command::{LINK_ENDPOINT, is_link_endpoint};

/// How long a node has to answer the challenge.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a reveal waits for its answer (a commit waits for its motion's window).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests queued towards one node before senders wait.
const QUEUE: usize = 64;

/// Why a request over a link got no answer.
#[derive(Debug, Error)]
pub enum LinkError {
    #[error(
        "arbiter {arbiter_id} has no open link to this replica; its node must run \
         `panel node run --arbiter-id {arbiter_id} --connect <every coordinator address>`"
    )]
    NotConnected { arbiter_id: String },
    #[error("the link to arbiter {arbiter_id} closed before it answered {what}")]
    Closed { arbiter_id: String, what: String },
    #[error("arbiter {arbiter_id} did not answer {what} over its link within {secs} s")]
    Timeout {
        arbiter_id: String,
        what: String,
        secs: u64,
    },
    #[error("arbiter {arbiter_id}'s node refused {what}: {message} ({code:?})")]
    Node {
        arbiter_id: String,
        what: String,
        code: tonic::Code,
        message: String,
    },
    #[error("arbiter {arbiter_id}'s node answered {what} with {got}; a {want} was expected")]
    WrongAnswer {
        arbiter_id: String,
        what: String,
        got: &'static str,
        want: &'static str,
    },
}

type Outbound = mpsc::Sender<Result<LinkToNode, Status>>;

/// One open, accepted link.
struct Link {
    /// Distinguishes a reconnected link from the one it replaced.
    conn: u64,
    tx: Outbound,
    next_request: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<link_response::Body>>>,
}

impl Link {
    fn answer(&self, request_id: u64, body: link_response::Body) {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request_id);
        match waiter {
            Some(w) => {
                let _ = w.send(body);
            }
            None => warn!(
                request_id,
                "answer to an unknown or expired request; ignored"
            ),
        }
    }
}

/// The links open to this replica, by arbiter id. Each replica holds its own; only the
/// leader's driver sends requests.
#[derive(Default)]
pub struct LinkRegistry {
    links: Mutex<HashMap<String, Arc<Link>>>,
    next_conn: AtomicU64,
}

impl LinkRegistry {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn is_connected(&self, arbiter_id: &str) -> bool {
        self.links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(arbiter_id)
    }

    /// The arbiter ids with an open link, sorted.
    pub fn connected(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        ids.sort();
        ids
    }

    /// `ArbiterNode.Commit` over the arbiter's link.
    /// `ArbiterNode.Commit` over the arbiter's link, waiting at most `wait` for the node
    /// (the driver waits until the motion's commit deadline, however long the window).
    pub async fn commit(
        &self,
        arbiter_id: &str,
        m: Motion,
        wait: Duration,
    ) -> Result<Commitment, LinkError> {
        let what = format!("commit on motion {}", m.motion_id);
        match self
            .request(arbiter_id, link_request::Body::Commit(m), &what, wait)
            .await?
        {
            link_response::Body::Commitment(c) => Ok(c),
            other => Err(wrong(arbiter_id, &what, &other, "commitment")),
        }
    }

    /// `ArbiterNode.Reveal` over the arbiter's link; `motion_digest` names the signed motion
    /// meant (the node refuses if it committed on another under this id).
    pub async fn reveal(
        &self,
        arbiter_id: &str,
        motion_id: &str,
        motion_digest: &[u8],
    ) -> Result<Reveal, LinkError> {
        let what = format!("reveal on motion {motion_id}");
        let body = link_request::Body::Reveal(RevealRequest {
            motion_id: motion_id.to_owned(),
            motion_digest: motion_digest.to_vec(),
        });
        match self
            .request(arbiter_id, body, &what, REQUEST_TIMEOUT)
            .await?
        {
            link_response::Body::Reveal(r) => Ok(r),
            other => Err(wrong(arbiter_id, &what, &other, "reveal")),
        }
    }

    async fn request(
        &self,
        arbiter_id: &str,
        body: link_request::Body,
        what: &str,
        wait: Duration,
    ) -> Result<link_response::Body, LinkError> {
        let link = self
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(arbiter_id)
            .cloned()
            .ok_or_else(|| LinkError::NotConnected {
                arbiter_id: arbiter_id.to_owned(),
            })?;
        let request_id = link.next_request.fetch_add(1, Ordering::Relaxed);
        let (done, answer) = oneshot::channel();
        link.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(request_id, done);
        let closed = || LinkError::Closed {
            arbiter_id: arbiter_id.to_owned(),
            what: what.to_owned(),
        };
        let msg = LinkToNode {
            body: Some(link_to_node::Body::Request(LinkRequest {
                request_id,
                body: Some(body),
            })),
        };
        if link.tx.send(Ok(msg)).await.is_err() {
            link.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&request_id);
            return Err(closed());
        }
        let got = tokio::time::timeout(wait, answer).await;
        link.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request_id);
        match got {
            Err(_) => Err(LinkError::Timeout {
                arbiter_id: arbiter_id.to_owned(),
                what: what.to_owned(),
                secs: wait.as_secs(),
            }),
            Ok(Err(_)) => Err(closed()),
            Ok(Ok(link_response::Body::Error(e))) => Err(LinkError::Node {
                arbiter_id: arbiter_id.to_owned(),
                what: what.to_owned(),
                code: tonic::Code::from(e.code),
                message: e.message,
            }),
            Ok(Ok(body)) => Ok(body),
        }
    }

    /// Registers an accepted link; a newer link of the same arbiter replaces an older one
    /// (a node that reconnected before this replica noticed the old stream had died).
    fn attach(&self, arbiter_id: &str, tx: Outbound) -> Arc<Link> {
        let link = Arc::new(Link {
            conn: self.next_conn.fetch_add(1, Ordering::Relaxed),
            tx,
            next_request: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
        });
        self.links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(arbiter_id.to_owned(), link.clone());
        link
    }

    /// Removes the link if it is still the registered one. Dropping it fails its pending
    /// requests with [`LinkError::Closed`].
    fn detach(&self, arbiter_id: &str, conn: u64) {
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        if links.get(arbiter_id).is_some_and(|l| l.conn == conn) {
            links.remove(arbiter_id);
        }
    }
}

fn wrong(arbiter_id: &str, what: &str, got: &link_response::Body, want: &'static str) -> LinkError {
    LinkError::WrongAnswer {
        arbiter_id: arbiter_id.to_owned(),
        what: what.to_owned(),
        got: match got {
            link_response::Body::Commitment(_) => "a commitment",
            link_response::Body::Reveal(_) => "a reveal",
            link_response::Body::Error(_) => "an error",
        },
        want,
    }
}

/// Decides whether a hello opens a link: the arbiter is registered with exactly this key,
/// as a link arbiter, not revoked, and the signature verifies (strict) over this stream's
/// challenge. The refusal names what is wrong and how to fix it.
pub fn check_hello(
    state: &State,
    replica_id: NodeId,
    nonce: &[u8],
    h: &LinkHello,
) -> Result<(), Status> {
    let id = &h.arbiter_id;
    if id.is_empty() {
        return Err(Status::invalid_argument(
            "hello has an empty arbiter_id; run the node with --arbiter-id <the id it was registered under>",
        ));
    }
    let Some(arb) = state.arbiters.get(id) else {
        return Err(Status::not_found(format!(
            "arbiter {id:?} is not registered: run `panel arbiter register --id {id} --key-file <the node's key> \
             --endpoint {LINK_ENDPOINT} ...` first, then the node's link is accepted"
        )));
    };
    if arb.revoked.is_some() {
        return Err(Status::permission_denied(format!(
            "arbiter {id:?} is revoked (its key was revoked by a signed revocation); a revoked \
             arbiter cannot link: generate a fresh key and register it under a new id"
        )));
    }
    if !is_link_endpoint(&arb.registration.endpoint) {
        return Err(Status::failed_precondition(format!(
            "arbiter {id:?} is registered with endpoint {:?}, so the coordinator calls its node \
             there; a node that connects out must be registered with --endpoint {LINK_ENDPOINT}",
            arb.registration.endpoint
        )));
    }
    let registered = arb
        .registration
        .public_key
        .bytes()
        .ok()
        .and_then(|b| panel_proto::parse_public_key(&b).ok())
        .ok_or_else(|| {
            Status::failed_precondition(format!(
                "arbiter {id:?} has no usable registered key; register the arbiter again with its key file"
            ))
        })?;
    if h.public_key.as_slice() != registered.as_bytes() {
        return Err(Status::permission_denied(format!(
            "the hello's key {} is not the key registered for arbiter {id:?} ({}): run the node \
             with the registered key file, or register the new key first",
            panel_proto::keys::fingerprint_bytes(&h.public_key),
            panel_proto::fingerprint(&registered)
        )));
    }
    hello::verify_hello(h, nonce, replica_id, &registered)
        .map_err(|e| Status::unauthenticated(e.to_string()))
}

/// Whether the link's certificate may speak for the hello's arbiter (docs/SECURITY.md
/// "Identity bound to role"): in a chartered group a link is opened only by the node
/// identity whose SPIFFE id names that arbiter in its registered organisation.
pub fn check_identity(
    state: &State,
    arbiter_id: &str,
    identity: Option<&SpiffeId>,
) -> Result<(), Status> {
    if state.charter.is_none() {
        return Ok(());
    }
    let Some(arb) = state.arbiters.get(arbiter_id) else {
        return Err(Status::not_found(format!(
            "arbiter {arbiter_id:?} is not registered"
        )));
    };
    let org = &arb.registration.organisation;
    if identity.is_some_and(|i| i.is_node_of(arbiter_id, org)) {
        return Ok(());
    }
    let shown = identity.map_or_else(
        || "no federation SPIFFE id".to_owned(),
        |i| {
            format!(
                "spiffe://{}/{}/{}/{}",
                TRUST_DOMAIN, i.organisation, i.kind, i.name
            )
        },
    );
    Err(Status::permission_denied(format!(
        "this link's certificate names {shown}, not arbiter {arbiter_id:?}'s node: a node may \
         open a link only for the arbiter its certificate names \
         (spiffe://{TRUST_DOMAIN}/{org}/node/node-{arbiter_id}); run the node with the identity \
         `panel pki` issued for it (`--node {arbiter_id}`)"
    )))
}

/// The `ArbiterLink` service of one replica.
pub struct LinkService {
    replica_id: NodeId,
    sm: StateMachineStore,
    links: Arc<LinkRegistry>,
}

/// The service, ready for `Server::add_service`.
pub fn server(
    replica_id: NodeId,
    sm: StateMachineStore,
    links: Arc<LinkRegistry>,
) -> ArbiterLinkServer<LinkService> {
    ArbiterLinkServer::new(LinkService {
        replica_id,
        sm,
        links,
    })
}

#[tonic::async_trait]
impl ArbiterLink for LinkService {
    type OpenStream = ReceiverStream<Result<LinkToNode, Status>>;

    async fn open(
        &self,
        request: Request<Streaming<LinkFromNode>>,
    ) -> Result<Response<Self::OpenStream>, Status> {
        let peer = panel_transport::remote_addr(&request)
            .map_or_else(|| "unknown".to_owned(), |a| a.to_string());
        let identity = panel_transport::peer_leaf(&request)
            .as_deref()
            .and_then(panel_transport::spiffe::of_leaf);
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|e| Status::internal(format!("no randomness for the link challenge: {e}")))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let challenge = LinkToNode {
            body: Some(link_to_node::Body::Challenge(LinkChallenge {
                nonce: nonce.to_vec(),
                replica_id: self.replica_id,
                version: LINK_VERSION,
            })),
        };
        tx.try_send(Ok(challenge))
            .map_err(|_| Status::internal("link queue full before the challenge"))?;
        let session = Session {
            replica_id: self.replica_id,
            sm: self.sm.clone(),
            links: self.links.clone(),
            nonce,
            identity,
            tx,
        };
        let span = info_span!("link", replica = self.replica_id, peer = %peer);
        tokio::spawn(session.run(request.into_inner()).instrument(span));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// One stream, from challenge to close.
struct Session {
    replica_id: NodeId,
    sm: StateMachineStore,
    links: Arc<LinkRegistry>,
    nonce: [u8; NONCE_LEN],
    /// The SPIFFE id of the certificate the node connected with.
    identity: Option<SpiffeId>,
    tx: Outbound,
}

impl Session {
    async fn refuse(&self, status: Status) {
        warn!("link refused: {}", status.message());
        let _ = self.tx.send(Err(status)).await;
    }

    async fn run(self, mut inbound: Streaming<LinkFromNode>) {
        let first = tokio::time::timeout(HANDSHAKE_TIMEOUT, inbound.message()).await;
        let h = match first {
            Err(_) => {
                return self
                    .refuse(Status::deadline_exceeded(format!(
                        "no hello within {} s of the challenge; the node must answer the challenge at once",
                        HANDSHAKE_TIMEOUT.as_secs()
                    )))
                    .await;
            }
            Ok(Ok(Some(LinkFromNode {
                body: Some(link_from_node::Body::Hello(h)),
            }))) => h,
            Ok(Ok(Some(_))) => {
                return self
                    .refuse(Status::invalid_argument(
                        "the first message on a link must be a hello answering the challenge",
                    ))
                    .await;
            }
            Ok(Ok(None)) | Ok(Err(_)) => return,
        };
        let checked = self.sm.read(|a| {
            check_hello(&a.state, self.replica_id, &self.nonce, &h)
                .and_then(|()| check_identity(&a.state, &h.arbiter_id, self.identity.as_ref()))
        });
        let id = h.arbiter_id.clone();
        let span = info_span!("arbiter", arbiter = %id);
        async {
            if let Err(status) = checked {
                return self.refuse(status).await;
            }
            let link = self.links.attach(&id, self.tx.clone());
            let accepted = LinkToNode {
                body: Some(link_to_node::Body::Accepted(LinkAccepted {
                    arbiter_id: id.clone(),
                    replica_id: self.replica_id,
                })),
            };
            if self.tx.send(Ok(accepted)).await.is_ok() {
                info!("arbiter link open");
                loop {
                    match inbound.message().await {
                        Ok(Some(LinkFromNode {
                            body: Some(link_from_node::Body::Response(r)),
                        })) => match r.body {
                            Some(body) => link.answer(r.request_id, body),
                            None => warn!(request_id = r.request_id, "empty response; ignored"),
                        },
                        Ok(Some(_)) => warn!("unexpected message after the handshake; ignored"),
                        Ok(None) => break,
                        Err(e) => {
                            info!("link stream error: {}", e.message());
                            break;
                        }
                    }
                }
            }
            self.links.detach(&id, link.conn);
            // Requests still waiting fail now rather than at their timeout.
            link.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            info!("arbiter link closed");
        }
        .instrument(span)
        .await
    }
}
