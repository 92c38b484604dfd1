//! The overview: which replica answered and what it knows of the group (leader, term,
//! applied index), the tables' sizes, and a link to every view.

use std::fmt::Write as _;

use panel_coordinator::pb::coordinator::StatusReply;
use panel_machine::command::Query;
use panel_machine::query::StatsReply;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{VIEWS, escape, page as frame};
use crate::source::Source;

pub const PATH: &str = "/";

pub async fn page(src: &Source, chrome: &Chrome) -> Result<String, DashError> {
    let (addr, status) = src.status().await?;
    let stats: StatsReply = src.read(&Query::Stats).await?;
    Ok(render(&src.addrs(), &addr, &status, &stats, chrome))
}

/// What each view shows, for the index.
fn blurb(path: &str) -> &'static str {
    match path {
        "/debates" => "each debate's ledger and verdicts, as bar charts",
        "/motions" => "every motion's seats and rulings grouped by stance, dissent and deadlocks",
        "/arbiters" => {
            "stance, organisation, lineage, exam, track record, flags, reliability diagrams"
        }
        "/record" => "checkpoints with their cosignatures, and each witness's standing",
        "/runs" => "crux, falsification and dossier runs: results and settled questions",
        _ => "",
    }
}

pub fn render(
    addrs: &str,
    answered: &str,
    st: &StatusReply,
    stats: &StatsReply,
    chrome: &Chrome,
) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"card\"><p>Coordinators <code>{}</code>; replica {} at <code>{}</code> answered: {} in term {}, {}, applied up to log index {}.</p></section>",
        escape(addrs),
        st.node_id,
        escape(answered),
        escape(&st.role),
        st.term,
        if st.has_leader {
            format!(
                "leader {} at {}",
                st.leader_id,
                escape(if st.leader_addr.is_empty() {
                    "?"
                } else {
                    &st.leader_addr
                })
            )
        } else {
            "<span class=\"bad\">no leader</span>".to_string()
        },
        st.last_applied
    );
    s.push_str("<div class=\"grid\">");
    for (k, v) in &stats.rows {
        if k == "requests" {
            continue;
        }
        let _ = write!(s, "<div class=\"stat\"><b>{v}</b>{}</div>", escape(k));
    }
    let _ = write!(
        s,
        "<div class=\"stat\"><b>{}</b>motions accepted</div></div>",
        stats.accepted_motions
    );
    s.push_str("<h3>Views</h3><ul class=\"views\">");
    for (path, label) in VIEWS.iter().skip(1) {
        let _ = write!(
            s,
            "<li><a href=\"{path}\">{label}</a>: {}</li>",
            blurb(path)
        );
    }
    s.push_str("</ul><p class=\"muted\">Every page is read linearizably from the cluster when it is loaded; reload for the latest.</p>");
    frame(chrome, "Overview", PATH, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_links_every_view() {
        let st = StatusReply {
            node_id: 2,
            role: "Follower".into(),
            term: 3,
            has_leader: true,
            leader_id: 1,
            leader_addr: "127.0.0.1:7001".into(),
            last_applied: 40,
            ..Default::default()
        };
        let stats = StatsReply {
            rows: [("motions".to_string(), 23), ("debates".to_string(), 1)].into(),
            accepted_motions: 20,
        };
        let html = render(
            "127.0.0.1:7001,127.0.0.1:7002",
            "127.0.0.1:7002",
            &st,
            &stats,
            &Chrome::default(),
        );
        // The navigation bar of every page links every view too: look in the list.
        let list = html
            .split("<ul class=\"views\">")
            .nth(1)
            .and_then(|l| l.split("</ul>").next())
            .expect("the list of views");
        for (path, label) in VIEWS.iter().skip(1) {
            assert!(
                list.contains(&format!(
                    "<li><a href=\"{path}\">{label}</a>: {}</li>",
                    blurb(path)
                )),
                "{path}: {list}"
            );
            assert!(!blurb(path).is_empty(), "{path} has a blurb");
        }
        assert!(html.contains("leader 1 at 127.0.0.1:7001"));
        assert!(html.contains("<b>20</b>motions accepted"));
    }
}
