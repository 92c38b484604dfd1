//! `panel dash`: the read-only dashboard in the browser (docs/DASHBOARD.md). Finds the
//! cluster and its TLS identity as every read command does (`--addr`, `--state`,
//! `--tls`), then hands over to `panel-dash`.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::runtime;

#[derive(clap::Args)]
pub struct Args {
    /// Where the dashboard listens (host:port; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT")]
    listen: SocketAddr,
    /// Listen on an address other than loopback. Anyone who reaches it reads the cluster
    /// with this command's TLS identity, without a certificate of their own.
    #[arg(long)]
    allow_remote: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        bail!(
            "--listen {} is not a loopback address; the dashboard reads the cluster with this command's TLS identity for anyone who reaches it, so pass --allow-remote to mean it",
            args.listen
        );
    }
    let (addrs, from) = args.cluster.resolve()?;
    let transport = args.cluster.transport()?;
    let how = if transport.is_tls() {
        "mutual TLS"
    } else {
        "plaintext on loopback"
    };
    runtime()?.block_on(async {
        let src = panel_dash::Source::new(&transport, &addrs)?;
        panel_dash::bind_and_serve(
            args.listen,
            src,
            |bound| {
                println!(
                    "dashboard at http://{bound}/ (read-only), reading the coordinators at {} (from {from}) over {how}; Ctrl-C stops it",
                    addrs.join(",")
                );
            },
            panel_dash::stop_signal(),
        )
        .await?;
        Ok(ExitCode::SUCCESS)
    })
}
