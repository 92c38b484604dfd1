//! Appeal credits as the state keeps them (`appeal_credits` moves them; docs/PANEL.md
//! "Funded appeals"): each organisation's balance, the deposits appeals hold, and the
//! organisation each registered contributor speaks for.
//!
//! The federation has no currency. An appeal costs its appellant's organisation a deposit
//! of credits from a budget the group's terms grant ([`AppealTerms::DEFAULT`]) and refill
//! on a schedule of the leader-stamped batch time, so an organisation cannot contest
//! every outcome, and a won appeal pays back more than it cost.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The terms every organisation's budget runs on (docs/PANEL.md "Funded appeals").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealTerms {
    /// What an organisation holds before its first appeal, and the most it can hold.
    pub cap: u64,
    /// Credits added per period, up to `cap`.
    pub per_period: u64,
    /// The replenishing period, in batch-time milliseconds.
    pub period_ms: u64,
    /// The deposit of a debate's first appeal; each later appeal on the debate (the next
    /// round of its ladder) doubles it.
    pub deposit: u64,
}

impl AppealTerms {
    /// The group's terms from rule set [`APPEAL_CREDITS`](crate::rules::APPEAL_CREDITS):
    /// eight credits, one more a day, two for a first round (so four first-round appeals
    /// from a full budget, and a fourth round at 16 costs more than any budget holds).
    pub const DEFAULT: AppealTerms = AppealTerms {
        cap: 8,
        per_period: 1,
        period_ms: 24 * 60 * 60 * 1000,
        deposit: 2,
    };

    /// The deposit of appeal round `round` (the first appeal on a debate is round 1):
    /// `deposit · 2^(round-1)`, saturating.
    pub fn price(&self, round: u32) -> u64 {
        let doublings = round.saturating_sub(1);
        if doublings >= 64 {
            return u64::MAX;
        }
        self.deposit.saturating_mul(1u64 << doublings)
    }

    /// What a won appeal pays back: its deposit and half of it again (rounded down), the
    /// balance then capped at `cap`.
    pub fn won_return(&self, deposit: u64) -> u64 {
        deposit.saturating_add(deposit / 2)
    }
}

/// One organisation's balance. An organisation with no row holds `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrgCredits {
    pub balance: u64,
    /// Start of the period being counted: `per_period` credits are added at
    /// `anchor_ms + period_ms`, and the anchor moves on by whole periods.
    pub anchor_ms: u64,
}

impl OrgCredits {
    /// A full budget whose first period starts at `now_ms`.
    pub fn full(terms: &AppealTerms, now_ms: u64) -> OrgCredits {
        OrgCredits {
            balance: terms.cap,
            anchor_ms: now_ms,
        }
    }

    /// The balance at `now_ms`: every whole period since the anchor adds `per_period`, up
    /// to `cap`. Pure, so apply (at the batch time) and a reader (at its own clock, for
    /// display only) compute it alike.
    pub fn at(&self, terms: &AppealTerms, now_ms: u64) -> OrgCredits {
        if terms.period_ms == 0 || now_ms <= self.anchor_ms {
            return *self;
        }
        let periods = (now_ms - self.anchor_ms) / terms.period_ms;
        OrgCredits {
            balance: self
                .balance
                .saturating_add(periods.saturating_mul(terms.per_period))
                .min(terms.cap.max(self.balance)),
            anchor_ms: self
                .anchor_ms
                .saturating_add(periods.saturating_mul(terms.period_ms)),
        }
    }

    /// When the next credits are added.
    pub fn next_at_ms(&self, terms: &AppealTerms) -> u64 {
        self.anchor_ms.saturating_add(terms.period_ms)
    }

    /// When the balance first reaches `price`, or `None` when it never can (`price`
    /// above `cap`, or nothing replenishes).
    pub fn affordable_at_ms(&self, terms: &AppealTerms, price: u64) -> Option<u64> {
        if self.balance >= price {
            return Some(self.anchor_ms);
        }
        if price > terms.cap || terms.per_period == 0 {
            return None;
        }
        let periods = (price - self.balance).div_ceil(terms.per_period);
        Some(
            self.anchor_ms
                .saturating_add(periods.saturating_mul(terms.period_ms)),
        )
    }
}

/// Where a deposit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepositState {
    /// Charged; the appeal is not decided.
    Held,
    /// The appeal overturned an outcome: the deposit and half of it again went back.
    Returned,
    /// The appeal was denied, or its review left every outcome standing.
    Forfeited,
}

/// The deposit one appeal holds, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deposit {
    pub debate_id: String,
    pub appeal_id: String,
    /// The appellant (the contribution's author) and the organisation charged.
    pub author: String,
    pub organisation: String,
    /// The appeal's round on its debate (1 for the first appeal).
    pub round: u32,
    pub amount: u64,
    pub state: DepositState,
    pub filed_log_index: u64,
    /// Set when an outcome the appeal held was overturned (`finality::advance`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub won: bool,
    /// Credits given back when it was settled (0 when forfeited).
    #[serde(default)]
    pub returned: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_log_index: Option<u64>,
}

/// What a filed appeal was charged, as its `Contribute` reply says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealCharge {
    pub appeal_id: String,
    pub organisation: String,
    pub round: u32,
    pub deposit: u64,
    /// The organisation's balance after the charge.
    pub balance: u64,
    /// When its next credits are added.
    pub next_replenish_at_ms: u64,
}

/// Every balance and deposit (from rule set `APPEAL_CREDITS`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealCreditBook {
    /// Organisation name -> its balance, once it has been charged or paid back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub organisations: BTreeMap<String, OrgCredits>,
    /// `debate_id/appeal_id` -> the deposit the appeal holds or held.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deposits: BTreeMap<String, Deposit>,
    /// Keys of deposits still held, so a batch looks only at those.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub held: BTreeSet<String>,
    /// Registered contributor name -> the organisation that endorsed it
    /// (`RegisterContributor`), so an appeal it files is charged to that organisation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub contributor_organisations: BTreeMap<String, String>,
}

impl AppealCreditBook {
    pub fn is_empty(&self) -> bool {
        self.organisations.is_empty()
            && self.deposits.is_empty()
            && self.held.is_empty()
            && self.contributor_organisations.is_empty()
    }

    /// The key of an appeal's deposit.
    pub fn key(debate_id: &str, appeal_id: &str) -> String {
        format!("{debate_id}/{appeal_id}")
    }

    /// An outcome appeal `appeal_id` held on `debate_id` was overturned: the appeal is
    /// won, and `appeal_credits::settle` pays it back when it ends (`finality::advance`
    /// calls this as it moves the status).
    pub fn note_won(&mut self, debate_id: &str, appeal_id: &str) {
        if let Some(d) = self.deposits.get_mut(&Self::key(debate_id, appeal_id))
            && d.state == DepositState::Held
        {
            d.won = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 24 * 60 * 60 * 1000;

    #[test]
    fn each_round_doubles_the_deposit() {
        let t = AppealTerms::DEFAULT;
        assert_eq!(
            (1..=5).map(|r| t.price(r)).collect::<Vec<_>>(),
            [2, 4, 8, 16, 32]
        );
        assert_eq!(t.price(0), 2, "round 0 is read as the first");
        assert_eq!(t.price(200), u64::MAX, "saturates");
    }

    #[test]
    fn a_budget_replenishes_per_whole_period_up_to_its_cap() {
        let t = AppealTerms::DEFAULT;
        let spent = OrgCredits {
            balance: 1,
            anchor_ms: 10,
        };
        assert_eq!(spent.at(&t, 10 + DAY - 1), spent, "not a whole period yet");
        assert_eq!(
            spent.at(&t, 10 + DAY),
            OrgCredits {
                balance: 2,
                anchor_ms: 10 + DAY
            }
        );
        // Three periods and a half: three credits, the anchor on the third period.
        assert_eq!(
            spent.at(&t, 10 + 3 * DAY + DAY / 2),
            OrgCredits {
                balance: 4,
                anchor_ms: 10 + 3 * DAY
            }
        );
        assert_eq!(spent.at(&t, 10 + 100 * DAY).balance, t.cap, "capped");
        // Four credits short: four periods from the anchor; above the cap: never.
        assert_eq!(spent.affordable_at_ms(&t, 5), Some(10 + 4 * DAY));
        assert_eq!(spent.affordable_at_ms(&t, 16), None);
        assert_eq!(spent.next_at_ms(&t), 10 + DAY);
    }
}
