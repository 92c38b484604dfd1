//! `panel sim SCENARIO.toml [--out DIR] [--motions N] [--json]`: the verdict-quality
//! simulator (docs/SIMULATION.md). The `panel-sim` crate does the work; this shell reads
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
    fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    for (file, svg) in &plots {
        fs::write(out.join(file), svg).with_context(|| format!("cannot write {file}"))?;
    }
    fs::write(out.join("report.md"), &markdown).context("cannot write report.md")?;
    fs::write(out.join("report.json"), &json).context("cannot write report.json")?;
    println!("{}", if args.json { &json } else { &markdown });
    crate::output::note!(
        "simulated {} motions (plus sweeps) in {elapsed:.2} s; report in {}",
        report.motions,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
