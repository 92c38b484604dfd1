//! An appeal's true state, read from its debate's panel bookkeeping (docs/PANEL.md "Fresh
//! panels"): denied with the reason, waiting for a panel with what would seat one, before
//! its panel, or the document's status. `panel appeal` prints it after filing and
//! `panel debate show` beside every appeal, so a pending appeal is never shown as merely
//! "filed".

use crucible::motion::Question;
use panel_machine::DebateRecord;

/// Where an appeal stands.
pub enum AppealState<'a> {
    Denied(&'a str),
    /// Waiting for a panel, with the machine's reason and what would seat one.
    Pending(&'a str),
    /// Its admission motion is open.
    BeforePanel(&'a str),
    /// Any other status of the document (`admitted`, `resolved`, ...).
    Status(&'a str),
}

/// The state of appeal `appeal_id` of `rec`; `None` when the debate holds no such appeal.
pub fn of<'a>(rec: &'a DebateRecord, appeal_id: &str) -> Option<AppealState<'a>> {
    let a = rec.debate.appeals.iter().find(|a| a.id == appeal_id)?;
    let key = Question::AdmitAppeal {
        appeal_id: appeal_id.to_owned(),
    }
    .key();
    Some(
        match (a.status.as_str(), rec.waiting.get(&key), rec.open.get(&key)) {
            ("denied", _, _) => AppealState::Denied(
                a.decision_rationale
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .unwrap_or("no reason recorded"),
            ),
            (_, Some(why), _) => AppealState::Pending(why),
            (_, _, Some(motion)) => AppealState::BeforePanel(motion),
            (status, _, _) => AppealState::Status(status),
        },
    )
}

impl std::fmt::Display for AppealState<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppealState::Denied(why) => write!(f, "DENIED: {why}"),
            AppealState::Pending(why) => write!(f, "PENDING, {why}"),
            AppealState::BeforePanel(motion) => write!(
                f,
                "before the panel: motion {motion} asks whether to admit it (`panel motion show {motion}`)"
            ),
            AppealState::Status(status) => f.write_str(status),
        }
    }
}
