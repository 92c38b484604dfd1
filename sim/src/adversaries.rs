//! The adversaries' figures (docs/SIMULATION.md "Coalitions", "Impostors", "A steering
//! leader"): outcomes each coalition forced under each rule, the prior-consistency check's
//! recall and false flags, and what re-rolling the draw seed bought a leader.

use serde::Serialize;

use crate::bootstrap::{Interval, Table};
use crate::coalition::{Confinement, confinement, forced};
use crate::impostors::{WindowFlags, check_window};
use crate::population::Population;
use crate::simulation::MotionRecord;

/// One coalition's record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoalitionFigures {
    pub name: String,
    pub members: usize,
    pub confinement: Confinement,
    /// Outcomes it alone carried under `Policy::default()` (on the old-draw panel).
    pub forced_old: usize,
    /// ... under `Policy::independent()` (unsteerable draw): must be 0 when confined.
    pub forced_new: usize,
    /// ... under `Policy::independent()` on the steered panel, with a steering leader.
    pub forced_new_steered: Option<usize>,
    /// Mean seats it held per panel, old draw and unsteerable draw.
    pub seats_old: Interval,
    pub seats_new: Interval,
}

/// Every coalition of the pool.
pub fn coalitions(
    pop: &Population,
    records: &[MotionRecord],
    resamples: usize,
    seed: u64,
) -> Vec<CoalitionFigures> {
    (0..pop.coalitions.len())
        .map(|c| {
            let count =
                |pick: &dyn Fn(&MotionRecord) -> bool| records.iter().filter(|r| pick(r)).count();
            let held = |seated: &[usize]| {
                seated
                    .iter()
                    .filter(|&&i| pop.arbiters[i].coalition == Some(c))
                    .count() as f64
            };
            let mut t = Table::default();
            let ones = t.column(vec![1.0; records.len()]);
            let so = t.column(records.iter().map(|r| held(&r.seated_old)).collect());
            let sn = t.column(records.iter().map(|r| held(&r.seated_new)).collect());
            t.ratio(so, ones);
            t.ratio(sn, ones);
            let iv = t.intervals(resamples, seed + c as u64);
            let steered = records.first().and_then(|r| r.new_on_steered).map(|_| {
                count(&|r| {
                    r.new_on_steered
                        .is_some_and(|v| forced(pop, c, &r.rulings, &r.seated_old, v))
                })
            });
            CoalitionFigures {
                name: pop.coalitions[c].clone(),
                members: pop.members(c).count(),
                confinement: confinement(pop, c),
                forced_old: count(&|r| forced(pop, c, &r.rulings, &r.seated_old, r.old)),
                forced_new: count(&|r| forced(pop, c, &r.rulings, &r.seated_new, r.new)),
                forced_new_steered: steered,
                seats_old: iv[0],
                seats_new: iv[1],
            }
        })
        .collect()
}

/// The prior-consistency check over the history windows: version 2 (the rule measured)
/// and version 1 on the same windows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImpostorFigures {
    pub windows: usize,
    pub window_motions: usize,
    pub impostors: usize,
    pub honest: usize,
    pub recall: Interval,
    pub false_flag_rate: Interval,
    pub colluders_flagged: usize,
    pub recall_v1: Interval,
    pub false_flag_rate_v1: Interval,
    pub colluders_flagged_v1: usize,
    pub failed_windows: usize,
}

/// `None` when the pool has no declared camps to check.
pub fn impostors(
    pop: &Population,
    records: &[MotionRecord],
    window: usize,
    windows: usize,
    resamples: usize,
    seed: u64,
) -> Option<ImpostorFigures> {
    let windows = windows.min(records.len() / window).max(1);
    let flags: Vec<WindowFlags> = records
        .chunks(window.min(records.len()))
        .take(windows)
        .map(|w| check_window(pop, w))
        .collect();
    let mut t = Table::default();
    let col =
        |f: &dyn Fn(&WindowFlags) -> usize| flags.iter().map(|x| f(x) as f64).collect::<Vec<f64>>();
    let imp = t.column(col(&|f| f.impostors));
    let hon = t.column(col(&|f| f.honest));
    let (impf, honf) = (
        t.column(col(&|f| f.v2.impostors_flagged)),
        t.column(col(&|f| f.v2.honest_flagged)),
    );
    let (impf1, honf1) = (
        t.column(col(&|f| f.v1.impostors_flagged)),
        t.column(col(&|f| f.v1.honest_flagged)),
    );
    t.ratio(impf, imp);
    t.ratio(honf, hon);
    t.ratio(impf1, imp);
    t.ratio(honf1, hon);
    let iv = t.intervals(resamples, seed);
    let sum = |f: &dyn Fn(&WindowFlags) -> usize| flags.iter().map(f).sum::<usize>();
    let honest = sum(&|f| f.honest);
    let impostors = sum(&|f| f.impostors);
    (honest + impostors > 0).then(|| ImpostorFigures {
        windows: flags.len(),
        window_motions: window,
        impostors,
        honest,
        recall: iv[0],
        false_flag_rate: iv[1],
        colluders_flagged: sum(&|f| f.v2.colluders_flagged),
        recall_v1: iv[2],
        false_flag_rate_v1: iv[3],
        colluders_flagged_v1: sum(&|f| f.v1.colluders_flagged),
        failed_windows: flags.iter().filter(|f| f.failed).count(),
    })
}
