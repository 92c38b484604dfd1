//! `panel debate last-word`: the charter's last-word authority decides a question the
//! panels left not proven (docs/PANEL.md "The last word"), signing with its key file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::builder::PossibleValuesParser;
use crucible::motion::Answer;
use panel_coordinator::client::failover::WriteOutcome;
use panel_machine::ClientCommand as Write;
use panel_machine::features::last_word::{LastWordDecision, sign};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, report_refusal, runtime};
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct LastWordArgs {
    /// The debate.
    #[arg(long)]
    debate: String,
    /// The question's last motion, whose status is not_proven (`panel motion list`).
    #[arg(long)]
    motion: String,
    /// The answer.
    #[arg(long, value_parser = PossibleValuesParser::new(["yes", "no"]))]
    answer: String,
    /// Why, on the record with the decision.
    #[arg(long)]
    reason: String,
    /// The authority's key file (`last-word.key` beside the charter, a raw 32-byte seed).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub fn run(a: LastWordArgs) -> Result<ExitCode> {
    // Issued by `panel pki init --last-word` as a raw seed, like the motion key.
    let key = panel_transport::pki::read_seed_key(&a.key)
        .with_context(|| format!("--key {}", a.key.display()))?;
    let decision = sign(
        &key,
        LastWordDecision {
            debate_id: a.debate.clone(),
            motion_id: a.motion.clone(),
            answer: if a.answer == "yes" {
                Answer::Yes
            } else {
                Answer::No
            },
            reason: a.reason.clone(),
            signature: Default::default(),
        },
    );
    let mut c = Cluster::connect(&a.cluster)?;
    runtime()?.block_on(async move {
        match c.write(&Write::LastWord(decision)).await? {
            WriteOutcome::Refused { code, message } => report_refusal(
                &format!("the last word on {}", a.motion),
                &code,
                &message,
                a.output.json,
            ),
            WriteOutcome::Applied(v) => {
                if a.output.json {
                    print_json(&v)?;
                } else {
                    println!(
                        "motion {} of {} is final: the last word ({}) is on the record \
                         (`panel motion show {}`)",
                        a.motion, a.debate, a.answer, a.motion
                    );
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}
