//! `panel sim SCENARIO.toml [--engine apply|direct] [--out DIR] [--motions N] [--json]`:
//! the verdict-quality simulator (docs/SIMULATION.md). The default `apply` engine runs
//! every motion through the machine's `apply` under the three policies and the ladder
//! (docs/SIMULATION.md "The machine's own path"); `--engine direct` calls the draw and the
//! acceptance rule directly, at the scenario's full motion count, and writes the plots too. The `panel-sim` crate does the work; this shell reads
//! the scenario, writes `DIR/report.md`, `DIR/report.json` and the SVG plots, and prints
//! the report (Markdown, or JSON with `--json`). A malformed scenario exits with status 2
//! and names the TOML key and the fix.
//!
//! `panel sim shards [--cores 2,8,32] [--groups 1,2,4,8,16] [--load 0.5,0.8] [--seed N]
//! [--secs S] [--json]`: the model of debates sharded over several Raft groups on one
//! machine (docs/SHARDING.md; `panel_sim::shards`). It prints one table per core count:
//! capacity, CPU use and latency at each offered load. It is a model fed with the real
//! path's measured CPU per decision, not a measurement; a parameter it cannot use exits
//! with status 2 and names it.

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use crate::output::OutputArgs;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<SimCommand>,
    /// The scenario (TOML; see sim/scenarios/ and docs/SIMULATION.md).
    #[arg(required = true)]
    scenario: Option<PathBuf>,
    /// Where the report and plots go; defaults to `sim-out/<scenario name>`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Simulate this many motions instead of the scenario's `motions`.
    #[arg(long)]
    motions: Option<usize>,
    #[command(flatten)]
    output: OutputArgs,
    /// Which engine runs the motions: `apply` (the default) drives the replicated state
    /// machine through commit-reveal rounds (at most 2,000 motions unless `--motions`
    /// says); `direct` calls the draw and the acceptance rule directly.
    #[arg(long, value_enum, default_value_t = Engine::Apply)]
    engine: Engine,
    /// With `--engine apply`: admit the pool by the test command after a sealed sitting
    /// whose held-back items start each track record (`exam-record`, the default: what
    /// the weighted pool weighs; the exam's bars alone refuse most scenario judges), by
    /// the test command without an exam (`test-command`), or by a sealed exam sitting
    /// answered by each simulated judge (`exam`).
    #[arg(long, value_enum, default_value_t = AdmissionArg::ExamRecord)]
    admission: AdmissionArg,
    /// With `--engine apply`: how many panels a motion may be asked of, each re-ask after
    /// a deadlock two seats wider and disjoint from the earlier panels (the machine's
    /// ladder for a debate question asks three).
    #[arg(long, default_value_t = panel_sim::replica::LADDER_ASKS)]
    asks: usize,
    /// With `--engine apply`: how many times the side an accepted outcome went against may
    /// appeal it, each time to a fresh panel twice as wide plus one (0, the default: no
    /// appeals; docs/SIMULATION.md "Appeals" measures 2).
    #[arg(long, default_value_t = 0)]
    appeal_rounds: usize,
    /// With `--engine apply`: how often a party's private signal about the truth is right,
    /// in [0.5, 1]; a losing party appeals when its signal says its own side is right.
    #[arg(long, default_value_t = 0.8)]
    appellant_signal: f64,
}

/// Models beside the verdict-quality simulator.
#[derive(clap::Subcommand)]
pub enum SimCommand {
    /// Model throughput, latency and CPU of debates sharded over 1-16 Raft groups on C
    /// cores, from the real path's measured CPU per decision (docs/SHARDING.md).
    ///
    /// `--json` prints the report as JSON instead of Markdown.
    Shards(ShardsArgs),
}

/// `panel sim shards`: the sweep of docs/SHARDING.md, every flag defaulting to the doc's.
#[derive(clap::Args)]
pub struct ShardsArgs {
    /// Core counts of the machine, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [2u32, 8, 32])]
    cores: Vec<u32>,
    /// Group counts, comma-separated (1 to 64; the index group comes on top).
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2, 4, 8, 16])]
    groups: Vec<u32>,
    /// Offered loads as fractions of the machine's CPU bound, comma-separated.
    #[arg(long = "load", value_delimiter = ',', default_values_t = [0.5f64, 0.8])]
    loads: Vec<f64>,
    /// The model's only source of randomness.
    #[arg(long, default_value_t = 41)]
    seed: u64,
    /// Simulated seconds measured per run (after 10 s of warm-up).
    #[arg(long, default_value_t = 30.0)]
    secs: f64,
    /// Share of each replica's CPU on its group's serial apply task (an assumption;
    /// docs/SHARDING.md "Assumptions").
    #[arg(long)]
    serial_share: Option<f64>,
    #[command(flatten)]
    output: OutputArgs,
}

/// How `--engine apply` admits the pool.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionArg {
    Exam,
    TestCommand,
    /// One sealed sitting whose held-back items start each track record (the weighted
    /// pool's weights), then everyone admitted by the test command.
    ExamRecord,
}

/// The simulator's engines (docs/SIMULATION.md).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Apply,
    Direct,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(SimCommand::Shards(shards)) = args.command {
        return run_shards(&shards);
    }
    let Some(path) = args.scenario.clone() else {
        anyhow::bail!("give a scenario file (panel sim SCENARIO.toml) or `panel sim shards`");
    };
    let text = fs::read_to_string(&path)
        .with_context(|| format!("cannot read the scenario {}", path.display()))?;
    let scenario = match panel_sim::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
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
    publish(&out, &plots, &markdown, &json, args.output.json)?;
    crate::output::note!(
        "simulated {} motions (plus sweeps) in {elapsed:.2} s; report in {}",
        report.motions,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `panel sim shards`: runs the sweep and prints its tables (or JSON).
fn run_shards(a: &ShardsArgs) -> anyhow::Result<ExitCode> {
    use panel_sim::shards::{Costs, Params, Sweep};
    let defaults = Costs::default();
    let sweep = Sweep {
        base: Params {
            seed: a.seed,
            measure_s: a.secs,
            costs: Costs {
                serial_share: a.serial_share.unwrap_or(defaults.serial_share),
                ..defaults
            },
            ..Params::default()
        },
        cores: a.cores.clone(),
        groups: a.groups.clone(),
        load_fractions: a.loads.clone(),
        ..Sweep::default()
    };
    let started = Instant::now();
    let report = match panel_sim::shards::sweep::run(&sweep) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("panel sim shards: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if a.output.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "A model, not a measurement: CPU per decision from BENCHMARKS.md \"Real path\", the \
             rest assumed (docs/SHARDING.md). Seed {}, {} simulated s per run.\n",
            a.seed, a.secs
        );
        print!("{}", report.markdown());
    }
    crate::output::note!(
        "simulated {} configurations in {:.2} s",
        report.rows.len(),
        started.elapsed().as_secs_f64()
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
            AdmissionArg::ExamRecord => replica::Admission::ExamRecord,
        },
        asks: args.asks.max(1),
        appeals: panel_sim::appeal_ladder::Appellants {
            rounds: args.appeal_rounds,
            signal_milli: signal_milli(args.appellant_signal)?,
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
    publish(&out, &[], &markdown, &json, args.output.json)?;
    crate::output::note!(
        "ran {} motions through apply in {elapsed:.2} s; report in {}",
        options.motions,
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--appellant-signal` in thousandths, refused outside [0.5, 1].
fn signal_milli(p: f64) -> anyhow::Result<u32> {
    if !(0.5..=1.0).contains(&p) {
        anyhow::bail!(
            "--appellant-signal {p} is outside [0.5, 1]: a party's signal is right at least as often as a coin"
        );
    }
    Ok((p * 1000.0).round() as u32)
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::SimCommand;

    fn sim(args: &[&str]) -> super::Args {
        let cli = crate::Cli::try_parse_from(args).expect("parses");
        match cli.command {
            crate::Command::Sim(a) => a,
            _ => panic!("not `panel sim`"),
        }
    }

    /// `shards` is the model's subcommand; any other word is still a scenario's path.
    #[test]
    fn shards_is_a_subcommand_and_a_scenario_is_still_a_path() {
        let a = sim(&["panel", "sim", "shards", "--cores", "2,4", "--load", "0.7"]);
        match a.command {
            Some(SimCommand::Shards(s)) => {
                assert_eq!(s.cores, vec![2, 4]);
                assert_eq!(s.groups, vec![1, 2, 4, 8, 16]);
                assert_eq!(s.loads, vec![0.7]);
            }
            None => panic!("shards parsed as a scenario"),
        }
        let a = sim(&["panel", "sim", "sim/scenarios/baseline.toml", "--json"]);
        assert!(a.command.is_none());
        assert_eq!(
            a.scenario.as_deref(),
            Some(std::path::Path::new("sim/scenarios/baseline.toml"))
        );
        assert!(crate::Cli::try_parse_from(["panel", "sim"]).is_err());
    }
}
