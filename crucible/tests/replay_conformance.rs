//! `panel replay` answers every op with what the reference engine's function of that
//! name returns: the same JSON shape (keys in the reference's order, value types, `null`
//! against object against boolean against number against string, array elements).
//!
//! The expected shapes below were written from reading the reference's source (v1.1.1:
//! the objects its constructors build and return, `null` or `{code, message}` from its
//! writers and queries), not from our output. One story script walks a debate through
//! every op, with a refusal wherever the reference can refuse; a second test fails when
//! an op a script may name has no case here.

use std::collections::BTreeSet;

use crucible::replay::{ops, run};
use serde_json::{Map, Value, json};

/// The type skeleton of a value: leaves become their JSON type name, arrays the distinct
/// skeletons of their elements, objects keep their keys in order.
fn skeleton(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) => {
            let mut distinct: Vec<Value> = Vec::new();
            for s in items.iter().map(skeleton) {
                if !distinct.contains(&s) {
                    distinct.push(s);
                }
            }
            Value::Array(distinct)
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), skeleton(x)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// Every key path of a skeleton in order, so a reordered key shows up as a difference
/// (map equality ignores order).
fn key_order(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}.{k}");
                out.push(p.clone());
                key_order(x, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                key_order(x, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

// The reference's shapes, from its source.

/// Writers and queries that succeed: `return null`.
fn ok() -> Value {
    json!("null")
}

/// `err(code, message)`.
fn refusal() -> Value {
    json!({"code": "string", "message": "string"})
}

fn citation() -> Value {
    json!({"source": "string", "url": "string", "tier": "string"})
}

/// `emptySteelman()`.
fn empty_steelman() -> Value {
    json!({"text": "string", "author": "string", "side": "null", "status": "string",
           "note": "string", "ts": "null"})
}

/// `newDebate`: the document, with the one `debate-created` log entry.
fn debate() -> Value {
    json!({
        "schemaVersion": "number", "id": "string", "createdAt": "number",
        "resolution": "string", "positions": {"A": "string", "B": "string"},
        "burden": "string", "claimBudget": "number", "definitions": [],
        "phase": "string", "threads": [], "challenges": [],
        "steelmans": {"A": empty_steelman(), "B": empty_steelman()},
        "verdicts": [], "appeals": [], "appealTargets": [], "activeAppealId": "null",
        "log": [{"ts": "number", "actor": "string", "side": "null", "action": "string",
                 "detail": "string"}]
    })
}

/// `addDefinition`: the entry it pushed.
fn definition() -> Value {
    json!({"term": "string", "definition": "string", "author": "string", "side": "string"})
}

/// `createThread`: a thread with no versions yet.
fn thread() -> Value {
    json!({"id": "string", "side": "string", "title": "string", "versions": [],
           "canonicalId": "null", "createdAt": "number"})
}

/// `addVersion`: a candidate; `parent` is `null` for a first version, a string after.
fn version(parent: &str) -> Value {
    json!({
        "id": "string", "threadId": "string", "num": "number", "parentId": parent,
        "author": "string", "side": "string", "type": "string", "assertion": "string",
        "grounds": "string", "warrant": "string", "evidence": [citation()],
        "qualifier": "string", "status": "string", "relevance": "number",
        "mergeRationale": "string", "createdAt": "number"
    })
}

/// `fileChallenge`: open, unanswered; `appeal` is the stamp (`null` outside a review).
fn challenge(appeal: &str) -> Value {
    json!({
        "id": "string", "threadId": "string", "versionId": "string", "ground": "string",
        "text": "string", "evidence": [citation()], "author": "string", "side": "string",
        "response": "null", "resolution": "null", "rationale": "string",
        "appealId": appeal, "createdAt": "number"
    })
}

/// `fileAppeal`: filed, undecided.
fn appeal() -> Value {
    json!({
        "id": "string", "side": "string", "author": "string", "ground": "string",
        "justification": "string", "evidence": [citation()], "targetThreadIds": ["string"],
        "status": "string", "decisionRationale": "string", "filedAt": "number"
    })
}

/// `issueVerdict`: the frozen verdict with its ledger rows (`computeLedger`'s rows with
/// `versionMerit`'s factors spread in).
fn verdict(winner: &str) -> Value {
    let row = json!({
        "side": "string", "threadId": "string", "threadTitle": "string",
        "versionId": "string", "versionNum": "number", "assertion": "string",
        "type": "string", "qualifier": "string", "scoring": "bool",
        "E": "number", "R": "number", "S": "number", "Q": "number",
        "dismissed": "number", "merit": "number"
    });
    json!({
        "n": "number", "issuedAt": "number", "winner": winner,
        "totals": {"A": "number", "B": "number"}, "margin": "number",
        "band": {"key": "string", "label": "string"}, "rationale": "string",
        "ledger": [row], "byBurden": "bool", "viaAppealId": "null"
    })
}

/// One step of the story and the reference's answer to it.
struct Case {
    op: &'static str,
    args: Value,
    expect: Value,
}

fn case(op: &'static str, args: Value, expect: Value) -> Case {
    Case { op, args, expect }
}

fn cite(tier: &str) -> Value {
    json!([{"source": "Survey", "url": "http://127.0.0.1/s", "tier": tier}])
}

fn claim(thread: &str, side: &str, tier: &str) -> Value {
    json!({"threadId": thread, "author": format!("{side}-writer"), "side": side,
           "type": "empirical", "assertion": "Output held.", "grounds": "The tabulation.",
           "warrant": "Held output means no loss.", "evidence": cite(tier),
           "qualifier": "probable", "relevance": 1.0})
}

/// A debate from framing through a verdict, an appeal and its revised verdict, touching
/// every op, with the reference's refusals where it has them.
fn story() -> Vec<Case> {
    vec![
        case(
            "newDebate",
            json!({"resolution": "Resolved: p.", "posA": "yes", "posB": "no", "burden": "A", "claimBudget": 2}),
            debate(),
        ),
        case(
            "addDefinition",
            json!({"term": "output", "definition": "units per employee", "author": "ada", "side": "A"}),
            definition(),
        ),
        case("phasePrereq", json!({}), ok()),
        case("advancePhase", json!({"actor": "arb"}), ok()),
        case(
            "advancePhase",
            json!({"actor": "arb"}),
            refusal(), // PHASE_PREREQ_UNMET: no merged claims
        ),
        case("phasePrereq", json!({}), refusal()),
        case(
            "createThread",
            json!({"side": "A", "title": "Trial data", "actor": "ada"}),
            thread(),
        ),
        case("addVersion", claim("thr_1", "A", "T1"), version("null")),
        case(
            "verifyTier",
            json!({"threadId": "thr_1", "versionId": "ver_1", "citationIndex": 0, "note": "retrieved", "actor": "arb"}),
            ok(),
        ),
        case(
            "verifyTier",
            json!({"threadId": "thr_1", "versionId": "ver_1", "citationIndex": 4, "actor": "arb"}),
            refusal(), // CITATION_NOT_FOUND
        ),
        case(
            "setRelevance",
            json!({"threadId": "thr_1", "versionId": "ver_1", "relevance": 1.0}),
            ok(),
        ),
        case(
            "mergeVersion",
            json!({"threadId": "thr_1", "versionId": "ver_1", "rationale": "first", "actor": "arb"}),
            ok(),
        ),
        case(
            "mergeVersion",
            json!({"threadId": "thr_1", "versionId": "ver_1", "actor": "arb"}),
            refusal(), // MERGE_NOT_CANDIDATE
        ),
        case("addVersion", claim("thr_1", "A", "T3"), version("string")),
        case(
            "rejectVersion",
            json!({"threadId": "thr_1", "versionId": "ver_2", "rationale": "weaker", "actor": "arb"}),
            ok(),
        ),
        case(
            "rejectVersion",
            json!({"threadId": "thr_1", "versionId": "ver_2", "actor": "arb"}),
            refusal(), // REJECT_NOT_CANDIDATE
        ),
        case(
            "createThread",
            json!({"side": "B", "title": "Pooled studies", "actor": "bo"}),
            thread(),
        ),
        case("addVersion", claim("thr_2", "B", "T3"), version("null")),
        case(
            "mergeVersion",
            json!({"threadId": "thr_2", "versionId": "ver_3", "rationale": "first", "actor": "arb"}),
            ok(),
        ),
        case("advancePhase", json!({"actor": "arb"}), ok()),
        case(
            "fileChallenge",
            json!({"threadId": "thr_1", "versionId": "ver_1", "ground": "relevance", "text": "Volunteer firms only.",
                   "evidence": cite("T3"), "author": "bo", "side": "B"}),
            challenge("null"),
        ),
        case(
            "fileChallenge",
            json!({"threadId": "thr_1", "versionId": "ver_1", "ground": "relevance", "text": "Own goal.",
                   "evidence": cite("T3"), "author": "ada", "side": "A"}),
            refusal(), // CHALLENGE_SAME_SIDE
        ),
        case(
            "respondChallenge",
            json!({"challengeId": "chl_1", "text": "All firms were eligible.", "author": "ada", "side": "A"}),
            ok(),
        ),
        case(
            "resolveChallenge",
            json!({"challengeId": "chl_1", "resolution": "dismissed", "rationale": "covered", "actor": "arb"}),
            ok(),
        ),
        case(
            "resolveChallenge",
            json!({"challengeId": "chl_1", "resolution": "upheld", "rationale": "again", "actor": "arb"}),
            refusal(), // CHALLENGE_ALREADY_RESOLVED
        ),
        case("advancePhase", json!({"actor": "arb"}), ok()),
        case(
            "arbiterCertifySteelman",
            json!({"ofSide": "A", "reason": "fair", "actor": "arb"}),
            refusal(), // STEELMAN_NOT_SUBMITTED
        ),
        case(
            "submitSteelman",
            json!({"ofSide": "A", "text": "A says output held.", "author": "bo", "side": "B"}),
            ok(),
        ),
        case(
            "returnSteelman",
            json!({"ofSide": "A", "note": "Omits the tabulation.", "actor": "ada", "side": "A"}),
            ok(),
        ),
        case(
            "arbiterCertifySteelman",
            json!({"ofSide": "A", "reason": "fair now", "actor": "arb"}),
            ok(),
        ),
        case(
            "submitSteelman",
            json!({"ofSide": "B", "text": "B says coordination absorbs it.", "author": "ada", "side": "A"}),
            ok(),
        ),
        case(
            "certifySteelman",
            json!({"ofSide": "B", "actor": "bo", "side": "B"}),
            ok(),
        ),
        case("advancePhase", json!({"actor": "arb"}), ok()),
        case("advancePhase", json!({"actor": "arb"}), ok()),
        case(
            "canAppeal",
            json!({"side": "B"}),
            refusal(), // APPEAL_NOT_CLOSED
        ),
        case(
            "issueVerdict",
            json!({"actor": "arb", "rationale": "Ledger as stated."}),
            verdict("string"),
        ),
        case("closeDebate", json!({"actor": "arb"}), ok()),
        case("canAppeal", json!({"side": "B"}), ok()),
        case(
            "concludeAppealReview",
            json!({"actor": "arb"}),
            refusal(), // APPEAL_NOT_IN_REVIEW
        ),
        case(
            "fileAppeal",
            json!({"side": "B", "author": "bo", "ground": "A2", "justification": "Relevance misjudged.",
                   "evidence": cite("T1"), "targetThreadIds": ["thr_1"]}),
            appeal(),
        ),
        case(
            "decideAppeal",
            json!({"appealId": "app_1", "admit": true, "rationale": "arguable", "actor": "arb"}),
            ok(),
        ),
        case(
            "decideAppeal",
            json!({"appealId": "app_1", "admit": false, "rationale": "twice", "actor": "arb"}),
            refusal(), // APPEAL_ALREADY_DECIDED
        ),
        case(
            "fileChallenge",
            json!({"threadId": "thr_1", "versionId": "ver_1", "ground": "relevance", "text": "Scope again.",
                   "evidence": cite("T2"), "author": "bo", "side": "B"}),
            challenge("string"),
        ),
        case(
            "concludeAppealReview",
            json!({"actor": "arb"}),
            refusal(), // APPEAL_OPEN_CHALLENGES
        ),
        case(
            "resolveChallenge",
            json!({"challengeId": "chl_2", "resolution": "dismissed", "rationale": "covered", "actor": "arb"}),
            ok(),
        ),
        case(
            "concludeAppealReview",
            json!({"actor": "arb", "rationale": "Reviewed."}),
            ok(),
        ),
        // Ours (SPEC 6's forced transition, logged `phase-forced`); answers like a writer.
        case(
            "forcePhase",
            json!({"phase": "verdict", "actor": "arb"}),
            ok(),
        ),
        case(
            "forcePhase",
            json!({"phase": "nowhere", "actor": "arb"}),
            refusal(),
        ),
    ]
}

fn script(cases: &[Case]) -> Value {
    let steps: Vec<Value> = cases
        .iter()
        .map(|c| json!({"op": c.op, "args": c.args}))
        .collect();
    json!({"env": {"clock": {"start": 1000, "step": 10}, "ids": "counter-per-prefix"}, "steps": steps})
}

#[test]
fn every_op_answers_in_the_reference_shape() {
    let cases = story();
    let replay = run(&script(&cases)).expect("the story script runs");
    assert_eq!(replay.results.len(), cases.len());
    let mut wrong = Vec::new();
    for (i, (c, got)) in cases.iter().zip(&replay.results).enumerate() {
        let shape = skeleton(got);
        let (mut want_keys, mut got_keys) = (Vec::new(), Vec::new());
        key_order(&c.expect, "", &mut want_keys);
        key_order(&shape, "", &mut got_keys);
        if shape != c.expect || want_keys != got_keys {
            wrong.push(format!(
                "step {i} {}: expected {}\n  got {}\n  (value {got})",
                c.op, c.expect, shape
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn refusals_carry_the_reference_codes() {
    let cases = story();
    let replay = run(&script(&cases)).expect("the story script runs");
    let codes: Vec<(&str, &str)> = cases
        .iter()
        .zip(&replay.results)
        .filter_map(|(c, r)| Some((c.op, r.get("code")?.as_str()?)))
        .collect();
    assert_eq!(
        codes,
        [
            ("advancePhase", "PHASE_PREREQ_UNMET"),
            ("phasePrereq", "PHASE_PREREQ_UNMET"),
            ("verifyTier", "CITATION_NOT_FOUND"),
            ("mergeVersion", "MERGE_NOT_CANDIDATE"),
            ("rejectVersion", "REJECT_NOT_CANDIDATE"),
            ("fileChallenge", "CHALLENGE_SAME_SIDE"),
            ("resolveChallenge", "CHALLENGE_ALREADY_RESOLVED"),
            ("arbiterCertifySteelman", "STEELMAN_NOT_SUBMITTED"),
            ("canAppeal", "APPEAL_NOT_CLOSED"),
            ("concludeAppealReview", "APPEAL_NOT_IN_REVIEW"),
            ("decideAppeal", "APPEAL_ALREADY_DECIDED"),
            ("concludeAppealReview", "APPEAL_OPEN_CHALLENGES"),
            ("forcePhase", "PHASE_NOT_ADVANCEABLE"),
        ]
    );
}

#[test]
fn a_constructor_returns_the_object_as_the_document_holds_it() {
    let cases = story();
    let replay = run(&script(&cases)).expect("the story script runs");
    let doc = replay.to_json()["document"].clone();
    let r = &replay.results;
    assert_eq!(r[1], doc["definitions"][0]);
    assert_eq!(r[6]["id"], "thr_1");
    assert_eq!(r[7], {
        // The version as proposed: a candidate, before verification and merge.
        let mut v = doc["threads"][0]["versions"][0].clone();
        v["status"] = json!("candidate");
        v["mergeRationale"] = json!("");
        v["evidence"] = json!([{"source": "Survey", "url": "http://127.0.0.1/s", "tier": "T1"}]);
        v
    });
    assert_eq!(r[35], doc["verdicts"][0]);
    assert_eq!(r[0]["id"], "deb_1");
}

#[test]
fn every_op_a_script_may_name_has_a_case() {
    let covered: BTreeSet<&str> = story()
        .iter()
        .filter(|c| c.expect != refusal())
        .map(|c| c.op)
        .collect();
    let missing: Vec<&str> = ops().filter(|op| !covered.contains(op)).collect();
    assert!(
        missing.is_empty(),
        "ops without a success case in story(): {missing:?}; add one with the reference's return shape"
    );
    let unknown: Vec<&str> = covered
        .iter()
        .copied()
        .filter(|op| !ops().any(|o| o == *op))
        .collect();
    assert!(
        unknown.is_empty(),
        "cases for ops replay does not know: {unknown:?}"
    );
}
