//! The node's metrics and readiness, served by `panel-ops` on `metrics_addr` in node.toml
//! (docs/coordinator/operations.md, "Metrics and readiness"): how long the judge takes per judge
//! kind, motions refused before judging (by reason; a bad coordinator signature is one),
//! signature failures, commitments and reveals made.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::core::NodeCore;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JudgeKind {
    judge_kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct What {
    what: String,
}

/// Buckets of the judge latency in seconds: a scripted judge answers in microseconds, a
/// command judge in milliseconds, an LLM in seconds up to its timeout (60 s by default).
const JUDGE_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Why a motion was refused before (or instead of) a commitment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MotionRefusal {
    /// No `coordinator_keys` configured.
    NoTrustedKey,
    /// The coordinator's signature did not verify.
    Signature,
    /// The motion lacks the seals of the charter's log quorum.
    Seals,
    /// The motion failed the arbiter's own checks (seat, deadline, content).
    Check,
    /// The judge failed or answered after the commit deadline.
    Judge,
}

impl MotionRefusal {
    fn label(self) -> &'static str {
        match self {
            MotionRefusal::NoTrustedKey => "no_trusted_key",
            MotionRefusal::Signature => "signature",
            MotionRefusal::Seals => "seals",
            MotionRefusal::Check => "check",
            MotionRefusal::Judge => "judge",
        }
    }
}

pub struct NodeMetrics {
    registry: Registry,
    judge_seconds: Family<JudgeKind, Histogram>,
    judge_errors: Family<JudgeKind, Counter>,
    motion_refusals: Family<Reason, Counter>,
    signature_failures: Family<What, Counter>,
    commitments: Counter,
    reveals: Counter,
}

impl Default for NodeMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeMetrics {
    pub fn new() -> Self {
        let mut r = Registry::with_prefix("panel_node");
        let judge_seconds: Family<JudgeKind, Histogram> =
            Family::new_with_constructor(|| Histogram::new(JUDGE_BUCKETS));
        r.register(
            "judge_seconds",
            "Time the judge took to answer one motion, by judge kind",
            judge_seconds.clone(),
        );
        let judge_errors = Family::<JudgeKind, Counter>::default();
        r.register(
            "judge_errors",
            "Motions the judge failed to answer, by judge kind",
            judge_errors.clone(),
        );
        let motion_refusals = Family::<Reason, Counter>::default();
        r.register(
            "motion_refusals",
            "Motions refused without a commitment, by reason",
            motion_refusals.clone(),
        );
        let signature_failures = Family::<What, Counter>::default();
        r.register(
            "signature_failures",
            "Signatures that did not verify: coordinator motions, peers' delivered rulings",
            signature_failures.clone(),
        );
        let commitments = Counter::default();
        r.register(
            "commitments",
            "Commitments this node made",
            commitments.clone(),
        );
        let reveals = Counter::default();
        r.register("reveals", "Reveals this node made", reveals.clone());
        Self {
            registry: r,
            judge_seconds,
            judge_errors,
            motion_refusals,
            signature_failures,
            commitments,
            reveals,
        }
    }

    /// Records one judge call of `kind` that took `took`.
    pub fn judged(&self, kind: &str, took: Duration, ok: bool) {
        let label = JudgeKind {
            judge_kind: kind.into(),
        };
        self.judge_seconds
            .get_or_create(&label)
            .observe(took.as_secs_f64());
        if !ok {
            self.judge_errors.get_or_create(&label).inc();
        }
    }

    pub fn motion_refused(&self, why: MotionRefusal) {
        self.motion_refusals
            .get_or_create(&Reason {
                reason: why.label().into(),
            })
            .inc();
        if why == MotionRefusal::Signature {
            self.signature_failed("motion");
        }
    }

    pub fn signature_failed(&self, what: &str) {
        self.signature_failures
            .get_or_create(&What { what: what.into() })
            .inc();
    }

    pub fn committed(&self) {
        self.commitments.inc();
    }

    pub fn revealed(&self) {
        self.reveals.inc();
    }

    fn encode(&self) -> Result<String, std::fmt::Error> {
        panel_ops::encode(&self.registry)
    }
}

/// Why a node answers 503 on `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NodeNotReady {
    #[error("the node's gRPC listener is not serving (starting or shutting down)")]
    NotServing,
    #[error("the node has no key or no judge")]
    NoKeyOrJudge,
}

/// The endpoint's view of a node: ready once it serves with its key and judge loaded.
pub struct NodeProbe {
    pub core: Arc<NodeCore>,
    /// Set while the gRPC listener serves (cleared at shutdown).
    pub serving: AtomicBool,
}

impl panel_ops::Probe for NodeProbe {
    fn metrics(&self) -> Result<String, std::fmt::Error> {
        self.core.metrics.encode()
    }

    fn ready(&self) -> Result<(), panel_ops::NotReady> {
        if !self.serving.load(Ordering::Relaxed) {
            return Err(panel_ops::NotReady::new(NodeNotReady::NotServing));
        }
        // The key and the judge are loaded before the node serves (`run::build_core`
        // fails otherwise); a human judge is a judge too, answered through `panel node rule`.
        let id = self.core.arbiter.identity();
        if id.fingerprint.is_empty() || id.judge_kind.is_empty() {
            return Err(panel_ops::NotReady::new(NodeNotReady::NoKeyOrJudge));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_latency_is_a_histogram_per_kind() {
        let m = NodeMetrics::new();
        m.judged("scripted", Duration::from_millis(2), true);
        m.judged("llm", Duration::from_secs(3), false);
        m.motion_refused(MotionRefusal::Signature);
        let text = m.encode().unwrap();
        assert!(
            text.contains("panel_node_judge_seconds_count{judge_kind=\"scripted\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("panel_node_judge_seconds_bucket{le=\"5.0\",judge_kind=\"llm\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("panel_node_judge_errors_total{judge_kind=\"llm\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("panel_node_signature_failures_total{what=\"motion\"} 1"),
            "{text}"
        );
    }
}
