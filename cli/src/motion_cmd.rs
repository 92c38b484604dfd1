//! Motions on a running cluster: `panel motion list --debate ID` and `panel motion show
//! ID` (the question, the drawn seats with stance and organisation, and every revealed
//! ruling grouped by stance, decoded from its signed protobuf on the record).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use panel_coordinator::command::{MotionSpec, Query};
use panel_coordinator::model::MotionStatus;
use serde_json::{Value, json};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::{Cluster, print_json, runtime};
use crate::rulings::{self, RulingView};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: MotionCmd,
}

#[derive(clap::Subcommand)]
enum MotionCmd {
    /// A debate's motions in opening order, with their outcome.
    List {
        /// The debate id, e.g. deb_1.
        #[arg(long)]
        debate: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// One motion: question, seats, outcome and the rulings grouped by stance.
    Show {
        /// The motion id, e.g. mot-12-0-0 (`panel motion list`).
        id: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        MotionCmd::List {
            debate,
            json,
            cluster,
        } => {
            let c = Cluster::connect(&cluster)?;
            let rt = runtime()?;
            let v = rt.block_on(c.read(&Query::DebateMotions {
                debate_id: debate.clone(),
            }))?;
            let motions = v["motions"].as_array().cloned().unwrap_or_default();
            if motions.is_empty() {
                // Tell an unknown debate apart from one without motions yet.
                let d = rt.block_on(c.read(&Query::Debate {
                    debate_id: debate.clone(),
                }))?;
                if d["debate"].is_null() {
                    return Err(anyhow!(
                        "debate {debate} does not exist; `panel debate list` shows the ids"
                    ));
                }
            }
            if json {
                print_json(&v)?;
                return Ok(ExitCode::SUCCESS);
            }
            if motions.is_empty() {
                println!("debate {debate} has no motions yet");
            }
            for m in &motions {
                println!(
                    "{:<16} {:<40} {}",
                    m["spec"]["motion_id"].as_str().unwrap_or("?"),
                    question_text(&m["spec"]),
                    outcome_text(&m["status"])
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        MotionCmd::Show { id, json, cluster } => {
            let c = Cluster::connect(&cluster)?;
            let (m, names) = runtime()?.block_on(async {
                let m = c
                    .read(&Query::Motion {
                        motion_id: id.clone(),
                    })
                    .await?;
                let a = c.read(&Query::Arbiters).await?;
                Ok::<_, anyhow::Error>((m, a))
            })?;
            let m = m["motion"].clone();
            if m.is_null() {
                return Err(anyhow!(
                    "motion {id} does not exist; `panel motion list --debate ID` shows a debate's motions"
                ));
            }
            let names =
                rulings::names_from_arbiters(names["arbiters"].as_array().map_or(&[], |v| v));
            let decoded: Vec<Result<RulingView, String>> = m["rulings"]
                .as_array()
                .map(|rs| {
                    rs.iter()
                        .map(|r| {
                            r.as_str()
                                .ok_or_else(|| "the ruling is not a hex string".to_string())
                                .and_then(|h| rulings::decode(h, &names))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if json {
                let views: Vec<Value> = decoded
                    .iter()
                    .map(|r| match r {
                        Ok(v) => json!(v),
                        Err(e) => json!({ "error": e }),
                    })
                    .collect();
                print_json(&json!({ "motion": m, "rulings": views }))?;
            } else {
                print_motion(&m, &decoded);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A one-line description of the motion's question.
fn question_text(spec: &Value) -> String {
    match serde_json::from_value::<MotionSpec>(spec.clone()) {
        Ok(spec) => question_line(&spec),
        Err(e) => format!("unreadable motion ({e})"),
    }
}

/// What a motion asks, in a few words (the machine's [`MotionSpec::question_line`]).
pub fn question_line(spec: &MotionSpec) -> String {
    spec.question_line()
}

/// Per-stance tallies as `stance A: 2 yes, 0 no; ...`.
fn tallies_text(t: &Value) -> String {
    t.as_object()
        .map(|m| {
            m.iter()
                .map(|(s, x)| format!("stance {s}: {} yes, {} no", x["yes"], x["no"]))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// A motion's status as a line: open, or the acceptance rule's outcome with each
/// deadlock reason as a sentence. Decoded once from the reply, never read by key.
pub fn outcome_text(status: &Value) -> String {
    match serde_json::from_value::<MotionStatus>(status.clone()) {
        Ok(MotionStatus::Open) => "open (waiting for the panel)".into(),
        Ok(MotionStatus::Decided(a)) => a.to_string(),
        Err(e) => format!("unreadable status ({e})"),
    }
}

fn print_motion(m: &Value, decoded: &[Result<RulingView, String>]) {
    let spec = &m["spec"];
    println!(
        "motion {} on {}: {}",
        spec["motion_id"].as_str().unwrap_or("?"),
        spec["debate_id"].as_str().unwrap_or("?"),
        question_text(spec)
    );
    if let Some(q) = spec["projection"]["question"].as_str() {
        println!("  question: {q}");
    }
    println!(
        "  kind {}, opened at log index {}, draw seed {}, state hash {}",
        spec["kind"].as_str().unwrap_or("?"),
        m["opened_log_index"],
        m["draw_seed"],
        spec["state_hash"]
            .as_str()
            .and_then(|h| h.get(..16))
            .unwrap_or("?")
    );
    println!("  outcome: {}", outcome_text(&m["status"]));
    if let Some(acc) = m["status"]["Decided"].get("Accepted") {
        println!("  tallies: {}", tallies_text(&acc["tallies"]));
    } else if let Some(d) = m["status"]["Decided"].get("Deadlocked") {
        println!("  tallies: {}", tallies_text(&d["tallies"]));
    }
    println!("  seats:");
    for s in m["seats"].as_array().map_or(&[][..], |v| v) {
        println!(
            "    {:<14} stance {:<4} {}",
            s["arbiter_id"].as_str().unwrap_or("?"),
            s["stance"].as_str().unwrap_or("?"),
            s["organisation"].as_str().unwrap_or("?")
        );
    }
    if decoded.is_empty() {
        println!("  rulings: none revealed yet");
        return;
    }
    let mut by_stance: BTreeMap<String, Vec<&RulingView>> = BTreeMap::new();
    for r in decoded {
        match r {
            Ok(v) => by_stance.entry(v.stance.clone()).or_default().push(v),
            Err(e) => println!("  a ruling on the record does not decode: {e}"),
        }
    }
    for (stance, rs) in by_stance {
        println!("  rulings of stance {stance}:");
        for r in rs {
            let mut extra = String::new();
            if let Some(rel) = r.relevance {
                extra.push_str(&format!(", relevance {rel}"));
            }
            if let Some(t) = r.tier {
                extra.push_str(&format!(", tier T{t}"));
            }
            if let Some((url, sha)) = &r.receipt {
                extra.push_str(&format!(", retrieved {url} (sha256 {sha})"));
            }
            println!(
                "    {:<14} {} p={:.2}{extra}",
                r.arbiter, r.decision, r.probability
            );
            if let Some(j) = &r.judge {
                println!("      judge: {}", j.line());
            }
            if !r.rationale.is_empty() {
                println!("      rationale: {}", r.rationale);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_text() {
        assert!(outcome_text(&json!("Open")).starts_with("open"));
        let acc = json!({"Decided": {"Accepted": {"outcome": {"Relevance": 2}, "tallies": {}}}});
        assert_eq!(outcome_text(&acc), "ACCEPTED: relevance 0.5");
        let dead = json!({"Decided": {"Deadlocked": {"reasons": [
            {"MissingReceipts": {"stance": "A"}}, "GroupsDisagree"
        ], "tallies": {}, "ignored": []}}});
        assert_eq!(
            outcome_text(&dead),
            "DEADLOCKED: no arbiter of stance A confirmed the source with a retrieval receipt; the stance groups' majorities disagree"
        );
        assert!(
            !outcome_text(&dead).contains('{'),
            "no raw JSON in a deadlock line"
        );
    }
}
