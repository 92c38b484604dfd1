//! `panel tiles`: the record as a C2SP tlog-tiles log, for auditors outside the federation
//! (docs/WIRE.md "tlog-tiles"). An auditor mirrors `checkpoint`, `tile/<L>/<N>` and
//! `tile/entries/<N>` with any HTTP client or static mirror and checks them with any
//! tlog-tiles reader and the trust policy, without this project's code.
//!
//! - `panel tiles write RECORD --out DIR`: the static layout of an exported record, for
//!   any static file server;
//! - `panel tiles serve`: the same resources over HTTP, from a record file or following a
//!   running cluster (`--addr` one replica to serve that replica's record).
//!
//! The checkpoint served is the newest in the record that meets `--policy` (signed by the
//! log, cosigned by the policy's witness quorum), or without one the newest carrying a
//! witness cosignature; the tree is the record's first entries up to that checkpoint's
//! size, so every tile agrees with a signed, witnessed head.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use panel_coordinator::command::Query;
use panel_coordinator::record::Bundle;
use panel_tlog::tiles::{Layout, Published};
use panel_tlog::{Note, Policy};
use panel_witness::{Publisher, TileServer};
use serde_json::Value;

use crate::cluster_addr::ClusterArgs;
use crate::cluster_client::Cluster;

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write an exported record as a static tlog-tiles layout (checkpoint, tiles, entry
    /// bundles) into a folder any static file server can serve.
    Write(WriteArgs),
    /// Serve the record as tlog-tiles over HTTP (GET only), from a record file or a
    /// running cluster, until SIGINT/SIGTERM.
    Serve(ServeArgs),
}

#[derive(ClapArgs)]
struct WriteArgs {
    /// The record `panel export` wrote.
    record: PathBuf,
    /// The folder to write (created if missing); its `checkpoint` is written last.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Publish the newest checkpoint that meets this trust policy (C2SP tlog-policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

#[derive(ClapArgs)]
struct ServeArgs {
    /// Address to listen on (plain HTTP/1.1: what it serves is checked against the
    /// checkpoint's signatures, not the connection). The whole record is readable by anyone
    /// who reaches it.
    #[arg(long, default_value = "127.0.0.1:7480", value_name = "HOST:PORT")]
    listen: SocketAddr,
    /// Serve this exported record instead of following a cluster.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Publish the newest checkpoint that meets this trust policy (C2SP tlog-policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// How often to ask the cluster for a newer checkpoint, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    refresh_ms: u64,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Why a record cannot be published.
#[derive(Debug, thiserror::Error)]
pub enum TilesError {
    #[error(
        "the record has no signed-note checkpoints (record format v1); export it again with this version"
    )]
    NoCheckpoints,
    #[error("checkpoint {index} of the record is not a signed note: {problem}")]
    BadNote {
        index: usize,
        problem: panel_tlog::NoteError,
    },
    #[error("no checkpoint of the record meets the policy (the newest: {problem})")]
    NoneMeetsPolicy {
        problem: panel_tlog::policy::PolicyError,
    },
    #[error("the record's entries do not match its checkpoint: {0}")]
    Publish(#[from] panel_tlog::tiles::PublishError),
}

/// A cosignature/v1 line carries an 8-byte timestamp before its 64-byte signature; a log
/// signature line carries the signature alone (docs/WIRE.md "Cosignatures").
fn cosigned(note: &Note) -> bool {
    note.signatures.iter().any(|s| s.signature.len() == 72)
}

/// The record's tiles at its newest checkpoint that meets `policy` (or, without one,
/// its newest witnessed checkpoint, else its newest).
pub fn publish(bundle: &Bundle, policy: Option<&Policy>) -> Result<Published, TilesError> {
    if bundle.checkpoints.is_empty() {
        return Err(TilesError::NoCheckpoints);
    }
    let notes = bundle
        .checkpoints
        .iter()
        .enumerate()
        .map(|(index, text)| {
            Note::parse(text.as_bytes()).map_err(|problem| TilesError::BadNote { index, problem })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let chosen = match policy {
        Some(p) => {
            let mut first_problem = None;
            let found = notes.iter().rev().find(|n| match p.check(n) {
                Ok(_) => true,
                Err(e) => {
                    first_problem.get_or_insert(e);
                    false
                }
            });
            match (found, first_problem) {
                (Some(n), _) => n.clone(),
                (None, Some(problem)) => return Err(TilesError::NoneMeetsPolicy { problem }),
                (None, None) => return Err(TilesError::NoCheckpoints),
            }
        }
        None => notes
            .iter()
            .rev()
            .find(|n| cosigned(n))
            .or(notes.last())
            .cloned()
            .ok_or(TilesError::NoCheckpoints)?,
    };
    let entries = bundle.entries.iter().map(|e| e.leaf_bytes()).collect();
    Ok(Published::new(entries, chosen)?)
}

fn load_policy(path: Option<&Path>) -> Result<Option<Policy>> {
    path.map(|p| crate::verify_proof_cmd::load_policy(p)?.map_err(anyhow::Error::from))
        .transpose()
}

fn read_record(path: &Path) -> Result<Bundle> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a record `panel export` wrote", path.display()))
}

/// Writes the static layout under `dir`: every file through a temporary name and a
/// rename, so a static server never serves half a tile, and the checkpoint last, so it
/// never names a tree whose tiles are not there yet.
pub fn write_layout(published: &Published, dir: &Path) -> Result<Layout> {
    let layout = published.files();
    let (checkpoint, tiles): (Vec<_>, Vec<_>) = layout
        .files
        .iter()
        .partition(|(path, _)| path == "checkpoint");
    for (path, bytes) in tiles.into_iter().chain(checkpoint) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let tmp = target.with_extension("tmp-write");
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &target)
            .with_context(|| format!("renaming to {}", target.display()))?;
    }
    Ok(layout)
}

/// One line about what was published.
fn describe(p: &Published) -> String {
    let cosignatures = p
        .checkpoint()
        .signatures
        .iter()
        .filter(|s| s.signature.len() == 72)
        .count();
    format!(
        "tree size {} (checkpoint with {} signature line(s), {cosignatures} of them witness cosignatures)",
        p.size(),
        p.checkpoint().signatures.len()
    )
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Cmd::Write(a) => write(a),
        Cmd::Serve(a) => serve(a),
    }
}

fn write(a: WriteArgs) -> Result<ExitCode> {
    let policy = load_policy(a.policy.as_deref())?;
    let bundle = read_record(&a.record)?;
    let published = publish(&bundle, policy.as_ref())?;
    let layout = write_layout(&published, &a.out)?;
    println!(
        "wrote {} files to {}: {}",
        layout.files.len(),
        a.out.display(),
        describe(&published)
    );
    for (path, why) in &layout.skipped {
        println!("  left out {path}: {why}");
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(a: ServeArgs) -> Result<ExitCode> {
    let policy = load_policy(a.policy.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let server = TileServer::bind(a.listen).await?;
        let addr = server.local_addr().context("the listening address")?;
        let publisher = server.publisher();
        match &a.record {
            Some(path) => {
                let published = publish(&read_record(path)?, policy.as_ref())?;
                println!("serving {} from {}", describe(&published), path.display());
                publisher.publish(published);
            }
            None => {
                // Fail early on a cluster that cannot be found; later failures only warn.
                let cluster = Cluster::connect(&a.cluster)?;
                let every = Duration::from_millis(a.refresh_ms.max(100));
                tokio::spawn(follow(cluster, publisher, policy, every));
            }
        }
        println!("tlog-tiles at http://{addr}/ (GET checkpoint, tile/...); Ctrl-C stops it");
        server.run(shutdown_signal()).await;
        Ok(ExitCode::SUCCESS)
    })
}

/// What the newest checkpoint looks like, cheaply: its size and how many cosigned it.
async fn latest(cluster: &Cluster) -> Result<(u64, usize)> {
    let v: Value = cluster.read(&Query::Checkpoints { limit: Some(1) }).await?;
    let last = v["checkpoints"]
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or(Value::Null);
    let size = last["size"].as_u64().unwrap_or(0);
    let cosigners = last["cosigned_by"].as_array().map_or(0, Vec::len);
    Ok((size, cosigners))
}

/// Re-publishes whenever the cluster's newest checkpoint grows or gains a cosignature;
/// an error is reported and the last good snapshot stays served.
async fn follow(cluster: Cluster, publisher: Publisher, policy: Option<Policy>, every: Duration) {
    let mut shown: Option<(u64, usize)> = None;
    let mut last_error = String::new();
    loop {
        let step = async {
            let now = latest(&cluster).await?;
            if shown == Some(now) {
                return Ok(None);
            }
            let export = cluster.read(&Query::Export).await?;
            let bundle: Bundle = serde_json::from_value(export)
                .context("the coordinator's export is not a record; is it the same version?")?;
            let policy = policy.clone();
            let published =
                tokio::task::spawn_blocking(move || publish(&bundle, policy.as_ref())).await??;
            anyhow::Ok(Some((now, published)))
        };
        match step.await {
            Ok(None) => {}
            Ok(Some((now, published))) => {
                let changed = publisher
                    .current()
                    .is_none_or(|p| p.checkpoint() != published.checkpoint());
                if changed {
                    println!("publishing {}", describe(&published));
                    publisher.publish(published);
                }
                shown = Some(now);
                last_error.clear();
            }
            Err(e) => {
                let e = format!("{e:#}");
                if e != last_error {
                    eprintln!(
                        "warning: could not refresh the tiles (still serving the last ones): {e}"
                    );
                    last_error = e;
                }
            }
        }
        tokio::time::sleep(every).await;
    }
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

/// `panel export --tiles DIR`: the exported record's static layout, at its newest
/// witnessed checkpoint; returns the line to print.
pub fn export_tiles(bundle: &Bundle, dir: &Path) -> Result<String> {
    let published = publish(bundle, None)?;
    let layout = write_layout(&published, dir)?;
    Ok(format!(
        "wrote the tlog-tiles layout ({} files, {}) to {}",
        layout.files.len(),
        describe(&published),
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use panel_tlog::{Checkpoint, Cosigner, Log, NoteSigner};

    const ORIGIN: &str = "tiles.example/log";

    fn entry(i: u64) -> Value {
        serde_json::json!({
            "seq": i, "log_index": i, "item_index": 0, "time_ms": 1, "seed": 2,
            "client_id": "c", "request_id": i,
            "command": { "Note": { "topic": "t", "text": format!("n{i}") } },
            "reply": { "Applied": null }
        })
    }

    /// A record of 3 entries with checkpoints at 1 (cosigned by `w`), 2 (cosigned) and 3
    /// (log-signed only, as an export between checkpoints adds).
    fn record(log: &NoteSigner, w: &Cosigner) -> Bundle {
        let entries: Vec<Value> = (0..3).map(entry).collect();
        let mut bundle: Bundle = serde_json::from_value(serde_json::json!({
            "format": "crucible-panel-record/v3", "entries": entries,
            "debates": {}, "arbiters": [],
        }))
        .expect("bundle");
        let mut tree = Log::new();
        for (i, e) in bundle.entries.iter().enumerate() {
            tree.append(&e.leaf_bytes());
            let mut note =
                Note::new(Checkpoint::new(ORIGIN, i as u64 + 1, tree.root()).body()).expect("n");
            note.add(log.sign(&note.text));
            if i < 2 {
                note.add(w.cosign(&note.text, 1_800_000_000));
            }
            bundle.checkpoints.push(note.to_text());
        }
        bundle
    }

    #[test]
    fn the_published_checkpoint_is_the_newest_witnessed_or_the_newest_the_policy_accepts() {
        let log = NoteSigner::new(ORIGIN, SigningKey::from_bytes(&[1; 32])).expect("log");
        let w = Cosigner::new("w.example/1", SigningKey::from_bytes(&[2; 32])).expect("w");
        let other = Cosigner::new("w.example/2", SigningKey::from_bytes(&[3; 32])).expect("w2");
        let bundle = record(&log, &w);
        assert_eq!(publish(&bundle, None).expect("publish").size(), 2);

        let policy = |witness: &Cosigner| {
            Policy::parse(&format!(
                "log {}\nwitness w {}\nquorum w\n",
                log.verifier(),
                witness.verifier()
            ))
            .expect("policy")
        };
        assert_eq!(
            publish(&bundle, Some(&policy(&w))).expect("publish").size(),
            2
        );
        assert!(matches!(
            publish(&bundle, Some(&policy(&other))),
            Err(TilesError::NoneMeetsPolicy { .. })
        ));

        // Without any cosignature, the newest checkpoint.
        let mut bare = bundle.clone();
        bare.checkpoints = bare
            .checkpoints
            .iter()
            .map(|t| {
                let mut n = Note::parse(t.as_bytes()).expect("note");
                n.signatures.truncate(1);
                n.to_text()
            })
            .collect();
        assert_eq!(publish(&bare, None).expect("publish").size(), 3);

        // A checkpoint whose root is not the entries' is refused, not served.
        let mut forged = bundle.clone();
        forged.entries[1].request_id = 99;
        assert!(matches!(
            publish(&forged, None),
            Err(TilesError::Publish(_))
        ));
        forged.checkpoints.clear();
        assert!(matches!(
            publish(&forged, None),
            Err(TilesError::NoCheckpoints)
        ));
    }

    #[test]
    fn the_static_layout_is_written_checkpoint_last_and_complete() {
        let log = NoteSigner::new(ORIGIN, SigningKey::from_bytes(&[1; 32])).expect("log");
        let w = Cosigner::new("w.example/1", SigningKey::from_bytes(&[2; 32])).expect("w");
        let dir = tempfile::tempdir().expect("dir");
        let line = export_tiles(&record(&log, &w), dir.path()).expect("write");
        assert!(line.contains("tree size 2"), "{line}");
        for f in [
            "checkpoint",
            "tile/0/000.p/2",
            "tile/entries/000.p/2",
            "tile/entries32/000.p/2",
        ] {
            assert!(dir.path().join(f).is_file(), "{f}");
        }
        let leftovers: Vec<_> = walk(dir.path())
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "tmp-write"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }
}
