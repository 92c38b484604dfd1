//! Appeal credits as `panel appeal` and `panel debate show` print them (docs/PANEL.md
//! "Funded appeals"): the deposit an appeal was charged and the balance left, each
//! appeal's deposit, and every organisation's balance.

use calibration::admission::format_utc;
use panel_machine::features::appeal_credits::{
    AppealCharge, AppealTerms, Deposit, DepositState, OrgCredits,
};
use panel_machine::read::query::AppealCreditsReply;

fn when(ms: u64) -> String {
    format_utc((ms / 1000) as i64)
}

/// `panel appeal`'s line for the deposit it was charged.
pub fn charge_line(c: &AppealCharge) -> String {
    format!(
        "deposit: {} appeal credit(s) charged to {} for appeal round {}; balance left: {} (more credits from {})",
        c.deposit,
        c.organisation,
        c.round,
        c.balance,
        when(c.next_replenish_at_ms)
    )
}

/// What became of one appeal's deposit, for its line in `panel debate show`.
pub fn deposit_note(d: &Deposit) -> String {
    let what = match d.state {
        DepositState::Held => "held until the appeal ends".to_owned(),
        DepositState::Returned => format!("won: {} credit(s) returned", d.returned),
        DepositState::Forfeited => "lost: forfeited".to_owned(),
    };
    format!(
        "deposit {} credit(s) from {} (round {}), {what}",
        d.amount, d.organisation, d.round
    )
}

/// One organisation's balance at `now_ms` (the reader's clock, for display only: the
/// machine refills by batch time when it next charges or pays back).
fn balance_now(terms: &AppealTerms, credits: Option<OrgCredits>, now_ms: u64) -> OrgCredits {
    credits.map_or(OrgCredits::full(terms, now_ms), |c| c.at(terms, now_ms))
}

/// `panel debate show`'s section of every organisation's appeal credits.
pub fn print_balances(r: &AppealCreditsReply, now_ms: u64) {
    if !r.funded {
        return;
    }
    let t = &r.terms;
    println!(
        "\nappeal credits (each organisation holds up to {}, +{} every {}; a debate's first appeal costs {}, each later round twice the one before)",
        t.cap,
        t.per_period,
        panel_machine::features::finality::duration(t.period_ms),
        t.deposit
    );
    for o in &r.organisations {
        let now = balance_now(t, o.credits, now_ms);
        let next = if now.balance >= t.cap {
            "full".to_owned()
        } else {
            format!("next credit at {}", when(now.next_at_ms(t)))
        };
        println!("  {:<16} {:>3}  ({next})", o.organisation, now.balance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_names_the_deposit_and_the_balance_left() {
        let line = charge_line(&AppealCharge {
            appeal_id: "app_1".into(),
            organisation: "northwind".into(),
            round: 2,
            deposit: 4,
            balance: 3,
            next_replenish_at_ms: 86_400_000,
        });
        assert!(
            line.starts_with("deposit: 4 appeal credit(s) charged to northwind"),
            "{line}"
        );
        assert!(line.contains("round 2; balance left: 3"), "{line}");
        assert!(line.contains("1970-01-02"), "{line}");
    }

    #[test]
    fn an_untouched_organisation_reads_full() {
        let t = AppealTerms::DEFAULT;
        assert_eq!(balance_now(&t, None, 5).balance, t.cap);
        let spent = OrgCredits {
            balance: 0,
            anchor_ms: 0,
        };
        assert_eq!(balance_now(&t, Some(spent), 3 * t.period_ms).balance, 3);
    }
}
