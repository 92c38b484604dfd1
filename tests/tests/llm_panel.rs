//! A whole small panel of LLM judges, end to end, through real processes: three `panel
//! coordinator run` replicas and four `panel node run` arbiters whose judges are
//! `kind = "llm"`, pointed at a TEST DOUBLE of an OpenAI-compatible chat-completions
//! endpoint (`llm_support`) served over real HTTPS (a private authority the nodes trust
//! through `ca_file`), answering after 1 to 3 s, stalling past the judge's timeout or
//! answering malformed on about a third of first attempts.
//!
//! The replicas run with windows that fit such judges (`--commit-window KIND=MS`,
//! `--exam-window-ms`); the nodes answer the 72 drawn exam items concurrently
//! (`max_concurrent_judgements`) and are admitted; the panel then decides an advance-phase
//! motion, a tier verification whose source every node retrieves over HTTPS and hands to
//! its model (the rulings quote it), and the merge that follows. Every ruling on the
//! record carries its signed provenance (judge kind, model, reported version, latency,
//! tokens), and `panel verify` accepts the exported record. Waits poll with deadlines;
//! nothing asserts a timing.

mod llm_support;

use std::path::Path;
use std::time::{Duration, Instant};

use llm_support::{ChatCompletionsDouble, FINGERPRINT, REPORTED_MODEL, SOURCE_PHRASE, Served};
use panel_tests::run_folder::{self, log_file, logs, run_json};
use panel_tests::{ChildGuard, free_port, init_args, loopback_addrs, panel, spawn_replicas};
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(150);

fn poll<T>(root: &Path, what: &str, f: impl FnMut() -> Option<T>) -> T {
    run_folder::poll(root, what, DEADLINE, f)
}
const MODEL: &str = "test-double-model";
const KEY: &str = "sk-test-double-0123456789";

struct Spec {
    id: &'static str,
    stance: &'static str,
    organisation: &'static str,
    family: &'static str,
    /// The key from a file (else from an environment variable).
    key_file: bool,
}

const NODES: [Spec; 4] = [
    Spec {
        id: "llm-a1",
        stance: "A",
        organisation: "northwind",
        family: "family-x",
        key_file: true,
    },
    Spec {
        id: "llm-b1",
        stance: "B",
        organisation: "southbank",
        family: "family-y",
        key_file: false,
    },
    Spec {
        id: "llm-a2",
        stance: "A",
        organisation: "southbank",
        family: "family-x",
        key_file: false,
    },
    Spec {
        id: "llm-b2",
        stance: "B",
        organisation: "northwind",
        family: "family-y",
        key_file: true,
    },
];

fn start_node(
    root: &Path,
    spec: &Spec,
    addrs: &[String],
    double: &ChatCompletionsDouble,
) -> ChildGuard {
    use std::os::unix::fs::PermissionsExt;
    let dir = root.join("nodes").join(spec.id);
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("arbiter.key");
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .expect("run panel node keygen");
    assert!(out.status.success(), "{out:?}");
    let key_line = if spec.key_file {
        let f = dir.join("api.key");
        std::fs::write(&f, format!("{KEY}\n")).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        "api_key_file = \"api.key\"".to_string()
    } else {
        "api_key_env = \"PANEL_TEST_DOUBLE_KEY\"".to_string()
    };
    let port = free_port();
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
         organisation = \"{org}\"\nmodel_family = \"{family}\"\ncoordinator_keys = [\"{motion_key}\"]\n\
         max_concurrent_judgements = 16\ndeclared_latency_ms = 3000\n\n\
         [retrieval]\nca_file = \"{ca}\"\ntimeout_ms = 8000\nallow_hosts = [\"127.0.0.1\"]\n\n\
         [judge]\nkind = \"llm\"\nbase_url = \"{base}\"\nmodel = \"{MODEL}\"\n{key_line}\n\
         ca_file = \"{ca}\"\ntimeout_ms = 4000\nmax_retries = 3\nbackoff_ms = 200\n",
        org = spec.organisation,
        family = spec.family,
        motion_key = hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&panel_tests::TEST_MOTION_SEED)
                .verifying_key()
                .to_bytes()
        ),
        ca = double.ca_file.display(),
        base = double.base_url(),
    );
    std::fs::write(dir.join("node.toml"), config).unwrap();
    let (out, err) = log_file(root, spec.id);
    let mut cmd = panel();
    cmd.args(["node", "run", "--insecure-loopback", "--config"])
        .arg(dir.join("node.toml"))
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .env("PANEL_TEST_DOUBLE_KEY", KEY)
        .stdout(out)
        .stderr(err);
    let guard = ChildGuard::spawn(spec.id, cmd);
    let reg = run_json(&[
        "arbiter",
        "register",
        "--id",
        spec.id,
        "--key-file",
        key.to_str().unwrap(),
        "--organisation",
        spec.organisation,
        "--model-family",
        spec.family,
        "--stance",
        spec.stance,
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--json",
        "--addr",
        &addrs.join(","),
    ]);
    assert!(reg.is_ok(), "registering {}: {reg:?}", spec.id);
    guard
}

/// Every ruling of a decided motion, checked for its signed provenance.
fn rulings_with_provenance(root: &Path, all: &str, motion_id: &str) -> Vec<Value> {
    let shown = run_json(&["motion", "show", motion_id, "--json", "--addr", all])
        .unwrap_or_else(|e| panic!("motion show {motion_id}: {e}"));
    let rulings = shown["rulings"].as_array().cloned().unwrap_or_default();
    assert!(
        rulings.len() >= 4,
        "{motion_id}: fewer than four rulings on the record: {shown}{}",
        logs(root)
    );
    for r in &rulings {
        let j = &r["judge"];
        assert_eq!(j["kind"], "llm", "{motion_id}: {r}");
        assert_eq!(j["model"], MODEL, "{motion_id}: {r}");
        let version = j["model_version"].as_str().unwrap_or("");
        assert!(
            version.contains(REPORTED_MODEL) && version.contains(FINGERPRINT),
            "{motion_id}: the endpoint's reported model is not on the record: {r}"
        );
        assert!(
            j["latency_ms"].as_u64().is_some_and(|ms| ms >= 1_000),
            "{motion_id}: the double answers after at least 1 s: {r}"
        );
        assert!(
            j["prompt_tokens"].as_u64().is_some_and(|t| t > 0)
                && j["completion_tokens"].as_u64().is_some_and(|t| t > 0),
            "{motion_id}: usage not recorded: {r}"
        );
        assert!(j["requests"].as_u64().is_some_and(|n| n >= 1), "{r}");
    }
    rulings
}

fn decided(root: &Path, all: &str, debate: &str, kind: &str) -> (String, Value) {
    poll(
        root,
        &format!("a decided {kind} motion in {debate}"),
        || {
            let v = run_json(&[
                "motion", "list", "--debate", debate, "--json", "--addr", all,
            ])
            .ok()?;
            let motions = v["motions"].as_array()?.clone();
            motions.into_iter().find_map(|m| {
                let is_kind = m["spec"]["kind"] == kind;
                let done = m["status"]["Decided"].is_object();
                let id = m["spec"]["motion_id"].as_str()?.to_string();
                (is_kind && done).then_some((id, m))
            })
        },
    )
}

#[test]
fn a_panel_of_llm_judges_over_https_takes_the_exam_rules_and_records_provenance() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let double = rt.block_on(ChatCompletionsDouble::start(root));

    // Windows for slow judges: one request takes 1-3 s, a stalled one costs the 4 s
    // timeout and a retry; a pairwise merge asks twice; the exam's 72 drawn items go 16 at a time.
    let addrs = loopback_addrs(3);
    let _replicas = spawn_replicas(root, &addrs, |id, cmd| {
        let (out, err) = log_file(root, &format!("replica-{id}"));
        cmd.args(["--commit-window-ms", "12000"])
            .args(["--commit-window", "merge=20000"])
            .args(["--commit-window", "verify-tier=16000"])
            .args(["--exam-window-ms", "32000", "--reveal-window-ms", "10000"])
            .env("NO_COLOR", "1")
            .stdout(out)
            .stderr(err);
    });
    let init = init_args(&addrs);
    let init: Vec<&str> = init.iter().map(String::as_str).collect();
    poll(root, "the group initialises", || run_json(&init).ok());
    let all = addrs.join(",");
    poll(root, "a leader is elected", || {
        run_json(&["coordinator", "status", "--addr", &addrs[0]])
            .ok()
            .filter(|s| s["leader_id"].is_u64())
    });
    let _nodes: Vec<ChildGuard> = NODES
        .iter()
        .map(|s| start_node(root, s, &addrs, &double))
        .collect();

    // The exam, answered by the model through each node, concurrently: one item after the
    // other, 72 items at 1-3 s each could not fit the 32 s window.
    let mut answered = Vec::new();
    for spec in &NODES {
        let a = poll(root, &format!("{} is examined", spec.id), || {
            run_json(&["arbiter", "show", spec.id, "--json", "--addr", &all])
                .ok()
                .filter(|a| !a["exam"].is_null())
        });
        assert_eq!(
            a["admitted"],
            true,
            "{} was not admitted: {}{}",
            spec.id,
            a["exam"],
            logs(root)
        );
        let n = a["exam"]["scores"]["answered"].as_u64().unwrap_or(0);
        let asked = a["exam"]["sitting"]["asked"].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(
            asked, 72,
            "the sealed sitting's draw (8 held back for the track record)"
        );
        let held = a["exam"]["held_back"].as_array().map_or(0, Vec::len) as u64;
        assert!(
            n + held + 4 >= asked,
            "{}: only {n} of {asked} exam items answered{}",
            spec.id,
            logs(root)
        );
        answered.push(n);
    }
    let exam_done = started.elapsed();

    // Motions: advance the phase; a claim citing a T2 source opens its tier verification
    // (each node retrieves the source over HTTPS and hands the text to its model), then
    // the merge.
    let d = run_json(&[
        "debate",
        "new",
        "--resolution",
        "Resolved: hybrid work raises output per hour worked.",
        "--pos-a",
        "Hybrid work raises output per hour",
        "--pos-b",
        "Hybrid work does not raise output per hour",
        // What this test exercises does not depend on declared stances.
        "--policy",
        "head-count",
        "--json",
        "--addr",
        &all,
    ])
    .unwrap_or_else(|e| panic!("debate new: {e}"));
    let debate = d["debate_id"].as_str().expect("debate id").to_string();
    let asked = run_json(&[
        "ask",
        "--debate",
        &debate,
        "--advance",
        "framing",
        "--wait",
        "--json",
        "--addr",
        &all,
    ])
    .unwrap_or_else(|e| panic!("ask: {e}{}", logs(root)));
    let advance = &asked["motion"];
    assert!(
        advance["status"]["Decided"]["Accepted"].is_object(),
        "the advance was not accepted: {advance}{}",
        logs(root)
    );
    let advance_id = advance["spec"]["motion_id"].as_str().unwrap().to_string();
    rulings_with_provenance(root, &all, &advance_id);

    let cite = format!(
        "ONS productivity survey|{}|T2",
        double.source_url("ons-2023")
    );
    let claim = run_json(&[
        "thread",
        "--debate",
        &debate,
        "--author",
        "cara",
        "--side",
        "A",
        "--title",
        "Output per hour",
        "--type",
        "empirical",
        "--assertion",
        "Firms that moved to hybrid working raised output per hour worked.",
        "--grounds",
        "A national statistics survey measured output per hour before and after the move.",
        "--warrant",
        "A measured rise in output per hour across many firms supports a general rise.",
        "--qualifier",
        "probable",
        "--cite",
        &cite,
        "--json",
        "--addr",
        &all,
    ]);
    assert!(claim.is_ok(), "the claim was refused: {claim:?}");

    let (verify_id, verify) = decided(root, &all, &debate, "TierVerification");
    assert!(
        verify["status"]["Decided"]["Accepted"].is_object(),
        "the tier verification was not accepted: {verify}{}",
        logs(root)
    );
    for r in rulings_with_provenance(root, &all, &verify_id) {
        assert!(
            r["rationale"]
                .as_str()
                .unwrap_or("")
                .contains(SOURCE_PHRASE),
            "the ruling is not about the source the node retrieved: {r}"
        );
        assert!(r["receipt"].is_array(), "no receipt: {r}");
    }
    let (merge_id, merge) = decided(root, &all, &debate, "Merge");
    assert!(
        merge["status"]["Decided"]["Accepted"].is_object(),
        "the merge was not accepted: {merge}{}",
        logs(root)
    );
    rulings_with_provenance(root, &all, &merge_id);

    // What the double saw: the key on every request, never the truth hint, the source
    // text in the verification prompts, and every kind of failure retried through.
    let seen = double.requests();
    let chat: Vec<_> = seen.iter().filter(|r| r.served != Served::Source).collect();
    assert!(chat.iter().all(|r| r.path == "/v1/chat/completions"));
    assert!(
        chat.iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}")[..])),
        "a request without the key"
    );
    assert!(
        chat.iter()
            .all(|r| !r.body.to_string().contains("\"expected\""))
    );
    assert!(
        seen.iter().filter(|r| r.served == Served::Source).count() >= 4,
        "every node retrieves the source itself"
    );
    assert!(
        chat.iter()
            .any(|r| r.user().contains("<<<SOURCE") && r.user().contains(SOURCE_PHRASE)),
        "no model was shown the retrieved text"
    );
    for kind in [
        Served::Stalled,
        Served::MalformedContent,
        Served::MalformedReply,
    ] {
        assert!(
            chat.iter().any(|r| r.served == kind),
            "the double never served {kind:?}; the retries were not exercised"
        );
    }

    // The record keeps the signed provenance and verifies.
    let record = root.join("record.json");
    let out = panel()
        .args(["export", "--out"])
        .arg(&record)
        .args(["--addr", &all])
        .output()
        .expect("run panel export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = panel()
        .arg("verify")
        .arg(&record)
        .output()
        .expect("run panel verify");
    assert!(
        out.status.success(),
        "panel verify refused the record: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stalled = chat.iter().filter(|r| r.served == Served::Stalled).count();
    let malformed = chat
        .iter()
        .filter(|r| matches!(r.served, Served::MalformedContent | Served::MalformedReply))
        .count();
    println!(
        "llm panel: {} chat requests ({stalled} stalled, {malformed} malformed), exam items \
         answered {answered:?}, exam done at {:.1} s, whole test {:.1} s",
        chat.len(),
        exam_done.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
