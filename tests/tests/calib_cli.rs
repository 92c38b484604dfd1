//! `panel calibrate` as a real process: the --jsonl protocol (order, errors, exit status)
//! and offline exam scoring (table, probes, per-bin counts and intervals, decisions, SVG
//! files, malformed answers), on the service's pool and bars by default, from any directory,
//! with the decision a sealed sitting reaches on the same answers.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use calibration::exam::{Exam, Gold, ProbeVariant, load_exam};
use calibration::exam_draw::draw_public_with_extra;
use calibration::exam_scoring::load_answers;
use calibration::public_pool::PublicPool;
use panel_machine::State;
use panel_machine::features::exam_sitting::{
    DRAW, EMBEDDED_POOL_TEXT, HELD_BACK_EXTRA, HeldExam, embedded_pool, reveal, seal,
};
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
            "--exam",
            "exams/default-v1.jsonl",
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
    // Version 1 has no probe groups: the default bars, and the output says why.
    assert!(
        text.contains("bars (default; this exam has no probe groups"),
        "{text}"
    );
    assert!(text.contains("bias probes: none"), "{text}");
    assert!(!text.contains("order_flip_rate"), "{text}");
    for id in ["careful", "overconfident", "inert-relevance"] {
        let svg = std::fs::read_to_string(dir.path().join(format!("{id}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(
            svg.contains("95% Wilson interval"),
            "{id}.svg has no intervals"
        );
    }
}

/// `careful`'s answers from the demo file, by item (every item of version 1).
fn careful_answers() -> BTreeMap<String, Value> {
    let demo = std::fs::read_to_string(repo().join("exams/examples/answers-demo.jsonl")).unwrap();
    demo.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["arbiter"] == "careful")
        .map(|v| (v["item"].as_str().unwrap().to_owned(), v["answer"].clone()))
        .collect()
}

/// Answers to the service's pool: `careful`'s, every probe variant answered as its base,
/// except that `biased` answers the order-swapped variants the other way (it sides with
/// whichever side is read first). Only the items `keep` accepts. With `sharp`, the binary
/// answers are 0.85 on the gold side instead of `careful`'s, so that a draw's few distinct
/// questions still show agreement with gold (kappa's lower bound) on every draw.
fn pool_answers(keep: impl Fn(&str) -> bool, sharp: bool) -> String {
    let exam: Exam = load_exam(EMBEDDED_POOL_TEXT).unwrap();
    let careful = careful_answers();
    let mut base_of = BTreeMap::new();
    for g in exam.probe_groups().unwrap() {
        for m in g.members() {
            base_of.insert(m.to_owned(), g.base.clone());
        }
    }
    let mut lines = Vec::new();
    for arbiter in ["honest", "biased"] {
        for item in exam.items.iter().filter(|i| keep(&i.id)) {
            let source = base_of.get(&item.id).unwrap_or(&item.id);
            let mut answer = match item.gold {
                Gold::Binary(yes) if sharp => serde_json::json!(if yes { 0.85 } else { 0.15 }),
                _ => careful[source].clone(),
            };
            let swapped = item
                .probe
                .as_ref()
                .is_some_and(|p| p.variant == ProbeVariant::OrderSwapped);
            if arbiter == "biased" && swapped {
                answer = serde_json::json!(1.0 - answer.as_f64().unwrap());
            }
            let line = serde_json::json!({"arbiter": arbiter, "item": item.id, "answer": answer});
            lines.push(line.to_string());
        }
    }
    lines.join("\n") + "\n"
}

/// `text`'s answer lines sorted into the draw's asking order, per arbiter, as a sitting's
/// export lists them (the order decides which items a sitting holds back).
fn in_draw_order(text: &str, asked: &[String]) -> String {
    let mut lines: Vec<(String, usize, &str)> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let at = asked.iter().position(|a| v["item"] == a.as_str()).unwrap();
            (v["arbiter"].as_str().unwrap().to_owned(), at, l)
        })
        .collect();
    lines.sort();
    lines.iter().map(|l| l.2).collect::<Vec<_>>().join("\n") + "\n"
}

fn calibrate_in(dir: &Path, extra: &[&str]) -> Output {
    let out = panel()
        .current_dir(dir)
        .args(["calibrate", "--answers", "answers.jsonl"])
        .args(["--now", "2026-11-30T12:00:00Z"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// With no `--exam`, from a directory that holds nothing but the answers: the pool built
/// into the binary (the service's), its bias-probe bars, the probes' results, and per-bin
/// counts with Wilson intervals in the text and in the diagram.
#[test]
fn without_exam_scores_on_the_services_pool_and_bars_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("answers.jsonl"),
        pool_answers(|_| true, false),
    )
    .unwrap();
    let out = calibrate_in(dir.path(), &["--svg-dir", "svg"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("crucible-panel-default 2.0.0 sha256:"),
        "{text}"
    );
    assert!(text.contains("10 probe groups"), "{text}");
    assert!(text.contains("built into panel"), "{text}");
    assert!(
        text.contains("bars (the service's, with the bias probes)"),
        "{text}"
    );
    let row = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id}: {text}"))
            .to_string()
    };
    assert!(row("honest").ends_with("admitted"), "{text}");
    assert!(row("biased").ends_with("refused"), "{text}");
    assert!(text.contains("biased refused; re-exam not before 2026-12-14T12:00:00Z"));
    assert!(
        text.contains("  - order_flip_rate (observed 1.0000"),
        "{text}"
    );

    // The probes, named, with their measures and intervals.
    for name in [
        "bias probes",
        "order flips",
        "order flip rate",
        "padding |shift|",
        "consequence shift",
        "kappa vs gold",
        "objective correct",
    ] {
        assert!(text.contains(name), "no `{name}` in {text}");
    }
    let probes = |id: &str| {
        let start = text.find("bias probes (").unwrap();
        text[start..]
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    let honest = probes("honest");
    assert!(
        honest.contains("0/10") && honest.contains("0.000 [0.000, 0.278]"),
        "no flip in 10 pairs, Wilson upper bound 0.278: {honest}"
    );
    assert!(
        honest.contains("0.690 [0.480, 0.899] (45)"),
        "kappa with its interval: {honest}"
    );
    let biased = probes("biased");
    assert!(
        biased.contains("10/10") && biased.contains("1.000 [0.722, 1.000]"),
        "{biased}"
    );

    // Per-bin counts and intervals: the honest arbiter's rows, bin by bin.
    let start = text.find("reliability of binary forecasts").unwrap();
    let section: Vec<&str> = text[start..]
        .lines()
        .skip_while(|l| *l != "honest")
        .skip(1)
        .take(11)
        .collect();
    assert!(
        section[0].contains("n") && section[0].contains("yes"),
        "{section:?}"
    );
    assert!(section[0].contains("95% interval"), "{section:?}");
    assert!(
        section[1].trim_start().starts_with("[0.0, 0.1)"),
        "{section:?}"
    );
    assert!(
        section[10].trim_start().starts_with("[0.9, 1.0]"),
        "{section:?}"
    );
    let counts: usize = section[1..]
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(2)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let binary = load_exam(EMBEDDED_POOL_TEXT).unwrap().count("binary");
    assert_eq!(counts, binary, "every binary item in one bin: {section:?}");
    assert!(
        section.iter().any(|l| l.ends_with("1.000]")),
        "an all-yes bin reaches 1: {section:?}"
    );
    let svg = std::fs::read_to_string(dir.path().join("svg/honest.svg")).unwrap();
    assert!(svg.contains("95% Wilson interval") && svg.contains("n="));
}

/// An answers file that answers exactly a sealed sitting's draw gets the sitting's
/// decision offline: the same pool, the same items counted as asked, the same bars.
#[test]
fn a_sittings_draw_gets_the_sittings_decision_offline() {
    let pool = embedded_pool().unwrap();
    let public = PublicPool::of(&pool.exam);
    for seed in [1_u64, 0x5EED, 0xDEAD_BEEF] {
        let asked = draw_public_with_extra(&public, seed, &DRAW, HELD_BACK_EXTRA).unwrap();
        let text = in_draw_order(
            &pool_answers(|id| asked.iter().any(|a| a == id), true),
            &asked,
        );

        // Offline.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("answers.jsonl"), &text).unwrap();
        let out = calibrate_in(dir.path(), &["--json", "--hold-back"]);
        let offline: BTreeMap<String, Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| (v["scores"]["arbiter"].as_str().unwrap().to_owned(), v))
            .collect();

        // In a sitting under the rules in force: the pool sealed, the answers held, the
        // key revealed.
        let mut state = State {
            rules: panel_machine::rules::CURRENT,
            ..State::default()
        };
        seal(&mut state, 1, &pool.sealed()).unwrap();
        let answers = load_answers(&pool.exam, &text).unwrap();
        let sitting = state.exam_sittings.last_mut().unwrap();
        for id in ["honest", "biased"] {
            let held = HeldExam {
                seed,
                asked: asked.clone(),
                answers: answers
                    .iter()
                    .filter(|a| a.arbiter == id)
                    .cloned()
                    .collect(),
                submitted_log_index: 2,
                submitted_at_ms: 0,
                motions: Default::default(),
            };
            sitting.held.insert(id.to_owned(), held);
        }
        let reply = reveal(&mut state, (3, 1_000), &pool.reveal(1)).unwrap();
        assert!(reply.unscored.is_empty(), "{:?}", reply.unscored);
        assert_eq!(reply.examined.len(), 2);
        for outcome in &reply.examined {
            let o = &offline[&outcome.arbiter_id];
            assert_eq!(
                o["decision"]["admitted"].as_bool(),
                Some(outcome.admitted),
                "seed {seed}, {}: offline {} vs the sitting",
                outcome.arbiter_id,
                o["decision"]
            );
            assert_eq!(o["asked"].as_u64(), Some(asked.len() as u64));
            // The answers come in asking order, so offline holds back what the sitting does.
            assert_eq!(o["held_back"].as_array().map(Vec::len), Some(8), "{o}");
            assert_eq!(
                o["scores"]["exam_hash"],
                Value::from(reply.exam_hash.to_hex())
            );
            assert_eq!(o["probes"]["order_swapped"]["pairs"], Value::from(6));
            let bins = o["reliability"].as_array().unwrap();
            assert_eq!(bins.len(), 10);
            assert!(
                bins.iter()
                    .all(|b| b["yes"].is_u64() && b["count"].is_u64())
            );
        }
        // Not a vacuous agreement: one admitted, one refused on the order bar.
        let decision = |id: &str| &offline[id]["decision"];
        assert_eq!(
            decision("honest")["admitted"],
            true,
            "seed {seed}: {}",
            decision("honest")
        );
        assert_eq!(decision("biased")["admitted"], false);
        assert_eq!(decision("biased")["failed"][0]["bar"], "order_flip_rate");
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
