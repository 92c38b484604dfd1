//! G7 in acronym mode on the fixture sets in `tests/fixtures/gate_acronym/`: sentences
//! that use real acronyms of four or more capitals without defining them (agencies,
//! surveys, standards, instruments, models), and sentences that shout, including two-word
//! shouts of ordinary words (`NICE TRY`) and shouting next to acronyms.
//!
//! The goal is at most 5% of acronym sentences refused and at least 95% of shouting
//! caught. The sets were written in rounds (docs/GATE.md, "Measured on the fixture
//! sets"): the rule was tuned on `dev.jsonl`, frozen, and measured on a fresh held-out
//! set; that set then became development data for the next round (`dev-round2.jsonl`,
//! `dev-round3.jsonl`). `heldout.jsonl` was written after the final rule was frozen and
//! was only measured. On it the acronym goal is met and the shouting goal is not
//! (31/34 = 91.2%: the missed words are not in the embedded word list), so its test
//! guards the measured figures and `held_out_meets_the_shouting_goal` is ignored.
//!
//! Run with `--nocapture` to see the figures and every error.

use crucible::gate::{self, GateContext, GateField, GateMode, Kind, RuleId};

const DEV: &str = include_str!("fixtures/gate_acronym/dev.jsonl");
const DEV_ROUND_2: &str = include_str!("fixtures/gate_acronym/dev-round2.jsonl");
const DEV_ROUND_3: &str = include_str!("fixtures/gate_acronym/dev-round3.jsonl");
const HELD_OUT: &str = include_str!("fixtures/gate_acronym/heldout.jsonl");

struct Sample {
    shouting: bool,
    text: String,
}

fn samples(raw: &str) -> Vec<Sample> {
    raw.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("fixture line is JSON");
            let label = v["label"].as_str().expect("label");
            assert!(label == "acronym" || label == "shouting", "{label}");
            Sample {
                shouting: label == "shouting",
                text: v["text"].as_str().expect("text").to_owned(),
            }
        })
        .collect()
}

fn refused_by_g7(text: &str) -> bool {
    let ctx = GateContext {
        kind: Kind::Claim,
        author: Some("contributor".into()),
        side: Some("A".into()),
        type_: Some("empirical".into()),
        qualifier: Some("probable".into()),
        evidence_count: Some(1.0),
        max_tier_weight: Some(3.0),
        ..GateContext::default()
    };
    let field = GateField::new("grounds", "Grounds", text);
    gate::check_with_mode(&[field], &ctx, GateMode::Acronyms)
        .iter()
        .any(|v| v.rule == RuleId::G7)
}

/// G7's figures on one set.
struct Figures {
    acronyms: usize,
    refused: usize,
    shouts: usize,
    caught: usize,
}

impl Figures {
    fn acronym_goal_met(&self) -> bool {
        self.refused * 100 <= self.acronyms * 5
    }

    fn shouting_goal_met(&self) -> bool {
        self.caught * 100 >= self.shouts * 95
    }
}

/// Measures one set, printing the figures and every error.
fn measure(name: &str, raw: &str) -> Figures {
    let set = samples(raw);
    let (shouts, acronyms): (Vec<_>, Vec<_>) = set.iter().partition(|s| s.shouting);
    assert!(
        acronyms.len() >= 40 && shouts.len() >= 30,
        "{name} is large enough"
    );
    assert!(
        set.iter().all(|s| !s.text.contains('!')),
        "G7 is decided by capitals alone"
    );
    let refused: Vec<_> = acronyms.iter().filter(|s| refused_by_g7(&s.text)).collect();
    let missed: Vec<_> = shouts.iter().filter(|s| !refused_by_g7(&s.text)).collect();
    let f = Figures {
        acronyms: acronyms.len(),
        refused: refused.len(),
        shouts: shouts.len(),
        caught: shouts.len() - missed.len(),
    };
    println!(
        "G7 {name}: acronym sentences refused {}/{} = {:.1}%, shouting caught {}/{} = {:.1}%",
        f.refused,
        f.acronyms,
        100.0 * f.refused as f64 / f.acronyms as f64,
        f.caught,
        f.shouts,
        100.0 * f.caught as f64 / f.shouts as f64
    );
    for s in &refused {
        println!("  refused acronym sentence: {}", s.text);
    }
    for s in &missed {
        println!("  admitted shouting: {}", s.text);
    }
    f
}

fn assert_goals(name: &str, raw: &str) {
    let f = measure(name, raw);
    assert!(
        f.acronym_goal_met(),
        "{name}: at most 5% of acronym sentences refused"
    );
    assert!(
        f.shouting_goal_met(),
        "{name}: at least 95% of shouting caught"
    );
}

#[test]
fn development_set_meets_the_goals() {
    assert_goals("dev", DEV);
}

#[test]
fn second_development_set_meets_the_goals() {
    assert_goals("dev round 2", DEV_ROUND_2);
}

#[test]
fn third_development_set_meets_the_goals() {
    assert_goals("dev round 3", DEV_ROUND_3);
}

#[test]
fn held_out_set_meets_the_acronym_goal_and_keeps_its_shouting_figure() {
    let f = measure("held-out", HELD_OUT);
    assert!(
        f.acronym_goal_met(),
        "held-out: at most 5% of acronym sentences refused"
    );
    // Measured once with the frozen rule: 31 of 34. A regression guard, not the goal.
    assert!(f.caught >= 31, "held-out: shouting caught fell below 31/34");
}

#[test]
#[ignore = "goal not met out of sample: 31/34 = 91.2% of held-out shouting caught (docs/GATE.md)"]
fn held_out_meets_the_shouting_goal() {
    assert_goals("held-out", HELD_OUT);
}
