//! Outcome statuses and appeal windows (docs/PANEL.md "Finality"): from rule set
//! [`OUTCOME_STATUS`](crate::rules::OUTCOME_STATUS) every accepted debate outcome is
//! `provisional` until its debate's appeal window closes, then `final`; an appeal filed
//! while it is provisional makes it `appealed` until the appeal is decided, after which it
//! is `final` again or, when the appeal review replaced what it decided, `overturned`. A
//! question the ladder gave up on without an answer is `not_proven`.
//!
//! Statuses change only in apply, at the end of the batch whose stamped time passes a
//! window or whose entry decides an appeal, so every replica and `panel verify` see the
//! same status at the same log index. The windows due are kept in time order, so a batch
//! looks only at what is due. A motion whose status can still change is never retired to
//! a replica's archive (`MotionTable::retirable`), so the change always finds it held.

pub use crate::model::finality::{Finality, FinalityBook, OutcomeStatus};
use crate::model::{MotionStatus, State};
use crate::rules::acceptance::{Acceptance, Outcome};

/// The appeal window of a debate whose policy names none: a day.
pub const DEFAULT_APPEAL_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;

/// (log index, batch time) of the entry that changes a status.
pub type At = (u64, u64);

fn set(state: &mut State, motion_id: &str, f: Finality) {
    if let Some(m) = state.motions.get_mut(motion_id) {
        m.finality = Some(f);
    }
}

/// A debate motion was decided: an accepted outcome becomes provisional for the debate's
/// window; a deadlock whose question the ladder gave up on is not proven.
pub fn on_decided(state: &mut State, motion_id: &str, at: At) {
    if state.rules < crate::rules::OUTCOME_STATUS {
        return;
    }
    let Some(m) = state.motions.get(motion_id) else {
        return;
    };
    let Some(q) = m.spec.question.clone() else {
        return;
    };
    let Some(rec) = state.debates.get(&m.spec.debate_id) else {
        return;
    };
    let finality = match &m.status {
        MotionStatus::Decided(Acceptance::Accepted { .. }) => {
            let window = rec
                .policy
                .appeal_window_ms
                .unwrap_or(DEFAULT_APPEAL_WINDOW_MS);
            let final_at_ms = at.1.saturating_add(window);
            state
                .finality
                .due
                .insert((final_at_ms, motion_id.to_owned()));
            Finality {
                status: OutcomeStatus::Provisional,
                final_at_ms,
                appeal_id: None,
                reason: format!("accepted; open to appeal for {}", duration(window)),
                changed_log_index: at.0,
                changed_at_ms: at.1,
            }
        }
        MotionStatus::Decided(Acceptance::Deadlocked(_)) if rec.settled.contains(&q.key()) => {
            Finality {
                status: OutcomeStatus::NotProven,
                final_at_ms: at.1,
                appeal_id: None,
                reason: match rec.exhausted.get(&q.key()) {
                    Some(why) => format!("no answer: {why}"),
                    None => "no answer: the panels deadlocked and the question was given up".into(),
                },
                changed_log_index: at.0,
                changed_at_ms: at.1,
            }
        }
        _ => return,
    };
    set(state, motion_id, finality);
}

/// An appeal was filed on `debate_id`: every provisional outcome of the debate that it
/// contests (a question about one of its target threads, or any when it names none) is
/// held as appealed.
pub fn on_appeal_filed(state: &mut State, debate_id: &str, appeal_id: &str, at: At) {
    let Some(rec) = state.debates.get(debate_id) else {
        return;
    };
    let Some(appeal) = rec.debate.appeal(appeal_id) else {
        return;
    };
    let targets = appeal.target_thread_ids.clone();
    let contested: Vec<String> = rec
        .questions
        .iter()
        .filter(|(_, q)| {
            targets.is_empty() || thread_of(rec, q).is_some_and(|t| targets.contains(&t))
        })
        .map(|(id, _)| id.clone())
        .filter(|id| {
            state.motions.get(id).is_some_and(|m| {
                m.finality
                    .as_ref()
                    .is_some_and(|f| f.status == OutcomeStatus::Provisional)
            })
        })
        .collect();
    for id in contested {
        let final_at_ms = state
            .motions
            .get(&id)
            .map_or(0, |m| m.finality.as_ref().map_or(0, |f| f.final_at_ms));
        state.finality.due.remove(&(final_at_ms, id.clone()));
        state.finality.appealed.insert(id.clone());
        set(
            state,
            &id,
            Finality {
                status: OutcomeStatus::Appealed,
                final_at_ms,
                appeal_id: Some(appeal_id.to_owned()),
                reason: format!("held by appeal {appeal_id}, filed within the window"),
                changed_log_index: at.0,
                changed_at_ms: at.1,
            },
        );
    }
}

/// The thread a debate question is about, if any.
fn thread_of(rec: &crate::debates::DebateRecord, q: &crucible::motion::Question) -> Option<String> {
    use crucible::motion::Question as Q;
    match q {
        Q::Merge { thread_id, .. }
        | Q::AssignRelevance { thread_id, .. }
        | Q::VerifyTier { thread_id, .. } => Some(thread_id.clone()),
        Q::ResolveChallenge { challenge_id } => rec
            .debate
            .challenge(challenge_id)
            .map(|c| c.thread_id.clone()),
        _ => None,
    }
}

/// Moves statuses at a batch stamped `at`: provisional outcomes whose window closed become
/// final; appealed ones become final when their appeal was denied or upheld them, and
/// overturned when the review replaced what they decided (a merged version no longer the
/// thread's canonical one after the review).
pub fn advance(state: &mut State, at: At) {
    let due: Vec<(u64, String)> = state
        .finality
        .due
        .iter()
        .take_while(|(t, _)| *t <= at.1)
        .cloned()
        .collect();
    for key in due {
        state.finality.due.remove(&key);
        if let Some(m) = state.motions.get_mut(&key.1)
            && let Some(f) = &mut m.finality
            && f.status == OutcomeStatus::Provisional
        {
            f.status = OutcomeStatus::Final;
            f.reason = "final: the appeal window closed with no appeal".into();
            f.changed_log_index = at.0;
            f.changed_at_ms = at.1;
            crate::features::precedent::on_final(state, &key.1);
        }
    }
    let held: Vec<String> = state.finality.appealed.iter().cloned().collect();
    for id in held {
        if let Some(end) = appeal_end(state, &id) {
            state.finality.appealed.remove(&id);
            if let Some(m) = state.motions.get_mut(&id)
                && let Some(f) = &mut m.finality
            {
                f.status = end.0;
                f.reason = end.1;
                f.changed_log_index = at.0;
                f.changed_at_ms = at.1;
                match f.status {
                    OutcomeStatus::Final => crate::features::precedent::on_final(state, &id),
                    OutcomeStatus::Overturned => {
                        crate::features::breakers::note_overturn(state, &id, at);
                        note_won(state, &id);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The appeal that held an overturned motion won: its deposit goes back with a share
/// (`appeal_credits::settle`, at the end of the same batch).
fn note_won(state: &mut State, motion_id: &str) {
    let Some(m) = state.motions.get(motion_id) else {
        return;
    };
    let debate_id = m.spec.debate_id.clone();
    if let Some(appeal_id) = m.finality.as_ref().and_then(|f| f.appeal_id.clone()) {
        state.appeal_credits.note_won(&debate_id, &appeal_id);
    }
}

/// How an appealed motion's appeal ended, when it has: the status it leaves and why.
fn appeal_end(state: &State, motion_id: &str) -> Option<(OutcomeStatus, String)> {
    let m = state.motions.get(motion_id)?;
    let appeal_id = m.finality.as_ref()?.appeal_id.clone()?;
    let rec = state.debates.get(&m.spec.debate_id)?;
    let appeal = rec.debate.appeal(&appeal_id)?;
    match appeal.status.as_str() {
        "denied" => Some((
            OutcomeStatus::Final,
            format!("final: appeal {appeal_id} was denied"),
        )),
        "resolved" => Some(if replaced(rec, &m) {
            (
                OutcomeStatus::Overturned,
                format!("overturned by the review of appeal {appeal_id}"),
            )
        } else {
            (
                OutcomeStatus::Final,
                format!("final: the review of appeal {appeal_id} left it standing"),
            )
        }),
        _ => None,
    }
}

/// Whether the ledger no longer holds what an accepted merge decided.
fn replaced(rec: &crate::debates::DebateRecord, m: &crate::model::Motion) -> bool {
    let (
        Some(crucible::motion::Question::Merge {
            thread_id,
            version_id,
        }),
        MotionStatus::Decided(Acceptance::Accepted {
            outcome: Outcome::Decided(d),
            ..
        }),
    ) = (&m.spec.question, &m.status)
    else {
        return false;
    };
    *d == crate::rules::acceptance::Decision::Yes
        && rec
            .debate
            .thread(thread_id)
            .is_some_and(|t| t.canonical_id.as_deref() != Some(version_id.as_str()))
}

/// "1 d", "2 h", "90 s": a window for people.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s >= 3_600 && s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}
