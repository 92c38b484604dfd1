//! `panel bench`: the real path, timed end to end. A chartered 3-replica group over mutual
//! TLS with two witnesses and arbiter nodes whose simulated judges answer at once (so the
//! cost measured is the system's, not a model's) is started as `panel up` starts its
//! own; contributors then thread claims into debates, and each claim's merge motion goes
//! the whole way: the leader draws a panel and signs the motion, the nodes commit and
//! reveal, the close decides, the record entry is written and the witnesses cosign a
//! checkpoint covering it. Reports decisions/s, latency percentiles per phase, CPU per
//! decision per process, bytes per decision, and the signature-verification bound
//! measured in the same run. `panel coordinator bench` is the component bench beside it.

mod bound;
mod clock;
mod cosigning;
mod group;
mod latency;
mod load;
mod report;
mod run;
mod timeline;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use panel_coordinator::local::Supervisor;

use crate::output::OutputArgs;
use crate::output::say;

#[derive(clap::Args)]
pub struct Args {
    /// Decisions to drive (claims threaded, each opening one merge motion).
    #[arg(long, default_value_t = 600)]
    pub decisions: usize,
    /// Decisions in flight at most (writers, each waiting for its motion's decision). The
    /// real path saturates two cores at about 16 (BENCHMARKS.md "Real path"); at 128 the
    /// replicas starve, elect new leaders and miss commit windows.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Arbiter nodes (at least the seats; both organisations, both stances).
    #[arg(long, default_value_t = 8)]
    pub arbiters: usize,
    /// Seats per panel.
    #[arg(long, default_value_t = 5)]
    pub seats: usize,
    /// Debates the claims are spread over.
    #[arg(long, default_value_t = 4)]
    pub debates: usize,
    /// Registered contributors writing the claims (default: one per 25 claims, so no
    /// author outruns the intake's per-author contribution burst of 30).
    #[arg(long)]
    pub authors: Option<usize>,
    /// The commit window of every motion, in ms (the simulated `panel up` default).
    #[arg(long, default_value_t = 300)]
    pub commit_ms: u64,
    /// Decisions per core verified to measure the signature-verification bound.
    #[arg(long, default_value_t = 2000)]
    pub bound_decisions: usize,
    /// State folder (default: a new folder under the system's temporary directory,
    /// deleted afterwards).
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Keep the state folder (logs, configs, data) after the run.
    #[arg(long)]
    pub keep_state: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Claims one author writes at most by default: under the intake's per-author burst.
const CLAIMS_PER_AUTHOR: usize = 25;

impl Args {
    fn authors(&self) -> usize {
        self.authors
            .unwrap_or_else(|| self.decisions.div_ceil(CLAIMS_PER_AUTHOR))
            .max(1)
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    crate::output::set_json(args.output.json);
    anyhow::ensure!(
        args.arbiters >= args.seats && args.seats >= 4,
        "--seats {} needs at least 4 seats (two per stance) and --arbiters {} at least as many arbiters",
        args.seats,
        args.arbiters
    );
    anyhow::ensure!(
        args.decisions > 0 && args.concurrency > 0 && args.debates > 0,
        "--decisions, --concurrency and --debates must be positive"
    );
    let (state, temporary) = match &args.state {
        Some(s) => (s.clone(), false),
        None => (
            std::env::temp_dir().join(format!("panel-bench-{}", std::process::id())),
            true,
        ),
    };
    let rt = tokio::runtime::Runtime::new()?;
    let mut cluster = Supervisor::new(std::env::current_exe()?);
    let outcome = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = run::bench(&args, &state, &mut cluster) => r.map(Some),
            _ = tokio::signal::ctrl_c() => Ok(None),
            _ = term.recv() => Ok(None),
        }
    });
    cluster.stop();
    if temporary && !args.keep_state {
        // Best effort: a folder left in the temporary directory harms nothing.
        let _ = std::fs::remove_dir_all(&state);
    } else {
        say!("state folder kept: {}", state.display());
    }
    match outcome? {
        Some(report) if args.output.json => {
            crate::client::cluster::print_json(&serde_json::to_value(&report)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(report) => {
            println!("{}", report.render());
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("interrupted: every bench process stopped");
            Ok(ExitCode::from(130))
        }
    }
}
