//! The eval (docs/CRUX.md, "Eval"; seed `crux.txt`: "scores 15 cases, each a named
//! mutation of one baseline debate"): every case goes through [`CruxRun::start`], and
//! the ones that start go through a simulated panel whose scripted judges return the
//! case's simulation section. Clean controls on other subjects and packs measure the
//! false-positive rate, so the checks are not tuned to one text.

use serde::{Deserialize, Serialize};

use super::CruxRun;
use super::contract::{CruxStart, decode_start};
use super::mutations::{self, Expectation};
use crate::contract::ContractError;
use crate::panel::{
    PanelOutcome, PanelQuestion, PanelRuling, Prior, Procedure, Settlement, StartContext,
    presentation_order,
};

pub use super::mutations::Expectation as CaseExpectation;

/// The baseline debate, also the demo `panel up --procedure crux` runs.
pub const BASELINE: &str = include_str!("fixtures/baseline.json");

/// Clean debates over other subjects and packs.
pub const CONTROLS: &[(&str, &str)] = &[
    (
        "control-sre-hire",
        include_str!("fixtures/control-sre-hire.json"),
    ),
    (
        "control-job-offer",
        include_str!("fixtures/control-job-offer.json"),
    ),
    (
        "control-office-lease",
        include_str!("fixtures/control-office-lease.json"),
    ),
    (
        "control-postgres",
        include_str!("fixtures/control-postgres.json"),
    ),
    (
        "control-germany",
        include_str!("fixtures/control-germany.json"),
    ),
    (
        "control-four-day-week",
        include_str!("fixtures/control-four-day-week.json"),
    ),
    (
        "control-biosimilar",
        include_str!("fixtures/control-biosimilar.json"),
    ),
    (
        "control-bike-lane",
        include_str!("fixtures/control-bike-lane.json"),
    ),
    (
        "control-homework",
        include_str!("fixtures/control-homework.json"),
    ),
    (
        "control-drip-irrigation",
        include_str!("fixtures/control-drip-irrigation.json"),
    ),
    (
        "control-bakery-sale",
        include_str!("fixtures/control-bakery-sale.json"),
    ),
];

/// What happened to a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Observed {
    /// Refused before any panel, with these rules.
    Blocked(Vec<String>),
    /// Started; no crux accepted (gate failures or the panel's votes).
    CaughtByPanel(String),
    /// Started and reached an accepted crux.
    Passed(String),
    /// The case could not be built (a fixture or mutation error).
    Broken(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseResult {
    pub name: String,
    pub what: String,
    pub expectation: Expectation,
    pub observed: Observed,
    pub matches: bool,
    /// The checks' measurements, for the margins.
    pub measured: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvalReport {
    pub cases: Vec<CaseResult>,
    pub bad: usize,
    pub bad_blocked: usize,
    pub bad_caught: usize,
    pub bad_escaped: usize,
    pub clean: usize,
    pub false_positives: usize,
    /// Cases whose outcome is not the expected one (a bad case blocked by another rule
    /// than expected counts here too).
    pub mismatches: usize,
}

/// Why a case of the suite could not be built; the eval reports it as
/// [`Observed::Broken`] instead of running the case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// A fixture (the baseline or a control) does not decode: fix the fixture's JSON.
    #[error(transparent)]
    Fixture(#[from] ContractError),
    /// A mutation found nothing to change in the baseline: the baseline changed under it.
    #[error("mutation {0} did not apply")]
    MutationDidNotApply(&'static str),
}

fn baseline() -> Result<CruxStart, CaseError> {
    Ok(decode_start(BASELINE.as_bytes())?)
}

/// One case of the suite before it is run: its name, what it is, what should happen, and
/// its start document (or why it could not be built).
pub struct SuiteCase {
    pub name: String,
    pub what: String,
    pub expectation: Expectation,
    pub start: Result<CruxStart, CaseError>,
}

/// Every case: the baseline, the clean controls, the named mutations.
pub fn suite() -> Vec<SuiteCase> {
    let mut cases = vec![SuiteCase {
        name: "baseline".into(),
        what: "the build-vs-buy debate as written".into(),
        expectation: Expectation::Clean,
        start: baseline(),
    }];
    for (name, json) in CONTROLS {
        cases.push(SuiteCase {
            name: (*name).into(),
            what: "a clean debate on another subject".into(),
            expectation: Expectation::Clean,
            start: decode_start(json.as_bytes()).map_err(CaseError::from),
        });
    }
    for m in mutations::all() {
        let start = baseline().and_then(|mut s| {
            (m.apply)(&mut s)
                .map(|_| s)
                .ok_or(CaseError::MutationDidNotApply(m.name))
        });
        cases.push(SuiteCase {
            name: m.name.into(),
            what: m.what.into(),
            expectation: m.expect,
            start,
        });
    }
    cases
}

/// Runs every case.
pub fn run_eval() -> EvalReport {
    tally(
        suite()
            .into_iter()
            .map(|c| case(&c.name, &c.what, c.expectation, c.start))
            .collect(),
    )
}

/// The cases that pass the deterministic layer, started without their scripted answers,
/// for a live mediator (`panel crux eval --live-url`, docs/CRUX.md "Live mode"): what the
/// code cannot catch is then up to the model.
pub fn live_runs() -> Vec<(SuiteCase, CruxRun)> {
    suite()
        .into_iter()
        .filter_map(|c| {
            let mut start = c.start.clone().ok()?;
            start.simulation = None;
            let ctx = StartContext {
                run_id: format!("live/{}", c.name),
                seed: 20_240_601,
                simulation: false,
            };
            let run = CruxRun::start(start, &ctx).ok()?;
            Some((c, run))
        })
        .collect()
}

fn case(
    name: &str,
    what: &str,
    expectation: Expectation,
    start: Result<CruxStart, CaseError>,
) -> CaseResult {
    let (observed, measured) = match start {
        Err(e) => (Observed::Broken(e.to_string()), Vec::new()),
        Ok(s) => observe(name, s),
    };
    let matches = match (&expectation, &observed) {
        (Expectation::Clean, Observed::Passed(_)) => true,
        (Expectation::Blocked(rule), Observed::Blocked(rules)) => rules.contains(rule),
        (Expectation::CaughtByPanel, Observed::CaughtByPanel(_)) => true,
        _ => false,
    };
    CaseResult {
        name: name.into(),
        what: what.into(),
        expectation,
        observed,
        matches,
        measured,
    }
}

fn observe(name: &str, start: CruxStart) -> (Observed, Vec<String>) {
    let measured = super::check(&start)
        .records
        .iter()
        .map(|r| format!("{}: {}", r.family, r.measured))
        .collect();
    let ctx = StartContext {
        run_id: format!("eval/{name}"),
        seed: 20_240_601,
        simulation: true,
    };
    let mut run = match CruxRun::start(start, &ctx) {
        Ok(r) => r,
        Err(crate::panel::ProcedureError::Refused(f)) => {
            let mut rules: Vec<String> = f.into_iter().map(|f| f.rule).collect();
            rules.dedup();
            return (Observed::Blocked(rules), measured);
        }
        Err(e) => return (Observed::Broken(e.to_string()), measured),
    };
    (simulate(&mut run), measured)
}

/// Drives a run with scripted judges: five arbiters of three stances and organisations
/// (plus widened seats), each answering the question's expected answer; the panel
/// agrees when they all do.
pub fn simulate(run: &mut CruxRun) -> Observed {
    for step in 0..32 {
        let pending = run.pending();
        if pending.is_empty() {
            break;
        }
        for q in pending {
            let s = scripted_settlement(run.materials.seed, &q, step);
            if let Err(e) = run.settle(&s) {
                return Observed::Broken(e.to_string());
            }
        }
    }
    if !run.finished() {
        return Observed::Broken("the simulated panel did not finish the run".into());
    }
    match run.accepted() {
        Some(c) => Observed::Passed(c.crux.clone()),
        None => {
            let gate: Vec<String> = run
                .mediation
                .reports
                .iter()
                .flat_map(|r| r.gate.iter().map(|f| f.rule.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            Observed::CaughtByPanel(format!(
                "{}; gate: {}",
                run.mediation.deadlock.clone().unwrap_or_default(),
                gate.join(", ")
            ))
        }
    }
}

/// The settlement five scripted arbiters (more when widened) would produce.
pub fn scripted_settlement(seed: u64, q: &PanelQuestion, step: usize) -> Settlement {
    let priors = [Prior::A, Prior::B, Prior::None];
    let families = [
        "fixture-family-c",
        "fixture-family-d",
        "fixture-family-e",
        "fixture-family-f",
        "fixture-family-g",
    ];
    let seats = 5 + q.extra_seats as usize;
    let labels: Vec<String> = q.items.iter().map(|i| i.label.clone()).collect();
    let rulings: Vec<PanelRuling> = (0..seats)
        .map(|i| {
            let id = format!("arb-{}", i + 1);
            let presented = presentation_order(seed, &q.key, &id, labels.len())
                .into_iter()
                .filter_map(|j| labels.get(j).cloned())
                .collect();
            let (yes, rationale) = q.expected.as_ref().map_or((None, String::new()), |e| {
                (Some(e.yes), e.rationale.clone())
            });
            PanelRuling {
                arbiter_id: id,
                prior: priors[i % priors.len()],
                organisation: format!("org-{}", i % 3 + 1),
                model_family: Some(families[i % families.len()].into()),
                yes,
                probability_milli: if yes == Some(true) { 800 } else { 200 },
                rationale,
                presented,
            }
        })
        .collect();
    let outcome = match rulings.first().and_then(|r| r.yes) {
        Some(true) => PanelOutcome::Yes,
        Some(false) => PanelOutcome::No,
        None => PanelOutcome::Deadlocked,
    };
    Settlement {
        key: q.key.clone(),
        motion_id: format!("motion-{step}-{}", q.key),
        outcome,
        rulings,
    }
}

fn tally(cases: Vec<CaseResult>) -> EvalReport {
    let mut r = EvalReport::default();
    for c in &cases {
        match (&c.expectation, &c.observed) {
            (Expectation::Clean, o) => {
                r.clean += 1;
                if !matches!(o, Observed::Passed(_)) {
                    r.false_positives += 1;
                }
            }
            (_, Observed::Blocked(_)) => {
                r.bad += 1;
                r.bad_blocked += 1;
            }
            (_, Observed::CaughtByPanel(_)) => {
                r.bad += 1;
                r.bad_caught += 1;
            }
            _ => {
                r.bad += 1;
                r.bad_escaped += 1;
            }
        }
        if !c.matches {
            r.mismatches += 1;
        }
    }
    r.cases = cases;
    r
}

impl EvalReport {
    /// The eval as Markdown: totals, then one row per case.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Crux eval\n\n{} bad debates: {} blocked before any panel, {} caught by the \
             panel, {} escaped. {} clean debates: {} false positives. {} of {} cases as \
             expected.\n\n| case | expected | observed | as expected |\n|---|---|---|---|\n",
            self.bad,
            self.bad_blocked,
            self.bad_caught,
            self.bad_escaped,
            self.clean,
            self.false_positives,
            self.cases.len() - self.mismatches,
            self.cases.len()
        );
        for c in &self.cases {
            let expected = match &c.expectation {
                Expectation::Clean => "passes".to_string(),
                Expectation::Blocked(rule) => format!("blocked: `{rule}`"),
                Expectation::CaughtByPanel => "caught by the panel".to_string(),
            };
            let observed = match &c.observed {
                Observed::Blocked(rules) => format!("blocked: `{}`", rules.join("`, `")),
                Observed::CaughtByPanel(why) => format!("caught: {why}"),
                Observed::Passed(crux) => format!("passed; crux: {crux}"),
                Observed::Broken(e) => format!("BROKEN: {e}"),
            };
            out.push_str(&format!(
                "| {} — {} | {expected} | {observed} | {} |\n",
                c.name,
                c.what,
                if c.matches { "yes" } else { "**no**" }
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_markdown_has_a_row_per_case_and_the_totals() {
        let r = run_eval();
        let md = r.to_markdown();
        assert_eq!(md.matches("\n| ").count(), r.cases.len() + 1, "{md}");
        assert!(md.contains("0 escaped"));
        assert!(md.contains("phantom-opponent-substance"));
    }

    #[test]
    fn a_broken_case_is_a_mismatch_not_a_pass() {
        let c = case(
            "x",
            "y",
            Expectation::Clean,
            Err(CaseError::MutationDidNotApply("x")),
        );
        assert!(!c.matches);
        let r = tally(vec![c]);
        assert_eq!(r.false_positives, 1);
    }
}
