//! A replica started from its config file (docs/coordinator/operations.md, "Configuration file"),
//! as real processes: a file with a misspelt key, a wrong type, inconsistent timeouts or a
//! missing key file stops the replica at start with the key named, before it listens; a
//! good file starts a replica that serves, and a flag overrides the file's key.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use panel_tests::{ChildGuard, free_port, panel, poll_until, test_motion_key_file};

fn config(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write config");
    path.display().to_string()
}

/// `panel coordinator run --config FILE ARGS`: exit code and stderr, for a replica that
/// must refuse to start.
fn refused(file: &str, args: &[&str]) -> String {
    let out = panel()
        .args(["coordinator", "run", "--config", file])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run panel");
    assert!(!out.status.success(), "the replica started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn good(dir: &Path, port: u16) -> String {
    let key = test_motion_key_file(dir);
    format!(
        "id = 1\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"r1\"\n\n[tls]\ninsecure_loopback = true\n\n\
         [keys]\nmotion_key = \"{}\"\n\n[raft]\nheartbeat_ms = 50\nelection_min_ms = 300\nelection_max_ms = 600\n",
        key.display()
    )
}

#[test]
fn bad_files_name_the_key_and_a_good_file_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let port = free_port();
    let body = good(d, port);

    let typo = config(d, "typo.toml", &body.replace("heartbeat_ms", "heartbeat"));
    let err = refused(&typo, &[]);
    assert!(
        err.contains("heartbeat") && err.contains("typo.toml"),
        "{err}"
    );

    let wrong = config(
        d,
        "type.toml",
        &body.replace("heartbeat_ms = 50", "heartbeat_ms = \"fast\""),
    );
    let err = refused(&wrong, &[]);
    assert!(err.contains("raft.heartbeat_ms"), "{err}");

    let inverted = config(
        d,
        "inverted.toml",
        &body.replace("election_max_ms = 600", "election_max_ms = 200"),
    );
    let err = refused(&inverted, &[]);
    assert!(
        err.contains("raft.election_min_ms") && err.contains("200"),
        "{err}"
    );

    let nokey = config(
        d,
        "nokey.toml",
        &body.replace(
            &test_motion_key_file(d).display().to_string(),
            "missing.key",
        ),
    );
    let err = refused(&nokey, &[]);
    assert!(
        err.contains("keys.motion_key") && err.contains("motion-keygen"),
        "{err}"
    );

    // The flag overrides the file: the same inverted file with a sane --election-max-ms
    // gets past the check (and is then stopped by a missing id, given as a flag of 0).
    let err = refused(&inverted, &["--election-max-ms", "900", "--id", "0"]);
    assert!(
        err.contains("id = 0") && err.contains("start at 1"),
        "{err}"
    );

    // A good file, with --listen overriding the file's port: the replica answers there.
    let file = config(
        d,
        "replica.toml",
        &body.replace(&format!("127.0.0.1:{port}"), "127.0.0.1:1"),
    );
    let other = free_port();
    let listen = format!("127.0.0.1:{other}");
    let mut cmd = panel();
    cmd.args(["coordinator", "run", "--config", &file, "--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _replica = ChildGuard::spawn("replica", cmd);
    poll_until(
        "the replica answers on the flag's address",
        Duration::from_secs(30),
        || {
            let out = panel()
                .args(["coordinator", "status", "--addr", &listen])
                .output()
                .ok()?;
            out.status.success().then_some(())
        },
    );
    assert!(
        d.join("r1").is_dir(),
        "data_dir was not taken from the file's folder"
    );
}
