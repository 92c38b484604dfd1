//! Relevance motions and inert arbiters (docs/SIMULATION.md "Inert relevance"; the
//! Crucible paper's section 6, "A published factor can be inert"): how often the accepted
//! step is the true one, and whether `calibration::inert::detect_inert` finds the arbiters
//! that give one step whatever the claim.

use calibration::inert::{InertPolicy, detect_inert};
use serde::Serialize;

use crate::bootstrap::{Interval, Table};
use crate::panel::Verdict;
use crate::population::Population;
use crate::simulation::MotionRecord;

/// The relevance figures of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelevanceFigures {
    pub motions: usize,
    /// Share of accepted steps equal to the truth, old and independent policy.
    pub exact_old: Interval,
    pub exact_new: Interval,
    pub coverage_new: Interval,
    pub inert: usize,
    pub inert_flagged: usize,
    pub others: usize,
    pub others_flagged: usize,
}

fn exact(v: Verdict, gold: u8) -> Option<bool> {
    match v {
        Verdict::Relevance(s) => Some(s == gold),
        _ => None,
    }
}

/// `None` when the scenario has no relevance motions.
pub fn measure(
    pop: &Population,
    records: &[MotionRecord],
    resamples: usize,
    seed: u64,
) -> Option<RelevanceFigures> {
    let recs: Vec<(&MotionRecord, u8)> = records
        .iter()
        .filter_map(|r| r.gold.map(|g| (r, g)))
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut t = Table::default();
    let ones = t.column(vec![1.0; recs.len()]);
    let mut idx = Vec::new();
    for pick in [|r: &MotionRecord| r.old, |r: &MotionRecord| r.new] {
        let e: Vec<Option<bool>> = recs.iter().map(|(r, g)| exact(pick(r), *g)).collect();
        let acc = t.column(e.iter().map(|x| f64::from(u8::from(x.is_some()))).collect());
        let right = t.column(
            e.iter()
                .map(|x| f64::from(u8::from(*x == Some(true))))
                .collect(),
        );
        idx.push((t.ratio(right, acc), t.ratio(acc, ones)));
    }
    let iv = t.intervals(resamples, seed);
    let mut f = RelevanceFigures {
        motions: recs.len(),
        exact_old: iv[idx[0].0],
        exact_new: iv[idx[1].0],
        coverage_new: iv[idx[1].1],
        inert: 0,
        inert_flagged: 0,
        others: 0,
        others_flagged: 0,
    };
    count_inert(pop, &recs, &mut f);
    Some(f)
}

/// Screen every non-colluding arbiter's seated relevance answers against the truth.
fn count_inert(pop: &Population, recs: &[(&MotionRecord, u8)], f: &mut RelevanceFigures) {
    for (i, a) in pop
        .arbiters
        .iter()
        .enumerate()
        .filter(|(_, a)| a.target.is_none())
    {
        let (mut answers, mut gold) = (Vec::new(), Vec::new());
        for (r, g) in recs.iter().filter(|(r, _)| r.seated_new.contains(&i)) {
            if let Some(step) = r.rulings[i].relevance {
                answers.push(f64::from(step) / 4.0);
                gold.push(f64::from(*g) / 4.0);
            }
        }
        let flagged =
            detect_inert(&answers, &gold, &InertPolicy::default()).is_ok_and(|rep| rep.inert);
        if a.inert {
            f.inert += 1;
            f.inert_flagged += usize::from(flagged);
        } else {
            f.others += 1;
            f.others_flagged += usize::from(flagged);
        }
    }
}
