//! The overview: which replica answered and what it knows of the group (leader, term,
//! applied index), the tables' sizes, and a link to every view.

use std::fmt::Write as _;

use panel_coordinator::pb::coordinator::StatusReply;
use panel_machine::Query;
use panel_machine::read::query::StatsReply;

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

/// What a row count of the state's tables means to a reader, or `None` for a table a
/// reader need not see (the client request ledger; the test tables when empty). A table
/// this dashboard does not know is shown under its own name rather than hidden.
fn tile(table: &str, n: usize) -> Option<String> {
    let words = match table {
        "arbiters" => "arbiters registered",
        "motions" => "motions put to the panel",
        "requests" => return None,
        "kv" | "notes" if n == 0 => return None,
        "kv" => "test key-value entries",
        "notes" => "test note topics",
        other => return Some(other.to_string()),
    };
    Some(words.to_string())
}

/// What each view shows, for the index.
fn blurb(path: &str) -> &'static str {
    match path {
        "/debates" => {
            "each debate's ledger and verdicts, as bar charts; each debate's page has its claims (with the motion that merged each), appeals, panels and motions"
        }
        "/motions" => {
            "every motion's seats and rulings grouped by stance, dissent and deadlocks, filtered by debate, outcome, kind, arbiter or organisation, a page at a time"
        }
        "/arbiters" => {
            "stance, organisation, lineage, exam, track record, flags, reliability diagrams; each arbiter's page has the motions it sat on with its dissent rate"
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
        if let Some(words) = tile(k, *v) {
            let _ = write!(s, "<div class=\"stat\"><b>{v}</b>{}</div>", escape(&words));
        }
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
            rows: [
                ("motions".to_string(), 23),
                ("kv".to_string(), 0),
                ("notes".to_string(), 0),
                ("requests".to_string(), 9),
            ]
            .into(),
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
        assert!(html.contains("<b>23</b>motions put to the panel"));
        assert!(!html.contains(">kv<") && !html.contains(">notes<") && !html.contains("requests"));
    }
}
