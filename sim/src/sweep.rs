//! The sweeps behind the plots (docs/SIMULATION.md "Sweeps"): the same world and pool
//! with the panel size varied, and with every lineage's error correlation varied. Each
//! point is a fresh run of `analysis.sweep_motions` motions on its own random streams.

use serde::Serialize;

use crate::bootstrap::Interval;
use crate::population::Population;
use crate::quality::measure;
use crate::scenario::Scenario;
use crate::simulation::Run;

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// Panel size or error correlation.
    pub x: f64,
    pub old: Interval,
    pub independent: Interval,
    pub independent_coverage: Interval,
    pub majority: Interval,
    pub best_single: Interval,
}

fn point(s: &Scenario, pop: &Population, seats: usize, x: f64, stream: u64) -> SweepPoint {
    let motions = s.analysis.sweep_motions;
    let records = Run {
        scenario: s,
        population: pop,
        motions,
        seats,
        stream,
    }
    .simulate();
    let q = measure(
        &records,
        (s.analysis.bootstrap / 2).max(20),
        s.seed ^ stream,
    );
    let e = &q.estimators;
    SweepPoint {
        x,
        old: e[0].accuracy,
        independent: e[1].accuracy,
        independent_coverage: e[1].coverage,
        majority: e[2].accuracy,
        best_single: e[3].accuracy,
    }
}

/// Accuracy against panel size; sizes the pool cannot seat are skipped.
pub fn by_panel_size(s: &Scenario, pop: &Population) -> Vec<SweepPoint> {
    s.analysis
        .sweep_seats
        .iter()
        .filter(|&&k| k <= pop.arbiters.len())
        .enumerate()
        .map(|(i, &k)| point(s, pop, k, k as f64, 100 + i as u64))
        .collect()
}

/// Accuracy against the within-lineage error correlation.
pub fn by_correlation(s: &Scenario, pop: &Population) -> Vec<SweepPoint> {
    s.analysis
        .sweep_correlations
        .iter()
        .enumerate()
        .map(|(i, &rho)| {
            point(
                s,
                &pop.with_correlation(rho),
                s.panel.seats,
                rho,
                200 + i as u64,
            )
        })
        .collect()
}
