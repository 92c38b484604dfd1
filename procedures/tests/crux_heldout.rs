//! Held-out crux cases (docs/CRUX.md): clean position pairs and named defects on
//! subjects the shipped eval does not use, each defect one named fault the rules are meant
//! to catch (`tests/data/crux_heldout*.json`). The shipped controls were the only clean
//! texts the rules had been fitted to; these batches measure the rules on text they were
//! not. Run with `--nocapture` to see each case. How each batch was kept apart from the
//! rule changes, and what it measured before and after them, is in docs/CRUX.md ("Hedges,
//! bounds and the inference label").

use std::collections::BTreeSet;

use panel_procedures::crux::{self, CruxStart, EvidencePack};
use serde_json::{Value, json};

/// Batch A: written and run before the rules changed; the change was designed with it in
/// view, so only its "before" counts are blind.
const BATCH_A: &str = include_str!("data/crux_heldout.json");
/// Batch B: written after the first change and run blind once; two general fixes followed.
const BATCH_B: &str = include_str!("data/crux_heldout_b.json");
/// Batch C: written after the last rule change, run once, nothing changed after it.
const BATCH_C: &str = include_str!("data/crux_heldout_c.json");

/// A clean pair: what both advocates wrote from one pack.
fn clean_start(case: &Value) -> Value {
    let pack = json!({ "items": case["pack"] });
    let decoded: EvidencePack = serde_json::from_value(pack.clone()).unwrap();
    let hash = decoded.content_hash();
    let position = |side: &str| {
        let p = &case[side];
        json!({
            "side": side,
            "pack_hash": hash,
            "thesis": p["thesis"],
            "claims": p["claims"],
        })
    };
    json!({
        "decision": case["decision"],
        "pack": pack,
        "positions": [position("optimist"), position("pessimist")],
        "word_budget": case["word_budget"],
        "advocates": [
            {"side": "optimist", "model": "heldout-model-a", "provider": "heldout", "family": "heldout-family-a"},
            {"side": "pessimist", "model": "heldout-model-b", "provider": "heldout", "family": "heldout-family-b"},
        ],
    })
}

/// One defect: the named claim's fields replaced by the edit's.
fn defective_start(clean: &Value, edit: &Value) -> Value {
    let mut start = clean.clone();
    let id = edit["claim"].as_str().unwrap();
    let claim = start["positions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|p| p["claims"].as_array_mut().unwrap().iter_mut())
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no claim {id}"));
    for (k, v) in edit.as_object().unwrap() {
        if k != "claim" {
            claim[k] = v.clone();
        }
    }
    start
}

fn rules(start: Value) -> BTreeSet<String> {
    let s: CruxStart = crux::decode_start(&serde_json::to_vec(&start).unwrap()).unwrap();
    crux::check(&s)
        .findings
        .into_iter()
        .map(|f| format!("{} at {}", f.rule, f.at))
        .collect()
}

fn rule_names(found: &BTreeSet<String>) -> BTreeSet<String> {
    found
        .iter()
        .map(|f| f.split(" at ").next().unwrap_or("").to_string())
        .collect()
}

#[derive(Debug, Default)]
struct Tally {
    clean: usize,
    false_positives: usize,
    defective: usize,
    /// The defect's own rule fired.
    caught: usize,
    /// ... and no other rule did.
    caught_cleanly: usize,
    /// Refused, but not by the defect's rule.
    wrong_rule: usize,
    escaped: usize,
}

/// Runs one batch: every clean pair and every defect, with a line per case.
fn run(batch: &str) -> (Tally, String) {
    let data: Value = serde_json::from_str(batch).unwrap();
    let mut t = Tally::default();
    let mut table = String::new();
    let mut cleans = std::collections::BTreeMap::new();
    for case in data["clean"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let start = clean_start(case);
        cleans.insert(name.to_string(), start.clone());
        let found = rules(start);
        t.clean += 1;
        if !found.is_empty() {
            t.false_positives += 1;
        }
        table.push_str(&format!(
            "clean {name}: {}\n",
            if found.is_empty() {
                "passes".to_string()
            } else {
                format!("FALSE POSITIVE {found:?}")
            }
        ));
    }
    for case in data["defective"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let defect = case["defect"].as_str().unwrap();
        let base = &cleans[case["base"].as_str().unwrap()];
        let found = rules(defective_start(base, &case["edit"]));
        let names = rule_names(&found);
        t.defective += 1;
        let verdict = if names.contains(defect) {
            t.caught += 1;
            if names.len() == 1 {
                t.caught_cleanly += 1;
                "caught".to_string()
            } else {
                format!("caught, with other rules too {found:?}")
            }
        } else if found.is_empty() {
            t.escaped += 1;
            "ESCAPED".to_string()
        } else {
            t.wrong_rule += 1;
            format!("WRONG RULE {found:?}")
        };
        table.push_str(&format!("defect {name} ({defect}): {verdict}\n"));
    }
    println!("\n{table}{t:?}\n");
    (t, table)
}

#[test]
fn batch_a_has_no_false_positives_and_every_defect_is_caught_by_its_own_rule() {
    let (t, table) = run(BATCH_A);
    assert!(t.clean >= 8 && t.defective >= 8, "{t:?}");
    assert_eq!(t.false_positives, 0, "{table}");
    assert_eq!(t.caught_cleanly, t.defective, "{table}");
}

/// Batch B's first run found 4 false positives in 6 clean pairs (as many as the old rules,
/// docs/CRUX.md "Hedges, bounds and the inference label"); two general fixes followed, so
/// B is no longer held out. Its known misses, kept as a floor: "seats 9" for "seats up
/// to 9", a hedge in the clause before a colon ("a survey-based guess: the 300 figure"),
/// "the low survey figure of 400"; and one defect (arithmetic marked as a direct read)
/// that `crux.direct_read_unsupported` misses at 3 unsupported terms of 8.
#[test]
fn batch_b_keeps_its_known_misses_and_no_more() {
    let (t, table) = run(BATCH_B);
    assert!(t.clean >= 6 && t.defective >= 6, "{t:?}");
    assert!(t.false_positives <= 3, "{table}");
    assert!(t.caught >= 8 && t.wrong_rule == 0, "{table}");
}

/// Batch C's one run: no false positive, and one escape the clause scope causes (the
/// estimated 105,000 kWh restated flatly in a clause whose "roughly" belongs to another
/// figure), kept as a floor.
#[test]
fn batch_c_has_no_false_positives_and_one_known_escape() {
    let (t, table) = run(BATCH_C);
    assert!(t.clean >= 5 && t.defective >= 5, "{t:?}");
    assert_eq!(t.false_positives, 0, "{table}");
    assert!(t.caught >= 5 && t.wrong_rule == 0, "{table}");
}
