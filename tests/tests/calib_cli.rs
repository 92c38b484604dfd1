//! `panel calibrate` as a real process: the --jsonl protocol (order, errors, exit status)
//! and offline exam scoring (table, decisions, SVG files, malformed answers).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use panel_tests::panel;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_jsonl(input: &str) -> (Vec<Value>, i32) {
    run_jsonl_bytes(input.as_bytes())
}

fn run_jsonl_bytes(input: &[u8]) -> (Vec<Value>, i32) {
    let mut cmd: Command = panel();
    let mut child = cmd
        .args(["calibrate", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start panel calibrate --jsonl");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    (lines, out.status.code().unwrap_or(-1))
}

#[test]
fn jsonl_answers_in_order_and_survives_bad_lines() {
    let input = [
        r#"{"calibration_counts": {"counts": [0, 5, 5, 0], "n": 10}}"#,
        "this is not json",
        r#"{"binary": {"forecasts": [0.0, 0.5], "outcomes": [1, 0]}}"#,
        "",
        r#"{"binary": {"forecasts": [0.2, "x"], "outcomes": [1, 0]}}"#,
        r#"{"cooke": {"quantiles": [0.05, 0.5, 0.95], "items": [{"id": "a", "realization": 2, "scale": "uni"}], "experts": [{"id": "e", "values": {"a": [3, 2, 1]}}], "alpha": null}}"#,
        r#"{"bridging": {"ratings": [[1, 0], [0, 1], [1, null]], "loss": "sideways"}}"#,
        r#"{"calibration_counts": {"counts": [1, 9, 9, 1], "n": 20}}"#,
        &"[".repeat(10_000),
    ]
    .join("\n");
    let (lines, code) = run_jsonl(&input);
    assert_eq!(code, 2, "malformed lines make the exit status 2");
    assert_eq!(lines.len(), 8, "one response per non-blank line: {lines:?}");
    assert!((lines[0]["calibration"].as_f64().unwrap() - 0.5505).abs() < 1e-4);
    assert!(
        lines[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 2: $:")
    );
    assert_eq!(
        lines[2]["log_loss"],
        Value::Null,
        "probability 0 on a realised outcome"
    );
    assert!((lines[2]["brier"].as_f64().unwrap() - 0.625).abs() < 1e-15);
    assert!(
        lines[3]["error"]
            .as_str()
            .unwrap()
            .contains("$.binary.forecasts[1]")
    );
    assert!(
        lines[4]["error"]
            .as_str()
            .unwrap()
            .contains("$.cooke.experts[0].values.a")
    );
    assert!(
        lines[5]["error"]
            .as_str()
            .unwrap()
            .contains("$.bridging.loss")
    );
    assert!((lines[6]["calibration"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    assert!(
        lines[7]["error"].is_string(),
        "deeply nested input is an error, not a crash"
    );
}

#[test]
fn jsonl_clean_input_exits_zero() {
    let (lines, code) = run_jsonl(
        r#"{"bridging": {"ratings": [[1, 0, 1], [1, 0, null], [0, 1, 1], [0, 1, 1]], "loss": "production_mean"}}"#,
    );
    assert_eq!(code, 0);
    let f = lines[0]["rater_factors"].as_array().unwrap();
    let negative = f.iter().filter(|x| x.as_f64().unwrap() < 0.0).count();
    assert!(2 * negative >= f.len());
}

#[test]
fn exam_mode_prints_decisions_and_writes_svgs() {
    let dir = tempfile::tempdir().unwrap();
    let out = panel()
        .current_dir(repo())
        .args([
            "calibrate",
            "--answers",
            "exams/examples/answers-demo.jsonl",
            "--now",
            "2026-11-30T12:00:00Z",
            "--svg-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("crucible-panel-default 1.0.0 sha256:"));
    let row = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(row("careful").ends_with("admitted"));
    assert!(row("overconfident").ends_with("refused"));
    assert!(text.contains("re-exam not before 2026-12-14T12:00:00Z"));
    for id in ["careful", "overconfident", "inert-relevance"] {
        let svg = std::fs::read_to_string(dir.path().join(format!("{id}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}

#[test]
fn malformed_answers_file_exits_two_with_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.jsonl");
    std::fs::write(
        &answers,
        "{\"arbiter\": \"a\", \"item\": \"chl-01\", \"answer\": 0.3}\n{\"arbiter\": \"a\", \"item\": \"qty-01\", \"answer\": [3, 2, 1]}\n",
    )
    .unwrap();
    let out = panel()
        .current_dir(repo())
        .args(["calibrate", "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("line 2, field `$.answer`"), "{err}");
}

#[test]
fn jsonl_refuses_invalid_utf8_and_seedless_experts_and_continues() {
    let mut input = b"{\"calibration_counts\": {\"counts\": [0, 5, 5, 0], \"n\": 10}}\n".to_vec();
    input.extend_from_slice(b"{\"binary\": \xff}\n");
    input.extend_from_slice(
        br#"{"cooke": {"quantiles": [0.05, 0.5, 0.95], "items": [{"id": "s", "realization": 5}, {"id": "t", "realization": null}], "experts": [{"id": "a", "values": {"s": [1, 4, 9]}}, {"id": "b", "values": {"t": [1, 2, 3]}}]}}"#,
    );
    input.extend_from_slice(
        b"\r\n{\"calibration_counts\": {\"counts\": [1, 9, 9, 1], \"n\": 20}}\r\n",
    );
    let (lines, code) = run_jsonl_bytes(&input);
    assert_eq!(code, 2);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[1]["error"].as_str().unwrap().contains("UTF-8"));
    assert!(
        lines[2]["error"]
            .as_str()
            .unwrap()
            .contains("expert `b` answered no seed")
    );
    assert!(
        lines[3]["calibration"].is_number(),
        "CRLF line endings are accepted"
    );
}

/// The default exam's "Gate-clean text that hides an ad hominem" items must really pass the
/// Gate, or they would test the lexicon instead of the arbiter.
#[test]
fn ad_hominem_exam_items_pass_the_gate() {
    let exam = std::fs::read_to_string(repo().join("exams/default-v1.jsonl")).unwrap();
    let mut requests = String::new();
    for line in exam.lines().skip(1) {
        let item: Value = serde_json::from_str(line).unwrap();
        let tagged = item["tags"]
            .as_array()
            .is_some_and(|t| t.iter().any(|x| x == "ad-hominem"));
        if !tagged {
            continue;
        }
        let motion = item["motion"].as_str().unwrap();
        let (label, text) = motion.split_once(": ").unwrap();
        let ctx = if label.starts_with("Challenge") {
            let ground = if label.contains("warrant") {
                "warrant-failure"
            } else {
                "evidence-validity"
            };
            serde_json::json!({"kind": "challenge", "author": "t", "side": "B", "ground": ground, "evidenceCount": 1})
        } else {
            serde_json::json!({"kind": "response", "author": "t", "side": "B", "evidenceCount": 1})
        };
        let field = serde_json::json!({"name": "text", "label": "Text", "text": text, "argumentative": true});
        requests.push_str(&serde_json::json!({"fields": [field], "ctx": ctx}).to_string());
        requests.push('\n');
    }
    assert_eq!(requests.lines().count(), 6);
    let mut child = panel()
        .args(["gate", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(requests.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["violations"], serde_json::json!([]), "{line}");
    }
}
