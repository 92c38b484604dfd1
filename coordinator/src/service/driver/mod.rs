//! The motion driver: on the leader, every open debate motion is put to its drawn panel
//! as one logged round (docs/COORDINATOR.md "The commit-reveal round"): the commitments
//! received are logged after the commit window (`LogCommitments`), each committed seat's
//! reveal is collected and submitted (`SubmitReveal`, which the nodes also send
//! themselves), and `CloseMotion` lets apply decide from every stored reveal. `apply`
//! re-verifies everything and the driver names no ruling in the close, so it is trusted
//! with liveness only, never with acceptance or with choosing reveals.
//!
//! A seat is reached by a [`Route`]: the node's `ArbiterNode` gRPC service at its
//! registered endpoint, or, for an arbiter registered with the `link` endpoint marker, the
//! stream its node opened to this replica ([`crate::service::link`]). An arbiter without an open
//! link is warned about and simply does not commit, as an unreachable node does not.
//!
//! A new leader re-drives whatever is still open: nodes answer a repeated `Commit` with
//! the commitment they already made, and a motion whose round is logged resumes from the
//! stored commitments and reveals; each entry's request id is derived from the motion
//! id (and the round's digest), so each applies at most once.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crucible::motion::{Answer, Projection};
use ed25519_dalek::SigningKey;
use futures::StreamExt;
use panel_proto::pb;
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::round::{Clock, Round, RoundKind, Step, Window};
use panel_proto::{motion_digest, sign_motion};
use prost::Message;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tonic::transport::Channel;
use tracing::{Instrument, info, info_span, warn};

use crate::acceptance::MotionKind;
use crate::command::{ClientCommand, CommitmentLog, InternalCommand, Item, ItemReply};
use crate::model::{Motion, MotionStatus};
use crate::raft::{NodeId, Raft, StateMachineStore};
use crate::reply::{CloseReply, CommitmentsReply};
use crate::ruling::wire_kind;
use crate::runs::RunMotion;
use crate::service::link::{LinkError, LinkRegistry, is_link_endpoint};
use crate::service::motion_key::MotionKeys;
use crate::service::proposer::Proposer;
use panel_machine::exam_sitting::{Pools, SittingStep};
use panel_procedures::AnswerShape;

/// Timing of the commit-reveal rounds the driver runs.
///
/// Every replica must run with the same windows: a leader that takes over re-signs an open
/// motion with the deadlines derived from its window, and only the same window gives the
/// same signed motion (see `panel_proto::round::Window::for_round`).
#[derive(Debug, Clone)]
pub struct DriverOptions {
    /// How long arbiters have to commit; reveals start after it. The default for every
    /// motion kind without its own window in `commit_windows`.
    pub commit_window: Duration,
    /// Commit windows of particular motion kinds (`--commit-window KIND=MS`): slow judges
    /// (an LLM asked twice per pairwise merge, a retrieval before a tier verification) need
    /// more than fast ones (docs/JUDGES.md "Windows for slow judges").
    pub commit_windows: Vec<(MotionKind, Duration)>,
    /// How long after the commit window reveals are collected.
    pub reveal_window: Duration,
    /// How long an arbiter has to commit to all items of its calibration exam.
    pub exam_window: Duration,
    /// Exam items put to one arbiter's node at once; the node answers them within its own
    /// `max_concurrent_judgements`.
    pub exam_concurrency: usize,
    /// Simulation cluster: exam motions carry the gold answer as a truth hint for scripted
    /// judges. Never set this for real arbiters.
    pub simulation: bool,
    /// The exam pools this replica may seal (`exam_pools` in the config; without it the
    /// embedded public pool, reusable: demos and tests only). Every replica of a group
    /// needs the same pools, so whichever leads can reveal a sitting's key.
    pub exam_pools: Option<Arc<Pools>>,
}

/// Exam items sent to one node at once by default.
pub const DEFAULT_EXAM_CONCURRENCY: usize = 16;

impl Default for DriverOptions {
    fn default() -> Self {
        Self {
            commit_window: Duration::from_millis(400),
            commit_windows: Vec::new(),
            reveal_window: Duration::from_secs(5),
            exam_window: Duration::from_secs(20),
            exam_concurrency: DEFAULT_EXAM_CONCURRENCY,
            simulation: false,
            exam_pools: None,
        }
    }
}

impl DriverOptions {
    /// The commit window of a motion kind: its own, else the default.
    pub fn commit_window_for(&self, kind: MotionKind) -> Duration {
        self.commit_windows
            .iter()
            .rev()
            .find(|(k, _)| *k == kind)
            .map_or(self.commit_window, |(_, w)| *w)
    }
}

/// Motion kinds as `--commit-window` names them (the wire names, docs/WIRE.md).
pub const KIND_NAMES: [(&str, MotionKind); 8] = [
    ("merge", MotionKind::Merge),
    ("resolve-challenge", MotionKind::Challenge),
    ("verify-tier", MotionKind::TierVerification),
    ("assign-relevance", MotionKind::Relevance),
    ("certify-steelman", MotionKind::Steelman),
    ("advance-phase", MotionKind::Phase),
    ("admit-appeal", MotionKind::Appeal),
    ("procedure", MotionKind::Procedure),
];

/// Why a `KIND=MS` commit window is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindWindowError {
    #[error("{given:?} is not KIND=MS (e.g. merge=30000); kinds: {kinds}")]
    Shape { given: String, kinds: String },
    #[error("unknown motion kind {kind:?}; kinds: {kinds}")]
    UnknownKind { kind: String, kinds: String },
    #[error("{given:?}: the window must be whole milliseconds")]
    NotMilliseconds { given: String },
    #[error("{given:?}: a commit window must lie in 1..={MAX_WINDOW_MS} ms (one day)")]
    OutOfRange { given: String },
}

/// Parses `KIND=MS` (e.g. `verify-tier=90000`) as `--commit-window` takes it.
pub fn parse_kind_window(s: &str) -> Result<(MotionKind, Duration), KindWindowError> {
    let kinds = || {
        KIND_NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (kind, ms) = s.split_once('=').ok_or_else(|| KindWindowError::Shape {
        given: s.to_owned(),
        kinds: kinds(),
    })?;
    let kind = KIND_NAMES
        .iter()
        .find(|(n, _)| *n == kind.trim())
        .map(|(_, k)| *k)
        .ok_or_else(|| KindWindowError::UnknownKind {
            kind: kind.to_owned(),
            kinds: kinds(),
        })?;
    let ms: u64 = ms
        .trim()
        .parse()
        .map_err(|_| KindWindowError::NotMilliseconds {
            given: s.to_owned(),
        })?;
    if !(1..=MAX_WINDOW_MS).contains(&ms) {
        return Err(KindWindowError::OutOfRange {
            given: s.to_owned(),
        });
    }
    Ok((kind, Duration::from_millis(ms)))
}

/// Why one step of an exam or of a motion's round did not complete. The driver's loop
/// logs it and drives the exam or motion again on its next pass; nothing is lost, since
/// apply decides only from what is on the log.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("apply refused the exam answers ({code}): {message}")]
    ExamRefused { code: String, message: String },
    #[error("arbiter {0} is not registered")]
    UnknownArbiter(String),
    #[error("exam sitting {0} is no longer open; the arbiter is examined at the next")]
    SittingClosed(u32),
    #[error("the arbiter's registered key: {0}")]
    Key(#[from] panel_machine::ruling::RulingError),
    #[error(transparent)]
    Draw(#[from] panel_machine::exam_sitting::SittingError),
    #[error(transparent)]
    MotionKey(#[from] crate::service::motion_key::MotionKeyError),
    #[error("arbiter endpoint {endpoint:?}: {reason}")]
    Endpoint { endpoint: String, reason: String },
    #[error("the arbiter's node does not answer yet ({0}); the exam waits")]
    NodeNotReady(#[source] ReachError),
    #[error("the node committed to no exam item")]
    NoExamItem,
    #[error("motion {motion}: its state hash {state_hash:?} is not hex")]
    StateHash { motion: String, state_hash: String },
    #[error("the round's commitments were not logged; the motion is driven again")]
    RoundNotLogged,
    #[error("the close was refused as early 100 times; the motion is driven again")]
    CloseTooEarly,
    #[error("the round asked for {0:?}, which this kind of round never takes")]
    UnexpectedStep(Step),
    #[error(transparent)]
    Propose(#[from] crate::service::proposer::ProposeError),
}

/// Why a commitment a node returned is not proposed (apply would refuse it).
#[derive(Debug, thiserror::Error)]
enum CommitmentError {
    #[error(transparent)]
    Signature(#[from] panel_proto::CommitRevealError),
    #[error("signed by another key than the seat's")]
    OtherKey,
    #[error("made at {at} ms, after the commit deadline {deadline} ms")]
    Late { at: i64, deadline: i64 },
}

/// Longest window accepted (one day).
pub const MAX_WINDOW_MS: u64 = 24 * 3600 * 1000;

/// How long the driver waits at `now_ms` for a node's answer to a `Commit`: until the
/// commit deadline plus a grace for the reply to travel, never less than
/// [`MIN_REQUEST_WAIT`].
fn commit_wait(window: Window, now_ms: i64) -> Duration {
    let left = window.commit_left_ms(now_ms);
    Duration::from_millis(left.saturating_add(COMMIT_GRACE_MS)).max(MIN_REQUEST_WAIT)
}

/// Grace after a commit deadline for a commitment made at the deadline to arrive.
const COMMIT_GRACE_MS: u64 = 2_000;
/// The shortest wait for any request to a node (reveals, fast commits).
const MIN_REQUEST_WAIT: Duration = Duration::from_secs(30);

struct Shared {
    id: NodeId,
    raft: Raft,
    sm: StateMachineStore,
    proposer: Proposer,
    opts: DriverOptions,
    in_flight: Mutex<BTreeSet<String>>,
    clients: Mutex<HashMap<String, ArbiterNodeClient<Channel>>>,
    links: Arc<LinkRegistry>,
    /// Link arbiters already warned about for having no open link (warned once until
    /// they connect).
    unlinked: Mutex<BTreeSet<String>>,
    /// How the leader dials nodes: mutual TLS with this replica's certificate, which the
    /// node checks against the charter before it judges anything.
    transport: panel_transport::Transport,
    /// The motion keys this replica holds: every motion put to a node is signed with the
    /// one in force for it (docs/WIRE.md "Motion, layout v1"; a rotation changes it).
    motion_keys: Arc<MotionKeys>,
    /// The replica's clock (`crate::clock`), injected: every deadline the driver signs or
    /// waits for is read from it.
    clock: Arc<dyn Clock>,
    /// The pools the exam driver seals (the options', else the embedded one).
    pools: Arc<Pools>,
    /// Set once "every exam pool is spent" has been logged, until a pool is sealed again.
    no_pool_warned: std::sync::atomic::AtomicBool,
    /// Arbiters whose last exam attempt failed: how often in a row, and when the next may
    /// start. A node that cannot answer is tried again after 2, 4, 8 ... s, at most every
    /// [`EXAM_RETRY_MAX`], not on every pass.
    exam_backoff: Mutex<HashMap<String, (u32, tokio::time::Instant)>>,
    /// Seals and reveals apply refused (`seal:N`, `reveal:N`): never proposed again by this
    /// leader, since a pool file that differs between replicas would otherwise put its whole
    /// text on the log on every pass.
    refused_sitting_steps: Mutex<BTreeSet<String>>,
}

/// The longest wait between two exam attempts on a failing node.
const EXAM_RETRY_MAX: Duration = Duration::from_secs(600);

/// How the leader reaches one arbiter's node.
enum Route {
    /// The node serves `ArbiterNode` at its registered endpoint.
    Grpc(ArbiterNodeClient<Channel>),
    /// The node connected out; requests go over its link to this replica.
    Link {
        arbiter_id: String,
        links: Arc<LinkRegistry>,
    },
}

/// Why a seat gave no commitment or reveal.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("{}", .0.message())]
    Grpc(tonic::Status),
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl Route {
    /// Asks for a commitment, waiting `wait` for the node's judge (until the motion's
    /// commit deadline plus a grace, [`commit_wait`]), however long the window.
    async fn commit(
        &mut self,
        m: pb::Motion,
        wait: Duration,
    ) -> Result<pb::Commitment, ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(m);
                req.set_timeout(wait);
                c.commit(req)
                    .await
                    .map(|r| r.into_inner())
                    .map_err(ReachError::Grpc)
            }
            Route::Link { arbiter_id, links } => Ok(links.commit(arbiter_id, m, wait).await?),
        }
    }

    /// Whether the node answers at all (its `Identity`), before an exam spends the motion
    /// ids of its items on a node that is not listening yet. A link is ready once open.
    async fn ready(&mut self) -> Result<(), ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(pb::IdentityRequest {});
                req.set_timeout(Duration::from_secs(5));
                c.identity(req).await.map(|_| ()).map_err(ReachError::Grpc)
            }
            Route::Link { .. } => Ok(()),
        }
    }

    fn clone_route(&self) -> Route {
        match self {
            Route::Grpc(c) => Route::Grpc(c.clone()),
            Route::Link { arbiter_id, links } => Route::Link {
                arbiter_id: arbiter_id.clone(),
                links: links.clone(),
            },
        }
    }

    /// Asks for the reveal on the signed motion with `digest` (the node refuses if it
    /// committed on another motion under the same id).
    async fn reveal(
        &mut self,
        motion_id: &str,
        digest: &[u8; 32],
    ) -> Result<pb::Reveal, ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(pb::RevealRequest {
                    motion_id: motion_id.to_owned(),
                    motion_digest: digest.to_vec(),
                });
                req.set_timeout(MIN_REQUEST_WAIT);
                c.reveal(req)
                    .await
                    .map(|r| r.into_inner())
                    .map_err(ReachError::Grpc)
            }
            Route::Link { arbiter_id, links } => {
                Ok(links.reveal(arbiter_id, motion_id, digest).await?)
            }
        }
    }
}

/// Starts the driver loop on this replica; it acts only while this replica leads.
/// `links` holds the arbiter links open to this replica (served by [`crate::service::link`]).
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    id: NodeId,
    raft: Raft,
    sm: StateMachineStore,
    proposer: Proposer,
    opts: DriverOptions,
    links: Arc<LinkRegistry>,
    transport: panel_transport::Transport,
    motion_keys: Arc<MotionKeys>,
    clock: Arc<dyn Clock>,
) {
    let pools = opts.exam_pools.clone().unwrap_or_else(|| {
        Arc::new(Pools::embedded().unwrap_or_else(|e| {
            tracing::error!("the embedded exam pool does not load ({e}): no exam can be sealed");
            Pools {
                pools: Vec::new(),
                reusable: false,
            }
        }))
    });
    let shared = Arc::new(Shared {
        pools,
        no_pool_warned: std::sync::atomic::AtomicBool::new(false),
        exam_backoff: Mutex::new(HashMap::new()),
        refused_sitting_steps: Mutex::new(BTreeSet::new()),
        clock,
        transport,
        id,
        raft,
        sm,
        proposer,
        opts,
        in_flight: Mutex::new(BTreeSet::new()),
        clients: Mutex::new(HashMap::new()),
        links,
        unlinked: Mutex::new(BTreeSet::new()),
        motion_keys,
    });
    tokio::spawn(async move {
        let mut events = shared.sm.subscribe();
        loop {
            // Wake on any applied entry, or every 200 ms to retry stalled motions; one pass
            // serves every event that arrived meanwhile.
            let _ = tokio::time::timeout(Duration::from_millis(200), events.recv()).await;
            while events.try_recv().is_ok() {}
            if shared.raft.metrics().borrow().current_leader != Some(shared.id) {
                continue;
            }
            drive_sittings(&shared);
            for (motion, endpoints) in open_motions(&shared) {
                let fresh = shared
                    .in_flight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(motion.spec.motion_id.clone());
                if fresh {
                    let s = shared.clone();
                    let span = info_span!("motion", motion = %motion.spec.motion_id, debate = %motion.spec.debate_id);
                    tokio::spawn(
                        async move {
                            let id = motion.spec.motion_id.clone();
                            if let Err(e) = drive(&s, motion, endpoints).await {
                                warn!("motion not completed: {e}");
                            }
                            s.in_flight
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .remove(&id);
                        }
                        .instrument(span),
                    );
                }
            }
        }
    });
}

impl Shared {
    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Sleeps until `until_ms` on the replica's clock (a few ms past it, so the batch
    /// the next step proposes is stamped inside the new phase).
    async fn sleep_until(&self, until_ms: i64) {
        let left = until_ms.saturating_sub(self.now_ms());
        if left > 0 {
            tokio::time::sleep(Duration::from_millis(left as u64 + 5)).await;
        }
    }

    /// The held motion key in force for a motion opened at `opened_log_index` (the
    /// current key for exams: `u64::MAX`), as the record says.
    fn motion_key_for(&self, opened_log_index: u64) -> Result<&SigningKey, DriveError> {
        let in_force = self
            .sm
            .read(|a| panel_machine::charter::motion_key_at(&a.state, opened_log_index));
        Ok(self.motion_keys.for_key(in_force.as_ref())?)
    }
}

/// The in-flight key of the sitting task (a seal or a reveal being proposed).
const SITTING_TASK: &str = "exam-sitting";

/// One pass of the sealed exam sittings (`panel_machine::exam_sitting`): seal a pool when
/// arbiters are due and none is open, examine the due arbiters in the open sitting, or
/// reveal its key once the held exams are in. The decision is the machine's
/// [`next_step`](panel_machine::exam_sitting::next_step); this only carries it out.
fn drive_sittings(s: &Arc<Shared>) {
    let in_flight = |key: &str| {
        s.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    };
    if in_flight(SITTING_TASK) {
        return;
    }
    let now = s.now_ms().max(0) as u64;
    let due = awaiting_exam(s, now);
    let exams_in_flight = s
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .any(|k| k.starts_with("exam:"));
    // A held exam waits at most this long for the others before the key is revealed.
    let patience =
        (s.opts.exam_window + s.opts.reveal_window + Duration::from_secs(30)).as_millis() as u64;
    let step = s.sm.read(|a| {
        panel_machine::exam_sitting::next_step(
            &a.state,
            &s.pools,
            !due.is_empty(),
            exams_in_flight,
            now,
            patience,
        )
    });
    match step {
        SittingStep::Idle => {}
        SittingStep::NoPool => {
            if !s
                .no_pool_warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                warn!(
                    waiting = due.len(),
                    "every exam pool is spent: add a fresh pool to exam_pools on every replica (docs/COORDINATOR.md \"Sealed exams\")"
                );
            }
        }
        SittingStep::Seal { number, pool } => {
            s.no_pool_warned
                .store(false, std::sync::atomic::Ordering::Relaxed);
            let command = InternalCommand::SealExamPool(Box::new(pool));
            spawn_sitting_task(s, format!("seal:{number}"), command);
        }
        SittingStep::Reveal(reveal) => {
            let request = format!("reveal:{}", reveal.sitting);
            spawn_sitting_task(s, request, InternalCommand::RevealExamKey(Box::new(reveal)));
        }
        SittingStep::Examine(number) => {
            for (arbiter_id, endpoint) in due {
                spawn_exam(s, arbiter_id, endpoint, number);
            }
        }
    }
}

/// Proposes a seal or a reveal under a request id derived from `request`, so a new
/// leader repeating it applies it at most once.
fn spawn_sitting_task(s: &Arc<Shared>, request: String, command: InternalCommand) {
    let refused_before = s
        .refused_sitting_steps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&request);
    if refused_before {
        return;
    }
    s.in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(SITTING_TASK.to_owned());
    let s = s.clone();
    let span = info_span!("exam_sitting", step = %request);
    tokio::spawn(
        async move {
            let bytes = serde_json::to_vec(&command).map_or(0, |b| b.len());
            let item = Item {
                client_id: "exam-driver".into(),
                request_id: leading_u64(&Sha256::digest(request.as_bytes())),
                command: command.into(),
                writer: None,
            };
            match s.proposer.submit(item, bytes).await {
                Ok(out) => match &out.reply {
                    ItemReply::Refused { code, message } => {
                        tracing::error!(
                            %code,
                            "exam sitting step refused, not proposed again by this leader: {message}; check that every replica holds the same exam_pools"
                        );
                        s.refused_sitting_steps
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(request.clone());
                    }
                    _ => info!(log_index = out.log_index, "exam sitting step applied"),
                },
                Err(e) => warn!("exam sitting step not proposed: {e}"),
            }
            s.in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(SITTING_TASK);
        }
        .instrument(span),
    );
}

/// Examines one due arbiter in sitting `number`, unless its exam is already in flight.
fn spawn_exam(s: &Arc<Shared>, arbiter_id: String, endpoint: String, number: u32) {
    if is_link_endpoint(&endpoint) && !s.linked(&arbiter_id) {
        return;
    }
    let backing_off = s
        .exam_backoff
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&arbiter_id)
        .is_some_and(|(_, next)| tokio::time::Instant::now() < *next);
    if backing_off {
        return;
    }
    let key = format!("exam:{arbiter_id}");
    let fresh = s
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key.clone());
    if !fresh {
        return;
    }
    let s = s.clone();
    let span = info_span!("exam", arbiter = %arbiter_id, sitting = number);
    tokio::spawn(
        async move {
            let outcome = administer_exam(&s, &arbiter_id, &endpoint, number).await;
            {
                let mut backoff = s
                    .exam_backoff
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                match outcome {
                    Ok(()) => {
                        backoff.remove(&arbiter_id);
                    }
                    Err(e) => {
                        let failures = backoff.get(&arbiter_id).map_or(0, |(n, _)| *n) + 1;
                        let wait =
                            Duration::from_secs(1 << (failures - 1).min(10)).min(EXAM_RETRY_MAX);
                        warn!(
                            failures,
                            retry_in_s = wait.as_secs(),
                            "exam not completed: {e}"
                        );
                        let next = tokio::time::Instant::now() + wait;
                        backoff.insert(arbiter_id.clone(), (failures, next));
                    }
                }
            }
            s.in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
        .instrument(span),
    );
}

/// Registered arbiters with a node endpoint that are due an exam
/// ([`exam_due`](panel_machine::exam_sitting::exam_due)) and have none held in the open
/// sitting.
fn awaiting_exam(s: &Shared, now_ms: u64) -> Vec<(String, String)> {
    s.sm.read(|a| {
        let open = panel_machine::exam_sitting::open_sitting(&a.state);
        a.state
            .arbiters
            .iter()
            .filter(|(id, arb)| {
                !arb.registration.endpoint.is_empty()
                    && panel_machine::exam_sitting::exam_due(arb, now_ms).is_ok()
                    && !open.is_some_and(|o| o.held.contains_key(id.as_str()))
            })
            .map(|(id, arb)| (id.clone(), arb.registration.endpoint.clone()))
            .collect()
    })
}

/// What one arbiter is asked in a sitting: the signed-to-be motions in asking order.
fn exam_sheet(
    s: &Shared,
    arbiter_id: &str,
    number: u32,
    window: Window,
) -> Result<Vec<pb::Motion>, DriveError> {
    s.sm.read(|a| {
        let open = panel_machine::exam_sitting::open_sitting(&a.state)
            .filter(|o| o.number == number)
            .ok_or(DriveError::SittingClosed(number))?;
        let arbiter = a
            .state
            .arbiters
            .get(arbiter_id)
            .ok_or_else(|| DriveError::UnknownArbiter(arbiter_id.to_owned()))?;
        let key =
            panel_machine::ruling::parse_public_key(arbiter_id, &arbiter.registration.public_key)?;
        let asked = open.asked(arbiter_id, &key)?;
        let pool = s.pools.for_sitting(open);
        Ok(asked
            .iter()
            .filter_map(|id| open.public.item(id))
            .map(|item| {
                // Scripted judges in a simulation get the gold as a hint.
                let hint = pool
                    .filter(|_| s.opts.simulation)
                    .and_then(|p| p.exam.item(&item.id))
                    .map(|i| crate::admission::expected_answer(&i.gold));
                let deadlines = (window.commit_deadline_ms, window.reveal_deadline_ms);
                open.motion(arbiter_id, item, deadlines, hint)
            })
            .collect())
    })
}

/// Puts the arbiter's draw of the open sitting to its node (commit, then reveal after the
/// window) and proposes the answers, which apply holds until the key is revealed. The
/// round's schedule is [`Round`]'s ([`RoundKind::Exam`]); this function only does what it
/// says.
async fn administer_exam(
    s: &Arc<Shared>,
    arbiter_id: &str,
    endpoint: &str,
    number: u32,
) -> Result<(), DriveError> {
    let mut c = s.route(arbiter_id, endpoint).await?;
    c.ready().await.map_err(DriveError::NodeNotReady)?;
    let motion_key = s.motion_key_for(u64::MAX)?;
    let window = Window::starting(
        s.now_ms(),
        s.opts.exam_window.as_millis() as i64,
        s.opts.reveal_window.as_millis() as i64,
    );
    let sheet = exam_sheet(s, arbiter_id, number, window)?;
    let asked = sheet.len();
    let mut round = Round::new(RoundKind::Exam, window);
    let mut committed: Vec<pb::Motion> = Vec::new();
    let mut answers = ExamAnswers::default();
    let mut sheet = Some(sheet);
    loop {
        match round.poll(s.now_ms()) {
            Step::AskCommitments => {
                let motions = sheet
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    // Signed like debate motions: the node refuses anything else.
                    .map(|m| sign_motion(motion_key, m))
                    .collect();
                committed = commit_exam_items(s, &c, motions, window).await;
                if committed.is_empty() {
                    return Err(DriveError::NoExamItem);
                }
                round.on_commitments();
            }
            Step::WaitUntil(t) => s.sleep_until(t).await,
            Step::AskReveals => {
                answers = reveal_exam_items(&c, &committed).await;
                round.on_reveals(s.now_ms(), 0);
            }
            Step::Finish => {
                if answers.reveals.len() < asked {
                    warn!(
                        answered = answers.reveals.len(),
                        items = asked,
                        "exam submitted with unanswered items (scored as missing)"
                    );
                }
                submit_exam(s, arbiter_id, number, std::mem::take(&mut answers)).await?;
                round.on_finished();
            }
            Step::Done => return Ok(()),
            step @ (Step::LogCommitments | Step::Recheck) => {
                return Err(DriveError::UnexpectedStep(step));
            }
        }
    }
}

/// The revealed answers of an exam and the signed motions they answer, hex-encoded as
/// `SubmitExam` carries them.
#[derive(Default)]
struct ExamAnswers {
    reveals: Vec<String>,
    motions: Vec<String>,
}

/// Items go to the node together (at most `exam_concurrency` in flight); the node judges
/// them within its own limit. An item the node could not answer in the window is left
/// out (scored as missing) rather than sinking the exam: its motion id is spent, since
/// the node refuses a second motion under it. Returns the committed items.
async fn commit_exam_items(
    s: &Shared,
    c: &Route,
    motions: Vec<pb::Motion>,
    window: Window,
) -> Vec<pb::Motion> {
    let limit = s.opts.exam_concurrency.max(1);
    let mut todo = motions.into_iter();
    let mut in_flight = futures::stream::FuturesUnordered::new();
    let mut committed = Vec::new();
    loop {
        while in_flight.len() < limit {
            let Some(m) = todo.next() else { break };
            let mut route = c.clone_route();
            let wait = commit_wait(window, s.now_ms());
            let span = info_span!("exam_item", motion = %m.motion_id);
            in_flight.push(
                async move {
                    let r = route.commit(m.clone(), wait).await;
                    (m, r)
                }
                .instrument(span),
            );
        }
        match in_flight.next().await {
            Some((m, Ok(_))) => committed.push(m),
            Some((m, Err(e))) => warn!(motion = %m.motion_id, "exam item not committed: {e}"),
            None => return committed,
        }
    }
}

/// Asks the node for the reveal of every committed item.
async fn reveal_exam_items(c: &Route, committed: &[pb::Motion]) -> ExamAnswers {
    let mut answers = ExamAnswers::default();
    let mut route = c.clone_route();
    for m in committed {
        match route
            .reveal(&m.motion_id, &motion_digest(m))
            .instrument(info_span!("exam_item", motion = %m.motion_id))
            .await
        {
            Ok(r) => {
                answers.reveals.push(hex::encode(r.encode_to_vec()));
                // Apply checks each answer against the motion it answers (`rules.rs`).
                answers
                    .motions
                    .push(panel_machine::signed_motion::encode(m));
            }
            Err(e) => warn!(motion = %m.motion_id, "exam item not revealed: {e}"),
        }
    }
    answers
}

/// Proposes the exam's answers for scoring in apply (`SubmitExam`).
async fn submit_exam(
    s: &Shared,
    arbiter_id: &str,
    number: u32,
    answers: ExamAnswers,
) -> Result<(), DriveError> {
    let bytes = answers
        .reveals
        .iter()
        .chain(&answers.motions)
        .map(String::len)
        .sum();
    let out = s
        .proposer
        .submit(
            Item {
                client_id: "exam-driver".into(),
                request_id: exam_request_id(arbiter_id, number),
                command: InternalCommand::SubmitExam {
                    arbiter_id: arbiter_id.to_string(),
                    reveals: answers.reveals,
                    motions: answers.motions,
                    sitting: Some(number),
                }
                .into(),
                writer: None,
            },
            bytes,
        )
        .await?;
    match out.reply {
        ItemReply::Refused { code, message } => Err(DriveError::ExamRefused { code, message }),
        _ => {
            info!(
                log_index = out.log_index,
                "exam answers held for the sitting's reveal"
            );
            Ok(())
        }
    }
}

/// Where a seat's node is reached, and its raw public key.
struct SeatAddress {
    arbiter_id: String,
    /// The registered endpoint: a node URL, the link marker, or empty (no node).
    endpoint: String,
    key: Vec<u8>,
}

/// Open debate motions with the endpoint and key of every seat.
fn open_motions(s: &Shared) -> Vec<(Motion, Vec<SeatAddress>)> {
    s.sm.read(|a| {
        // Every open debate motion is listed in its debate's `open` map: walking those is
        // O(open motions), where walking `motions` would cost O(all motions ever) on every
        // applied entry.
        let debates = a
            .state
            .debates
            .iter()
            .flat_map(|(_, rec)| rec.open.values());
        let runs = a.state.runs.iter().flat_map(|(_, rec)| rec.open.values());
        debates
            .chain(runs)
            .filter_map(|id| a.state.motions.get(id))
            .filter(|m| m.status == MotionStatus::Open && m.spec.asks_a_question())
            .map(|m| {
                let seats = m
                    .seats
                    .iter()
                    .filter_map(|seat| a.state.arbiters.get(&seat.arbiter_id))
                    .map(|arb| SeatAddress {
                        arbiter_id: arb.registration.arbiter_id.clone(),
                        endpoint: arb.registration.endpoint.clone(),
                        key: hex::decode(&arb.registration.public_key).unwrap_or_default(),
                    })
                    .collect();
                (m.clone(), seats)
            })
            .collect()
    })
}

fn wire_side(side: Option<crucible::Side>) -> i32 {
    match side {
        Some(crucible::Side::A) => pb::Side::A as i32,
        Some(crucible::Side::B) => pb::Side::B as i32,
        None => pb::Side::None as i32,
    }
}

fn tier_number(tier: &str) -> u32 {
    tier.strip_prefix('T')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The projection as the wire carries it.
pub fn wire_projection(
    p: &Projection,
    kind: MotionKind,
    expected: Option<Answer>,
) -> pb::ContentProjection {
    let items = p
        .items
        .iter()
        .map(|i| pb::ProjectionItem {
            label: i.label.clone(),
            text: i.text.clone(),
            side: wire_side(i.side),
            citations: i
                .citations
                .iter()
                .map(|c| pb::Citation {
                    source: c.source.clone(),
                    url: c.url.clone(),
                    claimed_tier: tier_number(&c.tier),
                    quote: String::new(),
                })
                .collect(),
        })
        .collect();
    let expected = expected.map(|a| {
        let (yes, no) = panel_proto::ruling_check::binary_pair(wire_kind(kind))
            .unwrap_or((pb::Decision::Accept, pb::Decision::Reject));
        match a {
            Answer::Yes => pb::ExpectedAnswer {
                decision: yes as i32,
                ..Default::default()
            },
            Answer::No => pb::ExpectedAnswer {
                decision: no as i32,
                ..Default::default()
            },
            Answer::Relevance(r) => pb::ExpectedAnswer {
                decision: pb::Decision::None as i32,
                relevance: Some(crate::debates::relevance_step(r) as u32),
                ..Default::default()
            },
        }
    });
    pb::ContentProjection {
        question: p.question.clone(),
        affirmative_favours: wire_side(affirmative_favours(p, kind)),
        items,
        resolution: p.resolution.clone(),
        expected,
        ..Default::default()
    }
}

/// The side a yes helps (docs/WIRE.md "Motion, layout v1", `affirmative_favours`):
/// merging or verifying a claim helps the claim's side, upholding a challenge helps the
/// challenger's; other questions help neither. A judge that leans to a side, or a reader
/// checking for bias, needs to know which way a yes cuts.
fn affirmative_favours(p: &Projection, kind: MotionKind) -> Option<crucible::Side> {
    match kind {
        MotionKind::Merge | MotionKind::TierVerification => p.items.iter().find_map(|i| i.side),
        MotionKind::Challenge => p
            .items
            .iter()
            .find(|i| i.label.starts_with("Challenge"))
            .and_then(|i| i.side),
        _ => None,
    }
}

/// A procedure motion's question on the wire: the run, the key, the answer shape, the
/// presentation seed (the logged draw seed, docs/PROCEDURES.md "Presentation order") and,
/// in simulation runs, the scripted answer.
fn procedure_projection(p: &mut pb::ContentProjection, q: &RunMotion, draw_seed: u64) {
    p.procedure = Some(pb::ProcedureQuestion {
        run_id: q.run_id.clone(),
        key: q.key.clone(),
        answer_shape: match q.shape {
            AnswerShape::YesNo => 0,
            AnswerShape::CruxReport => 1,
        },
        shuffle_items: q.shuffle_items,
        presentation_seed: draw_seed,
        expected_rationale: q
            .expected
            .as_ref()
            .map(|e| e.rationale.clone())
            .unwrap_or_default(),
    });
    if let Some(e) = &q.expected {
        let decision = if e.yes {
            pb::Decision::Accept
        } else {
            pb::Decision::Reject
        };
        p.expected = Some(pb::ExpectedAnswer {
            decision: decision as i32,
            ..Default::default()
        });
    }
}

impl Shared {
    /// Whether a link arbiter has an open link here; warns once while it has none.
    fn linked(&self, arbiter_id: &str) -> bool {
        let mut unlinked = self.unlinked.lock().unwrap_or_else(PoisonError::into_inner);
        if self.links.is_connected(arbiter_id) {
            unlinked.remove(arbiter_id);
            return true;
        }
        if unlinked.insert(arbiter_id.to_owned()) {
            warn!(
                arbiter = %arbiter_id,
                "link arbiter has no open link to this replica; it takes no exam and commits \
                 on no motion until its node connects (`panel node run --connect`)"
            );
        }
        false
    }

    /// How to reach the arbiter: over its link for the link marker, else over gRPC.
    async fn route(&self, arbiter_id: &str, endpoint: &str) -> Result<Route, DriveError> {
        if is_link_endpoint(endpoint) {
            return Ok(Route::Link {
                arbiter_id: arbiter_id.to_owned(),
                links: self.links.clone(),
            });
        }
        self.client(endpoint).await.map(Route::Grpc)
    }

    async fn client(&self, endpoint: &str) -> Result<ArbiterNodeClient<Channel>, DriveError> {
        if let Some(c) = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(endpoint)
        {
            return Ok(c.clone());
        }
        // Any member's certificate: the state does not know an arbiter's node certificate
        // to pin (the motion is signed, and so is every commitment and reveal that counts).
        let ep = self
            .transport
            .endpoint_pinned(endpoint, panel_transport::Peer::AnyMember)
            .map_err(|e| DriveError::Endpoint {
                endpoint: endpoint.to_owned(),
                reason: e.to_string(),
            })?
            // No channel-wide cap: each request carries its own timeout (a commit waits for
            // the motion's commit window, however long; `commit_wait`).
            .connect_timeout(Duration::from_secs(10));
        let c = ArbiterNodeClient::new(ep.connect_lazy());
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(endpoint.to_string(), c.clone());
        Ok(c)
    }
}

/// Drives one debate motion through its logged round (docs/COORDINATOR.md "The
/// commit-reveal round"): put the signed motion to the seats and log every commitment
/// received once the commit window closes; ask each committed seat for its reveal and
/// submit it (the nodes submit their own too); close once every logged commitment is
/// revealed or the reveal deadline passed. The schedule is [`Round`]'s
/// ([`RoundKind::Logged`]); apply decides from what is stored, so the driver chooses
/// nothing, and a new leader resumes from the logged round.
async fn drive(s: &Arc<Shared>, motion: Motion, seats: Vec<SeatAddress>) -> Result<(), DriveError> {
    let motion_id = motion.spec.motion_id.clone();
    let mut round = match logged_round(s, &motion_id) {
        Some(r) => Round::resumed(r.window, r.awaiting.len()),
        None => Round::new(
            RoundKind::Logged,
            Window::for_round(
                motion.opened_at_ms,
                s.now_ms(),
                s.opts.commit_window_for(motion.spec.kind).as_millis() as i64,
                s.opts.reveal_window.as_millis() as i64,
            ),
        ),
    };
    let mut collected = None;
    let mut close_attempts = 0u32;
    loop {
        match round.poll(s.now_ms()) {
            Step::AskCommitments => {
                collected = Some(ask_commitments(s, &motion, &seats, round.window()).await?);
                round.on_commitments();
            }
            Step::WaitUntil(t) => s.sleep_until(t).await,
            Step::LogCommitments => {
                if let Some(c) = collected.take() {
                    log_commitments(s, c).await?;
                }
                // The round on the record may be another leader's: follow that one.
                let logged = logged_round(s, &motion_id).ok_or(DriveError::RoundNotLogged)?;
                round = Round::resumed(logged.window, logged.awaiting.len());
            }
            Step::AskReveals => {
                let logged = logged_round(s, &motion_id).ok_or(DriveError::RoundNotLogged)?;
                ask_reveals(s, &motion_id, &seats, &logged).await?;
                round.on_reveals(s.now_ms(), awaiting(s, &motion_id));
            }
            Step::Recheck if is_open(s, &motion_id) => {
                round.on_reveals(s.now_ms(), awaiting(s, &motion_id));
            }
            Step::Recheck => round.on_finished(),
            Step::Finish => {
                if !is_open(s, &motion_id) {
                    round.on_finished();
                    continue;
                }
                if closings_paused(s) {
                    // Held by a circuit breaker: propose nothing until it is lifted (a
                    // refused close would be one more log entry per try).
                    tokio::time::sleep(PAUSED_RECHECK).await;
                    continue;
                }
                match close(s, &motion_id, close_attempts).await? {
                    Close::TooEarly if close_attempts >= 99 => {
                        return Err(DriveError::CloseTooEarly);
                    }
                    Close::TooEarly => {
                        close_attempts += 1;
                        round.on_too_early(s.now_ms());
                    }
                    Close::Done => round.on_finished(),
                }
            }
            Step::Done => return Ok(()),
        }
    }
}

/// The signed motion of a fresh round and the commitments its seats returned.
struct Collected {
    wire: pb::Motion,
    digest: [u8; 32],
    commitments: Vec<String>,
}

/// The commit step of a fresh round: sign the motion under the round's window and
/// collect the seats' commitments, each checked as apply will check it.
async fn ask_commitments(
    s: &Arc<Shared>,
    motion: &Motion,
    seats: &[SeatAddress],
    window: Window,
) -> Result<Collected, DriveError> {
    let spec = &motion.spec;
    let mut projection = spec
        .projection
        .as_ref()
        .map(|p| wire_projection(p, spec.kind, spec.expected))
        .unwrap_or_default();
    if let Some(q) = &spec.procedure {
        procedure_projection(&mut projection, q, motion.draw_seed);
    }
    let wire = pb::Motion {
        motion_id: spec.motion_id.clone(),
        debate_id: spec.debate_id.clone(),
        kind: wire_kind(spec.kind) as i32,
        state_hash: hex::decode(&spec.state_hash).map_err(|_| DriveError::StateHash {
            motion: spec.motion_id.clone(),
            state_hash: spec.state_hash.clone(),
        })?,
        projection: Some(projection),
        commit_deadline_unix_ms: window.commit_deadline_ms,
        reveal_deadline_unix_ms: window.reveal_deadline_ms,
        // A link node cannot be called, so peers get no endpoint to deliver to.
        panel: seats
            .iter()
            .map(|seat| pb::PanelSeat {
                public_key: seat.key.clone(),
                endpoint: if is_link_endpoint(&seat.endpoint) {
                    String::new()
                } else {
                    seat.endpoint.clone()
                },
            })
            .collect(),
        signer_key: Vec::new(),
        signature: Vec::new(),
    };
    // Signed over every field (docs/WIRE.md "Motion, layout v1"): nodes verify before
    // judging, and each ruling binds this digest (envelope v2).
    let wire = sign_motion(s.motion_key_for(motion.opened_log_index)?, wire);
    let digest = motion_digest(&wire);
    // Commit: every seat judges without seeing anyone else's ruling.
    let mut commits = Vec::new();
    for seat in seats.iter().filter(|seat| !seat.endpoint.is_empty()) {
        if is_link_endpoint(&seat.endpoint) && !s.linked(&seat.arbiter_id) {
            continue;
        }
        let mut route = s.route(&seat.arbiter_id, &seat.endpoint).await?;
        let m = wire.clone();
        let wait = commit_wait(window, s.now_ms());
        let arbiter_id = seat.arbiter_id.clone();
        let key = seat.key.clone();
        let span = info_span!("seat", arbiter = %arbiter_id);
        commits.push(tokio::spawn(
            async move {
                let r = route.commit(m, wait).await;
                (arbiter_id, key, r)
            }
            .instrument(span),
        ));
    }
    let mut commitments = Vec::new();
    for h in commits {
        match h.await {
            // Checked as apply will check it, so one bad commitment cannot sink the log.
            Ok((arbiter, key, Ok(c))) => match usable_commitment(&c, &key, window, s.sm.memo()) {
                Ok(()) => commitments.push(hex::encode(c.encode_to_vec())),
                Err(e) => warn!(%arbiter, "commitment refused by the driver: {e}"),
            },
            Ok((arbiter, _, Err(e))) => warn!(%arbiter, "no commitment: {e}"),
            Err(e) => warn!("commit task failed: {e}"),
        }
    }
    Ok(Collected {
        wire,
        digest,
        commitments,
    })
}

/// Proposes the signed motion with the collected commitments as one `LogCommitments`.
async fn log_commitments(s: &Shared, c: Collected) -> Result<(), DriveError> {
    let motion_id = c.wire.motion_id.clone();
    let bytes = c.commitments.iter().map(String::len).sum();
    let item = Item {
        client_id: "motion-driver".into(),
        request_id: request_id(&["log", &motion_id, &hex::encode(c.digest)]),
        command: InternalCommand::LogCommitments(CommitmentLog {
            motion_id,
            motion: crate::signed_motion::encode(&c.wire),
            commitments: c.commitments,
        })
        .into(),
        writer: None,
    };
    let out = s.proposer.submit(item, bytes).await?;
    match &out.reply {
        // Another leader's round may be logged already; the caller reads what is.
        ItemReply::Refused { code, message } => warn!(%code, "commitments refused: {message}"),
        ItemReply::Applied(v) => match CommitmentsReply::deserialize(v) {
            Ok(r) => info!(
                log_index = out.log_index,
                committed = ?r.committed,
                not_committed = ?r.not_committed,
                "commitments logged"
            ),
            Err(e) => warn!(
                log_index = out.log_index,
                "commitments logged; reply unreadable: {e}"
            ),
        },
    }
    Ok(())
}

/// Asks every committed seat whose reveal is not stored yet for its reveal, and submits
/// each one received.
async fn ask_reveals(
    s: &Arc<Shared>,
    motion_id: &str,
    seats: &[SeatAddress],
    round: &LoggedRound,
) -> Result<(), DriveError> {
    let digest = round.digest;
    let mut submits = Vec::new();
    for seat in seats
        .iter()
        .filter(|seat| round.awaiting.contains(&seat.arbiter_id))
    {
        if seat.endpoint.is_empty()
            || (is_link_endpoint(&seat.endpoint) && !s.linked(&seat.arbiter_id))
        {
            continue;
        }
        let mut route = s.route(&seat.arbiter_id, &seat.endpoint).await?;
        let s = s.clone();
        let motion_id = motion_id.to_owned();
        let arbiter = seat.arbiter_id.clone();
        let span = info_span!("seat", arbiter = %arbiter);
        submits.push(tokio::spawn(
            async move {
                match route.reveal(&motion_id, &digest).await {
                    Ok(r) => match crate::ruling::reveal_parts(r)
                        .and_then(|p| bound_to(p, &motion_id, &digest))
                    {
                        Ok(parts) => submit_reveal(&s, &motion_id, &arbiter, &digest, parts).await,
                        Err(e) => warn!("reveal refused by the driver: {e}"),
                    },
                    Err(e) => warn!("no reveal: {e}"),
                }
            }
            .instrument(span),
        ));
    }
    for h in submits {
        if let Err(e) = h.await {
            warn!("reveal task failed: {e}");
        }
    }
    Ok(())
}

/// The commitment as apply checks it: signed by the seat's key, by the commit deadline.
/// Verified through the state machine's memo, which apply then finds it in.
fn usable_commitment(
    c: &pb::Commitment,
    seat_key: &[u8],
    window: Window,
    memo: &panel_proto::VerifiedMemo,
) -> Result<(), CommitmentError> {
    let key = panel_proto::commit_reveal::verify_commitment(c, memo)?;
    if key.as_bytes().as_slice() != seat_key {
        return Err(CommitmentError::OtherKey);
    }
    if window
        .check_commit(&c.motion_id, c.committed_at_unix_ms)
        .is_err()
    {
        return Err(CommitmentError::Late {
            at: c.committed_at_unix_ms,
            deadline: window.commit_deadline_ms,
        });
    }
    Ok(())
}

/// What the driver needs of a logged round.
struct LoggedRound {
    digest: [u8; 32],
    window: Window,
    /// Seats with a logged commitment and no stored reveal.
    awaiting: BTreeSet<String>,
}

fn logged_round(s: &Shared, motion_id: &str) -> Option<LoggedRound> {
    s.sm.read(|a| {
        // A logged round awaiting reveals is open, so held (`motion_table`).
        let round = a.state.motions.held(motion_id)?.round.as_ref()?;
        let mut digest = [0u8; 32];
        hex::decode_to_slice(&round.motion_digest, &mut digest).ok()?;
        Some(LoggedRound {
            digest,
            window: round.window(),
            awaiting: round
                .commitments
                .iter()
                .filter(|(_, c)| c.reveal.is_none())
                .map(|(id, _)| id.clone())
                .collect(),
        })
    })
}

/// Submits one collected reveal as any party would (`SubmitReveal`); a reveal the node
/// already submitted itself is refused as a duplicate and changes nothing.
async fn submit_reveal(
    s: &Shared,
    motion_id: &str,
    arbiter: &str,
    digest: &[u8; 32],
    parts: crate::ruling::RevealParts,
) {
    let reveal = parts.encode();
    let bytes = reveal.len();
    let item = Item {
        client_id: "motion-driver".into(),
        request_id: request_id(&["reveal", motion_id, arbiter, &hex::encode(digest)]),
        command: ClientCommand::SubmitReveal {
            motion_id: motion_id.to_owned(),
            reveal,
        }
        .into(),
        writer: None,
    };
    match s.proposer.submit(item, bytes).await {
        Ok(out) => match &out.reply {
            ItemReply::Refused { code, .. } if code == "already_revealed" => {
                info!("reveal already stored (the node submitted it)")
            }
            ItemReply::Refused { code, message } => warn!(%code, "reveal refused: {message}"),
            ItemReply::Applied(_) => info!(log_index = out.log_index, "reveal stored"),
        },
        Err(e) => warn!("reveal not proposed: {e}"),
    }
}

/// Seats of a logged round with a commitment and no stored reveal.
fn awaiting(s: &Shared, motion_id: &str) -> usize {
    logged_round(s, motion_id).map_or(0, |r| r.awaiting.len())
}

fn is_open(s: &Shared, motion_id: &str) -> bool {
    s.sm.read(|a| {
        a.state
            .motions
            .get(motion_id)
            .is_some_and(|m| m.status == MotionStatus::Open)
    })
}

/// How often a driver held by a paused breaker looks again.
const PAUSED_RECHECK: Duration = Duration::from_secs(1);

/// Whether the federation's closings are paused (`breakers.rs`).
fn closings_paused(s: &Shared) -> bool {
    s.sm.read(|a| {
        a.state
            .breakers
            .paused
            .contains_key(&panel_machine::breakers::Scope::Closings)
    })
}

/// What became of a proposed close.
enum Close {
    /// Refused as early: a reveal slipped in, or the batch was stamped a hair early.
    TooEarly,
    /// Applied, or refused for good (logged; driving again changes nothing).
    Done,
}

/// Proposes `CloseMotion` (the `attempt`-th time for this motion).
async fn close(s: &Shared, motion_id: &str, attempt: u32) -> Result<Close, DriveError> {
    let item = Item {
        client_id: "motion-driver".into(),
        request_id: request_id(&["close", motion_id, &attempt.to_string()]),
        command: InternalCommand::CloseMotion {
            motion_id: motion_id.to_owned(),
        }
        .into(),
        writer: None,
    };
    let out = s.proposer.submit(item, 0).await?;
    Ok(match &out.reply {
        ItemReply::Refused { code, .. } if code == "close_too_early" => Close::TooEarly,
        ItemReply::Refused { code, message } => {
            warn!(%code, "close refused: {message}");
            Close::Done
        }
        ItemReply::Applied(v) => {
            match CloseReply::deserialize(v) {
                Ok(r) => info!(
                    log_index = out.log_index,
                    not_revealed = ?r.absent.committed_not_revealed,
                    not_committed = ?r.absent.not_committed,
                    "outcome applied"
                ),
                Err(e) => warn!(
                    log_index = out.log_index,
                    "outcome applied; reply unreadable: {e}"
                ),
            }
            Close::Done
        }
    })
}

/// The deduplication id of an arbiter's exam submission (one per arbiter, as the log has
/// always named it).
fn exam_request_id(arbiter_id: &str, sitting: u32) -> u64 {
    leading_u64(&Sha256::digest(
        format!("exam:{arbiter_id}:s{sitting}").as_bytes(),
    ))
}

/// The first eight bytes of a digest, big-endian: a deduplication id.
fn leading_u64(digest: &[u8]) -> u64 {
    let mut rid = [0u8; 8];
    rid.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(rid)
}

/// A deduplication id for one of the driver's entries, from its parts.
fn request_id(parts: &[&str]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    leading_u64(&h.finalize())
}

/// Refuses a reveal whose ruling is not bound to the signed motion this round sent.
fn bound_to(
    parts: crate::ruling::RevealParts,
    motion_id: &str,
    digest: &[u8; 32],
) -> Result<crate::ruling::RevealParts, crate::ruling::RevealError> {
    panel_proto::ruling_check::check_motion_digest(&parts.signed, motion_id, digest)?;
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_windows_per_kind_parse_and_fall_back_to_the_default() {
        let (k, w) = parse_kind_window("verify-tier=90000").unwrap();
        assert_eq!(
            (k, w),
            (MotionKind::TierVerification, Duration::from_secs(90))
        );
        let opts = DriverOptions {
            commit_windows: vec![(MotionKind::Merge, Duration::from_secs(60)), (k, w)],
            ..DriverOptions::default()
        };
        assert_eq!(
            opts.commit_window_for(MotionKind::Merge),
            Duration::from_secs(60)
        );
        assert_eq!(opts.commit_window_for(MotionKind::TierVerification), w);
        assert_eq!(
            opts.commit_window_for(MotionKind::Phase),
            Duration::from_millis(400)
        );
        for (bad, needle) in [
            ("merge", "KIND=MS"),
            ("tier=5", "unknown motion kind"),
            ("merge=5s", "whole milliseconds"),
            ("merge=0", "1..="),
        ] {
            let e = parse_kind_window(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        // Every kind has a name, once.
        let names: BTreeSet<&str> = KIND_NAMES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), KIND_NAMES.len());
    }

    #[test]
    fn a_commit_waits_for_its_window_however_long() {
        let now = 1_000_000;
        let far = Window::starting(now, 120_000, 1_000);
        assert!(commit_wait(far, now) >= Duration::from_secs(120));
        let past = Window::starting(now - 2_000, 1_000, 1_000);
        assert_eq!(commit_wait(past, now), MIN_REQUEST_WAIT);
    }
}
