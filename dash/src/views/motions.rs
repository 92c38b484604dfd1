//! Motions: a page at a time, newest first, each motion as a card (its question, drawn
//! seats, and every signed ruling on the record grouped by the stance it was seated under,
//! dissent highlighted, a deadlock's reasons as sentences), under a filter form (debate,
//! outcome, kind, arbiter, organisation; `motion_filter`). Each card links to the motion's
//! own page, its debate and its arbiters.

use std::fmt::Write as _;

use panel_machine::Query;
use panel_machine::read::query::{
    ArbitersReply, DebateMotionsReply, DebateSummary, DebatesReply, MotionsReply,
};
use panel_machine::{Arbiter, Motion};

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{debate_href, escape, link, page as frame};
use crate::paging::Paging;
use crate::source::Source;
use crate::views::Roster;
use crate::views::motion::card;
pub use crate::views::motion_filter::Filter;

pub const PATH: &str = "/motions";

/// How many motion cards a page shows (a card with its rulings is several kB).
pub const PAGE_SIZE: usize = 20;

/// How many of the latest motions a filter without a debate searches: the coordinator's
/// motions query reads a window of the latest, and a filter is a scan of it.
pub const SCAN: usize = 2000;

/// The motions a page is cut from: the last `motions.len()` of `total` motions that pass
/// the filter, in opening order.
#[derive(Debug, Default)]
pub struct Listing {
    pub motions: Vec<Motion>,
    pub total: usize,
    /// `(searched, of)` when a filter searched only the latest `searched` of `of` motions.
    pub scanned: Option<(usize, usize)>,
}

impl Listing {
    /// The motions that pass `filter` among `motions`, all of which were read.
    pub fn filtered(motions: Vec<Motion>, filter: &Filter) -> Listing {
        let motions: Vec<Motion> = motions.into_iter().filter(|m| filter.matches(m)).collect();
        Listing {
            total: motions.len(),
            motions,
            scanned: None,
        }
    }

    /// Page `paging` of the listing, newest last (in opening order); a page past the
    /// last is a 400.
    pub fn page(&self, paging: Paging) -> Result<&[Motion], DashError> {
        let w = paging.window(self.total)?;
        let offset = self.total - self.motions.len();
        let start = w.start.saturating_sub(offset).min(self.motions.len());
        let end = w.end.saturating_sub(offset).min(self.motions.len());
        Ok(&self.motions[start..end])
    }
}

pub async fn page(src: &Source, filter: &Filter, chrome: &Chrome) -> Result<String, DashError> {
    let debates: DebatesReply = src.read(&Query::Debates).await?;
    let arbiters: ArbitersReply = src.read(&Query::Arbiters).await?;
    filter.check(&debates.debates, &arbiters.arbiters)?;
    let listing = listing(src, filter).await?;
    render(
        &listing,
        &debates.debates,
        &arbiters.arbiters,
        filter,
        chrome,
    )
}

/// Reads what the filter needs: a debate's whole motion list (the query has no window),
/// the latest pages of all motions when nothing else is filtered, or the latest [`SCAN`]
/// motions to filter.
async fn listing(src: &Source, filter: &Filter) -> Result<Listing, DashError> {
    if let Some(id) = &filter.debate {
        let r: DebateMotionsReply = src
            .read(&Query::DebateMotions {
                debate_id: id.clone(),
            })
            .await?;
        return Ok(Listing::filtered(r.motions, filter));
    }
    if !filter.narrowed() {
        let limit = filter.page.saturating_mul(PAGE_SIZE);
        let r: MotionsReply = src.read(&Query::Motions { limit: Some(limit) }).await?;
        return Ok(Listing {
            motions: r.motions,
            total: r.total,
            scanned: None,
        });
    }
    let r: MotionsReply = src.read(&Query::Motions { limit: Some(SCAN) }).await?;
    let searched = r.motions.len();
    let mut l = Listing::filtered(r.motions, filter);
    l.scanned = (r.total > searched).then_some((searched, r.total));
    Ok(l)
}

/// The page: the summary, the filter form, the pager and one page of motion cards.
pub fn render(
    listing: &Listing,
    debates: &[DebateSummary],
    arbiters: &[Arbiter],
    filter: &Filter,
    chrome: &Chrome,
) -> Result<String, DashError> {
    let paging = Paging {
        number: filter.page,
        size: PAGE_SIZE,
    };
    let shown = listing.page(paging)?;
    let roster = Roster::new(arbiters);
    let mut body = summary(listing, shown.len(), filter, paging);
    body.push_str(&filter.form(debates, arbiters, chrome));
    let nav = paging.nav(listing.total, |n| filter.href(n, chrome));
    body.push_str(&nav);
    if shown.is_empty() {
        body.push_str(if filter.narrowed() || filter.debate.is_some() {
            "<p class=\"muted\" id=\"none\">No motion matches these filters.</p>"
        } else {
            "<p class=\"muted\" id=\"none\">No motions yet.</p>"
        });
    }
    for m in shown.iter().rev() {
        body.push_str(&card(m, &roster));
    }
    body.push_str(&nav);
    Ok(frame(chrome, "Motions", PATH, &body))
}

/// "58 motion(s) of debate deb_1, deadlocked, newest first; page 2 of 3 shows 20", and
/// what a filter could not search.
fn summary(listing: &Listing, shown: usize, filter: &Filter, paging: Paging) -> String {
    let what = filter.describe();
    let scope = if what.is_empty() {
        "of debates and procedure runs".to_string()
    } else {
        escape(&what)
    };
    let mut s = format!(
        "<p class=\"muted\" id=\"paging\">{} motion(s) {scope}, newest first; page {} of {} shows {shown}",
        listing.total,
        paging.number,
        paging.pages(listing.total)
    );
    if let Some((searched, of)) = listing.scanned {
        let _ = write!(
            s,
            ". The filters searched the latest {searched} of {of} motions; choose a debate to search all of its motions"
        );
    }
    if let Some(d) = &filter.debate {
        let _ = write!(
            s,
            ". The debate's own page: {}",
            link(&debate_href(d), &escape(d))
        );
    }
    s.push_str(".</p><p class=\"muted\">Rows marked as dissent are rulings against the outcome the panel accepted (or, in a deadlock, against the majority of counted rulings).</p>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use panel_machine::MotionSpec;
    use panel_machine::MotionStatus;
    use panel_machine::WireRuling;
    use panel_machine::rules::acceptance::{Dissent, GroupTally};
    use panel_machine::{Acceptance, Decision, Outcome, Seat, Stance};
    use panel_proto::pb;

    use crate::views::motion_filter::OutcomeFilter;

    /// The page of `motions` (all read) under `filter`.
    fn show(motions: Vec<Motion>, arbiters: &[Arbiter], filter: &Filter) -> String {
        render(
            &Listing::filtered(motions, filter),
            &[],
            arbiters,
            filter,
            &Chrome::default(),
        )
        .expect("a page")
    }

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
            beacon: None,
            precedent: None,
            fresh_panel: None,
            last_word: None,
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
        let html = show(
            vec![motion("Is <script>x()</script> upheld?", accepted)],
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
                panel_machine::DeadlockReason::GroupsDisagree,
                panel_machine::DeadlockReason::MissingReceipts { stance: Stance::A },
            ],
            tallies,
            ignored: vec![],
        }));
        let html = show(vec![motion("q", dead)], &arbiters, &Filter::default());
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
        let html = show(vec![m], &[], &Filter::default());
        assert!(html.contains("unregistered key 010101010101"));
        assert!(html.contains("does not decode"));
        assert!(html.contains("Rulings, not seated"));
        assert!(show(vec![], &[], &Filter::default()).contains("No motions yet"));
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

    /// Pages of PAGE_SIZE, newest first, with previous/next links that keep the
    /// filters; a page past the last is a 400.
    #[test]
    fn motions_are_paged_newest_first() {
        let all = many(2 * PAGE_SIZE + 5);
        let f = |page| Filter {
            debate: Some("deb_1".into()),
            page,
            ..Filter::default()
        };
        let html = show(all.clone(), &[], &f(1));
        assert_eq!(cards(&html), PAGE_SIZE);
        assert!(at(&html, "mot-44") < at(&html, "mot-25"));
        assert!(!html.contains("id=\"mot-24\""));
        assert!(
            html.contains("45 motion(s) of debate deb_1, newest first; page 1 of 3 shows 20"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/motions?debate=deb_1&amp;page=2\">next (older) »</a>"),
            "{html}"
        );
        let html = show(all.clone(), &[], &f(3));
        assert_eq!(cards(&html), 5);
        assert!(html.contains("id=\"mot-0\"") && html.contains("id=\"mot-4\""));
        assert!(
            html.contains("<a href=\"/motions?debate=deb_1&amp;page=2\">« previous (newer)</a>")
        );
        let e = render(
            &Listing::filtered(all.clone(), &f(4)),
            &[],
            &[],
            &f(4),
            &Chrome::default(),
        )
        .expect_err("past the end");
        assert_eq!(e.status().as_u16(), 400);

        // All motions: the query read the latest page * PAGE_SIZE of `total`.
        let tail = Listing {
            motions: all[all.len() - 2 * PAGE_SIZE..].to_vec(),
            total: all.len(),
            scanned: None,
        };
        let two = Filter {
            page: 2,
            ..Filter::default()
        };
        let html = render(&tail, &[], &[], &two, &Chrome::default()).expect("page 2");
        assert_eq!(cards(&html), PAGE_SIZE);
        assert!(html.contains("id=\"mot-24\"") && html.contains("id=\"mot-5\""));
    }

    /// Filters combine, and a scan of only the latest motions says so.
    #[test]
    fn filters_narrow_and_combine() {
        let mut all = many(6);
        all[1].seats[0].arbiter_id = "z9".into();
        all[2].status = MotionStatus::Decided(Acceptance::Deadlocked(Dissent {
            reasons: vec![],
            tallies: BTreeMap::new(),
            ignored: vec![],
        }));
        all[3].status = all[2].status.clone();
        all[3].seats[0].arbiter_id = "z9".into();
        let f = Filter {
            outcome: Some(OutcomeFilter::Deadlocked),
            ..Filter::default()
        };
        let html = show(all.clone(), &[], &f);
        assert_eq!(cards(&html), 2, "{html}");
        let f = Filter {
            arbiter: Some("z9".into()),
            ..f
        };
        let html = show(all.clone(), &[], &f);
        assert_eq!(cards(&html), 1);
        assert!(html.contains("id=\"mot-3\""));
        assert!(
            html.contains("1 motion(s) deadlocked, with z9 seated"),
            "{html}"
        );
        let f = Filter {
            organisation: Some("nowhere".into()),
            ..Filter::default()
        };
        assert!(show(all.clone(), &[], &f).contains("No motion matches these filters"));
        let mut l = Listing::filtered(all, &Filter::default());
        l.scanned = Some((6, 9000));
        let html = render(&l, &[], &[], &Filter::default(), &Chrome::default()).expect("page");
        assert!(html.contains("searched the latest 6 of 9000 motions"));
    }

    /// Unknown debates, arbiters and organisations are a 400 naming the parameter.
    #[test]
    fn unknown_names_are_refused() {
        let arbiters = vec![arbiter("a1", 1, "A")];
        let debates = vec![DebateSummary {
            id: "deb_1".into(),
            resolution: "r".into(),
            phase: "framing".into(),
            verdicts: 0,
            open_motions: 0,
        }];
        let ok = Filter::parse("debate=deb_1&arbiter=a1&organisation=org").expect("parse");
        assert!(ok.check(&debates, &arbiters).is_ok());
        for (q, starts) in [
            ("debate=deb_9", "debate=deb_9 names no debate"),
            ("arbiter=<x>", "arbiter=<x> names no registered arbiter"),
            (
                "organisation=else",
                "organisation=else is no registered arbiter's organisation; they are: org",
            ),
        ] {
            let e = Filter::parse(q)
                .expect("parse")
                .check(&debates, &arbiters)
                .expect_err(q);
            assert_eq!(e.status().as_u16(), 400);
            assert!(e.to_string().starts_with(starts), "{e}");
        }
        let html = render(
            &Listing::default(),
            &debates,
            &arbiters,
            &ok,
            &Chrome::default(),
        )
        .expect("page");
        assert!(html.contains("<option value=\"deb_1\" selected>"), "{html}");
        assert!(html.contains("<form class=\"filters\" method=\"get\" action=\"/motions\""));
    }
}
