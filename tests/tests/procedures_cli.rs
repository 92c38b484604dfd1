//! The seed procedures on a real running panel (docs/PROCEDURES.md): `panel up --keep`
//! starts 3 replicas and 4 arbiter nodes; then a Crux decision, a falsification run and a
//! decision dossier (and its retry) run through the CLI with simulated arbiters and
//! scripted fixture role inputs; malformed and refused documents fail with the JSON path
//! or the rule and leave nothing on the record; a refused role input (a critic shifting
//! its goalposts) changes nothing; the exported record verifies offline with its runs, and
//! a tampered run is caught.

use std::path::{Path, PathBuf};

use panel_machine::RunRequest;
use panel_machine::features::run_convener;
use panel_machine::{ClientCommand, Command};
use panel_tests::local_panel::{Cluster, fails, json, ok, start};
use serde_json::{Value, json};

fn fixture(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../procedures/src")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("fixture JSON")
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).expect("encode")).expect("write");
    p.display().to_string()
}

/// A `panel` command that needs no cluster.
fn offline(args: &[&str]) -> std::process::Output {
    panel_tests::panel().args(args).output().expect("run panel")
}

fn runs(st: &Path) -> Vec<Value> {
    json(st, &["runs", "--json"])
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn crux(st: &Path, dir: &Path) {
    // The eval is offline: no cluster.
    let out = offline(&["crux", "eval", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let eval: Value = serde_json::from_slice(&out.stdout).expect("eval JSON");
    assert_eq!(eval["bad_escaped"], 0, "{eval}");
    assert_eq!(eval["false_positives"], 0, "{eval}");
    assert!(eval["bad"].as_u64().unwrap_or(0) >= 12, "{eval}");

    let baseline = fixture("crux/fixtures/baseline.json");
    let path = write(dir, "crux.json", &baseline);
    let out = ok(st, &["crux", "run", "--start", &path]);
    assert!(out.contains("## Accepted crux"), "{out}");
    assert!(out.contains("municipal contracts"), "{out}");
    assert!(out.contains("kept off the panel"), "{out}");
    let id = runs(st)[0]["id"].as_str().expect("run id").to_owned();
    let shown = ok(st, &["crux", "show", &id]);
    assert_eq!(
        shown.trim(),
        out.trim(),
        "show prints the same decision aid"
    );

    // Malformed: the JSON path of the problem; refused: the rule; neither is recorded.
    let mut bad = baseline.clone();
    bad["pack"]["items"][1]["text"] = json!(5);
    let err = fails(
        st,
        &["crux", "run", "--start", &write(dir, "bad.json", &bad)],
    );
    assert!(err.contains("pack.items[1].text"), "{err}");
    let mut altered = baseline.clone();
    altered["positions"][0]["claims"][0]["evidence"][0]["quote"] =
        json!("a sentence the pack never says");
    let err = fails(
        st,
        &["crux", "run", "--start", &write(dir, "alt.json", &altered)],
    );
    assert!(err.contains("crux.quote_not_in_source"), "{err}");
    assert_eq!(runs(st).len(), 1, "a refused start left a run behind");
}

fn falsify(st: &Path, dir: &Path) {
    let start = write(dir, "claims.json", &fixture("falsify/fixtures/start.json"));
    let inputs = fixture("falsify/fixtures/inputs.json");
    // A critic whose attack names another refuter than it committed to is refused as a
    // goalpost shift: the run stops there, the refused input changes nothing.
    let mut shifted = inputs.clone();
    let attack = shifted
        .as_array_mut()
        .and_then(|a| a.iter_mut().find(|i| i["input"] == "attack"))
        .expect("an attack");
    attack["refuter"] = json!("derivation_error");
    let err = fails(
        st,
        &[
            "falsify",
            "run",
            &start,
            "--inputs",
            &write(dir, "shifted.json", &shifted),
        ],
    );
    assert!(err.contains("falsify.goalpost_shift"), "{err}");
    roles_speak_only_with_their_keys(st, dir, &start, &inputs);
    let out = ok(
        st,
        &[
            "falsify",
            "run",
            &start,
            "--inputs",
            &write(dir, "inputs.json", &inputs),
        ],
    );
    for bucket in ["BROKEN", "UNFALSIFIABLE", "CORROBORATED"] {
        assert!(out.contains(bucket), "no {bucket} in:\n{out}");
    }
    assert!(out.contains("falsify.escalated"), "{out}");
    says_why_it_deadlocked(&out);
}

/// A report never labels a question a bare "deadlocked": each deadlocked outcome names
/// the acceptance conditions its motion failed (whether or not this run deadlocked).
fn says_why_it_deadlocked(report: &str) {
    for line in report.lines() {
        assert!(
            !line.contains("| deadlocked |"),
            "a deadlock without its reason: {line}"
        );
    }
}

/// Over real sockets: a run binds its critic to `critic.key`; the run stops at the
/// critic's attack (the driver's attack shifted its goalposts). Another client's attack
/// for it, unsigned or signed by a stranger's key, is refused by role and leaves the run
/// where it was; the critic's own key, from another process, moves it on.
fn roles_speak_only_with_their_keys(st: &Path, dir: &Path, start: &str, inputs: &Value) {
    let critic = dir.join("critic.key");
    let stranger = dir.join("stranger.key");
    for k in [&critic, &stranger] {
        let out = offline(&["node", "keygen", "--out", &k.display().to_string()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let items = inputs.as_array().expect("inputs");
    let upto = items
        .iter()
        .position(|i| i["input"] == "attack")
        .expect("an attack");
    let attack = write(dir, "attack.json", &items[upto]);
    let before_attack = write(dir, "before-attack.json", &json!(items[..upto]));
    // Submits the inputs before the attack, then stops: it has no more.
    let err = fails(
        st,
        &[
            "falsify",
            "run",
            start,
            "--inputs",
            &before_attack,
            "--role-key",
            &format!("critic={}", critic.display()),
            "--patience",
            "20",
        ],
    );
    assert!(
        err.contains("did not finish") && err.contains("submit input attack"),
        "{err}"
    );
    let run = runs(st)
        .into_iter()
        .rev()
        .find(|r| r["kind"] == "Falsify" && r["finished"] == false)
        .expect("the stopped run");
    let id = run["id"].as_str().expect("id").to_owned();
    let shown = |st: &Path| ok(st, &["falsify", "show", &id, "--json"]);
    let before = shown(st);
    let err = fails(st, &["runs", "submit", &id, "--input", &attack]);
    assert!(
        err.contains("run_role") && err.contains("must be signed"),
        "{err}"
    );
    let submit = |key: &Path| {
        let key = key.display().to_string();
        vec!["runs", "submit", &id, "--input", &attack, "--key", &key]
            .into_iter()
            .map(String::from)
            .collect::<Vec<String>>()
    };
    let err = fails(st, &args(&submit(&stranger)));
    assert!(err.contains("only the role's own key"), "{err}");
    assert_eq!(shown(st), before, "a refused input changed the run");
    let out = ok(st, &args(&submit(&critic)));
    assert!(out.contains("submitted"), "{out}");
    assert_ne!(shown(st), before, "the critic's own attack did not count");
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A seed refusal's rule and the edit of the demo framing that triggers it.
type Refusal = (&'static str, fn(&mut Value));

fn dossier(st: &Path, dir: &Path) {
    let framing = fixture("dossier/fixtures/start.json");
    let inputs = write(
        dir,
        "dossier-inputs.json",
        &fixture("dossier/fixtures/inputs.json"),
    );
    let refusals: [Refusal; 5] = [
        ("dossier.no_owner", |v| v["framing"]["owner"] = json!(" ")),
        ("dossier.bias_without_defeat", |v| {
            v["framing"]["biases"][0]
                .as_object_mut()
                .expect("bias")
                .remove("defeat_condition");
        }),
        ("dossier.lead_is_advocate", |v| {
            v["framing"]["arbiters"] = json!(["model-beta-medium"])
        }),
        ("dossier.authority_by_majority", |v| {
            v["framing"]["effects"] = json!(["deploy the migration"])
        }),
        ("dossier.evidence_floor_fit", |v| {
            v["framing"]["evidence"] = json!([])
        }),
    ];
    let before = runs(st).len();
    for (rule, edit) in refusals {
        let mut v = framing.clone();
        edit(&mut v);
        let path = write(dir, "refused.json", &v);
        let err = fails(st, &["dossier", "run", &path, "--inputs", &inputs]);
        assert!(err.contains(rule), "{rule} not named:\n{err}");
    }
    assert_eq!(
        runs(st).len(),
        before,
        "a refused framing left a run behind"
    );

    let out = ok(
        st,
        &[
            "dossier",
            "run",
            &write(dir, "q.json", &framing),
            "--inputs",
            &inputs,
        ],
    );
    assert!(out.contains("no effect authority"), "{out}");
    assert!(out.contains("Strongest surviving dissent"), "{out}");
    says_why_it_deadlocked(&out);
    let first = runs(st).last().expect("run")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_record = json(st, &["dossier", "show", &first, "--json"]);

    // A retry is a new run naming the first; the first is never rewritten.
    let retry =
        serde_json::to_value(panel_procedures::dossier::demo_retry_start(&first)).expect("retry");
    let out = ok(
        st,
        &[
            "dossier",
            "run",
            &write(dir, "retry.json", &retry),
            "--inputs",
            &inputs,
        ],
    );
    assert!(
        out.contains(&first),
        "the retry does not name {first}:\n{out}"
    );
    let last = runs(st).last().expect("run").clone();
    assert_eq!(last["retry_of"], json!(first), "{last}");
    assert_eq!(
        json(st, &["dossier", "show", &first, "--json"]),
        first_record
    );
}

fn verify(st: &Path, dir: &Path) {
    let record = dir.join("record.json");
    ok(st, &["export", "--out", &record.display().to_string()]);
    let out = offline(&["verify", &record.display().to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("procedure runs"), "{text}");
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(&record).expect("record")).expect("JSON");
    let runs = v["runs"].as_object_mut().expect("runs in the record");
    let (id, run) = runs.iter_mut().next().expect("a run");
    let id = id.clone();
    run["convener"] = json!("someone else");
    let tampered = write(dir, "tampered.json", &v);
    let out = offline(&["verify", &tampered]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("procedure run {id}")), "{err}");
}

/// One `StartRun` sent as it is, through `panel coordinator write` under mutual TLS with
/// the client identity of `panel up`; the reply as the CLI prints it. The intake's rate
/// limit on new runs per identity (docs/SECURITY.md "What is enforced") refuses before the log, so
/// a write it turns away is sent again, under the same ids, once it says to retry.
fn raw_start(st: &Path, client_id: &str, request_id: u64, req: &RunRequest) -> Value {
    let file: Value =
        serde_json::from_slice(&std::fs::read(st.join("cluster.json")).expect("cluster.json"))
            .expect("cluster.json is JSON");
    let addrs: Vec<&str> = file["coordinators"]
        .as_array()
        .expect("coordinators")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let command = serde_json::to_string(&Command::from(ClientCommand::StartRun(Box::new(
        req.clone(),
    ))))
    .expect("encode");
    let send = || {
        panel_tests::panel()
            .args(["coordinator", "write", "--addr", &addrs.join(",")])
            .args(["--client-id", client_id, "--request-id"])
            .arg(request_id.to_string())
            .args(["--command", &command, "--tls"])
            .arg(file["tls"].as_str().expect("tls folder"))
            .output()
            .expect("run panel")
    };
    let mut out = send();
    for _ in 0..60 {
        let err = String::from_utf8_lossy(&out.stderr);
        if !(err.contains("too many") && err.contains("retry in")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        out = send();
    }
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not a reply: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn refused_start(reply: &Value, want: &str) {
    assert_eq!(reply["applied"], false, "{reply}");
    assert_eq!(reply["result"]["code"], "run_convener", "{reply}");
    assert!(
        reply["result"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(want)),
        "{want:?} not in {reply}"
    );
}

/// Signed runs (docs/SECURITY.md "What is enforced"), over the wire: a chartered group starts a run only from its
/// registered convener's signed request. The convener `panel up` registered (`operator`,
/// its key in the state folder) starts one; the same signed request sent again under new
/// ids, the name under another key, and an unsigned start are refused, and the same ids
/// again are the same write (deduplicated): one run more, not two.
fn starts_are_signed_by_their_convener(st: &Path) {
    let before = runs(st).len();
    let operator = panel_node::keyfile::load_key(&st.join("operator.key")).expect("operator.key");
    let start = panel_procedures::RunStart::Falsify(panel_procedures::falsify::demo_start());
    let role_keys = start
        .roles()
        .into_iter()
        .enumerate()
        .map(|(n, role)| {
            let k = ed25519_dalek::SigningKey::from_bytes(&[n as u8 + 1; 32]);
            (role, hex::encode(k.verifying_key().to_bytes()).into())
        })
        .collect();
    let unsigned = RunRequest {
        start,
        seats: 2,
        min_per_stance: 1,
        policy: None,
        simulation: true,
        convener: "operator".into(),
        retry_of: None,
        role_keys,
        signature: None,
    };
    let mut honest = unsigned.clone();
    honest.signature = Some(run_convener::sign(&operator, &unsigned, "conv", 1).expect("sign"));
    let first = raw_start(st, "conv", 1, &honest);
    assert_eq!(first["applied"], true, "{first}");
    // The captured request under a new request id: its signature no longer verifies.
    refused_start(&raw_start(st, "conv", 2, &honest), "does not verify");
    // The same ids: the same write, answered from the deduplication table.
    let again = raw_start(st, "conv", 1, &honest);
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["result"], first["result"], "{again}");
    // The convener's name, signed by a key that is not its own.
    let thief = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let mut stolen = unsigned.clone();
    stolen.signature = Some(run_convener::sign(&thief, &unsigned, "conv", 3).expect("sign"));
    refused_start(&raw_start(st, "conv", 3, &stolen), "is bound to key");
    refused_start(
        &raw_start(st, "conv", 4, &unsigned),
        "$.signature is missing",
    );
    assert_eq!(runs(st).len(), before + 1, "exactly one run more");
}

#[test]
fn the_seed_procedures_run_on_a_live_panel_and_verify_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cluster: Cluster = start(dir.path(), &["--procedure", "none"]);
    cluster.wait_ready();
    let st = cluster.state.clone();
    crux(&st, dir.path());
    falsify(&st, dir.path());
    dossier(&st, dir.path());
    verify(&st, dir.path());
    starts_are_signed_by_their_convener(&st);
    cluster.stop();
}
