//! The user's CLI against a real running panel: `panel up --keep` starts 3 coordinator
//! and 8 arbiter node processes and runs the worked example (and the contested question); then every read command
//! (debate, motion, arbiter, verdict, export) is exercised in text and JSON, a new debate
//! is opened and advanced through the panel, the Gate refuses an abusive claim with the
//! rule, excerpt and fix before anything is sent, a clean claim is accepted, and bad
//! input (malformed keys, bad addresses, unknown ids) fails with a clear message.

use std::path::Path;

use panel_tests::local_panel::{
    appeal_deb_1, fails, json, ok, register_contributor, start, text, user,
};
use panel_tests::panel;
use serde_json::Value;

const ABUSIVE: &str = "Only an idiot would deny that OBVIOUSLY remote work raises output!!";

/// Where the test keeps cara's key: the panel is chartered, so cara is registered with
/// its organisation's endorsement and signs every contribution (`--key`).
fn cara_key(st: &Path) -> String {
    st.join("cara.key").display().to_string()
}

/// Registers cara under northwind (`panel org register-contributor`).
fn register_cara(st: &Path) {
    register_contributor(st, "cara", &cara_key(st), "northwind");
}

/// docs/PANEL.md "Random-sample appeals": dan (southbank) appeals deb_1 for side A and
/// asks for a random sample of the whole admitted population. The appeal is the
/// debate's second round, so it costs 4, and the debate's record lists it as sampled.
fn a_random_sample_appeal_is_filed(st: &Path) {
    let key = st.join("dan.key").display().to_string();
    register_contributor(st, "dan", &key, "southbank");
    let filed = appeal_deb_1(st, &key, "dan", "A", "thr_2", &["--random-sample"]);
    assert!(
        filed.contains("deposit: 4 appeal credit(s) charged to southbank for appeal round 2"),
        "{filed}"
    );
    assert!(filed.contains("accepted: appeal app_2 filed"), "{filed}");
    let shown = ok(st, &["debate", "show", "deb_1"]);
    assert!(
        shown.contains("app_2 by side A (A2): ")
            && shown.contains("put to a random sample of the admitted population"),
        "{shown}"
    );
    assert!(
        !shown.contains("app_1 by side B (A2): filed, put to a random sample"),
        "{shown}"
    );
}

/// An appeal costs its appellant's organisation a deposit (docs/PANEL.md "Funded
/// appeals"): cara (northwind) appeals deb_1's verdict as its first appeal, is charged
/// two of northwind's eight credits, and `panel debate show` lists the deposit and every
/// organisation's balance.
fn appeals_are_funded(st: &Path, cara: &str) {
    let filed = appeal_deb_1(st, cara, "cara", "B", "thr_1", &[]);
    assert!(
        filed.contains(
            "deposit: 2 appeal credit(s) charged to northwind for appeal round 1; balance left: 6"
        ),
        "{filed}"
    );
    let shown = ok(st, &["debate", "show", "deb_1"]);
    for needle in [
        "deposit 2 credit(s) from northwind (round 1)",
        "appeal credits (each organisation holds up to 8",
        "northwind",
        "southbank",
    ] {
        assert!(shown.contains(needle), "{needle:?} in {shown}");
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn thread_args<'a>(assertion: &'a str, title: &'a str, key: &'a str) -> Vec<&'a str> {
    vec![
        "thread",
        "--key",
        key,
        "--debate",
        "deb_3",
        "--author",
        "cara",
        "--side",
        "A",
        "--title",
        title,
        "--type",
        "logical",
        "--assertion",
        assertion,
        "--grounds",
        "Office workers commute a measurable amount each day.",
        "--warrant",
        "Time returned from commuting can be spent on tasks that produce output.",
        "--qualifier",
        "plausible",
    ]
}

/// A new simulation debate on remote work under the head-count rule with a two-second
/// appeal window; `panel debate new --json`'s reply.
fn remote_work_debate(st: &Path) -> Value {
    json(
        st,
        &[
            "debate",
            "new",
            "--resolution",
            "Resolved: remote work raises output per employee.",
            "--pos-a",
            "Remote work raises output",
            "--pos-b",
            "Remote work does not raise output",
            "--policy",
            "head-count",
            "--appeal-window-secs",
            "2",
            "--simulation",
            "--json",
        ],
    )
}

/// Waits until one of `debate`'s merge motions (`panel motion list --json`) satisfies
/// `done`; that motion.
fn wait_merge(st: &Path, debate: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let listed = json(st, &["motion", "list", "--debate", debate, "--json"]);
        let merges: Vec<&Value> = listed["motions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["spec"]["question"]["kind"] == "merge")
            .collect();
        if let Some(m) = merges.iter().find(|m| done(m)) {
            return (*m).clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no merge of {debate} got there: {merges:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// docs/PANEL.md "Precedent": once deb_3's merge of cara's claim is final, the same claim
/// in a new debate on the same resolution is merged by citing it, with no panel, and
/// `panel motion show` names the cited motion.
///
/// The panels decide deb_3's merge by chance: when they leave it not proven instead, the
/// local panel's last-word authority decides it (docs/PANEL.md "The last word"), and
/// `panel motion show` names the route.
fn precedent_answers_the_same_claim_in_a_new_debate(st: &Path, cara: &str) {
    let ended = |m: &Value| {
        matches!(
            m["finality"]["status"].as_str(),
            Some("final") | Some("not_proven")
        )
    };
    let first = wait_merge(st, "deb_3", ended);
    if first["finality"]["status"] == "not_proven" {
        let id = first["spec"]["motion_id"].as_str().expect("an id");
        let key = st.join("pki/last-word.key");
        let key = key.to_str().expect("utf-8 path");
        let last_word = |answer: &'static str, reason: &'static str| {
            [
                "debate",
                "last-word",
                "--debate",
                "deb_3",
                "--motion",
                id,
                "--answer",
                answer,
                "--reason",
                reason,
                "--key",
                key,
            ]
        };
        let said = ok(
            st,
            &last_word(
                "yes",
                "The claim follows from its grounds; the panels split on its wording.",
            ),
        );
        assert!(said.contains("is final"), "{said}");
        let shown = ok(st, &["motion", "show", id]);
        assert!(shown.contains("last word of"), "{shown}");
        assert!(shown.contains("status: final"), "{shown}");
        let e = fails(st, &last_word("no", "Again."));
        assert!(e.contains("already has the last word"), "{e}");
        return;
    }
    assert!(first["precedent"].is_null(), "{first}");
    let created = remote_work_debate(st);
    let debate = created["debate_id"]
        .as_str()
        .expect("a debate id")
        .to_owned();
    let adv = ok(
        st,
        &["ask", "--debate", &debate, "--advance", "framing", "--wait"],
    );
    assert!(adv.contains("ACCEPTED"), "{adv}");
    let mut again = thread_args(
        "Remote work returns commuting time that can be spent on work.",
        "Commute time",
        cara,
    );
    again[4] = &debate;
    ok(st, &again);
    let cited = wait_merge(st, &debate, |m| m["status"] != "Open");
    assert_eq!(
        cited["precedent"]["motion_id"], first["spec"]["motion_id"],
        "{cited}"
    );
    assert_eq!(cited["seats"].as_array().map(Vec::len), Some(0), "{cited}");
    let id = cited["spec"]["motion_id"].as_str().expect("an id");
    let shown = ok(st, &["motion", "show", id]);
    assert!(shown.contains("answered by precedent"), "{shown}");
    // Its answer did what a panel's would have: the claim is the thread's canonical one.
    let doc = json(st, &["debate", "show", &debate, "--json"]);
    assert!(doc["threads"][0]["canonicalId"].is_string(), "{doc}");
}

#[test]
fn the_user_cli_reads_writes_and_refuses_on_a_running_panel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cluster = start(dir.path(), &["--procedure", "none"]);
    cluster.wait_ready();
    let st = cluster.state.clone();
    let st = st.as_path();

    // cluster.json names the three replicas; PANEL_ADDR and --addr work as well.
    let file: Value =
        serde_json::from_slice(&std::fs::read(st.join("cluster.json")).expect("cluster.json"))
            .expect("cluster.json is JSON");
    let addrs: Vec<String> = file["coordinators"]
        .as_array()
        .expect("coordinators")
        .iter()
        .map(|a| a.as_str().expect("addr").to_string())
        .collect();
    assert_eq!(addrs.len(), 3);
    // The replicas speak mutual TLS only: away from the state folder, the CLI needs the
    // identity folder `panel up` issued (PANEL_TLS or --tls), and plaintext gets nothing.
    let tls = file["tls"]
        .as_str()
        .expect("cluster.json names the client identity");
    let nowhere = dir.path().join("nowhere");
    let out = panel()
        .args(["debate", "list", "--state"])
        .arg(&nowhere)
        .env("PANEL_ADDR", addrs.join(","))
        .env("PANEL_TLS", tls)
        .output()
        .expect("run panel");
    assert!(out.status.success() && text(&out.stdout).contains("deb_1"));
    assert!(
        ok(
            &nowhere,
            &["debate", "list", "--addr", &addrs[2], "--tls", tls]
        )
        .contains("deb_1")
    );
    let plain = fails(&nowhere, &["debate", "list", "--addr", &addrs[2]]);
    assert!(plain.contains("no coordinator answered"), "{plain}");
    let e = fails(&nowhere, &["debate", "list"]);
    assert!(
        e.contains("cluster.json") && e.contains("--addr") && e.contains("PANEL_ADDR"),
        "{e}"
    );
    let e = fails(st, &["debate", "list", "--addr", "not-an-address"]);
    assert!(e.contains("host:port"), "{e}");

    // Debates.
    let list = json(st, &["debate", "list", "--json"]);
    assert_eq!(list["debates"][0]["id"], "deb_1");
    assert_eq!(list["debates"][0]["phase"], "closed");
    let doc = json(st, &["debate", "show", "deb_1", "--json"]);
    assert_eq!(doc["threads"].as_array().map(Vec::len), Some(4));
    assert_eq!(doc["verdicts"].as_array().map(Vec::len), Some(2));
    let show = ok(st, &["debate", "show", "deb_1"]);
    for needle in [
        "phase closed",
        "thr_1",
        "canonical ver_1",
        "merit 3.96",
        "verdict 2",
    ] {
        assert!(
            show.contains(needle),
            "debate show lacks {needle:?}:\n{show}"
        );
    }
    let e = fails(st, &["debate", "show", "deb_404"]);
    assert!(e.contains("deb_404 does not exist"), "{e}");

    // Verdicts: A wins the first, the second is unresolved.
    let v = json(st, &["verdict", "deb_1", "--json"]);
    assert_eq!(v["verdicts"][0]["winner"], "A");
    assert_eq!(v["verdicts"][1]["winner"], Value::Null);
    let vt = ok(st, &["verdict", "deb_1"]);
    assert!(
        vt.contains("side A wins") && vt.contains("no winner"),
        "{vt}"
    );

    // Motions: the tier verification of A1's citation, with rulings by stance.
    let motions = json(st, &["motion", "list", "--debate", "deb_1", "--json"]);
    let motions = motions["motions"].as_array().expect("motions");
    assert!(motions.len() > 10);
    let verify = motions
        .iter()
        .find(|m| {
            m["spec"]["question"]["kind"] == "verify-tier"
                && m["status"]["Decided"]["Accepted"].is_object()
        })
        .expect("an accepted tier verification");
    let id = verify["spec"]["motion_id"].as_str().expect("motion id");
    let shown = ok(st, &["motion", "show", id]);
    for needle in [
        "verify tier of ver_1",
        "rulings of stance A",
        "rulings of stance B",
        "ACCEPT",
        "rationale:",
        "northwind",
        "southbank",
        // The motion the seats judged, sealed by the leader and one replica of the other
        // organisation (docs/WIRE.md "Motion seals").
        "sealed by 2 replica(s)",
    ] {
        assert!(
            shown.contains(needle),
            "motion show lacks {needle:?}:\n{shown}"
        );
    }
    let mj = json(st, &["motion", "show", id, "--json"]);
    let rulings = mj["rulings"].as_array().expect("decoded rulings");
    assert_eq!(rulings.len(), 4);
    assert!(
        rulings
            .iter()
            .all(|r| r["arbiter"].as_str().is_some_and(|a| a.starts_with("arb-")))
    );
    assert!(ok(st, &["motion", "list", "--debate", "deb_1"]).contains("ACCEPTED"));
    let e = fails(st, &["motion", "show", "mot-nope"]);
    assert!(e.contains("mot-nope does not exist"), "{e}");

    // Arbiters.
    let arbs = json(st, &["arbiter", "list", "--json"]);
    let arbs = arbs["arbiters"].as_array().expect("arbiters");
    // The worked example's four and the contested question's four more (`up_dissent`).
    assert_eq!(arbs.len(), 8);
    assert!(arbs.iter().all(|a| a["admitted"] == true));
    let a = ok(st, &["arbiter", "show", "arb-north-a"]);
    assert!(
        a.contains("Brier") && a.contains("admission: admitted"),
        "{a}"
    );
    // The exam read as a person would (docs/CALIBRATION.md): the bias probes with intervals,
    // the reliability table with counts and Wilson intervals, topics, and the items held
    // back from admission now on the track record.
    for part in [
        "bias probes",
        "order flips",
        "reliability of binary forecasts",
        "95% interval",
        "calibration per topic",
        "challenge",
        "held back from the admission score: 8 binary items",
        "track record on resolved outcomes: 8 since the latest exam",
    ] {
        assert!(a.contains(part), "arbiter show lacks {part:?}:\n{a}");
    }
    // The leaderboard ranks all eight on those resolved forecasts, counts beside scores.
    let board = ok(st, &["arbiter", "leaderboard"]);
    assert!(
        board.contains("leaderboard on resolved forecasts"),
        "{board}"
    );
    assert!(board.contains("resolved by: exam-held-back 64"), "{board}");
    assert!(board.contains("organisation"), "{board}");
    let lb = json(st, &["arbiter", "leaderboard", "--json"]);
    let rows = lb["forecasters"].as_array().expect("forecasters");
    assert_eq!(rows.len(), 8, "{lb}");
    assert!(rows.iter().all(|r| r["resolved"] == 8), "{lb}");
    assert_eq!(
        json(st, &["arbiter", "show", "arb-north-a", "--json"])["exam"]["decision"]["admitted"],
        true
    );
    assert!(fails(st, &["arbiter", "show", "nobody"]).contains("not registered"));

    // Malformed keys are refused before anything is sent.
    let reg = |key: &str| {
        fails(
            st,
            &[
                "arbiter",
                "register",
                "--id",
                "arb-new",
                "--public-key",
                key,
                "--organisation",
                "eastgate",
                "--model-family",
                "family-z",
                "--stance",
                "A",
                "--endpoint",
                "http://127.0.0.1:9",
            ],
        )
    };
    assert!(reg("abcd").contains("32 bytes"));
    assert!(reg(&"zz".repeat(32)).contains("not hex"));
    assert!(reg(&"00".repeat(32)).contains("weak"));
    let key_file = dir.path().join("not-a-key");
    std::fs::write(&key_file, "hello").expect("write");
    let e = fails(
        st,
        &[
            "arbiter",
            "register",
            "--id",
            "arb-new",
            "--key-file",
            key_file.to_str().expect("utf-8 path"),
            "--organisation",
            "eastgate",
            "--model-family",
            "family-z",
            "--stance",
            "A",
            "--endpoint",
            "http://127.0.0.1:9",
        ],
    );
    assert!(e.contains("not-a-key"), "{e}");
    assert_eq!(
        json(st, &["arbiter", "list", "--json"])["arbiters"]
            .as_array()
            .map(Vec::len),
        Some(8),
        "a refused registration must not register anything"
    );

    // Export, then the offline verifier accepts it.
    let out_file = dir.path().join("export.json");
    let ex = ok(
        st,
        &["export", "--out", out_file.to_str().expect("utf-8 path")],
    );
    assert!(ex.contains("signed checkpoint"), "{ex}");
    let verified = panel()
        .arg("verify")
        .arg(&out_file)
        .output()
        .expect("verify");
    assert!(
        verified.status.success(),
        "panel verify refused the export: {}",
        text(&verified.stderr)
    );
    ok(st, &["export"]);
    assert!(st.join("record-export.json").exists());

    // A new debate, advanced through the panel. It asks for the older head-count rule:
    // under the default (independent) rule the draw does not yet seat both stances in both
    // organisations, so rule 5 deadlocks some 4-seat framing panels (docs/SECURITY.md,
    // "Organisation"), and the rest of this test needs the debate in construction.
    let created = remote_work_debate(st);
    // deb_1 is the worked example, deb_2 the contested question (`panel up`).
    assert_eq!(created["debate_id"], "deb_3");
    // An advance whose prerequisites do not hold is refused before any panel is asked,
    // with the engine's reason (no yes is ever dropped silently).
    let advance_from_construction = || {
        fails(
            st,
            &[
                "ask",
                "--debate",
                "deb_3",
                "--advance",
                "construction",
                "--wait",
            ],
        )
    };
    let early = advance_from_construction();
    assert!(
        early.contains("PHASE_NOT_ADVANCEABLE")
            && early.contains("is in framing, not construction"),
        "{early}"
    );
    // The outcome is provisional for the debate's two-second appeal window, then final
    // (docs/PANEL.md "Finality"); `--wait final` waits for that.
    let adv = ok(
        st,
        &[
            "ask",
            "--debate",
            "deb_3",
            "--advance",
            "framing",
            "--wait",
            "final",
            "--wait-secs",
            "60",
        ],
    );
    assert!(adv.contains("ACCEPTED"), "{adv}");
    assert!(adv.contains("how sure: "), "{adv}");
    assert!(adv.contains("status: final since log index"), "{adv}");
    assert!(adv.contains("appeal window closed"), "{adv}");
    let shown = ok(st, &["debate", "show", "deb_3"]);
    assert!(shown.contains("outcome statuses"), "{shown}");
    let early = advance_from_construction();
    assert!(
        early.contains("PHASE_PREREQ_UNMET") && early.contains("merged claim"),
        "{early}"
    );
    assert_eq!(
        json(st, &["debate", "show", "deb_3", "--json"])["phase"],
        "construction"
    );

    // Stances are declared per debate, signed with the arbiter's own key file: accepted
    // once, refused when signed by another arbiter's key or when the camp switches.
    let key_of = |id: &str| {
        st.join("nodes")
            .join(id)
            .join("arbiter.key")
            .display()
            .to_string()
    };
    let declare = |id: &str, key: &str, stance: &str| {
        vec![
            "arbiter".to_string(),
            "declare".into(),
            "--id".into(),
            id.into(),
            "--key-file".into(),
            key.into(),
            "--debate".into(),
            "deb_3".into(),
            "--stance".into(),
            stance.into(),
        ]
    };
    let own = declare("arb-north-c", &key_of("arb-north-c"), "A");
    let said = ok(st, &strs(&own));
    assert!(
        said.contains("declared stance A for debate deb_3"),
        "{said}"
    );
    let stolen = declare("arb-south-c", &key_of("arb-north-c"), "B");
    let e = fails(st, &strs(&stolen));
    assert!(e.contains("does not verify"), "{e}");
    let switched = declare("arb-north-c", &key_of("arb-north-c"), "B");
    let e = fails(st, &strs(&switched));
    assert!(e.contains("cannot change"), "{e}");
    let mut overconfident = declare("arb-north-c", &key_of("arb-north-c"), "A");
    overconfident.extend(["--credence".to_string(), "1.5".to_string()]);
    let e = fails(st, &strs(&overconfident));
    assert!(e.contains("--credence 1.5 must lie in [0, 1]"), "{e}");

    register_cara(st);
    let cara = cara_key(st);
    // The Gate refuses an abusive claim here, with rule, excerpt and fix; nothing is sent.
    let e = fails(st, &thread_args(ABUSIVE, "Remote output", &cara));
    for needle in ["G4", "G7", "idiot", "excerpt:", "fix:", "nothing was sent"] {
        assert!(e.contains(needle), "the Gate report lacks {needle:?}:\n{e}");
    }
    assert!(e.contains("Take the person out of the sentence"), "{e}");
    let gj = user(
        st,
        &[
            &thread_args(ABUSIVE, "Remote output", &cara)[..],
            &["--json"],
        ]
        .concat(),
    );
    assert_eq!(gj.status.code(), Some(1));
    let gj: Value = serde_json::from_slice(&gj.stdout).expect("violations as JSON");
    assert!(
        gj["violations"]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x["rule"] == "G4" && x["fix"].is_string()))
    );
    assert_eq!(
        json(st, &["debate", "show", "deb_3", "--json"])["threads"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "a refused contribution must not reach the debate"
    );

    // A clean claim is accepted and its version id printed.
    let accepted = ok(
        st,
        &thread_args(
            "Remote work returns commuting time that can be spent on work.",
            "Commute time",
            &cara,
        ),
    );
    assert!(
        accepted.contains("ver_1") && accepted.contains("thr_1"),
        "{accepted}"
    );
    let doc = json(st, &["debate", "show", "deb_3", "--json"]);
    assert_eq!(doc["threads"][0]["versions"][0]["author"], "cara");

    precedent_answers_the_same_claim_in_a_new_debate(st, &cara);

    // A protocol refusal prints the code and the message.
    let e = fails(
        st,
        &[
            "respond",
            "--key",
            &cara,
            "--debate",
            "deb_3",
            "--author",
            "cara",
            "--side",
            "A",
            "--challenge",
            "chl_99",
            "--text",
            "The challenge misreads the claim.",
        ],
    );
    assert!(
        e.contains("CHALLENGE_NOT_FOUND") && e.contains("chl_99"),
        "{e}"
    );

    // Tier verification on request: a citation that does not exist is refused with the
    // protocol's code; A1's citation is retrieved again by the panel and confirmed.
    let e = fails(
        st,
        &[
            "ask",
            "--debate",
            "deb_3",
            "--verify-tier",
            "ver_1",
            "--thread",
            "thr_1",
            "--citation",
            "0",
        ],
    );
    assert!(e.contains("code:"), "{e}");
    let asked = ok(
        st,
        &[
            "ask",
            "--debate",
            "deb_1",
            "--verify-tier",
            "ver_1",
            "--thread",
            "thr_1",
            "--citation",
            "0",
            "--wait",
        ],
    );
    assert!(
        asked.contains("verify-tier:ver_1:0") && asked.contains("ACCEPTED"),
        "{asked}"
    );

    appeals_are_funded(st, &cara);
    a_random_sample_appeal_is_filed(st);

    cluster.stop();

    // The cluster file is now stale, and the CLI says so.
    let e = fails(st, &["debate", "list"]);
    assert!(e.contains("no longer running"), "{e}");
}
