//! `panel verify-proof BUNDLE --policy FILE`: checks one entry's tlog-proof bundle offline,
//! without the rest of the record: the checkpoint meets the policy (log key and witness
//! quorum), and the entry carried in the bundle is included under its root at its index.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use panel_machine::read::entry_proof;
use panel_tlog::policy::PolicyError;
use panel_tlog::{Policy, ProofBundle};
use serde_json::json;

use crate::client::cluster::print_json;
use crate::jsonl::BAD_INPUT;
use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The bundle `panel proof` wrote.
    bundle: PathBuf,
    /// The tlog-policy to trust: the log's vkey, the witnesses and the quorum.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Why a tlog-policy file is refused: bad input (exit 2), naming the file (and, through
/// [`PolicyError`], the line).
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    #[error("{} is not UTF-8", .path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{}: {problem}", .path.display())]
    Invalid { path: PathBuf, problem: PolicyError },
}

/// Reads a tlog-policy file; the outer error is an I/O failure (exit 1), the inner one a
/// malformed file (exit 2).
pub fn load_policy(path: &std::path::Path) -> Result<Result<Policy, PolicyFileError>> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let Ok(text) = String::from_utf8(text) else {
        return Ok(Err(PolicyFileError::NotUtf8 {
            path: path.to_path_buf(),
        }));
    };
    Ok(
        Policy::parse(&text).map_err(|problem| PolicyFileError::Invalid {
            path: path.to_path_buf(),
            problem,
        }),
    )
}

pub fn run(args: Args) -> Result<ExitCode> {
    let policy = match load_policy(&args.policy)? {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let text = std::fs::read(&args.bundle)
        .with_context(|| format!("reading {}", args.bundle.display()))?;
    let bundle = match std::str::from_utf8(&text)
        .map_err(|_| "not UTF-8".to_string())
        .and_then(|t| ProofBundle::parse(t).map_err(|e| e.to_string()))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "error: {} is not a tlog-proof bundle: {e}",
                args.bundle.display()
            );
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    match entry_proof::check(&bundle, &policy) {
        Ok(p) => {
            if args.output.json {
                print_json(&json!({
                    "verifies": true, "seq": p.entry.seq, "kind": p.entry.command.kind(),
                    "time_ms": p.entry.time_ms, "checkpoint_size": p.size,
                    "origin": p.origin, "witnesses": p.witnesses,
                }))?;
            } else {
                println!(
                    "proof verifies: entry {} ({}) is in the log {} at size {}, cosigned by {}",
                    p.entry.seq,
                    p.entry.command.kind(),
                    p.origin,
                    p.size,
                    if p.witnesses.is_empty() {
                        "no witness".to_string()
                    } else {
                        p.witnesses.join(", ")
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("proof does NOT verify: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
