//! Coordinator replicas as separate `panel coordinator run` processes on loopback:
//! election, writes through a follower, `kill -9` of the leader mid-load (exactly-once),
//! restart of every replica, snapshot catch-up of a lagging replica, membership changes.
//! Nothing here asserts a timing; waits poll with generous deadlines.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use panel_tests::{ChildGuard, free_port, panel};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

struct Replica {
    id: u64,
    addr: String,
    dir: PathBuf,
    extra: Vec<String>,
    guard: Option<ChildGuard>,
}

impl Replica {
    fn new(id: u64, root: &Path, extra: &[&str]) -> Self {
        let mut r = Self {
            id,
            addr: format!("127.0.0.1:{}", free_port()),
            dir: root.join(format!("r{id}")),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            guard: None,
        };
        r.start();
        r
    }

    fn start(&mut self) {
        let mut cmd = panel();
        cmd.args([
            "coordinator",
            "run",
            "--insecure-loopback",
            "--id",
            &self.id.to_string(),
        ])
        .arg("--test-commands")
        .args(["--listen", &self.addr])
        .arg("--data-dir")
        .arg(&self.dir)
        .args(panel_tests::FAST_RAFT)
        .args(&self.extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        self.guard = Some(ChildGuard::spawn(format!("replica {}", self.id), cmd));
    }

    /// SIGKILL: no shutdown path runs.
    fn kill9(&mut self) {
        if let Some(mut g) = self.guard.take() {
            g.kill();
        }
    }
}

fn run(args: &[&str]) -> Output {
    panel().args(args).output().expect("run panel")
}

fn run_json(args: &[&str]) -> Result<Value, String> {
    let out = run(args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {:?}", out.stdout))
}

fn status(addr: &str) -> Option<Value> {
    run_json(&["coordinator", "status", "--addr", addr]).ok()
}

fn poll<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    panel_tests::poll_until(what, DEADLINE, f)
}

/// The leader's id once every live replica agrees on it.
fn agreed_leader(replicas: &[&Replica]) -> u64 {
    poll("an agreed leader", || {
        let leaders: Vec<Option<u64>> = replicas
            .iter()
            .map(|r| status(&r.addr).and_then(|s| s["leader_id"].as_u64()))
            .collect();
        match leaders.first() {
            Some(Some(l)) if leaders.iter().all(|x| *x == Some(*l)) => Some(*l),
            _ => None,
        }
    })
}

fn init(replicas: &[&Replica]) {
    let mut args = vec![
        "coordinator".to_string(),
        "init".into(),
        "--addr".into(),
        replicas[0].addr.clone(),
    ];
    for r in replicas {
        args.push("--member".into());
        args.push(format!("{}={}", r.id, r.addr));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    poll("init to succeed", || run_json(&args).ok());
}

fn write_note(addrs: &str, client: &str, req: u64, topic: &str, text: &str) -> Value {
    let cmd = json!({ "Note": { "topic": topic, "text": text } }).to_string();
    run_json(&[
        "coordinator",
        "write",
        "--addr",
        addrs,
        "--client-id",
        client,
        "--request-id",
        &req.to_string(),
        "--command",
        &cmd,
    ])
    .unwrap_or_else(|e| panic!("write failed: {e}"))
}

fn notes(addr: &str, topic: &str) -> Option<Vec<String>> {
    let q = json!({ "Notes": { "topic": topic } }).to_string();
    let v = run_json(&["coordinator", "read", "--addr", addr, "--query", &q]).ok()?;
    Some(
        v["result"]["notes"]
            .as_array()?
            .iter()
            .map(|n| n["text"].as_str().unwrap_or_default().to_owned())
            .collect(),
    )
}

fn cluster3(root: &Path, extra: &[&str]) -> Vec<Replica> {
    let rs: Vec<Replica> = (1..=3).map(|id| Replica::new(id, root, extra)).collect();
    init(&rs.iter().collect::<Vec<_>>());
    rs
}

fn all_addrs(rs: &[Replica]) -> String {
    rs.iter()
        .map(|r| r.addr.clone())
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn coord_election_and_write_through_follower() {
    let tmp = tempfile::tempdir().unwrap();
    let rs = cluster3(tmp.path(), &[]);
    let leader = agreed_leader(&rs.iter().collect::<Vec<_>>());
    let follower = rs.iter().find(|r| r.id != leader).unwrap();
    let s = status(&follower.addr).unwrap();
    assert_eq!(s["role"], "Follower");
    assert_eq!(s["voters"], json!([1, 2, 3]));

    // The follower forwards to the leader and returns the leader's result.
    let v = write_note(&follower.addr, "c1", 1, "t", "through-follower");
    assert_eq!(v["applied"], true, "{v}");
    assert_eq!(v["duplicate"], false);
    // Every replica applies it.
    for r in &rs {
        poll("the note on every replica", || {
            notes(&r.addr, "t").filter(|n| n == &vec!["through-follower".to_string()])
        });
    }
    // A retry with the same request id is answered from the record, not applied again.
    let again = write_note(&follower.addr, "c1", 1, "t", "through-follower");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["log_index"], v["log_index"]);
    assert_eq!(notes(&rs[0].addr, "t").unwrap().len(), 1);

    // Malformed input is refused with a message naming the problem.
    let out = run(&[
        "coordinator",
        "write",
        "--addr",
        &follower.addr,
        "--request-id",
        "9",
        "--command",
        "{\"Nope\":1}",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Command"));
    // A command the state machine refuses is refused on the record, deterministically.
    let bad_key = json!({ "RegisterArbiter": {
        "arbiter_id": "x", "public_key": "00", "organisation": "o",
        "model_family": "f", "stance": "A" } })
    .to_string();
    let v = run_json(&[
        "coordinator",
        "write",
        "--addr",
        &follower.addr,
        "--request-id",
        "10",
        "--command",
        &bad_key,
    ])
    .unwrap();
    assert_eq!(v["applied"], false);
    assert!(
        v["result"]["message"]
            .as_str()
            .unwrap()
            .contains("public key")
    );
}

#[test]
fn coord_leader_kill9_mid_load_applies_each_write_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rs = cluster3(tmp.path(), &[]);
    let leader = agreed_leader(&rs.iter().collect::<Vec<_>>());
    let addrs = all_addrs(&rs);
    let survivor = rs.iter().find(|r| r.id != leader).unwrap().addr.clone();

    let count = 150u64;
    let mut load = panel();
    load.args([
        "coordinator",
        "load",
        "--addr",
        &addrs,
        "--client-id",
        "loader",
    ])
    .args(["--topic", "load", "--count", &count.to_string()])
    .stdout(std::process::Stdio::piped());
    let mut writer = ChildGuard::spawn("writer", load);

    // Kill the leader once the load is under way.
    poll("the load to start", || {
        notes(&survivor, "load").filter(|n| n.len() >= 30)
    });
    rs.iter_mut().find(|r| r.id == leader).unwrap().kill9();

    let child = writer.child_mut().unwrap();
    let status = poll("the writer to finish", || child.try_wait().ok().flatten());
    assert!(status.success(), "the writer gave up");

    let live: Vec<&Replica> = rs.iter().filter(|r| r.guard.is_some()).collect();
    let new_leader = agreed_leader(&live);
    assert_ne!(new_leader, leader, "a surviving replica leads");
    let expected: Vec<String> = (1..=count).map(|i| format!("loader-{i}")).collect();
    for r in &live {
        let got = poll("all notes on the survivors", || {
            notes(&r.addr, "load").filter(|n| n.len() >= count as usize)
        });
        // Exactly once and in order: no write lost, none applied twice by the retries.
        assert_eq!(got, expected);
    }
}

#[test]
fn coord_restart_all_replicas_keeps_state() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rs = cluster3(tmp.path(), &[]);
    agreed_leader(&rs.iter().collect::<Vec<_>>());
    let addrs = all_addrs(&rs);
    for i in 1..=20 {
        write_note(&addrs, "c", i, "keep", &format!("n{i}"));
    }
    for r in rs.iter_mut() {
        r.kill9();
    }
    for r in rs.iter_mut() {
        r.start();
    }
    agreed_leader(&rs.iter().collect::<Vec<_>>());
    for r in &rs {
        let got = poll("notes after restart", || {
            notes(&r.addr, "keep").filter(|n| n.len() == 20)
        });
        assert_eq!(got[19], "n20");
    }
    // The group still takes writes, and old request ids are still deduplicated.
    let v = write_note(&addrs, "c", 20, "keep", "n20");
    assert_eq!(v["duplicate"], true);
    let v = write_note(&addrs, "c", 21, "keep", "n21");
    assert_eq!(v["applied"], true);
    assert_eq!(v["duplicate"], false);
}

#[test]
fn coord_lagging_replica_catches_up_through_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = ["--snapshot-logs", "20", "--keep-logs", "0"];
    let mut rs = cluster3(tmp.path(), &snap);
    let leader = agreed_leader(&rs.iter().collect::<Vec<_>>());
    // Stop a follower, then write enough for snapshots and log purges past its position.
    let lag_idx = rs.iter().position(|r| r.id != leader).unwrap();
    rs[lag_idx].kill9();
    let live_addrs: String = rs
        .iter()
        .filter(|r| r.guard.is_some())
        .map(|r| r.addr.clone())
        .collect::<Vec<_>>()
        .join(",");
    for i in 1..=80 {
        write_note(&live_addrs, "c", i, "snap", &format!("s{i}"));
    }
    let leader_addr = rs.iter().find(|r| r.id == leader).unwrap().addr.clone();
    let s = poll("a snapshot and a purge on the leader", || {
        status(&leader_addr).filter(|s| s["purged_index"].as_u64().unwrap_or(0) > 40)
    });
    assert!(s["snapshot_index"].as_u64().unwrap() > 40, "{s}");

    rs[lag_idx].start();
    let lagging = rs[lag_idx].addr.clone();
    let s = poll("the lagging replica to install a snapshot", || {
        status(&lagging).filter(|s| s["snapshot_index"].as_u64().unwrap_or(0) > 40)
    });
    assert!(s["last_applied"].as_u64().unwrap() > 40, "{s}");
    let got = poll("all notes on the caught-up replica", || {
        notes(&lagging, "snap").filter(|n| n.len() == 80)
    });
    assert_eq!(got[0], "s1");
    assert_eq!(got[79], "s80");

    // Its state survives its own restart too (snapshot + state tables are durable).
    rs[lag_idx].kill9();
    rs[lag_idx].start();
    poll("notes after the caught-up replica restarts", || {
        notes(&lagging, "snap").filter(|n| n.len() == 80)
    });
}

#[test]
fn coord_membership_add_learner_promote_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let rs = cluster3(tmp.path(), &["--snapshot-logs", "10", "--keep-logs", "0"]);
    agreed_leader(&rs.iter().collect::<Vec<_>>());
    let addrs = all_addrs(&rs);
    for i in 1..=30 {
        write_note(&addrs, "c", i, "m", &format!("m{i}"));
    }
    let r4 = Replica::new(4, tmp.path(), &[]);
    run_json(&[
        "coordinator",
        "add-learner",
        "--addr",
        &rs[1].addr,
        "--id",
        "4",
        "--member-addr",
        &r4.addr,
    ])
    .unwrap();
    let s = status(&rs[0].addr).unwrap();
    assert_eq!(s["learners"], json!([4]));
    // The learner received the state (through a snapshot: the log was purged).
    poll("the learner to catch up", || {
        notes(&r4.addr, "m").filter(|n| n.len() == 30)
    });

    // Promote 4 and remove 3 in one change.
    run_json(&[
        "coordinator",
        "change-membership",
        "--addr",
        &rs[2].addr,
        "--voters",
        "1,2,4",
    ])
    .unwrap();
    let s = poll("the new voter set", || {
        status(&r4.addr).filter(|s| s["voters"] == json!([1, 2, 4]))
    });
    assert_eq!(s["learners"], json!([]));
    let v = write_note(&r4.addr, "c", 31, "m", "after-change");
    assert_eq!(v["applied"], true);
    poll("the write on the promoted replica", || {
        notes(&r4.addr, "m").filter(|n| n.len() == 31)
    });
}

#[test]
fn coord_bad_cli_input_is_named() {
    let out = run(&[
        "coordinator",
        "init",
        "--addr",
        "127.0.0.1:1",
        "--member",
        "one",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ID=HOST:PORT"));
    let out = run(&[
        "coordinator",
        "read",
        "--addr",
        "127.0.0.1:1",
        "--query",
        "{\"Bogus\":{}}",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Query"));
}
