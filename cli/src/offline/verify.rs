//! `panel verify RECORD`: checks an exported record offline, without the service: every
//! signature, every commitment against its reveal, the panel draws from their logged
//! seeds, every accepted outcome against the recorded policy, the Merkle log and its
//! checkpoints, and every ledger and verdict recomputed by the engine. The trust anchors
//! are the verifier's own: `--policy` (the log key and the witness quorum, tlog-policy)
//! and `--charter` (the federation's keys); never the keys a record names for itself.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panel_machine::Bundle;
use panel_machine::read::record::verify;

use crate::output::OutputArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The exported record (JSON), e.g. .panel/record.json.
    record: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    /// The federation's charter as the verifier holds it (charter.json): the record must
    /// adopt exactly this charter, so arbiters' keys and the motion key are trusted through
    /// it rather than through what the record says of itself.
    #[arg(long, value_name = "FILE")]
    charter: Option<PathBuf>,
    /// The trust policy (C2SP tlog-policy: the log's vkey, the witnesses, the quorum): the
    /// checkpoint covering the record must be signed by the policy's log and cosigned by
    /// its quorum of witnesses (`panel up` writes pki/policy.txt).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.record)
        .with_context(|| format!("reading {}", args.record.display()))?;
    // Malformed input exits 2 like every other malformed input; only a well-formed record
    // that fails verification exits 1.
    let Ok(text) = std::str::from_utf8(&bytes) else {
        eprintln!(
            "error: {} is not a record: not valid UTF-8 (a record is the JSON `panel export` writes)",
            args.record.display()
        );
        return Ok(ExitCode::from(crate::jsonl::BAD_INPUT));
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let bundle: Bundle = match serde_path_to_error::deserialize(&mut de) {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "error: {} is not a record: {}: {}",
                args.record.display(),
                e.path(),
                e.inner()
            );
            return Ok(ExitCode::from(crate::jsonl::BAD_INPUT));
        }
    };
    let trusted = match &args.charter {
        Some(path) => match panel_transport::charter_file::load(path) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(crate::jsonl::BAD_INPUT));
            }
        },
        None => None,
    };
    let policy = match &args.policy {
        Some(path) => match crate::offline::verify_proof::load_policy(path)? {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(crate::jsonl::BAD_INPUT));
            }
        },
        None => None,
    };
    let checked = trusted
        .as_ref()
        .map_or(Ok(()), |c| {
            panel_machine::read::record::check_charter(&bundle, c)
        })
        .and_then(|()| verify(&bundle))
        .and_then(|report| {
            let witnessed = policy
                .as_ref()
                .map(|p| panel_machine::read::record::check_policy(&bundle, p))
                .transpose()?;
            Ok((report, witnessed))
        });
    match checked {
        Ok((report, witnessed)) => {
            if args.output.json {
                let mut v = serde_json::to_value(&report)?;
                v["policy"] = serde_json::to_value(&witnessed)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!(
                    "record verifies: {} entries, {} arbiters, {} debate(s), {} motions accepted, {} deadlocked",
                    report.entries,
                    report.arbiters,
                    report.debates,
                    report.motions_accepted,
                    report.motions_deadlocked
                );
                println!(
                    "checkpoint: {} entries, root {} ({} checkpoint(s) in the record)",
                    report.checkpoint_size, report.checkpoint_root, report.checkpoints
                );
                match &witnessed {
                    Some(w) => println!(
                        "trust: the checkpoint covering all {} entries is signed by the policy's log {} and cosigned by {} (the policy's quorum)",
                        w.size,
                        w.origin,
                        if w.witnesses.is_empty() {
                            "no witness".to_string()
                        } else {
                            w.witnesses.join(", ")
                        }
                    ),
                    None => println!(
                        "trust: no policy was given, so no trust anchor for the log: only internal consistency was checked{} (pass --policy FILE)",
                        if report.log_signed_per_charter {
                            ", with the log key the record's own charter names"
                        } else {
                            ""
                        }
                    ),
                }
                for v in &report.verdicts {
                    println!("{}", verdict_line(v));
                }
                if !report.runs.is_empty() {
                    println!(
                        "procedure runs: {}, each recomputed from its entries",
                        report.runs.len()
                    );
                }
                for r in &report.runs {
                    println!(
                        "  {} ({:?}{}): {}",
                        r.run,
                        r.kind,
                        if r.finished { "" } else { ", running" },
                        r.summary
                    );
                }
                match (&report.charter, &trusted) {
                    (Some(d), Some(_)) => println!("charter: {d}, the trusted charter"),
                    (Some(d), None) => println!(
                        "charter: {d}, as the record states it; no trust anchor was given, so only \
                         internal consistency was checked (pass --charter FILE)"
                    ),
                    (None, _) => println!(
                        "charter: none (an unchartered debug group's record); roles were not \
                         checked against a federation"
                    ),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            eprintln!("record does NOT verify: {failure}");
            Ok(ExitCode::from(1))
        }
    }
}

/// One verdict of the report as a sentence, figures rounded as the engine prints them:
/// "verdict 2 of deb_1: A 1.23 vs B 1.22, margin 0.006, no winner (unresolved)".
fn verdict_line(v: &serde_json::Value) -> String {
    let num = |x: &serde_json::Value, digits: usize| {
        x.as_f64().map_or_else(
            || "?".to_string(),
            |f| crucible::verdict::js_to_fixed(f, digits),
        )
    };
    let outcome = match v["winner"].as_str() {
        Some(w) => format!("side {w} wins ({})", v["band"].as_str().unwrap_or("?")),
        None => format!("no winner ({})", v["band"].as_str().unwrap_or("?")),
    };
    format!(
        "verdict {} of {}: A {} vs B {}, margin {}, {outcome}",
        v["n"],
        v["debate"].as_str().unwrap_or("?"),
        num(&v["totals"]["A"], 2),
        num(&v["totals"]["B"], 2),
        num(&v["margin"], 3),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_reads_as_a_sentence_with_rounded_figures() {
        let v = serde_json::json!({"debate": "deb_1", "n": 2, "winner": null,
            "totals": {"A": 1.234_567, "B": 1.228_9}, "margin": 0.005_667, "band": "unresolved"});
        assert_eq!(
            verdict_line(&v),
            "verdict 2 of deb_1: A 1.23 vs B 1.23, margin 0.006, no winner (unresolved)"
        );
        let won = serde_json::json!({"debate": "deb_2", "n": 1, "winner": "A",
            "totals": {"A": 2.0, "B": 1.0}, "margin": 0.34, "band": "clear"});
        assert!(verdict_line(&won).ends_with("side A wins (clear)"));
    }
}
