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

fn run_up(state: &Path) -> String {
    let out = panel()
        .args(["up", "--state"])
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

fn entries(r: &Value) -> &Vec<Value> {
    r["entries"].as_array().expect("entries")
}

/// Index of the first entry whose command is a RecordOutcome with `n` reveals or more.
fn outcome_entry(r: &Value, n: usize) -> usize {
    entries(r)
        .iter()
        .position(|e| {
            e["command"]["RecordOutcome"]["reveals"]
                .as_array()
                .is_some_and(|a| a.len() >= n)
        })
        .expect("an outcome entry with reveals")
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

#[test]
fn panel_up_reproduces_both_verdicts_and_its_record_verifies_but_tampering_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let stdout = run_up(&state);

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
        stdout.contains("ACCEPTED: Yes (receipts agree)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verify tier of ver_3 citation 0 -> DEADLOCKED"),
        "{stdout}"
    );
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

    // 1. A changed decision inside a signed ruling: the signature no longer verifies.
    let i = outcome_entry(&record, 4);
    let out = tampered(dir.path(), "changed-decision", &record, |r| {
        let reveals = &mut r["entries"][i]["command"]["RecordOutcome"]["reveals"];
        let mut rev = decode_reveal(reveals[0].as_str().expect("hex"));
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
        reveals[0] = Value::String(hex::encode(rev.encode_to_vec()));
    });
    assert_fails(
        &out,
        &format!("entry {}", record["entries"][i]["seq"]),
        "changed decision",
    );
    assert_fails(&out, "re-applying it is refused", "changed decision");

    // 2. A dropped ruling: the tallies recorded no longer follow from the reveals.
    let out = tampered(dir.path(), "dropped-ruling", &record, |r| {
        let reveals = r["entries"][i]["command"]["RecordOutcome"]["reveals"]
            .as_array_mut()
            .expect("reveals");
        reveals.pop();
    });
    assert_fails(
        &out,
        &format!("entry {}", record["entries"][i]["seq"]),
        "dropped ruling",
    );
    assert_fails(&out, "differs from re-applying it", "dropped ruling");

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
    // motion; the record still claims acceptance, re-applying deadlocks.
    let keys = stances(&record);
    let out = tampered(dir.path(), "one-stance", &record, |r| {
        let reveals = r["entries"][i]["command"]["RecordOutcome"]["reveals"]
            .as_array_mut()
            .expect("reveals");
        reveals.retain(|h| {
            let rev = decode_reveal(h.as_str().unwrap_or(""));
            let key = hex::encode(
                rev.signed_ruling
                    .and_then(|s| s.ruling)
                    .map(|x| x.arbiter_key)
                    .unwrap_or_default(),
            );
            keys.iter().any(|(k, s)| *k == key && s == "A")
        });
        assert_eq!(reveals.len(), 2, "two stance-A reveals remain");
    });
    assert_fails(
        &out,
        &format!("entry {}", record["entries"][i]["seq"]),
        "one-stance acceptance",
    );
    assert_fails(&out, "SingleStanceGroup", "one-stance acceptance");

    // Malformed input is bad input, not a crash.
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, b"{\"format\": 3}").expect("write junk");
    let out = verify(&junk);
    assert_eq!(out.status.code(), Some(2), "malformed record exits 2");
}
