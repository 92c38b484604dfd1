//! Procedure runs (crux, falsification buckets, decision dossier): each run's kind and
//! one-line result, whether it finished, the questions the panel settled with their
//! motions and answers, and the run's own report (Markdown, shown as text).

use std::fmt::Write as _;

use panel_machine::Query;
use panel_machine::read::query::{RunReply, RunSummary, RunsReply};
use panel_procedures::PanelOutcome;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{anchor, escape, head, motion_href, page as frame, time_ms};
use crate::source::Source;

pub const PATH: &str = "/runs";

pub async fn page(src: &Source, chrome: &Chrome) -> Result<String, DashError> {
    let list: RunsReply = src.read(&Query::Runs).await?;
    let mut runs = Vec::with_capacity(list.runs.len());
    for r in list.runs {
        let detail: RunReply = src
            .read(&Query::Run {
                run_id: r.id.clone(),
            })
            .await?;
        runs.push((r, detail));
    }
    Ok(render(&runs, chrome))
}

fn outcome(o: &PanelOutcome) -> (&'static str, &'static str) {
    match o {
        PanelOutcome::Yes => ("yes", "ok"),
        PanelOutcome::No => ("no", "ok"),
        PanelOutcome::Deadlocked => ("deadlocked: no cross-prior agreement", "bad"),
    }
}

pub fn render(runs: &[(RunSummary, RunReply)], chrome: &Chrome) -> String {
    let mut s = String::new();
    if runs.is_empty() {
        s.push_str("<p class=\"muted\">No procedure runs yet. `panel crux run`, `panel falsify run` and `panel dossier run` start one.</p>");
    } else {
        s.push_str("<table class=\"summary\">");
        s.push_str(&head(&["run", "kind", "result", "state", "open motions"]));
        for (r, _) in runs {
            let _ = write!(
                s,
                "<tr><td><a href=\"#{}\">{}</a></td><td>{:?}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                anchor(&r.id),
                escape(&r.id),
                r.kind,
                escape(&r.summary),
                if r.finished { "ok" } else { "warn" },
                if r.finished { "finished" } else { "running" },
                r.open_motions
            );
        }
        s.push_str("</table>");
    }
    for (r, d) in runs {
        let _ = write!(
            s,
            "<section class=\"card run\" id=\"{}\"><h3><code>{}</code> {:?}: {}</h3>",
            anchor(&r.id),
            escape(&r.id),
            r.kind,
            escape(&r.summary)
        );
        if let Some(rec) = &d.run {
            let _ = write!(
                s,
                "<p class=\"muted\">convened by {} · started {} (log index {}) · {} seat(s) per question, at least {} per stance{}</p>",
                escape(&rec.convener),
                time_ms(rec.started_at_ms),
                rec.started_log_index,
                rec.seats,
                rec.min_per_stance,
                r.retry_of
                    .as_ref()
                    .map(|p| format!(" · retries <a href=\"#{}\">{}</a>", anchor(p), escape(p)))
                    .unwrap_or_default()
            );
            if rec.settled.is_empty() {
                s.push_str("<p class=\"muted\">No question settled yet.</p>");
            } else {
                s.push_str("<table>");
                s.push_str(&head(&["question", "motion", "panel's answer"]));
                for q in &rec.settled {
                    let (text, class) = outcome(&q.outcome);
                    let _ = write!(
                        s,
                        "<tr><td>{}</td><td><a href=\"{}\"><code>{}</code></a></td><td class=\"{class}\">{text}</td></tr>",
                        escape(&q.key),
                        escape(&motion_href(&q.motion_id)),
                        escape(&q.motion_id)
                    );
                }
                s.push_str("</table>");
            }
            if !rec.open.is_empty() {
                let _ = write!(
                    s,
                    "<p class=\"warn\">Waiting for the panel on: {}</p>",
                    escape(&rec.open.keys().cloned().collect::<Vec<_>>().join(", "))
                );
            }
        }
        if let Some(md) = &d.markdown {
            let _ = write!(
                s,
                "<details><summary>the run's report</summary><pre>{}</pre></details>",
                escape(md)
            );
        }
        s.push_str("</section>");
    }
    frame(chrome, "Procedure runs", PATH, &s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_procedures::RunKind;

    #[test]
    fn runs_are_listed_and_their_reports_escaped() {
        let runs = vec![(
            RunSummary {
                id: "run_1".into(),
                kind: RunKind::Falsify,
                summary: "BROKEN <b>".into(),
                finished: true,
                open_motions: 0,
                retry_of: None,
            },
            RunReply {
                run: None,
                summary: None,
                finished: None,
                awaiting: None,
                markdown: Some("# Report\n<script>x</script>".into()),
            },
        )];
        let html = render(&runs, &Chrome::default());
        assert!(html.contains("Falsify") && html.contains("BROKEN &lt;b&gt;"));
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;") && !html.contains("<script>"));
        assert!(html.contains("finished"));
        assert!(render(&[], &Chrome::default()).contains("No procedure runs yet"));
    }
}
