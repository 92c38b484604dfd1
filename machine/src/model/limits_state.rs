//! What the limits remember in the replicated state (`limits` reads and charges it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::log::limit_policy::Rate;
use crate::model::reply_table::StoredRows;

/// A bucket in the replicated state: milli-tokens at a batch time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub milli: u64,
    pub at_ms: u64,
}

impl Bucket {
    pub(crate) fn full(rate: Rate, now_ms: u64) -> Self {
        Self {
            milli: rate.full_milli(),
            at_ms: now_ms,
        }
    }

    /// Milli-tokens at `now_ms`: `per_minute` tokens per 60 000 ms is `per_minute / 60`
    /// milli-tokens per ms. A clock that went backwards (a new leader) refills nothing.
    pub(crate) fn level(self, rate: Rate, now_ms: u64) -> u64 {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        let refill = elapsed.saturating_mul(rate.per_minute()) / 60;
        self.milli.saturating_add(refill).min(rate.full_milli())
    }
}

/// What the limits remember, in the replicated state (`State::limits`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsState {
    /// Token buckets by `identity:<fingerprint>` and `organisation:<name>`; buckets that
    /// have refilled are pruned (a full bucket and a missing one admit the same).
    #[serde(default)]
    pub buckets: BTreeMap<String, Bucket>,
    /// Debates convened per identity.
    #[serde(default)]
    pub debates_by_identity: BTreeMap<String, u32>,
    /// Contributions held per debate.
    #[serde(default)]
    pub contributions_by_debate: BTreeMap<String, u32>,
    /// Motions opened by each identity's panel requests; decided ones are pruned.
    #[serde(default)]
    pub asked: BTreeMap<String, Vec<String>>,
    /// Batch time of the last pruning pass.
    #[serde(default)]
    pub pruned_at_ms: u64,
    /// How much of its share of each global cap each class has used, by the global
    /// bucket's key and then the class (`organisation:<name>` or `anonymous`), in
    /// milli-tokens that leak at the share's rate; used-up entries are pruned.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shares: BTreeMap<String, BTreeMap<String, Bucket>>,
    /// Deduplication rows stored within the lease, by `identity:<fingerprint>`,
    /// `identity:anonymous` and `organisation:<name>` ([`ReplyBounds`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replies: BTreeMap<String, StoredRows>,
}
