//! How long ago the leader last heard from a quorum, so an isolated leader can refuse
//! writes and reads at once instead of holding them until the client's deadline.
//!
//! openraft 0.9 keeps a leader leading while it is cut off from its followers (it has no
//! check-quorum step-down): it accepts proposals, appends them, and waits for
//! acknowledgements that never come, while the rest of the group elects a new leader in a
//! higher term. `RaftMetrics::millis_since_quorum_ack` says how stale the leader's last
//! quorum acknowledgement was *when the metrics were published*, and metrics are only
//! republished when something changes, so reading the number later would understate the
//! age. [`QuorumWatch`] turns each published value into an instant and keeps it; the age at
//! any later moment is then measured from that instant.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::{NodeId, Raft};

/// When the leader of `term` last had a quorum's acknowledgement (or became leader, before
/// its first one).
#[derive(Debug, Clone, Copy)]
struct Acked {
    term: u64,
    at: Instant,
}

/// Tracks the leader's last quorum acknowledgement from the metrics stream. Cheap to clone.
#[derive(Clone)]
pub struct QuorumWatch {
    acked: Arc<Mutex<Option<Acked>>>,
}

/// Why this replica refuses to act as leader right now.
#[derive(Debug, Clone, thiserror::Error)]
pub enum QuorumError {
    #[error(
        "replica {id} leads term {term} but has not heard from a quorum of replicas for {age_ms} ms (lease {lease_ms} ms): it is probably partitioned or paused, and a new leader may already be elected; retry on another replica"
    )]
    NoQuorum {
        id: NodeId,
        term: u64,
        age_ms: u64,
        lease_ms: u64,
    },
}

impl QuorumWatch {
    /// Starts watching `raft`'s metrics; the task ends when the Raft instance shuts down.
    pub fn spawn(raft: &Raft) -> Self {
        let acked: Arc<Mutex<Option<Acked>>> = Arc::default();
        let mut rx = raft.metrics();
        let out = acked.clone();
        tokio::spawn(async move {
            loop {
                let now = Instant::now();
                let next = {
                    let m = rx.borrow_and_update();
                    if m.current_leader == Some(m.id) {
                        let prev = *out.lock().unwrap_or_else(PoisonError::into_inner);
                        let at = match m.millis_since_quorum_ack {
                            Some(ms) => now.checked_sub(Duration::from_millis(ms)).unwrap_or(now),
                            // Leading without an acknowledgement yet: count from the moment
                            // this term's leadership was first seen.
                            None => match prev {
                                Some(p) if p.term == m.current_term => p.at,
                                _ => now,
                            },
                        };
                        // Never move backwards within a term (a stale publication).
                        let at = match prev {
                            Some(p) if p.term == m.current_term && p.at > at => p.at,
                            _ => at,
                        };
                        Some(Acked {
                            term: m.current_term,
                            at,
                        })
                    } else {
                        None
                    }
                };
                *out.lock().unwrap_or_else(PoisonError::into_inner) = next;
                if rx.changed().await.is_err() {
                    break;
                }
            }
        });
        Self { acked }
    }

    /// Refuses with [`QuorumError::NoQuorum`] when this replica leads `term` but its last
    /// quorum acknowledgement is older than `lease`. A replica that does not lead passes:
    /// its writes are forwarded and its reads ask the leader.
    pub fn check(&self, id: NodeId, term: u64, lease: Duration) -> Result<(), QuorumError> {
        let Some(a) = *self.acked.lock().unwrap_or_else(PoisonError::into_inner) else {
            return Ok(());
        };
        if a.term != term {
            return Ok(());
        }
        let age = a.at.elapsed();
        if age > lease {
            return Err(QuorumError::NoQuorum {
                id,
                term,
                age_ms: age.as_millis() as u64,
                lease_ms: lease.as_millis() as u64,
            });
        }
        Ok(())
    }
}
