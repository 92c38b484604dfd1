//! `panel dossier`: Spellweaver's decision dossier on the panel (docs/DOSSIER.md). `run`
//! starts a run from a framing document (refused with the seed's reasons when it cannot
//! be run), supplies each advocate's Clash I report, Temper nomination and Clash II
//! rebuttal (from their adapters, each shown only its brief, or written elsewhere), and
//! prints the dossier; `show` renders a run's dossier as Markdown.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use panel_procedures::dossier::DossierStart;
use panel_procedures::{RunInput, RunStart};

use crate::procedures::role_adapters;
use crate::procedures::{self, Launch, PanelArgs, ShowArgs};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: DossierCmd,
}

#[derive(clap::Subcommand)]
enum DossierCmd {
    /// Run a question through Clash I, Temper, Clash II and the panel's Quench.
    Run(RunArgs),
    /// Render a run's dossier as Markdown.
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The framing document (docs/schemas/dossier/start.schema.json).
    question: PathBuf,
    /// The advocates' adapters (TOML: one ["advocate:ID".adapter] table per advocate).
    #[arg(long, conflicts_with = "inputs")]
    advocates: Option<PathBuf>,
    /// The advocates' inputs, written elsewhere: a JSON array in submission order
    /// (docs/schemas/dossier/input.schema.json).
    #[arg(long)]
    inputs: Option<PathBuf>,
    #[command(flatten)]
    panel: PanelArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        DossierCmd::Run(a) => run_one(a),
        DossierCmd::Show(a) => procedures::show(&a),
    }
}

fn run_one(a: RunArgs) -> Result<ExitCode> {
    let bytes =
        std::fs::read(&a.question).with_context(|| format!("reading {}", a.question.display()))?;
    let start =
        DossierStart::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", a.question.display()))?;
    let mut roles = role_adapters::from_flags(
        a.advocates.as_deref(),
        a.inputs.as_deref(),
        |v| Ok(RunInput::Dossier(serde_json::from_value(v)?)),
        "--advocates",
    )?;
    let launch = Launch {
        simulation: start.simulation.is_some(),
        retry_of: start.retry_of.as_ref().map(|r| r.run_id.clone()),
        start: RunStart::Dossier(start),
        default_seats: 4,
    };
    procedures::run_and_print(&a.panel, launch, &mut roles)
}
