//! The breakers' rows: pauses in force and the automatic breaker's window (`breakers`
//! moves them).

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::log::breaker_order::{AutoBreaker, Scope};

/// One pause in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    pub reason: String,
    /// The endorsing organisations, or `automatic breaker` for a trip.
    pub by: Vec<String>,
    pub log_index: u64,
    pub since_ms: u64,
}

/// The breakers' state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakers {
    /// Orders applied so far (the next order's `seq` is one more).
    pub orders: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paused: BTreeMap<Scope, Pause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic: Option<AutoBreaker>,
    /// The automatic breaker's window: per decided motion, whether it deadlocked and how
    /// many rulings its close refused. Kept only while a breaker is armed.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub recent: VecDeque<(bool, u32)>,
    /// Outcomes overturned on appeal, per decided motion of `recent` (the overturns that
    /// came before it), while an overturn bound is armed.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub overturns: VecDeque<u32>,
    /// Overturns since the last decided motion.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pending_overturns: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Breakers {
    pub fn is_empty(&self) -> bool {
        *self == Breakers::default()
    }

    /// Forgets the window's signals (a lift of new motions, or a re-arm, starts afresh).
    pub fn fresh_window(&mut self) {
        self.recent.clear();
        self.overturns.clear();
        self.pending_overturns = 0;
    }
}
