//! Outcome statuses as the state keeps them (`finality` moves them; docs/PANEL.md
//! "Finality").

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Where an outcome stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// Accepted; stands unless appealed before `final_at_ms`.
    Provisional,
    /// Accepted and no longer open to appeal.
    Final,
    /// Accepted, and held by an appeal filed within its window.
    Appealed,
    /// Accepted, then replaced by the review of an admitted appeal.
    Overturned,
    /// The question ended without an accepted answer.
    NotProven,
}

impl OutcomeStatus {
    pub fn name(self) -> &'static str {
        match self {
            OutcomeStatus::Provisional => "provisional",
            OutcomeStatus::Final => "final",
            OutcomeStatus::Appealed => "appealed",
            OutcomeStatus::Overturned => "overturned",
            OutcomeStatus::NotProven => "not_proven",
        }
    }

    /// Whether the status can still change.
    pub fn settled(self) -> bool {
        matches!(
            self,
            OutcomeStatus::Final | OutcomeStatus::Overturned | OutcomeStatus::NotProven
        )
    }
}

/// A decided motion's status, and when and why it last changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finality {
    pub status: OutcomeStatus,
    /// When a provisional outcome becomes final unless appealed (batch time, ms).
    pub final_at_ms: u64,
    /// The appeal that holds or held it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal_id: Option<String>,
    /// Why the status is what it is, in a sentence.
    pub reason: String,
    pub changed_log_index: u64,
    pub changed_at_ms: u64,
}

impl Finality {
    /// "provisional until 2026-12-07T12:00:00Z (accepted; open to appeal for 1 d)", or
    /// "final since log index 812 (final: the appeal window closed with no appeal)".
    pub fn sentence(&self) -> String {
        let when = |ms: u64| calibration::admission::format_utc((ms / 1000) as i64);
        match self.status {
            OutcomeStatus::Provisional => format!(
                "provisional until {} ({})",
                when(self.final_at_ms),
                self.reason
            ),
            s => format!(
                "{} since log index {}, {} ({})",
                s.name(),
                self.changed_log_index,
                when(self.changed_at_ms),
                self.reason
            ),
        }
    }
}

/// What apply keeps to move statuses: windows due by time, and motions held by appeals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalityBook {
    /// (final_at_ms, motion id) of every provisional outcome.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub due: BTreeSet<(u64, String)>,
    /// Motion ids of appealed outcomes.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub appealed: BTreeSet<String>,
    /// Final accepted outcomes by the digest of the question's content
    /// (`precedent::digest`), from rule set 16: the first final outcome of each content.
    /// One row per final motion, like the motion itself.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub precedents: BTreeMap<String, String>,
}

impl FinalityBook {
    pub fn is_empty(&self) -> bool {
        self.due.is_empty() && self.appealed.is_empty() && self.precedents.is_empty()
    }
}
