//! `panel export`: the whole record from a running cluster (every applied registration,
//! debate write and outcome, the documents, the arbiters) with the log's checkpoints (signed
//! by the log key, cosigned by the witnesses), written to a file that `panel verify` checks
//! offline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use panel_machine::Bundle;
use panel_machine::Query;
use panel_machine::read::record;
use serde_json::json;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, print_json, runtime};
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the record; default STATE/record-export.json.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the record as a static C2SP tlog-tiles layout into DIR (docs/WIRE.md
    /// "tlog-tiles"; `panel tiles write` does the same from a record file).
    #[arg(long, value_name = "DIR")]
    tiles: Option<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Signature lines on the record's last checkpoint beyond the log's own.
fn last_cosignatures(bundle: &Bundle) -> usize {
    bundle
        .checkpoints
        .last()
        .and_then(|t| panel_tlog::Note::parse(t.as_bytes()).ok())
        .map_or(0, |n| n.signatures.len().saturating_sub(1))
}

pub fn run(args: Args) -> Result<ExitCode> {
    let c = Cluster::connect(&args.cluster)?;
    let export = runtime()?.block_on(c.read(&Query::Export))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.cluster.state.join("record-export.json"));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&out, serde_json::to_vec_pretty(&export)?)
        .with_context(|| format!("writing {}", out.display()))?;
    let bundle: Bundle = serde_json::from_value(export)
        .context("the coordinator's export is not a record; is it the same panel version?")?;
    // A local check, so a bad export is noticed now; `panel verify` is the auditor's tool.
    let check = record::verify(&bundle);
    let tiles = match &args.tiles {
        Some(dir) => Some(crate::operations::tiles::export_tiles(&bundle, dir)?),
        None => None,
    };
    if args.output.json {
        print_json(&json!({
            "out": out,
            "entries": bundle.entries.len(),
            "debates": bundle.debates.len(),
            "arbiters": bundle.arbiters.len(),
            "checkpoints": bundle.checkpoints.len(),
            "cosignatures": last_cosignatures(&bundle),
            "tiles": args.tiles,
            "verifies": check.as_ref().map_err(|e| e.to_string()).err().map_or(json!(true), |e| json!({ "error": e })),
        }))?;
    } else {
        println!(
            "exported {} entries, {} debate(s), {} arbiter(s){} to {}",
            bundle.entries.len(),
            bundle.debates.len(),
            bundle.arbiters.len(),
            match last_cosignatures(&bundle) {
                0 => ", with signed checkpoints (no witness cosignature yet),".to_string(),
                n => format!(", with signed checkpoints (the last cosigned {n} times),"),
            },
            out.display()
        );
        if let Some(line) = &tiles {
            println!("{line}");
        }
        match &check {
            Ok(_) => println!("it verifies offline: `panel verify {}`", out.display()),
            Err(e) => eprintln!("warning: the exported record does not verify: {e}"),
        }
    }
    Ok(if check.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
