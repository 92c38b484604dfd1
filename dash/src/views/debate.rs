//! One debate's page (`/debates/ID`): its positions, ledger and verdicts (the debates
//! list's card), then what ties the ledger to the panel: every claim (thread version) with
//! the motions that asked about it (the one that merged it among them), every challenge
//! and appeal with the motion that decided it, the arbiters who sat on its panels, and its
//! motions a page at a time, newest first, each linked to its own page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crucible::document::Debate;
use crucible::motion::Question;
use panel_machine::DebateRecord;
use panel_machine::Query;
use panel_machine::read::query::{AppealCreditsReply, DebateMotionsReply, DebateReply};
use panel_machine::{Acceptance, Decision, Outcome};
use panel_machine::{Motion, MotionStatus};

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{
    anchor, arbiter_href, debate_href, escape, head, link, motion_href, page as frame, url_value,
};
use crate::paging::Paging;
use crate::source::Source;
use crate::views::debates::debate_card;
use crate::views::{outcome_class, outcome_words};

/// Where the debate pages live: `/debates/ID`.
pub const ROUTE: &str = "/debates/{debate_id}";

/// How many rows of the motions table a page shows.
pub const PAGE_SIZE: usize = 50;

pub async fn page(
    src: &Source,
    debate_id: &str,
    page: usize,
    chrome: &Chrome,
) -> Result<String, DashError> {
    let r: DebateReply = src
        .read(&Query::Debate {
            debate_id: debate_id.to_string(),
        })
        .await?;
    let record = r.debate.ok_or_else(|| {
        DashError::NotFound(format!(
            "there is no debate {debate_id}; /debates lists them"
        ))
    })?;
    let ms: DebateMotionsReply = src
        .read(&Query::DebateMotions {
            debate_id: debate_id.to_string(),
        })
        .await?;
    let credits: AppealCreditsReply = src
        .read(&Query::AppealCredits {
            debate_id: Some(debate_id.to_string()),
        })
        .await?;
    let credits = appeal_credits(&credits, now_ms());
    render(debate_id, &record, &ms.motions, page, chrome, &credits)
}

/// The reader's clock, for the balances as they stand now (display only).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What appeals cost here (docs/PANEL.md "Funded appeals"): the terms, each organisation's
/// balance at `now_ms`, and the deposits this debate's appeals hold or held.
fn appeal_credits(c: &AppealCreditsReply, now_ms: u64) -> String {
    let mut s = String::from("<h3 id=\"appeal-credits\">Appeal credits</h3>");
    if !c.funded {
        s.push_str(
            "<p class=\"muted\">Appeals are not funded in this group (rule set 19 is not in force): an appeal costs nothing.</p>",
        );
        return s;
    }
    let t = &c.terms;
    let _ = write!(
        s,
        "<p>A debate's first appeal costs its appellant's organisation {} credit(s), each later round twice the one before; an organisation holds at most {}, and gets {} more every {} h. A won appeal gets its deposit back with half again; a lost one forfeits it.</p>",
        t.deposit,
        t.cap,
        t.per_period,
        t.period_ms / 3_600_000
    );
    s.push_str("<table>");
    s.push_str(&head(&["organisation", "balance now", "next credit"]));
    for o in &c.organisations {
        let (balance, next) = match &o.credits {
            Some(credits) => {
                let now = credits.at(t, now_ms);
                let next = if now.balance >= t.cap {
                    "full".to_string()
                } else {
                    format!("at {} (unix ms)", now.next_at_ms(t))
                };
                (now.balance, next)
            }
            None => (t.cap, "full (never charged)".to_string()),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{balance}</td><td>{}</td></tr>",
            escape(&o.organisation),
            escape(&next)
        );
    }
    s.push_str("</table>");
    if c.deposits.is_empty() {
        s.push_str("<p class=\"muted\">No deposit held or settled on this debate.</p>");
        return s;
    }
    s.push_str("<table>");
    s.push_str(&head(&[
        "appeal",
        "round",
        "organisation",
        "appellant",
        "deposit",
        "state",
        "returned",
    ]));
    for d in &c.deposits {
        let state = match d.state {
            panel_machine::model::appeal_credits::DepositState::Held => "held",
            panel_machine::model::appeal_credits::DepositState::Returned => "returned (won)",
            panel_machine::model::appeal_credits::DepositState::Forfeited => "forfeited",
        };
        let _ = write!(
            s,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{state}</td><td>{}</td></tr>",
            anchor(&d.appeal_id),
            escape(&d.appeal_id),
            d.round,
            escape(&d.organisation),
            escape(&d.author),
            d.amount,
            d.returned
        );
    }
    s.push_str("</table>");
    s
}

/// The page of debate `id`, with its `motions` in opening order and its appeal `credits`
/// section ([`appeal_credits`]) after the appeals.
pub fn render(
    id: &str,
    record: &DebateRecord,
    motions: &[Motion],
    page: usize,
    chrome: &Chrome,
    credits: &str,
) -> Result<String, DashError> {
    let paging = Paging {
        number: page,
        size: PAGE_SIZE,
    };
    let window = paging.window(motions.len())?;
    let asked = Asked::of(motions);
    let mut body = format!(
        "<p class=\"muted\">{} · {}</p>",
        link("/debates", "all debates"),
        link(
            &format!("/motions?debate={}", url_value(id)),
            "its motions as cards (filterable)"
        )
    );
    body.push_str(&debate_card(id, &record.debate, record.open.len()));
    body.push_str(&claims(&record.debate, &asked));
    body.push_str(&challenges_and_appeals(&record.debate, &asked));
    body.push_str(credits);
    body.push_str(&seats(motions));
    let _ = write!(
        body,
        "<h3 id=\"motions\">Motions, newest first</h3><p class=\"muted\">{} motion(s).</p>",
        motions.len()
    );
    let nav = paging.nav(motions.len(), |n| {
        format!("{}?page={n}{}#motions", debate_href(id), chrome.keep())
    });
    body.push_str(&nav);
    body.push_str(&motions_table(&motions[window]));
    body.push_str(&nav);
    Ok(frame(chrome, &format!("Debate {id}"), "/debates", &body))
}

/// The motions that asked about each thing of the debate, by what they asked about.
#[derive(Default)]
struct Asked<'a> {
    /// Version id -> motions about that claim (merge, tier, relevance).
    versions: BTreeMap<&'a str, Vec<&'a Motion>>,
    /// Challenge id -> the motions that resolved it.
    challenges: BTreeMap<&'a str, Vec<&'a Motion>>,
    /// Appeal id -> the motions that admitted or denied it.
    appeals: BTreeMap<&'a str, Vec<&'a Motion>>,
}

impl<'a> Asked<'a> {
    fn of(motions: &'a [Motion]) -> Asked<'a> {
        let mut a = Asked::default();
        for m in motions {
            let (map, key) = match &m.spec.question {
                Some(
                    Question::Merge { version_id, .. }
                    | Question::VerifyTier { version_id, .. }
                    | Question::AssignRelevance { version_id, .. },
                ) => (&mut a.versions, version_id.as_str()),
                Some(Question::ResolveChallenge { challenge_id }) => {
                    (&mut a.challenges, challenge_id.as_str())
                }
                Some(Question::AdmitAppeal { appeal_id }) => (&mut a.appeals, appeal_id.as_str()),
                _ => continue,
            };
            map.entry(key).or_default().push(m);
        }
        a
    }
}

/// Whether `m` is a merge motion the panel accepted with a yes: the motion that merged
/// its claim.
fn merged(m: &Motion) -> bool {
    matches!(m.spec.question, Some(Question::Merge { .. }))
        && matches!(
            m.status,
            MotionStatus::Decided(Acceptance::Accepted {
                outcome: Outcome::Decided(Decision::Yes),
                ..
            })
        )
}

/// "mot-3 (merge: accepted: Yes), mot-5 (...)", each linked; the merging one in bold.
fn motion_links(ms: &[&Motion]) -> String {
    if ms.is_empty() {
        return "<span class=\"muted\">none</span>".into();
    }
    ms.iter()
        .map(|m| {
            let l = link(
                &motion_href(&m.spec.motion_id),
                &format!("<code>{}</code>", escape(&m.spec.motion_id)),
            );
            let what = format!("{:?}, {}", m.spec.kind, outcome_words(&m.status));
            if merged(m) {
                format!("<b>merged by</b> {l} ({})", escape(&what))
            } else {
                format!("{l} ({})", escape(&what))
            }
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

fn claims(d: &Debate, asked: &Asked) -> String {
    let mut s = String::from("<h3 id=\"claims\">Claims</h3>");
    if d.threads.is_empty() {
        s.push_str("<p class=\"muted\">No claims yet.</p>");
        return s;
    }
    s.push_str("<table class=\"claims\">");
    s.push_str(&head(&[
        "claim",
        "side",
        "status",
        "assertion",
        "relevance",
        "motions about it",
    ]));
    for t in &d.threads {
        for v in &t.versions {
            let canonical = t.canonical_id.as_deref() == Some(v.id.as_str());
            let empty = Vec::new();
            let _ = write!(
                s,
                "<tr id=\"{}\"><td><code>{}</code> v{} of {}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                anchor(&v.id),
                escape(&v.id),
                v.num,
                escape(t.title.as_deref().unwrap_or(&t.id)),
                escape(v.side.as_deref().or(t.side.as_deref()).unwrap_or("?")),
                escape(&v.status),
                if canonical { " (canonical)" } else { "" },
                escape(v.assertion.as_deref().unwrap_or("")),
                v.relevance
                    .map_or_else(|| "–".into(), |r| format!("{:.2}", r.0)),
                motion_links(asked.versions.get(v.id.as_str()).unwrap_or(&empty))
            );
        }
    }
    s.push_str("</table>");
    s
}

fn challenges_and_appeals(d: &Debate, asked: &Asked) -> String {
    let mut s = String::new();
    let empty = Vec::new();
    if !d.challenges.is_empty() {
        s.push_str("<h3 id=\"challenges\">Challenges</h3><table>");
        s.push_str(&head(&[
            "challenge",
            "against",
            "ground",
            "resolution",
            "decided by",
        ]));
        for c in &d.challenges {
            let _ = write!(
                s,
                "<tr id=\"{}\"><td><code>{}</code></td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                anchor(&c.id),
                escape(&c.id),
                anchor(&c.version_id),
                escape(&c.version_id),
                escape(c.ground.as_deref().unwrap_or("")),
                escape(c.resolution.as_deref().unwrap_or("pending")),
                motion_links(asked.challenges.get(c.id.as_str()).unwrap_or(&empty))
            );
        }
        s.push_str("</table>");
    }
    s.push_str("<h3 id=\"appeals\">Appeals</h3>");
    if d.appeals.is_empty() {
        s.push_str("<p class=\"muted\">No appeals filed.</p>");
        return s;
    }
    s.push_str("<table>");
    s.push_str(&head(&["appeal", "side", "ground", "status", "decided by"]));
    for a in &d.appeals {
        let _ = write!(
            s,
            "<tr id=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            anchor(&a.id),
            escape(&a.id),
            escape(a.side.as_deref().unwrap_or("?")),
            escape(a.ground.as_deref().unwrap_or("")),
            escape(&a.status),
            motion_links(asked.appeals.get(a.id.as_str()).unwrap_or(&empty))
        );
    }
    s.push_str("</table>");
    s
}

/// The arbiters seated on the debate's motions, with how often.
fn seats(motions: &[Motion]) -> String {
    let mut by: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for m in motions {
        for seat in &m.seats {
            let e = by
                .entry(seat.arbiter_id.as_str())
                .or_insert((0, seat.organisation.as_str()));
            e.0 += 1;
        }
    }
    let mut s = String::from("<h3 id=\"seats\">Who sat on its panels</h3>");
    if by.is_empty() {
        s.push_str("<p class=\"muted\">No panel drawn yet.</p>");
        return s;
    }
    s.push_str("<p>");
    let items: Vec<String> = by
        .iter()
        .map(|(id, (n, org))| {
            format!(
                "{} ({}, {n} of {} motion(s))",
                link(&arbiter_href(id), &escape(id)),
                escape(org),
                motions.len()
            )
        })
        .collect();
    s.push_str(&items.join(", "));
    s.push_str("</p>");
    s
}

fn motions_table(rows: &[Motion]) -> String {
    if rows.is_empty() {
        return "<p class=\"muted\">No motions yet.</p>".into();
    }
    let mut s = String::from("<table class=\"motions\">");
    s.push_str(&head(&["motion", "kind", "question", "outcome", "status"]));
    for m in rows.iter().rev() {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{:?}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            link(
                &motion_href(&m.spec.motion_id),
                &format!("<code>{}</code>", escape(&m.spec.motion_id))
            ),
            m.spec.kind,
            escape(&m.spec.question_line()),
            outcome_class(&m.status),
            escape(&outcome_words(&m.status)),
            m.finality.as_ref().map_or("–", |f| f.status.name())
        );
    }
    s.push_str("</table>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use panel_machine::Stance;
    use panel_machine::rules::acceptance::GroupTally;

    fn merge_motion(n: usize, version: &str, status: MotionStatus) -> Motion {
        serde_json::from_value(serde_json::json!({
            "spec": {
                "motion_id": format!("mot-{n}"), "debate_id": "deb_1", "kind": "Merge",
                "state_hash": "00", "seats": 2, "min_per_stance": 1,
                "question": {"kind": "merge", "threadId": "t1", "versionId": version},
            },
            "seats": [{"arbiter_id": "arb-<a>", "stance": "A", "organisation": "north", "lineage": ""}],
            "draw_seed": 1, "opened_at_ms": 0, "opened_log_index": n, "status": "Open",
            "rulings": [], "decided_log_index": null
        }))
        .map(|mut m: Motion| {
            m.status = status;
            m
        })
        .expect("motion")
    }

    #[test]
    fn claims_link_the_motion_that_merged_them_and_motions_are_paged() {
        let st = fixtures::state(vec![fixtures::debate("Resolved: <i>x</i>.")]);
        let (id, mut r) = fixtures::only_debate(&st);
        r.debate.threads.push(
            serde_json::from_value(serde_json::json!({
                "id": "t1", "title": "T <1>", "side": "A", "canonicalId": "v1",
                "versions": [{"id": "v1", "threadId": "t1", "num": 1, "parentId": null,
                  "assertion": "<b>claim</b>", "evidence": [], "status": "canonical",
                  "relevance": null}]
            }))
            .expect("thread"),
        );
        let yes = MotionStatus::Decided(Acceptance::Accepted {
            outcome: Outcome::Decided(Decision::Yes),
            tallies: [(Stance::A, GroupTally { yes: 1, no: 0 })].into(),
        });
        let mut ms: Vec<Motion> = (0..PAGE_SIZE + 3)
            .map(|n| merge_motion(n, "v9", MotionStatus::Open))
            .collect();
        ms[1] = merge_motion(1, "v1", yes);
        let html = render(&id, &r, &ms, 1, &Chrome::default(), "").expect("page");
        assert!(
            !html.contains("<i>") && !html.contains("<b>claim"),
            "escaped"
        );
        assert!(
            html.contains("<tr id=\"v1\"><td><code>v1</code> v1 of T &lt;1&gt;</td>"),
            "{html}"
        );
        assert!(html.contains("<b>merged by</b> <a href=\"/motions/mot-1\"><code>mot-1</code></a> (Merge, accepted: Yes)"), "{html}");
        assert!(
            html.contains(
                "<a href=\"/arbiters/arb-%3Ca%3E\">arb-&lt;a&gt;</a> (north, 53 of 53 motion(s))"
            ),
            "{html}"
        );
        assert!(html.contains(&format!("href=\"/motions/mot-{}\"", PAGE_SIZE + 2)));
        assert!(
            !html.contains("href=\"/motions/mot-2\""),
            "page 1 has the newest 50"
        );
        assert!(html.contains(&format!("href=\"/debates/{id}?page=2#motions\"")));
        let html = render(&id, &r, &ms, 2, &Chrome::default(), "").expect("page 2");
        assert!(html.contains("href=\"/motions/mot-2\"") && html.contains("No appeals filed"));
        let e = render(&id, &r, &ms, 3, &Chrome::default(), "").expect_err("past the end");
        assert_eq!(e.status().as_u16(), 400);
    }

    /// The appeal credits section shows what an appeal costs, each organisation's balance
    /// as it stands at the reader's clock (a charged one refills by the period), and the
    /// debate's deposits with what became of them.
    #[test]
    fn appeal_credits_show_balances_and_deposits() {
        use panel_machine::model::appeal_credits::{
            AppealTerms, Deposit, DepositState, OrgCredits,
        };
        use panel_machine::read::query::OrgBalance;
        let terms = AppealTerms {
            cap: 8,
            per_period: 1,
            period_ms: 86_400_000,
            deposit: 2,
        };
        let deposit = |appeal: &str, round, amount, state, returned| Deposit {
            debate_id: "deb_1".into(),
            appeal_id: appeal.into(),
            author: "<ann>".into(),
            organisation: "north".into(),
            round,
            amount,
            state,
            filed_log_index: 3,
            won: state == DepositState::Returned,
            returned,
            settled_log_index: None,
        };
        let c = AppealCreditsReply {
            terms,
            funded: true,
            organisations: vec![
                OrgBalance {
                    organisation: "north".into(),
                    credits: Some(OrgCredits {
                        balance: 2,
                        anchor_ms: 0,
                    }),
                },
                OrgBalance {
                    organisation: "south".into(),
                    credits: None,
                },
            ],
            deposits: vec![
                deposit("app_1", 1, 2, DepositState::Returned, 3),
                deposit("app_2", 2, 4, DepositState::Held, 0),
            ],
        };
        // Two days after north's anchor: two credits added to its 2.
        let html = appeal_credits(&c, 2 * 86_400_000 + 5);
        assert!(
            html.contains("costs its appellant's organisation 2 credit(s)"),
            "{html}"
        );
        assert!(html.contains("<td>north</td><td>4</td>"), "{html}");
        assert!(
            html.contains("<td>south</td><td>8</td><td>full (never charged)</td>"),
            "{html}"
        );
        assert!(
            html.contains("returned (won)") && html.contains("<td>held</td>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;ann&gt;") && !html.contains("<ann>"),
            "escaped"
        );
        let unfunded = AppealCreditsReply { funded: false, ..c };
        assert!(appeal_credits(&unfunded, 0).contains("not funded"));
    }
}
