//! `panel up`'s federation on loopback: a fresh state folder, the organisations'
//! certificates, one witness per organisation and three coordinator replicas made one
//! Raft group (docs/coordinator/operations.md "Configuration file").

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use panel_coordinator::config::ReplicaConfig;
use panel_coordinator::local::{self, LocalCluster, ReplicaLaunch, Supervisor};
use panel_transport::{Transport, pki};

use crate::output::say;
use crate::up::{ARBITERS, ArbiterSpec};

/// Clears and recreates the state folder; returns its canonical path.
pub fn fresh_state(state: &Path, replace: bool) -> Result<PathBuf> {
    let earlier = fs::read_dir(state).is_ok_and(|mut d| d.next().is_some());
    if earlier && !replace {
        anyhow::bail!(
            "{} already holds an earlier run (its record, keys and logs); pass --fresh to delete and replace it, or --state DIR for another folder",
            state.display()
        );
    }
    if state.exists() {
        fs::remove_dir_all(state).with_context(|| format!("clearing {}", state.display()))?;
    }
    for d in ["coordinators", "nodes", "logs", "sources", "witnesses"] {
        fs::create_dir_all(state.join(d))?;
    }
    let state = fs::canonicalize(state)?;
    say!("Crucible Panel: a local panel on loopback");
    say!("state folder: {}", state.display());
    Ok(state)
}

/// The federation's certificates: one authority per organisation, mutual TLS on every
/// hop, replicas and operators pinned in the charter. Returns them with the operator's
/// transport, which forms the Raft group. The charter marks the federation a practice
/// group at exam `bar` (docs/SECURITY.md "Exams").
/// `key_seed` derives the federation's Ed25519 keys (`PkiPlan::key_seed`; `panel up
/// --seed`), so the replicas' beacon keys and with them the panel draws replay.
pub fn certificates(
    state: &Path,
    bar: panel_federation::ExamBar,
    key_seed: Option<[u8; 32]>,
) -> Result<(pki::Issued, Transport)> {
    certificates_for(state, bar, &ARBITERS, key_seed)
}

/// [`certificates`] for another set of arbiter nodes (`panel bench` sizes its own).
pub fn certificates_for(
    state: &Path,
    bar: panel_federation::ExamBar,
    arbiters: &[ArbiterSpec],
    key_seed: Option<[u8; 32]>,
) -> Result<(pki::Issued, Transport)> {
    let nodes: Vec<(&str, &str)> = arbiters.iter().map(|a| (a.id, a.organisation)).collect();
    let mut plan = pki::local_plan(3, &nodes);
    plan.key_seed = key_seed;
    plan.exam = Some(panel_federation::ExamTerms {
        practice: true,
        bar,
    });
    let issued = pki::issue(&plan, &state.join("pki"))?;
    let operator = Transport::from_flags(
        Some(&issued.dir(&pki::operator_dir_name(pki::LOCAL_ORGANISATIONS[0]))),
        None,
        false,
    )?;
    say!(
        "mutual TLS: {} organisations' authorities, charter {}",
        issued.charter.organisations.len(),
        issued.charter_path().display()
    );
    say!(
        "a practice federation (charter exam.practice): its calibration exam is the shipped \
         pool, whose gold answers are public, so an admission here shows an arbiter sat the \
         exam, not that it could not look the answers up; exam bar: {}",
        match bar {
            panel_federation::ExamBar::Skill => "skill (the calibration bars)",
            panel_federation::ExamBar::Attendance =>
                "attendance (admitted for answering the draw, whatever the scores)",
        }
    );
    Ok((issued, operator))
}

/// What the replicas are set up for: the judges the panel runs.
#[derive(Debug, Clone, Copy)]
pub struct Judging {
    /// Motions and the exam carry the truth hint simulated judges aim at through their
    /// declared noise (docs/JUDGES.md "Simulated"); never for real judges.
    pub simulation: bool,
    pub commit_ms: u64,
    pub exam_ms: u64,
}

impl Judging {
    /// Simulated judges answer in microseconds.
    pub const SIMULATED: Self = Self {
        simulation: true,
        commit_ms: 300,
        exam_ms: 3000,
    };
    /// Local models: about 2 s per ruling and 4 s per two-order motion on a quiet core,
    /// four nodes sharing two cores (BENCHMARKS.md "Local judge"); a sitting of 72 items
    /// (8 of them held back for the track record) at about 8 s each under that sharing.
    pub const LOCAL: Self = Self {
        simulation: false,
        commit_ms: 90_000,
        exam_ms: 700_000,
    };
}

/// Starts the witnesses, then three replicas from their config files, forms the Raft
/// group and waits for a leader; returns the replicas' addresses.
pub async fn start_coordinators(
    cluster: &mut Supervisor,
    state: &Path,
    issued: &pki::Issued,
    operator: Transport,
    judging: Judging,
) -> Result<Vec<String>> {
    let as_up = Tuning {
        starter: "`panel up`",
        tune: &|_| {},
    };
    start_coordinators_tuned(cluster, state, issued, operator, judging, &as_up).await
}

/// What a caller other than `panel up` changes in the replicas' config files: who wrote
/// them, and settings of its own group (`panel bench` raises its group's write limits).
pub struct Tuning<'a> {
    pub starter: &'a str,
    pub tune: &'a (dyn Fn(&mut ReplicaConfig) + Sync),
}

/// [`start_coordinators`] with each replica's config changed by `tuning` before it is
/// written.
pub async fn start_coordinators_tuned(
    cluster: &mut Supervisor,
    state: &Path,
    issued: &pki::Issued,
    operator: Transport,
    judging: Judging,
    tuning: &Tuning<'_>,
) -> Result<Vec<String>> {
    // One witness per organisation, each with its own key: they cosign the log's
    // checkpoints, so no single organisation can publish another history of the record.
    let witness_urls = local::witnesses::spawn(
        cluster,
        issued,
        &state.join("witnesses"),
        &state.join("logs"),
    )?;
    say!(
        "started {} witnesses, one per organisation: {}",
        witness_urls.len(),
        witness_urls.join(", ")
    );
    let replicas =
        LocalCluster::spawn(cluster, local::loopback_addrs(3)?, operator, |id, addr| {
            let config =
                write_replica_config(state, id, addr, issued, &witness_urls, judging, tuning)?;
            let log = state.join("logs").join(format!("coordinator-{id}.log"));
            Ok(ReplicaLaunch::config_file(&config, log))
        })?;
    let addrs = replicas.addrs().to_vec();
    say!("started 3 coordinator replicas: {}", addrs.join(", "));
    let client_tls = issued.dir(pki::LOCAL_CLIENT);
    crate::client::addr::write_cluster_file(state, &addrs, Some(&client_tls))?;
    replicas.wait_answering(Duration::from_secs(30)).await?;
    replicas.init(Duration::from_secs(30)).await?;
    let leader = replicas.wait_for_leader(Duration::from_secs(30)).await?;
    say!(
        "raft group formed: leader is replica {} at {}",
        leader.leader_id,
        leader.leader_addr
    );
    Ok(addrs)
}

/// Writes replica `id`'s config file into the state folder (`config/replica-ID.toml`, the
/// shape docs/coordinator/operations.md "Configuration file" documents) and returns its path: what
/// this replica runs with, and what a user copies to a host of its own.
fn write_replica_config(
    state: &Path,
    id: u64,
    addr: &str,
    issued: &pki::Issued,
    witness_urls: &[String],
    judging: Judging,
    tuning: &Tuning<'_>,
) -> Result<PathBuf, local::LocalClusterError> {
    let data = state.join("coordinators").join(format!("c{id}"));
    let mut config = local::config::chartered(id, addr, data, issued, witness_urls)?;
    config.simulation = Some(judging.simulation);
    config.windows = panel_coordinator::config::WindowsSection {
        commit_ms: Some(judging.commit_ms),
        exam_ms: Some(judging.exam_ms),
        ..Default::default()
    };
    (tuning.tune)(&mut config);
    local::config::write(&state.join("config"), id, &config, tuning.starter)
}
