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

use crate::command::{Batch, BatchReply};

pub mod log_store;
pub mod network;
pub mod quorum;
pub mod state_machine;

pub use log_store::LogStore;
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
        "cannot open {path}: {source}; check the data directory is writable and not used by another replica"
    )]
    Open {
        path: String,
        #[source]
        source: redb::Error,
    },
    #[error("stored state is unreadable: {0}")]
    Corrupt(String),
    #[error("invalid raft options: {0}")]
    Config(#[from] Box<openraft::ConfigError>),
    #[error("raft failed to start: {0}")]
    Fatal(#[from] Box<openraft::error::Fatal<NodeId>>),
}

/// Open (or create) a replica's storage under `dir` and start its Raft instance.
pub async fn start(
    id: NodeId,
    dir: &Path,
    opts: &RaftOptions,
    transport: panel_transport::Transport,
) -> Result<(Raft, StateMachineStore), RaftStartError> {
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
    let log_store = LogStore::open(&dir.join("log.redb"))?;
    let sm = StateMachineStore::open(&dir.join("state.redb"))?;
    let raft = Raft::new(
        id,
        Arc::new(config),
        Network::new(transport),
        log_store,
        sm.clone(),
    )
    .await
    .map_err(Box::new)?;
    Ok((raft, sm))
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
