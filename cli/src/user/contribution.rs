//! Contributions to a debate on a running cluster: `panel thread`, `version`,
//! `challenge`, `respond`, `steelman`, `certify`, `return-steelman`, `define` and
//! `appeal`. Each runs the Gate (SPEC section 8) here first and prints every violation
//! with its rule, field, excerpt and fix, sending nothing; the coordinator runs the Gate
//! again and stays the authority. A protocol refusal prints its code and message. Both
//! exit with status 1.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::builder::PossibleValuesParser;
use crucible::contribution::{ClaimInput, Contribution};
use crucible::document::{Citation, Side};
use crucible::gate::{self, Violation};
use panel_coordinator::client::failover::{WriteOutcome, decode_reply};
use panel_machine::ClientCommand as Write;
use panel_machine::read::query::DebateReply;
use panel_machine::reply::ContributeReply;
use panel_machine::{ContributionSubmission, Query};
use serde_json::json;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, report_refusal, runtime};
use crate::output::OutputArgs;
use crate::user::debate::DebateRef;

/// A side of the debate as typed on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SideArg {
    #[value(name = "A")]
    A,
    #[value(name = "B")]
    B,
}

impl SideArg {
    pub fn side(self) -> Side {
        match self {
            SideArg::A => Side::A,
            SideArg::B => Side::B,
        }
    }
}

/// Who writes to which debate (every contribution); `--json` prints the coordinator's
/// answer (or the violations) as JSON.
#[derive(clap::Args)]
pub struct Who {
    #[command(flatten)]
    debate: DebateRef,
    /// Your name as contributor; contributors are never drawn onto the debate's panels.
    #[arg(long)]
    author: String,
    /// The side you argue for (G1).
    #[arg(long, value_enum, ignore_case = true)]
    side: SideArg,
    /// The model family you write with, so same-family arbiters are kept off your motions.
    #[arg(long)]
    model_family: Option<String>,
    /// Sign the write with this ed25519 key file (`panel node keygen --out FILE`). The first
    /// signed write binds your author name to the key; later writes under the name must be
    /// signed by it.
    #[arg(long, value_name = "FILE")]
    key: Option<std::path::PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// A claim: the Toulmin fields and a confidence qualifier (SPEC 3.4).
#[derive(clap::Args)]
pub struct ClaimArgs {
    /// Claim type; empirical claims need a citation (G11).
    #[arg(long = "type", value_parser = PossibleValuesParser::new(["empirical", "logical", "definitional"]))]
    kind: String,
    /// What you claim, at most 50 words (G3).
    #[arg(long)]
    assertion: String,
    /// The data the claim rests on, at most 150 words.
    #[arg(long)]
    grounds: String,
    /// Why the grounds support the assertion, at most 80 words.
    #[arg(long)]
    warrant: String,
    /// Confidence qualifier (SPEC section 9: weights 1.0, 0.9, 0.75).
    #[arg(long, value_parser = PossibleValuesParser::new(["certain", "probable", "plausible"]))]
    qualifier: String,
    /// A citation "SOURCE|URL|TIER" (tier T1..T5), repeatable.
    #[arg(long = "cite", value_name = "SOURCE|URL|TIER", value_parser = parse_citation)]
    cite: Vec<Citation>,
}

impl ClaimArgs {
    fn claim(self) -> ClaimInput {
        ClaimInput {
            kind: self.kind,
            assertion: self.assertion,
            grounds: self.grounds,
            warrant: self.warrant,
            evidence: self.cite,
            qualifier: self.qualifier,
        }
    }
}

/// Why a `--cite` value was refused (clap shows the message).
#[derive(Debug, thiserror::Error)]
pub enum CitationError {
    #[error(
        "expected \"SOURCE|URL|TIER\" (three parts separated by |), e.g. \"ONS labour survey|https://example.org/ons|T2\"; got {0} part(s)"
    )]
    Parts(usize),
    #[error("the citation's SOURCE (first part) is empty; name the source")]
    NoSource,
    #[error("the citation's URL (second part) is empty; give the address arbiters retrieve")]
    NoUrl,
    #[error("the citation's TIER (third part) is {0:?}; use T1 (highest) to T5")]
    Tier(String),
}

/// Parses `--cite "source|url|T2"`.
pub fn parse_citation(s: &str) -> Result<Citation, CitationError> {
    let parts: Vec<&str> = s.split('|').map(str::trim).collect();
    let [source, url, tier] = parts.as_slice() else {
        return Err(CitationError::Parts(parts.len()));
    };
    if source.is_empty() {
        return Err(CitationError::NoSource);
    }
    if url.is_empty() {
        return Err(CitationError::NoUrl);
    }
    let tier = tier.to_ascii_uppercase();
    if !["T1", "T2", "T3", "T4", "T5"].contains(&tier.as_str()) {
        return Err(CitationError::Tier(tier));
    }
    Ok(Citation::new(source, url, &tier))
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Open a thread with its first claim (a candidate the panel merges or rejects).
    Thread {
        #[command(flatten)]
        who: Who,
        /// The thread's title.
        #[arg(long)]
        title: String,
        #[command(flatten)]
        claim: ClaimArgs,
    },
    /// Propose a new version of a thread's claim (a repair).
    Version {
        #[command(flatten)]
        who: Who,
        /// The thread, e.g. thr_2.
        #[arg(long)]
        thread: String,
        #[command(flatten)]
        claim: ClaimArgs,
    },
    /// Challenge a thread's canonical version on one ground (SPEC section 7).
    Challenge {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        thread: String,
        /// The version challenged (the thread's canonical one).
        #[arg(long)]
        version: String,
        /// The ground (G13).
        #[arg(long, value_parser = PossibleValuesParser::new(crucible::challenge::GROUNDS.map(|g| g.0)))]
        ground: String,
        #[arg(long)]
        text: String,
        /// A citation "SOURCE|URL|TIER", repeatable (needed for evidence-validity and counter-evidence).
        #[arg(long = "cite", value_name = "SOURCE|URL|TIER", value_parser = parse_citation)]
        cite: Vec<Citation>,
    },
    /// Respond to a challenge against your side.
    Respond {
        #[command(flatten)]
        who: Who,
        /// The challenge, e.g. chl_1.
        #[arg(long)]
        challenge: String,
        #[arg(long)]
        text: String,
    },
    /// Restate the other side's case in its strongest form (SPEC 3.5).
    Steelman {
        #[command(flatten)]
        who: Who,
        /// The side whose case you restate.
        #[arg(long, value_enum, ignore_case = true)]
        of_side: SideArg,
        #[arg(long)]
        text: String,
    },
    /// Certify the restatement of your own side's case.
    Certify {
        #[command(flatten)]
        who: Who,
        /// Your side, whose restatement you certify.
        #[arg(long, value_enum, ignore_case = true)]
        of_side: SideArg,
    },
    /// Return the restatement of your side's case with an objection.
    ReturnSteelman {
        #[command(flatten)]
        who: Who,
        #[arg(long, value_enum, ignore_case = true)]
        of_side: SideArg,
        /// What the restatement gets wrong.
        #[arg(long)]
        note: String,
    },
    /// Define a term for the debate.
    Define {
        #[command(flatten)]
        who: Who,
        #[arg(long)]
        term: String,
        #[arg(long)]
        definition: String,
    },
    /// Appeal a closed debate's verdict (SPEC section 12).
    Appeal {
        #[command(flatten)]
        who: Who,
        /// A1 new evidence, A2 procedural error, A3 miscalibrated tier.
        #[arg(long, value_parser = PossibleValuesParser::new(crucible::appeal::GROUNDS))]
        ground: String,
        #[arg(long)]
        justification: String,
        /// A thread the appeal targets, repeatable (at least one).
        #[arg(long = "target", required = true, value_name = "THREAD")]
        target: Vec<String>,
        /// A citation "SOURCE|URL|TIER", repeatable (needed for A1 and A3).
        #[arg(long = "cite", value_name = "SOURCE|URL|TIER", value_parser = parse_citation)]
        cite: Vec<Citation>,
        /// Put the appeal to a panel drawn at random from the whole admitted population,
        /// not from the arbiters who declared for the debate (docs/PANEL.md
        /// "Random-sample appeals").
        #[arg(long)]
        random_sample: bool,
    },
}

impl Cmd {
    fn split(self) -> (Who, Contribution) {
        match self {
            Cmd::Thread { who, title, claim } => (
                who,
                Contribution::Thread {
                    title,
                    claim: claim.claim(),
                },
            ),
            Cmd::Version { who, thread, claim } => (
                who,
                Contribution::Version {
                    thread_id: thread,
                    claim: claim.claim(),
                },
            ),
            Cmd::Challenge {
                who,
                thread,
                version,
                ground,
                text,
                cite,
            } => (
                who,
                Contribution::Challenge {
                    thread_id: thread,
                    version_id: version,
                    ground,
                    text,
                    evidence: cite,
                },
            ),
            Cmd::Respond {
                who,
                challenge,
                text,
            } => (
                who,
                Contribution::Respond {
                    challenge_id: challenge,
                    text,
                },
            ),
            Cmd::Steelman { who, of_side, text } => (
                who,
                Contribution::Steelman {
                    of_side: of_side.side(),
                    text,
                },
            ),
            Cmd::Certify { who, of_side } => (
                who,
                Contribution::Certify {
                    of_side: of_side.side(),
                },
            ),
            Cmd::ReturnSteelman { who, of_side, note } => (
                who,
                Contribution::ReturnSteelman {
                    of_side: of_side.side(),
                    note,
                },
            ),
            Cmd::Define {
                who,
                term,
                definition,
            } => (who, Contribution::Definition { term, definition }),
            Cmd::Appeal {
                who,
                ground,
                justification,
                target,
                cite,
                random_sample: _,
            } => (
                who,
                Contribution::Appeal {
                    ground,
                    justification,
                    evidence: cite,
                    target_thread_ids: target,
                },
            ),
        }
    }
}

/// Prints the Gate's violations: rule, field, excerpt, what is wrong and the fix.
pub fn print_violations(violations: &[Violation]) {
    eprintln!(
        "refused by the Gate: {} violation(s) ({}); nothing was sent",
        violations.len(),
        gate::violated_rules(violations)
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for v in violations {
        eprintln!("  {} {} - field {}", v.rule, v.rule_name, v.field);
        eprintln!("    excerpt: {:?}", v.excerpt);
        eprintln!("    problem: {}", v.message);
        eprintln!("    fix:     {}", v.fix);
    }
}

pub fn run(cmd: Cmd) -> Result<ExitCode> {
    let random_sample = matches!(
        cmd,
        Cmd::Appeal {
            random_sample: true,
            ..
        }
    );
    let (who, c) = cmd.split();
    let side = who.side.side().as_str();
    if who.author.trim().is_empty() {
        bail!("--author is empty; give your name as contributor");
    }
    let (fields, ctx) = c.gate_input(&who.author, side);
    let violations = gate::check(&fields, &ctx);
    if !violations.is_empty() {
        if who.output.json {
            print_json(
                &json!({ "applied": false, "code": "gate_refused", "violations": violations }),
            )?;
        }
        print_violations(&violations);
        return Ok(ExitCode::from(1));
    }
    let mut cluster = Cluster::connect(&who.cluster)?;
    let op = c.op();
    let mut sub = ContributionSubmission {
        debate_id: who.debate.id().to_owned(),
        author: who.author.clone(),
        side: side.to_string(),
        model_family: who.model_family.clone(),
        contribution: c,
        hints: Default::default(),
        signature: None,
        random_sample,
    };
    if let Some(path) = &who.key {
        let key = panel_node::keyfile::load_key(path)
            .with_context(|| format!("cannot sign with --key {}", path.display()))?;
        let (client_id, request_id) = cluster.next_ids();
        sub.signature = Some(
            panel_machine::authorship::sign(&key, &sub, &client_id, request_id)
                .context("cannot sign the contribution")?,
        );
    }
    runtime()?.block_on(async move {
        match cluster.write(&Write::Contribute(sub)).await? {
            WriteOutcome::Refused { code, message } => report_refusal(
                &format!("the {op} contribution to {}", who.debate.id()),
                &code,
                &message,
                who.output.json,
            ),
            WriteOutcome::Applied(v) => {
                let reply: ContributeReply = decode_reply("the contribution", v)?;
                let thread = match reply.created.as_deref() {
                    Some(id) => thread_of(&cluster, who.debate.id(), id).await,
                    None => None,
                };
                let appeal = match (op, reply.created.as_deref()) {
                    ("appeal", Some(id)) => appeal_state(&cluster, who.debate.id(), id).await,
                    _ => None,
                };
                if who.output.json {
                    print_json(&serde_json::to_value(Accepted {
                        reply,
                        applied: true,
                        thread,
                    })?)?;
                } else {
                    print_accepted(op, &reply, thread.as_deref());
                    if let Some(c) = &reply.appeal_deposit {
                        println!("{}", crate::user::appeal_credits::charge_line(c));
                    }
                    if let Some(state) = appeal {
                        println!("{state}");
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

/// The thread holding a created version, when the id names one.
async fn thread_of(cluster: &Cluster, debate_id: &str, id: &str) -> Option<String> {
    let v: DebateReply = cluster
        .read_as(&Query::Debate {
            debate_id: debate_id.into(),
        })
        .await
        .ok()?;
    v.debate?
        .debate
        .threads
        .iter()
        .find(|t| t.versions.iter().any(|x| x.id == id))
        .map(|t| t.id.clone())
}

/// An appeal's true state after filing (`appeal_state::of`); "DENIED at once" when no
/// panel could ever be drawn for it.
async fn appeal_state(cluster: &Cluster, debate_id: &str, appeal_id: &str) -> Option<String> {
    let v: DebateReply = cluster
        .read_as(&Query::Debate {
            debate_id: debate_id.into(),
        })
        .await
        .ok()?;
    let rec = v.debate?;
    Some(match crate::user::appeal_state::of(&rec, appeal_id)? {
        crate::user::appeal_state::AppealState::Denied(why) => {
            format!("state: DENIED at once: {why}")
        }
        state => format!("state: {state}"),
    })
}

/// `--json`'s answer: the machine's reply with the thread a created version sits in.
#[derive(serde::Serialize)]
struct Accepted {
    #[serde(flatten)]
    reply: ContributeReply,
    applied: bool,
    thread: Option<String>,
}

fn print_accepted(op: &str, v: &ContributeReply, thread: Option<&str>) {
    let created = v.created.as_deref();
    match (op, created, thread) {
        ("thread", Some(id), Some(t)) => {
            println!("accepted: thread {t} opened; its first version {id} is a candidate")
        }
        ("version", Some(id), _) => println!("accepted: version {id} is a candidate"),
        ("challenge", Some(id), _) => println!("accepted: challenge {id} filed"),
        ("appeal", Some(id), _) => println!("accepted: appeal {id} filed"),
        (_, Some(id), _) => println!("accepted: {op} created {id}"),
        (_, None, _) => println!("accepted: {op}"),
    }
    let opened = &v.opened;
    if !opened.is_empty() {
        println!(
            "motions opened for the panel: {} (`panel motion show ID`)",
            opened.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_parse_and_bad_ones_say_what_is_missing() {
        let c = parse_citation("ONS survey | https://x.org/a | t2").unwrap();
        assert_eq!(c.tier.as_deref(), Some("T2"));
        assert_eq!(c.source.as_deref(), Some("ONS survey"));
        assert!(
            parse_citation("only|two")
                .unwrap_err()
                .to_string()
                .contains("SOURCE|URL|TIER")
        );
        assert!(
            parse_citation("|u|T1")
                .unwrap_err()
                .to_string()
                .contains("SOURCE")
        );
        assert!(
            parse_citation("s||T1")
                .unwrap_err()
                .to_string()
                .contains("URL")
        );
        assert!(
            parse_citation("s|u|T9")
                .unwrap_err()
                .to_string()
                .contains("T1 (highest) to T5")
        );
    }
}
