//! Replay scripts pass a writer's data object (`addVersion(debate, thread, data)` and the
//! other writers that take one) either flattened into `args` or nested under
//! `args.data`, with the same result; malformed data stops the replay with the JSON path
//! and the fix instead of being dropped.

use crucible::replay::{ScriptError, run};
use serde_json::{Value, json};

/// The data-object fields of each writer that takes one, as the reference names them.
const DATA_FIELDS: [(&str, &[&str]); 7] = [
    (
        "newDebate",
        &["resolution", "posA", "posB", "burden", "claimBudget"],
    ),
    ("addDefinition", &["term", "definition", "author", "side"]),
    (
        "addVersion",
        &[
            "parentId",
            "author",
            "side",
            "type",
            "assertion",
            "grounds",
            "warrant",
            "evidence",
            "qualifier",
            "relevance",
        ],
    ),
    (
        "fileChallenge",
        &[
            "threadId",
            "versionId",
            "ground",
            "text",
            "evidence",
            "author",
            "side",
        ],
    ),
    (
        "fileAppeal",
        &[
            "side",
            "author",
            "ground",
            "justification",
            "evidence",
            "targetThreadIds",
        ],
    ),
    ("issueVerdict", &["actor", "rationale"]),
    ("concludeAppealReview", &["rationale"]),
];

fn script(steps: Vec<Value>) -> Value {
    json!({"env": {"clock": {"start": 1000, "step": 10}, "ids": "counter-per-prefix"}, "steps": steps})
}

/// Every writer that takes a data object, with its fields flattened into `args`: a
/// debate through one verdict, an appeal and the verdict that concludes it.
fn flattened() -> Vec<Value> {
    let cite = |tier: &str| json!({"source": "Survey", "url": "http://127.0.0.1/s", "tier": tier});
    vec![
        json!({"op": "newDebate", "args": {"resolution": "Resolved: p.", "posA": "yes", "posB": "no", "burden": "A", "claimBudget": 2}}),
        json!({"op": "addDefinition", "args": {"term": "output", "definition": "units per employee", "author": "ada", "side": "A"}}),
        json!({"op": "createThread", "args": {"side": "A", "title": "Trial data", "actor": "ada"}}),
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "author": "ada", "side": "A", "type": "empirical",
            "assertion": "Output per employee held.", "grounds": "The tabulation.", "warrant": "Held output means no loss.",
            "evidence": [cite("T2")], "qualifier": "probable", "relevance": 0.75}}),
        json!({"op": "mergeVersion", "args": {"threadId": "thr_1", "versionId": "ver_1", "rationale": "first"}}),
        json!({"op": "createThread", "args": {"side": "B", "title": "Pooled studies", "actor": "bo"}}),
        json!({"op": "addVersion", "args": {"threadId": "thr_2", "author": "bo", "side": "B", "type": "logical",
            "assertion": "Coordination absorbs the gain.", "qualifier": "certain"}}),
        json!({"op": "mergeVersion", "args": {"threadId": "thr_2", "versionId": "ver_2", "rationale": "first"}}),
        json!({"op": "fileChallenge", "args": {"threadId": "thr_1", "versionId": "ver_1", "ground": "relevance",
            "text": "Volunteer firms only.", "evidence": [cite("T3")], "author": "bo", "side": "B"}}),
        json!({"op": "resolveChallenge", "args": {"challengeId": "chl_1", "resolution": "dismissed", "rationale": "covered"}}),
        json!({"op": "issueVerdict", "args": {"actor": "arbiter-1", "rationale": "Ledger as stated."}}),
        json!({"op": "closeDebate", "args": {"actor": "arbiter-1"}}),
        json!({"op": "fileAppeal", "args": {"side": "B", "author": "bo", "ground": "A2", "justification": "Relevance misjudged.",
            "evidence": [cite("T1")], "targetThreadIds": ["thr_1"]}}),
        json!({"op": "decideAppeal", "args": {"appealId": "app_1", "admit": true, "rationale": "arguable"}}),
        json!({"op": "concludeAppealReview", "args": {"actor": "arbiter-2", "rationale": "Reviewed."}}),
    ]
}

/// The same steps with each data object nested under `args.data`.
fn nested() -> Vec<Value> {
    flattened()
        .into_iter()
        .map(|mut step| {
            let op = step["op"].as_str().unwrap_or_default().to_string();
            let Some((_, fields)) = DATA_FIELDS.iter().find(|(o, _)| *o == op) else {
                return step;
            };
            let args = step["args"].as_object_mut().expect("every step has args");
            let mut data = serde_json::Map::new();
            for f in *fields {
                if let Some(v) = args.remove(*f) {
                    data.insert((*f).to_string(), v);
                }
            }
            args.insert("data".into(), Value::Object(data));
            step
        })
        .collect()
}

fn error(steps: Vec<Value>) -> ScriptError {
    run(&script(steps)).expect_err("the script is malformed")
}

/// A debate with one thread, then `step` as the third step (index 2).
fn third(step: Value) -> Vec<Value> {
    vec![
        json!({"op": "newDebate", "args": {"resolution": "r", "posA": "a", "posB": "b"}}),
        json!({"op": "createThread", "args": {"side": "A", "title": "T"}}),
        step,
    ]
}

#[test]
fn nested_data_is_read_like_flattened_data_for_every_writer() {
    let flat = run(&script(flattened())).expect("flattened script runs");
    let deep = run(&script(nested())).expect("nested script runs");
    assert_eq!(deep.results, flat.results);
    assert_eq!(deep.to_json(), flat.to_json());
    // Each result is what the reference returns: the created object (its id here),
    // `null` from a writer that succeeded (tests/replay_conformance.rs checks shapes).
    let ids: Vec<Value> = flat
        .results
        .iter()
        .map(|r| r.get("id").or(r.get("n")).cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        ids,
        json!([
            "deb_1", null, "thr_1", "ver_1", null, "thr_2", "ver_2", null, "chl_1", null, 1, null,
            "app_1", null, null
        ])
        .as_array()
        .cloned()
        .unwrap_or_default()
    );
    assert_eq!(
        flat.results[1]["term"], "output",
        "addDefinition returns the entry"
    );
    // Nothing of the nested data was dropped.
    let doc = deep.to_json()["document"].clone();
    assert_eq!(doc["positions"], json!({"A": "yes", "B": "no"}));
    assert_eq!(
        (doc["burden"].as_str(), doc["claimBudget"].as_i64()),
        (Some("A"), Some(2))
    );
    assert_eq!(doc["definitions"][0]["term"], "output");
    let v = &doc["threads"][0]["versions"][0];
    assert_eq!(v["assertion"], "Output per employee held.");
    assert_eq!(v["warrant"], "Held output means no loss.");
    assert_eq!(
        (v["type"].as_str(), v["qualifier"].as_str()),
        (Some("empirical"), Some("probable"))
    );
    assert_eq!(v["evidence"][0]["tier"], "T2");
    assert_eq!(v["relevance"], 0.75);
    assert_eq!(doc["challenges"][0]["text"], "Volunteer firms only.");
    assert_eq!(doc["challenges"][0]["evidence"][0]["tier"], "T3");
    assert_eq!(doc["appeals"][0]["justification"], "Relevance misjudged.");
    assert_eq!(doc["appeals"][0]["targetThreadIds"], json!(["thr_1"]));
    assert_eq!(doc["verdicts"][0]["rationale"], "Ledger as stated.");
    assert_eq!(doc["verdicts"][1]["rationale"], "Reviewed.");
    assert_eq!(doc["verdicts"][1]["viaAppealId"], "app_1");
    let actors: Vec<&str> = doc["log"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["action"] == "verdict-issued")
        .filter_map(|e| e["actor"].as_str())
        .collect();
    assert_eq!(actors, ["arbiter-1", "arbiter-2"]);
}

#[test]
fn nested_add_version_scores_its_evidence() {
    let steps = third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "data": {
        "side": "A", "type": "logical", "assertion": "A holds.", "qualifier": "certain"}}}),
    );
    let mut steps = steps;
    steps.push(json!({"op": "mergeVersion", "args": {"threadId": "thr_1", "versionId": "ver_1"}}));
    steps.push(json!({"op": "issueVerdict"}));
    let doc = run(&script(steps)).expect("script runs").to_json()["document"].clone();
    assert_eq!(doc["threads"][0]["versions"][0]["assertion"], "A holds.");
    assert_eq!(
        doc["verdicts"][0]["totals"]["A"], 2,
        "logical 2 x 1 x 1 x certain 1: the nested fields reached the ledger"
    );
}

#[test]
fn an_explicitly_empty_data_object_is_the_reference_empty_version() {
    let r = run(&script(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "data": {}}}),
    )))
    .expect("an empty data object is allowed, as addVersion(d, t, {}) is");
    assert_eq!(r.results[2]["id"], "ver_1");
    assert_eq!(r.results[2]["evidence"], json!([]));
}

#[test]
fn a_writer_call_without_its_data_object_is_refused() {
    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1"}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data");
    assert!(e.message.contains("addVersion needs the version"), "{e}");
    assert!(e.message.contains("\"data\": {}"), "{e}");
    // The op's own arguments are checked first (the `panel replay` interop test relies on it).
    let e = error(vec![
        json!({"op": "newDebate"}),
        json!({"op": "addVersion", "args": {"threadId": 5}}),
    ]);
    assert_eq!(e.path, "$.steps[1].args.threadId");
    let e = error(third(json!({"op": "fileAppeal"})));
    assert_eq!(e.path, "$.steps[2].args.data");
    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "data": null}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data", "null data is no data");
}

#[test]
fn data_of_the_wrong_type_names_its_path() {
    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "data": "A holds."}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data");
    assert!(e.message.contains("expected an object"), "{e}");
    assert!(e.message.contains("found a string"), "{e}");

    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1", "data": {"assertion": 7}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.assertion");
    assert!(
        e.message
            .contains("expected a string or null, found a number"),
        "{e}"
    );

    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1",
        "data": {"evidence": [{"source": "S", "tier": 2}]}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.evidence[0].tier");

    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1",
        "data": {"relevance": "high"}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.relevance");
    assert!(e.message.contains("expected a number"), "{e}");

    let e = error(third(
        json!({"op": "fileAppeal", "args": {"data": {"side": "B",
        "targetThreadIds": ["thr_1", 2]}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.targetThreadIds[1]");
    assert!(
        e.message.contains("expected a string, found a number"),
        "{e}"
    );

    let e = error(third(
        json!({"op": "issueVerdict", "args": {"data": {"rationale": ["x"]}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.rationale");
}

#[test]
fn a_missing_required_field_inside_data_names_its_path() {
    let e = error(third(json!({"op": "fileChallenge", "args": {"data": {
        "versionId": "ver_1", "side": "B"}}})));
    assert_eq!(e.path, "$.steps[2].args.data.threadId");
    assert!(e.message.contains("required string is missing"), "{e}");
    assert!(e.message.contains("add \"threadId\""), "{e}");
}

#[test]
fn unknown_and_misplaced_keys_are_refused_with_the_fix() {
    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1",
        "data": {"assertoin": "typo"}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data.assertoin");
    assert!(
        e.message.contains("the version has no field \"assertoin\""),
        "{e}"
    );
    assert!(
        e.message.contains("assertion"),
        "lists the real fields: {e}"
    );

    // A data object under another name is not dropped silently.
    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1",
        "version": {"assertion": "A holds."}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.version");
    assert!(
        e.message
            .contains("addVersion takes no argument \"version\""),
        "{e}"
    );
    assert!(e.message.contains("under \"data\""), "{e}");

    let e = error(third(
        json!({"op": "addVersion", "args": {"threadId": "thr_1",
        "assertion": "flat", "data": {"type": "logical"}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.assertion");
    assert!(
        e.message.contains("both under \"data\" and directly"),
        "{e}"
    );

    let e = error(third(json!({"op": "addVersion", "args": {
        "data": {"threadId": "thr_1", "assertion": "A holds."}}})));
    assert_eq!(e.path, "$.steps[2].args.data.threadId");
    assert!(e.message.contains("is an argument of addVersion"), "{e}");

    let e = error(third(
        json!({"op": "mergeVersion", "args": {"threadId": "thr_1",
        "versionId": "ver_1", "data": {"rationale": "r"}}}),
    ));
    assert_eq!(e.path, "$.steps[2].args.data");
    assert!(
        e.message.contains("mergeVersion takes no data object"),
        "{e}"
    );

    let e = error(third(
        json!({"op": "advancePhase", "args": {"actor": "arb", "odd key": 1}}),
    ));
    assert_eq!(e.path, "$.steps[2].args[\"odd key\"]");
}

#[test]
fn nested_new_debate_framing_is_read() {
    let r = run(&script(vec![json!({"op": "newDebate", "args": {"data": {
        "resolution": "Resolved: q.", "posA": "yes", "posB": "no", "claimBudget": 3}}})]))
    .expect("script runs");
    let doc = r.to_json()["document"].clone();
    assert_eq!(doc["resolution"], "Resolved: q.");
    assert_eq!(doc["claimBudget"], 3);
    let e = error(vec![
        json!({"op": "newDebate", "args": {"data": {"posA": 1}}}),
    ]);
    assert_eq!(e.path, "$.steps[0].args.data.posA");
}
