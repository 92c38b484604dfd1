//! One coordinator replica as a process: storage, Raft, proposer, and one gRPC endpoint
//! serving the replica transport, the client API, membership admin, health and reflection.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::{BroadcastStream, TcpListenerStream};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

use crate::command::{
    ClientCommand, Command, Item, ItemOutcome, ItemReply, OutcomeSubmission, Query, TestCommand,
    is_internal_client_id,
};
use crate::pb::coordinator as pb;
use crate::pb::coordinator::admin_server::{Admin, AdminServer};
use crate::pb::coordinator::coordinator_client::CoordinatorClient;
use crate::pb::coordinator::coordinator_server::{Coordinator, CoordinatorServer};
use crate::pb::replica::replica_server::ReplicaServer;
use crate::proposer::{ProposeError, Proposer, ProposerOptions};
use crate::query;
use crate::raft::{self, Member, NodeId, Raft, RaftOptions, RaftStartError, StateMachineStore};

/// Largest gRPC message accepted: batches of signed rulings and snapshot chunks are big.
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub id: NodeId,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub raft: RaftOptions,
    pub proposer: ProposerOptions,
    /// Commit and reveal windows of the motion driver.
    pub driver: crate::driver::DriverOptions,
    /// Accept [`TestCommand`]s from clients (`--test-commands`; needs the `test-commands`
    /// build feature). Off in production: they bypass the exam and let a client close a
    /// motion.
    pub test_commands: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Start(#[from] RaftStartError),
    #[error("cannot listen on {addr}: {source}; pick a free port")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error(
        "--test-commands needs a build with the test-commands feature (cargo build --features panel-coordinator/test-commands); production replicas never accept test commands"
    )]
    TestCommandsUnavailable,
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Shared by the client API and admin services.
pub(crate) struct Node {
    id: NodeId,
    raft: Raft,
    pub(crate) sm: StateMachineStore,
    /// Signs the checkpoints of exported records (DATA_DIR/checkpoint.key).
    checkpoint_key: ed25519_dalek::SigningKey,
    /// Gate and per-author rate limit for contributions, before proposal.
    intake: crate::intake::Intake,
    proposer: Proposer,
    peers: Mutex<HashMap<String, CoordinatorClient<Channel>>>,
    /// Whether clients may send [`TestCommand`]s ([`ServeOptions::test_commands`]).
    test_commands: bool,
}

impl Node {
    fn peer(&self, addr: &str) -> Result<CoordinatorClient<Channel>, Status> {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = peers.get(addr) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| Status::internal(format!("leader address {addr:?} is invalid: {e}")))?;
        let c = CoordinatorClient::new(endpoint.tcp_nodelay(true).connect_lazy())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        peers.insert(addr.to_owned(), c.clone());
        Ok(c)
    }

    fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().current_leader == Some(self.id)
    }

    async fn forward(
        &self,
        mut req: pb::WriteRequest,
        leader_addr: Option<String>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let Some(addr) = leader_addr.or_else(|| raft::leader(&self.raft).map(|(_, a)| a)) else {
            return Err(Status::unavailable(
                "no leader is elected yet; retry in a moment",
            ));
        };
        if req.forwarded {
            return Err(Status::unavailable(format!(
                "this replica is not the leader; the leader is at {addr}"
            )));
        }
        req.forwarded = true;
        self.peer(&addr)?.write(req).await
    }
}

fn write_reply(o: ItemOutcome) -> pb::WriteReply {
    let (applied, result_json) = match &o.reply {
        ItemReply::Applied(v) => (true, v.to_string()),
        ItemReply::Refused { code, message } => (
            false,
            serde_json::json!({ "code": code, "message": message }).to_string(),
        ),
    };
    pb::WriteReply {
        applied,
        result_json,
        log_index: o.log_index,
        duplicate: o.duplicate,
    }
}

/// Answers a query from this replica's state, with the index it has applied.
pub(crate) fn local_query(node: &Node, q: &Query) -> (serde_json::Value, u64) {
    node.sm.read(|a| {
        (
            query::query(&a.state, q),
            a.last_applied.map_or(0, |l| l.index),
        )
    })
}

/// The export bundle with a checkpoint signed by this replica, which vouches for the entries.
pub(crate) fn signed_export(
    node: &Node,
    value: serde_json::Value,
) -> Result<serde_json::Value, Status> {
    let mut bundle: crate::record::Bundle =
        serde_json::from_value(value).map_err(|e| Status::internal(format!("export: {e}")))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    crate::record::sign(&mut bundle, &node.checkpoint_key, now);
    serde_json::to_value(&bundle).map_err(|e| Status::internal(format!("export: {e}")))
}

/// One write, as every write path (unary, stream, typed) handles it: a follower forwards
/// it; the leader runs intake (Gate, rate limit, signature checks) and proposes it, and
/// answers once it is applied.
pub(crate) async fn submit(
    node: &Arc<Node>,
    req: pb::WriteRequest,
) -> Result<pb::WriteReply, Status> {
    let mut command = client_write(&req, node.test_commands)?;
    if !node.is_leader() {
        return node.forward(req, None).await.map(Response::into_inner);
    }
    // Intake: the Gate and the per-author rate limit run before proposal.
    node.intake
        .admit(&command, std::time::Instant::now())
        .map_err(intake_status)?;
    // Intake: refuse undecodable or badly signed rulings before they reach the log. The
    // signature checks are CPU work: off the async workers.
    if let Command::Test(TestCommand::RecordOutcome(sub)) = command {
        let checked = tokio::task::spawn_blocking(move || {
            crate::ruling::intake_check(&sub.rulings, &sub.reveals)
                .map(|reveals| OutcomeSubmission { reveals, ..sub })
        })
        .await
        .map_err(|e| Status::internal(format!("intake check failed: {e}")))?;
        command = TestCommand::RecordOutcome(checked.map_err(|e| {
            Status::invalid_argument(format!("RecordOutcome refused at intake: {e}"))
        })?)
        .into();
    }
    let item = Item {
        client_id: req.client_id.clone(),
        request_id: req.request_id,
        command,
    };
    match node.proposer.submit(item).await {
        Ok(outcome) => Ok(write_reply(outcome)),
        Err(ProposeError::NotLeader { leader_addr, .. }) => node
            .forward(req, leader_addr)
            .await
            .map(Response::into_inner),
        Err(e) => Err(Status::unavailable(format!(
            "{e}; retry with the same request_id"
        ))),
    }
}

/// Decodes a client's write: a [`ClientCommand`], or with test commands on, any command a
/// test client may send. Internal commands and the drivers' reserved client ids are
/// refused with the rule that forbids them, so no client can admit an arbiter, open a
/// motion, close one or squat a driver's deduplication keys (docs/SECURITY.md).
fn client_write(req: &pb::WriteRequest, test_commands: bool) -> Result<Command, Status> {
    if is_internal_client_id(&req.client_id) {
        return Err(Status::permission_denied(format!(
            "client_id {:?} is reserved for the replica's own drivers; choose another client id",
            req.client_id
        )));
    }
    match serde_json::from_str::<ClientCommand>(&req.command_json) {
        Ok(c) => Ok(c.into()),
        Err(client_err) => {
            if test_commands
                && test_commands_built()
                && let Ok(t) = serde_json::from_str::<TestCommand>(&req.command_json)
            {
                return Ok(t.into());
            }
            if let Ok(c) = serde_json::from_str::<Command>(&req.command_json) {
                return Err(Status::permission_denied(format!(
                    "{} is not a client command: {}",
                    c.kind(),
                    match c {
                        Command::Internal(_) =>
                            "only the leader's motion and exam drivers propose it (outcomes are decided from the seats' reveals; admission follows an exam scored in apply)",
                        _ =>
                            "it exists for test clusters only (a replica started with --test-commands)",
                    }
                )));
            }
            Err(Status::invalid_argument(format!(
                "command_json is not a client command ({client_err}); example: {{\"CreateDebate\":{{...}}}}, see docs/COORDINATOR.md"
            )))
        }
    }
}

/// Whether this build can accept test commands at all (the `test-commands` feature).
const fn test_commands_built() -> bool {
    cfg!(feature = "test-commands")
}

/// The gRPC status of an intake refusal; a Gate refusal carries its violations as an
/// encoded `GateReport` in the status details.
fn intake_status(e: crate::intake::IntakeError) -> Status {
    match &e {
        crate::intake::IntakeError::Gate { violations, .. } => {
            let report = pb::GateReport {
                violations: violations
                    .iter()
                    .map(|v| pb::GateViolation {
                        rule: v.rule.as_str().to_string(),
                        rule_name: v.rule_name.to_string(),
                        field: v.field.clone(),
                        excerpt: v.excerpt.clone(),
                        message: v.message.clone(),
                        fix: v.fix.to_string(),
                    })
                    .collect(),
            };
            Status::with_details(
                tonic::Code::InvalidArgument,
                e.to_string(),
                prost::Message::encode_to_vec(&report).into(),
            )
        }
        crate::intake::IntakeError::RateLimited { .. } => Status::resource_exhausted(e.to_string()),
    }
}

pub(crate) struct CoordinatorService(pub(crate) Arc<Node>);

type WriteReplyStream = Pin<Box<dyn Stream<Item = Result<pb::WriteStreamReply, Status>> + Send>>;

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::Event, Status>> + Send>>;

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn write(
        &self,
        request: Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        submit(&self.0, request.into_inner())
            .await
            .map(Response::new)
    }

    type WriteStreamStream = WriteReplyStream;

    async fn write_stream(
        &self,
        request: Request<tonic::Streaming<pb::WriteRequest>>,
    ) -> Result<Response<WriteReplyStream>, Status> {
        let mut incoming = request.into_inner();
        let node = self.0.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            // Each request is handled on its own task, so one slow write never holds up the
            // others and the proposer can batch everything in flight into one entry.
            while let Some(next) = incoming.next().await {
                let Ok(req) = next else { break };
                let (node, tx) = (node.clone(), tx.clone());
                tokio::spawn(async move {
                    let (client_id, request_id) = (req.client_id.clone(), req.request_id);
                    let reply = match submit(&node, req).await {
                        Ok(r) => pb::WriteStreamReply {
                            client_id,
                            request_id,
                            reply: Some(r),
                            ..Default::default()
                        },
                        Err(st) => pb::WriteStreamReply {
                            client_id,
                            request_id,
                            reply: None,
                            error_code: st.code() as i32,
                            error_message: st.message().to_string(),
                        },
                    };
                    let _ = tx.send(Ok(reply)).await;
                });
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn read(
        &self,
        request: Request<pb::ReadRequest>,
    ) -> Result<Response<pb::ReadReply>, Status> {
        let req = request.into_inner();
        let query: Query = serde_json::from_str(&req.query_json).map_err(|e| {
            Status::invalid_argument(format!(
                "query_json is not a Query ({e}); example: {{\"Notes\":{{\"topic\":\"t\"}}}}"
            ))
        })?;
        if req.linearizable {
            self.0.raft.ensure_linearizable().await.map_err(|e| {
                Status::failed_precondition(format!("linearizable reads need the leader: {e}"))
            })?;
        }
        let (mut value, applied) = local_query(&self.0, &query);
        if matches!(query, Query::Export) {
            value = signed_export(&self.0, value)?;
        }
        Ok(Response::new(pb::ReadReply {
            result_json: value.to_string(),
            applied_index: applied,
        }))
    }

    async fn status(
        &self,
        _request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        let s = raft::status(&self.0.raft);
        Ok(Response::new(pb::StatusReply {
            node_id: s.node_id,
            role: s.role,
            term: s.term,
            has_leader: s.leader.is_some(),
            leader_id: s.leader.unwrap_or(0),
            leader_addr: s.leader_addr.unwrap_or_default(),
            last_log_index: s.last_log_index,
            last_applied: s.last_applied,
            snapshot_index: s.snapshot_index,
            purged_index: s.purged_index,
            voters: s.voters,
            learners: s.learners,
            nodes_json: serde_json::to_string(&s.nodes).unwrap_or_default(),
        }))
    }

    type WatchEventsStream = EventStream;

    async fn watch_events(
        &self,
        _request: Request<pb::WatchRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let rx = self.0.sm.subscribe();
        let stream = BroadcastStream::new(rx).filter_map(|ev| match ev {
            Ok(ev) => Some(Ok(pb::Event {
                log_index: ev.log_index,
                kind: ev.kind,
                detail_json: serde_json::to_string(&ev.reply).unwrap_or_default(),
            })),
            // A slow subscriber skips events rather than stalling the state machine.
            Err(_) => None,
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

struct AdminService(Arc<Node>);

fn admin_error(e: impl std::fmt::Display) -> Status {
    Status::failed_precondition(format!(
        "{e}; membership changes must reach the leader (see `panel coordinator status`)"
    ))
}

fn admin_reply<T: serde::Serialize>(v: &T) -> Response<pb::AdminReply> {
    Response::new(pb::AdminReply {
        detail_json: serde_json::to_string(v).unwrap_or_default(),
    })
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn init(
        &self,
        request: Request<pb::InitRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let members: Vec<(NodeId, String)> = request
            .into_inner()
            .members
            .into_iter()
            .map(|m| (m.id, m.addr))
            .collect();
        if members.is_empty() {
            return Err(Status::invalid_argument(
                "init needs at least one member, e.g. 1=127.0.0.1:7001",
            ));
        }
        self.0
            .raft
            .initialize(raft::members(&members))
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(&serde_json::json!({ "initialized": members })))
    }

    async fn add_learner(
        &self,
        request: Request<pb::AddLearnerRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let m = request
            .into_inner()
            .member
            .ok_or_else(|| Status::invalid_argument("add-learner needs a member (id and addr)"))?;
        let resp = self
            .0
            .raft
            .add_learner(m.id, Member { addr: m.addr }, true)
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(
            &serde_json::json!({ "log_id": resp.log_id, "membership": resp.membership }),
        ))
    }

    async fn change_membership(
        &self,
        request: Request<pb::ChangeMembershipRequest>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let req = request.into_inner();
        let voters: BTreeSet<NodeId> = req.voters.into_iter().collect();
        if voters.is_empty() {
            return Err(Status::invalid_argument(
                "change-membership needs at least one voter",
            ));
        }
        let resp = self
            .0
            .raft
            .change_membership(voters, req.retain)
            .await
            .map_err(admin_error)?;
        Ok(admin_reply(
            &serde_json::json!({ "log_id": resp.log_id, "membership": resp.membership }),
        ))
    }
}

/// Run a replica until `shutdown` resolves.
/// Loads or creates the replica's checkpoint key (32 random bytes, mode 0600).
fn checkpoint_key(dir: &std::path::Path) -> Result<ed25519_dalek::SigningKey, ServeError> {
    let path = dir.join("checkpoint.key");
    let io = |e: std::io::Error| ServeError::DataDir {
        path: path.display().to_string(),
        source: e,
    };
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(seed) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return Ok(ed25519_dalek::SigningKey::from_bytes(&seed));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        f.write_all(&seed).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    Ok(ed25519_dalek::SigningKey::from_bytes(&seed))
}

pub async fn serve(
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    if opts.test_commands && !test_commands_built() {
        return Err(ServeError::TestCommandsUnavailable);
    }
    if opts.test_commands {
        tracing::warn!("test commands are on: clients may admit arbiters and close motions");
    }
    std::fs::create_dir_all(&opts.data_dir).map_err(|e| ServeError::DataDir {
        path: opts.data_dir.display().to_string(),
        source: e,
    })?;
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| ServeError::Bind {
            addr: opts.listen,
            source: e,
        })?;
    let (raft, sm) = raft::start(opts.id, &opts.data_dir, &opts.raft).await?;
    let proposer = Proposer::spawn(raft.clone(), opts.proposer.clone());
    let links = crate::link::LinkRegistry::new();
    crate::driver::spawn(
        opts.id,
        raft.clone(),
        sm.clone(),
        proposer.clone(),
        opts.driver,
        links.clone(),
    );
    let checkpoint_key = checkpoint_key(&opts.data_dir)?;
    let node = Arc::new(Node {
        id: opts.id,
        raft: raft.clone(),
        checkpoint_key,
        intake: crate::intake::Intake::new(crate::intake::IntakeLimits::default()),
        sm,
        proposer,
        peers: Mutex::new(HashMap::new()),
        test_commands: opts.test_commands,
    });

    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<CoordinatorServer<CoordinatorService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(panel_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    let result = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(
            ReplicaServer::new(raft::ReplicaService::new(raft.clone()))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(
            CoordinatorServer::new(CoordinatorService(node.clone()))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(
            crate::pb::coordinator::debates_server::DebatesServer::new(crate::api::DebatesService(
                node.clone(),
            ))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE),
        )
        .add_service(AdminServer::new(AdminService(node.clone())))
        .add_service(crate::link::server(opts.id, node.sm.clone(), links))
        .add_service(health)
        .add_service(reflection)
        // `Server::tcp_nodelay` applies only to listeners tonic binds itself: set it on
        // every accepted stream, or Nagle + delayed ACK stall each small reply.
        .serve_with_incoming_shutdown(
            TcpListenerStream::new(listener).map(|conn| {
                if let Ok(stream) = &conn {
                    let _ = stream.set_nodelay(true);
                }
                conn
            }),
            shutdown,
        )
        .await;
    let _ = raft.shutdown().await;
    Ok(result?)
}
