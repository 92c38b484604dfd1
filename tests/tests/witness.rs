//! `panel witness run` as a real process on a real socket (docs/WITNESS.md): the
//! tlog-witness status codes, cosignatures that verify under the printed vkey, the
//! monitoring endpoint, state that survives `kill -9`, a corrupt state file that stops the
//! start, startup errors that name the flag, concurrent submissions that cannot roll the
//! size back, and the client the coordinator uses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use panel_tests::{ChildGuard, free_port, panel};
use panel_tlog::merkle::Log;
use panel_tlog::witness::{AddCheckpoint, parse_cosignatures};
use panel_tlog::{Checkpoint, Note, NoteSigner, VerifierKey};
use panel_witness::SubmitError;
use sha2::{Digest, Sha256};

const ORIGIN: &str = "panel.test/log";
const WITNESS: &str = "witness.test/w1";

fn log_signer() -> NoteSigner {
    NoteSigner::new(ORIGIN, SigningKey::from_bytes(&[7; 32])).unwrap()
}

fn log_of(n: u64) -> Log {
    let mut l = Log::new();
    for i in 0..n {
        l.append(format!("entry {i}").as_bytes());
    }
    l
}

fn signed(signer: &NoteSigner, size: u64, root: panel_tlog::Hash) -> Note {
    let cp = Checkpoint::new(signer.name(), size, root);
    let mut note = Note::new(cp.body()).unwrap();
    note.add(signer.sign(&note.text));
    note
}

fn request(old: u64, log: &Log, signer: &NoteSigner, size: u64) -> AddCheckpoint {
    AddCheckpoint {
        old_size: old,
        proof: if old == 0 {
            vec![]
        } else {
            log.consistency_proof(old, size).unwrap()
        },
        checkpoint: signed(signer, size, log.root_at(size).expect("root")),
    }
}

struct Reply {
    status: u16,
    content_type: String,
    body: String,
}

/// One HTTP/1.1 exchange over a fresh connection, written by hand so the test checks the
/// bytes on the wire, not our client.
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> Reply {
    http_raw(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ),
        body,
    )
}

fn http_raw(addr: &str, head: &str, body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    Reply {
        status,
        content_type,
        body: body.to_string(),
    }
}

fn submit(addr: &str, req: &AddCheckpoint) -> Reply {
    http(addr, "POST", "/add-checkpoint", req.to_body().as_bytes())
}

fn monitoring_path(origin: &str) -> String {
    format!("/{}/checkpoint", hex_sha256(origin))
}

fn hex_sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn keygen(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("witness.key");
    let out = panel()
        .args(["witness", "keygen", "--name", WITNESS, "--key"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        key,
        String::from_utf8(out.stdout).unwrap().trim().to_string(),
    )
}

fn run_command(data: &Path, key: &Path, port: u16, logs: &[String]) -> std::process::Command {
    let mut cmd = panel();
    cmd.args(["witness", "run", "--name", WITNESS])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--data")
        .arg(data)
        .arg("--key")
        .arg(key);
    for l in logs {
        cmd.args(["--log", l]);
    }
    cmd
}

struct Witness {
    guard: ChildGuard,
    addr: String,
    vkey: VerifierKey,
}

/// Starts `panel witness run` and waits for it to print its vkey and address.
fn start(data: &Path, key: &Path, logs: &[String]) -> Witness {
    let port = free_port();
    let stderr = std::fs::File::create(data.with_extension(format!("{port}.stderr"))).unwrap();
    let mut cmd = run_command(data, key, port, logs);
    cmd.stdout(Stdio::piped()).stderr(stderr);
    let mut guard = ChildGuard::spawn("witness", cmd);
    let stdout = guard.child_mut().unwrap().stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let vkey_line = lines.next().expect("a vkey line").unwrap();
    let addr_line = lines.next().expect("an address line").unwrap();
    let vkey = VerifierKey::parse(vkey_line.strip_prefix("witness vkey: ").unwrap()).unwrap();
    let addr = addr_line
        .strip_prefix("witness listening on http://")
        .unwrap()
        .to_string();
    assert_eq!(addr, format!("127.0.0.1:{port}"));
    Witness { guard, addr, vkey }
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let (key, vkey) = keygen(dir.path());
    let data = dir.path().join("data");
    (
        dir,
        data,
        key,
        vkey,
        vec![log_signer().verifier().to_string()],
    )
}

/// Checks that `body` (a 200's) holds one cosignature by `vkey` over `note`'s text.
fn assert_cosigned(body: &str, note: &Note, vkey: &VerifierKey) {
    let lines = parse_cosignatures(body).unwrap();
    assert_eq!(lines.len(), 1, "{body}");
    let mut cosigned = Note::new(note.text.clone()).unwrap();
    cosigned.add(lines[0].clone());
    assert_eq!(
        cosigned.verify(std::slice::from_ref(vkey)).unwrap().len(),
        1
    );
}

#[test]
fn a_witness_follows_a_log_and_answers_every_refusal_with_the_spec_status() {
    let (_dir, data, key, printed, logs) = setup();
    let w = start(&data, &key, &logs);
    assert_eq!(w.vkey.to_string(), printed, "keygen and run print one vkey");
    assert_eq!(w.vkey.sig_type, panel_tlog::note::TYPE_COSIGNATURE_V1);
    let s = log_signer();
    let log = log_of(20);

    assert_eq!(
        http(&w.addr, "GET", &monitoring_path(ORIGIN), b"").status,
        404,
        "nothing cosigned yet"
    );
    // From size 0: 200 and a cosignature that verifies under the printed vkey.
    let first = request(0, &log, &s, 8);
    let r = submit(&w.addr, &first);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.content_type.starts_with("text/plain"),
        "{}",
        r.content_type
    );
    assert_cosigned(&r.body, &first.checkpoint, &w.vkey);

    // A stale old size: 409 with the size held, as text/x.tlog.size.
    let stale = request(5, &log, &s, 20);
    let r = submit(&w.addr, &stale);
    assert_eq!((r.status, r.body.as_str()), (409, "8\n"));
    assert_eq!(r.content_type, "text/x.tlog.size");

    // A rewritten history: a proof from 8 that does not hold for the edited tree, 422.
    let mut forged = Log::new();
    for i in 0..20u64 {
        let e = if i == 3 {
            "edited".to_string()
        } else {
            format!("entry {i}")
        };
        forged.append(e.as_bytes());
    }
    let rewritten = AddCheckpoint {
        old_size: 8,
        proof: forged.consistency_proof(8, 20).unwrap(),
        checkpoint: signed(&s, 20, forged.root_at(20).expect("root")),
    };
    assert_eq!(submit(&w.addr, &rewritten).status, 422);

    // The genuine extension with its proof: 200.
    let next = request(8, &log, &s, 20);
    let r = submit(&w.addr, &next);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_cosigned(&r.body, &next.checkpoint, &w.vkey);

    // Same size, another root: 422 (a split view).
    let split = AddCheckpoint {
        old_size: 20,
        proof: vec![],
        checkpoint: signed(&s, 20, forged.root_at(20).expect("root")),
    };
    let r = submit(&w.addr, &split);
    assert_eq!(r.status, 422, "{}", r.body);

    // Another key for the known origin: 403. An unknown origin: 404.
    let intruder = NoteSigner::new(ORIGIN, SigningKey::from_bytes(&[8; 32])).unwrap();
    let r = submit(&w.addr, &request(20, &log, &intruder, 20));
    assert_eq!(r.status, 403, "{}", r.body);
    let stranger = NoteSigner::new("elsewhere.test/log", SigningKey::from_bytes(&[9; 32])).unwrap();
    let r = submit(&w.addr, &request(0, &log, &stranger, 4));
    assert_eq!(r.status, 404, "{}", r.body);

    // Malformed and oversized bodies; wrong method and path.
    assert_eq!(
        http(&w.addr, "POST", "/add-checkpoint", b"hello\n").status,
        400
    );
    assert_eq!(
        http(&w.addr, "POST", "/add-checkpoint", &[0xff; 300]).status,
        400
    );
    let huge = http_raw(
        &w.addr,
        &format!(
            "POST /add-checkpoint HTTP/1.1\r\nHost: {}\r\nContent-Length: 100000\r\n\r\n",
            w.addr
        ),
        b"",
    );
    assert_eq!(huge.status, 413);
    let r = http(
        &w.addr,
        "POST",
        "/add-checkpoint",
        &vec![b'a'; 64 * 1024 + 1],
    );
    assert_eq!(r.status, 413);
    assert_eq!(http(&w.addr, "GET", "/add-checkpoint", b"").status, 405);
    assert_eq!(http(&w.addr, "GET", "/nothing", b"").status, 404);

    // Monitoring: the latest cosigned checkpoint, with the log's signature and ours.
    let r = http(&w.addr, "GET", &monitoring_path(ORIGIN), b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let note = Note::parse(r.body.as_bytes()).unwrap();
    assert_eq!(Checkpoint::parse_body(&note.text).unwrap().size, 20);
    assert_eq!(note.text, next.checkpoint.text);
    note.verify(&[s.verifier()]).unwrap();
    note.verify(std::slice::from_ref(&w.vkey)).unwrap();
    assert_eq!(note.signatures.len(), 2);
    assert_eq!(
        http(&w.addr, "GET", &monitoring_path("elsewhere.test/log"), b"").status,
        404
    );
    drop(w.guard);
}

#[test]
fn a_witness_killed_mid_stream_restarts_holding_its_last_size() {
    let (_dir, data, key, _, logs) = setup();
    let mut w = start(&data, &key, &logs);
    let log = Arc::new(log_of(5000));
    let acked = Arc::new(AtomicU64::new(0));
    let stream = {
        let (addr, log, acked) = (w.addr.clone(), log.clone(), acked.clone());
        std::thread::spawn(move || {
            let s = log_signer();
            for size in 1..5000 {
                let req = request(size - 1, &log, &s, size);
                let Ok(mut c) = TcpStream::connect(&addr) else {
                    return;
                };
                let body = req.to_body();
                let head = format!(
                    "POST /add-checkpoint HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let mut raw = Vec::new();
                if c.write_all(head.as_bytes()).is_err()
                    || c.write_all(body.as_bytes()).is_err()
                    || c.read_to_end(&mut raw).is_err()
                    || !raw.starts_with(b"HTTP/1.1 200")
                {
                    return;
                }
                acked.store(size, Ordering::SeqCst);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.load(Ordering::SeqCst) < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    w.guard.kill(); // SIGKILL while the stream is still submitting
    stream.join().unwrap();
    let last = acked.load(Ordering::SeqCst);
    assert!(last >= 10, "only {last} checkpoints were cosigned");

    let w = start(&data, &key, &logs);
    let r = http(&w.addr, "GET", &monitoring_path(ORIGIN), b"");
    assert_eq!(r.status, 200);
    let held = Checkpoint::parse_body(&Note::parse(r.body.as_bytes()).unwrap().text)
        .unwrap()
        .size;
    // Every acknowledged size survived; at most the one in flight was persisted unanswered.
    assert!(
        held == last || held == last + 1,
        "held {held}, acked {last}"
    );
    let s = log_signer();
    let r = submit(&w.addr, &request(last - 1, &log, &s, last + 2));
    assert_eq!(r.status, 409);
    assert_eq!(r.body, format!("{held}\n"));
    assert_eq!(r.content_type, "text/x.tlog.size");
    let r = submit(&w.addr, &request(held, &log, &s, held + 3));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn concurrent_submissions_cannot_roll_the_size_back() {
    let (_dir, data, key, _, logs) = setup();
    let w = start(&data, &key, &logs);
    let log = Arc::new(log_of(400));
    let s = log_signer();
    assert_eq!(submit(&w.addr, &request(0, &log, &s, 1)).status, 200);
    let mut held = 1u64;
    const RACERS: u64 = 6;
    for _round in 0..15 {
        let barrier = Arc::new(Barrier::new(RACERS as usize));
        let racers: Vec<_> = (0..RACERS)
            .map(|i| {
                let (addr, log, barrier) = (w.addr.clone(), log.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let size = held + 1 + i * 3;
                    let req = request(held, &log, &log_signer(), size);
                    barrier.wait();
                    (size, submit(&addr, &req))
                })
            })
            .collect();
        let results: Vec<(u64, Reply)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let winners: Vec<u64> = results
            .iter()
            .filter(|(_, r)| r.status == 200)
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "exactly one request from size {held} wins"
        );
        let won = winners[0];
        for (_, r) in results.iter().filter(|(_, r)| r.status != 200) {
            assert_eq!((r.status, r.body.clone()), (409, format!("{won}\n")));
        }
        let r = http(&w.addr, "GET", &monitoring_path(ORIGIN), b"");
        let now = Checkpoint::parse_body(&Note::parse(r.body.as_bytes()).unwrap().text)
            .unwrap()
            .size;
        assert_eq!(now, won);
        held = won;
    }
}

#[test]
fn a_corrupt_state_file_stops_the_start_with_the_file_named() {
    let (_dir, data, key, _, logs) = setup();
    let w = start(&data, &key, &logs);
    let log = log_of(4);
    assert_eq!(
        submit(&w.addr, &request(0, &log, &log_signer(), 4)).status,
        200
    );
    drop(w.guard);
    let state = data.join(panel_witness::store::STATE_FILE);
    let text = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, &text[..text.len() / 2]).unwrap();
    let out = run_command(&data, &key, free_port(), &logs)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&state.display().to_string()), "{err}");
    assert!(err.contains("corrupt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        text[..text.len() / 2],
        "the state file is left as found"
    );
}

#[test]
fn startup_problems_name_the_flag_and_the_fix() {
    let (dir, data, key, _, logs) = setup();
    let missing = dir.path().join("none.key");
    let out = run_command(&data, &missing, free_port(), &logs)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--key") && err.contains("panel witness keygen"),
        "{err}"
    );
    assert!(err.contains(&missing.display().to_string()), "{err}");

    let out = run_command(&data, &key, free_port(), &["not-a-vkey".into()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log \"not-a-vkey\""));

    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let out = run_command(&data, &key, port, &logs).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains(&port.to_string()),
        "{err}"
    );

    let out = panel()
        .args(["witness", "keygen", "--name", WITNESS, "--key"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(!out.status.success(), "keygen overwrote a key");
}

#[tokio::test]
async fn the_client_reports_cosignatures_conflicts_refusals_and_timeouts() {
    let (_dir, data, key, _, logs) = setup();
    let w = start(&data, &key, &logs);
    let url = format!("http://{}", w.addr);
    let s = log_signer();
    let log = log_of(10);
    let t = Duration::from_secs(10);
    let first = request(0, &log, &s, 6);
    let lines = panel_witness::add_checkpoint(&url, &first, t)
        .await
        .unwrap();
    let mut note = first.checkpoint.clone();
    note.add(lines[0].clone());
    note.verify(std::slice::from_ref(&w.vkey)).unwrap();
    assert_eq!(
        panel_witness::add_checkpoint(&format!("{url}/"), &request(2, &log, &s, 10), t).await,
        Err(SubmitError::Conflict { size: 6 })
    );
    let stranger = NoteSigner::new("elsewhere.test/log", SigningKey::from_bytes(&[9; 32])).unwrap();
    match panel_witness::add_checkpoint(&url, &request(0, &log, &stranger, 3), t).await {
        Err(SubmitError::Refused { status: 404, .. }) => {}
        other => panic!("{other:?}"),
    }
    let closed = format!("http://127.0.0.1:{}", free_port());
    assert!(matches!(
        panel_witness::add_checkpoint(&closed, &first, t).await,
        Err(SubmitError::Transport(_))
    ));
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    assert_eq!(
        panel_witness::add_checkpoint(&silent_url, &first, Duration::from_millis(300)).await,
        Err(SubmitError::Timeout)
    );
}
