//! The replica core: what every client-facing service of one replica leans on. A write is
//! decoded into a client command here, forwarded to the leader when this replica is a
//! follower, checked at intake (Gate, rate limit, signatures) and proposed; reads answer
//! from the applied state. The gRPC services (`client_api`, `debates_api`, `admin`) are thin
//! adapters over it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use panel_transport::{Charter, LiveTrust, Transport};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb::coordinator as pb;
use crate::pb::coordinator::coordinator_client::CoordinatorClient;
use crate::raft::{self, NodeId, Raft, StateMachineStore};
use crate::service::intake::{Intake, IntakeError};
use crate::service::metrics::Refusal;
use crate::service::proposer::{ProposeError, Proposer};
use panel_machine::command::is_internal_client_id;
use panel_machine::features::limits::Writer;
use panel_machine::read::query;
use panel_machine::{
    ClientCommand, Command, InternalCommand, Item, ItemOutcome, ItemReply, OutcomeSubmission,
    Query, TestCommand,
};

/// Largest gRPC message accepted: batches of signed rulings and snapshot chunks are big.
pub(crate) const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// One replica's shared core: its Raft handle, applied state, intake, proposer and the
/// connections it forwards writes over.
pub(crate) struct Replica {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) sm: StateMachineStore,
    /// Signs the log's checkpoints (`service::log_key`): served, exported, pushed to
    /// witnesses.
    pub(crate) log_key: panel_tlog::NoteSigner,
    /// Gate and per-author rate limit for contributions, before proposal.
    pub(crate) intake: Intake,
    pub(crate) proposer: Proposer,
    pub(crate) peers: Mutex<HashMap<String, CoordinatorClient<Channel>>>,
    /// Whether clients may send [`TestCommand`]s ([`ServeOptions::test_commands`]).
    pub(crate) test_commands: bool,
    /// Largest command a client may write, in bytes of its JSON ([`ServeOptions`]).
    ///
    /// [`ServeOptions`]: crate::service::serve::ServeOptions
    pub(crate) max_command_bytes: usize,
    /// How this replica dials the leader when it forwards a write.
    pub(crate) transport: panel_transport::Transport,
    /// Who a caller is, for the write limits.
    pub(crate) identities: Identities,
    /// When this replica, as leader, last heard from a quorum.
    pub(crate) quorum: raft::QuorumWatch,
    /// How long a leader may go without a quorum's acknowledgement before it refuses
    /// writes and reads (about the election timeout: by then the others may have elected
    /// a new leader, so holding a write longer only makes the client wait for nothing).
    pub(crate) lease: std::time::Duration,
    /// Counters of the metrics endpoint (`service::metrics`).
    pub(crate) metrics: Arc<crate::service::metrics::ReplicaMetrics>,
    /// Intake signature checks running at once, at most one per core: more only queue
    /// on the same cores, and each extra thread of the blocking pool kept an allocator
    /// arena of its own (`service::runtime`).
    pub(crate) intake_checks: tokio::sync::Semaphore,
}

/// Organisations of client certificates found so far, kept at most (then forgotten and
/// found again): a path check per write would cost a signature verification each.
const MAX_CACHED_IDENTITIES: usize = 10_000;

/// Resolves a caller to the [`Writer`] its writes are limited under (docs/SECURITY.md,
/// "Floods"): its certificate's SHA-256 and the organisation in force whose authority
/// issued it (the record's, [`panel_transport::TrustView::organisation_of`]); anonymous
/// with no certificate, and always in the loopback debug mode.
pub(crate) struct Identities {
    charter: Option<Arc<Charter>>,
    trust: Option<LiveTrust>,
    /// Organisations found under the trust view of the generation kept beside them.
    cache: Mutex<(u64, HashMap<panel_transport::Fingerprint, Option<String>>)>,
}

/// Organisation name of certificates that chain to no organisation in force (a process
/// without a charter accepts those; a chartered replica refuses them at the handshake).
pub(crate) const UNLISTED_ORGANISATION: &str = "(no charter organisation)";

/// Who sent a write, as this replica established it.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) writer: Writer,
    /// The caller is one of the charter's replicas (so it may vouch for a forwarded
    /// write's original writer).
    pub(crate) replica: bool,
}

impl Identities {
    pub(crate) fn new(transport: &Transport) -> Self {
        Self {
            charter: transport.charter(),
            trust: transport.trust().cloned(),
            cache: Mutex::new((0, HashMap::new())),
        }
    }

    /// The caller of `req`.
    pub(crate) fn caller<T>(&self, req: &Request<T>) -> Caller {
        let anonymous = Caller {
            writer: Writer::anonymous(),
            replica: false,
        };
        let (Some(charter), Some(trust)) = (&self.charter, &self.trust) else {
            return anonymous;
        };
        let Some(chain) = panel_transport::peer_chain(req) else {
            return anonymous;
        };
        let Some(leaf) = chain.first() else {
            return anonymous;
        };
        let fp = panel_transport::Fingerprint::of_der(leaf.as_ref());
        let replica = charter.replica(&fp).is_some();
        let view = trust.view();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let (generation, found) = &mut *cache;
        if *generation != view.generation() || found.len() >= MAX_CACHED_IDENTITIES {
            *generation = view.generation();
            found.clear();
        }
        let organisation = found
            .entry(fp.clone())
            .or_insert_with(|| view.organisation_of(&chain))
            .clone()
            .unwrap_or_else(|| UNLISTED_ORGANISATION.to_owned());
        Caller {
            writer: Writer {
                identity: fp.to_string(),
                organisation: Some(organisation),
            },
            replica,
        }
    }
}

impl Caller {
    /// The writer a write is limited under: the original caller a charter replica
    /// forwarded it for, or else the caller itself (a client cannot claim another
    /// identity by filling the forwarding fields).
    pub(crate) fn writer_of(&self, req: &pb::WriteRequest) -> Writer {
        if self.replica && req.forwarded && !req.writer_identity.is_empty() {
            return Writer {
                identity: req.writer_identity.clone(),
                organisation: (!req.writer_organisation.is_empty())
                    .then(|| req.writer_organisation.clone()),
            };
        }
        self.writer.clone()
    }
}

impl Replica {
    fn peer(&self, addr: &str) -> Result<CoordinatorClient<Channel>, Status> {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = peers.get(addr) {
            return Ok(c.clone());
        }
        // A forwarded write carries its writer's identity, which the leader believes only
        // from a replica; and only a replica may receive it.
        let endpoint = self
            .transport
            .endpoint_pinned(addr, panel_transport::Peer::Replicas)
            .map_err(|e| Status::internal(format!("leader address {addr:?}: {e}")))?;
        let c = CoordinatorClient::new(endpoint.connect_lazy())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        peers.insert(addr.to_owned(), c.clone());
        Ok(c)
    }

    fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().current_leader == Some(self.id)
    }

    /// Refuses when this replica leads but has not heard from a quorum within its lease
    /// ([`raft::QuorumWatch`]); passes otherwise.
    pub(crate) fn quorum_check(&self) -> Result<(), raft::QuorumError> {
        let (leader, term) = {
            let m = self.raft.metrics();
            let m = m.borrow();
            (m.current_leader, m.current_term)
        };
        if leader != Some(self.id) {
            return Ok(());
        }
        self.quorum.check(self.id, term, self.lease)
    }

    /// Confirms with a quorum that this replica still leads, and returns the index a
    /// linearizable read must have applied (openraft's read index). Bounded by the lease,
    /// so an isolated leader answers UNAVAILABLE at once instead of at the deadline.
    pub(crate) async fn leader_read_index(&self) -> Result<u64, Status> {
        self.quorum_check()
            .map_err(|e| Status::unavailable(e.to_string()))?;
        // The leader's last log index, read before the quorum check: every entry a
        // client saw acknowledged is in it (leader completeness). openraft's read log id
        // alone is not enough after a restart: a killed leader restarts as leader of its
        // term with the committed index it last saved (written without fsync), and its
        // term's first entry can be far behind, so a read could miss a write acknowledged
        // just before the kill (docs/RELIABILITY.md, "The stale read after a leader's
        // restart"). Waiting for this index costs at most the commit of entries in flight.
        let last_log = self.raft.metrics().borrow().last_log_index.unwrap_or(0);
        match tokio::time::timeout(self.lease, self.raft.ensure_linearizable()).await {
            Ok(Ok(read)) => Ok(read.map_or(0, |l| l.index).max(last_log)),
            Ok(Err(e)) => Err(Status::unavailable(format!(
                "replica {} cannot confirm its leadership with a quorum for a linearizable read ({e}); retry, or ask for a local read (possibly stale)",
                self.id
            ))),
            Err(_) => Err(Status::unavailable(format!(
                "replica {} could not confirm its leadership with a quorum within {} ms; retry, or ask for a local read (possibly stale)",
                self.id,
                self.lease.as_millis()
            ))),
        }
    }

    /// The read barrier every user-facing read passes: nothing for a local read (returns
    /// false), else the read index, from this replica if it leads or from the leader, then
    /// a wait until this replica has applied up to it (returns true).
    pub(crate) async fn read_barrier(
        &self,
        consistency: pb::ReadConsistency,
    ) -> Result<bool, Status> {
        if consistency == pb::ReadConsistency::Local {
            return Ok(false);
        }
        let index = if self.is_leader() {
            self.leader_read_index().await?
        } else {
            let Some((leader, addr)) = raft::leader(&self.raft) else {
                return Err(Status::unavailable(
                    "no leader is known to this replica, so a linearizable read cannot be served; retry in a moment, or ask for a local read (possibly stale)",
                ));
            };
            let mut req = Request::new(pb::ReadIndexRequest {});
            req.set_timeout(self.lease * 2);
            let reply = self.peer(&addr)?.read_index(req).await.map_err(|e| {
                Status::unavailable(format!(
                    "the leader (replica {leader} at {addr}) did not give a read index: {}; retry",
                    e.message()
                ))
            })?;
            reply.into_inner().read_index
        };
        self.raft
            .wait(Some(self.lease * 4))
            .applied_index_at_least(Some(index), "read index")
            .await
            .map_err(|e| {
                Status::unavailable(format!(
                    "replica {} has not applied up to the read index {index} in time ({e}); retry",
                    self.id
                ))
            })?;
        Ok(true)
    }

    async fn forward(
        &self,
        mut req: pb::WriteRequest,
        writer: &Writer,
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
        // The leader limits the write under its original caller, which only this replica
        // saw (docs/SECURITY.md, "Floods").
        req.writer_identity = writer.identity.clone();
        req.writer_organisation = writer.organisation.clone().unwrap_or_default();
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
pub(crate) fn local_query(replica: &Replica, q: &Query) -> (serde_json::Value, u64) {
    replica.sm.read(|a| {
        (
            query::query(&a.state, q),
            a.last_applied.map_or(0, |l| l.index),
        )
    })
}

/// The record of this replica's applied state with the log's checkpoints, signed with the
/// log key and carrying the cosignatures received (`record::export`).
pub(crate) fn signed_export(replica: &Replica) -> Result<panel_machine::Bundle, Status> {
    Ok(signed_export_at(replica)?.0)
}

/// The signed export and the log index it was taken at, read together (a copy of the
/// applied state with its stored record entries, `StateMachineStore::whole_copy`).
pub(crate) fn signed_export_at(replica: &Replica) -> Result<(panel_machine::Bundle, u64), Status> {
    let copy = replica
        .sm
        .whole_copy()
        .map_err(|e| Status::internal(format!("export: {e}")))?;
    Ok((
        panel_machine::read::record::export(&copy.state, Some(&replica.log_key)),
        copy.last_applied.map_or(0, |l| l.index),
    ))
}

/// One write, as every write path (unary, stream, typed) handles it: a follower forwards
/// it; the leader runs intake (Gate, rate limit, signature checks) and proposes it, and
/// answers once it is applied.
pub(crate) async fn submit(
    replica: &Arc<Replica>,
    req: pb::WriteRequest,
    caller: &Caller,
) -> Result<pb::WriteReply, Status> {
    // Bytes first: an oversized command is refused before it is even decoded, on every
    // replica, so it can never become a log entry too big to replicate.
    within_command_limit(replica, req.command_json.len())?;
    let command = client_write(&req, replica.test_commands)
        .inspect_err(|(why, _)| {
            replica.metrics.refused(*why);
        })
        .map_err(|(_, status)| status)?;
    submit_decoded(replica, req, command, caller).await
}

/// A client command the typed API (`Debates`) has already built: it goes to the same
/// checks as a decoded `Write`, without being parsed back from JSON. The JSON is encoded
/// once, for the byte limit and in case the write must be forwarded to the leader.
pub(crate) async fn submit_command(
    replica: &Arc<Replica>,
    client_id: String,
    request_id: u64,
    command: ClientCommand,
    caller: &Caller,
) -> Result<pb::WriteReply, Status> {
    client_may_use(&client_id).map_err(|(why, status)| {
        replica.metrics.refused(why);
        status
    })?;
    let command_json = serde_json::to_string(&command)
        .map_err(|e| Status::internal(format!("cannot encode the command: {e}")))?;
    within_command_limit(replica, command_json.len())?;
    let req = pb::WriteRequest {
        client_id,
        request_id,
        command_json,
        forwarded: false,
        ..Default::default()
    };
    submit_decoded(replica, req, command.into(), caller).await
}

/// Refuses a command of more than the replica's `--max-command-bytes`.
fn within_command_limit(replica: &Replica, bytes: usize) -> Result<(), Status> {
    if bytes > replica.max_command_bytes {
        replica.metrics.refused(Refusal::TooLarge);
        return Err(too_large(bytes, replica.max_command_bytes));
    }
    Ok(())
}

/// The refusal of a command over `--max-command-bytes`.
fn too_large(bytes: usize, limit: usize) -> Status {
    Status::invalid_argument(format!(
        "the command is {bytes} bytes; the limit is {limit} bytes per command (replica option --max-command-bytes); split the write or cite large sources by digest"
    ))
}

/// The refusal of a write by a leader that cannot reach a quorum.
fn no_quorum(e: &raft::QuorumError) -> Status {
    Status::unavailable(format!(
        "{e}; nothing was proposed, so retry the write (same request_id) on another replica"
    ))
}

/// The refusal of a test outcome whose rulings or reveals fail the intake check.
fn bad_ruling(e: &panel_machine::rules::ruling::IntakeError) -> Status {
    Status::invalid_argument(format!(
        "RecordOutcome refused at intake: {e}; send the rulings and reveals exactly as the nodes signed them"
    ))
}

/// The rest of a write once its command is decoded and allowed: the charter gate, the
/// forward to the leader, the quorum check, intake, and the proposal.
async fn submit_decoded(
    replica: &Arc<Replica>,
    req: pb::WriteRequest,
    mut command: Command,
    caller: &Caller,
) -> Result<pb::WriteReply, Status> {
    let bytes = req.command_json.len();
    crate::service::charter_adoption::write_gate(
        &replica.sm,
        replica.transport.charter().as_deref(),
    )
    .inspect_err(|_| replica.metrics.refused(Refusal::Unchartered))?;
    let writer = caller.writer_of(&req);
    if !replica.is_leader() {
        return replica
            .forward(req, &writer, None)
            .await
            .map(Response::into_inner);
    }
    // An isolated leader refuses at once: the write could not commit, and a new leader
    // may be elected already (nothing was proposed, so the write did not happen).
    replica.quorum_check().map_err(|e| {
        replica.metrics.refused(Refusal::NoQuorum);
        no_quorum(&e)
    })?;
    // Intake: the Gate and the rate limits (writer, key, kind) run before proposal.
    replica
        .intake
        .admit(&command, &writer, std::time::Instant::now())
        .map_err(|e| {
            replica.metrics.intake_error(&e);
            intake_status(e)
        })?;
    // Intake: refuse undecodable or badly signed rulings before they reach the log. The
    // signature checks are CPU work: off the async workers. They go through the state
    // machine's memo, so this replica's apply of the entry does not repeat them.
    if let Command::Test(TestCommand::RecordOutcome(sub)) = command {
        let memo = replica.sm.memo().clone();
        let _permit = replica
            .intake_checks
            .acquire()
            .await
            .map_err(|e| Status::internal(format!("intake check failed: {e}")))?;
        let checked = tokio::task::spawn_blocking(move || {
            panel_machine::rules::ruling::intake_check(&sub.rulings, &sub.reveals, &memo)
                .map(|reveals| OutcomeSubmission { reveals, ..sub })
        })
        .await
        .map_err(|e| Status::internal(format!("intake check failed: {e}")))?;
        command = TestCommand::RecordOutcome(checked.map_err(|e| {
            replica.metrics.refused(Refusal::BadRuling);
            bad_ruling(&e)
        })?)
        .into();
    }
    let item = Item {
        client_id: req.client_id.clone(),
        request_id: req.request_id,
        command,
        writer: Some(writer.clone()),
    };
    // While the entry waits for its quorum, keep checking the lease: a leader cut off after
    // proposing answers UNAVAILABLE about the election timeout later, not at the client's
    // deadline. The outcome is then unknown (the entry may still commit under this or a
    // later leader), which the retry with the same request id resolves.
    let proposed = replica.proposer.submit(item, bytes);
    tokio::pin!(proposed);
    let result = loop {
        tokio::select! {
            r = &mut proposed => break r,
            _ = tokio::time::sleep(replica.lease / 4) => {
                if let Err(e) = replica.quorum_check() {
                    return Err(Status::unavailable(format!(
                        "{e}; the write was proposed and may still be applied: retry with the same request_id to learn its outcome"
                    )));
                }
            }
        }
    };
    match result {
        Ok(outcome) => Ok(write_reply(outcome)),
        Err(ProposeError::NotLeader { leader_addr, .. }) => replica
            .forward(req, &writer, leader_addr)
            .await
            .map(Response::into_inner),
        Err(e) => Err(Status::unavailable(format!(
            "{e}; retry with the same request_id"
        ))),
    }
}

/// Decodes a client's write once, then keeps it only if its family is one a client may
/// send: a [`ClientCommand`], or on a test cluster a [`TestCommand`] (a test client's
/// outcome has the driver's JSON, so it decodes as the internal command and is taken as
/// the test one). Internal commands and the drivers' reserved client ids are refused with
/// the rule that forbids them, so no client can admit an arbiter, open a motion, close one
/// or squat a driver's deduplication keys (docs/SECURITY.md).
fn client_write(req: &pb::WriteRequest, test_commands: bool) -> Result<Command, (Refusal, Status)> {
    client_may_use(&req.client_id)?;
    let command: Command = serde_json::from_str(&req.command_json).map_err(|e| {
        (Refusal::Malformed, Status::invalid_argument(format!(
            "command_json is not a client command ({e}); example: {{\"CreateDebate\":{{...}}}}, see docs/coordinator/reads-and-writes.md \"Writes, batching, forwarding\""
        )))
    })?;
    let test_cluster = test_commands && test_commands_built();
    match command {
        Command::Client(_) => Ok(command),
        Command::Test(_) if test_cluster => Ok(command),
        Command::Internal(InternalCommand::RecordOutcome(sub)) if test_cluster => {
            Ok(TestCommand::RecordOutcome(sub).into())
        }
        Command::Internal(_) => Err((
            Refusal::InternalCommand,
            Status::permission_denied(format!(
                "{} is not a client command: only the leader's motion and exam drivers propose it (outcomes are decided from the seats' reveals; admission follows an exam scored in apply)",
                command.kind()
            )),
        )),
        Command::Test(_) => Err((
            Refusal::TestCommand,
            Status::permission_denied(format!(
                "{} is not a client command: it exists for test clusters only (a replica started with --test-commands)",
                command.kind()
            )),
        )),
    }
}

/// Refuses the client ids reserved for the replica's own drivers (their deduplication
/// keys).
fn client_may_use(client_id: &str) -> Result<(), (Refusal, Status)> {
    if is_internal_client_id(client_id) {
        return Err((
            Refusal::ReservedClientId,
            Status::permission_denied(format!(
                "client_id {client_id:?} is reserved for the replica's own drivers; choose another client id"
            )),
        ));
    }
    Ok(())
}

/// Whether this build can accept test commands at all (the `test-commands` feature).
pub(crate) const fn test_commands_built() -> bool {
    cfg!(feature = "test-commands")
}

/// The gRPC status of an intake refusal; a Gate refusal carries its violations as an
/// encoded `GateReport` in the status details.
fn intake_status(e: IntakeError) -> Status {
    match &e {
        IntakeError::Gate { violations, .. } => {
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
        IntakeError::RateLimited { .. } | IntakeError::Busy { .. } | IntakeError::Writer { .. } => {
            Status::resource_exhausted(e.to_string())
        }
    }
}

/// Every intake refusal names its fix (docs/REFUSALS.md): a case per `Refusal` reason, whose
/// message must name what resolves it, and docs/REFUSALS.md's "Intake refusals" table must
/// list exactly these reasons.
#[cfg(test)]
mod refusal_messages {
    use super::*;
    use crate::service::charter_adoption::{Standing, gate_of};

    fn write_req(client_id: &str, command: &Command) -> pb::WriteRequest {
        pb::WriteRequest {
            client_id: client_id.into(),
            request_id: 1,
            command_json: serde_json::to_string(command).expect("encode"),
            ..Default::default()
        }
    }

    fn refused(r: Result<Command, (Refusal, Status)>, want: Refusal) -> Status {
        match r {
            Err((why, status)) if why == want => status,
            Err((why, status)) => panic!("refused as {why:?}, not {want:?}: {status:?}"),
            Ok(c) => panic!("{c:?} was not refused"),
        }
    }

    /// The status a client gets for `r`, and what its message must name. Exhaustive: a
    /// new reason does not compile until it has a case.
    fn case(r: Refusal) -> (Status, &'static [&'static str]) {
        let note = Command::Test(TestCommand::Note {
            topic: "t".into(),
            text: "x".into(),
        });
        match r {
            Refusal::TooLarge => (too_large(9_000, 4_096), &["--max-command-bytes", "split"]),
            Refusal::Malformed => {
                let mut req = write_req("cli", &note);
                req.command_json = "{not json".into();
                (
                    refused(client_write(&req, false), r),
                    &["docs/coordinator/reads-and-writes.md"],
                )
            }
            Refusal::ReservedClientId => (
                refused(client_write(&write_req("motion-driver", &note), true), r),
                &["choose another client id"],
            ),
            Refusal::InternalCommand => {
                let internal = Command::Internal(InternalCommand::IssueCheckpoint);
                (
                    refused(client_write(&write_req("cli", &internal), false), r),
                    &["only the leader's motion and exam drivers propose it"],
                )
            }
            Refusal::TestCommand => (
                refused(client_write(&write_req("cli", &note), false), r),
                &["--test-commands"],
            ),
            Refusal::Unchartered => {
                let pending = gate_of(Standing::Pending).expect_err("pending is refused");
                assert!(pending.message().contains("retry"), "{pending:?}");
                (
                    gate_of(Standing::Differs).expect_err("differs is refused"),
                    &["panel coordinator run --charter FILE"],
                )
            }
            Refusal::NoQuorum => (
                no_quorum(&raft::QuorumError::NoQuorum {
                    id: 1,
                    term: 2,
                    age_ms: 900,
                    lease_ms: 600,
                }),
                &["retry the write (same request_id) on another replica"],
            ),
            Refusal::Gate => (
                intake_status(IntakeError::Gate {
                    report: "G1 in Assertion: write a full sentence".into(),
                    violations: vec![],
                }),
                &["submit again", "panel gate"],
            ),
            Refusal::RateLimited => {
                for e in [
                    IntakeError::RateLimited {
                        author: "ada".into(),
                        per_minute: 6,
                        burst: 2,
                        retry_ms: 500,
                    },
                    IntakeError::Busy {
                        what: "new debates",
                        who: "all writers".into(),
                        per_minute: 6,
                        burst: 2,
                        retry_ms: 500,
                    },
                ] {
                    let s = intake_status(e);
                    assert!(s.message().contains("retry in 500 ms"), "{s:?}");
                }
                (
                    intake_status(IntakeError::Writer {
                        limit: "per-identity",
                        who: "identity ab12".into(),
                        per_minute: 6,
                        burst: 2,
                        retry_secs: 3,
                    }),
                    &["retry in 3 s"],
                )
            }
            Refusal::BadRuling => (
                bad_ruling(
                    &panel_machine::rules::ruling::IntakeError::RulingMalformed {
                        index: 0,
                        error: panel_machine::rules::ruling::RulingError::Malformed {
                            reason: "odd length".into(),
                        },
                    },
                ),
                &["send the rulings and reveals exactly as the nodes signed them"],
            ),
        }
    }

    const ALL: [Refusal; 10] = [
        Refusal::TooLarge,
        Refusal::Malformed,
        Refusal::ReservedClientId,
        Refusal::InternalCommand,
        Refusal::TestCommand,
        Refusal::Unchartered,
        Refusal::NoQuorum,
        Refusal::Gate,
        Refusal::RateLimited,
        Refusal::BadRuling,
    ];

    /// The reasons `Refusal::label` spells, read from metrics.rs, so a reason added there
    /// without a case in `ALL` is caught too.
    fn labels_in_source() -> std::collections::BTreeSet<String> {
        let src = include_str!("metrics.rs");
        let body = src
            .split("fn label(self) -> &'static str {")
            .nth(1)
            .and_then(|b| b.split("\n    }\n").next())
            .expect("Refusal::label in metrics.rs");
        body.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    /// The codes of docs/REFUSALS.md's "Intake refusals" table.
    fn intake_rows() -> std::collections::BTreeSet<String> {
        let doc = include_str!("../../../docs/REFUSALS.md");
        let section = doc
            .split("\n## Intake refusals\n")
            .nth(1)
            .expect("docs/REFUSALS.md has an \"Intake refusals\" section");
        let section = section.split("\n## ").next().unwrap_or_default();
        section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_intake_refusal_names_its_fix() {
        let mut failures = Vec::new();
        for r in ALL {
            let (status, needles) = case(r);
            for n in needles {
                if !status.message().contains(n) {
                    failures.push(format!("{r:?}: {:?} does not name {n:?}", status.message()));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn the_intake_table_lists_every_reason_and_no_other() {
        let labels: std::collections::BTreeSet<String> =
            ALL.iter().map(|r| r.label().to_owned()).collect();
        assert_eq!(
            labels,
            labels_in_source(),
            "ALL here and Refusal::label differ"
        );
        assert_eq!(
            intake_rows(),
            labels,
            "docs/REFUSALS.md \"Intake refusals\" rows differ from the intake's reasons"
        );
    }
}
