//! `panel falsify`: falsification buckets on the panel (docs/FALSIFY.md). `run` starts a
//! run from a claims document, supplies the defender's and critics' inputs (from their
//! adapters, or written elsewhere) as the run awaits them, and prints the bucketing
//! record; `show` prints it for a run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use panel_procedures::falsify::FalsifyStart;
use panel_procedures::{RunInput, RunStart};

use crate::procedures::role_adapters;
use crate::procedures::{self, Launch, PanelArgs, ShowArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: FalsifyCmd,
}

#[derive(clap::Subcommand)]
enum FalsifyCmd {
    /// Run claims through the buckets on the cluster and print the bucketing record.
    Run(RunArgs),
    /// Print a run's bucketing record.
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The claims document (docs/schemas/falsify/start.schema.json).
    claims: PathBuf,
    /// The roles' adapters (TOML: [defender.adapter], [critic.adapter]).
    #[arg(long, conflicts_with = "inputs")]
    roles: Option<PathBuf>,
    /// The role inputs, written elsewhere: a JSON array in submission order
    /// (docs/schemas/falsify/input.schema.json).
    #[arg(long)]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    panel: PanelArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        FalsifyCmd::Run(a) => run_one(a),
        FalsifyCmd::Show(a) => procedures::show(&a),
    }
}

fn run_one(a: RunArgs) -> Result<ExitCode> {
    let bytes =
        std::fs::read(&a.claims).with_context(|| format!("reading {}", a.claims.display()))?;
    let start =
        FalsifyStart::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", a.claims.display()))?;
    let mut roles = role_adapters::from_flags(
        a.roles.as_deref(),
        a.inputs.as_deref(),
        |v| Ok(RunInput::Falsify(serde_json::from_value(v)?)),
        "--roles",
    )?;
    let launch = Launch {
        simulation: start.simulation.is_some(),
        start: RunStart::Falsify(start),
        retry_of: None,
        default_seats: 2,
    };
    procedures::run_and_print(&a.panel, launch, &mut roles)
}
