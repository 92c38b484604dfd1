//! The motion driver: on the leader, every open debate motion is put to its drawn panel
//! as one logged round (docs/coordinator/state-machine.md "The commit-reveal round"): the commitments
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
use sha2::{Digest, Sha256};
use tonic::transport::Channel;
use tracing::{Instrument, info, info_span, warn};

use crate::raft::{NodeId, Raft, StateMachineStore};
use crate::service::link::{LinkError, LinkRegistry, is_link_endpoint};
use crate::service::motion_key::MotionKeys;
use crate::service::proposer::Proposer;
use panel_machine::MotionKind;
use panel_machine::features::exam_sitting::{Pools, SittingStep};
use panel_machine::reply::{CloseReply, CommitmentsReply};
use panel_machine::rules::ruling::wire_kind;
use panel_machine::runs::RunMotion;
use panel_machine::{ClientCommand, CommitmentLog, InternalCommand, Item, ItemReply};
use panel_machine::{Motion, MotionStatus};
use panel_procedures::AnswerShape;

mod exam;
mod org_pool;
mod projection;
mod quorum;
mod round;
mod route;
mod seal;
mod seating;

use exam::*;
pub use projection::wire_projection;
use projection::*;
use round::*;
use route::*;
use seating::*;

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
    /// This replica's beacon key (derived from its log key, `log_key::beacon`): with it,
    /// the driver seats the motions that open awaiting a beacon (`seating.rs`).
    pub beacon: Option<Arc<panel_federation::beacon_key::BeaconSecret>>,
    /// This replica's own log key, which seals the motions it puts to nodes under a
    /// charter whose log is signed by a quorum (`seal.rs`).
    pub seal_key: Option<panel_tlog::NoteSigner>,
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
            beacon: None,
            seal_key: None,
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
    ExamRefused {
        code: panel_machine::RefusalCode,
        message: String,
    },
    #[error("arbiter {0} is not registered")]
    UnknownArbiter(String),
    #[error("exam sitting {0} is no longer open; the arbiter is examined at the next")]
    SittingClosed(u32),
    #[error(
        "this replica does not hold the pool sitting {0} sealed, so it cannot ask its items \
         (their ids are keyed by the pool's salt): give every replica the same exam_pools, \
         or examine from organisation pools (docs/coordinator/state-machine.md)"
    )]
    PoolNotHeld(u32),
    #[error("the arbiter's registered key: {0}")]
    Key(#[from] panel_machine::rules::ruling::RulingError),
    #[error(transparent)]
    Draw(#[from] panel_machine::features::exam_sitting::SittingError),
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
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    #[error(transparent)]
    OrgPool(#[from] org_pool::OrgPoolError),
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
    /// Kept connections to the other replicas, for beacon shares and seals.
    replicas: crate::raft::network::PinnedClients,
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

/// Starts the driver loop on this replica; it acts only while this replica leads.
/// `links` holds the arbiter links open to this replica (served by [`crate::service::link`]).
/// Returns the check this replica's `SealMotions` service seals by (`seal.rs`).
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
) -> Arc<dyn crate::raft::network::MotionVouch> {
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
        replicas: crate::raft::network::PinnedClients::new(transport.clone()),
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
    let vouch = Arc::new(seal::Vouch::new(shared.clone()));
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
            for (motion_id, question) in awaiting_seats(&shared) {
                let span = info_span!("seating", motion = %motion_id);
                let key = format!("seat:{motion_id}");
                spawn_once(&shared, key, span, |s| async move {
                    if let Err(e) = seat(&s, motion_id, question).await {
                        warn!("motion not seated: {e}");
                    }
                });
            }
            for (motion, endpoints) in open_motions(&shared) {
                let span = info_span!("motion", motion = %motion.spec.motion_id, debate = %motion.spec.debate_id);
                let key = motion.spec.motion_id.clone();
                spawn_once(&shared, key, span, |s| async move {
                    if let Err(e) = drive(&s, motion, endpoints).await {
                        warn!("motion not completed: {e}");
                    }
                });
            }
        }
    });
    vouch
}

/// Runs `task` under `key` unless a task of that key is still running (one driver task
/// per motion step at a time, however many passes see it).
fn spawn_once<F, Fut>(shared: &Arc<Shared>, key: String, span: tracing::Span, task: F)
where
    F: FnOnce(Arc<Shared>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let fresh = shared
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key.clone());
    if !fresh {
        return;
    }
    let s = shared.clone();
    let run = task(shared.clone());
    tokio::spawn(
        async move {
            run.await;
            s.in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
        .instrument(span),
    );
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
        let in_force = self.sm.read(|a| {
            panel_machine::features::charter_rules::motion_key_at(&a.state, opened_log_index)
        });
        Ok(self.motion_keys.for_key(in_force.as_ref())?)
    }
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
    parts: panel_machine::rules::ruling::RevealParts,
    motion_id: &str,
    digest: &[u8; 32],
) -> Result<panel_machine::rules::ruling::RevealParts, panel_machine::rules::ruling::RevealError> {
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
