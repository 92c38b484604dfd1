//! `panel dash`: the read-only dashboard in the browser (docs/DASHBOARD.md). Finds the
//! cluster and its TLS identity as every read command does (`--addr`, `--state`,
//! `--tls`), then hands over to `panel-dash`.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Result;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::runtime;

#[derive(clap::Args)]
pub struct Args {
    /// Where the dashboard listens (host:port; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT")]
    listen: SocketAddr,
    /// Listen on an address other than loopback. Anyone who reaches it reads the cluster
    /// with this command's TLS identity, without a certificate of their own.
    #[arg(long)]
    allow_remote: bool,
    /// Also answer requests addressed to NAME (a host name or address, no port; may be
    /// repeated). Without it only localhost, loopback addresses and the --listen address
    /// are answered, so a page of another site cannot read the cluster through a name
    /// that resolves to this machine (DNS rebinding).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    panel_dash::check_listen(args.listen, args.allow_remote)?;
    let opts = panel_dash::Options {
        allow_remote: args.allow_remote,
        allow_hosts: args.allow_host,
        ..panel_dash::Options::default()
    };
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
            &opts,
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
