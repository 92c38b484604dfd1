//! `panel`: the Crucible Panel command line. Each subcommand lives in its own module;
//! this file only parses arguments and dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod calibrate;
mod gate_cmd;

#[derive(Parser)]
#[command(
    name = "panel",
    version,
    about = "Crucible Panel: a calibrated, distributed arbiter panel for the Crucible Protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check fields against the Gate (G1-G14).
    Gate(gate_cmd::Args),
    /// Score arbiters' answers offline: Brier, log score, Cooke's model, bridging.
    Calibrate(calibrate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gate(args) => gate_cmd::run(args),
        Command::Calibrate(args) => calibrate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}
