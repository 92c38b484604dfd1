//! The witnessed log on a live chartered cluster (docs/WITNESS.md): two witnesses of two
//! organisations cosign the checkpoints the leader pushes; one entry's proof verifies
//! offline with the policy alone; `panel monitor` follows the cluster; after `kill -9` of
//! the leader the new leader keeps the witnesses following (every checkpoint the record
//! carries stays consistent and the last is cosigned by both); and a witness's refusals
//! show in its own state, not in the record.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use panel_tests::tls::{TlsCluster, issue, start_issued};
use panel_tests::{ChildGuard, free_port, panel};
use panel_transport::pki;
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn cli(c: &TlsCluster, args: &[&str]) -> Output {
    panel()
        .args(args)
        .arg("--addr")
        .arg(c.addrs.join(","))
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .expect("run panel")
}

fn poll<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn witness(root: &Path, issued: &pki::Issued, org: &str) -> (ChildGuard, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = panel();
    cmd.args(["witness", "run", "--listen", &listen, "--data"])
        .arg(root.join(format!("witness-{org}")))
        .arg("--key")
        .arg(issued.witness_key_path(org))
        .args(["--name", &pki::witness_name(org), "--charter"])
        .arg(issued.charter_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    (
        ChildGuard::spawn(format!("witness {org}"), cmd),
        format!("http://{listen}"),
    )
}

/// The cluster, its witnesses, their URLs, and the flags every replica was started with.
fn start(root: &Path) -> (TlsCluster, Vec<ChildGuard>, Vec<String>, Vec<String>) {
    let issued = issue(root, &[]);
    let mut witnesses = Vec::new();
    let mut urls = Vec::new();
    let mut extra: Vec<String> = vec!["--checkpoint-every-ms".into(), "200".into()];
    for org in pki::LOCAL_ORGANISATIONS {
        let (w, url) = witness(root, &issued, org);
        witnesses.push(w);
        extra.extend(["--witness".into(), url.clone()]);
        urls.push(url);
    }
    (start_issued(root, issued, &extra), witnesses, urls, extra)
}

/// docs/SECURITY.md "The record": one organisation's operator holds the log keys of both its replicas
/// (1 and 3 of the local federation) and signs a checkpoint of a history the log never
/// had. The witnesses refuse it (403): the charter's quorum log needs the keys of two
/// organisations, so no operator or replica alone can have a history cosigned.
async fn one_organisation_cannot_sign_the_log(c: &TlsCluster, urls: &[String], size: u64) {
    let origin = c.pki.charter.log.as_ref().expect("log").origin.clone();
    let mut note =
        panel_tlog::Note::new(panel_tlog::Checkpoint::new(&origin, size + 5, [9; 32]).body())
            .expect("note");
    for id in [1, 3] {
        let key = panel_transport::pki::read_seed_key(&c.pki.log_key_path(id)).expect("key");
        note.add(
            panel_tlog::NoteSigner::new(&origin, key)
                .expect("signer")
                .sign(&note.text),
        );
    }
    let forged = panel_tlog::witness::AddCheckpoint {
        old_size: size,
        proof: vec![],
        checkpoint: note,
    };
    for url in urls {
        match panel_witness::add_checkpoint(url, &forged, Duration::from_secs(5)).await {
            Err(panel_witness::SubmitError::Refused { status, body }) => {
                assert_eq!(status, 403, "{body}");
                assert!(body.contains("quorum is 2"), "{body}");
            }
            other => panic!("the witness at {url} answered {other:?}"),
        }
    }
}

/// The exported record, once it verifies internally (an empty record has no checkpoint).
fn export(c: &TlsCluster, root: &Path) -> Option<(PathBuf, Value)> {
    let path = root.join("record.json");
    let out = cli(c, &["export", "--out", path.to_str().expect("path")]);
    if !out.status.success() {
        return None;
    }
    let v = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    Some((path, v))
}

fn verify_policy(c: &TlsCluster, path: &Path) -> Output {
    panel()
        .arg("verify")
        .arg(path)
        .arg("--policy")
        .arg(c.pki.policy_path())
        .arg("--charter")
        .arg(c.pki.charter_path())
        .output()
        .expect("run verify")
}

fn register(c: &TlsCluster, root: &Path, id: &str) {
    let key = root.join(format!("{id}.key"));
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .expect("keygen");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let org_key = c.pki.signing_key_path("northwind");
    let out = cli(
        c,
        &[
            "arbiter",
            "register",
            "--id",
            id,
            "--key-file",
            key.to_str().expect("key"),
            "--organisation",
            "northwind",
            "--model-family",
            "fam",
            "--stance",
            "A",
            "--endpoint",
            "link",
            "--org-key",
            org_key.to_str().expect("org key"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Exports until the record's last checkpoint meets the policy (both witnesses cosigned).
fn witnessed_export(c: &TlsCluster, root: &Path) -> (PathBuf, Value) {
    poll(
        "a record witnessed by both organisations",
        Duration::from_secs(30),
        || {
            let (path, v) = export(c, root)?;
            verify_policy(c, &path)
                .status
                .success()
                .then_some((path, v))
        },
    )
}

fn leader(c: &TlsCluster) -> usize {
    poll("an agreed leader", Duration::from_secs(30), || {
        let out = panel()
            .args(["coordinator", "status", "--addr", &c.addrs[0], "--tls"])
            .arg(c.pki.dir(pki::LOCAL_CLIENT))
            .output()
            .ok()?;
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v["leader_id"]
            .as_u64()
            .filter(|&l| l > 0)
            .map(|l| l as usize)
    })
}

#[test]
fn the_witnesses_follow_the_log_across_a_leader_change_and_one_entry_proves_itself() {
    let root = tempfile::tempdir().expect("tempdir");
    let (mut c, _witnesses, urls, extra) = start(root.path());
    // The charter alone is a record of one entry: checkpointed and cosigned by both.
    let (path, record) = witnessed_export(&c, root.path());
    let held = record["entries"].as_array().expect("entries").len() as u64;
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(one_organisation_cannot_sign_the_log(&c, &urls, held));
    let out = verify_policy(&c, &path);
    assert!(
        text(&out.stdout).contains("cosigned by northwind, southbank"),
        "{}",
        text(&out.stdout)
    );
    assert!(!record["entries"].as_array().expect("entries").is_empty());

    // One entry's proof, verified with the policy alone.
    let bundle = root.path().join("entry-0.tlog-proof");
    let out = cli(&c, &["proof", "0", "--out", bundle.to_str().expect("path")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let check = |b: &Path| {
        panel()
            .arg("verify-proof")
            .arg(b)
            .arg("--policy")
            .arg(c.pki.policy_path())
            .output()
            .expect("verify-proof")
    };
    let out = check(&bundle);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("entry 0 (AdoptCharter)"),
        "{}",
        text(&out.stdout)
    );
    // The same bundle with another entry in its extra line does not verify.
    let forged = std::fs::read_to_string(&bundle)
        .expect("bundle")
        .lines()
        .map(|l| {
            if let Some(b64) = l.strip_prefix("extra ") {
                use base64::Engine;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .expect("b64");
                let edited = String::from_utf8(raw)
                    .expect("utf8")
                    .replace("\"seq\":0", "\"seq\":0,\"x\":1");
                format!(
                    "extra {}",
                    base64::engine::general_purpose::STANDARD.encode(edited)
                )
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let forged_path = root.path().join("forged.tlog-proof");
    std::fs::write(&forged_path, forged).expect("write");
    let out = check(&forged_path);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    // The monitor follows the live cluster.
    let out = cli(
        &c,
        &[
            "monitor",
            "--rounds",
            "2",
            "--interval-ms",
            "200",
            "--policy",
            c.pki.policy_path().to_str().expect("p"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));

    // kill -9 the leader; the new one issues checkpoints for the new entries and pushes
    // them to the witnesses, which follow from the size they hold.
    register(&c, root.path(), "arb-before");
    let old = leader(&c);
    c.replicas[old - 1].kill();
    // Replica 2 is southbank's only one: without it no checkpoint has the quorum of
    // organisations the charter asks, so it comes back before the record can be witnessed.
    if old == 2 {
        let mut cmd = panel_tests::tls::replica_command(root.path(), &c.pki, 2, &c.addrs[1]);
        cmd.args(&extra);
        c.replicas[1] = ChildGuard::spawn("replica 2 (restarted)", cmd);
    }
    let survivors = TlsCluster {
        replicas: Vec::new(),
        addrs: c
            .addrs
            .iter()
            .enumerate()
            .filter(|(i, _)| i + 1 != old || old == 2)
            .map(|(_, a)| a.clone())
            .collect(),
        pki: c.pki.clone(),
    };
    register(&survivors, root.path(), "arb-after");
    let (path, record) = witnessed_export(&survivors, root.path());
    let entries = record["entries"].as_array().expect("entries").len();
    assert!(entries >= 3, "charter and two registrations: {entries}");
    let out = verify_policy(&survivors, &path);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cps = record["checkpoints"].as_array().expect("checkpoints");
    assert!(
        cps.len() >= 2,
        "checkpoints before and after the leader change"
    );
}
