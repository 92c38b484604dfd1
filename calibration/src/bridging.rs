//! The bridging model over ruling history (Community Notes matrix factorisation; Wojcik et
//! al., arXiv:2210.15723, and calibration-digest C.1):
//!
//! `r̂_un = μ + i_u + i_n + f_u · f_n` with one-dimensional factors, `λ_i = 0.15` on
//! intercepts and `μ`, `λ_f = 0.03` on factors. An item earns a large intercept only when
//! raters on both sides of the factor rate it highly.
//!
//! Two loss forms, behind [`LossForm`]:
//! * `PublishedSum` (paper): `Σ (r - r̂)² + λ_i (Σ i_u² + Σ i_n² + μ²) + λ_f (Σ f_u² + Σ f_n²)`.
//! * `ProductionMean` (the scorer code): `mean (r - r̂)² + λ_i (mean i_u² + mean i_n² + μ²)`
//!   `+ λ_f (mean f_u² + mean f_n²)`, means over the raters and items that have ratings.
//!   It regularises much more strongly and treats one-sided items more strictly (digest C.4).
//!
//! The fit is alternating ridge regression (block coordinate descent): with the other block
//! fixed, each rater's `(i_u, f_u)` and each item's `(i_n, f_n)` solve a 2x2 linear system
//! exactly, so the loss never increases. The production code uses Adam; both minimise the
//! same loss, and ALS reaches a stationary point in far fewer passes. Initial factors come
//! from a seeded generator, so the fit is a pure function of its inputs.
//!
//! The fit stops on the gradient, not on the loss change: a small loss change only says the
//! fit is slow, and along the near-flat gauge directions it left factors up to 4e-4 from the
//! optimum. A gradient norm below `gradient_tolerance` bounds the distance to the stationary
//! point instead (docs/CALIBRATION.md section 5). A fit that hits `max_sweeps` first says so
//! with `converged: false` and its final gradient norm.

use serde::{Deserialize, Serialize};

use crate::error::{CalibrationError, ReferenceError, Result};
use crate::seeded_rng::SplitMix64;

/// Which loss is minimised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossForm {
    PublishedSum,
    ProductionMean,
}

/// Fit settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BridgingConfig {
    pub lambda_intercept: f64,
    pub lambda_factor: f64,
    pub loss: LossForm,
    /// Seed of the factor initialisation.
    pub seed: u64,
    /// Upper bound on sweeps; a fit that reaches it without meeting `gradient_tolerance`
    /// returns `converged: false`.
    pub max_sweeps: usize,
    /// Stop once the Euclidean norm of the gradient of the loss over all parameters (`μ`,
    /// every `i_u`, `f_u`, `i_n`, `f_n`) is at most this. The gradient is taken in sum units:
    /// for `ProductionMean` it is the mean-form gradient times the number of ratings, which
    /// is the gradient of the published form with the penalties scaled by N/U and N/M
    /// (docs/CALIBRATION.md section 5). In these units even the flattest (gauge) directions
    /// keep a curvature of about `2 λ_f` from the penalties, so one tolerance bounds the
    /// distance to the optimum alike for both forms and every problem size. The default 1e-8 leaves parameters within about
    /// 2e-8 of it (1e-6 is the requirement) and stays well above the rounding floor of the
    /// gradient sums, about 1e-11 at 500,000 ratings, which grows with the number of ratings.
    pub gradient_tolerance: f64,
}

impl Default for BridgingConfig {
    fn default() -> Self {
        Self {
            lambda_intercept: 0.15,
            lambda_factor: 0.03,
            loss: LossForm::PublishedSum,
            seed: 0x00C0_FFEE,
            max_sweeps: 2_000,
            gradient_tolerance: 1e-8,
        }
    }
}

/// One observed rating: rater `rater` gave item `item` the value `value` (helpful 1,
/// somewhat 0.5, not helpful 0 in Community Notes; here a ruling's approval).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    pub rater: usize,
    pub item: usize,
    pub value: f64,
}

/// Fitted parameters. Factors are signed so that at least half of the raters with a
/// non-zero factor have a negative one (the production convention).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BridgingFit {
    /// Final value of the configured loss.
    pub loss: f64,
    pub mu: f64,
    pub rater_intercepts: Vec<f64>,
    pub rater_factors: Vec<f64>,
    pub item_intercepts: Vec<f64>,
    pub item_factors: Vec<f64>,
    pub sweeps: usize,
    /// Whether the gradient norm reached `gradient_tolerance` within `max_sweeps`. A fit that
    /// is not converged is returned for inspection; its parameters are not an optimum.
    pub converged: bool,
    /// Gradient norm at the returned parameters, in the sum units of
    /// [`BridgingConfig::gradient_tolerance`].
    pub gradient_norm: f64,
}

/// Ratings grouped by one side (raters or items), compressed-row layout.
struct Adjacency {
    offsets: Vec<usize>,
    other: Vec<u32>,
    values: Vec<f64>,
}

impl Adjacency {
    fn build(n: usize, ratings: &[Rating], key: impl Fn(&Rating) -> (usize, usize)) -> Self {
        let mut offsets = vec![0usize; n + 1];
        for r in ratings {
            offsets[key(r).0 + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut cursor = offsets.clone();
        let mut other = vec![0u32; ratings.len()];
        let mut values = vec![0.0; ratings.len()];
        for r in ratings {
            let (k, o) = key(r);
            other[cursor[k]] = o as u32;
            values[cursor[k]] = r.value;
            cursor[k] += 1;
        }
        Self {
            offsets,
            other,
            values,
        }
    }

    fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.offsets[i], self.offsets[i + 1]);
        (&self.other[a..b], &self.values[a..b])
    }

    fn degree(&self, i: usize) -> usize {
        self.offsets[i + 1] - self.offsets[i]
    }
}

/// Solve one block: minimise `Σ (e_k - i - f g_k)² + li i² + lf f²` over `(i, f)`.
fn ridge2(rows: impl Iterator<Item = (f64, f64)>, li: f64, lf: f64) -> (f64, f64) {
    let (mut n, mut sg, mut sgg, mut se, mut seg) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (e, g) in rows {
        n += 1.0;
        sg += g;
        sgg += g * g;
        se += e;
        seg += e * g;
    }
    let (a, b, c) = (n + li, sg, sgg + lf);
    let det = a * c - b * b;
    if det.is_nan() || det <= 0.0 {
        return (0.0, 0.0);
    }
    ((c * se - b * seg) / det, (a * seg - b * se) / det)
}

/// The configured loss over the data and its gradient, which the stopping rule reads.
struct Objective {
    by_rater: Adjacency,
    loss: LossForm,
    li: f64,
    lf: f64,
    /// Number of ratings.
    n: f64,
    active_raters: f64,
    active_items: f64,
    /// Per-parameter penalty scales of the form in sum units (1 for `PublishedSum`).
    s_rater: f64,
    s_item: f64,
    s_mu: f64,
}

/// What one pass over the ratings gives at the current parameters.
struct Measure {
    loss: f64,
    /// `Σ (r − r̂)` over the ratings.
    residuals: f64,
    gradient: Gradient,
}

/// A gradient, laid out like the parameters.
#[derive(Debug, Clone, PartialEq)]
struct Gradient {
    mu: f64,
    iu: Vec<f64>,
    fu: Vec<f64>,
    inn: Vec<f64>,
    fnn: Vec<f64>,
}

impl Gradient {
    fn norm(&self) -> f64 {
        let ssq = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        (self.mu * self.mu + ssq(&self.iu) + ssq(&self.fu) + ssq(&self.inn) + ssq(&self.fnn)).sqrt()
    }
}

impl Objective {
    /// For ratings that [`validate`] accepted.
    fn new(n_raters: usize, n_items: usize, ratings: &[Rating], config: &BridgingConfig) -> Self {
        let by_rater = Adjacency::build(n_raters, ratings, |r| (r.rater, r.item));
        let mut rated = vec![false; n_items];
        ratings.iter().for_each(|r| rated[r.item] = true);
        let n = ratings.len() as f64;
        let active_raters = (0..n_raters).filter(|&u| by_rater.degree(u) > 0).count() as f64;
        let active_items = rated.iter().filter(|&&r| r).count() as f64;
        // Per-parameter penalty scales: the mean form times N is the sum form with these.
        let (s_rater, s_item, s_mu) = match config.loss {
            LossForm::PublishedSum => (1.0, 1.0, 1.0),
            LossForm::ProductionMean => (n / active_raters, n / active_items, n),
        };
        Self {
            by_rater,
            loss: config.loss,
            li: config.lambda_intercept,
            lf: config.lambda_factor,
            n,
            active_raters,
            active_items,
            s_rater,
            s_item,
            s_mu,
        }
    }

    /// The configured loss at the given parameters, and its gradient in sum units (the
    /// mean form's gradient times the number of ratings; see
    /// [`BridgingConfig::gradient_tolerance`]). One pass over the ratings, which also gives
    /// the next sweep its residual sum for the `μ` step.
    fn measure(&self, mu: f64, iu: &[f64], fu: &[f64], inn: &[f64], fnn: &[f64]) -> Measure {
        let (li, lf) = (self.li, self.lf);
        let mut g = Gradient {
            mu: 2.0 * li * self.s_mu * mu,
            iu: iu.iter().map(|x| 2.0 * li * self.s_rater * x).collect(),
            fu: fu.iter().map(|x| 2.0 * lf * self.s_rater * x).collect(),
            inn: inn.iter().map(|x| 2.0 * li * self.s_item * x).collect(),
            fnn: fnn.iter().map(|x| 2.0 * lf * self.s_item * x).collect(),
        };
        let (mut sse, mut residuals) = (0.0, 0.0);
        for u in 0..iu.len() {
            let (items, values) = self.by_rater.row(u);
            let (mut se, mut sef) = (0.0, 0.0);
            for (&m, &v) in items.iter().zip(values) {
                let m = m as usize;
                let e = v - (mu + iu[u] + inn[m] + fu[u] * fnn[m]);
                sse += e * e;
                se += e;
                sef += e * fnn[m];
                g.inn[m] -= 2.0 * e;
                g.fnn[m] -= 2.0 * e * fu[u];
            }
            residuals += se;
            g.iu[u] -= 2.0 * se;
            g.fu[u] -= 2.0 * sef;
        }
        g.mu -= 2.0 * residuals;
        let ssq = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        let loss = match self.loss {
            LossForm::PublishedSum => {
                sse + li * (ssq(iu) + ssq(inn) + mu * mu) + lf * (ssq(fu) + ssq(fnn))
            }
            LossForm::ProductionMean => {
                sse / self.n
                    + li * (ssq(iu) / self.active_raters + ssq(inn) / self.active_items + mu * mu)
                    + lf * (ssq(fu) / self.active_raters + ssq(fnn) / self.active_items)
            }
        };
        Measure {
            loss,
            residuals,
            gradient: g,
        }
    }
}

/// Refuse inputs the fit cannot use, with a message that says how to fix them.
fn validate(
    n_raters: usize,
    n_items: usize,
    ratings: &[Rating],
    config: &BridgingConfig,
) -> Result<()> {
    if ratings.is_empty() {
        return Err(CalibrationError::Empty { what: "ratings" });
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !positive(config.lambda_intercept) || !positive(config.lambda_factor) {
        return Err(CalibrationError::InvalidParameter {
            what: "lambda",
            reason: "both regularisation weights must be positive and finite".into(),
        });
    }
    if !(config.gradient_tolerance.is_finite() && config.gradient_tolerance >= 0.0) {
        return Err(CalibrationError::InvalidParameter {
            what: "gradient_tolerance",
            reason: format!(
                "{} is not a finite number >= 0: use a small positive value such as 1e-8",
                config.gradient_tolerance
            ),
        });
    }
    if n_raters > u32::MAX as usize || n_items > u32::MAX as usize {
        return Err(CalibrationError::InvalidParameter {
            what: "size",
            reason: "at most 2^32 raters and items".into(),
        });
    }
    for (k, r) in ratings.iter().enumerate() {
        if r.rater >= n_raters || r.item >= n_items {
            return Err(ReferenceError::RatingOutOfRange {
                index: k,
                rater: r.rater,
                item: r.item,
                raters: n_raters,
                items: n_items,
            }
            .into());
        }
        if !r.value.is_finite() {
            return Err(CalibrationError::NotFinite {
                what: format!("rating {k}"),
                value: r.value,
            });
        }
    }
    Ok(())
}

/// Fit the model to `ratings` over `n_raters` raters and `n_items` items.
pub fn fit(
    n_raters: usize,
    n_items: usize,
    ratings: &[Rating],
    config: &BridgingConfig,
) -> Result<BridgingFit> {
    validate(n_raters, n_items, ratings, config)?;
    let objective = Objective::new(n_raters, n_items, ratings, config);
    let by_rater = &objective.by_rater;
    let by_item = Adjacency::build(n_items, ratings, |r| (r.item, r.rater));
    let rater_active: Vec<usize> = (0..n_raters).filter(|&u| by_rater.degree(u) > 0).collect();
    let item_active: Vec<usize> = (0..n_items).filter(|&m| by_item.degree(m) > 0).collect();
    let (n, active_raters, active_items) =
        (objective.n, objective.active_raters, objective.active_items);
    let (s_rater, s_item, s_mu) = (objective.s_rater, objective.s_item, objective.s_mu);
    let (li, lf) = (config.lambda_intercept, config.lambda_factor);

    let mut rng = SplitMix64::new(config.seed);
    let mut fu: Vec<f64> = (0..n_raters)
        .map(|u| {
            if by_rater.degree(u) > 0 {
                rng.uniform(-0.5, 0.5)
            } else {
                0.0
            }
        })
        .collect();
    let mut fnn: Vec<f64> = (0..n_items)
        .map(|m| {
            if by_item.degree(m) > 0 {
                rng.uniform(-0.5, 0.5)
            } else {
                0.0
            }
        })
        .collect();
    let mut iu = vec![0.0; n_raters];
    let mut inn = vec![0.0; n_items];
    let mut mu = 0.0;

    let mut measure = objective.measure(mu, &iu, &fu, &inn, &fnn);
    let mut gradient_norm = measure.gradient.norm();
    let mut sweeps = 0;
    // A NaN norm stops the loop too, and fails the `converged` test below.
    while sweeps < config.max_sweeps && gradient_norm > config.gradient_tolerance {
        sweeps += 1;
        // Global mean: the residuals without μ are the measured ones plus n μ.
        mu = (measure.residuals + n * mu) / (n + li * s_mu);
        // Raters.
        for u in 0..n_raters {
            let (items, values) = by_rater.row(u);
            if items.is_empty() {
                continue;
            }
            let rows = items.iter().zip(values).map(|(&m, &v)| {
                let m = m as usize;
                (v - mu - inn[m], fnn[m])
            });
            (iu[u], fu[u]) = ridge2(rows, li * s_rater, lf * s_rater);
        }
        // Items.
        for m in 0..n_items {
            let (raters, values) = by_item.row(m);
            if raters.is_empty() {
                continue;
            }
            let rows = raters.iter().zip(values).map(|(&u, &v)| {
                let u = u as usize;
                (v - mu - iu[u], fu[u])
            });
            (inn[m], fnn[m]) = ridge2(rows, li * s_item, lf * s_item);
        }
        // Gauge steps. Several parameter moves leave every prediction unchanged and alter
        // only the penalty, which is small next to the data term; plain alternating updates
        // crawl along them. Each step below takes the exact penalty minimiser along one such
        // direction, so it never raises the loss and removes the slow modes.
        let ssq = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        // (1) Scale: f_u c, f_n / c.  c⁴ = s_n Σ f_n² / (s_u Σ f_u²).
        let (a, b) = (s_rater * ssq(&fu), s_item * ssq(&fnn));
        if a > 0.0 && b > 0.0 {
            let c = (b / a).sqrt().sqrt();
            fu.iter_mut().for_each(|x| *x *= c);
            fnn.iter_mut().for_each(|x| *x /= c);
        }
        // (2) μ + c with i_u - c on every active rater, then the same with items.
        let c = (s_rater * rater_active.iter().map(|&u| iu[u]).sum::<f64>() - s_mu * mu)
            / (s_rater * active_raters + s_mu);
        rater_active.iter().for_each(|&u| iu[u] -= c);
        mu += c;
        let c = (s_item * item_active.iter().map(|&m| inn[m]).sum::<f64>() - s_mu * mu)
            / (s_item * active_items + s_mu);
        item_active.iter().for_each(|&m| inn[m] -= c);
        mu += c;
        // (3) f_n + d on every active item, absorbed by i_u - f_u d; then f_u + d absorbed
        // by i_n - f_n d.
        let num = li * s_rater * rater_active.iter().map(|&u| fu[u] * iu[u]).sum::<f64>()
            - lf * s_item * item_active.iter().map(|&m| fnn[m]).sum::<f64>();
        let den = li * s_rater * ssq(&fu) + lf * s_item * active_items;
        if den > 0.0 {
            let d = num / den;
            item_active.iter().for_each(|&m| fnn[m] += d);
            rater_active.iter().for_each(|&u| iu[u] -= fu[u] * d);
        }
        let num = li * s_item * item_active.iter().map(|&m| fnn[m] * inn[m]).sum::<f64>()
            - lf * s_rater * rater_active.iter().map(|&u| fu[u]).sum::<f64>();
        let den = li * s_item * ssq(&fnn) + lf * s_rater * active_raters;
        if den > 0.0 {
            let d = num / den;
            rater_active.iter().for_each(|&u| fu[u] += d);
            item_active.iter().for_each(|&m| inn[m] -= fnn[m] * d);
        }
        measure = objective.measure(mu, &iu, &fu, &inn, &fnn);
        gradient_norm = measure.gradient.norm();
    }
    let converged = gradient_norm <= config.gradient_tolerance;

    // Sign convention: at least half of the raters with a non-zero factor are negative.
    let nonzero = fu.iter().filter(|f| **f != 0.0).count();
    let negative = fu.iter().filter(|f| **f < 0.0).count();
    if 2 * negative < nonzero {
        fu.iter_mut().for_each(|f| *f = -*f);
        fnn.iter_mut().for_each(|f| *f = -*f);
    }
    Ok(BridgingFit {
        loss: measure.loss,
        mu,
        rater_intercepts: iu,
        rater_factors: fu,
        item_intercepts: inn,
        item_factors: fnn,
        sweeps,
        converged,
        gradient_norm,
    })
}

/// Fit from a dense matrix `ratings[rater][item]` with `None` for unobserved cells.
pub fn fit_matrix(ratings: &[Vec<Option<f64>>], config: &BridgingConfig) -> Result<BridgingFit> {
    if ratings.is_empty() {
        return Err(CalibrationError::Empty { what: "ratings" });
    }
    let n_items = ratings[0].len();
    if let Some(row) = ratings.iter().find(|r| r.len() != n_items) {
        return Err(CalibrationError::LengthMismatch {
            left: "first rater's items",
            left_len: n_items,
            right: "another rater's items",
            right_len: row.len(),
        });
    }
    let flat: Vec<Rating> = ratings
        .iter()
        .enumerate()
        .flat_map(|(rater, row)| {
            row.iter()
                .enumerate()
                .filter_map(move |(item, v)| v.map(|value| Rating { rater, item, value }))
        })
        .collect();
    fit(ratings.len(), n_items, &flat, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two camps that disagree on partisan items and agree on a bridging one.
    fn camps() -> Vec<Vec<Option<f64>>> {
        let mut m = Vec::new();
        for u in 0..12 {
            let camp_a = u < 6;
            let mut row = Vec::new();
            for item in 0..8 {
                let v = match item {
                    0..=2 => f64::from(u8::from(camp_a)),
                    3..=5 => f64::from(u8::from(!camp_a)),
                    6 => 1.0, // bridging: both camps approve
                    _ => 0.0, // both reject
                };
                row.push(Some(v));
            }
            m.push(row);
        }
        m
    }

    /// Gradient of the configured loss at the fitted point; it must vanish there.
    fn gradient_norm(fit: &BridgingFit, data: &[Vec<Option<f64>>], cfg: &BridgingConfig) -> f64 {
        let (li, lf) = (cfg.lambda_intercept, cfg.lambda_factor);
        let n_obs = data.iter().flatten().filter(|v| v.is_some()).count() as f64;
        let (users, items) = (data.len() as f64, data[0].len() as f64);
        // Data-term weight and per-group penalty weights of each form.
        let (w, su, sn, smu) = match cfg.loss {
            LossForm::PublishedSum => (1.0, 1.0, 1.0, 1.0),
            LossForm::ProductionMean => (1.0 / n_obs, 1.0 / users, 1.0 / items, 1.0),
        };
        let mut g_mu = 2.0 * li * smu * fit.mu;
        let mut g_iu: Vec<f64> = fit
            .rater_intercepts
            .iter()
            .map(|x| 2.0 * li * su * x)
            .collect();
        let mut g_fu: Vec<f64> = fit
            .rater_factors
            .iter()
            .map(|x| 2.0 * lf * su * x)
            .collect();
        let mut g_in: Vec<f64> = fit
            .item_intercepts
            .iter()
            .map(|x| 2.0 * li * sn * x)
            .collect();
        let mut g_fn: Vec<f64> = fit.item_factors.iter().map(|x| 2.0 * lf * sn * x).collect();
        for (u, row) in data.iter().enumerate() {
            for (m, v) in row.iter().enumerate() {
                let Some(v) = v else { continue };
                let pred = fit.mu
                    + fit.rater_intercepts[u]
                    + fit.item_intercepts[m]
                    + fit.rater_factors[u] * fit.item_factors[m];
                let e = -2.0 * w * (v - pred);
                g_mu += e;
                g_iu[u] += e;
                g_in[m] += e;
                g_fu[u] += e * fit.item_factors[m];
                g_fn[m] += e * fit.rater_factors[u];
            }
        }
        let all = std::iter::once(g_mu)
            .chain(g_iu)
            .chain(g_fu)
            .chain(g_in)
            .chain(g_fn);
        all.map(|g| g * g).sum::<f64>().sqrt()
    }

    #[test]
    fn fit_is_stationary_and_separates_camps() {
        let data = camps();
        let cfg = BridgingConfig {
            gradient_tolerance: 1e-12,
            ..BridgingConfig::default()
        };
        let fit = fit_matrix(&data, &cfg).unwrap();
        assert!(fit.converged);
        eprintln!(
            "sweeps {} gradient {:e}",
            fit.sweeps,
            gradient_norm(&fit, &data, &cfg)
        );
        assert!(gradient_norm(&fit, &data, &cfg) < 1e-6);
        // Camps get opposite factor signs.
        let a: Vec<f64> = fit.rater_factors[..6].to_vec();
        let b: Vec<f64> = fit.rater_factors[6..].to_vec();
        assert!(a.iter().all(|f| f.signum() == a[0].signum()));
        assert!(b.iter().all(|f| f.signum() == -a[0].signum()));
        // The bridging item has the top intercept and a small factor.
        let top = (0..8)
            .max_by(|&x, &y| fit.item_intercepts[x].total_cmp(&fit.item_intercepts[y]))
            .unwrap();
        assert_eq!(top, 6);
        assert!(fit.item_factors[6].abs() < 0.1);
        // Sign convention.
        let neg = fit.rater_factors.iter().filter(|f| **f < 0.0).count();
        assert!(2 * neg >= fit.rater_factors.iter().filter(|f| **f != 0.0).count());
    }

    #[test]
    fn deterministic_for_a_seed() {
        let data = camps();
        let cfg = BridgingConfig {
            loss: LossForm::ProductionMean,
            ..BridgingConfig::default()
        };
        assert_eq!(
            fit_matrix(&data, &cfg).unwrap(),
            fit_matrix(&data, &cfg).unwrap()
        );
    }

    #[test]
    fn production_form_is_stationary_for_its_own_loss() {
        let data = camps();
        let cfg = BridgingConfig {
            loss: LossForm::ProductionMean,
            gradient_tolerance: 1e-12,
            ..BridgingConfig::default()
        };
        let fit = fit_matrix(&data, &cfg).unwrap();
        assert!(fit.converged);
        assert!(gradient_norm(&fit, &data, &cfg) < 1e-6);
        // The published-form gradient does not vanish there: the forms differ.
        let published = BridgingConfig::default();
        assert!(gradient_norm(&fit, &data, &published) > 1e-3);
    }

    #[test]
    fn sparse_random_history_reaches_a_stationary_point_in_both_forms() {
        let mut rng = SplitMix64::new(99);
        let data: Vec<Vec<Option<f64>>> = (0..60)
            .map(|u| {
                (0..80)
                    .map(|m| {
                        (rng.next_f64() < 0.3).then(|| {
                            let lean = if (u + m) % 2 == 0 { 0.8 } else { 0.2 };
                            if rng.next_f64() < lean { 1.0 } else { 0.0 }
                        })
                    })
                    .collect()
            })
            .collect();
        for loss in [LossForm::PublishedSum, LossForm::ProductionMean] {
            let cfg = BridgingConfig {
                loss,
                gradient_tolerance: 1e-12,
                ..BridgingConfig::default()
            };
            let fit = fit_matrix(&data, &cfg).unwrap();
            assert!(fit.converged, "{loss:?}");
            let g = gradient_norm(&fit, &data, &cfg);
            assert!(
                g < 1e-6,
                "{loss:?}: gradient {g:e} after {} sweeps",
                fit.sweeps
            );
        }
    }

    /// The stopping rule reads [`Objective::measure`], so its gradient must be the loss's.
    /// Every parameter enters the loss quadratically, so a central difference is exact up to
    /// rounding. Rater 8 and item 11 have no rating, to cover the mean form's active counts.
    #[test]
    fn objective_gradient_matches_central_differences() {
        let (raters, items) = (9, 12);
        let mut rng = SplitMix64::new(5);
        let mut ratings = Vec::new();
        for rater in 0..raters - 1 {
            for item in 0..items - 1 {
                if rng.next_f64() < 0.4 {
                    let value = [0.0, 0.5, 1.0][(rng.next_u64() % 3) as usize];
                    ratings.push(Rating { rater, item, value });
                }
            }
        }
        for loss in [LossForm::PublishedSum, LossForm::ProductionMean] {
            let cfg = BridgingConfig {
                loss,
                ..BridgingConfig::default()
            };
            validate(raters, items, &ratings, &cfg).unwrap();
            let objective = Objective::new(raters, items, &ratings, &cfg);
            // Sum units: the mean form's loss times the number of ratings.
            let scale = match loss {
                LossForm::PublishedSum => 1.0,
                LossForm::ProductionMean => ratings.len() as f64,
            };
            // Flat layout: μ, i_u, f_u, i_n, f_n.
            let mut p: Vec<f64> = (0..1 + 2 * raters + 2 * items)
                .map(|_| rng.uniform(-0.8, 0.8))
                .collect();
            let eval = |p: &[f64]| {
                let (iu, rest) = p[1..].split_at(raters);
                let (fu, rest) = rest.split_at(raters);
                let (inn, fnn) = rest.split_at(items);
                objective.measure(p[0], iu, fu, inn, fnn)
            };
            let g = eval(&p).gradient;
            let flat: Vec<f64> = std::iter::once(g.mu)
                .chain(g.iu.iter().copied())
                .chain(g.fu.iter().copied())
                .chain(g.inn.iter().copied())
                .chain(g.fnn.iter().copied())
                .collect();
            assert!(g.norm() > 1.0, "a random point is far from stationary");
            let h = 1e-4;
            for k in 0..p.len() {
                let x = p[k];
                p[k] = x + h;
                let up = eval(&p).loss;
                p[k] = x - h;
                let down = eval(&p).loss;
                p[k] = x;
                let fd = scale * (up - down) / (2.0 * h);
                assert!(
                    (fd - flat[k]).abs() <= 1e-7 * (1.0 + flat[k].abs()),
                    "{loss:?} parameter {k}: analytic {} vs central difference {fd}",
                    flat[k]
                );
            }
        }
    }

    #[test]
    fn a_bad_gradient_tolerance_is_refused() {
        let data = camps();
        for tol in [-1e-8, f64::NAN, f64::INFINITY] {
            let cfg = BridgingConfig {
                gradient_tolerance: tol,
                ..BridgingConfig::default()
            };
            assert!(
                matches!(
                    fit_matrix(&data, &cfg),
                    Err(CalibrationError::InvalidParameter {
                        what: "gradient_tolerance",
                        ..
                    })
                ),
                "{tol}"
            );
        }
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(fit(1, 1, &[], &BridgingConfig::default()).is_err());
        let r = [Rating {
            rater: 3,
            item: 0,
            value: 1.0,
        }];
        assert!(matches!(
            fit(1, 1, &r, &BridgingConfig::default()),
            Err(CalibrationError::Reference(_))
        ));
    }
}
