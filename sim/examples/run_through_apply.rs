//! Runs scenario files through the machine (`panel_sim::replica`) and prints the table
//! docs/SIMULATION.md "The machine's own path" shows, one row per scenario and policy:
//! `cargo run --release -p panel-sim --example run_through_apply -- MOTIONS SCENARIO...`
//! (`SIM_ADMISSION=exam` to admit by a sealed exam sitting alone, `test-command` to admit
//! everyone without one, instead of the default sitting for the track records;
//! `SIM_DETAIL=1` for each policy's ladder, weights, intervals and trade-off on stderr),
//! then the appeal ladder's table over the same runs, `SIM_APPEAL_ROUNDS=2` to have the
//! parties appeal).
//! Builds only the pure crates; `panel sim --engine apply` is the same per file.

use std::fs;
use std::time::Instant;

use panel_sim::replica::{Admission, ReplicaOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((motions, files)) = args.split_first() else {
        return Err("usage: run_through_apply MOTIONS SCENARIO.toml...".into());
    };
    let motions: usize = motions.parse()?;
    // By default the pool sits one sealed exam whose held-back items start each track
    // record (the weighted pool's weights), then everyone is admitted by the test
    // command; `SIM_ADMISSION=exam` admits by the sitting alone, `test-command` without one.
    let admission = match std::env::var("SIM_ADMISSION").as_deref() {
        Ok("exam") => Admission::Exam,
        Ok("test-command") => Admission::TestCommand,
        _ => Admission::ExamRecord,
    };
    // `SIM_APPEAL_ROUNDS=2`: the parties appeal accepted outcomes (docs/SIMULATION.md
    // "Appeals"); without it nobody does, and the main table is the one the docs show.
    let appeals = match std::env::var("SIM_APPEAL_ROUNDS") {
        Ok(n) => panel_sim::appeal_ladder::Appellants {
            rounds: n.parse()?,
            ..panel_sim::appeal_ladder::Appellants::MEASURED
        },
        Err(_) => panel_sim::appeal_ladder::Appellants::NONE,
    };
    print!("{}", panel_sim::replica_figures::TABLE_HEAD);
    let mut appeal_rows = Vec::new();
    for file in files {
        let scenario = panel_sim::parse(&fs::read_to_string(file)?)?;
        let options = ReplicaOptions {
            start_ms: panel_sim::replica::START_MS,
            step_ms: panel_sim::replica::STEP_MS,
            motions: motions.min(scenario.motions),
            admission,
            asks: panel_sim::replica::LADDER_ASKS,
            appeals,
        };
        let started = Instant::now();
        let run = panel_sim::replica::run(&scenario, &options)?;
        let report = panel_sim::replica_figures::measure(&scenario, &run, &options);
        for row in report.rows() {
            println!("{row}");
        }
        appeal_rows.extend(report.appeal_rows());
        // `SIM_DETAIL=1`: each policy's ladder, weights, intervals and trade-off, on stderr.
        if std::env::var_os("SIM_DETAIL").is_some() {
            for f in &report.policies {
                eprint!("{} / {}:\n{}", scenario.name, f.policy, f.detail());
            }
        }
        eprintln!(
            "{}: {} motions in {:.1} s",
            scenario.name,
            options.motions,
            started.elapsed().as_secs_f64()
        );
    }
    // The appeal ladder's effect on the same runs (docs/SIMULATION.md "Appeals").
    print!("\n{}", panel_sim::replica_figures::APPEAL_TABLE_HEAD);
    for row in appeal_rows {
        println!("{row}");
    }
    Ok(())
}
