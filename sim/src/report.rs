//! A scenario's whole result: every figure, ready to print as JSON or Markdown
//! (docs/SIMULATION.md "Figures").

use calibration::scoring_rules::{ReliabilityBin, reliability_table};
use serde::Serialize;

use crate::adversaries::{CoalitionFigures, ImpostorFigures, coalitions, impostors};
use crate::population::Population;
use crate::quality::{Quality, measure};
use crate::relevance::{RelevanceFigures, measure as relevance};
use crate::scenario::Scenario;
use crate::simulation::Run;
use crate::sweep::{SweepPoint, by_correlation, by_panel_size};

/// Everything one scenario run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub motions: usize,
    pub seats: usize,
    pub pool: usize,
    pub best_single_member: String,
    pub quality: Quality,
    pub coalitions: Vec<CoalitionFigures>,
    /// Each coalition's self-selected panels and the random sample that overrides them.
    pub self_selection: Vec<crate::self_selection::SelfSelectionFigures>,
    pub impostors: Option<ImpostorFigures>,
    pub relevance: Option<RelevanceFigures>,
    pub leader: Option<(usize, String)>,
    pub by_panel_size: Vec<SweepPoint>,
    pub by_correlation: Vec<SweepPoint>,
    /// Reliability-diagram rows (10 bins) of each estimator's forecasts.
    pub reliability: Vec<(String, Vec<ReliabilityBin>)>,
}

/// What to run besides the scenario itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Overrides the scenario's `motions`.
    pub motions: Option<usize>,
    /// Skip the sweeps (faster; no size or correlation plot).
    pub sweeps: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            motions: None,
            sweeps: true,
        }
    }
}

/// Run a validated scenario.
pub fn run(s: &Scenario, opts: Options) -> Report {
    let pop = Population::build(s);
    let motions = opts.motions.unwrap_or(s.motions).max(1);
    let a = &s.analysis;
    let records = Run {
        scenario: s,
        population: &pop,
        motions,
        seats: s.panel.seats,
        stream: 0,
    }
    .simulate();
    let quality = measure(&records, a.bootstrap, s.seed);
    let reliability = quality
        .forecasts
        .iter()
        .filter(|(_, f)| !f.is_empty())
        .filter_map(|(name, f)| {
            Some((
                name.clone(),
                reliability_table(f, &quality.truths, 10).ok()?,
            ))
        })
        .collect();
    let (by_panel_size, by_correlation) = if opts.sweeps {
        (by_panel_size(s, &pop), by_correlation(s, &pop))
    } else {
        (Vec::new(), Vec::new())
    };
    Report {
        scenario: s.name.clone(),
        description: s.description.clone(),
        seed: s.seed,
        motions,
        seats: s.panel.seats,
        pool: pop.arbiters.len(),
        best_single_member: pop
            .arbiters
            .get(quality.best_single)
            .map_or(String::new(), |a| a.id.clone()),
        coalitions: coalitions(&pop, &records, a.bootstrap, s.seed),
        self_selection: crate::self_selection::Setting {
            population: &pop,
            records: &records,
            base: panel_machine::rules::draw::DrawSpec {
                seats: s.panel.seats,
                min_per_stance: s.panel.min_per_stance,
                min_organisations: s.panel.min_organisations,
                contributors: Default::default(),
                author_model_family: None,
            },
            seed: s.seed,
        }
        .measure(),
        impostors: impostors(
            &pop,
            &records,
            a.history_motions,
            a.history_windows,
            a.bootstrap,
            s.seed,
        ),
        relevance: relevance(&pop, &records, a.bootstrap, s.seed),
        leader: s.leader.as_ref().map(|l| (l.rerolls, l.favours.clone())),
        quality,
        by_panel_size,
        by_correlation,
        reliability,
    }
}
