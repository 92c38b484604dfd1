//! Replica-to-replica traffic over gRPC (`crucible.coordinator.replica.v1.Replica`).
//!
//! openraft's request and response values travel as JSON inside a `bytes` field; a reply
//! is the JSON of `Result<response, RaftError>`, so a remote Raft error arrives as
//! `RPCError::RemoteError` exactly as openraft expects. An unreachable peer maps to
//! `RPCError::Unreachable`, which makes openraft back off instead of spinning.

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use std::collections::HashMap;
use std::sync::Arc;

use panel_federation::beacon_key::BeaconSecret;
use panel_transport::{Peer, Transport};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use super::{Member, NodeId, Raft, TypeConfig};
use crate::pb::replica::RaftPayload;
use crate::pb::replica::replica_client::ReplicaClient;
use crate::pb::replica::replica_server::Replica;

/// Creates one connection per target replica, over the replica's transport (mutual TLS
/// with this replica's certificate, which the peer's `Replica` service checks against the
/// charter; the peer's certificate must be the charter's for the target id).
#[derive(Debug, Clone)]
pub struct Network {
    transport: Transport,
}

impl Network {
    pub fn new(transport: Transport) -> Self {
        Self { transport }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, node: &Member) -> Connection {
        // `connect_lazy` never fails here; a dead peer surfaces as Unreachable on each call.
        // Pinned to the target's own charter certificate: a member's address that serves
        // another identity (another replica, or another member's relay) gets no Raft traffic.
        let client = match self
            .transport
            .endpoint_pinned(&node.addr, Peer::Replica(target))
        {
            Ok(e) => Some(ReplicaClient::new(
                e.connect_timeout(std::time::Duration::from_millis(500))
                    .connect_lazy(),
            )),
            Err(e) => {
                tracing::warn!(target = target, addr = %node.addr, "replica unreachable: {e}");
                None
            }
        };
        Connection {
            target,
            addr: node.addr.clone(),
            client,
        }
    }
}

pub struct Connection {
    target: NodeId,
    addr: String,
    client: Option<ReplicaClient<Channel>>,
}

#[derive(Clone, Copy)]
enum Rpc {
    Append,
    Vote,
    Snapshot,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct TransportError(String);

impl Connection {
    async fn call<Req, Resp, E>(
        &mut self,
        rpc: Rpc,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Member, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let Some(client) = self.client.as_mut() else {
            return Err(RPCError::Unreachable(Unreachable::new(&TransportError(
                format!(
                    "replica {} has an invalid address {:?}",
                    self.target, self.addr
                ),
            ))));
        };
        let json = serde_json::to_vec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let mut request = Request::new(RaftPayload { json });
        request.set_timeout(option.hard_ttl());
        let reply = match rpc {
            Rpc::Append => client.append_entries(request).await,
            Rpc::Vote => client.vote(request).await,
            Rpc::Snapshot => client.install_snapshot(request).await,
        };
        let payload = match reply {
            Ok(r) => r.into_inner(),
            Err(status) if status.code() == tonic::Code::Unavailable => {
                return Err(RPCError::Unreachable(Unreachable::new(&status)));
            }
            Err(status) => return Err(RPCError::Network(NetworkError::new(&status))),
        };
        let result: Result<Resp, RaftError<NodeId, E>> = serde_json::from_slice(&payload.json)
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        self.call(Rpc::Append, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Member, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call(Rpc::Snapshot, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        self.call(Rpc::Vote, &rpc, &option).await
    }
}

/// Why a replica does not seal a motion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VouchRefusal {
    /// Its applied state does not hold the motion yet: the leader may ask again.
    NotYet(String),
    /// The motion is not what its applied state puts to nodes: it never will be.
    Differs(String),
}

/// Checks a motion the leader asks this replica to seal against what the replica's own
/// applied state would put to nodes (the driver's rebuild, `service/driver/seal.rs`).
pub trait MotionVouch: Send + Sync {
    /// `from_leader`: whether the caller is this replica's current leader. Only the
    /// leader's request binds a motion's window, so another replica cannot take a
    /// motion's one window first and hold the leader's seals off.
    fn vouch(
        &self,
        motion: &panel_proto::pb::Motion,
        from_leader: bool,
    ) -> Result<(), VouchRefusal>;
}

/// Most motions one `SealMotions` call may carry (an exam sheet is at most a few dozen).
pub const MAX_SEAL_BATCH: usize = 256;

/// Server side: hands incoming Raft RPCs to the local Raft instance, and signs the
/// checkpoints this replica's own applied state issued with its log key.
pub struct ReplicaService {
    raft: Raft,
    sm: super::StateMachineStore,
    log_key: panel_tlog::NoteSigner,
    /// This replica's beacon key, when its charter entry names one.
    beacon: Option<Arc<BeaconSecret>>,
    /// The driver's check of motions to seal; without it, none is sealed.
    vouch: Option<Arc<dyn MotionVouch>>,
    /// This replica's organisation's private exam pools (`exam_pools`), offered through
    /// `OfferExamPool`; without them it offers none.
    exam_pools: Option<Arc<panel_machine::features::exam_sitting::Pools>>,
}

impl ReplicaService {
    pub fn new(
        raft: Raft,
        sm: super::StateMachineStore,
        log_key: panel_tlog::NoteSigner,
        beacon: Option<Arc<BeaconSecret>>,
        vouch: Option<Arc<dyn MotionVouch>>,
    ) -> Self {
        Self {
            raft,
            sm,
            log_key,
            beacon,
            vouch,
            exam_pools: None,
        }
    }

    /// Offers these private pools (`exam_pools`) as this replica's organisation's.
    pub fn with_exam_pools(
        mut self,
        pools: Option<Arc<panel_machine::features::exam_sitting::Pools>>,
    ) -> Self {
        self.exam_pools = pools;
        self
    }
}

/// The leader's one-off calls to other replicas (beacon shares, motion seals, checkpoint
/// signatures), each over a connection pinned to the target's charter certificate and kept
/// open between calls: a mutual-TLS handshake per call cost more than the call itself. A
/// connection that fails is dropped and the next call dials again.
#[derive(Clone)]
pub struct PinnedClients {
    transport: Transport,
    open: Arc<std::sync::Mutex<OpenClients>>,
}

/// Each replica's open client, with the address it was dialled at.
type OpenClients = HashMap<NodeId, (String, ReplicaClient<Channel>)>;

impl PinnedClients {
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            open: Arc::default(),
        }
    }

    /// The open client of `target` at `addr`, or a new one.
    async fn client(
        &self,
        target: NodeId,
        addr: &str,
        timeout: std::time::Duration,
    ) -> Result<ReplicaClient<Channel>, Status> {
        let open = self.lock().get(&target).cloned();
        if let Some((at, client)) = open
            && at == addr
        {
            return Ok(client);
        }
        let endpoint = self
            .transport
            .endpoint_pinned(addr, Peer::Replica(target))
            .map_err(|e| Status::unavailable(e.to_string()))?
            .connect_timeout(timeout);
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let client = ReplicaClient::new(channel);
        self.lock()
            .insert(target, (addr.to_owned(), client.clone()));
        Ok(client)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OpenClients> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one call on `target`'s client; a transport failure closes the connection.
    async fn call<T, F, Fut>(
        &self,
        target: NodeId,
        addr: &str,
        timeout: std::time::Duration,
        call: F,
    ) -> Result<T, Status>
    where
        F: FnOnce(ReplicaClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let client = self.client(target, addr, timeout).await?;
        let out = call(client).await;
        if let Err(e) = &out
            && matches!(e.code(), tonic::Code::Unavailable | tonic::Code::Unknown)
        {
            self.lock().remove(&target);
        }
        out
    }

    /// Replica `target`'s beacon share of `motion_id` (the leader's side of
    /// `BeaconShare`).
    pub async fn beacon_share(
        &self,
        target: NodeId,
        addr: &str,
        motion_id: &str,
        timeout: std::time::Duration,
    ) -> Result<String, Status> {
        let mut request = Request::new(crate::pb::replica::BeaconShareRequest {
            motion_id: motion_id.to_owned(),
        });
        request.set_timeout(timeout);
        self.call(target, addr, timeout, |mut c| async move {
            Ok(c.beacon_share(request).await?.into_inner().proof)
        })
        .await
    }

    /// Replica `target`'s seals over the encoded signed `motions` (the leader's side of
    /// `SealMotions`).
    pub async fn seal_motions(
        &self,
        target: NodeId,
        addr: &str,
        motions: Vec<Vec<u8>>,
        timeout: std::time::Duration,
    ) -> Result<Vec<String>, Status> {
        let mut request = Request::new(crate::pb::replica::SealMotionsRequest { motions });
        request.set_timeout(timeout);
        self.call(target, addr, timeout, |mut c| async move {
            Ok(c.seal_motions(request).await?.into_inner().seals)
        })
        .await
    }

    /// Replica `target`'s organisation's pool for sitting `sitting`, sealed by it (the
    /// leader's side of `OfferExamPool`), decoded at this edge.
    pub async fn offer_exam_pool(
        &self,
        target: NodeId,
        addr: &str,
        sitting: u32,
        timeout: std::time::Duration,
    ) -> Result<panel_machine::features::exam_sitting::SealedPool, Status> {
        let mut request = Request::new(crate::pb::replica::OfferExamPoolRequest { sitting });
        request.set_timeout(timeout);
        let json = self
            .call(target, addr, timeout, |mut c| async move {
                Ok(c.offer_exam_pool(request).await?.into_inner().sealed_pool)
            })
            .await?;
        serde_json::from_slice(&json)
            .map_err(|e| Status::invalid_argument(format!("replica {target} offered no pool: {e}")))
    }

    /// The key of replica `target`'s organisation's closed sitting (the leader's side of
    /// `ExamPoolKey`).
    pub async fn exam_pool_key(
        &self,
        target: NodeId,
        addr: &str,
        sitting: u32,
        timeout: std::time::Duration,
    ) -> Result<panel_machine::features::exam_sitting::KeyReveal, Status> {
        let mut request = Request::new(crate::pb::replica::ExamPoolKeyRequest { sitting });
        request.set_timeout(timeout);
        let reply = self
            .call(target, addr, timeout, |mut c| async move {
                Ok(c.exam_pool_key(request).await?.into_inner())
            })
            .await?;
        Ok(panel_machine::features::exam_sitting::KeyReveal {
            sitting,
            exam: reply.exam,
            salt: reply.salt.into(),
        })
    }

    /// Replica `target`'s log signature over the checkpoint of `size` (the leader's side
    /// of `SignCheckpoint`).
    pub async fn sign_checkpoint(
        &self,
        target: NodeId,
        addr: &str,
        size: u64,
        timeout: std::time::Duration,
    ) -> Result<String, Status> {
        let mut request = Request::new(crate::pb::replica::SignCheckpointRequest { size });
        request.set_timeout(timeout);
        self.call(target, addr, timeout, |mut c| async move {
            Ok(c.sign_checkpoint(request).await?.into_inner().line)
        })
        .await
    }
}

/// A pool refusal as the status the leader reads: "not yet" is asked again
/// (`until_applied`), a spent organisation is passed over.
fn offer_status(refusal: panel_machine::features::org_pools::OfferRefusal) -> Status {
    match refusal {
        r if r.not_yet() => Status::failed_precondition(r.to_string()),
        r @ panel_machine::features::org_pools::OfferRefusal::NoPool => {
            Status::not_found(r.to_string())
        }
        r => Status::permission_denied(r.to_string()),
    }
}

fn decode<T: DeserializeOwned>(p: RaftPayload) -> Result<T, Status> {
    serde_json::from_slice(&p.json)
        .map_err(|e| Status::invalid_argument(format!("malformed raft payload: {e}")))
}

fn encode<T: Serialize>(v: &T) -> Result<Response<RaftPayload>, Status> {
    serde_json::to_vec(v)
        .map(|json| Response::new(RaftPayload { json }))
        .map_err(|e| Status::internal(format!("cannot encode raft reply: {e}")))
}

impl ReplicaService {
    /// The pools and organisation this replica answers pool requests with, if the caller
    /// is its leader.
    fn pool_keeper<T>(
        &self,
        request: &Request<T>,
    ) -> Result<(&panel_machine::features::exam_sitting::Pools, String), Status> {
        if !self.caller_leads(request) {
            return Err(Status::failed_precondition(
                "only the leader this replica follows asks for its organisation's pool",
            ));
        }
        let pools = self
            .exam_pools
            .as_deref()
            .ok_or_else(|| Status::not_found("this replica holds no exam_pools"))?;
        let id = self.raft.metrics().borrow().id;
        let organisation = self
            .sm
            .read(|a| {
                a.state
                    .charter
                    .as_ref()
                    .and_then(|c| c.replicas.iter().find(|r| r.id == id))
                    .map(|r| r.organisation.clone())
            })
            .ok_or_else(|| Status::failed_precondition("this replica is not in the charter"))?;
        Ok((pools, organisation))
    }

    /// Whether the caller's certificate is the charter's entry for the replica this one
    /// follows as leader now.
    fn caller_leads<T>(&self, request: &Request<T>) -> bool {
        let Some(fingerprint) = panel_transport::peer_fingerprint(request) else {
            return false;
        };
        let caller = self.sm.read(|a| {
            a.state
                .charter
                .as_ref()
                .and_then(|c| c.replica(&fingerprint))
                .map(|r| r.id)
        });
        caller.is_some() && caller == self.raft.metrics().borrow().current_leader
    }
}

#[tonic::async_trait]
impl Replica for ReplicaService {
    async fn append_entries(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let req: AppendEntriesRequest<TypeConfig> = decode(request.into_inner())?;
        encode(&self.raft.append_entries(req).await)
    }

    async fn vote(&self, request: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        let req: VoteRequest<NodeId> = decode(request.into_inner())?;
        encode(&self.raft.vote(req).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let req: InstallSnapshotRequest<TypeConfig> = decode(request.into_inner())?;
        encode(&self.raft.install_snapshot(req).await)
    }

    async fn sign_checkpoint(
        &self,
        request: Request<crate::pb::replica::SignCheckpointRequest>,
    ) -> Result<Response<crate::pb::replica::SignCheckpointReply>, Status> {
        let size = request.into_inner().size;
        // The body is computed here from this replica's own applied record, never taken
        // from the caller: a replica signs only what its own log holds.
        let body = self.sm.read(|a| {
            panel_machine::features::checkpoints::at_size(&a.state, size)
                .map(|cp| panel_machine::features::checkpoints::body(&a.state, cp))
        });
        let body = body.ok_or_else(|| {
            Status::failed_precondition(format!(
                "this replica has applied no checkpoint of size {size} (yet)"
            ))
        })?;
        let line = self.log_key.sign(&body).to_line().trim_end().to_string();
        Ok(Response::new(crate::pb::replica::SignCheckpointReply {
            line,
        }))
    }

    async fn seal_motions(
        &self,
        request: Request<crate::pb::replica::SealMotionsRequest>,
    ) -> Result<Response<crate::pb::replica::SealMotionsReply>, Status> {
        let vouch = self.vouch.as_ref().ok_or_else(|| {
            Status::failed_precondition("this replica's driver does not check motions yet")
        })?;
        let from_leader = self.caller_leads(&request);
        let motions = request.into_inner().motions;
        if motions.len() > MAX_SEAL_BATCH {
            return Err(Status::invalid_argument(format!(
                "{} motions in one SealMotions call; send at most {MAX_SEAL_BATCH}",
                motions.len()
            )));
        }
        let mut seals = Vec::with_capacity(motions.len());
        for (i, bytes) in motions.iter().enumerate() {
            let m = <panel_proto::pb::Motion as prost::Message>::decode(bytes.as_slice()).map_err(
                |e| Status::invalid_argument(format!("motions[{i}] is not a Motion: {e}")),
            )?;
            vouch
                .vouch(&m, from_leader)
                .map_err(|refusal| match refusal {
                    VouchRefusal::NotYet(why) => Status::failed_precondition(why),
                    VouchRefusal::Differs(why) => Status::permission_denied(why),
                })?;
            let digest = panel_proto::motion_digest(&m);
            seals.push(panel_federation::motion_seal::seal(&self.log_key, &digest));
        }
        Ok(Response::new(crate::pb::replica::SealMotionsReply {
            seals,
        }))
    }

    async fn offer_exam_pool(
        &self,
        request: Request<crate::pb::replica::OfferExamPoolRequest>,
    ) -> Result<Response<crate::pb::replica::OfferExamPoolReply>, Status> {
        let (pools, organisation) = self.pool_keeper(&request)?;
        let sitting = request.into_inner().sitting;
        let mut sealed = self
            .sm
            .read(|a| pools.offer(&a.state, &organisation, sitting))
            .map_err(offer_status)?;
        let pool_id = sealed
            .public
            .id()
            .map_err(|e| Status::internal(format!("this replica's pool has no id: {e}")))?;
        sealed.seal = Some(
            panel_federation::pool_seal::PoolSealed {
                sitting,
                pool_id: &pool_id,
                key_commitment: &sealed.key_commitment.to_hex(),
            }
            .seal(&self.log_key),
        );
        let sealed_pool = serde_json::to_vec(&sealed)
            .map_err(|e| Status::internal(format!("cannot encode the pool: {e}")))?;
        Ok(Response::new(crate::pb::replica::OfferExamPoolReply {
            sealed_pool,
        }))
    }

    async fn exam_pool_key(
        &self,
        request: Request<crate::pb::replica::ExamPoolKeyRequest>,
    ) -> Result<Response<crate::pb::replica::ExamPoolKeyReply>, Status> {
        let (pools, organisation) = self.pool_keeper(&request)?;
        let sitting = request.into_inner().sitting;
        let reveal = self
            .sm
            .read(|a| pools.key_for(&a.state, &organisation, sitting))
            .map_err(offer_status)?;
        Ok(Response::new(crate::pb::replica::ExamPoolKeyReply {
            exam: reveal.exam,
            salt: reveal.salt.to_hex(),
        }))
    }

    async fn beacon_share(
        &self,
        request: Request<crate::pb::replica::BeaconShareRequest>,
    ) -> Result<Response<crate::pb::replica::BeaconShareReply>, Status> {
        let secret = self.beacon.as_ref().ok_or_else(|| {
            Status::failed_precondition("this replica has no beacon key in the charter")
        })?;
        let motion_id = request.into_inner().motion_id;
        // The question key comes from this replica's own applied state: a share is given
        // only for a motion that is open and awaits its seats here.
        let question = self.sm.read(|a| {
            let m = a.state.motions.get(&motion_id)?;
            let b = m.beacon.as_ref().filter(|b| b.pending())?;
            (m.status == panel_machine::MotionStatus::Open).then(|| b.question.clone())
        });
        let key = question.and_then(|q| q.array::<32>()).ok_or_else(|| {
            Status::failed_precondition(format!(
                "motion {motion_id} is not open and awaiting its seats on this replica (yet)"
            ))
        })?;
        Ok(Response::new(crate::pb::replica::BeaconShareReply {
            proof: secret.prove_hex(&panel_machine::features::beacon::input(&key)),
        }))
    }
}
