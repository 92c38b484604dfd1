//! The user's commands against a running cluster, flattened into `panel`'s top level:
//! debates, contributions, questions to the panel, verdicts, arbiters, motions and the
//! record export. Each finds the cluster through `--addr`, `PANEL_ADDR` or the state
//! folder's cluster.json ([`crate::client::addr`]).

mod appeal_credits;
mod appeal_state;
mod arbiter;
mod contribution;
pub(crate) mod debate;
mod export;
mod last_word;
mod leaderboard;
pub(crate) mod motion;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Command {
    /// Debates on a running cluster: new, list, show.
    Debate(debate::Args),
    #[command(flatten)]
    Contribute(contribution::Cmd),
    /// Ask the panel a question: a phase advance or a tier verification.
    Ask(debate::AskArgs),
    /// Show a debate's verdicts; --reissue issues a fresh one from the current ledger.
    Verdict(debate::VerdictArgs),
    /// Arbiters: register, list, show (calibration scores and admission).
    Arbiter(arbiter::Args),
    /// Motions: list a debate's, show one with its seats and rulings by stance.
    Motion(motion::Args),
    /// Export the signed record from the cluster for `panel verify`.
    ///
    /// `--json` prints the summary as JSON.
    Export(export::Args),
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Debate(a) => debate::run(a),
        Command::Contribute(c) => contribution::run(c),
        Command::Ask(a) => debate::ask(a),
        Command::Verdict(a) => debate::verdict(a),
        Command::Arbiter(a) => arbiter::run(a),
        Command::Motion(a) => motion::run(a),
        Command::Export(a) => export::run(a),
    }
}
