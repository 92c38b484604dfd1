//! The node's gRPC services: `ArbiterNode` (coordinator and peers) and `ArbiterAdmin`
//! (the local operator of a human-backed node, loopback only).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{Stream, StreamExt};
use panel_proto::commit_reveal::{self, CommitRevealError};
use panel_proto::pb::arbiter_admin_server::ArbiterAdmin;
use panel_proto::pb::arbiter_node_server::ArbiterNode;
use panel_proto::pb::{
    ArbiterIdentity, CommitResult, Commitment, DeliverAck, HumanAnswer, IdentityRequest,
    ListRulingsRequest, ListRulingsResponse, Motion, PendingRequest, PendingResponse, RecordSource,
    Reveal, RevealRequest, RevealResult, RulingRecord,
};
use panel_proto::ruling_check::{self, known_decision};
use panel_proto::signing::VerifyError;
use panel_proto::{VerifyingKey, fingerprint, motion_digest, verify_motion, verify_ruling};
use tokio::sync::Notify;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, info, info_span, warn};

use crate::arbiter::{Arbiter, ArbiterError};
use crate::exchange::PeerBook;
use crate::judge::JudgeAnswer;
use crate::judge::answer_json::check_against_motion;
use crate::keyfile::random_32;
use crate::metrics::MotionRefusal;
use crate::store::{PeerInsert, Store, StoreError};
use panel_transport::{Role, RoleGuard};

/// Current wall-clock time in Unix milliseconds (the node's only clock read).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Motions handled concurrently inside one batch RPC.
const BATCH_CONCURRENCY: usize = 64;

/// Shared state of the services.
pub struct NodeCore {
    pub arbiter: Arc<Arbiter>,
    pub store: Arc<Store>,
    pub peers: PeerBook,
    /// Only the charter's replicas may ask this node to commit or reveal (under TLS).
    coordinators: RoleGuard,
    /// The coordinator motion keys this node trusts (`coordinator_keys`); a motion signed
    /// by none of them is refused before judging (docs/WIRE.md "Motion, layout v1").
    coordinator_keys: Vec<VerifyingKey>,
    /// Coordinator replicas (`host:port`) this node writes its own reveals to
    /// (`coordinators`, else `connect`); empty: only the driver submits them.
    reveal_to: Vec<String>,
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    /// Woken at shutdown so Commit calls waiting for a human return at once.
    shutdown: Notify,
    /// Counters and the judge latency of the metrics endpoint (`metrics.rs`).
    pub metrics: Arc<crate::metrics::NodeMetrics>,
}

fn store_status(e: StoreError) -> Status {
    Status::internal(e.to_string())
}

fn arbiter_status(e: ArbiterError) -> Status {
    match e {
        ArbiterError::BadMotion(_) | ArbiterError::Ruling(_) => {
            Status::invalid_argument(e.to_string())
        }
        ArbiterError::NotOnPanel(_) => Status::permission_denied(e.to_string()),
        ArbiterError::CommitWindowClosed { .. } => Status::failed_precondition(e.to_string()),
        ArbiterError::Judge(_) => Status::unavailable(e.to_string()),
        ArbiterError::TooSlow { .. } => Status::deadline_exceeded(e.to_string()),
        ArbiterError::Commit(_) => Status::internal(e.to_string()),
    }
}

fn verify_status(e: VerifyError) -> Status {
    match e {
        VerifyError::BadSignature { .. } | VerifyError::WrongArbiter { .. } => {
            Status::unauthenticated(e.to_string())
        }
        _ => Status::invalid_argument(e.to_string()),
    }
}

fn cr_status(e: CommitRevealError) -> Status {
    match e {
        CommitRevealError::BadCommitmentSignature(_) => Status::unauthenticated(e.to_string()),
        CommitRevealError::Verify(v) => verify_status(v),
        CommitRevealError::RevealMismatch { .. } => Status::invalid_argument(e.to_string()),
        _ => Status::invalid_argument(e.to_string()),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("storage task failed: {e}")))?
        .map_err(store_status)
}

/// An own record as it may be shown: before the reveal only the commitment.
fn redact(mut r: RulingRecord) -> RulingRecord {
    if r.source == RecordSource::Own as i32 && !r.revealed {
        r.signed_ruling = None;
        r.salt.clear();
    }
    r
}

impl NodeCore {
    pub fn new(arbiter: Arc<Arbiter>, store: Arc<Store>, peers: PeerBook) -> Self {
        Self {
            coordinators: RoleGuard::new(
                peers.transport.charter(),
                Role::Replica,
                "ArbiterNode commit/reveal",
            ),
            arbiter,
            store,
            peers,
            coordinator_keys: Vec::new(),
            reveal_to: Vec::new(),
            waiters: Mutex::new(HashMap::new()),
            shutdown: Notify::new(),
            metrics: Arc::default(),
        }
    }

    /// The coordinator motion keys to trust; without any, every motion is refused.
    pub fn with_coordinator_keys(mut self, keys: Vec<VerifyingKey>) -> Self {
        self.coordinator_keys = keys;
        self
    }

    /// The coordinator replicas to submit this node's own reveals to (`SubmitReveal`).
    pub fn with_coordinators(mut self, addrs: Vec<String>) -> Self {
        self.reveal_to = addrs;
        self
    }

    /// Verifies the coordinator's signature on a motion and returns its digest. Runs before
    /// anything else looks at the motion (the stored record, the judge), so an unsigned or
    /// forged motion learns nothing: not even whether this node committed on its id.
    fn verify_motion(&self, m: &Motion) -> Result<[u8; 32], Status> {
        if self.coordinator_keys.is_empty() {
            self.metrics.motion_refused(MotionRefusal::NoTrustedKey);
            return Err(Status::unauthenticated(format!(
                "motion {:?} refused: this node trusts no coordinator motion key; add \
                 coordinator_keys = [\"<hex public key>\"] to node.toml (the key `panel \
                 coordinator run --motion-key` signs with) and restart the node",
                m.motion_id
            )));
        }
        verify_motion(m, &self.coordinator_keys).map_err(|e| {
            self.metrics.motion_refused(MotionRefusal::Signature);
            Status::unauthenticated(e.to_string())
        })
    }

    /// Releases Commit calls that wait for a human answer (graceful shutdown).
    pub fn begin_shutdown(&self) {
        self.shutdown.notify_waiters();
    }

    fn fp(&self) -> &str {
        &self.arbiter.identity().fingerprint
    }

    fn waiter(&self, motion_id: &str) -> Arc<Notify> {
        let mut w = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        w.entry(motion_id.to_owned()).or_default().clone()
    }

    fn wake(&self, motion_id: &str) {
        let n = self
            .waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(motion_id);
        if let Some(n) = n {
            n.notify_waiters();
        }
    }

    /// An existing own commitment for the motion, if the motion is the same one (the same
    /// motion digest: every field, signature included); a different motion under the same id
    /// is a second commitment and refused. The refusal carries no ruling and no commitment.
    fn existing(rec: &RulingRecord, m: &Motion) -> Result<Commitment, Status> {
        let same = rec
            .motion
            .as_ref()
            .is_some_and(|s| motion_digest(s) == motion_digest(m));
        if !same {
            return Err(Status::already_exists(format!(
                "second commitment refused: this arbiter already committed on another motion \
                 under the id {:?} (its content, deadlines, seats or state differ); a motion \
                 id names one signed motion",
                m.motion_id
            )));
        }
        rec.commitment
            .clone()
            .ok_or_else(|| Status::internal("stored record has no commitment"))
    }

    /// The Commit step: idempotent per motion.
    pub async fn commit(&self, m: Motion) -> Result<Commitment, Status> {
        self.verify_motion(&m)?;
        let store = self.store.clone();
        let id = m.motion_id.clone();
        if let Some(rec) = blocking(move || store.own(&id)).await? {
            return Self::existing(&rec, &m);
        }
        self.arbiter.check_motion(&m, now_ms()).map_err(|e| {
            self.metrics.motion_refused(MotionRefusal::Check);
            arbiter_status(e)
        })?;
        if self.arbiter.is_human() {
            return self.wait_for_human(m).await;
        }
        let started = std::time::Instant::now();
        let answer = self.arbiter.decide(&m).await;
        self.metrics.judged(
            &self.arbiter.identity().judge_kind,
            started.elapsed(),
            answer.is_ok(),
        );
        let answer = answer.map_err(|e| {
            self.metrics.motion_refused(MotionRefusal::Judge);
            arbiter_status(e)
        })?;
        self.seal_and_store(&m, &answer).await
    }

    async fn seal_and_store(&self, m: &Motion, answer: &JudgeAnswer) -> Result<Commitment, Status> {
        let now = now_ms();
        if now > m.commit_deadline_unix_ms {
            return Err(Status::failed_precondition(format!(
                "the judge answered at {now} ms, after the commit deadline {} ms of motion {:?}; no commitment made",
                m.commit_deadline_unix_ms, m.motion_id
            )));
        }
        let salt = random_32().map_err(|e| Status::internal(e.to_string()))?;
        let sealed = self
            .arbiter
            .seal(m, answer, now, salt)
            .map_err(arbiter_status)?;
        let record = RulingRecord {
            source: RecordSource::Own as i32,
            motion: Some(m.clone()),
            signed_ruling: Some(sealed.signed.clone()),
            commitment: Some(sealed.commitment.clone()),
            salt: sealed.salt.to_vec(),
            revealed: false,
            stored_at_unix_ms: now,
        };
        let store = self.store.clone();
        let id = m.motion_id.clone();
        let (stored, inserted) = blocking(move || store.insert_own_if_absent(&record, &id)).await?;
        if inserted {
            self.metrics.committed();
            info!(
                decision = answer.decision as i32,
                probability = answer.probability,
                "committed"
            );
        }
        self.wake(&m.motion_id);
        Self::existing(&stored, m)
    }

    async fn wait_for_human(&self, m: Motion) -> Result<Commitment, Status> {
        let notify = self.waiter(&m.motion_id);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let store = self.store.clone();
        let pm = m.clone();
        blocking(move || store.put_pending(&pm)).await?;
        let wait_ms = (m.commit_deadline_unix_ms - now_ms()).max(0) as u64;
        let shutdown = self.shutdown.notified();
        let answered = tokio::select! {
            r = tokio::time::timeout(Duration::from_millis(wait_ms), notified) => r.is_ok(),
            _ = shutdown => {
                return Err(Status::unavailable(format!(
                    "node is shutting down; motion {:?} stays in the durable pending queue and \
                     can be answered after the restart",
                    m.motion_id
                )));
            }
        };
        let store = self.store.clone();
        let id = m.motion_id.clone();
        match blocking(move || store.own(&id)).await? {
            Some(rec) => Self::existing(&rec, &m),
            None => Err(Status::deadline_exceeded(format!(
                "no human answer to motion {:?} before its commit deadline{}; it stays in the \
                 pending queue (`panel node pending`, `panel node rule`)",
                m.motion_id,
                if answered {
                    " (woken without a record)"
                } else {
                    ""
                }
            ))),
        }
    }

    /// The Reveal step: only after the commit window; delivers to peers once. A caller that
    /// names the digest of the signed motion it means (`expected_digest`, non-empty) gets a
    /// refusal if the motion this node committed on under that id is another one.
    pub async fn reveal(
        &self,
        motion_id: String,
        expected_digest: &[u8],
    ) -> Result<Reveal, Status> {
        let store = self.store.clone();
        let id = motion_id.clone();
        let rec = blocking(move || store.own(&id)).await?.ok_or_else(|| {
            Status::not_found(format!(
                "reveal without commitment: this arbiter made no commitment on motion {motion_id:?}"
            ))
        })?;
        let m = rec.motion.clone().unwrap_or_default();
        if !expected_digest.is_empty() && motion_digest(&m).as_slice() != expected_digest {
            return Err(Status::failed_precondition(format!(
                "reveal refused: this arbiter committed on another motion under the id \
                 {motion_id:?} (digest {}, asked for {}); its ruling answers that motion only",
                hex::encode(motion_digest(&m)),
                hex::encode(expected_digest)
            )));
        }
        let now = now_ms();
        if now <= m.commit_deadline_unix_ms {
            return Err(Status::failed_precondition(format!(
                "reveal before the commit window closes: motion {motion_id:?} accepts commitments \
                 until {} ms (now {now} ms); reveal after that",
                m.commit_deadline_unix_ms
            )));
        }
        if now > m.reveal_deadline_unix_ms {
            return Err(Status::failed_precondition(format!(
                "reveal window of motion {motion_id:?} closed at {} ms",
                m.reveal_deadline_unix_ms
            )));
        }
        let was_revealed = rec.revealed;
        let store = self.store.clone();
        let id = motion_id.clone();
        let rec = blocking(move || store.mark_revealed(&id)).await?;
        let reveal = Reveal {
            signed_ruling: rec.signed_ruling.clone(),
            salt: rec.salt.clone(),
            commitment: rec.commitment.clone(),
        };
        if !was_revealed {
            self.metrics.revealed();
            info!("revealed");
            self.peers
                .spawn_delivery(&m, self.arbiter.verifying_key().to_bytes(), reveal.clone());
            // The node's own copy of the reveal, so no driver decides whether it counts
            // (docs/COORDINATOR.md "The commit-reveal round"). Exam answers are scored
            // from the exam driver's `SubmitExam`, not from logged rounds.
            let key = self.arbiter.verifying_key().to_bytes();
            let exam = m.kind == panel_proto::pb::MotionKind::Exam as i32;
            let to = if exam {
                Vec::new()
            } else {
                self.reveal_to.clone()
            };
            crate::submit::spawn_submit(
                self.peers.transport.clone(),
                to,
                crate::submit::submit_request(
                    &format!("node-{}", hex::encode(&key[..8])),
                    &motion_id,
                    &reveal,
                ),
            );
        }
        Ok(reveal)
    }

    /// A peer's revealed ruling: verify everything, then store for audit.
    pub async fn deliver(&self, d: Reveal) -> Result<DeliverAck, Status> {
        let sr = d
            .signed_ruling
            .as_ref()
            .ok_or_else(|| Status::invalid_argument("delivery has no signed_ruling"))?;
        let ruling = verify_ruling(sr).map_err(|e| {
            self.metrics.signature_failed("delivered_ruling");
            verify_status(e)
        })?;
        let own_key = self.arbiter.verifying_key().to_bytes();
        if ruling.arbiter_key.as_slice() == own_key.as_slice() {
            return Err(Status::invalid_argument(
                "delivered ruling is this node's own; peers deliver only their own rulings",
            ));
        }
        let span = info_span!("deliver_in", debate = %ruling.debate_id, motion = %ruling.motion_id,
            arbiter = %panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key));
        async {
            let store = self.store.clone();
            let id = ruling.motion_id.clone();
            let motion = blocking(move || {
                Ok(match store.own(&id)? {
                    Some(r) => r.motion,
                    None => store.pending_get(&id)?,
                })
            })
            .await?
            .ok_or_else(|| {
                Status::failed_precondition(format!(
                    "unknown motion {:?}: this node's arbiter did not sit on it, so it keeps no \
                     rulings for it",
                    ruling.motion_id
                ))
            })?;
            ruling_check::check_binding(ruling, &motion)
                .map_err(|e| Status::invalid_argument(format!("replayed ruling refused: {e}")))?;
            // The stored motion was verified as the coordinator's when this node committed,
            // so its digest says which content the peer must have judged (envelope v2).
            ruling_check::check_motion_digest(sr, &motion.motion_id, &motion_digest(&motion))
                .map_err(|e| Status::invalid_argument(format!("replayed ruling refused: {e}")))?;
            if !motion.panel.is_empty()
                && !motion
                    .panel
                    .iter()
                    .any(|s| s.public_key == ruling.arbiter_key)
            {
                return Err(Status::permission_denied(format!(
                    "arbiter {} is not on the panel of motion {:?}",
                    panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key),
                    motion.motion_id
                )));
            }
            let now = now_ms();
            if now <= motion.commit_deadline_unix_ms {
                return Err(Status::failed_precondition(format!(
                    "delivered before the commit window of motion {:?} closes at {} ms; rulings \
                     are exchanged only after the reveal",
                    motion.motion_id, motion.commit_deadline_unix_ms
                )));
            }
            let c = d.commitment.as_ref().ok_or_else(|| {
                Status::failed_precondition(
                    "reveal without commitment: the delivery carries no commitment to open",
                )
            })?;
            commit_reveal::verify_commitment(c).map_err(cr_status)?;
            if c.committed_at_unix_ms > motion.commit_deadline_unix_ms {
                return Err(Status::failed_precondition(format!(
                    "commitment made at {} ms, after the commit deadline {} ms",
                    c.committed_at_unix_ms, motion.commit_deadline_unix_ms
                )));
            }
            commit_reveal::check_opens(c, sr, &d.salt).map_err(cr_status)?;
            let record = RulingRecord {
                source: RecordSource::Peer as i32,
                motion: Some(motion),
                signed_ruling: Some(sr.clone()),
                commitment: Some(c.clone()),
                salt: d.salt.clone(),
                revealed: true,
                stored_at_unix_ms: now,
            };
            let store = self.store.clone();
            match blocking(move || store.insert_peer(&record)).await? {
                PeerInsert::Inserted => {
                    info!("stored peer ruling");
                    Ok(DeliverAck {
                        stored: true,
                        duplicate: false,
                    })
                }
                PeerInsert::Duplicate => Ok(DeliverAck {
                    stored: false,
                    duplicate: true,
                }),
                PeerInsert::Conflict(_) => {
                    warn!("equivocation: second, different ruling from the same arbiter");
                    Err(Status::already_exists(format!(
                        "second commitment refused: arbiter {} already delivered a different \
                         ruling on motion {:?} (equivocation; the first is kept)",
                        panel_proto::keys::fingerprint_bytes(&ruling.arbiter_key),
                        ruling.motion_id
                    )))
                }
            }
        }
        .instrument(span)
        .await
    }
}

/// `ArbiterNode` service.
#[derive(Clone)]
pub struct NodeService(pub Arc<NodeCore>);

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn motion_span(core: &NodeCore, debate: &str, motion: &str) -> tracing::Span {
    info_span!("motion", debate = %debate, motion = %motion, arbiter = %core.fp())
}

#[tonic::async_trait]
impl ArbiterNode for NodeService {
    async fn identity(
        &self,
        _: Request<IdentityRequest>,
    ) -> Result<Response<ArbiterIdentity>, Status> {
        Ok(Response::new(self.0.arbiter.identity().clone()))
    }

    async fn commit(&self, req: Request<Motion>) -> Result<Response<Commitment>, Status> {
        self.0.coordinators.check(&req)?;
        let m = req.into_inner();
        let span = motion_span(&self.0, &m.debate_id, &m.motion_id);
        self.0.commit(m).instrument(span).await.map(Response::new)
    }

    async fn reveal(&self, req: Request<RevealRequest>) -> Result<Response<Reveal>, Status> {
        self.0.coordinators.check(&req)?;
        let r = req.into_inner();
        let span = motion_span(&self.0, "", &r.motion_id);
        self.0
            .reveal(r.motion_id, &r.motion_digest)
            .instrument(span)
            .await
            .map(Response::new)
    }

    async fn deliver(&self, req: Request<Reveal>) -> Result<Response<DeliverAck>, Status> {
        self.0.deliver(req.into_inner()).await.map(Response::new)
    }

    async fn list_rulings(
        &self,
        req: Request<ListRulingsRequest>,
    ) -> Result<Response<ListRulingsResponse>, Status> {
        let f = req.into_inner();
        let store = self.0.store.clone();
        let records = blocking(move || store.list(&f)).await?;
        Ok(Response::new(ListRulingsResponse {
            records: records.into_iter().map(redact).collect(),
        }))
    }

    type CommitBatchStream = Boxed<CommitResult>;

    async fn commit_batch(
        &self,
        req: Request<Streaming<Motion>>,
    ) -> Result<Response<Self::CommitBatchStream>, Status> {
        self.0.coordinators.check(&req)?;
        let core = self.0.clone();
        let out = req
            .into_inner()
            .map(move |item| {
                let core = core.clone();
                async move {
                    let m = item?;
                    let id = m.motion_id.clone();
                    let span = motion_span(&core, &m.debate_id, &m.motion_id);
                    Ok(match core.commit(m).instrument(span).await {
                        Ok(c) => CommitResult {
                            motion_id: id,
                            commitment: Some(c),
                            error: String::new(),
                            code: 0,
                        },
                        Err(s) => CommitResult {
                            motion_id: id,
                            commitment: None,
                            error: s.message().to_owned(),
                            code: s.code() as i32,
                        },
                    })
                }
            })
            .buffer_unordered(BATCH_CONCURRENCY);
        Ok(Response::new(Box::pin(out)))
    }

    type RevealBatchStream = Boxed<RevealResult>;

    async fn reveal_batch(
        &self,
        req: Request<Streaming<RevealRequest>>,
    ) -> Result<Response<Self::RevealBatchStream>, Status> {
        self.0.coordinators.check(&req)?;
        let core = self.0.clone();
        let out = req
            .into_inner()
            .map(move |item| {
                let core = core.clone();
                async move {
                    let r = item?;
                    let id = r.motion_id;
                    Ok(match core.reveal(id.clone(), &r.motion_digest).await {
                        Ok(r) => RevealResult {
                            motion_id: id,
                            reveal: Some(r),
                            error: String::new(),
                            code: 0,
                        },
                        Err(s) => RevealResult {
                            motion_id: id,
                            reveal: None,
                            error: s.message().to_owned(),
                            code: s.code() as i32,
                        },
                    })
                }
            })
            .buffer_unordered(BATCH_CONCURRENCY);
        Ok(Response::new(Box::pin(out)))
    }
}

/// `ArbiterAdmin` service: the human judge's queue. Loopback callers only.
#[derive(Clone)]
pub struct AdminService(pub Arc<NodeCore>);

fn loopback_only<T>(req: &Request<T>) -> Result<(), Status> {
    match req.remote_addr() {
        Some(a) if a.ip().is_loopback() => Ok(()),
        _ => Err(Status::permission_denied(
            "the admin service answers loopback callers only; run `panel node` on the node's host",
        )),
    }
}

#[tonic::async_trait]
impl ArbiterAdmin for AdminService {
    async fn pending(
        &self,
        req: Request<PendingRequest>,
    ) -> Result<Response<PendingResponse>, Status> {
        loopback_only(&req)?;
        let store = self.0.store.clone();
        let motions = blocking(move || store.pending()).await?;
        Ok(Response::new(PendingResponse { motions }))
    }

    async fn answer(&self, req: Request<HumanAnswer>) -> Result<Response<Commitment>, Status> {
        loopback_only(&req)?;
        let h = req.into_inner();
        let store = self.0.store.clone();
        let id = h.motion_id.clone();
        let m = blocking(move || store.pending_get(&id))
            .await?
            .ok_or_else(|| {
                Status::not_found(format!(
                    "motion {:?} is not pending on this node (see `panel node pending`)",
                    h.motion_id
                ))
            })?;
        let span = motion_span(&self.0, &m.debate_id, &m.motion_id);
        async {
            self.0
                .arbiter
                .check_motion(&m, now_ms())
                .map_err(arbiter_status)?;
            let decision =
                known_decision(h.decision).map_err(|e| Status::invalid_argument(e.to_string()))?;
            let answer = JudgeAnswer {
                decision,
                probability: h.probability,
                relevance: h.relevance,
                tier: h.tier,
                quantiles: h.quantiles,
                receipt: h.receipt,
                rationale: h.rationale,
                provenance: Some(panel_proto::pb::JudgeProvenance {
                    judge_kind: "human".into(),
                    ..Default::default()
                }),
            };
            check_against_motion(&answer, &m)
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            self.0.seal_and_store(&m, &answer).await
        }
        .instrument(span)
        .await
        .map(Response::new)
    }
}

/// The fingerprint of this node's key (for logs and CLI output).
pub fn node_fingerprint(core: &NodeCore) -> String {
    fingerprint(&core.arbiter.verifying_key())
}
