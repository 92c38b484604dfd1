//! Everything that names openraft: the type configuration, the redb storage adapters and the
//! gRPC network adapter. An openraft upgrade (0.9 -> 0.10: `RaftNetworkV2`, batched log
//! flushes) touches this module only; the rest of the crate sees [`Raft`], [`Member`],
//! [`NodeId`] and the helper functions below.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
// `declare_raft_types!` expands its default `SnapshotData` to a bare `Cursor`.
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use panel_machine::{Batch, BatchReply};

mod archive;
pub mod log_store;
mod motion_store;
pub mod network;
pub mod quorum;
mod record_store;
mod reply_store;
pub mod restore;
pub mod state_machine;

pub use log_store::{CommitIndex, LogStore};
pub use network::{Network, ReplicaService};
pub use quorum::{QuorumError, QuorumWatch};
pub use state_machine::{AppliedEvent, StateMachineStore};

pub type NodeId = u64;

/// How other replicas reach a replica: its gRPC endpoint (replica and client API share it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub addr: String,
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.addr)
    }
}

openraft::declare_raft_types!(
    /// The coordinator's Raft types: one entry carries one [`Batch`] of commands.
    pub TypeConfig:
        D = Batch,
        R = BatchReply,
        Node = Member,
);

pub type Raft = openraft::Raft<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type ClientWriteError = openraft::error::ClientWriteError<NodeId, Member>;
pub type RaftWriteError = openraft::error::RaftError<NodeId, ClientWriteError>;
pub type WriteResponse = openraft::raft::ClientWriteResponse<TypeConfig>;
/// The receiver `client_write_ff` returns: resolves when the entry is applied.
pub type WriteReceiver =
    tokio::sync::oneshot::Receiver<openraft::raft::ClientWriteResult<TypeConfig>>;

/// Tunables of one replica.
#[derive(Debug, Clone)]
pub struct RaftOptions {
    pub heartbeat_ms: u64,
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    /// Build a snapshot after this many applied entries since the last one.
    pub snapshot_logs: u64,
    /// Entries kept in the log behind the latest snapshot (the rest is purged).
    pub keep_logs: u64,
}

impl Default for RaftOptions {
    fn default() -> Self {
        Self {
            heartbeat_ms: 100,
            election_min_ms: 500,
            election_max_ms: 1000,
            snapshot_logs: 5000,
            keep_logs: 1000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RaftStartError {
    #[error(
        "cannot open {path}: {source}; check the data directory is writable, has free space and is not used by another replica"
    )]
    Open {
        path: String,
        #[source]
        source: redb::Error,
    },
    /// A storage file fails its checks: checksums (redb verifies every page on open),
    /// truncation, a missing file beside a present one, or contents that contradict each
    /// other. Starting anyway could drop entries this replica acknowledged, so it does not
    /// (docs/coordinator/storage.md, "Disk faults and recovery").
    #[error(
        "{path} is damaged: {detail}. This replica refuses to start rather than serve without \
         entries it may have acknowledged. Recovery: re-join it from its peers \
         (docs/coordinator/storage.md, \"Disk faults and recovery\"): remove it from the voters \
         (panel coordinator change-membership), move its data directory aside, start it on \
         an empty one, add it as a learner and make it a voter again"
    )]
    Damaged { path: String, detail: String },
    #[error("invalid raft options: {0}")]
    Config(#[from] Box<openraft::ConfigError>),
    #[error("raft failed to start: {0}")]
    Fatal(#[from] Box<openraft::error::Fatal<NodeId>>),
}

/// Open (or create) a replica's storage under `dir` and start its Raft instance; also
/// returns the handle on the committed index the metrics endpoint reads.
pub async fn start(
    id: NodeId,
    dir: &Path,
    opts: &RaftOptions,
    transport: panel_transport::Transport,
) -> Result<(Raft, StateMachineStore, CommitIndex), RaftStartError> {
    let config = openraft::Config {
        cluster_name: "crucible-coordinator".into(),
        heartbeat_interval: opts.heartbeat_ms,
        election_timeout_min: opts.election_min_ms,
        election_timeout_max: opts.election_max_ms,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(opts.snapshot_logs),
        max_in_snapshot_log_to_keep: opts.keep_logs,
        // Entries are batches of up to `max_batch_bytes` (proposer), so entries x bytes
        // bounds one `AppendEntries`: it must replicate within openraft's RPC timeout, or
        // the entry is retried forever and the log is wedged.
        max_payload_entries: 4,
        ..Default::default()
    }
    .validate()
    .map_err(Box::new)?;
    let log_path = dir.join("log.redb");
    let state_path = dir.join("state.redb");
    check_files_present(&log_path, &state_path)?;
    note_unclean_stop(dir, &[&log_path, &state_path]);
    let log_store = LogStore::open(&log_path)?;
    let committed = log_store.commit_index();
    let sm = StateMachineStore::open(&state_path)?.following(transport.trust().cloned());
    check_snapshot_covers_purged(&log_store, &sm, &state_path)?;
    mark_running(dir);
    let raft = Raft::new(
        id,
        Arc::new(config),
        Network::new(transport),
        log_store,
        sm.clone(),
    )
    .await
    .map_err(Box::new)?;
    Ok((raft, sm, committed))
}

/// Present in the data directory while a replica runs on it; removed at a clean stop.
const RUNNING_MARKER: &str = "running";

/// A replica killed (or crashed, or powered off) in the middle of a commit leaves a newest
/// commit that fails its checksum; that commit's fsync never returned, so nothing in it
/// was acknowledged, and redb's roll-back to the commit before it is exactly right. It
/// looks the same as a damaged newest commit, which must be refused; the marker tells
/// the two apart: found at start, the last run did not stop cleanly, and a roll-back is
/// allowed as after a failed commit ([`log_store::note_failed_commit`]). Found by the
/// nemesis (docs/RELIABILITY.md, "Faults found"): without this a `kill -9` during a log
/// append made the replica refuse to start for good.
fn note_unclean_stop(dir: &Path, files: &[&Path]) {
    if !dir.join(RUNNING_MARKER).exists() {
        return;
    }
    for f in files.iter().filter(|f| f.exists()) {
        log_store::note_failed_commit(
            &f.display().to_string(),
            &"the last run on this data directory did not stop cleanly (killed, crashed or \
              powered off); a commit it had in flight was never acknowledged",
        );
    }
}

/// Writes the running marker (best effort: without it a torn commit after a crash is
/// refused as damage, which is safe).
fn mark_running(dir: &Path) {
    let path = dir.join(RUNNING_MARKER);
    let written = std::fs::File::create(&path).and_then(|f| f.sync_all());
    if let Err(e) = written {
        tracing::warn!("cannot write {}: {e}", path.display());
    }
}

/// Removes the running marker once the Raft core has stopped on a clean shutdown.
pub fn mark_clean_stop(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(RUNNING_MARKER));
}

/// Refuses an emptied file, or one storage file without the other: redb would initialise
/// a fresh database in an empty or missing file, and the replica would come back having
/// forgotten its vote, its entries or its snapshot (docs/coordinator/storage.md, "Disk faults and
/// recovery"). Both files absent is a new replica.
fn check_files_present(log: &Path, state: &Path) -> Result<(), RaftStartError> {
    let len = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
    let damaged = |p: &Path, detail: String| RaftStartError::Damaged {
        path: p.display().to_string(),
        detail,
    };
    for p in [log, state] {
        if len(p) == Some(0) {
            return Err(damaged(p, "the file is empty (truncated)".into()));
        }
    }
    match (len(log), len(state)) {
        (None, Some(_)) => Err(damaged(
            log,
            format!("the file is missing while {} exists", state.display()),
        )),
        (Some(_), None) => Err(damaged(
            state,
            format!("the file is missing while {} exists", log.display()),
        )),
        _ => Ok(()),
    }
}

/// The log is purged only behind a durable snapshot, so a snapshot older than the purged
/// position means entries between them exist nowhere on this replica (an old or foreign
/// `state.redb`, or a lost snapshot write).
fn check_snapshot_covers_purged(
    log: &LogStore,
    sm: &StateMachineStore,
    state_path: &Path,
) -> Result<(), RaftStartError> {
    let purged = log.purged_index()?;
    let snapshot = sm.read(|a| a.last_applied.map_or(0, |l| l.index));
    if purged > snapshot {
        return Err(RaftStartError::Damaged {
            path: state_path.display().to_string(),
            detail: format!(
                "its snapshot ends at log index {snapshot} but the log was purged up to \
                 {purged}: entries {}..={purged} are neither in the log nor in the snapshot",
                snapshot + 1
            ),
        });
    }
    Ok(())
}

/// A summary of the replica's Raft metrics for status calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RaftStatus {
    pub node_id: NodeId,
    pub role: String,
    pub term: u64,
    pub leader: Option<NodeId>,
    pub leader_addr: Option<String>,
    pub last_log_index: u64,
    pub last_applied: u64,
    pub snapshot_index: u64,
    pub purged_index: u64,
    pub voters: Vec<NodeId>,
    pub learners: Vec<NodeId>,
    pub nodes: BTreeMap<NodeId, Member>,
}

pub fn status(raft: &Raft) -> RaftStatus {
    let m = raft.metrics().borrow().clone();
    let membership = m.membership_config.membership();
    let nodes: BTreeMap<NodeId, Member> =
        membership.nodes().map(|(id, n)| (*id, n.clone())).collect();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let learners: Vec<NodeId> = membership.learner_ids().collect();
    RaftStatus {
        node_id: m.id,
        role: format!("{:?}", m.state),
        term: m.current_term,
        leader: m.current_leader,
        leader_addr: m
            .current_leader
            .and_then(|l| nodes.get(&l).map(|n| n.addr.clone())),
        last_log_index: m.last_log_index.unwrap_or(0),
        last_applied: m.last_applied.map_or(0, |l| l.index),
        snapshot_index: m.snapshot.map_or(0, |l| l.index),
        purged_index: m.purged.map_or(0, |l| l.index),
        voters: voters.into_iter().collect(),
        learners,
        nodes,
    }
}

/// How [`failure`] begins a cause that is a storage error (not a panic).
pub const STORAGE_FAILURE: &str = "storage error: ";

/// Resolves with the cause once openraft's core stops on anything but a requested
/// shutdown; never resolves otherwise. openraft 0.9 stops the node on any
/// `StorageError` (a log append, vote, purge or snapshot write that did not commit), and
/// every later call only returns `Fatal`, so the process must notice and exit
/// (docs/coordinator/storage.md, "Disk faults and recovery").
pub async fn failure(raft: Raft) -> String {
    let mut metrics = raft.metrics();
    loop {
        // Cloned so the watch's read lock is not held across an await.
        let state = metrics.borrow_and_update().running_state.clone();
        match state {
            Ok(()) => {}
            Err(openraft::error::Fatal::Stopped) => return std::future::pending().await,
            Err(fatal @ openraft::error::Fatal::StorageError(_)) => {
                return format!("{STORAGE_FAILURE}{fatal}");
            }
            Err(fatal) => return fatal.to_string(),
        }
        if metrics.changed().await.is_err() {
            return "the Raft core ended without a result (it panicked)".into();
        }
    }
}

/// Why the Raft core stopped, if it stopped on a failure: waits up to 1 s for the core
/// to publish it, since a write it drops may be answered just before.
pub async fn stopped_cause(raft: &Raft) -> Option<String> {
    tokio::time::timeout(std::time::Duration::from_secs(1), failure(raft.clone()))
        .await
        .ok()
}

/// Notes on both storage files that this run stopped on a storage failure
/// ([`log_store::note_failed_commit`]): the commits redb makes when it closes a file at
/// exit (its allocator state) may fail on the same full disk, and the next start must not
/// take such an unfinished commit for damage. Called once raft has stopped, so nothing
/// more is acknowledged.
pub fn note_storage_failure(dir: &Path, cause: &str) {
    for file in ["log.redb", "state.redb"] {
        let path = dir.join(file).display().to_string();
        log_store::note_failed_commit(&path, &cause);
    }
}

/// The current leader and its address, if one is known.
pub fn leader(raft: &Raft) -> Option<(NodeId, String)> {
    let m = raft.metrics().borrow().clone();
    let l = m.current_leader?;
    let addr = m.membership_config.membership().get_node(&l)?.addr.clone();
    Some((l, addr))
}

/// The ForwardToLeader hint of a write error, if that is what it is.
pub fn forward_hint(err: &ClientWriteError) -> Option<(Option<NodeId>, Option<String>)> {
    match err {
        openraft::error::ClientWriteError::ForwardToLeader(f) => {
            Some((f.leader_id, f.leader_node.as_ref().map(|n| n.addr.clone())))
        }
        _ => None,
    }
}

/// Members for `Raft::initialize`.
pub fn members(list: &[(NodeId, String)]) -> BTreeMap<NodeId, Member> {
    list.iter()
        .map(|(id, addr)| (*id, Member { addr: addr.clone() }))
        .collect()
}

/// Keep `Cursor` referenced for the macro's expansion even if the default changes.
#[allow(dead_code)]
type SnapshotData = Cursor<Vec<u8>>;
