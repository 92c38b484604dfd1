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
//! * The n_eff rule answers only when `Policy::independent()` accepted and the supporters'
//!   Kish effective number reaches `panel.neff_floor`: a candidate rule the simulator
//!   measures, not one the machine applies.

use calibration::scoring_rules::brier_score;
use serde::Serialize;

use crate::bootstrap::{Interval, Table};
use crate::correlation::ErrorCorrelations;
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
    pub estimators: Vec<Estimator>,
    /// Mean Kish effective number of the seated panel.
    pub panel_n_eff: Interval,
    /// Mean Kish effective number of the supporters of accepted outcomes (independent).
    pub supporters_n_eff: Interval,
    /// Accuracy of accepted outcomes (independent) by supporters' n_eff: `[1,2)`, `[2,3)`,
    /// `[3,∞)`, with each bucket's share of accepted outcomes.
    pub by_n_eff: Vec<(String, Interval, f64)>,
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

/// Supporters of an accepted outcome on the panel `seated`.
fn supporters(r: &MotionRecord, seated: &[usize], d: bool) -> Vec<usize> {
    seated
        .iter()
        .copied()
        .filter(|&i| r.rulings[i].yes == d)
        .collect()
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
pub fn measure(
    records: &[MotionRecord],
    corr: &ErrorCorrelations,
    neff_floor: f64,
    resamples: usize,
    seed: u64,
) -> Quality {
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
    let sup_neff: Vec<Option<f64>> = recs
        .iter()
        .map(|r| {
            r.new
                .decided()
                .map(|d| corr.n_eff(&supporters(r, &r.seated_new, d)))
        })
        .collect();
    let floor = Answers {
        name: format!("panel, independent + supporters' n_eff >= {neff_floor}"),
        answer: new
            .answer
            .iter()
            .zip(&sup_neff)
            .map(|(a, n)| a.filter(|_| n.is_some_and(|n| n >= neff_floor - 1e-9)))
            .collect(),
        forecast: new
            .forecast
            .iter()
            .zip(&sup_neff)
            .map(|(&p, n)| {
                if n.is_some_and(|n| n >= neff_floor - 1e-9) {
                    p
                } else {
                    0.5
                }
            })
            .collect(),
    };
    let majority = majority_answers(&recs);
    let (best, single) = best_single(&recs);
    let all = vec![old, new, floor, majority, single];
    let estimators = estimator_rows(&all, &truths, resamples, seed);
    let panel_neff: Vec<f64> = recs.iter().map(|r| corr.n_eff(&r.seated_new)).collect();
    let (supporters_n_eff, by_n_eff) = n_eff_figures(&recs, &sup_neff, resamples, seed);
    let mut t = Table::default();
    let ones = t.column(vec![1.0; panel_neff.len()]);
    let pn = t.column(panel_neff);
    t.ratio(pn, ones);
    Quality {
        motions: recs.len(),
        estimators,
        panel_n_eff: t.intervals(resamples, seed)[0],
        supporters_n_eff,
        by_n_eff,
        best_single: best,
        forecasts: all.into_iter().map(|a| (a.name, a.forecast)).collect(),
        truths,
    }
}

/// The supporters' mean n_eff and the accuracy of accepted outcomes by n_eff bucket.
fn n_eff_figures(
    recs: &[&MotionRecord],
    sup: &[Option<f64>],
    resamples: usize,
    seed: u64,
) -> (Interval, Vec<(String, Interval, f64)>) {
    let buckets = [
        ("[1, 2)", 0.0, 2.0),
        ("[2, 3)", 2.0, 3.0),
        ("[3, ∞)", 3.0, f64::INFINITY),
    ];
    let mut t = Table::default();
    let accepted = t.column(
        sup.iter()
            .map(|s| f64::from(u8::from(s.is_some())))
            .collect(),
    );
    let value = t.column(sup.iter().map(|s| s.unwrap_or(0.0)).collect());
    t.ratio(value, accepted);
    let mut shares = Vec::new();
    for (_, lo, hi) in buckets {
        let inside: Vec<bool> = sup
            .iter()
            .map(|s| s.is_some_and(|n| n >= lo - 1e-9 && n < hi - 1e-9))
            .collect();
        let ins = t.column(inside.iter().map(|&b| f64::from(u8::from(b))).collect());
        let right = t.column(
            recs.iter()
                .zip(&inside)
                .map(|(r, &b)| f64::from(u8::from(b && r.new.decided() == Some(r.truth))))
                .collect(),
        );
        t.ratio(right, ins);
        shares.push(inside.iter().filter(|&&b| b).count() as f64);
    }
    let iv = t.intervals(resamples, seed ^ 0x5eed);
    let total = sup.iter().filter(|s| s.is_some()).count().max(1) as f64;
    let rows = buckets
        .iter()
        .zip(shares)
        .enumerate()
        .map(|(k, ((label, _, _), n))| (label.to_string(), iv[k + 1], n / total))
        .collect();
    (iv[0], rows)
}
