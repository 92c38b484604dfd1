//! `SetBreaker` as the log carries it: the scopes a pause holds back, the automatic
//! breaker's settings and the endorsed order (docs/SECURITY.md "Circuit breakers").

use panel_proto::breaker_order::{SCOPE_CLOSINGS, SCOPE_MOTIONS, SCOPE_VERDICTS};
use serde::{Deserialize, Serialize};

use crate::log::endorsement::Endorsement;

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// New motions: panel requests, procedure runs and the questions debates and runs
    /// open by themselves (they wait, and open once the pause is lifted).
    Motions,
    /// Closing commit-reveal rounds and recording outcomes.
    Closings,
    /// Issuing verdicts: a fresh verdict, or the advance into the verdict phase.
    Verdicts,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Motions, Scope::Closings, Scope::Verdicts];

    pub(crate) fn bit(self) -> u8 {
        match self {
            Scope::Motions => SCOPE_MOTIONS,
            Scope::Closings => SCOPE_CLOSINGS,
            Scope::Verdicts => SCOPE_VERDICTS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Motions => "motions",
            Scope::Closings => "closings",
            Scope::Verdicts => "verdicts",
        }
    }

    /// `motions`, `closings` or `verdicts`.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.name() == s.trim())
    }
}

/// The automatic breaker: over the last `window` decided motions, more than
/// `max_deadlock_permille` thousandths deadlocked, more than `max_refused_rulings`
/// rulings refused at their closes (equivocations, commitments never revealed), or more
/// than `max_overturned` outcomes overturned on appeal; or, with `on_flagged`, any prior
/// check that flags an arbiter: pauses new motions and says which signal tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoBreaker {
    pub window: u32,
    pub max_deadlock_permille: u16,
    pub max_refused_rulings: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_overturned: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_flagged: bool,
}

/// The most decisions an automatic breaker may watch: its window is kept in the state.
pub const MAX_WINDOW: u32 = 1_000;
/// The fewest: a signal over fewer decisions is noise.
pub const MIN_WINDOW: u32 = 10;

/// `SetBreaker`: pause or lift `scopes`, endorsed by member organisations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerOrder {
    /// 1 for the first order under the charter, then one more each time.
    pub seq: u64,
    pub scopes: Vec<Scope>,
    /// `true` pauses, `false` lifts.
    pub pause: bool,
    /// Why; shown in every refusal while the pause holds.
    pub reason: String,
    /// Arms (or re-arms with new settings) the automatic breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic: Option<AutoBreaker>,
    /// Member organisations' roster-key signatures over the order.
    pub endorsements: Vec<Endorsement>,
}
