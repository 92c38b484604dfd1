//! One arbiter's page (`/arbiters/ID`): its registration, standing, exam and track record
//! (the arbiters list's card), then its history on the panel: every motion it was seated
//! on among the latest [`SCAN`] motions, with its own ruling, whether that ruling
//! dissented, and where the outcome went. The rates beside the history (dissent, deadlocks,
//! appeals lost) always show their counts, so a rate over three rulings reads as such.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use panel_machine::Query;
use panel_machine::features::finality::OutcomeStatus;
use panel_machine::read::query::{ArbiterReply, MotionsReply};
use panel_machine::{Acceptance, MotionKind, Stance};
use panel_machine::{Arbiter, Motion, MotionStatus};
use panel_proto::ruling_check;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{debate_href, escape, head, link, motion_href, page as frame, rate, url_value};
use crate::paging::Paging;
use crate::source::Source;
use crate::views::arbiters::card;
use crate::views::motions::SCAN;
use crate::views::rulings::{Rulings, dissents};
use crate::views::{Roster, outcome_class, outcome_words};

/// Where the arbiter pages live: `/arbiters/ID`.
pub const ROUTE: &str = "/arbiters/{arbiter_id}";

/// How many rows of history a page shows.
pub const PAGE_SIZE: usize = 50;

/// One motion the arbiter was seated on.
#[derive(Debug, Clone, PartialEq)]
pub struct Sitting {
    pub motion_id: String,
    /// The debate (`None` for a procedure run's motion, whose run id is `run`).
    pub debate: Option<String>,
    pub run: Option<String>,
    pub kind: MotionKind,
    pub question: String,
    pub stance: Stance,
    pub outcome: String,
    pub outcome_class: &'static str,
    /// Its ruling's decision, when one is on the record.
    pub ruling: Option<&'static str>,
    pub dissent: bool,
    /// The outcome's status (provisional, final, appealed, overturned).
    pub status: Option<OutcomeStatus>,
}

/// The arbiter's history and the counts its rates are made of.
#[derive(Debug, Default, PartialEq)]
pub struct History {
    /// In opening order.
    pub sittings: Vec<Sitting>,
    /// Rulings of its on the record.
    pub rulings: usize,
    /// Its counted rulings on motions the panel accepted, and how many of those went
    /// against the accepted outcome.
    pub counted_on_accepted: usize,
    pub dissents: usize,
    /// Decided motions it sat on, and how many of them deadlocked.
    pub decided: usize,
    pub deadlocks: usize,
    /// Accepted outcomes it ruled for, and how many of those an appeal overturned.
    pub ruled_for: usize,
    pub appeals_lost: usize,
}

impl History {
    /// The history of `a` over `motions` (in opening order).
    pub fn of(a: &Arbiter, motions: &[Motion]) -> History {
        let id = a.registration.arbiter_id.as_str();
        let roster = Roster::new(std::slice::from_ref(a));
        let mut h = History::default();
        for m in motions {
            let Some(seat) = m.seats.iter().find(|s| s.arbiter_id == id) else {
                continue;
            };
            let Rulings { reads, majority } = Rulings::of(m, &roster);
            let mine = reads
                .iter()
                .flatten()
                .find(|r| r.registered && r.arbiter == id);
            let dissent = mine.is_some_and(|r| dissents(&m.status, r, majority));
            let accepted = matches!(m.status, MotionStatus::Decided(Acceptance::Accepted { .. }));
            let counts = mine.is_some_and(|r| r.counted.is_some() || r.relevance.is_some());
            let status = m.finality.as_ref().map(|f| f.status);
            h.rulings += usize::from(mine.is_some());
            if accepted && counts {
                h.counted_on_accepted += 1;
                h.dissents += usize::from(dissent);
                if !dissent {
                    h.ruled_for += 1;
                    h.appeals_lost += usize::from(status == Some(OutcomeStatus::Overturned));
                }
            }
            if let MotionStatus::Decided(d) = &m.status {
                h.decided += 1;
                h.deadlocks += usize::from(!d.is_accepted());
            }
            h.sittings.push(Sitting {
                motion_id: m.spec.motion_id.clone(),
                debate: m.spec.procedure.is_none().then(|| m.spec.debate_id.clone()),
                run: m.spec.procedure.as_ref().map(|p| p.run_id.clone()),
                kind: m.spec.kind,
                question: m.spec.question_line(),
                stance: seat.stance,
                outcome: outcome_words(&m.status),
                outcome_class: outcome_class(&m.status),
                ruling: mine.map(|r| ruling_check::decision_name(r.decision)),
                dissent,
                status,
            });
        }
        h
    }

    /// Debates it sat on, with how many of their motions.
    fn debates(&self) -> BTreeMap<&str, usize> {
        let mut by = BTreeMap::new();
        for s in &self.sittings {
            if let Some(d) = &s.debate {
                *by.entry(d.as_str()).or_default() += 1;
            }
        }
        by
    }
}

pub async fn page(
    src: &Source,
    arbiter_id: &str,
    page: usize,
    chrome: &Chrome,
) -> Result<String, DashError> {
    let r: ArbiterReply = src
        .read(&Query::Arbiter {
            arbiter_id: arbiter_id.to_string(),
        })
        .await?;
    let a = r.arbiter.ok_or_else(|| {
        DashError::NotFound(format!(
            "there is no arbiter {arbiter_id}; /arbiters lists them"
        ))
    })?;
    let ms: MotionsReply = src.read(&Query::Motions { limit: Some(SCAN) }).await?;
    let history = History::of(&a, &ms.motions);
    let scanned = (ms.total > ms.motions.len()).then_some((ms.motions.len(), ms.total));
    render(&a, &history, scanned, page, chrome)
}

/// The page of `a` with its `history`; `scanned` is `(searched, of)` when the history
/// covers only the latest motions.
pub fn render(
    a: &Arbiter,
    history: &History,
    scanned: Option<(usize, usize)>,
    page: usize,
    chrome: &Chrome,
) -> Result<String, DashError> {
    let id = &a.registration.arbiter_id;
    let paging = Paging {
        number: page,
        size: PAGE_SIZE,
    };
    let window = paging.window(history.sittings.len())?;
    let mut body = format!(
        "<p class=\"muted\">{} · {} · {}</p>",
        link("/arbiters", "all arbiters"),
        link(
            &format!("/motions?arbiter={}", url_value(id)),
            "its motions as cards (filterable)"
        ),
        "only the latest exam sitting is kept on the arbiter's record; the track record covers the outcomes resolved since"
    );
    body.push_str(&rates(history, scanned));
    body.push_str(&debates_sat_on(history));
    body.push_str(&card(a));
    body.push_str("<h3>Motions it sat on, newest first</h3>");
    let nav = paging.nav(history.sittings.len(), |n| {
        format!(
            "{}?page={n}{}",
            crate::html::arbiter_href(id),
            chrome.keep()
        )
    });
    body.push_str(&nav);
    body.push_str(&sittings_table(&history.sittings[window]));
    body.push_str(&nav);
    Ok(frame(chrome, &format!("Arbiter {id}"), "/arbiters", &body))
}

/// The rates with their counts.
fn rates(h: &History, scanned: Option<(usize, usize)>) -> String {
    let mut s = String::from("<section class=\"card\" id=\"rates\"><h3>On the panel</h3><table>");
    let rows = [
        (
            "seated on",
            format!(
                "{} motion(s), {} ruling(s) of its on the record",
                h.sittings.len(),
                h.rulings
            ),
        ),
        (
            "dissent rate",
            format!(
                "{} counted rulings on accepted motions were against the accepted outcome",
                rate(h.dissents, h.counted_on_accepted)
            ),
        ),
        (
            "deadlocks",
            format!(
                "{} decided motions it sat on deadlocked",
                rate(h.deadlocks, h.decided)
            ),
        ),
        (
            "appeals lost",
            format!(
                "{} accepted outcomes it ruled for were overturned on appeal",
                rate(h.appeals_lost, h.ruled_for)
            ),
        ),
    ];
    for (k, v) in rows {
        let _ = write!(s, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    s.push_str("</table>");
    if let Some((searched, of)) = scanned {
        let _ = write!(
            s,
            "<p class=\"warn\">Counted over the latest {searched} of {of} motions; older sittings are not included.</p>"
        );
    }
    s.push_str("</section>");
    s
}

fn debates_sat_on(h: &History) -> String {
    let by = h.debates();
    if by.is_empty() {
        return String::new();
    }
    let mut s = String::from("<p id=\"debates\">Debates it sat on: ");
    let items: Vec<String> = by
        .iter()
        .map(|(d, n)| format!("{} ({n} motion(s))", link(&debate_href(d), &escape(d))))
        .collect();
    s.push_str(&items.join(", "));
    s.push_str("</p>");
    s
}

fn sittings_table(rows: &[Sitting]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">Not seated on any motion yet.</p>".into();
    }
    let mut s = String::from("<table class=\"history\">");
    s.push_str(&head(&[
        "motion",
        "from",
        "kind",
        "question",
        "seated as",
        "its ruling",
        "outcome",
        "status",
    ]));
    for r in rows.iter().rev() {
        let from = match (&r.debate, &r.run) {
            (Some(d), _) => link(&debate_href(d), &escape(d)),
            (None, Some(run)) => link(&format!("/runs#{}", crate::html::anchor(run)), &escape(run)),
            (None, None) => String::new(),
        };
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td>{from}</td><td>{:?}</td><td>{}</td><td>stance {}</td><td>{}{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            if r.dissent { " class=\"dissent\"" } else { "" },
            link(
                &motion_href(&r.motion_id),
                &format!("<code>{}</code>", escape(&r.motion_id))
            ),
            r.kind,
            escape(&r.question),
            r.stance,
            r.ruling.unwrap_or("none on the record"),
            if r.dissent {
                " <b class=\"warn\">dissent</b>"
            } else {
                ""
            },
            r.outcome_class,
            escape(&r.outcome),
            r.status.map_or("–", OutcomeStatus::name)
        );
    }
    s.push_str("</table>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_machine::WireRuling;
    use panel_machine::rules::acceptance::{Dissent, GroupTally};
    use panel_machine::{Decision, Outcome, Seat};
    use panel_proto::pb;

    fn arbiter(id: &str, key: u8) -> Arbiter {
        serde_json::from_value(serde_json::json!({
            "registration": {
                "arbiter_id": id, "public_key": hex::encode([key; 32]), "organisation": "org",
                "model_family": "fam", "stance": "A", "endpoint": "link"
            },
            "admitted": true, "score_milli": 800, "registered_at_ms": 0
        }))
        .expect("arbiter")
    }

    fn ruling(key: u8, decision: pb::Decision) -> WireRuling {
        WireRuling::encode(&pb::SignedRuling {
            ruling: Some(pb::Ruling {
                decision: decision as i32,
                probability: 0.7,
                arbiter_key: vec![key; 32],
                ..Default::default()
            }),
            signature: vec![0; 64],
            envelope_version: 1,
        })
    }

    /// A challenge motion `n` of deb_1 with `a1` (key 1) and `b1` (key 2) seated.
    fn motion(n: usize, status: MotionStatus, mine: pb::Decision) -> Motion {
        let spec = serde_json::from_value(serde_json::json!({
            "motion_id": format!("mot-{n}"), "debate_id": "deb_<1>", "kind": "Challenge",
            "state_hash": "00", "seats": 2, "min_per_stance": 1,
            "question": {"kind": "resolve-challenge", "challengeId": "ch_1"},
        }))
        .expect("spec");
        let seat = |id: &str, stance| Seat {
            arbiter_id: id.into(),
            stance,
            organisation: "org".into(),
            lineage: String::new(),
        };
        Motion {
            spec,
            seats: vec![seat("a1", Stance::A), seat("b1", Stance::B)],
            draw_seed: 1,
            opened_at_ms: 0,
            opened_log_index: n as u64,
            status,
            rulings: vec![ruling(1, mine), ruling(2, pb::Decision::Uphold)],
            reveals: vec![],
            decided_log_index: None,
            round: None,
            independence: None,
            effect_refused: None,
            confidence: None,
            finality: None,
            beacon: None,
            precedent: None,
            fresh_panel: None,
            last_word: None,
        }
    }

    fn upheld() -> MotionStatus {
        MotionStatus::Decided(Acceptance::Accepted {
            outcome: Outcome::Decided(Decision::Yes),
            tallies: [(Stance::A, GroupTally { yes: 1, no: 0 })].into(),
        })
    }

    #[test]
    fn the_history_counts_dissent_deadlocks_and_lost_appeals() {
        let a = arbiter("a1", 1);
        let mut overturned = motion(2, upheld(), pb::Decision::Uphold);
        overturned.finality = Some(
            serde_json::from_value(serde_json::json!({
                "status": "overturned", "final_at_ms": 0, "reason": "appeal", "changed_log_index": 9,
                "changed_at_ms": 0
            }))
            .expect("finality"),
        );
        let dead = MotionStatus::Decided(Acceptance::Deadlocked(Dissent {
            reasons: vec![],
            tallies: BTreeMap::new(),
            ignored: vec![],
        }));
        let mut deadlocked = motion(3, dead, pb::Decision::Dismiss);
        deadlocked.rulings.push(ruling(3, pb::Decision::Uphold));
        let mut other = motion(4, upheld(), pb::Decision::Uphold);
        other.seats.remove(0);
        let ms = vec![
            motion(0, upheld(), pb::Decision::Dismiss),
            motion(1, upheld(), pb::Decision::Uphold),
            overturned,
            deadlocked,
            other,
            motion(5, MotionStatus::Open, pb::Decision::Uphold),
        ];
        let h = History::of(&a, &ms);
        assert_eq!(h.sittings.len(), 5, "not seated on mot-4");
        assert_eq!((h.dissents, h.counted_on_accepted), (1, 3));
        assert_eq!((h.deadlocks, h.decided), (1, 4));
        assert_eq!((h.appeals_lost, h.ruled_for), (1, 2));
        assert_eq!(h.rulings, 5);
        assert!(h.sittings[0].dissent && !h.sittings[1].dissent);
        assert!(h.sittings[3].dissent, "against the majority of a deadlock");

        let html = render(&a, &h, Some((6, 7000)), 1, &Chrome::default()).expect("page");
        assert!(
            html.contains("1 of 3 (33.3%) counted rulings on accepted motions were against"),
            "{html}"
        );
        assert!(html.contains("1 of 2 (50.0%) accepted outcomes it ruled for were overturned"));
        assert!(html.contains("latest 6 of 7000 motions"));
        assert!(html.contains("<a href=\"/motions/mot-5\"><code>mot-5</code></a>"));
        assert!(
            html.contains("<a href=\"/debates/deb_%3C1%3E\">deb_&lt;1&gt;</a> (5 motion(s))"),
            "{html}"
        );
        assert!(html.contains("href=\"/motions?arbiter=a1\""));
        assert!(!html.contains("<1>"));
        let e = render(&a, &h, None, 2, &Chrome::default()).expect_err("one page only");
        assert_eq!(e.status().as_u16(), 400);
    }
}
