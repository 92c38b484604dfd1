//! The user's commands against a running cluster, flattened into `panel`'s top level:
//! debates, contributions, questions to the panel, verdicts, arbiters, motions and the
//! record export. Each finds the cluster through `--addr`, `PANEL_ADDR` or the state
//! folder's cluster.json ([`crate::cluster_addr`]).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use crate::{arbiter_cmd, contribution_cmd, debate_cmd, export_cmd, motion_cmd};

#[derive(Subcommand)]
pub enum Command {
    /// Debates on a running cluster: new, list, show.
    Debate(debate_cmd::Args),
    #[command(flatten)]
    Contribute(contribution_cmd::Cmd),
    /// Ask the panel a question: a phase advance or a tier verification.
    Ask(debate_cmd::AskArgs),
    /// Show a debate's verdicts; --reissue issues a fresh one from the current ledger.
    Verdict(debate_cmd::VerdictArgs),
    /// Arbiters: register, list, show (calibration scores and admission).
    Arbiter(arbiter_cmd::Args),
    /// Motions: list a debate's, show one with its seats and rulings by stance.
    Motion(motion_cmd::Args),
    /// Export the signed record from the cluster for `panel verify`.
    Export(export_cmd::Args),
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Debate(a) => debate_cmd::run(a),
        Command::Contribute(c) => contribution_cmd::run(c),
        Command::Ask(a) => debate_cmd::ask(a),
        Command::Verdict(a) => debate_cmd::verdict(a),
        Command::Arbiter(a) => arbiter_cmd::run(a),
        Command::Motion(a) => motion_cmd::run(a),
        Command::Export(a) => export_cmd::run(a),
    }
}
