//! The bridging fit stops on the gradient (docs/CALIBRATION.md section 5). These tests check
//! that claim from outside the crate: the loss and its gradient are written again here from
//! the formulas (calibration-digest C.1), checked against central differences, and then used
//! to judge the fits the crate returns.

use calibration::bridging::{BridgingConfig, BridgingFit, LossForm, fit_matrix};
use calibration::response::BridgingResponse;
use calibration::seeded_rng::SplitMix64;

const FORMS: [LossForm; 2] = [LossForm::PublishedSum, LossForm::ProductionMean];

/// A sparse two-camp rating matrix: `density` of the cells are rated 0, 0.5 or 1 from a
/// latent intercept-plus-factor model with noise. The last rater and the last item get no
/// rating, so the mean form's "raters and items that have ratings" is exercised.
fn problem(seed: u64, raters: usize, items: usize, density: f64) -> Vec<Vec<Option<f64>>> {
    let mut rng = SplitMix64::new(seed);
    let fu: Vec<f64> = (0..raters)
        .map(|u| if u % 2 == 0 { -1.0 } else { 1.0 } * rng.uniform(0.2, 1.0))
        .collect();
    let fnn: Vec<f64> = (0..items).map(|_| rng.uniform(-0.6, 0.6)).collect();
    let inn: Vec<f64> = (0..items).map(|_| rng.uniform(-0.3, 0.4)).collect();
    (0..raters)
        .map(|u| {
            (0..items)
                .map(|m| {
                    let rated = u + 1 < raters && m + 1 < items && rng.next_f64() < density;
                    let signal = 0.4 + inn[m] + fu[u] * fnn[m] + rng.uniform(-0.2, 0.2);
                    rated.then_some(if signal > 0.66 {
                        1.0
                    } else if signal > 0.33 {
                        0.5
                    } else {
                        0.0
                    })
                })
                .collect()
        })
        .collect()
}

/// The generated problems: (seed, raters, items, density), square, tall, wide and dense.
const PROBLEMS: [(u64, usize, usize, f64); 4] = [
    (11, 30, 40, 0.3),
    (12, 60, 80, 0.12),
    (13, 120, 50, 0.1),
    (14, 40, 200, 0.08),
];

/// Parameters in one flat vector: μ, then i_u, f_u per rater, then i_n, f_n per item.
fn flatten(fit: &BridgingFit) -> Vec<f64> {
    std::iter::once(fit.mu)
        .chain(fit.rater_intercepts.iter().copied())
        .chain(fit.rater_factors.iter().copied())
        .chain(fit.item_intercepts.iter().copied())
        .chain(fit.item_factors.iter().copied())
        .collect()
}

/// The loss in sum units and its gradient, from the formulas. The published form is
/// `Σ (r − r̂)² + λ_i (Σ i_u² + Σ i_n² + μ²) + λ_f (Σ f_u² + Σ f_n²)`; the production form
/// takes means (of the squared errors, and of each group's squared parameters over the
/// raters or items with ratings) and is multiplied here by the number of ratings, the unit
/// `gradient_tolerance` is stated in.
struct Model<'a> {
    data: &'a [Vec<Option<f64>>],
    cfg: &'a BridgingConfig,
}

impl Model<'_> {
    fn sizes(&self) -> (usize, usize) {
        (self.data.len(), self.data[0].len())
    }

    /// (data-term weight, rater penalty weight, item penalty weight), in sum units.
    fn weights(&self) -> (f64, f64, f64) {
        let (raters, items) = self.sizes();
        let n = self.data.iter().flatten().flatten().count() as f64;
        let active_raters = self.data.iter().filter(|r| r.iter().any(Option::is_some));
        let active_items = (0..items).filter(|&m| self.data.iter().any(|r| r[m].is_some()));
        let (au, an) = (active_raters.count() as f64, active_items.count() as f64);
        assert!(au < raters as f64 && an < items as f64, "the unrated ones");
        match self.cfg.loss {
            LossForm::PublishedSum => (1.0, 1.0, 1.0),
            // n · (mean sse + λ mean(x²)) = sse + λ (n / count) Σ x².
            LossForm::ProductionMean => (n, n / au, n / an),
        }
    }

    fn split<'p>(&self, p: &'p [f64]) -> (f64, &'p [f64], &'p [f64], &'p [f64], &'p [f64]) {
        let (raters, items) = self.sizes();
        let (iu, rest) = p[1..].split_at(raters);
        let (fu, rest) = rest.split_at(raters);
        let (inn, fnn) = rest.split_at(items);
        (p[0], iu, fu, inn, fnn)
    }

    fn loss(&self, p: &[f64]) -> f64 {
        let (w_mu, w_u, w_n) = self.weights();
        let (li, lf) = (self.cfg.lambda_intercept, self.cfg.lambda_factor);
        let (mu, iu, fu, inn, fnn) = self.split(p);
        let mut sse = 0.0;
        for (u, row) in self.data.iter().enumerate() {
            for (m, r) in row.iter().enumerate() {
                if let Some(r) = r {
                    sse += (r - mu - iu[u] - inn[m] - fu[u] * fnn[m]).powi(2);
                }
            }
        }
        let ssq = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        sse + li * (w_u * ssq(iu) + w_n * ssq(inn) + w_mu * mu * mu)
            + lf * (w_u * ssq(fu) + w_n * ssq(fnn))
    }

    fn gradient(&self, p: &[f64]) -> Vec<f64> {
        let (raters, items) = self.sizes();
        let (w_mu, w_u, w_n) = self.weights();
        let (li, lf) = (self.cfg.lambda_intercept, self.cfg.lambda_factor);
        let (mu, iu, fu, inn, fnn) = self.split(p);
        let (o_iu, o_fu, o_in, o_fn) = (1, 1 + raters, 1 + 2 * raters, 1 + 2 * raters + items);
        let mut g = vec![0.0; p.len()];
        g[0] = 2.0 * li * w_mu * mu;
        for u in 0..raters {
            g[o_iu + u] = 2.0 * li * w_u * iu[u];
            g[o_fu + u] = 2.0 * lf * w_u * fu[u];
        }
        for m in 0..items {
            g[o_in + m] = 2.0 * li * w_n * inn[m];
            g[o_fn + m] = 2.0 * lf * w_n * fnn[m];
        }
        for (u, row) in self.data.iter().enumerate() {
            for (m, r) in row.iter().enumerate() {
                if let Some(r) = r {
                    let e = r - mu - iu[u] - inn[m] - fu[u] * fnn[m];
                    g[0] -= 2.0 * e;
                    g[o_iu + u] -= 2.0 * e;
                    g[o_in + m] -= 2.0 * e;
                    g[o_fu + u] -= 2.0 * e * fnn[m];
                    g[o_fn + m] -= 2.0 * e * fu[u];
                }
            }
        }
        g
    }

    fn gradient_norm(&self, fit: &BridgingFit) -> f64 {
        let g = self.gradient(&flatten(fit));
        g.iter().map(|x| x * x).sum::<f64>().sqrt()
    }
}

/// Validates the analytic gradient the other tests judge the fits with. Every parameter
/// enters the loss quadratically, so a central difference is exact up to rounding; points
/// are random ones and the partial fits after 0, 1 and 3 sweeps.
#[test]
fn analytic_gradient_matches_central_differences() {
    let mut rng = SplitMix64::new(21);
    for &(seed, raters, items, density) in &PROBLEMS[..2] {
        let data = problem(seed, raters, items, density);
        for loss in FORMS {
            let cfg = BridgingConfig {
                loss,
                ..BridgingConfig::default()
            };
            let model = Model {
                data: &data,
                cfg: &cfg,
            };
            let random: Vec<f64> = (0..1 + 2 * raters + 2 * items)
                .map(|_| rng.uniform(-0.8, 0.8))
                .collect();
            let partial = [0, 1, 3].map(|max_sweeps| {
                let cfg = BridgingConfig { max_sweeps, ..cfg };
                flatten(&fit_matrix(&data, &cfg).unwrap())
            });
            for mut p in std::iter::once(random).chain(partial) {
                let g = model.gradient(&p);
                let h = 1e-4;
                for k in 0..p.len() {
                    let x = p[k];
                    p[k] = x + h;
                    let up = model.loss(&p);
                    p[k] = x - h;
                    let down = model.loss(&p);
                    p[k] = x;
                    let fd = (up - down) / (2.0 * h);
                    assert!(
                        (fd - g[k]).abs() <= 1e-6 * (1.0 + g[k].abs()),
                        "seed {seed} {loss:?} parameter {k}: analytic {} vs difference {fd}",
                        g[k]
                    );
                }
            }
        }
    }
}

/// The crate reports the gradient norm it stopped on; it must be the norm of the gradient
/// above, which the central differences validated. Checked away from the optimum, where the
/// norm is large and rounding does not hide a wrong term.
#[test]
fn reported_gradient_norm_is_the_gradient_of_the_loss() {
    for &(seed, raters, items, density) in &PROBLEMS {
        let data = problem(seed, raters, items, density);
        for loss in FORMS {
            for max_sweeps in [0, 1, 2, 4] {
                let cfg = BridgingConfig {
                    loss,
                    max_sweeps,
                    ..BridgingConfig::default()
                };
                let fit = fit_matrix(&data, &cfg).unwrap();
                let model = Model {
                    data: &data,
                    cfg: &cfg,
                };
                let ours = model.gradient_norm(&fit);
                assert!(
                    (fit.gradient_norm - ours).abs() <= 1e-9 * ours,
                    "seed {seed} {loss:?} after {max_sweeps} sweeps: reported {} vs {ours}",
                    fit.gradient_norm
                );
            }
        }
    }
}

/// At the returned optimum the gradient norm is below the tolerance, measured
/// independently, for every generated problem and both loss forms.
#[test]
fn returned_fits_are_stationary_to_the_tolerance() {
    for &(seed, raters, items, density) in &PROBLEMS {
        let data = problem(seed, raters, items, density);
        for loss in FORMS {
            for gradient_tolerance in [1e-8, 1e-6] {
                let cfg = BridgingConfig {
                    loss,
                    gradient_tolerance,
                    ..BridgingConfig::default()
                };
                let fit = fit_matrix(&data, &cfg).unwrap();
                assert!(fit.converged, "seed {seed} {loss:?}");
                assert!(fit.sweeps < cfg.max_sweeps);
                assert!(fit.gradient_norm <= gradient_tolerance);
                let g = Model {
                    data: &data,
                    cfg: &cfg,
                }
                .gradient_norm(&fit);
                // The slack is rounding: the two sums add the same terms in different orders.
                assert!(
                    g <= gradient_tolerance + 1e-12,
                    "seed {seed} {loss:?} tol {gradient_tolerance:e}: gradient {g:e} after {} \
                     sweeps",
                    fit.sweeps
                );
            }
        }
    }
}

/// The issue's requirement: with the default tolerance every parameter lies within 1e-6 of
/// the optimum, taken as the same fit (same seed, so the same basin) driven to a gradient
/// of 1e-11, near the rounding floor. The old loss-change rule missed by up to 4e-4 here.
#[test]
fn default_fit_matches_the_optimum_to_1e_6() {
    for &(seed, raters, items, density) in &PROBLEMS {
        let data = problem(seed, raters, items, density);
        for loss in FORMS {
            let cfg = BridgingConfig {
                loss,
                ..BridgingConfig::default()
            };
            let tight = BridgingConfig {
                gradient_tolerance: 1e-11,
                ..cfg
            };
            let fit = fit_matrix(&data, &cfg).unwrap();
            let optimum = fit_matrix(&data, &tight).unwrap();
            assert!(fit.converged && optimum.converged, "seed {seed} {loss:?}");
            let deviation = flatten(&fit)
                .iter()
                .zip(flatten(&optimum))
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                deviation < 1e-6,
                "seed {seed} {loss:?}: {deviation:e} from the optimum"
            );
        }
    }
}

/// A fit that runs out of sweeps says so, with the gradient it stopped at, in the fit and
/// in the `--jsonl` answer (whose earlier fields keep their order).
#[test]
fn a_sweep_limited_fit_reports_not_converged() {
    let (seed, raters, items, density) = PROBLEMS[1];
    let data = problem(seed, raters, items, density);
    for loss in FORMS {
        for max_sweeps in [0, 3] {
            let cfg = BridgingConfig {
                loss,
                max_sweeps,
                ..BridgingConfig::default()
            };
            let fit = fit_matrix(&data, &cfg).unwrap();
            assert_eq!(fit.sweeps, max_sweeps);
            assert!(!fit.converged, "{loss:?} {max_sweeps}");
            assert!(fit.gradient_norm.is_finite() && fit.gradient_norm > cfg.gradient_tolerance);
            let json = serde_json::to_string(&BridgingResponse::new(fit, loss)).unwrap();
            assert!(
                json.contains(&format!(
                    r#""sweeps":{max_sweeps},"converged":false,"gradient_norm":"#
                )),
                "{json}"
            );
        }
        // The same problem with room to finish converges.
        let cfg = BridgingConfig {
            loss,
            ..BridgingConfig::default()
        };
        let fit = fit_matrix(&data, &cfg).unwrap();
        assert!(fit.converged && fit.sweeps > 3);
    }
}
