//! `panel dossier`: Spellweaver's decision dossier on the panel (docs/DOSSIER.md). `run`
//! starts a run from a framing document (refused with the seed's reasons when it cannot
//! be run), supplies each advocate's Clash I report, Temper nomination and Clash II
//! rebuttal (from their adapters, each shown only its brief, or written elsewhere), and
//! prints the dossier; `show` renders a run's dossier as Markdown.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use panel_coordinator::runs::RunRequest;
use panel_procedures::dossier::DossierStart;
use panel_procedures::{RunInput, RunStart};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::{Cluster, print_json, runtime};
use crate::procedure_run;
use crate::role_adapters::{self, Adapters, Roles};

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
    Show {
        run: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
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
    #[arg(long, default_value_t = 4)]
    seats: usize,
    #[arg(long, default_value_t = 1)]
    min_per_stance: usize,
    #[arg(long, default_value_t = 300)]
    patience: u64,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.cmd {
        DossierCmd::Run(a) => run_one(a),
        DossierCmd::Show { run, json, cluster } => crate::procedure_run::show(&cluster, &run, json),
    }
}

fn run_one(a: RunArgs) -> Result<ExitCode> {
    let bytes =
        std::fs::read(&a.question).with_context(|| format!("reading {}", a.question.display()))?;
    let start =
        DossierStart::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", a.question.display()))?;
    let mut roles = match (&a.advocates, &a.inputs) {
        (Some(r), _) => Roles::Adapters(Adapters::load(r)?),
        (None, Some(i)) => Roles::Written(role_adapters::written(i, |v| {
            Ok(RunInput::Dossier(serde_json::from_value(v)?))
        })?),
        (None, None) => {
            return Err(anyhow!(
                "give the advocates' inputs: --advocates FILE (adapters to ask) or --inputs FILE (written elsewhere)"
            ));
        }
    };
    let simulation = start.simulation.is_some();
    let retry_of = start.retry_of.as_ref().map(|r| r.run_id.clone());
    let req = RunRequest {
        start: RunStart::Dossier(start),
        seats: a.seats,
        min_per_stance: a.min_per_stance,
        policy: None,
        simulation,
        convener: "panel-cli".into(),
        retry_of,
    };
    let mut c = Cluster::connect(&a.cluster)?;
    let view = runtime()?.block_on(async {
        let id = procedure_run::start(&mut c, req).await?;
        eprintln!("started {id}");
        procedure_run::drive(&mut c, &id, &mut roles, Duration::from_secs(a.patience)).await
    })?;
    if a.json {
        print_json(&serde_json::to_value(&view.run)?)?;
    } else {
        println!("{}", view.markdown);
    }
    Ok(ExitCode::SUCCESS)
}
