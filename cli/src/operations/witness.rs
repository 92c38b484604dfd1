//! `panel witness ...`: run a C2SP tlog-witness and manage its key (docs/WITNESS.md).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use panel_witness::{Config, Server, SystemClock};

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve add-checkpoint and the monitoring checkpoint until SIGINT/SIGTERM.
    Run(RunArgs),
    /// Write a new witness key file (mode 0600) and print the witness vkey (type 0x04).
    Keygen(KeyArgs),
    /// Print the witness vkey (type 0x04) of a key file under a name.
    Vkey(KeyArgs),
}

#[derive(ClapArgs)]
struct RunArgs {
    /// Address to listen on (plain HTTP/1.1; answers are signed, docs/WITNESS.md).
    #[arg(long, default_value = "127.0.0.1:7400")]
    listen: SocketAddr,
    /// Folder of the witness's state (created if missing); keep it across restarts.
    #[arg(long = "data", value_name = "DIR")]
    data: PathBuf,
    /// The witness's key file (raw 32-byte seed or 64 hex characters, mode 0600).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The witness's name, e.g. witness.example/w1 (part of its vkey and cosignatures).
    #[arg(long)]
    name: String,
    /// A log to cosign for, as its vkey `<origin>+<key ID>+<key>` (repeat for more logs or
    /// more keys of one log; any one key's signature suffices).
    #[arg(long = "log", value_name = "VKEY", required_unless_present = "charter")]
    logs: Vec<String>,
    /// Cosign for the federation log this charter names, under its signing rule: with
    /// `log.quorum`, only checkpoints signed by the replica keys of that many
    /// organisations (docs/WITNESS.md).
    #[arg(long, value_name = "FILE", conflicts_with = "logs")]
    charter: Option<PathBuf>,
}

#[derive(ClapArgs)]
struct KeyArgs {
    /// The witness key file.
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The witness's name, e.g. witness.example/w1.
    #[arg(long)]
    name: String,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Cmd::Run(a) => serve(a),
        Cmd::Keygen(a) => {
            let key = panel_witness::key::generate_key(&a.key)?;
            print_vkey(&a.name, key)?;
            crate::output::note!("wrote {} (mode 0600)", a.key.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Vkey(a) => {
            print_vkey(&a.name, panel_witness::key::read_key(&a.key)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_vkey(name: &str, key: ed25519_dalek::SigningKey) -> Result<()> {
    let cosigner =
        panel_tlog::Cosigner::new(name, key).map_err(|_| panel_witness::StartError::BadName {
            name: name.to_string(),
        })?;
    println!("{}", cosigner.verifier());
    Ok(())
}

fn serve(a: RunArgs) -> Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let logs = match &a.charter {
        Some(path) => {
            let charter = panel_transport::charter_file::load(path)?;
            panel_coordinator::local::witnesses::logs_of(&charter)?
        }
        None => panel_witness::config::known_logs(&a.logs)?,
    };
    let config = Config::from_files(a.listen, &a.data, &a.name, &a.key, logs)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let server = Server::bind(config, SystemClock).await?;
        let addr = server.local_addr().context("the listening address")?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "witness vkey: {}", server.vkey())?;
        writeln!(out, "witness listening on http://{addr}")?;
        out.flush()?;
        drop(out);
        server.run(shutdown_signal()).await;
        Ok(ExitCode::SUCCESS)
    })
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending().await,
            }
        } => {}
    }
}
