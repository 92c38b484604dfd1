//! One nemesis run: writers, a linearizable reader and a status sampler against the
//! cluster while a seeded schedule of faults plays; then heal, converge, read the final log
//! and the exported record, and check everything.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

use crate::cluster::{self, Cluster, ClusterError};
use crate::history::{self, Applied, Outcome, StatusSample, Summary, Violation, WriteOp};
use crate::schedule::{Fault, Schedule, Step};

/// The topic every workload note goes to.
pub const TOPIC: &str = "nemesis";

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub replicas: usize,
    /// Length of the fault phase.
    pub fault_secs: u64,
    pub writers: usize,
    /// Explicit deadline of one write (all its attempts); past it the write is unknown.
    pub op_deadline: Duration,
    /// Deadline of one attempt on one replica.
    pub attempt_timeout: Duration,
    /// CI mode: every kind of fault at least once, in seeded order.
    pub cover_all: bool,
    /// What happens to the cluster while the workload runs.
    pub scenario: Scenario,
}

/// What the run does to the cluster while the workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The seeded fault schedule (`schedule.rs`).
    Faults,
    /// The federation across hosts (`federation.rs`): witnesses and nodes of three
    /// organisations on hosts of their own, one joining by entry, a partition and a
    /// rolling restart.
    Federation,
}

impl Config {
    /// From the environment: `NEMESIS_SEED` (random when unset), `NEMESIS_SECS` (the long
    /// mode when set; CI default 90), `NEMESIS_REPLICAS` (3, or 5 in the long mode),
    /// `NEMESIS_WRITERS` (3).
    pub fn from_env() -> Self {
        let num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        let long = num("NEMESIS_SECS");
        let seed = num("NEMESIS_SEED").unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                ^ u64::from(std::process::id())
        });
        Self {
            seed,
            replicas: num("NEMESIS_REPLICAS").unwrap_or(if long.is_some() { 5 } else { 3 })
                as usize,
            fault_secs: long.unwrap_or(90),
            writers: num("NEMESIS_WRITERS").unwrap_or(3) as usize,
            op_deadline: Duration::from_millis(3000),
            attempt_timeout: Duration::from_millis(1000),
            cover_all: true,
            scenario: Scenario::Faults,
        }
    }
}

/// What the run found.
#[derive(Debug)]
pub struct Report {
    pub config: Config,
    pub summary: Summary,
    pub steps: Vec<String>,
    pub probes: Vec<String>,
    pub reads: (u64, u64),
    /// Motions opened (attempted) and acknowledged as decided.
    pub motions: (usize, usize),
    pub violations: Vec<Violation>,
    pub elapsed: Duration,
}

impl Report {
    pub fn print(&self) {
        let (what, step) = match self.config.scenario {
            Scenario::Faults => (format!("{} s of faults", self.config.fault_secs), "fault"),
            Scenario::Federation => ("the federation across hosts".to_owned(), "step"),
        };
        println!(
            "nemesis: seed {} ({} replicas, {what}, {} writers) finished in {:.1} s",
            self.config.seed,
            self.config.replicas,
            self.config.writers,
            self.elapsed.as_secs_f64()
        );
        for s in &self.steps {
            println!("  {step} {s}");
        }
        for p in &self.probes {
            println!("  probe {p}");
        }
        let s = &self.summary;
        println!(
            "  writes: {} invoked, {} ok, {} failed, {} unknown ({} of them applied); {} notes applied",
            s.invoked, s.ok, s.failed, s.unknown, s.unknown_applied, s.applied
        );
        println!(
            "  linearizable reads: {} ok, {} failed; status samples: {} over {} terms",
            self.reads.0, self.reads.1, s.samples, s.terms
        );
        println!(
            "  motions: {} opened, {} acknowledged decided and found accepted; record verified unless a violation says otherwise",
            self.motions.0, self.motions.1
        );
        for v in &self.violations {
            println!("  VIOLATION: {v}");
        }
        println!(
            "  replay: NEMESIS_SEED={} NEMESIS_SECS={} NEMESIS_REPLICAS={} cargo test -p panel-nemesis --test nemesis -- --nocapture",
            self.config.seed, self.config.fault_secs, self.config.replicas
        );
    }
}

/// Shared by the workload tasks.
pub(crate) struct Shared {
    start: Instant,
    pub(crate) stop: AtomicBool,
    writes: Mutex<Vec<WriteOp>>,
    /// Text -> invocation time, for every write invoked so far.
    invoked: Mutex<HashMap<String, u64>>,
    /// Text -> acknowledgement time, for every acknowledged write.
    acked: Mutex<HashMap<String, u64>>,
    samples: Mutex<Vec<StatusSample>>,
    pub(crate) violations: Mutex<Vec<Violation>>,
    reads: Mutex<(u64, u64)>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
}

/// Whether a refused attempt certainly proposed nothing (so, alone, it cannot have been
/// applied). Anything else after sending may have reached the log.
fn nothing_proposed(s: &tonic::Status) -> bool {
    let m = s.message();
    m.contains("nothing was proposed") || m.contains("no leader is elected yet")
}

/// One note with retries until acknowledged or `deadline`, recorded in the history.
#[allow(clippy::too_many_arguments)]
async fn write_op(
    shared: &Shared,
    clients: &mut [(u64, CoordinatorClient<Channel>)],
    client_id: &str,
    request_id: u64,
    text: String,
    deadline: Duration,
    attempt_timeout: Duration,
    first: usize,
    max_attempts: u32,
) -> WriteOp {
    let command = json!({ "Note": { "topic": TOPIC, "text": text } }).to_string();
    let invoke_us = shared.now_us();
    lock(&shared.invoked).insert(text.clone(), invoke_us);
    let op = send(
        shared,
        clients,
        client_id,
        request_id,
        text,
        &command,
        deadline,
        attempt_timeout,
        first,
        max_attempts,
    )
    .await;
    if matches!(op.outcome, Outcome::Ok { .. }) {
        lock(&shared.acked).insert(op.text.clone(), op.complete_us);
    }
    lock(&shared.writes).push(op.clone());
    op
}

/// One command with retries across `clients` (same ids every time, so it applies at most
/// once) until acknowledged, `deadline`, or `max_attempts` attempts (0: no limit); `key`
/// names it in the history.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn send(
    shared: &Shared,
    clients: &mut [(u64, CoordinatorClient<Channel>)],
    client_id: &str,
    request_id: u64,
    key: String,
    command: &str,
    deadline: Duration,
    attempt_timeout: Duration,
    first: usize,
    max_attempts: u32,
) -> WriteOp {
    let invoke_us = shared.now_us();
    let until = Instant::now() + deadline;
    let (mut ambiguous, mut definite) = (None::<String>, None::<String>);
    let mut attempts = 0u32;
    let mut i = first;
    let outcome = loop {
        let now = Instant::now();
        if now >= until || (max_attempts > 0 && attempts >= max_attempts) {
            break match (ambiguous, definite) {
                (Some(a), _) => Outcome::Unknown(a),
                (None, Some(d)) => Outcome::Failed(d),
                (None, None) => Outcome::Unknown("no attempt finished".into()),
            };
        }
        attempts += 1;
        let t = attempt_timeout.min(until - now);
        let (id, c) = &mut clients[i % clients.len()];
        let mut req = tonic::Request::new(pb::WriteRequest {
            client_id: client_id.into(),
            request_id,
            command_json: command.to_owned(),
            ..Default::default()
        });
        req.set_timeout(t);
        match tokio::time::timeout(t, c.write(req)).await {
            Ok(Ok(r)) => {
                let r = r.into_inner();
                if r.applied {
                    break Outcome::Ok {
                        log_index: r.log_index,
                    };
                }
                break Outcome::Failed(format!("refused in apply: {}", r.result_json));
            }
            Ok(Err(s)) if nothing_proposed(&s) => {
                definite = Some(format!("replica {id}: {}", s.message()));
            }
            Ok(Err(s)) => ambiguous = Some(format!("replica {id}: {:?} {}", s.code(), s.message())),
            Err(_) => ambiguous = Some(format!("replica {id}: attempt timed out")),
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    WriteOp {
        text: key,
        invoke_us,
        complete_us: shared.now_us(),
        outcome,
        attempts,
    }
}

async fn writer(
    shared: Arc<Shared>,
    w: usize,
    mut clients: Vec<(u64, CoordinatorClient<Channel>)>,
    cfg: Config,
) {
    let client_id = format!("nemesis-w{w}");
    let mut seq = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        seq += 1;
        let first = (seq as usize + w) % clients.len();
        write_op(
            &shared,
            &mut clients,
            &client_id,
            seq,
            format!("w{w}-{seq}"),
            cfg.op_deadline,
            cfg.attempt_timeout,
            first,
            0,
        )
        .await;
    }
}

/// Notes of a `Read` reply.
fn notes_of(r: &pb::ReadReply) -> Result<Vec<Applied>, String> {
    let v: Value = serde_json::from_str(&r.result_json).map_err(|e| e.to_string())?;
    let list = v["notes"].as_array().ok_or("no notes in the reply")?;
    Ok(list
        .iter()
        .map(|n| Applied {
            text: n["text"].as_str().unwrap_or_default().to_owned(),
            log_index: n["log_index"].as_u64().unwrap_or(0),
        })
        .collect())
}

pub(crate) async fn read(
    c: &mut CoordinatorClient<Channel>,
    query: &str,
    consistency: pb::ReadConsistency,
    timeout: Duration,
) -> Result<pb::ReadReply, tonic::Status> {
    let mut req = tonic::Request::new(pb::ReadRequest {
        query_json: query.into(),
        consistency: consistency as i32,
        ..Default::default()
    });
    req.set_timeout(timeout);
    match tokio::time::timeout(timeout, c.read(req)).await {
        Ok(r) => r.map(tonic::Response::into_inner),
        Err(_) => Err(tonic::Status::deadline_exceeded("read timed out")),
    }
}

fn notes_query() -> String {
    json!({ "Notes": { "topic": TOPIC } }).to_string()
}

/// Linearizable reads from rotating replicas: each must contain every write acknowledged
/// before it was invoked, and nothing not yet invoked when it completed.
async fn reader(shared: Arc<Shared>, mut clients: Vec<(u64, CoordinatorClient<Channel>)>) {
    let q = notes_query();
    let mut i = 0usize;
    while !shared.stop.load(Ordering::Relaxed) {
        i += 1;
        let n = clients.len();
        let (_, c) = &mut clients[i % n];
        let invoked_us = shared.now_us();
        let r = read(
            c,
            &q,
            pb::ReadConsistency::Linearizable,
            Duration::from_secs(2),
        )
        .await;
        match r {
            Ok(r) => {
                lock(&shared.reads).0 += 1;
                let mut found = Vec::new();
                if !r.linearizable {
                    found.push(Violation::Other(
                        "a default read answered as not linearizable".into(),
                    ));
                }
                match notes_of(&r) {
                    Ok(notes) => {
                        let seen: HashSet<&str> = notes.iter().map(|a| a.text.as_str()).collect();
                        for (text, &acked_us) in lock(&shared.acked).iter() {
                            if acked_us < invoked_us && !seen.contains(text.as_str()) {
                                found.push(Violation::StaleRead {
                                    text: text.clone(),
                                    acked_us,
                                    invoked_us,
                                });
                            }
                        }
                        let invoked = lock(&shared.invoked);
                        for t in &seen {
                            if !invoked.contains_key(*t) {
                                found.push(Violation::ReadFromFuture {
                                    text: (*t).to_owned(),
                                });
                            }
                        }
                    }
                    Err(e) => found.push(Violation::Other(format!("unreadable notes: {e}"))),
                }
                lock(&shared.violations).extend(found);
            }
            Err(_) => lock(&shared.reads).1 += 1,
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Status of every replica every 100 ms, for the two-leaders check.
async fn sampler(shared: Arc<Shared>, mut clients: Vec<(u64, CoordinatorClient<Channel>)>) {
    while !shared.stop.load(Ordering::Relaxed) {
        for (id, c) in clients.iter_mut() {
            if let Ok(s) = cluster::status(c, Duration::from_millis(250)).await {
                lock(&shared.samples).push(StatusSample {
                    t_us: shared.now_us(),
                    replica: *id,
                    term: s.term,
                    role: s.role,
                    leader: s.has_leader.then_some(s.leader_id),
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The replica the latest samples agree leads (the self-declared leader of the highest
/// term seen in the last second), if any.
pub(crate) fn current_leader(shared: &Shared) -> Option<u64> {
    let now = shared.now_us();
    let samples = lock(&shared.samples);
    samples
        .iter()
        .rev()
        .take_while(|s| now.saturating_sub(s.t_us) < 1_000_000)
        .filter(|s| s.role == "Leader")
        .max_by_key(|s| (s.term, s.t_us))
        .map(|s| s.replica)
}

async fn wait_leader(shared: &Shared, running: &[u64], within: Duration) -> Option<u64> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(l) = current_leader(shared).filter(|l| running.contains(l)) {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Item 7's promises, probed on an isolated leader after its lease has run out: a write
/// fails fast (well before its own 10 s deadline) with a "no quorum" refusal, a default
/// read fails rather than answering stale, and a local read still answers, marked not
/// linearizable. The probe write is part of the history like any other.
async fn probe_isolated(
    shared: &Shared,
    cluster: &Cluster,
    id: u64,
    probes: &mut Vec<String>,
) -> Result<(), ClusterError> {
    let mut c = vec![(id, cluster.coordinator(id)?)];
    let t = Instant::now();
    let op = write_op(
        shared,
        &mut c,
        "nemesis-probe",
        shared.now_us(),
        format!("probe-{}", shared.now_us()),
        Duration::from_secs(10),
        Duration::from_secs(10),
        0,
        1,
    )
    .await;
    let took = t.elapsed();
    let fast = took < Duration::from_millis(3000) && !matches!(op.outcome, Outcome::Ok { .. });
    probes.push(format!(
        "write to isolated leader {id}: {:?} after {} ms ({})",
        op.outcome,
        took.as_millis(),
        if fast { "fast" } else { "SLOW" }
    ));
    if !fast {
        lock(&shared.violations).push(Violation::Other(format!(
            "a write to isolated leader {id} was not refused fast: {:?} after {} ms",
            op.outcome,
            took.as_millis()
        )));
    }
    let (_, cl) = &mut c[0];
    let t = Instant::now();
    let r = read(
        cl,
        &notes_query(),
        pb::ReadConsistency::Linearizable,
        Duration::from_secs(10),
    )
    .await;
    let took = t.elapsed();
    probes.push(format!(
        "linearizable read on isolated leader {id}: {} after {} ms",
        match &r {
            Ok(_) => "ANSWERED".to_owned(),
            Err(s) => format!("{:?}", s.code()),
        },
        took.as_millis()
    ));
    if r.is_ok() || took > Duration::from_millis(3000) {
        lock(&shared.violations).push(Violation::Other(format!(
            "isolated leader {id} answered a linearizable read or took {} ms to refuse it",
            took.as_millis()
        )));
    }
    let r = read(
        cl,
        &notes_query(),
        pb::ReadConsistency::Local,
        Duration::from_secs(3),
    )
    .await;
    probes.push(format!(
        "local read on isolated leader {id}: {}",
        match &r {
            Ok(r) => format!("answered, linearizable={}", r.linearizable),
            Err(s) => format!("{:?}", s.code()),
        }
    ));
    if !matches!(&r, Ok(r) if !r.linearizable) {
        lock(&shared.violations).push(Violation::Other(format!(
            "a local read on isolated leader {id} did not answer as a local read"
        )));
    }
    Ok(())
}

async fn play(
    shared: &Shared,
    cluster: &mut Cluster,
    step: &Step,
    probes: &mut Vec<String>,
) -> Result<String, ClusterError> {
    let n = cluster.n() as u64;
    let running: Vec<u64> = (1..=n).filter(|&i| cluster.is_running(i)).collect();
    let leader = wait_leader(shared, &running, Duration::from_secs(10)).await;
    let follower = |avoid: Option<u64>| {
        let others: Vec<u64> = running
            .iter()
            .copied()
            .filter(|&i| Some(i) != avoid)
            .collect();
        others[(step.pick as usize) % others.len().max(1)]
    };
    let target = match step.fault {
        Fault::KillLeader
        | Fault::PauseLeader
        | Fault::PartitionLeader
        | Fault::ClockJumpLeader => leader.unwrap_or_else(|| follower(None)),
        Fault::KillFollower | Fault::PartitionFollower => follower(leader),
        Fault::KillAny => follower(None),
    };
    let hold = Duration::from_millis(step.hold_ms);
    match step.fault {
        Fault::KillLeader | Fault::KillFollower | Fault::KillAny => {
            cluster.kill9(target);
            tokio::time::sleep(hold).await;
            cluster.start_replica(target);
        }
        Fault::PauseLeader => {
            cluster.pause(target);
            tokio::time::sleep(hold).await;
            cluster.resume(target);
        }
        Fault::PartitionLeader => {
            cluster.net.isolate(target)?;
            let lease = Duration::from_millis(cluster::ELECTION_MAX_MS + 4 * cluster::HEARTBEAT_MS);
            tokio::time::sleep(lease).await;
            if leader == Some(target) {
                probe_isolated(shared, cluster, target, probes).await?;
            }
            tokio::time::sleep(hold.saturating_sub(lease)).await;
            cluster.net.heal(target)?;
        }
        Fault::PartitionFollower => {
            cluster.net.isolate(target)?;
            tokio::time::sleep(hold).await;
            cluster.net.heal(target)?;
        }
        Fault::ClockJumpLeader => {
            const JUMP_MS: i64 = 25 * 3600 * 1000;
            set_clock_offset(cluster, target, JUMP_MS);
            tokio::time::sleep(hold / 2).await;
            retry_acked(
                shared,
                cluster,
                probes,
                "after the leader's clock jumped 25 h forward",
            )
            .await?;
            set_clock_offset(cluster, target, 0);
            tokio::time::sleep(hold / 2).await;
            retry_acked(
                shared,
                cluster,
                probes,
                "after the leader's clock jumped back",
            )
            .await?;
        }
    }
    Ok(format!(
        "t={:.1}s {:?} of replica {target} (leader was {leader:?}) for {} ms",
        shared.now_us() as f64 / 1e6,
        step.fault,
        step.hold_ms
    ))
}

/// Writes replica `id`'s test clock offset (read by the replica every 100 ms).
fn set_clock_offset(cluster: &Cluster, id: u64, ms: i64) {
    let path = cluster
        .root
        .join(format!("r{id}"))
        .join("test-clock-offset-ms");
    if let Err(e) = std::fs::write(&path, ms.to_string()) {
        println!("nemesis: cannot write {}: {e}", path.display());
    }
}

/// Sends the oldest acknowledged write again with its own ids, as a client whose
/// acknowledgement was lost would: it must come back as a duplicate at its original log
/// index, never be applied a second time.
async fn retry_acked(
    shared: &Shared,
    cluster: &Cluster,
    probes: &mut Vec<String>,
    when: &str,
) -> Result<(), ClusterError> {
    let oldest = lock(&shared.writes)
        .iter()
        .filter_map(|w| match w.outcome {
            Outcome::Ok { log_index } => Some((w.text.clone(), log_index)),
            _ => None,
        })
        .min_by_key(|(_, i)| *i);
    let Some((text, index)) = oldest else {
        return Ok(());
    };
    // "w<writer>-<seq>" was written by client "nemesis-w<writer>" with request id <seq>.
    let Some((w, seq)) = text
        .strip_prefix('w')
        .and_then(|r| r.split_once('-'))
        .and_then(|(w, q)| Some((w.to_owned(), q.parse::<u64>().ok()?)))
    else {
        return Ok(());
    };
    let mut clients: Vec<_> = (1..=cluster.n() as u64)
        .map(|i| Ok((i, cluster.coordinator(i)?)))
        .collect::<Result<_, ClusterError>>()?;
    let command = json!({ "Note": { "topic": TOPIC, "text": text } }).to_string();
    let op = send(
        shared,
        &mut clients,
        &format!("nemesis-w{w}"),
        seq,
        text.clone(),
        &command,
        Duration::from_secs(5),
        Duration::from_secs(1),
        0,
        0,
    )
    .await;
    probes.push(format!(
        "retry of acknowledged {text:?} (log index {index}) {when}: {:?}",
        op.outcome
    ));
    if let Outcome::Ok { log_index } = op.outcome
        && log_index != index
    {
        lock(&shared.violations).push(Violation::Other(format!(
            "the retry of acknowledged write {text:?} {when} was applied again at log index {log_index} (first at {index}): deduplication lost it"
        )));
    }
    Ok(())
}

/// Runs one nemesis over a fresh cluster under `root`.
pub async fn run(cfg: Config, root: &std::path::Path) -> Result<Report, ClusterError> {
    let started = Instant::now();
    let schedule = match cfg.scenario {
        Scenario::Faults => Schedule::generate(
            cfg.seed,
            Duration::from_secs(cfg.fault_secs),
            cfg.cover_all,
            cluster::ELECTION_MAX_MS,
        ),
        Scenario::Federation => Schedule { steps: Vec::new() },
    };
    println!(
        "nemesis: seed {} (replay with NEMESIS_SEED={}), {} replicas, {:?}, schedule:",
        cfg.seed, cfg.seed, cfg.replicas, cfg.scenario
    );
    for s in &schedule.steps {
        println!("  {s:?}");
    }
    let n = cfg.replicas;
    let layout = match cfg.scenario {
        Scenario::Faults => cluster::Layout {
            replicas: n,
            hosts: n,
            extra_args: |_| Vec::new(),
        },
        Scenario::Federation => crate::federation::layout(),
    };
    let mut cluster = tokio::task::block_in_place(|| Cluster::start_layout(root, &layout))
        .map_err(|e| {
            println!("nemesis: cluster setup failed: {e}");
            e
        })?;
    let n = cluster.n();
    println!(
        "nemesis: namespaces {} up, run folder {}",
        cluster.net.tag(),
        root.display()
    );
    let shared = Arc::new(Shared {
        start: Instant::now(),
        stop: AtomicBool::new(false),
        writes: Mutex::default(),
        invoked: Mutex::default(),
        acked: Mutex::default(),
        samples: Mutex::default(),
        violations: Mutex::default(),
        reads: Mutex::default(),
    });
    let clients = |c: &Cluster| -> Result<Vec<(u64, CoordinatorClient<Channel>)>, ClusterError> {
        (1..=c.n() as u64)
            .map(|i| Ok((i, c.coordinator(i)?)))
            .collect()
    };
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(sampler(shared.clone(), clients(&cluster)?)));
    // Writes start once the group is chartered and leads (the first write waits for it).
    let all: Vec<u64> = (1..=n as u64).collect();
    if wait_leader(&shared, &all, Duration::from_secs(30))
        .await
        .is_none()
    {
        return Err(ClusterError::Setup {
            what: "no leader elected within 30 s".into(),
            detail: cluster.log_tail(1),
        });
    }
    // Raw motions with the workload's own five arbiters, under the fault schedule only: the
    // federation admits arbiters of its own, whom such a motion's draw would seat.
    let motion_task = if cfg.scenario == Scenario::Faults {
        let mut setup_clients = clients(&cluster)?;
        crate::motions::setup(&shared, &cluster, &mut setup_clients).await?;
        let motion_key = panel_transport::pki::read_seed_key(&cluster.pki.motion_key_path())?;
        Some(tokio::spawn(crate::motions::client(
            shared.clone(),
            clients(&cluster)?,
            motion_key,
            cfg.seed,
            cfg.op_deadline,
            cfg.attempt_timeout,
        )))
    } else {
        None
    };
    for w in 0..cfg.writers {
        tasks.push(tokio::spawn(writer(
            shared.clone(),
            w,
            clients(&cluster)?,
            cfg.clone(),
        )));
    }
    tasks.push(tokio::spawn(reader(shared.clone(), clients(&cluster)?)));

    let mut steps = Vec::new();
    let mut probes = Vec::new();
    for step in &schedule.steps {
        let line = play(&shared, &mut cluster, step, &mut probes).await?;
        println!("nemesis: {line}");
        steps.push(line);
        tokio::time::sleep(Duration::from_millis(step.rest_ms)).await;
    }
    // Witnesses and nodes stop after the checks, with the cluster.
    let _hosts = match cfg.scenario {
        Scenario::Faults => None,
        Scenario::Federation => {
            let (lines, hosts) = crate::federation::play(&shared, &mut cluster).await?;
            steps.extend(lines);
            Some(hosts)
        }
    };
    // Heal everything and let the writers see a healthy cluster again before they stop.
    tokio::task::block_in_place(|| cluster.heal_all())?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    shared.stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let motions = match motion_task {
        Some(t) => t.await.unwrap_or_default(),
        None => Vec::new(),
    };

    // Converge: every replica applied the same prefix, then read the final log.
    let final_log = converge(&cluster, &shared).await;
    let mut violations: Vec<Violation> = std::mem::take(&mut *lock(&shared.violations));
    let log = match final_log {
        Ok(log) => log,
        Err(e) => {
            violations.push(Violation::Other(e));
            Vec::new()
        }
    };
    let writes = lock(&shared.writes).clone();
    let samples = lock(&shared.samples).clone();
    let (summary, found) = history::check(&writes, &log, &samples);
    violations.extend(found);
    let all: Vec<u64> = (1..=n as u64).collect();
    let leader = wait_leader(&shared, &all, Duration::from_secs(5))
        .await
        .unwrap_or(1);
    let decided = match crate::motions::check(&shared, &cluster, leader, &motions).await {
        Ok(d) => d,
        Err(e) => {
            violations.push(Violation::Other(e));
            0
        }
    };
    violations.extend(std::mem::take(&mut *lock(&shared.violations)));
    if let Err(e) = verify_record(&cluster).await {
        violations.push(Violation::Other(e));
    }
    let reads = *lock(&shared.reads);
    let report = Report {
        config: cfg,
        summary,
        steps,
        probes,
        reads,
        motions: (motions.len(), decided),
        violations,
        elapsed: started.elapsed(),
    };
    if !report.violations.is_empty() {
        for id in 1..=n as u64 {
            println!("--- replica {id} log tail ---\n{}", cluster.log_tail(id));
        }
    }
    Ok(report)
}

/// Waits until every replica has applied the same notes (local reads agree with the
/// leader's linearizable read), up to 60 s, and returns the leader's.
async fn converge(cluster: &Cluster, shared: &Shared) -> Result<Vec<Applied>, String> {
    let q = notes_query();
    let until = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let all: Vec<u64> = (1..=cluster.n() as u64).collect();
        let Some(l) = wait_leader(shared, &all, Duration::from_secs(1))
            .await
            .or(Some(1))
        else {
            continue;
        };
        let Ok(mut c) = cluster.coordinator(l) else {
            continue;
        };
        let want = match read(
            &mut c,
            &q,
            pb::ReadConsistency::Linearizable,
            Duration::from_secs(3),
        )
        .await
        {
            Ok(r) => notes_of(&r)?,
            Err(e) => {
                last = format!("leader {l}: {}", e.message());
                continue;
            }
        };
        let mut agreed = true;
        for id in all {
            let Ok(mut c) = cluster.coordinator(id) else {
                agreed = false;
                continue;
            };
            match read(
                &mut c,
                &q,
                pb::ReadConsistency::Local,
                Duration::from_secs(3),
            )
            .await
            {
                Ok(r) => {
                    let got = notes_of(&r)?;
                    if got.len() != want.len() {
                        agreed = false;
                        last = format!(
                            "replica {id} has {} notes, leader {}",
                            got.len(),
                            want.len()
                        );
                    } else if got.iter().zip(&want).any(|(a, b)| a.text != b.text) {
                        return Err(format!(
                            "replica {id} applied the same number of notes as the leader in a different order"
                        ));
                    }
                }
                Err(e) => {
                    agreed = false;
                    last = format!("replica {id}: {}", e.message());
                }
            }
        }
        if agreed {
            return Ok(want);
        }
    }
    Err(format!("the replicas did not converge within 60 s: {last}"))
}

/// Exports the record from the leader and runs `panel verify` on it against the charter.
async fn verify_record(cluster: &Cluster) -> Result<(), String> {
    let mut last = String::new();
    for id in 1..=cluster.n() as u64 {
        let Ok(mut c) = cluster.coordinator(id) else {
            continue;
        };
        match read(
            &mut c,
            "\"Export\"",
            pb::ReadConsistency::Linearizable,
            Duration::from_secs(20),
        )
        .await
        {
            Ok(r) => {
                let path = cluster.root.join("record.json");
                std::fs::write(&path, &r.result_json).map_err(|e| e.to_string())?;
                let out = std::process::Command::new(panel_tests::panel_bin())
                    .arg("verify")
                    .arg(&path)
                    .arg("--charter")
                    .arg(cluster.pki.charter_path())
                    .output()
                    .map_err(|e| e.to_string())?;
                if out.status.success() {
                    return Ok(());
                }
                return Err(format!(
                    "panel verify refused the exported record ({}): {}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Err(e) => last = format!("replica {id}: {}", e.message()),
        }
    }
    Err(format!("no replica exported the record: {last}"))
}
