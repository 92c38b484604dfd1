//! Motions: each motion's question, its drawn seats, and every signed ruling on the
//! record grouped by the stance it was seated under; rulings against the accepted outcome
//! (or, in a deadlock, against the majority) are highlighted as dissent, and a deadlock's
//! reasons are given as sentences (the machine's `Display` of `DeadlockReason`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use panel_machine::acceptance::{Acceptance, Decision, Outcome, Stance};
use panel_machine::command::Query;
use panel_machine::model::{Arbiter, Motion, MotionStatus};
use panel_machine::query::{ArbitersReply, DebateMotionsReply, DebateReply, MotionsReply};
use panel_machine::ruling::wire_kind;
use panel_proto::pb;
use panel_proto::ruling_check;

use crate::error::DashError;
use crate::html::{anchor, escape, head, page as frame, row, url_value};
use crate::source::Source;
use crate::views::{Roster, tallies_text};

pub const PATH: &str = "/motions";

/// How many motions a page shows at most: the latest of all, or one page of a debate's.
pub const LIMIT: usize = 200;

/// Which motions to show: the latest [`LIMIT`] of all, or (`?debate=ID`) one debate's,
/// [`LIMIT`] a page, newest first (`&page=2` the next older, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub debate: Option<String>,
    /// From 1, the newest.
    pub page: usize,
}

impl Default for Filter {
    fn default() -> Filter {
        Filter {
            debate: None,
            page: 1,
        }
    }
}

impl Filter {
    /// The filter of a query string (`debate=ID&page=N`); other keys are ignored. A page
    /// that is not a number from 1, or a page without a debate, is a 400.
    pub fn parse(q: &str) -> Result<Filter, DashError> {
        let mut f = Filter::default();
        for (k, v) in crate::server::params(q) {
            match k.as_str() {
                "debate" if !v.is_empty() => f.debate = Some(v),
                "page" => {
                    f.page = v.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        DashError::BadRequest(format!(
                            "page={v} is not a page number: pages count from 1, newest first (/motions?debate=ID&page=2 has the {LIMIT} before the newest {LIMIT})"
                        ))
                    })?;
                }
                _ => {}
            }
        }
        if f.page > 1 && f.debate.is_none() {
            return Err(DashError::BadRequest(format!(
                "page= pages one debate's motions (/motions?debate=ID&page=N); /motions shows the latest {LIMIT} of all"
            )));
        }
        Ok(f)
    }

    /// This filter's address on another page.
    fn href(&self, page: usize) -> String {
        match &self.debate {
            Some(d) if page > 1 => format!("{PATH}?debate={}&amp;page={page}", url_value(d)),
            Some(d) => format!("{PATH}?debate={}", url_value(d)),
            None => PATH.to_string(),
        }
    }
}

/// Page `page` (from 1) of `all` (in opening order): the [`LIMIT`] newest on page 1, the
/// [`LIMIT`] before them on page 2, ...; `None` past the last page (page 1 always exists).
pub fn page_of(all: &[Motion], page: usize) -> Option<&[Motion]> {
    let newer = page.saturating_sub(1).checked_mul(LIMIT)?;
    if page > 1 && newer >= all.len() {
        return None;
    }
    let end = all.len() - newer;
    Some(&all[end.saturating_sub(LIMIT)..end])
}

/// How many pages `n` motions fill.
fn pages(n: usize) -> usize {
    n.div_ceil(LIMIT).max(1)
}

pub async fn page(src: &Source, filter: &Filter) -> Result<String, DashError> {
    match &filter.debate {
        Some(id) => {
            // The query has no window: the whole list comes, one page of it is shown.
            let r: DebateMotionsReply = src
                .read(&Query::DebateMotions {
                    debate_id: id.clone(),
                })
                .await?;
            if r.motions.is_empty() {
                let d: DebateReply = src
                    .read(&Query::Debate {
                        debate_id: id.clone(),
                    })
                    .await?;
                if d.debate.is_none() {
                    return Err(DashError::NotFound(format!(
                        "there is no debate {id}; /debates lists them"
                    )));
                }
            }
            let n = r.motions.len();
            let shown = page_of(&r.motions, filter.page).ok_or_else(|| {
                DashError::NotFound(format!(
                    "debate {id} has {n} motion(s), {} page(s) of {LIMIT}: there is no page {}",
                    pages(n),
                    filter.page
                ))
            })?;
            let arbiters: ArbitersReply = src.read(&Query::Arbiters).await?;
            Ok(render(shown, n, &arbiters.arbiters, filter))
        }
        None => {
            let r: MotionsReply = src.read(&Query::Motions { limit: Some(LIMIT) }).await?;
            let arbiters: ArbitersReply = src.read(&Query::Arbiters).await?;
            Ok(render(&r.motions, r.total, &arbiters.arbiters, filter))
        }
    }
}

/// The page: `motions` in opening order (shown newest first), of `total` that matched;
/// with a debate, they are page `filter.page` of its motions.
pub fn render(motions: &[Motion], total: usize, arbiters: &[Arbiter], filter: &Filter) -> String {
    let roster = Roster::new(arbiters);
    let mut body = String::new();
    let scope = match &filter.debate {
        Some(d) => format!("of debate <code>{}</code>", escape(d)),
        None => "of debates and procedure runs".into(),
    };
    let newer = match filter.debate {
        Some(_) => filter
            .page
            .saturating_sub(1)
            .saturating_mul(LIMIT)
            .min(total),
        None => 0,
    };
    let older = total.saturating_sub(newer + motions.len());
    let _ = write!(
        body,
        "<p class=\"muted\" id=\"paging\">{total} motion(s) {scope}, newest first"
    );
    match &filter.debate {
        Some(_) if newer + older > 0 => {
            let _ = write!(
                body,
                "; page {} of {} shows {} of them",
                filter.page,
                pages(total),
                motions.len()
            );
            if newer > 0 {
                let _ = write!(
                    body,
                    ". The {newer} newer are on <a href=\"{}\">page 1</a>{}",
                    filter.href(1),
                    if filter.page > 2 {
                        format!(
                            " to <a href=\"{}\">page {}</a>",
                            filter.href(filter.page - 1),
                            filter.page - 1
                        )
                    } else {
                        String::new()
                    }
                );
            }
            if older > 0 {
                let _ = write!(
                    body,
                    ". {older} older motion(s) are left out: <a href=\"{}\">page {}</a> has the next {}",
                    filter.href(filter.page + 1),
                    filter.page + 1,
                    older.min(LIMIT)
                );
            }
            body.push_str(". ");
        }
        None if older > 0 => {
            let _ = write!(
                body,
                "; the latest {} are shown and {older} older ones are left out. Each debate's page (<code>/motions?debate=ID</code>, linked from <a href=\"/debates\">the debates</a>) has all of its motions, {LIMIT} a page. ",
                motions.len()
            );
        }
        _ => body.push_str(". "),
    }
    if filter.debate.is_some() {
        body.push_str("<a href=\"/motions\">all motions</a>");
    }
    body.push_str(
        "</p><p class=\"muted\">Rows marked as dissent are rulings against the outcome the panel accepted (or, in a deadlock, against the majority of counted rulings).</p>",
    );
    if motions.is_empty() {
        body.push_str("<p class=\"muted\">No motions yet.</p>");
    }
    for m in motions.iter().rev() {
        body.push_str(&motion_card(m, &roster));
    }
    frame("Motions", PATH, &body)
}

/// One ruling on the record, decoded from its signed protobuf.
struct Read {
    arbiter: String,
    decision: pb::Decision,
    counted: Option<Decision>,
    probability: f64,
    relevance: Option<u32>,
    tier: Option<u32>,
    receipt: Option<(String, String)>,
    rationale: String,
}

/// Why a logged ruling cannot be shown; the page lists it as unreadable instead.
#[derive(Debug, thiserror::Error)]
enum UnreadableRuling {
    #[error(transparent)]
    Decode(#[from] panel_machine::ruling::RulingError),
    #[error("the signed ruling carries no ruling")]
    Empty,
}

fn read_ruling(
    m: &Motion,
    w: &panel_machine::ruling::WireRuling,
    roster: &Roster,
) -> Result<Read, UnreadableRuling> {
    let sr = w.decode()?;
    let r = sr.ruling.ok_or(UnreadableRuling::Empty)?;
    let key = hex::encode(&r.arbiter_key);
    let arbiter = roster.by_key(&key).map_or_else(
        || format!("unregistered key {}", key.get(..12).unwrap_or(&key)),
        |a| a.registration.arbiter_id.clone(),
    );
    let decision = pb::Decision::try_from(r.decision).unwrap_or(pb::Decision::Unspecified);
    let counted = match (ruling_check::binary_pair(wire_kind(m.spec.kind)), decision) {
        (_, pb::Decision::Abstain) => None,
        (Some((yes, _)), d) if d == yes => Some(Decision::Yes),
        (Some((_, no)), d) if d == no => Some(Decision::No),
        (Some(_), _) => None,
        (None, _) => Some(Decision::Yes),
    };
    Ok(Read {
        arbiter,
        decision,
        counted,
        probability: r.probability,
        relevance: r.relevance,
        tier: r.tier,
        receipt: r
            .receipt
            .as_ref()
            .map(|rc| (rc.url.clone(), hex::encode(&rc.sha256))),
        rationale: r.rationale,
    })
}

/// Whether `r` dissents from what the panel decided.
fn dissents(status: &MotionStatus, r: &Read, majority: Option<Decision>) -> bool {
    match status {
        MotionStatus::Open => false,
        MotionStatus::Decided(Acceptance::Accepted { outcome, .. }) => match outcome {
            Outcome::Decided(d) | Outcome::TierVerified { decision: d, .. } => {
                r.counted.is_some_and(|c| c != *d)
            }
            Outcome::Relevance(step) => r.relevance.is_some_and(|v| v != u32::from(*step)),
        },
        MotionStatus::Decided(Acceptance::Deadlocked(_)) => {
            majority.is_some_and(|m| r.counted.is_some_and(|c| c != m))
        }
    }
}

fn status_block(status: &MotionStatus) -> String {
    match status {
        MotionStatus::Open => {
            "<div class=\"open\">open: waiting for the panel's commitments and reveals</div>".into()
        }
        MotionStatus::Decided(a @ Acceptance::Accepted { tallies, .. }) => format!(
            "<div class=\"accepted\"><b>{}</b><br><span class=\"muted\">{}</span></div>",
            escape(&a.to_string()),
            escape(&tallies_text(tallies))
        ),
        MotionStatus::Decided(Acceptance::Deadlocked(d)) => {
            let mut s = String::from(
                "<div class=\"deadlock\"><b>DEADLOCKED</b>: nothing changed; the dissent is recorded.<ul class=\"reasons\">",
            );
            for r in &d.reasons {
                let _ = write!(s, "<li>{}</li>", escape(&r.to_string()));
            }
            s.push_str("</ul>");
            let _ = write!(
                s,
                "<span class=\"muted\">{}</span>",
                escape(&tallies_text(&d.tallies))
            );
            if !d.ignored.is_empty() {
                let _ = write!(
                    s,
                    "<br><span class=\"muted\">not counted: {}</span>",
                    escape(&d.ignored.join(", "))
                );
            }
            s.push_str("</div>");
            s
        }
    }
}

fn motion_card(m: &Motion, roster: &Roster) -> String {
    let spec = &m.spec;
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"card motion\" id=\"{}\"><h3><code>{}</code> {}</h3>",
        anchor(&spec.motion_id),
        escape(&spec.motion_id),
        escape(&spec.question_line())
    );
    let origin = match &spec.procedure {
        Some(p) => format!(
            "run <a href=\"/runs#{}\"><code>{}</code></a>",
            anchor(&p.run_id),
            escape(&p.run_id)
        ),
        None => format!(
            "debate <a href=\"/motions?debate={}\"><code>{}</code></a>",
            url_value(&spec.debate_id),
            escape(&spec.debate_id)
        ),
    };
    let _ = write!(
        s,
        "<p class=\"muted\">{origin} · {:?} · opened at log index {}{} · draw seed {}</p>",
        spec.kind,
        m.opened_log_index,
        m.decided_log_index
            .map(|i| format!(", decided at {i}"))
            .unwrap_or_default(),
        m.draw_seed
    );
    if let Some(p) = &spec.projection {
        let _ = write!(s, "<p class=\"question\">{}</p>", escape(&p.question));
        if !p.items.is_empty() {
            s.push_str("<details><summary>what the panel was shown</summary><table>");
            for it in &p.items {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td class=\"pre\">{}</td></tr>",
                    escape(&it.label),
                    escape(&it.text)
                );
            }
            s.push_str("</table></details>");
        }
    }
    s.push_str(&status_block(&m.status));
    if let Some(f) = &m.finality {
        let _ = write!(
            s,
            "<p class=\"status\">status: <b>{}</b> {}</p>",
            f.status.name(),
            escape(&f.sentence())
        );
    }
    if let Some(c) = &m.confidence {
        let _ = write!(
            s,
            "<p class=\"sure\">how sure: {}</p>",
            escape(&c.sentence())
        );
    }
    if let Some(r) = &m.effect_refused {
        let _ = write!(
            s,
            "<p class=\"deadlock\">effect refused by the engine (<code>{}</code>): {}; the debate is unchanged</p>",
            escape(&r.code),
            escape(&r.message)
        );
    }

    s.push_str("<h4>Seats</h4><table>");
    s.push_str(&head(&["arbiter", "stance", "organisation", "lineage"]));
    for seat in &m.seats {
        // Seats record a lineage only where the motion's policy counts lineages; the
        // registered model family is shown otherwise.
        let lineage = match (seat.lineage.as_str(), roster.by_id(&seat.arbiter_id)) {
            ("", Some(a)) => format!("{} (registered)", a.registration.model_family),
            ("", None) => "undeclared".to_string(),
            (l, _) => l.to_string(),
        };
        s.push_str(&row(&[
            &seat.arbiter_id,
            &seat.stance.to_string(),
            &seat.organisation,
            &lineage,
        ]));
    }
    s.push_str("</table>");

    let seated: BTreeMap<&str, Stance> = m
        .seats
        .iter()
        .map(|x| (x.arbiter_id.as_str(), x.stance))
        .collect();
    let reads: Vec<Result<Read, UnreadableRuling>> = m
        .rulings
        .iter()
        .map(|w| read_ruling(m, w, roster))
        .collect();
    let (yes, no) = reads
        .iter()
        .flatten()
        .fold((0, 0), |(y, n), r| match r.counted {
            Some(Decision::Yes) => (y + 1, n),
            Some(Decision::No) => (y, n + 1),
            None => (y, n),
        });
    let majority = match yes.cmp(&no) {
        std::cmp::Ordering::Greater => Some(Decision::Yes),
        std::cmp::Ordering::Less => Some(Decision::No),
        std::cmp::Ordering::Equal => None,
    };
    if reads.is_empty() {
        s.push_str("<p class=\"muted\">No ruling on the record yet.</p>");
    }
    let mut groups: BTreeMap<String, Vec<&Read>> = BTreeMap::new();
    for r in &reads {
        match r {
            Ok(r) => {
                let group = seated
                    .get(r.arbiter.as_str())
                    .map_or_else(|| "not seated".to_string(), |st| format!("stance {st}"));
                groups.entry(group).or_default().push(r);
            }
            Err(e) => {
                let _ = write!(
                    s,
                    "<p class=\"bad\">A ruling on the record does not decode: {}</p>",
                    escape(&e.to_string())
                );
            }
        }
    }
    for (group, rs) in groups {
        let _ = write!(
            s,
            "<h4>Rulings, {}</h4><table class=\"rulings\">",
            escape(&group)
        );
        s.push_str(&head(&["arbiter", "decision", "p", "detail", "rationale"]));
        for r in rs {
            let mut detail = Vec::new();
            if let Some(v) = r.relevance {
                detail.push(format!("relevance {}", f64::from(v) * 0.25));
            }
            if let Some(t) = r.tier {
                detail.push(format!("tier T{t}"));
            }
            if let Some((url, sha)) = &r.receipt {
                detail.push(format!(
                    "retrieved {url} (sha256 {})",
                    sha.get(..12).unwrap_or(sha)
                ));
            }
            let dissent = dissents(&m.status, r, majority);
            let _ = write!(
                s,
                "<tr{}><td>{}{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
                if dissent { " class=\"dissent\"" } else { "" },
                escape(&r.arbiter),
                if dissent {
                    " <b class=\"warn\">dissent</b>"
                } else {
                    ""
                },
                ruling_check::decision_name(r.decision),
                r.probability,
                escape(&detail.join("; ")),
                escape(&r.rationale)
            );
        }
        s.push_str("</table>");
    }
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_machine::acceptance::{Dissent, GroupTally, Seat};
    use panel_machine::command::MotionSpec;
    use panel_machine::ruling::WireRuling;

    fn spec(question: &str) -> MotionSpec {
        serde_json::from_value(serde_json::json!({
            "motion_id": "mot-1-0-0", "debate_id": "deb_1", "kind": "Challenge",
            "state_hash": "00", "seats": 2, "min_per_stance": 1,
            "question": {"kind": "resolve-challenge", "challengeId": "ch_1"},
            "projection": {"question": question, "resolution": "r", "items": []}
        }))
        .expect("spec")
    }

    fn ruling(key: u8, decision: pb::Decision) -> WireRuling {
        WireRuling::encode(&pb::SignedRuling {
            ruling: Some(pb::Ruling {
                motion_id: "mot-1-0-0".into(),
                decision: decision as i32,
                probability: 0.7,
                rationale: "because <b>".into(),
                arbiter_key: vec![key; 32],
                ..Default::default()
            }),
            signature: vec![0; 64],
            envelope_version: 1,
        })
    }

    fn arbiter(id: &str, key: u8, stance: &str) -> Arbiter {
        serde_json::from_value(serde_json::json!({
            "registration": {
                "arbiter_id": id, "public_key": hex::encode([key; 32]), "organisation": "org",
                "model_family": "fam", "stance": stance, "endpoint": "link"
            },
            "admitted": true, "score_milli": 800, "registered_at_ms": 0
        }))
        .expect("arbiter")
    }

    fn motion(question: &str, status: MotionStatus) -> Motion {
        Motion {
            spec: spec(question),
            seats: vec![
                Seat {
                    arbiter_id: "a1".into(),
                    stance: Stance::A,
                    organisation: "north".into(),
                    lineage: "x".into(),
                },
                Seat {
                    arbiter_id: "b1".into(),
                    stance: Stance::B,
                    organisation: "south".into(),
                    lineage: String::new(),
                },
            ],
            draw_seed: 7,
            opened_at_ms: 0,
            opened_log_index: 3,
            status,
            rulings: vec![
                ruling(1, pb::Decision::Uphold),
                ruling(2, pb::Decision::Dismiss),
            ],
            reveals: vec![],
            decided_log_index: Some(5),
            round: None,
            independence: None,
            effect_refused: None,
            confidence: None,
            finality: None,
        }
    }

    #[test]
    fn rulings_group_by_stance_and_dissent_is_marked() {
        let arbiters = vec![arbiter("a1", 1, "A"), arbiter("b1", 2, "B")];
        let tallies: BTreeMap<Stance, GroupTally> = [
            (Stance::A, GroupTally { yes: 1, no: 0 }),
            (Stance::B, GroupTally { yes: 0, no: 1 }),
        ]
        .into();
        let accepted = MotionStatus::Decided(Acceptance::Accepted {
            outcome: Outcome::Decided(Decision::Yes),
            tallies: tallies.clone(),
        });
        let html = render(
            &[motion("Is <script>x()</script> upheld?", accepted)],
            1,
            &arbiters,
            &Filter::default(),
        );
        assert!(!html.contains("<script>"));
        assert!(html.contains("Is &lt;script&gt;x()&lt;/script&gt; upheld?"));
        assert!(html.contains("Rulings, stance A") && html.contains("Rulings, stance B"));
        assert_eq!(
            html.matches("class=\"dissent\"").count(),
            1,
            "b1 dismissed an upheld challenge"
        );
        assert!(html.contains("because &lt;b&gt;"));
        assert!(html.contains("ACCEPTED: Yes"));

        let dead = MotionStatus::Decided(Acceptance::Deadlocked(Dissent {
            reasons: vec![
                panel_machine::acceptance::DeadlockReason::GroupsDisagree,
                panel_machine::acceptance::DeadlockReason::MissingReceipts { stance: Stance::A },
            ],
            tallies,
            ignored: vec![],
        }));
        let html = render(&[motion("q", dead)], 1, &arbiters, &Filter::default());
        assert!(html.contains("class=\"deadlock\""));
        assert!(html.contains("<li>the stance groups&#39; majorities disagree</li>"));
        assert!(html.contains(
            "<li>no arbiter of stance A confirmed the source with a retrieval receipt</li>"
        ));
        assert!(
            !html.contains("GroupsDisagree"),
            "reasons are sentences, not names"
        );
    }

    #[test]
    fn unknown_keys_and_garbage_rulings_are_said_not_hidden() {
        let mut m = motion("q", MotionStatus::Open);
        m.rulings.push(WireRuling::from_hex("zz"));
        let html = render(&[m], 1, &[], &Filter::default());
        assert!(html.contains("unregistered key 010101010101"));
        assert!(html.contains("does not decode"));
        assert!(html.contains("Rulings, not seated"));
        assert!(render(&[], 0, &[], &Filter::default()).contains("No motions yet"));
    }

    /// `n` open motions of deb_1, `mot-0` (the oldest) to `mot-{n-1}`, in opening order.
    fn many(n: usize) -> Vec<Motion> {
        (0..n)
            .map(|i| {
                let mut m = motion("q", MotionStatus::Open);
                m.spec.motion_id = format!("mot-{i}");
                m.opened_log_index = i as u64;
                m.rulings.clear();
                m
            })
            .collect()
    }

    fn cards(html: &str) -> usize {
        html.matches("<section class=\"card motion\"").count()
    }

    fn at(html: &str, id: &str) -> usize {
        html.find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"))
    }

    /// A debate's page shows its newest LIMIT motions, newest first, and says how many
    /// were left out and where they are; the next pages have the older ones.
    #[test]
    fn a_debates_motions_are_paged_newest_first() {
        let all = many(2 * LIMIT + 50);
        let n = all.len();
        let f = |page| Filter {
            debate: Some("deb_1".into()),
            page,
        };
        let p1 = page_of(&all, 1).expect("page 1");
        assert_eq!(p1.len(), LIMIT);
        let html = render(p1, n, &[], &f(1));
        assert_eq!(cards(&html), LIMIT);
        assert!(at(&html, &format!("mot-{}", n - 1)) < at(&html, &format!("mot-{}", n - LIMIT)));
        assert!(!html.contains(&format!("id=\"mot-{}\"", n - LIMIT - 1)));
        assert!(html.contains("page 1 of 3 shows 200 of them"), "{html}");
        assert!(
            html.contains("250 older motion(s) are left out: <a href=\"/motions?debate=deb_1&amp;page=2\">page 2</a> has the next 200"),
            "{html}"
        );

        let p2 = page_of(&all, 2).expect("page 2");
        let html = render(p2, n, &[], &f(2));
        assert_eq!(cards(&html), LIMIT);
        assert!(html.contains("id=\"mot-249\"") && html.contains("id=\"mot-50\""));
        assert!(!html.contains("id=\"mot-250\"") && !html.contains("id=\"mot-49\""));
        assert!(
            html.contains("The 200 newer are on <a href=\"/motions?debate=deb_1\">page 1</a>.")
        );
        assert!(html.contains("50 older motion(s) are left out"));

        let p3 = page_of(&all, 3).expect("page 3");
        let html = render(p3, n, &[], &f(3));
        assert_eq!(cards(&html), 50);
        assert!(html.contains("id=\"mot-0\"") && html.contains("id=\"mot-49\""));
        assert!(html.contains("The 400 newer are on <a href=\"/motions?debate=deb_1\">page 1</a> to <a href=\"/motions?debate=deb_1&amp;page=2\">page 2</a>"));
        assert!(!html.contains("left out"));
        assert!(page_of(&all, 4).is_none() && page_of(&all, usize::MAX).is_none());

        // One page's worth is one page, and says nothing was left out.
        let html = render(
            page_of(&all[..LIMIT], 1).expect("one page"),
            LIMIT,
            &[],
            &f(1),
        );
        assert_eq!(cards(&html), LIMIT);
        assert!(!html.contains("left out") && !html.contains("page 1 of"));
        assert!(page_of(&all[..LIMIT], 2).is_none());
        assert_eq!(page_of(&[], 1).map(<[Motion]>::len), Some(0));

        // All debates': the latest LIMIT (the query's window), and where the rest are.
        let html = render(&all[n - LIMIT..], n, &[], &Filter::default());
        assert_eq!(cards(&html), LIMIT);
        assert!(
            html.contains("the latest 200 are shown and 250 older ones are left out"),
            "{html}"
        );
    }

    #[test]
    fn the_filter_reads_the_query_and_refuses_bad_pages() {
        assert_eq!(Filter::parse("").expect("empty"), Filter::default());
        assert_eq!(
            Filter::parse("debate=deb%5F1&page=3&x=1").expect("paged"),
            Filter {
                debate: Some("deb_1".into()),
                page: 3
            }
        );
        assert_eq!(Filter::parse("page=1").expect("page 1").page, 1);
        for bad in [
            "debate=d&page=0",
            "debate=d&page=x",
            "debate=d&page=-1",
            "debate=d&page=",
            "page=2",
        ] {
            let e = Filter::parse(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}: {e}");
        }
    }
}
