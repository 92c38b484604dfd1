//! Group commit on the leader: many client writes become one Raft entry.
//!
//! openraft 0.9.25's leader awaits each log flush before taking the next entry
//! (perf-anchors (d)), so one entry per write caps the cluster at about one fsync per write.
//! The proposer seals a [`Batch`] from whatever writes are queued, up to `max_items`; while
//! earlier entries are still in flight it lingers up to `linger` for more. At most
//! `max_inflight` entries are outstanding, and the leader stamps each batch's time and seed.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use crate::command::{Batch, Item, ItemOutcome};
use crate::raft::{self, NodeId, Raft};

#[derive(Debug, Clone)]
pub struct ProposerOptions {
    pub max_items: usize,
    pub linger: Duration,
    pub max_inflight: usize,
}

impl Default for ProposerOptions {
    fn default() -> Self {
        Self {
            max_items: 512,
            linger: Duration::from_millis(1),
            max_inflight: 4,
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
    Raft(String),
    #[error("the proposer stopped; the replica is shutting down")]
    Closed,
}

type Reply = oneshot::Sender<Result<ItemOutcome, ProposeError>>;

/// Handle to the batching task; cheap to clone.
#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::Sender<(Item, Reply)>,
}

impl Proposer {
    pub fn spawn(raft: Raft, opts: ProposerOptions) -> Self {
        let (tx, rx) = mpsc::channel(opts.max_items * 8);
        tokio::spawn(run(raft, rx, opts));
        Self { tx }
    }

    /// Propose one item and wait until its entry is applied.
    pub async fn submit(&self, item: Item) -> Result<ItemOutcome, ProposeError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send((item, reply))
            .await
            .map_err(|_| ProposeError::Closed)?;
        rx.await.map_err(|_| ProposeError::Closed)?
    }
}

fn drain(rx: &mut mpsc::Receiver<(Item, Reply)>, buf: &mut Vec<(Item, Reply)>, max: usize) {
    while buf.len() < max {
        match rx.try_recv() {
            Ok(p) => buf.push(p),
            Err(_) => break,
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
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn run(raft: Raft, mut rx: mpsc::Receiver<(Item, Reply)>, opts: ProposerOptions) {
    let inflight = Arc::new(Semaphore::new(opts.max_inflight.max(1)));
    let max = opts.max_items.max(1);
    while let Some(first) = rx.recv().await {
        let mut buf = vec![first];
        drain(&mut rx, &mut buf, max);
        let busy = inflight.available_permits() < opts.max_inflight.max(1);
        if busy && buf.len() < max && !opts.linger.is_zero() {
            let deadline = Instant::now() + opts.linger;
            while buf.len() < max {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(p)) => {
                        buf.push(p);
                        drain(&mut rx, &mut buf, max);
                    }
                    _ => break,
                }
            }
        }
        let Ok(permit) = inflight.clone().acquire_owned().await else {
            return;
        };
        drain(&mut rx, &mut buf, max);
        let (items, replies): (Vec<Item>, Vec<Reply>) = buf.into_iter().unzip();
        let batch = Batch {
            time_ms: now_ms(),
            seed: leader_seed(),
            items,
        };
        match raft.client_write_ff(batch).await {
            Ok(pending) => {
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
                                None => ProposeError::Raft(e.to_string()),
                            };
                            for reply in replies {
                                let _ = reply.send(Err(err.clone()));
                            }
                        }
                        Err(_) => {
                            for reply in replies {
                                let _ = reply.send(Err(ProposeError::Raft(
                                    "raft dropped the write (shutting down or lost leadership)"
                                        .into(),
                                )));
                            }
                        }
                    }
                });
            }
            Err(fatal) => {
                for reply in replies {
                    let _ = reply.send(Err(ProposeError::Raft(fatal.to_string())));
                }
            }
        }
    }
}
