//! `panel falsify`: falsification buckets on the panel (docs/FALSIFY.md). `run` starts a
//! run from a claims document, supplies the defender's and critics' inputs (from their
//! adapters, or written elsewhere) as the run awaits them, and prints the bucketing
//! record; `show` prints it for a run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use panel_coordinator::runs::RunRequest;
use panel_procedures::falsify::FalsifyStart;
use panel_procedures::{RunInput, RunStart};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::{Cluster, print_json, runtime};
use crate::procedure_run;
use crate::role_adapters::{self, Adapters, Roles};

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
    /// The claims document (docs/schemas/falsify/start.schema.json).
    claims: PathBuf,
    /// The roles' adapters (TOML: [defender.adapter], [critic.adapter]).
    #[arg(long, conflicts_with = "inputs")]
    roles: Option<PathBuf>,
    /// The role inputs, written elsewhere: a JSON array in submission order
    /// (docs/schemas/falsify/input.schema.json).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// Seats per question. An escalated round keeps the judges of the weak attack off
    /// its panel, so the admitted pool needs about seats × rounds arbiters.
    #[arg(long, default_value_t = 2)]
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
        FalsifyCmd::Run(a) => run_one(a),
        FalsifyCmd::Show { run, json, cluster } => crate::procedure_run::show(&cluster, &run, json),
    }
}

fn run_one(a: RunArgs) -> Result<ExitCode> {
    let bytes =
        std::fs::read(&a.claims).with_context(|| format!("reading {}", a.claims.display()))?;
    let start =
        FalsifyStart::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", a.claims.display()))?;
    let mut roles = match (&a.roles, &a.inputs) {
        (Some(r), _) => Roles::Adapters(Adapters::load(r)?),
        (None, Some(i)) => Roles::Written(role_adapters::written(i, |v| {
            Ok(RunInput::Falsify(serde_json::from_value(v)?))
        })?),
        (None, None) => {
            return Err(anyhow!(
                "give the roles' inputs: --roles FILE (adapters to ask) or --inputs FILE (written elsewhere)"
            ));
        }
    };
    let simulation = start.simulation.is_some();
    let req = RunRequest {
        start: RunStart::Falsify(start),
        seats: a.seats,
        min_per_stance: a.min_per_stance,
        policy: None,
        simulation,
        convener: "panel-cli".into(),
        retry_of: None,
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
