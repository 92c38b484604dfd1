//! Verdict quality of the machine's own path (docs/SIMULATION.md "The machine's own
//! path"): per policy, over binary motions, the machine's coverage (share accepted),
//! accuracy of accepted outcomes and Brier score, beside an unweighted majority of the
//! same seats and the best single member chosen on earlier motions only, with 95%
//! bootstrap intervals (`bootstrap.rs`).
//!
//! * The machine's forecast is its recorded `confidence` turned toward yes when it
//!   accepted, 0.5 for a deadlock or no panel.
//! * The majority answers when more than half of the seats say one thing; its forecast is
//!   the seats' mean probability of yes (0.5 without a panel).
//! * The best single member on motion k is the pool member with the lowest Brier score
//!   on the binary motions before k (the first member on the first motion): prequential,
//!   never in hindsight. It always answers.
//! * Forced: an accepted outcome against the truth whose supporters all belong to one
//!   coalition (`coalition::forced`).

use serde::Serialize;

use crate::appeal_ladder::{AppealFigures, Appellants};
use crate::bootstrap::{Interval, Table};
use crate::coalition::forced;
use crate::panel::Verdict;
use crate::population::Population;
use crate::replica::{
    Admission, MachineVerdict, POLICIES, ReplicaMotion, ReplicaOptions, ReplicaRun,
};
use crate::scenario::Scenario;

/// Coverage, accuracy of answers and Brier score of one way of answering.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answering {
    pub coverage: Interval,
    pub accuracy: Interval,
    pub brier: Interval,
}

/// Every figure of one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyFigures {
    pub policy: String,
    /// Binary motions scored.
    pub motions: usize,
    pub accepted: usize,
    pub deadlocked: usize,
    pub no_panel: usize,
    /// Accepted outcomes that carried the machine's confidence.
    pub with_confidence: usize,
    pub machine: Answering,
    pub majority: Answering,
    pub best_single: Answering,
    /// Machine's Brier minus the majority's, and minus the best single member's.
    pub brier_vs_majority: Interval,
    pub brier_vs_best_single: Interval,
    /// Accepted outcomes against the truth, and those a coalition alone carried, by
    /// coalition name.
    pub wrong: usize,
    pub forced: Vec<(String, usize)>,
    /// How often each deadlock reason was given (a deadlock may give several).
    pub reasons: Vec<(String, usize)>,
    /// Per ask of the ladder (first panel, first re-ask, ...): motions answered there
    /// and how many of those answers were right.
    pub by_ask: Vec<AskFigures>,
    /// Accepted outcomes the weights decided: equal weights would have pooled to the
    /// other side of 0.5 (weighted pool only); and how many of them were right.
    pub weights_changed: usize,
    pub weights_changed_right: usize,
    /// Whether the recorded 90% intervals hold what they say, per band of stated probability.
    pub intervals: Vec<IntervalBand>,
    /// Coverage against accuracy when only outcomes stated at least this sure are taken.
    pub trade_off: Vec<TradeOff>,
    /// The appeal ladder's effect on the accepted outcomes (`appeal_ladder`).
    pub appeals: AppealFigures,
}

/// Motions answered at one ask of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AskFigures {
    pub ask: usize,
    pub answered: usize,
    pub right: usize,
}

/// Accepted outcomes whose stated probability lies in `[from, to)`: how many, how many
/// were right, and the mean ends of their recorded 90% intervals. The band's intervals
/// hold when its observed accuracy lies between the mean ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalBand {
    pub from: f64,
    pub to: f64,
    pub outcomes: usize,
    pub right: usize,
    pub mean_stated: f64,
    pub mean_low: f64,
    pub mean_high: f64,
}

impl IntervalBand {
    pub fn accuracy(&self) -> f64 {
        self.right as f64 / self.outcomes.max(1) as f64
    }

    pub fn holds(&self) -> bool {
        (self.mean_low..=self.mean_high).contains(&self.accuracy())
    }
}

/// Taking only accepted outcomes stated at least `threshold` sure: the share of binary
/// motions answered and the accuracy of those answers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TradeOff {
    pub threshold: f64,
    pub coverage: f64,
    pub accuracy: f64,
}

/// A scenario's run through the machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaReport {
    pub scenario: String,
    pub seed: u64,
    pub motions: usize,
    pub seats: usize,
    pub pool: usize,
    pub admission: Admission,
    /// Pool members admitted before the first motion.
    pub admitted: usize,
    pub start_ms: u64,
    pub step_ms: u64,
    pub appellants: Appellants,
    pub policies: Vec<PolicyFigures>,
}

fn brier(p: f64, truth: bool) -> f64 {
    let t = if truth { 1.0 } else { 0.0 };
    (p - t) * (p - t)
}

/// Per binary motion: whether an answer came, whether it was right, and its Brier.
#[derive(Default)]
struct Columns {
    answered: Vec<f64>,
    correct: Vec<f64>,
    brier: Vec<f64>,
}

impl Columns {
    fn push(&mut self, answer: Option<bool>, forecast: f64, truth: bool) {
        self.answered.push(f64::from(u8::from(answer.is_some())));
        self.correct
            .push(f64::from(u8::from(answer.is_some_and(|a| a == truth))));
        self.brier.push(brier(forecast, truth));
    }

    /// Adds coverage, accuracy and Brier to `t`; their indices.
    fn add(self, t: &mut Table, ones: usize) -> (usize, usize, usize) {
        let answered = t.column(self.answered);
        let correct = t.column(self.correct);
        let brier = t.column(self.brier);
        (
            t.ratio(answered, ones),
            t.ratio(correct, answered),
            t.ratio(brier, ones),
        )
    }
}

/// The first panel's majority answer (none on a tie or without a panel) and mean
/// probability: a re-ask is the machine's, not the baseline's.
fn majority(v: &MachineVerdict, m: &ReplicaMotion) -> (Option<bool>, f64) {
    if v.first_seated.is_empty() {
        return (None, 0.5);
    }
    let n = v.first_seated.len();
    let yes = v.first_seated.iter().filter(|&&i| m.rulings[i].yes).count();
    let mean = v
        .first_seated
        .iter()
        .map(|&i| f64::from(m.rulings[i].p_yes))
        .sum::<f64>()
        / n as f64;
    let answer = match (2 * yes).cmp(&n) {
        std::cmp::Ordering::Greater => Some(true),
        std::cmp::Ordering::Less => Some(false),
        std::cmp::Ordering::Equal => None,
    };
    (answer, mean)
}

/// The best single member's answers, chosen on earlier motions only.
fn best_single(binary: &[&ReplicaMotion], pool: usize) -> Columns {
    let mut cumulative: Vec<f64> = vec![0.0; pool];
    let mut c = Columns::default();
    for m in binary {
        let best = cumulative
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i);
        let r = m.rulings[best];
        c.push(Some(r.yes), f64::from(r.p_yes), m.truth);
        for (i, r) in m.rulings.iter().enumerate() {
            cumulative[i] += brier(f64::from(r.p_yes), m.truth);
        }
    }
    c
}

fn policy_figures(
    s: &Scenario,
    pop: &Population,
    binary: &[&ReplicaMotion],
    p: usize,
) -> PolicyFigures {
    let mut t = Table::default();
    let ones = t.column(vec![1.0; binary.len()]);
    let (mut machine, mut major) = (Columns::default(), Columns::default());
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    let mut forced_by = vec![0; pop.coalitions.len()];
    let (mut accepted, mut deadlocked, mut no_panel, mut sure, mut wrong) = (0, 0, 0, 0, 0);
    let mut ladder = Ladder::default();
    let mut changed = (0, 0);
    let mut stated: Vec<Stated> = Vec::new();
    let mut appeals = AppealFigures::default();
    for m in binary {
        let v = &m.verdicts[p];
        let answer = v.verdict.decided();
        match v.verdict {
            Verdict::NoPanel => no_panel += 1,
            Verdict::Deadlocked => deadlocked += 1,
            _ => accepted += 1,
        }
        sure += usize::from(v.p_yes.is_some());
        wrong += usize::from(answer.is_some_and(|a| a != m.truth));
        for r in &v.reasons {
            *reasons.entry(r.clone()).or_default() += 1;
        }
        for (c, n) in forced_by.iter_mut().enumerate() {
            let against = answer.is_some_and(|a| a != m.truth);
            *n += usize::from(against && forced(pop, c, &m.rulings, &v.seated, v.verdict));
        }
        // Accepted without a recorded confidence: the answer itself, sure.
        let hard = answer.map_or(0.5, |a| if a { 1.0 } else { 0.0 });
        machine.push(answer, v.p_yes.unwrap_or(hard), m.truth);
        let (a, f) = majority(v, m);
        major.push(a, f, m.truth);
        if let Some(r) = &v.appeal {
            appeals.add(r, m.truth);
        }
        if let Some(a) = answer {
            ladder.answered(v.asks, a == m.truth);
            if let (Some(p), Some(e)) = (v.p_yes, v.equal_p_yes)
                && (p > 0.5) != (e > 0.5)
            {
                changed.0 += 1;
                changed.1 += usize::from(a == m.truth);
            }
            if let (Some(p), Some(interval)) = (v.p_yes, v.interval) {
                stated.push(Stated {
                    p: if a { p } else { 1.0 - p },
                    interval,
                    right: a == m.truth,
                });
            }
        }
    }
    let single = best_single(binary, pop.arbiters.len());
    // Differences of mean Brier, as means over a column of per-motion differences.
    let minus = |other: &Columns| -> Vec<f64> {
        machine
            .brier
            .iter()
            .zip(&other.brier)
            .map(|(a, b)| a - b)
            .collect()
    };
    let (d_major, d_single) = (minus(&major), minus(&single));
    let (mc, ma, mb) = machine.add(&mut t, ones);
    let (jc, ja, jb) = major.add(&mut t, ones);
    let (sc, sa, sb) = single.add(&mut t, ones);
    let dm = t.column(d_major);
    let ds = t.column(d_single);
    let i_dm = t.ratio(dm, ones);
    let i_ds = t.ratio(ds, ones);
    let iv = t.intervals(s.analysis.bootstrap, s.seed ^ (p as u64 + 0x5eed));
    let answering = |c: usize, a: usize, b: usize| Answering {
        coverage: iv[c],
        accuracy: iv[a],
        brier: iv[b],
    };
    PolicyFigures {
        policy: POLICIES[p].into(),
        motions: binary.len(),
        accepted,
        deadlocked,
        no_panel,
        with_confidence: sure,
        machine: answering(mc, ma, mb),
        majority: answering(jc, ja, jb),
        best_single: answering(sc, sa, sb),
        brier_vs_majority: iv[i_dm],
        brier_vs_best_single: iv[i_ds],
        wrong,
        forced: pop.coalitions.iter().cloned().zip(forced_by).collect(),
        reasons: reasons.into_iter().collect(),
        by_ask: ladder.0,
        weights_changed: changed.0,
        weights_changed_right: changed.1,
        intervals: bands(&stated),
        trade_off: trade_off(&stated, binary.len()),
        appeals,
    }
}

/// Answers per ask, grown as asks are seen.
#[derive(Default)]
struct Ladder(Vec<AskFigures>);

impl Ladder {
    fn answered(&mut self, ask: usize, right: bool) {
        while self.0.len() < ask {
            let ask = self.0.len() + 1;
            self.0.push(AskFigures {
                ask,
                answered: 0,
                right: 0,
            });
        }
        if let Some(f) = self.0.get_mut(ask.saturating_sub(1)) {
            f.answered += 1;
            f.right += usize::from(right);
        }
    }
}

/// An accepted outcome's stated probability (of the outcome), its interval, and whether
/// it was right.
struct Stated {
    p: f64,
    interval: (f64, f64),
    right: bool,
}

/// The bands [`IntervalBand`] reports: 0.5-0.6, ..., 0.9-1.0.
const BANDS: [(f64, f64); 5] = [(0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)];

fn bands(stated: &[Stated]) -> Vec<IntervalBand> {
    BANDS
        .iter()
        .filter_map(|&(from, to)| {
            let inside: Vec<&Stated> = stated.iter().filter(|x| x.p >= from && x.p < to).collect();
            let n = inside.len();
            (n > 0).then(|| {
                let mean = |f: &dyn Fn(&Stated) -> f64| {
                    inside.iter().map(|x| f(x)).sum::<f64>() / n as f64
                };
                IntervalBand {
                    from,
                    to: to.min(1.0),
                    outcomes: n,
                    right: inside.iter().filter(|x| x.right).count(),
                    mean_stated: mean(&|x| x.p),
                    mean_low: mean(&|x| x.interval.0),
                    mean_high: mean(&|x| x.interval.1),
                }
            })
        })
        .collect()
}

fn trade_off(stated: &[Stated], motions: usize) -> Vec<TradeOff> {
    [0.5, 0.6, 0.7, 0.8, 0.9]
        .into_iter()
        .map(|threshold| {
            let taken: Vec<&Stated> = stated.iter().filter(|x| x.p >= threshold).collect();
            TradeOff {
                threshold,
                coverage: taken.len() as f64 / motions.max(1) as f64,
                accuracy: taken.iter().filter(|x| x.right).count() as f64
                    / taken.len().max(1) as f64,
            }
        })
        .collect()
}

/// The figures of a run through the machine.
pub fn measure(s: &Scenario, run: &ReplicaRun, o: &ReplicaOptions) -> ReplicaReport {
    let pop = Population::build(s);
    let binary: Vec<&ReplicaMotion> = run.motions.iter().filter(|m| m.gold.is_none()).collect();
    ReplicaReport {
        scenario: s.name.clone(),
        seed: s.seed,
        motions: run.motions.len(),
        seats: s.panel.seats,
        pool: pop.arbiters.len(),
        admission: o.admission,
        admitted: run.admitted,
        start_ms: o.start_ms,
        step_ms: o.step_ms,
        appellants: o.appeals,
        policies: (0..POLICIES.len())
            .map(|p| policy_figures(s, &pop, &binary, p))
            .collect(),
    }
}

impl ReplicaReport {
    /// One Markdown table row per policy: the figures docs/SIMULATION.md tabulates.
    pub fn rows(&self) -> Vec<String> {
        self.policies
            .iter()
            .map(|f| {
                let forced: usize = f.forced.iter().map(|(_, n)| n).sum();
                let first = f.by_ask.first().map_or(0, |a| a.answered);
                format!(
                    "| {} | {} | {}/{} | {} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    self.scenario,
                    f.policy,
                    self.admitted,
                    self.pool,
                    f.motions,
                    first as f64 / f.motions.max(1) as f64,
                    f.machine.coverage.show(),
                    f.machine.accuracy.show(),
                    f.machine.brier.show(),
                    f.majority.brier.show(),
                    f.best_single.brier.show(),
                    f.brier_vs_majority.show(),
                    f.brier_vs_best_single.show(),
                    f.wrong,
                    forced,
                    f.weights_changed,
                )
            })
            .collect()
    }

    /// One Markdown row per policy of the appeal ladder's effect
    /// ([`APPEAL_TABLE_HEAD`]).
    pub fn appeal_rows(&self) -> Vec<String> {
        self.policies
            .iter()
            .map(|f| {
                let a = &f.appeals;
                let n = a.outcomes.max(1) as f64;
                format!(
                    "| {} | {} | {} | {:.3} | {:.3} | {} | {} | {} | {} | {} | {:.2} | {:.2} |",
                    self.scenario,
                    f.policy,
                    a.outcomes,
                    a.right_before as f64 / n,
                    a.right_after as f64 / n,
                    a.appealed,
                    a.filed,
                    a.decided,
                    a.corrected,
                    a.spoiled,
                    a.seats as f64 / n,
                    a.deposits as f64 / n,
                )
            })
            .collect()
    }

    /// The report as Markdown: the table and each policy's deadlock reasons.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# {} through the machine\n\n{} motions (binary ones scored), {} seats from a pool \
             of {} ({} admitted by {:?}); seed {}, batches stamped from {} ms every {} ms; \
             accepted outcomes appealed up to {} round(s) by parties whose signal is right {:.2} \
             of the time.\n\n",
            self.scenario,
            self.motions,
            self.seats,
            self.pool,
            self.admitted,
            self.admission,
            self.seed,
            self.start_ms,
            self.step_ms,
            self.appellants.rounds,
            f64::from(self.appellants.signal_milli) / 1000.0,
        );
        out.push_str(TABLE_HEAD);
        for r in self.rows() {
            out.push_str(&r);
            out.push('\n');
        }
        for f in &self.policies {
            out.push_str(&format!(
                "\n**{}**: {} accepted ({} with the machine's confidence), {} deadlocked, {} \
                 without a panel; majority coverage {}, accuracy {}; best single accuracy {}. \
                 Deadlock reasons: {}.\n",
                f.policy,
                f.accepted,
                f.with_confidence,
                f.deadlocked,
                f.no_panel,
                f.majority.coverage.show(),
                f.majority.accuracy.show(),
                f.best_single.accuracy.show(),
                f.reasons
                    .iter()
                    .map(|(r, n)| format!("{r} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            out.push_str(&f.detail());
        }
        out
    }
}

impl PolicyFigures {
    /// The ladder per ask, the weights' changes, the intervals per band and the
    /// coverage-accuracy trade-off, as Markdown lines.
    pub fn detail(&self) -> String {
        let n = self.motions.max(1) as f64;
        let asks: Vec<String> = self
            .by_ask
            .iter()
            .map(|a| {
                format!(
                    "ask {}: {} answered ({:.3} of motions), accuracy {:.3}",
                    a.ask,
                    a.answered,
                    a.answered as f64 / n,
                    a.right as f64 / a.answered.max(1) as f64
                )
            })
            .collect();
        let bands: Vec<String> = self
            .intervals
            .iter()
            .map(|b| {
                format!(
                    "{:.1}-{:.1}: {} outcomes, stated {:.3}, right {:.3}, mean 90% interval {:.3}-{:.3} ({})",
                    b.from,
                    b.to,
                    b.outcomes,
                    b.mean_stated,
                    b.accuracy(),
                    b.mean_low,
                    b.mean_high,
                    if b.holds() { "holds" } else { "misses" }
                )
            })
            .collect();
        let curve: Vec<String> = self
            .trade_off
            .iter()
            .map(|t| {
                format!(
                    "≥{:.1}: coverage {:.3}, accuracy {:.3}",
                    t.threshold, t.coverage, t.accuracy
                )
            })
            .collect();
        format!(
            "- Ladder: {}.\n- Weights changed {} accepted answer(s), {} of them right.\n- Intervals by stated probability: {}.\n- Trade-off (outcomes stated at least this sure): {}.\n- Appeals: {}.\n",
            if asks.is_empty() {
                "nothing answered".into()
            } else {
                asks.join("; ")
            },
            self.weights_changed,
            self.weights_changed_right,
            if bands.is_empty() {
                "none".into()
            } else {
                bands.join("; ")
            },
            curve.join("; "),
            self.appeals.line()
        )
    }
}

/// The head of the table [`ReplicaReport::rows`] fills.
pub const TABLE_HEAD: &str = "| scenario | policy | admitted | binary motions | coverage, first panel | coverage | accuracy (accepted) | Brier | majority Brier | best single Brier | Brier − majority | Brier − best single | wrong accepted | forced | weights changed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

/// The head of the table [`ReplicaReport::appeal_rows`] fills.
pub const APPEAL_TABLE_HEAD: &str = "| scenario | policy | accepted | accuracy before appeals | accuracy after | outcomes appealed | appeals | appeal panels that decided | corrected | spoiled | appeal seats per outcome | credits per outcome |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
