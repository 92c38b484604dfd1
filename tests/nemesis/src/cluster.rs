//! A TLS coordinator cluster whose replicas each run in their own network namespace
//! ([`crate::net`]): the real `panel coordinator run` processes, mutual TLS on every hop
//! (plaintext is loopback-only, and the replicas are not on loopback), the federation's
//! certificates issued for the namespaces' addresses.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use panel_coordinator::client;
use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_tests::ChildGuard;
use panel_transport::Transport;
use panel_transport::pki::{self, Issued, Kind};
use tonic::transport::Channel;

use crate::net::{Net, NetError};

/// Port every replica listens on inside its namespace.
pub const PORT: u16 = 7001;
/// Raft timing of the replicas (ms): the election timeout is what SIGSTOP must outlast.
pub const HEARTBEAT_MS: u64 = 50;
pub const ELECTION_MIN_MS: u64 = 300;
pub const ELECTION_MAX_MS: u64 = 600;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("issuing certificates: {0}")]
    Pki(#[from] panel_transport::TransportError),
    #[error("{what}: {detail}")]
    Setup { what: String, detail: String },
}

/// One replica process (or none while it is killed).
pub struct Replica {
    pub id: u64,
    proc: Option<ChildGuard>,
    paused: bool,
    log: PathBuf,
}

/// Fields drop in order: the replica processes are stopped before their namespaces go.
pub struct Cluster {
    pub replicas: Vec<Replica>,
    pub net: Net,
    pub root: PathBuf,
    pub pki: Issued,
    /// The workload's TLS identity (a client certificate of the first organisation).
    pub client: Transport,
    panel: PathBuf,
    /// Flags every replica start (and restart) adds to the nemesis's own.
    extra_args: Vec<String>,
}

/// What [`Cluster::start_layout`] builds: `replicas` replicas on hosts `1..=replicas`, and
/// `hosts - replicas` more namespaces on the same two networks for whatever else the run
/// puts on hosts of its own (witnesses, nodes).
#[derive(Debug, Clone)]
pub struct Layout {
    pub replicas: usize,
    pub hosts: usize,
    /// Flags added to every replica's command line, given the hosts' addresses.
    pub extra_args: fn(&Net) -> Vec<String>,
}

fn signal(pid: u32, sig: &str) {
    let _ = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

impl Cluster {
    /// Creates the namespaces, issues the federation for their addresses, starts `n`
    /// replicas and initialises them as one group.
    pub fn start(root: &Path, n: usize) -> Result<Self, ClusterError> {
        Self::start_layout(
            root,
            &Layout {
                replicas: n,
                hosts: n,
                extra_args: |_| Vec::new(),
            },
        )
    }

    /// [`start`](Self::start) on `layout`'s hosts, with its extra replica flags.
    pub fn start_layout(root: &Path, layout: &Layout) -> Result<Self, ClusterError> {
        let n = layout.replicas;
        let net = Net::create(layout.hosts.max(n))?;
        let mut plan = pki::local_plan(n as u64, &[]);
        for spec in &mut plan.identities {
            if let Kind::Replica { id } = spec.kind {
                spec.hosts = vec![net.peer_ip(id), net.client_ip(id)];
            }
        }
        let pki = pki::issue(&plan, &root.join("pki"))?;
        let client = Transport::from_flags(Some(&pki.dir(pki::LOCAL_CLIENT)), None, false)?;
        let extra_args = (layout.extra_args)(&net);
        let mut c = Self {
            net,
            root: root.to_owned(),
            pki,
            replicas: (1..=n as u64)
                .map(|id| Replica {
                    id,
                    proc: None,
                    paused: false,
                    log: root.join(format!("r{id}.log")),
                })
                .collect(),
            client,
            panel: panel_tests::panel_bin(),
            extra_args,
        };
        for id in 1..=n as u64 {
            c.start_replica(id);
        }
        c.init()?;
        Ok(c)
    }

    pub fn n(&self) -> usize {
        self.replicas.len()
    }

    /// What the test dials for replica `id`.
    pub fn client_addr(&self, id: u64) -> String {
        format!("{}:{PORT}", self.net.client_ip(id))
    }

    fn replica(&mut self, id: u64) -> &mut Replica {
        &mut self.replicas[id as usize - 1]
    }

    /// Starts (or restarts) replica `id` in its namespace; its output is appended to
    /// `r{id}.log` under the run's folder.
    pub fn start_replica(&mut self, id: u64) {
        let pki = &self.pki;
        let mut cmd = self.net.exec_in(id, &self.panel);
        cmd.args(["coordinator", "run", "--id", &id.to_string()])
            .args(["--listen", &format!("0.0.0.0:{PORT}")])
            .arg("--data-dir")
            .arg(self.root.join(format!("r{id}")))
            .arg("--tls")
            .arg(pki.dir(&pki::replica_dir_name(id)))
            .arg("--charter")
            .arg(pki.charter_path())
            .arg("--motion-key")
            .arg(pki.motion_key_path())
            .arg("--log-key")
            .arg(pki.log_key_path(id))
            .arg("--test-commands")
            .args(["--heartbeat-ms", &HEARTBEAT_MS.to_string()])
            .args(["--election-min-ms", &ELECTION_MIN_MS.to_string()])
            .args(["--election-max-ms", &ELECTION_MAX_MS.to_string()])
            // The workload writes far faster than one person would: lift the flood limits.
            .args([
                "--identity-burst",
                "1000000",
                "--identity-per-minute",
                "10000000",
            ])
            .args(&self.extra_args)
            .args(["--organisation-burst", "1000000"])
            .args(["--organisation-per-minute", "10000000"])
            .args([
                "--global-burst",
                "1000000",
                "--global-per-minute",
                "10000000",
            ])
            .env("RUST_LOG", "warn");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.replica(id).log)
            .ok();
        match log.and_then(|f| f.try_clone().ok().map(|g| (f, g))) {
            Some((out, err)) => {
                cmd.stdout(out).stderr(err);
            }
            None => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        let guard = ChildGuard::spawn(format!("replica {id}"), cmd);
        let r = self.replica(id);
        r.proc = Some(guard);
        r.paused = false;
    }

    /// `kill -9` of replica `id`: no shutdown path runs.
    pub fn kill9(&mut self, id: u64) {
        if let Some(mut g) = self.replica(id).proc.take() {
            g.kill();
        }
    }

    pub fn is_running(&self, id: u64) -> bool {
        self.replicas[id as usize - 1].proc.is_some()
    }

    pub fn pause(&mut self, id: u64) {
        let r = self.replica(id);
        if let Some(g) = &r.proc {
            signal(g.id(), "-STOP");
            r.paused = true;
        }
    }

    pub fn resume(&mut self, id: u64) {
        let r = self.replica(id);
        if let Some(g) = &r.proc {
            signal(g.id(), "-CONT");
        }
        r.paused = false;
    }

    /// Every replica running, unpaused and connected.
    pub fn heal_all(&mut self) -> Result<(), ClusterError> {
        for id in 1..=self.n() as u64 {
            self.net.heal(id)?;
            if self.replicas[id as usize - 1].paused {
                self.resume(id);
            }
            if !self.is_running(id) {
                self.start_replica(id);
            }
        }
        Ok(())
    }

    fn init(&self) -> Result<(), ClusterError> {
        let operator = self
            .pki
            .dir(&pki::operator_dir_name(pki::LOCAL_ORGANISATIONS[0]));
        let t = Instant::now();
        loop {
            let mut cmd = std::process::Command::new(&self.panel);
            cmd.args(["coordinator", "init", "--addr", &self.client_addr(1)])
                .arg("--tls")
                .arg(&operator);
            for id in 1..=self.n() as u64 {
                cmd.args([
                    "--member".to_string(),
                    format!("{id}={}:{PORT}", self.net.peer_ip(id)),
                ]);
            }
            let out = cmd.output().map_err(|e| ClusterError::Setup {
                what: "run panel coordinator init".into(),
                detail: e.to_string(),
            })?;
            if out.status.success() {
                return Ok(());
            }
            if t.elapsed() > Duration::from_secs(30) {
                return Err(ClusterError::Setup {
                    what: "cluster init".into(),
                    detail: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Every replica's client-network address, comma-separated (the CLI's `--addr`).
    pub fn client_addrs(&self) -> String {
        (1..=self.n() as u64)
            .map(|id| self.client_addr(id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every replica's peer-network address (what nodes on other hosts dial).
    pub fn peer_addrs(&self) -> Vec<String> {
        (1..=self.n() as u64)
            .map(|id| format!("{}:{PORT}", self.net.peer_ip(id)))
            .collect()
    }

    /// Stops replica `id` as a service manager does: SIGTERM, so its shutdown path runs
    /// (SIGKILL only if it has not exited within 5 s), and reaps it.
    pub fn stop(&mut self, id: u64) {
        drop(self.replica(id).proc.take());
    }

    /// A gRPC client of replica `id` on the client network.
    pub fn coordinator(&self, id: u64) -> Result<CoordinatorClient<Channel>, ClusterError> {
        client::coordinator(&self.client, &self.client_addr(id)).map_err(|e| ClusterError::Setup {
            what: format!("client of replica {id}"),
            detail: e.to_string(),
        })
    }

    /// The tail of replica `id`'s output, for failure reports.
    pub fn log_tail(&self, id: u64) -> String {
        let s = std::fs::read_to_string(&self.replicas[id as usize - 1].log).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

/// One `Status` call with a short deadline.
pub async fn status(
    c: &mut CoordinatorClient<Channel>,
    timeout: Duration,
) -> Result<pb::StatusReply, tonic::Status> {
    let mut r = tonic::Request::new(pb::StatusRequest {});
    r.set_timeout(timeout);
    match tokio::time::timeout(timeout, c.status(r)).await {
        Ok(r) => r.map(tonic::Response::into_inner),
        Err(_) => Err(tonic::Status::deadline_exceeded("status timed out")),
    }
}
