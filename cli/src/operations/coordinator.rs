//! `panel coordinator ...`: run a replica, manage membership, write, read, bench.
//! Every command but `run` prints one JSON document on stdout.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args as ClapArgs, Subcommand};
use panel_coordinator::bench::{self, BenchOptions};
use panel_coordinator::client;
use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::serve;
use panel_machine::{Command, Query, TestCommand};
use panel_transport::Transport;
use serde_json::{Value, json};

#[derive(ClapArgs)]
pub struct Args {
    /// Identity folder for mutual TLS (ca.pem, and cert.pem + key.pem for a role: a
    /// replica's for `run`, an operator's for membership). Without it, only loopback
    /// addresses are reached, in plaintext.
    #[arg(long, global = true, env = "PANEL_TLS", value_name = "DIR")]
    tls: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one replica until SIGTERM or Ctrl-C.
    Run(Box<RunArgs>),
    /// Make the cluster's motion key (raw 32-byte seed, mode 0600) and print its public
    /// key for the nodes' `coordinator_keys`. Copy the file to every replica.
    MotionKeygen {
        /// Where to write the key; an existing file is never overwritten.
        file: PathBuf,
    },
    /// Initialise a new group on a pristine replica: --member 1=127.0.0.1:7001 ...
    Init {
        #[arg(long)]
        addr: String,
        #[arg(long = "member", required = true)]
        members: Vec<String>,
    },
    /// Add a replica as a non-voting learner (waits until it caught up).
    AddLearner {
        #[arg(long)]
        addr: String,
        #[arg(long)]
        id: u64,
        #[arg(long)]
        member_addr: String,
    },
    /// Set the voters, e.g. --voters 1,2,3 (promotes learners, removes others).
    ChangeMembership {
        #[arg(long)]
        addr: String,
        #[arg(long, value_delimiter = ',', required = true)]
        voters: Vec<u64>,
        /// Keep removed voters as learners.
        #[arg(long)]
        retain: bool,
    },
    /// Raft role, term, leader, log/snapshot positions, membership.
    Status {
        #[arg(long)]
        addr: String,
    },
    /// Write one command (JSON), retrying over --addr list with the same request id.
    Write {
        #[arg(long, value_delimiter = ',', required = true)]
        addr: Vec<String>,
        #[arg(long, default_value = "cli")]
        client_id: String,
        #[arg(long)]
        request_id: u64,
        /// A Command as JSON, e.g. '{"Note":{"topic":"t","text":"x"}}'.
        #[arg(long)]
        command: String,
        #[arg(long, default_value_t = 30)]
        patience_secs: u64,
    },
    /// Write notes 1..=count to a topic sequentially, each retried until it succeeds.
    Load {
        #[arg(long, value_delimiter = ',', required = true)]
        addr: Vec<String>,
        #[arg(long)]
        client_id: String,
        #[arg(long)]
        topic: String,
        #[arg(long)]
        count: u64,
        #[arg(long, default_value_t = 60)]
        patience_secs: u64,
    },
    /// Read with a Query (JSON), e.g. '{"Notes":{"topic":"t"}}' or '"Stats"'. Linearizable
    /// unless --local.
    Read {
        #[arg(long)]
        addr: String,
        #[arg(long)]
        query: String,
        /// Kept for older scripts: reads are linearizable by default.
        #[arg(long, conflicts_with = "local")]
        linearizable: bool,
        /// Answer from this replica's applied state, possibly stale (no quorum needed).
        #[arg(long)]
        local: bool,
    },
    /// Component bench: start a local 3-replica cluster and print throughput and latency
    /// of raw motions and client outcomes (needs a build with the test-commands feature).
    Bench(BenchArgs),
    /// Take a consistent hot backup of a running replica's state (the record with its
    /// checkpoints, and every other table) into FILE; `run --restore FILE` starts a new
    /// group from it. Needs an operator's identity under TLS.
    Backup {
        /// The replica to copy (any member; the Admin listener if it has its own).
        #[arg(long)]
        addr: String,
        /// Where to write the backup; an existing file is never overwritten.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Copy the replica's applied state as it is, without a read barrier: for a group
        /// that lost its quorum (it may miss writes acknowledged elsewhere).
        #[arg(long)]
        local: bool,
    },
}

/// Write limits per identity, per organisation and globally (docs/SECURITY.md, "Floods";
/// docs/coordinator/operations.md, "Command line"). Unset flags keep the defaults of
/// `LimitPolicy::default()` and `IntakeLimits::default()`.
#[derive(ClapArgs, Debug, Clone, Default)]
struct LimitArgs {
    /// Client writes per certificate: burst (default 600).
    #[arg(long)]
    identity_burst: Option<u32>,
    /// Client writes per certificate per minute (default 6000).
    #[arg(long)]
    identity_per_minute: Option<u32>,
    /// Client writes per organisation, across its certificates: burst (default 3000).
    #[arg(long)]
    organisation_burst: Option<u32>,
    /// Client writes per organisation per minute (default 30000).
    #[arg(long)]
    organisation_per_minute: Option<u32>,
    /// Client writes of all anonymous callers together: burst (default 1000).
    #[arg(long)]
    anonymous_burst: Option<u32>,
    /// Client writes of all anonymous callers together per minute (default 10000).
    #[arg(long)]
    anonymous_per_minute: Option<u32>,
    /// Client writes across all writers: burst (default 10000; leader intake).
    #[arg(long)]
    global_burst: Option<u32>,
    /// Client writes across all writers per minute (default 120000; leader intake).
    #[arg(long)]
    global_per_minute: Option<u32>,
    /// Debates one identity may convene (default 1000; enforced in apply).
    #[arg(long)]
    debates_per_identity: Option<u32>,
    /// Contributions one debate may hold (default 20000; enforced in apply).
    #[arg(long)]
    contributions_per_debate: Option<u32>,
    /// Open panel-request motions per question of a debate (default 2; in apply).
    #[arg(long)]
    open_motions_per_question: Option<u32>,
    /// Open panel-request motions per identity (default 64; in apply).
    #[arg(long)]
    open_motions_per_identity: Option<u32>,
}

impl LimitArgs {
    /// Flags given override the file's `[limits]` keys.
    fn overlay(&self, l: &mut panel_coordinator::config::LimitsSection) {
        let pairs = [
            (&mut l.identity_burst, self.identity_burst),
            (&mut l.identity_per_minute, self.identity_per_minute),
            (&mut l.organisation_burst, self.organisation_burst),
            (&mut l.organisation_per_minute, self.organisation_per_minute),
            (&mut l.anonymous_burst, self.anonymous_burst),
            (&mut l.anonymous_per_minute, self.anonymous_per_minute),
            (&mut l.global_burst, self.global_burst),
            (&mut l.global_per_minute, self.global_per_minute),
            (&mut l.debates_per_identity, self.debates_per_identity),
            (
                &mut l.contributions_per_debate,
                self.contributions_per_debate,
            ),
            (
                &mut l.open_motions_per_question,
                self.open_motions_per_question,
            ),
            (
                &mut l.open_motions_per_identity,
                self.open_motions_per_identity,
            ),
        ];
        for (slot, flag) in pairs {
            if flag.is_some() {
                *slot = flag;
            }
        }
    }
}

#[derive(ClapArgs)]
struct RunArgs {
    /// A replica config file (TOML, docs/coordinator/operations.md "Configuration file"); flags given
    /// override its keys.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The replica's Raft id (file: `id`).
    #[arg(long)]
    id: Option<u64>,
    /// The gRPC address (file: `listen`).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The replica's own folder (file: `data_dir`).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Default 100 (file: `raft.heartbeat_ms`).
    #[arg(long)]
    heartbeat_ms: Option<u64>,
    /// Default 500 (file: `raft.election_min_ms`).
    #[arg(long)]
    election_min_ms: Option<u64>,
    /// Default 1000 (file: `raft.election_max_ms`).
    #[arg(long)]
    election_max_ms: Option<u64>,
    /// Build a snapshot every this many log entries.
    /// Default 5000 (file: `raft.snapshot_logs`).
    #[arg(long)]
    snapshot_logs: Option<u64>,
    /// Entries kept behind the latest snapshot; older ones are purged.
    /// Default 1000 (file: `raft.keep_logs`).
    #[arg(long)]
    keep_logs: Option<u64>,
    /// Most commands per Raft entry.
    /// Default 512 (file: `batching.batch_max`).
    #[arg(long)]
    batch_max: Option<usize>,
    /// Most command bytes per Raft entry.
    /// Default 1 MiB (file: `batching.batch_max_bytes`).
    #[arg(long)]
    batch_max_bytes: Option<usize>,
    /// Largest client command in bytes; larger writes are refused at intake.
    /// Default 1 MiB (file: `batching.max_command_bytes`).
    #[arg(long)]
    max_command_bytes: Option<usize>,
    #[command(flatten)]
    limits: LimitArgs,
    /// How long the leader waits for more commands while entries are in flight.
    /// Default 1000 (file: `batching.linger_us`).
    #[arg(long)]
    linger_us: Option<u64>,
    /// How long arbiters have to commit to a motion before reveals start (every motion
    /// kind without its own --commit-window). Default 400 (file: `windows.commit_ms`).
    #[arg(long)]
    commit_window_ms: Option<u64>,
    /// The commit window of one motion kind, KIND=MS (repeatable), e.g.
    /// `--commit-window merge=60000 --commit-window verify-tier=90000` for LLM judges.
    /// Kinds: merge, resolve-challenge, verify-tier, assign-relevance, certify-steelman,
    /// advance-phase, admit-appeal, procedure. Give every replica the same windows (file:
    /// `[windows.commit_by_kind]`).
    #[arg(long = "commit-window", value_name = "KIND=MS")]
    commit_windows: Vec<String>,
    /// How long reveals are collected after the commit window.
    /// Default 5000 (file: `windows.reveal_ms`).
    #[arg(long)]
    reveal_window_ms: Option<u64>,
    /// How long an arbiter has to commit to all items of its calibration exam.
    /// Default 20000 (file: `windows.exam_ms`).
    #[arg(long)]
    exam_window_ms: Option<u64>,
    /// Exam items put to one arbiter's node at once (its max_concurrent_judgements decides
    /// how many it judges at a time). Default 16 (file: `windows.exam_concurrency`).
    #[arg(long)]
    exam_concurrency: Option<usize>,
    /// Simulation cluster: exam motions carry gold answers as hints for scripted judges.
    /// Never use with real arbiters.
    #[arg(long)]
    simulation: bool,
    /// Test cluster: accept test commands from clients (admission without the exam, raw
    /// motions, client outcomes). Needs a build with the test-commands feature; never on a
    /// production replica.
    #[arg(long)]
    test_commands: bool,
    /// The federation charter (pins which certificates are replicas and operators);
    /// required with --tls.
    #[arg(long, value_name = "FILE")]
    charter: Option<PathBuf>,
    /// Plaintext, loopback addresses only: a debug cluster on one machine. Excludes --tls.
    #[arg(long)]
    insecure_loopback: bool,
    /// Serve the `Admin` service (membership) on its own listener; under TLS it answers
    /// the charter's operators only, wherever it is served.
    #[arg(long, value_name = "HOST:PORT")]
    admin_listen: Option<SocketAddr>,
    /// The cluster's motion key (raw 32-byte seed, mode 0600, the same file on every
    /// replica): the driver signs every motion with it, and nodes list its public key in
    /// `coordinator_keys`. Required on production replicas.
    #[arg(long, value_name = "FILE")]
    motion_key: Option<PathBuf>,
    /// A second motion key held for a rotation (`panel coordinator rotate-motion-key`):
    /// the driver signs each motion with whichever held key the record says is in force
    /// for it, so a rotation needs no restart at the moment it applies.
    #[arg(long, value_name = "FILE")]
    next_motion_key: Option<PathBuf>,
    /// This replica's log key (raw 32-byte seed, mode 0600; `panel pki init` writes
    /// `<replica folder>/log.key`): it signs checkpoints, and under the charter's quorum
    /// log it must be the key the charter lists for this replica (older single-key charters:
    /// the log.key every replica shares). Required when the charter names a log; an
    /// unchartered group uses DATA_DIR/log.key.
    #[arg(long, value_name = "FILE")]
    log_key: Option<PathBuf>,
    /// A witness's submission prefix (e.g. http://127.0.0.1:7401) the leader pushes each
    /// new checkpoint to; repeat for every witness of the charter.
    #[arg(long = "witness", value_name = "URL")]
    witnesses: Vec<String>,
    /// Issue a checkpoint once this many entries were added since the last one.
    /// Default 256 (file: `checkpoints.every_entries`).
    #[arg(long)]
    checkpoint_every_entries: Option<u64>,
    /// Issue a checkpoint once this many milliseconds passed since the last one (when new
    /// entries exist); one also follows every verdict.
    /// Default 1000 (file: `checkpoints.every_ms`).
    #[arg(long)]
    checkpoint_every_ms: Option<u64>,
    /// Serve plain-HTTP /metrics (Prometheus), /livez and /readyz on this address. Off
    /// by default; bind it where only monitoring reaches.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<SocketAddr>,
    /// Start a new group of one from a backup of `panel coordinator backup`, in an empty
    /// --data-dir; add members afterwards with add-learner and change-membership.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
    /// With --restore: the address the other replicas reach this one at (default:
    /// --listen).
    #[arg(long, value_name = "HOST:PORT", requires = "restore")]
    member_addr: Option<String>,
}

#[derive(ClapArgs)]
struct BenchArgs {
    /// Seconds of the full-load phase.
    #[arg(long, default_value_t = 10)]
    secs: u64,
    /// Concurrent writers in the full-load phase.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Decisions per second in the latency phase (a tenth of the target by default).
    #[arg(long, default_value_t = 100)]
    paced_rate: u64,
    #[arg(long, default_value_t = 5)]
    paced_secs: u64,
    /// Working directory for the replicas' data (a temporary one by default).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Measure the cluster in the loopback plaintext mode instead of mutual TLS.
    #[arg(long)]
    insecure_loopback: bool,
    /// With --insecure-loopback: still sign motions and bind rulings to them.
    #[arg(long)]
    signed_motions: bool,
    /// Run a witness per organisation and push every checkpoint to them (TLS only).
    #[arg(long)]
    witnesses: bool,
    /// The replicas' checkpoint cadence in entries.
    #[arg(long, default_value_t = 256)]
    checkpoint_every_entries: u64,
    /// The replicas' checkpoint cadence in milliseconds.
    #[arg(long, default_value_t = 1000)]
    checkpoint_every_ms: u64,
    /// Run a soak instead: a paced load for this many seconds, reported per window, with
    /// each replica's memory and redb file sizes (docs: BENCHMARKS.md, "Soak").
    #[arg(long)]
    soak_secs: Option<u64>,
    /// Decisions per second during the soak (about half the measured maximum).
    #[arg(long, default_value_t = 550)]
    soak_rate: u64,
    /// Seconds per reported soak window.
    #[arg(long, default_value_t = 60)]
    soak_window_secs: u64,
    /// Stop the soak once a replica's resident memory passes this many MiB.
    #[arg(long, default_value_t = 4096)]
    soak_max_rss_mib: u64,
    /// The replicas' --snapshot-logs (their default when absent).
    #[arg(long)]
    snapshot_logs: Option<u64>,
    /// The replicas' --keep-logs (their default when absent).
    #[arg(long)]
    keep_logs: Option<u64>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn print(v: &Value) -> Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(ExitCode::SUCCESS)
}

fn parse_member(s: &str) -> Result<pb::Member> {
    let (id, addr) = s.split_once('=').ok_or_else(|| {
        anyhow!("member {s:?} must look like ID=HOST:PORT, e.g. 1=127.0.0.1:7001")
    })?;
    Ok(pb::Member {
        id: id
            .parse()
            .with_context(|| format!("member id {id:?} is not a number"))?,
        addr: addr.to_owned(),
    })
}

fn status_json(s: &pb::StatusReply) -> Value {
    json!({
        "node_id": s.node_id,
        "role": s.role,
        "term": s.term,
        "leader_id": s.has_leader.then_some(s.leader_id),
        "leader_addr": s.has_leader.then_some(&s.leader_addr),
        "last_log_index": s.last_log_index,
        "last_applied": s.last_applied,
        "snapshot_index": s.snapshot_index,
        "purged_index": s.purged_index,
        "voters": s.voters,
        "learners": s.learners,
        "nodes": serde_json::from_str::<Value>(&s.nodes_json).unwrap_or(Value::Null),
    })
}

fn write_json(r: &pb::WriteReply) -> Value {
    json!({
        "applied": r.applied,
        "result": serde_json::from_str::<Value>(&r.result_json).unwrap_or(Value::Null),
        "log_index": r.log_index,
        "duplicate": r.duplicate,
    })
}

/// A client's transport: TLS with `--tls`, else plaintext to loopback addresses only.
fn client_transport(tls: Option<&std::path::Path>) -> Result<Transport> {
    Ok(Transport::from_flags(tls, None, tls.is_none())?)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let rt = match args.command {
        Cmd::Run(_) => panel_coordinator::service::runtime::replica_runtime()
            .context("cannot start the async runtime")?,
        _ => runtime()?,
    };
    let tls = args.tls;
    rt.block_on(async move {
        if let Cmd::Run(a) = args.command {
            return run_replica(*a, tls).await;
        }
        let t = client_transport(tls.as_deref())?;
        match args.command {
            Cmd::Run(_) => unreachable!("handled above"),
            Cmd::MotionKeygen { file } => {
                let key = panel_coordinator::service::motion_key::generate(&file)?;
                print(&json!({
                    "motion_key": file.display().to_string(),
                    "public_key": hex::encode(key.verifying_key().to_bytes()),
                    "node_config": format!(
                        "coordinator_keys = [\"{}\"]",
                        hex::encode(key.verifying_key().to_bytes())
                    ),
                }))
            }
            Cmd::Init { addr, members } => {
                let members = members
                    .iter()
                    .map(|m| parse_member(m))
                    .collect::<Result<Vec<_>>>()?;
                let mut admin = panel_coordinator::pb::coordinator::admin_client::AdminClient::new(
                    client::channel(&t, &addr)?,
                );
                let r = admin.init(pb::InitRequest { members }).await?.into_inner();
                print(&serde_json::from_str(&r.detail_json)?)
            }
            Cmd::AddLearner {
                addr,
                id,
                member_addr,
            } => {
                let mut admin = client::admin_on_leader(&t, &addr).await?;
                let r = admin
                    .add_learner(pb::AddLearnerRequest {
                        member: Some(pb::Member {
                            id,
                            addr: member_addr,
                        }),
                    })
                    .await?
                    .into_inner();
                print(&serde_json::from_str(&r.detail_json)?)
            }
            Cmd::ChangeMembership {
                addr,
                voters,
                retain,
            } => {
                let mut admin = client::admin_on_leader(&t, &addr).await?;
                let r = admin
                    .change_membership(pb::ChangeMembershipRequest { voters, retain })
                    .await?
                    .into_inner();
                print(&serde_json::from_str(&r.detail_json)?)
            }
            Cmd::Status { addr } => print(&status_json(&client::status(&t, &addr).await?)),
            Cmd::Write {
                addr,
                client_id,
                request_id,
                command,
                patience_secs,
            } => {
                let command: Command = serde_json::from_str(&command).with_context(|| {
                    "--command is not a Command; example: '{\"Note\":{\"topic\":\"t\",\"text\":\"x\"}}'"
                })?;
                let mut clients = addr
                    .iter()
                    .map(|a| client::coordinator(&t, a))
                    .collect::<Result<Vec<_>, _>>()?;
                let r = client::write_with_retry(
                    &mut clients,
                    &client_id,
                    request_id,
                    &command,
                    Duration::from_secs(patience_secs),
                )
                .await?;
                print(&write_json(&r))
            }
            Cmd::Load {
                addr,
                client_id,
                topic,
                count,
                patience_secs,
            } => {
                let mut clients = addr
                    .iter()
                    .map(|a| client::coordinator(&t, a))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut duplicates = 0u64;
                for i in 1..=count {
                    let command = TestCommand::Note {
                        topic: topic.clone(),
                        text: format!("{client_id}-{i}"),
                    };
                    let r = client::write_with_retry(
                        &mut clients,
                        &client_id,
                        i,
                        &command,
                        Duration::from_secs(patience_secs),
                    )
                    .await?;
                    if !r.applied {
                        bail!("note {i} was refused: {}", r.result_json);
                    }
                    duplicates += u64::from(r.duplicate);
                }
                print(&json!({ "written": count, "acknowledged_as_duplicate": duplicates }))
            }
            Cmd::Read {
                addr,
                query,
                linearizable: _,
                local,
            } => {
                let q: Query = serde_json::from_str(&query).with_context(|| {
                    "--query is not a Query; examples: '{\"Notes\":{\"topic\":\"t\"}}', '\"Stats\"'"
                })?;
                let r = client::read(&t, &addr, &q, !local).await?;
                print(&json!({
                    "result": serde_json::from_str::<Value>(&r.result_json)?,
                    "applied_index": r.applied_index,
                    "linearizable": r.linearizable,
                }))
            }
            Cmd::Backup { addr, out, local } => backup(&t, &addr, &out, local).await,
            Cmd::Bench(b) => {
                // The component bench opens raw motions through test commands, which only
                // a build with that feature accepts: say so before starting anything.
                if !panel_coordinator::TEST_COMMANDS_BUILT {
                    anyhow::bail!(
                        "`panel coordinator bench` drives replicas through test commands, which this build leaves out; build it with `cargo build --release -p panel-cli --features panel-coordinator/test-commands` and run target/release/panel coordinator bench"
                    );
                }
                let opts = BenchOptions {
                    secs: b.secs,
                    clients: b.clients,
                    paced_rate: b.paced_rate,
                    paced_secs: b.paced_secs,
                    dir: b.dir,
                    panel_bin: std::env::current_exe()?,
                    tls: !b.insecure_loopback,
                    signed_motions: b.signed_motions,
                    witnesses: b.witnesses,
                    checkpoint_every_entries: b.checkpoint_every_entries,
                    checkpoint_every_ms: b.checkpoint_every_ms,
                    snapshot_logs: b.snapshot_logs,
                    keep_logs: b.keep_logs,
                };
                let rendered = match b.soak_secs {
                    Some(secs) => bench::soak::run(
                        opts,
                        bench::soak::SoakOptions {
                            secs,
                            rate: b.soak_rate,
                            sample_secs: b.soak_window_secs,
                            max_rss_mib: b.soak_max_rss_mib,
                        },
                    )
                    .await?
                    .render(),
                    None => bench::run(opts).await?.render(),
                };
                println!("{rendered}");
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

/// Streams a backup from `addr` into `out`: refuses an existing `out`, checks the bytes
/// (format, length, digest) before keeping them, and writes a temporary file that is
/// fsynced and renamed, so `out` is either a whole backup or absent.
async fn backup(t: &Transport, addr: &str, out: &std::path::Path, local: bool) -> Result<ExitCode> {
    use std::io::Write;
    if out.exists() {
        bail!(
            "--out {} exists; a backup never overwrites a file: choose a new name",
            out.display()
        );
    }
    let started = std::time::Instant::now();
    let mut admin = pb::admin_client::AdminClient::new(client::channel(t, addr)?)
        .max_decoding_message_size(64 * 1024 * 1024);
    let mut stream = admin
        .backup(pb::BackupRequest { local })
        .await
        .with_context(|| format!("replica {addr} refused the backup"))?
        .into_inner();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream
        .message()
        .await
        .with_context(|| format!("the backup stream from {addr} broke off; nothing was written"))?
    {
        bytes.extend_from_slice(&chunk.data);
    }
    let (header, _) = panel_coordinator::backup::decode(&bytes)
        .with_context(|| format!("replica {addr} sent a damaged backup; nothing was written"))?;
    let tmp = out.with_extension("partial");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create_new(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, out)
    };
    write().with_context(|| format!("writing {} (through {})", out.display(), tmp.display()))?;
    print(&json!({
        "out": out.display().to_string(),
        "bytes": bytes.len(),
        "source_replica": header.source_replica,
        "last_log_index": header.last_log_id.index,
        "last_log_term": header.last_log_id.leader_id.term,
        "linearizable": header.linearizable,
        "record_entries": header.record_entries,
        "checkpoints": header.checkpoints,
        "millis": started.elapsed().as_millis() as u64,
    }))
}

/// The config file's keys (or none), overridden by every flag given.
fn replica_config(
    a: &RunArgs,
    tls: Option<PathBuf>,
) -> Result<panel_coordinator::config::ReplicaConfig> {
    let mut c = match &a.config {
        Some(path) => panel_coordinator::config::ReplicaConfig::load(path)?,
        None => Default::default(),
    };
    fn set<T: Clone>(slot: &mut Option<T>, flag: &Option<T>) {
        if flag.is_some() {
            slot.clone_from(flag);
        }
    }
    set(&mut c.id, &a.id);
    set(&mut c.listen, &a.listen);
    set(&mut c.data_dir, &a.data_dir);
    set(&mut c.admin_listen, &a.admin_listen);
    set(&mut c.metrics_addr, &a.metrics_addr);
    set(&mut c.tls.dir, &tls);
    set(&mut c.tls.charter, &a.charter);
    set(&mut c.keys.motion_key, &a.motion_key);
    set(&mut c.keys.next_motion_key, &a.next_motion_key);
    set(&mut c.keys.log_key, &a.log_key);
    set(&mut c.raft.heartbeat_ms, &a.heartbeat_ms);
    set(&mut c.raft.election_min_ms, &a.election_min_ms);
    set(&mut c.raft.election_max_ms, &a.election_max_ms);
    set(&mut c.raft.snapshot_logs, &a.snapshot_logs);
    set(&mut c.raft.keep_logs, &a.keep_logs);
    set(&mut c.batching.batch_max, &a.batch_max);
    set(&mut c.batching.batch_max_bytes, &a.batch_max_bytes);
    set(&mut c.batching.max_command_bytes, &a.max_command_bytes);
    set(&mut c.batching.linger_us, &a.linger_us);
    set(&mut c.windows.commit_ms, &a.commit_window_ms);
    set(&mut c.windows.reveal_ms, &a.reveal_window_ms);
    set(&mut c.windows.exam_ms, &a.exam_window_ms);
    set(&mut c.windows.exam_concurrency, &a.exam_concurrency);
    for pair in &a.commit_windows {
        let (kind, ms) = pair.split_once('=').unwrap_or((pair.as_str(), ""));
        c.windows
            .commit_by_kind
            .get_or_insert_with(Default::default)
            .insert(kind.trim().to_owned(), ms.trim().to_owned());
    }
    set(
        &mut c.checkpoints.every_entries,
        &a.checkpoint_every_entries,
    );
    set(&mut c.checkpoints.every_ms, &a.checkpoint_every_ms);
    if !a.witnesses.is_empty() {
        c.checkpoints.witnesses = Some(a.witnesses.clone());
    }
    for (slot, flag) in [
        (&mut c.simulation, a.simulation),
        (&mut c.test_commands, a.test_commands),
        (&mut c.tls.insecure_loopback, a.insecure_loopback),
    ] {
        if flag {
            *slot = Some(true);
        }
    }
    a.limits.overlay(&mut c.limits);
    Ok(c)
}

async fn run_replica(a: RunArgs, tls: Option<PathBuf>) -> Result<ExitCode> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn")),
        )
        .with_ansi(false)
        .try_init();
    let mut opts = replica_config(&a, tls)?.resolve()?;
    opts.restore = a
        .restore
        .map(|file| panel_coordinator::service::serve::Restore {
            file,
            member_addr: a.member_addr,
        });
    crate::output::note!(
        "coordinator replica {} listening on {}",
        opts.id,
        opts.listen
    );
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    serve(opts, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
