//! Read-only questions to the replicated state (`Query`), answered from one replica's
//! applied state.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::acceptance::Stance;
use crate::command::Query;
use crate::model::{Motion, MotionStatus, State};

/// Answer a read-only query.
pub fn query(state: &State, q: &Query) -> Value {
    match q {
        Query::Get { key } => json!({ "value": state.kv.get(key) }),
        Query::Notes { topic } => {
            json!({ "notes": state.notes.get(topic).cloned().unwrap_or_default() })
        }
        Query::Arbiter { arbiter_id } => json!({ "arbiter": state.arbiters.get(arbiter_id) }),
        Query::Arbiters => {
            json!({ "arbiters": state.arbiters.iter().map(|(_, a)| a).collect::<Vec<_>>() })
        }
        Query::Motion { motion_id } => json!({ "motion": state.motions.get(motion_id) }),
        Query::Stats => {
            let counts: BTreeMap<&str, usize> = [
                ("kv", state.kv.len()),
                ("notes", state.notes.len()),
                ("arbiters", state.arbiters.len()),
                ("motions", state.motions.len()),
                ("requests", state.requests.len()),
            ]
            .into_iter()
            .collect();
            let accepted = state
                .motions
                .iter()
                .filter(|(_, m)| matches!(&m.status, MotionStatus::Decided(v) if v.is_accepted()))
                .count();
            json!({ "rows": counts, "accepted_motions": accepted })
        }
        Query::Debate { debate_id } => json!({ "debate": state.debates.get(debate_id) }),
        Query::Debates => json!({
            "debates": state
                .debates
                .iter()
                .map(|(id, r)| json!({
                    "id": id,
                    "resolution": r.debate.resolution,
                    "phase": r.debate.phase,
                    "verdicts": r.debate.verdicts.len(),
                    "open_motions": r.open.len(),
                }))
                .collect::<Vec<_>>()
        }),
        Query::DebateMotions { debate_id } => {
            let mut ms: Vec<&Motion> = state
                .motions
                .iter()
                .map(|(_, m)| m)
                .filter(|m| &m.spec.debate_id == debate_id)
                .collect();
            ms.sort_by_key(|m| (m.opened_log_index, m.spec.motion_id.clone()));
            json!({ "motions": ms })
        }
        Query::Runs => json!({
            "runs": state
                .runs
                .iter()
                .map(|(id, r)| json!({
                    "id": id,
                    "kind": r.run.kind(),
                    "summary": r.run.summary(),
                    "finished": r.run.finished(),
                    "open_motions": r.open.len(),
                    "retry_of": r.retry_of,
                }))
                .collect::<Vec<_>>()
        }),
        Query::Run { run_id } => match state.runs.get(run_id) {
            Some(r) => json!({
                "run": r,
                "summary": r.run.summary(),
                "finished": r.run.finished(),
                "awaiting": r.run.awaiting(),
                "markdown": r.run.render_markdown(),
            }),
            None => json!({ "run": null }),
        },
        Query::Export => json!({
            "format": crate::record::FORMAT,
            "entries": state.record.iter().map(|(_, e)| e).collect::<Vec<_>>(),
            "debates": state.debates.iter().map(|(id, r)| (id.clone(), r.debate.to_json())).collect::<BTreeMap<_, _>>(),
            "arbiters": state.arbiters.iter().map(|(_, a)| a).collect::<Vec<_>>(),
        }),
    }
}

/// The stance of an arbiter, for callers composing panels outside `apply`.
pub fn stance_of(state: &State, arbiter_id: &str) -> Option<Stance> {
    state
        .arbiters
        .get(arbiter_id)
        .map(|a| a.registration.stance)
}
