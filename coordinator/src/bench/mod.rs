//! `panel coordinator bench`, the component bench: start a local 3-replica cluster as
//! separate processes, drive accepted decisions through it by a shortcut (raw motions and
//! finished outcomes through test commands, no nodes, no commit-reveal round), and print
//! figures. Timings are printed, never asserted. `panel bench` times the real path.
//!
//! One decision = `OpenMotion` (5 seats) then `RecordOutcome` with 5 reveals: each a signed
//! ruling, its salt and the arbiter's signed commitment to H(ruling, salt), exactly what an
//! arbiter node returns. The leader's intake verifies both signatures of every reveal and
//! the opening, then logs the ruling, salt and digest; every replica re-verifies every
//! ruling signature with `verify_strict` in `apply`, re-checks the opening and runs the
//! acceptance rule. Rulings and commitments are signed before the timed phase (the
//! arbiters' work is not the coordinator's). The same run measures single-core
//! `verify_strict`.

pub mod soak;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

use crate::client::{self, ClientError};
use crate::local::{
    self, LocalCluster, LocalClusterError, ReplicaFlags, ReplicaLaunch, Security, Supervisor,
};
use panel_machine::command::ArbiterRegistration;
use panel_machine::rules::ruling::{self, Binding};
use panel_machine::{ClientCommand, Command, MotionSpec, OutcomeSubmission, TestCommand};
use panel_machine::{Decision, MotionKind, Stance};
use panel_proto::commit_reveal;
use panel_transport::{Transport, pki};

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub secs: u64,
    pub clients: usize,
    pub paced_rate: u64,
    pub paced_secs: u64,
    pub dir: Option<PathBuf>,
    /// The `panel` binary that runs the replicas.
    pub panel_bin: PathBuf,
    /// Mutual TLS on every hop (certificates issued under the bench folder), as
    /// production runs; off: the loopback plaintext debug mode, for comparison.
    pub tls: bool,
    /// Without TLS: still sign every motion and bind every ruling to it (envelope v2), to
    /// tell the cost of signed motions from the cost of the transport. Always on with TLS.
    pub signed_motions: bool,
    /// With TLS: run one witness per organisation (in this process) and have the replicas
    /// push every checkpoint to them, to measure the witnessed log's cost.
    pub witnesses: bool,
    /// The replicas' checkpoint cadence (`--checkpoint-every-entries`, `-ms`).
    pub checkpoint_every_entries: u64,
    pub checkpoint_every_ms: u64,
    /// The replicas' `--snapshot-logs` and `--keep-logs` (their defaults when `None`).
    pub snapshot_logs: Option<u64>,
    pub keep_logs: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("cannot start replica: {0}")]
    Spawn(#[from] std::io::Error),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("cluster setup failed: the state machine refused an arbiter's registration: {0}")]
    Registration(String),
    #[error("cluster setup failed: a blocking task did not finish: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Transport(#[from] panel_transport::TransportError),
    #[error(transparent)]
    Local(#[from] LocalClusterError),
}

#[derive(Debug, Clone, Default)]
pub struct Phase {
    pub decisions: usize,
    pub not_accepted: usize,
    pub secs: f64,
    /// Latency of the acceptance write (`RecordOutcome`), ms.
    pub accept_ms: Vec<f64>,
    /// Latency of the whole decision (open + record), ms.
    pub decision_ms: Vec<f64>,
    pub entries: u64,
    /// CPU seconds used by the three replica processes during the phase (Linux /proc).
    pub replica_cpu_secs: f64,
    /// CPU seconds used by the bench client itself during the phase.
    pub client_cpu_secs: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub verify_strict_per_sec: f64,
    pub clients: usize,
    pub full: Phase,
    pub paced_rate: u64,
    pub paced: Phase,
    /// Raft term when the timed phases began and when they ended: a difference means an
    /// election happened during the run (every write then waits for a new leader).
    pub terms: (u64, u64),
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

impl Report {
    pub fn render(&self) -> String {
        let mut full = self.full.clone();
        let mut paced = self.paced.clone();
        let items = |p: &Phase| 2.0 * p.decisions as f64 / p.entries.max(1) as f64;
        let cpu_ms = |secs: f64, p: &Phase| 1e3 * secs / p.decisions.max(1) as f64;
        format!(
            "coordinator bench: 3 replicas as processes on loopback, Raft log in redb with Durability::Immediate,\n\
             one decision = OpenMotion + RecordOutcome with 5 reveals (signed ruling + salt + signed commitment),\n\
             \x20 both signatures verified at the leader's intake, every ruling re-verified (verify_strict) in apply on every replica\n\
             verify_strict, one core:           {:>10.0} signatures/s\n\
             full load ({} writers, {:.1} s):     {:>10.0} accepted decisions/s ({} decisions, {} not accepted)\n\
             \x20 acceptance write p50 / p99:       {:>7.2} / {:.2} ms; whole decision p50 / p99 {:.2} / {:.2} ms\n\
             \x20 raft entries: {} ({:.1} commands per entry)\n\
             \x20 CPU per decision: {:.2} ms in the 3 replicas + {:.2} ms in the bench client\n\
             paced at {}/s ({:.1} s):             {:>10.0} accepted decisions/s ({} decisions, {} not accepted)\n\
             \x20 acceptance write p50 / p99:       {:>7.2} / {:.2} ms; whole decision p50 / p99 {:.2} / {:.2} ms\n\
             \x20 raft entries: {} ({:.1} commands per entry)\n\
             \x20 CPU per decision: {:.2} ms in the 3 replicas + {:.2} ms in the bench client\n\
             raft term {} at the start, {} at the end ({})",
            self.verify_strict_per_sec,
            self.clients,
            full.secs,
            full.decisions as f64 / full.secs,
            full.decisions,
            full.not_accepted,
            pct(&mut full.accept_ms, 0.5),
            pct(&mut full.accept_ms, 0.99),
            pct(&mut full.decision_ms, 0.5),
            pct(&mut full.decision_ms, 0.99),
            full.entries,
            items(&full),
            cpu_ms(full.replica_cpu_secs, &full),
            cpu_ms(full.client_cpu_secs, &full),
            self.paced_rate,
            paced.secs,
            paced.decisions as f64 / paced.secs,
            paced.decisions,
            paced.not_accepted,
            pct(&mut paced.accept_ms, 0.5),
            pct(&mut paced.accept_ms, 0.99),
            pct(&mut paced.decision_ms, 0.5),
            pct(&mut paced.decision_ms, 0.99),
            paced.entries,
            items(&paced),
            cpu_ms(paced.replica_cpu_secs, &paced),
            cpu_ms(paced.client_cpu_secs, &paced),
            self.terms.0,
            self.terms.1,
            if self.terms.0 == self.terms.1 {
                "no election during the run"
            } else {
                "ELECTIONS during the run: leader changes stall every write"
            },
        )
    }
}

/// What a chartered (TLS) bench cluster needs from the bench: the charter's motion key,
/// to sign each motion as the driver does, and the organisations' roster keys, to endorse
/// the bench's arbiters.
pub(crate) struct Federation {
    motion_key: SigningKey,
    rosters: Vec<(String, SigningKey)>,
}

impl Federation {
    fn load(issued: &pki::Issued) -> Result<Self, BenchError> {
        let rosters = pki::LOCAL_ORGANISATIONS
            .iter()
            .map(|o| {
                Ok((
                    (*o).to_owned(),
                    pki::read_seed_key(&issued.signing_key_path(o))?,
                ))
            })
            .collect::<Result<_, BenchError>>()?;
        Ok(Self {
            motion_key: pki::read_seed_key(&issued.motion_key_path())?,
            rosters,
        })
    }
}

/// Arbiter `i` of the bench: key from a fixed derivation, stance and organisation spread;
/// in a chartered cluster of the charter's organisations, attested as registrations must be.
pub(crate) fn arbiter(
    i: usize,
    federation: Option<&Federation>,
) -> (SigningKey, ArbiterRegistration) {
    let seed: [u8; 32] = Sha256::digest(format!("bench-arbiter-{i}").as_bytes()).into();
    let key = SigningKey::from_bytes(&seed);
    let stance = [Stance::A, Stance::A, Stance::B, Stance::B, Stance::None][i % 5];
    let mut reg = ArbiterRegistration {
        arbiter_id: format!("arb-{i}"),
        public_key: hex::encode(key.verifying_key().to_bytes()).into(),
        organisation: format!("org-{}", i % 3),
        model_family: format!("family-{i}"),
        stance,
        endpoint: String::new(),
        attestation: None,
        lineage: None,
    };
    if let Some(f) = federation.filter(|f| !f.rosters.is_empty()) {
        let (org, roster) = &f.rosters[i % f.rosters.len()];
        reg.organisation = org.clone();
        reg.attestation = panel_machine::features::charter_rules::attest(&reg, &key, roster).ok();
    }
    (key, reg)
}

/// Single-core strict verification rate: ed25519-dalek's `verify_strict` on the canonical
/// bytes of 256 distinct rulings under 256 distinct keys, called directly so that no
/// memo of verified signatures ([`panel_proto::VerifiedMemo`]) can flatter the figure.
fn verify_rate() -> f64 {
    let hash = [0xab; 32];
    let items: Vec<(
        ed25519_dalek::VerifyingKey,
        Vec<u8>,
        ed25519_dalek::Signature,
    )> = (0..256u32)
        .filter_map(|i| {
            let seed: [u8; 32] = Sha256::digest(i.to_be_bytes()).into();
            let key = SigningKey::from_bytes(&seed);
            let motion_id = format!("m{i}");
            let b = Binding {
                motion_id: &motion_id,
                debate_id: "bench",
                kind: MotionKind::Merge,
                state_hash: &hash,
            };
            let sr = ruling::sign(&key, &b, Decision::Yes, 0.7, None)
                .decode()
                .ok()?;
            let bytes = panel_proto::signing::ruling_canonical_bytes(sr.ruling.as_ref()?).ok()?;
            let sig = panel_proto::keys::parse_signature(&sr.signature).ok()?;
            Some((key.verifying_key(), bytes, sig))
        })
        .collect();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed() < Duration::from_secs(1) {
        for (k, bytes, sig) in &items {
            if k.verify_strict(bytes, sig).is_ok() {
                n += 1;
            }
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// How long the bench lets the replicas take to listen and to elect a leader.
const INIT_PATIENCE: Duration = Duration::from_secs(10);
const LEADER_PATIENCE: Duration = Duration::from_secs(10);

struct Cluster {
    /// The replica processes, stopped when the cluster is dropped.
    _processes: Supervisor,
    /// Their addresses, pids, and how the bench's clients dial them (an operator's
    /// identity under TLS).
    replicas: LocalCluster,
    /// The charter's keys, for a chartered (TLS) cluster.
    federation: Option<Arc<Federation>>,
}

/// utime + stime of a process in seconds, from /proc (0 where unavailable). Linux's
/// USER_HZ is 100 on every mainstream architecture.
fn cpu_secs(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".into(),
    };
    let Ok(stat) = std::fs::read_to_string(path) else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn cluster_cpu(c: &Cluster) -> f64 {
    c.replicas.pids().iter().map(|p| cpu_secs(Some(*p))).sum()
}

async fn start_cluster(opts: &BenchOptions, dir: &std::path::Path) -> Result<Cluster, BenchError> {
    let pki = if opts.tls {
        Some(pki::issue(&pki::local_plan(3, &[]), &dir.join("pki"))?)
    } else {
        None
    };
    let transport = match &pki {
        Some(p) => Transport::from_flags(
            Some(&p.dir(&pki::operator_dir_name(pki::LOCAL_ORGANISATIONS[0]))),
            None,
            false,
        )?,
        None => Transport::InsecureLoopback,
    };
    let federation = match &pki {
        Some(p) => Some(Arc::new(Federation::load(p)?)),
        // An unchartered cluster checks a motion's signature under the key it names.
        None if opts.signed_motions => Some(Arc::new(Federation {
            motion_key: SigningKey::from_bytes(&Sha256::digest(b"bench-motion-key").into()),
            rosters: Vec::new(),
        })),
        None => None,
    };
    let witness_urls = match (&pki, opts.witnesses) {
        (Some(p), true) => local::witnesses::serve_here(p, dir).await?,
        _ => Vec::new(),
    };
    let mut processes = Supervisor::new(&opts.panel_bin);
    let replicas = LocalCluster::spawn(
        &mut processes,
        local::loopback_addrs(3)?,
        transport,
        |id, addr| {
            let mut args = ReplicaFlags {
                id,
                listen: addr.to_owned(),
                data_dir: dir.join(format!("r{id}")),
                security: match &pki {
                    Some(p) => Security::issued(p, id),
                    None => Security::Loopback { motion_key: None },
                },
                // Raw motions and client outcomes: the bench measures the log and apply.
                test_commands: true,
            }
            .args();
            let mut flag = |name: &str, value: String| args.extend([name.into(), value.into()]);
            flag(
                "--checkpoint-every-entries",
                opts.checkpoint_every_entries.to_string(),
            );
            flag(
                "--checkpoint-every-ms",
                opts.checkpoint_every_ms.to_string(),
            );
            for url in &witness_urls {
                flag("--witness", url.clone());
            }
            if let Some(n) = opts.snapshot_logs {
                flag("--snapshot-logs", n.to_string());
            }
            if let Some(n) = opts.keep_logs {
                flag("--keep-logs", n.to_string());
            }
            Ok(ReplicaLaunch { args, log: None })
        },
    )?;
    replicas.init(INIT_PATIENCE).await?;
    Ok(Cluster {
        _processes: processes,
        replicas,
        federation,
    })
}

/// The two commands of decision `n`, rulings already signed. With a motion key the motion
/// is signed as the driver signs it and every ruling binds its digest (envelope v2), as a
/// chartered cluster requires.
pub(crate) fn decision(
    n: usize,
    keys: &[(SigningKey, ArbiterRegistration)],
    motion_key: Option<&SigningKey>,
) -> (Command, Command) {
    let motion_id = format!("bench-m{n}");
    let state_hash = hex::encode(Sha256::digest(motion_id.as_bytes()));
    let open = TestCommand::OpenMotion(Box::new(MotionSpec {
        motion_id: motion_id.clone(),
        debate_id: "bench".into(),
        kind: MotionKind::Merge,
        state_hash: state_hash.as_str().into(),
        seats: 5,
        min_per_stance: 2,
        contributors: vec![],
        author_model_family: None,
        policy: None,
        question: None,
        projection: None,
        expected: None,
        procedure: None,
        final_panel_of: None,
    }));
    let hash_bytes = Sha256::digest(motion_id.as_bytes());
    let b = Binding {
        motion_id: &motion_id,
        debate_id: "bench",
        kind: MotionKind::Merge,
        state_hash: &hash_bytes,
    };
    let signed_motion = motion_key.map(|mk| {
        let m = panel_proto::pb::Motion {
            motion_id: motion_id.clone(),
            debate_id: "bench".into(),
            kind: panel_machine::rules::ruling::wire_kind(MotionKind::Merge) as i32,
            state_hash: hash_bytes.to_vec(),
            panel: keys
                .iter()
                .map(|(k, _)| panel_proto::pb::PanelSeat {
                    public_key: k.verifying_key().to_bytes().to_vec(),
                    endpoint: String::new(),
                })
                .collect(),
            ..Default::default()
        };
        panel_proto::sign_motion(mk, m)
    });
    let digest = signed_motion.as_ref().map(panel_proto::motion_digest);
    let reveals: Vec<panel_machine::RevealBytes> = keys
        .iter()
        .enumerate()
        .map(|(i, (k, _))| {
            let signed = ruling::sign_answering(k, &b, Decision::Yes, 0.85, None, digest.as_ref())
                .decode()
                .unwrap_or_default();
            let salt: [u8; 32] =
                Sha256::digest(format!("bench-salt/{motion_id}/{i}").as_bytes()).into();
            let commitment = commit_reveal::commit(k, &signed, &salt, 1).ok();
            let reveal = panel_proto::pb::Reveal {
                signed_ruling: Some(signed),
                salt: salt.to_vec(),
                commitment,
            };
            panel_machine::RevealBytes::new(prost::Message::encode_to_vec(&reveal))
        })
        .collect();
    let record = TestCommand::RecordOutcome(OutcomeSubmission {
        motion_id: motion_id.clone(),
        rulings: vec![],
        reveals,
        motion: signed_motion
            .as_ref()
            .map(panel_machine::rules::signed_motion::encode),
    });
    (open.into(), record.into())
}

/// Decisions `0..n`, signed on every available core.
fn presign(
    n: usize,
    keys: &[(SigningKey, ArbiterRegistration)],
    motion_key: Option<&SigningKey>,
) -> Vec<(Command, Command)> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                s.spawn(move || {
                    (start..(start + chunk).min(n))
                        .map(|i| decision(i, keys, motion_key))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            // A signer that panicked would shift every later decision: pass the panic on.
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Run one decision over a write stream; returns (accepted, acceptance-write ms,
/// whole-decision ms).
async fn one_decision(
    w: &client::StreamWriter,
    n: usize,
    cmds: &(Command, Command),
) -> Result<(bool, f64, f64), ClientError> {
    let t0 = Instant::now();
    let client_id = format!("bench-{n}");
    w.write(&client_id, 1, &cmds.0).await?;
    let t1 = Instant::now();
    let r = w.write(&client_id, 2, &cmds.1).await?;
    let t2 = Instant::now();
    let accepted = r.applied && r.result_json.contains("\"Accepted\"");
    Ok((
        accepted,
        (t2 - t1).as_secs_f64() * 1e3,
        (t2 - t0).as_secs_f64() * 1e3,
    ))
}

/// The highest Raft term any replica reports.
async fn term(c: &Cluster) -> u64 {
    let mut t = 0;
    for a in c.replicas.addrs() {
        if let Ok(s) = client::status(c.replicas.transport(), a).await {
            t = t.max(s.term);
        }
    }
    t
}

async fn last_index(t: &Transport, addr: &str) -> u64 {
    client::status(t, addr)
        .await
        .map(|s| s.last_log_index)
        .unwrap_or(0)
}

/// A bench cluster whose five arbiters are registered and admitted, ready for load.
struct Prepared {
    cluster: Cluster,
    /// The replicas' working folder.
    dir: PathBuf,
    leader: String,
    keys: Vec<(SigningKey, ArbiterRegistration)>,
    /// The Raft term once the cluster is up.
    term: u64,
}

impl Prepared {
    /// Removes the working folder unless the caller named it.
    fn finish(self, opts: &BenchOptions) {
        drop(self.cluster);
        if opts.dir.is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Starts the cluster and registers and admits the bench's arbiters.
async fn prepare(opts: &BenchOptions) -> Result<Prepared, BenchError> {
    let dir = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("coord-bench-{}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let cluster = start_cluster(opts, &dir).await?;
    let t = cluster.replicas.transport().clone();
    let leader = cluster
        .replicas
        .wait_for_leader(LEADER_PATIENCE)
        .await?
        .leader_addr;
    let term = term(&cluster).await;
    let mut setup_client = client::coordinator(&t, &leader)?;
    let setup = client::StreamWriter::open(&mut setup_client).await?;

    let federation = cluster.federation.clone();
    let keys: Vec<_> = (0..5).map(|i| arbiter(i, federation.as_deref())).collect();
    for (i, (_, reg)) in keys.iter().enumerate() {
        let register: Command = ClientCommand::RegisterArbiter(reg.clone()).into();
        // A chartered cluster holds client writes back until its charter is adopted.
        let mut tries = 0;
        loop {
            match setup.write("bench-setup", 2 * i as u64, &register).await {
                Ok(r) if r.applied => break,
                Ok(r) => {
                    return Err(BenchError::Registration(r.result_json));
                }
                Err(_) if tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let admit = TestCommand::SetAdmission {
            arbiter_id: reg.arbiter_id.clone(),
            admitted: true,
            score_milli: 900,
        }
        .into();
        setup.write("bench-setup", 2 * i as u64 + 1, &admit).await?;
    }
    Ok(Prepared {
        cluster,
        dir,
        leader,
        keys,
        term,
    })
}

pub async fn run(opts: BenchOptions) -> Result<Report, BenchError> {
    let mut report = Report {
        verify_strict_per_sec: tokio::task::spawn_blocking(verify_rate).await?,
        clients: opts.clients,
        paced_rate: opts.paced_rate,
        ..Report::default()
    };
    let prepared = prepare(&opts).await?;
    report.terms.0 = prepared.term;
    let Prepared {
        ref cluster,
        ref leader,
        ref keys,
        ..
    } = prepared;
    let leader = leader.clone();
    let t = cluster.replicas.transport().clone();
    let federation = cluster.federation.clone();

    // Pre-sign on every core: enough decisions for 2,500/s over the full phase (a phase
    // that runs out ends early and says so in its decision count) plus the paced phase.
    let full_n = (opts.secs as usize * 2500).max(1000);
    let paced_n = (opts.paced_rate * opts.paced_secs) as usize;
    let cmds: Arc<Vec<(Command, Command)>> = Arc::new(
        tokio::task::spawn_blocking({
            let keys = keys.clone();
            let motion_key = federation.as_ref().map(|f| f.motion_key.clone());
            move || presign(full_n + paced_n, &keys, motion_key.as_ref())
        })
        .await?,
    );

    // Full load: `clients` writers back to back until the deadline.
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(opts.secs);
    let idx0 = last_index(&t, &leader).await;
    let (rcpu0, ccpu0) = (cluster_cpu(cluster), cpu_secs(None));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.clients {
        let (next, cmds) = (next.clone(), cmds.clone());
        // One connection and one write stream per writer.
        let c = client::StreamWriter::open(&mut client::coordinator(&t, &leader)?).await?;
        tasks.push(tokio::spawn(async move {
            let mut p = Phase::default();
            while Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= full_n {
                    break;
                }
                match one_decision(&c, n, &cmds[n]).await {
                    Ok((ok, a, d)) => {
                        p.decisions += usize::from(ok);
                        p.not_accepted += usize::from(!ok);
                        p.accept_ms.push(a);
                        p.decision_ms.push(d);
                    }
                    Err(_) => p.not_accepted += 1,
                }
            }
            p
        }));
    }
    for t in tasks {
        if let Ok(p) = t.await {
            report.full.decisions += p.decisions;
            report.full.not_accepted += p.not_accepted;
            report.full.accept_ms.extend(p.accept_ms);
            report.full.decision_ms.extend(p.decision_ms);
        }
    }
    report.full.secs = start.elapsed().as_secs_f64();
    report.full.replica_cpu_secs = cluster_cpu(cluster) - rcpu0;
    report.full.client_cpu_secs = cpu_secs(None) - ccpu0;
    report.full.entries = last_index(&t, &leader).await.saturating_sub(idx0);

    // Paced: a fixed arrival rate, each decision on its own task, after a second for the
    // followers to finish applying the full-load backlog (a steady state, not a drain).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idx0 = last_index(&t, &leader).await;
    let (rcpu0, ccpu0) = (cluster_cpu(cluster), cpu_secs(None));
    let start = Instant::now();
    let mut tick =
        tokio::time::interval(Duration::from_secs_f64(1.0 / opts.paced_rate.max(1) as f64));
    let mut tasks = Vec::new();
    // One connection and one write stream shared by all paced decisions.
    let shared = client::StreamWriter::open(&mut client::coordinator(&t, &leader)?).await?;
    for n in full_n..full_n + paced_n {
        tick.tick().await;
        let cmds = cmds.clone();
        let c = shared.clone();
        tasks.push(tokio::spawn(
            async move { one_decision(&c, n, &cmds[n]).await },
        ));
    }
    for t in tasks {
        match t.await {
            Ok(Ok((ok, a, d))) => {
                report.paced.decisions += usize::from(ok);
                report.paced.not_accepted += usize::from(!ok);
                report.paced.accept_ms.push(a);
                report.paced.decision_ms.push(d);
            }
            _ => report.paced.not_accepted += 1,
        }
    }
    report.paced.secs = start.elapsed().as_secs_f64();
    report.paced.replica_cpu_secs = cluster_cpu(cluster) - rcpu0;
    report.paced.client_cpu_secs = cpu_secs(None) - ccpu0;
    report.paced.entries = last_index(&t, &leader).await.saturating_sub(idx0);

    report.terms.1 = term(cluster).await;
    prepared.finish(&opts);
    Ok(report)
}

/// Where a replica's memory goes per decision, in process (no cluster): prints the
/// resident-set growth and each table's JSON size. `cargo test --release -p
/// panel-coordinator --features test-commands --lib footprint -- --ignored --nocapture`.
#[cfg(test)]
mod footprint {
    use super::*;
    use panel_machine::{Batch, Item};

    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    }

    /// Counts the bytes live on the heap, so a table's share is its heap, not a guess.
    struct Counting;
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    unsafe impl std::alloc::GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
            unsafe { std::alloc::System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            unsafe { std::alloc::System.dealloc(p, l) }
        }
    }
    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// Heap bytes `f` frees (what the value it drops held).
    fn held_by(f: impl FnOnce()) -> usize {
        let before = LIVE.load(Ordering::Relaxed);
        f();
        before.saturating_sub(LIVE.load(Ordering::Relaxed))
    }

    #[test]
    #[ignore = "prints figures; run on its own"]
    fn state_bytes_per_decision() {
        let keys: Vec<_> = (0..5).map(|i| arbiter(i, None)).collect();
        let memo = panel_proto::VerifiedMemo::default();
        let mut st = panel_machine::State::default();
        let mut idx = 0;
        let mut apply = |st: &mut panel_machine::State, c: Command| {
            idx += 1;
            let b = Batch {
                time_ms: 1_000 + idx,
                seed: idx,
                items: vec![Item {
                    client_id: "c".into(),
                    request_id: idx,
                    command: c,
                    writer: None,
                }],
                limits: None,
                checkpoints: None,
                rules: Some(panel_machine::rules::CURRENT),
            };
            panel_machine::apply_batch(st, idx, &b, &memo)
        };
        for (_, reg) in &keys {
            apply(&mut st, ClientCommand::RegisterArbiter(reg.clone()).into());
            let admit = TestCommand::SetAdmission {
                arbiter_id: reg.arbiter_id.clone(),
                admitted: true,
                score_milli: 900,
            };
            apply(&mut st, admit.into());
        }
        let mk = SigningKey::from_bytes(&[7; 32]);
        let n = 20_000;
        let before = rss_kib();
        for i in 0..n {
            let (open, rec) = decision(i, &keys, Some(&mk));
            apply(&mut st, open);
            apply(&mut st, rec);
            st.record.take_held();
        }
        let grown = rss_kib().saturating_sub(before);
        let per = |bytes: usize| bytes as f64 / n as f64;
        println!(
            "RSS growth {:.0} B/decision",
            grown as f64 * 1024.0 / n as f64
        );
        for (name, bytes) in [
            ("motions", serde_json::to_vec(&st.motions).unwrap().len()),
            ("requests", serde_json::to_vec(&st.requests).unwrap().len()),
            ("whole state", serde_json::to_vec(&st).unwrap().len()),
        ] {
            println!("{name}: {:.0} B/decision as JSON", per(bytes));
        }
        let rulings = held_by(|| {
            for id in (0..n).map(|i| format!("bench-m{i}")) {
                if let Some(m) = st.motions.get_mut(&id) {
                    m.rulings = Vec::new();
                }
            }
        });
        println!(
            "motions' rulings: {:.0} B/decision on the heap",
            per(rulings)
        );
        let motions = held_by(|| st.motions = Default::default());
        println!(
            "motions without rulings: {:.0} B/decision on the heap",
            per(motions)
        );
        let requests = held_by(|| st.requests = Default::default());
        println!("requests: {:.0} B/decision on the heap", per(requests));
        let rest = held_by(|| drop(st));
        println!(
            "the rest of the state: {:.0} B/decision on the heap",
            per(rest)
        );
    }
}
