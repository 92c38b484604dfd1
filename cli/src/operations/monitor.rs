//! `panel monitor --policy FILE`: watches the log's checkpoints, from the cluster's
//! replicas and from checkpoint files (for instance ones a witness or another user
//! published), and checks that each extends the ones seen before (RFC 6962 consistency
//! proofs from the `Log` service). Two validly signed checkpoints of one size with
//! different roots are a split view: the log showed two histories. That is an alarm,
//! printed with both checkpoints as evidence, and exit status 3.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use panel_coordinator::pb::coordinator as cpb;
use panel_tlog::merkle::verify_consistency;
use panel_tlog::{Checkpoint, Note, Policy, ProofError};

use crate::client::addr::ClusterArgs;
use crate::client::cluster::{Cluster, runtime};
use crate::jsonl::BAD_INPUT;
use crate::output::OutputArgs;

/// Exit status of a detected split view or a checkpoint that does not extend another.
const ALARM: u8 = 3;

#[derive(clap::Args)]
pub struct Args {
    /// The tlog-policy whose log key checkpoints must carry.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Checkpoint files to compare with the cluster's (signed notes), read every round.
    #[arg(long = "checkpoint", value_name = "FILE")]
    checkpoints: Vec<PathBuf>,
    /// Polling rounds; 0 watches until interrupted.
    #[arg(long, default_value_t = 0)]
    rounds: u64,
    /// Pause between rounds.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// Do not ask the cluster (check only the files against each other).
    #[arg(long)]
    offline: bool,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// One checkpoint seen, with where it came from.
#[derive(Clone)]
struct Seen {
    checkpoint: Checkpoint,
    note: String,
    source: String,
}

/// What went wrong, with the evidence.
enum Alarm {
    Split(Seen, Seen),
    NotExtending {
        older: Seen,
        newer: Seen,
        why: ProofError,
    },
}

pub fn run(args: Args) -> Result<ExitCode> {
    let policy = match crate::offline::verify_proof::load_policy(&args.policy)? {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let cluster = (!args.offline)
        .then(|| Cluster::connect(&args.cluster))
        .transpose()?;
    let rt = runtime()?;
    let mut seen: BTreeMap<u64, Seen> = BTreeMap::new();
    let mut round = 0u64;
    loop {
        round += 1;
        let mut fresh = Vec::new();
        if let Some(c) = &cluster {
            match rt.block_on(c.log("the latest checkpoint", |mut log| async move {
                log.get_checkpoint(cpb::CheckpointRequest { size: 0 })
                    .await
                    .map(|r| r.into_inner().note)
            })) {
                Ok(note) => fresh.push((note, "the cluster".to_string())),
                Err(e) => eprintln!("warning: {e}"),
            }
        }
        for f in &args.checkpoints {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            fresh.push((text, f.display().to_string()));
        }
        for (note, source) in fresh {
            let s = match checked(&policy, &note, &source) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("refused a checkpoint from {source}: {e}");
                    continue;
                }
            };
            if let Some(alarm) = rt.block_on(observe(&mut seen, s, cluster.as_ref()))? {
                report(&alarm);
                return Ok(ExitCode::from(ALARM));
            }
        }
        if let Some((size, s)) = seen.last_key_value() {
            if args.output.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "round": round, "checkpoints": seen.len(),
                        "latest_size": size, "source": s.source,
                    })
                );
            } else {
                println!(
                    "round {round}: {} checkpoints consistent; latest size {size} from {}",
                    seen.len(),
                    s.source
                );
            }
        }
        if args.rounds != 0 && round >= args.rounds {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(args.interval_ms));
    }
}

/// The checkpoint must be the policy's log's (its key, or under a quorum log the keys of
/// enough organisations, so one rogue replica cannot raise a false alarm); cosignatures
/// are not required to watch it, only to trust it.
fn checked(policy: &Policy, text: &str, source: &str) -> Result<Seen> {
    let note = Note::parse(text.as_bytes())?;
    let checkpoint = policy.check_log(&note)?;
    Ok(Seen {
        checkpoint,
        note: text.to_string(),
        source: source.to_string(),
    })
}

/// Records `new` and checks it against its neighbours in size: the same size must have the
/// same root; a different size must be consistent with the nearest smaller and larger one.
async fn observe(
    seen: &mut BTreeMap<u64, Seen>,
    new: Seen,
    cluster: Option<&Cluster>,
) -> Result<Option<Alarm>> {
    let size = new.checkpoint.size;
    if let Some(old) = seen.get(&size) {
        return Ok(
            (old.checkpoint.root != new.checkpoint.root).then(|| Alarm::Split(old.clone(), new))
        );
    }
    let below = seen.range(..size).next_back().map(|(_, s)| s.clone());
    let above = seen.range(size + 1..).next().map(|(_, s)| s.clone());
    for (older, newer) in [(below, Some(new.clone())), (Some(new.clone()), above)] {
        let (Some(older), Some(newer)) = (older, newer) else {
            continue;
        };
        if let Some(c) = cluster
            && let Err(why) = consistent(c, &older.checkpoint, &newer.checkpoint).await?
        {
            return Ok(Some(Alarm::NotExtending { older, newer, why }));
        }
    }
    seen.insert(size, new);
    Ok(None)
}

/// Asks the cluster for the consistency proof between two checkpoints and checks it.
/// The outer error is the cluster's fault (a malformed proof); the inner one is the alarm.
async fn consistent(
    c: &Cluster,
    old: &Checkpoint,
    new: &Checkpoint,
) -> Result<Result<(), ProofError>> {
    let (old_size, new_size) = (old.size, new.size);
    let hashes = match c
        .log("a consistency proof", |mut log| async move {
            log.get_consistency(cpb::ConsistencyRequest { old_size, new_size })
                .await
                .map(|r| r.into_inner().hashes)
        })
        .await
    {
        Ok(h) => h,
        Err(e) => {
            eprintln!("warning: cannot check {old_size} -> {new_size} yet: {e}");
            return Ok(Ok(()));
        }
    };
    let proof: Vec<[u8; 32]> = hashes
        .iter()
        .map(|h| <[u8; 32]>::try_from(h.as_slice()))
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("the cluster sent a proof hash that is not 32 bytes"))?;
    if proof.len() > 64 {
        bail!("the cluster sent a {}-hash consistency proof", proof.len());
    }
    Ok(verify_consistency(
        old_size, new_size, &old.root, &new.root, &proof,
    ))
}

fn report(alarm: &Alarm) {
    match alarm {
        Alarm::Split(a, b) => {
            eprintln!(
                "ALARM: split view: two checkpoints of size {} signed by the log key with different roots",
                a.checkpoint.size
            );
            eprintln!("--- from {} ---\n{}", a.source, a.note);
            eprintln!("--- from {} ---\n{}", b.source, b.note);
        }
        Alarm::NotExtending { older, newer, why } => {
            eprintln!(
                "ALARM: the checkpoint of size {} does not extend the one of size {}: {why}",
                newer.checkpoint.size, older.checkpoint.size
            );
            eprintln!("--- from {} ---\n{}", older.source, older.note);
            eprintln!("--- from {} ---\n{}", newer.source, newer.note);
        }
    }
}
