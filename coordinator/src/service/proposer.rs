//! Group commit on the leader: many client writes become one Raft entry.
//!
//! openraft 0.9.25's leader awaits each log flush before taking the next entry
//! (measured in BENCHMARKS.md, "Coordinator"), so one entry per write caps the cluster at
//! about one fsync per write.
//! The proposer seals a [`Batch`] from whatever writes are queued, up to `max_items` and
//! `max_batch_bytes`; while earlier entries are still in flight it lingers up to `linger`
//! for more. At most `max_inflight` entries are outstanding, and the leader stamps each
//! batch's time and seed.
//!
//! The byte bound matters as much as the item bound: an entry must replicate within
//! openraft's RPC timeout, and an entry that never can wedges the log for good (it is
//! durable on the leader and retried forever). With commands capped at intake
//! ([`crate::service::replica`]) and batches capped here, one `AppendEntries` carries at
//! most `max_payload_entries x max_batch_bytes` (`raft::start`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::raft::{self, NodeId, Raft};
use panel_machine::{Batch, Item, ItemOutcome};

#[derive(Debug, Clone)]
pub struct ProposerOptions {
    pub max_items: usize,
    /// Most command bytes per entry (a single larger command still gets an entry of its
    /// own; intake caps single commands well below this).
    pub max_batch_bytes: usize,
    pub linger: Duration,
    pub max_inflight: usize,
    /// The write limits apply enforces, stamped into every batch so all replicas apply
    /// the same ones (docs/SECURITY.md, "Floods"); `None` stamps none.
    pub limits: Option<panel_machine::features::limits::LimitPolicy>,
    /// When apply issues the log's checkpoints, stamped into every batch likewise
    /// (docs/SECURITY.md, "The record"); `None` stamps none.
    pub checkpoints: Option<panel_machine::features::checkpoints::Cadence>,
}

/// Default bytes per entry: 2 MiB, so four entries per `AppendEntries` stay well inside
/// the replication timeout on a LAN.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 2 * 1024 * 1024;

impl Default for ProposerOptions {
    fn default() -> Self {
        Self {
            max_items: 512,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            linger: Duration::from_millis(1),
            max_inflight: 4,
            limits: None,
            checkpoints: None,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    #[error("this replica is not the leader (leader: {leader_id:?} at {leader_addr:?})")]
    NotLeader {
        leader_id: Option<NodeId>,
        leader_addr: Option<String>,
    },
    #[error("raft refused the write: {0}")]
    Refused(Box<crate::raft::ClientWriteError>),
    #[error(
        "this replica stopped on a storage failure ({cause}); the write was not acknowledged \
         here, try another replica"
    )]
    StorageStopped { cause: String },
    #[error("raft dropped the write (shutting down or lost leadership)")]
    Dropped,
    #[error("raft has stopped: {0}")]
    Fatal(Box<openraft::error::Fatal<NodeId>>),
    #[error("the proposer stopped; the replica is shutting down")]
    Closed,
}

type Reply = oneshot::Sender<Result<ItemOutcome, ProposeError>>;

/// A queued write: the item, its encoded size in bytes, and where its outcome goes.
type Queued = (Item, usize, Reply);

/// Handle to the batching task; cheap to clone.
#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::Sender<Queued>,
}

impl Proposer {
    pub fn spawn(raft: Raft, opts: ProposerOptions) -> Self {
        let (tx, rx) = mpsc::channel(opts.max_items * 8);
        tokio::spawn(run(raft, rx, opts));
        Self { tx }
    }

    /// Propose one item of `bytes` encoded bytes and wait until its entry is applied.
    pub async fn submit(&self, item: Item, bytes: usize) -> Result<ItemOutcome, ProposeError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((item, bytes, reply))
            .await
            .map_err(|_| ProposeError::Closed)?;
        rx.await.map_err(|_| ProposeError::Closed)?
    }
}

/// A batch being filled, within its item and byte bounds. A write that would overflow the
/// bytes waits in `next` for the following batch.
struct Filling {
    items: Vec<Queued>,
    bytes: usize,
    next: Option<Queued>,
}

impl Filling {
    fn new(first: Queued) -> Self {
        let bytes = first.1;
        Self {
            items: vec![first],
            bytes,
            next: None,
        }
    }

    /// Whether the batch takes no more writes.
    fn full(&self, opts: &ProposerOptions) -> bool {
        self.next.is_some() || self.items.len() >= opts.max_items.max(1)
    }

    fn push(&mut self, q: Queued, opts: &ProposerOptions) {
        if self.bytes + q.1 > opts.max_batch_bytes {
            self.next = Some(q);
        } else {
            self.bytes += q.1;
            self.items.push(q);
        }
    }

    fn drain(&mut self, rx: &mut mpsc::Receiver<Queued>, opts: &ProposerOptions) {
        while !self.full(opts) {
            match rx.try_recv() {
                Ok(q) => self.push(q, opts),
                Err(_) => break,
            }
        }
    }
}

fn leader_seed() -> u64 {
    let mut b = [0u8; 8];
    // An OS RNG failure degrades to a time-derived seed; the seed is logged either way.
    if getrandom::fill(&mut b).is_err() {
        return now_ms().wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    u64::from_le_bytes(b)
}

fn now_ms() -> u64 {
    crate::clock::now_ms()
}

async fn run(raft: Raft, mut rx: mpsc::Receiver<Queued>, opts: ProposerOptions) {
    let inflight = Arc::new(Semaphore::new(opts.max_inflight.max(1)));
    let mut carried: Option<Queued> = None;
    loop {
        let first = match carried.take() {
            Some(q) => q,
            None => match rx.recv().await {
                Some(q) => q,
                None => return,
            },
        };
        let mut buf = Filling::new(first);
        buf.drain(&mut rx, &opts);
        let busy = inflight.available_permits() < opts.max_inflight.max(1);
        if busy && !buf.full(&opts) && !opts.linger.is_zero() {
            let deadline = Instant::now() + opts.linger;
            while !buf.full(&opts) {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(q)) => {
                        buf.push(q, &opts);
                        buf.drain(&mut rx, &opts);
                    }
                    _ => break,
                }
            }
        }
        let Ok(permit) = inflight.clone().acquire_owned().await else {
            return;
        };
        buf.drain(&mut rx, &opts);
        carried = buf.next.take();
        let (items, replies): (Vec<Item>, Vec<Reply>) =
            buf.items.into_iter().map(|(i, _, r)| (i, r)).unzip();
        let batch = Batch {
            time_ms: now_ms(),
            seed: leader_seed(),
            items,
            limits: opts.limits,
            checkpoints: opts.checkpoints,
            rules: Some(panel_machine::rules::CURRENT),
        };
        match raft.client_write_ff(batch).await {
            Ok(pending) => {
                let raft = raft.clone();
                tokio::spawn(async move {
                    let result = pending.await;
                    drop(permit);
                    match result {
                        Ok(Ok(resp)) => {
                            for (reply, outcome) in replies.into_iter().zip(resp.data.items) {
                                let _ = reply.send(Ok(outcome));
                            }
                        }
                        Ok(Err(e)) => {
                            let err = match raft::forward_hint(&e) {
                                Some((leader_id, leader_addr)) => ProposeError::NotLeader {
                                    leader_id,
                                    leader_addr,
                                },
                                None => ProposeError::Refused(Box::new(e)),
                            };
                            for reply in replies {
                                let _ = reply.send(Err(err.clone()));
                            }
                        }
                        Err(_) => {
                            // A write dropped because this replica's storage failed says
                            // so (docs/coordinator/storage.md, "Disk faults and recovery").
                            let why = match raft::stopped_cause(&raft).await {
                                Some(cause) => ProposeError::StorageStopped { cause },
                                None => ProposeError::Dropped,
                            };
                            for reply in replies {
                                let _ = reply.send(Err(why.clone()));
                            }
                        }
                    }
                });
            }
            Err(fatal) => {
                for reply in replies {
                    let _ = reply.send(Err(ProposeError::Fatal(Box::new(fatal.clone()))));
                }
            }
        }
    }
}
