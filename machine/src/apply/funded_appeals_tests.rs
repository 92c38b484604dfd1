//! Funded appeals through the real apply (rule set 19, docs/PANEL.md "Funded appeals"):
//! charged, refused when broke, doubled per round, replenished by the batch time,
//! returned with half again when won, forfeited when lost, and free before the rule set.

use serde_json::{Value, json};

use super::debates::tests::{advance_motion, close_and_appeal, decide, ten_admitted, tick, write};
use crate::command::{ClientCommand, ContributionSubmission, ItemReply};
use crate::features::appeal_credits::{AppealCharge, DepositState, OrgCredits};
use crate::model::State;
use crate::model::appeal_credits::AppealCreditBook;

const DAY: u64 = 24 * 60 * 60 * 1000;

/// Ten admitted arbiters, deb_1 with an accepted (provisional) advance, and appellant
/// `x` speaking for `north`.
fn funded() -> State {
    let mut s = ten_admitted();
    s.rules = crate::rules::CURRENT;
    s.appeal_credits
        .contributor_organisations
        .insert("x".into(), "north".into());
    let advance = advance_motion(&mut s, 40);
    assert!(matches!(
        decide(&mut s, 60, &advance, |_| true),
        ItemReply::Applied(_)
    ));
    s
}

fn charge_of(v: &Value) -> AppealCharge {
    serde_json::from_value(v["appeal_deposit"].clone()).expect("the deposit charged")
}

fn deposit(s: &State, appeal_id: &str) -> crate::features::appeal_credits::Deposit {
    s.appeal_credits
        .deposits
        .get(&AppealCreditBook::key("deb_1", appeal_id))
        .cloned()
        .expect("a deposit")
}

fn north(s: &State) -> OrgCredits {
    s.appeal_credits.organisations["north"]
}

/// The appeal panel of the reply `v` denies it at batch `n`.
fn deny(s: &mut State, n: u64, v: &Value) {
    let motion = v["opened"][0]
        .as_str()
        .expect("the appeal's motion")
        .to_owned();
    assert!(matches!(
        decide(s, n, &motion, |_| false),
        ItemReply::Applied(_)
    ));
}

#[test]
fn an_appeal_is_charged_and_a_denied_one_forfeits_its_deposit() {
    let mut s = funded();
    let v = close_and_appeal(&mut s, 80, 1_070, "B");
    let c = charge_of(&v);
    assert_eq!(
        (c.organisation.as_str(), c.round, c.deposit, c.balance),
        ("north", 1, 2, 6),
        "{c:?}"
    );
    assert_eq!(c.next_replenish_at_ms, 1_080 + DAY);
    assert_eq!(deposit(&s, "app_1").state, DepositState::Held);
    // The read shows the balance and the deposit.
    let r: crate::read::query::AppealCreditsReply =
        serde_json::from_value(crate::read::query::query(
            &s,
            &crate::command::Query::AppealCredits {
                debate_id: Some("deb_1".into()),
            },
        ))
        .expect("typed reply");
    assert!(r.funded);
    let row = r.organisations.iter().find(|o| o.organisation == "north");
    assert_eq!(row.and_then(|o| o.credits).map(|c| c.balance), Some(6));
    assert_eq!(r.deposits.len(), 1);

    deny(&mut s, 90, &v);
    let d = deposit(&s, "app_1");
    assert_eq!(
        (d.state, d.returned, d.settled_log_index),
        (DepositState::Forfeited, 0, Some(90))
    );
    assert_eq!(north(&s).balance, 6, "nothing comes back");
    assert!(s.appeal_credits.held.is_empty());
}

#[test]
fn each_round_doubles_the_deposit_and_a_broke_organisation_waits_for_its_refill() {
    let mut s = funded();
    let first = close_and_appeal(&mut s, 80, 1_070, "B");
    deny(&mut s, 90, &first);
    // Round 2 costs twice round 1.
    let second = close_and_appeal(&mut s, 100, 1_095, "A");
    let c = charge_of(&second);
    assert_eq!((c.round, c.deposit, c.balance), (2, 4, 2), "{c:?}");
    deny(&mut s, 110, &second);
    // Round 3 costs 8 and north holds 2: refused, naming balance, price and refill, and
    // nothing changes.
    let before = s.debates.get("deb_1").expect("debate").debate.appeals.len();
    let rec = s.debates.get_mut("deb_1").expect("debate");
    rec.debate.phase = "closed".into();
    let appeal: ContributionSubmission = serde_json::from_value(json!({
        "debate_id": "deb_1", "author": "x", "side": "B",
        "contribution": {"op": "appeal", "ground": "A2", "justification": "The panel resolved these challenges before the response filed in time was shown to it.", "evidence": [], "targetThreadIds": []},
    }))
    .expect("appeal");
    let r = write(&mut s, 120, ClientCommand::Contribute(appeal.clone()));
    let ItemReply::Refused { code, message } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(code, "appeal_credits_short");
    for needle in [
        "holds 2 appeal credit(s)",
        "round 3",
        "costs 8",
        "next at",
        "can pay from",
    ] {
        assert!(message.contains(needle), "{needle:?} in {message}");
    }
    assert_eq!(
        s.debates.get("deb_1").expect("debate").debate.appeals.len(),
        before
    );
    assert_eq!(north(&s).balance, 2);
    // Six whole days of batch time later north holds 8 (capped) and round 3 is paid.
    tick(&mut s, 80 + 6 * DAY);
    let v = match write(&mut s, 81 + 6 * DAY, ClientCommand::Contribute(appeal)) {
        ItemReply::Applied(v) => v.to_json(),
        r => panic!("{r:?}"),
    };
    let c = charge_of(&v);
    assert_eq!((c.round, c.deposit, c.balance), (3, 8, 0), "{c:?}");
    // Round 4 would cost 16, more than any budget holds: never fundable.
    let q = crate::features::appeal_credits::quote(&s, 1_000 + 90 * DAY, "deb_1", "x", 4);
    let Err(e) = q else { panic!("{q:?}") };
    assert!(
        e.to_string().contains("no budget ever holds that much"),
        "{e}"
    );
}

#[test]
fn a_won_appeal_returns_its_deposit_with_half_again() {
    let mut s = funded();
    s.appeal_credits.organisations.insert(
        "north".into(),
        OrgCredits {
            balance: 4,
            anchor_ms: 1_070,
        },
    );
    let v = close_and_appeal(&mut s, 80, 1_070, "B");
    assert_eq!(charge_of(&v).balance, 2);
    // The review overturned an outcome the appeal held (`finality::advance` notes it),
    // and the appeal is resolved.
    s.appeal_credits.note_won("deb_1", "app_1");
    let rec = s.debates.get_mut("deb_1").expect("debate");
    rec.debate.appeals[0].status = "resolved".into();
    tick(&mut s, 95);
    let d = deposit(&s, "app_1");
    assert_eq!(
        (d.state, d.returned, d.won),
        (DepositState::Returned, 3, true)
    );
    assert_eq!(north(&s).balance, 5, "2 left + 2 back + 1 share");
}

#[test]
fn before_rule_set_19_and_without_an_organisation_an_appeal_costs_nothing() {
    let mut s = funded();
    s.rules = crate::rules::BEACON_DRAW;
    let v = close_and_appeal(&mut s, 80, 1_070, "B");
    assert!(v.get("appeal_deposit").is_none(), "{v}");
    assert!(s.appeal_credits.deposits.is_empty());

    // An unchartered group's free author name speaks for no organisation.
    let mut s = funded();
    s.appeal_credits.contributor_organisations.clear();
    let v = close_and_appeal(&mut s, 80, 1_070, "B");
    assert!(v.get("appeal_deposit").is_none(), "{v}");
}

#[test]
fn an_arbiters_appeal_is_charged_to_its_organisation() {
    let s = funded();
    let organisation = crate::features::appeal_credits::organisation_of(&s, "b5");
    assert_eq!(organisation.as_deref(), Some("south"));
    let q =
        crate::features::appeal_credits::quote(&s, 2_000, "deb_1", "b5", 1).expect("affordable");
    assert_eq!(
        q.map(|q| (q.organisation, q.price)),
        Some(("south".into(), 2))
    );
}

/// Rule set 23: each appeal round asks twice the previous round's panel plus one (N, 2N+1,
/// 4N+3), and where the pool cannot seat that, N+2r, then N; below the rule set N+2r.
#[test]
fn appeal_panels_double_per_round_and_fall_back_where_the_pool_is_small() {
    use crucible::motion::Question;
    let s = funded();
    let rec = s.debates.get("deb_1").expect("debate");
    let first = Question::AdmitAppeal {
        appeal_id: "app_1".into(),
    };
    assert_eq!(
        rec.seat_ladder(&first, crate::rules::CURRENT, false),
        [9, 6]
    );
    assert_eq!(
        rec.seat_ladder(&first, crate::rules::SAMPLE_APPEALS, false),
        [6]
    );
    assert_eq!(rec.seat_ladder(&first, crate::rules::CURRENT, true), [4]);
    // Ten admitted, none contested: the first round's nine seats are drawn.
    let mut s = funded();
    let v = close_and_appeal(&mut s, 80, 1_070, "B");
    let motion = v["opened"][0].as_str().expect("the appeal's motion");
    assert_eq!(s.motions.get(motion).expect("motion").seats.len(), 9);
    deny(&mut s, 90, &v);
    // The second round asks 19, which a pool of ten cannot seat: it falls back to N+4.
    let second = close_and_appeal(&mut s, 100, 1_095, "A");
    let rec = s.debates.get("deb_1").expect("debate");
    let q = Question::AdmitAppeal {
        appeal_id: "app_2".into(),
    };
    assert_eq!(rec.seat_ladder(&q, crate::rules::CURRENT, false), [19, 8]);
    let opened = second["opened"][0].as_str().map(str::to_owned);
    let seated = opened.and_then(|m| s.motions.get(&m).map(|m| m.seats.len()));
    assert_eq!(seated, Some(8));
}
