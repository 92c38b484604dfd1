//! Debates: each debate's current ledger (per-side totals and every canonical row's merit,
//! recomputed by the Crucible engine from the document) and its frozen verdicts, as bar
//! charts, with the phase, positions and a link to its motions.

use std::fmt::Write as _;

use crucible::document::Debate;
use crucible::scoring::{compute_ledger, summarize};
use panel_machine::DebateRecord;
use panel_machine::Query;
use panel_machine::read::query::{DebateReply, DebatesReply};

use crate::charts::{Bar, SIDE_A, SIDE_B, bar_chart, side_fill};
use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{anchor, debate_href, escape, head, page as frame, url_value};
use crate::source::Source;

pub const PATH: &str = "/debates";

pub async fn page(src: &Source, chrome: &Chrome) -> Result<String, DashError> {
    let list: DebatesReply = src.read(&Query::Debates).await?;
    let mut debates = Vec::with_capacity(list.debates.len());
    for d in &list.debates {
        let one: DebateReply = src
            .read(&Query::Debate {
                debate_id: d.id.clone(),
            })
            .await?;
        if let Some(r) = one.debate {
            debates.push((d.id.clone(), r));
        }
    }
    Ok(render(&debates, chrome))
}

/// The page over `(id, record)` pairs in id order.
pub fn render(debates: &[(String, DebateRecord)], chrome: &Chrome) -> String {
    let mut body = String::new();
    if debates.is_empty() {
        body.push_str("<p class=\"muted\">No debates yet. `panel debate new` opens one.</p>");
    }
    body.push_str("<p class=\"muted\">The ledger is recomputed from each document as it stands; verdicts are frozen when issued (SPEC 3.7). Side A's bars are blue, side B's orange.</p>");
    for (id, r) in debates {
        body.push_str(&debate_card(id, &r.debate, r.open.len()));
    }
    frame(chrome, "Debates", PATH, &body)
}

/// One debate's positions, phase, ledger and verdicts (this list's card, and the top of
/// the debate's own page).
pub(crate) fn debate_card(id: &str, d: &Debate, open: usize) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"card debate\" id=\"{}\"><h3><a href=\"{}\"><code>{}</code></a> {}</h3>",
        anchor(id),
        escape(&debate_href(id)),
        escape(id),
        escape(&d.resolution)
    );
    let _ = write!(
        s,
        "<p class=\"muted\">phase <b>{}</b> · burden {} · {} thread(s), {} challenge(s), {} verdict(s), {} open motion(s) · <a href=\"{}\">its page: claims, appeals, seats</a> · <a href=\"/motions?debate={}\">its motions</a></p>",
        escape(&d.phase),
        escape(&d.burden),
        d.threads.len(),
        d.challenges.len(),
        d.verdicts.len(),
        open,
        escape(&debate_href(id)),
        url_value(id)
    );
    let _ = write!(
        s,
        "<table>{}<tr><td>A</td><td>{}</td></tr><tr><td>B</td><td>{}</td></tr></table>",
        head(&["side", "position"]),
        escape(&d.positions.a),
        escape(&d.positions.b)
    );

    let ledger = compute_ledger(d);
    let now = summarize(&ledger.totals, &d.burden);
    let mut bars = vec![
        Bar::new("total, side A", ledger.totals.a, SIDE_A),
        Bar::new("total, side B", ledger.totals.b, SIDE_B),
    ];
    for row in &ledger.rows {
        let label = format!(
            "{} · {} v{}",
            row.side.unwrap_or("?"),
            row.thread_title.unwrap_or(row.thread_id),
            row.version_num
        );
        let mut bar = Bar::new(label, row.merit.0, side_fill(row.side));
        if row.scoring == Some(false) {
            bar.text = format!("{:.2} (over the claim budget, not counted)", row.merit.0);
        }
        bars.push(bar);
    }
    let _ = write!(
        s,
        "<h4>Ledger now</h4><p>margin {:.3}, {} ({}){}</p>",
        now.margin,
        escape(&now.band.label),
        match (now.winner, now.leader) {
            (Some(w), _) => format!("side {w} wins"),
            (None, Some(l)) => format!("side {l} ahead"),
            (None, None) => "level".to_string(),
        },
        if now.by_burden { ", by burden" } else { "" }
    );
    s.push_str(&bar_chart(
        "Ledger: totals and merit per canonical row",
        &format!("ledger of {id}"),
        &bars,
    ));

    s.push_str("<h4>Verdicts</h4>");
    if d.verdicts.is_empty() {
        s.push_str("<p class=\"muted\">No verdict issued yet.</p>");
    } else {
        let mut vbars = Vec::new();
        for v in &d.verdicts {
            vbars.push(Bar::new(
                format!("verdict {} · side A", v.n),
                v.totals.a.0,
                SIDE_A,
            ));
            vbars.push(Bar::new(
                format!("verdict {} · side B", v.n),
                v.totals.b.0,
                SIDE_B,
            ));
        }
        s.push_str(&bar_chart(
            "Verdicts: each side's total",
            &format!("verdicts of {id}"),
            &vbars,
        ));
        s.push_str("<table>");
        s.push_str(&head(&[
            "verdict",
            "winner",
            "A",
            "B",
            "margin",
            "band",
            "rationale",
        ]));
        for v in &d.verdicts {
            let _ = write!(
                s,
                "<tr class=\"verdict\"><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.3}</td><td>{}</td><td>{}</td></tr>",
                v.n,
                v.winner.map_or_else(
                    || "none (unresolved)".to_string(),
                    |w| format!("side {w}{}", if v.by_burden { ", by burden" } else { "" })
                ),
                v.totals.a.0,
                v.totals.b.0,
                v.margin.0,
                escape(&v.band.label),
                escape(&v.rationale)
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
    use crate::fixtures;

    #[test]
    fn a_hostile_resolution_is_escaped_and_charts_are_drawn() {
        let st = fixtures::state(vec![fixtures::debate(
            "Resolved: <script>alert(1)</script> tags are harmless.",
        )]);
        let (id, mut r) = fixtures::only_debate(&st);
        r.debate.verdicts.push(
            serde_json::from_value(serde_json::json!({
                "n": 1, "winner": "A", "totals": {"A": 6.36, "B": 4.2}, "margin": 0.34,
                "band": {"key": "clear", "label": "Clear winner"}, "rationale": "<i>x</i>",
                "ledger": [], "byBurden": false
            }))
            .expect("verdict"),
        );
        let html = render(&[(id.clone(), r)], &Chrome::default());
        assert!(!html.contains("<script>"), "raw script in the page");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;i&gt;x&lt;/i&gt;"));
        assert_eq!(
            html.matches("<svg").count(),
            2,
            "the ledger and the verdicts"
        );
        assert!(html.contains("verdict 1 · side A") && html.contains("6.36"));
        assert!(html.contains(&format!("href=\"/motions?debate={id}\"")));
    }

    #[test]
    fn no_debates_says_so() {
        assert!(render(&[], &Chrome::default()).contains("No debates yet"));
    }
}
