//! `panel tiles`: the record as a C2SP tlog-tiles log, for auditors outside the federation
//! (docs/WIRE.md "tlog-tiles"). An auditor mirrors `checkpoint`, `tile/<L>/<N>` and
//! `tile/entries/<N>` with any HTTP client or static mirror and checks them with any
//! tlog-tiles reader and the trust policy, without this project's code.
//!
//! - `panel tiles write RECORD --out DIR`: the static layout of an exported record, for
//!   any static file server;
//! - `panel tiles serve`: the same resources over HTTP, from a record file or following a
//!   running cluster (`--addr` one replica to serve that replica's record), fetching only
//!   the entries it lacks as the record grows.
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
use panel_coordinator::pb::coordinator as cpb;
use panel_machine::Bundle;
use panel_machine::Query;
use panel_tlog::tiles::{Layout, Leaf, Published};
use panel_tlog::{Checkpoint, Note, Policy};
use panel_witness::{Publisher, TileServer};
use serde_json::Value;

use crate::client::addr::ClusterArgs;
use crate::client::cluster::Cluster;

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
    #[error("{0}")]
    Leaf(#[from] panel_machine::LeafError),
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
    let entries = bundle
        .entries
        .iter()
        .map(|e| e.leaf_bytes())
        .collect::<Result<_, _>>()?;
    Ok(Published::new(entries, chosen)?)
}

fn load_policy(path: Option<&Path>) -> Result<Option<Policy>> {
    path.map(|p| crate::offline::verify_proof::load_policy(p)?.map_err(anyhow::Error::from))
        .transpose()
}

fn read_record(path: &Path) -> Result<Bundle> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a record `panel export` wrote", path.display()))
}

/// Why a folder's tiles may not be replaced: tiles are immutable and a log's tree only
/// grows (tlog-tiles), so a mirror that already copied them must never see them change.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    #[error("{} holds another log's tiles (origin {held:?}, not {origin:?})", dir.display())]
    OtherLog {
        dir: PathBuf,
        held: String,
        origin: String,
    },
    #[error(
        "{} holds a checkpoint of size {held}, newer than this one ({size}); a log never moves back",
        dir.display()
    )]
    Older { dir: PathBuf, held: u64, size: u64 },
    #[error(
        "{} holds a checkpoint of size {size} with another root: two trees of one size (a split view); nothing was written",
        dir.display()
    )]
    SplitView { dir: PathBuf, size: u64 },
    #[error("{} differs from this tree's; tiles never change, so nothing was written", path.display())]
    TileDiffers { path: PathBuf },
}

/// Checks that writing `layout` over what `dir` holds keeps every copied file valid.
fn check_replaceable(layout: &Layout, published: &Published, dir: &Path) -> Result<()> {
    let new = Checkpoint::parse_body(&published.checkpoint().text)
        .map_err(panel_tlog::tiles::PublishError::from)
        .map_err(TilesError::from)?;
    let held = dir.join("checkpoint");
    if let Ok(bytes) = std::fs::read(&held) {
        let old = Note::parse(&bytes)
            .ok()
            .and_then(|n| Checkpoint::parse_body(&n.text).ok())
            .with_context(|| format!("{} is not a checkpoint note", held.display()))?;
        let dir = dir.to_path_buf();
        if old.origin != new.origin {
            return Err(ReplaceError::OtherLog {
                dir,
                held: old.origin,
                origin: new.origin,
            }
            .into());
        }
        if old.size > new.size {
            return Err(ReplaceError::Older {
                dir,
                held: old.size,
                size: new.size,
            }
            .into());
        }
        if old.size == new.size && old.root != new.root {
            return Err(ReplaceError::SplitView {
                dir,
                size: new.size,
            }
            .into());
        }
    }
    for (path, bytes) in layout.files.iter().filter(|(p, _)| p != "checkpoint") {
        let target = dir.join(path);
        if let Ok(held) = std::fs::read(&target)
            && &held != bytes
        {
            return Err(ReplaceError::TileDiffers { path: target }.into());
        }
    }
    Ok(())
}

/// Writes the static layout under `dir`: every file through a temporary name and a
/// rename, so a static server never serves half a tile, and the checkpoint last, so it
/// never names a tree whose tiles are not there yet. A folder that already holds tiles is
/// only extended: the same log, a tree at least as large, and every file it holds
/// unchanged ([`ReplaceError`]).
pub fn write_layout(published: &Published, dir: &Path) -> Result<Layout> {
    let layout = published.files();
    check_replaceable(&layout, published, dir)?;
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
                let follower = Follower {
                    cluster: Cluster::connect(&a.cluster)?,
                    publisher,
                    policy,
                    entries: Vec::new(),
                    seen: Vec::new(),
                };
                tokio::spawn(follower.run(Duration::from_millis(a.refresh_ms.max(100))));
            }
        }
        println!("tlog-tiles at http://{addr}/ (GET checkpoint, tile/...); Ctrl-C stops it");
        server.run(shutdown_signal()).await;
        Ok(ExitCode::SUCCESS)
    })
}

/// Checkpoints a follower considers, newest first, when choosing what to publish.
const CANDIDATES: usize = 16;
/// Past this many missing entries the follower reads one export rather than one entry
/// at a time.
const BULK: u64 = 512;

/// Follows one replica: keeps the leaf bytes of the record's first entries, and on every
/// new or newly cosigned checkpoint fetches only the entries it lacks (one `Log` read
/// each, the whole export when it lacks many) and publishes the tiles at the newest
/// acceptable checkpoint. The replica is asked for its own checkpoints and entries
/// (`Log.GetCheckpoint`, `Log.GetEntryProof`), so the tiles are that replica's record.
struct Follower {
    cluster: Cluster,
    publisher: Publisher,
    policy: Option<Policy>,
    /// Entries `0..entries.len()` with their leaf hashes, shared with the snapshots.
    entries: Vec<Leaf>,
    /// `(size, cosignatures)` of the checkpoints last looked at, to skip unchanged ticks.
    seen: Vec<(u64, usize)>,
}

impl Follower {
    /// The latest checkpoints' sizes and cosignature counts, oldest first.
    async fn checkpoints(&self) -> Result<Vec<(u64, usize)>> {
        let v: Value = self
            .cluster
            .read(&Query::Checkpoints {
                limit: Some(CANDIDATES),
            })
            .await?;
        Ok(v["checkpoints"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| {
                        let size = c["size"].as_u64()?;
                        Some((size, c["cosigned_by"].as_array().map_or(0, Vec::len)))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn note(&self, size: u64) -> Result<Note> {
        let text = self
            .cluster
            .log("a checkpoint", |mut log| async move {
                log.get_checkpoint(cpb::CheckpointRequest { size })
                    .await
                    .map(|r| r.into_inner().note)
            })
            .await?;
        Ok(Note::parse(text.as_bytes())
            .map_err(|problem| TilesError::BadNote { index: 0, problem })?)
    }

    /// The newest of `sizes` whose checkpoint meets the policy (or, without one, carries
    /// a cosignature; else the newest).
    async fn choose(&self, sizes: &[(u64, usize)]) -> Result<Note> {
        let mut newest = None;
        let mut problem = None;
        for &(size, _) in sizes.iter().rev() {
            let note = self.note(size).await?;
            let ok = match &self.policy {
                Some(p) => match p.check(&note) {
                    Ok(_) => true,
                    Err(e) => {
                        problem.get_or_insert(e);
                        false
                    }
                },
                None => cosigned(&note),
            };
            if ok {
                return Ok(note);
            }
            newest.get_or_insert(note);
        }
        match (problem, newest) {
            (Some(problem), _) => Err(TilesError::NoneMeetsPolicy { problem }.into()),
            (None, Some(n)) => Ok(n),
            (None, None) => Err(TilesError::NoCheckpoints.into()),
        }
    }

    /// Makes `entries` hold at least the first `size` entries; says how it got them.
    async fn extend_to(&mut self, size: u64) -> Result<String> {
        let have = self.entries.len() as u64;
        if size <= have {
            return Ok("no new entries".into());
        }
        if have == 0 || size - have > BULK {
            let export = self.cluster.read(&Query::Export).await?;
            // Decoding and hashing a whole record is CPU work: off the serving threads.
            self.entries = tokio::task::spawn_blocking(move || {
                let bundle: Bundle = serde_json::from_value(export)
                    .context("the coordinator's export is not a record; is it the same version?")?;
                bundle
                    .entries
                    .iter()
                    .map(|e| Ok(Leaf::new(e.leaf_bytes()?)))
                    .collect::<anyhow::Result<_>>()
            })
            .await??;
            return Ok("entries from one export".into());
        }
        for seq in have..size {
            let text = self
                .cluster
                .log("an entry", |mut log| async move {
                    log.get_entry_proof(cpb::EntryProofRequest { seq })
                        .await
                        .map(|r| r.into_inner().bundle)
                })
                .await?;
            let bundle = panel_tlog::ProofBundle::parse(&text)
                .with_context(|| format!("the replica's proof of entry {seq}"))?;
            match bundle.extra {
                Some(bytes) if bundle.index == seq => self.entries.push(Leaf::new(bytes)),
                _ => anyhow::bail!("the replica's proof of entry {seq} does not carry it"),
            }
        }
        Ok(format!("{} new entries read one by one", size - have))
    }

    /// One look at the replica; `Some` when something new was published.
    async fn tick(&mut self) -> Result<Option<String>> {
        let sizes = self.checkpoints().await?;
        if sizes == self.seen {
            return Ok(None);
        }
        let note = self.choose(&sizes).await?;
        if self
            .publisher
            .current()
            .is_some_and(|p| p.checkpoint() == &note)
        {
            self.seen = sizes;
            return Ok(None);
        }
        let chosen = Checkpoint::parse_body(&note.text)
            .map_err(panel_tlog::tiles::PublishError::from)
            .map_err(TilesError::from)?;
        let size = chosen.size;
        // What is served never moves back (a replica behind the cluster's view may lack a
        // cosignature the served checkpoint has), and two roots of one size are a split
        // view to report, not to serve.
        if let Some(current) = self.publisher.current() {
            let served = Checkpoint::parse_body(&current.checkpoint().text)
                .map_err(panel_tlog::tiles::PublishError::from)
                .map_err(TilesError::from)?;
            if served.size == size && served.root != chosen.root {
                anyhow::bail!(
                    "the replica shows two roots at size {size}: a split view (still serving the first)"
                );
            }
            if served.size > size {
                return Ok(None);
            }
        }
        let how = self.extend_to(size).await?;
        let entries = self.entries[..size as usize].to_vec();
        let published =
            match tokio::task::spawn_blocking(move || Published::from_leaves(entries, note)).await?
            {
                Ok(p) => p,
                Err(e) => {
                    // Entries that do not hash to a signed root: start over from an export.
                    self.entries.clear();
                    return Err(TilesError::from(e).into());
                }
            };
        let line = format!("{}; {how}", describe(&published));
        self.publisher.publish(published);
        self.seen = sizes;
        Ok(Some(line))
    }

    /// Ticks every `every`; an error is reported once and the last good tiles stay served.
    async fn run(mut self, every: Duration) {
        let mut last_error = String::new();
        loop {
            match self.tick().await {
                Ok(Some(line)) => {
                    println!("publishing {line}");
                    last_error.clear();
                }
                Ok(None) => last_error.clear(),
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
            tree.append(&e.leaf_bytes().expect("leaf"));
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

    #[test]
    fn a_folder_of_tiles_only_grows() {
        let log = NoteSigner::new(ORIGIN, SigningKey::from_bytes(&[1; 32])).expect("log");
        let w = Cosigner::new("w.example/1", SigningKey::from_bytes(&[2; 32])).expect("w");
        let dir = tempfile::tempdir().expect("dir");
        let bundle = record(&log, &w);
        let at = |size: usize, bundle: &Bundle| {
            let mut b = bundle.clone();
            b.checkpoints.truncate(size);
            publish(&b, None).expect("publish")
        };
        write_layout(&at(2, &bundle), dir.path()).expect("first write");
        // The same tree again, and a larger one: fine.
        write_layout(&at(2, &bundle), dir.path()).expect("same again");
        let mut grown = bundle.clone();
        grown.checkpoints = vec![bundle.checkpoints[2].clone()];
        let grown = publish(&grown, None).expect("grown");
        assert_eq!(grown.size(), 3);
        write_layout(&grown, dir.path()).expect("a larger tree");
        // An older tree: refused.
        let err = write_layout(&at(1, &bundle), dir.path()).expect_err("older");
        assert!(
            matches!(
                err.downcast_ref(),
                Some(ReplaceError::Older {
                    held: 3,
                    size: 1,
                    ..
                })
            ),
            "{err}"
        );
        // Another tree of the same size: refused as a split view, nothing written.
        let dir = tempfile::tempdir().expect("dir");
        write_layout(&at(2, &bundle), dir.path()).expect("write");
        let mut forked = bundle.clone();
        forked.entries[1].request_id = 77;
        let mut tree = Log::new();
        for e in &forked.entries[..2] {
            tree.append(&e.leaf_bytes().expect("leaf"));
        }
        let mut note = Note::new(Checkpoint::new(ORIGIN, 2, tree.root()).body()).expect("n");
        note.add(log.sign(&note.text));
        note.add(w.cosign(&note.text, 1_800_000_000));
        forked.checkpoints = vec![note.to_text()];
        let before = std::fs::read(dir.path().join("tile/0/000.p/2")).expect("tile");
        let err = write_layout(&publish(&forked, None).expect("fork"), dir.path())
            .expect_err("split view");
        assert!(
            matches!(
                err.downcast_ref(),
                Some(ReplaceError::SplitView { size: 2, .. })
            ),
            "{err}"
        );
        assert_eq!(
            std::fs::read(dir.path().join("tile/0/000.p/2")).expect("tile"),
            before
        );
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
