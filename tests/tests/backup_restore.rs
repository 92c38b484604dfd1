//! Backup and restore with real processes (docs/coordinator/storage.md, "Backup, restore and a
//! lost quorum"): a three-replica group writes entries on the record, a hot backup is
//! taken from a follower while it serves, every replica is killed and its data deleted,
//! and `panel coordinator run --restore` brings the record back as a group of one. The
//! restored record verifies offline (`panel export` + `panel verify`) and holds every
//! entry acknowledged before the backup; the group takes new writes and a new member.
//! A restore into a non-empty data directory is refused. Prints the restore time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use panel_tests::{
    ChildGuard, free_port, init_cluster, loopback_addrs, panel, test_motion_key_file,
};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

fn run(args: &[&str]) -> Output {
    panel().args(args).output().expect("run panel")
}

fn ok_json(args: &[&str]) -> Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "panel {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("panel {args:?}: {e}"))
}

fn poll<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    panel_tests::poll_until(what, DEADLINE, f)
}

fn status(addr: &str) -> Option<Value> {
    let out = run(&["coordinator", "status", "--addr", addr]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// The log key every replica here signs checkpoints with (an unchartered group keeps
/// its own in the data directory otherwise, which a restore into a new one would lose).
fn log_key_file(root: &Path) -> PathBuf {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = root.join("log.key");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    f.write_all(&[0x6c; 32]).unwrap();
    path
}

/// A test replica (as `panel_tests::replica_command`, with the shared log key) on `data`.
fn replica(root: &Path, id: usize, addr: &str, data: &Path, extra: &[&str]) -> Command {
    let mut cmd = panel();
    cmd.args([
        "coordinator",
        "run",
        "--insecure-loopback",
        "--test-commands",
    ])
    .args(["--id", &id.to_string(), "--listen", addr])
    .arg("--motion-key")
    .arg(test_motion_key_file(root))
    .arg("--log-key")
    .arg(root.join("log.key"))
    .arg("--data-dir")
    .arg(data)
    .args(["--heartbeat-ms", "50", "--election-min-ms", "300"])
    .args(["--election-max-ms", "600"])
    .args(extra)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    cmd
}

fn write(addrs: &str, request_id: u64, command: &Value) -> Value {
    ok_json(&[
        "coordinator",
        "write",
        "--addr",
        addrs,
        "--client-id",
        "backup-test",
        "--request-id",
        &request_id.to_string(),
        "--command",
        &command.to_string(),
    ])
}

fn registration(i: u8) -> Value {
    let key = ed25519_dalek::SigningKey::from_bytes(&[i + 1; 32]).verifying_key();
    json!({ "RegisterArbiter": {
        "arbiter_id": format!("arb-{i}"),
        "public_key": hex::encode(key.to_bytes()),
        "organisation": if i.is_multiple_of(2) { "northwind" } else { "southwind" },
        "model_family": format!("m{}", i % 3),
        "stance": if i.is_multiple_of(2) { "A" } else { "B" },
    }})
}

/// `panel export` from `addr` into `out`, then `panel verify` of the file; returns the
/// exported record.
fn export_and_verify(addr: &str, out: &Path) -> Value {
    let out_s = out.to_str().unwrap();
    ok_json(&["export", "--addr", addr, "--out", out_s, "--json"]);
    let verified = run(&["verify", out_s]);
    assert!(
        verified.status.success(),
        "panel verify {out_s}: {}\n{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap()
}

#[test]
fn backup_survives_losing_every_replica_and_restores_as_a_new_group() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    log_key_file(root);
    let addrs = loopback_addrs(3);
    let all = addrs.join(",");
    let mut replicas: Vec<ChildGuard> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let data = root.join(format!("r{}", i + 1));
            ChildGuard::spawn(
                format!("replica {}", i + 1),
                replica(root, i + 1, a, &data, &["--checkpoint-every-entries", "4"]),
            )
        })
        .collect();
    init_cluster(&addrs);

    // Entries on the record (registrations, admissions), a few notes besides.
    let mut acked = Vec::new();
    for i in 0..12u8 {
        let r = write(&all, u64::from(i) + 1, &registration(i));
        assert_eq!(r["applied"], true, "{r}");
        acked.push(r["log_index"].as_u64().unwrap());
        let admit = json!({"SetAdmission": {"arbiter_id": format!("arb-{i}"), "admitted": true, "score_milli": 800}});
        assert_eq!(write(&all, 100 + u64::from(i), &admit)["applied"], true);
        let note = json!({"Note": {"topic": "t", "text": format!("note-{i}")}});
        assert_eq!(write(&all, 200 + u64::from(i), &note)["applied"], true);
    }
    let before = export_and_verify(&addrs[0], &root.join("before.json"));
    let entries_before = before["entries"].as_array().unwrap().clone();
    assert!(entries_before.len() >= 24, "{}", entries_before.len());

    // A hot backup from a follower while the group serves.
    let leader = poll("a leader", || {
        status(&addrs[0]).and_then(|s| s["leader_id"].as_u64())
    });
    let follower = addrs[(leader as usize) % 3].clone();
    let file = root.join("group.backup");
    let b = ok_json(&[
        "coordinator",
        "backup",
        "--addr",
        &follower,
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(b["linearizable"], true, "{b}");
    assert!(
        b["last_log_index"].as_u64().unwrap() >= *acked.last().unwrap(),
        "{b}"
    );
    assert_eq!(
        b["record_entries"].as_u64().unwrap() as usize,
        entries_before.len()
    );
    assert!(b["checkpoints"].as_u64().unwrap() >= 1, "{b}");
    println!("backup: {b}");
    // A second backup never overwrites the first.
    let again = run(&[
        "coordinator",
        "backup",
        "--addr",
        &follower,
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("never overwrites"));

    // The whole group is lost: every replica killed, every data directory deleted.
    for r in &mut replicas {
        r.kill();
    }
    for i in 1..=3 {
        std::fs::remove_dir_all(root.join(format!("r{i}"))).unwrap();
    }

    // A restore into a non-empty data directory is refused, naming the flag and the fix.
    let busy = root.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("log.redb"), b"old").unwrap();
    let new_addr = format!("127.0.0.1:{}", free_port());
    let file_s = file.to_str().unwrap();
    let refused = replica(root, 1, &new_addr, &busy, &["--restore", file_s])
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--restore needs an empty --data-dir"), "{err}");
    assert_eq!(std::fs::read(busy.join("log.redb")).unwrap(), b"old");

    // Restore: a new group of one from the file, timed until it answers a linearizable
    // read with everything the backup held.
    let started = Instant::now();
    let restored_dir = root.join("restored");
    let mut restored = ChildGuard::spawn(
        "restored replica 1",
        replica(root, 1, &new_addr, &restored_dir, &["--restore", file_s]),
    );
    let backup_index = b["last_log_index"].as_u64().unwrap();
    poll("the restored replica to lead", || {
        status(&new_addr).filter(|s| {
            s["leader_id"] == json!(1) && s["last_applied"].as_u64() > Some(backup_index)
        })
    });
    let q = json!({"Notes": {"topic": "t"}}).to_string();
    let notes = poll("a linearizable read", || {
        let out = run(&["coordinator", "read", "--addr", &new_addr, "--query", &q]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).ok())
            .flatten()
    });
    let restore_time = started.elapsed();
    assert_eq!(
        notes["result"]["notes"].as_array().unwrap().len(),
        12,
        "{notes}"
    );
    println!(
        "restore time: {} ms (process start to a linearizable read, {} bytes, {} record entries)",
        restore_time.as_millis(),
        b["bytes"],
        b["record_entries"]
    );

    // The record is intact: it verifies, and every entry exported before is there, the same.
    let after = export_and_verify(&new_addr, &root.join("after.json"));
    let entries_after = after["entries"].as_array().unwrap();
    assert!(entries_after.len() >= entries_before.len());
    assert_eq!(
        &entries_after[..entries_before.len()],
        entries_before.as_slice()
    );
    assert_eq!(after["arbiters"], before["arbiters"]);

    // A retried write is still answered from the deduplication table, not applied again.
    let retry = write(&new_addr, 1, &registration(0));
    assert_eq!(retry["duplicate"], true, "{retry}");
    // The group takes new writes, and new members as usual.
    assert_eq!(write(&new_addr, 1000, &registration(40))["applied"], true);
    let second = format!("127.0.0.1:{}", free_port());
    let mut member = ChildGuard::spawn(
        "replica 2 (new member)",
        replica(root, 2, &second, &root.join("m2"), &[]),
    );
    poll("add-learner", || {
        let out = run(&[
            "coordinator",
            "add-learner",
            "--addr",
            &new_addr,
            "--id",
            "2",
            "--member-addr",
            &second,
        ]);
        out.status.success().then_some(())
    });
    ok_json(&[
        "coordinator",
        "change-membership",
        "--addr",
        &new_addr,
        "--voters",
        "1,2",
    ]);
    let on_member = poll("the new member's state", || {
        let out = run(&[
            "coordinator",
            "read",
            "--addr",
            &second,
            "--query",
            &q,
            "--local",
        ]);
        serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .filter(|v| v["result"]["notes"].as_array().map(Vec::len) == Some(12))
    });
    assert_eq!(on_member["result"]["notes"][11]["text"], "note-11");
    member.kill();
    restored.kill();
}
