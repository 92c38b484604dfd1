//! Fixtures shared by the engine tests: the reference suite's helpers (a reproducible
//! protocol, a minimal claim, a seeded merged claim) rebuilt over our writers.
#![allow(dead_code)]

use crucible::challenge::ChallengeInput;
use crucible::document::{Challenge, Citation, Debate, Num, Version};
use crucible::model::{NewDebate, VersionInput};
use crucible::{Conformance, FixedEnv, Protocol};

/// 2026-04-06T12:00:00Z, the reference suite's T0.
pub const T0: i64 = 1_775_476_800_000;

pub type P = Protocol<FixedEnv>;

/// Reference-mode protocol with a fixed clock and counter ids.
pub fn proto() -> P {
    Protocol::with_mode(FixedEnv::new(T0, 1000), Conformance::Reference)
}

/// Spec-mode protocol (the service default).
pub fn spec_proto() -> P {
    Protocol::new(FixedEnv::new(T0, 1000))
}

pub fn debate_with(p: &mut P, burden: Option<&str>, budget: Option<f64>) -> Debate {
    p.new_debate(NewDebate {
        resolution: "Resolved: the sample proposition holds.".into(),
        pos_a: "Affirmative".into(),
        pos_b: "Negative".into(),
        burden: burden.map(str::to_string),
        claim_budget: budget,
    })
}

pub fn debate(p: &mut P) -> Debate {
    debate_with(p, None, None)
}

pub fn cite(tier: &str) -> Citation {
    Citation::new("S", "https://example.org", tier)
}

pub fn cite_ok(tier: &str) -> Citation {
    Citation {
        tier_verified: Some(true),
        ..cite(tier)
    }
}

/// The reference helpers' minimal compliant claim: empirical, one T3 citation, probable.
pub fn claim(side: &str) -> VersionInput {
    VersionInput {
        author: Some("contributor".into()),
        side: Some(side.into()),
        kind: Some("empirical".into()),
        assertion: Some("The sample assertion states one atomic point.".into()),
        grounds: Some("The cited source reports the measurement described.".into()),
        warrant: Some("If the measurement holds then the assertion follows.".into()),
        evidence: vec![Citation::new(
            "Source (2024)",
            "https://example.org/a",
            "T3",
        )],
        qualifier: Some("probable".into()),
        ..VersionInput::default()
    }
}

pub fn claim_with(side: &str, evidence: Vec<Citation>) -> VersionInput {
    VersionInput {
        evidence,
        ..claim(side)
    }
}

/// Opens a thread and merges one version (reference `seedMergedClaim`).
pub fn seed(
    p: &mut P,
    d: &mut Debate,
    input: VersionInput,
    title: Option<&str>,
) -> (String, String) {
    let side = input.side.clone().unwrap_or_else(|| "A".into());
    let title = title
        .map(str::to_string)
        .unwrap_or_else(|| format!("Claim {}", d.threads.len() + 1));
    let t = p
        .create_thread(d, Some(&side), Some(&title), Some("contributor"))
        .expect("thread opens");
    let v = p.add_version(d, &t, input).expect("version added");
    p.merge_version(d, &t, &v, Some("seed merge"), Some("arbiter"))
        .expect("seed merge");
    (t, v)
}

pub fn seed_side(p: &mut P, d: &mut Debate, side: &str) -> (String, String) {
    seed(p, d, claim(side), None)
}

pub fn version<'a>(d: &'a Debate, t: &str, v: &str) -> &'a Version {
    d.thread(t)
        .and_then(|t| t.version(v))
        .expect("version exists")
}

pub fn version_mut<'a>(d: &'a mut Debate, t: &str, v: &str) -> &'a mut Version {
    d.thread_mut(t)
        .and_then(|t| t.version_mut(v))
        .expect("version exists")
}

pub fn set_relevance(d: &mut Debate, t: &str, v: &str, r: Option<f64>) {
    version_mut(d, t, v).relevance = r.map(Num);
}

pub fn challenge_input(t: &str, v: &str, side: &str) -> ChallengeInput {
    ChallengeInput {
        thread_id: t.into(),
        version_id: v.into(),
        ground: Some("warrant-failure".into()),
        text: Some("The inference does not hold as stated.".into()),
        evidence: Vec::new(),
        author: Some("challenger".into()),
        side: Some(side.into()),
    }
}

/// A challenge record written straight into the document, bypassing the writers, as
/// a hand-edited record or a non-conforming engine would.
pub fn raw_challenge(
    id: &str,
    t: &str,
    v: &str,
    side: Option<&str>,
    resolution: Option<&str>,
) -> Challenge {
    Challenge {
        id: id.into(),
        thread_id: t.into(),
        version_id: v.into(),
        ground: Some("relevance".into()),
        text: Some("objection".into()),
        evidence: Vec::new(),
        author: Some("x".into()),
        side: side.map(str::to_string),
        response: None,
        resolution: resolution.map(str::to_string),
        rationale: Some("survives".into()),
        appeal_id: None,
        created_at: Some(Num(0.0)),
    }
}

/// A bare version for scoring a single factor.
pub fn bare(kind: Option<&str>, evidence: Vec<Citation>, qualifier: Option<&str>) -> Version {
    Version {
        id: "v1".into(),
        thread_id: "t1".into(),
        num: 1,
        parent_id: None,
        author: None,
        side: None,
        kind: kind.map(str::to_string),
        assertion: None,
        grounds: None,
        warrant: None,
        evidence,
        qualifier: qualifier.map(str::to_string),
        status: "merged".into(),
        relevance: None,
        merge_rationale: String::new(),
        created_at: None,
    }
}

pub fn codes(r: crucible::error::Outcome) -> Option<&'static str> {
    r.err().map(|e| e.code.as_str())
}

pub fn approx(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
