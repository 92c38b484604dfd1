//! `panel proof ENTRY`: one record entry's offline proof from a running cluster, a
//! tlog-proof bundle (docs/WIRE.md "Transparency log") that `panel verify-proof` checks
//! with a policy and nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use panel_coordinator::pb::coordinator as cpb;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, runtime};

#[derive(clap::Args)]
pub struct Args {
    /// The entry's sequence number on the record (0-based; `seq` in an exported record).
    entry: u64,
    /// Where to write the bundle (default: standard output); `.tlog-proof` by convention.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let c = Cluster::connect(&args.cluster)?;
    let seq = args.entry;
    let bundle = runtime()?.block_on(c.log("a proof", |mut log| async move {
        log.get_entry_proof(cpb::EntryProofRequest { seq })
            .await
            .map(|r| r.into_inner().bundle)
    }))?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &bundle).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "proof of entry {seq} written to {}; check it with `panel verify-proof {} --policy POLICY`",
                path.display(),
                path.display()
            );
        }
        None => print!("{bundle}"),
    }
    Ok(ExitCode::SUCCESS)
}
