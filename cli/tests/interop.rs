//! The `panel ledger` and `panel replay` interop surfaces, run as real processes:
//! JSONL requests and responses, exit status 2 with a JSON path for malformed input,
//! and no panic on any input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn panel(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panel"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("panel starts");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The process may stop reading early on bad input; a broken pipe is fine.
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("panel runs");
    writer.join().expect("writer thread");
    out
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each stdout line is JSON"))
        .collect()
}

fn assert_no_panic(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_ne!(out.status.code(), Some(101), "{what}: panic exit status");
    assert!(out.status.code().is_some(), "{what}: killed by a signal");
}

fn worked_example_document() -> Value {
    let mut p = crucible::Protocol::new(crucible::FixedEnv::new(1_767_225_600_000, 1000));
    let ex = crucible::example::build(&mut p).expect("worked example");
    ex.debate.to_json()
}

#[test]
fn ledger_jsonl_answers_documents_band_and_summarize_lines_in_order() {
    let doc = worked_example_document();
    let input = format!(
        "{}\n{}\n\n{}\n",
        doc,
        json!({"band": 0.25}),
        json!({"summarize": {"totals": {"A": 10, "B": 9.5}, "burden": "A"}})
    );
    let out = panel(&["ledger", "--jsonl"], input.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = lines(&out);
    assert_eq!(r.len(), 3, "one response per non-blank line");
    assert_eq!(r[0]["band"]["key"], "clear");
    assert_eq!(r[0]["winner"], "A");
    assert_eq!(r[0]["byBurden"], false);
    assert_eq!(
        format!("{:.2}", r[0]["totals"]["A"].as_f64().unwrap()),
        "6.36"
    );
    assert_eq!(
        format!("{:.2}", r[0]["totals"]["B"].as_f64().unwrap()),
        "4.20"
    );
    assert_eq!(r[0]["rows"].as_array().unwrap().len(), 4);
    assert_eq!(
        r[1]["band"]["key"], "clear",
        "exactly 0.25 is clear (strict less-than)"
    );
    assert_eq!(r[2]["winner"], "B");
    assert_eq!(r[2]["byBurden"], true);
    assert_eq!(r[2]["band"]["key"], "unresolved");
}

#[test]
fn ledger_reads_a_single_document_from_stdin() {
    let out = panel(
        &["ledger"],
        worked_example_document().to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("pretty JSON");
    assert_eq!(v["winner"], "A");
}

#[test]
fn replay_jsonl_runs_scripts_and_reports_codes() {
    let script = json!({
        "env": {"clock": {"start": 1000, "step": 10}, "ids": "counter-per-prefix"},
        "steps": [
            {"op": "newDebate", "args": {"resolution": "Resolved: p.", "posA": "yes", "posB": "no"}},
            {"op": "createThread", "args": {"side": "A", "title": "T", "actor": "ada"}},
            {"op": "addVersion", "args": {"threadId": "thr_1", "side": "A", "type": "logical", "qualifier": "certain"}},
            {"op": "mergeVersion", "args": {"threadId": "thr_1", "versionId": "ver_1", "rationale": "first"}},
            {"op": "fileChallenge", "args": {"threadId": "thr_1", "versionId": "ver_1", "side": "A"}},
            {"op": "resolveChallenge", "args": {"challengeId": "chl_9", "resolution": "upheld"}},
            {"op": "phasePrereq"},
            {"op": "issueVerdict", "args": {}}
        ]
    });
    let spec = json!({"env": {"mode": "spec"}, "steps": [
        {"op": "newDebate", "args": {"resolution": "r", "posA": "a", "posB": "b"}},
        {"op": "createThread", "args": {"side": "A", "title": "T"}}
    ]});
    let out = panel(
        &["replay", "--jsonl"],
        format!("{script}\n{spec}\n").as_bytes(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = lines(&out);
    // The reference's answers: created objects, null, refusals as {code, message}.
    let results = r[0]["results"].as_array().cloned().unwrap_or_default();
    let summary: Vec<Value> = results
        .iter()
        .map(|x| {
            x.get("code")
                .or(x.get("id"))
                .or(x.get("n"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!("deb_1"),
            json!("thr_1"),
            json!("ver_1"),
            Value::Null,
            json!("CHALLENGE_SAME_SIDE"),
            json!("CHALLENGE_NOT_FOUND"),
            Value::Null,
            json!(1)
        ]
    );
    assert!(
        results[4]["message"].is_string(),
        "a refusal carries its message"
    );
    let doc = &r[0]["document"];
    assert_eq!(doc["createdAt"], 1000, "id first, then the first tick");
    assert_eq!(doc["log"][0]["ts"], 1010);
    assert_eq!(
        doc["verdicts"][0]["totals"]["A"], 2,
        "logical 2 x 1 x 1 x certain 1"
    );
    assert_eq!(doc["threads"][0]["canonicalId"], "ver_1");
    assert_eq!(
        r[1]["results"][1]["code"], "PHASE_FORBIDS",
        "spec mode: threads open in construction"
    );
}

#[test]
fn malformed_document_exits_2_naming_the_json_path() {
    let out = panel(
        &["ledger", "--jsonl"],
        br#"{"id":"d","threads":[{"id":"t","versions":[7]}]}"#,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("$.threads[0].versions[0]"), "{err}");
    assert!(
        lines(&out)[0]["error"]
            .as_str()
            .unwrap()
            .contains("$.threads[0].versions[0]")
    );

    let out = panel(
        &["ledger"],
        br#"{"threads":[{"id":"t","versions":[{"id":"v","threadId":"t","num":"one"}]}]}"#,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("$.threads[0].versions[0].num"));

    let out = panel(
        &["replay"],
        br#"{"steps":[{"op":"newDebate"},{"op":"addVersion","args":{"threadId":5}}]}"#,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("$.steps[1].args.threadId"));
}

#[test]
fn a_bad_line_does_not_stop_later_lines() {
    let out = panel(
        &["ledger", "--jsonl"],
        b"{\"band\": \"x\"}\n{\"band\": 0.1}\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let r = lines(&out);
    assert!(r[0]["error"].as_str().unwrap().contains("$.band"));
    assert_eq!(r[1]["band"]["key"], "balance");
}

#[test]
fn no_input_panics_the_process() {
    let deep_array = "[".repeat(100_000);
    let deep_object = "{\"a\":".repeat(50_000);
    let huge = format!("{{\"claimBudget\": 1{}}}", "0".repeat(400));
    let junk: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("whitespace", b"  \n\t\n".to_vec()),
        ("array", b"[]".to_vec()),
        ("null", b"null".to_vec()),
        ("string", b"\"debate\"".to_vec()),
        ("number", b"42".to_vec()),
        ("deep array", deep_array.into_bytes()),
        ("deep object", deep_object.into_bytes()),
        ("huge number", huge.into_bytes()),
        ("huge relevance", br#"{"threads":[{"id":"t","side":"A","canonicalId":"v","versions":[{"id":"v","threadId":"t","num":1,"parentId":null,"relevance":1e308,"type":"logical"}]}]}"#.to_vec()),
        ("wrong types", br#"{"threads":"many","challenges":{},"phase":7,"positions":[1],"steelmans":5,"burden":true}"#.to_vec()),
        ("wrong nested types", br#"{"threads":[{"id":1}],"verdicts":[null],"appeals":[{"id":"a","status":3}]}"#.to_vec()),
        ("invalid utf-8", b"{\"resolution\": \"\xff\xfe\"}".to_vec()),
        ("lone surrogate", br#"{"id":"d","log":[{"action":"x","detail":"\ud83d"}]}"#.to_vec()),
        ("truncated", br#"{"threads":[{"id":"t""#.to_vec()),
        ("band junk", br#"{"band": null}"#.to_vec()),
        ("summarize junk", br#"{"summarize": {"totals": [1, 2]}}"#.to_vec()),
        ("script junk", br#"{"steps": [{"op": 5}]}"#.to_vec()),
        ("script no debate", br#"{"steps": [{"op": "advancePhase"}]}"#.to_vec()),
        ("script huge clock", br#"{"env":{"clock":{"start":9223372036854775807,"step":9223372036854775807}},"steps":[{"op":"newDebate"},{"op":"createThread"},{"op":"createThread"}]}"#.to_vec()),
        ("script bad index", br#"{"steps":[{"op":"newDebate"},{"op":"verifyTier","args":{"threadId":"t","versionId":"v","citationIndex":1e300}}]}"#.to_vec()),
    ];
    for (name, bytes) in &junk {
        for args in [
            &["ledger"][..],
            &["ledger", "--jsonl"],
            &["replay"],
            &["replay", "--jsonl"],
        ] {
            let out = panel(args, bytes);
            assert_no_panic(&out, &format!("{name} via {args:?}"));
            if !bytes.is_empty() && out.status.code() != Some(0) {
                assert!(
                    !out.stderr.is_empty(),
                    "{name} via {args:?}: a refusal says why"
                );
            }
        }
    }
}
