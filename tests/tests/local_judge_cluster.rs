//! A node whose judge is a real model in its own process (`judge.kind = "local"`, Gemma 3
//! 270M) takes part in a chartered cluster over mutual TLS: three replicas under the
//! federation's charter, the node registered with its signature and its organisation's
//! endorsement, the leader's sealed exam sitting put to it over TLS. The exam is scored from
//! the model's own answers (whatever they are: admission is not asserted), and every
//! answer on the record is signed as a local-judge ruling with its reading.
//!
//! The model file comes from scripts/models.sh, which `bash scripts/test` runs; a missing
//! file fails the test unless `PANEL_SKIP_MISSING=1`.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use panel_tests::tls::{TlsCluster, issue, start_issued};
use panel_tests::{ChildGuard, free_port, panel};
use panel_transport::pki;
use serde_json::Value;

fn gemma() -> Option<PathBuf> {
    let dir = panel_node::judge::models_dir(None);
    let path = dir.join("gemma3-270m-q4_k_m.gguf");
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("PANEL_SKIP_MISSING").as_deref() == Ok("1"),
        "{} is missing: run `bash scripts/test` (it fetches the models with scripts/models.sh), or set PANEL_SKIP_MISSING=1 to skip this test",
        path.display()
    );
    eprintln!("skipping: {} not found (scripts/models.sh)", path.display());
    None
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

fn json(c: &TlsCluster, args: &[&str]) -> Option<Value> {
    let out = cli(c, args);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

fn poll<T>(what: &str, limit: Duration, log: &Path, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "{what}: not within {} s; node log:\n{}",
            limit.as_secs(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_local_model_node_sits_the_sealed_exam_over_mutual_tls() {
    let Some(model) = gemma() else { return };
    let root = tempfile::tempdir().unwrap();
    let issued = issue(root.path(), &[("arb-gemma", "northwind")]);
    // The sitting is scored when its window closes. The model answers an item in about
    // two seconds on this machine kind under load: 300 s fit most of the 72 drawn items,
    // and an item it did not reach counts as missing, not as a failure of this test.
    let c = start_issued(
        root.path(),
        issued,
        &["--exam-window-ms".into(), "300000".into()],
    );
    let none = root.path().join("none.log");
    poll(
        "the group is chartered",
        Duration::from_secs(60),
        &none,
        || json(&c, &["arbiter", "list", "--json"]),
    );

    let dir = root.path().join("node");
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("arbiter.key");
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let port = free_port();
    std::fs::write(
        dir.join("node.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
             organisation = \"northwind\"\nmodel_family = \"gemma\"\ncoordinator_keys = [\"{motion}\"]\n\n\
             [judge]\nkind = \"local\"\nmodel = \"{model}\"\nrationale_tokens = 4\n\n\
             [transport]\ntls = \"{tls}\"\ncharter = \"{charter}\"\n",
            motion = c.pki.charter.motion_key,
            model = model.display(),
            tls = c.pki.dir(&pki::node_dir_name("arb-gemma")).display(),
            charter = c.pki.charter_path().display(),
        ),
    )
    .unwrap();
    let log = root.path().join("node.log");
    // `panel node run`, from a binary with the model engine built in (its doc says why).
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_panel-local-node"));
    cmd.arg(dir.join("node.toml"))
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let node = ChildGuard::spawn("local node", cmd);

    // Registered with the arbiter's own signature and the organisation's endorsement.
    let north = c.pki.signing_key_path("northwind");
    let endpoint = format!("https://127.0.0.1:{port}");
    let out = cli(
        &c,
        &[
            "arbiter",
            "register",
            "--id",
            "arb-gemma",
            "--key-file",
            key.to_str().unwrap(),
            "--organisation",
            "northwind",
            "--model-family",
            "gemma",
            "--stance",
            "A",
            "--endpoint",
            &endpoint,
            "--org-key",
            north.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "register: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut node = node;
    let shown = poll(
        "the local node's exam is scored",
        Duration::from_secs(720),
        &log,
        || {
            // A node that stopped (a binary without the local judge, a model that does not
            // load) fails the test now, with its log.
            if let Some(status) = node.child_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!(
                    "the local node exited ({status}):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            json(&c, &["arbiter", "show", "arb-gemma", "--json"])
                .filter(|a| !a["exam"].is_null() && !a["exam"]["scores"].is_null())
        },
    );
    let scores = &shown["exam"]["scores"];
    let answered = scores["answered"].as_u64().unwrap_or(0);
    assert!(answered > 0, "no answer was scored: {shown}");
    // Scored from the model's own answers: a real forecast is never exactly the gold.
    let brier = scores["binary"]["brier"].as_f64().expect("binary scores");
    assert!(brier > 0.0 && brier < 1.0, "brier {brier}: {shown}");

    // Every exam answer on the record is a signed ruling of the local judge, with its
    // next-token reading.
    let text = serde_json::to_string(&shown).unwrap();
    assert!(
        !text.contains("\"judge_kind\":\"scripted\"") && !text.contains("\"kind\":\"scripted\""),
        "{text}"
    );
    let node_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        node_log.contains("judge=local"),
        "the node did not run its local judge:\n{node_log}"
    );
}
