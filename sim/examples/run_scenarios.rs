//! Runs scenario files and writes each report where `panel sim` would, timing each run:
//! `cargo run --release -p panel-sim --example run_scenarios -- OUT_DIR SCENARIO...`.
//! The release-mode speed figure of docs/SIMULATION.md comes from here (it builds only the
//! pure crates, not the whole CLI).

use std::fs;
use std::path::Path;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, files)) = args.split_first() else {
        return Err("usage: run_scenarios OUT_DIR SCENARIO.toml...".into());
    };
    let motions = std::env::var("SIM_MOTIONS")
        .ok()
        .and_then(|m| m.parse().ok());
    for file in files {
        let scenario = panel_sim::parse(&fs::read_to_string(file)?)?;
        let started = Instant::now();
        let report = panel_sim::run(
            &scenario,
            panel_sim::Options {
                motions,
                sweeps: true,
            },
        );
        let total = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let _ = panel_sim::run(
            &scenario,
            panel_sim::Options {
                motions,
                sweeps: false,
            },
        );
        let main_only = started.elapsed().as_secs_f64();
        let dir = Path::new(out).join(&scenario.name);
        fs::create_dir_all(&dir)?;
        let plots = panel_sim::plot::plots(&report);
        for (name, svg) in &plots {
            fs::write(dir.join(name), svg)?;
        }
        let image_dir = format!("sim/{}", scenario.name);
        fs::write(
            dir.join("report.md"),
            panel_sim::markdown::render(&report, &plots, "."),
        )?;
        fs::write(
            dir.join("section.md"),
            panel_sim::markdown::render(&report, &plots, &image_dir),
        )?;
        fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        println!(
            "{}\t{}\tmain {main_only:.2} s\twith sweeps {total:.2} s",
            scenario.name, report.motions
        );
    }
    Ok(())
}
