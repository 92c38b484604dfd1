//! The sharding sweep of docs/SHARDING.md without the CLI crate:
//! `cargo run --release -p panel-sim --example shards [-- --json]`.
//! `panel sim shards` prints the same tables and takes the sweep's flags.

use std::process::ExitCode;

fn main() -> ExitCode {
    let json = std::env::args().any(|a| a == "--json");
    match panel_sim::shards::sweep::run(&panel_sim::shards::Sweep::default()) {
        Ok(report) if json => match serde_json::to_string_pretty(&report) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cannot encode the report: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(report) => {
            print!("{}", report.markdown());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
