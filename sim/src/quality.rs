//! Verdict quality on binary motions (docs/SIMULATION.md "Figures"): accuracy, coverage
//! and Brier score of the panel under each rule, against the unweighted majority of the
//! same seated arbiters and the best single member of the pool, with bootstrap intervals.
//!
//! * A panel's answer is its accepted outcome; a deadlock (or no panel) is no answer.
//!   Accuracy is over answered motions, coverage the share answered.
//! * A panel's forecast is the mean probability of yes of its seated arbiters when it
//!   answered, and 0.5 when it did not; the majority's forecast is that mean always.
//! * The best single member is chosen in hindsight (the most accurate over every motion),
//!   which flatters it.
//!
//! No effective number of votes is measured here: the only errors this engine could
//! correlate are errors against the truth, which no replica knows. The machine's own
//! measured-n_eff rule (errors against accepted outcomes) runs inside apply and is reported
//! by the apply engine (`crate::replica`).

use calibration::scoring_rules::brier_score;
use serde::Serialize;

use crate::bootstrap::{Interval, Table};
use crate::panel::Verdict;
use crate::simulation::MotionRecord;

/// One way of turning rulings into an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimator {
    pub name: String,
    pub accuracy: Interval,
    pub coverage: Interval,
    pub brier: Interval,
    /// Wrong answers per motion (wrong outcomes that entered the ledger).
    pub wrong_rate: Interval,
}

/// Per-motion answer and forecast of one estimator.
struct Answers {
    name: String,
    answer: Vec<Option<bool>>,
    forecast: Vec<f64>,
}

/// The binary-motion figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    pub motions: usize,
    /// Old rule, `Policy::independent()`, majority, best single, in that order (the sweeps
    /// pick them by position).
    pub estimators: Vec<Estimator>,
    /// Pool index of the best single member.
    pub best_single: usize,
    /// Forecasts and truths, for the reliability diagrams: (estimator, forecasts).
    #[serde(skip)]
    pub forecasts: Vec<(String, Vec<f64>)>,
    #[serde(skip)]
    pub truths: Vec<bool>,
}

fn mean_p(r: &MotionRecord, seated: &[usize]) -> f64 {
    if seated.is_empty() {
        return 0.5;
    }
    seated
        .iter()
        .map(|&i| f64::from(r.rulings[i].p_yes))
        .sum::<f64>()
        / seated.len() as f64
}

fn panel_answers(
    name: &str,
    recs: &[&MotionRecord],
    pick: impl Fn(&MotionRecord) -> (Verdict, &[usize]),
) -> Answers {
    let mut answer = Vec::with_capacity(recs.len());
    let mut forecast = Vec::with_capacity(recs.len());
    for r in recs {
        let (v, seated) = pick(r);
        let a = v.decided();
        answer.push(a);
        forecast.push(if a.is_some() { mean_p(r, seated) } else { 0.5 });
    }
    Answers {
        name: name.into(),
        answer,
        forecast,
    }
}

fn majority_answers(recs: &[&MotionRecord]) -> Answers {
    let answer = recs
        .iter()
        .map(|r| {
            let yes = r.seated_new.iter().filter(|&&i| r.rulings[i].yes).count();
            let no = r.seated_new.len() - yes;
            (yes != no).then_some(yes > no)
        })
        .collect();
    let forecast = recs.iter().map(|r| mean_p(r, &r.seated_new)).collect();
    Answers {
        name: "unweighted majority of the same panel".into(),
        answer,
        forecast,
    }
}

/// The pool member right most often, and its answers.
fn best_single(recs: &[&MotionRecord]) -> (usize, Answers) {
    let n = recs.first().map_or(0, |r| r.rulings.len());
    let right = |i: usize| recs.iter().filter(|r| r.rulings[i].yes == r.truth).count();
    let best = (0..n)
        .max_by_key(|&i| (right(i), std::cmp::Reverse(i)))
        .unwrap_or(0);
    let answers = Answers {
        name: "best single member (chosen in hindsight)".into(),
        answer: recs.iter().map(|r| Some(r.rulings[best].yes)).collect(),
        forecast: recs
            .iter()
            .map(|r| f64::from(r.rulings[best].p_yes))
            .collect(),
    };
    (best, answers)
}

fn estimator_rows(all: &[Answers], truths: &[bool], resamples: usize, seed: u64) -> Vec<Estimator> {
    let mut t = Table::default();
    let ones = t.column(vec![1.0; truths.len()]);
    let mut idx = Vec::new();
    for a in all {
        let ans = t.column(
            a.answer
                .iter()
                .map(|x| f64::from(u8::from(x.is_some())))
                .collect(),
        );
        let right = t.column(
            a.answer
                .iter()
                .zip(truths)
                .map(|(x, &o)| f64::from(u8::from(*x == Some(o))))
                .collect(),
        );
        let wrong = t.column(
            a.answer
                .iter()
                .zip(truths)
                .map(|(x, &o)| f64::from(u8::from(*x == Some(!o))))
                .collect(),
        );
        let sq = t.column(
            a.forecast
                .iter()
                .zip(truths)
                .map(|(p, &o)| (p - f64::from(u8::from(o))).powi(2))
                .collect(),
        );
        idx.push([
            t.ratio(right, ans),
            t.ratio(ans, ones),
            t.ratio(sq, ones),
            t.ratio(wrong, ones),
        ]);
    }
    let iv = t.intervals(resamples, seed);
    all.iter()
        .zip(idx)
        .map(|(a, [acc, cov, br, wr])| {
            let mut brier = iv[br];
            if let Ok(b) = brier_score(&a.forecast, truths) {
                brier.estimate = b;
            }
            Estimator {
                name: a.name.clone(),
                accuracy: iv[acc],
                coverage: iv[cov],
                brier,
                wrong_rate: iv[wr],
            }
        })
        .collect()
}

/// Every binary-motion figure of a run.
pub fn measure(records: &[MotionRecord], resamples: usize, seed: u64) -> Quality {
    let recs: Vec<&MotionRecord> = records.iter().filter(|r| r.gold.is_none()).collect();
    let truths: Vec<bool> = recs.iter().map(|r| r.truth).collect();
    let old = panel_answers(
        "panel, old rule (Policy::default(), batch-seed draw)",
        &recs,
        |r| (r.old, &r.seated_old),
    );
    let new = panel_answers(
        "panel, Policy::independent() (lineage + organisation rules)",
        &recs,
        |r| (r.new, &r.seated_new),
    );
    let majority = majority_answers(&recs);
    let (best, single) = best_single(&recs);
    let all = vec![old, new, majority, single];
    let estimators = estimator_rows(&all, &truths, resamples, seed);
    Quality {
        motions: recs.len(),
        estimators,
        best_single: best,
        forecasts: all.into_iter().map(|a| (a.name, a.forecast)).collect(),
        truths,
    }
}
