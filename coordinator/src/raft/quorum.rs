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
//!
//! The acknowledgement age alone also grows while a large entry is being replicated
//! (openraft 0.9 sends heartbeats on the same replication stream, so they wait behind it),
//! which once refused a healthy leader's writes under a near-cap command. So the leader also
//! pings its peers' `Status` on connections of its own, apart from Raft's, and a replica is
//! taken as cut off only when *both* ages exceed the lease: no quorum acknowledged it and no
//! quorum of peers answered a ping.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use panel_transport::Transport;

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
    /// Peer -> when it last answered a ping (only pinged while this replica leads).
    contact: Arc<Mutex<HashMap<NodeId, Instant>>>,
    /// Voters of the current membership, this replica included.
    voters: Arc<Mutex<Vec<NodeId>>>,
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
    /// Starts watching `raft`'s metrics (the task ends when the Raft instance shuts down)
    /// and, while this replica leads, pinging its peers every `every` over `transport`.
    pub fn spawn(raft: &Raft, transport: Transport, every: Duration) -> Self {
        let acked: Arc<Mutex<Option<Acked>>> = Arc::default();
        let contact: Arc<Mutex<HashMap<NodeId, Instant>>> = Arc::default();
        let voters: Arc<Mutex<Vec<NodeId>>> = Arc::default();
        spawn_pings(
            raft.clone(),
            transport,
            every,
            contact.clone(),
            voters.clone(),
        );
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
        Self {
            acked,
            contact,
            voters,
        }
    }

    /// How long ago a quorum of voters (this replica counting as one) last answered.
    fn contact_age(&self) -> Duration {
        let voters = self
            .voters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let need = voters.len() / 2; // peers needed besides this replica
        if need == 0 {
            return Duration::ZERO;
        }
        let contact = self.contact.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ages: Vec<Duration> = contact
            .iter()
            .filter(|(id, _)| voters.contains(id))
            .map(|(_, at)| at.elapsed())
            .collect();
        ages.sort();
        ages.get(need - 1).copied().unwrap_or(Duration::MAX)
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
        if age > lease && self.contact_age() > lease {
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

/// While this replica leads, asks every other voter for its `Status` each `every` (with a
/// deadline of the same length) and records who answered. Separate connections from
/// Raft's, so a long `AppendEntries` does not delay them.
fn spawn_pings(
    raft: Raft,
    transport: Transport,
    every: Duration,
    contact: Arc<Mutex<HashMap<NodeId, Instant>>>,
    voters: Arc<Mutex<Vec<NodeId>>>,
) {
    use crate::pb::coordinator::coordinator_client::CoordinatorClient;
    tokio::spawn(async move {
        let mut clients: HashMap<NodeId, (String, CoordinatorClient<tonic::transport::Channel>)> =
            HashMap::new();
        loop {
            tokio::time::sleep(every).await;
            let (me, leading, members) = {
                let m = raft.metrics();
                let m = m.borrow();
                let membership = m.membership_config.membership();
                let members: Vec<(NodeId, String)> = membership
                    .voter_ids()
                    .filter_map(|id| membership.get_node(&id).map(|n| (id, n.addr.clone())))
                    .collect();
                (m.id, m.current_leader == Some(m.id), members)
            };
            *voters.lock().unwrap_or_else(PoisonError::into_inner) =
                members.iter().map(|(id, _)| *id).collect();
            if !leading {
                contact
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clear();
                continue;
            }
            for (id, addr) in members.into_iter().filter(|(id, _)| *id != me) {
                if clients.get(&id).is_none_or(|(a, _)| *a != addr) {
                    // Only the member's own certificate counts as contact with it.
                    let Ok(endpoint) =
                        transport.endpoint_pinned(&addr, panel_transport::Peer::Replica(id))
                    else {
                        continue;
                    };
                    clients.insert(id, (addr, CoordinatorClient::new(endpoint.connect_lazy())));
                }
                let Some((_, client)) = clients.get(&id) else {
                    continue;
                };
                let mut client = client.clone();
                let contact = contact.clone();
                tokio::spawn(async move {
                    let mut req = tonic::Request::new(crate::pb::coordinator::StatusRequest {});
                    req.set_timeout(every);
                    if let Ok(Ok(_)) = tokio::time::timeout(every, client.status(req)).await {
                        contact
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(id, Instant::now());
                    }
                });
            }
        }
    });
}
