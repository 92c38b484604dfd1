//! Arbiters and their nodes on a chartered TLS group ([`crate::tls`]): registration with
//! the organisation's endorsement, and a `panel node run` with a scripted judge that links
//! out to the replicas, as the transport and exam tests use them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use panel_transport::pki;

use crate::run_folder::{log_file, poll};
use crate::tls::TlsCluster;
use crate::{ChildGuard, free_port, panel};

/// How long a harness call waits for the group.
pub const DEADLINE: Duration = Duration::from_secs(90);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `panel ARGS --addr <all replicas> --tls <client>`, retried until it succeeds (the group
/// refuses writes until its charter is applied); returns its standard output.
pub fn cli_until_ok(root: &Path, c: &TlsCluster, args: &[&str]) -> String {
    poll(root, &format!("panel {}", args.join(" ")), DEADLINE, || {
        let out = panel()
            .args(args)
            .arg("--addr")
            .arg(c.addrs.join(","))
            .arg("--tls")
            .arg(c.pki.dir(pki::LOCAL_CLIENT))
            .output()
            .expect("run panel");
        out.status.success().then(|| text(&out.stdout))
    })
}

/// Generates `arbiter`'s key in `dir` and registers it, endorsed by `organisation`'s roster
/// key, to be reached over its links (`--endpoint link`); returns the key file.
pub fn register(
    root: &Path,
    c: &TlsCluster,
    dir: &Path,
    arbiter: &str,
    organisation: &str,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join("arbiter.key");
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    cli_until_ok(root, c, &["arbiter", "list", "--json"]);
    let org_key = c.pki.signing_key_path(organisation);
    cli_until_ok(
        root,
        c,
        &[
            "arbiter",
            "register",
            "--id",
            arbiter,
            "--key-file",
            key.to_str().unwrap(),
            "--organisation",
            organisation,
            "--model-family",
            "fam",
            "--stance",
            "A",
            "--endpoint",
            "link",
            "--org-key",
            org_key.to_str().unwrap(),
            "--json",
        ],
    );
    key
}

/// Who a node serves and with which TLS identity folder.
pub struct NodeSpec<'a> {
    pub arbiter: &'a str,
    pub organisation: &'a str,
    /// The identity folder's name under the issued root (normally
    /// `pki::node_dir_name(arbiter)`).
    pub identity: &'a str,
    /// Its log's name under `root/logs`.
    pub log: &'a str,
}

/// `panel node run` for `node.arbiter` over TLS with the charter and a scripted judge,
/// linking out to `connect`; returns its guard and its own listen address.
pub fn start_node(
    root: &Path,
    c: &TlsCluster,
    dir: &Path,
    node: &NodeSpec<'_>,
    connect: &[&str],
) -> (ChildGuard, String) {
    start_node_in(root, c, dir, node, &c.pki.dir(node.identity), connect)
}

/// [`start_node`] with the TLS identity folder `identity` (`node.identity` unused), for a
/// node of an organisation the issued federation did not found.
pub fn start_node_in(
    root: &Path,
    c: &TlsCluster,
    dir: &Path,
    node: &NodeSpec<'_>,
    identity: &Path,
    connect: &[&str],
) -> (ChildGuard, String) {
    std::fs::write(
        dir.join("profiles.toml"),
        "[profiles.perfect]\naccuracy = 1.0\nseed = 1\n",
    )
    .unwrap();
    let port = free_port();
    std::fs::write(
        dir.join("node.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
             organisation = \"{}\"\nmodel_family = \"scripted\"\ncoordinator_keys = [\"{}\"]\n\n\
             [judge]\nkind = \"scripted\"\nprofiles = \"profiles.toml\"\nprofile = \"perfect\"\n\n\
             [transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
            node.organisation,
            hex::encode(motion_key(c).verifying_key().to_bytes()),
            identity.display(),
            c.pki.charter_path().display()
        ),
    )
    .unwrap();
    let (out, err) = log_file(root, node.log);
    let mut cmd = panel();
    cmd.args(["node", "run", "--config"])
        .arg(dir.join("node.toml"))
        .args(["--arbiter-id", node.arbiter])
        .args(["--connect", &connect.join(",")])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let guard = ChildGuard::spawn(node.log.to_owned(), cmd);
    (guard, format!("127.0.0.1:{port}"))
}

/// The cluster's motion key, which every replica (and so every replica's operator) holds.
pub fn motion_key(c: &TlsCluster) -> panel_proto::SigningKey {
    pki::read_seed_key(&c.pki.motion_key_path()).expect("motion key")
}
