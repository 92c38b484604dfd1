//! One motion, by id, at a stable address (`/motions/ID`): its question, outcome, seats
//! and every signed ruling grouped by stance, with links to its debate (or run), the claim
//! it asks about, and each arbiter's page. The coordinator reads a motion by id whether it
//! is still held or retired to the archive, so the page works for any motion that exists,
//! not only the latest ones. The card is shared with the motions list.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crucible::motion::Question;
use panel_machine::Query;
use panel_machine::read::query::{ArbitersReply, MotionReply};
use panel_machine::{Acceptance, Stance};
use panel_machine::{Arbiter, Motion, MotionStatus};
use panel_proto::ruling_check;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{
    anchor, arbiter_href, debate_href, escape, head, link, motion_href, page as frame,
};
use crate::source::Source;
use crate::views::rulings::{Read, Rulings, dissents};
use crate::views::{Roster, tallies_text};

/// Where the motion pages live: `/motions/ID`.
pub const ROUTE: &str = "/motions/{motion_id}";

pub async fn page(src: &Source, motion_id: &str, chrome: &Chrome) -> Result<String, DashError> {
    let r: MotionReply = src
        .read(&Query::Motion {
            motion_id: motion_id.to_string(),
        })
        .await?;
    let m = r.motion.ok_or_else(|| {
        DashError::NotFound(format!(
            "there is no motion {motion_id}; /motions lists them, newest first"
        ))
    })?;
    let arbiters: ArbitersReply = src.read(&Query::Arbiters).await?;
    Ok(render(&m, &arbiters.arbiters, chrome))
}

/// The page of motion `m`.
pub fn render(m: &Motion, arbiters: &[Arbiter], chrome: &Chrome) -> String {
    let roster = Roster::new(arbiters);
    let spec = &m.spec;
    let mut body = String::from("<p class=\"muted\">");
    match &spec.procedure {
        Some(p) => {
            let _ = write!(
                body,
                "Put by procedure run {}.",
                link(&format!("/runs#{}", anchor(&p.run_id)), &escape(&p.run_id))
            );
        }
        None => {
            let _ = write!(
                body,
                "Put by debate {}; {} lists all of its motions.",
                link(&debate_href(&spec.debate_id), &escape(&spec.debate_id)),
                link(
                    &format!(
                        "/motions?debate={}",
                        crate::html::url_value(&spec.debate_id)
                    ),
                    "the motions view"
                )
            );
        }
    }
    body.push_str(" Rows marked as dissent are rulings against the outcome the panel accepted (or, in a deadlock, against the majority of counted rulings).</p>");
    body.push_str(&card(m, &roster));
    frame(
        chrome,
        &format!("Motion {}", spec.motion_id),
        "/motions",
        &body,
    )
}

/// The claim (thread and version) a debate motion asks about, linked to its row on the
/// debate's page; `None` for questions about no claim.
fn claim_link(m: &Motion) -> Option<String> {
    let version = match m.spec.question.as_ref()? {
        Question::Merge { version_id, .. }
        | Question::VerifyTier { version_id, .. }
        | Question::AssignRelevance { version_id, .. } => version_id,
        _ => return None,
    };
    Some(link(
        &format!("{}#{}", debate_href(&m.spec.debate_id), anchor(version)),
        &format!("claim <code>{}</code>", escape(version)),
    ))
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

/// One motion as a card: question, outcome, seats, rulings by stance, all linked.
pub fn card(m: &Motion, roster: &Roster) -> String {
    let mut s = heading(m);
    s.push_str(&status_block(&m.status));
    s.push_str(&standing(m));
    s.push_str(&seats(m, roster));
    s.push_str(&rulings(m, roster));
    s.push_str("</section>");
    s
}

/// The card's title (linked to the motion's own page), origin, claim and question.
fn heading(m: &Motion) -> String {
    let spec = &m.spec;
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"card motion\" id=\"{}\"><h3>{} {}</h3>",
        anchor(&spec.motion_id),
        link(
            &motion_href(&spec.motion_id),
            &format!("<code>{}</code>", escape(&spec.motion_id))
        ),
        escape(&spec.question_line())
    );
    let origin = match &spec.procedure {
        Some(p) => format!(
            "run {}",
            link(
                &format!("/runs#{}", anchor(&p.run_id)),
                &format!("<code>{}</code>", escape(&p.run_id))
            )
        ),
        None => format!(
            "debate {}",
            link(
                &debate_href(&spec.debate_id),
                &format!("<code>{}</code>", escape(&spec.debate_id))
            )
        ),
    };
    let claim = claim_link(m).map(|c| format!(" · {c}")).unwrap_or_default();
    let _ = write!(
        s,
        "<p class=\"muted\">{origin}{claim} · {:?} · opened at log index {}{} · draw seed {}</p>",
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
    s
}

/// Where the outcome stands (appeal window, overturned), how sure the panel is, and an
/// effect the engine refused.
fn standing(m: &Motion) -> String {
    let mut s = String::new();
    if let Some(p) = &m.precedent {
        let _ = write!(
            s,
            "<p class=\"status\">answered by precedent: <a href=\"/motions/{id}\">{id}</a> of <a href=\"/debates/{d}\">{d}</a> decided the same question on the same content and is final; no panel sat</p>",
            id = escape(&p.motion_id),
            d = escape(&p.debate_id)
        );
    }
    if let Some(w) = &m.last_word {
        let answer = panel_machine::features::last_word::answer_text(&w.answer);
        let _ = write!(
            s,
            "<p class=\"status\">last word of {}: <b>{answer}</b>, because {}</p>",
            escape(&w.authority),
            escape(&w.reason)
        );
    }
    if let Some(r) = &m.fresh_panel {
        let _ = write!(s, "<p>fresh panel asked for: {}</p>", escape(r));
    }
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
    s
}

/// The drawn seats, each arbiter linked to its page.
fn seats(m: &Motion, roster: &Roster) -> String {
    let mut s = String::from("<h4>Seats</h4><table>");
    s.push_str(&head(&["arbiter", "stance", "organisation", "lineage"]));
    for seat in &m.seats {
        // Seats record a lineage only where the motion's policy counts lineages; the
        // registered model family is shown otherwise.
        let lineage = match (seat.lineage.as_str(), roster.by_id(&seat.arbiter_id)) {
            ("", Some(a)) => format!("{} (registered)", a.registration.model_family),
            ("", None) => "undeclared".to_string(),
            (l, _) => l.to_string(),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            link(&arbiter_href(&seat.arbiter_id), &escape(&seat.arbiter_id)),
            seat.stance,
            escape(&seat.organisation),
            escape(&lineage)
        );
    }
    s.push_str("</table>");
    s
}

/// The signed rulings on the record, grouped by the stance their arbiter was seated
/// under, dissent marked.
fn rulings(m: &Motion, roster: &Roster) -> String {
    let mut s = String::new();
    let seated: BTreeMap<&str, Stance> = m
        .seats
        .iter()
        .map(|x| (x.arbiter_id.as_str(), x.stance))
        .collect();
    let Rulings { reads, majority } = Rulings::of(m, roster);
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
            s.push_str(&ruling_row(r, dissents(&m.status, r, majority)));
        }
        s.push_str("</table>");
    }
    s
}

fn ruling_row(r: &Read, dissent: bool) -> String {
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
    let who = if r.registered {
        link(&arbiter_href(&r.arbiter), &escape(&r.arbiter))
    } else {
        escape(&r.arbiter)
    };
    format!(
        "<tr{}><td>{who}{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
        if dissent { " class=\"dissent\"" } else { "" },
        if dissent {
            " <b class=\"warn\">dissent</b>"
        } else {
            ""
        },
        ruling_check::decision_name(r.decision),
        r.probability,
        escape(&detail.join("; ")),
        escape(&r.rationale)
    )
}
