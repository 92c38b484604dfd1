//! `panel`: the Crucible Panel command line. Each subcommand lives in its own module;
//! this file only parses arguments and dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod appeal_credits_view;
mod arbiter_cmd;
mod bench;
mod breaker_cmd;
mod calibrate;
mod cluster_addr;
mod cluster_client;
mod contribution_cmd;
mod coordinator_cmd;
mod crux_cmd;
mod crux_live;
mod dash_cmd;
mod debate_cmd;
mod demo;
mod dossier_cmd;
mod export_cmd;
mod falsify_cmd;
mod fingerprint_cmd;
mod gate_cmd;
mod jsonl;
mod last_word_cmd;
mod leaderboard_view;
mod ledger_cmd;
mod model_cmd;
mod monitor_cmd;
mod motion_cmd;
mod node_cmd;
mod org_cmd;
mod output;
mod pki_cmd;
mod procedure_run;
mod progress;
mod proof_cmd;
mod replay_cmd;
mod role_adapters;
mod rulings;
mod sim_cmd;
mod tiles_cmd;
mod up;
mod user_cmd;
mod verify_cmd;
mod verify_proof_cmd;
mod witness_cmd;

#[derive(Parser)]
#[command(
    name = "panel",
    version,
    about = "Crucible Panel: a calibrated, distributed arbiter panel for the Crucible Protocol"
)]
struct Cli {
    /// Print results and errors only: no narration, notes or progress.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a local panel (3 coordinators, 8 arbiter nodes) and run the paper's worked example through it.
    Up(up::Args),
    /// Time the real path end to end on a local panel: decisions/s, latency per phase, CPU,
    /// disk and network per decision, against the signature-verification bound.
    Bench(bench::Args),
    /// Verify an exported record offline: signatures, commitments, draws, acceptance, Merkle log, ledger.
    Verify(verify_cmd::Args),
    #[command(flatten)]
    User(user_cmd::Command),
    /// Replay the paper's worked verdict (section 4) through the engine and print both verdicts.
    Demo(demo::Args),
    /// Recompute a debate document's ledger, margin, band and winner offline.
    Ledger(ledger_cmd::Args),
    /// Run a replay script of writer calls and print the results and the document.
    Replay(replay_cmd::Args),
    /// Check fields against the Gate (G1-G14).
    Gate(gate_cmd::Args),
    /// Score arbiters' answers offline: Brier, log score, Cooke's model, bridging.
    Calibrate(calibrate::Args),
    /// Run an arbiter node; manage its key, key documents and human queue.
    Node(node_cmd::Args),
    /// Run and manage the replicated coordinator (openraft on redb), write, read, bench.
    Coordinator(coordinator_cmd::Args),
    /// Issue a federation's TLS certificates (one authority per organisation) and charter.
    Pki(pki_cmd::Args),
    /// Endorse and admit a new organisation to a chartered federation.
    Org(org_cmd::Args),
    /// Write one record entry's offline proof (a tlog-proof bundle) from a running cluster.
    Proof(proof_cmd::Args),
    /// Check one entry's proof bundle offline against a trust policy.
    VerifyProof(verify_proof_cmd::Args),
    /// Watch the log's checkpoints and raise an alarm on a split view or a rewritten history.
    Monitor(monitor_cmd::Args),
    /// Run a transparency log witness (C2SP tlog-witness) and manage its key.
    Witness(witness_cmd::Args),
    /// Publish the record as a C2SP tlog-tiles log (static files or HTTP) for outside auditors.
    Tiles(tiles_cmd::Args),
    /// Crux on the panel: isolated advocates, checked positions, the panel names the crux.
    Crux(crux_cmd::Args),
    /// Falsification buckets on the panel: UNFALSIFIABLE, BROKEN or CORROBORATED.
    Falsify(falsify_cmd::Args),
    /// The decision dossier on the panel: NOW / PREPARE / REJECT with surviving dissent.
    Dossier(dossier_cmd::Args),
    /// Simulate verdict quality: known truth, faulty arbiters, the real draw and acceptance rule.
    Sim(sim_cmd::Args),
    /// Print a shell completion script for `panel` (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Serve a read-only dashboard of a running cluster in the browser (debates, motions,
    /// arbiters, the record, procedure runs).
    Dash(dash_cmd::Args),
    /// List the procedure runs on a cluster, or submit one role's input to a run.
    Runs(procedure_run::RunsArgs),
    /// Serve a GGUF model as an OpenAI-compatible endpoint for llm judges (`local-judge` build).
    Model(model_cmd::Args),
}

/// The completion script, written whole; a closed pipe (`| head`) ends quietly.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    use std::io::Write;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "panel", &mut script);
    match std::io::stdout().lock().write_all(&script) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        r => {
            r?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Offline commands that print a report and exit: a closed pipe (`panel verify FILE |
/// head`) ends them quietly, as it ends any Unix filter, instead of a panic inside
/// `println!`. Servers and commands that drive child processes keep Rust's default
/// (SIGPIPE ignored), so a peer closing a pipe never kills them.
fn quiet_on_closed_pipe(command: &Command) {
    let filter = matches!(
        command,
        Command::Verify(_)
            | Command::Ledger(_)
            | Command::Replay(_)
            | Command::Gate(_)
            | Command::Calibrate(_)
            | Command::VerifyProof(_)
            | Command::Sim(_)
            | Command::Completions { .. }
    );
    #[cfg(unix)]
    if filter {
        // SAFETY: called at the start of `main`, before any thread exists; SIG_DFL is a
        // valid disposition for SIGPIPE.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    #[cfg(not(unix))]
    let _ = filter;
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    output::set_quiet(cli.quiet);
    quiet_on_closed_pipe(&cli.command);
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Up(args) => up::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Verify(args) => verify_cmd::run(args),
        Command::User(cmd) => user_cmd::run(cmd),
        Command::Ledger(args) => ledger_cmd::run(args),
        Command::Replay(args) => replay_cmd::run(args),
        Command::Gate(args) => gate_cmd::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Coordinator(args) => coordinator_cmd::run(args),
        Command::Node(args) => node_cmd::run(args),
        Command::Pki(args) => pki_cmd::run(args),
        Command::Org(args) => org_cmd::run(args),
        Command::Proof(args) => proof_cmd::run(args),
        Command::VerifyProof(args) => verify_proof_cmd::run(args),
        Command::Monitor(args) => monitor_cmd::run(args),
        Command::Witness(args) => witness_cmd::run(args),
        Command::Tiles(args) => tiles_cmd::run(args),
        Command::Crux(args) => crux_cmd::run(args),
        Command::Falsify(args) => falsify_cmd::run(args),
        Command::Dossier(args) => dossier_cmd::run(args),
        Command::Sim(args) => sim_cmd::run(args),
        Command::Dash(args) => dash_cmd::run(args),
        Command::Runs(args) => procedure_run::runs(args),
        Command::Model(args) => model_cmd::run(args),
        Command::Completions { shell } => completions(shell),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            if err.downcast_ref::<jsonl::BadInput>().is_some() {
                ExitCode::from(jsonl::BAD_INPUT)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand's arguments are well formed (unique names, valid groups): clap
    /// checks this only when a command is parsed, so a clash would otherwise surface as a
    /// panic the first time a user asks for that command's help.
    #[test]
    fn every_command_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// The completion scripts come from the clap definitions, so every command is in them.
    #[test]
    fn completions_name_every_command() {
        use clap::CommandFactory;
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "panel", &mut script);
            let text = String::from_utf8(script).expect("utf-8");
            for cmd in [
                "up", "verify", "crux", "falsify", "dossier", "runs", "sim", "dash",
            ] {
                assert!(text.contains(cmd), "{shell:?} completions lack {cmd}");
            }
        }
    }
}
