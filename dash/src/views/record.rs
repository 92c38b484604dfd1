//! The record: the log's checkpoints (size, Merkle root, when issued, which witness of
//! which organisation cosigned each and when), and each charter witness's standing: the
//! latest checkpoint it cosigned and whether that is the latest one issued.

use std::fmt::Write as _;

use panel_machine::Query;
use panel_machine::features::checkpoints::CheckpointsReply;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{escape, head, page as frame, time_ms, time_s};
use crate::source::Source;

pub const PATH: &str = "/record";

/// How many checkpoints the page lists (the latest).
pub const LIMIT: usize = 50;

pub async fn page(src: &Source, chrome: &Chrome) -> Result<String, DashError> {
    let r: CheckpointsReply = src.read(&Query::Checkpoints { limit: Some(LIMIT) }).await?;
    Ok(render(&r, chrome))
}

pub fn render(r: &CheckpointsReply, chrome: &Chrome) -> String {
    let mut s = String::new();
    let latest = r.checkpoints.last();
    let _ = write!(
        s,
        "<section class=\"card\"><p>Log <code>{}</code>: {} entries on the record, {} checkpoint(s) issued; {}.</p><p class=\"muted\">Each checkpoint is a C2SP signed note over the RFC 6962 root of the first <i>size</i> entries, signed by the log key and cosigned by witnesses of other organisations. <code>panel verify --policy</code> checks them offline.</p></section>",
        escape(&r.origin),
        r.record_size,
        r.total,
        match latest {
            Some(c) if c.size == r.record_size => "the latest covers the whole record".to_string(),
            Some(c) => format!(
                "the latest covers {} of them (the rest is checkpointed at the next cadence)",
                c.size
            ),
            None => "none covers the record yet".to_string(),
        }
    );
    s.push_str("<h3>Witnesses</h3>");
    if r.witnesses.is_empty() {
        s.push_str("<p class=\"muted\">No witnesses: the group runs without a charter.</p>");
    } else {
        s.push_str("<table class=\"witnesses\">");
        s.push_str(&head(&[
            "organisation",
            "witness",
            "latest cosigned",
            "at",
            "status",
        ]));
        for w in &r.witnesses {
            let (status, class) = match (w.last_cosigned_size, w.cosigned_latest) {
                (_, true) => ("cosigned the latest checkpoint".to_string(), "ok"),
                (Some(n), false) => (
                    format!(
                        "behind: last cosigned size {n}, latest is {}",
                        latest.map_or(0, |c| c.size)
                    ),
                    "warn",
                ),
                (None, false) => ("has cosigned nothing yet".to_string(), "bad"),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                escape(&w.organisation),
                escape(&w.name),
                w.last_cosigned_size
                    .map_or_else(|| "–".to_string(), |n| format!("size {n}")),
                w.last_timestamp.map_or_else(|| "–".to_string(), time_s),
                escape(&status)
            );
        }
        s.push_str("</table>");
    }
    let _ = write!(
        s,
        "<h3>Checkpoints</h3><p class=\"muted\">Newest first{}.</p>",
        if r.checkpoints.len() < r.total {
            format!("; the latest {} of {}", r.checkpoints.len(), r.total)
        } else {
            String::new()
        }
    );
    if r.checkpoints.is_empty() {
        s.push_str("<p class=\"muted\">No checkpoint issued yet.</p>");
        return frame(chrome, "The record", PATH, &s);
    }
    s.push_str("<table class=\"checkpoints\">");
    s.push_str(&head(&["size", "root (base64)", "issued", "cosigned by"]));
    for c in r.checkpoints.iter().rev() {
        let cos = if c.cosigned_by.is_empty() {
            "<span class=\"warn\">no cosignature yet</span>".to_string()
        } else {
            c.cosigned_by
                .iter()
                .map(|x| {
                    format!(
                        "<code>{}</code> ({}){}",
                        escape(&x.witness),
                        escape(x.organisation.as_deref().unwrap_or("not a charter witness")),
                        x.timestamp
                            .map(|t| format!(" at {}", time_s(t)))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{cos}</td></tr>",
            c.size,
            escape(&c.root),
            time_ms(c.time_ms)
        );
    }
    s.push_str("</table>");
    frame(chrome, "The record", PATH, &s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_machine::features::checkpoints::{CheckpointView, Cosigning, WitnessStatus};

    #[test]
    fn cosignatures_are_named_and_a_lagging_witness_is_shown() {
        let r = CheckpointsReply {
            origin: "crucible-panel.test/<log>".into(),
            record_size: 12,
            total: 2,
            checkpoints: vec![
                CheckpointView {
                    size: 8,
                    root: "AAAA".into(),
                    time_ms: 1_700_000_000_000,
                    cosigned_by: vec![Cosigning {
                        witness: "witness.north".into(),
                        organisation: Some("northwind".into()),
                        timestamp: Some(1_700_000_001),
                    }],
                    log_signed_by: vec![],
                },
                CheckpointView {
                    size: 12,
                    root: "BBBB".into(),
                    time_ms: 1_700_000_002_000,
                    cosigned_by: vec![],
                    log_signed_by: vec![],
                },
            ],
            witnesses: vec![
                WitnessStatus {
                    organisation: "northwind".into(),
                    name: "witness.north".into(),
                    vkey: "v".into(),
                    last_cosigned_size: Some(8),
                    last_timestamp: Some(1_700_000_001),
                    cosigned_latest: false,
                },
                WitnessStatus {
                    organisation: "southbank".into(),
                    name: "witness.south".into(),
                    vkey: "v".into(),
                    last_cosigned_size: None,
                    last_timestamp: None,
                    cosigned_latest: false,
                },
            ],
        };
        let html = render(&r, &Chrome::default());
        assert!(html.contains("crucible-panel.test/&lt;log&gt;"));
        assert!(html.contains("the latest covers the whole record"));
        assert!(html.contains("behind: last cosigned size 8, latest is 12"));
        assert!(html.contains("has cosigned nothing yet"));
        assert!(html.contains("<code>witness.north</code> (northwind) at 2023-11-14 22:13:21 UTC"));
        assert!(html.contains("no cosignature yet"));
        let rows = html
            .split("<table class=\"checkpoints\">")
            .nth(1)
            .expect("the table");
        let (newest, older) = (
            rows.find("<td>12</td>").expect("the size-12 row"),
            rows.find("<td>8</td>").expect("the size-8 row"),
        );
        assert!(newest < older, "newest first");
    }
}
