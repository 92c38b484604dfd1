//! TLS groups for the transport and charter attack tests: a local federation issued with
//! `panel_transport::pki` and three replicas running mutual TLS under its charter.

use std::path::Path;
use std::process::Stdio;

use panel_coordinator::local::{ReplicaFlags, Security};
use panel_transport::Transport;
use panel_transport::pki::{self, Issued};

use crate::{ChildGuard, FAST_RAFT, init_cluster_over, loopback_addrs, panel};

/// A running TLS group: its replica processes, their addresses, the issued material.
pub struct TlsCluster {
    pub replicas: Vec<ChildGuard>,
    pub addrs: Vec<String>,
    pub pki: Issued,
}

/// Issues a local federation (two organisations, three replicas, `nodes`) under `root/pki`.
pub fn issue(root: &Path, nodes: &[(&str, &str)]) -> Issued {
    pki::issue(&pki::local_plan(3, nodes), &root.join("pki")).expect("issue certificates")
}

/// The transport of one identity folder.
pub fn tls(dir: &Path) -> Transport {
    Transport::from_flags(Some(dir), None, false).expect("identity folder")
}

/// A reader: the federation's authorities, no certificate of its own.
pub fn reader(root: &Path, issued: &Issued) -> Transport {
    let dir = root.join("reader");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(issued.root.join("ca.pem"), dir.join("ca.pem")).unwrap();
    tls(&dir)
}

/// `panel coordinator run` for TLS replica `id` with the charter and its motion key.
pub fn replica_command(root: &Path, issued: &Issued, id: u64, addr: &str) -> std::process::Command {
    let flags = ReplicaFlags {
        id,
        listen: addr.to_owned(),
        data_dir: root.join(format!("r{id}")),
        security: Security::issued(issued, id),
        test_commands: false,
    };
    let mut cmd = panel();
    cmd.args(flags.args())
        .args(FAST_RAFT)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Three TLS replicas, initialised by an operator of the first organisation.
pub fn start_cluster(root: &Path) -> TlsCluster {
    let issued = issue(root, &[("arb-x", "northwind")]);
    start_issued(root, issued, &[])
}

/// Three TLS replicas of an issued federation, each started with `extra` flags too, and
/// initialised by an operator of the first organisation.
pub fn start_issued(root: &Path, issued: Issued, extra: &[String]) -> TlsCluster {
    start_configured(root, issued, |_, cmd| {
        cmd.args(extra);
    })
}

/// [`start_issued`], each replica's command (by its id) finished by `configure`: its own
/// flags, config file or log files.
pub fn start_configured(
    root: &Path,
    issued: Issued,
    mut configure: impl FnMut(u64, &mut std::process::Command),
) -> TlsCluster {
    let addrs = loopback_addrs(3);
    let replicas = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let id = i as u64 + 1;
            let mut cmd = replica_command(root, &issued, id, a);
            configure(id, &mut cmd);
            ChildGuard::spawn(format!("replica {id}"), cmd)
        })
        .collect();
    let operator = issued.dir(&pki::operator_dir_name("northwind"));
    init_cluster_over(&addrs, tls(&operator));
    TlsCluster {
        replicas,
        addrs,
        pki: issued,
    }
}
