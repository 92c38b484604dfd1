//! The main job end to end: `panel up` runs the worked example through a real local
//! panel (3 coordinator processes, 4 arbiter node processes), and `panel verify` accepts
//! the record it exports and rejects tampered copies, one per kind of tampering, each
//! with the right reason.

use std::path::Path;
use std::process::Output;

use panel_proto::pb;
use panel_tests::panel;
use prost::Message;
use serde_json::Value;

/// The seed the end-to-end run is given: its keys, and so its exam draws, derive from it.
const SEED: &str = "20261206";

fn run_up(state: &Path) -> String {
    let out = panel()
        .args(["up", "--seed", SEED, "--state"])
        .arg(state)
        .output()
        .expect("run panel up");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "panel up failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

fn verify(path: &Path) -> Output {
    panel()
        .arg("verify")
        .arg(path)
        .output()
        .expect("run panel verify")
}

fn tampered(dir: &Path, name: &str, record: &Value, edit: impl FnOnce(&mut Value)) -> Output {
    let mut r = record.clone();
    edit(&mut r);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&r).expect("serialise")).expect("write copy");
    verify(&path)
}

fn assert_fails(out: &Output, needle: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: verify should fail with status 1; stderr: {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "{what}: expected the reason to mention {needle:?}; got: {stderr}"
    );
}

fn verify_with(path: &Path, extra: &[&std::ffi::OsStr]) -> Output {
    panel()
        .arg("verify")
        .arg(path)
        .args(extra)
        .output()
        .expect("run panel verify")
}

/// Re-signs every checkpoint of `r` over the roots of its (possibly edited) entries with
/// `keys` (in place of every log signature), keeping only the cosignature lines `keep`
/// allows.
fn re_rooted(r: &mut Value, keys: &[&panel_tlog::NoteSigner], keep: impl Fn(&str) -> bool) {
    use panel_machine::RecordEntry;
    let entries: Vec<RecordEntry> =
        serde_json::from_value(r["entries"].clone()).expect("entries decode");
    let mut tree = panel_tlog::Log::new();
    let roots: Vec<[u8; 32]> = entries
        .iter()
        .map(|e| {
            tree.append(&e.leaf_bytes().expect("leaf"));
            tree.root()
        })
        .collect();
    for cp in r["checkpoints"].as_array_mut().expect("checkpoints") {
        let note = panel_tlog::Note::parse(cp.as_str().expect("note").as_bytes()).expect("note");
        let old = panel_tlog::Checkpoint::parse_body(&note.text).expect("body");
        let body =
            panel_tlog::Checkpoint::new(&old.origin, old.size, roots[old.size as usize - 1]).body();
        let mut fresh = panel_tlog::Note::new(body).expect("note");
        for key in keys {
            fresh.add(key.sign(&fresh.text));
        }
        // Log signatures carry the origin's name; the rest are the witnesses'.
        for line in note.signatures.iter().filter(|l| l.name != old.origin) {
            if keep(&line.name) {
                fresh.add(line.clone());
            }
        }
        *cp = Value::String(fresh.to_text());
    }
}

/// The forgeries of docs/WITNESS.md against the real record of `panel up`, under its policy.
fn witnessed_record_attacks(dir: &Path, state: &Path, record: &Value) {
    let pki = state.join("pki");
    let policy = pki.join("policy.txt");
    let with_policy = |p: &Path| verify_with(p, &["--policy".as_ref(), policy.as_os_str()]);
    let ok = with_policy(&state.join("record.json"));
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        stdout.contains("cosigned by northwind, southbank"),
        "{stdout}"
    );
    let bare = verify(&state.join("record.json"));
    assert!(
        String::from_utf8_lossy(&bare.stdout).contains("no trust anchor"),
        "without a policy verify says so"
    );
    let origin = record["entries"][0]["command"]["AdoptCharter"]["log"]["origin"]
        .as_str()
        .expect("the charter names the log")
        .to_string();
    // Each replica's own log key (a quorum log: docs/SECURITY.md "The record").
    let replica_key = |id: u64| {
        panel_tlog::NoteSigner::new(
            &origin,
            panel_transport::pki::read_seed_key(
                &pki.join(panel_transport::pki::replica_dir_name(id))
                    .join("log.key"),
            )
            .expect("log key"),
        )
        .expect("signer")
    };
    let (r1, r2, r3) = (replica_key(1), replica_key(2), replica_key(3));
    let write = |name: &str, r: &Value| {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(r).expect("json")).expect("write");
        path
    };

    // 7. Every checkpoint re-signed by a key the policy does not name.
    let impostor =
        panel_tlog::NoteSigner::new(&origin, ed25519_dalek::SigningKey::from_bytes(&[7; 32]))
            .expect("impostor");
    let mut forged = record.clone();
    re_rooted(&mut forged, &[&impostor], |_| true);
    assert_fails(
        &with_policy(&write("unknown-log-key", &forged)),
        // Refused already by the log key the record's own charter names; under a policy
        // that names another charter's log it is the policy's key that refuses it.
        "log key",
        "re-signed by an unknown key",
    );

    // 8. A history edited so that it still replays (the last entry's request id: an
    // earlier edit would change the record root every later unsteerable draw derives its
    // seed from, and the replay would already refuse it), re-rooted and re-signed with the
    // real log key: the old cosignatures do not verify over the new roots, and without them
    // the quorum is not met.
    let reg = entries(record).len() - 1;
    let mut edited = record.clone();
    edited["entries"][reg]["request_id"] = Value::from(999_999u64);
    // One organisation (northwind runs replicas 1 and 3) re-signs the edited history with
    // both its replicas' real keys, and keeps the witnesses' old lines: the policy's
    // quorum log needs another organisation's key (docs/SECURITY.md "The record").
    let mut alone = edited.clone();
    re_rooted(&mut alone, &[&r1, &r3], |_| true);
    assert_fails(
        &with_policy(&write("rewritten-by-one-organisation", &alone)),
        "quorum is 2",
        "one organisation's log keys",
    );
    // Every replica colludes: the witnesses' old lines still do not verify.
    let mut stale = edited.clone();
    re_rooted(&mut stale, &[&r1, &r2, &r3], |_| true);
    let path = write("rewritten-stale-cosignatures", &stale);
    assert!(verify(&path).status.success(), "the rewrite replays");
    assert_fails(&with_policy(&path), "does not verify", "stale cosignatures");
    let mut bare = edited;
    re_rooted(&mut bare, &[&r1, &r2, &r3], |_| false);
    let path = write("rewritten-no-cosignatures", &bare);
    assert!(
        verify(&path).status.success(),
        "internally consistent: {}",
        String::from_utf8_lossy(&verify(&path).stderr)
    );
    assert_fails(
        &with_policy(&path),
        "no cosignature from witness",
        "rewritten history",
    );

    // 9. A split view: the real last checkpoint and a forged one of the same size signed
    // with the real log key. `panel monitor` raises the alarm with both.
    let cps = record["checkpoints"].as_array().expect("checkpoints");
    let real = dir.join("real.checkpoint");
    std::fs::write(&real, cps[cps.len() - 1].as_str().expect("note")).expect("write");
    let split = dir.join("split.checkpoint");
    std::fs::write(
        &split,
        bare["checkpoints"][cps.len() - 1].as_str().expect("note"),
    )
    .expect("write");
    let out = panel()
        .args(["monitor", "--offline", "--rounds", "1", "--policy"])
        .arg(&policy)
        .arg("--checkpoint")
        .arg(&real)
        .arg("--checkpoint")
        .arg(&split)
        .output()
        .expect("run panel monitor");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("ALARM: split view") && stderr.contains("split.checkpoint"),
        "{stderr}"
    );
    let calm = panel()
        .args(["monitor", "--offline", "--rounds", "1", "--policy"])
        .arg(&policy)
        .arg("--checkpoint")
        .arg(&real)
        .output()
        .expect("run panel monitor");
    assert!(
        calm.status.success(),
        "{}",
        String::from_utf8_lossy(&calm.stderr)
    );
}

fn entries(r: &Value) -> &Vec<Value> {
    r["entries"].as_array().expect("entries")
}

/// The first motion with four submitted reveals: their entry indices and its close's.
fn revealed_motion(r: &Value) -> (Vec<usize>, usize) {
    let list = entries(r);
    for (close, e) in list.iter().enumerate() {
        let Some(id) = e["command"]["CloseMotion"]["motion_id"].as_str() else {
            continue;
        };
        let reveals: Vec<usize> = (0..close)
            .filter(|&n| list[n]["command"]["SubmitReveal"]["motion_id"].as_str() == Some(id))
            .collect();
        if reveals.len() >= 4 {
            return (reveals, close);
        }
    }
    panic!("no motion with four submitted reveals on the record")
}

/// Removes the entries at `drop` and renumbers the rest, so the sequence stays gapless
/// and the tampering is caught by re-applying, not by the sequence check.
fn remove_entries(r: &mut Value, drop: &[usize]) {
    let list = r["entries"].as_array_mut().expect("entries");
    let kept: Vec<Value> = list
        .iter()
        .enumerate()
        .filter(|(n, _)| !drop.contains(n))
        .map(|(_, e)| e.clone())
        .collect();
    *list = kept;
    for (n, e) in list.iter_mut().enumerate() {
        e["seq"] = Value::from(n as u64);
    }
}

fn decode_reveal(hex_reveal: &str) -> pb::Reveal {
    pb::Reveal::decode(hex::decode(hex_reveal).expect("hex").as_slice()).expect("reveal")
}

/// Arbiter key (hex) -> declared stance, from the registrations on the record.
fn stances(r: &Value) -> Vec<(String, String)> {
    entries(r)
        .iter()
        .filter_map(|e| e["command"].get("RegisterArbiter"))
        .map(|reg| {
            (
                reg["public_key"].as_str().unwrap_or("").to_string(),
                reg["stance"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// What a run decided, as its narration says it, without what no seed fixes: folders,
/// ports, log indices in motion ids, timings, the checkpoint count (the leader's clock
/// sets the cadence) and the order in which concurrent motions were reported.
fn outcome_lines(stdout: &str) -> Vec<String> {
    let timed = |l: &str| {
        l.match_indices(" in ")
            .any(|(at, _)| l[at + 4..].starts_with(|c: char| c.is_ascii_digit()))
    };
    let mut lines: Vec<String> = stdout
        .lines()
        .filter(|l| !l.contains("127.0.0.1") && !timed(l))
        .map(|l| {
            l.split_whitespace()
                .map(|w| match w {
                    w if w.starts_with("mot-") => "MOT",
                    w if w.contains('/') && w.contains(".panel") => "PATH",
                    w if w.starts_with('/') => "PATH",
                    w => w,
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .map(|l| match l.find(" checkpoints") {
            Some(at) => l[..at]
                .rsplit_once(' ')
                .map_or(l.clone(), |(head, _)| head.into()),
            None => l,
        })
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort();
    lines
}

#[test]
fn panel_up_reproduces_both_verdicts_and_its_record_verifies_but_tampering_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let stdout = run_up(&state);
    assert!(
        stdout.contains(&format!("seed {SEED}; replay with panel up --seed {SEED}")),
        "the summary names the seed to replay with:\n{stdout}"
    );
    // The replay: a second run under the same seed seats the same panels, so every
    // outcome, tally, dossier row and count repeats (docs/SECURITY.md "The beacon").
    let again = run_up(&dir.path().join("again"));
    assert_eq!(outcome_lines(&stdout), outcome_lines(&again));

    // Both verdicts of the paper, through the panel.
    assert!(
        stdout.contains("VERDICT 1: A 6.36 vs B 4.20, margin 0.340 -> Side A wins, clear"),
        "{stdout}"
    );
    assert!(
        stdout.contains("VERDICT 2: A 6.36 vs B 6.40, margin 0.006 -> no winner (unresolved)"),
        "{stdout}"
    );
    // The accepted motions: merges, challenge resolutions (four dismissed, one upheld),
    // relevance, and B1's verification with agreeing receipts after publication.
    assert!(stdout.contains("all exams scored"), "{stdout}");
    assert_eq!(stdout.matches("-> ACCEPTED: No").count(), 4, "{stdout}");
    assert!(
        stdout.contains("resolve chl_5 -> ACCEPTED: Yes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("relevance of ver_5 -> ACCEPTED: relevance 0.5"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ACCEPTED: Yes (tier verified; receipts agree on"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verify tier of ver_3 citation 0 -> DEADLOCKED: no arbiter of stance A confirmed the source"),
        "{stdout}"
    );
    // Deadlock reasons read as sentences, never as raw JSON.
    assert!(
        stdout
            .lines()
            .filter(|l| l.contains("DEADLOCKED"))
            .all(|l| !l.contains('{')),
        "{stdout}"
    );
    // The other seeds' procedures ran on the same panel after the worked example.
    for seen in [
        "== CRUX",
        "crux accepted: Whether the two pending municipal contracts are signed",
        "BROKEN",
        "UNFALSIFIABLE",
        "CORROBORATED",
        "Recommendation: PREPARE",
        "3 procedure run(s) on the record",
    ] {
        assert!(stdout.contains(seen), "no {seen:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("debate deb_1 is closed with 2 verdicts"),
        "{stdout}"
    );

    let path = state.join("record.json");
    let ok = verify(&path);
    assert!(
        ok.status.success(),
        "the exported record verifies: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read record")).expect("json");

    // Every ruling on the record comes from a simulated arbiter and says so, with the
    // parameters behind it; no node of the demo is configured with a real product's model.
    let reveals: Vec<pb::Reveal> = entries(&record)
        .iter()
        .filter_map(|e| e["command"]["SubmitReveal"]["reveal"].as_str())
        .map(decode_reveal)
        .collect();
    assert!(reveals.len() > 100, "{} reveals", reveals.len());
    for rv in &reveals {
        let r = rv
            .signed_ruling
            .as_ref()
            .and_then(|s| s.ruling.as_ref())
            .expect("a ruling");
        let p = r.provenance.as_ref().expect("provenance");
        assert_eq!(
            (p.judge_kind.as_str(), p.model.as_str()),
            ("simulated", "simulated")
        );
        assert!(p.model_version.starts_with("simulated/skill-"), "{p:?}");
        // A crux report's rationale is the report itself (JSON), a source the node could
        // not retrieve is said so by the node; every other says what answered.
        assert!(
            r.rationale.starts_with("simulated arbiter")
                || r.rationale.starts_with('{')
                || r.rationale.starts_with("The source could not be retrieved"),
            "{}",
            r.rationale
        );
    }
    for node in std::fs::read_dir(state.join("nodes")).expect("nodes") {
        let toml = std::fs::read_to_string(node.expect("node").path().join("node.toml"))
            .expect("node.toml")
            .to_lowercase();
        assert!(toml.contains("kind = \"simulated\""), "{toml}");
        for name in [
            "claude", "gpt", "gemini", "llama", "mistral", "qwen", "openai",
        ] {
            assert!(!toml.contains(name), "{name} in {toml}");
        }
    }

    // 1. A changed decision inside a submitted reveal: the signature no longer verifies.
    let (reveals, _close) = revealed_motion(&record);
    let i = reveals[0];
    let out = tampered(dir.path(), "changed-decision", &record, |r| {
        let reveal = &mut r["entries"][i]["command"]["SubmitReveal"]["reveal"];
        let mut rev = decode_reveal(reveal.as_str().expect("hex"));
        let ruling = rev
            .signed_ruling
            .as_mut()
            .and_then(|s| s.ruling.as_mut())
            .expect("ruling");
        ruling.decision = if ruling.decision == pb::Decision::Accept as i32 {
            pb::Decision::Reject as i32
        } else {
            pb::Decision::Accept as i32
        };
        *reveal = Value::String(hex::encode(rev.encode_to_vec()));
    });
    assert_fails(
        &out,
        &format!("entry {}", record["entries"][i]["seq"]),
        "changed decision",
    );
    assert_fails(&out, "re-applying it is refused", "changed decision");

    // 2. A dropped reveal: the close recorded no longer follows from the reveals on the
    // record (the seat shows as committed and not revealed, or the early close is refused).
    let out = tampered(dir.path(), "dropped-ruling", &record, |r| {
        remove_entries(r, &[reveals[3]]);
    });
    // The first entry whose recorded reply no longer follows is a later reveal (its list of
    // seats still awaited) or the close; either way re-applying disagrees with the record.
    assert_fails(&out, "re-applying it", "dropped reveal");

    // 3. A swapped key: an arbiter registered under another key cannot have signed its
    // rulings.
    // (The record's first entry is the charter; the registrations follow.)
    let regs: Vec<usize> = entries(&record)
        .iter()
        .enumerate()
        .filter(|(_, e)| e["command"].get("RegisterArbiter").is_some())
        .map(|(n, _)| n)
        .collect();
    assert!(
        record["entries"][0]["command"]
            .get("AdoptCharter")
            .is_some(),
        "the charter is the record's first entry"
    );
    let out = tampered(dir.path(), "swapped-key", &record, |r| {
        let other = r["entries"][regs[1]]["command"]["RegisterArbiter"]["public_key"].clone();
        r["entries"][regs[0]]["command"]["RegisterArbiter"]["public_key"] = other;
    });
    assert_fails(&out, "refused", "swapped key");

    // 4. A reordered log entry.
    let out = tampered(dir.path(), "reordered", &record, |r| {
        let list = r["entries"].as_array_mut().expect("entries");
        list.swap(5, 6);
    });
    assert_fails(&out, "reordered", "reordered entry");

    // 5. An edited ledger value in the published document.
    let out = tampered(dir.path(), "edited-ledger", &record, |r| {
        r["debates"]["deb_1"]["verdicts"][0]["ledger"][0]["merit"] = Value::from(9.99);
    });
    assert_fails(&out, "verdicts[0].ledger[0].merit", "edited ledger value");

    // 6. A one-stance acceptance injected: keep only stance A's reveals of an accepted
    // motion; the record still claims its close, re-applying it does not.
    let keys = stances(&record);
    let stance_b: Vec<usize> = reveals
        .iter()
        .copied()
        .filter(|&n| {
            let rev = decode_reveal(
                record["entries"][n]["command"]["SubmitReveal"]["reveal"]
                    .as_str()
                    .unwrap_or(""),
            );
            let key = hex::encode(
                rev.signed_ruling
                    .and_then(|s| s.ruling)
                    .map(|x| x.arbiter_key)
                    .unwrap_or_default(),
            );
            keys.iter().any(|(k, s)| *k == key && s == "B")
        })
        .collect();
    assert_eq!(stance_b.len(), 2, "two stance-B reveals to remove");
    let out = tampered(dir.path(), "one-stance", &record, |r| {
        remove_entries(r, &stance_b);
    });
    assert_fails(&out, "re-applying it", "one-stance acceptance");

    witnessed_record_attacks(dir.path(), &state, &record);

    // Malformed input is bad input, not a crash.
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, b"{\"format\": 3}").expect("write junk");
    let out = verify(&junk);
    assert_eq!(out.status.code(), Some(2), "malformed record exits 2");
}

/// `--seed` takes a number and says so otherwise; the local-judge demo, whose keys it
/// cannot fix, refuses it by name. Neither starts a process.
#[test]
fn a_bad_or_unusable_seed_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = panel()
        .args(["up", "--seed", "twelve", "--state"])
        .arg(&state)
        .output()
        .expect("run panel up");
    assert_eq!(out.status.code(), Some(2), "clap refuses a non-number");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--seed"), "{err}");

    let out = panel()
        .args(["up", "--judge", "local", "--seed", "5", "--state"])
        .arg(&state)
        .output()
        .expect("run panel up");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--seed 5") && err.contains("--judge local"),
        "{err}"
    );
    assert!(!state.exists(), "a refused seed left a state folder behind");
}
