//! Read-only questions to the replicated state (`Query`), answered from one replica's
//! applied state.
//!
//! Each answer is JSON built from one of the `*Reply` types below, and readers (`panel
//! dash`, the CLI) decode it into the same type instead of indexing JSON by key. The
//! JSON is what it was before the types: a test pins it.

use std::collections::BTreeMap;

use panel_procedures::{Awaited, RunKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::Query;
use crate::debates::DebateRecord;
use crate::features::checkpoints::CheckpointsReply;
use crate::model::{Arbiter, Motion, MotionStatus, NoteRecord, State};
use crate::read::record::Bundle;
use crate::reply::to_value;
use crate::rules::acceptance::Stance;
use crate::runs::RunRecord;

// The replies that carry the state's own rows take the row type as a parameter: the
// replica serializes borrowed rows (`ArbitersReply<&Arbiter>`, no copy of the state), and
// readers decode owned ones under the default (`ArbitersReply`).

/// `Query::Get` (test table): `None` for an unknown key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetReply {
    pub value: Option<String>,
}

/// `Query::Notes` (test table): empty for an unknown topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotesReply<N = NoteRecord> {
    pub notes: Vec<N>,
}

/// `Query::Arbiter`: `None` for an unknown id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArbiterReply<A = Arbiter> {
    pub arbiter: Option<A>,
}

/// `Query::Motion`: `None` for an unknown id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotionReply<M = Motion> {
    pub motion: Option<M>,
}

/// `Query::Export`: the record for `panel verify`, as `record::export` builds it with no
/// log key (a serving replica answers with its export signed by the log key instead).
pub type ExportReply = Bundle;

/// One row of `Query::Debates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateSummary {
    pub id: String,
    pub resolution: String,
    pub phase: String,
    pub verdicts: usize,
    pub open_motions: usize,
}

/// `Query::Debates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebatesReply {
    pub debates: Vec<DebateSummary>,
}

/// `Query::Debate`: `None` for an unknown id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateReply<D = DebateRecord> {
    pub debate: Option<D>,
}

/// `Query::Arbiters`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArbitersReply<A = Arbiter> {
    pub arbiters: Vec<A>,
}

/// `Query::Motions`: `motions` in opening order, the latest `limit` of `total`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MotionsReply<M = Motion> {
    pub total: usize,
    pub motions: Vec<M>,
}

/// `Query::DebateMotions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebateMotionsReply<M = Motion> {
    pub motions: Vec<M>,
}

/// One row of `Query::Runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: String,
    pub kind: RunKind,
    pub summary: String,
    pub finished: bool,
    pub open_motions: usize,
    pub retry_of: Option<String>,
}

/// `Query::Runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsReply {
    pub runs: Vec<RunSummary>,
}

/// `Query::Run`: `run` is `None` (and the rest absent) for an unknown id; `awaiting` is
/// the input the run's roles must still supply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReply<R = RunRecord> {
    pub run: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting: Option<Vec<Awaited>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
}

/// `Query::Stats`: row counts per table and the accepted motions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsReply {
    pub rows: BTreeMap<String, usize>,
    pub accepted_motions: usize,
}

/// One organisation's appeal credits in `Query::AppealCredits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrgBalance {
    pub organisation: String,
    /// Its balance as of its last change; `None` while it has never been charged (it
    /// holds the terms' cap). `OrgCredits::at` gives the balance at a later time.
    pub credits: Option<crate::features::appeal_credits::OrgCredits>,
}

/// `Query::Organisations`: `chartered` is false (and the list empty) until the record
/// adopts its charter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrganisationsReply {
    pub chartered: bool,
    pub organisations: Vec<panel_federation::Organisation>,
    pub removed: Vec<String>,
}

/// `Query::AppealCredits` (docs/PANEL.md "Funded appeals").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppealCreditsReply {
    pub terms: crate::features::appeal_credits::AppealTerms,
    /// Whether appeals are funded here (rule set `APPEAL_CREDITS` in force).
    pub funded: bool,
    pub organisations: Vec<OrgBalance>,
    pub deposits: Vec<crate::features::appeal_credits::Deposit>,
}

/// Every organisation the group knows (the charter's, those admitted since, and any with
/// a balance) with its credits, and the deposits of `debate_id` (all when `None`).
fn appeal_credits(state: &State, debate_id: Option<&str>) -> AppealCreditsReply {
    let book = &state.appeal_credits;
    let mut names: std::collections::BTreeSet<String> =
        book.organisations.keys().cloned().collect();
    if let Some(c) = &state.charter {
        names.extend(c.organisations.iter().map(|o| o.name.clone()));
    }
    names.extend(state.admitted_organisations.iter().map(|o| o.name.clone()));
    AppealCreditsReply {
        terms: crate::features::appeal_credits::terms(state),
        funded: state.rules >= crate::rules::APPEAL_CREDITS,
        organisations: names
            .into_iter()
            .map(|organisation| OrgBalance {
                credits: book.organisations.get(&organisation).copied(),
                organisation,
            })
            .collect(),
        deposits: book
            .deposits
            .values()
            .filter(|d| debate_id.is_none_or(|id| d.debate_id == id))
            .cloned()
            .collect(),
    }
}

/// `Query::Breakers`: the circuit breakers (`breakers.rs`), and the next order's seq.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakersReply {
    pub breakers: crate::model::breakers::Breakers,
    pub next_seq: u64,
}

/// Answer a read-only query.
pub fn query(state: &State, q: &Query) -> Value {
    match q {
        Query::Get { key } => to_value(&GetReply {
            value: state.kv.get(key).cloned(),
        }),
        Query::Notes { topic } => to_value(&NotesReply {
            notes: state
                .notes
                .get(topic)
                .map_or(Vec::new(), |n| n.iter().collect()),
        }),
        Query::Arbiter { arbiter_id } => to_value(&ArbiterReply {
            arbiter: state.arbiters.get(arbiter_id),
        }),
        Query::Arbiters => to_value(&ArbitersReply {
            arbiters: state.arbiters.iter().map(|(_, a)| a).collect(),
        }),
        Query::Motion { motion_id } => to_value(&MotionReply {
            motion: state.motions.get(motion_id),
        }),
        Query::Stats => {
            let rows: BTreeMap<String, usize> = [
                ("kv", state.kv.len()),
                ("notes", state.notes.len()),
                ("arbiters", state.arbiters.len()),
                ("motions", state.motions.len()),
                ("requests", state.requests.len()),
            ]
            .into_iter()
            .map(|(k, n)| (k.to_owned(), n))
            .collect();
            let held_accepted = state
                .motions
                .iter_held()
                .filter(|(_, m)| matches!(&m.status, MotionStatus::Decided(v) if v.is_accepted()))
                .count();
            let accepted_motions = held_accepted
                + usize::try_from(state.motions.retired().accepted()).unwrap_or(usize::MAX);
            to_value(&StatsReply {
                rows,
                accepted_motions,
            })
        }
        Query::Debate { debate_id } => to_value(&DebateReply {
            debate: state.debates.get(debate_id),
        }),
        Query::Debates => to_value(&DebatesReply {
            debates: state
                .debates
                .iter()
                .map(|(id, r)| DebateSummary {
                    id: id.clone(),
                    resolution: r.debate.resolution.clone(),
                    phase: r.debate.phase.clone(),
                    verdicts: r.debate.verdicts.len(),
                    open_motions: r.open.len(),
                })
                .collect(),
        }),
        Query::DebateMotions { debate_id } => {
            let motions = state.motions.of_debate(debate_id);
            to_value(&DebateMotionsReply { motions })
        }
        Query::Motions { limit } => {
            let total = state.motions.len();
            let n = limit.unwrap_or(total);
            to_value(&MotionsReply {
                total,
                motions: state.motions.latest_opened(n),
            })
        }
        Query::Runs => to_value(&RunsReply {
            runs: state
                .runs
                .iter()
                .map(|(id, r)| RunSummary {
                    id: id.clone(),
                    kind: r.run.kind(),
                    summary: r.run.summary(),
                    finished: r.run.finished(),
                    open_motions: r.open.len(),
                    retry_of: r.retry_of.clone(),
                })
                .collect(),
        }),
        Query::Run { run_id } => to_value(&match state.runs.get(run_id) {
            Some(r) => RunReply {
                run: Some(r),
                summary: Some(r.run.summary()),
                finished: Some(r.run.finished()),
                awaiting: Some(r.run.awaiting()),
                markdown: Some(r.run.render_markdown_with(
                    &crate::features::run_deadlocks::of_run(&state.motions, r),
                )),
            },
            None => RunReply {
                run: None,
                summary: None,
                finished: None,
                awaiting: None,
                markdown: None,
            },
        }),
        Query::Checkpoints { limit } => {
            let reply: CheckpointsReply = crate::features::checkpoints::reply(state, *limit);
            to_value(&reply)
        }
        Query::Export => to_value(&crate::read::record::export(state, None)),
        Query::Breakers => to_value(&BreakersReply {
            breakers: state.breakers.clone(),
            next_seq: state.breakers.orders + 1,
        }),
        Query::AppealCredits { debate_id } => {
            to_value(&appeal_credits(state, debate_id.as_deref()))
        }
        Query::Organisations => to_value(&OrganisationsReply {
            chartered: state.charter.is_some(),
            organisations: crate::features::endorsers::organisations(state)
                .cloned()
                .collect(),
            removed: state
                .removed_organisations
                .iter()
                .map(|o| o.name.clone())
                .collect(),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The answers built from the types are the JSON the `json!` answers were: pinned
    /// for an empty state and for unknown ids, where `null`s and absent keys matter.
    #[test]
    fn answers_keep_their_json() {
        let st = State::default();
        let pinned = [
            (Query::Get { key: "k".into() }, json!({ "value": null })),
            (Query::Notes { topic: "t".into() }, json!({ "notes": [] })),
            (
                Query::Arbiter {
                    arbiter_id: "a".into(),
                },
                json!({ "arbiter": null }),
            ),
            (Query::Arbiters, json!({ "arbiters": [] })),
            (
                Query::Motion {
                    motion_id: "m".into(),
                },
                json!({ "motion": null }),
            ),
            (
                Query::Stats,
                json!({
                    "rows": { "arbiters": 0, "kv": 0, "motions": 0, "notes": 0, "requests": 0 },
                    "accepted_motions": 0,
                }),
            ),
            (
                Query::Debate {
                    debate_id: "d".into(),
                },
                json!({ "debate": null }),
            ),
            (
                Query::DebateMotions {
                    debate_id: "d".into(),
                },
                json!({ "motions": [] }),
            ),
            (
                Query::Motions { limit: None },
                json!({ "total": 0, "motions": [] }),
            ),
            (Query::Run { run_id: "r".into() }, json!({ "run": null })),
            (
                Query::Export,
                json!({
                    "format": crate::read::record::FORMAT,
                    "entries": [], "debates": {}, "arbiters": [],
                }),
            ),
        ];
        for (q, want) in pinned {
            let got = query(&st, &q);
            assert_eq!(got.to_string(), want.to_string(), "{q:?}");
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(state: &State, q: Query) -> T {
        let v = query(state, &q);
        serde_json::from_value(v.clone())
            .unwrap_or_else(|e| panic!("{q:?} answered {v}, which does not decode: {e}"))
    }

    fn debate(resolution: &str) -> crate::command::Command {
        crate::command::Command::Client(crate::command::ClientCommand::CreateDebate(
            serde_json::from_value(json!({
                "resolution": resolution, "pos_a": "yes", "pos_b": "no", "seats": 2,
                "min_per_stance": 1, "convener": "c",
            }))
            .expect("debate"),
        ))
    }

    /// Every answer a reader decodes has a type here, and the answers decode into them,
    /// empty state or not, known id or not.
    #[test]
    fn answers_decode_into_the_reply_types() {
        let mut st = State::default();
        for state in [false, true] {
            if state {
                crate::apply::write_one(&mut st, 1, debate("Resolved: tea beats coffee."));
                crate::apply::write_one(&mut st, 2, debate("Resolved: cats beat dogs."));
            }
            let ds: DebatesReply = decode(&st, Query::Debates);
            assert_eq!(ds.debates.len(), if state { 2 } else { 0 });
            if let Some(first) = ds.debates.first() {
                assert_eq!(first.resolution, "Resolved: tea beats coffee.");
                let d: DebateReply = decode(
                    &st,
                    Query::Debate {
                        debate_id: first.id.clone(),
                    },
                );
                assert_eq!(
                    d.debate.map(|r| r.debate.resolution),
                    Some(first.resolution.clone())
                );
            }
            let none: DebateReply = decode(
                &st,
                Query::Debate {
                    debate_id: "nope".into(),
                },
            );
            assert!(none.debate.is_none());
            let _: ArbitersReply = decode(&st, Query::Arbiters);
            let _: StatsReply = decode(&st, Query::Stats);
            let orgs: OrganisationsReply = decode(&st, Query::Organisations);
            assert!(!orgs.chartered && orgs.organisations.is_empty());
            let _: RunsReply = decode(&st, Query::Runs);
            let run: RunReply = decode(
                &st,
                Query::Run {
                    run_id: "nope".into(),
                },
            );
            assert!(run.run.is_none());
            let ms: MotionsReply = decode(&st, Query::Motions { limit: Some(1) });
            assert!(ms.motions.len() <= 1 && ms.total >= ms.motions.len());
            let _: DebateMotionsReply = decode(
                &st,
                Query::DebateMotions {
                    debate_id: "deb_1".into(),
                },
            );
            let cps: CheckpointsReply = decode(&st, Query::Checkpoints { limit: None });
            assert_eq!(cps.record_size, st.record.len());
        }
    }

    /// Older clients send the queries as before; the new ones take an optional limit.
    #[test]
    fn query_json_stays_compatible() {
        for (text, want) in [
            (r#""Debates""#, Query::Debates),
            (r#"{"Motions":{}}"#, Query::Motions { limit: None }),
            (
                r#"{"Checkpoints":{"limit":5}}"#,
                Query::Checkpoints { limit: Some(5) },
            ),
        ] {
            assert_eq!(serde_json::from_str::<Query>(text).expect(text), want);
        }
    }
}
