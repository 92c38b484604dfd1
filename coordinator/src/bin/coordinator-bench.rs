//! Stand-alone coordinator bench: the same harness as `panel coordinator bench`, without the
//! CLI crate. Invoked as `coordinator-bench [--secs N] [--clients N] [--paced-rate N]
//! [--paced-secs N]` (or `--soak-secs N [--soak-rate N --soak-window-secs N]` for the
//! sustained load of `bench/soak.rs`, with `--snapshot-logs N --keep-logs N` for the
//! replicas); it re-executes itself as `coordinator-bench coordinator run --id ..
//! --listen .. --data-dir ..` for each of the three replicas (the argument shape of
//! `panel coordinator run`). Mutual TLS is on, as in production; `--insecure-loopback`
//! measures the same cluster in plaintext for comparison.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use panel_coordinator::ProposerOptions;
use panel_coordinator::bench::{self, BenchOptions};
use panel_coordinator::raft::RaftOptions;
use panel_coordinator::{ServeError, ServeOptions, serve};

/// Why the bench stopped; `main` prints it as `error: ...`.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{flag} takes a whole number, got {value:?}")]
    NotANumber { flag: &'static str, value: String },
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("--listen: {0}")]
    Listen(std::net::AddrParseError),
    #[error(transparent)]
    Transport(#[from] panel_transport::TransportError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("cannot find this executable to start the replicas from: {0}")]
    CurrentExe(std::io::Error),
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn num(args: &[String], name: &'static str, default: u64) -> Result<u64, Failure> {
    match flag(args, name) {
        Some(v) => v.parse().map_err(|_| Failure::NotANumber {
            flag: name,
            value: v,
        }),
        None => Ok(default),
    }
}

async fn replica(args: &[String]) -> Result<(), Failure> {
    let id = num(args, "--id", 0)?;
    let listen: SocketAddr = flag(args, "--listen")
        .ok_or(Failure::Missing("--listen HOST:PORT"))?
        .parse()
        .map_err(Failure::Listen)?;
    let data_dir = PathBuf::from(flag(args, "--data-dir").ok_or(Failure::Missing("--data-dir"))?);
    let opts = ServeOptions {
        id,
        listen,
        data_dir,
        raft: {
            let d = RaftOptions::default();
            RaftOptions {
                snapshot_logs: num(args, "--snapshot-logs", d.snapshot_logs)?,
                keep_logs: num(args, "--keep-logs", d.keep_logs)?,
                ..d
            }
        },
        proposer: ProposerOptions::default(),
        driver: Default::default(),
        // The bench opens raw motions and submits outcomes as a client.
        test_commands: true,
        max_command_bytes: panel_coordinator::service::serve::DEFAULT_MAX_COMMAND_BYTES,
        transport: panel_transport::Transport::from_flags(
            flag(args, "--tls").as_deref().map(std::path::Path::new),
            flag(args, "--charter").as_deref().map(std::path::Path::new),
            args.iter().any(|a| a == "--insecure-loopback"),
        )?,
        admin_listen: None,
        motion_key: flag(args, "--motion-key").map(PathBuf::from),
        next_motion_key: None,
        intake: Default::default(),
        log_key: flag(args, "--log-key").map(PathBuf::from),
        witnesses: args
            .windows(2)
            .filter(|w| w[0] == "--witness")
            .map(|w| w[1].clone())
            .collect(),
        checkpoints: panel_machine::features::checkpoints::Cadence {
            every_entries: num(args, "--checkpoint-every-entries", 256)?,
            every_ms: num(args, "--checkpoint-every-ms", 1000)?,
        },
        metrics_addr: None,
        restore: None,
    };
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    Ok(serve(opts, shutdown).await?)
}

async fn main_async(args: Vec<String>) -> Result<(), Failure> {
    if args.get(1).map(String::as_str) == Some("coordinator")
        && args.get(2).map(String::as_str) == Some("run")
    {
        return replica(&args).await;
    }
    let opts = BenchOptions {
        secs: num(&args, "--secs", 10)?,
        clients: num(&args, "--clients", 64)? as usize,
        paced_rate: num(&args, "--paced-rate", 100)?,
        paced_secs: num(&args, "--paced-secs", 5)?,
        dir: flag(&args, "--dir").map(PathBuf::from),
        panel_bin: std::env::current_exe().map_err(Failure::CurrentExe)?,
        tls: !args.iter().any(|a| a == "--insecure-loopback"),
        signed_motions: args.iter().any(|a| a == "--signed-motions"),
        witnesses: args.iter().any(|a| a == "--witnesses"),
        checkpoint_every_entries: num(&args, "--checkpoint-every-entries", 256)?,
        checkpoint_every_ms: num(&args, "--checkpoint-every-ms", 1000)?,
        snapshot_logs: flag(&args, "--snapshot-logs")
            .map(|_| num(&args, "--snapshot-logs", 0))
            .transpose()?,
        keep_logs: flag(&args, "--keep-logs")
            .map(|_| num(&args, "--keep-logs", 0))
            .transpose()?,
    };
    let rendered = match flag(&args, "--soak-secs") {
        Some(_) => bench::soak::run(
            opts,
            bench::soak::SoakOptions {
                secs: num(&args, "--soak-secs", 600)?,
                rate: num(&args, "--soak-rate", 550)?,
                sample_secs: num(&args, "--soak-window-secs", 60)?,
                max_rss_mib: num(&args, "--soak-max-rss-mib", 4096)?,
            },
        )
        .await?
        .render(),
        None => bench::run(opts).await?.render(),
    };
    println!("{rendered}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // The same runtime whether this process is the bench or a replica it started.
    let rt = match panel_coordinator::service::runtime::replica_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(main_async(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
