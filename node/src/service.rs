//! The node's gRPC services: `ArbiterNode` (coordinator and peers) and `ArbiterAdmin`
//! (the local operator of a human-backed node, loopback only). They drive the node's
//! core ([`crate::core::NodeCore`]) and turn its typed refusals into gRPC statuses here,
//! at the edge, and nowhere else.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use panel_proto::commit_reveal::CommitRevealError;
use panel_proto::fingerprint;
use panel_proto::pb::arbiter_admin_server::ArbiterAdmin;
use panel_proto::pb::arbiter_node_server::ArbiterNode;
use panel_proto::pb::{
    ArbiterIdentity, CommitResult, Commitment, DeliverAck, HumanAnswer, IdentityRequest,
    ListRulingsRequest, ListRulingsResponse, Motion, PendingRequest, PendingResponse, Reveal,
    RevealRequest, RevealResult,
};
use panel_proto::signing::VerifyError;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;

use crate::arbiter::ArbiterError;
pub use crate::core::{CoreError, NodeCore};

/// Motions handled concurrently inside one batch RPC.
const BATCH_CONCURRENCY: usize = 64;

fn arbiter_status(e: &ArbiterError) -> tonic::Code {
    use tonic::Code;
    match e {
        ArbiterError::BadMotion(_) | ArbiterError::HumanJudge | ArbiterError::Ruling(_) => {
            Code::InvalidArgument
        }
        ArbiterError::ShuttingDown => Code::Unavailable,
        ArbiterError::NotOnPanel(_) => Code::PermissionDenied,
        ArbiterError::CommitWindowClosed { .. } => Code::FailedPrecondition,
        ArbiterError::Judge(_) => Code::Unavailable,
        ArbiterError::TooSlow { .. } => Code::DeadlineExceeded,
        ArbiterError::Commit(_) => Code::Internal,
    }
}

fn verify_code(e: &VerifyError) -> tonic::Code {
    match e {
        VerifyError::BadSignature { .. } | VerifyError::WrongArbiter { .. } => {
            tonic::Code::Unauthenticated
        }
        _ => tonic::Code::InvalidArgument,
    }
}

fn commitment_code(e: &CommitRevealError) -> tonic::Code {
    match e {
        CommitRevealError::BadCommitmentSignature(_) => tonic::Code::Unauthenticated,
        CommitRevealError::Verify(v) => verify_code(v),
        _ => tonic::Code::InvalidArgument,
    }
}

/// The status code of each refusal of the core.
pub fn status_code(e: &CoreError) -> tonic::Code {
    use tonic::Code;
    match e {
        CoreError::NoTrustedKey(_) | CoreError::MotionSignature(_) | CoreError::Seals(_) => {
            Code::Unauthenticated
        }
        CoreError::SecondCommitment(_) | CoreError::Equivocation { .. } => Code::AlreadyExists,
        CoreError::StoredWithoutCommitment
        | CoreError::Salt(_)
        | CoreError::Store(_)
        | CoreError::StorageTask(_) => Code::Internal,
        CoreError::Arbiter(a) => arbiter_status(a),
        CoreError::AnsweredLate { .. }
        | CoreError::OtherMotion { .. }
        | CoreError::Window(_)
        | CoreError::UnknownMotion(_)
        | CoreError::DeliveredEarly { .. }
        | CoreError::DeliveryWithoutCommitment
        | CoreError::CommittedLate { .. } => Code::FailedPrecondition,
        CoreError::ShuttingDown(_) => Code::Unavailable,
        CoreError::NoHumanAnswer { .. } => Code::DeadlineExceeded,
        CoreError::RevealWithoutCommitment(_) | CoreError::NotPending(_) => Code::NotFound,
        CoreError::DeliveryWithoutRuling
        | CoreError::OwnRuling
        | CoreError::Replayed(_)
        | CoreError::Decision(_)
        | CoreError::Answer(_) => Code::InvalidArgument,
        CoreError::Verify(v) => verify_code(v),
        CoreError::NotOnPanel { .. } => Code::PermissionDenied,
        CoreError::Commitment(c) => commitment_code(c),
    }
}

impl From<CoreError> for Status {
    fn from(e: CoreError) -> Self {
        Status::new(status_code(&e), e.to_string())
    }
}

/// `ArbiterNode` service.
#[derive(Clone)]
pub struct NodeService(pub Arc<NodeCore>);

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

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
        let span = self.0.motion_span(&m.debate_id, &m.motion_id);
        Ok(Response::new(self.0.commit(m).instrument(span).await?))
    }

    async fn reveal(&self, req: Request<RevealRequest>) -> Result<Response<Reveal>, Status> {
        self.0.coordinators.check(&req)?;
        let r = req.into_inner();
        let span = self.0.motion_span("", &r.motion_id);
        Ok(Response::new(
            self.0
                .reveal(r.motion_id, &r.motion_digest)
                .instrument(span)
                .await?,
        ))
    }

    async fn deliver(&self, req: Request<Reveal>) -> Result<Response<DeliverAck>, Status> {
        Ok(Response::new(self.0.deliver(req.into_inner()).await?))
    }

    async fn list_rulings(
        &self,
        req: Request<ListRulingsRequest>,
    ) -> Result<Response<ListRulingsResponse>, Status> {
        Ok(Response::new(ListRulingsResponse {
            records: self.0.list(req.into_inner()).await?,
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
                    let span = core.motion_span(&m.debate_id, &m.motion_id);
                    Ok(match core.commit(m).instrument(span).await {
                        Ok(c) => CommitResult {
                            motion_id: id,
                            commitment: Some(c),
                            error: String::new(),
                            code: 0,
                        },
                        Err(e) => CommitResult {
                            motion_id: id,
                            commitment: None,
                            code: status_code(&e) as i32,
                            error: e.to_string(),
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
                        Err(e) => RevealResult {
                            motion_id: id,
                            reveal: None,
                            code: status_code(&e) as i32,
                            error: e.to_string(),
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
    match panel_transport::remote_addr(req) {
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
        Ok(Response::new(PendingResponse {
            motions: self.0.pending().await?,
        }))
    }

    async fn answer(&self, req: Request<HumanAnswer>) -> Result<Response<Commitment>, Status> {
        loopback_only(&req)?;
        Ok(Response::new(self.0.answer(req.into_inner()).await?))
    }
}

/// The fingerprint of this node's key (for logs and CLI output).
pub fn node_fingerprint(core: &NodeCore) -> String {
    fingerprint(&core.arbiter.verifying_key())
}
