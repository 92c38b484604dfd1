//! Motions on a running cluster: `panel motion list DEBATE` (or `--debate`) and `panel motion
//! show MOTION` (or `--motion`) (the question, the drawn seats with stance and organisation, and every revealed
//! ruling grouped by stance, decoded from its signed protobuf on the record).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use panel_machine::read::query::{ArbitersReply, DebateMotionsReply, DebateReply, MotionReply};
use panel_machine::rules::acceptance::GroupTally;
use panel_machine::{Acceptance, Stance};
use panel_machine::{Motion, MotionStatus};
use panel_machine::{MotionSpec, Query};
use serde_json::{Value, json};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, runtime};
use crate::output::OutputArgs;
use crate::rulings::{self, RulingView};
use crate::user::debate::DebateRef;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: MotionCmd,
}

#[derive(clap::Subcommand)]
enum MotionCmd {
    /// A debate's motions in opening order, with their outcome.
    List {
        #[command(flatten)]
        debate: DebateRef,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// One motion: question, seats, outcome and the rulings grouped by stance.
    Show {
        #[command(flatten)]
        motion: MotionRef,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

/// A motion named positionally or with `--motion`, as every command that takes one
/// accepts it (like [`DebateRef`] for debates).
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub struct MotionRef {
    /// The motion id, e.g. mot-12-0-0 (`panel motion list DEBATE`).
    #[arg(value_name = "MOTION")]
    id: Option<String>,
    /// The motion id, as a flag.
    #[arg(long = "motion", value_name = "MOTION")]
    flag: Option<String>,
}

impl MotionRef {
    pub fn id(&self) -> &str {
        self.id
            .as_deref()
            .or(self.flag.as_deref())
            .unwrap_or_default()
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        MotionCmd::List {
            debate,
            output: OutputArgs { json },
            cluster,
        } => {
            let debate = debate.id().to_owned();
            let c = Cluster::connect(&cluster)?;
            let rt = runtime()?;
            let v: DebateMotionsReply = rt.block_on(c.read_as(&Query::DebateMotions {
                debate_id: debate.clone(),
            }))?;
            let motions = &v.motions;
            if motions.is_empty() {
                // Tell an unknown debate apart from one without motions yet.
                let d: DebateReply = rt.block_on(c.read_as(&Query::Debate {
                    debate_id: debate.clone(),
                }))?;
                if d.debate.is_none() {
                    return Err(anyhow!(
                        "debate {debate} does not exist; `panel debate list` shows the ids"
                    ));
                }
            }
            if json {
                print_json(&serde_json::to_value(&v)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            if motions.is_empty() {
                println!("debate {debate} has no motions yet");
            }
            for m in motions {
                println!(
                    "{:<16} {:<40} {}",
                    m.spec.motion_id,
                    question_line(&m.spec),
                    outcome_text(&m.status)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        MotionCmd::Show {
            motion,
            output: OutputArgs { json },
            cluster,
        } => {
            let id = motion.id().to_owned();
            let c = Cluster::connect(&cluster)?;
            let (m, names) = runtime()?.block_on(async {
                let m: MotionReply = c
                    .read_as(&Query::Motion {
                        motion_id: id.clone(),
                    })
                    .await?;
                let a: ArbitersReply = c.read_as(&Query::Arbiters).await?;
                Ok::<_, anyhow::Error>((m, a))
            })?;
            let Some(m) = m.motion else {
                return Err(anyhow!(
                    "motion {id} does not exist; `panel motion list --debate ID` shows a debate's motions"
                ));
            };
            let names = rulings::names_from_arbiters(&names.arbiters);
            let decoded: Vec<Result<RulingView, rulings::DecodeError>> = m
                .rulings
                .iter()
                .map(|r| rulings::decode(r, &names, &m.seats))
                .collect();
            if json {
                let views: Vec<Value> = decoded
                    .iter()
                    .map(|r| match r {
                        Ok(v) => json!(v),
                        Err(e) => json!({ "error": e.to_string() }),
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

/// What a motion asks, in a few words (the machine's [`MotionSpec::question_line`]).
pub fn question_line(spec: &MotionSpec) -> String {
    spec.question_line()
}

/// Per-stance tallies as `stance A: 2 yes, 0 no; ...`.
fn tallies_text(t: &BTreeMap<Stance, GroupTally>) -> String {
    t.iter()
        .map(|(s, x)| {
            format!(
                "stance {}: {} yes, {} no",
                rulings::stance_name(*s),
                x.yes,
                x.no
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A motion's status as a line: open, or the acceptance rule's outcome with each
/// deadlock reason as a sentence.
pub fn outcome_text(status: &MotionStatus) -> String {
    match status {
        MotionStatus::Open => "open (waiting for the panel)".into(),
        MotionStatus::Decided(a) => a.to_string(),
    }
}

/// How sure the panel was of a decided motion's outcome and where the outcome stands
/// (`confidence`, `finality`), a line each where the record has them; shared by `motion
/// show` and `ask --wait`.
pub fn outcome_lines(m: &Motion) -> Vec<String> {
    let precedent = m.precedent.as_ref().map(|p| {
        format!(
            "answered by precedent: motion {} of {} decided the same question on the same \
             content and is final; no panel sat (`panel motion show {}`)",
            p.motion_id, p.debate_id, p.motion_id
        )
    });
    let last_word = m.last_word.as_ref().map(|w| {
        let answer = panel_machine::features::last_word::answer_text(&w.answer);
        format!(
            "last word of {} (log index {}): {answer}, because {}",
            w.authority, w.log_index, w.reason
        )
    });
    let fresh = m
        .fresh_panel
        .as_ref()
        .map(|r| format!("fresh panel asked for: {r}"));
    let sure = m.confidence.map(|c| format!("how sure: {}", c.sentence()));
    let status = m
        .finality
        .as_ref()
        .map(|f| format!("status: {}", f.sentence()));
    precedent
        .into_iter()
        .chain(last_word)
        .chain(fresh)
        .chain(sure)
        .chain(status)
        .collect()
}

/// A unit enum's name as the record spells it (`Relevance`, `TierVerification`).
fn wire_name(v: &impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "?".into(),
    }
}

/// What the seats were shown: the logged motion's digest, its signer and how many replicas
/// sealed it (docs/WIRE.md "Motion seals").
fn round_motion_line(r: &panel_machine::model::MotionRound) -> String {
    let seals = match panel_machine::rules::signed_motion::decode(&r.motion) {
        Ok(m) if m.seals.is_empty() => "no seals (a charter with one log key)".to_owned(),
        Ok(m) => format!("sealed by {} replica(s)", m.seals.len()),
        Err(e) => format!("the logged motion does not decode ({e})"),
    };
    let (digest, key) = (r.motion_digest.to_hex(), r.signer_key.to_hex());
    format!(
        "put to the seats as motion {}…, signed by motion key {}…, {seals}",
        digest.get(..12).unwrap_or(&digest),
        key.get(..12).unwrap_or(&key)
    )
}

fn print_motion(m: &Motion, decoded: &[Result<RulingView, rulings::DecodeError>]) {
    let spec = &m.spec;
    println!(
        "motion {} on {}: {}",
        spec.motion_id,
        spec.debate_id,
        question_line(spec)
    );
    if let Some(p) = &spec.projection {
        println!("  question: {}", p.question);
    }
    println!(
        "  kind {}, opened at log index {}, draw seed {}, state hash {}",
        wire_name(&spec.kind),
        m.opened_log_index,
        m.draw_seed,
        spec.state_hash.to_hex().get(..16).unwrap_or("?")
    );
    println!("  outcome: {}", outcome_text(&m.status));
    for line in outcome_lines(m) {
        println!("  {line}");
    }
    if let Some(r) = &m.effect_refused {
        println!(
            "  effect: refused by the engine ({}): {}; the debate is unchanged",
            r.code, r.message
        );
    }
    for note in panel_machine::features::motion_history::one_lineage_support(m) {
        println!("  note: {note}");
    }
    match &m.status {
        MotionStatus::Decided(Acceptance::Accepted { tallies, .. }) => {
            println!("  tallies: {}", tallies_text(tallies));
        }
        MotionStatus::Decided(Acceptance::Deadlocked(d)) => {
            println!("  tallies: {}", tallies_text(&d.tallies));
        }
        MotionStatus::Open => {}
    }
    match &m.beacon {
        Some(b) if b.pending() => println!(
            "  seats: not drawn yet: the beacon's shares for question key {}… are being collected (docs/SECURITY.md \"The beacon\")",
            b.question.to_hex().get(..12).unwrap_or_default()
        ),
        Some(b) => println!(
            "  drawn by the beacon: question key {}…, attempt {}, shares of replica(s) {}",
            b.question.to_hex().get(..12).unwrap_or_default(),
            b.attempt,
            b.shares
                .iter()
                .map(|s| s.replica.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => {}
    }
    if let Some(r) = &m.round {
        println!("  {}", round_motion_line(r));
    }
    println!("  seats:");
    for s in &m.seats {
        println!(
            "    {:<14} stance {:<4} {}",
            s.arbiter_id,
            rulings::stance_name(s.stance),
            s.organisation
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
        let outcome_text =
            |v: Value| outcome_text(&serde_json::from_value::<MotionStatus>(v).expect("a status"));
        assert!(outcome_text(json!("Open")).starts_with("open"));
        let acc = json!({"Decided": {"Accepted": {"outcome": {"Relevance": 2}, "tallies": {}}}});
        assert_eq!(outcome_text(acc), "ACCEPTED: relevance 0.5");
        let dead = json!({"Decided": {"Deadlocked": {"reasons": [
            {"MissingReceipts": {"stance": "A"}}, "GroupsDisagree"
        ], "tallies": {}, "ignored": []}}});
        assert_eq!(
            outcome_text(dead.clone()),
            "DEADLOCKED: no arbiter of stance A confirmed the source with a retrieval receipt; the stance groups' majorities disagree"
        );
        assert!(
            !outcome_text(dead).contains('{'),
            "no raw JSON in a deadlock line"
        );
    }
}
