//! Funded appeals (docs/PANEL.md "Funded appeals"): from rule set
//! [`APPEAL_CREDITS`](crate::rules::APPEAL_CREDITS) an appeal costs its appellant's
//! organisation a deposit of appeal credits, doubled for each later round of the debate's
//! ladder, and is refused when the organisation cannot pay. The deposit is held until the
//! appeal ends: a won appeal (one that overturned an outcome it held) returns it with half
//! of it again; a lost one (denied, or its review left everything standing) forfeits it.
//!
//! Balances refill by whole periods of the leader-stamped batch time
//! ([`OrgCredits::at`]), never by a clock of the machine's own, so every replica and
//! `panel verify` hold the same balance at the same log index. An unchartered debug group
//! has no organisations: an appeal whose author names none there costs nothing.

use crate::log::refusal_code::RefusalCode;
use thiserror::Error;

use crate::model::State;
pub use crate::model::appeal_credits::{
    AppealCharge, AppealCreditBook, AppealTerms, Deposit, DepositState, OrgCredits,
};

/// Why an appeal was refused for want of credits; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AppealCreditError {
    #[error(
        "organisation {organisation} holds {balance} appeal credit(s) and appeal round {round} on debate {debate} costs {price} (each round doubles the first round's {first}); {when}; `panel debate show {debate}` shows every organisation's balance (docs/PANEL.md \"Funded appeals\")",
        when = replenish_sentence(*per_period, *period_ms, *next_at_ms, *affordable_at_ms, *cap)
    )]
    Short {
        organisation: String,
        debate: String,
        round: u32,
        price: u64,
        first: u64,
        balance: u64,
        per_period: u64,
        period_ms: u64,
        next_at_ms: u64,
        /// The most any budget holds.
        cap: u64,
        /// When the balance reaches the price; `None` when the price is above what any
        /// budget holds.
        affordable_at_ms: Option<u64>,
    },
    #[error(
        "appellant {author} has no organisation on record (it was registered before appeals were funded), so no budget can pay the deposit; file the appeal under a contributor registered with its organisation (`panel org register-contributor`) or under an arbiter's id"
    )]
    NoOrganisation { author: String },
}

impl AppealCreditError {
    pub fn code(&self) -> RefusalCode {
        match self {
            AppealCreditError::Short { .. } => RefusalCode::AppealCreditsShort,
            AppealCreditError::NoOrganisation { .. } => RefusalCode::AppealOrgUnknown,
        }
    }
}

/// "1 credit(s) are added every 1 d, next at ..., so it can pay from ...; file the
/// appeal then", or why waiting will not help.
fn replenish_sentence(
    per_period: u64,
    period_ms: u64,
    next_at_ms: u64,
    affordable_at_ms: Option<u64>,
    cap: u64,
) -> String {
    let when = |ms: u64| calibration::admission::format_utc((ms / 1000) as i64);
    let refill = format!(
        "{per_period} credit(s) are added every {}, next at {}",
        crate::features::finality::duration(period_ms),
        when(next_at_ms)
    );
    match affordable_at_ms {
        Some(at) => format!(
            "{refill}, so it can pay from {}: file the appeal again then, or let another organisation's contributor file it",
            when(at)
        ),
        None => format!(
            "{refill}, up to {cap}, so no budget ever holds that much: the debate's ladder has no further funded round and its outcomes stand as they are"
        ),
    }
}

/// The group's terms: its charter's `appeal_credits`, else the project's
/// ([`AppealTerms::DEFAULT`]; docs/PANEL.md "Funded appeals").
pub fn terms(state: &State) -> AppealTerms {
    match state.charter.as_ref().and_then(|c| c.appeal_credits) {
        Some(c) => AppealTerms {
            cap: c.budget,
            per_period: c.refill,
            period_ms: c.refill_period_ms,
            deposit: c.deposit,
        },
        None => AppealTerms::DEFAULT,
    }
}

/// The organisation an author speaks for: an arbiter's registered one, or the one that
/// endorsed a registered contributor.
pub fn organisation_of(state: &State, author: &str) -> Option<String> {
    if let Some(a) = state.arbiters.get(author) {
        return Some(a.registration.organisation.clone());
    }
    state
        .appeal_credits
        .contributor_organisations
        .get(author)
        .cloned()
}

/// An organisation's balance as of `now_ms` (a full budget when it has no row yet).
pub fn balance(state: &State, organisation: &str, now_ms: u64) -> OrgCredits {
    let terms = terms(state);
    state
        .appeal_credits
        .organisations
        .get(organisation)
        .map_or(OrgCredits::full(&terms, now_ms), |o| o.at(&terms, now_ms))
}

/// What an appeal about to be filed will cost, checked before anything changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub organisation: String,
    pub round: u32,
    pub price: u64,
}

/// The deposit `author`'s appeal on `debate_id` costs as round `round`, or why it cannot
/// be paid. `Ok(None)` when appeals are not funded here (before the rule set, or an
/// author with no organisation in an unchartered group).
pub fn quote(
    state: &State,
    now_ms: u64,
    debate_id: &str,
    author: &str,
    round: u32,
) -> Result<Option<Quote>, AppealCreditError> {
    if state.rules < crate::rules::APPEAL_CREDITS {
        return Ok(None);
    }
    let Some(organisation) = organisation_of(state, author) else {
        return match state.charter {
            Some(_) => Err(AppealCreditError::NoOrganisation {
                author: author.to_owned(),
            }),
            None => Ok(None),
        };
    };
    let terms = terms(state);
    let price = terms.price(round);
    let now = balance(state, &organisation, now_ms);
    if now.balance < price {
        return Err(AppealCreditError::Short {
            organisation,
            debate: debate_id.to_owned(),
            round,
            price,
            first: terms.deposit,
            balance: now.balance,
            per_period: terms.per_period,
            period_ms: terms.period_ms,
            next_at_ms: now.next_at_ms(&terms),
            cap: terms.cap,
            affordable_at_ms: now.affordable_at_ms(&terms, price),
        });
    }
    Ok(Some(Quote {
        organisation,
        round,
        price,
    }))
}

/// Charges a quoted deposit for the appeal just filed and holds it. The quote was checked
/// at the same batch time, so the balance covers it.
pub fn charge(
    state: &mut State,
    at: (u64, u64),
    debate_id: &str,
    appeal_id: &str,
    author: &str,
    q: Quote,
) -> AppealCharge {
    let terms = terms(state);
    let mut row = balance(state, &q.organisation, at.1);
    row.balance = row.balance.saturating_sub(q.price);
    let book = &mut state.appeal_credits;
    book.organisations.insert(q.organisation.clone(), row);
    let key = AppealCreditBook::key(debate_id, appeal_id);
    book.held.insert(key.clone());
    book.deposits.insert(
        key,
        Deposit {
            debate_id: debate_id.to_owned(),
            appeal_id: appeal_id.to_owned(),
            author: author.to_owned(),
            organisation: q.organisation.clone(),
            round: q.round,
            amount: q.price,
            state: DepositState::Held,
            filed_log_index: at.0,
            won: false,
            returned: 0,
            settled_log_index: None,
        },
    );
    AppealCharge {
        appeal_id: appeal_id.to_owned(),
        organisation: q.organisation,
        round: q.round,
        deposit: q.price,
        balance: row.balance,
        next_replenish_at_ms: row.next_at_ms(&terms),
    }
}

/// Settles every held deposit whose appeal has ended, at the end of a batch stamped `at`:
/// returned with half again when the appeal was won, forfeited when it was denied or its
/// review left everything standing. An appeal still filed, waiting or under review keeps
/// its deposit held.
pub fn settle(state: &mut State, at: (u64, u64)) {
    if state.appeal_credits.held.is_empty() {
        return;
    }
    let ended: Vec<String> = state
        .appeal_credits
        .held
        .iter()
        .filter(|k| appeal_ended(state, k))
        .cloned()
        .collect();
    for key in ended {
        settle_one(state, &key, at);
    }
}

/// Whether the appeal a deposit key names was denied or its review resolved.
fn appeal_ended(state: &State, key: &str) -> bool {
    let Some(d) = state.appeal_credits.deposits.get(key) else {
        return true;
    };
    state
        .debates
        .get(&d.debate_id)
        .and_then(|r| r.debate.appeal(&d.appeal_id))
        .is_none_or(|a| matches!(a.status.as_str(), "denied" | "resolved"))
}

fn settle_one(state: &mut State, key: &str, at: (u64, u64)) {
    let terms = terms(state);
    state.appeal_credits.held.remove(key);
    let Some(d) = state.appeal_credits.deposits.get(key).cloned() else {
        return;
    };
    let returned = if d.won {
        let mut row = balance(state, &d.organisation, at.1);
        let before = row.balance;
        row.balance = row
            .balance
            .saturating_add(terms.won_return(d.amount))
            .min(terms.cap);
        state
            .appeal_credits
            .organisations
            .insert(d.organisation.clone(), row);
        row.balance - before.min(row.balance)
    } else {
        0
    };
    if let Some(d) = state.appeal_credits.deposits.get_mut(key) {
        d.state = if d.won {
            DepositState::Returned
        } else {
            DepositState::Forfeited
        };
        d.returned = returned;
        d.settled_log_index = Some(at.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_federation::{AppealCredits, CHARTER_VERSION, Charter, Floors};

    fn charter(appeal_credits: Option<AppealCredits>) -> Charter {
        Charter {
            charter_version: CHARTER_VERSION,
            organisations: Vec::new(),
            admission_threshold: 1,
            replicas: Vec::new(),
            operators: Vec::new(),
            motion_key: String::new(),
            floors: Floors::PROJECT,
            log: None,
            witnesses: Vec::new(),
            exam: None,
            last_word: None,
            final_panel: None,
            appeal_credits,
        }
    }

    #[test]
    fn the_charter_grants_the_budget_and_the_project_terms_stand_in_without_it() {
        let mut s = State::default();
        assert_eq!(terms(&s), AppealTerms::DEFAULT, "no charter");
        s.charter = Some(charter(None));
        assert_eq!(terms(&s), AppealTerms::DEFAULT, "a charter naming no terms");
        s.charter = Some(charter(Some(AppealCredits {
            budget: 20,
            refill: 2,
            refill_period_ms: 3_600_000,
            deposit: 5,
        })));
        let t = terms(&s);
        assert_eq!(
            (t.cap, t.per_period, t.period_ms, t.deposit),
            (20, 2, 3_600_000, 5)
        );
        assert_eq!(t.price(2), 10, "each round doubles the charter's deposit");
    }
}
