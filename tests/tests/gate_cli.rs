//! `panel gate` as a real process: JSON lines in and out, malformed input, both modes.

use std::io::Write;
use std::process::{Output, Stdio};

use panel_tests::panel;

fn run(args: &[&str], input: &[u8]) -> Output {
    let mut child = panel()
        .arg("gate")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start panel gate");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input)
        .expect("write the requests");
    child.wait_with_output().expect("panel gate finishes")
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every output line is JSON"))
        .collect()
}

const CTX: &str = r#"{"kind":"claim","author":"ada","side":"A","type":"empirical","qualifier":"probable","evidenceCount":1,"maxTierWeight":3}"#;

fn request(text: &str) -> String {
    format!(
        r#"{{"fields":[{{"name":"grounds","label":"Grounds","text":{},"argumentative":true,"required":true}}],"ctx":{CTX}}}"#,
        serde_json::Value::String(text.into())
    )
}

#[test]
fn jsonl_answers_each_line_in_order() {
    let input = [
        request("The cited survey reports a modest gain."),
        request("The PRISMA review is ABSOLUTELY wrong, you are a liar!"),
        request("Everyone knows the GCSE data."),
    ]
    .join("\n");
    let out = run(&["--jsonl"], input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = lines(&out);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0]["rules"], serde_json::json!([]));
    assert_eq!(got[1]["rules"], serde_json::json!(["G4", "G7"]));
    assert_eq!(got[2]["rules"], serde_json::json!(["G9"]));
    let v = &got[1]["violations"][0];
    for key in ["rule", "field", "excerpt", "message", "fix"] {
        assert!(v.get(key).is_some(), "violation has {key}");
    }
    assert_eq!(v["field"], "Grounds");
}

#[test]
fn reference_mode_refuses_acronyms_that_our_mode_accepts() {
    let input = request("The PRISMA and GCSE figures agree.");
    let ours = lines(&run(&["--jsonl"], input.as_bytes()));
    let reference = lines(&run(&["--jsonl", "--reference"], input.as_bytes()));
    assert_eq!(ours[0]["rules"], serde_json::json!([]));
    assert_eq!(reference[0]["rules"], serde_json::json!(["G7"]));
    assert!(
        reference[0]["violations"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("PRISMA"))
    );
}

#[test]
fn malformed_lines_get_an_error_line_and_exit_status_two() {
    let input = [
        request("Fine text."),
        r#"{"fields":[{"label":"A","text":"x"},{"label":"B","text":7}]}"#.to_owned(),
        "not json at all".to_owned(),
        String::new(),
        "[1,2,3]".to_owned(),
        request("Also fine."),
    ]
    .join("\n");
    let mut bytes = input.into_bytes();
    bytes.extend_from_slice(b"\n\xff\xfe\n");
    let out = run(&["--jsonl"], &bytes);
    assert_eq!(out.status.code(), Some(2));
    let got = lines(&out);
    assert_eq!(
        got.len(),
        6,
        "blank line skipped, every other line answered"
    );
    assert_eq!(got[0]["rules"], serde_json::json!([]));
    assert_eq!(
        got[1]["error"],
        "line 2: fields[1].text: expected a string, found a number"
    );
    assert!(
        got[2]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 3: not valid JSON")
    );
    assert!(
        got[3]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 5: (request)")
    );
    assert_eq!(got[4]["rules"], serde_json::json!([]));
    assert!(got[5]["error"].as_str().unwrap().contains("UTF-8"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2: fields[1].text"));
    assert!(!stderr.contains("panicked"));
}

#[test]
fn single_request_prints_a_readable_report() {
    let out = run(&[], request("That is hilarious!").as_bytes());
    assert_eq!(out.status.code(), Some(1), "refused");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("G6 No humor, ridicule, or sarcasm"));
    assert!(text.contains("field:   Grounds"));
    assert!(text.contains("fix:"));

    let ok = run(&[], request("A measured statement.").as_bytes());
    assert_eq!(ok.status.code(), Some(0));

    let bad = run(&[], br#"{"ctx":{"evidenceCount":"many"}}"#);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ctx.evidenceCount: expected a number"));
}

#[test]
fn hostile_input_never_panics() {
    let deep = "[".repeat(10_000);
    let huge = request(&"liar ".repeat(200_000));
    for input in [
        deep.as_bytes(),
        huge.as_bytes(),
        b"{\"fields\":[{\"text\":\"\\ud800\"}]}",
        b"\0\0\0",
    ] {
        let out = run(&["--jsonl"], input);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(matches!(out.status.code(), Some(0 | 2)));
    }
}

#[test]
fn jsonl_mode_answers_before_input_ends() {
    use std::io::{BufRead, BufReader};
    let mut child = panel_tests::ChildGuard::spawn("panel gate", {
        let mut cmd = panel();
        cmd.args(["gate", "--jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        cmd
    });
    let process = child.child_mut().expect("the child is running");
    let mut stdin = process.stdin.take().expect("stdin is piped");
    let mut reader = BufReader::new(process.stdout.take().expect("stdout is piped"));
    for (text, rules) in [("You are wrong.", "[\"G4\"]"), ("A calm claim.", "[]")] {
        writeln!(stdin, "{}", request(text)).expect("send a request");
        stdin.flush().expect("flush");
        let mut line = String::new();
        reader.read_line(&mut line).expect("read the answer");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON answer");
        assert_eq!(v["rules"].to_string(), rules);
    }
}
