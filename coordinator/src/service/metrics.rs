//! A replica's metrics and readiness, served by `panel-ops` on `--metrics-addr`
//! (docs/coordinator/operations.md, "Metrics and readiness").
//!
//! Two kinds of metric:
//!
//! - counters of events this process saw: intake refusals (by reason), rate-limit
//!   refusals (by limit), signature failures (at intake and in apply), items applied (by
//!   command kind) and refused in apply (by code), exam decisions, witness cosignature
//!   failures. The apply-side ones are counted from the state machine's event broadcast,
//!   so the storage adapter knows nothing of metrics;
//! - gauges computed at scrape time: Raft role, term, commit and applied index, apply lag,
//!   snapshot age, and the state's motions (open, accepted, deadlocked, by kind), arbiters
//!   (admitted, refused, pending, revoked), record entries and checkpoints.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::broadcast;

use crate::raft::{self, AppliedEvent, CommitIndex, NodeId, StateMachineStore};
use crate::service::intake::IntakeError;
use crate::service::replica::Replica;
use panel_machine::Acceptance;
use panel_machine::ItemReply;
use panel_machine::{MotionStatus, State};

/// How far the applied index may trail the commit index on a ready replica: a replica
/// applies a committed entry within milliseconds, so a larger gap means it is replaying
/// or stuck.
pub const READY_APPLY_MARGIN: u64 = 64;

/// Apply refusal codes that mean a signature or a signed binding did not verify
/// (docs/coordinator/state-machine.md, "The commit-reveal round" and "Client API").
const SIGNATURE_CODES: &[&str] = &[
    "authorship",
    "bad_ruling",
    "bad_commitment",
    "bad_reveal",
    "motion_refused",
    "reveal_mismatch",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Limit {
    limit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Stage {
    stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Code {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Decision {
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Witness {
    witness: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RoleLabel {
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MotionLabels {
    kind: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: String,
}

/// Why intake refused a write, as the `reason` label of `panel_intake_refusals_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Over `--max-command-bytes`.
    TooLarge,
    /// Not a command at all.
    Malformed,
    /// A client id reserved for the drivers.
    ReservedClientId,
    /// An internal command from a client.
    InternalCommand,
    /// A test command on a production replica.
    TestCommand,
    /// The group is not chartered yet.
    Unchartered,
    /// A leader without a quorum.
    NoQuorum,
    /// The Gate.
    Gate,
    /// A rate limit.
    RateLimited,
    /// A ruling or reveal that does not decode or verify.
    BadRuling,
}

impl Refusal {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Refusal::TooLarge => "too_large",
            Refusal::Malformed => "malformed",
            Refusal::ReservedClientId => "reserved_client_id",
            Refusal::InternalCommand => "internal_command",
            Refusal::TestCommand => "test_command",
            Refusal::Unchartered => "unchartered",
            Refusal::NoQuorum => "no_quorum",
            Refusal::Gate => "gate",
            Refusal::RateLimited => "rate_limited",
            Refusal::BadRuling => "bad_ruling",
        }
    }
}

/// The counters, shared by the services that count, and the scrape-time gauges.
pub struct ReplicaMetrics {
    registry: Registry,
    intake_refusals: Family<Reason, Counter>,
    rate_limited: Family<Limit, Counter>,
    signature_failures: Family<Stage, Counter>,
    applied: Family<Kind, Counter>,
    apply_refusals: Family<Code, Counter>,
    exam_decisions: Family<Decision, Counter>,
    witness_failures: Family<Witness, Counter>,
    events_missed: Counter,
    gauges: Gauges,
    /// One scrape at a time: the gauges are set, then encoded.
    scrape: Mutex<()>,
}

struct Gauges {
    role: Family<RoleLabel, Gauge>,
    term: Gauge,
    leader: Gauge,
    commit_index: Gauge,
    applied_index: Gauge,
    apply_lag: Gauge,
    last_log_index: Gauge,
    snapshot_index: Gauge,
    snapshot_age: Gauge<f64, std::sync::atomic::AtomicU64>,
    voters: Gauge,
    motions: Family<MotionLabels, Gauge>,
    arbiters: Family<Status, Gauge>,
    record_entries: Gauge,
    checkpoints: Gauge,
    debates: Gauge,
}

impl Default for ReplicaMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplicaMetrics {
    pub fn new() -> Self {
        let mut r = Registry::with_prefix("panel");
        let intake_refusals = Family::<Reason, Counter>::default();
        r.register(
            "intake_refusals",
            "Client writes refused before proposal, by reason",
            intake_refusals.clone(),
        );
        let rate_limited = Family::<Limit, Counter>::default();
        r.register(
            "rate_limit_refusals",
            "Client writes refused by a rate limit at intake, by limit",
            rate_limited.clone(),
        );
        let signature_failures = Family::<Stage, Counter>::default();
        r.register(
            "signature_failures",
            "Signatures or signed bindings that did not verify (stage intake or apply)",
            signature_failures.clone(),
        );
        let applied = Family::<Kind, Counter>::default();
        r.register(
            "applied_items",
            "Items this replica's state machine applied, by command kind",
            applied.clone(),
        );
        let apply_refusals = Family::<Code, Counter>::default();
        r.register(
            "apply_refusals",
            "Items the state machine refused (deterministically, on every replica), by code",
            apply_refusals.clone(),
        );
        let exam_decisions = Family::<Decision, Counter>::default();
        r.register(
            "exam_decisions",
            "Calibration exams scored in apply, by decision (admitted or refused)",
            exam_decisions.clone(),
        );
        let witness_failures = Family::<Witness, Counter>::default();
        r.register(
            "witness_cosignature_failures",
            "Checkpoints a witness did not cosign when this replica pushed them, by witness",
            witness_failures.clone(),
        );
        let events_missed = Counter::default();
        r.register(
            "metrics_events_missed",
            "Applied items the apply counters missed because the event stream lagged",
            events_missed.clone(),
        );
        let gauges = Gauges::register(&mut r);
        Self {
            registry: r,
            intake_refusals,
            rate_limited,
            signature_failures,
            applied,
            apply_refusals,
            exam_decisions,
            witness_failures,
            events_missed,
            gauges,
            scrape: Mutex::new(()),
        }
    }

    /// Counts a write refused before proposal.
    pub fn refused(&self, why: Refusal) {
        self.intake_refusals
            .get_or_create(&Reason {
                reason: why.label().into(),
            })
            .inc();
        if why == Refusal::BadRuling {
            self.signature_failure("intake");
        }
    }

    /// Counts an intake refusal by its error (the Gate or a rate limit).
    pub fn intake_error(&self, e: &IntakeError) {
        let limit = match e {
            IntakeError::Gate { .. } => return self.refused(Refusal::Gate),
            IntakeError::RateLimited { .. } => "contribution_author".to_owned(),
            IntakeError::Busy { who, what, .. } if who == "all writers" => format!("global {what}"),
            IntakeError::Busy { what, .. } => format!("per-key {what}"),
            IntakeError::Writer { limit, .. } => (*limit).to_owned(),
        };
        self.refused(Refusal::RateLimited);
        self.rate_limited.get_or_create(&Limit { limit }).inc();
    }

    fn signature_failure(&self, stage: &str) {
        self.signature_failures
            .get_or_create(&Stage {
                stage: stage.into(),
            })
            .inc();
    }

    /// Counts a checkpoint `witness` (its URL) did not cosign.
    pub fn witness_failed(&self, witness: &str) {
        self.witness_failures
            .get_or_create(&Witness {
                witness: witness.into(),
            })
            .inc();
    }

    /// Counts one applied item from the state machine's event stream.
    fn applied_event(&self, ev: &AppliedEvent) {
        self.applied
            .get_or_create(&Kind {
                kind: ev.kind.clone(),
            })
            .inc();
        match &ev.reply {
            ItemReply::Refused { code, .. } => {
                self.apply_refusals
                    .get_or_create(&Code {
                        code: code.as_str().to_owned(),
                    })
                    .inc();
                if SIGNATURE_CODES.contains(&code.as_str()) {
                    self.signature_failure("apply");
                }
                if ev.kind == "SubmitExam" {
                    self.exam_decision("refused");
                }
            }
            ItemReply::Applied(v) if ev.kind == "RevealExamKey" => {
                // A sealed sitting decides every held exam at its reveal.
                if let Ok(r) = v.get::<panel_machine::reply::RevealKeyReply>() {
                    for e in &r.examined {
                        self.exam_decision(if e.admitted { "admitted" } else { "refused" });
                    }
                }
            }
            ItemReply::Applied(v) if ev.kind == "SubmitExam" || ev.kind == "SetAdmission" => {
                // Answers held in a sealed sitting are decided at the reveal.
                let admitted = v
                    .get::<panel_machine::reply::ExamReply>()
                    .map(|r| r.admitted)
                    .or_else(|_| {
                        v.get::<panel_machine::reply::SetAdmissionReply>()
                            .map(|r| r.admitted)
                    });
                if let Ok(admitted) = admitted {
                    self.exam_decision(if admitted { "admitted" } else { "refused" });
                }
            }
            ItemReply::Applied(_) => {}
        }
    }

    fn exam_decision(&self, decision: &str) {
        self.exam_decisions
            .get_or_create(&Decision {
                decision: decision.into(),
            })
            .inc();
    }

    /// Follows the state machine's applied items until the replica stops.
    pub fn follow_applied(self: &Arc<Self>, sm: &StateMachineStore) {
        let mut rx = sm.subscribe();
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => me.applied_event(&ev),
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        me.events_missed.inc_by(n);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }

    /// Sets the gauges from `view` and encodes every metric.
    fn scrape(&self, view: &RaftView, state: &StateView) -> Result<String, std::fmt::Error> {
        let _one = self.scrape.lock().unwrap_or_else(PoisonError::into_inner);
        self.gauges.set(view, state);
        panel_ops::encode(&self.registry)
    }
}

impl Gauges {
    fn register(r: &mut Registry) -> Self {
        let g = Self {
            role: Family::default(),
            term: Gauge::default(),
            leader: Gauge::default(),
            commit_index: Gauge::default(),
            applied_index: Gauge::default(),
            apply_lag: Gauge::default(),
            last_log_index: Gauge::default(),
            snapshot_index: Gauge::default(),
            snapshot_age: Gauge::default(),
            voters: Gauge::default(),
            motions: Family::default(),
            arbiters: Family::default(),
            record_entries: Gauge::default(),
            checkpoints: Gauge::default(),
            debates: Gauge::default(),
        };
        r.register(
            "raft_role",
            "1 for this replica's Raft role (Leader, Follower, Candidate, Learner, Shutdown)",
            g.role.clone(),
        );
        r.register("raft_term", "Current Raft term", g.term.clone());
        r.register(
            "raft_leader_id",
            "The leader this replica knows of (0: none)",
            g.leader.clone(),
        );
        r.register(
            "raft_commit_index",
            "Newest committed log index this replica learned",
            g.commit_index.clone(),
        );
        r.register(
            "raft_applied_index",
            "Newest log index applied to this replica's state machine",
            g.applied_index.clone(),
        );
        r.register(
            "raft_apply_lag",
            "Committed entries not yet applied here (commit index minus applied index)",
            g.apply_lag.clone(),
        );
        r.register(
            "raft_last_log_index",
            "Newest index in this replica's log",
            g.last_log_index.clone(),
        );
        r.register(
            "raft_snapshot_index",
            "Last log index covered by the latest snapshot",
            g.snapshot_index.clone(),
        );
        r.register(
            "raft_snapshot_age_seconds",
            "Seconds since the latest snapshot was built (-1: no snapshot yet)",
            g.snapshot_age.clone(),
        );
        r.register(
            "raft_voters",
            "Voters in this replica's membership",
            g.voters.clone(),
        );
        r.register(
            "motions",
            "Motions in the state, by kind and status (open, accepted, deadlocked)",
            g.motions.clone(),
        );
        r.register(
            "arbiters",
            "Registered arbiters by status (admitted, refused by their exam, pending, revoked)",
            g.arbiters.clone(),
        );
        r.register(
            "record_entries",
            "Entries on the record",
            g.record_entries.clone(),
        );
        r.register(
            "checkpoints",
            "Checkpoints issued on the record",
            g.checkpoints.clone(),
        );
        r.register("debates", "Debates in the state", g.debates.clone());
        g
    }

    fn set(&self, v: &RaftView, s: &StateView) {
        self.role.clear();
        self.role
            .get_or_create(&RoleLabel {
                role: v.status.role.clone(),
            })
            .set(1);
        self.term.set(to_i64(v.status.term));
        self.leader.set(to_i64(v.status.leader.unwrap_or(0)));
        self.commit_index.set(to_i64(v.committed));
        self.applied_index.set(to_i64(v.status.last_applied));
        self.apply_lag.set(to_i64(v.apply_lag()));
        self.last_log_index.set(to_i64(v.status.last_log_index));
        self.snapshot_index.set(to_i64(v.status.snapshot_index));
        self.snapshot_age.set(v.snapshot_age_secs.unwrap_or(-1.0));
        self.voters.set(to_i64(v.status.voters.len() as u64));
        self.motions.clear();
        for ((kind, status), n) in &s.motions {
            self.motions
                .get_or_create(&MotionLabels {
                    kind: kind.clone(),
                    status: (*status).into(),
                })
                .set(*n);
        }
        self.arbiters.clear();
        for (status, n) in &s.arbiters {
            self.arbiters
                .get_or_create(&Status {
                    status: (*status).into(),
                })
                .set(*n);
        }
        self.record_entries.set(s.record_entries);
        self.checkpoints.set(s.checkpoints);
        self.debates.set(s.debates);
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The Raft side of one scrape.
struct RaftView {
    status: raft::RaftStatus,
    committed: u64,
    snapshot_age_secs: Option<f64>,
}

impl RaftView {
    fn apply_lag(&self) -> u64 {
        self.committed.saturating_sub(self.status.last_applied)
    }
}

/// What the gauges count in the state, taken under the state machine's read lock.
#[derive(Debug, Default, PartialEq)]
struct StateView {
    motions: std::collections::BTreeMap<(String, &'static str), i64>,
    arbiters: std::collections::BTreeMap<&'static str, i64>,
    record_entries: i64,
    checkpoints: i64,
    debates: i64,
}

impl StateView {
    fn of(state: &State) -> Self {
        let mut v = StateView {
            record_entries: state.record.len() as i64,
            checkpoints: state.checkpoints.len() as i64,
            debates: state.debates.len() as i64,
            ..StateView::default()
        };
        // Retired motions are counted by the table; only held ones are read.
        for (kind, t) in &state.motions.retired().by_kind {
            for (status, n) in [("accepted", t.accepted), ("deadlocked", t.deadlocked)] {
                *v.motions.entry((kind.clone(), status)).or_default() += n as i64;
            }
        }
        for (_, m) in state.motions.iter_held() {
            let status = match &m.status {
                MotionStatus::Open => "open",
                MotionStatus::Decided(Acceptance::Accepted { .. }) => "accepted",
                MotionStatus::Decided(Acceptance::Deadlocked(_)) => "deadlocked",
            };
            *v.motions
                .entry((format!("{:?}", m.spec.kind), status))
                .or_default() += 1;
        }
        for status in ["admitted", "refused", "pending", "revoked"] {
            v.arbiters.insert(status, 0);
        }
        for (_, a) in state.arbiters.iter() {
            let status = if a.revoked.is_some() {
                "revoked"
            } else if a.admitted {
                "admitted"
            } else if a.exam.is_some() {
                "refused"
            } else {
                "pending"
            };
            *v.arbiters.entry(status).or_default() += 1;
        }
        v
    }
}

/// The endpoint's view of one replica: its metrics, Raft and state.
pub struct ReplicaProbe {
    pub(crate) replica: Arc<Replica>,
    pub(crate) metrics: Arc<ReplicaMetrics>,
    pub(crate) committed: CommitIndex,
}

impl ReplicaProbe {
    fn raft_view(&self) -> RaftView {
        RaftView {
            status: raft::status(&self.replica.raft),
            committed: self.committed.get(),
            snapshot_age_secs: self.replica.sm.snapshot_age().map(|d| d.as_secs_f64()),
        }
    }
}

impl panel_ops::Probe for ReplicaProbe {
    fn metrics(&self) -> Result<String, std::fmt::Error> {
        let view = self.raft_view();
        let state = self.replica.sm.read(|a| StateView::of(&a.state));
        self.metrics.scrape(&view, &state)
    }

    fn ready(&self) -> Result<(), panel_ops::NotReady> {
        readiness(&self.raft_view(), || self.replica.quorum_check().is_ok())
            .map_err(panel_ops::NotReady::new)
    }
}

/// Why a replica answers 503 on `/readyz`, with what the operator can do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaNotReady {
    #[error(
        "replica {node} is not a member of any group yet (panel coordinator init, or add-learner from the group)"
    )]
    NotMember { node: NodeId },
    #[error(
        "replica {node} knows no leader (role {role}, term {term}): no quorum of the voters {voters:?} is reachable"
    )]
    NoLeader {
        node: NodeId,
        role: String,
        term: u64,
        voters: Vec<NodeId>,
    },
    #[error("replica {node} leads term {term} but has not heard from a quorum within its lease")]
    NoQuorum { node: NodeId, term: u64 },
    #[error(
        "replica {node} has applied {applied} of {committed} committed entries ({lag} behind, more than {READY_APPLY_MARGIN})"
    )]
    Behind {
        node: NodeId,
        applied: u64,
        committed: u64,
        lag: u64,
    },
}

/// Ready: a member of a group, a leader known (and, on the leader itself, a quorum heard
/// within the lease), and the applied index within [`READY_APPLY_MARGIN`] of the commit
/// index. `leader_has_quorum` is asked only of a leader.
fn readiness(
    v: &RaftView,
    leader_has_quorum: impl FnOnce() -> bool,
) -> Result<(), ReplicaNotReady> {
    let s = &v.status;
    let node = s.node_id;
    if !s.nodes.contains_key(&node) {
        return Err(ReplicaNotReady::NotMember { node });
    }
    let Some(leader) = s.leader else {
        return Err(ReplicaNotReady::NoLeader {
            node,
            role: s.role.clone(),
            term: s.term,
            voters: s.voters.clone(),
        });
    };
    if leader == node && !leader_has_quorum() {
        return Err(ReplicaNotReady::NoQuorum { node, term: s.term });
    }
    let lag = v.apply_lag();
    if lag > READY_APPLY_MARGIN {
        return Err(ReplicaNotReady::Behind {
            node,
            applied: s.last_applied,
            committed: v.committed,
            lag,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::Member;

    fn view(leader: Option<u64>, applied: u64, committed: u64) -> RaftView {
        RaftView {
            status: raft::RaftStatus {
                node_id: 1,
                role: "Follower".into(),
                term: 3,
                leader,
                leader_addr: None,
                last_log_index: committed,
                last_applied: applied,
                snapshot_index: 0,
                purged_index: 0,
                voters: vec![1, 2, 3],
                learners: vec![],
                nodes: [1, 2, 3]
                    .into_iter()
                    .map(|i| {
                        (
                            i,
                            Member {
                                addr: format!("a{i}"),
                            },
                        )
                    })
                    .collect(),
            },
            committed,
            snapshot_age_secs: None,
        }
    }

    #[test]
    fn ready_needs_a_leader_and_a_caught_up_state_machine() {
        assert!(readiness(&view(Some(2), 10, 10), || false).is_ok());
        assert!(readiness(&view(Some(2), 10, 10 + READY_APPLY_MARGIN), || false).is_ok());
        let e = readiness(&view(None, 10, 10), || true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("knows no leader"), "{e}");
        let e = readiness(&view(Some(2), 1, 10 + READY_APPLY_MARGIN), || true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("behind"), "{e}");
        // The leader itself must have heard from a quorum.
        let e = readiness(&view(Some(1), 10, 10), || false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("quorum"), "{e}");
        assert!(readiness(&view(Some(1), 10, 10), || true).is_ok());
        let mut alone = view(None, 0, 0);
        alone.status.nodes.clear();
        let e = readiness(&alone, || true).unwrap_err().to_string();
        assert!(e.contains("not a member"), "{e}");
    }

    #[test]
    fn counters_and_gauges_encode() {
        let m = ReplicaMetrics::new();
        m.refused(Refusal::TooLarge);
        m.refused(Refusal::BadRuling);
        m.witness_failed("http://w");
        let text = m
            .scrape(&view(Some(1), 5, 7), &StateView::default())
            .unwrap();
        assert!(
            text.contains("panel_intake_refusals_total{reason=\"too_large\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("panel_signature_failures_total{stage=\"intake\"} 1"),
            "{text}"
        );
        assert!(text.contains("panel_raft_apply_lag 2"), "{text}");
        assert!(
            text.contains("panel_raft_role{role=\"Follower\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("panel_raft_snapshot_age_seconds -1"),
            "{text}"
        );
    }
}
