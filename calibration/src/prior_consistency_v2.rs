//! Prior-consistency check, version 2 (measured in docs/SIMULATION.md "Impostors"; version
//! 1 is docs/CALIBRATION.md section 5). Version 1 (`prior_consistency::check_priors`) stays as it was: records on
//! the record were computed with it and must replay identically.
//!
//! Why a second version: version 1 compares an arbiter with its camp's majority on the few
//! motions where the seated members of both camps happened to split, so it has little
//! evidence (about 40 motions in 400), lets impostors inside a camp define that camp's
//! majority, lets a colluding bloc of one camp define it too, and reads a lineage that
//! straddles the camps as a camp. This version:
//!
//! 1. **Judges, not registrations.** Arbiters whose rulings never differ (a clone group:
//!    linked by at least `clone_min_link` shared motions without a disagreement, each
//!    sharing `clone_min_shared` motions with the rest of its group) count as one judge,
//!    so eight copies of one colluder are one vote in a camp's reference, not eight.
//! 2. **Pairwise evidence.** For arbiter `u` and every other judge `J` with a declared
//!    camp, the agreement rate of `u` with `J` on the motions both ruled. All co-rated
//!    motions are used, not only those where two seated majorities split.
//! 3. **Random-effects comparison.** The mean agreement with the other camp's judges minus
//!    that with the own camp's judges, each a DerSimonian-Laird random-effects mean
//!    (between-judge variance pooled over both camps), gives `z`. Judges that agree with
//!    `u` for reasons other than camp (a shared lineage, a colluding bloc) make the judges
//!    heterogeneous, which widens the standard error instead of deciding the sign.
//! 4. **Suspects set aside.** Judges whose members lean to the other camp (`z > 0`) in the
//!    previous pass are left out of both references in the next, until the set is stable
//!    (at most `max_passes` passes), so impostors do not define their declared camp.
//! 5. **Camp-effect gate.** The check flags nobody on stance unless declared camps differ at
//!    all: the median over judges of their consistency (`-z` of the first pass), scaled by
//!    its standard error under no camp effect (`sqrt(pi/2)/sqrt(k)`), must be significant
//!    at `gate_significance`. Without a camp effect (no partisanship, lineages across both
//!    camps) every "impostor" would be a lineage or noise artefact.
//! 6. **Multiple testing.** One-sided p-values `P(Z >= z)` of the gated arbiters, with
//!    Benjamini-Hochberg at `false_discovery_rate` across the arbiters of the run.
//! 7. **One judge, two camps.** A member of a clone group whose declared members are mostly
//!    of the other camp is flagged as well (`clone_minority`): one judge cannot sit for
//!    both camps.
//!
//! Pure and deterministic: no randomness, no clock, no hash maps; every sum runs in arbiter
//! and motion order, so the result is bit-identical wherever it is recomputed.
//!
//! A rating above 0.5 is an approval, below 0.5 a rejection, exactly 0.5 no vote.

use serde::{Deserialize, Serialize};

use crate::bridging::BridgingFit;
use crate::chi_square::regularized_gamma_q;
use crate::error::{CalibrationError, Result};
use crate::prior_consistency::{Camp, PriorCheck};

/// Thresholds of the version-2 check. `Default` is the recommended rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriorCheckPolicyV2 {
    /// Benjamini-Hochberg false-discovery rate across the arbiters of one run (default
    /// 0.10: at most a tenth of the stance flags are expected to be wrong).
    pub false_discovery_rate: f64,
    /// One-sided level of the camp-effect gate (default 0.01; the gate is one global test,
    /// so a strict level costs little when camps really differ).
    pub gate_significance: f64,
    /// Judges of each camp, besides the arbiter's own, needed to compare (default 3).
    pub min_judges_per_camp: usize,
    /// Rulings the arbiter must share with each camp's compared judges (default 30).
    pub min_shared_rulings: usize,
    /// Shared motions, without a disagreement, that link two arbiters as clones (default
    /// 10: two distinct judges agreeing 75% of the time do so by chance 6% of the time).
    pub clone_min_link: usize,
    /// Motions each clone must share with the rest of its group (default 40: a distinct
    /// judge that disagrees with it on 5% of motions agrees on all 40 by chance 13% of the
    /// time, and on all of a group's rulings far more rarely).
    pub clone_min_shared: usize,
    /// Passes that set suspected impostors aside (default 5; stops earlier when stable).
    pub max_passes: usize,
}

impl Default for PriorCheckPolicyV2 {
    fn default() -> Self {
        Self {
            false_discovery_rate: 0.10,
            gate_significance: 0.01,
            min_judges_per_camp: 3,
            min_shared_rulings: 30,
            clone_min_link: 10,
            clone_min_shared: 40,
            max_passes: 5,
        }
    }
}

impl PriorCheckPolicyV2 {
    fn validate(&self) -> Result<()> {
        let level = |what: &'static str, v: f64| -> Result<()> {
            if v > 0.0 && v < 1.0 {
                Ok(())
            } else {
                Err(CalibrationError::InvalidParameter {
                    what,
                    reason: format!(
                        "{v} is not a level in (0, 1); the default is the recommended rule"
                    ),
                })
            }
        };
        level("false_discovery_rate", self.false_discovery_rate)?;
        level("gate_significance", self.gate_significance)?;
        let at_least_one = |what: &'static str, v: usize| -> Result<()> {
            if v >= 1 {
                Ok(())
            } else {
                Err(CalibrationError::InvalidParameter {
                    what,
                    reason: "0 would let the check run without evidence; use at least 1".into(),
                })
            }
        };
        at_least_one("min_judges_per_camp", self.min_judges_per_camp)?;
        at_least_one("clone_min_link", self.clone_min_link)?;
        at_least_one("max_passes", self.max_passes)
    }
}

/// The version-2 evidence for one arbiter (`PriorCheck::v2`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorCheckV2 {
    /// Other arbiters whose rulings are identical to this one's (its clone group).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clones: Vec<usize>,
    /// The clone group's declared members are mostly of the other camp.
    pub clone_minority: bool,
    /// Judges of the own and of the other camp compared in the last pass.
    pub own_judges: usize,
    pub other_judges: usize,
    /// Random-effects mean agreement with those judges.
    pub own_agreement: Option<f64>,
    pub other_agreement: Option<f64>,
    /// `(other - own) / standard error`; positive leans to the other camp. `None` below
    /// the minimum evidence.
    pub z: Option<f64>,
    /// The run's camp effect: the scaled median consistency of the judges (the gate).
    pub camp_effect: f64,
    /// The camp effect is significant, so stance flags are possible in this run.
    pub gate_open: bool,
    /// Passes run (1 when the gate is shut).
    pub passes: usize,
}

fn other(c: Camp) -> Camp {
    match c {
        Camp::A => Camp::B,
        Camp::B => Camp::A,
    }
}

/// `P(Z >= z)` for a standard normal `Z`, through `erfc(x) = Q(1/2, x^2)`.
fn normal_sf(z: f64) -> f64 {
    let tail = 0.5 * regularized_gamma_q(0.5, 0.5 * z * z);
    if z >= 0.0 { tail } else { 1.0 - tail }
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let k = xs.len();
    Some(if k % 2 == 1 {
        xs[k / 2]
    } else {
        0.5 * (xs[k / 2 - 1] + xs[k / 2])
    })
}

/// +1 yes, -1 no, 0 no vote.
fn vote(v: Option<f64>) -> i8 {
    match v {
        Some(x) if x > 0.5 => 1,
        Some(x) if x < 0.5 => -1,
        _ => 0,
    }
}

/// Co-rated motions and agreements of every pair of arbiters, row-major.
struct Pairs {
    n: usize,
    shared: Vec<usize>,
    agreed: Vec<usize>,
}

impl Pairs {
    fn count(votes: &[Vec<i8>]) -> Self {
        let n = votes.len();
        let (mut shared, mut agreed) = (vec![0; n * n], vec![0; n * n]);
        for u in 0..n {
            for v in (u + 1)..n {
                let (s, a) = votes[u]
                    .iter()
                    .zip(&votes[v])
                    .filter(|(x, y)| **x != 0 && **y != 0)
                    .fold((0, 0), |(s, a), (x, y)| (s + 1, a + usize::from(x == y)));
                for (i, j) in [(u, v), (v, u)] {
                    shared[i * n + j] = s;
                    agreed[i * n + j] = a;
                }
            }
        }
        Self { n, shared, agreed }
    }

    fn shared(&self, u: usize, v: usize) -> usize {
        self.shared[u * self.n + v]
    }

    fn identical(&self, u: usize, v: usize) -> bool {
        self.agreed[u * self.n + v] == self.shared[u * self.n + v]
    }
}

fn root(parent: &mut [usize], x: usize) -> usize {
    let mut r = x;
    while parent[r] != r {
        r = parent[r];
    }
    let mut y = x;
    while parent[y] != r {
        let next = parent[y];
        parent[y] = r;
        y = next;
    }
    r
}

/// The judge of every arbiter: the lowest index of its clone group (itself when alone).
fn clone_groups(votes: &[Vec<i8>], pairs: &Pairs, policy: &PriorCheckPolicyV2) -> Vec<usize> {
    let n = votes.len();
    let items = votes.first().map_or(0, Vec::len);
    let mut parent: Vec<usize> = (0..n).collect();
    for u in 0..n {
        for v in (u + 1)..n {
            if pairs.shared(u, v) >= policy.clone_min_link && pairs.identical(u, v) {
                let (a, b) = (root(&mut parent, u), root(&mut parent, v));
                if a != b {
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
    }
    let component: Vec<usize> = (0..n).map(|u| root(&mut parent, u)).collect();
    // One pass against each component as linked: a member stays if it never disagrees with
    // another member and shares enough motions with them; the rest become judges alone.
    let keeps: Vec<bool> = (0..n)
        .map(|u| {
            let mates: Vec<usize> = (0..n)
                .filter(|&v| v != u && component[v] == component[u])
                .collect();
            if mates.is_empty() || mates.iter().any(|&v| !pairs.identical(u, v)) {
                return false;
            }
            let shared = (0..items)
                .filter(|&m| votes[u][m] != 0 && mates.iter().any(|&v| votes[v][m] != 0))
                .count();
            shared >= policy.clone_min_shared
        })
        .collect();
    let mut judge: Vec<usize> = (0..n).collect();
    for u in 0..n {
        if keeps[u] {
            judge[u] = (0..n)
                .find(|&v| keeps[v] && component[v] == component[u])
                .unwrap_or(u);
        }
    }
    // A group pruned to one member is that member alone.
    for u in 0..n {
        if judge[u] != u && !(0..n).any(|v| v != u && judge[v] == judge[u]) {
            judge[u] = u;
        }
    }
    judge
}

/// A judge: its members, its votes per motion and the camp its declared members share.
struct Judge {
    id: usize,
    members: Vec<usize>,
    votes: Vec<i8>,
    /// `None` when no member declares, or members declare both camps.
    camp: Option<Camp>,
}

fn judges(votes: &[Vec<i8>], camps: &[Option<Camp>], judge_of: &[usize]) -> Vec<Judge> {
    let items = votes.first().map_or(0, Vec::len);
    let mut out: Vec<Judge> = Vec::new();
    for (u, &j) in judge_of.iter().enumerate() {
        if j != u {
            continue;
        }
        let members: Vec<usize> = (0..judge_of.len()).filter(|&v| judge_of[v] == j).collect();
        let jv: Vec<i8> = (0..items)
            .map(|m| {
                members
                    .iter()
                    .map(|&v| votes[v][m])
                    .find(|&x| x != 0)
                    .unwrap_or(0)
            })
            .collect();
        let a = members
            .iter()
            .filter(|&&v| camps[v] == Some(Camp::A))
            .count();
        let b = members
            .iter()
            .filter(|&&v| camps[v] == Some(Camp::B))
            .count();
        let camp = match (a, b) {
            (_, 0) if a > 0 => Some(Camp::A),
            (0, _) if b > 0 => Some(Camp::B),
            _ => None,
        };
        out.push(Judge {
            id: j,
            members,
            votes: jv,
            camp,
        });
    }
    out
}

/// Agreements and shared motions of one arbiter with one judge.
#[derive(Debug, Clone, Copy)]
struct Tally {
    agreed: f64,
    shared: f64,
}

/// DerSimonian-Laird random-effects means of two groups of agreement rates with a
/// between-judge variance pooled over both: `(own mean, other mean, se of the difference)`.
fn random_effects(own: &[Tally], other: &[Tally]) -> (f64, f64, f64) {
    // A rate shrunk half a motion towards 1/2 keeps the binomial variance above zero.
    let prep = |g: &[Tally]| -> Vec<(f64, f64)> {
        g.iter()
            .map(|t| {
                let y = (t.agreed + 0.5) / (t.shared + 1.0);
                (y, y * (1.0 - y) / t.shared)
            })
            .collect()
    };
    let (o, t) = (prep(own), prep(other));
    let fixed = |g: &[(f64, f64)]| -> (f64, f64, f64) {
        let sw: f64 = g.iter().map(|x| 1.0 / x.1).sum();
        let sw2: f64 = g.iter().map(|x| 1.0 / (x.1 * x.1)).sum();
        let mean = g.iter().map(|x| x.0 / x.1).sum::<f64>() / sw;
        let q: f64 = g.iter().map(|x| (x.0 - mean).powi(2) / x.1).sum();
        (sw, sw2, q)
    };
    let (swo, sw2o, qo) = fixed(&o);
    let (swt, sw2t, qt) = fixed(&t);
    let df = (o.len() + t.len()) as f64 - 2.0;
    let c = (swo - sw2o / swo) + (swt - sw2t / swt);
    let tau2 = if df > 0.0 && c > 0.0 {
        ((qo + qt - df) / c).max(0.0)
    } else {
        0.0
    };
    let pooled = |g: &[(f64, f64)]| -> (f64, f64) {
        let sw: f64 = g.iter().map(|x| 1.0 / (x.1 + tau2)).sum();
        let mean = g.iter().map(|x| x.0 / (x.1 + tau2)).sum::<f64>() / sw;
        (mean, 1.0 / sw)
    };
    let (mo, vo) = pooled(&o);
    let (mt, vt) = pooled(&t);
    (mo, mt, (vo + vt).sqrt())
}

/// One arbiter's comparison in one pass.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stance {
    z: f64,
    own_agreement: f64,
    other_agreement: f64,
    own_judges: usize,
    other_judges: usize,
    shared: usize,
    consistent: usize,
}

struct Run<'a> {
    votes: &'a [Vec<i8>],
    camps: &'a [Option<Camp>],
    judge_of: Vec<usize>,
    judges: Vec<Judge>,
    policy: &'a PriorCheckPolicyV2,
}

impl Run<'_> {
    /// `u` against the declared judges other than its own and the set-aside ones.
    fn stance(&self, u: usize, set_aside: &[bool]) -> Option<Stance> {
        let camp = self.camps[u]?;
        let (mut own, mut other) = (Vec::new(), Vec::new());
        let (mut shared, mut consistent) = (0usize, 0usize);
        for (ji, j) in self.judges.iter().enumerate() {
            if j.id == self.judge_of[u] || set_aside[ji] {
                continue;
            }
            let Some(c) = j.camp else { continue };
            let (mut agreed, mut n) = (0usize, 0usize);
            for (mine, theirs) in self.votes[u].iter().zip(&j.votes) {
                if *mine != 0 && *theirs != 0 {
                    n += 1;
                    agreed += usize::from(mine == theirs);
                }
            }
            if n == 0 {
                continue;
            }
            let tally = Tally {
                agreed: agreed as f64,
                shared: n as f64,
            };
            shared += n;
            if c == camp {
                consistent += agreed;
                own.push(tally);
            } else {
                consistent += n - agreed;
                other.push(tally);
            }
        }
        let enough = |g: &[Tally]| {
            g.len() >= self.policy.min_judges_per_camp
                && g.iter().map(|t| t.shared).sum::<f64>() >= self.policy.min_shared_rulings as f64
        };
        if !enough(&own) || !enough(&other) {
            return None;
        }
        let (mo, mt, se) = random_effects(&own, &other);
        Some(Stance {
            z: (mt - mo) / se,
            own_agreement: mo,
            other_agreement: mt,
            own_judges: own.len(),
            other_judges: other.len(),
            shared,
            consistent,
        })
    }

    fn pass(&self, set_aside: &[bool]) -> Vec<Option<Stance>> {
        (0..self.votes.len())
            .map(|u| self.stance(u, set_aside))
            .collect()
    }

    /// Mean `z` of a judge's members that have one.
    fn judge_z(&self, j: &Judge, pass: &[Option<Stance>]) -> Option<f64> {
        let zs: Vec<f64> = j
            .members
            .iter()
            .filter_map(|&v| pass[v].map(|s| s.z))
            .collect();
        (!zs.is_empty()).then(|| zs.iter().sum::<f64>() / zs.len() as f64)
    }

    /// Declared judges that lean to the other camp in `pass`.
    fn suspects(&self, pass: &[Option<Stance>]) -> Vec<bool> {
        self.judges
            .iter()
            .map(|j| j.camp.is_some() && self.judge_z(j, pass).is_some_and(|z| z > 0.0))
            .collect()
    }

    /// The camp effect: the median consistency (`-z`) of the declared judges, scaled by its
    /// standard error under no effect, `sqrt(pi / 2) / sqrt(k)`; and whether the median
    /// scored judge of each camp sides with its camp. Both must: an accurate camp
    /// agrees with itself more than a less accurate one does, which is no stance, and then
    /// the less accurate camp's median judge leans to the other camp.
    fn camp_effect(&self, pass: &[Option<Stance>]) -> (f64, bool) {
        let consistency = |camp: Option<Camp>| -> Vec<f64> {
            self.judges
                .iter()
                .filter(|j| j.camp.is_some() && (camp.is_none() || j.camp == camp))
                .filter_map(|j| self.judge_z(j, pass).map(|z| -z))
                .collect()
        };
        let all = consistency(None);
        let k = all.len() as f64;
        let scaled =
            median(all).map_or(0.0, |m| m * k.sqrt() / (0.5 * std::f64::consts::PI).sqrt());
        // A camp too small for its judges to be scored cannot object.
        let both = [Camp::A, Camp::B]
            .iter()
            .all(|&c| median(consistency(Some(c))).is_none_or(|m| m > 0.0));
        (scaled, both)
    }
}

/// Benjamini-Hochberg: which of `p` (arbiter, p-value) are rejected at `q`.
fn benjamini_hochberg(p: &[(usize, f64)], q: f64, n: usize) -> Vec<bool> {
    let mut order: Vec<(usize, f64)> = p.to_vec();
    order.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let m = order.len() as f64;
    let cut = order
        .iter()
        .enumerate()
        .rev()
        .find(|(i, (_, pv))| *pv <= q * (*i as f64 + 1.0) / m)
        .map_or(0, |(i, _)| i + 1);
    let mut rejected = vec![false; n];
    for &(u, _) in &order[..cut] {
        rejected[u] = true;
    }
    rejected
}

/// Run the version-2 check for every arbiter (the module documentation gives the rule).
///
/// Same inputs and output type as `check_priors`; `fit` only fills the informational
/// bridging fields (`factor`, the camps' leave-one-out mean factors, `screen`), which the
/// decision does not use. `contested` counts the rulings shared with the compared judges
/// and `agreements` those consistent with the declared camp (agreeing with an own-camp
/// judge or differing from an other-camp one); `p_value` and `confirmed` are the stance
/// test's; `flagged` is `confirmed` or `v2.clone_minority`.
pub fn check_priors_v2(
    ratings: &[Vec<Option<f64>>],
    camps: &[Option<Camp>],
    fit: &BridgingFit,
    policy: &PriorCheckPolicyV2,
) -> Result<Vec<PriorCheck>> {
    crate::prior_consistency::check_raters(ratings, camps, fit)?;
    let items = ratings.first().map_or(0, Vec::len);
    if let Some(row) = ratings.iter().find(|r| r.len() != items) {
        return Err(CalibrationError::LengthMismatch {
            left: "ratings of the first rater",
            left_len: items,
            right: "ratings of another rater",
            right_len: row.len(),
        });
    }
    policy.validate()?;
    let votes: Vec<Vec<i8>> = ratings
        .iter()
        .map(|row| row.iter().map(|&r| vote(r)).collect())
        .collect();
    let pairs = Pairs::count(&votes);
    let judge_of = clone_groups(&votes, &pairs, policy);
    let judges = judges(&votes, camps, &judge_of);
    let run = Run {
        votes: &votes,
        camps,
        judge_of,
        judges,
        policy,
    };
    let n = votes.len();
    let first = run.pass(&vec![false; run.judges.len()]);
    let (camp_effect, both_camps) = run.camp_effect(&first);
    let gate_open = both_camps && normal_sf(camp_effect) < policy.gate_significance;
    let (mut last, mut passes) = (first, 1);
    while gate_open && passes < policy.max_passes {
        let next = run.pass(&run.suspects(&last));
        passes += 1;
        if next == last {
            break;
        }
        last = next;
    }
    let p_values: Vec<(usize, f64)> = if gate_open {
        (0..n)
            .filter_map(|u| last[u].map(|s| (u, normal_sf(s.z))))
            .collect()
    } else {
        Vec::new()
    };
    let confirmed = benjamini_hochberg(&p_values, policy.false_discovery_rate, n);
    let mean_factor = |camp: Camp, skip: usize| -> Option<f64> {
        let xs: Vec<f64> = (0..n)
            .filter(|&u| u != skip && camps[u] == Some(camp))
            .map(|u| fit.rater_factors[u])
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    };
    let out = (0..n)
        .map(|u| {
            let declared = camps[u];
            let factor = fit.rater_factors[u];
            let (own_f, other_f) = match declared {
                Some(c) => (mean_factor(c, u), mean_factor(other(c), u)),
                None => (None, None),
            };
            let screen = match (own_f, other_f) {
                (Some(o), Some(t)) => (factor - t).abs() < (factor - o).abs(),
                _ => false,
            };
            let group: Vec<usize> = (0..n)
                .filter(|&v| v != u && run.judge_of[v] == run.judge_of[u])
                .collect();
            let clone_minority = declared.is_some_and(|c| {
                let same = group.iter().filter(|&&v| camps[v] == Some(c)).count() + 1;
                let other = group
                    .iter()
                    .filter(|&&v| camps[v] == Some(other(c)))
                    .count();
                other > same
            });
            let stance = last[u];
            let p_value = p_values
                .iter()
                .find(|(v, _)| *v == u)
                .map_or(1.0, |(_, p)| *p);
            PriorCheck {
                arbiter: u,
                declared,
                factor,
                own_camp_factor: own_f,
                other_camp_factor: other_f,
                screen,
                contested: stance.map_or(0, |s| s.shared),
                agreements: stance.map_or(0, |s| s.consistent),
                p_value,
                confirmed: confirmed[u],
                flagged: confirmed[u] || clone_minority,
                v2: Some(PriorCheckV2 {
                    clones: group,
                    clone_minority,
                    own_judges: stance.map_or(0, |s| s.own_judges),
                    other_judges: stance.map_or(0, |s| s.other_judges),
                    own_agreement: stance.map(|s| s.own_agreement),
                    other_agreement: stance.map(|s| s.other_agreement),
                    z: stance.map(|s| s.z),
                    camp_effect,
                    gate_open,
                    passes,
                }),
            }
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prior_consistency::{PriorCheckPolicy, check_priors};
    use crate::seeded_rng::SplitMix64;

    /// A simulated arbiter: declared camp, the camp it leans to on contested motions
    /// (`lean` +1 A, -1 B, 0 none), how hard, its lineage, and its faults.
    #[derive(Clone, Copy)]
    struct Member {
        camp: Option<Camp>,
        lean: f64,
        partisanship: f64,
        family: usize,
        /// Always rules against the truth (a colluder).
        colluder: bool,
        /// Copies this member's rulings (a sybil).
        copy_of: Option<usize>,
    }

    fn honest(camp: Camp, partisanship: f64, family: usize) -> Member {
        let lean = if camp == Camp::A { 1.0 } else { -1.0 };
        Member {
            camp: Some(camp),
            lean,
            partisanship,
            family,
            colluder: false,
            copy_of: None,
        }
    }

    fn impostor(declared: Camp, partisanship: f64, family: usize) -> Member {
        Member {
            lean: -honest(declared, 0.0, 0).lean,
            ..honest(declared, partisanship, family)
        }
    }

    struct World {
        motions: usize,
        seats: usize,
        contested_share: f64,
        /// Within-family error correlation, per family.
        families: Vec<f64>,
        seed: u64,
    }

    fn normal(rng: &mut SplitMix64) -> f64 {
        let u1 = 1.0 - rng.next_f64();
        let u2 = rng.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Ratings of the seated members (1 yes, 0 no), accuracy 0.75 for everyone.
    fn simulate(members: &[Member], w: &World) -> Vec<Vec<Option<f64>>> {
        let mut rng = SplitMix64::new(w.seed);
        let skill = 0.674_489_75; // Phi^-1(0.75)
        let n = members.len();
        let mut columns: Vec<Vec<Option<f64>>> = Vec::with_capacity(w.motions);
        for _ in 0..w.motions {
            let truth = if rng.next_f64() < 0.5 { 1.0 } else { -1.0 };
            let lean_a = if rng.next_f64() < w.contested_share {
                if rng.next_f64() < 0.5 { 1.0 } else { -1.0 }
            } else {
                0.0
            };
            let fam: Vec<f64> = w.families.iter().map(|_| normal(&mut rng)).collect();
            let mut yes = vec![false; n];
            for (i, a) in members.iter().enumerate() {
                let rho = w.families[a.family];
                let z = skill * truth
                    + a.partisanship * lean_a * a.lean
                    + rho.sqrt() * fam[a.family]
                    + (1.0 - rho).sqrt() * normal(&mut rng);
                yes[i] = if a.colluder { truth < 0.0 } else { z > 0.0 };
            }
            for (i, a) in members.iter().enumerate() {
                if let Some(o) = a.copy_of {
                    yes[i] = yes[o];
                }
            }
            let mut order: Vec<usize> = (0..n).collect();
            for k in 0..w.seats.min(n) {
                let j = k + rng.below((n - k) as u64) as usize;
                order.swap(k, j);
            }
            let mut column = vec![None; n];
            for &i in &order[..w.seats.min(n)] {
                column[i] = Some(if yes[i] { 1.0 } else { 0.0 });
            }
            columns.push(column);
        }
        (0..n)
            .map(|i| columns.iter().map(|c| c[i]).collect())
            .collect()
    }

    fn flat_fit(n: usize) -> BridgingFit {
        BridgingFit {
            loss: 0.0,
            mu: 0.0,
            rater_intercepts: vec![0.0; n],
            rater_factors: vec![0.0; n],
            item_intercepts: Vec::new(),
            item_factors: Vec::new(),
            sweeps: 0,
            converged: true,
            gradient_norm: 0.0,
        }
    }

    fn run(members: &[Member], w: &World) -> Vec<PriorCheck> {
        let ratings = simulate(members, w);
        let camps: Vec<Option<Camp>> = members.iter().map(|m| m.camp).collect();
        check_priors_v2(
            &ratings,
            &camps,
            &flat_fit(members.len()),
            &PriorCheckPolicyV2::default(),
        )
        .expect("the check runs")
    }

    fn partisan_world(seed: u64) -> World {
        World {
            motions: 400,
            seats: 7,
            contested_share: 0.5,
            families: vec![0.2, 0.2],
            seed,
        }
    }

    #[test]
    fn a_false_declaration_is_flagged() {
        let mut members: Vec<Member> = (0..6).map(|_| honest(Camp::A, 1.0, 0)).collect();
        members.extend((0..6).map(|_| honest(Camp::B, 1.0, 1)));
        members.push(impostor(Camp::A, 1.0, 1));
        members.push(impostor(Camp::A, 1.0, 1));
        for seed in 1..=5 {
            let checks = run(&members, &partisan_world(seed));
            for c in &checks[12..] {
                let v2 = c.v2.as_ref().expect("v2 evidence");
                assert!(v2.gate_open, "{c:?}");
                assert!(c.flagged && c.confirmed, "seed {seed}: {c:?}");
            }
            for c in &checks[..12] {
                assert!(!c.flagged, "seed {seed}: {c:?}");
            }
        }
    }

    #[test]
    fn honest_arbiters_are_not_flagged() {
        let mut members: Vec<Member> = (0..7).map(|_| honest(Camp::A, 0.8, 0)).collect();
        members.extend((0..6).map(|_| honest(Camp::B, 0.8, 1)));
        for seed in 1..=5 {
            let checks = run(&members, &partisan_world(seed));
            assert!(checks.iter().all(|c| !c.flagged), "seed {seed}: {checks:?}");
            assert!(
                checks
                    .iter()
                    .all(|c| c.v2.as_ref().is_some_and(|v| v.gate_open))
            );
            // Honest arbiters lean to their own camp.
            assert!(
                checks
                    .iter()
                    .all(|c| c.v2.as_ref().and_then(|v| v.z).is_some_and(|z| z < 0.0))
            );
        }
    }

    /// Eight colluders of camp A always rule against the truth: they are one judge, and the
    /// honest members of A, who agree with the truth like camp B, are not flagged.
    #[test]
    fn a_one_stance_colluding_camp_does_not_get_honest_members_flagged() {
        let mut members: Vec<Member> = (0..5).map(|_| honest(Camp::A, 0.0, 0)).collect();
        members.extend((0..5).map(|_| honest(Camp::B, 0.0, 1)));
        members.extend((0..8).map(|_| Member {
            colluder: true,
            ..honest(Camp::A, 0.0, 0)
        }));
        let camps: Vec<Option<Camp>> = members.iter().map(|m| m.camp).collect();
        let mut old_flags = 0;
        for seed in 1..=5 {
            let checks = run(&members, &partisan_world(seed));
            for c in &checks[..10] {
                assert!(!c.flagged, "seed {seed}: {c:?}");
            }
            // The colluders are one clone group.
            assert_eq!(checks[10].v2.as_ref().map(|v| v.clones.len()), Some(7));
            let ratings = simulate(&members, &partisan_world(seed));
            let old = check_priors(
                &ratings,
                &camps,
                &flat_fit(members.len()),
                &PriorCheckPolicy::default(),
            )
            .expect("v1 runs");
            old_flags += old[..5].iter().filter(|c| c.confirmed).count();
        }
        // Version 1's confirmation fires on honest members of A on the same rulings.
        assert!(old_flags > 0);
        // Also when the honest arbiters are partisan, so the gate opens.
        let mut partisan = members.clone();
        for m in partisan.iter_mut().filter(|m| !m.colluder) {
            m.partisanship = 1.0;
        }
        for seed in 1..=5 {
            let checks = run(&partisan, &partisan_world(seed));
            for c in &checks[..10] {
                assert!(!c.flagged, "seed {seed}: {c:?}");
            }
        }
    }

    /// Nine judges of three lineages (errors 93% shared) sit on every panel; lineages
    /// straddle the camps and nobody is partisan, so nobody is flagged.
    #[test]
    fn a_family_straddling_stances_is_not_flagged() {
        let families = [0, 0, 0, 1, 2, 0, 0, 1, 1];
        let camps = [
            Camp::A,
            Camp::A,
            Camp::A,
            Camp::A,
            Camp::A,
            Camp::B,
            Camp::B,
            Camp::B,
            Camp::B,
        ];
        let members: Vec<Member> = families
            .iter()
            .zip(camps)
            .map(|(&f, c)| honest(c, 0.0, f))
            .collect();
        let mut old_flags = 0;
        for seed in 1..=5 {
            let w = World {
                motions: 400,
                seats: 9,
                contested_share: 0.0,
                families: vec![0.93, 0.93, 0.93],
                seed,
            };
            let checks = run(&members, &w);
            assert!(checks.iter().all(|c| !c.flagged), "seed {seed}: {checks:?}");
            // Version 1's confirmation fires on some of them on the same rulings.
            let ratings = simulate(&members, &w);
            let declared: Vec<Option<Camp>> = members.iter().map(|m| m.camp).collect();
            let old = check_priors(
                &ratings,
                &declared,
                &flat_fit(members.len()),
                &PriorCheckPolicy::default(),
            )
            .expect("v1 runs");
            old_flags += old.iter().filter(|c| c.confirmed).count();
        }
        assert!(old_flags > 0);
    }

    #[test]
    fn fewer_than_the_minimum_evidence_never_flags() {
        // Two judges per camp besides the arbiter: below `min_judges_per_camp`.
        let members = vec![
            honest(Camp::A, 1.5, 0),
            honest(Camp::A, 1.5, 0),
            honest(Camp::B, 1.5, 1),
            honest(Camp::B, 1.5, 1),
            impostor(Camp::A, 1.5, 1),
        ];
        let w = World {
            motions: 400,
            seats: 5,
            contested_share: 1.0,
            families: vec![0.0, 0.0],
            seed: 3,
        };
        let checks = run(&members, &w);
        assert!(checks.iter().all(|c| !c.flagged), "{checks:?}");
        assert!(
            checks
                .iter()
                .all(|c| c.v2.as_ref().is_some_and(|v| v.z.is_none()))
        );
        // The same rulings with the minimum lowered to two judges do flag the impostor, so
        // the minimum is what holds the flag back.
        let ratings = simulate(&members, &w);
        let camps: Vec<Option<Camp>> = members.iter().map(|m| m.camp).collect();
        let lowered = PriorCheckPolicyV2 {
            min_judges_per_camp: 1,
            ..PriorCheckPolicyV2::default()
        };
        let with_less = check_priors_v2(&ratings, &camps, &flat_fit(5), &lowered).expect("runs");
        assert!(
            with_less[4]
                .v2
                .as_ref()
                .and_then(|v| v.z)
                .is_some_and(|z| z > 2.0),
            "{with_less:?}"
        );
        // Enough judges but only 20 motions: fewer shared rulings than the minimum.
        let mut members: Vec<Member> = (0..6).map(|_| honest(Camp::A, 1.5, 0)).collect();
        members.extend((0..6).map(|_| honest(Camp::B, 1.5, 1)));
        members.push(impostor(Camp::A, 1.5, 1));
        let w = World {
            motions: 20,
            seats: 7,
            contested_share: 1.0,
            families: vec![0.0, 0.0],
            seed: 4,
        };
        let checks = run(&members, &w);
        assert!(checks.iter().all(|c| !c.flagged), "{checks:?}");
        // No ratings at all.
        let empty = check_priors_v2(
            &[Vec::new(), Vec::new()],
            &[Some(Camp::A), Some(Camp::B)],
            &flat_fit(2),
            &PriorCheckPolicyV2::default(),
        )
        .expect("an empty history is not an error");
        assert!(empty.iter().all(|c| !c.flagged && c.p_value == 1.0));
    }

    /// One operator's judge registered five times, three in camp A and two in camp B: the
    /// registrations in the smaller share of the group are flagged, the others are not.
    #[test]
    fn a_clone_registered_in_the_other_camp_is_flagged() {
        let mut members: Vec<Member> = (0..4).map(|_| honest(Camp::A, 0.0, 0)).collect();
        members.extend((0..4).map(|_| honest(Camp::B, 0.0, 1)));
        members.push(honest(Camp::A, 0.0, 2));
        members.extend((0..2).map(|_| Member {
            copy_of: Some(8),
            ..honest(Camp::A, 0.0, 2)
        }));
        members.extend((0..2).map(|_| Member {
            copy_of: Some(8),
            ..honest(Camp::B, 0.0, 2)
        }));
        let w = World {
            motions: 400,
            seats: 7,
            contested_share: 0.5,
            families: vec![0.2, 0.2, 0.5],
            seed: 8,
        };
        let checks = run(&members, &w);
        for c in &checks[..11] {
            assert!(!c.flagged, "{c:?}");
        }
        for c in &checks[11..] {
            let v2 = c.v2.as_ref().expect("v2 evidence");
            assert!(
                c.flagged && v2.clone_minority && v2.clones.len() == 4,
                "{c:?}"
            );
        }
    }

    #[test]
    fn the_result_is_deterministic() {
        let mut members: Vec<Member> = (0..6).map(|_| honest(Camp::A, 1.0, 0)).collect();
        members.extend((0..6).map(|_| honest(Camp::B, 1.0, 1)));
        members.push(impostor(Camp::B, 1.0, 0));
        let w = partisan_world(11);
        let a = run(&members, &w);
        let b = run(&members, &w);
        assert_eq!(a, b);
        let json = |c: &[PriorCheck]| serde_json::to_string(c).expect("serialises");
        assert_eq!(json(&a), json(&b));
    }

    #[test]
    fn bad_inputs_are_refused_with_their_reason() {
        let ragged = vec![vec![Some(1.0), Some(0.0)], vec![Some(1.0)]];
        let err = check_priors_v2(
            &ragged,
            &[Some(Camp::A), Some(Camp::B)],
            &flat_fit(2),
            &PriorCheckPolicyV2::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, CalibrationError::LengthMismatch { .. }),
            "{err}"
        );
        let bad = PriorCheckPolicyV2 {
            false_discovery_rate: 1.5,
            ..PriorCheckPolicyV2::default()
        };
        let err = check_priors_v2(&[], &[], &flat_fit(0), &bad).unwrap_err();
        assert!(
            matches!(
                err,
                CalibrationError::InvalidParameter {
                    what: "false_discovery_rate",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn the_normal_tail_and_benjamini_hochberg_are_right() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_sf(1.959_963_984_540_054) - 0.025).abs() < 1e-12);
        assert!((normal_sf(-1.644_853_626_951_472_2) - 0.95).abs() < 1e-12);
        // p = 0.01, 0.03, 0.04, 0.5 at q = 0.1 over 4: thresholds 0.025, 0.05, 0.075, 0.1.
        let p = [(0, 0.5), (1, 0.03), (2, 0.01), (3, 0.04)];
        assert_eq!(
            benjamini_hochberg(&p, 0.1, 4),
            vec![false, true, true, true]
        );
    }
}
