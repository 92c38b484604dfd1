//! An appeal's true state, read from its debate's panel bookkeeping (docs/PANEL.md "Fresh
//! panels"): denied at once with the reason, waiting for a panel with what would seat
//! one, before its panel, or the document's status. `panel appeal` prints it after filing
//! and `panel debate show` beside every appeal, so a pending appeal is never shown as
//! merely "filed".

use panel_machine::debates::DebateRecord;

/// The state of appeal `appeal_id` of `rec`; `None` when the debate holds no such appeal.
pub fn line(rec: &DebateRecord, appeal_id: &str) -> Option<String> {
    let a = rec.debate.appeals.iter().find(|a| a.id == appeal_id)?;
    let key = format!("admit-appeal:{appeal_id}");
    Some(
        match (a.status.as_str(), rec.waiting.get(&key), rec.open.get(&key)) {
            ("denied", _, _) => format!(
                "DENIED: {}",
                a.decision_rationale
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .unwrap_or("no reason recorded")
            ),
            (_, Some(why), _) => format!("PENDING, {why}"),
            (_, _, Some(motion)) => format!(
                "before the panel: motion {motion} asks whether to admit it (`panel motion show {motion}`)"
            ),
            (status, _, _) => status.to_owned(),
        },
    )
}
