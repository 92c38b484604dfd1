//! `panel sim SCENARIO.toml [--engine apply|direct] [--out DIR] [--motions N] [--json]`:
//! the verdict-quality simulator (docs/SIMULATION.md). `--engine apply` runs every motion
//! through the machine's `apply` (docs/SIMULATION.md "The machine's own path"); the
//! default `direct` engine calls the draw and the acceptance rule directly and writes the
//! plots too. The `panel-sim` crate does the work; this shell reads
//! the scenario, writes `DIR/report.md`, `DIR/report.json` and the SVG plots, and prints
//! the report (Markdown, or JSON with `--json`). A malformed scenario exits with status 2
//! and names the TOML key and the fix.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// The scenario (TOML; see sim/scenarios/ and docs/SIMULATION.md).
    scenario: PathBuf,
    /// Where the report and plots go; defaults to `sim-out/<scenario name>`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Simulate this many motions instead of the scenario's `motions`.
    #[arg(long)]
    motions: Option<usize>,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// Which engine runs the motions: `apply` drives the replicated state machine
    /// through commit-reveal rounds (at most 2,000 motions unless `--motions` says);
    /// `direct` calls the draw and the acceptance rule directly.
    #[arg(long, value_enum, default_value_t = Engine::Direct)]
    engine: Engine,
    /// With `--engine apply`: admit the pool by the test command without an exam
    /// (`test-command`, the default: the exam's bars refuse most scenario judges), or by
    /// a sealed exam sitting answered by each simulated judge (`exam`).
    #[arg(long, value_enum, default_value_t = AdmissionArg::TestCommand)]
    admission: AdmissionArg,
}

/// How `--engine apply` admits the pool.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionArg {
    Exam,
    TestCommand,
}

/// The simulator's engines (docs/SIMULATION.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Apply,
    Direct,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = fs::read_to_string(&args.scenario)
        .with_context(|| format!("cannot read the scenario {}", args.scenario.display()))?;
    let scenario = match panel_sim::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.scenario.display());
            return Ok(ExitCode::from(2));
        }
    };
    if args.engine == Engine::Apply {
        return run_through_apply(&args, &scenario);
    }
    let started = Instant::now();
    let opts = panel_sim::Options {
        motions: args.motions,
        ..Default::default()
    };
    let report = panel_sim::run(&scenario, opts);
    let elapsed = started.elapsed().as_secs_f64();
    let plots = panel_sim::plot::plots(&report);
    let markdown = panel_sim::markdown::render(&report, &plots, ".");
    let json = serde_json::to_string_pretty(&report)?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from("sim-out").join(&scenario.name));
    publish(&out, &plots, &markdown, &json, args.json)?;
    crate::output::note!(
        "simulated {} motions (plus sweeps) in {elapsed:.2} s; report in {}",
        report.motions,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--engine apply`: the scenario through the machine; writes `report.md` and
/// `report.json` (no plots) and prints the report.
fn run_through_apply(args: &Args, scenario: &panel_sim::Scenario) -> anyhow::Result<ExitCode> {
    use panel_sim::replica::{self, ReplicaOptions};
    let started = Instant::now();
    let options = ReplicaOptions {
        start_ms: replica::START_MS,
        step_ms: replica::STEP_MS,
        motions: args
            .motions
            .unwrap_or_else(|| scenario.motions.min(replica::DEFAULT_MOTIONS))
            .max(1),
        admission: match args.admission {
            AdmissionArg::Exam => replica::Admission::Exam,
            AdmissionArg::TestCommand => replica::Admission::TestCommand,
        },
    };
    let run = replica::run(scenario, &options)?;
    let report = panel_sim::replica_figures::measure(scenario, &run, &options);
    let elapsed = started.elapsed().as_secs_f64();
    let markdown = report.markdown();
    let json = serde_json::to_string_pretty(&report)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("sim-out").join(&scenario.name).join("apply"));
    publish(&out, &[], &markdown, &json, args.json)?;
    crate::output::note!(
        "ran {} motions through apply in {elapsed:.2} s; report in {}",
        options.motions,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes the plots, `report.md` and `report.json` into `out` and prints the report
/// (JSON when `as_json`).
fn publish(
    out: &std::path::Path,
    plots: &[panel_sim::plot::Plot],
    markdown: &str,
    json: &str,
    as_json: bool,
) -> anyhow::Result<()> {
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    for (file, svg) in plots {
        fs::write(out.join(file), svg).with_context(|| format!("cannot write {file}"))?;
    }
    fs::write(out.join("report.md"), markdown).context("cannot write report.md")?;
    fs::write(out.join("report.json"), json).context("cannot write report.json")?;
    println!("{}", if as_json { json } else { markdown });
    Ok(())
}
