//! `panel`: the Crucible Panel command line. Each subcommand lives in its own module, in a
//! folder by audience: `up/` (the local panel in one command), `user/` (a debate's users
//! against a running cluster), `procedures/` (the seed procedures' runs), `operations/`
//! (running and looking after a federation's hosts) and `offline/` (tools over files that
//! need no cluster); `client/` finds the cluster and talks to it. This file only parses
//! arguments and dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod client;
mod jsonl;
mod offline;
mod operations;
mod output;
mod procedures;
mod progress;
mod rulings;
mod up;
mod user;

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
    ///
    /// `--json` prints one JSON summary on stdout at the end (verdicts, record,
    /// checkpoints, runs); the narration goes to stderr.
    Up(up::Args),
    /// Time the real path end to end on a local panel: decisions/s, latency per phase, CPU,
    /// disk and network per decision, against the signature-verification bound.
    ///
    /// `--json` prints the report as one JSON document on stdout; the narration goes to
    /// stderr.
    Bench(operations::bench::Args),
    /// Verify an exported record offline: signatures, commitments, draws, acceptance, Merkle log, ledger.
    ///
    /// `--json` prints the report as JSON.
    Verify(offline::verify::Args),
    #[command(flatten)]
    User(user::Command),
    /// Replay the paper's worked verdict (section 4) through the engine and print both verdicts.
    Demo(offline::demo::Args),
    /// Recompute a debate document's ledger, margin, band and winner offline.
    Ledger(offline::ledger::Args),
    /// Run a replay script of writer calls and print the results and the document.
    Replay(offline::replay::Args),
    /// Check fields against the Gate (G1-G14).
    Gate(offline::gate::Args),
    /// Score arbiters' answers offline: Brier, log score, Cooke's model, bridging.
    ///
    /// `--json` prints one JSON object per arbiter (scores, probes, reliability with
    /// intervals, policy and decision) instead of the table.
    Calibrate(offline::calibrate::Args),
    /// Run an arbiter node; manage its key, key documents and human queue.
    Node(operations::node::Args),
    /// Run and manage the replicated coordinator (openraft on redb), write, read, bench.
    Coordinator(operations::coordinator::Args),
    /// Issue a federation's TLS certificates (one authority per organisation) and charter.
    Pki(operations::pki::Args),
    /// Endorse and admit a new organisation to a chartered federation.
    Org(operations::org::Args),
    /// Write one record entry's offline proof (a tlog-proof bundle) from a running cluster.
    Proof(operations::proof::Args),
    /// Check one entry's proof bundle offline against a trust policy.
    ///
    /// `--json` prints the result as JSON.
    VerifyProof(offline::verify_proof::Args),
    /// Watch the log's checkpoints and raise an alarm on a split view or a rewritten history.
    ///
    /// `--json` prints one JSON object per round on stdout (`round`, `checkpoints`,
    /// `latest_size`, `source`) instead of a sentence.
    Monitor(operations::monitor::Args),
    /// Run a transparency log witness (C2SP tlog-witness) and manage its key.
    Witness(operations::witness::Args),
    /// Publish the record as a C2SP tlog-tiles log (static files or HTTP) for outside auditors.
    Tiles(operations::tiles::Args),
    /// Crux on the panel: isolated advocates, checked positions, the panel names the crux.
    Crux(procedures::crux::Args),
    /// Falsification buckets on the panel: UNFALSIFIABLE, BROKEN or CORROBORATED.
    Falsify(procedures::falsify::Args),
    /// The decision dossier on the panel: NOW / PREPARE / REJECT with surviving dissent.
    Dossier(procedures::dossier::Args),
    /// Simulate verdict quality: known truth, faulty arbiters, every motion through the machine's own apply.
    ///
    /// `--json` prints the report as JSON instead of Markdown.
    Sim(offline::sim::Args),
    /// Print a shell completion script for `panel` (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Serve a read-only dashboard of a running cluster in the browser (debates, motions,
    /// arbiters, the record, procedure runs).
    Dash(operations::dash::Args),
    /// List the procedure runs on a cluster, or submit one role's input to a run.
    Runs(procedures::RunsArgs),
    /// Serve a GGUF model as an OpenAI-compatible endpoint for llm judges (`local-judge` build).
    Model(operations::model::Args),
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
        Command::Demo(args) => offline::demo::run(args),
        Command::Up(args) => up::run(args),
        Command::Bench(args) => operations::bench::run(args),
        Command::Verify(args) => offline::verify::run(args),
        Command::User(cmd) => user::run(cmd),
        Command::Ledger(args) => offline::ledger::run(args),
        Command::Replay(args) => offline::replay::run(args),
        Command::Gate(args) => offline::gate::run(args),
        Command::Calibrate(args) => offline::calibrate::run(args),
        Command::Coordinator(args) => operations::coordinator::run(args),
        Command::Node(args) => operations::node::run(args),
        Command::Pki(args) => operations::pki::run(args),
        Command::Org(args) => operations::org::run(args),
        Command::Proof(args) => operations::proof::run(args),
        Command::VerifyProof(args) => offline::verify_proof::run(args),
        Command::Monitor(args) => operations::monitor::run(args),
        Command::Witness(args) => operations::witness::run(args),
        Command::Tiles(args) => operations::tiles::run(args),
        Command::Crux(args) => procedures::crux::run(args),
        Command::Falsify(args) => procedures::falsify::run(args),
        Command::Dossier(args) => procedures::dossier::run(args),
        Command::Sim(args) => offline::sim::run(args),
        Command::Dash(args) => operations::dash::run(args),
        Command::Runs(args) => procedures::runs(args),
        Command::Model(args) => operations::model::run(args),
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
