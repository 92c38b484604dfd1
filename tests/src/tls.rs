//! TLS groups for the transport and charter attack tests: a local federation issued with
//! `panel_transport::pki` and three replicas running mutual TLS under its charter.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use panel_transport::Transport;
use panel_transport::pki::{self, Issued};

use crate::{ChildGuard, init_args, loopback_addrs, panel};

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
    let mut cmd = panel();
    cmd.args([
        "coordinator",
        "run",
        "--id",
        &id.to_string(),
        "--listen",
        addr,
    ])
    .arg("--data-dir")
    .arg(root.join(format!("r{id}")))
    .arg("--tls")
    .arg(issued.dir(&pki::replica_dir_name(id)))
    .arg("--charter")
    .arg(issued.charter_path())
    .arg("--motion-key")
    .arg(issued.motion_key_path())
    .arg("--log-key")
    .arg(issued.log_key_path())
    .args(["--heartbeat-ms", "50", "--election-min-ms", "300"])
    .args(["--election-max-ms", "600"])
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
    let addrs = loopback_addrs(3);
    let replicas = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut cmd = replica_command(root, &issued, i as u64 + 1, a);
            cmd.args(extra);
            ChildGuard::spawn(format!("replica {}", i + 1), cmd)
        })
        .collect();
    let operator = issued.dir(&pki::operator_dir_name("northwind"));
    let t = Instant::now();
    loop {
        let out = panel()
            .args(init_args(&addrs))
            .arg("--tls")
            .arg(&operator)
            .output()
            .expect("run panel");
        if out.status.success() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "TLS cluster init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    TlsCluster {
        replicas,
        addrs,
        pki: issued,
    }
}
