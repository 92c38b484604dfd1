//! The replicas of a local group: started under a [`Supervisor`] from flags or a config
//! file, made one group through the `Admin` RPC, and waited for until a leader is elected.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use panel_transport::{Transport, pki};

use super::{LocalClusterError, Supervisor};
use crate::client;
use crate::pb::coordinator as pb;

/// How often the waits below ask again.
const POLL: Duration = Duration::from_millis(100);

/// How a replica proves who it is and which motions it trusts.
#[derive(Debug, Clone)]
pub enum Security {
    /// `--insecure-loopback`: plaintext on loopback, with `--motion-key` if one is named.
    Loopback { motion_key: Option<PathBuf> },
    /// Mutual TLS under an issued charter, with the federation's motion and log keys.
    Chartered {
        tls: PathBuf,
        charter: PathBuf,
        motion_key: PathBuf,
        log_key: PathBuf,
    },
}

impl Security {
    /// Replica `id` of an issued local federation.
    pub fn issued(issued: &pki::Issued, id: u64) -> Self {
        Self::Chartered {
            tls: issued.dir(&pki::replica_dir_name(id)),
            charter: issued.charter_path(),
            motion_key: issued.motion_key_path(),
            log_key: issued.log_key_path(id),
        }
    }
}

/// The flags of `panel coordinator run` every local replica started without a config
/// file has; callers append their own (Raft timeouts, checkpoint cadence, witnesses).
#[derive(Debug, Clone)]
pub struct ReplicaFlags {
    pub id: u64,
    pub listen: String,
    pub data_dir: PathBuf,
    pub security: Security,
    /// `--test-commands`: raw motions, notes and admissions from clients (test clusters
    /// and the bench only).
    pub test_commands: bool,
}

impl ReplicaFlags {
    /// The whole argument list after the executable, `coordinator run` first.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "coordinator".into(),
            "run".into(),
            "--id".into(),
            self.id.to_string().into(),
            "--listen".into(),
            self.listen.clone().into(),
            "--data-dir".into(),
            self.data_dir.clone().into(),
        ];
        match &self.security {
            Security::Loopback { motion_key } => {
                a.push("--insecure-loopback".into());
                if let Some(k) = motion_key {
                    a.extend(["--motion-key".into(), k.clone().into()]);
                }
            }
            Security::Chartered {
                tls,
                charter,
                motion_key,
                log_key,
            } => a.extend([
                "--tls".into(),
                tls.clone().into(),
                "--charter".into(),
                charter.clone().into(),
                "--motion-key".into(),
                motion_key.clone().into(),
                "--log-key".into(),
                log_key.clone().into(),
            ]),
        }
        if self.test_commands {
            a.push("--test-commands".into());
        }
        a
    }
}

/// How one replica is started: its arguments after the executable, and the file its
/// output goes to (none: discarded).
#[derive(Debug, Clone)]
pub struct ReplicaLaunch {
    pub args: Vec<OsString>,
    pub log: Option<PathBuf>,
}

impl ReplicaLaunch {
    /// `coordinator run --config FILE`, logging to `log`.
    pub fn config_file(file: &Path, log: PathBuf) -> Self {
        Self {
            args: vec![
                "coordinator".into(),
                "run".into(),
                "--config".into(),
                file.into(),
            ],
            log: Some(log),
        }
    }
}

/// A local group's replicas: where they listen (replica `i + 1` at `addrs[i]`), how to
/// dial them, and their pids. The processes belong to the caller's [`Supervisor`], so
/// whatever else the caller starts there (witnesses, nodes) stops with them.
pub struct LocalCluster {
    addrs: Vec<String>,
    transport: Transport,
    pids: Vec<u32>,
}

impl LocalCluster {
    /// A group already running at `addrs` (ids 1, 2, ... in order), dialled over
    /// `transport`.
    pub fn new(addrs: Vec<String>, transport: Transport) -> Self {
        Self {
            addrs,
            transport,
            pids: Vec::new(),
        }
    }

    /// Starts replica `i + 1` at `addrs[i]` under `processes`, each as `launch(id, addr)`
    /// says.
    pub fn spawn(
        processes: &mut Supervisor,
        addrs: Vec<String>,
        transport: Transport,
        mut launch: impl FnMut(u64, &str) -> Result<ReplicaLaunch, LocalClusterError>,
    ) -> Result<Self, LocalClusterError> {
        let mut cluster = Self::new(addrs, transport);
        for (i, addr) in cluster.addrs.iter().enumerate() {
            let id = i as u64 + 1;
            let l = launch(id, addr)?;
            let name = format!("replica {id}");
            let pid = match &l.log {
                Some(log) => processes.spawn(&name, &l.args, log)?,
                None => processes.spawn_quiet(&name, &l.args)?,
            };
            cluster.pids.push(pid);
        }
        Ok(cluster)
    }

    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The replicas' pids, in id order (empty for a group this did not start).
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    fn first(&self) -> Result<&str, LocalClusterError> {
        self.addrs
            .first()
            .map(String::as_str)
            .ok_or(LocalClusterError::NoReplicas)
    }

    /// Waits until every replica answers `Status`: they are listening.
    pub async fn wait_answering(&self, patience: Duration) -> Result<(), LocalClusterError> {
        let start = Instant::now();
        for addr in &self.addrs {
            while client::status(&self.transport, addr).await.is_err() {
                if start.elapsed() > patience {
                    return Err(LocalClusterError::Timeout {
                        what: format!("the replica at {addr} answers"),
                        after: patience,
                    });
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    }

    /// Makes the replicas one group (`Admin.Init` at the first, every replica a voter),
    /// asking again while the replica is not listening yet, for at most `patience`.
    pub async fn init(&self, patience: Duration) -> Result<(), LocalClusterError> {
        let addr = self.first()?;
        let members: Vec<pb::Member> = self
            .addrs
            .iter()
            .enumerate()
            .map(|(i, a)| pb::Member {
                id: i as u64 + 1,
                addr: a.clone(),
            })
            .collect();
        let mut admin = pb::admin_client::AdminClient::new(client::channel(&self.transport, addr)?);
        let start = Instant::now();
        loop {
            match admin
                .init(pb::InitRequest {
                    members: members.clone(),
                })
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if start.elapsed() > patience => {
                    return Err(LocalClusterError::Init {
                        addr: addr.to_owned(),
                        message: e.message().to_owned(),
                    });
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Waits until the first replica knows a leader; its status then names it.
    pub async fn wait_for_leader(
        &self,
        patience: Duration,
    ) -> Result<pb::StatusReply, LocalClusterError> {
        let addr = self.first()?;
        let start = Instant::now();
        loop {
            if let Ok(s) = client::status(&self.transport, addr).await
                && s.has_leader
            {
                return Ok(s);
            }
            if start.elapsed() > patience {
                return Err(LocalClusterError::Timeout {
                    what: format!("the replica at {addr} knows a leader"),
                    after: patience,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: Vec<OsString>) -> Vec<String> {
        a.into_iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn loopback_flags_are_those_of_coordinator_run() {
        let flags = ReplicaFlags {
            id: 2,
            listen: "127.0.0.1:7002".into(),
            data_dir: "/d/r2".into(),
            security: Security::Loopback {
                motion_key: Some("/d/motion.key".into()),
            },
            test_commands: true,
        };
        assert_eq!(
            strings(flags.args()),
            [
                "coordinator",
                "run",
                "--id",
                "2",
                "--listen",
                "127.0.0.1:7002",
                "--data-dir",
                "/d/r2",
                "--insecure-loopback",
                "--motion-key",
                "/d/motion.key",
                "--test-commands"
            ]
        );
    }

    #[test]
    fn chartered_flags_name_the_identity_charter_and_keys() {
        let flags = ReplicaFlags {
            id: 1,
            listen: "127.0.0.1:7001".into(),
            data_dir: "/d/r1".into(),
            security: Security::Chartered {
                tls: "/p/replica-1".into(),
                charter: "/p/charter.toml".into(),
                motion_key: "/p/motion.key".into(),
                log_key: "/p/log.key".into(),
            },
            test_commands: false,
        };
        let a = strings(flags.args());
        assert_eq!(
            &a[8..],
            [
                "--tls",
                "/p/replica-1",
                "--charter",
                "/p/charter.toml",
                "--motion-key",
                "/p/motion.key",
                "--log-key",
                "/p/log.key"
            ]
        );
    }

    #[tokio::test]
    async fn no_address_is_an_error_not_a_panic() {
        let c = LocalCluster::new(Vec::new(), Transport::InsecureLoopback);
        assert!(matches!(
            c.init(Duration::from_millis(10)).await,
            Err(LocalClusterError::NoReplicas)
        ));
    }
}
