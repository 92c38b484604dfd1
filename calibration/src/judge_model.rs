//! The simulated judge's formulas (docs/SIMULATION.md "The model", docs/JUDGES.md
//! "Simulated"), shared by the verdict-quality simulator (`panel-sim`, `sim/src/judge.rs`)
//! and the node's `simulated` judge (`panel-node`, `node/src/judge/simulated.rs`), so the
//! two cannot drift apart. Pure: the callers draw the errors (the simulator from its
//! scenario's seeded stream, the node from SHA-256 of its seed and the question).
//!
//! A binary ruling is the sign of a latent judgement
//! `z = skill·(±1 for the truth) + biases + error`, the error of unit variance. Without
//! bias `P(correct) = Φ(skill)`, so `skill = Φ⁻¹(accuracy)`, and the calibrated probability
//! of yes given `z` is `σ(2·skill·z)`; `confidence` scales that log-odds.

/// The standard normal distribution function, from the complementary error function of
/// Numerical Recipes (`erfc` by Chebyshev fit, relative error below 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// The `x` with `normal_cdf(x) = p`, by bisection on [-10, 10].
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0_f64, 10.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The skill of a judge right with probability `accuracy` when unbiased: `Φ⁻¹(accuracy)`.
pub fn skill_of_accuracy(accuracy: f64) -> f64 {
    normal_quantile(accuracy)
}

/// The logistic function.
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The probability of yes a judge of `skill` and `confidence` reports for the latent
/// judgement `z`: `σ(confidence·2·skill·z)`, clamped to [0.001, 0.999] (calibrated when
/// the judge is unbiased and `confidence = 1`).
pub fn p_yes(skill: f64, confidence: f64, z: f64) -> f64 {
    sigmoid(confidence * 2.0 * skill * z).clamp(0.001, 0.999)
}

/// The unit-variance error of one judgement: `shared` of the variance is the error every
/// judge makes (`common`), `lineage_share` the error of its lineage (`lineage`), the rest
/// its own (`own`); each draw standard normal.
pub fn error(shared: f64, lineage_share: f64, common: f64, lineage: f64, own: f64) -> f64 {
    let own_share = (1.0 - shared - lineage_share).max(0.0);
    shared.sqrt() * common + lineage_share.sqrt() * lineage + own_share.sqrt() * own
}

/// A step on a scale `lo..=hi` judged with latent error `z` around the true step `truth`:
/// `round(truth + z / (2·skill))`, clamped. A relevance step (1..=4) or a source tier
/// (1..=5).
pub fn noisy_step(truth: f64, z: f64, skill: f64, lo: u8, hi: u8) -> u8 {
    (truth + z / (2.0 * skill))
        .round()
        .clamp(f64::from(lo), f64::from(hi)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_function_matches_tables() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((normal_cdf(-1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((skill_of_accuracy(0.95) - 1.644_854).abs() < 1e-5);
    }

    #[test]
    fn probabilities_are_calibrated_and_clamped() {
        assert_eq!(p_yes(1.5, 1.0, 0.0), 0.5);
        assert!((p_yes(1.0, 1.0, 0.5) - sigmoid(1.0)).abs() < 1e-12);
        assert_eq!(p_yes(2.0, 1.0, 10.0), 0.999);
        assert_eq!(p_yes(2.0, 1.0, -10.0), 0.001);
        assert!(
            p_yes(1.0, 0.5, 1.0) < p_yes(1.0, 1.0, 1.0),
            "confidence scales"
        );
    }

    #[test]
    fn the_error_has_unit_variance_and_steps_stay_on_the_scale() {
        // Unit vectors of each component: the variances add up to one.
        let parts = [
            error(0.2, 0.3, 1.0, 0.0, 0.0),
            error(0.2, 0.3, 0.0, 1.0, 0.0),
            error(0.2, 0.3, 0.0, 0.0, 1.0),
        ];
        let var: f64 = parts.iter().map(|p| p * p).sum();
        assert!((var - 1.0).abs() < 1e-12, "{var}");
        assert_eq!(noisy_step(3.0, 0.0, 1.5, 1, 4), 3);
        assert_eq!(noisy_step(4.0, 9.0, 1.5, 1, 4), 4);
        assert_eq!(noisy_step(1.0, -9.0, 1.5, 1, 5), 1);
        assert_eq!(noisy_step(2.0, 1.6, 1.5, 1, 4), 3);
    }
}
